"""LTX-Video, LTX-2, LTX-2.3 and LTX-2.5 (audio-video) and their video / audio VAEs."""
from __future__ import annotations

import math
import re

from ._spec import DIFFUSION, Family, TEXT_ENCODER, VAE, LiveVae, VaeFamily, _r, Detector, Found, all_families

ORDER = 80  # name rules of a lower ORDER are tried first (specific before general)

# LTX-2.5 22B (ComfyUI 0.33 calls it "LTX 2.4" in its code: ldm/lightricks/duration_head.py:1,
# vae/na_diffusion_decoder.py:1, nodes_lt.py:1130): the LTXAV class (supported_models.py:945-955,
# model_detection.py:419-429, the layout from the file's metadata config) with LTX-2.3's widths and two config
# keys 0.33 added: ff_bias False (no bias on the 48 video feed-forwards, ldm/lightricks/model.py:314-322, :726,
# av_model.py:418) and use_keyframes_abs_pos_embedding (one [1, 4096] marker, model.py:728, :788-792,
# model_detection.py:428). ComfyUI 0.33's LTXAVModel built so on the meta device: 21,004,025,600 params
# (LTX-2.3's 21,005,004,544 - 983,040 biases + 4,096); all its linears at 1 byte = 21.02 GB, the published
# int8-convrot transformer is 21.50 GB (its quantisation scales on top).
P_LTX25 = 21_004_025_600
# LTX-2.5's video VAE: CausalDiffusionVAE (sd.py:616-631, picked by decoder.conv_in_x_t.weight): the conv encoder
# of LTX-2 with a neighbourhood-attention diffusion decoder (vae/na_diffusion_decoder.py). Built on the meta device
# with its default config LTX_24_VAE_CONFIG (:426-464, class :467-520): 736,070,513 params (encoder 318,936,897, decoder
# 417,133,616) x 2 bytes = 1.472 GB, the published 1.47 GB ltx-2.5-video-vae-bf16 (LTX-2.3's VideoVAE, 726,105,969,
# would be 1.452 GB; Lightricks ships that one separately as ltx-2.5-video-vae-conv-bf16).
P_VAE_LTX25 = 736_070_513
P_LTX2 = 19_585_135_392  # LTX-2's LTXAV with its text connectors, traced (CHECKPOINT_SPLITS below)
P_LTX23 = 21_005_004_544  # LTX-2.3's, traced (CHECKPOINT_SPLITS below)
# LTX-Video 2B's transformer: ComfyUI 0.18.2's LTXV at full size, traced weight_bytes 3,846,810,944 at bf16
P_LTXV_2B = 1_923_405_472
# LTX-Video's 13B (ltxv-13b-0.9.7 / 0.9.8 checkpoints: the transformer + the same causal video VAE): 48 layers of 32
# heads x 128 (Lightricks' ltxv-13b config; bench/trace_working_memory.py LTXV_13B), 13,042,589,344 params (ComfyUI
# 0.18.2's LTXV traced at that size: weight_bytes 26,085,178,688 at bf16)
P_LTXV_13B = 13_042_589_344


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "ltxv": Family(DIFFUSION, "LTX-Video (2B)", dict(
        hidden_size=2048, depth=28, heads=32, head_dim=64, in_channels=128, out_channels=128,
        patch_size=(1, 1, 1), context_dim=4096, cross_attention_dim=2048, latent_channels=128,
        spatial_compression=32, temporal_compression=8)),
    # LTX-2 (audio + video): ComfyUI's LTXAVModel defaults (ldm/lightricks/av_model.py:381-403): 48 layers,
    # video 32 heads x 128, Gemma 3 captions (3840); the video stream is LTX-Video 13B's size.
    "ltx2": Family(DIFFUSION, "LTX-2 (audio-video, 19B)", dict(
        hidden_size=4096, depth=48, heads=32, head_dim=128, in_channels=128, out_channels=128, patch_size=(1, 1, 1),
        context_dim=3840, cross_attention_dim=4096, latent_channels=128, spatial_compression=32,
        temporal_compression=8)),
    # LTX-2.3 22B: LTXAV with gated attention, 8-layer connectors, the dual text projection (ComfyUI 0.18.2 reads
    # the layout from the file's metadata config; bench/trace_working_memory.py LTX2_3_22B)
    "ltx2.3": Family(DIFFUSION, "LTX-2.3 (audio-video, 22B)", dict(
        hidden_size=4096, depth=48, heads=32, head_dim=128, in_channels=128, out_channels=128, patch_size=(1, 1, 1),
        context_dim=6144, cross_attention_dim=4096, latent_channels=128, spatial_compression=32,
        temporal_compression=8)),
    # LTX-2.5 22B: LTX-2.3's layout, ff_bias False + the keyframe marker (P_LTX25 above). Not LTX-2.3's
    # configuration, so its own trace: ComfyUI 0.33.0's LTXAV at this configuration (data/working_memory.json
    # "ltx2.5", bench/trace_working_memory.py _arches_033; model_detection.py:419-429), 6 points, fit within 0.094 %.
    "ltx2.5": Family(DIFFUSION, "LTX-2.5 (audio-video, 22B)", dict(
        hidden_size=4096, depth=48, heads=32, head_dim=128, in_channels=128, out_channels=128, patch_size=(1, 1, 1),
        context_dim=6144, cross_attention_dim=4096, latent_channels=128, spatial_compression=32,
        temporal_compression=8)),
    # sd.py:616-631: 128 latent channels (decoder.conv_in), /32 spatially, 8 frames a latent frame
    "vae-ltx2.5": Family(VAE, "LTX-2.5 video VAE (diffusion decoder)", dict(
        latent_channels=128, spatial_compression=32, temporal_compression=8)),
    "vae-ltx2": Family(VAE, "LTX-2 video VAE", dict(latent_channels=128, spatial_compression=32, temporal_compression=8)),
    "vae-ltx2-audio": Family(VAE, "LTX-2 audio VAE", dict(latent_channels=8)),
    "vae-ltx2.3": Family(VAE, "LTX-2.3 video VAE", dict(latent_channels=128, spatial_compression=32,
                                                         temporal_compression=8)),
    "vae-ltx2.3-audio": Family(VAE, "LTX-2.3 audio VAE", dict(latent_channels=8)),
    # LTX-2.5's audio VAE (ltx-2.5-audio-vae-bf16): sd.py:949-967 builds the same class as LTX-2.3's, AudioVAE
    # (ldm/lightricks/vae/audio_vae.py:104), but its whole configuration comes from the file's metadata config
    # (audio_vae.py:25-40, no default in ComfyUI's code), so sd.py alone cannot show it is LTX-2.3's configuration:
    # not LTX-2.3's traced profile; ComfyUI's own estimate for the class (VAE_FORMULAS below). 8 latent channels
    # (LTX-2's latent_formats), vae_dtype_bytes 4: working_dtypes [float32] only (sd.py:964).
    "vae-ltx2.5-audio": Family(VAE, "LTX-2.5 audio VAE", dict(latent_channels=8, vae_dtype_bytes=4)),
    "vae-ltxv": Family(VAE, "LTX-Video VAE", dict(latent_channels=128, spatial_compression=32,
                                                  temporal_compression=8)),
}

