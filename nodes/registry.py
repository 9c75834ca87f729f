"""Collects the pack's nodes for ComfyUI (V1 mappings: visible to ComfyUI-Manager's node map).

Each node module exports NODE_CLASS_MAPPINGS / NODE_DISPLAY_NAME_MAPPINGS. A module that fails to
import is logged with its traceback and skipped, so one broken node never stops ComfyUI.
"""
from __future__ import annotations

import importlib
import logging

NODE_CLASS_MAPPINGS: dict = {}
NODE_DISPLAY_NAME_MAPPINGS: dict = {}

NODE_MODULES = ("budget_node", "vae_decode", "wan_planner", "routes")

for _name in NODE_MODULES:
    try:
        _mod = importlib.import_module(f".{_name}", __package__)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.endswith(f".{_name}"):
            continue  # not built yet
        logging.exception("[VRAM Budget] failed to load %s", _name)
        continue
    except Exception:
        logging.exception("[VRAM Budget] failed to load %s", _name)
        continue
    NODE_CLASS_MAPPINGS.update(getattr(_mod, "NODE_CLASS_MAPPINGS", {}))
    NODE_DISPLAY_NAME_MAPPINGS.update(getattr(_mod, "NODE_DISPLAY_NAME_MAPPINGS", {}))
