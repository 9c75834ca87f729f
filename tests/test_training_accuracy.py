"""`vram-budget train` against published training-memory measurements (tests/training_accuracy_cases.py).

Every case is evaluated; a case within its tolerance passes, a miss fails unless it is listed in
KNOWN_MISSES with its reason (counted as a miss all the same); the pass rate must be >= 90 %.
``python tests/test_training_accuracy.py`` prints the table of docs/accuracy-training.md.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import training_accuracy_cases as C  # noqa: E402
from vram_budget.nodes.estimator import llm  # noqa: E402
from vram_budget.nodes.estimator.llm import training as T  # noqa: E402
from vram_budget.nodes.estimator.models.published import catalogue_info  # noqa: E402
from vram_budget.nodes.estimator.units import GB, GiB  # noqa: E402

CONTEXT = GB  # CUDA context + allocator cache for figures read off the device ("device", max_seq)
KNOWN_MISSES = {
    "litgpt-hub-tinyllama-lora": "LitGPT's fused qkv adapter has one dropout for q, k and v (litgpt/lora.py "
                                 "LoRAQKVLinear) where PEFT has three, which we count; its head adapter is not "
                                 "modelled. Counting one dropout for LitGPT would fix this row but take the resource "
                                 "tables' QLoRA rows (q,v: also one dropout) to -10 to -11 %",
}


def model_config(key: str) -> llm.LlmConfig:
    m = C.MODELS[key]
    return llm.config_from_hf(m["config"], key, C.HF.format(m["repo"]))


def setup_of(case: dict, **over) -> T.TrainSetup:
    fields = set(T.TrainSetup.__dataclass_fields__)
    kw = {k: v for k, v in case.items() if k in fields}
    if kw.get("rank") == 0:
        kw["rank"] = 16
    return T.TrainSetup(**{**kw, **over})


def evaluate(case: dict) -> dict:
    """{'ours', 'published', 'error', 'ok', 'unit'}: a peak in GB, or for max_seq our longest sequence, with
    the error taken on memory (our peak at the published sequence + 1 GB against the card's GiB)."""
    tol = case.get("tol", 0.10)
    if case.get("kind") == "diffusion":
        b = T.diffusion_lora_budget(catalogue_info(case["model"]), **case["diffusion"])
        ours = (b.peak + (CONTEXT if case["measure"] == "device" else 0)) / GB
        err = ours / case["published_gb"] - 1
        return dict(ours=ours, published=case["published_gb"], error=err, unit="GB",
                    ok=abs(err) <= tol + case.get("round_gb", 0) / case["published_gb"])
    cfg = model_config(case["model"])
    if case.get("kind") == "max_seq":
        cap = case["vram_gb"] * GiB
        ours_seq = T.largest_that_fits(lambda q: T.llm_training(cfg, setup_of(case, seq=q)).peak + CONTEXT, cap,
                                       1 << 22)
        at_pub = T.llm_training(cfg, setup_of(case, seq=case["published_seq"])).peak + CONTEXT
        err = at_pub / cap - 1
        return dict(ours=ours_seq, published=case["published_seq"], error=err, ok=abs(err) <= tol, unit="tokens",
                    seq_error=ours_seq / case["published_seq"] - 1, at_published=at_pub)
    b = T.llm_training(cfg, setup_of(case))
    ours = (b.peak + (CONTEXT if case["measure"] == "device" else 0)) / GB
    pub = case["published_gb"]
    err = ours / pub - 1
    return dict(ours=ours, published=pub, error=err, ok=abs(err) <= tol + case.get("round_gb", 0) / pub, unit="GB")


RESULTS = {c["id"]: evaluate(c) for c in C.CASES}


def test_enough_cases_with_sources():
    assert len(C.CASES) >= 12 and len({c["id"] for c in C.CASES}) == len(C.CASES)
    for c in C.CASES:
        assert c["source"].startswith("https://") and c["setup"], c["id"]
    assert set(KNOWN_MISSES) <= set(RESULTS)


# Issue 23 asks for 90 %: 33 of 34 since the config hub's QLoRA rows were explained (LitGPT keeps the last
# step's graph, and bitsandbytes < 0.43.2 its 4-bit inputs, through the next forward; Lightning quantises the
# head too, via FP16). The one miss is in KNOWN_MISSES.
MIN_PASS_RATE = 0.90


def test_pass_rate():
    ok = sum(r["ok"] for r in RESULTS.values())
    assert ok / len(RESULTS) >= MIN_PASS_RATE, f"{ok} of {len(RESULTS)}"


@pytest.mark.parametrize("case", C.CASES, ids=[c["id"] for c in C.CASES])
def test_case(case):
    r = RESULTS[case["id"]]
    if case["id"] in KNOWN_MISSES:
        assert not r["ok"], f"{case['id']} now passes: drop it from KNOWN_MISSES"
        pytest.xfail(KNOWN_MISSES[case["id"]])
    assert r["ok"], f"{case['id']}: ours {r['ours']:.2f} vs published {r['published']} ({r['error']:+.1%})"


def table() -> str:
    rows = ["| case | source | setup | published | ours | error |", "|---|---|---|---|---|---|"]
    for c in C.CASES:
        r = RESULTS[c["id"]]
        if r["unit"] == "tokens":
            pub = f"{r['published']:,} tokens on {c['vram_gb']} GB"
            ours = f"{r['ours']:,} tokens ({r['at_published'] / GB:.1f} GB at {r['published']:,})"
            err = f"{r['error']:+.1%} (memory), {r['seq_error']:+.1%} (tokens)"
        else:
            pub, ours, err = f"{r['published']:.2f} GB", f"{r['ours']:.2f} GB", f"{r['error']:+.1%}"
        mark = "" if r["ok"] else (" (known miss)" if c["id"] in KNOWN_MISSES else " (MISS)")
        rows.append(f"| {c['id']}{mark} | [{c['source'].split('/')[2]}]({c['source']}) | {c['setup']}; "
                    f"{c.get('method', 'qlora')}, batch {c['batch']}" + (f", {c['seq']} tokens" if 'seq' in c else "") +
                    f" | {pub} | {ours} | {err} |")
    ok = sum(r["ok"] for r in RESULTS.values())
    rows.append(f"\n{ok} of {len(RESULTS)} within tolerance ({ok / len(RESULTS):.0%}).")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