# Families that share another's traced working-memory profile (memory.WORKING_MEMORY_ALIAS)
WORKING_MEMORY_ALIAS = {
    "ltxv": "ltxv-2b",
    "ltx2": "ltx2-19b",
    "ltx2.3": "ltx2.3-22b",
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "ltxv": 128,
    "ltx2": 1024,
    "ltx2.3": 1024,
    "ltx2.5": 1024,  # Gemma 4 12B: text_encoders/lt.py:84-90 pads to 1024 (ltxav_gemma4_tokenizer)
}

# Traced activations x this = the published peak (memory.ACTIVATION_CALIBRATION; group keys). LTX-2 (19B), fitted on
# the calibration half of data/outcomes (python3 bench/sweep_calibration.py --group ltx2): the two-stage template at
# 1280x720x251 on a 32 GB card with --reserve-vram 8 ran, "the ComfyUI process still takes 28 GB"
# (ltx2-twostage-32gb-1280x720x251-reserve8-comfy11726, Comfy-Org/ComfyUI#11726), and is called out of memory above
# 1.4; no calibration OOM moves anywhere from 1.0 to 2.0. Of the equal factors the highest (a false "runs" costs more
# than a false alarm); its stated 28 GB points lower still (about 1.1), left as a margin. docs/working-memory.md.
CALIBRATION = {
    "ltx2": 1.4,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "ltxv": 5.5,
}

