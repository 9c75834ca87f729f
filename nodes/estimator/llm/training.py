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

The derivation, rule by rule with its sources: docs/derivations.md, "llm/training.py: training memory"."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from ..errors import VramBudgetError
from ..machine.gpus import Card
from .model import MARGIN_HIGH, MARGIN_LOW, LlmConfig
from .serve import CardOption, cheapest_options
from ..models.llm_quant import NF4_BITS, tensor_list

NF4_PLAIN_BITS = 4 + 32 / 64  # NF4 without double quantization: one FP32 absmax per 64 weights
from ..units import GB
from ..files import inspect_file
from ..physics.memory import latent_tokens, text_tokens_for
from ..model_info import DIFFUSION
from ..models.published import catalogue_info
from ..workload import LatentShape
from ..serial import Remedy as RemedyBase

METHODS = ("full", "lora", "qlora")
# paged_*: bitsandbytes PagedAdamW / PagedAdamW8bit (states in CUDA unified memory, evicted to CPU RAM
# when the GPU runs short: bitsandbytes/optim/adamw.py, is_paged=True)
OPTIMIZERS = ("adamw", "adam", "adamw8bit", "paged_adamw", "paged_adamw8bit", "sgd", "rmsprop")
PRECISIONS = ("mixed", "amp", "bf16", "fp32")
LOSSES = ("upcast", "chunked", "fused")
LOSS_BYTES = {"upcast": 14, "chunked": 4}  # per vocabulary entry per token (module docstring); fused: 2·hidden
QUANTS = ("nf4", "nf4-dq")
OFFLOADS = ("none", "optimizer")
MAX_WHAT = ("batch", "seq")
LORA_MODULES = {"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output", "gate": "ffn_gate", "up": "ffn_up",
                "down": "ffn_down"}
LORA_TARGETS = {  # PEFT target_modules: "all-linear" (QLoRA paper's choice), attention, or q,v (LoRA paper, LitGPT)
    "all-linear": ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"),
    "attention": ("attn_q", "attn_k", "attn_v", "attn_output"),
    "q,v": ("attn_q", "attn_v"),
    "mlp": ("ffn_gate", "ffn_up", "ffn_down"),
}


def lora_target_modules(targets: str) -> tuple[str, ...]:
    """'all-linear' | 'attention' | 'mlp' | 'q,v' or a comma list of q,k,v,o,gate,up,down (also PEFT's
    q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj) -> tensor categories."""
    if not isinstance(targets, str) or not targets.strip():
        raise VramBudgetError(f"--lora-targets {targets!r}: use {', '.join(LORA_TARGETS)} or a comma list of "
                              f"{','.join(LORA_MODULES)}")
    key = targets.strip().lower().replace(" ", "")
    if key in LORA_TARGETS:
        return LORA_TARGETS[key]
    out: list[str] = []
    for part in key.split(","):
        name = part[:-5] if part.endswith("_proj") else part
        if name not in LORA_MODULES:
            raise VramBudgetError(f"--lora-targets {targets!r}: {part!r} is not a module; use "
                                  f"{', '.join(LORA_TARGETS)} "
                                  f"or a comma list of {','.join(LORA_MODULES)}")
        if LORA_MODULES[name] not in out:
            out.append(LORA_MODULES[name])
    return tuple(c for c in LORA_TARGETS["all-linear"] if c in out)


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
    loss: str = "upcast"  # upcast (transformers) | chunked (LitGPT) | fused (Liger / Unsloth CCE)
    quant: str = "nf4"  # QLoRA base: nf4 (BitsAndBytesConfig default) | nf4-dq (double quantization)
    kbit_prep: bool = False  # PEFT prepare_model_for_kbit_training: non-4-bit parameters in FP32
    lora_dropout: float = 0.0
    offload: str = "none"  # none | optimizer (ZeRO-Offload: FP32 master + optimizer states in CPU RAM)
    ckpt_offload: bool = False  # offloaded activation checkpointing (layer inputs in CPU RAM)
    bnb_legacy: bool = False  # bitsandbytes < 0.43.2: MatMul4Bit keeps every 4-bit linear's input
    # Lightning's BitsandbytesPrecision (LitGPT --quantize bnb.*): every nn.Linear 4-bit, the output head included,
    # quantised from an FP16 copy (its dequantisation: an FP16 tensor and its cast to the compute dtype)
    bnb_lightning: bool = False
    # the loop keeps the last step's output referenced until the next forward returns (LitGPT fit: ``logits``)
    keep_graph: bool = False

    def validate(self) -> "TrainSetup":
        for name, value, allowed in (("--method", self.method, METHODS), ("--optimizer", self.optimizer, OPTIMIZERS),
                                     ("--precision", self.precision, PRECISIONS), ("--loss", self.loss, LOSSES),
                                     ("--quant", self.quant, QUANTS), ("--offload", self.offload, OFFLOADS)):
            if value not in allowed:
                raise VramBudgetError(f"{name} {value!r}: use {', '.join(allowed)}")
        lora_target_modules(self.targets)
        d = self.lora_dropout
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d) or not 0 <= d < 1:
            raise VramBudgetError(f"--lora-dropout {d!r}: give a probability from 0 to below 1")
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
        return sum(v for k, v in self.items.items() if k not in _TRANSIENT)

    @property
    def peak(self) -> int:
        """The allocator's peak (torch.cuda.max_memory_allocated), before the 1-2 GB working margin."""
        return self.peak_low - MARGIN_LOW

    def to_dict(self) -> dict:
        return dict(label=self.label, items=dict(self.items), trainable_params=self.trainable_params,
                    before_activations=self.before_activations, peak_allocated=self.peak, peak_low=self.peak_low,
                    peak_high=self.peak_high, notes=list(self.notes), setup=dict(self.setup))


