"""The planning layer: the budget with its fixes. It calls the budget (budget.assess) downward and adds
the VRAM remedy ladder and recommended plan (advice.py), the RAM fixes (host_memory.host_remedies), the
cheapest rental card that runs the workflow (each card of the lineup simulated) and the capacity
answers (capacity.py: the largest batch / resolution / frames). The node, the panel's routes and the
command line call estimate / estimate_prompt here."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from . import capacity, evidence, multi_device, placement_plan, risk
from ..machine import host_memory, runtime
from .advice import recommended_plan, remedies_for
from .budget import Budget, assess
from ..machine.device import Device
from ..errors import VramBudgetError
from ..machine.gpus import CARDS, DRIVER_RESERVED, RENTAL_LINEUP, Card
from ..graph import read_workflow
from ..model_info import DIFFUSION, VAE, ModelInfo
from ..units import GiB
from ..machine.resolve import Resolver
from ..workload import VAE_DECODE, VAE_ENCODE, Workload


@dataclass(frozen=True)
class Estimate:
    """What the node, the panel and the command line get: the verdict (`budget`, budget.assess's Budget) inside
    what this layer plans on top of it. The verdict's fields and methods read through (estimate.verdict is
    estimate.budget.verdict); to_dict() is the one --json record, each planned field in its place."""

    budget: Budget
    remedies: tuple = ()  # advice.Remedy: the VRAM ladder on the card's verdict
    plan: object | None = None  # advice.Plan: the ladder applied in order until it fits
    cheapest_card: Card | None = None  # the cheapest rental card where ComfyUI keeps everything resident
    cheapest_card_with_margin: Card | None = None  # ... with 10 % to spare
    capacity: tuple = ()  # capacity.Capacity answers, when asked for
    placement_plan: object = None  # placement_plan.PlacementPlan: where each loader should put its model
    # issue 30: the risk of running out of memory beside the verdict (risk.OomRisk), the published runs nearest
    # to this workflow (evidence.Similar) and the known memory regressions of the versions it runs under
    oom_risk: object = None
    evidence: tuple = ()
    known_regressions: tuple = ()

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "budget":  # copy / pickle probes, and a half-built instance
            raise AttributeError(name)
        return getattr(self.budget, name)

    def with_budget(self, **changes) -> "Estimate":
        """The same plan over a verdict with `changes` (notes, placement ...)."""
        return replace(self, budget=replace(self.budget, **changes))

    def to_dict(self) -> dict:
        return self.budget.to_dict(planned=self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def estimate(
    workload: Workload,
    device: Device,
    resolver: Resolver | None = None,
    models: Mapping[str, ModelInfo] | None = None,
    others: Sequence[Device] = (),
) -> Estimate:
    """The budget of a workload on a device with its fixes: the VRAM ladder on the card's verdict, the
    RAM fixes on the host's, and the cheapest card of the rental lineup where ComfyUI runs it as is.

    `models`: ModelInfos already resolved by the caller, keyed "folder/name" (budget.assess).
    `others`: the machine's other cards (cuda:1, cuda:2, ...): each device's peak and outcome
    (multi_device.py), also added when a loader placed a model on another device with one card."""
    budget = _estimate_one(workload, device, resolver, models)
    budget = with_risk(budget, workload)
    if others or budget.show_devices:
        budget = replace(budget, budget=multi_device.with_placement(budget.budget, workload, [device, *others], resolver))
    if others:
        found = placement_plan.plan(workload, [device, *others], resolver, budget.models)
        if found is not None:
            budget = replace(budget, placement_plan=found)
    return budget


def with_risk(budget: Estimate, workload: Workload) -> Estimate:
    """The OOM risk (risk.py), the nearest published runs and the known regressions of the device's versions."""
    latent = next((s.latent for s in workload.stages if s.kind == "sample" and s.latent is not None), None)
    video = latent is not None and latent.is_video
    regs = ()
    versions = budget.device.known_versions  # a guessed ComfyUI release judges no regression
    if versions:
        regs = tuple(r for r in evidence.known_regressions(versions, scope=regression_scope(
            budget, workload, video)) if not r.get("requires") or getattr(budget.device, r["requires"], False))
        regs += _priced_in_stages(budget, {r["id"] for r in regs})
    fams = [m.family for m in budget.models.values() if m.kind == DIFFUSION]
    near = ()
    if fams and budget.device.total_bytes > 0:
        sample = next((s for s in workload.stages if s.kind == "sample"), None)
        near = tuple(evidence.similar(fams, (budget.device.total_bytes + DRIVER_RESERVED) / GiB,
                                      latent.pixel_width if latent else None, latent.pixel_height if latent else None,
                                      latent.pixel_frames if video else None,
                                      runner=evidence.RUNNER_OF_MANAGER.get(sample.manager) if sample else None))
    return replace(budget, oom_risk=risk.assess(budget, video, regs), evidence=near, known_regressions=regs)


