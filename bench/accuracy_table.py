"""Write docs/accuracy.md from the evidence base (data/outcomes, replayed by evidence_replay) and
tests/accuracy_cases.py (the earlier rounds' calibration table).

    python3 bench/accuracy_table.py           # rewrite the doc and print the summary
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import accuracy_cases as A  # noqa: E402
from vram_budget.nodes.estimator.plan import evidence
from vram_budget.nodes.estimator.cli import evidence_replay  # noqa: E402


def document(results, host) -> str:
    records = evidence.outcomes()
    judged = evidence_replay.judge_all(records)
    return (evidence_replay.evidence_markdown(judged, records) + A.markdown(results)
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
