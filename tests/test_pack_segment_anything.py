"""Issue 33: storyicon/comfyui_segment_anything (graph/packs/segment_anything.py, families/groundingdino.py).
Its loaders put SAM and GroundingDINO on the GPU in float32 and leave them there; GroundingDinoSAMSegment runs
GroundingDINO (traced by a real forward, bench/trace_groundingdino.py) then SAM's image encoder."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families import groundingdino as GD, sam1 as SAM
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.plan.planning import estimate

EXAMPLE = (Path(__file__).resolve().parent / "workflows" / "community_extra"
           / "nullquant__ComfyUI-BrushNet__PowerPaint_object_removal.json")
DEV = Device.from_card(find_card("RTX 4090"))


def _wf(sam: str | None = None) -> dict:
    wf = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    for node in wf["nodes"]:
        if sam and node["type"] == "SAMModelLoader (segment anything)":
            node["widgets_values"][0] = sam
    return wf


def _runs(budget):
    return list(zip(budget.stages, budget.runs))


def test_powerpaint_object_removal_completes_with_sam_and_groundingdino_held():
    budget = estimate(read_workflow(_wf()), DEV)
    assert budget.complete, (budget.incomplete, budget.missing)
    runs = _runs(budget)
    i, (seg, run) = next((i, p) for i, p in enumerate(runs) if p[0].stage.node_type.startswith("GroundingDinoSAM"))
    weights = sum(it.bytes for it in seg.items if it.category == "weights")
    assert weights == (SAM.P_SAM1_VIT_H + GD.P_GROUNDINGDINO_SWINT) * 4
    assert seg.working_bytes == int(max(GD.TRACE_BYTES, SAM.TRACE["sam1-vit-h"]) * memory.calibration(GD.FAMILY))
    # every later stage runs beside both models
    later = [r for _, r in runs[i + 1:]]
    assert later and all(r.peak_bytes >= weights for r in later)
    assert all(any("segment_anything" in e for e in r.explanation) for r in later)


def test_a_smaller_sam_and_an_unpriced_one():
    small = estimate(read_workflow(_wf("sam_vit_b (375MB)")), DEV)
    assert small.complete
    seg = next(sb for sb in small.stages if sb.stage.node_type.startswith("GroundingDinoSAM"))
    # ViT-B's encoder trace is above GroundingDINO's: the larger pass prices the stage
    assert seg.working_bytes == int(max(GD.TRACE_BYTES, SAM.TRACE["sam1-vit-b"]) * memory.calibration(GD.FAMILY))
    hq = estimate(read_workflow(_wf("sam_hq_vit_h (2.57GB)")), DEV)
    assert not hq.complete and hq.verdict == "unknown"
    assert any("sam_hq_vit_h (2.57GB): a model of this node that is not priced here (of its choices, sam_vit_h, "
               "sam_vit_l, sam_vit_b are)" in why for why in hq.incomplete), hq.incomplete


def test_a_choice_written_without_its_size_label_is_read_as_that_choice_and_said():
    """Jos-few43/comfyui-workflows' auto-mask-inpainting workflow writes 'sam_vit_b' (the node offers 'sam_vit_b
    (375MB)'): ComfyUI would refuse the value, the user meant the ViT-B; priced as it, with a note."""
    workload = read_workflow(_wf("sam_vit_b"))
    small = estimate(workload, DEV)
    assert small.complete
    seg = next(sb for sb in small.stages if sb.stage.node_type.startswith("GroundingDinoSAM"))
    assert seg.working_bytes == int(max(GD.TRACE_BYTES, SAM.TRACE["sam1-vit-b"]) * memory.calibration(GD.FAMILY))
    assert any("'sam_vit_b' is not one of the node's choices (ComfyUI would refuse it); read as 'sam_vit_b (375MB)'"
               in n for n in workload.notes)
    assert not estimate(read_workflow(_wf("sam_vit_x")), DEV).complete
