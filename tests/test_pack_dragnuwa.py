"""Issue 33: chaojie/ComfyUI-DragNUWA (graph/packs/dragnuwa.py, families/dragnuwa.py). Its loader builds the whole
network in float32 on the GPU and leaves it there; its run nodes sample 14 frames with CFG batched at the loader's
dimension, priced by a trace of the pack's own code (bench/trace_dragnuwa.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.families import dragnuwa as DN
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _wf(name: str, dimension: str | None = None) -> dict:
    wf = json.loads((CORPUS / f"chaojie__ComfyUI-DragNUWA__{name}.json").read_text(encoding="utf-8"))
    for node in wf["nodes"]:
        if dimension and node["type"] == "Load CheckPoint DragNUWA":
            node["widgets_values"][1] = dimension
    return wf


def _sample(budget):
    return next((sb, run) for sb, run in zip(budget.stages, budget.runs) if sb.stage.kind == "sample")


@pytest.mark.parametrize("name", ["workflow", "workflow_motionbrush"])
def test_the_examples_complete_with_the_fp32_network_and_its_traced_step(name):
    budget = estimate(read_workflow(_wf(name)), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    sb, run = _sample(budget)
    weights = sum(i.bytes for i in sb.items if i.category == "weights")
    assert weights == DN.P_DRAGNUWA * 4  # fp32 whatever the file (the .fp16.safetensors example included)
    unet, flow = DN.TRACE[(576, 320)]
    assert sb.working_bytes == int((unet + flow) * memory.calibration(DN.FAMILY))
    assert run.outcome == "fits" and run.streamed_bytes == 0


def test_the_dimension_widget_picks_its_trace():
    wide = _sample(estimate(read_workflow(_wf("workflow")), DEV))[0]
    square = _sample(estimate(read_workflow(_wf("workflow", "512x512")), DEV))[0]
    tall = _sample(estimate(read_workflow(_wf("workflow", "320x576")), DEV))[0]
    assert square.working_bytes > wide.working_bytes == tall.working_bytes
    assert (square.stage.latent.width, square.stage.latent.height) == (64, 64)


def test_no_partial_load_a_12_gb_card_is_out_of_memory():
    budget = estimate(read_workflow(_wf("workflow")), Device.from_card(find_card("RTX 3060")))
    assert budget.verdict == "oom"
    assert any("does not load partially" in e for e in _sample(budget)[1].explanation)


def test_the_network_stays_on_the_card_for_later_stages():
    """The loaded network is a cached node output ComfyUI cannot unload: an SD1.5 pass over DragNUWA's frames
    afterwards runs beside its 9.5 GiB (stages._stuck_why)."""
    prompt = {
        "1": {"class_type": "Load CheckPoint DragNUWA", "inputs": {"ckpt_name": "drag_nuwa_svd.pth",
                                                                  "dimension": "576x320", "model_length": 14}},
        "2": {"class_type": "EmptyImage", "inputs": {"width": 576, "height": 320, "batch_size": 1, "color": 0}},
        "3": {"class_type": "DragNUWA Run", "inputs": {"model": ["1", 0], "image": ["2", 0],
                                                      "tracking_points": "[[[25,25],[128,128]]]",
                                                      "inference_batch_size": 1, "motion_bucket_id": 4}},
        "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "v1-5-pruned-emaonly-fp16.safetensors"}},
        "5": {"class_type": "VAEEncode", "inputs": {"pixels": ["2", 0], "vae": ["4", 2]}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["4", 1], "text": "a cat"}},
        "7": {"class_type": "KSampler", "inputs": {"model": ["4", 0], "positive": ["6", 0], "negative": ["6", 0],
                                                  "latent_image": ["5", 0], "seed": 0, "steps": 20, "cfg": 7.0,
                                                  "sampler_name": "euler", "scheduler": "normal", "denoise": 0.5}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["4", 2]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "a"}},
        "10": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "b"}},
    }
    budget = estimate(read_workflow(prompt), DEV)
    kinds = [sb.stage.node_type for sb in budget.stages]
    assert kinds.index("DragNUWA Run") < kinds.index("KSampler"), kinds
    held = DN.P_DRAGNUWA * 4
    after = [(sb, run) for sb, run in zip(budget.stages, budget.runs)][kinds.index("DragNUWA Run") + 1:]
    assert after and all(run.peak_bytes >= held for _, run in after)
    assert any("leaves its network on the GPU" in e for _, run in after for e in run.explanation)
