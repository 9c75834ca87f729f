"""One figure for what the card keeps free (one clear answer): when ComfyUI splits the peak stage (cond and uncond in
turn, weights streamed), the verdict line, the risk's basis, --json `spare_bytes` and the panel's summary all give the
room left as it runs, never the all-at-once headroom (which can be negative on a run that fits)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workflows.corpus import community_dir

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = "kijai__ComfyUI-WanVideoWrapper__wanvideo_2_1_14B_I2V_InfiniteTalk_example_03.json"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", *args],
                          capture_output=True, text=True, timeout=300, check=True)


def _panel_summary(data: dict, tmp_path: Path) -> dict:
    """The panel's summary (web/vram_summary.js summarize) of a --json answer, run in node."""
    (tmp_path / "b.json").write_text(json.dumps(data))
    script = (f"import {{ summarize }} from {json.dumps((ROOT / 'web' / 'vram_summary.js').as_uri())};\n"
              "import { readFileSync } from 'node:fs';\n"
              f"const s = summarize(JSON.parse(readFileSync({json.dumps(str(tmp_path / 'b.json'))}, 'utf8')));\n"
              "console.log(JSON.stringify(s));\n")
    (tmp_path / "run.mjs").write_text(script)
    out = subprocess.run(["node", str(tmp_path / "run.mjs")], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def estimate():
    path = community_dir() / WORKFLOW
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout's corpus")
    data = json.loads(_cli(str(path), "--gpu", "RTX 4090", "--json").stdout)
    text = _cli(str(path), "--gpu", "RTX 4090").stdout
    return data, text


def test_a_split_peak_stage_has_one_spare_figure(estimate):
    data, text = estimate
    assert data["verdict"] in ("fits", "tight")
    run_peak = max(s["run"]["peak_bytes"] for s in data["stages"] if s.get("run"))
    assert data["headroom_bytes"] < 0 < data["spare_bytes"]  # all at once it would not fit; as it runs it does
    assert data["spare_bytes"] == data["device"]["capacity_bytes"] - run_peak
    gib = f"{data['spare_bytes'] / 2 ** 30:.2f} GiB"
    assert f"{gib} to spare" in text.splitlines()[1]
    assert f"the card keeps {gib} free at the peak" in data["oom_risk"]["basis"][0]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the panel's summary is checked in "
                                                         "the browser tests instead")
def test_the_panel_summary_says_the_same_spare(estimate, tmp_path):
    data, _text = estimate
    summary = _panel_summary(data, tmp_path)
    blob = json.dumps(summary)
    assert f"{data['spare_bytes'] / 2 ** 30:.2f} GiB to spare" in blob
    assert not re.search(r"short by", blob)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the panel's summary is checked in "
                                                         "the browser tests instead")
def test_an_incomplete_estimate_has_one_lower_bound(tmp_path):
    """budget.at_least: the CLI's "at least X as ComfyUI runs it" and the panel's "≥ X" are the same X (the stages as
    ComfyUI runs them), not the every-stage-in-one-go peak."""
    from vram_budget.nodes.estimator.plan.budget import at_least

    data = {"verdict": "unknown", "vram_verdict": "unknown", "peak_bytes": 264 * 2 ** 30,
            "predicted_peak_bytes": 20 * 2 ** 30, "device": {"capacity_bytes": 24 * 2 ** 30}, "missing": []}
    assert _panel_summary(data, tmp_path)["peak"] == 20 * 2 ** 30
    runs = [type("R", (), {"peak_bytes": 20 * 2 ** 30})()]
    assert at_least(264 * 2 ** 30, runs).startswith("at least 20.00 GiB as ComfyUI runs it")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the panel's summary is checked in "
                                                         "the browser tests instead")
def test_nothing_priced_shows_no_zero_bound(tmp_path):
    """A workflow in which no stage was found (SeargeSDXL's MagicBox nodes): the command line gives no 'at least'
    figure, and the panel, the node and the readout show 'nothing priced', never '≥ 0.00 GiB'."""
    empty = {"verdict": "unknown", "vram_verdict": "unknown", "peak_bytes": 0, "predicted_peak_bytes": 0,
             "device": {"capacity_bytes": 24 * 2 ** 30}, "missing": []}
    assert _panel_summary(empty, tmp_path)["peakText"] == "nothing priced"
    partial = dict(empty, peak_bytes=6 * 2 ** 30, predicted_peak_bytes=5 * 2 ** 30)
    assert _panel_summary(partial, tmp_path)["peakText"] == "≥ 5.00 GiB"
    fits = dict(partial, verdict="fits", vram_verdict="fits")
    assert _panel_summary(fits, tmp_path)["peakText"] == "6.00 GiB"
