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


def _ui(nodes, links):
    return {"nodes": nodes, "links": links, "version": 0.4}


def _flux_ui(latent_node, extra_nodes=(), extra_links=(), positive_from=3):
    """A Flux text-to-image UI workflow whose latent comes from `latent_node` (id 4) and whose positive prompt comes
    from node `positive_from`'s first output (link 30); the sockets each node records are what the reader has."""
    nodes = [
        {"id": 1, "type": "UNETLoader", "inputs": [], "outputs": [{"name": "MODEL", "type": "MODEL", "links": [1]}],
         "widgets_values": ["flux1-dev.safetensors", "default"]},
        {"id": 2, "type": "DualCLIPLoader", "inputs": [],
         "outputs": [{"name": "CLIP", "type": "CLIP", "links": [2]}],
         "widgets_values": ["clip_l.safetensors", "t5xxl_fp16.safetensors", "flux", "default"]},
        {"id": 3, "type": "CLIPTextEncode", "inputs": [{"name": "clip", "type": "CLIP", "link": 2}],
         "outputs": [{"name": "CONDITIONING", "type": "CONDITIONING",
                      "links": [4] + ([30] if positive_from == 3 else [3])}], "widgets_values": ["a fox"]},
        latent_node,
        {"id": 5, "type": "KSampler", "inputs": [
            {"name": "model", "type": "MODEL", "link": 1}, {"name": "positive", "type": "CONDITIONING", "link": 30},
            {"name": "negative", "type": "CONDITIONING", "link": 4},
            {"name": "latent_image", "type": "LATENT", "link": 5}],
         "outputs": [{"name": "LATENT", "type": "LATENT", "links": [6]}],
         "widgets_values": [1, "fixed", 20, 1.0, "euler", "simple", 1.0]},
        {"id": 6, "type": "VAELoader", "inputs": [], "outputs": [{"name": "VAE", "type": "VAE", "links": [7]}],
         "widgets_values": ["ae.safetensors"]},
        {"id": 7, "type": "VAEDecode", "inputs": [{"name": "samples", "type": "LATENT", "link": 6},
                                                 {"name": "vae", "type": "VAE", "link": 7}],
         "outputs": [{"name": "IMAGE", "type": "IMAGE", "links": [8]}], "widgets_values": []},
        {"id": 8, "type": "SaveImage", "inputs": [{"name": "images", "type": "IMAGE", "link": 8}], "outputs": [],
         "widgets_values": ["x"]},
        *extra_nodes]
    links = [[1, 1, 0, 5, 0, "MODEL"], [2, 2, 0, 3, 0, "CLIP"], [30, positive_from, 0, 5, 1, "CONDITIONING"],
             [4, 3, 0, 5, 2, "CONDITIONING"], [5, 4, 0, 5, 3, "LATENT"], [6, 5, 0, 7, 0, "LATENT"],
             [7, 6, 0, 7, 1, "VAE"], [8, 7, 0, 8, 0, "IMAGE"], *extra_links]
    return _ui(nodes, links)


def test_a_pack_node_that_takes_nothing_and_returns_a_latent_is_read_as_an_empty_latent():
    """Unknown to every table, its widgets unnamed: its first two numbers are read as width and height, said."""
    maker = {"id": 4, "type": "SomePackEmptyLatent", "inputs": [],
             "outputs": [{"name": "latent", "type": "LATENT", "links": [5]}, {"name": "info", "type": "STRING"}],
             "widgets_values": [1024, 768, 2]}
    wf = _flux_ui(maker)
    workload = read_workflow(wf)
    latent = next(s.latent for s in workload.stages if s.kind == "sample")
    assert (latent.pixel_width, latent.pixel_height, latent.batch) == (1024, 768, 2)
    assert any("read as an empty latent by its sockets" in n and "first two numbers" in n for n in workload.notes)
    assert estimate_prompt(wf, DEVICE).complete
    # a node whose numbers are not a size (a file name, an odd width) is not guessed at: the estimate stays incomplete
    for values in (["saved.latent"], [1000, 3, 1], [1024]):
        wf = _flux_ui(dict(maker, widgets_values=values))
        assert next(s.latent for s in read_workflow(wf).stages if s.kind == "sample") is None
        assert not estimate_prompt(wf, DEVICE).complete


