"""Read an out-of-memory message and say, in plain words, what happened and what to do.

``parse_oom(message, exception_type)`` understands what PyTorch and ComfyUI actually print: PyTorch's native CUDA
allocator (current and torch <= 2.0 forms), cudaMallocAsync (ComfyUI's default), cuBLAS, HIP / ROCm, Intel XPU,
DirectML, Apple MPS and the host's own (DefaultCPUAllocator, the Linux OOM killer, Windows' page file), each with the figures
it prints.

The derivation, rule by rule with its sources: docs/derivations.md, "plan/oom.py: the messages read"."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..units import GiB, KiB, MiB, fmt_gib
from ..machine.resolve import resolve_model
from ..workload import SAMPLE, VAE_DECODE
from ..graph import read_workflow
from ..serial import Remedy as RemedyBase

# --- thresholds (each says where it comes from) -------------------------------------------------
# FACTS.md: "If it is several GiB, the problem is fragmentation". 2 GiB is the smallest amount
# we call "several"; the panel flags the same 2 GiB on a live card.
FRAGMENTATION_BYTES = 2 * GiB
# Another process holds "a significant share": at least 10 % of the card and 1 GiB. A stale
# ComfyUI or Jupyter kernel with a model loaded holds several GiB; a desktop compositor or a
# browser holds a few hundred MiB, which is not worth closing anything for.
OTHER_PROCESS_SHARE = 0.10
OTHER_PROCESS_MIN_BYTES = 1 * GiB
# Messages are cut to this many characters before parsing (an OOM message is < 2 KB; a whole
# log pasted by mistake must not cost time).
MAX_MESSAGE_CHARS = 64 * 1024

# ComfyUI's text appended to every OOM (execution.py, 0.8.0 and 0.18.2 alike).
COMFY_TIPS_MARKER = "This error means you ran out of memory on your GPU."

# Public values (JSON): add, never rename or drop.
CAUSES = ("fragmentation", "other_process", "shortage", "unknown_detail", "not_oom", "host_ram", "pinned")
HOST_CAUSES = ("host_ram", "pinned")


@dataclass(frozen=True)
class ProcessUsage:
    """A "Process 1234 has 9.80 GiB memory in use" line: another process on the same card."""

    pid: int
    used_bytes: int


@dataclass(frozen=True)
class Remedy(RemedyBase):
    key: str  # stable id: "expandable_segments", "fp8_gguf", "tiled_vae", ...
    title: str
    detail: str
    flag: str | None = None  # the launch flag or environment variable it sets, if any
    where: tuple[tuple[str, str], ...] = ()  # (install, where to set it there): see where_to_set

    _json_convert = {"where": lambda w: dict(w) if w else None}
    _remedy_fields = ("title", None, None)


@dataclass(frozen=True)
class OomDiagnosis:
    is_oom: bool
    backend: str  # "cuda" | "hip" | "xpu" | "mps" | "directml" | "cpu" (system RAM allocator / OS) | "unknown"
    form: str  # "caching_allocator" | "caching_allocator_legacy" | "cuda_malloc_async" | "mps" | "directml" | "no_detail" | "none"
    # system RAM: "paging_file" | "cpu_allocator" | "memory_error" | "oom_killer" | "pinned_memory"
    cause: str  # one of CAUSES
    headline: str  # one line for a toast
    summary: str  # plain words, a few sentences (= facts + caveat + cause)
    remedies: tuple[Remedy, ...] = ()
    summary_facts: str = ""  # what the numbers say
    summary_caveat: str = ""  # "the request is not the whole job's need" (FACTS.md)
    summary_cause: str = ""  # the cause and the direction of the fix
    notes: tuple[str, ...] = ()
    secondary_causes: tuple[str, ...] = ()
    exception_type: str | None = None
    gpu_index: int | None = None
    requested_bytes: int | None = None
    total_bytes: int | None = None  # total capacity (MPS: max allowed; cudaMallocAsync: device limit)
    free_bytes: int | None = None
    allocated_bytes: int | None = None  # allocated by PyTorch (tensors really in use)
    reserved_unallocated_bytes: int | None = None  # PyTorch's cache, unusable for this request
    reserved_bytes: int | None = None  # reserved in total by PyTorch (legacy form) or allocated + cache
    this_process_bytes: int | None = None  # "Including non-PyTorch memory, this process has ..."
    allowed_bytes: int | None = None  # per-process memory fraction limit
    other_processes: tuple[ProcessUsage, ...] = ()
    other_processes_bytes: int | None = None  # sum of the process lines
    non_pytorch_bytes: int | None = None  # total - free - allocated - cache: context + other programs
    comfy_tips: bool = False  # ComfyUI's generic TIPS text was attached
    message: str = field(default="", repr=False)  # the error text without ComfyUI's TIPS
    context: "OomContext | None" = None  # what the failed workflow was, when the caller knew it
    memory: str = "gpu"  # which memory ran out: "gpu" (VRAM) | "system" (RAM, page file, swap) | "none" (no OOM)
    killed_pid: int | None = None  # Linux OOM killer: the process it killed (dmesg "Killed process N (python)")
    killed_process: str | None = None  # ... and its name
    host_rss_bytes: int | None = None  # ... and the RAM it held (dmesg anon-rss + file-rss + shmem-rss)

    def to_dict(self) -> dict:
        return {
            "is_oom": self.is_oom,
            "backend": self.backend,
            "form": self.form,
            "cause": self.cause,
            "secondary_causes": list(self.secondary_causes),
            "headline": self.headline,
            "summary": self.summary,
            "summary_facts": self.summary_facts,
            "summary_caveat": self.summary_caveat,
            "summary_cause": self.summary_cause,
            "remedies": [r.to_dict() for r in self.remedies],
            "notes": list(self.notes),
            "exception_type": self.exception_type,
            "gpu_index": self.gpu_index,
            "requested_bytes": self.requested_bytes,
            "total_bytes": self.total_bytes,
            "free_bytes": self.free_bytes,
            "allocated_bytes": self.allocated_bytes,
            "reserved_unallocated_bytes": self.reserved_unallocated_bytes,
            "reserved_bytes": self.reserved_bytes,
            "this_process_bytes": self.this_process_bytes,
            "allowed_bytes": self.allowed_bytes,
            "other_processes": [{"pid": p.pid, "used_bytes": p.used_bytes} for p in self.other_processes],
            "other_processes_bytes": self.other_processes_bytes,
            "non_pytorch_bytes": self.non_pytorch_bytes,
            "comfy_tips": self.comfy_tips,
            "message": self.message,
            "context": self.context.to_dict() if self.context is not None else None,
            "memory": self.memory,
            "killed_pid": self.killed_pid,
            "killed_process": self.killed_process,
            "host_rss_bytes": self.host_rss_bytes,
        }


# --- sizes -----------------------------------------------------------------------------------
# c10's format_size prints "bytes", "KiB", "MiB", "GiB" with two decimals. The MPS allocator
# (MPSAllocator.mm format_size) prints "KB"/"MB"/"GB" but divides by 1024 too, so every unit
# here is binary. DirectML prints a plain byte count.
_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "kib": KiB, "kb": KiB, "k": KiB,
    "mib": MiB, "mb": MiB, "m": MiB,
    "gib": GiB, "gb": GiB, "g": GiB,
    "tib": 1024 * GiB, "tb": 1024 * GiB,
}
# Linear time on any input: a number never starts inside another number (the lookbehind fails at
# once there), and its digit runs are bounded, so a long run of digits costs O(length), not
# O(length²) (a 64 KB digit run took minutes with an unbounded, unanchored \d+).
_SIZE = r"(?<![\d.,])(\d{1,15}(?:[.,]\d{1,15})?)\s*(TiB|GiB|MiB|KiB|TB|GB|MB|KB|bytes|byte|B)\b"


def _size(number: str, unit: str) -> int | None:
    try:
        return int(round(float(number.replace(",", ".")) * _UNITS[unit.lower()]))
    except (ValueError, KeyError):
        return None


def _find_size(pattern: str, text: str) -> int | None:
    """First match of `pattern` (which contains one _SIZE group pair) as bytes."""
    m = re.search(pattern, text, re.IGNORECASE)
    if not m:
        return None
    return _size(m.group(1), m.group(2))


# --- recognising an OOM ----------------------------------------------------------------------
_OOM_MARKERS = (
    "out of memory",  # CUDA/HIP/XPU caching allocator, "CUDA error: out of memory", MPS
    "allocation on device",  # cudaMallocAsync
    "cublas_status_alloc_failed",  # cuBLAS could not allocate its workspace
    "cudnn_status_alloc_failed",
    "not enough gpu video memory",  # DirectML
    "could not allocate tensor",  # DirectML
    "outofmemoryerror",
)


def _looks_like_oom(text: str, exception_type: str | None) -> bool:
    if exception_type and str(exception_type).endswith("OutOfMemoryError"):
        return True
    low = text.lower()
    return any(marker in low for marker in _OOM_MARKERS)


def _backend(low: str) -> str:
    if "mps backend" in low or "mps allocated" in low:
        return "mps"
    if "hip out of memory" in low or "hip error" in low or "hipblas" in low:
        return "hip"
    if "xpu out of memory" in low or "xpu error" in low:
        return "xpu"
    if "gpu video memory" in low or "could not allocate tensor" in low:
        return "directml"
    if "cuda" in low or "allocation on device" in low or "cublas" in low or "cudnn" in low:
        return "cuda"
    return "unknown"


def _strip_comfy_tips(text: str) -> tuple[str, bool]:
    idx = text.find(COMFY_TIPS_MARKER)
    if idx < 0:
        idx = text.find("TIPS: If the workflow worked before")
    if idx < 0:
        return text.strip(), False
    return text[:idx].strip(), True


def _strip_exception_prefix(text: str) -> str:
    # "torch.OutOfMemoryError: CUDA out of memory..." pasted from a log: drop the type prefix.
    return re.sub(r"^\s*(?:[\w.]+(?:Error|Exception)):\s*", "", text, count=1)


# --- the parser ------------------------------------------------------------------------------
@dataclass
class _Numbers:
    form: str = "no_detail"
    gpu_index: int | None = None
    requested: int | None = None
    total: int | None = None
    free: int | None = None
    allocated: int | None = None
    reserved_unallocated: int | None = None
    reserved: int | None = None
    this_process: int | None = None
    allowed: int | None = None
    mps_other: int | None = None
    processes: list[ProcessUsage] = field(default_factory=list)


def _parse_numbers(text: str, backend: str) -> _Numbers:
    n = _Numbers()
    flags = re.IGNORECASE
    n.requested = _find_size(r"Tried to allocate (?:more than )?" + _SIZE, text)

    m = re.search(r"\bGPU\s+(\d{1,6})\b", text, flags) or re.search(r"\bon device\s+(?:cuda:)?(\d{1,6})\b", text, flags)
    if m:
        n.gpu_index = int(m.group(1))

    # Current caching-allocator form (torch >= 2.1; 2.1 spelled "capacty").
    total = _find_size(r"total capac\w* of " + _SIZE, text)
    if total is not None:
        n.form = "caching_allocator"
        n.total = total
        n.free = _find_size(r"of which " + _SIZE + r" (?:is )?free", text)
        n.allocated = _find_size(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch", text)
        n.reserved_unallocated = _find_size(_SIZE + r" is reserved by PyTorch but unallocated", text)
        n.this_process = _find_size(r"this process has " + _SIZE + r" memory in use", text)
        n.allowed = _find_size(_SIZE + r" allowed;", text)
        if n.allocated is not None and n.reserved_unallocated is not None:
            n.reserved = n.allocated + n.reserved_unallocated

    # Older form: "(GPU 0; 23.65 GiB total capacity; 20.10 GiB already allocated; 1.12 GiB free;
    # 3.00 GiB allowed; 21.41 GiB reserved in total by PyTorch)".
    if n.total is None:
        legacy_total = _find_size(_SIZE + r" total capacity", text)
        if legacy_total is not None:
            n.form = "caching_allocator_legacy"
            n.total = legacy_total
            n.allocated = _find_size(_SIZE + r" already allocated", text)
            n.free = _find_size(r";\s*" + _SIZE + r" free", text)
            n.allowed = _find_size(_SIZE + r" allowed", text)
            n.reserved = _find_size(_SIZE + r" reserved in total", text)
            if n.reserved is not None and n.allocated is not None:
                n.reserved_unallocated = max(0, n.reserved - n.allocated)

    # cudaMallocAsync (CUDAMallocAsyncAllocator.cpp): labelled lines.
    if n.total is None and re.search(r"allocation on device", text, flags):
        n.form = "cuda_malloc_async"
        n.allocated = _find_size(r"Currently allocated\s*:\s*" + _SIZE, text)
        req = _find_size(r"Requested\s*:\s*" + _SIZE, text)
        n.requested = req if req is not None else n.requested
        n.total = _find_size(r"Device limit\s*:\s*" + _SIZE, text)
        n.free = _find_size(r"Free \(according to CUDA\)\s*:\s*" + _SIZE, text)
        limit = _find_size(r"memory fraction\)\s*:\s*" + _SIZE, text)
        if limit is not None and n.total is not None and limit < n.total:
            n.allowed = limit

    # MPS: "MPS backend out of memory (MPS allocated: 17.65 GB, other allocations: 1.23 GB,
    # max allowed: 18.13 GB). Tried to allocate 1.00 GB on private pool."
    if backend == "mps":
        n.form = "mps"
        n.allocated = _find_size(r"MPS allocated:\s*" + _SIZE, text)
        n.mps_other = _find_size(r"other allocations:\s*" + _SIZE, text)
        n.total = _find_size(r"max allowed:\s*" + _SIZE, text)
        if n.total is not None and n.allocated is not None:
            n.free = max(0, n.total - n.allocated - (n.mps_other or 0))

    # DirectML: "Could not allocate tensor with 1073741824 bytes."
    if backend == "directml":
        n.form = "directml"
        if n.requested is None:
            n.requested = _find_size(r"allocate tensor with " + _SIZE, text)

    for m in re.finditer(r"Process\s+(\d{1,10})\s+has\s+" + _SIZE + r"\s+memory in use", text, flags):
        used = _size(m.group(2), m.group(3))
        if used is not None:
            n.processes.append(ProcessUsage(pid=int(m.group(1)), used_bytes=used))

    if n.form == "no_detail" and (n.requested is not None or n.processes):
        n.form = "partial"
    return n


# --- the workflow that failed ------------------------------------------------------------------
INSTALLS = ("portable", "desktop", "linux")
_INSTALL_ALIASES = {"portable": "portable", "windows_portable": "portable", "desktop": "desktop",
                    "linux": "linux", "manual": "linux", "cli": "linux"}
MAX_FAMILIES = 16  # a context from JSON is capped like any other input


@dataclass(frozen=True)
class OomContext:
    """What the failed workflow was; every field may be unknown (None / empty), and an unknown
    field keeps the generic advice for it."""

    families: tuple[str, ...] = ()  # diffusion model families (families.FAMILIES keys): "sdxl", "flux1-dev", ...
    clip_types: tuple[str, ...] = ()  # CLIPLoader / DualCLIPLoader `type` widgets: "flux", "wan", "sdxl", ...
    batch_size: int | None = None  # the largest latent batch sampled
    video: bool | None = None  # a video latent is sampled
    frames: int | None = None  # the most frames asked for (pixel frames)
    decode_tiled: bool | None = None  # every VAE decode already tiles (VAEDecodeTiled, VAE Decode (Auto Tiled))
    weight_bits: int | None = None  # fewest bits per weight of the diffusion models (16, 8 for fp8 / Q8, 4 for Q4)
    install: str | None = None  # "portable" | "desktop" | "linux" (any manual / command-line install)
    models: tuple[tuple[str, int], ...] = ()  # (label, parameters) of each diffusion model / checkpoint
    # The largest stand-alone text encoder (CLIPLoader / DualCLIPLoader ...): it waits in system RAM
    # while the diffusion model samples, so it matters for a RAM OOM.
    text_encoder_label: str | None = None  # "t5xxl_fp16.safetensors"
    text_encoder_bits: int | None = None  # 16, 8 (fp8 / Q8), 5, 4 ...
    text_encoder_bytes: int | None = None  # its weights as stored

    @property
    def known(self) -> bool:
        return any(v not in (None, ()) for v in (self.families, self.clip_types, self.batch_size, self.video,
                                                   self.frames, self.decode_tiled, self.weight_bits, self.models,
                                                   self.text_encoder_bits))

    def to_dict(self) -> dict:
        return {"families": list(self.families), "clip_types": list(self.clip_types), "batch_size": self.batch_size,
                "video": self.video, "frames": self.frames, "decode_tiled": self.decode_tiled,
                "weight_bits": self.weight_bits, "install": self.install,
                "models": [{"label": label, "params": params} for label, params in self.models],
                "text_encoder_label": self.text_encoder_label, "text_encoder_bits": self.text_encoder_bits,
                "text_encoder_bytes": self.text_encoder_bytes}

    @classmethod
    def from_any(cls, value: Any) -> "OomContext | None":
        """An OomContext, or one from a JSON object (wrong types are ignored, never raised)."""
        if value is None or isinstance(value, OomContext):
            return value
        if not isinstance(value, Mapping):
            return None

        def count(key):
            v = value.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 10**6 else None

        def flag(key):
            return value.get(key) if isinstance(value.get(key), bool) else None

        def names(key):
            v = value.get(key)
            items = v if isinstance(v, (list, tuple)) else ()
            return tuple(x for x in items if isinstance(x, str) and len(x) < 64)[:MAX_FAMILIES]

        raw = value.get("models") if isinstance(value.get("models"), (list, tuple)) else ()
        models = tuple((m["label"], m["params"]) for m in raw[:MAX_FAMILIES] if isinstance(m, Mapping)
                       and isinstance(m.get("label"), str) and len(m["label"]) < 100
                       and isinstance(m.get("params"), int) and 0 < m["params"] < 10**13)
        te_label = value.get("text_encoder_label")
        te_bytes = value.get("text_encoder_bytes")
        return cls(families=names("families"), clip_types=names("clip_types"), batch_size=count("batch_size"),
                   video=flag("video"), frames=count("frames"), decode_tiled=flag("decode_tiled"),
                   weight_bits=count("weight_bits"), install=_install(value.get("install")), models=models,
                   text_encoder_label=te_label if isinstance(te_label, str) and len(te_label) < 200 else None,
                   text_encoder_bits=count("text_encoder_bits"),
                   text_encoder_bytes=te_bytes if isinstance(te_bytes, int) and not isinstance(te_bytes, bool)
                   and 0 < te_bytes < 10**13 else None)


def _install(value: Any) -> str | None:
    return _INSTALL_ALIASES.get(value.strip().lower()) if isinstance(value, str) else None


def guess_install(argv: list[str] | tuple[str, ...]) -> str | None:
    """'portable' when ComfyUI was started by the Windows portable build's .bat files (they pass
    --windows-standalone-build, .ci/windows_*_base_files/run_*.bat); None when it cannot tell."""
    return "portable" if "--windows-standalone-build" in argv else None


def _bits(dtype: str | None, weight_dtype: str | None) -> int | None:
    """Bits per weight: the loader's fp8 weight_dtype, else the stored dtype (F16, F8_E4M3, Q4_K ...)."""
    if weight_dtype and weight_dtype.startswith("fp8"):
        return 8
    d = (dtype or "").upper()
    if d in ("F32", "FP32"):
        return 32
    if d in ("F16", "BF16", "FP16"):
        return 16
    if d.startswith("F8"):
        return 8
    m = re.match(r"I?Q(\d)", d)
    return int(m.group(1)) if m else None


