"""`vram-budget llm MODEL` and `vram-budget train MODEL`: size a rental before anything is installed.

MODEL is a Hugging Face folder (config.json + *.safetensors headers), a .gguf file, a known name
("Llama 3.1 8B", "qwen3:32b", ...) or, for ``train``, a diffusion model file (ComfyUI TrainLoraNode).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import replace

from .. import llm
from ..errors import VramBudgetError
from ..machine.gpus import CARDS, DRIVER_RESERVED, Card, find_card
from ..models.llm_quant import WEIGHT_FORMATS
from ..llm.training import (COMFY_ALGORITHMS, LEAK_HINT, METHODS, OPTIMIZERS, PRECISIONS, TrainSetup, TrainingBudget,
                       cheapest_training_cards, diffusion_lora_budget, diffusion_remedies, llm_training,
                       llm_training_remedies,
                       add_train_arguments, diffusion_train_kwargs, llm_max, train_setup_from_args, diffusion_info_for,
                       diffusion_max, trainer_assumption)
from ..units import GB, GiB, fmt_gib, fmt_params
from ..families import describe
from ..model_info import DIFFUSION
from ..llm import cheapest_options


def add_llm_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "llm", help="memory of serving an LLM (weights + KV cache + margin) on vLLM, llama.cpp or Ollama",
        description="Weights + KV cache + the 1-2 GB working margin of an LLM on a serving engine, whether a card "
                    "holds it, the engine flags to set, and the cheapest card of the guide's lineup.")
    p.add_argument("model", metavar="MODEL", help="Hugging Face folder, .gguf file or known name (e.g. 'Qwen3 32B')")
    p.add_argument("--context", type=int, help="tokens per conversation (prompt + answer); default: the engine's")
    p.add_argument("--users", type=int, default=1, help="concurrent conversations (default 1)")
    p.add_argument("--weights", help="16bit, fp8, 8bit, 4bit, awq, file (as stored) or a GGUF type such as Q4_K_M "
                                     "(default: as stored for files, 16bit for names)")
    p.add_argument("--kv-dtype", default="fp16", help="KV cache: fp16 (default), fp8 (vLLM), q8_0 / q4_0 (llama.cpp, Ollama)")
    p.add_argument("--engine", default="vllm", help="vllm (default), llama.cpp or ollama")
    p.add_argument("--gpus", type=int, default=1, help="cards (vLLM: tensor parallel; llama.cpp/Ollama: layers split)")
    p.add_argument("--gpu", help=f"card to check, or a comma list of cards for vLLM --pipeline-parallel, e.g. "
                                 f"'RTX 4090,RTX 3060' (known: {', '.join(c.name for c in CARDS)})")
    p.add_argument("--gpu-memory-utilization", type=float, dest="utilization",
                   help=f"vLLM's share of the card (default {llm.vllm_rules().utilization:.2f} in vLLM "
                        f"{llm.VLLM_ASSUMED_VERSION}+, 0.90 before; raised up to 0.95 when that is enough)")
    llm_engine_arguments(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_llm)

    t = subparsers.add_parser(
        "train", help="memory of fine-tuning an LLM (full / LoRA / QLoRA) or a ComfyUI diffusion LoRA",
        description="Weights + gradients + optimizer states + activations per card, the cheapest card of the "
                    "guide's lineup, and the guide's remedies in order.")
    t.add_argument("model", metavar="MODEL", help="Hugging Face folder, .gguf, known LLM name, or a diffusion model file")
    t.add_argument("--method", default="full", help=f"{', '.join(METHODS)} (LLMs; default full)")
    t.add_argument("--optimizer", default=None, help=f"{', '.join(OPTIMIZERS)} (default adamw)")
    t.add_argument("--precision", default="mixed", help=f"{', '.join(PRECISIONS)} (default mixed: bf16 + FP32 master)")
    t.add_argument("--batch", type=int, default=1, help="micro-batch per card (default 1)")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--seq", type=int, help="tokens per sample (LLMs; default 2048)")
    g.add_argument("--resolution", type=int, help="image side in pixels (diffusion LoRA; default 1024)")
    t.add_argument("--grad-ckpt", action="store_true", help="gradient checkpointing (≈20-30 %% slower)")
    t.add_argument("--gpus", type=int, default=1, help="cards (data parallel; with --zero sharded)")
    t.add_argument("--zero", type=int, default=0, help="DeepSpeed ZeRO / FSDP stage 1, 2 or 3")
    t.add_argument("--rank", type=int, default=16, help="LoRA rank (default 16)")
    t.add_argument("--algorithm", default="LoRA", help=f"diffusion LoRA: {', '.join(COMFY_ALGORITHMS)}")
    t.add_argument("--lora-dtype", default="bf16", help="diffusion LoRA: bf16 (ComfyUI default) or fp32")
    t.add_argument("--gpu", help="card to check")
    t.add_argument("--vram", type=float, help="free GPU memory in GiB (instead of a catalogue card)")
    add_train_arguments(t)
    t.add_argument("--json", action="store_true", help="machine-readable output")
    t.set_defaults(func=run_train)


def llm_engine_arguments(p) -> None:
    """The serving engines' own knobs (issue 23): vLLM's profile, llama.cpp -ngl, free memory."""
    p.add_argument("--max-model-len", dest="max_model_len",
                   help="vLLM --max-model-len: tokens, or 'auto' for the longest context that fits (= --context)")
    p.add_argument("--max-num-batched-tokens", type=int, help="vLLM's profiling / chunked-prefill budget "
                                                              "(default 2048; 8192 on >= 70 GiB cards)")
    p.add_argument("--max-num-seqs", type=int, help="vLLM's sequence limit for the sampler warm-up (default 256/1024)")
    p.add_argument("--enforce-eager", action="store_true", help="vLLM without CUDA graphs (no graph memory)")
    p.add_argument("--vllm-version", help=f"apply an older vLLM's memory rules, e.g. 0.6.4 (default "
                                          f"{llm.VLLM_ASSUMED_VERSION})")
    p.add_argument("--llamacpp-version", dest="llamacpp_version",
                   help=f"the llama.cpp build whose rules apply, e.g. b6000 (default {llm.LLAMACPP_ASSUMED_VERSION}; from "
                        f"about b{llm.LLAMACPP_FIT_FROM} -c defaults to the model's context, fitted to free memory)")
    p.add_argument("--ollama-version", dest="ollama_version",
                   help=f"the Ollama release whose rules apply (default {llm.OLLAMA_ASSUMED_VERSION}: llama-server, "
                        "llama.cpp places the layers; 0.12.10 or older: the llm/memory.go estimator; the default "
                        "num_ctx is 4096 before 0.15.5, then 4k/32k/256k by the cards' memory)")
    p.add_argument("-ngl", "--n-gpu-layers", type=int, dest="n_gpu_layers",
                   help="llama.cpp -ngl N / Ollama num_gpu as an input: what N layers on the GPU need")
    p.add_argument("--vram", type=float, help="free GPU memory in GiB (instead of a catalogue card)")
    p.add_argument("--n-cpu-moe", "-ncmoe", dest="n_cpu_moe",
                   help="llama.cpp: keep the experts of the first N layers on the CPU; 'all' (= --cpu-moe) or "
                        "'auto' (the fewest that make the rest fit)")
    p.add_argument("--tensor-split", "-ts", dest="tensor_split", help="llama.cpp: one share per card, e.g. 3,1")
    p.add_argument("--pipeline-parallel", action="store_true", dest="pipeline_parallel",
                   help="vLLM --pipeline-parallel-size = the cards of --gpu 'A,B,...' (or --gpu X --gpus N): the "
                        "VLLM_PP_LAYER_PARTITION that fits them with the largest KV cache")
    p.add_argument("--pp-layer-partition", dest="pp_layer_partition",
                   help="vLLM VLLM_PP_LAYER_PARTITION as an input, layers per card, e.g. 22,10 (implies "
                        "--pipeline-parallel)")


def _engine_extra(args) -> dict:
    n = args.n_cpu_moe
    if n is not None and str(n).strip().lower() not in ("all", "auto"):
        try:
            n = int(n)
        except ValueError:
            raise VramBudgetError(f"--n-cpu-moe {args.n_cpu_moe!r}: give a number of layers, 'all' or 'auto'") from None
    return dict(max_num_batched_tokens=args.max_num_batched_tokens, max_num_seqs=args.max_num_seqs,
                enforce_eager=args.enforce_eager, vllm_version=args.vllm_version, gpu_layers=args.n_gpu_layers,
                n_cpu_moe=n, tensor_split=args.tensor_split, llamacpp_version=getattr(args, "llamacpp_version", None),
                ollama_version=getattr(args, "ollama_version", None))


def _context_arg(args):
    if args.max_model_len is None:
        return args.context
    if args.context is not None:
        raise VramBudgetError("--context and --max-model-len name the same thing: give one")
    v = str(args.max_model_len).strip().lower()
    if v in ("auto", "-1"):
        return "auto"
    try:
        return int(v)
    except ValueError:
        raise VramBudgetError(f"--max-model-len {args.max_model_len!r}: give a number of tokens or 'auto'") from None


def _vram_card(vram: float | None) -> Card | None:
    if vram is None:
        return None
    if not math.isfinite(vram) or not 0.5 <= vram <= 4096:
        raise VramBudgetError(f"--vram {vram}: give the free GPU memory in GiB, from 0.5 to 4096")
    return Card(f"{vram:g} GiB free", vram + DRIVER_RESERVED / GiB, True)  # type: ignore[arg-type]


def _card(name: str | None) -> Card | None:
    if name is None:
        return None
    if not name.strip():
        raise VramBudgetError("--gpu '': name a card, e.g. 'RTX 4090'")
    return find_card(name)


def _llm_cards(args) -> list[Card] | None:
    """``llm --gpu 'A,B,...'``: the cards of a list (None for a single name)."""
    if args.gpu is None or "," not in args.gpu:
        return None
    names = [n.strip() for n in args.gpu.split(",")]
    if not all(names):
        raise VramBudgetError(f"--gpu {args.gpu!r}: an empty name in the list; give cards like 'RTX 4090,RTX 3060'")
    cards = []
    for i, name in enumerate(names):
        try:
            cards.append(find_card(name))
        except VramBudgetError:
            raise VramBudgetError(f"--gpu {args.gpu!r}: unknown card {name!r} (card {i + 1} of {len(names)}); known "
                                  f"cards: {', '.join(c.name for c in CARDS)}") from None
    if args.gpus != 1 and args.gpus != len(cards):
        raise VramBudgetError(f"--gpus {args.gpus} but --gpu names {len(cards)} cards: give one or the other")
    return cards


def _split_cards(args) -> list[Card] | None:
    """The cards of a vLLM pipeline (--pipeline-parallel / --pp-layer-partition), None without one. A list of
    equal cards without it is --gpus N of that card; mixed cards need it (or llama.cpp's --tensor-split)."""
    cards = _llm_cards(args)
    pipeline = args.pipeline_parallel or args.pp_layer_partition is not None
    if not pipeline:
        if cards is None:
            return None
        if len({c.name for c in cards}) > 1:
            names = ", ".join(c.name for c in cards)
            if llm.engine_key(args.engine) == "vllm":
                raise VramBudgetError(
                    f"--gpu {args.gpu!r}: mixed cards ({names}) with tensor parallelism: vLLM shards every layer "
                    "evenly over --tensor-parallel-size ranks and needs the same memory on each, so the smallest card "
                    "would set the limit; add --pipeline-parallel to split the layers over them "
                    "(VLLM_PP_LAYER_PARTITION)")
            raise VramBudgetError(f"--gpu {args.gpu!r}: a list of mixed cards is for vLLM --pipeline-parallel; "
                                  f"for {llm.ENGINES[llm.engine_key(args.engine)].name} give one card with --gpus "
                                  f"{len(cards)} (llama.cpp: and --tensor-split, one share per card)")
        args.gpu, args.gpus = cards[0].name, len(cards)  # equal cards: --gpus N of that card
        return None
    if llm.engine_key(args.engine) != "vllm":
        raise VramBudgetError("--pipeline-parallel / --pp-layer-partition are vLLM's (llama.cpp splits layers with "
                              "--tensor-split)")
    if args.vram is not None:
        raise VramBudgetError("--pipeline-parallel: name the cards with --gpu 'A,B,...' (--vram is one card's memory)")
    if cards is None:
        if args.gpu is None:
            raise VramBudgetError("--pipeline-parallel: name the cards with --gpu, e.g. --gpu 'RTX 4090,RTX 3060' "
                                  "(or --gpu X --gpus N)")
        cards = [_card(args.gpu)] * args.gpus
    return cards


def _finite(flag: str, value, lo: float, hi: float):
    if value is not None and (not math.isfinite(value) or not lo <= value <= hi):
        raise VramBudgetError(f"{flag} {value}: give a number from {lo:g} to {hi:g}")
    return value


def _fail(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 2


def _gb(n: int) -> str:
    return f"{fmt_gib(n)} ({n / GB:.1f} GB)"


# ---------------------------------------------------------------------------------------------
def run_llm(args) -> int:
    try:
        _finite("--gpu-memory-utilization", args.utilization, 0.05, 1.0)
        if args.vram is not None and args.gpu is not None:
            raise VramBudgetError("--vram and --gpu: give one (the free memory, or a card)")
        stages = _split_cards(args)
        if stages is not None:
            return _run_pipeline(args, stages)
        card = _card(args.gpu) or _vram_card(args.vram)
        cfg = load_llm(args.model)
        weights = args.weights or ("file" if cfg.stored is not None or cfg.quant is not None else "16bit")
        ex = _engine_extra(args)
        context = _context_arg(args)
        kw = dict(context=context, users=args.users, weights=weights, kv_dtype=args.kv_dtype,
                  engine=args.engine, gpus=args.gpus)
        llm.serve_plan(cfg, **{**kw, "context": None if context == "auto" else context}, utilization=args.utilization,
                       **{**ex, "n_cpu_moe": 0 if ex["n_cpu_moe"] == "auto" else ex["n_cpu_moe"]})  # validates first
        options = llm.cheapest_serving(cfg, **{**kw, "gpus": args.gpus if args.gpus > 1 else None}, **ex)
        target, remedies = _target(card, options), []
        if target is None and context == "auto":
            raise VramBudgetError(f"--max-model-len auto: no single card of the lineup holds {cfg.name}; "
                                  "give --gpu or --vram (with --gpus for several)")
        plan = llm.serve_plan(cfg, **kw, card=target, utilization=args.utilization, **ex)
        if target is not None and plan.verdict != "fits":
            remedies = llm.serve_remedies(cfg, plan, target, weights, args.engine, args.utilization, **ex)
        elif target is None and args.gpus == 1:  # no single card serves: what would fit the largest one
            biggest = _largest_card()
            remedies = llm.serve_remedies(cfg, llm.serve_plan(cfg, **kw, card=biggest, utilization=args.utilization,
                                                              **ex),
                                          biggest, weights, args.engine, args.utilization, **ex)
            remedies = [replace(r, what=f"on one {biggest.name}: {r.what}") for r in remedies]
    except VramBudgetError as exc:
        return _fail(exc)
    if args.json:
        d = {**plan.to_dict(), "config": _model_dict(cfg), "kv_bytes_per_token": llm.kv_bytes_per_token(cfg, plan.kv_dtype),
             "cheapest": [o.to_dict() for o in options], "remedies": [r.to_dict() for r in remedies]}
        print(json.dumps(d, indent=2))
        return 0
    print(format_serve(cfg, plan, options, remedies))
    return 0


def _run_pipeline(args, cards: list[Card]) -> int:
    """vLLM pipeline parallelism over ``cards`` (issue 23): the layer split, per card, and the flags."""
    try:
        cfg = load_llm(args.model)
        weights = args.weights or ("file" if cfg.stored is not None or cfg.quant is not None else "16bit")
        ex = _engine_extra(args)
        ex.pop("llamacpp_version", None)  # vLLM's pipeline parallelism
        ex.pop("ollama_version", None)
        context = _context_arg(args)
        plan = llm.serve_pipeline(cfg, cards, context, args.users, weights, args.kv_dtype, args.utilization,
                                  args.pp_layer_partition, **ex)
        options = llm.cheapest_serving(cfg, context=None if context == "auto" else context, users=args.users,
                                       weights=weights, kv_dtype=args.kv_dtype, engine="vllm",
                                       **{k: v for k, v in ex.items() if k not in ("gpu_layers", "n_cpu_moe",
                                                                                   "tensor_split")})
    except VramBudgetError as exc:
        return _fail(exc)
    if args.json:
        d = {**plan.to_dict(), "config": _model_dict(cfg),
             "kv_bytes_per_token": llm.kv_bytes_per_token(cfg, plan.kv_dtype),
             "cheapest": [o.to_dict() for o in options], "remedies": []}
        print(json.dumps(d, indent=2))
        return 0
    print(format_serve(cfg, plan, options, []))
    return 0


def _target(card: Card | None, options) -> Card | None:
    """The card to judge on: the one asked for, else the cheapest single card that serves."""
    if card is not None:
        return card
    return find_card(options[0].card) if options and options[0].count == 1 else None


def _largest_card() -> Card:
    return max(llm.rank_cards(), key=lambda c: c.nominal_gb)


def load_llm(model: str) -> llm.LlmConfig:
    """llm.load_model, plus ComfyUI single-file text encoders (no config.json: shapes + known configs)."""
    if os.path.isfile(model) and model.lower().endswith((".safetensors", ".sft")) and \
            not os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(model)), "config.json")):
        info = describe(model)
        if info.arch.get("kv_heads"):
            return llm.config_from_arch(info.label, info.arch, info.params)
        raise VramBudgetError(f"{model}: no config.json next to it and not an LLM text encoder ({info.label})")
    return llm.load_model(model)


