"""Wan Planner node: the largest frames and resolution a video model can do on this card.

Wire its width / height / length into the workflow's video latent node (WanImageToVideo, Wan22ImageToVideoLatent,
EmptyHunyuanLatentVideo, EmptyHunyuanVideo15Latent, EmptyLTXVLatentVideo, WanVaceToVideo ...): it then plans that
workflow itself, any video family (estimator/video_plan.py). Standalone, or wired elsewhere, the variant widgets
(Wan 2.1 / 2.2) or a connected MODEL answer. The planning maths live in estimator/wan_plan.py (shared estimator,
no ComfyUI); this module only turns the node's inputs into a model spec and a Device and the
plan back into outputs and text.
"""
from __future__ import annotations

import logging
import time

from . import comfy_bridge
from .budget_node import LIVE_WAIT_S, THIS_GPU, live_device
from .estimator.plan import video_plan
from .estimator.plan.planning import read_workflow
from .live_models import live_hooks
from .estimator.errors import VramBudgetError
from .estimator.machine.gpus import CARDS
from .estimator.plan.wan_plan import (
    DEFAULT_CFG, KEEP_MODES, PRECISIONS, VARIANT_LABELS, VARIANTS, format_plan, length_for_seconds, model_spec,
    plan, spec_from_loaded,
)

log = logging.getLogger("vram_budget")
MAX_RESOLUTION = 16384  # ComfyUI nodes.MAX_RESOLUTION


class WanPlanner:
    DESCRIPTION = ("Plans the largest length and size a Wan model can render on this GPU without offloading "
                   "weights to RAM, from the shared VRAM estimator. Feed width/height/length into WanImageToVideo, "
                   "Wan22ImageToVideoLatent or EmptyHunyuanLatentVideo. The report says what was cut and what "
                   "would keep the target instead (block swap count, --reserve-vram, Dynamic VRAM, card).")
    CATEGORY = "VRAM Budget"
    RETURN_TYPES = ("INT", "INT", "INT", "STRING")
    RETURN_NAMES = ("width", "height", "length", "report")
    OUTPUT_NODE = True  # it runs alone too: queue just the planner to read its plan (issue 31)
    OUTPUT_TOOLTIPS = ("width for the Wan latent node", "height for the Wan latent node",
                       "length (frames, 4k+1) for the Wan latent node", "what was planned and why")
    FUNCTION = "run"

    @classmethod
    def INPUT_TYPES(cls):
        labels = [v.label for v in VARIANTS.values()]
        return {
            "required": {
                "variant": (labels, {"default": "Wan 2.1 14B",
                                     "tooltip": "Used when no MODEL is connected (a connected MODEL is read instead)"}),
                "precision": (list(PRECISIONS), {"default": "fp16",
                                                 "tooltip": "Weight precision of the diffusion model (ignored with a MODEL)"}),
                "width": ("INT", {"default": 1280, "min": 16, "max": MAX_RESOLUTION, "step": 16}),
                "height": ("INT", {"default": 720, "min": 16, "max": MAX_RESOLUTION, "step": 16}),
                "length": ("INT", {"default": 81, "min": 1, "max": MAX_RESOLUTION, "step": 4,
                                   "tooltip": "Frames (4k+1). Ignored when seconds > 0"}),
                "seconds": ("FLOAT", {"default": 0.0, "min": 0.0, "max": 3600.0, "step": 0.25,
                                      "tooltip": "Clip length in seconds at the model's frame rate (16 fps; 24 fps "
                                                 "for Wan 2.2 5B); 0 = use length"}),
                "keep": (list(KEEP_MODES), {"default": "balanced",
                                            "tooltip": "What to keep when the target does not fit: frames (cut the "
                                                       "size), resolution (cut the length), or balanced (both in turn)"}),
                "vram_budget_gb": ("FLOAT", {"default": 0.0, "min": 0.0, "max": 4096.0, "step": 0.5,
                                             "display_name": "vram_budget_gib",
                                             "tooltip": "Memory to plan for, in GiB (1 GiB = 1024³ bytes, the unit "
                                                        "PyTorch prints); 0 = this GPU (or the card below)"}),
            },
            "optional": {
                "model": ("MODEL", {"tooltip": "A loaded Wan model: variant, size and weight dtype are read from it"}),
                "gpu": ([THIS_GPU] + [c.name for c in CARDS], {"default": THIS_GPU,
                        "tooltip": "Plan for this GPU, or for a card you might rent"}),
                "cfg": ("FLOAT", {"default": DEFAULT_CFG, "min": 0.0, "max": 100.0, "step": 0.1,
                                  "tooltip": "CFG > 1 evaluates cond and uncond (more activation memory)"}),
            },
            "hidden": {"unique_id": "UNIQUE_ID", "prompt": "PROMPT"},
        }

    def run(self, variant, precision, width, height, length, seconds, keep, vram_budget_gb=0.0, model=None,
            gpu=THIS_GPU, cfg=DEFAULT_CFG, unique_id=None, prompt=None):
        started = time.perf_counter()
        width, height, length = (_bounded(name, v, 1, MAX_RESOLUTION) for name, v in
                                 (("width", width), ("height", height), ("length", length)))
        seconds = float(_bounded("seconds", seconds, 0.0, 3600.0, int_only=False))
        cfg = float(_bounded("cfg", cfg, 0.0, 100.0, int_only=False))
        vram_budget_gb = float(_bounded("vram_budget_gib", vram_budget_gb, 0.0, 4096.0, int_only=False))
        if model is None and isinstance(prompt, dict) and unique_id is not None:
            planned = _from_workflow(prompt, str(unique_id), int(width), int(height), int(length), seconds, keep,
                                     vram_budget_gb, gpu)
            if planned is not None:
                return planned
        if model is not None:
            spec = spec_from_loaded(comfy_bridge.describe_loaded_model(model))
        else:
            spec = model_spec(VARIANT_LABELS.get(variant, variant), precision)
        if seconds and seconds > 0:
            length = length_for_seconds(seconds, spec.fps)
            if length > MAX_RESOLUTION:
                raise VramBudgetError(f"Wan Planner: {seconds:g} s at {spec.fps} fps is {length} frames; Wan's latent "
                                      f"nodes take at most {MAX_RESOLUTION}")
        device = live_device("auto", vram_budget_gb, gpu)
        result = plan(spec, device, int(width), int(height), int(length), keep, float(cfg))
        text = format_plan(result)
        if model is not None:
            text += "\n(read from the MODEL input; the variant and precision widgets are ignored)"
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.info("[VRAM Budget] Wan plan %dx%dx%d on %s (%.0f ms)", result.width, result.height, result.length,
                 device.name, elapsed_ms)
        log.debug("[VRAM Budget] Wan plan:\n%s", text)
        summary = result.to_dict()
        return {"ui": {"text": [text], "wan_plan": [summary]},
                "result": (result.width, result.height, result.length, text)}


