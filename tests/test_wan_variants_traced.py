"""Wan 2.2 S2V, HuMo 17B and Wan 2.2 Animate priced with their own traced working memory (ComfyUI 0.18.2
WanModel_S2V / HumoWanModel / AnimateWanModel, bench/trace_working_memory.py), not the plain Wan 14B T2V trace:
files detected by header (the extra key ComfyUI's model_detection.py:518-524 reads) and files known by name only
(catalogue / template sizes / name inference). Tokens: the entries count the reference / motion frames the model
appends (memory.EXTRA_TOKENS); the stage latent is the node's `length`."""
from __future__ import annotations

import helpers_models as hm
import pytest

from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.families import describe
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.workload import SAMPLE, LatentShape

RTX_4090 = Device.from_card(find_card("RTX 4090"))
# 832x480, 81 frames: the Wan latent [B, 16, 21, 60, 104] the nodes make (T = (81 - 1) // 4 + 1).
LATENT = LatentShape(1, 16, 60, 104, 21)
HW = 30 * 52  # tokens of one latent frame after the (1, 2, 2) patchify

# (task, extra header key, base layout, traced entry, tokens the model attends over at LATENT)
HEADERS = {
    "s2v": ("casual_audio_encoder.encoder.final_linear.weight", "t2v", "wan2.2-14b-s2v",
            22 * HW + HW + 15 * 26 + 4 * 7 * 13),  # + reference frame + FramePackMotioner's 1 / 2x / 4x frames
    "humo": ("audio_proj.audio_proj_glob_1.layer.bias", "i2v22", "wan2.1-14b-humo", 22 * HW),
    "animate": ("face_adapter.fuser_blocks.0.k_norm.weight", "i2v", "wan2.2-14b-animate", 22 * HW),
}


def _traced(key: str, batch: int, tokens: int) -> int:
    return memory._eval_traced(memory.traced_constants()[key], batch, tokens, 512, LATENT)


@pytest.mark.parametrize("task", list(HEADERS))
def test_header_detected_variant_priced_with_its_own_trace(tmp_path, task):
    extra, base, key, tokens = HEADERS[task]
    spec = dict(hm.spec_wan("14b", base, scale=64, layers=2))
    spec[extra] = ("BF16", (128,))
    info = describe(hm.write_safetensors(tmp_path / f"my_{task}_model.safetensors", spec).path)
    assert info.family in ("wan2.1-14b", "wan2.2-14b") and info.arch.get("task") == task, info.evidence
    arch = memory.model_arch(info)
    assert memory.working_memory_key(info.family, arch) == key
    for batch in (1, 2):
        wm = memory.diffusion_working(info.family, arch, LATENT, batch, 512)
        assert wm.source == "traced" and wm.tokens == tokens
        assert wm.traced_bytes == _traced(key, batch, tokens)
        assert wm.traced_bytes != _traced("wan2.1-14b", batch, 21 * HW)


@pytest.mark.parametrize("name, key", [
    ("wan2.2_s2v_14B_bf16.safetensors", "wan2.2-14b-s2v"),  # template sizes (video_wan2_2_14B_s2v)
    ("wan2.2_s2v_14B_fp8_scaled.safetensors", "wan2.2-14b-s2v"),
    ("humo_17B_fp8_e4m3fn.safetensors", "wan2.1-14b-humo"),  # template sizes (video_humo)
    ("Wan2_2-Animate-14B_fp8_e4m3fn_scaled_KJ.safetensors", "wan2.2-14b-animate"),  # catalogue, variant "animate"
    ("wan2.2_animate_14B_bf16.safetensors", "wan2.2-14b-animate"),  # name inference only
    ("Wan2_1-HuMo_17B_fp16.safetensors", "wan2.1-14b-humo"),
])
def test_catalogue_and_name_variants_priced_with_their_own_trace(name, key):
    info = catalogue_info(name, "diffusion_models") or infer_info(name, "diffusion", "diffusion_models")[0]
    assert info is not None and info.family in ("wan2.1-14b", "wan2.2-14b")
    arch = memory.model_arch(info)
    assert memory.working_memory_key(info.family, arch) == key
    wm = memory.diffusion_working(info.family, arch, LATENT, 2, 512)
    assert wm.source == "traced" and "the model appends" in wm.assumption


