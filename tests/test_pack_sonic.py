"""Issue 33: smthemex/ComfyUI_Sonic (graph/packs/sonic.py, families/sonic.py). Its loader builds Sonic's UNet on the
GPU (SVD's layout with 32-token audio adapters, in its dtype widget) and keeps it there through SONIC_PreData's
audio models and ComfyUI's encodes; its sampler runs three-way guidance over windows of fps frames."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.families import sonic as S
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.advice import remedies_for
from vram_budget.nodes.estimator.plan.planning import estimate

EXAMPLE = Path(__file__).resolve().parent / "workflows" / "community_extra" / "smthemex__ComfyUI_Sonic__example.json"
DEV = Device.from_card(find_card("RTX 4090"))


def _wf(**widgets) -> dict:
    wf = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    for node in wf["nodes"]:
        if node["type"] == "SONICTLoader" and "dtype" in widgets:
            node["widgets_values"][3] = widgets["dtype"]
        if node["type"] == "SONICSampler" and "fps" in widgets:
            node["widgets_values"][4] = widgets["fps"]
        if node["type"] == "SONIC_PreData" and "min_resolution" in widgets:
            node["widgets_values"][0] = widgets["min_resolution"]
    return wf


def _stage(budget, kind, node_type):
    return next((sb, run) for sb, run in zip(budget.stages, budget.runs)
                if sb.stage.kind == kind and sb.stage.node_type == node_type)


def test_the_example_is_complete_and_the_unet_is_held_from_the_loader_on():
    budget = estimate(read_workflow(_wf()), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    unet = S.P_SONIC_UNET * 2  # fp16 widget
    audio, audio_run = _stage(budget, "audio_encode", "SONIC_PreData")
    assert sum(i.bytes for i in audio.items if i.category == "weights") == unet
    audio_models = (S.P_WHISPER_TINY + S.P_AUDIO2TOKEN + S.P_AUDIO2BUCKET) * 4
    assert any(i.bytes == audio_models for i in audio.items if i.category == "working")
    clip, clip_run = _stage(budget, "clip_vision_encode", "SONIC_PreData")
    assert clip_run.peak_bytes >= unet + sum(i.bytes for i in clip.items if i.category == "weights")
    sample, run = _stage(budget, "sample", "SONICSampler")
    assert sum(i.bytes for i in sample.items if i.category == "weights") == unet
    assert sample.stage.latent.batch == 3 * 25 and (sample.stage.latent.width, sample.stage.latent.height) == (32, 32)
    assert run.streamed_bytes == 0


def test_the_dtype_widget_and_the_shapes_move_the_estimate():
    fp32 = _stage(estimate(read_workflow(_wf(dtype="fp32")), DEV), "sample", "SONICSampler")[0]
    assert sum(i.bytes for i in fp32.items if i.category == "weights") == S.P_SONIC_UNET * 4
    base = _stage(estimate(read_workflow(_wf()), DEV), "sample", "SONICSampler")[0]
    fast = _stage(estimate(read_workflow(_wf(fps=12.5)), DEV), "sample", "SONICSampler")[0]
    big = _stage(estimate(read_workflow(_wf(min_resolution=512)), DEV), "sample", "SONICSampler")[0]
    assert fast.stage.latent.batch == 3 * 12 and fast.working_bytes < base.working_bytes < big.working_bytes
    assert (big.stage.latent.width, big.stage.latent.height) == (64, 64)


def test_no_remedy_the_pack_does_not_offer():
    """No fp8 (the dtype widget has none), no "batch 75 -> 1" (the batch is guidance x fps), no --reserve-vram, no
    VAE Decode (Auto Tiled): the decode runs inside the sampler node."""
    workload = read_workflow(_wf(dtype="fp32", min_resolution=1024))
    budget = estimate(workload, Device.from_card(find_card("RTX 3060")))
    assert budget.verdict == "oom"
    kinds = {r.kind for r in remedies_for(budget, workload)}
    assert not kinds & {"precision", "batch", "frames", "resolution", "offload", "vae_tiling"}, kinds


@pytest.mark.parametrize("name,params", [("unet", S.P_SONIC_UNET)])
def test_the_unet_file_is_read_as_sonics(name, params):
    from vram_budget.nodes.estimator.models.name_infer import infer_info
    info, _ = infer_info("unet.pth", "diffusion", "sonic", hint="sonic")
    assert info.family == S.FAMILY and info.params == params
