"""TextGenerate and TrainLoraNode workflows estimated by a real ComfyUI (the panel's estimate route):
the KV cache and the training terms itemised, priced from the model files' headers (sparse files)."""
from __future__ import annotations

import copy

import pytest

from helpers_models import spec_flux, spec_llm, write_safetensors
from test_textgen_train import TEXTGEN, TRAIN

pytestmark = pytest.mark.comfy


@pytest.fixture(scope="module")
def files(comfy_server):
    models = comfy_server.base / "models"
    write_safetensors(models / "text_encoders" / "qwen3_4b_test.safetensors", spec_llm("qwen3", scale=1), sparse=True)
    write_safetensors(models / "diffusion_models" / "flux_train_test.safetensors", spec_flux("BF16"), sparse=True)
    return models


def _stage(server, prompt, kind):
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": prompt})
    assert status == 200, data
    budget = data["budget"]
    return budget, next(s for s in budget["stages"] if s["kind"] == kind)


def test_textgenerate_workflow_has_its_kv_cache_itemised(comfy_server, files):
    prompt = copy.deepcopy(TEXTGEN)
    prompt["1"]["inputs"]["clip_name"] = "qwen3_4b_test.safetensors"
    budget, stage = _stage(comfy_server, prompt, "text_encode")
    assert stage["title"].startswith("Text generate")
    kv = next(i for i in stage["items"] if i["label"].startswith("KV cache"))
    assert kv["bytes"] > 0 and "llama.py:832-836" in kv["assumption"]
    weights = next(i for i in stage["items"] if i["category"] == "weights")
    assert weights["bytes"] > 7 * 10**9  # Qwen3 4B from the file's header, at 16 bit
    assert budget["complete"] is True


def test_train_lora_workflow_has_the_training_terms_itemised(comfy_server, files):
    prompt = copy.deepcopy(TRAIN)
    prompt["1"]["inputs"]["unet_name"] = "flux_train_test.safetensors"
    prompt["5"]["inputs"]["gradient_checkpointing"] = False  # the formula (ComfyUI's in-place adds need a checkpoint)
    budget, stage = _stage(comfy_server, prompt, "train")
    labels = [i["label"] for i in stage["items"]]
    for part in ("LoRA adapter", "gradients", "AdamW states", "activations"):
        assert any(lbl.startswith(part) for lbl in labels), labels
    adapter = next(i for i in stage["items"] if i["label"].startswith("LoRA adapter"))
    assert "exact from the file" in adapter["assumption"]
    assert any("leak, not the budget" in n for n in budget["notes"])


def test_train_lora_activations_are_traced_live_at_checkpoint_depth_1(comfy_server, files):
    import json
    import time

    prompt = copy.deepcopy(TRAIN)
    prompt["1"]["inputs"]["unet_name"] = "flux_train_test.safetensors"
    prompt["2"]["inputs"].update(width=512, height=512)
    deadline, acts = time.time() + 300, None
    while time.time() < deadline:
        _, stage = _stage(comfy_server, prompt, "train")
        acts = next(i for i in stage["items"] if i["label"].startswith("activations"))
        if "traced live" in acts["assumption"]:
            break
        time.sleep(3)
    assert "traced live" in acts["assumption"], json.dumps(stage)[:2000]
    assert acts["bytes"] > 2 * 10**9
