"""ComfyUI 0.33's Boogu-Image node (comfy_extras/nodes_boogu.py): TextEncodeBooguEdit. Line references are
ComfyUI 0.33.0.

For each reference image it (1) scales a copy to 384 x 384 px of area for the Qwen3-VL vision tower (:62-67, the
positive prompt only), (2) scales another to 1024 x 1024 px of area, each side snapped to 16 px, and VAE-encodes it
(:69-75), then encodes the positive prompt with the vision images and the negative without (:78-79), and puts the
reference latents on both conditionings (:81-83), which the Boogu model patch-embeds next to the image tokens.
Read here as: one VAE-encode stage per reference, then the text-encode stage (the vision images counted as image
tokens), and the reference latents for the sampler (cond_references)."""
from __future__ import annotations

import math

from ...workload import Stage
from ..base import autogrow_images
from . import Pack, reference_encodes

FLUX_VAE = (16, 8)  # Boogu's Flux VAE (supported_models.py:1868 Boogu(Omnigen2): latent_formats.Flux): 16 ch, /8


def _area_resize(width: int, height: int, total: int, snap: int | None = None) -> tuple[int, int]:
    scale = math.sqrt(total / (width * height))
    if snap:
        return round(width * scale / snap) * snap, round(height * scale / snap) * snap
    return round(width * scale), round(height * scale)


def _geometry(a, node) -> tuple[int, int]:
    geometry, _name = a.vae_geometry(a.link(node, "vae"))
    return (geometry[0] or FLUX_VAE[0], geometry[1] or FLUX_VAE[1]) if geometry else FLUX_VAE


def _reference_sizes(a, node) -> list[tuple[int, int]]:
    """(width, height) px of each reference the node VAE-encodes (:69-75); none without a VAE."""
    if a.link(node, "vae") is None:
        return []
    out = []
    for name, size in autogrow_images(a, node):
        if size is None or not size.width or not size.height:
            a.stage_note(f"TextEncodeBooguEdit {name.split('.')[-1]}: its size is not fixed by the graph; its "
                         "reference latent is not counted")
            continue
        out.append(_area_resize(size.width, size.height, 1024 * 1024, 16))
    return out


def _references(a, node) -> list[tuple[int, int]]:
    _channels, spatial = _geometry(a, node)
    return [(h // spatial, w // spatial) for w, h in _reference_sizes(a, node)]


def _stages(a, node) -> list[Stage]:
    channels, spatial = _geometry(a, node)
    sizes = _reference_sizes(a, node)
    vl = tuple(_area_resize(s.width, s.height, 384 * 384) for _, s in autogrow_images(a, node)
               if s is not None and s.width and s.height)
    stages = reference_encodes(a, node, sizes, channels, spatial, vl)
    if len(stages) > 1:
        a.stage_note(f"VAE-encodes {len(stages) - 1} reference image(s) at 1024×1024 px of area "
                     "(nodes_boogu.py:69-75); the vision tower reads them at 384×384 px of area (:62-67)")
    return stages


PACK = Pack(
    name="nodes_boogu",
    internal_encoders={"TextEncodeBooguEdit": ()},
    stages={"TextEncodeBooguEdit": _stages},
    cond_references={"TextEncodeBooguEdit": _references},
)
