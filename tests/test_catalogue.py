"""catalogue.py: well-known public files by name, and agreement with shared/FACTS.md."""
from __future__ import annotations

import pytest

import helpers_models as hm
from vram_budget.nodes.estimator.families.registry import PARAMS as P
from vram_budget.nodes.estimator.models.catalogue import ENTRIES, lookup
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.families import FAMILIES

GB = 1e9  # FACTS.md weight sizes are decimal GB


def _within(value: float, target: float, tol: float = 0.05) -> bool:
    return abs(value - target) / target <= tol


def test_facts_flux_and_t5_sizes_within_5_percent():
    # FACTS.md: "Flux.1 dev: ~24 GB of weights in 16 bit, ~12 GB in FP8."
    assert _within(catalogue_info("flux1-dev.safetensors").weights_bytes, 24 * GB)
    assert _within(catalogue_info("flux1-dev-fp8.safetensors").weights_bytes, 12 * GB)
    # "Its T5-XXL text encoder: ~9.5 GB in 16 bit, ~5 GB in FP8."
    assert _within(catalogue_info("t5xxl_fp16.safetensors").weights_bytes, 9.5 * GB)
    assert _within(catalogue_info("t5xxl_fp8_e4m3fn.safetensors").weights_bytes, 5 * GB)
    assert _within(catalogue_info("t5xxl_fp8_e4m3fn_scaled.safetensors").weights_bytes, 5 * GB, 0.05)
    # FACTS.md GGUF: "Q8 runs on 16 GB cards; Q5 and Q4 fit 12 GB" -> the files are below those sizes
    assert catalogue_info("flux1-dev-Q8_0.gguf").weights_bytes < 16 * 2**30
    for q in ("Q5_K_S", "Q4_K_S", "Q4_0"):
        assert catalogue_info(f"flux1-dev-{q}.gguf").weights_bytes < 12 * 2**30


def test_lookup_is_case_insensitive_and_ignores_folders():
    a = lookup("flux1-dev.safetensors")
    assert lookup("FLUX1-DEV.SAFETENSORS") is a
    assert lookup("flux/dev/flux1-dev.safetensors") is a
    assert lookup("C:\\ComfyUI\\models\\unet\\flux1-dev.safetensors") is a
    assert lookup("  t5xxl_fp16.safetensors ") is lookup("t5xxl_fp16.safetensors")
    assert lookup("not-a-known-model.safetensors") is None
    assert catalogue_info("") is None and catalogue_info("nope.gguf") is None


def test_same_name_in_two_folders_is_told_apart():
    """flux1-dev-fp8.safetensors is Kijai's diffusion model (11.9 GB) and Comfy-Org's all-in-one
    checkpoint (17.2 GB)."""
    unet = catalogue_info("flux1-dev-fp8.safetensors")
    assert (unet.kind, unet.weights_bytes) == ("diffusion", int(11.9 * GB))
    ckpt = catalogue_info("flux1-dev-fp8.safetensors", folder="checkpoints")
    assert (ckpt.kind, ckpt.weights_bytes, ckpt.family) == ("checkpoint", int(17.2 * GB), "flux1-dev")
    assert catalogue_info("models/checkpoints/flux1-dev-fp8.safetensors").kind == "checkpoint"
    assert catalogue_info("unet/flux1-dev-fp8.safetensors").kind == "diffusion"  # legacy folder name


def test_catalogue_info_fields():
    info = catalogue_info("wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors")
    assert (info.kind, info.family, info.variant, info.source) == ("diffusion", "wan2.2-14b", "high_noise", "catalogue")
    assert info.quantization == "scaled fp8_e4m3fn" and info.dtype == "F8_E4M3"
    assert info.arch["hidden_size"] == 5120 and info.arch["depth"] == 40
    assert info.notes and "Wan_2.2" in info.notes[0]
    umt5 = catalogue_info("umt5_xxl_fp16.safetensors")
    assert umt5.weights_bytes == 11_366_399_385 and umt5.family == "umt5-xxl"
    vae = catalogue_info("wan2.2_vae.safetensors")
    assert vae.kind == "vae" and vae.arch["latent_channels"] == 48
    assert catalogue_info("clip_vision_h.safetensors").kind == "clip_vision"
    assert catalogue_info("qwen_2.5_vl_7b_fp8_scaled.safetensors").family == "qwen2.5-vl-7b"
    assert catalogue_info("sd_xl_base_1.0.safetensors").kind == "checkpoint"


