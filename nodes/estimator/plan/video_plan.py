"""The planner for every video family, from the workflow itself (issue 35): the largest size and length at or
below a target that a workflow's own models (diffusion model, text encoders, VAE, its sampler settings) run with
every weight resident on a card. LTX-2.x, HunyuanVideo 1.5, Wan 2.1 / 2.2 and its Animate / S2V / VACE variants
alike: whatever video latent the workflow samples.

The rules come from the latent the workflow makes (workload.LatentShape): lengths are k·t+1 for the VAE's
temporal compression t (4: Wan, HunyuanVideo; 8: LTX), sides are multiples of the VAE's spatial factor times the
diffusion model's patch (Wan 2.1: 8·2 = 16; Wan 2.2 5B: 16·2 = 32; HunyuanVideo 1.5: 16·1; LTX: 32·1), at least
16. The search is the Wan planner's (wan_plan.search_path: a monotone path from the target down, binary search on
the shared estimator's outcome).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import budget as budget_mod
from . import capacity
from .budget import Budget
from ..errors import PlanError
from ..model_info import CHECKPOINT, DIFFUSION
from ..serial import JsonFields
from ..units import fmt_gib
from .wan_plan import KEEP_MODES, MAX_LENGTH, MAX_RESOLUTION, first_resident, need_bytes, search_path, snap_side
from ..workload import LatentShape, Workload, with_frames, with_pixels


@dataclass(frozen=True)
class VideoPlan(JsonFields):
    width: int
    height: int
    length: int
    target: tuple  # (width, height, length) after the latent's own snapping
    fits: bool  # the planned size stays resident (or streams within DYNAMIC_KEEP_SLOWDOWN under Dynamic VRAM)
    changed: bool
    outcome: str  # the estimator's outcome at the planned size
    peak_bytes: int  # the budget's peak with every weight resident (Budget.peak_bytes)
    need_bytes: int  # what must be on the card at once, as ComfyUI runs it (wan_plan.need_bytes)
    capacity_bytes: int
    model: str  # the sampled model, in words
    latent_node: str
    multiple: int
    length_step: int
    evaluations: int
    notes: tuple = ()

    def text(self, card: str) -> str:
        t = self.target
        head = (f"Planned from this workflow ({self.model}, its text encoders and VAE as loaded here) on {card}: "
                f"target {t[0]}×{t[1]}×{t[2]}")
        if not self.fits:
            body = (f"nothing down to the smallest size stays resident; the target is kept ({self.outcome}: needs "
                    f"{fmt_gib(self.need_bytes)} at once, {fmt_gib(self.capacity_bytes)} usable)")
        elif self.changed:
            body = (f"→ {self.width}×{self.height}×{self.length} stays resident (needs {fmt_gib(self.need_bytes)} at "
                    f"once of {fmt_gib(self.capacity_bytes)} usable)")
        else:
            body = f"kept: needs {fmt_gib(self.need_bytes)} at once of {fmt_gib(self.capacity_bytes)} usable"
        rules = (f"Sides in multiples of {self.multiple}, lengths {self.length_step}k+1 ({self.latent_node}).")
        return "\n".join([f"{head} {body}.", rules, *self.notes])


def _patch(first: Budget) -> int:
    """The sampled model's spatial patch (arch patch_size (1, 2, 2) -> 2; an int as is); 1 when not stated."""
    for info in first.models.values():
        if getattr(info, "kind", None) not in (DIFFUSION, CHECKPOINT):
            continue
        p = (info.arch or {}).get("patch_size")
        if isinstance(p, (list, tuple)) and p:
            return max(1, int(p[-1]))
        if isinstance(p, int) and p > 0:
            return p
    return 1


def _model_words(first: Budget) -> str:
    names = [i.label for i in first.models.values() if getattr(i, "kind", None) in (DIFFUSION, CHECKPOINT) and i.label]
    return " + ".join(dict.fromkeys(names)) or "its diffusion model"


