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
  this estimator has traced is that class, so its encode / decode working memory is ComfyUI 0.33's own estimate for
  it (sd.py:594-595: memory_used_decode = vae.py:1581-1604 comfy_memory_used_decode, memory_used_encode; the memory
  ComfyUI frees before the call; VAE_FORMULAS below), said as "not traced"; inside ComfyUI with the file present it
  is traced live.

Sampling working memory: traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033, data/working_memory.json "seedvr2-3b" /
"seedvr2-7b": model_detection.py:690-727, model_base.py:949-958, the [B, 17, T, h, w] condition of
nodes_seedvr.py:383-412), 6 points each, fits within 0.19 %.
"""
from __future__ import annotations

import math

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


# --- The SeedVR2 VAE's working memory: ComfyUI 0.33's own estimate (comfy/sd.py:589-604), not traced -------------
# Decode: sd.py:594 -> ldm/seedvr/vae.py:1581-1604 comfy_memory_used_decode: 160 bytes an output pixel, whatever
# the working dtype (:1582, its note: fp32 channels and int64 sort indices dominate), output frames (T - 1) x 4 + 1,
# 8x8 pixels a latent pixel, on the [B, 16, T, h, w] latent. Encode: sd.py:595: max(F, 5) x H x W x 64 x dtype on
# the [1, 3, F, H, W] pixels (an image batch becomes the F frames of one video: sd.py:1363-1366; crop_input False,
# :604). The VAE tiles itself (handles_tiling, :597): VAEDecodeTiled reserves the decode estimate at one tile
# (sd.py:1328: tile_size / 8 latent pixels a side, temporal_size / 4 latent frames), VAEEncodeTiled reserves the
# encode estimate for the whole input (sd.py:1427). Not in ComfyUI's tile reservation: the full-size fp32 output
# and weight buffers the tiler accumulates on the GPU (vae.py:176-177, result + count).
SEEDVR2_VAE_DECODE_BYTES_PER_PIXEL = 160  # vae.py:1582
SEEDVR2_VAE_ENCODE_ELEMENTS = 64  # sd.py:595


def _seedvr2_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None, options=None):
    """sd.py:594 / vae.py:1581-1604 decode: ((T - 1) x 4 + 1) x 8h x 8w x 160 bytes (per batch item; at one tile for
    VAEDecodeTiled, sd.py:1328); sd.py:595 encode: max(F, 5) x H x W x 64 x dtype (the whole input, tiled or not)."""
    if latent.media:
        return None
    if op == "decode":
        batch = max(1, int(latent.batch))
        t, h, w = int(latent.frames or 1), int(latent.height), int(latent.width)
        where = "sd.py:594, 1229 -> ldm/seedvr/vae.py:1581-1604: memory_used_decode"
        if tiled:
            size = int(tiled.get("tile_size", 512) or 512) // 8
            t = min(t, max(2, int(tiled.get("temporal_size", 64) or 64) // 4))
            h, w = min(h, size), min(w, size)
            where = "sd.py:594, 1328 -> ldm/seedvr/vae.py:1581-1604: memory_used_decode at one tile"
        frames = max(1, (t - 1) * 4 + 1)
        value = frames * h * 8 * w * 8 * SEEDVR2_VAE_DECODE_BYTES_PER_PIXEL * batch
        return math.ceil(value), (f"{w * 8}×{h * 8}×{frames} output frame(s){' (one tile)' if tiled else ''} × batch "
                                  f"{batch}, 160 bytes a pixel: ComfyUI 0.33's own estimate for the SeedVR2 VAE "
                                  f"(VideoAutoencoderKLWrapper, {where}), not traced")
    h = int(latent.pixel_height or latent.height * 8)
    w = int(latent.pixel_width or latent.width * 8)
    frames = int(latent.pixel_frames or max(1, int(latent.batch)))
    where = "sd.py:595, " + ("1427: memory_used_encode, for the whole input although the node tiles" if tiled
                             else "1371: memory_used_encode")
    if tiled and (options or {}).get("encode_per_tile"):  # a node that tiles the encode itself (the SeedVR2 pack)
        size = int(tiled.get("tile_size", 1024) or 1024)
        h, w = min(h, size), min(w, size)
        where = "sd.py:595 memory_used_encode at one tile: the node encodes tile by tile"
    value = max(frames, 5) * h * w * SEEDVR2_VAE_ENCODE_ELEMENTS * dtype_bytes
    return math.ceil(value), (f"{w}×{h}×{frames} frame(s) (max(F, 5)): ComfyUI 0.33's own estimate for the SeedVR2 "
                              f"VAE (VideoAutoencoderKLWrapper, {where}), not traced; {dtype_bytes}-byte working dtype")


VAE_FORMULAS = {"vae-seedvr2": _seedvr2_vae_bytes}