# All-in-one checkpoints known from the catalogue: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    # LTX-Video 2B checkpoints (ltx-video-2b-v0.9*.safetensors): the transformer (1,923,405,472 params:
    # ComfyUI 0.18.2's LTXV at full size, traced weight_bytes 3,846,810,944 at bf16) + the causal video
    # VAE (419,193,649 params, traced: data/vae_memory.json vae-ltxv); no text encoder (T5-XXL loads
    # separately). 4 bytes x both = 9.37 GB, the published size of v0.9 (stored in fp32).
    "ltxv": {"model": (P_LTXV_2B, DIFFUSION, "ltxv", "LTX-Video 2B transformer"),
             "vae": (419_193_649, VAE, "vae-ltxv", "LTX-Video VAE")},
    # LTX-2 19B checkpoints (ltx-2-19b-*.safetensors): LTXAV with its text connectors (19,585,135,392 params:
    # ComfyUI 0.18.2's LTXAV traced at full size, weight_bytes 39,170,270,784), the video VAE (VideoVAE
    # version 2, 1,246,913,522, data/vae_memory.json vae-ltx2), the audio VAE + vocoder (108,840,948,
    # vae-ltx2-audio) and the Gemma projection LTXAVTextEncoderLoader reads (text_encoders/lt.py:129:
    # Linear(3840*49, 3840) = 722,534,400). 2 bytes x the sum = 43.33 GB, the published 43.3 GB.
    "ltx2": {"model": (P_LTX2, DIFFUSION, "ltx2", "LTX-2 19B transformer"),
             "vae": (1_246_913_522, VAE, "vae-ltx2", "LTX-2 video VAE"),
             "audio_vae": (108_840_948, VAE, "vae-ltx2-audio", "LTX-2 audio VAE"),
             "clip": (722_534_400, TEXT_ENCODER, "gemma3", "LTX-2 text projection")},
    # LTX-2.3 22B (ltx-2.3-22b-*.safetensors): LTXAV with its connectors (21,005,004,544 params traced), the
    # video VAE (726,105,969), audio VAE + 48 kHz vocoder (181,785,594) and the dual text projection
    # (1,156,061,184); 2 bytes x the sum = 46.1 GB, the published ~46 GB bf16 file (5947 tensors)
    "ltx2.3": {"model": (P_LTX23, DIFFUSION, "ltx2.3", "LTX-2.3 22B transformer"),
               "vae": (726_105_969, VAE, "vae-ltx2.3", "LTX-2.3 video VAE"),
               "audio_vae": (181_785_594, VAE, "vae-ltx2.3-audio", "LTX-2.3 audio VAE"),
               "clip": (1_156_061_184, TEXT_ENCODER, "gemma3", "LTX-2.3 text projection")},
}

# LTX-Video 13B's arch numbers route its working memory to the traced "ltxv-13b" entry (ARCH_ROUTES)
# (resolve.checkpoint_parts)
CHECKPOINT_MODEL_SIZES = {
    "ltxv": ((P_LTXV_13B, "LTX-Video 13B transformer", dict(hidden_size=4096, depth=48, heads=32, head_dim=128,
                                                            cross_attention_dim=4096),
              "traced: data/working_memory.json ltxv-13b"),),
}

# Audio and 3D VAEs: (label, latent axes whose product is the length, what it counts, batch in one call) (vae_memory.MEDIA_FAMILIES)
MEDIA_VAES = {
    "vae-ltx2-audio": ("LTX-2 audio VAE + vocoder", (2,), "latent frames (25 a second)", True),
    "vae-ltx2.3-audio": ("LTX-2.3 audio VAE + vocoder (48 kHz)", (2,), "latent frames (25 a second)", True),
}

# One family id, several traced configurations: (family, arch key, value, traced entry) (memory.ARCH_ROUTES)
ARCH_ROUTES = (
    ("ltxv", "hidden_size", 4096, "ltxv-13b"),
)

