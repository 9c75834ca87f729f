"""The one place that reads ComfyUI state: devices and memory, loaded models, model paths, unloading.

Everything else in the pack asks this module. It imports ComfyUI lazily, inside functions, so
importing it never fails; the functions themselves are only called inside a running ComfyUI.
Where ComfyUI versions differ (classic memory management in 0.8 vs "Dynamic VRAM" /
comfy-aimdo in 0.13+), it feature-detects with ``hasattr`` instead of assuming either.
"""
from __future__ import annotations

import ctypes
import math
import os
import platform
from collections import Counter
from dataclasses import dataclass, replace

from .estimator.device import CUDA_CONTEXT_BYTES, LaunchFlags, device_for_launch, rules_for_version
from .estimator.errors import VramBudgetError
from .estimator.gpus import Card, card_for_vram, find_card
from .estimator.host_memory import Host, container_limit
from .estimator.units import GiB, fmt_gib
from .estimator.placement_plan import CORE_SELECT_NODES_ALL


def _mm():
    import comfy.model_management as mm  # noqa: PLC0415

    return mm


def _folder_paths():
    import folder_paths  # noqa: PLC0415

    return folder_paths


def comfy_args():
    """ComfyUI's parsed launch flags (comfy.cli_args.args), or None outside ComfyUI."""
    try:
        from comfy.cli_args import args  # noqa: PLC0415
    except Exception:  # noqa: BLE001  (outside ComfyUI)
        return None
    return args


# ----------------------------------------------------------------------------------------------
# Devices and memory
@dataclass(frozen=True)
class DeviceState:
    """Memory of the device ComfyUI computes on, in bytes."""

    name: str
    type: str  # "cuda" | "cpu" | "mps" | "xpu" | ...
    index: int | None
    total: int  # whole card (mem_get_info total) or system RAM for cpu
    free: int  # free as ComfyUI counts it (includes torch's cached-but-unused blocks)
    driver_free: int  # free as the driver reports it (mem_get_info)
    torch_reserved: int  # held by PyTorch's caching allocator
    torch_allocated: int  # really in use by tensors
    memory_mode: str  # "classic" | "dynamic" (comfy-aimdo weight streaming) | "cpu"
    vram_state: str  # ComfyUI's VRAMState name
    reserve: int  # ComfyUI's extra reserved VRAM (--reserve-vram)


def memory_mode() -> str:
    """"dynamic" when this ComfyUI streams weights with comfy-aimdo (Dynamic VRAM), else "classic"."""
    mm = _mm()
    if getattr(mm, "cpu_state", None) is not None and str(getattr(mm, "vram_state", "")).endswith("DISABLED"):
        return "cpu"
    try:  # ComfyUI >= 0.13: comfy.memory_management.aimdo_enabled is set once comfy-aimdo is initialised
        import comfy.memory_management as cmm  # noqa: PLC0415

        if getattr(cmm, "aimdo_enabled", False):
            return "dynamic"
    except ImportError:
        pass
    for attr in ("dynamic_vram_enabled", "is_dynamic_vram", "DYNAMIC_VRAM"):
        val = getattr(mm, attr, None)
        if callable(val):
            try:
                if val():
                    return "dynamic"
            except Exception:
                pass
        elif val:
            return "dynamic"
    args = comfy_args()
    if getattr(args, "enable_dynamic_vram", False) or getattr(args, "dynamic_vram", False):
        return "dynamic"
    return "classic"


def device_state(device=None) -> DeviceState:
    mm = _mm()
    dev = device if device is not None else mm.get_torch_device()
    dev_type = getattr(dev, "type", str(dev))
    total = int(mm.get_total_memory(dev))
    free, torch_free = mm.get_free_memory(dev, torch_free_too=True)
    reserved = allocated = 0
    driver_free = int(free)
    if dev_type == "cuda":
        import torch  # noqa: PLC0415

        try:
            stats = torch.cuda.memory_stats(dev)
            reserved = int(stats.get("reserved_bytes.all.current", 0))
            allocated = int(stats.get("allocated_bytes.all.current", 0))
            driver_free = int(torch.cuda.mem_get_info(dev)[0])
        except Exception:
            pass
    try:
        name = mm.get_torch_device_name(dev)
    except Exception:
        name = str(dev)
    vram_state = getattr(getattr(mm, "vram_state", None), "name", str(getattr(mm, "vram_state", "")))
    mode = "cpu" if dev_type == "cpu" else memory_mode()
    try:
        reserve = int(mm.extra_reserved_memory())
    except Exception:
        reserve = 0
    return DeviceState(
        name=str(name), type=dev_type, index=getattr(dev, "index", None), total=total, free=int(free),
        driver_free=driver_free, torch_reserved=reserved, torch_allocated=allocated, memory_mode=mode,
        vram_state=vram_state, reserve=reserve,
    )


def soft_empty_cache() -> None:
    _mm().soft_empty_cache()


def gpu_vendor() -> str:
    """"AMD" when ComfyUI runs on ROCm (model_management.is_amd), else "" (the maker rules that differ are AMD's)."""
    try:
        return "AMD" if _mm().is_amd() else ""
    except Exception:  # noqa: BLE001  (an older or stand-in ComfyUI: no maker rule applies)
        return ""


def is_oom(exc: BaseException) -> bool:
    mm = _mm()
    oom = getattr(mm, "OOM_EXCEPTION", None)
    if oom is not None and oom is not Exception and isinstance(exc, oom):
        return True
    return type(exc).__name__.endswith("OutOfMemoryError") or "out of memory" in str(exc).lower()


# ----------------------------------------------------------------------------------------------
# Model paths: names from a workflow are resolved ONLY through ComfyUI's model folders.
def resolve_model_path(folder: str, name: str) -> str | None:
    """Full path of a model named in a workflow, or None when it is not in ComfyUI's folders."""
    fp = _folder_paths()
    try:
        path = fp.get_full_path(folder, name)
    except Exception:
        return None
    return path if path and os.path.isfile(path) else None


