"""Issue 33: Acly's comfyui-inpaint-nodes (graph/packs/inpaint_nodes.py). Apply Fooocus Inpaint patches the model it
is given (a MODEL passing through, not a sampler with no model); the patch rides on that model as a weight patch of
its file's size; a MAT / LaMa inpainting model stays named as unpriced."""
from __future__ import annotations

from pathlib import Path

from vram_budget.nodes.estimator.graph import read_workflow
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


def test_a_mat_or_lama_model_is_named_as_unpriced():
    budget = _budget("inpaint-preprocess")
    assert not budget.complete
    assert any("INPAINT_InpaintWithModel" in i and "MAT" in i for i in budget.incomplete), budget.incomplete
    assert not any("no diffusion model identified" in i for i in budget.incomplete)


def test_the_packs_encode_node_gives_its_latent_the_encoded_shape():
    budget = _budget("inpaint-promptless")
    sampler = next(s for s in budget.stages if s.stage.node_type == "KSampler")
    assert sampler.stage.latent is not None and sampler.stage.latent.pixel_width
