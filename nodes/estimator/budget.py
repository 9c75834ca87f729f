"""Workload + Device -> Budget: per-stage peaks, breakdown, verdict, remedies, cheapest card.

How ComfyUI runs a workflow, and so what must be on the GPU at once (COMFYUI-NOTES §1.6-1.10):
- stages run in turn (text encode, sample, decode); a model no longer needed is offloaded when
  memory is short (smart memory), so the peak is the max over stages, not a sum;
- Wan 2.2 A14B's two experts are two sampling stages, loaded in turn;
- weights are loaded at the dtype ComfyUI picks: a `weight_dtype` widget overrides the file; an
  fp8 file is upcast to 16 bit on a GPU without fp8 compute when the 16-bit copy fits
  (model_management.unet_dtype); scaled-fp8 and GGUF files stay quantized; text encoders load at
  fp16 except T5/umT5, which keep the file's dtype; GGUF dequantizes one layer at a time, so the
  largest layer's 16-bit copy is working memory;
- CFG > 1 evaluates cond and uncond; ComfyUI batches them when memory allows
  (samplers.py:263-274) and runs them one after another when it does not;
- classic memory management: weights that do not fit are streamed from RAM ("loaded partially",
  several times slower); Dynamic VRAM (ComfyUI 0.13+, comfy-aimdo): weights are elastic and what
  must fit is working memory plus headroom.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping

from . import host_memory, memory
from .catalogue import catalogue_info
from .errors import ModelFileError, VramBudgetError
from .families import describe
from .gpus import Card, cheapest_card_that_fits
from .model_info import (AUDIO_ENCODER, CHECKPOINT, CLIP_VISION, CONTROLNET, DIFFUSION, LORA, TEXT_ENCODER, UNKNOWN,
                         VAE, ModelInfo)
from .units import GiB, MiB, fmt_gib
from .workload import (
    AUDIO_ENCODE, CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, TRAIN, UPSCALE, VAE_DECODE, VAE_ENCODE, LatentShape, ModelRef, Stage,
    Workload,
)

# CUDA context + cuBLAS/cuDNN handles: "the CUDA context takes a few hundred MB more before any
# model loads" (FACTS.md). 400 MiB until a GPU measurement corrects it (docs/working-memory.md).
CUDA_CONTEXT_BYTES = 400 * MiB
# ComfyUI's extra reserved VRAM on Linux (model_management.py:568 EXTRA_RESERVED_VRAM, 400 MiB);
# under Dynamic VRAM it is the headroom kept free beside working memory.
COMFY_RESERVE_BYTES = 400 * MiB
TIGHT_FRACTION = 0.10  # "tight" = less than 10 % of the card left over (issue: fits / tight / won't fit)

Resolver = Callable[[str, str], "str | None"]

# Quantized formats ComfyUI (or the pack that loads them: nunchaku, bitsandbytes) keeps at their
# stored size, dequantizing per layer: weights on the GPU = the file's bytes.
KEPT_QUANTIZED = ("scaled", "nvfp4", "int8", "int4", "nf4", "mxfp4", "fp4", "awq", "gptq", "svdq", "int8/fp4")
# UNETLoader weight_dtype options, and WanVideoWrapper's `quantization` options (1 byte/param too).
FP8_WIDGETS = {"fp8_e4m3fn", "fp8_e4m3fn_fast", "fp8_e5m2", "fp8_e4m3fn_scaled", "fp8_e4m3fn_scaled_fast",
               "fp8_e5m2_scaled"}


@dataclass(frozen=True)
class Device:
    """The card a workflow is estimated for. Bytes."""

    name: str
    total_bytes: int  # capacity as PyTorch reports it
    other_processes_bytes: int = 0  # held by other processes on the card
    reserved_unallocated_bytes: int = 0  # PyTorch cache held but unallocated (fragmentation)
    held_by_models_bytes: int = 0  # weights ComfyUI has loaded now (it unloads them when needed)
    fp8_compute: bool = True
    memory_mode: str = "classic"  # "classic" | "dynamic"
    lowvram: bool = False  # --lowvram / --novram: text encoders stay on the CPU
    te_cpu_reason: str = ""  # text encoders run on the CPU for another reason (ComfyUI's text_encoder_device)
    bf16: bool = True  # the card computes in bf16 (Ampere+); else ComfyUI runs KL VAEs in fp32
    reserve_bytes: int = COMFY_RESERVE_BYTES  # --reserve-vram
    context_bytes: int = CUDA_CONTEXT_BYTES
    source: str = "catalogue"  # "catalogue" | "--vram" | "live"
    vram_state: str = "normal"  # normal | low | no | high | gpu_only (ComfyUI's launch flags)
    cpu_vae: bool = False  # --cpu-vae
    smart_memory: bool = True  # --disable-smart-memory sets False
    flops: float = 165.2e12  # dense 16-bit tensor FLOP/s (gpus.Card.tflops), for the speed model
    host_bytes_per_s: float = 25.2e9  # host link, effective (gpus.PCIE)
    host: "host_memory.Host | None" = None  # the machine's RAM / swap; None: not known (the answer says what it assumes)
    # ComfyUI computes diffusion models in fp32 on this card (unet_manual_cast returns float32 when neither
    # fp16 nor bf16 is "supported": Pascal 10-series on Linux, GTX 16xx; model_management.py:845-867 /
    # :1050 / :1159 and should_use_fp16's 10- and 16-series lists, :1403-1409 in 0.8): activations take 4 bytes
    compute_fp32_reason: str = ""
    # Dynamic VRAM's free headroom: None = comfy-aimdo's 256 MiB; ComfyUI 0.33 hands --reserve-vram to aimdo
    # as its headroom (main.py:99-101) and adds --vram-headroom on every device (main.py:305)
    aimdo_headroom_bytes: int | None = None
    vram_headroom_bytes: int = 0

    @classmethod
    def from_card(cls, card: Card, **kw) -> "Device":
        kw.setdefault("flops", card.flops or 165.2e12)
        kw.setdefault("host_bytes_per_s", card.host_bytes_per_s)
        kw.setdefault("bf16", card.bf16)
        return cls(name=card.name, total_bytes=card.total_bytes, fp8_compute=card.fp8_compute, **kw)

    @property
    def capacity_bytes(self) -> int:
        """What this ComfyUI can use: the card minus other processes."""
        return max(0, self.total_bytes - self.other_processes_bytes)


@dataclass(frozen=True)
class Item:
    label: str
    bytes: int
    category: str  # "weights" | "working" | "overhead"
    assumption: str = ""
    model: ModelInfo | None = None  # for weights: the model (or checkpoint part) they belong to

    def to_dict(self) -> dict:
        return {"label": self.label, "bytes": self.bytes, "category": self.category, "assumption": self.assumption}


@dataclass(frozen=True)
class StageBudget:
    stage: Stage
    title: str
    items: tuple[Item, ...]
    peak_bytes: int  # everything on the GPU at this stage's peak
    min_peak_bytes: int  # with cond/uncond run one after another (ComfyUI's fallback when short)
    notes: tuple[str, ...] = ()
    batch_factor: int = 1  # 2 when cond+uncond are batched

    @property
    def weights_bytes(self) -> int:
        return sum(i.bytes for i in self.items if i.category == "weights")

    @property
    def working_bytes(self) -> int:
        return sum(i.bytes for i in self.items if i.category == "working")

    @property
    def overhead_bytes(self) -> int:
        return sum(i.bytes for i in self.items if i.category == "overhead")

    def to_dict(self) -> dict:
        return {
            "kind": self.stage.kind, "node_id": self.stage.node_id, "node_type": self.stage.node_type,
            "title": self.title, "peak_bytes": self.peak_bytes, "min_peak_bytes": self.min_peak_bytes,
            "weights_bytes": self.weights_bytes, "working_bytes": self.working_bytes,
            "overhead_bytes": self.overhead_bytes, "items": [i.to_dict() for i in self.items],
            "notes": list(self.notes),
        }


VERDICTS = ("fits", "tight", "runs_slower", "oom", "unknown")  # stable values of Budget.verdict / --json


@dataclass(frozen=True)
class Missing:
    """A model the estimate could not price: what it is, where ComfyUI looks for it, how to fix it."""

    name: str
    folder: str
    role: str
    problem: str

    def to_dict(self) -> dict:
        return {"name": self.name, "folder": self.folder, "role": self.role, "problem": self.problem,
                "fix": self.fix}

    @property
    def fix(self) -> str:
        return (f"put {self.name} in ComfyUI's models/{self.folder}/ and point --models-dir at that models/ "
                "folder (in ComfyUI: the file must be in the model folders)")


@dataclass(frozen=True)
class Budget:
    stages: tuple[StageBudget, ...]
    device: Device
    peak_bytes: int  # everything of the peak stage on the GPU at once (all weights resident)
    peak_stage: int  # index into stages (-1 when empty)
    verdict: str  # one of VERDICTS: fits | tight | runs_slower | oom | unknown
    headroom_bytes: int  # capacity - peak (negative: short by)
    offload_bytes: int  # weights ComfyUI streams from RAM at the stage that streams most
    remedies: tuple = ()  # advice.Remedy
    plan: object | None = None  # advice.Plan: the ladder applied in order until it fits
    cheapest_card: Card | None = None
    cheapest_card_with_margin: Card | None = None
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    unknown_nodes: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    runs: tuple = ()  # runtime.StageRun per stage: what ComfyUI does on this card
    tight: bool = False  # under 10 % left, or the uncertainty range reaches past the card
    slowdown: float = 1.0  # sampling time with streaming / all resident (copies overlapped)
    slowdown_high: float = 1.0  # the same with copies not overlapped
    extra_seconds: float = 0.0  # one-off: a VAE OOM + tiled retry, streamed text encoders
    missing: tuple[Missing, ...] = ()
    incomplete: tuple[str, ...] = ()  # stages without a working-memory figure, and why
    peak_high_bytes: int = 0  # upper end of the peak range (allocator, attention backend)
    peak_low_bytes: int = 0  # lower end: the bare traced activations
    outcome: str = "fits"  # the simulated outcome even when the verdict is unknown
    capacity: tuple = ()  # capacity.Capacity answers, when asked for
    host: "host_memory.HostBudget | None" = None  # system RAM per stage (host_memory.py)
    vram_verdict: str = ""  # the verdict on the card alone, before the host side

    @property
    def memory_mode(self) -> str:
        return self.device.memory_mode

    @property
    def complete(self) -> bool:
        return not self.missing and not self.incomplete and bool(self.stages)

    def stop_reason(self, slower_than: float = 0.0) -> str:
        """Why the VRAM Budget node's stop_if_wont_fit should stop the prompt, or "": only when
        ComfyUI would run out of memory even with its offloading (never for a workflow it would
        finish, however slowly), or when sampling would be more than `slower_than` times slower
        (the optimistic end of the range, so that only a sure slowdown stops it)."""
        if self.verdict == "oom":
            return "ComfyUI would run out of memory even with its offloading"
        if slower_than and slower_than > 0 and self.verdict == "runs_slower" and self.slowdown > slower_than:
            return f"streaming weights would make sampling ≈ {self.slowdown:.1f}× slower (limit {slower_than:g}×)"
        return ""

    def to_dict(self) -> dict:
        d = self._vram_dict()
        if self.host is not None:
            for st, r in zip(d["stages"], self.host.runs):
                st["ram_peak_bytes"] = r.ram_bytes
                st["ram"] = r.to_dict()
        return d

    def _vram_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "tight": self.tight,
            "outcome": self.outcome,
            "slowdown": round(self.slowdown, 2),
            "slowdown_high": round(self.slowdown_high, 2),
            "extra_seconds": round(self.extra_seconds, 1),
            "complete": self.complete,
            "missing": [m.to_dict() for m in self.missing],
            "incomplete": list(self.incomplete),
            "peak_low_bytes": self.peak_low_bytes,
            "peak_high_bytes": self.peak_high_bytes,
            "predicted_peak_bytes": max((r.peak_bytes for r in self.runs), default=0),
            "peak_bytes": self.peak_bytes,
            "peak_gib": round(self.peak_bytes / GiB, 2),
            "peak_stage": self.peak_stage,
            "headroom_bytes": self.headroom_bytes,
            "offload_bytes": self.offload_bytes,
            "memory_mode": self.memory_mode,
            "device": {
                "name": self.device.name, "total_bytes": self.device.total_bytes,
                "capacity_bytes": self.device.capacity_bytes, "source": self.device.source,
                "other_processes_bytes": self.device.other_processes_bytes,
                "reserved_unallocated_bytes": self.device.reserved_unallocated_bytes,
                "fp8_compute": self.device.fp8_compute,
            },
            "stages": [{**s.to_dict(), "run": r.to_dict()} if r is not None else s.to_dict()
                       for s, r in zip(self.stages, list(self.runs) + [None] * (len(self.stages) - len(self.runs)))],
            "remedies": [r.to_dict() for r in self.remedies],
            "plan": self.plan.to_dict() if self.plan is not None else None,
            "cheapest_card": _card_dict(self.cheapest_card),
            "cheapest_card_with_margin": _card_dict(self.cheapest_card_with_margin),
            "models": {k: _model_dict(v) for k, v in self.models.items()},
            "unknown_nodes": [{"node_id": i, "class_type": t} for i, t in self.unknown_nodes],
            "notes": list(self.notes),
            **({"capacity": [c.to_dict() for c in self.capacity]} if self.capacity else {}),
            **self._host_dict(),
        }

    def _host_dict(self) -> dict:
        hb = self.host
        if hb is None:
            return {}
        return {
            "vram_verdict": self.vram_verdict or self.verdict,
            "host_outcome": hb.outcome,
            "ram_peak_bytes": hb.peak_bytes,
            "ram_total_bytes": hb.host.ram_total_bytes,
            "swap_total_bytes": hb.host.swap_total_bytes,
            "ram_assumed": not hb.host.known,
            "host": hb.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def _card_dict(card: Card | None):
    if card is None:
        return None
    return {"name": card.name, "nominal_gb": card.nominal_gb, "total_bytes": card.total_bytes, "price_eur_h": card.price_eur_h}


def _model_dict(info: ModelInfo) -> dict:
    return {
        "kind": info.kind, "family": info.family, "label": info.label, "params": info.params,
        "weights_bytes": info.weights_bytes, "dtype": info.dtype, "quantization": info.quantization,
        "source": info.source, "evidence": list(info.evidence), "path": info.path,
    }


# ----------------------------------------------------------------------------------------------
# Model resolution: file on disk (exact) -> catalogue (published numbers) -> unknown.
def _ref_key(ref: ModelRef) -> str:
    return f"{ref.folder}/{ref.name}"


def resolve_model(ref: ModelRef, resolver: Resolver | None) -> tuple[ModelInfo, str | None]:
    """ModelInfo for a workflow's model reference and a note on where it came from (None if exact, or
    inferred from the name: report.py lists those in one note)."""
    if ref.unset:
        return (ModelInfo(kind=UNKNOWN, family="unknown", label=ref.name, params=0, weights_bytes=0, source="unset"),
                None)
    if ref.role == "vae" and ref.name == "pixel_space":  # nodes.py VAELoader: PixelspaceConversionVAE, one scalar
        return (ModelInfo(kind=VAE, family=PIXEL_SPACE_VAE, label="pixel space (no VAE: decode is the identity)",
                          params=1, weights_bytes=4, dtype="F32", source="virtual",
                          evidence=("nodes.py VAELoader 'pixel_space' -> comfy/pixel_space_convert.py",)), None)
    path = None
    if resolver is not None:
        try:
            path = resolver(ref.folder, ref.name)
        except Exception:  # a resolver must never break an estimate
            path = None
    if path:
        try:
            return describe(path), None
        except ModelFileError as exc:
            info = catalogue_info(ref.name, ref.folder)
            if info is not None:
                return info, f"{ref.name}: {exc.problem}; using published figures instead"
            raise
    info = catalogue_info(ref.name, ref.folder)
    if info is not None:
        where = "not found in the model folders" if resolver is not None else "no model folder given"
        cite = info.notes[0] if info.notes else "catalogue"
        return info, f"{ref.name}: {where}; using the published size ({cite})"
    from .name_infer import infer_info  # noqa: PLC0415

    info, why = infer_info(ref.name, ref.role, ref.folder)
    if info is not None:  # source "inferred": report.py lists these names in one note
        return info, None
    return (
        ModelInfo(kind=UNKNOWN, family="unknown", label=ref.name, params=0, weights_bytes=0, source="missing"),
        f"{ref.name}: not found and not in the catalogue; its size is unknown ({why}; the estimate is a lower bound)",
    )


# Parameter split of all-in-one checkpoints known only from the catalogue (a file on disk is split
# exactly by its keys in families.py). Counts of the reference implementations: SD1.5 UNet
# 859,520,964 / CLIP-L text 123,060,480 / VAE 83,653,863; SDXL base UNet 2,567,463,684 /
# CLIP-L + OpenCLIP bigG text 123,060,480 + 694,659,841 / VAE 83,653,863.
CHECKPOINT_SPLITS = {
    "sd15": {"model": (859_520_964, DIFFUSION, "sd15", "SD 1.5 UNet"), "clip": (123_060_480, TEXT_ENCODER, "clip-l", "CLIP-L"),
             "vae": (83_653_863, VAE, "vae-kl4", "SD VAE")},
    "sdxl": {"model": (2_567_463_684, DIFFUSION, "sdxl", "SDXL UNet"),
             "clip": (817_720_321, TEXT_ENCODER, "clip-g", "CLIP-L + CLIP-G"),
             "vae": (83_653_863, VAE, "vae-kl4", "SDXL VAE")},
    # Comfy-Org's Flux all-in-one fp8 checkpoints: Flux transformer + T5-XXL + CLIP-L + the Flux VAE
    # (catalogue P_* counts: 11.9B, 4.76B + 0.123B, 83.8M)
    "flux1-dev": {"model": (11_901_408_320, DIFFUSION, "flux1-dev", "Flux.1 dev"),
                  "clip": (4_762_310_656 + 123_060_480, TEXT_ENCODER, "t5-xxl", "T5-XXL + CLIP-L"),
                  "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
    "flux1-schnell": {"model": (11_891_178_560, DIFFUSION, "flux1-schnell", "Flux.1 schnell"),
                      "clip": (4_762_310_656 + 123_060_480, TEXT_ENCODER, "t5-xxl", "T5-XXL + CLIP-L"),
                      "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
    # SD3.5 Large with its text encoders (sd3.5_large_fp8_scaled): MMDiT 8.1B (model card) + CLIP-L +
    # CLIP-G (OpenCLIP bigG text, 695M) + T5-XXL + the 16-channel VAE
    "sd3": {"model": (8_100_000_000, DIFFUSION, "sd3", "SD3.5 MMDiT"),
            "clip": (123_060_480 + 694_659_841 + 4_762_310_656, TEXT_ENCODER, "t5-xxl", "CLIP-L + CLIP-G + T5-XXL"),
            "vae": (83_819_683, VAE, "vae-kl16", "SD3 VAE")},
    # LTX-Video 2B checkpoints (ltx-video-2b-v0.9*.safetensors): the transformer (1,923,405,472 params:
    # ComfyUI 0.18.2's LTXV at full size, traced weight_bytes 3,846,810,944 at bf16) + the causal video
    # VAE (419,193,649 params, traced: data/vae_memory.json vae-ltxv); no text encoder (T5-XXL loads
    # separately). 4 bytes x both = 9.37 GB, the published size of v0.9 (stored in fp32).
    "ltxv": {"model": (1_923_405_472, DIFFUSION, "ltxv", "LTX-Video 2B transformer"),
             "vae": (419_193_649, VAE, "vae-ltxv", "LTX-Video VAE")},
    # LTX-2 19B checkpoints (ltx-2-19b-*.safetensors): LTXAV with its text connectors (19,585,135,392 params:
    # ComfyUI 0.18.2's LTXAV traced at full size, weight_bytes 39,170,270,784), the video VAE (VideoVAE
    # version 2, 1,246,913,522, data/vae_memory.json vae-ltx2), the audio VAE + vocoder (108,840,948,
    # vae-ltx2-audio) and the Gemma projection LTXAVTextEncoderLoader reads (text_encoders/lt.py:129:
    # Linear(3840*49, 3840) = 722,534,400). 2 bytes x the sum = 43.33 GB, the published 43.3 GB.
    "ltx2": {"model": (19_585_135_392, DIFFUSION, "ltx2", "LTX-2 19B transformer"),
             "vae": (1_246_913_522, VAE, "vae-ltx2", "LTX-2 video VAE"),
             "audio_vae": (108_840_948, VAE, "vae-ltx2-audio", "LTX-2 audio VAE"),
             "clip": (722_534_400, TEXT_ENCODER, "gemma3", "LTX-2 text projection")},
    # ACE-Step v1 3.5B (ace_step_v1_3.5b.safetensors, 7,698,728,878 B published): the transformer (3,322,438,608
    # params: ComfyUI 0.18.2's ACEStep traced, weight_bytes 6,644,877,216), the music DCAE + vocoder
    # (259,817,564: vae-ace traced) and the rest, the UMT5-base text encoder (the published size / 2 - both)
    "ace-step-v1": {"model": (3_322_438_608, DIFFUSION, "ace-step-v1", "ACE-Step v1 transformer"),
                    "clip": (7_698_728_878 // 2 - 3_322_438_608 - 259_817_564, TEXT_ENCODER, "t5-base",
                             "UMT5-base (ACE-Step)"),
                    "vae": (259_817_564, VAE, "vae-ace", "ACE-Step music DCAE + vocoder")},
    # Hunyuan3D 2.1 (hunyuan_3d_v2.1.safetensors): the DiT (3,050,762,768: Hunyuan3Dv2_1 traced, weight_bytes
    # 6,101,525,536), the shape VAE (327,614,977: vae-hunyuan3d traced) and its DINOv2 image encoder
    "hunyuan3d-2.1": {"model": (3_050_762_768, DIFFUSION, "hunyuan3d-2.1", "Hunyuan3D 2.1 DiT"),
                      "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                      # ImageOnlyCheckpointLoader's CLIP_VISION: DINOv2-L (facebook/dinov2-large, 304M params)
                      "clip_vision": (304_368_640, CLIP_VISION, "clip-vision", "DINOv2-L image encoder")},
    # Hunyuan3D 2.0 (hunyuan3d-dit-v2*_fp16): the DiT (Hunyuan3Dv2 traced: 1,113,276,432 params; multiview
    # 1,114,589,200), the shape VAE (327,614,977, vae-hunyuan3d) and DINOv2-giant: the rest of the 2-byte file
    "hunyuan3d-2.0": {"model": (1_113_276_432, DIFFUSION, "hunyuan3d-2.0", "Hunyuan3D 2.0 DiT"),
                      "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                      "clip_vision": (4_928_151_562 // 2 - 1_113_276_432 - 327_614_977, CLIP_VISION, "clip-vision",
                                      "DINOv2-giant image encoder")},
    "hunyuan3d-2.0-mv": {"model": (1_114_589_200, DIFFUSION, "hunyuan3d-2.0-mv", "Hunyuan3D 2.0 multiview DiT"),
                         "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                         "clip_vision": (4_928_474_972 // 2 - 1_114_589_200 - 327_614_977, CLIP_VISION, "clip-vision",
                                         "DINOv2-giant image encoder")},
    # LTX-2.3 22B (ltx-2.3-22b-*.safetensors): LTXAV with its connectors (21,005,004,544 params traced), the
    # video VAE (726,105,969), audio VAE + 48 kHz vocoder (181,785,594) and the dual text projection
    # (1,156,061,184); 2 bytes x the sum = 46.1 GB, the published ~46 GB bf16 file (5947 tensors)
    "ltx2.3": {"model": (21_005_004_544, DIFFUSION, "ltx2.3", "LTX-2.3 22B transformer"),
               "vae": (726_105_969, VAE, "vae-ltx2.3", "LTX-2.3 video VAE"),
               "audio_vae": (181_785_594, VAE, "vae-ltx2.3-audio", "LTX-2.3 audio VAE"),
               "clip": (1_156_061_184, TEXT_ENCODER, "gemma3", "LTX-2.3 text projection")},
    # ACE-Step 1.5 all-in-one (ace_step_1.5_turbo_aio): ACEStep15 (2,436,202,246 params traced), Qwen3 0.6B
    # (595,776,512) + the 1.7B song LM (1,854,243,840; ACEStep15.clip_target), the Oobleck VAE (168,695,426)
    "ace-step-1.5": {"model": (2_436_202_246, DIFFUSION, "ace-step-1.5", "ACE-Step 1.5 DiT"),
                     "clip": (595_776_512 + 1_854_243_840, TEXT_ENCODER, "qwen3", "Qwen3 0.6B + 1.7B LM (ACE-Step 1.5)"),
                     "vae": (168_695_426, VAE, "vae-ace15", "ACE-Step 1.5 audio VAE")},
    # Stable Video Diffusion (svd_xt, fp32): the UNet (1,524,627,120 traced), CLIP-ViT-H with projection
    # (632,076,800) and the temporal VAE (97,742,775); the published 9.56 GB holds ~136M more (not split out)
    "svd": {"model": (1_524_627_120, DIFFUSION, "svd", "SVD UNet"),
            "clip_vision": (632_076_800, CLIP_VISION, "clip-vision", "CLIP-ViT-H image encoder"),
            "vae": (97_742_775, VAE, "vae-svd", "SVD temporal VAE")},
    # Lumina 2 all-in-one (NetaYume): Lumina 2 DiT 2.6B + Gemma 2 2B (2.61B) + the Flux VAE
    "lumina2": {"model": (2_600_000_000, DIFFUSION, "lumina2", "Lumina 2 DiT"),
                "clip": (2_614_341_888, TEXT_ENCODER, "gemma", "Gemma 2 2B"),
                "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
}


PIXEL_SPACE_VAE = "vae-pixel"
FP8_MODEL_ONLY_SPLITS = {"ltx2", "ltx2.3"}  # Lightricks' ltx-2-19b-dev-fp8: transformer fp8, VAEs and projection bf16


def _part(info: ModelInfo, ref: ModelRef) -> ModelInfo:
    if info.kind != CHECKPOINT or not ref.part:
        return info
    if ref.part in info.parts:
        return info.parts[ref.part]
    split = CHECKPOINT_SPLITS.get(info.family, {}).get(ref.part)
    if split is None:
        if ref.part == "clip_vision":  # an image encoder inside a checkpoint this table cannot split: unpriced
            return ModelInfo(kind=UNKNOWN, family="unknown", label=f"{info.label}: image encoder", params=0,
                             weights_bytes=0, source="missing")
        return info
    params, kind, family, label = split
    parts = CHECKPOINT_SPLITS[info.family]
    total = sum(p for p, *_ in parts.values())
    nbytes = int(info.weights_bytes * params / total)
    how = "catalogue checkpoint split by published parameter counts"
    dtype, quant = info.dtype, info.quantization
    if info.family in FP8_MODEL_ONLY_SPLITS and (quant or "").startswith(("fp8", "scaled fp8")):
        # these fp8 all-in-one files quantize the diffusion model only: the other parts keep 2 bytes a
        # param and the model takes the rest of the file
        rest = sum(p for name, (p, *_r) in parts.items() if name != "model")
        if ref.part == "model":
            nbytes = max(params, info.weights_bytes - 2 * rest)
        else:
            nbytes, dtype, quant = 2 * params, "BF16", None
        how += "; in this fp8 file the diffusion model is fp8 and the other parts 16-bit"
    from .families import FAMILIES  # noqa: PLC0415

    arch = FAMILIES[family].arch if family in FAMILIES else {}
    return ModelInfo(kind=kind, family=family, label=f"{label} (from {info.label})", params=params,
                     weights_bytes=nbytes, dtype=dtype, quantization=quant, arch=arch,
                     evidence=(how,), source=info.source)


# ----------------------------------------------------------------------------------------------
# Loaded bytes: what ComfyUI puts on the GPU for a file.
def loaded_weights(info: ModelInfo, ref: ModelRef, device: Device) -> tuple[int, str]:
    """(bytes on the GPU, assumption) following ComfyUI's cast rules."""
    q = info.quantization or ""
    stored = info.weights_bytes
    params = info.params
    dtype = info.dtype or "?"
    if info.source in ("missing", "unset"):
        return 0, "size unknown: not counted (the estimate is a lower bound)"
    if info.kind == DIFFUSION:
        if ref.weight_dtype in FP8_WIDGETS:
            return params, f"weight_dtype {ref.weight_dtype}: 1 byte/param (widget overrides the file's {dtype})"
        if q.startswith("gguf"):
            return stored, f"GGUF {dtype} kept quantized ({stored / max(params, 1) * 8:.1f} bits/param)"
        if q.startswith(KEPT_QUANTIZED):
            return stored, f"{q} file kept quantized"
        if q.startswith("fp8"):
            if device.fp8_compute:
                return stored, f"{q} kept (this GPU computes in fp8)"
            max_weights = device.total_bytes * 0.88 - (0.8 * GiB + device.reserve_bytes)
            if params * 2 > max_weights:
                return stored, f"{q} kept: the 16-bit copy would not fit (model_management.unet_dtype)"
            return params * 2, f"{q} file upcast to 16 bit: no fp8 compute on this GPU and the 16-bit copy fits"
        return params * 2, f"16-bit ({'bf16/fp16' if dtype in ('F32', 'F64') else dtype})"
    if info.kind == TEXT_ENCODER:
        if ref.weight_dtype in FP8_WIDGETS:  # WanVideoWrapper's T5 loader `quantization`
            return params, f"quantization {ref.weight_dtype} on the loader: 1 byte/param"
        if q.startswith("gguf"):
            return stored, f"GGUF {dtype} kept quantized"
        if ("fp8" in q) and info.family in ("t5-xxl", "umt5-xxl") and info.source == "catalogue":
            # a published file size counts the encoder.embed_tokens copy ComfyUI does not load
            # (text_encoders/t5.py:234): the loaded weights are the parameters at 1 byte
            return min(stored, params), f"{q} kept (T5 keeps the file's dtype): {params / 1e9:.2f}B params × 1 byte"
        if q.startswith(KEPT_QUANTIZED):
            return stored, f"{q} kept"
        if q.startswith("fp8") and info.family in ("t5-xxl", "umt5-xxl"):
            return stored, f"{q} kept (T5 keeps the file's dtype)"
        return params * 2, "fp16 (ComfyUI's text-encoder dtype)"
    if info.kind == VAE and vae_dtype_bytes(info.family, device) == 4:
        return params * 4, "fp32: no bf16 on this GPU (ComfyUI's vae_dtype for this VAE)"
    if info.kind in (VAE, CONTROLNET, CLIP_VISION):
        return params * 2, "16-bit"
    if info.kind == AUDIO_ENCODER:  # audio_encoders.py:11-13: the text encoder's device and dtype
        if info.family == "whisper-encoder" and params and stored > params * 2 * 1.05:
            return params * 2, ("fp16 (ComfyUI's text-encoder dtype); the encoder only: the file's Whisper decoder is "
                                "not loaded (load_sd strict=False)")
        return (params * 2 or stored), "fp16 (ComfyUI's text-encoder dtype, audio_encoders.py:11-13)"
    if info.kind == LORA:
        return stored, f"LoRA patch tensors ({dtype}) on the GPU while they are merged"
    return stored, "unknown architecture: bytes from the file"


