"""BiRefNet background removal (ComfyUI 0.33.0: comfy/bg_removal_model.py, comfy/background_removal/birefnet.py,
comfy_extras/nodes_bg_removal.py), loaded by LoadBackgroundRemovalModel from models/background_removal.

- Detection (bg_removal_model.py:61-63): ``bb.layers.1.blocks.0.attn.relative_position_index`` selects BiRefNet with
  background_removal/birefnet.json (image_size 1024, mean 0 / std 1); BackgroundRemovalModel (:17-33) builds it on
  text_encoder_device with text_encoder_dtype (fp16 on a GPU, model_management.py:1217-1232) and comfy.ops.manual_cast.
- BiRefNet (birefnet.py:528-571): a Swin-L backbone (embed 192, depths 2/2/18/2, window 12) run at the input's size
  and at half of it (forward_enc, :543-562), a squeeze block and a decoder with gradient attention.
- Size: the trace builds it at full size: 444,386,812 bytes of fp16 parameters and buffers (bench/trace_vision.py
  param_bytes) = 423.8 MiB, the published birefnet.safetensors' "423.9 MB" (binary units).

Working memory (RemoveBackground -> encode_image, bg_removal_model.py:43-58): the whole batch moved to the GPU as
float32 (:45), clip_preprocess to 1024 x 1024 (comfy/clip_model.py:6-23, crop=False), then ONE image at a time
through the model (:47-51) with float32 activations (manual_cast casts the fp16 weights to the float32 input), the
outputs concatenated, resized back to H x W (bicubic, :54) and a sigmoid (:56) before the mask leaves for the CPU.
TRACED with ComfyUI 0.33.0's own code (bench/trace_vision.py ``birefnet@WxH*B``, 2026-12-03: full size, fake CUDA
tensors, the node's sequence line by line; host tensors not counted). Two phases, each reproducing the traces:
- the forward of image 1 of B: BIREFNET_FORWARD (one 1024 x 1024 image through the model, peak in the decoder's cat)
  + (B - 1) x 16 MiB (every image's 3 x 1024^2 float32 input and the earlier images' 1024^2 float32 outputs kept
  for the cat) -- exact at B = 1, 2, 4, 8, 24, 64 and at 512^2 .. 7680 x 4320 (the input's size does not enter);
- the preprocess: the float32 batch at its own size (12 bytes a pixel) with its 1024 x 1024 resize (12 MiB an
  image) -- exact at 3840 x 2160 x 24 and x 64 (peak in the antialiased bicubic resize).
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 174  # "birefnet" shares no pattern with another family's name rules

BIREFNET_SIZE = 1024  # background_removal/birefnet.json image_size
P_BIREFNET = 444_386_812 // 2  # fp16 parameters + buffers of the full-size model (the module docstring)

BIREFNET_TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-03: ComfyUI 0.33.0's BiRefNet, full size, "
                         "fp16 weights with float32 activations, fake CUDA tensors, RemoveBackground's GPU work "
                         "(bg_removal_model.py:43-58)")
BIREFNET_FORWARD = 2_462_994_432  # one 1024 x 1024 image (its float32 input included)
BIREFNET_PER_EXTRA_IMAGE = (3 + 1) * BIREFNET_SIZE ** 2 * 4  # each further image's input + output kept (16 MiB)
PREPROCESS_PER_PIXEL = 3 * 4  # the float32 RGB batch on the GPU (bg_removal_model.py:45)
PREPROCESS_PER_IMAGE = 3 * BIREFNET_SIZE ** 2 * 4  # its resize to 1024 x 1024 (clip_model.py:18)
PREPROCESS_FIXED = 2 * 3 * 4  # the float32 mean / std (clip_model.py:8-9)
# (width, height, images) -> traced peak bytes (bench/trace_vision.py birefnet@WxH*B)
BIREFNET_TRACE = {
    (1024, 1024, 1): 2_462_994_432, (512, 512, 1): 2_462_994_432, (1920, 1080, 1): 2_462_994_432,
    (3840, 2160, 1): 2_462_994_432, (1024, 1024, 2): 2_479_771_648, (1024, 1024, 4): 2_513_326_080,
    (3840, 2160, 8): 2_580_434_944, (3840, 2160, 24): 2_848_870_400, (7680, 4320, 4): 2_513_326_080,
    (3840, 2160, 64): 7_175_405_592,
}

FAMILIES = {
    # no hidden_size on purpose: the DiT formula must never price it (its working memory is the trace);
    # fixed_precision: BackgroundRemovalModel picks text_encoder_dtype itself (bg_removal_model.py:31), no weight_dtype
    "birefnet": Family(DIFFUSION, "BiRefNet background removal (Swin-L)", dict(image_size=BIREFNET_SIZE,
                                                                               fixed_precision=True)),
}

NAME_RULES = {
    DIFFUSION: (_r(r"birefnet", "birefnet", "BiRefNet background removal (Swin-L)", P_BIREFNET,
                   "the full-size model ComfyUI 0.33.0 builds: 444,386,812 bytes at fp16 (families/birefnet.py)"),),
}


def phases(width: int, height: int, images: int = 1) -> list[tuple[str, int]]:
    """RemoveBackground's GPU phases for ``images`` images of width x height: [(what, bytes)]; the peak is the
    largest."""
    b = max(1, int(images))
    hw = int(width) * int(height)
    out = [("the model's forward, one image at a time", BIREFNET_FORWARD + (b - 1) * BIREFNET_PER_EXTRA_IMAGE)]
    if (width, height) != (BIREFNET_SIZE, BIREFNET_SIZE):
        out.append(("the batch on the GPU resized to 1024×1024",
                    b * (hw * PREPROCESS_PER_PIXEL + PREPROCESS_PER_IMAGE) + PREPROCESS_FIXED))
    return out


def peak(width: int, height: int, images: int = 1) -> int:
    return max(n for _, n in phases(width, height, images))
