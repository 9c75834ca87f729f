"""A placement plan for a machine with several cards (issue 24): which device each loader should put its
model on, the DisTorch2 allocation of a model too big for its card, each card's predicted peak, and the
widget values that say so in ComfyUI-MultiGPU's loaders. Sits above multi_device.py; plain data out.

How a plan is found (every candidate is priced by the one estimator, budget.assess, on each card):
- The units placed are the workflow's loaders (a diffusion model, a checkpoint, a text encoder, a VAE, a
  CLIP vision model, a ControlNet); LoRAs follow the model they patch (placement.place_stages). A text
  encoder may go to the CPU as well (ComfyUI-MultiGPU's CLIP loaders offer "cpu"); the others only to GPUs.
- Every assignment of units to devices is tried when there are at most MAX_ASSIGNMENTS (else the small
  models go with the first diffusion model, and past that a greedy pass places the biggest unit first). On each GPU, ComfyUI loads a stage's models beside its working memory
  and frees idle models when it needs the room (model_management.py load_models_gpu -> free_memory), so a
  card's peak is its worst stage, as assess prices it.
- A diffusion model whose stage does not fit its card with every weight resident is split with DisTorch2:
  the compute card keeps what fits beside the stage's working memory (as ComfyUI runs it: cond and uncond in
  turn when short), an otherwise idle GPU of the plan holds what it can, the CPU the rest (distorch.py writes
  the bytes-form string). Its weights off the card are fetched at every forward: the slowdown is those bytes
  over the card's host link against the forward's compute (runtime.forward_flops), the same speed model as
  ComfyUI's own streaming.
- Assignments are ranked by: the worst card's outcome (an OOM last); seconds of weight copies per run;
  models on the CPU; bytes that must be reloaded each run because two models do not stay resident together
  on one card (a text encoder's are not: its output stays cached until the prompt changes); then the
  fullest card's share of its memory (balance). The first is the plan.
- The machine's RAM is judged once for the plan (ram_floor): ComfyUI is one process for every card.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace
from typing import Sequence

from ..machine import placement, runtime
from .budget import assess
from ..machine.device import Device
from ..machine.distorch import write_allocation
from ..machine.host_memory import COMFY_PROCESS_BYTES, OS_BYTES, Host
from ..graph.packs.multigpu import CLIP_BASES, WANVIDEO, _base_type
from .multi_device import RANK, DevicePlan, with_placement
from ..machine.resolve import Resolver, ref_key
from ..units import fmt_gib
from ..workload import SAMPLE, TEXT_ENCODE, ModelRef, Workload

MAX_ASSIGNMENTS = 64
# The search's time budget (issue 37): past it the best assignment found so far is the plan, said in its notes
# (30 loaders on 8 cards took minutes and held the estimate route's slots after its request was abandoned).
SEARCH_SECONDS = 8.0
SHRINK_ROUNDS = 6  # re-pricings of a split card whose share ComfyUI would still not keep resident
CPU = placement.CPU

# ComfyUI-MultiGPU's registered variants (its __init__.py:561-582 for ComfyUI's loaders, :640-658 for
# ComfyUI-GGUF's, wanvideo.py for WanVideoWrapper's): base loader -> (device-only variant, DisTorch2 variant)
_CORE = ("UNETLoader", "VAELoader", "CLIPLoader", "DualCLIPLoader", "TripleCLIPLoader", "QuadrupleCLIPLoader",
         "CLIPVisionLoader", "CheckpointLoaderSimple", "ControlNetLoader", "DiffusersLoader", "DiffControlNetLoader")
_GGUF = ("UnetLoaderGGUF", "UnetLoaderGGUFAdvanced", "CLIPLoaderGGUF", "DualCLIPLoaderGGUF", "TripleCLIPLoaderGGUF",
         "QuadrupleCLIPLoaderGGUF")
VARIANTS: dict[str, tuple[str, str | None]] = {b: (b + "MultiGPU", b + "DisTorch2MultiGPU") for b in _CORE + _GGUF}
VARIANTS.update({name[: -len("MultiGPU")]: (name, None) for name in WANVIDEO})

_ROLE_KIND = {"diffusion": "diffusion", "text_encoder": "text_encoder", "vae": "vae", "clip_vision": "clip_vision",
              "controlnet": "controlnet"}


@dataclass(frozen=True)
class Unit:
    """One loader node and the models it loads."""

    node: str
    node_type: str
    base: str  # the loader it is (or wraps): UNETLoader, CLIPLoader ...
    kind: str  # diffusion | checkpoint | text_encoder | vae | clip_vision | controlnet
    refs: tuple[ModelRef, ...]
    current: str  # its device now ("cuda:0" = ComfyUI's main device)

    @property
    def movable(self) -> bool:
        return self.base in VARIANTS


# ComfyUI's own placement (0.33.0): SelectModelDevice / SelectCLIPDevice / SelectVAEDevice take a MODEL / CLIP / VAE
# and a `device` of get_gpu_device_options() ("default", "cpu", "gpu:N"; SelectVAEDevice without "cpu")
# (comfy_extras/nodes_multigpu.py:197, :251, :303; comfy/model_management.py get_gpu_device_options), and
# CLIPLoader / DualCLIPLoader have a `device` widget of "default" / "cpu" (nodes.py:1014, :1042).
CORE = "ComfyUI"
MULTIGPU = "ComfyUI-MultiGPU"
CORE_SELECT = {"diffusion": ("SelectModelDevice", "MODEL"), "checkpoint": ("SelectModelDevice", "MODEL"),
               "text_encoder": ("SelectCLIPDevice", "CLIP"), "vae": ("SelectVAEDevice", "VAE")}
CORE_CPU_WIDGET = ("CLIPLoader", "DualCLIPLoader")
CPU_WHY = "on the CPU: no card has room for it beside the models that stay resident"
CORE_SELECT_NODES_ALL = tuple(dict.fromkeys(node for node, _ in CORE_SELECT.values()))


def core_device(dev: str) -> str:
    """The plan's device ('cuda:1', 'cpu') as ComfyUI's device widgets name it ('gpu:1', 'cpu')."""
    return "cpu" if dev == CPU else "gpu:" + dev.split(":", 1)[1] if dev.startswith("cuda:") else dev


@dataclass(frozen=True)
class LoaderSetting:
    """What to set on one loader node: the node type to use and its device widgets, or (ComfyUI's own nodes)
    the placement node to add after it."""

    node: str
    node_type: str  # as in the workflow
    use_type: str  # the ComfyUI-MultiGPU variant to use (node_type when it already is that one / ComfyUI's own)
    device: str
    widgets: dict  # widget -> value on the loader (ComfyUI-MultiGPU's names, or a core loader's `device`)
    models: tuple[str, ...]  # 'folder/name'
    changed: bool  # False: the loader already does this
    why: str = ""
    target: str = MULTIGPU  # whose nodes: ComfyUI's own, or ComfyUI-MultiGPU's (archived 2026-09-30)
    insert: str = ""  # ComfyUI's placement node to add on the loader's output ("" = none)
    insert_socket: str = ""  # the output it takes (MODEL / CLIP / VAE)
    insert_widgets: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"node": self.node, "node_type": self.node_type, "use_type": self.use_type, "device": self.device,
                "widgets": dict(self.widgets), "models": list(self.models), "changed": self.changed, "why": self.why,
                "target": self.target, "insert": self.insert, "insert_socket": self.insert_socket,
                "insert_widgets": dict(self.insert_widgets)}


@dataclass(frozen=True)
class Split:
    """A model DisTorch2 spreads over devices, computed on `device`."""

    model: str  # 'folder/name'
    label: str
    device: str
    allocation: dict  # distorch.Allocation.to_dict()
    offloaded_bytes: int  # weights not on the compute card (fetched at every forward)
    steps: int
    copy_seconds_per_step: float
    compute_seconds_per_step: float
    unit: Unit | None = None
    forwards: int = 1  # forwards per step (cond and uncond in turn: 2)

    @property
    def slowdown(self) -> tuple[float, float]:
        c, t = self.compute_seconds_per_step, self.copy_seconds_per_step
        if c <= 0:
            return 1.0, 1.0
        return max(c, t) / c, (c + t) / c

    def to_dict(self) -> dict:
        low, high = self.slowdown
        return {"model": self.model, "label": self.label, "compute_device": self.device, **self.allocation,
                "offloaded_bytes": self.offloaded_bytes, "steps": self.steps,
                "copy_seconds_per_step": round(self.copy_seconds_per_step, 2),
                "compute_seconds_per_step": round(self.compute_seconds_per_step, 2),
                "slowdown": round(low, 2), "slowdown_high": round(high, 2)}


@dataclass(frozen=True)
class PlacementPlan:
    engine: str
    verdict: str  # the worst card's outcome with the plan
    devices: tuple[DevicePlan, ...]
    loaders: tuple[LoaderSetting, ...]
    splits: tuple[Split, ...]
    copy_seconds: float  # weight copies per run the splits add
    reload_bytes: int  # weights reloaded per run because they do not stay resident together
    tried: int  # assignments priced
    notes: tuple[str, ...] = ()
    other_engines: tuple[dict, ...] = ()
    ram_floor_bytes: int = 0  # system RAM the plan needs at least (ram_floor)
    host_outcome: str = "not_checked"  # fits | swapping | oom | not_checked (RAM not known)

    def to_dict(self) -> dict:
        return {"engine": self.engine, "verdict": self.verdict, "devices": [d.to_dict() for d in self.devices],
                "loaders": [s.to_dict() for s in self.loaders], "splits": [s.to_dict() for s in self.splits],
                "copy_seconds": round(self.copy_seconds, 1), "reload_bytes": self.reload_bytes,
                "assignments_tried": self.tried, "notes": list(self.notes),
                "other_engines": [dict(e) for e in self.other_engines],
                "ram_floor_bytes": self.ram_floor_bytes, "host_outcome": self.host_outcome}


def units_of(workload: Workload) -> list[Unit]:
    """The workflow's loaders, in the order their models are first used."""
    found: dict[str, Unit] = {}
    for stage in workload.stages:
        for ref in stage.models:
            if ref.role == "lora" or not ref.loader_node:
                continue
            kind = "checkpoint" if ref.role == "checkpoint" else _ROLE_KIND.get(ref.role)
            if kind is None:
                continue
            if ref.role == "checkpoint" and ref.part == "clip":
                continue  # a checkpoint's CLIP stays on ComfyUI's text-encoder device (multigpu.py _placement)
            unit = found.get(ref.loader_node)
            if unit is None:
                base = _base_type(ref.loader_type) or ref.loader_type
                dev = placement.normalize(ref.device) or placement.MAIN
                found[ref.loader_node] = Unit(ref.loader_node, ref.loader_type, base, kind, (ref,), dev)
            elif all(ref_key(r) != ref_key(ref) or r.part != ref.part for r in unit.refs):
                found[ref.loader_node] = replace(unit, refs=unit.refs + (ref,))
    return list(found.values())


def _candidates(unit: Unit, gpus: Sequence[str]) -> tuple[str, ...]:
    if not unit.movable:
        return (unit.current,)
    if unit.kind == "text_encoder":
        return tuple(gpus) + (CPU,)
    return tuple(gpus)


def _apply(workload: Workload, where: dict[str, str], allocations: dict[str, str]) -> Workload:
    """The workload with each unit's models on its device (as a ComfyUI-MultiGPU loader would put them)."""
    def moved(ref: ModelRef) -> ModelRef:
        dev = where.get(ref.loader_node)
        if dev is None or ref.role == "lora" or (ref.role == "checkpoint" and ref.part == "clip"):
            return ref
        alloc = allocations.get(ref.loader_node, "") if ref.role in ("diffusion", "checkpoint") else ""
        why = f"the plan: {dev}" + (f", DisTorch2 '{alloc}'" if alloc else "")
        return replace(ref, device=dev, placed_by=why, allocation=alloc, offload_bytes=0, donor_device=None)

    stages = tuple(replace(s, models=tuple(moved(r) for r in s.models), device=None, device_reason="")
                   for s in workload.stages)
    return placement.place_stages(replace(workload, stages=stages, models=tuple(moved(r) for r in workload.models)))


def _card(devices: Sequence[Device], dev: str) -> Device:
    idx = placement.device_index(dev)
    return replace(devices[idx], ordinal=dev)


@dataclass
class _Priced:
    where: dict
    allocations: dict
    budgets: dict  # device -> Budget
    splits: list
    worst: str
    copy_s: float
    cpu_units: int
    reload: int
    fullest: float
    stopped: bool = False  # the search's time ran out before it (SEARCH_SECONDS)

    def key(self) -> tuple:
        return (RANK.get(self.worst, 3), round(self.copy_s, 1), self.cpu_units, self.reload, round(self.fullest, 3))


def _diffusion_item(sb, unit: Unit):
    """The stage's weights item of this unit's diffusion model (items are labelled 'Label [file name]')."""
    names = {f"[{r.name}]" for r in unit.refs}
    items = [it for it in sb.items if it.category == "weights" and it.model is not None and it.bytes
             and it.model.kind == "diffusion"]
    return next((it for it in items if any(n in it.label for n in names)), None)


def _price(workload: Workload, units: list[Unit], where: dict, devices: Sequence[Device], resolver, models,
           allow_splits: bool = True) -> _Priced:
    gpus = [f"cuda:{i}" for i in range(len(devices))]
    wl = _apply(workload, where, {})
    budgets = {d: assess(wl, _card(devices, d), resolver, models=models) for d in gpus}
    allocations: dict[str, str] = {}
    splits: list[Split] = []
    used = {d for d in where.values()}
    idle = [d for d in gpus if d not in used]
    idle_room = {}
    for d in idle:
        c = _card(devices, d)
        idle_room[d] = c.capacity_bytes - c.reserve_bytes - c.context_bytes
    for dev in gpus:
        b = budgets[dev]
        if not allow_splits or (b.vram_verdict or b.verdict) not in ("runs_slower", "oom"):
            continue
        card = _card(devices, dev)
        wanted = []  # (unit, its sampling stages here, its weights, what its stage needs beside them)
        for unit in units:
            if where.get(unit.node) != dev or unit.kind not in ("diffusion", "checkpoint") \
                    or unit.base not in VARIANTS or VARIANTS[unit.base][1] is None:
                continue
            stage_ids = [i for i, sb in enumerate(b.stages) if sb.device == dev and sb.stage.kind == SAMPLE
                         and any(r.loader_node == unit.node for r in sb.stage.models)]
            model_bytes, rest = 0, 0
            for i in stage_ids:
                sb = b.stages[i]
                it = _diffusion_item(sb, unit)
                if it is None:
                    continue
                model_bytes = max(model_bytes, it.bytes)
                r = sb.peak_bytes - it.bytes
                run = b.runs[i] if i < len(b.runs) else None
                if run is not None and run.peak_bytes:  # as ComfyUI runs it (cond / uncond in turn when short)
                    r = min(r, run.peak_bytes - run.resident_bytes)
                rest = max(rest, r)
            if model_bytes:
                wanted.append((unit, stage_ids, model_bytes, rest))
        for unit, stage_ids, model_bytes, rest in sorted(wanted, key=lambda w: -w[2]):  # the biggest first
            room = card.capacity_bytes - card.reserve_bytes - rest
            rooms = [(dev, room)] + [(d, idle_room[d]) for d in idle if idle_room.get(d, 0) > 0]
            alloc = write_allocation(model_bytes, rooms)
            for d, got in alloc.shares:
                if d in idle_room:
                    idle_room[d] -= got
            allocations[unit.node] = alloc.text
            off = model_bytes - dict(alloc.shares).get(dev, 0)
            splits.append(_split(unit, b, stage_ids, dev, card, alloc, off))
    for _ in range(SHRINK_ROUNDS if allocations else 0):
        wl = _apply(workload, where, allocations)
        budgets = {d: assess(wl, _card(devices, d), resolver, models=models) for d in gpus}
        # ComfyUI's own load rule may still not keep the share resident (classic: 1.1 x the weights + the
        # inference memory must be free, model_management.py load_models_gpu): give it what it streamed less
        shrunk = False
        for k, sp in enumerate(splits):
            b = budgets[sp.device]
            streamed = max((r.streamed_bytes for sb, r in zip(b.stages, b.runs)
                            if sb.device == sp.device and sb.stage.kind == SAMPLE and _diffusion_item(sb, sp.unit)),
                           default=0)
            if not streamed and (b.vram_verdict or b.verdict) not in ("runs_slower", "oom"):
                continue
            on_card = dict(sp.allocation["shares"]).get(sp.device, 0)
            cut = max(streamed, on_card // 20)
            model_bytes = on_card + sp.offloaded_bytes
            alloc = write_allocation(model_bytes, [(sp.device, max(0, on_card - int(cut * 1.1)))])
            allocations[sp.unit.node] = alloc.text
            splits[k] = replace(sp, allocation=alloc.to_dict(),
                                offloaded_bytes=model_bytes - dict(alloc.shares).get(sp.device, 0))
            splits[k] = _retime(splits[k], _card(devices, sp.device))
            shrunk = True
        if not shrunk:
            break
    worst = max(((b.vram_verdict or b.verdict) for d, b in budgets.items() if d in used or b.stages),
                key=lambda o: RANK.get(o, 3), default="fits")
    reload = 0
    fullest = 0.0
    for dev, b in budgets.items():
        card = _card(devices, dev)
        # each model's weights on this card (a text encoder's are left out: its output stays cached until the
        # prompt changes, so freeing its weights for the next stage costs a reload only then)
        weights: dict[str, int] = {}
        mine = []
        for sb, run in zip(b.stages, b.runs):
            if sb.device != dev:
                continue
            labels = {it.label for it in sb.items if it.category == "weights" and it.bytes}
            # the stage's own need as ComfyUI runs it (a run's peak may include models kept from earlier stages)
            mine.append((labels, min(sb.peak_bytes, run.peak_bytes or sb.peak_bytes)))
            if sb.stage.kind == TEXT_ENCODE:
                continue
            for it in sb.items:
                if it.category == "weights" and it.bytes:
                    weights[it.label] = max(weights.get(it.label, 0), it.bytes)
        # what cannot stay beside the busiest stage: ComfyUI frees it for that stage, loads it again next run
        for labels, peak in mine:
            others = sum(v for k, v in weights.items() if k not in labels)
            free_beside = card.capacity_bytes - card.reserve_bytes - peak
            reload = max(reload, min(others, max(0, others - free_beside)))
        fullest = max(fullest, max((r.peak_bytes for r in b.runs), default=0) / max(1, card.capacity_bytes))
    return _Priced(dict(where), allocations, budgets, splits, worst,
                   sum(s.copy_seconds_per_step * s.steps for s in splits),
                   sum(1 for u in units if where.get(u.node) == CPU), int(reload), fullest)


def _split(unit: Unit, b, stage_ids, dev: str, card: Device, alloc, off: int) -> Split:
    ctx = runtime.context_for(card)
    compute_s = 0.0
    steps, fw = 0, 1
    label = unit.refs[0].name
    for i in stage_ids:
        sb = b.stages[i]
        it = _diffusion_item(sb, unit)
        run = b.runs[i] if i < len(b.runs) else None
        forwards = run.forwards_per_step if run is not None else 1
        model = it.model if it is not None else None
        latent = sb.stage.latent
        if model is not None and latent is not None:
            label = it.label
            cond = sb.batch_factor
            c = runtime.forward_flops(model, latent, max(1, latent.batch) * cond, sb.stage.text_tokens) / (
                ctx.flops * runtime.MFU_TRANSFORMER)
            compute_s = max(compute_s, c)
        fw = max(fw, forwards)
        steps += sb.stage.steps or 20
    return _retime(Split(ref_key(unit.refs[0]), label, dev, alloc.to_dict(), off, steps, 0.0, compute_s, unit, fw),
                   card)


def _retime(sp: Split, card: Device) -> Split:
    """Its weight copies per step: every forward fetches the weights off the card over the host link."""
    return replace(sp, copy_seconds_per_step=sp.forwards * sp.offloaded_bytes / runtime.context_for(card).host_bps)


def _search(units: list[Unit], gpus: Sequence[str], price, sizes: dict[str, int]) -> tuple[_Priced, int]:
    """The best assignment and how many were priced. Every one when there are at most MAX_ASSIGNMENTS
    (the small models -- VAE, CLIP vision, ControlNet -- go with the first diffusion model once the big ones
    alone reach that); past that, greedily: the biggest unit first, each to the device that prices best
    given the ones placed before it (the rest on their current device meanwhile)."""
    cands = [_candidates(u, gpus) for u in units]
    small = {i for i, u in enumerate(units) if u.kind in ("vae", "clip_vision", "controlnet")}
    anchor_i = next((i for i, u in enumerate(units) if u.kind in ("diffusion", "checkpoint")), None)

    def follow(chosen: dict[int, str]) -> dict[str, str]:
        anchor = chosen.get(anchor_i, gpus[0]) if anchor_i is not None else gpus[0]
        return {u.node: chosen[i] if i in chosen else (anchor if anchor in cands[i] else cands[i][0])
                for i, u in enumerate(units)}

    def count(idx) -> int:
        n = 1
        for i in idx:
            n *= len(cands[i])
        return n

    best, tried = None, 0
    deadline = time.monotonic() + SEARCH_SECONDS
    every = list(range(len(units)))
    big = [i for i in every if i not in small]
    for idx in (every, big):
        if count(idx) <= MAX_ASSIGNMENTS:
            for combo in itertools.product(*(cands[i] for i in idx)):
                priced = price(follow(dict(zip(idx, combo))))
                tried += 1
                if best is None or priced.key() < best.key():
                    best = priced
                if time.monotonic() > deadline:
                    return replace(best, stopped=True), tried
            return best, tried
    chosen = {i: units[i].current if units[i].current in cands[i] else cands[i][0] for i in big}
    stopped = False
    for i in sorted(big, key=lambda i: -sizes.get(units[i].node, 0)):
        if time.monotonic() > deadline:
            stopped = True  # the rest stay where they are
            break
        local = None
        for dev in cands[i]:
            priced = price(follow({**chosen, i: dev}))
            tried += 1
            if local is None or priced.key() < local[1].key():
                local = (dev, priced)
        chosen[i] = local[0]
    return replace(price(follow(chosen)), stopped=stopped), tried + 1


def plan_target(units: Sequence[Unit], main: Device) -> str:
    """ComfyUI's own placement nodes where this ComfyUI has them, unless the workflow already uses ComfyUI-MultiGPU
    (archived on 2026-09-30: kept only for workflows built on it, or a ComfyUI without the core nodes)."""
    if any(u.node_type.endswith("MultiGPU") for u in units):
        return MULTIGPU
    return CORE if getattr(main, "core_device_nodes", False) else MULTIGPU


def plan(workload: Workload, devices: Sequence[Device], resolver: Resolver | None = None,
         models=None) -> PlacementPlan | None:
    """The best placement of the workflow's loaders over `devices` (cuda:0 first), or None with one card or
    no loader to place. On ComfyUI's own nodes (plan_target) a model moves whole: no DisTorch2 split."""
    if len(devices) < 2:
        return None
    units = units_of(workload)
    target = plan_target(units, devices[0])
    if target == CORE:
        units = [replace(u, base=u.base if u.base in CORE_MOVABLE else "") for u in units]
    if not any(u.movable for u in units):
        return None
    gpus = [f"cuda:{i}" for i in range(len(devices))]
    if models is None:
        models = dict(assess(workload, devices[0], resolver).models)
    sizes = {u.node: sum(int(getattr(models.get(ref_key(r)), "weights_bytes", 0) or 0) for r in u.refs)
             for u in units}
    best, tried = _search(units, gpus, lambda where: _price(workload, units, where, devices, resolver, models,
                                                            allow_splits=target == MULTIGPU), sizes)
    final = _apply(workload, best.where, best.allocations)
    placed = with_placement(best.budgets["cuda:0"], final, devices, resolver, assessed=best.budgets)
    loaders = tuple((_core_setting if target == CORE else _setting)(u, best.where[u.node],
                                                                     best.allocations.get(u.node, ""))
                    for u in units)
    notes = list(_notes(best))
    if best.stopped:
        notes.insert(0, f"the search stopped after {SEARCH_SECONDS:g} s ({tried} assignments priced): this is the best "
                        "placement found so far")
    # each card's outcome on its VRAM alone; the machine's RAM is judged once, below
    cards = tuple(replace(p, outcome=(best.budgets[p.device].vram_verdict or best.budgets[p.device].verdict))
                  if p.device in best.budgets and p.outcome in RANK else p for p in placed.placement)
    floor, host_outcome, line = ram_floor(best, devices[0])
    notes.append(line)
    worst = max((p.outcome for p in cards if p.outcome in RANK), key=lambda o: RANK[o], default=best.worst)
    if host_outcome == "oom":
        worst = "oom"
    elif host_outcome == "swapping" and RANK.get(worst, 0) < RANK["runs_slower"]:
        worst = "runs_slower"
    if target == MULTIGPU:
        notes.append("ComfyUI-MultiGPU was archived on 2026-09-30: this plan uses it because "
                     + ("the workflow already does" if any(u.node_type.endswith("MultiGPU") for u in units)
                        else "this ComfyUI has no SelectModelDevice (added to ComfyUI after 0.18)"))
    return PlacementPlan(target, worst, cards, loaders, tuple(best.splits), best.copy_s, best.reload, tried,
                         tuple(notes), other_engines(best, devices), floor, host_outcome)


def ram_floor(best: "_Priced", main: Device) -> tuple[int, str, str]:
    """(bytes, outcome, sentence): the system RAM the plan needs at least. ComfyUI is one process for every
    card: its own memory and the OS's, plus the larger of what any one card's stages keep in RAM (that card's
    host simulation, host_memory.simulate) and the DisTorch2 shares every split keeps on the CPU for the whole
    prompt (the loaders' outputs stay cached). A lower bound: two cards' RAM needs are not added."""
    host = main.host or Host()
    base = ((host.process_bytes if host.process_bytes is not None else COMFY_PROCESS_BYTES)
            + (host.other_bytes if host.other_bytes is not None else OS_BYTES.get(host.os, OS_BYTES["linux"])))
    beyond = max((b.host.peak_bytes - base for b in best.budgets.values() if b.host is not None), default=0)
    offloaded = sum(sp.offloaded_bytes for sp in best.splits
                    if sp.allocation.get("rest_device") == CPU and sp.allocation.get("rest_bytes"))
    floor = base + max(0, beyond, offloaded)
    said = (f"system RAM: this plan needs at least {fmt_gib(floor)} (ComfyUI and the OS "
            f"{fmt_gib(base)}" + (f", {fmt_gib(offloaded)} of weights DisTorch2 keeps on the CPU" if offloaded else "")
            + ")")
    if not host.known:
        return floor, "not_checked", said + "; RAM not given: give --ram GiB to check it"
    ram, swap = host.ram_total_bytes, host.swap_total_bytes or 0
    if floor > ram + swap:
        return floor, "oom", said + f"; this machine has {fmt_gib(ram)} of RAM and {fmt_gib(swap)} of swap: out of memory"
    if floor > ram:
        return floor, "swapping", said + f"; more than the {fmt_gib(ram)} of RAM: it swaps"
    return floor, "fits", said + f"; this machine has {fmt_gib(ram)}"


def _setting(unit: Unit, dev: str, alloc: str) -> LoaderSetting:
    """The node type and widget values that put `unit` on `dev` (with DisTorch2 allocation `alloc`): a
    DisTorch2 loader keeps its type and gets every DisTorch2 widget written (the plan priced it with no
    virtual VRAM but `alloc`, so a virtual_vram_gb left on it is cleared); a loader that must split becomes
    its DisTorch2 variant; any other moved loader its device-only variant."""
    keys = tuple(dict.fromkeys(ref_key(r) for r in unit.refs))
    if not unit.movable:
        return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, {}, keys, False,
                             f"{unit.node_type} has no ComfyUI-MultiGPU variant: it stays where it is")
    plain, distorch2 = VARIANTS[unit.base]
    ref = unit.refs[0]
    is_d2 = unit.node_type.endswith("DisTorch2MultiGPU")
    if unit.node_type in WANVIDEO or unit.base in WANVIDEO_BASES:
        use = unit.node_type if unit.node_type in WANVIDEO else plain
        widgets: dict = {WANVIDEO[use][1]: dev}
        changed = unit.current != dev or use != unit.node_type
    elif is_d2 or (alloc and distorch2):
        use = unit.node_type if is_d2 else distorch2
        param = "device" if unit.base in CLIP_BASES else "compute_device"
        widgets = {param: dev, "virtual_vram_gb": 0.0, "donor_device": "cpu", "expert_mode_allocations": alloc}
        changed = (unit.current != dev or use != unit.node_type or (ref.allocation or "") != alloc
                   or bool(ref.offload_bytes))
    elif unit.current == dev:  # already there: ComfyUI's main device, or the variant says so
        return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, {}, keys, False, f"stays on {dev}")
    else:
        use, widgets, changed = plain, {"device": dev}, True
    if not changed:
        return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, widgets, keys, False, f"stays on {dev}")
    why = (f"split with DisTorch2, computed on {dev}" if alloc else
           CPU_WHY if dev == CPU else
           f"on {dev}")
    return LoaderSetting(unit.node, unit.node_type, use, dev, widgets, keys, True, why)


