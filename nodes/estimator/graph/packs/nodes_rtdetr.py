"""ComfyUI 0.33.0 comfy_extras/nodes_rtdetr.py: the RT-DETR v4 person / object detector (the SDPose multi-person
templates' bounding boxes).

- RTDETR_detect (:12-65): MODEL (UNETLoader of an RT-DETR v4 file: model_detection.py:1017-1021 ->
  supported_models.RT_DETR_v4, :2284-2295; comfy/ldm/rt_detr/rtdetr_v4.py) + IMAGE -> BOUNDING_BOX.
  ``load_model_gpu(model)`` (:35), then batches of up to 32 images stretched to 640 x 640 (:37-40) through
  the detector. Its weights are on the GPU (priced from the published file size); its activations (an HGNetv2
  CNN backbone, a hybrid encoder and a deformable-attention decoder) are not covered by any trace or formula
  here, so the stage is named and left unpriced: the estimate says it is a lower bound.
- DrawBBoxes (:68-...): drawing on the CPU, no model.
"""
from __future__ import annotations

from ...workload import SAMPLE
from . import Pack

DETECT = "RTDETR_detect"
DETR_SIDE, DETR_BATCH = 640, 32  # nodes_rtdetr.py:37-39


def _detect(a, node):
    model = a.link(node, "model")
    if model is None or a.link(node, "image") is None:
        return None
    a.note(f"{a.label(node)}: the RT-DETR detector runs on the GPU (nodes_rtdetr.py:35-40: load_model_gpu, then "
           f"up to {DETR_BATCH} images at a time stretched to {DETR_SIDE}×{DETR_SIDE}); its weights are priced, its "
           "activations are not")
    # no latent: a detector's input is an image batch, and the diffusion working-memory tables do not apply; the
    # reason the estimate gives for the unpriced stage (stages/sample.py NOT_ESTIMATED)
    a.stage_note("working memory not estimated: an RT-DETR detector (CNN backbone + deformable-attention decoder, "
                 "comfy/ldm/rt_detr/rtdetr_v4.py): no trace or formula here covers its activations")
    return a.sample_stage(node, model_links=[model], cond_links=[], cfg=None, uses_negative=False, steps=1,
                          latent=None)


PACK = Pack(
    name="nodes_rtdetr",
    stage_kinds={DETECT: SAMPLE},
    stages={DETECT: _detect},
    handled={"DrawBBoxes"},
)
