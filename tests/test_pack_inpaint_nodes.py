"""Issue 33: Acly's comfyui-inpaint-nodes (graph/packs/inpaint_nodes.py). Apply Fooocus Inpaint patches the model it
is given (a MODEL passing through, not a sampler with no model); the patch rides on that model as a weight patch of
its file's size; a MAT / LaMa inpainting model is priced at float32 with its traced constant peak (the node resizes
every image to the model's square on the CPU first), and what is not covered stays named."""
from __future__ import annotations

from pathlib import Path

import json

import pytest

from vram_budget.nodes.estimator.families import inpaint_models as F
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _budget(name: str):
    path = CORPUS / f"Acly__comfyui-inpaint-nodes__{name}.json"
    return estimate(read_workflow(path.read_text(encoding="utf-8")), DEV)


def test_the_fooocus_patch_rides_on_the_sdxl_model_it_patches():
    for name in ("inpaint-simple", "inpaint-refine", "outpaint"):
        budget = _budget(name)
        assert budget.complete, (name, budget.incomplete)
        samples = [s for s in budget.stages if s.stage.kind == "sample"]
        assert len(samples) == 1, [s.stage.node_type for s in samples]  # the apply node is no sampler
        assert any(r.name == "inpaint_v26.fooocus.patch" and r.role == "lora" for r in samples[0].stage.models)
        patch = next(i for i in samples[0].items if "inpaint_v26.fooocus.patch" in i.label)
        assert patch.category == "weights" and patch.bytes == 1_320_000_000  # the published file, as a LoRA


def _inpaint_stage(budget):
    (stage,) = [s for s in budget.stages if s.stage.node_type == "INPAINT_InpaintWithModel"]
    return stage


@pytest.mark.parametrize("name", ["inpaint-preprocess", "inpaint-promptless"])
def test_the_pack_workflows_with_mat_are_complete(name):
    budget = _budget(name)  # Places_512_FullData_G.pth: MAT by its name (a pickle: never opened)
    assert budget.complete, budget.incomplete
    stage = _inpaint_stage(budget)
    weights = sum(i.bytes for i in stage.items if i.category == "weights")
    assert weights == F.P_MAT * 4  # float32 modules whatever the file holds
    (working,) = [i for i in stage.items if i.category == "working"]
    assert working.bytes == int(F.TRACE["mat-inpaint"] * memory.calibration("mat-inpaint"))
    assert "bench/trace_vision.py" in working.assumption and "512×512" in working.assumption


def _prompt(model_name, image_size=None, upscale=False):
    wf = {
        "1": {"class_type": "INPAINT_LoadInpaintModel", "inputs": {"model_name": model_name}},
        "2": {"class_type": "LoadImage", "inputs": {"image": "photo.png"}},
        "3": {"class_type": "INPAINT_InpaintWithModel", "inputs": {
            "inpaint_model": ["1", 0], "image": ["2", 0], "mask": ["2", 1], "seed": 0}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "x"}},
    }
    if image_size:
        w, h = image_size
        wf["2"] = {"class_type": "EmptyImage", "inputs": {"width": w, "height": h, "batch_size": 3, "color": 0}}
        wf["5"] = {"class_type": "SolidMask", "inputs": {"value": 1.0, "width": w, "height": h}}
        wf["3"]["inputs"]["mask"] = ["5", 0]
    if upscale:
        wf["6"] = {"class_type": "UpscaleModelLoader", "inputs": {"model_name": "4x-UltraSharp.pth"}}
        wf["3"]["inputs"]["optional_upscale_model"] = ["6", 0]
    return wf


def test_lama_is_its_traced_constant_whatever_the_image_size_and_batch():
    k = memory.calibration("lama")
    peaks = set()
    for size in ((512, 512), (3840, 2160)):
        budget = estimate(read_workflow(json.dumps(_prompt("big-lama.pt", size))), DEV)
        assert budget.complete, budget.incomplete
        stage = _inpaint_stage(budget)
        assert sum(i.bytes for i in stage.items if i.category == "weights") == F.P_LAMA * 4
        (working,) = [i for i in stage.items if i.category == "working"]
        peaks.add(working.bytes)
    assert peaks == {int(F.TRACE["lama"] * k)}


@pytest.mark.parametrize("name, upscale, why", [
    ("my_inpainter.safetensors", False, "not known from its name"),
    ("big-lama.pt", True, "optional upscale model"),
])
def test_what_is_not_covered_stays_named(name, upscale, why):
    budget = estimate(read_workflow(json.dumps(_prompt(name, upscale=upscale))), DEV)
    assert not budget.complete
    assert any(why in i for i in budget.incomplete), budget.incomplete


def test_the_file_name_rules_follow_the_two_models():
    assert F.family_of("MAT_Places512_G_fp16.safetensors")[0] == "mat-inpaint"
    assert F.family_of("Places_512_FullData_G.pth")[0] == "mat-inpaint"
    assert F.family_of("big-lama.pt")[0] == "lama"
    assert F.family_of("lama_fp32.safetensors")[0] == "lama"
    assert F.family_of("format.safetensors")[0] is None  # "mat" inside a word is no MAT
    assert F.family_of("dilama_v2.pt")[0] is None


def test_the_packs_encode_node_gives_its_latent_the_encoded_shape():
    budget = _budget("inpaint-promptless")
    sampler = next(s for s in budget.stages if s.stage.node_type == "KSampler")
    assert sampler.stage.latent is not None and sampler.stage.latent.pixel_width
