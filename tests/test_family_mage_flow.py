"""Mage-Flow (ComfyUI 0.33.0), one family module (nodes/estimator/families/mage_flow.py) and one node-pack module
(graph/packs/nodes_mage.py): its header is told from Qwen-Image's (same keys, other widths), its Mage-VAE is
recognised, TextEncodeMageFlowEdit's latent (128 ch, /16) and its reference latents reach the sampling stage. The
Mage-VAE (no traced profile of its class) is priced with ComfyUI 0.33's own estimate for it (sd.py:614-615), checked
here against the lambdas written out by hand; the templates are complete."""
import json

import pytest

from helpers_models import spec_params, spec_qwen_image, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.mage_flow import P_MAGE_FLOW
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape

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


def test_the_t2i_template_prices_sampling_and_the_vae():
    budget = _budget("image_mage_flow_t2i_int8")
    work = _sample_work(budget)
    assert "constants traced from ComfyUI 0.33.0 model code" in work.assumption and "4096 latent tokens" in work.assumption  # 1024 / 16
    assert not budget.incomplete, budget.incomplete
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    vae_work = next(it for it in decode.items if it.category == "working")
    # sd.py:615 at the 64 x 64 latent, bf16: 1000 x 64 x 64 x 16 x 16 x 2
    assert vae_work.bytes == 1000 * 64 * 64 * 16 * 16 * 2 and "not traced" in vae_work.assumption
    json.dumps(budget.to_dict())


def test_the_vae_is_priced_with_comfyuis_own_estimate():
    latent = LatentShape(batch=1, channels=128, height=48, width=64, pixel_height=768, pixel_width=1024,
                         spatial_compression=16)
    got, how, notes = vae_working("vae-mage", latent, decode=True, dtype_bytes=2)
    # sd.py:615: memory_used_decode = 1000 * shape[2] * shape[3] * 16 * 16 * dtype_size on [1, 128, 48, 64]
    assert got == 1000 * 48 * 64 * 16 * 16 * 2 == 1_572_864_000 and not notes
    assert "sd.py:615" in how and "not traced" in how
    # sd.py:614: memory_used_encode = 400 * shape[2] * shape[3] * dtype_size on the [1, 3, 768, 1024] pixels
    assert vae_working("vae-mage", latent, decode=False, dtype_bytes=2)[0] == 400 * 768 * 1024 * 2 == 629_145_600
    # VAEDecodeTiled 512 px: 32 latent pixels a side; ComfyUI reserves the estimate at one tile (sd.py:1328)
    tiled = {"tile_size": 512, "overlap": 64, "temporal_size": 64, "temporal_overlap": 8}
    assert vae_working("vae-mage", latent, decode=True, tiled=tiled, dtype_bytes=2)[0] == 1000 * 32 * 32 * 256 * 2
    # per batch item (the lambdas read no batch): a batch of 2 decoded in one call is twice that
    two = LatentShape(batch=2, channels=128, height=48, width=64, spatial_compression=16)
    assert vae_working("vae-mage", two, decode=True, dtype_bytes=2)[0] == 2 * 1_572_864_000


@pytest.mark.parametrize("name", ["image_mage_flow_t2i_int8", "image_mage_flow_turbo_t2i_int8",
                                  "image_mage_flow_edit_int8", "image_mage_flow_edit_turbo_int8"])
def test_the_templates_are_complete(name):
    budget = _budget(name)
    assert not budget.incomplete, budget.incomplete
    assert budget.to_dict()["complete"] is True


def test_the_edit_template_attends_over_the_reference_latent():
    budget = _budget("image_mage_flow_edit_int8")
    work = _sample_work(budget)
    # the target (1024 px / 16 = 64 x 64) and the one connected reference image at the output size
    assert "8192 latent tokens" in work.assumption
    encode = next(s for s in budget.stages if s.stage.kind == "vae_encode")
    # sd.py:614 on the 1024 x 1024 reference image, bf16
    assert next(it.bytes for it in encode.items if it.category == "working") == 400 * 1024 * 1024 * 2
    assert not budget.incomplete, budget.incomplete


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
