"""Workflow readers: an API prompt or a UI workflow -> the internal graph (_Graph).

The UI reader flattens the workflow the way the frontend's ``graphToPrompt`` does (subgraphs,
reroutes, primitives, SetNode/GetNode, bypass / mute); the API reader takes the prompt as is.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import WorkflowError
from .node_specs import map_widget_values
from .base import (MAX_DEPTH, MAX_EXPANDED_NODES, MODE_BYPASS, MODE_MUTED, SUBGRAPH_INPUT_ID, SUBGRAPH_OUTPUT_ID,
                   _Graph, _is_link, _Link, _Node)
from .packs import REGISTRY

# -------------------------------------------------------------------------------- API reading
def _read_api(prompt: Mapping, specs: Mapping) -> _Graph:
    nodes: dict[str, _Node] = {}
    notes: list[str] = []
    spec_nodes = specs.get("nodes", {})
    for raw_id, entry in prompt.items():
        node_id = str(raw_id)
        if not isinstance(entry, Mapping):
            raise WorkflowError(f"node {node_id}: expected an object with class_type and inputs, got "
                                f"{type(entry).__name__}")
        class_type = entry.get("class_type")
        if not isinstance(class_type, str) or not class_type:
            raise WorkflowError(f"node {node_id}: no class_type")
        raw_inputs = entry.get("inputs") or {}
        if not isinstance(raw_inputs, Mapping):
            raise WorkflowError(f"node {node_id} ({class_type}): inputs is not an object")
        inputs = {}
        for name, value in raw_inputs.items():
            inputs[str(name)] = _Link(str(value[0]), value[1]) if _is_link(value) else value
        meta = entry.get("_meta") if isinstance(entry.get("_meta"), Mapping) else {}
        spec = spec_nodes.get(class_type) or {}
        nodes[node_id] = _Node(id=node_id, type=class_type, title=str(meta.get("title") or ""),
                               inputs=inputs, input_types=dict(spec.get("in") or {}),
                               output_types=list(spec["out"]) if "out" in spec else None)
    for node in nodes.values():
        for name, value in list(node.inputs.items()):
            if isinstance(value, _Link) and value.node not in nodes:
                notes.append(f"node {node.id} ({node.type}): input '{name}' links to missing node {value.node}; "
                             f"treated as unconnected")
                del node.inputs[name]
    return _Graph(nodes=nodes, fmt="api", notes=notes)


# --------------------------------------------------------------------------------- UI reading
# Saved workflows are edited by hand and by other tools: every access below tolerates a wrong
# type (a list where an object was expected, a string id, a dangling index) and degrades to
# "not connected" plus a note, never an exception.
def _lst(value: Any) -> list:
    return value if isinstance(value, list) else []


def _dct(value: Any) -> Mapping:
    if type(value) is dict:  # the common case, without the ABC check of isinstance(..., Mapping)
        return value
    return value if isinstance(value, Mapping) else {}


def _key(value: Any):
    """A usable node / link id (ints and strings), else None."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _index(value: Any, length: int) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < length
    return value if ok else None


@dataclass
class _Scope:
    """One graph level: the root workflow or one expanded subgraph instance."""

    prefix: str
    nodes: dict  # raw id -> raw node dict
    links: dict  # link id -> (origin id, origin slot, target id, target slot, type)
    sg_def: Mapping | None = None
    instance: Mapping | None = None
    parent: "_Scope | None" = None


def _parse_links(raw_links: Any) -> dict:
    links: dict = {}
    for link in _lst(raw_links):
        if isinstance(link, list) and len(link) >= 5 and _key(link[0]) is not None:
            links[link[0]] = (_key(link[1]), link[2], _key(link[3]), link[4], link[5] if len(link) > 5 else None)
        elif isinstance(link, Mapping) and _key(link.get("id")) is not None:
            links[link["id"]] = (_key(link.get("origin_id")), link.get("origin_slot"), _key(link.get("target_id")),
                                 link.get("target_slot"), link.get("type"))
    return links


MAX_UE_LINKS = 5000  # Use Everywhere links read from one workflow


