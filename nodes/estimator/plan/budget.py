"""Workload + Device -> Budget: per-stage peaks, breakdown and the verdict (planning.py adds the fixes).

How ComfyUI runs a workflow, and so what must be on the GPU at once (comfy/model_management.py load_models_gpu / free_memory, execution.py):
- stages run in turn (text encode, sample, decode); a model no longer needed is offloaded when
  memory is short (smart memory), so the peak is the max over stages, not a sum;
- Wan 2.2 A14B's two experts are two sampling stages, loaded in turn;
- weights are loaded at the dtype ComfyUI picks: a `weight_dtype` widget overrides the file; an
  fp8 file is upcast to 16 bit on a GPU without fp8 compute when the 16-bit copy fits
  (model_management.unet_dtype); scaled-fp8 and GGUF files stay quantized; text encoders load at
  fp16 except T5/umT5, which keep the file's dtype; GGUF dequantizes one layer at a time, so the
  largest layer's 16-bit copy is working memory;
- CFG > 1 evaluates cond and uncond; ComfyUI batches them when memory allows
  (samplers.py:263-274) and runs them one after another when it does not;
- classic memory management: weights that do not fit are streamed from RAM ("loaded partially",
  several times slower); Dynamic VRAM (ComfyUI 0.13+, comfy-aimdo): weights are elastic and what
  must fit is working memory plus headroom.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import Mapping

from ..machine import host_memory, runtime, speed
from ..physics import memory
from ..machine.device import Device
from ..errors import ModelFileError
from ..machine.gpus import Card, cheapest_card_that_fits
from ..model_info import DIFFUSION, UNKNOWN, ModelInfo
from ..models.name_infer import base_as, base_family, kind_of_folder, lora_on
from ..machine.resolve import Resolver, part_of, ref_key, resolve_model
from ..machine import placement
from ..stages import StageBudget, build_stage, gap, simulate
from ..stages.base import off_card
from ..units import GiB, fmt_gib
from ..workload import SAMPLE, TEXT_ENCODE, TRAIN, ModelRef, Stage, Workload

TIGHT_FRACTION = 0.10  # "tight" = less than 10 % of the card left over (issue: fits / tight / won't fit)


VERDICTS = ("fits", "tight", "runs_slower", "oom", "unknown")  # stable values of Budget.verdict / --json


@dataclass(frozen=True)
class Missing:
    """A model the estimate could not price: what it is, where ComfyUI looks for it, how to fix it."""

    name: str
    folder: str
    role: str
    problem: str

    def to_dict(self) -> dict:
        return {"name": self.name, "folder": self.folder, "role": self.role, "problem": self.problem,
                "fix": self.fix}

    @property
    def fix(self) -> str:
        return (f"put {self.name} in ComfyUI's models/{self.folder}/ and point --models-dir at that models/ "
                "folder (in ComfyUI: the file must be in the model folders)")


def at_least(peak: int, runs) -> str:
    """The lower bound of an incomplete estimate in words: "at least X", X as ComfyUI runs the stages it can price
    (a VAE call that runs out of memory is retried tiled, weights stream: runtime.py) where that is less than every
    stage in one go, which is then said beside it."""
    run_peak = max((r.peak_bytes for r in runs), default=0)
    if 0 < run_peak < peak:
        return f"at least {fmt_gib(run_peak)} as ComfyUI runs it; {fmt_gib(peak)} if each stage ran in one go"
    return f"at least {fmt_gib(peak)}"


def held_bytes(runs, peak: int) -> int:
    """What the card holds at the peak as the runs go (cond / uncond in turn, weights streamed, a pack's block
    swap): the largest run peak where it is below the all-resident stage peak, else that peak."""
    run_peak = max((r.peak_bytes for r in runs), default=0)
    return run_peak if 0 < run_peak < peak else peak


@dataclass(frozen=True)
class Budget:
    stages: tuple[StageBudget, ...]
    device: Device
    peak_bytes: int  # everything of the peak stage on the GPU at once (all weights resident)
    peak_stage: int  # index into stages (-1 when empty)
    verdict: str  # one of VERDICTS: fits | tight | runs_slower | oom | unknown
    headroom_bytes: int  # capacity - peak (negative: short by)
    offload_bytes: int  # weights ComfyUI streams from RAM at the stage that streams most
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    unknown_nodes: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    runs: tuple = ()  # runtime.StageRun per stage: what ComfyUI does on this card
    tight: bool = False  # under 10 % left, or the uncertainty range reaches past the card
    slowdown: float = 1.0  # sampling time with streaming / all resident (copies overlapped)
    slowdown_high: float = 1.0  # the same with copies not overlapped
    extra_seconds: float = 0.0  # one-off: a VAE OOM + tiled retry, streamed text encoders
    missing: tuple[Missing, ...] = ()
    incomplete: tuple[str, ...] = ()  # stages without a working-memory figure, and why
    peak_high_bytes: int = 0  # upper end of the peak range (allocator, attention backend)
    peak_low_bytes: int = 0  # lower end: the bare traced activations
    outcome: str = "fits"  # the simulated outcome even when the verdict is unknown
    host: "host_memory.HostBudget | None" = None  # system RAM per stage (host_memory.py)
    vram_verdict: str = ""  # the verdict on the card alone, before the host side
    # issue 24: which device each model is on ('folder/name' -> (device, why)); shown in the JSON and the
    # report when a node pack placed a model (show_devices) or several cards are given (placement)
    model_devices: Mapping[str, tuple] = field(default_factory=dict)
    show_devices: bool = False
    placement: tuple = ()  # multi_device.DevicePlan per device (cuda:0 first, then the others, then cpu)
    overall_verdict: str = ""  # with several cards: the worst device's verdict ("" = verdict)

    @property
    def memory_mode(self) -> str:
        return self.device.memory_mode

    @property
    def run_time(self):
        """speed.RunTime of one run (None: no sampling stage, or one without a predicted step time)."""
        return speed.run_time(self.stages, self.runs, self.device, self.host)

    @property
    def spare_bytes(self) -> int:
        """What the card keeps free at the peak as ComfyUI runs it: the verdict's figure. When the runtime splits the
        peak stage (cond / uncond in turn, VAE batches, weights streamed), its run peak; else capacity - peak."""
        return self.device.capacity_bytes - held_bytes(self.runs, self.peak_bytes)

    @property
    def complete(self) -> bool:
        return not self.missing and not self.incomplete and bool(self.stages)

    def stop_reason(self, slower_than: float = 0.0) -> str:
        """Why the VRAM Budget node's stop_if_wont_fit should stop the prompt, or "": only when
        ComfyUI would run out of memory even with its offloading (never for a workflow it would
        finish, however slowly), or when sampling would be more than `slower_than` times slower
        (the optimistic end of the range, so that only a sure slowdown stops it)."""
        if self.verdict == "oom":
            return "ComfyUI would run out of memory even with its offloading"
        if slower_than and slower_than > 0 and self.verdict == "runs_slower" and self.slowdown > slower_than:
            return f"streaming weights would make sampling ≈ {self.slowdown:.1f}× slower (limit {slower_than:g}×)"
        return ""

    def to_dict(self, planned=None) -> dict:
        """The --json record; `planned` (planning.Estimate) adds the fixes, cards, capacity, risk and evidence in
        their places (a verdict alone prints them empty, as before the split)."""
        d = self._vram_dict(planned if planned is not None else _NOTHING_PLANNED)
        if self.host is not None:
            for st, r in zip(d["stages"], self.host.runs):
                st["ram_peak_bytes"] = r.ram_bytes
                st["ram"] = r.to_dict()
        return d

    def _vram_dict(self, p) -> dict:
        return {
            "verdict": self.verdict,
            "tight": self.tight,
            "outcome": self.outcome,
            "slowdown": round(self.slowdown, 2),
            "slowdown_high": round(self.slowdown_high, 2),
            "extra_seconds": round(self.extra_seconds, 1),
            "time": None if (t := self.run_time) is None else t.to_dict(),  # added: issue 32, time first
            "complete": self.complete,
            "missing": [m.to_dict() for m in self.missing],
            "incomplete": list(self.incomplete),
            "peak_low_bytes": self.peak_low_bytes,
            "peak_high_bytes": self.peak_high_bytes,
            "predicted_peak_bytes": max((r.peak_bytes for r in self.runs), default=0),
            "peak_bytes": self.peak_bytes,
            "peak_gib": round(self.peak_bytes / GiB, 2),
            "peak_stage": self.peak_stage,
            "headroom_bytes": self.headroom_bytes,
            "spare_bytes": self.spare_bytes,  # the verdict's "to spare": headroom as ComfyUI runs the peak stage
            "offload_bytes": self.offload_bytes,
            "memory_mode": self.memory_mode,
            "device": {
                "name": self.device.name, "total_bytes": self.device.total_bytes,
                "capacity_bytes": self.device.capacity_bytes, "source": self.device.source,
                "other_processes_bytes": self.device.other_processes_bytes,
                "reserved_unallocated_bytes": self.device.reserved_unallocated_bytes,
                "fp8_compute": self.device.fp8_compute,
            },
            "stages": [self._stage_entry(s, r)
                       for s, r in zip(self.stages, list(self.runs) + [None] * (len(self.stages) - len(self.runs)))],
            "remedies": [r.to_dict() for r in p.remedies],
            "plan": p.plan.to_dict() if p.plan is not None else None,
            "cheapest_card": _card_dict(p.cheapest_card),
            "cheapest_card_with_margin": _card_dict(p.cheapest_card_with_margin),
            "models": {k: self._model_entry(k, v) for k, v in self.models.items()},
            "unknown_nodes": [{"node_id": i, "class_type": t} for i, t in self.unknown_nodes],
            "notes": list(self.notes),
            **({"capacity": [c.to_dict() for c in p.capacity]} if p.capacity else {}),
            **self._host_dict(),
            **({"placement": [p.to_dict() for p in self.placement],
                "overall_verdict": self.overall_verdict or self.verdict} if self.placement else {}),
            **({"placement_plan": p.placement_plan.to_dict()} if p.placement_plan is not None else {}),
            **({"oom_risk": p.oom_risk.to_dict(), "assumptions": _assumptions(self),
                "evidence": [e.to_dict() for e in p.evidence],
                "known_regressions": [_regression_dict(r) for r in p.known_regressions]}
               if p.oom_risk is not None else {}),
        }

    def _stage_entry(self, s: StageBudget, r) -> dict:
        d = {**s.to_dict(), "run": r.to_dict()} if r is not None else s.to_dict()
        if self.show_devices:  # added fields (issue 24): where it runs and why
            d.update(device=s.device, device_reason=s.device_reason, on_this_card=s.on_card)
            if not s.on_card:
                d["device_peak_bytes"] = s.device_peak_bytes
        return d

    def _model_entry(self, key: str, info: ModelInfo) -> dict:
        d = _model_dict(info)
        if self.show_devices:
            dev, why = self.model_devices.get(key, (placement.MAIN, placement.MAIN_REASON))
            d.update(device=dev, device_reason=why)
        return d

    def _host_dict(self) -> dict:
        hb = self.host
        if hb is None:
            return {}
        return {
            "vram_verdict": self.vram_verdict or self.verdict,
            "host_outcome": hb.outcome,
            "ram_peak_bytes": hb.peak_bytes,
            "ram_total_bytes": hb.host.ram_total_bytes,
            "swap_total_bytes": hb.host.swap_total_bytes,
            "ram_assumed": not hb.host.known,
            "host": hb.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


class _NothingPlanned:
    """What a verdict alone prints for the planning layer's fields (planning.Estimate fills them)."""
    remedies, plan, cheapest_card, cheapest_card_with_margin, capacity = (), None, None, None, ()
    placement_plan, oom_risk, evidence, known_regressions = None, None, (), ()


