"""FLUX.2 dev and klein, and the Flux.2 VAE."""
from __future__ import annotations

import re

from ._spec import DIFFUSION, Family, VAE, VaeFamily, _r, Detector, Found, all_families

ORDER = 100  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_FLUX2 = 32_000_000_000  # black-forest-labs/FLUX.2-dev model card: 32 billion parameters
P_KLEIN_9B = 9_000_000_000  # FLUX.2 klein's larger release, named for its 9B (black-forest-labs/FLUX.2-klein-9B)


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "flux2": Family(DIFFUSION, "Flux.2 dev (32B)", dict(
        hidden_size=6144, depth=56, depth_double=8, depth_single=48, heads=48, head_dim=128, mlp_ratio=3.0,
        ffn_dim=18432, in_channels=128, out_channels=128, patch_size=(1, 1), context_dim=15360,
        latent_channels=128, spatial_compression=16)),
    # FLUX.2 klein 4B (bench/trace_working_memory.py FLUX2_KLEIN_4B: hidden 3072, 5 double + 20 single blocks,
    # Qwen3 4B context 7680); the 9B's own config is not traced: priced with Flux.2 dev's table (an upper bound)
    "flux2-klein": Family(DIFFUSION, "FLUX.2 klein", dict(
        hidden_size=3072, depth=25, depth_double=5, depth_single=20, heads=24, head_dim=128, mlp_ratio=3.0,
        ffn_dim=9216, in_channels=128, out_channels=128, patch_size=(1, 1), context_dim=7680, latent_channels=128,
        spatial_compression=16)),
    "flux2-klein-9b": Family(DIFFUSION, "FLUX.2 klein 9B (Flux.2 dev's layout assumed: an upper bound)", dict(
        hidden_size=6144, depth=56, depth_double=8, depth_single=48, heads=48, head_dim=128, mlp_ratio=3.0,
        ffn_dim=18432, in_channels=128, out_channels=128, patch_size=(1, 1), context_dim=12288, latent_channels=128,
        spatial_compression=16)),
    "vae-flux2": Family(VAE, "Flux.2 VAE (32 ch, 128 latent)", dict(latent_channels=128, spatial_compression=16,
                                                                   base_channels=128, channel_mult=(1, 2, 4, 4))),
}

# Families that share another's traced working-memory profile (memory.WORKING_MEMORY_ALIAS)
WORKING_MEMORY_ALIAS = {
    # ComfyUI 0.18.2 families (issue 10); LTX-2 traced with its audio stream (at 25 fps, one audio token a frame)
    "flux2": "flux2-dev",
    "flux2-klein": "flux2-dev",
    "flux2-klein-9b": "flux2-dev",
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "flux2": 512,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "flux2": 3.1 * 4 * 2.36,  # Flux2:766
}

# VAEs whose decoder is another traced family's (vae_memory.TRACED_AS)
VAE_TRACED_AS = {
    "vae-flux2": ("vae-kl16", "Flux.2's VAE is Flux.1's KL decoder (ch 128, mult 1-2-4-4, sd.py:537-560) with a "
                              "32-channel latent: the same activations per pixel"),
}

# Catalogue entries that stand for the whole family (name_infer)
FAMILY_ENTRY = {
    "vae-flux2": "flux2-vae.safetensors",
}

# One family id, several traced configurations: (family, arch key, value, traced entry) (memory.ARCH_ROUTES)
ARCH_ROUTES = (
    ("flux2", "hidden_size", 3072, "flux2-klein-4b"),
    ("flux2-klein", "hidden_size", 3072, "flux2-klein-4b"),
)

# VAEs priced with the traced VAE constants (vae_memory.FAMILIES)
# a VAE file name -> (latent channels, spatial /, temporal /) for a node whose latent depends on its VAE (comfy/sd.py
# VAE.__init__; a guess by name, said as such): registry.VAE_NAME_GEOMETRY, tried in ORDER
VAE_NAME_GEOMETRY = (
    (re.compile(r"flux2"), (32, 16, None)),  # the VAE's own 32 channels (VaeFamily: 128 as packed)
)
VAES = (
    # 0.18.2 sd.py:537-560: the default KL branch (ch 128, ch_mult 1-2-4-4) with a 32-channel latent
    # and a batch-norm latent layer: downscale ×2 (16) and 4× the channels (2×2 patches packed)
    VaeFamily("vae-flux2", "Flux.2 VAE (32 ch, packed to 128)", 128, 16, None, "AutoencoderKL (batch-norm latent)",
              kl=True),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"flux[._-]?2[._-]?klein.*9b|flux[._-]?2[._-]?klein[._-]?9", "flux2-klein-9b", "FLUX.2 klein 9B"),
        # klein with no size in the name: 4B or 9B, priced as the 9B, the larger (said: an upper bound)
        _r(r"flux[._-]?2[._-]?klein(?!.*\d(?:[._]\d+)?b(?![a-z]))", "flux2-klein-9b", "FLUX.2 klein", P_KLEIN_9B,
           "P_KLEIN_9B (the 9B release's name)", largest=True),
        _r(r"flux[._-]?2[._-]?klein", "flux2-klein", "FLUX.2 klein"),
        _r(r"flux[._-]?2", "flux2", "Flux.2 dev (32B)", P_FLUX2, f"{_C} P_FLUX2 (model card)"),
    ),
    VAE: (
        _r(r"flux[._-]?2", "vae-flux2", "Flux.2 VAE"),
    ),
}


def _flux2_vae(v) -> Found:
    """sd.py:632 + :674: a KL decoder with a batch-norm latent (bn.running_mean) is the Flux.2 VAE (32 channels
    packed 2x2)."""
    s = v.shape("decoder.conv_in.weight")
    c = s[1] if s and len(s) > 1 else None
    arch = dict(all_families()["vae-flux2"].arch)
    arch.update(latent_channels=4 * (c or 32), base_channels=v.dim("encoder.conv_in.weight", 0, 128))
    return Found("vae-flux2", arch, ("keys decoder.conv_in.weight + bn.running_mean (Flux.2 VAE)",))


# the KL branch (sd.py:632), after the SeedVR2 VAE (sd.py:589), which has a decoder.conv_in.weight too
DETECT = {VAE: (Detector(keys=(("decoder.conv_in.weight", "bn.running_mean"),), read=_flux2_vae, order=632,
                         banned=("decoder.up_blocks.2.upsamplers.0.upscale_conv.weight",)),)}
