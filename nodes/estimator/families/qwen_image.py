"""Qwen-Image (and FireRed-Image-Edit, its architecture); Qwen-Image 2.1, a different model.

Qwen-Image 2.1 is not in ComfyUI 0.33.0 (the newest tree here); its code is read from newer ComfyUI files
(Comfy-Org/ComfyUI: comfy/ldm/qwen_image21/model.py @b806797 QwenImage21Transformer2DModel, model_detection.py
@0b61ce5 the "Qwen Image 2.1" branch, supported_models.py @01f03bb class QwenImage21, latent_formats.py @75399d7,
sd.py @033046c the VAE branch): a single-stream DiT of 32 blocks, 4096 wide (32 heads of 128), a gated SwiGLU
MLP of 3 x 4096 = 12288, on a 64-channel latent at /16 with no patchify (one token a latent pixel: 4096 at
1024x1024), text from Qwen3-VL-8B (4096 wide) and reference images spliced in as a block-causal prefix whose
K/V it may cache in spare memory only (select_prefix_cache: VRAM when four times the cache is free, else pinned
RAM, else recompute), so the cache adds no peak. Nothing here can trace it (0.33.0 has no such class), so its
sampling working memory is the first-principles formula (memory.py, said as uncalibrated), and its VAE (the Wan
2.2 class, z 64, /16, RGBA, temporal kernel 1) is priced with the memory_used_encode / _decode its sd.py branch
states, said as not traced.
"""
from __future__ import annotations

import math
import re

from ._spec import DIFFUSION, VAE, Family, LORA, _r, Detector, Found, all_families

ORDER = 90  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_QWEN_IMAGE = 20_450_000_000  # 40.9 GB BF16 listing / 2
# Qwen-Image 2.1: the constructor's projections (model.py @b806797: img_in 64x4096, txt_in, the shared modulation
# 4096x16384, 32 blocks of q/k/v/out 4 x 4096^2 + gate_up 4096x24576 + out 12288x4096, proj_out 4096x64, the
# timestep MLP) and norms: 7,115,124,736; the published bf16 file qwen_image_2.1_bf16.safetensors is
# 14,230,280,616 bytes (2 bytes a parameter plus its header)
P_QWEN_IMAGE_21 = 7_115_124_736
# its VAE, bf16: qwen_image_2.1_vae_bf16.safetensors, 675,509,688 bytes / 2
P_QWEN_IMAGE_21_VAE = 675_509_688 // 2


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "qwen-image": Family(DIFFUSION, "Qwen-Image (20B)", dict(
        hidden_size=3072, depth=60, heads=24, head_dim=128, ffn_dim=12288, in_channels=16, out_channels=16,
        patch_size=(2, 2), context_dim=3584, latent_channels=16, spatial_compression=8)),
    # model.py @b806797 L192-229 defaults (= the published transformer/config.json): no patchify (patch 1), SwiGLU
    "qwen-image-2.1": Family(DIFFUSION, "Qwen-Image 2.1 (7.1B)", dict(
        hidden_size=4096, depth=32, heads=32, head_dim=128, ffn_dim=12288, in_channels=64, out_channels=64,
        patch_size=(1, 1), context_dim=4096, latent_channels=64, spatial_compression=16)),
    # sd.py @033046c: vae2_2.WanVAE with z_dim 64, dim_mult [1, 2, 4, 8, 8] (/16), patch_size 1, temporal_kernel 1,
    # image_channels from decoder.head.2 (4: RGBA; RGB input padded with opaque alpha); an image VAE (latent_dim 2)
    "vae-qwen-image-2.1": Family(VAE, "Qwen-Image 2.1 VAE", dict(latent_channels=64, spatial_compression=16)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "qwen-image": 256,
    "qwen-image-2.1": 256,  # Qwen3-VL-8B hidden states of the templated prompt, unpadded: 256 assumed
}