def _name_bits(name: str, gguf: bool = False) -> int | None:
    """Bits per weight read from a file name when its header is not at hand."""
    low = name.lower()
    m = re.search(r"(?<![a-z0-9])i?q(\d)(?:_|\b)", low)
    if m and (gguf or low.endswith(".gguf")):
        return int(m.group(1))
    if re.search(r"fp8|f8_|e4m3|e5m2", low):
        return 8
    if re.search(r"fp16|bf16|f16", low):
        return 16
    return None


def context_for_workload(workload, resolver=None, install: str | None = None) -> OomContext:
    """The OomContext of a Workload (graph.read_workflow): model families as the estimator
    identifies them (file headers through `resolver`, else the catalogue of public files)."""
    families, bits, clip_types, models = [], [], [], []
    encoders: list[tuple[int, str, int | None, int | None]] = []  # (params, label, bits, bytes)
    for stage in workload.stages:
        for ref in stage.models:
            if ref.clip_type and ref.clip_type not in clip_types:
                clip_types.append(ref.clip_type)
            if ref.role == "text_encoder" and not ref.unset:
                te, _ = resolve_model(ref, resolver)
                te_bits = _bits(te.dtype, None) or _name_bits(ref.name, ref.gguf)
                encoders.append((te.params or 0, ref.name, te_bits, te.weights_bytes or None))
            if stage.kind != SAMPLE or ref.role not in ("diffusion", "checkpoint"):
                continue
            info, _ = resolve_model(ref, resolver)
            if info.family != "unknown" and info.family not in families:
                families.append(info.family)
            if info.params and (info.label, info.params) not in models:
                models.append((info.label, info.params))
            b = _bits(info.dtype, ref.weight_dtype)
            if b is not None:
                bits.append(b)
    big_te = max(encoders, key=lambda e: e[0], default=None)  # T5-XXL, not clip_l, in a DualCLIPLoader
    latents = [s.latent for s in workload.stages if s.kind == SAMPLE and s.latent is not None]
    decodes = workload.stages_of(VAE_DECODE)
    frames = [lat.pixel_frames for lat in latents if lat.is_video and lat.pixel_frames]
    return OomContext(
        families=tuple(families)[:MAX_FAMILIES], clip_types=tuple(clip_types)[:MAX_FAMILIES],
        batch_size=max((lat.batch for lat in latents), default=None),
        video=any(lat.is_video for lat in latents) if latents else None,
        frames=max(frames, default=None),
        decode_tiled=all(bool(d.tiled) or d.auto_tiled for d in decodes) if decodes else None,
        weight_bits=min(bits, default=None), install=_install(install), models=tuple(models)[:MAX_FAMILIES],
        text_encoder_label=big_te[1] if big_te else None, text_encoder_bits=big_te[2] if big_te else None,
        text_encoder_bytes=big_te[3] if big_te else None,
    )


