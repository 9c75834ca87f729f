"""ComfyUI API prompt or UI workflow -> Workload (the stages ComfyUI will run, their models, shapes).

Layout (one concern per module; a new node pack is one file in packs/):
- ``base.py``      the internal graph (_Node, _Link), limits, safe math for ComfyMathExpression
- ``readers.py``   API prompt / UI workflow -> internal graph (subgraphs, reroutes, bypass, primitives)
- ``analyzer.py``  the generic, socket-typed analyzer: models, latents, images, sigmas -> stages
- ``packs/``       one module per node pack: what its nodes mean (tables + small handlers)
- ``node_specs.py`` widget order and socket types per node type (generated tables; ComfyUI's own live)
- ``templates.py`` the official workflow templates, read where pip installed them

Nothing here raises anything but WorkflowError, and only when the input is not a workflow (not
JSON, not an object, a node entry without id / class_type); everything else (unknown nodes,
dangling links, cycles, odd values, absurd sizes) becomes a note on the Workload or the Stage.
"""
from __future__ import annotations

import contextvars
import re
from dataclasses import replace as _dc_replace
from typing import Callable, Mapping

from ..errors import WorkflowError
from .node_specs import load_pack_types, load_specs
from ..machine.placement import place_stages
from ..workload import Workload
from .analyzer import RELEVANT_TYPES, _Analyzer
from .packs import REGISTRY as PACK_MODULES
from .base import _Graph, estimate_text_tokens
from .readers import _detect, _read_api, _UiReader

__all__ = ["read_workflow", "estimate_text_tokens", "LIVE_SPECS"]

# Inside ComfyUI (live_models.live_hooks): node types -> specs of the installed nodes the shipped table lacks
# (node_specs.spec_from_node_info of ComfyUI's own node definitions, with "pack"), so an unknown node pack's node is
# read by its socket types, as /object_info gives them
LIVE_SPECS: contextvars.ContextVar[Callable[[list[str]], dict] | None] = contextvars.ContextVar(
    "vram_budget_live_specs", default=None)
MAX_TYPES = 2000
STAGE_WORDS = {"sample": "sampling", "vae_decode": "a VAE decode", "vae_encode": "a VAE encode",
               "text_encode": "a text encode", "clip_vision_encode": "an image encode", "upscale": "an upscale",
               "audio_encode": "an audio encode", "train": "training"}


def _node_types(data: Mapping) -> list[str]:
    """The node types a workflow (API prompt or UI, subgraph definitions too; as readers._detect unwraps it) names,
    bounded."""
    found: dict[str, None] = {}
    if isinstance(data, Mapping):
        nodes = list(data.get("nodes") or []) if isinstance(data.get("nodes"), list) else []
        defs = data.get("definitions")
        subs = defs.get("subgraphs") if isinstance(defs, Mapping) else None
        for sub in subs[:200] if isinstance(subs, list) else []:
            if isinstance(sub, Mapping) and isinstance(sub.get("nodes"), list):
                nodes += sub["nodes"]
        if not nodes:  # an API prompt
            nodes = [v for v in list(data.values())[:MAX_TYPES * 5] if isinstance(v, Mapping)]
        for n in nodes[:MAX_TYPES * 5]:
            t = n.get("class_type") or n.get("type") if isinstance(n, Mapping) else None
            if isinstance(t, str) and len(t) <= 200:
                found[t] = None
    return list(found)[:MAX_TYPES]


def _with_live(specs: Mapping, data) -> tuple[Mapping, dict]:
    """The specs with the definitions of the node types the shipped table lacks, and those added: this ComfyUI's
    own (inside ComfyUI), else the generated table of published node packs (node_specs.load_pack_types)."""
    known = specs.get("nodes") or {}
    missing = [t for t in _node_types(data) if t not in known]
    if not missing:
        return specs, {}
    extra: dict = {}
    live = LIVE_SPECS.get()
    if live is not None:
        try:
            # "live": read from the running ComfyUI's definitions, not from a table that knows the node
            extra = {t: {**spec, "live": True} for t, spec in dict(live(missing)).items() if isinstance(spec, Mapping)}
        except Exception:  # noqa: BLE001  (ComfyUI's definitions are a bonus: without them, the tables answer)
            extra = {}
    offline = load_pack_types()
    table, packs = offline.get("nodes") or {}, offline.get("packs") or {}
    for t in missing:
        if t in PACK_MODULES.known_types:  # a pack module of graph/packs/ reads it: it keeps precedence
            continue
        spec = table.get(t)
        if t not in extra and isinstance(spec, Mapping):
            commit = str((packs.get(spec.get("pack")) or {}).get("commit") or "")[:7]
            extra[t] = {**spec, "offline": f"{spec.get('pack')}@{commit}" if commit else str(spec.get("pack"))}
    if not extra:
        return specs, {}
    return {**specs, "nodes": {**known, **extra}}, extra


# what a node computes, not a model: a node recorded with a model-file widget that outputs only these runs that model
# itself (a face restorer, an upscaler); one that outputs a model kind (MODEL, a pack's own type) is a loader
_DATA = {"IMAGE", "MASK", "LATENT", "CONDITIONING", "STRING", "INT", "FLOAT", "BOOLEAN", "AUDIO", "VIDEO", "*"}
_NOTED = RELEVANT_TYPES | {"*"}
_SUBGRAPH_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)


