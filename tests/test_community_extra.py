"""Issue 33: the second community corpus (tests/workflows/community_extra: 170 published workflows from 45 node-pack
repositories none of the first corpus's sources), byte-exact as published, and the estimator's answer on it: never
a confident verdict on an incomplete estimate, on one card and on two."""
from __future__ import annotations

import collections
import hashlib
import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.machine.device import LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.errors import VramBudgetError
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.plan.planning import estimate

FOLDER = Path(__file__).resolve().parent / "workflows" / "community_extra"
MANIFEST = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))


def test_every_file_is_the_published_blob_and_listed_with_its_source():
    sources = (FOLDER / "SOURCES.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in FOLDER.glob("*.json") if p.name != "manifest.json")
    assert sorted(m["file"] for m in MANIFEST) == files and len(files) >= 100
    for m in MANIFEST:
        data = (FOLDER / m["file"]).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == m["sha1"], m["file"]
        assert len(m["commit"]) == 40 and m["file"] in sources and m["repo"] in sources
    repos = collections.Counter(m["repo"] for m in MANIFEST)
    assert len(repos) >= 30 and max(repos.values()) <= 8


def _budgets(devices):
    for m in MANIFEST:
        try:
            workload = read_workflow((FOLDER / m["file"]).read_bytes())
        except VramBudgetError:
            continue
        yield m["file"], estimate(workload, devices[0], None, others=tuple(devices[1:]))


@pytest.mark.parametrize("cards", [("RTX 4090",), ("RTX 4090", "RTX 3090")])
def test_no_confident_verdict_on_an_incomplete_estimate(cards):
    devices = [device_for_launch(find_card(c), LaunchFlags()) for c in cards]
    seen = 0
    for name, budget in _budgets(devices):
        seen += 1
        if not budget.complete:
            assert budget.verdict == "unknown", name
            assert budget.oom_risk is None or budget.oom_risk.level == "unknown", name
    assert seen >= 100


def test_an_unseen_packs_sampler_is_priced_offline_from_the_shipped_pack_table():
    """BlenderNeko's BNK_Unsampler is in no module and no ComfyUI: the generated table of published packs
    (data/pack_types.json) gives its socket types, so the command line prices it as sampling and says whose sources."""
    from vram_budget.nodes.estimator.graph.node_specs import load_pack_types

    table = load_pack_types()
    assert table["nodes"]["BNK_Unsampler"]["pack"] == "BlenderNeko/ComfyUI_Noise"
    assert len(table["packs"]["BlenderNeko/ComfyUI_Noise"]["commit"]) == 40
    workload = read_workflow((FOLDER / "BlenderNeko__ComfyUI_Noise__unsample_example.json").read_bytes())
    sampler = [s for s in workload.stages if s.node_type == "BNK_Unsampler"]
    assert sampler and sampler[0].kind == "sample"
    assert any("'BNK_Unsampler' read as sampling" in n and "BlenderNeko/ComfyUI_Noise@" in n and "read offline" in n
               for n in workload.notes)
    budget = estimate(workload, device_for_launch(find_card("RTX 4090"), LaunchFlags()), None)
    assert budget.complete and budget.verdict != "unknown"


def test_nodes_in_no_table_are_read_by_the_sockets_the_workflow_records():
    """MagCache and Comfy-WaveSpeed are in no module, no ComfyUI and not in the pack table: a UI workflow records
    each node's socket types, so a MODEL -> MODEL patch (and a * -> * compile node) passes the model on, said so,
    and the estimate is complete."""
    from vram_budget.nodes.estimator.graph.node_specs import load_pack_types

    table = load_pack_types()["nodes"]
    device = device_for_launch(find_card("RTX 4090"), LaunchFlags())
    for file, nodes in (("Zehong-Ma__ComfyUI-MagCache__flux.json", ("MagCache",)),
                        ("chengzeyi__Comfy-WaveSpeed__flux.json", ("ApplyFBCacheOnModel", "EnhancedCompileModel"))):
        workload = read_workflow((FOLDER / file).read_bytes())
        for node in nodes:
            assert node not in table
            assert any(f"'{node}' read as passing" in n and "socket types" in n for n in workload.notes), node
        assert not workload.unknown_nodes
        sampler = [s for s in workload.stages if s.kind == "sample"]
        assert sampler and sampler[0].models and "flux" in sampler[0].models[0].name.lower()
        budget = estimate(workload, device, None)
        assert budget.complete and budget.verdict != "unknown", file


def test_completeness_floor():
    """What this corpus gets complete (52 of 169 when the recorded-socket reading landed, 58 with the IP-Adapter
    module, 62 with the ViT-L/14 name rule, 64 with Use Everywhere's links, 63 once ControlNet-LLLite's loader said
    it applies a file it does not price, 68 with the PuLID Flux module, 73 with PuLID SDXL, 78 with InstantID,
    82 with the Chroma name fix and the InstantX Flux IP-Adapter, 83 with a UNet merged into the same model, 84 with
    image sinks, 86 with ppm's aspect-ratio latent, 88 with LayerStyle's image sizes, 89 with essentials' resize and
    mask sizes, 92 with core's ImageBatch and ImageCompositeMasked, 95 with the Fooocus inpaint patch, 97 with
    PhotoMaker-Plus, 101 with BrushNet, 105 with HyperLoRA, 111 with VideoX-Fun's pipelines, 114 with EasyAnimate
    V5.1, 116 with the SeedVR2 upscaler's own phases, 117 with Control-LoRAs sized by their rank, 118 with
    Kolors-MZ, 120 with CogVideoX: kijai's wrapper and VideoX-Fun's CogVideoX-Fun, 119 once comfyui_controlnet_aux's
    GPU preprocessors are stages: InstantID's depth example runs Zoe on the card, which it had left out, 120 with a
    GUIDER-driven sampler read as SamplerCustomAdvanced and the family its text encoder's type names; 138 in round 51
    with Civitai's listing, ControlNet / LTX-Video / upscaler names, a video's frame bound and IPAdapter's unified
    loader on a listed fine-tune, 137 once WanVideoStartEndFrames' own sampler of a WANVIDEOMODEL is no longer read
    as free; 146 in round 52 with PowerPaint, EasyAnimate V5, IPAdapter FaceID on the CPU provider, ZenID,
    ControlNet-LLLite and Zoe; 154 in round 53 with WanVideoStartEndFrames, HunyuanVideoWrapper under HunyuanLoom,
    DragNUWA, Sonic, alimama's Flux inpainting ControlNet, InstantIR and storyicon's GroundingDINO + SAM; 153 in
    round 56, when a pack node that chooses a detector in a '<x>_model' widget and returns a mask runs it: LayerStyle's
    icmask example runs SAM ViT-H and GroundingDINO in its SegmentAnythingUltra V2, which the estimate had left out);
    154 in round 57 with that node priced (SAM, GroundingDINO and its ViTMatte pass, graph/packs/layerstyle_advance.py);
    a floor, so a change that loses it fails. The rest say what they do not price (bench/coverage.py)."""
    devices = [device_for_launch(find_card("RTX 4090"), LaunchFlags())]
    complete = sum(b.complete for _, b in _budgets(devices))
    assert complete >= 154


def test_use_everywhere_links_are_read_as_the_pack_queues_them():
    """cg-use-everywhere broadcasts a model / clip / vae to inputs with no wire; it saves those links in the
    workflow (extra.ue_links) and adds them to the prompt it queues. Read the same way, its own example is priced;
    without them the sampler had no model."""
    import json as _json

    raw = (FOLDER / "chrisgoringe__cg-use-everywhere__UE_example.json").read_bytes()
    workload = read_workflow(raw)
    sample = [s for s in workload.stages if s.kind == "sample"]
    assert sample and [r.name for r in sample[0].models] == ["v1-5-pruned-emaonly-fp16.safetensors"]
    assert any("Use Everywhere" in n for n in workload.notes)
    budget = estimate(workload, device_for_launch(find_card("RTX 4090"), LaunchFlags()), None)
    assert budget.complete and budget.verdict == "fits"
    data = _json.loads(raw)
    data["extra"].pop("ue_links")
    assert not estimate(read_workflow(data), device_for_launch(find_card("RTX 4090"), LaunchFlags()), None).complete
    # a broadcast from a node that is not there gives no model (never another one)
    data = _json.loads(raw)
    sampler = next(n for n in data["nodes"] if n["type"] == "KSampler")
    for ue in data["extra"]["ue_links"]:
        if ue["downstream"] == sampler["id"] and ue["type"] == "MODEL":
            ue["upstream"] = "999"
    assert read_workflow(data).stages_of("sample")[0].models == ()
    # a wire drawn by hand keeps precedence over a broadcast
    data = _json.loads(raw)
    sampler = next(n for n in data["nodes"] if n["type"] == "KSampler")
    data["nodes"].append({"id": 99, "type": "CheckpointLoaderSimple", "mode": 0, "inputs": [],
                          "outputs": [{"name": "MODEL", "type": "MODEL", "links": [500]}],
                          "widgets_values": ["sd_xl_base_1.0.safetensors"]})
    data["links"].append([500, 99, 0, sampler["id"], 0, "MODEL"])
    sampler["inputs"][0]["link"] = 500
    assert [r.name for r in read_workflow(data).stages_of("sample")[0].models] == ["sd_xl_base_1.0.safetensors"]


def test_a_pack_model_runner_is_named_when_the_pack_renamed_its_type():
    """A workflow may record a pack's loaded-model type under another name than the pack's sources the table was
    read from (comfyui-inpaint-nodes' INPAINT_MODEL / INPAINTMODEL, before it had a module): either name makes the node
    a model runner nothing prices. Here ComfyUI-MotionDiff's full example, its MD_CLIP type recorded as MDCLIP (it was
    ComfyUI-DragNUWA's until that pack had a module)."""
    path = FOLDER / "Fannovel16__ComfyUI-MotionDiff__full_motiondiff_example.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for node in data["nodes"]:
        for socket in node.get("inputs", []) + node.get("outputs", []):
            if socket.get("type") == "MD_CLIP":
                socket["type"] = "MDCLIP"
    data["links"] = [link[:-1] + ["MDCLIP"] if link[-1] == "MD_CLIP" else link for link in data["links"]]
    runners = {s.node_type: s.unpriced for s in read_workflow(data).stages if s.unpriced}
    assert "runs a MDCLIP model" in runners["MotionCLIPTextEncode"], runners


def test_a_sink_of_images_with_no_recorded_outputs_is_not_a_model_the_estimate_misses():
    """comfy_mtb registers its nodes in a way the shipped pack table could not read, and its UI workflows record no
    outputs for Save Gif (mtb): a node that takes only images and feeds nothing needs no price; the same node feeding
    another node might pass on anything, so it stays unknown."""
    path = FOLDER / "melMass__comfy_mtb__03-animation_builder-condition-lerp.json"
    wf = json.loads(path.read_text(encoding="utf-8"))
    assert not [t for _, t in read_workflow(wf).unknown_nodes]
    sink = next(n for n in wf["nodes"] if n["type"] == "Save Gif (mtb)")
    target = next(n for n in wf["nodes"] if n["type"] != "Save Gif (mtb)" and n.get("inputs"))
    wf["links"].append([99999, sink["id"], 0, target["id"], 0, "IMAGE"])
    target["inputs"][0]["link"] = 99999
    assert "Save Gif (mtb)" in [t for _, t in read_workflow(wf).unknown_nodes]


def test_a_guider_driven_sampler_of_an_unknown_pack_samples_with_the_guiders_model():
    """TTP's TeaCacheHunyuanVideoSampler has SamplerCustomAdvanced's sockets (NOISE, GUIDER, SAMPLER, SIGMAS, LATENT):
    read as sampling with the guider's model and prompts. NOISE / SAMPLER come from widget-only nodes (RandomNoise,
    KSamplerSelect) but are not models: a node that takes them is not "running an unpriced model". Its UNet file is
    named after nothing (mp_rank_00_model_states.pt): the DualCLIPLoader type 'hunyuan_video' conditioning it is read
    by HunyuanVideo alone, so that is its family (13B)."""
    from vram_budget.nodes.estimator.graph.analyzer import loaded_types
    from vram_budget.nodes.estimator.graph.node_specs import load_specs

    assert not {"NOISE", "SAMPLER", "SIGMAS", "GUIDER"} & loaded_types(load_specs()["nodes"])
    workload = read_workflow((FOLDER / "TTPlanetPig__Comfyui_TTP_Toolset__HunyuanVideo_teacache_sampler_ttp_fok.json")
                             .read_bytes())
    sample = next(s for s in workload.stages if s.node_type == "TeaCacheHunyuanVideoSampler")
    assert sample.kind == "sample" and sample.steps == 30
    unet = next(r for r in sample.models if r.role == "diffusion")
    assert (unet.name, unet.hint, unet.weight_dtype) == ("mp_rank_00_model_states.pt", "hunyuan_video",
                                                         "fp8_e4m3fn_fast")
    assert any(r.role == "lora" for r in sample.models)
    budget = estimate(workload, device_for_launch(find_card("RTX 4090"), LaunchFlags()), None)
    assert budget.complete
    sb = next(s for s in budget.stages if s.stage.node_type == "TeaCacheHunyuanVideoSampler")
    model = next(i.model for i in sb.items if i.category == "weights" and i.model and i.model.kind == "diffusion")
    assert model.family == "hunyuan-video"


def _clip_typed(clip_type: str, loader: str = "DualCLIPLoader") -> dict:
    clip = ({"clip_name1": "clip_l.safetensors", "clip_name2": "llava_llama3_fp8_scaled.safetensors",
             "type": clip_type} if loader == "DualCLIPLoader" else
            {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": clip_type})
    return {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "my_mystery_finetune.safetensors",
                                                         "weight_dtype": "default"}},
            "2": {"class_type": loader, "inputs": clip},
            "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a cat", "clip": ["2", 0]}},
            "4": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 848, "height": 480, "length": 33,
                                                                      "batch_size": 1}},
            "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                                       "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                                       "sampler_name": "euler", "scheduler": "simple",
                                                       "denoise": 1.0}}}