def context_for_prompt(prompt: Any, resolver=None, install: str | None = None) -> OomContext:
    """The OomContext of an API prompt or UI workflow; an empty one (generic advice) when it cannot
    be read. Never raises."""
    try:
        return context_for_workload(read_workflow(prompt), resolver, install)
    except Exception:  # noqa: BLE001  (OOM help must never fail on the workflow that caused it)
        return OomContext(install=_install(install))


def _is_flux(ctx: OomContext) -> bool:
    return any(f.startswith("flux1") for f in ctx.families) or (not ctx.families and "flux" in ctx.clip_types)


def _is_wan14(ctx: OomContext) -> bool:
    return any(f.startswith("wan") and f.endswith("14b") for f in ctx.families) or (
        not ctx.families and "wan" in ctx.clip_types and bool(ctx.video))


# --- where to set a flag or an environment variable -------------------------------------------
# Windows portable: the .bat files run `.\python_embeded\python.exe -s ComfyUI\main.py
# --windows-standalone-build` (ComfyUI .ci/windows_nvidia_base_files/run_nvidia_gpu.bat,
# .ci/windows_amd_base_files/run_amd_gpu.bat). ComfyUI Desktop: Settings (gear icon, Ctrl+,) ->
# Server Config, whose items map to these flags (ComfyUI_frontend src/constants/serverConfig.ts:
# 'cuda-malloc' Disable -> --disable-cuda-malloc, 'vram-management' -> --lowvram, 'reserve-vram';
# docs.comfy.org interface/settings/server-config); it has no item for environment variables.
# Linux / manual installs: the command line (docs.comfy.org development/comfyui-server/startup-flags).
_DESKTOP = {
    "--disable-cuda-malloc": "CUDA: 'Use CUDA malloc for memory allocation' = disable",
    "--lowvram": "Memory: 'VRAM management mode' = lowvram",
    "--reserve-vram": "Memory: 'Reserved VRAM (GB)' = {value}",
    "--fp8_e4m3fn-text-enc": "Inference: 'Text Encoder precision' = fp8_e4m3fn",
}
# Flags Server Config has no item for (serverConfig.ts lists only cache-classic and cache-lru under
# Cache, nothing for pinned memory): Desktop starts ComfyUI with every entry of the setting
# "Comfy.Server.LaunchArgs" (comfy.settings.json) as --key [value], an empty value giving the bare flag.
_DESKTOP_LAUNCH_ARGS_ONLY = ("--cache-none", "--disable-pinned-memory")


