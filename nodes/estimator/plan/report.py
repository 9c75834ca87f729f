"""A Budget as plain text for people (node display, console, command line)."""
from __future__ import annotations

from ..machine import placement
from .evidence import version_tuple
from ..units import GiB, fmt_gib, user_words
from ..machine.runtime import NO_BLOCK_SWAP, speed_words
from .budget import at_least

VERDICT_TEXT = {"fits": "FITS", "tight": "FITS (TIGHT)", "runs_slower": "RUNS, SLOWER", "oom": "OUT OF MEMORY",
                "unknown": "CAN'T TELL"}
OUTCOME_TEXT = {"fits": "fits", "runs_slower": "runs, slower", "oom": "OUT OF MEMORY", "unknown": "can't tell"}


def _g(n: int) -> str:
    return f"{n / GiB:6.2f}"


def format_report(budget, verbose: bool = False, max_remedies: int = 6) -> str:
    dev = budget.device
    lines: list[str] = []
    mode = "Dynamic VRAM (weights stream on demand)" if dev.memory_mode == "dynamic" else "classic memory management"
    cap = f"{fmt_gib(dev.capacity_bytes)} usable"
    if dev.other_processes_bytes:
        cap += f", {fmt_gib(dev.other_processes_bytes)} held by other processes"
    lines.append(f"VRAM Budget: {dev.name} ({cap}); {mode}")
    overall = getattr(budget, "overall_verdict", "") or budget.verdict
    several = sum(1 for p in getattr(budget, "placement", ()) if p.card is not None) > 1
    if budget.stages and several:
        peak_stage = budget.stages[budget.peak_stage]
        lines.append(f"Verdict: {VERDICT_TEXT.get(overall, overall)} (the worst of the cards; per device below)")
        lines.append(f"  {dev.ordinal} {dev.name}: {VERDICT_TEXT.get(budget.verdict, budget.verdict)}: "
                     f"{_verdict_tail(budget, peak_stage)}")
    elif budget.stages:
        peak_stage = budget.stages[budget.peak_stage]
        lines.append(f"Verdict: {verdict_text(budget)}{_time_head(budget)}: {_verdict_tail(budget, peak_stage)}")
    else:
        lines.append("Verdict: CAN'T TELL: nothing to estimate")
    lines.extend(_risk_lines(budget))
    lines.append(f"Assumes: {assumptions(budget)}")
    # stages ComfyUI's model management places, with what each must keep on the card as the run decided it (cond and
    # uncond in turn where together they would not fit): the run's minimum, else the stage's working memory
    comfy = [(s, r) for s, r in zip(budget.stages, budget.runs) if s.stage.manager is None]
    if dev.memory_mode == "dynamic" and comfy:
        need = max(r.minimum_bytes or s.working_bytes + s.overhead_bytes for s, r in comfy)
        if len(comfy) == len(budget.stages):
            lines.append(
                f"Dynamic VRAM: weights stream from RAM on demand, so the verdict is on working memory: "
                f"{fmt_gib(need)} + {fmt_gib(dev.reserve_bytes)} headroom must fit; weights at peak "
                f"{fmt_gib(budget.stages[budget.peak_stage].weights_bytes)} (elastic)"
            )
        else:  # a node pack places some stages' models itself: those load whole, Dynamic VRAM does not apply to them
            lines.append(
                f"Dynamic VRAM: the weights ComfyUI places stream from RAM on demand ({fmt_gib(need)} of working "
                f"memory + {fmt_gib(dev.reserve_bytes)} headroom must fit for those stages); the models a node pack "
                "places itself load as that pack loads them"
            )
    lines.append("")
    if budget.stages:
        width = max(24, min(46, max(len(s.title) for s in budget.stages) + 3))
        show = getattr(budget, "show_devices", False)
        lines.append(f"{'Stage':<{width}} {'Weights':>7} {'Working':>7} {'Other':>6} {'Peak':>7} {'RAM':>6}  (GiB)  "
                     + (f"{'Device':<7} " if show else "") + "on this card")
        runs = list(getattr(budget, "runs", ()))
        host_runs = list(budget.host.runs) if getattr(budget, "host", None) is not None else []
        for n, sb in enumerate(budget.stages):
            title = f"{n + 1} {sb.title}"
            if len(title) > width:
                title = title[: width - 1] + "…"
            mark = "  <- peak" if n == budget.peak_stage else ""
            run = _run_text(runs[n]) if n < len(runs) else ""
            ram = f"{host_runs[n].ram_bytes / GiB:6.2f}" if n < len(host_runs) else f"{'':>6}"
            if n < len(host_runs) and host_runs[n].outcome in HOST_MARK:
                run = f"{run}; RAM: {HOST_MARK[host_runs[n].outcome]}" if run else f"RAM: {HOST_MARK[host_runs[n].outcome]}"
            where = ""
            if show:
                where = f"{getattr(sb, 'device', 'cuda:0'):<7} "
                if not getattr(sb, "on_card", True):
                    run = ("runs on the CPU: no VRAM" if sb.device == "cpu" else
                           f"not on this card ({fmt_gib(sb.device_peak_bytes or 0)} on {sb.device})")
            lines.append(f"{title:<{width}} {_g(sb.weights_bytes):>7} {_g(sb.working_bytes):>7} "
                         f"{sb.overhead_bytes / GiB:6.2f} {_g(sb.peak_bytes):>7} {ram}  {where}{run}{mark}")
            if verbose and show and getattr(sb, "device_reason", ""):
                lines.append(f"    runs on {sb.device}: {sb.device_reason}")
            if verbose:
                for item in sb.items:
                    lines.append(f"    {item.label}: {fmt_gib(item.bytes)} ({item.assumption})")
    lines.extend(_device_lines(budget))
    lines.extend(_plan_lines(budget))
    lines.extend(_host_lines(budget, verbose))
    missing = getattr(budget, "missing", ())
    if missing:
        lines.append("")
        lines.append("Can't price these models (so the verdict can't be trusted):")
        for m in missing:
            lines.append(f" - {m.name} ({m.role}, models/{m.folder}/): {m.problem}")
        lines.append("   Fix: point --models-dir at the ComfyUI models/ folder that holds them (the header gives "
                     "the exact size), or run the estimate inside ComfyUI with the VRAM Budget node.")
    on_card = getattr(budget, "vram_verdict", "") or budget.verdict  # the VRAM ladder answers the card's verdict
    relevant = [r for r in budget.remedies if on_card != "fits"]
    if relevant:
        lines.append("")
        speed = (f" (≈ {budget.slowdown:.1f}–{budget.slowdown_high:.1f}× faster)"
                 if on_card == "runs_slower" and budget.slowdown_high > 1.05 else "")
        head = {"runs_slower": f"To keep everything resident{speed or ' (full speed)'}, cheapest first:",
                "oom": "To make it run, cheapest first (quality and speed):"}
        text = head.get(on_card, "Fixes, cheapest first (quality and speed):")
        lines.append(text if on_card == budget.verdict else f"On the card ({on_card}): " + text[0].lower() + text[1:])
        for r in relevant[:max_remedies]:
            lands = getattr(r, "new_peak_bytes", None)
            ok = ("  -> fits" if r.fixes else "  -> runs" if getattr(r, "runs", None)
                  else f"  -> peak {fmt_gib(lands)}, not enough alone" if lands and r.kind != "bigger_card" else "")
            lines.append(f" - {r.headline()}  [{r.costs()}]{ok}")
            if verbose:
                lines.append(f"     {r.detail}")
    plan = getattr(budget, "plan", None)
    if plan is not None and len(plan.steps) > 1:
        lines.append("")
        verdict = "everything resident" if plan.fits else "not all resident yet"
        lines.append(f"Together ({verdict}, peak {fmt_gib(plan.new_peak_bytes)}): "
                     + " + ".join(r.title.split(":")[0] for r in plan.steps))
    if getattr(budget, "capacity", ()):
        lines.append("")
        for cap in budget.capacity:
            lines.append(cap.text())
    if budget.verdict in ("unknown", "fits", "tight") or on_card in ("unknown", "fits", "tight"):
        pass  # no card advice on a lower bound, nor a rental for what fits the user's own card (RAM is not the card)
    elif budget.cheapest_card is not None and budget.stages:
        card = budget.cheapest_card
        price = f", €{card.price_eur_h:.2f}/h" if card.price_eur_h else ""
        lines.append("")
        lines.append(f"Cheapest rental card that fits as is: {card.name} ({fmt_gib(card.total_bytes)}{price})")
        margin = budget.cheapest_card_with_margin
        if margin is not None and margin.name != card.name:
            mprice = f", €{margin.price_eur_h:.2f}/h" if margin.price_eur_h else ""
            lines.append(f"With 10 % margin: {margin.name} ({fmt_gib(margin.total_bytes)}{mprice})")
    elif budget.stages:
        lines.append("")
        lines.append("No single card in the catalogue holds this workflow as is.")
    if budget.unknown_nodes:
        lines.append("")
        names = ", ".join(sorted({t for _, t in budget.unknown_nodes}))
        lines.append(f"Not understood (ignored): {names}")
    if verbose:
        lines.extend(_evidence_lines(budget))
    notes = _inferred_note(budget) + list(budget.notes)
    if notes:
        lines.append("")
        lines.append("Notes:")
        for note in notes:
            lines.append(f" - {note if verbose else user_words(note)}")
    return "\n".join(lines)


