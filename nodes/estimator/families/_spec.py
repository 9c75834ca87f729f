"""The shapes a family module fills in (families/<group>.py): its architecture numbers (Family), its VAEs
(VaeFamily), its file-name rules (Rule). Nothing here knows any one family."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, NamedTuple

from ..model_info import (AUDIO_ENCODER, CHECKPOINT, CLIP_VISION, CONTROLNET, DIFFUSION, LORA, TEXT_ENCODER,
                          UNKNOWN, VAE)

__all__ = ["AUDIO_ENCODER", "CHECKPOINT", "CLIP_VISION", "CONTROLNET", "DIFFUSION", "LORA", "TEXT_ENCODER",
           "UNKNOWN", "UPSCALER", "IPADAPTER", "PULID", "INSTANTID", "IPADAPTER_FLUX", "PHOTOMAKER", "BRUSHNET",
           "HYPERLORA", "LLLITE", "HELD_BY_PACK",
           "VAE", "Detector", "Family",
           "Found", "Rule", "VaeFamily", "_r", "all_families"]

UPSCALER = "upscaler"  # upscale models have no ModelInfo kind of their own: a name-rule role
IPADAPTER = "ipadapter"  # IP-Adapter files (models/ipadapter), loaded by ComfyUI_IPAdapter_plus: a name-rule role
PULID = "pulid"  # PuLID Flux (models/pulid) and its EVA CLIP, loaded by ComfyUI-PuLID-Flux: a name-rule role
INSTANTID = "instantid"  # InstantID's IP-Adapter (models/instantid), loaded by ComfyUI_InstantID: a name-rule role
# InstantX's Flux IP-Adapter (models/ipadapter-flux) and its SigLIP, loaded by ComfyUI-IPAdapter-Flux: a name-rule role
IPADAPTER_FLUX = "ipadapter_flux"
PHOTOMAKER = "photomaker"  # PhotoMaker files (models/photomaker) as ComfyUI-PhotoMaker-Plus holds them: a name-rule role
BRUSHNET = "brushnet"  # BrushNet models (models/inpaint) as ComfyUI-BrushNet dispatches them: a name-rule role
HYPERLORA = "hyperlora"  # HyperLoRA (models/hyper_lora/hyper_lora) as ComfyUI-HyperLoRA loads it: a name-rule role
# ControlNet-LLLite modules (the pack's own models/ folder), set as the model's attention patches: a name-rule role
LLLITE = "lllite"
# kinds a node pack moves to the GPU itself and keeps there while the model it patches samples: working memory of
# the sampling stage, never streamed (stages/sample.py); a ModelRef of one has that kind as its role
HELD_BY_PACK = (IPADAPTER, PULID, INSTANTID, IPADAPTER_FLUX, PHOTOMAKER, BRUSHNET, HYPERLORA, LLLITE)


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


@dataclass(frozen=True)
class Detector:
    """A header test as data, kept in its family's module (ComfyUI-GGUF keeps its detection so: keys_detect /
    keys_banned): the file is the family's when it has every key of one group of `keys` and none of `banned`;
    `read(view)` then reads the numbers into a Found (or returns None: not this family after all). The view has
    has / shape / dim / count_blocks and `name`, the file name. `order`: the line of ComfyUI 0.33.0's
    comfy/model_detection.py whose test it mirrors; ordered detectors run in that order, then the rest in module
    order (registry.detectors)."""
    keys: tuple[tuple[str, ...], ...]
    read: Callable[..., "Found | None"]
    banned: tuple[str, ...] = ()
    order: int | None = None

    def __call__(self, v) -> "Found | None":
        if not any(all(v.has(k) for k in group) for group in self.keys) or any(v.has(k) for k in self.banned):
            return None
        return self.read(v)


def all_families() -> Mapping[str, Family]:
    """Every module's families (registry.FAMILIES), for a detector whose keys cover several modules' families."""
    from .registry import FAMILIES  # noqa: PLC0415  (the registry imports the family modules)
    return FAMILIES


class Rule(NamedTuple):
    pattern: str  # searched in the lower-cased path
    family: str  # FAMILIES id where there is one
    label: str
    params: int | None  # canonical count; None: from the name's size token (or the family's catalogue entry)
    source: str  # where `params` comes from
    sized: bool = False  # the pattern names the size ("qwen3 4b"): the name's size token is that size
    largest: bool = False  # `params` is the family's largest size, assumed when the name gives none (an upper bound)


def _r(pattern, family, label, params=None, source="", sized=False, largest=False) -> Rule:
    return Rule(pattern, family, label, params, source, sized, largest)


@dataclass(frozen=True)
class LiveVae:
    """How a VAE ComfyUI has built (comfy.sd.VAE) is this family: its first_stage_model class ("module.Class";
    a leading "." matches the end of the name, a bare "Class" the class name alone) and what the VAE reports
    (latent_channels and the spatial compression must be the family's; latent_dim, when given, and then the
    temporal compression too). A
    plain KL decoder (plain_decoder) is comfy.ldm.modules.diffusionmodules.model.Decoder without a batch-norm
    latent (Flux.2's VAE has one). Read by comfy_bridge.models.vae_family_of inside ComfyUI."""
    classes: tuple[str, ...]
    latent_dim: int | None = None
    plain_decoder: bool = False
    check_channels: bool = True


# Constants from ComfyUI 0.8.0 comfy/sd.py, class VAE.__init__ branches
@dataclass(frozen=True)
class VaeFamily:
    id: str
    label: str
    latent_channels: int
    spatial: int  # pixels per latent pixel (upscale_ratio[-1])
    temporal: int | None  # pixel frames per latent frame, None for image VAEs
    comfy_class: str  # first_stage_model class ComfyUI builds
    live: LiveVae | None = None  # how a VAE ComfyUI built is recognised (None: not recognised live)
    # ComfyUI builds it as AutoencoderKL / AutoencodingEngine: working dtypes [bf16, fp32] (fp32 on a card without
    # bf16, sd.py:672-677 / :810-817) and VAE_KL_MEM_RATIO 2.73 on AMD (sd.py:492-498 in 0.33.0)
    kl: bool = False

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
