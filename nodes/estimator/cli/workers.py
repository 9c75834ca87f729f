"""More than one machine (issue 24): the same workflow on every worker, as ComfyUI-Distributed (its workers
each run the whole workflow, with their own seed) and SwarmUI (one backend a job) run it; neither checks
first that it fits there. Each worker is estimated on its own card and RAM with the one estimator
(planning.estimate); the ones that run are listed fastest first, the ones that would run out of memory are
left out, each with the cheapest fix that makes it run (fp8 weights, tiled decode, fewer frames ...).

Speed: the predicted seconds of the sampling stages, runtime.py's own model (a step's compute at the card's
tensor throughput, or its weight copies over the host link when streaming, whichever is longer, times the
steps), plus the one-off extra seconds it predicts (a failed decode and its tiled retry). A stage it has no
speed for leaves the worker's time unknown, sorted last among the ones that run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..plan.budget import Budget
from ..machine.device import Device
from ..plan.planning import estimate
from ..machine.resolve import Resolver
from ..units import fmt_gib
from ..workload import Workload

RUNS = ("fits", "tight", "runs_slower")


@dataclass(frozen=True)
class WorkerPlan:
    name: str  # as given ("RTX 4090", "RTX 3060:32" ...)
    card: str
    ram_bytes: int | None
    verdict: str
    vram_verdict: str
    peak_bytes: int
    seconds: float | None  # predicted sampling seconds (None: not predicted)
    fix: str = ""  # the cheapest remedy that makes a worker that would not run, run
    fix_kind: str = ""
    why: str = ""

    @property
    def runs(self) -> bool:
        return self.verdict in RUNS

    def to_dict(self) -> dict:
        return {"name": self.name, "card": self.card, "ram_bytes": self.ram_bytes, "verdict": self.verdict,
                "vram_verdict": self.vram_verdict, "peak_bytes": self.peak_bytes,
                "seconds": None if self.seconds is None else round(self.seconds, 1), "runs": self.runs,
                "fix": self.fix, "fix_kind": self.fix_kind, "why": self.why}


def sampling_seconds(budget: Budget) -> float | None:
    """The sampling stages' predicted seconds plus the one-off extras (speed.run_time); None when a sampling
    stage has no predicted step time."""
    t = budget.run_time
    return None if t is None else t.run_seconds


def plan_workers(workload: Workload, workers: Sequence[tuple[str, Device]],
                 resolver: Resolver | None = None) -> tuple[tuple[WorkerPlan, ...], tuple[WorkerPlan, ...]]:
    """(the workers that run it, fastest first; the ones left out, each with why and its fix)."""
    runs, out = [], []
    for name, device in workers:
        b = estimate(workload, device, resolver)
        fix = None
        if b.verdict not in RUNS:
            # on this worker (another card is another worker): its card's fixes when the VRAM is short, the
            # RAM fixes (host_memory.host_remedies) when the RAM is
            if b.vram_verdict == "oom" or b.host is None:
                fix = next((r for r in b.remedies if (r.fixes or r.runs) and r.kind != "bigger_card"), None)
            else:
                fix = next((r for r in b.host.remedies if r.fixes), None)
        ram = device.host.ram_total_bytes if device.host is not None else None
        if b.verdict in ("fits", "tight"):
            why = f"{fmt_gib(b.peak_bytes)} peak on {fmt_gib(device.capacity_bytes)} usable"
        elif b.verdict == "runs_slower":
            streams = f"streams {fmt_gib(b.offload_bytes)} of weights from RAM" if b.offload_bytes else ""
            host = b.host.why if b.host is not None and b.host.outcome != "fits" and b.host.why else ""
            why = "; ".join(x for x in (streams, host) if x) or "runs slower"
        elif b.verdict == "unknown":
            why = "can't tell: " + (b.notes[0] if b.notes else "part of the workflow is not priced")
        elif b.vram_verdict == "oom":
            why = f"out of VRAM: needs {fmt_gib(b.peak_bytes)}, {fmt_gib(device.capacity_bytes)} usable"
        else:
            why = "out of system RAM" + (f" ({b.host.why})" if b.host is not None and b.host.why else "")
        plan = WorkerPlan(name, device.name, ram, b.verdict, b.vram_verdict or b.verdict, b.peak_bytes,
                          sampling_seconds(b), fix.title if fix else "", fix.kind if fix else "", why)
        (runs if plan.runs else out).append(plan)
    runs.sort(key=lambda p: (p.seconds is None, p.seconds or 0.0))
    return tuple(runs), tuple(out)


def format_workers(runs: Sequence[WorkerPlan], left_out: Sequence[WorkerPlan]) -> list[str]:
    out = ["", "Workers (the whole workflow on each, as ComfyUI-Distributed / SwarmUI run it), fastest first:"]
    if not runs:
        out.append(" - none of them runs it as it is")
    for i, p in enumerate(runs, 1):
        speed = f"sampling ≈ {p.seconds:,.0f} s" if p.seconds is not None else "speed not predicted"
        out.append(f" {i}. {p.name}: {p.verdict.replace('_', ' ')}, {p.why}; {speed}")
    for p in left_out:
        fix = f"; would run with: {p.fix}" if p.fix else "; no single fix makes it run"
        out.append(f" - left out: {p.name}: {p.why}{fix}")
    return out
