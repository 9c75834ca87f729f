"""Sampling: the diffusion model, its LoRAs and ControlNets, and the traced working memory at the latent's
shape (cond and uncond batched when CFG > 1, one after another as ComfyUI's fallback)."""
from __future__ import annotations

from dataclasses import replace

from ..physics import memory
from ..families._spec import HELD_BY_PACK
from ..model_info import DIFFUSION
from ..machine.device import Device
from ..workload import Stage, as_model_latent
from .base import NOT_ESTIMATED, Item, StageBudget, finish, overhead_items, unpriced, weights_items

__all__ = ["NOT_ESTIMATED", "build", "math_attention_bytes"]
NEWER_COMFYUI = "made for a newer ComfyUI"  # graph/analyzer.py NEWER_COMFYUI: a stage note of this form says why  # a stage note of this form is the reason shown for a stage without latent


def math_attention_bytes(device: Device, arch, tokens: int, batch: int) -> int:
    """What SDPA's math path holds for one self-attention call: the fp32 scores q·kᵀ and their softmax at once,
    2 × batch × heads × tokens² × 4 bytes (Comfy-Org/ComfyUI#9801, Wan 2.1 1.3B at 832×480×81: "Tried to allocate
    47.98 GiB" = 12 heads × 32,760² × 4 with "58.21 GiB allocated" already, the first 47.98 among them);
    0 on fused kernels and ComfyUI's chunked attention."""
    heads = int((arch or {}).get("heads") or 0)
    if device.attention != "math" or not heads or tokens <= 0:
        return 0
    return 2 * batch * heads * tokens * tokens * 4


def _window(latent, context_frames: int | None, notes: list):
    """The latent one forward sees when the sampler runs it in windows of ``context_frames`` pixel frames
    (WanVideoWrapper's context options, Wan-Animate's frame_window_size loop): its working memory is one window's."""
    if not context_frames or not latent.frames:
        return latent
    frames = (max(1, context_frames) - 1) // (latent.temporal_compression or 4) + 1
    if frames >= latent.frames:
        return latent
    notes.append(f"windows of {frames} of the {latent.frames} latent frames: working memory of one window")
    return replace(latent, frames=frames, pixel_frames=context_frames)


def model_code_release(stage: Stage, device: Device) -> str:
    """The ComfyUI release whose model code a sample stage runs (memory.diffusion_working's `release`: an older
    release's code may need more, memory.era_factor), or "": a pack that runs its own model code (stage.manager) is
    not ComfyUI's, and a guessed release is not used (Device.known_versions: on the calibration half, Wan's traced
    era flags more published runs than it warns OOMs; docs/working-memory.md)."""
    return "" if stage.manager else device.known_versions.get("ComfyUI", "")


def build(stage: Stage, device: Device, info_for) -> StageBudget:
    items, infos, notes = weights_items(stage, device, info_for, ("diffusion", "lora", "controlnet", "model_patch",
                                                                *HELD_BY_PACK))
    # an IP-Adapter, PuLID or InstantID sits on the GPU outside ComfyUI's model management (graph/packs/
    # ipadapter_plus.py, pulid_flux.py, instantid.py): it cannot stream or be offloaded, so it is working memory
    items = [replace(i, category="working", model=None) if i.model is not None and i.model.kind in HELD_BY_PACK else i
             for i in items]
    model = next((i for i in infos if i.kind == DIFFUSION), None)
    latent = stage.latent
    title = f"Sample: {model.label}" if model else "Sample"
    if stage.expert and model is not None:
        title = f"Sample: {model.label.split(' [')[0].split(' (')[0]} ({stage.expert.replace('_', '-')} expert)"
    if model is not None and stage.working:  # a node pack priced this model's working memory (its latent: timing)
        items += [Item(label, int(n), "working", why) for label, n, why in stage.working]
        return finish(stage, title, items + overhead_items(device), notes)
    if model is None or latent is None:
        why = "no diffusion model identified" if model is None else "latent size unknown"
        if latent is None:  # a node pack or the analyzer that knows why says so (a detector has no latent)
            why = stage.unpriced or why
        return finish(stage, title, items + overhead_items(device), notes, unpriced=unpriced(notes, why))
    latent = as_model_latent(latent, model.arch)
    cond_batch = 2 if (stage.cfg is not None and stage.cfg > 1.0 and stage.uses_negative) else 1
    batch = max(1, latent.batch)
    refs = stage.reference_latents
    compiled = "TorchCompile" in (stage.legacy_path or "")
    seen = _window(latent, stage.context_frames, notes)
    release = model_code_release(stage, device)
    full = memory.diffusion_working(model.family, model.arch, seen, batch * cond_batch, stage.text_tokens,
                                    path=model.path, references=refs, compiled=compiled, release=release)
    single = memory.diffusion_working(model.family, model.arch, seen, batch, stage.text_tokens, path=model.path,
                                      references=refs, compiled=compiled, release=release)
    if full is None or single is None:
        newer = next((n for n in stage.notes if n.startswith(NEWER_COMFYUI)), None)
        why = unpriced(notes, f"{model.label}: " + (
            f"architecture not recognised: {newer}" if newer else
            "architecture not recognised (its weights are priced; inside ComfyUI with the file present it is traced)"))
        return finish(stage, title, items + overhead_items(device), notes, unpriced=why)
    label = "activations (cond + uncond batched)" if cond_batch == 2 else "activations"
    if device.compute_fp32_reason:  # the traced tables are 16-bit activations: fp32 compute doubles every tensor
        full = replace(full, bytes=full.bytes * 2, assumption=f"{full.assumption}; × 2: {device.compute_fp32_reason}")
        single = replace(single, bytes=single.bytes * 2)
    items.append(Item(label, full.bytes, "working", full.assumption))
    # one cond's scores: what the failing allocation of the published OOMs asks for (cond and uncond together
    # would double it; even one does not fit where this applies)
    scores = math_attention_bytes(device, model.arch, full.tokens, batch)
    if scores:
        items.append(Item("attention scores (SDPA math path)", scores, "working",
                          f"no fused attention kernel on {device.name} with this ComfyUI: PyTorch's SDPA allocates the "
                          f"fp32 scores and their softmax at once (2 × heads × {full.tokens} tokens² × 4 bytes)"))
    if (model.quantization or "").startswith("gguf") and model.largest_tensor_bytes:
        items.append(Item("GGUF layer dequantized to 16 bit", model.largest_tensor_bytes, "working",
                          "ComfyUI-GGUF dequantizes one layer at a time; the largest layer's 16-bit copy"))
    extra = single.bytes + (model.largest_tensor_bytes if (model.quantization or "").startswith("gguf") else 0)
    if cond_batch == 2:
        notes.append(f"CFG {stage.cfg:g}: cond and uncond evaluated together when memory allows")
    return finish(stage, title, items + overhead_items(device), notes,
                   extra_min_working=extra if cond_batch == 2 else None, batch_factor=cond_batch)
