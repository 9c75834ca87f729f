"""MoGe (ComfyUI 0.33.0: comfy/ldm/moge/model.py, modules.py, panorama.py; comfy_extras/nodes_moge.py): monocular
geometry (point map, depth, mask, normals) from one image: a DINOv2 ViT encoder + a convolutional head.

- Loading (nodes_moge.py:78-81 LoadMoGeModel -> MoGeModel, model.py:270-280): the file is read from
  models/geometry_estimation; v2 when the keys start "encoder.backbone." (model.py:263), else v1. The DINOv2 width is
  the cls token's (model.py:34), depth the block count (model.py:36), heads width / 64, plain MLP FFN
  (use_swiglu_ffn False, model.py:42; Dinov2MLP mlp_ratio 4, comfy/image_encoders/dino2.py:72-73), patch 14,
  no register tokens (dino2.py:312). Device and dtype: the text encoder's (model.py:271-273), 16-bit on a GPU.
- Token count (MoGeModel.infer, model.py:293-295): num_tokens = int(lo + resolution_level / 9 * (hi - lo)) with
  num_tokens_range (1200, 3600) for v2 (model.py:107), (1200, 2500) for v1 (model.py:53). v2 (model.py:129-133)
  runs the ViT on round(sqrt(n / aspect)) x round(sqrt(n * aspect)) patches (the product is ~n for any aspect);
  plus the cls token.
- Head, v2 (model.py:135-153): a 5-level pyramid from base to 16 x base (each level gets a 2-channel UV grid,
  model.py:136-137), neck + per-output ConvStacks whose last level has 3 (points), 1 (mask), 3 (normal) channels at
  16 x base, then resized to the input's H x W. The neck's / heads' channel widths are read from the file
  (model.py:183-205): not known here, not counted.
- Sizes: the template's 'Model Links' (data/template_models.json): moge_2_vitl_normal_fp16 661,861,171 bytes,
  moge_3_vitg_fp16 2,501,818,450 bytes, moge_3_vitl_fp16 740,609,229 bytes, moge_1_vitl_fp16 628,411,597 bytes;
  fp16 files: parameters = bytes / 2. ComfyUI 0.33 builds MoGe 3 files with the v2 class (model.py:263: any
  "encoder.backbone." key), so MoGe 3 takes v2's token range and head.
  ViT-L (width 1024, 24 blocks, 12 x 1024^2 per block = 302 M) and ViT-g with a plain 4x MLP (width 1536,
  40 blocks, 1,133 M) agree with those sizes plus a head of tens of millions.
"""
from __future__ import annotations

import re

from ._spec import DIFFUSION, Family, _r

ORDER = 181  # "moge" shares no pattern with another family's name rules

PATCH = 14  # model.py:69 / modules.py:138 (14-pixel patches)
NUM_TOKENS_RANGE = {"moge-v1": (1200, 2500), "moge-v2": (1200, 3600)}  # model.py:53, :107
INTERMEDIATE_LAYERS = 4  # model.py:52, :106 (features kept: dino2.py:360-364 caches each selected layer)
V2_HEAD_LEVELS = 5  # model.py:136-137 (base x 2^L, L = 0..4)
V2_OUTPUT_CHANNELS = 3 + 1 + 3  # points, mask, normal (model.py:145-152)
V1_HEAD_LAST_CHANNELS = 128 + 2  # HeadV1 dim_upsample default (256, 128, 128) + UV (modules.py:158, :201-203)

P_MOGE2_VITL = 661_861_171 // 2  # published fp16 file / 2
P_MOGE3_VITG = 2_501_818_450 // 2
P_MOGE3_VITL = 740_609_229 // 2
P_MOGE1_VITL = 628_411_597 // 2

_VITL = dict(hidden_size=1024, depth=24, heads=16, ffn_dim=4096, patch_size=(PATCH, PATCH))
_VITG = dict(hidden_size=1536, depth=40, heads=24, ffn_dim=6144, patch_size=(PATCH, PATCH))

