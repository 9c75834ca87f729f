"""The card a workflow is estimated for, as ComfyUI's launch flags and the machine set it up.

Bytes inside; the command line, the node and the panel build one of these (device_for_launch)."""
from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from .gpus import Card, windows_desktop_bytes
from .host_memory import FAST_DISKS, RULE_SETS, Host, since
from ..units import GiB, MiB


def version_tuple(text) -> tuple[int, ...] | None:
    """'0.3.68' -> (0, 3, 68); 'v0.30.1-5-gabc' -> (0, 30, 1); '2.9.0+cu128' -> (2, 9, 0); None when unreadable."""
    m = re.match(r"\s*v?(\d+(?:\.\d+){0,3})", str(text or ""))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


# CUDA context + cuBLAS/cuDNN handles: "the CUDA context takes a few hundred MB more before any
# model loads" (FACTS.md). 400 MiB until a GPU measurement corrects it (docs/working-memory.md).
CUDA_CONTEXT_BYTES = 400 * MiB
# ComfyUI's extra reserved VRAM on Linux (model_management.py:568 EXTRA_RESERVED_VRAM, 400 MiB);
# under Dynamic VRAM it is the headroom kept free beside working memory.
COMFY_RESERVE_BYTES = 400 * MiB

@dataclass(frozen=True)
class Device:
    """The card a workflow is estimated for. Bytes."""

    name: str
    total_bytes: int  # capacity as PyTorch reports it
    other_processes_bytes: int = 0  # held by other processes on the card
    reserved_unallocated_bytes: int = 0  # PyTorch cache held but unallocated (fragmentation)
    held_by_models_bytes: int = 0  # weights ComfyUI has loaded now (it unloads them when needed)
    fp8_compute: bool = True
    memory_mode: str = "classic"  # "classic" | "dynamic"
    lowvram: bool = False  # --lowvram / --novram: text encoders stay on the CPU
    # --directml: torch-directml has no free-memory query, so ComfyUI reports 1 GiB total and free and turns partial
    # loading off unless --lowvram (model_management.py:110-122, :324-326, :1757-1759, :557-559 in 0.33.0)
    directml: bool = False
    te_cpu_reason: str = ""  # text encoders run on the CPU for another reason (ComfyUI's text_encoder_device)
    bf16: bool = True  # the card computes in bf16 (Ampere+); else ComfyUI runs KL VAEs in fp32
    reserve_bytes: int = COMFY_RESERVE_BYTES  # --reserve-vram
    context_bytes: int = CUDA_CONTEXT_BYTES
    source: str = "catalogue"  # "catalogue" | "--vram" | "live"
    vram_state: str = "normal"  # normal | low | no | high | gpu_only (ComfyUI's launch flags)
    cpu_vae: bool = False  # --cpu-vae
    smart_memory: bool = True  # --disable-smart-memory sets False
    flops: float = 165.2e12  # dense 16-bit tensor FLOP/s (gpus.Card.tflops), for the speed model
    host_bytes_per_s: float = 25.2e9  # host link, effective (gpus.PCIE)
    host: Host | None = None  # the machine's RAM / swap; None: not known (the answer says what it assumes)
    # ComfyUI computes diffusion models in fp32 on this card (unet_manual_cast returns float32 when neither
    # fp16 nor bf16 is "supported": Pascal 10-series on Linux, GTX 16xx; model_management.py:845-867 /
    # :1050 / :1159 and should_use_fp16's 10- and 16-series lists, :1403-1409 in 0.8): activations take 4 bytes
    compute_fp32_reason: str = ""
    # Dynamic VRAM's free headroom: None = comfy-aimdo's 256 MiB; ComfyUI 0.33 hands --reserve-vram to aimdo
    # as its headroom (main.py:99-101) and adds --vram-headroom on every device (main.py:305)
    aimdo_headroom_bytes: int | None = None
    vram_headroom_bytes: int = 0
    # ComfyUI 0.33's model prefetch under Dynamic VRAM (comfy/model_prefetch.py, model_base.py:245): LTXAV and
    # MiniMax H3 cast a streamed block whole, one cast buffer per offload stream (runtime.prefetch_block_bytes)
    model_prefetch: bool = False
    # Which device of the machine this card is (issue 24): "cuda:0" = ComfyUI's main device; with several
    # cards (--gpus) the i-th is "cuda:i". A model a loader placed on another device is not on this card.
    ordinal: str = "cuda:0"
    # What the OOM risk reads beside the arithmetic (risk.py): the card's maker and architecture (gpus.ARCHS),
    # the OS, and the ComfyUI release the answer is for (the known regressions of that release)
    vendor: str = "NVIDIA"
    arch: str = ""
    os: str = "linux"
    versions: tuple[tuple[str, str], ...] = ()  # (component, version): "ComfyUI" -> "0.30.1", node packs ...
    # the ComfyUI release in `versions` is a guess (the evidence replay's ComfyUI of a record's date): it picks the
    # memory rules only; neither a known regression nor the era of ComfyUI's model code (physics/memory.era_factor)
    # is judged on it
    release_assumed: bool = False
    # ComfyUI's own placement nodes (SelectModelDevice / SelectCLIPDevice / SelectVAEDevice, comfy_extras/
    # nodes_multigpu.py in 0.33.0; not in 0.18.2): the multi-GPU plan's target when present
    core_device_nodes: bool = False
    # ComfyUI's attention on this card (gpus.ARCHS, model_management.py): "sdpa" (fused kernels), "subquad" /
    # "split" (ComfyUI's chunked attention, sized to the free memory), "math" (SDPA without a kernel for the
    # card: the whole score tensor is allocated)
    attention: str = "sdpa"
    # ComfyUI 0.35+ (issue 32; rules in docs/runtime.md): the Comfy Compiler under Dynamic VRAM on a CUDA / HIP
    # device (model_prefetch.py:29-30 in 0.38.1; off with --disable-comfy-compiler); fast disk: the models' disk
    # is NVMe at PCIe Gen3 x4 or better, or --fast-disk (storage.py:51, cli_args.py:184-185; 0.37+)
    comfy_compiler: bool = False
    cuda_graphs: bool = False
    fast_disk: bool = False
    te_on_gpu: bool = False  # 0.37+ under Dynamic VRAM: text encoders load to the GPU on any card (te_cpu_reason off)

    @property
    def known_versions(self) -> dict[str, str]:
        """{component: version} a release's facts may be judged on (known regressions, the era of ComfyUI's model
        code): `versions` without a ComfyUI release that is only guessed (release_assumed)."""
        return {k: v for k, v in (self.versions or ()) if not (k == "ComfyUI" and self.release_assumed)}

    def on(self, card: Card, rented: bool = False) -> "Device":
        """This ComfyUI, with every launch flag and the machine's RAM, on another catalogue card (the cheapest
        card that runs a workflow is this question asked of each card): the card's own size, speed, host link,
        fp8 / bf16, attention and its Pascal rules; on Windows the desktop's share where the card drives a display
        (never on a `rented` card, which drives none)."""
        pascal = card.pascal and self.os == "linux" and self.vram_state in ("normal", "high")
        te_cpu = pascal and not self.te_on_gpu
        fp32 = PASCAL_FP32 if pascal else (FP32_16_SERIES if card.fp32_compute else "")
        return replace(self, name=card.name, total_bytes=card.total_bytes, fp8_compute=card.fp8_compute,
                       bf16=card.bf16, flops=card.flops or self.flops, host_bytes_per_s=card.host_bytes_per_s,
                       vendor=card.vendor, arch=card.arch, attention=card.attention, source="catalogue",
                       reserved_unallocated_bytes=0, held_by_models_bytes=0,
                       te_cpu_reason=PASCAL_TE_CPU if te_cpu else "", compute_fp32_reason=fp32,
                       other_processes_bytes=windows_desktop_bytes(card) if self.os == "windows" and not rented else 0)

    @classmethod
    def from_card(cls, card: Card, **kw) -> "Device":
        kw.setdefault("flops", card.flops or 165.2e12)
        kw.setdefault("host_bytes_per_s", card.host_bytes_per_s)
        kw.setdefault("bf16", card.bf16)
        return cls(name=card.name, total_bytes=card.total_bytes, fp8_compute=card.fp8_compute, **kw)

    @property
    def capacity_bytes(self) -> int:
        """What this ComfyUI can use: the card minus other processes."""
        return max(0, self.total_bytes - self.other_processes_bytes)