def model_resolver():
    """A callable (folder, name) -> path | None for the estimator."""
    return resolve_model_path


def supports_fp8_compute() -> bool:
    """ComfyUI's own test (NVIDIA sm >= 8.9 with a recent torch): fp8 files then stay fp8."""
    mm = _mm()
    try:
        return bool(mm.supports_fp8_compute(mm.get_torch_device()))
    except Exception:
        return False


# ----------------------------------------------------------------------------------------------
# Added for the VRAM panel (nodes/routes.py). Append-only; the functions above are unchanged.
@dataclass(frozen=True)
class DynamicVram:
    """ComfyUI's "Dynamic VRAM" (comfy-aimdo weight streaming, 0.13+), when it is active."""

    enabled: bool
    headroom: int | None  # VRAM aimdo keeps free for working memory (bytes)
    aimdo_bytes: int | None  # VRAM aimdo holds for streamed weights (bytes)


def dynamic_vram_status() -> DynamicVram:
    """Feature-detected: ``comfy.memory_management.aimdo_enabled`` is the switch main.py sets
    (0.18.2 ``main.py:243``); 0.8.0 has neither module attribute nor comfy-aimdo."""
    try:
        import comfy.memory_management as cmm  # noqa: PLC0415
    except Exception:
        return DynamicVram(False, None, None)
    if not getattr(cmm, "aimdo_enabled", False):
        return DynamicVram(False, None, None)
    headroom = aimdo = None
    try:
        import comfy_aimdo.control as control  # noqa: PLC0415
    except Exception:
        return DynamicVram(True, None, None)
    try:
        headroom = _aimdo_headroom(control)
    except Exception:
        pass
    try:
        aimdo = int(control.get_total_vram_usage())
    except Exception:
        pass
    return DynamicVram(True, headroom, aimdo)


_AIMDO_HEADROOM_FLOOR = 256 * 1024 * 1024  # comfy-aimdo's compiled-in VRAM_HEADROOM


def _aimdo_simple_headroom(control) -> int | None:
    """The simple VRAM headroom comfy-aimdo keeps (bytes), from whichever API this comfy-aimdo has:
    - ``control.get_simple_vram_headroom()`` where it exists (the comfy-aimdo 0.18.2 installs);
    - comfy-aimdo 0.4.x (ComfyUI 0.33.0 pins 0.4.13) has only the setter: its library exports the
      value as the int64 ``simple_vram_headroom``, read through ctypes once ``control.lib`` is loaded;
    - otherwise what ComfyUI handed it: 0.33 ``main.py:99-101`` passes ``--reserve-vram`` GB as
      ``simple_vram_headroom`` (None keeps the library default, the 256 MB floor)."""
    getter = getattr(control, "get_simple_vram_headroom", None)
    if callable(getter):
        return int(getter())
    lib = getattr(control, "lib", None)
    if lib is not None:
        value = _lib_int64(lib, "simple_vram_headroom")
        if value is not None:
            return value
    args = comfy_args()
    if args is None:
        return None
    reserve = getattr(args, "reserve_vram", None)
    return 0 if reserve is None else int(float(reserve) * 1024 ** 3)


def _lib_int64(lib, name: str) -> int | None:
    """An exported int64 variable of a ctypes-loaded library, or None when it has none."""
    try:
        return int(ctypes.c_int64.in_dll(lib, name).value)
    except (ValueError, AttributeError, TypeError):
        return None


def _aimdo_headroom(control) -> int | None:
    """VRAM Dynamic VRAM keeps free for working memory (bytes): the larger of the simple headroom
    and the 256 MB floor (comfy_aimdo.control.set_simple_vram_headroom's docstring), plus the
    per-device extra headroom ComfyUI 0.33 passes to ``init_devices`` (``--vram-headroom`` GB,
    0.33 ``main.py:305``; older ComfyUI has no such flag)."""
    simple = _aimdo_simple_headroom(control)
    if simple is None:
        return None
    try:
        extra = int(float(getattr(comfy_args(), "vram_headroom", 0) or 0) * 1024 ** 3)
    except (TypeError, ValueError):
        extra = 0
    return max(simple, _AIMDO_HEADROOM_FLOOR) + max(extra, 0)


@dataclass(frozen=True)
class CudaDeviceMemory:
    """One CUDA/ROCm device as nvidia-smi would show it, plus PyTorch's view where there is one."""

    index: int
    name: str
    total: int
    driver_free: int | None  # None when unknown (device never touched and no NVML)
    torch_reserved: int
    torch_allocated: int
    is_compute_device: bool  # the device ComfyUI computes on
    source: str  # "torch" (mem_get_info) | "nvml" | "properties" (total only)
    uuid: str | None = None


def _nvml():
    """pynvml (package nvidia-ml-py) initialised once, or None when it is not installed/usable."""
    global _NVML_STATE
    if _NVML_STATE is None:
        try:
            import pynvml  # noqa: PLC0415

            pynvml.nvmlInit()
            _NVML_STATE = pynvml
        except Exception:
            _NVML_STATE = False
    return _NVML_STATE or None


_NVML_STATE = None


def _nvml_handle(nvml, uuid: str | None, index: int):
    if uuid:
        for candidate in (uuid, f"GPU-{uuid}"):
            try:
                return nvml.nvmlDeviceGetHandleByUUID(candidate)
            except Exception:
                continue
    if not os.environ.get("CUDA_VISIBLE_DEVICES"):
        try:
            return nvml.nvmlDeviceGetHandleByIndex(index)  # indices agree only without CUDA_VISIBLE_DEVICES
        except Exception:
            return None
    return None


