"""`vram-budget estimate WORKFLOW.json`: the budget report without ComfyUI (size a card before renting it)."""
from __future__ import annotations

import argparse
import json
import math
import re
import os
import sys
from dataclasses import replace

from ..machine import host_memory
from ..machine.device import Device, LaunchFlags, device_for_launch, rules_for_version
from ..plan.planning import estimate, with_capacity
from ..machine.resolve import folder_resolver
from ..errors import VramBudgetError
from ..machine.gpus import ARCHS, CARDS, card_for_vram, find_card
from ..graph import read_workflow
from ..graph.base import INPUT_MEDIA
from ..models.media import input_reader
from ..plan.report import format_report
from ..units import GiB
from .workers import format_workers, plan_workers


def add_estimate_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate",
        help="predict the peak VRAM of a ComfyUI workflow (UI or API JSON) on a GPU",
        description="Predict the peak VRAM of every stage of a ComfyUI workflow, whether it fits a GPU, and the "
        "cheapest fixes. Model sizes come from the files' headers (--models-dir) or from a catalogue of "
        "well-known public files.",
    )
    p.add_argument("workflow", nargs="+", help="workflow .json file(s): saved UI workflow or API prompt")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--gpu", help="card name, e.g. 'RTX 4090' (`vram-budget cards` lists them); with --vram, that card "
                   "with that much memory (an APU's share, a modded card)")
    p.add_argument("--vram", type=_vram_value, help="card size in GB, e.g. 24; several cards: 24,24 (cuda:0, cuda:1)")
    p.add_argument("--arch", choices=sorted(ARCHS), default=None,
                   help="what a card given only as --vram GB is: its maker and generation (e.g. ada, ampere, pascal, "
                   "rdna3, rdna3.5-apu): fp8 / bf16 compute and ComfyUI's attention on it (default: a current NVIDIA "
                   "card)")
    g.add_argument("--gpus", help="the machine's cards in CUDA order, e.g. 'RTX 4090,RTX 3090' (cuda:0 first): "
                   "each device's peak and outcome for the models its loaders place there (ComfyUI-MultiGPU)")
    p.add_argument("--models-dir", help="a ComfyUI models/ folder to read the real files' headers from")
    p.add_argument("--input-dir", help="a ComfyUI input/ folder: the loaded images' and videos' real sizes and "
                                       "frame counts from their headers (else an image is assumed 1 megapixel, "
                                       "and said; a video's frames stay unknown)")
    p.add_argument("--memory-mode", choices=["classic", "dynamic"], default=None,
                   help="ComfyUI's memory management: classic (<=0.15, --disable-dynamic-vram, AMD / Intel cards) or "
                   "dynamic (Dynamic VRAM: weights stream on demand); default: what --comfyui-version does on this "
                   "card (dynamic from 0.16 on NVIDIA)")
    vram = p.add_mutually_exclusive_group()
    vram.add_argument("--lowvram", action="store_true", help="as ComfyUI's --lowvram (text encoders on the CPU)")
    vram.add_argument("--novram", action="store_true", help="as ComfyUI's --novram (every model streamed)")
    vram.add_argument("--highvram", action="store_true", help="as ComfyUI's --highvram (models always loaded fully)")
    vram.add_argument("--gpu-only", action="store_true", help="as ComfyUI's --gpu-only (everything on the GPU)")
    p.add_argument("--directml", nargs="?", type=int, const=-1, default=None, metavar="N",
                   help="as ComfyUI's --directml (torch-directml on Windows: no Dynamic VRAM, no partial load "
                        "unless --lowvram)")
    p.add_argument("--reserve-vram", type=float, metavar="GB", help="as ComfyUI's --reserve-vram (in 0.33 also Dynamic "
                   "VRAM's headroom)")
    p.add_argument("--vram-headroom", type=float, metavar="GB", default=0.0,
                   help="as ComfyUI 0.33's --vram-headroom: VRAM Dynamic VRAM keeps free on top of its headroom")
    p.add_argument("--cpu-vae", action="store_true", help="as ComfyUI's --cpu-vae (VAE runs on the CPU)")
    p.add_argument("--disk", type=_disk, default=None, metavar="nvme|sata|hdd|GB/s",
                   help="the disk that holds the models: nvme, sata, hdd or a read speed in GB/s. It sets how fast "
                   "weights that do not stay in RAM are read again, and (ComfyUI 0.37+) whether fast-disk loading "
                   "is on: an NVMe disk is taken as fast (PCIe Gen3 x4 or better, ComfyUI's own rule); default: "
                   "an NVMe disk for the read speed, fast disk off (ComfyUI takes a disk it cannot identify as slow)")
    fd = p.add_mutually_exclusive_group()
    fd.add_argument("--fast-disk", action="store_true", help="as ComfyUI 0.37+'s --fast-disk (disk-backed loading)")
    fd.add_argument("--disable-fast-disk", action="store_true", help="as ComfyUI 0.38's --disable-fast-disk")
    p.add_argument("--disable-comfy-compiler", action="store_true",
                   help="as ComfyUI 0.35+'s flag (the Comfy Compiler and its CUDA graphs off: the PyTorch allocator "
                   "caches freed blocks again)")
    p.add_argument("--disable-cuda-graphs", action="store_true", help="as ComfyUI's --disable-cuda-graphs")
    att = p.add_mutually_exclusive_group()
    att.add_argument("--use-pytorch-cross-attention", action="store_true",
                     help="as ComfyUI's flag: PyTorch SDPA everywhere (its math path, the whole score tensor, on a "
                     "card without fused kernels)")
    att.add_argument("--use-split-cross-attention", action="store_true", help="as ComfyUI's flag")
    att.add_argument("--use-quad-cross-attention", action="store_true", help="as ComfyUI's flag")
    p.add_argument("--disable-smart-memory", action="store_true",
                   help="as ComfyUI's --disable-smart-memory (models unloaded as soon as possible)")
    p.add_argument("--os", choices=["linux", "windows"], default="windows" if sys.platform == "win32" else "linux",
                   help="the OS ComfyUI runs on (default: this machine's): ComfyUI's reserve is 400 MiB on Linux, "
                   "600 MiB (+100 on cards over 15 GiB) on Windows, which also has a page file and a desktop on the card")
    p.add_argument("--max", choices=["batch", "resolution", "frames"], action="append", metavar="WHAT",
                   help="also find the largest batch / resolution / frames that stays resident and that runs at all "
                   "(repeatable)")
    p.add_argument("--other-processes", type=float, default=None, metavar="GiB",
                   help="memory other processes hold on the card (default 0; with --os windows, 1 GiB on a "
                   "consumer card for the desktop and the browser)")
    p.add_argument("--no-fp8-compute", action="store_true",
                   help="the GPU has no fp8 compute (pre-Ada): ComfyUI upcasts fp8 files that fit at 16 bit")
    ram = p.add_argument_group("system memory (RAM)")
    ram.add_argument("--ram", type=float, metavar="GiB",
                     help="installed system RAM, or on a rented GPU the container's memory limit (what the kernel "
                          "ends a process at; inside ComfyUI it is read from the cgroup); without it the answer says "
                          "how much RAM it assumes")
    ram.add_argument("--swap", type=float, metavar="GiB",
                     help=f"swap (Linux) or page file (Windows); default: {host_memory.LINUX_SWAP_ASSUMED_BYTES / GiB:g} "
                          f"GiB on Linux, a system-managed page file of {host_memory.WINDOWS_PAGEFILE_ASSUMED_FACTOR:g} x "
                          "the RAM on Windows; give 0 for a container")
    ram.add_argument("--comfyui-version", type=_comfyui_version, default=None, metavar="X.Y[.Z]",
                     help="the ComfyUI you run (e.g. 0.30.1, 0.8): picks whose memory rules apply (0.8 up to 0.15, "
                     "0.18 for 0.16-0.29, 0.33 for 0.30-0.33, 0.38 from 0.34: the Comfy Compiler from 0.35, fast disk and text "
                     "encoders on the GPU from 0.37) and the known regressions of that release; default 0.38")
    p.add_argument("--node-pack", action="append", metavar="NAME==VER", default=None,
                   help="a node pack (or comfy-aimdo / PyTorch) and its version, for the known regressions of that "
                   "release, e.g. ComfyUI-WanVideoWrapper==1.3.9 (repeatable)")
    cache = ram.add_mutually_exclusive_group()
    cache.add_argument("--cache-none", action="store_true",
                       help="as ComfyUI's --cache-none (a model is freed once no later node needs it)")
    cache.add_argument("--cache-lru", type=int, metavar="N", help="as ComfyUI's --cache-lru N")
    cache.add_argument("--cache-ram", type=float, nargs="*", metavar="GB",
                       help="as ComfyUI's --cache-ram (RAM-pressure cache; 0.33's default)")
    cache.add_argument("--high-ram", action="store_true",
                       help="as ComfyUI 0.33's --high-ram (classic caching, no pin budget)")
    ram.add_argument("--disable-pinned-memory", action="store_true", help="as ComfyUI's --disable-pinned-memory")
    p.add_argument("--workers", metavar="CARD[:RAM],...",
                   help="several machines that each run the whole workflow (ComfyUI-Distributed, SwarmUI), e.g. "
                   "'RTX 4090:64,RTX 3060:32,L4' (a card name or GB, then the worker's RAM in GiB): a verdict per "
                   "worker, fastest first, the ones that would run out of memory left out with their fix")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("-v", "--verbose", action="store_true", help="show every item and assumption")
    p.set_defaults(func=run_estimate)


