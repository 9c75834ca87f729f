"""TripoSplat (ComfyUI 0.33.0), added as one family module (families/triposplat.py) and one node-pack module
(graph/packs/nodes_triposplat.py): its header is recognised, its published files are priced by name, the
TripoSplatConditioning latent is the fixed 8192-token 3-D latent, and VAEDecodeTripoSplat is priced with the memory
the node itself reserves (nodes_triposplat.py:173-177)."""
import json

import pytest

from helpers_models import spec_params, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.triposplat import (P_TRIPOSPLAT, P_TRIPOSPLAT_VAE, decode_reserve_bytes,
                                                             dinov3_tokens, snap_gaussians)
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape


def triposplat_spec(hidden=128, blocks=3, dtype="F16"):
    """The key layout of comfy/ldm/triposplat/model.py (0.33.0) at a small width."""
    spec = {"input_layer.weight": (dtype, (hidden, 16)), "cond_embedder.weight": (dtype, (hidden, 1280)),
            "cam_out_layer.weight": (dtype, (5, hidden)), "out_layer.weight": (dtype, (16, hidden)),
            "repo_layers.0.final_map.weight": (dtype, (hidden, hidden))}
    for i in range(blocks):
        spec[f"blocks.{i}.attn.qkv.weight"] = (dtype, (3 * hidden, hidden))
        spec[f"blocks.{i}.mlp.mlp.0.weight"] = (dtype, (4 * hidden, hidden))
        spec[f"blocks.{i}.mlp.mlp.2.weight"] = (dtype, (hidden, 4 * hidden))
    return spec


def test_the_family_lives_in_one_module_and_the_views_carry_it():
    assert registry.module_of("triposplat") == "triposplat"
    assert FAMILIES["triposplat"].kind == DIFFUSION and FAMILIES["triposplat"].arch["hidden_size"] == 1024
    assert FAMILIES["vae-triposplat"].kind == VAE
    assert registry.MEMORY_USAGE_FACTOR["triposplat"] == 0.6
    assert "vae-triposplat" in registry.VAE_FORMULAS
    assert registry.TEXT_TOKENS["triposplat"] == 1 + 4 + 64 * 64 == dinov3_tokens(1024)


def test_a_header_is_recognised_by_the_modules_own_detector(tmp_path):
    spec = triposplat_spec()
    info = describe(write_safetensors(tmp_path / "some_model.safetensors", spec).path)
    assert (info.kind, info.family) == (DIFFUSION, "triposplat")
    assert (info.arch["hidden_size"], info.arch["depth"], info.arch["ffn_dim"]) == (128, 3, 512)
    assert info.params == spec_params(spec)


def test_a_header_without_the_camera_head_is_not_taken_for_it(tmp_path):
    spec = {k: v for k, v in triposplat_spec().items() if not k.startswith("cam_out_layer")}
    info = describe(write_safetensors(tmp_path / "other.safetensors", spec).path)
    assert info.family != "triposplat"


def test_the_decoder_header_is_recognised(tmp_path):
    spec = {"gs.base_offset_scale": ("F16", (3,)), "octree.out_proj.weight": ("F16", (8, 64))}
    info = describe(write_safetensors(tmp_path / "decoder.safetensors", spec).path)
    assert (info.kind, info.family) == (VAE, "vae-triposplat")


def test_the_published_files_are_priced_by_their_published_size():
    dit = catalogue_info("triposplat_fp16.safetensors", "diffusion_models")
    assert dit.family == "triposplat" and dit.weights_bytes == 741_133_517 and dit.params == P_TRIPOSPLAT
    vae = catalogue_info("triposplat_vae_decoder_fp16.safetensors", "vae")
    assert vae.family == "vae-triposplat" and vae.weights_bytes == 576_192_512 and vae.params == P_TRIPOSPLAT_VAE


def test_the_decode_is_what_the_node_reserves():
    # nodes_triposplat.py:169-177: n clamped to [32768, 1048576] and snapped to 32; (8192 x 4 + n / 32 x 10) x 1024 x 2
    assert snap_gaussians(1) == 32768 and snap_gaussians(10**9) == 1048576 and snap_gaussians(262150) == 262144
    assert decode_reserve_bytes(8192, 262144, 2) == (8192 * 4 + 8192 * 10) * 1024 * 2 == 234_881_024
    latent = LatentShape(batch=1, channels=16, height=1, width=8192, spatial_compression=1, media="3d")
    value, how, notes = vae_working("vae-triposplat", latent, dtype_bytes=2, options={"num_gaussians": 1048576})
    assert value == (8192 * 4 + 32768 * 10) * 1024 * 2 and "nodes_triposplat.py:173-177" in how and not notes
    value, _, _ = vae_working("vae-triposplat", latent, dtype_bytes=2)  # no option: the node's default 262144
    assert value == 234_881_024


def _template():
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == "3d_triposplat_image_to_gaussian_splat"]
    if not found:
        pytest.skip("comfyui-workflow-templates has no 3d_triposplat_image_to_gaussian_splat template")
    return found[0]


def test_the_official_template_is_complete():
    budget = estimate(read_workflow(_template().workflow), Device.from_card(find_card("RTX 4090")))
    assert not budget.incomplete
    sample = next(s for s in budget.stages if s.stage.kind == "sample" and s.stage.node_type != "RemoveBackground")
    assert sample.title.startswith("Sample: TripoSplat")
    assert sample.stage.latent.media == "3d" and sample.stage.latent.width == 8192
    work = [it for it in sample.items if it.category == "working"]
    assert work and work[0].bytes > 0 and "constants traced from ComfyUI 0.33.0 model code" in work[0].assumption
    assert "8192 latent tokens + 4101 text tokens" in work[0].assumption
    assert sum(it.bytes for it in sample.items if it.category == "weights") == 2 * P_TRIPOSPLAT
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    dwork = [it for it in decode.items if it.category == "working"]
    assert dwork[0].bytes == 234_881_024  # the template's num_gaussians 262144
    # the conditioning node: DINOv3 on the GPU and a Flux.2 VAE encode of the 1024 px preprocessed image
    encode = next(s for s in budget.stages if s.stage.kind == "vae_encode")
    assert (encode.stage.latent.pixel_width, encode.stage.latent.pixel_height) == (1024, 1024)
    assert any(s.stage.kind == "clip_vision_encode" for s in budget.stages)
    json.dumps(budget.to_dict())