GENERIC_NAMES = {"diffusion_pytorch_model.safetensors", "model.safetensors", "pytorch_model.bin"}


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.name}@{e.folder}")
def test_every_entry_is_consistent(entry):
    assert entry.family in FAMILIES
    assert entry.source and len(entry.source) > 20
    assert entry.bytes > 0 and entry.params > 0
    # bytes per parameter as stored: 16-bit ~2, fp8 ~1 (scaled fp8 and a few 16-bit layers add a little),
    # F32 4, GGUF between 2 (Q2) and 9 bits per weight
    bpp = entry.bytes / entry.params
    if entry.dtype in ("F16", "BF16"):
        assert 1.9 <= bpp <= 2.1, bpp
    elif entry.dtype == "F32":
        assert 3.9 <= bpp <= 4.1, bpp
    elif entry.dtype.startswith("F8"):
        assert 0.95 <= bpp <= 1.5, bpp
    else:  # GGUF quant names
        assert 2 / 8 <= bpp <= 9 / 8, bpp
    assert entry.name == entry.name.strip()
    # a folder only in front of a generic file name many repositories share (catalogue._BY_PATH)
    folder, _, base = entry.name.rpartition("/")
    assert not folder or ("/" not in folder and base in GENERIC_NAMES), entry.name


def test_computed_params_agree_with_the_full_size_architectures():
    """The catalogue's computed parameter counts equal the full-size key layouts built in the tests."""
    assert P["P_FLUX1_DEV"] == hm.spec_params(hm.spec_flux())
    assert P["P_FLUX1_SCHNELL"] == hm.spec_params(hm.spec_flux(schnell=True))
    assert P["P_WAN14_T2V"] == hm.spec_params(hm.spec_wan("14b", "t2v"))
    assert P["P_WAN14_I2V"] == hm.spec_params(hm.spec_wan("14b", "i2v"))
    assert P["P_WAN14_FLF"] == hm.spec_params(hm.spec_wan("14b", "flf"))
    assert P["P_WAN13"] == hm.spec_params(hm.spec_wan("1.3b", "t2v"))
    assert P["P_WAN5"] == hm.spec_params(hm.spec_wan("5b", "ti2v"))
    assert P["P_WAN14_T2V"] + P["P_WAN22_I2V_EXTRA"] == hm.spec_params(hm.spec_wan("14b", "i2v22"))
    assert P["P_T5XXL"] == hm.spec_params(hm.spec_t5(False))
    assert P["P_UMT5XXL"] == hm.spec_params(hm.spec_t5(True))
    assert P["P_CLIP_L"] == hm.spec_params(hm.spec_clip_text(projection=False))
    assert P["P_AE"] == hm.spec_params(hm.spec_vae_kl(16, quant_conv=False))
    assert P["P_CLIP_VISION_H"] == hm.spec_params(hm.spec_clip_vision(scale=1))
    sdxl = hm.spec_params(hm.spec_unet("sdxl")) + hm.spec_params(hm.spec_clip_text(projection=False)) \
        + hm.spec_params(hm.spec_openclip_text()) + hm.spec_params(hm.spec_vae_kl(4))
    assert P["P_SDXL"] == sdxl
    # and the published file sizes follow from them (16-bit: 2 bytes per parameter, plus a header)
    assert abs(P["P_SDXL"] * 2 - 6.94e9) / 6.94e9 < 0.005
    assert abs(P["P_WAN13"] * 2 - 2_838_104_528) < 200_000


