"""Mage-Flow (ComfyUI 0.33.0), one family module (nodes/estimator/families/mage_flow.py) and one node-pack module
(graph/packs/nodes_mage.py): its header is told from Qwen-Image's (same keys, other widths), its Mage-VAE is
recognised, TextEncodeMageFlowEdit's latent (128 ch, /16) and its reference latents reach the sampling stage. The
Mage-VAE's working memory stays unknown (no traced profile of its class): the templates remain incomplete on
the VAE stages only."""
import json

import pytest

from helpers_models import spec_params, spec_qwen_image, write_safetensors
from vram_budget.nodes.estimator.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.mage_flow import P_MAGE_FLOW
from vram_budget.nodes.estimator.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.planning import estimate
from vram_budget.nodes.estimator.published import catalogue_info

RTX4090 = Device.from_card(find_card("RTX 4090"))


def mage_spec(hidden=96, layers=3, dtype="BF16"):
    """comfy/ldm/mage_flow/model.py (0.33.0) key layout at a small width; txt_norm 2560 and proj_out 128 rows are
    what model_detection.py:944 tests."""
    spec = {"img_in.weight": (dtype, (hidden, 128)), "txt_norm.weight": (dtype, (2560,)),
            "txt_in.weight": (dtype, (hidden, 2560)), "proj_out.weight": (dtype, (128, hidden))}
    for i in range(layers):
        spec[f"transformer_blocks.{i}.attn.to_q.weight"] = (dtype, (hidden, hidden))
        spec[f"transformer_blocks.{i}.img_mlp.net.0.proj.weight"] = (dtype, (4 * hidden, hidden))
    return spec


def test_the_family_lives_in_its_module():
    assert registry.module_of("mage-flow") == registry.module_of("vae-mage") == "mage_flow"
    assert FAMILIES["mage-flow"].arch["patch_size"] == (1, 1) and registry.MEMORY_USAGE_FACTOR["mage-flow"] == 6.5
    vae = registry.VAE_FAMILIES["vae-mage"]
    assert (vae.latent_channels, vae.spatial, vae.temporal) == (128, 16, None)


def test_a_header_is_mage_flow_and_qwen_image_stays_qwen_image(tmp_path):
    spec = mage_spec()
    info = describe(write_safetensors(tmp_path / "a.safetensors", spec).path)
    assert (info.kind, info.family) == (DIFFUSION, "mage-flow")
    assert (info.arch["hidden_size"], info.arch["depth"], info.arch["ffn_dim"]) == (96, 3, 384)
    assert info.params == spec_params(spec)
    qwen = describe(write_safetensors(tmp_path / "q.safetensors", spec_qwen_image(layers=2)).path)
    assert qwen.family == "qwen-image"


def test_the_vae_header_is_recognised(tmp_path):
    spec = {"student.dconv_encoder.proj_out.weight": ("BF16", (256, 384)),
            "pipeline.y_embedder.decoder.conv_in.weight": ("BF16", (512, 128, 3, 3))}
    info = describe(write_safetensors(tmp_path / "v.safetensors", spec).path)
    assert (info.kind, info.family) == (VAE, "vae-mage")


def test_the_published_files_are_priced():
    info = catalogue_info("mage_flow_edit_turbo_int8_convrot.safetensors", "diffusion_models")
    assert (info.family, info.params, info.weights_bytes, info.quantization) == (
        "mage-flow", P_MAGE_FLOW, 4_155_380_859, "int8")
    assert catalogue_info("mage_flow_vae_bf16.safetensors", "vae").family == "vae-mage"


def _budget(name):
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == name]
    if not found:
        pytest.skip(f"comfyui-workflow-templates has no {name} template in this version")
    return estimate(read_workflow(found[0].workflow), RTX4090)


def _sample_work(budget):
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.title.startswith("Sample: Mage-Flow")
    # int8 convrot: the file kept quantized (its published size)
    assert sum(it.bytes for it in sample.items if it.category == "weights") == 4_155_380_859
    return next(it for it in sample.items if it.category == "working")


def test_the_t2i_template_prices_sampling_and_leaves_only_the_vae_unknown():
    budget = _budget("image_mage_flow_t2i_int8")
    work = _sample_work(budget)
    assert "uncalibrated for mage-flow" in work.assumption and "4096 latent tokens" in work.assumption  # 1024 / 16
    assert budget.incomplete and all("vae-mage" in gap for gap in budget.incomplete)
    json.dumps(budget.to_dict())


def test_the_edit_template_attends_over_the_reference_latent():
    budget = _budget("image_mage_flow_edit_int8")
    work = _sample_work(budget)
    # the target (1024 px / 16 = 64 x 64) and the one connected reference image at the output size
    assert "8192 latent tokens" in work.assumption
    assert any(s.stage.kind == "vae_encode" for s in budget.stages)
    assert budget.incomplete and all("vae-mage" in gap for gap in budget.incomplete)


@pytest.mark.parametrize("switch, width", [(True, 512), (False, 768)])
def test_an_image_switch_passes_the_picked_branchs_size(switch, width):
    """graph/packs/core.py ComfySwitchNode on IMAGE (a generic reading the edit template needs: its reference image
    goes through a switch): the size of the branch the switch picks."""
    prompt = {
        "1": {"class_type": "EmptyImage", "inputs": {"width": 512, "height": 512, "batch_size": 1, "color": 0}},
        "2": {"class_type": "EmptyImage", "inputs": {"width": 768, "height": 512, "batch_size": 1, "color": 0}},
        "3": {"class_type": "ComfySwitchNode", "inputs": {"switch": switch, "on_true": ["1", 0], "on_false": ["2", 0]}},
        "4": {"class_type": "VAELoader", "inputs": {"vae_name": "mage_flow_vae_bf16.safetensors"}},
        "5": {"class_type": "VAEEncode", "inputs": {"pixels": ["3", 0], "vae": ["4", 0]}},
        "6": {"class_type": "SaveLatent", "inputs": {"samples": ["5", 0], "filename_prefix": "x"}},
    }
    budget = estimate(read_workflow(prompt), RTX4090)
    encode = next(s for s in budget.stages if s.stage.kind == "vae_encode")
    assert (encode.stage.latent.pixel_width, encode.stage.latent.pixel_height) == (width, 512)