# ----------------------------------------------------------------------------------------------
def estimate(
    workload: Workload,
    device: Device,
    resolver: Resolver | None = None,
    models: Mapping[str, ModelInfo] | None = None,
    remedies: bool = True,
) -> Budget:
    """The budget of a workload on a device.

    `models`: ModelInfos already resolved by the caller, keyed "folder/name" as the workload's
    ModelRefs name them (a planner pricing many sizes of the same models resolves them once);
    refs not in it are resolved as usual. `remedies=False` skips the remedy ladder (a search
    that only needs the peaks).
    """
    notes: list[str] = list(workload.notes)
    infos: dict[str, ModelInfo] = {}

    def info_for(ref: ModelRef) -> ModelInfo:
        key = _ref_key(ref)
        if key not in infos and models is not None and key in models:
            infos[key] = models[key]
        if key not in infos:
            try:
                info, note = resolve_model(ref, resolver)
            except ModelFileError as exc:
                info = ModelInfo(kind=UNKNOWN, family="unknown", label=ref.name, params=0, weights_bytes=0, source="error")
                note = f"{exc}: its size is unknown (the estimate is a lower bound)"
            if info.source == "missing" and ref.role == "lora" and key in lora_base:
                base = info_for(lora_base[key])
                if base.kind == DIFFUSION and base.family != "unknown":
                    from .name_infer import lora_on  # noqa: PLC0415

                    guess, _why = lora_on(ref.name, base.family, base.label)
                    if guess is not None:
                        info, note = guess, None
            infos[key] = info
            if note:
                notes.append(note)
        return _part(infos[key], ref)

    # A LoRA whose name does not say its base model: the model it patches in the graph does.
    lora_base: dict[str, ModelRef] = {}
    for stage in workload.stages:
        bases = [r for r in stage.models if r.role == "diffusion" or (r.role == "checkpoint" and r.part == "model")]
        for r in stage.models:
            if r.role == "lora" and bases:
                lora_base.setdefault(_ref_key(r), bases[0])

    stage_budgets: list[StageBudget] = []
    seen_text: dict[tuple, int] = {}
    for stage in workload.stages:
        sb = _stage_budget(stage, device, info_for)
        if sb is None:
            continue
        if stage.kind == TEXT_ENCODE:  # positive and negative prompts on the same encoders: one entry
            key = tuple(sorted(_ref_key(r) for r in stage.models))
            if key in seen_text:
                idx = seen_text[key]
                prev = stage_budgets[idx]
                stage_budgets[idx] = replace(prev, title=_plural_prompts(prev.title))
                continue
            seen_text[key] = len(stage_budgets)
        stage_budgets.append(sb)

    capacity = device.capacity_bytes
    if stage_budgets:
        peak_stage = max(range(len(stage_budgets)), key=lambda i: stage_budgets[i].peak_bytes)
        peak = stage_budgets[peak_stage].peak_bytes
        min_peak = max(s.min_peak_bytes for s in stage_budgets)
    else:
        peak_stage, peak, min_peak = -1, 0, 0
        notes.append("no stage that uses the GPU was found in this workflow")

    # What ComfyUI does with it on this card (runtime.py), stage by stage.
    from . import runtime  # noqa: PLC0415

    runs = runtime.simulate(stage_budgets, device) if stage_budgets else []
    outcome, slowdown, slowdown_high, extra = runtime.overall(runs)
    missing, incomplete = _gaps(workload, infos, stage_budgets)
    offload = max((r.streamed_bytes for r in runs), default=0)
    headroom = capacity - peak
    # Range: the working memory carries memory.calibration(family) (allocator, untraced transients)
    # fitted on published runs; the low end is the bare trace, the high end 1.1 × the factor.
    if stage_budgets:
        sb = stage_budgets[peak_stage]
        model = next((it.model for it in sb.items if it.model is not None and it.model.kind == DIFFUSION), None)
        k = memory.calibration(model.family) if (model is not None and sb.stage.kind == SAMPLE) else 1.0
        work = sb.working_bytes
        peak_low = peak - int(work * (1 - memory.ACTIVATION_LOW / k))
        peak_high = peak + int(work * (memory.ACTIVATION_HIGH_OVER - 1)) + (0 if k > 1 else int(0.1 * work))
    else:
        peak_low = peak_high = peak
    if outcome == runtime.FITS:
        tight = headroom < TIGHT_FRACTION * capacity or peak_high > capacity
    elif outcome == runtime.RUNS_SLOWER:
        tight = max((r.peak_bytes for r in runs), default=0) > (1 - TIGHT_FRACTION) * capacity
    else:
        tight = False
    if missing or incomplete or outcome == runtime.UNKNOWN:
        verdict = "unknown"
        parts = [f"{m.name} ({m.problem})" for m in missing[:5]] + list(incomplete[:3])
        more = len(missing) - 5 + max(0, len(incomplete) - 3)
        why = "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
        notes.insert(0, f"can't tell: {why}. The peak shown is a lower bound (at least {fmt_gib(peak)})")
    elif outcome == runtime.FITS:
        verdict = "tight" if tight else "fits"
    else:
        verdict = outcome
    for sb, run in zip(stage_budgets, runs):
        notes.extend(run.explanation)
        if sb.stage.kind == TRAIN or sb.stage.generate_tokens:  # their remedies live in the stage's notes
            notes.extend(sb.notes)

    # System RAM at each stage (host_memory.py): a stage that needs more than RAM + swap is an OOM
    # whatever the card; one that swaps runs slower. A lower bound (can't tell) that is already too
    # much for the RAM is an OOM too.
    vram_verdict = verdict
    hb = None
    images = host_memory.image_bytes(stage_budgets)
    if stage_budgets:
        hb = host_memory.simulate(stage_budgets, runs, device, device.host, images)
        why = [hb.why] if hb.why else []  # the stage where the run stops
        if hb.outcome == host_memory.OOM:
            verdict = "oom"
            notes[:0] = why
        elif hb.outcome in (host_memory.SWAPPING, host_memory.THRASHING):
            if verdict in ("fits", "tight"):
                verdict = "runs_slower"
            notes.extend(why)
        notes.extend(hb.notes)

    rent = bool(stage_budgets) and outcome != runtime.FITS  # never a rental for what fits the user's own card
    budget = Budget(
        stages=tuple(stage_budgets), device=device, peak_bytes=peak, peak_stage=peak_stage, verdict=verdict,
        headroom_bytes=headroom, offload_bytes=offload,
        cheapest_card=cheapest_card_that_fits(min_peak + device.other_processes_bytes) if rent else None,
        cheapest_card_with_margin=cheapest_card_that_fits(int(peak / (1 - TIGHT_FRACTION))) if rent else None,
        models=dict(infos), unknown_nodes=workload.unknown_nodes, notes=tuple(dict.fromkeys(notes)),
        runs=tuple(runs), tight=tight, slowdown=slowdown, slowdown_high=slowdown_high, extra_seconds=extra, missing=tuple(missing),
        incomplete=tuple(incomplete), peak_high_bytes=peak_high, peak_low_bytes=peak_low, outcome=outcome,
        host=hb, vram_verdict=vram_verdict,
    )
    if not remedies:
        return budget  # a search that only needs the verdicts: no RAM fixes either
    if hb is not None:  # the RAM fixes, each a re-simulation of the host side
        budget = replace(budget, host=replace(hb, remedies=tuple(
            host_memory.host_remedies(stage_budgets, runs, device, hb, images))))
    if rent and verdict != "unknown":  # no card advice on a lower bound
        card, margin = cheapest_cards(workload, device, resolver, infos)
        budget = replace(budget, cheapest_card=card, cheapest_card_with_margin=margin)
    else:
        budget = replace(budget, cheapest_card=None, cheapest_card_with_margin=None)
    from .advice import recommended_plan, remedies_for  # noqa: PLC0415  (advice builds on this module)

    # the VRAM ladder works on the card's verdict; the RAM fixes are the host's own (host.remedies)
    on_card = replace(budget, verdict=vram_verdict)
    on_card = replace(on_card, remedies=tuple(remedies_for(on_card, workload, resolver)))
    return replace(budget, remedies=on_card.remedies, plan=recommended_plan(on_card))


