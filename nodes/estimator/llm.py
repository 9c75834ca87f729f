"""LLM memory: weights + KV cache + a working margin (FACTS.md "LLM"), for serving engines and for
ComfyUI's TextGenerate.

A model is an :class:`LlmConfig`, read from
(a) a Hugging Face folder: config.json + the *.safetensors headers (parameters and bytes exact, no
    tensor data read; files.py);
(b) a GGUF file: ``<arch>.block_count``, ``.attention.head_count(_kv)``, ``.context_length`` ... from
    its metadata and every tensor's type and size (files.py's GGUF reader);
(c) a known name (llm_models.py: published config.json values).

KV cache = layers × KV heads × head dim × 2 (K and V) × bytes per element × tokens × sequences:
Llama 3.1 8B in 16 bit: 32 × 8 × 128 × 2 × 2 = 131,072 B = 128 KiB per token (FACTS.md). ComfyUI's
TextGenerate preallocates exactly this for prompt + max_length tokens (``textgen_kv_cache_bytes``).

Serving (``serve_plan``) applies each engine's rules (ENGINES, a table: a new engine is one entry):
vLLM takes ``--gpu-memory-utilization`` (0.92 from vLLM 0.21, 0.9 before: ``vllm_rules``) of the card,
subtracts the weights and its start-up profile (``vllm_reserve``: a forward of max_num_batched_tokens,
the sampler warm-up, non-torch memory, CUDA graphs) and fills the rest with KV blocks, which it logs as
"GPU KV cache size: N tokens"; it splits heads over ``--tensor-parallel-size`` cards, or layers over
``--pipeline-parallel-size`` (mixed) cards (``serve_pipeline``: the VLLM_PP_LAYER_PARTITION to set). llama.cpp puts
``-ngl`` layers on the GPU (``--n-cpu-moe`` / ``--tensor-split``) and needs flash attention for a quantized
V cache; Ollama sizes ``num_ctx`` by VRAM, splits layers by llm/memory.go's estimate (``ollama_estimate``)
and reads ``OLLAMA_KV_CACHE_TYPE`` only with ``OLLAMA_FLASH_ATTENTION=1``. The answer names the flags.
Accuracy against the engines' logs: docs/accuracy-llm.md.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Mapping

from . import llm_models
from .errors import ModelFileError, VramBudgetError
from .gpus import CARDS, RENTAL_LINEUP, Card
from .llm_quant import (GGML_BLOCK, GGUF_FTYPES, WEIGHT_FORMATS, CheckpointQuant, checkpoint_quant,
                         checkpoint_tensor_bytes, tensor_bytes, tensor_list, text_params)
from .units import GB, GiB, fmt_gib
from .files import inspect_file
from .serial import JsonFields

# FACTS.md: "weights + KV cache + 1–2 GB working margin" (activations, CUDA context, compute buffers).
MARGIN_LOW, MARGIN_HIGH = 1 * GB, 2 * GB

# KV cache element sizes: 16-bit 2 B; fp8 1 B; llama.cpp q8_0 / q4_0 blocks of 32 (34 / 18 bytes, ggml.h)
KV_DTYPES = {"fp16": (2, 1), "bf16": (2, 1), "fp32": (4, 1), "fp8": (1, 1),
             "q8_0": GGML_BLOCK["Q8_0"][::-1], "q4_0": GGML_BLOCK["Q4_0"][::-1]}  # (bytes, per elements)
_KV_ALIASES = {"f16": "fp16", "16bit": "fp16", "auto": "fp16", "float16": "fp16", "bfloat16": "bf16",
               "f32": "fp32", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "q8": "q8_0", "q4": "q4_0"}


@dataclass(frozen=True)
class Layout:
    """Weight bytes by where they sit: llama.cpp keeps the input embedding on the CPU and offloads
    the output head first, then the last layers (-ngl); per-layer bytes decide how many fit."""

    fmt: str
    embed: int
    layers: tuple[int, ...]
    output: int  # the output head; for tied embeddings the copy llama.cpp puts on the GPU (TENSOR_DUPLICATED)
    other: int  # norms outside layers, vision tower, anything else
    tied: bool = False  # the output head is the embedding: stored once
    experts: tuple[int, ...] = ()  # MoE: each layer's routed-expert bytes (ffn_*_exps), part of ``layers``
    cpu: int = 0  # bytes moved off the GPU(s) by llama.cpp --cpu-moe / --n-cpu-moe (not in ``layers``)

    @property
    def total(self) -> int:
        return self.embed + sum(self.layers) + self.other + (0 if self.tied else self.output) + self.cpu

    def cpu_moe(self, n: int) -> "Layout":
        """llama.cpp --n-cpu-moe N: the expert tensors of the first N layers stay in system memory
        (common/arg.cpp --n-cpu-moe: a buffer override blk.<i>.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU for
        i < N, common/common.h llm_ffn_exps_block_regex; --cpu-moe: every layer)."""
        if not self.experts or n <= 0:
            return self
        n = min(n, len(self.layers))
        moved = sum(self.experts[:n])
        layers = tuple(b - (self.experts[i] if i < n else 0) for i, b in enumerate(self.layers))
        experts = tuple(0 if i < n else e for i, e in enumerate(self.experts))
        return replace(self, layers=layers, experts=experts, cpu=self.cpu + moved)


@dataclass(frozen=True)
class LlmConfig:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int
    params: int  # every parameter (text + vision); exact from the headers when read from files
    tied_embeddings: bool = False
    experts: int = 0  # MoE: routed experts per layer (0 = dense)
    experts_per_token: int = 0
    moe_intermediate: int = 0
    sliding_window: int = 0  # tokens a sliding-window layer attends to
    sliding_layers: int = 0  # how many layers use it (Gemma 3: 5 of every 6)
    max_context: int = 0
    model_type: str = ""
    qkv_bias: bool = False
    qk_norm: bool = False
    extra_norms: int = 0  # norm vectors per layer beyond the two (Gemma: post-attention and post-MLP)
    dtype: str = "bfloat16"
    source: str = ""
    stored: Layout | None = None  # the bytes the file(s) hold, by place (HF folder / GGUF)
    stored_format: str = ""  # "safetensors BF16", "GGUF Q4_K_M", "safetensors awq", ...
    notes: tuple[str, ...] = ()
    quant: CheckpointQuant | None = None  # config.json's quantization_config (method, bits, modules kept 16-bit)
    module_dtypes: tuple[tuple[str, str, int], ...] = ()  # (module kind, dtype, bytes) from the headers

    @property
    def vision_params(self) -> int:
        return max(0, self.params - text_params(self))


# ---------------------------------------------------------------------------------------------
# Reading a model
def load_model(spec: str) -> LlmConfig:
    """A Hugging Face folder, a config.json, a .gguf file or a known name -> LlmConfig."""
    if not isinstance(spec, str) or not spec.strip():
        raise VramBudgetError("MODEL '': give a Hugging Face folder, a .gguf file or a known model name")
    if os.path.isdir(spec):
        return read_hf_folder(spec)
    if os.path.exists(spec):
        if spec.lower().endswith(".gguf"):
            return read_gguf(spec)
        if os.path.basename(spec) == "config.json":
            return read_hf_folder(os.path.dirname(os.path.abspath(spec)))
        if spec.lower().endswith((".safetensors", ".sft")):
            return read_hf_folder(os.path.dirname(os.path.abspath(spec)))
        raise ModelFileError(spec, "not an LLM: give a Hugging Face folder (config.json + *.safetensors) or a .gguf")
    key = llm_models.lookup(spec)
    if key is None:
        if os.sep in spec or spec.endswith((".gguf", ".json", ".safetensors")):
            raise ModelFileError(spec, "no such file or folder")
        raise VramBudgetError(f"unknown model {spec!r}: give a Hugging Face folder (config.json + *.safetensors), "
                              f"a .gguf file, or a known name: {llm_models.known_names()}")
    return known_config(key)


@lru_cache(maxsize=None)
def known_config(key: str) -> LlmConfig:
    entry = llm_models.KNOWN[key]
    cfg = config_from_hf(entry["config"], entry["label"], f"published config.json, {llm_models.HF.format(entry['repo'])}")
    return replace(cfg, params=text_params(cfg) + entry.get("vision_params", 0))


def _text_config(d: Mapping) -> dict:
    """config.json's text fields: top level, or text_config/llm_config for VLMs (with the model's defaults)."""
    inner = d.get("text_config") or d.get("llm_config") or {}
    merged = {**d, **inner} if isinstance(inner, Mapping) else dict(d)
    mt = str(merged.get("model_type", ""))
    if mt.startswith("gemma3"):  # Gemma3TextConfig defaults (transformers configuration_gemma3.py)
        for k, v in dict(vocab_size=262208, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                         sliding_window=4096, sliding_window_pattern=6, max_position_embeddings=131072).items():
            merged.setdefault(k, v)
    return merged


# What a config.json or a GGUF may say (issue 37: an infinite context or 10^18 layers must be a clear error in
# bounded time, not a traceback or a hang). The largest released models are well inside: 126 layers, 16,384
# hidden, 128 heads, 256k vocab, 10M context, 384 experts.
LLM_BOUNDS = {"num_hidden_layers": 1024, "hidden_size": 1 << 17, "num_attention_heads": 4096, "vocab_size": 10_000_000,
              "num_key_value_heads": 4096, "head_dim": 4096, "intermediate_size": 1 << 21,
              "max_position_embeddings": 1 << 28, "num_experts": 65536, "num_experts_per_tok": 65536,
              "moe_intermediate_size": 1 << 21, "sliding_window": 1 << 28}


def _bounded_int(where: str, key: str, v, required: bool = False, minimum: int = 1):
    """A config number within LLM_BOUNDS, None when absent and optional; else ModelFileError naming it."""
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= LLM_BOUNDS.get(key, 1 << 40):
        shown = repr(v)[:40]
        raise ModelFileError(where, f"config.json has no usable {key} ({shown}): a whole number from {minimum} to "
                                    f"{LLM_BOUNDS.get(key, 1 << 40):,}")
    return v


def config_from_hf(d: Mapping, name: str, source: str, where: str = "config.json") -> LlmConfig:
    """An LlmConfig from config.json's keys (parameters counted from the shapes they imply)."""
    t = _text_config(d)

    def need(key: str) -> int:
        return _bounded_int(where, key, t.get(key), required=True)

    layers, hidden, heads = need("num_hidden_layers"), need("hidden_size"), need("num_attention_heads")
    for key in ("num_key_value_heads", "head_dim", "intermediate_size", "max_position_embeddings", "num_experts",
                "num_local_experts", "num_experts_per_tok", "moe_intermediate_size"):
        if t.get(key) not in (None, 0):
            _bounded_int(where, key if key in LLM_BOUNDS else "num_experts", t.get(key))
    kv = t.get("num_key_value_heads") or heads
    if kv > heads or heads % kv:
        raise ModelFileError(where, f"config.json: num_key_value_heads {kv} does not divide num_attention_heads {heads}")
    head_dim = t.get("head_dim") or hidden // heads
    mt = str(t.get("model_type", ""))
    experts = int(t.get("num_experts") or t.get("num_local_experts") or 0)
    sw, swl = _sliding(t, layers)
    cfg = LlmConfig(
        name=name, layers=layers, hidden=hidden, heads=heads, kv_heads=int(kv), head_dim=int(head_dim),
        vocab=need("vocab_size"), intermediate=int(t.get("intermediate_size") or 4 * hidden), params=0,
        tied_embeddings=bool(t.get("tie_word_embeddings", True)), experts=experts,
        experts_per_token=int(t.get("num_experts_per_tok") or 0) if experts else 0,
        moe_intermediate=int(t.get("moe_intermediate_size") or t.get("intermediate_size") or 0) if experts else 0,
        sliding_window=sw, sliding_layers=swl, max_context=int(t.get("max_position_embeddings") or 0),
        model_type=mt, qkv_bias=bool(t.get("attention_bias")) or mt.startswith("qwen2"),
        qk_norm=mt.startswith(("qwen3", "gemma3")), extra_norms=2 if mt.startswith("gemma") else 0,
        dtype=str(t.get("torch_dtype") or t.get("dtype") or "bfloat16"), source=source,
        quant=checkpoint_quant(d.get("quantization_config") or t.get("quantization_config")),
    )
    return replace(cfg, params=text_params(cfg))


def _sliding(t: Mapping, layers: int) -> tuple[int, int]:
    """(window, sliding layers): layer_types, Gemma's pattern (5 local : 1 global), or all layers."""
    window = t.get("sliding_window")
    if not isinstance(window, int) or window <= 0 or t.get("use_sliding_window") is False:
        return 0, 0
    types = t.get("layer_types")
    if isinstance(types, list) and types:
        return window, sum(1 for x in types if x == "sliding_attention")
    mt = str(t.get("model_type", ""))
    if mt.startswith("gemma3"):
        pattern = int(t.get("sliding_window_pattern") or 6)
        return window, layers - layers // pattern
    if mt.startswith("gemma2"):
        return window, (layers + 1) // 2
    return (window, layers) if mt.startswith("mistral") else (0, 0)


_LAYER_KEY = re.compile(r"(?:^|\.)(?:model|language_model)\.layers\.(\d+)\.")


