"""Training memory: weights + gradients + optimizer states + activations (FACTS.md "Training").

LLMs (``llm_training``): full fine-tuning, LoRA and QLoRA with AdamW / 8-bit AdamW / SGD / RMSprop,
mixed precision, gradient checkpointing and ZeRO/FSDP sharding over N cards. Per parameter, full
fine-tuning with AdamW in mixed precision keeps 2 B of 16-bit weights, 2 B of gradients, a 4 B FP32
master copy and 8 B of FP32 optimizer states = 16 B: a 7B model needs ~112 GB before activations.

ComfyUI's TrainLoraNode (``comfy_lora_training``): what ComfyUI 0.18.2 really allocates, read from
comfy_extras/nodes_train.py and comfy/weight_adapter/*.py (cited per function): an adapter on every
module with a ``weight_function`` (Linear, Conv, norms, Embedding: comfy/ops.py), created in FP32 and
cast to ``lora_dtype``; full-size ``diff`` tensors for every 1-D weight and every bias; a plain
torch.optim optimizer on those parameters, whose states take the parameters' dtype; no FP32 master
copy.

Activations of an LLM decoder layer, per token, are the tensors autograd keeps for the backward
pass (the accounting of Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", §4, for a Llama-style layer with fused SDPA/flash attention that keeps its output
and log-sum-exp, no N×N matrix): the two RMSNorm inputs and outputs (4·h), q/k/v (hq + 2·hkv), the
attention output (hq), the gated MLP's gate, up, activation and product (4·i): 4h + 2hq + 2hkv + 4i
elements (+ q/k-norm inputs, Gemma's extra norms, LoRA's rank-r intermediates). With gradient
checkpointing per decoder layer (transformers' gradient_checkpointing_enable) only each layer's input
(h) is kept, and one layer is recomputed at a time. The loss keeps the 16-bit logits and the FP32
log-softmax: 6 bytes per vocabulary entry per token.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from .errors import VramBudgetError
from .gpus import Card
from .llm import MARGIN_HIGH, MARGIN_LOW, CardOption, LlmConfig, cheapest_options
from .llm_quant import NF4_BITS, tensor_list
from .units import GB
from .files import inspect_file
from .memory import latent_tokens, text_tokens_for
from .workload import LatentShape
from .serial import JsonFields

METHODS = ("full", "lora", "qlora")
OPTIMIZERS = ("adamw", "adam", "adamw8bit", "sgd", "rmsprop")
PRECISIONS = ("mixed", "bf16", "fp32")
LORA_TARGETS = {  # PEFT target_modules: "all-linear" (QLoRA paper's choice) or attention only
    "all-linear": ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"),
    "attention": ("attn_q", "attn_k", "attn_v", "attn_output"),
}


@dataclass(frozen=True)
class TrainSetup:
    method: str = "full"  # full | lora | qlora
    optimizer: str = "adamw"  # adamw | adam | adamw8bit | sgd | rmsprop
    precision: str = "mixed"  # mixed (16-bit compute + FP32 master) | bf16 (pure) | fp32
    batch: int = 1  # micro-batch per card
    seq: int = 2048  # tokens per sample
    grad_ckpt: bool = False
    gpus: int = 1
    zero: int = 0  # DeepSpeed ZeRO / FSDP stage: 1 optimizer states, 2 + gradients, 3 + weights
    rank: int = 16
    targets: str = "all-linear"
    grad_accum: int = 1  # does not change memory; carried so remedies can say the effective batch

    def validate(self) -> "TrainSetup":
        for name, value, allowed in (("--method", self.method, METHODS), ("--optimizer", self.optimizer, OPTIMIZERS),
                                     ("--precision", self.precision, PRECISIONS),
                                     ("--lora-targets", self.targets, tuple(LORA_TARGETS))):
            if value not in allowed:
                raise VramBudgetError(f"{name} {value!r}: use {', '.join(allowed)}")
        for name, value, lo, hi in (("--batch", self.batch, 1, 1 << 20), ("--seq", self.seq, 1, 1 << 24),
                                    ("--gpus", self.gpus, 1, 4096), ("--zero", self.zero, 0, 3),
                                    ("--rank", self.rank, 1, 1 << 16), ("--grad-accum", self.grad_accum, 1, 1 << 20)):
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise VramBudgetError(f"{name} {value!r}: give a whole number from {lo} to {hi}")
        return self


@dataclass(frozen=True)
class TrainingBudget:
    """Bytes per card, itemised; ``peak_low``/``peak_high`` add the guide's 1-2 GB working margin."""

    label: str
    items: Mapping[str, int]  # weights, gradients, master_weights, optimizer_states, activations, ...
    trainable_params: int
    peak_low: int
    peak_high: int
    notes: tuple[str, ...] = ()
    setup: Mapping[str, object] = field(default_factory=dict)

    @property
    def before_activations(self) -> int:
        return sum(v for k, v in self.items.items() if k not in ("activations", "logits", "optimizer_step"))

    def to_dict(self) -> dict:
        return dict(label=self.label, items=dict(self.items), trainable_params=self.trainable_params,
                    before_activations=self.before_activations, peak_low=self.peak_low, peak_high=self.peak_high,
                    notes=list(self.notes), setup=dict(self.setup))


