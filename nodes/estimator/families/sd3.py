"""Stable Diffusion 3 / 3.5."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, TEXT_ENCODER, VAE, _r, Detector, Found, all_families

ORDER = 140  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_SD35_LARGE = 8_100_000_000  # stabilityai/stable-diffusion-3.5-large model card: 8.1 billion parameters
P_SD35_MEDIUM = 2_500_000_000  # stabilityai/stable-diffusion-3.5-medium model card: 2.5 billion parameters


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "sd3": Family(DIFFUSION, "Stable Diffusion 3 / 3.5", dict(
        hidden_size=1536, depth=24, heads=24, head_dim=64, mlp_ratio=4.0, in_channels=16, out_channels=16,
        patch_size=(2, 2), context_dim=4096, latent_channels=16, spatial_compression=8)),
}

# Families that share another's traced working-memory profile (memory.WORKING_MEMORY_ALIAS)
WORKING_MEMORY_ALIAS = {
    "sd3": "sd3.5-medium",
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "sd3": 77,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "sd3": 1.6,  # SD15:48 SD20:95 SDXL:198 SD3:545
}

# SD3.5 Large's MMDiT (ComfyUI's model_detection: depth 38, hidden 64 x depth): its arch numbers route its working
# memory to the traced "sd3.5-large" entry (ARCH_ROUTES); the family's own numbers are SD3 / 3.5 Medium's
_LARGE = dict(depth=38, hidden_size=2432, heads=38)

# All-in-one checkpoints known from the catalogue: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    # SD3.5 Large with its text encoders (sd3.5_large_fp8_scaled): MMDiT 8.1B (model card) + CLIP-L +
    # CLIP-G (OpenCLIP bigG text, 695M) + T5-XXL + the 16-channel VAE
    "sd3": {"model": (8_100_000_000, DIFFUSION, "sd3", "SD3.5 Large MMDiT", _LARGE),
            "clip": (123_060_480 + 694_659_841 + 4_762_310_656, TEXT_ENCODER, "t5-xxl", "CLIP-L + CLIP-G + T5-XXL"),
            "vae": (83_819_683, VAE, "vae-kl16", "SD3 VAE")},
}

# the other size of the split's diffusion model: SD3 / SD3.5 Medium checkpoints with their encoders
# (sd3_medium_incl_clips*, sd3.5_medium_incl_clips_t5xxlfp8scaled) (resolve.checkpoint_parts)
CHECKPOINT_MODEL_SIZES = {
    "sd3": ((P_SD35_MEDIUM, "SD3.5 Medium MMDiT", {}, "P_SD35_MEDIUM (model card)"),),
}

# One family id, several traced configurations: (family, arch key, value, traced entry) (memory.ARCH_ROUTES)
ARCH_ROUTES = (
    ("sd3", "depth", 38, "sd3.5-large"),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"sd[_-]?3[._]?5.*large|large.*sd3[._]?5", "sd3", "SD 3.5 Large", P_SD35_LARGE, f"{_C} P_SD35_LARGE (model card)"),
        _r(r"sd[_-]?3[._]?5.*medium", "sd3", "SD 3.5 Medium", P_SD35_MEDIUM, f"{_C} P_SD35_MEDIUM (model card)"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _sd3(v) -> Found:
    w = v.shape("x_embedder.proj.weight") or (1536, 16, 2, 2)
    depth = v.count_blocks("joint_blocks.")
    hidden = w[0]
    arch = dict(hidden_size=hidden, depth=depth, heads=hidden // 64, head_dim=64, in_channels=w[1],
                patch_size=tuple(w[2:4]), context_dim=v.dim("context_embedder.weight", 1), out_channels=16,
                latent_channels=16, spatial_compression=8)
    variant = {24: "medium", 38: "3.5-large"}.get(depth)
    return Found("sd3", arch, ("key joint_blocks.0.context_block.attn.qkv.weight (MMDiT: SD3)",), variant)

GGUF_ARCH = {"sd3": "sd3"}  # ComfyUI-GGUF convert.py model type

DETECT = {DIFFUSION: (Detector(keys=(("joint_blocks.0.context_block.attn.qkv.weight",),), read=_sd3, order=54),)}