# ---------------------------------------------------------------------------------- the data file
def test_the_hand_catalogue_is_data_whose_counts_follow_the_family_modules(tmp_path):
    """data/catalogue.json (issue 22): one file a line; a count written as P_* names is the family modules' count."""
    import json

    from vram_budget.nodes.estimator.models import catalogue as cat

    rows = json.load(open(cat.DATA_PATH, encoding="utf-8"))["files"]
    assert len(rows) == len(cat.ENTRIES) + len(cat.PUBLISHED) > 150
    by_name = {(r["name"], r.get("folder")): r for r in rows}
    ckpt = by_name[("flux1-dev-fp8.safetensors", "checkpoints")]  # model + CLIP-L + T5-XXL + VAE in one file
    assert set(ckpt["params"].replace(" ", "").split("+")) == {"P_FLUX1_DEV", "P_CLIP_L", "P_T5XXL", "P_AE"}
    assert lookup("flux1-dev-fp8.safetensors", "checkpoints").params == (
        P["P_FLUX1_DEV"] + P["P_CLIP_L"] + P["P_T5XXL"] + P["P_AE"])
    assert lookup("flux1-dev.safetensors").params == P["P_FLUX1_DEV"] == 11_901_408_320
    # a count published as bytes / bytes-per-weight stays the literal its source line derives
    qwen = by_name[("qwen_image_bf16.safetensors", "diffusion_models")]
    assert isinstance(qwen["params"], int) and "params = bytes / 2" in qwen["source"]
    # a bad row is refused with the file and the row named, not a KeyError deep inside
    def load(row):
        path = tmp_path / "catalogue.json"
        path.write_text(json.dumps({"files": [row]}))
        return cat._load(str(path))

    good = {"name": "x.safetensors", "family": "flux1-dev", "params": "P_FLUX1_DEV", "bytes": 1, "dtype": "BF16",
            "source": "test", "table": "entries", "note": "provenance only"}
    assert load(good)[0][0].params == P["P_FLUX1_DEV"]
    with pytest.raises(ValueError, match=r"catalogue.json, x.safetensors: params 'P_NOPE': no family defines P_NOPE"):
        load(dict(good, params="P_NOPE"))
    with pytest.raises(ValueError, match=r"x.safetensors: table must be"):
        load(dict(good, table="other"))
    with pytest.raises(ValueError, match=r"extra=\['sizee'\]"):
        load(dict(good, sizee=3))


def test_an_all_in_one_checkpoint_whose_parts_differ_in_precision_is_split_as_stored(tmp_path):
    """SD3 Medium's all-in-one files (stabilityai/stable-diffusion-3-medium listing: 4.34 / 5.97 / 10.9 / 15.8 GB):
    the MMDiT, CLIPs and VAE in 16-bit, the T5 in fp8 or fp16 or absent. Split by parameter share, the fp8 file's
    MMDiT would be priced at 2.9 GB; as stored it is 4.17 GB, and the text encoders take the rest."""
    import json

    from vram_budget.nodes.estimator.models import catalogue as cat
    from vram_budget.nodes.estimator.machine.resolve import part_of
    from vram_budget.nodes.estimator.workload import ModelRef

    def part(name, which):
        info = cat.entry_info(name, "checkpoints")
        return part_of(info, ModelRef(role="x", name=name, folder="checkpoints", loader_node="1",
                                      loader_type="CheckpointLoaderSimple", part=which))

    listed = {"sd3_medium.safetensors": 4.34e9, "sd3_medium_incl_clips.safetensors": 5.97e9,
              "sd3_medium_incl_clips_t5xxlfp8.safetensors": 10.9e9,
              "sd3_medium_incl_clips_t5xxlfp16.safetensors": 15.8e9}
    for name, size in listed.items():
        info = cat.entry_info(name, "checkpoints")
        assert abs(sum(p.weights_bytes for p in info.parts.values()) - size) <= 0.02 * size
    model = part("sd3_medium_incl_clips_t5xxlfp8.safetensors", "model")
    assert model.family == "sd3" and model.weights_bytes == 4_172_000_000
    clip = part("sd3_medium_incl_clips_t5xxlfp8.safetensors", "clip")
    assert clip.family == "t5-xxl" and clip.quantization == "fp8_e4m3fn" and clip.weights_bytes == 6_525_440_642
    assert part("sd3_medium_incl_clips.safetensors", "clip").family == "clip-g"  # no T5 in that file
    assert "clip" not in cat.entry_info("sd3_medium.safetensors", "checkpoints").parts

    def load(parts):
        path = tmp_path / "catalogue.json"
        row = {"name": "x.safetensors", "family": "sd3", "params": 1, "bytes": 1000, "dtype": "F16",
               "source": "test", "table": "published", "parts": parts}
        path.write_text(json.dumps({"files": [row]}))
        return cat._load(str(path))

    ok = {"model": {"family": "sd3", "params": 1, "bytes": 600, "dtype": "F16"},
          "vae": {"family": "vae-kl16", "params": 1, "bytes": 400, "dtype": "F16"}}
    assert load(ok)[1][0].parts["vae"]["bytes"] == 400
    with pytest.raises(ValueError, match=r"x.safetensors: its parts add up to 600 bytes, the file is 1,000"):
        load({"model": ok["model"]})
    with pytest.raises(ValueError, match=r"x.safetensors: part 'model' needs family"):
        load({"model": dict(ok["model"], family="nope"), "vae": ok["vae"]})