WANVIDEO_BASES = {name[: -len("MultiGPU")] for name in WANVIDEO}
# loaders whose output ComfyUI's own nodes can place (MODEL, CLIP, VAE; a checkpoint's MODEL)
CORE_MOVABLE = {"UNETLoader", "VAELoader", "CLIPLoader", "DualCLIPLoader", "TripleCLIPLoader", "QuadrupleCLIPLoader",
                "CheckpointLoaderSimple", "UnetLoaderGGUF", "UnetLoaderGGUFAdvanced", "CLIPLoaderGGUF",
                "DualCLIPLoaderGGUF", "TripleCLIPLoaderGGUF", "QuadrupleCLIPLoaderGGUF"}


def _core_setting(unit: Unit, dev: str, alloc: str = "") -> LoaderSetting:
    """ComfyUI's own way to put `unit` on `dev`: a CLIPLoader's `device` widget for the CPU, else a Select*Device
    node on the loader's output with `device` = gpu:N / cpu."""
    keys = tuple(dict.fromkeys(ref_key(r) for r in unit.refs))
    if not unit.movable:
        return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, {}, keys, False,
                             f"{unit.node_type}: ComfyUI's placement nodes do not take its output; it stays where it "
                             "is", target=CORE)
    if unit.current == dev:
        return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, {}, keys, False, f"stays on {dev}",
                             target=CORE)
    where = core_device(dev)
    if unit.kind == "text_encoder" and dev == CPU and unit.node_type in CORE_CPU_WIDGET:
        return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, {"device": "cpu"}, keys, True,
                             CPU_WHY, target=CORE)
    node, socket = CORE_SELECT.get(unit.kind, ("", ""))
    if not node or (node == "SelectVAEDevice" and dev == CPU):
        return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, {}, keys, False,
                             f"ComfyUI has no node to put a {unit.kind} there; it stays where it is", target=CORE)
    why = CPU_WHY if dev == CPU else f"on {dev}"
    return LoaderSetting(unit.node, unit.node_type, unit.node_type, dev, {}, keys, True, why, target=CORE,
                         insert=node, insert_socket=socket, insert_widgets={"device": where})


