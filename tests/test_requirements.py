"""`vram-budget requirements` (issue 30): the committed data/requirements.json is what the command writes for
the installed official templates. A sample of templates is regenerated here and must equal the committed
entries; the file covers every local-model template of the installed package and says it is computed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.cli import requirements as R
from vram_budget.nodes.estimator.graph.node_specs import load_specs
from vram_budget.nodes.estimator.graph.templates import local_model_templates, package_versions

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "data" / "requirements.json"
SAMPLE = ("flux_dev_full_text_to_image", "video_wan2_2_14B_i2v", "image_qwen_image", "sdxl_simple_example",
          "video_ltx2_3_t2v", "image_z_image_turbo", "hidream_i1_dev",
          "image_qwen_image_controlnet_patch")  # a ModelPatchLoader file priced with the model it patches


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def installed():
    templates = local_model_templates(set(load_specs().get("api", ())))
    if not templates:
        pytest.skip("no official templates installed (pip install comfyui-workflow-templates-json)")
    return templates


def test_the_file_says_what_it_is(committed):
    assert committed["computed_not_measured"] is True and "not measured" in committed["about"]
    assert committed["cards"] == {gb: card for gb, card in R.CARDS}
    assert committed["comfyui_rules"] == "0.33" and committed["pack_version"]


def test_every_installed_local_template_is_in_the_file(committed, installed):
    if committed["templates_packages"] != package_versions():
        pytest.skip(f"the committed file is for {committed['templates_packages']}, this machine has "
                    f"{package_versions()}: vram-budget requirements --out data/requirements.json")
    assert set(committed["templates"]) == {t.name for t in installed}
    full = [n for n, e in committed["templates"].items() if e.get("complete")]
    assert len(full) >= 0.8 * len(installed), (len(full), len(installed))


def test_a_sample_regenerates_to_the_committed_entries(committed, installed):
    if committed["templates_packages"] != package_versions():
        pytest.skip(f"the committed file is for {committed['templates_packages']}: regenerate it")
    names = [n for n in SAMPLE if n in {t.name for t in installed}]
    assert len(names) >= 3, names
    fresh = R.requirements("0.33", names)
    for name in names:
        assert fresh["templates"][name] == committed["templates"][name], name


def test_the_figures_are_consistent(committed):
    order = [gb for gb, _ in R.CARDS]
    rank = {"fits": 0, "tight": 1, "runs_slower": 2, "oom": 3}
    for name, e in committed["templates"].items():
        if not e.get("complete"):
            continue
        assert 0 < e["minimum_vram_bytes"] <= e["resident_peak_bytes"], name
        verdicts = [e["cards"][gb]["verdict"] for gb in order]
        # a bigger card never does worse (the same ComfyUI rules on each)
        ranks = [rank.get(v, 4) for v in verdicts]
        assert ranks == sorted(ranks, reverse=True), (name, verdicts)


def test_the_command_writes_the_file(tmp_path):
    out = tmp_path / "req.json"
    proc = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "requirements", "--out", str(out),
                           "--template", "flux_dev_full_text_to_image"], capture_output=True, text=True, timeout=300)
    if "no official templates" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert list(data["templates"]) == ["flux_dev_full_text_to_image"]
    assert "wrote" in proc.stderr and "1 templates (1 complete)" in proc.stderr
    too_many = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "requirements",
                               *sum((["--template", f"t{i}"] for i in range(65)), [])],
                              capture_output=True, text=True, timeout=60)
    assert too_many.returncode == 2 and "at most 64" in too_many.stderr
