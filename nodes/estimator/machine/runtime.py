"""What ComfyUI will actually do with a workflow on a card, stage by stage.

The budget (budget.py) gives each stage's true needs: weights as loaded, working memory traced
from ComfyUI's model code, the CUDA context. ComfyUI does not simply fail when they exceed the
card: it loads models partially and streams the rest from RAM, batches cond and uncond only when
its own estimate says there is room, splits VAE batches by free memory and retries a VAE decode
tiled after an OOM. This module replays those decisions with ComfyUI's own rules and constants,
each cited (file:line in 0.8.0 / 0.18.2, 0.33.0 where said; docs/runtime.md has the table), and gives per stage:

- the outcome: ``fits`` (all resident), ``runs_slower`` (streams weights or falls back to tiles),
  ``oom`` (what cannot be satisfied even with offload), ``unknown`` (a model is missing);
- resident vs streamed weight bytes, cond/uncond batching, VAE images per call, the tiled
  fallback, and a predicted slowdown from a simple speed model: bytes streamed per step over the
  card's host link against the step's compute (model FLOPs at this shape over the card's
  throughput).

Pure Python; no ComfyUI or torch imports.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..physics import vae_memory
from ..families import registry
from ..physics.memory import latent_tokens, text_tokens_for, traced_constants, working_memory_key
from ..model_info import DIFFUSION, TEXT_ENCODER, VAE
from .regressions import vae_working_factor
from .resolve import vae_dtype_bytes
from ..units import GiB, MiB, fmt_gib
from ..workload import DIFFUSERS, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE, LatentShape, as_model_latent

FITS, RUNS_SLOWER, OOM, UNKNOWN = "fits", "runs_slower", "oom", "unknown"
SEVERITY = {FITS: 0, RUNS_SLOWER: 1, OOM: 2, UNKNOWN: 3}

# --- ComfyUI's constants (comfy/model_management.py, comfy/model_patcher.py; identical in 0.8.0 and 0.18.2 unless noted) -------
# minimum_inference_memory() = 0.8 GiB + EXTRA_RESERVED_VRAM (model_management.py:581-582 / :737-738)
MIM_BASE = int(0.8 * GiB)
# NUM_STREAMS: offload streams, 2 on NVIDIA/AMD by default (model_management.py:1017-1027 / :1231-1241)
NUM_STREAMS = 2
# cond batching: a group of k conds runs together while memory_required(k·B)·1.5 < free
# (samplers.py:260-275 / :259-274)
COND_BATCH_FACTOR = 1.5
# comfy-aimdo: VRAM_HEADROOM 256 MiB (aimdo src/plat.h:110); VBAR pages of 32 MiB (src/model-vbar.c:3)
AIMDO_HEADROOM = 256 * MiB
AIMDO_PAGE = 32 * MiB
# ComfyUI 0.33 model prefetch under Dynamic VRAM (comfy/model_prefetch.py): a diffusion model whose forward walks
# its blocks through make_prefetch_queue / prefetch_queue_pop casts each block's weights in one go before the block
# runs (model_prefetch.py:99-124 -> ops.py:126-263 cast_modules_with_vbar with all the block's modules): the weights
# of the block that are not resident go into the aimdo cast buffer of ONE offload stream, back to back
# (ops.py:149-162 get_cast_buffer: cast_buffer_offset grows through the block), and get_offload_stream rotates the
# NUM_STREAMS streams block by block (model_management.py:1459-1494), each stream's buffer kept until the node ends
# (execution.py:550 reset_cast_buffers). So NUM_STREAMS buffers of a block's streamed bytes stay allocated instead
# of NUM_STREAMS of the largest single weight. Models that do this in 0.33.0 (model_base.py:245 sets
# prefetch_dynamic_vbars when the patcher is dynamic): LTXAV (ldm/lightricks/av_model.py:935-942, :1018) and
# MiniMax H3 (ldm/minimax/model.py:699-713). Per block, the linear weights (the ones with a VBAR slot, `_v`), from
# the block classes; biases, norms and modulation tables are O(hidden) and left out (< 0.1 %).
# the family modules' PREFETCH_BLOCK_PARAMS sections (families/ltx.py, families/minimax.py): family -> fn(arch) ->
# the linear parameters of one block
PREFETCH_BLOCK_PARAMS = registry.PREFETCH_BLOCK_PARAMS


# model_base.memory_required under SDPA / xformers ("flash"): area · dtype_size · 0.01 · factor · 2^20
# (model_base.py:359-383 / :374-396); default factor 2.0 (supported_models_base.py:49)
FLASH_BYTES_PER_AREA = 0.01 * 2**20

# memory_usage_factor per model (comfy/supported_models.py)
MEMORY_USAGE_FACTOR = registry.MEMORY_USAGE_FACTOR  # each family module's MEMORY_USAGE_FACTOR

# --- speed model ---------------------------------------------------------------------------------
# Sustained share of the datasheet throughput: transformer matmuls at these sizes reach about half
# of it (model-FLOPs utilisation ~0.4-0.6 for large dense layers); VAE convolutions much less.
MFU_TRANSFORMER = 0.5
MFU_CONV = 0.3


@dataclass(frozen=True)
class StageRun:
    """What ComfyUI does in one stage on this card."""

    outcome: str  # fits | runs_slower | oom | unknown
    resident_bytes: int = 0  # weights kept on the GPU
    streamed_bytes: int = 0  # weights kept in RAM and copied in on every forward
    peak_bytes: int = 0  # predicted peak with these decisions (resident + working + context)
    cond_batch: int = 1  # conds per forward (2: cond + uncond together)
    forwards_per_step: int = 1
    images_per_call: int | None = None  # VAE: images (or videos) per decode/encode call
    calls: int | None = None
    tiled_fallback: str | None = None  # VAE: what the OOM -> tiled retry runs
    slowdown: float = 1.0  # time with these decisions / time all resident (copies overlapped with compute)
    slowdown_high: float = 1.0  # the same with no overlap (copies and compute one after another)
    extra_seconds: float = 0.0  # one-off extra time (a failed decode + the tiled retry, a streamed TE pass)
    step_seconds: float | None = None  # predicted seconds per sampling step (compute or transfer bound)
    shortfall_bytes: int = 0  # oom: what is missing even with everything offloadable offloaded
    minimum_bytes: int = 0  # what must fit even with all weights streamed
    # Dynamic VRAM's path: resident weights are evicted on demand when working memory grows past ComfyUI's
    # estimate (aimdo), so only minimum_bytes is a hard edge; classic loads by that estimate and can run out
    elastic: bool = False
    explanation: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    # what load_models_gpu asks free_memory to free for this stage (classic): 1.1 × the stage's weights +
    # max(minimum_inference_memory, its estimate + reserve) (model_management.py:621-706 / :794-898); the
    # models of earlier stages stay on the GPU only beside it, the rest go back to RAM (host_memory.py)
    load_need_bytes: int = 0

    def to_dict(self) -> dict:
        return {
            "outcome": self.outcome, "resident_bytes": self.resident_bytes, "streamed_bytes": self.streamed_bytes,
            "peak_bytes": self.peak_bytes, "cond_batch": self.cond_batch, "forwards_per_step": self.forwards_per_step,
            "images_per_call": self.images_per_call, "calls": self.calls, "tiled_fallback": self.tiled_fallback,
            "slowdown": round(self.slowdown, 2), "slowdown_high": round(self.slowdown_high, 2),
            "extra_seconds": round(self.extra_seconds, 1),
            "step_seconds": None if self.step_seconds is None else round(self.step_seconds, 2),
            "shortfall_bytes": self.shortfall_bytes, "minimum_bytes": self.minimum_bytes,
            "explanation": list(self.explanation), "rules": list(self.rules),
        }


@dataclass
class _Ctx:
    """Per-device numbers every stage uses."""

    dynamic: bool
    vram_state: str
    capacity: int  # total − other processes
    context: int
    reserve: int  # EXTRA_RESERVED_VRAM or --reserve-vram
    flops: float
    host_bps: float
    mim: int = 0
    free_empty: int = 0  # what ComfyUI sees free with no model loaded
    cpu_vae: bool = False
    smart_memory: bool = True
    device: object = None
    headroom: int = AIMDO_HEADROOM  # what Dynamic VRAM keeps free: aimdo's headroom + --vram-headroom (0.33)
    prefetch: bool = False  # ComfyUI 0.33's block prefetch under Dynamic VRAM (Device.model_prefetch)
    # DirectML without --lowvram: no partial load (lowvram_available False, model_management.py:122 / :991), and
    # ComfyUI sees 1 GiB free whatever the card (:1757-1759), so it never batches cond and uncond beside a model
    no_partial: bool = False

    def __post_init__(self):
        self.mim = MIM_BASE + self.reserve
        self.free_empty = max(0, self.capacity - self.context)


def context_for(device) -> _Ctx:
    return _Ctx(
        dynamic=device.memory_mode == "dynamic",
        vram_state=getattr(device, "vram_state", "normal") or "normal",
        capacity=device.capacity_bytes, context=device.context_bytes, reserve=device.reserve_bytes,
        flops=getattr(device, "flops", 0.0) or 165.2e12,
        host_bps=getattr(device, "host_bytes_per_s", 0.0) or 25.2e9,
        cpu_vae=getattr(device, "cpu_vae", False), smart_memory=getattr(device, "smart_memory", True),
        device=device, headroom=dynamic_headroom(device), prefetch=bool(getattr(device, "model_prefetch", False)),
        no_partial=bool(getattr(device, "directml", False)) and getattr(device, "vram_state", "normal") != "low",
    )


DIRECTML_FREE = 1024**3  # model_management.py:1757-1759 (0.33.0): what ComfyUI reports free on DirectML
DIRECTML_RULE = "model_management.py:110-122, :991 (DirectML: lowvram_available False, no partial load)"



def dynamic_headroom(device) -> int:
    """VRAM Dynamic VRAM keeps completely free. comfy-aimdo's own headroom (256 MiB) or, in 0.33, the
    --reserve-vram given (main.py:99-101: simple_vram_headroom), plus 0.33's --vram-headroom per device
    (main.py:305 init_devices; cli_args.py:175)."""
    base = getattr(device, "aimdo_headroom_bytes", None)
    return (AIMDO_HEADROOM if base is None else base) + (getattr(device, "vram_headroom_bytes", 0) or 0)


# ---------------------------------------------------------------------------------------------
# ComfyUI's own estimates
def comfy_memory_required(model, latent: LatentShape, batch: int, compute_bytes: int = 2) -> int:
    """model_base.BaseModel.memory_required([batch, C, (T,) H, W]) with fused attention (NVIDIA)."""
    factor = MEMORY_USAGE_FACTOR.get(model.family)
    if factor is None and model.family.startswith("wan"):
        factor = int(model.arch.get("hidden_size", 5120) or 5120) / 2222  # WAN21_T2V:1082 dim/2222
    if factor is None:  # ComfyUI's own class, as detected live or as the tracer recorded it
        factor = _recorded_factor(model)
    if factor is None:
        factor = 2.0
    area = batch * max(1, latent.frames or 1) * latent.height * latent.width
    return int(area * compute_bytes * FLASH_BYTES_PER_AREA * factor)


def _recorded_factor(model) -> float | None:
    """memory_usage_factor of the model's ComfyUI class: from live detection (arch) or the traced table's
    entry (bench/trace_working_memory.py records the class attribute after set_inference_dtype)."""
    arch = model.arch or {}
    value = arch.get("memory_usage_factor")
    if value is None:
        value = (traced_constants().get(working_memory_key(model.family, arch)) or {}).get("memory_usage_factor")
    try:
        return float(value) if value is not None and float(value) > 0 else None
    except (TypeError, ValueError):
        return None


def forward_flops(model, latent: LatentShape, batch: int, text_tokens: int | None) -> float:
    """FLOPs of one forward: 2·(per-token weights)·tokens for the linear layers plus 4·N²·hidden per
    block for attention (QKᵀ and AV), from the architecture's hidden size, MLP width and depth.
    Per token and block the linears hold 4·h² (q, k, v, out) + 2·h·ffn (MLP) weights; a DiT's
    modulation weights act once per sample, not per token, and are left out. UNets (no depth in
    the arch): 2·params·tokens, an upper bound."""
    arch = model.arch or {}
    # an EmptyLatentImage latent (/8) sampled by a /16 model is the model's latent, as the memory sees it
    n_img = latent_tokens(model.family, arch, as_model_latent(latent, arch))
    n = n_img + text_tokens_for(model.family, text_tokens)
    h = int(arch.get("hidden_size", 0) or 0)
    depth = int(arch.get("depth", 0) or 0)
    if h and depth:
        ffn = int(arch.get("ffn_dim", 4 * h) or 4 * h)
        linear = 2 * (4 * h * h + 2 * h * ffn) * depth * n
        attention = 4 * n * n * h * depth
        return float(batch * (linear + attention))
    return float(batch * 2 * max(model.params, 1) * n_img)


def largest_module_bytes(model, loaded_bytes: int) -> int:
    """The largest weight ComfyUI casts at once: the MLP projection of a block (hidden × ffn) at
    the loaded bytes per parameter; a GGUF file's largest tensor when known."""
    if model is None:
        return 0
    bpp = loaded_bytes / max(model.params, 1)
    if model.largest_tensor_bytes:
        return int(model.largest_tensor_bytes / 2 * bpp)
    arch = model.arch or {}
    h = int(arch.get("hidden_size", 0) or 0)
    ffn = int(arch.get("ffn_dim", 4 * h) or 4 * h)
    if h:
        return int(h * ffn * bpp)
    return int(loaded_bytes / 50)  # ~2 % of the weights: a UNet's largest conv/linear