# Traced activations x this = the published peak (memory.ACTIVATION_CALIBRATION; group keys)
CALIBRATION = {
    "qwen-image": 1.4,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "qwen-image": 1.8,
    "qwen-image-2.1": 6.0,  # supported_models.py @01f03bb class QwenImage21
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        # before Qwen-Image's rule: "qwen_image_2.1_int8_convrot" is another model, not Qwen-Image 20B
        _r(r"qwen[_-]?image[_-]?2[._-]?1(?![0-9])", "qwen-image-2.1", "Qwen-Image 2.1 (7.1B)", P_QWEN_IMAGE_21,
           f"{_C} P_QWEN_IMAGE_21 (its constructor's count; the bf16 file is 14,230,280,616 bytes)"),
        # FireRed-Image-Edit: the template loads it with the Qwen-Image edit nodes, and its published 38.05 GiB
        # (40.86 GB) is 2 bytes x Qwen-Image's 20.4B (data/template_models.json)
        _r(r"fire[_-]?red[_-]?image[_-]?edit", "qwen-image", "FireRed-Image-Edit (Qwen-Image-Edit architecture, 20B)",
           P_QWEN_IMAGE, f"{_C} P_QWEN_IMAGE (its published size is 2 bytes x Qwen-Image's count)"),
        _r(r"qwen[_-]?image", "qwen-image", "Qwen-Image (20B)", P_QWEN_IMAGE, f"{_C} P_QWEN_IMAGE (40.9 GB bf16 listing / 2)"),
    ),
    LORA: (
        _r(r"qwen[_-]?image[_-]?2[._-]?1(?![0-9])", "qwen-image-2.1", "Qwen-Image 2.1 (7.1B)"),
        _r(r"qwen", "qwen-image", "Qwen-Image (20B)"),
    ),
    VAE: (
        _r(r"qwen[_-]?image[_-]?2[._-]?1(?![0-9])", "vae-qwen-image-2.1", "Qwen-Image 2.1 VAE", P_QWEN_IMAGE_21_VAE,
           "P_QWEN_IMAGE_21_VAE (the bf16 file, 675,509,688 bytes / 2)"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _qwen_image(v) -> Found:
    w = v.shape("img_in.weight") or (3072, 64)
    layers = v.count_blocks("transformer_blocks.")
    arch = dict(hidden_size=w[0], in_channels=w[1] // 4, depth=layers, heads=max(1, w[0] // 128), head_dim=128,
                context_dim=v.dim("txt_in.weight", 1), ffn_dim=v.dim("transformer_blocks.0.img_mlp.net.0.proj.weight", 0),
                out_channels=16, patch_size=(2, 2), latent_channels=16, spatial_compression=8)
    variant = None
    if v.has("__index_timestep_zero__"):
        variant = "edit-2511"
    elif v.has("time_text_embed.addition_t_embedding.weight"):
        variant = "layered"
    return Found("qwen-image", arch, ("keys txt_norm.weight + img_in.weight (Qwen-Image)",), variant)

def _not_mage_flow(v) -> Found | None:
    """Mage-Flow has Qwen-Image's keys; ComfyUI tells it by its widths first (model_detection.py:944, 0.33.0):
    families/mage_flow.py's detector takes it."""
    if v.dim("txt_norm.weight", 0) == 2560 and v.dim("proj_out.weight", 0) == 128:
        return None
    return _qwen_image(v)


def _qwen_image_21(v) -> Found | None:
    """model_detection.py @0b61ce5, the "Qwen Image 2.1" branch: its five keys and a gated MLP (gate_up fused, or
    proj); the widths from the shapes (inner from img_in, heads from norm_q's head width, mlp_ratio from the MLP)."""
    if not (v.has("transformer_blocks.0.img_mlp.gate_up.weight") or v.has("transformer_blocks.0.img_mlp.proj.weight")):
        return None
    arch = dict(all_families()["qwen-image-2.1"].arch)
    img_in = v.shape("img_in.weight")
    if img_in and len(img_in) == 2:
        arch.update(hidden_size=int(img_in[0]), in_channels=int(img_in[1]))
    head_dim = v.dim("transformer_blocks.0.attn.norm_q.weight", 0, arch["head_dim"])
    arch.update(head_dim=head_dim, heads=max(1, arch["hidden_size"] // head_dim),
                depth=v.count_blocks("transformer_blocks.") or arch["depth"],
                context_dim=v.dim("txt_in.text_norm.weight", 0, arch["context_dim"]),
                out_channels=v.dim("proj_out.weight", 0, arch["out_channels"]))
    gate_up = v.dim("transformer_blocks.0.img_mlp.gate_up.weight", 0)
    arch["ffn_dim"] = gate_up // 2 if gate_up else v.dim("transformer_blocks.0.img_mlp.proj.weight", 0, arch["ffn_dim"])
    return Found("qwen-image-2.1", arch, ("keys txt_in.text_norm.weight + modulation.1.weight + transformer_blocks.0."
                                          "attn.norm_q.weight + img_in.weight + proj_out.weight (Qwen-Image 2.1)",))


GGUF_ARCH = {"qwen_image": "qwen-image", "qwen_image21": "qwen-image-2.1"}  # ComfyUI-GGUF / its forks' model type

DETECT = {DIFFUSION: (Detector(keys=(("txt_in.text_norm.weight", "modulation.1.weight",
                                      "transformer_blocks.0.attn.norm_q.weight", "img_in.weight", "proj_out.weight"),),
                               read=_qwen_image_21, order=929),
                      Detector(keys=(("txt_norm.weight", "img_in.weight"),), read=_not_mage_flow, order=930),)}


# --- The Qwen-Image 2.1 VAE's working memory: its sd.py branch's own estimate (@033046c), not traced ------------
def _qwen21_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None):
    """sd.py @033046c, the "Qwen Image 2.1 VAE" branch: memory_used_encode = 600 x H x W x dtype (the pixels),
    memory_used_decode = 900 x h x w x 16 x 16 x dtype (the /16 latent), per image; ComfyUI decodes as many
    images at once as fit beside it (batch_number = free memory / this). Not for a tiled node (None)."""
    if latent.media or latent.frames or tiled:
        return None
    h = latent.pixel_height or latent.height * (latent.spatial_compression or 16)
    w = latent.pixel_width or latent.width * (latent.spatial_compression or 16)
    if op == "decode":
        value = 900 * math.ceil(h / 16) * math.ceil(w / 16) * 256 * dtype_bytes
        how = "memory_used_decode = 900 x h x w x 256"
    else:
        value = 600 * h * w * dtype_bytes
        how = "memory_used_encode = 600 x H x W"
    return value, (f"{w}×{h}, one image a call: ComfyUI's own estimate for the Qwen-Image 2.1 VAE (sd.py @033046c: "
                   f"{how} x dtype), not traced; {dtype_bytes}-byte working dtype")


VAE_FORMULAS = {"vae-qwen-image-2.1": _qwen21_vae_bytes}


# a VAE file name -> (latent channels, spatial /, temporal /) for a node whose latent depends on its VAE (comfy/sd.py
# VAE.__init__; a guess by name, said as such): registry.VAE_NAME_GEOMETRY, tried in ORDER
VAE_NAME_GEOMETRY = (
    (re.compile(r"qwen.?image.?2[._-]?1(?![0-9])"), (64, 16, None)),  # the Qwen-Image 2.1 VAE: an image VAE
    (re.compile(r"qwen.?image"), (16, 8, 4)),  # the Wan 2.1 VAE
)
