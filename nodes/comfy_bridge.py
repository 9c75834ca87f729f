"""The one place that reads ComfyUI state: devices and memory, loaded models, model paths, unloading.

Everything else in the pack asks this module. It imports ComfyUI lazily, inside functions, so
importing it never fails; the functions themselves are only called inside a running ComfyUI.
Where ComfyUI versions differ (classic memory management in 0.8 vs "Dynamic VRAM" /
comfy-aimdo in 0.13+), it feature-detects with ``hasattr`` instead of assuming either.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


def _mm():
    import comfy.model_management as mm  # noqa: PLC0415

    return mm


def _folder_paths():
    import folder_paths  # noqa: PLC0415

    return folder_paths


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
    try:
        from comfy.cli_args import args  # noqa: PLC0415

        if getattr(args, "enable_dynamic_vram", False) or getattr(args, "dynamic_vram", False):
            return "dynamic"
    except Exception:
        pass
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


def free_memory_for(bytes_needed: int, device=None) -> int:
    """Ask ComfyUI to unload what it can so `bytes_needed` fit; returns free bytes afterwards."""
    mm = _mm()
    dev = device if device is not None else mm.get_torch_device()
    mm.free_memory(bytes_needed, dev)
    return int(mm.get_free_memory(dev))


def soft_empty_cache() -> None:
    _mm().soft_empty_cache()


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