def read_hf_folder(path: str) -> LlmConfig:
    """config.json + every *.safetensors header of a Hugging Face model folder (no tensor data read)."""
    cfg_path = os.path.join(path, "config.json")
    if not os.path.isfile(cfg_path):
        raise ModelFileError(path, "no config.json (a Hugging Face model folder has config.json next to its "
                                   "*.safetensors)")
    try:
        with open(cfg_path, encoding="utf-8") as fh:
            d = json.load(fh)
    except (OSError, ValueError, RecursionError) as exc:
        raise ModelFileError(cfg_path, f"not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(d, dict):
        raise ModelFileError(cfg_path, "not a JSON object")
    name = os.path.basename(os.path.abspath(path))
    cfg = config_from_hf(d, name, "config.json + safetensors headers", where=cfg_path)
    shards = sorted(f for f in os.listdir(path) if f.endswith((".safetensors", ".sft")))
    shards = _indexed(path, shards)
    if not shards:
        return replace(cfg, source="config.json (no *.safetensors: parameters counted from the config)")
    embed = output = other = params = 0
    layers = [0] * cfg.layers
    by_dtype: dict[str, int] = {}
    kinds: dict[tuple[str, str], int] = {}
    for shard in shards:
        inv = inspect_file(os.path.join(path, shard))
        params += inv.param_count
        for k, b in inv.bytes_by_dtype.items():
            by_dtype[k] = by_dtype.get(k, 0) + b
        for t in inv.tensors.values():
            key = (_module_kind(t.name), str(getattr(t, "dtype", "?")))
            kinds[key] = kinds.get(key, 0) + t.nbytes
            m = _LAYER_KEY.search(t.name)
            if m and int(m.group(1)) < cfg.layers:
                layers[int(m.group(1))] += t.nbytes
            elif t.name.endswith("embed_tokens.weight"):
                embed += t.nbytes
            elif t.name.endswith("lm_head.weight"):
                output += t.nbytes
            else:
                other += t.nbytes
    quant = d.get("quantization_config") or {}
    method = quant.get("quant_method") if isinstance(quant, Mapping) else None
    main = max(by_dtype, key=by_dtype.get) if by_dtype else "?"
    if method:  # packed int4 counts 8 weights per I32 element: keep the config's parameter count
        params = cfg.params
    tied = output == 0
    stored = Layout("file", embed, tuple(layers), embed if tied else output, other, tied)
    dtypes = tuple(sorted(((k, d, b) for (k, d), b in kinds.items()), key=lambda x: -x[2]))
    return replace(cfg, params=params, stored=stored, stored_format=f"safetensors {method or main}",
                   module_dtypes=dtypes)


def _module_kind(name: str) -> str:
    """attention / mlp / embedding / head / norm / other, from a transformers tensor name."""
    n = name.lower()
    if "embed_tokens" in n:
        return "embedding"
    if "lm_head" in n:
        return "head"
    if "self_attn" in n or ".attn." in n or "attention" in n:
        return "attention"
    if ".mlp." in n or "experts" in n or "feed_forward" in n:
        return "mlp"
    if "norm" in n:
        return "norm"
    return "other"


def module_dtype_summary(cfg: LlmConfig) -> str:
    """'attention BF16, mlp F8_E4M3, ...': the dtype holding most bytes of each module kind (headers)."""
    best: dict[str, tuple[str, int]] = {}
    for kind, dtype, b in cfg.module_dtypes:
        if dtype.upper() in ("F32",) and kind not in ("norm",):
            continue  # scales
        if kind not in best or b > best[kind][1]:
            best[kind] = (dtype, b)
    return ", ".join(f"{k} {d}" for k, (d, _) in best.items() if k in ("attention", "mlp", "embedding", "head"))


def _indexed(path: str, shards: list[str]) -> list[str]:
    """The shards model.safetensors.index.json names (Mistral folders also hold consolidated.safetensors,
    the same weights in another layout: counted once); all *.safetensors when there is no index."""
    idx = os.path.join(path, "model.safetensors.index.json")
    if not os.path.isfile(idx):
        # no index, but shard names say how many there are ("model-00001-of-00004.safetensors"): all must be here
        parts = [re.search(r"-(\d{1,5})-of-(\d{1,5})\.(?:safetensors|sft)$", f) for f in shards]
        totals = {int(m.group(2)) for m in parts if m}
        for total in totals:
            have = {int(m.group(1)) for m in parts if m and int(m.group(2)) == total}
            missing = [n for n in range(1, min(total, 100_000) + 1) if n not in have]
            if missing:
                raise ModelFileError(path, f"{total - len(missing)} of {total} shards present (shard {missing[0]} of "
                                           f"{total} is missing): the weights are incomplete")
        return shards
    try:
        with open(idx, encoding="utf-8") as fh:
            wanted = set((json.load(fh).get("weight_map") or {}).values())
    except (OSError, ValueError, AttributeError, RecursionError):
        raise ModelFileError(idx, "not a valid safetensors index") from None
    missing = sorted(str(w) for w in wanted - set(shards))
    if missing:
        raise ModelFileError(os.path.join(path, missing[0]), f"listed in model.safetensors.index.json but missing "
                                                             f"({len(missing)} of {len(wanted)} shards)")
    return sorted(str(w) for w in wanted)


def read_gguf(path: str) -> LlmConfig:
    """An LlmConfig from a llama.cpp GGUF: hyper-parameters from its metadata, bytes from its tensors."""
    inv = inspect_file(path)
    meta = inv.metadata
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise ModelFileError(path, "GGUF without general.architecture: not a llama.cpp model")

    def num(key: str, default=None):
        v = meta.get(f"{arch}.{key}", default)
        if isinstance(v, list):  # per-layer arrays (e.g. head_count_kv): the largest
            v = max((x for x in v if isinstance(x, int)), default=None)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            if default is not None:
                return default
            raise ModelFileError(path, f"GGUF metadata has no usable {arch}.{key} ({v!r})")
        return v

    layers, hidden, heads = num("block_count"), num("embedding_length"), num("attention.head_count")
    kv_heads = num("attention.head_count_kv", heads)
    for key, value in (("num_hidden_layers", layers), ("hidden_size", hidden), ("num_attention_heads", heads),
                       ("num_key_value_heads", kv_heads), ("max_position_embeddings", num("context_length", 0) or 1)):
        if not 1 <= value <= LLM_BOUNDS[key]:
            raise ModelFileError(path, f"GGUF metadata: {key.replace('num_', '').replace('_', ' ')} {value:,} is not "
                                       f"a model's (1 to {LLM_BOUNDS[key]:,})")
    emb = inv.tensors.get("token_embd.weight")
    vocab = emb.shape[0] if emb is not None else len(meta.get("tokenizer.ggml.tokens", ())) or 0
    if not vocab:
        raise ModelFileError(path, "GGUF has no token_embd.weight")
    window = num("attention.sliding_window", 0)
    swl = layers - layers // 6 if (window and arch.startswith("gemma3")) else 0
    cfg = LlmConfig(
        name=str(meta.get("general.name") or os.path.basename(path)), layers=layers, hidden=hidden,
        heads=heads, kv_heads=kv_heads,
        head_dim=num("attention.key_length", hidden // max(1, heads)), vocab=vocab,
        intermediate=num("feed_forward_length", _rows(inv.tensors, "blk.0.ffn_up.weight") or 4 * hidden),
        params=inv.param_count,
        tied_embeddings="output.weight" not in inv.tensors, experts=num("expert_count", 0),
        experts_per_token=num("expert_used_count", 0), moe_intermediate=num("expert_feed_forward_length", 0),
        sliding_window=window if swl else 0, sliding_layers=swl, max_context=num("context_length", 0),
        model_type=arch, qk_norm=any(k.endswith("attn_q_norm.weight") for k in inv.tensors),
        qkv_bias="blk.0.attn_q.bias" in inv.tensors, source="GGUF metadata + tensor headers",
    )
    stored = _gguf_layout(inv.tensors, layers)
    return replace(cfg, stored=stored, stored_format=f"GGUF {_gguf_ftype(meta, inv)}")


def _rows(tensors: Mapping, name: str) -> int:
    t = tensors.get(name)
    return t.shape[0] if t is not None and t.shape else 0


def _gguf_layout(tensors: Mapping, layers: int) -> Layout:
    per = [0] * layers
    exps = [0] * layers
    embed = output = other = 0
    for name, t in tensors.items():
        m = re.match(r"blk\.(\d+)\.", name)
        if m and int(m.group(1)) < layers:
            per[int(m.group(1))] += t.nbytes
            if re.search(r"\.ffn_(up|down|gate|gate_up)_(ch|)exps", name):
                exps[int(m.group(1))] += t.nbytes
        elif name == "token_embd.weight":
            embed += t.nbytes
        elif name == "output.weight":
            output += t.nbytes
        else:
            other += t.nbytes
    tied = "output.weight" not in tensors
    return Layout("file", embed, tuple(per), embed if tied else output, other, tied,
                  tuple(exps) if any(exps) else ())


def _gguf_ftype(meta: Mapping, inv) -> str:
    ft = meta.get("general.file_type")
    try:
        import gguf  # noqa: PLC0415

        return gguf.LlamaFileType(int(ft)).name.replace("MOSTLY_", "").replace("ALL_", "")
    except (ImportError, TypeError, ValueError):
        return inv.quantization or inv.main_dtype or "?"


def config_from_arch(name: str, arch: Mapping[str, object], params: int = 0) -> LlmConfig:
    """An LlmConfig from families.py's text-encoder arch dict (hidden_size, layers, heads, kv_heads,
    head_dim, ffn_dim, vocab), for ComfyUI text encoders read from one safetensors/GGUF file. Where a
    known model has the same width and depth, its KV heads and head dim win (the shapes of one file
    cannot tell Gemma 3 12B's 8 KV heads from Gemma 2's 4)."""
    hidden, layers = int(arch.get("hidden_size") or 0), int(arch.get("layers") or 0)
    if hidden <= 0 or layers <= 0:
        raise VramBudgetError(f"{name}: no hidden size / layer count to size a KV cache")
    for key in llm_models.KNOWN:
        k = known_config(key)
        if (k.hidden, k.layers) == (hidden, layers):
            return replace(k, name=name, params=params or k.params, source=f"{k.name} config (matched {hidden}×{layers})")
    heads = int(arch.get("heads") or max(1, hidden // 128))
    cfg = LlmConfig(name=name, layers=layers, hidden=hidden, heads=heads, kv_heads=int(arch.get("kv_heads") or heads),
                    head_dim=int(arch.get("head_dim") or hidden // heads), vocab=int(arch.get("vocab") or 0),
                    intermediate=int(arch.get("ffn_dim") or 4 * hidden), params=0, source="model file shapes")
    return replace(cfg, params=params or text_params(cfg))


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


def _count(what: str, n, lo: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < lo:
        raise VramBudgetError(f"{what} {n!r}: give a whole number >= {lo}")
    return n


# ---------------------------------------------------------------------------------------------
# Engines
@dataclass(frozen=True)
class Engine:
    name: str
    kv_dtypes: Mapping[str, str]  # our KV names -> the engine's own value
    weights: Mapping[str, str | None]  # requested precision -> weight format (None: not supported)
    weights_hint: str
    split: str  # "tensor": heads and weights split over the cards; "layers": whole layers per card
    memory_share: float | None = None  # vLLM --gpu-memory-utilization default
    max_share: float = 1.0  # the highest share we suggest (the rest holds the CUDA context)
    windowed_kv: bool = True
    quantized_v_needs_fa: bool = False
    offloads_layers: bool = False
    block_tokens: int = 1  # KV allocated in blocks of this many tokens per sequence
    flags: Callable[["ServePlan"], tuple[tuple[str, ...], Mapping[str, str]]] | None = None


def _vllm_flags(p: "ServePlan"):
    f = [f"--max-model-len {p.context}", f"--max-num-seqs {p.users}"]
    f.append(f"--gpu-memory-utilization {p.utilization:.2f}")
    r = p.vllm_reserve or {}
    if r.get("enforce_eager"):
        f.append("--enforce-eager")
    if r.get("max_num_batched_tokens") and r.get("chunked_prefill") and r["max_num_batched_tokens"] not in (2048, 8192):
        f.append(f"--max-num-batched-tokens {r['max_num_batched_tokens']}")
    env = {}
    if p.pipeline:  # layers split over mixed cards: vLLM reads the split from the environment (get_pp_indices)
        f.append(f"--pipeline-parallel-size {p.gpus}")
        env["VLLM_PP_LAYER_PARTITION"] = p.pipeline["vllm_pp_layer_partition"]
    elif p.gpus > 1:
        f.append(f"--tensor-parallel-size {p.gpus}")
    if p.kv_dtype == "fp8":
        f.append("--kv-cache-dtype fp8")
    if p.weight_format == "fp8-linear":
        f.append("--quantization fp8 (or an FP8 checkpoint)")
    elif p.weight_format == "awq":
        f.append("an AWQ/GPTQ 4-bit checkpoint (--quantization awq_marlin / gptq_marlin)")
    return tuple(f), env


def _llamacpp_flags(p: "ServePlan"):
    f = [f"-c {p.context * p.users}"]
    if p.users > 1:
        f.append(f"-np {p.users}")
    f.append(f"-ngl {p.gpu_layers if p.gpu_layers < p.layers + 1 else 99}")
    if p.kv_dtype != "fp16":
        f += [f"--cache-type-k {p.kv_dtype}", f"--cache-type-v {p.kv_dtype}", "-fa on"]
    if p.gpus > 1:
        f.append("--split-mode layer")
    if p.tensor_split:
        f.append("--tensor-split " + ",".join(f"{v:g}" for v in p.tensor_split))
    if p.n_cpu_moe:
        f.append("--cpu-moe" if p.n_cpu_moe >= p.layers else f"--n-cpu-moe {p.n_cpu_moe}")
    return tuple(f), {}


def _ollama_flags(p: "ServePlan"):
    env = {"OLLAMA_CONTEXT_LENGTH": str(p.context)}
    extra = (f"PARAMETER num_gpu {p.gpu_layers} (layers on the GPU)",) if p.verdict == "offload" else ()
    if p.users > 1:
        env["OLLAMA_NUM_PARALLEL"] = str(p.users)
    if p.kv_dtype != "fp16":
        env["OLLAMA_KV_CACHE_TYPE"] = p.kv_dtype
        env["OLLAMA_FLASH_ATTENTION"] = "1"
    return (f"PARAMETER num_ctx {p.context} (Modelfile; or options.num_ctx per request)",) + extra, env


_GGUF_WEIGHTS = {"16bit": "F16", "8bit": "Q8_0", "4bit": "Q4_K_M", "fp8": None, "awq": None, "nf4": None,
                 **{k: k for k in GGUF_FTYPES}, "file": "file"}
ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        "vLLM", {"fp16": "auto", "bf16": "auto", "fp8": "fp8"},
        {"16bit": "16bit", "8bit": "fp8-linear", "fp8": "fp8-linear", "4bit": "awq", "awq": "awq", "nf4": "nf4",
         "file": "file", **{k: k for k in GGUF_FTYPES}},
        "vLLM serves 16-bit, FP8, AWQ/GPTQ 4-bit (and GGUF experimentally)",
        split="tensor", memory_share=0.92, max_share=0.95, block_tokens=16, flags=_vllm_flags),
    "llama.cpp": Engine(
        "llama.cpp", {"fp16": "f16", "bf16": "bf16", "q8_0": "q8_0", "q4_0": "q4_0"}, _GGUF_WEIGHTS,
        "llama.cpp runs GGUF files: 16bit (F16), 8bit (Q8_0), 4bit (Q4_K_M) or a GGUF type",
        split="layers", quantized_v_needs_fa=True, offloads_layers=True, flags=_llamacpp_flags),
    "ollama": Engine(
        "Ollama", {"fp16": "f16", "q8_0": "q8_0", "q4_0": "q4_0"}, _GGUF_WEIGHTS,
        "Ollama runs GGUF models: 16bit (F16), 8bit (Q8_0), 4bit (Q4_K_M) or a GGUF type",
        split="layers", quantized_v_needs_fa=True, offloads_layers=True, flags=_ollama_flags),
}
_ENGINE_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp", "llama-server": "llama.cpp"}


def engine_key(name: str) -> str:
    k = str(name).strip().lower()
    k = _ENGINE_ALIASES.get(k, k)
    if k not in ENGINES:
        raise VramBudgetError(f"--engine {name!r}: use {', '.join(ENGINES)}")
    return k


# Ollama's eras (read in ollama's git history): up to v0.12.10 llm/memory.go estimateGPULayers splits the layers
# (the estimator below; its "msg=offload ... layers.offload=N" line is what users post); v0.12.11-v0.24 Ollama's
# createLayout places them from the backend's measured sizes (f560bd0); from v0.30.0 Ollama runs llama-server
# only (9db4bdb, ollama#16031) with -c = num_ctx x parallel and no -ngl unless num_gpu is set
# (llm/llama_server.go:375-410 at v0.32.15), so llama.cpp's --fit places the layers (pinned LLAMA_CPP_VERSION).
OLLAMA_ASSUMED_VERSION = "0.32.15"  # the newest stable release read (August 2026)
OLLAMA_LLAMA_SERVER_FROM = (0, 30, 0)
OLLAMA_LLAMACPP_BUILD = "b10488"  # LLAMA_CPP_VERSION at v0.32.15
OLLAMA_MEMORY_GO_UNTIL = (0, 12, 10)


def ollama_release(version: str | None = None) -> tuple[int, int, int]:
    """(major, minor, patch) of an Ollama version ('0.32.15', 'v0.12.10', 'ollama version is 0.9.2')."""
    v = str(version or OLLAMA_ASSUMED_VERSION).strip().lower()
    m = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", v)
    if not m:
        raise VramBudgetError(f"--ollama-version {version!r}: give a version such as 0.32.15 (ollama --version)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def ollama_default_context(total_vram_bytes: int, version: str | None = None) -> int:
    """Ollama's num_ctx when none is set: 2048 before v0.6.7, 4096 to v0.15.4 (envconfig/config.go
    OLLAMA_CONTEXT_LENGTH), then by the cards' total memory: 4k below 23 GiB, 32k from 23 GiB, 256k from 47 GiB
    (server/routes.go:2051-2056 at v0.32.15, "slightly lower thresholds (47/23 GiB vs. 48/24 GiB)"); never
    above the model's own context (the caller caps it)."""
    v = ollama_release(version)
    if v < (0, 6, 7):
        return 2048
    if v < (0, 15, 5):
        return 4096
    return 4096 if total_vram_bytes < 23 * GiB else 32768 if total_vram_bytes < 47 * GiB else 262144


def _driver_total(card: Card) -> int:
    """The card's memory as the driver reports it (what Ollama's tiers read), not the usable part."""
    return int(card.nominal_gb * GiB) if card.nominal_gb else card.total_bytes


# ---------------------------------------------------------------------------------------------
# vLLM's memory, as its start-up profile computes it
# vLLM sizes the KV pool as  gpu_memory_utilization × total  −  (weights + the peak of one profiling
# forward + non-torch memory [+ CUDA graphs])  (vllm/v1/worker/gpu_worker.py determine_available_memory;
# V0: vllm/worker/worker.py, "the rest of the memory reserved for KV Cache"), then logs
# "GPU KV cache size: N tokens" = blocks × block_size and "Maximum concurrency for L tokens per request:
# X.XXx" = N / max_model_len (vllm/v1/core/kv_cache_utils.py, PR #13596). The profiling forward runs
# max_num_batched_tokens tokens: --max-model-len without chunked prefill (V0 up to 32k), the chunked-
# prefill budget otherwise (EngineArgs.get_batch_defaults: 2048 tokens / 256 sequences for `vllm serve`,
# 8192 / 1024 on cards of >= 70 GiB other than the A100).
VLLM_ASSUMED_VERSION = "0.21"
# Bytes per token of the profiling forward: the MLP's gate_up output (2 × intermediate), its activation
# (1 × intermediate) and three hidden-size buffers (residual, normed input, output), 2 bytes each.
# Checked on Llama 3.1 8B: 20k -> 29k tokens adds 0.92 GiB to the profile's peak (vllm#10517); this gives 0.93.
# V0's profile samples its max_num_seqs dummy sequences with top_p 0.99, top_k vocab - 1 (worker/model_runner.py
# profile_run), on the driver worker only (rank 0: logits are gathered there, tensor_model_parallel_gather), after
# the forward has freed its temporaries. Per sequence × vocabulary entry, alive inside torch.sort of
# model_executor/layers/sampler.py _apply_top_k_top_p: the bf16 logits (2), their fp32 copy (4), sort's values (4)
# and int64 indices (8), its iota input (8) and CUB's alternate key/value buffers (12) = 38 B. Checked: Qwen2.5's
# 152,064 entries × 256 sequences = 1.38 GiB where vllm#13882 logged "activation peak memory takes 1.42GiB" and
# vllm#13061's TP-2 pool was 1.22 GiB smaller on rank 0 than on rank 1 (81,536 tokens vs 8.69 GiB).
VLLM_V0_SAMPLER_BYTES = 38
VLLM_NON_TORCH = int(0.35 * GiB)  # CUDA context, cuBLAS workspace (vllm#10517: non_torch_memory=0.35GiB)
VLLM_NON_TORCH_PER_RANK = int(0.10 * GiB)  # NCCL + custom all-reduce buffers per extra tensor-parallel rank
VLLM_GRAPH_PER_LAYER = 16 * 1024 * 1024  # CUDA graphs: "Estimated CUDA graph memory: 0.52 GiB" for Qwen3-8B's
# 36 layers (51 piecewise + 35 full sizes, LMCache#3430)


@dataclass(frozen=True)
class VllmRules:
    version: str
    utilization: float  # default --gpu-memory-utilization (vllm/config/cache.py)
    v1: bool  # V1 engine (>= 0.8): chunked prefill always on
    graphs_profiled: bool  # CUDA-graph memory counted in the budget (>= 0.21: "CUDA graph memory profiling is
    # enabled (default since v0.21.0)", gpu_worker.py's start-up line)
    big_card_defaults: bool  # >= 0.9: 8192 tokens / 1024 sequences on >= 70 GiB cards (not A100)
    v07: bool = True  # >= 0.7: V0's chunked-prefill budget 2048 (512 before)


# llama.cpp: from llama.cpp#16653 (merged mid-December 2025, about build b7400) llama-server and llama-cli fit what
# the user did not set to free device memory (common/common.h: n_ctx = 0 "context the model was trained with",
# fit_params = true, fit_params_target = 1 GiB per device, fit_params_min_ctx = 4096): the context first, down to
# 4096, then layers to the CPU. Before, -c defaulted to 4096 and -ngl to none (the user set it).
LLAMACPP_ASSUMED_VERSION = "b7539"  # the newest build seen fitting (llama.cpp#18376, 2025-12-25)
LLAMACPP_FIT_FROM = 7400
LLAMACPP_FIT_MIN_CTX = 4096
LLAMACPP_FIT_TARGET = 1 * GiB


def llamacpp_build(version: str | None = None) -> int:
    """The build number of a llama.cpp version ('b7539', '7539', 'version: 7539 (83b3b1c27)')."""
    v = str(version or LLAMACPP_ASSUMED_VERSION).strip().lower()
    m = re.search(r"b?(\d{3,5})", v)
    if not m:
        raise VramBudgetError(f"--llamacpp-version {version!r}: give a build such as b7539 (llama-server --version)")
    return int(m.group(1))


def vllm_rules(version: str | None = None) -> VllmRules:
    v = str(version or VLLM_ASSUMED_VERSION).strip().lstrip("v")
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?(?:\S*)", v)
    if not m:
        raise VramBudgetError(f"--vllm-version {version!r}: give a version such as 0.21 or 0.6.4")
    t = (int(m.group(1)), int(m.group(2)))
    return VllmRules(v, 0.92 if t >= (0, 21) else 0.9, t >= (0, 8), t >= (0, 21), t >= (0, 9), t >= (0, 7))


@dataclass(frozen=True)
class VllmReserve(JsonFields):
    """What vLLM's profile takes per card before the KV cache: its non-KV reserve."""

    max_num_batched_tokens: int
    max_num_seqs: int
    chunked_prefill: bool
    activation_bytes: int  # peak of the profiling forward over max_num_batched_tokens tokens
    sampler_bytes: int  # logits and sampler temporaries for max_num_seqs sequences
    non_torch_bytes: int  # CUDA context, NCCL / all-reduce buffers (grows with tensor parallelism)
    cuda_graph_bytes: int  # 0 with --enforce-eager or before vLLM profiled graphs
    enforce_eager: bool = False

    @property
    def total(self) -> int:
        return self.activation_bytes + self.sampler_bytes + self.non_torch_bytes + self.cuda_graph_bytes


def _big_card(card: Card | None) -> bool:
    return card is not None and card.nominal_gb >= 70 and "a100" not in card.name.lower()


def vllm_reserve(cfg: LlmConfig, context: int, gpus: int = 1, card: Card | None = None,
                 rules: VllmRules | None = None, max_num_batched_tokens: int | None = None,
                 max_num_seqs: int | None = None, enforce_eager: bool = False,
                 chunked_prefill: bool | None = None) -> VllmReserve:
    rules = rules or vllm_rules()
    big = rules.big_card_defaults and _big_card(card)
    chunked = chunked_prefill if chunked_prefill is not None else (rules.v1 or context > 32768)
    # V0's chunked-prefill budget: 512 up to 0.6 (vllm#10517: the 35k profile peaked 0.06 GiB over the weights),
    # the usage-context default of 2048 for `vllm serve` from 0.7
    default_budget = (8192 if big else 2048) if rules.v1 else 2048 if rules.v07 else 512
    budget = _count("--max-num-batched-tokens", max_num_batched_tokens) if max_num_batched_tokens is not None \
        else default_budget
    seqs = _count("--max-num-seqs", max_num_seqs) if max_num_seqs is not None else (1024 if big else 256)
    tokens = budget if chunked else max(context, budget, 2048)
    inter = cfg.experts_per_token * cfg.moe_intermediate if cfg.experts else cfg.intermediate
    activation = tokens * 2 * (3 * -(-inter // gpus) + 3 * cfg.hidden)
    # Both engines sample max_num_seqs dummy rows with top_p < 1 and top_k = vocab - 1 after the forward has freed
    # its temporaries, so the whole vocabulary goes through apply_top_k_top_p's torch.sort (38 B an entry, above):
    # V0 on rank 0 (worker/model_runner.py profile_run), V1 on every rank (v1/worker/gpu_model_runner.py
    # _dummy_sampler_run: top_p 0.9, top_k logits.size(1) - 1). The peak is the larger of the two (vllm#10517: the
    # 8B peak at 20k tokens is the forward's), so sampler_bytes is what the sampler adds over the forward. Checked
    # on V1: llm-d-benchmark's H100 logs (vLLM 0.11-0.14, 1,024 sequences) log 4.76 GiB for Llama 3.1 8B's
    # 128,256 entries and 5.56 GiB for Qwen3's 151,936 (this gives 4.65 and 5.51). V0's executor takes the fewest
    # blocks of all workers (rank 0's)
    rows = min(seqs, tokens)
    sampler = max(0, rows * cfg.vocab * VLLM_V0_SAMPLER_BYTES - activation)
    non_torch = VLLM_NON_TORCH + VLLM_NON_TORCH_PER_RANK * (gpus - 1)
    graphs = 0 if enforce_eager or not rules.graphs_profiled else cfg.layers * VLLM_GRAPH_PER_LAYER
    return VllmReserve(tokens, seqs, chunked, activation, sampler, non_torch, graphs, bool(enforce_eager))


# ---------------------------------------------------------------------------------------------
# Ollama's layer split (llm/memory.go estimateGPULayers, ollama v0.12.10 = 4372d0b, the estimator that
# logs "offload to cuda layers.offload=N memory.required..."; from v0.12.11 the split comes from the
# backend's own allocation, f560bd0) and its graph sizes (fs/ggml/ggml.go GraphSize, VisionGraphSize).
OLLAMA_MINIMUM_MEMORY = 457 * 1024 * 1024  # ml/device.go:352 MinimumMemory (CUDA and ROCm)
OLLAMA_BATCH = 512  # num_batch default (api/types.go DefaultOptions)


@dataclass(frozen=True)
class OllamaEstimate(JsonFields):
    layers_model: int  # blocks + 1 (the output layer)
    layers_offload: int
    layers_split: tuple[int, ...]
    kv_bytes: int
    graph_full_bytes: int
    graph_partial_bytes: int
    weights_repeating: int
    weights_nonrepeating: int
    projector_weights: int
    projector_graph: int
    allocations: tuple[int, ...]  # per GPU (memory.required.allocations)
    overflow: int = 0  # what stays in system memory

    @property
    def required_partial(self) -> int:
        return sum(self.allocations)

    @property
    def required_full(self) -> int:  # memory.required.full
        return sum(self.allocations) + self.overflow


def _kv_bytes_per_element(kv: str) -> float:
    return {"q8_0": 1.0, "q4_0": 0.5, "fp32": 4.0}.get(kv, 2.0)  # fs/ggml/ggml.go kvCacheBytesPerElement


def ollama_graph(cfg: LlmConfig, num_ctx: int, users: int = 1, kv: str = "fp16",
                 batch: int = OLLAMA_BATCH) -> tuple[list[int], int, int]:
    """(KV bytes per layer, partial-offload graph, full-offload graph): fs/ggml/ggml.go GraphSize (v0.12.10,
    lines 550-760): per-architecture formulas for llama/mistral, qwen2 and gemma3; otherwise the graph is
    GQA × total KV / 6 (llm/memory.go:244)."""
    context = num_ctx * users
    batch = min(num_ctx, batch)
    e, heads, hkv, hd, vocab = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.vocab
    bpe = _kv_bytes_per_element(kv)
    kv_layers = [int(context * 2 * hd * hkv * bpe)] * cfg.layers  # ggml.go:588
    mt = cfg.model_type.lower()
    full = partial = 0
    if mt.startswith(("llama", "mistral")) and not cfg.experts:  # ggml.go:614
        full = max(4 * batch * (1 + 4 * e + context * (1 + heads)), 4 * batch * (e + vocab))
        partial = 4 * batch * e + max(
            4 * batch * (1 + e + max(context, e)) + e * e * 9 // 16 + 4 * context * (batch * heads + hd * hkv),
            4 * batch * (e + vocab) + e * vocab * 105 // 128)
    elif mt.startswith("gemma3") or mt.startswith("gemma2") or mt == "gemma":  # ggml.go:676
        full = max(4 * batch * (e + vocab), 4 * batch * (2 + context + context * heads + 2 * e + 2 * hd * heads))
        partial = max(4 * e * batch + e * vocab * 105 // 128 + 4 * vocab * batch,
                      4 * batch * (2 * e + 1 + 2 * hd * heads + context + context * heads)
                      + 4 * hd * context * 8 + e * hd * heads * 9 // 16)
        if mt.startswith("gemma3") and cfg.sliding_window:
            window = users * cfg.sliding_window + batch
            kv_layers = [k if (i + 1) % 6 == 0 else int(window * 2 * hd * hkv * bpe) for i, k in enumerate(kv_layers)]
    elif mt == "qwen2":  # ggml.go:717
        full = max(4 * batch * (e + vocab), 4 * batch * (1 + 2 * e + context + context * heads))
        partial = max(4 * batch * (e + vocab) + e * vocab * 105 // 128,
                      4 * (batch * (1 + 2 * e + context * (1 + heads)) + e * (1 + context)))
    if partial == 0:
        partial = (heads // max(1, hkv)) * sum(kv_layers) // 6
    if full == 0:
        full = partial
    return kv_layers, partial, full


def ollama_projector(cfg: LlmConfig) -> tuple[int, int]:
    """(vision weights, vision graph): fs/ggml/ggml.go VisionGraphSize for the Ollama engine's VLMs."""
    if not cfg.vision_params:
        return 0, 0
    weights = cfg.vision_params * 2  # the vision tower in F16
    mt = cfg.model_type.lower()
    if mt.startswith("gemma3"):  # SigLIP 896 px, patch 14, 1152 wide, 16 heads, 3 channels
        patches = (896 // 14) ** 2
        return weights, 4 * (896 * 896 * 3 + 1152 * 14 + patches * patches * 16)
    if mt.startswith("qwen2_5_vl") or mt == "qwen25vl":  # max_pixels 28·28·1280, patch 14, 1280 wide, 16 heads
        px, p = 28 * 28 * 1280, 14
        n = px // (p * p)
        return weights, 4 * (px * 3 + px * 3 + n * 3 * p * p + n * n * 16 + 1280 * n)
    return weights, 0


def ollama_estimate(cfg: LlmConfig, layout: Layout, num_ctx: int, free: list[int], users: int = 1,
                    kv: str = "fp16", num_gpu: int | None = None, overhead: int = 0) -> OllamaEstimate:
    """llm/memory.go estimateGPULayers (v0.12.10): each GPU first holds MinimumMemory + one layer (blk.0 +
    its KV, reserved before any layer is placed, :303) and must keep the larger graph free; layers go from
    the last one down while ``free > overhead + used + graph + layer`` (:333), then the output layer
    together with the vision projector's weights and graph (:352); the graph actually added is the full-
    offload one when every layer fits, the partial one otherwise (:379)."""
    kv_layers, partial, full = ollama_graph(cfg, num_ctx, users, kv)
    if len(free) > 1:
        full = partial  # memory.go: several GPUs use the partial graph
    proj_w, proj_g = ollama_projector(cfg)
    output = layout.output + 4 * cfg.hidden  # output_norm (F32) + output (or token_embd when tied)
    blocks = list(layout.layers)
    n = cfg.layers
    graph = max(partial, full)
    layer0 = (blocks[0] if blocks else 0) + (kv_layers[0] if kv_layers else 0)
    alloc = [0] * len(free)
    split = [0] * len(free)
    space = []
    for i, f in enumerate(free):
        if f < overhead + graph + OLLAMA_MINIMUM_MEMORY + 2 * layer0:
            continue
        space.append(i)
        alloc[i] += OLLAMA_MINIMUM_MEMORY + layer0
    count = 0
    overflow = 0
    for i in range(n - 1, -1, -1):
        size = blocks[i] + kv_layers[i]
        if num_gpu is not None and count >= num_gpu:
            overflow += size
            continue
        placed = False
        for j in range(len(space), 0, -1):
            g = space[i % j]
            if free[g] > overhead + alloc[g] + graph + size:
                alloc[g] += size
                split[g] += 1
                count += 1
                placed = True
                break
            space.pop(i % j)
        if not placed and not space:
            overflow += size
    fully = count >= n
    last = output + proj_w + proj_g
    if num_gpu is None or count < num_gpu:
        for j in range(len(space), 0, -1):
            g = space[count % j]
            if free[g] > overhead + alloc[g] + graph + last:
                alloc[g] += last
                split[g] += 1
                count += 1
                break
    if count < n + 1:
        fully = False
        overflow += last
    for i in range(len(free)):
        if split[i] > 0:
            alloc[i] += full if fully else partial
    return OllamaEstimate(n + 1, count, tuple(split), sum(kv_layers), full, partial, sum(blocks), output,
                          proj_w, proj_g, tuple(int(a) for a in alloc), int(overflow))


# ---------------------------------------------------------------------------------------------
# Serving plan
@dataclass(frozen=True)
class ServePlan:
    model: str
    engine: str
    weight_format: str
    kv_dtype: str
    context: int  # tokens per sequence (prompt + answer)
    users: int  # concurrent sequences
    gpus: int
    card: str | None
    layers: int
    weights_bytes: int  # all cards together
    kv_bytes: int  # all cards together
    per_gpu_low: int  # weights + KV + reserve (vLLM) / + 1 GB (llama.cpp) on the busiest card
    per_gpu_high: int  # ... + 2 GB (llama.cpp); Ollama: its own allocation on the busiest card
    capacity_bytes: int  # per card: what the engine may use (vLLM: its share)
    utilization: float  # vLLM share to set (1.0 elsewhere)
    verdict: str  # fits | tight | offload | oom | unknown (no card)
    gpu_layers: int  # llama.cpp/Ollama: layers (+1 = output head) on the GPU
    max_users: int  # full-length sequences the card(s) hold next to the weights
    max_context: int  # tokens one sequence can have on the card(s) (vLLM: --max-model-len auto)
    flags: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # added (issue 23): the pool as the engines log it
    kv_cache_tokens: int = 0  # vLLM "GPU KV cache size: N tokens"; llama.cpp/Ollama: the context allocated
    max_concurrency: float = 0.0  # vLLM "Maximum concurrency for L tokens per request: X.XXx"
    reserve_bytes: int = 0  # per card, besides weights and KV: vLLM's profile / llama.cpp margin / Ollama graph
    engine_version: str = ""  # the engine version whose rules were applied
    vllm_reserve: Mapping | None = None  # VllmReserve.to_dict()
    ollama: Mapping | None = None  # OllamaEstimate.to_dict(): the fields of its "offload" log line
    n_cpu_moe: int = 0  # llama.cpp --n-cpu-moe: layers whose experts stay in system memory
    cpu_moe_bytes: int = 0  # their bytes
    tensor_split: tuple[float, ...] = ()  # llama.cpp --tensor-split
    decode_tokens_per_s: float = 0.0  # an estimate: see speed_basis
    prefill_tokens_per_s: float = 0.0
    speed_basis: str = ""
    pipeline: Mapping | None = None  # vLLM --pipeline-parallel-size over the cards: PipelinePlan.to_dict()

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["env"] = dict(self.env)
        d["flags"], d["notes"] = list(self.flags), list(self.notes)
        d["vllm_reserve"] = dict(self.vllm_reserve) if self.vllm_reserve else None
        d["ollama"] = dict(self.ollama) if self.ollama else None
        d["pipeline"] = dict(self.pipeline) if self.pipeline else None
        d["tensor_split"] = list(self.tensor_split)
        return d


def serve_plan(cfg: LlmConfig, context: int | str | None = None, users: int = 1, weights: str = "16bit",
               kv_dtype: str = "fp16", engine: str = "vllm", gpus: int = 1, card: Card | None = None,
               utilization: float | None = None, *, max_num_batched_tokens: int | None = None,
               max_num_seqs: int | None = None, enforce_eager: bool = False, vllm_version: str | None = None,
               chunked_prefill: bool | None = None, gpu_layers: int | None = None,
               free_bytes: list[int] | None = None, n_cpu_moe: int | str | None = None,
               tensor_split: list[float] | tuple[float, ...] | None = None,
               llamacpp_version: str | None = None, ollama_version: str | None = None,
               fit_max_num_seqs: bool = True) -> ServePlan:
    """What serving ``cfg`` needs per card on ``engine``, whether ``card`` (× gpus) holds it, and the flags.

    ``context="auto"``: the longest context that fits (vLLM's ``--max-model-len auto``; needs a card).
    ``gpu_layers``: llama.cpp ``-ngl N`` / Ollama ``num_gpu`` as an input. ``free_bytes``: free memory of
    each card (Ollama's memory.available; default the card's total). ``n_cpu_moe``: llama.cpp --n-cpu-moe N
    (``"all"`` = --cpu-moe, ``"auto"`` = the fewest layers whose experts must stay on the CPU for the rest to
    fit, as llama-fit-params searches). ``tensor_split``: llama.cpp --tensor-split, one share per card.
    ``fit_max_num_seqs``: on vLLM, when the default --max-num-seqs does not fit and none was given, plan with
    --max-num-seqs = users (vLLM's own advice when its sampler warm-up runs out of memory); False replays the
    engine's defaults as a log ran them."""
    ek = engine_key(engine)
    eng = ENGINES[ek]
    kv = normalize_kv(kv_dtype)
    if kv not in eng.kv_dtypes:
        raise VramBudgetError(f"{eng.name} has no {kv} KV cache: use {', '.join(eng.kv_dtypes)}")
    users, gpus = _count("--users", users), _count("--gpus", gpus)
    if utilization is not None and (isinstance(utilization, bool) or not isinstance(utilization, (int, float))
                                    or not 0.05 <= utilization <= 1.0):
        raise VramBudgetError(f"--gpu-memory-utilization {utilization}: give a share from 0.05 to 1")
    if gpu_layers is not None:
        _count("-ngl", gpu_layers, 0)
        if ek == "vllm":
            raise VramBudgetError("-ngl / --n-gpu-layers is for llama.cpp and Ollama "
                                  "(vLLM keeps every layer on the GPU)")
    rules = vllm_rules(vllm_version) if ek == "vllm" else None
    split = _tensor_split(tensor_split, gpus, ek)
    if n_cpu_moe is not None:
        if ek != "llama.cpp":
            raise VramBudgetError("--n-cpu-moe / --cpu-moe are llama.cpp's (Ollama and vLLM place experts themselves)")
        if not cfg.experts:
            raise VramBudgetError(f"--n-cpu-moe: {cfg.name} is not a mixture-of-experts model")
        if isinstance(n_cpu_moe, str) and n_cpu_moe.strip().lower() not in ("all", "auto"):
            raise VramBudgetError(f"--n-cpu-moe {n_cpu_moe!r}: give a number of layers, 'all' or 'auto'")
        if not isinstance(n_cpu_moe, str):
            _count("--n-cpu-moe", n_cpu_moe, 0)
    if ek == "ollama" and ollama_release(ollama_version) >= OLLAMA_LLAMA_SERVER_FROM:
        return _ollama_llama_server(cfg, context, users, weights, kv, gpus, card, gpu_layers, free_bytes, ollama_version)
    build = llamacpp_build(llamacpp_version) if ek == "llama.cpp" else 0
    kw = dict(users=users, weights=weights, kv_dtype=kv, engine=ek, gpus=gpus, card=card, utilization=utilization,
              max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, enforce_eager=enforce_eager,
              vllm_version=vllm_version, chunked_prefill=chunked_prefill, gpu_layers=gpu_layers, free_bytes=free_bytes,
              n_cpu_moe=n_cpu_moe, tensor_split=tensor_split, llamacpp_version=llamacpp_version)
    if (ek == "llama.cpp" and context is None and build >= LLAMACPP_FIT_FROM and card is not None
            and gpu_layers is None and cfg.max_context):
        return _llamacpp_fit(cfg, kw)
    if isinstance(n_cpu_moe, str) and n_cpu_moe.strip().lower() == "auto":
        if card is None:
            raise VramBudgetError("--n-cpu-moe auto: give a card (--gpu) or its free memory (--vram)")
        fits = lambda n: serve_plan(cfg, context, **{**kw, "n_cpu_moe": n}).verdict == "fits"  # noqa: E731
        lo, hi = 0, cfg.layers
        if not fits(hi):
            return serve_plan(cfg, context, **{**kw, "n_cpu_moe": hi})
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
        return serve_plan(cfg, context, **{**kw, "n_cpu_moe": lo})
    if isinstance(context, str):
        if context.strip().lower() not in ("auto", "-1"):
            raise VramBudgetError(f"--max-model-len {context!r}: give a number of tokens or 'auto'")
        if card is None:
            raise VramBudgetError("--max-model-len auto: give a card (--gpu) or its free memory (--vram) to fit it to")
        probe = serve_plan(cfg, cfg.max_context or 131072, **kw)
        if probe.max_context < 1:
            raise VramBudgetError(f"--max-model-len auto: {cfg.name} leaves no room for a KV cache on "
                                  f"{gpus} × {card.name}")
        return serve_plan(cfg, probe.max_context, **kw)
    fmt = weight_format(weights, ek, cfg)
    layout = weights_layout(cfg, weights, ek)
    if n_cpu_moe is not None:
        layout = layout.cpu_moe(cfg.layers if isinstance(n_cpu_moe, str) else n_cpu_moe)
    ctx = _context(cfg, ek, context, card, gpus, build, ollama_version)
    reserve = vllm_reserve(cfg, ctx, gpus, card, rules, max_num_batched_tokens, max_num_seqs, enforce_eager,
                           chunked_prefill) if rules else None
    need = _needs(cfg, eng, layout, kv, gpus, split)
    w, k = need(ctx, users)
    if reserve is not None:
        low = high = w + k + reserve.total
        reserve_bytes = reserve.total
    else:
        low, high, reserve_bytes = w + k + MARGIN_LOW, w + k + MARGIN_HIGH, MARGIN_HIGH
    plan = ServePlan(cfg.name, eng.name, fmt, kv, ctx, users, gpus, card.name if card else None, cfg.layers,
                     layout.total, kv_cache_bytes(cfg, ctx, users, kv, eng.windowed_kv), low, high,
                     0, 1.0, "unknown", cfg.layers + 1, 0, 0, notes=tuple(_notes(cfg, eng, fmt, kv, ctx)),
                     kv_cache_tokens=ctx * users if ek != "vllm" else 0, reserve_bytes=reserve_bytes,
                     engine_version=_version_label(ek, rules, build, ollama_version),
                     vllm_reserve=reserve.to_dict() if reserve else None)
    if ek == "ollama":
        plan = _judge_ollama(plan, cfg, layout, card, free_bytes, gpu_layers)
    elif card is not None and ek == "vllm":
        plan = _judge_vllm(plan, cfg, eng, layout, card, utilization, rules, reserve, need)
        if (plan.verdict != "fits" and fit_max_num_seqs and max_num_seqs is None and users < reserve.max_num_seqs
                and not split and n_cpu_moe is None):
            # vLLM warms its sampler on --max-num-seqs rows (gpu_model_runner _dummy_sampler_run: top-k / top-p
            # over the whole vocabulary); where the default does not fit, vLLM's own advice is to lower it
            # ("CUDA out of memory occurred when warming up sampler with N dummy requests. Please try lowering
            # `max_num_seqs`"): the plan's flags already set --max-num-seqs to its users
            fewer = serve_plan(cfg, ctx, users, weights, kv_dtype, engine, gpus, card, utilization,
                               max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=users,
                               enforce_eager=enforce_eager, vllm_version=vllm_version, chunked_prefill=chunked_prefill,
                               free_bytes=free_bytes, fit_max_num_seqs=False)
            order = ("fits", "tight", "oom", "unknown")
            if fewer.verdict in order and plan.verdict in order and order.index(fewer.verdict) < order.index(plan.verdict):
                saved = reserve.sampler_bytes - int((fewer.vllm_reserve or {}).get("sampler_bytes", 0))
                return replace(fewer, notes=fewer.notes + (
                    f"--max-num-seqs {users} (not vLLM's default {reserve.max_num_seqs}): vLLM warms its sampler on "
                    f"that many sequences over the whole vocabulary ({cfg.vocab:,} entries, 38 bytes each in its "
                    f"top-k / top-p sort), {fmt_gib(saved)} less to reserve; at the default it would not fit",))
    elif card is not None:
        plan = _judge(plan, cfg, eng, layout, card, utilization, need)
    if gpu_layers is not None and ek == "llama.cpp":
        plan = _fixed_ngl(plan, cfg, eng, layout, card, gpu_layers)
    if layout.cpu:
        n = sum(1 for e in layout.experts if e == 0) if layout.experts else cfg.layers
        plan = replace(plan, n_cpu_moe=n, cpu_moe_bytes=layout.cpu)
    if split:
        plan = replace(plan, tensor_split=split)
    if card is not None:
        plan = _speed(plan, cfg, layout, card, ek)
    flags, env = eng.flags(plan) if eng.flags else ((), {})
    return replace(plan, flags=tuple(flags), env=dict(env))


def _tensor_split(split, gpus: int, ek: str) -> tuple[float, ...]:
    if split is None:
        return ()
    if ek != "llama.cpp":
        raise VramBudgetError("--tensor-split is llama.cpp's (vLLM splits tensors evenly; Ollama picks its own split)")
    try:
        vals = tuple(float(x) for x in (split.split(",") if isinstance(split, str) else split))
    except (TypeError, ValueError):
        raise VramBudgetError(f"--tensor-split {split!r}: give one share per card, e.g. 3,1") from None
    if len(vals) != gpus or any(not math.isfinite(v) or v < 0 for v in vals) or sum(vals) <= 0:
        raise VramBudgetError(f"--tensor-split {split!r}: give {gpus} non-negative shares "
                              f"(one per card, --gpus {gpus})")
    return vals


def _split_layers(n: int, split: tuple[float, ...]) -> list[int]:
    """Layers per card for llama.cpp --tensor-split (llama-model.cpp: layer i goes to the first device whose
    cumulative share exceeds i / n_layer)."""
    total = sum(split)
    cum, acc = [], 0.0
    for v in split:
        acc += v / total
        cum.append(acc)
    counts = [0] * len(split)
    for i in range(n):
        d = next((j for j, c in enumerate(cum) if i / n < c), len(split) - 1)
        counts[d] += 1
    return counts


# Decode reads every active weight and the KV cache once per token; prefill is compute-bound.
HOST_BANDWIDTH = 50e9  # B/s: dual-channel DDR5 system memory, for layers left on the CPU (an assumption)
PREFILL_MFU = 0.5  # share of the datasheet dense TFLOPS a prefill reaches (an assumption)


def _active_share(cfg: LlmConfig) -> float:
    """Parameters one token touches / all text parameters (MoE: top-k of the routed experts)."""
    if not cfg.experts:
        return 1.0
    total = active = 0
    for t in tensor_list(cfg):
        if t.category == "token_embd":
            continue
        n = t.numel
        total += n
        active += n * cfg.experts_per_token // cfg.experts if len(t.shape) == 3 else n
    return active / total if total else 1.0


def _speed(plan: ServePlan, cfg: LlmConfig, layout: Layout, card: Card, ek: str) -> ServePlan:
    if not card.bandwidth_gb_s or plan.verdict in ("oom", "unknown"):
        return plan
    share = _active_share(cfg)
    bw = card.bandwidth_gb_s * 1e9
    kv_seq = kv_cache_bytes(cfg, plan.context, 1, plan.kv_dtype, ENGINES[ek].windowed_kv)
    gpu_w = (layout.total - layout.embed - layout.cpu) * share
    cpu_w = layout.cpu * cfg.experts_per_token / max(1, cfg.experts) if cfg.experts else 0
    if plan.verdict == "offload" and plan.gpu_layers <= cfg.layers:  # layers left on the CPU
        on_gpu = sum(layout.layers[cfg.layers - plan.gpu_layers:]) * share if plan.gpu_layers else 0
        cpu_w += gpu_w - on_gpu
        gpu_w = on_gpu
    if ek == "vllm":  # tensor parallel: each card reads its share at the same time
        seconds = (gpu_w + kv_seq) / plan.gpus / bw
    else:  # layers one card after another
        seconds = (gpu_w + kv_seq) / bw + cpu_w / HOST_BANDWIDTH
    flops = 2 * cfg.params * share
    prefill = card.tflops * 1e12 * PREFILL_MFU * (plan.gpus if ek == "vllm" else 1) / flops if card.tflops else 0.0
    basis = (f"estimate: decode = {card.name} memory bandwidth {card.bandwidth_gb_s:g} GB/s over the active weights + "
             f"one conversation's KV cache at {plan.context:,} tokens read per token"
             + (f" ({HOST_BANDWIDTH / 1e9:g} GB/s for what stays on the CPU)" if cpu_w else "")
             + f"; prefill = {PREFILL_MFU:.0%} of {card.tflops:g} dense TFLOPS over 2 FLOPs per active parameter")
    return replace(plan, decode_tokens_per_s=round(1 / seconds, 1) if seconds > 0 else 0.0,
                   prefill_tokens_per_s=round(prefill), speed_basis=basis)


def _ollama_llama_server(cfg: LlmConfig, context, users, weights, kv, gpus, card, gpu_layers, free_bytes,
                         version) -> "ServePlan":
    """Ollama from v0.30: llama-server with -c = num_ctx × parallel (never shrunk: Ollama always passes -c) and
    no -ngl unless num_gpu is set, so llama.cpp's layer split of its pinned build decides what stays on the GPU."""
    v = ".".join(map(str, ollama_release(version)))
    ctx = context
    if ctx is None:
        total = _driver_total(card) * gpus if card else 0
        ctx = ollama_default_context(total, version) if card else 4096
        ctx = min(ctx, cfg.max_context) if cfg.max_context else ctx
    plan = serve_plan(cfg, ctx, users=users, weights=weights, kv_dtype=kv,
                      engine="llama.cpp", gpus=gpus, card=card, gpu_layers=gpu_layers, free_bytes=free_bytes,
                      llamacpp_version=OLLAMA_LLAMACPP_BUILD)
    plan = replace(plan, engine="Ollama", engine_version=(
        f"Ollama {v} rules (llama-server with llama.cpp {OLLAMA_LLAMACPP_BUILD}: -c = num_ctx × parallel, "
        f"num_ctx {'as set' if context is not None else f'{ctx:,} by default for this card' if card else f'{ctx:,}'}"
        f", llama.cpp places "
        f"the layers; --ollama-version 0.12.10 for the older llm/memory.go estimator)"))
    flags, env = _ollama_flags(plan)
    return replace(plan, flags=tuple(flags), env=dict(env))


def _version_label(ek: str, rules: VllmRules | None, build: int = 0, ollama: str | None = None) -> str:
    if rules is not None:
        return (f"vLLM {rules.version} rules (default --gpu-memory-utilization {rules.utilization:.2f}"
                f"{', CUDA graphs profiled' if rules.graphs_profiled else ''}"
                f"{', V1 chunked prefill' if rules.v1 else ''})")
    if ek == "ollama":
        v = ".".join(map(str, ollama_release(ollama)))
        era = ("" if ollama_release(ollama) <= OLLAMA_MEMORY_GO_UNTIL else
               "; from v0.12.11 Ollama measures the graph and weights itself, so this is an approximation")
        return f"Ollama {v} rules (llm/memory.go estimator of v0.12.10{era})"
    if build >= LLAMACPP_FIT_FROM:
        return (f"llama.cpp b{build} rules (-c defaults to the model's trained context and --fit on fits it to free "
                f"memory, 1 GiB to spare, not below {LLAMACPP_FIT_MIN_CTX}; -ngl layer split)")
    return f"llama.cpp b{build} rules (-c defaults to 4096, before --fit; -ngl layer split)"


def _llamacpp_fit(cfg: LlmConfig, kw: dict) -> ServePlan:
    """llama.cpp's --fit (on by default since llama.cpp#16653): -c 0 means the model's trained context; when that
    does not fit the free memory with fit_params_target to spare, the context is cut, not below
    fit_params_min_ctx, before layers leave the GPU (common/common.h; llama_params_fit)."""
    trained = cfg.max_context
    full = serve_plan(cfg, trained, **kw)
    if full.verdict == "fits":
        return replace(full, notes=full.notes + (f"llama.cpp --fit (default): -c 0 is the model's trained context, "
                                                  f"{trained:,} tokens, and it fits",))
    floor = min(LLAMACPP_FIT_MIN_CTX, trained)
    if serve_plan(cfg, floor, **kw).verdict != "fits":
        plan = serve_plan(cfg, floor, **kw)
        why = f"even {floor:,} tokens do not fit: layers go to the CPU"
    else:
        lo, hi = floor, trained
        while hi - lo > 256:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if serve_plan(cfg, mid, **kw).verdict == "fits" else (lo, mid)
        plan = serve_plan(cfg, lo, **kw)
        why = f"cut to {lo:,} tokens"
    return replace(plan, notes=plan.notes + (
        f"llama.cpp --fit (default): the trained context of {trained:,} tokens does not fit, so llama.cpp sets -c "
        f"itself: {why} (give -c to choose; --fit off keeps -c 0 = {trained:,})",))


def _context(cfg: LlmConfig, ek: str, context: int | None, card: Card | None, gpus: int, build: int = 0,
             ollama_version: str | None = None) -> int:
    if context is not None:
        ctx = _count("--context", context)
        if cfg.max_context and ctx > cfg.max_context:
            raise VramBudgetError(f"--context {ctx}: {cfg.name} is trained for {cfg.max_context} tokens")
        return ctx
    if ek == "ollama":
        ctx = ollama_default_context(_driver_total(card) * gpus, ollama_version) if card else 4096
    elif ek == "llama.cpp":
        # common/common.h: n_ctx = 0 (the trained context) since --fit; 4096 before
        ctx = (cfg.max_context or 4096) if build >= LLAMACPP_FIT_FROM else 4096
    else:
        ctx = cfg.max_context or 4096  # vLLM: --max-model-len defaults to the model's own context
    return min(ctx, cfg.max_context) if cfg.max_context else ctx


def _notes(cfg: LlmConfig, eng: Engine, fmt: str, kv: str, ctx: int):
    if eng.quantized_v_needs_fa and kv in ("q8_0", "q4_0"):
        yield (f"{kv} V cache needs flash attention: llama.cpp refuses it without -fa, Ollama silently keeps f16 "
               "unless OLLAMA_FLASH_ATTENTION=1")
    if cfg.sliding_layers and eng.windowed_kv:
        yield (f"{cfg.sliding_layers} of {cfg.layers} layers use a {cfg.sliding_window}-token sliding window: "
               f"{eng.name} keeps only the window for them")
    if fmt in GGUF_FTYPES and eng.name == "vLLM":
        yield "vLLM's GGUF support is experimental; an AWQ/GPTQ or FP8 checkpoint is the usual choice"
    if fmt == "file" and cfg.stored_format.startswith("safetensors") and eng.name != "vLLM":
        yield f"{eng.name} needs a GGUF: convert with llama.cpp's convert_hf_to_gguf.py (sizes here are the safetensors')"


def _needs(cfg: LlmConfig, eng: Engine, layout: Layout, kv: str, gpus: int,
           split: tuple[float, ...] = ()) -> Callable[[int, int], tuple[int, int]]:
    """(context, users) -> (weights, KV) on the busiest card with every layer on the GPU(s)."""
    if eng.split == "tensor":
        per_w, kv_heads = -(-layout.total // gpus), _tp_kv_heads(cfg, gpus)

        def tensor(ctx: int, users: int) -> tuple[int, int]:
            tokens = -(-ctx // eng.block_tokens) * eng.block_tokens  # whole KV blocks per sequence
            return per_w, kv_cache_bytes(cfg, tokens, users, kv, eng.windowed_kv, kv_heads)
        return tensor
    # whole layers per card (llama.cpp --split-mode layer); the output head and the rest on one of them
    if split:  # --tensor-split: layers by share, the output head on the last card; the busiest card counts
        counts = _split_layers(cfg.layers, split)
        starts = [sum(counts[:d]) for d in range(len(counts))]

        def uneven(ctx: int, users: int) -> tuple[int, int]:
            kvl = _kv_layer_bytes(cfg, ctx, users, kv, eng.windowed_kv)
            best = (0, 0)
            for d, (a, c) in enumerate(zip(starts, counts)):
                w = sum(layout.layers[a:a + c]) + (layout.output + layout.other if d == len(counts) - 1 else 0)
                k = sum(kvl[a:a + c])
                best = max(best, (w, k), key=sum)
            return best
        return uneven
    per_w = -(-sum(layout.layers) // gpus) + layout.output + layout.other

    def layers(ctx: int, users: int) -> tuple[int, int]:
        return per_w, -(-kv_cache_bytes(cfg, ctx, users, kv, eng.windowed_kv) // gpus)
    return layers


def _tp_kv_heads(cfg: LlmConfig, gpus: int) -> int:
    """vLLM tensor parallelism: KV heads per card (each card keeps a copy when there are fewer heads than cards)."""
    if cfg.heads % gpus:
        raise VramBudgetError(f"--gpus {gpus}: vLLM needs the {cfg.heads} attention heads divisible by "
                              "--tensor-parallel-size")
    if gpus <= cfg.kv_heads:
        if cfg.kv_heads % gpus:
            raise VramBudgetError(f"--gpus {gpus}: vLLM needs the {cfg.kv_heads} KV heads divisible by the card count")
        return cfg.kv_heads // gpus
    if gpus % cfg.kv_heads:
        raise VramBudgetError(f"--gpus {gpus}: with {cfg.kv_heads} KV heads vLLM needs a card count that divides "
                              "or is a multiple of it")
    return 1


def _judge(plan: ServePlan, cfg: LlmConfig, eng: Engine, layout: Layout, card: Card, utilization: float | None,
           need: Callable[[int, int], tuple[int, int]]) -> ServePlan:
    total = card.total_bytes
    share = utilization if utilization is not None else (eng.memory_share or 1.0)
    top = share if utilization is not None else max(share, eng.max_share)
    needed = math.ceil(plan.per_gpu_high / total * 100) / 100
    if eng.memory_share is not None and utilization is None and share < needed <= top:
        share = needed  # raising --gpu-memory-utilization is vLLM's own knob (nothing else may use the card)
    capacity = int(share * total)
    fits = lambda ctx, users: sum(need(ctx, users)) + MARGIN_HIGH <= int(top * total)  # noqa: E731
    max_ctx = _largest(lambda c: fits(c, plan.users), cfg.max_context or 1 << 22)
    max_users = _largest(lambda u: fits(plan.context, u), 4096)
    gpu_layers = cfg.layers + 1
    if plan.per_gpu_high <= capacity:
        verdict = "fits"
    elif plan.per_gpu_low <= capacity:
        verdict = "tight"
    elif eng.offloads_layers:
        verdict, gpu_layers = "offload", min(_gpu_layers(cfg, eng, layout, plan, card), cfg.layers)
    else:
        verdict = "oom"
    return replace(plan, capacity_bytes=capacity, utilization=round(share, 2), verdict=verdict,
                   gpu_layers=gpu_layers, max_users=max_users, max_context=max_ctx)


def _vllm_token_bytes(cfg: LlmConfig, kv: str, gpus: int) -> int:
    """KV bytes of one token on one card (every layer; heads split over the tensor-parallel cards)."""
    return cfg.layers * _kv_row(cfg, kv, _tp_kv_heads(cfg, gpus))


def _judge_vllm(plan: ServePlan, cfg: LlmConfig, eng: Engine, layout: Layout, card: Card,
                utilization: float | None, rules: VllmRules, reserve: VllmReserve,
                need: Callable[[int, int], tuple[int, int]]) -> ServePlan:
    """vLLM on ``card``: its pool is share × total − weights − the profile's reserve; the share is the one
    the flags set (the default, raised up to 0.95 when that is enough), and every count below uses it."""
    total = card.total_bytes
    share = utilization if utilization is not None else rules.utilization
    needed = math.ceil(plan.per_gpu_high / total * 100) / 100
    if utilization is None and share < needed <= eng.max_share:
        share = needed  # raising --gpu-memory-utilization is vLLM's own knob (nothing else may use the card)
    capacity = int(share * total)
    w, _ = need(plan.context, plan.users)  # noqa: F841
    per_token = _vllm_token_bytes(cfg, plan.kv_dtype, plan.gpus) * eng.block_tokens
    pool = capacity - w - reserve.total
    tokens = max(0, pool // per_token) * eng.block_tokens if per_token else 0
    fits = lambda ctx, users: sum(need(ctx, users)) + reserve.total <= capacity  # noqa: E731
    max_ctx = _largest(lambda c: fits(c, 1), cfg.max_context or 1 << 22)
    max_users = _largest(lambda u: fits(plan.context, u), 4096)
    concurrency = tokens / plan.context
    if cfg.sliding_layers and eng.windowed_kv and pool > 0:
        # sliding-window layers keep only their window (vLLM's hybrid KV manager): count conversations of this
        # length by their real bytes; the token figure is that many conversations' tokens (vLLM's own log line
        # counts per KV-cache group and differs)
        ctx_blocks = -(-plan.context // eng.block_tokens) * eng.block_tokens
        per_seq = kv_cache_bytes(cfg, ctx_blocks, 1, plan.kv_dtype, True, _tp_kv_heads(cfg, plan.gpus))
        concurrency = pool / per_seq
        tokens = int(concurrency * plan.context) // eng.block_tokens * eng.block_tokens
    if plan.per_gpu_high <= capacity:
        verdict = "fits"
    elif max_users >= 1:
        verdict = "tight"  # vLLM starts, but fewer full-length conversations run at once (the rest queue)
    else:
        verdict = "oom"  # "The model's max seq len is larger than the maximum number of tokens ... in KV cache"
    return replace(plan, capacity_bytes=capacity, utilization=round(share, 2), verdict=verdict,
                   max_users=max_users, max_context=max_ctx, kv_cache_tokens=tokens,
                   max_concurrency=round(max(0.0, concurrency), 2))


def _judge_ollama(plan: ServePlan, cfg: LlmConfig, layout: Layout, card: Card | None, free: list[int] | None,
                  num_gpu: int | None) -> ServePlan:
    big = [1 << 60] * plan.gpus
    whole = ollama_estimate(cfg, layout, plan.context, big, plan.users, plan.kv_dtype)  # everything on the GPU(s)
    need = max(whole.allocations)
    plan = replace(plan, per_gpu_low=need, per_gpu_high=need,
                   reserve_bytes=OLLAMA_MINIMUM_MEMORY + whole.graph_full_bytes + whole.projector_graph,
                   ollama=whole.to_dict())
    if card is None and free is None:
        return plan
    if free is None:
        free = [int(card.total_bytes)] * plan.gpus  # type: ignore[union-attr]
    free = [int(f) for f in free]
    est = ollama_estimate(cfg, layout, plan.context, free, plan.users, plan.kv_dtype, num_gpu)
    n = cfg.layers + 1
    on_gpu = lambda c, u: ollama_estimate(cfg, layout, c, free, u, plan.kv_dtype).layers_offload >= n  # noqa: E731
    max_ctx = _largest(lambda c: on_gpu(c, plan.users), cfg.max_context or 1 << 20)
    max_users = _largest(lambda u: on_gpu(plan.context, u), 64)
    if est.layers_offload >= n:
        verdict = "fits"
    else:
        verdict = "offload"
    d = est.to_dict()
    d["required_partial"], d["required_full"] = est.required_partial, est.required_full
    return replace(plan, capacity_bytes=min(free), verdict=verdict, gpu_layers=est.layers_offload,
                   max_users=max_users, max_context=max_ctx, ollama=d,
                   per_gpu_high=max(need, max(est.allocations)), per_gpu_low=max(need, max(est.allocations)))


def _fixed_ngl(plan: ServePlan, cfg: LlmConfig, eng: Engine, layout: Layout, card: Card | None,
               ngl: int) -> ServePlan:
    """llama.cpp ``-ngl N`` as an input: the last N repeating layers (and their KV) on the GPU(s); the output
    head too when N > layers (llama-model.cpp: i_gpu_start = n_layer + 1 - n_gpu_layers); the rest on the CPU."""
    n = min(ngl, cfg.layers)
    kv_layer = _kv_layer_bytes(cfg, plan.context, plan.users, plan.kv_dtype, eng.windowed_kv)
    weights = sum(layout.layers[cfg.layers - n:]) + (layout.output + layout.other if ngl > cfg.layers else 0)
    kv = sum(sorted(kv_layer)[::-1][:n]) if n else 0
    per_gpu = -(-(weights + kv) // plan.gpus)
    low, high = per_gpu + MARGIN_LOW, per_gpu + MARGIN_HIGH
    verdict = plan.verdict
    if card is not None:
        cap = card.total_bytes
        verdict = "fits" if high <= cap else "tight" if low <= cap else "oom"
        if verdict != "oom" and ngl <= cfg.layers:
            verdict = "offload" if verdict == "fits" else verdict
    return replace(plan, per_gpu_low=low, per_gpu_high=high, gpu_layers=min(ngl, cfg.layers + 1), verdict=verdict,
                   capacity_bytes=card.total_bytes if card is not None else 0)


def _largest(ok: Callable[[int], bool], hi: int) -> int:
    """The largest n in [0, hi] with ok(n) (ok is monotone), 0 if none."""
    if not ok(1):
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def _gpu_layers(cfg: LlmConfig, eng: Engine, layout: Layout, plan: ServePlan, card: Card) -> int:
    """llama.cpp -ngl that fits: the output head first, then the last layers with their KV; the input
    embedding stays on the CPU (llama-model.cpp: "very little benefit to offloading the input layer")."""
    room = plan.gpus * (card.total_bytes - MARGIN_HIGH) - layout.output - layout.other
    if room < 0:
        return 0
    kv_layer = _kv_layer_bytes(cfg, plan.context, plan.users, plan.kv_dtype, eng.windowed_kv)
    n = 0
    for w, k in zip(reversed(layout.layers), reversed(kv_layer)):
        if room < w + k:
            break
        room -= w + k
        n += 1
    return n + 1


def _kv_layer_bytes(cfg: LlmConfig, ctx: int, users: int, kv: str, windowed: bool) -> list[int]:
    """KV bytes of each layer, sliding-window layers first (their order does not matter for the count)."""
    row = _kv_row(cfg, kv)
    full = row * ctx * users
    if not (windowed and cfg.sliding_layers and cfg.sliding_window):
        return [full] * cfg.layers
    short = row * min(ctx, cfg.sliding_window) * users
    return [short] * cfg.sliding_layers + [full] * (cfg.layers - cfg.sliding_layers)


# ---------------------------------------------------------------------------------------------
# vLLM pipeline parallelism over mixed cards (--pipeline-parallel-size N, VLLM_PP_LAYER_PARTITION)
# vLLM cuts the decoder layers into N contiguous stages, one per rank, ranks in device order:
# - vllm/distributed/utils.py:72-117 get_pp_indices (vllm-project/vllm@5a6541db): with VLLM_PP_LAYER_PARTITION
#   set (:87) its comma list is each rank's layer count: integers (:89-95), one per rank (:96-97), summing to the
#   model's layers (:98-100); without it every rank gets layers // N and the remainder goes one each to the ranks
#   before the last, partitions[-2], [-3], ... (:101-107); make_layers builds only the rank's [start, end).
# - vllm/model_executor/models/llama.py (vllm-project/vllm@e06c9ba2): embed_tokens on the first rank, and on the
#   last one too when the embeddings are tied (:372-381); the final norm (:387-390) and lm_head (:538-553, tied to
#   that embedding copy) on the last rank. A vision tower is counted on every stage (vLLM's VLMs build it without
#   a rank check): conservative.
# - every rank profiles its own card (gpu_worker.py determine_available_memory) and sizes blocks for its own
#   layers (page size × its layer count); vllm/v1/core/kv_cache_utils.py unify_kv_cache_configs (the file's last
#   function, vllm-project/vllm@bbf906a8; get_kv_cache_configs in later versions) then sets every rank's
#   num_blocks to the smallest: the tightest stage sets "GPU KV cache size".
# - only the last rank warms up the sampler (gpu_model_runner.py profile_run: `if get_pp_group().is_last_rank`);
#   each rank profiles the forward of max_num_batched_tokens through its own layers (the same per-layer peak)
#   and captures CUDA graphs of its own layers. Non-torch memory grows with the ranks as for tensor
#   parallelism (NCCL buffers; an estimate, see VLLM_NON_TORCH_PER_RANK).
@dataclass(frozen=True)
class PipelineStage(JsonFields):
    rank: int
    card: str
    layers: int
    first_layer: int
    weights_bytes: int  # its layers (+ the embedding on the first, the lm_head on the last)
    kv_bytes: int  # its layers' KV for the plan's tokens (context × users, whole 16-token blocks)
    reserve_bytes: int  # vLLM's profile on this rank (forward peak, sampler on the last, non-torch, CUDA graphs)
    total_bytes: int
    capacity_bytes: int  # the card's --gpu-memory-utilization share
    fits: bool
    kv_cache_tokens: int  # what this stage alone would hold (before vLLM takes the smallest over the ranks)


@dataclass(frozen=True)
class PipelinePlan(JsonFields):
    pipeline_parallel_size: int
    cards: tuple[str, ...]
    layers_per_card: tuple[int, ...]
    vllm_pp_layer_partition: str  # the value to export
    kv_cache_tokens: int  # the smallest stage's pool: vLLM's "GPU KV cache size"
    partition: str  # "chosen" (the largest KV pool on these cards) or "given" (--pp-layer-partition)
    default_partition: tuple[int, ...]  # get_pp_indices without the variable
    default_fits: bool
    default_kv_cache_tokens: int  # 0 where the default split does not even hold the weights
    custom_needed: bool  # the default split does not fit, this one does
    per_card: tuple[PipelineStage, ...]


def vllm_default_partition(layers: int, stages: int) -> tuple[int, ...]:
    """get_pp_indices without VLLM_PP_LAYER_PARTITION (vllm/distributed/utils.py:101-107): layers // stages each,
    the remainder one layer each to the ranks before the last (partitions[-2], partitions[-3], ...)."""
    parts = [layers // stages] * stages
    for i in range(2, layers % stages + 2):
        parts[-i] += 1
    return tuple(parts)


def parse_pp_partition(value, layers: int, stages: int) -> tuple[int, ...]:
    """VLLM_PP_LAYER_PARTITION as vLLM checks it (utils.py:88-100): whole numbers, one per rank, summing to the
    model's layers; here also at least one layer per card."""
    text = value if isinstance(value, str) else ",".join(str(v) for v in value)
    try:
        parts = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise VramBudgetError(f"--pp-layer-partition {text!r}: give whole numbers of layers, one per card, "
                              "e.g. 22,10") from None
    if len(parts) != stages:
        raise VramBudgetError(f"--pp-layer-partition {text!r}: {len(parts)} value(s) for {stages} cards (vLLM needs "
                              "one per pipeline rank)")
    if sum(parts) != layers:
        raise VramBudgetError(f"--pp-layer-partition {text!r}: the values add up to {sum(parts)} layers, the model "
                              f"has {layers} (vLLM refuses a partition that does not sum to them)")
    if min(parts) < 1:
        raise VramBudgetError(f"--pp-layer-partition {text!r}: every card needs at least one layer")
    return parts


class _Stages:
    """Per-rank bytes of a pipeline over ``cards`` at one --gpu-memory-utilization share."""

    def __init__(self, cfg: LlmConfig, cards: list[Card], layout: Layout, kv: str, base: VllmReserve, share: float,
                 block: int):
        self.cfg, self.cards, self.layout, self.base, self.share, self.block = cfg, cards, layout, base, share, block
        self.n, self.row = len(cards), _kv_row(cfg, kv)
        self.caps = [int(share * c.total_bytes) for c in cards]
        self.cum = [0]
        for b in layout.layers:
            self.cum.append(self.cum[-1] + b)

    def weights(self, i: int, a: int, b: int) -> int:
        w = self.cum[b] - self.cum[a] + self.layout.other
        if i == 0:
            w += self.layout.embed
        if i == self.n - 1:
            w += self.layout.output  # tied: the embedding copy the last rank builds for lm_head
        return w

    def reserve(self, i: int, layers: int) -> VllmReserve:
        return replace(self.base, sampler_bytes=self.base.sampler_bytes if i == self.n - 1 else 0,
                       non_torch_bytes=VLLM_NON_TORCH + VLLM_NON_TORCH_PER_RANK * (self.n - 1),
                       cuda_graph_bytes=layers * VLLM_GRAPH_PER_LAYER if self.base.cuda_graph_bytes else 0)

    def pool(self, i: int, a: int, b: int) -> int:
        return self.caps[i] - self.weights(i, a, b) - self.reserve(i, b - a).total

    def tokens(self, i: int, a: int, b: int) -> int:
        """Tokens this stage holds: its pool over its layers' bytes per block (-1: not even the weights)."""
        pool = self.pool(i, a, b)
        return pool // ((b - a) * self.row * self.block) * self.block if pool >= 0 else -1

    def greedy(self, need: int) -> tuple[int, ...] | None:
        """A partition where every stage holds ``need`` tokens, each card taking as many layers as it can (at least
        one for each card after it); None if there is none. Filling in order covers the longest prefix, so it
        finds a partition whenever one exists."""
        a, parts, L = 0, [], self.cfg.layers
        for i in range(self.n):
            if i == self.n - 1:
                k = L - a
                if k < 1 or self.tokens(i, a, L) < need:
                    return None
            else:
                k = next((k for k in range(L - a - (self.n - 1 - i), 0, -1) if self.tokens(i, a, a + k) >= need), 0)
                if not k:
                    return None
            parts.append(k)
            a += k
        return tuple(parts)

    def best(self) -> tuple[int, tuple[int, ...]] | None:
        """(largest pool in tokens, a partition reaching it), None when no split holds the weights."""
        first = self.greedy(0)
        if first is None:
            return None
        lo, hi = 0, max(self.caps) // (self.row * self.block) + 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if self.greedy(mid * self.block) is not None else (lo, mid - 1)
        return lo * self.block, self.greedy(lo * self.block) or first

    def stages(self, parts: tuple[int, ...], need: int) -> list[PipelineStage]:
        out, a = [], 0
        for i, k in enumerate(parts):
            w, r = self.weights(i, a, a + k), self.reserve(i, k).total
            kv = k * self.row * need
            out.append(PipelineStage(i, self.cards[i].name, k, a, w, kv, r, w + kv + r, self.caps[i],
                                     w + kv + r <= self.caps[i], max(0, self.tokens(i, a, a + k))))
            a += k
        return out

    def pool_tokens(self, parts: tuple[int, ...]) -> int:
        """vLLM's "GPU KV cache size" for a partition: the smallest stage's (-1: some stage lacks the weights)."""
        starts = [sum(parts[:i]) for i in range(len(parts))]
        return min(self.tokens(i, a, a + k) for i, (a, k) in enumerate(zip(starts, parts)))


def serve_pipeline(cfg: LlmConfig, cards: list[Card], context: int | str | None = None, users: int = 1,
                   weights: str = "16bit", kv_dtype: str = "fp16", utilization: float | None = None,
                   partition: str | tuple[int, ...] | None = None, *, max_num_batched_tokens: int | None = None,
                   max_num_seqs: int | None = None, enforce_eager: bool = False, vllm_version: str | None = None,
                   chunked_prefill: bool | None = None, gpu_layers: int | None = None, n_cpu_moe=None,
                   tensor_split=None, _probe: bool = False) -> ServePlan:
    """vLLM with ``--pipeline-parallel-size len(cards)`` over (possibly different) cards, ranks in the given order:
    the layer split (VLLM_PP_LAYER_PARTITION) under which every card holds its layers' weights, their KV for the
    plan's tokens and vLLM's reserve within its --gpu-memory-utilization share, chosen for the largest KV pool
    (the smallest stage's, as vLLM takes it); ``partition`` checks a given split instead. ``context="auto"``: the
    longest context that fits (--max-model-len auto)."""
    eng = ENGINES["vllm"]
    if gpu_layers is not None:
        raise VramBudgetError("-ngl / --n-gpu-layers is for llama.cpp and Ollama (vLLM keeps every layer on the GPU)")
    if n_cpu_moe is not None:
        raise VramBudgetError("--n-cpu-moe / --cpu-moe are llama.cpp's (Ollama and vLLM place experts themselves)")
    if tensor_split is not None:
        raise VramBudgetError("--tensor-split is llama.cpp's; for vLLM's pipeline stages give --pp-layer-partition")
    cards = list(cards)
    n = len(cards)
    if n < 2:
        raise VramBudgetError("--pipeline-parallel needs at least 2 cards: --gpu \"RTX 4090,RTX 3060\" (or --gpu X "
                              "--gpus N)")
    if n > cfg.layers:
        raise VramBudgetError(f"--pipeline-parallel over {n} cards: {cfg.name} has only {cfg.layers} layers")
    kv = normalize_kv(kv_dtype)
    if kv not in eng.kv_dtypes:
        raise VramBudgetError(f"{eng.name} has no {kv} KV cache: use {', '.join(eng.kv_dtypes)}")
    users = _count("--users", users)
    if utilization is not None and (isinstance(utilization, bool) or not isinstance(utilization, (int, float))
                                    or not 0.05 <= utilization <= 1.0):
        raise VramBudgetError(f"--gpu-memory-utilization {utilization}: give a share from 0.05 to 1")
    rules = vllm_rules(vllm_version)
    given = parse_pp_partition(partition, cfg.layers, n) if partition is not None else None
    opts = dict(max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, enforce_eager=enforce_eager,
                vllm_version=vllm_version, chunked_prefill=chunked_prefill)
    names = " + ".join(c.name for c in cards)
    if isinstance(context, str):
        if context.strip().lower() not in ("auto", "-1"):
            raise VramBudgetError(f"--max-model-len {context!r}: give a number of tokens or 'auto'")
        top = cfg.max_context or 131072
        probe = serve_pipeline(cfg, cards, top, 1, weights, kv, utilization, partition, **opts, _probe=True)
        most = min(probe.kv_cache_tokens, top) if probe.pipeline else 0
        if most < 1:
            raise VramBudgetError(f"--max-model-len auto: {cfg.name} leaves no room for a KV cache on {names}")
        return serve_pipeline(cfg, cards, most, users, weights, kv, utilization, partition, **opts)
    fmt = weight_format(weights, "vllm", cfg)
    layout = weights_layout(cfg, weights, "vllm")
    ctx = _context(cfg, "vllm", context, None, n)
    block = eng.block_tokens
    ctx_blocks = -(-ctx // block) * block
    need = ctx_blocks * users
    # vLLM's batch defaults (max_num_batched_tokens / max_num_seqs) follow the card it starts on: the first
    base = vllm_reserve(cfg, ctx, 1, cards[0], rules, max_num_batched_tokens, max_num_seqs, enforce_eager,
                        chunked_prefill)
    default = vllm_default_partition(cfg.layers, n)

    def at(share: float):
        st = _Stages(cfg, cards, layout, kv, base, share, block)
        return st, st.best()

    share = utilization if utilization is not None else rules.utilization
    st, best = at(share)
    if utilization is None:  # raise --gpu-memory-utilization (vLLM's own knob) up to 0.95 when that is enough
        ok = (lambda s, b: s.pool_tokens(given) >= need) if given else (lambda s, b: b is not None and b[0] >= need)
        s = share
        while not ok(st, best) and s + 0.01 <= eng.max_share + 1e-9:
            s = round(s + 0.01, 2)
            s_st, s_best = at(s)
            if ok(s_st, s_best):
                share, st, best = s, s_st, s_best
    if best is None and given is None:
        top = st if utilization is not None else at(eng.max_share)[0]
        total = sum(top.weights(i, a, a + k) for i, (a, k) in
                    enumerate(zip([sum(default[:i]) for i in range(n)], default)))
        raise VramBudgetError(
            f"no VLLM_PP_LAYER_PARTITION fits {cfg.name} ({fmt} weights) on {names}: the weights "
            f"({fmt_gib(total)}) and vLLM's reserves exceed the cards' shares "
            f"({' + '.join(fmt_gib(c) for c in top.caps)} at --gpu-memory-utilization {top.share:.2f}); add a card, take bigger ones or quantise the weights "
            "further (--weights)")
    if given is not None:
        stages = st.stages(given, need)
        bad = [s for s in stages if not s.fits]
        if bad and not (_probe and st.pool_tokens(given) >= 0):
            worst = max(bad, key=lambda s: s.total_bytes - s.capacity_bytes)
            hint = (f"; VLLM_PP_LAYER_PARTITION={','.join(map(str, best[1]))} holds {best[0]:,} tokens" if best
                    else "; no partition holds the weights on these cards")
            raise VramBudgetError(
                f"--pp-layer-partition {','.join(map(str, given))} does not fit on {names}: {worst.card} (rank "
                f"{worst.rank}, {worst.layers} layers) needs {fmt_gib(worst.total_bytes)} of its "
                f"{fmt_gib(worst.capacity_bytes)} share (weights {fmt_gib(worst.weights_bytes)}, KV "
                f"{fmt_gib(worst.kv_bytes)} for {need:,} tokens, reserve {fmt_gib(worst.reserve_bytes)}){hint}")
        parts, tokens, how = given, st.pool_tokens(given), "given"
    else:
        tokens, parts = best  # type: ignore[misc]
        how = "chosen"
        if st.pool_tokens(default) >= tokens:
            parts = default  # vLLM's own split is as good: keep it
        stages = st.stages(parts, need)
    default_tokens = st.pool_tokens(default)
    default_fits = default_tokens >= need
    fits = all(s.fits for s in stages)
    pipe = PipelinePlan(n, tuple(c.name for c in cards), parts, ",".join(map(str, parts)), tokens, how, default,
                        default_fits, max(0, default_tokens), fits and not default_fits, tuple(stages))
    tight = max(stages, key=lambda s: s.total_bytes / s.capacity_bytes)
    verdict = "fits" if fits else "tight" if tokens >= ctx_blocks else "oom"
    last = st.reserve(n - 1, parts[-1])
    notes = [x for x in _notes(cfg, eng, fmt, kv, ctx) if "sliding window" not in x]
    notes.append(f"pipeline ranks follow the device order (CUDA_VISIBLE_DEVICES): rank 0 = {cards[0].name} holds the "
                 f"embedding, rank {n - 1} = {cards[-1].name} the lm_head and the sampler")
    d = ",".join(map(str, default))
    if pipe.custom_needed:
        poor = min(range(n), key=lambda i: st.tokens(i, sum(default[:i]), sum(default[:i + 1])))
        notes.append(f"vLLM's default split {d} (get_pp_indices without VLLM_PP_LAYER_PARTITION) does not fit: "
                     f"{cards[poor].name} would hold " + (f"{max(0, default_tokens):,} tokens of KV" if default_tokens
                                                          >= 0 else "not even its layers' weights")
                     + f", the plan needs {need:,}; VLLM_PP_LAYER_PARTITION={pipe.vllm_pp_layer_partition} fits "
                     f"({tokens:,} tokens)")
    elif default_fits and parts != default:
        notes.append(f"vLLM's default split {d} also fits, with a smaller pool ({max(0, default_tokens):,} tokens)")
    if how == "given" and best and best[0] > tokens:
        notes.append(f"VLLM_PP_LAYER_PARTITION={','.join(map(str, best[1]))} would hold more: {best[0]:,} tokens")
    if cfg.sliding_layers:
        notes.append("sliding-window layers are counted at the full context on every stage (vLLM's hybrid KV manager "
                     "keeps less): conservative")
    if len({_big_card(c) for c in cards}) > 1:
        notes.append("vLLM's default --max-num-batched-tokens / --max-num-seqs follow the first card "
                     f"({cards[0].name})")
    plan = ServePlan(cfg.name, eng.name, fmt, kv, ctx, users, n, names, cfg.layers,
                     sum(s.weights_bytes for s in stages), kv_cache_bytes(cfg, ctx, users, kv), tight.total_bytes,
                     tight.total_bytes, tight.capacity_bytes, round(share, 2), verdict, cfg.layers + 1,
                     tokens // ctx_blocks, min(tokens, cfg.max_context) if cfg.max_context else tokens,
                     notes=tuple(notes), kv_cache_tokens=tokens, max_concurrency=round(max(0.0, tokens / ctx), 2),
                     reserve_bytes=max(s.reserve_bytes for s in stages), engine_version=_version_label("vllm", rules),
                     vllm_reserve=last.to_dict(), pipeline=pipe.to_dict())
    plan = _pipeline_speed(plan, cfg, layout, cards, stages, st.row)
    flags, env = _vllm_flags(plan)
    return replace(plan, flags=tuple(flags), env=dict(env))


def _pipeline_speed(plan: ServePlan, cfg: LlmConfig, layout: Layout, cards: list[Card],
                    stages: list[PipelineStage], row: int) -> ServePlan:
    """One request through the stages one after another: each card's bandwidth over its weights and its layers'
    KV (decode), its dense TFLOPS over its layers' FLOPs (prefill). An estimate, as for one card."""
    if plan.verdict == "oom" or not all(c.bandwidth_gb_s and c.tflops for c in cards):
        return plan
    share = _active_share(cfg)
    seconds = prefill = 0.0
    for s, c in zip(stages, cards):
        read = (s.weights_bytes - (layout.embed if s.rank == 0 else 0)) * share + s.layers * row * plan.context
        seconds += read / (c.bandwidth_gb_s * 1e9)
        prefill += 2 * cfg.params * share * s.layers / cfg.layers / (c.tflops * 1e12 * PREFILL_MFU)
    basis = (f"estimate: the stages one after another; decode = each card's memory bandwidth over its weights + its "
             f"layers' KV of one conversation at {plan.context:,} tokens; prefill = {PREFILL_MFU:.0%} of each card's "
             "dense TFLOPS over 2 FLOPs per active parameter of its layers (one request; several overlap)")
    return replace(plan, decode_tokens_per_s=round(1 / seconds, 1), prefill_tokens_per_s=round(1 / prefill),
                   speed_basis=basis)


# ---------------------------------------------------------------------------------------------
# Cheapest card
@dataclass(frozen=True)
class CardOption(JsonFields):
    card: str
    count: int
    price_eur_h: float | None  # for all cards together; None when the guide gives no price
    per_gpu_bytes: int
    capacity_bytes: int
    how: str = ""  # e.g. "tensor parallel", "ZeRO-3"


    def label(self) -> str:
        price = f", €{self.price_eur_h:.2f}/h" if self.price_eur_h is not None else ""
        how = f" ({self.how})" if self.how else ""
        return f"{self.count} × {self.card}{price}{how}" if self.count > 1 else f"{self.card}{price}"


def rank_cards(lineup: tuple[str, ...] = RENTAL_LINEUP) -> list[Card]:
    """The rental lineup, cheapest first; unpriced cards after the priced ones, smallest first."""
    cards = [c for c in CARDS if c.name in lineup]
    return sorted(cards, key=lambda c: (c.price_eur_h is None, c.price_eur_h or 0, c.nominal_gb))


def cheapest_options(check: Callable[[Card, int], tuple[bool, int, int]], counts=(1, 2, 4, 8),
                     lineup: tuple[str, ...] = RENTAL_LINEUP, how: str = "") -> list[CardOption]:
    """The cheapest single card that serves, then the cheapest priced multi-card set if it is cheaper or
    no single card serves. ``check(card, n)`` -> (serves, bytes per card, usable bytes per card)."""
    singles: list[CardOption] = []
    multis: list[CardOption] = []
    for n in counts:
        for c in rank_cards(lineup):
            ok, need, cap = check(c, n)
            if ok:
                price = c.price_eur_h * n if c.price_eur_h is not None else None
                (singles if n == 1 else multis).append(CardOption(c.name, n, price, need, cap, how if n > 1 else ""))
                break  # the cheapest card at this count
    out = singles[:1]
    priced = sorted((m for m in multis if m.price_eur_h is not None), key=lambda m: m.price_eur_h)
    best_multi = priced[0] if priced else (multis[0] if multis else None)
    if best_multi and (not out or out[0].price_eur_h is None or best_multi.price_eur_h is None
                       or best_multi.price_eur_h < out[0].price_eur_h):
        out.append(best_multi)
    return out


def cheapest_serving(cfg: LlmConfig, context: int | str | None = None, users: int = 1, weights: str = "16bit",
                     kv_dtype: str = "fp16", engine: str = "vllm", gpus: int | None = None,
                     **extra) -> list[CardOption]:
    """Cheapest card (or cards) of the guide's lineup on which serve_plan says 'fits'. ``extra``: serve_plan's
    engine options (max_num_batched_tokens, enforce_eager, vllm_version, gpu_layers, ...)."""
    counts = (gpus,) if gpus else (1, 2, 4, 8)

    def check(card: Card, n: int):
        try:
            p = serve_plan(cfg, context, users, weights, kv_dtype, engine, n, card, **extra)
        except VramBudgetError:  # e.g. heads not divisible by this card count
            return False, 0, 0
        return p.verdict == "fits", p.per_gpu_high, p.capacity_bytes

    how = {"vllm": "tensor parallel", "llama.cpp": "layers split", "ollama": "layers split"}[engine_key(engine)]
    return cheapest_options(check, counts, how=how)


# ---------------------------------------------------------------------------------------------
# Remedies
@dataclass(frozen=True)
class ServeRemedy(JsonFields):
    what: str
    per_gpu_high: int
    verdict: str
    cost: str


def serve_remedies(cfg: LlmConfig, plan: ServePlan, card: Card, weights: str, engine: str,
                   utilization: float | None = None, **extra) -> list[ServeRemedy]:
    """The LLM chapter's fixes at the same context, each re-evaluated on top of the previous ones until
    the card serves: a quantized KV cache (halves it), FP8/8-bit weights (halve them), fewer concurrent
    users, 4-bit weights (a quality cost: the guide says take a bigger card instead), then a second card
    (tensor parallel / layer split). A shorter context is the plan's ``max_context``, said apart."""
    ek = engine_key(engine)
    kw = dict(context=plan.context, users=plan.users, weights=weights, kv_dtype=plan.kv_dtype, engine=ek,
              gpus=plan.gpus, card=card, utilization=utilization, **extra)
    out: list[ServeRemedy] = []
    cur = plan
    for what, change, cost in _serve_ladder(plan, ek, weights):
        if cur.verdict == "fits":
            break
        try:
            nxt = serve_plan(cfg, **{**kw, **change})
        except VramBudgetError:
            continue
        if nxt.per_gpu_high < cur.per_gpu_high or nxt.verdict == "fits":
            kw.update(change)
            out.append(ServeRemedy(what, nxt.per_gpu_high, nxt.verdict, cost))
            cur = nxt
    return out


def _serve_ladder(plan: ServePlan, ek: str, weights: str):
    if plan.kv_dtype in ("fp16", "bf16"):
        kv = "fp8" if ek == "vllm" else "q8_0"
        yield f"{kv} KV cache (halves it)", {"kv_dtype": kv}, "negligible quality loss"
    w = normalize_weights(weights)
    if w in ("16bit", "file") and plan.weight_format in ("16bit", "F16", "BF16", "file"):
        yield "FP8 / 8-bit weights (halves them)", {"weights": "fp8" if ek == "vllm" else "8bit"}, "small quality cost"
    if plan.users > 1:
        yield f"fewer concurrent users: {max(1, plan.max_users)}", {"users": max(1, plan.max_users)}, "requests queue"
    if plan.weight_format not in ("awq", "Q4_K_M", "Q4_K_S", "Q4_0", "Q3_K_M", "Q2_K"):
        yield "4-bit weights (AWQ/GPTQ or GGUF Q4_K_M)", {"weights": "4bit"}, \
            "quality cost: the guide says take a bigger card instead"
    how = "tensor parallel" if ek == "vllm" else "layers split"
    yield f"{plan.gpus * 2} cards ({how})", {"gpus": plan.gpus * 2}, "a second card"
