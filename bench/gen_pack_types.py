"""Generate nodes/estimator/data/pack_types.json: the socket types of popular custom node packs.

The packs' Python sources are read STATICALLY with ``ast`` (nothing is imported, executed or
unpickled): V1 node classes (``INPUT_TYPES`` returning a dict literal, ``RETURN_TYPES`` ...) named
by ``NODE_CLASS_MAPPINGS`` (dict literals, ``.update({...})``, ``M["X"] = Cls``, simple dict
comprehensions), and V3 nodes (``define_schema`` returning ``io.Schema(node_id=..., inputs=[...],
outputs=[...])``). Each node becomes an ``/object_info``-like dict turned into the compact spec by
``vram_budget.nodes.estimator.graph.node_specs.spec_from_node_info``, plus ``"pack": "owner/name"``.

Packs are ranked by the stars in ComfyUI-Manager's ``github-stats.json`` (only those listed in its
``custom-node-list.json``). The repositories are bare git directories (``<mirrors>/<owner>+<name>/repo``,
as the session's ``fetch`` tool leaves them); HEAD of each is read with bounded ``git`` calls.

Regenerate (two steps: write the ranked list, fetch those repos, then build)::

    python3 bench/gen_pack_types.py --manager /work/.mirror/Comfy-Org+ComfyUI-Manager/repo \
        --make-list 240 --list /tmp/packtypes/list.txt
    python3 bench/gen_pack_types.py --manager /work/.mirror/Comfy-Org+ComfyUI-Manager/repo \
        --mirrors /work/.mirror --list /tmp/packtypes/list.txt
"""
from __future__ import annotations

import argparse
import ast
import datetime as _dt
import json
import os
import re
import subprocess
import sys
from typing import Any, Iterable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT_PATH = os.path.join(ROOT, "nodes", "estimator", "data", "pack_types.json")
WIDGET_SPECS_PATH = os.path.join(ROOT, "nodes", "estimator", "data", "widget_specs.json")

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_FILES = 5000
GIT_TIMEOUT_S = 120
MAX_BASE_DEPTH = 6

# io_type of each comfy_api V3 io class (comfy_api/latest/_io.py, ``@comfytype(io_type=...)``).
V3_IO_TYPES = {
    "Boolean": "BOOLEAN", "Int": "INT", "Float": "FLOAT", "String": "STRING", "Combo": "COMBO",
    "MultiCombo": "COMBO", "Image": "IMAGE", "WanCameraEmbedding": "WAN_CAMERA_EMBEDDING", "Webcam": "WEBCAM",
    "Mask": "MASK", "Latent": "LATENT", "Conditioning": "CONDITIONING", "Sampler": "SAMPLER", "Sigmas": "SIGMAS",
    "Noise": "NOISE", "Guider": "GUIDER", "Clip": "CLIP", "ControlNet": "CONTROL_NET", "Vae": "VAE",
    "Model": "MODEL", "BackgroundRemoval": "BACKGROUND_REMOVAL", "ClipVision": "CLIP_VISION",
    "ClipVisionOutput": "CLIP_VISION_OUTPUT", "StyleModel": "STYLE_MODEL", "Gligen": "GLIGEN",
    "UpscaleModel": "UPSCALE_MODEL", "LatentUpscaleModel": "LATENT_UPSCALE_MODEL", "Audio": "AUDIO",
    "Video": "VIDEO", "SVG": "SVG", "LoraModel": "LORA_MODEL", "LossMap": "LOSS_MAP", "Voxel": "VOXEL",
    "Mesh": "MESH", "Splat": "SPLAT", "File3DAny": "FILE_3D", "File3DGLB": "FILE_3D_GLB",
    "File3DGLTF": "FILE_3D_GLTF", "File3DFBX": "FILE_3D_FBX", "File3DOBJ": "FILE_3D_OBJ",
    "File3DSTL": "FILE_3D_STL", "File3DUSDZ": "FILE_3D_USDZ", "File3DPLY": "FILE_3D_PLY",
    "File3DSPLAT": "FILE_3D_SPLAT", "File3DSPZ": "FILE_3D_SPZ", "File3DKSPLAT": "FILE_3D_KSPLAT",
    "File3DSplatAny": "FILE_3D_SPLAT_ANY", "File3DPointCloudAny": "FILE_3D_POINT_CLOUD_ANY", "Hooks": "HOOKS",
    "HookKeyframes": "HOOK_KEYFRAMES", "TimestepsRange": "TIMESTEPS_RANGE", "LatentOperation": "LATENT_OPERATION",
    "FlowControl": "FLOW_CONTROL", "Accumulation": "ACCUMULATION", "Load3DCamera": "LOAD3D_CAMERA",
    "Load3DModelInfo": "LOAD3D_MODEL_INFO", "Load3D": "LOAD_3D", "Load3DAnimation": "LOAD_3D_ANIMATION",
    "Layers": "LAYERS", "Compositor": "COMPOSITOR", "Photomaker": "PHOTOMAKER", "Point": "POINT",
    "FaceAnalysis": "FACE_ANALYSIS", "BBOX": "BBOX", "SEGS": "SEGS", "AnyType": "*", "ModelPatch": "MODEL_PATCH",
    "AudioEncoder": "AUDIO_ENCODER", "AudioEncoderOutput": "AUDIO_ENCODER_OUTPUT", "Tracks": "TRACKS",
    "Dict": "DICT", "Array": "ARRAY", "MultiType": "COMFY_MULTITYPED_V3", "MatchType": "COMFY_MATCHTYPE_V3",
    "Autogrow": "COMFY_AUTOGROW_V3", "DynamicCombo": "COMFY_DYNAMICCOMBO_V3", "DynamicSlot": "COMFY_DYNAMICSLOT_V3",
    "ImageCompare": "IMAGECOMPARE", "Color": "COLOR", "Colors": "COLORS", "BoundingBox": "BOUNDING_BOX",
    "Curve": "CURVE", "BoundingBoxes": "BOUNDING_BOXES", "Histogram": "HISTOGRAM", "Range": "RANGE",
}
# comfy.comfy_types.IO members whose value is not their name.
IO_ENUM_SPECIAL = {"ANY": "*", "NUMBER": "FLOAT,INT", "PRIMITIVE": "STRING,FLOAT,INT,BOOLEAN"}
# V3 keyword arguments -> V1 option names (WidgetInput.as_dict).
V3_OPTION_NAMES = {"force_input": "forceInput", "widget_type": "widgetType", "display_mode": "display",
                   "dynamic_prompts": "dynamicPrompts", "raw_link": "rawLink"}