def test_plain_wan_and_animatediff_names_keep_their_entries():
    t2v = catalogue_info("wan2.1_t2v_14B_fp16.safetensors", "diffusion_models")
    assert memory.working_memory_key(t2v.family, memory.model_arch(t2v)) == "wan2.1-14b"
    wm = memory.diffusion_working(t2v.family, memory.model_arch(t2v), LATENT, 1, 512)
    assert wm.tokens == 21 * HW and "appends" not in wm.assumption
    lora = infer_info("animatediff_lightning_4step_comfyui.safetensors", "lora", "loras")[0]
    assert lora is None or lora.variant != "animate"


def test_traced_figures_differ_from_t2v_as_the_trace_says():
    """The traced points at 832x480x81, batch 1: each costs more than T2V's 2.688 GiB at its 32,760 tokens."""
    doc = memory._traced_doc()["architectures"]
    t2v = next(p for p in doc["wan2.1-14b"]["points"]
               if (p["batch"], p["width"], p["height"], p["frames"]) == (1, 832, 480, 81))
    expected = {"wan2.2-14b-s2v": (1, 36634), "wan2.1-14b-humo": (0, 34320), "wan2.2-14b-animate": (0, 34320)}
    for key, (refs, tokens) in expected.items():
        p = next(p for p in doc[key]["points"] if (p["batch"], p["width"], p["frames"], p.get("refs", 0))
                 == (1, 832, 81, refs))
        assert p["tokens"] == tokens
        assert 1.10 < p["working_bytes"] / t2v["working_bytes"] < 1.25, (key, p["working_bytes"])
        assert abs(p["predicted_bytes"] - p["working_bytes"]) / p["working_bytes"] <= 0.03
        assert doc[key]["provenance"]["comfyui_version"] == "0.18.2"


def _s2v_prompt(length=81):
    """video_wan2_2_14B_s2v's first chunk: WanSoundImageToVideo at 832x480 (comfy_extras/nodes_wan.py:949-979)."""
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_s2v_14B_bf16.safetensors",
                                                      "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                      "type": "wan"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "a man sings"}},
        "5": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": ""}},
        "6": {"class_type": "WanSoundImageToVideo", "inputs": {"positive": ["4", 0], "negative": ["5", 0],
                                                                "vae": ["3", 0], "width": 832, "height": 480,
                                                                "length": length, "batch_size": 1}},
        "7": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["6", 0], "negative": ["6", 1],
                                                    "latent_image": ["6", 2], "seed": 1, "steps": 20, "cfg": 6.0,
                                                    "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["3", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "x"}},
    }


def test_s2v_workflow_sample_stage_uses_the_s2v_trace():
    budget = estimate(read_workflow(_s2v_prompt()), RTX_4090)
    sample = next(s for s in budget.stages if s.stage.kind == SAMPLE)
    work = next(i for i in sample.items if i.category == "working")
    tokens = HEADERS["s2v"][3]
    assert f"{tokens} latent tokens" in work.assumption and "reference-motion" in work.assumption
    k = memory.calibration("wan2.2-14b")
    assert work.bytes >= int(_traced("wan2.2-14b-s2v", 2, tokens) * k) * 0.99


def test_wrapper_humo_latent_already_holds_its_reference_frames():
    """WanVideoWrapper's HuMoEmbeds puts a latent frame per reference image into its target shape, so the
    HuMo entry does not add one more (memory.LATENT_HAS_EXTRA); ComfyUI's own WanHuMoImageToVideo latent does not
    hold it and the entry adds it."""
    core = memory.diffusion_working("wan2.1-14b", {"task": "humo"}, LATENT, 1, 512)
    lat = LatentShape(1, 16, 60, 104, 22, source_type="HuMoEmbeds")  # 21 frames + its one reference frame
    wrapper = memory.diffusion_working("wan2.1-14b", {"task": "humo"}, lat, 1, 512)
    if memory.working_memory_key("wan2.1-14b", {"task": "humo"}) != "wan2.1-14b-humo":
        pytest.skip("the HuMo key is reached through another arch field here")
    assert wrapper.tokens == core.tokens == 22 * HW
    assert wrapper.bytes == core.bytes
