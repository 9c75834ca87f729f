"""Measured against predicted, for every prompt ComfyUI runs.

For each prompt: the real peak (``torch.cuda.max_memory_reserved``, reset when the prompt starts)
next to the VRAM Budget node's prediction for that prompt id, kept in memory for the panel and
appended to a bounded JSON-lines log in ComfyUI's user directory (``user/vram_budget/runs.jsonl``).

When a prompt starts and ends: ComfyUI calls ``PromptServer.queue_updated()`` (which sends the
"status" event) every time its queue changes, on the prompt-worker thread and inside the queue's
mutex, in particular
  - ``PromptQueue.get()`` when the worker takes a prompt into ``currently_running``
    (0.8.0 execution.py:1137, 0.18.2 execution.py:1189): the prompt starts;
  - ``PromptQueue.task_done()`` after it wrote the prompt's history entry
    (0.8.0 execution.py:1165, 0.18.2 execution.py:1217): the prompt ended, and the next one has
    not started (main.py runs them one after another on that thread).
``install(server)`` wraps that one method on the server instance to observe it (the original runs
first; the observer never raises). Nothing else of ComfyUI is patched. The VRAM Budget node adds
its prediction while the prompt runs (``predict``).

Version-regression guard (issue 21): each record also carries the versions it ran under
(``versions``: ComfyUI, comfy-aimdo, torch, every custom node pack's ``pyproject.toml`` version) and
a ``workflow_key`` (``workflow_key()``: what in the prompt changes memory, not seeds or prompt text).
``find_regressions()`` compares the measured peaks of one workflow across version sets and names what
differs and what would bring the earlier figure back (the /vram_budget/runs route and the panel show it).

Pure Python: torch and ComfyUI are reached through the ``probe`` given to the tracker, so the
record and log plumbing is unit-tested with injected numbers (the versions are read lazily from
modules ComfyUI has already imported, and can be injected too).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from importlib import metadata

from . import comfy_bridge

try:
    import tomllib
except ImportError:  # pragma: no cover  (Python < 3.11: the line reader in _project_version)
    tomllib = None
from typing import Any, Callable

from .leaks import LeakWatch
from .estimator.units import GiB, MiB

log = logging.getLogger("vram_budget.run_log")

MAX_LOG_BYTES = 2 * MiB  # ~1,000 runs with their versions per file; runs.1.jsonl keeps the file before
KEEP_IN_MEMORY = 50  # newest records the panel can ask for without reading the file
LOG_SUBDIR, LOG_NAME = "vram_budget", "runs.jsonl"
NOT_MEASURED_CPU = "not measured (CPU)"  # ComfyUI runs on the CPU: there is no CUDA peak to read


# ----------------------------------------------------------------------------------------------
# Records
@dataclass
class Prediction:
    """What the VRAM Budget node predicted, in the terms the measurement uses: PyTorch's reserved
    memory (the estimate's peak minus the CUDA context, which PyTorch does not count)."""

    peak_bytes: int
    low_bytes: int | None
    high_bytes: int | None
    verdict: str
    device: str
    same_device: bool  # estimated for the GPU it ran on (not a rental card or a typed budget)
    node_id: str | None = None

    def to_dict(self) -> dict:
        return {"peak_bytes": self.peak_bytes, "low_bytes": self.low_bytes, "high_bytes": self.high_bytes,
                "verdict": self.verdict, "device": self.device, "same_device": self.same_device,
                "node_id": self.node_id}


@dataclass
class Measurement:
    reserved_peak_bytes: int  # torch.cuda.max_memory_reserved since the prompt started
    allocated_peak_bytes: int  # torch.cuda.max_memory_allocated over the same span
    device: str

    def to_dict(self) -> dict:
        return {"reserved_peak_bytes": self.reserved_peak_bytes, "allocated_peak_bytes": self.allocated_peak_bytes,
                "device": self.device}


def _g(n: int) -> str:
    return f"{n / GiB:.1f}"


def summary_line(prediction: Prediction | None, measured: Measurement | None, not_measured: str | None) -> str:
    """"predicted 22.9, measured 23.4 GiB (+0.5)"; says plainly what is missing."""
    if prediction is None and measured is None:
        return f"no prediction (add the VRAM Budget node); {not_measured or 'not measured'}"
    if prediction is None:
        return f"measured {_g(measured.reserved_peak_bytes)} GiB; no prediction (add the VRAM Budget node)"
    if measured is None:
        return f"predicted {_g(prediction.peak_bytes)} GiB; {not_measured or 'not measured'}"
    diff = measured.reserved_peak_bytes - prediction.peak_bytes
    return (f"predicted {_g(prediction.peak_bytes)}, measured {_g(measured.reserved_peak_bytes)} GiB "
            f"({'+' if diff >= 0 else '−'}{abs(diff) / GiB:.1f})")


@dataclass
class RunRecord:
    prompt_id: str
    started: float  # epoch seconds
    ended: float
    status: str  # success | error | interrupted
    prediction: Prediction | None = None
    measured: Measurement | None = None
    not_measured: str | None = None
    notes: list = field(default_factory=list)
    workflow_key: str | None = None  # workflow_key(prompt): the same workflow, run again, has the same key
    workflow_label: str | None = None  # its model files, for people ("flux1-dev.safetensors + ae.safetensors")
    versions: dict | None = None  # capture_versions(): what it ran under

    def to_dict(self) -> dict:
        error = None
        if self.prediction is not None and self.measured is not None:
            error = self.measured.reserved_peak_bytes - self.prediction.peak_bytes
        return {
            "prompt_id": self.prompt_id, "started": round(self.started, 3), "ended": round(self.ended, 3),
            "seconds": round(max(0.0, self.ended - self.started), 3), "status": self.status,
            "predicted": self.prediction.to_dict() if self.prediction else None,
            "measured": self.measured.to_dict() if self.measured else None,
            "not_measured": self.not_measured, "error_bytes": error,
            "summary": summary_line(self.prediction, self.measured, self.not_measured),
            "notes": list(self.notes),
            "workflow_key": self.workflow_key, "workflow_label": self.workflow_label, "versions": self.versions,
        }


def prediction_from_budget(budget: dict, node_id: str | None = None, context_bytes: int = 0,
                           live: bool = True) -> Prediction | None:
    """The Budget's to_dict() -> a Prediction comparable with max_memory_reserved: the replayed peak
    on this card (``predicted_peak_bytes``, which includes the CUDA context) minus the context."""
    if not isinstance(budget, dict) or "error" in budget:
        return None
    peak = budget.get("predicted_peak_bytes") or budget.get("peak_bytes")
    if not isinstance(peak, int) or peak <= 0:
        return None

    def less_context(value):
        return max(0, int(value) - context_bytes) if isinstance(value, int) and value > 0 else None

    device = (budget.get("device") or {}).get("name") or "?"
    return Prediction(peak_bytes=max(0, peak - context_bytes), low_bytes=less_context(budget.get("peak_low_bytes")),
                      high_bytes=less_context(budget.get("peak_high_bytes")), verdict=str(budget.get("verdict", "")),
                      device=str(device), same_device=bool(live), node_id=None if node_id is None else str(node_id))


# ----------------------------------------------------------------------------------------------
# The log file: JSON lines, append-only, bounded (issue 37: a large or odd prompt must never cost a record)
#   - every record is bounded before it is written: strings cut at MAX_FIELD_CHARS, lists / dicts at MAX_ITEMS,
#     the whole line at MAX_RECORD_BYTES (the versions of the custom node packs go first, then the notes);
#   - lines are only ever appended; at MAX_LOG_BYTES the file is renamed to runs.1.jsonl (the previous rotated
#     file is dropped) and a new one begins: the newest ~MAX_LOG_BYTES .. 2 x MAX_LOG_BYTES survive;
#   - a line that does not read (a crash mid-write, an edit by hand) is skipped and counted (`skipped_lines`).
MAX_FIELD_CHARS = 400
MAX_ITEMS = 64
MAX_RECORD_BYTES = 16 * 1024


def bounded(value, depth: int = 0):
    """A JSON-safe copy of `value` with strings, lists and dicts cut to their bounds."""
    if isinstance(value, str):
        return value if len(value) <= MAX_FIELD_CHARS else value[:MAX_FIELD_CHARS - 1] + "…"
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if depth > 6:
        return None
    if isinstance(value, dict):
        items = list(value.items())[:MAX_ITEMS]
        return {bounded(str(k)): bounded(v, depth + 1) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [bounded(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
    return bounded(str(value))


def record_line(record: dict) -> str:
    """The record as one bounded JSON line (no newline inside; at most MAX_RECORD_BYTES)."""
    data = bounded(record)
    line = json.dumps(data, separators=(",", ":"), allow_nan=False)
    for trim in ("versions", "notes", "workflow_label", "workflow_key"):
        if len(line.encode()) <= MAX_RECORD_BYTES:
            break
        if trim in data:
            data[trim] = None
            data.setdefault("truncated", []).append(trim)
            line = json.dumps(data, separators=(",", ":"), allow_nan=False)
    if len(line.encode()) > MAX_RECORD_BYTES:  # the core fields alone: never expected, never lost
        keep = {k: data.get(k) for k in ("prompt_id", "started", "ended", "status", "verdict", "measured", "predicted")}
        line = json.dumps({**bounded(keep), "truncated": ["record"]}, separators=(",", ":"), allow_nan=False)
    return line + "\n"


class RunLogFile:
    def __init__(self, path: str, max_bytes: int = MAX_LOG_BYTES):
        self.path, self.max_bytes = path, max_bytes
        self.rotated = path[:-len(".jsonl")] + ".1.jsonl" if path.endswith(".jsonl") else path + ".1"
        self.skipped_lines = 0
        self._lock = threading.Lock()

    def append(self, record: dict) -> None:
        line = record_line(record)
        with self._lock:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            try:
                size = os.path.getsize(self.path)
            except OSError:
                size = 0
            if size and size + len(line.encode()) > self.max_bytes:
                os.replace(self.path, self.rotated)  # atomic: the old records move, none is rewritten
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)

    def read_bytes(self) -> bytes:
        """Every record line, oldest first: the rotated file, then the current one."""
        with self._lock:
            out = b""
            for path in (self.rotated, self.path):
                try:
                    with open(path, "rb") as fh:
                        data = fh.read()
                except FileNotFoundError:
                    continue
                out += data if not data or data.endswith(b"\n") else data + b"\n"
            return out

    def records(self, limit: int) -> list[dict]:
        """The newest `limit` records, newest first (unreadable lines skipped and counted in skipped_lines)."""
        out, skipped = [], 0
        for raw in reversed(self.read_bytes().splitlines()):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except ValueError:
                skipped += 1
                continue
            if isinstance(item, dict):
                out.append(item)
            else:
                skipped += 1
            if len(out) >= limit:
                break
        self.skipped_lines = skipped
        return out


# ----------------------------------------------------------------------------------------------
# The workflow key: the same workflow, run again, has the same key
#
# What goes in, per node of the API prompt: its class_type; every input that is a link, as the input
# name + the upstream node's own key + the output slot (so the key does not depend on node ids: two
# editors that build the same graph get the same key); and the literal inputs that change memory:
#   - numbers and booleans (width, height, length, batch_size, cfg (1.0 skips the uncond pass),
#     blocks_to_swap, tile sizes, ...), except seeds (any input whose name contains "seed") and the
#     inputs in KEY_SKIP_INPUTS (steps, denoise, start/end steps, control_after_generate: more or
#     fewer steps of the same shapes, the same peak);
#   - model file names (a string ending in a model file extension), as the file's base name, so a
#     file moved into a subfolder keeps its key;
#   - short one-word strings (up to 64 characters, no whitespace: weight_dtype, precision,
#     quantization, attention mode, sampler, scheduler, ...), except the text inputs in
#     KEY_TEXT_INPUTS (a one-word prompt is still a prompt) and input image / video file names;
#   - short lists / dicts that are not links (some packs' option widgets), as canonical JSON.
# What stays out: seeds, prompt text and any other string with whitespace or over 64 characters,
# output file names, input image names, and the VRAM Budget node itself (it measures, it does not
# change the peak: a workflow with and without it has one key).
KEY_SKIP_CLASSES = frozenset({"VRAMBudget"})
KEY_SKIP_INPUTS = frozenset({"steps", "denoise", "start_at_step", "end_at_step", "start_step", "end_step",
                             "control_after_generate", "control_before_generate", "return_with_leftover_noise",
                             "add_noise", "filename_prefix", "filename", "image", "video", "audio", "upload"})
KEY_TEXT_INPUTS = frozenset({"text", "text_g", "text_l", "clip_l", "t5xxl", "prompt", "positive", "negative",
                             "positive_prompt", "negative_prompt", "system_prompt", "custom_prompt", "string",
                             "value", "delimiter", "caption"})
MODEL_FILE_EXTS = (".safetensors", ".sft", ".gguf", ".ckpt", ".pt", ".pth", ".bin", ".pt2", ".onnx")
KEY_MAX_NODES = 5000
KEY_HEX = 16  # 64 bits of sha256: plenty for one machine's workflows


def _is_link(value) -> bool:
    return (isinstance(value, list) and len(value) == 2 and isinstance(value[0], (str, int))
            and not isinstance(value[0], bool) and isinstance(value[1], int) and not isinstance(value[1], bool))


def _base_name(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _is_model_file(value: str) -> bool:
    return value.lower().endswith(MODEL_FILE_EXTS)


def _key_literal(name: str, value):
    """The value that goes into the key for a literal input, or None when it stays out."""
    lname = str(name).lower()
    if "seed" in lname or lname in KEY_SKIP_INPUTS:
        return None
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float):
        return round(value, 6) if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, str):
        if _is_model_file(value):
            return "file:" + _base_name(value)
        if lname in KEY_TEXT_INPUTS or len(value) > 64 or any(c.isspace() for c in value):
            return None
        return value
    if isinstance(value, (list, dict)):
        try:
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            return None
        return text if len(text) <= 256 else None
    return None


def _h(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _prompt_nodes(prompt) -> dict | None:
    if not isinstance(prompt, dict) or not prompt or len(prompt) > KEY_MAX_NODES:
        return None
    nodes = {str(k): v for k, v in prompt.items() if isinstance(v, dict) and isinstance(v.get("class_type"), str)}
    return nodes or None


def workflow_key(prompt) -> str | None:
    """A stable key of an API prompt's structure (see above); None for an empty or oversized prompt."""
    nodes = _prompt_nodes(prompt)
    if nodes is None:
        return None
    inputs = {nid: (n.get("inputs") if isinstance(n.get("inputs"), dict) else {}) for nid, n in nodes.items()}
    upstream = {nid: {str(v[0]) for v in inp.values() if _is_link(v) and str(v[0]) in nodes}
                for nid, inp in inputs.items()}
    # Kahn's order (iterative: a long chain must not hit the recursion limit); a cycle's nodes are
    # keyed last, with their unresolved links marked.
    waiting = {nid: len(up) for nid, up in upstream.items()}
    below: dict[str, list[str]] = {nid: [] for nid in nodes}
    for nid, up in upstream.items():
        for u in up:
            below[u].append(nid)
    ready = sorted(nid for nid, n in waiting.items() if n == 0)
    order: list[str] = []
    while ready:
        nid = ready.pop()
        order.append(nid)
        for d in below[nid]:
            waiting[d] -= 1
            if waiting[d] == 0:
                ready.append(d)
    order += sorted(set(nodes) - set(order))
    keys: dict[str, str] = {}
    for nid in order:
        literals, links = [], []
        for name, value in inputs[nid].items():
            if _is_link(value):
                links.append([str(name), keys.get(str(value[0]), "?"), value[1]])
            else:
                kept = _key_literal(name, value)
                if kept is not None:
                    literals.append([str(name), kept])
        keys[nid] = _h([nodes[nid]["class_type"], sorted(literals), sorted(links)])
    top = sorted(keys[nid] for nid in nodes if nodes[nid]["class_type"] not in KEY_SKIP_CLASSES)
    return _h(top)[:KEY_HEX] if top else None


def workflow_label(prompt, limit: int = 2) -> str | None:
    """The prompt's model files, for people: "wan2.1_t2v_14B_fp16.safetensors + umt5_xxl.safetensors"."""
    nodes = _prompt_nodes(prompt)
    if nodes is None:
        return None
    files: list[str] = []
    for nid in sorted(nodes, key=lambda k: (len(k), k)):
        inp = nodes[nid].get("inputs") if isinstance(nodes[nid].get("inputs"), dict) else {}
        for value in inp.values():
            if isinstance(value, str) and len(value) <= 1024 and _is_model_file(value) and _base_name(value) not in files:
                files.append(_base_name(value)[:160])
    if not files:
        return None
    more = len(files) - limit
    return " + ".join(files[:limit]) + (f" (+{more} more)" if more > 0 else "")


# ----------------------------------------------------------------------------------------------
# The versions a run ran under (cached per process: a new version needs a restart to load anyway)
MAX_PACKS = 64  # custom node packs recorded per run; the rest are counted in custom_nodes_omitted
MAX_PYPROJECT_BYTES = 256 * 1024
MAX_VERSION_CHARS = 64
_SKIP_PACK_DIRS = {"__pycache__", "node_modules"}


def _dist_version(*names: str) -> str | None:
    for name in names:
        try:
            return str(metadata.version(name))[:MAX_VERSION_CHARS]
        except Exception:  # noqa: BLE001  (PackageNotFoundError, a broken dist-info)
            continue
    return None


def torch_version() -> str | None:
    """torch's version, without importing torch (ComfyUI has, when it matters)."""
    mod = sys.modules.get("torch")
    version = getattr(mod, "__version__", None) if mod is not None else None
    return str(version)[:MAX_VERSION_CHARS] if version else _dist_version("torch")


def _project_version(text: str) -> str | None:
    """[project] version of a pyproject.toml (tomllib; a line reader where it is missing or the
    file is not valid TOML, for the simple `version = "1.2.3"` that packs write)."""
    if tomllib is not None:
        try:
            version = (tomllib.loads(text).get("project") or {}).get("version")
            return (str(version)[:MAX_VERSION_CHARS] if isinstance(version, (str, int, float)) and str(version)
                    else None)
        except Exception:  # noqa: BLE001  (invalid TOML: try the plain line)
            pass
    section = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[] \t")
            continue
        m = re.match(r"""version\s*=\s*["']([^"']{1,64})["']""", line)
        if section == "project" and m:
            return m.group(1)
    return None


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), root]) == root
    except ValueError:
        return False