RISK_TEXT = {"low": "low", "elevated": "ELEVATED", "high": "HIGH", "unknown": "can't tell"}


def _risk_lines(budget) -> list[str]:
    risk = getattr(budget, "oom_risk", None)
    if risk is None or not budget.stages:
        return []
    basis = "; ".join(risk.basis[:2])
    return [f"Risk of running out of memory: {RISK_TEXT.get(risk.level, risk.level)}"
            + (f" ({basis})" if basis else "")]


def assumptions(budget) -> str:
    """What the answer assumes, in one line: 'RTX 4090 · Dynamic VRAM · ComfyUI 0.33 rules · 64.00 GiB RAM (given)'."""
    dev = budget.device
    parts = [dev.name, "Dynamic VRAM" if dev.memory_mode == "dynamic" else "classic memory management"]
    if getattr(dev, "directml", False):
        parts.append("DirectML" + (" with --lowvram (partial loads)" if dev.vram_state == "low" else
                                   " (no partial loads)"))
    release = dict(getattr(dev, "versions", ()) or ()).get("ComfyUI")
    host = getattr(budget, "host", None)
    rules = host.host.rules if host is not None else None
    if release:
        newer = rules and (version_tuple(release) or ())[:2] > (version_tuple(rules) or ())
        parts.append(f"ComfyUI {release}" + (f" ({rules} rules: the newest the pack has)" if newer else ""))
    elif rules:
        parts.append(f"ComfyUI {rules} rules")
    if getattr(dev, "comfy_compiler", False):
        parts.append("Comfy Compiler on" + ("" if getattr(dev, "cuda_graphs", False) else " (no CUDA graphs)"))
    if getattr(dev, "fast_disk", False):
        parts.append("fast disk (weights read from the model files)")
    disk = getattr(host.host, "disk", "") if host is not None else ""
    if disk:
        parts.append("models on " + {"nvme": "an NVMe disk", "sata": "a SATA disk", "hdd": "a hard disk"}.get(disk, f"a {disk} disk"))
    if getattr(dev, "os", "linux") == "windows":
        parts.append("Windows")
    if host is None or not host.host.known:
        parts.append("system RAM not given")
    else:
        whose = {"live": "this machine", "--ram": "given", "--workers": "given"}.get(host.host.source, host.host.source)
        if getattr(host.host, "container_limit", False):
            whose = "container limit"
        parts.append(f"{fmt_gib(host.host.ram_total_bytes)} RAM ({whose})")
    return " · ".join(parts)