def _peak(items: Mapping[str, int]) -> int:
    """Persistent terms + the larger of (activations + logits) and the optimizer step's temporaries:
    activations are freed by the time the optimizer steps."""
    transient = sum(items.get(k, 0) for k in _FWD_BWD)
    persistent = sum(v for k, v in items.items() if k not in _TRANSIENT)
    return persistent + max(transient, items.get("optimizer_step", 0))


# alive from forward to backward (previous_step_inputs: until the forward returns, with the peak at its end)
_FWD_BWD = ("activations", "logits", "autocast_copies", "dequantized_weight", "previous_step_inputs")
_TRANSIENT = _FWD_BWD + ("optimizer_step",)


# ---------------------------------------------------------------------------------------------
# LLMs
def state_bytes_per_param(optimizer: str, precision: str) -> int:
    """Optimizer state bytes per trainable parameter: Adam/AdamW two states (exp_avg, exp_avg_sq) in the
    master dtype (FP32 = 8 B; pure bf16 = 4 B); bitsandbytes 8-bit AdamW two 1-byte states (~2 B);
    RMSprop one (square_avg); SGD without momentum none (torch.optim defaults)."""
    unit = 2 if precision == "bf16" else 4
    return {"adamw": 2 * unit, "adam": 2 * unit, "adamw8bit": 2, "paged_adamw": 2 * unit, "paged_adamw8bit": 2,
            "rmsprop": unit, "sgd": 0}[optimizer]


def lora_params(cfg: LlmConfig, rank: int, targets: str = "all-linear") -> int:
    """rank × (in + out) for every targeted linear (MoE experts: each expert's linears)."""
    mods = lora_target_modules(targets)
    total = 0
    for t in tensor_list(cfg):
        if t.category in mods:
            experts = t.shape[0] if len(t.shape) == 3 else 1
            out_f, in_f = t.shape[-2], t.shape[-1]
            total += experts * rank * (in_f + out_f)
    return total


def layer_activation_elements(cfg: LlmConfig, rank: int = 0, targets: str = "all-linear") -> int:
    """Elements autograd keeps per token for one decoder layer (module docstring), norms counted as their
    input and output only (``layer_activation_bytes`` adds what the FP32 upcast of RMSNorm keeps)."""
    h, hq, hkv = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    inter = cfg.experts_per_token * cfg.moe_intermediate if cfg.experts else cfg.intermediate
    n = 4 * h + 2 * hq + 2 * hkv + 4 * inter + cfg.extra_norms * h
    if cfg.qk_norm:
        n += hq + hkv
    if cfg.experts:
        n += cfg.experts  # router logits
    if rank:
        n += rank * len(lora_target_modules(targets)) * (cfg.experts_per_token or 1)
    return n


def _module_inputs(cfg: LlmConfig, targets: str) -> int:
    """Sum of the input features of the adapted linears of one layer (per token)."""
    h, hq = cfg.hidden, cfg.heads * cfg.head_dim
    inter = cfg.experts_per_token * cfg.moe_intermediate if cfg.experts else cfg.intermediate
    ins = {"attn_q": h, "attn_k": h, "attn_v": h, "attn_output": hq, "ffn_gate": h, "ffn_up": h, "ffn_down": inter}
    return sum(ins[m] for m in lora_target_modules(targets))


