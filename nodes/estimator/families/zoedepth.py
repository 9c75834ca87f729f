"""ZoeDepth NK as comfyui_controlnet_aux runs it (src/custom_controlnet_aux/zoe/transformers.py at e8b689a): the
Zoe-DepthMapPreprocessor and Zoe_DepthAnythingPreprocessor nodes build transformers' depth-estimation pipeline on
Intel/zoedepth-nyu-kitti and move its model to ``model_management.get_torch_device()``, outside ComfyUI's model
management and model folders.

- Weights: float32. transformers' conversion script (models/zoedepth/convert_zoedepth_to_hf.py,
  get_zoedepth_config("ZoeD_NK"): a BEiT-L/16 backbone at 384, neck 256/512/1024/1024, two 64-bin domains and a
  4-layer patch transformer): 345,073,307 parameters and 130 buffer values, 1,380,294,268 bytes. Counted by
  bench/trace_vision.py ``zoe@WxH``.
- Input: the detect map (the image scaled to ``resolution`` on its short side, padded to multiples of 64), reflect
  padded by int(sqrt(side / 2) * 3) on each side and resized toward 384 x 512 keeping its aspect, scaling as little
  as possible (ZoeDepthImageProcessor): 512 x 512 for a square map, 384 high and wider for a wide one.
- Working memory: TRACED with transformers' own model code (5.25.0, ComfyUI 0.33.0's interpreter, full size,
  float32, fake CUDA tensors, 2026-12-06; ``zoe@WxH``) at the inputs of six detect maps from 512 x 512 to
  1024 x 4096 (512 x 512, 688 x 384, 676 x 384, 743 x 384, 1448 x 384, 512 x 1930): the peak is the metric head's
  binomial MLP at the input's resolution, 2,447.6 to 2,526.5 bytes per model-input pixel. Priced at the largest
  ratio, 2,527 bytes a pixel. The pipeline moves the outputs to the CPU before post-processing.
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, Family, _r

ORDER = 193  # "zoedepth" shares no pattern with another family's name rules

FAMILY = "zoedepth-nk"
P_ZOEDEPTH_NK = 345_073_307 + 130  # parameters and buffers, all float32
BYTES_PER_INPUT_PIXEL = 2_527  # the traces' largest ratio (688 x 384 input: 667,482,640 bytes)
HF_REPO = "Intel/zoedepth-nyu-kitti"
TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-06: transformers' ZoeDepthForDepthEstimation at "
                "Intel/zoedepth-nyu-kitti's configuration, full size, float32, fake CUDA tensors, at six input sizes")

FAMILIES = {FAMILY: Family(DIFFUSION, "ZoeDepth NK", dict(fixed_precision=True))}  # no hidden_size: never the DiT rule

NAME_RULES = {
    DIFFUSION: (
        _r(r"zoedepth", FAMILY, "ZoeDepth NK", P_ZOEDEPTH_NK,
           "transformers' conversion of ZoeD_NK: 1,380,294,268 bytes at float32 (families/zoedepth.py)"),
    ),
}


def model_input(width: int, height: int) -> tuple[int, int]:
    """ZoeDepthImageProcessor's pixel size (W, H) for a W x H detect map (image_processing_zoedepth.py)."""
    h = height + 2 * int(math.sqrt(height / 2) * 3)
    w = width + 2 * int(math.sqrt(width / 2) * 3)
    sh, sw = 384 / h, 512 / w
    if abs(1 - sw) < abs(1 - sh):
        sh = sw
    else:
        sw = sh
    return int(round(sw * w)), int(round(sh * h))


def working_bytes(map_width: int, map_height: int) -> int:
    w, h = model_input(map_width, map_height)
    return BYTES_PER_INPUT_PIXEL * w * h