def _model_dict(cfg: llm.LlmConfig) -> dict:
    return dict(name=cfg.name, source=cfg.source, layers=cfg.layers, hidden=cfg.hidden, heads=cfg.heads,
                kv_heads=cfg.kv_heads, head_dim=cfg.head_dim, vocab=cfg.vocab, intermediate=cfg.intermediate,
                params=cfg.params, tied_embeddings=cfg.tied_embeddings, experts=cfg.experts,
                sliding_window=cfg.sliding_window, sliding_layers=cfg.sliding_layers, max_context=cfg.max_context,
                stored_format=cfg.stored_format or None, stored_bytes=cfg.stored.total if cfg.stored else None,
                quantization=dict(method=cfg.quant.method, bits=round(cfg.quant.bits, 4), ignore=list(cfg.quant.ignore))
                if cfg.quant else None, module_dtypes=llm.module_dtype_summary(cfg) or None)


def _reserve_line(p: llm.ServePlan) -> str:
    r = p.vllm_reserve
    if r:
        graphs = "--enforce-eager" if r["enforce_eager"] else fmt_gib(r["cuda_graph_bytes"])
        return (f"  reserve   {_gb(p.reserve_bytes):>24}  vLLM profile of {r['max_num_batched_tokens']:,} tokens: "
                f"activations {fmt_gib(r['activation_bytes'])}, sampler {fmt_gib(r['sampler_bytes'])}, non-torch "
                f"{fmt_gib(r['non_torch_bytes'])}, CUDA graphs {graphs}")
    if p.ollama:
        return (f"  reserve   {_gb(p.reserve_bytes):>24}  Ollama: 457 MiB minimum + compute graph"
                f"{' + vision graph' if p.ollama.get('projector_graph') else ''}")
    return f"  margin    {'1-2 GB':>24}  working margin (activations, CUDA context)"


