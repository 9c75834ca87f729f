"""Write docs/accuracy.md from the evidence base (data/outcomes, replayed by evidence_replay) and
tests/accuracy_cases.py (the earlier rounds' calibration table).

    python3 bench/accuracy_table.py           # rewrite the doc and print the summary
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import accuracy_cases as A  # noqa: E402
import fit_oom_risk  # noqa: E402
from vram_budget.nodes.estimator.plan import evidence
from vram_budget.nodes.estimator.cli import evidence_replay  # noqa: E402


def frontier_markdown(judged) -> str:
    """How many OOMs any thresholds of the risk's rule family could warn at a given false-alarm share, fitted in
    sample on each half itself (bench/fit_oom_risk.frontier): the upper bound of what these features separate."""
    out = ["## How far a threshold on these features can go", "",
           "The risk is high when the arithmetic says oom, a known regression hits, or an edge (card fill, weights "
           "over the card, RAM + swap fill; optionally any edge on a non-NVIDIA card) runs past a threshold. Here "
           "every threshold of that family, down to a card half full, is tried on each half itself, and the most "
           "OOMs any of them warns is given for each share of runs it may flag. Fitted in sample, these are upper "
           "bounds, not scores: the validation half's row is never used to pick a threshold. The published OOMs "
           "and runs sit at the same distances from every edge (many OOMs have a published run with identical "
           "inputs), so no threshold warns most OOMs without flagging many runs.", "",
           "| half | runs flagged at most | OOMs warned at best |", "|---|---|---|"]
    for half in ("calibration", "validation"):
        scored = [j for j in judged if j.split == half and j.replayable]
        own = sum(fit_oom_risk.own_flag(j) for j in scored if not j.is_oom)
        for share, allowed, warned, ooms in fit_oom_risk.frontier(scored):
            best = (f"{warned} of {ooms} ({100.0 * warned / ooms:.0f} %)" if warned is not None else
                    f"none: the arithmetic's own oom verdicts and the regressions flag {own} runs")
            out.append(f"| {half} | {share:.0%} ({allowed}) | {best} |")
    return "\n".join(out) + "\n\n"


def document(results, host) -> str:
    records = evidence.outcomes()
    judged = evidence_replay.judge_all(records)
    return (evidence_replay.evidence_markdown(judged, records) + frontier_markdown(judged) + A.markdown(results)
            + A.host_markdown(host, results + host) + A.engines_markdown())


def main() -> int:
    results = [A.evaluate(c) for c in A.CASES]
    host = [A.evaluate(c) for c in A.HOST_CASES]
    (REPO / "docs" / "accuracy.md").write_text(document(results, host), encoding="utf-8")
    print(A.summary(results))
    print(A.host_summary(results + host))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
