"""bench/gen_pack_types.py (static ast reading of custom node packs) and its output, data/pack_types.json."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import tarfile
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "gen_pack_types.py")
TABLE = os.path.join(ROOT, "nodes", "estimator", "data", "pack_types.json")
WIDGET_SPECS = os.path.join(ROOT, "nodes", "estimator", "data", "widget_specs.json")
GGUF_TAR = "/work/shared/nodepacks/ComfyUI-GGUF.tar.gz"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_pack_types", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def table():
    with open(TABLE, encoding="utf-8") as fh:
        return json.load(fh)


# the mapping's name is put together here: ComfyUI-Manager's scanner reads this file as the pack's own source and
# would credit the pack with the test's made-up nodes (tests/test_packaging.py)
MAPPINGS = "NODE_CLASS_" + "MAPPINGS"


def _write(tmp_path, files: dict) -> str:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).replace("@MAP@", MAPPINGS), encoding="utf-8")
    return str(tmp_path)


# --------------------------------------------------------------------------------------------
# (a) a real pack's sources
# --------------------------------------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists(GGUF_TAR), reason="ComfyUI-GGUF source archive not present")
def test_gguf_pack(gen, tmp_path):
    with tarfile.open(GGUF_TAR) as tar:
        tar.extractall(tmp_path, filter="data")
    got = gen.extract_dir(str(tmp_path))
    nodes = got["nodes"]
    unet = nodes["UnetLoaderGGUF"]
    assert ["unet_name", "COMBO"] in unet["w"]
    assert unet["out"] == ["MODEL"] and unet["in"] == {}
    assert nodes["CLIPLoaderGGUF"]["out"] == ["CLIP"]
    # `"type": nodes.CLIPLoader.INPUT_TYPES()["required"]["type"]` is borrowed from the core node's spec
    assert nodes["CLIPLoaderGGUF"]["w"] == [["clip_name", "COMBO"], ["type", "COMBO"]]
    assert nodes["DualCLIPLoaderGGUF"]["out"] == ["CLIP"]
    assert got["parse_errors"] == 0
    # the widget lists hand-copied into widget_specs.json (another GGUF commit) agree with the static reading
    with open(WIDGET_SPECS, encoding="utf-8") as fh:
        core = json.load(fh)["nodes"]
    for name in ("UnetLoaderGGUF", "CLIPLoaderGGUF", "DualCLIPLoaderGGUF", "UnetLoaderGGUFAdvanced"):
        if name in core:
            assert nodes[name]["w"] == core[name]["w"], name
    # the core skip list drops them
    assert "UnetLoaderGGUF" not in gen.extract_dir(str(tmp_path), skip=gen.core_node_types())["nodes"]


# --------------------------------------------------------------------------------------------
# (b) inline sources
# --------------------------------------------------------------------------------------------

V1_NODES = '''
import folder_paths
import comfy.samplers

MAX_RES = 8192
any_type = AnyType("*")
MODES = ["fast", "slow"]

class MySampler:
    @classmethod
    def INPUT_TYPES(s):
        return {
            "required": {
                "model": ("MODEL",),
                "seed": ("INT", {"default": 0, "min": 0, "max": 0xffffffffffffffff}),
                "steps": ("INT", {"default": 20, "min": 1, "max": MAX_RES}),
                "sampler_name": (comfy.samplers.KSampler.SAMPLERS,),
                "mode": (["a", "b"], {"default": "a"}),
                "mode2": (MODES,),
                "latent_image": ("LATENT",),
                "strength": ("FLOAT", {"default": 1.0, "step": some_step()}),
            },
            "optional": {
                "mask": ("MASK",),
                "scale": ("FLOAT", {"forceInput": True}),
                "anything": (any_type, {}),
            },
            "hidden": {"prompt": "PROMPT"},
        }
    RETURN_TYPES = ("LATENT", "INT")
    RETURN_NAMES = ("latent", "count")
    FUNCTION = "run"
    CATEGORY = "test/sampling"

class CkptLoader:
    @classmethod
    def INPUT_TYPES(cls):
        inputs = {"required": {"ckpt_name": (folder_paths.get_filename_list("checkpoints"),)}}
        inputs["optional"] = {"image": ("IMAGE",)}
        return inputs
    RETURN_TYPES = ("MODEL", "CLIP", "VAE")
    FUNCTION = "load"

class Saver(CkptLoader):
    RETURN_TYPES = ()
    OUTPUT_NODE = True

class Unreadable:
    @classmethod
    def INPUT_TYPES(cls):
        return make_inputs()
    RETURN_TYPES = ("IMAGE",)

class AnyOut:
    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"value": ("STRING", {"multiline": True})}}
    RETURN_TYPES = (any_type, "STRING")

class Prefixed:
    NAME = "Prefixed Node"
    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"image": ("IMAGE",)}}
    RETURN_TYPES = ("IMAGE",)

class ByComp:
    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"conditioning": ("CONDITIONING",)}}
    RETURN_TYPES = ("CONDITIONING",)

@MAP@ = {
    "MySampler": MySampler,
    "CkptLoader": CkptLoader,
    "Unreadable": Unreadable,
    "KSampler": MySampler,
}
@MAP@.update({"Saver": Saver})
@MAP@["AnyOut"] = AnyOut
@MAP@[Prefixed.NAME] = Prefixed
'''

V1_MORE = '''
from .nodes import ByComp
OTHER_CLASS_MAPPINGS = {f"Pack {c.__name__}": c for c in [ByComp]}
'''

V3_NODES = '''
from comfy_api.latest import io, ComfyExtension

class MyV3Sampler(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="MyV3Sampler",
            category="test",
            inputs=[
                io.Model.Input("model"),
                io.Int.Input("steps", default=20, min=1),
                io.Int.Input("noise_seed", default=0, control_after_generate=True),
                io.Combo.Input("scheduler", options=["normal", "karras"]),
                io.Float.Input("cfg", default=7.0, force_input=True),
                io.Latent.Input("latent"),
                io.Mask.Input("mask", optional=True),
                io.Custom("MY_THING").Input("thing", optional=True),
            ],
            outputs=[io.Latent.Output(), io.Vae.Output(display_name="vae")],
        )

class MyV3Saver(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        schema = io.Schema(
            node_id="MyV3Saver",
            inputs=[io.Image.Input("images"), io.String.Input("filename_prefix", default="x")],
            outputs=[],
            is_output_node=True,
        )
        return schema
'''


def test_inline_v1_and_v3(gen, tmp_path):
    path = _write(tmp_path, {"nodes.py": V1_NODES, "more.py": V1_MORE, "v3.py": V3_NODES})
    got = gen.extract_dir(path, skip={"KSampler"})
    nodes = got["nodes"]
    assert "KSampler" not in nodes  # a core type is skipped
    s = nodes["MySampler"]
    assert s["w"] == [["seed", "INT"], ["$control_after_generate", "CAG"], ["steps", "INT"],
                      ["sampler_name", "COMBO"], ["mode", "COMBO"], ["mode2", "COMBO"], ["strength", "FLOAT"]]
    assert s["in"] == {"model": "MODEL", "latent_image": "LATENT", "mask": "MASK", "scale": "FLOAT",
                       "anything": "*"}
    assert s["out"] == ["LATENT", "INT"] and "out_node" not in s
    info = got["infos"]["MySampler"]
    assert info["input"]["required"]["mode"] == [["a", "b"], {"default": "a"}]
    assert info["input"]["required"]["mode2"] == [["fast", "slow"], {}]
    assert info["input"]["required"]["steps"][1] == {"default": 20, "min": 1, "max": 8192}
    assert info["input"]["required"]["strength"][1] == {"default": 1.0}  # non-literal option dropped
    assert info["input"]["optional"]["scale"][1] == {"forceInput": True}
    assert info["output_name"] == ["latent", "count"] and info["category"] == "test/sampling"
    ck = nodes["CkptLoader"]
    assert ck["w"] == [["ckpt_name", "COMBO"]] and ck["in"] == {"image": "IMAGE"}
    assert ck["out"] == ["MODEL", "CLIP", "VAE"]
    saver = nodes["Saver"]  # inherits INPUT_TYPES, own RETURN_TYPES / OUTPUT_NODE
    assert saver["w"] == [["ckpt_name", "COMBO"]] and saver["out"] == [] and saver["out_node"] == 1
    assert "Unreadable" not in nodes and "Unreadable" in got["unread"]
    assert nodes["AnyOut"]["out"] == ["*", "STRING"]
    assert nodes["AnyOut"]["w"] == [["value", "STRING"]]
    assert nodes["Prefixed Node"]["out"] == ["IMAGE"]
    assert nodes["Pack ByComp"]["in"] == {"conditioning": "CONDITIONING"}

    v3 = nodes["MyV3Sampler"]
    assert v3["w"] == [["steps", "INT"], ["noise_seed", "INT"], ["$control_after_generate", "CAG"],
                       ["scheduler", "COMBO"]]
    assert v3["in"] == {"model": "MODEL", "cfg": "FLOAT", "latent": "LATENT", "mask": "MASK",
                        "thing": "MY_THING"}
    assert v3["out"] == ["LATENT", "VAE"]
    assert got["infos"]["MyV3Sampler"]["input"]["required"]["scheduler"] == [
        "COMBO", {"options": ["normal", "karras"]}]
    assert set(got["infos"]["MyV3Sampler"]["input"]["optional"]) == {"mask", "thing"}
    saver3 = nodes["MyV3Saver"]
    assert saver3["out_node"] == 1 and saver3["out"] == []
    assert saver3["w"] == [["filename_prefix", "STRING"]] and saver3["in"] == {"images": "IMAGE"}


# '"class" :' with a space: ComfyUI-Manager's scanner reads '"X": {"class": Cls' in any file of this repository as a
# node of this pack (tests/test_packaging.py); Python reads both the same
CONFIG_PACK = """
from .loaders import ModelLoaderX, PathPicker
from .more import Extra

