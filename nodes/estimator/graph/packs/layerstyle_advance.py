"""chflame163/ComfyUI_LayerStyle_Advance (py/segment_anything_ultra.py, _v2.py, segment_anything_func.py and
imagefunc.py at 7b678b4; the same nodes shipped in ComfyUI_LayerStyle before the split): SegmentAnythingUltra finds
boxes for a text prompt with GroundingDINO and segments them with SAM, inside the node.

- The node loads both itself from its ``sam_model`` / ``grounding_dino_model`` choices (segment_anything_func.py
  load_sam_model / load_groundingdino_model: built in float32, ``.to(get_torch_device())`` whole; the same code and
  lists as storyicon's comfyui_segment_anything, priced by families/sam1.py and families/groundingdino.py). It keeps
  them in the node instance and drops them after its run unless ``cache_model`` is on (then they stay on the card).
- For each image: GroundingDINO's forward, SAM's image encoder at 1024, the per-box masks; then, with
  ``process_detail`` and a ViTMatte ``detail_method`` (V2's default "VITMatte"), generate_VITMatte loads ViTMatte
  (families/vitmatte.py) on the ``device`` widget's device, runs it on the image capped at ``max_megapixels`` (an
  image whose size is only assumed, a loaded one, is priced at the cap) and frees it. The passes run one after the
  other above all the weights: the stage's working memory is the largest of them. Its other choices (SAM-HQ,
  MobileSAM, GroundingDINO Swin-B) are named, not priced.
  V1's detail is PyMatting / guided filter on the CPU.
- The per-box masks (boxes x image pixels) depend on how many boxes pass the threshold, known only at run time; said.
"""
from __future__ import annotations

import math

from ...families import groundingdino as GD, sam1 as SAM, vitmatte as VM
from ...machine.resolve import PACK_FP32
from ...machine.runtime import LAYERSTYLE_SAM
from ...units import fmt_mib
from ...workload import SAMPLE, ModelRef, Stage
from . import Pack, traced_working
from .segment_anything import DINO_FILES, SAM_FILES

V1, V2 = "LayerMask: SegmentAnythingUltra", "LayerMask: SegmentAnythingUltra V2"
VITMATTE_METHODS = {"VITMatte": VM.SMALL, "VITMatte(local)": VM.SMALL, "vitmatte-base-composition-1k": VM.BASE}


def _ref(a, node, widget, files, folder):
    value = str(a.value(node, widget) or "")
    name = files.get(value)
    if name is None:
        a.unpriced(f"{a.label(node)}: {widget} '{value or '?'}' is a model this estimate does not price (of its "
                   f"choices, {', '.join(k.split(' (')[0] for k in files)} are)")
        return None
    return ModelRef(name=name, role="diffusion", folder=folder, loader_node=node.id, loader_type=node.type,
                    weight_dtype=PACK_FP32, hint="")


def _vitmatte(a, node):
    """(family, padded width, padded height, said) of the ViTMatte pass on the GPU, or None when the node runs none."""
    if node.type != V2 or a.value(node, "process_detail", True) in (False, "false", 0):
        return None
    family = VITMATTE_METHODS.get(str(a.value(node, "detail_method") or "VITMatte"))
    if family is None or str(a.value(node, "device") or "cuda") == "cpu":
        return None
    cap = a.number(node, "max_megapixels", 2.0, integer=False) or 2.0
    size = a.image_size(a.link(node, "image"))
    if size is not None and size.exact and size.width and size.height:
        w, h = VM.model_input(size.width, size.height, cap)
        return family, w, h, f"{size.width}×{size.height} image → {w}×{h}"
    # a loaded image's size is only assumed: its pass grows with the square of the pixels up to the cap, so the
    # cap (what a photo of any size is resized to) is priced, not the assumption
    side = int(math.sqrt(cap * 1_048_576))
    w, h = VM.model_input(side, side, cap)
    a.stage_note(f"{a.label(node)}: the image's size is not known before it loads: ViTMatte priced at the node's "
                 f"max_megapixels cap ({cap:g} MP, a square {w}×{h}), what a larger image is resized to; a smaller "
                 "image needs less, a thin one pads a little more")
    return family, w, h, f"max_megapixels {cap:g} → {w}×{h}"


def _segment(a, node):
    sam = _ref(a, node, "sam_model", SAM_FILES, "sams")
    dino = _ref(a, node, "grounding_dino_model", DINO_FILES, "grounding-dino")
    matte = _vitmatte(a, node)
    models = [m for m in (sam, dino) if m is not None]
    if matte is not None:
        models.append(ModelRef(name=VM.HF_REPO[matte[0]], role="diffusion", folder="vitmatte", loader_node=node.id,
                               loader_type=node.type, weight_dtype=PACK_FP32, hint=""))
    kept = a.value(node, "cache_model", False) in (True, "true", 1)
    stage = Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, models=tuple(models), cfg=None,
                  uses_negative=False, steps=1, manager=LAYERSTYLE_SAM, offload="kept" if kept else "")
    if sam is None or dino is None:
        return stage
    variant, why = SAM.family_of(sam.name)
    if variant is None:
        a.unpriced(why)
        return stage
    a.stage_note("the masks of each box at the image's size come on top: how many boxes pass the threshold is known "
                 "only at run time")
    passes = [("GroundingDINO's forward", GD.FAMILY, GD.TRACE_BYTES, GD.TRACE_SOURCE),
              (f"SAM {variant[-5:].upper()}'s image encoder", variant, SAM.TRACE[variant],
               SAM.TRACE_SOURCE.format(label=variant))]
    if matte is not None:
        family, w, h, said = matte
        passes.append((f"ViTMatte at {said}", family, VM.working_bytes(family, w, h),
                       VM.TRACE_SOURCE.format(repo=VM.HF_REPO[family])))
    label, family, peak, source = max(passes, key=lambda p: p[2])
    others = "; ".join(f"{n} {fmt_mib(b)}" for n, _, b, _ in passes if n != label)
    return traced_working(a, stage, f"the largest pass: {label}", family, peak, f"{source} (the others: {others})",
                          "GroundingDINO, SAM" + (", ViTMatte" if matte else "") + " one after the other, one image at "
                          "a time (LayerStyle's SegmentAnythingUltra)")


_WIDGETS = {
    V1: ["sam_model", "grounding_dino_model", "threshold", "detail_range", "black_point", "white_point",
         "process_detail", "prompt", "cache_model"],
    V2: ["sam_model", "grounding_dino_model", "threshold", "detail_method", "detail_erode", "detail_dilate",
         "black_point", "white_point", "process_detail", "prompt", "device", "max_megapixels", "cache_model"],
}

PACK = Pack(
    name="ComfyUI_LayerStyle_Advance",
    stage_kinds={V1: SAMPLE, V2: SAMPLE},
    stages={V1: _segment, V2: _segment},
    widgets=_WIDGETS,
    output_types={V1: ["IMAGE", "MASK"], V2: ["IMAGE", "MASK"]},
    input_types={V1: {"image": "IMAGE"}, V2: {"image": "IMAGE"}},
)
