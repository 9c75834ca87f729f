"""Issue 33: ComfyUI_LayerStyle's FluxKontextImageScale and ICMask fix the image size of the Flux workflows that use
them (graph/packs/layerstyle.py), so the pack's examples get a complete estimate at that size; its
SegmentAnythingUltra runs SAM, GroundingDINO and ViTMatte inside the node (graph/packs/layerstyle_advance.py)."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _sample(wf, unpriced=()):
    """The Flux sampler's latent; the estimate complete but for the stages named in ``unpriced``."""
    budget = estimate(read_workflow(wf), DEV)
    assert [why for why in budget.incomplete if not any(u in why for u in unpriced)] == [], budget.incomplete
    assert budget.complete == (not unpriced)
    return next(s for s in budget.stages if s.stage.kind == "sample" and s.stage.latent is not None).stage.latent


def test_icmask_makes_two_halves_of_the_output_length():
    # the example also masks its reference with SegmentAnythingUltra V2, priced since round 57 (below)
    wf = json.loads((CORPUS / "chflame163__ComfyUI_LayerStyle__icmask_example.json").read_text(encoding="utf-8"))
    latent = _sample(wf)
    assert (latent.pixel_width, latent.pixel_height) == (1536, 1024)  # patch_right: 2 x 768 wide, 1024 high
    node = next(n for n in wf["nodes"] if n["type"] == "LayerUtility: ICMask")
    node["widgets_values"][:2] = ["patch_bottom", 1000]  # rounded down to 960: 640 wide, 2 x 480 high
    latent = _sample(wf)
    assert (latent.pixel_width, latent.pixel_height) == (640, 960)


def test_the_kontext_scale_is_cores_rule():
    path = CORPUS / "chflame163__ComfyUI_LayerStyle__flux_kontext_image_scale_example.json"
    latent = _sample(json.loads(path.read_text(encoding="utf-8")))
    assert (latent.pixel_width, latent.pixel_height) == (1024, 1024)  # a square bucket for an input of unknown size


# --- SegmentAnythingUltra (V1 / V2): SAM + GroundingDINO (+ ViTMatte) loaded and run inside the node

def _segment_prompt(width=2048, height=2048, node_type="LayerMask: SegmentAnythingUltra V2", **widgets):
    inputs = {"image": ["1", 0], "sam_model": "sam_vit_h (2.56GB)",
              "grounding_dino_model": "GroundingDINO_SwinT_OGC (694MB)", "threshold": 0.3, "detail_method": "VITMatte",
              "detail_erode": 6, "detail_dilate": 6, "black_point": 0.15, "white_point": 0.99, "process_detail": True,
              "prompt": "fox", "device": "cuda", "max_megapixels": 2.0, "cache_model": False}
    inputs.update(widgets)
    return {
        "1": {"class_type": "EmptyImage", "inputs": {"width": width, "height": height, "batch_size": 1, "color": 0}},
        "2": {"class_type": node_type, "inputs": inputs},
        "3": {"class_type": "PreviewImage", "inputs": {"images": ["2", 0]}},
    }


def _segment_stage(prompt):
    budget = estimate(read_workflow(prompt), DEV)
    return budget, next(s for s in budget.stages if s.stage.node_type.startswith("LayerMask: SegmentAnythingUltra"))


def _weights(sb):
    return {i.label.split(" [")[-1].rstrip("]"): i.bytes for i in sb.items if i.category == "weights"}


def test_segment_anything_ultra_v2_prices_sam_dino_and_vitmatte_at_the_megapixel_cap():
    from vram_budget.nodes.estimator.families import groundingdino as GD, sam1 as SAM, vitmatte as VM
    budget, sb = _segment_stage(_segment_prompt())
    assert budget.complete, budget.incomplete
    assert _weights(sb) == {"sam_vit_h_4b8939.pth": SAM.P_SAM1_VIT_H * 4,
                            "groundingdino_swint_ogc.pth": GD.P_GROUNDINGDINO_SWINT * 4,
                            "hustvl/vitmatte-small-composition-1k": VM.PARAM_BYTES[VM.SMALL]}
    # a 2048 x 2048 image is resized to the 2 MP cap: int(sqrt(2 * 2**20)) = 1448 a side, padded to 1472
    assert VM.model_input(2048, 2048, 2.0) == (1472, 1472)
    matte = VM.working_bytes(VM.SMALL, 1472, 1472)
    assert matte > SAM.TRACE["sam1-vit-h"] > GD.TRACE_BYTES  # the global attention at 8,464 tokens is the peak
    working = [i for i in sb.items if i.category == "working"]
    assert len(working) == 1 and "ViTMatte" in working[0].label
    assert working[0].bytes == int(matte * 1.6)  # the default allocator calibration (physics/memory.py)
    # a smaller cap, or an image below it, shrinks the ViTMatte pass until SAM's constant encoder is the peak
    _, small = _segment_stage(_segment_prompt(max_megapixels=1.0, width=800, height=600))
    label = next(i.label for i in small.items if i.category == "working")
    assert "SAM" in label and sb.peak_bytes - small.peak_bytes > 2 * 2**30


