"""Wan planner: the largest frames and resolution a Wan model can do on a card.

Pure planning maths on top of the shared estimator (no second memory model): every candidate
size is turned into a Workload (umT5 text encode, one sampling stage per expert, VAE decode) and
priced with ``budget.assess``; the search only decides which candidates to price.

Rules the outputs obey (ComfyUI's own Wan code: comfy_extras/nodes_wan.py, comfy/ldm/wan/model.py):
- length = 4k+1: the Wan VAE compresses time 4× causally, latent frames T = (L-1)//4+1 and a
  decode yields 4T-3 frames, so other lengths are floored by ComfyUI anyway (80 -> 77);
- width / height are multiples of the VAE's spatial factor × the DiT's (1, 2, 2) patch:
  16 for Wan 2.1 / Wan 2.2 14B (VAE /8, comfy/model_detection.py patch_size (1, 2, 2)), 32 for
  Wan 2.2 TI2V 5B (Wan 2.2 VAE /16; ComfyUI's Wan22ImageToVideoLatent steps width/height by 32);
- a cut resolution keeps the target's aspect ratio within ASPECT_TOLERANCE;
- frame rates: 16 fps for Wan 2.1 and Wan 2.2 A14B, 24 fps for Wan 2.2 TI2V 5B (Wan-Video's
  configs: shared_config.sample_fps = 16, wan_ti2v_5B.sample_fps = 24); native sizes 832×480 /
  1280×720 (14B, 1.3B: 480p) and 1280×704 (5B) (Wan2.2 configs SUPPORTED_SIZES).

"Fits" means what the shared estimator calls fitting without RAM offload: every stage's peak,
with cond and uncond run one after another where ComfyUI does that by itself, is within the
card (``budget.assess`` verdict "fits" or "tight" under classic memory management). What keeps
the original target instead (Wan video wrapper block swap, ``--reserve-vram``, Dynamic VRAM,
a lower weight precision, a bigger card) is priced on the target's own budget.

Search: the candidates form a path from the target down to the smallest size, each step cutting
one dimension (frames: length first, resolution: size first, balanced: whichever has been cut
less, relatively), so the peak never grows along the path and a binary search finds the first
candidate that fits in ~log2(path) estimates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Mapping

from . import budget as budget_mod
from .advice import GGUF_BITS
from .budget import Budget, cards_by_capacity
from ..machine.runtime import speed_words
from ..machine.device import COMFY_RESERVE_BYTES, Device
from ..stages import StageBudget
from ..models.published import catalogue_info
from ..families.wan import VARIANTS, WanVariant, length_for_seconds  # noqa: F401  (length_for_seconds: the node)
from ..errors import PlanError
from ..machine.runtime import block_bytes
from ..families import FAMILIES
from ..model_info import DIFFUSION, ModelInfo
from ..units import GiB, fmt_gib
from ..workload import SAMPLE, TEXT_ENCODE, VAE_DECODE, LatentShape, ModelRef, Stage, Workload
from ..serial import JsonFields

# ----------------------------------------------------------------------------------------------
# Constants (each says where it comes from)
ASPECT_TOLERANCE = 0.03  # issue: "keep the aspect ratio within a few percent"
MAX_RESOLUTION = 16384  # ComfyUI nodes.py MAX_RESOLUTION
MIN_LENGTH = 1  # 4·0+1: one latent frame (ComfyUI's latent nodes accept length 1)
MAX_LENGTH = MAX_RESOLUTION  # WanImageToVideo / EmptyHunyuanLatentVideo: length max = MAX_RESOLUTION (nodes_wan.py)
# Under Dynamic VRAM the target is kept when ComfyUI runs it streaming at most this much slower: cutting the
# clip to stay resident would cost content for little speed (issue 31: the planner cut what it said runs)
DYNAMIC_KEEP_SLOWDOWN = 1.3
DEFAULT_CFG = 5.0  # Wan 2.1 sample_guide_scale (Wan-Video configs); Wan 2.2 A14B uses 3.0 / 4.0: both > 1
KEEP_MODES = ("frames", "resolution", "balanced")  # what to KEEP when the target does not fit
# GGUF bits per weight are the remedy ladder's (advice.GGUF_BITS: ggml block sizes).
PRECISIONS = ("fp16", "fp8") + tuple(f"GGUF {q}" for q in GGUF_BITS)
# The text encoder and VAE files ComfyUI's Wan templates load (Comfy-Org/Wan_2.1_ComfyUI_repackaged,
# Wan_2.2_ComfyUI_Repackaged).
UMT5_FILE = "umt5_xxl_fp8_e4m3fn_scaled.safetensors"
# --reserve-vram is read as GiB (comfy/cli_args.py: value · 1024³); suggest it in half-GB steps.
RESERVE_STEP_GIB = 0.5
# WanVideoWrapper moves one swapped block onto the GPU while it runs (blocks_to_swap semantics:
# the first N blocks live in RAM and are brought in one at a time), so one block's bytes are
# always on the GPU on top of the resident ones.
BLOCKS_IN_FLIGHT = 1


VARIANT_LABELS = {v.label: k for k, v in VARIANTS.items()}


# ----------------------------------------------------------------------------------------------
# Constraints
def snap_length(length: int) -> int:
    """ComfyUI's own rounding: T = (L-1)//4+1 latent frames decode to 4T-3 frames (80 -> 77)."""
    length = max(MIN_LENGTH, int(length))
    return 4 * ((length - 1) // 4) + 1


def snap_side(pixels: int, multiple: int) -> int:
    """Nearest multiple of `multiple`, at least one multiple, at most MAX_RESOLUTION."""
    snapped = int(round(pixels / multiple)) * multiple
    return min(max(multiple, snapped), MAX_RESOLUTION // multiple * multiple)


def aspect_error(width: int, height: int, ref_width: int, ref_height: int) -> float:
    """Relative difference of two aspect ratios."""
    ref = ref_width / ref_height
    return abs(width / height - ref) / ref


def latent_frames(length: int) -> int:
    return (length - 1) // 4 + 1


def resolution_candidates(width: int, height: int, multiple: int,
                          tolerance: float = ASPECT_TOLERANCE) -> tuple[tuple[int, int], ...]:
    """Sizes with the target's aspect ratio (within `tolerance`), multiples of `multiple`, ascending.

    The shorter side steps by `multiple`; the longer one is its nearest multiple for the aspect
    ratio. Both sides are non-decreasing along the list, so the memory of a candidate never falls
    when moving up. The target itself is the last element.
    """
    landscape = width >= height
    short, long_ = (height, width) if landscape else (width, height)
    ratio = long_ / short
    out: list[tuple[int, int]] = []
    for s in range(multiple, short, multiple):
        lng = min(snap_side(s * ratio, multiple), long_)
        if lng < s:
            continue
        w, h = (lng, s) if landscape else (s, lng)
        if aspect_error(w, h, width, height) <= tolerance and (not out or out[-1] != (w, h)):
            out.append((w, h))
    out.append((width, height))
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# Models: which files a variant/precision loads, resolved once (ModelInfos are cached).
@dataclass(frozen=True)
class WanModelSpec:
    """The models one Wan configuration loads, resolved to ModelInfos for the estimator."""

    label: str
    family: str
    experts: tuple[str | None, ...]
    precision: str
    fps: int
    multiple: int
    spatial_compression: int
    latent_channels: int
    num_layers: int
    dim: int
    native_sizes: tuple[tuple[int, int], ...]
    latent_node: str
    diffusion_refs: tuple[ModelRef, ...]  # one per expert
    text_encoder_ref: ModelRef
    vae_ref: ModelRef
    infos: Mapping[str, ModelInfo]  # "folder/name" -> ModelInfo (planning.estimate's pre-resolved models)
    notes: tuple[str, ...] = ()
    variant_key: str | None = None

    @property
    def diffusion_infos(self) -> tuple[ModelInfo, ...]:
        return tuple(self.infos[_key(r)] for r in self.diffusion_refs)


def _key(ref: ModelRef) -> str:
    return f"{ref.folder}/{ref.name}"


def _catalogue(name: str, folder: str | None = None) -> ModelInfo | None:
    return catalogue_info(name, folder)


def _published_arch(variant: WanVariant) -> dict:
    """families.FAMILIES' arch for the variant's family, completed with the published dims."""
    fam = FAMILIES.get(variant.family)
    arch: dict = dict(fam.arch) if fam is not None else {}
    arch.setdefault("hidden_size", variant.dim)
    arch.setdefault("ffn_dim", variant.ffn_dim)
    arch.setdefault("depth", variant.num_layers)
    arch.setdefault("patch_size", (1, 2, 2))
    arch.setdefault("out_channels", variant.latent_channels)
    return arch


def _fallback_info(variant: WanVariant, name: str, expert: str | None) -> ModelInfo:
    """A ModelInfo from the published architecture when the catalogue lacks the 16-bit file."""
    return ModelInfo(
        kind=DIFFUSION, family=variant.family, label=f"{variant.label}", params=variant.params,
        weights_bytes=variant.params * 2, dtype="BF16", quantization=None, arch=_published_arch(variant),
        evidence=(f"published parameter count of {variant.label}",), source="catalogue", variant=expert,
        largest_tensor_bytes=_largest_tensor_bytes(variant),
        notes=("not in the catalogue: size from the published parameter count",),
    )


def _largest_tensor_bytes(variant: WanVariant) -> int:
    """Largest 2-D weight at 16 bit: an FFN matrix (dim × ffn_dim) or the text embedding (4096 × dim)."""
    return 2 * max(variant.dim * variant.ffn_dim, 4096 * variant.dim)


@lru_cache(maxsize=64)
def model_spec(variant_key: str, precision: str = "fp16") -> WanModelSpec:
    """The files a Wan variant loads at `precision`, resolved through the catalogue (cached)."""
    variant = VARIANTS.get(variant_key) or VARIANTS.get(VARIANT_LABELS.get(variant_key, ""))
    if variant is None:
        known = ", ".join(v.label for v in VARIANTS.values())
        raise PlanError(f"unknown Wan variant {variant_key!r}; known: {known}")
    if precision not in PRECISIONS:
        raise PlanError(f"unknown weight precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    infos: dict[str, ModelInfo] = {}
    notes: list[str] = []
    refs: list[ModelRef] = []
    for i, expert in enumerate(variant.experts):
        base_name = variant.files["fp16"][i]
        base = _catalogue(base_name)
        if base is None:
            base = _fallback_info(variant, base_name, expert)
            notes.append(f"{base_name}: not in the catalogue; size from the published parameter count")
        if precision == "fp16":
            ref = ModelRef("diffusion", base_name, "diffusion_models", loader_type="UNETLoader")
            info = base
        elif precision == "fp8":
            names = variant.files.get("fp8")
            info = _catalogue(names[i]) if names else None
            if info is not None:
                ref = ModelRef("diffusion", names[i], "diffusion_models", loader_type="UNETLoader")
            else:  # the 16-bit file loaded with UNETLoader weight_dtype fp8_e4m3fn: 1 byte per parameter
                ref = ModelRef("diffusion", base_name, "diffusion_models", loader_type="UNETLoader",
                               weight_dtype="fp8_e4m3fn")
                info = base
        else:
            quant = precision.split(" ", 1)[1]
            tag = {"high_noise": "HighNoise", "low_noise": "LowNoise"}.get(expert or "", "")
            name = variant.gguf_pattern.format(quant=quant, expert=tag)
            info = _catalogue(name, "diffusion_models")
            if info is None:  # params × bits of the quant (advice.GGUF_BITS)
                info = replace(
                    base, weights_bytes=int(base.params * GGUF_BITS[quant] / 8), dtype=quant,
                    quantization=f"gguf {quant}", source="catalogue",
                    evidence=base.evidence + (f"GGUF {quant}: {GGUF_BITS[quant]} bits per weight",),
                )
                notes.append(f"{name}: not in the catalogue; {GGUF_BITS[quant]} bits per weight × "
                             f"{base.params / 1e9:.2f}B parameters")
            if not info.largest_tensor_bytes:  # ComfyUI-GGUF dequantizes one layer at a time to 16 bit
                info = replace(info, largest_tensor_bytes=base.largest_tensor_bytes or _largest_tensor_bytes(variant))
            ref = ModelRef("diffusion", name, "unet", loader_type="UnetLoaderGGUF", gguf=True)
        refs.append(ref)
        infos[_key(ref)] = info
    te_ref = ModelRef("text_encoder", UMT5_FILE, "text_encoders", loader_type="CLIPLoader", clip_type="wan")
    te = _catalogue(UMT5_FILE)
    if te is not None:
        infos[_key(te_ref)] = te
    else:
        notes.append(f"{UMT5_FILE}: not in the catalogue; text encoder not counted")
    vae_ref = ModelRef("vae", variant.vae_file, "vae", loader_type="VAELoader")
    vae = _catalogue(variant.vae_file)
    if vae is not None:
        infos[_key(vae_ref)] = vae
    else:
        notes.append(f"{variant.vae_file}: not in the catalogue; VAE decode not counted")
    return WanModelSpec(
        label=variant.label, family=variant.family, experts=variant.experts, precision=precision, fps=variant.fps,
        multiple=variant.multiple, spatial_compression=variant.spatial_compression,
        latent_channels=variant.latent_channels, num_layers=variant.num_layers, dim=variant.dim,
        native_sizes=variant.native_sizes, latent_node=variant.latent_node, diffusion_refs=tuple(refs),
        text_encoder_ref=te_ref, vae_ref=vae_ref, infos=infos, notes=tuple(notes), variant_key=variant.key,
    )


def spec_from_loaded(desc: Mapping[str, object]) -> WanModelSpec:
    """A WanModelSpec for a model ComfyUI has loaded (comfy_bridge.describe_loaded_model's dict).

    The MODEL input is one diffusion model: for Wan 2.2 A14B that is one expert, and since the
    experts are loaded in turn the peak is that of one expert. Wan 2.1 14B and a Wan 2.2 A14B
    expert share the architecture (dim 5120, 40 blocks) and the rules (16 fps, multiples of 16).
    """
    dim = int(desc.get("dim") or 0)
    out_dim = int(desc.get("out_dim") or 16)
    num_layers = int(desc.get("num_layers") or 0)
    image_model = str(desc.get("image_model") or "")
    class_name = str(desc.get("class_name") or "")
    if not (class_name.startswith("WAN") or image_model.startswith("wan")):
        raise PlanError(f"the MODEL input is not a Wan model (it is {class_name or 'unknown'}); "
                        "connect a Wan 2.1 / 2.2 model or leave the input empty and pick a variant")
    if dim <= 0 or num_layers <= 0:
        raise PlanError("the MODEL input has no readable Wan dimensions (dim / num_layers)")
    if out_dim == 48:  # Wan 2.2 VAE latent: TI2V 5B (supported_models.WAN22_T2V out_dim 48)
        variant = VARIANTS["wan2.2-ti2v-5b"]
    elif dim >= 5120:
        variant = VARIANTS["wan2.1-14b"]
    else:
        variant = VARIANTS["wan2.1-1.3b"]
    exact = dim == variant.dim and num_layers == variant.num_layers
    family = variant.family if exact else "wan-custom"
    if exact and variant.key == "wan2.1-14b":
        label = "Wan 14B (2.1, or one Wan 2.2 A14B expert)"
    elif exact:
        label = variant.label
    else:
        label = f"Wan model (dim {dim}, {num_layers} blocks)"
    params = int(desc.get("params") or 0)
    weights = int(desc.get("weights_bytes") or 0)
    gguf_type = desc.get("gguf_type")
    dtype = str(desc.get("dtype") or "")
    arch = dict(_published_arch(variant)) if exact else {"patch_size": (1, 2, 2)}
    arch.update({"hidden_size": dim, "depth": num_layers, "out_channels": out_dim})
    if desc.get("ffn_dim"):
        arch["ffn_dim"] = int(desc["ffn_dim"])  # type: ignore[arg-type]
    if desc.get("num_heads"):
        arch["num_heads"] = int(desc["num_heads"])  # type: ignore[arg-type]
    weight_dtype = None
    if desc.get("gguf"):
        quantization, precision = f"gguf {gguf_type}", f"GGUF {gguf_type}"
    elif "float8" in dtype:
        quantization, precision = None, "fp8"
        weight_dtype = "fp8_e4m3fn"  # loaded in fp8: 1 byte per parameter on the GPU (no upcast once loaded)
    else:
        quantization, precision = None, "fp16"
    info = ModelInfo(
        kind=DIFFUSION, family=family, label=label, params=params, weights_bytes=weights,
        dtype=gguf_type or dtype or None, quantization=quantization, arch=arch,
        evidence=(f"loaded model {class_name}: dim {dim}, {num_layers} blocks, out_dim {out_dim}",),
        source="loaded model", largest_tensor_bytes=int(desc.get("largest_tensor_params") or 0) * 2,
    )
    ref = ModelRef("diffusion", f"loaded {class_name} model", "loaded", weight_dtype=weight_dtype,
                   gguf=bool(desc.get("gguf")))
    base = model_spec(variant.key, "fp16")
    infos = {k: v for k, v in base.infos.items() if not k.startswith("diffusion_models/")}
    infos[_key(ref)] = info
    return replace(base, label=label, family=family, experts=(None,), precision=precision,
                   num_layers=num_layers, dim=dim, diffusion_refs=(ref,), infos=infos,
                   notes=base.notes + (("non-standard Wan dimensions: working memory from the uncalibrated formula",)
                                       if not exact else ()),
                   variant_key=None)


# ----------------------------------------------------------------------------------------------
# Workloads
def latent_for(spec: WanModelSpec, width: int, height: int, length: int, batch: int = 1) -> LatentShape:
    sc = spec.spatial_compression
    return LatentShape(
        batch=batch, channels=spec.latent_channels, height=height // sc, width=width // sc,
        frames=latent_frames(length), pixel_height=height, pixel_width=width, pixel_frames=length,
        spatial_compression=sc, temporal_compression=4, source_node="planner", source_type=spec.latent_node,
    )


def workload_for(spec: WanModelSpec, width: int, height: int, length: int, cfg: float = DEFAULT_CFG,
                 auto_tiled_decode: bool = True) -> Workload:
    """The stages a Wan text-to-video run goes through at this size, as ComfyUI runs them.

    Text encode (positive and negative prompt, umT5), one sampling stage per expert (A14B: high
    noise, then low noise, loaded in turn), VAE decode. The decode is priced as ComfyUI runs it:
    whole when it fits, else in tiles (VAE Decode (Auto Tiled), and ComfyUI's own tiled retry on
    an OOM), so the decode never decides the plan on its own.
    """
    lat = latent_for(spec, width, height, length)
    stages: list[Stage] = [
        Stage(TEXT_ENCODE, "te_pos", "CLIPTextEncode", models=(spec.text_encoder_ref,)),
        Stage(TEXT_ENCODE, "te_neg", "CLIPTextEncode", models=(spec.text_encoder_ref,)),
    ]
    for i, (expert, ref) in enumerate(zip(spec.experts, spec.diffusion_refs)):
        stages.append(Stage(SAMPLE, f"sample{i}", "KSamplerAdvanced" if expert else "KSampler", models=(ref,),
                            latent=lat, cfg=cfg, uses_negative=True, expert=expert))
    stages.append(Stage(VAE_DECODE, "decode", "VAEDecode", models=(spec.vae_ref,), latent=lat,
                        auto_tiled=auto_tiled_decode))
    return Workload(stages=tuple(stages), source_format="planner",
                    models=tuple(dict.fromkeys((spec.text_encoder_ref, *spec.diffusion_refs, spec.vae_ref))))


def estimate_size(spec: WanModelSpec, device: Device, width: int, height: int, length: int,
                  cfg: float = DEFAULT_CFG) -> Budget:
    """The shared estimator's budget of one candidate size."""
    return budget_mod.assess(workload_for(spec, width, height, length, cfg), device, None,
                             models=spec.infos)


def fits(budget: Budget) -> bool:
    """Runs with every weight resident, as ComfyUI itself decides it (runtime.py: its own
    activation estimate sets how much of the model it loads; cond/uncond in turn where it would)."""
    if not budget.stages:
        return False
    return budget.outcome == "fits"


def need_bytes(budget: Budget) -> int:
    """What must be on the card at once when ComfyUI runs cond/uncond in turn where it has to."""
    return max((s.min_peak_bytes for s in budget.stages), default=0)


# ----------------------------------------------------------------------------------------------
# Search paths: index 0 is the target, every step cuts one dimension.
Candidate = tuple[int, int, int]  # width, height, length


def _lengths(target_length: int, step: int = 4) -> list[int]:
    return list(range(MIN_LENGTH, target_length + 1, step))


def search_path(width: int, height: int, length: int, multiple: int, keep: str, length_step: int = 4) -> list[Candidate]:
    """Candidates from the target down to the smallest size, in the order `keep` cuts them. `length_step`: the
    VAE's temporal compression (lengths are step·k+1: 4 for Wan and HunyuanVideo, 8 for LTX)."""
    sizes = resolution_candidates(width, height, multiple)
    lengths = _lengths(length, length_step)

    def latent_frames(n: int) -> int:  # noqa: F811  (this path's own temporal step)
        return (n - 1) // length_step + 1
    ri, fi = len(sizes) - 1, len(lengths) - 1
    path: list[Candidate] = [(*sizes[ri], lengths[fi])]
    t0, p0 = latent_frames(length), width * height
    while ri > 0 or fi > 0:
        if keep == "resolution":  # keep the size: cut length first, then size
            cut_frames = fi > 0
        elif keep == "frames":  # keep the length: cut size first, then length
            cut_frames = ri == 0
        else:  # balanced: cut whichever is relatively larger; frames on a tie, so steps alternate
            frame_ratio = latent_frames(lengths[fi]) / t0
            pixel_ratio = sizes[ri][0] * sizes[ri][1] / p0
            cut_frames = fi > 0 and (ri == 0 or frame_ratio >= pixel_ratio)
        if cut_frames:
            fi -= 1
        else:
            ri -= 1
        path.append((*sizes[ri], lengths[fi]))
    return path


def first_resident(path: list[Candidate], price, device: Device, notes: list[str]) -> int:
    """The index of the first candidate on `path` that stays resident (0 = the target, kept too when Dynamic VRAM
    streams it at most DYNAMIC_KEEP_SLOWDOWN slower, with a note); -1 when not even the smallest does. The path
    never grows, so a binary search on price(candidate) finds it."""
    target_budget = price(path[0])
    streams_ok = (device.memory_mode == "dynamic" and target_budget.outcome == "runs_slower"
                  and target_budget.verdict != "oom" and target_budget.slowdown_high <= DYNAMIC_KEEP_SLOWDOWN)
    if streams_ok:
        notes.append(f"Dynamic VRAM streams {fmt_gib(target_budget.offload_bytes)} of weights at the target: "
                     f"sampling {speed_words(target_budget.slowdown, target_budget.slowdown_high)}, so the target "
                     "is kept")
    if fits(target_budget) or streams_ok:
        return 0
    if not fits(price(path[-1])):
        return -1
    lo, hi = 0, len(path) - 1  # invariant: path[lo] does not fit, path[hi] fits
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(price(path[mid])):
            hi = mid
        else:
            lo = mid
    return hi


# ----------------------------------------------------------------------------------------------
# The plan
@dataclass(frozen=True)
class KeepOption(JsonFields):
    """One way to keep the original target instead of cutting it."""

    kind: str  # "precision" | "block_swap" | "reserve_vram" | "dynamic_vram" | "bigger_card"
    title: str
    detail: str
    cost: str
    works: bool = True
    value: float | None = None  # blocks, GB, ...


@dataclass(frozen=True)
class WanPlan:
    label: str
    precision: str
    keep: str
    fps: int
    requested: Candidate
    target: Candidate  # requested, snapped to the model's constraints
    width: int
    height: int
    length: int
    fits: bool  # the plan runs without RAM offload
    budget: Budget  # the plan's budget
    target_budget: Budget
    cut: str  # what was cut and why ("" when unchanged)
    keep_target: tuple[KeepOption, ...] = ()
    blocks_to_swap: int | None = None
    reserve_vram_gb: float | None = None
    notes: tuple[str, ...] = ()
    evaluations: int = 0
    native_sizes: tuple[tuple[int, int], ...] = ()
    num_layers: int = 0

    @property
    def changed(self) -> bool:
        return (self.width, self.height, self.length) != self.target

    @property
    def peak_bytes(self) -> int:
        return self.budget.peak_bytes

    @property
    def seconds(self) -> float:
        return (self.length - 1) / self.fps

    def to_dict(self) -> dict:
        return {
            "model": self.label, "precision": self.precision, "keep": self.keep, "fps": self.fps,
            "requested": list(self.requested), "target": list(self.target),
            "width": self.width, "height": self.height, "length": self.length, "seconds": round(self.seconds, 3),
            "fits": self.fits, "changed": self.changed, "peak_bytes": self.budget.peak_bytes,
            "need_bytes": need_bytes(self.budget), "target_peak_bytes": self.target_budget.peak_bytes,
            "target_need_bytes": need_bytes(self.target_budget),
            "capacity_bytes": self.budget.device.capacity_bytes, "device": self.budget.device.name,
            "cut": self.cut, "blocks_to_swap": self.blocks_to_swap, "num_layers": self.num_layers,
            "reserve_vram_gb": self.reserve_vram_gb, "keep_target": [k.to_dict() for k in self.keep_target],
            "notes": list(self.notes), "evaluations": self.evaluations,
        }


def plan(spec: WanModelSpec, device: Device, width: int, height: int, length: int, keep: str = "balanced",
         cfg: float = DEFAULT_CFG, options: bool = True) -> WanPlan:
    """The largest size at or below the target that fits `device`, cutting what `keep` allows.

    `options` also prices what would keep the target (block swap, --reserve-vram, Dynamic VRAM,
    precision, card); the search alone is `options=False`.
    """
    if keep not in KEEP_MODES:
        raise PlanError(f"keep must be one of {', '.join(KEEP_MODES)}, got {str(keep)[:40]!r}")
    for name, value, top in (("width", width, MAX_RESOLUTION), ("height", height, MAX_RESOLUTION),
                             ("length", length, MAX_LENGTH)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= top:
            raise PlanError(f"{name} {str(value)[:24]}: give 1 to {top} (a linked value is not range-checked by "
                            "ComfyUI)")
    m = spec.multiple
    target: Candidate = (snap_side(width, m), snap_side(height, m), snap_length(length))
    notes: list[str] = list(spec.notes)
    if target[:2] != (width, height):
        notes.append(f"{width}×{height} snapped to {target[0]}×{target[1]} ({spec.label} needs multiples of {m})")
    if target[2] != length:
        notes.append(f"length {length} floored to {target[2]} (Wan lengths are 4k+1; ComfyUI floors the rest)")

    cache: dict[Candidate, Budget] = {}

    def price(c: Candidate) -> Budget:
        if c not in cache:
            cache[c] = estimate_size(spec, device, c[0], c[1], c[2], cfg)
        return cache[c]

    path = search_path(*target, m, keep)
    target_budget = price(path[0])
    chosen = first_resident(path, price, device, notes)
    if chosen >= 0:
        w, h, L = path[chosen]
        plan_budget = price(path[chosen])
        ok = True
    else:  # nothing fits without offload: keep the target and say what keeps it
        w, h, L = target
        plan_budget = target_budget
        ok = False
    cut = _describe_cut(spec, device, target, (w, h, L), target_budget, plan_budget if ok else price(path[-1]),
                        keep, ok)
    if ok and device.memory_mode == "classic":
        note = _comfy_reserve_note(spec, plan_budget, w, h, L)
        if note:
            notes.append(note)
    result = WanPlan(
        label=spec.label, precision=spec.precision, keep=keep, fps=spec.fps, requested=(width, height, length),
        target=target, width=w, height=h, length=L, fits=ok, budget=plan_budget, target_budget=target_budget,
        cut=cut, notes=tuple(notes), evaluations=len(cache), native_sizes=spec.native_sizes,
        num_layers=spec.num_layers,
    )
    if options and not fits(target_budget):
        result = _with_keep_options(result, spec, device, cfg)
    return result


def _describe_cut(spec: WanModelSpec, device: Device, target: Candidate, chosen: Candidate, target_budget: Budget,
                  plan_budget: Budget, keep: str, ok: bool) -> str:
    cap = device.capacity_bytes
    need_t = need_bytes(target_budget)
    if not ok:  # plan_budget is then the smallest candidate's
        worst = max(plan_budget.stages, key=lambda s: s.min_peak_bytes)
        fixed = worst.weights_bytes + worst.overhead_bytes
        if fixed > cap:
            why = f"'{worst.title}' needs {fmt_gib(fixed)} for its weights and the CUDA context alone"
        else:
            why = f"even the smallest size needs {fmt_gib(worst.min_peak_bytes)} at '{worst.title}'"
        return (f"nothing fits {device.name} ({fmt_gib(cap)}) without RAM offload: {why}; the outputs keep the "
                "target (see below for what runs it)")
    if chosen == target:
        return ""
    parts = []
    tw, th, tl = target
    w, h, L = chosen
    if L != tl:
        parts.append(f"length {tl} → {L} frames ({(tl - 1) / spec.fps:.2f} s → {(L - 1) / spec.fps:.2f} s "
                     f"at {spec.fps} fps)")
    if (w, h) != (tw, th):
        parts.append(f"size {tw}×{th} → {w}×{h} ({w * h / (tw * th):.0%} of the pixels)")
    what = " and ".join(parts)
    keep_text = {"frames": "keep frames: size is cut first", "resolution": "keep resolution: length is cut first",
                 "balanced": "balanced: length and size cut in turn"}[keep]
    return (f"{what}: the target needs {fmt_gib(need_t)} at its peak but {device.name} has {fmt_gib(cap)} "
            f"({keep_text})")


# ----------------------------------------------------------------------------------------------
# What keeps the original target
def _peak_sample_stage(b: Budget) -> StageBudget | None:
    sample = [s for s in b.stages if s.stage.kind == SAMPLE]
    return max(sample, key=lambda s: s.min_peak_bytes, default=None)


def blocks_to_swap_for(b: Budget, num_layers: int) -> int | None:
    """Minimum WanVideoWrapper `blocks_to_swap` for this budget to fit; None if no count is enough."""
    sb = _peak_sample_stage(b)
    if sb is None:
        return None
    cap = b.device.capacity_bytes
    others = max((s.min_peak_bytes for s in b.stages if s.stage.kind != SAMPLE), default=0)
    if others > cap:
        return None  # text encode or decode alone does not fit: swapping the DiT does not help
    deficit = sb.min_peak_bytes - cap
    if deficit <= 0:
        return 0
    per_block = block_bytes(sb, num_layers)
    if per_block <= 0:
        return None
    blocks = math.ceil(deficit / per_block) + BLOCKS_IN_FLIGHT
    return blocks if blocks <= num_layers else None


def comfy_min_memory_required(spec: WanModelSpec, width: int, height: int, length: int) -> int:
    """ComfyUI's own activation reservation for one Wan sample (model_base.BaseModel.memory_required).

    NVIDIA / flash path (comfy/model_base.py memory_required): area (batch · T · H/8 · W/8 of the latent) ×
    dtype size 2 × 0.01 × memory_usage_factor (dim / 2222, supported_models.WAN21_T2V) MiB.
    This is what ComfyUI keeps free beside partially loaded weights; the planner compares it with
    the shared estimator's activations to say how much --reserve-vram must add.
    """
    lat = latent_for(spec, width, height, length)
    area = (lat.frames or 1) * lat.height * lat.width
    return int(area * 2 * 0.01 * (spec.dim / 2222) * 1024 * 1024)


def _comfy_reserve_note(spec: WanModelSpec, b: Budget, width: int, height: int, length: int) -> str | None:
    """Classic ComfyUI loads weights in full only if they fit beside ITS activation estimate + reserve.

    model_management.load_models_gpu: weight budget = free − (memory_required(batch 1) + reserve)
    (comfy/model_management.py load_models_gpu). Where ComfyUI's estimate is above the shared estimator's, it streams weights
    that would have fitted; say so rather than promise a full load.
    """
    sb = _peak_sample_stage(b)
    if sb is None:
        return None
    cap = b.device.capacity_bytes
    theirs = comfy_min_memory_required(spec, width, height, length)
    weights_room = cap - sb.overhead_bytes - theirs - b.device.reserve_bytes
    if sb.weights_bytes <= weights_room:
        return None
    streamed = sb.weights_bytes - max(0, weights_room)
    return (f"classic ComfyUI reserves its own activation estimate ({fmt_gib(theirs)}, memory_required) at "
            f"{width}×{height}×{length} and may stream ~{fmt_gib(streamed)} of weights from RAM ('loaded partially') "
            "although the estimator says they fit: it still runs, slower; Dynamic VRAM (ComfyUI ≥ 0.13) loads by "
            "what is really used")


def _with_keep_options(p: WanPlan, spec: WanModelSpec, device: Device, cfg: float) -> WanPlan:
    tb = p.target_budget
    cap = device.capacity_bytes
    tw, th, tl = p.target
    size = f"{tw}×{th}×{tl}"
    options: list[KeepOption] = []
    # 1. lower precision (FACTS ladder step 1), for variants with known files
    if spec.variant_key is not None:
        order = list(PRECISIONS)
        for prec in order[order.index(spec.precision) + 1:]:
            other = model_spec(spec.variant_key, prec)
            ob = estimate_size(other, device, tw, th, tl, cfg)
            if fits(ob):
                options.append(KeepOption(
                    "precision", f"{prec} weights keep {size}",
                    f"peak {fmt_gib(need_bytes(ob))} of {fmt_gib(cap)}",
                    "quality: " + ("slight loss" if prec in ("fp8", "GGUF Q8_0") else "some loss (Q4: fine detail suffers)"),
                    value=None))
                break
    # 2. block swap (WanVideoWrapper)
    blocks = blocks_to_swap_for(tb, p.num_layers)
    sb = _peak_sample_stage(tb)
    if blocks == 0:
        pass  # the wrapper holds it without swapping a block: nothing to set
    elif blocks is not None and sb is not None:
        per = block_bytes(sb, p.num_layers)
        options.append(KeepOption(
            "block_swap", f"block swap: blocks_to_swap = {blocks} of {p.num_layers}",
            f"WanVideoWrapper WanVideoBlockSwap keeps {blocks} transformer blocks ({fmt_gib(per)} each) in RAM "
            f"and streams them in one at a time; the minimum for {size}, instead of the usual 'start at 40 and "
            "lower it'", "speed: slower (each swapped block crosses PCIe every step)", value=float(blocks)))
    elif sb is not None:
        options.append(KeepOption(
            "block_swap", "block swap cannot keep the target",
            f"even with all {p.num_layers} blocks in RAM the activations and the rest of the model exceed "
            f"{fmt_gib(cap)}", "n/a", works=False))
    reserve_gb = None
    if sb is not None:
        # 3. classic ComfyUI: partial loading; --reserve-vram makes room for what its estimate misses
        ours = sb.min_peak_bytes - sb.weights_bytes - sb.overhead_bytes
        theirs = comfy_min_memory_required(spec, tw, th, tl)
        # load_models_gpu keeps free the larger of its own estimate (or ours, with the flag) + reserve
        weights_room = cap - sb.overhead_bytes - max(ours, theirs) - device.reserve_bytes
        offload = max(0, sb.weights_bytes - max(0, weights_room))
        runnable = ours + sb.overhead_bytes + device.reserve_bytes < cap
        if runnable:
            if ours > theirs:
                raw = (ours - theirs + COMFY_RESERVE_BYTES) / GiB
                reserve_gb = math.ceil(raw / RESERVE_STEP_GIB) * RESERVE_STEP_GIB
                detail = (f"ComfyUI streams ~{fmt_gib(offload)} of weights from RAM by itself ('loaded partially'), "
                          f"but it keeps only {fmt_gib(theirs)} free for activations the estimator puts at "
                          f"{fmt_gib(ours)}: start it with --reserve-vram {reserve_gb:g} so the difference stays free")
                title = f"--reserve-vram {reserve_gb:g} (ComfyUI streams {fmt_gib(offload)} of weights)"
            else:
                detail = (f"ComfyUI streams ~{fmt_gib(offload)} of weights from RAM by itself ('loaded partially'); "
                          f"its own activation reserve ({fmt_gib(theirs)}) covers the estimator's {fmt_gib(ours)}")
                title = f"let ComfyUI stream {fmt_gib(offload)} of weights (no flag needed)"
            options.append(KeepOption("reserve_vram", title, detail, "speed: several times slower",
                                      value=reserve_gb))
        # 4. Dynamic VRAM (ComfyUI >= 0.13, comfy-aimdo): weights elastic, working memory must fit
        db = budget_mod.assess(workload_for(spec, tw, th, tl, cfg), replace(device, memory_mode="dynamic"), None,
                               models=spec.infos)
        work = max(s.working_bytes + s.overhead_bytes for s in db.stages)
        headroom = cap - work - device.reserve_bytes
        if db.outcome != "oom" and device.memory_mode == "dynamic":
            options.append(KeepOption(
                "dynamic_vram", f"this ComfyUI (Dynamic VRAM) runs {size} as is, sampling "
                f"{speed_words(db.slowdown, db.slowdown_high)}",
                f"weights stream from RAM on demand: activations {fmt_gib(work)} + reserve "
                f"{fmt_gib(device.reserve_bytes)} fit {fmt_gib(cap)}; the plan above cuts the target only to keep "
                "every weight resident (faster)", "speed: slower", value=round(headroom / GiB, 2)))
        elif db.outcome != "oom":
            options.append(KeepOption(
                "dynamic_vram", f"Dynamic VRAM runs {size} as is ({fmt_gib(headroom)} headroom)",
                f"ComfyUI ≥ 0.13 with Dynamic VRAM streams weights on demand: activations {fmt_gib(work)} + "
                f"reserve {fmt_gib(device.reserve_bytes)} fit {fmt_gib(cap)}; "
                f"~{fmt_gib(max(0, db.peak_bytes - cap))} of weights stream from RAM", "speed: slower",
                value=round(headroom / GiB, 2)))
        else:
            options.append(KeepOption(
                "dynamic_vram", "Dynamic VRAM cannot keep the target",
                f"activations alone ({fmt_gib(work)}) exceed {fmt_gib(cap)}", "n/a", works=False))
    # 5. a bigger card
    card, margin = cards_by_capacity(tb)
    if card is not None and card.total_bytes > device.total_bytes:
        price = f", €{card.price_eur_h:.2f}/h" if card.price_eur_h else ""
        extra = (f"; with 10 % margin: {margin.name}" if margin is not None and margin.name != card.name else "")
        options.append(KeepOption("bigger_card", f"{card.name} ({fmt_gib(card.total_bytes)}{price}) holds {size}",
                                  f"peak {fmt_gib(need_bytes(tb))}{extra}", "money"))
    elif card is None:
        options.append(KeepOption("bigger_card", "no single card in the catalogue holds the target", "", "n/a",
                                  works=False))
    return replace(p, keep_target=tuple(options), blocks_to_swap=blocks, reserve_vram_gb=reserve_gb)


# ----------------------------------------------------------------------------------------------
# Text for people
def _peak_text(b: Budget) -> str:
    need = need_bytes(b)
    if b.peak_bytes > need:
        return f"{fmt_gib(need)} ({fmt_gib(b.peak_bytes)} with cond and uncond batched)"
    return fmt_gib(need)


def format_plan(p: WanPlan) -> str:
    dev = p.budget.device
    cap = dev.capacity_bytes
    lines = [f"Wan planner: {p.label}, {p.precision} weights, on {dev.name} ({fmt_gib(cap)} usable)"]
    tw, th, tl = p.target
    need_t = need_bytes(p.target_budget)
    if fits(p.target_budget):
        how = " - fits"
    elif need_t > cap:
        how = f" - does not fit with every weight resident (short by {fmt_gib(need_t - cap)})"
    else:
        how = " - fits only streaming weights from RAM (ComfyUI keeps too little free beside them)"
    lines.append(f"Target {tw}×{th}×{tl} ({(tl - 1) / p.fps:.2f} s at {p.fps} fps): peak {_peak_text(p.target_budget)}"
                 + how)
    if p.fits:
        need = need_bytes(p.budget)
        head = "Plan (unchanged)" if not p.changed else f"Plan (keep {p.keep})"
        spare = (f"{fmt_gib(cap - need)} to spare" if need <= cap else
                 f"weights stream from RAM ({speed_words(p.budget.slowdown, p.budget.slowdown_high)})")
        lines.append(f"{head}: {p.width}×{p.height}×{p.length} ({p.seconds:.2f} s): peak {_peak_text(p.budget)}, {spare}")
        peak_stage = max(p.budget.stages, key=lambda s: s.min_peak_bytes) if p.budget.stages else None
        if peak_stage is not None:
            lines.append(f"  peak at '{peak_stage.title}': weights {fmt_gib(peak_stage.weights_bytes)}, "
                         f"activations {fmt_gib(peak_stage.min_peak_bytes - peak_stage.weights_bytes - peak_stage.overhead_bytes)}")
        if p.budget.peak_bytes > cap:
            lines.append("  cond and uncond run one after another (ComfyUI does this by itself when memory is short)")
    else:
        lines.append(f"Plan: no size fits without RAM offload; the outputs keep {tw}×{th}×{tl}")
    if p.cut:
        lines.append(f"Cut: {p.cut}")
    if (p.width, p.height) not in p.native_sizes and p.native_sizes:
        natives = ", ".join(f"{w}×{h}" for w, h in p.native_sizes)
        lines.append(f"Native sizes of this model: {natives} (others work, trained less)")
    if p.keep_target:
        lines.append("")
        lines.append(f"To keep {tw}×{th}×{tl} instead:")
        for opt in p.keep_target:
            mark = "" if opt.works else " (not enough)"
            lines.append(f" - {opt.title}{mark} [{opt.cost}]")
            if opt.detail:
                lines.append(f"     {opt.detail}")
    if p.notes:
        lines.append("")
        lines.append("Notes:")
        lines.extend(f" - {n}" for n in p.notes)
    return "\n".join(lines)
