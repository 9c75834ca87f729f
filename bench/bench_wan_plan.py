"""How fast the Wan planner answers (target: under 10 ms), and what it answers on the guide's cards.

Run: python3 bench/bench_wan_plan.py [--repeat N]

Prints, per case, the median / p90 wall time of one ``wan_plan.plan`` call (search + the options
that keep the target), the number of estimator calls it made, and the plan. The model infos are
resolved once (``model_spec`` is cached, as in the node); every plan call prices its candidates
afresh through ``planning.estimate``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

try:
    from vram_budget.nodes.estimator.plan import wan_plan as wp
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.units import fmt_gib
except ImportError:  # not pip-installed: run from the repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise

CASES = [  # (variant, precision, card, width, height, length)
    ("wan2.2-a14b", "fp16", "RTX 4090", 1280, 720, 81),
    ("wan2.2-a14b", "fp16", "RTX 5090", 1280, 720, 81),
    ("wan2.2-a14b", "fp16", "L40S", 1280, 720, 81),
    ("wan2.2-a14b", "fp8", "RTX 4090", 1280, 720, 81),
    ("wan2.1-14b", "GGUF Q4_K_S", "RTX 4070", 1280, 720, 81),
    ("wan2.1-1.3b", "fp16", "RTX 3060", 1280, 720, 161),
    ("wan2.2-ti2v-5b", "fp16", "RTX 4080", 1280, 704, 121),
]


def bench(repeat: int) -> None:
    print(f"{'case':<48} {'keep':<10} {'median':>8} {'p90':>8} {'priced':>6}  plan")
    all_medians = []
    for variant, precision, card_name, w, h, length in CASES:
        spec = wp.model_spec(variant, precision)
        device = Device.from_card(find_card(card_name))
        for keep in wp.KEEP_MODES:
            times = []
            result = None
            for _ in range(repeat):
                t0 = time.perf_counter()
                result = wp.plan(spec, device, w, h, length, keep)
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            med = statistics.median(times)
            p90 = times[int(0.9 * (len(times) - 1))]
            all_medians.append(med)
            assert result is not None
            out = f"{result.width}×{result.height}×{result.length}"
            out += (f" peak {fmt_gib(wp.need_bytes(result.budget))}" if result.fits
                    else f" (no fit; blocks_to_swap {result.blocks_to_swap})")
            label = f"{spec.label} {precision} on {card_name} {w}×{h}×{length}"
            print(f"{label:<48} {keep:<10} {med:7.2f}ms {p90:7.2f}ms {result.evaluations:>6}  {out}")
    print(f"\nmedian over all cases: {statistics.median(all_medians):.2f} ms; "
          f"slowest case median: {max(all_medians):.2f} ms (target < 10 ms)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    bench(ap.parse_args().repeat)