def _evidence_lines(budget) -> list[str]:
    out: list[str] = []
    near = getattr(budget, "evidence", ())
    if near:
        out += ["", "Published runs like this one (data/outcomes):"]
        out += [f" - {e.summary} {e.source}" for e in near]
    regs = getattr(budget, "known_regressions", ())
    if regs:
        out += ["", "Known regressions of these versions:"]
        out += [f" - {r.get('matched')}: {r.get('symptom')} Avoid: {r.get('avoid') or 'not known'}. "
                f"{(r.get('sources') or [''])[0]}" for r in regs]
    return out


PLACE_TEXT = {"not_checked": "not checked (no card given for it)", "unused": "unused", "no_vram": "no VRAM"}


def _device_lines(budget) -> list[str]:
    """Where each model runs and why, and each device's peak (issue 24): shown when a loader placed a model
    (ComfyUI-MultiGPU) or several cards are given."""
    if not getattr(budget, "show_devices", False):
        return []
    out = ["", "Where each model runs:"]
    for key, info in budget.models.items():
        dev, why = budget.model_devices.get(key, (placement.MAIN, placement.MAIN_REASON))
        tail = (": runs on the CPU, no VRAM of any card" if dev == "cpu" else
                "" if dev == getattr(budget.device, "ordinal", "cuda:0") else
                ": not on this card, priced for that device")
        out.append(f" - {info.label} [{key.split('/', 1)[-1]}]: {dev} ({why}){tail}")
    plans = getattr(budget, "placement", ())
    if plans:
        out.append("Per device:")
        for p in plans:
            card = f"{p.card.name}, {fmt_gib(p.card.capacity_bytes)} usable" if p.card is not None else "no card given"
            if p.device == "cpu":
                card = "system RAM"
            outcome = VERDICT_TEXT.get(p.outcome) or PLACE_TEXT.get(p.outcome, p.outcome)
            peak = f"peak {fmt_gib(p.peak_bytes)}" if p.device != "cpu" else "no VRAM"
            donor = f" + DisTorch2 donor share of {len(p.donor_for)} model(s)" if getattr(p, "donor_for", ()) else ""
            out.append(f" - {p.device} ({card}): {len(p.models)} model(s){donor}, {peak}: {outcome}")
            if p.allocation:
                a = p.allocation
                out.append(f"   split {a['model']} with DisTorch2 (UNETLoaderDisTorch2MultiGPU, compute_device "
                           f"{a['compute_device']}): expert_mode_allocations = \"{a['expert_mode_allocations']}\""
                           + (f" ({fmt_gib(a['rest_bytes'])} streamed from RAM)" if a["rest_bytes"] else ""))
    return out


