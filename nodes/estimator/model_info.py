"""ModelInfo: what a model file is, as the memory model needs it. Produced by families.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

# kinds
DIFFUSION = "diffusion"
TEXT_ENCODER = "text_encoder"
VAE = "vae"
LORA = "lora"
CONTROLNET = "controlnet"
CLIP_VISION = "clip_vision"
AUDIO_ENCODER = "audio_encoder"  # comfy/audio_encoders: wav2vec2, Whisper large v3 encoder
CHECKPOINT = "checkpoint"  # a bundle: see ModelInfo.parts
UNKNOWN = "unknown"


@dataclass(frozen=True)
class ModelInfo:
    """Identity and size of one model (or one part of a checkpoint).

    ``family`` ids are a shared vocabulary (see families.FAMILIES): e.g. "flux1-dev",
    "flux1-schnell", "wan2.1-14b", "wan2.2-ti2v-5b", "sdxl", "t5-xxl", "umt5-xxl", "clip-l",
    "vae-kl16" (Flux/SD3 VAE), "vae-wan2.1", "lora", "unknown".
    """

    kind: str
    family: str
    label: str  # for people: "Flux.1 dev (12B)"
    params: int
    weights_bytes: int  # bytes as stored in the file (exact from headers, else catalogue / file size)
    dtype: str | None = None  # main stored dtype: "BF16", "F8_E4M3", "Q4_K", ...
    quantization: str | None = None  # "fp8_e4m3fn", "scaled fp8_e4m3fn", "gguf Q4_K", None
    arch: Mapping[str, object] = field(default_factory=dict)  # hidden_size, depth, heads, in_channels, ...
    evidence: tuple[str, ...] = ()  # what decided the family: "key head.modulation (dim 5120)", "file name 'high_noise'"
    source: str = "header"  # "header" | "catalogue" | "file size" | "inferred" | "virtual" (made by ComfyUI) | "missing"
    path: str | None = None
    largest_tensor_bytes: int = 0  # at 16 bit: GGUF dequantizes one layer at a time (working memory)
    parts: Mapping[str, "ModelInfo"] = field(default_factory=dict)  # checkpoint: {"model", "clip", "vae"}
    variant: str | None = None  # e.g. "t2v", "i2v", "high_noise", "low_noise", "fill", "kontext"
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A Wan model known by name or catalogue (no header read) has no arch["task"]; its variant says it, so the
        # working-memory lookup (memory.ARCH_ROUTES) picks the same traced entry as for a header, for every reader.
        if self.variant in WAN_TASK_VARIANTS and self.family.startswith("wan") and not self.arch.get("task"):
            object.__setattr__(self, "arch", MappingProxyType({**self.arch, "task": self.variant}))


# Wan models on the 14B backbone with a traced entry of their own (families.py reads the task from a header's keys)
WAN_TASK_VARIANTS = ("s2v", "humo", "animate")
