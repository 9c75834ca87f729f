"""Fannovel16/comfyui_controlnet_aux (at e8b689a): the ControlNet preprocessors. Which of them run a neural network
on the GPU is read from the pack's own sources (data/controlnet_aux.json, bench/gen_controlnet_aux.py): a node that
moves its detector to ``model_management.get_torch_device()`` loads the model by itself (not a model file of
ComfyUI's folders, not a socket), runs every image through it and deletes it (utils.py common_annotator_call). Such a
node is a stage: an IMAGE -> IMAGE node is not free because its sockets carry no model. The others (Canny, Color,
Tile, Scribble XDoG, ...) are OpenCV / NumPy operations on the CPU: nothing on the card.

- Depth Anything V2 / V1 (DepthAnythingV2Preprocessor, DepthAnythingPreprocessor): priced as Depth Anything V2 of the
  checkpoint's encoder (families/depth_anything2.py: V1 is the same DINOv2 + DPT layout, 335.3M parameters for ViT-L),
  fp32 weights (torch.load into fp32 modules) and fp32 activations, one image at a time; the image is first resized
  so its short side is ``resolution`` (resize_image_with_pad), then to a short side of 518 px in multiples of 14
  (infer_image input_size=518, lower bound, the aspect kept). Working memory: Depth Anything's first-principles
  formula (graph/packs/depthanythingv2.py), uncalibrated.
- MiDaS (MiDaS-DepthMapPreprocessor, MiDaS-NormalMapPreprocessor): transformers' DPT-Hybrid from Intel/dpt-hybrid-midas
  (families/midas.py), fp32 weights; every image is resized to 384 x 384 for the network, so its peak is a traced
  constant; the depth map resized back to the detect map (short side ``resolution``, padded to multiples of 64) and
  its copy add 8 bytes a pixel of that map when larger.
- Zoe (Zoe-DepthMapPreprocessor, Zoe_DepthAnythingPreprocessor): transformers' ZoeDepth NK from
  Intel/zoedepth-nyu-kitti (families/zoedepth.py), fp32; its processor resizes the detect map toward 384 x 512 keeping
  the aspect, and the traced peak grows with that input's pixels. An image whose size is known only at run time is
  not priced (its aspect decides the input).
- Every other GPU preprocessor (LeReS, DWPose / AnimalPose, OpenPose, OneFormer, UniFormer, HED, PiDiNet,
  LineArt, Metric3D, DSINE, SAM, Unimatch, ...): its model is named and not priced ("can't tell"), never read as free.
- AIO_Preprocessor runs the preprocessor its widget names (AUX_NODE_MAPPINGS): read as that node.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ...families import depth_anything2 as DA2, depth_anything3 as DA3, midas as MIDAS, zoedepth as ZOE
from ...families.registry import FAMILIES
from ...machine.resolve import PACK_FP32
from ...workload import SAMPLE, ModelRef, Stage
from . import Pack, traced_working, with_working

DATA = Path(__file__).resolve().parents[2] / "data" / "controlnet_aux.json"
AIO = "AIO_Preprocessor"
FOLDER = "ckpts"  # the pack downloads its annotators into custom_nodes/comfyui_controlnet_aux/ckpts
DA_INPUT = 518  # depth_anything_v2/__init__.py infer_image(input_size=518); the V1 pipeline's processor likewise
# node -> (the checkpoint widget's default, the family name the checkpoint is priced as)
DEPTH_ANYTHING = {"DepthAnythingV2Preprocessor": ("depth_anything_v2_vitl.pth", "V2"),
                  "DepthAnythingPreprocessor": ("depth_anything_vitl14.pth", "V1")}


@lru_cache(maxsize=1)
def table() -> dict:
    try:
        return dict(json.loads(DATA.read_text(encoding="utf-8")).get("nodes") or {})
    except (OSError, ValueError):
        return {}


def _gpu(node_type: str) -> bool:
    return bool((table().get(node_type) or {}).get("gpu"))


def _what(node_type: str) -> str:
    det = ", ".join((table().get(node_type) or {}).get("detectors") or ()) or "its detector"
    return f"{det}, a network comfyui_controlnet_aux loads and moves to the GPU itself"


def _model_input(short: int, long: int) -> tuple[int, int]:
    """DPT's Resize(518, keep_aspect_ratio, ensure_multiple_of=14, lower_bound): the short side to 518, the long side
    scaled alike, each rounded to a multiple of 14 (never below 518)."""
    scale = DA_INPUT / max(1, short)
    return DA_INPUT, max(DA_INPUT, int(round(long * scale / 14)) * 14)


def _pad64(x: int) -> int:
    return -(-x // 64) * 64


def _own_stage(a, node, name: str, hint: str) -> Stage:
    """The stage of a network the node loads (``name``: its checkpoint or Hugging Face repository) and moves to the
    GPU itself, in fp32 modules; ``hint`` names its family for the name rules."""
    ref = ModelRef(name=name, role="diffusion", folder=FOLDER, loader_node=node.id, loader_type=node.type,
                   weight_dtype=PACK_FP32, hint=hint)
    return Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, models=(ref,), cfg=None, uses_negative=False,
                 steps=1)


def _said(size) -> str:
    return f"{size.width}×{size.height}" + ("" if size.exact else " (assumed)")


def _depth_anything(a, node, node_type: str) -> Stage:
    default, version = DEPTH_ANYTHING[node_type]
    ckpt = str(a.value(node, "ckpt_name") or default)
    encoder = next((e for e in ("vitg", "vitl", "vitb", "vits") if e in ckpt.lower()), "vitl")
    # read by the Depth Anything V2 name rules (families/depth_anything2.py): V1 is the same DINOv2 + DPT layout
    stage = _own_stage(a, node, ckpt, f"depth_anything_v2_{encoder}")
    size = a.image_size(a.link(node, "image"))
    if size is None or not size.width or not size.height:
        a.unpriced(f"the image's size is not known before it loads: Depth Anything {version} resizes its short side "
                   f"to {DA_INPUT} px and the long side follows the image's aspect")
        return stage
    h, w = _model_input(min(size.width, size.height), max(size.width, size.height))
    arch = FAMILIES[f"da2-{encoder}"].arch
    width, ffn, features = int(arch["hidden_size"]), int(arch["ffn_dim"]), DA2.ENCODERS[encoder][3]
    nbytes = 4  # fp32 modules, no autocast
    tokens, vit, head = DA2.working_bytes(encoder, h, w, nbytes)
    said = _said(size)
    working = (
        ("ViT activations (formula)", vit,
         f"first-principles formula, uncalibrated: {said} -> {w}×{h} (short side {DA_INPUT}, multiples of 14) -> "
         f"{tokens} tokens; ViT width {width}, MLP {ffn}, fp32; one image per forward (common_annotator_call)"),
        ("DPT head maps (formula)", head,
         f"first-principles formula, uncalibrated: {features // 2} + 2 x {DA3.HEAD_CONV2} channels at {w}×{h}, fp32"),
        ("the image on the GPU", 3 * h * w * nbytes, "the resized image as an fp32 tensor"),
    )
    if version == "V1":
        a.stage_note(f"{ckpt}: priced as Depth Anything V2 {encoder[3:].upper()} (the same DINOv2 + DPT layout and "
                     "parameter count)")
    return with_working(a, stage, working, f"Depth Anything {version} (comfyui_controlnet_aux)",
                        "first-principles formula, uncalibrated; the terms are summed although the ViT's and the "
                        "head's peaks come one after the other")


def _detect_map(a, node):
    """(image size, (map width, map height)) of resize_image_with_pad: the image scaled to ``resolution`` on its
    short side (512 when unset or under 64, utils.py:69), each side padded to a multiple of 64; (None, None) when
    the image's size is not known before running."""
    resolution = a.value(node, "resolution")
    res = min(int(resolution) if isinstance(resolution, (int, float)) and resolution >= 64 else 512, 16384)
    size = a.image_size(a.link(node, "image"))
    if size is None or not size.width or not size.height:
        return None, (_pad64(res), _pad64(res))
    short, long = min(size.width, size.height), max(size.width, size.height)
    map_short, map_long = _pad64(res), _pad64(round(long * res / short))
    return size, ((map_long, map_short) if size.width >= size.height else (map_short, map_long))


