"""ComfyUI 0.33.0's Wan-based additions: Bernini (comfy_extras/nodes_bernini.py, BerniniConditioning's latent and
the context latents it hands the Wan 2.2 A14B experts) and Causal Forcing (comfy_extras/nodes_ar_video.py
ARVideoI2V / EmptyARVideoLatent; supported_models.py WAN21_CausalAR_T2V, sampled block by block with a KV cache).
Node packs graph/packs/nodes_bernini.py and nodes_ar_video.py, families in families/wan.py."""
import json

import pytest

from workflows.templates import template_workflow
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES
from vram_budget.nodes.estimator.families.wan import P_WAN13
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs import REGISTRY
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.workload import LatentShape

CARD = "RTX 4090"


def _template(name):
    return template_workflow(name)


def _budget(workflow):
    return estimate(read_workflow(workflow), Device.from_card(find_card(CARD)))


def _working(stage_budget):
    return [it for it in stage_budget.items if it.category == "working"]


# ---- Bernini -----------------------------------------------------------------------------------------------------
def _bernini_prompt(source=True, reference=False, length=81):
    """An API prompt: the Bernini-R high-noise expert sampling BerniniConditioning's latent (832 x 480)."""
    prompt = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_bernini_r_high_noise_fp8_scaled.safetensors",
                                                     "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                     "type": "wan", "device": "default"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "make it night"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": ""}},
        "5": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "6": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
        "7": {"class_type": "BerniniConditioning", "inputs": {
            "positive": ["3", 0], "negative": ["4", 0], "vae": ["5", 0], "width": 832, "height": 480,
            "length": length, "batch_size": 1, "ref_max_size": 848}},
        "8": {"class_type": "KSampler", "inputs": {
            "model": ["1", 0], "positive": ["7", 0], "negative": ["7", 1], "latent_image": ["7", 2], "seed": 1,
            "steps": 4, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "9": {"class_type": "VAEDecode", "inputs": {"samples": ["8", 0], "vae": ["5", 0]}},
        "10": {"class_type": "SaveImage", "inputs": {"images": ["9", 0], "filename_prefix": "x"}},
    }
    if source:
        prompt["7"]["inputs"]["source_video"] = ["6", 0]
    if reference:
        prompt["7"]["inputs"]["reference_images.reference_image_0"] = ["6", 0]
    return prompt


def test_bernini_nodes_are_a_pack_of_their_own():
    assert REGISTRY.latent_creators["BerniniConditioning"] == (16, 8, 4, None)  # nodes_bernini.py:78
    assert "BerniniConditioning" in REGISTRY.cond_references


def test_bernini_latent_is_wans_and_its_context_latents_are_attended_over():
    plain = _budget(_bernini_prompt(source=False))
    edit = _budget(_bernini_prompt(source=True, reference=True))
    s_plain = next(s for s in plain.stages if s.stage.kind == "sample")
    s_edit = next(s for s in edit.stages if s.stage.kind == "sample")
    latent = s_plain.stage.latent
    assert (latent.channels, latent.frames, latent.height, latent.width) == (16, 21, 60, 104)
    assert s_plain.stage.reference_latents == ()
    # the source image (1 frame at 832 x 480 -> 60 x 104 latent) and the 1024 px reference (long edge 848 -> 106 x 106)
    assert sorted(s_edit.stage.reference_latents) == [(60, 104), (106, 106)]
    tokens = 21 * 30 * 52
    assert f"{tokens + 30 * 52 + 53 * 53} latent tokens" in _working(s_edit)[0].assumption
    assert _working(s_edit)[0].bytes > _working(s_plain)[0].bytes
    assert not plain.incomplete and not edit.incomplete


def test_a_source_video_of_unknown_length_counts_as_long_as_the_node_trims_it_to():
    prompt = _bernini_prompt(source=True)
    prompt["6"] = {"class_type": "LoadVideo", "inputs": {"file": "a.mp4"}}
    prompt["11"] = {"class_type": "GetVideoComponents", "inputs": {"video": ["6", 0]}}
    prompt["7"]["inputs"]["source_video"] = ["11", 0]
    sample = next(s for s in _budget(prompt).stages if s.stage.kind == "sample")
    assert len(sample.stage.reference_latents) == 21  # one entry per latent frame of the trimmed source video


def test_bernini_templates_are_complete_with_their_context_tokens():
    for name, context in (("video_bernini_r_image_editing", 1), ("video_bernini_r_video_editing", 21)):
        budget = _budget(_template(name))
        assert not budget.incomplete, (name, budget.incomplete)
        samples = [s for s in budget.stages if s.stage.kind == "sample"]
        assert len(samples) == 2 and all("A14B" in s.title for s in samples)
        assert all(len(s.stage.reference_latents) == context for s in samples)
        json.dumps(budget.to_dict())


# ---- Causal Forcing ----------------------------------------------------------------------------------------------
def test_causal_forcing_files_are_wan_13b_sampled_autoregressively():
    info = catalogue_info("causal_forcing-framewise.safetensors", "diffusion_models")
    assert info.family == "wan2.1-1.3b-causal" and info.params == P_WAN13
    # the published 5,680,094,249 bytes are the 1.3B model in fp32 (4 bytes a parameter) and its header
    assert 0 <= info.weights_bytes - 4 * P_WAN13 < 5_000_000
    assert FAMILIES["wan2.1-1.3b-causal"].arch["ar_block_frames"] == 1
    assert FAMILIES["wan2.1-1.3b-causal-chunkwise"].arch["ar_block_frames"] == 3
    from vram_budget.nodes.estimator.models.name_infer import infer_info
    chunk, _ = infer_info("causal_forcing-chunkwise.safetensors", "diffusion", "diffusion_models")
    assert chunk.family == "wan2.1-1.3b-causal-chunkwise"
    plain, _ = infer_info("wan2.1_t2v_1.3B_bf16.safetensors", "diffusion", "diffusion_models")
    assert plain.family == "wan2.1-1.3b"  # the ordinary model is not autoregressive


def test_autoregressive_working_memory_is_one_block_plus_the_kv_cache():
    latent = LatentShape(batch=1, channels=16, height=60, width=104, frames=21, pixel_frames=81)
    ar = memory.diffusion_working("wan2.1-1.3b-causal", FAMILIES["wan2.1-1.3b-causal"].arch, latent, 1)
    one_frame = memory.diffusion_working("wan2.1-1.3b", FAMILIES["wan2.1-1.3b"].arch,
                                         LatentShape(batch=1, channels=16, height=60, width=104, frames=1), 1)
    kv = 30 * 2 * 1536 * 2 * (21 * 30 * 52)  # layers x (k, v) x dim x bf16 x every token (ar_model.py:228-237)
    assert ar.bytes == one_frame.bytes + kv
    assert ar.traced_bytes == one_frame.traced_bytes + kv
    chunk = memory.diffusion_working("wan2.1-1.3b-causal-chunkwise", FAMILIES["wan2.1-1.3b-causal-chunkwise"].arch,
                                     latent, 1)
    assert chunk.bytes > ar.bytes  # three frames a call


def test_causal_forcing_template_is_complete():
    budget = _budget(_template("video_causal_forcing_i2v"))
    assert not budget.incomplete, budget.incomplete
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.title.startswith("Sample: Causal Forcing framewise")
    assert "KV cache" in _working(sample)[0].assumption
    encode = next(s for s in budget.stages if s.stage.kind == "vae_encode")
    assert encode.stage.latent.frames == 1  # ARVideoI2V encodes the start image alone (nodes_ar_video.py:106-110)
    json.dumps(budget.to_dict())