def _priced_in_stages(budget, listed: set) -> tuple:
    """The regressions a VAE stage priced (stages/vae.py: a pack's own VAE code keeps one that ComfyUI's own release
    works around, so the whole-estimate match can miss it): listed with the others."""
    out = []
    for sb in budget.stages:
        vae = next((it.model for it in sb.items if it.category == "weights" and it.model is not None
                    and it.model.kind == VAE), None)
        if vae is None or sb.stage.kind not in (VAE_DECODE, VAE_ENCODE):
            continue
        _, entry = evidence.vae_working_factor(vae.family, budget.device, stage=sb.stage)
        if entry is not None and entry["id"] not in listed:
            listed.add(entry["id"])
            out.append(entry)
    return tuple(out)


def regression_scope(budget, workload: Workload, video: bool) -> evidence.Scope:
    """What a known regression's `applies` is judged on: the families of the models the estimate priced (None when
    one is unpriced: an unknown model never rules a regression out), the card's maker, the OS, the memory mode and
    whether the workflow samples a video (none known when no sampler was found)."""
    models = budget.models.values()
    fams = None if budget.missing or any(not getattr(m, "family", "") for m in models) else frozenset(
        m.family for m in models)
    sampled = any(s.kind == "sample" for s in workload.stages)
    return evidence.Scope(families=fams, vendor=budget.device.vendor or None, os=budget.device.os or None,
                          memory_mode=budget.device.memory_mode or None, video=video if sampled else None)


def _estimate_one(workload: Workload, device: Device, resolver: Resolver | None,
                  models: Mapping[str, ModelInfo] | None) -> Estimate:
    budget = assess(workload, device, resolver, models)
    hb = budget.host
    stages, runs = list(budget.stages), list(budget.runs)
    if hb is not None:  # the RAM fixes, each a re-simulation of the host side
        images = host_memory.image_bytes(stages)
        budget = replace(budget, host=replace(hb, remedies=tuple(
            host_memory.host_remedies(stages, runs, device, hb, images))))
    rent = bool(stages) and budget.outcome != runtime.FITS  # never a rental for what fits the user's own card
    card = margin = None
    if rent and budget.verdict != "unknown":  # no card advice on a lower bound
        card, margin = cheapest_cards(workload, device, resolver, budget.models)
    # the VRAM ladder works on the card's verdict; the RAM fixes are the host's own (host.remedies)
    on_card = Estimate(replace(budget, verdict=budget.vram_verdict), cheapest_card=card, cheapest_card_with_margin=margin)
    on_card = replace(on_card, remedies=tuple(remedies_for(on_card, workload, resolver)))
    return Estimate(budget, remedies=on_card.remedies, plan=recommended_plan(on_card), cheapest_card=card,
                    cheapest_card_with_margin=margin)


def cheapest_cards(workload: Workload, device: Device, resolver: Resolver | None = None,
                   models: Mapping[str, ModelInfo] | None = None) -> tuple[Card | None, Card | None]:
    """(cheapest rental card on which ComfyUI keeps everything resident, cheapest where it also
    has 10 % to spare), by simulating the workflow on each card of the guide's lineup with the
    same launch flags: "fits as is" means what ComfyUI does there, not a capacity comparison."""
    lineup = sorted((c for c in CARDS if c.name in RENTAL_LINEUP),
                    key=lambda c: (c.price_eur_h is None, c.price_eur_h or 0.0, c.nominal_gb))
    card = margin = None
    for candidate in lineup:
        # every launch flag kept (issue 34: --vram-headroom was dropped); a rental machine's RAM is its own
        dev = replace(device.on(candidate, rented=True), host=None)
        b = assess(workload, dev, resolver, models=models)
        if b.outcome == "fits" and card is None:
            card = candidate
        if b.verdict == "fits" and margin is None:
            margin = candidate
        if card is not None and margin is not None:
            break
    return card, margin


def estimate_prompt(prompt_or_workflow, device: Device, resolver: Resolver | None = None,
                    capacities: Iterable[str] | None = (), others: Sequence[Device] = ()) -> Estimate:
    """Estimate an API prompt or a UI workflow (dict or JSON text). `capacities`: which capacity
    answers to add ("batch", "resolution", "frames"); None = every one that applies. `others`: the
    machine's other cards (estimate)."""
    workload = read_workflow(prompt_or_workflow)
    budget = estimate(workload, device, resolver, others=others)
    whats = capacity.applicable(workload) if capacities is None else tuple(capacities)
    if not whats:
        return budget
    return with_capacity(budget, workload, whats, resolver)


def with_capacity(budget: Estimate, workload: Workload, whats: Iterable[str],
                  resolver: Resolver | None = None) -> Estimate:
    answers = []
    for what in whats:
        try:
            answers.append(capacity.find(workload, budget.device, what, resolver, first=budget))
        except VramBudgetError as exc:  # a capacity answer never costs the estimate itself
            budget = budget.with_budget(notes=budget.notes + (f"largest {what}: {exc}",))
    return replace(budget, capacity=tuple(answers))
