"""Flux ControlNets published under a generic file name or by the packs that load them (issue 33):

- a catalogue entry named with its repository folder (alimama's Inpainting Beta,
  'FLUX.1-dev-Controlnet-Inpainting-Beta/diffusion_pytorch_model.safetensors') matches only with that folder in the
  path, never another repository's bare diffusion_pytorch_model.safetensors;
- an fp8 ControlNet file keeps its fp8 dtype in ComfyUI (controlnet.py controlnet_config: unet_dtype(model_params=-1,
  weight_dtype=the file's)), so it costs one byte a weight;
- InfiniteYou's InfuseNet (4 double / 10 single blocks) is priced; its ID-embedding models are named, not priced."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families.flux1 import P_FLUX_CN_4_10, P_FLUX_CN_6_0, P_FLUX_CN_6_0_INPAINT
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.catalogue import lookup
from vram_budget.nodes.estimator.plan.planning import estimate

EXTRA = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def test_the_block_counts_reproduce_the_published_files():
    # alimama's Inpainting Beta: 6 double blocks and 4 more input channels, bf16: the listing's 4.28 GB
    assert round(P_FLUX_CN_6_0_INPAINT * 2 / 1e9, 2) == 4.28 and P_FLUX_CN_6_0_INPAINT - P_FLUX_CN_6_0 == 4 * 3072
    # InfuseNet: Runware/InfiniteYou_aes_stage2's fp32 shards, 9,846,418,528 + 1,964,235,168 bytes, hold the count in
    # float32 plus two safetensors headers (tens of kB)
    assert 0 < (9_846_418_528 + 1_964_235_168) - 4 * P_FLUX_CN_4_10 < 100_000
    assert round(P_FLUX_CN_4_10 * 2 / 1e9, 2) == 5.91 and round(P_FLUX_CN_4_10 / 1e9, 2) == 2.95


def test_an_entry_named_with_its_folder_needs_that_folder():
    name = "diffusion_pytorch_model.safetensors"
    assert lookup(f"FLUX.1-dev-Controlnet-Inpainting-Beta/{name}", "controlnet").params == P_FLUX_CN_6_0_INPAINT
    assert lookup(f"some\\path\\FLUX.1-dev-Controlnet-Inpainting-Beta\\{name}", "controlnet") is not None
    assert lookup(name, "controlnet") is None
    assert lookup(f"other-repo/{name}", "controlnet") is None


def _sample(budget):
    return next(sb for sb in budget.stages if sb.stage.kind == "sample" and sb.weights_bytes)


def test_the_crop_and_stitch_flux_inpaint_example_completes_with_the_beta_controlnet():
    path = EXTRA / "lquesada__ComfyUI-Inpaint-CropAndStitch__inpaint_flux.json"
    budget = estimate(read_workflow(json.loads(path.read_text(encoding="utf-8"))), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    cn = next(i for i in _sample(budget).items if i.label and "Inpainting ControlNet Beta" in i.label)
    assert cn.bytes == P_FLUX_CN_6_0_INPAINT * 2


def test_an_fp8_controlnet_costs_a_byte_a_weight_and_infiniteyous_id_models_are_named():
    wf = json.loads((EXTRA / "bytedance__ComfyUI_InfiniteYou__infinite_you_workflow.json").read_text(encoding="utf-8"))
    budget = estimate(read_workflow(wf), DEV)
    infuse = next(i for i in _sample(budget).items if i.label and "InfuseNet" in i.label)
    assert infuse.bytes == P_FLUX_CN_4_10  # infusenet_aes_fp8e4m3fn: fp8 kept
    assert not budget.complete and any("ArcFace" in str(x) for x in budget.incomplete), budget.incomplete
    for node in wf["nodes"]:
        if node["type"] == "InfuseNetLoader":
            node["widgets_values"][0] = "aes_stage2/infusenet_aes_bf16.safetensors"
    bf16 = next(i for i in _sample(estimate(read_workflow(wf), DEV)).items if i.label and "InfuseNet" in i.label)
    assert bf16.bytes == P_FLUX_CN_4_10 * 2
