"""ComfyUI 0.33.0's image-utility models, traced with its own model code (bench/trace_vision.py): RT-DETR v4 (the
SDPose multi-person templates' detector; families/rt_detr.py, graph/packs/nodes_rtdetr.py), BiRefNet background
removal (families/birefnet.py, graph/packs/nodes_bg_removal.py) and FILM / RIFE frame interpolation
(families/frame_interpolation.py, graph/packs/nodes_frame_interpolation.py). The tables reproduce the traces; the
templates whose only gap was these models are complete; a loaded video's unknown frame size still says why."""
import json
import re

import pytest

from workflows.templates import template_workflow
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families import birefnet as B
from vram_budget.nodes.estimator.families import frame_interpolation as FI
from vram_budget.nodes.estimator.families import rt_detr as R
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.host_memory import image_bytes
from vram_budget.nodes.estimator.model_info import DIFFUSION
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.workload import LatentShape

RTX4090 = Device.from_card(find_card("RTX 4090"))
RTX3060 = Device.from_card(find_card("RTX 3060"))
MiB = 2 ** 20


def _working(budget, node_type):
    (stage,) = [s for s in budget.stages if s.stage.node_type == node_type]
    return stage, [it for it in stage.items if it.category == "working"]


# -- the tables are the traces ---------------------------------------------------------------------

def test_rt_detr_batches_reproduce_every_traced_point_and_cap_at_the_nodes_32():
    for batch, traced in R.RTDETR_TRACE.items():
        assert R.detect_peak(batch) == traced, batch
    assert R.detect_peak(100) == R.detect_peak(32)  # nodes_rtdetr.py:37 batches of 32
    # 61,782,744 parameters + 136,155 buffer values at 4 bytes: the published fp32 file's 236.3 MiB
    assert abs(R.P_RTDETR_X * 4 / MiB - 236.3) < 0.2 and abs(R.P_RTDETR_X * 2 / MiB - 118.2) < 0.1


def test_birefnet_phases_reproduce_every_traced_point():
    for (w, h, n), traced in B.BIREFNET_TRACE.items():
        assert B.peak(w, h, n) == traced, (w, h, n)
    # the input's size does not enter the forward; a large batch at 4K is the float32 batch itself on the GPU
    assert B.peak(512, 512) == B.peak(7680, 4320) == B.BIREFNET_FORWARD
    what, _ = max(B.phases(3840, 2160, 64), key=lambda p: p[1])
    assert "resized" in what
    assert abs(B.P_BIREFNET * 2 / MiB - 423.9) < 0.2  # the published birefnet.safetensors


def test_frame_interpolation_tables_reproduce_the_traces():
    for (w, h, m), traced in FI.RIFE_TRACE.items():
        assert FI.peak("rife", w, h, m) == traced, (w, h, m)
    for (w, h, m), traced in FI.FILM_TRACE.items():
        assert abs(FI.peak("film", w, h, m) / traced - 1) < 5e-4, (w, h, m)
    # RIFE pads to 64 (ifnet.py:71): 1000 x 600 costs what 1024 x 640 does
    assert FI.peak("rife", 1000, 600) == FI.peak("rife", 1024, 640)
    # ComfyUI's own request (memory_used_forward) is of the same order, not the same number
    assert FI.comfy_request("film", 1280, 720) == 1700 * 1280 * 720 * 2
    assert 0.5 < FI.peak("film", 1280, 720) / FI.comfy_request("film", 1280, 720) < 1.2


def test_each_family_lives_in_its_module_and_the_dit_formula_never_prices_them():
    for fam, mod in (("rt-detr-v4", "rt_detr"), ("birefnet", "birefnet"), ("film", "frame_interpolation"),
                     ("rife", "frame_interpolation")):
        assert registry.module_of(fam) == mod
        assert FAMILIES[fam].kind == DIFFUSION and "hidden_size" not in FAMILIES[fam].arch
        latent = LatentShape(batch=1, channels=4, height=128, width=128)
        assert memory.diffusion_working(fam, FAMILIES[fam].arch, latent, 1, 0) is None, fam


