"""Acly/comfyui-inpaint-nodes (nodes.py at b32f293): Fooocus inpaint on an SDXL model, and MAT / LaMa inpainting.

- INPAINT_LoadFooocusInpaint: the head (a 320 x 5 x 3 x 3 conv, 14,400 parameters) and the patch file from
  models/inpaint, both kept in RAM (torch.load / load_torch_file on the CPU) -> INPAINT_PATCH.
- INPAINT_ApplyFooocusInpaint: MODEL + INPAINT_PATCH + LATENT -> MODEL. It runs the head once on the latent and its
  mask, adds the result to the first input block (set_model_input_block_patch: one [batch, 320, h, w] tensor), and
  adds the patch to the UNet as weight patches (add_patches), merged weight by weight (calculate_weight_patched: each
  key's uint8 delta and its min / max cast to fp32 on the GPU, scaled and added). The patch rides on the MODEL as a
  LoRA of its file's size (role "lora", the estimator's rule for weight patches: an upper bound, since the merge
  holds one weight's delta at a time; the file stays in RAM). The model passes through; it is not a sampler.
- INPAINT_LoadInpaintModel: a file from models/inpaint -> INPAINT_MODEL, a float32 MAT or LaMa module
  (families/inpaint_models.py; which one by the file's name, as the loader does by its keys).
- INPAINT_InpaintWithModel: moves the model to the GPU itself and runs it on each image, padded square and resized
  on the CPU to the model's size (LaMa 256, MAT 512): weights at float32 and a TRACED constant peak, whatever the
  image's size or batch (families/inpaint_models.py). An optional upscale model run on each result, or a file of
  neither model, stays "not estimated" (named).
- The mask and image helpers (MaskedFill, MaskedBlur, ExpandMask, ColorMatch ...) and
  INPAINT_VAEEncodeInpaintConditioning (core's InpaintModelConditioning) are read by their sockets.
"""
from __future__ import annotations

from ...families import inpaint_models as F
from ...machine.resolve import PACK_FP32
from ...physics import memory
from ...units import fmt_mib
from ...workload import SAMPLE
from ..base import _replace
from . import Pack, model_file_loader, model_with

LOAD, APPLY, INPAINT_PATCH = "INPAINT_LoadFooocusInpaint", "INPAINT_ApplyFooocusInpaint", "INPAINT_PATCH"
LOAD_MODEL, INPAINT, INPAINT_MODEL = "INPAINT_LoadInpaintModel", "INPAINT_InpaintWithModel", "INPAINT_MODEL"


def _patch(a, node, slot, type_, visiting):
    """INPAINT_PATCH: the patch file, a weight patch like a LoRA (the head's 14,400 parameters are not counted)."""
    if type_ != INPAINT_PATCH:
        return []
    ref = a.loader_ref(node, "patch", role="lora", folder="inpaint")
    return [ref] if ref else []


def _apply(a, node, slot, type_, visiting):
    """MODEL: the model it is given with the Fooocus patch merged into it."""
    return model_with(a, node, type_, visiting, (("patch", INPAINT_PATCH),))


def _inpaint(a, node):
    model, image = a.link(node, "inpaint_model"), a.link(node, "image")
    if model is None or image is None:
        return None
    refs = a.refs(model, INPAINT_MODEL)
    fam, why_not = F.family_of(refs[0].name if refs else "")
    stage = a.sample_stage(node, model_links=[model], cond_links=[], cfg=None, uses_negative=False, steps=1,
                           latent=None, model_type=INPAINT_MODEL)
    if why_not == "" and a.link(node, "optional_upscale_model") is not None:
        why_not = ("the optional upscale model it runs on each result (nodes.py:575-576, tiled_scale in 512 px tiles "
                   "on the GPU) is not priced here")
    if why_not:
        a.unpriced(why_not)
        return stage
    size = F.SIZE[fam]
    traced = F.TRACE[fam]
    k = memory.calibration(fam)
    why = (f"{F.TRACE_SOURCE.format(model=F.MODEL_CODE[fam], size=size)}: every image is padded square and resized "
           f"to {size}×{size} on the CPU first (util.py:61-80), one at a time, so this does not depend on the image's "
           f"size or the batch: {fmt_mib(traced)} × {k} for the allocator and untraced transients")
    a.stage_note(f"{F.FAMILIES[fam].label} working memory ~{fmt_mib(int(traced * k))}: traced {fmt_mib(traced)} at "
                 f"{size}×{size} × {k}")
    return _replace(stage, working=((f"{F.FAMILIES[fam].label} activations (traced)", int(traced * k), why),))


PACK = Pack(
    name="comfyui-inpaint-nodes",
    refs={LOAD: _patch, APPLY: _apply,
          LOAD_MODEL: model_file_loader("model_name", "inpaint", INPAINT_MODEL, weight_dtype=PACK_FP32)},
    stage_kinds={INPAINT: SAMPLE},
    stages={INPAINT: _inpaint},
    relevant_types={INPAINT_MODEL},
    widgets={LOAD: ["head", "patch"], "INPAINT_LoadInpaintModel": ["model_name"]},
    output_types={LOAD: [INPAINT_PATCH], APPLY: ["MODEL"], "INPAINT_LoadInpaintModel": ["INPAINT_MODEL"],
                  "INPAINT_InpaintWithModel": ["IMAGE"]},
    input_types={APPLY: {"model": "MODEL", "patch": INPAINT_PATCH, "latent": "LATENT"},
                 "INPAINT_InpaintWithModel": {"inpaint_model": "INPAINT_MODEL", "image": "IMAGE", "mask": "MASK",
                                              "optional_upscale_model": "UPSCALE_MODEL"}},
)
