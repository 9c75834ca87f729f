"""graph.read_workflow: API prompts and UI workflows -> Workload.

Fixtures (tests/fixtures/):
- ui/*.json and example_workflows/*.json: UI workflows (tests/fixtures/make_workflows.py);
- frontend/*.api.json: what the real frontend (comfyui-frontend-package 1.35.9,
  `app.graphToPrompt()`, bench/frontend_graph_to_prompt.py) POSTs for those UI workflows;
- api/*.json: hand-written API prompts (GGUF loaders, this pack's nodes, CLIP vision).
"""
from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vram_budget.nodes.estimator.graph import node_specs
from vram_budget.nodes.estimator.errors import WorkflowError
from vram_budget.nodes.estimator.graph import estimate_text_tokens, read_workflow
from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA
from vram_budget.nodes.estimator.workload import (CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE,
                                                  Workload)

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"
UI_FIXTURES = sorted((FIX / "ui").glob("*.json")) + [REPO / "example_workflows" / "flux_dev_1024.json",
                                                     REPO / "example_workflows" / "wan22_14b_i2v_720p.json"]


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def read(path: Path) -> Workload:
    return read_workflow(path.read_text())


def kinds(workload: Workload) -> list[str]:
    return [s.kind for s in workload.stages]


def frontend_prompt(name: str) -> dict:
    return load(FIX / "frontend" / f"{name}.api.json")["prompt"]


# ---------------------------------------------------------------------------- the example workflows
def test_flux_dev_example_reads_models_shapes_and_order():
    w = read(REPO / "example_workflows" / "flux_dev_1024.json")
    assert w.source_format == "ui"
    assert kinds(w) == [TEXT_ENCODE, SAMPLE, VAE_DECODE]
    text, sample, decode = w.stages
    assert [(m.role, m.name, m.folder, m.clip_type) for m in text.models] == [
        ("text_encoder", "clip_l.safetensors", "text_encoders", "flux"),
        ("text_encoder", "t5xxl_fp16.safetensors", "text_encoders", "flux")]
    assert [(m.role, m.name, m.folder, m.weight_dtype) for m in sample.models] == [
        ("diffusion", "flux1-dev.safetensors", "diffusion_models", "default")]
    assert (sample.cfg, sample.steps, sample.uses_negative, sample.expert) == (1.0, 20, True, None)
    lat = sample.latent
    assert (lat.batch, lat.channels, lat.height, lat.width, lat.frames) == (1, 16, 128, 128, None)
    assert (lat.pixel_width, lat.pixel_height, lat.source_type) == (1024, 1024, "EmptySD3LatentImage")
    assert [m.name for m in decode.models] == ["ae.safetensors"]
    assert decode.latent == lat
    assert w.unknown_nodes == ()
    assert {m.name for m in w.models} == {"clip_l.safetensors", "t5xxl_fp16.safetensors", "flux1-dev.safetensors",
                                          "ae.safetensors"}


def test_wan22_a14b_two_experts():
    w = read(REPO / "example_workflows" / "wan22_14b_i2v_720p.json")
    samples = w.stages_of(SAMPLE)
    assert [(s.node_id, s.expert, s.steps, s.cfg) for s in samples] == [
        ("11", "high_noise", 10, 3.5), ("12", "low_noise", 10, 3.5)]
    assert [m.name for m in samples[0].models] == ["wan2.2_i2v_high_noise_14B_fp16.safetensors"]
    assert [m.name for m in samples[1].models] == ["wan2.2_i2v_low_noise_14B_fp16.safetensors"]
    for s in samples:  # the low-noise pass continues the high-noise latent
        lat = s.latent
        assert (lat.batch, lat.channels, lat.frames, lat.height, lat.width) == (1, 16, 21, 90, 160)
        assert (lat.pixel_width, lat.pixel_height, lat.pixel_frames) == (1280, 720, 81)
        assert (lat.spatial_compression, lat.temporal_compression) == (8, 4)
    text = w.stages_of(TEXT_ENCODE)
    assert len(text) == 2 and all([(m.name, m.clip_type) for m in t.models] ==
                                  [("umt5_xxl_fp16.safetensors", "wan")] for t in text)
    encode = w.stages_of(VAE_ENCODE)  # WanImageToVideo encodes the start image (81 frames) inside
    assert [(s.node_type, s.latent.frames) for s in encode] == [("WanImageToVideo", 21)]
    decode = w.stages_of(VAE_DECODE)
    assert decode[0].latent.pixel_frames == 81 and decode[0].models[0].name == "wan_2.1_vae.safetensors"
    order = [s.node_id for s in w.stages]
    assert order.index("11") < order.index("12") < order.index("13")


# --------------------------------------------------------------------------------- UI fixtures
def test_wan21_t2v_latent_832x480x81():
    w = read(FIX / "ui" / "wan21_t2v.json")
    (sample,) = w.stages_of(SAMPLE)
    lat = sample.latent
    assert (lat.channels, lat.frames, lat.height, lat.width) == (16, 21, 60, 104)
    assert (sample.cfg, sample.steps) == (6.0, 30)
    assert sample.models[0].name == "wan2.1_t2v_14B_fp16.safetensors"  # through ModelSamplingSD3


def test_flux_custom_sampler_basic_guider_has_no_negative():
    w = read(FIX / "ui" / "flux_dev_custom_sampler.json")
    (sample,) = w.stages_of(SAMPLE)
    assert sample.node_type == "SamplerCustomAdvanced"
    assert sample.uses_negative is False and sample.cfg is None
    assert sample.steps == 20  # BasicScheduler
    assert [(m.name, m.weight_dtype) for m in sample.models] == [("flux1-dev-fp8.safetensors", "fp8_e4m3fn")]
    assert (sample.latent.width, sample.latent.height) == (128, 96)


def test_sdxl_checkpoint_lora_controlnet_upscale_tiled():
    w = read(FIX / "ui" / "sdxl_lora_controlnet.json")
    first, second = w.stages_of(SAMPLE)
    assert [(m.role, m.name, m.part, m.strength) for m in first.models] == [
        ("checkpoint", "sd_xl_base_1.0.safetensors", "model", None),
        ("lora", "sdxl/pixel-art-xl.safetensors", None, 0.8),
        ("controlnet", "controlnet-canny-sdxl-1.0.safetensors", None, None)]
    # the second pass takes the text conditioning directly: no ControlNet
    assert [m.role for m in second.models] == ["checkpoint", "lora"]
    assert (first.latent.batch, first.latent.channels, first.latent.width) == (2, None, 128)
    assert (second.latent.width, second.latent.pixel_width) == (192, 1536)  # LatentUpscaleBy 1.5
    assert any("strength_model is 0" in n for n in w.notes)  # the 0-strength LoRA is a no-op
    text = w.stages_of(TEXT_ENCODE)[0]
    assert [(m.role, m.part, m.strength) for m in text.models] == [("checkpoint", "clip", None), ("lora", None, 1.0)]
    (decode,) = w.stages_of(VAE_DECODE)
    assert decode.tiled == {"tile_size": 512, "overlap": 64, "temporal_size": 64, "temporal_overlap": 8}
    assert [(m.part, m.loader_type) for m in decode.models] == [("vae", "CheckpointLoaderSimple")]


