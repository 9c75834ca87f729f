"""Stages as a dispatch table: one entry per stage kind, used by the budget (what a stage holds on the
GPU) and by the run-time simulation (what ComfyUI does with it on this card), and the check that says
when a stage could not be priced.

A new stage kind is one module here with a `build(stage, device, info_for) -> StageBudget` and one
entry in KINDS: the run rule (runtime.py) and the gap check it shares with the others.
"""
from __future__ import annotations

from dataclasses import replace

from dataclasses import dataclass
from typing import Callable

from ..machine import runtime
from ..machine.device import Device
from ..model_info import DIFFUSION
from ..workload import (AUDIO_ENCODE, CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, TRAIN, UPSCALE, VAE_DECODE, VAE_ENCODE,
                        Stage)
from . import encoders, sample, text, train, upscale, vae
from .base import Item, StageBudget, finish, overhead_items, weights_items

__all__ = ["KINDS", "Item", "StageBudget", "StageKind", "build_stage", "finish", "gap", "overhead_items", "simulate",
           "weights_items"]


def _note(sb: StageBudget, words: tuple[str, ...], default: str) -> str:
    return next((n for n in sb.notes if any(w in n for w in words)), default)


def _no_working(sb: StageBudget) -> str | None:
    """A stage that needs working memory and has none was not priced (its builder says why: sb.unpriced)."""
    return None if sb.working_bytes else (sb.unpriced or _note(sb, ("unknown",), "working memory unknown"))


def _no_model(what: str, usable: Callable = lambda m: True) -> Callable[[StageBudget], str | None]:
    def check(sb: StageBudget) -> str | None:
        found = any(it.model is not None and usable(it.model) for it in sb.items if it.category == "weights")
        return None if found else f"no {what} identified"
    return check


def _text_gap(sb: StageBudget) -> str | None:
    """A text encode with weights on the card whose activations could not be priced (stages/text.py says why)."""
    return sb.unpriced or None


def _upscale_gap(sb: StageBudget) -> str | None:
    return None if sb.working_bytes else (sb.unpriced or "working memory unknown")


def _train_gap(sb: StageBudget) -> str | None:
    if any(it.category == "working" and "activations" in it.label for it in sb.items):
        return None
    return sb.unpriced or "training terms unknown"


@dataclass(frozen=True)
class StageKind:
    build: Callable[[Stage, Device, Callable], StageBudget]  # the budget: weights, working memory, overhead
    run: Callable  # (StageBudget, runtime context, earlier runs) -> runtime.StageRun
    gap: Callable[[StageBudget], "str | None"]  # why the stage could not be priced, or None


def _clip_vision(stage: Stage, device: Device, info_for) -> StageBudget:
    return encoders.simple(stage, device, info_for, "CLIP vision encode")


def _vae_run(sb, ctx, earlier):
    return runtime.run_vae(sb, ctx, earlier)


KINDS: dict[str, StageKind] = {
    TEXT_ENCODE: StageKind(text.build, lambda sb, ctx, _e: runtime.run_single_pass(sb, ctx, "text encoder"),
                           lambda sb: _no_model("text encoder")(sb) or _text_gap(sb)),
    SAMPLE: StageKind(sample.build, lambda sb, ctx, _e: runtime.run_sample(sb, ctx), _no_working),
    VAE_DECODE: StageKind(vae.build, _vae_run, _no_working),
    VAE_ENCODE: StageKind(vae.build, _vae_run, _no_working),
    CLIP_VISION_ENCODE: StageKind(_clip_vision, lambda sb, ctx, _e: runtime.run_single_pass(sb, ctx, "model"),
                                  # an encoder a pack priced itself (Stage.working) has no model file of its own
                                  lambda sb: None if sb.stage.working else _no_model("image encoder")(sb)),
    AUDIO_ENCODE: StageKind(encoders.audio, lambda sb, ctx, _e: runtime.run_single_pass(sb, ctx, "model"),
                            _no_model("audio encoder", lambda m: m.source not in ("missing", "unset"))),
    TRAIN: StageKind(train.build, lambda sb, ctx, _e: runtime.run_train(sb, ctx), _train_gap),
    UPSCALE: StageKind(upscale.build, lambda sb, ctx, _e: runtime.run_single_pass(sb, ctx, "model"), _upscale_gap),
}


def build_stage(stage: Stage, device: Device, info_for) -> StageBudget | None:
    """The stage's budget, or None for a kind that uses no GPU memory this estimate knows of."""
    kind = KINDS.get(stage.kind)
    return None if kind is None else kind.build(stage, device, info_for)