def _plan_lines(budget) -> list[str]:
    """The placement plan for several cards (placement_plan.py): each loader's node type and widgets, each
    card's predicted peak, the DisTorch2 splits and what they cost, then the other engines in a line each."""
    p = getattr(budget, "placement_plan", None)
    if p is None:
        return []
    outcome = VERDICT_TEXT.get(p.verdict) or PLACE_TEXT.get(p.verdict, p.verdict)
    out = ["", f"Placement plan for these cards ({p.engine}; {p.tried} placements priced): {outcome}"]
    for s in p.loaders:
        widgets = ", ".join(f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v:g}" for k, v in s.widgets.items())
        names = ", ".join(m.split("/", 1)[-1] for m in s.models)
        if not s.changed:
            out.append(f" - node {s.node} {s.node_type} [{names}]: as it is ({s.device})")
        elif getattr(s, "insert", ""):
            where = ", ".join(f"{k} = {v!r}" for k, v in s.insert_widgets.items())
            out.append(f" - node {s.node} {s.node_type} [{names}]: add {s.insert} on its {s.insert_socket} output, "
                       f"{where}")
        elif s.use_type != s.node_type:
            out.append(f" - node {s.node} {s.node_type} [{names}] -> {s.use_type}: {widgets}")
        else:
            out.append(f" - node {s.node} {s.node_type} [{names}]: set {widgets}")
    for d in p.devices:
        if d.device == "cpu":
            out.append(f"   cpu: {len(d.models)} model(s), no VRAM")
            continue
        card = f"{d.card.name}, {fmt_gib(d.card.capacity_bytes)} usable" if d.card is not None else "no card given"
        text = VERDICT_TEXT.get(d.outcome) or PLACE_TEXT.get(d.outcome, d.outcome)
        out.append(f"   {d.device} ({card}): {len(d.models)} model(s), predicted peak {fmt_gib(d.predicted_peak_bytes)}"
                   f": {text}")
    out.extend(f"   {n}" for n in p.notes)
    for e in p.other_engines:
        out.append(f" - {e['engine']}: {e['why']}")
    return out


