"""HiDream-O1-Image (ComfyUI 0.33.0's HiDreamO1): a pixel-space DiT built on Qwen3-VL-8B. It is NOT HiDream-I1
(families/hidream.py): the Qwen3-VL text decoder runs as the denoiser over one sequence of prompt tokens and raw
32x32 RGB patches of the image, and its all-in-one checkpoint has no VAE (pixel space) and no text-encoder
weights (the "CLIP" is a tokenizer).

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:815-816: keys `t_embedder1.mlp.0.weight` + `x_embedder.proj1.weight` select it.
- comfy/supported_models.py:1679-1721 (HiDreamO1): latent_formats.HiDreamO1Pixel (pixel space, 3 channels),
  memory_usage_factor 0.033 (:1690), bf16 / fp32 only; process_vae_state_dict (:1709-1711) swaps the VAE for
  the pixel-space one, process_clip_state_dict (:1713-1715) leaves the text encoder a tokenizer only
  (comfy/text_encoders/hidream_o1.py: "tokenizer-only text encoder"; the Qwen3-VL backbone runs inside
  diffusion_model every step).
- comfy/ldm/hidream_o1/model.py:30-70 (HiDreamO1TextConfig: hidden 4096, FFN 12288, 36 layers, 32 heads of 128,
  8 KV heads; vision tower 27 x 1152), :27 (PATCH_SIZE 32), :113-118 (32x32 RGB patch -> 1024 -> 4096).
- comfy_extras/nodes_hidream_o1.py:34-40 (EmptyHiDreamO1LatentImage: zeros [B, 3, H, W]).

Its sampling working memory is traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033, data/working_memory.json "hidream-o1":
model_base.py:2312-2344 -> conditioning.py build_extra_conds), 6 points, fit within 0.011 %; the other prompt's
saved K/V when cond and uncond run apart is not in it. The prompt and the
image patches are one sequence in the LLM (model.py:193-194): image tokens (H/32 x W/32) plus the text tokens.
"""
from __future__ import annotations

from ._spec import DIFFUSION, TEXT_ENCODER, VAE, Family, Found, _r, Detector

# HiDream-I1's rule (families/hidream.py, ORDER 120) must not take "hidream_o1_*": this module's rules are tried
# first (a lower ORDER); hidream.py's pattern also refuses an "o1" after "hidream".
ORDER = 119

# The published bf16 checkpoint (Comfy-Org/HiDream-O1-Image checkpoints/hidream_o1_image_bf16.safetensors,
# 16,363,825,398 bytes in data/template_models.json) / 2 bytes a parameter. It also holds the Qwen3-VL deepstack
# merger weights ComfyUI drops at load (supported_models.py:1702-1707), so this is a little above what is loaded.
P_HIDREAM_O1 = 16_363_825_398 // 2

FAMILIES = {
    "hidream-o1": Family(DIFFUSION, "HiDream-O1-Image (8B, pixel space)", dict(
        hidden_size=4096, depth=36, heads=32, head_dim=128, kv_heads=8, ffn_dim=12288, in_channels=3,
        out_channels=3, patch_size=(32, 32), context_dim=4096, latent_channels=3, spatial_compression=1)),
}

# supported_models.py:1690 (0.33.0)
MEMORY_USAGE_FACTOR = {"hidream-o1": 0.033}

# The prompt in its chat template, unpadded (text_encoders/hidream_o1.py: pad_to_max_length False): a 256-token
# templated prompt assumed, as for the other LLM-conditioned families (Z-Image, Lumina 2, ERNIE-Image)
TEXT_TOKENS = {"hidream-o1": 256}

# The all-in-one checkpoint (CheckpointLoaderSimple): the whole file is the diffusion model; its "CLIP" is the
# tokenizer-only HiDreamO1TE (no weights) and its "VAE" the pixel-space identity (sd.py PixelspaceConversionVAE)
CHECKPOINT_SPLITS = {
    "hidream-o1": {"model": (P_HIDREAM_O1, DIFFUSION, "hidream-o1", "HiDream-O1-Image DiT"),
                   "clip": (0, TEXT_ENCODER, "hidream-o1-tokenizer", "HiDream-O1 tokenizer (no weights)"),
                   "vae": (0, VAE, "vae-pixel", "pixel space (no VAE: decode is the identity)")},
}

NAME_RULES = {
    DIFFUSION: (
        _r(r"hidream[_-]?o1", "hidream-o1", "HiDream-O1-Image (8B, pixel space)", P_HIDREAM_O1,
           "catalogue P_HIDREAM_O1 (the published bf16 checkpoint / 2)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:815: `t_embedder1.mlp.0.weight` + `x_embedder.proj1.weight` select HiDreamO1 (its config
    is the class defaults); the file's shapes give the width, FFN and depth of the Qwen3-VL decoder."""
    arch = dict(FAMILIES["hidream-o1"].arch)
    proj2 = v.shape("x_embedder.proj2.weight")
    if proj2 and len(proj2) == 2:
        arch.update(hidden_size=int(proj2[0]), heads=max(1, int(proj2[0]) // 128))
    up = v.shape("language_model.layers.0.mlp.up_proj.weight")
    if up and len(up) == 2:
        arch["ffn_dim"] = int(up[0])
    arch["depth"] = v.count_blocks("language_model.layers.") or 36
    return Found("hidream-o1", arch, ("keys t_embedder1.mlp.0.weight + x_embedder.proj1.weight (HiDream-O1, "
                                      "model_detection.py:815)",))


DETECT = {
    DIFFUSION: (Detector((("t_embedder1.mlp.0.weight", "x_embedder.proj1.weight",),), _read),),
}