NODE_CONFIG = {
    "ModelLoaderX": {"class" : ModelLoaderX, "name": "Model Loader X"},
    "PathPicker": {"class" : PathPicker},
}
try:
    from .more import Later
    NODE_CONFIG.update({"Later": {"class" : Later, "name": "Later"}})
except Exception:
    pass

def generate_node_mappings(node_config):
    node_class_mappings = {}
    node_display_name_mappings = {}
    for node_name, node_info in node_config.items():
        node_class_mappings[node_name] = node_info["class"]
        node_display_name_mappings[node_name] = node_info.get("name", node_info["class"].__name__)
    return node_class_mappings, node_display_name_mappings

@MAP@, NODE_DISPLAY_NAME_MAPPINGS = generate_node_mappings(NODE_CONFIG)
"""

CONFIG_LOADERS = """
import folder_paths
class ModelLoaderX:
    @classmethod
    def INPUT_TYPES(s):
        return {"required": {"model_name": (folder_paths.get_filename_list("diffusion_models"),),
                             "weight_dtype": (["default", "fp8_e4m3fn", "bf16"],)},
                "optional": {"extra_state_dict": ("STRING", {"forceInput": True})}}
    RETURN_TYPES = ("MODEL",)
class PathPicker:
    @classmethod
    def INPUT_TYPES(s):
        return {"required": {"model_name": (folder_paths.get_filename_list("diffusion_models"),)}}
    RETURN_TYPES = ("STRING",)
