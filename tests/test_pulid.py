"""Issue 33: ComfyUI-PuLID-Flux and PuLID_ComfyUI (SDXL) priced by their own layouts (families/pulid.py,
graph/packs/pulid_flux.py, pulid_sdxl.py): the PuLID model and the EVA CLIP the apply node keeps on the GPU ride on
the model as memory that cannot stream; InsightFace on the CPU holds no GPU memory, on CUDA it is named as not
priced."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families.ip_adapter import SDXL_LAYERS, ip_layers
from vram_budget.nodes.estimator.families.pulid import P_EVA02_CLIP_L_336, P_PULID_FLUX, P_PULID_SDXL, id_encoder
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.published import manager_info
from vram_budget.nodes.estimator.plan.planning import estimate_prompt

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
WORKFLOWS = sorted(CORPUS.glob("*PuLID-Flux*.json"))
SDXL_WORKFLOWS = sorted(CORPUS.glob("cubiq__PuLID_ComfyUI__*.json"))


def test_the_counts_match_the_published_file_and_the_eva_paper():
    published = manager_info("pulid_flux_v0.9.1.safetensors", "pulid")  # ComfyUI-Manager's 1.14 GB (decimal)
    assert published is not None and abs(P_PULID_FLUX * 2 - published.weights_bytes) < 0.005 * published.weights_bytes
    assert abs(P_EVA02_CLIP_L_336 - 304e6) < 0.01 * 304e6  # EVA-CLIP: EVA02-L/14's vision tower, 304M


def test_the_pulid_workflows_are_complete_and_hold_pulid_on_the_card():
    assert len(WORKFLOWS) == 5
    dev = Device.from_card(find_card("RTX 4090"))
    for path in WORKFLOWS:
        b = estimate_prompt(path.read_text(encoding="utf-8"), dev)
        assert b.complete, (path.name, b.incomplete, b.missing)
        kinds = {m.family: m for m in b.models.values() if m.kind == "pulid"}
        assert set(kinds) == {"pulid-flux", "eva02-clip-l"}
        held = sum(2 * m.params for m in kinds.values())
        sample = next(s for s in b.stages if s.stage.kind == "sample")
        assert sample.working_bytes >= held  # working memory of the stage, not elastic weights
        assert any("facexlib" in n for n in b.notes)


def test_insightface_on_cuda_is_named_as_not_priced():
    wf = json.loads(WORKFLOWS[0].read_text(encoding="utf-8"))
    for n in wf["nodes"]:
        if n["type"] == "PulidFluxInsightFaceLoader":
            n["widgets_values"] = ["CUDA"]
    b = estimate_prompt(json.dumps(wf), Device.from_card(find_card("RTX 4090")))
    assert not b.complete and b.verdict == "unknown"
    assert any("InsightFace" in m.name and "onnxruntime" in m.name for m in b.missing) or \
        any("InsightFace" in i for i in b.incomplete)


def test_pulid_sdxl_is_its_id_encoder_and_the_sdxl_cross_attention_kv():
    assert P_PULID_SDXL == id_encoder() + ip_layers(2048, SDXL_LAYERS) == 395_673_600  # 791 MB at 16 bit
    dev = Device.from_card(find_card("RTX 4090"))
    assert len(SDXL_WORKFLOWS) == 5
    for path in SDXL_WORKFLOWS:
        b = estimate_prompt(path.read_text(encoding="utf-8"), dev)
        assert b.complete, (path.name, b.incomplete, b.missing)
        assert {m.family for m in b.models.values() if m.kind == "pulid"} == {"pulid-sdxl", "eva02-clip-l"}
