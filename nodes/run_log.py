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

Pure Python: torch and ComfyUI are reached through the ``probe`` given to the tracker, so the
record and log plumbing is unit-tested with injected numbers.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from .estimator.units import GiB, MiB

log = logging.getLogger("vram_budget.run_log")

MAX_LOG_BYTES = 2 * MiB  # ~4,000 runs; past it the oldest half is dropped
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
# The log file: JSON lines, bounded
class RunLogFile:
    def __init__(self, path: str, max_bytes: int = MAX_LOG_BYTES):
        self.path, self.max_bytes = path, max_bytes
        self._lock = threading.Lock()

    def append(self, record: dict) -> None:
        line = json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"
        with self._lock:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)
            if os.path.getsize(self.path) > self.max_bytes:
                self._trim()

    def _trim(self) -> None:
        """Keep the newest lines that fit in half the cap (the file never grows past the cap)."""
        with open(self.path, "rb") as fh:
            lines = fh.read().splitlines(keepends=True)
        kept, size = [], 0
        for line in reversed(lines):
            if size + len(line) > self.max_bytes // 2:
                break
            kept.append(line)
            size += len(line)
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.writelines(reversed(kept))
        os.replace(tmp, self.path)

    def read_bytes(self) -> bytes:
        with self._lock:
            try:
                with open(self.path, "rb") as fh:
                    return fh.read()
            except FileNotFoundError:
                return b""

    def records(self, limit: int) -> list[dict]:
        """The newest `limit` records, newest first (unreadable lines skipped)."""
        out = []
        for raw in reversed(self.read_bytes().splitlines()):
            try:
                item = json.loads(raw)
            except ValueError:
                continue
            if isinstance(item, dict):
                out.append(item)
            if len(out) >= limit:
                break
        return out


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
                 on_end: Callable[[str, dict], None] | None = None, notes: Callable[[], list] | None = None):
        self.probe, self.logfile, self.clock, self.notes = probe, logfile, clock, notes
        self.on_record, self.on_start, self.on_end = on_record, on_start, on_end
        self.current: str | None = None
        self.started = 0.0
        self.predictions: dict[str, Prediction] = {}
        self.recent: deque = deque(maxlen=KEEP_IN_MEMORY)
        self.runs_recorded = 0
        self._lock = threading.RLock()

    # -- called by the hook ------------------------------------------------------------------
    def prompt_started(self, prompt_id: str) -> None:
        with self._lock:
            self.current, self.started = prompt_id, self.clock()
            self.predictions = {k: v for k, v in self.predictions.items() if k == prompt_id}
        self.probe.reset()
        if self.on_start is not None:
            self.on_start(prompt_id)

    def prompt_ended(self, prompt_id: str, history_entry: dict | None = None) -> dict:
        measured = self.probe.read()
        with self._lock:
            started = self.started if prompt_id == self.current else self.clock()
            record = RunRecord(prompt_id=prompt_id, started=started, ended=self.clock(),
                               status=history_status(history_entry), prediction=self.predictions.pop(prompt_id, None),
                               measured=measured, not_measured=None if measured else NOT_MEASURED_CPU)
            if record.prediction is not None and not record.prediction.same_device:
                record.notes.append(f"the prediction was for {record.prediction.device}, not the GPU this ran on")
            if measured is not None and self.notes is not None:
                record.notes.extend(self.notes())
            if self.current == prompt_id:
                self.current = None
            data = record.to_dict()
            self.recent.appendleft(data)
            self.runs_recorded += 1
        self._write(data)
        if self.on_end is not None:
            self.on_end(prompt_id, history_entry or {})
        return data

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
        now = {str(item[1]) for item in list(queue.currently_running.values()) if len(item) > 1}
        for pid in sorted(now - self.running):
            self.tracker.prompt_started(pid)
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
