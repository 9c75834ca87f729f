"""Issue 33: Fannovel16/comfyui_controlnet_aux (graph/packs/controlnet_aux.py). A preprocessor that loads a network
and moves it to the GPU itself is a stage, never read as free because its sockets carry no model: Depth Anything
is priced, the others are named as unpriced; the OpenCV ones cost nothing on the card. Which is which is read from
the pack's own sources (data/controlnet_aux.json, bench/gen_controlnet_aux.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.families.registry import FAMILIES
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs import controlnet_aux as aux
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

DEV = Device.from_card(find_card("RTX 4090"))
DATA = json.loads((Path(aux.__file__).resolve().parents[2] / "data" / "controlnet_aux.json").read_text())


def _prompt(pre_type: str | None, **widgets) -> dict:
    """SD 1.5 with a ControlNet fed by a preprocessor of a 1024x768 image (an API prompt)."""
    p = {
        "1": {"class_type": "CheckpointLoaderSimple",
              "inputs": {"ckpt_name": "v1-5-pruned-emaonly-fp16.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a room", "clip": ["1", 1]}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["1", 1]}},
        "4": {"class_type": "EmptyImage", "inputs": {"width": 1024, "height": 768, "batch_size": 1, "color": 0}},
        "6": {"class_type": "ControlNetLoader",
              "inputs": {"control_net_name": "control_v11f1p_sd15_depth_fp16.safetensors"}},
        "7": {"class_type": "ControlNetApply", "inputs": {"conditioning": ["2", 0], "control_net": ["6", 0],
                                                           "image": ["5", 0] if pre_type else ["4", 0],
                                                           "strength": 1.0}},
        "8": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
        "9": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["7", 0], "negative": ["3", 0],
                                                   "latent_image": ["8", 0], "seed": 1, "steps": 20, "cfg": 7,
                                                   "sampler_name": "euler", "scheduler": "normal", "denoise": 1}},
        "10": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["1", 2]}},
        "11": {"class_type": "SaveImage", "inputs": {"images": ["10", 0], "filename_prefix": "x"}},
    }
    if pre_type:
        p["5"] = {"class_type": pre_type, "inputs": {"image": ["4", 0], "resolution": 512, **widgets}}
    return p


def test_the_table_is_read_from_the_packs_sources():
    nodes = DATA["nodes"]
    assert DATA["repository"] == "Fannovel16/comfyui_controlnet_aux" and len(DATA["commit"]) == 40
    zoe = nodes["Zoe-DepthMapPreprocessor"]
    assert zoe["gpu"] and zoe["detectors"] == ["ZoeDetector"]
    assert nodes["DWPreprocessor"]["gpu"] and "DwposeDetector" in nodes["DWPreprocessor"]["detectors"]
    for cpu in ("CannyEdgePreprocessor", "ColorPreprocessor", "TilePreprocessor", "Scribble_XDoG_Preprocessor"):
        assert not nodes[cpu]["gpu"], cpu
    assert all(v["source"].startswith("node_wrappers/") for v in nodes.values())
    assert DATA["stats"] == {"nodes": len(nodes), "gpu": sum(v["gpu"] for v in nodes.values())}


def test_a_gpu_preprocessor_is_never_read_as_free():
    """Zoe and MiDaS used to be 'nodes without model sockets, not needed': a confident verdict on an estimate that
    left out a network on the card."""
    for node in ("Zoe-DepthMapPreprocessor", "MiDaS-DepthMapPreprocessor", "DWPreprocessor", "OpenposePreprocessor"):
        b = estimate(read_workflow(_prompt(node)), DEV)
        assert not b.complete and b.verdict == "unknown", node
        assert any(node in why and "moves to the GPU itself" in why for why in b.incomplete), b.incomplete


def test_a_cpu_preprocessor_costs_nothing_on_the_card():
    plain = estimate(read_workflow(_prompt(None)), DEV)
    canny = estimate(read_workflow(_prompt("CannyEdgePreprocessor", low_threshold=100, high_threshold=200)), DEV)
    assert canny.complete and [s.stage.kind for s in canny.stages] == [s.stage.kind for s in plain.stages]
    assert canny.peak_bytes == plain.peak_bytes


@pytest.mark.parametrize("node, ckpt, encoder", [
    ("DepthAnythingV2Preprocessor", "depth_anything_v2_vitl.pth", "vitl"),
    ("DepthAnythingV2Preprocessor", "depth_anything_v2_vits.pth", "vits"),
    ("DepthAnythingPreprocessor", "depth_anything_vitl14.pth", "vitl"),  # V1: the same layout, priced as V2
])
def test_depth_anything_is_priced_at_its_518_px_input(node, ckpt, encoder):
    b = estimate(read_workflow(_prompt(node, ckpt_name=ckpt)), DEV)
    assert b.complete, b.incomplete
    sb = next(s for s in b.stages if s.stage.node_type == node)
    weights = next(i for i in sb.items if i.category == "weights")
    assert weights.model.family == f"da2-{encoder}"
    assert weights.bytes == 4 * weights.model.params  # fp32 modules
    vit = next(w for w in sb.stage.working if w[0].startswith("ViT"))
    # 1024x768: the short side to 518, the long to round(1024 * 518 / 768 / 14) x 14 = 686: 37 x 49 patches + 1
    assert "-> 686×518" in vit[2] and "1814 tokens" in vit[2]
    assert aux._model_input(768, 1024) == (518, 686) and aux._model_input(300, 300) == (518, 518)
    assert FAMILIES[f"da2-{encoder}"].arch["patch_size"] == (14, 14)


def test_the_all_in_one_node_is_read_as_the_preprocessor_it_names():
    canny = estimate(read_workflow(_prompt("AIO_Preprocessor", preprocessor="CannyEdgePreprocessor")), DEV)
    assert canny.complete and not any(s.stage.node_type == "AIO_Preprocessor" for s in canny.stages)
    none = estimate(read_workflow(_prompt("AIO_Preprocessor", preprocessor="none")), DEV)
    assert none.complete
    zoe = estimate(read_workflow(_prompt("AIO_Preprocessor", preprocessor="Zoe-DepthMapPreprocessor")), DEV)
    assert not zoe.complete and any("Zoe" in why for why in zoe.incomplete)
    da = estimate(read_workflow(_prompt("AIO_Preprocessor", preprocessor="DepthAnythingV2Preprocessor")), DEV)
    assert da.complete  # the AIO node has no ckpt widget: the preprocessor's default checkpoint (ViT-L)