def test_subgraph_ids_promoted_widget_and_outputs():
    w = read(FIX / "ui" / "subgraph_flux.json")
    assert [(s.kind, s.node_id) for s in w.stages] == [(TEXT_ENCODE, "20:23:24"), (SAMPLE, "20:22"),
                                                       (VAE_DECODE, "5")]
    sample = w.stages[1]
    assert sample.steps == 12  # the instance's promoted widget, as frontend 1.35.9 sends it
    assert sample.models[0].name == "flux1-dev.safetensors"
    assert (sample.latent.pixel_width, sample.latent.pixel_height) == (1280, 768)
    assert w.stages[2].latent == sample.latent  # the LATENT leaves the subgraph through its output
    assert [m.name for m in w.stages[0].models] == ["clip_l.safetensors", "t5xxl_fp16.safetensors"]


def test_subgraph_promoted_widgets_in_proxy_widgets_order():
    """Newer frontends save an instance's widgets_values in properties.proxyWidgets order, which need not
    be the subgraph inputs' order (the official Flux.2 template: text, width, height, seed)."""
    data = json.loads((FIX / "ui" / "subgraph_flux.json").read_text())
    instance = next(n for n in data["nodes"] if n["id"] == 20)
    instance["inputs"] = [s for s in instance["inputs"] if s["name"] != "steps"]
    instance["properties"]["proxyWidgets"] = [["22", "seed"], ["22", "control_after_generate"], ["-1", "steps"]]
    instance["widgets_values"] = [123456, 9]
    sample = read_workflow(data).stages_of(SAMPLE)[0]
    assert sample.steps == 9  # not 123456 (the first value) nor the inner widget's 20
    instance["properties"]["proxyWidgets"] = [["-1", "steps"], ["22", "seed"]]
    instance["widgets_values"] = [7, 123456]
    assert read_workflow(data).stages_of(SAMPLE)[0].steps == 7
    # the Flux.2 Klein edit templates: the inner seed is promoted but saves no value of its own
    instance["properties"]["proxyWidgets"] = [["22", "cfg"], ["-1", "steps"], ["22", "seed"]]
    instance["widgets_values"] = [5]
    instance["inputs"].append({"name": "cfg", "type": "FLOAT", "widget": {"name": "cfg"}, "link": None})
    assert read_workflow(data).stages_of(SAMPLE)[0].steps == 5


def test_bypass_mute_reroute_primitives():
    w = read(FIX / "ui" / "bypass_mute_reroute.json")
    assert kinds(w) == [TEXT_ENCODE, TEXT_ENCODE, SAMPLE, VAE_DECODE]  # the muted sampler does not run
    sample = w.stages_of(SAMPLE)[0]
    assert [(m.role, m.part) for m in sample.models] == [("checkpoint", "model")]  # bypassed LoRA passes through
    assert all(m.role != "lora" for m in w.models)
    assert sample.steps == 12  # from a PrimitiveInt node
    assert (sample.latent.pixel_width, sample.latent.pixel_height) == (768, 768)  # from a PrimitiveNode
    assert w.stages_of(VAE_DECODE)[0].models[0].part == "vae"  # through a Reroute
    assert any("node 2 (LoraLoader) is bypassed" in n for n in w.notes)
    assert any("node 14 (KSampler) is muted" in n for n in w.notes)


def _without_titles(workload: Workload):
    return tuple(replace(s, title="") for s in workload.stages)


@pytest.mark.parametrize("path", UI_FIXTURES, ids=lambda p: p.stem)
def test_ui_workflow_and_frontend_api_prompt_give_the_same_stages(path):
    """The API prompt the real frontend made from the same UI file reads to the same stages."""
    ui = read(path)
    api = read_workflow(frontend_prompt(path.stem))
    assert (ui.source_format, api.source_format) == ("ui", "api")
    assert _without_titles(ui) == _without_titles(api)
    assert set(ui.models) == set(api.models)
    assert ui.stages, "fixture without stages"


@pytest.mark.parametrize("path", UI_FIXTURES, ids=lambda p: p.stem)
def test_stages_follow_dependencies(path):
    """A stage never comes before a stage it depends on; text encodes come before samplers."""
    w = read(path)
    order = {s.node_id: i for i, s in enumerate(w.stages)}
    prompt = frontend_prompt(path.stem)

    def upstream(node_id, seen):
        for value in prompt.get(node_id, {}).get("inputs", {}).values():
            if isinstance(value, list) and len(value) == 2 and value[0] not in seen:
                seen.add(value[0])
                upstream(value[0], seen)
        return seen

    for stage in w.stages:
        for dep in upstream(stage.node_id, set()):
            if dep in order:
                assert order[dep] < order[stage.node_id], (dep, stage.node_id)
    sample_positions = [i for i, s in enumerate(w.stages) if s.kind == SAMPLE]
    text_positions = [i for i, s in enumerate(w.stages) if s.kind == TEXT_ENCODE]
    assert max(text_positions) < min(sample_positions)


def test_example_workflows_are_loadable_ui_files():
    """Version 0.4 UI files: ids, positions, typed slots with link ids, a consistent links array."""
    for name in ("flux_dev_1024", "wan22_14b_i2v_720p"):
        wf = load(REPO / "example_workflows" / f"{name}.json")
        assert wf["version"] == 0.4 and wf["last_node_id"] == max(n["id"] for n in wf["nodes"])
        links = {link[0]: link for link in wf["links"]}
        assert wf["last_link_id"] == max(links)
        nodes = {n["id"]: n for n in wf["nodes"]}
        for link_id, origin, oslot, target, tslot, type_ in wf["links"]:
            assert link_id in nodes[origin]["outputs"][oslot]["links"]
            assert nodes[target]["inputs"][tslot]["link"] == link_id
            assert nodes[origin]["outputs"][oslot]["type"] == nodes[target]["inputs"][tslot]["type"] == type_
        for node in wf["nodes"]:
            assert {"id", "type", "pos", "size", "mode", "inputs", "outputs", "widgets_values"} <= set(node)
            spec = node_specs.load_specs()["nodes"][node["type"]]
            assert node_specs.map_widget_values(spec, node["widgets_values"]) is not None, node["type"]


# -------------------------------------------------------------------------------- API fixtures
def test_gguf_loaders_and_this_packs_nodes():
    w = read(FIX / "api" / "flux_schnell_gguf_autotiled.json")
    assert w.source_format == "api" and w.unknown_nodes == ()
    text, sample, decode = w.stages
    assert [(m.name, m.gguf, m.loader_type) for m in text.models] == [
        ("t5-v1_1-xxl-encoder-Q5_K_M.gguf", True, "DualCLIPLoaderGGUF"),
        ("clip_l.safetensors", True, "DualCLIPLoaderGGUF")]
    assert [(m.name, m.gguf, m.folder) for m in sample.models] == [("flux1-schnell-Q4_K_S.gguf", True,
                                                                    "diffusion_models")]
    assert (sample.cfg, sample.uses_negative, sample.steps, sample.latent.batch) == (1.0, True, 4, 4)
    assert decode.node_type == "VAEDecodeAutoTiled" and decode.auto_tiled and decode.tiled is None
    assert text.text_tokens == 77  # 17 words x 1.3 -> below one CLIP chunk


