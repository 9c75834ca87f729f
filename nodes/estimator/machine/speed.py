"""How long a run takes, said first when everything runs (issue 32): the sampling stages' predicted step times
(runtime.StageRun.step_seconds: a step's compute at the card's tensor throughput, or its weight copies from RAM /
disk, whichever is longer) times their steps, the one-off extra seconds, a range from published speeds, and what
bounds it. The range is the spread of published / predicted step times on the calibration half of
data/speed/speed.jsonl (bench/speed_evidence.py prints both halves; docs/runtime.md "Time first" has the table).
"""
from __future__ import annotations

from dataclasses import dataclass

from .host_memory import DISK_BYTES_PER_S
from ..workload import SAMPLE

DEFAULT_STEPS = 20  # a sampler whose steps the graph does not fix
# Published step time / ours, 10th-90th percentile on the calibration half of data/speed/speed.jsonl, per card maker
# (bench/speed_evidence.py prints them and the validation score; tests/test_speed.py checks they are its output).
# Measured, not assumed: the range a run's time is quoted in. NVIDIA: 7 runs (6 of them one GTX 1070), AMD: 4;
# a maker without published runs (Intel, Apple) gets the span of both.
RANGES = {"NVIDIA": (0.89, 2.44), "AMD": (2.12, 20.08)}
RANGE_OTHER = (min(lo for lo, _ in RANGES.values()), max(hi for _, hi in RANGES.values()))
RANGE_BASIS = ("step = the card's 16-bit tensor throughput at 50 % use, or its weight copies over the host link; "
               "range = published step times of {vendor} cards against ours, 10th-90th percentile, calibration half "
               "of data/speed/speed.jsonl")
BOUNDS = ("compute", "ram", "disk")  # stable values of time.bound in --json


@dataclass(frozen=True)
class RunTime:
    """Predicted time of one run of the workflow (the sampling stages and the one-off extras). Seconds."""

    step_seconds: float  # the slowest sampling stage's step
    run_seconds: float  # every sampling stage x its steps, plus the one-off extras
    low_seconds: float
    high_seconds: float
    steps: int  # sampling steps of the run, every sampling stage
    steps_assumed: bool  # a sampler whose steps the workflow does not fix counted as DEFAULT_STEPS
    bound: str  # one of BOUNDS: what the slowest stage waits on
    basis: str = ""

    def to_dict(self) -> dict:
        return {"step_seconds": round(self.step_seconds, 2), "run_seconds": round(self.run_seconds, 1),
                "low_seconds": round(self.low_seconds, 1), "high_seconds": round(self.high_seconds, 1),
                "steps": self.steps, "steps_assumed": self.steps_assumed, "bound": self.bound, "basis": self.basis}

    def words(self) -> str:
        """'≈ 4–12 min a run (40 steps at 6.0–16 s/step, compute-bound)': the step in the run's own range."""
        steps = f"{self.steps} steps{' (assumed)' if self.steps_assumed else ''}"
        cause = {"compute": "compute-bound", "ram": "bound by weight copies from RAM",
                 "disk": "bound by weight reads from disk"}[self.bound]
        lo = self.step_seconds * self.low_seconds / self.run_seconds if self.run_seconds else self.step_seconds
        hi = self.step_seconds * self.high_seconds / self.run_seconds if self.run_seconds else self.step_seconds
        return f"≈ {span(self.low_seconds, self.high_seconds)} a run ({steps} at {_secs(lo)}–{_secs(hi)} s/step, {cause})"


def _secs(s: float) -> str:
    return f"{s:.2f}" if s < 1 else f"{s:.1f}" if s < 10 else f"{s:,.0f}"


def span(low: float, high: float) -> str:
    """'40–90 s', '3–8 min', '1.2–3.0 h': one unit, the larger end's."""
    if high < 120:
        return f"{low:,.0f}–{high:,.0f} s"
    if high < 2 * 3600:
        return f"{low / 60:,.0f}–{high / 60:,.0f} min"
    return f"{low / 3600:.1f}–{high / 3600:.1f} h"


def run_time(stages, runs, device=None, host=None) -> RunTime | None:
    """The run's time from the stage budgets, their runs and the host side (host_memory.HostBudget: weights
    that do not stay in RAM are read again from disk every step, at the --disk speed); None when a sampling
    stage has no predicted step time (nothing is said rather than a guess) or there is no sampling stage."""
    host_runs = list(getattr(host, "runs", ()) or ())
    disk_bps = getattr(getattr(host, "host", None), "disk_bytes_per_s", 0.0) or DISK_BYTES_PER_S
    # fast disk (0.37+): the streamed weights are pinned by the code (ops.py:232 in 0.38.1), but a published run
    # read them from the SSD every step (Comfy-Org/ComfyUI#16415): the range's slow end allows for it
    fast_disk = bool(getattr(device, "fast_disk", False)) and disk_bps > 0
    total = slowest = step = worst = 0.0
    steps, assumed, bound, seen = 0, False, "compute", False
    for i, (sb, run) in enumerate(zip(stages, runs)):
        if sb.stage.kind != SAMPLE:
            continue
        if run is None or run.step_seconds is None:
            return None
        n = sb.stage.steps or DEFAULT_STEPS
        assumed |= not sb.stage.steps
        per_step, cause = run.step_seconds, ("ram" if run.slowdown > 1.0 and run.streamed_bytes > 0 else "compute")
        hr = host_runs[i] if i < len(host_runs) else None
        if hr is not None and hr.outcome == "thrashing" and disk_bps:
            reread = hr.swap_bytes / disk_bps  # host_memory._judge: the streamed weights RAM cannot keep
            per_step += reread
            if reread > run.step_seconds / 2:
                cause = "disk"
        steps += n
        total += per_step * n
        worst += max(per_step, run.streamed_bytes / disk_bps if fast_disk else 0.0) * n
        step = max(step, per_step)
        seen = True
        if per_step * n >= slowest:
            slowest, bound = per_step * n, cause
    if not seen:
        return None
    extra = sum(getattr(r, "extra_seconds", 0.0) or 0.0 for r in runs if r is not None)
    total += extra
    vendor = getattr(device, "vendor", "NVIDIA")
    low, high = RANGES.get(vendor, RANGE_OTHER)
    basis = RANGE_BASIS.format(vendor=vendor if vendor in RANGES else "NVIDIA and AMD")
    return RunTime(step, total, total * low, (worst + extra) * high, steps, assumed, bound, basis)