def pack_version(pack_dir: str, root: str) -> str | None:
    """custom_nodes/<pack>/pyproject.toml [project] version; None when there is none, it cannot be
    read, it is too big, or it (or the pack folder, a link) lies outside the custom_nodes folder."""
    path = os.path.join(pack_dir, "pyproject.toml")
    try:
        if not _inside(path, root) or not os.path.isfile(path):
            return None
        with open(path, "rb") as fh:
            raw = fh.read(MAX_PYPROJECT_BYTES + 1)
        if len(raw) > MAX_PYPROJECT_BYTES:
            return None
        return _project_version(raw.decode("utf-8", errors="replace"))
    except Exception:  # noqa: BLE001  (never let a pack's file break the log)
        return None


def scan_custom_nodes(dirs, limit: int = MAX_PACKS) -> tuple[dict, int]:
    """({pack folder name: version or None}, how many packs were left out past `limit`), for the
    pack folders directly inside ComfyUI's custom_nodes folders (hidden, *.disabled and
    __pycache__ folders skipped; the first folder wins a name found twice)."""
    packs: dict[str, str | None] = {}
    omitted = 0
    for d in list(dirs or [])[:8]:
        try:
            root = os.path.realpath(str(d))
            with os.scandir(root) as it:
                entries = sorted((e for e in it if e.is_dir()), key=lambda e: e.name.lower())
        except Exception:  # noqa: BLE001  (missing or unreadable folder)
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in _SKIP_PACK_DIRS or name.endswith(".disabled") or name in packs:
                continue
            if len(packs) >= limit:
                omitted += 1
                continue
            packs[name[:128]] = pack_version(os.path.join(root, name), root)
    return packs, omitted


