"""System RAM (host memory) per stage: what ComfyUI holds in RAM while it runs a workflow.

The VRAM simulation (runtime.py) says which weights stay on the GPU and which ComfyUI streams from
RAM; this module adds up what the host must hold at each stage and sets it against the machine's
RAM and swap / page file. Every rule cites ComfyUI (file:line, 0.8.0 / 0.18.2 / 0.33.0); the
table is in docs/host-memory.md.

The derivation, rule by rule with its sources: docs/derivations.md, "machine/host_memory.py: system RAM per stage"."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..model_info import CHECKPOINT, DIFFUSION, LORA, TEXT_ENCODER, VAE
from ..units import GiB, MiB, fmt_gib
from ..workload import DIFFUSERS, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE
from ..serial import JsonFields, Remedy

FITS, SWAPPING, THRASHING, OOM, ASSUMED = "fits", "swapping", "thrashing", "oom", "assumed"
HOST_SEVERITY = {FITS: 0, ASSUMED: 0, THRASHING: 1, SWAPPING: 1, OOM: 2}
HOST_OUTCOMES = (FITS, SWAPPING, THRASHING, OOM, ASSUMED)  # stable values of host_outcome in --json

RULE_SETS = ("0.8", "0.18", "0.33", "0.38")


def since(rules: str, version: str) -> bool:
    """Whether the rule set `rules` is `version`'s or a newer one (RULE_SETS is in release order)."""
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in str(v).split(".")[:2])
    return key(rules) >= key(version)
CACHE_MODES = ("classic", "lru", "none", "ram")

# --- what the host holds besides models (assumptions on the command line; measured inside ComfyUI) --
# ComfyUI's own process with torch + CUDA libraries loaded and its nodes imported, before any model:
# torch's CUDA build maps ~1.5 GiB of kernels and libraries (cuBLAS, cuDNN), CPython + ComfyUI +
# the frontend ~0.5 GiB.
COMFY_PROCESS_BYTES = 2 * GiB
# The OS and the usual background programs: a Linux server / container ~1 GiB; a Windows 10/11
# desktop commits ~3.5 GiB at idle with a browser tab open (the ComfyUI frontend).
OS_BYTES = {"linux": 1 * GiB, "windows": int(3.5 * GiB)}
# Without --swap: on Linux LINUX_SWAP_ASSUMED_BYTES (below); on Windows a system-managed page
# file of 1.5 × the RAM. Windows lets a system-managed page file grow to 3 × RAM (at most 1/8 of the
# disk), but it grows only after an allocation has hit the limit, and a model load that charges many
# GB at once can fail first ('paging file is too small', os error 1455). 1.5 is fitted on the published
# Windows runs with a system-managed page file in docs/accuracy.md (two Flux fp8 runs on 16 GB that
# finished, three 8-16 GB machines that failed): 1.0 makes the two runs fail, 3.0 lets the three run.
# A page file set by hand: --swap.
WINDOWS_PAGEFILE_ASSUMED_FACTOR = 1.5
# Linux without --swap: a desktop distribution's default swap file (Ubuntu's installer makes a 2 GiB
# /swap.img; Fedora a zram device of half the RAM up to 8 GiB); containers and rentals have none (--swap 0).
# Issue 30: "no swap" turned published Linux desktop runs that only brushed the RAM limit into false "Killed".
LINUX_SWAP_ASSUMED_BYTES = 2 * GiB
# Below this much free RAM Linux reclaims page cache and starts swapping: counted as the margin a
# stage must leave (the kernel's min_free / watermarks plus buffers).
RAM_MARGIN_BYTES = 512 * MiB
# Disk read speed for weights Dynamic VRAM re-reads when their pages were dropped (NVMe, sequential), when
# --disk does not say: an NVMe drive on PCIe 3.0 x4 (3.94 GB/s link) reads about 3 GB/s sequentially.
DISK_BYTES_PER_S = 3.0e9
# --disk KIND: sustained sequential reads by the interface's limit. nvme: as above (and fast for ComfyUI 0.37+'s
# fast-disk rule, NVMe at PCIe Gen3 x4 or better: comfy/storage.py:51 in 0.38.1); sata: SATA III's 6 Gb/s line
# rate after 8b/10b coding is 600 MB/s, SSDs sustain ~530; hdd: a 7200 rpm disk's outer tracks ~150-250 MB/s.
DISKS = {"nvme": 3.0e9, "sata": 0.53e9, "hdd": 0.15e9}
FAST_DISKS = ("nvme",)


