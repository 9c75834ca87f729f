"""TripoSplat (VAST-AI; ComfyUI 0.33.0's TripoSplat): an image -> 3-D gaussian splat flow model. Its latent is a
fixed-length sequence of 8192 shape-code tokens of 16 channels plus one 5-channel camera token, denoised by a
single-stream DiT that attends jointly over those tokens, the DINOv3 image tokens and the camera token; an octree
gaussian decoder turns the sampled tokens into gaussians.

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:812-813: `cam_out_layer.weight` + `repo_layers.0.final_map.weight` select it; the
  config is {"image_model": "triposplat"} only, so the model is built with LatentSeqMMFlowModel's defaults.
- comfy/supported_models.py:1626-1648 (class TripoSplat): memory_usage_factor 0.6 (:1638), fp16 / bf16 / fp32,
  no text encoder (clip_target None).
- comfy/ldm/triposplat/model.py:215-235 (LatentSeqMMFlowModel defaults): q_token_length 8192, in_channels 16,
  model_channels 1024, cond_channels 1280 (DINOv3 ViT-H/16+), 24 blocks + 2 noise-refiner + 2 context-refiner
  blocks, heads of 64 (16 heads), mlp_ratio 4 (MLP 4096, :113-120), cam_channels 5, cond2_channels 128 (the
  Flux.2 VAE latent, added to the context tokens, :294-299: no extra tokens); :313 the joint sequence
  h_x (8192) | h_cond (DINOv3 tokens) | h_cam (1) through the 24 blocks.
- comfy_extras/nodes_triposplat.py:16-18, 132-137 (TripoSplatConditioning): the latent is zeros [B, 8192, 16] +
  a [B, 1, 5] camera token (a NestedTensor), whatever the image; graph/packs/nodes_triposplat.py reads it as a
  "3d" LatentShape of 8192 tokens (height 1, width 8192), as Hunyuan3D's [B, 64, N] latent is read.
- The context: DINOv3 ViT-H/16+ (comfy/image_encoders/dino3.py:11-28: patch 16, 4 register tokens) over the
  preprocessed square image (TripoSplatPreprocessImage, default and trained size 1024, nodes_triposplat.py:75,
  83): 1 CLS + 4 registers + (1024 / 16)^2 patches = 4101 tokens (TEXT_TOKENS).
- The decoder (comfy/sd.py:1051-1060): OctreeGaussianDecoder (ldm/triposplat/vae.py:359-382), 16 latent
  channels, no generic decode: VAEDecodeTripoSplat reserves its own memory before decoding,
  nodes_triposplat.py:173-177: (cond_tokens x 4 + (num_gaussians // gaussians_per_point) x 10) x hidden x
  dtype bytes, with gaussians_per_point 32 (vae.py:278-281 rep_config num_gaussians, :369-371) and hidden the
  gaussian decoder's model_channels 1024 (vae.py:274, :285). VAE_FORMULAS prices that figure.

Working memory: traced with ComfyUI 0.33.0's own model code at full size (data/working_memory.json "triposplat",
bench/trace_working_memory.py _arches_033: model_detection.py:812-813, model_base.py:2274-2289 extra_conds with the
reference latent and latent_shapes, the packed [B, 1, 131077] latent of samplers.py:1280-1283; TripoSplatFakeSafe
draws the 8192 Sobol anchors for real as the constructor does, model.py:250): 8192 latent tokens + the DINOv3
context 1 + 4 + (S/16)^2 (4101 at the template's 1024 px), 6 points at 512-1536 px, batch 1 and 2, fit exact;
at the template's size and CFG (batch 2) 0.818 GiB, against the first-principles formula's 1.050. Not counted:
the one camera token (traced, not in the token count), and the non-persistent fp32 pos_emb buffer ([1, 8192,
1024], 32 MiB, model.py) that sits on the GPU beside the file's weights.
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, VAE, Family, Found, _r, Detector

ORDER = 165  # "triposplat" shares no pattern with another family's name rules

Q_TOKEN_LENGTH = 8192  # nodes_triposplat.py:16, model.py:216
LATENT_CHANNELS = 16  # nodes_triposplat.py:17
GAUSSIANS_PER_POINT = 32  # ldm/triposplat/vae.py:280 (rep_config num_gaussians)
DECODER_HIDDEN = 1024  # ldm/triposplat/vae.py:274 (ElasticGaussianFixedlenDecoder model_channels)
NUM_GAUSSIANS_MIN, NUM_GAUSSIANS_MAX = 32768, 1048576  # nodes_triposplat.py:21-22
DINOV3_REGISTERS, DINOV3_PATCH = 4, 16  # image_encoders/dino3.py:17, :21


def dinov3_tokens(size: int) -> int:
    """DINOv3 ViT-H/16+'s sequence for a size x size image: CLS + 4 registers + (size / 16)^2 patches."""
    return 1 + DINOV3_REGISTERS + (size // DINOV3_PATCH) ** 2


# The published fp16 files (VAST-AI/TripoSplat, data/template_models.json) / 2 bytes a parameter
P_TRIPOSPLAT = 741_133_517 // 2  # diffusion_models/triposplat_fp16.safetensors
P_TRIPOSPLAT_VAE = 576_192_512 // 2  # vae/triposplat_vae_decoder_fp16.safetensors

FAMILIES = {
    "triposplat": Family(DIFFUSION, "TripoSplat (image to gaussian splat)", dict(
        hidden_size=1024, depth=24, heads=16, head_dim=64, ffn_dim=4096, in_channels=LATENT_CHANNELS,
        out_channels=LATENT_CHANNELS, patch_size=(1, 1), context_dim=1280, latent_channels=LATENT_CHANNELS,
        refiner_depth=2, q_token_length=Q_TOKEN_LENGTH)),
    # sd.py:1051-1055: OctreeGaussianDecoder, latent_channels 16, latent_dim 1; working dtypes fp16 / bf16 / fp32
    "vae-triposplat": Family(VAE, "TripoSplat gaussian decoder", dict(latent_channels=LATENT_CHANNELS,
                                                                      spatial_compression=1)),
}

MEMORY_USAGE_FACTOR = {"triposplat": 0.6}  # supported_models.py:1638

# The DINOv3 ViT-H/16+ tokens of a 1024 px preprocessed image (the model's trained size): 1 + 4 + 64 x 64
TEXT_TOKENS = {"triposplat": dinov3_tokens(1024)}

NAME_RULES = {
    DIFFUSION: (
        _r(r"tripo[_-]?splat", "triposplat", "TripoSplat (image to gaussian splat)", P_TRIPOSPLAT,
           "P_TRIPOSPLAT (the published fp16 file, 741,133,517 bytes / 2)"),
    ),
    VAE: (
        _r(r"tripo[_-]?splat", "vae-triposplat", "TripoSplat gaussian decoder", P_TRIPOSPLAT_VAE,
           "P_TRIPOSPLAT_VAE (the published fp16 file, 576,192,512 bytes / 2)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:812-813: cam_out_layer.weight + repo_layers.0.final_map.weight select TripoSplat (built with
    the class defaults); the file's shapes give the width, the depth and the context width."""
    arch = dict(FAMILIES["triposplat"].arch)
    hidden = v.dim("input_layer.weight", 0, arch["hidden_size"])
    arch.update(hidden_size=hidden, heads=max(1, hidden // 64), depth=v.count_blocks("blocks.") or arch["depth"])
    arch["ffn_dim"] = v.dim("blocks.0.mlp.mlp.0.weight", 0, 4 * hidden)
    arch["context_dim"] = v.dim("cond_embedder.weight", 1, arch["context_dim"])
    return Found("triposplat", arch, ("keys cam_out_layer.weight + repo_layers.0.final_map.weight (TripoSplat, "
                                      "model_detection.py:812)",))


def _read_vae(v) -> Found | None:
    """sd.py:1051: gs.base_offset_scale + octree.out_proj.weight build the TripoSplat OctreeGaussianDecoder."""
    return Found("vae-triposplat", dict(FAMILIES["vae-triposplat"].arch),
                 ("keys gs.base_offset_scale + octree.out_proj.weight (TripoSplat gaussian decoder, sd.py:1051)",))


DETECT = {
    DIFFUSION: (Detector((("cam_out_layer.weight", "repo_layers.0.final_map.weight",),), _read),),
    VAE: (Detector((("gs.base_offset_scale", "octree.out_proj.weight",),), _read_vae),),
}


def snap_gaussians(num_gaussians: int) -> int:
    """nodes_triposplat.py:169-171: clamped to [32768, 1048576], rounded to a multiple of 32."""
    n = max(NUM_GAUSSIANS_MIN, min(NUM_GAUSSIANS_MAX, int(num_gaussians)))
    if n % GAUSSIANS_PER_POINT:
        n = round(n / GAUSSIANS_PER_POINT) * GAUSSIANS_PER_POINT
    return n


def decode_reserve_bytes(cond_tokens: int, num_gaussians: int, dtype_bytes: int) -> int:
    """nodes_triposplat.py:173-176: (cond_tokens x 4 + (n // 32) x 10) x 1024 x dtype bytes."""
    return (cond_tokens * 4 + (num_gaussians // GAUSSIANS_PER_POINT) * 10) * DECODER_HIDDEN * dtype_bytes


def _decoder_bytes(op: str, latent, dtype_bytes: int, tiled=None, options=None):
    """VAEDecodeTripoSplat's own reservation (nodes_triposplat.py:173-177) for the stage's num_gaussians (the
    node's widget, in `options`; its default 262144 when not given). The decoder has no encode (sd.py:1056-1060).
    ComfyUI's figure is per call whatever the batch (cond_tokens = latent.shape[1]), and is priced as stated."""
    if op != "decode" or latent.media != "3d":
        return None
    n = snap_gaussians((options or {}).get("num_gaussians", 262144))
    cond_tokens = int(latent.width)
    value = decode_reserve_bytes(cond_tokens, n, dtype_bytes)
    return math.ceil(value), (f"{n:,} gaussians from {cond_tokens} latent tokens: the memory VAEDecodeTripoSplat "
                              f"reserves before decoding ((tokens × 4 + gaussians / {GAUSSIANS_PER_POINT} × 10) × "
                              f"{DECODER_HIDDEN} × {dtype_bytes} bytes, nodes_triposplat.py:173-177; ComfyUI's figure "
                              "does not grow with the batch), ComfyUI 0.33's own estimate, not traced")


VAE_FORMULAS = {"vae-triposplat": _decoder_bytes}
