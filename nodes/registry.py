"""Collects the pack's nodes for ComfyUI (V1 mappings: visible to ComfyUI-Manager's node map).

Each node module exports NODE_CLASS_MAPPINGS / NODE_DISPLAY_NAME_MAPPINGS. A module that fails to
import (a broken estimator fails every module that uses it) is logged as an error with its
traceback and recorded in LOAD_ERRORS, and its nodes / routes are missing; the others load, so
one broken module never stops ComfyUI. Every module is part of the pack: none is skipped quietly.
"""
from __future__ import annotations

import importlib
import logging

NODE_CLASS_MAPPINGS: dict = {}
NODE_DISPLAY_NAME_MAPPINGS: dict = {}
LOAD_ERRORS: dict[str, str] = {}  # module -> "ExceptionType: message" of each module that failed to import

NODE_MODULES = ("budget_node", "vae_decode", "wan_planner", "routes")

for _name in NODE_MODULES:
    try:
        _mod = importlib.import_module(f".{_name}", __package__)
    except Exception as _exc:  # noqa: BLE001  (logged with its traceback; ComfyUI goes on loading)
        logging.exception("[VRAM Budget] failed to load %s: its nodes and routes are missing", _name)
        LOAD_ERRORS[_name] = f"{type(_exc).__name__}: {_exc}"
        continue
    NODE_CLASS_MAPPINGS.update(getattr(_mod, "NODE_CLASS_MAPPINGS", {}))
    NODE_DISPLAY_NAME_MAPPINGS.update(getattr(_mod, "NODE_DISPLAY_NAME_MAPPINGS", {}))