_NOTHING_PLANNED = _NothingPlanned()


def cards_by_capacity(budget: Budget) -> tuple[Card | None, Card | None]:
    """The cheapest rental card whose capacity holds the least this workflow runs with, and the one that holds its
    peak with 10 % to spare: a capacity comparison, quick enough for a planner's search (the planning layer
    simulates each card instead, planning.cheapest_cards). None for what fits the user's own card."""
    if not budget.stages or budget.outcome == runtime.FITS:
        return None, None
    min_peak = max(s.min_peak_bytes for s in budget.stages)
    return (cheapest_card_that_fits(min_peak + budget.device.other_processes_bytes),
            cheapest_card_that_fits(int(budget.peak_bytes / (1 - TIGHT_FRACTION))))


def _assumptions(budget) -> str:
    from .report import assumptions  # noqa: PLC0415  (report formats budgets; it imports nothing of this module)
    return assumptions(budget)


def _regression_dict(entry) -> dict:
    return {k: entry.get(k) for k in ("id", "component", "matched", "affected_from", "affected_to", "fixed_in",
                                       "symptom", "avoid", "kind", "sources")}


def _card_dict(card: Card | None):
    if card is None:
        return None
    return {"name": card.name, "nominal_gb": card.nominal_gb, "total_bytes": card.total_bytes, "price_eur_h": card.price_eur_h}