def cuda_devices() -> list[CudaDeviceMemory]:
    """Every CUDA device torch sees; [] when ComfyUI runs on the CPU or torch has no CUDA.

    ``torch.cuda.mem_get_info`` would create a CUDA context (a few hundred MiB) on a device
    ComfyUI never used, so for those it asks NVML instead, or gives the total only.
    """
    mm = _mm()
    compute = mm.get_torch_device()
    if getattr(compute, "type", "") != "cuda":  # --cpu, MPS, XPU, DirectML: no CUDA bars
        return []
    try:
        import torch  # noqa: PLC0415

        if not torch.cuda.is_available():
            return []
        count = torch.cuda.device_count()
    except Exception:
        return []
    compute_index = getattr(compute, "index", None) if getattr(compute, "type", "") == "cuda" else None
    if compute_index is None and getattr(compute, "type", "") == "cuda":
        compute_index = torch.cuda.current_device()
    out: list[CudaDeviceMemory] = []
    for i in range(count):
        try:
            props = torch.cuda.get_device_properties(i)
            name, total = str(props.name), int(props.total_memory)
            uuid = str(getattr(props, "uuid", "") or "") or None
        except Exception:
            continue
        try:
            stats = torch.cuda.memory_stats(i)
            reserved = int(stats.get("reserved_bytes.all.current", 0))
            allocated = int(stats.get("allocated_bytes.all.current", 0))
        except Exception:
            reserved = allocated = 0
        is_compute = i == compute_index
        driver_free, source = None, "properties"
        if is_compute or reserved > 0:  # a context exists already: asking costs nothing
            try:
                driver_free, total = (int(v) for v in torch.cuda.mem_get_info(i))
                source = "torch"
            except Exception:
                driver_free = None
        if driver_free is None:
            nvml = _nvml()
            handle = _nvml_handle(nvml, uuid, i) if nvml else None
            if handle is not None:
                try:
                    info = nvml.nvmlDeviceGetMemoryInfo(handle)
                    driver_free, total, source = int(info.free), int(info.total), "nvml"
                except Exception:
                    pass
        out.append(CudaDeviceMemory(index=i, name=name, total=total, driver_free=driver_free, torch_reserved=reserved,
                                    torch_allocated=allocated, is_compute_device=is_compute, source=source, uuid=uuid))
    return out


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    used: int  # bytes
    is_self: bool


def gpu_processes(device: CudaDeviceMemory) -> list[GpuProcess] | None:
    """Processes using the device (NVML), largest first; None when NVML is not available."""
    nvml = _nvml()
    if not nvml:
        return None
    handle = _nvml_handle(nvml, device.uuid, device.index)
    if handle is None:
        return None
    procs = []
    seen = set()
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        try:
            procs.extend(getattr(nvml, getter)(handle))
        except Exception:
            continue
    me = os.getpid()
    out = []
    for p in procs:
        pid = int(getattr(p, "pid", 0))
        if pid in seen:
            continue
        seen.add(pid)
        used = getattr(p, "usedGpuMemory", None)
        try:
            import psutil  # noqa: PLC0415

            name = psutil.Process(pid).name()
        except Exception:
            name = f"pid {pid}"  # another container / no permission
        out.append(GpuProcess(pid=pid, name=name, used=int(used) if isinstance(used, int) else 0, is_self=pid == me))
    return sorted(out, key=lambda p: -p.used)


@dataclass(frozen=True)
class LoadedModelInfo:
    """One entry of ``comfy.model_management.current_loaded_models`` (newest first)."""

    key: str  # stable while the model stays loaded: id of its ModelPatcher, hex
    index: int  # position in current_loaded_models when the snapshot was taken
    name: str  # model class, e.g. "Flux", "AutoencodingEngine", "FluxClipModel"
    file: str | None  # base name of the weights file when ComfyUI recorded it
    type: str  # "diffusion" | "text_encoder" | "vae" | "controlnet" | "clip_vision" | "upscale" | "other"
    device: str  # load device, e.g. "cuda:0" / "cpu"
    device_type: str
    size: int  # bytes of all weights at the loaded dtype (model_memory)
    loaded: int  # bytes on the load device (model_loaded_memory)
    currently_used: bool
    dynamic: bool  # streamed by comfy-aimdo


def _model_type(model) -> str:
    cls = type(model)
    module = (cls.__module__ or "").lower()
    try:
        import comfy.model_base  # noqa: PLC0415

        if isinstance(model, comfy.model_base.BaseModel):
            return "diffusion"
    except Exception:
        pass
    if "clip_vision" in module:
        return "clip_vision"
    if "sd1_clip" in module or "text_encoders" in module or "sdxl_clip" in module or "clip" in cls.__name__.lower():
        return "text_encoder"
    if "vae" in module or "autoencoder" in module or "taesd" in module or "vae" in cls.__name__.lower():
        return "vae"
    if "cldm" in module or "controlnet" in module or "t2i_adapter" in module:
        return "controlnet"
    if "spandrel" in module or "upscale" in module:
        return "upscale"
    return "other"


def _model_file(patcher, cache: dict) -> str | None:
    """The weights file ComfyUI loaded this model from, when it kept a record (exact, else None).

    - 0.13+: loaders set ``patcher.cached_patcher_init = (fn, (path_or_paths, ...))``.
    - Dynamic VRAM: tensors are slices of the file (``storage._comfy_tensor_file_slice.file_ref``).
    0.8.0 keeps neither, so its models are shown by class name only.
    """
    key = id(patcher)
    if key in cache:
        return cache[key]
    found = None
    init = getattr(patcher, "cached_patcher_init", None)
    try:
        if init and len(init) > 1 and init[1]:
            first = init[1][0]
            paths = first if isinstance(first, (list, tuple)) else [first]
            names = [os.path.basename(str(p)) for p in paths if isinstance(p, (str, os.PathLike))]
            found = " + ".join(names) or None
    except Exception:
        found = None
    if found is None:
        try:
            param = next(iter(patcher.model.parameters()))
            info = getattr(param.untyped_storage(), "_comfy_tensor_file_slice", None)
            name = getattr(getattr(info, "file_ref", None), "name", None)
            if isinstance(name, str):
                found = os.path.basename(name)
        except Exception:
            found = None
    cache[key] = found
    return found


