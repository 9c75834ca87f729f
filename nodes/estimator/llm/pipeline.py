"""vLLM pipeline parallelism over mixed cards (--pipeline-parallel-size, VLLM_PP_LAYER_PARTITION)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import VramBudgetError
from ..machine.gpus import Card
from ..units import fmt_gib
from ..serial import JsonFields
from .model import Layout, LlmConfig, _count
from .engines import (ENGINES, VLLM_GRAPH_PER_LAYER, VLLM_NON_TORCH, VLLM_NON_TORCH_PER_RANK, VllmReserve,
                      vllm_reserve, vllm_rules, _big_card, _vllm_flags)
from .weights import kv_cache_bytes, normalize_kv, weight_format, weights_bytes, weights_layout, _kv_row
from .serve import PREFILL_MFU, ServePlan, _active_share, _context, _notes, _version_label


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
