"""TRELLIS.2 / Pixal3D (ComfyUI 0.33.0), added as one family module (families/trellis2.py) and one node-pack module
(graph/packs/nodes_trellis2.py): the header is recognised (Pixal3D by its proj_linear keys), the published files are
priced by name, the dense structure stage (16^3 = 4096 grid tokens) is priced, its structure decode is priced with
sd.py's own memory_used_decode, and the sparse stages, whose voxel count is known only at run time, are left
unpriced with that reason (the template stays incomplete, honestly)."""
import json

import pytest

from helpers_models import spec_params, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.trellis2 import P_PIXAL3D, STRUCTURE_TOKENS, dinov3_tokens
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape


def trellis2_spec(hidden=192, blocks=2, proj=False, dtype="BF16"):
    """The key layout of comfy/ldm/trellis2/model.py (0.33.0) at a small width: img2shape + structure_model."""
    spec = {}
    for sub in ("img2shape", "structure_model"):
        spec[f"{sub}.t_embedder.mlp.0.weight"] = (dtype, (hidden, 256))
        for i in range(blocks):
            spec[f"{sub}.blocks.{i}.self_attn.to_qkv.weight"] = (dtype, (3 * hidden, hidden))
            spec[f"{sub}.blocks.{i}.mlp.mlp.0.weight"] = (dtype, (4 * hidden, hidden))
            if proj:
                spec[f"{sub}.blocks.{i}.cross_attn.proj_linear.weight"] = (dtype, (hidden, 1024))
    return spec


def test_the_family_lives_in_one_module_and_the_views_carry_it():
    assert registry.module_of("trellis2") == "trellis2"
    arch = FAMILIES["trellis2"].arch
    assert (arch["hidden_size"], arch["depth"], arch["heads"], arch["ffn_dim"]) == (1536, 30, 12, int(1536 * 5.3334))
    assert FAMILIES["vae-trellis2-shape"].kind == VAE and FAMILIES["vae-trellis2-texture"].kind == VAE
    assert registry.MEMORY_USAGE_FACTOR["trellis2"] == 6
    assert registry.TEXT_TOKENS["trellis2"] == 1 + 4 + 32 * 32 == dinov3_tokens(512)
    assert STRUCTURE_TOKENS == 16 ** 3


def test_a_header_is_recognised_and_pixal3d_by_its_projection(tmp_path):
    spec = trellis2_spec()
    info = describe(write_safetensors(tmp_path / "a_model.safetensors", spec).path)
    assert (info.kind, info.family) == (DIFFUSION, "trellis2")
    assert (info.arch["hidden_size"], info.arch["depth"]) == (192, 2)
    assert info.params == spec_params(spec)
    pixal = describe(write_safetensors(tmp_path / "b_model.safetensors", trellis2_spec(proj=True)).path)
    assert pixal.family == "trellis2" and any("Pixal3D" in e for e in pixal.evidence)


def test_a_header_without_the_shape_models_is_not_taken_for_it(tmp_path):
    spec = {k: v for k, v in trellis2_spec().items() if not k.startswith("img2shape")}
    info = describe(write_safetensors(tmp_path / "other.safetensors", spec).path)
    assert info.family != "trellis2"


def test_the_vae_headers_are_recognised(tmp_path):
    shape = describe(write_safetensors(tmp_path / "s.safetensors",
                                       {"shape_dec.blocks.1.16.to_subdiv.weight": ("BF16", (8, 64))}).path)
    tex = describe(write_safetensors(tmp_path / "t.safetensors",
                                     {"txt_dec.blocks.3.4.conv2.weight": ("BF16", (64, 64, 3, 3, 3))}).path)
    assert (shape.kind, shape.family) == (VAE, "vae-trellis2-shape")
    assert (tex.kind, tex.family) == (VAE, "vae-trellis2-texture")


def test_the_published_files_are_priced_by_their_published_size():
    dit = catalogue_info("pixal3d_int8_convrot.safetensors", "diffusion_models")
    assert dit.family == "trellis2" and dit.weights_bytes == 5_583_457_485 and dit.params == P_PIXAL3D
    assert catalogue_info("trellis_2_int8_convrot.safetensors", "diffusion_models").family == "trellis2"
    assert catalogue_info("trellis_2_shape_vae_bf16.safetensors", "vae").family == "vae-trellis2-shape"
    assert catalogue_info("trellis_2_texture_vae_bf16.safetensors", "vae").family == "vae-trellis2-texture"


def test_the_vae_estimate_is_comfyuis_own():
    # sd.py:581: 2500 x prod(shape[2:]) x dtype bytes; the structure decode's [B, 8, 16, 16, 16]: 4096 cells
    latent = LatentShape(batch=1, channels=32, height=1, width=4096, spatial_compression=1, media="3d")
    value, how, _ = vae_working("vae-trellis2-shape", latent, dtype_bytes=2)
    assert value == 2500 * 4096 * 2 and "sd.py:581" in how


def _budget(name):
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == name]
    if not found:
        pytest.skip(f"comfyui-workflow-templates has no {name} template")
    return estimate(read_workflow(found[0].workflow), Device.from_card(find_card("RTX 4090")))


def test_the_pixal3d_template_prices_the_structure_stage_and_says_why_the_rest_is_not():
    budget = _budget("3d_pixal3d_trellis2_image_to_model")
    samples = [s for s in budget.stages if s.stage.kind == "sample"
               and s.stage.node_type not in ("MoGeInference", "RemoveBackground")]
    assert len(samples) == 4 and all(s.title.startswith("Sample: Pixal3D") for s in samples)
    structure = [s for s in samples if s.stage.latent is not None]
    assert len(structure) == 1 and structure[0].stage.latent.width == 4096
    work = [it for it in structure[0].items if it.category == "working"]
    assert work and work[0].bytes > 0 and "constants traced from ComfyUI 0.33.0 model code" in work[0].assumption
    assert "4096 latent tokens + 1029 text tokens" in work[0].assumption
    decode = next(s for s in budget.stages if s.stage.node_type == "VaeDecodeStructureTrellis2")
    assert [it.bytes for it in decode.items if it.category == "working"] == [2500 * 4096 * 2]
    # the sparse stages: unpriced, with the run-time voxel count as the reason (not a made-up token count)
    sparse = [g for g in budget.incomplete if g.startswith("Sample:")]
    assert len(sparse) == 3 and all("known only at run time" in g for g in sparse)
    assert not budget.to_dict()["complete"]
    json.dumps(budget.to_dict())