"""

CONFIG_MORE = """
class Later:
    @classmethod
    def INPUT_TYPES(s):
        return {"required": {"image": ("IMAGE",)}}
    RETURN_TYPES = ("IMAGE",)
class Extra:
    @classmethod
    def INPUT_TYPES(s):
        return {"required": {"image": ("IMAGE",)}}
    RETURN_TYPES = ("IMAGE",)
"""


def test_mappings_from_a_config_dict(gen, tmp_path):
    """KJNodes' pattern: MAPPINGS, NAMES = generate_node_mappings(NODE_CONFIG), NODE_CONFIG's values
    {"class": Cls, ...}, more added by NODE_CONFIG.update({...}); a class the config does not name is no node."""
    path = _write(tmp_path, {"__init__.py": CONFIG_PACK, "loaders.py": CONFIG_LOADERS, "more.py": CONFIG_MORE})
    nodes = gen.extract_dir(path)["nodes"]
    assert set(nodes) == {"ModelLoaderX", "PathPicker", "Later"}
    assert nodes["ModelLoaderX"]["in"] == {"extra_state_dict": "STRING"}
    assert nodes["ModelLoaderX"]["w"] == [["model_name", "COMBO"], ["weight_dtype", "COMBO"]]
    assert nodes["PathPicker"]["out"] == ["STRING"]


def test_refresh_merges_one_pack(gen, tmp_path, monkeypatch):
    """--refresh re-reads only the packs named and keeps every other pack's nodes and commit."""
    table = {"about": "", "generated_by": "bench/gen_pack_types.py", "generated_on": "2026-01-01",
             "ranking": {"commit": "0" * 40, "source": "x"}, "collisions": [],
             "stats": {"node_types": 3, "collisions": 0, "packs_with_nodes": 2},
             "packs": {"a/keep": {"commit": "1" * 40, "date": "2026-01-01", "nodes": 1, "stars": 10},
                       "b/fresh": {"commit": "2" * 40, "date": "2026-01-01", "nodes": 2, "stars": 5}},
             "nodes": {"Kept": {"w": [], "in": {}, "out": ["IMAGE"], "pack": "a/keep"},
                       "Old1": {"w": [], "in": {}, "out": ["IMAGE"], "pack": "b/fresh"},
                       "Old2": {"w": [], "in": {}, "out": ["IMAGE"], "pack": "b/fresh"}}}
    out = tmp_path / "table.json"
    out.write_text(json.dumps(table))
    fresh_nodes = {"New": {"w": [], "in": {}, "out": ["MODEL"]}, "Kept": {"w": [], "in": {}, "out": ["LATENT"]}}

    def fake_build(repos, mirrors, stars, rank, log=print):
        assert repos == ["b/fresh"]
        return {"packs": {"b/fresh": {"commit": "3" * 40, "date": "2026-02-02", "nodes": 2, "stars": 5}},
                "nodes": {t: {**spec, "pack": "b/fresh"} for t, spec in fresh_nodes.items()}}
    monkeypatch.setattr(gen, "build", fake_build)
    assert gen.refresh(str(out), ["b/fresh"], str(tmp_path)) == 0
    got = json.loads(out.read_text())
    assert set(got["nodes"]) == {"Kept", "New"}
    assert got["nodes"]["Kept"]["pack"] == "a/keep"  # the more-starred pack keeps a type both define
    assert got["collisions"] == [["Kept", "a/keep", "b/fresh"]]
    assert got["packs"]["b/fresh"]["commit"] == "3" * 40 and got["packs"]["b/fresh"]["nodes"] == 1
    assert got["packs"]["a/keep"]["commit"] == "1" * 40
    assert got["refreshed"] == ["b/fresh"]
    assert gen.refresh(str(out), ["c/unknown"], str(tmp_path)) == 2


