"""nullquant/ComfyUI-BrushNet (brushnet_nodes.py at 505d8ef): BrushNet inpainting on an SD1.5 / SDXL model.

- BrushNetLoader: a file the pack finds under models/inpaint -> BRMODEL, the model dispatched to the GPU in the
  loader's ``dtype`` (accelerate load_checkpoint_and_dispatch, device_map "sequential") and kept there by the node's
  cached output: it rides on the MODEL the BrushNet node patches (role "brushnet", memory that cannot stream; sizes
  families/brushnet.py). Its forward each step is a UNet branch without attention beside the UNet's: its activations
  are not added (as for a ControlNet).
- BrushNet: MODEL + VAE + IMAGE + MASK + BRMODEL + prompts -> MODEL, prompts, LATENT. It VAE-encodes the masked image
  inside (get_image_latents: vae.encode at the image's size) and returns zeros [batch, 4, h / 8, w / 8] as the latent.
- PowerPaint / PowerPaintCLIPLoader: a BrushNet with cross-attention and its own CLIP tokens: not priced, named.
- BlendInpaint, CutForInpaint: image operations, read by their sockets.
"""
from __future__ import annotations

from ...families._spec import BRUSHNET
from ...workload import LatentShape
from . import Pack, model_with

BRMODEL, LOADER, APPLY = "BRMODEL", "BrushNetLoader", "BrushNet"


def _loader(a, node, slot, type_, visiting):
    if type_ != BRMODEL:
        return []
    dtype = a.value(node, "dtype")
    ref = a.loader_ref(node, "brushnet", role=BRUSHNET, folder="inpaint",
                       weight_dtype=str(dtype) if isinstance(dtype, str) else None)
    return [ref] if ref else []


def _apply_refs(a, node, slot, type_, visiting):
    """MODEL: the model it is given, with the BrushNet model its loader keeps on the GPU."""
    return model_with(a, node, type_, visiting, (("brushnet", BRMODEL),))


def _latent(a, node, slot, depth):
    """The LATENT output: zeros [batch, 4, h / 8, w / 8] of the encoded masked image."""
    if slot != 3:
        return None
    size = a.image_size(a.link(node, "image"), depth + 1)
    if size is None or not size.width or not size.height:
        return None
    a.check_size(node, size.width, size.height, None, size.batch)
    return LatentShape(batch=size.batch, channels=4, height=size.height // 8, width=size.width // 8,
                       pixel_height=size.height, pixel_width=size.width, source_node=node.id, source_type=node.type)


PACK = Pack(
    name="ComfyUI-BrushNet",
    refs={LOADER: _loader, APPLY: _apply_refs},
    latents={APPLY: _latent},
    internal_encoders={APPLY: ("image",)},
    widgets={LOADER: ["brushnet", "dtype"], APPLY: ["scale", "start_at", "end_at"]},
    output_types={LOADER: [BRMODEL], APPLY: ["MODEL", "CONDITIONING", "CONDITIONING", "LATENT"]},
    input_types={APPLY: {"model": "MODEL", "vae": "VAE", "image": "IMAGE", "mask": "MASK", "brushnet": BRMODEL,
                         "positive": "CONDITIONING", "negative": "CONDITIONING"}},
    unpriced={"PowerPaint": "PowerPaint (a BrushNet with cross-attention, and its own CLIP tokens)",
              "PowerPaintCLIPLoader": "PowerPaint's CLIP with its task tokens"},
    relevant_types={BRMODEL},
)