def layer_activation_bytes(cfg: LlmConfig, s: TrainSetup) -> int:
    """Bytes one decoder layer keeps per token for the backward, counted by who saves what (autograd saves
    an input only when a gradient needs it):
    - flash/SDPA attention keeps q, k, v and its output (2·hq + 2·hkv);
    - the gated MLP keeps the gate output, its activation and the up output for the product (3·i);
    - each RMSNorm keeps its FP32 input (it upcasts: 4 bytes per element); with a trainable norm weight
      also the normalised 16-bit tensor (for the weight's gradient);
    - a linear keeps its input only when its weight is trained (full fine-tuning) or it carries an
      adapter: the norm outputs feeding q/k/v and gate/up, the product feeding down (the attention
      output feeding o is kept by attention already). A frozen base linear needs only its weight;
    - LoRA's rank-r intermediates, and a dropout's output and 1-byte mask per adapted module (without
      dropout, PEFT's 16-bit recast of the input per module under autocast);
    - q/k-norms, Gemma's extra norms, MoE router logits;
    - bitsandbytes before 0.43.2 (``bnb_legacy``): MatMul4Bit.forward kept its input A for every 4-bit
      linear, needed or not (``ctx.tensors = (A, B)``; "fix QLoRA mem bug: delete useless buffered
      activation", bitsandbytes PR #1270, commit 9e75374, July 2024)."""
    u = 4 if s.precision == "fp32" else 2
    h, hq, hkv = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    inter = cfg.experts_per_token * cfg.moe_intermediate if cfg.experts else cfg.intermediate
    full = s.method == "full"
    mods = set(LORA_TARGETS["all-linear"] if full else lora_target_modules(s.targets))
    norms = 2 + cfg.extra_norms
    b = (2 * hq + 2 * hkv) * u + 3 * inter * u + norms * h * 4
    if full:
        b += norms * h * u
    legacy = s.method == "qlora" and s.bnb_legacy  # MatMul4Bit saved its input A (bitsandbytes PR #1270)
    if legacy or mods & {"attn_q", "attn_k", "attn_v"}:
        b += h * u
    if legacy and "attn_output" not in mods:
        b += hq * u  # the attention output reshaped to (tokens, hq): a copy when o_proj keeps it
    if legacy or mods & {"ffn_gate", "ffn_up"}:
        b += h * u
    if legacy or "ffn_down" in mods:
        b += inter * u
    if cfg.qk_norm:
        b += (hq + hkv) * 4
    if cfg.experts:
        b += cfg.experts * 4
    if not full:
        b += s.rank * len(mods) * (cfg.experts_per_token or 1) * u
        if s.lora_dropout > 0:
            b += _module_inputs(cfg, s.targets) * (u + 1)
        elif s.method == "lora" and s.precision != "bf16":
            # PEFT's lora.Linear casts x to the FP32 adapter's dtype (_cast_input_dtype) and autocast casts it
            # back for lora_A: one 16-bit copy per adapted module kept for lora_A's gradient. Its bnb
            # Linear4bit skips that cast under autocast (peft/tuners/lora/bnb.py).
            b += _module_inputs(cfg, s.targets) * u
    return b


def bnb_kept_inputs(cfg: LlmConfig, s: TrainSetup) -> int:
    """Bytes of the inputs A that bitsandbytes < 0.43.2's MatMul4Bit keeps as ``ctx.tensors`` for one
    micro-batch: per layer the attention input, the attention output feeding o, the MLP input and the
    product feeding down, and (``bnb_lightning``) the head's input. With gradient checkpointing the layers'
    forward runs without a graph: only the head's. Counted once more when ``keep_graph`` keeps the last
    step's graph alive through the next forward (module docstring)."""
    if not (s.method == "qlora" and s.bnb_legacy and s.keep_graph):
        return 0
    u = 4 if s.precision == "fp32" else 2
    h, hq = cfg.hidden, cfg.heads * cfg.head_dim
    inter = cfg.experts_per_token * cfg.moe_intermediate if cfg.experts else cfg.intermediate
    per_token = 0 if s.grad_ckpt or s.ckpt_offload else cfg.layers * (2 * h + hq + inter)
    if s.bnb_lightning:
        per_token += h
    return s.batch * s.seq * per_token * u


def _ckpt_unit(s: TrainSetup) -> int:
    """Bytes per element of a checkpointed layer input: the residual stream's dtype (FP32 when training in
    FP32, or after prepare_model_for_kbit_training made the embedding FP32)."""
    return 4 if s.precision == "fp32" or (s.method == "qlora" and s.kbit_prep) else 2


def loss_bytes_per_token(cfg: LlmConfig, loss: str) -> int:
    """The loss path per token (module docstring): vocabulary × 14 (upcast) or 4 (chunked); fused: 2·hidden."""
    if loss == "fused":
        return 2 * cfg.hidden
    return cfg.vocab * LOSS_BYTES[loss]


def activation_bytes(cfg: LlmConfig, s: TrainSetup) -> tuple[int, int]:
    """(decoder activations, loss path) per card for one micro-batch. Gradient checkpointing keeps each
    layer's input (16-bit) and recomputes one layer at a time; offloaded checkpointing (Unsloth's
    use_gradient_checkpointing="unsloth", DeepSpeed cpu_checkpointing) moves the layer inputs to CPU RAM,
    keeping two on the GPU (the one in flight and the one being recomputed)."""
    unit = _ckpt_unit(s)
    per_layer = layer_activation_bytes(cfg, s)
    tokens = s.batch * s.seq
    if s.ckpt_offload:
        acts = tokens * (2 * cfg.hidden * unit + per_layer)
    elif s.grad_ckpt:
        acts = tokens * (cfg.layers * cfg.hidden * unit + per_layer)
    else:
        acts = tokens * cfg.layers * per_layer
    return acts, tokens * loss_bytes_per_token(cfg, s.loss)


