"""Replay the published speed figures (data/speed/speed.jsonl) through the estimator and compare the published
seconds per sampling step with ours (runtime.StageRun.step_seconds of the sampling stages).

Each record is one published figure: a card, a pipeline, a size, and either a per-step time (tqdm's s/it, or 1 / it/s)
or a whole-prompt time. It is re-run exactly like an outcome record (evidence_replay.replay: the record's workflow
built from ComfyUI's own nodes or the WanVideoWrapper recipe, its card, RAM, OS, flags and ComfyUI era), then the
command line's estimate gives every sampling stage's predicted step time. ratio = published / ours (> 1: slower
than predicted).

Records fall in groups (one each, first that applies):
  unscored  - not replayable, or the size is not stated ("size_source": "unknown"), or the estimate has no step time
  speedup   - TeaCache / WaveSpeed / SageAttention / torch.compile / fp16 accumulation / --fast in "flags":
              the estimator prices none of them; reported apart, never fitted
  total     - only a whole-prompt time (loads / text encode / decode not separable): published total / our sampling
              total, an upper bound of the step ratio; reported apart
  assumed   - a per-step figure whose size or frames are the official template's by assumption ("size_source":
              "assumed"); scored in the second table only, and not at all when the assumed size would put the
              published step above 100 % of the card's catalogue TFLOPS (ratio < MFU_TRANSFORMER)
  clean     - a per-step figure with card, model and size stated (or "the official workflow" named): the fit set

Calibration / validation: evidence.split_of(source), the same hash split as the outcome records. The range is the
10th-90th percentile of ratio on the calibration half of `clean`; the validation score is how many validation
ratios fall inside it.

    python3 bench/speed_evidence.py            # per-record table and both halves' statistics
    python3 bench/speed_evidence.py --json     # the same as JSON
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEED_FILE = REPO / "data" / "speed" / "speed.jsonl"

from vram_budget.nodes.estimator.cli import evidence_replay as ER  # noqa: E402
from vram_budget.nodes.estimator.errors import VramBudgetError  # noqa: E402
from vram_budget.nodes.estimator.plan.evidence import split_of  # noqa: E402
from vram_budget.nodes.estimator.machine.gpus import PCIE, find_card  # noqa: E402
from vram_budget.nodes.estimator.machine.runtime import MFU_TRANSFORMER  # noqa: E402
from vram_budget.nodes.estimator.workload import SAMPLE  # noqa: E402



REQUIRED = ("id", "source", "gpu", "pipeline", "quote")
# what the estimator does not price: a record carrying one of these is reported apart, never fitted
SPEEDUPS = ("teacache", "wavespeed", "sage", "torch.compile", "fp16-accumulation", "--fast", "magcache", "tensorrt")
# host links beside gpus.PCIE (a card in a narrower slot than its own)
EXTRA_LINKS = {"5.0x4": PCIE["4.0x8"], "4.0x4": PCIE["4.0x8"] / 2, "3.0x4": PCIE["3.0x16"] / 4}


def load(path: Path = SPEED_FILE) -> list[dict]:
    recs, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        rec = json.loads(line)
        missing = [k for k in REQUIRED if not rec.get(k)]
        if missing:
            raise SystemExit(f"{path.name}:{n}: missing {', '.join(missing)}")
        if rec.get("published_s_per_step") is None and rec.get("published_s_total") is None:
            raise SystemExit(f"{path.name}:{n}: neither published_s_per_step nor published_s_total")
        if rec["id"] in seen:
            raise SystemExit(f"{path.name}:{n}: id {rec['id']} used twice")
        seen.add(rec["id"])
        recs.append(rec)
    return recs


def speedups(rec: dict) -> list[str]:
    flags = " ".join(rec.get("flags") or []).lower() + " " + str(rec.get("attention") or "").lower()
    return [s for s in SPEEDUPS if s in flags]


def card_info(rec: dict) -> tuple[str, str]:
    """(vendor, arch) of the record's card, ('?', '?') when the catalogue does not know it."""
    try:
        card = find_card(rec["gpu"], nominal_gb=rec.get("vram_gib"))
    except VramBudgetError:
        return "?", "?"
    return card.vendor, card.arch


UNETS = ("sd15", "sdxl")


def arch_class(vendor: str, arch: str) -> str:
    """The classes a range could be keyed on: NVIDIA with tensor cores, Pascal / GTX 16, AMD, other."""
    if vendor == "NVIDIA":
        return "nvidia-old" if arch in ("pascal", "turing16") else "nvidia"
    return "amd" if vendor == "AMD" else "other"


def estimate(rec: dict):
    """(budget, replay) for one record, or (None, replay) with replay.why saying why not: evidence_replay's own
    replay, with the record's host link ("pcie") when it states a narrower one."""
    r = ER.replay(rec)
    if not r.replayable:
        return None, r
    link = rec.get("pcie")
    change = None
    if link:
        def change(device):
            return replace(device, host_bytes_per_s=PCIE.get(link) or EXTRA_LINKS[link])
        r.assumed.append(f"host link PCIe {link} as stated")
    out = ER.estimate_replay(r, change)
    return (out[0] if out else None), r