def _pipeline_lines(p: llm.ServePlan) -> list[str]:
    pp = p.pipeline
    default = ",".join(map(str, pp["default_partition"]))
    if pp["custom_needed"]:
        said = f"vLLM's default {default} does not fit"
    elif pp["vllm_pp_layer_partition"] == default:
        said = "vLLM's default split"
    elif pp["default_fits"]:
        said = f"vLLM's default {default} holds {pp['default_kv_cache_tokens']:,} tokens"
    else:
        said = f"vLLM's default {default} does not fit either"
    out = [f"  pipeline  --pipeline-parallel-size {pp['pipeline_parallel_size']}, "
           f"VLLM_PP_LAYER_PARTITION=\"{pp['vllm_pp_layer_partition']}\" ({pp['partition']}; {said})"]
    for s in pp["per_card"]:
        last = s["first_layer"] + s["layers"] - 1
        out.append(f"    rank {s['rank']} {s['card']:<12} layers {s['first_layer']}-{last} ({s['layers']}): weights "
                   f"{fmt_gib(s['weights_bytes'])} + KV {fmt_gib(s['kv_bytes'])} + reserve "
                   f"{fmt_gib(s['reserve_bytes'])} = {fmt_gib(s['total_bytes'])} of {fmt_gib(s['capacity_bytes'])}: "
                   f"{'fits' if s['fits'] else 'does not fit'} (room for {s['kv_cache_tokens']:,} tokens)")
    return out