def test_clip_vision_stage_and_cpu_text_encoder():
    w = read(FIX / "api" / "wan21_i2v_clip_vision.json")
    (cv,) = w.stages_of(CLIP_VISION_ENCODE)
    assert [(m.role, m.name, m.folder) for m in cv.models] == [("clip_vision", "clip_vision_h.safetensors",
                                                               "clip_vision")]
    assert w.stages_of(TEXT_ENCODE)[0].models[0].device == "cpu"
    (sample,) = w.stages_of(SAMPLE)
    assert sample.models[0].weight_dtype == "fp8_e4m3fn_fast"
    assert (sample.latent.frames, sample.latent.pixel_frames) == (9, 33)
    order = [s.kind for s in w.stages]
    assert order.index(CLIP_VISION_ENCODE) < order.index(SAMPLE)


# ------------------------------------------------------------------------------ small API graphs
def _api(**nodes) -> dict:
    return {nid: {"class_type": t, "inputs": inputs} for nid, (t, inputs) in nodes.items()}


def base_prompt(latent=("EmptyLatentImage", {"width": 512, "height": 512, "batch_size": 1})) -> dict:
    return _api(**{
        "1": ("CheckpointLoaderSimple", {"ckpt_name": "sd15.safetensors"}),
        "2": ("CLIPTextEncode", {"clip": ["1", 1], "text": "a cat"}),
        "3": latent,
        "4": ("KSampler", {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0], "latent_image": ["3", 0],
                           "seed": 1, "steps": 20, "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal",
                           "denoise": 1.0}),
        "5": ("VAEDecode", {"samples": ["4", 0], "vae": ["1", 2]}),
        "6": ("SaveImage", {"images": ["5", 0], "filename_prefix": "x"}),
    })


def test_unknown_model_to_model_node_is_followed_and_listed():
    p = base_prompt()
    p["7"] = {"class_type": "MyFancyModelPatch", "inputs": {"model": ["1", 0], "amount": 0.5}}
    p["4"]["inputs"]["model"] = ["7", 0]
    w = read_workflow(p)
    assert ("7", "MyFancyModelPatch") in w.unknown_nodes
    assert [m.part for m in w.stages_of(SAMPLE)[0].models] == ["model"]
    assert any("MyFancyModelPatch" in n and "followed its MODEL input" in n for n in w.notes)
    # and why it is not understood: no ComfyUI up to the newest the specs were made from has it
    newest = max(node_specs.load_specs()["comfyui_versions"], key=lambda v: tuple(map(int, v.split("."))))
    assert newest == "0.33.0"
    assert any(n.startswith("node types not understood, in no ComfyUI up to 0.33.0") and "MyFancyModelPatch" in n
               for n in w.notes), w.notes
    live = dict(node_specs.load_specs(), comfyui_versions=None)  # a live ComfyUI's own nodes: a custom node
    assert any("not among this ComfyUI's nodes" in n for n in read_workflow(p, specs=live).notes)


def test_unknown_ui_node_with_typed_sockets():
    wf = load(REPO / "example_workflows" / "flux_dev_1024.json")
    sampler = next(n for n in wf["nodes"] if n["type"] == "KSampler")
    model_link = sampler["inputs"][0]["link"]
    link = next(lk for lk in wf["links"] if lk[0] == model_link)
    wf["nodes"].append({"id": 99, "type": "SomePack_TeaCache", "pos": [0, 0], "size": [200, 80], "flags": {},
                        "order": 0, "mode": 0, "inputs": [{"name": "model", "type": "MODEL", "link": 500}],
                        "outputs": [{"name": "MODEL", "type": "MODEL", "links": [model_link]}],
                        "properties": {}, "widgets_values": [0.4]})
    wf["links"].append([500, link[1], link[2], 99, 0, "MODEL"])
    link[1], link[2] = 99, 0
    w = read_workflow(wf)
    # a UI workflow records the node's socket types (the frontend wrote them from the author's /object_info):
    # MODEL -> MODEL with no model file of its own is read as passing the model through, and said so
    assert ("99", "SomePack_TeaCache") not in w.unknown_nodes
    assert any("'SomePack_TeaCache' read as passing MODEL through" in n and "socket types" in n for n in w.notes)
    assert w.stages_of(SAMPLE)[0].models[0].name == "flux1-dev.safetensors"
    # the same node in an API prompt carries no socket types: not understood
    api = base_prompt()
    api["9"] = {"class_type": "SomePack_TeaCache", "inputs": {"model": ["1", 0], "rel_l1": 0.4}}
    api["5"]["inputs"]["model"] = ["9", 0]
    assert ("9", "SomePack_TeaCache") in read_workflow(api).unknown_nodes


def _ui_node(nid, type_, inputs, outputs, values=None):
    return {"id": nid, "type": type_, "pos": [0, 0], "size": [1, 1], "flags": {}, "order": 0, "mode": 0,
            "inputs": [{"name": n, "type": t, "link": lk} for n, t, lk in inputs],
            "outputs": [{"name": t, "type": t, "links": lks} for t, lks in outputs], "properties": {},
            "widgets_values": values or []}


def test_recorded_sockets_a_pack_model_runner_stays_unpriced():
    """A node that consumes what a pack's loader makes (a type no table knows) runs that model: can't tell, named;
    a node that names a model file and outputs an image runs a model of its own: not understood."""
    wf = load(REPO / "example_workflows" / "flux_dev_1024.json")
    decode = next(n for n in wf["nodes"] if n["type"] == "VAEDecode")
    image_link = next(lk for lk in wf["links"] if lk[1] == decode["id"])
    wf["nodes"] += [
        _ui_node(97, "SomePackLoadUpscaler", [("compile_args", "SOME_COMPILE_ARGS", None)],
                 [("SOMEPACK_UPSCALER", [600])], ["someupscaler_3b.safetensors"]),
        _ui_node(98, "SomePackUpscale", [("image", "IMAGE", 601), ("upscaler", "SOMEPACK_UPSCALER", 600)],
                 [("IMAGE", [])]),
        _ui_node(96, "SomePackFaceFix", [("image", "IMAGE", 602)], [("IMAGE", [])], ["facefix_v2.pth", 0.5])]
    wf["links"] += [[600, 97, 0, 98, 1, "SOMEPACK_UPSCALER"], [601, image_link[1], 0, 98, 0, "IMAGE"],
                    [602, image_link[1], 0, 96, 0, "IMAGE"]]
    w = read_workflow(wf)
    runner = [s for s in w.stages if s.node_type == "SomePackUpscale"]
    assert runner and "SOMEPACK_UPSCALER" in runner[0].unpriced
    assert ("96", "SomePackFaceFix") in w.unknown_nodes
    assert ("98", "SomePackUpscale") not in w.unknown_nodes


def test_recorded_wildcard_node_passes_its_input_on():
    """A compile node recorded as * -> * (Comfy-WaveSpeed's EnhancedCompileModel) passes the model it takes on."""
    wf = load(REPO / "example_workflows" / "flux_dev_1024.json")
    sampler = next(n for n in wf["nodes"] if n["type"] == "KSampler")
    link = next(lk for lk in wf["links"] if lk[0] == sampler["inputs"][0]["link"])
    wf["nodes"].append(_ui_node(99, "SomePackCompile", [("model", "*", 500)], [("*", [link[0]])]))
    wf["links"].append([500, link[1], link[2], 99, 0, "MODEL"])
    link[1], link[2] = 99, 0
    w = read_workflow(wf)
    assert w.stages_of(SAMPLE)[0].models[0].name == "flux1-dev.safetensors"
    assert any("'SomePackCompile' read as passing its input through" in n for n in w.notes)


