"""Train LoRA: the frozen weights, the adapter with its gradients and optimizer states, and the forward +
backward activations (training.py has the rules and their file:line)."""
from __future__ import annotations

from ..physics import memory
from ..llm import training
from ..errors import VramBudgetError
from ..files import inspect_file
from ..model_info import DIFFUSION, ModelInfo
from ..models.name_infer import lora_linear_sum
from ..machine.device import Device
from ..workload import Stage
from .base import unpriced, Item, StageBudget, finish, overhead_items, weights_items


def build(stage: Stage, device: Device, info_for) -> StageBudget:
    """TrainLoraNode (comfy_extras/nodes_train.py, ComfyUI 0.18.2): frozen weights as loaded, the
    adapter, its gradients and optimizer states in lora_dtype, and forward + backward activations
    (training.py has the rules and their file:line)."""
    items, infos, notes = weights_items(stage, device, info_for, ("diffusion", "lora"))
    model = next((i for i in infos if i.kind == DIFFUSION), None)
    t = dict(stage.train or {})
    title = f"Train LoRA: {model.label}" if model else "Train LoRA"
    if model is None:
        why = unpriced(notes, "no diffusion model identified", "training terms not estimated: ")
        return finish(stage, title, items + overhead_items(device), notes, unpriced=why)
    rank, algorithm = int(t.get("rank") or 8), str(t.get("algorithm") or "LoRA")
    lora_dtype, optimizer = str(t.get("lora_dtype") or "bf16"), str(t.get("optimizer") or "AdamW")
    trainable, how = _trainable_params(model, rank, algorithm)
    if trainable is None:
        why = unpriced(notes, how, "training terms not estimated: ")
        return finish(stage, title, items + overhead_items(device), notes, unpriced=why)
    acts, acts_how = _train_activations(model, stage, t)
    tb = training.comfy_lora_training(0, trainable, lora_dtype, optimizer, acts or 0)
    unit = tb.items["adapter"]
    items.append(Item(f"{algorithm} adapter (rank {rank}, {trainable / 1e6:.1f}M params, {lora_dtype})", unit,
                      "working", how))
    items.append(Item("gradients", tb.items["gradients"], "working", f"one per adapter parameter, {lora_dtype}"))
    if tb.items["optimizer_states"]:
        items.append(Item(f"{optimizer} states", tb.items["optimizer_states"], "working",
                          f"{training.COMFY_STATES[optimizer]} × zeros_like(param) in {lora_dtype}, no fp32 master copy "
                          "(nodes_train.py:861-879, :1189-1192)"))
    step = tb.items.get("optimizer_step", 0)
    gap = ""
    if acts is None:
        gap = unpriced(notes, acts_how, "training activations not estimated: ")
    else:
        label = "activations (forward + backward)" if acts >= step else "optimizer step temporary"
        items.append(Item(label, max(acts, step), "working", acts_how if acts >= step else
                          "torch's foreach step makes one parameter-sized temporary, after the activations are freed"))
    ladder = training.comfy_training_ladder(
        int(t.get("batch_size") or 1), int(t.get("grad_accumulation_steps") or 1), bool(t.get("gradient_checkpointing")),
        int(t.get("checkpoint_depth") or 1), str(t.get("training_dtype") or "bf16"), lora_dtype, rank,
        (stage.latent.pixel_width or None) if stage.latent else None, bool(t.get("offloading")))
    if ladder:
        notes.append("if it does not fit, in this order: " + "; ".join(f"{s['what']} ({s['cost']})" for s in ladder))
    notes.append(training.LEAK_HINT)
    if t.get("offloading"):
        notes.append("offloading on: ComfyUI may load the model partially and stream the rest (slower)")
    return finish(stage, title, items + overhead_items(device), notes, unpriced=gap)


def _trainable_params(model: ModelInfo, rank: int, algorithm: str) -> tuple[int | None, str]:
    """Adapter parameters ComfyUI creates: exact from the file's tensors (every >= 2-D weight gets an
    adapter, 1-D weights and biases are trained in full: nodes_train.py:729-734), else LoRA by the
    family's linear layers (typical)."""
    if model.path:
        try:
            inv = inspect_file(model.path)
            n = training.comfy_trainable_params(((x.name, x.shape) for x in inv.tensors.values()), rank, algorithm)
            return n, f"exact from the file's {len(inv.tensors)} tensors (ComfyUI adapts every weight of 2+ dims)"
        except (VramBudgetError, ValueError) as exc:
            return None, f"the model's tensors could not be read ({exc})"
    found = lora_linear_sum(model.family, model.variant) if algorithm == "LoRA" else None
    if found is None:
        return None, f"the model file is not here and {algorithm} on {model.label} has no typical size"
    linear_sum, what = found
    return rank * linear_sum, f"typical: rank {rank} × Σ(in+out) over {what} (the file is not here)"


def _train_activations(model: ModelInfo, stage: Stage, t: dict) -> tuple[int | None, str]:
    latent = stage.latent
    arch = model.arch
    depth, hidden = int(arch.get("depth") or 0), int(arch.get("hidden_size") or 0)
    if latent is None:
        return None, "the latent size is unknown"
    if depth <= 0 or hidden <= 0:
        return None, f"{model.label} has no transformer depth / width to size them"
    tokens = memory.latent_tokens(model.family, arch, latent)
    if model.family.startswith(training.JOINT_ATTENTION):
        tokens += memory.text_tokens_for(model.family)
    dtype_bytes = 4 if str(t.get("training_dtype")) == "fp32" else 2
    per_block = training.dit_block_activation_elements(arch) * dtype_bytes
    batch = max(1, latent.batch)
    per_block_ckpt = bool(t.get("gradient_checkpointing")) and int(t.get("checkpoint_depth") or 1) >= 2
    tracer = memory.LIVE_TRAIN_TRACER.get()
    ckpt_depth = int(t.get("checkpoint_depth") or 1)
    if tracer is not None and model.path and t.get("gradient_checkpointing") and dtype_bytes == 2:
        live = tracer(model.path, latent, batch, memory.text_tokens_for(model.family), ckpt_depth)
        if live is not None:
            value, provenance = live
            return int(value), (f"batch {batch}, {tokens:,} tokens; traced live with {provenance}: forward + backward "
                                f"with the modules at checkpoint_depth {ckpt_depth} recomputed in the backward "
                                "(nodes_train.py:431-466, :505-525)")
    if per_block_ckpt:  # block inputs kept, one block's internals recomputed at a time
        acts = batch * tokens * (depth * hidden * dtype_bytes + per_block)
        how = f"per-block checkpointing (depth {t.get('checkpoint_depth')}): {depth} block inputs + one block"
    else:
        acts = batch * tokens * depth * per_block
        how = ("checkpoint_depth 1 wraps the whole model as one unit (nodes_train.py:431-466): every block's "
               "activations at the backward's peak" if t.get("gradient_checkpointing") else
               "no checkpointing: every block's activations kept for the backward")
    return acts, (f"batch {batch}, {tokens:,} tokens, {depth} blocks; {how}; first-principles formula "
                  "(training.dit_block_activation_elements, uncalibrated)")