FAMILIES = {
    "moge-v2": Family(DIFFUSION, "MoGe 2 (DINOv2 ViT-L + conv head)", dict(_VITL, version=2)),
    "moge-v2-vitg": Family(DIFFUSION, "MoGe 3 ViT-g (DINOv2 ViT-g + conv head, run as v2)", dict(_VITG, version=2)),
    "moge-v1": Family(DIFFUSION, "MoGe 1 (DINOv2 ViT-L + conv head)", dict(_VITL, version=1)),
}

NAME_RULES = {
    DIFFUSION: (
        _r(r"moge[_-]?3[_-]?vitg", "moge-v2-vitg", "MoGe 3 ViT-g", P_MOGE3_VITG,
           "published fp16 file 2,501,818,450 bytes / 2 (families/moge.py)"),
        _r(r"moge[_-]?3[_-]?vitl", "moge-v2", "MoGe 3 ViT-L", P_MOGE3_VITL,
           "published fp16 file 740,609,229 bytes / 2 (families/moge.py)"),
        _r(r"moge[_-]?2[_-]?vit", "moge-v2", "MoGe 2 ViT-L", P_MOGE2_VITL,
           "published fp16 file 661,861,171 bytes / 2 (families/moge.py)"),
        _r(r"moge[_-]?1", "moge-v1", "MoGe 1 ViT-L", P_MOGE1_VITL,
           "published fp16 file 628,411,597 bytes / 2 (families/moge.py)"),
    ),
}


def family_of(name: str) -> str:
    """The family a LoadMoGeModel file name selects, by the NAME_RULES above (MoGe 2 ViT-L when none matches: the
    templates' default file)."""
    for rule in NAME_RULES[DIFFUSION]:
        if re.search(rule.pattern, name or "", re.I):
            return rule.family
    return "moge-v2"


# MoGeModel.infer's tensors at the input's own H x W, per image (bytes per pixel): the float32 input copy
# (model.py:289, 3 x 4), the head's points / mask / normal resized to H x W in 16 bit (model.py:142-152, 7 x 2) and
# the float32 points (model.py:298, 3 x 4)
INPUT_SIZE_BYTES_PER_PIXEL = 3 * 4 + 7 * 2 + 3 * 4


def num_tokens(version: int, resolution_level: int) -> int:
    """MoGeModel.infer (model.py:293-295)."""
    lo, hi = NUM_TOKENS_RANGE["moge-v2" if version == 2 else "moge-v1"]
    return int(lo + (resolution_level / 9) * (hi - lo))


def patch_grid(version: int, n: int, aspect: float = 1.0) -> tuple[int, int]:
    """(rows, cols) of ViT patches: v2 model.py:130-131; v1 model.py:69-73 (resize to n * 14^2 px, floor to /14)."""
    if version == 2:
        return round((n / aspect) ** 0.5), round((n * aspect) ** 0.5)
    h = (n * PATCH ** 2 / aspect) ** 0.5
    w = (n * PATCH ** 2 * aspect) ** 0.5
    return int(h) // PATCH, int(w) // PATCH


def vit_working_bytes(tokens: int, width: int, ffn: int, batch: int = 1, dtype_bytes: int = 2) -> int:
    """One block's activations (memory.text_encoder_working's tokens x (6 x width + 2 x FFN)) plus the 4 selected
    layers' normed outputs the encoder keeps (dino2.py:360-364), per image."""
    return batch * tokens * ((6 * width + 2 * ffn) + INTERMEDIATE_LAYERS * width) * dtype_bytes


def head_working_bytes(version: int, rows: int, cols: int, batch: int = 1, dtype_bytes: int = 2) -> int:
    """The head's largest maps whose channel counts the code fixes: v2, the 16 x base level's UV grid and the 3 + 1 + 3
    output channels (model.py:136-152); v1, HeadV1's last 130-channel map at 14 x (rows x cols) px (modules.py:201-203)."""
    if version == 2:
        side = 2 ** (V2_HEAD_LEVELS - 1)
        return batch * (rows * side) * (cols * side) * (2 + V2_OUTPUT_CHANNELS) * dtype_bytes
    return batch * (rows * PATCH) * (cols * PATCH) * V1_HEAD_LAST_CHANNELS * dtype_bytes