def _peak(items: Mapping[str, int]) -> int:
    """Persistent terms + the larger of (activations + logits) and the optimizer step's temporaries:
    activations are freed by the time the optimizer steps."""
    transient = items.get("activations", 0) + items.get("logits", 0)
    persistent = sum(v for k, v in items.items() if k not in ("activations", "logits", "optimizer_step"))
    return persistent + max(transient, items.get("optimizer_step", 0))


# ---------------------------------------------------------------------------------------------
# LLMs
def state_bytes_per_param(optimizer: str, precision: str) -> int:
    """Optimizer state bytes per trainable parameter: Adam/AdamW two states (exp_avg, exp_avg_sq) in the
    master dtype (FP32 = 8 B; pure bf16 = 4 B); bitsandbytes 8-bit AdamW two 1-byte states (~2 B);
    RMSprop one (square_avg); SGD without momentum none (torch.optim defaults)."""
    unit = 2 if precision == "bf16" else 4
    return {"adamw": 2 * unit, "adam": 2 * unit, "adamw8bit": 2, "rmsprop": unit, "sgd": 0}[optimizer]


def lora_params(cfg: LlmConfig, rank: int, targets: str = "all-linear") -> int:
    """rank × (in + out) for every targeted linear (MoE experts: each expert's linears)."""
    mods = LORA_TARGETS[targets]
    total = 0
    for t in tensor_list(cfg):
        if t.category in mods:
            experts = t.shape[0] if len(t.shape) == 3 else 1
            out_f, in_f = t.shape[-2], t.shape[-1]
            total += experts * rank * (in_f + out_f)
    return total


def layer_activation_elements(cfg: LlmConfig, rank: int = 0, targets: str = "all-linear") -> int:
    """Elements autograd keeps per token for one decoder layer (module docstring)."""
    h, hq, hkv = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    inter = cfg.experts_per_token * cfg.moe_intermediate if cfg.experts else cfg.intermediate
    n = 4 * h + 2 * hq + 2 * hkv + 4 * inter + cfg.extra_norms * h
    if cfg.qk_norm:
        n += hq + hkv
    if cfg.experts:
        n += cfg.experts  # router logits
    if rank:
        n += rank * len(LORA_TARGETS[targets]) * (cfg.experts_per_token or 1)
    return n


def activation_bytes(cfg: LlmConfig, s: TrainSetup) -> tuple[int, int]:
    """(decoder activations, loss logits) per card for one micro-batch."""
    unit = 4 if s.precision == "fp32" else 2
    rank = s.rank if s.method != "full" else 0
    per_layer = layer_activation_elements(cfg, rank, s.targets) * unit
    tokens = s.batch * s.seq
    if s.grad_ckpt:
        acts = tokens * (cfg.layers * cfg.hidden * unit + per_layer)
    else:
        acts = tokens * cfg.layers * per_layer
    return acts, tokens * cfg.vocab * 6