def cheapest_cards(workload: Workload, device: Device, resolver: Resolver | None = None,
                   models: Mapping[str, ModelInfo] | None = None) -> tuple[Card | None, Card | None]:
    """(cheapest rental card on which ComfyUI keeps everything resident, cheapest where it also
    has 10 % to spare), by simulating the workflow on each card of the guide's lineup with the
    same launch flags: "fits as is" means what ComfyUI does there, not a capacity comparison."""
    from .gpus import CARDS, RENTAL_LINEUP  # noqa: PLC0415

    lineup = sorted((c for c in CARDS if c.name in RENTAL_LINEUP),
                    key=lambda c: (c.price_eur_h is None, c.price_eur_h or 0.0, c.nominal_gb))
    card = margin = None
    for candidate in lineup:
        dev = Device.from_card(candidate, memory_mode=device.memory_mode, reserve_bytes=device.reserve_bytes,
                               vram_state=device.vram_state, lowvram=device.lowvram, cpu_vae=device.cpu_vae,
                               smart_memory=device.smart_memory)
        b = estimate(workload, dev, resolver, models=models, remedies=False)
        if b.outcome == "fits" and card is None:
            card = candidate
        if b.verdict == "fits" and margin is None:
            margin = candidate
        if card is not None and margin is not None:
            break
    return card, margin


