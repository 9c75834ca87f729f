"""Generate nodes/estimator/data/widget_specs.json from a real ComfyUI's node definitions.

Run it with ComfyUI's Python (it imports ComfyUI's `nodes`, `comfy_extras` and `comfy_api_nodes`):

    /work/comfy/venv-a/bin/python bench/gen_widget_specs.py --comfy /work/comfy/a
    /work/comfy/venv-b/bin/python bench/gen_widget_specs.py --comfy /work/comfy/b --merge

The second run adds the node types only the newer ComfyUI has (and refreshes the ones both have,
since UI workflows in the wild are mostly saved by recent frontends). For every node type it
computes what the server's `/object_info` route would answer (`server.py` `node_info`, same code
path: V3 nodes via `GET_NODE_INFO_V1`) and keeps, via `node_specs.spec_from_node_info`:
- full specs (widget order, socket types, output types) for the node types the estimator reads:
  anything touching models, latents, conditioning, samplers, VAE, plus output nodes and a few
  image/value nodes whose numbers feed latent sizes;
- the names of every other core node type ("core": understood as irrelevant to VRAM);
- the names of the API nodes ("api": they run remotely, `API_NODE = True`).
GGUF loaders (city96/ComfyUI-GGUF, not installed here) are written from its `nodes.py`
INPUT_TYPES; this pack's own nodes are read from the pack when it loads, else hand-written.

Nothing here runs a model; it needs ~1 GB RAM and ~20 s on CPU.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.machinery
import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "nodes", "estimator", "data", "widget_specs.json")

# Types whose presence on a socket makes a node relevant to the estimator.
RELEVANT_TYPES = {
    "MODEL", "CLIP", "VAE", "LATENT", "CONDITIONING", "CONTROL_NET", "CLIP_VISION",
    "CLIP_VISION_OUTPUT", "GUIDER", "SIGMAS", "NOISE", "SAMPLER", "STYLE_MODEL", "UPSCALE_MODEL",
    "LATENT_UPSCALE_MODEL", "MODEL_PATCH", "AUDIO_ENCODER", "GLIGEN", "PHOTOMAKER",
}
# Image / value nodes whose widgets decide a latent's size (graph.py evaluates them).
VALUE_NODES = {
    "PrimitiveInt", "PrimitiveFloat", "PrimitiveString", "PrimitiveStringMultiline",
    "PrimitiveBoolean", "ComfySwitchNode", "ComfyMathExpression", "ComfyNumberConvert",
    "EmptyImage", "ImageScale", "ImageScaleBy", "ImageScaleToTotalPixels", "ImageScaleToMaxDimension",
    "ResizeImageMaskNode", "FluxKontextImageScale", "LoadImage", "LoadVideo", "CreateVideo", "Video Slice",
    "GetImageSize", "RepeatImageBatch", "ImageFromBatch", "StringConcatenate", "CustomCombo", "ImagePadForOutpaint",
}

# city96/ComfyUI-GGUF nodes.py (commit 014560d): INPUT_TYPES as /object_info would serve them.
_TYPE_CLIP = [["stable_diffusion", "stable_cascade", "sd3", "stable_audio", "mochi", "ltxv", "pixart",
               "cosmos", "lumina2", "wan", "hidream", "chroma", "ace", "omnigen2", "qwen_image",
               "hunyuan_image", "flux2", "ovis"]]
_TYPE_DUAL = [["sdxl", "sd3", "flux", "hunyuan_video", "hidream", "hunyuan_image", "hunyuan_video_15",
               "kandinsky5", "kandinsky5_image", "ltxv", "newbie"]]
GGUF_NODE_INFO = {
    "UnetLoaderGGUF": {"input": {"required": {"unet_name": [[]]}}, "output": ["MODEL", "STRING", "STRING"]},
    "UnetLoaderGGUFAdvanced": {"input": {"required": {
        "unet_name": [[]], "dequant_dtype": [["default", "target", "float32", "float16", "bfloat16"]],
        "patch_dtype": [["default", "target", "float32", "float16", "bfloat16"]],
        "patch_on_device": ["BOOLEAN", {"default": False}]}}, "output": ["MODEL", "STRING", "STRING"]},
    "CLIPLoaderGGUF": {"input": {"required": {"clip_name": [[]], "type": _TYPE_CLIP}}, "output": ["CLIP"]},
    "DualCLIPLoaderGGUF": {"input": {"required": {"clip_name1": [[]], "clip_name2": [[]], "type": _TYPE_DUAL}},
                           "output": ["CLIP"]},
    "TripleCLIPLoaderGGUF": {"input": {"required": {"clip_name1": [[]], "clip_name2": [[]], "clip_name3": [[]]}},
                             "output": ["CLIP"]},
    "QuadrupleCLIPLoaderGGUF": {"input": {"required": {"clip_name1": [[]], "clip_name2": [[]],
                                                       "clip_name3": [[]], "clip_name4": [[]]}},
                                "output": ["CLIP"]},
}
# This pack's nodes, used only when the pack itself does not load here (sockets as the lead's
# design names them; widgets are read from the pack when it loads).
PACK_NODE_INFO = {
    "VAEDecodeAutoTiled": {"input": {"required": {"samples": ["LATENT"], "vae": ["VAE"]}}, "output": ["IMAGE"]},
    "VAEEncodeAutoTiled": {"input": {"required": {"pixels": ["IMAGE"], "vae": ["VAE"]}}, "output": ["LATENT"]},
    "VRAMBudget": {"input": {"required": {}}, "output": ["STRING"], "output_node": True},
    "VRAMBudgetWanPlanner": {"input": {"required": {}, "optional": {"model": ["MODEL"]}},
                             "output": ["INT", "INT", "INT", "STRING"]},
}


def _load_node_specs_module():
    path = os.path.join(REPO, "nodes", "estimator", "graph", "node_specs.py")
    spec = importlib.util.spec_from_file_location("vram_budget_node_specs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _node_info(nodes, internal_base, name):
    """What ComfyUI's server.py `node_info` returns for one class (same branches)."""
    cls = nodes.NODE_CLASS_MAPPINGS[name]
    if internal_base is not None and issubclass(cls, internal_base):
        return cls.GET_NODE_INFO_V1()
    inputs = cls.INPUT_TYPES()
    return {
        "input": inputs,
        "input_order": {key: list(value.keys()) for key, value in inputs.items()},
        "output": cls.RETURN_TYPES,
        "output_node": bool(getattr(cls, "OUTPUT_NODE", False)),
        "api_node": bool(getattr(cls, "API_NODE", False)),
    }