def _notes(best: _Priced) -> tuple[str, ...]:
    out = []
    for s in best.splits:
        low, high = s.slowdown
        out.append(f"{s.label}: {fmt_gib(s.offloaded_bytes)} of its weights stay off {s.device} and are fetched at "
                   f"every forward ({s.copy_seconds_per_step:.2f} s of copies per step against "
                   f"{s.compute_seconds_per_step:.2f} s of compute): {runtime.speed_words(low, high)}")
    if best.reload:
        out.append(f"{fmt_gib(best.reload)} of weights do not stay resident beside the others on their card: "
                   "ComfyUI frees them for the next stage and loads them again at every run "
                   "(model_management.py free_memory)")
    if best.splits:
        out.append("DisTorch2 takes effect through ModelPatcher.partially_load (ComfyUI-MultiGPU distorch_2.py:"
                   "209-330); the device-only variants set the device while the base loader runs (wrappers.py:440-470)")
    return tuple(out)


def other_engines(best: _Priced, devices: Sequence[Device]) -> tuple[dict, ...]:
    """What the other multi-GPU engines would do with this workflow, each priced from the main card's
    sampling stages: ComfyUI's own CFG split (a copy of the model on every card, one cond each) and Raylight
    (Ulysses: the working memory split over the cards; FSDP: the weights too)."""
    out = []
    main = best.budgets.get("cuda:0")
    n = len(devices)
    samples = [(sb, it) for sb in (main.stages if main is not None else ()) if sb.stage.kind == SAMPLE
               for it in [next((x for x in sb.items if x.category == "weights" and x.model is not None
                                and x.model.kind == "diffusion"), None)]]
    cfg1 = all(sb.batch_factor < 2 for sb, _ in samples) if samples else True
    rooms = [d.capacity_bytes - d.reserve_bytes for d in devices]
    name = "ComfyUI MultiGPU CFG Split (MultiGPU_WorkUnits)"
    if cfg1:
        out.append({"engine": name, "useful": False,
                    "why": "no gain at CFG 1: it runs cond and uncond on different cards (comfy_extras/"
                           "nodes_multigpu.py:20-48, comfy/multigpu.py:125-197), and at CFG 1 there is no uncond"})
    else:
        # every card holds its own full copy of the model (create_multigpu_deepclones) and runs one cond
        need = max((sb.min_peak_bytes - sb.weights_bytes + _whole(it) for sb, it in samples), default=0)
        short = [f"cuda:{i}" for i, r in enumerate(rooms) if need > r]
        speedup = _cfg_split_speedup(samples, devices)
        gain = ("up to 2x faster sampling" if not speedup else
                f"sampling ≈ {speedup:.2f}x as fast (one cond per card; the slower card paces each step)"
                if speedup >= 1 else
                f"sampling ≈ {1 / speedup:.1f}x slower: the slower card paces each step with half the work")
        out.append({"engine": name, "useful": not short and (speedup is None or speedup > 1.05),
                    "need_per_card_bytes": need,
                    "speedup": None if speedup is None else round(speedup, 2),
                    "why": (f"cond and uncond on two cards at once, {gain}; every card holds a full copy of the "
                            f"model (comfy/multigpu.py:125-197): {fmt_gib(need)} per card"
                            + (f", more than {', '.join(short)} has" if short else ", which every card has")
                            + "; ComfyUI 0.33 splits the conds evenly whatever the cards' speeds (MultiGPU Options, "
                              "its relative_speed, is not registered: comfy_extras/nodes_multigpu.py:350-363)")})
    if samples:
        sb, it = max(samples, key=lambda p: p[0].peak_bytes)
        weights = _whole(it)
        ctx = sb.peak_bytes - sb.weights_bytes - sb.working_bytes
        work = sb.working_bytes
        # Ulysses splits the attention heads over the cards: its degree must divide the model's head count
        heads = int((it.model.arch or {}).get("heads", 0) or 0) if it is not None and it.model is not None else 0
        n = max((d for d in range(1, n + 1) if not heads or heads % d == 0), default=1)
        usp = ctx + weights + -(-work // n)
        fsdp = ctx + -(-weights // n) + -(-work // n)
        room = min(rooms)
        gguf = any(getattr(r, "gguf", False) for r in sb.stage.models)
        if usp <= room:
            mode, need = f"Ulysses degree {n}, FSDP off", usp
        elif fsdp <= room and not gguf:
            mode, need = f"Ulysses degree {n} with FSDP on", fsdp
        else:
            mode, need = ("FSDP CPU offload" if not gguf else "not without FSDP, which GGUF models cannot use"), fsdp
        out.append({"engine": "Raylight", "useful": usp <= room or (fsdp <= room and not gguf), "mode": mode,
                    "need_per_card_bytes": need,
                    "why": (f"{mode}: {fmt_gib(need)} per card ({sb.title}: the working memory split over {n} "
                            f"cards by Ulysses sequence parallelism"
                            + (", the weights by FSDP" if "FSDP on" in mode else "")
                            + "); Linux with P2P between the cards only; GGUF models cannot be FSDP-sharded")})
    out.append({"engine": "Windows", "useful": None,
                "why": "ComfyUI on Windows uses GPU 0 only unless started with --cuda-device all "
                       "--disable-pinned-memory (main.py:48-60 of ComfyUI 0.33.0)"})
    return tuple(out)


def _cfg_split_speedup(samples, devices: Sequence[Device]) -> float | None:
    """Sampling time on the main card alone (cond and uncond) over the time with one cond on each of the first
    two cards at once (the slower one paces the step), from runtime.forward_flops at each card's throughput."""
    if len(devices) < 2:
        return None
    one = alone = both = 0.0
    for sb, it in samples:
        lat = sb.stage.latent
        if it is None or it.model is None or lat is None:
            return None
        one = runtime.forward_flops(it.model, lat, max(1, lat.batch), sb.stage.text_tokens)
        t = [one / ((d.flops or 165.2e12) * runtime.MFU_TRANSFORMER) for d in devices[:2]]
        alone += 2 * t[0]
        both += max(t)
    return alone / both if both > 0 else None


def _whole(item) -> int:
    """A diffusion model's whole weights (a DisTorch2 share on the card is not what a full copy needs)."""
    if item is None:
        return 0
    return max(item.bytes, int(getattr(item.model, "weights_bytes", 0) or 0))
