"""Text encode and TextGenerate: the encoders' weights, their activations at the prompt's tokens (images
read by a vision-language encoder add theirs) and TextGenerate's KV cache."""
from __future__ import annotations

import math

from .. import llm
from ..physics import memory
from ..errors import VramBudgetError
from ..model_info import TEXT_ENCODER, ModelInfo
from ..units import fmt_gib
from ..machine.device import Device
from ..workload import Stage
from .base import Item, StageBudget, unpriced, finish, overhead_items, weights_items


def build(stage: Stage, device: Device, info_for) -> StageBudget:
    items, infos, notes = weights_items(stage, device, info_for, ("text_encoder",))
    if not infos:
        return finish(stage, "Text encode", items + overhead_items(device), notes + ["no text encoder found"])
    # TextGenerate: the prompt runs through the model once (prefill), then one token at a time against
    # the KV cache (llama.py generate, logits of the last position only), so the prompt sets the activations
    tokens = stage.text_tokens - (stage.generate_tokens or 0) if stage.text_tokens else stage.text_tokens
    if not stage.generate_tokens and any(r.clip_type == "ltxv" for r in stage.models) and \
            any(i.family == "gemma3" for i in infos):
        # LTX-2's Gemma 3 12B tokenizer pads every prompt to 1024 tokens (text_encoders/lt.py:75, min_length)
        tokens = max(tokens or 0, 1024)
    image_tokens = sum(vl_image_tokens(i.family, w, h) for i in infos[:1] for w, h in stage.images)
    if image_tokens and tokens is not None:
        tokens += image_tokens
        notes.append(f"{len(stage.images)} image(s) read by the text encoder: {image_tokens:,} image tokens")
    working = max(
        (memory.text_encoder_working(i.family, i.arch, tokens) for i in infos if i.kind == TEXT_ENCODER),
        key=lambda w: w.bytes, default=None,
    )
    names = " + ".join(dict.fromkeys(i.label for i in infos))
    gap = ""
    if working is not None and any(it.bytes for it in items):
        items.append(Item("activations", working.bytes, "working", working.assumption))
    elif working is None and any(it.bytes for it in items):
        # weights on the card but no model a text encoder's activations are known for (a checkpoint whose text
        # part this estimate cannot name): never a silent 0
        gap = unpriced(notes, f"{names} is not a text encoder this estimate knows (its activations are not priced)")
    if stage.generate_tokens:
        kv = _kv_cache_item(stage, infos, device, notes)
        if kv is not None and any(it.bytes for it in items):
            items.append(kv)
        return finish(stage, f"Text generate: {names}", items + overhead_items(device), notes, unpriced=gap)
    return finish(stage, f"Text encode: {names}", items + overhead_items(device), notes, unpriced=gap)


def vl_image_tokens(family: str, width: int, height: int) -> int:
    """Tokens one image adds to a vision-language text encoder's prompt.

    Qwen2.5-VL / Qwen3-VL: the image is resized to multiples of 28 px (patch 14 × merge 2) within
    3136..12,845,056 pixels, one token per 28 × 28 (comfy/text_encoders/qwen_vl.py:9-45, 0.18.2).
    Gemma 3: 256 soft tokens per image (its SigLIP tower pools 896² to 16 × 16). Others read no image."""
    f = family.lower()
    if "gemma" in f:
        return 256
    if "qwen" in f and "vl" in f:
        factor = 28
        h, w = max(factor, round(height / factor) * factor), max(factor, round(width / factor) * factor)
        if h * w > 12_845_056:
            beta = math.sqrt(height * width / 12_845_056)
            h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
        elif h * w < 3136:
            beta = math.sqrt(3136 / (height * width))
            h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
        return (h // factor) * (w // factor)
    return 0


def _kv_cache_item(stage: Stage, infos: list[ModelInfo], device: Device, notes: list[str]) -> Item | None:
    """TextGenerate's KV cache, preallocated for prompt + max_length tokens in every layer
    (comfy/text_encoders/llama.py:832-836, ComfyUI 0.18.2), at bf16 where the GPU has it, else fp32."""
    model = next((i for i in infos if i.kind == TEXT_ENCODER and i.arch.get("layers")), None)
    if model is None:
        notes.append("text generation: the LLM's layers / KV heads are unknown, so its KV cache is not counted")
        return None
    try:
        cfg = llm.config_from_arch(model.label, model.arch, model.params)
    except VramBudgetError as exc:
        notes.append(f"text generation: KV cache not counted ({exc})")
        return None
    prompt = max(0, (stage.text_tokens or 0) - stage.generate_tokens)
    prompt += sum(vl_image_tokens(model.family, w, h) for w, h in stage.images)
    dtype_bytes = 2 if device.bf16 else 4
    kv = llm.textgen_kv_cache_bytes(cfg, prompt, stage.generate_tokens, dtype_bytes=dtype_bytes)
    per_token = kv // max(1, prompt + stage.generate_tokens)
    notes.append(f"smaller max_length shrinks the KV cache by {fmt_gib(per_token * 256)} per 256 tokens; "
                 "an fp8 text encoder or the CPU (device = cpu) frees its weights")
    return Item(f"KV cache ({prompt} prompt + {stage.generate_tokens} generated tokens)", kv, "working",
                f"{cfg.layers} layers × K and V × {cfg.kv_heads} KV heads × {cfg.head_dim} head dim × "
                f"{prompt + stage.generate_tokens} tokens × {dtype_bytes} bytes ({'bf16' if dtype_bytes == 2 else 'fp32'}); "
                "comfy/text_encoders/llama.py:832-836 allocates it up front")