def test_a_text_encoder_type_names_the_family_only_where_one_family_of_one_size_reads_it():
    hy = read_workflow(_clip_typed("hunyuan_video"))
    unet = next(r for s in hy.stages if s.kind == "sample" for r in s.models if r.role == "diffusion")
    assert unet.hint == "hunyuan_video"
    wan = read_workflow(_clip_typed("wan", loader="CLIPLoader"))  # Wan: 1.3B, 5B and 14B read umT5
    unet = next(r for s in wan.stages if s.kind == "sample" for r in s.models if r.role == "diffusion")
    assert unet.hint == ""
    budget = estimate(wan, device_for_launch(find_card("RTX 4090"), LaunchFlags()), None)
    assert not budget.complete and budget.verdict == "unknown"


def test_a_workflow_component_that_makes_a_pipe_from_a_checkpoint_is_its_loader():
    """ltdrdata's workflow components ("## make-basic_pipe [2c8c61]") are nodes no table knows; one that takes no pipe,
    makes Impact Pack's BASIC_PIPE and names a checkpoint file is that checkpoint's loader: the pipe's MODEL, CLIP
    and VAE are its parts (said), read through FromBasicPipe as any pipe is."""
    ui = {"nodes": [
        {"id": 1, "type": "## make-basic_pipe [2c8c61]", "mode": 0, "inputs": [],
         "outputs": [{"name": "BASIC_PIPE", "type": "BASIC_PIPE", "links": [1]}],
         "widgets_values": ["SD1.5/v1-5-pruned-emaonly-fp16.safetensors", "", "text, watermark"]},
        {"id": 2, "type": "FromBasicPipe", "mode": 0,
         "inputs": [{"name": "basic_pipe", "type": "BASIC_PIPE", "link": 1}],
         "outputs": [{"name": "model", "type": "MODEL", "links": [2]}, {"name": "clip", "type": "CLIP", "links": []},
                     {"name": "vae", "type": "VAE", "links": [5]},
                     {"name": "positive", "type": "CONDITIONING", "links": [3]},
                     {"name": "negative", "type": "CONDITIONING", "links": [4]}]},
        {"id": 3, "type": "EmptyLatentImage", "mode": 0, "inputs": [],
         "outputs": [{"name": "LATENT", "type": "LATENT", "links": [6]}], "widgets_values": [512, 512, 1]},
        {"id": 4, "type": "KSampler", "mode": 0,
         "inputs": [{"name": "model", "type": "MODEL", "link": 2},
                    {"name": "positive", "type": "CONDITIONING", "link": 3},
                    {"name": "negative", "type": "CONDITIONING", "link": 4},
                    {"name": "latent_image", "type": "LATENT", "link": 6}],
         "outputs": [{"name": "LATENT", "type": "LATENT", "links": [7]}],
         "widgets_values": [1, "fixed", 20, 7.0, "euler", "normal", 1.0]},
        {"id": 5, "type": "VAEDecode", "mode": 0,
         "inputs": [{"name": "samples", "type": "LATENT", "link": 7}, {"name": "vae", "type": "VAE", "link": 5}],
         "outputs": [{"name": "IMAGE", "type": "IMAGE", "links": []}]},
    ], "links": [[1, 1, 0, 2, 0, "BASIC_PIPE"], [2, 2, 0, 4, 0, "MODEL"], [3, 2, 3, 4, 1, "CONDITIONING"],
                 [4, 2, 4, 4, 2, "CONDITIONING"], [5, 2, 2, 5, 1, "VAE"], [6, 3, 0, 4, 3, "LATENT"],
                 [7, 4, 0, 5, 0, "LATENT"]]}
    workload = read_workflow(ui)
    sample = next(s for s in workload.stages if s.kind == "sample")
    decode = next(s for s in workload.stages if s.kind == "vae_decode")
    assert [(m.name, m.role, m.part) for m in sample.models] == [
        ("SD1.5/v1-5-pruned-emaonly-fp16.safetensors", "checkpoint", "model")]
    assert [(m.role, m.part) for m in decode.models] == [("checkpoint", "vae")]
    assert any("making a BASIC_PIPE" in n for n in workload.notes)
    budget = estimate(workload, device_for_launch(find_card("RTX 4090"), LaunchFlags()), None)
    assert budget.complete and budget.verdict == "fits"


