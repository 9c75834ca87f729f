"""Qwen-Image (and FireRed-Image-Edit, its architecture)."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, LORA, _r

ORDER = 90  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_QWEN_IMAGE = 20_450_000_000  # 40.9 GB BF16 listing / 2


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "qwen-image": Family(DIFFUSION, "Qwen-Image (20B)", dict(
        hidden_size=3072, depth=60, heads=24, head_dim=128, ffn_dim=12288, in_channels=16, out_channels=16,
        patch_size=(2, 2), context_dim=3584, latent_channels=16, spatial_compression=8)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "qwen-image": 256,
}

# Traced activations x this = the published peak (memory.ACTIVATION_CALIBRATION; group keys)
CALIBRATION = {
    "qwen-image": 1.4,
}

# memory_usage_factor (supported_models.py, COMFYUI-NOTES §2.2) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "qwen-image": 1.8,
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        # FireRed-Image-Edit: the template loads it with the Qwen-Image edit nodes, and its published 38.05 GiB
        # (40.86 GB) is 2 bytes x Qwen-Image's 20.4B (data/template_models.json)
        _r(r"fire[_-]?red[_-]?image[_-]?edit", "qwen-image", "FireRed-Image-Edit (Qwen-Image-Edit architecture, 20B)",
           P_QWEN_IMAGE, f"{_C} P_QWEN_IMAGE (its published size is 2 bytes x Qwen-Image's count)"),
        _r(r"qwen[_-]?image", "qwen-image", "Qwen-Image (20B)", P_QWEN_IMAGE, f"{_C} P_QWEN_IMAGE (40.9 GB bf16 listing / 2)"),
    ),
    LORA: (
        _r(r"qwen", "qwen-image", "Qwen-Image (20B)"),
    ),
}
