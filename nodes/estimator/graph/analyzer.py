"""The generic analyzer: follows MODEL / CLIP / VAE / LATENT / CONDITIONING / IMAGE links upstream
through any node by socket types, and builds the stages ComfyUI will run.

It knows no node by name: every node's meaning comes from the pack registry (``packs/``), as
tables (loaders, samplers, decoders, latent creators...) or handlers. A node no pack knows is read
by its sockets: X -> X nodes pass a model through, MODEL + LATENT -> LATENT is a sampler, an
unknown loader with a model-file widget is still priced (``_unknown_loader``).
"""
from __future__ import annotations

from functools import cached_property
import heapq
import math
import re
from typing import Any, Iterable, Mapping

from ..errors import WorkflowError
from ..workload import (AUDIO_ENCODE, CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE, LatentShape,
                        ModelRef, Stage, Workload)
from .base import (MAX_CHAIN, MAX_DEPTH, MAX_NUMBER, MAX_RESOLUTION, MIN_TEXT_TOKENS, _as_number, _Graph,
                   _ImageSize, _Link, _natural_key, _Node, _replace, _show_number, _UNKNOWN,
                   estimate_text_tokens, frames_bound, from_video)
from ..families.registry import VAE_FAMILIES, VAE_NAME_GEOMETRY
from ..model_info import VAE
from ..stages.base import NOT_ESTIMATED
from ..models.name_infer import family_of
from .packs import REGISTRY as R
from .packs.core import VIRTUAL_VAES


# Socket types that matter for GPU memory: an unknown node touching one is "not understood".
RELEVANT_TYPES = {"MODEL", "CLIP", "VAE", "LATENT", "CONDITIONING", "CONTROL_NET", "CLIP_VISION", "GUIDER",
                  "SIGMAS", "CLIP_VISION_OUTPUT", "UPSCALE_MODEL", "LATENT_UPSCALE_MODEL", "MODEL_PATCH"}
# model types a node's sockets alone price (stage_kind: AudioEncoderEncode's AUDIO_ENCODER -> an AUDIO_ENCODE stage)
SOCKET_PRICED = frozenset(RELEVANT_TYPES | {"AUDIO_ENCODER"})
# the model types the pack modules' loaders make, which no socket rule prices (a node that consumes one runs it)
PACK_MODEL_TYPES = frozenset(R.model_types - SOCKET_PRICED)
# API prompts carry no socket types; for a node the specs do not know, guess from the input name.
NAME_TYPE_GUESS = {
    "model": "MODEL", "clip": "CLIP", "vae": "VAE", "samples": "LATENT", "latent": "LATENT",
    "latent_image": "LATENT", "positive": "CONDITIONING", "negative": "CONDITIONING",
    "conditioning": "CONDITIONING", "control_net": "CONTROL_NET", "clip_vision": "CLIP_VISION",
    "guider": "GUIDER", "sigmas": "SIGMAS", "image": "IMAGE", "images": "IMAGE", "pixels": "IMAGE",
}
# the reason a workflow's model family is unknown: it names a model type newer than every ComfyUI of the specs
NEWER_COMFYUI = "made for a newer ComfyUI"
# stage_kind of a node that runs a model no rule prices (built as an unpriced SAMPLE stage, unpriced_model_stage)
_UNPRICED = "unpriced_model"


def unknown_nodes_note(types: list[str], versions: list[str]) -> str:
    """Why node types are not understood: no ComfyUI this estimator was made from (data/widget_specs.json's
    versions; a live ComfyUI passes its own nodes, so there they are custom nodes) and no node pack module
    (graph/packs/) has them. Whatever they load or compute is not in the estimate."""
    def key(v: str) -> tuple:
        return tuple(int(p) if p.isdecimal() else 0 for p in v.split("."))

    where = (f"in no ComfyUI up to {max(versions, key=key)} (the newest this estimator knows) and in no node pack "
             "it knows: made for a newer ComfyUI or by a custom node pack" if versions
             else "not among this ComfyUI's nodes nor the node packs this estimator knows")
    return (f"node types not understood, {where}: {', '.join(types)}; a model they load or memory they use is "
            "not in this estimate")


_LOADED_TYPES: dict[int, tuple[Mapping, frozenset]] = {}  # id(specs) -> (specs, types): once per spec table


def loaded_types(specs: Mapping) -> frozenset:
    """Socket types a loader of this ComfyUI makes: the outputs of its nodes that take only widgets (model files,
    numbers, strings) or images, e.g. BACKGROUND_REMOVAL, INTERP_MODEL, GLIGEN, PHOTOMAKER; computed once per spec
    table (the shipped one is the same object for every workflow read), not per read."""
    hit = _LOADED_TYPES.get(id(specs))
    if hit is not None and hit[0] is specs:
        return hit[1]
    # media and the custom-sampler plumbing (RandomNoise, KSamplerSelect, a scheduler's SIGMAS, a guider) are not
    # models, although nodes that make them take only widgets (comfy_extras/nodes_custom_sampler.py)
    plain = {"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO", "IMAGE", "MASK", "AUDIO", "VIDEO", "*",
             "NOISE", "SAMPLER", "SIGMAS", "GUIDER"}
    out = set()
    for name, spec in specs.items():
        if spec.get("offline") or spec.get("recorded"):
            # a pack node read from its sources or the workflow: its loaders (by name) make model types, whatever
            # settings they take (SeedVR2LoadDiTModel takes TORCH_COMPILE_ARGS)
            if "load" in str(name).lower():
                # a loaded conditioning (Omost's OMOST_CANVAS_CONDITIONING, read from a canvas file) is data, not a model
                out.update(str(o) for o in spec.get("out") or () if "CONDITIONING" not in str(o))
            continue
        if all(str(v) in plain for v in (spec.get("in") or {}).values()):
            out.update(str(o) for o in spec.get("out") or ())
    # AUDIO_ENCODER: the socket rule of stage_kind prices AudioEncoderEncode (an AUDIO_ENCODE stage). A pack module's
    # own types (WANVIDEOMODEL) stay in: a node no module describes that consumes one runs that model, never free
    types = frozenset(out - plain - SOCKET_PRICED)
    if len(_LOADED_TYPES) > 8:  # live ComfyUI spec tables: keep a few
        _LOADED_TYPES.clear()
    _LOADED_TYPES[id(specs)] = (specs, types)
    return types




def _any_type(t):
    """A V3 node's template socket (io.MatchType: ComfySwitchNode's "COMFY_MATCHTYPE_V3") takes the type of what it is
    linked to, as "*" does: an API prompt records the template, a UI workflow the type the frontend resolved."""
    return "*" if isinstance(t, str) and t.startswith("COMFY_MATCHTYPE") else t

# A pack's own primitive node (_Analyzer._constant): its output type and the widget values that type admits
_PRIMITIVE_CHECKS = {
    "INT": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "FLOAT": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "STRING": lambda v: isinstance(v, str),
    "BOOLEAN": lambda v: isinstance(v, bool),
}
# the frontend's seed widget companion, saved with the node's inputs by some exporters
_GENERATE_CONTROLS = frozenset({"control_after_generate", "$control_after_generate"})

# outputs a model's run gives, not a model handle (_Analyzer._own_model_file)
_DATA_OUTPUTS = frozenset({"IMAGE", "LATENT", "MASK", "CONDITIONING", "AUDIO", "VIDEO"})
# a widget that chooses the model a node runs: "sam_model", "yolo_world_model", "grounding_dino_model" (a bare
# "model" is what API nodes call the remote model they ask for: "Vidu Q4 Preview")
_MODEL_WIDGET = re.compile(r"\w+_model(?:_name)?", re.IGNORECASE)
# what a detector's run returns (_Analyzer._runs_own_model): media, not conditioning
_MEDIA_OUTPUTS = _DATA_OUTPUTS - {"CONDITIONING"}

# Loaded model types that never reach the GPU, whoever consumes them: ComfyUI's load_style_model builds a StyleModel on
# the CPU and nothing moves it (sd.py:1495-1513 in 0.33.0), so a pack's Redux / style node runs it there (as
# StyleModelApply does, packs/core.py)
CPU_MODEL_TYPES = frozenset({"STYLE_MODEL"})

