"""Issue 35 offline: creep across runs (leaks.py) and the run tracker's baseline after each prompt. A node that
leaks on purpose on a real ComfyUI: tests/comfy/test_leaks_comfy.py."""
from __future__ import annotations

from vram_budget.nodes import leaks, run_log
from vram_budget.nodes.estimator.units import GiB, MiB


def _b(i: int, ram: int, vram=None, models: int = 1, packs=("ComfyUI-Leaky",)) -> leaks.Baseline:
    return leaks.Baseline(f"p{i}", ram, vram, models, tuple(packs))


def test_a_steady_creep_is_flagged_with_the_pack_and_the_fixes():
    w = leaks.LeakWatch()
    w.add(_b(-1, 3 * GiB, packs=()))  # a run before, without the pack, that kept nothing
    flags = [w.add(_b(i, 3 * GiB + (i + 1) * 800 * MiB, packs=("ComfyUI-Leaky", f"Other{i % 2}"))) for i in range(5)]
    assert flags[3] is not None and flags[3]["packs"] == ["ComfyUI-Leaky"]  # the window's runs that grew
    w = leaks.LeakWatch()
    flags = [w.add(_b(i, 3 * GiB + i * 800 * MiB, packs=("ComfyUI-Leaky", f"Other{i % 2}"))) for i in range(5)]
    assert flags[:4] == [None] * 4  # never before a full window
    f = flags[4]
    assert f["kind"] == "ram" and abs(f["per_run_bytes"] - 800 * MiB) < MiB and f["packs"] == ["ComfyUI-Leaky"]
    assert f["text"].startswith("RAM after each run grew 0.78 GiB a run over the last 5 runs")
    assert "ComfyUI-Leaky" in f["fixes"][0] and any("--cache-none" in x for x in f["fixes"])


def test_noise_a_one_off_load_and_a_fall_are_not_leaks():
    w = leaks.LeakWatch()
    for i, ram in enumerate([3000, 3040, 2990, 3030, 3010, 3045]):  # MiB: allocator noise
        assert w.add(_b(i, ram * MiB)) is None
    w = leaks.LeakWatch()
    for i, ram in enumerate([3000, 3000, 5000, 5000, 5000]):  # one step up (a cache filled once), then flat
        w.add(_b(i, ram * MiB))
    assert w.flag() is None
    w = leaks.LeakWatch()
    for i, ram in enumerate([3000, 3400, 2800, 3600, 2700]):  # up and down: not a creep
        w.add(_b(i, ram * MiB))
    assert w.flag() is None


def test_vram_creep_and_models_held():
    w = leaks.LeakWatch()
    for i in range(5):
        f = w.add(_b(i, 3 * GiB, vram=GiB + i * 300 * MiB, models=1 + i, packs=()))
    assert f["kind"] == "vram" and "VRAM after each run grew 0.29 GiB" in f["text"]
    assert "ComfyUI holds 4 more models than 5 runs ago" in f["text"] and f["packs"] == []


class _Probe:
    def reset(self):
        pass

    def read(self):
        return None


def test_the_tracker_records_baselines_and_the_flag():
    rams = iter(range(5))
    tracker = run_log.RunTracker(_Probe(), None, versions=lambda: None,
                                 baseline=lambda pid, prompt: _b(0, 2 * GiB + next(rams) * 500 * MiB))
    records = []
    for i in range(5):
        tracker.prompt_started(f"p{i}", {"1": {"class_type": "X", "inputs": {}}})
        records.append(tracker.prompt_ended(f"p{i}", None))
    assert all("baseline" in r for r in records) and "leak" not in records[3]
    assert records[4]["leak"]["kind"] == "ram" and tracker.leaks.state()["flag"] is not None
    broken = run_log.RunTracker(_Probe(), None, versions=lambda: None, baseline=lambda pid, prompt: 1 / 0)
    broken.prompt_started("x")
    assert "baseline" not in broken.prompt_ended("x", None)  # the record is kept without it
