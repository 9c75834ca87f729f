"""Depth Anything V2 as kijai/ComfyUI-DepthAnythingV2 runs it (nodes.py, depth_anything_v2/dpt.py at 5531878):
a DINOv2 ViT and a DPT head, the design Depth Anything 3 keeps (families/depth_anything3.py).

- Encoders (nodes.py model_configs): vits 384 x 12 (head features 64), vitb 768 x 12 (128), vitl 1024 x 24 (256),
  vitg 1536 x 40 (384); MLP x 4 (vitg: SwiGLU, priced at x 4 too). Parameters: the Depth Anything V2 model card's
  24.8M / 97.5M / 335.3M / 1.3B.
- Files: models/depthanything/depth_anything_v2_<encoder>[_metric_...]_<fp16|fp32>.safetensors (Kijai/
  DepthAnythingV2-safetensors). DepthAnythingV2(...) builds fp32 modules and load_state_dict copies the file into
  them, so the weights are fp32 on the GPU whatever the file; an fp16 file or the precision widget only sets the
  autocast dtype of the activations.
"""
from __future__ import annotations

from . import depth_anything3 as DA3
from ._spec import DIFFUSION, Family, _r

ORDER = 183  # "depth_anything_v2" shares no pattern with another family's name rules

ENCODERS = {  # encoder -> (width, depth, heads, head features, parameters)
    "vits": (384, 12, 6, 64, 24_800_000),
    "vitb": (768, 12, 12, 128, 97_500_000),
    "vitl": (1024, 24, 16, 256, 335_300_000),
    "vitg": (1536, 40, 24, 384, 1_300_000_000),
}
_CARD = "the Depth Anything V2 model card (families/depth_anything2.py)"

FAMILIES = {f"da2-{e}": Family(DIFFUSION, f"Depth Anything V2 {e[3:].upper()}",
                               dict(hidden_size=w, depth=d, heads=h, ffn_dim=4 * w, patch_size=(14, 14)))
            for e, (w, d, h, _f, _p) in ENCODERS.items()}

NAME_RULES = {
    DIFFUSION: tuple(
        _r(rf"depth[_-]?anything[_-]?v2.*{e}", f"da2-{e}", f"Depth Anything V2 {e[3:].upper()}", p, _CARD)
        for e, (_w, _d, _h, _f, p) in ENCODERS.items()),
}


def working_bytes(encoder: str, h: int, w: int, dtype_bytes: int) -> tuple[int, int, int]:
    """(tokens, ViT bytes, DPT head bytes) of one h x w input (multiples of 14): Depth Anything 3's first-principles
    formula (the same DINOv2 + DPT design), uncalibrated. The head: output_conv1's features / 2 channels and two
    32-channel maps at the input's size (dpt.py forward)."""
    width, _d, _h, features, _p = ENCODERS[encoder]
    tokens = (h // 14) * (w // 14) + 1
    vit = DA3.vit_working_bytes(tokens, width, 4 * width, dtype_bytes)
    return tokens, vit, h * w * (features // 2 + 2 * DA3.HEAD_CONV2) * dtype_bytes
