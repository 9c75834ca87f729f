"""The card and its memory as ComfyUI and the driver see them: device state, Dynamic VRAM, CUDA devices,
processes, RAM."""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from ..estimator.machine.host_memory import container_limit
from .base import comfy_args, _mm


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
