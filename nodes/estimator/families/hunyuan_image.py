"""HunyuanImage 2.1: its VAE's latent geometry by name (no diffusion-model rules yet)."""
from __future__ import annotations

import re

ORDER = 1000  # name rules of a lower ORDER are tried first (specific before general)

# a VAE file name -> (latent channels, spatial /, temporal /) for a node whose latent depends on its VAE (comfy/sd.py
# VAE.__init__; a guess by name, said as such): registry.VAE_NAME_GEOMETRY, tried in ORDER
VAE_NAME_GEOMETRY = (
    (re.compile(r"hunyuan.?image"), (64, 32, None)),
)