@dataclass(frozen=True)
class Host:
    """The machine's system memory as the estimate sees it. Bytes; None = not known."""

    ram_total_bytes: int | None = None
    swap_total_bytes: int | None = None  # swap (Linux) or page file (Windows); None: not given
    os: str = "linux"
    other_bytes: int | None = None  # OS + other programs (live: total − available − ComfyUI's own)
    process_bytes: int | None = None  # ComfyUI's own process before models (live: measured)
    source: str = "assumed"  # "--ram" | "live" | "assumed"
    rules: str = RULE_SETS[-1]  # ComfyUI rule set: RULE_SETS
    version: str = ""  # the ComfyUI version read live (may be newer than the rules)
    cache: str = ""  # classic | lru | none | ram; "" = the version's default
    pinned_memory: bool = True  # False: --disable-pinned-memory
    high_ram: bool = False  # 0.33 --high-ram: classic caching, no pin budget
    notes: tuple[str, ...] = ()
    container_limit: bool = False  # the RAM is a container's cgroup limit (read live), not the host's
    disk: str = ""  # the disk that holds the models: a DISKS kind, "N GB/s" given, "" = not known (nvme assumed)
    disk_bytes_per_s: float = DISK_BYTES_PER_S

    @property
    def known(self) -> bool:
        return self.ram_total_bytes is not None

    @property
    def cache_mode(self) -> str:
        if self.cache:
            return self.cache
        # 0.33: the RAM-pressure cache is the default (main.py:380-388), --high-ram keeps the classic one
        return "ram" if since(self.rules, "0.33") and not self.high_ram else "classic"

    @property
    def swap_bytes(self) -> int:
        if self.swap_total_bytes is not None:
            return self.swap_total_bytes
        if self.os == "windows" and self.ram_total_bytes:
            return int(self.ram_total_bytes * WINDOWS_PAGEFILE_ASSUMED_FACTOR)
        return LINUX_SWAP_ASSUMED_BYTES if self.ram_total_bytes else 0

    @property
    def base_bytes(self) -> int:
        proc = self.process_bytes if self.process_bytes is not None else COMFY_PROCESS_BYTES
        other = self.other_bytes if self.other_bytes is not None else OS_BYTES.get(self.os, OS_BYTES["linux"])
        return proc + other

    def to_dict(self) -> dict:
        return {
            "ram_total_bytes": self.ram_total_bytes, "swap_total_bytes": self.swap_total_bytes,
            "swap_assumed_bytes": None if self.swap_total_bytes is not None or not self.known else self.swap_bytes,
            "os": self.os, "other_bytes": self.other_bytes, "process_bytes": self.process_bytes,
            "base_bytes": self.base_bytes, "source": self.source, "rules": self.rules, "version": self.version,
            "cache": self.cache_mode, "pinned_memory": self.pinned_memory, "high_ram": self.high_ram,
            "disk": self.disk or None, "disk_bytes_per_s": self.disk_bytes_per_s,  # added: issue 32
        }


# ---------------------------------------------------------------------------------------------
# Containers (rented GPUs): the kernel ends a process at its cgroup's memory limit, whatever the host has.
# ComfyUI 0.35 reads the same limit for its own RAM checks and then counts no swap (Comfy-Org/ComfyUI#15927,
# "RAM limited by cgroup to ..."); the estimate takes it as the RAM inside ComfyUI, on every version.
CGROUP_UNLIMITED = 1 << 60  # v1 reports "no limit" as a page-rounded 2^63 - 1
_CGROUP_READ = 4096


