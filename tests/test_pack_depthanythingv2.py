"""Issue 33: kijai's ComfyUI-DepthAnythingV2 priced by its own loop (graph/packs/depthanythingv2.py,
families/depth_anything2.py): fp32 weights whatever the file, one frame's activations at the frame's own size."""
from __future__ import annotations

import json

from vram_budget.nodes.estimator.families import depth_anything2 as DA2
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

DEV = Device.from_card(find_card("RTX 4090"))


def _prompt(model: str, width: int, height: int, frames: int = 1, precision: str = "auto") -> dict:
    return {
        "1": {"class_type": "EmptyImage", "inputs": {"width": width, "height": height, "batch_size": frames,
                                                     "color": 0}},
        "2": {"class_type": "DownloadAndLoadDepthAnythingV2Model", "inputs": {"model": model, "precision": precision}},
        "3": {"class_type": "DepthAnything_V2", "inputs": {"da_model": ["2", 0], "images": ["1", 0]}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "depth"}},
    }


def _stage(prompt):
    budget = estimate(read_workflow(prompt), DEV)
    assert budget.complete, budget.incomplete
    return next(s for s in budget.stages if s.stage.kind == "sample")


def test_weights_are_fp32_whatever_the_file():
    for name in ("depth_anything_v2_vitl_fp16.safetensors", "depth_anything_v2_vitl_fp32.safetensors"):
        stage = _stage(_prompt(name, 518, 518))
        assert stage.weights_bytes == 4 * DA2.ENCODERS["vitl"][4], name


def test_activations_follow_the_frame_size_not_the_frame_count():
    small = _stage(_prompt("depth_anything_v2_vitl_fp16.safetensors", 518, 518))
    large = _stage(_prompt("depth_anything_v2_vitl_fp16.safetensors", 1036, 1036))
    many = _stage(_prompt("depth_anything_v2_vitl_fp16.safetensors", 518, 518, frames=81))
    assert large.working_bytes > 3.5 * small.working_bytes  # 4x the pixels and tokens
    assert many.working_bytes == small.working_bytes  # one frame per forward
    fp32 = _stage(_prompt("depth_anything_v2_vitl_fp32.safetensors", 518, 518))
    assert fp32.working_bytes > 1.8 * small.working_bytes  # "auto": fp32 activations for an fp32 file


def test_an_unknown_frame_size_is_named():
    prompt = _prompt("depth_anything_v2_vits_fp16.safetensors", 512, 512)
    prompt["1"] = {"class_type": "LoadVideo", "inputs": {"file": "clip.mp4"}}
    prompt["5"] = {"class_type": "GetVideoComponents", "inputs": {"video": ["1", 0]}}
    prompt["3"]["inputs"]["images"] = ["5", 0]
    budget = estimate(read_workflow(json.loads(json.dumps(prompt))), DEV)
    assert not budget.complete and any("frame" in i and "Depth Anything V2" in i for i in budget.incomplete)