def test_the_published_files_are_sized_from_the_templates_and_named_by_family():
    for name, folder, fam in (("birefnet.safetensors", "background_removal", "birefnet"),
                              ("film_net_fp16.safetensors", "frame_interpolation", "film"),
                              ("rt_detr_v4-x-hgnet_fp16.safetensors", "diffusion_models", "rt-detr-v4")):
        info = catalogue_info(name, folder)
        assert info is not None and info.family == fam and info.source == "catalogue", name


# -- the templates ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,batch", [("utility_sdpose_multi_person", 1),
                                        ("utility_sdpose_multi_person_video", R.RTDETR_BATCH)])
def test_sdpose_multi_person_templates_are_complete_with_the_traced_detector(name, batch):
    budget = estimate(read_workflow(template_workflow(name)), RTX4090)
    out = budget.to_dict()
    assert out["complete"] is True and out["verdict"] != "unknown", out["incomplete"]
    _, (item,) = _working(budget, "RTDETR_detect")
    assert item.bytes == int(R.detect_peak(batch) * memory.calibration("rt-detr-v4"))
    assert "bench/trace_vision.py" in item.assumption and "ComfyUI 0.33.0" in item.assumption
    if batch == R.RTDETR_BATCH:  # a loaded video: the node's own batch limit, said as an upper bound
        assert "upper bound" in item.assumption
    json.dumps(out)


def test_the_background_removal_template_is_complete():
    budget = estimate(read_workflow(template_workflow("utility_birefnet_remove_background")), RTX4090)
    out = budget.to_dict()
    assert out["complete"] is True and out["verdict"] == "fits", out["incomplete"]
    stage, (item,) = _working(budget, "RemoveBackground")
    assert item.bytes == int(B.BIREFNET_FORWARD * memory.calibration("birefnet"))
    (w,) = [it for it in stage.items if it.category == "weights"]
    # the model ComfyUI builds, at fp16 (the published file, 444,491,366 bytes, adds its header)
    assert w.bytes == 2 * B.P_BIREFNET and w.model.weights_bytes == 444_491_366
    # its loader picks the dtype itself: no "fp8" precision advice for it
    assert not any("BiRefNet" in r["title"] for r in out.get("remedies", []))


