"""What an architecture's allocator calibration (physics/memory.py: traced activations x this = the published peak)
would do on the CALIBRATION half of the evidence base, factor by factor: the OOMs it warns, the runs it flags, and
the records that change. With --era, also the traced working memory of ComfyUI's older model code for the release
the replay guesses from a record's date (physics/memory.era_factor, which the estimate uses only for a stated
release). A what-if: it patches the module's table and Device.known_versions in this process only. The validation
half is read only with --half validation, to report, never to choose.

    python3 bench/sweep_calibration.py --group wan --factors 1.0,1.3,1.6,2.0,2.4 --era
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from vram_budget.nodes.estimator.cli.evidence_replay import judge, score  # noqa: E402
from vram_budget.nodes.estimator.machine import device  # noqa: E402
from vram_budget.nodes.estimator.physics import memory  # noqa: E402
from vram_budget.nodes.estimator.plan import evidence  # noqa: E402


def sweep(group: str, factors, era: bool, half: str = "calibration"):
    """Yield (factor, era, Score, [(id, is_oom, warned before, warned now)]) against the shipped factors."""
    records = [r for r in evidence.outcomes() if evidence.split_of(r["source"]) == half]
    shipped_table, shipped_known = memory.ACTIVATION_CALIBRATION, device.Device.known_versions
    base = {r["id"]: judge(r) for r in records}
    try:
        for factor in factors:
            for with_era in ((False, True) if era else (False,)):
                memory.ACTIVATION_CALIBRATION = {**shipped_table, group: factor}
                device.Device.known_versions = (property(lambda self: dict(self.versions or ())) if with_era
                                                else shipped_known)
                judged = [judge(r) for r in records]
                moved = [(j.id, j.is_oom, base[j.id].warned, j.warned) for j in judged
                         if j.replayable and j.warned != base[j.id].warned]
                yield factor, with_era, score(judged), moved
    finally:
        memory.ACTIVATION_CALIBRATION, device.Device.known_versions = shipped_table, shipped_known


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", default="wan", help="the architecture group (memory.family_group), e.g. wan")
    ap.add_argument("--factors", default="1.0,1.3,1.6,2.0,2.4,3.0")
    ap.add_argument("--era", action="store_true", help="also with the era of the release guessed from the date")
    ap.add_argument("--half", default="calibration", choices=("calibration", "validation"))
    args = ap.parse_args()
    factors = [float(x) for x in args.factors.split(",") if x.strip()]
    shipped = memory.ACTIVATION_CALIBRATION.get(args.group, memory.DEFAULT_CALIBRATION)
    print(f"{args.half} half, group {args.group!r} (shipped factor {shipped:g})")
    for factor, with_era, s, moved in sweep(args.group, factors, args.era, args.half):
        print(f"x{factor:<4g} era {'on ' if with_era else 'off'}: OOMs warned {s.warned}/{s.ooms}, "
              f"runs without a false alarm {s.quiet}/{s.runs}; "
              f"+{sum(m[1] and m[3] for m in moved)} OOMs / +{sum(not m[1] and m[3] for m in moved)} runs flagged, "
              f"-{sum(m[1] and not m[3] for m in moved)} OOMs / -{sum(not m[1] and not m[3] for m in moved)} runs")
        for rid, is_oom, _, now in moved:
            print(f"      {'OOM' if is_oom else 'run'} {'now flagged' if now else 'no longer flagged'}: {rid}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
