"""The version-regression guard (nodes/run_log.py) in a real ComfyUI (``main.py --cpu``).

One base directory, two ComfyUI processes: the first runs a workflow with a fake custom node pack
at version 1.3.6 installed, then the pack is "updated" to 1.3.9 and a second process (versions are
read once per process) runs the same workflow. Each record carries the versions ComfyUI really ran
under and the same workflow key. On the CPU there is no measured peak, so the test then writes
the GPU peaks into those two records of the log (as a 14.5 and a 23.1 GiB run would have been
measured) and the runs route must report the regression.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_models import write_vae  # tests/conftest.py puts tests/ on sys.path

from vram_budget.nodes import run_log
from vram_budget.nodes.estimator.units import GiB

import comfy_harness as HARNESS  # noqa: E402,N812  (tests/comfy_harness.py)

pytestmark = pytest.mark.comfy
VAE_NAME = "sd_vae_zero.safetensors"
FAKE_PACK = "ComfyUI-FakeWanWrapper"


def pyproject(version: str) -> str:
    return f'[project]\nname = "comfyui-fakewanwrapper"\nversion = "{version}"\n\n[tool.comfy]\nPublisherId = "test"\n'


def setup_base(base: Path) -> None:
    HARNESS.install_oom_probe(base)
    write_vae(base / "models" / "vae" / VAE_NAME, "kl4", "F16", scale=1)
    pack = base / "custom_nodes" / FAKE_PACK
    pack.mkdir(parents=True)
    (pack / "__init__.py").write_text("NODE_CLASS_MAPPINGS = dict()\nNODE_DISPLAY_NAME_MAPPINGS = dict()\n")
    (pack / "pyproject.toml").write_text(pyproject("1.3.6"))
    broken = base / "custom_nodes" / "ComfyUI-BrokenPyproject"
    broken.mkdir()
    (broken / "__init__.py").write_text("NODE_CLASS_MAPPINGS = dict()\n")
    (broken / "pyproject.toml").write_text("[project\nversion = = \n")


def prompt(text: str) -> dict:
    return {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": VAE_NAME}},
        "2": {"class_type": "EmptyLatentImage", "inputs": {"width": 96, "height": 64, "batch_size": 1}},
        "3": {"class_type": "VAEDecode", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": text}},
        "9": {"class_type": "VRAMBudget", "inputs": {}},
    }


def run(server, body: dict) -> str:
    status, data = server.request("POST", "/prompt", {"prompt": body})
    assert status == 200, data
    HARNESS.wait_idle(server)
    _, history = server.request("GET", f"/history/{data['prompt_id']}")
    assert history[data["prompt_id"]]["status"]["status_str"] == "success", history
    return data["prompt_id"]


def inject_peaks(log: Path, peaks: dict[str, float]) -> None:
    """Give the records of these prompt ids the GPU peak a CUDA machine would have measured."""
    lines = []
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        if rec["prompt_id"] in peaks:
            peak = int(peaks[rec["prompt_id"]] * GiB)
            rec["measured"] = {"reserved_peak_bytes": peak, "allocated_peak_bytes": peak - GiB, "device": "cuda:0"}
            rec["not_measured"] = None
        lines.append(json.dumps(rec))
    log.write_text("\n".join(lines) + "\n")


def test_two_versions_of_one_workflow_are_reported_by_the_runs_route(comfy_install, tmp_path_factory):
    path, python, version = comfy_install
    base = HARNESS.make_base(tmp_path_factory.mktemp("version_guard"))
    setup_base(base)
    log = base / "user" / "vram_budget" / "runs.jsonl"

    first = HARNESS.ComfyServer(path, python, base)
    try:
        p1 = run(first, prompt("one"))
        _, data = first.request("GET", "/vram_budget/runs?limit=1")
        rec1 = data["runs"][0]
        assert data["regressions"] == [] and data["regression_threshold"] == {"ratio": 0.15, "bytes": GiB}
    finally:
        first.stop()
    assert rec1["prompt_id"] == p1
    versions = rec1["versions"]
    assert versions["comfyui"] == version  # comfyui_version, as ComfyUI reports it
    assert isinstance(versions["torch"], str) and versions["torch"][0].isdigit()
    assert versions["comfy_aimdo"] is None or isinstance(versions["comfy_aimdo"], str)
    packs = versions["custom_nodes"]
    assert packs[FAKE_PACK] == "1.3.6" and packs["ComfyUI-BrokenPyproject"] is None
    assert packs["vram_budget_oom_probe"] is None  # no pyproject.toml
    assert packs[HARNESS.PACK_DIR_NAME] == (HARNESS.REPO / "pyproject.toml").read_text().split('version = "')[1].split('"')[0]
    assert versions["custom_nodes_omitted"] == 0
    # the key the live tracker wrote is the one of the prompt ComfyUI ran (and output names stay out)
    assert rec1["workflow_key"] == run_log.workflow_key(prompt("one")) == run_log.workflow_key(prompt("two"))
    assert rec1["workflow_label"] == VAE_NAME

    (base / "custom_nodes" / FAKE_PACK / "pyproject.toml").write_text(pyproject("1.3.9"))  # the "update"
    second = HARNESS.ComfyServer(path, python, base)
    try:
        p2 = run(second, prompt("two"))
        _, data = second.request("GET", "/vram_budget/runs?limit=2")
        rec2 = data["runs"][0]
        assert [r["prompt_id"] for r in data["runs"]] == [p2, p1]
        assert rec2["versions"]["custom_nodes"][FAKE_PACK] == "1.3.9"  # read again by the new process
        assert rec2["workflow_key"] == rec1["workflow_key"]
        assert data["regressions"] == []  # "not measured (CPU)": nothing to compare yet

        inject_peaks(log, {p1: 14.5, p2: 23.1})
        status, data = second.request("GET", "/vram_budget/runs?limit=5")
        assert status == 200
        (reg,) = data["regressions"]
        assert [r["prompt_id"] for r in data["runs"][:2]] == [p2, p1]  # the runs are still there, unchanged in form
        assert reg["workflow_key"] == rec1["workflow_key"]
        assert reg["before"]["prompt_id"] == p1 and reg["after"]["prompt_id"] == p2
        assert reg["before"]["peak_bytes"] == int(14.5 * GiB) and reg["after"]["peak_bytes"] == int(23.1 * GiB)
        assert [(d["name"], d["before"], d["after"]) for d in reg["differs"]] == [(FAKE_PACK, "1.3.6", "1.3.9")]
        assert reg["restore"][0]["text"] == f"pinning {FAKE_PACK} back to 1.3.6"
        assert (f"peaked at 14.50 GiB on {FAKE_PACK} 1.3.6, 23.10 GiB on 1.3.9 (+59 %); pinning {FAKE_PACK} "
                "back to 1.3.6 should bring the earlier figure back.") in reg["sentence"]
        # the newest run is what counts: measured back on the old figure, the regression is gone
        p3 = run(second, prompt("three"))
        inject_peaks(log, {p3: 14.4})
        _, data = second.request("GET", "/vram_budget/runs?limit=5")
        assert data["regressions"] == []
    finally:
        second.stop()