def test_a_pack_redux_node_runs_its_clip_vision_on_the_gpu_and_its_style_model_on_the_cpu():
    """kaibioinfo/ComfyUI_AdvancedRefluxControl's ReduxAdvanced (nodes.py:219-228 @2b95c2c): clip_vision.encode_image,
    then style_model.get_cond, whose StyleModel ComfyUI builds and keeps on the CPU (sd.py:1495-1513 in 0.33.0)."""
    extra = [
        {"id": 9, "type": "StyleModelLoader", "inputs": [],
         "outputs": [{"name": "STYLE_MODEL", "type": "STYLE_MODEL", "links": [9]}],
         "widgets_values": ["flux1-redux-dev.safetensors"]},
        {"id": 10, "type": "CLIPVisionLoader", "inputs": [],
         "outputs": [{"name": "CLIP_VISION", "type": "CLIP_VISION", "links": [10]}],
         "widgets_values": ["sigclip_vision_patch14_384.safetensors"]},
        {"id": 11, "type": "LoadImage", "inputs": [],
         "outputs": [{"name": "IMAGE", "type": "IMAGE", "links": [11]}, {"name": "MASK", "type": "MASK"}],
         "widgets_values": ["ref.png", "image"]},
        {"id": 12, "type": "SomePackRedux", "inputs": [
            {"name": "conditioning", "type": "CONDITIONING", "link": 3},
            {"name": "style_model", "type": "STYLE_MODEL", "link": 9},
            {"name": "clip_vision", "type": "CLIP_VISION", "link": 10}, {"name": "image", "type": "IMAGE", "link": 11}],
         "outputs": [{"name": "CONDITIONING", "type": "CONDITIONING", "links": [30]}],
         "widgets_values": [3, "area", "center crop (square)", 1.0]}]
    links = [[9, 9, 0, 12, 1, "STYLE_MODEL"], [10, 10, 0, 12, 2, "CLIP_VISION"], [11, 11, 0, 12, 3, "IMAGE"],
             [3, 3, 0, 12, 0, "CONDITIONING"]]
    maker = {"id": 4, "type": "EmptySD3LatentImage", "inputs": [],
             "outputs": [{"name": "LATENT", "type": "LATENT", "links": [5]}], "widgets_values": [1024, 1024, 1]}
    wf = _flux_ui(maker, extra, links, positive_from=12)
    workload = read_workflow(wf)
    kinds = [(s.kind, s.node_type) for s in workload.stages]
    assert ("clip_vision_encode", "SomePackRedux") in kinds
    assert next(s for s in workload.stages if s.kind == "sample").node_type == "KSampler"
    clip = next(s for s in workload.stages if s.node_type == "SomePackRedux")
    assert [r.name for r in clip.models] == ["sigclip_vision_patch14_384.safetensors"]
    budget = estimate_prompt(wf, DEVICE)
    assert budget.complete, budget.incomplete
    assert not any("STYLE_MODEL" in n for n in budget.incomplete)


def test_an_api_prompt_switch_passes_its_latent_on():
    """ComfySwitchNode's sockets are V3 templates ("COMFY_MATCHTYPE_V3" in its spec): an API prompt records no
    resolved type, so the template reads as "*" and the switch's chosen branch gives the latent."""
    prompt = {k: dict(v) for k, v in PROMPT.items() if k not in ("5", "7")}
    prompt["9"] = {"class_type": "ComfySwitchNode", "inputs": {"switch": False, "on_false": ["4", 0],
                                                               "on_true": ["4", 0]}}
    prompt["5"] = {"class_type": "KSampler", "inputs": {
        "model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0], "latent_image": ["9", 0], "seed": 1,
        "steps": 20, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}}
    prompt["7"] = {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}}
    latent = next(s.latent for s in read_workflow(prompt).stages if s.kind == "sample")
    assert latent is not None and (latent.pixel_width, latent.pixel_height) == (1024, 1024)
    assert estimate_prompt(prompt, DEVICE).complete


def test_a_loaded_conditioning_is_data_not_a_model():
    """huchenlei/ComfyUI_omost's OmostLoadCanvasConditioningNode reads a canvas file into OMOST_CANVAS_CONDITIONING:
    a node consuming it runs no model, so it is not an unpriced model stage (a loader's other outputs still are)."""
    from vram_budget.nodes.estimator.graph.analyzer import loaded_types

    specs = {"SomeLoadCanvasConditioning": {"in": {}, "out": ["X_CANVAS_CONDITIONING"], "w": [], "recorded": True},
             "SomeLoadDetector": {"in": {}, "out": ["X_DETECTOR"], "w": [], "recorded": True}}
    assert loaded_types(specs) == frozenset({"X_DETECTOR"})