MAX_DISK_GBPS = 100.0


def _disk(text: str) -> str:
    """--disk: a host_memory.DISKS kind, or a read speed in GB/s ('2.5', '2.5GB/s')."""
    t = str(text).strip().lower()
    if t in host_memory.DISKS:
        return t
    m = re.fullmatch(r"(\d{1,3}(?:\.\d{1,3})?)\s*(?:gb/s)?", t)
    if not m or not 0.01 <= float(m.group(1)) <= MAX_DISK_GBPS:
        raise argparse.ArgumentTypeError(f"{t[:40]!r}: give nvme, sata, hdd or a read speed in GB/s "
                                         f"(0.01 to {MAX_DISK_GBPS:g})")
    return f"{float(m.group(1)):g} GB/s"


def disk_speed(disk: str) -> float:
    """Bytes per second of a --disk value (a kind or 'N GB/s'); not given: an NVMe disk."""
    if disk in host_memory.DISKS:
        return host_memory.DISKS[disk]
    if disk.endswith(" GB/s"):
        return float(disk[:-5]) * 1e9
    return host_memory.DISK_BYTES_PER_S


class ComfyVersion(str):
    """A --comfyui-version value: the rule set it maps to (str value, one of host_memory.RULE_SETS) and the release
    as given (`release`, e.g. "0.30.1"), for the known regressions."""

    release: str = ""


