"""ComfyUI API prompt or UI workflow -> Workload (the stages ComfyUI will run, their models, shapes).

Two input formats (COMFYUI-NOTES §5.1, §7.4):
- API prompt ``{id: {"class_type", "inputs", "_meta"}}``: what the frontend POSTs and what a
  node gets as the hidden PROMPT input; a linked input is ``[source id, output index]``;
  subgraphs are already flattened (ids ``"12:5"``) and bypassed / muted nodes removed.
- UI workflow ``{"nodes", "links", "definitions": {"subgraphs"}, ...}`` (what the frontend saves,
  EXTRA_PNGINFO["workflow"]). It is first flattened the way the frontend's ``graphToPrompt``
  does: subgraph instances expanded (ids ``"instance:inner"``), Reroute / PrimitiveNode /
  SetNode-GetNode resolved, bypassed nodes (mode 4) replaced by their same-typed input, muted
  nodes (mode 2) dropped, and ``widgets_values`` named with the widget order of the node's
  definition (``node_specs``; data/widget_specs.json, made by bench/gen_widget_specs.py).

Both end up in one internal graph, read by one analyzer that follows links upstream:
MODEL / CLIP / VAE / CONTROL_NET / CLIP_VISION to their loaders (through LoRAs and any
X -> X pass-through node), LATENT to the node that created it (shape per COMFYUI-NOTES §4.2),
GUIDER / SIGMAS / CONDITIONING for cfg, steps and ControlNets.

Nothing here raises anything but WorkflowError, and only when the input is not a workflow (not
JSON, not an object, a node entry without id / class_type); everything else (unknown nodes,
dangling links, cycles, odd values, absurd sizes) becomes a note on the Workload or the Stage.
"""
from __future__ import annotations

import ast
import heapq
import json
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .errors import WorkflowError
from .node_specs import load_specs, map_widget_values
from .workload import (CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE, LatentShape,
                       ModelRef, Stage, Workload)

__all__ = ["read_workflow", "estimate_text_tokens"]

# ComfyUI nodes.py:55 MAX_RESOLUTION: no size widget accepts more.
MAX_RESOLUTION = 16384
# The frontend's virtual subgraph IO node ids (litegraph SUBGRAPH_INPUT_ID / SUBGRAPH_OUTPUT_ID).
SUBGRAPH_INPUT_ID = -10
SUBGRAPH_OUTPUT_ID = -20
# litegraph LGraphEventMode: 0 ALWAYS, 2 NEVER (muted), 4 BYPASS.
MODE_MUTED = 2
MODE_BYPASS = 4
# Numbers beyond this are not sizes or counts anyone means (1e9 px is kept and flagged; 1e300 is junk).
MAX_NUMBER = 1e15
# Guard against pathological nesting / reroute chains (a real workflow nests a handful).
MAX_DEPTH = 200
MAX_EXPANDED_NODES = 50_000  # nodes visited while flattening subgraphs (the largest real workflows: ~2,000)
MAX_CHAIN = 400  # model / clip / vae chains (LoRA stacks) followed to the loader; deeper ones are an error

# Text tokens, a rough estimate on purpose (text encoding is a small stage): the usual BPE rule
# of thumb "a token is about 3/4 of an English word" (OpenAI's tokenizer guide) gives ~1.3
# tokens per word; ComfyUI pads CLIP prompts to 77-token chunks (comfy/sd1_clip.py max_length
# 77), so 77 is the floor. T5 / Qwen / Gemma tokenizers are close enough for a memory estimate.
TOKENS_PER_WORD = 1.3
MIN_TEXT_TOKENS = 77


def estimate_text_tokens(text: str) -> int:
    """Rough token count of a prompt: words x 1.3, at least 77 (one CLIP chunk)."""
    words = len(str(text).split())
    return max(MIN_TEXT_TOKENS, math.ceil(words * TOKENS_PER_WORD))


# ----------------------------------------------------------------------------------- node tables
# Loaders: class_type -> (widget names, folder, part per output slot or role).
DIFFUSION_LOADERS = {  # (name widget, gguf)
    "UNETLoader": ("unet_name", False),
    "UnetLoaderGGUF": ("unet_name", True),
    "UnetLoaderGGUFAdvanced": ("unet_name", True),
}
CHECKPOINT_LOADERS = {  # output slot -> part
    "CheckpointLoaderSimple": {0: "model", 1: "clip", 2: "vae"},
    "CheckpointLoader": {0: "model", 1: "clip", 2: "vae"},
    "ImageOnlyCheckpointLoader": {0: "model", 1: "clip_vision", 2: "vae"},
    "unCLIPCheckpointLoader": {0: "model", 1: "clip", 2: "vae", 3: "clip_vision"},
}
TE_LOADERS = {  # (file widgets, gguf, implicit clip type when the node has no `type` widget)
    "CLIPLoader": (("clip_name",), False, None),
    "DualCLIPLoader": (("clip_name1", "clip_name2"), False, None),
    "TripleCLIPLoader": (("clip_name1", "clip_name2", "clip_name3"), False, "sd3"),  # nodes_sd3.py: CLIPType.SD3
    # nodes_hidream.py: CLIPType.HIDREAM
    "QuadrupleCLIPLoader": (("clip_name1", "clip_name2", "clip_name3", "clip_name4"), False, "hidream"),
    "CLIPLoaderGGUF": (("clip_name",), True, None),
    "DualCLIPLoaderGGUF": (("clip_name1", "clip_name2"), True, None),
    "TripleCLIPLoaderGGUF": (("clip_name1", "clip_name2", "clip_name3"), True, "sd3"),  # ComfyUI-GGUF default
    "QuadrupleCLIPLoaderGGUF": (("clip_name1", "clip_name2", "clip_name3", "clip_name4"), True, None),
}
SIMPLE_LOADERS = {  # class_type -> (name widget, role, folder, output type)
    "VAELoader": ("vae_name", "vae", "vae", "VAE"),
    "LTXVAudioVAELoader": ("ckpt_name", "vae", "checkpoints", "VAE"),
    "CLIPVisionLoader": ("clip_name", "clip_vision", "clip_vision", "CLIP_VISION"),
    "ControlNetLoader": ("control_net_name", "controlnet", "controlnet", "CONTROL_NET"),
    "DiffControlNetLoader": ("control_net_name", "controlnet", "controlnet", "CONTROL_NET"),
    "ModelPatchLoader": ("name", "model_patch", "model_patches", "MODEL_PATCH"),
    "UpscaleModelLoader": ("model_name", "upscale_model", "upscale_models", "UPSCALE_MODEL"),
    "LatentUpscaleModelLoader": ("model_name", "latent_upscale_model", "latent_upscale_models",
                                 "LATENT_UPSCALE_MODEL"),
    "AudioEncoderLoader": ("audio_encoder_name", "audio_encoder", "audio_encoders", "AUDIO_ENCODER"),
    "StyleModelLoader": ("style_model_name", "style_model", "style_models", "STYLE_MODEL"),
    "GLIGENLoader": ("gligen_name", "gligen", "gligen", "GLIGEN"),
}
# VAELoader virtual names (nodes.py VAELoader.vae_list): tiny decoders from models/vae_approx.
VIRTUAL_VAES = {"taesd", "taesdxl", "taesd3", "taef1", "pixel_space"}
LORA_LOADERS = {"LoraLoader", "LoraLoaderModelOnly"}

TEXT_ENCODERS_NO_STAGE = {"CLIPSetLastLayer"}  # CLIP -> CLIP, no compute
SAMPLERS = {"KSampler", "KSamplerAdvanced", "SamplerCustom", "SamplerCustomAdvanced"}
VAE_DECODERS = {"VAEDecode", "VAEDecodeTiled", "VAEDecodeAutoTiled"}
AUDIO_DECODERS = {"VAEDecodeAudio", "VAEDecodeAudioTiled", "LTXVAudioVAEDecode"}
SKIPPED_DECODERS = {"VAEDecodeHunyuan3D"}  # latent -> voxels: not an image/video decode
VAE_ENCODERS = {"VAEEncode", "VAEEncodeTiled", "VAEEncodeForInpaint", "VAEEncodeAutoTiled"}
# This pack's Wan planner: its width/height/length outputs are at most the requested ones.
WAN_PLANNERS = {"VRAMBudgetWanPlanner"}

# Latent creators (COMFYUI-NOTES §4.2, zeros() lines of comfy_extras/*, ComfyUI 0.18.2):
# class -> (channels, spatial /, temporal / or None, fixed batch or None)
LATENT_CREATORS: dict[str, tuple[int | None, int, int | None, int | None]] = {
    "EmptyLatentImage": (None, 8, None, None),  # 4 ch, re-channelled at sampling
    "EmptySD3LatentImage": (16, 8, None, None),
    "EmptyFlux2LatentImage": (128, 16, None, None),
    "EmptyHunyuanImageLatent": (64, 32, None, None),
    "EmptyChromaRadianceLatentImage": (3, 1, None, None),  # pixel space
    "EmptyHunyuanLatentVideo": (16, 8, 4, None),
    "EmptyHunyuanVideo15Latent": (32, 16, 4, None),
    "HunyuanVideo15ImageToVideo": (32, 16, 4, None),
    "HunyuanImageToVideo": (16, 8, 4, None),
    "Kandinsky5ImageToVideo": (16, 8, 4, None),
    "EmptyCosmosLatentVideo": (16, 8, 8, None),
    "CosmosImageToVideoLatent": (16, 8, 8, 1),
    "CosmosPredict2ImageToVideoLatent": (16, 8, 4, 1),
    "EmptyLTXVLatentVideo": (128, 32, 8, None),
    "LTXVImgToVideo": (128, 32, 8, None),
    "EmptyMochiLatentVideo": (12, 8, 6, None),
    "WanImageToVideo": (16, 8, 4, None),
    "WanFunControlToVideo": (16, 8, 4, None),
    "WanVaceToVideo": (16, 8, 4, None),
    "WanCameraImageToVideo": (16, 8, 4, None),
    "WanPhantomSubjectToVideo": (16, 8, 4, None),
    "WanTrackToVideo": (16, 8, 4, None),
    "WanHuMoImageToVideo": (16, 8, 4, None),
    "WanSoundImageToVideo": (16, 8, 4, None),
    "WanAnimateToVideo": (16, 8, 4, None),
    "WanInfiniteTalkToVideo": (16, 8, 4, 1),
    "WanSCAILToVideo": (16, 8, 4, None),
    "WanMoveTrackToVideo": (16, 8, 4, None),
    "Wan22ImageToVideoLatent": (48, 16, 4, None),
    "WanFirstLastFrameToVideo": (16, 8, 4, None),  # vae.latent_channels / spacial compression: see _vae_geometry
    "Wan22FunControlToVideo": (16, 8, 4, None),  # idem
    "EmptyQwenImageLayeredLatentImage": (16, 8, None, None),  # frames = layers + 1 (nodes_qwen.py:129)
    "EmptyQwenImageLayeredLatent": (16, 8, None, None),
}
VAE_DEPENDENT_CREATORS = {"WanFirstLastFrameToVideo", "Wan22FunControlToVideo"}
NON_IMAGE_LATENTS = {  # creators of latents the LatentShape cannot describe
    "EmptyLatentAudio": "audio", "EmptyAceStepLatentAudio": "audio", "EmptyAceStep1.5LatentAudio": "audio",
    "LTXVEmptyLatentAudio": "audio", "EmptyLatentHunyuan3Dv2": "3D",
    "StableCascade_EmptyLatentImage": "Stable Cascade",
}
# Conditioning nodes whose LATENT output is the VAE encoding of their `pixels` input.
PIXEL_LATENT_CONDITIONING = {"InpaintModelConditioning", "InstructPixToPixConditioning"}
# Nodes that VAE-encode an image inside (conditioning / latent helpers): class -> image inputs.
# An empty tuple means "always encodes" (WanVaceToVideo encodes gray frames without a control video).
INTERNAL_ENCODERS: dict[str, tuple[str, ...]] = {
    "WanImageToVideo": ("start_image",), "WanFirstLastFrameToVideo": ("start_image", "end_image"),
    "WanFunControlToVideo": ("start_image", "control_video"), "Wan22FunControlToVideo": ("ref_image", "control_video"),
    "WanVaceToVideo": (), "Wan22ImageToVideoLatent": ("start_image",), "WanCameraImageToVideo": ("start_image",),
    "WanPhantomSubjectToVideo": ("images",), "WanTrackToVideo": ("start_image",),
    "WanHuMoImageToVideo": ("ref_image",), "WanSoundImageToVideo": ("ref_image",),
    "WanAnimateToVideo": ("reference_image", "pose_video", "face_video"), "WanInfiniteTalkToVideo": ("start_image",),
    "HunyuanImageToVideo": ("start_image",), "HunyuanVideo15ImageToVideo": ("start_image",),
    "Kandinsky5ImageToVideo": ("start_image",), "CosmosImageToVideoLatent": ("start_image", "end_image"),
    "CosmosPredict2ImageToVideoLatent": ("start_image", "end_image"), "LTXVImgToVideo": ("image",),
    "LTXVImgToVideoInplace": ("image",), "LTXVAddGuide": ("image",), "InpaintModelConditioning": ("pixels",),
    "InstructPixToPixConditioning": ("pixels",), "SVD_img2vid_Conditioning": ("init_image",),
}
VALUE_PRIMITIVES = {"PrimitiveInt", "PrimitiveFloat", "PrimitiveString", "PrimitiveStringMultiline",
                    "PrimitiveBoolean"}