# VAEs priced with the traced VAE constants (vae_memory.FAMILIES)
# a VAE file name -> (latent channels, spatial /, temporal /) for a node whose latent depends on its VAE (comfy/sd.py
# VAE.__init__; a guess by name, said as such): registry.VAE_NAME_GEOMETRY, tried in ORDER
VAE_NAME_GEOMETRY = (
    (re.compile(r"ltx"), (128, 32, 8)),
)
VAES = (
    # sd.py:464-485
    VaeFamily("vae-ltxv", "LTX-Video VAE", 128, 32, 8, "comfy.ldm.lightricks...VideoVAE",
              LiveVae((".lightricks.vae.causal_video_autoencoder.VideoVAE",), check_channels=False)),
    # 0.18.2 sd.py:609-621: LTX-2's video VAE, VideoVAE version 2 (LTX-Video's class, another config)
    VaeFamily("vae-ltx2", "LTX-2 video VAE", 128, 32, 8, "comfy.ldm.lightricks...VideoVAE (version 2)"),
    # LTX-2.3's video VAE: the same class, its own layout from the file's metadata config
    VaeFamily("vae-ltx2.3", "LTX-2.3 video VAE", 128, 32, 8, "comfy.ldm.lightricks...VideoVAE (version 2, 2.3 layout)"),
)
# Not here: "vae-ltx2.5" (0.33 sd.py:616-631, CausalDiffusionVAE, another class than the VideoVAE above). Nothing
# traced it, so its working memory is not borrowed from LTX-2.3's VAE: it is ComfyUI 0.33's own estimate for the
# class (VAE_FORMULAS below); a VaeFamily with no traced data would only change the "known:" list other workflows'
# unknown-VAE notes print.

# the parts' traced counts, by family and part (for the split files' name rules below)
_SPLIT = {fam: {part: spec[0] for part, spec in parts.items()} for fam, parts in CHECKPOINT_SPLITS.items()}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"ltx[_-]?2[._]5", "ltx2.5", "LTX-2.5 (22B)", P_LTX25, "P_LTX25 (computed: ComfyUI 0.33 LTXAVModel)"),
        # LTX-2 and LTX-2.3 came in one size each (ltx-2-19b-*, ltx-2.3-22b-*): the traced transformers'
        # counts (CHECKPOINT_SPLITS)
        _r(r"ltx[_-]?2[._]3", "ltx2.3", "LTX-2.3 (22B)", P_LTX23, "P_LTX23 (traced: CHECKPOINT_SPLITS ltx2.3)"),
        _r(r"ltx[_-]?2(?![._]?[1-9])", "ltx2", "LTX-2 (19B)", P_LTX2, "P_LTX2 (traced: CHECKPOINT_SPLITS ltx2)"),
        # LTX-Video before 0.9.7 came in one size, the 2B (ltx-video-2b-v0.9 ... v0.9.6); from 0.9.7 on also a 13B. A
        # name with neither a size nor such a version is priced as the 13B, the larger: an upper bound, said so
        _r(r"(?:ltx[_-]?video|ltxv).*?v?0[._]9(?:[._][0-6])?(?![._]?\d)", "ltxv", "LTX-Video (0.9 to 0.9.6: 2B)",
           P_LTXV_2B, "P_LTXV_2B (LTX-Video before 0.9.7 is the 2B only)"),
        _r(r"ltx[_-]?video|ltxv", "ltxv", "LTX-Video", P_LTXV_13B, "P_LTXV_13B (traced)", largest=True),
    ),
    VAE: (
        _r(r"ltx[_-]?2[._]5.*video[_-]?vae(?!.*conv)", "vae-ltx2.5", "LTX-2.5 video VAE", P_VAE_LTX25,
           "P_VAE_LTX25 (computed: ComfyUI 0.33 CausalDiffusionVAE)"),
        # the split files of LTX-2 / 2.3 (Kijai's "LTX23_video_vae_bf16", "LTX23_audio_vae_bf16"): the parts the
        # all-in-one checkpoints hold, with their traced counts (CHECKPOINT_SPLITS)
        _r(r"ltx[_-]?2[._]?3.*audio[_-]?vae", "vae-ltx2.3-audio", "LTX-2.3 audio VAE", _SPLIT["ltx2.3"]["audio_vae"],
           "the audio VAE + vocoder of CHECKPOINT_SPLITS ltx2.3 (traced)", sized=True),
        _r(r"ltx[_-]?2[._]?3.*vae", "vae-ltx2.3", "LTX-2.3 video VAE", _SPLIT["ltx2.3"]["vae"],
           "the video VAE of CHECKPOINT_SPLITS ltx2.3 (traced)", sized=True),
        _r(r"ltx[_-]?2(?![._]?[1-9]).*audio[_-]?vae", "vae-ltx2-audio", "LTX-2 audio VAE", _SPLIT["ltx2"]["audio_vae"],
           "the audio VAE + vocoder of CHECKPOINT_SPLITS ltx2 (traced)", sized=True),
        _r(r"ltx[_-]?2(?![._]?[1-9]).*vae", "vae-ltx2", "LTX-2 video VAE", _SPLIT["ltx2"]["vae"],
           "the video VAE of CHECKPOINT_SPLITS ltx2 (traced)", sized=True),
    ),
    TEXT_ENCODER: (
        # the Gemma projection LTXAVTextEncoderLoader / DualCLIPLoader type ltxv reads beside Gemma, as a split file
        _r(r"ltx[_-]?2[._]?3.*projection", "gemma3", "LTX-2.3 text projection", _SPLIT["ltx2.3"]["clip"],
           "the dual text projection of CHECKPOINT_SPLITS ltx2.3 (traced)", sized=True),
        _r(r"ltx[_-]?2(?![._]?[1-9]).*projection", "gemma3", "LTX-2 text projection", _SPLIT["ltx2"]["clip"],
           "the text projection of CHECKPOINT_SPLITS ltx2 (traced)", sized=True),
    ),
}

