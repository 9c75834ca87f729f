"""ACE-Step v1 and 1.5 (music) and their audio VAEs."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, TEXT_ENCODER, VAE, _r

ORDER = 40  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_ACE_STEP_15 = 2_436_202_246  # ComfyUI 0.18.2 ACEStep15 traced at full size: weight_bytes 4,872,404,492 / 2


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # ACE-Step v1 3.5B (music; ComfyUI's ACEStep, config from model_detection.py:330-350 of 0.18.2):
    # latent [B, 8, 16, L] (EmptyAceStepLatentAudio: L = seconds * 44100 / 512 / 8), patch 16 x 1 -> L tokens.
    "ace-step-v1": Family(DIFFUSION, "ACE-Step v1 (3.5B)", dict(
        hidden_size=2560, depth=24, heads=20, head_dim=128, ffn_dim=6400, in_channels=8, out_channels=8,
        patch_size=(16, 1), latent_channels=8, context_dim=768)),  # model_detection.py:330-350 (mlp_ratio 2.5)
    # ACE-Step 1.5 (ComfyUI's ACEStep15, ace_step15.py:1012-1039 defaults): latent [B, 64, L] at 25 a second,
    # patch 2 -> L/2 tokens of 2048; Qwen3 0.6B caption + lyric context (1024)
    "ace-step-1.5": Family(DIFFUSION, "ACE-Step 1.5 (2.4B)", dict(
        hidden_size=2048, depth=24, heads=16, head_dim=128, in_channels=64, out_channels=64, patch_size=(1, 2),
        latent_channels=64, context_dim=1024)),
    "vae-ace15": Family(VAE, "ACE-Step 1.5 audio VAE", dict(latent_channels=64)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "ace-step-v1": 320,
    "ace-step-1.5": 256,
}

# All-in-one checkpoints known from the catalogue: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    # ACE-Step v1 3.5B (ace_step_v1_3.5b.safetensors, 7,698,728,878 B published): the transformer (3,322,438,608
    # params: ComfyUI 0.18.2's ACEStep traced, weight_bytes 6,644,877,216), the music DCAE + vocoder
    # (259,817,564: vae-ace traced) and the rest, the UMT5-base text encoder (the published size / 2 - both)
    "ace-step-v1": {"model": (3_322_438_608, DIFFUSION, "ace-step-v1", "ACE-Step v1 transformer"),
                    "clip": (7_698_728_878 // 2 - 3_322_438_608 - 259_817_564, TEXT_ENCODER, "t5-base",
                             "UMT5-base (ACE-Step)"),
                    "vae": (259_817_564, VAE, "vae-ace", "ACE-Step music DCAE + vocoder")},
    # ACE-Step 1.5 all-in-one (ace_step_1.5_turbo_aio): ACEStep15 (2,436,202,246 params traced), Qwen3 0.6B
    # (595,776,512) + the 1.7B song LM (1,854,243,840; ACEStep15.clip_target), the Oobleck VAE (168,695,426)
    "ace-step-1.5": {"model": (2_436_202_246, DIFFUSION, "ace-step-1.5", "ACE-Step 1.5 DiT"),
                     "clip": (595_776_512 + 1_854_243_840, TEXT_ENCODER, "qwen3", "Qwen3 0.6B + 1.7B LM (ACE-Step 1.5)"),
                     "vae": (168_695_426, VAE, "vae-ace15", "ACE-Step 1.5 audio VAE")},
}

# Audio and 3D VAEs: (label, latent axes whose product is the length, what it counts, batch in one call) (vae_memory.MEDIA_FAMILIES)
MEDIA_VAES = {
    # music_dcae_pipeline.py decode: one batch item at a time
    "vae-ace": ("ACE-Step music DCAE + vocoder", (3,), "latent columns (~10.8 a second)", False),
    # 0.18.2 sd.py:560-587: AudioOobleckVAE (48 kHz, 1920 samples a latent), latent [B, 64, L]
    "vae-ace15": ("ACE-Step 1.5 audio VAE", (2,), "latent frames (25 a second)", True),
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"ace[_-]?step[_-]?v?1[._]5", "ace-step-1.5", "ACE-Step 1.5 (2.4B)", P_ACE_STEP_15,
           f"{_C} P_ACE_STEP_15 (ComfyUI's ACEStep15 traced at full size)"),
    ),
}