V3_UPLOAD = {"image": "image_upload", "audio": "audio_upload", "video": "video_upload", "model": "file_upload"}

_MISSING = object()


# --------------------------------------------------------------------------------------------
# Static evaluation helpers
# --------------------------------------------------------------------------------------------

def _literal(node: ast.AST | None, consts: dict | None = None) -> Any:
    """The literal value of ``node`` (names resolved through ``consts`` when they are literals), or _MISSING."""
    if node is None:
        return _MISSING
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if consts is not None:
        if isinstance(node, ast.Name):
            value = consts.get(node.id, _MISSING)
            if value is not _MISSING and not isinstance(value, ast.AST):
                return value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = _literal(node.operand, consts)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value
    return _MISSING


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _class_of_entry(value: ast.AST) -> str | None:
    """The class a mapping entry names: ``Cls`` / ``module.Cls``, or a config dict's ``{"class": Cls, ...}``."""
    if isinstance(value, ast.Dict):
        for k, v in zip(value.keys, value.values):
            if isinstance(k, ast.Constant) and k.value == "class":
                return _last_name(v)
        return None
    return _last_name(value)


def _typeish_callee(func: ast.AST) -> bool:
    """A call that makes a type name (a class such as AnyType / MultiInput, or an ``any_type(...)`` helper),
    not a list of file names (``folder_paths.get_filename_list("loras")``)."""
    callee = _last_name(func) or ""
    return callee[:1].isupper() or "any" in callee.lower() or callee.lower().endswith("type")


