"""Every published case in docs/accuracy.md, pinned: our outcome and number for it, whether it
agrees, and that the doc is the one the cases generate (no hand-edited table)."""
from __future__ import annotations

from pathlib import Path

import pytest

import accuracy_cases as A

# case id -> (our prediction, agrees with the published outcome, number within tolerance or None)
PINNED = {
    "flux-fp8-3060-6008": ("runs_slower", True, True),
    "flux-te-fp8-3060-6008": ("runs_slower", True, True),
    "flux-fp8-3060-12334": ("runs_slower", True, None),
    "flux-fp8-4060laptop-4461": ("runs_slower", True, None),
    "flux-fp8-gtx1070-4271": ("runs_slower", True, None),
    "flux-fp16-2070s-gguf2": ("runs_slower", True, None),
    "schnell-q4-2060s-4461": ("runs_slower", True, None),
    "qwen-fp8-4090-11790": ("fits", True, True),
    "qwen-fp8-4090d-docs": ("fits", True, True),
    "qwen-b47-5090-10725": ("runs_slower", True, None),
    "flux-1600-5090-10737": ("batch:22", True, True),
    "wan22-14b-720p-12gb-kj1713": ("runs_slower", True, None),
    "wan22-funcontrol-4090d-docs": ("tight", True, False),
    "wan22-funcamera-4090d-docs": ("tight", True, False),
    "wan22-5b-8gb-docs": ("runs_slower", True, None),
    "wan22-t2v-5060ti-10771": ("runs_slower", False, None),
    "hunyuan-960x544x129-4090-hyvw189": ("fits", False, True),
}


@pytest.fixture(scope="module")
def results():
    return {r.case.id: r for r in (A.evaluate(c) for c in A.CASES)}


def test_every_case_is_pinned():
    assert set(PINNED) == {c.id for c in A.CASES}


@pytest.mark.parametrize("case_id", sorted(PINNED))
def test_case(results, case_id):
    r = results[case_id]
    assert (r.ours, r.agree, r.number_ok) == PINNED[case_id], r.detail


def test_outcomes_agree_on_nine_in_ten_independent_cases(results):
    s = A.summary(results.values())
    assert s["independent_agree"] / s["independent"] >= 0.9, s


def test_docs_accuracy_md_is_generated_from_the_cases(results):
    doc = Path(__file__).resolve().parents[1] / "docs" / "accuracy.md"
    ordered = [results[c.id] for c in A.CASES]
    assert doc.read_text(encoding="utf-8") == A.markdown(ordered), "run: python3 bench/accuracy_table.py"
