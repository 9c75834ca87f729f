"""pamparamm/ComfyUI-ppm (src/nodes_ppm/latent_misc.py at 200f460): EmptyLatentImageAR, an empty SD latent sized by a
resolution and an aspect ratio instead of a width and a height.

_calc_dimensions: the height is sqrt(resolution² / ratio) rounded to the nearer multiple of ``step``, the width is
height x ratio rounded to the multiple of ``step`` whose area is nearer resolution², both clamped to 16..
MAX_RESOLUTION; generate() makes zeros [batch_size, 4, height // 8, width // 8] (as EmptyLatentImage). The other ppm
nodes in the examples (CLIPNegPip, AttentionCouplePPM, LatentToMaskBB) patch the model or make masks: the socket
reading handles them."""
from __future__ import annotations

import math

from ..base import MAX_RESOLUTION
from . import Pack, empty_sd_latent


def dimensions(resolution: int, ratio: float, step: int) -> tuple[int, int]:
    """(width, height) as latent_misc.py _calc_dimensions computes them."""
    target = resolution * resolution
    h = math.sqrt(target / ratio)
    h_s = int((h // step) * step)
    height = min([h_s, h_s + step], key=lambda x: abs(h - x))
    w = height * ratio
    w_s = int((w // step) * step)
    width = min([w_s, w_s + step], key=lambda x: abs(target - x * height))
    return min(max(width, 16), MAX_RESOLUTION), min(max(height, 16), MAX_RESOLUTION)


def _empty_ar(a, node, slot, depth):
    resolution = a.number(node, "resolution", 512)
    ratio = a.number(node, "ratio", 1.0, integer=False)
    step = a.number(node, "step", 64)
    batch = a.number(node, "batch_size", 1)
    if not resolution or not ratio or not step or not batch or not 0.15 <= ratio <= 1 / 0.15 or not 8 <= step <= 128:
        return None
    width, height = dimensions(min(int(resolution), MAX_RESOLUTION), float(ratio), int(step))
    return empty_sd_latent(a, node, width, height, int(batch))


PACK = Pack(
    name="ComfyUI-ppm",
    latents={"EmptyLatentImageAR": _empty_ar},
    widgets={"EmptyLatentImageAR": ["resolution", "ratio", "step", "batch_size"]},
    output_types={"EmptyLatentImageAR": ["LATENT"]},
    input_types={"EmptyLatentImageAR": {}},
)