def llm_training(cfg: LlmConfig, setup: TrainSetup) -> TrainingBudget:
    """Bytes per card of training ``cfg`` with ``setup`` (module docstring for every term)."""
    s = setup.validate()
    n = s.gpus
    z = s.zero if n > 1 else 0
    params = cfg.params
    wunit = 4 if s.precision in ("fp32", "amp") else 2
    notes: list[str] = []
    autocast = 0
    if s.method == "full":
        trainable = params
        weights = params * wunit
        grads = params * wunit
        master = params * 4 if s.precision == "mixed" else 0
        states = params * state_bytes_per_param(s.optimizer, s.precision)
        if s.precision == "amp":  # autocast's cached 16-bit copy of every weight that requires grad
            autocast = params * 2
    else:
        trainable = lora_params(cfg, s.rank, s.targets)
        weights = _frozen_weights(cfg, s)
        aunit = 2 if s.precision == "bf16" else 4  # PEFT keeps adapters in FP32 next to a 16-bit base
        grads = trainable * aunit
        master = 0
        states = trainable * state_bytes_per_param(s.optimizer, "bf16" if s.precision == "bf16" else "fp32")
    host = 0
    if s.offload == "optimizer":  # ZeRO-Offload: the FP32 master and the optimizer states live in CPU RAM
        host = _shard(master, n, z >= 1) + _shard(states, n, z >= 1)
        master = states = 0
        notes.append(f"ZeRO-Offload: {host / GB:.1f} GB of FP32 master weights and optimizer states in CPU RAM per "
                     "card; the optimizer steps on the CPU (slower)")
    paged = 0
    if s.optimizer.startswith("paged_"):
        paged = _shard(states, n, z >= 1)
        states = 0
        if paged:
            notes.append(f"paged optimizer: its {paged / GB:.1f} GB of states sit in CUDA unified memory and move to "
                         "CPU RAM when the GPU runs short (not counted in the peak; slower when they do)")
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
    if autocast:
        items["autocast_copies"] = _shard(autocast, n, z >= 3)
    if s.method == "qlora":  # one weight dequantised to 16 bit at a time (MatMul4Bit)
        # (an MoE's experts are separate Linear4bit modules in transformers: one expert's matrix at a time)
        largest = max(t.numel // (t.shape[0] if len(t.shape) == 3 else 1)
                      for t in tensor_list(cfg) if t.linear or (s.bnb_lightning and t.category == "output"))
        # Lightning: FP16 dequantisation + its cast to the compute dtype (module docstring)
        items["dequantized_weight"] = largest * ((2 + (4 if s.precision == "fp32" else 2)) if s.bnb_lightning else 2)
        kept = bnb_kept_inputs(cfg, s)
        if kept:
            items["previous_step_inputs"] = kept
        if s.kbit_prep and s.precision in ("mixed", "amp"):
            # the FP32 output head under autocast: linear casts its weight to 16 bit (not cached: frozen) and keeps
            # the copy for the backward's grad_input until the loss has been back-propagated
            items["autocast_copies"] = cfg.vocab * cfg.hidden * 2
    if s.optimizer in ("adam", "adamw", "rmsprop"):
        # Fused AdamW (transformers optim="adamw_torch_fused", DeepSpeed FusedAdam) steps in place; torch's
        # default foreach kernels build one parameter-sized temporary (_foreach_sqrt of exp_avg_sq).
        temp = _shard(trainable * (2 if s.precision == "bf16" else 4), n, z >= 1)
        if temp >= GB and not host:
            notes.append(f"with torch's default foreach {s.optimizer} the step adds a {temp / GB:.1f} GB temporary "
                         "(fused AdamW does not)")
    if s.ckpt_offload:
        off = s.batch * s.seq * cfg.layers * cfg.hidden * _ckpt_unit(s)
        host += off
        notes.append(f"offloaded checkpointing: {off / GB:.1f} GB of layer inputs in CPU RAM")
    if n > 1 and not z:
        notes.append(f"{n} cards without ZeRO/FSDP: plain data parallel, every card holds everything")
    if s.zero and n == 1:
        notes.append("ZeRO/FSDP shards over several cards: with one card it saves nothing")
    if s.offload == "optimizer" and s.method != "full":
        notes.append("offloading a LoRA's optimizer saves little: its states are small")
    peak = _peak(items)
    label = f"{cfg.name} {s.method} fine-tune, {s.optimizer}, {s.precision}"
    setup_d = dict(vars(s))
    setup_d["lora_modules"] = list(lora_target_modules(s.targets))
    setup_d["host_bytes"] = host
    setup_d["paged_bytes"] = paged
    return TrainingBudget(label, items, trainable, peak + MARGIN_LOW, peak + MARGIN_HIGH, tuple(notes), setup_d)


