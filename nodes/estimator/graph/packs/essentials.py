"""cubiq/ComfyUI_essentials (image.py at 33ff89f): the size of 🔧 Image Resize (ImageResize+), which fixes the image
and latent size of many community workflows.

ImageResize.execute: multiple_of first rounds the target down; "stretch" makes exactly width x height, "fill / crop"
scales to cover the target and crops to it, "pad" fits inside and pads to it (each: a 0 takes the source's side),
"keep proportion" fits inside the target (the source's aspect); the condition may leave the image as it is; a final
crop makes both sides multiples of multiple_of. Its INT outputs are the new width and height. An older release had a
keep_proportion toggle where ``method`` now is (the pack's example workflows save False there: stretch)."""
from __future__ import annotations

from ..base import _ImageSize, _UNKNOWN
from . import Pack

RESIZE = "ImageResize+"


def _target(a, node):
    width, height = a.number(node, "width"), a.number(node, "height")
    method = a.value(node, "method")
    method = "keep proportion" if method is True else "stretch" if method in (False, None) else str(method)
    multiple = a.number(node, "multiple_of", 0) or 0
    if width is None or height is None:
        return None
    if multiple > 1:
        width, height = width - width % multiple, height - height % multiple
    return width, height, method, multiple


def _resize(a, node, link, depth):
    if link.slot != 0:
        return None
    target = _target(a, node)
    if target is None:
        return None
    width, height, method, multiple = target
    src = a.image_size(a.link(node, "image"), depth + 1)
    condition = str(a.value(node, "condition") or "always")
    needs_src = (method == "keep proportion" or not width or not height or "always" not in condition)
    if needs_src and src is None:
        if width and height and condition in ("always", "downscale if bigger", "if bigger area"):
            a.note(f"{a.label(node)}: input size unknown; assumed the {width}x{height} box it resizes into "
                   "(an upper bound)")
            return _ImageSize(width, height, 1, exact=False)
        return None
    if method == "keep proportion" and src is not None:
        w = width or src.width
        h = height or src.height
        ratio = min(w / src.width, h / src.height)
        width, height = round(src.width * ratio), round(src.height * ratio)
    elif src is not None:
        width, height = width or src.width, height or src.height
    if src is not None and "always" not in condition:
        bigger = src.height > height or src.width > width
        smaller = src.height < height or src.width < width
        area_out, area_in = width * height, src.width * src.height
        if not ((condition == "downscale if bigger" and bigger) or (condition == "upscale if smaller" and smaller)
                or ("bigger area" in condition and area_in > area_out)
                or ("smaller area" in condition and area_in < area_out)):
            width, height = src.width, src.height
    if multiple > 1:
        width, height = width - width % multiple, height - height % multiple
    exact = src.exact if (src is not None and needs_src) else True
    return _ImageSize(width, height, src.batch if src else 1, exact)


def _resize_value(a, node, link, depth, sub):
    size = _resize(a, node, type(link)(link.node, 0), depth)
    if size is None or link.slot not in (1, 2):
        return _UNKNOWN
    return size.width if link.slot == 1 else size.height


PACK = Pack(
    name="ComfyUI_essentials",
    widgets={RESIZE: ["width", "height", "interpolation", "method", "condition", "multiple_of"]},
    output_types={RESIZE: ["IMAGE", "INT", "INT"]},
    input_types={RESIZE: {"image": "IMAGE"}},
    images={RESIZE: _resize},
    values={RESIZE: _resize_value},
)