def where_to_set(settings: tuple[str, ...], install: str, backend: str = "cuda", alternatives: bool = False) -> str:
    """Where an install takes `settings` (launch flags such as '--lowvram' or '--reserve-vram 2',
    environment assignments such as 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'): all of
    them, or one of them when `alternatives`."""
    flags = [x for x in settings if x.startswith("--")]
    envs = [x for x in settings if not x.startswith("--")]
    joiner = " or " if alternatives else " "
    parts: list[str] = []
    if install == "portable":
        bat = "run_amd_gpu.bat" if backend == "hip" else "run_nvidia_gpu.bat"
        parts += [f'add the line "set {e}" above the python line of {bat}' for e in envs]
        if flags:
            parts.append(f"add {joiner.join(flags)} at the end of the python line of {bat} "
                         f"(.\\python_embeded\\python.exe -s ComfyUI\\main.py --windows-standalone-build {flags[0]})")
        return "Windows portable: " + "; ".join(parts)
    if install == "desktop":
        bare = [f for f in flags if f.split()[0] in _DESKTOP_LAUNCH_ARGS_ONLY]
        flags = [f for f in flags if f not in bare]
        items = [_DESKTOP.get(f.split()[0], f).format(value=(f.split() + [""])[1]) for f in flags]
        if items:
            parts.append("Settings (gear icon, Ctrl+,) -> Server Config -> " + (" or " if alternatives else "; ").join(items)
                         + ", then restart the app")
        parts += [f"it has no setting for {e.split('=')[0]}: set it to {e.split('=', 1)[1]} as a user environment "
                  "variable of the system and restart the app" for e in envs]
        parts += [f"Server Config has no item for {f}: close the app and add \"{f.split()[0][2:]}\": \"\" to "
                  "\"Comfy.Server.LaunchArgs\" in user\\default\\comfy.settings.json under the app's base folder "
                  "(the ComfyUI folder chosen at install), then start it again" for f in bare]
        return "ComfyUI Desktop: " + "; ".join(parts)
    start = " ".join(envs + ["python main.py"])
    if flags:
        start += " " + (flags[0] + (f" (or {', '.join(flags[1:])})" if flags[1:] else "") if alternatives else " ".join(flags))
    return f"Linux or a manual install: start it as {start}"


def _placed(remedy: Remedy, settings: tuple[str, ...], backend: str, ctx: OomContext | None,
            alternatives: bool = False) -> Remedy:
    """The remedy with where to set its flags: for the user's install, or for each install."""
    installs = (ctx.install,) if ctx is not None and ctx.install else INSTALLS
    where = tuple((i, where_to_set(settings, i, backend, alternatives)) for i in installs)
    detail = remedy.detail + " Where to set it: " + " | ".join(text for _, text in where) + "."
    return replace(remedy, detail=detail, flag=settings[0], where=where)


# --- remedies (texts follow shared/FACTS.md) -------------------------------------------------
def _alloc_env(backend: str) -> str:
    return ("PYTORCH_HIP_ALLOC_CONF" if backend == "hip" else "PYTORCH_CUDA_ALLOC_CONF") + "=expandable_segments:True"


def _fragmentation_remedy(backend: str, form: str, ctx: OomContext | None = None) -> Remedy:
    var = _alloc_env(backend).split("=")[0]
    detail = (
        f"Set {var}=expandable_segments:True before Python starts (newer PyTorch also reads "
        "PYTORCH_ALLOC_CONF; older ones: max_split_size_mb:128). It creates no memory; it lets "
        "PyTorch use what is free. Fragmentation comes with changing shapes: mixed image sizes, "
        "models loaded and unloaded in turn."
    )
    settings: tuple[str, ...] = (_alloc_env(backend),)
    if form.startswith("caching_allocator"):
        detail += (
            " This message comes from PyTorch's native allocator, so keep ComfyUI on it "
            "(--disable-cuda-malloc): ComfyUI otherwise switches to cudaMallocAsync, which "
            "ignores expandable_segments."
        )
        settings += ("--disable-cuda-malloc",)
    return _placed(Remedy("expandable_segments", "Let PyTorch reuse its fragmented cache", detail), settings, backend, ctx)


def _disable_cuda_malloc_remedy(backend: str, ctx: OomContext | None) -> Remedy:
    detail = (
        "\"Allocation on device\" comes from cudaMallocAsync, the allocator ComfyUI switches on by default with a "
        "CUDA build of torch 2.x (cuda_malloc.py). Start ComfyUI with --disable-cuda-malloc to use PyTorch's own "
        "caching allocator instead: its next out-of-memory message says what was allocated, cached and held by "
        "other processes; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True takes effect; and with the NVIDIA "
        "driver's sysmem fallback enabled (Windows) a short peak can spill into RAM instead of failing."
    )
    return _placed(Remedy("disable_cuda_malloc", "Start ComfyUI with --disable-cuda-malloc", detail),
                   ("--disable-cuda-malloc",), backend, ctx)


REMEDY_FP8_GGUF = Remedy(
    "fp8_gguf", "Use FP8 or GGUF weights",
    "Flux.1 dev is ~24 GB of weights in 16 bit and ~12 GB in FP8; its T5-XXL text encoder ~9.5 GB "
    "in 16 bit, ~5 GB in FP8. GGUF Q8 runs on 16 GB cards, Q5 and Q4 fit 12 GB (at Q4 fine detail "
    "starts to suffer).",
)
REMEDY_TILED_VAE = Remedy(
    "tiled_vae", "Decode with VAE Decode (Tiled)",
    "The final VAE decode is a classic failure point, above all for large images and video. "
    "VAE Decode (Tiled), or this pack's VAE Decode (Auto Tiled), works in parts at the cost of a "
    "few seconds.",
)
REMEDY_BATCH = Remedy(
    "smaller_batch", "Use a smaller batch",
    "Lower batch_size in Empty Latent Image: four images one after another need roughly a quarter "
    "of the activation memory of one batch of four.",
)
REMEDY_RESOLUTION = Remedy(
    "lower_resolution", "Lower the resolution or the frame count",
    "Activation memory grows with the pixel count (2048x2048 has four times the pixels of "
    "1024x1024): render smaller and upscale afterwards. Video: fewer frames or lower resolution "
    "(Wan 2.2: 81 -> 49 frames or 720p -> 480p saves several GB).",
)
REMEDY_UNLOAD = Remedy(
    "unload_models", "Unload models / free the cache",
    "Helps when switching workflows (Flux -> Wan) in one session: the panel's \"Unload all "
    "models\" and \"Free cache\" buttons do it without a restart.",
)
REMEDY_OFFLOAD = Remedy(
    "lowvram", "Offload to RAM (last resort)",
    "Start ComfyUI with --lowvram to keep parts of the model in system RAM, or --reserve-vram 2 to "
    "leave 2 GB free for other things. Expect several times slower generation.",
)
REMEDY_BIGGER_CARD = Remedy(
    "bigger_card", "Take a bigger card",
    "Stop tuning when the fix costs quality (FP8 -> Q4), speed (CPU offload) or more of your time "
    "than the price difference: Flux dev in 16 bit wants 24-32 GB, Wan 2.2 14B at 720p 32-48 GB.",
)
SHORTAGE_LADDER = (
    REMEDY_FP8_GGUF, REMEDY_TILED_VAE, REMEDY_BATCH, REMEDY_RESOLUTION,
    REMEDY_UNLOAD, REMEDY_OFFLOAD, REMEDY_BIGGER_CARD,
)
# A node that runs before any VAE decode: tiling the decode cannot fix its failure.
_NOT_A_DECODE = re.compile(r"sampler|textencode|loader|guider|sigmas|noise", re.IGNORECASE)


def _model_sizes(ctx: OomContext) -> str:
    """'<label>: X GB in 16 bit, Y GB in FP8' for the job's own diffusion models (parameters x 2 and
    x 1 byte, decimal GB as the model pages list them)."""
    return "; ".join(f"{label} ({params / 1e9:.2f}B parameters) is {2 * params / 1e9:.3g} GB in 16 bit and "
                     f"{params / 1e9:.3g} GB in FP8" for label, params in ctx.models)


def _precision_rung(ctx: OomContext) -> Remedy | None:
    bits = ctx.weight_bits
    if bits is not None and bits <= 4:
        return None  # already at Q4 or below: the next step costs more than it saves
    if bits is not None and bits <= 8:
        flux = " (Flux: Q5 and Q4 fit 12 GB)" if _is_flux(ctx) else ""
        return replace(REMEDY_FP8_GGUF, title="Use a smaller GGUF quantization", detail=(
            f"The diffusion model is already {bits}-bit: a GGUF Q5 or Q4 file is the next step{flux}; "
            "at Q4 fine detail starts to suffer."))
    if _is_flux(ctx) or not ctx.known:
        return REMEDY_FP8_GGUF  # FACTS.md's own figures are Flux's
    sizes = _model_sizes(ctx)
    return replace(REMEDY_FP8_GGUF, detail=(sizes + ". " if sizes else "") + _GENERIC_FP8)


_GENERIC_FP8 = ("FP8 weights take half the bytes of 16-bit ones, GGUF Q8 about half and Q4 about a quarter "
                "(at Q4 fine detail starts to suffer).")


def _batch_rung(ctx: OomContext) -> Remedy | None:
    b = ctx.batch_size
    if b is None:
        return REMEDY_BATCH
    if b <= 1:
        return None
    share = {2: "half", 4: "a quarter"}.get(b, f"1/{b}")
    what = "clips" if ctx.video else "images"
    return replace(REMEDY_BATCH, detail=(
        f"batch_size is {b}: {b} {what} one after another need roughly {share} of the activation memory of one "
        f"batch of {b} (FACTS: four images one after another need roughly a quarter of one batch of four)."))


def _resolution_rung(ctx: OomContext) -> Remedy:
    if ctx.video is None:
        return REMEDY_RESOLUTION
    if not ctx.video:
        return replace(REMEDY_RESOLUTION, title="Lower the resolution", detail=(
            "Activation memory grows with the pixel count (2048x2048 has four times the pixels of 1024x1024): "
            "render smaller and upscale afterwards."))
    now = f" (this job: {ctx.frames} frames)" if ctx.frames else ""
    wan = " Wan 2.2: 81 -> 49 frames or 720p -> 480p saves several GB." if _is_wan14(ctx) else ""
    return replace(REMEDY_RESOLUTION, detail=(
        f"Video: fewer frames{now} or a lower resolution; activation memory grows with frames x pixels.{wan}"))


def _bigger_card_rung(ctx: OomContext) -> Remedy:
    if not ctx.known:
        return REMEDY_BIGGER_CARD
    figures = [t for ok, t in ((_is_flux(ctx), "Flux dev in 16 bit wants 24-32 GB"),
                               (_is_wan14(ctx), "Wan 2.2 14B at 720p 32-48 GB")) if ok]
    detail = ("Stop tuning when the fix costs quality (FP8 -> Q4), speed (CPU offload) or more of your time than "
              "the price difference" + (": " + ", ".join(figures) if figures else "") + ". The VRAM Budget panel "
              "names the cheapest card that holds this workflow as is.")
    return replace(REMEDY_BIGGER_CARD, detail=detail)


def _ladder(ctx: OomContext | None, node_type: str | None, backend: str) -> list[Remedy]:
    """FACTS.md's ladder, each rung fitted to the workflow (or dropped where it cannot help)."""
    c = ctx or OomContext()
    tiled = None if (c.decode_tiled or (node_type and _NOT_A_DECODE.search(node_type))) else REMEDY_TILED_VAE
    unload = REMEDY_UNLOAD if not c.known else replace(REMEDY_UNLOAD, detail=(
        "Helps when the card still holds models of an earlier workflow of this session: the panel's \"Unload all "
        "models\" and \"Free cache\" buttons free them without a restart."))
    ladder = [_precision_rung(c), tiled, _batch_rung(c), _resolution_rung(c), unload,
              _placed(REMEDY_OFFLOAD, ("--lowvram", "--reserve-vram 2"), backend, ctx, alternatives=True),
              _bigger_card_rung(c)]
    return [r for r in ladder if r is not None]


def _other_process_remedy(processes: list[ProcessUsage]) -> Remedy:
    listed = ", ".join(f"PID {p.pid} ({fmt_gib(p.used_bytes)})" for p in sorted(processes, key=lambda p: -p.used_bytes)[:5])
    detail = (
        "Another process shares the card"
        + (f": {listed}" if listed else "")
        + ". Close what you do not need: a stale ComfyUI, an old Jupyter kernel, a crashed "
        "training script (nvidia-smi lists them). vLLM takes 90 % of the card at start "
        "(--gpu-memory-utilization). Then queue the prompt again."
    )
    return Remedy("close_other_process", "Close the other program on the GPU", detail)


# --- classification and words ----------------------------------------------------------------
def _classify(n: _Numbers) -> tuple[str, tuple[str, ...]]:
    has_numbers = any(v is not None for v in (n.total, n.free, n.allocated, n.reserved_unallocated)) or bool(n.processes)
    if not has_numbers:
        return "unknown_detail", ()
    scores: dict[str, int] = {}
    frag = n.reserved_unallocated or 0
    if frag >= FRAGMENTATION_BYTES or (n.requested is not None and frag > 0 and frag >= n.requested):
        scores["fragmentation"] = frag
    others = sum(p.used_bytes for p in n.processes)
    threshold = max(OTHER_PROCESS_MIN_BYTES, int((n.total or 0) * OTHER_PROCESS_SHARE))
    if others >= threshold:
        scores["other_process"] = others
    if not scores:
        return "shortage", ()
    ranked = sorted(scores, key=lambda k: -scores[k])
    return ranked[0], tuple(ranked[1:])


def _device_word(backend: str) -> str:
    return {"mps": "the Mac's GPU memory", "directml": "the GPU"}.get(backend, "the card")


def _summary(n: _Numbers, cause: str, backend: str, non_pytorch: int | None) -> tuple[str, str, str]:
    """(facts, caveat, cause) sentences; the summary is the three joined."""
    parts: list[str] = []
    card = _device_word(backend)
    req = fmt_gib(n.requested) if n.requested is not None else None
    if req and n.total is not None and n.free is not None:
        limit = " in total" if backend != "mps" else " allowed in total"
        parts.append(f"The failed request was {req}; {card} has {fmt_gib(n.total)}{limit} and only {fmt_gib(n.free)} was free.")
    elif req and n.total is not None:
        parts.append(f"The failed request was {req}; {card} has {fmt_gib(n.total)} in total.")
    elif req:
        parts.append(f"The failed request was {req}.")
    elif n.total is not None and n.free is not None:
        parts.append(f"{card[0].upper() + card[1:]} has {fmt_gib(n.total)} in total and only {fmt_gib(n.free)} was free.")
    if n.allocated is not None:
        held = f"PyTorch had {fmt_gib(n.allocated)} in use by tensors"
        if n.reserved_unallocated:
            held += f" and held another {fmt_gib(n.reserved_unallocated)} in its cache that it could not use for this request"
        parts.append(held + ".")
    if n.processes:
        total_others = sum(p.used_bytes for p in n.processes)
        count = len(n.processes)
        parts.append(f"{count} other process{'es' if count > 1 else ''} used {fmt_gib(total_others)} of the card.")
    elif non_pytorch is not None and n.total and non_pytorch >= 0.25 * n.total:
        parts.append(
            f"About {fmt_gib(non_pytorch)} was held outside PyTorch's allocator: another program on the card, "
            "or this process's own non-PyTorch memory (CUDA context, libraries)."
        )
    facts = " ".join(parts)
    caveat = ""
    if n.requested is not None:
        caveat = ("That request is only the one allocation that failed, not what the whole job needs: "
                  "trimming settings a little may only move the failure a few steps later.")

    parts = []
    if cause == "fragmentation":
        parts.append(
            f"The cause is fragmentation: {fmt_gib(n.reserved_unallocated or 0)} sat reserved but unusable in "
            "PyTorch's cache. Letting the allocator expand its segments fixes this without new memory."
        )
    elif cause == "other_process":
        parts.append("The cause is another process holding a large share of the card; close it and retry.")
    elif cause == "shortage":
        parts.append("The job really needs more memory than the card had free: make the job smaller, in the order below.")
    elif cause == "unknown_detail":
        what = {
            "cuda_malloc_async": "ComfyUI's default allocator (cudaMallocAsync) reports no numbers",
            "no_detail": "the error carries no numbers",
        }.get(n.form, "the error carries no numbers")
        parts.append(
            f"The GPU ran out of memory, but {what}, so the cause cannot be read from it. "
            "\"CUDA error: out of memory\" without detail usually comes from cuBLAS or a custom kernel, "
            "often at start-up; the fixes are the same as for any shortage."
        )
    return facts, caveat, " ".join(parts)


