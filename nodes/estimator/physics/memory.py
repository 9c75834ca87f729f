"""Working-memory models: activations of a diffusion-model step and of a text-encoder pass.

Weights are not working memory (they come exact from the file headers). What is modelled here
is what a forward pass allocates on top: hidden states, attention (as a fused flash/SDPA kernel
runs it on CUDA: output + log-sum-exp, no N×N matrix), MLP intermediates.

Two sources, best first:
1. constants traced from ComfyUI's own model code on the meta device at full size
   (``bench/trace_working_memory.py`` -> ``data/working_memory.json``; method and numbers in
   docs/working-memory.md), evaluated with the per-architecture formula stored beside them;
2. a first-principles transformer formula (per token: residual + normed input + q/k/v + MLP
   intermediate), used for architectures the tracer has not covered, said as "uncalibrated".

VAE decode/encode working memory lives in vae_memory.py.
"""
from __future__ import annotations

import contextvars

import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

from ..families import registry
from ..model_info import WAN_TASK_VARIANTS
from ..workload import LatentShape

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")

# Prompt lengths ComfyUI pads text to (tokenizer min_length): Flux's T5 256
# (comfy/text_encoders/flux.py:15), Wan's umT5 512 (comfy/text_encoders/wan.py:14), SD3's T5 77
# (sd3_clip.py:36). Longer prompts give more tokens; the graph reader passes its own count.
# Flux.2 pads its conditioning to 512 (model_base.Flux2.extra_conds), HiDream's T5 and Llama to 128
# (text_encoders/hidream.py:14-15), LTX-2's Gemma 3 to 1024 (text_encoders/lt.py:76); the LLM-encoded
# families without padding (Z-Image, Lumina 2, HunyuanVideo 1.5) assume a 256-token templated prompt.
# Lotus: LotusConditioning's fixed [1, 2, 1024] (comfy_extras/nodes_lotus.py); ACE-Step: tags + lyrics, the
# traced 64 + 256 assumed; Hunyuan3D 2.1: 1370 DINOv2-L image tokens (518 px: 37 x 37 patches + CLS), 2.0
# multiview 1370 per view (4 views assumed); LongCat: its tokenizer pads to 512; Anima: the LLM adapter pads to 512;
# ACE-Step 1.5: 128 caption tokens (traced) + 128 lyric tokens assumed; SVD: one CLIP-ViT-H image embedding.
# OmniGen2: the prompt in its chat template, unpadded (text_encoders/omnigen2.py; the templates' prompts give 43-73).
DEFAULT_TEXT_TOKENS = registry.TEXT_TOKENS  # each family module's TEXT_TOKENS
TEXT_TOKENS_OF_LATENT = registry.TEXT_TOKENS_OF_LATENT  # a conditioning whose length the latent fixes
DEFAULT_TE_TOKENS = registry.TE_TOKENS  # families/text_encoders.py TE_TOKENS

# Aliases: families that share an architecture's working-memory profile (used when the family has no
# traced entry of its own).
WORKING_MEMORY_ALIAS = registry.WORKING_MEMORY_ALIAS

# One family id, several traced configurations: the arch numbers read from the file (families.py)
# pick the entry. (family, arch key, value, traced entry).
ARCH_ROUTES = registry.ARCH_ROUTES

# Tasks a file's name (name_infer._variant) or the catalogue's variant names when no header was read: they pick the
# traced entry the way families.py's arch["task"] does for a header. ModelInfo puts them into its arch itself.
VARIANT_TASKS = WAN_TASK_VARIANTS


def model_arch(model) -> Mapping[str, object]:
    """A model's arch for the working-memory lookup (ModelInfo already carries the task its variant names;
    this also serves other objects with ``arch`` and ``variant``)."""
    arch = model.arch if isinstance(getattr(model, "arch", None), Mapping) else {}
    variant = getattr(model, "variant", None)
    if not arch.get("task") and variant in VARIANT_TASKS:
        return {**arch, "task": variant}
    return arch


# Tokens a traced entry's model attends over that the stage's latent does not show, and the latent creators whose
# latent already holds them: the family modules' EXTRA_TOKENS / LATENT_HAS_EXTRA sections (families/wan.py)
EXTRA_TOKENS = registry.EXTRA_TOKENS
LATENT_HAS_EXTRA = registry.LATENT_HAS_EXTRA


