"""Issue 35, the planner for every video family (estimator/video_plan.py): on the official templates of LTX-2,
LTX-2.3, HunyuanVideo 1.5 and Wan VACE / S2V / Animate, the plan obeys the latent's own rules, stays resident
where it says so, and the next step up does not; the node's wiring (planner_links, prompt_at) on an API prompt."""
from __future__ import annotations

import glob
import json
import os

import pytest

from vram_budget.nodes.estimator.plan import capacity, video_plan
from vram_budget.nodes.estimator.plan import budget as budget_mod
from vram_budget.nodes.estimator.machine.device import LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.errors import PlanError
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import read_workflow
from vram_budget.nodes.estimator.plan.wan_plan import search_path
from vram_budget.nodes.estimator.workload import with_frames, with_pixels

templates = pytest.importorskip("comfyui_workflow_templates_json")
ROOT = os.path.dirname(templates.__file__)


def template(name: str) -> dict:
    (path,) = glob.glob(f"{ROOT}/**/{name}", recursive=True)
    return json.load(open(path, encoding="utf-8"))


def card(name: str, mode: str = "classic"):
    return device_for_launch(find_card(name), LaunchFlags(), memory_mode=mode)


CASES = [  # template, card, the latent's temporal step, side multiple
    ("video_ltx2_t2v.json", "RTX 5090", 8, 32),
    ("video_ltx2_3_t2v.json", "RTX 5090", 8, 32),
    ("video_hunyuan_video_1.5_720p_t2v.json", "RTX 4090", 4, 16),
    ("video_wan_vace_14B_t2v.json", "H100 80GB", 4, 16),  # its fp16 file (17.3B, 34.7 GB) exceeds a 5090
    ("video_wan2_2_14B_s2v.json", "RTX 4090", 4, 16),
    ("video_wan_animate2.json", "RTX 4090", 4, 16),
]


@pytest.mark.parametrize("name, card_name, step, multiple", CASES)
def test_plans_obey_the_latents_rules_and_are_the_largest_resident(name, card_name, step, multiple):
    workload = read_workflow(template(name))
    base = capacity._main_latent(workload)
    device = card(card_name)
    w, h, n = 1920, 1088, 40 * step + 1  # a target above what these cards hold resident
    changed = []
    for keep in ("balanced", "frames", "resolution"):
        p = video_plan.plan_workload(workload, device, w, h, n, keep)
        changed.append(p.changed and p.fits)
        assert p.length_step == step and p.multiple == multiple
        assert p.width % multiple == 0 and p.height % multiple == 0 and (p.length - 1) % step == 0
        assert p.width <= w and p.height <= h and p.length <= n
        if keep == "frames" and p.fits:
            assert p.length == p.target[2]
        if keep == "resolution" and p.fits:
            assert (p.width, p.height) == p.target[:2]
        if p.fits:
            at = budget_mod.assess(capacity.scaled(workload, base, with_frames(with_pixels(base, p.width, p.height),
                                                                                p.length)), device)
            assert at.outcome == "fits" and p.need_bytes <= device.capacity_bytes
            path = search_path(*p.target, multiple, keep, length_step=step)
            i = path.index((p.width, p.height, p.length))
            if i > 0:  # the candidate before it on the path (one step larger) does not stay resident
                lat = with_frames(with_pixels(base, path[i - 1][0], path[i - 1][1]), path[i - 1][2])
                assert budget_mod.assess(capacity.scaled(workload, base, lat), device).outcome != "fits"
    assert all(changed), changed  # the card holds less than the target: every mode cuts, and finds a size


def test_a_small_card_keeps_the_target_and_says_nothing_stays_resident():
    workload = read_workflow(template("video_ltx2_t2v.json"))
    p = video_plan.plan_workload(workload, card("RTX 3060"), 1280, 720, 121)
    assert not p.fits and (p.width, p.height, p.length) == p.target == (1280, 704, 121)
    assert "nothing down to the smallest size stays resident" in p.text("RTX 3060")
    assert "length" not in " ".join(p.notes) and "1280×720 snapped to 1280×704 (multiples of 32)" in p.notes


def test_lengths_snap_to_the_vaes_temporal_step():
    workload = read_workflow(template("video_ltx2_3_t2v.json"))
    p = video_plan.plan_workload(workload, card("H100 80GB"), 640, 352, 126)
    assert p.target[2] == 121 and "length 126 floored to 121 (lengths are 8k+1" in " ".join(p.notes)


def test_an_image_workflow_and_bad_targets_are_refused():
    from vram_budget.nodes.estimator.workload import Workload
    with pytest.raises(PlanError, match="keep"):
        video_plan.plan_workload(read_workflow(template("video_ltx2_t2v.json")), card("RTX 4090"), 64, 64, 9, "all")
    with pytest.raises(PlanError, match="width"):
        video_plan.plan_workload(read_workflow(template("video_ltx2_t2v.json")), card("RTX 4090"), 0, 64, 9)
    with pytest.raises(Exception, match="sampler"):
        video_plan.plan_workload(Workload(stages=()), card("RTX 4090"), 64, 64, 9)


HV15 = {  # HunyuanVideo 1.5 text-to-video as the official template wires it, the planner (99) feeding its latent
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "hunyuanvideo1.5_720p_t2v_fp16.safetensors",
                                                  "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "qwen_2.5_vl_7b_fp8_scaled.safetensors",
                                                      "clip_name2": "byt5_small_glyphxl_fp16.safetensors",
                                                      "type": "hunyuan_video_15", "device": "default"}},
    "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a fox", "clip": ["2", 0]}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["2", 0]}},
    "5": {"class_type": "EmptyHunyuanVideo15Latent", "inputs": {"width": ["99", 0], "height": ["99", 1],
                                                                 "length": ["99", 2], "batch_size": 1}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["4", 0],
                                               "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 6.0,
                                               "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
    "7": {"class_type": "VAELoader", "inputs": {"vae_name": "hunyuanvideo15_vae_fp16.safetensors"}},
    "8": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["7", 0]}},
    "9": {"class_type": "CreateVideo", "inputs": {"images": ["8", 0], "fps": 24}},
    "10": {"class_type": "PreviewAny", "inputs": {"source": ["99", 3]}},
    "99": {"class_type": "VRAMBudgetWanPlanner", "inputs": {"variant": "Wan 2.1 14B", "precision": "fp16",
                                                             "width": 1280, "height": 720, "length": 121}},
}


def test_the_nodes_wiring_reads_the_workflow_at_the_target():
    assert video_plan.planner_links(HV15, "99") == {"5": ["width", "height", "length"]}
    at = video_plan.prompt_at(HV15, "99", 1280, 720, 121)
    assert "99" not in at and at["5"]["inputs"]["width"] == 1280 and at["10"]["inputs"]["source"] == ""
    workload = read_workflow(at)
    assert video_plan.feeds_the_sampled_latent(workload, {"5": ["width"]})
    assert not video_plan.feeds_the_sampled_latent(workload, {"3": ["text"]})
    assert video_plan.workflow_fps(HV15) == 24.0
    p = video_plan.plan_workload(workload, card("RTX 4090"), 1280, 720, 121)
    assert p.model == "HunyuanVideo 1.5" and p.latent_node == "EmptyHunyuanVideo15Latent" and p.fits