def test_parse_errors_are_counted(gen, tmp_path):
    path = _write(tmp_path, {"bad.py": "def broken(:\n", "ok.py": V1_NODES})
    got = gen.extract_dir(path)
    assert got["parse_errors"] == 1
    assert "MySampler" in got["nodes"]


def test_never_executes(gen, tmp_path):
    marker = tmp_path / "ran"
    src = f'''
import os
open({str(marker)!r}, "w").write("x")
class N:
    @classmethod
    def INPUT_TYPES(cls):
        open({str(marker)!r}, "w").write("x")
        return {{"required": {{"image": ("IMAGE",)}}}}
    RETURN_TYPES = ("IMAGE",)
@MAP@ = {{"N": N}}
'''
    path = _write(tmp_path / "pack", {"__init__.py": src})
    got = gen.extract_dir(path)
    assert got["nodes"]["N"]["in"] == {"image": "IMAGE"}
    assert not marker.exists()


# --------------------------------------------------------------------------------------------
# (c) the shipped table
# --------------------------------------------------------------------------------------------

def test_table_shape(table):
    assert table["generated_by"] == "bench/gen_pack_types.py"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table["generated_on"])
    assert re.fullmatch(r"[0-9a-f]{40}", table["ranking"]["commit"])
    assert table["ranking"]["source"]
    packs = table["packs"]
    with_nodes = [p for p, info in packs.items() if info["nodes"] > 0]
    assert len(with_nodes) >= 150
    for name, info in packs.items():
        assert re.fullmatch(r"[^/\s]+/[^/\s]+", name)
        assert re.fullmatch(r"[0-9a-f]{40}", info["commit"]), name
        assert re.match(r"\d{4}-\d{2}-\d{2}", info["date"]), name
    counts: dict = {}
    for node_type, spec in table["nodes"].items():
        assert isinstance(spec["w"], list) and isinstance(spec["in"], dict) and isinstance(spec["out"], list)
        assert spec["pack"] in packs, node_type
        counts[spec["pack"]] = counts.get(spec["pack"], 0) + 1
    assert counts == {p: info["nodes"] for p, info in packs.items() if info["nodes"]}
    assert os.path.getsize(TABLE) < 5 * 1024 * 1024


