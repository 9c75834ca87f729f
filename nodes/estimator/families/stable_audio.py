"""Stable Audio Open 1.0 and Stable Audio 3 (ComfyUI 0.33.0 supported_models.py:584-633: StableAudio, StableAudio3)
and their audio VAEs. Line references are ComfyUI 0.33.0."""
from __future__ import annotations

import math
from functools import partial

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

# Stable Audio 3 Medium (stable_audio_3_medium[_base].safetensors, templates audio_stable_audio_3_medium[_base]).
# ComfyUI reads its DiT from the file's keys (model_detection.py:144-185); the file is not here, so its configuration
# is the one Stability AI publishes for "sa3-m": Stability-AI/stable-audio-3 optimized/mlx/models/defs/dit_mlx_medium.py
# (IO_CHANNELS 256, EMBED_DIM 1536, DEPTH 24, NUM_HEADS 24, HEAD_DIM 64, COND_TOKEN_DIM 768, GLOBAL_COND_DIM 768,
# LOCAL_ADD_COND_DIM 257, NUM_MEMORY_TOKENS 64, FF_INNER 6144, differential attention with RMS qk-norm, expo timestep
# features) and optimized/tensorRT/scripts/lora/branch_map_medium_lora.json (the ONNX export's per-layer shapes,
# layers 0-23). Fed to ComfyUI 0.33's own AudioDiffusionTransformer (ldm/audio/dit.py:822) as the unet_config
# model_detection.py:145-185 would read from those keys (embed_dim 1536, global_cond_dim 768, project_cond_tokens,
# num_memory_tokens 64, attn_kwargs qk_norm rms + differential, norm_type rms_norm, num_heads 1536 // 64,
# timestep_features_type expo, io_channels 256, local_add_cond_dim 257, global_cond_shared_embed + adaLN, depth 24)
# on the meta device, it builds exactly the published shapes (to_qkv 7680x1536, cross to_q 3072, to_kv 4608,
# ff 12288 / 6144, to_local_embed 257) and counts:
P_SA3M_DIT = 1_453_170_176
# Its VAE: SA3AudioVAE (ldm/audio/vae_sa3.py:480-510) in sd.py:968-973's configuration (channels 256, 12 transformer
# blocks, 8 sinusoidal, sliding window: Stability's "SAME-L", which the model card pairs with Medium), encoder +
# decoder + bottleneck built on the meta device:
P_SA3_SAME_L = 852_127_073
# (the other configuration, sd.py:974-979, channels 128 / 6 blocks, "SAME-S", counts 108,244,529.)
# Published checkpoint: 9,223,442,268 bytes (template_models.json, both templates). (P_SA3M_DIT + P_SA3_SAME_L) x 4
# bytes (fp32) = 9,221,188,996: the rest, 2.25 MB, the seconds_total number embedder, the padding embedding
# (supported_models.py:630-633) and the header. So the file is fp32 and holds SAME-L (with SAME-S it would be 6.25 GB),
# and no text encoder (T5Gemma loads separately, CLIPLoader type stable_audio).

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
    # Stable Audio 3 Medium: the published sa3-m configuration above. FeedForward GLU inner 6144 (dit.py FeedForward
    # mult 4, ff.0.proj 12288 = 2 x 6144); context: T5Gemma's 768-wide tokens projected to 1536 (to_cond_embed).
    # Not in the formula: the 64 memory tokens prepended to the sequence (dit.py:776-778) and the second (differential)
    # q/k of each attention; the formula is labelled uncalibrated.
    "stable-audio-3-medium": Family(DIFFUSION, "Stable Audio 3 Medium", dict(
        hidden_size=1536, depth=24, heads=24, head_dim=64, ffn_dim=6144, in_channels=256, out_channels=256,
        patch_size=(1, 1), context_dim=768, latent_channels=256, temporal_compression=4096)),
    # sd.py:695-721: AudioOobleckVAE (44.1 kHz, 2048 samples a latent). ACE-Step 1.5's traced Oobleck VAE is another
    # configuration (strides 2-4-4-6-10, 48 kHz), so its decode is not borrowed: untraced, priced with ComfyUI 0.33's
    # own estimate for the branch (VAE_FORMULAS below).
    "vae-stable-audio": Family(VAE, "Stable Audio Open VAE (Oobleck)", dict(latent_channels=64)),
    # sd.py:966-992: SA3AudioVAE (256 latent channels, 4096 samples a latent), untraced
    "vae-stable-audio-3": Family(VAE, "Stable Audio 3 VAE", dict(latent_channels=256)),
    # sd.py:968-973: the SA3AudioVAE configuration with 12 transformer blocks (SAME-L), the one inside Stable Audio 3
    # Medium's checkpoint (its published size, above); untraced, priced with that branch's own estimate (VAE_FORMULAS)
    "vae-stable-audio-3-l": Family(VAE, "Stable Audio 3 VAE (SAME-L)", dict(latent_channels=256,
                                                                           temporal_compression=4096)),
}

