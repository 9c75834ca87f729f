"""LoRA, ControlNet, CLIP vision, audio encoders, upscalers and the unknown model."""
from __future__ import annotations

from ._spec import AUDIO_ENCODER, CLIP_VISION, CONTROLNET, Detector, Family, Found, LORA, UNKNOWN, UPSCALER, _r

ORDER = 180  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
# Whisper large v3's encoder as ComfyUI builds it (comfy/audio_encoders/whisper.py AudioEncoder: 2 convs, 1500 positions,
# 32 layers of 1280 with a bias-less k_proj, final LayerNorm), computed; a full Whisper file also holds the decoder,
# which load_sd(strict=False) leaves out (audio_encoders.py load_audio_encoder_from_sd)
P_WHISPER_V3_ENCODER = 636_968_960
P_CLIP_VISION_H = 632_076_800  # OpenCLIP ViT-H/14 vision tower, HF layout
# wav2vec2 base as transformers' Wav2Vec2Model builds it (no CTC head), computed: the feature extractor (7 convs of 512,
# the first with its GroupNorm) 4,200,448 + the projection 395,008 + masked_spec_embed 768 + the grouped positional
# conv (768 x 48 x 128, weight-normed, + bias) 4,719,488 + the encoder norm 1,536 + 12 layers of 768 (attention
# 4 x 590,592, FFN 768 -> 3072 -> 768, two norms: 7,087,872 each). facebook/wav2vec2-base-960h adds a 24,608-parameter
# CTC head that Wav2Vec2Model.from_pretrained leaves out; TencentGameMate/chinese-wav2vec2-base has the same layout.
P_WAV2VEC2_BASE = 94_371_712


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # adapters and others
    "lora": Family(LORA, "LoRA", {}),
    "controlnet": Family(CONTROLNET, "ControlNet", {}),
    "clip-vision": Family(CLIP_VISION, "CLIP vision", dict(hidden_size=1280, layers=32, patch_size=(14, 14),
                                                           image_size=224)),
    # audio encoders (comfy/audio_encoders, loaded like a text encoder: text_encoder_device / _dtype)
    "wav2vec2": Family(AUDIO_ENCODER, "wav2vec2 audio encoder", dict(hidden_size=1024, layers=24)),
    "wav2vec2-base": Family(AUDIO_ENCODER, "wav2vec2 base audio encoder", dict(hidden_size=768, layers=12)),
    "whisper-encoder": Family(AUDIO_ENCODER, "Whisper large v3 encoder", dict(hidden_size=1280, layers=32)),
    "unknown": Family(UNKNOWN, "unknown model", {}),
}

# Catalogue entries that stand for the whole family (name_infer)
FAMILY_ENTRY = {
    "esrgan": "4x-UltraSharp.pth",
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    CLIP_VISION: (
        _r(r"clip.*vit[_-]?h(?![a-z])|clip[_-]?vision[_-]?h(?![a-z])|clip.*vit[_-]?huge[_-]?14.*visual", "clip-vision", "CLIP vision ViT-H", P_CLIP_VISION_H, f"{_C} P_CLIP_VISION_H (computed)"),
    ),
    UPSCALER: (
        _r(r"esrgan|ultrasharp|x4plus|(?<![a-z0-9])[248]x[_-]", "esrgan", "ESRGAN upscaler"),
        # any other upscaler named by its scale ("4xNomos2_hq_mosr", "realesr-general-x4v3") or its architecture:
        # ESRGAN's size stands for its weights, said. Its working memory is ComfyUI's per-tile reservation
        # (stages/upscale.py: 512² px x 3 x 4 bytes x scale x 384, ~1.2 GB at 4x), which the weights hardly move
        _r(r"(?<![a-z0-9])[1-8]x(?=[a-z_-])|[_-]x[1-8](?![0-9])|(?<![a-z])(?:span|dat|hat|swinir|omnisr|mosr|"
           r"realplksr|plksr|compact|drct|atd|srformer)(?![a-z])", "esrgan",
           "upscaler (its architecture not in the name: ESRGAN's size assumed)"),
    ),
    AUDIO_ENCODER: (
        # comfy/audio_encoders/whisper.py WhisperLargeV3: the encoder only (a full Whisper file's decoder is not loaded)
        _r(r"whisper", "whisper-encoder", "Whisper large v3 encoder", P_WHISPER_V3_ENCODER,
           f"{_C} P_WHISPER_V3_ENCODER (computed)"),
        # WanVideoWrapper's (Down)load Wav2Vec Model names a Hugging Face repository; its files say "base" too
        _r(r"wav2vec2?[_-]?(base|chinese)|chinese[_-]?wav2vec", "wav2vec2-base", "wav2vec2 base audio encoder",
           P_WAV2VEC2_BASE, f"{_C} P_WAV2VEC2_BASE (computed)"),
        _r(r"wav2vec", "wav2vec2", "wav2vec2 audio encoder"),
    ),
}


