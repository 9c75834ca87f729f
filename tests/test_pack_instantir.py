"""Issue 33: smthemex/ComfyUI_InstantIR_Wrapper (graph/packs/instantir.py, families/instantir.py, traced by
bench/trace_instantir.py). Its own diffusers pipeline with model CPU offload: each component whole on the GPU when it
runs, the aggregator held from its first forward on, the VAE in float32; the size is the sampler's width x height."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families import instantir as IR
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.plan.advice import remedies_for
from vram_budget.nodes.estimator.plan.planning import estimate

EXAMPLE = (Path(__file__).resolve().parent / "workflows" / "community_extra"
           / "smthemex__ComfyUI_InstantIR_Wrapper__workflow.json")


def _wf(size: int | None = None) -> dict:
    wf = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    for node in wf["nodes"]:
        if size and node["type"] == "InstantIR_Sampler":
            node["widgets_values"][7:9] = [size, size]
    return wf


def _stages(budget):
    return {sb.stage.kind: sb for sb in budget.stages}


def test_the_example_is_complete_and_near_the_readmes_10_gb():
    budget = estimate(read_workflow(_wf()), Device.from_card(find_card("RTX 4090")))
    assert budget.complete, (budget.incomplete, budget.missing)
    stages = _stages(budget)
    assert set(stages) == {"text_encode", "clip_vision_encode", "vae_encode", "sample", "vae_decode"}
    sample = stages["sample"]
    assert sample.stage.manager == "diffusers" and sample.stage.offload == "model"
    step = next(i for i in sample.items if "one step" in i.label)
    assert step.bytes == int(IR.STEP_BYTES * memory.calibration("instantir"))  # 1024 x 1024, one image
    # the README: "peak about 10 GB" (max_memory_allocated) on a 12 GB RTX 4070 at 1024 x 1024
    assert 9.5 * 2**30 < budget.peak_bytes < 11.5 * 2**30


def test_the_widgets_size_scales_the_traced_terms():
    big = _stages(estimate(read_workflow(_wf()), Device.from_card(find_card("RTX 4090"))))
    small = _stages(estimate(read_workflow(_wf(512)), Device.from_card(find_card("RTX 4090"))))
    assert small["vae_decode"].working_bytes < big["vae_decode"].working_bytes
    decode = next(i for i in small["vae_decode"].items if "decode activations" in i.label)
    assert decode.bytes == int(IR.VAE_DECODE_FP32 * 0.25 * memory.calibration("instantir"))


def test_an_8_gb_card_is_out_of_memory_with_only_the_packs_own_fix():
    workload = read_workflow(_wf())
    budget = estimate(workload, Device.from_card(find_card("RTX 4060")))
    assert budget.verdict == "oom"
    kinds = {r.kind for r in remedies_for(budget, workload)}
    assert not kinds & {"precision", "batch", "resolution", "offload"}, kinds  # no GGUF, no --reserve-vram