def prefetch_block_bytes(model, loaded_bytes: int) -> int:
    """One block as ComfyUI 0.33's model prefetch casts it (PREFETCH_BLOCK_PARAMS), at the loaded bytes per
    parameter; 0 for a model that does not prefetch. Never more than the weights spread over the blocks."""
    fn = PREFETCH_BLOCK_PARAMS.get(getattr(model, "family", None) or "") if model is not None else None
    arch = (model.arch or {}) if model is not None else {}
    depth = int(arch.get("depth", 0) or 0)
    if fn is None or depth <= 0 or not model.params:
        return 0
    return int(loaded_bytes * min(fn(arch), model.params / depth) / model.params)


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# ComfyUI-WanVideoWrapper places weights itself (nodes_model_loading.py / nodes_sampler.py): the
# DiT goes to the main device whole, except `blocks_to_swap` blocks that stay in RAM and are
# copied in one at a time (one block in flight; prefetch / non_blocking overlap the copies);
# there is no partial load and no tiled retry, so what does not fit is an OOM. Text encoder and
# VAE go to the GPU whole for their pass and are offloaded after it (force_offload defaults on).
WRAPPER = "WanVideoWrapper"
SEEDVR2 = "SeedVR2"  # numz/ComfyUI-SeedVR2_VideoUpscaler: its own placement, block swap and phases
KOLORS_MZ = "ComfyUI-Kolors-MZ"  # its ChatGLM3 text encode: the whole model moved to the GPU by hand
HYVIDEO = "HunyuanVideoWrapper"  # kijai/ComfyUI-HunyuanVideoWrapper: its DiT moved to the GPU whole by the sampler
DRAGNUWA = "ComfyUI-DragNUWA"  # its whole fp32 network moved to the GPU by the loader and left there
SONIC = "ComfyUI_Sonic"  # its SVD UNet built on the GPU by the loader, kept there until its sampler ends
SEGMENT_ANYTHING = "comfyui_segment_anything"  # storyicon's: SAM and GroundingDINO moved to the GPU by their loaders
LAYERSTYLE_SAM = "ComfyUI_LayerStyle_Advance"  # its SegmentAnythingUltra: the same SAM + GroundingDINO (+ ViTMatte)
# the packs that place a whole model themselves with block swap (run_wrapper), and the rule each follows
BLOCK_SWAP_RULES = {
    WRAPPER: "ComfyUI-WanVideoWrapper nodes_model_loading.py / nodes_sampler.py (block swap, no partial load)",
    SEEDVR2: "ComfyUI-SeedVR2_VideoUpscaler src/core/generation_phases.py, src/optimization/blockswap.py (one model "
             "per phase, block swap, no partial load)",
    HYVIDEO: "ComfyUI-HunyuanVideoWrapper nodes.py HyVideoSampler (manual offloading: transformer.to(device), the "
             "whole DiT; no partial load)",
    SEGMENT_ANYTHING: "comfyui_segment_anything node.py load_sam_model / load_groundingdino_model (sam.to(device), "
                      "dino.to(device): whole, never offloaded; no partial load)",
    LAYERSTYLE_SAM: "ComfyUI_LayerStyle_Advance py/segment_anything_func.py load_sam_model / "
                    "load_groundingdino_model (.to(device): whole, no partial load; dropped after the node unless "
                    "cache_model), py/imagefunc.py generate_VITMatte (model.to(device), freed after the call)",
    SONIC: "ComfyUI_Sonic node_utils.py convert_cf2diffuser (the UNet built on the GPU whole), sonic.py Sonic.process "
           "(pipe.to(device) ... pipe.to('cpu')); no partial load",
    DRAGNUWA: "ComfyUI-DragNUWA nodes.py Drag.__init__ (drag_nuwa_net.to(device): the whole fp32 network, never "
              "offloaded; no partial load)",
    KOLORS_MZ: "ComfyUI-Kolors-MZ mz_kolors_core.py chatglm3_text_encode (mm.unload_all_models(), then "
               "text_encoder.to(device): the whole model, no partial load)",
}
# the packs among them that have no block swap: the whole model goes to the GPU (the verdict says so)
NO_BLOCK_SWAP = {KOLORS_MZ, DRAGNUWA, SONIC, SEGMENT_ANYTHING, LAYERSTYLE_SAM}
# packs whose sampling shapes are not a ComfyUI latent's (fixed frames, guidance x fps windows): the batch, frames and
# resolution remedies do not apply to their stages (plan/advice.py)
OWN_SHAPES = {DRAGNUWA, SONIC}
# what makes a whole-model stage of these packs fit when it does not (run_wrapper, a stage other than sampling)
WHOLE_LOAD_FIX = {KOLORS_MZ: "the 8-bit or 4-bit ChatGLM3 file (chatglm3-8bit / -4bit.safetensors)",
                  DRAGNUWA: "a card with more memory: the pack has no offload, and its network is fp32 whatever the "
                            "file",
                  SONIC: "a smaller min_resolution or fps on the Sonic nodes (the pack has no offload)",
                  SEGMENT_ANYTHING: "SAM ViT-B or ViT-L instead of ViT-H (the pack has no offload)",
                  LAYERSTYLE_SAM: "SAM ViT-B or ViT-L instead of ViT-H, a smaller max_megapixels or detail_method "
                                  "GuidedFilter / PyMatting (no ViTMatte on the GPU; the pack has no offload)"}


