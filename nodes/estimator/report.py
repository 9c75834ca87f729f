"""A Budget as plain text for people (node display, console, command line)."""
from __future__ import annotations

from .units import GiB, fmt_gib

VERDICT_TEXT = {"fits": "FITS", "tight": "TIGHT", "won't fit": "WON'T FIT"}


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
    if budget.stages:
        peak_stage = budget.stages[budget.peak_stage]
        if budget.headroom_bytes >= 0:
            tail = f"{fmt_gib(budget.headroom_bytes)} to spare"
        elif dev.memory_mode == "dynamic" and budget.verdict != "won't fit":
            tail = f"{fmt_gib(-budget.headroom_bytes)} of weights stay in RAM and stream in (slower, no OOM)"
        else:
            tail = f"short by {fmt_gib(-budget.headroom_bytes)}"
        lines.append(
            f"Verdict: {VERDICT_TEXT.get(budget.verdict, budget.verdict)}: peak {fmt_gib(budget.peak_bytes)} "
            f"at '{peak_stage.title}', {tail}"
        )
    else:
        lines.append("Verdict: nothing to estimate")
    if dev.memory_mode == "dynamic" and budget.stages:
        need = max(s.working_bytes + s.overhead_bytes for s in budget.stages)
        lines.append(
            f"Dynamic VRAM: weights stream from RAM on demand, so the verdict is on working memory: "
            f"{fmt_gib(need)} + {fmt_gib(dev.reserve_bytes)} headroom must fit; weights at peak "
            f"{fmt_gib(budget.stages[budget.peak_stage].weights_bytes)} (elastic)"
        )
    lines.append("")
    if budget.stages:
        width = max(24, min(46, max(len(s.title) for s in budget.stages) + 3))
        lines.append(f"{'Stage':<{width}} {'Weights':>7} {'Working':>7} {'Other':>6} {'Peak':>7}  (GiB)")
        for n, sb in enumerate(budget.stages):
            title = f"{n + 1} {sb.title}"
            if len(title) > width:
                title = title[: width - 1] + "…"
            mark = "  <- peak" if n == budget.peak_stage else ""
            lines.append(f"{title:<{width}} {_g(sb.weights_bytes):>7} {_g(sb.working_bytes):>7} "
                         f"{sb.overhead_bytes / GiB:6.2f} {_g(sb.peak_bytes):>7}{mark}")
            if verbose:
                for item in sb.items:
                    lines.append(f"    {item.label}: {fmt_gib(item.bytes)} ({item.assumption})")
    if budget.offload_bytes and budget.verdict == "won't fit":
        lines.append("")
        lines.append(f"Without changes ComfyUI streams {fmt_gib(budget.offload_bytes)} of weights from RAM "
                     "(runs, several times slower).")
    relevant = [r for r in budget.remedies if budget.verdict != "fits"]
    if relevant:
        lines.append("")
        lines.append("Fixes, cheapest first (quality and speed):")
        for r in relevant[:max_remedies]:
            ok = "  -> fits" if r.fixes else ""
            lines.append(f" - {r.title}  [{r.cost}]{ok}")
            if verbose:
                lines.append(f"     {r.detail}")
    plan = getattr(budget, "plan", None)
    if plan is not None and len(plan.steps) > 1:
        lines.append("")
        verdict = "fits" if plan.fits else "still short"
        lines.append(f"Together ({verdict}, peak {fmt_gib(plan.new_peak_bytes)}): "
                     + " + ".join(r.title.split(":")[0] for r in plan.steps))
    if budget.cheapest_card is not None and budget.stages:
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
    if budget.notes:
        lines.append("")
        lines.append("Notes:")
        for note in budget.notes:
            lines.append(f" - {note}")
    return "\n".join(lines)
