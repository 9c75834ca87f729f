"""ComfyUI's modules, imported lazily: importing the bridge never fails outside ComfyUI."""
from __future__ import annotations



def _mm():
    import comfy.model_management as mm  # noqa: PLC0415

    return mm


def _folder_paths():
    import folder_paths  # noqa: PLC0415

    return folder_paths


def comfy_args():
    """ComfyUI's parsed launch flags (comfy.cli_args.args), or None outside ComfyUI."""
    try:
        from comfy.cli_args import args  # noqa: PLC0415
    except Exception:  # noqa: BLE001  (outside ComfyUI)
        return None
    return args
