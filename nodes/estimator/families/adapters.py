"""LoRA, ControlNet, CLIP vision, audio encoders, upscalers and the unknown model."""
from __future__ import annotations

from ._spec import AUDIO_ENCODER, CLIP_VISION, CONTROLNET, Family, LORA, UNKNOWN, UPSCALER, _r

ORDER = 180  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
# Whisper large v3's encoder as ComfyUI builds it (comfy/audio_encoders/whisper.py AudioEncoder: 2 convs, 1500 positions,
# 32 layers of 1280 with a bias-less k_proj, final LayerNorm), computed; a full Whisper file also holds the decoder,
# which load_sd(strict=False) leaves out (audio_encoders.py load_audio_encoder_from_sd)
P_WHISPER_V3_ENCODER = 636_968_960
P_CLIP_VISION_H = 632_076_800  # OpenCLIP ViT-H/14 vision tower, HF layout


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # adapters and others
    "lora": Family(LORA, "LoRA", {}),
    "controlnet": Family(CONTROLNET, "ControlNet", {}),
    "clip-vision": Family(CLIP_VISION, "CLIP vision", dict(hidden_size=1280, layers=32, patch_size=(14, 14),
                                                           image_size=224)),
    # audio encoders (comfy/audio_encoders, loaded like a text encoder: text_encoder_device / _dtype)
    "wav2vec2": Family(AUDIO_ENCODER, "wav2vec2 audio encoder", dict(hidden_size=1024, layers=24)),
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
        _r(r"clip.*vit[_-]?h(?![a-z])|clip[_-]?vision[_-]?h(?![a-z])", "clip-vision", "CLIP vision ViT-H", P_CLIP_VISION_H, f"{_C} P_CLIP_VISION_H (computed)"),
    ),
    UPSCALER: (
        _r(r"esrgan|ultrasharp|x4plus|(?<![a-z0-9])[248]x[_-]", "esrgan", "ESRGAN upscaler"),
    ),
    AUDIO_ENCODER: (
        # comfy/audio_encoders/whisper.py WhisperLargeV3: the encoder only (a full Whisper file's decoder is not loaded)
        _r(r"whisper", "whisper-encoder", "Whisper large v3 encoder", P_WHISPER_V3_ENCODER,
           f"{_C} P_WHISPER_V3_ENCODER (computed)"),
        _r(r"wav2vec", "wav2vec2", "wav2vec2 audio encoder"),
    ),
}
