"""Qwen-Image (and FireRed-Image-Edit, its architecture)."""
from __future__ import annotations

import re

from ._spec import DIFFUSION, Family, LORA, _r, Detector, Found, all_families

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

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
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


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _qwen_image(v) -> Found:
    w = v.shape("img_in.weight") or (3072, 64)
    layers = v.count_blocks("transformer_blocks.")
    arch = dict(hidden_size=w[0], in_channels=w[1] // 4, depth=layers, heads=max(1, w[0] // 128), head_dim=128,
                context_dim=v.dim("txt_in.weight", 1), ffn_dim=v.dim("transformer_blocks.0.img_mlp.net.0.proj.weight", 0),
                out_channels=16, patch_size=(2, 2), latent_channels=16, spatial_compression=8)
    variant = None
    if v.has("__index_timestep_zero__"):
        variant = "edit-2511"
    elif v.has("time_text_embed.addition_t_embedding.weight"):
        variant = "layered"
    return Found("qwen-image", arch, ("keys txt_norm.weight + img_in.weight (Qwen-Image)",), variant)

def _not_mage_flow(v) -> Found | None:
    """Mage-Flow has Qwen-Image's keys; ComfyUI tells it by its widths first (model_detection.py:944, 0.33.0):
    families/mage_flow.py's detector takes it."""
    if v.dim("txt_norm.weight", 0) == 2560 and v.dim("proj_out.weight", 0) == 128:
        return None
    return _qwen_image(v)


GGUF_ARCH = {"qwen_image": "qwen-image"}  # ComfyUI-GGUF convert.py model type

DETECT = {DIFFUSION: (Detector(keys=(("txt_norm.weight", "img_in.weight"),), read=_not_mage_flow, order=930),)}


# a VAE file name -> (latent channels, spatial /, temporal /) for a node whose latent depends on its VAE (comfy/sd.py
# VAE.__init__; a guess by name, said as such): registry.VAE_NAME_GEOMETRY, tried in ORDER
VAE_NAME_GEOMETRY = (
    (re.compile(r"qwen.?image"), (16, 8, 4)),  # the Wan 2.1 VAE
)
