"""Stages as a dispatch table: one entry per stage kind, used by the budget (what a stage holds on the
GPU) and by the run-time simulation (what ComfyUI does with it on this card), and the check that says
when a stage could not be priced.

A new stage kind is one module here with a `build(stage, device, info_for) -> StageBudget` and one
entry in KINDS: the run rule (runtime.py) and the gap check it shares with the others.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import runtime
from ..device import Device
from ..workload import (AUDIO_ENCODE, CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, TRAIN, UPSCALE, VAE_DECODE, VAE_ENCODE,
                        Stage)
from . import encoders, sample, text, train, upscale, vae
from .base import Item, StageBudget, finish, overhead_items, weights_items

__all__ = ["KINDS", "Item", "StageBudget", "StageKind", "build_stage", "finish", "gap", "overhead_items", "simulate",
           "weights_items"]


def _note(sb: StageBudget, words: tuple[str, ...], default: str) -> str:
    return next((n for n in sb.notes if any(w in n for w in words)), default)


def _no_working(sb: StageBudget) -> str | None:
    """A stage that needs working memory and has none was not priced."""
    return None if sb.working_bytes else _note(sb, ("not estimated", "unknown"), "working memory unknown")


def _no_model(what: str, usable: Callable = lambda m: True) -> Callable[[StageBudget], str | None]:
    def check(sb: StageBudget) -> str | None:
        found = any(it.model is not None and usable(it.model) for it in sb.items if it.category == "weights")
        return None if found else f"no {what} identified"
    return check


def _text_gap(sb: StageBudget) -> str | None:
    """A text encode with weights on the card whose activations could not be priced (stages/text.py says why)."""
    return next((n for n in sb.notes if n.startswith("working memory not estimated")), None)


def _upscale_gap(sb: StageBudget) -> str | None:
    return None if sb.working_bytes else _note(sb, ("not estimated",), "working memory unknown")


def _train_gap(sb: StageBudget) -> str | None:
    if any(it.category == "working" and "activations" in it.label for it in sb.items):
        return None
    return _note(sb, ("not estimated",), "training terms unknown")


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
                                  _no_model("image encoder")),
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
    for sb in stage_budgets:
        if not sb.on_card:  # a loader runs it on another device: only this card's CUDA context is here
            short = sb.peak_bytes - device.capacity_bytes  # only a DisTorch2 donor share can be here
            runs.append(runtime.StageRun(runtime.OOM if short > 0 else runtime.FITS, peak_bytes=sb.peak_bytes,
                                         shortfall_bytes=max(0, short), resident_bytes=sb.weights_bytes, rules=(
                                             f"runs on {sb.device} ({sb.device_reason}): not on this card",)))
            continue
        if sb.stage.manager == runtime.WRAPPER:
            run = runtime.run_wrapper(sb, ctx)
        else:
            run = KINDS[sb.stage.kind].run(sb, ctx, runs)
        runs.append(run)
    return runs


def gap(sb: StageBudget) -> str | None:
    """Why this stage has no figure (its working memory or its model unknown), or None."""
    kind = KINDS.get(sb.stage.kind)
    return None if kind is None else kind.gap(sb)
