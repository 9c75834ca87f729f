"""chflame163/ComfyUI_LayerStyle (py/flux_kontext_image_scale.py, py/ic_mask.py at 64f976f): the image sizes of two
of its nodes, which fix the latent of the Flux workflows that use them.

- LayerUtility: FluxKontextImageScale: ComfyUI's FluxKontextImageScale again (the same PREFERED_KONTEXT_RESOLUTIONS
  and nearest-aspect choice; it fills instead of stretching), so core's rule sizes it.
- LayerUtility: ICMask: output_length rounded down to a multiple of 64 (L); each half is int(L / 3 * 2) by int(L / 2)
  (fit_image), the reference beside the blank or second image ("patch_right": L wide, 2/3 L high) or above it
  ("patch_bottom", where the first image is wider than high: 2/3 L wide, L high); "auto" picks by the first image,
  and both layouts have the same pixels. Batch 1 (the node takes first_image[0])."""
from __future__ import annotations

from ..base import _ImageSize
from . import Pack
from .core import _img_flux_kontext_image_scale, _img_up

KONTEXT = "LayerUtility: FluxKontextImageScale"
ICMASK = "LayerUtility: ICMask"


def _icmask(a, node, link, depth):
    if link.slot != 0:
        return None
    length = a.number(node, "output_length", 1536)
    if not length or length < 64:
        return None
    length -= length % 64
    base, half = int(length / 3 * 2), int(length / 2)
    mode = str(a.value(node, "patch_mode") or "auto")
    if mode == "auto":
        src = _img_up(a, node, depth, "first_image")
        mode = "patch_bottom" if src is not None and src.width > src.height else "patch_right"
        if src is None:
            a.note(f"{a.label(node)}: first image's size unknown; its layout only turns the same pixels")
    width, height = (2 * half, base) if mode == "patch_right" else (base, 2 * half)
    return _ImageSize(width, height, 1)


PACK = Pack(
    name="ComfyUI_LayerStyle",
    images={KONTEXT: _img_flux_kontext_image_scale, ICMASK: _icmask},
    widgets={KONTEXT: ["method"], ICMASK: ["patch_mode", "output_length", "patch_color"]},
    output_types={KONTEXT: ["IMAGE"], ICMASK: ["IMAGE", "MASK", "ICMASK_DATA"]},
    input_types={KONTEXT: {"image": "IMAGE"},
                 ICMASK: {"first_image": "IMAGE", "first_mask": "MASK", "second_image": "IMAGE", "second_mask": "MASK"}},
)