def block_bytes(stage, num_layers: int) -> int:
    """Bytes of one transformer block as loaded: the model's weights × the blocks' share / num_layers.

    A Wan block (comfy/ldm/wan/model.py WanAttentionBlock) holds self- and cross-attention
    (4 + 4 dim² matrices), the FFN (2 · dim · ffn_dim) and norms/modulation (O(dim)); the rest of
    the model (text/time embeddings, head) stays resident whatever is swapped.
    """
    model = next((i.model for i in stage.items if i.category == "weights" and i.model is not None
                  and i.model.kind == DIFFUSION), None)
    weights = sum(i.bytes for i in stage.items if i.category == "weights")
    if model is None or num_layers <= 0:
        return 0
    share = 1.0
    dim = int(model.arch.get("hidden_size", 0) or 0) if model.arch else 0
    ffn = int(model.arch.get("ffn_dim", 0) or 0) if model.arch else 0
    if dim and ffn and model.params:
        per_block = 8 * dim * dim + 2 * dim * ffn + 14 * dim + ffn
        share = min(1.0, num_layers * per_block / model.params)
    return int(weights * share / num_layers)


def run_wrapper(sb, ctx: _Ctx) -> StageRun:
    weights, work = sb.weights_bytes, sb.working_bytes
    rules = (BLOCK_SWAP_RULES.get(sb.stage.manager, BLOCK_SWAP_RULES[WRAPPER]),)
    who = "the wrapper" if sb.stage.manager == WRAPPER else sb.stage.manager
    # one pass: a stage other than sampling, or a detector a pack prices itself (its terms, no latent to step over)
    if sb.stage.kind != SAMPLE or (sb.stage.latent is None and sb.stage.working):
        if any(it.category == "working" for it in sb.items) is False and sb.stage.kind in (VAE_DECODE, VAE_ENCODE):
            return StageRun(UNKNOWN, peak_bytes=sb.peak_bytes, explanation=("VAE working memory unknown",))
        peak = ctx.context + weights + work
        if peak > ctx.capacity:
            what = {TEXT_ENCODE: "the text encoder", VAE_DECODE: "the VAE decode", VAE_ENCODE: "the VAE encode"}.get(
                sb.stage.kind, "this stage")
            fix = WHOLE_LOAD_FIX.get(sb.stage.manager) or (
                "enable_vae_tiling on the node" if sb.stage.kind in (VAE_DECODE, VAE_ENCODE) and not sb.stage.tiled
                else "device = cpu on the text-encode node" if sb.stage.kind == TEXT_ENCODE else "smaller tiles")
            return StageRun(OOM, weights, 0, peak, shortfall_bytes=peak - ctx.capacity, minimum_bytes=peak,
                            explanation=(f"{who} loads {what} whole and does not retry: {fmt_gib(peak)} needed, "
                                         f"{fmt_gib(ctx.capacity)} on the card; {fix}",), rules=rules)
        return StageRun(FITS, weights, 0, peak, rules=rules)
    model = _model(sb, DIFFUSION)
    latent = sb.stage.latent
    if model is None or latent is None:
        return StageRun(UNKNOWN, peak_bytes=sb.peak_bytes,
                        explanation=("the diffusion model or the latent size is unknown: nothing to simulate",))
    num_layers = int(model.arch.get("depth", 0) or 0) if model.arch else 0
    per_block = block_bytes(sb, num_layers) if num_layers else 0
    swap = min(sb.stage.blocks_to_swap or 0, num_layers)
    uneven = sb.stage.swap_blocks if model.params else ()
    if uneven:  # blocks of unequal sizes: each swapped block's share of the weights, the largest one in flight
        swap = sum(count for count, _ in uneven)
        per_block = int(weights * max((p for c, p in uneven if c), default=0) / model.params)
    notes = []
    if swap and ctx.vram_state in ("high", "gpu_only") and sb.stage.manager in (WRAPPER, HYVIDEO):
        # the wrapper swaps blocks to mm.unet_offload_device(), which is the GPU in high-VRAM mode (--highvram and
        # --gpu-only set VRAMState.HIGH_VRAM: model_management.py:1076-1080 / :563 in 0.33.0): nothing leaves the card
        flag = {"high": "--highvram", "gpu_only": "--gpu-only"}[ctx.vram_state]
        notes.append(f"block swap ({swap} blocks) does nothing under {flag}: the wrapper swaps to ComfyUI's offload "
                     "device, which is the GPU in high-VRAM mode")
        swap = 0
    swapped = swap * per_block if not uneven else int(weights * min(
        1.0, sum(c * p for c, p in uneven) / model.params)) if swap else 0
    in_flight = per_block if swap else 0
    resident = weights - swapped
    cond_needed = sb.batch_factor
    k = 2 if cond_needed == 2 and sb.stage.cfg_batched else 1
    work_single = _one_cond_working(sb)
    work = sb.working_bytes if k == 2 else work_single
    peak = ctx.context + resident + in_flight + work
    if swap:
        notes.append(f"block swap: {swap} {'blocks' if uneven else f'of {num_layers} blocks'} ({fmt_gib(swapped)}) "
                     "stay in RAM")
    if peak > ctx.capacity:
        short = peak - ctx.capacity
        more = math.ceil(short / per_block) if per_block else None
        if (sb.stage.blocks_to_swap or uneven) and not swap:
            fix = "start ComfyUI without --highvram / --gpu-only so that block swap can move blocks to RAM"
        elif sb.stage.manager in NO_BLOCK_SWAP:
            fix = WHOLE_LOAD_FIX.get(sb.stage.manager, "fewer frames or a smaller size")
        elif uneven:
            fix = f"swap more blocks ({sb.stage.offload_fix or 'the block swap node'}), fp8 weights or fewer frames"
        elif more is not None and swap + more + (0 if swap else 1) <= num_layers:
            fix = f"set blocks_to_swap to {swap + more + (0 if swap else 1)} (of {num_layers})"
        else:
            fix = "block swap alone cannot make room: fp8 weights, fewer frames or a smaller size"
        return StageRun(OOM, resident, swapped, peak, k, shortfall_bytes=short,
                        minimum_bytes=ctx.context + work_single + per_block,
                        explanation=tuple([f"{who} puts {fmt_gib(resident + in_flight)} of weights on the GPU "
                                           f"and does not load partially: {fmt_gib(short)} short; {fix}"] + notes),
                        rules=rules)
    forwards = 2 if (cond_needed == 2 and k == 1) else 1
    compute_s = forward_flops(model, latent, max(1, latent.batch) * cond_needed, sb.stage.text_tokens) / (
        ctx.flops * MFU_TRANSFORMER)
    transfer_s = forwards * swapped / ctx.host_bps
    step_s = max(compute_s, transfer_s)
    slowdown = step_s / compute_s if compute_s > 0 else 1.0
    slowdown_high = (compute_s + transfer_s) / compute_s if compute_s > 0 else 1.0
    if swapped:
        notes[0] += f": {speed_words(slowdown, slowdown_high)} ({transfer_s:.2f} s of copies per step)"
    if cond_needed == 2 and k == 1:
        notes.append("cond and uncond run one after another (batched_cfg off)")
    return StageRun(RUNS_SLOWER if swapped and slowdown_high >= 1.05 else FITS, resident, swapped, peak, k, forwards,
                    slowdown=slowdown, slowdown_high=slowdown_high, step_seconds=step_s,
                    minimum_bytes=ctx.context + work_single + per_block, explanation=tuple(notes), rules=rules)


