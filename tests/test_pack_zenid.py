"""Issue 33: vuongminh1907/ComfyUI_ZenID (graph/packs/zenid.py). ApplyZenID / ZenIDCombineFace load InstantID's
IP-Adapter themselves (it rides on the MODEL they patch), run InsightFace on the provider their widget names, and
apply InstantID's ControlNet: a bare 'diffusion_pytorch_model.safetensors' is read with that family hint (the
loader's hint as a sub-folder finds ComfyUI-Manager's 'instantid/' entry, 2.50 GB)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _wf(name: str, provider: str | None = None) -> dict:
    wf = json.loads((CORPUS / f"vuongminh1907__ComfyUI_ZenID__{name}.json").read_text(encoding="utf-8"))
    for n in wf["nodes"]:
        if provider and n["type"] in ("ApplyZenID", "ZenIDCombineFace"):
            n["widgets_values"][1] = provider
    return wf


@pytest.mark.parametrize("name", ["ZenID_FaceSwap", "ZenID_combineFace"])
def test_the_examples_complete_with_instantids_controlnet_and_adapter(name):
    budget = estimate(read_workflow(_wf(name)), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    cn = next(r for r in sample.stage.models if r.role == "controlnet")
    assert cn.name == "diffusion_pytorch_model.safetensors" and cn.hint == "instantid"
    held = [i for i in sample.items if i.label and "ip-adapter.bin" in i.label]
    assert held and held[0].category == "working"  # the pack keeps it on the GPU: never streamed
    controlnet = next(i for i in sample.items if i.label and "diffusion_pytorch_model" in i.label)
    assert controlnet.bytes > 2 * 10**9  # Manager's InstantID ControlNet, 2.50 GB


def test_apply_encodes_the_source_and_returns_its_latent():
    budget = estimate(read_workflow(_wf("ZenID_FaceSwap")), DEV)
    enc = next(s for s in budget.stages if s.stage.kind == "vae_encode" and s.stage.node_type == "ApplyZenID")
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert enc.stage.latent is not None and sample.stage.latent is not None
    assert (sample.stage.latent.width, sample.stage.latent.height) == (enc.stage.latent.width, enc.stage.latent.height)
    text = next(s for s in budget.stages if s.stage.kind == "text_encode" and s.stage.node_type == "ApplyZenID")
    assert all(r.part != "vae" for r in text.stage.models)  # its prompts: the CLIP only


@pytest.mark.parametrize("name", ["ZenID_FaceSwap", "ZenID_combineFace"])
def test_insightface_on_a_gpu_provider_is_named_not_priced(name):
    budget = estimate(read_workflow(_wf(name, provider="CUDA")), DEV)
    assert not budget.complete and budget.verdict == "unknown"
    assert any("CUDA provider" in str(m) for m in (*budget.missing, *budget.incomplete)), (budget.missing,
                                                                                              budget.incomplete)
