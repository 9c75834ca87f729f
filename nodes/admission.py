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
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from .estimator.plan.capacity import largest_true as _largest_ok
from .estimator.units import GiB, MiB, fmt_gib

log = logging.getLogger(__name__)

ENV = "VRAM_BUDGET_ADMISSION"  # the launch setting: 1 turns admission on at start
ENV_FIXES = "VRAM_BUDGET_ADMISSION_FIXES"  # 1: a held prompt may run with prompt_fixes() when they make it fit
HOLD_POLL_S = 1.0
SEARCH_STEP = 64 * MiB
MAX_EVENTS = 20
LIVE_WAIT_S = 5.0  # what a held prompt's first judgement waits for ComfyUI's own tracing, at most


@dataclass(frozen=True)
class Judgement:
    """What admission decided for one prompt: "run" (with why) or "hold" until other processes hold at most
    max_others bytes of the card and, where RAM blocks it too, at most max_ram_others of system RAM."""
    action: str  # "run" | "hold"
    why: str
    max_others: int | None = None  # bytes other processes may hold on the card for the prompt to run
    complete: bool = True
    max_ram_others: int | None = None  # bytes the OS and other programs may hold in RAM (None: RAM does not block)


@dataclass(frozen=True)
class Machine:
    """The card now: what other processes hold on it (bytes) and who they are (cotenants.Cotenant dicts); and
    system RAM: what the OS and other programs hold, the largest of them, and what would be left to the OS
    without those (ram_floor_bytes)."""
    card: str
    others_bytes: int
    holders: list = field(default_factory=list)
    ram_others_bytes: int = 0
    ram_holders: list = field(default_factory=list)
    ram_floor_bytes: int | None = None


def judge(runs: Callable[[int, int], tuple[bool, bool, str]], others_now: int, ram_now: int = 0,
          ram_floor: int | None = None, step: int = SEARCH_STEP) -> Judgement:
    """`runs(card_others, ram_others) -> (complete, runs, why)`: the estimate with that much held by other
    processes on the card and in RAM. Hold only a complete estimate that does not run now but runs once the card's
    other processes and the named RAM holders let go (RAM down to `ram_floor`); then the most each may keep."""
    floor = ram_now if ram_floor is None else max(0, min(ram_floor, ram_now))
    complete, ok, why = runs(others_now, ram_now)
    if not complete:
        return Judgement("run", f"not held: the estimate is incomplete ({why})" if why else
                         "not held: the estimate is incomplete", complete=False)
    if ok:
        return Judgement("run", f"fits now ({why})" if why else "fits now")
    if not runs(0, floor)[1]:
        return Judgement("run", "not held: it would not fit even with no other process on the card"
                                + (" and the largest programs out of RAM" if floor < ram_now else "")
                                + ", so waiting cannot help")
    if runs(0, ram_now)[1]:  # the card alone blocks it
        return Judgement("hold", "", max_others=_largest_ok(lambda v: runs(v, ram_now)[1], 0, others_now, step))
    if runs(others_now, floor)[1]:  # RAM alone blocks it
        return Judgement("hold", "", max_others=others_now,
                         max_ram_others=_largest_ok(lambda r: runs(others_now, r)[1], floor, ram_now, step))
    return Judgement("hold", "", max_others=_largest_ok(lambda v: runs(v, floor)[1], 0, others_now, step),
                     max_ram_others=_largest_ok(lambda r: runs(0, r)[1], floor, ram_now, step))


def _who(holders: list) -> str:
    named = [h for h in holders if not h.get("is_self") and h.get("used", 0) > 0][:3]
    return ", ".join(f"{h['label']} (pid {h['pid']})" if h.get("pid") else h["label"] for h in named)


def holding_message(machine: Machine, j: Judgement) -> str:
    """ "waiting for 6.2 GiB on the RTX 3060, held by Ollama (qwen3:32b) (pid 812)" in user words."""
    parts = []
    if machine.others_bytes > (j.max_others or 0):
        who = _who(machine.holders)
        parts.append(f"{fmt_gib(machine.others_bytes - (j.max_others or 0))} on the {machine.card}"
                     + (f", held by {who}" if who else ""))
    if j.max_ram_others is not None and machine.ram_others_bytes > j.max_ram_others:
        who = _who(machine.ram_holders)
        parts.append(f"{fmt_gib(machine.ram_others_bytes - j.max_ram_others)} of system RAM"
                     + (f", held by {who}" if who else ""))
    return "waiting for " + ("; and ".join(parts) or "memory")


def admits(machine: Machine, j: Judgement) -> bool:
    """The held prompt's thresholds are met now."""
    return machine.others_bytes <= (j.max_others or 0) and \
        (j.max_ram_others is None or machine.ram_others_bytes <= j.max_ram_others)


# ----------------------------------------------------------------------------------------------
# Fixes a held prompt may run with, when the user allows them: no change to what it makes
_DTYPE = re.compile(r"(fp16|bf16|fp32)", re.IGNORECASE)
CLIP_INPUTS = ("clip_name", "clip_name1", "clip_name2", "clip_name3", "clip_name4")