def custom_node_dirs() -> list[str]:
    """ComfyUI's custom_nodes folders (folder_paths, when ComfyUI has imported it)."""
    fp = sys.modules.get("folder_paths")
    try:
        return [str(p) for p in fp.get_folder_paths("custom_nodes")] if fp is not None else []
    except Exception:  # noqa: BLE001
        return []


def capture_versions(comfy_version: Callable[[], str | None] | None = None, dirs=None,
                     limit: int = MAX_PACKS) -> dict:
    """{"comfyui", "comfy_aimdo", "torch", "custom_nodes": {pack: version}, "custom_nodes_omitted"}."""
    if comfy_version is None:
        comfy_version = comfy_bridge.comfy_version
    try:
        comfy = comfy_version()
    except Exception:  # noqa: BLE001
        comfy = None
    packs, omitted = scan_custom_nodes(custom_node_dirs() if dirs is None else dirs, limit)
    return {"comfyui": None if comfy is None else str(comfy)[:MAX_VERSION_CHARS],
            "comfy_aimdo": _dist_version("comfy-aimdo", "comfy_aimdo"), "torch": torch_version(),
            "custom_nodes": packs, "custom_nodes_omitted": omitted}


_VERSIONS: dict | None = None
_VERSIONS_LOCK = threading.Lock()


