"""The machine as the estimator sees it inside ComfyUI: launch flags, host RAM, versions, the Device to estimate for."""
from __future__ import annotations

import os
import platform
from dataclasses import replace

from ..estimator.machine.device import CUDA_CONTEXT_BYTES, LaunchFlags, device_for_launch, rules_for_version
from ..estimator.errors import VramBudgetError
from ..estimator.machine.gpus import Card, card_for_vram, find_card
from ..estimator.machine.host_memory import Host
from ..estimator.units import GiB, fmt_gib
from ..estimator.plan.placement_plan import CORE_SELECT_NODES_ALL
from .base import comfy_args, _mm
from .memory import cuda_devices, device_state, dynamic_vram_status, memory_mode, supports_fp8_compute, _container_ram
from .models import loaded_models


def comfy_version() -> str | None:
    try:
        import comfyui_version  # noqa: PLC0415

        return str(comfyui_version.__version__)
    except Exception:
        return None


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
    from .. import run_log  # noqa: PLC0415  (run_log imports the bridge)

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
