"""The pack's nodes on hostile inputs, inside a real ComfyUI (issue 37): a VRAM Budget node or a Wan Planner
given any value a linked input can carry (ComfyUI does not range-check linked values: NaN, infinities, 10^18,
negatives, strings, lists, None) answers, or refuses with the pack's own error naming the input, each call in
bounded time, and ComfyUI's process memory does not run away. The inputs are generated with hypothesis
(derandomized, so CI repeats the same cases) in this process and run in one ComfyUI subprocess."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.comfy
REPO = Path(__file__).resolve().parents[2]
FLUX = json.loads((REPO / "example_workflows" / "flux_dev_1024.json").read_text())

ODD = st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**20, max_value=10**20),
                st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                st.sampled_from([10**18, -1, 0, 1e308, float("nan"), float("inf"), "4090", [1, 2], {"a": 1}]))
CARDS = st.one_of(st.sampled_from(["this GPU (detected)", "RTX 4090", "RTX 3060", "H100"]), st.text(max_size=30), ODD)
BUDGET_INPUTS = st.fixed_dictionaries({}, optional={
    "gpu": CARDS, "vram_budget_gb": ODD, "stop_if_wont_fit": ODD, "memory_mode": st.one_of(
        st.sampled_from(["auto", "classic", "dynamic"]), ODD), "stop_if_slower_than": ODD, "ram_budget_gb": ODD})
PLANNER_INPUTS = st.fixed_dictionaries({
    "variant": st.one_of(st.sampled_from(["Wan 2.1 14B", "Wan 2.2 5B", "Wan 2.1 1.3B"]), st.text(max_size=12)),
    "precision": st.one_of(st.sampled_from(["fp16", "fp8", "GGUF Q4_K_M"]), st.text(max_size=8)),
    "width": st.one_of(st.integers(16, 2048), ODD), "height": st.one_of(st.integers(16, 2048), ODD),
    "length": st.one_of(st.integers(1, 400), ODD), "seconds": st.one_of(st.just(0.0), ODD),
    "keep": st.one_of(st.sampled_from(["frames", "resolution", "balanced"]), ODD),
    "vram_budget_gb": st.one_of(st.just(24.0), ODD)}, optional={"cfg": ODD, "gpu": CARDS})


@settings(max_examples=1, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(budget=st.lists(BUDGET_INPUTS, min_size=30, max_size=30), planner=st.lists(PLANNER_INPUTS, min_size=30,
                                                                                  max_size=30))
def test_the_nodes_answer_or_refuse_any_linked_value_in_bounded_time(run_in_comfy, budget, planner):
    out = run_in_comfy(
        f"""
        import json, time, resource
        import comfy.model_management
        budget_mod = sys.modules[PACK.__name__ + ".nodes.budget_node"]
        planner_mod = sys.modules[PACK.__name__ + ".nodes.wan_planner"]
        errors_mod = sys.modules[PACK.__name__ + ".nodes.estimator.errors"]
        wf = json.loads({json.dumps(json.dumps(FLUX))})
        cases = json.loads({json.dumps(json.dumps({"budget": budget, "planner": planner}, default=str))})
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        res = []
        for kind, cls, items in (("budget", budget_mod.VRAMBudget, cases["budget"]),
                                 ("planner", planner_mod.WanPlanner, cases["planner"])):
            for kw in items:
                t0 = time.perf_counter()
                try:
                    if kind == "budget":
                        out = cls().run(extra_pnginfo={{"workflow": wf}}, **kw)
                    else:
                        out = cls().run(**kw)
                    what = "answer" if isinstance(out, dict) and "ui" in out else "odd:" + type(out).__name__
                except errors_mod.VramBudgetError as exc:
                    what = "refused" if str(exc).strip() else "empty error"
                except comfy.model_management.InterruptProcessingException:
                    what = "stopped"  # stop_if_wont_fit: the pack's stop is ComfyUI's interrupt
                except Exception as exc:  # anything else is a crash the user would see as a traceback
                    what = f"crash:{{type(exc).__name__}}:{{str(exc)[:200]}}"
                res.append([kind, what, time.perf_counter() - t0, repr(kw)[:200]])
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({{"res": res, "rss_growth_kib": rss1 - rss0}}))
        """,
        timeout=600,
    )
    res = out["res"]
    assert len(res) == 60
    bad = [r for r in res if r[1] not in ("answer", "refused", "stopped")]
    assert not bad, bad[:5]
    slow = [r for r in res if r[2] > 20]
    assert not slow, slow[:5]
    assert sum(r[1] == "answer" for r in res if r[0] == "budget") >= 1  # not every case refused
    assert out["rss_growth_kib"] < 2 * 1024 * 1024, out["rss_growth_kib"]  # under 2 GiB: nothing runs away
