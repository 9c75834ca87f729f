"""Several devices in one estimate (issue 24): each device's models, peak and outcome, and the overall
verdict (the worst device's).

The budget of cuda:0 (ComfyUI's main device) is the one planning.estimate makes; every other GPU a model
is placed on (ComfyUI-MultiGPU `device` / `compute_device`) is assessed on its own card, given with
`--gpus "RTX 4090,RTX 3090"` / `--vram 24,24` (cuda:i is the i-th card). A device no card was given for
is priced with the main card's rules and left unchecked; the CPU holds no VRAM. Sits above budget.py.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ..machine import placement
from .budget import Budget, assess
from ..machine.device import Device
from ..machine.distorch import write_allocation
from ..machine.resolve import Resolver, ref_key
from ..workload import Workload

# worst first when combining: a device that runs out of memory stops the workflow whatever the others do
RANK = {"fits": 0, "tight": 1, "runs_slower": 2, "unknown": 3, "oom": 4}


@dataclass(frozen=True)
class DevicePlan:
    device: str  # "cuda:0", "cuda:1", "cpu"
    card: Device | None  # the card given for it; None: none given (or the CPU)
    models: tuple[str, ...]  # 'folder/name' of the models placed on it
    stages: tuple[int, ...]  # indices into Budget.stages of the stages that run on it
    peak_bytes: int  # the highest stage peak on it (every weight resident)
    predicted_peak_bytes: int  # the same as ComfyUI runs it (runtime.py)
    outcome: str  # fits | tight | runs_slower | oom | unknown | not_checked | unused | no_vram
    why: str = ""
    allocation: dict | None = None  # DisTorch2 allocation for the model that does not fit (split_suggestion)
    donor_for: tuple[str, ...] = ()  # models computed elsewhere whose DisTorch2 virtual VRAM this GPU holds

    def to_dict(self) -> dict:
        card = None if self.card is None else {
            "name": self.card.name, "total_bytes": int(self.card.total_bytes), "capacity_bytes": int(self.card.capacity_bytes),
            "source": self.card.source}
        return {"device": self.device, "card": card, "models": list(self.models), "stages": list(self.stages),
                "peak_bytes": self.peak_bytes, "predicted_peak_bytes": self.predicted_peak_bytes,
                "outcome": self.outcome, "why": self.why, "donor_models": list(self.donor_for),
                **({"allocation": self.allocation} if self.allocation else {})}


def _order(dev: str) -> tuple:
    idx = placement.device_index(dev)
    return (dev == placement.CPU, idx is None, idx if idx is not None else 0, dev)


def with_placement(budget: Budget, workload: Workload, devices: Sequence[Device],
                   resolver: Resolver | None = None, assessed: Mapping[str, Budget] | None = None) -> Budget:
    """`budget` (cuda:0's, from planning.estimate) with one DevicePlan per device and the overall verdict.
    `assessed`: budgets of this workload already made for some devices (the placement plan's), used as they are."""
    main = devices[0]
    here = getattr(main, "ordinal", placement.MAIN)
    names = {f"cuda:{i}" for i in range(len(devices))} | {here}
    names |= {d for d, _ in budget.model_devices.values()} | {sb.device for sb in budget.stages}
    donors: dict[str, list[str]] = {}  # DisTorch2 donor GPUs: the models whose virtual VRAM they hold
    for stage in workload.stages:
        for r in stage.models:
            held = {placement.normalize(r.donor_device)} if r.offload_bytes else set()
            if r.allocation:
                held |= {placement.normalize(e.split(",", 1)[0]) for e in r.allocation.split("#", 1)[0].split(";")
                         if "," in e}
            for dev in held - {None, placement.CPU, placement.normalize(r.device) or placement.MAIN}:
                if ref_key(r) not in donors.get(dev, ()):
                    donors.setdefault(dev, []).append(ref_key(r))
    names |= set(donors)
    plans: list[DevicePlan] = []
    for dev in sorted(names, key=_order):
        donor_for = tuple(donors.get(dev, ()))
        models = tuple(k for k, (d, _) in budget.model_devices.items() if d == dev)
        stages = tuple(i for i, sb in enumerate(budget.stages) if sb.device == dev)
        if dev == placement.CPU:
            plans.append(DevicePlan(dev, None, models, stages, 0, 0, "no_vram",
                                    "runs on the CPU: no VRAM of any card (system RAM: see the host budget)"))
            continue
        if dev == here:
            predicted = max((r.peak_bytes for r in budget.runs), default=0)
            plans.append(DevicePlan(dev, main, models, stages, budget.peak_bytes, predicted,
                                    budget.verdict if budget.stages else "unused",
                                    "the card of this estimate (ComfyUI's main device)"))
            continue
        idx = placement.device_index(dev)
        card = devices[idx] if idx is not None and idx < len(devices) else None
        if not models and not stages and not donor_for:
            plans.append(DevicePlan(dev, card, (), (), 0, 0, "unused", "no model of this workflow is placed on it"))
            continue
        priced_on = replace(card if card is not None else main, ordinal=dev)
        b = (assessed or {}).get(dev) or assess(workload, priced_on, resolver, models=budget.models)
        predicted = max((r.peak_bytes for r in b.runs), default=0)
        if card is None:
            plans.append(DevicePlan(dev, None, models, stages, b.peak_bytes, predicted, "not_checked",
                                    f"no card given for {dev}: priced with {main.name}'s rules, not counted on "
                                    f"{main.name}; give --gpus to check it", donor_for=donor_for))
        else:
            plans.append(DevicePlan(dev, card, models, stages, b.peak_bytes, predicted, b.vram_verdict or b.verdict,
                                    f"card {idx + 1} of --gpus", donor_for=donor_for))
    split = split_suggestion(budget, plans, devices)
    if split is not None:
        plans[0] = replace(plans[0], allocation=split)
    checked = [p.outcome for p in plans if p.outcome in RANK]
    overall = max(checked, key=lambda o: RANK[o]) if checked else budget.verdict
    return replace(budget, placement=tuple(plans), overall_verdict=overall, show_devices=True)


def split_suggestion(budget: Budget, plans: Sequence[DevicePlan], devices: Sequence[Device]) -> dict | None:
    """With several cards, for a diffusion model whose weights do not all stay resident on the main card
    (ComfyUI streams them or runs out of memory): a DisTorch2 bytes-form allocation (distorch.py) that keeps
    on each card as much as fits beside what that card already runs at its own peak, the rest in RAM; for
    UNETLoaderDisTorch2MultiGPU's `expert_mode_allocations` widget with `compute_device` = the main card."""
    if len(devices) < 2 or not budget.stages or budget.vram_verdict not in ("runs_slower", "oom"):
        return None
    sb = budget.stages[budget.peak_stage]
    model = next((it for it in sb.items if it.category == "weights" and it.model is not None
                  and it.model.kind == "diffusion" and it.bytes), None)
    if model is None:
        return None
    main = devices[0]
    rest_of_stage = sb.peak_bytes - model.bytes  # working memory, context, other weights of the stage
    run = budget.runs[budget.peak_stage] if budget.peak_stage < len(budget.runs) else None
    if run is not None and run.peak_bytes:  # as ComfyUI runs it (cond / uncond in turn when short)
        rest_of_stage = min(rest_of_stage, run.peak_bytes - run.resident_bytes)
    rooms = [(plans[0].device, main.capacity_bytes - main.reserve_bytes - rest_of_stage)]
    for p in plans[1:]:
        if p.card is not None and p.device != "cpu":
            rooms.append((p.device, p.card.capacity_bytes - p.card.reserve_bytes - p.peak_bytes))
    alloc = write_allocation(model.bytes, rooms)
    return {"model": model.label, "stage": sb.title, "compute_device": plans[0].device, **alloc.to_dict()}