def _priced(a, stage, label: str, family: str, nbytes: int, why: str) -> Stage:
    """The stage with its traced working memory times the allocator calibration, and a note of it."""
    return traced_working(a, stage, label, family, nbytes, why, f"{label} (comfyui_controlnet_aux): one image at a time")


MIDAS_NODES = ("MiDaS-DepthMapPreprocessor", "MiDaS-NormalMapPreprocessor")


def _midas(a, node) -> Stage:
    """MidasDetector (midas/transformers.py): DPT-Hybrid on a 384 x 384 resize of each image (a traced constant), the
    depth map resized back to the detect map."""
    stage = _own_stage(a, node, MIDAS.HF_REPO, "dpt_hybrid-midas")
    size, (map_w, map_h) = _detect_map(a, node)
    if size is not None:
        where = f"the detect map of {_said(size)}: {max(map_w, map_h)}×{min(map_w, map_h)} px"
    else:
        # the map's long side follows the image's aspect; it outgrows the network only past this many pixels
        limit = MIDAS.TRACE_BYTES // MIDAS.DEPTH_MAP_BYTES_PER_PIXEL // max(1, map_w)
        a.stage_note(f"{node.type}: the image's size is not known here: a depth map up to {map_w}×{limit} px (an "
                     f"aspect ratio of {limit / map_w:.0f}:1) stays below the network's own peak, assumed")
        where = f"a square detect map of {map_w}×{map_h} px"
    return _priced(a, stage, "MiDaS DPT-Hybrid", MIDAS.FAMILY, MIDAS.working_bytes(map_w, map_h),
                   f"{MIDAS.TRACE_SOURCE}, so the network does not depend on the image's size; the depth map resized "
                   f"to {where} and its copy take {MIDAS.DEPTH_MAP_BYTES_PER_PIXEL} bytes a pixel")