class Repo:
    """The parsed modules of one pack: classes, module-level bindings and node mappings."""

    def __init__(self) -> None:
        self.classes: dict[str, list[tuple[str, ast.ClassDef]]] = {}
        self.bindings: dict[str, list[ast.AST]] = {}   # module-level name -> value expressions
        self.consts: dict[str, Any] = {}                # module-level name -> literal (first seen)
        self.mappings: dict[str, str] = {}              # node type -> class name
        self.parse_errors = 0
        self.files = 0
        self._trees: list[tuple[str, ast.Module]] = []
        self.functions: dict[str, tuple[list[str], ast.AST | None]] = {}  # one-expression helpers
        self.core_specs: dict[str, dict] = {}   # widget_specs.json specs, for inputs borrowed from core nodes

    # -- loading ------------------------------------------------------------------------------
    def add_source(self, path: str, text: str) -> None:
        self.files += 1
        try:
            tree = ast.parse(text, filename=path)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            self.parse_errors += 1
            return
        self._trees.append((path, tree))

    def index(self) -> None:
        for path, tree in self._trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, []).append((path, node))
            for stmt in tree.body:
                self._index_binding(stmt)
                self._index_function(stmt)
        self.config_names: set[str] = set()
        self.name_updates: dict[str, list[ast.Call]] = {}  # NAME.update(...) calls, for a config read afterwards
        for path, tree in self._trees:
            for node in ast.walk(tree):
                self._index_mapping(node)
        self._index_configs()

    def _index_configs(self) -> None:
        """``NODE_CLASS_MAPPINGS, NAMES = generate_node_mappings(NODE_CONFIG)`` (KJNodes): the config dict's literal
        and its ``NODE_CONFIG.update({...})`` calls give the node types; a value is a class or ``{"class": Cls, ...}``."""
        for name in sorted(self.config_names):
            for value in self.bindings.get(name, ()):
                self._add_dict(value)
            for call in self.name_updates.get(name, ()):
                for arg in call.args:
                    self._add_dict(arg)

    def _index_binding(self, stmt: ast.stmt) -> None:
        targets: list = []
        value = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for target in targets:
            if isinstance(target, ast.Name):
                self.bindings.setdefault(target.id, []).append(value)
                lit = _literal(value)
                if lit is not _MISSING and target.id not in self.consts:
                    self.consts[target.id] = lit
        if isinstance(stmt, (ast.If, ast.Try)):
            for sub in stmt.body:
                self._index_binding(sub)

    def _index_function(self, stmt: ast.stmt) -> None:
        """Module-level helpers whose body is one ``return <expr>`` (or ``name = lambda ...: <expr>``)."""
        if isinstance(stmt, ast.FunctionDef) and stmt.name not in self.functions:
            body = [s for s in stmt.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            params = [a.arg for a in stmt.args.args]
            if len(body) == 1 and isinstance(body[0], ast.Return):
                self.functions[stmt.name] = (params, body[0].value)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Lambda):
            self.functions.setdefault(stmt.targets[0].id, ([a.arg for a in stmt.value.args.args], stmt.value.body))

    @staticmethod
    def _is_mapping_name(node: ast.AST) -> bool:
        name = _last_name(node)
        return bool(name) and name.upper().endswith("CLASS_MAPPINGS")

    def _add_dict(self, node: ast.AST, scope: dict | None = None) -> None:
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if k is None:
                    if isinstance(v, ast.Dict):
                        self._add_dict(v)
                    continue
                key = self.eval_value(k)
                cls = _class_of_entry(v)
                if isinstance(key, str) and cls:
                    self.mappings.setdefault(key, cls)
        elif isinstance(node, ast.DictComp):
            self._add_dict_comp(node)
        elif isinstance(node, ast.Call) and _last_name(node.func) == "dict":
            for kw in node.keywords:
                cls = _last_name(kw.value)
                if kw.arg and cls:
                    self.mappings.setdefault(kw.arg, cls)
            for arg in node.args:
                self._add_dict(arg)

    def _index_mapping(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if value is None:
                return
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                if isinstance(value, ast.Call) and _last_name(value.func) != "dict" \
                        and any(self._is_mapping_name(e) for e in names):
                    # MAPPINGS[, NAMES] = make_mappings(CONFIG): the config is read once every binding is indexed
                    self.config_names.update(a.id for a in value.args if isinstance(a, ast.Name))
                if self._is_mapping_name(target):
                    self._add_dict(value)
                elif isinstance(target, ast.Subscript) and self._is_mapping_name(target.value):
                    key = self.eval_value(target.slice)
                    cls = _last_name(value)
                    if isinstance(key, str) and cls:
                        self.mappings.setdefault(key, cls)
        elif isinstance(node, ast.AugAssign) and self._is_mapping_name(node.target):
            self._add_dict(node.value)   # M |= {...}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and isinstance(node.func.value, ast.Name) and not self._is_mapping_name(node.func.value):
            self.name_updates.setdefault(node.func.value.id, []).append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "update" and self._is_mapping_name(node.func.value):
            for arg in node.args:
                self._add_dict(arg)
            for kw in node.keywords:
                cls = _last_name(kw.value)
                if kw.arg and cls:
                    self.mappings.setdefault(kw.arg, cls)

    def _iter_items(self, it: ast.AST) -> list | None:
        """The elements of a literal-ish iterable: a list/tuple/set, a module name bound to one, or ``d.items()``."""
        if isinstance(it, ast.Name):
            for value in self.bindings.get(it.id, ()):
                items = self._iter_items(value)
                if items is not None:
                    return items
            return None
        if isinstance(it, (ast.List, ast.Tuple, ast.Set)):
            return list(it.elts)
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items" \
                and not it.args:
            base = it.func.value
            dicts = [base] if isinstance(base, ast.Dict) else [
                v for v in self.bindings.get(getattr(base, "id", ""), ()) if isinstance(v, ast.Dict)]
            for d in dicts:
                return [ast.Tuple(elts=[k, v], ctx=ast.Load()) for k, v in zip(d.keys, d.values) if k is not None]
        return None

    def _add_dict_comp(self, comp: ast.DictComp) -> None:
        if len(comp.generators) != 1 or comp.generators[0].ifs:
            return
        gen = comp.generators[0]
        items = self._iter_items(gen.iter)
        if not items:
            return
        for item in items[:2000]:
            env: dict[str, ast.AST] = {}
            if isinstance(gen.target, ast.Name):
                env[gen.target.id] = item
            elif isinstance(gen.target, ast.Tuple) and isinstance(item, ast.Tuple) \
                    and len(gen.target.elts) == len(item.elts):
                for t, v in zip(gen.target.elts, item.elts):
                    if isinstance(t, ast.Name):
                        env[t.id] = v
            else:
                continue
            key = self._comp_eval(comp.key, env)
            cls = self._comp_class(comp.value, env)
            if isinstance(key, str) and cls:
                self.mappings.setdefault(key, cls)

    def _comp_class(self, node: ast.AST, env: dict) -> str | None:
        if isinstance(node, ast.Name) and node.id in env:
            return _last_name(env[node.id])
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in env:
            # v["class"] where v is a dict literal
            target = env[node.value.id]
            key = _literal(node.slice)
            if isinstance(target, ast.Dict):
                for k, v in zip(target.keys, target.values):
                    if k is not None and _literal(k) == key:
                        return _last_name(v)
        return None

    def _comp_eval(self, node: ast.AST, env: dict) -> Any:
        return self.eval_value(node, env)

    def eval_value(self, node: ast.AST | None, env: dict | None = None, depth: int = 0) -> Any:
        """A str/int/float value computed statically from ``node`` (names: ``env`` of AST nodes, then module
        literals; f-strings, ``+``, ``"..".format()``, ``Cls.ATTR``, ``Enum.X.value``, ``X.__name__``, calls
        of one-line helper functions); _MISSING when it cannot be."""
        env = env or {}
        if node is None or depth > 8:
            return _MISSING
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (str, int, float)) else _MISSING
        if isinstance(node, ast.Name):
            if node.id in env:
                return self.eval_value(env[node.id], None, depth + 1)
            value = self.consts.get(node.id, _MISSING)
            if value is not _MISSING:
                return value if isinstance(value, (str, int, float)) else _MISSING
            for bound in self.bindings.get(node.id, ())[:1]:
                return self.eval_value(bound, None, depth + 1)
            return _MISSING
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and v.format_spec is None and v.conversion == -1:
                    inner = self.eval_value(v.value, env, depth + 1)
                    if not isinstance(inner, (str, int)):
                        return _MISSING
                    parts.append(str(inner))
                else:
                    return _MISSING
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a = self.eval_value(node.left, env, depth + 1)
            b = self.eval_value(node.right, env, depth + 1)
            return a + b if isinstance(a, str) and isinstance(b, str) else _MISSING
        if isinstance(node, ast.Attribute):
            base = node.value
            if node.attr == "__name__":
                if isinstance(base, ast.Name) and base.id in env:
                    return _last_name(env[base.id]) or _MISSING
                return _last_name(base) or _MISSING
            if node.attr in ("value", "name") and isinstance(base, ast.Attribute):
                # Enum.MEMBER.value
                cls = self.find_class(_last_name(base.value) or "")
                if cls is not None:
                    if node.attr == "name":
                        return base.attr
                    return self.eval_value(self.class_attr(cls, base.attr), None, depth + 1)
                return _MISSING
            target = base
            if isinstance(base, ast.Name) and base.id in env:
                target = env[base.id]
            cls_name = _last_name(target)
            cls = self.find_class(cls_name) if cls_name else None
            if cls is not None:
                return self.eval_value(self.class_attr(cls, node.attr), None, depth + 1)
            return _MISSING
        if isinstance(node, ast.Call) and not node.keywords:
            args = [self.eval_value(a, env, depth + 1) for a in node.args]
            if any(a is _MISSING for a in args):
                return _MISSING
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) \
                    and isinstance(func.value.value, str):
                try:
                    return func.value.value.format(*args)
                except (IndexError, KeyError, ValueError):
                    return _MISSING
            name = _last_name(func)
            helper = self.functions.get(name or "")
            if helper is None:
                return _MISSING
            params, body = helper
            if len(params) != len(args) or body is None:
                return _MISSING
            sub = {p: ast.Constant(value=a) for p, a in zip(params, args)}
            return self.eval_value(body, sub, depth + 1)
        return _MISSING

    # -- classes ------------------------------------------------------------------------------
    def find_class(self, name: str) -> ast.ClassDef | None:
        found = self.classes.get(name)
        if not found:
            return None
        # prefer a definition that looks like a node
        for _, cls in found:
            if self.method(cls, "INPUT_TYPES") is not None or self.method(cls, "define_schema") is not None:
                return cls
        return found[0][1]

    def bases(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        out = []
        for b in cls.bases:
            name = _last_name(b)
            if name and name != cls.name:
                base = self.find_class(name)
                if base is not None and base is not cls:
                    out.append(base)
        return out

    def _inherited(self, cls: ast.ClassDef, pick, depth: int = 0):
        """The first statement of the class body, then of its bases (in the repo, MAX_BASE_DEPTH deep), that
        `pick(stmt)` turns into something other than None."""
        for stmt in cls.body:
            found = pick(stmt)
            if found is not None:
                return found
        if depth < MAX_BASE_DEPTH:
            for base in self.bases(cls):
                found = self._inherited(base, pick, depth + 1)
                if found is not None:
                    return found
        return None

    def class_attr(self, cls: ast.ClassDef, attr: str) -> ast.AST | None:
        def pick(stmt):
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets):
                return stmt.value
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr:
                return stmt.value
            return None
        return self._inherited(cls, pick)

    def method(self, cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        return self._inherited(cls, lambda stmt: stmt if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                               and stmt.name == name else None)

    # -- type expressions ---------------------------------------------------------------------
    def type_of(self, node: ast.AST, depth: int = 0) -> Any:
        """A socket type string, or a list (COMBO) for an input's first element."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            values = [_literal(e, self.consts) for e in node.elts]
            return [v for v in values if isinstance(v, (str, int, float)) and not isinstance(v, bool)] \
                if all(v is not _MISSING for v in values) else []
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "IO":
            return IO_ENUM_SPECIAL.get(node.attr, node.attr)
        if isinstance(node, ast.Name) and depth < 4:
            lit = self.consts.get(node.id, _MISSING)
            if isinstance(lit, str):
                return lit
            if isinstance(lit, (list, tuple)):
                return [v for v in lit if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
            for value in self.bindings.get(node.id, ()):
                if isinstance(value, ast.Call):
                    # any_type = AnyType("*") / AlwaysEqualProxy("*"): a str subclass made of one literal
                    # (a str subclass: AnyType("*"), MultiInput("IMAGE", [...]))
                    if value.args and isinstance(value.args[0], ast.Constant) \
                            and isinstance(value.args[0].value, str) and _typeish_callee(value.func):
                        return value.args[0].value
                    return []
                if isinstance(value, (ast.Name, ast.Attribute)):
                    return self.type_of(value, depth + 1)
                return self.type_of(value, depth + 1)
            low = node.id.lower()
            if "typ" in low or "any" in low or low in ("star", "wildcard"):
                return "*"
            return []
        if isinstance(node, ast.Call):
            if node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str) and _typeish_callee(node.func):
                return node.args[0].value
            return []
        # attribute lists (comfy.samplers.KSampler.SAMPLERS), comprehensions, concatenations
        return []

    def output_type(self, node: ast.AST) -> str:
        t = self.type_of(node)
        if isinstance(t, list):
            return "COMBO" if isinstance(node, (ast.List, ast.Tuple)) else "*"
        return t

    def options_of(self, node: ast.AST | None) -> dict:
        if not isinstance(node, ast.Dict):
            return {}
        out = {}
        for k, v in zip(node.keys, node.values):
            key = _literal(k) if k is not None else _MISSING
            if not isinstance(key, str):
                continue
            value = _literal(v, self.consts)
            if value is _MISSING:
                continue
            if isinstance(value, (str, int, float, bool)) or value is None \
                    or (isinstance(value, (list, tuple)) and len(value) <= 200):
                out[key] = list(value) if isinstance(value, tuple) else value
        return out


# --------------------------------------------------------------------------------------------
# V1 nodes
# --------------------------------------------------------------------------------------------

def _local_dicts(func: ast.FunctionDef) -> dict[str, ast.Dict]:
    """Local names assigned a dict literal in a function body (top level statements), with later
    ``d["k"] = {...}`` / ``d["optional"] = {...}`` additions folded in."""
    local: dict[str, ast.Dict] = {}
    for stmt in func.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            t = stmt.targets[0]
            if isinstance(t, ast.Name) and isinstance(stmt.value, ast.Dict):
                local[t.id] = ast.Dict(keys=list(stmt.value.keys), values=list(stmt.value.values))
            elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in local:
                key = _literal(t.slice)
                if isinstance(key, str):
                    d = local[t.value.id]
                    d.keys.append(ast.Constant(value=key))
                    d.values.append(stmt.value)
            elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Subscript) \
                    and isinstance(t.value.value, ast.Name) and t.value.value.id in local:
                section = _literal(t.value.slice)
                key = _literal(t.slice)
                d = local[t.value.value.id]
                for k, v in zip(d.keys, d.values):
                    if k is not None and _literal(k) == section and isinstance(v, ast.Dict) and isinstance(key, str):
                        v.keys.append(ast.Constant(value=key))
                        v.values.append(stmt.value)
    return local


class _Resolved(ast.expr):
    """An input spec already resolved (borrowed from another node's INPUT_TYPES)."""
    _fields = ()

    def __init__(self, spec: list) -> None:
        super().__init__()
        self.spec = spec


def core_inputs(spec: dict) -> dict:
    """V1-like ``{"required": {name: [type, opts]}}`` rebuilt from a widget_specs.json spec (sockets, then widgets
    in their order; companion widgets folded back into their options)."""
    entries: dict = {}
    for name, type_ in (spec.get("in") or {}).items():
        if "." not in name:
            entries[name] = [type_, {}]
    last = None
    for entry in spec.get("w") or ():
        name, kind = entry[0], entry[1]
        if kind == "CAG" and last is not None:
            entries[last][1]["control_after_generate"] = True
            continue
        if kind == "UPLOAD" and last is not None:
            entries[last][1]["image_upload"] = True
            continue
        if name.startswith("$"):
            continue
        entries[name] = [[] if kind in ("COMBO", "DYN") else kind, {}]
        if kind == "OTHER":
            entries[name] = ["STRING", {"socketless": True}]
        last = name
    return {"required": entries}


def _borrowed(repo: Repo, node: ast.AST, borrowed: dict, depth: int) -> Any:
    """The value of ``X.INPUT_TYPES()[k1][k2]...`` (or ``base[k1][k2]`` with ``base = X.INPUT_TYPES()``):
    a section dict ``{name: spec}`` or one spec list; None when unknown."""
    keys = []
    while isinstance(node, ast.Subscript):
        key = _literal(node.slice)
        if not isinstance(key, str):
            return None
        keys.append(key)
        node = node.value
    keys.reverse()
    if isinstance(node, ast.Name) and node.id in borrowed:
        node = borrowed[node.id]
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "INPUT_TYPES"):
        return None
    cls_name = _last_name(node.func.value)
    if not cls_name or depth > 3:
        return None
    cls = repo.find_class(cls_name)
    value: Any = None
    if cls is not None and repo.method(cls, "INPUT_TYPES") is not None:
        info = v1_node_info(repo, cls, depth + 1)
        value = info["input"] if info else None
    elif cls_name in repo.core_specs:
        value = core_inputs(repo.core_specs[cls_name])
        if keys and keys[0] == "optional":   # sections are not known for core specs: look in all
            keys = ["required", *keys[1:]]
    if value is None:
        return None
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _input_types_dict(repo: Repo, cls: ast.ClassDef, depth: int = 0) -> ast.Dict | None:
    func = repo.method(cls, "INPUT_TYPES")
    if func is None:
        return None
    local = _local_dicts(func)
    borrowed = {}
    for stmt in func.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            while isinstance(value, ast.Subscript):
                value = value.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr == "INPUT_TYPES":
                borrowed[stmt.targets[0].id] = stmt.value
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Name) and value.id in local:
                value = local[value.id]
            if isinstance(value, ast.Dict):
                return _resolve_dict(value, local, repo, borrowed, depth)
    return None