def format_serve(cfg: llm.LlmConfig, p: llm.ServePlan, options, remedies) -> str:
    kvtok = llm.kv_bytes_per_token(cfg, p.kv_dtype)
    lines = [f"{cfg.name} on {p.engine} — {cfg.source}",
             f"  {cfg.params / 1e9:.2f}B parameters, {cfg.layers} layers, {cfg.kv_heads} KV heads × {cfg.head_dim}",
             f"  weights   {_gb(p.weights_bytes):>24}  {WEIGHT_FORMATS.get(p.weight_format, cfg.stored_format)}",
             f"  KV cache  {_gb(p.kv_bytes):>24}  {p.context:,} tokens × {p.users} user(s), {p.kv_dtype}: "
             f"{kvtok / 1024:.0f} KiB/token",
             _reserve_line(p) if not p.pipeline else
             f"  reserve   {_gb(p.reserve_bytes):>24}  vLLM's profile on the rank that needs most (the sampler "
             "warm-up only on the last)"]
    if p.pipeline:
        lines += _pipeline_lines(p)
    else:
        lines.append(f"  per card  {_gb(p.per_gpu_high):>24}  on each of {p.gpus} card(s)" if p.gpus > 1 else
                     f"  needs     {_gb(p.per_gpu_high):>24}")
    if p.card:
        share = f", vLLM share {p.utilization:.2f} = {fmt_gib(p.capacity_bytes)}" if p.engine == "vLLM" else ""
        verdict = {"fits": "fits", "tight": "tight (fits only with a 1 GB margin or fewer users)",
                   "offload": f"does not fit: {p.gpu_layers} of {p.layers + 1} layers on the GPU (-ngl), the rest "
                              "on the CPU, several times slower", "oom": "does not fit"}[p.verdict]
        lines.append(f"  on {p.card} (pipeline parallel), vLLM share {p.utilization:.2f} of each card: {verdict}"
                     if p.pipeline else
                     f"  on {p.gpus} × {p.card}{share}: {verdict}" if p.gpus > 1 else
                     f"  on {p.card}{share}: {verdict}")
        if p.verdict in ("fits", "tight") and p.max_context:
            lines.append(f"  room for {p.max_users} conversation(s) of {p.context:,} tokens, or one of "
                         f"{p.max_context:,} tokens")
        elif p.max_context:
            lines.append(f"  a shorter context fits: {p.max_context:,} tokens per conversation")
    if p.engine == "vLLM" and p.card:
        lines.append(f"  GPU KV cache size: {p.kv_cache_tokens:,} tokens")
        lines.append(f"  Maximum concurrency for {p.context:,} tokens per request: {p.max_concurrency:.2f}x")
    if p.ollama and p.card:
        o = p.ollama
        lines.append(f"  Ollama: layers.offload={o['layers_offload']} of layers.model={o['layers_model']}, "
                     f"graph {fmt_gib(o['graph_full_bytes'])} full / {fmt_gib(o['graph_partial_bytes'])} partial"
                     + (f", vision projector {fmt_gib(o['projector_weights'] + o['projector_graph'])}"
                        if o['projector_weights'] else ""))
    if p.n_cpu_moe:
        lines.append(f"  experts of {p.n_cpu_moe} of {p.layers} layers on the CPU: {_gb(p.cpu_moe_bytes)}")
    if p.decode_tokens_per_s:
        lines.append(f"  speed (estimate): ~{p.decode_tokens_per_s:,.0f} tokens/s decode, "
                     f"~{p.prefill_tokens_per_s:,.0f} tokens/s prefill ({p.speed_basis.removeprefix('estimate: ')})")
    if p.engine_version:
        lines.append(f"  rules: {p.engine_version}")
    if p.flags or p.env:
        env = " ".join(f"{k}={v}" for k, v in p.env.items())
        lines.append("  set: " + "  ".join(([env] if env else []) + list(p.flags)))
    lines += [f"  note: {n}" for n in p.notes]
    lines.append("  cheapest: " + (" or ".join(o.label() for o in options) if options else
                                   "no card of the lineup (RTX 4090 ... B200, up to 8 of them) serves it"))
    if remedies:
        lines.append("  in the guide's order:")
        lines += [f"    - {r.what}: {_gb(r.per_gpu_high)} per card, {r.verdict} ({r.cost})" for r in remedies]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
