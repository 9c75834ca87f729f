"""Issue 33: numz/ComfyUI-SeedVR2_VideoUpscaler priced by its own three phases (graph/packs/seedvr2_wrapper.py):
the VAE encode, one DiT step with block swap, the VAE decode, at the output size its resize rule gives."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs.seedvr2_wrapper import output_size
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

DEV = Device.from_card(find_card("RTX 4090"))
EXTRA = Path(__file__).resolve().parent / "workflows" / "community_extra"


def test_the_output_size_follows_the_packs_resize_rule():
    assert output_size(1024, 1024, 1080, 0) == (1072, 1072)  # shortest side to 1080, cropped to multiples of 16
    assert output_size(320, 478, 4096, 4096) == (2736, 4096)  # capped by max_resolution on the long side
    assert output_size(640, 360, 1080, 0) == (1920, 1072)


def _prompt(*, swap: int = 0, vae_offload: str = "cpu", tiled: bool = False, resolution: int = 2048,
            image: dict | None = None, dit: str = "seedvr2_ema_7b_fp16.safetensors") -> dict:
    return {
        "1": image or {"class_type": "EmptyImage", "inputs": {"width": 512, "height": 512, "batch_size": 1,
                                                             "color": 0}},
        "2": {"class_type": "SeedVR2LoadDiTModel", "inputs": {"model": dit, "device": "cuda:0",
                                                             "blocks_to_swap": swap, "swap_io_components": False,
                                                             "offload_device": "cpu", "cache_model": False,
                                                             "attention_mode": "sdpa"}},
        "3": {"class_type": "SeedVR2LoadVAEModel", "inputs": {"model": "ema_vae_fp16.safetensors", "device": "cuda:0",
                                                             "encode_tiled": tiled, "encode_tile_size": 1024,
                                                             "encode_tile_overlap": 128, "decode_tiled": tiled,
                                                             "decode_tile_size": 1024, "decode_tile_overlap": 128,
                                                             "tile_debug": "false", "offload_device": vae_offload,
                                                             "cache_model": False}},
        "4": {"class_type": "SeedVR2VideoUpscaler", "inputs": {"image": ["1", 0], "dit": ["2", 0], "vae": ["3", 0],
                                                               "seed": 42, "resolution": resolution,
                                                               "max_resolution": 0, "batch_size": 1,
                                                               "uniform_batch_size": False, "color_correction": "lab",
                                                               "offload_device": "cpu", "enable_debug": False}},
        "5": {"class_type": "SaveImage", "inputs": {"images": ["4", 0], "filename_prefix": "up"}},
    }


def _budget(prompt):
    budget = estimate(read_workflow(prompt), DEV)
    assert budget.complete, budget.incomplete
    return budget


def test_three_phases_at_the_output_size():
    budget = _budget(_prompt())
    kinds = [s.stage.kind for s in budget.stages]
    assert kinds == ["vae_encode", "sample", "vae_decode"]
    sample = budget.stages[1]
    assert (sample.stage.latent.pixel_width, sample.stage.latent.pixel_height) == (2048, 2048)
    assert sample.stage.steps == 1 and sample.stage.manager == "SeedVR2"
    bigger = _budget(_prompt(resolution=3072)).stages[1]
    assert bigger.working_bytes > 2 * sample.working_bytes  # 2.25x the tokens


def test_block_swap_and_tiles_lower_the_peaks():
    plain = _budget(_prompt())
    swapped = _budget(_prompt(swap=30))
    assert swapped.runs[1].peak_bytes < plain.runs[1].peak_bytes - 8 * 2 ** 30  # 30 of 36 blocks of a 14 GB DiT
    tiled = _budget(_prompt(tiled=True, resolution=4096))
    untiled = _budget(_prompt(tiled=False, resolution=4096))
    assert tiled.stages[0].working_bytes * 10 < untiled.stages[0].working_bytes  # the pack encodes tile by tile


def test_a_vae_kept_on_the_card_stays_through_the_dit_phase():
    kept = _budget(_prompt(vae_offload="none"))
    moved = _budget(_prompt(vae_offload="cpu"))
    vae = kept.stages[0].weights_bytes
    assert kept.runs[1].peak_bytes == moved.runs[1].peak_bytes + vae


def test_an_input_of_unknown_size_is_named():
    prompt = _prompt(image={"class_type": "LoadVideo", "inputs": {"file": "clip.mp4"}})
    prompt["6"] = {"class_type": "GetVideoComponents", "inputs": {"video": ["1", 0]}}
    prompt["4"]["inputs"]["image"] = ["6", 0]
    budget = estimate(read_workflow(prompt), DEV)
    assert not budget.complete
    assert any("shortest side" in str(x) for x in budget.incomplete) or "shortest side" in json.dumps(budget.to_dict())


@pytest.mark.parametrize("name", ["SeedVR2_4K_image_upscale", "SeedVR2_simple_image_upscale"])
def test_the_packs_image_examples_are_complete(name):
    path = EXTRA / f"numz__ComfyUI-SeedVR2_VideoUpscaler__{name}.json"
    budget = estimate(read_workflow(json.loads(path.read_text())), DEV)
    assert budget.complete, budget.incomplete


def test_absurd_widget_values_are_bounded_by_the_nodes_own_limits():
    prompt = _prompt(resolution=10**9)
    prompt["4"]["inputs"]["batch_size"] = 10**12
    budget = estimate(read_workflow(prompt), DEV)
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.stage.latent.pixel_width <= 16384 and sample.stage.latent.pixel_frames <= 16384
