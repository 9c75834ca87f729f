"""Anima (Cosmos Predict2 2B with an LLM adapter)."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 60  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_ANIMA = 2_091_071_078  # ComfyUI 0.18.2 Anima traced at full size: weight_bytes 4,182,142,156 / 2 (= the published 4.18 GB)


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # Anima (Cosmos Predict2 2B + an LLM adapter, model_detection.py:592-596): Qwen-Image VAE latent, patch 1x2x2
    "anima": Family(DIFFUSION, "Anima (2.1B)", dict(
        hidden_size=2048, depth=28, heads=16, head_dim=128, in_channels=16, out_channels=16, patch_size=(1, 2, 2),
        context_dim=1024, latent_channels=16, spatial_compression=8)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "anima": 512,
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"(?<![a-z])anima[_-](?:preview|base|v?\d)", "anima", "Anima (2.1B)", P_ANIMA,
           f"{_C} P_ANIMA (ComfyUI's Anima traced at full size; the published files are 4.18 GB)"),
    ),
}