def _gaps(workload: Workload, infos: Mapping[str, ModelInfo], stage_budgets) -> tuple[list[Missing], list[str]]:
    """Models that could not be priced (never counted as 0 bytes with a confident verdict) and
    stages without a working-memory figure."""
    missing: list[Missing] = []
    seen = set()
    for stage in workload.stages:
        for ref in stage.models:
            key = _ref_key(ref)
            info = infos.get(key)
            if info is None or key in seen or (ref.role == "lora" and ref.strength == 0):
                continue
            if info.source in ("missing", "error", "unset") or (info.kind == UNKNOWN and not info.weights_bytes):
                seen.add(key)
                problem = ("not found in the model folders and not in the catalogue" if info.source == "missing"
                           else "could not be read" if info.source == "error"
                           else "the loader names no file this estimate can see" if info.source == "unset"
                           else "architecture not recognised")
                missing.append(Missing(ref.name, ref.folder, ref.role, problem))
    incomplete = []
    for sb in stage_budgets:  # a stage that needs working memory and has none was not priced
        kind = sb.stage.kind
        if kind in (SAMPLE, VAE_DECODE, VAE_ENCODE) and sb.working_bytes == 0:
            why = next((n for n in sb.notes if "not estimated" in n or "unknown" in n), "working memory unknown")
            incomplete.append(f"{sb.title}: {why}")
        elif kind == TEXT_ENCODE and not any(it.model is not None for it in sb.items if it.category == "weights"):
            incomplete.append(f"{sb.title}: no text encoder identified")
        elif kind == CLIP_VISION_ENCODE and not any(it.model is not None for it in sb.items if it.category == "weights"):
            incomplete.append(f"{sb.title}: no image encoder identified")
        elif kind == AUDIO_ENCODE and not any(it.model is not None and it.model.source not in ("missing", "unset")
                                              for it in sb.items if it.category == "weights"):
            incomplete.append(f"{sb.title}: no audio encoder identified")
        elif kind == UPSCALE and sb.working_bytes == 0:
            why = next((n for n in sb.notes if "not estimated" in n), "working memory unknown")
            incomplete.append(f"{sb.title}: {why}")
        elif kind == TRAIN and not any(it.category == "working" and "activations" in it.label for it in sb.items):
            why = next((n for n in sb.notes if "not estimated" in n), "training terms unknown")
            incomplete.append(f"{sb.title}: {why}")
    return missing, incomplete


