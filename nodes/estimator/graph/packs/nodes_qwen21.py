"""Qwen-Image 2.1's node in newer ComfyUI (comfy_extras/nodes_qwen.py, read at Comfy-Org/ComfyUI's stored copy; not in
0.33.0): TextEncodeQwenImage21 and QwenImage21Cache.

TextEncodeQwenImage21 (execute): each linked reference image ``images.image_N`` (in N order, one image each) is
resized to about ``resolution`` x ``resolution`` px at multiples of 32, keeping its aspect (``resolution`` 0: its
own size rounded to 32; at least 32), shown to the Qwen3-VL text encoder and, with a VAE, VAE-encoded as a
reference latent on both conditionings; positive and negative prompts are encoded each with the images; its LATENT
is an empty [1, 64, h / 16, w / 16] on the first reference's size (else resolution x resolution). Read here as one
VAE-encode stage per reference, the text-encode stage (the images as vision tokens), the reference latents for the
sampler (cond_references) and the empty latent (latents). QwenImage21Cache only sets where the model's prefix K/V
cache goes (families/qwen_image.py: it takes spare memory only), so it passes the model on.
"""
from __future__ import annotations

import math

from ...workload import LatentShape, Stage
from ..base import autogrow_images
from . import Pack, reference_encodes

NODE = "TextEncodeQwenImage21"
CHANNELS, SPATIAL = 64, 16  # latent_formats.QwenImage21: 64 channels at /16


def _sized(width: int, height: int, resolution: int) -> tuple[int, int]:
    """The reference's size as the node resizes it (multiples of 32, at least 32)."""
    if resolution > 0:
        ratio = width / height
        w = round(math.sqrt(resolution * resolution * ratio) / 32) * 32
        h = round(math.sqrt(resolution * resolution / ratio) / 32) * 32
    else:
        w, h = round(width / 32) * 32, round(height / 32) * 32
    return max(32, w), max(32, h)


def _resolution(a, node) -> int:
    value = a.number(node, "resolution", 1024)
    return 1024 if value is None else max(0, value)


def _reference_sizes(a, node) -> list:
    """(width, height) px of each reference, or None where the graph does not fix the image's size."""
    res = _resolution(a, node)
    return [(name, _sized(size.width, size.height, res) if size is not None and size.width and size.height
             else None) for name, size in autogrow_images(a, node)]


def _known_sizes(a, node) -> list[tuple[int, int]]:
    return [wh for _, wh in _reference_sizes(a, node) if wh]


def _references(a, node) -> list[tuple[int, int]]:
    if a.link(node, "vae") is None:
        return []
    return [(h // SPATIAL, w // SPATIAL) for w, h in _known_sizes(a, node)]


def _stages(a, node) -> list[Stage]:
    sizes = _reference_sizes(a, node)
    for name, wh in sizes:
        if wh is None:
            a.stage_note(f"{NODE} {name.split('.')[-1]}: its size is not fixed by the graph; its reference latent "
                         "and vision tokens are not counted")
    known = [wh for _, wh in sizes if wh]
    stages = reference_encodes(a, node, known, CHANNELS, SPATIAL, known)
    if len(stages) > 1:
        a.stage_note(f"VAE-encodes {len(stages) - 1} reference image(s) at about resolution² px, sides at multiples "
                     "of 32 (nodes_qwen.py TextEncodeQwenImage21)")
    return stages


def _latent(a, node, slot, depth):
    """The empty [1, 64, h / 16, w / 16] latent on the first reference's size, else resolution² (slot 2)."""
    if slot != 2:
        return None
    sizes = _reference_sizes(a, node)
    if sizes and sizes[0][1] is None:
        return None  # the first reference's size is not fixed by the graph
    res = _resolution(a, node) or 1024
    w, h = sizes[0][1] if sizes else (res, res)
    return LatentShape(batch=1, channels=CHANNELS, height=h // SPATIAL, width=w // SPATIAL, pixel_height=h,
                       pixel_width=w, spatial_compression=SPATIAL, source_node=node.id, source_type=node.type)


PACK = Pack(
    name="nodes_qwen21",
    internal_encoders={NODE: ()},
    stages={NODE: _stages},
    cond_references={NODE: _references},
    latents={NODE: _latent},
    input_types={NODE: {"clip": "CLIP", "vae": "VAE", "prompt": "STRING", "negative_prompt": "STRING",
                        "resolution": "INT"},
                 "QwenImage21Cache": {"model": "MODEL", "device": "COMBO", "dtype": "COMBO"}},
    output_types={NODE: ["CONDITIONING", "CONDITIONING", "LATENT"], "QwenImage21Cache": ["MODEL"]},
    widgets={NODE: ["prompt", "negative_prompt", "resolution"], "QwenImage21Cache": ["device", "dtype"]},
    handled={"QwenImage21Cache"},
)