def test_helper_nodes_without_model_sockets_are_not_unknown():
    p = base_prompt()
    p["8"] = {"class_type": "SomePack_ImageSharpen", "inputs": {"image": ["5", 0]}}
    wf_ui = load(REPO / "example_workflows" / "flux_dev_1024.json")
    wf_ui["nodes"].append({"id": 98, "type": "SomePack_StringThing", "pos": [0, 0], "size": [1, 1], "flags": {},
                           "order": 0, "mode": 0, "inputs": [], "outputs": [{"name": "STRING", "type": "STRING",
                                                                             "links": []}], "properties": {}})
    w_ui = read_workflow(wf_ui)
    assert w_ui.unknown_nodes == ()
    assert any("SomePack_StringThing" in n for n in w_ui.notes)
    # in an API prompt there are no socket types: an unknown type is always listed
    assert ("8", "SomePack_ImageSharpen") in read_workflow(p).unknown_nodes


def test_stage_not_reaching_an_output_is_kept_with_a_note():
    p = base_prompt()
    del p["6"]
    p["9"] = {"class_type": "PreviewImage", "inputs": {"images": ["10", 0]}}
    p["10"] = {"class_type": "EmptyImage", "inputs": {"width": 64, "height": 64, "batch_size": 1, "color": 0}}
    w = read_workflow(p)
    assert kinds(w) == [TEXT_ENCODE, SAMPLE, VAE_DECODE]
    assert all(any("does not lead to an output node" in n for n in s.notes) for s in w.stages)


def test_latent_ops_and_vae_encode_sizes():
    p = base_prompt(("LatentUpscale", {"samples": ["20", 0], "upscale_method": "nearest-exact", "width": 0,
                                       "height": 1024, "crop": "disabled"}))
    p["20"] = {"class_type": "RepeatLatentBatch", "inputs": {"samples": ["21", 0], "amount": 3}}
    p["21"] = {"class_type": "VAEEncode", "inputs": {"pixels": ["22", 0], "vae": ["1", 2]}}
    p["22"] = {"class_type": "ImageScale", "inputs": {"image": ["23", 0], "upscale_method": "bilinear",
                                                      "width": 768, "height": 512, "crop": "disabled"}}
    p["23"] = {"class_type": "LoadImage", "inputs": {"image": "x.png"}}
    w = read_workflow(p)
    (encode,) = w.stages_of(VAE_ENCODE)
    assert (encode.latent.width, encode.latent.height, encode.latent.channels) == (96, 64, None)
    lat = w.stages_of(SAMPLE)[0].latent
    # nodes.py LatentUpscale: width 0 keeps the aspect: round(96 * 1024 / 64) = 1536 px
    assert (lat.batch, lat.pixel_width, lat.pixel_height, lat.width, lat.height) == (3, 1536, 1024, 192, 128)
    # from a loaded image: without a readable input folder a stated 1-megapixel assumption ...
    p["21"]["inputs"]["pixels"] = ["23", 0]
    w = read_workflow(p)
    assert (w.stages_of(VAE_ENCODE)[0].latent.pixel_width, w.stages_of(VAE_ENCODE)[0].latent.pixel_height) == (
        1024, 1024)
    assert any("assumed 1024×1024 (1 megapixel)" in n for n in w.notes)
    # ... and the file's own size when the input folder is readable (ComfyUI's, or --input-dir)
    token = INPUT_MEDIA.set(lambda name: (640, 448, 1) if name == p["23"]["inputs"]["image"] else None)
    try:
        w = read_workflow(p)
    finally:
        INPUT_MEDIA.reset(token)
    enc = w.stages_of(VAE_ENCODE)[0].latent
    assert (enc.pixel_width, enc.pixel_height, enc.width, enc.height) == (640, 448, 80, 56)
    assert not any("assumed 1024" in n for n in w.notes)


def test_input_image_sizes_come_from_the_file_header_and_stay_in_the_input_folder(tmp_path):
    import struct
    import zlib

    from vram_budget.nodes.estimator.models.media import image_size, input_reader

    def png(w, h):
        ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr
                + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr)))

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.png").write_bytes(png(1216, 832))
    jpeg = (b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
            + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 720, 1280) + b"\x03" + b"\x00" * 9)
    (tmp_path / "in" / "b.jpg").write_bytes(jpeg)
    (tmp_path / "secret.png").write_bytes(png(10, 10))
    assert image_size(str(tmp_path / "in" / "a.png")) == (1216, 832)
    assert image_size(str(tmp_path / "in" / "b.jpg")) == (1280, 720)
    read = input_reader(str(tmp_path / "in"))
    assert read("a.png")[:3] == (1216, 832, 1) and read("a.png [input]")[:3] == (1216, 832, 1)  # a still: 1 frame
    assert read("../secret.png") is None and read(str(tmp_path / "secret.png")) is None  # never outside the folder
    assert read("missing.png") is None and read("") is None
    (tmp_path / "in" / "junk.png").write_bytes(b"\x89PNG not really")
    assert read("junk.png") is None


def test_ksampler_advanced_steps_and_dual_cfg_guider():
    p = base_prompt()
    p["4"] = {"class_type": "KSamplerAdvanced", "inputs": {
        "model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0], "latent_image": ["3", 0], "add_noise": "enable",
        "noise_seed": 1, "steps": 30, "cfg": 5, "sampler_name": "euler", "scheduler": "normal",
        "start_at_step": 25, "end_at_step": 10000, "return_with_leftover_noise": "disable"}}
    assert read_workflow(p).stages_of(SAMPLE)[0].steps == 5
    p["4"] = {"class_type": "SamplerCustomAdvanced", "inputs": {"noise": ["30", 0], "guider": ["31", 0],
                                                                "sampler": ["32", 0], "sigmas": ["33", 1],
                                                                "latent_image": ["3", 0]}}
    p["31"] = {"class_type": "DualCFGGuider", "inputs": {"model": ["1", 0], "cond1": ["2", 0], "cond2": ["2", 0],
                                                         "negative": ["2", 0], "cfg_conds": 8.0,
                                                         "cfg_cond2_negative": 8.0, "style": "regular"}}
    p["33"] = {"class_type": "SplitSigmas", "inputs": {"sigmas": ["34", 0], "step": 12}}
    p["34"] = {"class_type": "BasicScheduler", "inputs": {"model": ["1", 0], "scheduler": "simple", "steps": 30,
                                                          "denoise": 1.0}}
    sample = read_workflow(p).stages_of(SAMPLE)[0]
    assert (sample.cfg, sample.uses_negative, sample.steps) == (8.0, True, 18)


def test_values_from_primitive_math_and_switch_nodes():
    p = base_prompt(("EmptySD3LatentImage", {"width": ["40", 0], "height": ["41", 1], "batch_size": ["42", 0]}))
    p["40"] = {"class_type": "PrimitiveInt", "inputs": {"value": 1344}}
    p["41"] = {"class_type": "ComfyMathExpression", "inputs": {"expression": "a * 3 // 4", "values.a": ["40", 0]}}
    p["42"] = {"class_type": "ComfySwitchNode", "inputs": {"switch": ["43", 0], "on_true": 2, "on_false": 5}}
    p["43"] = {"class_type": "PrimitiveBoolean", "inputs": {"value": True}}
    lat = read_workflow(p).stages_of(SAMPLE)[0].latent
    assert (lat.pixel_width, lat.pixel_height, lat.batch) == (1344, 1008, 2)
    p["41"]["inputs"]["expression"] = "__import__('os').system('true')"  # never evaluated
    w = read_workflow(p)
    assert w.stages_of(SAMPLE)[0].latent is None
    assert any("'height' is computed by a linked node" in n for n in w.notes)