def _comfyui_version(text: str) -> ComfyVersion:
    text = str(text).strip()
    if not re.fullmatch(r"v?\d{1,3}(\.\d{1,4}){0,3}", text):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give ComfyUI's version, e.g. 0.30.1 or 0.8")
    rules, _ = rules_for_version(text.lstrip("v") if "." in text else text.lstrip("v") + ".0")
    out = ComfyVersion(rules)
    out.release = text.lstrip("v")
    return out


MAX_NODE_PACKS = 16


def node_packs_from_args(args) -> dict[str, str]:
    """{component: version} from --comfyui-version (its release) and --node-pack NAME==VER ..."""
    out: dict[str, str] = {}
    release = getattr(getattr(args, "comfyui_version", None), "release", "")
    if release:
        out["ComfyUI"] = release
    items = getattr(args, "node_pack", None) or []
    if len(items) > MAX_NODE_PACKS:
        raise VramBudgetError(f"--node-pack: {len(items)} given; at most {MAX_NODE_PACKS}")
    for item in items:
        name, sep, version = str(item).partition("==")
        if not sep or not name.strip() or not re.fullmatch(r"v?\d{1,4}(\.\d{1,5}){0,3}\S{0,40}", version.strip()):
            raise VramBudgetError(f"--node-pack {str(item)[:80]!r}: give NAME==VERSION, e.g. ComfyUI-GGUF==1.2.0")
        out[name.strip()[:80]] = version.strip()
    return out


