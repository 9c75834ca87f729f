"""Acly/comfyui-inpaint-nodes (nodes.py at b32f293): Fooocus inpaint on an SDXL model, and MAT / LaMa inpainting.

- INPAINT_LoadFooocusInpaint: the head (a 320 x 5 x 3 x 3 conv, 14,400 parameters) and the patch file from
  models/inpaint, both kept in RAM (torch.load / load_torch_file on the CPU) -> INPAINT_PATCH.
- INPAINT_ApplyFooocusInpaint: MODEL + INPAINT_PATCH + LATENT -> MODEL. It runs the head once on the latent and its
  mask, adds the result to the first input block (set_model_input_block_patch: one [batch, 320, h, w] tensor), and
  adds the patch to the UNet as weight patches (add_patches), merged weight by weight (calculate_weight_patched: each
  key's uint8 delta and its min / max cast to fp32 on the GPU, scaled and added). The patch rides on the MODEL as a
  LoRA of its file's size (role "lora", the estimator's rule for weight patches: an upper bound, since the merge
  holds one weight's delta at a time; the file stays in RAM). The model passes through; it is not a sampler.
- INPAINT_InpaintWithModel: runs a MAT (512 px) or LaMa (256 px) model through spandrel on each image: a model
  whose weights and activations no rule here prices (named, the estimate stays incomplete).
- The mask and image helpers (MaskedFill, MaskedBlur, ExpandMask, ColorMatch ...) and
  INPAINT_VAEEncodeInpaintConditioning (core's InpaintModelConditioning) are read by their sockets.
"""
from __future__ import annotations

from . import Pack, model_with

LOAD, APPLY, INPAINT_PATCH = "INPAINT_LoadFooocusInpaint", "INPAINT_ApplyFooocusInpaint", "INPAINT_PATCH"


def _patch(a, node, slot, type_, visiting):
    """INPAINT_PATCH: the patch file, a weight patch like a LoRA (the head's 14,400 parameters are not counted)."""
    if type_ != INPAINT_PATCH:
        return []
    ref = a.loader_ref(node, "patch", role="lora", folder="inpaint")
    return [ref] if ref else []


def _apply(a, node, slot, type_, visiting):
    """MODEL: the model it is given with the Fooocus patch merged into it."""
    return model_with(a, node, type_, visiting, (("patch", INPAINT_PATCH),))


PACK = Pack(
    name="comfyui-inpaint-nodes",
    refs={LOAD: _patch, APPLY: _apply},
    widgets={LOAD: ["head", "patch"], "INPAINT_LoadInpaintModel": ["model_name"]},
    output_types={LOAD: [INPAINT_PATCH], APPLY: ["MODEL"], "INPAINT_LoadInpaintModel": ["INPAINT_MODEL"],
                  "INPAINT_InpaintWithModel": ["IMAGE"]},
    input_types={APPLY: {"model": "MODEL", "patch": INPAINT_PATCH, "latent": "LATENT"},
                 "INPAINT_InpaintWithModel": {"inpaint_model": "INPAINT_MODEL", "image": "IMAGE", "mask": "MASK",
                                              "optional_upscale_model": "UPSCALE_MODEL"}},
    unpriced={"INPAINT_InpaintWithModel": "a MAT (512 px) or LaMa (256 px) inpainting model through spandrel"},
)
