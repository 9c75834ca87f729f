"""Issue 33: kohya-ss/ControlNet-LLLite-ComfyUI (graph/packs/lllite.py, families/lllite.py). The LLLite modules ride
on the MODEL as the model's attention patches; their count follows sd-scripts' module rules at the cond / mlp
dimensions the file name gives."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families import lllite as L
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

WF = Path(__file__).resolve().parent / "workflows" / "community_extra" / \
    "kohya-ss__ControlNet-LLLite-ComfyUI__lllite_workflow.json"
DEV = Device.from_card(find_card("RTX 4090"))


def test_the_count_follows_the_trainers_module_rules():
    # a depth-2 module on a 640-wide projection, c 32, m 64: conditioning 3->16 (4x4) and 16->32 (4x4), down 640->64,
    # mid 96->64, up 64->640, each with its bias
    assert L.module_params(640, 2, 32, 64) == (3 * 16 * 16 + 16) + (16 * 32 * 16 + 32) + (640 * 64 + 64) \
        + (96 * 64 + 64) + (64 * 640 + 640)
    assert sum(n for _, _, n in L.SDXL_MODULES) == 136  # 4 projections x (2 x 2 + 2 x 10 + 10) transformer blocks
    assert L.lllite_params(32, 64) == 22_969_600  # 45.9 MB in fp16: kohya-ss/controlnet-lllite's 46 MB files


def test_the_example_prices_the_modules_on_the_model():
    budget = estimate(read_workflow(json.loads(WF.read_text(encoding="utf-8"))), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    item = next(i for i in sample.items if i.label and "LLLite" in i.label)
    assert item.category == "working" and item.bytes == 2 * L.lllite_params(32, 64)


def test_a_name_without_its_dimensions_is_not_priced():
    wf = json.loads(WF.read_text(encoding="utf-8"))
    for n in wf["nodes"]:
        if n["type"] == "LLLiteLoader":
            n["widgets_values"][0] = "my_lllite.safetensors"
    budget = estimate(read_workflow(wf), DEV)
    assert not budget.complete and any("my_lllite" in str(m) for m in budget.missing)