# --- Header detectors ---------------------------------------------------------------------------------------------
def _clip_vision(v) -> Found | None:
    """comfy/clip_vision.py: the Hugging Face layout (CLIP or SigLIP vision towers)."""
    if v.startswith("text_model.") and sum(t.numel for k, t in v.t.items() if k.startswith("text_model.")) > \
            sum(t.numel for k, t in v.t.items() if k.startswith("vision_model.")):
        return None  # a full CLIP whose text tower dominates: a text encoder
    layers = v.count_blocks("vision_model.encoder.layers.")
    width = v.dim("vision_model.encoder.layers.0.layer_norm1.weight", 0) or \
        v.dim("vision_model.encoder.layers.0.mlp.fc1.weight", 1)
    patch = v.shape("vision_model.embeddings.patch_embedding.weight")
    siglip = not v.has("vision_model.embeddings.class_embedding")
    variant = "siglip" if siglip else {24: "vit-l", 32: "vit-h", 48: "vit-g"}.get(layers)
    arch = dict(hidden_size=width, layers=layers, patch_size=tuple(patch[2:]) if patch else None)
    return Found("clip-vision", arch, (f"keys vision_model.encoder.layers.0..{layers - 1} (CLIP vision)",), variant)


def _open_clip_vision(v) -> Found:
    layers = v.count_blocks("visual.transformer.resblocks.")
    width = v.dim("visual.transformer.resblocks.0.attn.in_proj_weight", 1)
    variant = {24: "vit-l", 32: "vit-h", 48: "vit-g"}.get(layers)
    return Found("clip-vision", dict(hidden_size=width, layers=layers),
                 (f"keys visual.transformer.resblocks.0..{layers - 1} (OpenCLIP vision)",), variant)


def _wav2vec2(v) -> Found | None:
    """audio_encoders.py load_audio_encoder_from_sd: encoder.layer_norm.bias + a feature extractor (0.18.2)."""
    for prefix in ("", "wav2vec2."):
        if v.has(prefix + "encoder.layer_norm.bias") and (v.startswith(prefix + "feature_extractor.")
                                                          or v.startswith(prefix + "feature_projection.")):
            width = v.dim(prefix + "encoder.layer_norm.bias", 0)
            layers = v.count_blocks(prefix + "encoder.layers.")
            return Found("wav2vec2-base" if width == 768 else "wav2vec2", dict(hidden_size=width, layers=layers),
                         (f"keys {prefix}encoder.layer_norm.bias ({width}) + feature extractor (wav2vec2, "
                          "audio_encoders.py load_audio_encoder_from_sd)",))
    return None


def _whisper(v) -> Found:
    both = v.has("model.encoder.embed_positions.weight") and v.has("model.encoder.conv1.weight")
    prefix = "model." if both else ""
    layers = v.count_blocks(prefix + "encoder.layers.")
    width = v.dim(prefix + "encoder.embed_positions.weight", 1)
    return Found("whisper-encoder", dict(hidden_size=width, layers=layers),
                 (f"key {prefix}encoder.embed_positions.weight (Whisper encoder, {layers} layers)",))


DETECT = {
    CLIP_VISION: (Detector(keys=(("vision_model.encoder.layers.0.layer_norm1.weight",),
                                 ("vision_model.encoder.layers.0.mlp.fc1.weight",)), read=_clip_vision),
                  Detector(keys=(("visual.transformer.resblocks.0.attn.in_proj_weight",),), read=_open_clip_vision)),
    AUDIO_ENCODER: (Detector(keys=(("encoder.layer_norm.bias",), ("wav2vec2.encoder.layer_norm.bias",)),
                             read=_wav2vec2),
                    Detector(keys=(("model.encoder.embed_positions.weight", "model.encoder.conv1.weight"),
                                   ("encoder.embed_positions.weight", "encoder.conv1.weight")), read=_whisper)),
}
