"""SeedVR2 (ByteDance; ComfyUI 0.33.0's SeedVR2): a one-step video / image restoration and upscaling DiT (NaDiT,
3B and 7B) on its own causal video VAE (16 channels, /8 spatial, /4 temporal). There is no text encoder: the
positive / negative text embeddings are buffers inside the model file (58 and 64 tokens of 5120). The image to
upscale is resized first (e.g. ResizeImageMaskNode x4), VAE-encoded, and that latent is both the conditioning
(SeedVR2Conditioning) and the sampler's latent: the latent size comes from the input image size times the
upscale factor.

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:690-728: `blocks.31.mlp.all.proj_in_gate.weight` selects the 3B (vid_dim 2560, 20 heads,
  32 layers, SwiGLU), `blocks.35.mlp.all.proj_in_gate.weight` or a 3072-row `blocks.35.mlp.vid.proj_out.weight`
  the 7B (vid_dim 3072, 24 heads, 36 layers).
- comfy/supported_models.py:1759-1790 (SeedVR2): latent_formats.SeedVR2; no memory_usage_factor of its own, so
  supported_models_base.BASE's 2.0 (supported_models_base.py:49); bf16 / fp16 / fp32.
- comfy/ldm/seedvr/model.py:1119-1160 (NaDiT: head_dim 128, expand_ratio 4, patch (1, 2, 2), vid_in 33 channels =
  16 latent + 17 condition, txt_in 5120; positive / negative conditioning buffers of 58 / 64 tokens),
  comfy/ldm/seedvr/constants.py (SEEDVR2_LATENT_CHANNELS 16; VAE /8 spatial, /4 temporal).
- comfy/sd.py:589-604: the SeedVR2 VAE branch (key `decoder.up_blocks.2.upsamplers.0.upscale_conv.weight`):
  comfy/ldm/seedvr/vae.py VideoAutoencoderKLWrapper, 16 latent channels, downscale (4n+1 -> n, 8, 8). No VAE family
  this estimator has traced is that class, so its encode / decode working memory stays unknown here (sd.py's
  memory_used_decode is ComfyUI's reservation, not a measurement); inside ComfyUI with the file present it is
  traced live.

Sampling working memory: not traced; the first-principles DiT formula on the 2x2-patched latent tokens (SeedVR2
attends in windows, which the formula's fused-attention term does not change), labelled "uncalibrated".
"""
from __future__ import annotations

from ._spec import DIFFUSION, VAE, Family, Found, VaeFamily, _r

ORDER = 137  # "seedvr2_*" shares no pattern with another family's

# The published Comfy-Org/SeedVR2 vae/seedvr2_ema_vae_fp16.safetensors (501,324,186 bytes in
# data/template_models.json) / 2 bytes a parameter
P_SEEDVR2_VAE = 501_324_186 // 2

_NADIT = dict(head_dim=128, in_channels=33, out_channels=16, patch_size=(1, 2, 2), context_dim=5120,
              latent_channels=16, spatial_compression=8, temporal_compression=4)

FAMILIES = {
    "seedvr2-3b": Family(DIFFUSION, "SeedVR2 3B", dict(_NADIT, hidden_size=2560, depth=32, heads=20, ffn_dim=10240)),
    "seedvr2-7b": Family(DIFFUSION, "SeedVR2 7B", dict(_NADIT, hidden_size=3072, depth=36, heads=24, ffn_dim=12288)),
    "vae-seedvr2": Family(VAE, "SeedVR2 video VAE (16 ch, /8, /4 frames)", dict(
        latent_channels=16, spatial_compression=8, temporal_compression=4)),
}

# supported_models_base.py:49 (BASE.memory_usage_factor; SeedVR2 sets none)
MEMORY_USAGE_FACTOR = {"seedvr2-3b": 2.0, "seedvr2-7b": 2.0}

# model.py:1159-1160: the negative conditioning buffer is the longer, 64 tokens
TEXT_TOKENS = {"seedvr2-3b": 64, "seedvr2-7b": 64}

VAES = (
    # sd.py:589-604: VideoAutoencoderKLWrapper, 16 latent channels, /8 spatial, 4n+1 -> n+1 frames
    VaeFamily("vae-seedvr2", "SeedVR2 video VAE (16 ch)", 16, 8, 4, "VideoAutoencoderKLWrapper (causal 3D KL)"),
)

NAME_RULES = {
    DIFFUSION: (
        # params: the name's size (the model cards: 3B / 7B); the published int8 convrot files (3.22 / 7.76 GiB)
        # are priced at their own size (int8 kept quantized)
        _r(r"seed[_-]?vr2?.*7b", "seedvr2-7b", "SeedVR2 7B", None, "the name's size token (model card: 7B)", True),
        _r(r"seed[_-]?vr2?.*3b", "seedvr2-3b", "SeedVR2 3B", None, "the name's size token (model card: 3B)", True),
    ),
    VAE: (
        _r(r"seed[_-]?vr", "vae-seedvr2", "SeedVR2 video VAE", P_SEEDVR2_VAE,
           "catalogue P_SEEDVR2_VAE (the published fp16 file / 2)"),
    ),
}


def _detect(v) -> Found | None:
    """model_detection.py:690-728 (the config is fixed per size; the keys say which)."""
    if v.has("blocks.31.mlp.all.proj_in_gate.weight") and not v.has("blocks.35.mlp.all.proj_in_gate.weight"):
        return Found("seedvr2-3b", dict(FAMILIES["seedvr2-3b"].arch),
                     ("key blocks.31.mlp.all.proj_in_gate.weight (SeedVR2 3B, model_detection.py:717)",))
    if v.has("blocks.35.mlp.all.proj_in_gate.weight") or v.dim("blocks.35.mlp.vid.proj_out.weight", 0) == 3072:
        return Found("seedvr2-7b", dict(FAMILIES["seedvr2-7b"].arch),
                     ("keys blocks.35.mlp.* (SeedVR2 7B, model_detection.py:690-704)",))
    return None


def is_seedvr2_vae(v) -> bool:
    """sd.py:589: the SeedVR2 VAE's key (its decoder also has a 16-channel conv_in like the KL VAEs)."""
    return v.has("decoder.up_blocks.2.upsamplers.0.upscale_conv.weight")


def _detect_vae(v) -> Found | None:
    if not is_seedvr2_vae(v):
        return None
    return Found("vae-seedvr2", dict(FAMILIES["vae-seedvr2"].arch),
                 ("key decoder.up_blocks.2.upsamplers.0.upscale_conv.weight (SeedVR2 VAE, sd.py:589)",))


DETECT = {DIFFUSION: (_detect,), VAE: (_detect_vae,)}