def _from_workflow(prompt: dict, uid: str, width: int, height: int, length: int, seconds: float, keep: str,
                   vram_budget_gb: float, gpu: str):
    """Wired into the video latent a sampler of this workflow uses (no MODEL input): plan THAT workflow, its own
    models and settings, whatever the video family (estimator/video_plan.py); None otherwise (the variant widgets
    answer)."""
    fed = video_plan.planner_links(prompt, uid)
    if not fed:
        return None
    fps = video_plan.workflow_fps(prompt)
    if seconds and seconds > 0:
        if fps is None:
            return None  # no frame rate in the workflow: the variant's answers, and says which it used
        length = min(MAX_RESOLUTION, length_for_seconds(seconds, fps))  # 4k+1 nearest; an 8k+1 latent floors it
    at = video_plan.prompt_at(prompt, uid, width, height, length)
    try:
        workload = read_workflow(at)
    except VramBudgetError as exc:
        log.info("[VRAM Budget] Wan Planner: the workflow it feeds could not be read (%s); using the variant", exc)
        return None
    if not video_plan.feeds_the_sampled_latent(workload, fed):
        return None
    device = live_device("auto", vram_budget_gb, gpu)
    with live_hooks(wait_s=LIVE_WAIT_S):
        result = video_plan.plan_workload(workload, device, width, height, length, keep, comfy_bridge.model_resolver())
    text = result.text(device.name) + ("\n(planned from the workflow this node feeds; the variant and precision "
                                       "widgets are not used)")
    summary = {**result.to_dict(), "mode": "workflow", "card": device.name}
    log.info("[VRAM Budget] video plan %dx%dx%d on %s (from the workflow)", result.width, result.height,
             result.length, device.name)
    return {"ui": {"text": [text], "wan_plan": [summary]},
            "result": (result.width, result.height, result.length, text)}


def _bounded(name: str, value, lo: float, hi: float, int_only: bool = True):
    """A widget value (or a linked one: ComfyUI does not range-check those) within [lo, hi], else a clear error
    naming the input (issue 37: a linked length of 10^9 must not build a list of every length up to it)."""
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if number is None or number != number or not lo <= number <= hi or (int_only and int(number) != number):
        shown = str(value)[:32]
        raise VramBudgetError(f"Wan Planner: {name} {shown}: give {'a whole number ' if int_only else ''}from "
                              f"{lo:g} to {hi:g}")
    return int(number) if int_only else number


NODE_CLASS_MAPPINGS = {"VRAMBudgetWanPlanner": WanPlanner}
NODE_DISPLAY_NAME_MAPPINGS = {"VRAMBudgetWanPlanner": "Wan Planner (VRAM Budget)"}