def _finite(name: str, value, lo: float, hi: float):
    """A flag's number, or VramBudgetError naming the flag: nan, inf and out-of-range values are refused."""
    if value is None:
        return None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise VramBudgetError(f"{name} {value}: give a number from {lo:g} to {hi:g}")
    return value


def _vram_value(text: str):
    """--vram 24 -> 24.0; --vram 24,24 -> (24.0, 24.0): one size per card, cuda:0 first."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give the card size in GB (24), or one per card (24,24)") from None
    return values[0] if len(values) == 1 else values


MAX_GPUS = 8  # cards of one machine (--gpus / --vram a,b): the route takes the main card + 7 more


def _cards_from_args(args) -> list:
    """The cards named by --gpus / --vram a,b (cuda:0 first), or [] for a single card."""
    gpus = getattr(args, "gpus", None)
    if gpus is not None:
        names = [n.strip() for n in gpus.split(",")]
        if not any(names) or not all(names):
            raise VramBudgetError(f"--gpus {gpus!r}: name each card, comma-separated, e.g. 'RTX 4090,RTX 3090'")
        if len(names) > MAX_GPUS:
            raise VramBudgetError(f"--gpus: {len(names)} cards; at most {MAX_GPUS} (one machine's cards, cuda:0 first)")
        out = []
        for n in names:
            try:
                out.append(find_card(n))
            except VramBudgetError as exc:
                raise VramBudgetError(f"--gpus: {exc}") from None
        return out
    if isinstance(args.vram, tuple):
        if len(args.vram) > MAX_GPUS:
            raise VramBudgetError(f"--vram: {len(args.vram)} sizes; at most {MAX_GPUS} (one per card, cuda:0 first)")
        return [card_for_vram(v) for v in args.vram]
    return []


def devices_from_args(args) -> list[Device]:
    """Every card of the machine (cuda:0 first): [device_from_args(args)] for one card; with --gpus /
    --vram a,b one Device per card, the same launch flags, cuda:i the i-th (issue 24)."""
    main = device_from_args(args)
    cards = _cards_from_args(args)
    out = [main]
    for i, card in enumerate(cards[1:], start=1):
        out.append(replace(device_for_launch(
            card, LaunchFlags.from_args(args), memory_mode=getattr(args, "memory_mode", None),
            fp8_compute=False if args.no_fp8_compute else None,
            source="--vram" if isinstance(args.vram, tuple) else None, host=main.host), ordinal=f"cuda:{i}"))
    return out


def device_from_args(args) -> Device:
    """The command line's flags -> Device, through the mapping the node and the panel use
    (device.device_for_launch); what the machine would measure is given by flags here."""
    _finite("--reserve-vram", args.reserve_vram, 0, 1024)
    _finite("--vram-headroom", getattr(args, "vram_headroom", 0.0), 0, 1024)
    _finite("--other-processes", args.other_processes, 0, 10_000)
    cards = _cards_from_args(args)
    if getattr(args, "gpus", None) is not None and args.vram is not None:
        raise VramBudgetError("--gpus and --vram: name the cards (--gpus) or give their sizes (--vram 24,24), not both")
    if cards:
        card = cards[0]
    elif args.vram is not None and args.gpu is not None:
        try:
            named = find_card(args.gpu)
        except VramBudgetError as exc:
            raise VramBudgetError(f"--gpu: {exc}") from None
        card = replace(card_for_vram(args.vram, arch=named.arch), name=named.name, tflops=named.tflops,
                       pcie=named.pcie, bandwidth_gb_s=named.bandwidth_gb_s, source=named.source)
    elif args.vram is not None:
        card = card_for_vram(args.vram, arch=getattr(args, "arch", None))  # refuses 0, negatives, nan and inf
    elif args.gpu is not None:
        if not args.gpu.strip():
            raise VramBudgetError("--gpu '': name a card, e.g. 'RTX 4090' (or give --vram GB)")
        try:
            card = find_card(args.gpu)
        except VramBudgetError as exc:
            raise VramBudgetError(f"--gpu: {exc}") from None
    else:
        card = find_card("RTX 4090")
    return device_for_launch(
        card, LaunchFlags.from_args(args), memory_mode=getattr(args, "memory_mode", None),
        other_processes_bytes=None if args.other_processes is None else int(args.other_processes * GiB),
        fp8_compute=False if args.no_fp8_compute else None,
        source="--vram" if args.vram is not None and args.gpu is None else None,
        host=host_from_args(args), versions=tuple(node_packs_from_args(args).items()) or None)


# Largest RAM / swap a flag accepts: 64 TiB (a big server has 12 TB; beyond that it is a typo)
MAX_RAM_GIB = 65536


def host_from_args(args) -> host_memory.Host:
    """--ram / --swap / the cache and pinning flags -> Host; bad numbers are refused, naming the flag."""
    ram = getattr(args, "ram", None)
    swap = getattr(args, "swap", None)
    if ram is not None and (not math.isfinite(ram) or not 0.5 <= ram <= MAX_RAM_GIB):
        raise VramBudgetError(f"--ram {ram:g}: give the installed system RAM in GiB, from 0.5 to {MAX_RAM_GIB}")
    if swap is not None and (not math.isfinite(swap) or not 0 <= swap <= MAX_RAM_GIB):
        raise VramBudgetError(f"--swap {swap:g}: give the swap / page file size in GiB, from 0 to {MAX_RAM_GIB}")
    lru = getattr(args, "cache_lru", None)
    if lru is not None and lru < 0:
        raise VramBudgetError(f"--cache-lru {lru}: give a number of cached node outputs, 0 or more")
    cache_ram = getattr(args, "cache_ram", None)
    if cache_ram:
        for v in cache_ram:
            if not math.isfinite(v) or not 0 <= v <= MAX_RAM_GIB:
                raise VramBudgetError(f"--cache-ram {v:g}: give GB from 0 to {MAX_RAM_GIB}")
    rules = getattr(args, "comfyui_version", None) or host_memory.RULE_SETS[-1]
    cache = ("none" if getattr(args, "cache_none", False) else "lru" if lru is not None
             else "ram" if cache_ram is not None else "classic" if getattr(args, "high_ram", False) else "")
    return host_memory.Host(
        ram_total_bytes=None if ram is None else int(ram * GiB),
        swap_total_bytes=None if swap is None else int(swap * GiB),
        os=getattr(args, "os", "linux") or "linux", source="--ram" if ram is not None else "assumed",
        rules=rules, cache=cache, pinned_memory=not getattr(args, "disable_pinned_memory", False),
        high_ram=getattr(args, "high_ram", False), disk=getattr(args, "disk", "") or "",
        disk_bytes_per_s=disk_speed(getattr(args, "disk", "") or ""))


MAX_WORKERS = 32
MAX_CARD_GB = 512  # a size above this is not a card's memory (the largest in the catalogue has 288 GB)


def worker_card(text: str, entry: str):
    """One --workers entry's card: a catalogue name first ('4090' is the RTX 4090, not 4090 GB), else a size in
    GB (a GPU of that size); errors name --workers and the entry."""
    try:
        return find_card(text)
    except VramBudgetError as exc:
        name_error = exc
    try:
        gb = float(text)
    except ValueError:
        raise VramBudgetError(f"--workers {entry!r}: {name_error}") from None
    if not math.isfinite(gb) or not 0 < gb <= MAX_CARD_GB:
        raise VramBudgetError(f"--workers {entry!r}: {text} is neither a known card nor a card size in GB "
                              f"(0 to {MAX_CARD_GB})")
    return card_for_vram(gb)


def workers_from_args(args) -> list[tuple[str, Device]]:
    """--workers 'RTX 4090:64,RTX 3060:32,L4' -> [(name, Device)]: each worker's card (a catalogue name or GB)
    and RAM (GiB; else --ram, else not known), with this command line's launch flags."""
    text = getattr(args, "workers", None)
    if text is None:
        return []
    entries = [e.strip() for e in text.split(",")]
    if not any(entries) or not all(entries):
        raise VramBudgetError(f"--workers {text!r}: name each worker's card, comma-separated, e.g. 'RTX 4090:64,L4'")
    if len(entries) > MAX_WORKERS:
        raise VramBudgetError(f"--workers: {len(entries)} workers; at most {MAX_WORKERS}")
    base = host_from_args(args)
    out = []
    for entry in entries:
        card_text, _, ram_text = entry.partition(":")
        card = worker_card(card_text.strip(), entry)
        host = base
        if ram_text.strip():
            try:
                ram = float(ram_text)
            except ValueError:
                raise VramBudgetError(f"--workers {entry!r}: the RAM after ':' must be GiB, e.g. 'RTX 3060:32'") from None
            if not math.isfinite(ram) or not 0.5 <= ram <= MAX_RAM_GIB:
                raise VramBudgetError(f"--workers {entry!r}: RAM {ram:g} GiB: give 0.5 to {MAX_RAM_GIB}")
            host = replace(base, ram_total_bytes=int(ram * GiB), source="--workers")
        device = device_for_launch(card, LaunchFlags.from_args(args), memory_mode=getattr(args, "memory_mode", None),
                                   fp8_compute=False if args.no_fp8_compute else None, host=host)
        out.append((entry, device))
    return out


