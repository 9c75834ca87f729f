"""Issue 33: cubiq/ComfyUI_InstantID priced by its own layout (families/instantid.py, graph/packs/instantid.py): the
InstantID adapter rides on the SDXL model it patches as memory that cannot stream, at the UNet's 16-bit dtype (its
file is fp32); its ControlNet is read by the generic conditioning walk."""
from __future__ import annotations

from pathlib import Path

from vram_budget.nodes.estimator.families.instantid import P_INSTANTID
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.published import manager_info
from vram_budget.nodes.estimator.plan.planning import estimate_prompt

WORKFLOWS = sorted((Path(__file__).resolve().parent / "workflows" / "community_extra").glob("cubiq__ComfyUI_InstantID__*"))


def test_the_count_is_the_published_fp32_file():
    published = manager_info("ip-adapter.bin", "instantid")  # ComfyUI-Manager: 1.69 GB (decimal), fp32
    assert published is not None and abs(P_INSTANTID * 4 - published.weights_bytes) < 0.005 * published.weights_bytes


def test_instantid_workflows_are_complete_with_the_adapter_and_the_controlnet_on_the_card():
    assert len(WORKFLOWS) == 5
    dev = Device.from_card(find_card("RTX 3060"))
    for path in WORKFLOWS:
        b = estimate_prompt(path.read_text(encoding="utf-8"), dev)
        assert b.complete and b.verdict != "unknown", (path.name, b.incomplete, b.missing)
        if "InstantID_depth" in path.name:  # its depth map comes from Zoe, which comfyui_controlnet_aux runs on the
            # GPU: a stage of its own (graph/packs/controlnet_aux.py, families/zoedepth.py)
            assert any(s.stage.node_type == "Zoe-DepthMapPreprocessor" and s.working_bytes > 0 for s in b.stages)
        sample = next(s for s in b.stages if s.stage.kind == "sample" and "Preprocessor" not in s.stage.node_type)
        held = [i for i in sample.items if "InstantID" in i.label]
        assert held and held[0].category == "working" and held[0].bytes == P_INSTANTID * 2
        assert any(i.category == "weights" and "instantid/diffusion_pytorch_model" in i.label for i in sample.items)
