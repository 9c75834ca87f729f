"""Capacity answers for any image or video workflow: the largest batch, resolution or frame count
that stays resident on the card, and the largest that runs at all (ComfyUI streaming weights or
tiling the VAE), each found by re-running the shared estimator and runtime simulation.

The search is the Wan planner's idea made generic: the outcome is monotone in the size (a
bigger batch, more pixels or more frames never needs less memory), so a galloping search over the
size's steps finds the boundary in O(log n) estimates. Model files are resolved once and reused.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import budget as budget_mod
from ..errors import VramBudgetError
from ..workload import LatentShape, Workload, with_frames, with_pixels
from ..serial import JsonFields

WHATS = ("batch", "resolution", "frames")
MAX_STEPS = 4096  # the search never looks past this many steps of a size (EmptyLatentImage batch_size max)
MAX_RESOLUTION = 16384  # nodes.MAX_RESOLUTION: no latent node accepts a larger side


@dataclass(frozen=True)
class Capacity(JsonFields):
    what: str  # batch | resolution | frames
    current: str  # what the workflow asks for ("batch 1", "1024×1024", "81 frames")
    resident: str | None  # the largest that stays resident (None: not even the smallest)
    runs: str | None  # the largest that runs at all (streaming / tiled)
    resident_value: int | None
    runs_value: int | None
    note: str = ""


    def text(self) -> str:
        res = self.resident or "nothing (not even the smallest)"
        run = self.runs or "nothing (not even the smallest)"
        return (f"Largest {self.what} (now {self.current}): {res} stays resident; {run} runs at all"
                + (f" ({self.note})" if self.note else ""))


def _main_latent(workload: Workload) -> LatentShape:
    for stage in workload.stages:
        if stage.kind == "sample" and stage.latent is not None:
            return stage.latent
    raise VramBudgetError("the workflow has no sampler with a known latent size: nothing to scale")


def scaled(workload: Workload, old: LatentShape, new: LatentShape) -> Workload:
    """Every stage that works on the workflow's latent (samplers, VAE decode/encode) gets the new one."""
    def same(lat):
        return lat is not None and (lat.height, lat.width, lat.frames) == (old.height, old.width, old.frames)

    stages = tuple(replace(s, latent=replace(new, channels=s.latent.channels)) if same(s.latent) else s
                   for s in workload.stages)
    return replace(workload, stages=stages)


def _with_scale(lat: LatentShape, step: int) -> tuple[LatentShape, str]:
    """The latent with its longer side at `step` multiples of 64 px (aspect kept, 16-px grid)."""
    sc = lat.spatial_compression or 8
    pw, ph = lat.pixel_width or lat.width * sc, lat.pixel_height or lat.height * sc
    k = 64 * step / max(pw, ph)
    w = max(16, int(round(pw * k / 16)) * 16)
    h = max(16, int(round(ph * k / 16)) * 16)
    return with_pixels(lat, w, h), f"{w}×{h}"


def _with_latent_frames(lat: LatentShape, step: int) -> tuple[LatentShape, str]:
    frames = (step - 1) * (lat.temporal_compression or 4) + 1
    return with_frames(lat, frames), f"{frames} frames"


def applicable(workload: Workload) -> tuple[str, ...]:
    """What can be scaled in this workflow: batch and resolution for any sampled latent, frames
    for video."""
    try:
        lat = _main_latent(workload)
    except VramBudgetError:
        return ()
    return WHATS if lat.is_video else WHATS[:2]


def find(workload: Workload, device, what: str, resolver=None, first=None) -> Capacity:
    """The largest `what` that stays resident and the largest that runs, on `device`.
    `first`: the workflow's own Budget when the caller has it (its resolved models are reused)."""
    if what not in WHATS:
        raise VramBudgetError(f"--max {what}: choose one of {', '.join(WHATS)}")
    base = _main_latent(workload)
    if first is None:
        first = budget_mod.assess(workload, device, resolver)
    models = dict(first.models)

    if what == "batch":
        start, current = max(1, base.batch), f"batch {base.batch}"

        def shape(n):
            return replace(base, batch=n), f"batch {n}"
    elif what == "resolution":
        sc = base.spatial_compression or 8
        start = max(1, round(max(base.pixel_width or base.width * sc, base.pixel_height or base.height * sc) / 64))
        current = f"{base.pixel_width or base.width * sc}×{base.pixel_height or base.height * sc}"

        def shape(n):
            return _with_scale(base, n)
    else:
        if not base.is_video:
            raise VramBudgetError("--max frames: this workflow's latent is an image, not a video")
        start = base.frames or 1
        current = f"{base.pixel_frames or ((start - 1) * (base.temporal_compression or 4) + 1)} frames"

        def shape(n):
            return _with_latent_frames(base, n)

    cache: dict[int, str] = {}

    def outcome(n: int) -> str:
        if n not in cache:
            lat, _ = shape(n)
            b = budget_mod.assess(scaled(workload, base, lat), device, resolver, models=models)
            cache[n] = b.outcome
        return cache[n]

    limit = MAX_RESOLUTION // 64 if what == "resolution" else MAX_STEPS
    resident = _largest(lambda n: outcome(n) == "fits", start, limit)
    runs = _largest(lambda n: outcome(n) in ("fits", "runs_slower"), start, limit)
    note = "" if first.complete else "a model could not be priced: these are upper bounds"
    return Capacity(what, current, shape(resident)[1] if resident else None, shape(runs)[1] if runs else None,
                    resident, runs, note)


def _largest(ok, start: int, limit: int = MAX_STEPS) -> int | None:
    """The largest n in 1..limit with ok(n), assuming ok is monotone (true up to a point, then false)."""
    if not ok(1):
        return None
    lo = 1
    hi = min(limit, max(2, start))
    while ok(hi):  # gallop up from the workflow's own size
        lo = hi
        if hi >= limit:
            return hi
        hi = min(limit, hi * 2)
    return largest_true(ok, lo, hi)


def largest_true(ok, lo: int, hi: int, step: int = 1) -> int:
    """The largest x in [lo, hi) to within `step` with ok(x), given ok(lo) and not ok(hi) (monotone ok)."""
    while hi - lo > step:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo
