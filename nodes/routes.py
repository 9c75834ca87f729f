"""HTTP routes for the VRAM sidebar panel, all under ``/vram_budget/`` (ComfyUI mirrors each
route under ``/api/vram_budget/``; the frontend calls the ``/api`` form via ``api.fetchApi``).

GET  /vram_budget/status       devices (one bar per CUDA device), RAM, memory mode, loaded models,
                               what each unload button would free
POST /vram_budget/unload       {"model": index | id}: unload one model, only while ComfyUI is idle
POST /vram_budget/unload_all   ComfyUI's own /free mechanism (unload_models flag), measured
POST /vram_budget/free_cache   the same plus the node-output cache (free_memory flag), measured
GET  /vram_budget/last_oom     the newest OOM execution_error in ComfyUI's history, diagnosed
POST /vram_budget/parse_oom    {"message", "exception_type", "node_type"?, "prompt"?, "install"?} -> diagnosis (oom.py)
POST /vram_budget/estimate     {"prompt": API prompt, "workflow"?: UI workflow, "card"?: name,
                               "gpus"?: [more card names, cuda:1 on]} -> Budget (with several cards: placement_plan)
POST /vram_budget/fits         the same request -> the short answer for agents (FITS_FIELDS, docs/agent-api.md):
                               will it run here, how long, the risk, the fixes, what is free now
GET  /vram_budget/admission    holding queued prompts until they fit (admission.py): on/off, the held prompt, events
POST /vram_budget/admission    {"enabled": bool} | {"fixes": bool} | {"release": prompt_id} (run anyway) | {"cancel": id}
GET  /vram_budget/cards        the estimator's card catalogue (the panel's "estimate for" choice) and,
                               as "default", what no choice estimates for (this GPU / system memory)
GET  /vram_budget/readout      the top-bar readout: used / total of the compute device, the peak of
                               the running (or last) prompt, the newest measured-vs-predicted run
GET  /vram_budget/runs         ?limit=N (1-200): measured against predicted, newest first (run_log.py)
GET  /vram_budget/runs/export  the whole run log as JSON lines (a download)

Every answer is JSON; every error is {"error": message} with a 4xx status, never a stack trace.
The estimator is imported with this module: a broken estimator fails the module's import, which
the pack's registry logs with its traceback while ComfyUI loads on (no route answers "not available"). Work that can take more than a millisecond runs in
the default executor, off the event loop.

Threading (main.py prompt_worker): models belong to the prompt-worker thread. Unloading ONE model
is done here only when the worker is parked in ``PromptQueue.get()``: the route holds the
queue's mutex, so the worker cannot start a prompt (``get`` needs the mutex to return) and, being
a waiter of ``not_empty``, is provably not inside ``free_memory`` or a flag handler. Otherwise the
answer is 409 "busy". Unload-all and free-cache set ComfyUI's own /free flags, so the worker does
the work itself (after the running prompt when busy) and ComfyUI's state stays consistent.

The last OOM is read from ComfyUI's prompt history (``status.messages`` keeps every
``execution_error``), not from a wrapped ``send_sync``: the history also has errors of prompts
queued without a websocket client (API use, where ``send_sync`` is never called), survives page
reloads, and needs no monkey-patching of the server.

This module imports without ComfyUI (the pure helpers are unit-tested); it registers routes only
inside a running ComfyUI, once.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import admission
from . import comfy_bridge as bridge
from . import cotenants
from . import run_log
from .estimator.errors import VramBudgetError
from .estimator.machine.gpus import CARDS
from .estimator.plan.oom import context_for_prompt, guess_install, is_oom_message, parse_oom
from .estimator.cli.agent import FITS_FIELDS, MAX_FIXES, fits_answer  # noqa: F401  (public names of this module)
from .estimator.plan.planning import estimate_prompt
from .estimator.units import GiB, MiB, fmt_gib
from .live_models import live_hooks, prewarm
from .model_names import ModelNames

try:
    from aiohttp import web
except ImportError:  # only outside ComfyUI (unit tests of the helpers)
    web = None  # type: ignore[assignment]

log = logging.getLogger("vram_budget.routes")

PREFIX = "/vram_budget"
NO_CUDA_MESSAGE = "no CUDA device: ComfyUI runs on the CPU"
# The panel flags PyTorch's reserved-but-unallocated cache from 2 GiB on: FACTS.md calls
# "several GiB" of it fragmentation (oom.FRAGMENTATION_BYTES uses the same figure).
FRAGMENTATION_FLAG_BYTES = 2 * GiB
FRAGMENTATION_FIX = (
    "PyTorch holds {cache} in its cache that it is not using. If prompts fail with out-of-memory while "
    "this is large, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before starting ComfyUI (newer "
    "PyTorch also reads PYTORCH_ALLOC_CONF; older ones: max_split_size_mb:128) together with "
    "--disable-cuda-malloc (cudaMallocAsync ignores it). \"Free cache\" returns it to the driver now."
)
# Request bodies: an API prompt of a 500-node workflow is ~200 KB; the UI workflow can carry
# embedded images. 32 MiB is generous and still bounded.
MAX_BODY_BYTES = 32 * MiB
MAX_PROMPT_NODES = 10_000
MAX_EXTRA_CARDS = 7  # "gpus" in an estimate request: cuda:1 .. cuda:7
MAX_OOM_MESSAGE_CHARS = 64 * 1024  # an OOM message with its traceback is a few KB; a longer paste: head + tail
MAX_OOM_PROMPT_NODES = 2000  # the prompt /parse_oom reads for context: a real workflow's size
MAX_ANSWER_STRING = 1000  # a string of an answer (a model name an attacker made 8 MB long) is cut here
# How long unload_all / free_cache wait for the idle worker to finish before answering
# "scheduled" instead of measured numbers. Unloading 24 GB of weights to RAM takes ~2-5 s.
ACTION_WAIT_S = 30.0
MODEL_KEY_RE = re.compile(r"^[0-9a-f]{1,16}$")
# History entries scanned for the last OOM (newest first).
LAST_OOM_SCAN = 64


# ----------------------------------------------------------------------------------------------
# Pure helpers (no ComfyUI, no aiohttp): the numbers the panel draws.
def device_bar(total: int, driver_free: int | None, torch_reserved: int, torch_allocated: int,
               dynamic_weights: int = 0) -> dict:
    """Split a card like nvidia-smi: allocated | reserved-unallocated | dynamic | other | free.

    other = total - driver free - torch reserved (- comfy-aimdo's weights), clamped >= 0: other
    processes plus this process's non-PyTorch memory (CUDA context, cuBLAS workspace).
    """
    allocated = max(0, int(torch_allocated))
    reserved_unallocated = max(0, int(torch_reserved) - allocated)
    bar = {"total": int(total), "allocated": allocated, "reserved_unallocated": reserved_unallocated,
           "dynamic_weights": max(0, int(dynamic_weights)), "other": None, "free": None}
    if driver_free is not None:
        free = max(0, min(int(driver_free), int(total)))
        bar["free"] = free
        bar["other"] = max(0, int(total) - free - int(torch_reserved) - bar["dynamic_weights"])
    return bar


def fragmentation_flag(reserved_unallocated: int) -> dict | None:
    if reserved_unallocated < FRAGMENTATION_FLAG_BYTES:
        return None
    return {"bytes": reserved_unallocated, "fix": FRAGMENTATION_FIX.format(cache=fmt_gib(reserved_unallocated))}


def model_unload_frees(device_type: str, loaded: int) -> int:
    """VRAM an unload gives back: the loaded bytes on a GPU; nothing on the CPU (weights stay in RAM)."""
    return 0 if device_type == "cpu" else max(0, int(loaded))


def would_free(models: list[dict], compute_device: str, torch_cache: int) -> dict:
    """What "Unload all models" and "Free cache" would free, from a status snapshot.

    ComfyUI's unload_all_models unloads the models of the compute device only, then empties
    torch's cache (soft_empty_cache). Free cache also drops the node-output cache, which releases
    the RAM of weights nothing else holds: "up to" the size of every tracked model.
    """
    on_device = [m for m in models if m["device"] == compute_device]
    vram = sum(m["unload_frees"] for m in on_device) + max(0, int(torch_cache))
    return {
        "unload_all": {"vram": vram, "models": len(on_device)},
        "free_cache": {"vram": vram, "models": len(on_device), "ram_up_to": sum(m["size"] for m in models)},
    }


def parse_model_ref(value: Any) -> int | str:
    """The "model" field of /unload: an index (int) or an id from /status (hex string)."""
    if isinstance(value, bool) or value is None:
        raise ValueError("\"model\" must be a model index (integer) or id (string) from /vram_budget/status")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("\"model\" index must be >= 0")
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if MODEL_KEY_RE.fullmatch(text):
            return text
        raise ValueError("\"model\" must be a model index or an id from /vram_budget/status, not a name or path")
    raise ValueError("\"model\" must be a model index (integer) or id (string) from /vram_budget/status")


def validate_prompt(prompt: Any) -> None:
    """An API prompt: {node_id: {"class_type": str, "inputs": dict}}."""
    if not isinstance(prompt, dict):
        raise ValueError("\"prompt\" must be an object {node_id: {class_type, inputs}}")
    if len(prompt) > MAX_PROMPT_NODES:
        raise ValueError(f"\"prompt\" has {len(prompt)} nodes; at most {MAX_PROMPT_NODES} are accepted")
    for node_id, node in prompt.items():
        if not isinstance(node, dict) or not isinstance(node.get("class_type"), str):
            raise ValueError(f"\"prompt\" node {str(node_id)[:40]!r} has no class_type")
        if "inputs" in node and not isinstance(node["inputs"], dict):
            raise ValueError(f"\"prompt\" node {str(node_id)[:40]!r}: inputs must be an object")


def validate_workflow(workflow: Any) -> None:
    if not isinstance(workflow, dict) or not isinstance(workflow.get("nodes"), list):
        raise ValueError("\"workflow\" must be a UI workflow object with a \"nodes\" list")
    if len(workflow["nodes"]) > MAX_PROMPT_NODES:
        raise ValueError(f"\"workflow\" has more than {MAX_PROMPT_NODES} nodes")


def oom_context(prompt: Any):
    """What the failed workflow was (model families, batch, frames, tiling...) so that the help
    leaves out remedies that cannot apply to it (oom.context_for_prompt; never raises)."""
    if not isinstance(prompt, dict):
        return None
    try:
        return context_for_prompt(prompt, bridge.model_resolver(), install=guess_install(sys.argv))
    except Exception:  # noqa: BLE001 - the help without context is still the help
        return None


def oom_record(data: dict, prompt: Any = None) -> dict | None:
    """An execution_error payload (and the prompt that failed, when known) -> the panel's
    last-OOM record, or None when it is no OOM."""
    if not isinstance(data, dict):
        return None
    message = data.get("exception_message")
    etype = data.get("exception_type")
    message = message if isinstance(message, str) else ""
    etype = etype if isinstance(etype, str) else None
    if not ((etype or "").endswith("OutOfMemoryError") or "out of memory" in message.lower()
            or "allocation on device" in message.lower() or is_oom_message(message, etype)):
        return None  # neither a GPU nor a system-RAM out-of-memory
    node_type = data.get("node_type") if isinstance(data.get("node_type"), str) else None
    diagnosis = parse_oom(message, etype, node_type=node_type, context=oom_context(prompt))
    if not diagnosis.is_oom:
        return None
    return {
        "prompt_id": data.get("prompt_id"),
        "node_id": data.get("node_id"),
        "node_type": node_type,
        "timestamp": data.get("timestamp"),
        "exception_type": etype,
        "diagnosis": diagnosis.to_dict(),
    }


# ----------------------------------------------------------------------------------------------
# Reading ComfyUI (through comfy_bridge) into the status document.
# Which file each loaded model came from when ComfyUI does not record it (model_names.py); fed by
# the run tracker's prompt start/end hook, set up in register().
MODEL_NAMES: ModelNames | None = None


def _model_file(m: bridge.LoadedModelInfo) -> tuple[str | None, str | None]:
    if m.file:
        return m.file, "comfyui"
    found = MODEL_NAMES.name_for(m.key) if MODEL_NAMES is not None else None
    return (found, "workflow") if found else (None, None)


def _model_dict(m: bridge.LoadedModelInfo) -> dict:
    fully = m.loaded >= m.size if m.size else True
    file, file_source = _model_file(m)
    return {
        "id": m.key, "index": m.index, "name": m.name, "file": file, "file_source": file_source, "type": m.type,
        "device": m.device,
        "device_type": m.device_type, "size": m.size, "loaded": m.loaded, "fully_loaded": bool(fully),
        "currently_used": m.currently_used, "dynamic": m.dynamic,
        "unload_frees": model_unload_frees(m.device_type, m.loaded),
    }


def build_status(queue=None) -> dict:
    t0 = time.perf_counter()
    state = bridge.device_state()
    dyn = bridge.dynamic_vram_status()
    mode = "dynamic" if dyn.enabled else bridge.memory_mode()
    cuda = bridge.cuda_devices()
    devices = []
    compute_cache = 0
    for d in cuda:
        bar = device_bar(d.total, d.driver_free, d.torch_reserved, d.torch_allocated,
                         (dyn.aimdo_bytes or 0) if d.is_compute_device else 0)
        entry = {"index": d.index, "name": d.name, "type": "cuda", "is_compute_device": d.is_compute_device,
                 "source": d.source, **bar, "fragmentation": fragmentation_flag(bar["reserved_unallocated"])}
        procs = bridge.gpu_processes(d)
        if procs is not None:
            entry["processes"] = [{"pid": p.pid, "name": p.name, "used": p.used, "self": p.is_self} for p in procs]
            named = cotenants.describe_processes([(p.pid, p.name, p.used) for p in procs])
            extra = cotenants.hidden(d.total - d.driver_free if d.driver_free is not None else None, named,
                                     d.torch_reserved + sum(c.used for c in named if c.is_self))
            entry["cotenants"] = [c.to_dict() for c in named + ([extra] if extra else []) if not c.is_self]
        if d.is_compute_device:
            compute_cache = bar["reserved_unallocated"]
        devices.append(entry)
    models = [_model_dict(m) for m in bridge.loaded_models()]
    compute = f"{state.type}:{state.index}" if state.index is not None else state.type
    # LoadedModel.device prints as "cuda:0" / "cpu"; compare in that form.
    status = {
        "cuda": bool(devices),
        "message": None if devices else NO_CUDA_MESSAGE,
        "compute_device": {"name": state.name, "type": state.type, "index": state.index, "id": compute},
        "memory_mode": "cpu" if state.type == "cpu" else mode,
        "vram_state": state.vram_state,
        "reserve": state.reserve,
        "dynamic_vram": {"enabled": dyn.enabled, "headroom": dyn.headroom, "aimdo_bytes": dyn.aimdo_bytes},
        "devices": devices,
        "ram": bridge.ram_state(),
        "models": models,
        "would_free": would_free(models, compute if state.type != "cpu" else "cpu", compute_cache),
    }
    if mode == "dynamic" and dyn.headroom is not None:
        status["dynamic_vram"]["note"] = (
            f"Dynamic VRAM streams weights on demand and keeps {fmt_gib(dyn.headroom)} free for working memory."
        )
    compute_entry = next((e for e in devices if e["is_compute_device"]), None)
    if compute_entry is not None:
        status["cotenants"] = {"source": "nvml", "card": compute_entry["name"],
                               "processes": compute_entry.get("cotenants", [])} if "cotenants" in compute_entry \
            else None
    else:  # no CUDA in this ComfyUI (--cpu, or torch without CUDA): the card as nvidia-smi sees it, if any
        snap = cotenants.smi_snapshot(0)
        status["cotenants"] = {"source": "nvidia-smi", "card": snap["name"], "total": snap["total"],
                               "used": snap["used"], "processes": [c for c in snap["cotenants"] if not c["is_self"]]} \
            if snap else None
    if ADMISSION is not None:
        status["admission"] = ADMISSION.state()
    if run_log.TRACKER is not None:
        status["leaks"] = run_log.TRACKER.leaks.state()
    if queue is not None:
        status["queue_remaining"] = _tasks_remaining(queue)
        status["busy"] = status["queue_remaining"] > 0
    status["elapsed_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    return status


def _tasks_remaining(queue) -> int:
    try:
        return int(queue.get_tasks_remaining())
    except Exception:
        return 0


def _worker_parked(queue) -> bool:
    """True when the prompt worker waits in PromptQueue.get() (call with queue.mutex held).

    ``threading.Condition._waiters`` holds the worker's waiter while it sleeps in get(); with the
    mutex held here it cannot wake up and touch the models until we release it. Without that
    attribute (another Python), fall back to "nothing queued, running or flagged".
    """
    waiters = getattr(getattr(queue, "not_empty", None), "_waiters", None)
    idle = _tasks_remaining(queue) == 0
    try:
        idle = idle and not queue.get_flags(reset=False)
    except Exception:
        pass
    if waiters is None:
        return idle
    return idle and len(waiters) > 0


class Busy(Exception):
    pass


def _measure() -> dict:
    """Driver-free VRAM of the compute device, ComfyUI's resident RAM, loaded-model count."""
    out: dict = {"rss": None, "driver_free": None}
    try:
        out["rss"] = bridge.ram_state()["process_rss"]
    except Exception:
        pass
    for d in bridge.cuda_devices():
        if d.is_compute_device:
            out["driver_free"] = d.driver_free
    out["models"] = len(bridge.loaded_models())
    return out


def _freed(before: dict, after: dict) -> dict:
    vram = None
    if before.get("driver_free") is not None and after.get("driver_free") is not None:
        vram = max(0, after["driver_free"] - before["driver_free"])
    ram = None
    if before.get("rss") is not None and after.get("rss") is not None:
        ram = max(0, before["rss"] - after["rss"])
    return {"vram": vram, "ram": ram, "models_before": before.get("models"), "models_after": after.get("models")}


def unload_one(queue, ref: int | str) -> dict:
    """Unload one model while the worker is parked (see module doc). Raises Busy / LookupError."""
    with queue.mutex:
        if not _worker_parked(queue):
            raise Busy()
        models = bridge.loaded_models()
        if isinstance(ref, int):
            if ref >= len(models):
                raise LookupError(f"no loaded model with index {ref} ({len(models)} loaded)")
            target = models[ref]
        else:
            target = next((m for m in models if m.key == ref), None)
            if target is None:
                raise LookupError(f"no loaded model with id {ref!r}; it may have been unloaded already")
        before = _measure()
        unloaded = bridge.unload_loaded_model(target.key)
        after = _measure()
    if unloaded is None:
        raise LookupError(f"model {target.key!r} was unloaded meanwhile")
    return {"unloaded": _model_dict(unloaded), "freed": _freed(before, after),
            "models": [_model_dict(m) for m in bridge.loaded_models()]}


def flag_action(queue, free_cache: bool) -> tuple[int, dict]:
    """unload_all / free_cache through ComfyUI's /free flags; measured when ComfyUI is idle."""
    snapshot = build_status(queue)
    expected = snapshot["would_free"]["free_cache" if free_cache else "unload_all"]
    with queue.mutex:
        idle = _worker_parked(queue)
        before = _measure() if idle else None
        queue.set_flag("unload_models", True)
        if free_cache:
            queue.set_flag("free_memory", True)
    if not idle:
        return 202, {"scheduled": True, "measured": False, "would_free": expected,
                     "message": "ComfyUI is busy: this happens right after the running prompt."}
    deadline = time.monotonic() + ACTION_WAIT_S
    time.sleep(0.01)
    while time.monotonic() < deadline:
        with queue.mutex:
            if _worker_parked(queue):
                break
        time.sleep(0.02)
    else:
        return 202, {"scheduled": True, "measured": False, "would_free": expected,
                     "message": "ComfyUI is still working on it."}
    after = _measure()
    return 200, {"scheduled": False, "measured": True, "would_free": expected, "freed": _freed(before, after),
                 "models": [_model_dict(m) for m in bridge.loaded_models()]}


_LAST_OOM: dict | None = None


def _parse_with_context(message, etype, node_type, prompt, install):
    context = oom_context(prompt) if prompt is not None else None
    if install is not None:
        context = context_for_prompt(prompt or {}, None, install=install) if context is None else \
            dataclasses.replace(context, install=install)
    return parse_oom(message, etype, node_type, context=context)


def find_last_oom(queue) -> dict | None:
    """Newest OOM execution_error in the prompt history (kept in memory if history is cleared)."""
    global _LAST_OOM
    found = None
    def status_and_prompt(item):  # history item: {"prompt": (number, id, prompt, extra, outputs), "status": ...}
        entry = item.get("prompt")
        return item.get("status"), entry[2] if isinstance(entry, (list, tuple)) and len(entry) > 2 else None

    try:
        history = queue.get_history(max_items=LAST_OOM_SCAN, map_function=status_and_prompt)
    except TypeError:  # a ComfyUI whose get_history has no map_function
        history = {k: status_and_prompt(v) for k, v in queue.get_history(max_items=LAST_OOM_SCAN).items()}
    for status, prompt in reversed(list(history.values())):
        messages = (status or {}).get("messages") or []
        for message in reversed(messages):
            if isinstance(message, (list, tuple)) and len(message) == 2 and message[0] == "execution_error":
                found = oom_record(message[1], prompt)
                if found:
                    break
        if found:
            break
    if found and (_LAST_OOM is None or (found.get("timestamp") or 0) >= (_LAST_OOM.get("timestamp") or 0)):
        _LAST_OOM = found
    return _LAST_OOM


# ----------------------------------------------------------------------------------------------
# The top-bar readout and the measured-vs-predicted runs (run_log.py)
RUNS_MAX_LIMIT = 200


def build_readout(tracker: run_log.RunTracker | None) -> dict:
    """Used / total of the compute device (like nvidia-smi: total - driver free), or of system RAM
    when ComfyUI runs on the CPU; the peak of the running or last prompt when CUDA says it."""
    compute = next((d for d in bridge.cuda_devices() if d.is_compute_device), None)
    if compute is not None and compute.driver_free is not None:
        used = max(0, compute.total - compute.driver_free)
        out = {"kind": "cuda", "name": compute.name, "index": compute.index, "total": compute.total, "used": used,
               "torch_reserved": compute.torch_reserved, "peak_used": None, "torch_peak": None}
        peak = tracker.probe.current_peak() if tracker is not None else None
        if peak is not None:  # PyTorch's peak + what is outside PyTorch now (context, other processes)
            out["torch_peak"] = peak
            out["peak_used"] = min(compute.total, peak + max(0, used - compute.torch_reserved))
    else:
        ram = bridge.ram_state()
        out = {"kind": "cpu", "name": "RAM", "index": None, "total": ram["total"], "used": ram["used"],
               "torch_reserved": None, "peak_used": None, "torch_peak": None}
    out["running"] = tracker.current if tracker is not None else None
    last = tracker.records(1) if tracker is not None else []
    out["last_run"] = last[0] if last else None
    out["runs_recorded"] = tracker.runs_recorded if tracker is not None else 0
    return out


def parse_limit(value: str | None, default: int = 20) -> int:
    if value is None or value == "":
        return default
    try:
        limit = int(value)
    except ValueError:
        raise ValueError(f"\"limit\" must be an integer from 1 to {RUNS_MAX_LIMIT}") from None
    if not 1 <= limit <= RUNS_MAX_LIMIT:
        raise ValueError(f"\"limit\" must be an integer from 1 to {RUNS_MAX_LIMIT}")
    return limit


def _loaded_snapshot() -> list:
    return [(m.key, m.type, m.file) for m in bridge.loaded_models()]


ADMISSION: admission.Admission | None = None  # set by register() inside a running ComfyUI


def make_tracker(server) -> run_log.RunTracker:
    """The run tracker of a live server: PyTorch's peak on ComfyUI's device, the log in ComfyUI's
    user directory, each record pushed to the browsers as the "vram_budget.run" event."""
    global MODEL_NAMES
    try:
        import folder_paths  # noqa: PLC0415

        logfile = run_log.RunLogFile(run_log.log_path(folder_paths.get_user_directory()))
    except Exception:  # noqa: BLE001  (no user directory: keep the records in memory only)
        logfile = None
    MODEL_NAMES = ModelNames(_loaded_snapshot)

    def push(record: dict) -> None:
        try:
            server.send_sync("vram_budget.run", record)
        except Exception:  # noqa: BLE001
            pass

    return run_log.RunTracker(run_log.PeakProbe(lambda: bridge._mm().get_torch_device()), logfile,
                              on_record=push, on_start=MODEL_NAMES.started, on_end=MODEL_NAMES.ended,
                              notes=measurement_notes, baseline=bridge.baseline)


def measurement_notes() -> list[str]:
    """What the measurement leaves out on this ComfyUI (Dynamic VRAM's weights are not PyTorch's)."""
    try:
        dynamic = bridge.dynamic_vram_status().enabled
    except Exception:  # noqa: BLE001
        return []
    return [DYNAMIC_NOTE] if dynamic else []


DYNAMIC_NOTE = ("Dynamic VRAM: the weights comfy-aimdo streams live outside PyTorch's allocator, so the measured "
                "peak leaves them out")


# ----------------------------------------------------------------------------------------------
# The estimator: the same Device as the VRAM Budget node for the same request (comfy_bridge.estimator_device)
def estimator_device(card: str | None = None) -> tuple[Any, str | None]:
    """(device for estimate_prompt, note): a catalogue card when one is named, else this GPU; on a
    ComfyUI without a CUDA device its system memory, as the node estimates there, with a note."""
    return bridge.estimator_device(card)


def default_device_name() -> str:
    """What the panel estimates for when it names no card: this GPU, or on a ComfyUI without a CUDA
    device its system memory (the node's answer there too)."""
    try:
        return "This GPU" if bridge.device_state().type == "cuda" else "System memory"
    except Exception:  # noqa: BLE001  (outside ComfyUI)
        return "This GPU"


def card_list() -> list[dict]:
    return [{"name": c.name, "nominal_gb": c.nominal_gb, "price_eur_h": c.price_eur_h, "group": c.group} for c in CARDS]


def server_roots() -> list[str]:
    """Absolute folders of this server that an HTTP answer must not reveal: ComfyUI's base and
    models folders, every model folder it searches, the user's home."""
    roots = {os.path.expanduser("~")}
    try:
        import folder_paths  # noqa: PLC0415

        roots.update({folder_paths.base_path, folder_paths.models_dir})
        for paths, _ext in folder_paths.folder_names_and_paths.values():
            roots.update(paths)
    except Exception:  # noqa: BLE001  (outside ComfyUI)
        pass
    return sorted((r.rstrip("/\\") for r in roots if isinstance(r, str) and len(r) > 1), key=len, reverse=True)


def scrub_paths(data: Any, roots: list[str]) -> Any:
    """The same JSON with every server path made relative to the folder it lies in ("vae/ae.safetensors"),
    and model `path` fields reduced to the file name."""
    def text(s: str) -> str:
        for root in roots:
            if root and root in s:
                s = s.replace(root + os.sep, "").replace(root, "<server>")
        return s

    def walk(v, key=None):
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str):
            return os.path.basename(v) if key == "path" else text(v)
        return v
    return walk(data)


