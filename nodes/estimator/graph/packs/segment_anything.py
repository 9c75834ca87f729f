"""storyicon/comfyui_segment_anything (node.py at ab63955): GroundingDINO finds boxes for a text prompt and SAM
segments them.

- SAMModelLoader (segment anything) and GroundingDinoModelLoader (segment anything) build their model and move it to
  the GPU in float32 at load (sam.to(device), dino.to(device)); nothing moves them off, and the loaded models are cached
  node outputs ComfyUI cannot unload: they stay on the card for every later stage (manager SEGMENT_ANYTHING). Their
  widgets name a model (sam_vit_h (2.56GB), GroundingDINO_SwinT_OGC (694MB)); the files are node.py's lists'.
- GroundingDinoSAMSegment (segment anything), for each image: GroundingDINO's forward (families/groundingdino.py), then
  SAM's image encoder on the image at 1024 (families/sam1.py), then the mask decoder per box. Priced at the larger of
  the two traced passes above both models' weights; the per-box masks (boxes x image pixels x 5 bytes: the float masks
  and their boolean copy) depend on how many boxes pass the threshold, known only at run time, and are said, not added.
  SAM-HQ, MobileSAM and GroundingDINO Swin-B are named, not priced.
"""
from __future__ import annotations

from ...families import groundingdino as GD, sam1 as SAM
from ...machine.resolve import PACK_FP32
from ...machine.runtime import SEGMENT_ANYTHING
from ...workload import SAMPLE, ModelRef, Stage
from . import Pack, loader, traced_working

SAM_LOADER, DINO_LOADER = "SAMModelLoader (segment anything)", "GroundingDinoModelLoader (segment anything)"
SEGMENT = "GroundingDinoSAMSegment (segment anything)"
SAM_FILES = {"sam_vit_h (2.56GB)": "sam_vit_h_4b8939.pth", "sam_vit_l (1.25GB)": "sam_vit_l_0b3195.pth",
             "sam_vit_b (375MB)": "sam_vit_b_01ec64.pth"}
DINO_FILES = {"GroundingDINO_SwinT_OGC (694MB)": "groundingdino_swint_ogc.pth"}


def _ref(a, node, files, folder, hint):
    value = str(a.value(node, "model_name") or "")
    name = files.get(value)
    if name is None:  # the choice without its size label ("sam_vit_b", as hand-written workflows give it)
        label = next((k for k in files if k.split(" (")[0] == value.strip()), None)
        if label is not None:
            name = files[label]
            a.note(f"{a.label(node)}: '{value}' is not one of the node's choices (ComfyUI would refuse it); "
                   f"read as '{label}'")
    if name is None:
        a.unpriced(f"{value or 'its model'}: a model of this node that is not priced here (of its choices, "
                   f"{', '.join(k.split(' (')[0] for k in files)} are)")
        return None
    return ModelRef(name=name, role="diffusion", folder=folder, loader_node=node.id, loader_type=node.type,
                    weight_dtype=PACK_FP32, hint=hint)


@loader
def _sam(a, node, slot, type_, visiting):
    ref = _ref(a, node, SAM_FILES, "sams", "") if type_ == "SAM_MODEL" else None
    return [ref] if ref else []


@loader
def _dino(a, node, slot, type_, visiting):
    ref = _ref(a, node, DINO_FILES, "grounding-dino", "") if type_ == "GROUNDING_DINO_MODEL" else None
    return [ref] if ref else []


def _segment(a, node):
    sam = a.refs(a.link(node, "sam_model"), "SAM_MODEL")
    dino = a.refs(a.link(node, "grounding_dino_model"), "GROUNDING_DINO_MODEL")
    stage = Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, models=tuple(sam + dino), cfg=None,
                  uses_negative=False, steps=1, manager=SEGMENT_ANYTHING)
    variant, why = SAM.family_of(sam[0].name) if sam else (None, "no SAM loader found")
    if variant is None or not dino:
        a.unpriced(why if variant is None else "no GroundingDINO loader found")
        return stage
    a.stage_note("the masks of each box at the image's size (float and boolean, 5 bytes a pixel a box) come on top: "
                 "how many boxes pass the threshold is known only at run time")
    peak = max(GD.TRACE_BYTES, SAM.TRACE[variant])
    which = "GroundingDINO's forward" if peak == GD.TRACE_BYTES else f"SAM {variant[-5:].upper()}'s image encoder"
    return traced_working(a, stage, f"the larger pass: {which}", GD.FAMILY, peak,
                          f"{GD.TRACE_SOURCE}; {SAM.TRACE_SOURCE.format(label=variant)}",
                          "GroundingDINO then SAM, one image at a time (comfyui_segment_anything)")


PACK = Pack(
    name="comfyui_segment_anything",
    refs={SAM_LOADER: _sam, DINO_LOADER: _dino},
    stage_kinds={SEGMENT: SAMPLE},
    stages={SEGMENT: _segment},
    relevant_types={"SAM_MODEL", "GROUNDING_DINO_MODEL"},
    widgets={SAM_LOADER: ["model_name"], DINO_LOADER: ["model_name"], SEGMENT: ["prompt", "threshold"]},
    output_types={SAM_LOADER: ["SAM_MODEL"], DINO_LOADER: ["GROUNDING_DINO_MODEL"], SEGMENT: ["IMAGE", "MASK"]},
    input_types={SEGMENT: {"sam_model": "SAM_MODEL", "grounding_dino_model": "GROUNDING_DINO_MODEL",
                           "image": "IMAGE"}},
)
