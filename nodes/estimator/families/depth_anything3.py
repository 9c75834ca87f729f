"""Depth Anything 3 (ComfyUI 0.33.0: comfy/ldm/depth_anything_3/model.py, dpt.py, preprocess.py;
comfy_extras/nodes_depth_anything_3.py): monocular / multi-view depth from a DINOv2 ViT + a DPT head.

- Loading (nodes_depth_anything_3.py:154-165 LoadDA3Model): comfy.sd.load_diffusion_model of a file in
  models/geometry_estimation; model_detection.py:1024-1100 reads the backbone from the patch-embed width
  (384/768/1024/1536 -> vits/vitb/vitl/vitg), the head (DPT, or DualDPT when the aux refinenet is present);
  supported_models.py:2299-2310 (DepthAnything3, fp16 / bf16 / fp32 inference).
- Backbone presets (model.py:23-28): vits 384 x 12, vitb 768 x 12, vitl 1024 x 24 (16 heads), plain MLP FFN x 4
  (dino2.py:72-73) for all but vitg; patch 14 (model.py:59), cls token only (dino2.py:312: no registers).
- Mono inference (_run_da3, nodes_depth_anything_3.py:168-209): ONE image per forward (:179-184, image[i:i+1]),
  resized by preprocess.compute_target_size (preprocess.py:24-39): upper_bound_resize scales the longest side to
  `resolution` (default 504, nodes_depth_anything_3.py:224), lower_bound_resize the shortest; each side rounded to
  a multiple of 14.
- DPT head (dpt.py:168-300): four projected layers (out_layers [4, 11, 17, 23] for a vitl DPT file,
  model_detection.py:1088-1089), refinenets up to 8x the patch grid, then output_conv1 (features -> features / 2,
  dpt.py:228-229) interpolated to the processed image's full size (down_ratio 1, dpt.py:181, :272-276) and
  output_conv2 / sky_output_conv2 (32 channels, dpt.py:227, :233, :240) there: the largest maps. `features` is read
  from the file (model_detection.py:1063); 256 is the class default (model.py:74), assumed here.
- Sizes (data/template_models.json 'Model Links'): depth_anything_3_mono_large / metric_large 1,331,439,862 bytes,
  base 541,484,646, small 137,258,598: fp32 files (ViT-L is 304 M parameters; 1.33 GB / 2 bytes would be 666 M,
  twice the backbone), so parameters = bytes / 4.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 182  # "depth_anything_3" shares no pattern with another family's name rules

PATCH = 14  # model.py:59, preprocess.py:11
KEPT_LAYERS = 4  # out_layers (model.py:65, model_detection.py:1084-1092)
HEAD_FEATURES = 256  # model.py:74 default (the file's value is read at load, model_detection.py:1063)
HEAD_CONV2 = 32  # dpt.py:227

# _run_da3's tensors at the input's own H x W (bytes per pixel): the float32 image moved to the GPU
# (nodes_depth_anything_3.py:180, 3 x 4) and one float32 map interpolated back to H x W at a time (:186-204, 4)
INPUT_SIZE_BYTES_PER_PIXEL = 3 * 4 + 4

P_DA3_LARGE = 1_331_439_862 // 4  # published fp32 file / 4
P_DA3_BASE = 541_484_646 // 4
P_DA3_SMALL = 137_258_598 // 4

FAMILIES = {
    "da3-large": Family(DIFFUSION, "Depth Anything 3 ViT-L (DPT head)",
                        dict(hidden_size=1024, depth=24, heads=16, ffn_dim=4096, patch_size=(PATCH, PATCH))),
    "da3-base": Family(DIFFUSION, "Depth Anything 3 ViT-B",
                       dict(hidden_size=768, depth=12, heads=12, ffn_dim=3072, patch_size=(PATCH, PATCH))),
    "da3-small": Family(DIFFUSION, "Depth Anything 3 ViT-S",
                        dict(hidden_size=384, depth=12, heads=6, ffn_dim=1536, patch_size=(PATCH, PATCH))),
}

NAME_RULES = {
    DIFFUSION: (
        _r(r"depth[_-]?anything[_-]?(v?3|da3).*large", "da3-large", "Depth Anything 3 Large", P_DA3_LARGE,
           "published fp32 file 1,331,439,862 bytes / 4 (families/depth_anything3.py)"),
        _r(r"depth[_-]?anything[_-]?(v?3|da3).*base", "da3-base", "Depth Anything 3 Base", P_DA3_BASE,
           "published fp32 file 541,484,646 bytes / 4 (families/depth_anything3.py)"),
        _r(r"depth[_-]?anything[_-]?(v?3|da3).*small", "da3-small", "Depth Anything 3 Small", P_DA3_SMALL,
           "published fp32 file 137,258,598 bytes / 4 (families/depth_anything3.py)"),
    ),
}


def _round14(x: int) -> int:
    """preprocess._round_to_patch (preprocess.py:18-22): the nearer multiple of 14."""
    down = (x // PATCH) * PATCH
    up = down + PATCH
    return up if abs(up - x) <= abs(x - down) else down


def target_size(h: int, w: int, resolution: int, method: str) -> tuple[int, int]:
    """preprocess.compute_target_size (preprocess.py:24-39): (height, width) of the processed image."""
    scale = resolution / float(max(h, w) if method == "upper_bound_resize" else min(h, w))
    return max(1, _round14(int(round(h * scale)))), max(1, _round14(int(round(w * scale))))


def vit_working_bytes(tokens: int, width: int, ffn: int, dtype_bytes: int = 2) -> int:
    """One block's activations (tokens x (6 x width + 2 x FFN), memory.text_encoder_working's formula) plus the four
    out_layers outputs kept for the head (dino2.py get_intermediate_layers caches)."""
    return tokens * ((6 * width + 2 * ffn) + KEPT_LAYERS * width) * dtype_bytes


def head_working_bytes(h: int, w: int, dtype_bytes: int = 2) -> int:
    """DPT's maps at the processed image's size (dpt.py:272-296): output_conv1's features / 2 channels interpolated to
    h x w, and the two 32-channel output_conv2 / sky hidden maps."""
    return h * w * (HEAD_FEATURES // 2 + 2 * HEAD_CONV2) * dtype_bytes