def _plural_prompts(title: str) -> str:
    if title.endswith(" prompts)"):
        n = int(title.rsplit("(", 1)[1].split()[0]) + 1
        return title.rsplit("(", 1)[0] + f"({n} prompts)"
    return f"{title} (2 prompts)"


def _overhead_items(device: Device) -> list[Item]:
    return [Item("CUDA context + library workspaces", device.context_bytes, "overhead",
                 "a few hundred MB before any model loads (FACTS.md)")]


def _stage_budget(stage: Stage, device: Device, info_for) -> StageBudget | None:
    if stage.kind == TEXT_ENCODE:
        return _text_stage(stage, device, info_for)
    if stage.kind == SAMPLE:
        return _sample_stage(stage, device, info_for)
    if stage.kind in (VAE_DECODE, VAE_ENCODE):
        return _vae_stage(stage, device, info_for)
    if stage.kind == CLIP_VISION_ENCODE:
        return _simple_stage(stage, device, info_for, "CLIP vision encode")
    if stage.kind == AUDIO_ENCODE:
        return _audio_stage(stage, device, info_for)
    if stage.kind == TRAIN:
        return _train_stage(stage, device, info_for)
    if stage.kind == UPSCALE:
        return _upscale_stage(stage, device, info_for)
    return None


UPSCALE_TILE = 512  # nodes_upscale_model.py:78-79: 512 px tiles, 32 px overlap, halved on OOM down to 128


def _upscale_stage(stage: Stage, device: Device, info_for) -> StageBudget:
    """ImageUpscaleWithModel: the model's weights and what ComfyUI frees for it before it runs
    (comfy_extras/nodes_upscale_model.py:70-73, 0.18.2): 512²·3 px · 4 bytes · scale · 384 for one tile's
    activations ("an estimate of how much some of these models take") plus the input image on the device;
    the upscaled image is assembled on the CPU (comfy.utils.tiled_scale, output_device)."""
    items, infos, notes = _weights_items(stage, device, info_for, ("upscale_model",))
    model = next(iter(infos), None)
    title = f"Upscale: {model.label}" if model else "Upscale"
    if model is None or not stage.images:
        notes.append("working memory not estimated: " + ("no upscale model identified" if model is None
                                                         else "image size unknown"))
        return _finish(stage, title, items + _overhead_items(device), notes)
    scale = model.arch.get("scale") if isinstance(model.arch.get("scale"), int) else None
    found = re.search(r"(?<![0-9a-z])([1-8])x(?![a-z0-9])|x([1-8])(?![0-9])", f"{model.label} {stage.models[0].name}".lower())
    scale = scale or (int(found.group(1) or found.group(2)) if found else 4)
    pixels = sum(w * h for w, h in stage.images)
    work = int(UPSCALE_TILE * UPSCALE_TILE * 3 * 4 * scale * 384) + pixels * 3 * 4
    items.append(Item("upscale activations (ComfyUI's reservation)", work, "working",
                      f"{scale}x model, {len(stage.images)} image(s) of {stage.images[0][0]}×{stage.images[0][1]}: "
                      f"512² px tiles × 3 × 4 bytes × {scale} × 384 + the input on the device "
                      "(nodes_upscale_model.py:70-73)"))
    return _finish(stage, title, items + _overhead_items(device), notes)


