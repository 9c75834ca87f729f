"""ComfyUI_IPAdapter_plus (graph/packs/ipadapter_plus.py, families/ip_adapter.py): the IP-Adapter rides on the model
it patches, outside ComfyUI's model management; its reference image goes through CLIP vision; FaceID's InsightFace
is priced only on the CPU provider (nothing on the card); its preset's files are the h94/IP-Adapter-FaceID ones."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from vram_budget.nodes.estimator.machine.device import LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.families import ip_adapter as F
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.machine.resolve import folder_resolver
from vram_budget.nodes.estimator.workload import CLIP_VISION_ENCODE, SAMPLE

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
SIMPLE = CORPUS / "cubiq__ComfyUI_IPAdapter_plus__ipadapter_simple.json"


def _device():
    return device_for_launch(find_card("RTX 4090"), LaunchFlags())


def _ipa_file(path: Path) -> int:
    """An SD1.5 IP-Adapter in the node pack's layout (image_proj.proj / .norm, ip_adapter.N.to_k_ip / to_v_ip),
    written with the real safetensors writer; returns its parameter count."""
    t = {"image_proj.proj.weight": np.zeros((3072, 1024), np.float16),
         "image_proj.proj.bias": np.zeros(3072, np.float16),
         "image_proj.norm.weight": np.zeros(768, np.float16), "image_proj.norm.bias": np.zeros(768, np.float16)}
    for i, width in enumerate(F.SD15_LAYERS):
        t[f"ip_adapter.{2 * i + 1}.to_k_ip.weight"] = np.zeros((width, 768), np.float16)
        t[f"ip_adapter.{2 * i + 1}.to_v_ip.weight"] = np.zeros((width, 768), np.float16)
    save_file(t, str(path))
    return sum(v.size for v in t.values())


def test_the_name_rules_count_the_packs_layout():
    assert len(F.SD15_LAYERS) == 16 and len(F.SDXL_LAYERS) == 70  # the patch loops of ipadapter_execute
    for name, params in (("ip-adapter_sd15.safetensors", F.P_IPA_SD15),
                         ("ip-adapter-plus-face_sd15.safetensors", F.P_IPA_SD15_PLUS),
                         ("ip-adapter-plus_sdxl_vit-h.safetensors", F.P_IPA_SDXL_PLUS),
                         ("ip-adapter_sdxl_vit-h.safetensors", F.P_IPA_SDXL_VIT_H)):
        info, _ = infer_info(name, role="ipadapter", folder="ipadapter")
        assert info is not None and info.kind == "ipadapter" and info.params == params, name
    assert F.P_IPA_SD15 < F.P_IPA_SD15_PLUS < F.P_IPA_SDXL_VIT_H < F.P_IPA_SDXL_PLUS
    info, why = infer_info("ip-adapter-faceid-plusv2_sd15.bin", role="ipadapter", folder="ipadapter")
    assert info is None and "FaceID" in why  # another layout: only its header prices it


# ComfyUI-Manager's model-list.json @ 7d2e499 ("size" of each h94/IP-Adapter file, 16-bit): an independent listing
MANAGER_SIZES_MB = {"ip-adapter_sd15.safetensors": 44.6, "ip-adapter_sd15_light_v11.bin": 44.6,
                    "ip-adapter-plus_sd15.safetensors": 98.2, "ip-adapter-plus-face_sd15.safetensors": 98.2,
                    "ip-adapter-full-face_sd15.safetensors": 43.6, "ip-adapter_sd15_vit-G.safetensors": 46.2,
                    "ip-adapter_sdxl.safetensors": 702.6, "ip-adapter_sdxl_vit-h.safetensors": 698.4,
                    "ip-adapter-plus_sdxl_vit-h.safetensors": 847.5, "ip_plus_composition_sd15.safetensors": 98.2,
                    "ip_plus_composition_sdxl.safetensors": 847.5}


@pytest.mark.parametrize("name", sorted(MANAGER_SIZES_MB))
def test_the_layout_counts_give_the_published_sizes(name):
    info, _ = infer_info(name, role="ipadapter", folder="ipadapter")
    assert info is not None, name
    assert round(info.params * 2 / 1e6, 1) == MANAGER_SIZES_MB[name]


def test_unified_loader_workflow_prices_the_adapter_and_the_image_encode():
    workload = read_workflow(SIMPLE.read_bytes())
    encode = workload.stages_of(CLIP_VISION_ENCODE)
    assert encode and [r.name for r in encode[0].models] == ["CLIP-ViT-H-14-laion2B-s32B-b79K.safetensors"]
    sample = workload.stages_of(SAMPLE)[0]
    assert [r.name for r in sample.models if r.role == "ipadapter"] == ["ip-adapter-plus_sd15.safetensors"]
    assert any("preset 'plus (high strength)' on a SD15 model loads ip-adapter-plus_sd15" in n for n in workload.notes)
    budget = estimate(workload, _device(), None)
    assert budget.complete and budget.verdict == "fits"
    stage = next(s for s in budget.stages if s.stage.kind == SAMPLE)
    item = next(i for i in stage.items if "IP-Adapter" in i.label)
    # outside ComfyUI's model management: it cannot stream, so it is the stage's working memory
    assert item.category == "working" and item.bytes == 2 * F.P_IPA_SD15_PLUS


def test_an_sdxl_model_gets_the_sdxl_file_and_an_unknown_one_is_not_priced():
    data = json.loads(SIMPLE.read_text(encoding="utf-8"))
    sdxl = copy.deepcopy(data)
    loader = next(n for n in sdxl["nodes"] if n["type"] == "CheckpointLoaderSimple")
    loader["widgets_values"] = ["sd_xl_base_1.0.safetensors"]
    sample = read_workflow(sdxl).stages_of(SAMPLE)[0]
    assert [r.name for r in sample.models if r.role == "ipadapter"] == ["ip-adapter-plus_sdxl_vit-h.safetensors"]
    unknown = copy.deepcopy(data)
    loader = next(n for n in unknown["nodes"] if n["type"] == "CheckpointLoaderSimple")
    loader["widgets_values"] = ["mymodel.safetensors"]
    workload = read_workflow(unknown)
    assert any("picks it by whether the model is SDXL" in n for n in workload.notes)
    budget = estimate(workload, _device(), None)
    assert not budget.complete and budget.verdict == "unknown"
    # a community fine-tune Civitai lists as SD 1.5 (published.civitai_info): the SD1.5 file
    listed = copy.deepcopy(data)
    loader = next(n for n in listed["nodes"] if n["type"] == "CheckpointLoaderSimple")
    loader["widgets_values"] = ["realisticVisionV60B1_v51VAE.safetensors"]
    sample = read_workflow(listed).stages_of(SAMPLE)[0]
    assert [r.name for r in sample.models if r.role == "ipadapter"] == ["ip-adapter-plus_sd15.safetensors"]


def test_a_file_present_is_read_from_its_header(tmp_path):
    (tmp_path / "ipadapter").mkdir()
    params = _ipa_file(tmp_path / "ipadapter" / "my_adapter.safetensors")
    assert params == F.P_IPA_SD15
    prompt = {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "v1-5-pruned-emaonly.safetensors"}},
        "2": {"class_type": "IPAdapterModelLoader", "inputs": {"ipadapter_file": "my_adapter.safetensors"}},
        "3": {"class_type": "CLIPVisionLoader", "inputs": {"clip_name": "CLIP-ViT-H-14-laion2B-s32B-b79K.safetensors"}},
        "4": {"class_type": "LoadImage", "inputs": {"image": "face.png"}},
        "5": {"class_type": "IPAdapterAdvanced", "inputs": {"model": ["1", 0], "ipadapter": ["2", 0], "image": ["4", 0],
                                                            "clip_vision": ["3", 0], "weight": 0.8}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a portrait"}},
        "7": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
        "8": {"class_type": "KSampler", "inputs": {"model": ["5", 0], "positive": ["6", 0], "negative": ["6", 0],
                                                   "latent_image": ["7", 0], "seed": 1, "steps": 20, "cfg": 7.0,
                                                   "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}},
        "9": {"class_type": "VAEDecode", "inputs": {"samples": ["8", 0], "vae": ["1", 2]}},
        "10": {"class_type": "SaveImage", "inputs": {"images": ["9", 0], "filename_prefix": "x"}},
    }
    workload = read_workflow(prompt)
    assert [r.name for r in workload.stages_of(CLIP_VISION_ENCODE)[0].models] == [
        "CLIP-ViT-H-14-laion2B-s32B-b79K.safetensors"]
    budget = estimate(workload, _device(), folder_resolver(tmp_path))
    stage = next(s for s in budget.stages if s.stage.kind == SAMPLE)
    item = next(i for i in stage.items if "IP-Adapter" in i.label)
    assert "header" in item.label and item.bytes == 2 * params and item.category == "working"


def _faceid(provider: str) -> dict:
    wf = json.loads((CORPUS / "cubiq__ComfyUI_IPAdapter_plus__ipadapter_faceid.json").read_text(encoding="utf-8"))
    for n in wf["nodes"]:
        if n["type"] == "IPAdapterUnifiedLoaderFaceID":
            n["widgets_values"][2] = provider
    return wf


def test_faceid_on_the_cpu_provider_is_priced_with_its_presets_files():
    budget = estimate(read_workflow(_faceid("CPU")), _device(), None)
    assert budget.complete, budget.incomplete
    names = {str(k) for k in budget.models}
    # FACEID PLUS V2 on an SD1.5 model: the IP-Adapter, its LoRA on the MODEL and CLIP-ViT-H (utils.py's patterns)
    for name in ("ip-adapter-faceid-plusv2_sd15.bin", "ip-adapter-faceid-plusv2_sd15_lora.safetensors",
                 "CLIP-ViT-H-14-laion2B-s32B-b79K.safetensors"):
        assert any(name in k for k in names), (name, names)
    sample = next(s for s in budget.stages if s.stage.kind == SAMPLE)
    assert any(r.role == "lora" and "faceid-plusv2_sd15_lora" in r.name for r in sample.stage.models)
    face = next(s for s in budget.stages if s.stage.node_type == "IPAdapterFaceID")
    assert any("CPU provider" in n for n in face.stage.notes)


@pytest.mark.parametrize("provider", ["CUDA", "ROCM"])
def test_faceid_on_a_gpu_provider_is_named_not_priced(provider):
    budget = estimate(read_workflow(_faceid(provider)), _device(), None)
    assert not budget.complete and budget.verdict == "unknown"
    assert any(f"{provider} provider" in i for i in budget.incomplete), budget.incomplete


def test_a_parameter_count_two_family_modules_define_differently_is_refused(monkeypatch):
    """The catalogue names counts by their P_* name: a second module defining P_SDXL as another number (as this
    module's first draft did) would silently re-price every SDXL checkpoint."""
    import types

    from vram_budget.nodes.estimator.families import registry

    one, two = types.ModuleType("one"), types.ModuleType("two")
    one.P_X, two.P_X = 1, 2
    monkeypatch.setattr(registry, "MODULES", (one, two))
    with pytest.raises(ValueError, match="P_X is defined in both one and two"):
        registry._params()
    two.P_X = 1  # the same count imported from the other module is the same count
    assert registry._params() == {"P_X": 1}