class _UiReader:
    def __init__(self, workflow: Mapping, specs: Mapping):
        self.specs = specs.get("nodes", {})
        self.notes: list[str] = []
        self.nodes: dict[str, _Node] = {}
        self.where: list[str] = []
        self._scopes: dict[str, _Scope] = {}  # prefix -> expanded subgraph instance
        self._promoted: dict[str, list] = {}  # prefix -> promoted widget input names
        self.subgraphs = {sg["id"]: sg for sg in _lst(_dct(workflow.get("definitions")).get("subgraphs"))
                          if isinstance(sg, Mapping) and isinstance(sg.get("id"), str)}
        raw_nodes = workflow.get("nodes")
        if not isinstance(raw_nodes, list):
            raise WorkflowError("UI workflow: 'nodes' is not a list")
        self.root = _Scope(prefix="", nodes=self._index(raw_nodes, "workflow"),
                           links=_parse_links(workflow.get("links")))
        self.ue_links, self.ue_link_ids = self._ue_links(_dct(workflow.get("extra")))

    def _ue_links(self, extra: Mapping) -> tuple[dict, set]:
        """cg-use-everywhere's broadcast links, as the pack saves them (extra.ue_links: downstream node and input
        slot <- upstream node and output slot) and adds them to the prompt it queues: (node id, input slot) ->
        (upstream id, upstream slot), and the link ids it drew (extra.links_added_by_ue), which the links list
        may lack. Root level only, bounded."""
        out: dict = {}
        for ue in _lst(extra.get("ue_links"))[:MAX_UE_LINKS]:
            ue = _dct(ue)
            down, slot, up, up_slot = ue.get("downstream"), ue.get("downstream_slot"), ue.get("upstream"), \
                ue.get("upstream_slot")
            if isinstance(up, str) and up.lstrip("-").isdigit():
                up = int(up)
            if _key(down) is not None and _index(slot, 1 << 16) is not None and _key(up) is not None \
                    and _index(up_slot, 1 << 16) is not None:
                out[(down, slot)] = (up, up_slot)
        ids = {k for k in _lst(extra.get("links_added_by_ue"))[:MAX_UE_LINKS] if _key(k) is not None}
        return out, ids

    def _index(self, raw_nodes: Any, where: str) -> dict:
        out = {}
        for raw in _lst(raw_nodes):
            if not isinstance(raw, (dict, Mapping)) or _key(raw.get("id")) is None \
                    or not isinstance(raw.get("type"), str):
                raise WorkflowError(f"{where}: a node entry without id/type: {str(raw)[:80]}")
            out[raw["id"]] = raw
        return out

    def read(self) -> _Graph:
        self._visited = 0
        self._expand(self.root, depth=0)
        return _Graph(nodes=self.nodes, fmt="ui", notes=self.notes)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- expansion
    def _child_scope(self, scope: _Scope, instance: Mapping) -> _Scope:
        prefix = f"{scope.prefix}{instance['id']}:"
        if prefix not in self._scopes:
            sg = self.subgraphs[instance["type"]]
            self._scopes[prefix] = _Scope(
                prefix=prefix, nodes=self._index(sg.get("nodes"), f"subgraph {sg.get('name') or sg['id']}"),
                links=_parse_links(sg.get("links")), sg_def=sg, instance=instance, parent=scope)
        return self._scopes[prefix]

    def _expand(self, scope: _Scope, depth: int) -> None:
        if depth > MAX_DEPTH // 10:  # a subgraph containing itself, or absurd nesting
            self.note(f"subgraphs nested deeper than {MAX_DEPTH // 10} levels at {scope.prefix}: not expanded")
            return
        for raw in scope.nodes.values():
            flat_id = f"{scope.prefix}{raw['id']}"
            self.where.append(f"node {flat_id} ({raw['type']})")
            self._visited += 1
            if self._visited > MAX_EXPANDED_NODES:  # nesting multiplies: a few KB can expand to millions
                raise WorkflowError(f"the workflow's subgraphs expand to more than {MAX_EXPANDED_NODES:,} nodes "
                                    f"(at node {flat_id}); too large to read")
            mode = raw.get("mode", 0)
            if raw["type"] in self.subgraphs:
                if mode in (MODE_MUTED, MODE_BYPASS):
                    what = "muted" if mode == MODE_MUTED else "bypassed"
                    self.note(f"subgraph node {flat_id} ({self.subgraphs[raw['type']].get('name', '')}) is "
                              f"{what}: its nodes do not run")
                    continue
                self._expand(self._child_scope(scope, raw), depth + 1)
                continue
            if raw["type"] in REGISTRY.virtual_nodes:
                continue
            if mode == MODE_MUTED:
                self.note(f"node {flat_id} ({raw['type']}) is muted: it does not run")
                continue
            if mode == MODE_BYPASS:
                self.note(f"node {flat_id} ({raw['type']}) is bypassed: its inputs pass through")
                continue
            self.nodes[flat_id] = self._flat_node(scope, raw, flat_id)

    def _flat_node(self, scope: _Scope, raw: Mapping, flat_id: str) -> _Node:
        node_type = raw["type"]
        spec = self.specs.get(node_type)
        inputs = self._widget_values(raw, spec, flat_id)
        saved = raw.get("widgets_values")
        unnamed = tuple(saved[:64]) if isinstance(saved, list) and not inputs else ()  # values no name was found for
        input_types = dict(_dct(_dct(spec).get("in")))
        fallback = {}
        for index, slot in enumerate(_lst(raw.get("inputs"))):
            if not isinstance(slot, (dict, Mapping)) or not isinstance(slot.get("name"), str):
                continue
            name = slot["name"]
            widget = _dct(slot.get("widget"))
            if isinstance(widget.get("name"), str) and widget["name"]:
                name = widget["name"]
            if isinstance(slot.get("type"), str) and not widget:
                input_types[name] = slot["type"]
            link_id = _key(slot.get("link"))
            ue = self.ue_links.get((raw["id"], index)) if not scope.prefix and self.ue_links else None
            if ue is not None and (link_id is None or link_id in self.ue_link_ids or link_id not in scope.links):
                origin = scope.nodes.get(ue[0])
                resolved = self._resolve_output(scope, origin, ue[1], depth=1) if origin is not None else None
                self.note("inputs fed by Use Everywhere (cg-use-everywhere) read from the links it saves in the "
                          "workflow (extra.ue_links), as it adds them to the prompt it queues")
            elif link_id is None:
                continue
            else:
                resolved = self._resolve(scope, link_id, depth=0)
            if resolved is None:
                continue  # disconnected by mute / bypass: a widget keeps its own value
            kind, value = resolved
            if kind == "value":
                if value is not None:
                    inputs[name] = value
                continue
            if name in inputs:
                fallback[name] = inputs[name]
            inputs[name] = value
        outputs = raw.get("outputs")
        if isinstance(outputs, list):
            output_types = [str(_dct(o).get("type") or "*") for o in outputs]
        else:
            output_types = list(spec["out"]) if spec and "out" in spec else None
        props = _dct(raw.get("properties"))
        return _Node(id=flat_id, type=node_type, title=str(raw.get("title") or ""), inputs=inputs, unnamed=unnamed,
                     input_types=input_types, output_types=output_types, fallback=fallback,
                     core=props.get("cnr_id") == "comfy-core", recorded=isinstance(outputs, list))

    def _widget_values(self, raw: Mapping, spec: Mapping | None, flat_id: str) -> dict:
        values = raw.get("widgets_values")
        if isinstance(values, Mapping):  # some packs (VHS) save a dict
            return {str(k): v for k, v in values.items()}
        if not isinstance(values, list) or not values:
            return {}
        if spec is not None:
            named = map_widget_values(spec, values)
            if named is not None:
                return named
        # The node's own widget sockets (frontend >= 1.16 gives every widget one), in order.
        slot_names = [_dct(s.get("widget")).get("name") for s in _lst(raw.get("inputs"))
                      if isinstance(s, (dict, Mapping))]
        slot_names = [n for n in slot_names if isinstance(n, str) and n]
        if slot_names:
            pseudo: dict = {"w": []}
            for name in slot_names:
                pseudo["w"].append([name, "X"])
                if name in ("seed", "noise_seed"):
                    pseudo["w"].append(["$cag", "CAG"])
            named = map_widget_values(pseudo, values)
            if named is not None:
                return named
        prefix = REGISTRY.widgets.get(raw.get("type"))
        if spec is None and prefix:  # a pack's stable leading widgets (its older versions append new ones)
            out, i = {}, 0
            for name in prefix:
                if i >= len(values):
                    break
                out[name] = values[i]
                i += 2 if name in ("seed", "noise_seed") else 1  # + control_after_generate
            return out
        named_saved = raw.get("widgets_values_named")  # written by the workflow-templates tooling
        if isinstance(named_saved, Mapping):
            return {str(k): v for k, v in named_saved.items() if "control_after_generate" not in str(k)}
        if spec is not None and spec.get("w"):
            # Saved by another ComfyUI version: map the common prefix (new widgets are appended).
            out = {}
            for i, entry in enumerate(spec["w"]):
                if i >= len(values) or entry[1] == "DYN":
                    break
                if not entry[0].startswith("$"):
                    out[entry[0]] = values[i]
            self.note(f"node {flat_id} ({raw['type']}): {len(values)} widget values where this ComfyUI "
                      f"version has {len(spec['w'])}; mapped by position")
            return out
        return {}

    # -- link resolution
    def _resolve(self, scope: _Scope, link_id: Any, depth: int):
        """("link", _Link) | ("value", literal) | None (nothing arrives) for one link of a scope."""
        where = scope.prefix or "root"
        if depth > MAX_DEPTH:
            self.note(f"link {link_id} at {where}: reroute/bypass chain too long (cycle?); treated as unconnected")
            return None
        link = scope.links.get(link_id) if _key(link_id) is not None else None
        if link is None:
            self.note(f"link {link_id} at {where} is missing from the links list; treated as unconnected")
            return None
        origin_id, origin_slot = link[0], link[1]
        if origin_id == SUBGRAPH_INPUT_ID:
            return self._resolve_subgraph_input(scope, origin_slot, depth)
        origin = scope.nodes.get(origin_id) if origin_id is not None else None
        if origin is None:
            self.note(f"link {link_id} at {where} comes from missing node {origin_id}; treated as unconnected")
            return None
        return self._resolve_output(scope, origin, origin_slot, depth + 1)

    def _resolve_output(self, scope: _Scope, origin: Mapping, slot: Any, depth: int):
        node_type = origin["type"]
        mode = origin.get("mode", 0)
        if mode == MODE_MUTED:
            return None
        if mode == MODE_BYPASS:
            return self._resolve_bypass(scope, origin, slot, depth)
        if node_type == "Reroute":
            return self._resolve_input_slot(scope, origin, 0, depth)
        if node_type == "PrimitiveNode":
            values = _lst(origin.get("widgets_values"))
            return ("value", values[0]) if values else None
        if node_type == "SetNode":
            return self._resolve_input_slot(scope, origin, 0, depth)
        if node_type == "GetNode":
            return self._resolve_get_node(scope, origin, depth)
        if node_type in self.subgraphs:
            return self._resolve_subgraph_output(scope, origin, slot, depth)
        if _index(slot, 1 << 30) is None:
            return None
        return ("link", _Link(f"{scope.prefix}{origin['id']}", slot))

    def _resolve_input_slot(self, scope: _Scope, node: Mapping, index: int, depth: int):
        inputs = _lst(node.get("inputs"))
        if _index(index, len(inputs)) is None:
            return None
        link_id = _key(_dct(inputs[index]).get("link"))
        return None if link_id is None else self._resolve(scope, link_id, depth + 1)

    def _resolve_bypass(self, scope: _Scope, node: Mapping, slot: Any, depth: int):
        """Frontend ExecutableNodeDTO: the same slot index first, then the first input of the output's type."""
        outputs = _lst(node.get("outputs"))
        out_slot = _index(slot, len(outputs))
        out_type = _dct(outputs[out_slot]).get("type") if out_slot is not None else None
        inputs = _lst(node.get("inputs"))
        order = ([slot] if _index(slot, len(inputs)) is not None else []) + list(range(len(inputs)))
        for index in order:
            entry = _dct(inputs[index])
            in_type = entry.get("type")
            if out_type is None or in_type == out_type or "*" in (in_type, out_type):
                if _key(entry.get("link")) is None:
                    continue
                return self._resolve(scope, entry["link"], depth + 1)
        return None

    def _resolve_get_node(self, scope: _Scope, get_node: Mapping, depth: int):
        """KJNodes SetNode/GetNode: a GetNode reads the SetNode with the same name (widgets_values[0])."""
        values = _lst(get_node.get("widgets_values"))
        name = values[0] if values else None
        level: _Scope | None = scope
        while level is not None:
            for raw in level.nodes.values():
                if raw.get("type") == "SetNode" and _lst(raw.get("widgets_values"))[:1] == [name]:
                    return self._resolve_input_slot(level, raw, 0, depth)
            level = level.parent
        self.note(f"GetNode {scope.prefix}{get_node['id']} '{name}' has no SetNode; treated as unconnected")
        return None

    def _resolve_subgraph_output(self, scope: _Scope, instance: Mapping, slot: Any, depth: int):
        outputs = _lst(self.subgraphs[instance["type"]].get("outputs"))
        if _index(slot, len(outputs)) is None:
            return None
        child = self._child_scope(scope, instance)
        for link_id in _lst(_dct(outputs[slot]).get("linkIds")):
            link = child.links.get(link_id) if _key(link_id) is not None else None
            if link is not None and link[2] == SUBGRAPH_OUTPUT_ID:
                return self._resolve(child, link_id, depth + 1)
        return None

    def _resolve_subgraph_input(self, scope: _Scope, index: Any, depth: int):
        sg, instance, parent = scope.sg_def, scope.instance, scope.parent
        if sg is None or instance is None or parent is None:
            return None
        sg_inputs = _lst(sg.get("inputs"))
        if _index(index, len(sg_inputs)) is None:
            return None
        name = _dct(sg_inputs[index]).get("name")
        slots = [s for s in _lst(instance.get("inputs")) if isinstance(s, (dict, Mapping))]
        slot = next((s for s in slots if s.get("name") == name), None)
        if slot is None and len(slots) == len(sg_inputs):
            slot = slots[index]
        if slot is not None and _key(slot.get("link")) is not None:
            return self._resolve(parent, slot["link"], depth + 1)
        # Not linked outside: a promoted widget's value on the instance (frontend <= 1.35 saves
        # them in the instance's widgets_values), else the inner widget keeps its own value.
        values = instance.get("widgets_values")
        if isinstance(values, Mapping) and isinstance(name, str) and name in values:
            return ("value", values[name])
        if isinstance(values, list) and values:
            # Frontends that write properties.proxyWidgets ([[inner node id or "-1", widget], ...], "-1"
            # = a subgraph input) save widgets_values in that order; the seed's control widget has no value.
            entries = [[str(e[0]), e[1]] for e in _lst(_dct(instance.get("properties")).get("proxyWidgets"))
                       if isinstance(e, list) and len(e) == 2 and not str(e[1]).startswith("$$")]  # $$: UI-only
            controls = ("control_after_generate", "control_before_generate")
            # which promoted widgets save a value differs between frontends: a seed's control widget may or
            # may not; an inner node's promoted widget may carry none. The first order that accounts for
            # every saved value is the one.
            orders = (entries, [e for e in entries if e[1] not in controls], [e for e in entries if e[0] == "-1"])
            for order in orders:
                if len(order) == len(values) and ["-1", name] in order:
                    return ("value", values[order.index(["-1", name])])
            widget_inputs = self._promoted_widget_inputs(scope)
            if len(widget_inputs) == len(values) and name in widget_inputs:
                return ("value", values[widget_inputs.index(name)])
        return None

    def _promoted_widget_inputs(self, scope: _Scope) -> list:
        """Names of the subgraph inputs that feed widgets inside (the instance shows them as widgets)."""
        if scope.prefix not in self._promoted:
            self._promoted[scope.prefix] = self._find_promoted_widget_inputs(scope)
        return self._promoted[scope.prefix]

    def _find_promoted_widget_inputs(self, scope: _Scope) -> list:
        names = []
        for sg_input in _lst(_dct(scope.sg_def).get("inputs")):
            for link_id in _lst(_dct(sg_input).get("linkIds")):
                link = scope.links.get(link_id) if _key(link_id) is not None else None
                target = scope.nodes.get(link[2]) if link and link[2] is not None else None
                target_inputs = _lst(_dct(target).get("inputs"))
                slot = _index(link[3], len(target_inputs)) if link else None
                if slot is not None and _dct(target_inputs[slot]).get("widget"):
                    names.append(_dct(sg_input).get("name"))
                    break
        return names




