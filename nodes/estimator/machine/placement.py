"""Which device each model and stage is on, and why (issue 24). Plain data in, plain data out.

ComfyUI itself runs everything on its main device (cuda:0 here) except what its flags send to the CPU
(--lowvram text encoders, --cpu-vae) and a text encoder whose core loader says `device = cpu`. A node
pack can place a model elsewhere: ComfyUI-MultiGPU's loaders (graph/packs/multigpu.py) put it on
"cuda:1" or "cpu" and record why on the ModelRef (`placed_by`). A stage runs where its main model runs
(the diffusion model for sampling, the text encoder for text encoding, the VAE for a decode ...).

Only stages a pack placed carry `Stage.device` (place_stages); the rest are on the main device, so a
workflow without such a loader is priced exactly as before.
"""
from __future__ import annotations

import re
from dataclasses import replace

from ..workload import (AUDIO_ENCODE, CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, TRAIN, UPSCALE, VAE_DECODE,
                       VAE_ENCODE, ModelRef, Stage, Workload, ref_key)

MAIN = "cuda:0"  # ComfyUI's main device: the card the estimate is for when one card is given
MAIN_REASON = "ComfyUI's main device"  # why a stage no loader or flag placed runs on MAIN
CPU = "cpu"
_DEVICE = re.compile(r"^(cuda|xpu|npu|mlu|mps|privateuseone|directml)(?::(\d+))?$")

# the model a stage of each kind runs (role, checkpoint part)
PRIMARY = {
    SAMPLE: ("diffusion", "model"), TRAIN: ("diffusion", "model"),
    TEXT_ENCODE: ("text_encoder", "clip"),
    VAE_DECODE: ("vae", "vae"), VAE_ENCODE: ("vae", "vae"),
    CLIP_VISION_ENCODE: ("clip_vision", "clip_vision"),
    AUDIO_ENCODE: ("audio_encoder", None), UPSCALE: ("upscale", None),
}


def normalize(value) -> str | None:
    """'cpu', 'cuda:N' (another accelerator 'xpu:N' ...), or None for ComfyUI's own choice ('default',
    WanVideoWrapper's 'main_device' / 'offload_device', an empty or odd widget value)."""
    if not isinstance(value, str):
        return None
    v = value.strip().lower()
    if v == CPU:
        return CPU
    m = _DEVICE.match(v)
    if m is None:
        return None
    return f"{m.group(1)}:{m.group(2) or 0}"


def ref_device(ref: ModelRef) -> tuple[str, str]:
    """(device, why) for one model."""
    dev = normalize(ref.device)
    if dev is None:
        return MAIN, "ComfyUI's main device (no loader placed it elsewhere)"
    if ref.placed_by:
        return dev, ref.placed_by
    return dev, f"{ref.loader_type or 'its loader'} device={ref.device}"


def primary_ref(stage: Stage) -> ModelRef | None:
    role, part = PRIMARY.get(stage.kind, (None, None))
    for ref in stage.models:
        if ref.role == role or (ref.role == "checkpoint" and part is not None and ref.part == part):
            return ref
    return next((r for r in stage.models if r.role not in ("lora",)), None)


def place_stages(workload: Workload) -> Workload:
    """Stage.device / device_reason for each stage whose main model a node pack placed (ComfyUI-MultiGPU);
    a LoRA in such a stage patches that model, so it goes where the model goes."""
    stages = []
    changed = False
    for stage in workload.stages:
        ref = primary_ref(stage)
        dev = normalize(ref.device) if ref is not None and ref.placed_by else None
        if dev is None:
            stages.append(stage)
            continue
        models = tuple(replace(r, device=ref.device, placed_by=f"patches {ref.name}, placed by {ref.placed_by}")
                       if r.role == "lora" and normalize(r.device) is None else r for r in stage.models)
        stages.append(replace(stage, device=dev, device_reason=ref.placed_by, models=models))
        changed = True
    return replace(workload, stages=tuple(stages)) if changed else workload


def placed(workload: Workload) -> bool:
    """Whether a node pack placed any model of this workload (the report and the JSON then say every
    stage's and model's device)."""
    return any(r.placed_by for s in workload.stages for r in s.models) or any(r.placed_by for r in workload.models)


def stage_device(stage: Stage, device=None) -> tuple[str, str]:
    """(device, why) for a stage: a pack's placement, else ComfyUI's own rules on this launch (flags on
    `device`, a core loader's device = cpu), else the main device."""
    if stage.device:
        return stage.device, stage.device_reason
    ref = primary_ref(stage)
    if stage.kind == TEXT_ENCODE and ref is not None:
        if normalize(ref.device) == CPU:
            return CPU, f"{ref.loader_type or 'the loader'} device=cpu: ComfyUI runs the text encoder on the CPU"
        if device is not None and (device.lowvram or device.te_cpu_reason):
            return CPU, ("--lowvram keeps text encoders on the CPU" if device.lowvram else device.te_cpu_reason)
    if stage.kind in (VAE_DECODE, VAE_ENCODE) and device is not None and device.cpu_vae:
        return CPU, "--cpu-vae runs the VAE on the CPU"
    return MAIN, MAIN_REASON


def model_devices(workload: Workload) -> dict[str, tuple[str, str]]:
    """'folder/name' -> (device, why), the first loader that names the model deciding."""
    out: dict[str, tuple[str, str]] = {}
    for stage in workload.stages:
        for ref in stage.models:
            out.setdefault(ref_key(ref), ref_device(ref))
    for ref in workload.models:
        out.setdefault(ref_key(ref), ref_device(ref))
    return out


def device_index(dev: str) -> int | None:
    """cuda:N -> N (the N-th card given with --gpus), else None."""
    m = _DEVICE.match(dev or "")
    return int(m.group(2) or 0) if m and m.group(1) == "cuda" else None
