"""Memory that creeps up run after run (issue 35): "first run completes fine, the fifth dies".

After each prompt the run tracker takes a baseline: this process's RAM and PyTorch's VRAM, less the weights of the
models ComfyUI keeps loaded on purpose (they are reused, not leaked). Across the last WINDOW runs of this ComfyUI
process, growth above noise is flagged, with the node packs every one of those runs used and the fixes.
Pure: run_log.py measures, routes.py shows.
"""
from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass, field

from .estimator.units import GiB, MiB

WINDOW = 5  # runs
MIN_PER_RUN = 64 * MiB  # a run's growth below this is noise (Python's allocator, caches)
MIN_TOTAL = 256 * MiB  # and the window's growth must reach this


@dataclass(frozen=True)
class Baseline:
    prompt_id: str
    ram_bytes: int  # process RSS less RAM of the models ComfyUI keeps loaded
    vram_bytes: int | None  # PyTorch allocated less the models' bytes on the GPU; None without CUDA
    models: int  # how many models ComfyUI keeps loaded
    packs: tuple = field(default_factory=tuple)  # custom node packs the prompt used

    def to_dict(self) -> dict:
        return asdict(self)


def growth(values: list[int]) -> tuple[float, int, int]:
    """(least-squares growth a run, last − first, steps that rose by half a run's noise floor or more)."""
    n = len(values)
    if n < 2:
        return 0.0, 0, 0
    mx = (n - 1) / 2
    my = sum(values) / n
    slope = sum((i - mx) * (v - my) for i, v in enumerate(values)) / sum((i - mx) ** 2 for i in range(n))
    rises = sum(1 for a, b in zip(values, values[1:]) if b >= a + MIN_PER_RUN // 2)
    return slope, values[-1] - values[0], rises


def creeping(values: list[int]) -> float | None:
    """The growth a run when the series creeps: a full window, growing run after run (all steps but one up), not
    one step (a cache filled once); else None."""
    if len(values) < WINDOW:
        return None
    slope, total, rises = growth(values[-WINDOW:])
    return slope if slope >= MIN_PER_RUN and total >= MIN_TOTAL and rises >= WINDOW - 2 else None


class LeakWatch:
    def __init__(self, keep: int = 50):
        self.baselines: deque = deque(maxlen=keep)

    def add(self, b: Baseline) -> dict | None:
        self.baselines.append(b)
        return self.flag()

    def flag(self) -> dict | None:
        """The current creep, if any: {"kind": "ram" | "vram", "per_run_bytes", "runs", "text", "fixes"}."""
        window = list(self.baselines)[-WINDOW:]
        for kind, values in (("ram", [b.ram_bytes for b in window]),
                             ("vram", [b.vram_bytes for b in window] if all(b.vram_bytes is not None
                                                                             for b in window) else [])):
            per_run = creeping(values)
            if per_run is None:
                continue
            # the packs every run that grew used (a run that kept its memory is not a suspect's)
            grew = [b for a, b in zip(window, window[1:])
                    if (b.ram_bytes if kind == "ram" else b.vram_bytes) >=
                    (a.ram_bytes if kind == "ram" else a.vram_bytes) + MIN_PER_RUN // 2]
            packs = sorted(set.intersection(*(set(b.packs) for b in grew))) if grew else []
            models_grew = window[-1].models > window[0].models
            what = "RAM" if kind == "ram" else "VRAM"
            text = (f"{what} after each run grew {per_run / GiB:.2f} GiB a run over the last {len(window)} runs "
                    f"({(values[-1] - values[0]) / GiB:.2f} GiB in all), not counting the models ComfyUI keeps loaded")
            if models_grew:
                text += f"; ComfyUI holds {window[-1].models - window[0].models} more models than {len(window)} runs ago"
            if packs:
                text += f"; every run that grew used {', '.join(packs[:3])}"
            fixes = ["free the cache (Free cache in this panel, or ComfyUI's Unload models)",
                     "start ComfyUI with --cache-none if it comes back", "restart ComfyUI before the next long render"]
            if packs:
                fixes.insert(0, f"update {', '.join(packs[:3])} (or run without it to confirm)")
            return {"kind": kind, "per_run_bytes": int(per_run), "total_bytes": int(values[-1] - values[0]),
                    "runs": len(window), "packs": packs, "text": text, "fixes": fixes}
        return None

    def state(self) -> dict:
        recent = list(self.baselines)[-WINDOW:]
        return {"runs": len(self.baselines), "recent": [b.to_dict() for b in recent], "flag": self.flag()}