def _headline(n: _Numbers, cause: str, backend: str) -> str:
    gpu = f" on GPU {n.gpu_index}" if n.gpu_index is not None else ""
    where = "MPS" if backend == "mps" else "GPU"
    base = f"Out of {where} memory{gpu}"
    if n.requested is not None:
        base += f" ({fmt_gib(n.requested)} request failed)"
    return base + {
        "fragmentation": ": fragmented PyTorch cache",
        "other_process": ": another process holds the card",
        "shortage": ": not enough free memory",
        "unknown_detail": "",
    }.get(cause, "")


def _notes(n: _Numbers, backend: str, form: str, cause: str) -> list[str]:
    notes: list[str] = []
    if n.total is not None and backend in ("cuda", "hip") and 22 * GiB < n.total < 24 * GiB:
        notes.append(
            f"A total capacity of {fmt_gib(n.total)} on a 24 GB card is normal: the driver keeps a little, and the "
            "CUDA context takes a few hundred MB more before any model loads."
        )
    if backend == "mps":
        notes.append(
            "On a Mac the GPU shares system memory: closing other apps frees room. "
            "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts PyTorch's limit but may freeze the system."
        )
    if n.allowed is not None:
        notes.append(f"A per-process memory limit of {fmt_gib(n.allowed)} was set (set_per_process_memory_fraction).")
    if cause != "fragmentation" and n.reserved_unallocated and n.free is not None and n.requested is not None \
            and n.reserved_unallocated + n.free >= n.requested:
        notes.append(
            f"Free memory plus PyTorch's unused cache ({fmt_gib(n.free + n.reserved_unallocated)}) would have covered "
            "the request: expandable_segments may let this one through, but the job is close to the limit."
        )
    notes.append("torch.cuda.max_memory_allocated() after one full step, or torch.cuda.memory_summary(), measures the real peak.")
    return notes


def _remedies(n: _Numbers, cause: str, backend: str, form: str, node_type: str | None,
              ctx: OomContext | None = None) -> list[Remedy]:
    ladder = _ladder(ctx, node_type, backend)
    # The failing node tells which rung is nearest: a VAE decode wants tiling first.
    if node_type and "vaedecode" in node_type.replace("_", "").lower() and "tiled" not in node_type.lower() \
            and REMEDY_TILED_VAE in ladder:
        ladder.remove(REMEDY_TILED_VAE)
        ladder.insert(0, REMEDY_TILED_VAE)
    out: list[Remedy] = []
    if form == "cuda_malloc_async" and backend in ("cuda", "hip"):
        out.append(_disable_cuda_malloc_remedy(backend, ctx))  # the allocator itself is the first suspect
    if cause == "fragmentation":
        out.append(_fragmentation_remedy(backend, form, ctx))
        if n.processes:
            out.append(_other_process_remedy(n.processes))
    elif cause == "other_process":
        out.append(_other_process_remedy(n.processes))
        if n.reserved_unallocated and n.reserved_unallocated >= FRAGMENTATION_BYTES:
            out.append(_fragmentation_remedy(backend, form, ctx))
    out.extend(ladder)
    return out


# --- system memory (RAM) instead of the GPU ----------------------------------------------------
# Each pattern is a fixed alternation or bounded: linear on any input.
_PAGING_FILE = re.compile(r"paging file is too small|(?:os error|winerror|error code:?|error)\s*1455\b", re.IGNORECASE)
# c10/core/impl/alloc_cpu.cpp: "[enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough
# memory: you tried to allocate N bytes." (Windows) / "... can't allocate memory: you tried to allocate N bytes.
# Error code 12 (Cannot allocate memory)" (posix_memalign on Linux).
_CPU_ALLOCATOR = re.compile(r"DefaultCPUAllocator|alloc_cpu\.cpp|can't allocate memory: you tried to allocate",
                            re.IGNORECASE)
_MEMORY_ERROR = re.compile(r"(?<![\w.])MemoryError\b|ArrayMemoryError|Unable to allocate \S{1,20} \w{1,5} for an array"
                           r"|\[Errno 12\] Cannot allocate memory|Error code 12 \(Cannot allocate memory\)",
                           re.IGNORECASE)
_OOM_KILLER = re.compile(r"Out of memory: Kill(?:ed)? process|invoked oom-killer|oom-kill:|oom_reaper|OOMKilled"
                         r"|Memory cgroup out of memory", re.IGNORECASE)
# Exit status 137 = 128 + SIGKILL (shells, Docker, systemd); -9 = Python subprocess' returncode for SIGKILL;
# "Killed: 9" = macOS.
_KILLED_EXIT = re.compile(r"\b(?:exit(?:ed)?(?: with)?(?: exit)? (?:status|code)|exit_?code|return ?code|returncode)"
                          r"\s{0,3}[:=]?\s{0,3}(?:137|-9)\b|\bSIGKILL\b|\bsignal 9\b|Signals\.SIGKILL|\bKilled: 9\b",
                          re.IGNORECASE)
# bash / zsh when the kernel kills the foreground job: "Killed", "./run.sh: line 3: 4242 Killed  python main.py",
# "zsh: killed     python main.py".
_KILLED_LINE = re.compile(r"^(?:[\w./~-]{1,200}:\s+(?:line\s+\d{1,9}:\s+)?)?(?:\d{1,10}\s+)?Killed(?:\s|$)", re.IGNORECASE)
# Page-locked ("pinned") host memory: cudaHostRegister / cudaHostAlloc (PyTorch's CachingHostAllocator),
# their HIP twins, and ComfyUI's own warning: logging.warning("Pin error.") when cudaHostRegister fails
# (ComfyUI 0.33 comfy/model_management.py:1640, 0.18 :1455, 0.8 :1172). ComfyUI 0.33's aimdo pins
# (comfy/pinned_memory.py:61, :106-117) fall back to another pin silently and print nothing.
_PIN_API = re.compile(r"cudaHostRegister|hipHostRegister|cudaHostAlloc|hipHostMalloc|CachingHostAllocator"
                      r"|\bPin error\.", re.IGNORECASE)
_PIN_TRACE = re.compile(r"pin_memory|pinned|pin memory|\.pin\(|is_pinned", re.IGNORECASE)
_FAILED = re.compile(r"fail|error|out of memory|unable|cannot|could not", re.IGNORECASE)
# A GPU allocator's own report: the GPU diagnosis stands even when the text also shows a host sign.
_DEVICE_FORMS = ("caching_allocator", "caching_allocator_legacy", "cuda_malloc_async", "mps", "directml")


def _host_form(text: str, exception_type: str | None) -> str | None:
    """Which system-memory failure the text shows: "paging_file" | "cpu_allocator" | "memory_error" |
    "oom_killer" | "pinned_memory", or None (no sign of one)."""
    etype = (exception_type or "").rsplit(".", 1)[-1]
    if _PAGING_FILE.search(text):
        return "paging_file"
    if _CPU_ALLOCATOR.search(text):
        return "cpu_allocator"
    if _OOM_KILLER.search(text):
        return "oom_killer"
    pin_api = _PIN_API.search(text)
    if pin_api and (pin_api.group(0).lower() == "pin error." or _FAILED.search(text)):
        return "pinned_memory"
    if etype in ("MemoryError", "_ArrayMemoryError", "ArrayMemoryError") or _MEMORY_ERROR.search(text):
        return "memory_error"
    if _looks_like_oom(text, exception_type) and _PIN_TRACE.search(text):
        return "pinned_memory"  # "CUDA error: out of memory" raised by pin_memory(): the host pin failed
    lines = [line.strip() for line in text[-4096:].splitlines() if line.strip()]
    if lines and len(lines[-1]) < 300 and _KILLED_LINE.match(lines[-1]):
        return "oom_killer"
    if _KILLED_EXIT.search(text):
        return "oom_killer"
    return None


@dataclass
class _HostNumbers:
    requested: int | None = None
    killed_pid: int | None = None
    killed_process: str | None = None
    rss: int | None = None
    dll: bool = False  # WinError 1455 while Windows loaded a DLL (torch's CUDA libraries at start)