HOST_MARK = {"oom": "OUT OF MEMORY", "swapping": "swaps", "thrashing": "re-reads weights from disk"}


def _host_lines(budget, verbose: bool) -> list[str]:
    """System RAM: the peak against the machine's RAM, and the RAM fixes when it does not fit."""
    hb = getattr(budget, "host", None)
    if hb is None or not budget.stages:
        return []
    host = hb.host
    where = (f"at '{budget.stages[hb.peak_stage].title}'" if 0 <= hb.peak_stage < len(budget.stages) else "")
    if host.known:
        swap = host.swap_bytes
        swap_text = (f" + {fmt_gib(swap)} {'page file' if host.os == 'windows' else 'swap'}"
                     + (" (assumed)" if host.swap_total_bytes is None else "")) if swap else " and no swap"
        have = f"{fmt_gib(host.ram_total_bytes)} RAM{swap_text}"
        if host.source == "live":
            have += " (container limit)" if host.container_limit else " (this machine)"
    else:
        have = "RAM not given (give --ram GiB)"
    text = {"fits": "fits", "assumed": "not checked", "swapping": "swaps (runs, slower)",
            "thrashing": "re-reads weights from disk (runs, slower)", "oom": "OUT OF MEMORY"}.get(hb.outcome, hb.outcome)
    rules = f"ComfyUI {host.rules} rules" + (f" (for {host.version})" if host.version else "")
    out = ["", f"System RAM: needs {fmt_gib(hb.peak_bytes)} {where}; {have}: {text} [{rules}, cache {host.cache_mode}]"]
    if verbose and 0 <= hb.peak_stage < len(hb.runs):
        for item in hb.runs[hb.peak_stage].items:
            out.append(f"    {item.label}: {fmt_gib(item.bytes)}" + (f" ({item.note})" if item.note else ""))
    if hb.remedies:
        out.append("To fit in system RAM, cheapest first:")
        for r in hb.remedies[:5]:
            out.append(f" - {r.headline()}  [{r.costs()}]" + ("  -> fits" if r.fixes else ""))
            if verbose:
                out.append(f"     {r.detail}")
    return out


def _inferred_note(budget) -> list[str]:
    """One note naming the models whose size comes from their file name (name_infer)."""
    names = [key.split("/", 1)[-1] for key, info in budget.models.items() if info.source == "inferred"]
    if not names:
        return []
    return [f"sizes inferred from file names (not found here; point --models-dir at the files for exact sizes): "
            f"{', '.join(names)}"]


def verdict_text(budget) -> str:
    """The verdict in capitals; a run whose streamed weights hide behind the compute (runtime's slowdown
    under 1.05) is not called slower (the words beside it would say "about as fast")."""
    if budget.verdict == "runs_slower" and getattr(budget, "slowdown_high", 2.0) < 1.05:
        return "RUNS (weights stream, about full speed)"
    return VERDICT_TEXT.get(budget.verdict, budget.verdict)


def _time_head(budget) -> str:
    """Time first when it runs (issue 32): ', ≈ 3–8 min a run (20 steps at ≈ 9.5 s/step, compute-bound)'."""
    if budget.verdict not in ("fits", "tight", "runs_slower"):
        return ""
    t = getattr(budget, "run_time", None)
    return f", {t.words()}" if t is not None else ""