def run_estimate(args) -> int:
    try:
        devices = devices_from_args(args)
        device = devices[0]
        args.worker_devices = workers_from_args(args)
    except VramBudgetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    resolver = folder_resolver(args.models_dir) if args.models_dir else None
    if args.models_dir and not os.path.isdir(args.models_dir):
        print(f"error: --models-dir {args.models_dir}: no such folder", file=sys.stderr)
        return 2
    if args.input_dir and not os.path.isdir(args.input_dir):
        print(f"error: --input-dir {args.input_dir}: no such folder", file=sys.stderr)
        return 2
    token = INPUT_MEDIA.set(input_reader(args.input_dir)) if args.input_dir else None
    try:
        return _estimate_files(args, devices, resolver)
    finally:
        if token is not None:
            INPUT_MEDIA.reset(token)


def _estimate_files(args, devices, resolver) -> int:
    device, others = devices[0], devices[1:]
    status = 0
    results = []
    for path in args.workflow:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except OSError as exc:
            print(f"error: {path}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
            print(f"error: {path}: not valid JSON ({str(exc)[:120]})", file=sys.stderr)
            status = 1
            continue
        try:
            workload = read_workflow(data)
            budget = estimate(workload, device, resolver, others=others)
            if args.max:
                budget = with_capacity(budget, workload, dict.fromkeys(args.max), resolver)
        except VramBudgetError as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            status = 1
            continue
        workers = getattr(args, "worker_devices", None) or []
        runs, left_out = plan_workers(workload, workers, resolver) if workers else ((), ())
        if args.json:
            extra = {"workers": [w.to_dict() for w in runs], "workers_left_out": [w.to_dict() for w in left_out]} \
                if workers else {}
            results.append({"workflow": path, **budget.to_dict(), **extra})
        else:
            if len(args.workflow) > 1:
                print(f"== {path}")
            print(format_report(budget, verbose=args.verbose))
            if workers:
                print("\n".join(format_workers(runs, left_out)))
            print()
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2))
    return status


def main(argv=None) -> int:  # standalone use: python -m ...cli_estimate
    parser = argparse.ArgumentParser(prog="vram-budget")
    sub = parser.add_subparsers(dest="command", required=True)
    add_estimate_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)
