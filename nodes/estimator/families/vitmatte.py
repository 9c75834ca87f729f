"""ViTMatte (hustvl), as ComfyUI_LayerStyle(_Advance) runs it for a mask's edges (py/imagefunc.py at 7b678b4,
generate_VITMatte :1583-1625): transformers' VitMatteForImageMatting from the Hugging Face repository
hustvl/vitmatte-small-composition-1k (detail_method "VITMatte" / "VITMatte(local)") or -base- ("vitmatte-base-
composition-1k"), loaded on every call, ``.to(device)`` (the node's device widget, "cuda" by default), freed after.

- Weights: float32. The architecture is transformers' conversion script's (models/vitmatte/convert_vitmatte_to_hf.py
  get_config at 05e0375: ViTDet with 4 input channels, image and trimap; window attention of 14 on blocks 0, 1, 3, 4,
  6, 7, 9, 10, global attention with decomposed relative positions on blocks 2, 5, 8, 11), at ViT-S width (384, 6
  heads) for small and ViT-B (768, 12 heads) for base: parameters and buffers 103,265,732 / 386,752,964 bytes
  (the published 103 MB / 387 MB model.safetensors). Counted by bench/trace_vision.py ``vitmatte-small@WxH``.
- Working memory: the image is resized to at most ``max_megapixels`` x 1,048,576 pixels and padded to a multiple of
  32 (VitMatteImageProcessor); T = the padded pixels / 256 tokens. The global blocks keep three float32 score
  tensors of heads x T x T (the scores, the relative positions added, the softmax): 12 x heads bytes a token pair.
  TRACED with transformers' own model code (5.25.0, ComfyUI 0.33.0's interpreter, full size, float32, fake CUDA
  tensors, 2026-12-06) at 1024 x 1024, 2048 x 1024 and 2048 x 2048 (peak at block 11's relative-position add), the
  quadratic through them: small 72.0625 T^2 + 34,816 T - 12,582,912 bytes, base 144.1875 T^2 + 64,000 T -
  20,971,520; checked against traces not used for it: small at 1024 x 768, 1440 x 1440, 1952 x 1088 (-0.3 %,
  +0.1 %, +0.0 %), base at 1024 x 768 and 1440 x 1440 (-0.2 %, +0.1 %). Below about 3,000 tokens the decoder's
  full-resolution convolutions peak instead: 954 / 960 bytes a pixel (traced at 512 x 512), the larger is taken.
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, Family, _r

ORDER = 194  # "vitmatte" shares no pattern with another family's name rules

SMALL, BASE = "vitmatte-small", "vitmatte-base"
HF_REPO = {SMALL: "hustvl/vitmatte-small-composition-1k", BASE: "hustvl/vitmatte-base-composition-1k"}
PARAM_BYTES = {SMALL: 103_265_732, BASE: 386_752_964}
# (T^2, T, 1) coefficients of the global-attention peak in bytes, and the decoder's bytes a padded pixel
QUADRATIC = {SMALL: (72.0625, 34_816, -12_582_912), BASE: (144.1875, 64_000, -20_971_520)}
DECODER_BYTES_PER_PIXEL = {SMALL: 954, BASE: 960}
PAD = 32  # VitMatteImageProcessor size_divisor
TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-06: transformers' VitMatteForImageMatting at "
                "{repo}'s configuration, full size, float32, fake CUDA tensors, at 1024×1024, 2048×1024 and "
                "2048×2048, checked at three more sizes (families/vitmatte.py)")

FAMILIES = {  # no hidden_size on purpose: the DiT formula must never price these (the trace does)
    SMALL: Family(DIFFUSION, "ViTMatte-S", dict(fixed_precision=True)),
    BASE: Family(DIFFUSION, "ViTMatte-B", dict(fixed_precision=True)),
}

NAME_RULES = {
    DIFFUSION: tuple(
        _r(rf"vitmatte[_-]{f[9:]}", f, FAMILIES[f].label, PARAM_BYTES[f] // 4,
           f"transformers' VitMatteForImageMatting at {HF_REPO[f]}'s configuration: {PARAM_BYTES[f]:,} bytes at "
           "float32 (families/vitmatte.py)") for f in (SMALL, BASE)),
}


def model_input(width: int, height: int, max_megapixels: float) -> tuple[int, int]:
    """The padded size the network sees: generate_VITMatte's resize to at most max_megapixels (keeping the
    aspect, int() of each side), then the processor's pad to a multiple of 32."""
    limit = max_megapixels * 1_048_576
    if width * height > limit:
        ratio = width / height
        width = int(math.sqrt(ratio * limit))
        height = int(width / ratio)
    return -(-width // PAD) * PAD, -(-height // PAD) * PAD


def working_bytes(family: str, width: int, height: int) -> int:
    """The network's peak above its weights for a padded input of width x height (model_input)."""
    tokens = width * height / 256
    a, b, c = QUADRATIC[family]
    return int(max(a * tokens * tokens + b * tokens + c, DECODER_BYTES_PER_PIXEL[family] * width * height))
