"""The serving engines' own rules: vLLM's start-up reserve, llama.cpp's fit, Ollama's eras and layer split (ENGINES)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from ..errors import VramBudgetError
from ..machine.gpus import Card
from ..models.llm_quant import GGUF_FTYPES
from ..units import GiB
from ..serial import JsonFields
from .model import Layout, LlmConfig, _count

if TYPE_CHECKING:  # only an annotation: serve imports this module
    from .serve import ServePlan


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