class _Analyzer:
    def __init__(self, graph: _Graph, specs: Mapping):
        self.g = graph
        self.nodes: dict[str, _Node] = graph.nodes
        for node in self.nodes.values():  # API prompts carry no socket types: take the packs' tables
            if node.output_types is None and node.type in R.output_types:
                node.output_types = list(R.output_types[node.type])
            for name, type_ in R.input_types.get(node.type, {}).items():
                node.input_types.setdefault(name, type_)
        self.specs: Mapping = specs.get("nodes", {})
        self.core = set(specs.get("core", ()))
        self.api = set(specs.get("api", ()))
        self.specs_versions: list[str] = [str(v) for v in specs.get("comfyui_versions") or ()]
        self.clip_types: Mapping = specs.get("clip_types") or {}  # loader -> every `type` option known
        self.notes: list[str] = list(graph.notes)
        self._seen_notes: set[str] = set(self.notes)
        self._stage_notes: list[str] | None = None
        self._stage_unpriced = ""  # Stage.unpriced of the stage being built
        self._ref_cache: dict = {}
        self._latent_cache: dict = {}
        self.advanced_start: dict[str, int] = {}  # KSamplerAdvanced start steps (Wan 2.2 experts)
        self.unknown_loaders: set[str] = set()  # unknown nodes priced by their model-file widget
        self.where: list[str] = []

    # -- notes
    def note(self, text: str) -> None:
        """A fact about the workflow (global: traced values are cached, so it is said once)."""
        if text not in self._seen_notes:
            self._seen_notes.add(text)
            self.notes.append(text)

    def unpriced(self, why: str) -> None:
        """The stage being built has no working-memory figure, and why (Stage.unpriced; the note says it too)."""
        if self._stage_notes is not None and not self._stage_unpriced:
            self._stage_unpriced = why
        self.stage_note(f"{NOT_ESTIMATED}{why}")

    def stage_note(self, text: str) -> None:
        """A fact about the stage being built."""
        if self._stage_notes is None:
            self.note(text)
        elif text not in self._stage_notes:
            self._stage_notes.append(text)

    @staticmethod
    def label(node: _Node) -> str:
        return f"node {node.id} ({node.type})"

    # -- socket types
    def in_type(self, node: _Node, name: str) -> str | None:
        t = node.input_types.get(name)
        if t is None:
            t = (self.specs.get(node.type) or {}).get("in", {}).get(name)
        if t is None and node.type not in self.specs:
            t = R.input_types.get(node.type, {}).get(name) or NAME_TYPE_GUESS.get(name)
        return _any_type(t)

    def out_type(self, node: _Node, slot: int) -> str | None:
        types = node.output_types if node.output_types is not None else R.output_types.get(node.type)
        if types is not None and 0 <= slot < len(types):
            return _any_type(types[slot])
        return None

    def linked_inputs_of_type(self, node: _Node, type_: str) -> list[tuple[str, _Link]]:
        out = []
        for name, value in node.inputs.items():
            if isinstance(value, _Link):
                t = self.in_type(node, name)
                if t == type_ or (t and type_ in str(t).split(",")):
                    out.append((name, value))
        return out

    def link(self, node: _Node, name: str) -> _Link | None:
        value = node.inputs.get(name)
        return value if isinstance(value, _Link) else None

    def known(self, node_type: str) -> bool:
        return node_type in self.specs or node_type in self.core or node_type in R.known_types

    # -- values (widgets, possibly fed by primitive / math / switch nodes)
    def value(self, node: _Node, name: str, default: Any = None):
        if name not in node.inputs:
            return default
        value = node.inputs[name]
        if isinstance(value, _Link):
            computed = self.eval_link(value, depth=0)
            if computed is not _UNKNOWN:
                return computed
            if name in node.fallback:
                source = self.nodes.get(value.node)
                self.note(f"{self.label(node)}: '{name}' comes from "
                          f"{self.label(source) if source else value.node}, which is not computed here; "
                          f"used the value saved in the workflow ({node.fallback[name]!r})")
                return node.fallback[name]
            return _UNKNOWN
        return value

    def eval_link(self, link: _Link, depth: int):
        node = self.nodes.get(link.node)
        if node is None or depth > MAX_DEPTH:
            return _UNKNOWN
        t = node.type

        def sub(name):
            value = node.inputs.get(name)
            if isinstance(value, _Link):
                return self.eval_link(value, depth + 1)
            return _UNKNOWN if value is None else value

        if t in R.value_primitives:
            return sub("value")
        handler = R.values.get(t)
        return self._constant(node, link) if handler is None else handler(self, node, link, depth, sub)

    def _constant(self, node: _Node, link: _Link):
        """A node no table computes, read from its types as a constant: one output of a primitive type and one input,
        a widget whose value is of that type ("easy int", "Int Literal", "Seed (rgthree)": a pack's own primitive).
        Anything else (a second input, a link, a mismatched type) stays unknown."""
        types = node.output_types if node.output_types is not None else R.output_types.get(node.type)
        if not types or len(types) != 1 or link.slot != 0:
            return _UNKNOWN
        check = _PRIMITIVE_CHECKS.get(str(_any_type(types[0])))
        widgets = [v for k, v in node.inputs.items() if k not in _GENERATE_CONTROLS]
        if check is None or len(widgets) != 1 or isinstance(widgets[0], _Link) or not check(widgets[0]):
            return _UNKNOWN
        return widgets[0]

    def number(self, node: _Node, name: str, default=None, integer=True):
        raw = self.value(node, name, default)
        if raw is _UNKNOWN:
            self.note(f"{self.label(node)}: '{name}' is computed by a linked node; value unknown")
            return None
        if raw is None:
            return None
        number = _as_number(raw)
        if number is None:
            self.note(f"{self.label(node)}: '{name}' is not a number ({str(raw)[:40]!r})")
            return None
        if abs(number) > MAX_NUMBER:
            self.note(f"{self.label(node)}: '{name}' = {_show_number(number)} is too large to use")
            return None
        return int(number) if integer else float(number)

    def text(self, node: _Node, name: str):
        raw = self.value(node, name)
        if raw is _UNKNOWN or raw is None:
            return raw
        return str(raw)

    # -- model references
    def refs(self, link: _Link | None, type_: str, visiting: frozenset = frozenset()) -> list[ModelRef]:
        """The model files behind a MODEL / CLIP / VAE / CONTROL_NET / CLIP_VISION link, base first."""
        if link is None:
            return []
        key = (link.node, link.slot, type_)
        if key in self._ref_cache:
            return list(self._ref_cache[key])
        node = self.nodes.get(link.node)
        if node is None:
            return []
        if key in visiting:
            self.note(f"{self.label(node)}: cycle while tracing {type_}; stopped")
            return []
        if len(visiting) > MAX_CHAIN:  # not a cycle: a long chain the estimate must not silently cut
            raise WorkflowError(f"{self.label(node)}: the {type_} passes through more than {MAX_CHAIN} nodes "
                                "(LoRAs, patches); too long to follow")
        visiting = visiting | {key}
        result = self.refs_of(node, link.slot, type_, visiting)
        deduped: list[ModelRef] = []
        for ref in result:
            if ref not in deduped:
                deduped.append(ref)
        self._ref_cache[key] = tuple(deduped)
        return deduped

    def loader_ref(self, node: _Node, widget: str, **fields) -> ModelRef | None:
        name = self.value(node, widget)
        if not isinstance(name, str) or not name:
            # kept as an unpriced model: a loader whose file is unknown is never 0 bytes
            self.note(f"{self.label(node)}: no file name in '{widget}'")
            return ModelRef(name=f"(no file in {self.label(node)} '{widget}')", loader_node=node.id,
                            loader_type=node.type, unset=True, **fields)
        return ModelRef(name=name, loader_node=node.id, loader_type=node.type, **fields)

    def refs_of(self, node: _Node, slot: int, type_: str, visiting: frozenset) -> list[ModelRef]:
        t = node.type
        if t in R.diffusion_loaders and type_ == "MODEL":
            widget, gguf = R.diffusion_loaders[t]
            dtype = self.value(node, "weight_dtype")
            ref = self.loader_ref(node, widget, role="diffusion", folder="diffusion_models", gguf=gguf,
                                   weight_dtype=str(dtype) if isinstance(dtype, str) else None)
            return [ref] if ref else []
        if t in R.checkpoint_loaders:
            part = R.checkpoint_loaders[t].get(slot)
            if part is None:
                return []
            ref = self.loader_ref(node, "ckpt_name", role="checkpoint", folder="checkpoints", part=part)
            return [ref] if ref else []
        if t in R.te_loaders and type_ == "CLIP":
            widgets, gguf, implicit = R.te_loaders[t]
            clip_type = self.value(node, "type", implicit)
            device = self.value(node, "device")
            out = []
            for widget in widgets:
                ref = self.loader_ref(node, widget, role="text_encoder", folder="text_encoders", gguf=gguf,
                                       clip_type=str(clip_type) if isinstance(clip_type, str) else None,
                                       device=str(device) if isinstance(device, str) else None)
                if ref:
                    out.append(ref)
            return out
        if t in R.simple_loaders:
            widget, role, folder, out_type = R.simple_loaders[t]
            if out_type != type_:
                return []
            name = self.value(node, widget)
            if role == "vae" and isinstance(name, str) and name in VIRTUAL_VAES:
                folder = "vae_approx"
                self.note(f"{self.label(node)}: '{name}' is a tiny preview VAE from models/vae_approx")
            ref = self.loader_ref(node, widget, role=role, folder=folder)
            return [ref] if ref else []
        if t in R.lora_loaders:
            if type_ == "MODEL" and slot == 0:
                base = self.refs(self.link(node, "model"), "MODEL", visiting)
                return base + self._lora(node, "strength_model")
            if type_ == "CLIP" and slot == 1:
                base = self.refs(self.link(node, "clip"), "CLIP", visiting)
                return base + self._lora(node, "strength_clip")
            return []
        handler = R.refs.get(t)
        if handler is not None:
            result = handler(self, node, slot, type_, visiting)
            if result is not None:
                return result
        unknown = self._unknown_loader(node, slot, type_)
        if unknown is not None:
            return unknown
        return self._refs_generic(node, slot, type_, visiting)

    # Impact Pack's pipes: BASIC_PIPE = (model, clip, vae, positive, negative), DETAILER_PIPE adds the detectors
    PIPES = ("BASIC_PIPE", "DETAILER_PIPE")
    PIPE_PARTS = {"MODEL": "model", "CLIP": "clip", "VAE": "vae"}
    UNKNOWN_LOADER_ROLES = {"MODEL": ("diffusion", "diffusion_models"), "CLIP": ("text_encoder", "text_encoders"),
                            "VAE": ("vae", "vae"), "CONTROL_NET": ("controlnet", "controlnet"),
                            "CLIP_VISION": ("clip_vision", "clip_vision")}

    def _unknown_loader(self, node: _Node, slot: int, type_: str) -> list[ModelRef] | None:
        """A node no pack knows that outputs `type_` without taking one in, and names a model file in
        a widget: a loader. Priced from the file it names, and said so."""
        if node.type in R.known_types or type_ not in self.UNKNOWN_LOADER_ROLES or self.linked_inputs_of_type(node, type_):
            return None
        out_type = self.out_type(node, slot)
        pipe = out_type in self.PIPES and type_ in self.PIPE_PARTS and not any(
            self.linked_inputs_of_type(node, p) for p in self.PIPES)
        if out_type is not None and out_type != type_ and not pipe:
            return None
        files = node.model_files()
        if not files:
            return None
        name, value = files[0]
        self.unknown_loaders.add(node.id)
        if pipe:  # it makes a pipe of a checkpoint's MODEL, CLIP and VAE (Impact Pack's BASIC_PIPE tuple)
            self.note(f"{self.label(node)}: unknown node making a {out_type} from the file in '{name}' ({value}); "
                      f"priced as that checkpoint's {self.PIPE_PARTS[type_]}")
            return [ModelRef(name=value.strip(), role="checkpoint", folder="checkpoints", loader_node=node.id,
                             loader_type=node.type, part=self.PIPE_PARTS[type_])]
        role, folder = self.UNKNOWN_LOADER_ROLES[type_]
        self.note(f"{self.label(node)}: unknown loader; priced from the file in '{name}' ({value}) as a {role} model")
        return [ModelRef(name=value.strip(), role=role, folder=folder, loader_node=node.id, loader_type=node.type)]

    def _lora(self, node: _Node, strength_widget: str) -> list[ModelRef]:
        strength = self.number(node, strength_widget, 1.0, integer=False)
        if strength == 0:
            self.note(f"{self.label(node)}: {strength_widget} is 0, the LoRA is not applied")
            return []
        ref = self.loader_ref(node, "lora_name", role="lora", folder="loras", strength=strength)
        return [ref] if ref else []

    def _refs_generic(self, node: _Node, slot: int, type_: str, visiting: frozenset) -> list[ModelRef]:
        """An X -> X node we do not know specifically: follow its input(s) of the traced type."""
        out_type = self.out_type(node, slot)
        if out_type is not None and out_type not in (type_, "*") and type_ not in str(out_type).split(","):
            return []
        ins = self.linked_inputs_of_type(node, type_)
        if not ins and out_type == "*":  # a wildcard node (a compile / switch of any type) passes on what it takes
            ins = self.linked_inputs_of_type(node, "*")
        if not ins:
            return []
        if node.output_types is not None:
            outs = [i for i, o in enumerate(node.output_types) if o == type_]
            if len(outs) == len(ins) and slot in outs:
                ins = [ins[outs.index(slot)]]
        if not self.known(node.type) and not node.core:
            self.note(f"{self.label(node)}: unknown node; followed its {type_} input "
                      f"{', '.join(repr(n) for n, _ in ins)}")
        out: list[ModelRef] = []
        for _, upstream in ins:
            out.extend(self.refs(upstream, type_, visiting))
        if type_ in ("MODEL", "CLIP") and (lora := self._lora_by_widget(node)) is not None:
            out.extend(self._socket_lora(node, lora, type_))
        if type_ == "MODEL":
            # a MODEL -> MODEL node that also takes a MODEL_PATCH (QwenImageDiffsynthControlnet, WanInfiniteTalkToVideo,
            # USOStyleReference, AnimaLLLiteApply ...) sets a patch whose models() returns it: ComfyUI loads the patch
            # with the model it samples (comfy_extras/nodes_model_patch.py; comfy/ldm/wan/model_multitalk.py:456)
            for _, patch in self.linked_inputs_of_type(node, "MODEL_PATCH"):
                out.extend(self.refs(patch, "MODEL_PATCH", visiting))
        return out

    def controlnets(self, cond_links: Iterable[_Link | None]) -> list[ModelRef]:
        """ControlNets applied on the conditioning reaching a sampler."""
        out: list[ModelRef] = []
        for node in self._conditioning_chain(cond_links):
            for _, cn_link in self.linked_inputs_of_type(node, "CONTROL_NET"):
                strength = self.number(node, "strength", 1.0, integer=False)
                if strength == 0:
                    self.note(f"{self.label(node)}: strength 0, the ControlNet is not applied")
                    continue
                hint = R.controlnet_hints.get(node.type, "")
                for ref in self.refs(cn_link, "CONTROL_NET"):
                    ref = _replace(ref, hint=ref.hint or hint) if hint else ref
                    if ref not in out:
                        out.append(ref)
        return out

    def _conditioning_chain(self, cond_links: Iterable[_Link | None]):
        """The nodes on the conditioning chains reaching a sampler, each once, up through their CONDITIONING
        inputs (bounded)."""
        seen: set = set()
        stack = [link for link in cond_links if link is not None]
        while stack:
            link = stack.pop()
            if link.node in seen or len(seen) > 10 * MAX_DEPTH:
                continue
            seen.add(link.node)
            node = self.nodes.get(link.node)
            if node is None:
                continue
            yield node
            stack.extend(upstream for _, upstream in self.linked_inputs_of_type(node, "CONDITIONING"))

    def reference_latents(self, cond_links: Iterable[_Link | None]) -> tuple[tuple[int, int], ...]:
        """The most reference latents one conditioning (positive or negative) carries: the model is
        called on each with its own references."""
        per_cond = [self._reference_latents_of(link) for link in cond_links if link is not None]
        return max(per_cond, key=lambda refs: sum(h * w for h, w in refs), default=())

    def _reference_latents_of(self, link: _Link) -> tuple[tuple[int, int], ...]:
        """Reference latents an edit model sees next to the image (ComfyUI appends them to the
        conditioning's reference_latents), found on the conditioning chain: (latent rows, latent columns) each,
        as each node's pack names them (``cond_references``: packs/core.py has ReferenceLatent and
        TextEncodeQwenImageEdit's)."""
        out: list[tuple[int, int]] = []
        for node in self._conditioning_chain([link]):
            if node.type in R.cond_references:
                out.extend(R.cond_references[node.type](self, node))
        return tuple(out)

    # -- latents and images
    def latent(self, link: _Link | None, depth: int = 0) -> LatentShape | None:
        if link is None:
            return None
        key = (link.node, link.slot)
        if key in self._latent_cache:
            return self._latent_cache[key]
        node = self.nodes.get(link.node)
        if node is None:
            return None
        if depth > MAX_DEPTH:
            self.note(f"{self.label(node)}: latent chain too long (cycle?)")
            return None
        self._latent_cache[key] = None  # cycle guard
        shape = self._latent_of(node, link.slot, depth)
        self._latent_cache[key] = shape
        return shape

    def vae_geometry(self, vae_link: _Link | None, vae_type: str = "VAE"):
        for ref in self.refs(vae_link, vae_type):
            name = ref.name.lower()
            for pattern, geometry in VAE_NAME_GEOMETRY:
                if pattern.search(name):
                    return geometry, ref.name
            # else a family module's VAE its name rule names (families/<module>.py VAES), where the /8 image
            # default is wrong for it (another compression or a video VAE): that VAE's own geometry
            family = family_of(ref.name, VAE)
            vae = VAE_FAMILIES.get(family[0]) if family else None
            if vae is not None and (vae.spatial != 8 or vae.temporal is not None):
                return (vae.latent_channels, vae.spatial, vae.temporal), ref.name
        return None, None

    def _creator_shape(self, node: _Node, geometry: tuple | None = None) -> LatentShape | None:
        channels, spatial, temporal, fixed_batch = geometry or R.latent_creators[node.type]
        if node.type in R.vae_dependent_creators:
            geometry, vae_name = self.vae_geometry(self.link(node, "vae"))
            if geometry is not None:
                channels, spatial = geometry[0], geometry[1]
                self.note(f"{self.label(node)}: latent has the VAE's channels ({channels}) and /{spatial} "
                          f"compression, judged from the VAE name '{vae_name}'")
            else:
                self.note(f"{self.label(node)}: latent depends on the VAE; assumed the Wan 2.1 VAE (16 ch, /8)")
        for name in ("width", "height", "batch_size", "length"):
            self.check_widget_range(node, name)
        width = self.number(node, "width")
        height = self.number(node, "height")
        if width is None or height is None:
            return None
        batch = fixed_batch or self.number(node, "batch_size", 1)
        if batch is None:
            batch = 1
        frames = pixel_frames = None
        if temporal is not None:
            length = self.number(node, "length")
            if length is None:
                return None
            pixel_frames = length
            frames = (length - 1) // temporal + 1
        if node.type in R.latent_frames:  # the node's own rule for its latent frames (a pack's)
            frames = R.latent_frames[node.type](self, node, frames)
        self.check_size(node, width, height, pixel_frames, batch)
        return LatentShape(batch=batch, channels=channels, height=height // spatial, width=width // spatial,
                           frames=frames, pixel_height=height, pixel_width=width, pixel_frames=pixel_frames,
                           spatial_compression=spatial, temporal_compression=temporal,
                           source_node=node.id, source_type=node.type)

    # ComfyUI's own limits for these widgets (nodes.py MAX_RESOLUTION; EmptyLatentImage batch_size
    # 1..4096): ComfyUI refuses a prompt outside them, so the estimate does too, naming the node,
    # before any planner sees an absurd size.
    WIDGET_RANGES = {"width": (1, MAX_RESOLUTION), "height": (1, MAX_RESOLUTION), "length": (1, MAX_RESOLUTION),
                     "batch_size": (1, 4096)}

    def check_widget_range(self, node: _Node, name: str) -> None:
        raw = self.value(node, name)
        if raw is _UNKNOWN or raw is None:
            return
        number = raw if isinstance(raw, float) and not math.isfinite(raw) else _as_number(raw)  # 1e309 -> inf
        if number is None:
            return
        lo, hi = self.WIDGET_RANGES[name]
        # no math.isfinite here: an int (the JSON literal 10**309) has no float form; inf and nan fail the range
        if not lo <= number <= hi:
            # an integer longer than the 24 characters shown: 1e+309, not its first 24 digits
            shown = _show_number(raw) if isinstance(raw, int) and abs(raw) >= 10**24 else str(raw)[:24]
            raise WorkflowError(f"{self.label(node)}: {name} = {shown} is outside ComfyUI's range {lo}..{hi}; "
                                "ComfyUI would refuse this prompt")

    def check_size(self, node: _Node, width: int, height: int, frames: int | None, batch: int) -> None:
        if width <= 0 or height <= 0 or (frames is not None and frames <= 0) or batch <= 0:
            raise WorkflowError(f"{self.label(node)}: size {width}x{height}"
                                f"{'' if frames is None else f'x{frames}'} batch {batch} is not positive")
        if max(width, height) > MAX_RESOLUTION or (frames or 0) > MAX_RESOLUTION or batch > 4096:
            raise WorkflowError(f"{self.label(node)}: size {width}x{height}{'' if frames is None else f'x{frames}'} "
                                f"batch {batch} is beyond ComfyUI's limits (MAX_RESOLUTION {MAX_RESOLUTION}, batch 4096)")

    def _latent_of(self, node: _Node, slot: int, depth: int) -> LatentShape | None:
        t = node.type
        out_type = self.out_type(node, slot)
        if out_type is not None and out_type not in ("LATENT", "*"):
            return None
        if t in R.latent_creators:
            return self._creator_shape(node)
        if t in R.non_image_latents:
            self.note(f"{self.label(node)}: {R.non_image_latents[t]} latent; no image/video shape")
            return None
        handler = R.latents.get(t)
        if handler is not None:
            return handler(self, node, slot, depth)
        if t in R.vae_encoders or t in R.pixel_latent_conditioning:
            return self.encoded_shape(node, "pixels", "vae")
        if t.startswith("Wan") and all(k in node.inputs for k in ("width", "height", "length")):
            self.note(f"{self.label(node)}: not in this reader's table; assumed the Wan 2.1 latent "
                      f"(16 ch, /8, frames (length-1)//4+1)")
            return self._creator_shape(node, (16, 8, 4, None))
        ins = self.linked_inputs_of_type(node, "LATENT")
        if ins:
            if not self.known(t) and not node.core:
                self.note(f"{self.label(node)}: unknown node; latent shape taken from its input '{ins[0][0]}'")
            return self.latent(ins[0][1], depth + 1)
        if t in R.known_types:
            return None
        vae, images = self.linked_inputs_of_type(node, "VAE"), self.linked_inputs_of_type(node, "IMAGE")
        if vae and images:  # read by its sockets: a VAE encode of its image (as VAEEncode)
            shape = self.encoded_shape(node, images[0][0], vae[0][0])
            if shape is not None:
                self.note(f"{self.label(node)}: its LATENT read as the VAE encoding of its image '{images[0][0]}' "
                          "(inferred from its sockets)")
            return shape
        if not node.core and not any(isinstance(v, _Link) for v in node.inputs.values()):
            return self._empty_latent_by_sockets(node)
        return None

    def _empty_latent_by_sockets(self, node: _Node) -> LatentShape | None:
        """A pack's node that takes nothing and returns a LATENT makes an empty latent (as EmptyLatentImage): its
        width and height widgets, or, where no spec names its widgets, its first two numbers in EmptyLatentImage's
        order (width, height, batch size), said. The sampled model sets the channels (sample.py as_model_latent)."""
        width, height = self.number(node, "width"), self.number(node, "height")
        batch = self.number(node, "batch_size", 1) or 1
        how = "its width and height widgets"
        if width is None and height is None and "width" not in node.inputs and "height" not in node.inputs:
            numbers = []
            for v in node.unnamed[:3]:
                if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
                    break
                numbers.append(int(v))
            if len(numbers) < 2 or not all(16 <= n <= MAX_RESOLUTION and n % 8 == 0 for n in numbers[:2]):
                return None
            width, height = numbers[:2]
            batch = numbers[2] if len(numbers) > 2 and 1 <= numbers[2] <= 64 else 1
            how = "its first two numbers, in EmptyLatentImage's order (no spec names its widgets)"
        if width is None or height is None or width <= 0 or height <= 0:
            return None
        self.check_size(node, width, height, None, batch)
        self.note(f"{self.label(node)}: read as an empty latent by its sockets (nothing in, a LATENT out): "
                  f"{width}x{height}, batch {batch}, from {how}")
        return LatentShape(batch=batch, channels=None, height=height // 8, width=width // 8, frames=None,
                           pixel_height=height, pixel_width=width, pixel_frames=None, spatial_compression=8,
                           temporal_compression=None, source_node=node.id, source_type=node.type)

    def resized_latent(self, src: LatentShape, node: _Node, width: int, height: int) -> LatentShape:
        s = src.spatial_compression
        self.check_size(node, width * s, height * s, src.pixel_frames, src.batch)
        return _replace(src, width=width, height=height, pixel_width=width * s, pixel_height=height * s,
                        source_node=node.id, source_type=node.type)

    def encoded_shape(self, node: _Node, pixels: str, vae: str, vae_type: str = "VAE") -> LatentShape | None:
        size = self.image_size(self.link(node, pixels))
        if size is None:
            return None
        if not size.exact and from_video(self, self.link(node, pixels)) \
                and frames_bound(self, self.link(node, pixels)) is None:
            self.note(f"{self.label(node)}: encodes a video's frames whose count is known only at run time; no "
                      "count is assumed")
            return None
        geometry, vae_name = self.vae_geometry(self.link(node, vae), vae_type)
        channels, spatial, temporal = geometry if geometry else (None, 8, None)
        if geometry:
            self.note(f"{self.label(node)}: /{spatial} compression judged from the VAE name '{vae_name}'")
        else:
            self.note(f"{self.label(node)}: assumed a /8 VAE (SD/SDXL/Flux/SD3/Wan 2.1 family)")
        frames = pixel_frames = None
        batch = size.batch
        if temporal is not None and size.batch > 1:
            pixel_frames = size.batch
            frames = (size.batch - 1) // temporal + 1
            batch = 1
        self.check_size(node, size.width, size.height, pixel_frames, batch)
        return LatentShape(batch=batch, channels=channels, height=size.height // spatial, width=size.width // spatial,
                           frames=frames, pixel_height=size.height, pixel_width=size.width, pixel_frames=pixel_frames,
                           spatial_compression=spatial, temporal_compression=temporal if frames else None,
                           source_node=node.id, source_type=node.type)

    def image_size(self, link: _Link | None, depth: int = 0) -> _ImageSize | None:
        """Pixel size of an IMAGE link when the graph fixes it."""
        if link is None:
            return None
        node = self.nodes.get(link.node)
        if node is None or depth > MAX_DEPTH:
            return None
        t = node.type
        handler = R.images.get(t)
        if handler is not None:
            return handler(self, node, link, depth)
        if t in R.vae_decoders:
            shape = self.latent(self.link(node, "samples"), depth + 1)
            if shape is None or shape.media:
                return None
            frames = shape.pixel_frames if shape.pixel_frames else None
            return _ImageSize(shape.pixel_width, shape.pixel_height, (frames or 1) * shape.batch)
        ins = self.linked_inputs_of_type(node, "IMAGE")
        if ins and node.output_types and self.out_type(node, link.slot) == "IMAGE" and len(ins) == 1:
            src = self.image_size(ins[0][1], depth + 1)
            if src is not None:
                self.note(f"{self.label(node)}: image size assumed unchanged through this node")
                return _ImageSize(src.width, src.height, src.batch, exact=False)
        return None

    # -- sigmas / guider
    def sigma_steps(self, link: _Link | None, depth: int = 0) -> int | None:
        if link is None or depth > MAX_DEPTH:
            return None
        node = self.nodes.get(link.node)
        if node is None:
            return None
        t = node.type
        handler = R.sigmas.get(t)
        if handler is not None:
            return handler(self, node, link, depth)
        if "steps" in node.inputs:
            return self.number(node, "steps")
        ins = self.linked_inputs_of_type(node, "SIGMAS")
        return self.sigma_steps(ins[0][1], depth + 1) if ins else None

    def guider(self, link: _Link | None, depth: int = 0) -> dict:
        info = {"model": [], "conds": [], "cfg": None, "uses_negative": True, "type": None}
        node = self.nodes.get(link.node) if link else None
        if node is None or depth > MAX_DEPTH:
            return info
        info["type"] = node.type
        t = node.type
        handler = R.guiders.get(t)
        if handler is not None:
            info.update(handler(self, node, depth))
            return info
        inner = self.linked_inputs_of_type(node, "GUIDER")
        if inner:
            info = self.guider(inner[0][1], depth + 1)
        models = [lk for _, lk in self.linked_inputs_of_type(node, "MODEL")]
        conds = [lk for _, lk in self.linked_inputs_of_type(node, "CONDITIONING")]
        if models:
            info["model"] = models
        if conds:
            info["conds"] = conds
            info["uses_negative"] = isinstance(node.inputs.get("negative"), _Link)
        cfg = self.number(node, "cfg", integer=False) if "cfg" in node.inputs else None
        if cfg is not None:
            info["cfg"] = cfg
        if not self.known(t) and not node.core:
            self.note(f"{self.label(node)}: unknown guider; read by its sockets")
        return info

    # -- stages
    def stage_kind(self, node: _Node) -> str | None:
        t = node.type
        if t in R.stage_kinds:
            return R.stage_kinds[t]
        if t in R.unpriced:
            return _UNPRICED
        if t in R.samplers:
            return SAMPLE
        if t in R.vae_decoders or t in R.audio_decoders:
            return VAE_DECODE
        if t in R.vae_encoders:
            return VAE_ENCODE
        if t in R.lora_loaders or t in R.text_encoders_no_stage or t in R.te_loaders or t in R.skipped_decoders:
            return None
        if t not in R.known_types and self._unpriced_model_input(node):
            return _UNPRICED  # a model runs here that nothing prices (before the socket rules: GLIGEN's text box)
        kind = self._socket_kind(node)
        if kind is not None and t not in R.known_types and not node.core and self._own_model_file(node):
            return _UNPRICED  # it runs a model file it loads itself besides what its sockets say ("easy hiresFix")
        if kind is None and t not in R.known_types and not node.core and self._runs_own_model(node):
            return _UNPRICED  # an image -> mask node that runs the detector it names (LayerStyle's SAM2Ultra, YOLO)
        return kind

    def _read_by_types(self, node_type: str) -> bool:
        """The node's spec came from a pack table, the live ComfyUI's definitions or the workflow's record: no table of
        this estimator's ComfyUIs and no pack module knows what it does."""
        spec = self.specs.get(node_type) or {}
        return bool(spec.get("offline") or spec.get("live") or spec.get("recorded"))

    def _chosen_models(self, node: _Node) -> list[tuple[str, str]]:
        """(widget, value) of the choices in widgets called '<x>_model' (LayerStyle's 'sam_model': "sam_vit_h (2.56GB)")."""
        return [(str(k), v.strip()) for k, v in list(node.inputs.items())[:40] if isinstance(v, str)
                and v.strip().lower() not in ("", "none", "disabled") and _MODEL_WIDGET.fullmatch(str(k))]

    def _runs_own_model(self, node: _Node) -> bool:
        """A node read by its types alone (a pack table, the live definitions or the workflow's record; no module)
        whose sockets carry no model, that names a model file in a widget and returns media (an image, a mask, a
        latent, audio, video): it loads that model and runs it itself, on the GPU as far as anyone here can tell
        (LayerStyle Advance's "LayerMask: SAM2Ultra" with sam2_hiera_base_plus.safetensors, its YOLO detectors).
        Only strings or numbers out (Image Saver's checkpoint name, written into metadata) is not running it."""
        if not self._read_by_types(node.type) or not {str(o) for o in node.output_types or ()} & _MEDIA_OUTPUTS:
            return False
        # a file name, or a choice in a widget called a model ('yolo_world_model': "yolo_world/v2-x"): what it loads
        return bool(node.model_files() or self._chosen_models(node))

    def _own_model_file(self, node: _Node) -> tuple[str, str] | None:
        """(widget, file) of a model file a pack node names in a widget and runs itself: it returns what a model's run
        gives (an image, a latent, conditioning...), not only model handles (that is a loader: SUPIR's)."""
        files = node.model_files()
        return files[0] if files and {str(o) for o in node.output_types or ()} & _DATA_OUTPUTS else None

    def _socket_kind(self, node: _Node) -> str | None:
        """The stage a node's linked input and output types say it is (issue 33's type-driven reading)."""
        t = node.type
        ins = {self.in_type(node, name) for name, v in node.inputs.items() if isinstance(v, _Link)}
        outs = set(node.output_types or ())
        if "CLIP" in ins and not outs <= {"CLIP", "MODEL"}:
            return TEXT_ENCODE
        if "CLIP_VISION" in ins and "CLIP_VISION_OUTPUT" in outs:
            return CLIP_VISION_ENCODE
        if "AUDIO_ENCODER" in ins and "AUDIO_ENCODER_OUTPUT" in outs:
            return AUDIO_ENCODE
        if ("MODEL" in ins or "GUIDER" in ins) and "LATENT" in ins and "LATENT" in outs:
            return SAMPLE  # a GUIDER carries the model and the prompts (SamplerCustomAdvanced's sockets)
        if "VAE" in ins and "LATENT" in ins and "IMAGE" in outs and "LATENT" not in outs:
            return VAE_DECODE
        if t in R.internal_encoders or ("VAE" in ins and "IMAGE" in ins):
            return VAE_ENCODE
        if "CLIP_VISION" in ins and "IMAGE" in ins:
            return CLIP_VISION_ENCODE  # a node that encodes its image with the CLIP vision model it is given
        return None

    @cached_property
    def _loaded_types(self) -> frozenset:
        return loaded_types(self.specs)

    def _unpriced_model_input(self, node: _Node) -> str | None:
        """The loaded model type a node of this ComfyUI consumes (takes, and does not pass on) that no node pack
        module describes: the node runs that model, so the estimate must not read it as free."""
        if node.type not in self.specs:
            return None
        outs = {str(o) for o in node.output_types or ()}
        # this ComfyUI's loaders' types and the pack modules' (a module's loader is known, so never recorded as one)
        loaded = (self._loaded_types | PACK_MODEL_TYPES) - CPU_MODEL_TYPES
        spec_in = self.specs[node.type].get("in") or {}
        for name, v in node.inputs.items():
            if not isinstance(v, _Link):
                continue
            ty = str(self.in_type(node, name))
            if ty in loaded and ty not in outs:
                return ty
            alt = spec_in.get(name)  # the table's type: a pack may have renamed the one the workflow recorded
            if alt is not None and str(alt) != ty and str(alt) in loaded and str(alt) not in outs:
                return str(alt)
        return None

    def unpriced_model_stage(self, node: _Node) -> Stage:
        if node.type in R.unpriced:  # a pack module names what it runs
            ty = None
            self.unpriced(f"{node.type} runs {R.unpriced[node.type]}, which no rule of this estimator prices")
        elif self._unpriced_model_input(node) is None and (own := self._own_model_file(node)):
            ty = None
            widget, name = own
            self.unpriced(f"{node.type} loads and runs the model file {name[:80]!r} (its '{widget}') itself, "
                          "which no rule of this estimator prices")
        elif (ty := self._unpriced_model_input(node)) is not None:
            self.unpriced(f"{node.type} runs a {ty} model (its weights and activations) "
                          "that no rule of this estimator prices")
        else:  # a model its widgets choose (_runs_own_model): "sam_vit_h (2.56GB)"
            chosen = self._chosen_models(node)
            what = ", ".join(f"{v[:60]!r} (its '{k}')" for k, v in chosen)[:240]
            self.unpriced(f"{node.type} loads and runs the model{'s' if len(chosen) > 1 else ''} "
                          f"{what or 'its widgets choose'} itself, which no rule of this estimator prices")
        return self.sample_stage(node, model_links=[], cond_links=[], cfg=None, uses_negative=False, steps=1,
                                 latent=None, model_type=ty or "MODEL")

    GENERIC_BUILDERS = {SAMPLE: "sample_stage", TEXT_ENCODE: "text_stage", VAE_DECODE: "decode_stage",
                        VAE_ENCODE: "encode_stage", CLIP_VISION_ENCODE: "clip_vision_stage",
                        AUDIO_ENCODE: "audio_encoder_stage"}

    def generic_stage(self, node: _Node) -> Stage | None:
        """The stage the generic reading builds for this node by its stage kind (for a pack wrapping a base node)."""
        return getattr(self, self.GENERIC_BUILDERS[self.stage_kind(node)])(node)

    def build_stages(self, node: _Node) -> list[Stage]:
        kind = self.stage_kind(node)
        if kind is None:
            if node.type in R.skipped_decoders:
                self.note(f"{self.label(node)}: 3D decode (latent -> voxels) not estimated")
            return []
        self._stage_notes, self._stage_unpriced = [], ""
        try:
            builder = R.stages.get(node.type)
            built = (builder(self, node) if builder else self.unpriced_model_stage(node) if kind == _UNPRICED
                     else getattr(self, self.GENERIC_BUILDERS[kind])(node))
            stage_notes, why = tuple(self._stage_notes), self._stage_unpriced
        finally:
            self._stage_notes, self._stage_unpriced = None, ""
        # a handler may return several stages (a detailer: encode, sample and decode of its crops)
        stages = [s for s in (built if isinstance(built, (list, tuple)) else [built]) if s is not None]
        return [_replace(s, title=node.title or node.type, notes=s.notes + stage_notes, unpriced=s.unpriced or why)
                for s in stages]

    def _newer_comfyui(self, stages: list[Stage]) -> list[Stage]:
        """A text-encoder loader whose CLIP ``type`` no ComfyUI of the specs offers (MOSS-Image's "moss_image"):
        the workflow is made for a newer ComfyUI, whose model family this estimator cannot know; said once, and
        on each sampling stage as the reason its working memory may be unknown (stages/sample.py)."""
        found = []
        for stage in stages:
            for ref in stage.models:
                known = self.clip_types.get(ref.loader_type)
                if ref.role == "text_encoder" and ref.clip_type and known and ref.clip_type not in known:
                    if (ref.loader_type, ref.clip_type) not in found:
                        found.append((ref.loader_type, ref.clip_type))
        if not found:
            return stages
        newest = max(self.specs_versions, key=lambda v: tuple(int(p) if p.isdecimal() else 0 for p in v.split(".")),
                     default="?")
        what = "; ".join(f"{loader} type '{ct}'" for loader, ct in found)
        why = (f"{NEWER_COMFYUI} ({what} is offered by no ComfyUI up to {newest}, the newest this estimator "
               f"knows): it needs a ComfyUI newer than {newest}, and its model family cannot be identified or "
               "traced by this estimator")
        self.note(why)
        return [_replace(s, notes=s.notes + (why,)) if s.kind == SAMPLE else s for s in stages]

    def unknown_read_by_sockets(self, node: _Node, what: str) -> None:
        if not self.known(node.type) and not node.core and node.type not in R.known_types:
            self.stage_note(f"unknown node read as {what} by its sockets")

    def audio_encoder_stage(self, node: _Node) -> Stage:
        links = self.linked_inputs_of_type(node, "AUDIO_ENCODER")
        return Stage(kind=AUDIO_ENCODE, node_id=node.id, node_type=node.type,
                     models=tuple(self.refs(links[0][1], "AUDIO_ENCODER")) if links else ())

    def clip_vision_stage(self, node: _Node) -> Stage:
        links = self.linked_inputs_of_type(node, "CLIP_VISION")
        return Stage(kind=CLIP_VISION_ENCODE, node_id=node.id, node_type=node.type,
                     models=tuple(self.refs(links[0][1], "CLIP_VISION")) if links else ())

    def text_stage(self, node: _Node, clip_link: _Link | None = None, clip_type: str = "CLIP",
                   models: list[ModelRef] | None = None) -> Stage:
        if clip_link is None and models is None:
            clip = self.linked_inputs_of_type(node, clip_type)
            clip_link = clip[0][1] if clip else None
        models = list(models) if models is not None else self.refs(clip_link, clip_type)
        if not models:
            self.stage_note("no text-encoder loader found upstream")
        spec = self.specs.get(node.type)
        if spec is not None:
            text_names = [w[0] for w in spec.get("w", ()) if w[1] == "STRING"]
        else:
            text_names = [n for n, v in node.inputs.items() if isinstance(v, str) and " " in v]
        texts, unknown = [], []
        for name in text_names:
            value = self.text(node, name)
            if value is _UNKNOWN:
                unknown.append(name)
            elif isinstance(value, str):
                texts.append(value)
        tokens = max((estimate_text_tokens(t) for t in texts), default=None)
        if unknown and tokens is None:
            self.stage_note(f"prompt text comes from a linked node ({', '.join(unknown)}); length unknown")
        elif tokens is None:
            tokens = MIN_TEXT_TOKENS
        vae = self.linked_inputs_of_type(node, "VAE")
        if vae and self.linked_inputs_of_type(node, "IMAGE"):
            models = models + [r for r in self.refs(vae[0][1], "VAE") if r not in models]
            self.stage_note("also VAE-encodes its reference image(s)")
        return Stage(kind=TEXT_ENCODE, node_id=node.id, node_type=node.type, models=tuple(models),
                     text_tokens=tokens)

    def sample_stage(self, node: _Node, *, model_links: list | None = None, cond_links: list | None = None,
                     cfg: Any = _UNKNOWN, uses_negative: bool | None = None, steps: int | None = None,
                     notes: Iterable[str] = (), latent_link: _Link | None = None, model_type: str = "MODEL",
                     latent: LatentShape | None = None, **extra) -> Stage:
        """A sampling stage; pack handlers pass what their node says, the rest is read by sockets."""
        if model_links is None:
            model_links = [self.link(node, "model")] if "model" in node.inputs else \
                [lk for _, lk in self.linked_inputs_of_type(node, "MODEL")]
            guiders = self.linked_inputs_of_type(node, "GUIDER") if not model_links else []
            if guiders:  # no MODEL socket but a GUIDER one: read as SamplerCustomAdvanced reads its guider
                g = self.guider(guiders[0][1])
                model_links = g["model"]
                cond_links = g["conds"] if cond_links is None else cond_links
                cfg = g["cfg"] if cfg is _UNKNOWN else cfg
                uses_negative = g["uses_negative"] if uses_negative is None else uses_negative
                sigmas = self.linked_inputs_of_type(node, "SIGMAS")
                if steps is None and sigmas:
                    steps = self.sigma_steps(sigmas[0][1])
                if not self.known(node.type):
                    self.stage_note(f"{self.label(node)}: its model and prompts read through its GUIDER input, as "
                                    "SamplerCustomAdvanced reads them")
        if cond_links is None:
            cond_links = [lk for _, lk in self.linked_inputs_of_type(node, "CONDITIONING")]
        if cfg is _UNKNOWN:
            cfg = self.number(node, "cfg", integer=False) if "cfg" in node.inputs else None
        if uses_negative is None:
            uses_negative = isinstance(node.inputs.get("negative"), _Link)
        if steps is None and "steps" in node.inputs:
            steps = self.number(node, "steps")
        if node.type not in R.stages:
            self.unknown_read_by_sockets(node, "a sampler (MODEL + LATENT in, LATENT out)")
        models: list[ModelRef] = []
        for lk in model_links:
            for ref in self.refs(lk, model_type):
                if ref not in models:
                    models.append(ref)
        if not models:
            self.stage_note("no diffusion-model loader found upstream")
        models = self._family_from_text_encoder(models, cond_links)
        for ref in self.controlnets(cond_links):
            if ref not in models:
                models.append(ref)
        if latent is not None:
            shape = latent
        else:
            if latent_link is None:
                latent_link = self.link(node, "latent_image")
            if latent_link is None:
                ins = self.linked_inputs_of_type(node, "LATENT")
                latent_link = ins[0][1] if ins else None
            shape = self.latent(latent_link)
        if shape is None:
            self.stage_note("latent shape unknown")
        refs = extra.pop("reference_latents", None)
        if refs is None:
            refs = self.reference_latents(cond_links)
        if refs:
            self.stage_note(f"{len(refs)} reference latent(s) on the conditioning: the model attends over their "
                            "tokens too")
        return Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, models=tuple(models), latent=shape, cfg=cfg,
                     uses_negative=uses_negative, steps=steps, expert=_expert_of(models), notes=tuple(notes),
                     reference_latents=refs, **extra)

    # A text encoder type whose conditioning one diffusion family alone reads, of one size: the CLIP loader's `type`
    # picks the text encoder (comfy/sd.py load_clip), and only that family's model takes its output (HunyuanVideo's
    # txt_in reads LLaVA-Llama-3's 4096-wide states with CLIP-L's pooled vector; T2V, I2V and SkyReels are 13B).
    # Read only for a diffusion file whose name no rule knows, as a hint (never to find the file; a header wins).
    # LTX-Video's T5 type ("ltxv", sd.py CLIPType.LTXV) conditions LTX-Video 0.9.x alone (LTX-2 reads Gemma through
    # its own loader); of two sizes, so its name rule prices the larger, said (an all-in-one checkpoint too:
    # LTXTricks' "model.safetensors")
    SOLE_FAMILY_TYPES = {"hunyuan_video": "hunyuan_video", "ltxv": "ltxv"}

    def _family_from_text_encoder(self, models: list[ModelRef], cond_links) -> list[ModelRef]:
        unnamed = [i for i, r in enumerate(models) if (r.role == "diffusion" or (r.role == "checkpoint"
                                                                                 and r.part == "model"))
                   and not r.hint and not r.unset and family_of(r.name, "diffusion") is None]
        if not unnamed or not cond_links:
            return models
        types = {r.clip_type for r in self._cond_text_encoders(cond_links) if r.clip_type}
        clip_type = types.pop() if len(types) == 1 else None
        hint = self.SOLE_FAMILY_TYPES.get(clip_type)
        if hint is None:
            return models
        out = list(models)
        for i in unnamed:
            out[i] = _replace(models[i], hint=hint)
            self.stage_note(f"{models[i].name}: its name says nothing; its family is read from the text encoder that "
                            f"conditions it (type '{clip_type}', which only that family's model reads)")
        return out

    def _cond_text_encoders(self, cond_links) -> list[ModelRef]:
        """The text encoders behind conditioning links: those of the nodes on the chain that take a CLIP."""
        out: list[ModelRef] = []
        for node in self._conditioning_chain(cond_links):
            for _, clip in self.linked_inputs_of_type(node, "CLIP"):
                out.extend(r for r in self.refs(clip, "CLIP") if r not in out)
        return out

    def decode_stage(self, node: _Node, *, samples: _Link | None = None, vae_type: str = "VAE", **extra) -> Stage:
        vae = self.linked_inputs_of_type(node, vae_type)
        models = self.refs(vae[0][1], vae_type) if vae else []
        if not models:
            self.stage_note("no VAE loader found upstream")
        if samples is None:
            samples = self.link(node, "samples")
        if samples is None:
            ins = self.linked_inputs_of_type(node, "LATENT")
            samples = ins[0][1] if ins else None
        if node.type in R.audio_decoders:
            shape = self.latent(samples)
            if shape is not None and shape.media != "audio" and shape.audio is not None:
                shape = shape.audio  # an audio-video latent: its audio stream (0.33 comfy_extras/nodes_audio.py:100-101)
            if shape is None or shape.media != "audio":
                self.stage_note("audio decode; the audio latent's size is not fixed by the graph")
                shape = None
        else:
            shape = self.latent(samples)
            if shape is None:
                self.stage_note("latent shape unknown")
        if node.type not in R.vae_decoders and node.type not in R.audio_decoders:
            self.unknown_read_by_sockets(node, "a VAE decode")
        return Stage(kind=VAE_DECODE, node_id=node.id, node_type=node.type, models=tuple(models), latent=shape,
                     **extra)

    def encode_stage(self, node: _Node, *, vae_type: str = "VAE", pixels: str = "pixels", **extra) -> Stage | None:
        t = node.type
        vae = self.linked_inputs_of_type(node, vae_type)
        models = self.refs(vae[0][1], vae_type) if vae else []
        if t in R.vae_encoders:
            shape = self.encoded_shape(node, pixels, "vae", vae_type)
            if shape is None:
                self.stage_note("latent shape unknown (the image size is not fixed by the graph)")
            return Stage(kind=VAE_ENCODE, node_id=node.id, node_type=t, models=tuple(models), latent=shape, **extra)
        image_inputs = R.internal_encoders.get(t)
        if image_inputs is None:
            image_inputs = tuple(n for n, _ in self.linked_inputs_of_type(node, "IMAGE"))
        connected = [n for n in image_inputs if isinstance(node.inputs.get(n), _Link)]
        if image_inputs and not connected:
            return None  # nothing to encode
        if not vae:
            return None
        shape = None
        if t in R.encodes_image_as_given and connected:
            # the node VAE-encodes its image input's frames (one frame, or the guide's frames), not the video its
            # LATENT output holds: nodes_video_model.py SVD_img2vid_Conditioning (init_image), nodes_lt.py
            # LTXVImgToVideo / LTXVImgToVideoInplace / LTXVAddGuide (image); each first resizes the image to the
            # latent's pixel size (common_upscale: 0.33.0 nodes_lt.py:113, :160-165, :302-307;
            # nodes_video_model.py SVD_img2vid_Conditioning), so the encode is at that size
            shape = self.encoded_shape(node, connected[0], vae[0][0], vae_type)
            if shape is None and t == "LTXVAddGuide" and node.output_types and "LATENT" in node.output_types:
                # a guide of unknown length (a video's frames): ComfyUI asserts its latent fits in the latent
                # (0.33.0 nodes_lt.py:467 "Conditioning frames exceed the length of the latent sequence"), so
                # the latent's own frames bound the encode
                shape = self.latent(_Link(node.id, node.output_types.index("LATENT")))
                if shape is not None:
                    self.stage_note("the guide's frame count is known only at run time: encoded at most the "
                                    "latent's own length (nodes_lt.py:467 asserts the guide fits in it), an upper "
                                    "bound")
            out = (self.latent(_Link(node.id, node.output_types.index("LATENT")))
                   if shape is not None and node.output_types and "LATENT" in node.output_types else None)
            if out is not None and out.pixel_width and out.pixel_height and not out.media:
                sp = shape.spatial_compression or 1
                shape = _replace(shape, width=out.pixel_width // sp, height=out.pixel_height // sp,
                                 pixel_width=out.pixel_width, pixel_height=out.pixel_height)
        elif node.output_types and "LATENT" in node.output_types:
            shape = self.latent(_Link(node.id, node.output_types.index("LATENT")))
        elif t in R.latent_creators:
            shape = self._creator_shape(node)
        if shape is None and connected and vae:  # e.g. a ControlNet apply node encoding its control image
            shape = self.encoded_shape(node, connected[0], vae[0][0], vae_type)
        self.stage_note(f"VAE-encodes {', '.join(connected) or 'its conditioning frames'} inside this node"
                        + ("" if shape is None else "; shape of the node's latent"))
        return Stage(kind=VAE_ENCODE, node_id=node.id, node_type=t, models=tuple(models), latent=shape)

    # -- whole workflow
    def output_nodes(self) -> set[str]:
        out = set()
        for node in self.nodes.values():
            spec = self.specs.get(node.type)
            if (spec and spec.get("out_node")) or node.type in R.output_nodes or (
                    spec is None and re.match(r"(Save|Preview)[A-Z]", node.type)):
                out.add(node.id)
        return out

    def ancestors(self, roots: set[str]) -> set[str]:
        seen, stack = set(), list(roots)
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id not in self.nodes:
                continue
            seen.add(node_id)
            stack.extend(v.node for v in self.nodes[node_id].inputs.values() if isinstance(v, _Link))
        return seen

    def topo_order(self) -> list[str]:
        """Dependencies first; among ready nodes text encodes before samplers before decodes."""
        rank = {TEXT_ENCODE: 1, CLIP_VISION_ENCODE: 1, AUDIO_ENCODE: 1, VAE_ENCODE: 2, SAMPLE: 3, VAE_DECODE: 4}
        deps = {nid: {v.node for v in n.inputs.values() if isinstance(v, _Link) and v.node in self.nodes}
                for nid, n in self.nodes.items()}
        users: dict[str, set] = {nid: set() for nid in self.nodes}
        for nid, ds in deps.items():
            for d in ds:
                users[d].add(nid)
        keys = {nid: (rank.get(self.stage_kind(n), 0), _natural_key(nid), nid) for nid, n in self.nodes.items()}
        remaining = {nid: len(ds) for nid, ds in deps.items()}
        ready = [keys[nid] for nid, c in remaining.items() if c == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            nid = heapq.heappop(ready)[-1]
            order.append(nid)
            for user in users[nid]:
                remaining[user] -= 1
                if remaining[user] == 0:
                    heapq.heappush(ready, keys[user])
        if len(order) < len(self.nodes):
            cyclic = sorted((nid for nid in self.nodes if nid not in set(order)), key=_natural_key)
            self.note(f"cycle among nodes {', '.join(cyclic[:10])}: ComfyUI would refuse this prompt; "
                      f"read in id order")
            order.extend(cyclic)
        return order

    def analyze(self) -> Workload:
        if not self.nodes:
            self.note("the workflow has no nodes that run")
        outputs = self.output_nodes()
        needed = self.ancestors(outputs)
        if not outputs and self.nodes:
            self.note("no output node (Save/Preview...): ComfyUI would refuse to run this prompt; "
                      "all stages are listed")
        stages: list[Stage] = []
        for node_id in self.topo_order():
            node = self.nodes[node_id]
            self.where.append(self.label(node))
            for stage in self.build_stages(node):
                if outputs and node_id not in needed:
                    stage = _replace(stage, notes=stage.notes + (
                        "does not lead to an output node: ComfyUI will not run it",))
                stages.append(stage)
        stages = self._infer_experts(stages)
        stages = [self._legacy_path(stage) for stage in stages]
        stages = self._newer_comfyui(stages)
        unknown, helpers, api_nodes = [], set(), set()
        feeding = {v.node for n in self.nodes.values() for v in n.inputs.values() if isinstance(v, _Link)}
        for node in self.nodes.values():
            t = node.type
            if t in self.api:
                api_nodes.add(t)
                continue
            spec = self.specs.get(t) or {}
            recorded = bool(spec.get("recorded"))  # read by the sockets the workflow records
            if self._read_by_types(t) and t not in R.known_types and self._applies_a_file(node):
                unknown.append((node.id, t))  # it patches the model with a file of its own (IC-Light, a LoRA)
                continue
            if (self.known(t) or t in R.known_types) and not recorded:
                continue
            types = {str(v) for v in node.input_types.values()} | {str(o) for o in node.output_types or ()}
            touches = any(part in RELEVANT_TYPES or part in R.relevant_types for ty in types for part in ty.split(","))
            if recorded:
                if not touches and self.stage_kind(node) is None:
                    helpers.add(t)
                continue
            # a model-file widget: the node loads and runs a model of its own (a face restorer, an upscaler); outputs
            # not recorded matter only where something takes them (a sink of images, as Save Gif (mtb), does not)
            unseen = node.output_types is None and (node.id in feeding or not node.input_types)
            if unseen or touches or node.model_files():
                unknown.append((node.id, t))
            else:
                helpers.add(t)
        if api_nodes:
            self.note(f"API nodes run remotely (no local VRAM): {', '.join(sorted(api_nodes))}")
        if unknown:
            self.note(unknown_nodes_note(sorted({t for _, t in unknown}), self.specs_versions))
        if helpers:
            self.note(f"nodes without model/latent sockets, not needed for the estimate: {', '.join(sorted(helpers))}")
        models: list[ModelRef] = []
        for stage in stages:
            for ref in stage.models:
                if ref not in models:
                    models.append(ref)
        for node in self.nodes.values():  # loaders whose output no stage uses still name files
            if node.type not in R.loaders and node.id not in self.unknown_loaders:
                continue
            for slot, out_type in enumerate(node.output_types or ()):
                for ref in self.refs(_Link(node.id, slot), out_type):
                    if ref not in models:
                        models.append(ref)
        return Workload(stages=tuple(stages), source_format=self.g.fmt, unknown_nodes=tuple(unknown),
                        notes=tuple(self.notes), models=tuple(models))

    # a socket-read LoRA loader's strength widgets (LoraLoader's names first, then the usual pack spellings)
    LORA_STRENGTHS = {"MODEL": ("strength_model", "model_strength", "strength", "lora_strength", "weight"),
                      "CLIP": ("strength_clip", "clip_strength", "strength", "lora_strength", "weight")}

    def _lora_by_widget(self, node: _Node) -> tuple[str, str] | None:
        """(widget, file) of a node no module describes that passes a MODEL on and names exactly one model file, in a
        widget called a LoRA ("lora_name": LTX-Video's LTXICLoRALoaderModelOnly): a pack's LoRA loader, applied as
        core's LoraLoader applies one (comfy.sd.load_lora_for_models). Anything else naming a file stays not
        understood (_applies_a_file)."""
        if not self._read_by_types(node.type) or node.core or node.type in R.known_types \
                or node.id in self.unknown_loaders:
            return None  # a node a table knows (ComfyUI's own, a module's) is read by its own rule
        files = node.model_files()
        if len(files) != 1 or "lora" not in files[0][0].lower():
            return None
        ins = {str(self.in_type(node, n)) for n, v in node.inputs.items() if isinstance(v, _Link)}
        outs = {str(o) for o in node.output_types or ()}
        return files[0] if "MODEL" in ins and "MODEL" in outs else None

    def _socket_lora(self, node: _Node, lora: tuple[str, str], type_: str) -> list[ModelRef]:
        widget, name = lora
        strength = next((v for w in self.LORA_STRENGTHS[type_] if isinstance(v := self.value(node, w), (int, float))
                         and not isinstance(v, bool)), 1.0)
        if strength == 0:
            self.note(f"{self.label(node)}: its LoRA's strength is 0, not applied")
            return []
        self.note(f"{self.label(node)}: read as a LoRA loader of '{name}' (its '{widget}'), applied as LoraLoader "
                  f"applies one, at strength {strength:g}: inferred from its sockets and widget")
        return [ModelRef(name=name, role="lora", folder="loras", loader_node=node.id, loader_type=node.type,
                         strength=float(strength))]

    def _applies_a_file(self, node: _Node) -> bool:
        """A node read by its sockets alone that passes a model on (MODEL -> MODEL, CLIP -> CLIP) and names a model
        file in a widget, and is not a loader priced from it: it patches the model with that file (a pack's LoRA
        loader, IC-Light's UNet), whose size the sockets do not give."""
        if node.id in self.unknown_loaders or not node.model_files() or self._lora_by_widget(node) is not None:
            return False
        ins = {str(self.in_type(node, n)) for n, v in node.inputs.items() if isinstance(v, _Link)}
        outs = {str(o) for o in node.output_types or ()}
        return bool(ins & outs & {"MODEL", "CLIP", "VAE"})

    def _legacy_path(self, stage: Stage) -> Stage:
        """A sampling stage whose model passes a node that disables Dynamic VRAM (a pack's disables_dynamic) on its
        way to the sampler."""
        if stage.kind != SAMPLE or stage.node_id not in self.nodes:
            return stage
        upstream = self.ancestors({stage.node_id}) - {stage.node_id}
        why = next((R.disables_dynamic[self.nodes[n].type] for n in sorted(upstream)
                    if self.nodes[n].type in R.disables_dynamic), "")
        return _replace(stage, legacy_path=why) if why else stage

    def _infer_experts(self, stages: list[Stage]) -> list[Stage]:
        """Two KSamplerAdvanced passes on two different diffusion-model files (UNETLoader), with no
        high/low-noise hint in the names: the Wan 2.2 A14B pattern. The pass starting at step 0
        runs the high-noise expert (Wan 2.2 model card: high-noise expert for the early steps)."""
        passes = [s for s in stages if s.node_id in self.advanced_start]  # advanced samplers (their start steps)
        bases = [next((m.name for m in s.models if m.role == "diffusion"), None) for s in passes]
        if len(passes) != 2 or None in bases or bases[0] == bases[1] or any(s.expert for s in passes):
            return stages
        first, second = sorted(passes, key=lambda s: self.advanced_start[s.node_id])
        if self.advanced_start[first.node_id] == self.advanced_start[second.node_id]:
            return stages
        self.note(f"two KSamplerAdvanced passes on two diffusion models ({', '.join(bases)}): read as the "
                  f"Wan 2.2 A14B high-noise / low-noise experts by their step ranges")
        experts = {first.node_id: "high_noise", second.node_id: "low_noise"}
        return [_replace(s, expert=experts[s.node_id]) if s.node_id in experts else s for s in stages]



def _expert_of(models: Iterable[ModelRef]) -> str | None:
    """Wan 2.2 A14B: the high-noise / low-noise expert, from the diffusion model's file name."""
    for ref in models:
        if ref.role in ("diffusion", "checkpoint"):
            key = re.sub(r"[\s\-]+", "_", ref.name.lower())
            if "high_noise" in key or "highnoise" in key:
                return "high_noise"
            if "low_noise" in key or "lownoise" in key:
                return "low_noise"
            return None
    return None