# ---------------------------------------------------------------------------------------------
# Diffusers pipelines a node pack drives itself (aigc-apps VideoX-Fun / EasyAnimate, comfyui/*/nodes.py
# GPU_memory_mode): ComfyUI's model management never sees the weights. Stage.offload says how they move:
# - "full": pipeline.to(device): every component on the GPU for the whole run (stages.simulate keeps them there);
# - "model": enable_model_cpu_offload: each component moves to the GPU whole when it runs and the previous one in
#   model_cpu_offload_seq goes back (text encoder -> transformer(s) -> VAE); no partial load, so what does not fit
#   is an OOM;
# - "sequential": enable_sequential_cpu_offload: accelerate hooks on every leaf module copy its weights in just
#   before it runs, one at a time, without overlap;
# - "group": enable_group_offload(offload_type="leaf_level", use_stream=True): the same per leaf module, the next
#   one prefetched on a second stream while this one computes.
# The "_and_qfloat8" modes store the transformer's weights in float8 (convert_model_weight_to_float8): the pack
# puts weight_dtype fp8 on the model's ref.
OFFLOAD_MODES = ("full", "model", "sequential", "group")


def run_diffusers(sb, ctx: _Ctx) -> StageRun:
    mode = sb.stage.offload if sb.stage.offload in OFFLOAD_MODES else "model"
    rules = ("diffusers offload (GPU_memory_mode): VideoX-Fun comfyui/*/nodes.py, diffusers DiffusionPipeline "
             "enable_model_cpu_offload / enable_sequential_cpu_offload / enable_group_offload",)
    weights = sb.weights_bytes
    what = {SAMPLE: "the transformer", TEXT_ENCODE: "the text encoder", VAE_DECODE: "the VAE decode",
            VAE_ENCODE: "the VAE encode"}.get(sb.stage.kind, "this stage")
    model = _model(sb, {TEXT_ENCODE: TEXT_ENCODER, VAE_DECODE: VAE, VAE_ENCODE: VAE}.get(sb.stage.kind, DIFFUSION))
    if not any(it.category == "working" for it in sb.items):
        return StageRun(UNKNOWN, peak_bytes=sb.peak_bytes, explanation=(f"{what}: working memory unknown",))
    k, work = 1, sb.working_bytes
    latent = sb.stage.latent
    if sb.stage.kind == SAMPLE:
        if model is None or latent is None:
            return StageRun(UNKNOWN, peak_bytes=sb.peak_bytes,
                            explanation=("the diffusion model or the latent size is unknown: nothing to simulate",))
        k = 2 if sb.batch_factor == 2 and sb.stage.cfg_batched else 1
        if k == 1:
            work = _one_cond_working(sb)
    leaf = largest_module_bytes(model, weights) if model is not None else weights
    leaf = min(weights, leaf or weights)
    streamed = weights if mode in ("sequential", "group") else 0
    in_flight = (2 if mode == "group" else 1) * leaf if streamed else 0
    resident = weights - streamed
    peak = ctx.context + resident + in_flight + work
    minimum = ctx.context + work + leaf
    how = {"full": "keeps every component on the GPU", "model": f"moves {what} to the GPU whole",
           "sequential": "copies each layer in just before it runs", "group": "streams each layer in, one ahead"}[mode]
    if peak > ctx.capacity:
        fix = ((sb.stage.offload_fix or "GPU_memory_mode sequential_cpu_offload (or a _and_qfloat8 mode)")
               if not streamed else "a smaller size or fewer frames")
        return StageRun(OOM, resident, streamed, peak, k, shortfall_bytes=peak - ctx.capacity, minimum_bytes=minimum,
                        explanation=(f"the pipeline {how} and does not load partially: {fmt_gib(peak)} needed, "
                                     f"{fmt_gib(ctx.capacity)} on the card; {fix}",), rules=rules)
    if not streamed:
        return StageRun(FITS, resident, 0, peak, k, minimum_bytes=minimum, rules=rules,
                        explanation=(f"the pipeline {how}",))
    # streamed weights are a slower run by design (RUNS_SLOWER, as a partial load is), however small the cost
    if sb.stage.kind != SAMPLE:  # one pass: its weights copied in once
        transfer_s = streamed / ctx.host_bps
        note = f"the pipeline {how}: {fmt_gib(streamed)} of {what} copied in once (≈ {transfer_s:.0f} s)"
        return StageRun(RUNS_SLOWER, resident, streamed, peak, k, extra_seconds=transfer_s, minimum_bytes=minimum,
                        explanation=(note,), rules=rules)
    cond = sb.batch_factor
    forwards = 2 if cond == 2 and k == 1 else 1
    compute_s = forward_flops(model, latent, max(1, latent.batch) * cond, sb.stage.text_tokens) / (
        ctx.flops * MFU_TRANSFORMER)
    transfer_s = forwards * streamed / ctx.host_bps
    overlap = mode == "group"
    step_s = max(compute_s, transfer_s) if overlap else compute_s + transfer_s
    slowdown = step_s / compute_s if compute_s > 0 else 1.0
    slowdown_high = (compute_s + transfer_s) / compute_s if compute_s > 0 else 1.0
    cost = (f"sampling ≈ {slowdown_high:.1f}× slower" if not overlap and slowdown_high >= 1.05 else
            "sampling about as fast (the copies are small next to the compute)" if not overlap
            else speed_words(slowdown, slowdown_high))
    note = f"the pipeline {how}: {fmt_gib(streamed)} copied per forward, {cost}"
    return StageRun(RUNS_SLOWER, resident, streamed, peak, k, forwards, slowdown=slowdown, slowdown_high=slowdown_high,
                    step_seconds=step_s, minimum_bytes=minimum, explanation=(note,), rules=rules)


