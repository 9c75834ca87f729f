"""Weight formats of an LLM: bytes per tensor for 16-bit, FP8, AWQ/GPTQ 4-bit, bitsandbytes NF4 and
llama.cpp's GGUF mixes (Q8_0, Q6_K, Q5_K_M, Q4_K_M, ...), from the model's tensor list.

The tensor list is rebuilt from the config (``tensor_list``): the shapes a Llama-style decoder has
(embedding, per layer q/k/v/o + gated MLP or MoE experts + norms, output head). A GGUF "file type"
such as Q4_K_M is not one type: llama.cpp picks a type per tensor. ``gguf_tensor_type`` follows
llama_tensor_get_type_impl in llama.cpp src/llama-quant.cpp (ggml-org/llama.cpp, read at commit
007dbbf): the output head (and a tied embedding) in Q6_K, attn_v and ffn_down in Q6_K on the
layers ``use_more_bits`` picks for Q4_K_M/Q5_K_M, the 70B attn_v bump, the fallback when a row
length is not a multiple of the block. Block sizes are ggml's (gguf-py GGML_QUANT_SIZES).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterator

from ..errors import VramBudgetError

# ggml type -> (elements per block, bytes per block): ggml.h / gguf-py constants.GGML_QUANT_SIZES
GGML_BLOCK = {
    "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q8_0": (32, 34), "Q4_0": (32, 18), "Q4_1": (32, 20),
    "Q5_0": (32, 22), "Q5_1": (32, 24), "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144),
    "Q5_K": (256, 176), "Q6_K": (256, 210), "IQ4_NL": (32, 18), "IQ4_XS": (256, 136),
}

# llama.cpp file types (LLAMA_FTYPE_MOSTLY_*) -> default tensor type (llama_model_quantize_impl's switch)
GGUF_FTYPES = {
    "F16": "F16", "BF16": "BF16", "Q8_0": "Q8_0", "Q6_K": "Q6_K", "Q5_K_M": "Q5_K", "Q5_K_S": "Q5_K",
    "Q5_0": "Q5_0", "Q5_1": "Q5_1", "Q4_K_M": "Q4_K", "Q4_K_S": "Q4_K", "Q4_0": "Q4_0", "Q4_1": "Q4_1",
    "Q3_K_L": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_S": "Q3_K", "Q2_K": "Q2_K",
}
# tensor_type_fallback: a row length that is not a multiple of the block falls back to these
_FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}

# AWQ / GPTQ 4-bit as vLLM loads them: 4 bits per weight + per group of 128 input features one fp16
# scale and one 4-bit zero point per output (AutoAWQ GEMM layout: qweight/qzeros int32-packed, scales
# fp16), so 4 + 20/128 bits; embeddings, the output head and norms stay 16-bit.
AWQ_BITS = 4 + (16 + 4) / 128
# bitsandbytes NF4 with double quantization (QLoRA): 4 bits + one 8-bit absmax per 64 weights + one fp32
# absmax per 256 of those blocks (bitsandbytes functional.quantize_4bit, blocksize 64, compress_statistics).
NF4_BITS = 4 + 8 / 64 + 32 / (64 * 256)


@dataclass(frozen=True)
class Tensor:
    name: str  # llama.cpp naming: token_embd, output, blk.N.attn_q, ...
    category: str  # token_embd | output | attn_q | attn_k | attn_v | attn_output | ffn_gate | ffn_up | ffn_down | norm | other
    layer: int  # -1 outside the repeating layers
    shape: tuple[int, ...]  # PyTorch order: (out, in) for a linear; ne[0] (the row) = shape[-1]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def linear(self) -> bool:
        return self.category not in ("token_embd", "output", "norm", "other", "router")


def tensor_list(cfg) -> Iterator[Tensor]:
    """The text model's tensors as llama.cpp names them (convert_hf_to_gguf's mapping)."""
    h, hq, hkv = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    yield Tensor("token_embd.weight", "token_embd", -1, (cfg.vocab, h))
    for i in range(cfg.layers):
        p = f"blk.{i}."
        yield Tensor(p + "attn_q.weight", "attn_q", i, (hq, h))
        yield Tensor(p + "attn_k.weight", "attn_k", i, (hkv, h))
        yield Tensor(p + "attn_v.weight", "attn_v", i, (hkv, h))
        yield Tensor(p + "attn_output.weight", "attn_output", i, (h, hq))
        if cfg.experts:
            e, mi = cfg.experts, cfg.moe_intermediate
            yield Tensor(p + "ffn_gate_inp.weight", "router", i, (e, h))
            yield Tensor(p + "ffn_gate_exps.weight", "ffn_gate", i, (e, mi, h))
            yield Tensor(p + "ffn_up_exps.weight", "ffn_up", i, (e, mi, h))
            yield Tensor(p + "ffn_down_exps.weight", "ffn_down", i, (e, h, mi))
        else:
            yield Tensor(p + "ffn_gate.weight", "ffn_gate", i, (cfg.intermediate, h))
            yield Tensor(p + "ffn_up.weight", "ffn_up", i, (cfg.intermediate, h))
            yield Tensor(p + "ffn_down.weight", "ffn_down", i, (h, cfg.intermediate))
        for _ in range(2 + cfg.extra_norms):
            yield Tensor(p + "norm", "norm", i, (h,))
        if cfg.qk_norm:
            yield Tensor(p + "attn_q_norm.weight", "norm", i, (cfg.head_dim,))
            yield Tensor(p + "attn_k_norm.weight", "norm", i, (cfg.head_dim,))
        if cfg.qkv_bias:
            yield Tensor(p + "attn_qkv.bias", "norm", i, (hq + 2 * hkv,))
    yield Tensor("output_norm.weight", "norm", -1, (h,))
    if not cfg.tied_embeddings:
        yield Tensor("output.weight", "output", -1, (cfg.vocab, h))


def text_params(cfg) -> int:
    return sum(t.numel for t in tensor_list(cfg))


def ggml_bytes(ggml_type: str, numel: int) -> int:
    block, size = GGML_BLOCK[ggml_type]
    return -(-numel // block) * size


def _use_more_bits(i: int, n: int) -> bool:
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def gguf_tensor_type(t: Tensor, ftype: str, cfg) -> str:
    """The ggml type llama.cpp's quantizer gives tensor ``t`` in a file of type ``ftype``."""
    default = GGUF_FTYPES[ftype]
    if t.category in ("norm", "router") or len(t.shape) < 2:
        return "F32"  # 1-D tensors and expert routers are not quantized (tensor_allows_quantization)
    if default in ("F16", "BF16", "F32"):
        return default
    new = _mix_type(t, ftype, default, cfg)
    if t.shape[-1] % GGML_BLOCK[new][0]:
        new = _FALLBACK.get(new, "F16")
        if t.shape[-1] % GGML_BLOCK[new][0]:
            new = "F16"
    return new