def test_the_node_list_of_a_workflow_with_null_definitions():
    """A published workflow (jatidevelopments/ryla's RunComfy copy) carries "definitions": null; the node lists the
    bench and the templates code walk must not fail on it, nor on non-dict entries."""
    from vram_budget.nodes.estimator.graph.templates import all_nodes

    assert all_nodes({"nodes": [{"id": 1, "type": "A"}, 3], "definitions": None}) == [{"id": 1, "type": "A"}]
    assert all_nodes({"nodes": None, "definitions": {"subgraphs": [{"nodes": [{"id": 2}]}, None]}}) == [{"id": 2}]


def test_the_lower_bound_of_an_incomplete_estimate_is_as_comfyui_runs_it():
    """A VAE call that would need 262 GiB at once is retried tiled and weights stream: the bound a user reads is the
    stages as ComfyUI runs them, with the one-go figure beside it, never the one-go figure as a lower bound."""
    from types import SimpleNamespace

    from vram_budget.nodes.estimator.plan.budget import at_least
    from vram_budget.nodes.estimator.units import GiB

    runs = [SimpleNamespace(peak_bytes=12 * GiB), SimpleNamespace(peak_bytes=20 * GiB)]
    assert at_least(264 * GiB, runs) == "at least 20.00 GiB as ComfyUI runs it; 264.00 GiB if each stage ran in one go"
    assert at_least(16 * GiB, runs) == "at least 16.00 GiB"
    assert at_least(16 * GiB, []) == "at least 16.00 GiB"


def _ksampler_prompt(latent_from: str, **extra) -> dict:
    """PROMPT with ComfyUI's own KSampler and VAEDecode, its latent taken from node `latent_from`."""
    prompt = {k: dict(v) for k, v in PROMPT.items() if k not in ("5", "7")}
    prompt["5"] = {"class_type": "KSampler", "inputs": {
        "model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0], "latent_image": [latent_from, 0], "seed": 1,
        "steps": 20, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}}
    prompt["7"] = {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}}
    prompt.update(extra)
    return prompt


def _with_live(table: dict, fn):
    token = LIVE_SPECS.set(lambda types: {t: dict(node_specs.spec_from_node_info(table[t]), pack="ComfyUI-X")
                                          for t in types if t in table})
    try:
        return fn()
    finally:
        LIVE_SPECS.reset(token)


def _sample_latent(prompt):
    return next(s.latent for s in read_workflow(prompt).stages if s.kind == "sample")


def test_a_pack_primitive_node_gives_its_value():
    """yameprogrammer's illustrious prompt sizes its latent with Easy-Use's "easy int" (1024 / 1536): a node of one
    primitive output and one widget of that type is a constant, read from its types (offline table or live)."""
    live = {"XInt": {"input": {"required": {"value": ["INT", {}]}}, "output": ["INT"]},
            "XTwo": {"input": {"required": {"a": ["INT", {}], "b": ["INT", {}]}}, "output": ["INT"]},
            "XText": {"input": {"required": {"value": ["INT", {}]}}, "output": ["STRING"]}}
    size = {"class_type": "EmptySD3LatentImage", "inputs": {"width": ["10", 0], "height": ["11", 0], "batch_size": 1}}
    prompt = _ksampler_prompt("4", **{"4": size, "10": {"class_type": "easy int", "inputs": {"value": 768}},
                                      "11": {"class_type": "XInt", "inputs": {"value": 512}}})
    latent = _with_live(live, lambda: _sample_latent(prompt))
    assert (latent.pixel_width, latent.pixel_height) == (768, 512)
    assert _with_live(live, lambda: estimate_prompt(prompt, DEVICE)).complete
    # two widgets, a value of another type than the output, or a node with no types: not guessed at
    for node in ({"class_type": "XTwo", "inputs": {"a": 512, "b": 2}},
                 {"class_type": "XText", "inputs": {"value": 512}},
                 {"class_type": "NoTypesAnywhere", "inputs": {"value": 512}}):
        assert _with_live(live, lambda: _sample_latent(dict(prompt, **{"11": node}))) is None


