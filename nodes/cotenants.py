"""Who else holds the card (issue 35): the processes on a GPU, named with what we know of them and the advice
that frees their memory.

Sources, in order: NVML (pynvml, as comfy_bridge.gpu_processes reads it), then `nvidia-smi --query-compute-apps`
(the binary `VRAM_BUDGET_NVIDIA_SMI` names, else `nvidia-smi` on PATH). A process whose name or command line we
cannot read (another container's, another user's) is "other". Memory the driver counts as used that no listed
process holds is "hidden": inside a container NVML lists no other container's processes.
No torch, no comfy: tests drive it with a stand-in nvidia-smi.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from functools import lru_cache

from .estimator.units import GiB, MiB

SMI_TIMEOUT_S = 5.0
MAX_PROCESSES = 64
MAX_MANIFESTS = 2000
VLLM_DEFAULT_UTILIZATION = 0.9  # vllm/engine/arg_utils.py EngineArgs.gpu_memory_utilization


@dataclass(frozen=True)
class Cotenant:
    pid: int
    name: str  # the process name as the system gives it
    used: int  # bytes on the card
    kind: str  # ollama | vllm | comfyui | llama.cpp | sglang | webui | desktop | other | hidden
    label: str  # in user words, e.g. "Ollama (qwen3:32b)"
    advice: str  # what frees it, in user words; "" when nothing is ours to say
    is_self: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SmiGpu:
    index: int
    uuid: str
    name: str
    total: int
    used: int


def _arg(cmdline: list[str], flag: str) -> str | None:
    for i, a in enumerate(cmdline):
        if a == flag and i + 1 < len(cmdline):
            return cmdline[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def ollama_model(cmdline: list[str], models_dir: str | None = None) -> str | None:
    """The model an Ollama runner serves: its manifest's name for the blob on `--model`, else the blob's name."""
    path = _arg(cmdline, "--model")
    if not path:
        return None
    root = models_dir or os.environ.get("OLLAMA_MODELS") or os.path.join(os.path.expanduser("~"), ".ollama", "models")
    return _manifest_name(os.path.basename(path), root)


@lru_cache(maxsize=64)
def _manifest_name(blob: str, root: str) -> str:
    """The manifest that lists `blob` under `root` ("qwen3:32b"), else the blob's name. Cached: the panel asks every
    poll, and a blob's manifest does not change while its runner lives."""
    digest = blob.replace("sha256-", "sha256:")
    manifests = os.path.join(root, "manifests")
    seen = 0
    for dirpath, _dirs, files in os.walk(manifests):
        for f in files:
            seen += 1
            if seen > MAX_MANIFESTS:
                return blob
            p = os.path.join(dirpath, f)
            try:
                with open(p, encoding="utf-8") as fh:
                    text = fh.read(64 * 1024)
            except OSError:
                continue
            if digest in text:  # .../manifests/registry.ollama.ai/library/<model>/<tag>
                return f"{os.path.basename(dirpath)}:{f}"
    return blob


def identify(pid: int, name: str, cmdline: list[str], used: int, me: int | None = None) -> Cotenant:
    """What a process on the card is, and what frees its memory."""
    me = os.getpid() if me is None else me
    low_name = (name or "").lower()
    line = " ".join(cmdline).lower()
    gib = f"{used / GiB:.1f} GiB"
    if pid == me:
        return Cotenant(pid, name, used, "comfyui", "this ComfyUI", "", True)
    if "ollama" in low_name or re.search(r"(^|/)ollama(\s|$)", line):
        model = ollama_model(cmdline)
        label = f"Ollama ({model})" if model else "Ollama"
        return Cotenant(pid, name, used, "ollama", label,
                        "Ollama keeps a model loaded for 5 minutes after its last use: run `ollama stop "
                        f"{model or '<model>'}` now, or start Ollama with OLLAMA_KEEP_ALIVE=0")
    if "vllm" in low_name or "vllm" in line:
        util = _arg(cmdline, "--gpu-memory-utilization")
        try:
            frac = float(util) if util is not None else VLLM_DEFAULT_UTILIZATION
        except ValueError:
            frac = VLLM_DEFAULT_UTILIZATION
        return Cotenant(pid, name, used, "vllm", "vLLM server",
                        f"vLLM reserves {frac:.0%} of the card up front (--gpu-memory-utilization "
                        f"{util or VLLM_DEFAULT_UTILIZATION}): start it with a lower value to leave room")
    if "sglang" in line:
        return Cotenant(pid, name, used, "sglang", "SGLang server",
                        "SGLang reserves most of the card: start it with a lower --mem-fraction-static")
    if low_name.startswith("llama-") or "llama-server" in line or "llama_cpp" in line:
        return Cotenant(pid, name, used, "llama.cpp", "llama.cpp",
                        "llama.cpp keeps its offloaded layers on the card: stop it, or start it with fewer "
                        "--n-gpu-layers")
    if "comfy" in line or any(os.path.basename(a) == "main.py" for a in cmdline[:3]):
        return Cotenant(pid, name, used, "comfyui", "another ComfyUI",
                        f"another ComfyUI holds {gib}: use its Unload models (or POST /free), or start it with "
                        "--vram-headroom / --reserve-vram")
    if "webui" in line or "launch.py" in line or "forge" in line:
        return Cotenant(pid, name, used, "webui", "a Stable Diffusion web UI",
                        f"a web UI holds {gib}: close it or unload its model")
    if low_name in ("xorg", "gnome-shell", "kwin_x11", "kwin_wayland", "dwm.exe", "explorer.exe", "plasmashell"):
        return Cotenant(pid, name, used, "desktop", "the desktop", "")
    if not name or name.startswith("pid ") or name in ("[Not Found]", "[Insufficient Permissions]"):
        return Cotenant(pid, name or f"pid {pid}", used, "other", f"process {pid} (name hidden)",
                        "a process we cannot see holds it (another container or user): ask who runs it")
    return Cotenant(pid, name, used, "other", name, f"close {name} (pid {pid}) to free {gib}")