def llm_training(cfg: LlmConfig, setup: TrainSetup) -> TrainingBudget:
    """Bytes per card of training ``cfg`` with ``setup`` (module docstring for every term)."""
    s = setup.validate()
    n = s.gpus
    z = s.zero if n > 1 else 0
    params = cfg.params
    wunit = 4 if s.precision == "fp32" else 2
    notes: list[str] = []
    if s.method == "full":
        trainable = params
        weights = params * wunit
        grads = params * wunit
        master = params * 4 if s.precision == "mixed" else 0
        states = params * state_bytes_per_param(s.optimizer, s.precision)
    else:
        trainable = lora_params(cfg, s.rank, s.targets)
        weights = _frozen_weights(cfg, s)
        aunit = 2 if s.precision == "bf16" else 4  # PEFT keeps adapters in FP32 next to a 16-bit base
        grads = trainable * aunit
        master = 0
        states = trainable * state_bytes_per_param(s.optimizer, "bf16" if s.precision == "bf16" else "fp32")
    items = {
        "weights": _shard(weights, n, z >= 3),
        "gradients": _shard(grads, n, z >= 2),
        "master_weights": _shard(master, n, z >= 1),
        "optimizer_states": _shard(states, n, z >= 1),
    }
    if z >= 3:  # FSDP all-gathers one decoder layer at a time and prefetches the next: two layers whole
        items["zero3_gather"] = 2 * weights // max(1, cfg.layers)
    acts, logits = activation_bytes(cfg, s)
    items["activations"], items["logits"] = acts, logits
    if s.optimizer in ("adam", "adamw", "rmsprop"):
        # Fused AdamW (transformers optim="adamw_torch_fused", DeepSpeed FusedAdam) steps in place; torch's
        # default foreach kernels build one parameter-sized temporary (_foreach_sqrt of exp_avg_sq).
        temp = _shard(trainable * (2 if s.precision == "bf16" else 4), n, z >= 1)
        if temp >= GB:
            notes.append(f"with torch's default foreach {s.optimizer} the step adds a {temp / GB:.1f} GB temporary "
                         "(fused AdamW does not)")
    if n > 1 and not z:
        notes.append(f"{n} cards without ZeRO/FSDP: plain data parallel, every card holds everything")
    if s.zero and n == 1:
        notes.append("ZeRO/FSDP shards over several cards: with one card it saves nothing")
    peak = _peak(items)
    label = f"{cfg.name} {s.method} fine-tune, {s.optimizer}, {s.precision}"
    return TrainingBudget(label, items, trainable, peak + MARGIN_LOW, peak + MARGIN_HIGH, tuple(notes),
                          dict(vars(s)))


def _frozen_weights(cfg: LlmConfig, s: TrainSetup) -> int:
    """LoRA: the base at 16 bit (FP32 when training in FP32). QLoRA: linear layers in NF4, the rest 16-bit."""
    if s.method == "lora":
        return cfg.params * (4 if s.precision == "fp32" else 2)
    linear = sum(t.numel for t in tensor_list(cfg) if t.linear)
    return math.ceil(linear * NF4_BITS / 8) + (cfg.params - linear) * 2