def test_impact_switch_passes_on_the_input_its_select_names():
    """Impact Pack's ImpactSwitch (GeneralSwitch): output 0 is input{select}, select 1-based, here fed by a
    PrimitiveInt; when select is computed by a node not read here, the first known latent is taken and the models of
    every input are counted."""
    small = {"class_type": "EmptySD3LatentImage", "inputs": {"width": 640, "height": 640, "batch_size": 1}}
    switch = {"class_type": "ImpactSwitch", "inputs": {"input1": ["4", 0], "input2": ["12", 0], "select": ["13", 0],
                                                       "sel_mode": False}}
    prompt = _ksampler_prompt("9", **{"9": switch, "12": small,
                                      "13": {"class_type": "PrimitiveInt", "inputs": {"value": 2}}})
    assert (_sample_latent(prompt).pixel_width, _sample_latent(prompt).pixel_height) == (640, 640)
    prompt["13"] = {"class_type": "PrimitiveInt", "inputs": {"value": 1}}
    assert _sample_latent(prompt).pixel_width == 1024
    assert estimate_prompt(prompt, DEVICE).complete
    prompt["13"] = {"class_type": "NoTypesAnywhere", "inputs": {"x": 1}}
    assert _sample_latent(prompt).pixel_width == 1024
    # two models behind one switch whose select is not known: both counted, said
    prompt["14"] = {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-schnell.safetensors",
                                                           "weight_dtype": "default"}}
    prompt["15"] = dict(switch, inputs={"input1": ["1", 0], "input2": ["14", 0], "select": ["13", 0]})
    prompt["5"]["inputs"] = dict(prompt["5"]["inputs"], model=["15", 0])
    workload = read_workflow(prompt)
    sample = next(s for s in workload.stages if s.kind == "sample")
    assert {r.name for r in sample.models} == {"flux1-dev.safetensors", "flux1-schnell.safetensors"}
    assert any("'select' is not known here" in n for n in workload.notes)


def test_a_pack_node_that_runs_a_model_file_it_names_is_not_read_as_its_sockets_alone():
    """Easy-Use's "easy hiresFix" takes an IMAGE and a VAE (a VAE encode by its sockets) but first upscales the image
    with the ESRGAN model its 'model_name' names: that model is not priced, so the estimate says so and stays
    incomplete. A pack loader that names a file and returns only model handles (SUPIR's) is not such a node."""
    decode = {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}}
    hires = {"class_type": "easy hiresFix", "inputs": {
        "image": ["7", 0], "vae": ["6", 0], "model_name": "4x_foolhardy_Remacri.pth", "rescale_after_model": True,
        "rescale_method": "lanczos", "rescale": "by percentage", "percent": 50, "width": 1024, "height": 1024,
        "longer_side": 1024, "crop": "disabled", "image_output": "Hide", "link_id": 0, "save_prefix": "ComfyUI"}}
    prompt = _ksampler_prompt("4", **{"7": decode, "20": hires})
    budget = estimate_prompt(prompt, DEVICE)
    assert not budget.complete
    assert any("easy hiresFix loads and runs the model file '4x_foolhardy_Remacri.pth' (its 'model_name')" in why
               for why in budget.incomplete), budget.incomplete
    live = {"XModelLoader": {"input": {"required": {"clip": ["CLIP"], "x_model": [["x.safetensors"], {}]}},
                             "output": ["X_MODEL", "X_VAE"]}}
    prompt = _ksampler_prompt("4", **{"21": {"class_type": "XModelLoader",
                                             "inputs": {"clip": ["2", 0], "x_model": "x.safetensors"}}})
    budget = _with_live(live, lambda: estimate_prompt(prompt, DEVICE))
    assert not any("loads and runs the model file" in why for why in budget.incomplete)


