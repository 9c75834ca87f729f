"""Qwen-Image 2.1 (newer ComfyUI: comfy/ldm/qwen_image21, nodes_qwen.py TextEncodeQwenImage21), in
families/qwen_image.py and graph/packs/nodes_qwen21.py: not Qwen-Image 20B, whose name it shares; its DiT and VAE
headers are told apart as ComfyUI tells them, its five official templates get complete estimates, and its VAE is
priced with the figures its sd.py branch states, checked here against the formulas written out by hand."""
import pytest

from helpers_models import spec_params, write_safetensors
from workflows.templates import template_workflow
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.qwen_image import P_QWEN_IMAGE_21
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import SAMPLE, VAE_DECODE, VAE_ENCODE, LatentShape

TEMPLATES = ("image_qwen_image_2_1_t2i", "image_qwen_image_2_1_turbo_t2i", "image_qwen_image_2_1_image_edit",
             "image_qwen_image_2_1_turbo_image_edit", "image_qwen_image_2_1_background_removal")
RTX4090 = Device.from_card(find_card("RTX 4090"))


def dit_spec(inner=256, head_dim=64, layers=3, mlp_ratio=3, context=512, fused=True, dtype="BF16"):
    """The key layout of comfy/ldm/qwen_image21/model.py (@b806797) at a small width."""
    spec = {"img_in.weight": (dtype, (inner, 64)), "proj_out.weight": (dtype, (64, inner)),
            "txt_in.text_norm.weight": (dtype, (context,)), "txt_in.in_layer.weight": (dtype, (inner, context)),
            "modulation.1.weight": (dtype, (4 * inner, inner))}
    for i in range(layers):
        p = f"transformer_blocks.{i}."
        for k in ("to_q", "to_k", "to_v", "to_out.0"):
            spec[p + f"attn.{k}.weight"] = (dtype, (inner, inner))
        spec[p + "attn.norm_q.weight"] = (dtype, (head_dim,))
        spec[p + "attn.norm_k.weight"] = (dtype, (head_dim,))
        if fused:
            spec[p + "img_mlp.gate_up.weight"] = (dtype, (2 * mlp_ratio * inner, inner))
        else:
            spec[p + "img_mlp.proj.weight"] = (dtype, (mlp_ratio * inner, inner))
            spec[p + "img_mlp.gate_layer.weight"] = (dtype, (mlp_ratio * inner, inner))
        spec[p + "img_mlp.out.weight"] = (dtype, (inner, mlp_ratio * inner))
    return spec


def wan_vae_spec(temporal_kernel: int, head_channels: int = 4) -> dict:
    return {"decoder.middle.0.residual.0.gamma": ("BF16", (64, 1, 1, 1)),
            "decoder.upsamples.0.upsamples.0.residual.2.weight": ("BF16", (32, 32, 3, 3, 3)),
            "decoder.head.0.gamma": ("BF16", (32, 1, 1, 1)),
            "decoder.head.2.weight": ("BF16", (head_channels, 32, temporal_kernel, 3, 3)),
            "encoder.conv1.weight": ("BF16", (32, head_channels, temporal_kernel, 3, 3))}


def test_the_family_and_its_vae_live_in_one_module():
    assert registry.module_of("qwen-image-2.1") == registry.module_of("qwen-image") == "qwen_image"
    arch = FAMILIES["qwen-image-2.1"].arch
    assert (arch["hidden_size"], arch["depth"], arch["ffn_dim"], arch["patch_size"]) == (4096, 32, 12288, (1, 1))
    assert registry.MEMORY_USAGE_FACTOR["qwen-image-2.1"] == 6.0
    assert "vae-qwen-image-2.1" in registry.VAE_FORMULAS


@pytest.mark.parametrize("fused", [True, False])
def test_a_dit_header_is_qwen_image_21_not_qwen_image(tmp_path, fused):
    spec = dit_spec(fused=fused)
    info = describe(write_safetensors(tmp_path / "qwen_image_finetune.safetensors", spec).path)
    assert (info.kind, info.family) == (DIFFUSION, "qwen-image-2.1")
    a = info.arch
    assert (a["hidden_size"], a["heads"], a["head_dim"], a["depth"], a["ffn_dim"], a["context_dim"]) == \
        (256, 4, 64, 3, 768, 512)
    assert info.params == spec_params(spec)
    # Qwen-Image (v1) keeps its own detector: txt_norm + img_in, no txt_in.text_norm
    v1 = {"txt_norm.weight": ("BF16", (3584,)), "img_in.weight": ("BF16", (3072, 64)),
          "txt_in.weight": ("BF16", (3072, 3584)), "transformer_blocks.0.img_mlp.net.0.proj.weight": ("BF16", (12288, 3072))}
    assert describe(write_safetensors(tmp_path / "qwen_image_2.1_named.safetensors", v1).path).family == "qwen-image"


def test_the_vae_is_told_from_wan_22_by_its_temporal_kernel(tmp_path):
    q21 = describe(write_safetensors(tmp_path / "a.safetensors", wan_vae_spec(1)).path)
    assert (q21.kind, q21.family, q21.arch["latent_channels"]) == (VAE, "vae-qwen-image-2.1", 64)
    assert any("4 image channels" in e for e in q21.evidence)
    assert describe(write_safetensors(tmp_path / "b.safetensors", wan_vae_spec(3, 3)).path).family == "vae-wan2.2"