def _train_stage(stage: Stage, device: Device, info_for) -> StageBudget:
    """TrainLoraNode (comfy_extras/nodes_train.py, ComfyUI 0.18.2): frozen weights as loaded, the
    adapter, its gradients and optimizer states in lora_dtype, and forward + backward activations
    (training.py has the rules and their file:line)."""
    from . import training  # noqa: PLC0415

    items, infos, notes = _weights_items(stage, device, info_for, ("diffusion", "lora"))
    model = next((i for i in infos if i.kind == DIFFUSION), None)
    t = dict(stage.train or {})
    title = f"Train LoRA: {model.label}" if model else "Train LoRA"
    if model is None:
        notes.append("training terms not estimated: no diffusion model identified")
        return _finish(stage, title, items + _overhead_items(device), notes)
    rank, algorithm = int(t.get("rank") or 8), str(t.get("algorithm") or "LoRA")
    lora_dtype, optimizer = str(t.get("lora_dtype") or "bf16"), str(t.get("optimizer") or "AdamW")
    trainable, how = _trainable_params(model, rank, algorithm)
    if trainable is None:
        notes.append(f"training terms not estimated: {how}")
        return _finish(stage, title, items + _overhead_items(device), notes)
    acts, acts_how = _train_activations(model, stage, t)
    tb = training.comfy_lora_training(0, trainable, lora_dtype, optimizer, acts or 0)
    unit = tb.items["adapter"]
    items.append(Item(f"{algorithm} adapter (rank {rank}, {trainable / 1e6:.1f}M params, {lora_dtype})", unit,
                      "working", how))
    items.append(Item("gradients", tb.items["gradients"], "working", f"one per adapter parameter, {lora_dtype}"))
    if tb.items["optimizer_states"]:
        items.append(Item(f"{optimizer} states", tb.items["optimizer_states"], "working",
                          f"{training.COMFY_STATES[optimizer]} × zeros_like(param) in {lora_dtype}, no fp32 master copy "
                          "(nodes_train.py:861-879, :1189-1192)"))
    step = tb.items.get("optimizer_step", 0)
    if acts is None:
        notes.append(f"training activations not estimated: {acts_how}")
    else:
        label = "activations (forward + backward)" if acts >= step else "optimizer step temporary"
        items.append(Item(label, max(acts, step), "working", acts_how if acts >= step else
                          "torch's foreach step makes one parameter-sized temporary, after the activations are freed"))
    ladder = training.comfy_training_ladder(
        int(t.get("batch_size") or 1), int(t.get("grad_accumulation_steps") or 1), bool(t.get("gradient_checkpointing")),
        int(t.get("checkpoint_depth") or 1), str(t.get("training_dtype") or "bf16"), lora_dtype, rank,
        (stage.latent.pixel_width or None) if stage.latent else None, bool(t.get("offloading")))
    if ladder:
        notes.append("if it does not fit, in this order: " + "; ".join(f"{s['what']} ({s['cost']})" for s in ladder))
    notes.append(training.LEAK_HINT)
    if t.get("offloading"):
        notes.append("offloading on: ComfyUI may load the model partially and stream the rest (slower)")
    return _finish(stage, title, items + _overhead_items(device), notes)


def _trainable_params(model: ModelInfo, rank: int, algorithm: str) -> tuple[int | None, str]:
    """Adapter parameters ComfyUI creates: exact from the file's tensors (every >= 2-D weight gets an
    adapter, 1-D weights and biases are trained in full: nodes_train.py:729-734), else LoRA by the
    family's linear layers (typical)."""
    from . import training  # noqa: PLC0415

    if model.path:
        try:
            from .files import inspect_file  # noqa: PLC0415

            inv = inspect_file(model.path)
            n = training.comfy_trainable_params(((x.name, x.shape) for x in inv.tensors.values()), rank, algorithm)
            return n, f"exact from the file's {len(inv.tensors)} tensors (ComfyUI adapts every weight of 2+ dims)"
        except (VramBudgetError, ValueError) as exc:
            return None, f"the model's tensors could not be read ({exc})"
    from .name_infer import lora_linear_sum  # noqa: PLC0415

    found = lora_linear_sum(model.family, model.variant) if algorithm == "LoRA" else None
    if found is None:
        return None, f"the model file is not here and {algorithm} on {model.label} has no typical size"
    linear_sum, what = found
    return rank * linear_sum, f"typical: rank {rank} × Σ(in+out) over {what} (the file is not here)"


def _train_activations(model: ModelInfo, stage: Stage, t: dict) -> tuple[int | None, str]:
    from . import training  # noqa: PLC0415

    latent = stage.latent
    arch = model.arch
    depth, hidden = int(arch.get("depth") or 0), int(arch.get("hidden_size") or 0)
    if latent is None:
        return None, "the latent size is unknown"
    if depth <= 0 or hidden <= 0:
        return None, f"{model.label} has no transformer depth / width to size them"
    tokens = memory.latent_tokens(model.family, arch, latent)
    if model.family.startswith(training.JOINT_ATTENTION):
        tokens += memory.text_tokens_for(model.family)
    dtype_bytes = 4 if str(t.get("training_dtype")) == "fp32" else 2
    per_block = training.dit_block_activation_elements(arch) * dtype_bytes
    batch = max(1, latent.batch)
    per_block_ckpt = bool(t.get("gradient_checkpointing")) and int(t.get("checkpoint_depth") or 1) >= 2
    tracer = memory.LIVE_TRAIN_TRACER.get()
    ckpt_depth = int(t.get("checkpoint_depth") or 1)
    if tracer is not None and model.path and t.get("gradient_checkpointing") and dtype_bytes == 2:
        live = tracer(model.path, latent, batch, memory.text_tokens_for(model.family), ckpt_depth)
        if live is not None:
            value, provenance = live
            return int(value), (f"batch {batch}, {tokens:,} tokens; traced live with {provenance}: forward + backward "
                                f"with the modules at checkpoint_depth {ckpt_depth} recomputed in the backward "
                                "(nodes_train.py:431-466, :505-525)")
    if per_block_ckpt:  # block inputs kept, one block's internals recomputed at a time
        acts = batch * tokens * (depth * hidden * dtype_bytes + per_block)
        how = f"per-block checkpointing (depth {t.get('checkpoint_depth')}): {depth} block inputs + one block"
    else:
        acts = batch * tokens * depth * per_block
        how = ("checkpoint_depth 1 wraps the whole model as one unit (nodes_train.py:431-466): every block's "
               "activations at the backward's peak" if t.get("gradient_checkpointing") else
               "no checkpointing: every block's activations kept for the backward")
    return acts, (f"batch {batch}, {tokens:,} tokens, {depth} blocks; {how}; first-principles formula "
                  "(training.dit_block_activation_elements, uncalibrated)")


def _weights_items(stage: Stage, device: Device, info_for, roles: Iterable[str]) -> tuple[list[Item], list[ModelInfo], list[str]]:
    items, infos, notes = [], [], []
    seen = set()
    for ref in stage.models:
        if ref.role not in roles and not (ref.role == "checkpoint" and ref.part in _roles_to_parts(roles)):
            continue
        key = (_ref_key(ref), ref.part, ref.weight_dtype)
        if key in seen:
            continue
        seen.add(key)
        info = info_for(ref)
        if ref.role == "lora" and ref.strength == 0:
            notes.append(f"LoRA {ref.name} has strength 0: ComfyUI skips it")
            continue
        if ref.role == "text_encoder" and (ref.device == "cpu" or device.lowvram or device.te_cpu_reason):
            why = ("device=cpu on the loader" if ref.device == "cpu" else
                   "--lowvram keeps text encoders on the CPU" if device.lowvram else device.te_cpu_reason)
            items.append(Item(f"{info.label} [{ref.name}]", 0, "weights", f"runs on the CPU ({why})", info))
            infos.append(info)
            continue
        elsewhere = _placed_elsewhere(ref)
        if elsewhere:
            items.append(Item(f"{info.label} [{ref.name}]", 0, "weights", elsewhere, info))
            infos.append(info)
            continue
        nbytes, assumption = loaded_weights(info, ref, device)
        if ref.offload_bytes and nbytes:
            kept = min(nbytes, ref.offload_bytes)
            nbytes -= kept
            assumption += f"; DisTorch virtual VRAM keeps {fmt_gib(kept)} of it in RAM (streamed in)"
        items.append(Item(f"{info.label} [{ref.name}]", nbytes, "weights", assumption, info))
        infos.append(info)
    return items, infos, notes


def _placed_elsewhere(ref: ModelRef) -> str | None:
    """A loader that puts the model on the CPU or on another GPU (ComfyUI-MultiGPU `device`):
    it takes nothing on this card. The card budgeted is the first GPU (cuda:0)."""
    dev = (ref.device or "").strip().lower()
    if ref.role != "text_encoder" and dev == "cpu":
        return "placed on the CPU by its loader (device = cpu): not on this GPU"
    if dev.startswith("cuda:") and dev not in ("cuda:0",):
        return f"placed on {dev} by its loader: not on this GPU (cuda:0)"
    return None


def _roles_to_parts(roles: Iterable[str]) -> set[str]:
    mapping = {"diffusion": "model", "text_encoder": "clip", "vae": "vae", "clip_vision": "clip_vision"}
    return {mapping[r] for r in roles if r in mapping}