_MODEL_FILE_CACHE: dict = {}


def loaded_models() -> list[LoadedModelInfo]:
    """Snapshot of ComfyUI's loaded models; safe to call from any thread (reads only)."""
    mm = _mm()
    out: list[LoadedModelInfo] = []
    live = set()
    for index, lm in enumerate(list(mm.current_loaded_models)):
        try:
            patcher = lm.model
            if patcher is None:
                continue
            model = patcher.model
            size = int(lm.model_memory())
            loaded = int(lm.model_loaded_memory())
            dynamic = bool(getattr(patcher, "is_dynamic", lambda: False)())
            live.add(id(patcher))
            dev = lm.device
            out.append(LoadedModelInfo(
                key=f"{id(patcher):x}", index=index, name=type(model).__name__.rstrip("_"),
                file=_model_file(patcher, _MODEL_FILE_CACHE), type=_model_type(model), device=str(dev),
                device_type=getattr(dev, "type", str(dev)), size=size, loaded=min(loaded, size) if size else loaded,
                currently_used=bool(lm.currently_used), dynamic=dynamic,
            ))
        except Exception:
            continue  # a model being torn down on the worker thread right now
    for stale in [k for k in _MODEL_FILE_CACHE if k not in live]:
        _MODEL_FILE_CACHE.pop(stale, None)
    return out


def unload_loaded_model(key: str) -> LoadedModelInfo | None:
    """Unload one model through ComfyUI's own ``free_memory`` (every other model kept loaded).

    Returns what was unloaded, or None when no loaded model has that key. The CALLER must make
    sure no prompt is running (free_memory belongs to the prompt worker: main.py prompt_worker).
    """
    mm = _mm()
    snapshot = list(mm.current_loaded_models)
    target = None
    for lm in snapshot:
        patcher = lm.model
        if patcher is not None and f"{id(patcher):x}" == key:
            target = lm
            break
    if target is None:
        return None
    info = next((m for m in loaded_models() if m.key == key), None)
    others = [lm for lm in snapshot if lm is not target]
    mm.free_memory(1e30, target.device, keep_loaded=others)
    if target in mm.current_loaded_models and target.model is not None:
        # free_memory skips models it considers dead or in use elsewhere; detach it the same way it would.
        if target.model_unload():
            mm.current_loaded_models.remove(target)
            mm.soft_empty_cache()
    return info


def ram_state() -> dict:
    """System RAM and this process's resident memory, in bytes (psutil)."""
    import psutil  # noqa: PLC0415

    vm = psutil.virtual_memory()
    try:
        rss = int(psutil.Process().memory_info().rss)
    except Exception:
        rss = None
    total, available, _swap, host_total = _container_ram(int(vm.total), int(vm.available), 0)
    out = {"total": total, "available": available, "used": total - available, "process_rss": rss}
    if host_total:
        out["container_limit"] = True  # the panel's RAM bar is the container's, not the host's
        out["host_total"] = host_total
    return out


# ----------------------------------------------------------------------------------------------
# A loaded MODEL, described as plain data (the Wan planner's MODEL input)
def describe_loaded_model(model) -> dict:
    """What a MODEL (ModelPatcher) or BaseModel is, as plain data; never loads or moves weights.

    Keys: class_name (``model.model`` class: WAN21, WAN22, Flux, ...), image_model / model_type
    (ComfyUI's detected unet_config), dim, num_layers, in_dim, out_dim, ffn_dim, num_heads,
    patch_size (read from ``model.model.diffusion_model``, else the unet_config), params (logical
    parameter count), weights_bytes (bytes as held: quantized bytes for GGUF / fp8), dtype (the most
    common parameter dtype, e.g. "bfloat16", "float8_e4m3fn"), gguf (ComfyUI-GGUF GGMLTensor
    weights, whose class carries ``tensor_type`` / ``tensor_shape``: ComfyUI-GGUF ops.py),
    gguf_type (most common quantized type, e.g. "Q4_K"), largest_tensor_params, manual_cast_dtype.
    """
    base = getattr(model, "model", model)  # ModelPatcher -> BaseModel
    dm = getattr(base, "diffusion_model", None)
    config = getattr(getattr(base, "model_config", None), "unet_config", None) or {}
    out: dict = {"class_name": type(base).__name__, "image_model": config.get("image_model"),
                 "model_type": config.get("model_type")}
    for key in ("dim", "num_layers", "in_dim", "out_dim", "ffn_dim", "num_heads", "patch_size"):
        value = getattr(dm, key, None) if dm is not None else None
        if value is None:
            value = config.get(key)
        if key == "num_layers" and value is None and dm is not None and hasattr(dm, "blocks"):
            value = len(dm.blocks)
        if key == "ffn_dim" and value is None and dm is not None and hasattr(dm, "blocks") and len(dm.blocks):
            value = getattr(dm.blocks[0], "ffn_dim", None)
        out[key] = list(value) if isinstance(value, tuple) else value
    params = nbytes = largest = 0
    dtypes: Counter = Counter()
    ggml: Counter = Counter()
    module = dm if dm is not None else base
    tensors = list(module.parameters()) if hasattr(module, "parameters") else []
    for t in tensors:
        shape = getattr(t, "tensor_shape", None)  # GGMLTensor: logical shape; its storage is raw bytes
        numel = int(math.prod(shape)) if shape is not None else int(t.numel())
        params += numel
        nbytes += int(t.numel()) * int(t.element_size())
        largest = max(largest, numel)
        ttype = getattr(t, "tensor_type", None)
        if shape is not None and ttype is not None:
            name = getattr(ttype, "name", str(ttype))
            if name not in ("F16", "F32", "BF16"):
                ggml[name] += numel
            dtypes[name.lower()] += numel
        else:
            dtypes[str(t.dtype).replace("torch.", "")] += numel
    size_fn = getattr(model, "model_size", None)
    if callable(size_fn) and not ggml:
        try:
            nbytes = int(size_fn()) or nbytes  # ModelPatcher's own count at the loaded dtype (includes buffers)
        except Exception:
            pass
    cast = getattr(base, "manual_cast_dtype", None)
    out.update({
        "params": params, "weights_bytes": nbytes, "largest_tensor_params": largest,
        "dtype": dtypes.most_common(1)[0][0] if dtypes else None,
        "gguf": bool(ggml), "gguf_type": ggml.most_common(1)[0][0] if ggml else None,
        "manual_cast_dtype": str(cast).replace("torch.", "") if cast is not None else None,
    })
    return out