def simulate(stage_budgets, device) -> list:
    """One runtime.StageRun per StageBudget, in execution order (state carries over between stages).
    A stage its pack places itself (WanVideoWrapper) follows that pack's rule whatever its kind."""
    ctx = runtime.context_for(device)
    runs: list = []
    # models an earlier stage left on the card for good (--gpu-only / --highvram / a fully loaded diffusers pipeline)
    stuck: dict[str, tuple[int, str]] = {}
    for sb in stage_budgets:
        own = {it.label for it in sb.items if it.category == "weights"}
        held = sum(b for k, (b, _) in stuck.items() if k not in own)
        if sb.on_card:
            run = _simulate_one(sb, ctx if not held else replace(ctx, capacity=max(0, ctx.capacity - held)), runs)
            if held:
                why = "; ".join(dict.fromkeys(_STUCK_WHY[w] for k, (_, w) in stuck.items() if k not in own))
                short = max(run.shortfall_bytes, run.peak_bytes + held - ctx.capacity) if run.outcome == runtime.OOM \
                    else run.shortfall_bytes
                run = replace(run, peak_bytes=run.peak_bytes + held, shortfall_bytes=short, explanation=run.explanation + (
                    f"{held / 2**30:.2f} GiB of earlier models stay on the card: {why}",))
            runs.append(run)
            stuck.update({it.label: (it.bytes, why) for it in sb.items if it.category == "weights"
                          and it.model is not None and (why := _stuck_why(ctx, sb, it.model))})
            continue
        if not sb.on_card:  # a loader runs it on another device: only this card's CUDA context is here
            short = sb.peak_bytes - device.capacity_bytes  # only a DisTorch2 donor share can be here
            runs.append(runtime.StageRun(runtime.OOM if short > 0 else runtime.FITS, peak_bytes=sb.peak_bytes,
                                         shortfall_bytes=max(0, short), resident_bytes=sb.weights_bytes, rules=(
                                             f"runs on {sb.device} ({sb.device_reason}): not on this card",)))
            continue
    return runs


# --gpu-only: every model's offload device is the GPU (model_management.py unet_offload_device /
# text_encoder_offload_device / vae_offload_device return get_torch_device() under args.gpu_only; 0.8.0 :765-778,
# :869-873, :929-933), so free_memory's unload moves nothing off the card; --highvram does that for the diffusion
# models only (unet_offload_device, VRAMState.HIGH_VRAM).
_NEVER_OFF = "ComfyUI never moves them off (their offload device is the GPU)"
_STUCK_WHY = {"gpu_only": f"with --gpu-only {_NEVER_OFF}", "high": f"with --highvram (diffusion models) {_NEVER_OFF}",
              "full": "a diffusers pipeline loaded with GPU_memory_mode model_full_load keeps every component there",
              # the wrapper's loaders offload to mm.unet_offload_device() (T5, VAE and DiT alike), the GPU in
              # high-VRAM mode (model_management.py:1076-1080 in 0.33.0)
              "wrapper_high": "WanVideoWrapper offloads to ComfyUI's offload device, the GPU in high-VRAM mode",
              "hyvideo_high": "HunyuanVideoWrapper offloads to ComfyUI's offload device, the GPU in high-VRAM mode",
              "dragnuwa_kept": "ComfyUI-DragNUWA leaves its network on the GPU (a cached node output ComfyUI cannot "
                               "unload)",
              "segment_anything_kept": "comfyui_segment_anything's loaders keep SAM and GroundingDINO on the GPU (cached "
                                        "node outputs ComfyUI cannot unload)",
              "layerstyle_kept": "cache_model on LayerStyle's SegmentAnythingUltra keeps SAM and GroundingDINO on the "
                                 "GPU (held by the node)",
              "sonic_kept": "ComfyUI_Sonic keeps its UNet on the GPU from its loader on (kept here past the sampler "
                            "too: an upper bound)",
              "seedvr2_kept": "offload_device 'none' on the SeedVR2 VAE loader keeps the VAE there"}


def _stuck_why(ctx, sb, model) -> str:
    """Why this model of this stage stays on the card for good (a key of _STUCK_WHY), or "" when it does not."""
    if sb.stage.manager == runtime.DIFFUSERS:
        return "full" if sb.stage.offload == "full" else ""
    if sb.stage.manager == runtime.SEEDVR2:
        return "seedvr2_kept" if sb.stage.offload == "full" else ""
    if sb.stage.manager == runtime.WRAPPER and ctx.vram_state in ("high", "gpu_only"):
        return "wrapper_high"
    if sb.stage.manager == runtime.HYVIDEO and ctx.vram_state in ("high", "gpu_only"):
        return "hyvideo_high"
    if sb.stage.manager == runtime.DRAGNUWA:
        return "dragnuwa_kept"
    if sb.stage.manager == runtime.SONIC and getattr(model, "kind", "") == DIFFUSION:
        return "sonic_kept"
    if sb.stage.manager == runtime.SEGMENT_ANYTHING:
        return "segment_anything_kept"
    if sb.stage.manager == runtime.LAYERSTYLE_SAM and sb.stage.offload == "kept" \
            and not str(getattr(model, "family", "")).startswith("vitmatte"):
        return "layerstyle_kept"
    if ctx.vram_state == "gpu_only" or (ctx.vram_state == "high" and getattr(model, "kind", "") == DIFFUSION):
        return ctx.vram_state
    return ""


def _simulate_one(sb, ctx, runs):
    if sb.stage.manager in runtime.BLOCK_SWAP_RULES:
        return runtime.run_wrapper(sb, ctx)
    if sb.stage.manager == runtime.DIFFUSERS:
        return runtime.run_diffusers(sb, ctx)
    return KINDS[sb.stage.kind].run(sb, ctx, runs)


def gap(sb: StageBudget) -> str | None:
    """Why this stage has no figure (its working memory or its model unknown), or None. A node that says what it
    runs that nothing prices (Stage.unpriced: a detailer's SAM) leaves a gap whatever was priced beside it."""
    kind = KINDS.get(sb.stage.kind)
    return (None if kind is None else kind.gap(sb)) or sb.stage.unpriced or None