def _shard(nbytes: int, cards: int, sharded: bool) -> int:
    return -(-nbytes // cards) if sharded else nbytes


# ---------------------------------------------------------------------------------------------
# ComfyUI TrainLoraNode (diffusion-model LoRA)
def comfy_factorization(dimension: int, factor: int = -1) -> tuple[int, int]:
    """comfy/weight_adapter/base.py factorization() (ComfyUI 0.18.2, base.py:359-396)."""
    if factor > 0 and dimension % factor == 0 and dimension >= factor ** 2:
        m, n = factor, dimension // factor
        return (n, m) if m > n else (m, n)
    if factor < 0:
        factor = dimension
    m, n = 1, dimension
    length = m + n
    while m < n:
        new_m = m + 1
        while dimension % new_m != 0:
            new_m += 1
        new_n = dimension // new_m
        if new_m + new_n > length or new_m > factor:
            break
        m, n = new_m, new_n
    return (n, m) if m > n else (m, n)


COMFY_ALGORITHMS = ("LoRA", "LoHa", "LoKr", "OFT")  # comfy/weight_adapter/__init__.py:23-31 adapter_maps


def comfy_adapter_params(shape: Sequence[int], rank: int, algorithm: str = "LoRA",
                         lokr_flat_kernel: bool = False) -> int:
    """Trainable parameters ComfyUI 0.18.2 creates for one weight of ``shape`` (out, in, *kernel):
    LoRA up (out×r) + down (r×in·k) (lora.py:135-142); LoHa twice that (loha.py:151-163); LoKr
    w1 (out_l×in_m) + w2 (out_k×in_n×k) from factorization(dim, rank) (lokr.py:178-196); OFT
    block_num×block_size² (oft.py:145-151). Each adapter also has a scalar ``alpha`` parameter that
    ``requires_grad_(True)`` makes trainable (nodes_train.py:737-739). ``lokr_flat_kernel``: ComfyUI 0.8.0's
    LoKr factorizes in·kernel instead (0.8.0 lokr.py:87-98); the other algorithms are the same there."""
    if len(shape) < 2:
        return math.prod(shape)  # BiasDiff of a 1-D weight (nodes_train.py:740-747)
    out_dim, in_dim, kernel = shape[0], shape[1], math.prod(shape[2:])
    if algorithm == "LoRA":
        return rank * (out_dim + in_dim * kernel) + 1
    if algorithm == "LoHa":
        return 2 * rank * (out_dim + in_dim * kernel) + 1
    if algorithm == "LoKr" and lokr_flat_kernel:
        out1, out2 = comfy_factorization(out_dim, rank)
        in1, in2 = comfy_factorization(in_dim * kernel, rank)
        return out1 * in1 + out2 * in2 + 1
    if algorithm == "LoKr":
        out_l, out_k = comfy_factorization(out_dim, rank)
        in_m, in_n = comfy_factorization(in_dim, rank)
        return out_l * in_m + out_k * in_n * kernel + 1
    if algorithm == "OFT":
        block_size, block_num = comfy_factorization(out_dim, rank)
        return block_num * block_size * block_size + 1
    raise VramBudgetError(f"algorithm {algorithm!r}: ComfyUI trains {', '.join(COMFY_ALGORITHMS)}")


def comfy_trainable_params(tensors: Mapping[str, Sequence[int]] | Iterable[tuple[str, Sequence[int]]], rank: int,
                           algorithm: str = "LoRA") -> int:
    """Trainable parameters TrainLoraNode adds to a model whose weights have these names and shapes:
    every ``*.weight`` of 2+ dims gets an adapter, every 1-D ``*.weight`` and every ``*.bias`` a full-size
    diff (_setup_lora_adapters, nodes_train.py:769-803). Tensors that are not module weights (e.g. Wan's
    ``modulation`` parameters, fp8 scales) get none: ComfyUI adapts modules with a weight_function only."""
    items = tensors.items() if isinstance(tensors, Mapping) else tensors
    total = 0
    for name, shape in items:
        shape = tuple(int(d) for d in shape)
        if name.endswith(".weight"):
            total += comfy_adapter_params(shape, rank, algorithm)
        elif name.endswith(".bias"):
            total += math.prod(shape)  # _create_bias_adapter (nodes_train.py:750-766)
    return total


COMFY_STATES = {"AdamW": 2, "Adam": 2, "RMSprop": 1, "SGD": 0}  # torch.optim states per parameter (defaults)
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def comfy_lora_training(base_weight_bytes: int, trainable_params: int, lora_dtype: str = "bf16",
                        optimizer: str = "AdamW", activations_bytes: int = 0, label: str = "TrainLoraNode",
                        notes: Sequence[str] = ()) -> TrainingBudget:
    """The bytes of a TrainLoraNode run (ComfyUI 0.18.2).

    - frozen weights: ``base_weight_bytes`` as ComfyUI loads them (stored dtype; training_dtype only sets
      the compute dtype: set_model_compute_dtype, model_patcher.py:528-531; fully loaded unless
      offloading: load_models_gpu(force_full_load=not offloading), nodes_train.py:1207-1209);
    - adapter parameters, created FP32 then ``.to(lora_dtype)`` (nodes_train.py:729-734);
    - gradients in the parameters' dtype (cast back before the step, nodes_train.py:362-367);
    - optimizer states: torch.optim.AdamW/Adam two, RMSprop one (momentum 0, not centered), SGD none
      (momentum 0) (nodes_train.py:861-879), each ``zeros_like(param)``, i.e. in lora_dtype: bf16 states
      with the default lora_dtype, FP32 only with lora_dtype fp32. No FP32 master copy: the optimizer
      steps the lora_dtype parameters directly (nodes_train.py:1189-1192);
    - the foreach Adam/RMSprop step's one parameter-sized temporary (after the activations are freed);
    - activations of forward + backward: traced by the caller (with or without gradient checkpointing).
    """
    if lora_dtype not in _DTYPE_BYTES:
        raise VramBudgetError(f"lora_dtype {lora_dtype!r}: use bf16 or fp32")
    if optimizer not in COMFY_STATES:
        raise VramBudgetError(f"optimizer {optimizer!r}: ComfyUI trains with {', '.join(COMFY_STATES)}")
    unit = _DTYPE_BYTES[lora_dtype]
    adapter = trainable_params * unit
    items = {
        "weights": int(base_weight_bytes),
        "adapter": adapter,
        "gradients": adapter,
        "optimizer_states": COMFY_STATES[optimizer] * adapter,
        "activations": int(activations_bytes),
    }
    if optimizer != "SGD":
        items["optimizer_step"] = adapter
    peak = _peak(items)
    return TrainingBudget(label, items, trainable_params, peak + MARGIN_LOW, peak + MARGIN_HIGH, tuple(notes),
                          dict(lora_dtype=lora_dtype, optimizer=optimizer))


# ---------------------------------------------------------------------------------------------
# Remedies (FACTS.md order) and the cheapest card
LEAK_HINT = ("An out-of-memory error after hundreds of steps is a leak, not the budget: `total_loss += loss` "
             "(use loss.item()), evaluation without torch.no_grad().")


@dataclass(frozen=True)
class Remedy(JsonFields):
    what: str
    peak_high: int
    saving: int
    cost: str


def llm_training_remedies(cfg: LlmConfig, setup: TrainSetup, capacity: int | None = None) -> list[Remedy]:
    """The guide's ladder, each step re-evaluated on top of the previous ones until it fits ``capacity``."""
    s = setup.validate()
    prev = llm_training(cfg, s).peak_high
    out: list[Remedy] = []
    for what, step, cost in _ladder(s):  # each step keeps the ones before it
        if capacity is not None and prev <= capacity:
            break
        peak = llm_training(cfg, step).peak_high
        if peak < prev:
            out.append(Remedy(what, peak, prev - peak, cost))
            prev = peak
    return out


def _ladder(s: TrainSetup):
    cur = s
    if cur.batch > 1:
        eff = cur.batch * cur.grad_accum
        nxt = replace(cur, batch=1, grad_accum=eff)
        yield (f"micro-batch 1 with {eff} gradient-accumulation steps (same effective batch {eff})", nxt,
               "same result, more steps")
        cur = nxt
    if not cur.grad_ckpt:
        nxt = replace(cur, grad_ckpt=True)
        yield "gradient checkpointing", nxt, "≈20-30 % slower"
        cur = nxt
    if cur.precision == "fp32":
        nxt = replace(cur, precision="mixed")
        yield "BF16 mixed precision (Ampere and newer)", nxt, "none on Ampere+"
        cur = nxt
    if cur.optimizer in ("adamw", "adam"):
        nxt = replace(cur, optimizer="adamw8bit")
        yield "8-bit AdamW (bitsandbytes): optimizer states 8 → ~2 bytes per parameter", nxt, "negligible"
        cur = nxt
    if cur.method == "full":
        nxt = replace(cur, method="lora")
        yield f"LoRA rank {cur.rank} instead of full fine-tuning", nxt, "adapter, not all weights"
        cur = nxt
    if cur.method == "lora":
        nxt = replace(cur, method="qlora")
        yield "QLoRA: the frozen base in 4-bit NF4", nxt, "slower, small quality cost"
        cur = nxt
    if cur.seq > 512:
        nxt = replace(cur, seq=max(512, cur.seq // 2))
        yield f"shorter sequences: {cur.seq} → {nxt.seq} tokens", nxt, "less context per sample"
        cur = nxt
    gpus = max(2, cur.gpus)
    if cur.zero < 3 or cur.gpus < 2:
        nxt = replace(cur, gpus=gpus, zero=3)
        yield f"FSDP / DeepSpeed ZeRO-3 across {gpus} cards", nxt, "more cards, communication"


def cheapest_training_cards(cfg: LlmConfig, setup: TrainSetup) -> list[CardOption]:
    """Cheapest card of the guide's lineup (or cards, with ZeRO-3 when the setup has none) that holds it."""
    s = setup.validate()
    counts = (s.gpus,) if s.gpus > 1 else (1, 2, 4, 8)

    def check(card: Card, n: int):
        t = replace(s, gpus=n, zero=s.zero or (3 if n > 1 else 0))
        need = llm_training(cfg, t).peak_high
        return need <= card.total_bytes, need, card.total_bytes

    return cheapest_options(check, counts, how=f"ZeRO-{s.zero or 3}")


# ---------------------------------------------------------------------------------------------
# A diffusion LoRA from a model file (the command line; the ComfyUI graph traces its own activations)
JOINT_ATTENTION = ("flux", "sd3", "qwen-image", "hunyuan-video", "hidream", "chroma")  # text tokens in every block


def dit_block_activation_elements(arch: Mapping[str, object]) -> int:
    """Elements per token one DiT block keeps for backward: the two modulated norms' inputs and outputs
    (4h), q/k/v (3h), the attention output (h), the MLP's first projection and activation (2·ffn).
    First-principles (uncalibrated), the same accounting as the LLM layer above."""
    h = int(arch.get("hidden_size") or 0)
    ffn = int(arch.get("ffn_dim") or float(arch.get("mlp_ratio") or 4.0) * h)
    return 8 * h + 2 * ffn


def diffusion_lora_budget(info, resolution: int = 1024, batch: int = 1, rank: int = 16, algorithm: str = "LoRA",
                          lora_dtype: str = "bf16", optimizer: str = "AdamW", grad_ckpt: bool = False) -> TrainingBudget:
    """TrainLoraNode on a diffusion model file: adapters exactly as ComfyUI creates them (from the file's
    tensors), the weights as stored, activations of forward + backward from the per-block formula at the
    latent tokens of ``resolution``. ``grad_ckpt`` means per-block checkpointing (ComfyUI checkpoint_depth 2)."""
    arch = info.arch
    depth, hidden = int(arch.get("depth") or 0), int(arch.get("hidden_size") or 0)
    if not arch.get("patch_size") or depth <= 0 or hidden <= 0:
        raise VramBudgetError(f"{info.label}: no transformer depth/width to size training activations from the file "
                              "alone; estimate a TrainLoraNode workflow with `vram-budget estimate`")
    for name, value in (("--resolution", resolution), ("--batch", batch), ("--rank", rank)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
            raise VramBudgetError(f"{name} {value!r}: give a whole number from 1 to 65536")
    comp = int(arch.get("spatial_compression") or 8)
    side = max(1, resolution // comp)
    tokens = latent_tokens(info.family, arch, LatentShape(batch, None, side, side))
    if info.family.startswith(JOINT_ATTENTION):
        tokens += text_tokens_for(info.family)
    per_block = dit_block_activation_elements(arch) * 2  # bf16 autocast (training_dtype bf16, the default)
    if grad_ckpt:
        acts = batch * tokens * (depth * hidden * 2 + per_block)
    else:
        acts = batch * tokens * depth * per_block
    inv = inspect_file(info.path)
    trainable = comfy_trainable_params(((t.name, t.shape) for t in inv.tensors.values()), rank, algorithm)
    notes = [f"{resolution}×{resolution}, batch {batch}: {tokens:,} tokens per sample through {depth} blocks "
             "(activations from a first-principles formula, uncalibrated)",
             "ComfyUI's default checkpoint_depth 1 checkpoints the whole model as one unit (find_modules_at_depth, "
             "nodes_train.py:431-466): the backward recomputes everything at once and saves nothing at the peak; "
             "depth 2 checkpoints each block" + (" (what --grad-ckpt assumes)" if grad_ckpt else "")]
    label = f"{info.label} {algorithm} rank {rank} (ComfyUI TrainLoraNode), {optimizer}, lora_dtype {lora_dtype}"
    return comfy_lora_training(info.weights_bytes, trainable, lora_dtype, optimizer, acts, label, notes)


def comfy_training_ladder(batch_size: int = 1, grad_accumulation_steps: int = 1, gradient_checkpointing: bool = True,
                          checkpoint_depth: int = 1, training_dtype: str = "bf16", lora_dtype: str = "bf16",
                          rank: int = 8, resolution: int | None = None, offloading: bool = False) -> list[dict]:
    """The guide's remedies for a TrainLoraNode, in its order, as changes to the node's widgets (cumulative:
    each step keeps the ones before). The caller re-evaluates each (activations need its tracer).
    Steps: smaller batch + gradient accumulation (same effective batch), gradient checkpointing (≈20-30 %
    slower; at depth 2, since depth 1 wraps the whole model), bf16, a lower rank, lower resolution /
    buckets (Flux LoRA at 512-768 px, cached latents), offloading (slowest)."""
    steps: list[dict] = []
    if batch_size > 1:
        eff = batch_size * grad_accumulation_steps
        steps.append(dict(key="batch", what=f"batch_size 1 with grad_accumulation_steps {eff} (same effective batch "
                                            f"{eff})", change=dict(batch_size=1, grad_accumulation_steps=eff),
                          cost="same result, more steps"))
    if not gradient_checkpointing or checkpoint_depth < 2:
        steps.append(dict(key="checkpointing", what="gradient_checkpointing on, checkpoint_depth 2 (per block)",
                          change=dict(gradient_checkpointing=True, checkpoint_depth=2), cost="≈20-30 % slower"))
    if training_dtype == "fp32" or lora_dtype == "fp32":
        steps.append(dict(key="bf16", what="training_dtype bf16, lora_dtype bf16",
                          change=dict(training_dtype="bf16", lora_dtype="bf16"), cost="none on Ampere and newer"))
    if rank > 4:
        steps.append(dict(key="rank", what=f"rank {rank} → {max(4, rank // 2)}", change=dict(rank=max(4, rank // 2)),
                          cost="less capacity to learn"))
    if resolution is None or resolution > 768:
        steps.append(dict(key="resolution", what="lower resolution (512-768 px, or resolution buckets)",
                          change=dict(resolution=768 if resolution is None or resolution > 1024 else 512),
                          cost="less detail learned"))
    if not offloading:
        steps.append(dict(key="offloading", what="offloading on (weights in system RAM)", change=dict(offloading=True),
                          cost="several times slower"))
    return steps


def diffusion_remedies(info, capacity: int, **kw) -> list[Remedy]:
    """comfy_training_ladder re-evaluated with diffusion_lora_budget (offloading is not modelled here)."""
    cur = {**dict(resolution=1024, batch=1, rank=16, algorithm="LoRA", lora_dtype="bf16", optimizer="AdamW",
                  grad_ckpt=False), **kw}
    prev = diffusion_lora_budget(info, **cur).peak_high
    out: list[Remedy] = []
    ladder = comfy_training_ladder(batch_size=cur["batch"], gradient_checkpointing=cur["grad_ckpt"],
                                   checkpoint_depth=2 if cur["grad_ckpt"] else 1, lora_dtype=cur["lora_dtype"],
                                   rank=cur["rank"], resolution=cur["resolution"])
    names = {"batch_size": "batch", "gradient_checkpointing": "grad_ckpt", "lora_dtype": "lora_dtype", "rank": "rank",
             "resolution": "resolution"}
    for step in ladder:
        if prev <= capacity:
            break
        change = {names[k]: v for k, v in step["change"].items() if k in names}
        if not change:
            continue
        cur.update(change)
        peak = diffusion_lora_budget(info, **cur).peak_high
        if peak < prev:
            out.append(Remedy(step["what"], peak, prev - peak, step["cost"]))
            prev = peak
    return out