# ----------------------------------------------------------------------------------------------
# VAE (added for nodes/vae_decode.py: VAE Decode / Encode (Auto Tiled))
@dataclass(frozen=True)
class VaeInfo:
    """What the VAE planner needs to know about a loaded comfy.sd.VAE."""

    family: str | None  # estimator family id ("vae-kl16", "vae-wan2.1", ...), None when not traced
    class_name: str  # module.Class of first_stage_model
    latent_channels: int
    latent_dim: int  # 2 images, 3 video (1 audio)
    spatial: int  # spacial_compression_decode()
    temporal: int | None  # temporal_compression_decode()
    dtype_bytes: int  # vae_dtype size
    device: str  # "cuda:0", "cpu"
    device_type: str
    weights_bytes: int


def vae_family_of(vae) -> str | None:
    """The estimator's family id for a comfy.sd.VAE, from what ComfyUI built (comfy/sd.py VAE
    branches): the first_stage_model class, latent channels and compression ratios."""
    fsm = getattr(vae, "first_stage_model", None)
    if fsm is None:
        return None
    cls = type(fsm)
    name = f"{cls.__module__}.{cls.__name__}"
    ch = int(getattr(vae, "latent_channels", 0))
    try:
        spatial = int(vae.spacial_compression_decode())
        temporal = vae.temporal_compression_decode()
    except Exception:
        return None
    dim = int(getattr(vae, "latent_dim", 2))
    if name == "comfy.ldm.wan.vae.WanVAE" and ch == 16 and spatial == 8:
        return "vae-wan2.1"
    if name == "comfy.ldm.wan.vae2_2.WanVAE" and ch == 48 and spatial == 16:
        return "vae-wan2.2"
    if name.endswith("lightricks.vae.causal_video_autoencoder.VideoVAE") and spatial == 32:
        return "vae-ltxv"
    if cls.__name__ in ("AutoencoderKL", "AutoencodingEngine"):
        dec = type(getattr(fsm, "decoder", None))
        plain_decoder = dec.__module__ == "comfy.ldm.modules.diffusionmodules.model" and dec.__name__ == "Decoder"
        if getattr(fsm, "bn", None) is not None:  # Flux.2's VAE: batch-norm latent, 2x2 patches
            return None
        if dim == 2 and spatial == 8 and plain_decoder and ch in (4, 16):
            return "vae-kl4" if ch == 4 else "vae-kl16"
        if dim == 3 and spatial == 8 and temporal == 4 and ch == 16 and plain_decoder:
            return "vae-hunyuan"
    return None


def vae_info(vae) -> VaeInfo:
    fsm = vae.first_stage_model
    cls = type(fsm)
    dtype = getattr(vae, "vae_dtype", None)
    try:
        dtype_bytes = int(dtype.itemsize)
    except Exception:
        dtype_bytes = int(_mm().dtype_size(dtype)) if dtype is not None else 4
    try:
        temporal = vae.temporal_compression_decode()
    except Exception:
        temporal = None
    dev = getattr(vae, "device", None)
    try:
        weights = int(vae.model_size())
    except Exception:
        weights = 0
    return VaeInfo(
        family=vae_family_of(vae), class_name=f"{cls.__module__}.{cls.__name__}",
        latent_channels=int(getattr(vae, "latent_channels", 0)), latent_dim=int(getattr(vae, "latent_dim", 2)),
        spatial=int(vae.spacial_compression_decode()), temporal=None if temporal is None else int(temporal),
        dtype_bytes=dtype_bytes, device=str(dev), device_type=getattr(dev, "type", str(dev)), weights_bytes=weights,
    )


def comfy_vae_estimate(vae, shape, op: str = "decode") -> int:
    """ComfyUI's own memory_used_decode / memory_used_encode for a tensor shape (its heuristic)."""
    fn = vae.memory_used_decode if op == "decode" else vae.memory_used_encode
    return int(fn(tuple(shape), vae.vae_dtype))


def available_bytes(device) -> int:
    """Free memory on `device` as ComfyUI counts it; system RAM available for the CPU."""
    dev_type = getattr(device, "type", str(device))
    if dev_type == "cpu":
        try:
            import psutil  # noqa: PLC0415

            return int(psutil.virtual_memory().available)
        except Exception:
            pass
    return int(_mm().get_free_memory(device))


def prepare_vae(vae, memory_required: int) -> int:
    """Load the VAE the way VAE.decode does, asking ComfyUI to unload other models until
    `memory_required` bytes are free besides it; returns the free bytes on the VAE's device after.
    (0.18+ with Dynamic VRAM: the patcher's get_free_memory also counts evictable weights.)"""
    mm = _mm()
    mm.load_models_gpu([vae.patcher], memory_required=int(memory_required),
                       force_full_load=bool(getattr(vae, "disable_offload", False)))
    dev = vae.device
    if getattr(dev, "type", str(dev)) == "cpu":
        return available_bytes(dev)
    patcher_free = getattr(vae.patcher, "get_free_memory", None)
    if callable(patcher_free):
        try:
            return int(patcher_free(dev))
        except Exception:
            pass
    return int(mm.get_free_memory(dev))