def _finish(stage: Stage, title: str, items: list[Item], notes: list[str], extra_min_working: int | None = None,
            batch_factor: int = 1) -> StageBudget:
    peak = sum(i.bytes for i in items)
    min_peak = peak
    if extra_min_working is not None:
        working = sum(i.bytes for i in items if i.category == "working")
        min_peak = peak - working + extra_min_working
    return StageBudget(stage, title, tuple(items), peak, min_peak, tuple(notes), batch_factor)


def _text_stage(stage: Stage, device: Device, info_for) -> StageBudget:
    items, infos, notes = _weights_items(stage, device, info_for, ("text_encoder",))
    if not infos:
        return _finish(stage, "Text encode", items + _overhead_items(device), notes + ["no text encoder found"])
    # TextGenerate: the prompt runs through the model once (prefill), then one token at a time against
    # the KV cache (llama.py generate, logits of the last position only), so the prompt sets the activations
    tokens = stage.text_tokens - (stage.generate_tokens or 0) if stage.text_tokens else stage.text_tokens
    if not stage.generate_tokens and any(r.clip_type == "ltxv" for r in stage.models) and \
            any(i.family == "gemma3" for i in infos):
        # LTX-2's Gemma 3 12B tokenizer pads every prompt to 1024 tokens (text_encoders/lt.py:75, min_length)
        tokens = max(tokens or 0, 1024)
    image_tokens = sum(vl_image_tokens(i.family, w, h) for i in infos[:1] for w, h in stage.images)
    if image_tokens and tokens is not None:
        tokens += image_tokens
        notes.append(f"{len(stage.images)} image(s) read by the text encoder: {image_tokens:,} image tokens")
    working = max(
        (memory.text_encoder_working(i.family, i.arch, tokens) for i in infos if i.kind == TEXT_ENCODER),
        key=lambda w: w.bytes, default=None,
    )
    if working is not None and any(it.bytes for it in items):
        items.append(Item("activations", working.bytes, "working", working.assumption))
    names = " + ".join(dict.fromkeys(i.label for i in infos))
    if stage.generate_tokens:
        kv = _kv_cache_item(stage, infos, device, notes)
        if kv is not None and any(it.bytes for it in items):
            items.append(kv)
        return _finish(stage, f"Text generate: {names}", items + _overhead_items(device), notes)
    return _finish(stage, f"Text encode: {names}", items + _overhead_items(device), notes)