def _one_cond_working(sb) -> int:
    """A sampling stage's working memory with cond and uncond run one after another (its peak minus the batched
    extra): what a pack that does not batch CFG needs."""
    return sb.working_bytes - (sb.peak_bytes - sb.min_peak_bytes)


def _model(sb, kind: str):
    return next((it.model for it in sb.items if it.category == "weights" and it.model is not None
                 and it.model.kind == kind), None)


def _dynamic(ctx: _Ctx, model, stage=None) -> bool:
    """Does this model take Dynamic VRAM's path? A GGUF model does not: ComfyUI-GGUF clones the loaded
    patcher into its GGUFModelPatcher, a comfy.model_patcher.ModelPatcher (ComfyUI-GGUF nodes.py:34, :175,
    :238), so it is loaded partially and streamed as in classic mode even when Dynamic VRAM is on. Nor does a
    model a node cloned with disable_dynamic=True (Stage.legacy_path: TorchCompileModel)."""
    if stage is not None and getattr(stage, "legacy_path", ""):
        return False
    return ctx.dynamic and not (model is not None and (model.quantization or "").startswith("gguf"))


def _load_budget(ctx: _Ctx, free: int, min_req: int) -> float:
    """load_models_gpu's weight budget for one model on NVIDIA (model_management.py:683-704 /
    :875-896): B = max(0, F + L − min_req) − L with MIN_WEIGHT_MEMORY_RATIO 0 on NV; NO_VRAM 0.1;
    HIGH_VRAM / --gpu-only full."""
    if ctx.vram_state in ("high", "gpu_only"):
        return math.inf
    if ctx.vram_state == "no":
        return 0.0
    return max(0.0, free - min_req)


def _partial(weights: int, budget: float, largest: int) -> tuple[int, int]:
    """(resident, streamed) of the greedy fill (model_patcher.py:687-812 / :769-896): a full load
    when the budget exceeds the weights; else modules go resident while they fit beside a buffer
    for NUM_STREAMS + 1 casts in flight."""
    if budget >= weights:
        return weights, 0
    buf = (NUM_STREAMS + 1) * largest
    resident = int(max(0, min(weights, budget - buf)))
    return resident, weights - resident