# Lightricks' ltx-2-19b-dev-fp8: transformer fp8, VAEs and projection bf16 (resolve.part_of)
FP8_MODEL_ONLY_SPLITS = frozenset({"ltx2", "ltx2.3"})


# --- LTX-2.5's VAEs: ComfyUI 0.33's own estimates (comfy/sd.py), not traced ---------------------------------------
# Neither is a class / configuration any traced VAE family uses, so each is priced with the working memory its
# ComfyUI 0.33 branch states (memory_used_decode / memory_used_encode: what ComfyUI frees memory for before the
# call), said as such. Decode shapes are latent [B, C, T, h, w] (sd.py:1229), encode shapes pixels [B, 3, F, H, W]
# (an image batch becomes the frames of one video: sd.py:1363-1366); a tiled decode reserves the estimate at one
# tile (sd.py:1328, _tile_bounded_shape :1307-1324), a tiled encode at the whole input (sd.py:1427).
LTX25_VAE_DECODE_ELEMENTS = 1700 * 8 * 8 * 8  # sd.py:625: 1700 x T x h x w x (8 x 8 x 8) elements
LTX25_VAE_ENCODE_ELEMENTS = 80  # sd.py:626: 80 x max(F, 7) x H x W elements
LTX25_AUDIO_DECODE_ELEMENTS = 87000  # sd.py:953: T x 16 mel bins x 87000 elements
LTX25_AUDIO_DTYPE_BYTES = 4  # sd.py:964: working_dtypes [float32]


def _tile(tiled: dict, key: str, default: int) -> int:
    return int(tiled.get(key, default) or default)


