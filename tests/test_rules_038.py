"""Issue 32: the rules of ComfyUI 0.38 (0.35-0.38 releases) as the command line applies them, each against its
source (docs/runtime.md, "ComfyUI 0.35-0.38"): the Comfy Compiler's peak, fast disk's pins, and the disk as the
tier weights are read again from when they do not stay in RAM."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FLUX = REPO / "example_workflows" / "flux_dev_1024.json"


def _json(*argv):
    out = subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", str(FLUX), "--json", *argv],
                         cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_compiler_takes_the_allocator_slack_off_the_peaks_upper_end():
    """#15861: "the physical VRAM peak matches the logical allocation peak and no freed allocations are cached"."""
    on, off = _json("--gpu", "RTX 4090"), _json("--gpu", "RTX 4090", "--disable-comfy-compiler")
    assert on["peak_bytes"] == off["peak_bytes"]  # the calibrated peak itself is not moved by a PR's words
    assert on["peak_high_bytes"] < off["peak_high_bytes"]
    assert "Comfy Compiler on" in on["assumptions"] and "Compiler" not in off["assumptions"]
    old = _json("--gpu", "RTX 4090", "--comfyui-version", "0.33")
    assert old["peak_high_bytes"] == off["peak_high_bytes"] and "Compiler" not in old["assumptions"]


def test_fast_disk_pins_only_the_streamed_weights():
    """0.38.1 ops.py:188-195, :232: with fast disk a weight that has a VRAM slot is copied from its file, not
    pinned; 0.33 pinned every module it copies."""
    fast = _json("--gpu", "RTX 3060", "--ram", "64", "--disk", "nvme")
    ram = _json("--gpu", "RTX 3060", "--ram", "64", "--disk", "nvme", "--disable-fast-disk")
    peak = fast["peak_stage"]
    pf, pr = fast["stages"][peak]["ram"]["pinned_bytes"], ram["stages"][peak]["ram"]["pinned_bytes"]
    streamed = fast["stages"][peak]["run"]["streamed_bytes"]
    assert pf < pr and pf <= streamed + 1, (pf, pr, streamed)
    assert any("fast disk" in n for n in fast["notes"]) and not any("fast disk" in n for n in ram["notes"])
    # the run's slow end allows for the streamed weights read from the SSD every step (#16415), not the fast end:
    # on a 1 GB/s disk that is longer than the compute
    slow_fast = _json("--gpu", "RTX 3060", "--ram", "64", "--disk", "1", "--fast-disk")
    slow_ram = _json("--gpu", "RTX 3060", "--ram", "64", "--disk", "1")
    assert slow_fast["time"]["low_seconds"] == slow_ram["time"]["low_seconds"]
    assert slow_fast["time"]["high_seconds"] > slow_ram["time"]["high_seconds"]


@pytest.mark.parametrize("disk, gbps", [("nvme", 3.0), ("sata", 0.53), ("hdd", 0.15), ("1.5", 1.5)])
def test_weights_that_do_not_stay_in_ram_are_read_again_at_the_disks_speed(disk, gbps):
    """12 GiB of RAM for 16-bit Flux on a 12 GB card: the streamed weights do not all stay in RAM (thrashing); the
    step time adds what is read again, at the disk's speed, and the run says which bound it."""
    d = _json("--gpu", "RTX 3060", "--ram", "12", "--disk", disk)
    peak = d["peak_stage"]
    host = d["stages"][peak]["ram"]
    assert host["outcome"] == "thrashing"
    reread = host["swap_bytes"] / (gbps * 1e9)
    step = d["stages"][peak]["run"]["step_seconds"]
    assert d["time"]["step_seconds"] == pytest.approx(step + reread, abs=0.02)
    assert d["time"]["bound"] == ("disk" if reread > step / 2 else "compute")
    assert f"{gbps:.2g} GB/s" in " ".join(host["explanation"])


def test_the_same_workflow_answers_ram_streaming_and_disk_streaming_on_two_disks():
    enough = _json("--gpu", "RTX 3060", "--ram", "64", "--disk", "hdd")
    short_nvme = _json("--gpu", "RTX 3060", "--ram", "12", "--disk", "nvme")
    short_hdd = _json("--gpu", "RTX 3060", "--ram", "12", "--disk", "hdd")
    assert enough["time"]["bound"] == "compute" and enough["host_outcome"] == "fits"  # RAM holds the streamed weights
    assert short_hdd["time"]["bound"] == "disk"
    assert short_hdd["time"]["run_seconds"] > 3 * short_nvme["time"]["run_seconds"] > 3 * enough["time"]["run_seconds"]


def test_a_newer_comfyui_than_the_rules_says_so():
    d = _json("--gpu", "RTX 4090", "--comfyui-version", "0.41.2")
    assert "ComfyUI 0.41.2 (0.38 rules" in d["assumptions"]


@pytest.mark.parametrize("bad", ["fast", "0", "1000", "-1", "nvme2"])
def test_bad_disk_values_are_refused_with_the_flag_named(bad):
    out = subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", str(FLUX), "--disk", bad],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--disk" in out.stderr


def test_a_run_bound_by_a_slow_disk_names_the_disk_fix():
    """"runs, slower" says whether RAM or the disk is the bottleneck, and the fix: move the models to an NVMe disk
    (a slow disk only), more RAM (every re-reading run)."""
    hdd = _json("--gpu", "RTX 3060", "--ram", "12", "--disk", "hdd")
    nvme = _json("--gpu", "RTX 3060", "--ram", "12", "--disk", "nvme")
    kinds = lambda d: [r["kind"] for r in d["host"]["remedies"]]  # noqa: E731
    assert "move_models" in kinds(hdd) and "move_models" not in kinds(nvme)
    assert "more_ram" in kinds(hdd) and "more_ram" in kinds(nvme)
    move = next(r for r in hdd["host"]["remedies"] if r["kind"] == "move_models")
    assert "0.15 GB/s" in move["detail"] and "NVMe" in move["title"]


def test_a_regression_of_a_run_time_state_is_said_only_where_that_state_is_on():
    """data/regressions.jsonl `requires`: the fast-disk regression (#16415) on 0.37+ only with fast disk on; the
    compiler's (comfy-aimdo 0.5.2-0.5.3) only with the compiler on."""
    def ids(*argv):
        return [r["id"] for r in _json("--gpu", "RTX 4070", "--ram", "32", *argv)["known_regressions"]]
    assert "comfyui-037-fast-disk-reads-every-step" in ids("--comfyui-version", "0.41", "--disk", "nvme")
    assert "comfyui-037-fast-disk-reads-every-step" not in ids("--comfyui-version", "0.41", "--disk", "sata")
    aimdo = ("--comfyui-version", "0.35.1", "--node-pack", "comfy-aimdo==0.5.3")
    assert "aimdo-052-compiler-custom-nodes" in ids(*aimdo)
    assert "aimdo-052-compiler-custom-nodes" not in ids(*aimdo, "--disable-comfy-compiler")
