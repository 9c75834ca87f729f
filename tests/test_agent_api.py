"""Issue 35, the fits answer for agents (routes.fits_answer, docs/agent-api.md), built from a real estimate's JSON;
the HTTP route itself is tested on a running ComfyUI (tests/comfy/test_routes.py)."""
import json
import subprocess
import sys
from pathlib import Path

from vram_budget.nodes.routes import FITS_FIELDS, MAX_FIXES, fits_answer

REPO = Path(__file__).resolve().parent.parent
FLUX = REPO / "example_workflows" / "flux_dev_1024.json"
WAN = REPO / "example_workflows" / "wan22_14b_i2v_720p.json"


def _budget(path, *argv):
    out = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", str(path), "--json",
                          *argv], cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return {"available": True, "budget": json.loads(out.stdout), "device_note": None}


def test_the_answer_has_every_documented_field_and_agrees_with_the_estimate():
    result = _budget(FLUX, "--gpu", "RTX 4090", "--ram", "64")
    a = fits_answer(result, {"vram_free_bytes": 1, "vram_total_bytes": 2, "ram_available_bytes": 3})
    assert tuple(a) == FITS_FIELDS
    b = result["budget"]
    assert a["fits"] is True and a["verdict"] == b["verdict"] and a["peak_bytes"] == b["peak_bytes"]
    assert a["time"] == b["time"] and a["free_now"]["ram_available_bytes"] == 3 and a["card"] == "RTX 4090"
    doc = (REPO / "docs" / "agent-api.md").read_text()
    assert all(f"`{f}`" in doc for f in FITS_FIELDS)


def test_out_of_memory_on_the_card_or_in_ram_does_not_fit_and_names_fixes():
    card = fits_answer(_budget(WAN, "--gpu", "RTX 3060", "--highvram", "--ram", "64"))
    assert card["fits"] is False and card["vram_verdict"] == "oom" and 0 < len(card["fixes"]) <= MAX_FIXES
    ram = fits_answer(_budget(WAN, "--gpu", "RTX 4090", "--ram", "8", "--swap", "0", "--memory-mode", "classic"))
    assert ram["fits"] is False and ram["host_outcome"] == "oom" and ram["fixes"]


def test_an_incomplete_estimate_never_fits():
    result = _budget(FLUX, "--gpu", "RTX 4090")
    result["budget"]["complete"] = False  # a model it could not price
    assert fits_answer(result)["fits"] is False


def test_a_run_that_rereads_weights_from_disk_still_runs():
    """Dynamic VRAM with too little RAM re-reads weights every step: slower, but it runs (the time says how slow)."""
    a = fits_answer(_budget(WAN, "--gpu", "RTX 4090", "--ram", "8", "--swap", "0"))
    assert a["host_outcome"] == "thrashing" and a["fits"] is True and a["time"]["run_seconds"] > 0