def _ltx25_video_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None):
    """CausalDiffusionVAE (sd.py:616-631): decode 1700 x T x h x w x 512 x dtype (sd.py:625), encode
    80 x max(F, 7) x H x W x dtype (sd.py:626; F the frames, or the images of a batch); decode per batch item.
    VAEDecodeTiled (nodes.py:357-375): tile_size / 32 latent pixels, max(2, temporal_size / 8) latent frames;
    ComfyUI reserves the estimate at one such tile."""
    if latent.media:
        return None
    batch = max(1, int(latent.batch))
    if op == "decode":
        t, h, w = int(latent.frames or 1), int(latent.height), int(latent.width)
        where = "sd.py:625, 1229: memory_used_decode"
        if tiled:
            size = _tile(tiled, "tile_size", 512) // 32
            t = min(t, max(2, _tile(tiled, "temporal_size", 64) // 8))
            h, w = min(h, size), min(w, size)
            where = "sd.py:625, 1328: memory_used_decode at one tile"
        value = LTX25_VAE_DECODE_ELEMENTS * t * h * w * dtype_bytes * batch
        what = f"{w}×{h} latent × {t} latent frames{' (one tile)' if tiled else ''} × batch {batch}"
    else:
        h = int(latent.pixel_height or latent.height * 32)
        w = int(latent.pixel_width or latent.width * 32)
        frames = int(latent.pixel_frames or batch)  # an image batch is the frames of one video (sd.py:1363-1365)
        value = LTX25_VAE_ENCODE_ELEMENTS * max(frames, 7) * h * w * dtype_bytes
        where = "sd.py:626, 1371: memory_used_encode" + (" (a tiled encode reserves it for the whole input, "
                                                         "sd.py:1427)" if tiled else "")
        what = f"{w}×{h}×{frames} frame(s)"
    return math.ceil(value), (f"{what}: ComfyUI 0.33's own estimate for the LTX-2.5 video VAE "
                              f"(CausalDiffusionVAE, {where}), not traced; {dtype_bytes}-byte working dtype")


def _ltx25_audio_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None):
    """AudioVAE (sd.py:949-967), fp32 only: decode T x 16 x 87000 x 4 bytes on the [B, 8, T, 16] latent (sd.py:953),
    per batch item. Encode (sd.py:952: 330 x samples) is not priced here (None): the estimator's audio latent does
    not carry the input waveform's length."""
    if latent.media != "audio" or op != "decode" or tiled:
        return None
    batch = max(1, int(latent.batch))
    t, bins = int(latent.height), int(latent.width)
    value = t * bins * LTX25_AUDIO_DECODE_ELEMENTS * LTX25_AUDIO_DTYPE_BYTES * batch
    return math.ceil(value), (f"{t} latent frames × {bins} mel bins × batch {batch}: ComfyUI 0.33's own estimate "
                              "for the LTX audio VAE class AudioVAE (sd.py:953, 1229: memory_used_decode; fp32, "
                              "sd.py:964), not traced")


VAE_FORMULAS = {"vae-ltx2.5": _ltx25_video_vae_bytes, "vae-ltx2.5-audio": _ltx25_audio_vae_bytes}


def _ltxav_block_params(arch: dict) -> int:
    """BasicAVTransformerBlock (av_model.py:85-204) at video width h and audio width a = 32 heads x 64
    (LTXAVModel defaults, av_model.py:400-404; LTX-2.3 the same): attn1 and attn2 4h² each (attn2's context is
    h wide after the connectors), audio_attn1 / audio_attn2 4a² each, audio_to_video and video_to_audio
    2ha + 2a² each, ff 2·h·4h and audio_ff 2·a·4a (FeedForward mult 4, GELU_approx: glu is not used,
    lightricks/model.py:314-322): 16h² + 20a² + 4ha."""
    h = int(arch.get("hidden_size", 4096) or 4096)
    a = 32 * 64
    return 16 * h * h + 20 * a * a + 4 * h * a


# LTX-2.5 ("LTX 2.4" in 0.33's code) is the same LTXAV class (supported_models.py:945-957): its ff_bias False
# drops only biases, left out here anyway (runtime.PREFETCH_BLOCK_PARAMS: 0.33's model prefetch)
PREFETCH_BLOCK_PARAMS = {"ltx2": _ltxav_block_params, "ltx2.3": _ltxav_block_params, "ltx2.5": _ltxav_block_params}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _ltxv(v) -> Found:
    layers = v.count_blocks("transformer_blocks.")
    s = v.shape("transformer_blocks.0.attn2.to_k.weight")
    arch = dict(depth=layers, in_channels=v.dim("patchify_proj.weight", 1), patch_size=(1, 1, 1),
                latent_channels=128, spatial_compression=32, temporal_compression=8, heads=32)
    if s:
        arch.update(hidden_size=s[0], head_dim=s[0] // 32, cross_attention_dim=s[1])
    variant = "ltxav" if v.has("audio_adaln_single.linear.weight") else None
    return Found("ltxv", arch, ("key adaln_single.emb.timestep_embedder.linear_1.bias (LTX-Video)",), variant)

# :386 is PixArt's test (the same key with pos_embed.proj.bias); LTX-Video's follows at :419
GGUF_ARCH = {"ltxv": "ltxv"}  # ComfyUI-GGUF convert.py model type

DETECT = {DIFFUSION: (Detector(keys=(("adaln_single.emb.timestep_embedder.linear_1.bias",),),
                               banned=("pos_embed.proj.bias",), read=_ltxv, order=419),),
          # sd.py:737: LTX-Video's VAE, tested before HunyuanVideo's decoder.conv_in.conv.weight (which it has too)
          VAE: (Detector(keys=(("decoder.up_blocks.0.res_blocks.0.conv1.conv.weight",),), order=737,
                         read=lambda v: Found("vae-ltxv", dict(all_families()["vae-ltxv"].arch),
                                              ("key decoder.up_blocks.0.res_blocks.0.conv1.conv.weight "
                                               "(LTX-Video VAE)",))),)}
