"""ImageUpscaleWithModel: the upscale model's weights and the memory ComfyUI frees for one tile."""
from __future__ import annotations

import re

from ..machine.device import Device
from ..workload import Stage
from .base import Item, StageBudget, unpriced, finish, overhead_items, weights_items


UPSCALE_TILE = 512  # nodes_upscale_model.py:78-79: 512 px tiles, 32 px overlap, halved on OOM down to 128


def build(stage: Stage, device: Device, info_for) -> StageBudget:
    """ImageUpscaleWithModel: the model's weights and what ComfyUI frees for it before it runs
    (comfy_extras/nodes_upscale_model.py:70-73, 0.18.2): 512²·3 px · 4 bytes · scale · 384 for one tile's
    activations ("an estimate of how much some of these models take") plus the input image on the device;
    the upscaled image is assembled on the CPU (comfy.utils.tiled_scale, output_device)."""
    items, infos, notes = weights_items(stage, device, info_for, ("upscale_model",))
    model = next(iter(infos), None)
    title = f"Upscale: {model.label}" if model else "Upscale"
    if model is None or not stage.images:
        why = unpriced(notes, "no upscale model identified" if model is None else "image size unknown")
        return finish(stage, title, items + overhead_items(device), notes, unpriced=why)
    scale = model.arch.get("scale") if isinstance(model.arch.get("scale"), int) else None
    named = f"{stage.models[0].name} {model.label}".lower()  # "4xNomos2_hq_mosr", "realesr-general-x4v3"
    found = re.search(r"(?<![0-9a-z])([1-8])x(?![0-9])|x([1-8])(?![0-9])", named)
    scale = scale or (int(found.group(1) or found.group(2)) if found else 4)
    pixels = sum(w * h for w, h in stage.images)
    work = int(UPSCALE_TILE * UPSCALE_TILE * 3 * 4 * scale * 384) + pixels * 3 * 4
    items.append(Item("upscale activations (ComfyUI's reservation)", work, "working",
                      f"{scale}x model, {len(stage.images)} image(s) of {stage.images[0][0]}×{stage.images[0][1]}: "
                      f"512² px tiles × 3 × 4 bytes × {scale} × 384 + the input on the device "
                      "(nodes_upscale_model.py:70-73)"))
    return finish(stage, title, items + overhead_items(device), notes)