def run_estimate(prompt: dict | None, workflow: dict | None, card: str | None = None, gpus=()) -> dict:
    """`gpus`: more cards (catalogue names, cuda:1 on) for a placement plan; none: this machine's other CUDA
    devices when it has any (comfy_bridge.estimator_devices)."""
    t0 = time.perf_counter()
    devices, note = bridge.estimator_devices(card, gpus or ())
    with live_hooks(wait_s=20.0):  # ComfyUI's own detection / tracing, inside the estimate pool's 30 s limit
        result = estimate_prompt(prompt if prompt is not None else workflow, devices[0], bridge.model_resolver(),
                                 capacities=None, others=devices[1:])
    data = scrub_paths(result.to_dict(), server_roots())
    return {"available": True, "budget": data, "device_note": note,
            "elapsed_ms": round((time.perf_counter() - t0) * 1000, 2)}


def free_now() -> dict:
    """What is free on this machine now: the compute device's driver-free VRAM and the RAM available (None where it
    cannot be read)."""
    out: dict = {"vram_free_bytes": None, "vram_total_bytes": None, "ram_available_bytes": None}
    try:
        st = bridge.device_state()
        out["vram_total_bytes"] = st.total
        out["vram_free_bytes"] = st.driver_free if st.type == "cuda" else None
    except Exception:  # noqa: BLE001  (a reading never costs the answer)
        pass
    try:
        import psutil  # noqa: PLC0415
        out["ram_available_bytes"] = int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001
        pass
    return out