# ----------------------------------------------------------------------------------------------
# Launch flags -> Device: the one mapping the command line, the VRAM Budget node and the panel use
@dataclass(frozen=True)
class LaunchFlags:
    """ComfyUI's launch flags that shape memory on the card, named as comfy.cli_args names them, plus the
    machine's OS and the host-memory rule set of the ComfyUI version (host_memory.RULE_SETS). GB flags are
    GiB (ComfyUI multiplies them by 1024**3)."""

    lowvram: bool = False
    novram: bool = False
    highvram: bool = False
    gpu_only: bool = False
    cpu: bool = False  # --cpu: ComfyUI computes on the CPU (no Dynamic VRAM: cli_args.enables_dynamic_vram)
    reserve_vram: float | None = None  # --reserve-vram GB
    vram_headroom: float = 0.0  # --vram-headroom GB (0.33 only)
    cpu_vae: bool = False
    disable_smart_memory: bool = False
    disable_dynamic_vram: bool = False  # 0.16+
    enable_dynamic_vram: bool = False  # 0.16+: forces Dynamic VRAM on whatever the other flags say
    use_pytorch_cross_attention: bool = False  # forces SDPA (math path where the card has no kernel)
    use_split_cross_attention: bool = False
    use_quad_cross_attention: bool = False
    os: str = "linux"  # "linux" | "windows"
    rules: str = RULE_SETS[-1]  # one of RULE_SETS (rules_for_version)
    release: str = ""  # the ComfyUI release when known ("0.36.2"): a 0.38-rule feature newer than it is off
    disable_comfy_compiler: bool = False  # 0.35+ (0.38.1 cli_args.py:187; also turns CUDA graphs off, :309-310)
    disable_cuda_graphs: bool = False  # cli_args.py:186
    fast_disk: bool = False  # --fast-disk: disk-backed loading forced (cli_args.py:184)
    disable_fast_disk: bool = False  # --disable-fast-disk (cli_args.py:185; overrides --fast-disk)
    disk: str = ""  # the models' disk: a host_memory.DISKS kind or "" (not known)
    directml: bool = False  # --directml [N]: torch-directml (AMD / Intel on Windows); no Dynamic VRAM, no partial load

    def has(self, feature: str) -> bool:
        """Whether this ComfyUI has a 0.35+ feature (FEATURES: the release it came in): the 0.38 rules, and a
        release at least that one when the release is known."""
        if not since(self.rules, "0.38"):
            return False
        rel = version_tuple(self.release)
        return rel is None or rel[:2] >= FEATURES[feature]

    @classmethod
    def from_args(cls, args, *, os: str | None = None, rules: str | None = None) -> "LaunchFlags":
        """From an argparse namespace: ComfyUI's comfy.cli_args.args or the command line's (which also
        carries --os and --comfyui-version); a flag this ComfyUI version does not have keeps its default."""
        def flag(name: str) -> bool:
            return bool(getattr(args, name, False))

        reserve = getattr(args, "reserve_vram", None)
        return cls(
            lowvram=flag("lowvram"), novram=flag("novram"), highvram=flag("highvram"), gpu_only=flag("gpu_only"),
            cpu=flag("cpu"), reserve_vram=None if reserve is None else float(reserve),
            vram_headroom=float(getattr(args, "vram_headroom", 0.0) or 0.0), cpu_vae=flag("cpu_vae"),
            disable_smart_memory=flag("disable_smart_memory"), disable_dynamic_vram=flag("disable_dynamic_vram"),
            enable_dynamic_vram=flag("enable_dynamic_vram"),
            use_pytorch_cross_attention=flag("use_pytorch_cross_attention"),
            use_split_cross_attention=flag("use_split_cross_attention"),
            use_quad_cross_attention=flag("use_quad_cross_attention"),
            os=os or getattr(args, "os", None) or "linux",
            rules=rules or getattr(args, "comfyui_version", None) or RULE_SETS[-1],
            release=str(getattr(getattr(args, "comfyui_version", None), "release", "") or ""),
            disable_comfy_compiler=flag("disable_comfy_compiler"), disable_cuda_graphs=flag("disable_cuda_graphs"),
            fast_disk=flag("fast_disk"), disable_fast_disk=flag("disable_fast_disk"),
            disk=getattr(args, "disk", None) if isinstance(getattr(args, "disk", None), str) else "",
            # comfy's args.directml is the device index (-1 for the flag alone, 0 is a device): None when not given
            directml=getattr(args, "directml", None) is not None and getattr(args, "directml") is not False)

    @property
    def vram_state(self) -> str:
        """ComfyUI's VRAMState from the flags (model_management.py:394-410 in 0.8, :510-526 in 0.18.2,
        :557-573 in 0.33.0): --lowvram LOW, --novram NO, --highvram / --gpu-only HIGH; the estimator keeps
        --gpu-only apart (everything on the GPU, runtime.py). Off the GPU ComfyUI sets DISABLED (--cpu) or
        SHARED (MPS) after that (:412-416 in 0.8, :528-535 in 0.18.2, :575-579 in 0.33.0): there
        device_for_launch builds the system-memory Device instead."""
        return ("no" if self.novram else "high" if self.highvram else "gpu_only" if self.gpu_only
                else "low" if self.lowvram else "normal")

    def memory_mode(self, card: Card, chosen: str | None = None) -> str:
        """Classic or Dynamic VRAM: `chosen` (--memory-mode, the node's choice, or what the live ComfyUI
        runs), else what this ComfyUI version does on the card: Dynamic VRAM from 0.16 on NVIDIA (0.18.2
        main.py:211-230, 0.33.0 main.py:291-331), none in 0.8. --highvram / --gpu-only / --novram turn it
        off unless --enable-dynamic-vram (cli_args.enables_dynamic_vram, 0.18.2 cli_args.py:265-268,
        0.33.0 cli_args.py:312-315); --cpu and --disable-dynamic-vram too."""
        if self.vram_state not in ("normal", "low") and not self.enable_dynamic_vram:
            return "classic"
        if chosen:
            return chosen
        if self.enable_dynamic_vram:
            return "dynamic"
        if self.cpu or self.disable_dynamic_vram or self.directml:  # comfy-aimdo is CUDA only
            return "classic"
        return "dynamic" if self.rules != "0.8" and card.vendor == "NVIDIA" else "classic"

    def attention(self, card: Card) -> str:
        """ComfyUI's attention on `card` with these flags (model_management.py:458-531 in 0.33.0,
        attention.py's optimized_attention choice): --use-split / --use-quad-cross-attention pick ComfyUI's
        chunked kernels; --use-pytorch-cross-attention forces SDPA, whose math path runs where the card has no
        fused kernel (a card ComfyUI itself gives sub-quadratic attention); else the card's own (gpus.ARCHS),
        the math path for a rule set that enables SDPA on it without kernels."""
        if self.use_split_cross_attention:
            return "split"
        if self.use_quad_cross_attention:
            return "subquad"
        if self.rules in card.math_attention_rules:
            return "math"
        if self.use_pytorch_cross_attention and card.attention != "sdpa":
            return "math"
        return card.attention

    def reserve_bytes(self, total_bytes: int) -> int:
        """ComfyUI's EXTRA_RESERVED_VRAM: --reserve-vram GB, else 400 MiB, on Windows 600 MiB plus 100 on a
        card over 15 GiB (model_management.py:566-576 in 0.8, :718-732 in 0.18.2, :847-855 in 0.33.0)."""
        if self.reserve_vram is not None:
            return int(self.reserve_vram * GiB)
        if self.os == "windows":
            return (600 + (100 if total_bytes > 15 * GiB else 0)) * MiB
        return COMFY_RESERVE_BYTES