def sampling(budget) -> dict | None:
    """Our sampling: mean seconds per step over the sampling stages (weighted by their steps), their total, and
    what bounds the slowest (compute or ram); None when a sampling stage has no step time."""
    steps = total = 0.0
    bound, streamed, slowest = "compute", 0, -1.0
    for sb, run in zip(budget.stages, budget.runs):
        if sb.stage.kind != SAMPLE:
            continue
        if run is None or run.step_seconds is None:
            return None
        n = sb.stage.steps or 20
        steps += n
        total += run.step_seconds * n
        streamed = max(streamed, run.streamed_bytes)
        if run.step_seconds > slowest:
            slowest = run.step_seconds
            bound = "ram" if run.streamed_bytes and run.slowdown > 1.0 else "compute"
    if not steps:
        return None
    return {"step_s": total / steps, "total_s": total, "steps": steps, "bound": bound,
            "streamed_gib": round(streamed / 2**30, 1), "verdict": budget.verdict}


def judge(rec: dict) -> dict:
    vendor, arch = card_info(rec)
    out = {"id": rec["id"], "split": split_of(rec["source"]), "gpu": rec["gpu"], "pipeline": rec["pipeline"],
           "vendor": vendor, "arch": arch, "class": arch_class(vendor, arch), "speedups": speedups(rec),
           "gguf": str(rec.get("precision") or "").startswith("gguf"),
           "size": "x".join(str(v) for v in (rec.get("width"), rec.get("height"), rec.get("frames")) if v),
           "published_step": rec.get("published_s_per_step"), "published_total": rec.get("published_s_total"),
           "ours_step": None, "ours_total": None, "ratio": None, "bound": "", "streamed_gib": 0.0, "why": ""}
    budget, r = estimate(rec)
    s = sampling(budget) if budget is not None else None
    if s is None:
        out["group"] = "unscored"
        out["why"] = (r.why or "no predicted step time (an OOM verdict or an unknown stage)")[:120]
        return out
    out.update(ours_step=s["step_s"], ours_total=s["total_s"], bound=s["bound"], streamed_gib=s["streamed_gib"],
               verdict=s["verdict"])
    if rec.get("size_source") == "unknown":
        out["group"], out["why"] = "unscored", "size not stated (replayed at an assumed size, not scored)"
    elif out["speedups"]:
        out["group"] = "speedup"
    elif rec.get("published_s_per_step") is None:
        out["group"] = "total"
    elif rec.get("size_source") == "assumed":
        out["group"] = "assumed"
    else:
        out["group"] = "clean"
    if rec.get("published_s_per_step") is not None:
        out["ratio"] = rec["published_s_per_step"] / s["step_s"]
    elif rec.get("published_s_total") is not None and s["total_s"] > 0:
        out["ratio"] = rec["published_s_total"] / s["total_s"]
    # ratio < MFU: the published step would run above 100 % of the card's catalogue TFLOPS at our FLOP count. For a
    # size we assumed, that says the assumption is wrong (a smaller run), not the model: not scored.
    if out["group"] == "assumed" and out["ratio"] is not None and out["ratio"] < MFU_TRANSFORMER:
        out["group"] = "unscored"
        out["why"] = "assumed size contradicted: it would run above 100 % of the card's catalogue TFLOPS"
    return out


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": statistics.median(values), "p10": percentile(values, 0.10),
            "p90": percentile(values, 0.90), "min": min(values), "max": max(values),
            "geo_mean": math.exp(statistics.fmean(math.log(v) for v in values))}


def halves(rows: list[dict]) -> dict:
    cal = [r["ratio"] for r in rows if r["split"] == "calibration"]
    val = [r["ratio"] for r in rows if r["split"] == "validation"]
    sc, sv = stats(cal), stats(val)
    inside = None
    if sc["n"] and sv["n"]:
        inside = sum(sc["p10"] <= v <= sc["p90"] for v in val)
    return {"calibration": sc, "validation": sv, "validation_inside_cal_range": inside}


