"""Issue 33: ComfyUI-PhotoMaker-Plus (graph/packs/photomaker_plus.py, families/photomaker.py): the PhotoMaker file
(its ID encoder the encode node leaves on the card, its LoRA on the model) rides on the SDXL model as memory that
cannot stream; InsightFace on a GPU provider leaves the encode stage unpriced, named, and that stage is never folded
into another prompt's."""
from __future__ import annotations

from pathlib import Path

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _budget(name: str):
    path = CORPUS / f"shiimizu__ComfyUI-PhotoMaker-Plus__{name}.json"
    return estimate(read_workflow(path.read_text(encoding="utf-8")), DEV)


def test_the_photomaker_file_rides_on_the_model_it_patches():
    for name, file in (("v1-workflow", "photomaker-v1.bin"), ("v2-simple-workflow", "photomaker-v2.bin")):
        budget = _budget(name)
        assert budget.complete, (name, budget.incomplete, budget.missing)
        published = catalogue_info(file, "photomaker").weights_bytes
        held = [s for s in budget.stages if s.stage.kind == "sample"
                and any(r.name == file for r in s.stage.models)]
        assert held and all(s.working_bytes >= published for s in held), name  # cannot stream: working memory


def test_insightface_on_cuda_leaves_the_encode_unpriced_and_unmerged():
    budget = _budget("v2-workflow")  # PhotoMakerInsightFaceLoader on "CUDA"
    assert not budget.complete and budget.verdict == "unknown"
    assert any("InsightFace on the CUDA provider" in i for i in budget.incomplete), budget.incomplete
    encodes = [s for s in budget.stages if s.stage.kind == "text_encode"]
    assert any(s.stage.node_type == "PhotoMakerEncodePlus" and s.stage.unpriced for s in encodes)