# UI-only nodes: they never reach the server (frontend `isVirtualNode`).
VIRTUAL_NODES = {"Reroute", "PrimitiveNode", "Note", "MarkdownNote", "SetNode", "GetNode"}
# Output nodes when the specs do not say (custom packs, this pack).
OUTPUT_NODE_TYPES = {"SaveImage", "PreviewImage", "SaveVideo", "SaveAnimatedWEBP", "SaveAnimatedPNG", "SaveWEBM",
                     "SaveAudio", "PreviewAudio", "SaveGLB", "PreviewAny", "VHS_VideoCombine", "VRAMBudget",
                     "SaveLatent", "Image Save", "SaveImageWebsocket"}
# Socket types that matter for GPU memory: an unknown node touching one is "not understood".
RELEVANT_TYPES = {"MODEL", "CLIP", "VAE", "LATENT", "CONDITIONING", "CONTROL_NET", "CLIP_VISION", "GUIDER",
                  "SIGMAS", "CLIP_VISION_OUTPUT", "UPSCALE_MODEL", "LATENT_UPSCALE_MODEL", "MODEL_PATCH"}
# API prompts carry no socket types; for a node the specs do not know, guess from the input name.
NAME_TYPE_GUESS = {
    "model": "MODEL", "clip": "CLIP", "vae": "VAE", "samples": "LATENT", "latent": "LATENT",
    "latent_image": "LATENT", "positive": "CONDITIONING", "negative": "CONDITIONING",
    "conditioning": "CONDITIONING", "control_net": "CONTROL_NET", "clip_vision": "CLIP_VISION",
    "guider": "GUIDER", "sigmas": "SIGMAS", "image": "IMAGE", "images": "IMAGE", "pixels": "IMAGE",
}
# VAE file name -> (latent channels, spatial /, temporal /) when a node's latent depends on the VAE.
# From the VAE configs in comfy/sd.py (COMFYUI-NOTES §3.2); a guess by name, noted as such.
VAE_NAME_GEOMETRY = (
    (re.compile(r"wan[ _.-]?2[._]?2.*vae|wan2\.2_vae|wan_?2_?2_vae"), (48, 16, 4)),
    (re.compile(r"hunyuan.?video.?1[._]?5|hunyuanvideo15"), (32, 16, 4)),
    (re.compile(r"ltx"), (128, 32, 8)),
    (re.compile(r"flux2"), (32, 16, None)),
    (re.compile(r"hunyuan.?image"), (64, 32, None)),
    (re.compile(r"wan|hunyuan.?video|qwen.?image"), (16, 8, 4)),
    (re.compile(r"mochi"), (12, 8, 6)),
)


# ---------------------------------------------------------------------------- internal graph
@dataclass(frozen=True)
class _Link:
    node: str
    slot: int


_UNKNOWN = object()  # a value that cannot be computed without running ComfyUI


@dataclass
class _Node:
    id: str
    type: str
    title: str = ""
    inputs: dict = field(default_factory=dict)  # name -> literal | _Link
    input_types: dict = field(default_factory=dict)  # name -> socket type (UI, or specs)
    output_types: list | None = None
    fallback: dict = field(default_factory=dict)  # UI: saved widget values of linked widget inputs
    core: bool = False  # UI properties.cnr_id == "comfy-core"


@dataclass
class _Graph:
    nodes: dict  # id -> _Node, in file order
    fmt: str
    notes: list


def _is_link(value: Any) -> bool:
    """ComfyUI's own test (execution.py `is_link`), also accepting int ids from scripts."""
    return (isinstance(value, list) and len(value) == 2 and isinstance(value[0], (str, int))
            and not isinstance(value[0], bool) and isinstance(value[1], int) and not isinstance(value[1], bool))


def _natural_key(node_id: str) -> tuple:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in str(node_id).split(":"))


# -------------------------------------------------------------------------------- API reading
def _read_api(prompt: Mapping, specs: Mapping) -> _Graph:
    nodes: dict[str, _Node] = {}
    notes: list[str] = []
    spec_nodes = specs.get("nodes", {})
    for raw_id, entry in prompt.items():
        node_id = str(raw_id)
        if not isinstance(entry, Mapping):
            raise WorkflowError(f"node {node_id}: expected an object with class_type and inputs, got "
                                f"{type(entry).__name__}")
        class_type = entry.get("class_type")
        if not isinstance(class_type, str) or not class_type:
            raise WorkflowError(f"node {node_id}: no class_type")
        raw_inputs = entry.get("inputs") or {}
        if not isinstance(raw_inputs, Mapping):
            raise WorkflowError(f"node {node_id} ({class_type}): inputs is not an object")
        inputs = {}
        for name, value in raw_inputs.items():
            inputs[str(name)] = _Link(str(value[0]), value[1]) if _is_link(value) else value
        meta = entry.get("_meta") if isinstance(entry.get("_meta"), Mapping) else {}
        spec = spec_nodes.get(class_type) or {}
        nodes[node_id] = _Node(id=node_id, type=class_type, title=str(meta.get("title") or ""),
                               inputs=inputs, input_types=dict(spec.get("in") or {}),
                               output_types=list(spec["out"]) if "out" in spec else None)
    for node in nodes.values():
        for name, value in list(node.inputs.items()):
            if isinstance(value, _Link) and value.node not in nodes:
                notes.append(f"node {node.id} ({node.type}): input '{name}' links to missing node {value.node}; "
                             f"treated as unconnected")
                del node.inputs[name]
    return _Graph(nodes=nodes, fmt="api", notes=notes)


# --------------------------------------------------------------------------------- UI reading
# Saved workflows are edited by hand and by other tools: every access below tolerates a wrong
# type (a list where an object was expected, a string id, a dangling index) and degrades to
# "not connected" plus a note, never an exception.
def _lst(value: Any) -> list:
    return value if isinstance(value, list) else []


def _dct(value: Any) -> Mapping:
    if type(value) is dict:  # the common case, without the ABC check of isinstance(..., Mapping)
        return value
    return value if isinstance(value, Mapping) else {}