def _as_dict_node(value: dict) -> ast.Dict:
    return ast.Dict(keys=[ast.Constant(value=k) for k in value],
                    values=[_as_dict_node(v) if isinstance(v, dict) else _Resolved(v) for v in value.values()])


def _resolve_dict(d: ast.Dict, local: dict, repo: Repo, borrowed: dict, depth: int) -> ast.Dict:
    """Merge ``**name`` spreads of local dict literals and of borrowed INPUT_TYPES sections; resolve sections
    given by a local name, and inputs borrowed from another node's INPUT_TYPES."""
    keys, values = [], []
    for k, v in zip(d.keys, d.values):
        if k is None:
            inner = None
            if isinstance(v, ast.Name) and v.id in local:
                inner = _resolve_dict(local[v.id], local, repo, borrowed, depth)
            elif isinstance(v, ast.Dict):
                inner = _resolve_dict(v, local, repo, borrowed, depth)
            else:
                got = _borrowed(repo, v, borrowed, depth)
                if isinstance(got, dict):
                    inner = _as_dict_node(got)
                else:
                    keys.append(None)   # an unreadable spread: the caller refuses the section
                    values.append(v)
                    continue
            keys.extend(inner.keys)
            values.extend(inner.values)
            continue
        if isinstance(v, ast.Name) and v.id in local:
            v = _resolve_dict(local[v.id], local, repo, borrowed, depth)
        elif isinstance(v, ast.Name) and any(isinstance(b, ast.Dict) for b in repo.bindings.get(v.id, ())):
            module_dict = next(b for b in repo.bindings[v.id] if isinstance(b, ast.Dict))
            v = _resolve_dict(module_dict, local, repo, borrowed, depth + 1)
        elif isinstance(v, ast.Dict):
            v = _resolve_dict(v, local, repo, borrowed, depth)
        elif isinstance(v, ast.Subscript):
            got = _borrowed(repo, v, borrowed, depth)
            if isinstance(got, dict):
                v = _as_dict_node(got)
            elif isinstance(got, list):
                v = _Resolved(got)
        keys.append(k)
        values.append(v)
    return ast.Dict(keys=keys, values=values)


