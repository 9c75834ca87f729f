"""Issue 33: ComfyUI-HyperLoRA (graph/packs/hyperlora.py, families/hyperlora.py): the loader keeps the CLIP ViT, the
HyperLoRA modules, the resampler and the ID projector on the GPU in its dtype; the model the generated LoRA patches
holds them while it samples, once however many LoRAs one loader generates."""
from __future__ import annotations

import json
from pathlib import Path

from vram_budget.nodes.estimator.families import hyperlora as H
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _wf(name: str) -> dict:
    return json.loads((CORPUS / f"bytedance__ComfyUI-HyperLoRA__{name}.json").read_text(encoding="utf-8"))


def _held(budget) -> list:
    return [it for s in budget.stages if s.stage.kind == "sample" for it in s.items if it.label.startswith("HyperLoRA")]


def test_the_counts_follow_the_modules_shapes():
    # SDXL: 10 transformer blocks at 640 and 60 at 1280, self- and cross-attention (2048) each
    assert H.MODULES_SDXL == 140
    per = 128 * 8
    assert H.hyper_lora_modules() == 10 * per * (14 * 640 + 4096) + 60 * per * (14 * 1280 + 4096)
    assert H.hyper_lora_modules(rank=4) * 2 == H.hyper_lora_modules()  # bases scale with the rank
    assert H.id_projector() == 512 * 1024 * 16 + 1024 * 16 + 2 * 1024  # Linear(512, 16 x 1024) + LayerNorm(1024)
    assert H.resampler(140, n_conds=1) < H.resampler(140)  # a third attention and proj_in_2 with ArcFace
    assert 1.8e9 < H.P_HYPERLORA_SDXL < 1.9e9  # about 3.75 GB at 16 bit


def test_the_examples_complete_with_hyperlora_held_once():
    for name in ("HyperLoRA-T2I", "HyperLoRA-T2I-FaceDetailer", "HyperLoRA-T2I-InstantID",
                 "HyperLoRA-T2I-ConceptSlider"):
        budget = estimate(read_workflow(_wf(name)), DEV)
        assert budget.complete, (name, budget.incomplete, budget.missing)
        sample = next(s for s in budget.stages if s.stage.kind == "sample")
        held = [it for it in sample.items if it.label.startswith("HyperLoRA")]
        assert len(held) == 1, name  # three generated LoRAs from one loader: one held model
        assert held[0].bytes == 2 * H.P_HYPERLORA_SDXL and held[0].category == "working"  # never streamed
        assert [m.family for m in budget.models.values() if m.kind == "hyperlora"] == ["hyperlora-sdxl"]


def test_the_loaders_dtype_sets_the_bytes():
    wf = _wf("HyperLoRA-T2I")
    for n in wf["nodes"]:
        if n["type"] == "HyperLoRALoader":
            n["widgets_values"] = [n["widgets_values"][0], "fp32"]
    held = _held(estimate(read_workflow(wf), DEV))
    assert held and held[0].bytes == 4 * H.P_HYPERLORA_SDXL


def test_without_the_apply_node_nothing_is_held():
    wf = _wf("HyperLoRA-T2I")
    apply = next(n for n in wf["nodes"] if n["type"] == "HyperLoRAApplyLoRA")
    model_in = next(i["link"] for i in apply["inputs"] if i["name"] == "model")
    origin = next(lk for lk in wf["links"] if lk[0] == model_in)
    out = next(lk for lk in wf["links"] if lk[0] == apply["outputs"][0]["links"][0])
    out[1], out[2] = origin[1], origin[2]  # the sampler takes the checkpoint's MODEL directly
    budget = estimate(read_workflow(wf), DEV)
    assert budget.complete and not _held(budget)