def comfy_version() -> str | None:
    try:
        import comfyui_version  # noqa: PLC0415

        return str(comfyui_version.__version__)
    except Exception:
        return None


def send_node_text(node_id, text: str) -> bool:
    """Show `text` on a node in the UI (PromptServer.send_progress_text, rendered by the frontend on
    any node). False when there is no server (tests, scripts) or no node id."""
    if node_id is None:
        return False
    try:
        from server import PromptServer  # noqa: PLC0415

        inst = getattr(PromptServer, "instance", None)
        send = getattr(inst, "send_progress_text", None)
        if send is None:
            return False
        send(text, str(node_id))
        return True
    except Exception:
        return False


def live_host():
    """The machine's RAM as ComfyUI sees it (psutil) and the launch flags that change host memory,
    as an estimator Host; a psutil that fails gives a Host that says the RAM is not known."""
    version = comfy_version() or ""
    rules, note = rules_for_version(version)
    args = comfy_args()
    flags = {} if args is None else {k: getattr(args, k, None) for k in ("cache_none", "cache_lru", "cache_ram",
                                                                           "high_ram", "disable_pinned_memory",
                                                                           "cache_classic")}
    lru = flags.get("cache_lru") or 0
    cache = ("none" if flags.get("cache_none") else "lru" if lru else "classic" if flags.get("cache_classic")
             else "ram" if flags.get("cache_ram") not in (None, False) and rules != "0.8" else "")
    notes = (note,) if note else ()
    common = dict(os=_os_name(), rules=rules, version=version, cache=cache,
                  pinned_memory=not flags.get("disable_pinned_memory"), high_ram=bool(flags.get("high_ram")))
    try:
        import psutil  # noqa: PLC0415

        vm = psutil.virtual_memory()
        total, available = int(vm.total), int(vm.available)
        swap = int(psutil.swap_memory().total)
        rss = int(psutil.Process().memory_info().rss)
        if total <= 0 or not 0 <= available <= total:
            raise ValueError(f"psutil reported total {total}, available {available}")
    except Exception as exc:  # noqa: BLE001
        return Host(source="assumed", notes=notes + (f"system RAM could not be read ({type(exc).__name__}: "
                                                     f"{str(exc)[:80]})",), **common)
    total, available, swap, limited = _container_ram(total, available, swap)
    if limited:
        notes = notes + (f"RAM limited by the container (cgroup) to {total / GiB:.2f} GiB of the host's "
                         f"{limited / GiB:.2f} GiB; swap not counted, as ComfyUI 0.35+ does",)
    return Host(ram_total_bytes=total, swap_total_bytes=swap, other_bytes=max(0, total - available - rss),
                source="live", notes=notes, container_limit=bool(limited), **common)


def _container_ram(total: int, available: int, swap: int) -> tuple[int, int, int, int]:
    """(total, available, swap, the host's total when a container limit applies else 0): a cgroup memory
    limit below the host's RAM is the RAM ComfyUI can use (host_memory.container_limit)."""
    try:
        lim = container_limit()
    except Exception:  # noqa: BLE001  (an odd /sys must not cost the estimate)
        lim = None
    if lim is None or lim[0] >= total:
        return total, available, swap, 0
    limit, used = lim
    free = limit - used if used is not None else min(available, limit)
    return limit, max(0, min(free, available)), 0, total


def _os_name() -> str:
    return "windows" if platform.system() == "Windows" else "linux"


def live_launch_flags() -> LaunchFlags:
    """This ComfyUI's launch flags, its OS and the host-memory rule set of its version, for the
    estimator's one launch-flags -> Device mapping (estimator/device.py device_for_launch)."""
    args = comfy_args()
    version = comfy_version()
    flags = LaunchFlags.from_args(args if args is not None else object(), os=_os_name(),
                                  rules=rules_for_version(version)[0])
    fast = live_fast_disk()
    return replace(flags, release=version if version and version[0].isdigit() else "",
                   disk="nvme" if fast else flags.disk)


def live_fast_disk(folder: str = "diffusion_models") -> bool | None:
    """ComfyUI's own fast-disk answer for the disk of a model folder (comfy/storage.py fast_storage, 0.37+: NVMe at
    PCIe Gen3 x4 or better, every disk under the path); None where this ComfyUI has no such rule or it cannot
    tell. Never raises: a disk question never costs an estimate."""
    try:
        import comfy.storage as storage  # noqa: PLC0415  (0.37+)
        import folder_paths  # noqa: PLC0415
    except ImportError:
        return None
    ask = getattr(storage, "fast_storage", None)
    if not callable(ask):
        return None
    try:
        paths = [p for p in folder_paths.get_folder_paths(folder) if os.path.isdir(p)][:1]
        return ask(paths[0]) if paths else None
    except Exception:  # noqa: BLE001
        return None


def live_memory_mode() -> str:
    """"dynamic" when this ComfyUI streams weights with comfy-aimdo, else "classic" (also on the CPU)."""
    return "dynamic" if (memory_mode() == "dynamic" or dynamic_vram_status().enabled) else "classic"


def _live_card(name: str, total_bytes: int | None = None) -> Card:
    """The catalogue card of the live GPU's name (its speed, host link, bf16, vendor; the measured size
    tells apart the cards a driver name shares, "RTX 4060 Ti" 8 / 16 GB), else a card that carries only
    the name (the measurements give its size and fp8)."""
    try:
        return find_card(name, nominal_gb=None if not total_bytes else total_bytes / GiB)
    except VramBudgetError:
        return Card(name, 0, True)


