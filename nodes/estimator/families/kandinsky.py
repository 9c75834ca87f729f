"""Kandinsky 5.0 Lite."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 30  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_KANDINSKY5_LITE = 2_007_706_640  # ComfyUI 0.18.2 Kandinsky5 at full size: traced weight_bytes 4,015,413,280 / 2


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # Kandinsky 5.0 Lite (bench/trace_working_memory.py KANDINSKY5_LITE: model_dim 1792, 32 visual blocks,
    # FFN 7168, axes 16+24+24 -> head_dim 64, 28 heads; HunyuanVideo VAE latent, patch 1x2x2; Qwen2.5-VL 3584 context)
    "kandinsky5-lite": Family(DIFFUSION, "Kandinsky 5.0 Lite (2B)", dict(
        hidden_size=1792, depth=32, heads=28, head_dim=64, ffn_dim=7168, in_channels=16, out_channels=16,
        patch_size=(1, 2, 2), context_dim=3584, latent_channels=16, spatial_compression=8, temporal_compression=4)),
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"kandinsky[_-]?5[_-]?lite|kandinsky5lite", "kandinsky5-lite", "Kandinsky 5.0 Lite (2B)", P_KANDINSKY5_LITE,
           f"{_C} P_KANDINSKY5_LITE (ComfyUI's Kandinsky5 traced at full size)"),
    ),
}