def _parse_host_numbers(text: str) -> _HostNumbers:
    h = _HostNumbers()
    h.requested = _find_size(r"you tried to allocate " + _SIZE, text)
    if h.requested is None:  # numpy: "Unable to allocate 3.00 GiB for an array with shape ..."
        h.requested = _find_size(r"Unable to allocate " + _SIZE, text)
    if h.requested is None:
        h.requested = _find_size(r"Tried to allocate (?:more than )?" + _SIZE, text)
    m = re.search(r"Kill(?:ed)? process (\d{1,10}) \(([^)\n]{1,64})\)", text, re.IGNORECASE)
    if m:
        h.killed_pid, h.killed_process = int(m.group(1)), m.group(2)
        kb = [int(v) for v in re.findall(r"(?:anon|file|shmem)-rss:\s?(\d{1,15})kB", text[m.end():m.end() + 400])]
        h.rss = sum(kb) * KiB if kb else None  # the kernel's kB are 1024 bytes
    h.dll = bool(re.search(r"\.dll\b", text, re.IGNORECASE))
    return h


def _size_gb(n_bytes: int) -> int:
    """Whole decimal GB, rounded up (what Windows' Virtual memory dialog and fallocate take)."""
    return max(1, -(-n_bytes // 10**9))


def _te_remedy(ctx: OomContext | None, backend: str) -> Remedy | None:
    c = ctx or OomContext()
    if c.text_encoder_bits is not None and c.text_encoder_bits <= 8:
        return None  # already FP8 / GGUF: nothing to gain here
    if c.text_encoder_label and c.text_encoder_bytes:
        what = (f"This workflow's text encoder {c.text_encoder_label} is {c.text_encoder_bytes / 1e9:.1f} GB; its "
                f"FP8 file is about {c.text_encoder_bytes / 2e9:.1f} GB and a GGUF Q5 about a third.")
    elif c.known and not c.text_encoder_label:
        what = "The text encoder comes with the checkpoint here: storing it in FP8 halves its RAM."
    else:
        what = ("T5-XXL (Flux, SD3) is ~9.8 GB in 16 bit and ~4.9 GB in FP8; UMT5-XXL (Wan) ~11.4 GB and ~6.7 GB; "
                "GGUF Q5 / Q4 files are smaller still.")
    detail = ("Once the prompt is encoded, ComfyUI moves the text encoder off the GPU and it waits in system RAM "
              f"next to the diffusion model. {what} Load an FP8 or GGUF text encoder file (t5xxl_fp8_e4m3fn, "
              "umt5_xxl_fp8_e4m3fn_scaled, a ComfyUI-GGUF CLIP loader), or let ComfyUI store it in FP8 with "
              "--fp8_e4m3fn-text-enc (a little quality, no speed).")
    return _placed(Remedy("fp8_text_encoder", "Use an FP8 or GGUF text encoder", detail),
                   ("--fp8_e4m3fn-text-enc",), backend, ctx)


def _cache_none_remedy(ctx: OomContext | None, backend: str) -> Remedy:
    many = f" This workflow loads {len(ctx.models)} diffusion models." if ctx is not None and len(ctx.models) > 1 else ""
    detail = ("ComfyUI keeps every node's output and the models it loaded for the next run. With --cache-none it "
              "frees a model as soon as no later node of the prompt needs it: the text encoder after encoding, the "
              f"high-noise Wan 2.2 expert before the low-noise one.{many} The cost: every node runs again on each "
              "queue (ComfyUI cli_args.py: \"Reduced RAM/VRAM usage at the expense of executing every node for "
              "each run\").")
    return _placed(Remedy("cache_none", "Start ComfyUI with --cache-none", detail), ("--cache-none",), backend, ctx)


def _disable_pinned_remedy(ctx: OomContext | None, backend: str, first: bool) -> Remedy:
    why = ("The failure was pinning itself: " if first else "")
    detail = (f"{why}ComfyUI pins (page-locks) model weights in RAM for faster transfers to the GPU on NVIDIA and "
              "AMD: up to 40 % of RAM on Windows and up to ~90 % on Linux (comfy/model_management.py, 0.33: "
              "MAX_PINNED_MEMORY). Pinned RAM cannot be paged out, so the rest of the system runs short. "
              "--disable-pinned-memory turns it off; weight transfers get somewhat slower.")
    return _placed(Remedy("disable_pinned_memory", "Start ComfyUI with --disable-pinned-memory", detail),
                   ("--disable-pinned-memory",), backend, ctx)


def _page_file_remedy(ctx: OomContext | None, requested: int | None, form: str) -> Remedy:
    if requested is not None:
        size = _size_gb(requested)
        total = max(32, size + 16)
        amount = f"at least {size} GB (the failed request) more than now, {total} GB in all is a safe start"
    else:
        total = 32
        amount = "32-64 GB (Flux or Wan 2.2 with 16-bit files: 64 GB)"
    win = ("Windows: System > Advanced system settings > Performance: Settings > Advanced > Virtual memory: "
           "Change; untick \"Automatically manage\", pick the fastest drive (an SSD), Custom size, Initial and "
           f"Maximum: {amount}; Set, then restart Windows")
    linux = (f"Linux: add swap, {amount}: sudo fallocate -l {total}G /swapfile && sudo chmod 600 /swapfile && "
             "sudo mkswap /swapfile && sudo swapon /swapfile (add it to /etc/fstab to keep it)")
    installs = (ctx.install,) if ctx is not None and ctx.install else INSTALLS
    where = tuple((i, linux if i == "linux" else win) for i in installs)
    if form == "paging_file":
        why = ("Windows counts RAM plus the page file (the commit limit) for every allocation and for every model "
               "file safetensors maps into memory; that limit was reached. A larger page file raises it: "
               "nothing is lost if it is never used, only disk space.")
        where = tuple((i, win) for i in installs)
    elif form == "oom_killer":
        why = "Linux killed the process when RAM and swap were both full; more swap lets a peak through, slowly."
        where = tuple((i, linux) for i in installs)
    else:
        why = "Gives the system room for a peak (a model being loaded or cast) at the cost of disk space."
    detail = why + " Where to set it: " + " | ".join(dict.fromkeys(text for _, text in where)) + "."
    return Remedy("page_file", "Enlarge the page file (Windows) or swap (Linux)", detail, where=where)


def _host_precision_rung(ctx: OomContext | None) -> Remedy | None:
    rung = _precision_rung(ctx or OomContext())
    if rung is None:
        return None
    return replace(rung, detail="Models ComfyUI offloads or keeps cached wait in system RAM at their stored size. "
                   + rung.detail)


REMEDY_CLOSE_PROGRAMS = Remedy(
    "close_other_programs", "Close other programs",
    "Browsers with many tabs, games, other AI tools (a second ComfyUI, Ollama, LM Studio) hold RAM too. Windows: "
    "Task Manager > Processes, sort by Memory; Linux: free -h and top (sort by RES).",
)
REMEDY_MORE_RAM = Remedy(
    "more_ram", "Add RAM",
    "When the workflow needs more than RAM and page file together, even with FP8 files: 32 GB is the floor for "
    "Flux and Wan 2.2 14B, 64 GB is comfortable.",
)


def _host_remedies(form: str, cause: str, h: _HostNumbers, ctx: OomContext | None, backend: str) -> list[Remedy]:
    """RAM remedies, cheapest first (none of the VRAM ladder: a smaller batch or --lowvram does not free RAM,
    --lowvram puts more of the model there)."""
    rb = "hip" if backend == "hip" else "cuda"  # which .bat of the portable build starts ComfyUI
    if cause == "pinned":
        # Page-locked RAM cannot go to the page file / swap: a bigger one does not help here.
        ladder = [_disable_pinned_remedy(ctx, rb, True), _cache_none_remedy(ctx, rb), _te_remedy(ctx, rb),
                  _host_precision_rung(ctx), REMEDY_CLOSE_PROGRAMS, REMEDY_MORE_RAM]
    else:
        ladder = [_te_remedy(ctx, rb), _cache_none_remedy(ctx, rb), _disable_pinned_remedy(ctx, rb, False),
                  _page_file_remedy(ctx, h.requested, form), _host_precision_rung(ctx), REMEDY_CLOSE_PROGRAMS,
                  REMEDY_MORE_RAM]
    out = [r for r in ladder if r is not None]
    if form == "paging_file" and h.dll:
        # WinError 1455 while loading torch's CUDA DLLs, before any model: only the page file helps.
        out.sort(key=lambda r: r.key != "page_file")
    return out


_HOST_CAUSE_TEXT = {
    "paging_file": ("Windows ran out of its commit limit (RAM plus the page file) while mapping or allocating "
                    "memory (error 1455)."),
    "cpu_allocator": "PyTorch's CPU allocator could not get the memory from the operating system.",
    "memory_error": "Python (or numpy) could not allocate the memory it asked the operating system for.",
    "oom_killer": ("The Linux out-of-memory killer ended the process because RAM and swap were full; it prints no "
                   "Python error, the log just ends in \"Killed\"."),
    "pinned_memory": ("Page-locking (pinning) system RAM for fast copies to the GPU failed; ComfyUI 0.30+ pins "
                      "model weights by default."),
}


def _host_diagnosis(body: str, raw: str, form: str, exception_type: str | None, ctx: OomContext | None,
                    tips: bool) -> OomDiagnosis:
    flat = re.sub(r"\s+", " ", raw)
    h = _parse_host_numbers(flat)
    cause = "pinned" if form == "pinned_memory" else "host_ram"
    low = flat.lower()
    backend = "cpu"
    if cause == "pinned":
        backend = "hip" if "hip" in low else "cuda"
    facts: list[str] = []
    if h.requested is not None:
        facts.append(f"The failed request was {fmt_gib(h.requested)} ({h.requested:,} bytes) of system RAM.")
    if h.killed_pid is not None:
        held = f", which held {fmt_gib(h.rss)} of RAM" if h.rss is not None else ""
        facts.append(f"The kernel killed process {h.killed_pid} ({h.killed_process}){held}.")
    summary_facts = " ".join(facts)
    caveat = ("That request is only the one allocation that failed, not what the whole job needs."
              if h.requested is not None else "")
    plain = ("This is system memory (RAM), not the GPU: the graphics card's memory (VRAM) did not run out, so "
             "VRAM fixes such as a smaller batch or --lowvram do not help.")
    summary_cause = f"{_HOST_CAUSE_TEXT[form]} {plain} Free RAM in the order below."
    req = f" ({fmt_gib(h.requested)} request failed)" if h.requested is not None else ""
    headline = {
        "pinned_memory": "Could not pin system memory (RAM) for the GPU",
        "oom_killer": "Killed by the system: out of RAM (system memory)",
        "paging_file": "Out of system memory (RAM + page file)",
    }.get(form, "Out of system memory (RAM)") + req
    notes = ["The VRAM numbers of the panel do not measure this: watch RAM instead (Windows: Task Manager > "
             "Performance > Memory, \"Committed\"; Linux: free -h)."]
    if form == "oom_killer":
        notes.append("sudo dmesg | grep -i -E 'killed process|oom' shows what the kernel killed and how much RAM it held.")
    return OomDiagnosis(
        is_oom=True, backend=backend, form=form, cause=cause, memory="system",
        headline=headline,
        summary=" ".join(p for p in (summary_facts, caveat, summary_cause) if p),
        summary_facts=summary_facts, summary_caveat=caveat, summary_cause=summary_cause,
        remedies=tuple(_host_remedies(form, cause, h, ctx, backend)), notes=tuple(notes),
        exception_type=exception_type, requested_bytes=h.requested, comfy_tips=tips, message=body[:4000],
        context=ctx, killed_pid=h.killed_pid, killed_process=h.killed_process, host_rss_bytes=h.rss,
    )


def is_oom_message(message: Any, exception_type: Any = None) -> bool:
    """Whether a message looks like any out-of-memory error, GPU or system RAM (a cheap pre-filter)."""
    text = message[:MAX_MESSAGE_CHARS] if isinstance(message, str) else ""
    etype = exception_type if isinstance(exception_type, str) else None
    try:
        return _looks_like_oom(text, etype) or _host_form(text, etype) is not None
    except Exception:  # noqa: BLE001
        return False


def _not_oom(text: str, exception_type: str | None) -> OomDiagnosis:
    return OomDiagnosis(
        is_oom=False, backend="unknown", form="none", cause="not_oom",
        headline="Not an out-of-memory error",
        summary="This message does not look like an out-of-memory error, so there is nothing to diagnose here.",
        exception_type=exception_type, message=text[:2000], memory="none",
    )


def parse_oom(message: str, exception_type: str | None = None, node_type: str | None = None,
              context: OomContext | Mapping | None = None) -> OomDiagnosis:
    """Diagnose an OOM message (any text; never raises).

    `exception_type` is ComfyUI's ``exception_type`` ("torch.OutOfMemoryError"); `node_type` the
    class of the node that failed, when known (puts the nearest remedy first, drops tiling when a
    sampler failed); `context` what the failed workflow was (``context_for_prompt``, or the same
    fields as a JSON object): the remedies that cannot apply to it are left out.
    """
    try:
        text = message if isinstance(message, str) else ("" if message is None else str(message))
        etype = exception_type if isinstance(exception_type, str) else None
        ntype = node_type if isinstance(node_type, str) else None
        return _parse(text[:MAX_MESSAGE_CHARS], etype, ntype, OomContext.from_any(context))
    except Exception as exc:  # a diagnosis helper must never turn one error into two
        return OomDiagnosis(
            is_oom=False, backend="unknown", form="none", cause="unknown_detail",
            headline="Could not read this error", summary=f"The message could not be read ({type(exc).__name__}).",
            memory="none",
        )


def _parse(text: str, exception_type: str | None, node_type: str | None, ctx: OomContext | None = None) -> OomDiagnosis:
    body, tips = _strip_comfy_tips(text)
    raw = body  # "MemoryError: ..." keeps its type name for _host_form
    body = _strip_exception_prefix(body)
    host = _host_form(raw, exception_type)
    if not _looks_like_oom(body, exception_type) and not tips and host is None:
        return _not_oom(body, exception_type)
    low = body.lower()
    backend = _backend(low)
    if backend == "unknown" and exception_type and "cuda" in exception_type.lower():
        backend = "cuda"
    if backend == "unknown" and exception_type and exception_type.endswith("OutOfMemoryError"):
        backend = "cuda"  # torch.OutOfMemoryError is raised by the CUDA/HIP allocators
    # PyTorch wraps nothing, but logs and pastes do: parse on single-spaced text.
    n = _parse_numbers(re.sub(r"\s+", " ", body), backend)
    if host is not None and n.form not in _DEVICE_FORMS:
        return _host_diagnosis(body, raw, host, exception_type, ctx, tips)
    cause, secondary = _classify(n)
    host_note = None
    if host is not None:  # a GPU report with numbers wins; the host sign is kept as a second cause
        secondary += ("pinned" if host == "pinned_memory" else "host_ram",)
        host_note = ("The text also shows a system-memory (RAM) failure (" + host.replace("_", " ") + "): if the GPU "
                     "fixes do not help, see the RAM remedies (--cache-none, FP8 text encoder, a larger page file).")
    non_pytorch = None
    if n.total is not None and n.free is not None and n.allocated is not None and backend != "mps":
        non_pytorch = max(0, n.total - n.free - n.allocated - (n.reserved_unallocated or 0))
    others = sum(p.used_bytes for p in n.processes) if n.processes else None
    facts, caveat, cause_text = _summary(n, cause, backend, non_pytorch)
    return OomDiagnosis(
        is_oom=True,
        backend=backend,
        form=n.form,
        cause=cause,
        secondary_causes=secondary,
        headline=_headline(n, cause, backend),
        summary=" ".join(p for p in (facts, caveat, cause_text) if p),
        summary_facts=facts,
        summary_caveat=caveat,
        summary_cause=cause_text,
        remedies=tuple(_remedies(n, cause, backend, n.form, node_type, ctx)),
        notes=tuple(_notes(n, backend, n.form, cause) + ([host_note] if host_note else [])),
        exception_type=exception_type,
        gpu_index=n.gpu_index,
        requested_bytes=n.requested,
        total_bytes=n.total,
        free_bytes=n.free,
        allocated_bytes=n.allocated,
        reserved_unallocated_bytes=n.reserved_unallocated,
        reserved_bytes=n.reserved,
        this_process_bytes=n.this_process,
        allowed_bytes=n.allowed,
        other_processes=tuple(n.processes),
        other_processes_bytes=others,
        non_pytorch_bytes=non_pytorch,
        comfy_tips=tips,
        message=body[:4000],
        context=ctx,
    )
