"""Weights and KV cache of an LLM: bytes per format and engine, per token and per sequence."""
from __future__ import annotations

from typing import Callable

from ..errors import VramBudgetError
from ..models.llm_quant import GGUF_FTYPES, WEIGHT_FORMATS, checkpoint_tensor_bytes, tensor_bytes, tensor_list
from .model import KV_DTYPES, Layout, LlmConfig, _KV_ALIASES, _count
from .engines import ENGINES


# ---------------------------------------------------------------------------------------------
# Weights
GENERIC_WEIGHTS = {"16bit": "16bit", "bf16": "16bit", "fp16": "16bit", "f16": "16bit", "8bit": "8bit", "fp8": "fp8",
                   "int8": "8bit", "4bit": "4bit", "int4": "4bit", "awq": "awq", "gptq": "awq", "nf4": "nf4",
                   "file": "file", "stored": "file"}


def normalize_weights(weights: str) -> str:
    w = str(weights).strip()
    if w.upper() in GGUF_FTYPES:
        return w.upper()
    key = GENERIC_WEIGHTS.get(w.lower())
    if key is None:
        raise VramBudgetError(f"--weights {weights!r}: use 16bit, fp8, 8bit, 4bit, awq, nf4, file or a GGUF type "
                              f"({', '.join(GGUF_FTYPES)})")
    return key


def weight_format(weights: str, engine: str | None = None, cfg: LlmConfig | None = None) -> str:
    """The concrete format for a requested precision on an engine (the guide's sizes without one:
    16 bit = 2 B/param, FP8/8-bit = 1 B/param, 4 bit = GGUF Q4_K_M as 4-bit files are published)."""
    w = normalize_weights(weights)
    if w == "file":
        if cfg is not None and cfg.stored is None and cfg.quant is not None:
            return "checkpoint"  # config.json only: its quantization_config says which modules are quantised
        if cfg is None or cfg.stored is None:
            raise VramBudgetError("--weights file: only for a model read from files (a folder or a .gguf)")
        return "file"
    if cfg is not None and cfg.stored is None and cfg.quant is not None and engine in (None, "vllm") and \
            (cfg.quant.bits >= 7.5 if w in ("fp8", "8bit") else cfg.quant.bits < 6 if w in ("4bit", "awq", "nf4")
             else False):
        return "checkpoint"  # a named partly quantised release at its own precision: its modules kept 16-bit count
    eng = ENGINES[engine] if engine else None
    if eng is None:
        return {"fp8": "8bit", "4bit": "Q4_K_M"}.get(w, w)
    fmt = eng.weights.get(w, w)
    if fmt is None or (fmt not in WEIGHT_FORMATS and fmt != "file"):
        raise VramBudgetError(f"{eng.name} cannot run {weights} weights: {eng.weights_hint}")
    return fmt


def weights_layout(cfg: LlmConfig, weights: str = "16bit", engine: str | None = None) -> Layout:
    fmt = weight_format(weights, engine, cfg)
    if fmt == "file":
        return cfg.stored  # type: ignore[return-value]
    if fmt == "checkpoint":
        q = cfg.quant
        return _layout(cfg, fmt, lambda t: checkpoint_tensor_bytes(t, q, cfg.experts), cfg.vision_params * 2)
    if fmt in ("16bit", "8bit"):  # every parameter (vision tower included) at 2 / 1 byte
        per = 2 if fmt == "16bit" else 1
        return _layout(cfg, fmt, lambda t: t.numel * per, cfg.vision_params * per)
    return _layout(cfg, fmt, lambda t: tensor_bytes(t, fmt, cfg), cfg.vision_params * 2)


def _layout(cfg: LlmConfig, fmt: str, size: Callable, vision: int) -> Layout:
    layers = [0] * cfg.layers
    exps = [0] * cfg.layers
    embed = output = other = 0
    for t in tensor_list(cfg):
        b = size(t)
        if t.layer >= 0:
            layers[t.layer] += b
            if cfg.experts and t.category in ("ffn_gate", "ffn_up", "ffn_down"):
                exps[t.layer] += b
        elif t.category == "token_embd":
            embed += b
        elif t.category == "output":
            output += b
        else:
            other += b
    ex = tuple(exps) if cfg.experts else ()
    if cfg.tied_embeddings:  # one tensor; llama.cpp's GPU head is a copy of it
        return Layout(fmt, embed, tuple(layers), embed, other + vision, tied=True, experts=ex)
    return Layout(fmt, embed, tuple(layers), output, other + vision, experts=ex)


def weights_bytes(cfg: LlmConfig, weights: str = "16bit", engine: str | None = None) -> int:
    """Bytes of the weights in a format: '16bit' | 'fp8' | '8bit' | '4bit' | 'awq' | 'nf4' | a GGUF
    type ('Q4_K_M') | 'file' (as stored). Without an engine, the guide's sizes (see weight_format)."""
    return weights_layout(cfg, weights, engine).total


# ---------------------------------------------------------------------------------------------
# KV cache
def normalize_kv(kv_dtype: str) -> str:
    k = str(kv_dtype).strip().lower()
    k = _KV_ALIASES.get(k, k)
    if k not in KV_DTYPES:
        raise VramBudgetError(f"--kv-dtype {kv_dtype!r}: use fp16, fp8, q8_0 or q4_0")
    return k


def kv_bytes_per_token(cfg: LlmConfig, kv_dtype: str = "fp16") -> int:
    """One token of every layer's K and V: layers × KV heads × head dim × 2 × bytes."""
    return cfg.layers * _kv_row(cfg, kv_dtype)


def _kv_row(cfg: LlmConfig, kv_dtype: str, kv_heads: int | None = None) -> int:
    """K and V of one layer for one token."""
    nbytes, per = KV_DTYPES[normalize_kv(kv_dtype)]
    elements = (kv_heads or cfg.kv_heads) * cfg.head_dim
    return 2 * -(-elements // per) * nbytes


def kv_cache_bytes(cfg: LlmConfig, tokens: int, batch: int = 1, kv_dtype: str = "fp16",
                   windowed: bool = False, kv_heads: int | None = None) -> int:
    """layers × KV heads × head dim × 2 × bytes × tokens × batch. ``windowed``: sliding-window layers
    keep only their window (vLLM, llama.cpp and Ollama do; ComfyUI allocates every layer in full)."""
    tokens, batch = _count("tokens", tokens), _count("batch", batch)
    row = _kv_row(cfg, kv_dtype, kv_heads)
    swl = cfg.sliding_layers if windowed and cfg.sliding_window else 0
    per_seq = (cfg.layers - swl) * tokens + swl * min(tokens, cfg.sliding_window)
    return row * per_seq * batch


def textgen_kv_cache_bytes(cfg: LlmConfig, prompt_tokens: int, max_length: int, batch: int = 1,
                           dtype_bytes: int = 2) -> int:
    """The KV cache ComfyUI's TextGenerate preallocates (ComfyUI 0.18.2 comfy/text_encoders/llama.py:832-836):
    per layer two torch.empty([batch, num_key_value_heads, prompt + max_length, head_dim]) at the execution
    dtype, bf16 where should_use_bf16 (2 bytes) else float32 (4 bytes) (llama.py:822-826). Every layer
    in full, sliding-window layers included."""
    tokens = _count("prompt tokens", prompt_tokens, 0) + _count("max_length", max_length)
    return cfg.layers * 2 * _count("batch", batch) * cfg.kv_heads * tokens * cfg.head_dim * int(dtype_bytes)
