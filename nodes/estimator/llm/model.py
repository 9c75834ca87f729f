"""What an LLM is: its config (LlmConfig, Layout) read from a Hugging Face folder, a GGUF file or a known name."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Mapping

from . import llm_models
from ..errors import ModelFileError, VramBudgetError
from ..models.llm_quant import GGML_BLOCK, CheckpointQuant, checkpoint_quant, text_params
from ..units import GB
from ..files import inspect_file


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


def _count(what: str, n, lo: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < lo:
        raise VramBudgetError(f"{what} {n!r}: give a whole number >= {lo}")
    return n