def installed_versions() -> dict | None:
    """capture_versions(), once per process (None if that fails: the record is written without)."""
    global _VERSIONS
    with _VERSIONS_LOCK:
        if _VERSIONS is None:
            try:
                _VERSIONS = capture_versions()
            except Exception:  # noqa: BLE001
                log.exception("[VRAM Budget] could not read the installed versions")
                return None
        return _VERSIONS


def clear_version_cache() -> None:
    global _VERSIONS
    with _VERSIONS_LOCK:
        _VERSIONS = None


# ----------------------------------------------------------------------------------------------
# The version-regression guard
REGRESSION_MIN_RATIO = 0.15  # the later peak is at least 15 % above the earlier one ...
REGRESSION_MIN_BYTES = GiB  # ... and at least 1 GiB above it
REGRESSION_SCAN = 2000  # newest records the guard reads
MAX_REGRESSIONS = 10
DYNAMIC_VRAM_FROM = (0, 16)  # ComfyUI turns Dynamic VRAM on by default for NVIDIA from 0.16 (main.py)
PINNED_MEMORY_FROM = (0, 4)  # ComfyUI pins offloaded weights since 0.4 (not in 0.3.64)
_DYNAMIC_NOTE_START = "Dynamic VRAM:"  # routes.DYNAMIC_NOTE, added to a record measured under it
COMPONENT_NAMES = {"comfyui": "ComfyUI", "comfy_aimdo": "comfy-aimdo", "torch": "torch"}


