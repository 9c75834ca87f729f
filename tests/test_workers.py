"""Issue 24, more than one machine: `vram-budget estimate WF --workers 'CARD[:RAM],...'` estimates the whole
workflow on each worker (as ComfyUI-Distributed / SwarmUI run it), lists the ones that run fastest first and
leaves out the ones that would run out of memory, each with the fix that makes it run on that worker."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodes.estimator.machine.device import Device
from nodes.estimator.machine.gpus import find_card
from nodes.estimator.graph import read_workflow
from nodes.estimator.plan.planning import estimate
from nodes.estimator.cli.workers import plan_workers, sampling_seconds

REPO = Path(__file__).resolve().parent.parent
WAN22_FP16 = REPO / "example_workflows" / "wan22_14b_i2v_720p.json"
GIB = 1024**3


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=180)


def _template(name):
    try:
        import comfyui_workflow_templates_json as t
    except ImportError:
        pytest.skip("comfyui-workflow-templates-json is not installed")
    return Path(t.__file__).parent / "templates" / f"{name}.json"


def test_workers_fastest_first_and_the_ones_that_would_oom_left_out_with_their_fix():
    out = _cli(str(WAN22_FP16), "--workers", "RTX 4090:64,GTX 1070:16,H100:200", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    runs, left = data["workers"], data["workers_left_out"]
    assert [w["name"] for w in runs] == ["H100:200", "RTX 4090:64"]  # the H100 holds it all: fastest
    assert runs[0]["verdict"] == "fits" and runs[1]["verdict"] == "runs_slower"
    assert runs[0]["seconds"] < runs[1]["seconds"]
    assert runs[0]["ram_bytes"] == 200 * GIB and runs[1]["ram_bytes"] == 64 * GIB
    assert [w["name"] for w in left] == ["GTX 1070:16"] and left[0]["verdict"] == "oom" and not left[0]["runs"]
    assert left[0]["fix"] and left[0]["fix_kind"] != "bigger_card"  # a fix on that worker, not another card
    text = _cli(str(WAN22_FP16), "--workers", "RTX 4090:64,GTX 1070:16,H100:200").stdout
    assert "Workers (the whole workflow on each" in text and " 1. H100:200: fits" in text
    assert "left out: GTX 1070:16: out of VRAM" in text and "would run with:" in text


def test_a_worker_short_of_ram_is_left_out_with_a_ram_fix():
    """The fp8 Wan 2.2 template under classic memory management needs about 16.5 GiB of RAM while sampling:
    a 16 GiB worker without swap is killed by the OOM killer; its fix is a RAM fix (swap), not a card."""
    wl = read_workflow(json.loads(_template("video_wan2_2_14B_i2v").read_text()))
    from nodes.estimator.cli.cli_estimate import workers_from_args
    from test_multigpu_placement import _args
    workers = workers_from_args(_args("--workers", "RTX 3060:16,L4:64", "--memory-mode", "classic", "--swap", "0"))
    runs, left = plan_workers(wl, workers)
    assert [w.name for w in runs] == ["L4:64"]
    (short,) = left
    assert short.vram_verdict != "oom" and short.verdict == "oom" and "out of system RAM" in short.why
    assert short.fix_kind in ("swap", "page_file", "cache_none", "text_encoder_fp8", "disable_pinned", "weights_fp8",
                              "frames", "close_programs") and short.fix


def test_sampling_seconds_are_the_simulations_step_times_times_the_steps():
    wl = read_workflow(json.loads(WAN22_FP16.read_text()))
    b = estimate(wl, Device.from_card(find_card("H100")))
    samples = [(sb, r) for sb, r in zip(b.stages, b.runs) if sb.stage.kind == "sample"]
    assert len(samples) == 2
    by_hand = sum(r.step_seconds * sb.stage.steps for sb, r in samples) + sum(r.extra_seconds for r in b.runs)
    assert sampling_seconds(b) == pytest.approx(by_hand) and by_hand > 0


@pytest.mark.parametrize("value, words", [
    ("", "name each worker's card"), ("RTX 4090,,L4", "name each worker's card"), ("RTX 9999", "RTX 9999"),
    ("RTX 3060:lots", "RAM after ':' must be GiB"), ("RTX 3060:0", "RAM 0 GiB"), ("RTX 3060:nan", "RAM nan GiB"),
    (",".join(["L4"] * 33), "at most 32"),
])
def test_bad_workers_get_a_clear_error(value, words):
    out = _cli(str(WAN22_FP16), "--workers", value)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr
