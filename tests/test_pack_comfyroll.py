"""Issue 33: Comfyroll's CR Aspect Ratio (graph/packs/comfyroll.py) makes the latent and the size as
nodes_aspect_ratio.py CR_AspectRatio.Aspect_Ratio does: the preset's size (or the widgets for "custom"), swapped when
swap_dimensions is "On", times prescale_factor; zeros [batch, 4, h // 8, w // 8] at output 5 (4 before prescale_factor
existed). TTPlanetPig's 8-megapixel Flux upscale workflow is sized by it."""
from __future__ import annotations

from pathlib import Path

import pytest

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.plan.planning import estimate

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))


def _prompt(inputs: dict, slot: int = 5):
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
        "3": {"class_type": "CR Aspect Ratio", "inputs": inputs},
        "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0],
                                                   "latent_image": ["3", slot], "seed": 1, "steps": 20, "cfg": 7.0,
                                                   "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["1", 2]}},
        "9": {"class_type": "ImageScale", "inputs": {"image": ["7", 0], "upscale_method": "nearest-exact",
                                                     "width": ["3", 0], "height": ["3", 1], "crop": "disabled"}},
        "8": {"class_type": "SaveImage", "inputs": {"images": ["9", 0], "filename_prefix": "x"}},
    }


def _new(preset, swap="Off", prescale=1.0, batch=1, width=1024, height=1024):
    return {"width": width, "height": height, "aspect_ratio": preset, "swap_dimensions": swap,
            "upscale_factor": 1.0, "prescale_factor": prescale, "batch_size": batch}


@pytest.mark.parametrize("inputs, size", [
    (_new("SDXL - 3:2 landscape 1216x832"), (1216, 832, 1)),
    (_new("SDXL - 3:2 landscape 1216x832", swap="On"), (832, 1216, 1)),
    (_new("SD1.5 - 16:9 cinema 910x512", prescale=1.5, batch=2), (1365, 768, 2)),  # int(910 * 1.5)
    (_new("custom", width=640, height=960), (640, 960, 1)),
])
def test_the_aspect_ratio_node_makes_the_latent_it_names(inputs, size):
    budget = estimate(read_workflow(_prompt(inputs)), DEV)
    assert budget.complete, budget.incomplete
    latent = next(s for s in budget.stages if s.stage.kind == "sample").stage.latent
    assert (latent.pixel_width, latent.pixel_height, latent.batch) == size
    assert (latent.width, latent.height, latent.channels) == (size[0] // 8, size[1] // 8, 4)


def _ui_old_release():
    """A UI workflow saved with the release before prescale_factor: six widgets, six outputs (the latent at 4)."""
    def node(i, type_, widgets, inputs=(), outputs=()):
        return {"id": i, "type": type_, "mode": 0, "widgets_values": list(widgets),
                "inputs": [{"name": n, "type": t, "link": l} for n, t, l in inputs],
                "outputs": [{"name": n, "type": t, "links": ls} for n, t, ls in outputs]}
    nodes = [
        node(1, "CheckpointLoaderSimple", ["sd_xl_base_1.0.safetensors"],
             outputs=[("MODEL", "MODEL", [1]), ("CLIP", "CLIP", [2]), ("VAE", "VAE", [3])]),
        node(2, "CLIPTextEncode", ["a cat"], inputs=[("clip", "CLIP", 2)],
             outputs=[("CONDITIONING", "CONDITIONING", [4, 5])]),
        node(3, "CR Aspect Ratio", [1024, 1024, "SDXL - 9:16 portrait 768x1344", "Off", 1, 3],
             outputs=[("width", "INT", []), ("height", "INT", []), ("upscale_factor", "FLOAT", []),
                      ("batch_size", "INT", []), ("empty_latent", "LATENT", [6]), ("show_help", "STRING", [])]),
        node(4, "KSampler", [1, "fixed", 20, 7.0, "euler", "normal", 1.0],
             inputs=[("model", "MODEL", 1), ("positive", "CONDITIONING", 4), ("negative", "CONDITIONING", 5),
                     ("latent_image", "LATENT", 6)], outputs=[("LATENT", "LATENT", [7])]),
        node(5, "VAEDecode", [], inputs=[("samples", "LATENT", 7), ("vae", "VAE", 3)],
             outputs=[("IMAGE", "IMAGE", [8])]),
        node(6, "SaveImage", ["x"], inputs=[("images", "IMAGE", 8)]),
    ]
    links = [[1, 1, 0, 4, 0, "MODEL"], [2, 1, 1, 2, 0, "CLIP"], [3, 1, 2, 5, 1, "VAE"],
             [4, 2, 0, 4, 1, "CONDITIONING"], [5, 2, 0, 4, 2, "CONDITIONING"], [6, 3, 4, 4, 3, "LATENT"],
             [7, 4, 0, 5, 0, "LATENT"], [8, 5, 0, 6, 0, "IMAGE"]]
    return {"nodes": nodes, "links": links, "version": 0.4}


def test_the_release_without_prescale_has_its_latent_at_output_4():
    budget = estimate(read_workflow(_ui_old_release()), DEV)
    assert budget.complete, budget.incomplete
    latent = next(s for s in budget.stages if s.stage.kind == "sample").stage.latent
    assert (latent.pixel_width, latent.pixel_height, latent.batch) == (768, 1344, 3)  # the sixth widget: batch 3


def test_the_ttp_upscale_workflow_is_sized_by_it():
    path = CORPUS / "TTPlanetPig__Comfyui_TTP_Toolset__8mega_pixel_super_upscale_for_flux_ver2.json"
    budget = estimate(read_workflow(path.read_text(encoding="utf-8")), DEV)
    assert budget.complete, budget.incomplete
    first = next(s for s in budget.stages if s.stage.kind == "sample").stage.latent
    assert (first.pixel_width, first.pixel_height) == (832, 1216)  # 'SDXL - 3:2 landscape 1216x832', swapped
