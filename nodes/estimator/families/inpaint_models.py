"""Object-removal inpainting models of Acly/comfyui-inpaint-nodes (nodes.py at b32f293): LaMa and MAT, loaded by
INPAINT_LoadInpaintModel from models/inpaint and run by INPAINT_InpaintWithModel.

- Loading (nodes.py:521-536): a ``.pt`` file is a TorchScript archive (torch.jit.load, its state dict), anything
  else load_torch_file. A state dict with ``synthesis.first_stage.conv_first.conv.resample_filter`` is MAT (the
  pack's own mat/arch/MAT.py, MAT() built at 512 and load_state_dict), any other goes to spandrel's ModelLoader
  (LaMa: LaMaArch.load builds LaMa(in_nc=4, out_nc=3) for big-lama). Both are float32 modules whatever the file
  holds (MAT_Places512_G_fp16 is copied into float32 parameters); the node moves the model to the GPU itself
  (:563) and back to the CPU after the batch (:587).
- Sizes (full-size builds, bench/trace_vision.py param_bytes, parameters + buffers at float32): LaMa 204,229,324
  bytes (big-lama.pt is that state dict); MAT 250,450,732 bytes.

Working memory (InpaintWithModel.execute, nodes.py:540-590): one image at a time, padded square and resized ON THE
CPU to the model's own size (util.py:61-80 resize_square: LaMa 256, MAT 512), then the image and its mask on the GPU
as float32 and one forward; the result goes back to the CPU. So the GPU peak is a CONSTANT per model, whatever the
image's size or the batch. TRACED with the models' own code (bench/trace_vision.py ``lama`` / ``mat``, 2026-12-06:
full size, float32, fake CUDA tensors, the inputs included): LaMa 45,089,792 bytes at 256 x 256, MAT 1,062,937,824
bytes at 512 x 512. Not traced: cuFFT's plan workspace for LaMa's Fourier units (the allocator calibration covers
transients) and an optional upscale model run on the result (priced as not estimated).
"""
from __future__ import annotations

import re

from ._spec import DIFFUSION, Family, _r

ORDER = 176  # "lama" / "mat" / "places_512" share no pattern with another family's name rules

P_LAMA = 204_229_324 // 4  # LaMa(in_nc=4, out_nc=3) parameters + buffers (float32 bytes / 4)
P_MAT = 250_450_732 // 4  # MAT() parameters + buffers

TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-06: {model}, full size, float32, fake CUDA tensors, "
                "INPAINT_InpaintWithModel's forward of one image at {size}×{size} (nodes.py:566-573)")
SIZE = {"lama": 256, "mat-inpaint": 512}  # nodes.py InpaintWithModel.execute: required_size
TRACE = {"lama": 45_089_792, "mat-inpaint": 1_062_937_824}  # peak bytes, the image and mask included
MODEL_CODE = {"lama": "spandrel 0.4.2's LaMa", "mat-inpaint": "comfyui-inpaint-nodes' own MAT (mat/arch/MAT.py)"}

FAMILIES = {
    # no hidden_size on purpose: the DiT formula must never price these CNN / GAN inpainters (the trace does)
    # fixed_precision: the loader builds float32 modules itself: no lower-precision file or option changes that
    "lama": Family(DIFFUSION, "LaMa inpainting (big-lama)", dict(fixed_precision=True)),
    "mat-inpaint": Family(DIFFUSION, "MAT inpainting (Places 512)", dict(fixed_precision=True)),
}

LAMA_PATTERN = r"(^|[^a-z])(big[_-]?)?lama([^a-z]|$)"
MAT_PATTERN = r"(^|[^a-z])mat[_-]|places[_-]?512"

NAME_RULES = {
    DIFFUSION: (
        _r(LAMA_PATTERN, "lama", "LaMa inpainting (big-lama)", P_LAMA,
           "LaMa(in_nc=4, out_nc=3), what spandrel builds for big-lama: 204,229,324 bytes at float32 "
           "(families/inpaint_models.py)"),
        _r(MAT_PATTERN, "mat-inpaint", "MAT inpainting (Places 512)", P_MAT,
           "MAT() at 512, the pack's own build: 250,450,732 bytes at float32 (families/inpaint_models.py)"),
    ),
}


def family_of(name: str) -> tuple[str | None, str]:
    """lama / mat-inpaint from a file name, or None and why it is not priced."""
    n = (name or "").lower()
    if re.search(MAT_PATTERN, n):
        return "mat-inpaint", ""
    if re.search(LAMA_PATTERN, n):
        return "lama", ""
    return None, (f"which model '{name}' is (MAT or LaMa: the loader tells them apart by the file's keys, nodes.py:"
                  "528-531) is not known from its name")