def live_versions() -> tuple[tuple[str, str], ...]:
    """(component, version) of what this ComfyUI runs under, for the known regressions (evidence.py): ComfyUI,
    comfy-aimdo, PyTorch and every custom node pack with a version (run_log reads them once per process)."""
    from . import run_log  # noqa: PLC0415  (run_log imports this module)

    try:
        v = run_log.installed_versions() or {}
    except Exception:  # noqa: BLE001  (a version read never costs an estimate)
        return ()
    out = [(name, str(v[key])) for key, name in (("comfyui", "ComfyUI"), ("comfy_aimdo", "comfy-aimdo"),
                                                 ("torch", "PyTorch")) if v.get(key)]
    out += [(str(pack)[:80], str(ver)[:40]) for pack, ver in sorted((v.get("custom_nodes") or {}).items()) if ver]
    return tuple(out)


def _has_core_device_nodes() -> bool | None:
    """Whether this ComfyUI registers its own placement nodes (SelectModelDevice and friends); None when its
    registry cannot be read (the version's rules decide then)."""
    try:
        import nodes as comfy_nodes  # ComfyUI's nodes.py: NODE_CLASS_MAPPINGS holds core and extra nodes
        mapping = comfy_nodes.NODE_CLASS_MAPPINGS
    except Exception:  # noqa: BLE001 - not inside ComfyUI, or its registry not readable
        return None
    if not isinstance(mapping, dict) or not mapping:
        return None
    return all(t in mapping for t in CORE_SELECT_NODES_ALL)



def estimator_device(card: str | None = None, memory_mode: str = "auto", budget_gb: float = 0.0):
    """(estimator Device, note) for the VRAM Budget node and the panel, with this machine's RAM
    (live_host): a catalogue card when one is named, a typed budget (GiB), else the GPU ComfyUI
    computes on, measured; on a ComfyUI without a CUDA device (--cpu, MPS, ...) its system memory,
    where the models live then, with a note saying so. Every one goes through device_for_launch
    with this ComfyUI's launch flags, as the command line does with its own.

    Other processes = total − driver-free − PyTorch-reserved − our own CUDA context (the budget
    adds the context itself, as overhead of every stage)."""
    flags = live_launch_flags()
    mode = memory_mode if memory_mode in ("classic", "dynamic") else live_memory_mode()
    common = dict(memory_mode=mode, host=live_host(), versions=live_versions() or None,
                  core_device_nodes=_has_core_device_nodes())
    if card:
        # a previewed card is that card under the memory mode this ComfyUI would use THERE (Dynamic VRAM on an
        # NVIDIA card from 0.16, issue 31), not the mode of the machine it runs on now (classic on a CPU ComfyUI)
        chosen = memory_mode if memory_mode in ("classic", "dynamic") else None
        return device_for_launch(find_card(card), replace(flags, cpu=False),
                                 **{**common, "memory_mode": chosen}), None
    if budget_gb and budget_gb > 0:
        return device_for_launch(card_for_vram(budget_gb), flags, name=f"{budget_gb:g} GiB budget",
                                 total_bytes=int(budget_gb * GiB), source="budget input", **common), None
    state = device_state()
    if state.type != "cuda":
        return (device_for_launch(None, flags, name=state.name, total_bytes=state.total, **common),
                f"No CUDA device: ComfyUI runs on the {state.type}, so this is for its {fmt_gib(state.total)} of "
                "system memory, where the models live; pick a card to estimate for one.")
    live = next((d for d in cuda_devices() if d.is_compute_device), None)
    total = live.total if live else state.total
    driver_free = live.driver_free if live and live.driver_free is not None else state.driver_free
    reserved = live.torch_reserved if live else state.torch_reserved
    allocated = live.torch_allocated if live else state.torch_allocated
    name = live.name if live else state.name.split(" : ")[0]
    return device_for_launch(
        _live_card(name, total), flags, name=name, total_bytes=total,
        other_processes_bytes=max(0, total - driver_free - reserved - CUDA_CONTEXT_BYTES),
        reserved_unallocated_bytes=max(0, reserved - allocated),
        held_by_models_bytes=sum(m.loaded for m in loaded_models() if m.device_type == "cuda"),
        fp8_compute=supports_fp8_compute(), reserve_bytes=state.reserve or None,
        te_cpu_reason=_te_cpu_reason(), compute_fp32_reason=_compute_fp32_reason(), source="live", **common), None


def estimator_devices(card: str | None = None, gpus=(), memory_mode: str = "auto"):
    """([main device, other cards...], note) for an estimate over several cards (issue 24): the main one as
    estimator_device gives it; then the catalogue cards named in `gpus` (the panel's "+ card", cuda:1 on);
    with none named and no card chosen, this machine's other CUDA devices, each measured as the main one
    is (NVIDIA's free memory or the total: no CUDA context is made on them), when ComfyUI computes on
    cuda:0 (the estimator names devices by torch index)."""
    main, note = estimator_device(card, memory_mode)
    flags = live_launch_flags()
    mode = memory_mode if memory_mode in ("classic", "dynamic") else live_memory_mode()
    common = dict(memory_mode=mode, host=main.host)
    if gpus:  # named cards: each under the memory mode this ComfyUI would use there (as a previewed card)
        named = dict(common, memory_mode=memory_mode if memory_mode in ("classic", "dynamic") else None)
        return [main, *(device_for_launch(find_card(g), replace(flags, cpu=False), **named) for g in gpus)], note
    if card or main.source != "live":
        return [main], note
    return [main, *other_cuda_devices(cuda_devices(), flags, **common)], note