def _frozen_weights(cfg: LlmConfig, s: TrainSetup) -> int:
    """LoRA: the base at 16 bit (FP32 when training in FP32 or AMP). QLoRA: linear layers in NF4 (module
    docstring), the rest 16-bit, or FP32 after PEFT's prepare_model_for_kbit_training."""
    if s.method == "lora":
        return cfg.params * (4 if s.precision in ("fp32", "amp") else 2)
    linear = sum(t.numel for t in tensor_list(cfg) if t.linear or (s.bnb_lightning and t.category == "output"))
    bits = NF4_BITS if s.quant == "nf4-dq" else NF4_PLAIN_BITS
    return math.ceil(linear * bits / 8) + (cfg.params - linear) * (4 if s.kbit_prep else 2)


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
# What kohya sd-scripts (--optimizer_type AdamW8bit / PagedAdamW8bit / PagedAdamW), ai-toolkit and SimpleTuner
# offer besides (bitsandbytes.optim: 8-bit blockwise states, 1 byte each; paged = CUDA unified memory).
BNB_DIFFUSION_OPTIMIZERS = ("AdamW8bit", "PagedAdamW8bit", "PagedAdamW")
DIFFUSION_OPTIMIZERS = {o.lower(): o for o in (*COMFY_STATES, *BNB_DIFFUSION_OPTIMIZERS)}
# A quantised frozen base for a diffusion LoRA (ai-toolkit quantize, SimpleTuner --base_model_precision,
# kohya --fp8_base): bits per weight of every 2-D linear weight; the rest stays as stored.
DIFFUSION_BASES = {"stored": None, "bf16": 16.0, "fp8": 8.0, "int8": 8.0, "nf4": NF4_PLAIN_BITS, "nf4-dq": NF4_BITS}
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def comfy_lora_training(base_weight_bytes: int, trainable_params: int, lora_dtype: str = "bf16",
                        optimizer: str = "AdamW", activations_bytes: int = 0, label: str = "TrainLoraNode",
                        notes: Sequence[str] = (), extra_items: Mapping[str, int] | None = None,
                        bnb_optimizers: bool = False) -> TrainingBudget:
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
    if optimizer not in COMFY_STATES and not (bnb_optimizers and optimizer in BNB_DIFFUSION_OPTIMIZERS):
        raise VramBudgetError(f"optimizer {optimizer!r}: ComfyUI trains with {', '.join(COMFY_STATES)}")
    unit = _DTYPE_BYTES[lora_dtype]
    adapter = trainable_params * unit
    if optimizer in BNB_DIFFUSION_OPTIMIZERS:  # bitsandbytes: 8-bit states (2 B/param) or 32-bit paged ones
        states = 2 * trainable_params if "8bit" in optimizer else 2 * 4 * trainable_params
    else:
        states = COMFY_STATES[optimizer] * adapter
    items = {
        "weights": int(base_weight_bytes),
        "adapter": adapter,
        "gradients": adapter,
        "optimizer_states": 0 if optimizer.startswith("Paged") else states,
        "activations": int(activations_bytes),
    }
    if optimizer in COMFY_STATES and optimizer != "SGD":
        items["optimizer_step"] = adapter
    items.update(extra_items or {})
    if optimizer.startswith("Paged"):
        notes = (*notes, f"paged optimizer: its {states / GB:.2f} GB of states move to CPU RAM when the GPU runs short "
                         "(not counted in the peak)")
    peak = _peak(items)
    return TrainingBudget(label, items, trainable_params, peak + MARGIN_LOW, peak + MARGIN_HIGH, tuple(notes),
                          dict(lora_dtype=lora_dtype, optimizer=optimizer))


# ---------------------------------------------------------------------------------------------
# Remedies (FACTS.md order) and the cheapest card
LEAK_HINT = ("An out-of-memory error after hundreds of steps is a leak, not the budget: `total_loss += loss` "
             "(use loss.item()), evaluation without torch.no_grad().")


@dataclass(frozen=True)
class Remedy(RemedyBase):
    what: str
    peak_high: int
    saving: int
    cost: str

    _remedy_fields = ("what", "saving", "cost")


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
    if cur.loss == "upcast":
        nxt = replace(cur, loss="fused")
        yield ("fused cross-entropy (Liger Kernel, Cut Cross Entropy): no FP32 logits", nxt,
               "an extra kernel package, same result")
        cur = nxt
    if not cur.ckpt_offload:
        nxt = replace(cur, grad_ckpt=True, ckpt_offload=True)
        yield "offloaded checkpointing: layer inputs in CPU RAM (Unsloth's \"unsloth\" mode)", nxt, \
            "a few % slower, CPU RAM"
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


def largest_that_fits(peak_of, capacity: int, hi: int) -> int:
    """The largest n in 1..hi with peak_of(n) <= capacity (peaks grow with n), 0 when even 1 does not fit."""
    if peak_of(1) > capacity:
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if peak_of(mid) <= capacity:
            lo = mid
        else:
            hi = mid - 1
    return lo