def test_a_workflow_of_pack_nodes_that_run_nothing_by_their_types_names_them_and_gives_no_zero_bound():
    """SeargeSDXL's Reborn workflow (community_unseen) is 22 SeargeMagicBox nodes passing Searge's own data stream,
    which sample inside: no stage is found, so the answer names those nodes and gives no 'at least 0.00 GiB' bound."""
    prompt = {"1": {"class_type": "SeargePipelineStart", "inputs": {}},
              "2": {"class_type": "SeargeMagicBox", "inputs": {"data": ["1", 0]}},
              "3": {"class_type": "SeargeMagicBox", "inputs": {"data": ["2", 0]}},
              "4": {"class_type": "LoadImage", "inputs": {"image": "a.png"}}}
    workload = read_workflow(prompt)
    assert workload.stages == () and workload.silent_pack_nodes == (("SeargeMagicBox", 2), ("SeargePipelineStart", 1))
    budget = estimate_prompt(prompt, DEVICE)
    assert budget.verdict == "unknown" and not budget.complete
    assert budget.notes[0] == ("can't tell: the workflow has no stage the estimator could price: its node-pack nodes "
                               "(SeargeMagicBox ×2, SeargePipelineStart) were read by their types as passing data on; "
                               "a model one of them runs inside is not in this estimate")
    assert not any("at least 0.00 GiB" in n for n in budget.notes)
    # ComfyUI's own nodes alone: nothing of a pack to name
    assert read_workflow({"4": prompt["4"]}).silent_pack_nodes == ()


LORA_NODE = {"input": {"required": {"model": ["MODEL"], "lora_name": [["style.safetensors"], {}],
                                    "strength_model": ["FLOAT", {"default": 1.0}]}},
             "input_order": {"required": ["model", "lora_name", "strength_model"]},
             "output": ["MODEL", "FLOAT"]}
PATCH_NODE = {"input": {"required": {"model": ["MODEL"], "patch_file": [["iclight.safetensors"], {}]}},
              "output": ["MODEL"]}


def _lora_prompt(node_type: str, **inputs) -> dict:
    prompt = _ksampler_prompt("4")
    prompt["9"] = {"class_type": node_type, "inputs": {"model": ["1", 0], **inputs}}
    prompt["5"]["inputs"]["model"] = ["9", 0]
    return prompt


def _sample_loras(workload):
    return {r.name: r.strength for s in workload.stages if s.kind == "sample" for r in s.models if r.role == "lora"}


def test_a_pack_node_that_applies_a_file_in_a_lora_widget_is_a_lora_loader():
    """A node no module describes, MODEL in and out, naming one model file in a widget called a LoRA (LTX-Video's
    LTXICLoRALoaderModelOnly): core's LoraLoader rule at its strength, said; inside ComfyUI (its definition live) and
    offline (the pack table). Another file widget (IC-Light's UNet patch) stays not understood; strength 0 adds none."""
    prompt = _lora_prompt("XLoraLoader", lora_name="style.safetensors", strength_model=0.7)
    w = _with_live({"XLoraLoader": LORA_NODE}, lambda: read_workflow(prompt))
    assert _sample_loras(w) == {"style.safetensors": 0.7} and not w.unknown_nodes
    assert any("read as a LoRA loader of 'style.safetensors' (its 'lora_name')" in n for n in w.notes)
    assert not any("'XLoraLoader' read as passing MODEL" in n for n in w.notes)
    zero = _lora_prompt("XLoraLoader", lora_name="style.safetensors", strength_model=0)
    assert _sample_loras(_with_live({"XLoraLoader": LORA_NODE}, lambda: read_workflow(zero))) == {}
    # a file of another kind: its cost is not a LoRA's, and the node is not understood (inside ComfyUI too)
    patch = _lora_prompt("XPatch", patch_file="iclight.safetensors")
    wp = _with_live({"XPatch": PATCH_NODE}, lambda: read_workflow(patch))
    assert ("9", "XPatch") in wp.unknown_nodes and not _sample_loras(wp)
    assert not _with_live({"XPatch": PATCH_NODE}, lambda: estimate_prompt(patch, DEVICE)).complete
    # offline: LTX-Video's own node, from the generated pack table
    ic = _lora_prompt("LTXICLoRALoaderModelOnly", lora_name="ltx-2.3-22b-ic-lora-union-control-ref0.5.safetensors",
                      strength_model=1.0)
    wi = read_workflow(ic)
    assert _sample_loras(wi) == {"ltx-2.3-22b-ic-lora-union-control-ref0.5.safetensors": 1.0}
    assert not wi.unknown_nodes