# ------------------------------------------------------------------------------------ public
def _detect(data: Any) -> tuple[str, Mapping]:
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorkflowError(f"workflow is not UTF-8 text: {exc}") from None
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise WorkflowError(f"workflow is not JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise WorkflowError(f"workflow must be a JSON object, got {type(data).__name__}")
    if isinstance(data.get("nodes"), list):
        return "ui", data
    if not data:
        return "api", data  # an empty prompt: an empty Workload with a note
    # What runs is the API form: prefer it when both are given (graphToPrompt's {output, workflow}).
    for key in ("prompt", "output"):  # a /prompt POST body, or app.graphToPrompt()'s {output, workflow}
        inner = data.get(key)
        if isinstance(inner, Mapping) and inner and all(isinstance(v, Mapping) and "class_type" in v
                                                        for v in inner.values()):
            return "api", inner
    if isinstance(data.get("workflow"), Mapping) and isinstance(data["workflow"].get("nodes"), list):
        return "ui", data["workflow"]  # EXTRA_PNGINFO / a saved {"workflow": ...}
    if any(isinstance(v, Mapping) and "class_type" in v for v in data.values()) or (
            data and all(re.fullmatch(r"[\w.-]+(:[\w.-]+)*", str(k)) and str(k)[:1].isdecimal() for k in data)):
        return "api", data  # an API prompt, possibly with broken entries: _read_api names them
    bad = next((k for k, v in data.items() if not (isinstance(v, Mapping) and "class_type" in v)), None)
    raise WorkflowError(f"not a ComfyUI workflow: no 'nodes' list (UI format) and entry {bad!r} has no "
                        f"class_type (API format)")
