"""TextGenerate (KV cache) and TrainLoraNode (adapter, gradients, optimizer states, activations) in
the workflow budget: the terms itemised, each from ComfyUI's own allocation rules (llm.py, training.py)."""
from __future__ import annotations

import copy

import pytest

from helpers_models import spec_flux, write_safetensors

from vram_budget.nodes.estimator.plan import planning as B
from vram_budget.nodes.estimator.llm import training as T
from vram_budget.nodes.estimator.files import inspect_file
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.units import GiB

TEXTGEN = {
    "1": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen_3_4b.safetensors", "type": "lumina2"}},
    "2": {"class_type": "TextGenerate", "inputs": {"clip": ["1", 0], "prompt": "a lighthouse at dusk, waves",
                                                   "max_length": 2048, "sampling_mode": "on"}},
    "3": {"class_type": "PreviewAny", "inputs": {"source": ["2", 0]}},
}

TRAIN = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "3": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": "flux"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["3", 0], "text": "a photo of sks dog"}},
    "5": {"class_type": "TrainLoraNode", "inputs": {
        "model": ["1", 0], "latents": ["2", 0], "positive": ["4", 0], "batch_size": 1, "grad_accumulation_steps": 1,
        "steps": 100, "learning_rate": 0.0005, "rank": 16, "optimizer": "AdamW", "loss_function": "MSE", "seed": 0,
        "training_dtype": "bf16", "lora_dtype": "bf16", "algorithm": "LoRA", "gradient_checkpointing": True,
        "checkpoint_depth": 1, "offloading": False, "existing_lora": "[None]", "bucket_mode": False,
        "bypass_mode": False}},
    "6": {"class_type": "SaveLoRA", "inputs": {"lora": ["5", 0], "prefix": "loras/x"}},
}


def estimate(prompt, card="RTX 4090", resolver=None):
    return B.estimate(read_workflow(prompt), B.Device.from_card(find_card(card)), resolver)


def items(stage_budget) -> dict:
    return {it.label.split(" (")[0]: it for it in stage_budget.items}


def with_inputs(prompt, node, **changes):
    p = copy.deepcopy(prompt)
    p[node]["inputs"].update(changes)
    return p


# -------------------------------------------------------------------------------- TextGenerate
def test_textgenerate_kv_cache_is_itemised_exactly_as_comfyui_allocates_it():
    b = estimate(TEXTGEN)
    sb = b.stages[0]
    assert sb.title.startswith("Text generate: Qwen3 4B")
    kv = next(it for it in sb.items if it.label.startswith("KV cache"))
    prompt_tokens = sb.stage.text_tokens - 2048
    # Qwen3 4B: 36 layers, 8 KV heads, head dim 128 (config.json); K and V; bf16
    assert kv.bytes == 36 * 2 * 8 * 128 * (prompt_tokens + 2048) * 2
    assert "llama.py:832-836" in kv.assumption
    assert any("smaller max_length" in n for n in b.notes)


def test_textgenerate_kv_cache_scales_with_max_length_and_is_fp32_without_bf16():
    short = estimate(with_inputs(TEXTGEN, "2", max_length=256)).stages[0]
    long = estimate(TEXTGEN).stages[0]
    kv = lambda sb: next(it.bytes for it in sb.items if it.label.startswith("KV cache"))  # noqa: E731
    assert kv(long) > 5 * kv(short)
    turing = estimate(TEXTGEN, card="RTX 2080 Ti").stages[0]  # no bf16: llama.py:822-826 runs fp32
    assert kv(turing) == 2 * kv(long)


# ------------------------------------------------------------------------------ TrainLoraNode
def test_train_lora_itemises_weights_adapter_gradients_optimizer_and_activations():
    b = estimate(TRAIN)
    sb = next(s for s in b.stages if s.stage.kind == "train")
    it = items(sb)
    assert {"Flux.1 dev", "LoRA adapter", "gradients", "AdamW states", "activations"} <= set(it)
    adapter = it["LoRA adapter"].bytes
    assert it["gradients"].bytes == adapter and it["AdamW states"].bytes == 2 * adapter  # bf16 states, no fp32 copy
    assert "typical" in it["LoRA adapter"].assumption  # the file is not here
    assert sb.weights_bytes > 20 * 10**9
    assert b.runs[1].outcome == "oom"  # full load (no offloading) of a 16-bit Flux + activations on 24 GB
    assert any("leak, not the budget" in n for n in b.notes)
    assert any("checkpoint_depth 2" in n for n in b.notes)


