"""The collected published LLM figures (data/llm_outcomes/collect.jsonl) as a scored evidence set.

data/llm_outcomes/replay.json says, per record, the inputs the estimator needs to replay it (or why it is not
replayed). Serve records go through tests/test_llm_accuracy.py ``ours``, training records through
tests/test_training_accuracy.py ``evaluate``; records are split once into calibration and validation halves by a
hash of their source thread (evidence.split_of, the image / video evidence base's split). The section of
docs/accuracy-llm.md between the evidence markers is generated here: ``python tests/test_llm_evidence.py --write``.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llm_accuracy_cases  # noqa: E402
import training_accuracy_cases  # noqa: E402
from test_llm_accuracy import _fmt, error, ours, tolerance, within  # noqa: E402
from test_training_accuracy import evaluate  # noqa: E402

from vram_budget.nodes.estimator.plan.evidence import split_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COLLECT = ROOT / "data" / "llm_outcomes" / "collect.jsonl"
REPLAY = ROOT / "data" / "llm_outcomes" / "replay.json"
DOC = ROOT / "docs" / "accuracy-llm.md"
BEGIN, END = "<!-- evidence: tests/test_llm_evidence.py -->", "<!-- end evidence -->"

# The validation half's score when this set was built: a regression below it fails test_validation_floor.
VALIDATION_FLOOR = 37

RECORDS = [json.loads(line) for line in COLLECT.read_text(encoding="utf-8").splitlines() if line.strip()]
BY_ID = {r["id"]: r for r in RECORDS}
PLAN = json.loads(REPLAY.read_text(encoding="utf-8"))
REPLAYED = PLAN["replayed"]
NOT_REPLAYED = PLAN["not_replayed"]
# threads the estimator's constants were already checked against (tests/*accuracy_cases.py)
SEEN = {c["source"].split("#", 1)[0] for c in llm_accuracy_cases.CASES + training_accuracy_cases.CASES}


def score(entry: dict) -> dict:
    """{'ours', 'published', 'error', 'ok'} of one replayed record."""
    rec = BY_ID[entry["id"]]
    if entry.get("kind") == "train":
        r = evaluate({**entry, "published_gb": rec["published"]})
        return dict(ours=r["ours"], published=r["published"], error=r["error"], ok=bool(r["ok"]),
                    tol=entry.get("tol", 0.10), unit="GB")
    case = dict(entry, published=rec["published"])
    if isinstance(case["model"], dict):
        case["model"] = {k: v for k, v in case["model"].items() if k != "config_source"}
    v = ours(case)
    return dict(ours=v, published=rec["published"], error=error(v, case), ok=within(v, case), tol=tolerance(case),
                unit=case["metric"])


def half_of(source: str) -> str:
    """A thread the constants were already checked against is calibration (it was seen); the others are split
    by the hash of their thread (evidence.split_of)."""
    return "calibration" if source.split("#", 1)[0] in SEEN else split_of(source)


def results() -> dict[str, list[tuple[dict, dict]]]:
    halves: dict[str, list[tuple[dict, dict]]] = {"calibration": [], "validation": []}
    for entry in REPLAYED:
        halves[half_of(BY_ID[entry["id"]]["source"])].append((entry, score(entry)))
    return halves


def _link(source: str) -> str:
    short = source.split("://", 1)[-1].removeprefix("github.com/").removeprefix("www.")
    return f"[{short}]({source})" + (" †" if source.split("#", 1)[0] in SEEN else "")


def section() -> str:
    halves = results()
    train = sum(e.get("kind") == "train" for e in REPLAYED)
    out = [f"{len(RECORDS)} records collected, {len(REPLAYED)} replayed ({len(REPLAYED) - train} serving, {train} "
           f"training); the other {len(NOT_REPLAYED)} have their reason in data/llm_outcomes/replay.json. "
           "† the thread is already among tests/llm_accuracy_cases.py or tests/training_accuracy_cases.py (the "
           "constants were checked against it before this set existed): calibration, whatever its hash."]
    for half in ("calibration", "validation"):
        out += ["", f"**{half.capitalize()}**", "", "| id | source | metric | published | ours | error | within? |",
                "|---|---|---|---|---|---|---|"]
        for entry, r in halves[half]:
            rec = BY_ID[entry["id"]]
            metric = rec["metric"] if entry.get("metric", rec["metric"]) == rec["metric"] or entry.get("kind") \
                else f"{rec['metric']} (as {entry['metric']})"
            out.append(f"| {entry['id']} | {_link(rec['source'])} | {metric} | {_fmt(r['published'])} | "
                       f"{_fmt(r['ours'])} | {r['error']:+.1%} | {'yes' if r['ok'] else '**no**'} "
                       f"(±{r['tol']:.0%}) |")
    cal, val = halves["calibration"], halves["validation"]
    out += ["", f"Calibration: {sum(r['ok'] for _, r in cal)} of {len(cal)} within tolerance; "
                f"validation: {sum(r['ok'] for _, r in val)} of {len(val)}"]
    return "\n".join(out)


def test_every_record_replayed_or_explained():
    ids = [r["id"] for r in RECORDS]
    assert len(ids) == len(set(ids)), "duplicate ids in collect.jsonl"
    replayed = [e["id"] for e in REPLAYED]
    assert len(replayed) == len(set(replayed)), "an id replayed twice"
    assert set(replayed) <= set(ids), set(replayed) - set(ids)
    assert set(NOT_REPLAYED) <= set(ids), set(NOT_REPLAYED) - set(ids)
    assert not set(replayed) & set(NOT_REPLAYED), set(replayed) & set(NOT_REPLAYED)
    missing = set(ids) - set(replayed) - set(NOT_REPLAYED)
    assert not missing, f"neither replayed nor explained: {sorted(missing)}"
    assert all(isinstance(v, str) and v.strip() for v in NOT_REPLAYED.values())


def test_replays_are_sourced():
    sources = {r["source"] for r in RECORDS}
    for e in REPLAYED:
        assert BY_ID[e["id"]]["source"] in sources
        if isinstance(e["model"], dict) and e.get("kind") != "train":
            assert e["model"].get("config_source", "").startswith("https://"), e["id"]
        if e.get("kind") == "train":
            assert e["model"] in training_accuracy_cases.MODELS, e["id"]


def test_doc_section_is_current():
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "evidence markers missing from docs/accuracy-llm.md"
    assert "\n" + section() + "\n" in text, "run: python tests/test_llm_evidence.py --write"


def test_validation_floor():
    val = results()["validation"]
    ok = sum(r["ok"] for _, r in val)
    assert ok >= VALIDATION_FLOOR, f"validation {ok} of {len(val)} within tolerance, was {VALIDATION_FLOOR}"


def write() -> None:
    text = DOC.read_text(encoding="utf-8")
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:a] + "\n" + section() + "\n" + text[b:], encoding="utf-8")


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
    print(section())
