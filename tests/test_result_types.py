"""Issue 34: the result types split. budget.assess answers the verdict alone (Budget); planning.estimate wraps that
verdict in what the planning layer adds (Estimate: fixes, cards, capacity, risk, evidence), and the --json record
is one, each field in its place."""
from __future__ import annotations

import dataclasses
import copy

from vram_budget.nodes.estimator.plan.budget import Budget, assess
from vram_budget.nodes.estimator.plan.planning import Estimate, estimate
from test_budget import dev, flux_workload

PLANNED = {"remedies", "plan", "cheapest_card", "cheapest_card_with_margin", "capacity", "placement_plan", "oom_risk",
           "evidence", "known_regressions"}


def test_the_verdict_has_no_planning_fields_and_the_estimate_holds_them():
    fields = {f.name for f in dataclasses.fields(Budget)}
    assert not fields & PLANNED
    assert {f.name for f in dataclasses.fields(Estimate)} == PLANNED | {"budget"}


def test_estimate_wraps_the_verdict_assess_gives():
    wl, card = flux_workload(), dev("RTX 4070")
    alone, planned = assess(wl, card), estimate(wl, card)
    assert isinstance(alone, Budget) and isinstance(planned, Estimate)
    assert planned.verdict == planned.budget.verdict == alone.verdict != "fits"
    assert planned.peak_bytes == alone.peak_bytes and planned.stages == alone.stages
    assert planned.remedies and planned.cheapest_card is not None  # the layer on top did its work
    record = planned.to_dict()
    assert record["remedies"] == [r.to_dict() for r in planned.remedies]
    assert record["cheapest_card"]["name"] == planned.cheapest_card.name
    bare = alone.to_dict()  # the verdict alone prints the planned fields empty, in the same places
    assert list(bare)[:len(list(record))] == [k for k in record if k in bare]
    assert bare["remedies"] == [] and bare["plan"] is None and bare["cheapest_card"] is None
    assert {k: v for k, v in record.items() if k not in PLANNED | {"assumptions"}} == \
        {k: v for k, v in bare.items() if k not in PLANNED | {"assumptions"}}
    # a changed verdict keeps its plan; copies (which probe attributes before __init__) work
    noted = planned.with_budget(notes=planned.notes + ("x",))
    assert noted.notes[-1] == "x" and noted.remedies == planned.remedies
    assert copy.copy(planned) == planned and copy.copy(planned).verdict == planned.verdict
