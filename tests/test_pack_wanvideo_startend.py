"""Issue 33: raindrop313/ComfyUI-WanVideoStartEndFrames (graph/packs/wanvideo_startend.py), a fork of
WanVideoWrapper's spring-2025 nodes. WanVideoSEImageClipEncode runs the CLIP vision model, then VAE-encodes the start
image, num_frames - 1 zeros and the end image (num_frames + 1 frames); its sampler makes (num_frames - 1) // 4 + 2
latent frames at the start image's aspect over generation_width x generation_height's area (nodes.py at 340b4f0)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.families.adapters import P_CLIP_VISION_H
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

EXAMPLE = (Path(__file__).resolve().parent / "workflows" / "community_extra"
           / "raindrop313__ComfyUI-WanVideoStartEndFrames__Wan2.1_sei_workflow.json")
DEV = Device.from_card(find_card("RTX 4090"))


def _stage(budget, kind):
    return next(s for s in budget.stages if s.stage.kind == kind)


def test_the_example_is_complete_with_the_forks_frames():
    budget = estimate(read_workflow(json.loads(EXAMPLE.read_text(encoding="utf-8"))), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    sample, encode = _stage(budget, "sample"), _stage(budget, "vae_encode")
    assert sample.stage.latent.frames == (37 - 1) // 4 + 2  # num_frames 37: one more latent frame than Wan's I2V
    assert encode.stage.latent.pixel_frames == 37 + 1  # start, 36 zeros, end
    assert encode.stage.node_type == "WanVideoSEImageClipEncode"
    clip = _stage(budget, "clip_vision_encode")
    assert clip.stage.node_type == "WanVideoSEImageClipEncode"
    weights = sum(i.bytes for i in clip.items if i.category == "weights")
    assert weights == P_CLIP_VISION_H * 4  # LoadWanVideoClipTextEncoder precision fp32: built in fp32


def _prompt(width, height, adjust=True, start=(512, 768), end=(512, 768), precision="bf16"):
    images = {"10": start, "11": end}
    prompt = {k: {"class_type": "EmptyImage", "inputs": {"width": w, "height": h, "batch_size": 1, "color": 0}}
              for k, (w, h) in images.items() if (w, h) != (None, None)}
    prompt.update({
        "1": {"class_type": "WanVideoSEModelLoader", "inputs": {
            "model": "wan2.1_i2v_480p_14B_fp8_e4m3fn.safetensors", "base_precision": "bf16",
            "quantization": "fp8_e4m3fn", "load_device": "offload_device", "attention_mode": "sdpa"}},
        "2": {"class_type": "WanVideoSEVAELoader", "inputs": {"model_name": "wan_2.1_vae.safetensors",
                                                             "precision": "bf16"}},
        "3": {"class_type": "LoadWanVideoClipTextEncoder", "inputs": {
            "model_name": "open-clip-xlm-roberta-large-vit-huge-14_visual_fp16.safetensors", "precision": precision,
            "load_device": "main_device"}},
        "4": {"class_type": "LoadWanVideoT5TextEncoder", "inputs": {
            "model_name": "umt5-xxl-enc-bf16.safetensors", "precision": "bf16", "load_device": "offload_device",
            "quantization": "disabled"}},
        "5": {"class_type": "WanVideoTextEncode", "inputs": {"t5": ["4", 0], "positive_prompt": "a cat",
                                                            "negative_prompt": "", "force_offload": True}},
        "6": {"class_type": "WanVideoSEImageClipEncode", "inputs": {
            "clip_vision": ["3", 0], "start": ["10", 0], "end": ["11", 0], "vae": ["2", 0],
            "generation_width": width, "generation_height": height, "num_frames": 81, "adjust_resolution": adjust}},
        "7": {"class_type": "WanVideoSESampler", "inputs": {
            "model": ["1", 0], "text_embeds": ["5", 0], "image_embeds": ["6", 0], "steps": 20, "cfg": 6.0,
            "shift": 5.0, "seed": 0, "force_offload": True, "scheduler": "unipc", "riflex_freq_index": 0}},
        "8": {"class_type": "WanVideoSEDecode", "inputs": {"vae": ["2", 0], "samples": ["7", 0],
                                                          "enable_vae_tiling": False, "tile_x": 272, "tile_y": 272,
                                                          "tile_stride_x": 144, "tile_stride_y": 128}},
    })
    return prompt


def _fork_latent(width, height, start_h, end_w):
    """nodes.py WanVideoSEImageClipEncode.process, adjust_resolution: lat_h / lat_w from the area and H / W."""
    area, ratio = width * height, start_h / end_w
    return round(math.sqrt(area * ratio) // 8 // 2 * 2), round(math.sqrt(area / ratio) // 8 // 2 * 2)


@pytest.mark.parametrize("start,end", [((512, 768), (512, 768)), ((1280, 720), (1280, 720)), ((512, 768), (1024, 1024))])
def test_adjust_resolution_keeps_the_images_aspect_at_the_widgets_area(start, end):
    budget = estimate(read_workflow(_prompt(832, 480, start=start, end=end)), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    latent = _stage(budget, "sample").stage.latent
    # the fork reads H from the start image and W from the end image (start.shape[1], end.shape[2])
    assert (latent.height, latent.width) == _fork_latent(832, 480, start[1], end[0])
    assert latent.frames == (81 - 1) // 4 + 2 and latent.channels == 16


def test_without_adjust_resolution_the_widgets_size():
    latent = _stage(estimate(read_workflow(_prompt(832, 480, adjust=False)), DEV), "sample").stage.latent
    assert (latent.height, latent.width) == (480 // 8, 832 // 8)


def test_an_image_of_unknown_size_is_priced_at_the_widgets_area_and_said():
    prompt = _prompt(832, 480)
    prompt["10"] = {"class_type": "LoadImage", "inputs": {"image": "start.png"}}
    budget = estimate(read_workflow(prompt), DEV)
    latent = _stage(budget, "sample").stage.latent
    assert (latent.height, latent.width) == (480 // 8, 832 // 8)
    assert any("no aspect gives a larger area" in n for n in budget.notes), budget.notes


def test_the_clip_loaders_precision():
    fp16 = estimate(read_workflow(_prompt(832, 480, precision="fp16")), DEV)
    fp32 = estimate(read_workflow(_prompt(832, 480, precision="fp32")), DEV)
    weights = [sum(i.bytes for i in _stage(b, "clip_vision_encode").items if i.category == "weights")
               for b in (fp16, fp32)]
    assert weights[1] == 2 * weights[0] == P_CLIP_VISION_H * 4


def test_a_size_beyond_comfyuis_limits_is_a_clear_error():
    from vram_budget.nodes.estimator.graph import WorkflowError
    with pytest.raises(WorkflowError, match="WanVideoSEImageClipEncode"):
        estimate(read_workflow(_prompt(10**9, 480)), DEV)


def test_the_wrappers_own_first_image_clip_encode_makes_wans_frames():
    """WanVideoWrapper's spring-2025 WanVideoImageClipEncode, the node the fork copied: one image, (n - 1) // 4 + 1."""
    prompt = _prompt(832, 480, start=(1280, 720))
    prompt["1"]["class_type"], prompt["7"]["class_type"] = "WanVideoModelLoader", "WanVideoSampler"
    prompt["8"]["class_type"] = "WanVideoDecode"
    encode = prompt["6"]
    encode["class_type"] = "WanVideoImageClipEncode"
    encode["inputs"]["image"] = encode["inputs"].pop("start")
    del encode["inputs"]["end"], prompt["11"]
    budget = estimate(read_workflow(prompt), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    latent = _stage(budget, "sample").stage.latent
    assert latent.frames == (81 - 1) // 4 + 1
    assert (latent.height, latent.width) == _fork_latent(832, 480, 720, 1280)
    assert {s.stage.kind for s in budget.stages if s.stage.node_type == "WanVideoImageClipEncode"} == {
        "clip_vision_encode", "vae_encode"}


def test_reserve_vram_is_never_offered_for_a_model_a_pack_places_itself():
    """--reserve-vram makes ComfyUI's own model management keep memory free and stream; WanVideoWrapper (and the
    fork) put the DiT on the GPU by hand, so an OOM there is never answered with it (plan/advice.py rung 7)."""
    from vram_budget.nodes.estimator.plan.advice import remedies_for

    prompt = _prompt(832, 480)
    prompt["1"]["inputs"].update(model="wan2.1_i2v_480p_14B_fp16.safetensors", quantization="disabled",
                                 base_precision="fp16")
    workload = read_workflow(prompt)
    budget = estimate(workload, Device.from_card(find_card("RTX 4090")))
    run = next(r for r, sb in zip(budget.runs, budget.stages) if sb.stage.kind == "sample")
    assert run.outcome == "oom" and run.minimum_bytes <= budget.device.total_bytes
    assert not any(r.kind == "offload" and "--reserve-vram" in r.title for r in remedies_for(budget, workload))
