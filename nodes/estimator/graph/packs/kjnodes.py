"""kijai/ComfyUI-KJNodes: image resize / size helpers and model patches used around Flux and Wan.

SetNode / GetNode are resolved by the UI reader (virtual nodes). Model patches (sage attention,
torch compile, block swap settings for native models...) pass the MODEL through and are read by
the generic analyzer.
"""
from __future__ import annotations

from ..base import _ImageSize, _UNKNOWN, frames_bound, from_video
from . import Pack


def _resize(a, node, link, depth):
    """ImageResizeKJ / v2: the width / height widgets (or inputs); keep_proportion scales the source."""
    if link.slot == 0:
        w = a.number(node, "width") if "width" in node.inputs else a.number(node, "width_input")
        h = a.number(node, "height") if "height" in node.inputs else a.number(node, "height_input")
        src = a.image_size(a.link(node, "image"), depth + 1)
        if not w or not h:
            return None
        keep = a.value(node, "keep_proportion")
        if src is None and keep not in (True, "resize") and from_video(a, a.link(node, "image")):
            # a video's frames of unknown size: the widgets' size, at most the frames' bound (a consumer that needs
            # the count asks base.frames_bound; without one, one frame stands for each, inexact)
            src = _ImageSize(w, h, frames_bound(a, a.link(node, "image")) or 1, False)
        if keep in (True, "resize") and src is not None:
            ratio = min(w / src.width, h / src.height)
            w, h = round(src.width * ratio), round(src.height * ratio)
        divisible = a.number(node, "divisible_by", 0) or 0
        if divisible > 1:
            w, h = w - w % divisible, h - h % divisible
        return _ImageSize(w, h, src.batch if src else 1, (src.exact if src else False) and keep not in (True, "resize"))
    return None


def _resize_value(a, node, link, depth, sub):
    size = _resize(a, node, type(link)(link.node, 0), depth)
    if size is None or link.slot not in (1, 2):
        return _UNKNOWN
    return size.width if link.slot == 1 else size.height


def _size_and_count(a, node, link, depth, sub):
    size = a.image_size(a.link(node, "image"), depth + 1)
    if size is None or not size.exact or link.slot == 0:
        return _UNKNOWN
    return (None, size.width, size.height, size.batch)[link.slot] if link.slot < 4 else _UNKNOWN


def _gradient_mask(a, node, link, depth):
    """CreateGradientMask (mask_nodes.py createmask): zeros [frames, height, width], a gradient per frame."""
    w, h, frames = a.number(node, "width"), a.number(node, "height"), a.number(node, "frames")
    return _ImageSize(w, h, frames) if w and h and frames else None


def _passthrough_image(a, node, link, depth):
    return a.image_size(a.link(node, "image"), depth + 1) if link.slot == 0 else None


WIDGETS = {  # leading widgets, in order (KJNodes image_nodes.py INPUT_TYPES)
    "ImageResizeKJ": ["width", "height", "upscale_method", "keep_proportion", "divisible_by"],
    "ImageResizeKJv2": ["width", "height", "upscale_method", "keep_proportion", "pad_color", "crop_position",
                        "divisible_by"],
    # constants (KJNodes nodes/nodes.py INTConstant / FloatConstant: one widget, "value")
    "INTConstant": ["value"],
    "CreateGradientMask": ["invert", "frames", "width", "height"],
    "FloatConstant": ["value"],
}

PACK = Pack(
    name="ComfyUI-KJNodes",
    # resize every image of the batch / pass it through (nodes/image_nodes.py)
    keeps_count={"ImageResizeKJ", "ImageResizeKJv2", "GetImageSizeAndCount"},
    widgets=WIDGETS,
    value_primitives={"INTConstant", "FloatConstant"},
    output_types={"INTConstant": ["INT"], "FloatConstant": ["FLOAT"], "ImageResizeKJ": ["IMAGE", "INT", "INT"], "ImageResizeKJv2": ["IMAGE", "INT", "INT"],
                  "GetImageSizeAndCount": ["IMAGE", "INT", "INT", "INT"]},
    images={"ImageResizeKJ": _resize, "ImageResizeKJv2": _resize, "GetImageSizeAndCount": _passthrough_image,
            "CreateGradientMask": _gradient_mask},
    values={"ImageResizeKJ": _resize_value, "ImageResizeKJv2": _resize_value, "GetImageSizeAndCount": _size_and_count},
    handled={"ImageConcatMulti", "GetImageRangeFromBatch", "ImagePadKJ", "AddLabel",
             "StringConstantMultiline", "ImageBatchMulti", "ColorMatch", "WidgetToString", "SomethingToString",
             "CreateShapeMask", "GrowMaskWithBlur", "PathchSageAttentionKJ", "PatchSageAttentionKJ",
             "ModelPatchTorchSettings", "TorchCompileModelWanVideo", "TorchCompileModelFluxAdvanced",
             "LeapfusionHunyuanI2VPatcher", "GetLatentRangeFromBatch", "SkipLayerGuidanceWanVideo"},
)