def _stub_torchaudio() -> None:
    """ComfyUI's venv may lack torchaudio (an optional requirement); then comfy_extras/nodes_audio.py,
    nodes_lt_audio.py, ... fail to import and their nodes (LTXAVTextEncoderLoader, LTXVAudioVAELoader,
    VAEEncodeAudio, ...) would be missing from the specs. Only their definitions are read here, so a
    stand-in whose every attribute is a placeholder class is enough; nothing calls it."""
    try:
        import torchaudio  # noqa: F401, PLC0415
        return
    except ImportError:
        pass
    import types  # noqa: PLC0415

    class _Placeholder:
        def __init__(self, *args, **kwargs):
            raise RuntimeError("torchaudio stand-in (bench/gen_widget_specs.py): not callable")

    def module(name: str) -> types.ModuleType:
        mod = types.ModuleType(name)

        def attribute(attr: str):
            if attr.startswith("__"):
                raise AttributeError(attr)
            if attr.islower():  # a submodule (functional, transforms) or a function
                return sys.modules.setdefault(f"{name}.{attr}", module(f"{name}.{attr}"))
            return _Placeholder

        mod.__getattr__ = attribute
        mod.__path__ = []  # a package: `import torchaudio.functional` works
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        return mod

    sys.modules["torchaudio"] = module("torchaudio")


def _relevant(name: str, spec: dict) -> bool:
    types = set(spec["in"].values()) | set(spec["out"])
    return bool(types & RELEVANT_TYPES) or spec.get("out_node") or name in VALUE_NODES


