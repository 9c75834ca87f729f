"""Ming-Image and Marigold v2 (newer ComfyUI templates): the files are named for what ComfyUI builds from them, and
their official templates get complete estimates.

- Ming-Image's DiT is Z-Image's NextDiT (model_detection.py @0b61ce5 takes it in the Lumina 2 / Z-Image branch at
  width 3840; supported_models.py @01f03bb MingImage(ZImage)); its VAE is the Wan 2.1 branch with 4 image channels;
  TextEncodeMingImageEdit (nodes_ming.py) encodes every reference at the first one's size.
- Marigold v2's task VAEs are the Qwen-Image VAE's size to the byte (data/template_models.json) and decode
  Qwen-Image-Edit's latents; its ConditioningLoader loads a saved conditioning on the CPU (nodes_cond.py)."""
import json

import pytest

from workflows.templates import template_workflow
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.workload import SAMPLE, TEXT_ENCODE, VAE_ENCODE

RTX4090 = Device.from_card(find_card("RTX 4090"))
TEMPLATES = ("image_ming_image_01_design_t2i", "image_ming_image_01_design_image_edit",
             "image_marigold_v2_albedo_estimation", "image_marigold_v2_depth_estimation",
             "image_marigold_v2_surface_normal_estimation")


def _inferred(name, role):
    info, why = infer_info(name, role)
    assert info is not None, why
    return info


def test_the_names_say_what_comfyui_builds():
    dit = _inferred("ming_image_0.1_design_int8_convrot.safetensors", "diffusion")
    assert dit.family == "z-image" and "Ming-Image" in dit.label
    assert _inferred("ming_image_vae_bf16.safetensors", "vae").family == "vae-wan2.1"
    for task in ("depth_log_stage2", "normals", "albedo"):
        vae = _inferred(f"marigold_v2_{task}_vae.safetensors", "vae")
        assert vae.family == "vae-wan2.1" and "Marigold" in vae.label


def test_the_marigold_vaes_are_the_qwen_image_vae_to_the_byte():
    from pathlib import Path

    import vram_budget.nodes.estimator as estimator

    table = json.loads((Path(estimator.__file__).parent / "data" / "template_models.json").read_text())
    files = table.get("files", table)
    qwen = files["qwen_image_vae.safetensors"]["bytes"]
    for task in ("depth_log_stage2", "normals", "albedo"):
        assert files[f"marigold_v2_{task}_vae.safetensors"]["bytes"] == qwen


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_templates_are_complete(name):
    budget = estimate(read_workflow(template_workflow(name)), RTX4090)
    out = budget.to_dict()
    assert out["complete"] is True and out["verdict"] != "unknown", out["incomplete"]
    assert not any("not understood" in n for n in out["notes"]), out["notes"]
    json.dumps(out)


def test_a_ming_edit_encodes_every_reference_at_the_first_ones_size():
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": "a.png"}},
        "2": {"class_type": "LoadImage", "inputs": {"image": "b.png"}},
        "3": {"class_type": "CLIPLoader", "inputs": {
            "clip_name": "ming_image_0.1_ling_mini_2.0_int8_convrot.safetensors", "type": "ming_image"}},
        "4": {"class_type": "VAELoader", "inputs": {"vae_name": "ming_image_vae_bf16.safetensors"}},
        "5": {"class_type": "UNETLoader", "inputs": {"unet_name": "ming_image_0.1_design_int8_convrot.safetensors",
                                                     "weight_dtype": "default"}},
        "6": {"class_type": "TextEncodeMingImageEdit", "inputs": {
            "clip": ["3", 0], "vae": ["4", 0], "prompt": "make it night", "images.image_1": ["1", 0],
            "images.image_2": ["2", 0]}},
        "7": {"class_type": "EmptyLatentImage", "inputs": {"width": 1216, "height": 832, "batch_size": 1}},
        "8": {"class_type": "KSampler", "inputs": {"model": ["5", 0], "positive": ["6", 0], "negative": ["6", 0],
                                                   "latent_image": ["7", 0], "seed": 0, "steps": 12, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "9": {"class_type": "VAEDecode", "inputs": {"samples": ["8", 0], "vae": ["4", 0]}},
        "10": {"class_type": "SaveImage", "inputs": {"images": ["9", 0], "filename_prefix": "x"}},
    }
    token = INPUT_MEDIA.set({"a.png": (1216, 832, 1), "b.png": (640, 640, 1)}.get)
    try:
        w = read_workflow(prompt)
        budget = estimate(w, RTX4090)
    finally:
        INPUT_MEDIA.reset(token)
    encodes = [s for s in w.stages if s.kind == VAE_ENCODE and s.node_type == "TextEncodeMingImageEdit"]
    # nodes_ming.py: the second image is resized (bilinear) to the first one's canvas before it is encoded
    assert [(e.latent.pixel_width, e.latent.pixel_height) for e in encodes] == [(1216, 832), (1216, 832)]
    (sample,) = w.stages_of(SAMPLE)
    assert list(sample.reference_latents) == [(104, 152), (104, 152)]
    (text,) = [s for s in w.stages if s.kind == TEXT_ENCODE]
    assert len(text.images) == 2
    (stage,) = [s for s in budget.stages if s.stage.kind == SAMPLE]
    working = next(i.assumption for i in stage.items if i.category == "working")
    # Z-Image's 2 x 2 patches: 52 x 76 tokens for the target and for each reference
    assert f"{3 * 52 * 76} latent tokens (incl. {2 * 52 * 76} of 2 reference latent(s))" in working
    assert budget.complete