ZOE_NODES = ("Zoe-DepthMapPreprocessor", "Zoe_DepthAnythingPreprocessor")


def _zoe(a, node) -> Stage:
    """ZoeDetector (zoe/transformers.py): ZoeDepth NK on the detect map resized toward 384 x 512 (its aspect kept)."""
    stage = _own_stage(a, node, ZOE.HF_REPO, "zoedepth")
    size, (map_w, map_h) = _detect_map(a, node)
    if size is None:
        a.unpriced("the image's size is not known before it loads: ZoeDepth's input keeps the image's aspect (384 "
                   "high for a wide image, 512 wide for a tall one), so its size decides the memory")
        return stage
    in_w, in_h = ZOE.model_input(map_w, map_h)
    return _priced(a, stage, "ZoeDepth NK", ZOE.FAMILY, ZOE.working_bytes(map_w, map_h),
                   f"{ZOE.TRACE_SOURCE}: {ZOE.BYTES_PER_INPUT_PIXEL:,} bytes a model-input pixel at most; "
                   f"{_said(size)} -> a {map_w}×{map_h} detect map -> a {in_w}×{in_h} input")


def _run(a, node):
    node_type = node.type
    if node_type == AIO:
        node_type = str(a.value(node, "preprocessor") or "none")
        if node_type == "none" or not _gpu(node_type):
            return None  # a CPU preprocessor, or none: nothing on the card
        a.stage_note(f"AIO_Preprocessor runs {node_type}")
    if node_type in DEPTH_ANYTHING:
        return _depth_anything(a, node, node_type)
    if node_type in MIDAS_NODES:
        return _midas(a, node)
    if node_type in ZOE_NODES:
        return _zoe(a, node)
    a.unpriced(f"{node.type} runs {_what(node_type)}, which no rule of this estimator prices")
    return Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, cfg=None, uses_negative=False, steps=1)


def _pack() -> Pack:
    gpu = {t for t in table() if _gpu(t)} | {AIO}
    cpu = set(table()) - gpu
    widgets = {"DepthAnythingV2Preprocessor": ["ckpt_name", "resolution"],
               "DepthAnythingPreprocessor": ["ckpt_name", "resolution"], AIO: ["preprocessor", "resolution"],
               **{t: ["a", "bg_threshold", "resolution"] for t in MIDAS_NODES},
               "Zoe-DepthMapPreprocessor": ["resolution"],
               "Zoe_DepthAnythingPreprocessor": ["environment", "resolution"]}
    return Pack(
        name="comfyui_controlnet_aux",
        stage_kinds={t: SAMPLE for t in gpu},
        stages={t: _run for t in gpu},
        handled=cpu | {"ControlNetPreprocessorSelector", "PixelPerfectResolution", "ImageGenResolutionFromImage",
                       "ImageGenResolutionFromLatent"},
        widgets=widgets,
        output_types={t: ["IMAGE"] for t in gpu},
        input_types={t: {"image": "IMAGE"} for t in gpu},
    )


PACK = _pack()