def _prompt(loader, model, node, inputs, width, height, batch):
    return {"1": {"class_type": loader, "inputs": {"bg_removal_name" if "Background" in loader else "model_name": model}},
            "2": {"class_type": "EmptyImage", "inputs": {"width": width, "height": height, "batch_size": batch,
                                                          "color": 0}},
            "3": {"class_type": node, "inputs": {**inputs, "images" if node == "FrameInterpolate" else "image": ["2", 0]}},
            "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}}}


def test_background_removal_of_a_large_batch_is_the_batch_on_the_gpu():
    wf = _prompt("LoadBackgroundRemovalModel", "birefnet.safetensors", "RemoveBackground",
                 {"bg_removal_model": ["1", 0]}, 3840, 2160, 64)
    budget = estimate(read_workflow(wf), RTX4090)
    _, (item,) = _working(budget, "RemoveBackground")
    assert item.bytes == int(B.peak(3840, 2160, 64) * memory.calibration("birefnet"))
    assert "resized" in item.label


@pytest.mark.parametrize("model,fam", [("film_net_fp16.safetensors", "film"), ("rife_v4.26.safetensors", "rife")])
def test_frame_interpolation_of_known_frames_is_priced_with_its_frames_in_ram(model, fam):
    wf = _prompt("FrameInterpolationModelLoader", model, "FrameInterpolate",
                 {"interp_model": ["1", 0], "multiplier": 4}, 1920, 1080, 121)
    budget = estimate(read_workflow(wf), RTX3060)
    out = budget.to_dict()
    assert out["complete"] is True, out["incomplete"]
    _, (item,) = _working(budget, "FrameInterpolate")
    assert item.bytes == int(FI.peak(fam, 1920, 1080, 4) * memory.calibration(fam))
    # (121 - 1) x 4 + 1 output frames, float32 on the CPU (nodes_frame_interpolation.py:126-127)
    assert image_bytes(budget.stages) == [481 * 3 * 1920 * 1080 * 4]
    assert not any("fp8" in r["title"] for r in out.get("remedies", []))


def test_the_frame_interpolation_template_says_why_it_cannot_tell():
    budget = estimate(read_workflow(template_workflow("utility_video_frame_interpolation")), RTX4090)
    out = budget.to_dict()
    assert out["complete"] is False and out["verdict"] == "unknown"
    (why,) = [n for n in out["incomplete"] if "FILM" in n]
    assert "known only at run time" in why and re.search(r"2,77\d bytes a frame pixel", why)


def test_a_heavy_rife_file_is_not_priced_with_the_default_trace():
    wf = _prompt("FrameInterpolationModelLoader", "rife_v4.25_heavy.safetensors", "FrameInterpolate",
                 {"interp_model": ["1", 0], "multiplier": 2}, 1280, 720, 10)
    out = estimate(read_workflow(wf), RTX4090).to_dict()
    assert out["complete"] is False and any("heavy" in n for n in out["incomplete"])


# -- a model no rule prices is never free; a model type newer than every known ComfyUI is said ---------------

def _gligen_prompt():
    return {"1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "v1-5-pruned-emaonly.safetensors"}},
            "2": {"class_type": "GLIGENLoader", "inputs": {"gligen_name": "gligen_sd14_textbox_pruned.safetensors"}},
            "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
            "4": {"class_type": "GLIGENTextBoxApply", "inputs": {
                "conditioning_to": ["3", 0], "clip": ["1", 1], "gligen_textbox_model": ["2", 0], "text": "cat",
                "width": 256, "height": 256, "x": 0, "y": 0}},
            "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
            "6": {"class_type": "KSampler", "inputs": {
                "model": ["1", 0], "positive": ["4", 0], "negative": ["3", 0], "latent_image": ["5", 0], "seed": 1,
                "steps": 20, "cfg": 7, "sampler_name": "euler", "scheduler": "normal", "denoise": 1}},
            "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["1", 2]}},
            "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}}}


def test_a_comfyui_node_running_a_model_no_rule_prices_makes_the_answer_cant_tell():
    # GLIGENTextBoxApply consumes the GLIGEN model its loader makes (a type no pack describes): before, the
    # analyzer read it as a text encode and the answer was a confident "fits"
    out = estimate(read_workflow(_gligen_prompt()), RTX4090).to_dict()
    assert out["complete"] is False and out["verdict"] == "unknown"
    assert any("GLIGENTextBoxApply runs a GLIGEN model" in n for n in out["incomplete"])
    # without it the same workflow is complete: the guard is what made it "can't tell"
    wf = _gligen_prompt()
    wf["6"]["inputs"]["positive"] = ["3", 0]
    del wf["4"], wf["2"]
    assert estimate(read_workflow(wf), RTX4090).to_dict()["complete"] is True


def test_a_clip_type_newer_than_every_known_comfyui_says_so():
    budget = estimate(read_workflow(template_workflow("image_moss_image_t2i")), RTX4090)
    out = budget.to_dict()
    assert out["complete"] is False and out["verdict"] == "unknown"
    (why,) = [n for n in out["incomplete"] if "Sample" in n]
    assert "made for a newer ComfyUI" in why and "'moss_image'" in why and "0.33.0" in why
    # a known type says nothing of the kind
    clean = estimate(read_workflow(template_workflow("utility_birefnet_remove_background")), RTX4090).to_dict()
    assert not any("newer ComfyUI" in n for n in clean["notes"])