# The release each 0.35+ rule came in (LaunchFlags.has). Release notes: v0.35.0 lists the cgroup limit (#15927);
# v0.37.0 lists fast disk (#16333) and text encoders on the GPU under Dynamic VRAM (#16374); the compiler
# (#15861, merged 2026-08) is in no release note we could read: taken from 0.35, the first release after it.
FEATURES = {"cgroup": (0, 35), "compiler": (0, 35), "fast_disk": (0, 37), "te_on_gpu": (0, 37)}

PASCAL_TE_CPU = ("ComfyUI keeps text encoders on the CPU on Pascal cards under Linux "
                 "(no fast fp16: model_management.text_encoder_device)")
PASCAL_FP32 = ("ComfyUI computes in fp32 on a Pascal card under Linux (should_use_fp16 "
               "is False for the 10 series there, so unet_manual_cast picks float32)")
FP32_16_SERIES = ("ComfyUI computes in fp32 on a GTX 16-series card (should_use_fp16's nvidia_16_series: \"FP16 is "
                  "just broken on these cards\", model_management.py:1894-1897 in 0.33.0)")

# What a caller may give device_for_launch as measured (the live ComfyUI) or given (command-line flags)
MEASURED = frozenset({"name", "total_bytes", "other_processes_bytes", "reserved_unallocated_bytes",
                      "held_by_models_bytes", "fp8_compute", "bf16", "reserve_bytes", "te_cpu_reason",
                      "compute_fp32_reason", "host", "source", "versions", "core_device_nodes", "fast_disk",
                      "comfy_compiler", "cuda_graphs"})
