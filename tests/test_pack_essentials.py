"""Issue 33: ComfyUI_essentials' Image Resize (graph/packs/essentials.py) sizes the image as image.py ImageResize does,
and a mask made to that size (KJNodes' CreateGradientMask, fed the resize's width / height) turned into an image
(MaskToImage) carries it to the latent."""
from __future__ import annotations

from pathlib import Path

import pytest

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _prompt(width, height, method, condition="always", multiple=0):
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "v1-5-pruned-emaonly-fp16.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
        "3": {"class_type": "LoadImage", "inputs": {"image": "photo.png"}},  # not here: assumed 1024 x 1024
        "4": {"class_type": "ImageResize+", "inputs": {"image": ["3", 0], "width": width, "height": height,
                                                       "interpolation": "nearest", "method": method,
                                                       "condition": condition, "multiple_of": multiple}},
        "5": {"class_type": "VAEEncode", "inputs": {"pixels": ["4", 0], "vae": ["1", 2]}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0],
                                                   "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 7.0,
                                                   "sampler_name": "euler", "scheduler": "normal", "denoise": 0.6}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["1", 2]}},
        "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}},
    }


@pytest.mark.parametrize("args, size", [
    ((512, 768, "stretch"), (512, 768)),  # exactly the target, whatever the source
    ((512, 768, False), (512, 768)),  # the older keep_proportion toggle, off: stretch
    ((800, 600, "keep proportion"), (600, 600)),  # the assumed square source fits inside
    ((800, 600, "fill / crop"), (800, 600)),
    ((1000, 1000, "stretch", "always", 64), (960, 960)),  # multiple_of rounds the target down
    ((2048, 2048, "stretch", "downscale if bigger"), (1024, 1024)),  # the source is not bigger: left as it is
])
def test_the_resize_sizes_the_latent(args, size):
    budget = estimate(read_workflow(_prompt(*args)), DEV)
    assert budget.complete, budget.incomplete
    latent = next(s for s in budget.stages if s.stage.kind == "sample").stage.latent
    assert (latent.pixel_width, latent.pixel_height) == size


def test_a_gradient_mask_of_the_resized_size_sets_the_ic_light_latent():
    path = CORPUS / "huchenlei__ComfyUI-IC-Light-Native__fg_lightmap.json"
    budget = estimate(read_workflow(path.read_text(encoding="utf-8")), DEV)
    assert budget.complete, budget.incomplete
    latent = next(s for s in budget.stages if s.stage.kind == "sample").stage.latent
    assert (latent.pixel_width, latent.pixel_height) == (512, 768)  # ImageResize+ 512 x 768 -> CreateGradientMask


def test_core_image_batch_and_composite_keep_the_first_and_destination_sizes():
    """nodes.py ImageBatch resizes image2 to image1 and concatenates the batches; nodes_mask.py ImageCompositeMasked
    returns a copy of the destination: IC-Light's fg_bg_combine encodes the foreground and background as one batch of
    two, detail_transfer encodes a composite on a decoded 512 x 768 latent."""
    combine = estimate(read_workflow((CORPUS / "huchenlei__ComfyUI-IC-Light-Native__fg_bg_combine.json")
                                     .read_text(encoding="utf-8")), DEV)
    assert combine.complete, combine.incomplete
    encode = next(s for s in combine.stages if s.stage.kind == "vae_encode").stage.latent
    assert (encode.pixel_width, encode.pixel_height, encode.batch) == (512, 768, 2)
    transfer = estimate(read_workflow((CORPUS / "huchenlei__ComfyUI-IC-Light-Native__ic_light_detail_transfer.json")
                                      .read_text(encoding="utf-8")), DEV)
    assert transfer.complete, transfer.incomplete
    sample = next(s for s in transfer.stages if s.stage.kind == "sample").stage.latent
    assert (sample.pixel_width, sample.pixel_height) == (512, 768)


def _picker_prompt(resolution, batch=1, width_override=0, height_override=0):
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
        "3": {"class_type": "SDXLEmptyLatentSizePicker+", "inputs": {
            "resolution": resolution, "batch_size": batch, "width_override": width_override,
            "height_override": height_override}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0],
                                                   "latent_image": ["3", 0], "seed": 1, "steps": 20, "cfg": 7.0,
                                                   "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["1", 2]}},
        # the picker's width output sizes an upscale of the decoded image (sampling.py: LATENT, width, height)
        "9": {"class_type": "ImageScale", "inputs": {"image": ["7", 0], "upscale_method": "nearest-exact",
                                                     "width": ["3", 1], "height": ["3", 2], "crop": "disabled"}},
        "8": {"class_type": "SaveImage", "inputs": {"images": ["9", 0], "filename_prefix": "x"}},
    }


@pytest.mark.parametrize("args, size", [
    (("896x1152 (0.78)",), (896, 1152, 1)),
    (("1728x576 (3.0)", 3), (1728, 576, 3)),
    (("1024x1024 (1.0)", 2, 640, 0), (640, 1024, 2)),  # an override above 0 replaces its side only
])
def test_the_size_picker_makes_the_latent_it_names(args, size):
    """essentials sampling.py SDXLEmptyLatentSizePicker.execute: zeros [batch, 4, h // 8, w // 8] of the chosen
    "WxH (ratio)", each side overridden when its override is above 0 (the portrait-master SDXL workflow's sizer)."""
    budget = estimate(read_workflow(_picker_prompt(*args)), DEV)
    assert budget.complete, budget.incomplete
    latent = next(s for s in budget.stages if s.stage.kind == "sample").stage.latent
    assert (latent.pixel_width, latent.pixel_height, latent.batch) == size
    assert (latent.width, latent.height, latent.channels) == (size[0] // 8, size[1] // 8, 4)


def test_a_size_picker_choice_that_names_no_size_is_not_guessed():
    budget = estimate(read_workflow(_picker_prompt("custom")), DEV)
    assert not budget.complete
