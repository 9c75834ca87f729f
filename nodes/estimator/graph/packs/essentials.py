"""cubiq/ComfyUI_essentials (image.py at 33ff89f): the size of 🔧 Image Resize (ImageResize+), which fixes the image
and latent size of many community workflows; and (sampling.py) 🔧 Empty Latent Size Picker (SDXLEmptyLatentSizePicker+).

ImageResize.execute: multiple_of first rounds the target down; "stretch" makes exactly width x height, "fill / crop"
scales to cover the target and crops to it, "pad" fits inside and pads to it (each: a 0 takes the source's side),
"keep proportion" fits inside the target (the source's aspect); the condition may leave the image as it is; a final
crop makes both sides multiples of multiple_of. Its INT outputs are the new width and height. An older release had a
keep_proportion toggle where ``method`` now is (the pack's example workflows save False there: stretch)."""
from __future__ import annotations

import re

from ..base import _ImageSize, _UNKNOWN
from . import Pack, empty_sd_latent

RESIZE = "ImageResize+"
PICKER = "SDXLEmptyLatentSizePicker+"
_PICKED = re.compile(r"^\s*(\d+)x(\d+)")


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


def _picked(a, node):
    """SDXLEmptyLatentSizePicker.execute: the resolution choice's "WxH (ratio)", each side replaced by its override
    when that is above 0 (older releases have no overrides)."""
    m = _PICKED.match(str(a.value(node, "resolution") or ""))
    if m is None:
        return None
    width, height = int(m.group(1)), int(m.group(2))
    wo, ho = a.number(node, "width_override", 0) or 0, a.number(node, "height_override", 0) or 0
    return (wo if wo > 0 else width), (ho if ho > 0 else height)


def _picker_latent(a, node, slot, depth):
    """The LATENT output: zeros [batch_size, 4, height // 8, width // 8] on the intermediate device."""
    size = _picked(a, node) if slot == 0 else None
    if size is None:
        return None
    a.check_widget_range(node, "batch_size")
    return empty_sd_latent(a, node, *size, a.number(node, "batch_size", 1) or 1)


def _picker_value(a, node, link, depth, sub):
    size = _picked(a, node)
    if size is None or link.slot not in (1, 2):
        return _UNKNOWN
    return size[link.slot - 1]


PACK = Pack(
    name="ComfyUI_essentials",
    widgets={RESIZE: ["width", "height", "interpolation", "method", "condition", "multiple_of"],
             PICKER: ["resolution", "batch_size", "width_override", "height_override"]},
    output_types={RESIZE: ["IMAGE", "INT", "INT"], PICKER: ["LATENT", "INT", "INT"]},
    input_types={RESIZE: {"image": "IMAGE"}, PICKER: {}},
    images={RESIZE: _resize},
    latents={PICKER: _picker_latent},
    values={RESIZE: _resize_value, PICKER: _picker_value},
)