def fp8_sibling(name: str, on_disk: set[str]) -> str | None:
    """The fp8 file of a 16/32-bit text encoder that is already in the folder (t5xxl_fp16 -> t5xxl_fp8_e4m3fn_scaled,
    else t5xxl_fp8_e4m3fn), or None."""
    if not _DTYPE.search(name):
        return None
    for tag in ("fp8_e4m3fn_scaled", "fp8_e4m3fn"):
        candidate = _DTYPE.sub(tag, name, count=1)
        if candidate in on_disk:
            return candidate
    return None


def prompt_fixes(prompt: dict, text_encoders: set[str], auto_tiled: bool) -> tuple[dict, list[str]]:
    """The prompt with the fixes that change nothing it makes but memory: a text encoder's fp8 file already on
    disk, VAE Decode -> VAE Decode (Auto Tiled) (same inputs, the same image, tiles only when needed); and what
    was changed, in words. Node ids, links and order are kept."""
    out, words = {}, []
    for nid, node in prompt.items():
        if not isinstance(node, dict):
            out[nid] = node
            continue
        node = dict(node)
        inputs = dict(node.get("inputs") or {})
        if str(node.get("class_type", "")).endswith("CLIPLoader"):
            for key in CLIP_INPUTS:
                value = inputs.get(key)
                new = fp8_sibling(value, text_encoders) if isinstance(value, str) else None
                if new:
                    inputs[key] = new
                    words.append(f"text encoder {value} → {new} (already on disk)")
        if node.get("class_type") == "VAEDecode" and auto_tiled:
            node["class_type"] = "VAEDecodeAutoTiled"
            words.append(f"node {nid}: VAE Decode → VAE Decode (Auto Tiled)")
        node["inputs"] = inputs
        out[nid] = node
    return out, words


class Admission:
    def __init__(self, queue, decide: Callable[[dict, Machine], Judgement], machine: Callable[[], Machine | None],
                 send: Callable[[dict], None] | None = None, clock: Callable[[], float] = time.time,
                 enabled: bool | None = None, poll_s: float = HOLD_POLL_S,
                 fixer: Callable[[dict], tuple[dict, list[str]]] | None = None, fixes: bool | None = None):
        self.queue = queue
        self.fixer = fixer  # prompt -> (fixed prompt, what changed): prompt_fixes with this ComfyUI's folders
        self.fixes = (os.environ.get(ENV_FIXES, "").strip().lower() in ("1", "true", "yes", "on")) \
            if fixes is None else fixes
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
                j = self._judge(prompt_id, head[2], machine)
            if j.action == "hold" and admits(machine, j):  # the thresholds are met: one fresh estimate confirms
                j = self._judge(prompt_id, head[2], machine)
            if j.action != "hold":
                if self.held and self.held["prompt_id"] == prompt_id:
                    self._event("started", prompt_id, "memory freed: started")
                else:
                    self._event("run", prompt_id, j.why)
                return True
            if self._run_fixed(prompt_id, head, machine):
                return True
            keep_since = self.held is not None and self.held["prompt_id"] == prompt_id
            self._set_held({"prompt_id": prompt_id, "number": head[0], "message": holding_message(machine, j),
                            "since": self.held["since"] if keep_since else self.clock(),
                            "need_bytes": max(0, machine.others_bytes - (j.max_others or 0)),
                            "need_ram_bytes": max(0, machine.ram_others_bytes - j.max_ram_others)
                            if j.max_ram_others is not None else 0,
                            "holders": machine.holders[:5], "ram_holders": machine.ram_holders[:3],
                            "card": machine.card})
            return False
        except Exception:  # noqa: BLE001  (admission never costs a prompt: on any failure it runs)
            log.exception("[VRAM Budget] admission could not judge prompt %s; running it", prompt_id)
            self._event("run", prompt_id, "not held: the admission check failed")
            return True

    def _judge(self, prompt_id: str, prompt: dict, machine: Machine) -> Judgement:
        j = self.decide(prompt, machine)
        self.judged[prompt_id] = j
        while len(self.judged) > 64:
            self.judged.pop(next(iter(self.judged)))
        return j

    def _run_fixed(self, prompt_id: str, head, machine: Machine) -> bool:
        """With fixes allowed: when prompt_fixes() make the held prompt fit now, put the fixed prompt in its place
        (same number, id and outputs: the queue's order is untouched) and run it."""
        if not (self.fixes and self.fixer):
            return False
        fixed, words = self.fixer(head[2])
        if not words:
            return False
        key = f"{prompt_id}\x00fixed"  # judged once, like the prompt itself; again only when its thresholds are met
        j = self.judged.get(key)
        if j is None or (j.action == "hold" and admits(machine, j)):
            j = self._judge(key, fixed, machine)
        if j.action != "run" or not j.why.startswith("fits now"):
            return False
        with self.queue.mutex:
            if not self.queue.queue or str(self.queue.queue[0][1]) != prompt_id:
                return False
            self.queue.queue[0] = (head[0], head[1], fixed, *head[3:])  # the heap's root keeps its number
        self._event("fixed", prompt_id, "run with " + "; ".join(words))
        return True

    # -- the user's side -----------------------------------------------------------------------------
    def set_fixes(self, on: bool) -> None:
        self.fixes = bool(on)
        self.wake.set()

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
        return {"enabled": self.enabled, "fixes": self.fixes, "held": held, "events": list(self.events)}

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
        if kind in ("held", "started", "released", "cancelled", "fixed"):
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

    ram = _ram_view(bridge, cotenants)
    dev = _live_cuda(bridge)
    if dev is not None:
        cuda = next((d for d in bridge.cuda_devices() if d.is_compute_device), None)
        procs = bridge.gpu_processes(cuda) if cuda is not None else None
        named = cotenants.describe_processes([(p.pid, p.name, p.used) for p in procs or ()])
        return Machine(dev.name, dev.other_processes_bytes, [c.to_dict() for c in named if not c.is_self], **ram)
    snap = cotenants.smi_snapshot(0)
    if snap is None:
        return None
    others = [c for c in snap["cotenants"] if not c["is_self"]]
    return Machine(snap["name"], sum(c["used"] for c in others), others, **ram)