assert MEASURED <= {f.name for f in fields(Device)}


def device_for_launch(card: Card | None, flags: LaunchFlags = LaunchFlags(), *, memory_mode: str | None = None,
                      **measured) -> Device:
    """The Device a ComfyUI started with `flags` has on `card`: the command line (its flags), the VRAM
    Budget node and the panel (comfy.cli_args.args and the live measurements) all build it here.

    `card`: a catalogue card (gpus.find_card / card_for_vram); None: ComfyUI computes on no CUDA device
    (--cpu, MPS, ...), so the models live in system memory: the Device is that memory (`name` and
    `total_bytes` measured), without a CUDA context. `memory_mode`: see LaunchFlags.memory_mode.
    `measured` (names in MEASURED; None = not measured) replaces what the flags and the card would say:
    the live card's name and size, other processes, PyTorch's cache, loaded weights, ComfyUI's own
    extra_reserved_memory / text_encoder_device / unet_manual_cast answers, the machine's RAM (host)."""
    unknown = set(measured) - MEASURED
    if unknown:
        raise TypeError(f"device_for_launch: not a measurement: {', '.join(sorted(unknown))}")
    given = {k: v for k, v in measured.items() if v is not None}
    if card is None:
        total = given.pop("total_bytes")
        name = given.pop("name", "cpu")
        kw = dict(memory_mode=memory_mode or "classic", context_bytes=0, source="live",
                  smart_memory=not flags.disable_smart_memory, reserve_bytes=flags.reserve_bytes(total))
        kw.update(given)
        return Device(name=f"{name} (no CUDA device: RAM)", total_bytes=total, **kw)
    total = given.get("total_bytes", card.total_bytes)
    state = flags.vram_state
    kw = dict(name=card.name, total_bytes=total, fp8_compute=card.fp8_compute, bf16=card.bf16,
              vendor=card.vendor, arch=card.arch, os=flags.os, attention=flags.attention(card),
              flops=card.flops or 165.2e12, host_bytes_per_s=card.host_bytes_per_s,
              memory_mode=flags.memory_mode(card, memory_mode), lowvram=state in ("low", "no"), vram_state=state,
              directml=flags.directml,
              cpu_vae=flags.cpu_vae, smart_memory=not flags.disable_smart_memory,
              reserve_bytes=flags.reserve_bytes(total),
              other_processes_bytes=windows_desktop_bytes(card) if flags.os == "windows" else 0, source="catalogue")
    if card.fp32_compute:
        kw.update(compute_fp32_reason=FP32_16_SERIES)
    if card.pascal and flags.os == "linux" and state in ("normal", "high"):
        # text_encoder_device(): GPU only when should_use_fp16, which is False for Pascal on Linux
        # (model_management.py:875-884 in 0.8, :1080-1089 in 0.18.2, :1189-1198 in 0.33.0)
        kw.update(te_cpu_reason=PASCAL_TE_CPU, compute_fp32_reason=PASCAL_FP32)
    dynamic = kw["memory_mode"] == "dynamic"
    if dynamic and flags.has("te_on_gpu"):
        # 0.37+: under Dynamic VRAM the text encoder's load device is the GPU whatever the card's fp16
        # (model_management.py:1222-1223 in 0.38.1; 0.33.0 :1192-1196 asked should_use_fp16 first)
        kw.pop("te_cpu_reason", None)
        kw.update(te_on_gpu=True)
    if dynamic and flags.has("compiler") and card.vendor in ("NVIDIA", "AMD"):
        # the Comfy Compiler runs where Dynamic VRAM runs on a CUDA / HIP device (model_prefetch.py:29-30
        # malloc_graph_enabled), unless --disable-comfy-compiler; CUDA graphs need it (:188, cli_args.py:309-310)
        kw.update(comfy_compiler=not flags.disable_comfy_compiler,
                  cuda_graphs=not (flags.disable_comfy_compiler or flags.disable_cuda_graphs))
    if dynamic and flags.has("fast_disk") and not flags.disable_fast_disk:
        # per model, from the disk of its files: every disk NVMe at PCIe Gen3 x4+ (storage.py:51, :102-106);
        # --fast-disk forces it. A disk not known is taken as not fast, as ComfyUI takes an unknown result
        kw.update(fast_disk=flags.fast_disk or flags.disk in FAST_DISKS)
    if since(flags.rules, "0.33"):
        # 0.33 hands --reserve-vram to comfy-aimdo as its headroom (main.py:99-101) and adds --vram-headroom
        # on every device (main.py:305)
        kw.update(vram_headroom_bytes=int(flags.vram_headroom * GiB),
                  aimdo_headroom_bytes=None if flags.reserve_vram is None else int(flags.reserve_vram * GiB),
                  # model_prefetch.py:154-163 make_prefetch_queue: on a CUDA device with offload streams
                  # (NUM_STREAMS 2 on NVIDIA, model_management.py:1341-1350); runtime uses it under Dynamic VRAM only
                  model_prefetch=True, core_device_nodes=True)
    kw.update(given)
    return Device(**kw)


def rules_for_version(version: str | None) -> tuple[str, str]:
    """(host-memory rule set, note) for a ComfyUI version: 0.8 up to 0.15 (classic), 0.18 for 0.16-0.29
    (Dynamic VRAM, pins capped at 95 % of RAM), 0.33 for 0.30-0.33 (pin budget, RAM-pressure cache), 0.38 from
    0.34 (the rules of ComfyUI 0.38: host_memory.RULE_SETS); a version newer than the newest rule set is said."""
    try:
        major, minor = (int(x) for x in str(version).split(".")[:2])
    except (TypeError, ValueError):
        return RULE_SETS[-1], f"ComfyUI version not read: the rules of {RULE_SETS[-1]} are used"
    if (major, minor) < (0, 16):
        return "0.8", ""
    if (major, minor) < (0, 30):
        return "0.18", ""
    if (major, minor) < (0, 34):
        return "0.33", ""
    newest = RULE_SETS[-1]
    if (major, minor) > tuple(int(x) for x in newest.split(".")):
        return newest, f"rules of {newest} used for {major}.{minor}"
    return newest, ""