@pytest.mark.parametrize("name,sampler,model_type", [
    ("raindrop313__ComfyUI-WanVideoStartEndFrames__Wan2.1_sei_workflow.json", "WanVideoSESampler", "WANVIDEOMODEL"),
    ("logtd__ComfyUI-HunyuanLoom__wrapper_example_hunyuan_flowedit.json", "HyVideoFlowEditSamplerWrapper",
     "HYVIDEOMODEL")])
def test_a_third_party_sampler_of_a_model_type_a_module_knows_is_never_read_as_free(name, sampler, model_type):
    """A model type a pack module's loader makes (WANVIDEOMODEL, HYVIDEOMODEL: packs.Pack.model_types), consumed by a
    node no module describes, is a stage that says what it runs, not a pass-through. WanVideoStartEndFrames' sampler
    had been read as free (a confident 'fits' that left out a 14B fp16 sampler); both examples' samplers are now
    described (graph/packs/wanvideo_startend.py, hunyuanloom.py), so the rule is checked with them renamed."""
    data = json.loads((FOLDER / name).read_text(encoding="utf-8"))
    assert estimate(read_workflow(data), device_for_launch(find_card("RTX 4090"), LaunchFlags())).complete
    for node in data["nodes"]:
        if node["type"] == sampler:
            node["type"] = "SomeoneElsesSampler"
    budget = estimate(read_workflow(data), device_for_launch(find_card("RTX 4090"), LaunchFlags()))
    assert not budget.complete and budget.verdict == "unknown"
    assert not any("SomeoneElsesSampler' read as passing" in n for n in budget.notes), budget.notes