def working_memory_key(family: str, arch: Mapping[str, object] | None = None) -> str:
    """The traced entry for a model: the one its arch numbers point at, its family's own, or its alias's."""
    traced = traced_constants()
    arch = arch if isinstance(arch, Mapping) else {}
    for fam, key, value, target in ARCH_ROUTES:
        if family == fam and arch.get(key) == value and target in traced:
            return target
    if family in traced:
        return family
    return WORKING_MEMORY_ALIAS.get(family, family)


# Live-tensor traces (fake CUDA tensors) see every tensor the model code keeps, but not the
# caching allocator's rounding and fragmentation, cuDNN/cuBLAS workspaces, or copies an attention
# backend makes of non-contiguous q/k/v. Published ComfyUI runs put the real sampling peak above
# the traced activations by a factor fitted per architecture (docs/accuracy.md):
# - Flux: 1.75, from Flux at 1600×1600 on an RTX 5090 running batch 22 and not 23
#   (Comfy-Org/ComfyUI#10737; weights streamed, as ComfyUI does at that batch);
# - Qwen-Image: 1.4, from the docs' 86 % of a 24 GB RTX 4090D (docs.comfy.org Qwen-Image
#   tutorial), consistent with batch 47 at 1328² running on an RTX 5090 (Comfy-Org/ComfyUI#10725);
# - HunyuanVideo: 1.6, from ~22 GB at 960×544×129 on a 4090 (kijai/ComfyUI-HunyuanVideoWrapper#189);
# - LTX-2 (19B): 1.4, the highest factor at which the calibration half's published LTX-2 run is not called out of
#   memory (families/ltx.py, bench/sweep_calibration.py);
# - any other architecture: 1.6, the middle of those. For Wan (native and WanVideoWrapper) the calibration half
#   of the published outcomes is flat from 1.3 to 1.6 and no factor separates its OOMs from its runs
#   (bench/sweep_calibration.py, docs/working-memory.md), so 1.6 stays. The range keeps the bare trace (low) and
#   1.1 × the factor (high). A GPU measurement of max_memory_reserved should replace this fit.
ACTIVATION_CALIBRATION = registry.CALIBRATION  # each family module's CALIBRATION
DEFAULT_CALIBRATION = 1.6
ACTIVATION_LOW, ACTIVATION_HIGH_OVER = 1.0, 1.1


def calibration(family: str, compiled: bool = False) -> float:
    """Traced activations × this = the published peak; `compiled`: the workflow runs the model under torch.compile
    (TorchCompileModel), where a family measured that way has its own factor (registry.COMPILED_CALIBRATION)."""
    group = family_group(family)
    if compiled and group in registry.COMPILED_CALIBRATION:
        return registry.COMPILED_CALIBRATION[group]
    return ACTIVATION_CALIBRATION.get(group, DEFAULT_CALIBRATION)


@dataclass(frozen=True)
class WorkingMemory:
    bytes: int
    tokens: int  # image/video tokens the transformer attends over (0 for UNet-style where not used)
    assumption: str  # one line a user can read
    source: str  # "traced" | "formula"
    traced_bytes: int = 0  # before the allocator calibration (the low end of the range)


