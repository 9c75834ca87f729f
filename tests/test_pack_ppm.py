"""Issue 33: ComfyUI-ppm's EmptyLatentImageAR (graph/packs/ppm.py) sizes its latent from a resolution and an aspect
ratio as latent_misc.py _calc_dimensions does, so the pack's example workflows get a complete estimate."""
from __future__ import annotations

from pathlib import Path

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs.ppm import dimensions
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"


def test_dimensions_follow_the_packs_rounding():
    assert dimensions(1024, 1.0, 64) == (1024, 1024)
    # 1024² / 1.5: h = 836.1 -> 832 (nearer than 896); w = 832 x 1.5 = 1248 -> 1280 (1280 x 832 is nearer 1024²)
    assert dimensions(1024, 1.5, 64) == (1280, 832)
    assert dimensions(16, 0.15, 128) == (16, 16)  # rounded to 0, then clamped to 16


def test_the_examples_are_complete_at_the_size_the_node_makes():
    dev = Device.from_card(find_card("RTX 4090"))
    paths = sorted(CORPUS.glob("pamparamm__ComfyUI-ppm__attention_couple*.json"))
    assert len(paths) == 2
    for path in paths:
        budget = estimate(read_workflow(path.read_text(encoding="utf-8")), dev)
        assert budget.complete, (path.name, budget.incomplete)
        sample = next(s for s in budget.stages if s.stage.kind == "sample")
        latent = sample.stage.latent
        assert (latent.pixel_width, latent.pixel_height, latent.channels) == (1024, 1024, 4)
