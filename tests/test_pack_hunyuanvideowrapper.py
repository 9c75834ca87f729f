"""kijai/ComfyUI-HunyuanVideoWrapper's DiT, sampler and VAE (graph/packs/hunyuanvideowrapper.py) and HunyuanLoom's
FlowEdit sampler on it (graph/packs/hunyuanloom.py): the wrapper places the whole transformer on the GPU itself, but
for the double and single blocks HyVideoBlockSwap keeps in RAM (nodes.py at 3ce9640, hyvideo/modules/models.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.families.hunyuan_video import FAMILIES
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.machine.device import LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.machine.runtime import HYVIDEO
from vram_budget.nodes.estimator.plan.planning import estimate

FLOWEDIT = (Path(__file__).resolve().parent / "workflows" / "community_extra"
            / "logtd__ComfyUI-HunyuanLoom__wrapper_example_hunyuan_flowedit.json")
DEV = Device.from_card(find_card("RTX 4090"))


def _prompt(*, quantization="fp8_e4m3fn", swap=None, cfg=None, model="hunyuan_video_720_fp8_e4m3fn.safetensors",
            width=960, height=544, frames=49, auto_offload=False):
    prompt = {
        "1": {"class_type": "HyVideoModelLoader", "inputs": {
            "model": model, "base_precision": "bf16", "quantization": quantization, "load_device": "offload_device",
            "attention_mode": "sdpa", "auto_cpu_offload": auto_offload}},
        "2": {"class_type": "HyVideoVAELoader", "inputs": {"model_name": "hunyuan_video_vae_bf16.safetensors",
                                                          "precision": "bf16"}},
        "3": {"class_type": "DownloadAndLoadHyVideoTextEncoder", "inputs": {
            "llm_model": "Kijai/llava-llama-3-8b-text-encoder-tokenizer", "clip_model": "openai/clip-vit-large-patch14",
            "precision": "fp16", "apply_final_norm": False, "hidden_state_skip_layer": 2, "quantization": "disabled"}},
        "4": {"class_type": "HyVideoTextEncode", "inputs": {"text_encoders": ["3", 0], "prompt": "a cat walks",
                                                           "force_offload": True}},
        "5": {"class_type": "HyVideoSampler", "inputs": {
            "model": ["1", 0], "hyvid_embeds": ["4", 0], "width": width, "height": height, "num_frames": frames,
            "steps": 30, "embedded_guidance_scale": 6.0, "flow_shift": 9.0, "seed": 0, "force_offload": True}},
        "6": {"class_type": "HyVideoDecode", "inputs": {"vae": ["2", 0], "samples": ["5", 0], "enable_vae_tiling": True,
                                                       "temporal_tiling_sample_size": 64,
                                                       "spatial_tile_sample_min_size": 256, "auto_tile_size": True}},
    }
    if swap is not None:
        prompt["7"] = {"class_type": "HyVideoBlockSwap", "inputs": {
            "double_blocks_to_swap": swap[0], "single_blocks_to_swap": swap[1], "offload_txt_in": False,
            "offload_img_in": False}}
        prompt["1"]["inputs"]["block_swap_args"] = ["7", 0]
    if cfg is not None:
        prompt["8"] = {"class_type": "HyVideoCFG", "inputs": {"negative_prompt": "bad", "cfg": cfg,
                                                             "start_percent": 0.0, "end_percent": 1.0,
                                                             "batched_cfg": True}}
        prompt["4"]["inputs"]["hyvid_cfg"] = ["8", 0]
    return prompt


def _sample(budget):
    return next((sb, run) for sb, run in zip(budget.stages, budget.runs) if sb.stage.kind == "sample")


def test_t2v_samples_the_widgets_video_with_the_wrappers_placement():
    budget = estimate(read_workflow(_prompt()), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    sb, run = _sample(budget)
    latent = sb.stage.latent
    assert (latent.frames, latent.height, latent.width, latent.channels) == ((49 - 1) // 4 + 1, 544 // 8, 960 // 8, 16)
    assert sb.stage.manager == HYVIDEO and run.streamed_bytes == 0
    weights = sum(i.bytes for i in sb.items if i.category == "weights")
    assert 11 * 2**30 < weights < 13 * 2**30  # 12.8B parameters at one byte (quantization fp8_e4m3fn)


def test_a_video_size_not_a_multiple_of_16_is_aligned_as_the_pipeline_does():
    latent = _sample(estimate(read_workflow(_prompt(width=970, height=540)), DEV))[0].stage.latent
    assert (latent.pixel_width, latent.pixel_height) == (976, 544)


def test_block_swap_keeps_each_blocks_share_in_ram():
    plain = _sample(estimate(read_workflow(_prompt(quantization="disabled")), DEV))
    swapped = _sample(estimate(read_workflow(_prompt(quantization="disabled", swap=(20, 10))), DEV))
    d = FAMILIES["hunyuan-video"].arch["hidden_size"]
    weights = sum(i.bytes for i in plain[0].items if i.category == "weights")
    params = plain[0].items[0].model.params
    share = (20 * 36 + 10 * 15) * d * d / params  # double blocks 36 d², single 15 d²
    assert swapped[1].streamed_bytes == pytest.approx(weights * share, rel=1e-6)
    # one double block moves in at a time: resident + that block + working
    assert swapped[1].peak_bytes < plain[1].peak_bytes - swapped[1].streamed_bytes + weights * 36 * d * d / params + 1


def test_block_swap_does_nothing_under_highvram():
    dev = device_for_launch(find_card("RTX 4090"), LaunchFlags(highvram=True))
    sb, run = _sample(estimate(read_workflow(_prompt(quantization="disabled", swap=(20, 0))), dev))
    assert run.streamed_bytes == 0
    assert any("does nothing under --highvram" in e for e in run.explanation)


def test_cfg_batches_the_negative_prompt():
    single = _sample(estimate(read_workflow(_prompt()), DEV))[0]
    batched = _sample(estimate(read_workflow(_prompt(cfg=6.0)), DEV))[0]
    assert batched.stage.cfg == 6.0 and batched.stage.cfg_batched and batched.stage.uses_negative
    assert batched.working_bytes > single.working_bytes


def test_skyreels_v1_is_hunyuanvideo_not_wan():
    sb = _sample(estimate(read_workflow(_prompt(model="skyreels_hunyuan_i2v_bf16.safetensors",
                                                quantization="disabled")), DEV))[0]
    assert sb.stage.models[0].hint == "hunyuan-video"
    assert sb.items[0].model.family == "hunyuan-video"


def test_auto_cpu_offload_is_named_not_priced():
    budget = estimate(read_workflow(_prompt(auto_offload=True)), DEV)
    assert not budget.complete and budget.verdict == "unknown"
    assert any("auto_cpu_offload" in str(x) for x in budget.incomplete), budget.incomplete


def test_flowedit_edits_the_latent_it_is_given():
    data = json.loads(FLOWEDIT.read_text(encoding="utf-8"))
    budget = estimate(read_workflow(data), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    sb = _sample(budget)[0]
    encode = next(s for s in budget.stages if s.stage.kind == "vae_encode")
    assert sb.stage.node_type == "HyVideoFlowEditSamplerWrapper" and sb.stage.manager == HYVIDEO
    assert (sb.stage.latent.width, sb.stage.latent.height, sb.stage.latent.frames) == (
        encode.stage.latent.width, encode.stage.latent.height, encode.stage.latent.frames)
    assert sb.stage.steps == 30 - 4  # skip_steps
    assert encode.stage.tiled is not None and encode.stage.latent.frames == (49 - 1) // 4 + 1  # frame_load_cap 49