# memory_usage_factor (supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "stable-audio-3": 7,  # supported_models.py:628
    "stable-audio-3-medium": 7,  # supported_models.py:628
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS)
TEXT_TOKENS = {
    "stable-audio-1.0": 128,  # text_encoders/sa_t5.py:14: T5-base padded to 128 tokens
    # model_base.py:893-899: the T5Gemma tokens padded with the file's padding embedding to max_text_tokens 256, then
    # the seconds_total token appended: 257 (the padding embedding is in the published file: supported_models.py:631)
    "stable-audio-3-medium": 257,
}

# All-in-one checkpoints known by name: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    "stable-audio-1.0": {"model": (P_SA1_DIT, DIFFUSION, "stable-audio-1.0", "Stable Audio Open 1.0 DiT"),
                         "vae": (P_SA1_VAE, VAE, "vae-stable-audio", "Stable Audio Open VAE (Oobleck)")},
    # both parts fp32 in the published file (above): the split by parameters is the split by bytes
    "stable-audio-3-medium": {"model": (P_SA3M_DIT, DIFFUSION, "stable-audio-3-medium", "Stable Audio 3 Medium DiT"),
                              "vae": (P_SA3_SAME_L, VAE, "vae-stable-audio-3-l", "Stable Audio 3 VAE (SAME-L)")},
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        # stable_audio_3_medium.safetensors / stable_audio_3_medium_base.safetensors: the RF base and the ARC
        # post-trained model share the architecture (Stability's LoRA guide trains on the base and applies to ARC;
        # both files are published at the same 9,223,442,268 bytes)
        _r(r"stable[_-]?audio[_-]?3[_-]?medium", "stable-audio-3-medium", "Stable Audio 3 Medium", P_SA3M_DIT,
           "P_SA3M_DIT (computed: ComfyUI 0.33 AudioDiffusionTransformer at Stability's published sa3-m config)"),
        _r(r"stable[_-]?audio[_-]?3", "stable-audio-3", "Stable Audio 3"),
        _r(r"stable[_-]?audio[_-]?open|stable[_-]?audio[_-]?1", "stable-audio-1.0", "Stable Audio Open 1.0",
           P_SA1_DIT, "P_SA1_DIT (computed: ComfyUI 0.33 AudioDiffusionTransformer defaults)"),
    ),
}


# --- Stable Audio Open's VAE: ComfyUI 0.33's own estimate (comfy/sd.py:695-721), not traced ------------------------
# The Oobleck branch states memory_used_decode = 1000 x L x 2048 x dtype on the [B, 64, L] latent (sd.py:713) and
# memory_used_encode = 1000 x samples x dtype on the [B, 2, samples] waveform (sd.py:712); working dtypes fp16 /
# bf16 / fp32 (sd.py:720). VAEDecodeAudioTiled (nodes_audio.py:137-156) reserves the decode at one tile of
# tile_size latent frames (sd.py:1328, _tile_bounded_shape :1322-1323). Not for Stable Audio 3's SA3AudioVAE
# (sd.py:966-992): its two configurations state different estimates (:972-973, :978-979), picked by a key of the
# file, which a file name does not tell; it stays unknown.
OOBLECK_DECODE_ELEMENTS = 1000 * 2048  # sd.py:713
OOBLECK_ENCODE_ELEMENTS = 1000  # sd.py:712, per input sample
OOBLECK_SAMPLES_PER_LATENT = 2048  # sd.py:698-699 (upscale / downscale ratio of the 44.1 kHz configuration)