def _model_dict(info: ModelInfo) -> dict:
    return {
        "kind": info.kind, "family": info.family, "label": info.label, "params": info.params,
        "weights_bytes": info.weights_bytes, "dtype": info.dtype, "quantization": info.quantization,
        "source": info.source, "evidence": list(info.evidence), "path": info.path,
    }


def _rule_notes(device: Device) -> tuple[str, ...]:
    """What the 0.35+ rules change in this answer (docs/runtime.md has the table with sources); the Comfy Compiler
    is said in the assumptions line (report.assumptions), its effect on the peak's range in docs/runtime.md."""
    out = []
    if device.fast_disk:
        out.append("fast disk (ComfyUI 0.37+): weights that get room on the card are copied from the model files, "
                   "not pinned in RAM, and read from disk again after they are evicted; streamed weights are still "
                   "pinned (ops.py:188-195, :232 handle_pin in 0.38.1); --disable-fast-disk keeps them in RAM")
    return tuple(out)


# ----------------------------------------------------------------------------------------------
def assess(
    workload: Workload,
    device: Device,
    resolver: Resolver | None = None,
    models: Mapping[str, ModelInfo] | None = None,
) -> Budget:
    """The budget of a workload on a device and its verdict, without the fixes (planning.estimate adds
    the remedy ladder, the RAM fixes and the cheapest card that runs it; a search that only needs the
    peaks and verdicts calls this).

    `models`: ModelInfos already resolved by the caller, keyed "folder/name" as the workload's
    ModelRefs name them (a planner pricing many sizes of the same models resolves them once);
    refs not in it are resolved as usual.
    """
    notes: list[str] = list(workload.notes) + list(_rule_notes(device))
    infos: dict[str, ModelInfo] = {}

    def info_for(ref: ModelRef) -> ModelInfo:
        key = ref_key(ref)
        if key not in infos and models is not None and key in models:
            infos[key] = models[key]
        if key not in infos:
            try:  # a family hint any stage's reference to this file carries (a checkpoint's parts share one key)
                info, note = resolve_model(replace(ref, hint=ref.hint or hints.get(key, "")), resolver)
            except ModelFileError as exc:
                info = ModelInfo(kind=UNKNOWN, family="unknown", label=ref.name, params=0, weights_bytes=0, source="error")
                note = f"{exc}: its size is unknown (the estimate is a lower bound)"
            if info.source == "missing" and key in base_hint:  # a fine-tune the name does not say: its companions do
                guess, _why = base_as(ref.name, ref.role, ref.folder, *base_hint[key])
                if guess is not None:
                    info, note = guess, None
            if info.source == "missing" and ref.role == "lora" and key in lora_base:
                base = info_for(lora_base[key])
                if base.kind == DIFFUSION and base.family != "unknown":
                    guess, _why = lora_on(ref.name, base.family, base.label)
                    if guess is not None:
                        info, note = guess, None
            infos[key] = info
            if note:
                notes.append(note)
        return part_of(infos[key], ref)

    hints = {ref_key(r): r.hint for s in workload.stages for r in s.models if r.hint}
    # A LoRA whose name does not say its base model: the model it patches in the graph does.
    lora_base: dict[str, ModelRef] = {}
    # A base model whose name says nothing: a ControlNet or IP-Adapter made for SD1.5 or SDXL that samples with it
    # does (name_infer.base_as; either would fail on another base: their tensors are sized for its UNet, unlike a
    # LoRA, whose keys just would not match); so does another SD1.5 / SDXL UNet patched or merged into the same MODEL
    # (IC-Light's UNet, a merge: ComfyUI adds one's weights to the other's, so the shapes must match); a
    # checkpoint's other parts (its CLIP, its VAE) share the key
    base_hint: dict[str, tuple[str, str]] = {}
    for stage in workload.stages:
        bases = [r for r in stage.models if r.role == "diffusion" or (r.role == "checkpoint" and r.part == "model")]
        for r in stage.models:
            if r.role == "lora" and bases:
                lora_base.setdefault(ref_key(r), bases[0])
        for r in stage.models if bases else ():
            kind = kind_of_folder(r.folder) or r.role
            companion = r.role in ("controlnet", "ipadapter", "brushnet") or (r in bases and len(bases) > 1)
            family = base_family(r.name, kind) if companion and not r.unset else None
            if family:
                what = "UNet in the same model" if r in bases else r.role
                for b in bases:
                    if b is not r:
                        why = f"{r.name}: a {family.upper()} {what} it samples with"
                        base_hint.setdefault(ref_key(b), (family, why))

    stage_budgets: list[StageBudget] = []
    seen_text: dict[tuple, int] = {}
    merged: dict[int, int] = {}  # index of a text-encode entry -> prompts merged into it
    same_text: dict[tuple, int] = {}  # a text stage but its node id -> its entry: an identical prompt adds nothing
    here = getattr(device, "ordinal", placement.MAIN)
    for stage in workload.stages:
        same = _text_twin_key(stage)
        if same is not None and same in same_text:  # built already: the same figure, one more prompt
            idx = same_text[same]
            merged[idx] = merged.get(idx, 0) + 1
            continue
        sb = build_stage(stage, device, info_for)
        if sb is None:
            continue
        where, why = placement.stage_device(stage, device)
        if (stage.device or here != placement.MAIN) and where != here:  # runs on another device (issue 24)
            there = None if where == placement.CPU else build_stage(stage, replace(device, ordinal=where), info_for)
            sb = off_card(sb, where, why, there.peak_bytes if there is not None else None)
        elif where != sb.device or why != sb.device_reason:  # the usual stage: no copy
            sb = replace(sb, device=where, device_reason=why)
        if stage.kind == TEXT_ENCODE:  # positive and negative prompts on the same encoders: one entry (never
            # merging a stage whose figure is missing into one that has it)
            key = (tuple(sorted(ref_key(r) for r in stage.models)), stage.unpriced)
            if key in seen_text:  # the entry keeps the largest of its prompts (a longer prompt, more activations)
                idx = seen_text[key]
                merged[idx] = merged.get(idx, 0) + 1
                if sb.peak_bytes > stage_budgets[idx].peak_bytes:  # its title too (a TextGenerate's KV cache)
                    stage_budgets[idx] = sb
                if same is not None:
                    same_text[same] = idx
                continue
            seen_text[key] = len(stage_budgets)
            if same is not None:
                same_text[same] = len(stage_budgets)
        stage_budgets.append(sb)
    for idx, more in merged.items():
        stage_budgets[idx] = replace(stage_budgets[idx], title=_plural_prompts(stage_budgets[idx].title, more))

    capacity = device.capacity_bytes
    if stage_budgets:
        peak_stage = max(range(len(stage_budgets)), key=lambda i: stage_budgets[i].peak_bytes)
        peak = stage_budgets[peak_stage].peak_bytes
    else:
        peak_stage, peak = -1, 0
        notes.append("no stage that uses the GPU was found in this workflow")

    # What ComfyUI does with it on this card (runtime.py), stage by stage.
    runs = simulate(stage_budgets, device) if stage_budgets else []
    outcome, slowdown, slowdown_high, extra = runtime.overall(runs)
    missing, incomplete = _gaps(workload, infos, stage_budgets)
    offload = max((r.streamed_bytes for r in runs), default=0)
    headroom = capacity - peak
    # Range: the working memory carries memory.calibration(family) (allocator, untraced transients)
    # fitted on published runs; the low end is the bare trace, the high end 1.1 × the factor.
    if stage_budgets:
        sb = stage_budgets[peak_stage]
        model = next((it.model for it in sb.items if it.model is not None and it.model.kind == DIFFUSION), None)
        k = memory.calibration(model.family, "TorchCompile" in (sb.stage.legacy_path or "")) \
            if (model is not None and sb.stage.kind == SAMPLE) else 1.0
        work = sb.working_bytes
        peak_low = peak - int(work * (1 - memory.ACTIVATION_LOW / k))
        # the Comfy Compiler (0.35+, Dynamic VRAM on CUDA / HIP) plans sampling's allocations once and caches no
        # freed block: "the physical VRAM peak matches the logical allocation peak" (Comfy-Org/ComfyUI#15861,
        # comfy-aimdo#93), so the allocator's slack above the calibrated peak goes; the uncalibrated share stays
        slack = 0 if device.comfy_compiler and sb.stage.kind == SAMPLE else int(work * (memory.ACTIVATION_HIGH_OVER - 1))
        peak_high = peak + slack + (0 if k > 1 else int(0.1 * work))
    else:
        peak_low = peak_high = peak
    if outcome == runtime.FITS:
        # the card as ComfyUI (or a pack's block swap) runs the peak: the run's peak where it is below the stage's
        # all-resident one (Budget.spare_bytes, the verdict's "to spare"), with the same range above it
        held = held_bytes(runs, peak)
        tight = capacity - held < TIGHT_FRACTION * capacity or held + (peak_high - peak) > capacity
    elif outcome == runtime.RUNS_SLOWER:
        tight = max((r.peak_bytes for r in runs), default=0) > (1 - TIGHT_FRACTION) * capacity
    else:
        tight = False
    if missing or incomplete or outcome == runtime.UNKNOWN:
        verdict = "unknown"
        parts = [f"{m.name} ({m.problem})" for m in missing[:5]] + list(incomplete[:3])
        more = len(missing) - 5 + max(0, len(incomplete) - 3)
        why = "; ".join(p for p in parts if str(p).strip()) + (f"; and {more} more" if more > 0 else "")
        if not why.strip():  # never "can't tell: ." (issue 37): say what is missing even when no part names it
            why = ("a stage has no figure the estimator could compute" if stage_budgets else
                   "the workflow has no stage the estimator could price")
        if not stage_budgets and workload.silent_pack_nodes:
            shown = ", ".join(f"{t}{f' ×{n}' if n > 1 else ''}" for t, n in workload.silent_pack_nodes[:5])
            more = len(workload.silent_pack_nodes) - 5
            shown += f" and {more} more type{'s' if more > 1 else ''}" if more > 0 else ""
            why += (f": its node-pack nodes ({shown}) were read by their "
                    "types as passing data on; a model one of them runs inside is not in this estimate")
        # nothing priced: no lower bound to give (unknown is never 0 bytes)
        notes.insert(0, f"can't tell: {why}" + (f". The peak shown is a lower bound ({at_least(peak, runs)})"
                                                if stage_budgets else ""))
    elif outcome == runtime.FITS:
        verdict = "tight" if tight else "fits"
    else:
        verdict = outcome
    for sb, run in zip(stage_budgets, runs):
        notes.extend(run.explanation)
        if sb.stage.kind == TRAIN or sb.stage.generate_tokens:  # their remedies live in the stage's notes
            notes.extend(sb.notes)

    # System RAM at each stage (host_memory.py): a stage that needs more than RAM + swap is an OOM
    # whatever the card; one that swaps runs slower. A lower bound (can't tell) that is already too
    # much for the RAM is an OOM too.
    vram_verdict = verdict
    hb = None
    images = host_memory.image_bytes(stage_budgets)
    if stage_budgets:
        hb = host_memory.simulate(stage_budgets, runs, device, device.host, images)
        why = [hb.why] if hb.why else []  # the stage where the run stops
        if hb.outcome == host_memory.OOM:
            verdict = "oom"
            notes[:0] = why
        elif hb.outcome in (host_memory.SWAPPING, host_memory.THRASHING):
            if verdict in ("fits", "tight"):
                verdict = "runs_slower"
            notes.extend(why)
        notes.extend(hb.notes)

    budget = Budget(
        stages=tuple(stage_budgets), device=device, peak_bytes=peak, peak_stage=peak_stage, verdict=verdict,
        headroom_bytes=headroom, offload_bytes=offload,
        models=dict(infos), unknown_nodes=workload.unknown_nodes, notes=tuple(dict.fromkeys(notes)),
        runs=tuple(runs), tight=tight, slowdown=slowdown, slowdown_high=slowdown_high, extra_seconds=extra, missing=tuple(missing),
        incomplete=tuple(incomplete), peak_high_bytes=peak_high, peak_low_bytes=peak_low, outcome=outcome,
        host=hb, vram_verdict=vram_verdict,
        model_devices=placement.model_devices(workload), show_devices=placement.placed(workload),
    )
    return budget


