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
    GPU preprocessors are stages: InstantID's depth example runs Zoe on the card, which it had left out); a floor, so
    a change that loses it fails. The rest say what they do not price (bench/coverage.py)."""
    devices = [device_for_launch(find_card("RTX 4090"), LaunchFlags())]
    complete = sum(b.complete for _, b in _budgets(devices))
    assert complete >= 119


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
    a model runner nothing prices. Here ComfyUI-DragNUWA's workflow, its DragNUWA type recorded as DRAG_NUWA."""
    data = json.loads((FOLDER / "chaojie__ComfyUI-DragNUWA__workflow.json").read_text(encoding="utf-8"))
    for node in data["nodes"]:
        for socket in node.get("inputs", []) + node.get("outputs", []):
            if socket.get("type") == "DragNUWA":
                socket["type"] = "DRAG_NUWA"
    data["links"] = [link[:-1] + ["DRAG_NUWA"] if link[-1] == "DragNUWA" else link for link in data["links"]]
    runners = {s.node_type: s.unpriced for s in read_workflow(data).stages if s.unpriced}
    assert "runs a DragNUWA model" in runners["DragNUWA Run"], runners


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
