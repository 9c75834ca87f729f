"""HiDream-I1."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r, Detector, Found, all_families

ORDER = 120  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
# From published 16-bit file sizes (params = bytes / 2) or model cards, where no layout was computed:
P_HIDREAM = 17_100_000_000  # hidream_i1_*_bf16.safetensors 34.2 GB / 2 (the model card says 17B)


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "hidream": Family(DIFFUSION, "HiDream-I1 (17B)", dict(
        hidden_size=2560, depth=48, depth_double=16, depth_single=32, heads=20, head_dim=128, in_channels=16,
        out_channels=16, patch_size=(2, 2), context_dim=4096, latent_channels=16, spatial_compression=8)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "hidream": 128,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "hidream": 2.0,
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"hidream(?![_-]?o1)", "hidream", "HiDream-I1 (17B)", P_HIDREAM, f"{_C} P_HIDREAM (34.2 GB bf16 listing / 2)"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _hidream(v) -> Found:
    dd = v.count_blocks("double_stream_blocks.")
    ds = v.count_blocks("single_stream_blocks.")
    hidden = v.dim("x_embedder.proj.weight", 0)
    arch = dict(hidden_size=hidden, depth=dd + ds, depth_double=dd, depth_single=ds, heads=20, head_dim=128,
                in_channels=16, out_channels=16, patch_size=(2, 2), latent_channels=16, spatial_compression=8)
    return Found("hidream", arch, ("key caption_projection.0.linear.weight (HiDream)",))

GGUF_ARCH = {"hidream": "hidream"}  # ComfyUI-GGUF convert.py model type

DETECT = {DIFFUSION: (Detector(keys=(("caption_projection.0.linear.weight",),), read=_hidream, order=818),)}