# ----------------------------------------------------------------------------------------------
# aiohttp handlers
def _json(data: Any, status: int = 200):
    return web.json_response(data, status=status)


def _short_strings(data: Any) -> Any:
    """The same JSON with every string cut at MAX_ANSWER_STRING (an answer is never larger than needed)."""
    if isinstance(data, str):
        return data if len(data) <= MAX_ANSWER_STRING else data[:MAX_ANSWER_STRING - 1] + "…"
    if isinstance(data, dict):
        return {_short_strings(k): _short_strings(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_short_strings(v) for v in data]
    return data


async def _json_off_loop(data: Any, status: int = 200):
    """Bound and serialise an answer in the executor: a large answer must not stall ComfyUI's event loop."""
    text = await _in_executor(lambda: json.dumps(_short_strings(data)))
    return web.Response(text=text, status=status, content_type="application/json")


def _error(status: int, message: str, **extra):
    return web.json_response({"error": message, **extra}, status=status)


class UnsupportedMediaType(ValueError):
    pass


def _require_json(request) -> None:
    """Every POST must say Content-Type: application/json. A browser sends that cross-origin only
    after a CORS preflight, which ComfyUI does not grant, so a page elsewhere (even a sandboxed one
    with Origin: null, which ComfyUI's origin check lets through) cannot drive these routes with a
    "simple" text/plain or form POST."""
    if request.content_type != "application/json":
        raise UnsupportedMediaType(f"send Content-Type: application/json (got {request.content_type[:60]!r})")


async def _read_all(request) -> bytes:
    """The whole body, however many chunks it arrives in, up to MAX_BODY_BYTES."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise OverflowError(f"request body over {MAX_BODY_BYTES // MiB} MiB")
    chunks, total = [], 0
    try:
        async for chunk in request.content.iter_chunked(256 * 1024):
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                raise OverflowError(f"request body over {MAX_BODY_BYTES // MiB} MiB")
            chunks.append(chunk)
    except OverflowError:
        raise
    except Exception as exc:
        raise ValueError(f"could not read the request body ({type(exc).__name__})") from None
    return b"".join(chunks)


async def _body(request) -> dict:
    """The JSON object body, or ValueError with a message for the client."""
    _require_json(request)
    raw = await _read_all(request)
    if not raw.strip():
        raise ValueError("the request body must be a JSON object")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"the request body is not valid JSON ({str(exc)[:80]})") from None
    if not isinstance(data, dict):
        raise ValueError("the request body must be a JSON object")
    return data


def _guard(handler):
    """Every failure becomes {"error": ...} JSON; the traceback goes to ComfyUI's log only."""
    async def wrapped(request):
        try:
            return await handler(request)
        except OverflowError as exc:
            return _error(413, str(exc))
        except UnsupportedMediaType as exc:
            return _error(415, str(exc))
        except ValueError as exc:
            return _error(400, str(exc))
        except web.HTTPException:
            raise
        except Exception as exc:
            log.exception("[VRAM Budget] %s %s failed", request.method, request.path)
            return _error(422, f"internal error {type(exc).__name__}; details in the ComfyUI log")
    wrapped.__name__ = handler.__name__
    return wrapped


def _in_executor(fn, *args):
    return asyncio.get_running_loop().run_in_executor(None, fn, *args)


# Estimates run in a pool of their own, never in the default executor that /status uses, so a burst
# of slow estimates cannot delay the panel's live readout. At most ESTIMATE_SLOTS run or wait at
# once (more answer 429 at once), and a client waits at most ESTIMATE_TIMEOUT_S.
ESTIMATE_WORKERS = 2
ESTIMATE_SLOTS = 4
ESTIMATE_TIMEOUT_S = 30.0
_estimate_pool = None
_estimates_in_flight = 0


class EstimatorBusy(Exception):
    pass


async def _estimate_call(fn, *args):
    global _estimate_pool, _estimates_in_flight
    if _estimates_in_flight >= ESTIMATE_SLOTS:
        raise EstimatorBusy()
    if _estimate_pool is None:
        _estimate_pool = ThreadPoolExecutor(max_workers=ESTIMATE_WORKERS, thread_name_prefix="vram-budget-estimate")
    loop = asyncio.get_running_loop()
    _estimates_in_flight += 1
    fut = loop.run_in_executor(_estimate_pool, fn, *args)

    def done(_f):  # the slot frees when the work ends, not when a client gives up waiting
        global _estimates_in_flight
        _estimates_in_flight -= 1
        if not _f.cancelled():
            _f.exception()  # retrieve it: no "exception never retrieved" warning after a timeout
    fut.add_done_callback(done)
    return await asyncio.wait_for(asyncio.shield(fut), ESTIMATE_TIMEOUT_S)


def register(server) -> bool:
    """Add the routes to ``server.routes`` once; False when already registered."""
    if getattr(server, "_vram_budget_routes", False):
        return False
    server._vram_budget_routes = True
    routes = server.routes
    queue = lambda: server.prompt_queue  # noqa: E731 (created before custom nodes load, but read late)
    tracker = make_tracker(server)
    if run_log.install(server, tracker):
        run_log.TRACKER = tracker
    tracker = run_log.TRACKER
    global ADMISSION
    if getattr(server, "prompt_queue", None) is not None:
        adm = admission.Admission(server.prompt_queue, admission.live_decide, admission.live_machine,
                                  send=lambda st: server.send_sync("vram_budget.admission", st),
                                  fixer=admission.live_fixer)
        if adm.install():
            ADMISSION = adm

    @routes.get(PREFIX + "/status")
    @_guard
    async def vram_status(request):
        return _json(await _in_executor(build_status, queue()))

    @routes.post(PREFIX + "/unload")
    @_guard
    async def vram_unload(request):
        body = await _body(request)
        if "model" not in body:
            raise ValueError("missing \"model\": a model index or id from /vram_budget/status")
        ref = parse_model_ref(body["model"])
        try:
            return _json(await _in_executor(unload_one, queue(), ref))
        except Busy:
            return _error(409, "busy, try after the prompt", busy=True)
        except LookupError as exc:
            return _error(404, str(exc.args[0] if exc.args else exc))

    async def _flag_route(request, free_cache: bool):
        _require_json(request)
        if request.can_read_body:
            await _body(request)  # optional, but when present it must be a JSON object
        status, data = await _in_executor(flag_action, queue(), free_cache)
        return _json(data, status)

    @routes.post(PREFIX + "/unload_all")
    @_guard
    async def vram_unload_all(request):
        return await _flag_route(request, free_cache=False)

    @routes.post(PREFIX + "/free_cache")
    @_guard
    async def vram_free_cache(request):
        return await _flag_route(request, free_cache=True)

    @routes.get(PREFIX + "/last_oom")
    @_guard
    async def vram_last_oom(request):
        return _json({"last_oom": await _in_executor(find_last_oom, queue())})

    @routes.post(PREFIX + "/parse_oom")
    @_guard
    async def vram_parse_oom(request):
        body = await _body(request)
        message = body.get("message")
        if not isinstance(message, str):
            raise ValueError("\"message\" must be a string")
        if len(message) > MAX_OOM_MESSAGE_CHARS:  # a pasted log: its head and its tail (the error) are read
            half = MAX_OOM_MESSAGE_CHARS // 2
            message = message[:half] + "\n…\n" + message[-half:]
        etype = body.get("exception_type")
        if etype is not None and not isinstance(etype, str):
            raise ValueError("\"exception_type\" must be a string or null")
        node_type = body.get("node_type")
        if node_type is not None and not isinstance(node_type, str):
            raise ValueError("\"node_type\" must be a string or null")
        prompt = body.get("prompt")
        if prompt is not None and not isinstance(prompt, dict):
            raise ValueError("\"prompt\" must be an API prompt object or null")
        if prompt is not None and len(prompt) > MAX_OOM_PROMPT_NODES:
            raise ValueError(f"\"prompt\" has {len(prompt)} nodes; at most {MAX_OOM_PROMPT_NODES} for an OOM's context")
        for field in ("exception_type", "node_type"):
            if isinstance(body.get(field), str) and len(body[field]) > 200:
                raise ValueError(f"\"{field}\" is longer than 200 characters")
        install = body.get("install")
        if install is not None and install not in ("portable", "desktop", "linux"):
            raise ValueError("\"install\" must be portable, desktop or linux")
        # off the event loop: ComfyUI's server must never wait on a parse (nor on its answer's JSON)
        diagnosis = await _in_executor(_parse_with_context, message, etype, node_type, prompt, install)
        return await _json_off_loop(diagnosis.to_dict())

    @routes.post(PREFIX + "/estimate")
    @_guard
    async def vram_estimate(request):
        return await _estimate_answer(await _body(request))

    @routes.post(PREFIX + "/fits")
    @_guard
    async def vram_fits(request):
        """For agents (docs/agent-api.md): the same estimate, answered in FITS_FIELDS with what is free now."""
        return await _estimate_answer(await _body(request), short=True)

    async def _estimate_answer(body: dict, short: bool = False):
        prompt, workflow = body.get("prompt"), body.get("workflow")
        if prompt is None and workflow is None:
            raise ValueError("send \"prompt\" (the API prompt) and optionally \"workflow\" (the UI workflow)")
        if workflow is not None:
            validate_workflow(workflow)
        source_note = None
        if prompt is not None:
            try:
                validate_prompt(prompt)
            except ValueError as exc:
                # a node whose pack is not loaded here reaches the API prompt without its class_type; the UI
                # workflow still names it, and the estimator reads UI workflows too
                if workflow is None:
                    raise
                prompt, source_note = None, f"estimated from the UI workflow: the API prompt could not be read ({exc})"
        card = body.get("card")
        if card is not None and (not isinstance(card, str) or not 0 < len(card) <= 100):
            raise ValueError("\"card\" must be a card name such as \"RTX 4090\", or null for this GPU")
        gpus = body.get("gpus") or []
        if not isinstance(gpus, list) or len(gpus) > MAX_EXTRA_CARDS or not all(
                isinstance(g, str) and 0 < len(g) <= 100 for g in gpus):
            raise ValueError(f"\"gpus\" must be a list of at most {MAX_EXTRA_CARDS} more card names "
                             "(cuda:1 on), such as [\"RTX 3090\"]")
        try:
            result = await _estimate_call(run_estimate, prompt, workflow, card, tuple(gpus))
            if source_note:
                result["source_note"] = source_note
            if short:
                answer = fits_answer(result, await _in_executor(free_now))
                if source_note:
                    answer["source_note"] = source_note
                return await _json_off_loop(answer)
            return await _json_off_loop(result)
        except EstimatorBusy:
            return _error(429, f"the estimator is busy with {ESTIMATE_SLOTS} estimates; try again in a moment",
                          busy=True)
        except asyncio.TimeoutError:
            return _error(504, f"the estimate took longer than {ESTIMATE_TIMEOUT_S:g} s; it was abandoned")
        except Exception as exc:  # VramBudgetError carries a user-facing message
            if not isinstance(exc, VramBudgetError):
                # An estimator bug: the traceback goes to ComfyUI's log; the message names no paths.
                log.exception("[VRAM Budget] estimate failed")
                return _error(422, f"could not estimate this workflow (internal error {type(exc).__name__}; "
                                   "details in the ComfyUI log)")
            return _error(422, str(exc))

    @routes.get(PREFIX + "/admission")
    @_guard
    async def vram_admission_state(request):
        if ADMISSION is None:
            return _error(503, "admission is not installed in this ComfyUI")
        return _json(ADMISSION.state())

    @routes.post(PREFIX + "/admission")
    @_guard
    async def vram_admission(request):
        """{"enabled": bool} turns holding on or off; {"fixes": bool} lets a held prompt run with the fixes that
        change nothing it makes (admission.prompt_fixes); {"release": id} runs it anyway; {"cancel": id} takes it
        out of the queue."""
        if ADMISSION is None:
            return _error(503, "admission is not installed in this ComfyUI")
        body = await _body(request)
        if not set(body) & {"enabled", "fixes", "release", "cancel"}:
            raise ValueError('send {"enabled": true|false}, {"fixes": true|false}, {"release": prompt_id} or '
                             '{"cancel": prompt_id}')
        for key, setter in (("enabled", ADMISSION.set_enabled), ("fixes", ADMISSION.set_fixes)):
            if key in body:
                if not isinstance(body[key], bool):
                    raise ValueError(f'"{key}" must be true or false')
                setter(body[key])
        for key in ("release", "cancel"):
            if key in body:
                pid = body[key]
                if not isinstance(pid, str) or not 0 < len(pid) <= 100:
                    raise ValueError(f'"{key}" must be a prompt id (a string)')
                if not (ADMISSION.release(pid) if key == "release" else await _in_executor(ADMISSION.cancel, pid)):
                    return _error(404, f"prompt {pid} is not {'held' if key == 'release' else 'in the queue'}")
        return _json(ADMISSION.state())

    @routes.get(PREFIX + "/cards")
    @_guard
    async def vram_cards(request):
        return _json({"cards": card_list(), "default": await _in_executor(default_device_name)})

    @routes.get(PREFIX + "/readout")
    @_guard
    async def vram_readout(request):
        prewarm()  # the UI is open: start the trace worker now, not on the first estimate
        return _json(await _in_executor(build_readout, tracker))

    @routes.get(PREFIX + "/runs")
    @_guard
    async def vram_runs(request):
        limit = parse_limit(request.query.get("limit"))
        runs = await _in_executor(tracker.records, limit) if tracker is not None else []
        regressions = await _in_executor(tracker.regressions) if tracker is not None else []
        return _json({"runs": runs, "log": run_log.LOG_SUBDIR + "/" + run_log.LOG_NAME,
                      "measuring": "cuda" if tracker is not None and tracker.probe.current_peak() is not None
                      else "cpu",
                      # the version-regression guard (run_log.find_regressions): one workflow's measured
                      # peak grown past the threshold between runs under different versions
                      "regressions": regressions,
                      "regression_threshold": {"ratio": run_log.REGRESSION_MIN_RATIO,
                                               "bytes": run_log.REGRESSION_MIN_BYTES}})

    @routes.get(PREFIX + "/runs/export")
    @_guard
    async def vram_runs_export(request):
        data = await _in_executor(tracker.logfile.read_bytes) if tracker is not None and tracker.logfile else b""
        return web.Response(body=data, content_type="application/x-ndjson", headers={
            "Content-Disposition": 'attachment; filename="vram_budget_runs.jsonl"', "Cache-Control": "no-store"})

    # Last: unknown paths and wrong methods under the prefix answer JSON, not aiohttp's text.
    @routes.route("*", PREFIX + "/{tail:.*}")
    async def vram_fallback(request):
        known = {"status": "GET", "last_oom": "GET", "cards": "GET", "readout": "GET", "runs": "GET",
                 "runs/export": "GET", "unload": "POST", "unload_all": "POST", "free_cache": "POST",
                 "parse_oom": "POST", "estimate": "POST", "fits": "POST"}
        tail = request.match_info.get("tail", "")
        if tail in known:
            return _error(405, f"use {known[tail]} for {PREFIX}/{tail}")
        return _error(404, f"no such route: {PREFIX}/{tail[:80]}")

    return True


def _register_in_comfyui() -> None:
    if "comfy.model_management" not in sys.modules:
        return  # imported outside ComfyUI (unit tests): no server to register on
    try:
        from server import PromptServer  # noqa: PLC0415
    except Exception:  # ComfyUI's modules loaded by a script without its server
        return
    server = getattr(PromptServer, "instance", None)
    if server is None or web is None:
        return  # e.g. a script that loads custom nodes without starting the server
    register(server)


_register_in_comfyui()
