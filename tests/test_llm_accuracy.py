"""`vram-budget llm` against published engine logs (tests/llm_accuracy_cases.py): each case within its
tolerance (weights 3 %, the rest 10 %) unless marked as a known miss with its reason, and at least 90 %
of all cases within tolerance (known misses count as misses). ``python tests/test_llm_accuracy.py
--write`` regenerates the table in docs/accuracy-llm.md."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_accuracy_cases import CASES, GIB, MIB  # noqa: E402

from vram_budget.nodes.estimator import llm  # noqa: E402
from vram_budget.nodes.estimator.llm import serve as llm_serve  # noqa: E402
from vram_budget.nodes.estimator.machine.gpus import DRIVER_RESERVED, Card, find_card  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "accuracy-llm.md"
PASS_RATE = 0.90


def _model(case):
    m = case["model"]
    return llm.config_from_hf(m, case["id"], "test case") if isinstance(m, dict) else llm.load_model(m)


def _plan(case, cfg):
    card = find_card(case["card"]) if case.get("card") else None
    free = [int(g * GIB) for g in case["free_gib"]] if case.get("free_gib") else None
    if free and card is None:
        card = Card(f"{case['free_gib'][0]:g} GiB free", case["free_gib"][0] + DRIVER_RESERVED / GIB, True)
    return llm.serve_plan(cfg, case.get("context"), weights=case.get("weights", "16bit"), engine=case["engine"],
                          gpus=case.get("gpus", len(free) if free else 1), card=card,
                          utilization=case.get("utilization"), vllm_version=case.get("vllm_version"),
                          free_bytes=free, ollama_version=case.get("ollama_version"),
                          fit_max_num_seqs=False)  # a log ran vLLM's defaults


def ours(case) -> float:
    cfg = _model(case)
    metric = case["metric"]
    if metric == "tokens_from_gib":
        per = llm_serve._vllm_token_bytes(cfg, "fp16", case.get("gpus", 1)) * 16
        return int(case["kv_gib"] * GIB) // per * 16
    layout = llm.weights_layout(cfg, case.get("weights", "16bit"), case["engine"])
    if metric == "weights_gib":
        return layout.total / case.get("gpus", 1) / GIB
    if metric == "weights_mib":
        return layout.total / MIB
    if metric == "ngl_gpu_mib":
        return sum(layout.layers[cfg.layers - case["ngl"]:]) / MIB
    p = _plan(case, cfg)
    o = p.ollama or {}
    r = p.vllm_reserve or {}
    per_token = llm_serve._vllm_token_bytes(cfg, p.kv_dtype, p.gpus) if p.engine == "vLLM" else 0
    if case.get("rank", 0) > 0 and p.engine == "vLLM" and not llm.vllm_rules(case.get("vllm_version")).v1:
        # V0 samples on rank 0 only: another rank's profile is the forward alone, its pool larger by the sampler's
        extra = r.get("sampler_bytes", 0)
        if metric == "activation_gib":
            return r.get("activation_bytes", 0) / GIB
        if metric == "kv_pool_gib":
            return (p.kv_cache_tokens * per_token + extra) / GIB
    return {
        "kv_tokens": lambda: p.kv_cache_tokens,
        "concurrency": lambda: p.max_concurrency,
        "kv_pool_gib": lambda: p.kv_cache_tokens * per_token / GIB,
        "cuda_graph_gib": lambda: r.get("cuda_graph_bytes", 0) / GIB,
        "activation_gib": lambda: (r.get("activation_bytes", 0) + r.get("sampler_bytes", 0)) / GIB,
        "ollama_layers": lambda: o["layers_offload"],
        "ollama_kv_mib": lambda: o["kv_bytes"] / MIB,
        "ollama_graph_full_mib": lambda: o["graph_full_bytes"] / MIB,
        "ollama_graph_partial_gib": lambda: o["graph_partial_bytes"] / GIB,
        "ollama_weights_gib": lambda: (o["weights_repeating"] + o["weights_nonrepeating"]) / GIB,
        "ollama_nonrepeating_mib": lambda: o["weights_nonrepeating"] / MIB,
        "ollama_repeating_gib": lambda: o["weights_repeating"] / GIB,
        "ollama_alloc_gib": lambda: max(o["allocations"]) / GIB,
        "ollama_required_full_gib": lambda: o["required_full"] / GIB,
    }[metric]()


def tolerance(case) -> float:
    return case.get("tol", 0.03 if case["metric"].startswith("weights") else 0.10)


def error(value, case) -> float | None:
    return None if value is None else (value - case["published"]) / case["published"]


def within(value, case) -> bool:
    e = error(value, case)
    return e is not None and abs(e) <= tolerance(case) + 1e-9


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case):
    got = ours(case)
    if case.get("known_miss"):
        assert not within(got, case), f"{case['id']} now passes: remove known_miss"
        pytest.xfail(case["known_miss"])
    assert within(got, case), f"{case['id']}: ours {got:.4g}, published {case['published']} ({case['label']})"


def test_cases_are_sourced_and_enough():
    assert len(CASES) >= 18
    assert len({c["id"] for c in CASES}) == len(CASES)
    engines = {c["engine"] for c in CASES}
    assert engines == {"vllm", "llama.cpp", "ollama"}
    for c in CASES:
        assert c["source"].startswith("https://github.com/") and c["label"], c["id"]


def test_pass_rate():
    hits = [within(ours(c), c) and not c.get("known_miss") for c in CASES]
    assert sum(hits) / len(hits) >= PASS_RATE, f"{sum(hits)} of {len(hits)} within tolerance"


def test_doc_table_is_current():
    if not DOC.is_file():
        pytest.skip("docs/accuracy-llm.md not written")
    assert table() in DOC.read_text(), "run: python tests/test_llm_accuracy.py --write"


def _fmt(v) -> str:
    return "—" if v is None else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def table() -> str:
    rows = ["| case | source | published | ours | error | tol | before | before error |",
            "|---|---|---|---|---|---|---|---|"]
    after = before = 0
    for c in CASES:
        v = ours(c)
        ok = within(v, c) and not c.get("known_miss")
        b = c.get("before")
        after += ok
        before += within(b, c)
        e, be = error(v, c), error(b, c)
        mark = "" if ok else (" (known miss)" if c.get("known_miss") else " **miss**")
        rows.append(f"| {c['id']}: {c['label']} | [{c['source'].split('github.com/')[1]}]({c['source']}) | "
                    f"{_fmt(c['published'])} | {_fmt(v)} | {e:+.1%}{mark} | {tolerance(c):.0%} | {_fmt(b)} | "
                    f"{'—' if be is None else f'{be:+.1%}'} |")
    rows.append("")
    rows.append(f"Within tolerance: **{after} of {len(CASES)}** now (known misses count as misses); "
                f"{before} of {len(CASES)} before issue 23 (a figure the pack did not print counts as a miss).")
    return "\n".join(rows)


BEGIN, END = "<!-- table: tests/test_llm_accuracy.py -->", "<!-- end table -->"


def write() -> None:
    text = DOC.read_text() if DOC.is_file() else f"{BEGIN}\n{END}\n"
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:a] + "\n" + table() + "\n" + text[b:])


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
    print(table())