def _f(x, nd=2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def print_table(rows: list[dict]) -> None:
    print(f"{'id':58} {'half':4} {'group':8} {'gpu':16} {'pipeline':15} {'size':13} "
          f"{'pub s/it':>9} {'our s/it':>9} {'ratio':>6} bound")
    for r in rows:
        pub = r["published_step"] if r["published_step"] is not None else r["published_total"]
        ours = r["ours_step"] if r["published_step"] is not None else r["ours_total"]
        tag = "" if r["published_step"] is not None else " (total)"
        extra = r["why"] or ("+".join(r["speedups"]) if r["speedups"] else "")
        if r["streamed_gib"]:
            extra = (extra + f" streamed {r['streamed_gib']} GiB").strip()
        print(f"{r['id'][:58]:58} {r['split'][:4]:4} {r['group']:8} {r['gpu'][:16]:16} {r['pipeline'][:15]:15} "
              f"{r['size'][:13]:13} {_f(pub):>9} {_f(ours):>9} {_f(r['ratio']):>6} {r['bound']:7} {extra}{tag}")


def print_halves(title: str, h: dict) -> None:
    print(f"\n{title}")
    for half in ("calibration", "validation"):
        s = h[half]
        if not s["n"]:
            print(f"  {half:11}: n=0")
            continue
        print(f"  {half:11}: n={s['n']:2}  median {s['median']:.2f}  p10 {s['p10']:.2f}  p90 {s['p90']:.2f}  "
              f"(min {s['min']:.2f}, max {s['max']:.2f}, geo-mean {s['geo_mean']:.2f})")
    if h["validation_inside_cal_range"] is not None:
        c = h["calibration"]
        print(f"  validation inside the calibration range [{c['p10']:.2f}, {c['p90']:.2f}]: "
              f"{h['validation_inside_cal_range']} of {h['validation']['n']}")


def vendor_ranges(clean: list[dict]) -> dict:
    """The range speed.RANGES quotes a run's time in, per card maker: the 10th-90th percentile of published / ours
    on the calibration half of `clean`; and how many validation ratios of that maker fall inside it."""
    out = {}
    for vendor in ("NVIDIA", "AMD"):
        cal = [r["ratio"] for r in clean if r["split"] == "calibration" and r["vendor"] == vendor]
        val = [r["ratio"] for r in clean if r["split"] == "validation" and r["vendor"] == vendor]
        lo, hi = round(percentile(cal, 0.10), 2), round(percentile(cal, 0.90), 2)
        out[vendor] = {"n_calibration": len(cal), "p10": lo, "p90": hi, "n_validation": len(val),
                       "validation_inside": sum(lo <= v <= hi for v in val)}
    return out


def by_class(rows: list[dict]) -> dict:
    out = {}
    for key in sorted({r["class"] for r in rows}):
        out[key] = stats([r["ratio"] for r in rows if r["class"] == key])
    for label, pick in (("unet (sd15 / sdxl)", lambda r: r["pipeline"] in UNETS),
                        ("dit (flux, wan, ltx, qwen ...)", lambda r: r["pipeline"] not in UNETS),
                        ("nvidia dit", lambda r: r["class"] == "nvidia" and r["pipeline"] not in UNETS),
                        ("nvidia unet", lambda r: r["class"] == "nvidia" and r["pipeline"] in UNETS),
                        ("amd dit", lambda r: r["class"] == "amd" and r["pipeline"] not in UNETS),
                        ("amd unet", lambda r: r["class"] == "amd" and r["pipeline"] in UNETS),
                        ("streamed (ram-bound)", lambda r: r["bound"] == "ram"),
                        ("resident (compute-bound)", lambda r: r["bound"] == "compute"),
                        ("gguf", lambda r: r["gguf"])):
        out[label] = stats([r["ratio"] for r in rows if pick(r)])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--file", type=Path, default=SPEED_FILE)
    args = ap.parse_args(argv)
    rows = [judge(r) for r in load(args.file)]
    scored = [r for r in rows if r["ratio"] is not None]
    clean = [r for r in scored if r["group"] == "clean"]
    clean_assumed = [r for r in scored if r["group"] in ("clean", "assumed")]
    result = {
        "records": len(rows),
        "groups": {g: sum(r["group"] == g for r in rows) for g in ("clean", "assumed", "speedup", "total", "unscored")},
        "clean": halves(clean),
        "clean_and_assumed": halves(clean_assumed),
        "speedup": stats([r["ratio"] for r in scored if r["group"] == "speedup"]),
        "total": stats([r["ratio"] for r in scored if r["group"] == "total"]),
        "by_class_clean_and_assumed": by_class(clean_assumed),
        "vendor_ranges": vendor_ranges(clean),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(result, indent=1, default=str))
        return 0
    print_table(rows)
    print(f"\n{len(rows)} records: " + ", ".join(f"{g} {n}" for g, n in result["groups"].items()))
    print("ratio = published / ours (> 1: slower than predicted)")
    print_halves("clean (card, model and size stated; per-step figure; no speed-ups):", result["clean"])
    print_halves("clean + assumed (template size assumed where not stated):", result["clean_and_assumed"])
    for g in ("speedup", "total"):
        s = result[g]
        if s["n"]:
            print(f"\n{g:8} (apart, never fitted): n={s['n']}  median {s['median']:.2f}  "
                  f"p10 {s['p10']:.2f}  p90 {s['p90']:.2f}")
    print("\nthe range a run's time is quoted in (speed.RANGES), per maker: calibration p10-p90 of clean, validation inside:")
    for vendor, v in result["vendor_ranges"].items():
        print(f"  {vendor:7} calibration n={v['n_calibration']:2}  [{v['p10']:.2f}, {v['p90']:.2f}]   validation "
              f"{v['validation_inside']} of {v['n_validation']} inside")
    print("\nclean + assumed, both halves, by class (for a per-class factor):")
    for key, s in result["by_class_clean_and_assumed"].items():
        if s["n"]:
            print(f"  {key:26} n={s['n']:2}  median {s['median']:.2f}  p10 {s['p10']:.2f}  p90 {s['p90']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
