"""comfyui-vram-budget: ComfyUI entry point.

ComfyUI imports this folder as a package from custom_nodes/. Outside ComfyUI (tests, the
command line, where this package is installed as ``vram_budget``) it imports cleanly and
registers nothing, so ``comfy`` is never imported where it does not exist.
"""
import sys

WEB_DIRECTORY = "./web"
NODE_CLASS_MAPPINGS: dict = {}
NODE_DISPLAY_NAME_MAPPINGS: dict = {}

if "comfy.model_management" in sys.modules:  # loaded by ComfyUI (it imports this before custom nodes)
    from .nodes.registry import NODE_CLASS_MAPPINGS, NODE_DISPLAY_NAME_MAPPINGS  # noqa: F811

__all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS", "WEB_DIRECTORY"]
