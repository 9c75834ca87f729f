"""LongCat-Image and LongCat-Image-Edit."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 50  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_LONGCAT_IMAGE = 6_270_688_864  # ComfyUI 0.18.2 LongCatImage traced at full size: weight_bytes 12,541,377,728 / 2


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # LongCat-Image (Flux branch of model_detection.py:196-286: 3072 hidden, 10 double + 20 single blocks,
    # Qwen2.5-VL 3584 context, no guidance): text-to-image and edit (a reference latent next to the image)
    "longcat-image": Family(DIFFUSION, "LongCat-Image (6.3B)", dict(
        hidden_size=3072, depth=30, depth_double=10, depth_single=20, heads=24, head_dim=128, ffn_dim=12288,
        in_channels=16, out_channels=16, patch_size=(2, 2), context_dim=3584, latent_channels=16,
        spatial_compression=8)),
    "longcat-image-edit": Family(DIFFUSION, "LongCat-Image-Edit (6.3B)", dict(
        hidden_size=3072, depth=30, depth_double=10, depth_single=20, heads=24, head_dim=128, ffn_dim=12288,
        in_channels=16, out_channels=16, patch_size=(2, 2), context_dim=3584, latent_channels=16,
        spatial_compression=8)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "longcat-image": 512,
    "longcat-image-edit": 512,
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"longcat[_-]?image[_-]?edit", "longcat-image-edit", "LongCat-Image-Edit (6.3B)", P_LONGCAT_IMAGE,
           f"{_C} P_LONGCAT_IMAGE (ComfyUI's LongCatImage traced at full size)"),
        _r(r"longcat[_-]?image", "longcat-image", "LongCat-Image (6.3B)", P_LONGCAT_IMAGE,
           f"{_C} P_LONGCAT_IMAGE (ComfyUI's LongCatImage traced at full size)"),
    ),
}