def test_text_tokens():
    assert estimate_text_tokens("") == 77
    assert estimate_text_tokens("word " * 100) == 130
    p = base_prompt()
    p["2"]["inputs"]["text"] = " ".join(["castle"] * 200)
    assert read_workflow(p).stages_of(TEXT_ENCODE)[0].text_tokens == 260


def test_wan22_5b_latent_and_wan_flf_vae_dependent():
    p = base_prompt(("Wan22ImageToVideoLatent", {"vae": ["50", 0], "width": 1280, "height": 704, "length": 121,
                                                 "batch_size": 1}))
    p["50"] = {"class_type": "VAELoader", "inputs": {"vae_name": "wan2.2_vae.safetensors"}}
    lat = read_workflow(p).stages_of(SAMPLE)[0].latent
    assert (lat.channels, lat.frames, lat.height, lat.width, lat.spatial_compression) == (48, 31, 44, 80, 16)
    p["3"] = {"class_type": "WanFirstLastFrameToVideo", "inputs": {
        "positive": ["2", 0], "negative": ["2", 0], "vae": ["50", 0], "width": 832, "height": 480, "length": 81,
        "batch_size": 1}}
    p["4"]["inputs"]["latent_image"] = ["3", 2]
    p["3"]["inputs"]["vae"] = ["50", 0]
    lat = read_workflow(p).stages_of(SAMPLE)[0].latent
    assert (lat.channels, lat.spatial_compression, lat.width) == (48, 16, 52)  # judged from the VAE name
    p["50"]["inputs"]["vae_name"] = "wan_2.1_vae.safetensors"
    lat = read_workflow(p).stages_of(SAMPLE)[0].latent
    assert (lat.channels, lat.spatial_compression, lat.width) == (16, 8, 104)


@pytest.mark.parametrize("creator,inputs,expected", [
    ("EmptyFlux2LatentImage", {"width": 1024, "height": 768, "batch_size": 1}, (128, None, 48, 64)),
    ("EmptyHunyuanVideo15Latent", {"width": 848, "height": 480, "length": 25, "batch_size": 1}, (32, 7, 30, 53)),
    ("EmptyLTXVLatentVideo", {"width": 768, "height": 512, "length": 97, "batch_size": 1}, (128, 13, 16, 24)),
    ("EmptyMochiLatentVideo", {"width": 848, "height": 480, "length": 25, "batch_size": 1}, (12, 5, 60, 106)),
    ("WanVaceToVideo", {"width": 832, "height": 480, "length": 81, "batch_size": 1, "strength": 1.0,
                        "positive": ["2", 0], "negative": ["2", 0], "vae": ["1", 2]}, (16, 21, 60, 104)),
    ("EmptyQwenImageLayeredLatentImage", {"width": 640, "height": 640, "layers": 3, "batch_size": 1},
     (16, 4, 80, 80)),
])
def test_latent_creators(creator, inputs, expected):
    p = base_prompt((creator, inputs))
    if creator == "WanVaceToVideo":
        p["4"]["inputs"]["latent_image"] = ["3", 2]
    lat = read_workflow(p).stages_of(SAMPLE)[0].latent
    assert (lat.channels, lat.frames, lat.height, lat.width) == expected


# ------------------------------------------------------------------------------ malformed input
@pytest.mark.parametrize("data,match", [
    ("{not json", "not JSON"),
    ("[1, 2]", "must be a JSON object"),
    (42, "must be a JSON object"),
    ({"3": {"inputs": {}}}, "no class_type"),
    ({"3": {"class_type": "KSampler", "inputs": [1]}}, r"node 3 \(KSampler\): inputs is not an object"),
    ({"3": "KSampler"}, "node 3"),
    ({"nodes": [{"id": 1}], "links": []}, "without id/type"),
    ({"something": "else"}, "not a ComfyUI workflow"),
])
def test_malformed_input_raises_workflow_error(data, match):
    with pytest.raises(WorkflowError, match=match):
        read_workflow(data)


def test_dangling_links_cycles_bad_and_absurd_values_are_notes():
    p = base_prompt()
    p["4"]["inputs"]["negative"] = ["77", 0]  # missing node
    w = read_workflow(p)
    assert any("links to missing node 77" in n for n in w.notes)
    assert w.stages_of(SAMPLE)[0].uses_negative is False

    p = base_prompt()
    p["8"] = {"class_type": "LatentUpscaleBy", "inputs": {"samples": ["9", 0], "upscale_method": "area",
                                                          "scale_by": 2.0}}
    p["9"] = {"class_type": "LatentUpscaleBy", "inputs": {"samples": ["8", 0], "upscale_method": "area",
                                                          "scale_by": 2.0}}
    p["4"]["inputs"]["latent_image"] = ["9", 0]
    w = read_workflow(p)
    assert any("cycle among nodes" in n for n in w.notes)

    p = base_prompt(("EmptyLatentImage", {"width": "wide", "height": 512, "batch_size": 1}))
    w = read_workflow(p)
    assert w.stages_of(SAMPLE)[0].latent is None
    assert any("'width' is not a number" in n for n in w.notes)

    # beyond ComfyUI's limits: refused with the node named (a planner must never see 10^9 px)
    from vram_budget.nodes.estimator.errors import WorkflowError

    p = base_prompt(("EmptyLatentImage", {"width": 1e9, "height": 512, "batch_size": 1}))
    with pytest.raises(WorkflowError, match="outside ComfyUI's range"):
        read_workflow(p)


def test_ui_dangling_link_and_missing_subgraph_are_notes():
    wf = load(FIX / "ui" / "subgraph_flux.json")
    wf["links"] = [lk for lk in wf["links"] if lk[3] != 5]  # remove the links into VAEDecode
    w = read_workflow(wf)
    assert any("missing from the links list" in n for n in w.notes)
    wf = load(FIX / "ui" / "subgraph_flux.json")
    del wf["definitions"]
    w = read_workflow(wf)  # the instance becomes an unknown node type
    assert any(t.count("-") == 4 for _, t in w.unknown_nodes)


