"""VRAM Budget node: drop it into any workflow, no wiring; it estimates the running prompt.

It is an output node with no inputs from other nodes, so ComfyUI runs it first
(comfy_execution/graph.py ux_friendly_pick_node): with "stop if it won't fit" the prompt stops before any
model loads, instead of an OOM twenty minutes in. The stop is a verdict, not a crash (issue 31): the node
shows its report, the panel a plain message with the first fix ("vram_budget.stopped"), and the prompt ends
as ComfyUI's own interrupt (InterruptProcessingException: execution_interrupted, no traceback, no error
report, nothing the OOM diagnosis would record).
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace

from . import comfy_bridge, run_log
from .estimator.machine.device import Device
from .estimator.plan.planning import estimate_prompt
from .live_models import live_hooks
from .estimator.errors import VramBudgetError
from .estimator.machine.gpus import CARDS
from .estimator.machine.host_memory import Host
from .estimator.units import GiB
from .estimator.plan.report import format_report

THIS_GPU = "this GPU (detected)"
log = logging.getLogger("vram_budget")


# How long the node waits for a first-time trace of a model it has not seen (a trace runs once per
# model and shape, then comes from the cache); past it the shipped table answers this run.
LIVE_WAIT_S = 15.0

class BudgetWontFitError(VramBudgetError):
    pass


def live_device(memory_mode: str = "auto", vram_gb: float = 0.0, gpu: str = THIS_GPU) -> Device:
    """The Device to estimate against: a catalogue card, a typed budget, or the GPU ComfyUI runs
    on; on a CPU-only ComfyUI, system RAM (where the models live then). The panel's estimate
    route asks the same function (comfy_bridge.estimator_device), so both give one answer."""
    return comfy_bridge.estimator_device(None if gpu == THIS_GPU else gpu, memory_mode, vram_gb)[0]


def with_ram_budget(device: Device, ram_gb: float) -> Device:
    """A typed RAM budget (GiB, no swap) in place of the machine's; 0 keeps the machine's."""
    if not ram_gb or ram_gb <= 0 or ram_gb != ram_gb:
        return device
    host = device.host or Host()
    return replace(device, host=replace(host, ram_total_bytes=int(ram_gb * GiB), swap_total_bytes=0, other_bytes=None,
                                        source="budget input"))


class VRAMBudget:
    DESCRIPTION = ("Predicts the peak VRAM of every stage of this workflow from the model files' headers, says "
                   "whether it fits this GPU and the cheapest fixes. No wiring needed.")
    CATEGORY = "VRAM Budget"
    RETURN_TYPES = ("STRING",)
    RETURN_NAMES = ("report",)
    FUNCTION = "run"
    OUTPUT_NODE = True

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {},
            "optional": {
                "gpu": ([THIS_GPU] + [c.name for c in CARDS], {"default": THIS_GPU,
                        "tooltip": "Estimate for this GPU, or for a card you might rent"}),
                "vram_budget_gb": ("FLOAT", {"default": 0.0, "min": 0.0, "max": 4096.0, "step": 0.5,
                                   "display_name": "vram_budget_gib",
                                   "tooltip": "Memory to plan for, in GiB (1 GiB = 1024³ bytes, the unit PyTorch "
                                              "prints); 0 = the detected GPU"}),
                "stop_if_wont_fit": ("BOOLEAN", {"default": False,
                                     "tooltip": "Fail the prompt before any model loads if ComfyUI would run out of "
                                                "memory even with its offloading (never for a workflow that only "
                                                "runs slower)"}),
                "memory_mode": (["auto", "classic", "dynamic"], {"default": "auto",
                                "tooltip": "auto = detect from this ComfyUI (Dynamic VRAM streams weights)"}),
                "stop_if_slower_than": ("FLOAT", {"default": 0.0, "min": 0.0, "max": 100.0, "step": 0.5,
                                        "tooltip": "With stop_if_wont_fit: also stop when streaming weights would make "
                                                   "sampling more than this many times slower (0 = never)"}),
                "free_memory_after_run": ("BOOLEAN", {"default": False,
                                          "tooltip": "When this run ends, unload every model from the GPU (ComfyUI's "
                                                     "own /free, as its \"Unload models\" command does), so other "
                                                     "programs get the VRAM back. The next run loads them again."}),
                "ram_budget_gb": ("FLOAT", {"default": 0.0, "min": 0.0, "max": 65536.0, "step": 1.0,
                                  "display_name": "ram_budget_gib",
                                  "tooltip": "System RAM to plan for, in GiB, with no swap (what would 32 GB do?); "
                                             "0 = this machine's RAM and swap, as the OS reports them"}),
            },
            "hidden": {"prompt": "PROMPT", "extra_pnginfo": "EXTRA_PNGINFO", "unique_id": "UNIQUE_ID"},
        }

    @classmethod
    def IS_CHANGED(cls, **kwargs):
        return float("nan")  # free memory changes between runs: always re-estimate

    def run(self, gpu=THIS_GPU, vram_budget_gb=0.0, stop_if_wont_fit=False, memory_mode="auto",
            stop_if_slower_than=0.0, free_memory_after_run=False, ram_budget_gb=0.0, prompt=None, extra_pnginfo=None,
            unique_id=None):
        started = time.perf_counter()
        try:
            vram_budget_gb = _in_range("vram_budget_gib", vram_budget_gb, 0.0, 4096.0)
            ram_budget_gb = _in_range("ram_budget_gib", ram_budget_gb, 0.0, 65536.0)
            stop_if_slower_than = _in_range("stop_if_slower_than", stop_if_slower_than, 0.0, 100.0)
            if memory_mode not in ("auto", "classic", "dynamic"):
                raise VramBudgetError(f"memory_mode {str(memory_mode)[:40]!r}: auto, classic or dynamic")
            if not isinstance(gpu, str) or len(gpu) > 120:
                raise VramBudgetError("gpu: a card name from the list")
            # for this GPU: the machine's CUDA devices measured once, cuda:0 first (each device's peak and the
            # placement plan over the others, issue 24); a named card or a typed budget is one card
            devices = (comfy_bridge.estimator_devices(None, (), memory_mode)[0]
                       if gpu == THIS_GPU and not vram_budget_gb else [live_device(memory_mode, vram_budget_gb, gpu)])
            device, *others = [with_ram_budget(d, ram_budget_gb) for d in devices]
            source = prompt if prompt else (extra_pnginfo or {}).get("workflow")
            if not source:
                raise VramBudgetError("no prompt to estimate (the hidden PROMPT input is empty)")
            with live_hooks(wait_s=LIVE_WAIT_S):  # ComfyUI's own detection / tracing (live_models.py)
                budget = estimate_prompt(source, device, comfy_bridge.model_resolver(), capacities=None, others=others)
            text = format_report(budget)
            summary = budget.to_dict()
        except VramBudgetError as exc:
            text, budget, summary = f"VRAM Budget could not estimate this workflow: {exc}", None, {"error": str(exc)}
        except Exception as exc:  # never break a prompt because the estimate failed
            log.exception("[VRAM Budget] estimate failed")
            text, budget, summary = f"VRAM Budget: internal error ({type(exc).__name__}: {exc})", None, {"error": str(exc)}
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.info("[VRAM Budget] %s (%.0f ms)", one_line(budget, text), elapsed_ms)
        log.debug("[VRAM Budget] report:\n%s", text)
        if budget is not None:
            record_prediction(summary, device, gpu == THIS_GPU and not vram_budget_gb, unique_id)
        reason = budget.stop_reason(stop_if_slower_than) if (stop_if_wont_fit and budget is not None) else ""
        if reason:
            stop_prompt(budget, reason, text, summary, unique_id)
        if free_memory_after_run:
            request_unload_after_run()
        return {"ui": {"text": [text], "vram_budget": [summary], "verdict_line": [verdict_line(text)]},
                "result": (text,)}


def _in_range(name: str, value, lo: float, hi: float) -> float:
    """A number input (a linked one too: ComfyUI does not range-check those, issue 37), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or not lo <= value <= hi:
        raise VramBudgetError(f"{name} {str(value)[:32]}: give a number from {lo:g} to {hi:g}")
    return float(value)


