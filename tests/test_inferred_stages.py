"""Issue 33, any node pack: a node no table knows is read by its socket types when ComfyUI's own definition of it
is at hand (graph.LIVE_SPECS, set inside ComfyUI by live_models.live_hooks), and the estimate says what it
inferred. On a real ComfyUI with a node written for the test: tests/comfy/test_routes.py."""
from __future__ import annotations

from vram_budget.nodes.estimator.graph import node_specs
from vram_budget.nodes.estimator.machine.device import LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import LIVE_SPECS, read_workflow
from vram_budget.nodes.estimator.plan.planning import estimate_prompt

SAMPLER = {"input": {"required": {"model": ["MODEL"], "positive": ["CONDITIONING"], "negative": ["CONDITIONING"],
                                  "latent_image": ["LATENT"], "seed": ["INT", {"default": 0}],
                                  "steps": ["INT", {"default": 20}], "cfg": ["FLOAT", {"default": 7.0}]}},
           "input_order": {"required": ["model", "positive", "negative", "latent_image", "seed", "steps", "cfg"]},
           "output": ["LATENT"]}
DECODER = {"input": {"required": {"samples": ["LATENT"], "vae": ["VAE"]}}, "output": ["IMAGE"]}
PROMPT = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors",
                                                      "clip_name2": "t5xxl_fp16.safetensors", "type": "flux"}},
    "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a fox", "clip": ["2", 0]}},
    "4": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "5": {"class_type": "XSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                               "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 1.0}},
    "6": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "7": {"class_type": "XDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}},
}
DEVICE = device_for_launch(find_card("RTX 4090"), LaunchFlags())


def _live(types):
    table = {"XSampler": SAMPLER, "XDecode": DECODER}
    return {t: dict(node_specs.spec_from_node_info(table[t]), pack="ComfyUI-X") for t in types if t in table}


def test_unknown_nodes_are_read_by_their_socket_types_and_said_so():
    plain = estimate_prompt(PROMPT, DEVICE)
    assert not plain.complete and {t for _, t in read_workflow(PROMPT).unknown_nodes} == {"XSampler", "XDecode"}
    token = LIVE_SPECS.set(_live)
    try:
        workload = read_workflow(PROMPT)
        budget = estimate_prompt(PROMPT, DEVICE)
    finally:
        LIVE_SPECS.reset(token)
    assert [(s.kind, s.node_type) for s in workload.stages] == [
        ("text_encode", "CLIPTextEncode"), ("sample", "XSampler"), ("vae_decode", "XDecode")]
    assert workload.unknown_nodes == ()
    assert "node 5 'XSampler' (ComfyUI-X) read as sampling with flux1-dev.safetensors: inferred from its socket " \
           "types (this ComfyUI's node definitions)" in workload.notes
    assert any(n.startswith("node 7 'XDecode' (ComfyUI-X) read as a VAE decode") for n in workload.notes)
    assert budget.complete and budget.peak_bytes > plain.peak_bytes  # priced with the family's own rules


def test_known_types_are_not_asked_for_and_a_failing_source_is_ignored():
    asked = []
    token = LIVE_SPECS.set(lambda types: asked.append(list(types)) or {})
    try:
        read_workflow(PROMPT)
    finally:
        LIVE_SPECS.reset(token)
    assert asked == [["XSampler", "XDecode"]]  # only what the shipped table lacks
    token = LIVE_SPECS.set(lambda types: 1 / 0)
    try:
        assert {t for _, t in read_workflow(PROMPT).unknown_nodes} == {"XSampler", "XDecode"}
    finally:
        LIVE_SPECS.reset(token)


def test_without_comfyui_the_generated_pack_table_reads_them_and_says_whose_sources(tmp_path, monkeypatch):
    """The command line has no ComfyUI: the generated table of published node packs (bench/gen_pack_types.py,
    data/pack_types.json) gives the same socket types; ComfyUI's own definitions win where both have a node."""
    import json

    table = {"nodes": {t: dict(node_specs.spec_from_node_info(info), pack="someone/ComfyUI-X")
                       for t, info in (("XSampler", SAMPLER), ("XDecode", DECODER))},
             "packs": {"someone/ComfyUI-X": {"commit": "0123456789abcdef0123456789abcdef01234567"}}}
    path = tmp_path / "pack_types.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    monkeypatch.setattr(node_specs, "PACK_TYPES_PATH", str(path))
    workload = read_workflow(PROMPT)
    assert workload.unknown_nodes == ()
    assert "node 5 'XSampler' read as sampling with flux1-dev.safetensors: inferred from its socket types (the " \
           "published sources of someone/ComfyUI-X@0123456, read offline)" in workload.notes
    assert estimate_prompt(PROMPT, DEVICE).complete
    token = LIVE_SPECS.set(_live)  # inside ComfyUI its own definitions come first
    try:
        live = read_workflow(PROMPT)
    finally:
        LIVE_SPECS.reset(token)
    assert any("(ComfyUI-X) read as sampling" in n and "this ComfyUI's node definitions" in n for n in live.notes)
