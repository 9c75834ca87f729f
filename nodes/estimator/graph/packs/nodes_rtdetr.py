"""ComfyUI 0.33.0 comfy_extras/nodes_rtdetr.py: the RT-DETR v4 person / object detector (the SDPose multi-person
templates' bounding boxes).

- RTDETR_detect (:12-65): MODEL (UNETLoader of an RT-DETR v4 file: model_detection.py:1017-1021 ->
  supported_models.RT_DETR_v4, :2284-2295; comfy/ldm/rt_detr/rtdetr_v4.py) + IMAGE -> BOUNDING_BOX.
  ``load_model_gpu(model)`` (:35), then batches of up to 32 images stretched to 640 x 640 on the CPU (:37-40)
  through the detector. Its weights are on the GPU; its working memory is one batch's forward, TRACED with
  ComfyUI 0.33.0's own model code (families/rt_detr.py): linear in the batch, independent of the input's size.
  The batch is the image count the graph gives (LoadImage: 1); a loaded video's frame count is known only at run
  time, so its frames are priced at the node's own batch limit, 32 (an upper bound, said).
- DrawBBoxes (:68-...): drawing on the CPU, no model.
"""
from __future__ import annotations

from ...physics import memory
from ...families import rt_detr as F
from ...units import fmt_mib
from ...workload import SAMPLE
from ..base import _replace, from_video
from . import Pack

DETECT = "RTDETR_detect"



def _detect(a, node):
    model = a.link(node, "model")
    image = a.link(node, "image")
    if model is None or image is None:
        return None
    size = a.image_size(image)
    if size is not None and size.batch and not from_video(a, image):
        images, said = max(1, size.batch), f"{max(1, size.batch)} image(s)"
    else:
        images = F.RTDETR_BATCH
        said = (f"the input's image / frame count is known only at run time (a loaded video): priced at the node's "
                f"own batch limit, {F.RTDETR_BATCH} images a forward (nodes_rtdetr.py:37), an upper bound")
    batch = min(images, F.RTDETR_BATCH)
    traced = F.detect_peak(batch)
    k = memory.calibration("rt-detr-v4")
    why = (f"{F.RTDETR_TRACE_SOURCE}: one batch of {batch} image(s) stretched to {F.RTDETR_SIDE}×{F.RTDETR_SIDE} "
           f"(nodes_rtdetr.py:37-39; {said}): {F.RTDETR_PER_IMAGE:,} bytes an image + {F.RTDETR_FIXED:,} = "
           f"{fmt_mib(traced)} (the input's own size does not matter: the resize runs on the CPU) × {k} for the "
           "allocator and untraced transients")
    a.stage_note(f"RTDETR_detect working memory ~{fmt_mib(int(traced * k))}: traced {fmt_mib(traced)} for a batch of "
                 f"{batch} at {F.RTDETR_SIDE}×{F.RTDETR_SIDE} × {k}")
    a.note(f"{a.label(node)}: the RT-DETR detector runs on the GPU (nodes_rtdetr.py:35-40: load_model_gpu, then up "
           f"to {F.RTDETR_BATCH} images at a time stretched to {F.RTDETR_SIDE}×{F.RTDETR_SIDE}); its working memory "
           "is traced (families/rt_detr.py)")
    stage = a.sample_stage(node, model_links=[model], cond_links=[], cfg=None, uses_negative=False, steps=1,
                           latent=None)
    return _replace(stage, working=((f"detector activations (traced, batch {batch})", int(traced * k), why),))


PACK = Pack(
    name="nodes_rtdetr",
    stage_kinds={DETECT: SAMPLE},
    stages={DETECT: _detect},
    handled={"DrawBBoxes"},
)