def stopped_message(budget, reason: str, node_id) -> dict:
    """What the panel shows when the node stops a prompt: the verdict, why, and the first fix (user words)."""
    first = next(iter(budget.remedies), None) if budget.vram_verdict == "oom" else None
    host = budget.host
    if first is None and host is not None and host.remedies:
        first = host.remedies[0]
    return {"node_id": None if node_id is None else str(node_id), "verdict": budget.verdict,
            "headline": "Stopped before any model loaded: this prompt would run out of memory"
            if budget.verdict == "oom" else "Stopped before any model loaded: sampling would be too slow",
            "reason": reason, "first_fix": getattr(first, "title", "") if first is not None else "",
            "verdict_line": ""}


def stop_prompt(budget, reason: str, text: str, summary: dict, node_id) -> None:
    """End the prompt as ComfyUI's own interrupt, after showing the node's report and telling the panel why."""
    message = stopped_message(budget, reason, node_id)
    message["verdict_line"] = verdict_line(text)
    log.warning("[VRAM Budget] stopped the prompt before any model loaded: %s", reason)
    try:
        from server import PromptServer  # noqa: PLC0415

        srv = PromptServer.instance
    except Exception:  # noqa: BLE001  (no server: a script or a test calls the node directly)
        srv = None
    if srv is not None:
        pid = getattr(srv, "last_prompt_id", None)
        message["prompt_id"] = pid
        try:  # the node's own report, as if it had returned (it never does)
            if node_id is not None:
                srv.send_sync("executed", {"node": str(node_id), "display_node": str(node_id), "prompt_id": pid,
                                           "output": {"text": [text], "vram_budget": [summary],
                                                      "verdict_line": [message["verdict_line"]]}},
                              getattr(srv, "client_id", None))
        except Exception:  # noqa: BLE001
            log.debug("[VRAM Budget] could not show the report on the node", exc_info=True)
        try:
            srv.send_sync("vram_budget.stopped", message)
        except Exception:  # noqa: BLE001
            log.warning("[VRAM Budget] could not tell the panel why the prompt stopped", exc_info=True)
    try:
        import comfy.model_management as mm  # noqa: PLC0415
    except ImportError:  # outside ComfyUI
        raise BudgetWontFitError(f"VRAM Budget stopped this prompt before any model loaded: {reason}.\n\n" + text)
    raise mm.InterruptProcessingException()


