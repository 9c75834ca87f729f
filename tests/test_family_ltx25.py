"""LTX-2.5 (ComfyUI 0.33.0; "LTX 2.4" in its code): the LTXAV transformer with LTX-2.3's widths but another
configuration (ff_bias False, the keyframe marker), priced by the first-principles formula; its video VAE is
another class (CausalDiffusionVAE, sd.py:616-631), untraced, so its working memory stays unknown; its audio VAE
is LTX-2.3's. families/ltx.py."""
import dataclasses
import json

import pytest

from vram_budget.nodes.estimator import catalogue, memory, vae_memory
from vram_budget.nodes.estimator.device import Device
from vram_budget.nodes.estimator.errors import VramBudgetError
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families.ltx import P_LTX25, P_VAE_LTX25
from vram_budget.nodes.estimator.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.name_infer import infer_info
from vram_budget.nodes.estimator.planning import estimate
from vram_budget.nodes.estimator.workload import LatentShape


def test_ltx25_lives_in_the_ltx_module_without_borrowing_ltx23s_profile():
    assert registry.module_of("ltx2.5") == "ltx"
    assert FAMILIES["ltx2.5"].kind == DIFFUSION
    assert "ltx2.5" not in registry.WORKING_MEMORY_ALIAS  # another configuration than the traced LTX-2.3
    assert registry.TEXT_TOKENS["ltx2.5"] == 1024  # text_encoders/lt.py:84-90 (Gemma 4 padded to 1024)
    assert "vae-ltx2.5" not in registry.VAE_TRACED_AS


def test_names_pick_the_ltx25_family_and_not_ltx2():
    info, _ = infer_info("ltx-2.5-22b-dev-transformer-bf16.safetensors", "diffusion", "diffusion_models")
    assert info.family == "ltx2.5" and info.params == P_LTX25
    info, _ = infer_info("ltx-2.3-22b-dev.safetensors", "diffusion", "diffusion_models")
    assert info.family == "ltx2.3"
    vae, _ = infer_info("ltx-2.5-video-vae-fp16.safetensors", "vae", "vae")
    assert vae.family == "vae-ltx2.5" and vae.params == P_VAE_LTX25
    conv, _ = infer_info("ltx-2.5-video-vae-conv-bf16.safetensors", "vae", "vae")
    assert conv is None or conv.family != "vae-ltx2.5"  # the conv VAE is another file


def test_the_diffusion_vae_count_reproduces_the_published_size():
    assert round(2 * P_VAE_LTX25 / 1e9, 2) == 1.47  # ltx-2.5-video-vae-bf16: 1.47 GB published
    assert round(1 * P_LTX25 / 1e9, 1) == 21.0  # all linears at 1 byte; the int8-convrot file is 21.50 GB


def test_the_transformer_is_priced_by_the_formula_and_said_uncalibrated():
    lat = LatentShape(batch=1, channels=128, height=16, width=24, frames=16, pixel_frames=121)
    wm = memory.diffusion_working("ltx2.5", FAMILIES["ltx2.5"].arch, lat, 1)
    assert wm.source == "formula" and "uncalibrated for ltx2.5" in wm.assumption
    traced23 = memory.diffusion_working("ltx2.3", FAMILIES["ltx2.3"].arch, lat, 1)
    assert traced23.source == "traced" and wm.bytes > traced23.bytes  # the formula is the larger here


def test_the_diffusion_vae_has_no_borrowed_working_memory():
    with pytest.raises(VramBudgetError, match="vae-ltx2.5"):
        vae_memory.vae_decode_bytes("vae-ltx2.5", (1, 128, 16, 16, 24))


@pytest.fixture
def ltx25_catalogue(monkeypatch):
    """The three LTX-2.5 files of data/catalogue.json with the families this module gives them (the file lists
    them as "unknown"; the lead changes it)."""
    fam = {"ltx-2.5-22b-distilled-transformer-comfy-int8-convrot.safetensors": "ltx2.5",
           "ltx-2.5-video-vae-bf16.safetensors": "vae-ltx2.5",
           "ltx-2.5-audio-vae-bf16.safetensors": "vae-ltx2.3-audio"}
    table = {k: [dataclasses.replace(e, family=fam.get(e.name, e.family)) for e in hits]
             for k, hits in catalogue._BY_NAME.items()}
    monkeypatch.setattr(catalogue, "_BY_NAME", table)


def test_the_t2v_template_with_the_catalogue_families(ltx25_catalogue):
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == "video_ltx2_5_t2v"]
    if not found:
        pytest.skip("no video_ltx2_5_t2v template in this version")
    budget = estimate(read_workflow(found[0].workflow), Device.from_card(find_card("RTX 4090")))
    samples = [s for s in budget.stages if s.stage.kind == "sample"]
    assert samples and all("uncalibrated for ltx2.5" in it.assumption
                           for s in samples for it in s.items if it.category == "working")
    audio = next(s for s in budget.stages if "audio VAE" in s.title)
    assert any(it.category == "working" and it.bytes > 0 for it in audio.items)
    # what is left: the diffusion-decoder video VAE, untraced
    assert budget.incomplete and all("vae-ltx2.5" in gap for gap in budget.incomplete)
    json.dumps(budget.to_dict())
    assert VAE == FAMILIES["vae-ltx2.5"].kind