def run_train(args) -> int:
    try:
        if args.vram is not None and args.gpu is not None:
            raise VramBudgetError("--vram and --gpu: give one (the free memory, or a card)")
        card = _card(args.gpu) or _vram_card(args.vram)
        diffusion = diffusion_info_for(args.model, _diffusion_info)
        if diffusion is not None:
            return _run_diffusion_train(args, diffusion, card)
        if args.resolution is not None:
            raise VramBudgetError("--resolution is for diffusion models; give --seq for an LLM")
        cfg = load_llm(args.model)
        setup = train_setup_from_args(args)
        budget = llm_training(cfg, setup)
        options = cheapest_training_cards(cfg, setup)
        target = _target(card, options)
        capacity = target.total_bytes if target else None
        remedies = llm_training_remedies(cfg, setup, capacity) if capacity and budget.peak_high > capacity else []
        if target is None and setup.gpus == 1:  # no single card holds it: what would fit the largest one
            biggest = _largest_card()
            remedies = [replace(r, what=f"on one {biggest.name}: {r.what}")
                        for r in llm_training_remedies(cfg, setup, biggest.total_bytes)]
        best = _max_fit(args, target, lambda cap: llm_max(cfg, setup, cap, args.max))
    except VramBudgetError as exc:
        return _fail(exc)
    if args.json:
        d = {"model": cfg.name, **budget.to_dict(), "config": _model_dict(cfg), "card": target.name if target else None,
             "capacity_bytes": capacity, "fits": capacity is not None and budget.peak_high <= capacity,
             "cheapest": [o.to_dict() for o in options], "remedies": [r.to_dict() for r in remedies],
             "leak_hint": LEAK_HINT, "assumes": trainer_assumption(args), **best}
        print(json.dumps(d, indent=2))
        return 0
    print(format_training(budget, target, options, remedies, best))
    print(f"  assumes: {trainer_assumption(args)}")
    return 0


