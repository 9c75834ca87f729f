"""The shapes a family module fills in (families/<group>.py): its architecture numbers (Family), its VAEs
(VaeFamily), its file-name rules (Rule). Nothing here knows any one family."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple

from ..model_info import (AUDIO_ENCODER, CHECKPOINT, CLIP_VISION, CONTROLNET, DIFFUSION, LORA, TEXT_ENCODER,
                          UNKNOWN, VAE)

__all__ = ["AUDIO_ENCODER", "CHECKPOINT", "CLIP_VISION", "CONTROLNET", "DIFFUSION", "LORA", "TEXT_ENCODER", "UNKNOWN",
           "UPSCALER", "VAE", "Family", "Found", "Rule", "VaeFamily", "_r"]

UPSCALER = "upscaler"  # upscale models have no ModelInfo kind of their own: a name-rule role


class Family(NamedTuple):
    kind: str
    label: str
    arch: Mapping[str, object]  # full-size numbers from ComfyUI's configs / the models' config.json


class Found(NamedTuple):
    """What a header detector found: the family, the arch numbers read from the file, the evidence."""
    family: str
    arch: dict
    evidence: tuple[str, ...]
    variant: str | None = None
    notes: tuple[str, ...] = ()


class Rule(NamedTuple):
    pattern: str  # searched in the lower-cased path
    family: str  # FAMILIES id where there is one
    label: str
    params: int | None  # canonical count; None: from the name's size token (or the family's catalogue entry)
    source: str  # where `params` comes from
    sized: bool = False  # the pattern names the size ("qwen3 4b"): the name's size token is that size


def _r(pattern, family, label, params=None, source="", sized=False) -> Rule:
    return Rule(pattern, family, label, params, source, sized)


# Constants from ComfyUI 0.8.0 comfy/sd.py, class VAE.__init__ branches
@dataclass(frozen=True)
class VaeFamily:
    id: str
    label: str
    latent_channels: int
    spatial: int  # pixels per latent pixel (upscale_ratio[-1])
    temporal: int | None  # pixel frames per latent frame, None for image VAEs
    comfy_class: str  # first_stage_model class ComfyUI builds

    @property
    def is_video(self) -> bool:
        return self.temporal is not None

    def pixel_frames(self, latent_frames: int) -> int:
        """ComfyUI's upscale_ratio[0]: 4T-3 (Wan, Hunyuan), 8T-7 (LTXV)."""
        t = self.temporal or 1
        return max(0, latent_frames * t - (t - 1))

    def latent_frames(self, pixel_frames: int) -> int:
        """ComfyUI's downscale_ratio[0]: floor((F + t - 1) / t)."""
        t = self.temporal or 1
        return max(0, (pixel_frames + t - 1) // t)
