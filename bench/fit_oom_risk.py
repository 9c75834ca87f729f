"""Fit the OOM-risk thresholds (nodes/estimator/plan/risk.py) on the CALIBRATION half of the evidence base only.

Every scored calibration record (data/outcomes/*.jsonl, evidence.split_of == "calibration", replayable by
evidence_replay) is re-run through the command line's estimate. The risk is high when one edge runs past its
threshold: how full the card runs at its peak (vram_fill), how much bigger than the card the weights are
(stream_log2), how full RAM + swap runs (ram_fill); optionally a non-NVIDIA card turns elevated into high.
A grid search picks the thresholds that warn before the most calibration OOMs with at most 10 % of the
calibration runs flagged (the arithmetic's own false "oom" verdicts and a regression's high risk count against the
same 10 %), and of equals the highest thresholds. "Elevated" starts a fixed step below "high". The validation half is never read.
Writes nodes/estimator/data/oom_risk.json with the thresholds and the ids of the records they came from.

    python3 bench/fit_oom_risk.py            # fit and write
    python3 bench/fit_oom_risk.py --check    # print the calibration fit without writing
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from vram_budget.nodes.estimator.plan import evidence  # noqa: E402
from vram_budget.nodes.estimator.cli.evidence_replay import judge  # noqa: E402

MAX_FALSE_ALARMS = 0.10
GRID = {
    "vram_fill": [round(0.90 + 0.01 * i, 2) for i in range(0, 16)] + [9.0],  # 9: the rule off
    "ram_fill": [round(0.80 + 0.02 * i, 2) for i in range(0, 16)] + [9.0],
    "stream_log2": [0.5, 1.0, 1.5, 2.0, 2.5, 9.0],
}
ELEVATED_STEP = {"vram_fill": 0.05, "ram_fill": 0.10, "stream_log2": 0.5}


# The frontier (docs/accuracy.md): the same rule family over a wider grid, down to thresholds no fit would keep
FRONTIER_GRID = {
    "vram_fill": [round(0.50 + 0.05 * i, 2) for i in range(0, 8)] + GRID["vram_fill"],
    "ram_fill": [round(0.50 + 0.05 * i, 2) for i in range(0, 6)] + GRID["ram_fill"],
    "stream_log2": [0.25] + GRID["stream_log2"],
}


def own_flag(j) -> bool:
    """High risk whatever the thresholds: the arithmetic's oom verdict or a known regression's high risk."""
    return j.verdict == "oom" or j.regression_high


def flagged(j, t: dict, amd: bool) -> bool:
    """High risk for a judged record under thresholds `t`: its own flag (own_flag), an edge past its threshold, or
    (amd) a non-NVIDIA card past an edge's elevated step."""
    if own_flag(j):
        return True
    f = j.features
    if any(f.get(k, 0) >= t[k] for k in t):
        return True
    return bool(amd and f.get("non_nvidia") and any(f.get(k, 0) >= t[k] - ELEVATED_STEP[k] for k in t))


def _counts(runs, ooms, grid):
    """(thresholds, amd, OOMs warned, runs flagged) for every point of `grid`."""
    for v, r, st, amd in itertools.product(grid["vram_fill"], grid["ram_fill"], grid["stream_log2"], (False, True)):
        t = {"vram_fill": v, "ram_fill": r, "stream_log2": st}
        yield t, amd, sum(flagged(j, t, amd) for j in ooms), sum(flagged(j, t, amd) for j in runs)


def frontier(scored, shares=(0.10, 0.20, 0.30, 0.50)) -> list[tuple[float, int, int | None, int]]:
    """For each false-alarm share: (share, runs it allows, the most OOMs any thresholds of the rule family warn
    within it, OOMs). Fitted in sample on `scored` itself, so an upper bound of what the features can separate.
    None where the arithmetic's own oom verdicts and regressions already flag more runs than the share allows."""
    runs = [j for j in scored if not j.is_oom]
    ooms = [j for j in scored if j.is_oom]
    points = [(w, fa) for _, _, w, fa in _counts(runs, ooms, FRONTIER_GRID)]
    return [(s, int(s * len(runs)), max((w for w, fa in points if fa <= int(s * len(runs))), default=None), len(ooms))
            for s in shares]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="print, do not write")
    args = ap.parse_args()
    judged = [judge(r) for r in evidence.outcomes() if evidence.split_of(r["source"]) == "calibration"]
    scored = [j for j in judged if j.replayable]
    runs = [j for j in scored if not j.is_oom]
    ooms = [j for j in scored if j.is_oom]
    # the rules' own flags (the arithmetic's false "oom" verdicts, a known regression that raises the risk by itself)
    # count against the budget; when they alone exceed it, the thresholds may add none
    allowed = max(int(MAX_FALSE_ALARMS * len(runs)), sum(own_flag(j) for j in runs))
    best = None
    for t, amd, warned, fa in _counts(runs, ooms, GRID):
        key = (fa <= allowed, warned, -fa, sum(t.values()), not amd)
        if best is None or key > best[0]:
            best = (key, t, amd, warned, fa)
    _, t, amd, warned, fa = best
    model = {
        "about": "OOM-risk thresholds of nodes/estimator/plan/risk.py, fitted by bench/fit_oom_risk.py on the calibration "
                 "half of data/outcomes only (evidence.split_of); the validation half judges them in docs/accuracy.md.",
        "fitted_on": date.today().isoformat(),
        "thresholds": {k: {"elevated": round(max(0.0, t[k] - ELEVATED_STEP[k]), 3), "high": t[k]}
                       for k in t if t[k] < 9},
        "non_nvidia_raises": amd,
        "max_false_alarms": MAX_FALSE_ALARMS,
        "calibration_records": sorted(j.id for j in scored),
    }
    print(json.dumps({k: v for k, v in model.items() if k != "calibration_records"}, indent=1))
    print(f"calibration: {len(scored)} records; OOMs warned {warned}/{len(ooms)}; runs flagged {fa}/{len(runs)} "
          f"(allowed {allowed})")
    if not args.check:
        (REPO / "nodes" / "estimator" / "data" / "oom_risk.json").write_text(json.dumps(model, indent=1) + "\n")
        print("wrote nodes/estimator/data/oom_risk.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