def _v1_input(repo: Repo, node: ast.AST) -> list | None:
    if isinstance(node, _Resolved):
        return [node.spec[0], dict(node.spec[1]) if len(node.spec) > 1 and isinstance(node.spec[1], dict) else {}]
    if isinstance(node, (ast.Tuple, ast.List)) and node.elts:
        first = node.elts[0]
        opts = repo.options_of(node.elts[1]) if len(node.elts) > 1 else {}
        return [repo.type_of(first), opts]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value, {}]
    if isinstance(node, ast.Name):
        t = repo.type_of(node)
        return [t, {}]
    return None


def v1_node_info(repo: Repo, cls: ast.ClassDef, depth: int = 0) -> dict | None:
    """The /object_info-like dict of a V1 class, or None when its definition cannot be read statically
    (an input or a ``**`` spread that cannot be read makes the whole class unread: a missing widget
    would shift every later widget value)."""
    d = _input_types_dict(repo, cls, depth)
    if d is None:
        return None
    inputs: dict = {}
    order: dict = {}
    for k, v in zip(d.keys, d.values):
        section = _literal(k) if k is not None else None
        if section not in ("required", "optional", "hidden"):
            continue
        if not isinstance(v, ast.Dict):
            if section == "hidden":
                continue
            return None
        entries = {}
        for ik, iv in zip(v.keys, v.values):
            name = repo.eval_value(ik) if ik is not None else None
            spec = _v1_input(repo, iv) if isinstance(name, str) else None
            if spec is None:
                if section == "hidden":
                    continue
                return None
            entries[name] = spec
        inputs[section] = entries
        if section != "hidden":
            order[section] = list(entries)
    rt = repo.class_attr(cls, "RETURN_TYPES")
    if rt is None:
        outputs: list = []
    elif isinstance(rt, (ast.Tuple, ast.List)):
        outputs = [repo.output_type(e) for e in rt.elts]
    elif isinstance(rt, ast.Name) and isinstance(repo.consts.get(rt.id), (list, tuple)):
        outputs = [str(x) for x in repo.consts[rt.id]]
    elif isinstance(rt, ast.Name) and any(isinstance(b, (ast.Tuple, ast.List)) for b in repo.bindings.get(rt.id, ())):
        bound = next(b for b in repo.bindings[rt.id] if isinstance(b, (ast.Tuple, ast.List)))
        outputs = [repo.output_type(e) for e in bound.elts]
    else:
        return None
    out_node = _literal(repo.class_attr(cls, "OUTPUT_NODE"), repo.consts)
    info = {"input": inputs, "input_order": order, "output": outputs, "output_node": out_node is True}
    for attr, key in (("RETURN_NAMES", "output_name"), ("CATEGORY", "category"), ("FUNCTION", "function")):
        value = _literal(repo.class_attr(cls, attr), repo.consts)
        if value is not _MISSING:
            info[key] = list(value) if isinstance(value, tuple) else value
    return info


