"""Hunyuan3D 2.0 / 2.1 shape DiTs and the shape VAE."""
from __future__ import annotations

from ._spec import CLIP_VISION, DIFFUSION, Family, VAE

ORDER = 160  # name rules of a lower ORDER are tried first (specific before general)


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # Hunyuan3D 2.1 shape DiT (ComfyUI's Hunyuan3Dv2_1): latent [B, 64, N] (EmptyLatentHunyuan3Dv2:
    # N = resolution tokens), one token per latent vector; conditioned on DINOv2 image tokens.
    "hunyuan3d-2.1": Family(DIFFUSION, "Hunyuan3D 2.1 shape DiT", dict(
        hidden_size=2048, depth=21, heads=16, head_dim=128, in_channels=64, out_channels=64, patch_size=(1, 1),
        latent_channels=64, context_dim=1024)),
    # Hunyuan3D 2.0 DiT (model_detection.py:545-558; tencent/Hunyuan3D-2 config.yaml): 1024 hidden, 16 double +
    # 32 single blocks, DINOv2-giant context (1536); latent [B, 64, N]
    "hunyuan3d-2.0": Family(DIFFUSION, "Hunyuan3D 2.0 DiT", dict(
        hidden_size=1024, depth=48, depth_double=16, depth_single=32, heads=16, head_dim=64, in_channels=64,
        out_channels=64, patch_size=(1, 1), latent_channels=64, context_dim=1536)),
    "hunyuan3d-2.0-mv": Family(DIFFUSION, "Hunyuan3D 2.0 multiview DiT", dict(
        hidden_size=1024, depth=48, depth_double=16, depth_single=32, heads=16, head_dim=64, in_channels=64,
        out_channels=64, patch_size=(1, 1), latent_channels=64, context_dim=1536)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "hunyuan3d-2.1": 1370,
    "hunyuan3d-2.0": 1370,
    "hunyuan3d-2.0-mv": 5480,
}

# All-in-one checkpoints known from the catalogue: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    # Hunyuan3D 2.1 (hunyuan_3d_v2.1.safetensors): the DiT (3,050,762,768: Hunyuan3Dv2_1 traced, weight_bytes
    # 6,101,525,536), the shape VAE (327,614,977: vae-hunyuan3d traced) and its DINOv2 image encoder
    "hunyuan3d-2.1": {"model": (3_050_762_768, DIFFUSION, "hunyuan3d-2.1", "Hunyuan3D 2.1 DiT"),
                      "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                      # ImageOnlyCheckpointLoader's CLIP_VISION: DINOv2-L (facebook/dinov2-large, 304M params)
                      "clip_vision": (304_368_640, CLIP_VISION, "clip-vision", "DINOv2-L image encoder")},
    # Hunyuan3D 2.0 (hunyuan3d-dit-v2*_fp16): the DiT (Hunyuan3Dv2 traced: 1,113,276,432 params; multiview
    # 1,114,589,200), the shape VAE (327,614,977, vae-hunyuan3d) and DINOv2-giant: the rest of the 2-byte file
    "hunyuan3d-2.0": {"model": (1_113_276_432, DIFFUSION, "hunyuan3d-2.0", "Hunyuan3D 2.0 DiT"),
                      "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                      "clip_vision": (4_928_151_562 // 2 - 1_113_276_432 - 327_614_977, CLIP_VISION, "clip-vision",
                                      "DINOv2-giant image encoder")},
    "hunyuan3d-2.0-mv": {"model": (1_114_589_200, DIFFUSION, "hunyuan3d-2.0-mv", "Hunyuan3D 2.0 multiview DiT"),
                         "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                         "clip_vision": (4_928_474_972 // 2 - 1_114_589_200 - 327_614_977, CLIP_VISION, "clip-vision",
                                         "DINOv2-giant image encoder")},
}

# Audio and 3D VAEs: (label, latent axes whose product is the length, what it counts, batch in one call) (vae_memory.MEDIA_FAMILIES)
MEDIA_VAES = {
    # ShapeVAE decode (VAEDecodeHunyuan3D): see hunyuan3d_decode_bytes
    "vae-hunyuan3d": ("Hunyuan3D shape VAE", (2,), "latent vectors", True),
}
