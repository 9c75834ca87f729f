"""Suzie1/ComfyUI_Comfyroll_CustomNodes (nodes/nodes_aspect_ratio.py): CR Aspect Ratio, the empty latent and size of
many community workflows.

CR_AspectRatio.Aspect_Ratio: a preset ("SDXL - 3:2 landscape 1216x832") replaces width and height by the size its
label ends with (every preset of this node names the size the code sets), "custom" keeps the widgets;
swap_dimensions "On" swaps them; width and height are then multiplied by prescale_factor (int()); the latent is zeros
[batch_size, 4, height // 8, width // 8]. Outputs: width, height, upscale_factor, prescale_factor, batch_size,
empty_latent, show_help. Releases before prescale_factor had six widgets and the latent at output 4."""
from __future__ import annotations

import re

from ..base import _UNKNOWN
from . import Pack, empty_sd_latent

ASPECT = "CR Aspect Ratio"
_PRESET = re.compile(r"(\d+)x(\d+)\s*$")


def _old_layout(a, node) -> bool:
    """Six widgets (no prescale_factor): the batch size sits where prescale_factor is now."""
    return a.value(node, "batch_size") is None and a.value(node, "prescale_factor") is not None


def _size(a, node):
    preset = str(a.value(node, "aspect_ratio") or "custom")
    if preset == "custom":
        width, height = a.number(node, "width"), a.number(node, "height")
        if width is None or height is None:
            return None
    else:
        m = _PRESET.search(preset)
        if m is None:
            return None
        width, height = int(m.group(1)), int(m.group(2))
    if a.value(node, "swap_dimensions") == "On":
        width, height = height, width
    if _old_layout(a, node):
        return width, height, max(1, a.number(node, "prescale_factor", 1) or 1)
    prescale = a.number(node, "prescale_factor", 1.0, integer=False)
    if prescale is None or prescale <= 0:
        return None
    return int(width * prescale), int(height * prescale), max(1, a.number(node, "batch_size", 1) or 1)


def _latent(a, node, slot, depth):
    if slot != (4 if _old_layout(a, node) else 5):
        return None
    size = _size(a, node)
    if size is None:
        return None
    return empty_sd_latent(a, node, *size)


def _value(a, node, link, depth, sub):
    size = _size(a, node)
    if size is None or link.slot not in (0, 1):
        return _UNKNOWN
    return size[link.slot]


PACK = Pack(
    name="ComfyUI_Comfyroll_CustomNodes",
    widgets={ASPECT: ["width", "height", "aspect_ratio", "swap_dimensions", "upscale_factor", "prescale_factor",
                      "batch_size"]},
    output_types={ASPECT: ["INT", "INT", "FLOAT", "FLOAT", "INT", "LATENT", "STRING"]},
    input_types={ASPECT: {}},
    latents={ASPECT: _latent},
    values={ASPECT: _value},
)