def other_cuda_devices(devices, flags: LaunchFlags, **common) -> list:
    """The estimator Devices of the CUDA devices beside the one ComfyUI computes on, in torch order (cuda:1 ...),
    each measured as the main one is: its total, and what other processes hold where the driver's free memory is
    known (NVML or an existing context); [] unless ComfyUI computes on cuda:0 (the estimator names devices by
    torch index)."""
    compute = next((d for d in devices if d.is_compute_device), None)
    if compute is None or compute.index != 0 or len(devices) < 2:
        return []
    others = []
    for d in sorted(devices, key=lambda d: d.index)[1:]:
        used = (d.total - d.driver_free - d.torch_reserved) if d.driver_free is not None else 0
        others.append(device_for_launch(_live_card(d.name), flags, name=d.name, total_bytes=d.total,
                                        other_processes_bytes=max(0, used), source="live", **common))
    return others


def _compute_fp32_reason() -> str:
    """ComfyUI's own unet_manual_cast for a 16-bit model on this GPU: float32 means the diffusion model
    computes in fp32 here (Pascal under Linux, GTX 16xx), so its activations take 4 bytes."""
    try:
        import torch  # noqa: PLC0415

        mm = _mm()
        dev = mm.get_torch_device()
        if getattr(dev, "type", "") != "cuda":
            return ""
        if all(mm.unet_manual_cast(dt, dev) == torch.float32 for dt in (torch.float16, torch.bfloat16)):
            return "this ComfyUI computes diffusion models in fp32 on this GPU (model_management.unet_manual_cast)"
    except Exception:  # noqa: BLE001
        return ""
    return ""


def _te_cpu_reason() -> str:
    """ComfyUI's own text_encoder_device(): where this ComfyUI will run text encoders."""
    try:
        dev = _mm().text_encoder_device()
    except Exception:  # noqa: BLE001
        return ""
    if getattr(dev, "type", "") == "cpu":
        return "this ComfyUI runs text encoders on the CPU (model_management.text_encoder_device)"
    return ""


# ----------------------------------------------------------------------------------------------
# Baselines after each prompt (leaks.py)
def prompt_packs(prompt: dict | None, limit: int = 500) -> tuple:
    """The custom node packs a prompt's nodes come from (nodes.py sets RELATIVE_PYTHON_MODULE
    "custom_nodes.<pack>" on each node class it loads), this pack left out."""
    if not isinstance(prompt, dict):
        return ()
    try:
        import nodes  # noqa: PLC0415

        mappings = nodes.NODE_CLASS_MAPPINGS
    except Exception:  # noqa: BLE001
        return ()
    own = __name__.split(".")[0]
    packs = set()
    for node in list(prompt.values())[:limit]:
        cls = mappings.get(node.get("class_type")) if isinstance(node, dict) else None
        module = getattr(cls, "RELATIVE_PYTHON_MODULE", "") or ""
        if module.startswith("custom_nodes."):
            pack = module.split(".", 2)[1]
            if pack != own and pack.replace("-", "_") != own.replace("-", "_"):
                packs.add(pack)
    return tuple(sorted(packs))


def baseline(prompt_id: str, prompt: dict | None):
    """leaks.Baseline now: this process's RSS and PyTorch's allocated VRAM, each less the weights of the models
    ComfyUI keeps loaded (on the GPU: what is loaded there; in RAM: the rest)."""
    import psutil  # noqa: PLC0415

    from .leaks import Baseline  # noqa: PLC0415

    models = loaded_models()
    rss = int(psutil.Process().memory_info().rss)
    ram_models = sum((m.size - m.loaded) if m.device_type == "cuda" else m.size for m in models)
    vram = None
    try:
        import torch  # noqa: PLC0415

        dev = _mm().get_torch_device()
        if getattr(dev, "type", "") == "cuda":
            vram = int(torch.cuda.memory_allocated(dev)) - sum(m.loaded for m in models if m.device_type == "cuda")
    except Exception:  # noqa: BLE001
        vram = None
    return Baseline(prompt_id, rss - ram_models, vram, len(models), prompt_packs(prompt))


# ----------------------------------------------------------------------------------------------
# This ComfyUI's own node definitions (what /object_info answers), for node types the shipped table lacks
MAX_LIVE_SPECS = 500


def node_info(cls) -> dict:
    """A node class's /object_info entry as ComfyUI's server builds it (server.py node_info): V3 nodes give it
    themselves (GET_NODE_INFO_V1); V1 nodes from INPUT_TYPES / RETURN_TYPES / OUTPUT_NODE."""
    if hasattr(cls, "GET_NODE_INFO_V1"):
        return cls.GET_NODE_INFO_V1()
    inputs = cls.INPUT_TYPES()
    return {"input": inputs, "input_order": {k: list(v.keys()) for k, v in inputs.items() if isinstance(v, dict)},
            "output": list(getattr(cls, "RETURN_TYPES", ()) or ()), "output_node": bool(getattr(cls, "OUTPUT_NODE", False))}


def live_node_specs(types) -> dict:
    """{node type: spec} (node_specs.spec_from_node_info, plus "pack": the custom node folder it comes from) for the
    given types that this ComfyUI has; a node whose definition fails is left out (the table then says unknown)."""
    from .estimator.node_specs import spec_from_node_info  # noqa: PLC0415

    try:
        import nodes  # noqa: PLC0415

        mappings = nodes.NODE_CLASS_MAPPINGS
    except Exception:  # noqa: BLE001
        return {}
    out = {}
    for t in list(types)[:MAX_LIVE_SPECS]:
        cls = mappings.get(t)
        if cls is None:
            continue
        try:
            spec = spec_from_node_info(node_info(cls))
        except Exception:  # noqa: BLE001  (a node pack's INPUT_TYPES may fail; its node stays unknown)
            continue
        module = getattr(cls, "RELATIVE_PYTHON_MODULE", "") or ""
        if module.startswith("custom_nodes."):
            spec["pack"] = module.split(".", 2)[1]
        out[t] = spec
    return out
