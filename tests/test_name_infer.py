"""name_infer.py: a model file known only by its name -> kind, family, parameters, precision, bytes;
and the published-size table in catalogue.py (PUBLISHED) that it falls back behind."""
from __future__ import annotations

import math

import pytest

from vram_budget.nodes.estimator.families.registry import PARAMS as P
from vram_budget.nodes.estimator.models import catalogue as cat
from vram_budget.nodes.estimator.models import name_infer as ni
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.machine.resolve import resolve_model
from vram_budget.nodes.estimator.families import FAMILIES
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.llm_quant import GGML_BLOCK
from vram_budget.nodes.estimator.plan.report import format_report
from vram_budget.nodes.estimator.workload import SAMPLE, ModelRef, Stage, Workload


def bits(ggml: str) -> float:
    block, size = GGML_BLOCK[ggml]
    return size * 8 / block


# (name as a workflow gives it, loader role, folder) -> (kind, family, params, bytes per param)
# Real names from the official templates and the community corpus (tests/workflows/community).
CASES = [
    (("wan2.2_fun_control_high_noise_14B_fp8_scaled.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "wan2.2-14b", P["P_WAN14_T2V"], 1)),
    (("WanVideo\\fp8_scaled_kj\\I2V\\Wan2_1-I2V-14B-720p_fp8_e4m3fn_scaled_KJ.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "wan2.1-14b", P["P_WAN14_I2V"], 1)),
    (("WanVideo\\Wan2_1-FLF2V-14B-720P_fp8_e4m3fn.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "wan2.1-14b", P["P_WAN14_FLF"], 1)),
    (("WanVideo\\Skyreels\\Wan2_1-SkyReels-V2-DF-1_3B-540P_fp32.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "wan2.1-1.3b", P["P_WAN13"], 4)),
    (("Wan2_2-TI2V-5B-FastWanFullAttn_bf16.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "wan2.2-ti2v-5b", P["P_WAN5"], 2)),
    (("humo_17B_fp8_e4m3fn.safetensors", "diffusion", "diffusion_models"),  # the name's 17B beats Wan's 14.3B
     ("diffusion", "wan2.1-14b", 17_000_000_000, 1)),
    (("flux1-kontext-dev.safetensors", "diffusion", "diffusion_models"), ("diffusion", "flux1-kontext", P["P_FLUX1_DEV"], 2)),
    (("flux.1-fill-dev-OneReward-transformer_fp8.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "flux1-fill", P["P_FLUX1_FILL"], 1)),
    (("flux-2-klein-9b-fp8.safetensors", "diffusion", "diffusion_models"), ("diffusion", "flux2-klein-9b", 9_000_000_000, 1)),
    (("flux-2-klein-4b.safetensors", "diffusion", "diffusion_models"), ("diffusion", "flux2-klein", 4_000_000_000, 2)),
    (("Chroma1-HD-fp8mixed.safetensors", "diffusion", "diffusion_models"), ("diffusion", "chroma", P["P_CHROMA"], 1)),
    (("hunyuanvideo1.5_720p_t2v_fp16.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "hunyuan-video-1.5", P["P_HUNYUAN_VIDEO_15"], 2)),
    (("hyvideo\\hunyuan_video_720_fp8_e4m3fn.safetensors", "diffusion", "diffusion_models"),
     ("diffusion", "hunyuan-video", P["P_HUNYUAN_VIDEO"], 1)),
    (("qwen_image_2512_fp8_e4m3fn.safetensors", "diffusion", "diffusion_models"), ("diffusion", "qwen-image", P["P_QWEN_IMAGE"], 1)),
    (("z_image_int8_convrot.safetensors", "diffusion", "diffusion_models"), ("diffusion", "z-image", P["P_Z_IMAGE"], 1)),
    # ComfyUI 0.33's PixelDiT (families/pixeldit.py): the published bf16 file / 2, not the name's "1300m"
    (("pixeldit_1300m_1024px_bf16.safetensors", "diffusion", "diffusion_models"), ("diffusion", "pixeldit", P["P_PIXELDIT"], 2)),
    (("ponyDiffusionV6XL.safetensors", "checkpoint", "checkpoints"), ("checkpoint", "sdxl", P["P_SDXL"], 2)),
    # "chroma" inside an SDXL fine-tune's name is not Chroma (nullquant/ComfyUI-BrushNet's RAUNet example)
    (("SDXL\\zavychromaxl_v70.safetensors", "checkpoint", "checkpoints"), ("checkpoint", "sdxl", P["P_SDXL"], 2)),
    (("clip_l_flux.safetensors", "text_encoder", "text_encoders"), ("text_encoder", "clip-l", P["P_CLIP_L"], 2)),
    # a fine-tuned CLIP-L named by its architecture (Jonseed/ComfyUI-Detail-Daemon's Flux workflows)
    (("ViT-L-14-BEST-smooth-GmP-TE-only-HF-format.safetensors", "text_encoder", "text_encoders"),
     ("text_encoder", "clip-l", P["P_CLIP_L"], 2)),
    (("ip-adapter-plus_sd15.safetensors", "ipadapter", "ipadapter"),
     ("ipadapter", "ip-adapter-sd15", P["P_IPA_SD15_PLUS"], 2)),
    (("qwen_3_4b_fp8_mixed.safetensors", "text_encoder", "text_encoders"), ("text_encoder", "qwen3", P["P_QWEN3_4B"], 1)),
    (("qwen_3_06b_base.safetensors", "text_encoder", "text_encoders"), ("text_encoder", "qwen", 600_000_000, 2)),
    (("gemma_3_12B_it.safetensors", "text_encoder", "text_encoders"), ("text_encoder", "gemma3", 12_000_000_000, 2)),
    (("gemma_2_2b_it_elm_bf16.safetensors", "text_encoder", "text_encoders"),
     ("text_encoder", "gemma", ni.decoder_params(FAMILIES["gemma"].arch, tied=True), 2)),
    (("t5xxl_fp16_custom.safetensors", None, "clip"), ("text_encoder", "t5-xxl", P["P_T5XXL"], 2)),
    (("Wan2_2_VAE_bf16.safetensors", "vae", "vae"), ("vae", "vae-wan2.2", cat.lookup("wan2.2_vae.safetensors").params, 2)),
    (("wan_alpha_2.1_vae_rgb_channel.safetensors", "vae", "vae"), ("vae", "vae-wan2.1", cat.lookup("wan_2.1_vae.safetensors").params, 2)),
    (("clip_vision_vit_h.safetensors", "clip_vision", "clip_vision"), ("clip_vision", "clip-vision", P["P_CLIP_VISION_H"], 2)),
    (("RealESRGAN_x2plus.pth", "upscale_model", "upscale_models"),
     ("upscaler", "esrgan", cat.lookup("4x-UltraSharp.pth").params, 4)),
]


@pytest.mark.parametrize("ref, expected", CASES, ids=[c[0][0] for c in CASES])
def test_names_to_family_params_and_bytes(ref, expected):
    kind, family, params, per = expected
    info, said = ni.infer_info(*ref)
    assert info is not None, said
    assert (info.kind, info.family, info.params) == (kind, family, params)
    assert info.weights_bytes == math.ceil(params * per), info.weights_bytes / params
    assert info.source == "inferred" and said in info.notes and "inferred from the name" in said
    assert info.label.endswith("(size from the name)") and info.evidence[0] == said  # --json shows evidence
    assert info.evidence[1].startswith("file name")


def test_decoder_count_reproduces_published_llm_sizes():
    # Llama 3.1 8B config -> 8,030,261,248 (Meta's count); Qwen3 4B: the 8,044,982,048-byte bf16 file = 2 x params + header
    llama = dict(FAMILIES["llama3-8b"].arch)
    assert ni.decoder_params(llama, tied=False) == P["P_LLAMA31_8B"]
    qwen3 = dict(FAMILIES["qwen3"].arch)
    assert 0 < 8_044_982_048 - 2 * (ni.decoder_params(qwen3, tied=True) + 36 * 2 * 128) < 100_000  # + q/k norms


def test_precision_tokens():
    p = ni.precision
    assert p("wan2.1_t2v_14b_fp8_e5m2", "safetensors")[1:3] == ("F8_E5M2", "fp8_e5m2")
    assert p("x_fp8_e4m3fn_scaled", "safetensors").quantization == "scaled fp8_e4m3fn"
    assert p("flux2_dev_fp8mixed", "safetensors").quantization == "scaled fp8_e4m3fn"
    assert p("flux1-dev-bnb-nf4", "safetensors").bits == pytest.approx(4 + 8 / 64 + 32 / 16384)
    assert p("svdq-int4_r32-flux.1-dev", "safetensors").bits == 4.25
    assert p("svdq-fp4_r32-flux.1-dev", "safetensors").bits == 4.5
    assert p("gpt_oss_20b_mxfp4", "safetensors").bits == 4.25
    assert p("z_image_turbo_nvfp4", "safetensors").bits == 4.5
    assert p("qwen3.5_9b_w4a8_gptq", "safetensors").bits == pytest.approx(4 + 20 / 128)
    assert p("ltx-2.5-22b-int8-convrot", "safetensors").bits == 8
    assert p("model", "safetensors").bits == 16 and p("model", "pth").bits == 32
    assert p("model", "gguf") is None  # a GGUF whose type the name does not give
    for quant, ggml in (("Q2_K", "Q2_K"), ("Q3_K_S", "Q3_K"), ("Q4_0", "Q4_0"), ("Q4_K_M", "Q4_K"),
                        ("Q5_K_S", "Q5_K"), ("Q6_K", "Q6_K"), ("Q8_0", "Q8_0"), ("IQ4_XS", "IQ4_XS")):
        got = p(f"flux1-dev-{quant.lower()}", "gguf")
        assert (got.dtype, got.quantization, got.bits) == (ggml, f"gguf {ggml}", bits(ggml)), quant
    assert bits("Q4_K") == 4.5 and bits("Q8_0") == 8.5 and bits("Q6_K") == 6.5625  # ggml block sizes
    # a type glued to the words around it (lquesada/ComfyUI-Inpaint-CropAndStitch's Flux example), in a .gguf only
    assert p("fluxdevq5kmggufquantizationa_v10", "gguf").quantization == "gguf Q5_K"
    assert p("fluxdevq8_0", "gguf").quantization == "gguf Q8_0"
    assert p("fluxdevq5kmggufquantizationa_v10", "safetensors").bits == 16


def test_gguf_sizes_follow_the_published_files_of_the_family():
    """Leave each published city96 GGUF out: params x the type's bits + the family's median excess
    (small tensors kept in F16/F32) lands within 6 % of the listed size (11 % for the _M mixes, which
    keep some tensors in a larger type); without the excess Wan would be up to 20 % low."""
    for entry in cat.entries_for_family("flux1-dev") + cat.entries_for_family("wan2.1-14b"):
        if not (entry.quantization or "").startswith("gguf"):
            continue
        prec = ni.precision(entry.name.rsplit(".", 1)[0].lower(), "gguf")
        excess, _ = ni.gguf_excess(entry.family, skip=entry.name)
        predicted = math.ceil(entry.params * prec.bits / 8) + excess
        tolerance = 0.11 if entry.dtype.endswith("_M") else 0.06
        assert abs(predicted - entry.bytes) / entry.bytes < tolerance, (entry.name, predicted, entry.bytes)
    info, said = ni.infer_info("WanVideo\\wan2.1-i2v-14b-480p-Q8_0.gguf", "diffusion", "diffusion_models")
    excess = ni.gguf_excess("wan2.1-14b")[0]
    assert info.weights_bytes == math.ceil(P["P_WAN14_I2V"] * 8.5 / 8) + excess and "F16/F32" in said
    kontext, _ = ni.infer_info("flux1-kontext-dev-Q6_K.gguf", "diffusion", "diffusion_models")
    assert kontext.weights_bytes == math.ceil(P["P_FLUX1_DEV"] * bits("Q6_K") / 8) + ni.gguf_excess("flux1-dev")[0]


def test_lora_layer_sums_reproduce_published_lora_sizes():
    """rank x sum(in + out) over the adapted linears, from the FAMILIES arch numbers, against files
    whose rank and size are published."""
    flux, _ = ni.lora_linear_sum("flux1-dev")
    # Comfy-Org flux1-depth-dev-lora.safetensors: rank 128, bf16, 1,244,440,512 bytes (LFS pointer)
    assert abs(128 * flux * 2 - 1_244_440_512) / 1_244_440_512 < 0.02
    wan, _ = ni.lora_linear_sum("wan2.1-14b")
    # wan2.2_*_lightx2v_4steps_lora (renamed ..._lora_rank64_Seko_...): 1.23 GB listed, fp32
    assert abs(64 * wan * 4 - 1.23e9) / 1.23e9 < 0.01
    assert wan == 40 * (18 * 5120 + 2 * 13824)
    assert ni.lora_linear_sum("wan2.1-14b", "i2v")[0] == wan + 40 * 4 * 5120  # image k/v of the I2V cross-attention
    assert ni.lora_linear_sum("chroma")[0] < flux  # no per-block modulation linears
    sdxl, sd15 = ni.lora_linear_sum("sdxl")[0], ni.lora_linear_sum("sd15")[0]
    assert sdxl == 10 * (28 * 640 + 4096) + 60 * (28 * 1280 + 4096) + 5 * 4 * 640 + 6 * 4 * 1280
    assert sd15 == 5 * (28 * 320 + 1536) + 5 * (28 * 640 + 1536) + 6 * (28 * 1280 + 1536) + 4 * (5 * 320 + 5 * 640 + 6 * 1280)
    assert ni.lora_linear_sum("z-image") is None  # no published LoRA to check a layer count against


@pytest.mark.parametrize("name, family, rank, per", [
    ("Wan21_CausVid_14B_T2V_lora_rank32.safetensors", "wan2.1-14b", 32, 2),
    ("WanVideo\\Pusa\\Wan21_PusaV1_LoRA_14B_rank512_bf16.safetensors", "wan2.1-14b", 512, 2),
    ("Wan2.2-T2V-A14B-4steps-lora-rank64-Seko-V1.1/high_noise.safetensors", "wan2.2-14b", 64, 2),
    ("WanVid\\wan2.1-1.3b-control-lora-tile-v0.1_comfy.safetensors", "wan2.1-1.3b", ni.DEFAULT_LORA_RANK, 2),
    ("FLUX/Raura.safetensors", "flux1-dev", ni.DEFAULT_LORA_RANK, 2),
    ("my_flux_style_r16_fp32.safetensors", "flux1-dev", 16, 4),
    ("sdxl_detail_64_.safetensors", "sdxl", 64, 2),
    ("QWEN_EDIT_ACTION_V1.safetensors", "qwen-image", ni.DEFAULT_LORA_RANK, 2),
    ("hyvid\\musubi-tuner\\img2vid544p.safetensors", "hunyuan-video", ni.DEFAULT_LORA_RANK, 2),
])
def test_lora_typical_size_by_rank(name, family, rank, per):
    info, said = ni.infer_info(name, "lora", "loras")
    assert (info.kind, info.family, info.arch["rank"], info.arch["target_family"]) == ("lora", "lora", rank, family)
    assert info.weights_bytes == rank * ni.lora_linear_sum(family)[0] * per
    assert said.startswith("typical size") and ("from the name" in said or f"{rank} assumed" in said)


def test_lora_rank_tokens():
    assert ni.lora_rank("lightx2v_i2v_14b_480p_cfg_step_distill_rank64_bf16") == 64
    assert ni.lora_rank("moss_image_edit_lora_rank_64_bf16") == 64
    assert ni.lora_rank("style_r128.safetensors") == 128
    assert ni.lora_rank("ltx-2-19b-distilled-lora-384.safetensors") == 384
    assert ni.lora_rank("detail_32_v2.safetensors") == 32
    assert ni.lora_rank("wuli-qwen-image-2512-turbo-lora-2steps-v1.0-bf16") is None  # "2steps" is not a rank
    assert ni.lora_rank("wan2.2_i2v_lightx2v_4steps_lora_v1_high_noise") is None


def test_size_tokens():
    assert ni.size_token("wan2.1_t2v_14b_fp16") == 14_000_000_000
    assert ni.size_token("wan2_1-t2v-1_3b_bf16") == 1_300_000_000
    assert ni.size_token("wan2.2-i2v-a14b-q4") == 14_000_000_000
    assert ni.size_token("qwen3.5_9b_int8") == 9_000_000_000
    assert ni.size_token("qwen_3_06b_base") == 600_000_000
    assert ni.size_token("pixeldit_1300m_1024px") == 1_300_000_000
    assert ni.size_token("wan2.1_i2v_480p") is None and ni.size_token("sd_xl_base_1.0") is None


@pytest.mark.parametrize("ref, why", [
    (("model.safetensors", None, None), "says nothing"),
    (("newbie_image_base.safetensors", "diffusion", "diffusion_models"), "no parameter count"),
    (("flux_tile.safetensors", "controlnet", "controlnet"), "ControlNet"),  # a ControlNet is not 12B
    (("anima-turbo-lora-v0.2.safetensors", "lora", "loras"), "base model the name does not identify"),
    (("z_image_turbo_style_lora.safetensors", "lora", "loras"), "no LoRA layer count"),
    (("city96-model-Q9_Z.gguf", "diffusion", "diffusion_models"), "quantisation"),
])
def test_names_that_stay_unknown(ref, why):
    info, said = ni.infer_info(*ref)
    assert info is None and why in said


# ---------------------------------------------------------------------------------------------
def _workload(*refs: ModelRef) -> Workload:
    return Workload(stages=(Stage(SAMPLE, "3", "KSampler", models=refs),), models=refs)


def test_resolve_model_falls_back_to_inference_then_to_missing_with_a_reason():
    ref = ModelRef("diffusion", "my_wan2.2_fun_inpaint_high_noise_14B_fp8_scaled.safetensors", "diffusion_models")
    info, note = resolve_model(ref, None)
    assert info.source == "inferred" and info.weights_bytes == P["P_WAN14_T2V"] and note is None
    known = ModelRef("diffusion", "wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors", "diffusion_models")
    assert resolve_model(known, None)[0].source == "catalogue"  # the catalogue comes first
    # a file a template publishes the size of: that size, the family from the name
    templ, note = resolve_model(ModelRef("diffusion", "wan2.2_fun_inpaint_high_noise_14B_fp8_scaled.safetensors",
                                         "diffusion_models"), None)
    assert templ.source == "catalogue" and templ.family == "wan2.2-14b" and templ.weights_bytes == round(13.31 * 2**30)
    assert "video_wan2_2_14B_fun_inpaint" in note
    lost, note = resolve_model(ModelRef("diffusion", "newbie_image_base.safetensors", "diffusion_models"), None)
    assert lost.source == "missing" and lost.weights_bytes == 0 and "no parameter count" in note


def test_report_lists_inferred_names_in_one_note():
    refs = (ModelRef("diffusion", "my_wan2.2_fun_inpaint_high_noise_14B_fp8_scaled.safetensors", "diffusion_models"),
            ModelRef("lora", "my_Wan21_CausVid_14B_T2V_lora_rank32.safetensors", "loras", strength=1.0),
            ModelRef("diffusion", "wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors", "diffusion_models"))
    budget = estimate(_workload(*refs), Device.from_card(find_card("RTX 4090")))
    assert {k: i.source for k, i in budget.models.items()} == {
        "diffusion_models/" + refs[0].name: "inferred", "loras/" + refs[1].name: "inferred",
        "diffusion_models/" + refs[2].name: "catalogue"}
    text = format_report(budget)
    lines = [ln for ln in text.splitlines() if "inferred from file names" in ln]
    assert len(lines) == 1 and refs[0].name in lines[0] and refs[1].name in lines[0] and refs[2].name not in lines[0]
    weights = [it for sb in budget.stages for it in sb.items if it.category == "weights"]
    assert any(it.bytes > 0 and "size from the name" in it.label for it in weights)


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", cat.PUBLISHED, ids=lambda e: f"{e.name}@{e.folder}")
def test_every_published_entry_has_a_source_and_consistent_numbers(entry):
    assert entry.family in FAMILIES and entry.folder
    assert entry.family != "unknown" or (entry.kind and entry.label)
    assert any(w in entry.source for w in ("Hugging Face file listing", "LFS pointer size", cat._MGR, cat._TPL)), entry.source
    assert "params" in entry.source and entry.bytes > 0 and entry.params > 0
    limits = {"F16": (1.9, 2.15), "BF16": (1.9, 2.15), "F32": (3.9, 4.1), "F8_E4M3": (0.95, 1.5), "I8": (0.95, 1.5)}
    # an all-in-one file whose parts are stored at different precisions: each part's numbers, and their sum
    for part in (entry.parts or {}).values():
        low, high = limits.get(part["dtype"], (2 / 8, 9 / 8))
        assert low <= part["bytes"] / part["params"] <= high, (entry.name, part)
    if entry.parts:
        assert sum(p["params"] for p in entry.parts.values()) == entry.params
    else:
        low, high = limits.get(entry.dtype, (2 / 8, 9 / 8))
        assert low <= entry.bytes / entry.params <= high, entry.bytes / entry.params
    hits = [e for e in cat.ENTRIES + cat.PUBLISHED if e.name.lower() == entry.name.lower() and e.folder == entry.folder]
    assert hits == [entry]  # one line per file and folder
    assert cat.lookup(entry.name, entry.folder) is entry


def test_chroma_radiance_is_not_priced_as_latent_chroma():
    """Radiance samples pixels in 16 px patches with a per-pixel head: Chroma's latent table would call a
    1024² image 262k tokens and a 70 GiB activation peak; its own traced table counts 4096."""
    from vram_budget.nodes.estimator.physics import memory
    from vram_budget.nodes.estimator.models.name_infer import infer_info
    from vram_budget.nodes.estimator.workload import LatentShape

    info, _ = infer_info("chroma-radiance-x0.safetensors", "diffusion", "diffusion_models")
    assert info.family == "chroma-radiance" and info.params == P["P_CHROMA_RADIANCE"]
    pixels = LatentShape(1, 3, 1024, 1024, pixel_width=1024, pixel_height=1024, spatial_compression=1)
    work = memory.diffusion_working(info.family, info.arch, pixels, 2, 512)
    assert work.tokens == 4096 and work.source == "traced" and work.bytes < 3 * 2**30
    assert infer_info("Chroma1-HD.safetensors", "diffusion", "diffusion_models")[0].family == "chroma"


@pytest.mark.parametrize("name, family, params", [
    ("anima-base-v1.0.safetensors", "anima", P["P_ANIMA"]),
    ("longcat_image_bf16.safetensors", "longcat-image", P["P_LONGCAT_IMAGE"]),
    ("longcat_image_edit_bf16.safetensors", "longcat-image-edit", P["P_LONGCAT_IMAGE"]),
    ("capybara_v0.1.safetensors", "hunyuan-video-1.5", P["P_HUNYUAN_VIDEO_15"]),  # ComfyUI detects HunyuanVideo15
    ("OmniGen2_bf16.safetensors", "omnigen2", P["P_OMNIGEN2"]),
])
def test_families_traced_on_comfyui_0_18_2_are_named_with_their_traced_counts(name, family, params):
    info, _ = ni.infer_info(name, "diffusion", "diffusion_models")
    assert (info.family, info.params) == (family, params)


def test_ltx2_lora_layer_count_matches_the_published_distilled_lora():
    """LTXAV's adapted linears (video + audio streams and their cross attention) at rank 384 come within 5 % of
    the published 7.67 GB of ltx-2-19b-distilled-lora-384; LTX-2.3's rank-384 LoRA is sized the same way."""
    published = cat.lookup("ltx-2-19b-distilled-lora-384.safetensors", "loras")
    info, said = ni.infer_info("ltx-2.3-22b-distilled-lora-384.safetensors", "lora", "loras")
    assert info.arch["rank"] == 384 and "rank 384 from the name" in said
    assert abs(info.weights_bytes - published.bytes) / published.bytes < 0.05


def test_qwen25_vl_3b_is_omnigen2s_llm_not_the_7b():
    info, _ = ni.infer_info("qwen2.5_vl_3b_fp8.safetensors", "text_encoder", "text_encoders")
    assert (info.family, info.params) == ("qwen2.5-3b", P["P_QWEN25_3B_LLM"])
    assert ni.infer_info("qwen_2.5_vl_7b_fp8.safetensors", "text_encoder", "text_encoders")[0].family == "qwen2.5-vl-7b"


def test_a_fine_tune_the_name_does_not_say_takes_its_family_from_a_controlnet_it_samples_with():
    """myOwnMerge_v3 says nothing; control_v11p_sd15_canny is an SD1.5 ControlNet, which fails on any
    other base: the checkpoint is priced as SD1.5 (said), and with an SDXL ControlNet as SDXL. A LoRA is no such
    evidence (a mismatched LoRA loads no keys and runs), nor is a placeholder for a file the graph cannot name."""
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.plan.planning import estimate

    def prompt(controlnet):
        return {
            "1": {"class_type": "CheckpointLoaderSimple",
                  "inputs": {"ckpt_name": "myOwnMerge_v3.safetensors"}},
            "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
            "3": {"class_type": "ControlNetLoader", "inputs": {"control_net_name": controlnet}},
            "4": {"class_type": "LoadImage", "inputs": {"image": "edges.png"}},
            "5": {"class_type": "ControlNetApply", "inputs": {"conditioning": ["2", 0], "control_net": ["3", 0],
                                                              "image": ["4", 0], "strength": 1.0}},
            "6": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
            "7": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["5", 0], "negative": ["2", 0],
                                                       "latent_image": ["6", 0], "seed": 1, "steps": 20, "cfg": 7.0,
                                                       "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}},
            "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["1", 2]}},
            "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "x"}},
        }

    device = Device.from_card(find_card("RTX 4090"))
    for controlnet, family in (("control_v11p_sd15_canny.pth", "sd15"),
                               ("controlnet-canny-sdxl-1.0.safetensors", "sdxl")):
        budget = estimate(read_workflow(prompt(controlnet)), device)
        unet = next(i for s in budget.stages for i in s.items if i.model is not None and i.model.kind == "diffusion")
        assert unet.model.family == family and "family from control" in unet.model.label, unet.model.label
        assert not budget.missing  # the ControlNet: the full layout of its base's, the largest (said)
        cn = next(i.model for s in budget.stages for i in s.items
                  if i.model is not None and i.model.kind == "controlnet")
        assert cn.family == f"controlnet-{family}" and "largest" in cn.label, cn.label
    info, why = ni.base_as("myModel.safetensors", "checkpoint", "checkpoints", "flux1-dev", "a Flux LoRA")
    assert info is None  # only SD1.5 / SDXL, whose fine-tunes share their base's size
    assert ni.base_family("lcm-lora-sdv1-5.safetensors", "lora") == "sd15"  # (the budget does not ask LoRAs)


def test_a_fine_tune_takes_its_family_from_a_unet_merged_into_the_same_model():
    """A UNet merged into the checkpoint's model (ModelMergeSimple adds one's weights to the other's, so the shapes
    must match; IC-Light's UNet patches it the same way) says the checkpoint's family; one model alone says nothing."""
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.plan.planning import estimate

    def prompt(merged: bool):
        model = ["11", 0] if merged else ["1", 0]
        return {
            "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "myOwnMerge_v3.safetensors"}},
            "10": {"class_type": "UNETLoader", "inputs": {"unet_name": "iclight_sd15_fc_unet_ldm.safetensors",
                                                          "weight_dtype": "default"}},
            "11": {"class_type": "ModelMergeSimple", "inputs": {"model1": ["1", 0], "model2": ["10", 0], "ratio": 0.5}},
            "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
            "6": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
            "7": {"class_type": "KSampler", "inputs": {"model": model, "positive": ["2", 0], "negative": ["2", 0],
                                                       "latent_image": ["6", 0], "seed": 1, "steps": 20, "cfg": 7.0,
                                                       "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}},
            "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["1", 2]}},
            "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "x"}},
        }

    device = Device.from_card(find_card("RTX 4090"))
    merged = estimate(read_workflow(prompt(True)), device)
    assert merged.complete, (merged.incomplete, merged.missing)
    ckpt = merged.models["checkpoints/myOwnMerge_v3.safetensors"]
    assert ckpt.family == "sd15" and "family from iclight_sd15" in ckpt.label, ckpt.label
    alone = estimate(read_workflow(prompt(False)), device)
    assert not alone.complete and [m.name for m in alone.missing] == ["myOwnMerge_v3.safetensors"]


def test_a_checkpoint_split_takes_the_size_its_file_names():
    """An all-in-one checkpoint of a family with two sizes is split at the size its file is (issue 30): an LTX-Video
    13B checkpoint was priced as the 2B's transformer (3.8 GB and the 2B's activations for a 26 GB model), an SD3.5
    Large one got Medium's activations. The arch numbers of the chosen size route its working memory."""
    from vram_budget.nodes.estimator.machine.resolve import part_of
    from vram_budget.nodes.estimator.physics.memory import working_memory_key

    def model_part(name):
        ref = ModelRef(role="checkpoint", name=name, folder="checkpoints", part="model")
        info, _ = resolve_model(ref, None)
        part = part_of(info, ref)
        return part, working_memory_key(part.family, part.arch)

    big, key = model_part("ltxv-13b-0.9.7-dev.safetensors")
    assert (big.params, key) == (P["P_LTXV_13B"], "ltxv-13b") and "13B transformer" in big.label
    small, key = model_part("ltx-video-2b-v0.9.5.safetensors")
    assert (small.params, key) == (P["P_LTXV_2B"], "ltxv-2b")
    # before 0.9.7 LTX-Video came in the 2B only, whatever the name leaves out
    assert model_part("ltx-video-0.9.1.safetensors")[0].params == P["P_LTXV_2B"]
    large, key = model_part("sd3.5_large_fp8_scaled.safetensors")
    assert (large.params, key) == (P["P_SD35_LARGE"], "sd3.5-large")
    medium, key = model_part("sd3.5_medium_incl_clips_t5xxlfp8scaled.safetensors")
    assert (medium.params, key) == (P["P_SD35_MEDIUM"], "sd3.5-medium")
    # a diffusion model named with its size gets that size's layers too
    info, _ = ni.infer_info("ltxv-13b-0.9.8-distilled-fp8.safetensors", "diffusion", "diffusion_models")
    assert working_memory_key(info.family, info.arch) == "ltxv-13b"


def test_a_name_without_the_size_of_a_family_of_several_sizes_is_priced_at_the_largest_and_says_so():
    """`ltxv.safetensors` (LTXTricks' examples) is LTX-Video of no stated size: priced as the 13B, an upper bound the
    label says, never as a size read from the name; a size in the name wins."""
    info, said = ni.infer_info("ltxv.safetensors", "checkpoint", "checkpoints")
    assert info.params == P["P_LTXV_13B"] and "largest" in info.label and "size from the name" not in info.label
    assert "upper bound" in said
    named, _ = ni.infer_info("ltxv-2b-0.9.8-distilled.safetensors", "diffusion", "diffusion_models")
    assert named.params == 2_000_000_000 and "largest" not in named.label


def test_a_controlnet_named_for_sd15_or_sdxl_is_the_full_layout_unless_the_name_says_a_lighter_one():
    """ComfyUI loads a non-fp8 ControlNet in the UNet's 16-bit dtype: a full SDXL ControlNet is 2.5 GB on the card
    whatever its file holds (ComfyUI-Manager's list: 14 of them at 2.50 GB in fp16, 5 at 5.00 GB in fp32); a
    Control-LoRA, a T2I-Adapter or a "small" / "mid" one is not that size, and stays unsized by name."""
    info, said = ni.infer_info("sdxl_openpose.safetensors", "controlnet", "controlnet")
    assert (info.family, info.params) == ("controlnet-sdxl", P["P_SDXL_CN"]) and "largest" in info.label
    assert ni.infer_info("control_v11p_sd15_canny.pth", "controlnet", "controlnet")[0].params == P["P_SD15_CN"]
    for lighter in ("t2i-adapter_xl_openpose.safetensors", "controlnet-sdxl-small.safetensors",
                    "diffusers_xl_canny_mid.safetensors", "control-lora-canny-rank128.safetensors"):
        assert ni.infer_info(lighter, "controlnet", "controlnet")[0] is None, lighter
    assert ni.base_family("sdxl_openpose.safetensors", "controlnet") == "sdxl"


def test_families_of_one_size_or_two_name_their_size_without_a_token():
    """LTX-2 and LTX-2.3 came in one size each: their traced counts. FLUX.2 klein came as 4B and 9B: a name without
    either is priced at the 9B, said so; a size in the name wins."""
    assert ni.infer_info("ltx-2-distilled.safetensors", "diffusion", "diffusion_models")[0].params == P["P_LTX2"]
    assert ni.infer_info("ltx-2.3-distilled.safetensors", "diffusion", "diffusion_models")[0].params == P["P_LTX23"]
    klein, _ = ni.infer_info("flux-2-klein-base.safetensors", "diffusion", "diffusion_models")
    assert (klein.family, klein.params) == ("flux2-klein-9b", P["P_KLEIN_9B"]) and "largest" in klein.label
    small, _ = ni.infer_info("flux-2-klein-4b-fp8.safetensors", "diffusion", "diffusion_models")
    assert (small.family, small.params) == ("flux2-klein", 4_000_000_000) and "largest" not in small.label


def test_an_upscaler_named_by_its_scale_or_architecture_is_priced_at_esrgans_size_said_so():
    """OpenModelDB's names give the scale and often the architecture, rarely ESRGAN ("4xNomos2_hq_mosr",
    "2xNomosUni_span_multijpg", "realesr-general-x4v3"): ESRGAN's size stands for the weights, in the label; the
    working memory is ComfyUI's per-tile reservation at the name's scale. A name with neither stays unknown."""
    for name, scale in (("4xNomos2_hq_mosr.pth", 4), ("2xNomosUni_span_multijpg.safetensors", 2),
                        ("realesr-general-x4v3.pth", 4), ("1x-ITF-SkinDiffDetail-Lite-v1.pth", 1)):
        info, _ = ni.infer_info(name, "upscale_model", "upscale_models")
        assert info.family == "esrgan" and "ESRGAN's size assumed" in info.label, name
        from vram_budget.nodes.estimator.graph import read_workflow
        prompt = {"1": {"class_type": "LoadImage", "inputs": {"image": "x.png"}},
                  "2": {"class_type": "UpscaleModelLoader", "inputs": {"model_name": name}},
                  "3": {"class_type": "ImageUpscaleWithModel", "inputs": {"upscale_model": ["2", 0], "image": ["1", 0]}},
                  "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "x"}}}
        budget = estimate(read_workflow(prompt), Device.from_card(find_card("RTX 4090")))
        work = next(i for s in budget.stages for i in s.items if i.category == "working")
        assert f"{scale}x model" in work.assumption, (name, work.assumption)
    assert ni.infer_info("model.pth", "upscale_model", "upscale_models")[0] is None


def test_a_checkpoint_named_model_takes_ltx_video_from_the_text_encoder_type_that_conditions_it():
    """LTXTricks' examples load "model.safetensors": only LTX-Video reads the "ltxv" T5 conditioning, so the
    checkpoint is LTX-Video (priced at the larger size, said) and its VAE part with it; with another type, or none,
    it stays unknown."""
    from vram_budget.nodes.estimator.graph import read_workflow

    def prompt(clip_type):
        return {
            "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "model.safetensors"}},
            "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": clip_type}},
            "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "a cat"}},
            "4": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 768, "height": 512, "length": 49,
                                                                   "batch_size": 1}},
            "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                                       "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 3.0,
                                                       "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}},
            "6": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["1", 2]}},
        }

    device = Device.from_card(find_card("RTX 4090"))
    budget = estimate(read_workflow(prompt("ltxv")), device)
    assert budget.complete, (budget.incomplete, budget.missing)
    ckpt = budget.models["checkpoints/model.safetensors"]
    assert ckpt.family == "ltxv" and "largest" in ckpt.label
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    assert decode.working_bytes > 0
    other = estimate(read_workflow(prompt("stable_diffusion")), device)
    assert not other.complete and [m.name for m in other.missing] == ["model.safetensors"]


def test_one_shard_of_a_folder_is_priced_as_the_model_the_folder_names():
    """LTX-Video's Gemma loader (Lightricks/ComfyUI-LTXVideo gemma_encoder.py: find_matching_dir(model*.safetensors))
    is given one shard and reads the whole folder: the folder's name gives the size, the shard the precision (the
    folder's "q4_0-unquantized" is a QAT release in bf16, not a GGUF file)."""
    info, said = ni.infer_info("gemma-3-12b-it-qat-q4_0-unquantized/model-00001-of-00005.safetensors", "text_encoder",
                            "text_encoders")
    assert info is not None and info.family == "gemma3"
    assert info.params == 12_000_000_000 and info.weights_bytes == 24_000_000_000 and info.dtype == "BF16"
    assert "one shard (model-00001-of-00005) of the 5-shard model in 'gemma-3-12b-it-qat-q4_0-unquantized'" in said
    # a shard with no folder to name it says nothing about its size
    assert ni.infer_info("model-00001-of-00005.safetensors", "text_encoder", "text_encoders")[0] is None
    # a folder's single weights file: the folder names the model
    info, said = ni.infer_info("Qwen2.5-VL-7B-Instruct/model.safetensors", "text_encoder", "text_encoders")
    assert info.family == "qwen2.5-vl-7b" and "the weights file (model) of a model folder" in said


@pytest.mark.parametrize("name, role, family, params", [
    # Kijai's split LTX-2.3 files (cseti007/ComfyUI-Workflows ltx2.3-i2v-two-pass): the parts the all-in-one holds
    ("ltx2/LTX23_video_vae_bf16.safetensors", "vae", "vae-ltx2.3", 726_105_969),
    ("LTX23_audio_vae_bf16.safetensors", "vae", "vae-ltx2.3-audio", 181_785_594),
    ("LTX2/ltx-2.3_text_projection_bf16.safetensors", "text_encoder", "gemma3", 1_156_061_184),
    ("LTX2_video_vae_bf16.safetensors", "vae", "vae-ltx2", 1_246_913_522),
    ("ltx-2-19b-audio_vae.safetensors", "vae", "vae-ltx2-audio", 108_840_948),
    # Z-Image's VAE is Flux's (Comfy-Org/z_image_turbo ships ae.safetensors), renamed
    ("vae-z-image-turbo.safetensors", "vae", "vae-kl16", 83_819_683),
])
def test_split_files_are_the_parts_their_all_in_one_holds(name, role, family, params):
    folder = {"vae": "vae", "text_encoder": "text_encoders"}[role]
    info, said = ni.infer_info(name, role, folder)
    assert (info.family, info.params, info.dtype) == (family, params, "BF16"), said