def test_set_get_nodes_and_widget_dict_form():
    wf = load(REPO / "example_workflows" / "flux_dev_1024.json")
    decode = next(n for n in wf["nodes"] if n["type"] == "VAEDecode")
    vae_slot = next(s for s in decode["inputs"] if s["name"] == "vae")
    link = next(lk for lk in wf["links"] if lk[0] == vae_slot["link"])
    # VAELoader -> SetNode "vae" ... GetNode "vae" -> VAEDecode (KJNodes pattern)
    wf["nodes"] += [
        {"id": 50, "type": "SetNode", "pos": [0, 0], "size": [1, 1], "flags": {}, "order": 0, "mode": 0,
         "inputs": [{"name": "VAE", "type": "VAE", "link": 600}], "outputs": [{"name": "*", "type": "*", "links": []}],
         "properties": {}, "widgets_values": ["vae"]},
        {"id": 51, "type": "GetNode", "pos": [0, 0], "size": [1, 1], "flags": {}, "order": 0, "mode": 0,
         "inputs": [], "outputs": [{"name": "VAE", "type": "VAE", "links": [link[0]]}], "properties": {},
         "widgets_values": ["vae"]}]
    wf["links"].append([600, link[1], link[2], 50, 0, "VAE"])
    link[1], link[2] = 51, 0
    latent = next(n for n in wf["nodes"] if n["type"] == "EmptySD3LatentImage")
    latent["widgets_values"] = {"width": 512, "height": 1536, "batch_size": 2}
    w = read_workflow(wf)
    decode_stage = w.stages_of(VAE_DECODE)[0]
    assert decode_stage.models[0].name == "ae.safetensors"
    assert (decode_stage.latent.pixel_width, decode_stage.latent.pixel_height, decode_stage.latent.batch) == (
        512, 1536, 2)


def test_widget_count_from_another_comfyui_version_maps_by_position():
    wf = load(REPO / "example_workflows" / "flux_dev_1024.json")
    latent = next(n for n in wf["nodes"] if n["type"] == "EmptySD3LatentImage")
    latent["widgets_values"] = [896, 1152, 1, "some-new-widget"]
    w = read_workflow(wf)
    assert (w.stages_of(SAMPLE)[0].latent.pixel_width, w.stages_of(SAMPLE)[0].latent.pixel_height) == (896, 1152)
    assert any("mapped by position" in n for n in w.notes)


def test_a_node_whose_widgets_changed_between_versions_reads_both():
    """0.33.0's TrainLoraNode inserts quantized_backward after lora_dtype (nodes_train.py): a workflow saved
    by 0.18.2 (18 values) is read with 0.18.2's list (the spec's "alt"), one saved by 0.33 with 0.33's."""
    spec = node_specs.load_specs()["nodes"]["TrainLoraNode"]
    assert "0.33.0" in node_specs.load_specs()["comfyui_versions"]
    names = [w[0] for w in spec["w"]]
    assert names.index("quantized_backward") == names.index("lora_dtype") + 1
    old = [1, 1, 10, 0.0005, 8, "AdamW", "MSE", 0, "fixed", "bf16", "bf16", "LoRA", True, 1, False, "[None]",
           False, False]
    new = old[:11] + [True] + old[11:]
    got_old, got_new = node_specs.map_widget_values(spec, old), node_specs.map_widget_values(spec, new)
    assert (got_old["algorithm"], got_old["gradient_checkpointing"], got_old["rank"]) == ("LoRA", True, 8)
    assert "quantized_backward" not in got_old
    assert (got_new["quantized_backward"], got_new["algorithm"], got_new["checkpoint_depth"]) == (True, "LoRA", 1)
    assert node_specs.map_widget_values(spec, old[:5]) is None  # fits no version: the caller's fallbacks


def test_live_specs_make_a_custom_node_known():
    p = base_prompt()
    p["7"] = {"class_type": "MyLoader", "inputs": {"file": "m.safetensors"}}
    p["4"]["inputs"]["model"] = ["7", 0]
    specs = copy.deepcopy(node_specs.load_specs())
    specs["nodes"].update(node_specs.specs_from_object_info(
        {"MyLoader": {"input": {"required": {"file": [["m.safetensors"]]}}, "output": ["MODEL"]}}))
    assert ("7", "MyLoader") not in read_workflow(p, specs=specs).unknown_nodes
    assert ("7", "MyLoader") in read_workflow(p).unknown_nodes


# ---------------------------------------------------------------------------------- node specs
def test_widget_specs_file_is_small_and_covers_the_estimator_nodes():
    assert node_specs.SPECS_PATH.endswith("widget_specs.json")
    assert Path(node_specs.SPECS_PATH).stat().st_size < 128 * 1024  # 0.8.0 + 0.18.2 + 0.33.0 (448 specs)
    specs = node_specs.load_specs()
    for name in ("CheckpointLoaderSimple", "UNETLoader", "CLIPLoader", "DualCLIPLoader", "TripleCLIPLoader",
                 "QuadrupleCLIPLoader", "VAELoader", "LoraLoader", "LoraLoaderModelOnly", "ControlNetLoader",
                 "CLIPVisionLoader", "UnetLoaderGGUF", "CLIPLoaderGGUF", "DualCLIPLoaderGGUF", "VRAMBudget",
                 "VAEDecodeAutoTiled", "VAEEncodeAutoTiled", "VRAMBudgetWanPlanner", "KSampler", "KSamplerAdvanced",
                 "SamplerCustomAdvanced",
                 "CFGGuider", "BasicGuider", "DualCFGGuider", "EmptyHunyuanLatentVideo", "WanImageToVideo",
                 "Wan22ImageToVideoLatent", "EmptyFlux2LatentImage", "VAEDecodeTiled", "CLIPTextEncodeFlux"):
        assert name in specs["nodes"], name
    ks = specs["nodes"]["KSampler"]["w"]
    assert [w[0] for w in ks][:3] == ["seed", node_specs.CONTROL_AFTER_GENERATE, "steps"]
    assert "SaveImage" in specs["nodes"] and specs["nodes"]["SaveImage"].get("out_node")
    assert len(specs["api"]) > 50  # comfy_api_nodes classes (API_NODE = True)


def test_spec_from_node_info_rules():
    info = {"input": {"required": {"model": ["MODEL"], "noise_seed": ["INT", {"default": 0}],
                                   "img": [["a.png"], {"image_upload": True}],
                                   "scale": ["FLOAT", {"forceInput": True}],
                                   "mode": ["COMFY_DYNAMICCOMBO_V3", {"options": [
                                       {"key": "fixed", "inputs": {"required": {"w": ["INT", {}]}}},
                                       {"key": "auto", "inputs": {"required": {}}}]}]},
                      "optional": {"text": ["STRING", {"multiline": True}]}},
            "input_order": {"required": ["model", "noise_seed", "img", "scale", "mode"], "optional": ["text"]},
            "output": ["MODEL"], "output_node": False}
    spec = node_specs.spec_from_node_info(info)
    assert spec["in"] == {"model": "MODEL", "scale": "FLOAT"}
    assert [w[0] for w in spec["w"]] == ["noise_seed", "$control_after_generate", "img", "$upload", "mode", "text"]
    assert node_specs.map_widget_values(spec, [5, "fixed", "b.png", "image", "fixed", 64, "hi"]) == {
        "noise_seed": 5, "img": "b.png", "mode": "fixed", "mode.w": 64, "text": "hi"}
    assert node_specs.map_widget_values(spec, [5, "fixed", "b.png", "image", "auto", "hi"]) == {
        "noise_seed": 5, "img": "b.png", "mode": "auto", "text": "hi"}
    assert node_specs.map_widget_values(spec, [5]) is None


# ------------------------------------------------------------------------------- robustness
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSONISH)
def test_arbitrary_json_is_a_workload_or_a_workflow_error(data):
    try:
        result = read_workflow(data)
    except WorkflowError:
        return
    assert isinstance(result, Workload)


def _paths(workflow):
    """The path of every value (leaf or container) inside a workflow."""
    out = []

    def walk(obj, path):
        if isinstance(obj, dict):
            for k, v in obj.items():
                out.append(path + [k])
                walk(v, path + [k])
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                out.append(path + [i])
                walk(v, path + [i])
    walk(workflow, [])
    return out