def _vtuple(version) -> tuple | None:
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(version or ""))
    return tuple(int(g or 0) for g in m.groups()) if m else None


def version_differences(before: dict, after: dict) -> list[dict]:
    """What differs between two versions dicts: [{"component", "name", "before", "after",
    "installed_before", "installed_after"}]; a pack only in one of them counts unless the other
    record left packs out (past MAX_PACKS)."""
    out = []
    for comp in ("comfyui", "comfy_aimdo", "torch"):
        a, b = before.get(comp), after.get(comp)
        if a != b:
            out.append({"component": comp, "name": COMPONENT_NAMES[comp], "before": a, "after": b,
                        "installed_before": a is not None, "installed_after": b is not None})
    pa = before.get("custom_nodes") if isinstance(before.get("custom_nodes"), dict) else {}
    pb = after.get("custom_nodes") if isinstance(after.get("custom_nodes"), dict) else {}
    truncated = bool(before.get("custom_nodes_omitted")) or bool(after.get("custom_nodes_omitted"))
    for name in sorted(set(pa) | set(pb), key=str.lower):
        if (name in pa) != (name in pb) and truncated:
            continue
        if name in pa and name in pb and pa[name] == pb[name]:
            continue
        out.append({"component": "custom_node", "name": name, "before": pa.get(name), "after": pb.get(name),
                    "installed_before": name in pa, "installed_after": name in pb})
    return out


def _ver_text(diff: dict, side: str) -> str:
    if not diff["installed_" + side]:
        return "not installed"
    return diff[side] if diff[side] is not None else "an unknown version"


def _side_text(diffs: list[dict], side: str, with_names: bool) -> str:
    shown = diffs[:3]
    parts = [(f"{d['name']} {_ver_text(d, side)}" if with_names else _ver_text(d, side)) for d in shown]
    if len(diffs) > len(shown):
        parts.append(f"{len(diffs) - len(shown)} more")
    return " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else parts[0]


