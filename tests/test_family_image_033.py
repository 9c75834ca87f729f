"""ComfyUI 0.33.0's image families Krea 2, Lens, Boogu-Image, Ideogram 4, JoyAI-Image-Edit and Ovis-Image, each
added as one family module (nodes/estimator/families/{krea2,lens,boogu,ideogram4,joyimage,ovis}.py) with their
nodes in graph/packs/nodes_{boogu,ideogram4,joyimage}.py: a header is recognised by the key ComfyUI tests (and a
near miss is not), the published file names are priced at their published sizes, and the official templates get a
complete estimate with a priced sampling stage."""
import json
from pathlib import Path

import pytest

from helpers_models import spec_params, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs.nodes_joyimage import best_bucket
from vram_budget.nodes.estimator.model_info import DIFFUSION
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.workload import as_model_latent
from vram_budget.nodes.estimator.workload import LatentShape

MODULES = {"krea2": "krea2", "lens": "lens", "boogu": "boogu", "ideogram4": "ideogram4", "joyimage": "joyimage",
           "ovis-image": "ovis"}
# supported_models.py (0.33.0): Krea2 :1938, Lens :855, Boogu :1878, Ideogram4 :1899, JoyImage :2024, Flux :746
USAGE = {"krea2": 2.2, "lens": 4.0, "boogu": 2.15, "ideogram4": 11.6, "joyimage": 1.8, "ovis-image": 3.1}


def test_each_family_lives_in_its_own_module_with_comfyuis_memory_usage_factor():
    for family, module in MODULES.items():
        assert registry.module_of(family) == module
        assert FAMILIES[family].kind == DIFFUSION
        assert registry.MEMORY_USAGE_FACTOR[family] == USAGE[family]
        assert any(r.family == family for r in registry.name_rules(DIFFUSION))