_ITEM_LABELS = {"weights": "weights", "gradients": "gradients", "master_weights": "FP32 master copy",
                "optimizer_states": "optimizer states", "zero3_gather": "ZeRO-3 gathered layers",
                "activations": "activations", "logits": "loss logits", "adapter": "adapter parameters",
                "optimizer_step": "optimizer step temporaries", "autocast_copies": "autocast 16-bit copies",
                "dequantized_weight": "dequantized 4-bit layer"}


def _max_fit(args, target: Card | None, search) -> dict:
    """``--max batch|seq``: {"max": what, "max_value": n} on the card asked for (or --vram), else the cheapest."""
    if args.max is None:
        return {}
    if target is None:
        raise VramBudgetError(f"--max {args.max}: give --gpu or --vram (no single card of the lineup holds it)")
    return {"max": args.max, "max_value": search(target.total_bytes), "max_card": target.name}


def format_training(b: TrainingBudget, card: Card | None, options, remedies, best: dict | None = None) -> str:
    lines = [b.label, f"  trainable parameters {fmt_params(b.trainable_params)}"]
    for k, v in b.items.items():
        if v:
            lines.append(f"  {_ITEM_LABELS.get(k, k):28}{_gb(v):>24}")
    lines.append(f"  {'before activations':28}{_gb(b.before_activations):>24}")
    lines.append(f"  {'peak per card (+1-2 GB)':28}{_gb(b.peak_high):>24}")
    if card:
        ok = b.peak_high <= card.total_bytes
        lines.append(f"  on {card.name} ({fmt_gib(card.total_bytes)}): {'fits' if ok else 'does not fit'}")
    if best:
        unit = {"batch": "micro-batch", "seq": "tokens per sample", "resolution": "px"}[best["max"]]
        lines.append(f"  largest that fits on {best['max_card']}: " +
                     (f"{best['max_value']:,} {unit}" if best["max_value"] else f"none (even 1 {unit} does not fit)"))
    lines += [f"  note: {n}" for n in b.notes]
    lines.append("  cheapest: " + (" or ".join(o.label() for o in options) if options else
                                   "no card of the lineup (up to 8 cards) holds it"))
    if remedies:
        lines.append("  in the guide's order:")
        lines += [f"    - {r.what}: {_gb(r.peak_high)} ({r.cost})" for r in remedies]
    lines.append(f"  {LEAK_HINT}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Diffusion LoRA (ComfyUI TrainLoraNode rules) from a model file
def _diffusion_info(model: str):
    if not (os.path.isfile(model) and model.lower().endswith((".safetensors", ".sft", ".gguf"))):
        return None
    info = describe(model)
    return info if info.kind == DIFFUSION else None


def _run_diffusion_train(args, info, card: Card | None) -> int:
    try:
        kw = diffusion_train_kwargs(args)
        budget = diffusion_lora_budget(info, **kw)
        options = cheapest_options(lambda c, n: (budget.peak_high <= c.total_bytes, budget.peak_high, c.total_bytes),
                                   counts=(1,))
        target = card or (find_card(options[0].card) if options else None)
        remedies = []
        if card is not None and budget.peak_high > card.total_bytes:
            remedies = diffusion_remedies(info, card.total_bytes, **kw)
        best = _max_fit(args, target, lambda cap: diffusion_max(info, kw, cap, args.max))
    except VramBudgetError as exc:
        return _fail(exc)
    if args.json:
        d = {**budget.to_dict(), "card": target.name if target else None,
             "capacity_bytes": target.total_bytes if target else None,
             "fits": target is not None and budget.peak_high <= target.total_bytes,
             "cheapest": [o.to_dict() for o in options], "remedies": [r.to_dict() for r in remedies],
             "leak_hint": LEAK_HINT, "assumes": trainer_assumption(args), **best}
        print(json.dumps(d, indent=2))
        return 0
    print(format_training(budget, target, options, remedies, best))
    print(f"  assumes: {trainer_assumption(args)}")
    return 0


def main(argv=None) -> int:  # python -m ...cli_llm llm MODEL
    parser = argparse.ArgumentParser(prog="vram-budget")
    add_llm_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
