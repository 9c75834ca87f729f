"""MiniMax Music 3 (ComfyUI 0.33.0's MiniMaxMusic3): a 1-D audio DiT on a 128-channel latent (512 samples a latent
frame at 44.1 kHz) conditioned channel-wise on the acoustic sequence its text encoder generates, and its DAV decoder
(a DAC-style decoder; it cannot encode).

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:45-50: cond_layer_logits + latent_conditioners.0.weight +
  diffusion_transformer.transformer.layers.0.self_attn.to_qkv.weight select it (a fixed architecture, no config).
- comfy/supported_models.py:2229-2248: latent_formats.MiniMaxMusic3 (128 channels, 1-D), memory_usage_factor 2.0.
- comfy/ldm/minimax_music/dit.py: ContinuousTransformer (:129-147): project_in 2304 -> 2048, 36 blocks of 2048 wide,
  heads of 64 (32 heads), GLU FFN 8192, one timestep token prepended (:142); the condition is concatenated to the
  latent's channels (:163), not attended to; MiniMaxMusic3DiT.forward (:186-213): a latent longer than
  latent_length(200) = 689 frames runs in windows of 689 frames (hop latent_length(100) = 344), one after another.
- comfy/sd.py:522-537: the DAV (fp32 only, no encode) with ComfyUI's own memory_used_decode
  (latent frames x 512 x 1400 + 800 MB) x dtype (sd.py:533); decode_tiled bounds the shape by the tile
  (sd.py:1326-1329).

Working memory: the DiT traced with ComfyUI 0.33.0's own model code at full size (data/working_memory.json
"minimax-music3", bench/trace_working_memory.py _arches_033: model_detection.py:45-50, model_base.py:2423-2433,
conditioning_scale from nodes_minimax_music.py:40), 6 points from 30 s to 120 s, fit within 1.04 %: tokens = one
window's latent frames (arch window_tokens), "text tokens" = the conditioning's acoustic frames N, which the
template's latent fixes (TEXT_TOKENS_OF_LATENT: the inverse of latent_length), since the trace ran the latent as
long as the conditioning. Below 8 s (N < 200, one window) the peak moves into the window's transformer and this
fit is low: traced 0.046 / 0.093 GiB at N = 100 / 200 against the fit's 0.040 / 0.065 (all small beside the DAV).
The DAV is priced with its own ComfyUI estimate (VAE_FORMULAS).
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, VAE, Family, Found, _r, Detector

ORDER = 122

AUDIO_FRAMES_PER_SECOND, MAX_AUDIO_FRAMES = 25, 9000  # ldm/minimax_music/ar.py:21-22
MAX_CONDITION_FRAMES = 200  # dit.py:12


def latent_length(audio_frames: int) -> int:
    """dit.py:16-17: latent frames for `audio_frames` acoustic frames (25 a second)."""
    return max(1, int(audio_frames * 44100 / 24000 * 960 / 512))


def conditioning_frames(latent) -> tuple[int, str]:
    """The acoustic frames N of the conditioning for a latent of latent_length(N) frames (the template wires the
    text encoder's length into the empty latent): the smallest N whose latent_length reaches the latent's."""
    frames = max(1, int(latent.width))
    n = max(1, math.ceil(frames / (44100 / 24000 * 960 / 512)))
    while n > 1 and latent_length(n - 1) >= frames:
        n -= 1
    while latent_length(n) < frames:
        n += 1
    return min(n, MAX_AUDIO_FRAMES), f"the conditioning's acoustic frames for {frames} latent frames"


TEXT_TOKENS_OF_LATENT = {"minimax-music3": conditioning_frames}


# dit.py:171-184 at full size: latent_conditioners Conv1d(4096, 2048, 3) + bias, cond_layer_logits 8 + scale 1;
# DiffusionTransformer: preprocess_conv 2304², postprocess_conv 128², Fourier features 128, timestep MLP
# 256·2048 + 2048 + 2048² + 2048; project_in 2304·2048, project_out 2048·128, rotary inv_freq 16; 36 blocks of
# 2 LayerNorms (gamma + beta), to_qkv 2048·6144, to_out 2048², GLU 2048·16384 + 16384, out 8192·2048 + 2048.
# × 2 bytes = 4,914,147,634 against the published fp16 file's 4,917,737,554 bytes (data/template_models.json).
P_MINIMAX_MUSIC3 = (4096 * 2048 * 3 + 2048 + 8 + 1 + 2304 * 2304 + 128 * 128 + 128 + 256 * 2048 + 2048 + 2048 * 2048
                    + 2048 + 2304 * 2048 + 2048 * 128 + 16
                    + 36 * (4 * 2048 + 2048 * 6144 + 2048 * 2048 + 2048 * 16384 + 16384 + 8192 * 2048 + 2048))
# dav.py at full size: dec_in_proj 64 -> 1024; weight-normed conv 1024 -> 1536 (k 7); four decoder blocks
# 1536 -> 768 -> 384 -> 192 -> 96 (strides 8, 8, 4, 2; each a snake, a transposed conv and three residual units);
# snake + conv 96 -> 1. × 4 bytes = 216,682,888 against the published fp32 file's 216,740,659 bytes.
_DAV_BLOCKS = [(1536 // 2 ** i, 1536 // 2 ** (i + 1), s) for i, s in enumerate((8, 8, 4, 2))]
P_MINIMAX_MUSIC3_DAV = (64 * 1024 + 1024 + 1536 * 1024 * 7 + 2 * 1536
                        + sum(ci + ci * co * 2 * s + ci + co + 3 * (4 * co + co * co * 8 + 2 * co)
                              for ci, co, s in _DAV_BLOCKS)
                        + 96 + 96 * 7 + 2)

WINDOW_TOKENS = latent_length(MAX_CONDITION_FRAMES)  # 689

FAMILIES = {
    "minimax-music3": Family(DIFFUSION, "MiniMax Music 3 (2.5B)", dict(
        hidden_size=2048, depth=36, heads=32, head_dim=64, ffn_dim=8192, in_channels=128, out_channels=128,
        patch_size=(1, 1), latent_channels=128, window_tokens=WINDOW_TOKENS)),
    # vae_dtype_bytes 4: working_dtypes [float32] only (sd.py:531)
    "vae-minimax-music3-dav": Family(VAE, "MiniMax Music 3 DAV decoder", dict(
        latent_channels=128, samples_per_latent=512, sample_rate=44100, vae_dtype_bytes=4)),
}

MEMORY_USAGE_FACTOR = {"minimax-music3": 2.0}  # supported_models.py:2235

# The conditioning joins the latent's channels (dit.py:163), not the attention: the one timestep token the
# transformer prepends (dit.py:142) is all it attends over beside the latent
TEXT_TOKENS = {"minimax-music3": 1}

NAME_RULES = {
    DIFFUSION: (
        _r(r"minimax[_-]?music[_-]?3.*dit|minimax[_-]?music[_-]?3(?!.*(text|dav|vae))", "minimax-music3",
           "MiniMax Music 3 (2.5B)", P_MINIMAX_MUSIC3, "P_MINIMAX_MUSIC3 (computed from dit.py's layout)"),
    ),
    VAE: (
        _r(r"minimax[_-]?music[_-]?3", "vae-minimax-music3-dav", "MiniMax Music 3 DAV decoder", P_MINIMAX_MUSIC3_DAV,
           "P_MINIMAX_MUSIC3_DAV (computed from dav.py's layout)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:45-50."""
    return Found("minimax-music3", dict(FAMILIES["minimax-music3"].arch),
                 ("keys cond_layer_logits + latent_conditioners.0.weight + diffusion_transformer... "
                  "(MiniMax Music 3, model_detection.py:45)",))


def _detect_dav(v) -> Found | None:
    """sd.py:522: dec_in_proj.weight + decoder.model.0.weight_g build MiniMaxMusic3DAV."""
    if v.has("dec_in_proj.weight") and (v.has("decoder.model.0.weight_g")
                                        or v.has("decoder.model.0.parametrizations.weight.original0")):
        return Found("vae-minimax-music3-dav", dict(FAMILIES["vae-minimax-music3-dav"].arch),
                     ("keys dec_in_proj.weight + decoder.model.0.weight_g (MiniMax Music 3 DAV, sd.py:522)",))
    return None


DETECT = {
    DIFFUSION: (Detector((("cond_layer_logits",
                            "latent_conditioners.0.weight",
                            "diffusion_transformer.transformer.layers.0.self_attn.to_qkv.weight"),),
                         _read),),
    VAE: (_detect_dav,),
}


def _dav_bytes(op: str, latent, dtype_bytes: int, tiled=None):
    """sd.py:533: memory_used_decode = (latent frames x 512 x 1400 + 800 MB) x dtype (fp32: sd.py:531); decode_tiled
    takes it at the tile's length (sd.py:1328, VAEDecodeAudioTiled's tile_size in latent frames). It cannot encode."""
    if op != "decode" or latent.media != "audio":
        return None
    frames = int(latent.width)
    tile = int(tiled.get("tile_size") or 0) if tiled else 0
    if tile:
        frames = min(frames, tile)
    dtype = FAMILIES["vae-minimax-music3-dav"].arch["vae_dtype_bytes"]
    value = (frames * 512 * 1400 + 800_000_000) * dtype * max(1, latent.batch)
    what = f"tiles of {frames}" if tile and frames < int(latent.width) else f"{frames}"
    return math.ceil(value), (f"{what} latent frames ({frames * 512} samples at 44.1 kHz) × batch {latent.batch}: "
                              "ComfyUI 0.33's own estimate for the MiniMax Music 3 DAV (sd.py:533, memory_used_decode, "
                              "fp32), not traced")


VAE_FORMULAS = {"vae-minimax-music3-dav": _dav_bytes}