@lru_cache(maxsize=4)
def _data_doc(name: str) -> Mapping:
    """A JSON object of data/ (empty if absent or unreadable), read once."""
    try:
        with open(os.path.join(DATA_DIR, name), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _traced_doc() -> Mapping:
    return _data_doc("working_memory.json")


@lru_cache(maxsize=1)
def traced_constants() -> Mapping[str, dict]:
    """Architecture id -> traced entry from data/working_memory.json (empty if absent)."""
    data = _traced_doc()
    archs = data.get("architectures", data)
    return {k: v for k, v in archs.items() if isinstance(v, dict) and "coefficients" in v}


def traced_version(key: str) -> str:
    """The ComfyUI version an entry was traced with: its own provenance, else the file's."""
    entry = traced_constants().get(key, {})
    for prov in (entry.get("provenance"), _traced_doc().get("provenance")):
        if isinstance(prov, Mapping) and prov.get("comfyui_version"):
            return f"ComfyUI {prov['comfyui_version']}"
    return "ComfyUI"


def family_group(family: str) -> str:
    """Coarse group used for token rules: flux, wan, unet, sd3, qwen-image, ..."""
    if family.startswith(("flux", "chroma")):
        return "flux"
    if family.startswith("wan"):
        return "wan"
    if family in ("sdxl", "sd15", "sd2", "lotus-d", "svd", "sonic-unet", "dragnuwa"):
        return "unet"
    return family


def latent_tokens(family: str, arch: Mapping[str, object], latent: LatentShape) -> int:
    """Tokens the transformer attends over for one sample.

    DiTs patchify the latent: Flux, SD3, Qwen-Image, Wan use 2×2 spatial patches (Wan: (1,2,2),
    model_detection.py patch_size), so tokens = frames · ceil(H/2) · ceil(W/2). UNets attend at
    full latent resolution at their first attention level (SD1.5) or at /2 (SDXL).
    """
    patch = arch.get("patch_size") if isinstance(arch, Mapping) else None
    if isinstance(patch, (list, tuple)) and patch:
        ph, pw = int(patch[-2]), int(patch[-1])
    elif isinstance(patch, int):
        ph = pw = patch
    else:
        ph = pw = 2
    frames = latent.frames or 1
    if isinstance(patch, (list, tuple)) and len(patch) == 3 and int(patch[0]) > 1:
        # a temporal patch too (CogVideoX 1.5: patch_size_t 2; the model pads the frames to a multiple of it,
        # ldm/cogvideo/model.py:450-451 in 0.33.0)
        frames = math.ceil(frames / int(patch[0]))
    group = family_group(family)
    if group == "unet":
        div = 2 if family == "sdxl" else 1
        return math.ceil(latent.height / div) * math.ceil(latent.width / div)
    tokens = frames * math.ceil(latent.height / ph) * math.ceil(latent.width / pw)
    window = arch.get("window_tokens") if isinstance(arch, Mapping) else None
    # a model that runs a longer sequence in windows of this many tokens, one after another (MiniMax Music 3)
    return min(tokens, int(window)) if window else tokens


def text_tokens_for(family: str, requested: int | None = None) -> int:
    if requested:
        return int(requested)
    return DEFAULT_TEXT_TOKENS.get(family, DEFAULT_TEXT_TOKENS.get(family_group(family), 77))


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for p in str(text or "").lstrip("v").split(".")[:4]:
        digits = "".join(ch for ch in p if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) + (0,) * (4 - len(parts))


def era_factor(key: str, release: str, batch: int, tokens: int, text_tokens: int,
               latent: LatentShape) -> tuple[float, Mapping | None]:
    """(factor, era) for the working memory of `key` under ComfyUI `release`: an older release's model code needed
    more (data/working_memory_eras.json, traced from that release's code: Wan before PRs #9898 / #10062); the
    factor is that era's traced figure over the current one at these shapes, for every key that shares the traced
    architecture's block code. (1.0, None) for an unknown release or a key without eras."""
    if not release:
        return 1.0, None
    doc = _data_doc("working_memory_eras.json")
    arch = next((a for a, prefixes in (doc.get("applies_to") or {}).items()
                 if any(key == p or key.startswith(p + "-") for p in prefixes)), None)
    rows = (doc.get("architectures") or {}).get(arch) if arch else None
    current = traced_constants().get(arch) if arch else None
    if not rows or current is None:
        return 1.0, None
    have = _version(release)
    era = next((r for r in rows if r.get("before") and have < _version(r["before"])), None)
    if era is None:
        return 1.0, None
    now, then = _eval_traced(current, batch, tokens, text_tokens, latent), _eval_traced(era, batch, tokens, text_tokens,
                                                                                      latent)
    if not now or not then or then <= now:
        return 1.0, None
    return then / now, era


def _eval_traced(entry: Mapping, batch: int, tokens: int, text_tokens: int, latent: LatentShape) -> int | None:
    """The traced formula: batch·(a·tokens + c·text_tokens) + d·tokens + q·tokens² + b (bytes).

    a: per image token and sample, c: per text token and sample, d: per token once (RoPE tables
    shared by the batch), q: per token² (text encoders whose attention bias grows with length;
    ~0 for diffusion models under fused attention), b: fixed. docs/working-memory.md.
    """
    coeff = entry.get("coefficients", {})
    try:
        a, b, c, d, q = (float(coeff.get(k, 0.0) or 0.0) for k in ("a", "b", "c", "d", "q"))
    except (TypeError, ValueError):
        return None
    return int(batch * (a * tokens + c * text_tokens) + d * tokens + q * tokens * tokens + b)


def _formula_bytes(arch: Mapping[str, object], batch: int, tokens: int, text_tokens: int, compute_bytes: int) -> int:
    """First-principles DiT block peak: residual + normed input + q,k,v + attention out + MLP.

    Per token at a block's peak (fused attention keeps no N×N matrix):
      hidden·(2 + 3 + 1) for x, norm(x), q/k/v, attention output, plus ffn·2 (MLP in + activation).
    Uncalibrated: used only where the tracer has no entry.
    """
    hidden = int(arch.get("hidden_size", 3072) or 3072)
    ffn = int(arch.get("ffn_dim", 4 * hidden) or 4 * hidden)
    per_token = (6 * hidden + 2 * ffn) * compute_bytes
    return int(batch * (tokens + text_tokens) * per_token)


# Inside ComfyUI, the adapter can set a live tracer: (model file path, latent, batch, text tokens)
# -> (working bytes, provenance) traced with ComfyUI's own model code at these exact shapes, or None
# (not traced: the table / formula below answers). Outside ComfyUI it stays unset (the command line).
LIVE_TRACER: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("vram_budget_live_tracer", default=None)
# The same for one training step (forward + backward, TrainLoraNode's default checkpoint_depth 1).
LIVE_TRAIN_TRACER: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("vram_budget_live_train_tracer",
                                                                                   default=None)


def diffusion_working(
    family: str,
    arch: Mapping[str, object],
    latent: LatentShape,
    batch: int,
    text_tokens: int | None = None,
    compute_bytes: int = 2,
    path: str | None = None,
    references: tuple[tuple[int, int], ...] = (),
    compiled: bool = False,
    release: str = "",
) -> WorkingMemory | None:
    """Working memory of one model call on `batch` samples (cond+uncond batched counts 2×); None for
    an architecture without a traced entry or a known width (a family ComfyUI may load but this
    estimator does not know) unless the live tracer measured it.

    ``path``: the model file, when it is on this machine; with a live tracer set (inside ComfyUI)
    the forward is traced at these shapes and that figure is used. ``references``: (rows, columns) of
    reference latents an edit model attends over next to the image (Kontext, Qwen-Image-Edit, Flux.2,
    LongCat edit: their tokens join the image's). ``release``: the ComfyUI release whose model code runs, when
    known: an older release's code may need more (era_factor)."""
    tokens = latent_tokens(family, arch, latent)
    key = working_memory_key(family, arch)
    extra_tokens, extra_what = (EXTRA_TOKENS[key](latent.height, latent.width)
                                if key in EXTRA_TOKENS and latent.source_type not in LATENT_HAS_EXTRA.get(key, ())
                                else (0, ""))
    tokens += extra_tokens
    ref_tokens = 0
    if references and family_group(family) != "unet":
        ref_tokens = sum(latent_tokens(family, arch, LatentShape(1, latent.channels, h, w)) for h, w in references)
        tokens += ref_tokens
    ttok = text_tokens_for(family, text_tokens)
    ttok_why = ""
    if text_tokens is None and family in TEXT_TOKENS_OF_LATENT:
        ttok, ttok_why = TEXT_TOKENS_OF_LATENT[family](latent)
        ttok_why = f" ({ttok_why})"
    if arch.get("ar_block_frames"):
        return _autoregressive_working(family, arch, latent, batch, tokens, ttok, key, int(arch["ar_block_frames"]),
                                       compute_bytes)
    tracer = LIVE_TRACER.get()
    if tracer is not None and path and not ref_tokens:
        live = tracer(path, latent, batch, ttok)
        if live is not None:
            value, provenance = live
            k = calibration(family, compiled)
            return WorkingMemory(int(value * k), tokens,
                                 f"batch {batch}, {tokens} latent tokens + {ttok} text tokens; traced live with "
                                 f"{provenance} at these shapes × {k} for the allocator and untraced transients",
                                 "live", traced_bytes=int(value))
    entry = traced_constants().get(key)
    shape = f"{latent.pixel_width or latent.width * 8}×{latent.pixel_height or latent.height * 8}"
    if latent.frames:
        shape += f"×{latent.pixel_frames or latent.frames} frames"
    if entry is not None:
        value = _eval_traced(entry, batch, tokens, ttok, latent)
        if value is not None:
            ver = traced_version(key)
            factor, era = era_factor(key, release, batch, tokens, ttok, latent)
            if era is not None:
                value = int(value * factor)
                ver = (f"{ver} model code, × {factor:.2f} for ComfyUI {release}'s older code (traced at ComfyUI "
                       f"{era['release']}, {era['what']}: working_memory_eras.json),")
            else:
                ver = f"{ver} model code"
            k = calibration(family, compiled)
            refs = f" (incl. {ref_tokens} of {len(references)} reference latent(s))" if ref_tokens else ""
            if extra_tokens:
                refs += f" (incl. {extra_tokens} the model appends: {extra_what})"
            return WorkingMemory(
                int(value * k), tokens,
                f"{shape}, batch {batch}, {tokens} latent tokens{refs} + {ttok} text tokens{ttok_why}; fused SDPA attention, "
                f"16-bit compute; constants traced from {ver} × {k} for the allocator and untraced "
                "transients (fitted on published runs, docs/accuracy.md)",
                "traced", traced_bytes=value,
            )
    if not arch.get("hidden_size"):
        return None  # an architecture nothing here knows (no width): no figure rather than a made-up one
    value = _formula_bytes(arch, batch, tokens, ttok, compute_bytes)
    k = calibration(family, compiled)
    return WorkingMemory(
        int(value * k), tokens,
        f"{shape}, batch {batch}, {tokens} latent tokens + {ttok} text tokens{ttok_why}; fused attention, "
        f"16-bit compute; first-principles formula (uncalibrated for {family}) × {k}",
        "formula", traced_bytes=value,
    )


def _autoregressive_working(family: str, arch: Mapping[str, object], latent: LatentShape, batch: int, tokens: int,
                            ttok: int, key: str, block_frames: int, compute_bytes: int) -> WorkingMemory | None:
    """A KV-cached autoregressive video model (arch ``ar_block_frames``; ComfyUI 0.33 comfy/ldm/wan/ar_model.py
    CausalWanModel, sampled by k_diffusion/sampling.py:1845-1957 sample_ar_video): each call denoises one block of
    ``block_frames`` latent frames, attending over the KV cache of the frames before it. Working memory = the
    traced profile of the same backbone at one block's tokens (× the calibration) + the KV cache, allocated once
    for the whole video (sampling.py:1885 init_kv_caches(bs, lat_t · frame_seq_len); ar_model.py:228-237: a k and
    a v tensor [bs, max_seq_len, heads, head_dim] per layer, in the model's dtype), which is exact."""
    frames = max(1, latent.frames or 1)
    block_tokens = (tokens // frames) * min(block_frames, frames)
    entry = traced_constants().get(key)
    value = _eval_traced(entry, batch, block_tokens, ttok, latent) if entry is not None else None
    if value is None:
        return None
    hidden, depth = int(arch.get("hidden_size") or 0), int(arch.get("depth") or 0)
    if not hidden or not depth:
        return None
    kv = batch * tokens * depth * 2 * hidden * compute_bytes
    k = calibration(family)
    return WorkingMemory(
        int(value * k) + kv, tokens,
        f"autoregressive: {block_frames} latent frame(s) ({block_tokens} tokens) per call, batch {batch}, "
        f"+ {ttok} text tokens: constants traced from {traced_version(key)} model code ({key}) × {k}; + the KV cache "
        f"of all {tokens} tokens ({depth} layers × k and v × {hidden} × {compute_bytes} bytes, "
        "ldm/wan/ar_model.py:228-237, sampling.py:1885)",
        "traced", traced_bytes=value + kv,
    )


def text_encoder_working(family: str, arch: Mapping[str, object], tokens: int | None = None, compute_bytes: int = 2) -> WorkingMemory:
    """Activations of one text-encoder pass: small next to the weights (tens of MB)."""
    ntok = int(tokens or DEFAULT_TE_TOKENS.get(family, 77))
    hidden = int(arch.get("hidden_size", 4096) or 4096)
    ffn = int(arch.get("ffn_dim", 4 * hidden) or 4 * hidden)
    return _text_encoder_working(working_memory_key(family, arch), ntok, hidden, ffn, compute_bytes)


@lru_cache(maxsize=1024)
def _text_encoder_working(key: str, ntok: int, hidden: int, ffn: int, compute_bytes: int) -> WorkingMemory:
    """text_encoder_working's figure, once per traced entry and token count (a workflow's many prompts share it)."""
    entry = traced_constants().get(key)
    if entry is not None:
        value = _eval_traced(entry, 1, ntok, 0, LatentShape(1, None, 0, 0))
        if value is not None:
            return WorkingMemory(value, ntok, f"{ntok} tokens; traced constants ({key}, {traced_version(key)})",
                                 "traced")
    value = ntok * (6 * hidden + 2 * ffn) * compute_bytes
    return WorkingMemory(value, ntok, f"{ntok} tokens; first-principles formula", "formula")