def _verdict_tail(budget, peak_stage) -> str:
    need = f"needs {fmt_gib(budget.peak_bytes)} at '{peak_stage.title}' with every weight resident"
    cap = budget.device.capacity_bytes
    hb = getattr(budget, "host", None)
    if hb is not None and budget.verdict in ("oom", "runs_slower") and hb.outcome in ("oom", "swapping", "thrashing"):
        host_text = hb.why  # the first stage that fails is where it stops
        vram = getattr(budget, "vram_verdict", "") or budget.verdict
        if host_text and (hb.outcome == "oom" or vram in ("fits", "tight")):
            on_card = {"fits": "fits the card", "tight": "fits the card (tight)", "runs_slower": "runs on the card, slower",
                       "oom": "also short on the card", "unknown": "card side can't tell"}.get(vram, vram)
            return f"{host_text} (VRAM: {on_card})"

    if budget.verdict == "unknown":
        return (f"{at_least(budget.peak_bytes, budget.runs)} (lower bound: {len(budget.missing) or 'some'} model(s) or "
                "stage(s) unpriced)")
    if budget.verdict in ("fits", "tight"):
        run_peak = max((r.peak_bytes for r in budget.runs), default=budget.peak_bytes)
        if 0 < run_peak < budget.peak_bytes:  # ComfyUI splits the work (cond / uncond in turn, VAE batches: runtime.py)
            return (f"needs {fmt_gib(run_peak)} as ComfyUI runs it ({fmt_gib(budget.peak_bytes)} if '{peak_stage.title}' "
                    f"ran in one go), {fmt_gib(budget.spare_bytes)} to spare")
        spare = f"{fmt_gib(budget.headroom_bytes)} to spare"
        if budget.peak_high_bytes > budget.peak_bytes:
            spare += f"; peak {fmt_gib(budget.peak_bytes)}–{fmt_gib(budget.peak_high_bytes)}"
        return f"{need}, {spare}"
    if budget.verdict == "runs_slower":
        parts = []
        if budget.offload_bytes:
            parts.append(f"keeps {fmt_gib(budget.offload_bytes)} of weights in RAM: "
                         f"{speed_words(budget.slowdown, getattr(budget, 'slowdown_high', budget.slowdown))}")
        # who keeps the weights in RAM: the stage that streams the most (a pack's own block swap, not ComfyUI's),
        # which need not be the peak stage (a text encode can peak while the sampler swaps blocks)
        streaming = max(zip(budget.stages, budget.runs), key=lambda p: p[1].streamed_bytes, default=None)
        manager = (streaming[0] if streaming and streaming[1].streamed_bytes else peak_stage).stage.manager
        if budget.extra_seconds >= 1:
            parts.append(f"+{budget.extra_seconds:.0f} s once ({'copies' if manager else 'fallbacks'})")
        who = {None: "ComfyUI", "diffusers": "the pipeline"}.get(manager, manager)
        return f"{need} ({fmt_gib(cap)} usable); {who} " + "; ".join(parts or ["falls back"])
    short = max((r.shortfall_bytes for r in budget.runs if r.outcome == "oom"), default=0)
    failing = next((sb for sb, r in zip(budget.stages, budget.runs) if r.outcome == "oom"), peak_stage)
    manager = failing.stage.manager
    how = ("even with ComfyUI's offloading" if manager is None else "with the pipeline's offload mode as set"
           if manager == "diffusers" else f"as {manager} places it (the whole model, no partial load)"
           if manager in NO_BLOCK_SWAP else f"with {manager}'s block swap as set")
    if manager is None and getattr(budget.device, "directml", False) and budget.device.vram_state != "low":
        how = "(DirectML: ComfyUI cannot load a model partially there; --lowvram can)"
    return f"'{failing.title}' is short by {fmt_gib(short)} {how}"


def _run_text(run) -> str:
    text = OUTCOME_TEXT.get(run.outcome, run.outcome)
    if run.outcome == "runs_slower":
        if run.streamed_bytes:
            text += f": {run.streamed_bytes / GiB:.1f} GiB streamed"
        elif run.tiled_fallback:
            text += ": tiled retry"
    elif run.outcome == "oom":
        text += f": short {run.shortfall_bytes / GiB:.1f} GiB"
    if run.cond_batch == 1 and run.forwards_per_step == 2:
        text += " (cond/uncond in turn)"
    return text
