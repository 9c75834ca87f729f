"""What every stage builder shares: the budget's line items, a stage's budget, the weights of the models
a stage loads (at ComfyUI's cast rules, on this card or placed elsewhere) and the CUDA context."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from ..machine.device import Device
from ..model_info import ModelInfo
from ..machine.distorch import read_allocation
from ..machine.placement import MAIN, MAIN_REASON, normalize
from ..machine.resolve import loaded_weights, ref_key
from ..units import fmt_gib
from ..workload import LatentShape, ModelRef, Stage


NOT_ESTIMATED = "working memory not estimated: "  # the note a stage without a working-memory figure carries


@dataclass(frozen=True)
class Item:
    label: str
    bytes: int
    category: str  # "weights" | "working" | "overhead"
    assumption: str = ""
    model: ModelInfo | None = None  # for weights: the model (or checkpoint part) they belong to
    donor: bool = False  # DisTorch2 donor share: weights of a model computed on another device, kept on this one

    def to_dict(self) -> dict:
        return {"label": self.label, "bytes": self.bytes, "category": self.category, "assumption": self.assumption}


@dataclass(frozen=True)
class StageBudget:
    stage: Stage
    title: str
    items: tuple[Item, ...]
    peak_bytes: int  # everything on the GPU at this stage's peak
    min_peak_bytes: int  # with cond/uncond run one after another (ComfyUI's fallback when short)
    notes: tuple[str, ...] = ()
    batch_factor: int = 1  # 2 when cond+uncond are batched
    # why its working memory has no figure ("" = priced): the reason, as data; the note saying it is derived
    unpriced: str = ""
    # Where the stage runs and why (placement.stage_device; budget.assess fills them). A stage a loader put on
    # another device (on_card False) keeps only this card's CUDA context here; device_peak_bytes is its peak
    # priced on its own device (None on the CPU).
    device: str = MAIN
    device_reason: str = MAIN_REASON
    on_card: bool = True
    device_peak_bytes: int | None = None

    @property
    def weights_bytes(self) -> int:
        return sum(i.bytes for i in self.items if i.category == "weights")

    @property
    def working_bytes(self) -> int:
        return sum(i.bytes for i in self.items if i.category == "working")

    @property
    def overhead_bytes(self) -> int:
        return sum(i.bytes for i in self.items if i.category == "overhead")

    def to_dict(self) -> dict:
        return {
            "kind": self.stage.kind, "node_id": self.stage.node_id, "node_type": self.stage.node_type,
            "title": self.title, "peak_bytes": self.peak_bytes, "min_peak_bytes": self.min_peak_bytes,
            "weights_bytes": self.weights_bytes, "working_bytes": self.working_bytes,
            "overhead_bytes": self.overhead_bytes, "items": [i.to_dict() for i in self.items],
            "notes": list(self.notes), "unpriced": self.unpriced or None,
        }


def overhead_items(device: Device) -> list[Item]:
    return [Item("CUDA context + library workspaces", device.context_bytes, "overhead",
                 "a few hundred MB before any model loads (FACTS.md)")]


def weights_items(stage: Stage, device: Device, info_for, roles: Iterable[str]) -> tuple[list[Item], list[ModelInfo], list[str]]:
    items, infos, notes = [], [], []
    seen = set()
    for ref in stage.models:
        if ref.role not in roles and not (ref.role == "checkpoint" and ref.part in _roles_to_parts(roles)):
            continue
        key = (ref_key(ref), ref.part, ref.weight_dtype)
        if key in seen:
            continue
        seen.add(key)
        info = info_for(ref)
        if ref.role == "lora" and ref.strength == 0:
            notes.append(f"LoRA {ref.name} has strength 0: ComfyUI skips it")
            continue
        if ref.role == "text_encoder" and (ref.device == "cpu" or device.lowvram or device.te_cpu_reason):
            why = ("device=cpu on the loader" if ref.device == "cpu" else
                   "--lowvram keeps text encoders on the CPU" if device.lowvram else device.te_cpu_reason)
            items.append(Item(f"{info.label} [{ref.name}]", 0, "weights", f"runs on the CPU ({why})", info))
            infos.append(info)
            continue
        here = getattr(device, "ordinal", MAIN)
        elsewhere = _placed_elsewhere(ref, here)
        if elsewhere and ref.allocation:  # DisTorch2 expert allocation: this card's share of a model computed elsewhere
            nbytes, assumption = loaded_weights(info, ref, device)
            shares = read_allocation(ref.allocation, nbytes,
                                     lambda d: device.total_bytes if normalize(d) == here else None) or {}
            mine = int(sum(v for d, v in shares.items() if normalize(d) == here))
            if mine:
                items.append(Item(f"{info.label} [{ref.name}] (DisTorch2 allocation share)", mine, "weights",
                                  f"{fmt_gib(mine)} of its weights kept here for {normalize(ref.device)} "
                                  f"('{ref.allocation}')", info, donor=True))
                infos.append(info)
                continue
        if elsewhere and ref.offload_bytes and normalize(ref.donor_device) == here:
            # DisTorch2 with a GPU as donor_device: virtual_vram_gb of the weights live on that card while the
            # model is loaded (distorch_2.py:704-782, calculate_safetensor_vvram_allocation)
            nbytes, assumption = loaded_weights(info, ref, device)
            kept = min(nbytes, ref.offload_bytes)
            items.append(Item(f"{info.label} [{ref.name}] (DisTorch2 donor share)", kept, "weights",
                              f"{fmt_gib(kept)} of its weights kept here for {normalize(ref.device)} "
                              f"({ref.placed_by})", info, donor=True))
            infos.append(info)
            continue
        if elsewhere:
            items.append(Item(f"{info.label} [{ref.name}]", 0, "weights", elsewhere, info))
            infos.append(info)
            continue
        nbytes, assumption = loaded_weights(info, ref, device)
        if ref.allocation and nbytes:
            shares = read_allocation(ref.allocation, nbytes,
                                     lambda d: device.total_bytes if normalize(d) == here else None)
            if shares is not None:
                mine = int(sum(v for d, v in shares.items() if normalize(d) == here))
                others = ", ".join(d for d in shares if normalize(d) != here) or "no other device"
                assumption += (f"; DisTorch2 expert allocation '{ref.allocation}': {fmt_gib(mine)} of it on this card, "
                               f"the rest on {others}")
                nbytes = min(nbytes, mine)
            else:
                assumption += f"; DisTorch2 expert allocation '{ref.allocation}' not read: all of it counted here"
        elif ref.offload_bytes and nbytes:
            kept = min(nbytes, ref.offload_bytes)
            nbytes -= kept
            donor = normalize(ref.donor_device)
            assumption += (f"; DisTorch virtual VRAM keeps {fmt_gib(kept)} of it in RAM (streamed in)"
                           if donor in (None, "cpu") else
                           f"; DisTorch2 virtual VRAM keeps {fmt_gib(kept)} of it on {donor} (fetched from there)")
        items.append(Item(f"{info.label} [{ref.name}]", nbytes, "weights", assumption, info))
        infos.append(info)
    return items, infos, notes


def _placed_elsewhere(ref: ModelRef, here: str = MAIN) -> str | None:
    """A loader that puts the model on the CPU or on another GPU (ComfyUI-MultiGPU `device`):
    it takes nothing on this card. The card budgeted is `here` (cuda:0 unless several cards are given)."""
    dev = normalize(ref.device)
    if ref.role != "text_encoder" and dev == "cpu":
        return "placed on the CPU by its loader (device = cpu): not on this GPU"
    if dev is not None and dev != "cpu" and dev != here:
        return f"placed on {dev} by its loader: not on this GPU ({here})"
    if dev is None and here != MAIN:
        return f"on {MAIN}, ComfyUI's main device: not on this GPU ({here})"
    return None


def _roles_to_parts(roles: Iterable[str]) -> set[str]:
    mapping = {"diffusion": "model", "text_encoder": "clip", "vae": "vae", "clip_vision": "clip_vision"}
    return {mapping[r] for r in roles if r in mapping}


def unpriced(notes: list[str], why: str, prefix: str = NOT_ESTIMATED) -> str:
    """Record that a stage's working memory has no figure, and why: the note users read, and the reason as data
    (StageBudget.unpriced, which the gap check reads)."""
    notes.append(f"{prefix}{why}")
    return f"{prefix}{why}"


def finish(stage: Stage, title: str, items: list[Item], notes: list[str], extra_min_working: int | None = None,
           batch_factor: int = 1, unpriced: str = "") -> StageBudget:
    peak = sum(i.bytes for i in items)
    min_peak = peak
    if extra_min_working is not None:
        working = sum(i.bytes for i in items if i.category == "working")
        min_peak = peak - working + extra_min_working
    return StageBudget(stage, title, tuple(items), peak, min_peak, tuple(notes), batch_factor, unpriced=unpriced)


def off_card(sb: StageBudget, where: str, why: str, device_peak: int | None) -> StageBudget:
    """The stage as this card sees it when a loader runs it on another device (`where`): its weights and
    working memory are there, not here (the CUDA context stays); said on each item."""
    text = "no VRAM of any card" if where == "cpu" else "priced for that device"
    items = tuple(replace(i, bytes=0, assumption=f"{i.assumption}; runs on {where} ({why}): {text}, not on this card"
                          if i.assumption else f"runs on {where} ({why}): {text}, not on this card")
                  if i.bytes and i.category != "overhead" and not i.donor else i for i in sb.items)
    peak = sum(i.bytes for i in items)
    return replace(sb, items=items, peak_bytes=peak, min_peak_bytes=peak, device=where, device_reason=why,
                   on_card=False, device_peak_bytes=device_peak)
