"""nullquant/ComfyUI-BrushNet (brushnet_nodes.py at 505d8ef): BrushNet inpainting on an SD1.5 / SDXL model.

- BrushNetLoader: a file the pack finds under models/inpaint -> BRMODEL, the model dispatched to the GPU in the
  loader's ``dtype`` (accelerate load_checkpoint_and_dispatch, device_map "sequential") and kept there by the node's
  cached output: it rides on the MODEL the BrushNet node patches (role "brushnet", memory that cannot stream; sizes
  families/brushnet.py). Its forward each step is a UNet branch without attention beside the UNet's: its activations
  are not added (as for a ControlNet).
- BrushNet: MODEL + VAE + IMAGE + MASK + BRMODEL + prompts -> MODEL, prompts, LATENT. It VAE-encodes the masked image
  inside (get_image_latents: vae.encode at the image's size) and returns zeros [batch, 4, h / 8, w / 8] as the latent.
- PowerPaint: the BrushNet node with PowerPaint v2's model (a BrushNet with cross-attention, families/brushnet.py) in
  its ``powerpaint`` input: the same model patch, internal VAE encode and zero latent. It also encodes four task
  prompts ("P_ctxt", "P_obj", ...) with the CLIP it is given: a few tokens through the CLIP the prompts already use.
- PowerPaintCLIPLoader: comfy.sd.load_clip of ``base`` (a CLIP-L file of models/clip) with 30 task-token embeddings
  added and the PowerPaint text encoder's weights copied into it (load_state_dict): SD1.5's CLIP-L of the base file.
- BlendInpaint, CutForInpaint: image operations, read by their sockets.
"""
from __future__ import annotations

from ...families._spec import BRUSHNET
from ...workload import TEXT_ENCODE
from . import Pack, encode_and_prompts, image_sd_latent, model_with

BRMODEL, LOADER, APPLY = "BRMODEL", "BrushNetLoader", "BrushNet"
POWERPAINT, PP_CLIP = "PowerPaint", "PowerPaintCLIPLoader"


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


def _powerpaint_refs(a, node, slot, type_, visiting):
    return model_with(a, node, type_, visiting, (("powerpaint", BRMODEL),))


def _powerpaint_stages(a, node):
    """The node's own work: the masked image VAE-encoded (get_image_latents) and the task prompts encoded with the
    PowerPaint CLIP it is given (clip.encode_from_tokens, brushnet_nodes.py model_update)."""
    return encode_and_prompts(a, node, "image")


def _pp_clip(a, node, slot, type_, visiting):
    """CLIP: the base CLIP-L file (brushnet_nodes.py ppclip_loading: comfy.sd.load_clip(ckpt_paths=[base]))."""
    if type_ != "CLIP":
        return []
    # the loader reads pp_clip.tokenizer.clip_l and pp_clip.patcher.model.clip_l: the base can only be a CLIP-L
    ref = a.loader_ref(node, "base", role="text_encoder", folder="text_encoders", clip_type="stable_diffusion",
                       hint="clip-l")
    if ref is not None and not ref.unset:
        a.note(f"{a.label(node)}: PowerPaint's text encoder is the base CLIP-L with 30 task-token embeddings added")
    return [ref] if ref else []


def _latent(a, node, slot, depth):
    """The LATENT output: zeros [batch, 4, h / 8, w / 8] of the encoded masked image."""
    return image_sd_latent(a, node, "image", depth) if slot == 3 else None


PACK = Pack(
    name="ComfyUI-BrushNet",
    refs={LOADER: _loader, APPLY: _apply_refs, POWERPAINT: _powerpaint_refs, PP_CLIP: _pp_clip},
    latents={APPLY: _latent, POWERPAINT: _latent},
    stage_kinds={POWERPAINT: TEXT_ENCODE},
    stages={POWERPAINT: _powerpaint_stages},
    internal_encoders={APPLY: ("image",), POWERPAINT: ("image",)},
    widgets={LOADER: ["brushnet", "dtype"], APPLY: ["scale", "start_at", "end_at"], PP_CLIP: ["base", "powerpaint"],
             POWERPAINT: ["fitting", "function", "scale", "start_at", "end_at", "save_memory"]},
    output_types={LOADER: [BRMODEL], APPLY: ["MODEL", "CONDITIONING", "CONDITIONING", "LATENT"], PP_CLIP: ["CLIP"],
                  POWERPAINT: ["MODEL", "CONDITIONING", "CONDITIONING", "LATENT"]},
    input_types={APPLY: {"model": "MODEL", "vae": "VAE", "image": "IMAGE", "mask": "MASK", "brushnet": BRMODEL,
                         "positive": "CONDITIONING", "negative": "CONDITIONING"},
                 POWERPAINT: {"model": "MODEL", "vae": "VAE", "image": "IMAGE", "mask": "MASK", "powerpaint": BRMODEL,
                              "clip": "CLIP", "positive": "CONDITIONING", "negative": "CONDITIONING"}},
    relevant_types={BRMODEL},
)