def _mix_type(t: Tensor, ftype: str, new: str, cfg) -> str:
    n, i, cat = cfg.layers, t.layer, t.category
    if cat == "output" or (cat == "token_embd" and cfg.tied_embeddings):
        if t.shape[-1] % GGML_BLOCK[new][0]:
            return "Q8_0"
        return new if new == "Q8_0" else "Q6_K"
    if cat == "token_embd":
        return new
    if cat == "attn_v":
        gqa = cfg.heads // max(1, cfg.kv_heads)
        if ftype == "Q2_K":
            new = "Q4_K" if gqa >= 4 else "Q3_K"
        elif ftype == "Q3_K_M":
            new = "Q5_K" if i < 2 else "Q4_K"
        elif ftype == "Q3_K_L":
            new = "Q5_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i, n):
            new = "Q6_K"
        elif ftype == "Q4_K_S" and i < 4:
            new = "Q5_K"
        if _is_70b(cfg) and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"  # "8 heads sharing the same attn_v weights" (llama-quant.cpp, LLM_TYPE_70B)
        return "Q8_0" if cfg.experts == 8 else new
    if cat == "attn_k":
        return "Q8_0" if cfg.experts == 8 else new
    if cat == "ffn_down":
        if ftype == "Q2_K":
            return "Q3_K"
        if ftype == "Q3_K_M":
            return "Q5_K" if i < n // 16 else "Q4_K"
        if ftype == "Q3_K_L":
            return "Q5_K"
        if ftype in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i, n):
            return "Q6_K"
        if ftype == "Q4_K_S" and i < n // 8:
            return "Q5_K"
        return new
    if cat == "attn_output":
        if cfg.experts == 8:
            return "Q5_K" if ftype in ("Q2_K", "Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M") else new
        return {"Q2_K": "Q3_K", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K"}.get(ftype, new)
    return new


def _is_70b(cfg) -> bool:
    """llama.cpp's LLM_TYPE_70B: the llama architecture with 80 layers and grouped KV heads."""
    return cfg.model_type in ("llama", "mistral") and cfg.layers == 80 and cfg.kv_heads < cfg.heads


def tensor_bytes(t: Tensor, fmt: str, cfg) -> int:
    """Bytes of one tensor in weight format ``fmt`` (see WEIGHT_FORMATS)."""
    n = t.numel
    if fmt in GGUF_FTYPES:
        return ggml_bytes(gguf_tensor_type(t, fmt, cfg), n)
    if fmt == "16bit":
        return 2 * n
    if fmt == "8bit":  # every weight in 1 byte: the guide's FP8 / 8-bit column
        return n
    if not t.linear:  # fp8-linear / awq / nf4 keep embeddings, the head and norms in 16 bit
        return 2 * n
    if fmt == "fp8-linear":
        return n
    if fmt == "awq":
        return math.ceil(n * AWQ_BITS / 8)
    if fmt == "nf4":
        return math.ceil(n * NF4_BITS / 8)
    raise VramBudgetError(f"unknown weight format {fmt!r}")


WEIGHT_FORMATS = {
    "16bit": "16-bit (BF16/FP16): 2 bytes per parameter",
    "8bit": "8-bit (FP8/INT8 everywhere): 1 byte per parameter",
    "fp8-linear": "FP8 linear layers, 16-bit embeddings/head (vLLM --quantization fp8, FP8 checkpoints)",
    "awq": "AWQ/GPTQ 4-bit, group 128 (4.16 bits), 16-bit embeddings/head",
    "nf4": "bitsandbytes NF4 + double quantization (4.13 bits), 16-bit embeddings/head (QLoRA)",
    "checkpoint": "as config.json's quantization_config says: quantised linears, its ignore list kept 16-bit",
    **{k: f"GGUF {k} (llama.cpp per-tensor mix)" for k in GGUF_FTYPES},
}


# ---------------------------------------------------------------------------------------------
# Partly quantised checkpoints: config.json's quantization_config says which modules stay 16-bit
# (compressed-tensors "ignore", transformers/vLLM "modules_to_not_convert", vLLM Fp8Config
# "ignored_layers", ModelOpt "exclude_modules", bitsandbytes "llm_int8_skip_modules"). An FP8 checkpoint
# that keeps attention in BF16 (ignore: ["lm_head", "re:.*self_attn.*"]) is not "every linear FP8".
_HF_MODULE = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
              "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
              "ffn_down": "mlp.down_proj", "router": "mlp.gate"}
