"""The generated table of model sizes the official templates publish (issue 10 section 3):
nodes/estimator/data/template_models.json, written by bench/gen_template_models.py."""
from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.families.registry import PARAMS as P
from vram_budget.nodes.estimator.models import catalogue as cat
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.workload import LatentShape

ROOT = Path(__file__).resolve().parent.parent
TABLE = json.loads((ROOT / "nodes/estimator/data/template_models.json").read_text(encoding="utf-8"))


def _generator():
    spec = importlib.util.spec_from_file_location("gen_template_models", ROOT / "bench/gen_template_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_is_what_the_generator_writes_from_the_installed_templates():
    from workflows import templates

    if not templates.template_dirs():
        pytest.skip("no template package installed (pip install comfyui-workflow-templates-json)")
    installed = templates.package_versions().get("comfyui-workflow-templates-json")
    if installed not in TABLE["source"]:
        pytest.skip(f"installed templates {installed} are not the ones the table was made from ({TABLE['source']})")
    fresh = _generator().collect()
    assert fresh["files"] == TABLE["files"], "run python3 bench/gen_template_models.py"
    assert len(TABLE["files"]) > 300


def test_note_sizes_are_binary_units_as_the_hand_catalogue_shows():
    """The notes print Hugging Face sizes in GiB labelled "GB": over the files the hand catalogue sizes from
    other listings, table bytes / catalogue bytes has median 1.000 (it would be 0.931 if they were GB)."""
    ratios = []
    for entry in cat.ENTRIES + cat.PUBLISHED:
        row = TABLE["files"].get(entry.name)
        if row and entry.bytes:
            ratios.append(row["bytes"] / entry.bytes)
    assert len(ratios) >= 50
    assert abs(statistics.median(ratios) - 1.0) < 0.002
    assert sum(abs(r - 1) < 0.01 for r in ratios) / len(ratios) > 0.9


def test_a_file_only_a_template_sizes_gets_that_size_and_what_its_name_says():
    fire = catalogue_info("FireRed-Image-Edit-1.1-transformer.safetensors", "diffusion_models")
    assert fire.source == "catalogue" and fire.family == "qwen-image" and fire.kind == "diffusion"
    assert fire.weights_bytes == round(38.05 * 2**30)  # 40.86 GB: 2 bytes x Qwen-Image's 20.4B
    assert abs(fire.weights_bytes / 2 - P["P_QWEN_IMAGE"]) / P["P_QWEN_IMAGE"] < 0.01
    assert "size from the name" not in fire.label and "image_firered_image_edit1_1" in fire.notes[0]
    # (a file whose name no family rule knows; Krea 2, the example here before, has its family module now)
    # (RT-DETR, the example here before, has its family module now: families/rt_detr.py)
    # (VOID's void_pass1, the example here before, is a CogVideoX-Fun 1.5 now: families/cogvideox.py)
    # (Ming-Image, the example here before, is Z-Image's architecture now: families/lumina.py)
    other = catalogue_info("models/diffusion_models/moss_image_sft_int8_convrot.safetensors")
    assert (other.kind, other.family, other.weights_bytes) == ("diffusion", "unknown", 5_411_658_793)
    assert other.dtype == "I8" and other.params == other.weights_bytes  # 1 byte per weight
    void = catalogue_info("models/diffusion_models/void_pass1.safetensors")
    assert (void.kind, void.family, void.weights_bytes) == ("diffusion", "cogvideox1.5-5b", 11_145_440_133)
    # the published size (10.38 GiB, rounded) and the count of ComfyUI's class with 48 input channels agree
    assert abs(void.weights_bytes - 2 * P["P_COGVIDEOX15_5B_INP"]) < 0.005 * 2**30
    lora = catalogue_info("FireRed-Image-Edit-1.0-Lightning-8steps-v1.0.safetensors", "loras")
    assert lora.kind == "lora" and lora.weights_bytes == round(810.2 * 2**20) and lora.params == lora.weights_bytes // 2
    assert catalogue_info("no_such_model_anywhere.safetensors", "diffusion_models") is None
    # the hand catalogue still wins where it has the file
    assert catalogue_info("flux1-dev.safetensors").notes[0] == cat.lookup("flux1-dev.safetensors").source


def test_an_unrecognised_architecture_gets_weights_but_no_made_up_working_memory():
    assert memory.diffusion_working("unknown", {}, LatentShape(1, 16, 128, 128), 2, 256) is None
    ui = {"nodes": [
        {"id": 1, "type": "UNETLoader", "mode": 0, "inputs": [],
         "outputs": [{"name": "MODEL", "type": "MODEL", "links": [1]}],
         "widgets_values": ["moss_image_sft_int8_convrot.safetensors", "default"]},
        {"id": 2, "type": "EmptyLatentImage", "mode": 0, "inputs": [],
         "outputs": [{"name": "LATENT", "type": "LATENT", "links": [2]}], "widgets_values": [1024, 1024, 1]},
        {"id": 3, "type": "KSampler", "mode": 0,
         "inputs": [{"name": "model", "type": "MODEL", "link": 1}, {"name": "latent_image", "type": "LATENT", "link": 2}],
         "outputs": [{"name": "LATENT", "type": "LATENT", "links": []}],
         "widgets_values": [1, "fixed", 8, 1.0, "euler", "simple", 1.0]},
    ], "links": [[1, 1, 0, 3, 0, "MODEL"], [2, 2, 0, 3, 3, "LATENT"]]}
    b = estimate(read_workflow(ui), Device.from_card(find_card("RTX 4090")))
    sample = next(s for s in b.stages if s.stage.kind == "sample")
    assert sample.weights_bytes == 5_411_658_793 and sample.working_bytes == 0  # the int8 file's bytes
    assert any("architecture not recognised" in why for why in b.incomplete)
    assert not b.complete and b.verdict == "unknown"  # "can't tell", never "fits"


def test_chrono_edit_is_priced_as_the_wan_i2v_14b_it_is():
    info = catalogue_info("chrono_edit_14B_fp16.safetensors", "diffusion_models")
    assert (info.family, info.variant, info.params) == ("wan2.1-14b", "i2v", P["P_WAN14_I2V"])
    wan = cat.lookup("wan2.1_i2v_720p_14B_fp16.safetensors")
    assert abs(info.weights_bytes - wan.bytes) / wan.bytes < 0.005


def test_flux_controlnet_counts_reproduce_the_exact_published_bytes():
    """Diffusers FluxControlNetModel counts (embedders + double / single blocks + zero linears): the 6/0 and 5/10
    configs reproduce the two exact published byte counts to within a safetensors header."""
    h = 3072
    lin = lambda i, o: i * o + o  # noqa: E731
    double = 2 * (lin(h, 6 * h) + lin(h, 3 * h) + 2 * 128 + lin(h, h) + lin(h, 4 * h) + lin(4 * h, h))
    single = lin(h, 3 * h) + lin(h, 4 * h) + lin(h, 3 * h) + 2 * 128 + lin(5 * h, h)
    embed = lin(64, h) + lin(4096, h) + 2 * (lin(256, h) + lin(h, h)) + lin(768, h) + lin(h, h) + lin(64, h)

    def params(double_blocks, single_blocks, modes=0):
        return embed + double_blocks * double + single_blocks * single + (double_blocks + single_blocks) * lin(h, h) + modes * h

    assert (params(5, 0), params(6, 0)) == (P["P_FLUX_CN_5_0"], P["P_FLUX_CN_6_0"])
    pro2 = cat.lookup("controlnet-union-pro-2.0.safetensors")
    assert 0 < pro2.bytes - 2 * params(6, 0) < 100_000  # 4,281,779,224 published: the rest is the header
    assert 0 < 6_603_953_920 - 2 * params(5, 10, modes=10) < 100_000  # Union-Pro v1's exact size
    for name in ("instantx_flux_canny.safetensors", "flux_tile.safetensors"):
        info = catalogue_info(name, "controlnet")
        assert info.kind == "controlnet" and abs(info.weights_bytes - 3.58e9) < 0.01e9  # the 3.58 GB listings


def test_newbie_image_is_priced_as_the_lumina2_model_comfyui_detects():
    """ComfyUI 0.18.2 detects NewBie-Image as Lumina 2 (model_detection.py:432-448): the template's published size
    with the Lumina 2 blocks' traced working memory."""
    info = catalogue_info("NewBie-Image-Exp0.1-bf16.safetensors", "diffusion_models")
    assert (info.kind, info.family) == ("diffusion", "lumina2")
    assert info.weights_bytes == round(6.49 * 2**30) and "from the name" in info.evidence[0]
    assert memory.working_memory_key(info.family, info.arch) == "lumina2"