def llm_max(cfg: LlmConfig, setup: TrainSetup, capacity: int, what: str) -> int:
    """``train --max batch|seq``: the largest micro-batch (at setup.seq) or sequence (at setup.batch) whose
    peak with the 2 GB margin (peak_high) fits ``capacity`` bytes; 0 when none does."""
    if what not in MAX_WHAT:
        raise VramBudgetError(f"--max {what!r}: use {' or '.join(MAX_WHAT)}")
    s = setup.validate()
    if what == "batch":
        return largest_that_fits(lambda b: llm_training(cfg, replace(s, batch=b)).peak_high, capacity, 1 << 20)
    return largest_that_fits(lambda q: llm_training(cfg, replace(s, seq=q)).peak_high, capacity, 1 << 24)


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
                          lora_dtype: str = "bf16", optimizer: str = "AdamW", grad_ckpt: bool = False,
                          base: str = "stored", height: int | None = None,
                          text_tokens: int | None = None) -> TrainingBudget:
    """TrainLoraNode on a diffusion model file: adapters exactly as ComfyUI creates them (from the file's
    tensors), the weights as stored, activations of forward + backward from the per-block formula at the
    latent tokens of ``resolution``. ``grad_ckpt`` means per-block checkpointing (ComfyUI checkpoint_depth 2)."""
    arch = info.arch
    depth, hidden = int(arch.get("depth") or 0), int(arch.get("hidden_size") or 0)
    if not arch.get("patch_size") or depth <= 0 or hidden <= 0:
        raise VramBudgetError(f"{info.label}: no transformer depth/width to size training activations from the file "
                              "alone; estimate a TrainLoraNode workflow with `vram-budget estimate`")
    height = resolution if height is None else height
    for name, value in (("--resolution", resolution), ("height", height), ("--batch", batch), ("--rank", rank)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
            raise VramBudgetError(f"{name} {value!r}: give a whole number from 1 to 65536")
    comp = int(arch.get("spatial_compression") or 8)
    latent = LatentShape(batch, None, max(1, height // comp), max(1, resolution // comp))
    tokens = latent_tokens(info.family, arch, latent)
    if info.family.startswith(JOINT_ATTENTION):
        tokens += text_tokens_for(info.family, text_tokens)
    per_block = dit_block_activation_elements(arch) * 2  # bf16 autocast (training_dtype bf16, the default)
    if grad_ckpt:
        acts = batch * tokens * (depth * hidden * 2 + per_block)
    else:
        acts = batch * tokens * depth * per_block
    opt = DIFFUSION_OPTIMIZERS.get(str(optimizer).lower())
    if opt is None:
        raise VramBudgetError(f"--optimizer {optimizer!r}: a diffusion LoRA trains with "
                              f"{', '.join(DIFFUSION_OPTIMIZERS.values())}")
    optimizer = opt
    if base not in DIFFUSION_BASES:
        raise VramBudgetError(f"--base {base!r}: use {', '.join(DIFFUSION_BASES)}")
    notes: list[str] = []
    if info.path:
        inv = inspect_file(info.path)
        shapes = [(t.name, t.shape, t.nbytes) for t in inv.tensors.values()]
        trainable = comfy_trainable_params(((n, sh) for n, sh, _ in shapes), rank, algorithm)
        linears = [(math.prod(sh), nb) for n, sh, nb in shapes if n.endswith(".weight") and len(sh) == 2]
    else:  # a catalogue name: no tensor list; rank r on linears with in, out ~ hidden: r·(in+out) ≈ 2r/h·params
        if algorithm != "LoRA":
            raise VramBudgetError(f"{info.label}: --algorithm {algorithm} needs the file's tensor shapes; "
                                  "give the file")
        trainable = int(2 * rank * info.params / hidden)
        linears = [(info.params, info.weights_bytes)]
        notes.append(f"no file: sized from the catalogue entry ({info.weights_bytes / GB:.1f} GB, "
                     f"{info.params / 1e9:.1f}B parameters); the adapter estimated as 2·rank/hidden of the parameters")
    weights = int(info.weights_bytes)
    extra: dict[str, int] = {}
    bits = DIFFUSION_BASES[base]
    if bits is not None:
        lin_elems, lin_bytes = sum(e for e, _ in linears), sum(b for _, b in linears)
        weights = weights - lin_bytes + math.ceil(lin_elems * bits / 8)
        if bits < 16:  # the backward dequantises one weight at a time to the compute dtype
            extra["dequantized_weight"] = 2 * (max(e for e, _ in linears) if info.path else
                                               hidden * int(arch.get("ffn_dim") or 4 * hidden))
        notes.append(f"base {base}: the 2-D linear weights at {bits:g} bits, the rest as stored")
    notes += [f"{resolution}×{height}, batch {batch}: {tokens:,} tokens per sample through {depth} blocks "
             "(activations from a first-principles formula, uncalibrated)",
             "ComfyUI's default checkpoint_depth 1 checkpoints the whole model as one unit (find_modules_at_depth, "
             "nodes_train.py:431-466): the backward recomputes everything at once and saves nothing at the peak; "
             "depth 2 checkpoints each block" + (" (what --grad-ckpt assumes)" if grad_ckpt else "")]
    label = f"{info.label} {algorithm} rank {rank} (ComfyUI TrainLoraNode), {optimizer}, lora_dtype {lora_dtype}"
    if optimizer in BNB_DIFFUSION_OPTIMIZERS:
        notes.append(f"{optimizer} is bitsandbytes' (kohya sd-scripts, ai-toolkit, SimpleTuner); "
                     "ComfyUI's TrainLoraNode "
                     f"offers {', '.join(COMFY_STATES)}")
    if base != "stored":
        notes.append("a quantised base is ai-toolkit / SimpleTuner / kohya (--fp8_base); ComfyUI's TrainLoraNode "
                     "trains on the weights as loaded")
    b = comfy_lora_training(weights, trainable, lora_dtype, optimizer, acts, label, notes, extra, bnb_optimizers=True)
    return replace(b, setup={**b.setup, "base": base, "resolution": resolution, "batch": batch, "rank": rank,
                             "algorithm": algorithm, "grad_ckpt": grad_ckpt})


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


# ---------------------------------------------------------------------------------------------
# The command line's training options (cli_llm.py adds them to `vram-budget train`)
def add_train_arguments(t) -> None:
    t.add_argument("--lora-targets", default="all-linear",
                   help="LLM LoRA modules: all-linear (default), attention, mlp, q,v, or a comma list of "
                        "q,k,v,o,gate,up,down")
    t.add_argument("--lora-dropout", type=float, default=0.0, help="LoRA dropout (default 0; > 0 keeps a mask)")
    t.add_argument("--loss", default="upcast", help="loss path: upcast (transformers, default: FP32 logits), "
                                                     "chunked (LitGPT), fused (Liger / Unsloth Cut Cross Entropy)")
    t.add_argument("--quant", default="nf4", help="QLoRA base: nf4 (BitsAndBytesConfig default) or nf4-dq "
                                                  "(double quantization)")
    t.add_argument("--kbit-prep", action="store_true",
                   help="QLoRA with PEFT's prepare_model_for_kbit_training (non-4-bit weights in FP32)")
    t.add_argument("--bnb-legacy", action="store_true",
                   help="bitsandbytes before 0.43.2 (every 4-bit linear keeps its input)")
    t.add_argument("--bnb-lightning", action="store_true",
                   help="QLoRA through Lightning's BitsandbytesPrecision (LitGPT --quantize bnb.*): the head 4-bit "
                        "too, dequantised via FP16")
    t.add_argument("--keep-graph", action="store_true",
                   help="the loop keeps the last step's output until the next forward returns (LitGPT): with "
                        "--bnb-legacy the last micro-batch's 4-bit inputs stay allocated")
    t.add_argument("--trainer", default="transformers",
                   help="whose code path: transformers (+ PEFT, default) or litgpt (chunked loss, Lightning's "
                        "bitsandbytes QLoRA, the last step's graph kept, LoRA on q,v unless --lora-targets)")
    t.add_argument("--bnb-version", default=None,
                   help=f"bitsandbytes version for QLoRA (default {BNB_ASSUMED_VERSION}; before 0.43.2 every 4-bit "
                        "linear keeps its input)")
    t.add_argument("--offload", default="none", help="none (default) or optimizer (ZeRO-Offload: FP32 master + "
                                                     "optimizer states in CPU RAM)")
    t.add_argument("--ckpt-offload", action="store_true",
                   help="offloaded activation checkpointing (layer inputs in CPU RAM; implies --grad-ckpt)")
    t.add_argument("--base", default="stored", help=f"diffusion LoRA: frozen base as {', '.join(DIFFUSION_BASES)}")
    t.add_argument("--max", choices=None, default=None,
                   help="largest batch or seq (LLMs) / batch or resolution (diffusion) that fits --gpu / --vram")


# ``--trainer``: the code paths of a trainer, for what the user did not set. transformers + PEFT is the
# default (TrainSetup's defaults). LitGPT (litgpt/finetune/lora.py): chunked_cross_entropy on 16-bit logits,
# --quantize bnb.* through Lightning's BitsandbytesPrecision, fit() keeping ``logits`` until the next forward
# returns, LoRA on query and value only (lora_query / lora_value True, the others False).
TRAINERS = ("transformers", "litgpt")
# bitsandbytes assumed when --bnb-version is not given: the release current when these rules were written;
# MatMul4Bit stopped keeping its input in 0.43.2 (bitsandbytes PR #1270)
BNB_ASSUMED_VERSION = "0.48.2"
# LitGPT 0.5.11 pins bitsandbytes>=0.45.2,<0.48 on Linux and Windows (pyproject.toml optional-dependencies.extra);
# its published resource tables (October 2023) ran 0.41.1: --bnb-version 0.41.1 reproduces them
BNB_LITGPT_VERSION = "0.47.0"
BNB_INPUT_FREED = (0, 43, 2)


def _bnb_default(trainer: str) -> str:
    return BNB_LITGPT_VERSION if trainer == "litgpt" else BNB_ASSUMED_VERSION


def _bnb_legacy(version: str | None) -> bool:
    v = str(version or BNB_ASSUMED_VERSION).strip().lstrip("v")
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?\S*", v)
    if not m:
        raise VramBudgetError(f"--bnb-version {version!r}: give a bitsandbytes version such as 0.45.5")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) < BNB_INPUT_FREED


def trainer_assumption(args) -> str:
    """The trainer and bitsandbytes version an LLM training answer assumes, in words."""
    trainer = str(getattr(args, "trainer", None) or "transformers").lower()
    who = "LitGPT" if trainer == "litgpt" else "transformers + PEFT"
    out = f"trainer: {who}"
    if str(getattr(args, "method", "")).lower() == "qlora":
        legacy = args.bnb_legacy or _bnb_legacy(getattr(args, "bnb_version", None))
        out += f", bitsandbytes {getattr(args, 'bnb_version', None) or _bnb_default(trainer)}" + \
            (" (before 0.43.2: every 4-bit linear keeps its input)" if legacy else "")
    return out


def train_setup_from_args(args) -> TrainSetup:
    """A validated TrainSetup from `vram-budget train`'s arguments (--optimizer case-insensitive); --trainer
    fills in its code paths where the user left the default."""
    trainer = str(getattr(args, "trainer", None) or "transformers").lower()
    if trainer not in TRAINERS:
        raise VramBudgetError(f"--trainer {trainer!r}: use {', '.join(TRAINERS)}")
    litgpt = trainer == "litgpt"
    legacy = args.bnb_legacy or _bnb_legacy(getattr(args, "bnb_version", None))
    if args.base != "stored":
        raise VramBudgetError("--base is for a diffusion LoRA; an LLM's quantised base is --method qlora --quant")
    if args.max is not None and args.max not in MAX_WHAT:
        raise VramBudgetError(f"--max {args.max!r}: use {' or '.join(MAX_WHAT)} for an LLM")
    return TrainSetup(method=str(args.method).lower(), optimizer=str(args.optimizer or "adamw").lower(),
                      precision=str(args.precision).lower(), batch=args.batch,
                      seq=args.seq if args.seq is not None else 2048, grad_ckpt=args.grad_ckpt or args.ckpt_offload,
                      gpus=args.gpus, zero=args.zero, rank=args.rank,
                      targets="q,v" if litgpt and args.lora_targets == "all-linear" else args.lora_targets,
                      loss="chunked" if litgpt and args.loss == "upcast" else str(args.loss).lower(),
                      quant=str(args.quant).lower(), kbit_prep=args.kbit_prep,
                      lora_dropout=args.lora_dropout, offload=str(args.offload).lower(), ckpt_offload=args.ckpt_offload,
                      bnb_legacy=legacy, bnb_lightning=getattr(args, "bnb_lightning", False) or litgpt,
                      keep_graph=getattr(args, "keep_graph", False) or litgpt).validate()


_LLM_ONLY = (("--seq", lambda a: a.seq is not None), ("--method", lambda a: a.method != "full"),
             ("--zero", lambda a: bool(a.zero)), ("--lora-targets", lambda a: a.lora_targets != "all-linear"),
             ("--lora-dropout", lambda a: a.lora_dropout != 0.0), ("--loss", lambda a: a.loss != "upcast"),
             ("--quant", lambda a: a.quant != "nf4"), ("--kbit-prep", lambda a: a.kbit_prep),
             ("--bnb-legacy", lambda a: a.bnb_legacy),
             ("--bnb-lightning", lambda a: getattr(a, "bnb_lightning", False)),
             ("--keep-graph", lambda a: getattr(a, "keep_graph", False)), ("--offload", lambda a: a.offload != "none"),
             ("--trainer", lambda a: (getattr(a, "trainer", None) or "transformers") != "transformers"),
             ("--bnb-version", lambda a: getattr(a, "bnb_version", None) is not None),
             ("--ckpt-offload", lambda a: a.ckpt_offload))


def diffusion_train_kwargs(args) -> dict:
    """diffusion_lora_budget's keywords from the arguments; LLM-only flags are refused by name."""
    given = [name for name, used in _LLM_ONLY if used(args)]
    if given:
        raise VramBudgetError(f"{'/'.join(given)} {'is' if len(given) == 1 else 'are'} for LLMs; a diffusion model "
                              "trains a LoRA (--rank, --algorithm, "
                              "--resolution, --base, --optimizer, --lora-dtype)")
    if args.max is not None and args.max not in ("batch", "resolution"):
        raise VramBudgetError(f"--max {args.max!r}: use batch or resolution for a diffusion LoRA")
    return dict(resolution=args.resolution or 1024, batch=args.batch, rank=args.rank, algorithm=args.algorithm,
                lora_dtype=str(args.lora_dtype).lower(), optimizer=args.optimizer or "AdamW", grad_ckpt=args.grad_ckpt,
                base=str(args.base).lower())


def diffusion_max(info, kw: Mapping[str, object], capacity: int, what: str) -> int:
    """The largest batch, or resolution (a multiple of 64 px), whose peak_high fits ``capacity``."""
    if what == "batch":
        return largest_that_fits(lambda b: diffusion_lora_budget(info, **{**kw, "batch": b}).peak_high, capacity,
                                 1 << 12)
    steps = largest_that_fits(lambda k: diffusion_lora_budget(info, **{**kw, "resolution": 64 * k}).peak_high,
                              capacity, 1 << 10)
    return 64 * steps


def diffusion_info_for(model: str, from_file):
    """A diffusion model to train: the file (``from_file``), or, when no such file exists, a catalogue name
    such as flux1-dev.safetensors (published.catalogue_info: its family's architecture and published size)."""
    info = from_file(model)
    if info is not None or os.path.exists(model) or not model.lower().endswith((".safetensors", ".sft", ".gguf")):
        return info
    info = catalogue_info(os.path.basename(model))
    if info is None:
        raise VramBudgetError(f"{model}: no such file, and not a file name the catalogue knows; give the model file "
                              "(a diffusion model) or a Hugging Face folder / known name (an LLM)")
    if info.kind != DIFFUSION:
        raise VramBudgetError(f"{model}: the catalogue knows it as a {info.kind} ({info.label}), not a diffusion model "
                              "to train a LoRA on")
    return info