def _key(value: Any):
    """A usable node / link id (ints and strings), else None."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _index(value: Any, length: int) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < length
    return value if ok else None


@dataclass
class _Scope:
    """One graph level: the root workflow or one expanded subgraph instance."""

    prefix: str
    nodes: dict  # raw id -> raw node dict
    links: dict  # link id -> (origin id, origin slot, target id, target slot, type)
    sg_def: Mapping | None = None
    instance: Mapping | None = None
    parent: "_Scope | None" = None


def _parse_links(raw_links: Any) -> dict:
    links: dict = {}
    for link in _lst(raw_links):
        if isinstance(link, list) and len(link) >= 5 and _key(link[0]) is not None:
            links[link[0]] = (_key(link[1]), link[2], _key(link[3]), link[4], link[5] if len(link) > 5 else None)
        elif isinstance(link, Mapping) and _key(link.get("id")) is not None:
            links[link["id"]] = (_key(link.get("origin_id")), link.get("origin_slot"), _key(link.get("target_id")),
                                 link.get("target_slot"), link.get("type"))
    return links


class _UiReader:
    def __init__(self, workflow: Mapping, specs: Mapping):
        self.specs = specs.get("nodes", {})
        self.notes: list[str] = []
        self.nodes: dict[str, _Node] = {}
        self.where: list[str] = []
        self._scopes: dict[str, _Scope] = {}  # prefix -> expanded subgraph instance
        self._promoted: dict[str, list] = {}  # prefix -> promoted widget input names
        self.subgraphs = {sg["id"]: sg for sg in _lst(_dct(workflow.get("definitions")).get("subgraphs"))
                          if isinstance(sg, Mapping) and isinstance(sg.get("id"), str)}
        raw_nodes = workflow.get("nodes")
        if not isinstance(raw_nodes, list):
            raise WorkflowError("UI workflow: 'nodes' is not a list")
        self.root = _Scope(prefix="", nodes=self._index(raw_nodes, "workflow"),
                           links=_parse_links(workflow.get("links")))

    def _index(self, raw_nodes: Any, where: str) -> dict:
        out = {}
        for raw in _lst(raw_nodes):
            if not isinstance(raw, (dict, Mapping)) or _key(raw.get("id")) is None \
                    or not isinstance(raw.get("type"), str):
                raise WorkflowError(f"{where}: a node entry without id/type: {str(raw)[:80]}")
            out[raw["id"]] = raw
        return out

    def read(self) -> _Graph:
        self._visited = 0
        self._expand(self.root, depth=0)
        return _Graph(nodes=self.nodes, fmt="ui", notes=self.notes)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- expansion
    def _child_scope(self, scope: _Scope, instance: Mapping) -> _Scope:
        prefix = f"{scope.prefix}{instance['id']}:"
        if prefix not in self._scopes:
            sg = self.subgraphs[instance["type"]]
            self._scopes[prefix] = _Scope(
                prefix=prefix, nodes=self._index(sg.get("nodes"), f"subgraph {sg.get('name') or sg['id']}"),
                links=_parse_links(sg.get("links")), sg_def=sg, instance=instance, parent=scope)
        return self._scopes[prefix]

    def _expand(self, scope: _Scope, depth: int) -> None:
        if depth > MAX_DEPTH // 10:  # a subgraph containing itself, or absurd nesting
            self.note(f"subgraphs nested deeper than {MAX_DEPTH // 10} levels at {scope.prefix}: not expanded")
            return
        for raw in scope.nodes.values():
            flat_id = f"{scope.prefix}{raw['id']}"
            self.where.append(f"node {flat_id} ({raw['type']})")
            self._visited += 1
            if self._visited > MAX_EXPANDED_NODES:  # nesting multiplies: a few KB can expand to millions
                raise WorkflowError(f"the workflow's subgraphs expand to more than {MAX_EXPANDED_NODES:,} nodes "
                                    f"(at node {flat_id}); too large to read")
            mode = raw.get("mode", 0)
            if raw["type"] in self.subgraphs:
                if mode in (MODE_MUTED, MODE_BYPASS):
                    what = "muted" if mode == MODE_MUTED else "bypassed"
                    self.note(f"subgraph node {flat_id} ({self.subgraphs[raw['type']].get('name', '')}) is "
                              f"{what}: its nodes do not run")
                    continue
                self._expand(self._child_scope(scope, raw), depth + 1)
                continue
            if raw["type"] in VIRTUAL_NODES:
                continue
            if mode == MODE_MUTED:
                self.note(f"node {flat_id} ({raw['type']}) is muted: it does not run")
                continue
            if mode == MODE_BYPASS:
                self.note(f"node {flat_id} ({raw['type']}) is bypassed: its inputs pass through")
                continue
            self.nodes[flat_id] = self._flat_node(scope, raw, flat_id)

    def _flat_node(self, scope: _Scope, raw: Mapping, flat_id: str) -> _Node:
        node_type = raw["type"]
        spec = self.specs.get(node_type)
        inputs = self._widget_values(raw, spec, flat_id)
        input_types = dict(_dct(_dct(spec).get("in")))
        fallback = {}
        for slot in _lst(raw.get("inputs")):
            if not isinstance(slot, (dict, Mapping)) or not isinstance(slot.get("name"), str):
                continue
            name = slot["name"]
            widget = _dct(slot.get("widget"))
            if isinstance(widget.get("name"), str) and widget["name"]:
                name = widget["name"]
            if isinstance(slot.get("type"), str) and not widget:
                input_types[name] = slot["type"]
            link_id = _key(slot.get("link"))
            if link_id is None:
                continue
            resolved = self._resolve(scope, link_id, depth=0)
            if resolved is None:
                continue  # disconnected by mute / bypass: a widget keeps its own value
            kind, value = resolved
            if kind == "value":
                if value is not None:
                    inputs[name] = value
                continue
            if name in inputs:
                fallback[name] = inputs[name]
            inputs[name] = value
        outputs = raw.get("outputs")
        if isinstance(outputs, list):
            output_types = [str(_dct(o).get("type") or "*") for o in outputs]
        else:
            output_types = list(spec["out"]) if spec and "out" in spec else None
        props = _dct(raw.get("properties"))
        return _Node(id=flat_id, type=node_type, title=str(raw.get("title") or ""), inputs=inputs,
                     input_types=input_types, output_types=output_types, fallback=fallback,
                     core=props.get("cnr_id") == "comfy-core")

    def _widget_values(self, raw: Mapping, spec: Mapping | None, flat_id: str) -> dict:
        values = raw.get("widgets_values")
        if isinstance(values, Mapping):  # some packs (VHS) save a dict
            return {str(k): v for k, v in values.items()}
        if not isinstance(values, list) or not values:
            return {}
        if spec is not None:
            named = map_widget_values(spec, values)
            if named is not None:
                return named
        # The node's own widget sockets (frontend >= 1.16 gives every widget one), in order.
        slot_names = [_dct(s.get("widget")).get("name") for s in _lst(raw.get("inputs"))
                      if isinstance(s, (dict, Mapping))]
        slot_names = [n for n in slot_names if isinstance(n, str) and n]
        if slot_names:
            pseudo: dict = {"w": []}
            for name in slot_names:
                pseudo["w"].append([name, "X"])
                if name in ("seed", "noise_seed"):
                    pseudo["w"].append(["$cag", "CAG"])
            named = map_widget_values(pseudo, values)
            if named is not None:
                return named
        named_saved = raw.get("widgets_values_named")  # written by the workflow-templates tooling
        if isinstance(named_saved, Mapping):
            return {str(k): v for k, v in named_saved.items() if "control_after_generate" not in str(k)}
        if spec is not None and spec.get("w"):
            # Saved by another ComfyUI version: map the common prefix (new widgets are appended).
            out = {}
            for i, entry in enumerate(spec["w"]):
                if i >= len(values) or entry[1] == "DYN":
                    break
                if not entry[0].startswith("$"):
                    out[entry[0]] = values[i]
            self.note(f"node {flat_id} ({raw['type']}): {len(values)} widget values where this ComfyUI "
                      f"version has {len(spec['w'])}; mapped by position")
            return out
        return {}

    # -- link resolution
    def _resolve(self, scope: _Scope, link_id: Any, depth: int):
        """("link", _Link) | ("value", literal) | None (nothing arrives) for one link of a scope."""
        where = scope.prefix or "root"
        if depth > MAX_DEPTH:
            self.note(f"link {link_id} at {where}: reroute/bypass chain too long (cycle?); treated as unconnected")
            return None
        link = scope.links.get(link_id) if _key(link_id) is not None else None
        if link is None:
            self.note(f"link {link_id} at {where} is missing from the links list; treated as unconnected")
            return None
        origin_id, origin_slot = link[0], link[1]
        if origin_id == SUBGRAPH_INPUT_ID:
            return self._resolve_subgraph_input(scope, origin_slot, depth)
        origin = scope.nodes.get(origin_id) if origin_id is not None else None
        if origin is None:
            self.note(f"link {link_id} at {where} comes from missing node {origin_id}; treated as unconnected")
            return None
        return self._resolve_output(scope, origin, origin_slot, depth + 1)

    def _resolve_output(self, scope: _Scope, origin: Mapping, slot: Any, depth: int):
        node_type = origin["type"]
        mode = origin.get("mode", 0)
        if mode == MODE_MUTED:
            return None
        if mode == MODE_BYPASS:
            return self._resolve_bypass(scope, origin, slot, depth)
        if node_type == "Reroute":
            return self._resolve_input_slot(scope, origin, 0, depth)
        if node_type == "PrimitiveNode":
            values = _lst(origin.get("widgets_values"))
            return ("value", values[0]) if values else None
        if node_type == "SetNode":
            return self._resolve_input_slot(scope, origin, 0, depth)
        if node_type == "GetNode":
            return self._resolve_get_node(scope, origin, depth)
        if node_type in self.subgraphs:
            return self._resolve_subgraph_output(scope, origin, slot, depth)
        if _index(slot, 1 << 30) is None:
            return None
        return ("link", _Link(f"{scope.prefix}{origin['id']}", slot))

    def _resolve_input_slot(self, scope: _Scope, node: Mapping, index: int, depth: int):
        inputs = _lst(node.get("inputs"))
        if _index(index, len(inputs)) is None:
            return None
        link_id = _key(_dct(inputs[index]).get("link"))
        return None if link_id is None else self._resolve(scope, link_id, depth + 1)

    def _resolve_bypass(self, scope: _Scope, node: Mapping, slot: Any, depth: int):
        """Frontend ExecutableNodeDTO: the same slot index first, then the first input of the output's type."""
        outputs = _lst(node.get("outputs"))
        out_slot = _index(slot, len(outputs))
        out_type = _dct(outputs[out_slot]).get("type") if out_slot is not None else None
        inputs = _lst(node.get("inputs"))
        order = ([slot] if _index(slot, len(inputs)) is not None else []) + list(range(len(inputs)))
        for index in order:
            entry = _dct(inputs[index])
            in_type = entry.get("type")
            if out_type is None or in_type == out_type or "*" in (in_type, out_type):
                if _key(entry.get("link")) is None:
                    continue
                return self._resolve(scope, entry["link"], depth + 1)
        return None

    def _resolve_get_node(self, scope: _Scope, get_node: Mapping, depth: int):
        """KJNodes SetNode/GetNode: a GetNode reads the SetNode with the same name (widgets_values[0])."""
        values = _lst(get_node.get("widgets_values"))
        name = values[0] if values else None
        level: _Scope | None = scope
        while level is not None:
            for raw in level.nodes.values():
                if raw.get("type") == "SetNode" and _lst(raw.get("widgets_values"))[:1] == [name]:
                    return self._resolve_input_slot(level, raw, 0, depth)
            level = level.parent
        self.note(f"GetNode {scope.prefix}{get_node['id']} '{name}' has no SetNode; treated as unconnected")
        return None

    def _resolve_subgraph_output(self, scope: _Scope, instance: Mapping, slot: Any, depth: int):
        outputs = _lst(self.subgraphs[instance["type"]].get("outputs"))
        if _index(slot, len(outputs)) is None:
            return None
        child = self._child_scope(scope, instance)
        for link_id in _lst(_dct(outputs[slot]).get("linkIds")):
            link = child.links.get(link_id) if _key(link_id) is not None else None
            if link is not None and link[2] == SUBGRAPH_OUTPUT_ID:
                return self._resolve(child, link_id, depth + 1)
        return None

    def _resolve_subgraph_input(self, scope: _Scope, index: Any, depth: int):
        sg, instance, parent = scope.sg_def, scope.instance, scope.parent
        if sg is None or instance is None or parent is None:
            return None
        sg_inputs = _lst(sg.get("inputs"))
        if _index(index, len(sg_inputs)) is None:
            return None
        name = _dct(sg_inputs[index]).get("name")
        slots = [s for s in _lst(instance.get("inputs")) if isinstance(s, (dict, Mapping))]
        slot = next((s for s in slots if s.get("name") == name), None)
        if slot is None and len(slots) == len(sg_inputs):
            slot = slots[index]
        if slot is not None and _key(slot.get("link")) is not None:
            return self._resolve(parent, slot["link"], depth + 1)
        # Not linked outside: a promoted widget's value on the instance (frontend <= 1.35 saves
        # them in the instance's widgets_values), else the inner widget keeps its own value.
        values = instance.get("widgets_values")
        if isinstance(values, Mapping) and isinstance(name, str) and name in values:
            return ("value", values[name])
        if isinstance(values, list) and values:
            widget_inputs = self._promoted_widget_inputs(scope)
            if len(widget_inputs) == len(values) and name in widget_inputs:
                return ("value", values[widget_inputs.index(name)])
        return None

    def _promoted_widget_inputs(self, scope: _Scope) -> list:
        """Names of the subgraph inputs that feed widgets inside (the instance shows them as widgets)."""
        if scope.prefix not in self._promoted:
            self._promoted[scope.prefix] = self._find_promoted_widget_inputs(scope)
        return self._promoted[scope.prefix]

    def _find_promoted_widget_inputs(self, scope: _Scope) -> list:
        names = []
        for sg_input in _lst(_dct(scope.sg_def).get("inputs")):
            for link_id in _lst(_dct(sg_input).get("linkIds")):
                link = scope.links.get(link_id) if _key(link_id) is not None else None
                target = scope.nodes.get(link[2]) if link and link[2] is not None else None
                target_inputs = _lst(_dct(target).get("inputs"))
                slot = _index(link[3], len(target_inputs)) if link else None
                if slot is not None and _dct(target_inputs[slot]).get("widget"):
                    names.append(_dct(sg_input).get("name"))
                    break
        return names