# --------------------------------------------------------------------------------------------
# V3 nodes
# --------------------------------------------------------------------------------------------

def _v3_io_class(func: ast.AST) -> tuple[str | None, str | None]:
    """(io type, 'Input'|'Output'|'Option') of ``io.X.Input`` / ``X.Output`` / ``io.Custom("T").Input``."""
    if not isinstance(func, ast.Attribute) or func.attr not in ("Input", "Output", "Option"):
        return None, None
    base = func.value
    if isinstance(base, ast.Call) and _last_name(base.func) == "Custom" and base.args \
            and isinstance(base.args[0], ast.Constant) and isinstance(base.args[0].value, str):
        return base.args[0].value, func.attr
    name = _last_name(base)
    if not name:
        return None, None
    return V3_IO_TYPES.get(name, name.upper()), func.attr


def _v3_input(repo: Repo, call: ast.AST) -> tuple[str, bool, list] | None:
    if not isinstance(call, ast.Call):
        return None
    io_type, kind = _v3_io_class(call.func)
    if kind != "Input":
        return None
    name_node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "id"), None)
    name = _literal(name_node, repo.consts)
    if not isinstance(name, str):
        return None
    opts: dict = {}
    optional = False
    for kw in call.keywords:
        if kw.arg in (None, "id"):
            continue
        if kw.arg == "optional":
            optional = _literal(kw.value, repo.consts) is True
            continue
        if kw.arg == "upload":
            attr = _last_name(kw.value)
            if attr in V3_UPLOAD:
                opts[V3_UPLOAD[attr]] = True
            continue
        if kw.arg == "options" and io_type == "COMFY_DYNAMICCOMBO_V3":
            opts["options"] = _v3_dyn_options(repo, kw.value)
            continue
        key = V3_OPTION_NAMES.get(kw.arg, kw.arg)
        value = _literal(kw.value, repo.consts)
        if value is _MISSING:
            if kw.arg == "control_after_generate":   # io.ControlAfterGenerate.fixed etc.
                opts[key] = True
            elif kw.arg == "options":
                opts[key] = []
            continue
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, (str, int, float, bool, list)) or value is None:
            opts[key] = value
    if io_type == "COMBO" and len(call.args) > 1 and "options" not in opts:
        value = _literal(call.args[1], repo.consts)
        opts["options"] = list(value) if isinstance(value, (list, tuple)) else []
    widget_type = opts.get("widgetType")
    if isinstance(widget_type, str):
        io_type = widget_type
    return name, optional, [io_type, opts]


def _v3_inputs_dict(repo: Repo, node: ast.AST) -> dict:
    out: dict = {"required": {}}
    if isinstance(node, (ast.List, ast.Tuple)):
        for elt in node.elts:
            got = _v3_input(repo, elt)
            if got:
                name, optional, spec = got
                out.setdefault("optional" if optional else "required", {})[name] = spec
    return out


def _v3_dyn_options(repo: Repo, node: ast.AST) -> list:
    options = []
    if isinstance(node, (ast.List, ast.Tuple)):
        for elt in node.elts:
            if not isinstance(elt, ast.Call) or _v3_io_class(elt.func)[1] != "Option":
                continue
            key_node = elt.args[0] if elt.args else next((k.value for k in elt.keywords if k.arg == "key"), None)
            inputs_node = elt.args[1] if len(elt.args) > 1 else next(
                (k.value for k in elt.keywords if k.arg == "inputs"), None)
            key = _literal(key_node, repo.consts)
            if isinstance(key, (str, int)):
                options.append({"key": str(key), "inputs": _v3_inputs_dict(repo, inputs_node)})
    return options


def _schema_call(repo: Repo, cls: ast.ClassDef) -> ast.Call | None:
    func = repo.method(cls, "define_schema")
    if func is None:
        return None
    local: dict[str, ast.AST] = {}
    for stmt in ast.walk(func):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            local[stmt.targets[0].id] = stmt.value
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Name):
                value = local.get(value.id)
            if isinstance(value, ast.Call) and _last_name(value.func) in ("Schema", "SchemaV3"):
                return value
    return None


def v3_node_info(repo: Repo, cls: ast.ClassDef) -> tuple[str, dict] | None:
    call = _schema_call(repo, cls)
    if call is None:
        return None
    kwargs = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    node_id = repo.eval_value(kwargs.get("node_id"))
    if not isinstance(node_id, str) or not node_id:
        return None
    inputs_node = kwargs.get("inputs")
    if isinstance(inputs_node, ast.Name):   # inputs=inputs, a local list literal
        func = repo.method(cls, "define_schema")
        for stmt in ast.walk(func):
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == inputs_node.id
                                                    for t in stmt.targets):
                inputs_node = stmt.value
                break
    inputs = _v3_inputs_dict(repo, inputs_node) if inputs_node is not None else {"required": {}}
    outputs = []
    out_node = kwargs.get("outputs")
    if isinstance(out_node, (ast.List, ast.Tuple)):
        for elt in out_node.elts:
            if isinstance(elt, ast.Call):
                io_type, kind = _v3_io_class(elt.func)
                outputs.append(io_type if kind == "Output" else "*")
            else:
                outputs.append("*")
    info = {"input": inputs, "input_order": {k: list(v) for k, v in inputs.items()}, "output": outputs,
            "output_node": _literal(kwargs.get("is_output_node"), repo.consts) is True}
    category = _literal(kwargs.get("category"), repo.consts)
    if isinstance(category, str):
        info["category"] = category
    return node_id, info


# --------------------------------------------------------------------------------------------
# A whole pack
# --------------------------------------------------------------------------------------------

def _spec_from_node_info():
    from vram_budget.nodes.estimator.graph.node_specs import spec_from_node_info
    return spec_from_node_info