def _inferred(name, role):
    info, why = infer_info(name, role)
    assert info is not None, why
    return info


def test_names_say_21_only_when_they_mean_it():
    assert _inferred("qwen_image_2.1_int8_convrot.safetensors", "diffusion").family == "qwen-image-2.1"
    assert _inferred("qwen-image-21-turbo.safetensors", "diffusion").family == "qwen-image-2.1"
    assert _inferred("qwen_image_2.1_bf16.safetensors", "diffusion").params == P_QWEN_IMAGE_21
    for other in ("qwen_image_2512_fp8_e4m3fn.safetensors", "qwen_image_edit_2511_bf16.safetensors",
                  "qwen_image_fp8_e4m3fn.safetensors"):
        assert _inferred(other, "diffusion").family == "qwen-image", other
    assert _inferred("qwen_image_2.1_vae_bf16.safetensors", "vae").family == "vae-qwen-image-2.1"
    assert _inferred("qwen_image_vae.safetensors", "vae").family == "vae-wan2.1"


def test_the_vae_working_memory_is_its_sd_py_branch_figure():
    latent = LatentShape(batch=1, channels=64, height=64, width=80, pixel_height=1024, pixel_width=1280,
                         spatial_compression=16)
    dec, how, _ = vae_working("vae-qwen-image-2.1", latent, decode=True, dtype_bytes=2)
    assert dec == 900 * 64 * 80 * 16 * 16 * 2 and "not traced" in how and "@033046c" in how
    enc, _, _ = vae_working("vae-qwen-image-2.1", latent, decode=False, dtype_bytes=2)
    assert enc == 600 * 1024 * 1280 * 2


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_templates_are_complete_and_priced_as_qwen_image_21(name):
    budget = estimate(read_workflow(template_workflow(name)), RTX4090)
    out = budget.to_dict()
    assert out["complete"] is True and out["verdict"] != "unknown", out["incomplete"]
    (sample,) = [s for s in budget.stages if s.stage.kind == SAMPLE]
    assert "Qwen-Image 2.1" in sample.title and "20B" not in sample.title
    (decode,) = [s for s in budget.stages if s.stage.kind == VAE_DECODE]
    assert "Qwen-Image 2.1 VAE" in decode.title and decode.working_bytes > 0


def _edit_prompt(resolution: int) -> dict:
    return {
        "1": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
        "2": {"class_type": "LoadImage", "inputs": {"image": "b.png"}},
        "3": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen3vl_8b_int8_convrot.safetensors",
                                                     "type": "qwen_image"}},
        "4": {"class_type": "VAELoader", "inputs": {"vae_name": "qwen_image_2.1_vae_bf16.safetensors"}},
        "5": {"class_type": "UNETLoader", "inputs": {"unet_name": "qwen_image_2.1_int8_convrot.safetensors",
                                                     "weight_dtype": "default"}},
        "6": {"class_type": "TextEncodeQwenImage21", "inputs": {
            "clip": ["3", 0], "vae": ["4", 0], "prompt": "make it night", "negative_prompt": "",
            "resolution": resolution, "images.image_1": ["1", 0], "images.image_2": ["2", 0]}},
        "7": {"class_type": "KSampler", "inputs": {"model": ["5", 0], "positive": ["6", 0], "negative": ["6", 1],
                                                   "latent_image": ["6", 2], "seed": 0, "steps": 20, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["4", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "x"}},
    }


@pytest.mark.parametrize("resolution, first, second", [
    # resolution 1024: sqrt(1024^2 x 1216/832) = 1237.9 -> 1248 wide, sqrt(1024^2 x 832/1216) = 847.0 -> 832 high;
    # the square 640 x 640 -> 1024 x 1024
    (1024, (1248, 832), (1024, 1024)),
    # resolution 0: each at its own size rounded to 32 (1216 = 38 x 32, 640 = 20 x 32)
    (0, (1216, 832), (640, 640)),
])
def test_an_edit_prices_its_references_as_the_node_resizes_them(resolution, first, second):
    sizes = {"a.png": (1216, 832, 1), "b.png": (640, 640, 1)}
    token = INPUT_MEDIA.set(sizes.get)
    try:
        w = read_workflow(_edit_prompt(resolution))
        budget = estimate(w, RTX4090)
    finally:
        INPUT_MEDIA.reset(token)
    encodes = [s for s in w.stages if s.kind == VAE_ENCODE and s.node_type == "TextEncodeQwenImage21"]
    assert [(e.latent.pixel_width, e.latent.pixel_height) for e in encodes] == [first, second]
    (sample,) = w.stages_of(SAMPLE)
    assert list(sample.reference_latents) == [(first[1] // 16, first[0] // 16), (second[1] // 16, second[0] // 16)]
    # the node's LATENT: an empty 64-channel /16 latent on the first reference's size
    assert (sample.latent.channels, sample.latent.pixel_width, sample.latent.pixel_height) == (64, *first)
    (stage,) = [s for s in budget.stages if s.stage.kind == SAMPLE]
    tokens = sum(h * w for h, w in sample.reference_latents) + (first[0] // 16) * (first[1] // 16)
    assert f"{tokens} latent tokens" in next(i.assumption for i in stage.items if i.category == "working")
    assert budget.complete
