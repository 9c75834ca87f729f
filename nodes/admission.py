"""Hold a queued prompt until it fits (issue 35): admission in ComfyUI's own queue, off by default.

Before the prompt at the head of the queue starts, its estimate (the same one the node and panel give) is made on
the card as it is now, with what other processes hold. When it would not run now but would run once they free
their memory, it is held, visibly ("waiting for 6.2 GiB held by Ollama (pid 812)"), until they do, the user
releases it ("run anyway") or cancels it. Nothing is dropped or reordered: the head waits, everything behind it
waits behind it, as the queue always orders them. Never held on a guess: an incomplete estimate runs (and says
why), as does a prompt that would not fit even on an empty card (waiting could not help).

How: `PromptQueue.get` is wrapped (execution.py PromptQueue.get; main.py prompt_worker calls `q.get(timeout=...)`
and loops on None, 0.8 / 0.18 / 0.33 alike). While holding, get answers None after at most HOLD_POLL_S, so the
worker keeps its garbage collection and /free flags going. The judgement is cached per prompt; each poll re-reads
only what the other processes hold.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from .estimator.units import GiB, MiB, fmt_gib

log = logging.getLogger(__name__)

ENV = "VRAM_BUDGET_ADMISSION"  # the launch setting: 1 turns admission on at start
HOLD_POLL_S = 1.0
SEARCH_STEP = 64 * MiB
MAX_EVENTS = 20


@dataclass(frozen=True)
class Judgement:
    """What admission decided for one prompt: "run" (with why) or "hold" until others hold <= max_others."""
    action: str  # "run" | "hold"
    why: str
    max_others: int | None = None  # bytes other processes may hold for the prompt to run
    complete: bool = True


@dataclass(frozen=True)
class Machine:
    """The card now: what other processes hold on it (bytes) and who they are (cotenants.Cotenant dicts)."""
    card: str
    others_bytes: int
    holders: list = field(default_factory=list)


def judge(runs: Callable[[int], tuple[bool, bool, str]], others_now: int, step: int = SEARCH_STEP) -> Judgement:
    """`runs(others_bytes) -> (complete, runs, why_incomplete)`: the estimate with that much held by other
    processes. Hold only a complete estimate that does not run now but runs with the others gone; then the most
    the others may keep (a binary search to `step`)."""
    complete, ok, why = runs(others_now)
    if not complete:
        return Judgement("run", f"not held: the estimate is incomplete ({why})" if why else
                         "not held: the estimate is incomplete", complete=False)
    if ok:
        return Judgement("run", f"fits now ({why})" if why else "fits now")
    if others_now <= 0 or not runs(0)[1]:
        return Judgement("run", "not held: it would not fit even with no other process on the card, so waiting "
                                "cannot help")
    lo, hi = 0, others_now  # runs(lo) true, runs(hi) false
    while hi - lo > step:
        mid = (lo + hi) // 2
        if runs(mid)[1]:
            lo = mid
        else:
            hi = mid
    return Judgement("hold", "", max_others=lo)


def holding_message(machine: Machine, max_others: int) -> str:
    """ "waiting for 6.2 GiB held by Ollama (qwen3:32b) (pid 812)" in user words."""
    need = max(0, machine.others_bytes - max_others)
    named = [h for h in machine.holders if not h.get("is_self") and h.get("used", 0) > 0][:3]
    who = ", ".join(f"{h['label']} (pid {h['pid']})" if h.get("pid") else h["label"] for h in named)
    return f"waiting for {fmt_gib(need)} on the {machine.card}" + (f", held by {who}" if who else "")


class Admission:
    def __init__(self, queue, decide: Callable[[dict, Machine], Judgement], machine: Callable[[], Machine | None],
                 send: Callable[[dict], None] | None = None, clock: Callable[[], float] = time.time,
                 enabled: bool | None = None, poll_s: float = HOLD_POLL_S):
        self.queue = queue
        self.decide, self.machine, self.send, self.clock, self.poll_s = decide, machine, send, clock, poll_s
        self.enabled = (os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")) \
            if enabled is None else enabled
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.released: set[str] = set()
        self.judged: dict[str, Judgement] = {}
        self.held: dict | None = None
        self.events: deque = deque(maxlen=MAX_EVENTS)
        self._orig_get = None

    # -- installation --------------------------------------------------------------------------------
    def install(self) -> bool:
        if getattr(self.queue, "_vram_budget_admission", None) is not None:
            return False
        self._orig_get = self.queue.get
        self.queue.get = self.get
        self.queue._vram_budget_admission = self
        return True

    # -- the worker's side ---------------------------------------------------------------------------
    def _head(self):
        with self.queue.mutex:
            return self.queue.queue[0] if self.queue.queue else None

    def get(self, timeout=None):
        with self.queue.not_empty:  # wait here, not in the original get: it would pop the next prompt unjudged
            if not self.queue.queue:
                self.queue.not_empty.wait(timeout=timeout)
        head = self._head()
        if head is None:
            self._set_held(None)
            return None
        if not self.enabled:
            self._set_held(None)
            return self._orig_get(timeout=timeout)
        prompt_id = str(head[1])
        if self._admit(prompt_id, head):
            with self.queue.mutex:  # pop only the prompt judged: a prompt put at the front since is judged anew
                now = self.queue.queue[0] if self.queue.queue else None
                if now is not None and str(now[1]) == prompt_id:
                    self._set_held(None)
                    return self._orig_get(timeout=timeout)
            return None
        self.wake.wait(self.poll_s if timeout is None else max(0.0, min(self.poll_s, timeout)))
        self.wake.clear()
        return None

    def _admit(self, prompt_id: str, head) -> bool:
        if prompt_id in self.released:
            self._event("released", prompt_id, "run anyway: released by the user")
            self.released.discard(prompt_id)
            return True
        try:
            machine = self.machine()
            if machine is None:
                self._event("run", prompt_id, "not held: what other processes hold on the card cannot be read")
                return True
            j = self.judged.get(prompt_id)
            if j is None:
                j = self.decide(head[2], machine)
                self.judged[prompt_id] = j
                while len(self.judged) > 64:
                    self.judged.pop(next(iter(self.judged)))
            if j.action != "hold" or machine.others_bytes <= (j.max_others or 0):
                if self.held and self.held["prompt_id"] == prompt_id:
                    self._event("started", prompt_id, "memory freed: started")
                elif j.action != "hold":
                    self._event("run", prompt_id, j.why)
                return True
            self._set_held({"prompt_id": prompt_id, "number": head[0], "message": holding_message(machine,
                            j.max_others or 0), "since": (self.held or {}).get("since") if self.held and
                            self.held["prompt_id"] == prompt_id else self.clock(),
                            "need_bytes": machine.others_bytes - (j.max_others or 0), "holders": machine.holders[:5],
                            "card": machine.card})
            return False
        except Exception:  # noqa: BLE001  (admission never costs a prompt: on any failure it runs)
            log.exception("[VRAM Budget] admission could not judge prompt %s; running it", prompt_id)
            self._event("run", prompt_id, "not held: the admission check failed")
            return True

    # -- the user's side -----------------------------------------------------------------------------
    def set_enabled(self, on: bool) -> None:
        self.enabled = bool(on)
        if not on:
            self._set_held(None)
        self.wake.set()

    def release(self, prompt_id: str) -> bool:
        """Run the held prompt anyway (once)."""
        with self.lock:
            ok = self.held is not None and self.held["prompt_id"] == prompt_id
        if ok:
            self.released.add(prompt_id)
            self.wake.set()
        return ok

    def cancel(self, prompt_id: str) -> bool:
        """Take the prompt out of the queue (ComfyUI's own delete_queue_item); the rest keep their order."""
        ok = bool(self.queue.delete_queue_item(lambda item: str(item[1]) == prompt_id))
        if ok:
            self._event("cancelled", prompt_id, "cancelled by the user")
            if self.held and self.held["prompt_id"] == prompt_id:
                self._set_held(None)
            self.wake.set()
        return ok

    def state(self) -> dict:
        with self.lock:
            held = dict(self.held) if self.held else None
        if held:
            held["waiting_s"] = round(self.clock() - held["since"], 1)
        return {"enabled": self.enabled, "held": held, "events": list(self.events)}

    # -- bookkeeping ---------------------------------------------------------------------------------
    def _set_held(self, held: dict | None) -> None:
        with self.lock:
            changed = (self.held or {}).get("message") != (held or {}).get("message")
            first = held is not None and (self.held is None or self.held["prompt_id"] != held["prompt_id"])
            self.held = held
        if first:
            self._event("held", held["prompt_id"], held["message"], push=False)
        if changed:
            self._push()

    def _event(self, kind: str, prompt_id: str, text: str, push: bool = True) -> None:
        self.events.append({"kind": kind, "prompt_id": prompt_id, "text": text, "at": self.clock()})
        if kind in ("held", "started", "released", "cancelled"):
            log.info("[VRAM Budget] prompt %s: %s", prompt_id, text)
        if push:
            self._push()

    def _push(self) -> None:
        if self.send is not None:
            try:
                self.send(self.state())
            except Exception:  # noqa: BLE001
                pass


# ----------------------------------------------------------------------------------------------
# Inside ComfyUI: the card now and the estimate on it
def live_machine() -> Machine | None:
    """The card ComfyUI computes on, with what other processes hold (the driver's count, named through NVML); on a
    ComfyUI without CUDA, GPU 0 as nvidia-smi reports it. None when neither can be read."""
    from . import comfy_bridge as bridge  # noqa: PLC0415
    from . import cotenants  # noqa: PLC0415

    dev = _live_cuda(bridge)
    if dev is not None:
        cuda = next((d for d in bridge.cuda_devices() if d.is_compute_device), None)
        procs = bridge.gpu_processes(cuda) if cuda is not None else None
        named = cotenants.describe_processes([(p.pid, p.name, p.used) for p in procs or ()])
        return Machine(dev.name, dev.other_processes_bytes, [c.to_dict() for c in named if not c.is_self])
    snap = cotenants.smi_snapshot(0)
    if snap is None:
        return None
    others = [c for c in snap["cotenants"] if not c["is_self"]]
    return Machine(snap["name"], sum(c["used"] for c in others), others)


def _live_cuda(bridge):
    """The estimator Device of the CUDA card ComfyUI computes on; None when it computes elsewhere."""
    try:
        if bridge.device_state().type != "cuda":
            return None
        dev, _note = bridge.estimator_device(None)
    except Exception:  # noqa: BLE001
        return None
    return dev


def _smi_device(bridge, machine: Machine):
    """GPU 0 as nvidia-smi gives it, as an estimator Device under this ComfyUI's launch flags (CUDA on)."""
    from dataclasses import replace  # noqa: PLC0415

    from . import cotenants  # noqa: PLC0415
    from .estimator.device import device_for_launch  # noqa: PLC0415

    gpu = next((g for g in cotenants.smi_gpus() if g.index == 0), None)
    if gpu is None:
        raise LookupError("nvidia-smi lists no GPU 0")
    return device_for_launch(bridge._live_card(gpu.name, gpu.total), replace(bridge.live_launch_flags(), cpu=False),
                             name=gpu.name, total_bytes=gpu.total, source="live", memory_mode=None,
                             host=bridge.live_host())


def live_decide(prompt: dict, machine: Machine) -> Judgement:
    """judge() with the pack's own estimate (planning.estimate_prompt) on the card now."""
    from dataclasses import replace  # noqa: PLC0415

    from . import comfy_bridge as bridge  # noqa: PLC0415
    from .estimator.agent import fits_answer  # noqa: PLC0415
    from .estimator.planning import estimate_prompt  # noqa: PLC0415

    device = _live_cuda(bridge) or _smi_device(bridge, machine)
    resolver = bridge.model_resolver()

    def runs(others: int) -> tuple[bool, bool, str]:
        budget = estimate_prompt(prompt, replace(device, other_processes_bytes=others), resolver).to_dict()
        answer = fits_answer({"budget": budget})
        if not answer["complete"]:
            why = "; ".join([f"{m.get('name', '')} {m.get('problem', '')}" for m in budget.get("missing", [])][:2]
                            + list(budget.get("incomplete", []))[:1]).strip()
        else:
            why = (f"{answer['vram_verdict']}: {fmt_gib(answer['peak_bytes'] or 0)} at the peak, "
                   f"{fmt_gib(answer['capacity_bytes'] or 0)} usable with {fmt_gib(others)} held by other processes")
        return answer["complete"], answer["fits"], why

    return judge(runs, machine.others_bytes)