# ------------------------------------------------------------------ headers (small widths, ComfyUI's key layouts)
def krea2_spec(f=512, layers=3, dtype="BF16"):
    """comfy/ldm/krea2/model.py: first, blocks.N.attn.wq/wk/wv/gate/wo, SwiGLU gate/up/down, txtfusion."""
    spec = {"first.weight": (dtype, (f, 64)), "txtfusion.projector.weight": (dtype, (1, 12)),
            "txtfusion.layerwise_blocks.0.prenorm.scale": (dtype, (160,))}
    for i in range(layers):
        p = f"blocks.{i}."
        spec[p + "attn.wq.weight"] = (dtype, (f, f))
        spec[p + "attn.wk.weight"] = (dtype, (f // 4, f))
        spec[p + "attn.wv.weight"] = (dtype, (f // 4, f))
        spec[p + "mlp.gate.weight"] = (dtype, (3 * f, f))
    return spec


def lens_spec(d=128, layers=2, dtype="BF16"):
    spec = {"img_in.weight": (dtype, (d, 128)), "proj_out.weight": (dtype, (128, d)),
            "txt_norm.0.weight": (dtype, (2880,)), "txt_norm.1.weight": (dtype, (2880,))}
    for i in range(layers):
        p = f"transformer_blocks.{i}."
        spec[p + "attn.norm_added_q.weight"] = (dtype, (64,))
        spec[p + "img_mlp.w1.weight"] = (dtype, (2 * d, d))
    return spec


def boogu_spec(d=240, dtype="BF16"):
    spec = {"x_embedder.weight": (dtype, (d, 64)), "time_caption_embed.caption_embedder.0.weight": (dtype, (4096,)),
            "time_caption_embed.timestep_embedder.linear_1.bias": (dtype, (1024,))}  # OmniGen2's key too
    for i in range(2):
        spec[f"double_stream_layers.{i}.img_instruct_attn.processor.img_to_q.weight"] = (dtype, (d, d))
    for i in range(3):
        spec[f"single_stream_layers.{i}.attn.to_k.weight"] = (dtype, (d // 4, d))
        spec[f"single_stream_layers.{i}.feed_forward.linear_1.weight"] = (dtype, (1024, d))
    return spec


def ideogram4_spec(d=512, layers=3, dtype="BF16"):
    spec = {"embed_image_indicator.weight": (dtype, (2, d)), "input_proj.weight": (dtype, (d, 128))}
    for i in range(layers):
        spec[f"layers.{i}.attention.qkv.weight"] = (dtype, (3 * d, d))
        spec[f"layers.{i}.feed_forward.w1.weight"] = (dtype, (2 * d, d))
    return spec


def joyimage_spec(d=256, layers=2, dtype="BF16"):
    spec = {"img_in.weight": (dtype, (d, 16, 1, 2, 2)), "condition_embedder.time_embedder.linear_1.weight": (dtype, (d, 256))}
    for i in range(layers):
        p = f"double_blocks.{i}."
        spec[p + "attn.img_attn_qkv.weight"] = (dtype, (3 * d, d))
        spec[p + "attn.img_attn_q_norm.weight"] = (dtype, (128,))
        spec[p + "img_mlp.net.0.proj.weight"] = (dtype, (4 * d, d))
    return spec


def ovis_spec(d=256, double=2, single=3, dtype="BF16", norm_suffix="weight"):
    """A Flux layout with YakMLP (gate/up/down) and txt_norm (model_detection.py:349-353)."""
    spec = {"img_in.weight": (dtype, (d, 64)), "txt_in.weight": (dtype, (d, 2048)), "txt_norm.weight": (dtype, (2048,))}
    for i in range(double):
        p = f"double_blocks.{i}."
        spec[p + f"img_attn.norm.key_norm.{norm_suffix}"] = (dtype, (128,))
        spec[p + f"img_attn.norm.query_norm.{norm_suffix}"] = (dtype, (128,))
        spec[p + "img_mlp.gate_proj.weight"] = (dtype, (4 * d, d))
    for i in range(single):
        spec[f"single_blocks.{i}.linear1.weight"] = (dtype, (3 * d + 8 * d, d))
    return spec


@pytest.mark.parametrize("family, spec, expect", [
    ("krea2", krea2_spec(), dict(hidden_size=512, depth=3, heads=4, kv_heads=1, ffn_dim=1536, in_channels=16,
                                   context_dim=160)),
    ("lens", lens_spec(), dict(hidden_size=128, heads=2, depth=2, ffn_dim=256, in_channels=128, context_dim=2880)),
    ("boogu", boogu_spec(), dict(hidden_size=240, heads=2, depth=5, depth_double=2, ffn_dim=1024, context_dim=4096)),
    ("ideogram4", ideogram4_spec(), dict(hidden_size=512, heads=2, depth=3, ffn_dim=1024, in_channels=128)),
    ("joyimage", joyimage_spec(), dict(hidden_size=256, heads=2, depth=2, ffn_dim=1024, patch_size=(1, 2, 2))),
    ("ovis-image", ovis_spec(), dict(hidden_size=256, depth=5, depth_double=2, ffn_dim=1024, context_dim=2048)),
    ("ovis-image", ovis_spec(norm_suffix="scale"), dict(hidden_size=256, head_dim=128, heads=2)),
])
def test_a_header_is_recognised_by_the_key_comfyui_tests(tmp_path, family, spec, expect):
    info = describe(write_safetensors(tmp_path / "some_finetune.safetensors", spec).path)  # the name says nothing
    assert (info.kind, info.family) == (DIFFUSION, family)
    for key, value in expect.items():
        assert info.arch[key] == value, key
    assert info.params == spec_params(spec)


def test_near_misses_are_not_taken_for_them(tmp_path):
    def family(spec, name):
        return describe(write_safetensors(tmp_path / name, spec).path).family
    # OmniGen2's key without Boogu's dual-stream layers stays OmniGen2 (model_detection.py:890 / :900)
    assert family({k: v for k, v in boogu_spec().items() if "double_stream" not in k}, "a.safetensors") == "omnigen2"
    # a Flux without the gated MLP is not Ovis-Image, nor is one without txt_norm
    plain = {k: v for k, v in ovis_spec(norm_suffix="scale").items() if "gate_proj" not in k}
    assert family(plain, "b.safetensors") != "ovis-image"
    assert family({k: v for k, v in ovis_spec().items() if k != "txt_norm.weight"}, "c.safetensors") != "ovis-image"
    # JoyImage wants the 5-D (Conv3d) img_in
    joy = dict(joyimage_spec(), **{"img_in.weight": ("BF16", (256, 64))})
    assert family(joy, "d.safetensors") != "joyimage"
    assert family({k: v for k, v in krea2_spec().items() if "txtfusion" not in k}, "e.safetensors") != "krea2"


# ------------------------------------------------------------------ the published files, by name
@pytest.mark.parametrize("name, family, size", [
    ("krea2_turbo_fp8_scaled.safetensors", "krea2", 13_142_599_926),
    ("krea2_turbo_int8_convrot.safetensors", "krea2", 13_496_934_728),
    ("lens_bf16.safetensors", "lens", 8_203_387_535),
    ("lens_turbo_bf16.safetensors", "lens", 8_203_387_535),
    ("boogu_image_edit_fp8_scaled.safetensors", "boogu", 10_318_658_929),
    ("boogu_image_edit_int8_convrot.safetensors", "boogu", 11_370_925_916),
    ("boogu_image_turbo_fp8_scaled.safetensors", "boogu", 10_318_658_929),
    ("ideogram4_fp8_scaled.safetensors", "ideogram4", 9_277_129_359),
    ("ideogram4_unconditional_int8_convrot.safetensors", "ideogram4", 9_588_514_488),
    ("joyai_image_edit_int8_convrot.safetensors", "joyimage", 16_428_249_907),
    ("ovis_image_bf16.safetensors", "ovis-image", 14_742_475_244),
])
def test_the_published_files_are_priced_by_their_published_sizes(name, family, size):
    info = catalogue_info(name, "diffusion_models")
    assert info.family == family and info.weights_bytes == size


def test_the_name_rules_do_not_catch_neighbours():
    assert catalogue_info("ovis_2.5.safetensors", "text_encoders").family != "ovis-image"
    from vram_budget.nodes.estimator.models.name_infer import infer_info
    for name in ("flux1-krea-dev_fp8_scaled.safetensors", "fisheye_lens_xl.safetensors"):
        info, _ = infer_info(name, None, "diffusion_models")
        assert info is None or info.family not in ("krea2", "lens")


# ------------------------------------------------------------------ an empty latent in a /16 model's format
def test_an_empty_latent_is_taken_in_the_models_format():
    empty = LatentShape(batch=1, channels=None, height=180, width=180, pixel_height=1440, pixel_width=1440,
                        spatial_compression=8, source_type="EmptyLatentImage")
    lens = as_model_latent(empty, FAMILIES["lens"].arch)  # comfy/sample.py:45-56: Flux.2 latent, /16
    assert (lens.channels, lens.height, lens.width, lens.spatial_compression) == (128, 90, 90, 16)
    assert as_model_latent(empty, FAMILIES["boogu"].arch) is empty  # a /8 model keeps it
    fixed = LatentShape(batch=1, channels=16, height=128, width=128)
    assert as_model_latent(fixed, FAMILIES["lens"].arch) is fixed  # a latent whose format the graph fixed


def test_joyimage_buckets_as_comfyui():
    assert best_bucket(1024, 1024) == (1024, 1024)
    assert best_bucket(1080, 1920) == (768, 1344)  # 0.5625 -> 768 / 1344 = 0.571 is the nearest
    assert best_bucket(3000, 1000) == (1728, 576)


# ------------------------------------------------------------------ the official templates
TEMPLATES = {
    "image_krea2_turbo_t2i": "krea2", "image_krea2_turbo_t2i_int8": "krea2",
    "image_krea2_turbo_int8_image_style_reference": "krea2", "image_lens_t2i": "lens",
    "image_lens_turbo_t2i": "lens", "image_boogu_image_0_1_edit": "boogu", "image_boogu_image_0_1_edit_int8": "boogu",
    "image_boogu_image_0_1_turbo_t2i": "boogu", "image_ideogram4_t2i": "ideogram4",
    "image_ideogram4_t2i_int8": "ideogram4", "image_joyai_image_edit": "joyimage",
    "image_ovis_text_to_image": "ovis-image",
}


@pytest.fixture(scope="module")
def templates():
    mod = pytest.importorskip("workflows.templates")
    return {t.name: t.workflow for t in mod.load_templates() if t.name in TEMPLATES}


def _budget(templates, name):
    if name not in templates:
        pytest.skip(f"comfyui-workflow-templates has no {name} template in this version")
    return estimate(read_workflow(templates[name]), Device.from_card(find_card("RTX 4090")))


def _sample(budget):
    return next(s for s in budget.stages if s.stage.kind == "sample")


TRACED_033 = {"krea2", "lens", "ideogram4", "boogu", "ovis-image", "joyimage"}


def _working(stage):
    return [it for it in stage.items if it.category == "working"]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_official_templates_are_complete(templates, name):
    budget = _budget(templates, name)
    family = TEMPLATES[name]
    sample = _sample(budget)
    assert sample.title.startswith("Sample: " + FAMILIES[family].label)
    work = _working(sample)
    # Krea 2, Lens, Ideogram 4, Boogu, Ovis-Image and JoyImage are traced with ComfyUI 0.33.0's own model code (data/working_memory.json, the bench's
    # _arches_033); the others are priced with the first-principles formula and say so
    said = ("constants traced from ComfyUI 0.33.0 model code" if family in TRACED_033
            else f"uncalibrated for {family}")
    assert work and work[0].bytes > 0 and said in work[0].assumption, work[0].assumption
    assert not budget.incomplete
    assert budget.to_dict()["complete"] is True
    json.dumps(budget.to_dict())


def test_lens_samples_the_empty_latent_at_its_flux2_size(templates):
    budget = _budget(templates, "image_lens_t2i")  # EmptyLatentImage 1440 x 1440
    assert "8100 latent tokens" in _working(_sample(budget))[0].assumption  # (1440 / 16)^2, not (1440 / 8)^2
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    assert (decode.stage.latent.height, decode.stage.latent.width) == (90, 90)


def test_the_edit_nodes_encode_their_references_and_the_model_attends_over_them(templates):
    for name, refs in (("image_boogu_image_0_1_edit", 1), ("image_joyai_image_edit", 2)):
        budget = _budget(templates, name)
        encodes = [s for s in budget.stages if s.stage.kind == "vae_encode"]
        assert len(encodes) == refs  # JoyImage: the positive and the negative node each encode the image
        assert all(s.stage.latent.pixel_width == 1024 for s in encodes)  # the assumed 1 MP input, 1024-class
        sample = _sample(budget)
        assert sample.stage.reference_latents == ((128, 128),)
        assert "8192 latent tokens" in _working(sample)[0].assumption  # 4096 image + 4096 reference tokens
        text = next(s for s in budget.stages if s.stage.kind == "text_encode")
        assert text.stage.images and all(m.role != "vae" for m in text.stage.models)


def test_ideogram4_runs_its_two_models_one_call_each(templates):
    sample = _sample(_budget(templates, "image_ideogram4_t2i"))
    names = {it.model.path or it.label for it in sample.items if it.category == "weights"}
    assert len([it for it in sample.items if it.category == "weights"]) == 2, names
    assert "batch 1," in _working(sample)[0].assumption and sample.batch_factor == 1


def test_krea2_and_lens_are_traced_with_comfyui_033():
    """bench/trace_working_memory.py _arches_033 (ComfyUI 0.33.0's Krea2 / Lens classes at full size, fake
    tensors): the entries carry 0.33.0's provenance, and the estimate at a traced point is that point x 1.6."""
    from vram_budget.nodes.estimator.physics import memory
    from vram_budget.nodes.estimator.workload import LatentShape

    data = json.loads((Path(memory.DATA_DIR) / "working_memory.json").read_text())["architectures"]
    for fam in ("krea2", "lens", "ideogram4", "boogu", "ernie-image"):
        assert data[fam]["provenance"]["comfyui_version"] == "0.33.0" and data[fam]["max_rel_error"] < 0.01
    point = next(p for p in data["krea2"]["points"] if (p["batch"], p["width"], p["text_tokens"]) == (1, 1024, 256))
    assert point["working_bytes"] == 534_671_364  # the trace log: 0.498 GiB at blocks.0.attn
    latent = LatentShape(1, 16, 128, 128, pixel_width=1024, pixel_height=1024, spatial_compression=8)
    got = memory.diffusion_working("krea2", FAMILIES["krea2"].arch, latent, 1, 256)
    assert abs(got.bytes - 1.6 * 534_671_364) / (1.6 * 534_671_364) < 0.001, got