def _audio_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None, *, decode_elements: int, encode_elements: int,
                     samples_per_latent: int, decode_where: str, decode_where_tiled: str, encode_where: str, vae: str):
    """An audio VAE's own ComfyUI estimate on the [B, C, L] latent: decode decode_elements x L x dtype (at
    min(L, tile_size) for the tiled node: decode_tiled reserves memory_used_decode of the tile-bounded shape,
    sd.py:1326-1328, 1322-1323); encode encode_elements x samples x dtype, samples = L x samples_per_latent (tiled
    encode: not modelled, None). Per batch item, x batch (the lambdas read no batch; ComfyUI runs as many items in
    one call as fit)."""
    if latent.media != "audio":
        return None
    batch = max(1, int(latent.batch))
    length = int(latent.width)
    if op == "decode":
        tile = int(tiled.get("tile_size") or 0) if tiled else 0
        frames = min(length, tile) if tile else length
        value = decode_elements * frames * dtype_bytes * batch
        where = decode_where_tiled if tile else decode_where
        what = f"{frames} latent frames{' (one tile)' if tile else ''}"
    else:
        if tiled:
            return None
        samples = length * samples_per_latent
        value = encode_elements * samples * dtype_bytes * batch
        where, what = encode_where, f"{samples} samples ({length} latent frames × {samples_per_latent})"
    return math.ceil(value), (f"{what} × batch {batch}: ComfyUI 0.33's own estimate for the {vae}, {where}), "
                              f"not traced; {dtype_bytes}-byte working dtype")


# sd.py:713 decode 1000 x L x 2048 x dtype (sd.py:1229; tiled: sd.py:1328); sd.py:712 encode 1000 x samples x dtype
_oobleck_bytes = partial(_audio_vae_bytes, decode_elements=OOBLECK_DECODE_ELEMENTS,
                         encode_elements=OOBLECK_ENCODE_ELEMENTS, samples_per_latent=OOBLECK_SAMPLES_PER_LATENT,
                         decode_where="sd.py:713, 1229: memory_used_decode",
                         decode_where_tiled="sd.py:713, 1328: memory_used_decode at one tile",
                         encode_where="sd.py:712, 1371: memory_used_encode",
                         vae="Stable Audio Open VAE (AudioOobleckVAE")


# --- Stable Audio 3's SAME-L VAE: ComfyUI 0.33's own estimate for its branch (sd.py:968-973), not traced ------------
# memory_used_decode = 1500 x L x 4096 x dtype on the [B, 256, L] latent (sd.py:973), memory_used_encode = 1500 x
# samples x dtype on the [B, 2, samples] waveform (sd.py:972); working dtypes bf16 / fp16 / fp32 (sd.py:990).
SAME_L_DECODE_ELEMENTS = 1500 * 4096  # sd.py:973
SAME_L_ENCODE_ELEMENTS = 1500  # sd.py:972, per input sample
SAME_SAMPLES_PER_LATENT = 4096  # sd.py:984-985 (upscale / downscale ratio)


# sd.py:973 decode 1500 x L x 4096 x dtype; sd.py:972 encode 1500 x samples x dtype
_same_l_bytes = partial(_audio_vae_bytes, decode_elements=SAME_L_DECODE_ELEMENTS,
                        encode_elements=SAME_L_ENCODE_ELEMENTS, samples_per_latent=SAME_SAMPLES_PER_LATENT,
                        decode_where="sd.py:973: memory_used_decode",
                        decode_where_tiled="sd.py:973, 1328: memory_used_decode at one tile",
                        encode_where="sd.py:972: memory_used_encode",
                        vae="Stable Audio 3 VAE (SA3AudioVAE, SAME-L configuration")


VAE_FORMULAS = {"vae-stable-audio": _oobleck_bytes, "vae-stable-audio-3-l": _same_l_bytes}
