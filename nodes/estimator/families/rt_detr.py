"""RT-DETR v4 (ComfyUI 0.33.0: comfy/ldm/rt_detr/rtdetr_v4.py, comfy_extras/nodes_rtdetr.py): the real-time object
detector the SDPose multi-person templates use for person boxes, loaded by UNETLoader from diffusion_models.

- Detection (model_detection.py:1017-1021): ``encoder.pan_blocks.1.cv4.conv.weight`` selects it; enc_h is that
  weight's first dimension -> supported_models.RT_DETR_v4 (:2284-2296, fp16 / fp32) -> model_base.RT_DETR_v4
  (:2769-2771) -> RTv4 (rtdetr_v4.py:694-725): an HGNetv2 backbone (:122), a hybrid encoder of width enc_h and a
  D-FINE decoder (256 wide, 300 queries, 80 COCO classes).
- The published rt_detr_v4-x-hgnet file (the template's "X" model): enc_h 384. Built at that config, RTv4 has
  61,782,744 parameters and 136,155 buffer values (counted with ComfyUI 0.33.0's own classes, bench/trace_vision.py);
  x 4 bytes = 247.7 MB = 236.2 MiB, the published fp32 file's "236.3 MB" (x 2: the fp16 file's "118.2 MB").

Working memory (RTDETR_detect, nodes_rtdetr.py:31-40): ``load_model_gpu``, then batches of up to 32 images, each
batch stretched to 640 x 640 ON THE CPU (:38, the images are on the intermediate device) and moved to the GPU as
fp16 by RTv4.forward (:724); nothing but the per-image boxes stays. So the peak is one batch's forward:
TRACED with ComfyUI 0.33.0's own model code (bench/trace_vision.py ``rtdetr*B``, 2026-12-03: full size, fp16, fake
CUDA tensors, the live-storage tracker; peak in the hybrid encoder's FPN blocks, ``encoder.fpn_blocks.1``) at
B = 1, 2, 4, 8, 16, 32: every point is RTDETR_PER_IMAGE x B + RTDETR_FIXED to the byte.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 173  # "rt_detr" / "rtdetr" shares no pattern with another family's name rules

RTDETR_SIDE = 640  # nodes_rtdetr.py:38 (common_upscale to 640 x 640)
RTDETR_BATCH = 32  # nodes_rtdetr.py:37 (range(0, B, 32))
P_RTDETR_X = 61_782_744 + 136_155  # parameters + buffer values of RTv4(enc_h=384) (the module docstring)

RTDETR_TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-03: ComfyUI 0.33.0's RTv4 (enc_h 384, the "
                       "rt_detr_v4-x-hgnet file), full size, fp16, fake CUDA tensors")
# batch -> traced peak bytes (inputs included: the fp16 640 x 640 batch on the GPU)
RTDETR_TRACE = {1: 76_595_200, 2: 152_883_200, 4: 305_459_200, 8: 610_611_200, 16: 1_220_915_200,
                32: 2_441_523_200}
RTDETR_PER_IMAGE = 76_288_000
RTDETR_FIXED = 307_200

FAMILIES = {
    # no hidden_size on purpose: the DiT formula must never price a CNN detector (its working memory is the trace)
    # (enc_h 384, a 256-wide decoder of 300 queries, 80 classes: the module docstring)
    "rt-detr-v4": Family(DIFFUSION, "RT-DETR v4 detector", dict(image_size=RTDETR_SIDE)),
}

NAME_RULES = {
    DIFFUSION: (_r(r"rt[_-]?detr", "rt-detr-v4", "RT-DETR v4 detector", P_RTDETR_X,
                   "RTv4 at enc_h 384 (the X model): 61,782,744 parameters + 136,155 buffer values (families/rt_detr.py)"),),
}


def detect_peak(images: int) -> int:
    """RTDETR_detect's traced GPU peak for ``images`` images: one batch of min(images, 32) at 640 x 640."""
    b = max(1, min(int(images), RTDETR_BATCH))
    return RTDETR_PER_IMAGE * b + RTDETR_FIXED
