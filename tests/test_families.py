"""families.py: model identity and arch numbers from real key names, exact bytes, checkpoints, GGUF."""
from __future__ import annotations

import math

import pytest

import helpers_models as hm
from vram_budget.nodes.estimator.families import FAMILIES, describe, family_defaults, identify, info_to_dict
from vram_budget.nodes.estimator.files import Inventory, TensorInfo, clear_cache, inspect_file

# bytes per element (safetensors format spec), kept here so the expected sizes are computed
# independently of files.py
ITEM = {"F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "U8": 1}


def expected_bytes(spec) -> int:
    return sum(math.prod(shape) * ITEM[dt] for dt, shape in spec.values())


def expected_params(spec) -> int:
    return sum(math.prod(shape) for _, shape in spec.values())


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()


# name -> (builder returning a spec, expected kind, family, variant, arch subset)
CASES = {
    "flux1-dev.safetensors": (lambda: hm.spec_flux(scale=32), "diffusion", "flux1-dev", None,
                              dict(hidden_size=96, depth=57, depth_double=19, depth_single=38, in_channels=16,
                                   context_dim=128, guidance_embed=True, patch_size=(2, 2))),
    "flux1-schnell.safetensors": (lambda: hm.spec_flux(schnell=True, scale=32), "diffusion", "flux1-schnell", None,
                                  dict(guidance_embed=False, depth=57)),
    "flux1-fill-dev.safetensors": (lambda: hm.spec_flux(fill=True, scale=32), "diffusion", "flux1-fill", None,
                                   dict(in_channels=96)),
    "flux1-kontext-dev-fp8.safetensors": (lambda: hm.spec_flux("F8_E4M3", scale=32), "diffusion", "flux1-kontext",
                                          None, dict(in_channels=16)),
    "chroma-unlocked-v50.safetensors": (lambda: hm.spec_flux(chroma=True, scale=32), "diffusion", "chroma", None,
                                        dict(depth_double=19, depth_single=38)),
    "flux2-dev.safetensors": (lambda: hm.spec_flux(flux2=True, scale=48, double=2, single=3), "diffusion", "flux2",
                              None, dict(in_channels=128, depth=5, patch_size=(1, 1), mlp_ratio=3.0)),
    "wan2.1_t2v_14B_bf16.safetensors": (lambda: hm.spec_wan("14b", "t2v", scale=64), "diffusion", "wan2.1-14b", "t2v",
                                        dict(hidden_size=5120, depth=40, heads=40, in_channels=16, out_channels=16,
                                             ffn_dim=13824 // 64, task="t2v", patch_size=(1, 2, 2))),
    "wan2.1_t2v_1.3B_fp16.safetensors": (lambda: hm.spec_wan("1.3b", "t2v", "F16", scale=16), "diffusion",
                                         "wan2.1-1.3b", "t2v", dict(hidden_size=1536, depth=30, heads=12)),
    "wan2.1_i2v_480p_14B_fp16.safetensors": (lambda: hm.spec_wan("14b", "i2v", "F16", scale=64, layers=4), "diffusion",
                                             "wan2.1-14b", "i2v", dict(in_channels=36, depth=4, task="i2v")),
    "wan2.1_flf2v_720p_14B_fp16.safetensors": (lambda: hm.spec_wan("14b", "flf", "F16", scale=64, layers=4),
                                               "diffusion", "wan2.1-14b", "flf", dict(task="flf")),
    "wan2.1_vace_1.3B_fp16.safetensors": (lambda: hm.spec_wan("1.3b", "vace", "F16", scale=16, layers=4), "diffusion",
                                          "wan2.1-1.3b", "vace", dict(task="vace", vace_layers=2)),
    "wan2.2_ti2v_5B_fp16.safetensors": (lambda: hm.spec_wan("5b", "ti2v", "F16", scale=32), "diffusion",
                                        "wan2.2-ti2v-5b", "ti2v",
                                        dict(hidden_size=3072, depth=30, heads=24, in_channels=48, out_channels=48,
                                             latent_channels=48, spatial_compression=16)),
    "wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors": (lambda: hm.spec_wan("14b", "t2v", "F8_E4M3", 64, 3),
                                                         "diffusion", "wan2.2-14b", "high_noise", dict(task="t2v")),
    "wan2.2_i2v_low_noise_14B_fp16.safetensors": (lambda: hm.spec_wan("14b", "i2v22", "F16", 64, 3), "diffusion",
                                                  "wan2.2-14b", "low_noise", dict(task="i2v", in_channels=36)),
    "my_wan_i2v_merge.safetensors": (lambda: hm.spec_wan("14b", "i2v22", "F16", 64, 3), "diffusion", "wan2.2-14b",
                                     "i2v", dict(task="i2v")),  # 36 channels without img_emb: Wan 2.2 by keys
    "v1-5-unet.safetensors": (lambda: hm.spec_unet("sd15", scale=8), "diffusion", "sd15", None,
                              dict(context_dim=768, model_channels=40, in_channels=4, depth=16,
                                   transformer_depth=(1, 1, 1, 1, 1, 1, 0, 0))),  # as detect_unet_config lists it
    "sd2-unet.safetensors": (lambda: hm.spec_unet("sd2", scale=8), "diffusion", "sd2", None, dict(context_dim=1024)),
    "sdxl-unet.safetensors": (lambda: hm.spec_unet("sdxl", scale=8, transformer_scale=5), "diffusion", "sdxl", None,
                              dict(context_dim=2048, adm_in_channels=2816)),
    "sd3.5_medium.safetensors": (lambda: hm.spec_sd3(), "diffusion", "sd3", "medium", dict(depth=24, in_channels=16)),
    "hunyuan_video_t2v_720p_bf16.safetensors": (lambda: hm.spec_hunyuan_video(), "diffusion", "hunyuan-video", None,
                                                dict(depth=60, depth_double=20, depth_single=40, in_channels=16,
                                                     patch_size=(1, 2, 2))),
    "ltx-video-2b-v0.9.safetensors": (lambda: hm.spec_ltxv(), "diffusion", "ltxv", None,
                                      dict(depth=28, in_channels=128, hidden_size=128, head_dim=4)),
    "qwen_image_bf16.safetensors": (lambda: hm.spec_qwen_image(), "diffusion", "qwen-image", None,
                                    dict(depth=60, in_channels=16, hidden_size=96)),
    "lumina_2.safetensors": (lambda: hm.spec_lumina2(), "diffusion", "lumina2", None, dict(depth=26)),
    "z_image_turbo_bf16.safetensors": (lambda: hm.spec_lumina2(z_image=True), "diffusion", "lumina2", "z-image",
                                       dict(depth=30, heads=30)),
    "hidream_i1_full_fp16.safetensors": (lambda: hm.spec_hidream(), "diffusion", "hidream", None,
                                         dict(depth=48, depth_double=16, depth_single=32)),
    # text encoders
    "clip_l.safetensors": (lambda: hm.spec_clip_text(12, 768, scale=8, vocab=1024), "text_encoder", "clip-l", None,
                           dict(layers=12, hidden_size=96)),
    "clip_g.safetensors": (lambda: hm.spec_clip_text(32, 1280, scale=16, vocab=1024), "text_encoder", "clip-g", None,
                           dict(layers=32)),
    "t5xxl_fp16.safetensors": (lambda: hm.spec_t5(False, "F16", 64), "text_encoder", "t5-xxl", None,
                               dict(layers=24, hidden_size=64, vocab=32128)),
    "t5xxl_fp8_e4m3fn.safetensors": (lambda: hm.spec_t5(False, "F8_E4M3", 64), "text_encoder", "t5-xxl", None,
                                     dict(layers=24)),
    "umt5_xxl_fp16.safetensors": (lambda: hm.spec_t5(True, "F16", 256), "text_encoder", "umt5-xxl", None,
                                  dict(layers=24, vocab=256384)),  # real 256 384-row vocabulary
    "umt5_small_vocab.safetensors": (lambda: hm.spec_t5(True, "F16", 64, vocab=1000), "text_encoder", "umt5-xxl",
                                     None, dict(vocab=1000)),  # told apart by the per-block attention bias
    "qwen_2.5_vl_7b.safetensors": (lambda: hm.spec_llm("qwen2.5-vl-7b", layers=3), "text_encoder", "qwen2.5-vl-7b",
                                   None, dict(layers=3, hidden_size=3584)),
    "llava_llama3_fp16.safetensors": (lambda: hm.spec_llm("llama3-8b", layers=3), "text_encoder", "llama3-8b", None,
                                      dict(hidden_size=4096)),
    "mistral_3_small_flux2.safetensors": (lambda: hm.spec_llm("mistral", layers=3), "text_encoder", "mistral",
                                          "pruned", dict(hidden_size=5120, layers=3)),
    "qwen_3_4b.safetensors": (lambda: hm.spec_llm("qwen3", layers=3), "text_encoder", "qwen3", "4b",
                              dict(hidden_size=2560)),
    "gemma_2_2b.safetensors": (lambda: hm.spec_llm("gemma", layers=3), "text_encoder", "gemma", "2-2b",
                               dict(hidden_size=2304)),
    # VAEs
    "sdxl_vae.safetensors": (lambda: hm.spec_vae_kl(4, "F16", 8), "vae", "vae-kl4", None,
                             dict(latent_channels=4, spatial_compression=8, base_channels=16)),
    "ae.safetensors": (lambda: hm.spec_vae_kl(16, "F32", 8, quant_conv=False), "vae", "vae-kl16", None,
                       dict(latent_channels=16, spatial_compression=8)),
    "flux2-vae.safetensors": (lambda: hm.spec_vae_kl(32, "BF16", 8, quant_conv=False, bn=True), "vae", "vae-flux2",
                              None, dict(latent_channels=128, spatial_compression=16)),
    "wan_2.1_vae.safetensors": (lambda: hm.spec_vae_wan("2.1"), "vae", "vae-wan2.1", None,
                                dict(latent_channels=16, spatial_compression=8, temporal_compression=4)),
    "wan2.2_vae.safetensors": (lambda: hm.spec_vae_wan("2.2"), "vae", "vae-wan2.2", None,
                               dict(latent_channels=48, spatial_compression=16, temporal_compression=4)),
    "hunyuan_video_vae_bf16.safetensors": (lambda: hm.spec_vae_hunyuan(), "vae", "vae-hunyuan", None,
                                           dict(latent_channels=16, temporal_compression=4)),
    "ltxv_vae.safetensors": (lambda: hm.spec_vae_ltxv(), "vae", "vae-ltxv", None,
                             dict(latent_channels=128, spatial_compression=32, temporal_compression=8)),
    # adapters
    "flux_lora_kohya.safetensors": (lambda: hm.spec_lora("flux", "kohya", 16), "lora", "lora", None,
                                    dict(rank=16, target_family="flux1-dev", has_alpha=True)),
    "flux_lora_diffusers.safetensors": (lambda: hm.spec_lora("flux", "diffusers", 32), "lora", "lora", None,
                                        dict(rank=32, target_family="flux1-dev", has_alpha=False)),
    "flux_lora_comfy.safetensors": (lambda: hm.spec_lora("flux", "comfy", 8), "lora", "lora", None,
                                    dict(rank=8, target_family="flux1-dev")),
    "wan_lightx2v_lora.safetensors": (lambda: hm.spec_lora("wan14b", "comfy", 64, blocks=2), "lora", "lora", None,
                                      dict(rank=64, target_family="wan2.1-14b")),
    "wan13_lora.safetensors": (lambda: hm.spec_lora("wan1.3b", "kohya", 4), "lora", "lora", None,
                               dict(rank=4, target_family="wan2.1-1.3b")),
    "sdxl_lora.safetensors": (lambda: hm.spec_lora("sdxl", "kohya", 8), "lora", "lora", None,
                              dict(target_family="sdxl", text_encoder=True)),
    "sd15_lora.safetensors": (lambda: hm.spec_lora("sd15", "kohya", 8), "lora", "lora", None,
                              dict(target_family="sd15")),
    "control_v11p_sd15_canny.safetensors": (lambda: hm.spec_controlnet_sd("sd15"), "controlnet", "controlnet", None,
                                            dict(target_family="sd15", context_dim=768)),
    "controlnet_sdxl.safetensors": (lambda: hm.spec_controlnet_sd("sdxl"), "controlnet", "controlnet", None,
                                    dict(target_family="sdxl", context_dim=2048)),
    "flux-canny-controlnet-v3.safetensors": (lambda: hm.spec_controlnet_flux(), "controlnet", "controlnet", None,
                                             dict(target_family="flux1-dev", depth=2)),
    "clip_vision_h.safetensors": (lambda: hm.spec_clip_vision(), "clip_vision", "clip-vision", "vit-h",
                                  dict(layers=32, hidden_size=80, patch_size=(14, 14))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_identify_real_key_layouts(tmp_path, name):
    build, kind, family, variant, arch = CASES[name]
    spec = build()
    w = hm.write_safetensors(tmp_path / name, spec)
    info = describe(w.path)
    assert (info.kind, info.family, info.variant) == (kind, family, variant), info.evidence
    for key, value in arch.items():
        assert info.arch.get(key) == value, (key, info.arch.get(key), value)
    assert info.weights_bytes == expected_bytes(spec)
    assert info.params == expected_params(spec)
    assert info.largest_tensor_bytes == max(math.prod(s) for _, s in spec.values()) * 2
    assert info.source == "header" and info.path == w.path
    assert info.evidence, "evidence must say what decided"
    assert info.label and info.family in FAMILIES
    assert info_to_dict(info)["family"] == family


def test_wan22_expert_and_kontext_decided_by_file_name_say_so(tmp_path):
    spec = hm.spec_wan("14b", "t2v", scale=64, layers=2)
    plain = describe(hm.write_safetensors(tmp_path / "my_wan_14b.safetensors", spec).path)
    assert plain.family == "wan2.1-14b"
    assert any("Wan 2.2" in n for n in plain.notes)
    for fname, expert in (("Wan2.2-T2V-A14B-HighNoise-Q8.safetensors", "high_noise"),
                          ("wan22_low_noise.safetensors", "low_noise")):
        info = describe(hm.write_safetensors(tmp_path / fname, spec).path)
        assert info.family == "wan2.2-14b" and info.variant == expert
        assert any("file name" in e for e in info.evidence)
    unsure = describe(hm.write_safetensors(tmp_path / "wan2.2_t2v_14B.safetensors", spec).path)
    assert unsure.family == "wan2.2-14b" and unsure.variant == "t2v"
    assert any("expert" in n for n in unsure.notes)
    flux = hm.write_safetensors(tmp_path / "flux1-kontext-dev.safetensors", hm.spec_flux(scale=32, double=1, single=1))
    kontext = describe(flux.path)
    assert kontext.family == "flux1-kontext" and any("kontext" in e for e in kontext.evidence)
    # the same file under another name is plain dev: Kontext cannot be told from the keys
    assert identify(inspect_file(flux.path), filename_hint="renamed.safetensors").family == "flux1-dev"


# ---------------------------------------------------------------------------------------------
# Full-size headers (sparse files): real parameter and byte counts against published sizes
@pytest.mark.parametrize("build, family, params, published, arch", [
    (lambda: hm.spec_flux("BF16"), "flux1-dev", 11_901_408_320, 23.8e9,
     dict(hidden_size=3072, depth=57, heads=24, head_dim=128, ffn_dim=12288, context_dim=4096, in_channels=16)),
    (lambda: hm.spec_wan("14b", "t2v", "F16"), "wan2.1-14b", 14_288_491_584, 28.6e9,
     dict(hidden_size=5120, depth=40, heads=40, ffn_dim=13824, context_dim=4096, in_channels=16)),
    (lambda: hm.spec_wan("14b", "i2v", "F16"), "wan2.1-14b", 16_394_878_784, 32.8e9, dict(in_channels=36)),
    (lambda: hm.spec_wan("1.3b", "t2v", "BF16"), "wan2.1-1.3b", 1_418_996_800, 2_838_104_528,
     dict(hidden_size=1536, depth=30, heads=12, ffn_dim=8960)),
    (lambda: hm.spec_wan("5b", "ti2v", "F16"), "wan2.2-ti2v-5b", 4_999_787_712, 10.0e9,
     dict(hidden_size=3072, depth=30, heads=24, ffn_dim=14336, in_channels=48)),
    # the published file is 9.79 GB because it also carries encoder.embed_tokens (a copy of
    # shared.weight) that ComfyUI does not load: what it loads is 4.76 B params, 9.52 GB
    (lambda: hm.spec_t5(False, "F16", both_embeddings=True), "t5-xxl", 4_762_310_656, 9.52e9,
     dict(hidden_size=4096, layers=24, ffn_dim=10240, vocab=32128)),
    (lambda: hm.spec_t5(True, "F16"), "umt5-xxl", 5_680_910_336, 11_366_399_385,
     dict(hidden_size=4096, layers=24, vocab=256384)),
    (lambda: hm.spec_unet("sdxl", "F16"), "sdxl", 2_567_463_684, None, dict(context_dim=2048, model_channels=320)),
    (lambda: hm.spec_unet("sd15", "F32"), "sd15", 859_520_964, None, dict(context_dim=768, depth=16)),
])
def test_full_size_headers_match_published_sizes(tmp_path, build, family, params, published, arch):
    spec = build()
    w = hm.write_safetensors(tmp_path / "full.safetensors", spec, sparse=True)
    info = describe(w.path)
    assert info.family == family
    not_loaded = {"encoder.embed_tokens.weight", "spiece_model"} if family.startswith(("t5", "umt5")) else set()
    assert info.weights_bytes == expected_bytes({k: v for k, v in spec.items() if k not in not_loaded})
    if params is not None:
        assert info.params == params
    if published is not None:  # published listing (decimal GB, 3 significant digits) or LFS size
        assert abs(info.weights_bytes - published) / published < 0.005
    for key, value in arch.items():
        assert info.arch[key] == value, key


# ---------------------------------------------------------------------------------------------
def test_checkpoints_split_into_parts_with_their_own_bytes(tmp_path):
    for kind, model_family, clip_families, vae_family in (
            ("sd15", "sd15", {"clip-l"}, "vae-kl4"),
            ("sdxl", "sdxl", {"clip-l", "clip-g"}, "vae-kl4"),
            ("flux", "flux1-dev", {"clip-l", "t5-xxl"}, "vae-kl16")):
        w, parts = hm.write_checkpoint(tmp_path / f"{kind}_ckpt.safetensors", kind)
        info = describe(w.path)
        assert info.kind == "checkpoint" and info.family == model_family
        assert set(info.parts) == {"model", "clip", "vae"}
        assert info.parts["model"].family == model_family and info.parts["model"].kind == "diffusion"
        assert info.parts["vae"].family == vae_family
        clip = info.parts["clip"]
        got = set(clip.parts) if clip.parts else {clip.family}
        assert {f.rstrip("+") for f in got} == clip_families
        for part in ("model", "clip", "vae"):
            assert info.parts[part].weights_bytes == expected_bytes(parts[part]), (kind, part)
        assert info.weights_bytes == expected_bytes(w.spec)
        if "other" in parts:  # SD1.5's alphas_cumprod etc. belong to no part but count in the file
            assert any("outside model/clip/vae" in n for n in info.notes)
        assert info.weights_bytes == sum(p.weights_bytes for p in info.parts.values()) + expected_bytes(
            parts.get("other", {}))
    sdxl = describe(tmp_path / "sdxl_ckpt.safetensors")
    assert sdxl.parts["clip"].family == "clip-g"  # the larger of the two encoders
    assert sdxl.parts["clip"].parts["clip-g"].arch["layers"] == 32


# ---------------------------------------------------------------------------------------------
# GGUF
def test_gguf_diffusion_and_text_encoders(tmp_path):
    q8 = hm.write_gguf_flux(tmp_path / "flux1-dev-Q8_0.gguf", "Q8_0", quantize_real=True)
    info = describe(q8.path)
    assert (info.kind, info.family) == ("diffusion", "flux1-dev")
    assert info.quantization == "gguf Q8_0" and info.dtype == "Q8_0"
    assert info.weights_bytes == hm.gguf_expected_bytes(q8.spec)
    # working memory: the biggest layer dequantized to 16 bit
    assert info.largest_tensor_bytes == max(math.prod(s) for _, s in q8.spec.values()) * 2
    wan = describe(hm.write_gguf_wan(tmp_path / "wan2.1-t2v-14b-Q4_K_M.gguf").path)
    assert (wan.family, wan.variant, wan.arch["hidden_size"], wan.arch["in_channels"]) == ("wan2.1-14b", "t2v", 5120, 16)
    wan22 = describe(hm.write_gguf_wan(tmp_path / "Wan2.2-I2V-A14B-LowNoise-Q4_K_M.gguf").path)
    assert (wan22.family, wan22.variant) == ("wan2.2-14b", "low_noise")
    umt5 = describe(hm.write_gguf_te(tmp_path / "umt5-xxl-encoder-Q8_0.gguf", "t5encoder", vocab=256384).path)
    assert (umt5.kind, umt5.family, umt5.arch["layers"]) == ("text_encoder", "umt5-xxl", 24)
    t5 = describe(hm.write_gguf_te(tmp_path / "t5-v1_1-xxl-encoder-Q5_K_M.gguf", "t5encoder", vocab=32128,
                                   quant="Q5_K", hidden=256).path)
    assert (t5.family, t5.arch["hidden_size"], t5.quantization) == ("t5-xxl", 256, "gguf Q5_K")
    llama = describe(hm.write_gguf_te(tmp_path / "llava-llama3-Q4_K_M.gguf", "llama", vocab=128, hidden=256,
                                      layers=4, quant="Q4_K").path)
    assert (llama.family, llama.arch["layers"]) == ("llama3-8b", 4)


# ---------------------------------------------------------------------------------------------
def test_unknown_files_fall_back_to_their_bytes(tmp_path):
    spec = {"foo.bar": ("F16", (10, 10)), "baz": ("F32", (7,))}
    info = describe(hm.write_safetensors(tmp_path / "mystery.safetensors", spec).path)
    assert (info.kind, info.family) == ("unknown", "unknown")
    assert info.weights_bytes == expected_bytes(spec)
    assert any("unknown architecture" in n for n in info.notes)


def test_identify_never_raises_on_odd_shapes():
    """Keys a detector looks at, with shapes no real file has: still a ModelInfo."""
    odd = [
        {"head.modulation": (), "blocks.0.ffn.0.weight": (3,)},
        {"double_blocks.0.img_attn.norm.key_norm.scale": (), "img_in.weight": (5,)},
        {"input_blocks.0.0.weight": (), "label_emb.0.0.weight": (1,)},
        {"encoder.block.0.layer.1.DenseReluDense.wi_1.weight": (7,)},
        {"decoder.conv_in.weight": ()},
        {"x.lora_down.weight": (), "x.lora_up.weight": (4,)},
        {"joint_blocks.0.context_block.attn.qkv.weight": (2,), "x_embedder.proj.weight": (9,)},
        {"txt_in.individual_token_refiner.blocks.0.norm1.weight": (1,), "img_in.proj.weight": ()},
        {"cap_embedder.1.weight": (3,)},
        {"model.layers.0.self_attn.k_proj.bias": ()},
        {"vision_model.encoder.layers.0.layer_norm1.weight": ()},
    ]
    for tensors in odd:
        inv = Inventory("/x/odd.safetensors", "safetensors", 100,
                        {k: TensorInfo(k, "F16", s, 2 * math.prod(s)) for k, s in tensors.items()})
        info = identify(inv)
        assert info.weights_bytes == inv.total_bytes
        assert info.family in FAMILIES


def test_pickle_inventory_is_unknown_with_the_reason():
    inv = Inventory("/m/old.ckpt", "pickle", 12345, {}, {}, exact=False,
                    notes=("unsupported: legacy pickle checkpoint (not executed); size from file, dtypes unknown",))
    info = identify(inv)
    assert (info.kind, info.family, info.weights_bytes, info.source) == ("unknown", "unknown", 12345, "file size")
    assert any("legacy pickle" in n for n in info.notes)


# ---------------------------------------------------------------------------------------------
REQUIRED_IDS = {
    "diffusion": ["flux1-dev", "flux1-schnell", "flux1-fill", "flux1-kontext", "flux2", "chroma", "sd15", "sd2",
                  "sdxl", "sd3", "wan2.1-1.3b", "wan2.1-14b", "wan2.2-ti2v-5b", "wan2.2-14b", "hunyuan-video",
                  "ltxv", "qwen-image", "lumina2", "hidream"],
    "text_encoder": ["clip-l", "clip-g", "t5-xxl", "umt5-xxl", "qwen2.5-vl-7b", "llama3-8b", "gemma", "qwen3",
                     "mistral"],
    "vae": ["vae-kl4", "vae-kl16", "vae-wan2.1", "vae-wan2.2", "vae-hunyuan", "vae-ltxv"],
    "lora": ["lora"], "controlnet": ["controlnet"], "clip_vision": ["clip-vision"], "unknown": ["unknown"],
}


def test_family_table_vocabulary_and_full_size_numbers():
    for kind, ids in REQUIRED_IDS.items():
        for fid in ids:
            assert FAMILIES[fid].kind == kind, fid
            assert FAMILIES[fid].label
    f = family_defaults("flux1-dev")
    assert (f["hidden_size"], f["depth_double"], f["depth_single"], f["depth"], f["heads"]) == (3072, 19, 38, 57, 24)
    assert f["patch_size"] == (2, 2) and f["latent_channels"] == 16 and f["context_dim"] == 4096
    w = family_defaults("wan2.1-14b")
    assert (w["hidden_size"], w["depth"], w["heads"], w["ffn_dim"]) == (5120, 40, 40, 13824)
    assert w["patch_size"] == (1, 2, 2) and w["temporal_compression"] == 4 and w["spatial_compression"] == 8
    assert family_defaults("wan2.2-14b") == w
    s = family_defaults("wan2.1-1.3b")
    assert (s["hidden_size"], s["depth"], s["heads"]) == (1536, 30, 12)
    m = family_defaults("wan2.2-ti2v-5b")
    assert (m["hidden_size"], m["depth"], m["heads"], m["latent_channels"], m["spatial_compression"]) == (3072, 30, 24, 48, 16)
    assert (family_defaults("t5-xxl")["hidden_size"], family_defaults("t5-xxl")["layers"]) == (4096, 24)
    assert family_defaults("umt5-xxl")["vocab"] == 256384
    assert (family_defaults("clip-l")["hidden_size"], family_defaults("clip-l")["layers"]) == (768, 12)
    assert family_defaults("vae-wan2.2")["latent_channels"] == 48
    # one vocabulary for arch numbers
    allowed = {"hidden_size", "depth", "depth_double", "depth_single", "heads", "head_dim", "ffn_dim", "mlp_ratio",
               "in_channels", "out_channels", "patch_size", "latent_channels", "spatial_compression",
               "temporal_compression", "context_dim", "layers", "vocab", "kv_heads", "max_tokens", "vec_dim",
               "guidance_embed", "model_channels", "channel_mult", "transformer_depth", "adm_in_channels",
               "base_channels", "freq_dim", "cross_attention_dim", "image_size",
               # ComfyUI 0.33's families: an autoregressive video model's latent frames a call (memory.py), a
               # DiT that runs in windows of tokens (MiniMax Music 3), an audio track beside the video and the
               # token refiner's depth (MiniMax H3), and VAEs that state their own dtype / quantised ops / audio
               # rate (resolve.vae_dtype_bytes, the VAE_FORMULAS of families/minimax*.py)
               "ar_block_frames", "window_tokens", "audio_latent_channels", "token_refiner_depth", "quantized_ops",
               "vae_dtype_bytes", "sample_rate", "samples_per_latent",
               # SDPose's heatmap head (its working memory after the UNet forward, graph/packs/nodes_sdpose.py)
               "heatmap_channels", "heatmap_scale", "input_size", "keypoints",
               # TripoSplat's learned query tokens and refiner depth (ldm/triposplat/model.py:215-235)
               "q_token_length", "refiner_depth",
               # MoGe's model version (1 / 2: which head and token range, ldm/moge/model.py:263)
               "version",
               # image-utility models (families/birefnet.py, frame_interpolation.py): the loader picks the dtype
               # itself (no precision advice), and RIFE's pad to 64
               "fixed_precision", "pad_align",
               # Florence-2's DaViT first-stage width (families/florence2.py generate_working)
               "vision_width"}
    for fid, fam in FAMILIES.items():
        assert set(fam.arch) <= allowed, (fid, set(fam.arch) - allowed)
        if "patch_size" in fam.arch:
            assert isinstance(fam.arch["patch_size"], tuple)


def test_text_encoder_saved_with_its_checkpoint_prefix(tmp_path):
    """A text encoder extracted from an all-in-one file keeps keys like text_encoders.t5xxl.transformer.*"""
    spec = {"text_encoders.t5xxl.transformer." + k: v for k, v in hm.spec_t5(False, "F16", 64).items()}
    info = describe(hm.write_safetensors(tmp_path / "t5_from_ckpt.safetensors", spec).path)
    assert (info.kind, info.family) == ("text_encoder", "t5-xxl")
    assert info.weights_bytes == expected_bytes(spec)
    assert any("text_encoders.t5xxl.transformer." in e for e in info.evidence)


def test_results_are_cached_and_read_only(tmp_path):
    w = hm.write_safetensors(tmp_path / "wan2.1_t2v_1.3B.safetensors", hm.spec_wan("1.3b", scale=16, layers=2))
    first = describe(w.path)
    assert describe(w.path) is first  # same Inventory from files' cache -> same result
    with pytest.raises(TypeError):
        first.arch["hidden_size"] = 1  # shared between callers: must not be mutable
    with pytest.raises(TypeError):
        FAMILIES["wan2.1-14b"].arch["depth"] = 1
    clear_cache()
    second = describe(w.path)
    assert second is not first and second == first