# ---------------------------------------------------------------------------------- analysis
class _MathEval:
    """Safe evaluator for ComfyMathExpression: numbers, + - * / // % **, comparisons, a few functions."""

    BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
    CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
              ast.Eq: operator.eq, ast.NotEq: operator.ne}
    FUNCS = {"min": min, "max": max, "round": round, "abs": abs, "int": int, "float": float,
             "floor": math.floor, "ceil": math.ceil, "sqrt": math.sqrt}

    def __init__(self, names: Mapping[str, Any]):
        self.names = names

    def eval(self, expression: str):
        try:
            return self._eval(ast.parse(str(expression), mode="eval").body)
        except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError, KeyError, RecursionError):
            return _UNKNOWN

    def _eval(self, n):
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, bool)):
            return n.value
        if isinstance(n, ast.Name):
            value = self.names[n.id]
            if value is _UNKNOWN or not isinstance(value, (int, float, bool)):
                raise ValueError(n.id)
            return value
        if isinstance(n, ast.BinOp) and type(n.op) in self.BINOPS:
            left, right = self._eval(n.left), self._eval(n.right)
            if isinstance(n.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
                raise ValueError("power too large")
            return self.BINOPS[type(n.op)](left, right)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd, ast.Not)):
            value = self._eval(n.operand)
            return -value if isinstance(n.op, ast.USub) else (+value if isinstance(n.op, ast.UAdd) else not value)
        if isinstance(n, ast.Compare) and all(type(op) in self.CMPOPS for op in n.ops):
            left = self._eval(n.left)
            for op, right_node in zip(n.ops, n.comparators):
                right = self._eval(right_node)
                if not self.CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(n, ast.BoolOp):
            values = [self._eval(v) for v in n.values]
            return all(values) if isinstance(n.op, ast.And) else any(values)
        if isinstance(n, ast.IfExp):
            return self._eval(n.body) if self._eval(n.test) else self._eval(n.orelse)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in self.FUNCS and not n.keywords:
            return self.FUNCS[n.func.id](*[self._eval(a) for a in n.args])
        raise ValueError("unsupported expression")


def _as_number(value: Any):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


@dataclass
class _ImageSize:
    width: int
    height: int
    batch: int = 1
    exact: bool = True


