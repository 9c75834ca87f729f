"""Stable Audio Open 1.0 and Stable Audio 3 (ComfyUI 0.33.0 supported_models.py:584-633: StableAudio, StableAudio3)
and their audio VAEs. Line references are ComfyUI 0.33.0."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, VAE, _r

ORDER = 145  # name rules of a lower ORDER are tried first (specific before general)

# Stable Audio Open 1.0: AudioDiffusionTransformer at ComfyUI's defaults (ldm/audio/dit.py:822-842: embed_dim 1536,
# depth 24, 24 heads, io_channels 64, cond_token_dim 768 = T5-base, global_cond_dim 1536, prepend global
# conditioning), which model_detection.py:145-185 reads back from the file's keys. Built so on the meta device:
P_SA1_DIT = 1_056_828_544
# its VAE: AudioOobleckVAE with its defaults (ldm/audio/autoencoder.py:254-266: channels 128, c_mults 1-2-4-8-16,
# strides 2-4-4-8-8 = 2048 samples a latent, 64 latent channels), sd.py:695-719 (no 12-wide kernel: 44.1 kHz)
P_SA1_VAE = 156_112_514
# stable-audio-open-1.0.safetensors is published at 4,853,313,044 bytes (template audio_stable_audio_example):
# (P_SA1_DIT + P_SA1_VAE) x 4 bytes (fp32) = 4,851,764,232, the rest the seconds_start / seconds_total number
# embedders (supported_models.py:598-601) and the header. No text encoder inside: T5-base loads separately.

FAMILIES = {
    "stable-audio-1.0": Family(DIFFUSION, "Stable Audio Open 1.0", dict(
        hidden_size=1536, depth=24, heads=24, head_dim=64, ffn_dim=6144,  # FeedForward mult 4 (dit.py:225-241)
        in_channels=64, out_channels=64, patch_size=(1, 1), context_dim=768, latent_channels=64,
        temporal_compression=2048)),  # latent_formats.StableAudio1: 64 channels, 2048 samples a latent
    # Stable Audio 3: the same AudioDiffusionTransformer, its widths read from the file's keys only
    # (model_detection.py:145-185; global_cond_shared_embed picks StableAudio3, supported_models.py:615-633); no
    # default in ComfyUI's code gives them, so no width here: its working memory stays unknown without the file.
    # latent_formats.StableAudio3: 256 channels, 4096 samples a latent.
    "stable-audio-3": Family(DIFFUSION, "Stable Audio 3", dict(latent_channels=256, temporal_compression=4096)),
    # sd.py:695-719: AudioOobleckVAE (44.1 kHz, 2048 samples a latent). ACE-Step 1.5's traced Oobleck VAE is another
    # configuration (strides 2-4-4-6-10, 48 kHz), so its decode is not borrowed: untraced, left unknown.
    "vae-stable-audio": Family(VAE, "Stable Audio Open VAE (Oobleck)", dict(latent_channels=64)),
    # sd.py:966-992: SA3AudioVAE (256 latent channels, 4096 samples a latent), untraced
    "vae-stable-audio-3": Family(VAE, "Stable Audio 3 VAE", dict(latent_channels=256)),
}

# memory_usage_factor (supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "stable-audio-3": 7,  # supported_models.py:628
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS)
TEXT_TOKENS = {
    "stable-audio-1.0": 128,  # text_encoders/sa_t5.py:14: T5-base padded to 128 tokens
}

# All-in-one checkpoints known by name: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    "stable-audio-1.0": {"model": (P_SA1_DIT, DIFFUSION, "stable-audio-1.0", "Stable Audio Open 1.0 DiT"),
                         "vae": (P_SA1_VAE, VAE, "vae-stable-audio", "Stable Audio Open VAE (Oobleck)")},
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"stable[_-]?audio[_-]?3", "stable-audio-3", "Stable Audio 3"),
        _r(r"stable[_-]?audio[_-]?open|stable[_-]?audio[_-]?1", "stable-audio-1.0", "Stable Audio Open 1.0",
           P_SA1_DIT, "P_SA1_DIT (computed: ComfyUI 0.33 AudioDiffusionTransformer defaults)"),
    ),
}
