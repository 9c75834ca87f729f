"""ModelPatchLoader's files are loaded with the model they patch (comfy_extras/nodes_model_patch.py: the patch objects'
models() return them, so load_models_gpu loads them with the sampled model), and the talking-video add-ons of
WanVideoWrapper join its DiT: both are weights of the sampling stage. Before, a MODEL -> MODEL node that took a
MODEL_PATCH was followed for its MODEL only and the patch cost nothing (5 official templates answered with a patch
file of 7.9 MB to 5.1 GB left out)."""
from __future__ import annotations

import json

import helpers_models as hm
import pytest

from vram_budget.nodes.estimator.families.wan_talking import P_FANTASYTALKING, P_INFINITETALK
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.machine.resolve import folder_resolver, loaded_weights, resolve_model
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.workload import ModelRef
from workflows.corpus import community_dir

CARD = find_card("RTX 4090")
PATCHED = {  # official template -> its ModelPatchLoader file
    "image_qwen_image_controlnet_patch": "qwen_image_canny_diffsynth_controlnet.safetensors",
    "image_z_image_turbo_fun_union_controlnet": "Z-Image-Turbo-Fun-Controlnet-Union.safetensors",
    "image_anima_lllite_depth_control_to_image": "anima-lllite-depth-1.safetensors",
    "video_wan2_1_infinitetalk": "wan2.1_infiniteTalk_multi_fp16.safetensors",
}


def _templates() -> dict:
    try:
        from workflows.templates import load_templates  # noqa: PLC0415
        found = {t.name: t.workflow for t in load_templates()}
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"the official templates are not installed: {exc}")
    if not set(PATCHED) <= set(found):
        pytest.skip("this templates package lacks the ModelPatchLoader templates")
    return found


@pytest.mark.parametrize("name", sorted(PATCHED))
def test_a_templates_model_patch_is_a_weight_of_its_sampling_stage(name):
    workflow = _templates()[name]
    budget = estimate(read_workflow(workflow), Device.from_card(CARD, memory_mode="dynamic"))
    patch = PATCHED[name]
    published = catalogue_info(patch, "model_patches").weights_bytes
    items = [i for s in budget.stages if s.stage.kind == "sample" for i in s.items if patch in i.label]
    assert items, f"{patch} is not in {name}'s sampling stage"
    assert all(i.bytes == published for i in items)  # ModelPatchLoader keeps the file's dtype (Dynamic VRAM)


def test_the_multitalk_patch_is_fp32_under_classic_loading(tmp_path):
    """MultiTalkModelPatch is built with no dtype (fp32) and load_state_dict copies the file into it, unless Dynamic
    VRAM assigns the file's tensors (nodes_model_patch.py, 0.18.2 :262-271, :536-548). A real fp16 file, read by
    its header."""
    folder = tmp_path / "model_patches"
    folder.mkdir()
    spec = {"audio_proj.proj1.weight": ("F16", (512, 3840)),
            "blocks.0.audio_cross_attn.proj.weight": ("F16", (5120, 5120))}
    hm.write_safetensors(folder / "my_infinitetalk_patch.safetensors", spec)
    ref = ModelRef(role="model_patch", name="my_infinitetalk_patch.safetensors", folder="model_patches")
    info, _ = resolve_model(ref, folder_resolver(tmp_path))
    params = hm.spec_params(spec)
    classic, why = loaded_weights(info, ref, Device.from_card(CARD, memory_mode="classic"))
    dynamic, _ = loaded_weights(info, ref, Device.from_card(CARD, memory_mode="dynamic"))
    assert classic == 4 * params and "fp32" in why
    assert dynamic == info.weights_bytes
    other = ModelRef(role="model_patch", name="my_controlnet_patch.safetensors", folder="model_patches")
    hm.write_safetensors(folder / "my_controlnet_patch.safetensors", spec)
    info2, _ = resolve_model(other, folder_resolver(tmp_path))
    assert loaded_weights(info2, other, Device.from_card(CARD, memory_mode="classic"))[0] == info2.weights_bytes


def test_the_talking_add_ons_are_their_own_layers_not_the_14b():
    q8, _ = infer_info("WanVideo\\InfiniteTalk\\Wan2_1-InfiniteTalk_Single_Q8.gguf", "controlnet", "diffusion_models")
    assert q8.family == "wan21-infinitetalk" and q8.params == P_INFINITETALK and q8.quantization == "gguf Q8_0"
    fantasy, _ = infer_info("WanVideo\\fantasytalking_fp16.safetensors", "controlnet", "diffusion_models")
    assert fantasy.family == "wan21-fantasytalking" and fantasy.params == 840_437_760 == P_FANTASYTALKING
    published = catalogue_info("wan2.1_infiniteTalk_single_fp16.safetensors", "model_patches")
    assert published.family == "wan21-infinitetalk" and published.weights_bytes == 2 * P_INFINITETALK


@pytest.mark.parametrize("example,label", [
    ("wanvideo_2_1_14B_I2V_InfiniteTalk_example_03", "InfiniteTalk"),
    ("wanvideo_2_1_14B_I2V_FantasyTalking_example_01", "FantasyTalking"),
])
def test_the_wrappers_talking_examples_price_their_add_on(example, label):
    path = community_dir() / f"kijai__ComfyUI-WanVideoWrapper__{example}.json"
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout's corpus")
    budget = estimate(read_workflow(json.loads(path.read_text())), Device.from_card(CARD))
    sample = next(s for s in budget.stages if s.stage.kind == "sample" and s.stage.manager == "WanVideoWrapper")
    assert any(label in i.label and i.bytes > 0.5 * 2 ** 30 for i in sample.items), [i.label for i in sample.items]