def plan_workload(workload: Workload, device, width: int, height: int, length: int, keep: str = "balanced",
                  resolver=None) -> VideoPlan:
    """The largest width × height × length at or below the target that `workload` runs resident on `device`,
    cutting what `keep` allows (frames: keep the length, resolution: keep the size, balanced: both in turn)."""
    if keep not in KEEP_MODES:
        raise PlanError(f"keep must be one of {', '.join(KEEP_MODES)}, got {str(keep)[:40]!r}")
    for name, value, top in (("width", width, MAX_RESOLUTION), ("height", height, MAX_RESOLUTION),
                             ("length", length, MAX_LENGTH)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= top:
            raise PlanError(f"{name} {str(value)[:24]}: give 1 to {top}")
    base = capacity._main_latent(workload)
    if not base.is_video:
        raise PlanError("the workflow samples an image latent, not a video: nothing to plan in frames")
    tc = base.temporal_compression or 4
    sc = base.spatial_compression or 8
    first = budget_mod.assess(workload, device, resolver)
    models = dict(first.models)
    m = max(16, sc * _patch(first))
    target = (snap_side(width, m), snap_side(height, m), tc * ((max(1, length) - 1) // tc) + 1)
    notes = []
    if target[:2] != (width, height):
        notes.append(f"{width}×{height} snapped to {target[0]}×{target[1]} (multiples of {m})")
    if target[2] != length:
        notes.append(f"length {length} floored to {target[2]} (lengths are {tc}k+1; ComfyUI floors the rest)")
    if not first.complete:
        notes.append("a model could not be priced: the plan is an upper bound")

    def latent(c) -> LatentShape:
        return with_frames(with_pixels(base, c[0], c[1]), c[2])

    cache: dict = {}

    def price(c) -> Budget:
        if c not in cache:
            cache[c] = budget_mod.assess(capacity.scaled(workload, base, latent(c)), device, resolver, models=models)
        return cache[c]

    path = search_path(*target, m, keep, length_step=tc)
    chosen = first_resident(path, price, device, notes)
    w, h, n = path[chosen] if chosen >= 0 else target
    b = price((w, h, n))
    return VideoPlan(width=w, height=h, length=n, target=target, fits=chosen >= 0, changed=(w, h, n) != target,
                     outcome=b.outcome, peak_bytes=b.peak_bytes, need_bytes=need_bytes(b),
                     capacity_bytes=device.capacity_bytes,
                     model=_model_words(first), latent_node=base.source_type or "the video latent node", multiple=m,
                     length_step=tc, evaluations=len(cache), notes=tuple(notes))


def planner_links(prompt: dict, planner_id: str) -> dict:
    """{node id: [input names]} of the nodes whose inputs take the planner's width / height / length outputs."""
    out: dict = {}
    for nid, node in list(prompt.items())[:10_000]:
        inputs = node.get("inputs") if isinstance(node, dict) else None
        for key, v in (inputs or {}).items():
            if isinstance(v, list) and len(v) == 2 and str(v[0]) == planner_id and v[1] in (0, 1, 2):
                out.setdefault(str(nid), []).append(key)
    return out


def prompt_at(prompt: dict, planner_id: str, width: int, height: int, length: int) -> dict:
    """The API prompt with the planner taken out: its outputs become the target values (its report an empty
    string), so the estimator reads the workflow at the target."""
    values = (width, height, length, "")
    out = {}
    for nid, node in prompt.items():
        if str(nid) == planner_id or not isinstance(node, dict):
            continue
        inputs = {k: (values[v[1]] if isinstance(v, list) and len(v) == 2 and str(v[0]) == planner_id
                      and v[1] in (0, 1, 2, 3) else v) for k, v in (node.get("inputs") or {}).items()}
        out[str(nid)] = {**node, "inputs": inputs}
    return out


def feeds_the_sampled_latent(workload: Workload, fed: dict) -> bool:
    """True when a node the planner feeds makes the latent a sampler uses."""
    try:
        lat = capacity._main_latent(workload)
    except Exception:  # noqa: BLE001
        return False
    return lat.is_video and str(lat.source_node) in fed


def workflow_fps(prompt: dict) -> float | None:
    """The frame rate the workflow itself states (CreateVideo fps, LTXVConditioning frame_rate ...), if any."""
    for node in list(prompt.values())[:10_000]:
        for key in ("fps", "frame_rate"):
            v = (node.get("inputs") or {}).get(key) if isinstance(node, dict) else None
            if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 240:
                return float(v)
    return None