@pytest.mark.parametrize("source", ["ui/subgraph_flux.json", "ui/bypass_mute_reroute.json",
                                    "frontend/sdxl_lora_controlnet.api.json"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_workflows_never_crash(source, data):
    """Replace one random part of a real workflow with junk: a Workload or a WorkflowError."""
    original = load(FIX / source)
    paths = _paths(original)
    path = data.draw(st.sampled_from(paths))
    junk = data.draw(JSONISH | st.sampled_from([-10, -20, 0, 1, 4, 2, "MODEL", "KSampler", [1, 0], ["1", 0]]))
    mutated = copy.deepcopy(original)
    target = mutated
    for key in path[:-1]:
        target = target[key]
    if data.draw(st.booleans()) and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = junk
    try:
        result = read_workflow(mutated)
    except WorkflowError:
        return
    assert isinstance(result, Workload)


def test_two_advanced_passes_on_two_unet_files_are_experts_without_name_hints():
    prompt = frontend_prompt("wan22_14b_i2v_720p")
    prompt["1"]["inputs"]["unet_name"] = "wan22/expert_a.safetensors"
    prompt["2"]["inputs"]["unet_name"] = "wan22/expert_b.safetensors"
    w = read_workflow(prompt)
    assert [(s.node_id, s.expert) for s in w.stages_of(SAMPLE)] == [("11", "high_noise"), ("12", "low_noise")]
    assert any("high-noise / low-noise experts" in n for n in w.notes)
    # SDXL base + refiner: two checkpoints, not diffusion-model files: no experts
    sdxl = read(FIX / "ui" / "sdxl_lora_controlnet.json")
    assert all(s.expert is None for s in sdxl.stages)


def test_this_packs_wan_planner_outputs_read_as_the_request():
    p = base_prompt(("EmptyHunyuanLatentVideo", {"width": ["60", 0], "height": ["60", 1], "length": ["60", 2],
                                                 "batch_size": 1}))
    p["60"] = {"class_type": "VRAMBudgetWanPlanner", "inputs": {
        "variant": "Wan 2.1 14B", "precision": "fp16", "width": 1280, "height": 720, "length": 81, "seconds": 0.0,
        "keep": "balanced", "vram_budget_gb": 0.0}}
    w = read_workflow(p)
    lat = w.stages_of(SAMPLE)[0].latent
    assert (lat.pixel_width, lat.pixel_height, lat.pixel_frames, lat.frames) == (1280, 720, 81, 21)
    assert any("at most the requested" in n for n in w.notes) and w.unknown_nodes == ()
    p["60"]["inputs"]["seconds"] = 5.0  # length then follows from the model's fps: unknown here
    assert read_workflow(p).stages_of(SAMPLE)[0].latent is None


def test_wrapped_forms_extra_pnginfo_and_prompt_body():
    ui = load(REPO / "example_workflows" / "flux_dev_1024.json")
    api = frontend_prompt("flux_dev_1024")
    from_pnginfo = read_workflow({"workflow": ui})  # EXTRA_PNGINFO
    from_body = read_workflow(json.dumps({"prompt": api, "client_id": "x"}))  # a /prompt POST body
    from_g2p = read_workflow({"output": api, "workflow": ui})  # app.graphToPrompt()
    assert from_pnginfo.source_format == "ui" and from_body.source_format == from_g2p.source_format == "api"
    assert _without_titles(from_pnginfo) == _without_titles(from_body) == _without_titles(from_g2p)


# --- absurd input answers fast with an error naming the node (issue: hardening) ------------------
def _flux_prompt(w=1024, h=1024, b=1, model=("1", 0)):
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "4": {"class_type": "EmptySD3LatentImage", "inputs": {"width": w, "height": h, "batch_size": b}},
        "5": {"class_type": "KSampler", "inputs": {"model": list(model), "positive": ["1", 0], "negative": ["1", 0],
                                                   "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
    }


@pytest.mark.parametrize("w,b,needle", [(1024, 0, "batch_size = 0"), (10**9, 1, "width = 1000000000"),
                                        (float("inf"), 1, "width = inf"), (-8, 1, "width = -8")])
def test_sizes_outside_comfyuis_ranges_are_refused_naming_the_node(w, b, needle):
    from vram_budget.nodes.estimator.errors import WorkflowError

    with pytest.raises(WorkflowError) as err:
        read_workflow(_flux_prompt(w=w, b=b))
    assert "node 4 (EmptySD3LatentImage)" in str(err.value) and needle in str(err.value)


def test_a_number_beyond_float_range_in_json_text_names_its_node():
    from vram_budget.nodes.estimator.errors import WorkflowError

    text = json.dumps(_flux_prompt()).replace('"width": 1024', '"width": 1e309')
    with pytest.raises(WorkflowError) as err:
        read_workflow(text)
    assert "node 4" in str(err.value) and "inf" in str(err.value)


def _sdxl_prompt_7_8(latent: tuple[str, dict], steps=20) -> dict:
    """An SDXL prompt whose latent node is 7, feeding the KSampler node 8."""
    return _api(**{
        "4": ("CheckpointLoaderSimple", {"ckpt_name": "sd_xl_base_1.0.safetensors"}),
        "6": ("CLIPTextEncode", {"clip": ["4", 1], "text": "a cat"}),
        "7": latent,
        "8": ("KSampler", {"model": ["4", 0], "positive": ["6", 0], "negative": ["6", 0], "latent_image": ["7", 0],
                           "seed": 1, "steps": steps, "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal",
                           "denoise": 1.0}),
        "9": ("VAEDecode", {"samples": ["8", 0], "vae": ["4", 2]}),
        "10": ("SaveImage", {"images": ["9", 0], "filename_prefix": "x"}),
    })


def test_an_integer_beyond_float_range_in_json_text_names_its_node():
    """The JSON integer literal 10**309 (310 digits) is a Python int no float holds: it got "node 8
    (KSampler): could not be read (OverflowError ...)"; now the same message as the float 1e309,
    naming node 7 and its width."""
    text = json.dumps(_sdxl_prompt_7_8(("EmptyLatentImage", {"width": 512, "height": 512, "batch_size": 1})))
    text = text.replace('"width": 512', '"width": 1' + "0" * 309)
    with pytest.raises(WorkflowError) as err:
        read_workflow(text)
    msg = str(err.value)
    assert "node 7 (EmptyLatentImage): width = 1e+309 is outside ComfyUI's range 1..16384" in msg, msg
    assert "could not be read" not in msg and "Overflow" not in msg


@pytest.mark.parametrize("latent,name", [
    (("EmptyLatentImage", {"width": 512, "height": 10**309, "batch_size": 1}), "height"),
    (("EmptyLatentImage", {"width": 512, "height": 512, "batch_size": 10**309}), "batch_size"),
    (("EmptyLatentImage", {"width": -10**309, "height": 512, "batch_size": 1}), "width"),
    (("EmptyHunyuanLatentVideo", {"width": 848, "height": 480, "length": 10**309, "batch_size": 1}), "length"),
    (("EmptyHunyuanLatentVideo", {"width": 848, "height": 480, "length": 10**5000, "batch_size": 1}), "length"),
])
def test_huge_integer_sizes_are_refused_naming_the_node_and_widget(latent, name):
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.plan.planning import estimate_prompt

    prompt = _sdxl_prompt_7_8(latent)
    with pytest.raises(WorkflowError) as err:
        estimate_prompt(prompt, Device.from_card(find_card("RTX 4090")), None, None)
    msg = str(err.value)
    assert f"node 7 ({latent[0]}): {name} = " in msg and "outside ComfyUI's range" in msg, msg
    assert "could not be read" not in msg and "Overflow" not in msg


def test_a_huge_integer_step_count_is_noted_not_a_crash():
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.plan.planning import estimate_prompt

    prompt = _sdxl_prompt_7_8(("EmptyLatentImage", {"width": 512, "height": 512, "batch_size": 1}), steps=10**309)
    budget = estimate_prompt(json.dumps(prompt), Device.from_card(find_card("RTX 4090")), None, None)
    assert "node 8 (KSampler): 'steps' = 1e+309 is too large to use" in budget.notes


def _lora_chain(n: int) -> dict:
    p = _flux_prompt()
    prev = ["1", 0]
    for i in range(n):
        p[f"L{i}"] = {"class_type": "LoraLoaderModelOnly",
                      "inputs": {"model": prev, "lora_name": f"l{i}.safetensors", "strength_model": 1.0}}
        prev = [f"L{i}", 0]
    p["5"]["inputs"]["model"] = prev
    return p


def test_long_lora_chains_keep_their_base_model_and_absurd_ones_say_so():
    from vram_budget.nodes.estimator.errors import WorkflowError

    wl = read_workflow(_lora_chain(300))  # was reported as a cycle, the base model dropped
    models = wl.stages_of("sample")[0].models
    assert models[0].role == "diffusion" and models[0].name == "flux1-dev.safetensors" and len(models) == 301
    with pytest.raises(WorkflowError) as err:
        read_workflow(_lora_chain(450))
    assert "more than 400 nodes" in str(err.value)


def test_a_subgraph_bomb_is_refused_quickly():
    """8 instances per level, 8 levels: a 5 KB workflow that would expand to 16.7 M nodes."""
    from vram_budget.nodes.estimator.errors import WorkflowError

    defs = []
    for lvl in range(8):
        nodes = [{"id": i + 1, "type": f"sg{lvl + 1}" if lvl < 7 else "PrimitiveNode", "mode": 0,
                  "inputs": [], "outputs": []} for i in range(8)]
        defs.append({"id": f"sg{lvl}", "name": f"level {lvl}", "nodes": nodes, "links": [], "inputs": [], "outputs": []})
    wf = {"nodes": [{"id": 1, "type": "sg0", "mode": 0, "inputs": [], "outputs": []}], "links": [],
          "definitions": {"subgraphs": defs}}
    with pytest.raises(WorkflowError) as err:
        read_workflow(wf)
    assert "expand to more than" in str(err.value)


def test_ltx_image_to_video_encodes_its_image_at_the_latents_size():
    """LTXVImgToVideo resizes its image to width x height before vae.encode (0.33.0 nodes_lt.py:113): a 1536²
    image for a 768x512 video is encoded at 768x512, one frame, not at 1536²."""
    p = _api(**{
        "1": ("CheckpointLoaderSimple", {"ckpt_name": "ltx-2-19b-dev.safetensors"}),
        "2": ("CLIPTextEncode", {"clip": ["1", 1], "text": "a cat"}),
        "3": ("EmptyImage", {"width": 1536, "height": 1536, "batch_size": 1, "color": 0}),
        "4": ("LTXVImgToVideo", {"positive": ["2", 0], "negative": ["2", 0], "vae": ["1", 2], "image": ["3", 0],
                                 "width": 768, "height": 512, "length": 97, "batch_size": 1, "strength": 1.0}),
        "5": ("KSampler", {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 1], "latent_image": ["4", 2],
                           "seed": 1, "steps": 20, "cfg": 3.0, "sampler_name": "euler", "scheduler": "normal",
                           "denoise": 1.0}),
        "6": ("VAEDecode", {"samples": ["5", 0], "vae": ["1", 2]}),
        "7": ("SaveImage", {"images": ["6", 0], "filename_prefix": "x"}),
    })
    w = read_workflow(p)
    enc = [s for s in w.stages if s.kind == "vae_encode" and s.node_type == "LTXVImgToVideo"]
    assert len(enc) == 1, [s.kind for s in w.stages]
    lat = enc[0].latent
    assert (lat.pixel_width, lat.pixel_height, lat.width, lat.height) == (768, 512, 768 // 32, 512 // 32)
    assert (lat.frames or 1) == 1 and lat.batch == 1
    assert w.stages_of(SAMPLE)[0].latent.pixel_width == 768


def test_recorded_vae_encode_node_gives_its_latent_the_encoded_shape():
    """A node in no table that takes a VAE and an image and outputs a LATENT (an inpaint pack's encode) is a VAE
    encode by its sockets: its latent is the image's encoding, so the sampler and the decode downstream are priced."""
    wf = load(REPO / "example_workflows" / "flux_dev_1024.json")
    sampler = next(n for n in wf["nodes"] if n["type"] == "KSampler")
    latent_slot = next(i for i, s in enumerate(sampler["inputs"]) if s["name"] == "latent_image")
    vae = next(n for n in wf["nodes"] if n["type"] == "VAELoader")
    wf["nodes"] += [
        _ui_node(90, "LoadImage", [], [("IMAGE", [700]), ("MASK", [])], ["photo.png", "image"]),
        _ui_node(91, "SomePackEncode", [("vae", "VAE", 701), ("pixels", "IMAGE", 700)], [("LATENT", [702])])]
    wf["links"] += [[700, 90, 0, 91, 1, "IMAGE"], [701, vae["id"], 0, 91, 0, "VAE"], [702, 91, 0, sampler["id"],
                                                                                    latent_slot, "LATENT"]]
    sampler["inputs"][latent_slot]["link"] = 702
    w = read_workflow(wf)
    sample = w.stages_of(SAMPLE)[0]
    assert sample.latent is not None and (sample.latent.height, sample.latent.width) == (128, 128)  # 1 MP assumed
    assert any("SomePackEncode" in n and "VAE encoding" in n for n in w.notes)


def test_recorded_model_patch_that_names_a_file_is_not_understood():
    """A MODEL -> MODEL node in no table that names a model file (ControlNet-LLLite's loader, IC-Light's UNet) patches
    the model with that file: its sockets do not give its size, so it is not understood rather than free."""
    wf = load(REPO / "example_workflows" / "flux_dev_1024.json")
    sampler = next(n for n in wf["nodes"] if n["type"] == "KSampler")
    link = next(lk for lk in wf["links"] if lk[0] == sampler["inputs"][0]["link"])
    wf["nodes"].append(_ui_node(99, "SomePackApplyPatch", [("model", "MODEL", 500)], [("MODEL", [link[0]])],
                                ["somepatch_flux.safetensors", 1.0]))
    wf["links"].append([500, link[1], link[2], 99, 0, "MODEL"])
    link[1], link[2] = 99, 0
    w = read_workflow(wf)
    assert ("99", "SomePackApplyPatch") in w.unknown_nodes
    assert w.stages_of(SAMPLE)[0].models[0].name == "flux1-dev.safetensors"  # the model still flows through