def test_a_pack_node_that_returns_a_mask_from_a_model_file_it_names_runs_that_model():
    """A node no module describes whose sockets carry no model (IMAGE in, MASK out) but whose widget names a model
    file (LayerStyle Advance's "LayerMask: SAM2Ultra" with sam2_hiera_base_plus.safetensors) loads and runs it: an
    unpriced stage, so the estimate is incomplete, never a confident answer without it. A node that returns only
    strings naming a checkpoint (metadata for a saver) runs nothing."""
    segmenter = {"input": {"required": {"image": ["IMAGE"], "sam2_model": [["sam2_hiera_base_plus.safetensors"], {}],
                                        "threshold": ["FLOAT", {"default": 0.3}]}},
                 "input_order": {"required": ["image", "sam2_model", "threshold"]}, "output": ["IMAGE", "MASK"]}
    metadata = {"input": {"required": {"ckpt_name": [["sd_xl_base_1.0.safetensors"], {}]}}, "output": ["STRING"]}
    prompt = _ksampler_prompt("4", **{
        "20": {"class_type": "LoadImage", "inputs": {"image": "x.png"}},
        "21": {"class_type": "XSegmenter", "inputs": {"image": ["20", 0], "sam2_model": "sam2_hiera_base_plus.safetensors",
                                                       "threshold": 0.3}},
        "22": {"class_type": "PreviewImage", "inputs": {"images": ["21", 0]}},
        "23": {"class_type": "XMetadata", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}}})
    table = {"XSegmenter": segmenter, "XMetadata": metadata}
    budget = _with_live(table, lambda: estimate_prompt(prompt, DEVICE))
    assert not budget.complete
    assert any("XSegmenter loads and runs the model file 'sam2_hiera_base_plus.safetensors' (its 'sam2_model')" in why
               for why in budget.incomplete), budget.incomplete
    assert not any("XMetadata" in why for why in budget.incomplete)
    del prompt["21"], prompt["22"]
    assert _with_live(table, lambda: estimate_prompt(prompt, DEVICE)).complete


def test_a_pack_node_that_chooses_its_detector_in_a_model_widget_runs_it():
    """LayerStyle's "LayerMask: SegmentAnythingUltra V2" chooses SAM and GroundingDINO in 'sam_model' /
    'grounding_dino_model' (choices such as "sam_vit_h (2.56GB)", not file names) and returns a mask: it runs them,
    unpriced and named. An API node's bare 'model' ("Vidu Q4 Preview") is the remote model it asks for: nothing local."""
    seg = {"input": {"required": {"image": ["IMAGE"], "sam_model": [["sam_vit_h (2.56GB)"], {}],
                                  "grounding_dino_model": [["GroundingDINO_SwinT_OGC (694MB)"], {}]}},
           "input_order": {"required": ["image", "sam_model", "grounding_dino_model"]}, "output": ["IMAGE", "MASK"]}
    api = {"input": {"required": {"image": ["IMAGE"], "model": [["Vidu Q4 Preview"], {}]}},
           "input_order": {"required": ["image", "model"]}, "output": ["VIDEO"]}
    base = {"20": {"class_type": "LoadImage", "inputs": {"image": "x.png"}}}
    prompt = _ksampler_prompt("4", **base, **{
        "21": {"class_type": "XSegmentUltra", "inputs": {"image": ["20", 0], "sam_model": "sam_vit_h (2.56GB)",
                                                          "grounding_dino_model": "GroundingDINO_SwinT_OGC (694MB)"}},
        "22": {"class_type": "PreviewImage", "inputs": {"images": ["21", 0]}}})
    budget = _with_live({"XSegmentUltra": seg}, lambda: estimate_prompt(prompt, DEVICE))
    assert any("XSegmentUltra loads and runs the models 'sam_vit_h (2.56GB)' (its 'sam_model'), "
               "'GroundingDINO_SwinT_OGC (694MB)' (its 'grounding_dino_model')" in why for why in budget.incomplete), \
        budget.incomplete
    prompt = _ksampler_prompt("4", **base, **{
        "21": {"class_type": "XApiVideo", "inputs": {"image": ["20", 0], "model": "Vidu Q4 Preview"}},
        "22": {"class_type": "SaveVideo", "inputs": {"video": ["21", 0], "filename_prefix": "v", "format": "auto",
                                                     "codec": "auto"}}})
    assert _with_live({"XApiVideo": api}, lambda: estimate_prompt(prompt, DEVICE)).complete