def with_alternates(spec: dict, older: dict) -> dict:
    """`spec` (this ComfyUI's) with `older` (the merged file's, and its own alternates) as "alt": each
    distinct widget list once, this version's first."""
    alts = [{k: v for k, v in s.items() if k != "alt"} for s in [older, *older.get("alt", [])]]
    out = {k: v for k, v in spec.items() if k != "alt"}
    kept = []
    for alt in alts:
        if alt.get("w") != out.get("w") and all(alt.get("w") != k.get("w") for k in kept):
            kept.append(alt)
    if kept:
        out["alt"] = kept
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--comfy", default=os.environ.get("COMFYUI_PATH", "/work/comfy/a"))
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--merge", action="store_true", help="keep node types of the existing file this ComfyUI lacks")
    ap.add_argument("--no-pack", action="store_true", help="do not try to load this pack's own nodes")
    args = ap.parse_args(argv)

    comfy = os.path.abspath(args.comfy)
    os.chdir(comfy)
    sys.path.insert(0, comfy)
    logging.basicConfig(level=logging.ERROR)
    import comfy.cli_args  # noqa: E402  (ComfyUI's own modules)
    comfy.cli_args.args.cpu = True  # no GPU here: model_management would probe CUDA at import
    import utils.install_util  # noqa: F401,E402  ComfyUI's utils package before comfy/utils.py shadows it
    _stub_torchaudio()
    import nodes  # noqa: E402
    asyncio.run(nodes.init_extra_nodes(init_custom_nodes=False, init_api_nodes=True))
    try:
        from comfy_api.internal import _ComfyNodeInternal as internal_base
    except ImportError:  # older ComfyUI without V3
        internal_base = None
    import comfyui_version  # noqa: E402

    core_names = set(nodes.NODE_CLASS_MAPPINGS)
    pack_loaded = set()
    if not args.no_pack:
        tmp = tempfile.mkdtemp(prefix="vram-budget-gen-")
        pack_dir = os.path.join(tmp, "comfyui-vram-budget")
        shutil.copytree(REPO, pack_dir, ignore=shutil.ignore_patterns(".git", "tests", "bench", "web", "*.pyc"))
        before = set(nodes.NODE_CLASS_MAPPINGS)
        try:
            asyncio.run(nodes.load_custom_node(pack_dir)) if asyncio.iscoroutinefunction(nodes.load_custom_node) \
                else nodes.load_custom_node(pack_dir)
        except Exception as exc:  # the pack may be half-built while this runs
            print(f"pack not loaded: {exc}", file=sys.stderr)
        pack_loaded = set(nodes.NODE_CLASS_MAPPINGS) - before
        shutil.rmtree(tmp, ignore_errors=True)

    ns = _load_node_specs_module()
    specs, core, api, failed = {}, [], [], []
    for name in sorted(nodes.NODE_CLASS_MAPPINGS):
        try:
            info = _node_info(nodes, internal_base, name)
        except Exception:
            failed.append(name)
            continue
        if info.get("api_node"):
            api.append(name)
            continue
        spec = ns.spec_from_node_info(info)
        if name in pack_loaded or _relevant(name, spec):
            specs[name] = spec
        elif name in core_names:
            core.append(name)
    for name, info in GGUF_NODE_INFO.items():
        specs.setdefault(name, ns.spec_from_node_info(info))
    for name, info in PACK_NODE_INFO.items():
        specs.setdefault(name, ns.spec_from_node_info(info))

    version = comfyui_version.__version__
    versions = [version]
    # the CLIP types each text-encoder loader offers (a model family ComfyUI added later is a new type, e.g.
    # "moss_image"): a workflow naming one no known ComfyUI has is made for a newer ComfyUI (graph reader)
    clip_types = {}
    for name in ("CLIPLoader", "DualCLIPLoader"):
        if name in nodes.NODE_CLASS_MAPPINGS:
            req = _node_info(nodes, internal_base, name).get("input", {}).get("required", {})
            opts = (req.get("type") or [[]])[0]
            if isinstance(opts, list):
                clip_types[name] = sorted(str(o) for o in opts)
    if args.merge and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as fh:
            old = json.load(fh)
        for name, spec in old.get("nodes", {}).items():
            if name not in specs and name not in api and name not in core:
                specs[name] = spec
            elif name in specs:
                # the same node type in another ComfyUI with other widgets (0.33's TrainLoraNode inserts
                # quantized_backward mid-list): keep the older specs as "alt", tried in turn by the reader
                # for a workflow whose widgets_values fit this version's spec not (node_specs.py)
                specs[name] = with_alternates(specs[name], spec)
        core = sorted(set(core) | (set(old.get("core", [])) - set(specs)))
        api = sorted(set(api) | set(old.get("api", [])))
        versions = sorted(set(old.get("comfyui_versions", [])) | {version})
        for name, opts in old.get("clip_types", {}).items():
            clip_types[name] = sorted(set(clip_types.get(name, ())) | set(opts))

    header = {
        "about": "Widget order / socket types per node type, from ComfyUI's node definitions "
                 "(bench/gen_widget_specs.py). Read by nodes/estimator/graph.py.",
        "comfyui_versions": versions,
        "gguf_source": "city96/ComfyUI-GGUF nodes.py @014560d (hand-copied INPUT_TYPES)",
        "clip_types": clip_types,  # loader -> every `type` option of the ComfyUIs above (union)
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        # one node per line: small diffs when ComfyUI changes a node
        fh.write("{\n")
        for key, value in header.items():
            fh.write(f"{json.dumps(key)}: {json.dumps(value)},\n")
        fh.write('"nodes": {\n')
        fh.write(",\n".join(f"{json.dumps(n)}: {json.dumps(specs[n], separators=(',', ':'))}"
                            for n in sorted(specs)))
        fh.write("\n},\n")
        fh.write(f'"core": {json.dumps(sorted(core))},\n')
        fh.write(f'"api": {json.dumps(sorted(api))}\n')
        fh.write("}\n")
    size = os.path.getsize(args.out)
    print(f"ComfyUI {version}: {len(nodes.NODE_CLASS_MAPPINGS)} node types; wrote {len(specs)} specs, "
          f"{len(core)} other core names, {len(api)} API nodes, pack nodes loaded: {sorted(pack_loaded)}; "
          f"failed: {failed}; {size / 1024:.1f} KiB -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
