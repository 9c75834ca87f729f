"""Issue 33: ComfyUI_LayerStyle's FluxKontextImageScale and ICMask fix the image size of the Flux workflows that use
them (graph/packs/layerstyle.py), so the pack's examples get a complete estimate at that size."""
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
    return next(s for s in budget.stages if s.stage.kind == "sample" and not s.unpriced).stage.latent


# The ICMask example also masks its reference with SegmentAnythingUltra V2 (SAM ViT-H + GroundingDINO the node loads
# and runs itself): named and unpriced, so the estimate is incomplete (round 56; it was answered without them)
SAM_ULTRA = ("LayerMask: SegmentAnythingUltra V2 loads and runs the models 'sam_vit_h (2.56GB)'",)


def test_icmask_makes_two_halves_of_the_output_length():
    wf = json.loads((CORPUS / "chflame163__ComfyUI_LayerStyle__icmask_example.json").read_text(encoding="utf-8"))
    latent = _sample(wf, SAM_ULTRA)
    assert (latent.pixel_width, latent.pixel_height) == (1536, 1024)  # patch_right: 2 x 768 wide, 1024 high
    node = next(n for n in wf["nodes"] if n["type"] == "LayerUtility: ICMask")
    node["widgets_values"][:2] = ["patch_bottom", 1000]  # rounded down to 960: 640 wide, 2 x 480 high
    latent = _sample(wf, SAM_ULTRA)
    assert (latent.pixel_width, latent.pixel_height) == (640, 960)


def test_the_kontext_scale_is_cores_rule():
    path = CORPUS / "chflame163__ComfyUI_LayerStyle__flux_kontext_image_scale_example.json"
    latent = _sample(json.loads(path.read_text(encoding="utf-8")))
    assert (latent.pixel_width, latent.pixel_height) == (1024, 1024)  # a square bucket for an input of unknown size