def test_train_terms_follow_the_nodes_widgets():
    base = items(next(s for s in estimate(TRAIN).stages if s.stage.kind == "train"))
    per_block = items(next(s for s in estimate(with_inputs(TRAIN, "5", checkpoint_depth=2)).stages
                           if s.stage.kind == "train"))
    assert per_block["activations"].bytes < base["activations"].bytes / 5
    sgd = items(next(s for s in estimate(with_inputs(TRAIN, "5", optimizer="SGD")).stages if s.stage.kind == "train"))
    assert "SGD states" not in sgd
    fp32 = items(next(s for s in estimate(with_inputs(TRAIN, "5", lora_dtype="fp32")).stages
                      if s.stage.kind == "train"))
    assert fp32["LoRA adapter"].bytes == 2 * base["LoRA adapter"].bytes
    rank32 = items(next(s for s in estimate(with_inputs(TRAIN, "5", rank=32)).stages if s.stage.kind == "train"))
    assert rank32["LoRA adapter"].bytes == 2 * base["LoRA adapter"].bytes
    b4 = estimate(with_inputs(TRAIN, "2", batch_size=4))
    assert any("grad_accumulation_steps 4 (same effective batch 4)" in n for n in b4.notes) is False  # batch is the node's
    b4 = estimate(with_inputs(TRAIN, "5", batch_size=4))
    assert any("grad_accumulation_steps 4 (same effective batch 4)" in n for n in b4.notes)


def test_train_with_offloading_streams_instead_of_failing():
    fp8 = with_inputs(TRAIN, "1", weight_dtype="fp8_e4m3fn")
    per_block = with_inputs(fp8, "5", checkpoint_depth=2, offloading=True)
    run = estimate(per_block).runs[1]
    assert run.outcome in ("fits", "runs_slower")


def test_adapter_parameters_are_exact_when_the_model_file_is_here(tmp_path):
    path = write_safetensors(tmp_path / "flux1-dev.safetensors", spec_flux("BF16"), sparse=True)
    resolver = lambda folder, name: str(tmp_path / name) if name == "flux1-dev.safetensors" else None  # noqa: E731
    sb = next(s for s in estimate(TRAIN, resolver=resolver).stages if s.stage.kind == "train")
    adapter = items(sb)["LoRA adapter"]
    inv = inspect_file(str(tmp_path / "flux1-dev.safetensors"))
    expected = T.comfy_trainable_params(((t.name, t.shape) for t in inv.tensors.values()), 16, "LoRA")
    assert adapter.bytes == expected * 2 and "exact from the file" in adapter.assumption
    assert path is not None


@pytest.mark.parametrize("algorithm", ["LoHa", "LoKr"])
def test_other_algorithms_need_the_file(algorithm):
    b = estimate(with_inputs(TRAIN, "5", algorithm=algorithm))
    sb = next(s for s in b.stages if s.stage.kind == "train")
    assert any("no typical size" in n for n in sb.notes)
    assert b.verdict == "unknown"  # never a confident answer without the adapter terms
    assert any("Train LoRA" in i for i in b.incomplete)
    assert sb.peak_bytes < 60 * GiB


def test_an_image_attached_to_a_vl_encoder_adds_its_tokens_to_the_prompt_and_the_kv_cache():
    from vram_budget.nodes.estimator.stages.text import vl_image_tokens

    # Qwen2.5-VL: one token per 28 × 28 px after rounding to multiples of 28 (qwen_vl.py)
    assert vl_image_tokens("qwen2.5-vl-7b", 1024, 1024) == (1036 // 28) ** 2 == 37 * 37
    assert vl_image_tokens("gemma", 1024, 768) == 256 and vl_image_tokens("t5-xxl", 1024, 1024) == 0
    p = copy.deepcopy(TEXTGEN)
    p["1"]["inputs"]["clip_name"] = "qwen_2.5_vl_7b.safetensors"
    plain = estimate(p).stages[0]
    p["4"] = {"class_type": "EmptyImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1, "color": 0}}
    p["2"]["inputs"]["image"] = ["4", 0]
    with_image = estimate(p).stages[0]
    kv = lambda sb: next(it for it in sb.items if it.label.startswith("KV cache"))  # noqa: E731
    per_token = kv(plain).bytes // (plain.stage.text_tokens)
    assert kv(with_image).bytes - kv(plain).bytes == 37 * 37 * per_token