def restore_steps(diffs: list[dict]) -> list[dict]:
    """What brings the earlier versions back, one step per difference."""
    steps = []
    for d in diffs:
        if not d["installed_before"]:
            steps.append({"name": d["name"], "action": "remove", "text": f"removing {d['name']}"})
        elif not d["installed_after"]:
            steps.append({"name": d["name"], "action": "reinstall", "to": d["before"],
                          "text": f"reinstalling {d['name']}" + (f" {d['before']}" if d["before"] else "")})
        else:
            to = d["before"] or "its earlier version"
            steps.append({"name": d["name"], "action": "pin", "to": d["before"], "text": f"pinning {d['name']} back to {to}"})
    return steps


def flag_suggestions(diffs: list[dict], before_rec: dict, after_rec: dict) -> list[dict]:
    """Known ComfyUI flags that may restore the earlier peak (suggestions: the measurement cannot
    say which change did it)."""
    out = []
    by = {d["component"]: d for d in diffs}
    comfy = by.get("comfyui")
    later = _vtuple((after_rec.get("versions") or {}).get("comfyui"))
    earlier = _vtuple((before_rec.get("versions") or {}).get("comfyui"))

    def dynamic_note(rec):
        return any(isinstance(n, str) and n.startswith(_DYNAMIC_NOTE_START) for n in rec.get("notes") or [])

    why = None
    if "comfy_aimdo" in by:
        why = "comfy-aimdo changed"
    elif dynamic_note(after_rec) and not dynamic_note(before_rec):
        why = "the later run used Dynamic VRAM, the earlier one did not"
    elif comfy and later and later >= DYNAMIC_VRAM_FROM and (earlier is None or earlier < DYNAMIC_VRAM_FROM):
        why = f"ComfyUI {comfy['after']} turns Dynamic VRAM on by default on NVIDIA"
    if why and (later is None or later >= DYNAMIC_VRAM_FROM):
        out.append({"flag": "--disable-dynamic-vram", "why": why})
    if comfy and (later is None or later >= PINNED_MEMORY_FROM):
        out.append({"flag": "--disable-pinned-memory", "why": "if ComfyUI's pinned memory is what changed"})
    return out


def _measured_peak(rec: dict) -> int | None:
    peak = (rec.get("measured") or {}).get("reserved_peak_bytes") if isinstance(rec.get("measured"), dict) else None
    return peak if isinstance(peak, int) and not isinstance(peak, bool) and peak > 0 else None


def _versions_sig(versions: dict) -> str:
    return json.dumps(versions, sort_keys=True, separators=(",", ":"), default=str)


def regression_sentence(entry: dict) -> str:
    diffs, before, after = entry["differs"], entry["before"], entry["after"]
    label = entry.get("workflow_label")
    who = f"The workflow {label} ({entry['workflow_key'][:8]})" if label else f"Workflow {entry['workflow_key'][:8]}"
    text = (f"{who} peaked at {before['peak_bytes'] / GiB:.2f} GiB on {_side_text(diffs, 'before', True)}, "
            f"{after['peak_bytes'] / GiB:.2f} GiB on {_side_text(diffs, 'after', len(diffs) > 1)} "
            f"(+{entry['change_ratio'] * 100:.0f} %); ")
    steps = [s["text"] for s in entry["restore"]]
    text += (" and ".join([", ".join(steps[:-1]), steps[-1]]) if len(steps) > 1 else steps[0])
    text += " should bring the earlier figure back"
    flags = entry["flags"]
    if flags:
        text += ", and " + " or ".join(f"{f['flag']} may help ({f['why']})" for f in flags)
    return text + "."


def find_regressions(records, min_ratio: float = REGRESSION_MIN_RATIO, min_bytes: int = REGRESSION_MIN_BYTES,
                     limit: int = MAX_REGRESSIONS) -> list[dict]:
    """For each workflow (by key): its newest successful measured run against the newest earlier run
    of the same workflow on the same device under other versions whose peak it exceeds by
    ≥ min_ratio and ≥ min_bytes (the most recent such run: the fewest differences to blame). A
    peak that fell is no regression. Newest first, at most `limit`."""
    usable = []
    for rec in records or []:
        if not isinstance(rec, dict) or rec.get("status") != "success":
            continue
        key, versions, peak = rec.get("workflow_key"), rec.get("versions"), _measured_peak(rec)
        if isinstance(key, str) and key and isinstance(versions, dict) and peak is not None:
            usable.append(rec)
    usable.sort(key=lambda r: (r.get("ended") or 0) if isinstance(r.get("ended"), (int, float)) else 0)
    by_key: dict[str, list[dict]] = {}
    for rec in usable:
        by_key.setdefault(rec["workflow_key"], []).append(rec)
    out = []
    for key, runs in by_key.items():
        after = runs[-1]
        sig, peak, device = _versions_sig(after["versions"]), _measured_peak(after), after["measured"].get("device")
        for before in reversed(runs[:-1]):
            if _versions_sig(before["versions"]) == sig or before["measured"].get("device") != device:
                continue
            old = _measured_peak(before)
            if peak - old < max(min_bytes, min_ratio * old):
                continue
            diffs = version_differences(before["versions"], after["versions"])
            if not diffs:
                continue
            entry = {"workflow_key": key, "workflow_label": after.get("workflow_label") or before.get("workflow_label"),
                     "before": {"peak_bytes": old, "prompt_id": before.get("prompt_id"), "ended": before.get("ended")},
                     "after": {"peak_bytes": peak, "prompt_id": after.get("prompt_id"), "ended": after.get("ended")},
                     "change_bytes": peak - old, "change_ratio": round((peak - old) / old, 4), "differs": diffs,
                     "restore": restore_steps(diffs), "flags": flag_suggestions(diffs, before, after)}
            entry["sentence"] = regression_sentence(entry)
            out.append(entry)
            break
    out.sort(key=lambda e: e["after"]["ended"] or 0, reverse=True)
    return out[:limit]


