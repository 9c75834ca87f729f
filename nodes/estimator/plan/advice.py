"""The remedy ladder of FACTS.md, each remedy concrete for this workflow, with its saving in bytes.

Order (cheapest in quality and speed first, FACTS.md "Image and video" + DEVELOPERS.md):
1. lower-precision weights (FP8, then GGUF Q8 / Q5 / Q4),
2. VAE Decode -> VAE Decode (Auto Tiled),
3. smaller batch,
4. lower resolution (upscale afterwards) / for video fewer frames or lower resolution,
5. free memory held by something else (other processes, loaded models),
6. fix fragmentation (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True),
7. offload to RAM (--lowvram, --reserve-vram, Wan block swap): several times slower,
8. a bigger card.
Savings are computed by re-evaluating the affected stage with the change, so "fixes" means the new
overall peak fits the card.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..physics import memory
from .budget import assess
from .capacity import scaled
from ..machine.gpus import cheapest_card_that_fits
from ..machine.runtime import OWN_SHAPES
from ..model_info import DIFFUSION, TEXT_ENCODER
from ..stages.sample import model_code_release
from ..stages.vae import vae_working, working_ratio
from ..units import GiB, fmt_gib
from ..workload import SAMPLE, VAE_DECODE, LatentShape, with_frames, with_pixels
from ..serial import Remedy as RemedyBase

# Bits per parameter of common GGUF quants (ggml block sizes: Q8_0 34 B / 32, Q5_K 176 B / 256,
# Q4_K 144 B / 256, Q6_K 210 B / 256; "_S" mixes keep a few tensors wider, ~+0.1 bit).
GGUF_BITS = {"Q8_0": 8.5, "Q6_K": 6.56, "Q5_K_S": 5.6, "Q4_K_S": 4.6}
GGUF_COST = {
    "Q8_0": "quality: practically lossless",
    "Q6_K": "quality: slight loss",
    "Q5_K_S": "quality: slight loss",
    "Q4_K_S": "quality: fine detail starts to suffer",
}
FRAGMENTATION_THRESHOLD = 2 * GiB
SHAPE_KINDS = ("batch", "frames", "resolution")  # remedies that scale the activations  # "several GiB" reserved-but-unallocated = fragmentation (FACTS.md)


@dataclass(frozen=True)
class Remedy(RemedyBase):
    rank: int  # position on the FACTS ladder (1 = try first)
    kind: str  # precision | vae_tiling | batch | resolution | frames | free_memory | fragmentation | offload | bigger_card
    title: str  # "T5-XXL fp16 -> fp8: -4.56 GiB"
    detail: str
    saving_bytes: int
    cost: str  # what it costs: quality / speed / money / nothing
    new_peak_bytes: int | None = None
    fixes: bool = False  # the workflow fits after this change alone
    sub_rank: int = 0  # order inside a rung: fp8 before GGUF Q8 before Q4 (least quality lost first)
    runs: bool | None = None  # an out-of-memory workflow runs (perhaps streaming) after this change alone
    cuts: tuple[tuple[int, int], ...] = ()  # (stage index, bytes saved there): what the plan adds up per stage
    min_cuts: tuple[tuple[int, int], ...] | None = None  # the same with cond/uncond in turn (None: = cuts)

    _json_skip = ("sub_rank", "cuts", "min_cuts")


# worse first: an outcome the native-fp8 alternative must beat (card verdict, then the host's)
_VERDICT_ORDER = ("oom", "runs_slower", "tight", "fits")
_HOST_ORDER = ("oom", "swapping", "thrashing", "fits", "assumed")


def _native_fp8_instead_of_gguf(budget, workload, resolver) -> list[Remedy]:
    """GGUF diffusion models under Dynamic VRAM: ComfyUI-GGUF's GGUFModelPatcher is a plain ModelPatcher
    (ComfyUI-GGUF nodes.py:34, :175, :238), so ComfyUI loads it partially and streams it the classic way and
    keeps it in process RAM (runtime._dynamic, host_memory), while a native fp8 file of the same model goes
    through ModelPatcherDynamic (weights stream on demand, the file's pages are mapped). The whole workflow is
    re-assessed with the model as an fp8 file (1 byte a weight); the remedy is offered only when that run
    is better: a better card or RAM outcome, or the same outcome at least 10 % faster."""
    if budget.device.memory_mode != "dynamic" or budget.verdict == "unknown":
        return []
    out: list[Remedy] = []
    for key, info in budget.models.items():
        if info.kind != DIFFUSION or not info.params or not (info.quantization or "").startswith("gguf"):
            continue
        fp8 = replace(info, quantization="fp8_e4m3fn", dtype="F8_E4M3", weights_bytes=int(info.params),
                      largest_tensor_bytes=0, source=info.source)
        new = assess(workload, budget.device, resolver, models={**budget.models, key: fp8})
        if new.verdict == "unknown":
            continue
        card_now, card_new = _VERDICT_ORDER.index(budget.verdict), _VERDICT_ORDER.index(new.verdict)
        host_now = _HOST_ORDER.index(budget.host.outcome) if budget.host else len(_HOST_ORDER) - 1
        host_new = _HOST_ORDER.index(new.host.outcome) if new.host else len(_HOST_ORDER) - 1
        better = (card_new > card_now and host_new >= host_now) or (host_new > host_now and card_new >= card_now) or (
            card_new == card_now and host_new == host_now and new.slowdown <= 0.9 * budget.slowdown)
        if not better:
            continue
        what = [f"card: {budget.verdict.replace('_', ' ')} → {new.verdict.replace('_', ' ')}"] if card_new != card_now else []
        if new.slowdown != budget.slowdown:
            what.append(f"sampling ×{budget.slowdown:.2f} → ×{new.slowdown:.2f}")
        if budget.host and new.host and budget.host.outcome != new.host.outcome:
            what.append(f"RAM: {budget.host.outcome} → {new.host.outcome}")
        name = _model_name(info)
        out.append(Remedy(
            1, "precision", f"{name} GGUF → native fp8 file ({'; '.join(what)})",
            f"under Dynamic VRAM a GGUF model takes ComfyUI's legacy path (partial load, weights in process RAM); "
            f"a native fp8 file of this model ({fmt_gib(int(info.params))}) streams on demand through Dynamic VRAM "
            "and its pages are mapped from the file: load it with UNETLoader (weight_dtype default)",
            budget.peak_bytes - new.peak_bytes, "quality: slight loss (fp8 is close to Q8)", new.peak_bytes,
            fixes=new.verdict in ("fits", "tight"), runs=new.verdict != "oom"))
    return out


def _peak_with(budget, stage_index: int, new_stage_peak: int) -> int:
    peaks = [s.peak_bytes for s in budget.stages]
    peaks[stage_index] = new_stage_peak
    return max(peaks) if peaks else 0


def remedies_for(budget, workload, resolver=None) -> list[Remedy]:
    if not budget.stages or budget.verdict == "fits" or (budget.verdict == "unknown" and budget.outcome == "fits"
                                                         and not budget.tight):
        return []  # nothing to fix: listing trade-offs for a workflow that fits is noise
    cap = budget.device.capacity_bytes
    target = cap  # a remedy "fixes" when the new peak fits the card
    out: list[Remedy] = []

    def add(rank, kind, title, detail, saving, cost, stage_index=None, new_peak=None, sub_rank=0, new_min_peak=None,
            cuts=None, min_cuts=None):
        if new_peak is None and stage_index is not None:
            new_peak = _peak_with(budget, stage_index, budget.stages[stage_index].peak_bytes - saving)
        if cuts is None:
            cuts = {stage_index: saving} if stage_index is not None else {}
        # "fixes" as the verdict counts fitting: at the batched peak, or with cond/uncond in turn
        fixes = new_peak is not None and (new_peak <= target or (new_min_peak is not None and new_min_peak <= target))
        pairs = lambda d: tuple(sorted((int(i), int(v)) for i, v in d.items() if v > 0))  # noqa: E731
        out.append(Remedy(rank, kind, title, detail, int(saving), cost, new_peak, fixes, sub_rank,
                          cuts=pairs(cuts), min_cuts=None if min_cuts is None else pairs(min_cuts)))
        return fixes

    over = [i for i, s in enumerate(budget.stages) if s.peak_bytes > cap * 0.9] or [budget.peak_stage]

    # 1. precision: per model loaded at 16 bit in a stage near or over the card. The same model in
    # several stages (Wan 2.2's two experts are two files of one architecture) changes together.
    groups: dict[tuple, list[tuple[int, object]]] = {}
    for i in over:
        if budget.stages[i].stage.pack_priced:  # the pack's own loader: ComfyUI's weight_dtype / GGUF do not apply
            continue
        for item in budget.stages[i].items:
            info = item.model
            if item.category != "weights" or not item.bytes or info is None:
                continue
            if info.arch.get("fixed_precision"):  # its loader picks the dtype itself (no weight_dtype, no fp8 file)
                continue
            if info.kind in (DIFFUSION, TEXT_ENCODER) and info.params and item.bytes >= info.params * 1.9:
                groups.setdefault((info.kind, info.family, item.bytes), []).append((i, item))
    for (kind, _family, loaded), members in groups.items():
        info = members[0][1].model
        stage_ids = sorted({i for i, _ in members})
        name = _model_name(info) + (" (both experts)" if len(members) > 1 and kind == DIFFUSION else "")
        options = [("fp8", info.params, "quality: slight loss",
                    ("set the UNETLoader weight_dtype to fp8_e4m3fn or use an fp8 file" if kind == DIFFUSION
                     else "use the fp8 file (e.g. t5xxl_fp8_e4m3fn_scaled / umt5_xxl_fp8_e4m3fn_scaled)")
                    + "; FP8 is native on Ada/Hopper/Blackwell"
                    + ("" if budget.device.fp8_compute else
                       " (this GPU has no fp8 compute: choose weight_dtype fp8 explicitly, or ComfyUI upcasts the file)"))]
        if kind == DIFFUSION:
            for quant, bits in GGUF_BITS.items():
                gguf_bytes = int(info.params * bits / 8) + (info.largest_tensor_bytes or 0)
                options.append((f"GGUF {quant}", gguf_bytes, GGUF_COST[quant],
                                "ComfyUI-GGUF UnetLoaderGGUF; it dequantizes one layer at a time"))
        fixed = False
        for sub, (label, new_bytes, cost, how) in enumerate(options):
            saving = loaded - new_bytes
            if saving <= 0:
                continue
            cut = {n: saving * sum(1 for j, _ in members if j == n) for n in stage_ids}
            new_peak = max(st.peak_bytes - cut.get(n, 0) for n, st in enumerate(budget.stages))
            new_min = max(st.min_peak_bytes - cut.get(n, 0) for n, st in enumerate(budget.stages))
            arrow = "16-bit → " + label
            if add(1, "precision", f"{name} {arrow}: {fmt_gib(-saving, signed=True)}", how, saving, cost,
                   new_peak=new_peak, sub_rank=sub, new_min_peak=new_min, cuts=cut):
                fixed = True
                break  # the least lossy option that fixes it; stronger quants only cost more quality
        if not fixed:  # none fixes it alone: keep fp8, the lossless GGUF and the smallest one
            keep_last = f"{name} 16-bit → GGUF Q4_K_S"
            out[:] = [r for r in out if not (r.kind == "precision" and r.title.startswith(f"{name} 16-bit → GGUF Q")
                                               and not r.title.startswith((f"{name} 16-bit → GGUF Q8", keep_last)))]

    # 1b. under Dynamic VRAM a GGUF model takes the legacy path (partial load, process RAM): a native fp8 file
    # of the same model streams through Dynamic VRAM instead. Said only where the re-evaluation shows it pays.
    if workload is not None:
        for remedy in _native_fp8_instead_of_gguf(budget, workload, resolver):
            add(1, "precision", remedy.title, remedy.detail, remedy.saving_bytes, remedy.cost,
                new_peak=remedy.new_peak_bytes, sub_rank=-1)
            out[-1] = replace(out[-1], fixes=remedy.fixes, runs=remedy.runs)

    # 2. VAE tiling: a decode node the user can swap for ours (not a decode a pack's node runs inside: Sonic's sampler)
    from ..graph.packs import REGISTRY  # noqa: PLC0415
    for i, sb in enumerate(budget.stages):
        if sb.stage.kind != VAE_DECODE or sb.stage.tiled or sb.stage.auto_tiled \
                or sb.stage.node_type not in REGISTRY.vae_decoders | REGISTRY.audio_decoders:
            continue
        if sb.peak_bytes <= cap * 0.9 and i not in over:
            continue
        latent = sb.stage.latent
        vae = next((it.model for it in sb.items if it.model is not None and it.model.kind == "vae"), None)
        if latent is None or vae is None:
            continue
        free_for_work = cap - (sb.peak_bytes - sb.working_bytes)
        ratio = working_ratio(vae.family, budget.device, sb.stage)[0]  # as stages/vae.py prices it
        tiled_bytes, _, _ = vae_working(vae.family, latent, decode=True, auto_tiled=True,
                                        free_bytes=int(max(free_for_work, 0) / ratio))
        tiled_bytes = int(ratio * tiled_bytes)
        saving = sb.working_bytes - tiled_bytes
        if saving > 0:
            add(2, "vae_tiling", f"VAE Decode → VAE Decode (Auto Tiled): {fmt_gib(-saving, signed=True)}",
                "decodes in one go when it fits, otherwise in the largest tiles that fit (temporal tiles for video)",
                saving, "speed: a few seconds", i)

    # 3-4. batch, resolution, frames: re-evaluate the working memory of every sampling stage that
    # works on this latent (Wan 2.2's two experts shrink together)
    done: set[int] = set()
    for i in over:
        sb = budget.stages[i]
        if sb.stage.kind != SAMPLE or sb.stage.latent is None or i in done or sb.stage.manager in OWN_SHAPES \
                or sb.stage.pack_priced:
            continue
        latent = sb.stage.latent
        group = [j for j, other in enumerate(budget.stages)
                 if other.stage.kind == SAMPLE and other.stage.latent == latent and _diffusion_model(other) is not None]
        done.update(group)
        if not group:  # no identified diffusion model on this latent: nothing to re-evaluate
            continue

        def working(j: int, lat: LatentShape, batch: int) -> int:
            other = budget.stages[j]
            model = _diffusion_model(other)
            return memory.diffusion_working(model.family, model.arch, lat, batch, other.stage.text_tokens,
                                            release=model_code_release(other.stage, budget.device)).bytes

        def runs_with(lat: LatentShape, batch: int) -> bool | None:
            """For an out-of-memory workflow: does ComfyUI run it (even streaming) with this shape?"""
            if budget.outcome != "oom" or workload is None:
                return None
            new = assess(scaled(workload, latent, replace(lat, batch=batch)), budget.device, resolver,
                         models=budget.models)
            return new.outcome != "oom"

        def try_shape(rank: int, kind: str, title: str, detail: str, cost: str, lat: LatentShape, batch: int,
                      sub_rank: int = 0) -> bool:
            f = {j: budget.stages[j].batch_factor for j in group}
            savings = {j: working(j, latent, latent.batch * f[j]) - working(j, lat, batch * f[j]) for j in group}
            min_savings = {j: working(j, latent, latent.batch) - working(j, lat, batch) for j in group}
            saving = max(savings.values())
            if saving <= 0:
                return False
            peaks = [st.peak_bytes - savings.get(n, 0) for n, st in enumerate(budget.stages)]
            mins = [st.min_peak_bytes - min_savings.get(n, 0) for n, st in enumerate(budget.stages)]
            fixed = add(rank, kind, f"{title}: {fmt_gib(-saving, signed=True)}", detail, saving, cost,
                        new_peak=max(peaks), sub_rank=sub_rank, new_min_peak=max(mins), cuts=savings,
                        min_cuts=min_savings)
            runs = runs_with(lat, batch)
            if runs is not None:
                out[-1] = replace(out[-1], runs=runs)
            return fixed or bool(runs and budget.outcome == "oom" and kind in ("frames", "resolution"))

        if latent.batch > 1:
            try_shape(3, "batch", f"batch {latent.batch} → 1",
                      f"{latent.batch} images one after another need about 1/{latent.batch} of the activation memory",
                      "speed: runs in turn (same total time, roughly)", latent, 1)
        if latent.is_video:
            for frames in _frame_steps(latent):
                if try_shape(4, "frames", f"{latent.pixel_frames} → {frames} frames",
                             "fewer frames per clip (extend with a second pass or last-frame continuation)",
                             "content: shorter clip", with_frames(latent, frames), latent.batch):
                    break
            for w, h in _video_resolution_steps(latent):
                if try_shape(4, "resolution", f"{latent.pixel_width}×{latent.pixel_height} → {w}×{h}",
                             "render lower, upscale afterwards", "quality: less detail (upscale afterwards)",
                             with_pixels(latent, w, h), latent.batch, sub_rank=1):
                    break
        else:
            for scale in (0.75, 0.5):
                w = _round_to(latent.pixel_width * scale, 64)
                h = _round_to(latent.pixel_height * scale, 64)
                if w < 256 or h < 256:
                    break
                if try_shape(4, "resolution", f"{latent.pixel_width}×{latent.pixel_height} → {w}×{h}",
                             "activation memory grows with the pixel count; generate lower and upscale afterwards",
                             "quality: less detail (upscale afterwards)", with_pixels(latent, w, h), latent.batch):
                    break

    dev = budget.device
    # 5. memory held by something else
    if dev.other_processes_bytes > 256 * 1024**2:
        add(5, "free_memory", f"Close other programs on the GPU: {fmt_gib(-dev.other_processes_bytes, signed=True)}",
            "another process holds memory on this card (a stale ComfyUI, a Jupyter kernel, vLLM takes 90 % at start)",
            dev.other_processes_bytes, "nothing", new_peak=budget.peak_bytes)
        # the card grows back to its full size once the other process is gone
        out[-1] = replace(out[-1], fixes=budget.peak_bytes <= dev.total_bytes)
    # 6. fragmentation
    if dev.reserved_unallocated_bytes >= FRAGMENTATION_THRESHOLD:
        add(6, "fragmentation", "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            f"{fmt_gib(dev.reserved_unallocated_bytes)} is reserved by PyTorch but unallocated (fragmentation); set it "
            "before Python starts (newer PyTorch also reads PYTORCH_ALLOC_CONF; older: max_split_size_mb:128). It "
            "creates no memory; it lets you use what is free", dev.reserved_unallocated_bytes, "nothing",
            new_peak=budget.peak_bytes)
    # 7. offload: ComfyUI already streams what does not fit; an OOM with offload available means
    # its own activation estimate left too little room, and --reserve-vram makes it keep more free. Not for a model a
    # node pack places itself (Stage.manager: WanVideoWrapper, a diffusers pipeline...): ComfyUI never loads it
    oom_sample = next((r for r, sb in zip(budget.runs, budget.stages)
                       if r.outcome == "oom" and sb.stage.kind == SAMPLE and r.minimum_bytes <= cap
                       and sb.stage.manager is None), None)
    if oom_sample is not None:
        reserve = math.ceil((oom_sample.shortfall_bytes + dev.reserve_bytes) / GiB * 10) / 10 + 0.1
        add(7, "offload", f"Launch ComfyUI with --reserve-vram {reserve:.1f}: runs, streaming more weights",
            f"ComfyUI's activation estimate is {fmt_gib(oom_sample.shortfall_bytes)} short for this step; reserving "
            f"{reserve:.1f} GiB makes it keep that much free and stream the rest of the weights from RAM",
            oom_sample.shortfall_bytes, "speed: slower (weights stream from RAM)", new_peak=cap)
    # 8. bigger card
    card = budget.cheapest_card
    if budget.verdict != "fits" and card is not None and card.total_bytes > dev.total_bytes:
        price = f" (€{card.price_eur_h:.2f}/h)" if card.price_eur_h else ""
        add(8, "bigger_card", f"Take {_article(card.name)} {card.name}{price}: fits as is",
            f"{card.name} has {fmt_gib(card.total_bytes)}; the workflow peaks at {fmt_gib(budget.peak_bytes)}",
            0, "money", new_peak=budget.peak_bytes)
        out[-1] = replace(out[-1], fixes=True)

    out.sort(key=lambda r: (r.rank, r.sub_rank, r.saving_bytes if r.kind in ("frames", "resolution") else -r.saving_bytes))
    if budget.verdict == "unknown" and budget.outcome == "unknown":
        # a stage has no figure, so whether a remedy makes the workflow fit cannot be judged: the saving stays,
        # the claim goes
        out = [replace(r, fixes=False, runs=None) for r in out]
    return _dedupe(out)


@dataclass(frozen=True)
class Plan:
    """The FACTS ladder applied in order until the workflow fits: one step per rung."""

    steps: tuple[Remedy, ...]
    new_peak_bytes: int
    fits: bool

    def to_dict(self) -> dict:
        return {"steps": [r.title for r in self.steps], "new_peak_bytes": self.new_peak_bytes, "fits": self.fits}


def recommended_plan(budget) -> Plan | None:
    """Cheapest combination: walk the rungs in order, taking on each rung the least costly option
    that closes the remaining gap (or, if none does, the least costly one), until it fits.

    Savings of different rungs add up: weights (precision) and activations (batch, frames,
    resolution) are separate terms of the same stage's peak."""
    if budget.outcome not in ("oom", "runs_slower") or not budget.remedies:
        return None
    cap = budget.device.capacity_bytes
    peaks = [st.peak_bytes for st in budget.stages]
    mins = [st.min_peak_bytes for st in budget.stages]

    # the share of each stage's activations left after the shape changes taken so far
    left = [1.0 for _ in budget.stages]

    def cuts_now(r: Remedy, single: bool = False) -> dict[int, float]:
        """A remedy's savings as they land now: shape changes (batch, frames, resolution) each scale
        the activations, so a second one saves its share of what the first left, not of the
        original (two savings of 60 % leave 16 %, not -20 %)."""
        cuts = r.min_cuts if (single and r.min_cuts is not None) else r.cuts
        if r.kind in SHAPE_KINDS:
            return {i: c * left[i] for i, c in cuts}
        return dict(cuts)

    def applied(r: Remedy, values: list[int], single: bool = False) -> list[int]:
        """Stage peaks after a remedy: its savings land on the stages they were computed for."""
        cut = cuts_now(r, single)
        return [v - int(cut.get(i, 0)) for i, v in enumerate(values)]

    def fits(values_peak, values_min) -> bool:
        return max(values_peak) <= cap or max(values_min) <= cap  # cond/uncond in turn where ComfyUI would

    steps: list[Remedy] = []
    groups: list[tuple] = []
    for r in budget.remedies:
        if _group(r) not in groups and r.kind not in ("bigger_card", "offload", "free_memory", "fragmentation"):
            groups.append(_group(r))
    used: set[tuple] = set()
    progress = True
    while progress and not fits(peaks, mins):  # a rung skipped while another stage was the peak gets a new look
        progress = False
        for group in groups:
            if fits(peaks, mins):
                break
            if group in used:
                continue
            pick = _pick(budget, group, peaks, mins, applied, fits)
            if pick is None:
                continue
            used.add(group)
            steps.append(pick)
            peaks, mins = applied(pick, peaks), applied(pick, mins, single=True)
            if pick.kind in SHAPE_KINDS:
                for i, c in pick.cuts:
                    work = max(budget.stages[i].working_bytes, 1)
                    left[i] *= max(0.0, 1 - c / work)
            progress = True
    if not steps:
        return None
    new_peak = min(max(peaks), max(mins)) if max(mins) <= cap else max(peaks)
    return Plan(tuple(sorted(steps, key=lambda r: (r.rank, r.sub_rank))), new_peak, fits(peaks, mins))


def _group(r: Remedy) -> tuple:
    """One choice per rung, and per model on the precision rung (the UNet and a text encoder are
    separate choices)."""
    return (r.rank, r.kind, r.title.split(" 16-bit")[0] if r.kind == "precision" else "")


def _pick(budget, group, peaks, mins, applied, fits):
    """The option of one rung the plan takes now, or None when none lowers the peak."""
    # the rung's own order (least change first), whatever order the list shows them in (_dedupe puts each
    # group's face first)
    options = sorted((r for r in budget.remedies if _group(r) == group and r.cuts),
                     key=lambda r: (r.sub_rank, r.saving_bytes if r.kind in SHAPE_KINDS else -r.saving_bytes))
    if not options:
        return None
    closing = [r for r in options if fits(applied(r, peaks), applied(r, mins, True))]
    # the least costly option that closes the gap; else the one that closes most of it, except
    # for precision, where the least lossy step is taken and the next rungs do the rest
    if closing:
        pick = closing[0]
    elif group[1] == "precision":
        pick = options[0]
    else:
        pick = min(options, key=lambda r: max(applied(r, peaks)))
    if max(applied(pick, peaks)) >= max(peaks) and max(applied(pick, mins, True)) >= max(mins):
        return None  # it saves on a stage that is not the one short of memory
    return pick


def _dedupe(remedies: list[Remedy]) -> list[Remedy]:
    """One entry per title, then distinct remedies first (issue 31): the first of each group (a kind, and for
    precision the model it changes) in ladder order, the group's other steps after them, so the top three are
    three different things to try, not one remedy three times."""
    seen, unique = set(), []
    for r in remedies:
        if r.title in seen:
            continue
        seen.add(r.title)
        unique.append(r)
    def group(r):
        return r.kind, r.title.split(" 16-bit → ")[0] if r.kind == "precision" else ""

    members: dict = {}
    for r in unique:
        members.setdefault(group(r), []).append(r)
    # a group's face: the least change that fixes it, else the step that saves most (where the group ends up)
    # (a precision group keeps its least lossy step: fp8 before a 4-bit GGUF)
    face = {g: next((r for r in rs if r.fixes), rs[0] if g[0] == "precision" else max(rs, key=lambda r: r.saving_bytes))
            for g, rs in members.items()}
    firsts = [r for r in unique if face[group(r)] is r]
    return firsts + [r for r in unique if face[group(r)] is not r]


def _article(name: str) -> str:
    """'an' before a name said with a vowel sound ("an RTX 5090", "an L40S", "an H100", "an A100"), else 'a'."""
    name = name.strip()
    first = name[:1].upper()
    spelled = len(name) > 1 and not name[1:2].islower()  # "RTX", "L40S", "H100": said letter by letter
    return "an" if (spelled and first in "AEFHILMNORSX") or (not spelled and first in "AEIOU") else "a"


def _diffusion_model(stage_budget):
    """The stage's diffusion model when its working memory was priced (an unrecognised architecture
    has none to re-evaluate at other shapes)."""
    if not any(it.category == "working" for it in stage_budget.items):
        return None
    return next((it.model for it in stage_budget.items
                 if it.category == "weights" and it.model is not None and it.model.kind == DIFFUSION), None)


def _model_name(info) -> str:
    """'Flux.1 dev', 'Wan 2.2 A14B expert': the label without size or file-specific brackets."""
    return info.label.split(" (")[0].split(" [")[0]


def _round_to(value: float, multiple: int) -> int:
    return max(multiple, int(round(value / multiple)) * multiple)


def _frame_steps(latent: LatentShape):
    current = latent.pixel_frames or ((latent.frames - 1) * 4 + 1)
    for frames in (81, 65, 49, 33, 17):
        if frames < current:
            yield frames


def _video_resolution_steps(latent: LatentShape):
    w, h = latent.pixel_width, latent.pixel_height
    landscape = w >= h
    for short in (720, 480):
        if min(w, h) > short:
            long_side = _round_to(max(w, h) * short / min(w, h), 16)
            yield (long_side, short) if landscape else (short, long_side)


def cheapest(budget):
    if budget.outcome == "fits":  # never a rental for a workflow that fits the user's own card
        return None
    return cheapest_card_that_fits(budget.peak_bytes)