def record_prediction(summary: dict, device: Device, this_gpu: bool, node_id) -> None:
    """Hand the prediction to the run log: it is set against the measured peak when the prompt ends."""
    live = this_gpu and device.source == "live"
    run_log.predict(run_log.prediction_from_budget(summary, node_id, device.context_bytes, live))


def one_line(budget, text: str) -> str:
    """The per-run log line: verdict, risk, peak, card (the report goes to the debug log)."""
    if budget is None:
        return text.splitlines()[0] if text else "no estimate"
    risk = getattr(budget, "oom_risk", None)
    return (f"{budget.verdict.replace('_', ' ')} on {budget.device.name}: peak {budget.peak_bytes / GiB:.2f} GiB"
            + (f", RAM peak {budget.host.peak_bytes / GiB:.2f} GiB" if budget.host is not None else "")
            + (" (out of system RAM)" if budget.host is not None and budget.host.outcome == "oom" else "")
            + (f", OOM risk {risk.level}" if risk is not None else ""))


def verdict_line(report: str) -> str:
    """The report's "Verdict: ..." line (shown large and coloured on the node), else its first line."""
    lines = report.splitlines()
    return next((ln for ln in lines if ln.startswith("Verdict:")), lines[0] if lines else "")


def request_unload_after_run() -> bool:
    """Ask ComfyUI to unload all models once the running prompt ends: the "unload_models" flag that
    POST /free sets (server.py, PromptQueue.set_flag); the prompt worker acts on it right after the
    prompt (main.py, q.get_flags())."""
    try:
        from server import PromptServer  # noqa: PLC0415

        PromptServer.instance.prompt_queue.set_flag("unload_models", True)
        return True
    except Exception:  # noqa: BLE001  (no server: a script or a test)
        log.warning("[VRAM Budget] free_memory_after_run: no ComfyUI server to ask")
        return False


NODE_CLASS_MAPPINGS = {"VRAMBudget": VRAMBudget}
NODE_DISPLAY_NAME_MAPPINGS = {"VRAMBudget": "VRAM Budget"}