# ----------------------------------------------------------------------------------------------
# The tracker
class PeakProbe:
    """Reads and resets PyTorch's peak on ComfyUI's compute device (None/no-op without CUDA)."""

    def __init__(self, device_fn: Callable[[], Any]):
        self._device_fn = device_fn

    def _cuda(self):
        try:
            dev = self._device_fn()
            if getattr(dev, "type", "") != "cuda":
                return None, None
            import torch  # noqa: PLC0415

            return (torch, dev) if torch.cuda.is_available() else (None, None)
        except Exception:
            return None, None

    def reset(self) -> None:
        torch, dev = self._cuda()
        if torch is not None:
            torch.cuda.reset_peak_memory_stats(dev)

    def read(self) -> Measurement | None:
        torch, dev = self._cuda()
        if torch is None:
            return None
        return Measurement(int(torch.cuda.max_memory_reserved(dev)), int(torch.cuda.max_memory_allocated(dev)), str(dev))

    def current_peak(self) -> int | None:
        """Peak reserved since the running (or last) prompt started, for the live readout."""
        torch, dev = self._cuda()
        return None if torch is None else int(torch.cuda.max_memory_reserved(dev))


class RunTracker:
    """Follows prompts through queue_updated() calls and records each one when it ends."""

    def __init__(self, probe, logfile: RunLogFile | None, clock: Callable[[], float] = time.time,
                 on_record: Callable[[dict], None] | None = None, on_start: Callable[[str], None] | None = None,
                 on_end: Callable[[str, dict], None] | None = None, notes: Callable[[], list] | None = None,
                 versions: Callable[[], dict | None] | None = None,
                 baseline: Callable[[str, dict | None], Any] | None = None):
        self.probe, self.logfile, self.clock, self.notes = probe, logfile, clock, notes
        self.baseline = baseline  # (prompt_id, prompt) -> leaks.Baseline after each prompt
        self.leaks = LeakWatch()
        self.on_record, self.on_start, self.on_end = on_record, on_start, on_end
        self.versions = installed_versions if versions is None else versions
        self.current: str | None = None
        self.current_prompt: dict | None = None
        self.started = 0.0
        self._regressions: tuple | None = None  # (log size, mtime, result): the guard reads the file once per change
        self.predictions: dict[str, Prediction] = {}
        self.recent: deque = deque(maxlen=KEEP_IN_MEMORY)
        self.runs_recorded = 0
        self._lock = threading.RLock()

    # -- called by the hook ------------------------------------------------------------------
    def prompt_started(self, prompt_id: str, prompt: dict | None = None) -> None:
        with self._lock:
            self.current, self.started = prompt_id, self.clock()
            self.current_prompt = prompt if isinstance(prompt, dict) else None
            self.predictions = {k: v for k, v in self.predictions.items() if k == prompt_id}
        self.probe.reset()
        if self.on_start is not None:
            self.on_start(prompt_id)

    def prompt_ended(self, prompt_id: str, history_entry: dict | None = None) -> dict:
        measured = self.probe.read()
        versions = self._versions()
        with self._lock:
            started = self.started if prompt_id == self.current else self.clock()
            prompt = history_prompt(history_entry) or (self.current_prompt if prompt_id == self.current else None)
            record = RunRecord(prompt_id=prompt_id, started=started, ended=self.clock(),
                               status=history_status(history_entry), prediction=self.predictions.pop(prompt_id, None),
                               measured=measured, not_measured=None if measured else NOT_MEASURED_CPU,
                               workflow_key=_safe(workflow_key, prompt), workflow_label=_safe(workflow_label, prompt),
                               versions=versions)
            if record.prediction is not None and not record.prediction.same_device:
                record.notes.append(f"the prediction was for {record.prediction.device}, not the GPU this ran on")
            if measured is not None and self.notes is not None:
                record.notes.extend(self.notes())
            if self.current == prompt_id:
                self.current, self.current_prompt = None, None
            data = record.to_dict()
            self._watch(prompt_id, prompt, data)
            self.recent.appendleft(data)
            self.runs_recorded += 1
        self._write(data)
        if self.on_end is not None:
            self.on_end(prompt_id, history_entry or {})
        return data

    def _watch(self, prompt_id: str, prompt: dict | None, data: dict) -> None:
        """The baseline after this prompt (leaks.py); a creep across runs goes into the record and the log."""
        if self.baseline is None:
            return
        try:
            b = self.baseline(prompt_id, prompt)
        except Exception:  # noqa: BLE001  (never lose the record for its baseline)
            log.exception("[VRAM Budget] could not measure the baseline after prompt %s", prompt_id)
            return
        if b is None:
            return
        data["baseline"] = b.to_dict()
        flag = self.leaks.add(b)
        if flag is not None:
            data["leak"] = flag
            log.warning("[VRAM Budget] %s. Fix: %s", flag["text"], "; ".join(flag["fixes"]))

    def _versions(self) -> dict | None:
        try:
            versions = self.versions()
            return dict(versions) if isinstance(versions, dict) else None
        except Exception:  # noqa: BLE001  (never lose the record for its versions)
            log.exception("[VRAM Budget] could not read the installed versions")
            return None

    def _write(self, data: dict) -> None:
        if self.logfile is not None:
            try:
                self.logfile.append(data)
            except OSError as exc:
                log.warning("[VRAM Budget] could not write the run log %s: %s", self.logfile.path, exc)
        if self.on_record is not None:
            self.on_record(data)

    # -- called by the VRAM Budget node --------------------------------------------------------
    def predict(self, prediction: Prediction, prompt_id: str | None = None) -> str | None:
        """Attach a prediction to the running prompt (or `prompt_id`); returns the id used."""
        with self._lock:
            pid = prompt_id or self.current
            if pid is not None:
                self.predictions[pid] = prediction
            return pid

    def records(self, limit: int = 20) -> list[dict]:
        with self._lock:
            recent = list(self.recent)[:limit]
        if len(recent) >= limit or self.logfile is None:
            return recent
        return self.logfile.records(limit)  # after a restart the file still has them

    def regressions(self) -> list[dict]:
        """find_regressions() over the log (the newest REGRESSION_SCAN records; the in-memory ones
        without a log file), recomputed only when the file changed."""
        if self.logfile is None:
            with self._lock:
                recent = list(self.recent)
            return find_regressions(recent)
        try:
            st = os.stat(self.logfile.path)
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = (0, 0)
        cached = self._regressions
        if cached is not None and cached[:2] == stamp:
            return cached[2]
        result = find_regressions(self.logfile.records(REGRESSION_SCAN))
        self._regressions = (*stamp, result)
        return result