def extract_repo(sources: Iterable[tuple[str, str]], skip: Iterable[str] = (), core_specs: dict | None = None) -> dict:
    """Node specs of one pack from its ``(path, text)`` sources.

    Returns ``{"nodes": {type: spec}, "infos": {type: object_info-like dict}, "parse_errors": n,
    "files": n, "unread": [types whose class could not be read]}``.
    """
    spec_from_node_info = _spec_from_node_info()
    skip = set(skip)
    repo = Repo()
    repo.core_specs = core_specs if core_specs is not None else load_core_specs()
    for path, text in sources:
        repo.add_source(path, text)
    repo.index()
    infos: dict[str, dict] = {}
    unread: list[str] = []
    for node_type, cls_name in repo.mappings.items():
        cls = repo.find_class(cls_name)
        if cls is None:
            unread.append(node_type)
            continue
        info = None
        try:
            if repo.method(cls, "define_schema") is not None:
                got = v3_node_info(repo, cls)
                info = got[1] if got else None
            if info is None:
                info = v1_node_info(repo, cls)
        except RecursionError:
            info = None
        if info is None:
            unread.append(node_type)
            continue
        infos[node_type] = info
    # V3 nodes need no mapping: their schema names them.
    for entries in repo.classes.values():
        for _, cls in entries:
            if not any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "define_schema"
                       for s in cls.body):
                continue
            try:
                got = v3_node_info(repo, cls)
            except RecursionError:
                got = None
            if got and got[0] not in infos:
                infos[got[0]] = got[1]
                if got[0] in unread:
                    unread.remove(got[0])
    nodes: dict[str, dict] = {}
    failed = 0
    for node_type, info in infos.items():
        if node_type in skip:
            continue
        try:
            nodes[node_type] = spec_from_node_info(info)
        except (AttributeError, TypeError, ValueError, KeyError):
            failed += 1
    return {"nodes": nodes, "infos": infos, "parse_errors": repo.parse_errors, "files": repo.files,
            "unread": sorted(unread), "spec_failures": failed}


def extract_dir(path: str, skip: Iterable[str] = ()) -> dict:
    """``extract_repo`` over the ``.py`` files of a directory tree (bounded like a git repo)."""
    def sources():
        count = 0
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fn in sorted(filenames):
                if not fn.endswith(".py"):
                    continue
                full = os.path.join(dirpath, fn)
                try:
                    if os.path.getsize(full) > MAX_FILE_BYTES:
                        continue
                    with open(full, encoding="utf-8", errors="replace") as fh:
                        text = fh.read()
                except OSError:
                    continue
                count += 1
                if count > MAX_FILES:
                    return
                yield os.path.relpath(full, path), text
    return extract_repo(sources(), skip)


# --------------------------------------------------------------------------------------------
# git
# --------------------------------------------------------------------------------------------

def _git(gitdir: str, *args: str, input_bytes: bytes | None = None, timeout: int = GIT_TIMEOUT_S) -> bytes:
    proc = subprocess.run(["git", "--git-dir", gitdir, *args], input=input_bytes, capture_output=True,
                          timeout=timeout, check=True)
    return proc.stdout


def git_head(gitdir: str) -> tuple[str, str]:
    sha, date = _git(gitdir, "log", "-1", "--format=%H%x00%cI", "HEAD").decode().strip().split("\0")
    return sha, date


def git_sources(gitdir: str) -> list[tuple[str, str]]:
    """``(path, text)`` of HEAD's ``.py`` files: at most MAX_FILES, none over MAX_FILE_BYTES."""
    listing = _git(gitdir, "ls-tree", "-r", "-l", "-z", "HEAD").decode("utf-8", "replace")
    wanted: list[tuple[str, str]] = []
    for entry in listing.split("\0"):
        if not entry or "\t" not in entry:
            continue
        meta, path = entry.split("\t", 1)
        parts = meta.split()
        if len(parts) < 4 or parts[1] != "blob" or not path.endswith(".py"):
            continue
        try:
            size = int(parts[3])
        except ValueError:
            continue
        if size > MAX_FILE_BYTES:
            continue
        wanted.append((parts[2], path))
        if len(wanted) >= MAX_FILES:
            break
    if not wanted:
        return []
    data = _git(gitdir, "cat-file", "--batch", input_bytes="".join(f"{sha}\n" for sha, _ in wanted).encode())
    out: list[tuple[str, str]] = []
    pos = 0
    for _, path in wanted:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        pos = nl + 1
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        out.append((path, data[pos:pos + size].decode("utf-8", "replace")))
        pos += size + 1
    return out


# --------------------------------------------------------------------------------------------
# Ranking and the table
# --------------------------------------------------------------------------------------------

_GH = re.compile(r"https://github\.com/([^/]+)/([^/#?]+?)(?:\.git)?/?$")


def ranking(manager_gitdir: str) -> tuple[list[tuple[str, int]], dict]:
    """Packs of ComfyUI-Manager's custom-node-list.json ranked by github-stats.json stars, and the source."""
    stats = json.loads(_git(manager_gitdir, "show", "HEAD:github-stats.json"))
    listed = json.loads(_git(manager_gitdir, "show", "HEAD:custom-node-list.json"))
    sha, date = git_head(manager_gitdir)
    in_list = set()
    for entry in listed.get("custom_nodes", []):
        for url in [entry.get("reference", "")] + list(entry.get("files") or []):
            m = _GH.match(str(url))
            if m:
                in_list.add(f"{m[1]}/{m[2]}".lower())
    rows = []
    seen = set()
    for url, info in stats.items():
        m = _GH.match(url)
        if not m:
            continue
        repo = f"{m[1]}/{m[2]}"
        low = repo.lower()
        if low not in in_list or low in seen or low in ("comfyanonymous/comfyui", "ltdrdata/comfyui-manager",
                                                         "comfy-org/comfyui", "comfy-org/comfyui-manager"):
            continue
        seen.add(low)
        stars = info.get("stars", 0) if isinstance(info, dict) else 0
        rows.append((repo, int(stars or 0)))
    rows.sort(key=lambda r: (-r[1], r[0].lower()))
    source = {"source": "ComfyUI-Manager github-stats.json (stars) over custom-node-list.json",
              "repository": "Comfy-Org/ComfyUI-Manager", "commit": sha, "date": date}
    return rows, source


_CORE_SPECS: dict | None = None


def load_core_specs(path: str = WIDGET_SPECS_PATH) -> dict:
    global _CORE_SPECS
    if _CORE_SPECS is None:
        try:
            with open(path, encoding="utf-8") as fh:
                _CORE_SPECS = json.load(fh).get("nodes") or {}
        except (OSError, ValueError):
            _CORE_SPECS = {}
    return _CORE_SPECS


def core_node_types(path: str = WIDGET_SPECS_PATH) -> set[str]:
    with open(path, encoding="utf-8") as fh:
        specs = json.load(fh)
    return set(specs.get("nodes") or {}) | set(specs.get("core") or []) | set(specs.get("api") or [])