def describe_processes(procs, me: int | None = None) -> list[Cotenant]:
    """(pid, name, used bytes) rows -> Cotenants, the name and command line read where the system lets us."""
    out = []
    for pid, name, used in list(procs)[:MAX_PROCESSES]:
        cmdline: list[str] = []
        try:
            import psutil  # noqa: PLC0415

            p = psutil.Process(int(pid))
            name = p.name() or name
            cmdline = p.cmdline()[:64]
        except Exception:  # noqa: BLE001  (gone, another namespace, no permission: the smi name stays)
            pass
        out.append(identify(int(pid), name, [str(a)[:500] for a in cmdline], int(used), me))
    return sorted(out, key=lambda c: -c.used)


def hidden(total_used: int | None, listed: list[Cotenant], own_bytes: int = 0) -> Cotenant | None:
    """Memory the driver counts as used that no listed process holds (over 512 MiB: the driver's own share is
    less), as one "hidden" row: inside a container NVML lists no other container's processes."""
    if total_used is None:
        return None
    rest = total_used - sum(c.used for c in listed if not c.is_self) - own_bytes
    if rest <= 512 * MiB:
        return None
    return Cotenant(0, "", rest, "hidden", "processes this ComfyUI cannot see",
                    "other processes (another container, or the driver's own) hold it; `nvidia-smi` on the host "
                    "names them")


# ----------------------------------------------------------------------------------------------
# nvidia-smi, where NVML is absent
def smi_binary() -> str | None:
    return os.environ.get("VRAM_BUDGET_NVIDIA_SMI") or shutil.which("nvidia-smi")


def _smi(args: list[str]) -> str | None:
    exe = smi_binary()
    if not exe:
        return None
    try:
        res = subprocess.run([exe, *args, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout[:1_000_000] if res.returncode == 0 else None


def parse_gpus(text: str) -> list[SmiGpu]:
    """`--query-gpu=index,uuid,name,memory.total,memory.used` rows (MiB)."""
    out = []
    for row in text.splitlines()[:64]:
        parts = [p.strip() for p in row.split(",")]
        if len(parts) != 5:
            continue
        try:
            out.append(SmiGpu(int(parts[0]), parts[1], parts[2], int(float(parts[3]) * MiB), int(float(parts[4]) * MiB)))
        except ValueError:
            continue
    return out


def parse_apps(text: str) -> list[tuple[str, int, str, int]]:
    """`--query-compute-apps=gpu_uuid,pid,process_name,used_memory` rows: (uuid, pid, name, bytes)."""
    out = []
    for row in text.splitlines()[:MAX_PROCESSES * 8]:
        raw = row.split(",")
        parts = [p.strip() for p in raw]
        if len(parts) < 4:
            continue
        try:
            used = int(float(parts[-1]) * MiB)
            pid = int(parts[1])
        except ValueError:  # "[N/A]" memory (Windows WDDM) counts as 0, a pid always parses
            try:
                pid, used = int(parts[1]), 0
            except ValueError:
                continue
        out.append((parts[0], pid, ",".join(raw[2:-1]).strip(), used))
    return out


def smi_gpus() -> list[SmiGpu]:
    text = _smi(["--query-gpu=index,uuid,name,memory.total,memory.used"])
    return parse_gpus(text) if text else []


def smi_processes(gpu: SmiGpu) -> list[tuple[int, str, int]]:
    text = _smi(["--query-compute-apps=gpu_uuid,pid,process_name,used_memory"])
    if not text:
        return []
    return [(pid, name, used) for uuid, pid, name, used in parse_apps(text) if uuid == gpu.uuid]


def smi_snapshot(index: int = 0) -> dict | None:
    """GPU `index` as nvidia-smi sees it: {"name", "total", "used", "cotenants": [...]}, None without nvidia-smi."""
    gpu = next((g for g in smi_gpus() if g.index == index), None)
    if gpu is None:
        return None
    listed = describe_processes(smi_processes(gpu))
    extra = hidden(gpu.used, listed, sum(c.used for c in listed if c.is_self))
    return {"name": gpu.name, "total": gpu.total, "used": gpu.used, "source": "nvidia-smi",
            "cotenants": [c.to_dict() for c in listed + ([extra] if extra else [])]}
