"""Issue 33: ComfyUI-Kolors-MZ priced by its own code (graph/packs/kolors_mz.py, families/kolors.py): the Kolors UNet
named by its loader whatever the file is called, ChatGLM3-6B at the bits its name asks for, moved to the GPU whole."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families import kolors as K
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

EXTRA = Path(__file__).resolve().parent / "workflows" / "community_extra"


def test_the_counts_are_the_models_own():
    assert K.P_CHATGLM3 == 6_243_584_000  # THUDM/chatglm3-6b: 6.24B
    assert abs(2 * K.P_KOLORS_UNET - 5.16e9) < 0.01 * 5.16e9  # Kwai-Kolors/Kolors unet fp16: 5.16 GB
    assert K.chatglm3_loaded_bytes(4) < K.chatglm3_loaded_bytes(8) < K.chatglm3_loaded_bytes(16) == 2 * K.P_CHATGLM3


def _prompt(glm: str) -> dict:
    return {
        "1": {"class_type": "MZ_KolorsUNETLoaderV2", "inputs": {"unet_name": "diffusion_pytorch_model.fp16.safetensors"}},
        "2": {"class_type": "MZ_ChatGLM3Loader", "inputs": {"chatglm3_checkpoint": glm}},
        "3": {"class_type": "MZ_ChatGLM3_V2", "inputs": {"chatglm3_model": ["2", 0], "text": "a red fox in snow"}},
        "4": {"class_type": "MZ_ChatGLM3_V2", "inputs": {"chatglm3_model": ["2", 0], "text": "blurry"}},
        "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["4", 0],
                                                   "latent_image": ["5", 0], "seed": 1, "steps": 25, "cfg": 5.0,
                                                   "sampler_name": "dpmpp_2m", "scheduler": "karras", "denoise": 1.0}},
        "7": {"class_type": "VAELoader", "inputs": {"vae_name": "sdxl_vae.safetensors"}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["7", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "kolors"}},
    }


def _budget(glm: str, card: str):
    return estimate(read_workflow(_prompt(glm)), Device.from_card(find_card(card)))


def test_the_unet_is_named_by_its_loader_and_chatglm3_by_its_bits():
    budget = _budget("chatglm3-8bit.safetensors", "RTX 4090")
    assert budget.complete, budget.incomplete
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.weights_bytes == 2 * K.P_KOLORS_UNET
    text = next(s for s in budget.stages if s.stage.kind == "text_encode")
    assert text.weights_bytes == K.chatglm3_loaded_bytes(8)


def test_chatglm3_is_moved_whole_so_fp16_does_not_fit_a_12_gb_card():
    fp16 = _budget("chatglm3-fp16.safetensors", "RTX 3060")
    four = _budget("chatglm3-4bit.safetensors", "RTX 3060")
    assert fp16.verdict == "oom"
    stage, run = next((s, r) for s, r in zip(fp16.stages, fp16.runs) if s.stage.kind == "text_encode")
    assert run.outcome == "oom" and "4-bit ChatGLM3" in " ".join(run.explanation)
    assert four.verdict in ("fits", "tight")


def test_the_ip_adapter_kolors_example_is_complete():
    path = EXTRA / "cubiq__ComfyUI_IPAdapter_plus__ipadapter_kolors.json"
    budget = estimate(read_workflow(json.loads(path.read_text())), Device.from_card(find_card("RTX 4090")))
    assert budget.complete, budget.incomplete
