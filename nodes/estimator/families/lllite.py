"""ControlNet-LLLite (kohya-ss), as ControlNet-LLLite-ComfyUI (node_control_net_lllite.py at its mirror) loads it:
one small LLLiteModule per patched projection, set as the model's attention patches.

Counted from sd-scripts' networks/control_net_lllite.py (the trainer that writes these files): on the SDXL UNet's
Transformer2D blocks of the input and middle blocks (SKIP_OUTPUT_BLOCKS), the projections of attn1 (to_q, to_k,
to_v) and attn2's to_q (ATTN_QKV_ONLY; attn2's k / v read CLIP and are skipped). SDXL: input blocks 4-5 (640, two
transformer blocks each, depth 2), 7-8 (1280, ten each, depth 3) and the middle block (1280, ten, depth 3): 16 modules
at 640 and 120 at 1280. A module: ``conditioning1`` (a 4x4 stride-4 conv 3 -> c/2, then for depth 2 a 4x4 conv
c/2 -> c, for depth 3 a 4x4 conv c/2 -> c/2 and a 2x2 conv c/2 -> c), ``down`` (in -> m), ``mid`` (m + c -> m) and
``up`` (m -> in), all with bias, where c is the cond_emb_dim and m the mlp_dim the file name gives
(controllllite_v01032064e: version 01, c 32, m 64): 22,969,600 parameters, 45.9 MB in fp16 (kohya-ss/controlnet-lllite's
46 MB files). ComfyUI moves the patch modules with the model (model_patches_to), so they ride on the MODEL.
"""
from __future__ import annotations

from ._spec import LLLITE, Family, _r

ORDER = 192  # "controllllite" shares no pattern with another family's name rules

SDXL_MODULES = ((640, 2, 16), (1280, 3, 120))  # (in features, conditioning depth, modules)


def module_params(in_dim: int, depth: int, cond: int, mlp: int) -> int:
    half = cond // 2
    conditioning = 3 * half * 16 + half
    conditioning += {1: half * cond * 4 + cond, 2: half * cond * 16 + cond,
                     3: half * half * 16 + half + half * cond * 4 + cond}[depth]
    return conditioning + (in_dim * mlp + mlp) + ((mlp + cond) * mlp + mlp) + (mlp * in_dim + in_dim)


def lllite_params(cond: int, mlp: int) -> int:
    return sum(n * module_params(d, depth, cond, mlp) for d, depth, n in SDXL_MODULES)


# the (cond_emb_dim, mlp_dim) pairs of the published files' names (v01032064e, v01008016e) and the trainer's others
SIZES = ((8, 16), (16, 16), (16, 32), (32, 32), (32, 64), (64, 64), (64, 128))

FAMILIES = {"lllite-sdxl": Family(LLLITE, "ControlNet-LLLite (SDXL)", {})}
NAME_RULES = {
    LLLITE: tuple(
        _r(rf"controllllite_v\d\d{c:03d}{m:03d}", "lllite-sdxl", f"ControlNet-LLLite SDXL (cond {c}, mlp {m})",
           lllite_params(c, m), f"families/lllite.py lllite_params({c}, {m}) (sd-scripts' module rules)")
        for c, m in SIZES),
}