def _read_small(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read(_CGROUP_READ).strip()
    except OSError:
        return None


def _bytes_or_none(text: str | None) -> int | None:
    if not text or not text.isdecimal():
        return None  # "max" (v2 no limit), missing, odd
    value = int(text)
    return value if 0 < value < CGROUP_UNLIMITED else None


def container_limit(root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> tuple[int, int | None] | None:
    """(limit, bytes in use) of this process's memory cgroup, or None when it has no limit. cgroup v2: the
    process's own group from /proc/self/cgroup ("0::/path"), memory.max / memory.current (a limit of "max" is
    none), then the root's; v1: memory/memory.limit_in_bytes and memory.usage_in_bytes."""
    own = ""
    for line in (_read_small(proc_cgroup) or "").splitlines()[:64]:
        if line.startswith("0::"):
            own = line[3:].strip().strip("/")
            break
    candidates = ([f"{root}/{own}"] if own and ".." not in own else []) + [root]
    for folder in candidates:
        limit = _bytes_or_none(_read_small(f"{folder}/memory.max"))
        if limit is not None:
            return limit, _bytes_or_none(_read_small(f"{folder}/memory.current"))
    limit = _bytes_or_none(_read_small(f"{root}/memory/memory.limit_in_bytes"))
    if limit is not None:
        return limit, _bytes_or_none(_read_small(f"{root}/memory/memory.usage_in_bytes"))
    return None


@dataclass(frozen=True)
class HostItem(JsonFields):
    label: str
    bytes: int
    category: str  # process | os | weights | cached | pinned | load | images | mapped
    note: str = ""


@dataclass(frozen=True)
class HostRun:
    """System memory at one stage's peak."""

    ram_bytes: int  # what must be in RAM (process memory + pinned + file pages the stage reads)
    committed_bytes: int  # process memory (anonymous + pinned): what counts against RAM + swap
    mapped_bytes: int = 0  # mapped model files (page cache; on Windows charged to the commit limit too)
    pinned_bytes: int = 0
    outcome: str = FITS
    cow_bytes: int = 0  # copy-on-write file views (classic loads): charged to the Windows commit limit
    swap_bytes: int = 0  # swapping: how much goes to swap / the page file
    shortfall_bytes: int = 0  # oom: how much is missing beyond RAM + swap
    items: tuple[HostItem, ...] = ()
    explanation: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "ram_bytes": self.ram_bytes, "committed_bytes": self.committed_bytes, "mapped_bytes": self.mapped_bytes,
            "pinned_bytes": self.pinned_bytes, "cow_bytes": self.cow_bytes, "outcome": self.outcome, "swap_bytes": self.swap_bytes,
            "shortfall_bytes": self.shortfall_bytes, "items": [i.to_dict() for i in self.items],
            "explanation": list(self.explanation),
        }


@dataclass(frozen=True)
class HostBudget:
    host: Host
    runs: tuple[HostRun, ...]
    outcome: str
    peak_bytes: int
    peak_stage: int  # index into the stages (-1: no stage)
    notes: tuple[str, ...] = ()
    remedies: tuple = ()  # HostRemedy
    stops_at: int = -1  # the first stage (execution order) with the worst outcome: where the run stops; -1 none

    @property
    def why(self) -> str:
        """The explanation of the stage where the run stops ("" when nothing goes wrong)."""
        if self.stops_at < 0:
            return ""
        expl = self.runs[self.stops_at].explanation
        return expl[-1] if expl else ""

    def to_dict(self) -> dict:
        return {
            "outcome": self.outcome, "ram_peak_bytes": self.peak_bytes, "peak_stage": self.peak_stage,
            "host": self.host.to_dict(), "notes": list(self.notes),
            "remedies": [r.to_dict() for r in self.remedies],
        }


@dataclass(frozen=True)
class HostRemedy(Remedy):
    kind: str  # text_encoder_fp8 | cache_none | disable_pinned | page_file | swap | weights_fp8 | frames | close_programs
    # | move_models | more_ram
    title: str
    detail: str
    saving_bytes: int
    fixes: bool
    cost: str


# ---------------------------------------------------------------------------------------------
@dataclass
class _Model:
    key: str
    label: str
    kind: str
    loaded: int  # bytes as ComfyUI holds them (its weight dtype)
    file: int  # bytes of the file read (the whole checkpoint for a checkpoint's part)
    first: int
    last: int
    dynamic: bool  # taken by ModelPatcherDynamic (weights are file pages)
    cpu: bool  # runs on the CPU: all of it in RAM, never on the GPU
    file_key: str = ""
    params: int = 0
    uses: set = field(default_factory=set)  # indices of the stages that use it
    pipeline: bool = False  # a component of a diffusers pipeline a pack drives: in RAM while the pipeline's node runs


def _dynamic_for(stage, info, device, host: Host) -> bool:
    """Is this model on ComfyUI's dynamic patcher? (main.py:327; GGUF and pack-managed models not)"""
    if getattr(device, "memory_mode", "classic") != "dynamic" or host.rules == "0.8":
        return False
    if stage.manager is not None:  # WanVideoWrapper and the like place weights themselves
        return False
    if getattr(stage, "legacy_path", "") and info.kind == DIFFUSION:  # TorchCompileModel: disable_dynamic=True
        return False
    q = (info.quantization or "")
    if q.startswith("gguf"):  # ComfyUI-GGUF's GGUFModelPatcher is a ModelPatcher (legacy path)
        return False
    return info.kind in (DIFFUSION, TEXT_ENCODER, VAE)


def _item_key(item) -> str:
    """One model as the stage lists it: its label names the file ("Wan 2.2 A14B expert [file]"), so two
    files of one architecture (Wan 2.2's experts) stay two models."""
    return f"{item.model.kind}|{item.label}"


def _on_cpu(item) -> bool:
    """A model the budget puts on no GPU because it runs on the CPU (--lowvram / device=cpu text
    encoders, a MultiGPU loader's cpu device): its weights live in RAM."""
    return not item.bytes and "cpu" in (item.assumption or "").lower()


def _models(stage_budgets, device, host: Host) -> list[_Model]:
    models: dict[str, _Model] = {}
    for i, sb in enumerate(stage_budgets):
        for item in sb.items:
            info = item.model
            if item.category != "weights" or info is None or not (item.bytes or _on_cpu(item)):
                continue
            key = _item_key(item)
            cpu = _on_cpu(item)
            # a model run on the CPU: ComfyUI's text-encoder dtype there is fp16 (model_management.text_encoder_dtype)
            loaded = item.bytes or (info.params * 2 if info.params else info.weights_bytes)
            file_bytes = info.weights_bytes or loaded
            file_key = key
            if "(from " in info.label:  # a checkpoint's part: the whole file is read once
                file_key = "ckpt|" + info.label.split("(from ", 1)[1]
            m = models.get(key)
            if m is None:
                # a CPU load device gets the classic ModelPatcher (model_patcher.py:1751-1755 in 0.33)
                dynamic = not cpu and _dynamic_for(sb.stage, info, device, host)
                # the dynamic patcher loads with assign=True (sd.py:2349 / :431 / :1085 in 0.33): the parameters
                # are the mapped file's tensors, whatever the compute dtype; a classic model is a copy at its dtype
                m = models[key] = _Model(key, info.label, info.kind, file_bytes if dynamic else loaded, file_bytes,
                                         i, i, dynamic, cpu, file_key, info.params or 0)
            elif not m.dynamic:
                m.loaded = max(m.loaded, loaded)
            m.last = i
            m.uses.add(i)
    # a checkpoint's loader builds all its parts at once (sd.py load_checkpoint_guess_config): they are
    # all in memory from the first stage that uses any of them
    first_of: dict[str, int] = {}
    for m in models.values():
        first_of[m.file_key] = min(first_of.get(m.file_key, m.first), m.first)
    for m in models.values():
        m.first = first_of[m.file_key]
    # a diffusers pipeline a pack drives (Stage.manager "diffusers", runtime.run_diffusers) is one Python object
    # holding every component in RAM for as long as the node that runs it: its models live across all its stages
    spans: dict[str, list[int]] = {}
    for i, sb in enumerate(stage_budgets):
        if sb.stage.manager == DIFFUSERS:
            spans.setdefault(sb.stage.node_id, []).append(i)
    for idx in spans.values():
        span = set(idx)
        for m in models.values():
            if m.uses & span:
                m.first, m.last, m.pipeline = min(m.first, min(idx)), max(m.last, max(idx)), True
    return list(models.values())


def _alive(m: _Model, i: int, cache: str) -> bool:
    """Is model m in memory while stage i runs? A loader runs just before the first node that needs
    its model: ExecutionList adds nodes depth-first from the outputs (comfy_execution/graph.py:139-167,
    a stack) and runs the first ready node in that order (:237-311, ux_friendly_pick_node), so a
    Wan 2.2 workflow's first sampler runs before the second expert's loader. The classic and LRU
    caches keep a loader's output for the whole prompt (comfy_execution/caching.py; 0.8
    caching.py:172-194); --cache-none drops it after its last consumer (graph.py:313-318,
    CacheType.NONE); 0.33's RAM-pressure cache (the default, main.py:380-398) evicts finished outputs
    after each node once available RAM is below its headroom (execution.py:797-811, caching.py:550-600:
    old model patchers first), so under pressure a model no later node needs is gone."""
    if m.first > i:
        return False
    if cache in ("none", "ram"):
        return m.last >= i
    return True


def simulate(stage_budgets, runs, device, host: Host | None = None, images: list[int] | None = None,
             change=None) -> HostBudget:
    """The host side of a workflow. `runs`: runtime.StageRun per stage (resident / streamed);
    `change(model) -> model`: a what-if on the models (the remedies re-simulate with it).

    Each stage is judged at its worst moment: as it starts, its models are still all in RAM
    (classic: model_management.free_memory evicts the models in the way to RAM first, then the new
    one moves to the GPU, model_patcher.py:785-800 / :857-917 in 0.8), and a model read for the
    first time maps its file beside its new parameters; while it runs, RAM keeps what is not on
    the GPU."""
    host = host or Host()
    models = _models(stage_budgets, device, host)
    if change is not None:
        models = [change(m) for m in models]
    cache = host.cache_mode
    base_items = [HostItem("ComfyUI process (Python, torch, CUDA libraries)",
                           host.process_bytes if host.process_bytes is not None else COMFY_PROCESS_BYTES, "process",
                           "measured" if host.process_bytes is not None else "assumed"),
                  HostItem("OS and other programs",
                           host.other_bytes if host.other_bytes is not None else OS_BYTES.get(host.os, OS_BYTES["linux"]),
                           "os", "measured" if host.other_bytes is not None else f"assumed for {host.os}")]
    # --highvram / --gpu-only: the offload device is the GPU (0.8 model_management.py:765-769
    # unet_offload_device; :869-873 and :929-933 for text encoders and VAEs under --gpu-only) and the
    # diffusion model is built there (:771-778 unet_inital_load_device): nothing goes back to RAM
    state = getattr(device, "vram_state", "normal")
    offload_to_gpu = state in ("high", "gpu_only")
    built_on_gpu = (lambda m: m.kind == DIFFUSION) if state == "high" else (lambda m: state == "gpu_only")
    on_gpu: dict[str, int] = {}  # classic models' bytes resident on the GPU after the previous stage
    out: list[HostRun] = []
    image_bytes = images or [0] * len(stage_budgets)
    held_images = 0
    for i, (sb, run) in enumerate(zip(stage_budgets, runs)):
        items = list(base_items)
        in_stage = [m for m in models if i in m.uses]
        stage_keys = {m.key for m in in_stage}
        streamed = getattr(run, "streamed_bytes", 0) or 0
        peak_gpu = getattr(run, "peak_bytes", 0) or 0
        context = getattr(device, "context_bytes", 0)
        # room left for the models of earlier stages: free_memory evicts them until what this stage's
        # load asks for is free (model_management.py free_memory / load_models_gpu; runtime.StageRun.load_need_bytes)
        need_gpu = max(getattr(run, "load_need_bytes", 0) or 0, peak_gpu - context)
        gpu_room = max(0, device.capacity_bytes - context - need_gpu)
        pin_want = mapped = mapped_streamed = 0
        anon_run = anon_start = cow = 0
        for m in in_stage:
            if m.cpu:
                anon_run += m.loaded
                anon_start += m.loaded
                items.append(HostItem(f"{m.label}: runs on the CPU", m.loaded, "weights",
                                      "all its weights in RAM (fp16, ComfyUI's text-encoder dtype on the CPU)"))
                continue
            share = share_of(m, run, in_stage)
            if m.dynamic:
                mapped += m.file
                mapped_streamed += min(m.file, share)
                if host.pinned_memory and getattr(device, "fast_disk", False) and not host.high_ram:
                    # 0.37+ fast disk: a weight that has a VRAM slot is copied from its file, not pinned; only
                    # the ones without a slot (streamed) are pinned (0.38.1 ops.py:188-195, :232 handle_pin)
                    pin_want += min(m.file, share)
                elif host.pinned_memory and since(host.rules, "0.33"):
                    pin_want += m.file  # every module it copies to the GPU (ops.py:224-231 handle_pin)
                elif share and host.pinned_memory and host.rules == "0.18":
                    pin_want += share  # the modules that stream (ops.py:141-149 in 0.18)
                continue
            if not built_on_gpu(m):
                anon_start += max(0, m.loaded - on_gpu.get(m.key, 0))  # still in RAM until it moves to the GPU
            if m.first == i:
                cow += m.file  # the file is mapped while its parameters are filled
            if share:
                anon_run += share
                items.append(HostItem(f"{m.label}: streamed weights kept in RAM", share, "weights",
                                      "partial load: the modules not resident stay on the CPU"))
        # the other parts of a checkpoint this stage's loader reads: built from the same mapped file at once
        # (sd.py load_checkpoint_guess_config: one load_torch_file, then the model, CLIP and VAE from it)
        cow += sum(m.file for m in models if m.first == i and m not in in_stage and not m.dynamic and not m.cpu
                   and m.file_key.startswith("ckpt|"))
        started = [m for m in in_stage if not m.dynamic and not m.cpu
                   and m.loaded - on_gpu.get(m.key, 0) > share_of(m, run, in_stage)]
        if started:
            items.append(HostItem("models moving to the GPU (in RAM as the stage starts)",
                                  sum(m.loaded - on_gpu.get(m.key, 0) for m in started), "load",
                                  "classic: the model is copied to the GPU from its CPU parameters"))
        if mapped:
            items.append(HostItem("model files mapped by Dynamic VRAM (page cache)", mapped, "mapped",
                                  "comfy/utils.py load_safetensors: aimdo ModelMMAP, read-only"))
        if cow:
            items.append(HostItem("model file mapped while it is read", cow, "load",
                                  "comfy/utils.py load_torch_file (safe_open, copy-on-write) + load_model_weights"))
        # the other models in memory: on the GPU while there is room (smart memory), else in RAM
        others = [m for m in models if m.key not in stage_keys and _alive(m, i, cache)]
        others.sort(key=lambda m: (-m.last, m.first))  # free_memory evicts the least recently used first
        anon_others = 0
        new_gpu: dict[str, int] = {}
        for m in others:
            if m.dynamic:
                mapped += m.file
                items.append(HostItem(f"{m.label} (cached, file pages)", m.file, "mapped",
                                      "kept by ComfyUI's cache; Dynamic VRAM maps the file"))
                continue
            if offload_to_gpu and (m.first < i or built_on_gpu(m)):
                continue  # offloaded to (or built on) the GPU: VRAM holds it, not RAM
            if on_gpu.get(m.key) and gpu_room >= m.loaded and getattr(device, "smart_memory", True):
                gpu_room -= m.loaded  # still resident from its stage: not in RAM
                new_gpu[m.key] = m.loaded
                continue
            anon_others += m.loaded
            if m.pipeline:
                items.append(HostItem(f"{m.label} (in the pipeline)", m.loaded, "cached",
                                      "a diffusers pipeline keeps every component in RAM while its node runs"))
                continue
            items.append(HostItem(f"{m.label} (cached)", m.loaded, "cached",
                                  "offloaded to RAM: the GPU needed the room" if on_gpu.get(m.key) or m.last < i
                                  else "kept by ComfyUI's cache"))
        for m in in_stage:
            if not m.dynamic and not m.cpu:
                new_gpu[m.key] = max(0, m.loaded - share_of(m, run, in_stage))
        on_gpu = new_gpu
        if image_bytes[i]:
            held_images += image_bytes[i]
        if held_images:
            items.append(HostItem("decoded images / frames (float32, kept in the cache)", held_images, "images",
                                  "sd.py decode: float32 [B, H, W, 3] on the CPU"))
        committed = host.base_bytes + anon_others + max(anon_start, anon_run) + held_images
        pinned = 0
        if pin_want:
            # Dynamic VRAM copies each streamed module into a pinned HostBuffer of its own (0.18
            # pinned_memory.py:11-30, ops.py:141-149; 0.33 pinned_memory.py:71-127, ops.py:186-231): extra,
            # unswappable RAM, capped by MAX_PINNED_MEMORY. 0.33 pins only within its budget
            # (ensure_pin_budget, model_management.py:714-725: the pin plus max(headroom / 2, 2 GiB) must be
            # available, else older pins are freed), 0.18 up to its cap whatever else needs RAM.
            pin_want = min(pin_want, _pin_cap(host))
            if since(host.rules, "0.33") and not host.high_ram:
                ram = host.ram_total_bytes if host.ram_total_bytes is not None else committed + pin_want + 2 * GiB
                pinned = max(0, min(pin_want, ram - committed - mapped_streamed - 2 * GiB))
            else:
                pinned = pin_want
            if pinned:
                items.append(HostItem("pinned copies of the weights it moves", pinned, "pinned",
                                      ("0.33: a pinned copy of each module it copies to the GPU, within its pin budget"
                                       if since(host.rules, "0.33") else "0.18: a pinned copy of each streamed module") +
                                      ("" if pinned == pin_want else f" (0.33 pins {fmt_gib(pinned)} of "
                                                                     f"{fmt_gib(pin_want)}: its pin budget)")))
        elastic = since(host.rules, "0.33") and not host.high_ram
        if not elastic:
            committed += pinned  # 0.18 (and 0.33 --high-ram): pins up to the cap whatever else needs RAM
        # 0.33's pins are elastic: taken only from RAM nobody needs, and freed under RAM pressure
        # (execution.py:806-808 free_pins; model_management.py:695-712): shown, not counted as a need
        out.append(_judge(host, committed, mapped, mapped_streamed, pinned, items, [], sb.title, cow=cow))
    worst = max((HOST_SEVERITY[r.outcome] for r in out), default=0)
    outcome = next((r.outcome for r in out if HOST_SEVERITY[r.outcome] == worst), ASSUMED if not host.known else FITS)
    peak_idx = max(range(len(out)), key=lambda k: out[k].ram_bytes) if out else -1
    peak = out[peak_idx].ram_bytes if out else host.base_bytes
    notes = list(host.notes)
    if not host.known:
        outcome = ASSUMED
        notes.append(f"system RAM not given: this answer assumes at least {fmt_gib(peak)} of RAM "
                     f"({_where(peak_idx, stage_budgets)}); give --ram GiB (and --swap GiB) to check it")
    stops_at = next((k for k, r in enumerate(out) if HOST_SEVERITY[r.outcome] == worst), -1) if worst else -1
    return HostBudget(host, tuple(out), outcome, peak, peak_idx, tuple(notes), stops_at=stops_at)


def share_of(m: _Model, run, in_stage) -> int:
    """m's part of the bytes the stage streams (split by size among the stage's models)."""
    streamed = getattr(run, "streamed_bytes", 0) or 0
    total = sum(x.loaded for x in in_stage) or 1
    return int(streamed * m.loaded / total) if streamed else 0


def host_remedies(stage_budgets, runs, device, hb: HostBudget, images=None) -> list[HostRemedy]:
    """RAM fixes, least costly first, each re-simulated on this workflow: an fp8 / GGUF text
    encoder, --cache-none, --disable-pinned-memory, fp8 diffusion weights, fewer frames held, closing
    other programs, a larger page file / swap, more RAM."""
    host = hb.host
    if not host.known or hb.outcome in (FITS, ASSUMED):
        return []
    worst = _worst_need(hb)
    out: list[HostRemedy] = []

    def rerun(h=None, change=None, imgs=None) -> HostBudget:
        return simulate(stage_budgets, runs, device, h or host, images if imgs is None else imgs, change=change)

    def add(kind, title, detail, new: HostBudget, cost):
        saving = worst - _worst_need(new)
        if saving <= 0:
            return
        out.append(HostRemedy(kind, f"{title}: {fmt_gib(-saving, signed=True)} RAM", detail, saving,
                              HOST_SEVERITY[new.outcome] == 0, cost))

    models = _models(stage_budgets, device, host)
    te16 = [m for m in models if m.kind == TEXT_ENCODER and m.loaded >= 1.9 * m.params > 0]
    if te16:
        def te_fp8(m):
            if any(m.key == t.key for t in te16):
                p = m.params
                return replace(m, loaded=p, file=min(m.file, p + (m.file - m.loaded if m.file > m.loaded else 0)))
            return m
        names = ", ".join(sorted({m.label for m in te16}))
        add("text_encoder_fp8", f"{names} at fp8", "use the fp8 file of the text encoder (e.g. "
            "umt5_xxl_fp8_e4m3fn_scaled / t5xxl_fp8_e4m3fn_scaled): ComfyUI keeps the offloaded encoder in RAM",
            rerun(change=te_fp8), "quality: slight loss")
    if host.cache_mode != "none" and len(models) > 1:
        add("cache_none", "launch ComfyUI with --cache-none", "ComfyUI then unloads each model between stages once no "
            "later node needs it (the text encoder after the prompts are encoded; Wan 2.2: the high-noise expert before "
            "the low-noise one); the next run reads the files again",
            rerun(h=replace(host, cache="none")), "speed: models are read from disk on every run")
    if host.pinned_memory and host.rules != "0.8" and any(r.pinned_bytes for r in hb.runs):
        add("disable_pinned", "launch ComfyUI with --disable-pinned-memory", "no pinned copies of the streamed "
            "weights (pinned RAM cannot be swapped); copies to the GPU get slower",
            rerun(h=replace(host, pinned_memory=False)), "speed: slower weight streaming")
    dif16 = [m for m in models if m.kind == DIFFUSION and m.loaded >= 1.9 * m.params > 0]
    if dif16:
        def dif_fp8(m):
            if any(m.key == d.key for d in dif16):
                p = m.params
                return replace(m, loaded=p, file=p)
            return m
        add("weights_fp8", "fp8 diffusion model files", "an fp8 file (or GGUF Q8_0) of the diffusion model "
            "halves what ComfyUI holds in RAM", rerun(change=dif_fp8), "quality: slight loss")
    imgs = images or []
    if any(imgs):
        half = [b // 2 for b in imgs]
        add("frames", "half the frames / images decoded", "decoded frames stay in RAM as float32 "
            "(12 bytes a pixel) until the prompt ends; fewer frames, or save in parts", rerun(imgs=half),
            "output: fewer frames per run")
    if host.other_bytes is None or host.other_bytes > 1 * GiB:
        other = host.other_bytes if host.other_bytes is not None else OS_BYTES.get(host.os, OS_BYTES["linux"])
        add("close_programs", "close other programs (browser, games, other AI apps)", "they hold "
            f"{fmt_gib(other)} of RAM", rerun(h=replace(host, other_bytes=int(other * 0.4))), "nothing")
    short = max((r.committed_bytes + (r.cow_bytes if host.os == "windows" else 0)
                 - (host.ram_total_bytes or 0) for r in hb.runs), default=0)
    if short > 0 and hb.outcome == OOM:
        need = int(math.ceil((short + 2 * GiB) / GiB))
        if host.os == "windows":
            detail = (f"System > Advanced system settings > Performance > Virtual memory: a page file of at least "
                      f"{need} GB (custom size) on a fast SSD; runs, but slower when it swaps")
            kind, title = "page_file", f"a page file of {need} GB or more"
        else:
            detail = f"a swap file of at least {need} GB (fallocate + mkswap + swapon); runs, but slower when it swaps"
            kind, title = "swap", f"{need} GB of swap or more"
        out.append(HostRemedy(kind, title, detail, 0, True, "speed: swapping is slow"))
    reread = max((r.swap_bytes for r in hb.runs if r.outcome == THRASHING), default=0)
    if reread and host.disk_bytes_per_s < DISKS["nvme"]:
        # the weights RAM cannot keep are read again every step: a faster disk shortens each step (issue 32)
        slow, fast = reread / host.disk_bytes_per_s, reread / DISKS["nvme"]
        out.append(HostRemedy("move_models", "move the model files to an NVMe disk",
                              f"{fmt_gib(reread)} of weights are read again from disk every step: {slow:.1f} s at "
                              f"{host.disk_bytes_per_s / 1e9:.2g} GB/s, {fast:.1f} s from an NVMe disk (and ComfyUI "
                              "0.37+ turns fast-disk loading on there)", 0, False, "nothing (a disk move)"))
    if hb.outcome in (OOM, SWAPPING, THRASHING):
        gb = int(math.ceil((hb.peak_bytes + RAM_MARGIN_BYTES) / GiB))
        out.append(HostRemedy("more_ram", f"{_ram_size(gb)} GB of RAM or more",
                              f"this workflow needs {fmt_gib(hb.peak_bytes)} of RAM at its peak", 0, True, "money"))
    return out


def _ram_size(gb: int) -> int:
    for size in (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024):
        if size >= gb:
            return size
    return gb


def _worst_need(hb: HostBudget) -> int:
    runs = hb.runs
    return max(((r.committed_bytes + r.cow_bytes) if hb.host.os == "windows" else r.ram_bytes for r in runs), default=0)


def _pin_cap(host: Host) -> int:
    """MAX_PINNED_MEMORY: 0.33 model_management.py:1581-1588; 0.18.2 :1399-1408 (95 %, Windows 45 %)."""
    ram = host.ram_total_bytes or 64 * GiB
    if since(host.rules, "0.33"):
        if host.os == "windows":
            return int(0.40 * ram)
        swap = host.swap_bytes
        return int(max(0.40 * ram, min(0.90 * ram, ram - 4 * GiB, ram + swap - 16 * GiB)))
    return int((0.45 if host.os == "windows" else 0.95) * ram)


def _judge(host: Host, committed: int, mapped: int, mapped_streamed: int, pinned: int, items, notes, title,
           cow: int = 0) -> HostRun:
    need = committed + mapped_streamed
    ram = host.ram_total_bytes

    def run(outcome: str, why: str = "", **kw) -> HostRun:
        return HostRun(need, committed, mapped, pinned, cow_bytes=cow, outcome=outcome, items=tuple(items),
                       explanation=tuple(notes + ([why] if why else [])), **kw)

    if ram is None:
        return run(ASSUMED)
    usable = max(0, ram - RAM_MARGIN_BYTES)
    swap = host.swap_bytes
    oom = f"out of system memory at '{title}': "
    if host.os == "windows":
        # the commit limit: RAM + page file; a copy-on-write file view is charged in full (aimdo maps
        # read-only: PAGE_READONLY, not charged)
        limit, charge = ram + swap, committed + cow
        if charge > limit:
            return run(OOM, oom + f"needs {fmt_gib(charge)} of commit (RAM + page file), the limit is {fmt_gib(limit)} "
                       f"({fmt_gib(ram)} RAM + {fmt_gib(swap)} page file): Windows fails with 'The paging file is too "
                       "small' (os error 1455)", shortfall_bytes=charge - limit)
    elif committed > ram + swap:
        return run(OOM, oom + f"needs {fmt_gib(committed)} RAM, {fmt_gib(ram)} installed"
                   + (f" + {fmt_gib(swap)} swap" if swap else " and no swap")
                   + ": the Linux OOM killer ends ComfyUI ('Killed')", shortfall_bytes=committed - ram - swap)
    if pinned and pinned + host.base_bytes > usable:  # pinned pages cannot be swapped out
        return run(OOM, oom + f"{fmt_gib(pinned)} of pinned buffers cannot be swapped",
                   shortfall_bytes=pinned + host.base_bytes - usable)
    if committed > usable:
        sw = committed - usable
        return run(SWAPPING, f"'{title}' needs {fmt_gib(committed)} of RAM, {fmt_gib(ram)} installed: {fmt_gib(sw)} goes "
                   f"to {'the page file' if host.os == 'windows' else 'swap'} (runs, slower: the system swaps)",
                   swap_bytes=sw)
    if need > usable and mapped_streamed:
        miss = need - usable
        return run(THRASHING, f"'{title}': the {fmt_gib(mapped_streamed)} of weights Dynamic VRAM streams do not all "
                   f"stay in RAM beside the rest ({fmt_gib(committed)}); about {fmt_gib(miss)} are read again from disk "
                   f"every step (+{miss / host.disk_bytes_per_s:.1f} s per step at {host.disk_bytes_per_s / 1e9:.2g} GB/s"
                   f"{', ' + host.disk if host.disk else ', an NVMe disk assumed'})",
                   swap_bytes=miss)
    return run(FITS)


def _where(idx: int, stage_budgets) -> str:
    if idx < 0 or idx >= len(stage_budgets):
        return "while the models load"
    return f"at '{stage_budgets[idx].title}'"


def image_bytes(stage_budgets) -> list[int]:
    """Bytes of each VAE decode's float32 output on the CPU (sd.py decode), or what a node pack says its stage keeps
    on the CPU (Stage.host_output_bytes: FrameInterpolate's frames); 0 for other stages."""
    out = []
    for sb in stage_budgets:
        if sb.stage.host_output_bytes:
            out.append(int(sb.stage.host_output_bytes))
            continue
        lat = sb.stage.latent
        if sb.stage.kind != VAE_DECODE or lat is None:
            out.append(0)
            continue
        sc = lat.spatial_compression or 8
        h = lat.pixel_height or lat.height * sc
        w = lat.pixel_width or lat.width * sc
        frames = (lat.pixel_frames or ((lat.frames - 1) * (lat.temporal_compression or 4) + 1)) if lat.is_video and lat.frames else 1
        if lat.media:  # audio / 3D latents: not images
            out.append(0)
            continue
        out.append(max(1, lat.batch) * frames * h * w * 3 * 4)
    return out