_IGNORE_KEYS = ("ignore", "modules_to_not_convert", "ignored_layers", "exclude_modules", "llm_int8_skip_modules")


def hf_module_name(t: Tensor, experts: int = 0) -> str:
    """The transformers module a tensor belongs to ('model.layers.3.self_attn.q_proj', 'lm_head')."""
    if t.category == "token_embd":
        return "model.embed_tokens"
    if t.category == "output":
        return "lm_head"
    if t.layer < 0:
        return "model.norm"
    mod = _HF_MODULE.get(t.category, "norm")
    if experts and t.category in ("ffn_gate", "ffn_up", "ffn_down"):
        mod = mod.replace("mlp.", "mlp.experts.0.")
    return f"model.layers.{t.layer}.{mod}"


@dataclass(frozen=True)
class CheckpointQuant:
    """What a quantization_config says: the method, bits per quantised weight and the modules kept 16-bit."""

    method: str
    bits: float  # bits per quantised weight, scales and zero points included
    ignore: tuple[str, ...] = ()

    def ignored(self, module: str) -> bool:
        for pat in self.ignore:
            if pat.startswith("re:"):
                try:
                    if re.match(pat[3:], module):
                        return True
                except re.error:
                    continue
            elif module == pat or pat in module.split(".") or module.endswith("." + pat) or pat in module:
                return True
        return False


def checkpoint_quant(qc) -> CheckpointQuant | None:
    """A quantization_config -> CheckpointQuant, or None when there is none / it is not understood."""
    if not isinstance(qc, dict) or not qc.get("quant_method"):
        return None
    method = str(qc["quant_method"]).lower()
    ignore: list[str] = []
    for key in _IGNORE_KEYS:
        v = qc.get(key)
        if isinstance(v, list):
            ignore += [str(x) for x in v if isinstance(x, str)]
    bits: float | None = None
    if method in ("fp8", "fbgemm_fp8", "modelopt") or "fp8" in str(qc.get("quant_algo", "")).lower():
        bits = 8.0
    elif method == "compressed-tensors":
        for group in (qc.get("config_groups") or {}).values():
            w = (group or {}).get("weights") or {}
            nb, gs = w.get("num_bits"), w.get("group_size")
            if isinstance(nb, int) and nb > 0:
                extra = (16 + (0 if w.get("symmetric", True) else nb)) / gs if isinstance(gs, int) and gs > 0 else 0
                bits = nb + extra
                break
    elif method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        nb, gs = qc.get("bits", qc.get("w_bit", 4)), qc.get("group_size", qc.get("q_group_size", 128))
        if isinstance(nb, int) and isinstance(gs, int) and gs > 0:
            bits = nb + (16 + nb) / gs
    elif method == "bitsandbytes":
        bits = NF4_BITS if qc.get("load_in_4bit") else 8.0
    if bits is None:
        return None
    return CheckpointQuant(method, bits, tuple(ignore))


def checkpoint_tensor_bytes(t: Tensor, q: CheckpointQuant, experts: int = 0) -> int:
    """Bytes of one tensor in a quantised checkpoint: linears quantised unless ignored; embeddings,
    norms and routers 16-bit; the output head quantised only when not ignored (most ignore lm_head)."""
    n = t.numel
    if t.category in ("token_embd", "norm", "other", "router") or len(t.shape) < 2:
        return 2 * n
    if q.ignored(hf_module_name(t, experts)):
        return 2 * n
    return math.ceil(n * q.bits / 8)