RAM_HOLDER_MIN = GiB  # a program holding less RAM than this is not named as what a prompt waits for
MAX_SCAN = 5000


def _ram_view(bridge, cotenants) -> dict:
    """System RAM now: what the OS and other programs hold (the estimate's Host.other_bytes), the three largest
    other programs (RSS of at least RAM_HOLDER_MIN) named as on the card, and what is left without them."""
    host = bridge.live_host()
    others = int(host.other_bytes or 0)
    rows = []
    try:
        import psutil  # noqa: PLC0415

        me = os.getpid()
        for i, p in enumerate(psutil.process_iter(["pid", "name", "memory_info"])):
            if i >= MAX_SCAN:
                break
            info = p.info
            rss = int(getattr(info.get("memory_info"), "rss", 0) or 0)
            if info.get("pid") != me and rss >= RAM_HOLDER_MIN:
                rows.append((info["pid"], info.get("name") or "", rss))
    except Exception:  # noqa: BLE001  (no process list: RAM holders are not named)
        rows = []
    rows = sorted(rows, key=lambda r: -r[2])[:3]
    holders = [c.to_dict() for c in cotenants.describe_processes(rows)]
    floor = max(0, others - sum(h["used"] for h in holders))
    return {"ram_others_bytes": others, "ram_holders": holders, "ram_floor_bytes": floor}


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
    from .estimator.machine.device import device_for_launch  # noqa: PLC0415

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
    from .estimator.cli.agent import fits_answer  # noqa: PLC0415
    from .estimator.plan.planning import estimate_prompt  # noqa: PLC0415

    from .live_models import live_hooks  # noqa: PLC0415

    device = _live_cuda(bridge) or _smi_device(bridge, machine)
    resolver = bridge.model_resolver()

    host = device.host

    def runs(others: int, ram_others: int) -> tuple[bool, bool, str]:
        at = replace(device, other_processes_bytes=others,
                     host=replace(host, other_bytes=ram_others) if host is not None and host.known else host)
        budget = estimate_prompt(prompt, at, resolver).to_dict()
        answer = fits_answer({"budget": budget})
        if not answer["complete"]:
            why = "; ".join([f"{m.get('name', '')} {m.get('problem', '')}" for m in budget.get("missing", [])][:2]
                            + list(budget.get("incomplete", []))[:1]).strip()
        else:
            why = (f"{answer['vram_verdict']}: {fmt_gib(answer['peak_bytes'] or 0)} at the peak, "
                   f"{fmt_gib(answer['capacity_bytes'] or 0)} usable with {fmt_gib(others)} held by other processes")
        return answer["complete"], answer["fits"], why

    with live_hooks(wait_s=LIVE_WAIT_S):  # the same estimate as the node's and the panel's (ComfyUI asked)
        return judge(runs, machine.others_bytes, machine.ram_others_bytes, machine.ram_floor_bytes)


def live_fixer(prompt: dict) -> tuple[dict, list[str]]:
    """prompt_fixes with this ComfyUI's text_encoders folder (folder_paths) and whether VAE Decode (Auto Tiled) is
    registered."""
    import folder_paths  # noqa: PLC0415
    import nodes  # noqa: PLC0415

    files: set[str] = set()
    for folder in ("text_encoders", "clip"):
        try:
            files.update(folder_paths.get_filename_list(folder))
        except Exception:  # noqa: BLE001  (an older ComfyUI without that folder name)
            continue
    return prompt_fixes(prompt, files, "VAEDecodeAutoTiled" in nodes.NODE_CLASS_MAPPINGS)