def test_vitmatte_rule_reproduces_its_traces():
    """families/vitmatte.py: the quadratic through three traces, checked at sizes it was not fitted on."""
    from vram_budget.nodes.estimator.families import vitmatte as VM
    fitted = {(VM.SMALL, 1024, 1024): 1_339_031_552, (VM.SMALL, 2048, 1024): 5_108_662_272,
              (VM.SMALL, 2048, 2048): 19_901_972_480, (VM.BASE, 2048, 2048): 39_732_641_792,
              (VM.SMALL, 512, 512): 250_085_376}
    checked = {(VM.SMALL, 1024, 768): 776_863_744, (VM.SMALL, 1440, 1440): 4_993_228_800,
               (VM.SMALL, 1952, 1088): 5_234_803_328, (VM.BASE, 1024, 768): 1_540_096_000,
               (VM.BASE, 1440, 1440): 9_951_206_400}
    for key, traced in fitted.items():
        assert abs(VM.working_bytes(*key) - traced) <= 1, key
    for key, traced in checked.items():
        assert abs(VM.working_bytes(*key) / traced - 1) < 0.005, key


def test_segment_anything_ultra_without_vitmatte_on_the_gpu():
    for widgets in ({"detail_method": "GuidedFilter"}, {"device": "cpu"}, {"process_detail": False}):
        budget, sb = _segment_stage(_segment_prompt(**widgets))
        assert budget.complete
        assert "hustvl/vitmatte-small-composition-1k" not in _weights(sb), widgets
        assert "SAM" in next(i.label for i in sb.items if i.category == "working")
    # V1 has no ViTMatte (its detail runs on the CPU)
    v1 = {k: v for k, v in _segment_prompt(node_type="LayerMask: SegmentAnythingUltra")["2"]["inputs"].items()
          if k not in ("detail_method", "detail_erode", "detail_dilate", "device", "max_megapixels")}
    prompt = _segment_prompt(node_type="LayerMask: SegmentAnythingUltra")
    prompt["2"]["inputs"] = dict(v1, detail_range=16)
    budget, sb = _segment_stage(prompt)
    assert budget.complete and len(_weights(sb)) == 2


def test_segment_anything_ultra_base_vitmatte_and_unpriced_choices():
    _, sb = _segment_stage(_segment_prompt(detail_method="vitmatte-base-composition-1k"))
    assert "hustvl/vitmatte-base-composition-1k" in _weights(sb)
    for widgets in ({"sam_model": "sam_hq_vit_h (2.57GB)"}, {"grounding_dino_model": "GroundingDINO_SwinB (938MB)"}):
        budget, sb = _segment_stage(_segment_prompt(**widgets))
        assert not budget.complete and sb.unpriced, widgets  # another network than the traced ones: named, not 0
        assert next(iter(widgets.values())).split(" (")[0] in sb.unpriced


def test_segment_anything_ultra_cache_model_keeps_sam_and_dino_on_the_card():
    def later_peak(cache):
        prompt = _segment_prompt(width=1024, height=1024, cache_model=cache)
        prompt["4"] = {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}}
        prompt["5"] = {"class_type": "VAEEncode", "inputs": {"pixels": ["2", 0], "vae": ["4", 2]}}
        prompt["6"] = {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["4", 2]}}
        prompt["7"] = {"class_type": "PreviewImage", "inputs": {"images": ["6", 0]}}
        budget = estimate(read_workflow(prompt), DEV)
        return next(r for r, s in zip(budget.runs, budget.stages) if s.stage.kind == "vae_decode").peak_bytes
    from vram_budget.nodes.estimator.families import groundingdino as GD, sam1 as SAM
    kept = (SAM.P_SAM1_VIT_H + GD.P_GROUNDINGDINO_SWINT) * 4
    assert later_peak(True) - later_peak(False) == kept