def vl_image_tokens(family: str, width: int, height: int) -> int:
    """Tokens one image adds to a vision-language text encoder's prompt.

    Qwen2.5-VL / Qwen3-VL: the image is resized to multiples of 28 px (patch 14 × merge 2) within
    3136..12,845,056 pixels, one token per 28 × 28 (comfy/text_encoders/qwen_vl.py:9-45, 0.18.2).
    Gemma 3: 256 soft tokens per image (its SigLIP tower pools 896² to 16 × 16). Others read no image."""
    f = family.lower()
    if "gemma" in f:
        return 256
    if "qwen" in f and "vl" in f:
        import math  # noqa: PLC0415

        factor = 28
        h, w = max(factor, round(height / factor) * factor), max(factor, round(width / factor) * factor)
        if h * w > 12_845_056:
            beta = math.sqrt(height * width / 12_845_056)
            h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
        elif h * w < 3136:
            beta = math.sqrt(3136 / (height * width))
            h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
        return (h // factor) * (w // factor)
    return 0


def _kv_cache_item(stage: Stage, infos: list[ModelInfo], device: Device, notes: list[str]) -> Item | None:
    """TextGenerate's KV cache, preallocated for prompt + max_length tokens in every layer
    (comfy/text_encoders/llama.py:832-836, ComfyUI 0.18.2), at bf16 where the GPU has it, else fp32."""
    from . import llm  # noqa: PLC0415  (LLM configs and the cache formula live there)

    model = next((i for i in infos if i.kind == TEXT_ENCODER and i.arch.get("layers")), None)
    if model is None:
        notes.append("text generation: the LLM's layers / KV heads are unknown, so its KV cache is not counted")
        return None
    try:
        cfg = llm.config_from_arch(model.label, model.arch, model.params)
    except VramBudgetError as exc:
        notes.append(f"text generation: KV cache not counted ({exc})")
        return None
    prompt = max(0, (stage.text_tokens or 0) - stage.generate_tokens)
    prompt += sum(vl_image_tokens(model.family, w, h) for w, h in stage.images)
    dtype_bytes = 2 if device.bf16 else 4
    kv = llm.textgen_kv_cache_bytes(cfg, prompt, stage.generate_tokens, dtype_bytes=dtype_bytes)
    per_token = kv // max(1, prompt + stage.generate_tokens)
    notes.append(f"smaller max_length shrinks the KV cache by {fmt_gib(per_token * 256)} per 256 tokens; "
                 "an fp8 text encoder or the CPU (device = cpu) frees its weights")
    return Item(f"KV cache ({prompt} prompt + {stage.generate_tokens} generated tokens)", kv, "working",
                f"{cfg.layers} layers × K and V × {cfg.kv_heads} KV heads × {cfg.head_dim} head dim × "
                f"{prompt + stage.generate_tokens} tokens × {dtype_bytes} bytes ({'bf16' if dtype_bytes == 2 else 'fp32'}); "
                "comfy/text_encoders/llama.py:832-836 allocates it up front")


def _sample_stage(stage: Stage, device: Device, info_for) -> StageBudget:
    items, infos, notes = _weights_items(stage, device, info_for, ("diffusion", "lora", "controlnet"))
    model = next((i for i in infos if i.kind == DIFFUSION), None)
    latent = stage.latent
    title = f"Sample: {model.label}" if model else "Sample"
    if stage.expert and model is not None:
        title = f"Sample: {model.label.split(' [')[0].split(' (')[0]} ({stage.expert.replace('_', '-')} expert)"
    if model is None or latent is None:
        why = "no diffusion model identified" if model is None else "latent size unknown"
        notes.append(f"working memory not estimated: {why}")
        return _finish(stage, title, items + _overhead_items(device), notes)
    cond_batch = 2 if (stage.cfg is not None and stage.cfg > 1.0 and stage.uses_negative) else 1
    batch = max(1, latent.batch)
    refs = stage.reference_latents
    full = memory.diffusion_working(model.family, model.arch, latent, batch * cond_batch, stage.text_tokens,
                                    path=model.path, references=refs)
    single = memory.diffusion_working(model.family, model.arch, latent, batch, stage.text_tokens, path=model.path,
                                      references=refs)
    if full is None or single is None:
        notes.append(f"working memory not estimated: {model.label}: architecture not recognised (its weights are "
                     "priced; inside ComfyUI with the file present it is traced)")
        return _finish(stage, title, items + _overhead_items(device), notes)
    label = "activations (cond + uncond batched)" if cond_batch == 2 else "activations"
    if device.compute_fp32_reason:  # the traced tables are 16-bit activations: fp32 compute doubles every tensor
        full = replace(full, bytes=full.bytes * 2, assumption=f"{full.assumption}; × 2: {device.compute_fp32_reason}")
        single = replace(single, bytes=single.bytes * 2)
    items.append(Item(label, full.bytes, "working", full.assumption))
    if (model.quantization or "").startswith("gguf") and model.largest_tensor_bytes:
        items.append(Item("GGUF layer dequantized to 16 bit", model.largest_tensor_bytes, "working",
                          "ComfyUI-GGUF dequantizes one layer at a time; the largest layer's 16-bit copy"))
    extra = single.bytes + (model.largest_tensor_bytes if (model.quantization or "").startswith("gguf") else 0)
    if cond_batch == 2:
        notes.append(f"CFG {stage.cfg:g}: cond and uncond evaluated together when memory allows")
    return _finish(stage, title, items + _overhead_items(device), notes,
                   extra_min_working=extra if cond_batch == 2 else None, batch_factor=cond_batch)


def vae_dtype_bytes(family: str, device: Device) -> int:
    """ComfyUI's vae_dtype (sd.py:672-677 / :810-817): the first working dtype the card runs well.
    KL VAEs (SD, SDXL, Flux, SD3) list [bf16, fp32]: fp32 without bf16 (Turing, Pascal). The video
    VAEs list fp16 too, so they stay 16-bit."""
    if not device.bf16 and family in ("vae-kl4", "vae-kl16", "vae-flux2"):
        return 4
    return 2


def _vae_stage(stage: Stage, device: Device, info_for) -> StageBudget:
    items, infos, notes = _weights_items(stage, device, info_for, ("vae",))
    vae = next((i for i in infos if i.kind == VAE), None)
    decode = stage.kind == VAE_DECODE
    title = ("VAE decode" if decode else "VAE encode") + (f": {vae.label}" if vae else "")
    if vae is None or stage.latent is None:
        notes.append("working memory not estimated: " + ("VAE not identified" if vae is None else "latent size unknown"))
        return _finish(stage, title, items + _overhead_items(device), notes)
    weights = sum(i.bytes for i in items)
    free_for_work = device.capacity_bytes - weights - device.context_bytes
    live = _live_vae(vae, stage.latent, decode)
    if live is not None:
        items.append(Item("decode activations" if decode else "encode activations", live[0], "working", live[1]))
        return _finish(stage, title, items + _overhead_items(device), notes)
    work_bytes, assumption, work_notes = vae_working(vae.family, stage.latent, decode=decode, tiled=stage.tiled,
                                                     auto_tiled=stage.auto_tiled, free_bytes=free_for_work,
                                                     dtype_bytes=vae_dtype_bytes(vae.family, device),
                                                     options=stage.decode_options)
    items.append(Item("decode activations" if decode else "encode activations", work_bytes, "working", assumption))
    if stage.tiled or stage.auto_tiled:
        title += " (tiled)" if stage.tiled else " (auto tiled)"
    return _finish(stage, title, items + _overhead_items(device), notes + work_notes)


def _live_vae(vae: ModelInfo, latent: LatentShape, decode: bool) -> tuple[int, str] | None:
    """Inside ComfyUI: a VAE the traced table does not know, traced with ComfyUI's own VAE code at this
    latent's shape (one call on the whole latent, as VAEDecode / VAEEncode make it first)."""
    from . import vae_memory  # noqa: PLC0415

    tracer = vae_memory.LIVE_VAE_TRACER.get()
    if tracer is None or not vae.path or latent.media or vae.family in vae_memory.FAMILIES \
            or vae.family in vae_memory.MEDIA_FAMILIES:
        return None
    frames = [latent.frames] if latent.frames else []
    if decode:
        shape = [latent.batch, latent.channels or int(vae.arch.get("latent_channels") or 4), *frames,
                 latent.height, latent.width]
    else:
        sc = latent.spatial_compression or int(vae.arch.get("spatial_compression") or 8)
        shape = [latent.batch, 3, *([latent.pixel_frames] if latent.pixel_frames else []),
                 latent.pixel_height or latent.height * sc, latent.pixel_width or latent.width * sc]
    res = tracer(vae.path, "decode" if decode else "encode", shape)
    if res is None:
        return None
    value, provenance = res
    return int(value), f"one {'decode' if decode else 'encode'} call on {shape}; traced live with {provenance}"


def vae_working(family: str, latent: LatentShape, decode: bool = True, tiled: dict | None = None,
                auto_tiled: bool = False, free_bytes: int = 0, dtype_bytes: int = 2,
                options: dict | None = None) -> tuple[int, str, list[str]]:
    """(working bytes, assumption, notes) of a VAE decode/encode as the workflow runs it.

    Plain VAEDecode: one call on the whole latent. VAEDecodeTiled: its widgets converted as
    nodes.py:321-336 does (pixels -> latent units). VAE Decode (Auto Tiled): the plan this pack's
    node would choose with the memory left beside the weights (vae_memory.plan_decode).
    """
    from . import vae_memory  # noqa: PLC0415

    op = "decode" if decode else "encode"
    if family == PIXEL_SPACE_VAE:  # 0.18.2 sd.py:746-749: ComfyUI's own memory_used_decode / _encode
        value = latent.batch * (latent.pixel_height or latent.height) * (latent.pixel_width or latent.width) * dtype_bytes
        return value, f"pixel space: the {op} is the identity; ComfyUI reserves H·W·dtype bytes (sd.py:748-749)", []
    if latent.media:
        shape = ((latent.batch, latent.channels or 8, latent.height, latent.width) if latent.media == "audio"
                 else (latent.batch, latent.channels or 64, latent.width))
        if not decode or family not in vae_memory.MEDIA_FAMILIES:
            return 0, f"{latent.media} VAE {op} working memory unknown for {family}", [
                f"VAE {op} working memory unknown: no traced {latent.media} {op} for {family}"]
        try:
            if family == "vae-hunyuan3d":
                opts = options or {}
                value, how = vae_memory.hunyuan3d_decode_bytes(latent.batch, int(opts.get("octree_resolution", 256)),
                                                               int(opts.get("num_chunks", 8000)), dtype_bytes=dtype_bytes,
                                                               tokens=latent.width)
            else:
                value, how = vae_memory.media_decode_bytes(family, shape, dtype_bytes=dtype_bytes)
        except VramBudgetError as exc:
            return 0, str(exc), [f"VAE decode working memory unknown: {exc}"]
        return value, how, []
    sc = latent.spatial_compression or 8
    tc = latent.temporal_compression or 4
    shape = (latent.batch, latent.channels or 16, latent.frames, latent.height, latent.width)
    pixels = (latent.batch, latent.pixel_frames if latent.is_video else None,
              latent.pixel_height or latent.height * sc, latent.pixel_width or latent.width * sc)
    try:
        if auto_tiled and decode:
            plan = vae_memory.plan_decode(family, shape, max(free_bytes, 0), dtype_bytes=dtype_bytes)
            return plan.predicted_peak, f"auto tiled: {plan.summary()}", []
        if tiled:
            size = int(tiled.get("tile_size", 512))
            overlap = int(tiled.get("overlap", 64))
            if size < 4 * overlap:
                overlap = size // 4
            tile_t = None
            if latent.is_video:
                tile_t = max(2, int(tiled.get("temporal_size", 64)) // tc)
            if decode:
                value = vae_memory.vae_decode_bytes(family, shape, tile=max(1, size // sc), tile_t=tile_t,
                                                    dtype_bytes=dtype_bytes)
            else:
                value = vae_memory.vae_encode_bytes(family, pixels, tile=size, dtype_bytes=dtype_bytes,
                                                    tile_t=None if tile_t is None else tile_t * tc)
            what = f"tiles of {size} px" + (f" × {tile_t} latent frames" if tile_t else "")
            return value, f"VAE {op} in {what}; traced ComfyUI VAE constants", []
        if decode:
            value = vae_memory.vae_decode_bytes(family, shape, dtype_bytes=dtype_bytes)
        else:
            value = vae_memory.vae_encode_bytes(family, pixels, dtype_bytes=dtype_bytes)
        return value, f"one {op} call on the whole latent; traced ComfyUI VAE constants", []
    except VramBudgetError as exc:
        return 0, f"{op} memory not modelled for {family}", [f"VAE {op} working memory unknown: {exc}"]


def _simple_stage(stage: Stage, device: Device, info_for, title: str, roles=("clip_vision",),
                  extra_notes: tuple[str, ...] = ()) -> StageBudget:
    """An encoder's stage: its weights and the CUDA context (activations not counted)."""
    items, infos, notes = _weights_items(stage, device, info_for, roles)
    return _finish(stage, title, items + _overhead_items(device), notes + list(extra_notes))


def _audio_stage(stage: Stage, device: Device, info_for) -> StageBudget:
    """AudioEncoderEncode (comfy/audio_encoders/audio_encoders.py encode_audio): load_model_gpu of the encoder
    (the text encoder's device and dtype), then one forward over the whole clip. Its activations grow with
    the clip's length, which is not known before the audio loads: wav2vec2-large keeps a 512-channel fp16
    conv output at 3,200 steps per second of 16 kHz audio (3.3 MB/s) and all 25 hidden states at 50 frames
    per second (2.6 MB/s); Whisper works on fixed 30 s windows. Not counted: small next to the weights for
    clips of seconds."""
    model = next((info_for(ref) for ref in stage.models if ref.role == "audio_encoder"), None)
    return _simple_stage(stage, device, info_for, f"Audio encode: {model.label}" if model else "Audio encode",
                         roles=("audio_encoder",),
                         extra_notes=("audio activations not counted: they grow with the clip's length "
                                      "(wav2vec2-large ≈ 6 MB per second of audio), unknown before it loads",))


# ----------------------------------------------------------------------------------------------
# Entry points for the node, the routes and the CLI.
def estimate_prompt(prompt_or_workflow, device: Device, resolver: Resolver | None = None,
                    capacities: Iterable[str] | None = ()) -> Budget:
    """Estimate an API prompt or a UI workflow (dict or JSON text). `capacities`: which capacity
    answers to add ("batch", "resolution", "frames"); None = every one that applies."""
    from . import capacity  # noqa: PLC0415
    from .graph import read_workflow  # noqa: PLC0415

    workload = read_workflow(prompt_or_workflow)
    budget = estimate(workload, device, resolver)
    whats = capacity.applicable(workload) if capacities is None else tuple(capacities)
    if not whats:
        return budget
    return with_capacity(budget, workload, whats, resolver)


def with_capacity(budget: Budget, workload: Workload, whats: Iterable[str], resolver: Resolver | None = None) -> Budget:
    from . import capacity  # noqa: PLC0415

    answers = []
    for what in whats:
        try:
            answers.append(capacity.find(workload, budget.device, what, resolver, first=budget))
        except VramBudgetError as exc:  # a capacity answer never costs the estimate itself
            budget = replace(budget, notes=budget.notes + (f"largest {what}: {exc}",))
    return replace(budget, capacity=tuple(answers))


def folder_resolver(models_dir: str | os.PathLike) -> Resolver:
    """Resolve (folder, name) inside a ComfyUI models/ tree, with ComfyUI's legacy folder aliases.

    Names are normalised as folder_paths.get_full_path does (no escaping the folder with '..').
    """
    root = os.path.realpath(os.fspath(models_dir))
    aliases = {
        "diffusion_models": ("diffusion_models", "unet"), "unet": ("unet", "diffusion_models"),
        "text_encoders": ("text_encoders", "clip"), "clip": ("clip", "text_encoders"),
        "controlnet": ("controlnet", "t2i_adapter"),
    }

    def resolve(folder: str, name: str) -> str | None:
        rel = os.path.relpath(os.path.join("/", name.replace("\\", "/")), "/")
        for sub in aliases.get(folder, (folder,)):
            path = os.path.join(root, sub, rel)
            if os.path.isfile(path):
                return path
        return None

    return resolve
