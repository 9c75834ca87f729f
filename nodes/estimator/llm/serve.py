"""A serving plan on one card or several (tensor parallel / layer split), the cheapest card and the fixes."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from ..errors import VramBudgetError
from ..machine.gpus import CARDS, RENTAL_LINEUP, Card
from ..models.llm_quant import GGUF_FTYPES, tensor_list
from ..units import fmt_gib
from ..serial import JsonFields, Remedy
from .model import Layout, LlmConfig, MARGIN_HIGH, MARGIN_LOW, _count
from .engines import (ENGINES, Engine, LLAMACPP_FIT_FROM, LLAMACPP_FIT_MIN_CTX, OLLAMA_LLAMACPP_BUILD,
                      OLLAMA_LLAMA_SERVER_FROM, OLLAMA_MEMORY_GO_UNTIL, OLLAMA_MINIMUM_MEMORY, VllmReserve,
                      VllmRules, engine_key, llamacpp_build, ollama_default_context, ollama_estimate, ollama_release,
                      vllm_reserve, vllm_rules, _driver_total, _ollama_flags)
from .weights import (kv_cache_bytes, normalize_kv, normalize_weights, weight_format, weights_bytes, weights_layout,
                      _kv_row)


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
class ServeRemedy(Remedy):
    what: str
    per_gpu_high: int
    verdict: str
    cost: str

    _remedy_fields = ("what", None, "cost")  # per_gpu_high is the need after the fix, not a saving


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
