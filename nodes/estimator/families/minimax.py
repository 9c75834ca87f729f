"""MiniMax H3 (ComfyUI 0.33.0's MiniMaxH3): a single-stream packed-token DiT that denoises a video latent
(24 channels at /16, patch 1x2x2) and a stereo audio latent (32 channels, 40 latent frames a second) together,
conditioned on Qwen3-VL-32B hidden states (5120 wide); its video VAE (MiniMaxH3VideoVAE: a causal 3-D CNN encoder
and a ViT decoder) and its audio VAE (MiniMaxH3AudioVAE: a DAC encoder and a BigVGAN decoder at 32 kHz). FastVideo's
FastH3 checkpoints (fastvideo_fasth3_*, fasth3_omniref_*) are distilled H3 students: the same model class.

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:390-411: `video_patch_proj.weight` + `audio_patch_proj.weight` select it; the config is
  read from the shapes (hidden from video_patch_proj, depth from blocks.N, heads from qkv_proj / q_norm, FFN from
  mlp.fc1 / 2, text width from condition_proj).
- comfy/supported_models.py:960-986 (class MiniMaxH3): latent_formats.MiniMaxH3AV, memory_usage_factor 0.114,
  bf16 / fp32 inference, text encoder Qwen3-VL-32B (comfy/text_encoders/minimax.py, not chat-templated, unpadded).
- comfy/ldm/minimax/model.py:441-447 (MiniMaxH3Model defaults): hidden 5376, 50 layers, 2 token-refiner layers,
  56 heads of 128, SwiGLU FFN 14336, latents 24 / audio 32, patch (1, 2, 2), text_dim 5120; :318-431 the packed
  sequence: text | keyframe or reference rows | audio (2 x audio_t rows) | video (latent_t x H/32 x W/32 rows).
- comfy/latent_formats.py:621-672: video /16 spatially, pixel frames 17k+5 <-> latent frames 5k+2; the audio
  track's length is round(frames x 5/3) latent frames (40 a second at 24 fps).
- comfy/sd.py:995-1026: the video VAE (MiniMaxH3VideoVAE, fp16 / fp32 working dtypes, it tiles internally:
  256 px tiles, 17-frame clips) with ComfyUI's own memory_used_decode / memory_used_encode; sd.py:1030-1050 the
  audio VAE (fp32 only) with its own memory_used_decode / _encode.

Working memory: the DiT is traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033, data/working_memory.json "minimax-h3":
model_detection.py:390-419, model_base.py:2164-2222, audio + video packed with latent_shapes), 6 points at batch 1
(the model's only batch), fit within 0.82 %; its weight_bytes there are the standard timestep embedder's, not the
pruned file's (unused: the weights come from the file); inside ComfyUI with the file present it is traced live. Its tokens: the video's latent_t x H/32 x W/32 rows, plus one frame's rows per keyframe / reference
latent frame (graph/packs/nodes_minimax_h3.py cond_references), plus the text (TEXT_TOKENS). Not counted: the audio
rows (2 per audio latent frame: 414 for 124 frames, about 1 % of a 1344x768 video's) and the Qwen3-VL vision tokens a
keyframe / reference image adds to the text. Neither VAE is a class any traced VAE family uses (and no trace of them exists), so they are priced
with the estimates their own ComfyUI branch states (VAE_FORMULAS below: sd.py's memory_used_decode /
memory_used_encode, the figure ComfyUI frees memory for before it decodes), said as such.
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, VAE, Family, Found, _r, Detector

ORDER = 121

# --- parameter counts (published sizes; bytes are decimal GB as the notes give them) -----------------------------
# MiniMax H3 pruned, bf16: "minimax_h3_fl2va_pruned_bf16.safetensors - 40.23 GB" (template image_minimax_h3_t2i's
# Model Links note) / 2 bytes a parameter. The int8 convrot exports the templates load (20.97 GB) have their exact
# published sizes in data/template_models.json.
P_MINIMAX_H3 = 40_230_000_000 // 2
# FastH3 OmniRef: the template video_fasth3_ominiref_r2v's note gives "the int8 convrot export used here (22.2 GB)
# and a bf16 export (44.2 GB)". At int8 one byte a quantised weight, so 22.2e9 prices that file at its published
# size; the bf16 export's 44.2 GB / 2 = 22.1e9 agrees within 0.5 % (the int8 file keeps norms / biases / the fp32
# output heads unquantised).
P_FASTH3_OMNIREF = 22_200_000_000
# The video VAE, fp16: "minimax_h3_video_vae_fp16.safetensors - 5.21 GB" (image_minimax_h3_t2i's note) / 2
P_MINIMAX_H3_VIDEO_VAE = 5_210_000_000 // 2
# The audio VAE, fp32: minimax_h3_audio_vae_fp32.safetensors, 605,238,067 bytes (data/template_models.json) / 4
P_MINIMAX_H3_AUDIO_VAE = 605_238_067 // 4

FAMILIES = {
    "minimax-h3": Family(DIFFUSION, "MiniMax H3 (audio-video)", dict(
        hidden_size=5376, depth=50, heads=56, head_dim=128, ffn_dim=14336, in_channels=24, out_channels=24,
        patch_size=(1, 2, 2), context_dim=5120, latent_channels=24, spatial_compression=16,
        audio_latent_channels=32, token_refiner_depth=2)),
    # sd.py:1000-1008: 24 latent channels, /16, upscale_index_formula (4, 16, 16); quantized_ops: a quantized file
    # (the int8 convrot decoder) is built with comfy.ops.mixed_precision_ops and kept at its bytes (sd.py:996-999)
    "vae-minimax-h3": Family(VAE, "MiniMax H3 video VAE", dict(latent_channels=24, spatial_compression=16,
                                                               temporal_compression=4, quantized_ops=True)),
    # sd.py:1032-1038: 32 latent channels x 2 stereo channels, 800 samples a latent frame at 32 kHz
    # vae_dtype_bytes 4: working_dtypes [float32] only (sd.py:1041), so ComfyUI loads and runs it in fp32
    "vae-minimax-h3-audio": Family(VAE, "MiniMax H3 audio VAE", dict(latent_channels=32, sample_rate=32000,
                                                                     samples_per_latent=800, vae_dtype_bytes=4)),
}

MEMORY_USAGE_FACTOR = {"minimax-h3": 0.114}  # supported_models.py:973

# Qwen3-VL hidden states of the raw prompt, unpadded (text_encoders/minimax.py:125-190): a 256-token prompt
# assumed, as for the other LLM-encoded families without padding (Z-Image, Lumina 2, ERNIE-Image)
TEXT_TOKENS = {"minimax-h3": 256}

NAME_RULES = {
    DIFFUSION: (
        _r(r"fast[_-]?h3[_-]?omni[_-]?ref", "minimax-h3", "FastH3 OmniRef (MiniMax H3)", P_FASTH3_OMNIREF,
           "P_FASTH3_OMNIREF (the template's note: the int8 convrot export, 22.2 GB)"),
        _r(r"fast[_-]?h3", "minimax-h3", "FastH3 (MiniMax H3)", P_MINIMAX_H3,
           "P_MINIMAX_H3 (the pruned bf16 file, 40.23 GB / 2)"),
        _r(r"minimax[_-]?h3", "minimax-h3", "MiniMax H3 (audio-video)", P_MINIMAX_H3,
           "P_MINIMAX_H3 (the pruned bf16 file, 40.23 GB / 2)"),
    ),
    VAE: (
        _r(r"minimax[_-]?h3.*audio", "vae-minimax-h3-audio", "MiniMax H3 audio VAE", P_MINIMAX_H3_AUDIO_VAE,
           "P_MINIMAX_H3_AUDIO_VAE (the fp32 file, 605,238,067 bytes / 4)"),
        _r(r"minimax[_-]?h3", "vae-minimax-h3", "MiniMax H3 video VAE", P_MINIMAX_H3_VIDEO_VAE,
           "P_MINIMAX_H3_VIDEO_VAE (the fp16 file, 5.21 GB / 2)"),
    ),
}


def _detect(v) -> Found | None:
    """model_detection.py:390-411: video_patch_proj + audio_patch_proj select MiniMaxH3; the config from the shapes."""
    video = v.shape("video_patch_proj.weight")
    if video is None or len(video) != 2 or not v.has("audio_patch_proj.weight"):
        return None
    arch = dict(FAMILIES["minimax-h3"].arch)
    hidden = int(video[0])
    arch["hidden_size"] = hidden
    arch["depth"] = v.count_blocks("blocks.") or arch["depth"]
    head_dim = v.dim("blocks.0.attn.q_norm.weight", 0, arch["head_dim"])
    qkv = v.dim("blocks.0.attn.qkv_proj.weight", 0, 3 * arch["heads"] * head_dim)
    arch.update(head_dim=head_dim, heads=max(1, qkv // (3 * head_dim)))
    fc1 = v.dim("blocks.0.mlp.fc1.weight", 0)
    if fc1:
        arch["ffn_dim"] = fc1 // 2  # SwiGLU: fc1 holds gate and up
    out = v.dim("final_layer.video_out.weight", 0)
    if out:
        arch["in_channels"] = arch["out_channels"] = arch["latent_channels"] = out // 4  # patch 1x2x2
    arch["context_dim"] = v.dim("condition_proj.weight", 1, arch["context_dim"])
    return Found("minimax-h3", arch, ("keys video_patch_proj.weight + audio_patch_proj.weight (MiniMax H3, "
                                      "model_detection.py:390)",))


def _read_video_vae(v) -> Found | None:
    """sd.py:995: decoder.transformer_blocks.0.scale1 + encoder.down.5.block.0.conv1.weight build MiniMaxH3VideoVAE."""
    return Found("vae-minimax-h3", dict(FAMILIES["vae-minimax-h3"].arch),
                 ("keys decoder.transformer_blocks.0.scale1 + encoder.down.5.block.0.conv1.weight "
                  "(MiniMax H3 video VAE, sd.py:995)",))


def _read_audio_vae(v) -> Found | None:
    """sd.py:1030: pre_block.attn.zero_k_bias builds MiniMaxH3AudioVAE."""
    return Found("vae-minimax-h3-audio", dict(FAMILIES["vae-minimax-h3-audio"].arch),
                 ("key pre_block.attn.zero_k_bias (MiniMax H3 audio VAE, sd.py:1030)",))


DETECT = {
    DIFFUSION: (_detect,),
    VAE: (Detector((("decoder.transformer_blocks.0.scale1",
                      "encoder.down.5.block.0.conv1.weight"),),
                   _read_video_vae),
          Detector((("pre_block.attn.zero_k_bias",),), _read_audio_vae)),
}


# --- The VAEs' working memory: ComfyUI 0.33's own estimates (comfy/sd.py) -------------------------------------
# MiniMaxH3VideoVAE defaults (ldm/minimax/vae.py:327-355): clip_length 17, token_drop 3, time_down (1,2,2,1,1,1):
# vae_ratio_t 4, tokens_chunk_size ceil(17 / 4) = 5, token_overlap (-3) % 5 = 2; sd.py:1014 chunk_frames
# = (5 + 2) x 4 = 28 decoded frames at a time.
VIDEO_VAE_CLIP = 17
VIDEO_VAE_CHUNK_FRAMES = (math.ceil(17 / 4) + (-3) % math.ceil(17 / 4)) * 4
AUDIO_VAE_SAMPLES_PER_LATENT = 800  # sd.py:1036 upscale_ratio
AUDIO_VAE_DTYPE_BYTES = FAMILIES["vae-minimax-h3-audio"].arch["vae_dtype_bytes"]


def video_pixel_frames(latent_frames: int) -> int:
    """sd.py:1006 upscale_ratio[0]: latent frames 5k+2 -> pixel frames 17k+5 (one latent frame: one image)."""
    return max(1, (latent_frames - 2) // 5 * 17 + 5)


def video_latent_frames(pixel_frames: int) -> int:
    """nodes_minimax_h3.py:40-41 (video_latent_t): 17k+5 pixel frames -> 5k+2 latent frames."""
    return 2 if pixel_frames <= 5 else ((pixel_frames - 5) // 17) * 5 + 2


def _video_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None):
    """sd.py:1014-1029: decode (9.5 x min(frames, 28 + 2) x H x W + fixed) x dtype x 1.03, fixed 110 MB up to 22
    frames, 270 MB beyond; encode (e x min(frames, 17) x H x W + fixed) x dtype x 1.03, e = 7 and fixed 110 MB for
    one image, 9.5 and 1.3 GB for a clip. H x W the pixels, frames the pixel frames. Per call: ComfyUI decodes as
    many batch items at once as fit beside it (sd.py decode: batch_number = free memory / this). Not for a tiled
    node (None: not modelled)."""
    if latent.media or tiled:
        return None
    h = latent.pixel_height or latent.height * 16
    w = latent.pixel_width or latent.width * 16
    if op == "decode":
        frames = video_pixel_frames(latent.frames or 1)
        fixed = 110_000_000 if frames <= 22 else 270_000_000
        resident = min(frames, VIDEO_VAE_CHUNK_FRAMES + 2)
        value = (9.5 * resident * h * w + fixed) * dtype_bytes * 1.03
        how = (f"{w}×{h}×{frames} frames, decoded {VIDEO_VAE_CHUNK_FRAMES}-frame chunks at a time (+2): ComfyUI "
               f"0.33's own estimate for the MiniMax H3 video VAE (sd.py:1023-1026, 1029: memory_used_decode), "
               "not traced")
    else:
        frames = latent.pixel_frames or 1
        one = frames == 1
        resident = min(frames, VIDEO_VAE_CLIP)
        value = ((7 if one else 9.5) * resident * h * w + (110_000_000 if one else 1_300_000_000)) * dtype_bytes * 1.03
        how = (f"{w}×{h}×{frames} frame(s), one {VIDEO_VAE_CLIP}-frame clip resident: ComfyUI 0.33's own estimate "
               f"for the MiniMax H3 video VAE (sd.py:1016-1021, 1028: memory_used_encode), not traced")
    return math.ceil(value), f"{how}; {dtype_bytes}-byte working dtype"


def _audio_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None):
    """sd.py:1041-1050 (fp32 only): decode max(42 MB, 220 x samples + 20 MB) x 4 x 1.03, encode (900 x samples
    + 105 MB) x 4 x 1.03; samples = latent frames x 800. Not for a tiled node (None: not modelled)."""
    if latent.media != "audio" or tiled:
        return None
    samples = int(latent.width) * AUDIO_VAE_SAMPLES_PER_LATENT
    per = (max(42_000_000, 220 * samples + 20_000_000) if op == "decode" else 900 * samples + 105_000_000)
    value = per * AUDIO_VAE_DTYPE_BYTES * 1.03 * max(1, latent.batch)
    line = "1046-1047, 1050: memory_used_decode" if op == "decode" else "1043-1044, 1049: memory_used_encode"
    return math.ceil(value), (f"{latent.width} latent frames ({samples} samples at 32 kHz, stereo) × batch "
                              f"{latent.batch}: ComfyUI 0.33's own estimate for the MiniMax H3 audio VAE "
                              f"(sd.py:{line}, fp32), not traced")


VAE_FORMULAS = {"vae-minimax-h3": _video_vae_bytes, "vae-minimax-h3-audio": _audio_vae_bytes}


def _minimax_h3_block_params(arch: dict) -> int:
    """DiTBlock (ldm/minimax/model.py:274-291): qkv_proj h x 3·inner + out_proj inner x h (Attention, :158-167)
    and the SwiGLU MLP fc1 h x 2·ffn + fc2 ffn x h (:199-203): 4·h·inner + 3·h·ffn. Its AdalnProj (t_dim x 18h,
    :209-217) is left out: the curve-form files (the pruned H3 the templates load) make t_dim a small basis
    (model.py:455-458, model_detection.py:403-408), and 50 x 385.4 M + the two refiner blocks is their 20.1 B
    parameters; a full-form file's block (t_dim 2688) is larger than this."""
    h = int(arch.get("hidden_size", 5376) or 5376)
    inner = int(arch.get("heads", 56) or 56) * int(arch.get("head_dim", 128) or 128)
    ffn = int(arch.get("ffn_dim", 14336) or 14336)
    return 4 * h * inner + 3 * h * ffn


PREFETCH_BLOCK_PARAMS = {"minimax-h3": _minimax_h3_block_params}  # runtime.PREFETCH_BLOCK_PARAMS: 0.33's model prefetch
