"""ERNIE-Image (ComfyUI 0.33.0), added as one family module (nodes/estimator/families/ernie_image.py): its
header is recognised by the module's own detector, its published file by its name rule, and the official
template that runs it gets a priced sampling stage instead of "architecture not recognised"."""
import json

import pytest

from helpers_models import spec_params, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.ernie_image import P_ERNIE_IMAGE
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info


def ernie_spec(hidden=256, ffn=768, layers=3, dtype="BF16"):
    """The key layout of comfy/ldm/ernie/model.py (0.33.0) at a small width: per layer q/k/v/o, SwiGLU."""
    spec = {"x_embedder.proj.weight": (dtype, (hidden, 128, 1, 1)), "x_embedder.proj.bias": (dtype, (hidden,)),
            "text_proj.weight": (dtype, (hidden, 3072))}
    for i in range(layers):
        p = f"layers.{i}."
        for n in ("q", "k", "v", "o"):
            spec[p + f"self_attention.{n}_proj.weight"] = (dtype, (hidden, hidden))
        spec[p + "mlp.gate_proj.weight"] = (dtype, (ffn, hidden))
        spec[p + "mlp.up_proj.weight"] = (dtype, (ffn, hidden))
        spec[p + "mlp.linear_fc2.weight"] = (dtype, (hidden, ffn))
    return spec


def test_the_family_lives_in_one_module_and_the_views_carry_it():
    assert registry.module_of("ernie-image") == "ernie_image"
    assert FAMILIES["ernie-image"].kind == DIFFUSION and FAMILIES["ernie-image"].arch["latent_channels"] == 128
    assert registry.MEMORY_USAGE_FACTOR["ernie-image"] == 10.0
    assert any(r.family == "ernie-image" for r in registry.name_rules(DIFFUSION))


def test_a_header_is_recognised_by_the_modules_own_detector(tmp_path):
    spec = ernie_spec()
    path = write_safetensors(tmp_path / "some_finetune.safetensors", spec).path  # the name says nothing
    info = describe(path)
    assert (info.kind, info.family) == (DIFFUSION, "ernie-image")
    assert (info.arch["hidden_size"], info.arch["ffn_dim"], info.arch["depth"]) == (256, 768, 3)
    assert info.params == spec_params(spec)


def test_a_header_without_the_swiglu_gate_is_not_taken_for_it(tmp_path):
    spec = {k: v for k, v in ernie_spec().items() if "gate_proj" not in k}
    info = describe(write_safetensors(tmp_path / "other.safetensors", spec).path)
    assert info.family != "ernie-image"


def test_the_published_file_is_priced_by_its_published_size():
    info = catalogue_info("ernie-image-turbo.safetensors", "diffusion_models")
    assert info.family == "ernie-image" and info.params == P_ERNIE_IMAGE
    assert info.weights_bytes == 16_063_177_687  # the template's 14.96 GiB note


def test_the_official_template_gets_a_priced_sampling_stage():
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == "image_ernie_image"]
    if not found:
        pytest.skip("comfyui-workflow-templates has no image_ernie_image template in this version")
    budget = estimate(read_workflow(found[0].workflow), Device.from_card(find_card("RTX 4090")))
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.title.startswith("Sample: ERNIE-Image")
    work = [it for it in sample.items if it.category == "working"]
    # traced with ComfyUI 0.33.0's ErnieImage at full size (bench/trace_working_memory.py _arches_033)
    assert work and work[0].bytes > 0 and "constants traced from ComfyUI 0.33.0 model code" in work[0].assumption
    assert not any("ernie" in gap for gap in budget.incomplete)
    # 16-bit weights (2 bytes x the published count) are what the sampling stage holds
    assert sum(it.bytes for it in sample.items if it.category == "weights") == 2 * P_ERNIE_IMAGE
    json.dumps(budget.to_dict())
