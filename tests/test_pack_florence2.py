"""Issue 33: kijai/ComfyUI-Florence2 priced by its own run (graph/packs/florence2.py, families/florence2.py): the
weights at the precision widget and one image's generate, whatever the images' size; through ComfyUI-MultiGPU's
Florence2 loaders too."""
from __future__ import annotations

import json

import pytest

from vram_budget.nodes.estimator.families import florence2 as F2
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate
from workflows.corpus import community_dir

DEV = Device.from_card(find_card("RTX 4090"))


def _prompt(model: str, precision: str = "fp16", beams: int = 3, new_tokens: int = 1024, size: int = 1024) -> dict:
    return {
        "1": {"class_type": "EmptyImage", "inputs": {"width": size, "height": size, "batch_size": 1, "color": 0}},
        "2": {"class_type": "DownloadAndLoadFlorence2Model", "inputs": {"model": model, "precision": precision,
                                                                       "attention": "sdpa"}},
        "3": {"class_type": "Florence2Run", "inputs": {"image": ["1", 0], "florence2_model": ["2", 0],
                                                       "text_input": "", "task": "more_detailed_caption",
                                                       "fill_mask": True, "keep_model_loaded": False,
                                                       "max_new_tokens": new_tokens, "num_beams": beams,
                                                       "do_sample": True, "output_mask_select": "", "seed": 1}},
        "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}},
    }


def _stage(prompt):
    budget = estimate(read_workflow(prompt), DEV)
    assert budget.complete, budget.incomplete
    return next(s for s in budget.stages if s.stage.kind == "sample")


@pytest.mark.parametrize("model,size", [("microsoft/Florence-2-large", "large"),
                                        ("MiaoshouAI/Florence-2-base-PromptGen-v2.0", "base"),
                                        ("thwri/CogFlorence-2.2-Large", "large")])
def test_the_name_gives_the_size_and_the_precision_widget_the_bytes(model, size):
    params = F2.SIZES[size][0]
    assert _stage(_prompt(model)).weights_bytes == 2 * params
    assert _stage(_prompt(model, precision="fp32")).weights_bytes == 4 * params


def test_one_images_generate_whatever_its_size():
    base = _stage(_prompt("microsoft/Florence-2-large"))
    assert _stage(_prompt("microsoft/Florence-2-large", size=4096)).working_bytes == base.working_bytes  # 768x768
    assert _stage(_prompt("microsoft/Florence-2-large", beams=6)).working_bytes > base.working_bytes
    assert _stage(_prompt("microsoft/Florence-2-large", new_tokens=4096)).working_bytes > base.working_bytes


def test_a_name_without_a_size_is_not_priced():
    budget = estimate(read_workflow(_prompt("gokaygokay/Florence-2-SD3-Captioner")), DEV)
    assert not budget.complete
    assert any("Florence-2-SD3-Captioner" in m.name for m in budget.missing)


def test_multigpus_florence2_loader_places_it():
    path = community_dir() / "pollockjj__ComfyUI-MultiGPU__ComfyUI-Florence2_detailed_caption_to_flux.json"
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout's corpus")
    budget = estimate(read_workflow(json.loads(path.read_text())), DEV)
    assert budget.complete, budget.incomplete
    florence = next(s for s in budget.stages if "Florence-2" in s.title)
    assert florence.device == "cuda:1" and not florence.on_card


def test_absurd_beams_and_tokens_are_bounded_by_the_nodes_own_limits():
    big = _stage(_prompt("microsoft/Florence-2-large", beams=10**9, new_tokens=10**12))
    top = _stage(_prompt("microsoft/Florence-2-large", beams=64, new_tokens=4096))
    assert big.working_bytes == top.working_bytes