class _Analyzer:
    def __init__(self, graph: _Graph, specs: Mapping):
        self.g = graph
        self.nodes: dict[str, _Node] = graph.nodes
        self.specs: Mapping = specs.get("nodes", {})
        self.core = set(specs.get("core", ()))
        self.api = set(specs.get("api", ()))
        self.notes: list[str] = list(graph.notes)
        self._seen_notes: set[str] = set(self.notes)
        self._stage_notes: list[str] | None = None
        self._ref_cache: dict = {}
        self._latent_cache: dict = {}
        self._advanced_start: dict[str, int] = {}
        self.where: list[str] = []

    # -- notes
    def note(self, text: str) -> None:
        """A fact about the workflow (global: traced values are cached, so it is said once)."""
        if text not in self._seen_notes:
            self._seen_notes.add(text)
            self.notes.append(text)

    def stage_note(self, text: str) -> None:
        """A fact about the stage being built."""
        if self._stage_notes is None:
            self.note(text)
        elif text not in self._stage_notes:
            self._stage_notes.append(text)

    @staticmethod
    def label(node: _Node) -> str:
        return f"node {node.id} ({node.type})"

    # -- socket types
    def in_type(self, node: _Node, name: str) -> str | None:
        t = node.input_types.get(name)
        if t is None:
            t = (self.specs.get(node.type) or {}).get("in", {}).get(name)
        if t is None and node.type not in self.specs:
            t = NAME_TYPE_GUESS.get(name)
        return t

    def out_type(self, node: _Node, slot: int) -> str | None:
        if node.output_types is not None and 0 <= slot < len(node.output_types):
            return node.output_types[slot]
        return None

    def linked_inputs_of_type(self, node: _Node, type_: str) -> list[tuple[str, _Link]]:
        out = []
        for name, value in node.inputs.items():
            if isinstance(value, _Link):
                t = self.in_type(node, name)
                if t == type_ or (t and type_ in str(t).split(",")):
                    out.append((name, value))
        return out

    def link(self, node: _Node, name: str) -> _Link | None:
        value = node.inputs.get(name)
        return value if isinstance(value, _Link) else None

    def known(self, node_type: str) -> bool:
        return node_type in self.specs or node_type in self.core

    # -- values (widgets, possibly fed by primitive / math / switch nodes)
    def value(self, node: _Node, name: str, default: Any = None):
        if name not in node.inputs:
            return default
        value = node.inputs[name]
        if isinstance(value, _Link):
            computed = self.eval_link(value, depth=0)
            if computed is not _UNKNOWN:
                return computed
            if name in node.fallback:
                source = self.nodes.get(value.node)
                self.note(f"{self.label(node)}: '{name}' comes from "
                          f"{self.label(source) if source else value.node}, which is not computed here; "
                          f"used the value saved in the workflow ({node.fallback[name]!r})")
                return node.fallback[name]
            return _UNKNOWN
        return value

    def eval_link(self, link: _Link, depth: int):
        node = self.nodes.get(link.node)
        if node is None or depth > MAX_DEPTH:
            return _UNKNOWN
        t = node.type

        def sub(name):
            value = node.inputs.get(name)
            if isinstance(value, _Link):
                return self.eval_link(value, depth + 1)
            return _UNKNOWN if value is None else value

        if t in VALUE_PRIMITIVES:
            return sub("value")
        if t == "ComfySwitchNode":
            switch = sub("switch")
            if switch is _UNKNOWN:
                return _UNKNOWN
            return sub("on_true" if switch else "on_false")
        if t == "ComfyMathExpression":
            names = {k.split(".", 1)[1]: sub(k) for k in node.inputs if k.startswith("values.")}
            result = _MathEval(names).eval(sub("expression"))
            if result is _UNKNOWN:
                return _UNKNOWN
            out = self.out_type(node, link.slot) or ("FLOAT", "INT", "BOOLEAN")[min(link.slot, 2)]
            try:
                return int(result) if out == "INT" else bool(result) if out == "BOOLEAN" else float(result)
            except (OverflowError, ValueError):  # inf / nan
                return _UNKNOWN
        if t == "StringConcatenate":
            a, b, delimiter = sub("string_a"), sub("string_b"), sub("delimiter")
            if _UNKNOWN in (a, b):
                return _UNKNOWN
            return f"{a}{'' if delimiter is _UNKNOWN else delimiter}{b}"
        if t == "CustomCombo":
            return sub("choice") if link.slot == 0 else sub("index")
        if t in WAN_PLANNERS and link.slot < 3:
            name = ("width", "height", "length")[link.slot]
            seconds = sub("seconds")
            if name == "length" and isinstance(seconds, (int, float)) and seconds > 0:
                return _UNKNOWN  # the length follows from seconds x the model's fps
            requested = sub(name)
            if requested is not _UNKNOWN:
                self.note(f"{self.label(node)}: planned {name} is at most the requested {requested}; "
                          f"the request is used")
            return requested
        if t == "GetImageSize":
            size = self.image_size(self.link(node, "image"))
            if size is None or not size.exact:
                return _UNKNOWN
            return (size.width, size.height, size.batch)[link.slot] if link.slot < 3 else _UNKNOWN
        return _UNKNOWN

    def number(self, node: _Node, name: str, default=None, integer=True):
        raw = self.value(node, name, default)
        if raw is _UNKNOWN:
            self.note(f"{self.label(node)}: '{name}' is computed by a linked node; value unknown")
            return None
        if raw is None:
            return None
        number = _as_number(raw)
        if number is None:
            self.note(f"{self.label(node)}: '{name}' is not a number ({str(raw)[:40]!r})")
            return None
        if abs(number) > MAX_NUMBER:
            self.note(f"{self.label(node)}: '{name}' = {number:g} is too large to use")
            return None
        return int(number) if integer else float(number)

    def text(self, node: _Node, name: str):
        raw = self.value(node, name)
        if raw is _UNKNOWN or raw is None:
            return raw
        return str(raw)

    # -- model references
    def refs(self, link: _Link | None, type_: str, visiting: frozenset = frozenset()) -> list[ModelRef]:
        """The model files behind a MODEL / CLIP / VAE / CONTROL_NET / CLIP_VISION link, base first."""
        if link is None:
            return []
        key = (link.node, link.slot, type_)
        if key in self._ref_cache:
            return list(self._ref_cache[key])
        node = self.nodes.get(link.node)
        if node is None:
            return []
        if key in visiting:
            self.note(f"{self.label(node)}: cycle while tracing {type_}; stopped")
            return []
        if len(visiting) > MAX_CHAIN:  # not a cycle: a long chain the estimate must not silently cut
            raise WorkflowError(f"{self.label(node)}: the {type_} passes through more than {MAX_CHAIN} nodes "
                                "(LoRAs, patches); too long to follow")
        visiting = visiting | {key}
        result = self._refs_of(node, link.slot, type_, visiting)
        deduped: list[ModelRef] = []
        for ref in result:
            if ref not in deduped:
                deduped.append(ref)
        self._ref_cache[key] = tuple(deduped)
        return deduped

    def _loader_ref(self, node: _Node, widget: str, **fields) -> ModelRef | None:
        name = self.value(node, widget)
        if not isinstance(name, str) or not name:
            self.note(f"{self.label(node)}: no file name in '{widget}'")
            return None
        return ModelRef(name=name, loader_node=node.id, loader_type=node.type, **fields)

    def _refs_of(self, node: _Node, slot: int, type_: str, visiting: frozenset) -> list[ModelRef]:
        t = node.type
        if t in DIFFUSION_LOADERS and type_ == "MODEL":
            widget, gguf = DIFFUSION_LOADERS[t]
            dtype = self.value(node, "weight_dtype")
            ref = self._loader_ref(node, widget, role="diffusion", folder="diffusion_models", gguf=gguf,
                                   weight_dtype=str(dtype) if isinstance(dtype, str) else None)
            return [ref] if ref else []
        if t in CHECKPOINT_LOADERS:
            part = CHECKPOINT_LOADERS[t].get(slot)
            if part is None:
                return []
            ref = self._loader_ref(node, "ckpt_name", role="checkpoint", folder="checkpoints", part=part)
            return [ref] if ref else []
        if t in TE_LOADERS and type_ == "CLIP":
            widgets, gguf, implicit = TE_LOADERS[t]
            clip_type = self.value(node, "type", implicit)
            device = self.value(node, "device")
            out = []
            for widget in widgets:
                ref = self._loader_ref(node, widget, role="text_encoder", folder="text_encoders", gguf=gguf,
                                       clip_type=str(clip_type) if isinstance(clip_type, str) else None,
                                       device=str(device) if isinstance(device, str) else None)
                if ref:
                    out.append(ref)
            return out
        if t == "LTXAVTextEncoderLoader" and type_ == "CLIP":  # Gemma + the LTX-2 checkpoint's text projection
            device = self.value(node, "device")
            out = []
            ref = self._loader_ref(node, "text_encoder", role="text_encoder", folder="text_encoders",
                                   clip_type="ltxv", device=str(device) if isinstance(device, str) else None)
            if ref:
                out.append(ref)
            if self.value(node, "ckpt_name"):
                ref = self._loader_ref(node, "ckpt_name", role="checkpoint", folder="checkpoints", part="clip")
                if ref:
                    out.append(ref)
            return out
        if t in SIMPLE_LOADERS:
            widget, role, folder, out_type = SIMPLE_LOADERS[t]
            if out_type != type_:
                return []
            name = self.value(node, widget)
            if role == "vae" and isinstance(name, str) and name in VIRTUAL_VAES:
                folder = "vae_approx"
                self.note(f"{self.label(node)}: '{name}' is a tiny preview VAE from models/vae_approx")
            ref = self._loader_ref(node, widget, role=role, folder=folder)
            return [ref] if ref else []
        if t in LORA_LOADERS:
            if type_ == "MODEL" and slot == 0:
                base = self.refs(self.link(node, "model"), "MODEL", visiting)
                return base + self._lora(node, "strength_model")
            if type_ == "CLIP" and slot == 1:
                base = self.refs(self.link(node, "clip"), "CLIP", visiting)
                return base + self._lora(node, "strength_clip")
            return []
        if t == "ComfySwitchNode":
            switch = self.value(node, "switch")
            if switch is _UNKNOWN or switch is None:
                self.note(f"{self.label(node)}: switch value unknown; both branches counted")
                return (self.refs(self.link(node, "on_true"), type_, visiting)
                        + self.refs(self.link(node, "on_false"), type_, visiting))
            return self.refs(self.link(node, "on_true" if switch else "on_false"), type_, visiting)
        return self._refs_generic(node, slot, type_, visiting)

    def _lora(self, node: _Node, strength_widget: str) -> list[ModelRef]:
        strength = self.number(node, strength_widget, 1.0, integer=False)
        if strength == 0:
            self.note(f"{self.label(node)}: {strength_widget} is 0, the LoRA is not applied")
            return []
        ref = self._loader_ref(node, "lora_name", role="lora", folder="loras", strength=strength)
        return [ref] if ref else []

    def _refs_generic(self, node: _Node, slot: int, type_: str, visiting: frozenset) -> list[ModelRef]:
        """An X -> X node we do not know specifically: follow its input(s) of the traced type."""
        out_type = self.out_type(node, slot)
        if out_type is not None and out_type not in (type_, "*") and type_ not in str(out_type).split(","):
            return []
        ins = self.linked_inputs_of_type(node, type_)
        if not ins:
            return []
        if node.output_types is not None:
            outs = [i for i, o in enumerate(node.output_types) if o == type_]
            if len(outs) == len(ins) and slot in outs:
                ins = [ins[outs.index(slot)]]
        if not self.known(node.type) and not node.core:
            self.note(f"{self.label(node)}: unknown node; followed its {type_} input "
                      f"{', '.join(repr(n) for n, _ in ins)}")
        out: list[ModelRef] = []
        for _, upstream in ins:
            out.extend(self.refs(upstream, type_, visiting))
        return out

    def controlnets(self, cond_links: Iterable[_Link | None]) -> list[ModelRef]:
        """ControlNets applied on the conditioning reaching a sampler."""
        out: list[ModelRef] = []
        seen: set = set()
        stack = [link for link in cond_links if link is not None]
        while stack:
            link = stack.pop()
            if link.node in seen or len(seen) > 10 * MAX_DEPTH:
                continue
            seen.add(link.node)
            node = self.nodes.get(link.node)
            if node is None:
                continue
            for _, cn_link in self.linked_inputs_of_type(node, "CONTROL_NET"):
                strength = self.number(node, "strength", 1.0, integer=False)
                if strength == 0:
                    self.note(f"{self.label(node)}: strength 0, the ControlNet is not applied")
                    continue
                for ref in self.refs(cn_link, "CONTROL_NET"):
                    if ref not in out:
                        out.append(ref)
            stack.extend(upstream for _, upstream in self.linked_inputs_of_type(node, "CONDITIONING"))
        return out

    # -- latents and images
    def latent(self, link: _Link | None, depth: int = 0) -> LatentShape | None:
        if link is None:
            return None
        key = (link.node, link.slot)
        if key in self._latent_cache:
            return self._latent_cache[key]
        node = self.nodes.get(link.node)
        if node is None:
            return None
        if depth > MAX_DEPTH:
            self.note(f"{self.label(node)}: latent chain too long (cycle?)")
            return None
        self._latent_cache[key] = None  # cycle guard
        shape = self._latent_of(node, link.slot, depth)
        self._latent_cache[key] = shape
        return shape

    def _vae_geometry(self, vae_link: _Link | None):
        for ref in self.refs(vae_link, "VAE"):
            name = ref.name.lower()
            for pattern, geometry in VAE_NAME_GEOMETRY:
                if pattern.search(name):
                    return geometry, ref.name
        return None, None

    def _creator_shape(self, node: _Node, geometry: tuple | None = None) -> LatentShape | None:
        channels, spatial, temporal, fixed_batch = geometry or LATENT_CREATORS[node.type]
        if node.type in VAE_DEPENDENT_CREATORS:
            geometry, vae_name = self._vae_geometry(self.link(node, "vae"))
            if geometry is not None:
                channels, spatial = geometry[0], geometry[1]
                self.note(f"{self.label(node)}: latent has the VAE's channels ({channels}) and /{spatial} "
                          f"compression, judged from the VAE name '{vae_name}'")
            else:
                self.note(f"{self.label(node)}: latent depends on the VAE; assumed the Wan 2.1 VAE (16 ch, /8)")
        for name in ("width", "height", "batch_size", "length"):
            self._check_widget_range(node, name)
        width = self.number(node, "width")
        height = self.number(node, "height")
        if width is None or height is None:
            return None
        batch = fixed_batch or self.number(node, "batch_size", 1)
        if batch is None:
            batch = 1
        frames = pixel_frames = None
        if temporal is not None:
            length = self.number(node, "length")
            if length is None:
                return None
            pixel_frames = length
            frames = (length - 1) // temporal + 1
            if node.type == "WanVaceToVideo" and self.link(node, "reference_image") is not None:
                frames += 1  # nodes_wan.py: the reference image adds `trim_latent` = 1 latent frame
                self.note(f"{self.label(node)}: the reference image adds one latent frame (trimmed after sampling)")
        if node.type in ("EmptyQwenImageLayeredLatentImage", "EmptyQwenImageLayeredLatent"):
            layers = self.number(node, "layers", 0) or 0
            frames = layers + 1
        self._check_size(node, width, height, pixel_frames, batch)
        return LatentShape(batch=batch, channels=channels, height=height // spatial, width=width // spatial,
                           frames=frames, pixel_height=height, pixel_width=width, pixel_frames=pixel_frames,
                           spatial_compression=spatial, temporal_compression=temporal,
                           source_node=node.id, source_type=node.type)

    # ComfyUI's own limits for these widgets (nodes.py MAX_RESOLUTION; EmptyLatentImage batch_size
    # 1..4096): ComfyUI refuses a prompt outside them, so the estimate does too, naming the node,
    # before any planner sees an absurd size.
    WIDGET_RANGES = {"width": (1, MAX_RESOLUTION), "height": (1, MAX_RESOLUTION), "length": (1, MAX_RESOLUTION),
                     "batch_size": (1, 4096)}

    def _check_widget_range(self, node: _Node, name: str) -> None:
        raw = self.value(node, name)
        if raw is _UNKNOWN or raw is None:
            return
        number = raw if isinstance(raw, float) and not math.isfinite(raw) else _as_number(raw)  # 1e309 -> inf
        if number is None:
            return
        lo, hi = self.WIDGET_RANGES[name]
        if not math.isfinite(number) or not lo <= number <= hi:
            raise WorkflowError(f"{self.label(node)}: {name} = {str(raw)[:24]} is outside ComfyUI's range {lo}..{hi}; "
                                "ComfyUI would refuse this prompt")

    def _check_size(self, node: _Node, width: int, height: int, frames: int | None, batch: int) -> None:
        if width <= 0 or height <= 0 or (frames is not None and frames <= 0) or batch <= 0:
            raise WorkflowError(f"{self.label(node)}: size {width}x{height}"
                                f"{'' if frames is None else f'x{frames}'} batch {batch} is not positive")
        if max(width, height) > MAX_RESOLUTION or (frames or 0) > MAX_RESOLUTION or batch > 4096:
            raise WorkflowError(f"{self.label(node)}: size {width}x{height}{'' if frames is None else f'x{frames}'} "
                                f"batch {batch} is beyond ComfyUI's limits (MAX_RESOLUTION {MAX_RESOLUTION}, batch 4096)")

    def _latent_of(self, node: _Node, slot: int, depth: int) -> LatentShape | None:
        t = node.type
        out_type = self.out_type(node, slot)
        if out_type is not None and out_type not in ("LATENT", "*"):
            return None
        if t in LATENT_CREATORS:
            return self._creator_shape(node)
        if t in NON_IMAGE_LATENTS:
            self.note(f"{self.label(node)}: {NON_IMAGE_LATENTS[t]} latent; no image/video shape")
            return None
        up = lambda name: self.latent(self.link(node, name), depth + 1)  # noqa: E731
        if t in ("KSampler", "KSamplerAdvanced", "SamplerCustom", "SamplerCustomAdvanced"):
            return up("latent_image")
        if t == "LatentUpscale":
            src = up("samples")
            width, height = self.number(node, "width"), self.number(node, "height")
            if src is None or width is None or height is None:
                return None
            if width == 0 and height == 0:
                return src
            # nodes.py LatentUpscale.upscale: 0 keeps the aspect, min 64 px, then // 8 in latent units
            if width == 0:
                height = max(64, height)
                width = max(64, round(src.width * height / max(src.height, 1)))
            elif height == 0:
                width = max(64, width)
                height = max(64, round(src.height * width / max(src.width, 1)))
            else:
                width, height = max(64, width), max(64, height)
            return self._resized(src, node, width // 8, height // 8)
        if t == "LatentUpscaleBy":
            src = up("samples")
            scale = self.number(node, "scale_by", integer=False)
            if src is None or scale is None:
                return None
            return self._resized(src, node, round(src.width * scale), round(src.height * scale))
        if t == "LTXVLatentUpsampler":  # the LTX spatial upscaler doubles H and W
            src = up("samples")
            return self._resized(src, node, src.width * 2, src.height * 2) if src else None
        if t == "RepeatLatentBatch":
            src = up("samples")
            amount = self.number(node, "amount", 1) or 1
            return _replace(src, batch=src.batch * amount, source_node=node.id, source_type=t) if src else None
        if t == "LatentBatch":
            a, b = up("samples1"), up("samples2")
            return _replace(a, batch=a.batch + b.batch) if a and b else a or b
        if t == "LatentFromBatch":
            src = up("samples")
            length = self.number(node, "length", 1) or 1
            return _replace(src, batch=min(length, src.batch)) if src else None
        if t == "TrimVideoLatent":
            src = up("samples")
            trim = self.number(node, "trim_amount", 0) or 0
            if src is None or src.frames is None:
                return src
            return _replace(src, frames=max(src.frames - trim, 0))
        if t == "LTXVConcatAVLatent":
            src = up("video_latent")
            if src is not None:
                self.note(f"{self.label(node)}: audio+video latent; the video part's shape is used")
            return src
        if t == "LTXVSeparateAVLatent":
            return up("av_latent") if slot == 0 else None
        if t in VAE_ENCODERS or t in PIXEL_LATENT_CONDITIONING:
            return self._encoded_shape(node, "pixels", "vae")
        if t == "SVD_img2vid_Conditioning":  # nodes_video_model.py: zeros([video_frames, 4, H/8, W/8])
            width, height, frames = self.number(node, "width"), self.number(node, "height"), \
                self.number(node, "video_frames")
            if None in (width, height, frames):
                return None
            return LatentShape(batch=frames, channels=4, height=height // 8, width=width // 8, pixel_height=height,
                               pixel_width=width, source_node=node.id, source_type=t)
        if t.startswith("Wan") and all(k in node.inputs for k in ("width", "height", "length")):
            self.note(f"{self.label(node)}: not in this reader's table; assumed the Wan 2.1 latent "
                      f"(16 ch, /8, frames (length-1)//4+1)")
            return self._creator_shape(node, (16, 8, 4, None))
        if t == "ComfySwitchNode":
            switch = self.value(node, "switch")
            if switch is _UNKNOWN or switch is None:
                return up("on_true") or up("on_false")
            return up("on_true" if switch else "on_false")
        ins = self.linked_inputs_of_type(node, "LATENT")
        if ins:
            if not self.known(t) and not node.core:
                self.note(f"{self.label(node)}: unknown node; latent shape taken from its input '{ins[0][0]}'")
            return self.latent(ins[0][1], depth + 1)
        return None

    def _resized(self, src: LatentShape, node: _Node, width: int, height: int) -> LatentShape:
        s = src.spatial_compression
        self._check_size(node, width * s, height * s, src.pixel_frames, src.batch)
        return _replace(src, width=width, height=height, pixel_width=width * s, pixel_height=height * s,
                        source_node=node.id, source_type=node.type)

    def _encoded_shape(self, node: _Node, pixels: str, vae: str) -> LatentShape | None:
        size = self.image_size(self.link(node, pixels))
        if size is None:
            return None
        geometry, vae_name = self._vae_geometry(self.link(node, vae))
        channels, spatial, temporal = geometry if geometry else (None, 8, None)
        if geometry:
            self.note(f"{self.label(node)}: /{spatial} compression judged from the VAE name '{vae_name}'")
        else:
            self.note(f"{self.label(node)}: assumed a /8 VAE (SD/SDXL/Flux/SD3/Wan 2.1 family)")
        frames = pixel_frames = None
        batch = size.batch
        if temporal is not None and size.batch > 1:
            pixel_frames = size.batch
            frames = (size.batch - 1) // temporal + 1
            batch = 1
        self._check_size(node, size.width, size.height, pixel_frames, batch)
        return LatentShape(batch=batch, channels=channels, height=size.height // spatial, width=size.width // spatial,
                           frames=frames, pixel_height=size.height, pixel_width=size.width, pixel_frames=pixel_frames,
                           spatial_compression=spatial, temporal_compression=temporal if frames else None,
                           source_node=node.id, source_type=node.type)

    def image_size(self, link: _Link | None, depth: int = 0) -> _ImageSize | None:
        """Pixel size of an IMAGE link when the graph fixes it."""
        if link is None:
            return None
        node = self.nodes.get(link.node)
        if node is None or depth > MAX_DEPTH:
            return None
        t = node.type
        up = lambda name="image": self.image_size(self.link(node, name), depth + 1)  # noqa: E731
        if t == "EmptyImage":
            w, h = self.number(node, "width"), self.number(node, "height")
            return _ImageSize(w, h, self.number(node, "batch_size", 1) or 1) if w and h else None
        if t in ("LoadImage", "LoadImageMask", "LoadVideo", "GetVideoComponents", "LoadImageOutput"):
            self.note(f"{self.label(node)}: the loaded image's size is not known before running; "
                      f"shapes that depend on it are left unknown")
            return None
        if t in VAE_DECODERS or t == "VAEDecodeTiled":
            shape = self.latent(self.link(node, "samples"), depth + 1)
            if shape is None:
                return None
            frames = shape.pixel_frames if shape.pixel_frames else None
            return _ImageSize(shape.pixel_width, shape.pixel_height, (frames or 1) * shape.batch)
        if t == "ImageScale":
            w, h, src = self.number(node, "width"), self.number(node, "height"), up()
            if w is None or h is None:
                return None
            if w == 0 or h == 0:
                if src is None:
                    return None
                if w == 0 and h == 0:
                    return src
                w = w or max(1, round(src.width * h / src.height))
                h = h or max(1, round(src.height * w / src.width))
            return _ImageSize(w, h, src.batch if src else 1, src.exact if src else True)
        if t == "ImageScaleBy":
            src, scale = up(), self.number(node, "scale_by", integer=False)
            return _ImageSize(round(src.width * scale), round(src.height * scale), src.batch, src.exact) \
                if src and scale else None
        if t == "ImageScaleToTotalPixels":
            mp = self.number(node, "megapixels", integer=False)
            steps = self.number(node, "resolution_steps", 1) or 1
            if not mp:
                return None
            total = mp * 1024 * 1024
            src = up()
            if src is None:
                side = round(math.sqrt(total) / steps) * steps
                self.note(f"{self.label(node)}: input size unknown; assumed a square of {mp} megapixels")
                return _ImageSize(side, side, 1, exact=False)
            # nodes_post_processing.py ImageScaleToTotalPixels.execute
            scale = math.sqrt(total / (src.width * src.height))
            return _ImageSize(round(src.width * scale / steps) * steps, round(src.height * scale / steps) * steps,
                              src.batch, src.exact)
        if t == "FluxKontextImageScale":
            src = up()
            if src is None:
                self.note(f"{self.label(node)}: input size unknown; assumed 1024x1024 (Kontext's square bucket)")
                return _ImageSize(1024, 1024, 1, exact=False)
            aspect = src.width / src.height
            _, w, h = min((abs(aspect - w / h), w, h) for w, h in KONTEXT_RESOLUTIONS)
            return _ImageSize(w, h, src.batch, src.exact)
        if t == "ImageScaleToMaxDimension":
            largest = self.number(node, "largest_size")
            src = up()
            if not largest:
                return None
            if src is None:
                self.note(f"{self.label(node)}: input size unknown; assumed a {largest}x{largest} square (upper bound)")
                return _ImageSize(largest, largest, 1, exact=False)
            scale = largest / max(src.width, src.height)
            return _ImageSize(round(src.width * scale), round(src.height * scale), src.batch, src.exact)
        if t == "ResizeImageMaskNode":
            return self._resize_image_mask(node, self.image_size(self.link(node, "input"), depth + 1))
        if t == "RepeatImageBatch":
            src, amount = up(), self.number(node, "amount", 1) or 1
            return _ImageSize(src.width, src.height, src.batch * amount, src.exact) if src else None
        if t == "ImageFromBatch":
            src, length = up(), self.number(node, "length", 1) or 1
            return _ImageSize(src.width, src.height, min(length, src.batch), src.exact) if src else None
        ins = self.linked_inputs_of_type(node, "IMAGE")
        if ins and node.output_types and self.out_type(node, link.slot) == "IMAGE" and len(ins) == 1:
            src = self.image_size(ins[0][1], depth + 1)
            if src is not None:
                self.note(f"{self.label(node)}: image size assumed unchanged through this node")
                return _ImageSize(src.width, src.height, src.batch, exact=False)
        return None

    def _resize_image_mask(self, node: _Node, src: _ImageSize | None) -> _ImageSize | None:
        """nodes_post_processing.py ResizeImageMaskNode, per resize_type option."""
        mode = self.value(node, "resize_type")
        num = lambda name, integer=True: self.number(node, f"resize_type.{name}", integer=integer)  # noqa: E731
        if mode == "scale dimensions":
            w, h = num("width"), num("height")
            if w and h:
                return _ImageSize(w, h, src.batch if src else 1)
            if src and (w or h):
                return _ImageSize(w or round(src.width * h / src.height), h or round(src.height * w / src.width),
                                  src.batch, src.exact)
            return None
        if mode == "match size":
            return self.image_size(self.link(node, "resize_type.match"))
        if src is None:
            if mode == "scale total pixels":
                mp = num("megapixels", integer=False)
                if mp:
                    side = round(math.sqrt(mp * 1024 * 1024))
                    self.note(f"{self.label(node)}: input size unknown; assumed a square of {mp} megapixels")
                    return _ImageSize(side, side, 1, exact=False)
            if mode == "scale longer dimension":
                side = num("longer_size")
                if side:
                    self.note(f"{self.label(node)}: input size unknown; assumed a {side}x{side} square (upper bound)")
                    return _ImageSize(side, side, 1, exact=False)
            return None
        if mode == "scale by multiplier":
            m = num("multiplier", integer=False)
            return _ImageSize(round(src.width * m), round(src.height * m), src.batch, src.exact) if m else None
        if mode in ("scale longer dimension", "scale shorter dimension"):
            side = num("longer_size" if "longer" in mode else "shorter_size")
            ref = max(src.width, src.height) if "longer" in mode else min(src.width, src.height)
            if not side:
                return None
            return _ImageSize(round(src.width * side / ref), round(src.height * side / ref), src.batch, src.exact)
        if mode in ("scale width", "scale height"):
            side = num("width" if mode == "scale width" else "height")
            if not side:
                return None
            ref = src.width if mode == "scale width" else src.height
            return _ImageSize(round(src.width * side / ref), round(src.height * side / ref), src.batch, src.exact)
        if mode == "scale total pixels":
            mp = num("megapixels", integer=False)
            if not mp:
                return None
            scale = math.sqrt(int(mp * 1024 * 1024) / (src.width * src.height))
            return _ImageSize(round(src.width * scale), round(src.height * scale), src.batch, src.exact)
        if mode == "scale to multiple":
            m = num("multiple") or 1
            return _ImageSize(max(m, src.width // m * m), max(m, src.height // m * m), src.batch, src.exact)
        return None

    # -- sigmas / guider
    def sigma_steps(self, link: _Link | None, depth: int = 0) -> int | None:
        if link is None or depth > MAX_DEPTH:
            return None
        node = self.nodes.get(link.node)
        if node is None:
            return None
        t = node.type
        if t == "BasicScheduler":
            denoise = self.number(node, "denoise", 1.0, integer=False)
            return 0 if denoise is not None and denoise <= 0 else self.number(node, "steps")
        if t == "SplitSigmas":
            total = self.sigma_steps(self.link(node, "sigmas"), depth + 1)
            step = self.number(node, "step")
            if total is None or step is None:
                return None
            return min(step, total) if link.slot == 0 else max(total - step, 0)
        if t == "SplitSigmasDenoise":  # nodes_custom_sampler.py: low part = round(steps * denoise)
            total = self.sigma_steps(self.link(node, "sigmas"), depth + 1)
            denoise = self.number(node, "denoise", integer=False)
            if total is None or denoise is None:
                return None
            low = round(total * denoise)
            return total - low if link.slot == 0 else low
        if t == "ManualSigmas":
            text = self.text(node, "sigmas")
            if not isinstance(text, str):
                return None
            count = len(re.findall(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?", text))
            return max(count - 1, 0)
        if "steps" in node.inputs:
            return self.number(node, "steps")
        ins = self.linked_inputs_of_type(node, "SIGMAS")
        return self.sigma_steps(ins[0][1], depth + 1) if ins else None

    def guider(self, link: _Link | None, depth: int = 0) -> dict:
        info = {"model": [], "conds": [], "cfg": None, "uses_negative": True, "type": None}
        node = self.nodes.get(link.node) if link else None
        if node is None or depth > MAX_DEPTH:
            return info
        info["type"] = node.type
        t = node.type
        if t == "BasicGuider":
            info.update(model=[self.link(node, "model")], conds=[self.link(node, "conditioning")],
                        uses_negative=False)
            return info
        if t == "CFGGuider":
            info.update(model=[self.link(node, "model")],
                        conds=[self.link(node, "positive"), self.link(node, "negative")],
                        cfg=self.number(node, "cfg", integer=False))
            return info
        if t == "DualCFGGuider":
            info.update(model=[self.link(node, "model")],
                        conds=[self.link(node, n) for n in ("cond1", "cond2", "negative")],
                        cfg=self.number(node, "cfg_conds", integer=False))
            self.note(f"{self.label(node)}: three conditionings (cond1, cond2, negative) per step")
            return info
        inner = self.linked_inputs_of_type(node, "GUIDER")
        if inner:
            info = self.guider(inner[0][1], depth + 1)
        models = [lk for _, lk in self.linked_inputs_of_type(node, "MODEL")]
        conds = [lk for _, lk in self.linked_inputs_of_type(node, "CONDITIONING")]
        if models:
            info["model"] = models
        if conds:
            info["conds"] = conds
            info["uses_negative"] = isinstance(node.inputs.get("negative"), _Link)
        cfg = self.number(node, "cfg", integer=False) if "cfg" in node.inputs else None
        if cfg is not None:
            info["cfg"] = cfg
        if not self.known(t) and not node.core:
            self.note(f"{self.label(node)}: unknown guider; read by its sockets")
        return info

    # -- stages
    def stage_kind(self, node: _Node) -> str | None:
        t = node.type
        if t in SAMPLERS:
            return SAMPLE
        if t in VAE_DECODERS or t in AUDIO_DECODERS:
            return VAE_DECODE
        if t in VAE_ENCODERS:
            return VAE_ENCODE
        if t == "CLIPVisionEncode":
            return CLIP_VISION_ENCODE
        if t in LORA_LOADERS or t in TEXT_ENCODERS_NO_STAGE or t in TE_LOADERS or t in SKIPPED_DECODERS:
            return None
        ins = {self.in_type(node, name) for name, v in node.inputs.items() if isinstance(v, _Link)}
        outs = set(node.output_types or ())
        if "CLIP" in ins and not outs <= {"CLIP", "MODEL"}:
            return TEXT_ENCODE
        if "CLIP_VISION" in ins and "CLIP_VISION_OUTPUT" in outs:
            return CLIP_VISION_ENCODE
        if "MODEL" in ins and "LATENT" in ins and "LATENT" in outs:
            return SAMPLE
        if "VAE" in ins and "LATENT" in ins and "IMAGE" in outs and "LATENT" not in outs:
            return VAE_DECODE
        if t in INTERNAL_ENCODERS or ("VAE" in ins and "IMAGE" in ins):
            return VAE_ENCODE
        return None

    def build_stages(self, node: _Node) -> list[Stage]:
        kind = self.stage_kind(node)
        if kind is None:
            if node.type in SKIPPED_DECODERS:
                self.note(f"{self.label(node)}: 3D decode (latent -> voxels) not estimated")
            return []
        self._stage_notes = []
        try:
            if kind == SAMPLE:
                stage = self._sample_stage(node)
            elif kind == TEXT_ENCODE:
                stage = self._text_stage(node)
            elif kind == VAE_DECODE:
                stage = self._decode_stage(node)
            elif kind == VAE_ENCODE:
                stage = self._encode_stage(node)
            else:
                stage = Stage(kind=CLIP_VISION_ENCODE, node_id=node.id, node_type=node.type,
                              models=tuple(self.refs(self.link(node, "clip_vision"), "CLIP_VISION")))
            if stage is None:
                return []
            stage_notes = tuple(self._stage_notes)
        finally:
            self._stage_notes = None
        return [_replace(stage, title=node.title or node.type, notes=stage.notes + stage_notes)]

    def _text_stage(self, node: _Node) -> Stage:
        clip = self.linked_inputs_of_type(node, "CLIP")
        models = self.refs(clip[0][1], "CLIP") if clip else []
        if not models:
            self.stage_note("no text-encoder loader found upstream")
        spec = self.specs.get(node.type)
        if spec is not None:
            text_names = [w[0] for w in spec.get("w", ()) if w[1] == "STRING"]
        else:
            text_names = [n for n, v in node.inputs.items() if isinstance(v, str) and " " in v]
        texts, unknown = [], []
        for name in text_names:
            value = self.text(node, name)
            if value is _UNKNOWN:
                unknown.append(name)
            elif isinstance(value, str):
                texts.append(value)
        tokens = max((estimate_text_tokens(t) for t in texts), default=None)
        if unknown and tokens is None:
            self.stage_note(f"prompt text comes from a linked node ({', '.join(unknown)}); length unknown")
        elif tokens is None:
            tokens = MIN_TEXT_TOKENS
        if node.type in ("TextGenerate", "TextGenerateLTX2Prompt"):
            max_length = self.number(node, "max_length", 0) or 0
            tokens = (tokens or MIN_TEXT_TOKENS) + max_length
            self.stage_note(f"generates up to {max_length} tokens with the text encoder (autoregressive)")
        vae = self.linked_inputs_of_type(node, "VAE")
        if vae and self.linked_inputs_of_type(node, "IMAGE"):
            models = models + [r for r in self.refs(vae[0][1], "VAE") if r not in models]
            self.stage_note("also VAE-encodes its reference image(s)")
        return Stage(kind=TEXT_ENCODE, node_id=node.id, node_type=node.type, models=tuple(models),
                     text_tokens=tokens)

    def _sample_stage(self, node: _Node) -> Stage:
        t = node.type
        cfg = steps = None
        uses_negative = True
        notes = []
        if t == "SamplerCustomAdvanced":
            g = self.guider(self.link(node, "guider"))
            model_links, cond_links = g["model"], g["conds"]
            cfg, uses_negative = g["cfg"], g["uses_negative"]
            if g["type"] is None:
                self.stage_note("no guider connected")
            steps = self.sigma_steps(self.link(node, "sigmas"))
        else:
            model_links = [self.link(node, "model")] if "model" in node.inputs else \
                [lk for _, lk in self.linked_inputs_of_type(node, "MODEL")]
            cond_links = [lk for _, lk in self.linked_inputs_of_type(node, "CONDITIONING")]
            if "cfg" in node.inputs:
                cfg = self.number(node, "cfg", integer=False)
            uses_negative = isinstance(node.inputs.get("negative"), _Link)
            if t == "SamplerCustom":
                steps = self.sigma_steps(self.link(node, "sigmas"))
            else:
                steps = self.number(node, "steps") if "steps" in node.inputs else None
            if t == "KSamplerAdvanced" and steps is not None:
                start = self.number(node, "start_at_step", 0) or 0
                self._advanced_start[node.id] = start
                end = self.number(node, "end_at_step", steps)
                end = steps if end is None else end
                run = max(0, min(end, steps) - start)
                notes.append(f"steps {start}..{min(end, steps)} of {steps}")
                steps = run
            elif t == "KSampler":
                denoise = self.number(node, "denoise", 1.0, integer=False)
                if denoise is not None and denoise < 1:
                    notes.append(f"denoise {denoise}")
            elif t not in SAMPLERS and not self.known(t) and not node.core:
                self.stage_note("unknown node read as a sampler by its sockets (MODEL + LATENT in, LATENT out)")
        models: list[ModelRef] = []
        for lk in model_links:
            for ref in self.refs(lk, "MODEL"):
                if ref not in models:
                    models.append(ref)
        if not models:
            self.stage_note("no diffusion-model loader found upstream")
        for ref in self.controlnets(cond_links):
            if ref not in models:
                models.append(ref)
        expert = None
        for ref in models:
            if ref.role in ("diffusion", "checkpoint"):
                key = re.sub(r"[\s\-]+", "_", ref.name.lower())
                if "high_noise" in key or "highnoise" in key:
                    expert = "high_noise"
                elif "low_noise" in key or "lownoise" in key:
                    expert = "low_noise"
                break
        latent_link = self.link(node, "latent_image")
        if latent_link is None:
            ins = self.linked_inputs_of_type(node, "LATENT")
            latent_link = ins[0][1] if ins else None
        shape = self.latent(latent_link)
        if shape is None:
            self.stage_note("latent shape unknown")
        return Stage(kind=SAMPLE, node_id=node.id, node_type=t, models=tuple(models), latent=shape, cfg=cfg,
                     uses_negative=uses_negative, steps=steps, expert=expert, notes=tuple(notes))

    def _decode_stage(self, node: _Node) -> Stage:
        vae = self.linked_inputs_of_type(node, "VAE")
        models = self.refs(vae[0][1], "VAE") if vae else []
        if not models:
            self.stage_note("no VAE loader found upstream")
        samples = self.link(node, "samples")
        if samples is None:
            ins = self.linked_inputs_of_type(node, "LATENT")
            samples = ins[0][1] if ins else None
        if node.type in AUDIO_DECODERS:
            self.stage_note("audio decode; no image/video shape")
            shape = None
        else:
            shape = self.latent(samples)
            if shape is None:
                self.stage_note("latent shape unknown")
        tiled = None
        if node.type == "VAEDecodeTiled":
            tiled = {}
            for name, default in (("tile_size", 512), ("overlap", 64), ("temporal_size", 64), ("temporal_overlap", 8)):
                value = self.number(node, name, default)  # defaults: nodes.py VAEDecodeTiled
                tiled[name] = default if value is None else value
        elif node.type not in VAE_DECODERS and node.type not in AUDIO_DECODERS and not self.known(node.type) \
                and not node.core:
            self.stage_note("unknown node read as a VAE decode by its sockets")
        return Stage(kind=VAE_DECODE, node_id=node.id, node_type=node.type, models=tuple(models), latent=shape,
                     tiled=tiled, auto_tiled=node.type == "VAEDecodeAutoTiled")

    def _encode_stage(self, node: _Node) -> Stage | None:
        t = node.type
        vae = self.linked_inputs_of_type(node, "VAE")
        models = self.refs(vae[0][1], "VAE") if vae else []
        tiled = None
        if t in VAE_ENCODERS:
            shape = self._encoded_shape(node, "pixels", "vae")
            if shape is None:
                self.stage_note("latent shape unknown (the image size is not fixed by the graph)")
            if t == "VAEEncodeTiled":
                tiled = {name: self.number(node, name, default) for name, default in
                         (("tile_size", 512), ("overlap", 64), ("temporal_size", 64), ("temporal_overlap", 8))}
            return Stage(kind=VAE_ENCODE, node_id=node.id, node_type=t, models=tuple(models), latent=shape,
                         tiled=tiled, auto_tiled=t == "VAEEncodeAutoTiled")
        image_inputs = INTERNAL_ENCODERS.get(t)
        if image_inputs is None:
            image_inputs = tuple(n for n, _ in self.linked_inputs_of_type(node, "IMAGE"))
        connected = [n for n in image_inputs if isinstance(node.inputs.get(n), _Link)]
        if image_inputs and not connected:
            return None  # nothing to encode
        if not vae:
            return None
        shape = None
        if node.output_types and "LATENT" in node.output_types:
            shape = self.latent(_Link(node.id, node.output_types.index("LATENT")))
        elif t in LATENT_CREATORS:
            shape = self._creator_shape(node)
        self.stage_note(f"VAE-encodes {', '.join(connected) or 'its conditioning frames'} inside this node"
                  + ("" if shape is None else "; shape of the node's latent"))
        return Stage(kind=VAE_ENCODE, node_id=node.id, node_type=t, models=tuple(models), latent=shape)

    # -- whole workflow
    def output_nodes(self) -> set[str]:
        out = set()
        for node in self.nodes.values():
            spec = self.specs.get(node.type)
            if (spec and spec.get("out_node")) or node.type in OUTPUT_NODE_TYPES or (
                    spec is None and re.match(r"(Save|Preview)[A-Z]", node.type)):
                out.add(node.id)
        return out

    def ancestors(self, roots: set[str]) -> set[str]:
        seen, stack = set(), list(roots)
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id not in self.nodes:
                continue
            seen.add(node_id)
            stack.extend(v.node for v in self.nodes[node_id].inputs.values() if isinstance(v, _Link))
        return seen

    def topo_order(self) -> list[str]:
        """Dependencies first; among ready nodes text encodes before samplers before decodes."""
        rank = {TEXT_ENCODE: 1, CLIP_VISION_ENCODE: 1, VAE_ENCODE: 2, SAMPLE: 3, VAE_DECODE: 4}
        deps = {nid: {v.node for v in n.inputs.values() if isinstance(v, _Link) and v.node in self.nodes}
                for nid, n in self.nodes.items()}
        users: dict[str, set] = {nid: set() for nid in self.nodes}
        for nid, ds in deps.items():
            for d in ds:
                users[d].add(nid)
        keys = {nid: (rank.get(self.stage_kind(n), 0), _natural_key(nid), nid) for nid, n in self.nodes.items()}
        remaining = {nid: len(ds) for nid, ds in deps.items()}
        ready = [keys[nid] for nid, c in remaining.items() if c == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            nid = heapq.heappop(ready)[-1]
            order.append(nid)
            for user in users[nid]:
                remaining[user] -= 1
                if remaining[user] == 0:
                    heapq.heappush(ready, keys[user])
        if len(order) < len(self.nodes):
            cyclic = sorted((nid for nid in self.nodes if nid not in set(order)), key=_natural_key)
            self.note(f"cycle among nodes {', '.join(cyclic[:10])}: ComfyUI would refuse this prompt; "
                      f"read in id order")
            order.extend(cyclic)
        return order

    def analyze(self) -> Workload:
        if not self.nodes:
            self.note("the workflow has no nodes that run")
        outputs = self.output_nodes()
        needed = self.ancestors(outputs)
        if not outputs and self.nodes:
            self.note("no output node (Save/Preview...): ComfyUI would refuse to run this prompt; "
                      "all stages are listed")
        stages: list[Stage] = []
        for node_id in self.topo_order():
            node = self.nodes[node_id]
            self.where.append(self.label(node))
            for stage in self.build_stages(node):
                if outputs and node_id not in needed:
                    stage = _replace(stage, notes=stage.notes + (
                        "does not lead to an output node: ComfyUI will not run it",))
                stages.append(stage)
        stages = self._infer_experts(stages)
        unknown, helpers, api_nodes = [], set(), set()
        for node in self.nodes.values():
            t = node.type
            if t in self.api:
                api_nodes.add(t)
                continue
            if self.known(t) or t in HANDLED_TYPES:
                continue
            types = {str(v) for v in node.input_types.values()} | {str(o) for o in node.output_types or ()}
            touches = any(part in RELEVANT_TYPES for ty in types for part in ty.split(","))
            if node.output_types is None or touches:
                unknown.append((node.id, t))
            else:
                helpers.add(t)
        if api_nodes:
            self.note(f"API nodes run remotely (no local VRAM): {', '.join(sorted(api_nodes))}")
        if helpers:
            self.note(f"nodes without model/latent sockets, not needed for the estimate: {', '.join(sorted(helpers))}")
        models: list[ModelRef] = []
        for stage in stages:
            for ref in stage.models:
                if ref not in models:
                    models.append(ref)
        for node in self.nodes.values():  # loaders whose output no stage uses still name files
            if not self._is_loader(node.type):
                continue
            for slot, out_type in enumerate(node.output_types or ()):
                for ref in self.refs(_Link(node.id, slot), out_type):
                    if ref not in models:
                        models.append(ref)
        return Workload(stages=tuple(stages), source_format=self.g.fmt, unknown_nodes=tuple(unknown),
                        notes=tuple(self.notes), models=tuple(models))

    def _infer_experts(self, stages: list[Stage]) -> list[Stage]:
        """Two KSamplerAdvanced passes on two different diffusion-model files (UNETLoader), with no
        high/low-noise hint in the names: the Wan 2.2 A14B pattern. The pass starting at step 0
        runs the high-noise expert (Wan 2.2 model card: high-noise expert for the early steps)."""
        passes = [s for s in stages if s.node_type == "KSamplerAdvanced" and s.node_id in self._advanced_start]
        bases = [next((m.name for m in s.models if m.role == "diffusion"), None) for s in passes]
        if len(passes) != 2 or None in bases or bases[0] == bases[1] or any(s.expert for s in passes):
            return stages
        first, second = sorted(passes, key=lambda s: self._advanced_start[s.node_id])
        if self._advanced_start[first.node_id] == self._advanced_start[second.node_id]:
            return stages
        self.note(f"two KSamplerAdvanced passes on two diffusion models ({', '.join(bases)}): read as the "
                  f"Wan 2.2 A14B high-noise / low-noise experts by their step ranges")
        experts = {first.node_id: "high_noise", second.node_id: "low_noise"}
        return [_replace(s, expert=experts[s.node_id]) if s.node_id in experts else s for s in stages]

    @staticmethod
    def _is_loader(node_type: str) -> bool:
        return (node_type in DIFFUSION_LOADERS or node_type in CHECKPOINT_LOADERS or node_type in TE_LOADERS
                or node_type in SIMPLE_LOADERS or node_type == "LTXAVTextEncoderLoader")


KONTEXT_RESOLUTIONS = (  # comfy_extras/nodes_flux.py PREFERED_KONTEXT_RESOLUTIONS
    (672, 1568), (688, 1504), (720, 1456), (752, 1392), (800, 1328), (832, 1248), (880, 1184), (944, 1104),
    (1024, 1024), (1104, 944), (1184, 880), (1248, 832), (1328, 800), (1392, 752), (1456, 720), (1504, 688),
    (1568, 672),
)
HANDLED_TYPES = (set(DIFFUSION_LOADERS) | set(CHECKPOINT_LOADERS) | set(TE_LOADERS) | set(SIMPLE_LOADERS)
                 | LORA_LOADERS | SAMPLERS | VAE_DECODERS | AUDIO_DECODERS | SKIPPED_DECODERS | VAE_ENCODERS
                 | set(LATENT_CREATORS) | set(NON_IMAGE_LATENTS) | set(INTERNAL_ENCODERS) | VALUE_PRIMITIVES
                 | PIXEL_LATENT_CONDITIONING
                 | VIRTUAL_NODES | OUTPUT_NODE_TYPES | WAN_PLANNERS | {"LTXAVTextEncoderLoader", "ComfySwitchNode",
                                                       "ComfyMathExpression", "GetImageSize", "CustomCombo"})


def _replace(obj, **changes):
    from dataclasses import replace
    return replace(obj, **changes)


# ------------------------------------------------------------------------------------ public
def _detect(data: Any) -> tuple[str, Mapping]:
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorkflowError(f"workflow is not UTF-8 text: {exc}") from None
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise WorkflowError(f"workflow is not JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise WorkflowError(f"workflow must be a JSON object, got {type(data).__name__}")
    if isinstance(data.get("nodes"), list):
        return "ui", data
    if not data:
        return "api", data  # an empty prompt: an empty Workload with a note
    # What runs is the API form: prefer it when both are given (graphToPrompt's {output, workflow}).
    for key in ("prompt", "output"):  # a /prompt POST body, or app.graphToPrompt()'s {output, workflow}
        inner = data.get(key)
        if isinstance(inner, Mapping) and inner and all(isinstance(v, Mapping) and "class_type" in v
                                                        for v in inner.values()):
            return "api", inner
    if isinstance(data.get("workflow"), Mapping) and isinstance(data["workflow"].get("nodes"), list):
        return "ui", data["workflow"]  # EXTRA_PNGINFO / a saved {"workflow": ...}
    if any(isinstance(v, Mapping) and "class_type" in v for v in data.values()) or (
            data and all(re.fullmatch(r"[\w.-]+(:[\w.-]+)*", str(k)) and str(k)[:1].isdigit() for k in data)):
        return "api", data  # an API prompt, possibly with broken entries: _read_api names them
    bad = next((k for k, v in data.items() if not (isinstance(v, Mapping) and "class_type" in v)), None)
    raise WorkflowError(f"not a ComfyUI workflow: no 'nodes' list (UI format) and entry {bad!r} has no "
                        f"class_type (API format)")


def read_workflow(data: Mapping | str | bytes, *, specs: Mapping | None = None) -> Workload:
    """Read an API prompt or a UI workflow (dict, or JSON text) into a Workload.

    ``specs``: node specs as ``node_specs.load_specs()`` returns them; a running ComfyUI can pass
    ``{"nodes": node_specs.specs_from_object_info(object_info), ...}`` to know custom nodes too.
    Raises WorkflowError only when ``data`` is not a workflow at all.
    """
    specs = specs if specs is not None else load_specs()
    where: list[str] = []  # the node being read, for the message below
    try:
        fmt, payload = _detect(data)
        if fmt == "ui":
            reader = _UiReader(payload, specs)
            reader.where = where
            graph = reader.read()
        else:
            graph = _read_api(payload, specs)
        analyzer = _Analyzer(graph, specs)
        analyzer.where = where
        return analyzer.analyze()
    except WorkflowError:
        raise
    except RecursionError:
        raise WorkflowError(f"workflow nests too deeply to read{' at ' + where[-1] if where else ''}") from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ZeroDivisionError, OverflowError) as exc:
        # A shape this reader did not foresee: name the node instead of crashing the caller.
        raise WorkflowError(f"{where[-1] + ': ' if where else ''}could not be read "
                            f"({type(exc).__name__}: {exc})") from None
