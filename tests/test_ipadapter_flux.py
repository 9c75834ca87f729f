"""Issue 33: ComfyUI-IPAdapter-Flux priced by its own layout (families/ip_adapter_flux.py,
graph/packs/ipadapter_flux.py): on the "cuda" provider the InstantX adapter and SigLIP ride on the Flux model as memory
that cannot stream; on "cpu" they hold none of the card's memory."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families.ip_adapter_flux import (P_IPA_FLUX_INSTANTX, P_SIGLIP_SO400M_VISION,
                                                                  instantx_flux)
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.published import catalogue_info, manager_info
from vram_budget.nodes.estimator.plan.planning import estimate_prompt

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
WORKFLOWS = sorted(CORPUS.glob("Shakker-Labs__ComfyUI-IPAdapter-Flux__*.json"))


def test_the_counts_match_the_published_files():
    published = manager_info("ip-adapter.bin", "ipadapter-flux")  # ComfyUI-Manager: 5.29 GB (decimal)
    assert published is not None and published.family == "ip-adapter-flux-instantx"
    assert abs(P_IPA_FLUX_INSTANTX * 2 - published.weights_bytes) < 0.005 * published.weights_bytes
    assert P_IPA_FLUX_INSTANTX - instantx_flux(tokens=4) > 1.1e9  # the loader asks for 128 tokens, not 4
    sigclip = catalogue_info("sigclip_vision_patch14_384.safetensors", "clip_vision")  # the same tower, 857 MB
    assert sigclip is not None
    assert abs(P_SIGLIP_SO400M_VISION * 2 - sigclip.weights_bytes) < 0.005 * sigclip.weights_bytes


def _estimate(wf) -> object:
    return estimate_prompt(json.dumps(wf), Device.from_card(find_card("RTX 4090")))


def test_the_examples_are_complete_and_hold_the_adapter_on_the_card():
    assert len(WORKFLOWS) == 3
    for path in WORKFLOWS:
        b = _estimate(json.loads(path.read_text(encoding="utf-8")))
        assert b.complete, (path.name, b.incomplete, b.missing)
        held = {m.family: m for m in b.models.values() if m.kind == "ipadapter_flux"}
        assert set(held) == {"ip-adapter-flux-instantx", "siglip-so400m-vision"}
        sample = next(s for s in b.stages if s.stage.kind == "sample")
        assert sample.working_bytes >= 2 * (P_IPA_FLUX_INSTANTX + P_SIGLIP_SO400M_VISION)  # cannot stream


def test_the_cpu_provider_holds_nothing_on_the_card():
    wf = json.loads(WORKFLOWS[0].read_text(encoding="utf-8"))
    on_gpu = _estimate(wf)
    for n in wf["nodes"]:
        if n["type"] == "IPAdapterFluxLoader":
            n["widgets_values"][2] = "cpu"
    on_cpu = _estimate(wf)
    assert on_cpu.complete and not any(m.kind == "ipadapter_flux" for m in on_cpu.models.values())
    gpu_sample = next(s for s in on_gpu.stages if s.stage.kind == "sample")
    cpu_sample = next(s for s in on_cpu.stages if s.stage.kind == "sample")
    assert gpu_sample.working_bytes - cpu_sample.working_bytes >= 2 * P_IPA_FLUX_INSTANTX


def test_xlabs_flux_ip_adapter_holds_its_block_processors_in_bf16():
    """x-flux-comfyui: ApplyFluxIPAdapter moves the 19 double-block processors (k / v Linear(4096 -> 3072) with bias)
    to the GPU in bf16; the image projection and the CLIP vision tower stay on the CPU. With the 4-token projection
    the file's count is the 982 MB XLabs-AI/flux-ip-adapter publishes at 16 bit."""
    import pytest  # noqa: PLC0415

    from vram_budget.nodes.estimator.families.ip_adapter_flux import P_IPA_FLUX_XLABS_HELD  # noqa: PLC0415
    from workflows.corpus import community_dir  # noqa: PLC0415

    assert P_IPA_FLUX_XLABS_HELD == 19 * 2 * (4096 * 3072 + 3072) == 478_267_392
    assert round((P_IPA_FLUX_XLABS_HELD + 768 * 4 * 4096 + 4 * 4096 + 2 * 4096) * 2 / 1e6) == 982
    path = community_dir() / "XLabs-AI__x-flux-comfyui__ip_adapter_workflow.json"
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout's corpus")
    budget = _estimate(json.loads(path.read_text()))
    assert budget.complete, budget.incomplete
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    held = [i for i in sample.items if "XLabs Flux IP-Adapter" in i.label]
    assert held and held[0].bytes == 2 * P_IPA_FLUX_XLABS_HELD and held[0].category == "working"