def test_table_has_no_core_types(table):
    with open(WIDGET_SPECS, encoding="utf-8") as fh:
        specs = json.load(fh)
    core = set(specs["nodes"]) | set(specs["core"]) | set(specs["api"])
    assert not core & set(table["nodes"])


# (node type, pack, outputs, some widgets, some sockets) read from the packs' sources at the recorded commits
KNOWN = [
    ("KSampler (Efficient)", "jags111/efficiency-nodes-comfyui",
     ["MODEL", "CONDITIONING", "CONDITIONING", "LATENT", "VAE", "IMAGE"], ["seed", "steps", "cfg"],
     {"model": "MODEL", "latent_image": "LATENT"}),
    ("WanVideoSampler", "kijai/ComfyUI-WanVideoWrapper", None, ["steps", "cfg"], {"model": "WANVIDEOMODEL"}),
    ("IPAdapterAdvanced", "cubiq/ComfyUI_IPAdapter_plus", ["MODEL"], ["weight"],
     {"model": "MODEL", "ipadapter": "IPADAPTER", "image": "IMAGE"}),
    ("ADE_AnimateDiffLoaderGen1", "Kosinkadink/ComfyUI-AnimateDiff-Evolved", ["MODEL"], ["model_name"],
     {"model": "MODEL"}),
    ("VHS_VideoCombine", "Kosinkadink/ComfyUI-VideoHelperSuite", ["VHS_FILENAMES"], ["frame_rate"],
     {"images": "IMAGE"}),
    ("ImpactWildcardProcessor", "ltdrdata/ComfyUI-Impact-Pack", ["STRING"], ["wildcard_text"], {}),
    # KJNodes' V1 nodes are named through NODE_CONFIG (generate_node_mappings), its V3 nodes by their schemas
    ("DiffusionModelLoaderKJ", "kijai/ComfyUI-KJNodes", ["MODEL"], ["model_name", "weight_dtype"],
     {"extra_state_dict": "STRING"}),
    ("ImageResizeKJv2", "kijai/ComfyUI-KJNodes", None, ["width", "height", "keep_proportion"], {"image": "IMAGE"}),
    ("GGUFLoaderKJ", "kijai/ComfyUI-KJNodes", ["MODEL"], ["model_name"], {}),
]


@pytest.mark.parametrize("node_type,pack,out,widgets,sockets", KNOWN, ids=[k[0] for k in KNOWN])
def test_table_known_nodes(table, node_type, pack, out, widgets, sockets):
    spec = table["nodes"][node_type]
    assert spec["pack"] == pack
    if out is not None:
        assert spec["out"] == out
    names = [w[0] for w in spec["w"]]
    for w in widgets:
        assert w in names, (node_type, w)
    for name, type_ in sockets.items():
        assert spec["in"].get(name) == type_, (node_type, name)
