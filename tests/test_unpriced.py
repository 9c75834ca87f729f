"""Issue 34, contracts as code: why a stage has no working-memory figure travels as data (Stage.unpriced from the
graph, StageBudget.unpriced from the stage builders, "unpriced" in --json), not as a text prefix parsed back."""
from __future__ import annotations

import re
from pathlib import Path

from vram_budget.nodes.estimator.machine.device import LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.plan.planning import estimate_prompt
from vram_budget.nodes.estimator.stages.base import NOT_ESTIMATED

NODES = Path(__file__).resolve().parents[1] / "nodes"
DEVICE = device_for_launch(find_card("RTX 4090"), LaunchFlags())

def test_the_reason_is_data_from_the_graph_to_the_json():
    """The TRELLIS.2 template's sparse stages: their pack gives the reason (a.unpriced) while the graph is read,
    the stage builder keeps it, the gap check and --json read the field."""
    import glob
    import json
    import os

    import pytest
    templates = pytest.importorskip("comfyui_workflow_templates_json")
    found = glob.glob(f"{os.path.dirname(templates.__file__)}/**/3d_pixal3d_trellis2_image_to_model.json", recursive=True)
    if not found:
        pytest.skip("comfyui-workflow-templates has no 3d_pixal3d_trellis2_image_to_model template")
    workflow = json.load(open(found[0], encoding="utf-8"))
    sparse = [s for s in read_workflow(workflow).stages if s.unpriced]
    assert len(sparse) == 3 and all(s.unpriced.startswith("TRELLIS.2 sparse latent of node") for s in sparse)
    budget = estimate_prompt(workflow, DEVICE).to_dict()
    out = [s for s in budget["stages"] if s["unpriced"]]
    assert {NOT_ESTIMATED + s.unpriced for s in sparse} <= {s["unpriced"] for s in out}
    assert all(s["unpriced"] in s["notes"] for s in out)  # users read it as before
    assert not budget["complete"] and sum(1 for g in budget["incomplete"] if NOT_ESTIMATED in g) >= 3
    vae = {"1": {"class_type": "VAELoader", "inputs": {"vae_name": "nobody_knows_this_vae.safetensors"}},
           "4": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
           "5": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["1", 0]}}}
    (decode,) = estimate_prompt(vae, DEVICE).to_dict()["stages"]
    assert decode["unpriced"] == NOT_ESTIMATED + "VAE not identified"


def test_a_priced_stage_says_null():
    budget = estimate_prompt({
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
        "5": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["1", 0]}}}, DEVICE).to_dict()
    assert [s["unpriced"] for s in budget["stages"]] == [None]


def test_no_module_parses_the_prefix_back():
    """The note is written from the field; nothing reads a stage's note text to learn that it was not priced."""
    offenders = []
    for path in NODES.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"startswith\((NOT_ESTIMATED|\"working memory not estimated)", text):
            offenders.append(f"{path.relative_to(NODES)}:{text[:m.start()].count(chr(10)) + 1}")
        if re.search(r"stage_note\(f?\"working memory not estimated", text):
            offenders.append(f"{path.relative_to(NODES)}: stage_note with the prefix (use Analyzer.unpriced)")
    assert offenders == []
