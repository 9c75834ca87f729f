"""Ming-Image's node in newer ComfyUI (comfy_extras/nodes_ming.py, read at Comfy-Org/ComfyUI's stored copy; not in
0.33.0): TextEncodeMingImageEdit.

execute: the linked reference images ``images.image_N`` (in N order) are shown to the text encoder; with a VAE, each
is resized (bilinear) to the first image's size and VAE-encoded, and the latents go on the conditioning as
reference_latents, which the model appends to its latent sequence as clean frames (one more latent's tokens each).
Read here as one VAE-encode stage per image at the first image's size, the text-encode stage with the images as
vision tokens, and the reference latents for the sampler (cond_references). The VAE is the Ming-Image VAE (the Wan
2.1 branch, /8: families/wan.py).
"""
from __future__ import annotations

from ...workload import Stage
from ..base import autogrow_images
from . import Pack, reference_encodes

NODE = "TextEncodeMingImageEdit"
CHANNELS, SPATIAL = 16, 8  # the Ming-Image VAE: the Wan 2.1 branch of sd.py (16 channels, /8)


def _canvas(a, node):
    """The first image's (width, height): every reference is encoded at it; None when the graph does not fix it."""
    images = autogrow_images(a, node)
    if not images:
        return None, 0
    first = images[0][1]
    if first is None or not first.width or not first.height:
        a.stage_note(f"{NODE}: the first reference image's size is not fixed by the graph; its reference latents are "
                     "not counted")
        return None, len(images)
    return (first.width, first.height), len(images)


def _references(a, node) -> list[tuple[int, int]]:
    if a.link(node, "vae") is None:
        return []
    canvas, count = _canvas(a, node)
    return [(canvas[1] // SPATIAL, canvas[0] // SPATIAL)] * count if canvas else []


def _stages(a, node) -> list[Stage]:
    canvas, count = _canvas(a, node)
    sizes = [canvas] * count if canvas else []
    if sizes and a.link(node, "vae") is not None and a.refs(a.link(node, "vae"), "VAE"):
        a.stage_note(f"VAE-encodes {count} reference image(s) at the first one's {canvas[0]}×{canvas[1]} "
                     "(nodes_ming.py)")
    return reference_encodes(a, node, sizes, CHANNELS, SPATIAL, sizes)


PACK = Pack(
    name="nodes_ming",
    internal_encoders={NODE: ()},
    stages={NODE: _stages},
    cond_references={NODE: _references},
    input_types={NODE: {"clip": "CLIP", "vae": "VAE", "prompt": "STRING"}},
    output_types={NODE: ["CONDITIONING"]},
    widgets={NODE: ["prompt"]},
)
