"""Node specs: the per-node-type facts graph.py needs to read a UI workflow.

A UI workflow (what the frontend saves) stores a node's widget values as a bare list,
``widgets_values``, in the order the frontend created the widgets. That order comes from the
node definition ComfyUI serves at ``/object_info``: required inputs then optional inputs, each
input that is a widget (not a socket) adds one widget, and a few add a hidden companion widget
whose value is saved too (frontend 1.35.9):
- ``control_after_generate`` after an INT whose options say so, or any INT named ``seed`` /
  ``noise_seed`` (``useIntWidget.ts``); after a FLOAT / COMBO only when the option says so
  (``useFloatWidget.ts``, ``useComboWidget.ts``).
- an ``upload`` button value after a COMBO with ``image_upload`` / ``video_upload`` /
  ``audio_upload`` / ``animated_image_upload`` (LoadImage saves ``["x.png", "image"]``).
- V3 dynamic combos (``COMFY_DYNAMICCOMBO_V3``): the selected key, then the widgets of the
  selected option, named ``<combo>.<sub>``.

``spec_from_node_info`` turns one ``/object_info`` entry into a compact spec; the generator
(bench/gen_widget_specs.py, run inside ComfyUI's Python) stores the specs in
``data/widget_specs.json``; a running ComfyUI can pass live specs to ``graph.read_workflow``.

This module imports nothing from the pack (it is loaded by file path from ComfyUI's Python by
the generator, where the pack's package is not importable) and nothing from ComfyUI.
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any, Mapping

SPECS_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "widget_specs.json")

# Input types the frontend turns into widgets (frontend 1.35.9 `useWidgetStore` core widgets:
# INT, FLOAT, BOOLEAN, STRING, COMBO, MARKDOWN, IMAGEUPLOAD, ... ). Anything else is a socket
# unless its options say `socketless` / `widgetType`.
WIDGET_TYPES = frozenset({"INT", "FLOAT", "BOOLEAN", "STRING", "COMBO", "MARKDOWN", "IMAGEUPLOAD",
                          "COLOR", "BOUNDING_BOX", "IMAGECOMPARE", "CURVE", "CHART", "GALLERY",
                          "TEXTAREA"})
DYNAMIC_COMBO = "COMFY_DYNAMICCOMBO_V3"
UPLOAD_OPTIONS = ("image_upload", "video_upload", "audio_upload", "animated_image_upload")
SEED_NAMES = ("seed", "noise_seed")

# Pseudo widget names for the companion widgets (never an input name in the API prompt).
CONTROL_AFTER_GENERATE = "$control_after_generate"
UPLOAD = "$upload"


def _input_kind(spec: Any) -> tuple[str, dict]:
    """(type, options) of one input spec ``[type, {options}]`` (type may be a list = COMBO)."""
    if isinstance(spec, (list, tuple)) and spec:
        type_ = spec[0]
        opts = spec[1] if len(spec) > 1 and isinstance(spec[1], dict) else {}
    else:
        type_, opts = spec, {}
    if isinstance(type_, (list, tuple)):
        return "COMBO", opts
    return str(type_), opts


def _is_widget(type_: str, opts: Mapping) -> bool:
    if opts.get("forceInput"):
        return False
    if opts.get("socketless") or opts.get("widgetType"):
        return True
    return type_ in WIDGET_TYPES or type_ == DYNAMIC_COMBO


def _widgets_of(inputs: Mapping, order: Mapping | None) -> tuple[list, dict]:
    """Ordered widget entries and {socket name: type} of an ``input`` mapping."""
    widgets: list = []
    sockets: dict[str, str] = {}
    for section in ("required", "optional"):
        entries = inputs.get(section) or {}
        names = list((order or {}).get(section) or entries.keys())
        for name in names:
            if name not in entries:
                continue
            type_, opts = _input_kind(entries[name])
            if not _is_widget(type_, opts):
                sockets[name] = type_
                continue
            if type_ == DYNAMIC_COMBO:
                options = {}
                for option in opts.get("options") or []:
                    sub_widgets, sub_sockets = _widgets_of(option.get("inputs") or {}, None)
                    key = option.get("key")
                    key = getattr(key, "value", key)  # str-Enum keys: their value is what the UI saves
                    options[str(key)] = [[f"{name}.{w[0]}", *w[1:]] for w in sub_widgets]
                    for sub_name, sub_type in sub_sockets.items():
                        sockets[f"{name}.{sub_name}"] = sub_type
                widgets.append([name, "DYN", options])
                continue
            widgets.append([name, type_ if type_ in WIDGET_TYPES else "OTHER"])
            cag = opts.get("control_after_generate")
            if (type_ == "INT" and (cag or (cag is None and name in SEED_NAMES))) or (
                    type_ in ("FLOAT", "COMBO") and cag):
                widgets.append([CONTROL_AFTER_GENERATE, "CAG"])
            if type_ == "COMBO" and any(opts.get(k) for k in UPLOAD_OPTIONS):
                widgets.append([UPLOAD, "UPLOAD"])
    return widgets, sockets


def spec_from_node_info(info: Mapping) -> dict:
    """Compact spec of one ``/object_info`` entry.

    ``{"w": [[name, kind] | [name, "DYN", {option: [[sub, kind], ...]}], ...],
       "in": {socket name: type}, "out": [output types], "out_node": 1 (only when true)}``
    """
    widgets, sockets = _widgets_of(info.get("input") or {}, info.get("input_order"))
    spec: dict = {"w": widgets, "in": sockets,
                  "out": [("COMBO" if isinstance(t, (list, tuple)) else str(t)) for t in info.get("output") or ()]}
    if info.get("output_node"):
        spec["out_node"] = 1
    return spec


def specs_from_object_info(object_info: Mapping[str, Mapping]) -> dict[str, dict]:
    """Specs for every node of an ``/object_info`` answer (malformed entries are skipped)."""
    out: dict[str, dict] = {}
    for name, info in object_info.items():
        try:
            out[str(name)] = spec_from_node_info(info)
        except (AttributeError, TypeError, ValueError):
            continue
    return out


def map_widget_values(spec: Mapping, values: list) -> dict[str, Any] | None:
    """Name the values of a UI ``widgets_values`` list with a spec; None when they do not fit.

    Companion widgets are dropped. A node type whose widgets differ between the ComfyUI versions the
    spec file was made from carries the other versions' lists as ``alt`` (bench/gen_widget_specs.py):
    the newest that fits names the values. A count mismatch with every one (a node saved by yet
    another version) returns None so the caller can try another source of names.
    """
    for candidate in (spec, *(spec.get("alt") or ())):
        named = _map_one(candidate, values)
        if named is not None:
            return named
    return None


def _map_one(spec: Mapping, values: list) -> dict[str, Any] | None:
    named: dict[str, Any] = {}
    i = 0
    for entry in spec.get("w") or ():
        if i >= len(values):
            return None
        name, kind = entry[0], entry[1]
        value = values[i]
        i += 1
        if kind == "DYN":
            named[name] = value
            for sub in (entry[2] or {}).get(str(value), ()):
                if i >= len(values):
                    return None
                if not sub[0].startswith("$"):
                    named[sub[0]] = values[i]
                i += 1
            continue
        if name.startswith("$"):
            continue
        named[name] = value
    if i != len(values):
        return None
    return named


@lru_cache(maxsize=4)
def _load(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


PACK_TYPES_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "pack_types.json")


def load_pack_types(path: str | None = None) -> dict:
    """The generated table of custom node packs' node types (bench/gen_pack_types.py: their published sources read
    statically): ``{"nodes": {type: spec + "pack"}, "packs": {"owner/name": {"commit", ...}}}``; empty when absent."""
    try:
        data = _load(path or PACK_TYPES_PATH)
    except (OSError, ValueError):
        return {"nodes": {}, "packs": {}}
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict):
        return {"nodes": {}, "packs": {}}
    return data


def load_specs(path: str | None = None) -> dict:
    """The stored spec file: ``{"nodes": {type: spec}, "core": [...], "api": [...], ...}``."""
    try:
        return _load(path or SPECS_PATH)
    except (OSError, ValueError):
        return {"nodes": {}, "core": [], "api": []}
