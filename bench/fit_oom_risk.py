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
    allowed = max(int(MAX_FALSE_ALARMS * len(runs)), sum(j.verdict == "oom" or j.regression_high for j in runs))
    best = None
    for v, r, st, amd in itertools.product(GRID["vram_fill"], GRID["ram_fill"], GRID["stream_log2"], (False, True)):
        t = {"vram_fill": v, "ram_fill": r, "stream_log2": st}

        def high(j):
            if j.verdict == "oom" or j.regression_high:
                return True
            f = j.features
            if any(f.get(k, 0) >= t[k] for k in t):
                return True
            return amd and f.get("non_nvidia") and any(f.get(k, 0) >= t[k] - ELEVATED_STEP[k] for k in t)
        fa = sum(high(j) for j in runs)
        warned = sum(high(j) for j in ooms)
        key = (fa <= allowed, warned, -fa, v + r + st, not amd)
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
