"""The risk of running out of memory beside the verdict (issue 30): how close the simulation runs to each
edge, where the arithmetic is known to miss, and the published evidence.

The arithmetic says what ComfyUI will do; published runs show it misses near the edges (a partial load
with 200 MB left, RAM at 95 %, a release with a memory regression, a card whose kernels it does not
model). The risk turns the distance to each edge into a probability with a logistic model whose weights
are fitted on the calibration half of the evidence base only (bench/fit_oom_risk.py writes
data/oom_risk.json with the record ids it used); the validation half judges it (docs/accuracy.md).

Levels: low, elevated, high. A verdict of "oom" is high by the arithmetic; an incomplete estimate has no
risk ("can't tell"). "Runs, slower" at high risk is a warning, not a green light.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from ..machine.runtime import BLOCK_SWAP_RULES
from . import evidence
from .budget import TIGHT_FRACTION
from ..serial import JsonFields
from ..units import GiB, fmt_gib

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "oom_risk.json"
LEVELS = ("low", "elevated", "high")

# The features, in the order the model file gives their weights; each is 0 when it does not apply.
FEATURES = ("vram_fill", "stream_log2", "ram_fill", "non_nvidia", "small_card", "windows", "video")


@dataclass(frozen=True)
class OomRisk(JsonFields):
    level: str  # low | elevated | high | unknown
    score: float  # the probability the model gives (1.0 for a verdict of oom, 0 when unknown)
    basis: tuple[str, ...]  # what raises it, in words, largest first
    features: Mapping[str, float] = None  # the inputs, for --json and the evidence replays

    def to_dict(self) -> dict:
        return {"level": self.level, "score": round(self.score, 3), "basis": list(self.basis),
                "features": {k: round(v, 3) for k, v in (self.features or {}).items()}}


@lru_cache(maxsize=4)
def _model(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    ok = isinstance(data, dict) and isinstance(data.get("thresholds"), dict) and all(
        isinstance(t, dict) and {"elevated", "high"} <= set(t) and k in FEATURES for k, t in data["thresholds"].items())
    return data if ok else {}


def model(path: Path | None = None) -> dict:
    return _model(str(path or MODEL_FILE))


def features(budget, video: bool, regressions: int) -> dict[str, float]:
    """The model's inputs from a Budget: how full the card runs, how much bigger than the card the weights
    are, how full RAM + swap runs, and what the arithmetic does not see (maker, card size, OS, a release with
    a known regression, video)."""
    dev = budget.device
    cap = max(1, dev.capacity_bytes)
    fill, weights = 0.0, 0.0
    for sb, run in zip(budget.stages, budget.runs):
        if not getattr(sb, "on_card", True):
            continue
        # what must be on the card: everything when it all stays resident under classic loading (ComfyUI loads
        # by its own estimate, which a spike can pass); when weights stream, or under Dynamic VRAM (weights are
        # evicted on demand), what cannot move (working memory, the CUDA context, the buffers in flight)
        # a pack that places its model itself (WanVideoWrapper's block swap, HunyuanVideoWrapper ...) does not load
        # partially: the blocks it keeps are fixed, so its whole peak must fit (machine/runtime.py BLOCK_SWAP_RULES)
        fixed = getattr(sb.stage, "manager", None) in BLOCK_SWAP_RULES
        elastic = not fixed and (run.streamed_bytes or getattr(run, "elastic", False))
        must = run.minimum_bytes if elastic and run.minimum_bytes else (run.peak_bytes or sb.peak_bytes)
        fill = max(fill, must / cap)
        weights = max(weights, (run.resident_bytes + run.streamed_bytes) / cap)
    ram_fill = 0.0
    hb = budget.host
    if hb is not None and hb.host.known:
        # the same swap / page file the RAM verdict counts (an assumed one when not given: host_memory.Host.swap_bytes)
        total = (hb.host.ram_total_bytes or 0) + hb.host.swap_bytes
        if total > 0:
            ram_fill = hb.peak_bytes / total
    return {
        "vram_fill": min(fill, 3.0),
        "stream_log2": min(math.log2(max(1.0, weights)), 3.0),
        "ram_fill": min(ram_fill, 3.0),
        "non_nvidia": 0.0 if dev.vendor == "NVIDIA" else 1.0,
        "small_card": 1.0 if dev.total_bytes <= 8.5 * GiB else 0.0,
        "windows": 1.0 if dev.os == "windows" else 0.0,
        "video": 1.0 if video else 0.0,
    }


_WORDS = {
    "vram_fill": lambda x, b: f"what must stay on the card fills {x:.0%} of it",
    "stream_log2": lambda x, b: f"the weights are {2 ** x:.1f}x the card: ComfyUI streams most of them",
    "ram_fill": lambda x, b: f"RAM + swap {x:.0%} used at its peak",
    "non_nvidia": lambda x, b: "a non-NVIDIA card: its kernels and allocator use memory the arithmetic does not model",
    "small_card": lambda x, b: "a card of 8 GB or less: fixed costs and the desktop take a large share",
    "windows": lambda x, b: "Windows: the desktop and the driver hold memory that varies",
    "video": lambda x, b: "a video model: long sequences near the edge",
}


def assess(budget, video: bool = False, regressions=(), path: Path | None = None) -> OomRisk:
    """The OOM risk of a Budget (after its host side): high for a verdict of oom or a known memory regression of
    these versions, unknown for an incomplete estimate, else the edge rules of the model file (thresholds fitted
    on the calibration half): high when the card, RAM + swap or the streamed share runs past its high
    threshold, elevated past the lower one; a non-NVIDIA card moves elevated to high where the file says so. A tight
    verdict, or a card fill past the tight line, is at least elevated whatever the fit kept (the verdict's rule)."""
    if budget.verdict == "unknown":
        return OomRisk("unknown", 0.0, ("the estimate is incomplete: no risk is given on a guess",), {})
    feats = features(budget, video, len(regressions))
    # a memory regression of these versions is a high risk (a rule from the evidence), unless the simulation prices
    # its effect already or its sources do not settle the cause (evidence.raises_risk): those are said, not high
    bad = [r for r in regressions if evidence.raises_risk(r)]
    said = tuple(f"{r.get('matched')} has a known memory regression: {str(r.get('symptom', ''))[:160]}"
                 + (f" (avoid: {str(r['avoid'])[:120]})" if r.get("avoid") else "") for r in bad[:2])
    if budget.verdict == "oom":
        priced = tuple(f"{r.get('matched')} has a known memory regression, counted in the estimate: "
                       f"{evidence.effect_words(r)}" for r in regressions if r.get("effect"))[:1]
        return OomRisk("high", 1.0, said + priced + ("the arithmetic says it runs out of memory",), feats)
    if bad:  # a rule from the evidence, not a fitted weight: this release is known to run out where others do not
        return OomRisk("high", 1.0, said, feats)
    m = model(path)
    if not m:
        return OomRisk("unknown", 0.0, ("the risk model file is missing",), feats)
    hits: list[tuple[int, float, str]] = []  # (2 high / 1 elevated, how far past, words)
    for name, t in m["thresholds"].items():
        x = feats.get(name, 0.0)
        if x >= t["high"]:
            hits.append((2, x - t["high"], _WORDS[name](x, budget)))
        elif x >= t["elevated"]:
            hits.append((1, x - t["elevated"], _WORDS[name](x, budget)))
    if not hits and (budget.verdict == "tight" or feats["vram_fill"] >= 1 - TIGHT_FRACTION):
        # the verdict's own edge, not a fitted one (under a tenth of the card left, or the range reaching past it:
        # budget.TIGHT_FRACTION), read on what must stay on the card: never a low risk, and never "no edge is near"
        hits.append((1, 0.0, _WORDS["vram_fill"](feats["vram_fill"], budget) if feats["vram_fill"] >= 1 - TIGHT_FRACTION
                     else "under a tenth of the card is left at the peak"))
    level = max((h[0] for h in hits), default=0)
    if level == 1 and feats["non_nvidia"] and m.get("non_nvidia_raises"):
        level = 2
        hits.append((2, 0.0, _WORDS["non_nvidia"](1.0, budget)))
    basis = [h[2] for h in sorted(hits, reverse=True)][:3]
    for r in regressions:  # a speed regression, one the simulation prices, or a suspected one: said, not scored
        priced = f" (counted in the estimate: {evidence.effect_words(r)})" if r.get("effect") else ""
        suspected = " is suspected of a regression" if r.get("attribution") == "suspected" else ""
        basis.append(f"{r.get('matched')}{suspected}: {str(r.get('symptom', ''))[:160]}{priced}")
    hb = budget.host
    if hb is None or not hb.host.known:
        basis.append("system RAM not given: the risk leaves RAM out")
    if not hits:
        basis.insert(0, f"the card keeps {fmt_gib(max(0, budget.spare_bytes))} free at the peak"
                     if budget.verdict in ("fits", "tight") else "no edge is near")
    return OomRisk(LEVELS[level], (0.2, 0.6, 0.9)[level], tuple(basis), feats)