def _dynamic_resident(ctx: _Ctx, weights: int, non_evictable: int) -> tuple[int, int]:
    """Dynamic VRAM: the resident set is the largest prefix of the VBAR that fits beside what
    cannot be evicted and aimdo's 256 MiB headroom, in 32 MiB pages (comfy-aimdo src/plat.h)."""
    room = ctx.capacity - non_evictable - ctx.headroom
    resident = max(0, min(weights, (room // AIMDO_PAGE) * AIMDO_PAGE))
    return resident, weights - resident


def run_sample(sb, ctx: _Ctx) -> StageRun:
    model = _model(sb, DIFFUSION)
    latent = sb.stage.latent
    weights = sb.weights_bytes
    if model is not None and latent is None and sb.stage.working:  # a pack-priced single forward (Stage.working)
        return run_single_pass(sb, ctx, "model")
    if model is None or latent is None:
        return StageRun(UNKNOWN, peak_bytes=sb.peak_bytes,
                        explanation=("the diffusion model or the latent size is unknown: nothing to simulate",))
    cond_needed = sb.batch_factor
    work_batched = sb.working_bytes
    work_single = _one_cond_working(sb)
    batch = max(1, latent.batch)
    est_full = comfy_memory_required(model, latent, 2 * batch)  # always cond+uncond (sampler_helpers.py:121-122 / :133-134)
    est_min = comfy_memory_required(model, latent, batch)
    largest = largest_module_bytes(model, next((it.bytes for it in sb.items if it.model is model), weights))
    rules = ["sampler_helpers.py:109-141 / :121-160 (memory_required for 2·B and B)"]
    notes: list[str] = []

    if _dynamic(ctx, model, sb.stage):
        free = ctx.free_empty  # resident VBAR pages count as free (model_patcher.py get_free_memory, 0.18:312-319)
        k = 2 if cond_needed == 2 and COND_BATCH_FACTOR * est_full < free else 1
        work = work_batched if k == 2 else work_single
        casts = (NUM_STREAMS + 1) * largest
        block = prefetch_block_bytes(model, next((it.bytes for it in sb.items if it.model is model), weights)) \
            if ctx.prefetch else 0
        everything_fits = False
        if block:
            # 0.33 model prefetch: a streamed block is cast whole into one offload stream's buffer, NUM_STREAMS of
            # them kept (model_prefetch.py:99-124, ops.py:126-263), + one weight's compute-side cast as before. A
            # block whose weights are all resident needs no buffer (ops.py:166-176: resident, nothing copied), so
            # the buffers exist only once something streams, and streaming less than a block frees nothing (its
            # bytes come back as buffer): resident = what fits beside the buffers of whole blocks.
            casts = NUM_STREAMS * block + largest
            everything_fits = ctx.context + work + weights + ctx.headroom <= ctx.capacity
            rules.append("model_prefetch.py:62-124, ops.py:126-263 (0.33 prefetch: a streamed block cast whole, "
                         "one buffer per offload stream)")
        non_evictable = ctx.context + work + casts
        resident, streamed = (weights, 0) if everything_fits else _dynamic_resident(ctx, weights, non_evictable)
        minimum = ctx.context + work_single + casts + ctx.headroom
        peak = min(ctx.capacity, ctx.context + weights + work + casts) if streamed else ctx.context + weights + work
        rules += ["aimdo src/plat.h:119-133 (deficit, 256 MiB headroom)", "model_patcher.py:1521-1643 (ModelPatcherDynamic.load)"]
        if block and streamed:
            notes.append(f"ComfyUI 0.33 prefetches each streamed block whole: {NUM_STREAMS} cast buffers of "
                         f"{fmt_gib(block)} (one block each) stay on the card beside the resident weights")
        if not everything_fits and ctx.context + work + casts + ctx.headroom > ctx.capacity:
            if k == 2 and minimum <= ctx.capacity:
                k, work = 1, work_single  # its own estimate is too low to notice; an OOM is what happens
            return _oom_sample(sb, ctx, minimum, work, rules, notes, k, weights)
    else:
        min_req = max(ctx.mim, est_min + ctx.reserve)  # load_models_gpu :625-630 / :798-803
        budget = _load_budget(ctx, ctx.free_empty, min_req)
        resident, streamed = (weights, 0) if ctx.no_partial else _partial(weights, budget, largest)
        free_after = (DIRECTML_FREE - resident) if ctx.no_partial else ctx.free_empty - resident
        k = 2 if cond_needed == 2 and COND_BATCH_FACTOR * est_full < free_after else 1
        work = work_batched if k == 2 else work_single
        transient = NUM_STREAMS * largest if streamed else 0  # casts in flight (ops.py cast_bias_weight)
        peak = ctx.context + resident + work + transient
        minimum = ctx.context + work_single + (NUM_STREAMS * largest)
        rules += ["model_management.py:621-706 / :794-898 (load_models_gpu budget)",
                  "model_patcher.py:687-812 / :769-896 (partial load)"]
        if ctx.no_partial:
            rules.append(DIRECTML_RULE)
            minimum = peak
        if peak > ctx.capacity:
            if ctx.no_partial:
                return _oom_no_partial(sb, ctx, peak, weights, rules, k)
            return _oom_sample(sb, ctx, minimum, work, rules, notes, k, weights, resident=resident, peak=peak)
    if cond_needed == 2:
        rules.append("samplers.py:260-275 / :259-274 (cond batching by free memory)")
        if k == 1:
            notes.append("cond and uncond run one after another (ComfyUI's estimate leaves no room to batch "
                         f"them: 1.5 × {fmt_gib(est_full)} > free)")
    forwards = 2 if (cond_needed == 2 and k == 1) else 1
    compute_s = forward_flops(model, latent, batch * cond_needed, sb.stage.text_tokens) / (ctx.flops * MFU_TRANSFORMER)
    transfer_s = forwards * streamed / ctx.host_bps
    step_s = max(compute_s, transfer_s)  # streams overlap copies with compute (NUM_STREAMS offload streams)
    slowdown = step_s / compute_s if compute_s > 0 else 1.0
    slowdown_high = (compute_s + transfer_s) / compute_s if compute_s > 0 else 1.0
    if streamed:
        where = ("Dynamic VRAM streams" if _dynamic(ctx, model, sb.stage) else
                 "ComfyUI loads the model partially and streams" + (
                     f" (the legacy path, not Dynamic VRAM: {sb.stage.legacy_path})" if ctx.dynamic and sb.stage.legacy_path
                     else " (GGUF: the legacy path, not Dynamic VRAM)" if ctx.dynamic else ""))
        notes.insert(0, f"{where} {fmt_gib(streamed)} of weights from RAM on every forward "
                        f"({fmt_gib(resident)} resident): {speed_words(slowdown, slowdown_high)} "
                        f"({transfer_s:.2f} s of copies against {compute_s:.2f} s of compute per step)")
    outcome = RUNS_SLOWER if streamed else FITS
    return StageRun(outcome, resident, streamed, peak, k, forwards, slowdown=slowdown, slowdown_high=slowdown_high,
                    step_seconds=step_s, elastic=_dynamic(ctx, model, sb.stage),
                    minimum_bytes=minimum, explanation=tuple(notes), rules=tuple(rules),
                    load_need_bytes=int(1.1 * weights) + max(ctx.mim, est_full + ctx.reserve))


def _range(low: float, high: float) -> str:
    return f"{low:.1f}" if round(low, 1) == round(high, 1) else f"{low:.1f}–{high:.1f}"


def speed_words(low: float, high: float) -> str:
    """'sampling ≈ 1.3–2.1× slower', or that the copies hide behind the compute."""
    if high < 1.05:
        return "sampling about as fast (the copies hide behind the compute)"
    return f"sampling ≈ {_range(low, high)}× slower"


def _oom_sample(sb, ctx, minimum, work, rules, notes, k, weights, resident=0, peak=None) -> StageRun:
    peak = peak if peak is not None else minimum
    if minimum > ctx.capacity:
        why = (f"the activations ({fmt_gib(work)}) + CUDA context + cast buffers need {fmt_gib(minimum)} even "
               f"with every weight streamed from RAM; the card has {fmt_gib(ctx.capacity)}")
        short = minimum - ctx.capacity
    else:
        why = (f"ComfyUI keeps {fmt_gib(resident)} of weights resident, leaving less than the "
               f"{fmt_gib(work)} of activations this step really needs (its own estimate is lower); "
               "--reserve-vram makes it stream more")
        short = peak - ctx.capacity
    return StageRun(OOM, resident, max(0, weights - resident), peak, k, shortfall_bytes=short, minimum_bytes=minimum,
                    explanation=tuple([why] + notes), rules=tuple(rules))


def _oom_no_partial(sb, ctx, peak, weights, rules, k=1) -> StageRun:
    """DirectML: ComfyUI loads every model whole (no partial load without --lowvram), so what does not fit is an
    OOM where a CUDA card would stream."""
    return StageRun(OOM, weights, 0, peak, k, shortfall_bytes=peak - ctx.capacity, minimum_bytes=peak,
                    explanation=(f"DirectML: ComfyUI cannot load partially there, so the whole {fmt_gib(weights)} of "
                                 f"weights must fit beside the working memory ({fmt_gib(peak)} needed, "
                                 f"{fmt_gib(ctx.capacity)} on the card); --lowvram turns partial loading on",),
                    rules=tuple(rules) + (DIRECTML_RULE,))


def run_single_pass(sb, ctx: _Ctx, what: str) -> StageRun:
    """Text encoders, CLIP vision: load_models_gpu with memory_required 0 → min_req = MIM
    (sd.py:302-303); one forward per prompt, so streaming costs one copy of the streamed bytes."""
    weights = sb.weights_bytes
    work = sb.working_bytes
    model = _model(sb, TEXT_ENCODER)
    largest = largest_module_bytes(model, weights) if model is not None else weights // 50
    if _dynamic(ctx, model, sb.stage):
        casts = (NUM_STREAMS + 1) * largest
        resident, streamed = _dynamic_resident(ctx, weights, ctx.context + work + casts)
        minimum = ctx.context + work + casts + ctx.headroom
    else:
        budget = _load_budget(ctx, ctx.free_empty, ctx.mim)
        resident, streamed = (weights, 0) if ctx.no_partial else _partial(weights, budget, largest)
        minimum = ctx.context + work + (weights if ctx.no_partial else NUM_STREAMS * largest)
    peak = ctx.context + resident + work + (NUM_STREAMS * largest if streamed else 0)
    if ctx.no_partial and peak > ctx.capacity:
        return _oom_no_partial(sb, ctx, peak, weights, ["sd.py:302-303 (memory_required 0)"])
    if minimum > ctx.capacity:
        return StageRun(OOM, resident, streamed, peak, shortfall_bytes=minimum - ctx.capacity, minimum_bytes=minimum,
                        explanation=(f"the {what} needs {fmt_gib(minimum)} even with its weights streamed",))
    extra = streamed / ctx.host_bps
    notes = ()
    if streamed:
        notes = (f"the {what} is loaded partially: {fmt_gib(streamed)} streamed from RAM once per prompt "
                 f"(+{extra:.1f} s)",)
    return StageRun(RUNS_SLOWER if streamed else FITS, resident, streamed, min(peak, ctx.capacity),
                    extra_seconds=extra, minimum_bytes=minimum, explanation=notes,
                    rules=("model_management.py:621-706 / :794-898", "sd.py:302-303 (memory_required 0)"),
                    load_need_bytes=int(1.1 * weights) + ctx.mim)


def run_train(sb, ctx: _Ctx) -> StageRun:
    """TrainLoraNode loads the model with load_models_gpu(force_full_load=not offloading)
    (nodes_train.py:1207-1209): whole on the GPU, or with offloading partially, streaming the rest."""
    weights, work = sb.weights_bytes, sb.working_bytes
    rules = ("comfy_extras/nodes_train.py:1207-1209 (force_full_load unless offloading)",)
    if not any(it.category == "working" and "activations" in it.label for it in sb.items):
        return StageRun(UNKNOWN, peak_bytes=sb.peak_bytes,
                        explanation=("the training activations are unknown: nothing to simulate",), rules=rules)
    if not (sb.stage.train or {}).get("offloading"):
        peak = ctx.context + weights + work
        if peak > ctx.capacity:
            return StageRun(OOM, weights, 0, peak, shortfall_bytes=peak - ctx.capacity, minimum_bytes=peak,
                            explanation=(f"training loads the whole model ({fmt_gib(weights)}) and keeps "
                                         f"{fmt_gib(work)} of adapter, gradients, optimizer states and activations: "
                                         f"{fmt_gib(peak - ctx.capacity)} short",), rules=rules)
        return StageRun(FITS, weights, 0, peak, minimum_bytes=peak, rules=rules)
    model = _model(sb, DIFFUSION)
    largest = largest_module_bytes(model, weights) if model is not None else weights // 50
    budget = _load_budget(ctx, ctx.free_empty, ctx.mim + work)
    resident, streamed = _partial(weights, budget, largest)
    minimum = ctx.context + work + NUM_STREAMS * largest
    peak = ctx.context + resident + work + (NUM_STREAMS * largest if streamed else 0)
    if minimum > ctx.capacity:
        return StageRun(OOM, resident, streamed, peak, shortfall_bytes=minimum - ctx.capacity, minimum_bytes=minimum,
                        explanation=("even with the weights streamed, the training terms do not fit",), rules=rules)
    notes = (f"offloading: {fmt_gib(streamed)} of weights streamed from RAM on every forward and backward "
             "(several times slower)",) if streamed else ()
    return StageRun(RUNS_SLOWER if streamed else FITS, resident, streamed, min(peak, ctx.capacity),
                    minimum_bytes=minimum, explanation=notes, rules=rules)


def run_vae(sb, ctx: _Ctx, earlier: list[StageRun]) -> StageRun:
    vae = _model(sb, VAE)
    latent = sb.stage.latent
    decode = sb.stage.kind == VAE_DECODE
    op = "decode" if decode else "encode"
    if ctx.cpu_vae:
        return StageRun(FITS, 0, 0, ctx.context, explanation=(f"--cpu-vae: the VAE {op} runs on the CPU in fp32 "
                                                             "(no VRAM, much slower)",),
                        rules=("model_management.py:924-941 / :1138-1155 (vae_device)",))
    if vae is None or latent is None or sb.working_bytes <= 0:
        return StageRun(UNKNOWN, peak_bytes=sb.peak_bytes,
                        explanation=(f"VAE {op} working memory unknown: nothing to simulate",))
    weights = sb.weights_bytes
    batch = max(1, latent.batch)
    # on AMD, ComfyUI's own estimate of an AutoencoderKL decode is 2.73x (the stage's working memory already is)
    ratio = vae_memory.amd_kl_ratio(vae.family, getattr(ctx.device, "vendor", ""))
    per_item_true = sb.working_bytes / batch  # traced decode memory is linear in the batch (vae_memory.py)
    rules = ["sd.py:788-827 / :941-993 (decode: batch_number = free // estimate)" if decode else
             "sd.py:858-900 / :1024-1073 (encode: batch_number = free // estimate)"]
    if ratio != 1.0:
        rules.append(vae_memory.AMD_KL_RULE)
    ds = vae_dtype_bytes(vae.family, ctx.device) if ctx.device is not None else 2
    try:
        shape = (1, latent.channels or 16, latent.frames, latent.height, latent.width)
        est = (int(ratio * vae_memory.comfy_heuristic_decode_bytes(vae.family, shape, ds)) if decode
               else int(per_item_true))
    except Exception:  # a VAE family ComfyUI's table here does not cover: use the traced need
        est = int(per_item_true)
    est = max(est, 1)
    if sb.stage.tiled or sb.stage.auto_tiled:
        # explicit tiling: the node's own tiles (stages.vae.vae_working priced them); decode_tiled still
        # loads with the full-image estimate (sd.py:831-832 / :997-998)
        peak = ctx.context + weights + sb.working_bytes
        if peak > ctx.capacity:
            return StageRun(OOM, weights, 0, peak, shortfall_bytes=peak - ctx.capacity, minimum_bytes=peak,
                            explanation=("the tiles chosen do not fit",), rules=tuple(rules))
        return StageRun(FITS, weights, 0, peak, images_per_call=1, calls=batch, rules=tuple(rules))
    if ctx.dynamic:
        free = ctx.free_empty - weights  # patcher.get_free_memory adds resident pages (0.18 sd.py:950)
        avail = ctx.capacity - ctx.context - ctx.headroom - weights
    else:
        need = int(1.1 * weights) + max(ctx.mim, est + ctx.reserve)
        # what stays loaded from the sampler (smart memory keeps it until a load needs room)
        held = max((r.resident_bytes for r in earlier if r.resident_bytes), default=0) if ctx.smart_memory else 0
        free_before = ctx.free_empty - held
        free = max(free_before, min(need, ctx.free_empty)) - weights  # free_memory evicts until F ≥ need (as far as it can)
        avail = free
    video = bool(latent.frames and latent.frames > 1 and latent.is_video)
    per_call = 1 if video and batch == 1 else max(1, min(batch, int(free // est)))
    calls = math.ceil(batch / per_call)
    work = int(per_item_true * per_call)
    peak = ctx.context + weights + work + max(0, ctx.free_empty - free - weights)  # + what stays loaded
    notes = []
    if batch > 1:
        notes.append(f"{per_call} image{'s' if per_call > 1 else ''} per {op} call, {calls} call{'s' if calls > 1 else ''} "
                     f"(ComfyUI's estimate {fmt_gib(est)} per image, {fmt_gib(free)} free)")
    if work <= avail:
        return StageRun(FITS, weights, 0, min(peak, ctx.capacity), images_per_call=per_call, calls=calls,
                        explanation=tuple(notes), rules=tuple(rules))
    # the first call runs out of memory: ComfyUI retries tiled (sd.py:807 / :971-972)
    rules.append("sd.py:807-827 / :971-993 (OOM -> tiled retry)")
    if vae.family not in vae_memory.FAMILIES:  # an audio / 3D / formula-priced VAE: no tiled figure here
        return StageRun(UNKNOWN, weights, 0, min(peak, ctx.capacity), images_per_call=per_call, calls=calls,
                        explanation=(f"the {op} needs {fmt_gib(work)} and {fmt_gib(max(0, avail))} is free: ComfyUI "
                                     f"then retries tiled, and the tiled {op} memory of {vae.family} is not known "
                                     "here (can't tell whether it fits)",), rules=tuple(rules))
    fam = vae_memory.get_family(vae.family)
    one = (1, latent.channels or 16, latent.frames, latent.height, latent.width)
    try:
        if fam.is_video and decode:
            tile = 256 // fam.spatial  # sd.py:821-824 / :987-990: 256-px tiles, no temporal tiling
            tiled = vae_memory.vae_decode_bytes(fam.id, one, tile=tile, dtype_bytes=ds)
            label = f"{tile}×{tile} latent tiles ({tile * fam.spatial} px), all frames at once"
            work_factor = _overlap_work(latent.height, tile, tile // 4) * _overlap_work(latent.width, tile, tile // 4)
        elif decode:
            tiled = vae_memory.vae_decode_bytes(fam.id, one, tile=64, dtype_bytes=ds)  # decode_tiled_: 64×64, overlap 16, 3 passes
            label = "64×64 latent tiles (512 px), three passes averaged"
            work_factor = 3.0
        else:
            px = (1, latent.pixel_frames if latent.is_video else None, latent.pixel_height or latent.height * 8,
                  latent.pixel_width or latent.width * 8)
            tiled = vae_memory.vae_encode_bytes(fam.id, px, tile=512 if not fam.is_video else 256, dtype_bytes=ds)
            label = "512-px tiles, three passes" if not fam.is_video else "256-px tiles"
            work_factor = 3.0 if not fam.is_video else 1.3
    except Exception as exc:  # noqa: BLE001
        return StageRun(OOM, weights, 0, peak, shortfall_bytes=work - avail, minimum_bytes=ctx.context + weights + work,
                        explanation=(f"the {op} does not fit and its tiled fallback cannot be priced ({exc})",),
                        rules=tuple(rules))
    # a known regression's extra memory (torch 2.9.0's conv3d path) is in every call, tiles too; not in ComfyUI's estimate
    factor = vae_working_factor(vae.family, ctx.device, stage=sb.stage)[0] if ctx.device else 1.0
    tiled = int(ratio * factor * tiled)
    dec_s = _vae_seconds(vae, latent, ctx)
    if tiled > avail:
        return StageRun(OOM, weights, 0, ctx.context + weights + tiled, images_per_call=per_call, calls=calls,
                        tiled_fallback=label, shortfall_bytes=tiled - avail,
                        minimum_bytes=ctx.context + weights + tiled,
                        explanation=(f"the {op} runs out of memory, and so does ComfyUI's tiled retry ({label}: "
                                     f"{fmt_gib(tiled)} needed, {fmt_gib(avail)} free)",), rules=tuple(rules))
    extra = dec_s * (0.5 + (work_factor - 1.0))  # the failed attempt (about half a decode) + the tiles' extra work
    notes.append(f"the {op} runs out of memory once ({fmt_gib(work)} needed, {fmt_gib(avail)} free), then ComfyUI "
                 f"retries tiled ({label}): +{extra:.0f} s")
    return StageRun(RUNS_SLOWER, weights, 0, ctx.context + weights + max(tiled, 0) + max(0, ctx.free_empty - free - weights),
                    images_per_call=1, calls=batch, tiled_fallback=label, extra_seconds=extra,
                    minimum_bytes=ctx.context + weights + tiled, explanation=tuple(notes), rules=tuple(rules))


def _overlap_work(size: int, tile: int, overlap: int) -> float:
    if size <= tile:
        return 1.0
    n = len(range(0, size - overlap, tile - overlap))  # utils.tiled_scale_multidim
    return n * tile / size


def vae_flops_per_pixel(vae) -> float:
    """FLOPs per output pixel (per frame for video) of a VAE decoder's convolution stack:
    per level ~6 k×k(×k) convolutions at that level's channels, on a quarter of the pixels of the
    next level up: Σ_l 6·2·K·c_l² / 4^l (K = 9 for 2-D, 27 for the causal 3-D convs)."""
    arch = vae.arch or {}
    base = int(arch.get("base_channels", 128) or 128)
    mult = arch.get("channel_mult") or (1, 2, 4, 4)
    try:
        video = vae_memory.get_family(vae.family).is_video
    except Exception:  # noqa: BLE001
        video = False
    k = 27 if video else 9
    return float(sum(6 * 2 * k * (base * m) ** 2 / 4**level for level, m in enumerate(mult)))


def _vae_seconds(vae, latent: LatentShape, ctx: _Ctx) -> float:
    sc = latent.spatial_compression or 8
    frames = latent.pixel_frames if latent.is_video else 1
    pixels = max(1, latent.batch) * (frames or 1) * (latent.pixel_height or latent.height * sc) * (
        latent.pixel_width or latent.width * sc)
    return vae_flops_per_pixel(vae) * pixels / (ctx.flops * MFU_CONV)


# ---------------------------------------------------------------------------------------------
def overall(runs: list[StageRun]) -> tuple[str, float, float, float]:
    """(worst outcome, slowdown of the sampling stages (low, high), extra one-off seconds)."""
    if not runs:
        return UNKNOWN, 1.0, 1.0, 0.0
    worst = max(runs, key=lambda r: SEVERITY[r.outcome]).outcome
    slow = max((r.slowdown for r in runs), default=1.0)
    slow_high = max((r.slowdown_high for r in runs), default=1.0)
    extra = sum(r.extra_seconds for r in runs)
    return worst, slow, slow_high, extra
