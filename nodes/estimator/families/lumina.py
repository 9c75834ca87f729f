"""Lumina Image 2.0 and the families ComfyUI detects as its architecture (Z-Image, NewBie-Image, NetaYume)."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, TEXT_ENCODER, VAE, _r, Detector, Found, all_families

ORDER = 130  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_Z_IMAGE = 6_150_000_000  # z_image_turbo_bf16.safetensors 12.3 GB / 2 (model card: 6B)
P_LUMINA2 = 2_600_000_000  # Alpha-VLLM/Lumina-Image-2.0 model card: 2.6B parameters


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "lumina2": Family(DIFFUSION, "Lumina Image 2.0 (2.6B)", dict(
        hidden_size=2304, depth=26, heads=24, head_dim=96, in_channels=16, out_channels=16, patch_size=(2, 2),
        context_dim=2304, latent_channels=16, spatial_compression=8)),
    # ComfyUI 0.18.2 families (issue 10); numbers from the configs cited in bench/trace_working_memory.py
    # (Z_IMAGE, HUNYUAN_VIDEO_15) and ComfyUI's own classes.
    "z-image": Family(DIFFUSION, "Z-Image (6B)", dict(
        hidden_size=3840, depth=30, heads=30, head_dim=128, ffn_dim=10240, in_channels=16, out_channels=16,
        patch_size=(2, 2), context_dim=2560, latent_channels=16, spatial_compression=8)),  # ffn: 3840 x 8/3
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "z-image": 256,
    "lumina2": 256,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "lumina2": 1.4,
}

# All-in-one checkpoints known from the catalogue: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    # Lumina 2 all-in-one (NetaYume): Lumina 2 DiT 2.6B + Gemma 2 2B (2.61B) + the Flux VAE
    "lumina2": {"model": (2_600_000_000, DIFFUSION, "lumina2", "Lumina 2 DiT"),
                "clip": (2_614_341_888, TEXT_ENCODER, "gemma", "Gemma 2 2B"),
                "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
}

# One family id, several traced configurations: (family, arch key, value, traced entry) (memory.ARCH_ROUTES)
ARCH_ROUTES = (
    ("lumina2", "hidden_size", 3840, "z-image"),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"z[_-]?image", "z-image", "Z-Image (6B)", P_Z_IMAGE, f"{_C} P_Z_IMAGE (12.3 GB bf16 listing / 2)"),
        # Ming-Image (newer ComfyUI: model_detection.py @0b61ce5 takes it in this branch, dim 3840, and
        # supported_models.py @01f03bb has class MingImage(ZImage)): Z-Image's NextDiT at the same width and heads
        # (its published int8 file, 6,174,015,488 bytes, holds Z-Image's 6.15B); its depth comes from the file
        _r(r"ming[_-]?image", "z-image", "Ming-Image (Z-Image's architecture, 6B)", P_Z_IMAGE,
           f"{_C} P_Z_IMAGE (the same NextDiT; Ming-Image's int8 file holds 6,174,015,488 bytes)"),
        # NewBie-Image: ComfyUI detects it as Lumina 2 (model_detection.py:432-448, dim 2304 with a Jina CLIP pooled
        # projection): the same blocks, more of them; its size from the template that links it
        _r(r"newbie[_-]?image", "lumina2", "NewBie-Image (Lumina 2 architecture)"),
        _r(r"lumina|netayume", "lumina2", "Lumina Image 2.0 (2.6B)", P_LUMINA2, f"{_C} P_LUMINA2 (model card)"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _lumina2(v) -> Found:
    w = v.shape("cap_embedder.1.weight") or (2304, 2304)
    z_image = w[0] == 3840 or v.has("cap_pad_token")
    layers = v.count_blocks("layers.")
    heads = 30 if z_image else 24
    arch = dict(hidden_size=w[0], context_dim=w[1], depth=layers, heads=heads, head_dim=w[0] // heads,
                in_channels=16, out_channels=16, patch_size=(2, 2), latent_channels=16, spatial_compression=8)
    ev = ["key cap_embedder.1.weight (Lumina 2 family)"]
    if z_image:
        ev.append("width 3840 / key cap_pad_token (Z-Image)")
    return Found("lumina2", arch, tuple(ev), "z-image" if z_image else None)

GGUF_ARCH = {"lumina2": "lumina2"}  # ComfyUI-GGUF convert.py model type

DETECT = {DIFFUSION: (Detector(keys=(("cap_embedder.1.weight",),), read=_lumina2, order=576),)}
