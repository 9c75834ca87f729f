"""Issue 33: Fannovel16/comfyui_controlnet_aux (graph/packs/controlnet_aux.py). A preprocessor that loads a network
and moves it to the GPU itself is a stage, never read as free because its sockets carry no model: Depth Anything,
MiDaS and Zoe are priced, the others are named as unpriced; the OpenCV ones cost nothing on the card. Which is which
is read from the pack's own sources (data/controlnet_aux.json, bench/gen_controlnet_aux.py)."""
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
    for node in ("DWPreprocessor", "OpenposePreprocessor", "LeReS-DepthMapPreprocessor"):
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
    dw = estimate(read_workflow(_prompt("AIO_Preprocessor", preprocessor="DWPreprocessor")), DEV)
    assert not dw.complete and any("DwposeDetector" in why for why in dw.incomplete)
    da = estimate(read_workflow(_prompt("AIO_Preprocessor", preprocessor="DepthAnythingV2Preprocessor")), DEV)
    assert da.complete  # the AIO node has no ckpt widget: the preprocessor's default checkpoint (ViT-L)


@pytest.mark.parametrize("node", ["MiDaS-DepthMapPreprocessor", "MiDaS-NormalMapPreprocessor"])
def test_midas_is_priced_by_its_trace_whatever_the_image(node):
    """MidasDetector resizes every image to 384 x 384 for DPT-Hybrid (families/midas.py): the network's traced peak
    is one number; only the depth map resized back to the detect map grows with the image."""
    from vram_budget.nodes.estimator.families import midas
    from vram_budget.nodes.estimator.physics import memory
    b = estimate(read_workflow(_prompt(node)), DEV)
    assert b.complete, b.incomplete
    sb = next(s for s in b.stages if s.stage.node_type == node)
    weights = next(i for i in sb.items if i.category == "weights")
    assert weights.model.family == "midas-dpt-hybrid" and weights.bytes == 489_511_940  # fp32, the published file
    (label, nbytes, why), = sb.stage.working
    k = memory.calibration("midas-dpt-hybrid")
    assert nbytes == int(midas.TRACE_BYTES * k) and "traced" in why
    # 1024x768 at resolution 512: the map is 512 x round(1024 * 512 / 768) = 683 -> padded to 704 x 512
    assert "704×512" in why
    # a detect map past the network's peak: 8 bytes a pixel of it
    assert midas.working_bytes(4096, 8192) == 8 * 4096 * 8192 > midas.TRACE_BYTES
    assert midas.working_bytes(704, 512) == midas.TRACE_BYTES
    big = estimate(read_workflow(_prompt(node, resolution=8192)), DEV)
    (_, big_bytes, _), = next(s for s in big.stages if s.stage.node_type == node).stage.working
    assert big_bytes == int(8 * 8192 * 10944 * k)  # 8192 x round(1024 * 8192 / 768) = 10923 -> 10944


def test_midas_with_an_unknown_image_says_what_it_assumed():
    p = _prompt("MiDaS-DepthMapPreprocessor")
    p["4"] = {"class_type": "LoadImage", "inputs": {"image": "not-here.png"}}  # core assumes 1 megapixel, and says so
    b = estimate(read_workflow(p), DEV)
    sb = next(s for s in b.stages if s.stage.node_type == "MiDaS-DepthMapPreprocessor")
    assert "1024×1024 (assumed)" in sb.stage.working[0][2]
    # a video whose frame size is known only at run time: the network's constant, with the map's bound said
    p["4"] = {"class_type": "VHS_LoadVideo", "inputs": {"video": "clip.mp4", "force_rate": 0, "custom_width": 0,
                                                        "custom_height": 0, "frame_load_cap": 16,
                                                        "skip_first_frames": 0, "select_every_nth": 1}}
    b = estimate(read_workflow(p), DEV)
    sb = next(s for s in b.stages if s.stage.node_type == "MiDaS-DepthMapPreprocessor")
    assert any("aspect ratio of 88:1" in n and "assumed" in n for n in sb.stage.notes), sb.stage.notes


@pytest.mark.parametrize("node", ["Zoe-DepthMapPreprocessor", "Zoe_DepthAnythingPreprocessor"])
def test_zoe_is_priced_at_its_processors_input(node):
    """ZoeDepth NK (families/zoedepth.py): the detect map resized toward 384 x 512 keeping its aspect; the traced peak
    per model-input pixel times that input."""
    from vram_budget.nodes.estimator.families import zoedepth
    from vram_budget.nodes.estimator.physics import memory
    b = estimate(read_workflow(_prompt(node)), DEV)
    assert b.complete, b.incomplete
    sb = next(s for s in b.stages if s.stage.node_type == node)
    weights = next(i for i in sb.items if i.category == "weights")
    assert weights.model.family == "zoedepth-nk" and weights.bytes == 4 * zoedepth.P_ZOEDEPTH_NK
    (_, nbytes, why), = sb.stage.working
    # 1024 x 768 at resolution 512: a 704 x 512 detect map, padded to 816 x 608 and resized by 384 / 608 (the
    # scale nearer 1) to 515 x 384
    assert zoedepth.model_input(704, 512) == (515, 384) and "515×384 input" in why
    assert nbytes == int(zoedepth.working_bytes(704, 512) * memory.calibration("zoedepth-nk"))
    # the traced points the rule must cover (bench/trace_vision.py zoe@WxH, peak bytes)
    for (w, h), traced in {(512, 512): 647_709_200, (960, 512): 667_482_640, (4096, 1024): 1_366_279_696,
                           (1024, 4096): 2_428_924_432}.items():
        assert traced <= zoedepth.working_bytes(w, h) <= 1.05 * traced, (w, h)


def test_zoe_on_a_video_of_unknown_size_is_not_priced():
    p = _prompt("Zoe-DepthMapPreprocessor")
    p["4"] = {"class_type": "VHS_LoadVideo", "inputs": {"video": "clip.mp4", "force_rate": 0, "custom_width": 0,
                                                        "custom_height": 0, "frame_load_cap": 16,
                                                        "skip_first_frames": 0, "select_every_nth": 1}}
    b = estimate(read_workflow(p), DEV)
    assert not b.complete and any("ZoeDepth's input keeps the image's aspect" in i for i in b.incomplete)