def build(repos: list[str], mirrors: str, stars: dict[str, int], rank_source: dict, log=print) -> dict:
    core = core_node_types()
    packs: dict[str, dict] = {}
    nodes: dict[str, dict] = {}
    collisions = 0
    collided: list = []
    parse_errors = 0
    unread_total = 0
    spec_failures = 0
    order = sorted(repos, key=lambda r: (-stars.get(r, 0), r.lower()))
    for repo in order:
        gitdir = os.path.join(mirrors, repo.replace("/", "+"), "repo")
        if not os.path.isdir(gitdir):
            log(f"skip {repo}: not fetched")
            continue
        try:
            sha, date = git_head(gitdir)
            sources = git_sources(gitdir)
        except (subprocess.SubprocessError, OSError, ValueError) as exc:
            log(f"skip {repo}: git failed ({exc.__class__.__name__})")
            continue
        got = extract_repo(sources, skip=core)
        parse_errors += got["parse_errors"]
        unread_total += len(got["unread"])
        spec_failures += got["spec_failures"]
        kept = 0
        for node_type, spec in sorted(got["nodes"].items()):
            if node_type in nodes:
                collisions += 1
                collided.append([node_type, nodes[node_type]["pack"], repo])
                continue
            nodes[node_type] = {**spec, "pack": repo}
            kept += 1
        packs[repo] = {"commit": sha, "date": date, "nodes": kept, "stars": stars.get(repo, 0)}
        log(f"{repo}: {kept} nodes ({len(got['nodes'])} read, {len(got['unread'])} unread, "
            f"{got['parse_errors']} parse errors, {got['files']} files)")
    return {
        "about": ("Socket types of popular ComfyUI custom node packs, read statically (ast, nothing imported or "
                  "run) from each pack's sources at the commit given; node types core ComfyUI has are left out. "
                  "Each node: the widget_specs.json spec (w, in, out, out_node) plus the pack that defines it. "
                  "A type two packs define is kept for the more-starred pack."),
        "generated_by": "bench/gen_pack_types.py",
        "generated_on": _dt.date.today().isoformat(),
        "ranking": rank_source,
        "stats": {"packs": len(packs), "packs_with_nodes": sum(1 for p in packs.values() if p["nodes"]),
                  "node_types": len(nodes), "collisions": collisions, "parse_errors": parse_errors,
                  "unread_node_types": unread_total, "spec_failures": spec_failures},
        "collisions": collided,
        "packs": packs,
        "nodes": nodes,
    }


def refresh(out: str, repos: list[str], mirrors: str) -> int:
    """Re-read ``repos`` (each fetched under ``mirrors``) and merge them into the table at ``out``: their nodes are
    replaced, a node type another pack of the table already defines stays with the more-starred pack, and each
    refreshed pack's commit / date / node count is updated. The ranking and the other packs are kept as they are."""
    with open(out, encoding="utf-8") as fh:
        table = json.load(fh)
    stars = {r: int(info.get("stars") or 0) for r, info in table["packs"].items()}
    unknown = [r for r in repos if r not in table["packs"]]
    if unknown:
        print(f"not in the table (add them through --list): {', '.join(unknown)}", file=sys.stderr)
        return 2
    fresh = build(repos, mirrors, stars, table.get("ranking") or {}, log=lambda m: print(m, file=sys.stderr))
    missing = [r for r in repos if r not in fresh["packs"]]
    if missing:
        print(f"not fetched under {mirrors}: {', '.join(missing)}", file=sys.stderr)
        return 2
    nodes = {t: spec for t, spec in table["nodes"].items() if spec.get("pack") not in repos}
    collided = [c for c in table.get("collisions") or () if c[2] not in repos and c[1] not in repos]
    for repo in repos:
        kept = 0
        for node_type, spec in sorted(fresh["nodes"].items()):
            if spec["pack"] != repo:
                continue
            other = nodes.get(node_type)
            if other is not None and stars.get(other["pack"], 0) >= stars.get(repo, 0):
                collided.append([node_type, other["pack"], repo])
                continue
            if other is not None:  # the refreshed pack is more starred: the type moves to it
                collided.append([node_type, repo, other["pack"]])
                table["packs"][other["pack"]]["nodes"] -= 1
            nodes[node_type] = spec
            kept += 1
        table["packs"][repo] = {**fresh["packs"][repo], "nodes": kept}
    table["nodes"], table["collisions"] = nodes, collided
    table["stats"].update(node_types=len(nodes), collisions=len(collided),
                          packs_with_nodes=sum(1 for p in table["packs"].values() if p["nodes"]))
    table["refreshed"] = sorted(set(table.get("refreshed") or ()) | set(repos))
    table["generated_on"] = _dt.date.today().isoformat()
    return _write_table(table, out)


def _write_table(table: dict, out: str) -> int:
    text = json.dumps(table, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(json.dumps(table["stats"]), f"{len(text.encode())} bytes -> {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manager", default="/work/.mirror/Comfy-Org+ComfyUI-Manager/repo",
                    help="bare git dir of ComfyUI-Manager (ranking source)")
    ap.add_argument("--mirrors", default="/work/.mirror", help="folder of <owner>+<name>/repo bare git dirs")
    ap.add_argument("--list", required=True, help="file of owner/name lines (written by --make-list)")
    ap.add_argument("--make-list", type=int, metavar="N", help="write the top N ranked packs to --list and stop")
    ap.add_argument("--out", default=OUT_PATH)
    ap.add_argument("--refresh", nargs="+", metavar="OWNER/NAME",
                    help="re-read only these fetched packs and merge them into the table at --out (the others keep "
                         "the commit they were read at); --list is then not read")
    args = ap.parse_args(argv)
    if args.refresh:
        return refresh(args.out, args.refresh, args.mirrors)
    rows, source = ranking(args.manager)
    if args.make_list:
        with open(args.list, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{r}\n" for r, _ in rows[:args.make_list]))
        print(f"{len(rows)} packs ranked; top {args.make_list} written to {args.list}")
        return 0
    with open(args.list, encoding="utf-8") as fh:
        repos = [line.strip() for line in fh if line.strip() and not line.startswith("#")]
    stars = dict(rows)
    source["ranked"] = len(rows)
    source["listed"] = len(repos)
    table = build(repos, args.mirrors, stars, source, log=lambda m: print(m, file=sys.stderr))
    return _write_table(table, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