def _gaps(workload: Workload, infos: Mapping[str, ModelInfo], stage_budgets) -> tuple[list[Missing], list[str]]:
    """Models that could not be priced (never counted as 0 bytes with a confident verdict) and
    stages without a working-memory figure."""
    missing: list[Missing] = []
    seen = set()
    for stage in workload.stages:
        for ref in stage.models:
            key = ref_key(ref)
            info = infos.get(key)
            if info is None or key in seen or (ref.role == "lora" and ref.strength == 0):
                continue
            if info.source in ("missing", "error", "unset") or (info.kind == UNKNOWN and not info.weights_bytes):
                seen.add(key)
                problem = ("not found in the model folders and not in the catalogue" if info.source == "missing"
                           else "could not be read" if info.source == "error"
                           else "the loader names no file this estimate can see" if info.source == "unset"
                           else "architecture not recognised")
                missing.append(Missing(ref.name, ref.folder, ref.role, problem))
    # a stage without a figure (its working memory or its model unknown): each kind's own check (stages.KINDS)
    incomplete = [f"{sb.title}: {why}" for sb in stage_budgets if sb.on_card and (why := gap(sb))]
    # a node not understood that touches models, latents or images: what it runs is not here (never a silent 0)
    incomplete += [f"node {nid} ({t}): not understood; a model it loads or memory it uses is not in this estimate"
                   for nid, t in workload.unknown_nodes[:20]]
    if len(workload.unknown_nodes) > 20:
        incomplete.append(f"{len(workload.unknown_nodes) - 20} more nodes not understood")
    return missing, incomplete


_TWIN_FIELDS = tuple(f.name for f in fields(Stage) if f.name != "node_id")


def _text_twin_key(stage: Stage) -> tuple | None:
    """A text-encode stage's every field but its node id (prompts of one length on the same encoders build the same
    budget), or None for another kind or a stage with an unhashable field."""
    if stage.kind != TEXT_ENCODE:
        return None
    try:
        key = tuple(getattr(stage, f) for f in _TWIN_FIELDS)
        hash(key)
    except TypeError:
        return None
    return key


def _plural_prompts(title: str, more: int = 1) -> str:
    """The title of a text-encode entry with ``more`` prompts merged into it."""
    if title.endswith(" prompts)"):
        n = int(title.rsplit("(", 1)[1].split()[0]) + more
        return title.rsplit("(", 1)[0] + f"({n} prompts)"
    return f"{title} ({1 + more} prompts)"