def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001  (a strange prompt gets no key, never a lost record)
        log.exception("[VRAM Budget] %s failed", getattr(fn, "__name__", fn))
        return None


def history_prompt(entry: dict | None) -> dict | None:
    """The API prompt of a history entry: {"prompt": (number, prompt_id, prompt, extra_data, outputs)}
    (0.8.0 and 0.18.2 execution.py task_done)."""
    item = (entry or {}).get("prompt") if isinstance(entry, dict) else None
    if isinstance(item, (list, tuple)) and len(item) > 2 and isinstance(item[2], dict) and item[2]:
        return item[2]
    return None


def history_status(entry: dict | None) -> str:
    """success | error | interrupted, from a history entry's status (messages keep the reason)."""
    status = (entry or {}).get("status") or {}
    for message in status.get("messages") or []:
        if isinstance(message, (list, tuple)) and message and message[0] == "execution_interrupted":
            return "interrupted"
    text = status.get("status_str")
    return text if text in ("success", "error") else "unknown"


# ----------------------------------------------------------------------------------------------
# The hook on a live ComfyUI server
class QueueObserver:
    """Diffs the prompt ids in ``queue.currently_running`` at every queue_updated() call."""

    def __init__(self, queue_fn: Callable[[], Any], tracker: RunTracker):
        self.queue_fn, self.tracker = queue_fn, tracker
        self.running: set[str] = set()

    def __call__(self) -> None:
        queue = self.queue_fn()
        if queue is None:
            return
        items = {str(item[1]): item for item in list(queue.currently_running.values()) if len(item) > 1}
        now = set(items)
        for pid in sorted(now - self.running):
            item = items[pid]
            self.tracker.prompt_started(pid, item[2] if len(item) > 2 and isinstance(item[2], dict) else None)
        for pid in sorted(self.running - now):
            self.tracker.prompt_ended(pid, queue.history.get(pid))
        self.running = now


def install(server, tracker: RunTracker) -> bool:
    """Observe ``server.queue_updated`` (see the module doc); False when already installed."""
    if getattr(server, "_vram_budget_run_tracker", None) is not None:
        return False
    observer = QueueObserver(lambda: getattr(server, "prompt_queue", None), tracker)
    original = server.queue_updated

    def queue_updated(*args, **kwargs):
        result = original(*args, **kwargs)
        try:
            observer()
        except Exception:  # never break ComfyUI's queue
            log.exception("[VRAM Budget] run tracking failed")
        return result

    server.queue_updated = queue_updated
    server._vram_budget_run_tracker = tracker
    return True


def log_path(user_dir: str) -> str:
    return os.path.join(user_dir, LOG_SUBDIR, LOG_NAME)


TRACKER: RunTracker | None = None  # set by routes.py inside a running ComfyUI


def predict(prediction: Prediction | None) -> str | None:
    """For the VRAM Budget node: attach its prediction to the running prompt (no-op outside a server)."""
    if prediction is None or TRACKER is None:
        return None
    return TRACKER.predict(prediction)