def _recorded_specs(graph: _Graph, specs: Mapping) -> dict:
    """Specs for the node types no table knows, from the socket types a UI workflow records for them (the
    frontend wrote them from /object_info of the author's ComfyUI): the same reading by socket types as the
    published pack table, with the linked inputs and the outputs only (widget names are not recorded). A node
    that names a model file in a widget and outputs only data (_DATA) runs a model of its own: it stays not
    understood. A node of ComfyUI itself (cnr_id comfy-core) that no table knows is from a newer ComfyUI: it keeps
    that reason (analyzer.unknown_nodes_note)."""
    known = specs.get("nodes") or {}
    listed = set(specs.get("core") or ()) | set(specs.get("api") or ())
    out: dict = {}
    for node in graph.nodes.values():
        t = node.type
        if (not node.recorded or node.core or t in known or t in listed or t in out
                or t in PACK_MODULES.known_types or _SUBGRAPH_ID.match(t)):
            continue  # (a subgraph instance whose definition is missing is not a node type to infer)
        if node.model_files() and {str(o) for o in node.output_types or ()} <= _DATA:
            continue
        out[t] = {"in": {str(k): str(v) for k, v in node.input_types.items()},
                  "out": [str(o) for o in node.output_types or ()], "recorded": True}
    return out


def _source(spec: Mapping) -> str:
    offline = spec.get("offline")
    return (f"the published sources of {offline}, read offline" if offline
            else "the sockets the workflow records for it" if spec.get("recorded")
            else "this ComfyUI's node definitions")


def _inferred_notes(workload: Workload, extra: Mapping, graph: _Graph) -> Workload:
    """Say which stages were read from a node's socket types alone, and which such nodes were read as passing
    their inputs through."""
    notes, staged = [], set()
    for s in workload.stages:
        if s.node_type in extra:
            staged.add(s.node_id)
            spec = extra[s.node_type] or {}
            pack, offline = spec.get("pack"), spec.get("offline")
            with_models = ", ".join(dict.fromkeys(r.name for r in s.models))[:200]
            notes.append(f"node {s.node_id} '{s.node_type}'{f' ({pack})' if pack and not offline else ''} read as "
                         f"{STAGE_WORDS.get(s.kind, s.kind)}{f' with {with_models}' if with_models else ''}: inferred "
                         f"from its socket types ({_source(spec)})")
    through: dict[str, list[str]] = {}
    # a node that adds a model on the way (a pack's LoRA loader read by its widget) or that is not understood is not
    # "adding no model of its own"
    adding = {r.loader_node for s in workload.stages for r in s.models} | {nid for nid, _ in workload.unknown_nodes}
    for node in graph.nodes.values():
        spec = extra.get(node.type)
        if spec is None or node.id in staged or node.id in adding:
            continue
        outs = {str(o) for o in node.output_types or ()} & {str(i) for i in node.input_types.values()}
        if outs & _NOTED:  # a model, a latent or a conditioning passed on: said; images and strings are not
            through.setdefault(", ".join(sorted(outs)), []).append(f"node {node.id} '{node.type}'")
    for what, names in list(through.items())[:20]:
        what = "its input" if what == "*" else what
        notes.append(f"{', '.join(names[:10])}{f' and {len(names) - 10} more' if len(names) > 10 else ''} read as "
                     f"passing {what} through, adding no model of its own: inferred from its socket types")
    return _dc_replace(workload, notes=workload.notes + tuple(dict.fromkeys(notes))) if notes else workload


def _silent_pack_nodes(workload: Workload, graph: _Graph, specs: Mapping, extra: Mapping) -> Workload:
    """A workflow in which no stage was found: the node-pack nodes that were read, by their types, as doing no GPU
    work (SeargeSDXL's SeargeMagicBox passes its own data stream), most frequent first, so the answer can name them.
    ComfyUI's own nodes are the specs' less those a pack table or the live ComfyUI added (`extra`)."""
    if workload.stages:
        return workload
    own = set(specs.get("core") or ()) | set(specs.get("nodes") or ()) - set(extra)
    unknown = {t for _, t in workload.unknown_nodes}
    counts: dict[str, int] = {}
    for node in graph.nodes.values():
        if not node.core and node.type not in own and node.type not in unknown:
            counts[node.type] = counts.get(node.type, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return _dc_replace(workload, silent_pack_nodes=tuple(ranked)) if ranked else workload


def read_workflow(data: Mapping | str | bytes, *, specs: Mapping | None = None) -> Workload:
    """Read an API prompt or a UI workflow (dict, or JSON text) into a Workload.

    ``specs``: node specs as ``node_specs.load_specs()`` returns them; a running ComfyUI can pass
    ``{"nodes": node_specs.specs_from_object_info(object_info), ...}`` to know custom nodes too.
    Raises WorkflowError only when ``data`` is not a workflow at all.
    """
    extra: dict = {}
    where: list[str] = []  # the node being read, for the message below
    try:
        fmt, payload = _detect(data)  # JSON text parsed once, a {"prompt": ...} / {"workflow": ...} body unwrapped
        if specs is None:
            specs, extra = _with_live(load_specs(), payload)
        if fmt == "ui":
            reader = _UiReader(payload, specs)
            reader.where = where
            graph = reader.read()
            recorded = _recorded_specs(graph, specs)
            if recorded:
                specs = {**specs, "nodes": {**(specs.get("nodes") or {}), **recorded}}
                extra = {**extra, **recorded}
        else:
            graph = _read_api(payload, specs)
        analyzer = _Analyzer(graph, specs)
        analyzer.where = where
        return _silent_pack_nodes(_inferred_notes(place_stages(analyzer.analyze()), extra, graph), graph, specs, extra)
    except WorkflowError:
        raise
    except RecursionError:
        raise WorkflowError(f"workflow nests too deeply to read{' at ' + where[-1] if where else ''}") from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ZeroDivisionError, OverflowError) as exc:
        # A shape this reader did not foresee: name the node instead of crashing the caller.
        raise WorkflowError(f"{where[-1] + ': ' if where else ''}could not be read "
                            f"({type(exc).__name__}: {exc})") from None
