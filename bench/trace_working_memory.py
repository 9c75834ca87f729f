#!/usr/bin/env python3
"""Measure the working memory (activations, not weights) of ComfyUI's own model code, without a GPU.

Run with ComfyUI's interpreter (torch + ComfyUI needed; the estimator itself never imports them):

    COMFYUI_PATH=/work/comfy/a /work/comfy/venv-a/bin/python bench/trace_working_memory.py \
        --out nodes/estimator/data/working_memory.json

How it works (details and caveats: docs/working-memory.md):
- Every model is built from ComfyUI's own classes (model_detection config -> supported_models ->
  model_base.*.get_model) at FULL size inside a ``FakeTensorMode`` on a fake ``cuda`` device, with
  bf16 weights and ``comfy.ops.disable_weight_init`` (diffusion models) or ``manual_cast`` (text
  encoders, as ``sd1_clip`` picks it). Fake tensors carry shapes, dtypes, strides and storages but no
  data, so a 12B-parameter Flux costs no memory, and composite ops take their CUDA branches
  (e.g. ``rms_norm`` -> ``_fused_rms_norm``).
- One forward runs at real latent shapes under ``torch.inference_mode()`` (as ComfyUI's executor
  does) and under ``LiveStorageTracker``, a TorchDispatchMode that counts each new tensor
  storage once (views share their storage) and subtracts it when the storage dies
  (``weakref.finalize`` on the untyped storage). Parameters and buffers are excluded up front, so
  the peak it reports is working memory only. Ops that have a CUDA kernel run as one op (outputs
  only, like the fused CUDA kernel); ops that only have a CompositeImplicitAutograd kernel are
  decomposed, so their intermediates are seen as on a GPU.
- Attention: ComfyUI ends in ``F.scaled_dot_product_attention`` on CUDA (attention_pytorch). The
  tracer replaces that op with what the flash / memory-efficient kernel allocates: the output (in the
  kernels' [B, N, H, D] memory layout) plus the fp32 logsumexp [B, H, N], plus a padded copy of
  a mask when one is given. No N x N matrix is materialised, as on a GPU.

- Variants, each swept and fitted on its own: ``rope_eager`` (comfy-kitchen's eager RoPE, torch for
  CUDA < 13), ``fp8_manual_cast`` (fp8 weights, per-layer bf16 cast), ``i2v`` (Wan 2.1 I2V 14B),
  ``kontext`` (Flux with a reference latent).

- ComfyUI 0.18.2 families (issue 10: Flux.2, Z-Image, Lumina 2, Qwen-Image-Edit, Chroma, SD3.5, HiDream,
  HunyuanVideo 1.5, HunyuanImage 2.1, LTX-Video, Wan I2V / FLF / VACE / Fun control / camera, Cosmos
  Predict2, Kandinsky 5 and their LLM text encoders; ``_arches_018`` / ``_te_arches_018``) take their
  conditioning from the model's own ``extra_conds`` (see ``_model_conds``); so do Lotus-D, ACE-Step v1,
  Hunyuan3D 2.0 / 2.1, LTX-2, LongCat-Image, Anima, ACE-Step 1.5, SVD and OmniGen2. Run them with ComfyUI 0.18.2's
  interpreter and ``--resume``: an entry traced by another ComfyUI than the file's gets its own provenance.

Every case runs under a SIGALRM deadline and the JSON is rewritten after every case; then each
family is fitted to ``FORMULA`` by a minimax LP in relative error. ``--markdown`` prints the tables
of docs/working-memory.md from the JSON (no torch needed for that).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

GIB = 1024**3
MIB = 1024**2

COMFY_PATH = os.environ.get("COMFYUI_PATH", "/work/comfy/a")
# The git mirror this ComfyUI tree was exported from.
MIRROR_GIT = "/work/.mirror/pollockjj+ComfyUI/repo"

SCHEMA = 1


# --------------------------------------------------------------------------------------------------
# ComfyUI import (attention backend chosen exactly as on an NVIDIA GPU: attention_pytorch)
# --------------------------------------------------------------------------------------------------

def import_comfy() -> None:
    """Import ComfyUI with PyTorch attention selected (the NVIDIA default, model_management.py:322-326)."""
    if COMFY_PATH not in sys.path:
        sys.path.insert(0, COMFY_PATH)
    import comfy.cli_args

    a = comfy.cli_args.args
    a.cpu = True  # no CUDA device here; the model code itself runs on fake CUDA tensors
    a.use_pytorch_cross_attention = True  # -> optimized_attention = attention_pytorch (attention.py:732)
    a.disable_async_offload = True  # no CUDA streams without a GPU; offload streams are irrelevant at full load
    import comfy.model_management  # noqa: F401
    import comfy.ldm.modules.attention as attn

    if attn.optimized_attention is not attn.attention_pytorch:
        raise RuntimeError(f"expected attention_pytorch, got {attn.optimized_attention.__name__}")


# --------------------------------------------------------------------------------------------------
# The live-storage tracker
# --------------------------------------------------------------------------------------------------

def _load_tracker_module():
    """nodes/comfy_trace.py (the pack's live tracer) by path: ComfyUI's own nodes.py would shadow a
    package named ``nodes`` once COMFYUI_PATH is on sys.path."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nodes", "comfy_trace.py")
    spec = importlib.util.spec_from_file_location("vram_budget_comfy_trace", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_CT = _load_tracker_module()
# One tracker for the shipped table and the live traces inside ComfyUI (nodes/comfy_trace.py).
_tensors_in = _CT._tensors_in
_storage_key = _CT.storage_key
PeakInfo = _CT.PeakInfo
_make_tracker_cls = _CT.make_tracker_cls


# --------------------------------------------------------------------------------------------------
# Fake-CUDA model construction
# --------------------------------------------------------------------------------------------------

class Deadline(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - signal path
    raise Deadline("deadline")


module_name_hooks = _CT.module_name_hooks


@dataclass(frozen=True)
class TraceResult:
    peak_bytes: int
    input_bytes: int
    param_bytes: int
    peak_op: str
    peak_module: str
    n_ops: int
    attention_calls: int
    seconds: float
    decomposed: dict


def run_trace(build: Callable[[], Any], make_inputs: Callable[[Any], tuple], call: Callable[..., Any],
              deadline_s: float) -> TraceResult:
    """build() -> model (inside fake mode); make_inputs(model) -> args; call(model, *args)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    Tracker = _make_tracker_cls()
    t0 = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(max(1, int(deadline_s)))
    try:
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        with fake_mode:
            model = build()
        excluded: set[int] = set()
        param_bytes = 0
        for t in list(model.parameters()) + list(model.buffers()):
            k = _storage_key(t)
            if k not in excluded:
                excluded.add(k)
                param_bytes += t.untyped_storage().nbytes()
        tracker = Tracker(excluded)
        hooks = module_name_hooks(model, tracker)
        try:
            with torch.inference_mode(), fake_mode, tracker:
                inputs = make_inputs(model)
                input_bytes = tracker.current
                out = call(model, *inputs)
                del out, inputs
        finally:
            for h in hooks:
                h.remove()
    finally:
        signal.alarm(0)
    res = TraceResult(
        peak_bytes=tracker.peak.bytes, input_bytes=input_bytes, param_bytes=param_bytes,
        peak_op=tracker.peak.op, peak_module=tracker.peak.module, n_ops=tracker.n_ops,
        attention_calls=tracker.attention_calls, seconds=round(time.time() - t0, 2),
        decomposed=dict(tracker.decomposed))
    del model, tracker
    gc.collect()
    return res


# --------------------------------------------------------------------------------------------------
# Architectures: configs as comfy/model_detection.py derives them from the real checkpoints
# --------------------------------------------------------------------------------------------------

# Weight/compute dtypes used by _dit_model: a full bf16 load on a bf16-capable GPU gives
# unet_dtype = bf16 and no manual cast (model_management.unet_dtype :792); Fp8Weights changes it.
_BUILD = {"weight_dtype": "bfloat16", "manual_cast": None, "wan_i2v": False, "flux_ref": False}


def _dit_model(unet_config: dict, expect_cls: str):
    """model_detection config -> supported_models class -> model_base model (sd.py load path)."""
    import torch
    import comfy.model_detection

    cfg = dict(unet_config)
    model_config = comfy.model_detection.model_config_from_unet_config(cfg)
    if model_config is None or type(model_config).__name__ != expect_cls:
        raise RuntimeError(f"config matched {type(model_config).__name__}, expected {expect_cls}")
    weight_dtype = getattr(torch, _BUILD["weight_dtype"])
    manual_cast = getattr(torch, _BUILD["manual_cast"]) if _BUILD["manual_cast"] else None
    model_config.set_inference_dtype(weight_dtype, manual_cast)
    model = model_config.get_model({}, "", device=torch.device("cuda"))
    model.model_sampling.to("cuda")
    return model


# model_detection.py:196-260 with the key shapes of flux1-dev.safetensors:
# img_in.weight [3072, 64] -> in_channels 64/(2*2)=16, hidden 3072; txt_in.weight [3072, 4096];
# vector_in.in_layer.weight [3072, 768]; 19 double_blocks; 38 single_blocks; guidance_in present.
FLUX_DEV = {
    "image_model": "flux", "axes_dim": [16, 56, 56], "num_heads": 24, "mlp_ratio": 4.0, "theta": 10000,
    "out_channels": 16, "qkv_bias": True, "txt_ids_dims": [], "in_channels": 16, "hidden_size": 3072,
    "context_in_dim": 4096, "patch_size": 2, "vec_in_dim": 768, "depth": 19, "depth_single_blocks": 38,
    "guidance_embed": True, "yak_mlp": False, "txt_norm": False,
}


def _wan_config(dim: int, ffn: int, layers: int, in_dim: int, out_dim: int) -> dict:
    # model_detection.py:450-468: num_heads = dim // 128, patch (1,2,2), freq_dim 256, qk_norm, eps 1e-6.
    return {
        "image_model": "wan2.1", "dim": dim, "out_dim": out_dim, "num_heads": dim // 128, "ffn_dim": ffn,
        "num_layers": layers, "patch_size": (1, 2, 2), "freq_dim": 256, "window_size": (-1, -1),
        "qk_norm": True, "cross_attn_norm": True, "eps": 1e-6, "in_dim": in_dim, "model_type": "t2v",
    }


WAN_14B_T2V = _wan_config(5120, 13824, 40, 16, 16)
WAN_13B_T2V = _wan_config(1536, 8960, 30, 16, 16)
WAN22_5B = _wan_config(3072, 14336, 30, 48, 48)
# Wan 2.1 I2V 14B: patch_embedding in_dim 36 (16 noise + 4 mask + 16 image latent), img_emb.proj.* -> "i2v".
WAN_14B_I2V = {**_wan_config(5120, 13824, 40, 36, 16), "model_type": "i2v"}

# model_detection.py:887-921 (the same dicts ComfyUI uses for diffusers-format UNets).
SDXL_UNET = {
    'use_checkpoint': False, 'image_size': 32, 'out_channels': 4, 'use_spatial_transformer': True, 'legacy': False,
    'num_classes': 'sequential', 'adm_in_channels': 2816, 'in_channels': 4, 'model_channels': 320,
    'num_res_blocks': [2, 2, 2], 'transformer_depth': [0, 0, 2, 2, 10, 10], 'channel_mult': [1, 2, 4],
    'transformer_depth_middle': 10, 'use_linear_in_transformer': True, 'context_dim': 2048, 'num_head_channels': 64,
    'transformer_depth_output': [0, 0, 0, 2, 2, 2, 10, 10, 10], 'use_temporal_attention': False,
    'use_temporal_resblock': False}
SD15_UNET = {
    'use_checkpoint': False, 'image_size': 32, 'out_channels': 4, 'use_spatial_transformer': True, 'legacy': False,
    'adm_in_channels': None, 'in_channels': 4, 'model_channels': 320, 'num_res_blocks': [2, 2, 2, 2],
    'transformer_depth': [1, 1, 1, 1, 1, 1, 0, 0], 'channel_mult': [1, 2, 4, 4], 'transformer_depth_middle': 1,
    'use_linear_in_transformer': False, 'context_dim': 768, 'num_heads': 8,
    'transformer_depth_output': [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0], 'use_temporal_attention': False,
    'use_temporal_resblock': False}

# model_detection.py:617-626: img_in.weight [3072, 64] -> in_channels 64; 60 transformer_blocks.
QWEN_IMAGE = {"image_model": "qwen_image", "in_channels": 64, "num_layers": 60}

# model_detection.py:137-185 with hunyuan_video_t2v_720p_bf16.safetensors: img_in.proj.weight
# [3072, 16, 1, 2, 2]; txt_in.input_embedder [3072, 4096]; 20 double / 40 single blocks; guidance_in.
HUNYUAN_VIDEO = {
    "image_model": "hunyuan_video", "in_channels": 16, "patch_size": [1, 2, 2], "out_channels": 16,
    "vec_in_dim": 768, "axes_dim": [16, 56, 56], "meanflow": False, "context_in_dim": 4096, "hidden_size": 3072,
    "mlp_ratio": 4.0, "num_heads": 24, "depth": 20, "depth_single_blocks": 40, "theta": 256, "qkv_bias": True,
    "byt5": False, "guidance_embed": True, "use_cond_type_embedding": False, "vision_in_dim": None,
    "meanflow_sum": False,
}


# --------------------------------------------------------------------------------------------------
# ComfyUI 0.18.2 families (issue 10). Each dict is what comfy/model_detection.py (0.18.2)
# detect_unet_config returns for the real checkpoint's keys; the key shapes come from the published
# config cited next to it. _dit_model asserts the supported_models class each one matches.
# --------------------------------------------------------------------------------------------------

# model_detection.py:196-286 (flux2 branch). Shapes from Flux2Params (black-forest-labs/flux2
# src/flux2/model.py, as in the fork TensorTemplar/flux2 b4942f9): img_in [6144, 128] (patch 1 ->
# in_channels 128), txt_in [6144, 15360] (3 x 5120 Mistral layers), no vector_in, guidance_in
# (use_guidance_embed True), 8 double / 48 single blocks; num_heads = 6144 / sum(axes_dim 4x32) = 48.
_FLUX2_BASE = {
    "image_model": "flux2", "axes_dim": [32, 32, 32, 32], "mlp_ratio": 3.0, "theta": 2000,
    "out_channels": 128, "global_modulation": True, "mlp_silu_act": True, "qkv_bias": False, "ops_bias": False,
    "default_ref_method": "index", "ref_index_scale": 10.0, "txt_ids_dims": [3], "patch_size": 1,
    "in_channels": 128, "vec_in_dim": None, "yak_mlp": False, "txt_norm": False,
}
FLUX2_DEV = {**_FLUX2_BASE, "hidden_size": 6144, "context_in_dim": 15360, "num_heads": 48, "depth": 8,
             "depth_single_blocks": 48, "guidance_embed": True}
# Klein4BParams in the same file: hidden 3072, context 7680 (3 x 2560 Qwen3 4B layers), 5 / 20
# blocks, no guidance_in (diffusers config of FLUX.2-klein-base-4B: num_layers 5, num_single_layers
# 20, joint_attention_dim 7680, guidance_embeds false).
FLUX2_KLEIN_4B = {**_FLUX2_BASE, "hidden_size": 3072, "context_in_dim": 7680, "num_heads": 24, "depth": 5,
                  "depth_single_blocks": 20, "guidance_embed": False}

# model_detection.py:427-491 (Lumina 2 branch, dim 3840 = Z-Image). Tongyi-MAI/Z-Image-Turbo
# transformer/config.json (diffusers ZImageTransformer2DModel): dim 3840, n_layers 30, n_heads 30,
# n_kv_heads 30, cap_feat_dim 2560 (Qwen3 4B), in_channels 16, patch 2 -> cap_embedder.1.weight
# [3840, 2560]; cap_pad_token present -> pad_tokens_multiple 32. allow_fp16 (a weight statistic) only
# widens the dtype choice and is left out: the trace is bf16.
Z_IMAGE = {
    "image_model": "lumina2", "patch_size": 2, "in_channels": 16, "dim": 3840, "cap_feat_dim": 2560, "n_layers": 30,
    "qk_norm": True, "n_heads": 30, "n_kv_heads": 30, "axes_dims": [32, 48, 48], "axes_lens": [1536, 512, 512],
    "rope_theta": 256.0, "ffn_dim_multiplier": 8.0 / 3.0, "z_image_modulation": True, "time_scale": 1000.0,
    "pad_tokens_multiple": 32,
}
# Same branch, dim 2304: Alpha-VLLM/Lumina-Image-2.0 transformer/config.json (hidden_size 2304,
# num_layers 26, num_attention_heads 24, num_kv_heads 8, cap_feat_dim 2304 = Gemma 2 2B).
LUMINA2 = {
    "image_model": "lumina2", "patch_size": 2, "in_channels": 16, "dim": 2304, "cap_feat_dim": 2304, "n_layers": 26,
    "qk_norm": True, "n_heads": 24, "n_kv_heads": 8, "axes_dims": [32, 32, 32], "axes_lens": [300, 512, 512],
    "rope_theta": 10000.0, "ffn_dim_multiplier": 4.0,
}

# model_detection.py:196-286 (Chroma branch): diffusers ChromaTransformer2DModel (lodestones/Chroma1-HD):
# 19 double / 38 single blocks, 24 heads x 128, joint_attention_dim 4096, approximator 64 -> 5120 x 5
# layers; img_in [3072, 64] and no vector_in / guidance_in.
CHROMA = {
    "image_model": "chroma", "axes_dim": [16, 56, 56], "num_heads": 24, "mlp_ratio": 4.0, "theta": 10000,
    "out_channels": 64, "qkv_bias": True, "txt_ids_dims": [], "in_channels": 64, "hidden_size": 3072,
    "context_in_dim": 4096, "patch_size": 2, "vec_in_dim": None, "depth": 19, "depth_single_blocks": 38,
    "in_dim": 64, "out_dim": 3072, "hidden_dim": 5120, "n_layers": 5,
}


# model_detection.py:255-276 (Chroma branch with nerf_blocks.0.norm.* -> "chroma_radiance"), matched by
# supported_models.ChromaRadiance (memory_usage_factor 0.044): Chroma's 19 double / 38 single blocks of 3072 (no img_in:
# img_in_patch, a 16 x 16 stride-16 conv on the RGB pixels, patch_size = its kernel), in/out 3 channels, and the per-pixel
# NeRF head: nerf_hidden_size 64, mlp_ratio 4, depth 4, max_freqs 8, tile 512 patches, fp32 embedder. The x0 file
# (Comfy-Org/Chroma1-Radiance_Repackaged chroma-radiance-x0.safetensors, the 0.18.2 template's) has the "__x0__" key
# (use_x0) and the conv final head (nerf_final_layer_conv, as lodestone-rock/flow's Radiance code builds it).
CHROMA_RADIANCE = {
    **CHROMA, "image_model": "chroma_radiance", "in_channels": 3, "out_channels": 3, "patch_size": 16,
    "nerf_hidden_size": 64, "nerf_mlp_ratio": 4, "nerf_depth": 4, "nerf_max_freqs": 8, "nerf_tile_size": 512,
    "nerf_final_head_type": "conv", "use_x0": True,
}


def _sd3_config(hidden: int, pos_embed_max: int, x_attn2_layers: list) -> dict:
    # model_detection.py:47-86: depth = x_embedder.proj.weight rows / 64; pos_embed [1, max^2, hidden];
    # ln_q present (qk_norm rms_norm); y_embedder [hidden, 2048]; context_embedder [hidden, 4096];
    # x_block.attn2 (MMDiT-X dual attention) in the listed blocks.
    return {
        "in_channels": 16, "patch_size": 2, "out_channels": 16, "depth": hidden // 64, "input_size": None,
        "adm_in_channels": 2048,
        "context_embedder_config": {"target": "torch.nn.Linear", "params": {"in_features": 4096, "out_features": hidden}},
        "num_patches": pos_embed_max * pos_embed_max, "pos_embed_max_size": pos_embed_max, "qk_norm": "rms",
        "pos_embed_scaling_factor": None, "x_block_self_attn_layers": list(x_attn2_layers),
    }


# stabilityai/stable-diffusion-3.5-large transformer/config.json: num_layers 38, 38 heads x 64 (2432),
# pos_embed_max_size 192, qk_norm rms_norm, no dual attention layers.
SD35_LARGE = _sd3_config(2432, 192, [])
# stabilityai/stable-diffusion-3.5-medium transformer/config.json: num_layers 24 (1536), pos_embed_max_size
# 384, qk_norm rms_norm, dual_attention_layers 0..12.
SD35_MEDIUM = _sd3_config(1536, 384, list(range(13)))

# model_detection.py:144-194 (HunyuanVideo branch with vision_in -> HunyuanVideo 1.5). diffusers
# HunyuanVideo15Transformer3DModel (hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-*): in_channels 65
# (32 noise + 32 image + 1 mask), out 32, 16 heads x 128 = 2048, 54 layers, no single blocks, patch 1x1x1,
# text_embed_dim 3584 (Qwen2.5-VL 7B), byT5 glyph encoder, image_embed_dim 1152 (SigLIP vision_in),
# rope axes (16, 56, 56), no guidance_in (480p / 720p t2v and i2v; the cfg-distilled files add it).
HUNYUAN_VIDEO_15 = {
    "image_model": "hunyuan_video", "in_channels": 65, "patch_size": [1, 1, 1], "out_channels": 32,
    "vec_in_dim": None, "axes_dim": [16, 56, 56], "meanflow": False, "context_in_dim": 3584, "hidden_size": 2048,
    "mlp_ratio": 4.0, "num_heads": 16, "depth": 54, "depth_single_blocks": 0, "theta": 256, "qkv_bias": True,
    "byt5": True, "guidance_embed": False, "use_cond_type_embedding": True, "vision_in_dim": 1152,
    "meanflow_sum": True,
}
# Same branch, 4-D img_in (2-D patches): diffusers HunyuanImageTransformer2DModel
# (hunyuanvideo-community/HunyuanImage-2.1-Diffusers): in/out 64 channels (32x VAE), 28 heads x 128 = 3584,
# 20 double / 40 single blocks, patch (1, 1), text_embed_dim 3584, rope axes (64, 64); the ComfyUI file
# has byt5_in (glyph text) and, for the base model, no guidance_in / time_r_in.
HUNYUAN_IMAGE_21 = {
    "image_model": "hunyuan_video", "in_channels": 64, "patch_size": [1, 1], "out_channels": 64,
    "vec_in_dim": None, "axes_dim": [64, 64], "meanflow": False, "context_in_dim": 3584, "hidden_size": 3584,
    "mlp_ratio": 4.0, "num_heads": 28, "depth": 20, "depth_single_blocks": 40, "theta": 256, "qkv_bias": True,
    "byt5": True, "guidance_embed": False, "use_cond_type_embedding": False, "vision_in_dim": None,
    "meanflow_sum": False,
}

# model_detection.py:319-328 (LTXV): num_layers = transformer blocks, attention_head_dim = to_k rows / 32,
# cross_attention_dim = to_k columns. Lightricks/LTX-Video transformer/config.json (0.9.x 2B): 28 layers,
# 32 heads x 64 (to_k [2048, 2048]); Lightricks/LTX-Video-0.9.7-dev transformer/config.json (13B):
# 48 layers, 32 heads x 128 (to_k [4096, 4096]). Caption channels 4096 (T5-XXL) in both.
LTXV_2B = {"image_model": "ltxv", "num_layers": 28, "attention_head_dim": 64, "cross_attention_dim": 2048}
LTXV_13B = {"image_model": "ltxv", "num_layers": 48, "attention_head_dim": 128, "cross_attention_dim": 4096}

# model_detection.py:573-590 (HiDream): every value is fixed by ComfyUI (HiDream-I1 Full / Dev / Fast
# share them; HiDream-ai/HiDream-I1-Full transformer/config.json: 16 double + 32 single layers,
# 20 heads x 128, 4 routed experts / 2 active, caption_channels [4096, 4096], llama_layers as below).
HIDREAM = {
    "image_model": "hidream", "attention_head_dim": 128, "axes_dims_rope": [64, 32, 32],
    "caption_channels": [4096, 4096], "max_resolution": [128, 128], "in_channels": 16,
    "llama_layers": list(range(32)) + [31] * 16, "num_attention_heads": 20, "num_routed_experts": 4,
    "num_activated_experts": 2, "num_layers": 16, "num_single_layers": 32, "out_channels": 16, "patch_size": 2,
    "text_emb_dim": 2048,
}

# Wan variants (model_detection.py:493-543; model_type from the extra keys). Key shapes from the Wan-AI
# config.json files (dim 5120, ffn_dim 13824, 40 layers, like WAN_14B_T2V):
# - Wan-AI/Wan2.2-I2V-A14B (high_noise_model / low_noise_model config.json): in_dim 36, no CLIP image
#   embedding (img_emb.proj absent) -> model_type "t2v", matched by WAN21_T2V; the 20 extra input channels
#   are the mask + image latent (model_base.WAN21.concat_cond).
WAN22_14B_I2V = _wan_config(5120, 13824, 40, 36, 16)
# - Wan-AI/Wan2.1-FLF2V-14B-720P: the I2V layout plus img_emb.emb_pos [1, 514, 1280] (two CLIP images).
WAN_14B_FLF = {**WAN_14B_I2V, "flf_pos_embed_token_number": 514}
# - Wan-AI/Wan2.1-VACE-14B config.json: vace_layers [0, 5, ..., 35] (8 blocks), vace_in_dim 96.
WAN_14B_VACE = {**WAN_14B_T2V, "model_type": "vace", "vace_in_dim": 96, "vace_layers": 8}
# - alibaba-pai/Wan2.1-Fun-14B-Control: in_dim 48 (16 noise + 16 control + 16 reference latent) with the
#   CLIP image embedding (img_emb.proj) -> model_type "i2v", matched by WAN21_FunControl2V.
WAN_14B_FUN_CONTROL = {**_wan_config(5120, 13824, 40, 48, 16), "model_type": "i2v"}
# - alibaba-pai/Wan2.1-Fun-V1.1-14B-Control-Camera: in_dim 32 (16 noise + 16 reference latent), the CLIP image
#   embedding, control_adapter.conv.weight (24 = 6 Pluecker channels x 4 frames in) -> model_type "camera",
#   matched by WAN21_Camera (supported_models.py: in_dim 32); CameraWanModel's in_dim_control_adapter is 24.
WAN_14B_CAMERA = {**_wan_config(5120, 13824, 40, 32, 16), "model_type": "camera"}
# Wan audio / animation models (ComfyUI 0.18.2 model_detection.py:518-524 picks the model_type from one extra key;
# the configs carry no more than the base Wan keys, so the classes' defaults build the rest):
# - Wan-AI/Wan2.2-S2V-14B: the T2V 14B layout (in_dim 16) plus casual_audio_encoder.* -> "s2v", matched by
#   WAN22_S2V (supported_models.py:1236-1247) -> model_base.WAN22_S2V -> WanModel_S2V (ldm/wan/model.py:1221-1284:
#   audio_dim 1024, 12 audio-injection layers, FramePackMotioner buckets [1, 2, 16], cond_encoder for control_video).
WAN22_14B_S2V = {**WAN_14B_T2V, "model_type": "s2v"}
# - bytedance-research/HuMo 17B (Comfy-Org humo_17B_*.safetensors): Wan 2.1 14B with in_dim 36 (16 noise + 4 mask +
#   16 reference channels: model_base.WAN21_HuMo builds c_concat / reference_latent with 4 + 16 more channels,
#   model_base.py:1415-1440; the in_dim-16 path is "# 1.7B model", :1415) plus audio_proj.* -> "humo", matched by
#   WAN21_HuMo (supported_models.py:1226-1234) -> HumoWanModel (ldm/wan/model.py:1525-1556).
WAN21_14B_HUMO = {**_wan_config(5120, 13824, 40, 36, 16), "model_type": "humo"}
# - Wan-AI/Wan2.2-Animate-14B: in_dim 36 (16 noise + 4 mask + 16 reference/background latent), the CLIP image
#   embedding, face_adapter.* -> "animate", matched by WAN22_Animate (supported_models.py:1249-1260) ->
#   AnimateWanModel (ldm/wan/model_animate.py:400-448: model_type "i2v" inside, pose_patch_embedding, the
#   motion_encoder Generator at 512 px, face_adapter with num_layers // 5 = 8 fuser blocks, face_encoder).
WAN22_14B_ANIMATE = {**_wan_config(5120, 13824, 40, 36, 16), "model_type": "animate"}

# model_detection.py:592-644 (Cosmos Predict2): model_channels = x_embedder.proj.1.weight rows, in_channels =
# its columns / 4 - 1 (padding mask). nvidia/Cosmos-Predict2-2B-Text2Image (diffusers CosmosTransformer3DModel
# config: 28 layers, 16 heads x 128 = 2048, text_embed_dim 1024, rope_scale (1, 4, 4)) and -14B (5120, 36
# blocks, 40 heads).
_COSMOS_P2 = {
    "image_model": "cosmos_predict2", "max_img_h": 240, "max_img_w": 240, "max_frames": 128, "in_channels": 16,
    "out_channels": 16, "patch_spatial": 2, "patch_temporal": 1, "concat_padding_mask": True,
    "crossattn_emb_channels": 1024, "pos_emb_cls": "rope3d", "pos_emb_learnable": True, "pos_emb_interpolation": "crop",
    "min_fps": 1, "max_fps": 30, "use_adaln_lora": True, "adaln_lora_dim": 256, "extra_per_block_abs_pos_emb": False,
    "rope_h_extrapolation_ratio": 4.0, "rope_w_extrapolation_ratio": 4.0, "rope_t_extrapolation_ratio": 1.0,
    "extra_h_extrapolation_ratio": 1.0, "extra_w_extrapolation_ratio": 1.0, "extra_t_extrapolation_ratio": 1.0,
    "rope_enable_fps_modulation": False,
}
COSMOS_P2_2B = {**_COSMOS_P2, "model_channels": 2048, "num_blocks": 28, "num_heads": 16}
COSMOS_P2_14B = {**_COSMOS_P2, "model_channels": 5120, "num_blocks": 36, "num_heads": 40}

# model_detection.py:678-694 (Kandinsky 5): Kandinsky 5.0 T2V Lite, the values ComfyUI's Kandinsky5 class
# defaults to (ldm/kandinsky5/model.py:275-279): visual_embeddings.in_layer [1792, 132] (132 = (16 noise
# + 16 image + 1 mask) x 1x2x2 patch), time_dim 512, feed_forward.in_layer [7168, 1792], 2 text / 32 visual
# blocks; axes (16, 24, 24) for model_dim 1792.
KANDINSKY5_LITE = {
    "model_dim": 1792, "axes_dims": (16, 24, 24), "time_dim": 512, "image_model": "kandinsky5", "ff_dim": 7168,
    "visual_embed_dim": 132, "num_text_blocks": 2, "num_visual_blocks": 32,
}


# model_detection.py:1047-1051 (the LotusD dict of the SD UNet branch, unet_config_from_diffusers_unet's list;
# supported_models.LotusD: SD 2 UNet, linear in/out projections, adm_in_channels 4 = the [1, 4] task
# embedding of model_base.Lotus.extra_conds). jingheya/lotus-depth-d-v1-1 unet/config.json: block_out_channels
# (320, 640, 1280, 1280), attention_head_dim (5, 10, 20, 20) = 64-wide heads, cross_attention_dim 1024,
# class_embed_type "projection" with projection_class_embeddings_input_dim 4.
LOTUS_D = {
    'use_checkpoint': False, 'image_size': 32, 'out_channels': 4, 'use_spatial_transformer': True, 'legacy': False,
    'adm_in_channels': 4, 'in_channels': 4, 'model_channels': 320, 'num_res_blocks': [2, 2, 2, 2],
    'transformer_depth': [1, 1, 1, 1, 1, 1, 0, 0], 'channel_mult': [1, 2, 4, 4], 'transformer_depth_middle': 1,
    'use_linear_in_transformer': True, 'context_dim': 1024, 'num_head_channels': 64,
    'transformer_depth_output': [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0], 'use_temporal_attention': False,
    'use_temporal_resblock': False}

# model_detection.py:330-344 (ACE-Step branch, genre_embedder.weight present): the values ComfyUI fixes, then
# dit_config.update(metadata["config"]["transformer"]) with the checkpoint's own config. ACE-Step/ACE-Step-v1-3.5B
# ace_step_transformer/config.json: inner_dim 2560 = 20 heads x 128, num_layers 24, mlp_ratio 2.5, patch
# (16, 1), text_embedding_dim 768 (UMT5-base), speaker 512, lyric_encoder_vocab_size 6693, lyric_hidden_size
# 1024, ssl_encoder_depths [8, 8]. The two values that differ from ACEStepTransformer2DModel's defaults
# (ldm/ace/model.py:150-172: 28 layers, vocab 6681) are taken from that config (a 28-layer build would not
# load a 24-block file's lyric embedding of 6693 rows).
ACE_STEP_V1 = {
    "audio_model": "ace", "attention_head_dim": 128, "in_channels": 8, "inner_dim": 2560, "max_height": 16,
    "max_position": 32768, "max_width": 32768, "mlp_ratio": 2.5, "num_attention_heads": 20,
    "num_layers": 24, "lyric_encoder_vocab_size": 6693, "ssl_encoder_depths": [8, 8],
}


# model_detection.py:561-571 (Hunyuan 3D 2.1 branch: t_embedder.mlp.2 + blocks.0.attn1.k_norm present): in_channels
# = x_embedder.weight columns, hidden_size = its rows, depth = number of blocks, context_dim 1024, 16 heads,
# no qkv bias, guidance_cond_proj_dim None. tencent/Hunyuan3D-2.1 hunyuan3d-dit-v2-1/config.yaml: in_channels 64,
# hidden_size 2048, depth 21, num_heads 16, context_dim 1024 (DINOv2-L), qk_norm, num_moe_layers 6 with 8 experts
# / top 2 (HunYuanDiTPlain's defaults, ldm/hunyuan3dv2_1/hunyuandit.py:541-555).
HUNYUAN3D_21 = {
    "image_model": "hunyuan3d2_1", "in_channels": 64, "context_dim": 1024, "hidden_size": 2048, "mlp_ratio": 4.0,
    "num_heads": 16, "depth": 21, "qkv_bias": False, "guidance_cond_proj_dim": None,
}


# model_detection.py:545-558 (Hunyuan 3D 2.0 branch: latent_in.weight present): in_channels = latent_in.weight columns,
# hidden_size = its rows, context_in_dim = cond_in.weight columns, 16 heads, mlp_ratio 4, qkv bias, depth / single depth
# = counted double_blocks / single_blocks, guidance_embed = guidance_in present. tencent/Hunyuan3D-2
# hunyuan3d-dit-v2-0/config.yaml (Hunyuan3DDiT): in_channels 64, context_in_dim 1536 (DINOv2-giant), hidden_size 1024,
# 16 heads, depth 16, depth_single_blocks 32, guidance_embed false: 16 double blocks -> supported_models.Hunyuan3Dv2
# (depth 8 would be Hunyuan3Dv2mini). Hunyuan3D-2mv hunyuan3d-dit-v2-mv(-fast/-turbo)/config.yaml: the same DiT; the
# guidance-distilled files set guidance_embed true (guidance_in, an MLPEmbedder 256 -> 1024, 1.3M parameters).
HUNYUAN3D_20 = {
    "image_model": "hunyuan3d2", "in_channels": 64, "context_in_dim": 1536, "hidden_size": 1024, "mlp_ratio": 4.0,
    "num_heads": 16, "depth": 16, "depth_single_blocks": 32, "qkv_bias": True, "guidance_embed": False,
}
HUNYUAN3D_20_MV_TURBO = {**HUNYUAN3D_20, "guidance_embed": True}

# model_detection.py:196-286 (Flux branch, no double_stream_modulation_img -> "flux"): hidden_size / context_in_dim
# = txt_in.weight rows / columns, in_channels = img_in.weight columns / 4, vec_in_dim None (no vector_in),
# guidance_embed = guidance_in present, and context_in_dim 3584 with no vector_in -> txt_ids_dims [1, 2] (:283,
# LongCat-Image), matched by supported_models.LongCatImage (guidance_embed False). meituan-longcat/LongCat-Image
# (diffusers LongCatImageTransformer2DModel, huggingface.co/docs/diffusers/v0.39.0/api/models/
# longcat_image_transformer2d; model card: 6B): 10 dual-stream + 20 single-stream blocks, 24 heads x 128 = 3072,
# joint_attention_dim 3584 (Qwen2.5-VL 7B), in_channels 64 (16-channel Flux VAE latent, 2x2 packed), no pooled
# projection, no guidance embedding. LongCat-Image-Edit is the same transformer.
LONGCAT_IMAGE = {
    "image_model": "flux", "axes_dim": [16, 56, 56], "num_heads": 24, "mlp_ratio": 4.0, "theta": 10000,
    "out_channels": 16, "qkv_bias": True, "txt_ids_dims": [1, 2], "in_channels": 16, "hidden_size": 3072,
    "context_in_dim": 3584, "patch_size": 2, "vec_in_dim": None, "depth": 10, "depth_single_blocks": 20,
    "guidance_embed": False, "yak_mlp": False, "txt_norm": False,
}

# model_detection.py:592-644 (Cosmos Predict2 branch; llm_adapter.blocks.0.cross_attn.q_proj present -> "anima",
# :595-596), matched by supported_models.Anima. circlestone-labs/Anima (model card: 2B parameters, a derivative of
# nvidia/Cosmos-Predict2-2B-Text2Image, Qwen3 0.6B text encoder, Qwen-Image VAE): x_embedder.proj.1.weight [2048, 68]
# -> model_channels 2048 (28 blocks, 16 heads), in_channels 16; plus ComfyUI's LLMAdapter (ldm/anima/model.py:143-160:
# 6 blocks of 1024, T5 vocabulary 32128) that maps the Qwen3 states onto the T5 token ids.
ANIMA = {**_COSMOS_P2, "image_model": "anima", "model_channels": 2048, "num_blocks": 28, "num_heads": 16}

# model_detection.py:646-663 (key time_caption_embed.timestep_embedder.linear_1.bias -> "omnigen2"): ComfyUI reads no
# shapes, the whole config is fixed there: hidden 2520 (21 heads x 120, 7 KV heads), 32 layers + 2 noise / 2 reference /
# 2 context refiner layers, text_feat_dim 2048 (Qwen2.5-VL 3B), in_channels 16 (Flux VAE), patch 2, RoPE axes 40+40+40.
# Matched by supported_models.Omnigen2 (:1459-1486, memory_usage_factor 1.95). OmniGen2/OmniGen2 (README: a 3B VLM and
# a 4B diffusion model); the traced module has 3.97B parameters.
OMNIGEN2 = {
    "image_model": "omnigen2", "axes_dim_rope": [40, 40, 40], "axes_lens": [1024, 1664, 1664],
    "ffn_dim_multiplier": None, "hidden_size": 2520, "in_channels": 16, "multiple_of": 256, "norm_eps": 1e-05,
    "num_attention_heads": 21, "num_kv_heads": 7, "num_layers": 32, "num_refiner_layers": 2, "out_channels": None,
    "patch_size": 2, "text_feat_dim": 2048, "timestep_scale": 1000.0,
}

# ComfyUI 0.33.0 families (issue 21), configs as model_detection reads the published files:
# model_detection.py:968-983 (key txtfusion.projector.weight -> "krea2"): first.weight [6144, 64] -> features 6144,
# channels 64/(2*2)=16, patch 2; 28 blocks; wq [6144, ...] / 128 = 48 heads, wk / 128 = 12 KV heads; the txtfusion
# projector reads 12 Qwen3-VL layers of 2560 (krea2_turbo_*.safetensors, 12.82B parameters)
KREA2 = {
    "image_model": "krea2", "features": 6144, "channels": 16, "patch": 2, "layers": 28, "heads": 48, "kvheads": 12,
    "txtlayers": 12, "txtdim": 2560,
}
# model_detection.py:920-941 (keys transformer_blocks.0.attn.norm_added_q.weight + img_mlp.w1 -> "lens"): img_in
# [1536, 128] -> in_channels 128, 1536 / 64 = 24 heads; proj_out [128, ...] / 4 = out_channels 32; 48 blocks;
# txt_norm.0..3 of 2880 -> four GPT-OSS-20B layers (lens_bf16.safetensors, 4.10B parameters)
LENS = {
    "image_model": "lens", "in_channels": 128, "out_channels": 32, "num_layers": 48, "num_attention_heads": 24,
    "enc_hidden_dim": 2880, "multi_layer_encoder_feature": True, "selected_layer_index": (0, 1, 2, 3),
}

# model_detection.py:1112-1115 (key layers.0.mlp.linear_fc2.weight -> "ernie"): ComfyUI reads no shapes, the config is
# just the image_model; supported_models.ErnieImage (:2316-2343, unet_extra_config {}) and ErnieImageModel's defaults
# (ldm/ernie/model.py:193-224): hidden 4096, 32 heads of 128, 36 layers, SwiGLU 12288, in_channels 128, patch 1,
# text_in_dim 3072 (Ministral 3B) (Comfy-Org/ERNIE-Image ernie-image.safetensors, 8.03B parameters)
ERNIE_IMAGE = {"image_model": "ernie"}
# model_detection.py:963-968 (key embed_image_indicator.weight -> "ideogram4"): input_proj [4608, 128] -> in_channels
# 128; 34 layers. supported_models.Ideogram4 (:1889-1926) adds 18 heads of 256, intermediate 12288, adaln 512,
# llm_features_dim 53248 (13 Qwen3-VL 8B layers of 4096) through unet_extra_config (ideogram4_*.safetensors, 9.28B)
IDEOGRAM4 = {"image_model": "ideogram4", "in_channels": 128, "num_layers": 34}
# model_detection.py:890-898 (key double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight -> "boogu"):
# x_embedder [3360, 64] -> hidden 3360; 32 single_stream_layers, 8 double_stream_layers, 2 noise_refiner blocks;
# time_caption_embed.caption_embedder.0.weight [4096] -> instruction_feat_dim 4096 (Qwen3-VL 8B); the rest is
# BooguTransformer2DModel's defaults (ldm/boogu/model.py:171-249: 28 heads, 7 KV heads of 120, patch 2, in_channels 16)
# (boogu_image_*.safetensors, 10.29B parameters)
BOOGU = {"image_model": "boogu", "hidden_size": 3360, "num_layers": 32, "num_double_stream_layers": 8,
         "num_refiner_layers": 2, "instruction_feat_dim": 4096}

# model_detection.py:263-353 (the Flux branch): img_in.weight [3072, 64] -> in_channels 16, hidden 3072; txt_in.weight
# [3072, 2048] -> context_in_dim 2048 (Ovis 2.5 / Qwen3 2B); no vector_in (vec_in_dim None) and no guidance_in
# (guidance_embed False -> supported_models.FluxSchnell, :780-792, memory_usage_factor 3.1 from Flux :746);
# double_blocks.0.img_mlp.gate_proj present (yak_mlp) and txt_norm.* present: "Ovis model" -> txt_ids_dims [1, 2]
# (:348-350); 6 double_blocks, 27 single_blocks (ovis_image_bf16.safetensors: 7.37B parameters, families/ovis.py)
OVIS_IMAGE = {
    "image_model": "flux", "axes_dim": [16, 56, 56], "num_heads": 24, "mlp_ratio": 4.0, "theta": 10000,
    "out_channels": 16, "qkv_bias": True, "txt_ids_dims": [1, 2], "in_channels": 16, "hidden_size": 3072,
    "context_in_dim": 2048, "patch_size": 2, "vec_in_dim": None, "depth": 6, "depth_single_blocks": 27,
    "guidance_embed": False, "yak_mlp": True, "txt_norm": True,
}
# model_detection.py:1125-1142 (double_blocks.0.attn.img_attn_qkv / img_attn_q_norm + condition_embedder + a 5-D
# img_in.weight -> "joyimage"): img_in [4096, 16, 1, 2, 2] -> hidden 4096, in_channels 16, patch [1, 2, 2]; q_norm 128
# wide -> 4096 / 128 = 32 heads; 40 double_blocks; text_dim 4096 (Qwen3-VL 8B). supported_models.JoyImage
# (:2014-2044) adds theta 10000, rope_dim_list [16, 56, 56]; memory_usage_factor 1.8. The published model's config
# (jd-opensource/JoyAI-Image joyai_image_comfyui/configs/transformer/config.json: hidden 4096, 32 heads, 40 layers,
# mlp_width_ratio 4.0), 16.26B parameters (families/joyimage.py)
JOYIMAGE = {"image_model": "joyimage", "in_channels": 16, "hidden_size": 4096, "patch_size": [1, 2, 2],
            "num_layers": 40, "num_attention_heads": 32, "text_dim": 4096}
# model_detection.py:944-949 (txt_norm.weight of 2560 and proj_out.weight of 128 rows -> "mage_flow"): in_channels
# 128, 12 transformer_blocks; the rest is MageFlowTransformer2DModel's defaults (ldm/mage_flow/model.py:36-48: 24
# heads of 128 -> 3072, joint_attention_dim 2560 = Qwen3-VL 4B, patch 1) (mage_flow_bf16.safetensors, 4.12B)
MAGE_FLOW = {"image_model": "mage_flow", "in_channels": 128, "num_layers": 12}
# model_detection.py:573-574 (key core.pixel_embedder.proj.weight -> "pixeldit_t2i"): ComfyUI reads no shapes, the
# whole config is PixDiT_T2I's defaults (ldm/pixeldit/model.py:120-140: hidden 1536, 24 heads of 64, 14 patch blocks,
# patch 16, 2 pixel blocks of 16 per pixel with 1152-wide / 16-head pixel attention, Gemma 2 2B context 2304,
# txt_max_length 300); supported_models.PixelDiTT2I (:1242-1292, memory_usage_factor 0.04)
# (pixeldit_1300m_1024px_bf16.safetensors, 1.30B parameters)
PIXELDIT = {"image_model": "pixeldit_t2i"}
# model_detection.py:528-572 (key lq_proj.latent_proj.0.weight -> "pid", tested before PixelDiT): lq_hidden_dim = that
# weight's rows, lq_interval from the count of lq_proj.gate_modules, lq_latent_channels = its input channels (16: Flux /
# SD3 latents; < 64 -> latent_spatial_down_factor 8) for the v1 files (no lq_proj.pit_head.weight). The published
# pid_flux1_1024_to_4096_4step_bf16.safetensors header is not read here: PidNet's defaults (ldm/pixeldit/pid.py:159-
# 200: lq_hidden_dim 512, 4 res blocks, lq_interval 2 -> 7 gates, sr_scale 4) are taken, and the parameter count
# they give is checked against the file (families/pixeldit.py P_PID = 2,727,304,233 / 2); supported_models.PiD
# (:1294-1306, memory_usage_factor 0.04) over PixelDiT's body (PIXELDIT above)
PID_FLUX1 = {"image_model": "pid", "lq_hidden_dim": 512, "lq_interval": 2, "lq_latent_channels": 16,
             "latent_spatial_down_factor": 8}
# model_detection.py:815-816 (keys t_embedder1.mlp.0.weight + x_embedder.proj1.weight -> "hidream_o1"): ComfyUI reads no
# shapes; HiDreamO1Transformer's defaults (ldm/hidream_o1/model.py:30-70: the Qwen3-VL 8B decoder, hidden 4096, FFN
# 12288, 36 layers, 32 heads / 8 KV heads of 128, interleaved MRoPE; the 27 x 1152 Qwen3-VL vision tower for
# reference images; 32x32 RGB patches -> 1024 -> 4096, :113-118); supported_models.HiDreamO1 (:1679-1721,
# memory_usage_factor 0.033) (hidream_o1_image_bf16.safetensors, 8.18B incl. the deepstack mergers ComfyUI drops)
HIDREAM_O1 = {"image_model": "hidream_o1"}
# model_detection.py:390-419 (video_patch_proj.weight + audio_patch_proj.weight -> "minimax_h3"): blocks.N -> 50 layers,
# token_refiner.blocks.N -> 2, video_patch_proj [5376, 96] -> hidden 5376, final_layer.video_out [96, ...] / 4 -> 24
# latent channels, audio_out -> 32, q_norm [128] -> head dim 128, qkv_proj [3 x 7168, ...] -> 56 heads, mlp.fc1
# [2 x 14336, ...] -> FFN 14336, condition_proj [5376, 5120] -> text_dim 5120 (Qwen3-VL 32B): MiniMaxH3Model's
# defaults (ldm/minimax/model.py:441-447), supported_models.MiniMaxH3 (:960-986, memory_usage_factor 0.114). The
# published pruned files store the adaln over a small time-curve basis (adaln_t_table, :405-409) instead of the time
# embedder; that changes the adaln weights, not the working memory (its outputs are [M x 3, 6 x 5376] for the M <= 4
# distinct timesteps of a call), so the time-embedder form is built here and weight_bytes is that form's, not the
# published files' (about 20.1B parameters; families/minimax.py)
# model_detection.py:45-50 (cond_layer_logits + latent_conditioners.0.weight + diffusion_transformer...to_qkv ->
# {"audio_model": "minimax_music3"}: a fixed architecture, no config); supported_models.MiniMaxMusic3 (:2229-2248,
# latent_formats.MiniMaxMusic3: 128 channels, 1-D, 512 samples a latent frame; memory_usage_factor 2.0);
# ldm/minimax_music/dit.py: 36 blocks of 2048 (32 heads of 64, GLU FFN 8192), windows of latent_length(200) = 689
# frames, hop 344 (minimax_music3_dit_fp16.safetensors, 2.46B parameters)
MINIMAX_MUSIC3 = {"audio_model": "minimax_music3"}
# model_detection.py:123-142 (img2shape.t_embedder.mlp.0.weight / shape2txt.t_embedder... -> "trellis2"): resolution 64
# (no is_512 metadata), init_txt_model (shape2txt present), not txt_only; no proj_linear key (TRELLIS.2, not Pixal3D):
# every sub-model's image_attn_mode "global". supported_models.Trellis2 (:1481-1504) adds num_heads 12;
# memory_usage_factor 6. Trellis2's defaults (ldm/trellis2/model.py:945-989): model_channels 1536, cond_channels 1024
# (DINOv3-L), 30 blocks, mlp_ratio 5.3334; the structure_model (SparseStructureFlowModel, resolution 16, 8 channels)
# is the dense stage traced here; img2shape / img2shape_512 / shape2txt are built (their weights count) but not run
TRELLIS2 = {"image_model": "trellis2", "resolution": 64, "init_txt_model": True, "txt_only": False}
# Pixal3D: the same branch with a <sub>.blocks.0.cross_attn.proj_linear.weight key in every sub-model
# (model_detection.py:134-141): image_attn_mode "proj" with proj_in_channels 1024 (structure) / 2048 (shape,
# texture); the proj_linear layers (30 x (1024 + 3 x 2048) x 1536 = 330M) are what the published int8 file has over
# TRELLIS.2's (5,583,457,485 - 5,250,597,519 bytes, families/trellis2.py)
PIXAL3D = {**TRELLIS2, "image_attn_mode_structure": "proj", "proj_in_channels_structure": 1024,
           "image_attn_mode_shape": "proj", "proj_in_channels_shape": 2048,
           "image_attn_mode_texture": "proj", "proj_in_channels_texture": 2048}
# model_detection.py:812-813 (keys cam_out_layer.weight + repo_layers.0.final_map.weight -> {"image_model":
# "triposplat"}, no shapes read); supported_models.TripoSplat (:1626-1648: memory_usage_factor 0.6, shift 3.0); the
# model is LatentSeqMMFlowModel with its defaults (ldm/triposplat/model.py:215-235): q_token_length 8192, 16 channels,
# 1024 wide, 16 heads of 64, 24 blocks + 2 noise-refiner + 2 context-refiner blocks, MLP 4096, cond 1280 (DINOv3
# ViT-H/16+), cond2 128 (Flux.2 VAE latent), camera 5 (triposplat_fp16.safetensors, about 370M parameters)
TRIPOSPLAT = {"image_model": "triposplat"}
# model_detection.py:690-728 (no shapes read: the config is fixed per size). 3B (:717-727, key
# blocks.31.mlp.all.proj_in_gate.weight): vid_dim 2560, 20 heads, 32 layers, SwiGLU, vid_out_norm; NaDiT's defaults
# (ldm/seedvr/model.py:1119-1160) for the rest: head 128, mm_layers 10, mmrope3d (rope_dim 128), vid_in 33 channels,
# txt_in 5120. 7B (:690-703, a 3072-row blocks.35.mlp.vid.proj_out.weight: the published 7B, separate vid / txt weights
# in every block): vid_dim 3072, 24 heads, 36 layers, mm_layers 36, rope3d (rope_dim 64), GELU MLP ("normal").
# supported_models.SeedVR2 (:1759-1790): no memory_usage_factor of its own (BASE's 2.0). The 3B at 3.3B parameters
# and the 7B at 8.2B match the published int8 files (3.22 / 7.76 GiB at one byte a weight)
SEEDVR2_3B = {"image_model": "seedvr2", "vid_dim": 2560, "heads": 20, "num_layers": 32, "norm_eps": 1.0e-05,
              "mlp_type": "swiglu", "vid_out_norm": True}
SEEDVR2_7B = {"image_model": "seedvr2", "vid_dim": 3072, "heads": 24, "num_layers": 36, "mm_layers": 36,
              "norm_eps": 1e-5, "rope_type": "rope3d", "rope_dim": 64, "mlp_type": "normal"}
MINIMAX_H3 = {
    "image_model": "minimax_h3", "num_layers": 50, "token_refiner_num_layers": 2, "hidden_size": 5376,
    "latents_dim": 24, "audio_latents_dim": 32, "attention_head_dim": 128, "num_attention_heads": 56,
    "ffn_hidden_size": 14336, "text_dim": 5120, "timestep_input_dim": 256, "time_embed_hidden_size": 5376,
    "time_embed_dim": 2688, "rope_inv_freq_len": 16,
}

# model_detection.py:319-328 (Lightricks branch; audio_adaln_single.linear.weight present -> "ltxav"): num_layers =
# transformer blocks, attention_head_dim = attn2.to_k rows / 32, cross_attention_dim = its columns, then the
# checkpoint's metadata["config"]["transformer"]. Lightricks/LTX-2 (ltx-2-19b-dev) transformer config: 48 layers,
# 32 heads x 128 (to_k [4096, 4096]), audio 32 heads x 64 (2048), caption_channels 3840 (Gemma 3 12B), audio_in /
# video_in 128 channels: LTXAVModel's defaults (ldm/lightricks/av_model.py:381-407), which the metadata repeats.
LTX2_19B = {"image_model": "ltxav", "num_layers": 48, "attention_head_dim": 128, "cross_attention_dim": 4096}

# LTX-2.3 22B: the same Lightricks branch (model_detection.py:319-328): 48 blocks, attn2.to_k [4096, 4096] -> 32 x 128,
# cross_attention_dim 4096, then metadata["config"]["transformer"] (the 22B files' header), which switches on what makes
# 2.3 bigger: gated attention in every block (apply_gated_attention: to_gate_logits), cross-attention AdaLN
# (cross_attention_adaln: 9-row scale_shift tables + prompt_adaln_single / audio_prompt_adaln_single), the caption
# projection moved before the connectors and dropped (caption_proj_before_connector, caption_projection_first_linear
# false: the text encoder's DualLinearProjection, text_encoders/lt.py:100-113 and 130-131, already gives [N, 4096 + 2048]) and two
# 8-layer gated connectors (video 32 x 128 = 4096, audio 32 x 64 = 2048; LTX-2: 2 layers of 30 x 128 = 3840).
# Sources: huggingface/diffusers scripts/convert_ltx2_to_diffusers.py (17b53f08) version "2.3": transformer
# gated_attn / cross_attn_mod / audio_gated_attn / audio_cross_attn_mod True, 48 layers, 32 x 128, audio 32 x 64;
# connectors video 32 x 128 and audio 32 x 64, 8 layers, 128 registers, gated, per_modality_projections 4096 / 2048;
# the checkpoint header's transformer section as ported readers quote it (connector_num_layers 8,
# connector_apply_gated_attention, caption_proj_before_connector true, caption_projection_first_linear false,
# rope_type split, frequencies_precision float64, use_middle_indices_grid true).
LTX2_3_22B = {
    **LTX2_19B, "apply_gated_attention": True, "cross_attention_adaln": True, "caption_proj_before_connector": True,
    "caption_projection_first_linear": False, "connector_num_layers": 8, "connector_num_attention_heads": 32,
    "connector_attention_head_dim": 128, "audio_connector_num_attention_heads": 32,
    "audio_connector_attention_head_dim": 64, "connector_apply_gated_attention": True, "rope_type": "split",
    "frequencies_precision": "float64", "use_middle_indices_grid": True, "av_ca_timestep_scale_multiplier": 1000.0,
}
# LTX-2.5 22B (ComfyUI 0.33 calls it "LTX 2.4"): the Lightricks branch of model_detection.py:419-429 with the file's
# metadata config, i.e. LTX-2.3's layout (LTX2_3_22B above) plus the two keys 0.33 added: ff_bias False (no bias on
# the video feed-forwards, ldm/lightricks/model.py:726, av_model.py:418) and use_keyframes_abs_pos_embedding (the key
# keyframes_abs_pos_embedding present, model_detection.py:428; one [1, 4096] marker, model.py:788-792); matched by
# supported_models.LTXAV (:945-955). families/ltx.py:10-18: 21,004,025,600 parameters built so.
LTX25_22B = {**LTX2_3_22B, "ff_bias": False, "use_keyframes_abs_pos_embedding": True}

# model_detection.py:642-685 (0.33.0; key blocks.0.norm1.linear.weight -> "cogvideox"): heads = norm1 rows / 6 / 64,
# time_embed_dim = its columns, layers counted; patch_embed.proj a Conv2d (CogVideoX 1.0: patch 2) or a Linear
# (1.5: patch 2, patch_size_t 2, in_channels = columns / 8); no patch_embed.pos_embedding key -> rotary. The shapes are
# THUDM/CogVideoX-5b's and alibaba-pai/CogVideoX-Fun-V1.5-5b-InP's (Comfy-Org void-model void_pass1/2: in_channels 48,
# supported_models.CogVideoX_Inpaint) and THUDM/CogVideoX-2b's (30 heads, 30 layers)
_COGVIDEOX = {"image_model": "cogvideox", "attention_head_dim": 64, "time_embed_dim": 512, "patch_size": 2,
              "text_embed_dim": 4096, "use_learned_positional_embeddings": False,
              "use_rotary_positional_embeddings": True}
COGVIDEOX_2B = {**_COGVIDEOX, "num_attention_heads": 30, "num_layers": 30, "in_channels": 16}
COGVIDEOX_5B = {**_COGVIDEOX, "num_attention_heads": 48, "num_layers": 42, "in_channels": 16}
COGVIDEOX15_5B_INP = {**_COGVIDEOX, "num_attention_heads": 48, "num_layers": 42, "in_channels": 48, "patch_size_t": 2}


# model_detection.py:696-699 (ACE-Step 1.5 branch: encoder.lyric_encoder.layers.0.input_layernorm.weight present):
# {"audio_model": "ace1.5"} and nothing else, matched by supported_models.ACEStep15 (memory_usage_factor 4.7); the
# model is AceStepConditionGenerationModel with its defaults (ldm/ace/ace_step15.py:1012-1039): a 24-layer DiT of
# 2048 (16 heads / 8 KV heads x 128, MLP 6144, patch 2, sliding window 128 on the even layers), in_channels 192 =
# 64 noisy + 64 context (LM hints or source latent) + 64 chunk mask, text_hidden_dim 1024 (Qwen3 0.6B), an 8-layer
# lyric encoder and a 4-layer timbre encoder (2048), a 2-layer audio tokenizer / detokenizer (FSQ, 5 latents per code).
ACE_STEP_15 = {"audio_model": "ace1.5"}


# model_detection.py:700-830 (the SD UNet branch) on svd_xt.safetensors' keys: label_emb.0.0.weight [1280, 768] ->
# adm_in_channels 768 (fps / motion bucket / augmentation, 3 x 256 timestep embeddings); input_blocks.0.0.weight
# [320, 8] (4 noise + 4 concat image-latent channels); SD 2.x layout (channel_mult 1-2-4-4, 64-wide heads, linear
# in/out projections, context 1024 = the CLIP-ViT-H image embedding); time_stack.0.attn1 / attn2 present -> the video
# keys of :812-820 (temporal res blocks with [3, 1, 1] kernels, temporal attention with cross-attention, learned
# image/video mixing). Matched by supported_models.SVD_img2vid (:301-318: num_head_channels 64, fp32 attention).
# stabilityai/generative-models configs/inference/svd.yaml: the same VideoUNet (model_channels 320, attention at
# 1/2/4, transformer depth 1, context_dim 1024, adm 768, video_kernel_size [3, 1, 1], extra_ff_mix_layer,
# merge_strategy learned_with_images).
SVD = {
    'use_checkpoint': False, 'image_size': 32, 'use_spatial_transformer': True, 'legacy': False,
    'num_classes': 'sequential', 'adm_in_channels': 768, 'in_channels': 8, 'out_channels': 4, 'model_channels': 320,
    'num_res_blocks': [2, 2, 2, 2], 'transformer_depth': [1, 1, 1, 1, 1, 1, 0, 0], 'channel_mult': [1, 2, 4, 4],
    'transformer_depth_output': [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0], 'transformer_depth_middle': 1,
    'use_linear_in_transformer': True, 'context_dim': 1024, 'num_head_channels': 64,
    'extra_ff_mix_layer': True, 'use_spatial_context': True, 'merge_strategy': 'learned_with_images',
    'merge_factor': 0.0, 'video_kernel_size': [3, 1, 1], 'use_temporal_resblock': True,
    'use_temporal_attention': True, 'disable_temporal_crossattention': False}


@dataclass(frozen=True)
class Case:
    arch: str
    batch: int
    width: int = 0
    height: int = 0
    frames: int = 1
    text_tokens: int = 0
    refs: int = 0  # reference latents of the output size on the conditioning (an arch's conds read it)

    def label(self) -> str:
        s = f"{self.arch} B{self.batch}"
        if self.width:
            s += f" {self.width}x{self.height}"
        if self.frames > 1:
            s += f"x{self.frames}f"
        if self.refs:
            s += f" ref{self.refs}"
        return s + f" txt{self.text_tokens}"


@dataclass(frozen=True)
class Arch:
    family: str
    kind: str  # "diffusion" | "text_encoder"
    build: Callable[[], Any]
    latent_shape: Callable[[Case], list]  # shape reaching model.apply_model (batch first)
    tokens: Callable[[Case], int]
    token_rule: str
    cases: list
    extra: Callable[[Case], dict] = field(default=lambda c: {})
    context_dim: int = 4096
    comfy_class: str = ""
    # ComfyUI 0.18.2 families (issue 10): the conditioning goes through the model's own
    # ``extra_conds`` (model_base.py) as the sampler builds it, with these keyword arguments per case
    # (reference latents, ...); None = the explicit ``extra`` dict above (the 0.8.0 families).
    conds: Callable[[Case], dict] | None = None
    config: dict | None = None  # the unet_config (for memory_usage_factor)
    pooled_dim: int | None = None  # pooled text vector passed as pooled_output (CLIP-L 768, CLIP-G+L 2048)
    extra_area: Callable[[Case], int] = field(default=lambda c: 0)  # ComfyUI's memory_usage_factor_conds area
    patch: Callable[[], Any] | None = None  # a context manager around the trace (see HiDreamBalancedRouting)


def _latent_T(frames: int, temporal: int = 4) -> int:
    return (frames - 1) // temporal + 1


def _grid(cases_spec) -> list:
    return [Case(**c) for c in cases_spec]


def _arches() -> dict[str, Arch]:
    import torch

    def flux_extra(c: Case) -> dict:
        # model_base.Flux.extra_conds: guidance [B] fp32; adm y = CLIP-L pooled [B, 768]
        out = {"guidance": torch.full((c.batch,), 3.5, device="cuda"),
               "y": torch.zeros((c.batch, 768), device="cuda")}
        if _BUILD["flux_ref"]:
            # Kontext: one reference latent of the same size (ReferenceLatent node -> ref_latents list,
            # CONDList.process_cond repeats it to the batch);
            # Flux._forward appends its tokens to the image tokens.
            out["ref_latents"] = [torch.zeros((c.batch, 16, c.height // 8, c.width // 8), device="cuda")]
        return out

    def sdxl_extra(c: Case) -> dict:
        return {"y": torch.zeros((c.batch, 2816), device="cuda")}  # SDXL.encode_adm -> [B, 2816]

    def hunyuan_extra(c: Case) -> dict:
        return {"guidance": torch.full((c.batch,), 6.0, device="cuda"),
                "y": torch.zeros((c.batch, 768), device="cuda")}

    def wan_extra(c: Case) -> dict:
        if not _BUILD["wan_i2v"]:
            return {}
        # WAN21.concat_cond -> c_concat [B, 4 mask + 16 image, T, H/8, W/8]; clip_fea = CLIP-H
        # penultimate hidden states [B, 257, 1280] (extra_conds: clip_vision_output).
        T = _latent_T(c.frames)
        return {"c_concat": torch.zeros((c.batch, 20, T, c.height // 8, c.width // 8), device="cuda"),
                "clip_fea": torch.zeros((c.batch, 257, 1280), device="cuda")}

    flux_cases = _grid([dict(arch="flux1-dev", batch=b, width=s, height=s, text_tokens=t)
                        for s in (512, 768, 1024, 1536, 2048) for b in (1, 2) for t in (256, 512)]
                       + [dict(arch="flux1-dev", batch=4, width=s, height=s, text_tokens=512) for s in (1024, 2048)]
                       + [dict(arch="flux1-dev", batch=1, width=w, height=h, text_tokens=512)
                          for (w, h) in ((1344, 768), (832, 1216))])
    wan_cases = lambda fam: _grid([dict(arch=fam, batch=b, width=w, height=h, frames=f, text_tokens=512)
                                   for (w, h) in ((832, 480), (1280, 720)) for f in (17, 33, 49, 81)
                                   for b in (1, 2)])
    wan5_cases = _grid([dict(arch="wan2.2-ti2v-5b", batch=b, width=1280, height=704, frames=f, text_tokens=512)
                        for f in (49, 121) for b in (1, 2)]
                       + [dict(arch="wan2.2-ti2v-5b", batch=1, width=w, height=h, frames=f, text_tokens=512)
                          for (w, h, f) in ((832, 480, 81), (1280, 704, 81), (960, 544, 121))])
    sdxl_cases = _grid([dict(arch="sdxl", batch=b, width=s, height=s, text_tokens=77)
                        for s in (1024, 1536, 2048) for b in (1, 2)]
                       + [dict(arch="sdxl", batch=1, width=s, height=s, text_tokens=77) for s in (768, 1280)]
                       + [dict(arch="sdxl", batch=4, width=s, height=s, text_tokens=77) for s in (1024, 2048)]
                       + [dict(arch="sdxl", batch=1, width=1344, height=768, text_tokens=77)])
    sd15_cases = _grid([dict(arch="sd15", batch=b, width=s, height=s, text_tokens=77)
                        for s in (512, 768, 1024) for b in (1, 2)]
                       + [dict(arch="sd15", batch=4, width=s, height=s, text_tokens=77) for s in (512, 1024)]
                       + [dict(arch="sd15", batch=1, width=768, height=512, text_tokens=77)])
    qwen_cases = _grid([dict(arch="qwen-image", batch=b, width=s, height=s, text_tokens=t)
                        for s in (1024, 1328, 1664) for b in (1, 2) for t in (128, 512)]
                       + [dict(arch="qwen-image", batch=4, width=s, height=s, text_tokens=128) for s in (1024, 1664)])
    hunyuan_cases = _grid([dict(arch="hunyuan-video", batch=b, width=w, height=h, frames=f, text_tokens=256)
                           for (w, h) in ((848, 480), (1280, 720)) for f in (33, 65, 129) for b in (1, 2)]
                          + [dict(arch="hunyuan-video", batch=b, width=w, height=h, frames=f, text_tokens=128)
                             for (w, h, f, b) in ((848, 480, 33, 1), (1280, 720, 65, 1), (1280, 720, 65, 2))])

    return {
        "flux1-dev": Arch(
            "flux1-dev", "diffusion", lambda: _dit_model(FLUX_DEV, "Flux"),
            lambda c: [c.batch, 16, c.height // 8, c.width // 8],
            lambda c: (c.height // 16) * (c.width // 16) * (2 if _BUILD["flux_ref"] else 1),
            "tokens = (H/16)*(W/16) (VAE /8, patch 2), plus (h/16)*(w/16) per Kontext reference image; "
            "text_tokens = T5 tokens (256 schnell / 512 dev typical)",
            flux_cases, flux_extra, 4096, "Flux"),
        "wan2.1-14b": Arch(
            "wan2.1-14b", "diffusion",
            lambda: (_dit_model(WAN_14B_I2V, "WAN21_I2V") if _BUILD["wan_i2v"] else _dit_model(WAN_14B_T2V, "WAN21_T2V")),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c: _latent_T(c.frames) * (c.height // 16) * (c.width // 16),
            "tokens = ((L-1)//4+1)*(H/16)*(W/16) (VAE /8 spatial /4 temporal, patch 1x2x2); text_tokens = 512 umT5",
            wan_cases("wan2.1-14b"), wan_extra, 4096, "WAN21_T2V"),
        "wan2.1-1.3b": Arch(
            "wan2.1-1.3b", "diffusion", lambda: _dit_model(WAN_13B_T2V, "WAN21_T2V"),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c: _latent_T(c.frames) * (c.height // 16) * (c.width // 16),
            "tokens = ((L-1)//4+1)*(H/16)*(W/16); text_tokens = 512 umT5",
            wan_cases("wan2.1-1.3b"), lambda c: {}, 4096, "WAN21_T2V"),
        "wan2.2-ti2v-5b": Arch(
            "wan2.2-ti2v-5b", "diffusion", lambda: _dit_model(WAN22_5B, "WAN22_T2V"),
            lambda c: [c.batch, 48, _latent_T(c.frames), c.height // 16, c.width // 16],
            lambda c: _latent_T(c.frames) * (c.height // 32) * (c.width // 32),
            "tokens = ((L-1)//4+1)*(H/32)*(W/32) (VAE /16, patch 1x2x2); text_tokens = 512 umT5",
            wan5_cases, lambda c: {}, 4096, "WAN22_T2V"),
        "sdxl": Arch(
            "sdxl", "diffusion", lambda: _dit_model(SDXL_UNET, "SDXL"),
            lambda c: [c.batch, 4, c.height // 8, c.width // 8],
            lambda c: (c.height // 8) * (c.width // 8),
            "tokens = (H/8)*(W/8) latent pixels; text_tokens = 77 per CLIP chunk",
            sdxl_cases, sdxl_extra, 2048, "SDXL"),
        "sd15": Arch(
            "sd15", "diffusion", lambda: _dit_model(SD15_UNET, "SD15"),
            lambda c: [c.batch, 4, c.height // 8, c.width // 8],
            lambda c: (c.height // 8) * (c.width // 8),
            "tokens = (H/8)*(W/8) latent pixels; text_tokens = 77 per CLIP chunk",
            sd15_cases, lambda c: {}, 768, "SD15"),
        "qwen-image": Arch(
            "qwen-image", "diffusion", lambda: _dit_model(QWEN_IMAGE, "QwenImage"),
            lambda c: [c.batch, 16, 1, c.height // 8, c.width // 8],
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Wan 2.1 VAE /8, patch 2, T=1); text_tokens = Qwen2.5-VL tokens",
            qwen_cases, lambda c: {}, 3584, "QwenImage"),
        "hunyuan-video": Arch(
            "hunyuan-video", "diffusion", lambda: _dit_model(HUNYUAN_VIDEO, "HunyuanVideo"),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c: _latent_T(c.frames) * (c.height // 16) * (c.width // 16),
            "tokens = ((L-1)//4+1)*(H/16)*(W/16); text_tokens = llava-llama3 tokens",
            hunyuan_cases, hunyuan_extra, 4096, "HunyuanVideo"),
    }


def _arches_018() -> dict[str, Arch]:
    """ComfyUI 0.18.2 families: conditioning through model.extra_conds (see _model_conds)."""
    import torch

    def img(fam, sizes, texts, batches=(1, 2)):
        return _grid([dict(arch=fam, batch=b, width=w, height=h, text_tokens=t)
                      for (w, h) in sizes for t in texts for b in batches])

    def vid(fam, shapes, texts, batches=(1, 2)):
        return _grid([dict(arch=fam, batch=b, width=w, height=h, frames=f, text_tokens=t)
                      for (w, h, f) in shapes for t in texts for b in batches])

    def flat(c: Case, div: int, ch: int) -> list:
        return [c.batch, ch, c.height // div, c.width // div]

    def ref_latent(c: Case) -> dict:
        # ReferenceLatent / TextEncodeQwenImageEdit: one reference image of the output size, VAE
        # encoded ([1, 16, 1, h/8, w/8], Wan 2.1 VAE); its tokens join the image tokens.
        return {"reference_latents": [torch.zeros((1, 16, 1, c.height // 8, c.width // 8), device="cuda")]}

    def hidream_conds(c: Case) -> dict:
        # HiDreamTEModel.encode_token_weights: Llama 3.1 8B hidden states of all 32 layers,
        # [1, 32, N, 4096] (text_encoders/hidream.py:118-131), next to T5's [1, 128, 4096] context.
        return {"conditioning_llama3": torch.zeros((1, 32, c.text_tokens, 4096), device="cuda")}

    def t5_mask(c: Case) -> dict:
        # LTXV's T5 (text_encoders/lt.py ltxv_te -> genmo.mochi_te) returns its attention mask with the
        # conditioning; LTXVModel.forward requires it (every prompt token kept: all ones).
        return {"attention_mask": torch.ones((1, c.text_tokens), dtype=torch.long, device="cuda")}

    def clip_vision(tokens: int):
        # CLIPVisionEncode -> clip_vision_output.penultimate_hidden_states [1, 257, 1280] (ViT-H); FLF2V
        # concatenates the first and last frame's (514 tokens).
        from types import SimpleNamespace

        return lambda c: {"clip_vision_output": SimpleNamespace(
            penultimate_hidden_states=torch.zeros((1, tokens, 1280), device="cuda"))}

    def wan(fam, cfg, cls, rule, conds=lambda c: {}):
        return Arch(fam, "diffusion", lambda: _dit_model(cfg, cls),
                    lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
                    lambda c: _latent_T(c.frames) * (c.height // 16) * (c.width // 16),
                    "tokens = ((L-1)//4+1)*(H/16)*(W/16) (Wan 2.1 VAE, patch 1x2x2); text_tokens = 512 umT5; " + rule,
                    vid(fam, ((832, 480, 33), (832, 480, 81)), (512,)) + vid(fam, ((1280, 720, 81),), (512,), (1,)),
                    context_dim=4096, comfy_class=cls, conds=conds, config=cfg)

    def camera(c: Case) -> dict:
        # WanCameraEmbedding (comfy_extras/nodes_camera_trajectory.py:213-226): Pluecker rays at pixel
        # resolution, 6 channels x 4 frames per latent frame -> [1, 24, T, H, W] fp32; the model's
        # control adapter pixel-unshuffles it by 8 (ldm/wan/model.py:296).
        return {**clip_vision(257)(c), "camera_conditions": torch.zeros(
            (1, 24, _latent_T(c.frames), c.height, c.width), device="cuda")}

    def s2v_motion_tokens(c: Case) -> int:
        # FramePackMotioner (ldm/wan/model.py:1183-1218) packs the 19 reference-motion latent frames into 1 frame at
        # patch (1,2,2), 2 frames at (2,4,4) and 16 frames at (4,8,8) (Conv3d strides, floor).
        h, w = c.height // 8, c.width // 8
        return (h // 2) * (w // 2) + (h // 4) * (w // 4) + 4 * (h // 8) * (w // 8)

    def s2v_conds(c: Case) -> dict:
        # wan_sound_to_video (comfy_extras/nodes_wan.py:887-946): the audio bucket of wav2vec2-large's 25 hidden states
        # (24 layers + the feature projection, audio_encoders/audio_encoders.py:51-60; CausalAudioEncoder weights
        # [1, 25, 1, 1], ldm/wan/model.py:1032-1053) -> [1, 25, 1024, 4 * latent_T] (:887-906); the reference image
        # latent [1, 16, 1, h, w] (:908-912); control_video always, zeros of the latent's shape (:934-942).
        # Case.refs = 1: reference_motion, the last 19 latent frames of 73 motion frames (:914-930) or, in
        # WanSoundImageToVideoExtend, of the previous chunk's latent (:1006-1014).
        T, h, w = _latent_T(c.frames), c.height // 8, c.width // 8
        out = {"audio_embed": torch.zeros((1, 25, 1024, 4 * T), device="cuda"),
               "reference_latents": [torch.zeros((1, 16, 1, h, w), device="cuda")],
               "control_video": torch.zeros((1, 16, T, h, w), device="cuda")}
        if c.refs:
            out["reference_motion"] = torch.zeros((1, 16, 19, h, w), device="cuda")
        return out

    def humo_conds(c: Case) -> dict:
        # WanHuMoImageToVideo (comfy_extras/nodes_wan.py:1070-1107): one reference latent [1, 16, 1, h, w] always (a zero
        # latent without ref_image, :1074-1082); whisper-large-v3's 33 hidden states averaged into 5 bands and windowed
        # by get_audio_emb_window (8 audio frames per latent frame, :1017-1041) -> audio_embed [1, latent_T, 8, 5, 1280]
        # (:1084-1099). WAN21_HuMo.extra_conds (model_base.py:1407-1440) makes c_concat [B, 20, T, h, w] and the
        # reference [1, 36, 1, h, w]; HumoWanModel appends the reference frame's tokens (ldm/wan/model.py:1582-1587).
        T, h, w = _latent_T(c.frames), c.height // 8, c.width // 8
        return {"audio_embed": torch.zeros((1, T, 8, 5, 1280), device="cuda"),
                "reference_latents": [torch.zeros((1, 16, 1, h, w), device="cuda")]}

    def animate_conds(c: Case) -> dict:
        # WanAnimateToVideo (comfy_extras/nodes_wan.py:1146-1247): 257 CLIP-vision tokens (:1173-1175), the pose video
        # VAE-encoded over `length` frames -> pose_video_latent [1, 16, latent_T, h, w] (:1177-1191), the face video at
        # 512 x 512 px in [-1, 1] -> face_video_pixels [1, 3, length, 512, 512] fp32 (:1204-1208). c_concat is
        # WAN21.concat_cond's 20 channels over the latent's frames (mask + reference/background latent, :1237-1243).
        T, h, w = _latent_T(c.frames), c.height // 8, c.width // 8
        return {**clip_vision(257)(c),
                "pose_video_latent": torch.zeros((1, 16, T, h, w), device="cuda"),
                "face_video_pixels": torch.zeros((1, 3, c.frames, 512, 512), device="cuda")}

    def ace_conds(c: Case) -> dict:
        # TextEncodeAceStepAudio (comfy_extras/nodes_ace.py) -> AceT5Model.encode_token_weights
        # (text_encoders/ace.py:142-150): UMT5-base hidden states of the tags [1, N, 768] as the context and
        # the lyric token ids [1, M] (int64) as conditioning_lyrics; ACEStep.extra_conds (model_base.py:1647)
        # adds speaker_embeds [B, 512] and lyrics_strength. text_tokens = N + M, traced with N = 64 tags.
        tags = 64
        return {"cross_attn": torch.zeros((1, tags, 768), device="cuda"),
                "conditioning_lyrics": torch.zeros((1, c.text_tokens - tags), dtype=torch.long, device="cuda")}

    def ace_len(c: Case) -> int:
        # EmptyAceStepLatentAudio (comfy_extras/nodes_ace.py:81-84): length = int(seconds * 44100 / 512 / 8);
        # Case.frames carries the seconds.
        return int(c.frames * 44100 / 512 / 8)

    def ace15_len(c: Case) -> int:
        # EmptyAceStep15LatentAudio (comfy_extras/nodes_ace.py:104-106): [B, 64, round(seconds * 48000 / 1920)].
        return round(c.frames * 48000 / 1920)

    def ace15_conds(c: Case) -> dict:
        # TextEncodeAceStepAudio1.5 -> ACE15TEModel.encode_token_weights (text_encoders/ace15.py:292-308): the Qwen3
        # 0.6B last hidden states of the caption template [1, N, 1024] as the context, its embedding-layer output for the
        # lyric template [1, M, 1024] as conditioning_lyrics, and (generate_audio_codes, on by default) 5 * ceil(duration)
        # LM audio codes; ACEStep15.extra_conds (model_base.py:1662-1703) adds the silence reference refer_audio [1, 64, L].
        caption = 128
        return {"cross_attn": torch.zeros((1, caption, 1024), device="cuda"),
                "conditioning_lyrics": torch.zeros((1, c.text_tokens - caption, 1024), device="cuda"),
                "audio_codes": [[0] * (5 * math.ceil(c.frames))]}

    def ltx2_video(c: Case) -> list:
        # EmptyLTXVLatentVideo (comfy_extras/nodes_lt.py): [B, 128, (L-1)//8+1, H/32, W/32].
        return [c.batch, 128, _latent_T(c.frames, 8), c.height // 32, c.width // 32]

    def ltx2_audio(c: Case) -> list:
        # LTXVEmptyLatentAudio (comfy_extras/nodes_lt_audio.py:147-160): [B, z 8, ceil(L / fps * latents_per_second),
        # mel_bins / 4]; the LTX-2 audio VAE (16 kHz, mel_hop_length 160, 64 mel bins, z_channels 8,
        # ldm/lightricks/vae/audio_vae.py:231-267) gives 25 latents per second and 16 frequency bins; fps 25.
        return [c.batch, 8, math.ceil(c.frames / 25 * 25), 16]

    def ltx2_conds(c: Case) -> dict:
        # LTXVConcatAVLatent makes the latent a NestedTensor (video, audio); CFGGuider.sample packs it with
        # comfy.utils.pack_latents into [B, 1, V + A] and passes latent_shapes to extra_conds (samplers.py:1008-1010,
        # 784-794), and _apply_model unpacks it before the diffusion model (model_base.py:207-208).
        # LTXAVTEModel returns the projected Gemma states [1, N, 3840] with unprocessed_ltxav_embeds
        # (text_encoders/lt.py:164-190); LTXAV.extra_conds runs the video / audio connectors on it.
        return {"latent_shapes": [ltx2_video(c), ltx2_audio(c)], "unprocessed_ltxav_embeds": True,
                "frame_rate": 25}

    squares = ((1024, 1024), (1328, 1328))
    return {
        "lotus-d": Arch(
            "lotus-d", "diffusion", lambda: _dit_model(LOTUS_D, "LotusD"), lambda c: flat(c, 8, 4),
            lambda c: (c.height // 8) * (c.width // 8),
            "tokens = (H/8)*(W/8) latent pixels (SD 2 UNet, VAE /8); text_tokens = 2 (LotusConditioning's fixed "
            "[1, 2, 1024] null prompt, comfy_extras/nodes_lotus.py); y = the [1, 4] task embedding",
            img("lotus-d", ((512, 512), (1024, 1024)), (2,)) + img("lotus-d", ((768, 768), (1536, 1536)), (2,), (1,)),
            context_dim=1024, comfy_class="LotusD", conds=lambda c: {}, config=LOTUS_D),
        "hunyuan3d-2.1": Arch(
            "hunyuan3d-2.1", "diffusion", lambda: _dit_model(HUNYUAN3D_21, "Hunyuan3Dv2_1"),
            lambda c: [c.batch, 64, c.frames], lambda c: c.frames,
            "tokens = the latent length (EmptyLatentHunyuan3Dv2 'resolution', default 3072; latent [B, 64, N], one "
            "token per column, plus 1 timestep token); frames = N; text_tokens = 1370 DINOv2-L tokens "
            "(CLIPVisionEncode at 518 px: 37 x 37 patches + CLS, last_hidden_state). HunYuanDiTPlain.forward splits "
            "the context into cond/uncond halves, so a call always has an even batch: batch 2 = one sample with CFG; "
            "MoE layers traced with balanced routing",
            _grid([dict(arch="hunyuan3d-2.1", batch=b, frames=n, text_tokens=1370)
                   for n in (3072, 4096, 8192) for b in (2, 4)]),
            context_dim=1024, comfy_class="Hunyuan3Dv2_1", conds=lambda c: {}, config=HUNYUAN3D_21,
            patch=Hunyuan3DBalancedRouting),
        "hunyuan3d-2.0": Arch(
            "hunyuan3d-2.0", "diffusion", lambda: _dit_model(HUNYUAN3D_20, "Hunyuan3Dv2"),
            lambda c: [c.batch, 64, c.frames], lambda c: c.frames,
            "tokens = the latent length (EmptyLatentHunyuan3Dv2 'resolution', default 3072; latent [B, 64, N], one "
            "token per column, no patching; the Flux-style single blocks see text_tokens + N); frames = N; "
            "text_tokens = 1370 DINOv2-giant tokens (CLIPVisionEncode, crop none, 518 px: 37 x 37 patches + CLS, "
            "last_hidden_state [1, 1370, 1536], Hunyuan3Dv2Conditioning). Batch 2 = one sample with CFG (cond and "
            "uncond in one call)",
            _grid([dict(arch="hunyuan3d-2.0", batch=b, frames=n, text_tokens=1370)
                   for n in (3072, 4096, 8192) for b in (1, 2)]),
            context_dim=1536, comfy_class="Hunyuan3Dv2", conds=lambda c: {}, config=HUNYUAN3D_20),
        "hunyuan3d-2.0-mv": Arch(
            "hunyuan3d-2.0-mv", "diffusion", lambda: _dit_model(HUNYUAN3D_20_MV_TURBO, "Hunyuan3Dv2"),
            lambda c: [c.batch, 64, c.frames], lambda c: c.frames,
            "tokens = the latent length N (as hunyuan3d-2.0); text_tokens = 1370 per view given to "
            "Hunyuan3Dv2ConditioningMultiView (front / left / back / right: concatenated along the tokens, 5480 for "
            "4 views). Same class and DiT as hunyuan3d-2.0; traced with the -mv-turbo file's guidance_in "
            "(FluxGuidance), which the plain -mv file lacks (1.3M parameters, no working-memory difference)",
            _grid([dict(arch="hunyuan3d-2.0-mv", batch=b, frames=n, text_tokens=5480)
                   for n in (3072, 8192) for b in (1, 2)]
                  + [dict(arch="hunyuan3d-2.0-mv", batch=2, frames=4096, text_tokens=5480),
                     dict(arch="hunyuan3d-2.0-mv", batch=2, frames=3072, text_tokens=2740),
                     dict(arch="hunyuan3d-2.0-mv", batch=1, frames=3072, text_tokens=4110)]),
            context_dim=1536, comfy_class="Hunyuan3Dv2", conds=lambda c: {"guidance": 3.5}, config=HUNYUAN3D_20_MV_TURBO),
        "longcat-image": Arch(
            "longcat-image", "diffusion", lambda: _dit_model(LONGCAT_IMAGE, "LongCatImage"), lambda c: flat(c, 8, 16),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Flux VAE /8, patch 2; EmptySD3LatentImage); text_tokens = 512 (LongCatImageTokenizer "
            "pads / truncates the prompt to 512 Qwen2.5-VL 7B tokens and the encoder drops the chat template, "
            "text_encoders/longcat_image.py), context [1, 512, 3584]",
            img("longcat-image", ((1024, 1024), (1536, 1536)), (512,)) + img("longcat-image", ((2048, 2048),), (512,), (1,)),
            context_dim=3584, comfy_class="LongCatImage", conds=lambda c: {}, config=LONGCAT_IMAGE),
        "longcat-image-edit": Arch(
            "longcat-image-edit", "diffusion", lambda: _dit_model(LONGCAT_IMAGE, "LongCatImage"),
            lambda c: flat(c, 8, 16), lambda c: 2 * (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) of the output plus (h/16)*(w/16) per reference image (TextEncodeQwenImageEdit scales "
            "the image to 1 MP and VAE-encodes it; FluxKontextMultiReferenceLatentMethod 'index'; traced with one "
            "reference of the output size); text_tokens = 512 (as longcat-image; LongCat's tokenizer takes no image "
            "tokens)",
            img("longcat-image-edit", ((1024, 1024), (1328, 1328)), (512,)),
            context_dim=3584, comfy_class="LongCatImage",
            conds=lambda c: {"reference_latents": [torch.zeros((1, 16, c.height // 8, c.width // 8), device="cuda")],
                             "reference_latents_method": "index"},
            config=LONGCAT_IMAGE, extra_area=lambda c: (c.height // 8) * (c.width // 8)),
        "anima": Arch(
            "anima", "diffusion", lambda: _dit_model(ANIMA, "Anima"),
            lambda c: [c.batch, 16, 1, c.height // 8, c.width // 8], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Qwen-Image VAE /8, patch 2, one frame; EmptyLatentImage's 4 channels become 16 in "
            "fix_empty_latent_channels); text_tokens = max(512, T5 tokens of the prompt): AnimaTEModel returns Qwen3 "
            "0.6B states [1, N, 1024] plus the prompt's T5 token ids, and Anima.extra_conds runs the LLM adapter once "
            "(outside the sampling loop) and pads its output to 512 (ldm/anima/model.py:198-206); traced through "
            "extra_conds with N = text_tokens Qwen3 and T5 tokens",
            img("anima", ((1024, 1024), (1536, 1536)), (512,)) + img("anima", ((2048, 2048),), (512,), (1,))
            + img("anima", ((1024, 1024),), (768,), (1,)),
            context_dim=1024, comfy_class="Anima", config=ANIMA,
            conds=lambda c: {"t5xxl_ids": torch.zeros((c.text_tokens,), dtype=torch.int, device="cuda"),
                             "t5xxl_weights": torch.ones((c.text_tokens,), device="cuda")}),
        "omnigen2": Arch(
            "omnigen2", "diffusion", lambda: _dit_model(OMNIGEN2, "Omnigen2"), lambda c: flat(c, 8, 16),
            lambda c: (1 + c.refs) * (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) of the output plus (h/16)*(w/16) per reference image (Flux VAE /8, patch 2; "
            "ReferenceLatent appends the VAE-encoded image to the conditioning's reference_latents, "
            "nodes_edit_model.py; OmniGen2 runs them through its 2 ref_image_refiner layers, then attends over "
            "text + references + image in its 32 layers); traced without and with 1-2 references of the output "
            "size; text_tokens = Qwen2.5-VL 3B tokens of the prompt in the model's chat template (the templates' "
            "prompts: 43-73), num_tokens = all of them (a one-prompt mask is all ones, model_base.py:1709-1716)",
            img("omnigen2", ((1024, 1024),), (64, 256)) + img("omnigen2", ((1536, 1536),), (64,))
            + img("omnigen2", ((2048, 2048),), (64,), (1,))
            + _grid([dict(arch="omnigen2", batch=b, width=s, height=s, text_tokens=64, refs=1)
                     for s in (1024, 1536) for b in (1, 2)])
            + _grid([dict(arch="omnigen2", batch=1, width=1024, height=1024, text_tokens=64, refs=2)]),
            context_dim=2048, comfy_class="Omnigen2", config=OMNIGEN2, patch=Omnigen2FullMask,
            conds=lambda c: {"reference_latents": [torch.zeros((1, 16, c.height // 8, c.width // 8), device="cuda")
                                                   for _ in range(c.refs)]} if c.refs else {},
            extra_area=lambda c: c.refs * (c.height // 8) * (c.width // 8)),
        "ltx2-19b": Arch(
            "ltx2-19b", "diffusion", lambda: _dit_model(LTX2_19B, "LTXAV"),
            lambda c: [c.batch, 1, math.prod(ltx2_video(c)[1:]) + math.prod(ltx2_audio(c)[1:])],
            lambda c: math.prod(ltx2_video(c)[2:]),
            "tokens = video tokens ((L-1)//8+1)*(H/32)*(W/32) (LTX-2 VAE /32 spatial /8 temporal, patch 1); the "
            "audio stream adds ceil(L / fps * 25) audio tokens (= L at 25 fps; latent [B, 8, Ta, 16] -> Ta tokens "
            "of 128 channels, 2048 wide), traced at 25 fps next to the video tokens in every block; text_tokens = "
            "max(1024, Gemma 3 prompt tokens) (the connectors pad with learnable registers to 1024), fed as "
            "LTXAVTEModel's unprocessed [1, N, 3840] through LTXAV.extra_conds",
            vid("ltx2-19b", ((768, 512, 97), (1280, 720, 121)), (1024,))
            + vid("ltx2-19b", ((768, 512, 193),), (1024,), (1,)),
            context_dim=3840, comfy_class="LTXAV", conds=ltx2_conds, config=LTX2_19B),
        "ltx2.3-22b": Arch(
            "ltx2.3-22b", "diffusion", lambda: _dit_model(LTX2_3_22B, "LTXAV"),
            lambda c: [c.batch, 1, math.prod(ltx2_video(c)[1:]) + math.prod(ltx2_audio(c)[1:])],
            lambda c: math.prod(ltx2_video(c)[2:]),
            "tokens = video tokens ((L-1)//8+1)*(H/32)*(W/32) (LTX-2.3 VAE /32 spatial /8 temporal, patch 1); the audio "
            "stream adds ceil(L / fps * 25) audio tokens (latent [B, 8, Ta, 16], 2048 wide), traced at 25 fps; "
            "text_tokens = max(1024, Gemma 3 prompt tokens), fed as LTXAVTEModel's dual_linear output [1, N, 4096 + 2048] "
            "(text_encoders/lt.py:130-131, 186-188) through LTXAV.extra_conds (two 8-layer gated connectors, "
            "av_model.py:533-580); same layout as ltx2-19b plus gated attention and cross-attention AdaLN",
            vid("ltx2.3-22b", ((768, 512, 97), (1280, 720, 121)), (1024,))
            + vid("ltx2.3-22b", ((768, 512, 193),), (1024,), (1,)),
            context_dim=6144, comfy_class="LTXAV", conds=ltx2_conds, config=LTX2_3_22B),
        "svd": Arch(
            "svd", "diffusion", lambda: _dit_model(SVD, "SVD_img2vid"),
            lambda c: [c.batch, 4, c.height // 8, c.width // 8], lambda c: (c.height // 8) * (c.width // 8),
            "batch = latent frames in the call (SVD_img2vid_Conditioning's video_frames; x2 when cond and uncond run "
            "together under CFG); tokens = (H/8)*(W/8) per frame (SD VAE /8, no patching; the spatial blocks attend "
            "within a frame, the temporal blocks across the frames at each position); text_tokens = 1 (the CLIP-ViT-H "
            "image embedding [1, 1, 1024] as context); SVD_img2vid.extra_conds adds the concat image latent (4 channels, "
            "repeated to every frame), the 768-wide fps / motion / augmentation vector and num_video_frames = batch",
            _grid([dict(arch="svd", batch=f, width=w, height=h, text_tokens=1)
                   for (w, h) in ((1024, 576), (768, 448)) for f in (14, 25)]
                  + [dict(arch="svd", batch=50, width=1024, height=576, text_tokens=1),
                     dict(arch="svd", batch=14, width=512, height=512, text_tokens=1)]),
            context_dim=1024, comfy_class="SVD_img2vid", config=SVD,
            conds=lambda c: {"concat_latent_image": torch.zeros((1, 4, c.height // 8, c.width // 8), device="cuda"),
                             "cross_attn": torch.zeros((1, 1, 1024), device="cuda"),
                             "fps": 6, "motion_bucket_id": 127, "augmentation_level": 0.0}),
        "ace-step-1.5": Arch(
            "ace-step-1.5", "diffusion", lambda: _dit_model(ACE_STEP_15, "ACEStep15"),
            lambda c: [c.batch, 64, ace15_len(c)], lambda c: (ace15_len(c) + 1) // 2,
            "tokens = ceil(L / 2) with L = round(seconds * 48000 / 1920) = 25 latents per second (EmptyAceStep1.5LatentAudio, "
            "latent [B, 64, L]; patch 2 -> 12.5 DiT tokens of 2048 per second); frames = seconds of audio; text_tokens = "
            "Qwen3 0.6B caption tokens + lyric tokens, traced with 128 caption tokens (the caption + metas template). The "
            "timbre encoder (4 layers of 2048 over all L latents of the silence reference) and the detokenizer (5 latents per "
            "audio code) run inside every call; the template's audio codes (generate_audio_codes, 5 per second of "
            "duration) are passed; the peak is the detokenizer (B * L rows of 2048, ~0.1 MB per DiT token per sample). Not "
            "in the fit: the sliding-window mask of the even DiT layers (ace_step15.py:226-237) builds int64 [N, N] index "
            "differences and their abs before the bool window, ~17 * N^2 bytes at once, batch-independent: 1.06 GiB peak "
            "at N = 7500 (600 s, batch 1, traced); it is the peak above ~480 s at batch 1 (EmptyAceStep1.5LatentAudio "
            "allows 1000 s, N = 12500: ~2.5 GiB); the working memory is the larger of the two",
            _grid([dict(arch="ace-step-1.5", batch=1, frames=s, text_tokens=640) for s in (30, 120, 240, 360)]
                  + [dict(arch="ace-step-1.5", batch=2, frames=s, text_tokens=640) for s in (120, 600)]
                  + [dict(arch="ace-step-1.5", batch=1, frames=240, text_tokens=1152)]),
            context_dim=1024, comfy_class="ACEStep15", conds=ace15_conds, config=ACE_STEP_15, patch=Ace15FakeSafe),
        "ace-step-v1": Arch(
            "ace-step-v1", "diffusion", lambda: _dit_model(ACE_STEP_V1, "ACEStep"),
            lambda c: [c.batch, 8, 16, ace_len(c)], ace_len,
            "tokens = latent length L = int(seconds * 44100 / 512 / 8) (~10.77 per second; latent [B, 8, 16, L], "
            "patch (16, 1) -> L tokens of 2560); frames = seconds of audio; text_tokens = UMT5-base tag tokens + "
            "lyric tokens (the cross-attention context is 1 speaker + tags + lyrics), traced with 64 tag tokens and "
            "up to 512 lyric tokens. Not in the fit: the lyric encoder (a Conformer with relative-position "
            "attention, N x N scores, independent of the audio length) peaks on its own at 0.074 GiB for 512 lyric "
            "tokens and 0.207 GiB for 1024 (batch 1, roughly quadratic); the working memory is the larger of the two",
            _grid([dict(arch="ace-step-v1", batch=1, frames=s, text_tokens=320) for s in (30, 60, 120, 240)]
                  + [dict(arch="ace-step-v1", batch=2, frames=s, text_tokens=320) for s in (60, 240)]
                  + [dict(arch="ace-step-v1", batch=1, frames=240, text_tokens=576)]),
            context_dim=768, comfy_class="ACEStep", conds=ace_conds, config=ACE_STEP_V1),
        "wan2.1-14b-camera": wan("wan2.1-14b-camera", WAN_14B_CAMERA, "WAN21_Camera",
                                 "c_concat 16 reference channels + 257 CLIP-vision tokens + the camera "
                                 "embedding [1, 24, T, H, W] fp32 (pixel resolution)", camera),
        "wan2.2-14b-s2v": Arch(
            "wan2.2-14b-s2v", "diffusion", lambda: _dit_model(WAN22_14B_S2V, "WAN22_S2V"),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c: (_latent_T(c.frames) + 1) * (c.height // 16) * (c.width // 16) + (s2v_motion_tokens(c) if c.refs else 0),
            "tokens = the tokens WanModel_S2V attends over: ((L-1)//4+1 + 1 reference frame)*(H/16)*(W/16), plus with "
            "reference motion (refs=1: WanSoundImageToVideo's ref_motion, or WanSoundImageToVideoExtend's previous "
            "latent) FramePackMotioner's (H/16)(W/16) + (H/32)(W/32) + 4(H/64)(W/64) (ldm/wan/model.py:1322-1340); the "
            "sampled latent shows only the video frames; text_tokens = 512 umT5; audio_embed [1, 25, 1024, 4*latent_T], "
            "control_video zeros [1, 16, T, h, w]",
            vid("wan2.2-14b-s2v", ((832, 480, 33), (832, 480, 81)), (512,))
            + _grid([dict(arch="wan2.2-14b-s2v", batch=b, width=w, height=h, frames=f, text_tokens=512, refs=1)
                     for (w, h, f, b) in ((832, 480, 33, 1), (832, 480, 81, 1), (832, 480, 81, 2), (1280, 720, 81, 1))]),
            context_dim=4096, comfy_class="WAN22_S2V", conds=s2v_conds, config=WAN22_14B_S2V,
            # WAN22_S2V.memory_usage_factor_conds: reference_latent [1, 16, h*w] and reference_motion counted as 1.5
            # frames (model_base.py:1474-1475, 1496-1505).
            extra_area=lambda c: int((c.height // 8) * (c.width // 8) * (2.5 if c.refs else 1))),
        "wan2.1-14b-humo": Arch(
            "wan2.1-14b-humo", "diffusion", lambda: _dit_model(WAN21_14B_HUMO, "WAN21_HuMo"),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c: (_latent_T(c.frames) + 1) * (c.height // 16) * (c.width // 16),
            "tokens = the tokens HumoWanModel attends over: ((L-1)//4+1 + 1 reference frame)*(H/16)*(W/16) (the reference "
            "latent WanHuMoImageToVideo always adds; the sampled latent shows only the video frames); text_tokens = 512 "
            "umT5; audio_embed [1, latent_T, 8, 5, 1280] -> 16 audio tokens per frame (AudioProjModel)",
            vid("wan2.1-14b-humo", ((832, 480, 33), (832, 480, 81)), (512,))
            + vid("wan2.1-14b-humo", ((1280, 720, 81),), (512,), (1,)),
            context_dim=4096, comfy_class="WAN21_HuMo", conds=humo_conds, config=WAN21_14B_HUMO),
        "wan2.2-14b-animate": Arch(
            "wan2.2-14b-animate", "diffusion", lambda: _dit_model(WAN22_14B_ANIMATE, "WAN22_Animate"),
            lambda c: [c.batch, 16, _latent_T(c.frames) + 1, c.height // 8, c.width // 8],
            lambda c: (_latent_T(c.frames) + 1) * (c.height // 16) * (c.width // 16),
            "tokens = ((L-1)//4+1 + 1)*(H/16)*(W/16): WanAnimateToVideo's latent has latent_length + trim_latent frames, "
            "the reference image's latent frame first (comfy_extras/nodes_wan.py:1245); text_tokens = 512 umT5; 257 "
            "CLIP-vision tokens; pose latents [1, 16, latent_T, h, w]; face pixels [1, 3, L, 512, 512] fp32 through the "
            "motion encoder 8 frames at a time (ldm/wan/model_animate.py:459-466)",
            vid("wan2.2-14b-animate", ((832, 480, 33), (832, 480, 81)), (512,))
            + vid("wan2.2-14b-animate", ((1280, 720, 81),), (512,), (1,)),
            context_dim=4096, comfy_class="WAN22_Animate", conds=animate_conds, config=WAN22_14B_ANIMATE),
        "wan2.2-14b-i2v": wan("wan2.2-14b-i2v", WAN22_14B_I2V, "WAN21_T2V",
                              "c_concat = 4 mask + 16 image-latent channels, no CLIP image embedding"),
        "wan2.1-14b-i2v": wan("wan2.1-14b-i2v", WAN_14B_I2V, "WAN21_I2V",
                              "c_concat 20 channels + 257 CLIP-vision tokens", clip_vision(257)),
        "wan2.1-14b-flf": wan("wan2.1-14b-flf", WAN_14B_FLF, "WAN21_I2V",
                              "c_concat 20 channels + 514 CLIP-vision tokens (first + last frame)", clip_vision(514)),
        "wan2.1-14b-vace": wan("wan2.1-14b-vace", WAN_14B_VACE, "WAN21_Vace",
                               "one VACE context (32 latent + 64 mask channels) through 8 VACE blocks"),
        "wan2.1-14b-fun-control": wan("wan2.1-14b-fun-control", WAN_14B_FUN_CONTROL, "WAN21_FunControl2V",
                                      "c_concat 32 control + reference channels + 257 CLIP-vision tokens",
                                      clip_vision(257)),
        "cosmos-predict2-2b": Arch(
            "cosmos-predict2-2b", "diffusion", lambda: _dit_model(COSMOS_P2_2B, "CosmosT2IPredict2"),
            lambda c: [c.batch, 16, 1, c.height // 8, c.width // 8], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Wan 2.1 VAE /8, patch 2, one frame); text_tokens = 512 (old T5-XXL, 1024 wide)",
            img("cosmos-predict2-2b", ((1024, 1024), (1536, 1536)), (512,)) + img("cosmos-predict2-2b", ((2048, 2048),), (512,), (1,)),
            context_dim=1024, comfy_class="CosmosT2IPredict2", conds=lambda c: {}, config=COSMOS_P2_2B),
        "cosmos-predict2-14b": Arch(
            "cosmos-predict2-14b", "diffusion", lambda: _dit_model(COSMOS_P2_14B, "CosmosT2IPredict2"),
            lambda c: [c.batch, 16, 1, c.height // 8, c.width // 8], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16); text_tokens = 512",
            img("cosmos-predict2-14b", ((1024, 1024), (1536, 1536)), (512,)),
            context_dim=1024, comfy_class="CosmosT2IPredict2", conds=lambda c: {}, config=COSMOS_P2_14B),
        "kandinsky5-lite": Arch(
            "kandinsky5-lite", "diffusion", lambda: _dit_model(KANDINSKY5_LITE, "Kandinsky5"),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c: _latent_T(c.frames) * (c.height // 16) * (c.width // 16),
            "tokens = ((L-1)//4+1)*(H/16)*(W/16) (HunyuanVideo VAE, patch 1x2x2); text_tokens = Qwen2.5-VL tokens",
            vid("kandinsky5-lite", ((768, 512, 121), (512, 512, 121)), (256,)) + vid("kandinsky5-lite", ((768, 512, 121),), (128,), (1,)),
            context_dim=3584, comfy_class="Kandinsky5", conds=lambda c: {}, config=KANDINSKY5_LITE, pooled_dim=768),
        "flux2-dev": Arch(
            "flux2-dev", "diffusion", lambda: _dit_model(FLUX2_DEV, "Flux2"), lambda c: flat(c, 16, 128),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Flux.2 VAE /16 with 2x2 pixel shuffle -> 128 channels, patch 1), plus "
            "(h/16)*(w/16) per reference image; text_tokens = Mistral tokens, at least 512 (Flux2.extra_conds "
            "pads the context to 512)",
            img("flux2-dev", ((1024, 1024), (1536, 1536)), (512,)) + img("flux2-dev", ((2048, 2048), (1344, 768)), (512,), (1,)),
            context_dim=15360, comfy_class="Flux2", conds=lambda c: {}, config=FLUX2_DEV),
        "flux2-klein-4b": Arch(
            "flux2-klein-4b", "diffusion", lambda: _dit_model(FLUX2_KLEIN_4B, "Flux2"), lambda c: flat(c, 16, 128),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16); text_tokens = Qwen3 4B tokens, at least 512 (padded)",
            img("flux2-klein-4b", ((1024, 1024), (1536, 1536)), (512,)) + img("flux2-klein-4b", ((2048, 2048),), (512,), (1,)),
            context_dim=7680, comfy_class="Flux2", conds=lambda c: {}, config=FLUX2_KLEIN_4B),
        "z-image": Arch(
            "z-image", "diffusion", lambda: _dit_model(Z_IMAGE, "ZImage"), lambda c: flat(c, 8, 16),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Flux VAE /8, patch 2); text_tokens = Qwen3 4B tokens (the model pads "
            "both streams to a multiple of 32)",
            img("z-image", squares, (128, 512)) + img("z-image", ((2048, 2048),), (128,), (1,)),
            context_dim=2560, comfy_class="ZImage", conds=lambda c: {}, config=Z_IMAGE),
        "lumina2": Arch(
            "lumina2", "diffusion", lambda: _dit_model(LUMINA2, "Lumina2"), lambda c: flat(c, 8, 16),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Flux VAE /8, patch 2); text_tokens = Gemma 2 2B tokens",
            img("lumina2", ((1024, 1024), (1536, 1536)), (128, 256)),
            context_dim=2304, comfy_class="Lumina2", conds=lambda c: {}, config=LUMINA2),
        "qwen-image-edit": Arch(
            "qwen-image-edit", "diffusion", lambda: _dit_model(QWEN_IMAGE, "QwenImage"),
            lambda c: [c.batch, 16, 1, c.height // 8, c.width // 8],
            lambda c: 2 * (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) of the output plus (h/16)*(w/16) per reference image (traced with one "
            "reference of the output size); text_tokens = Qwen2.5-VL tokens (prompt + the image's vision tokens)",
            img("qwen-image-edit", squares, (256, 512)),
            context_dim=3584, comfy_class="QwenImage", conds=ref_latent, config=QWEN_IMAGE,
            extra_area=lambda c: (c.height // 8) * (c.width // 8)),
        "chroma": Arch(
            "chroma", "diffusion", lambda: _dit_model(CHROMA, "Chroma"), lambda c: flat(c, 8, 16),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Flux VAE /8, patch 2); text_tokens = T5-XXL tokens",
            img("chroma", ((1024, 1024), (1536, 1536)), (256, 512)),
            context_dim=4096, comfy_class="Chroma", conds=lambda c: {}, config=CHROMA),
        "chroma-radiance": Arch(
            "chroma-radiance", "diffusion",
            lambda: _dit_model({**CHROMA_RADIANCE, "nerf_embedder_dtype": torch.float32}, "ChromaRadiance"),
            lambda c: [c.batch, 3, c.height, c.width], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (pixel space: EmptyChromaRadianceLatentImage gives [B, 3, H, W], img_in_patch 16 x 16); "
            "text_tokens = T5-XXL tokens; pixel-level term: the NeRF head runs on every pixel, 256 per token "
            "(B * tokens * 256 rows of nerf_hidden 64, in tiles of 512 patches whose outputs are concatenated, then "
            "folded to [B, 64, H, W] and the conv head), so it scales with B * H * W = 256 * B * tokens and is part "
            "of the per-token coefficient. Two regimes: the NeRF head is the peak at 1024^2, the single blocks from "
            "1536^2; a 2048^2 batch-1 trace gave 1.385 GiB (1487237194 bytes, single_blocks.0), kept out of the fit "
            "(the linear form cannot follow the max of the two lines)",
            img("chroma-radiance", ((1024, 1024), (1536, 1536)), (512,)),
            context_dim=4096, comfy_class="ChromaRadiance", conds=lambda c: {},
            config={**CHROMA_RADIANCE, "nerf_embedder_dtype": "float32"}),
        "sd3.5-large": Arch(
            "sd3.5-large", "diffusion", lambda: _dit_model(SD35_LARGE, "SD3"), lambda c: flat(c, 8, 16),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (SD3 VAE /8, patch 2); text_tokens = 77 CLIP + T5 tokens (77 minimum: 154)",
            img("sd3.5-large", ((1024, 1024), (1536, 1536)), (154, 333)),
            context_dim=4096, comfy_class="SD3", conds=lambda c: {}, config=SD35_LARGE, pooled_dim=2048),
        "sd3.5-medium": Arch(
            "sd3.5-medium", "diffusion", lambda: _dit_model(SD35_MEDIUM, "SD3"), lambda c: flat(c, 8, 16),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16); text_tokens = 77 CLIP + T5 tokens (154 by default)",
            img("sd3.5-medium", ((1024, 1024), (1440, 1440)), (154, 333)),
            context_dim=4096, comfy_class="SD3", conds=lambda c: {}, config=SD35_MEDIUM, pooled_dim=2048),
        "hidream": Arch(
            "hidream", "diffusion", lambda: _dit_model(HIDREAM, "HiDream"), lambda c: flat(c, 8, 16),
            lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Flux VAE /8, patch 2); text_tokens = 128 (T5 and Llama 3.1 both padded to 128)",
            img("hidream", ((1024, 1024), (1328, 1328), (1536, 1536)), (128,)),
            context_dim=4096, comfy_class="HiDream", conds=hidream_conds, config=HIDREAM, pooled_dim=2048,
            patch=HiDreamBalancedRouting),
        "hunyuan-video-1.5": Arch(
            "hunyuan-video-1.5", "diffusion",
            lambda: _no_module_to(_dit_model(HUNYUAN_VIDEO_15, "HunyuanVideo15"), "cond_type_embedding"),
            lambda c: [c.batch, 32, _latent_T(c.frames), c.height // 16, c.width // 16],
            lambda c: _latent_T(c.frames) * (c.height // 16) * (c.width // 16),
            "tokens = ((L-1)//4+1)*(H/16)*(W/16) (HunyuanVideo 1.5 VAE /16 spatial /4 temporal, patch 1); "
            "text_tokens = Qwen2.5-VL tokens",
            vid("hunyuan-video-1.5", ((848, 480, 61), (848, 480, 121), (1280, 720, 121)), (256,))
            + vid("hunyuan-video-1.5", ((848, 480, 61),), (128,), (1,)),
            context_dim=3584, comfy_class="HunyuanVideo15", conds=lambda c: {}, config=HUNYUAN_VIDEO_15),
        "hunyuan-image-2.1": Arch(
            "hunyuan-image-2.1", "diffusion", lambda: _dit_model(HUNYUAN_IMAGE_21, "HunyuanImage21"),
            lambda c: flat(c, 32, 64),
            lambda c: (c.height // 32) * (c.width // 32),
            "tokens = (H/32)*(W/32) (HunyuanImage 2.1 VAE /32, patch 1); text_tokens = Qwen2.5-VL tokens",
            img("hunyuan-image-2.1", ((2048, 2048), (1536, 1536)), (256,)) + img("hunyuan-image-2.1", ((2048, 2048),), (512,), (1,)),
            context_dim=3584, comfy_class="HunyuanImage21", conds=lambda c: {}, config=HUNYUAN_IMAGE_21),
        "ltxv-2b": Arch(
            "ltxv-2b", "diffusion", lambda: _dit_model(LTXV_2B, "LTXV"),
            lambda c: [c.batch, 128, _latent_T(c.frames, 8), c.height // 32, c.width // 32],
            lambda c: _latent_T(c.frames, 8) * (c.height // 32) * (c.width // 32),
            "tokens = ((L-1)//8+1)*(H/32)*(W/32) (LTX VAE /32 spatial /8 temporal, patch 1); text_tokens = "
            "T5-XXL tokens (128 minimum)",
            vid("ltxv-2b", ((768, 512, 97), (1216, 704, 121), (768, 512, 257)), (128,))
            + vid("ltxv-2b", ((768, 512, 97),), (256,), (1,)),
            context_dim=4096, comfy_class="LTXV", conds=t5_mask, config=LTXV_2B),
        "ltxv-13b": Arch(
            "ltxv-13b", "diffusion", lambda: _dit_model(LTXV_13B, "LTXV"),
            lambda c: [c.batch, 128, _latent_T(c.frames, 8), c.height // 32, c.width // 32],
            lambda c: _latent_T(c.frames, 8) * (c.height // 32) * (c.width // 32),
            "tokens = ((L-1)//8+1)*(H/32)*(W/32); text_tokens = T5-XXL tokens (128 minimum)",
            vid("ltxv-13b", ((768, 512, 97), (1216, 704, 121)), (128,))
            + vid("ltxv-13b", ((768, 512, 97),), (256,), (1,)),
            context_dim=4096, comfy_class="LTXV", conds=t5_mask, config=LTXV_13B),
    }


def trace_diffusion(arch: Arch, case: Case, deadline_s: float) -> dict:
    import torch

    shape = arch.latent_shape(case)

    def make_inputs(model):
        # What the sampler hands apply_model: fp32 latents and sigmas, fp32 text-encoder output
        # (samplers.py calc_cond_batch -> cond_cat); apply_model casts them to the model dtype.
        x = torch.zeros(shape, dtype=torch.float32, device="cuda")
        sigma = torch.full((case.batch,), 0.5, dtype=torch.float32, device="cuda")
        if arch.conds is not None:
            return (x, sigma) + _model_conds(arch, case, model, x)
        ctx = torch.zeros((case.batch, case.text_tokens, arch.context_dim), dtype=torch.float32, device="cuda")
        return x, sigma, ctx, arch.extra(case)

    def call(model, x, sigma, ctx, extra):
        return model.apply_model(x, sigma, c_crossattn=ctx, transformer_options={}, **extra)

    with (arch.patch() if arch.patch else contextlib.nullcontext()):
        res = run_trace(arch.build, make_inputs, call, deadline_s)
    return _point(arch, case, shape, res)


class HiDreamBalancedRouting:
    """HiDream's MoE feed-forward (ldm/hidream/model.py MOEFeedForwardSwiGLU.forward) sends each token
    to 2 of 4 experts by boolean masks: ``x[flat_topk_idx == i]`` has a data-dependent size, which a
    fake tensor cannot have. This replaces the masks by index sets of the expected size under balanced
    routing (each expert gets tokens x 2 / 4 rows, what the router's load-balancing loss trains for)
    and keeps every allocation of the original: the repeated input, ``y``, the bool mask per expert,
    the int64 indices (``nonzero``), the gathered rows (a copy, like boolean indexing), the expert's
    output written back in place. A skewed routing gives one expert more rows (up to 2x at that op)."""

    def __enter__(self):
        import torch
        from comfy.ldm.hidream import model as hd

        def forward(moe, x):
            wtype = x.dtype
            identity = x
            orig_shape = x.shape
            topk_idx, topk_weight, _ = moe.gate(x)
            x = x.view(-1, x.shape[-1])
            flat_topk_idx = topk_idx.view(-1)
            x = x.repeat_interleave(moe.num_activated_experts, dim=0)
            y = torch.empty_like(x, dtype=wtype)
            rows = x.shape[0] // len(moe.experts)
            for i, expert in enumerate(moe.experts):
                mask = flat_topk_idx == i
                idx = torch.arange(i * rows, (i + 1) * rows, device=x.device)  # mask.nonzero() at balance
                y.index_put_((idx,), expert(x.index_select(0, idx)).to(dtype=wtype))
                del mask, idx
            y = (y.view(*topk_weight.shape, -1) * topk_weight.unsqueeze(-1)).sum(dim=1)
            y = y.view(*orig_shape).to(dtype=wtype)
            return y + moe.shared_experts(identity)

        self.cls, self.saved = hd.MOEFeedForwardSwiGLU, hd.MOEFeedForwardSwiGLU.forward
        self.cls.forward = forward
        return self

    def __exit__(self, *exc):
        self.cls.forward = self.saved
        return False


class Hunyuan3DBalancedRouting:
    """Hunyuan3D 2.1's MoE feed-forward (ldm/hunyuan3dv2_1/hunyuandit.py MoEBlock.moe_infer) sorts the
    token/expert pairs and walks ``bincount(...).cumsum(0)``: slice bounds taken from the data, which a
    fake tensor cannot have. This keeps every allocation of the original (the zeroed ``expert_cache``,
    the int64 argsort and ``idxs // top_k``, the gathered rows ``x[exp_token_idx]``, the expert's output
    scaled in place and ``index_add_``-ed back) with each expert receiving tokens x top_k / experts rows
    (balanced routing, as for HiDream); a skewed routing gives one expert more rows."""

    def __enter__(self):
        import torch
        from comfy.ldm.hunyuan3dv2_1 import hunyuandit as hd

        def moe_infer(moe, x, flat_expert_indices, flat_expert_weights):
            expert_cache = torch.zeros_like(x)
            idxs = flat_expert_indices.argsort()
            tokens_per_expert = torch.zeros((moe.num_experts,), dtype=torch.int64, device=x.device)  # bincount().cumsum()
            token_idxs = idxs // moe.moe_top_k
            rows = idxs.shape[0] // moe.num_experts
            for i, expert in enumerate(moe.experts):
                exp_token_idx = token_idxs[i * rows:(i + 1) * rows]
                expert_out = expert(x[exp_token_idx])
                expert_out.mul_(flat_expert_weights[idxs[i * rows:(i + 1) * rows]])
                expert_cache.index_add_(0, exp_token_idx, expert_out)
                del expert_out
            del tokens_per_expert
            return expert_cache

        self.cls, self.saved = hd.MoEBlock, hd.MoEBlock.moe_infer
        self.cls.moe_infer = moe_infer
        return self

    def __exit__(self, *exc):
        self.cls.moe_infer = self.saved
        return False


class Ace15FakeSafe:
    """Three data-dependent reads of ACE-Step 1.5 that a fake tensor cannot take (FSQ's codebook size, below);
    ACEStep15.extra_conds asks
    ``torch.count_nonzero(cross_attn) == 0`` (a zeroed negative prompt swaps in null_condition_emb; a real prompt is
    non-zero: answered "non-zero" here), and AceStepTimbreEncoder.unpack_timbre_embeddings reads
    ``bincount(order_mask).max().item()``; forward passes an all-zero order mask of B entries (ace_step15.py:1128),
    so max_count = B. The replacement makes the same tensors (one_hot [B, B*B], the [B, B, d] product, the mask)."""

    def __enter__(self):
        import torch
        import torch.nn.functional as F
        import comfy.model_base as mb
        from comfy.ldm.ace import ace_step15 as a15

        def unpack(enc, packed, order_mask):
            N, d = packed.shape
            B, max_count = N, N
            counts = torch.zeros((B,), dtype=torch.int64, device=packed.device)  # bincount(minlength=B): [B]
            sorted_indices = torch.argsort(order_mask * N + torch.arange(N, device=packed.device), stable=True)
            positions = torch.arange(N, device=packed.device)
            batch_starts = torch.cat([torch.tensor([0], device=packed.device), torch.cumsum(counts, dim=0)[:-1]])
            positions_in_sorted = positions - batch_starts[order_mask[sorted_indices]]
            inverse = torch.empty_like(sorted_indices)
            inverse[sorted_indices] = torch.arange(N, device=packed.device)
            indices_2d = order_mask * max_count + positions_in_sorted[inverse]
            one_hot = F.one_hot(indices_2d, num_classes=B * max_count).to(packed.dtype)
            unpacked = (one_hot.t() @ packed).view(B, max_count, d)
            return unpacked, (one_hot.sum(dim=0) > 0).long().view(B, max_count)

        saved_conds = mb.ACEStep15.extra_conds

        def extra_conds(model, **kwargs):
            real = torch.count_nonzero
            torch.count_nonzero = lambda t, *a, **k: 1
            try:
                return saved_conds(model, **kwargs)
            finally:
                torch.count_nonzero = real

        saved_fsq = a15.FSQ.__init__

        def fsq_init(fsq, levels, dim=None, device=None, dtype=None, operations=None):
            # FSQ.__init__ reads ``_levels.prod().item()`` (ace_step15.py:781): built on real CPU tensors (the level
            # buffers and the 64000 x 6 implicit codebook, non-persistent buffers), then moved to the fake GPU.
            from torch._subclasses.fake_tensor import unset_fake_temporarily

            with unset_fake_temporarily():
                saved_fsq(fsq, levels, dim=dim, device="cpu", dtype=dtype, operations=operations)
            for name, buf in list(fsq.named_buffers(recurse=False)):
                fsq.register_buffer(name, buf.to(device), persistent=False)

        self.saved = (a15.AceStepTimbreEncoder.unpack_timbre_embeddings, saved_conds, saved_fsq)
        a15.AceStepTimbreEncoder.unpack_timbre_embeddings = unpack
        mb.ACEStep15.extra_conds = extra_conds
        a15.FSQ.__init__ = fsq_init
        return self

    def __exit__(self, *exc):
        import comfy.model_base as mb
        from comfy.ldm.ace import ace_step15 as a15

        a15.AceStepTimbreEncoder.unpack_timbre_embeddings, mb.ACEStep15.extra_conds, a15.FSQ.__init__ = self.saved
        return False


class Omnigen2FullMask:
    """OmniGen2's TE returns its attention mask (text_encoders/omnigen2.py Qwen25_3BModel return_attention_masks);
    Omnigen2.extra_conds (model_base.py:1709-1716) passes the mask on only when it masks something and always
    sets num_tokens = mask.sum().item(), which a fake tensor cannot give. For one prompt (all ones) that is
    no mask and num_tokens = N: this wrapper does exactly that from the context's length."""

    def __enter__(self):
        import comfy.conds
        import comfy.model_base as mb

        self.saved = orig = mb.Omnigen2.extra_conds

        def extra_conds(model, **kwargs):
            kwargs.pop("attention_mask", None)
            out = orig(model, **kwargs)
            out["num_tokens"] = comfy.conds.CONDConstant(kwargs["cross_attn"].shape[1])
            return out

        mb.Omnigen2.extra_conds = extra_conds
        return self

    def __exit__(self, *exc):
        import comfy.model_base as mb

        mb.Omnigen2.extra_conds = self.saved
        return False


class HiDreamO1FakeSafe:
    """HiDream-O1 (ComfyUI 0.33.0) reads data twice where a fake tensor has none:
    - HiDreamO1.extra_conds (model_base.py:2320-2344) builds the sequence's conditioning once per sampling from the
      token ids (ldm/hidream_o1/conditioning.py:125-230 build_extra_conds: get_rope_index_fix_point walks the ids with
      .tolist() / .item(), utils.py:85-173). That is sampler-side input preparation, not the forward: here it runs on
      real CPU tensors (the case's N templated token ids: <|im_start|>user\n, N - 10 prompt tokens, then
      <|im_end|>\n<|im_start|>assistant\n<|boi|><|tms|>, text_encoders/hidream_o1.py:84-97) and the conds it returns
      then become fake tensors of the same shapes (_model_conds);
    - the forward's ``hidden_states[vmask]`` (ldm/hidream_o1/model.py:292-296) is boolean indexing, whose size is the
      mask's count. For T2I vinput_mask is True exactly on the image positions after the N text tokens
      (conditioning.py:222-224), so the replacement gives the same tensors: the int64 [n, 2] index nonzero() makes,
      then one [n, D] copy of those rows, n = B x (T - N)."""

    def __enter__(self):
        import torch
        import comfy.model_base as mb
        from comfy.ldm.hidream_o1 import model as hm
        from torch.utils._python_dispatch import _disable_current_modes

        state = {}
        self.saved_conds = orig_conds = mb.HiDreamO1.extra_conds
        self.saved_fwd = orig_fwd = hm.HiDreamO1Transformer._forward

        def extra_conds(model, **kwargs):
            from comfy.text_encoders import hidream_o1 as te

            n = kwargs["text_input_ids"].shape[-1]
            with _disable_current_modes():  # no fake mode, no tracker: real CPU tensors (made fake by _model_conds)
                ids = ([te.IM_START_ID, te.USER_ID, te.NEWLINE_ID] + [5] * (n - 10)
                       + [te.IM_END_ID, te.NEWLINE_ID, te.IM_START_ID, te.ASSISTANT_ID, te.NEWLINE_ID,
                          te.BOI_TOKEN_ID, te.TMS_TOKEN_ID])
                real = dict(kwargs, text_input_ids=torch.tensor([ids], dtype=torch.long),
                            noise=torch.zeros(tuple(kwargs["noise"].shape), dtype=torch.float32), device="cpu",
                            cross_attn=torch.zeros((1, n, 1), dtype=torch.float32))
                return orig_conds(model, **real)

        class VmaskGather(torch.overrides.TorchFunctionMode):
            # Tensor.__getitem__ reaches a TorchFunctionMode; only the forward's t[bool mask] is replaced.
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func is torch.Tensor.__getitem__ and len(args) == 2:
                    t, idx = args
                    if (isinstance(idx, torch.Tensor) and idx.dtype == torch.bool and idx.dim() == 2 and t.dim() == 3
                            and tuple(idx.shape) == tuple(t.shape[:2])):
                        b, T, d = t.shape
                        rows = t[:, state["txt_len"]:]
                        n = b * rows.shape[1]
                        nz = torch.empty((n, 2), dtype=torch.int64, device=t.device)  # mask.nonzero()
                        out = t.new_empty((n, d))
                        out.view(b, rows.shape[1], d).copy_(rows)
                        del nz
                        return out
                return func(*args, **kwargs)

        def _forward(module, x, timesteps, context=None, transformer_options={}, **kwargs):
            state["txt_len"] = kwargs["input_ids"].shape[1]
            try:
                with VmaskGather():
                    return orig_fwd(module, x, timesteps, context, transformer_options, **kwargs)
            finally:
                state.pop("txt_len", None)

        mb.HiDreamO1.extra_conds = extra_conds
        hm.HiDreamO1Transformer._forward = _forward
        return self

    def __exit__(self, *exc):
        import comfy.model_base as mb
        from comfy.ldm.hidream_o1 import model as hm

        mb.HiDreamO1.extra_conds = self.saved_conds
        hm.HiDreamO1Transformer._forward = self.saved_fwd
        return False


class MiniMaxH3FakeSafe:
    """MiniMaxH3Model._forward (ldm/minimax/model.py:572-577) turns the timestep into Python floats (``float(1.0 -
    sigma_v)``: the per-segment timesteps it derives analytically), which a fake tensor cannot give. The forward gets
    a real one-element CPU timestep (sigma 0.5) and the scalar arithmetic on it (and only on it: tensors derived from
    it are tagged) runs for real, outside the fake mode and the tracker; every tensor of the forward is unchanged (the
    timestep's value picks table rows, not shapes; in ComfyUI these are a few one-element tensors).
    PackedLayout (model.py:318-431: the packed sequence's CPU position / segment tables, which MiniMaxH3.extra_conds
    builds once per sampling, model_base.py:2203-2210) is built on real CPU tensors, as in ComfyUI; the forward copies
    its tables to the device (model.py:638-639, 691) as it does there."""

    def __enter__(self):
        import torch
        from comfy.ldm.minimax import model as mm
        from torch.utils._python_dispatch import _disable_current_modes

        self.saved = orig, orig_layout = mm.MiniMaxH3Model.forward, mm.PackedLayout.__init__

        class RealScalars(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                leaves = torch.utils._pytree.tree_leaves((args, kwargs))
                if any(isinstance(a, torch.Tensor) and getattr(a, "_h3_real", False) for a in leaves):
                    with _disable_current_modes():
                        out = func(*args, **kwargs)
                    for o in torch.utils._pytree.tree_leaves(out):
                        if isinstance(o, torch.Tensor):
                            o._h3_real = True
                    return out
                return func(*args, **kwargs)

        def forward(module, x, timestep, context, transformer_options={}, **kwargs):
            with _disable_current_modes():
                t = torch.full((timestep.shape[0],), 500.0, dtype=timestep.dtype)
            t._h3_real = True
            with RealScalars():
                return orig(module, x, t, context, transformer_options=transformer_options, **kwargs)

        def layout_init(layout, *args, **kwargs):
            with _disable_current_modes():  # no fake mode, no tracker: CPU tables
                orig_layout(layout, *args, **kwargs)

        mm.MiniMaxH3Model.forward = forward
        mm.PackedLayout.__init__ = layout_init
        return self

    def __exit__(self, *exc):
        from comfy.ldm.minimax import model as mm

        mm.MiniMaxH3Model.forward, mm.PackedLayout.__init__ = self.saved
        return False


class SeedVR2FakeSafe:
    """SeedVR2's NaDiT (ldm/seedvr/model.py) packs the batch "natively": the shapes are LongTensors (flatten(),
    :1104-1107: torch.as_tensor of the per-sample (t, h, w)), and the forward reads them back with .tolist() / sums to
    split, window (window_idx, :561-590) and index the tokens. A fake tensor has no values, so here those tables are
    real CPU tensors: torch.as_tensor / torch.tensor of Python numbers make one, and any op whose tensors are all such
    tables runs for real on the CPU (a device argument is dropped); where a table meets a device tensor (index_select
    / gather by the window indices, :582-584) it goes in as a new fake device tensor of the same shape and dtype (in
    ComfyUI the tables are built on the GPU: their bytes are counted at that use). Every activation is unchanged.
    The sampler sets transformer_options["cond_or_uncond"] (samplers.py calc_cond_batch), which NaDiT reads to tell
    a single-branch call (:1268-1282); the trace's call has none, so it is set here: one conditioning branch."""

    def __enter__(self):
        import torch
        from torch._subclasses.fake_tensor import FakeTensor
        from torch.utils._python_dispatch import _disable_current_modes
        from torch.utils._pytree import tree_leaves, tree_map
        from comfy.ldm.seedvr import model as sm

        def real(t):
            return isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor) and getattr(t, "_sv_real", False)

        def tag(out):
            for o in tree_leaves(out):
                if isinstance(o, torch.Tensor):
                    o._sv_real = True
            return out

        def gpu_device(a):
            return (isinstance(a, torch.device) and a.type != "cpu") or (isinstance(a, str) and a.startswith("cuda"))

        class RealTables(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = dict(kwargs or {})
                leaves = tree_leaves((args, kwargs))
                tensors = [a for a in leaves if isinstance(a, torch.Tensor)]
                if func in (torch.as_tensor, torch.tensor) and not tensors:
                    kwargs.pop("device", None)
                    with _disable_current_modes():
                        return tag(func(*args, **kwargs))
                # all tables: computed on the CPU (a device keyword dropped; a positional device argument, i.e. an
                # explicit move to the GPU, is a table meeting the device: below)
                if (tensors and all(real(t) for t in tensors)
                        and not any(gpu_device(a) for a in tree_leaves(args) if not isinstance(a, torch.Tensor))):
                    kwargs.pop("device", None)
                    with _disable_current_modes():
                        return tag(func(*args, **kwargs))
                if any(real(t) for t in tensors):
                    if func in (torch.repeat_interleave, torch.Tensor.repeat_interleave):
                        # AdaSingle (model.py:1032-1035) repeats the modulation per sample by its token count: as
                        # CUDA does it, an int64 index of the output's length (repeat_interleave(repeats)), then
                        # index_select
                        inp = args[0]
                        reps = args[1] if len(args) > 1 else kwargs.get("repeats")
                        dim = args[2] if len(args) > 2 else kwargs.get("dim")
                        if real(reps) and not real(inp) and dim is not None:
                            with _disable_current_modes():
                                n = int(reps.sum())
                            idx = torch.empty((n,), dtype=torch.int64, device=inp.device)
                            return torch.index_select(inp, dim, idx)
                    args, kwargs = tree_map(
                        lambda a: torch.empty(a.shape, dtype=a.dtype, device="cuda") if real(a) else a, (args, kwargs))
                return func(*args, **kwargs)

        self.saved = orig = sm.NaDiT.forward

        def forward(module, x, timestep, context, disable_cache=False, **kwargs):
            to = dict(kwargs.get("transformer_options") or {})
            to.setdefault("cond_or_uncond", [0] * x.shape[0])
            kwargs["transformer_options"] = to
            with RealTables():
                return orig(module, x, timestep, context, disable_cache=disable_cache, **kwargs)

        sm.NaDiT.forward = forward
        return self

    def __exit__(self, *exc):
        from comfy.ldm.seedvr import model as sm

        sm.NaDiT.forward = self.saved
        return False


class TripoSplatFakeSafe:
    """TripoSplat's LatentSeqMMFlowModel.__init__ (ldm/triposplat/model.py:248-252) draws its 8192 fixed Sobol anchor
    points with torch.quasirandom.SobolEngine, whose state initialisation (torch._sobol_engine_initialize_state_)
    writes into a tensor in place and has no fake-tensor kernel. Here the engine is built and drawn for real on the
    CPU outside the fake mode (what ComfyUI does too: the anchors are a CPU [8192, 3] tensor), the same points; the
    parameter-free embedder then turns them into the pos_emb buffer [1, 8192, 1024] as in the original (a buffer:
    counted in weight_bytes, not in the working memory). The forward is untouched."""

    def __enter__(self):
        import torch
        from torch.utils._python_dispatch import _disable_current_modes

        self.saved = orig = torch.quasirandom.SobolEngine

        class RealSobolEngine:
            def __init__(self, *args, **kwargs):
                with _disable_current_modes():
                    self.engine = orig(*args, **kwargs)

            def draw(self, *args, **kwargs):
                with _disable_current_modes():
                    return self.engine.draw(*args, **kwargs)

        torch.quasirandom.SobolEngine = RealSobolEngine
        return self

    def __exit__(self, *exc):
        import torch

        torch.quasirandom.SobolEngine = self.saved
        return False


def _no_module_to(model, attr: str):
    """HunyuanVideo 1.5 creates ``cond_type_embedding`` without a device and calls
    ``self.cond_type_embedding.to(txt.device)`` inside forward (ldm/hunyuan_video/model.py:357). Loaded
    by ComfyUI the whole model is on the GPU and that call is a no-op; here the module is moved to the
    fake GPU at build time and the call made a no-op (torch cannot swap a fake parameter in place)."""
    module = model.diffusion_model
    for part in attr.split("."):
        module = getattr(module, part)
    import torch

    for name, param in list(module.named_parameters(recurse=False)):
        setattr(module, name, torch.nn.Parameter(param.to("cuda"), requires_grad=False))
    module.to = lambda *a, **k: module
    return model


def _model_conds(arch: Arch, case: Case, model, x) -> tuple:
    """(context, extra conds) as the sampler builds them for one call of ``batch`` samples:
    ``model.extra_conds`` (samplers.py encode_model_conds) on a one-prompt conditioning [1, N, dim]
    plus the case's own keyword arguments, then each cond's ``process_cond(batch)`` (repeat to the
    batch, samplers.py get_area_and_mult). Every tensor is then replaced by a plain fake tensor of the
    same shape (small conds built from Python numbers would otherwise be fake *constants*)."""
    import torch

    ctx = torch.zeros((1, case.text_tokens, arch.context_dim), dtype=torch.float32, device="cuda")
    pooled = torch.zeros((1, arch.pooled_dim), dtype=torch.float32, device="cuda") if arch.pooled_dim else None
    kwargs = {"noise": x, "cross_attn": ctx, "pooled_output": pooled, "device": x.device,
              "width": case.width, "height": case.height, **arch.conds(case)}
    conds = model.extra_conds(**kwargs)
    del ctx, pooled, kwargs
    extra = {}
    # One cond at a time, its one-prompt original and its batch-repeated copy released before the plain fake of the
    # same shape is made: a long context (MiniMax Music 3: [B, N, 32768] fp32) would otherwise be held three times over
    # here, a transient of the tracer's making that can exceed the forward's own peak.
    for k in list(conds):
        v = conds.pop(k).process_cond(batch_size=case.batch, area=None, device=x.device)
        spec = _tensor_specs(v.cond)
        del v
        extra[k] = _from_specs(spec)
    del conds
    return extra.pop("c_crossattn"), extra


def _tensor_specs(value):
    """Tensors -> (shape, dtype) placeholders (lists / tuples / dicts kept), so the tensors can be freed first."""
    import torch

    if isinstance(value, torch.Tensor):
        return _TensorSpec(tuple(value.shape), value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_tensor_specs(v) for v in value)
    if isinstance(value, dict):
        return {k: _tensor_specs(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class _TensorSpec:
    shape: tuple
    dtype: Any


def _from_specs(value, device: str = "cuda"):
    """_tensor_specs' placeholders -> new plain fake tensors (as nodes/comfy_trace.py _plain_fake makes them)."""
    import torch

    if isinstance(value, _TensorSpec):
        return torch.zeros(value.shape, dtype=value.dtype, device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(_from_specs(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _from_specs(v, device) for k, v in value.items()}
    return value


def _memory_required_flash(shape: list, factor: float, dtype_size: int = 2, extra_area: int = 0) -> int:
    """model_base.memory_required (model_base.py:359-383), flash/xformers branch; extra_area = the
    memory_usage_factor_conds shapes' batch * prod(shape[2:]) (Kontext reference latents)."""
    area = shape[0] * math.prod(shape[2:]) + extra_area
    return int(area * dtype_size * 0.01 * factor * MIB)


def _point(arch: Arch, case: Case, shape: list, res: TraceResult, factor: float | None = None) -> dict:
    p = {
        "batch": case.batch, "width": case.width, "height": case.height, "frames": case.frames,
        "tokens": arch.tokens(case), "text_tokens": case.text_tokens, "latent_shape": shape,
        "working_bytes": res.peak_bytes, "input_bytes": res.input_bytes,
        "peak_op": res.peak_op, "peak_module": res.peak_module,
        "attention_calls": res.attention_calls, "trace_seconds": res.seconds,
        "weight_bytes": res.param_bytes,
    }
    if case.refs:
        p["refs"] = case.refs
    return p


# --------------------------------------------------------------------------------------------------
# Text encoders (sd1_clip.SDClipModel path: fp32 embeddings, manual_cast ops, weights cast per layer)
# --------------------------------------------------------------------------------------------------

def _te_arches() -> dict[str, Arch]:
    import torch

    def build_t5():
        import comfy.text_encoders.sd3_clip
        # Flux: flux.FluxClipModel -> sd3_clip.T5XXLModel(attention_mask=False) (text_encoders/flux.py)
        return comfy.text_encoders.sd3_clip.T5XXLModel(device="cuda", dtype=torch.float16)

    def build_umt5():
        import comfy.text_encoders.wan
        # Wan: wan.UMT5XXlModel(enable_attention_masks=True, zero_out_masked=True)
        return comfy.text_encoders.wan.UMT5XXlModel(device="cuda", dtype=torch.float16)

    def build_clip_l():
        import comfy.sd1_clip
        # Flux/SD1.5/SDXL CLIP-L: sd1_clip.SDClipModel with sd1_clip_config.json
        return comfy.sd1_clip.SDClipModel(device="cuda", dtype=torch.float16)

    t = lambda fam, ns: _grid([dict(arch=fam, batch=1, text_tokens=n) for n in ns])
    none_shape = lambda c: [c.batch, c.text_tokens]
    return {
        "t5-xxl": Arch("t5-xxl", "text_encoder", build_t5, none_shape, lambda c: c.text_tokens,
                       "tokens = T5 tokens after padding (Flux dev pads to 256 min; 512 max used by many workflows)",
                       t("t5-xxl", (77, 128, 256, 384, 512)), comfy_class="T5XXLModel"),
        "umt5-xxl": Arch("umt5-xxl", "text_encoder", build_umt5, none_shape, lambda c: c.text_tokens,
                         "tokens = umT5 tokens (Wan pads to min_length 512)",
                         t("umt5-xxl", (128, 256, 512, 768, 1024)), comfy_class="UMT5XXlModel"),
        "clip-l": Arch("clip-l", "text_encoder", build_clip_l, none_shape, lambda c: c.text_tokens,
                       "tokens = 77 per chunk (batch = number of 77-token chunks)",
                       _grid([dict(arch="clip-l", batch=b, text_tokens=77) for b in (1, 2, 3)]),
                       comfy_class="SDClipModel"),
    }


def _arches_033() -> dict[str, Arch]:
    """ComfyUI 0.33.0 families (issue 21): run with ComfyUI 0.33.0's interpreter and ``--resume --only krea2,lens``;
    conditioning through the model's own extra_conds as for the 0.18.2 families."""
    import torch

    def img(fam, sizes, texts, batches=(1, 2)):
        return _grid([dict(arch=fam, batch=b, width=w, height=h, text_tokens=t)
                      for (w, h) in sizes for t in texts for b in batches])

    def ltx_video(c: Case) -> list:
        # EmptyLTXVLatentVideo (comfy_extras/nodes_lt.py): [B, 128, (L-1)//8+1, H/32, W/32]
        return [c.batch, 128, _latent_T(c.frames, 8), c.height // 32, c.width // 32]

    def ltx_audio(c: Case) -> list:
        # LTXVEmptyLatentAudio: [B, 8, ceil(L / fps * 25), 16] (25 latents a second, 16 frequency bins), fps 25
        return [c.batch, 8, math.ceil(c.frames / 25 * 25), 16]

    def music_latent(frames: int) -> int:
        # ldm/minimax_music/dit.py:16-17 latent_length
        return max(1, int(frames * 44100 / 24000 * 960 / 512))

    def h3_video(c: Case) -> list:
        # an image: one latent frame; a video of 17k+5 pixel frames: 5k+2 latent frames (nodes_minimax_h3.py:40-41)
        t = 1 if c.frames <= 1 else (2 if c.frames <= 5 else ((c.frames - 5) // 17) * 5 + 2)
        return [1, 24, t, c.height // 16, c.width // 16]

    def h3_audio(c: Case) -> list:
        # MiniMaxH3AV.fix_empty_latent (latent_formats.py:661-672): round(sum of frames per latent frame x 5/3)
        t = h3_video(c)[2]
        return [1, 32, 2, round(sum((1, 4, 4, 4, 4)[i % 5] for i in range(t)) * 5.0 / 3.0)]

    def seedvr2(key, config):
        return Arch(
            key, "diffusion", lambda: _dit_model(config, "SeedVR2"),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c: _latent_T(c.frames) * (c.height // 16) * (c.width // 16),
            "tokens = T*(H/16)*(W/16) at the OUTPUT size (latent_formats.SeedVR2: 16 channels at /8, T = (F-1)/4+1 "
            "latent frames, 1 for an image; patch (1, 2, 2), NaPatchIn); the input is resized to the output size and "
            "VAE-encoded, and that latent is both the sampler's latent and the condition (SeedVR2Conditioning, "
            "nodes_seedvr.py:383-412: condition = latent + a ones mask, [B, 17, T, h, w], joined to the latent's "
            "channels, model.py:1286-1292); attention runs in 720p-scaled windows (window (4, 3, 3), alternating "
            "shifted, model.py:1148-1153, 118-160), the text joining every window; text_tokens = the model's own "
            "positive / negative text buffers (58 / 64 tokens of 5120, model.py:1159-1160), which the node passes as "
            "c_crossattn; cond and uncond differ in length, so they run as separate single-branch calls; "
            "SeedVR2.extra_conds (model_base.py:953-958)",
            _grid([dict(arch=key, batch=b, width=s, height=s, text_tokens=64)
                   for s in (1024, 2048) for b in (1, 2)])
            + _grid([dict(arch=key, batch=1, width=1280, height=720, frames=21, text_tokens=64),
                     dict(arch=key, batch=1, width=1024, height=1024, text_tokens=58)]),
            context_dim=5120, comfy_class="SeedVR2", config=config, patch=SeedVR2FakeSafe,
            conds=lambda c: {"condition": torch.zeros((1, 17, _latent_T(c.frames), c.height // 8, c.width // 8),
                                                      device="cuda")})

    return {
        "krea2": Arch(
            "krea2", "diffusion", lambda: _dit_model(KREA2, "Krea2"),
            lambda c: [c.batch, 16, 1, c.height // 8, c.width // 8], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Wan 2.1 / Qwen-Image VAE /8, patch 2, one frame; EmptyLatentImage's 4 channels become [B, 16, 1, h, w] in fix_empty_latent_channels); text_tokens = Qwen3-VL 4B tokens after Krea2TEModel strips the system prefix, context [1, N, 12 x 2560] (no mask when all ones), fused by the 4-block txtfusion transformer inside every call",
            img("krea2", ((1024, 1024), (1536, 1536)), (256,)) + img("krea2", ((2048, 2048),), (256,), (1,))
            + img("krea2", ((1024, 1024),), (512,), (1,)),
            context_dim=12 * 2560, comfy_class="Krea2", conds=lambda c: {}, config=KREA2),
        "lens": Arch(
            "lens", "diffusion", lambda: _dit_model(LENS, "Lens"),
            lambda c: [c.batch, 128, c.height // 16, c.width // 16], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Flux.2 VAE /16, 128 channels, one token per latent pixel); text_tokens = GPT-OSS-20B tokens of the chat-templated prompt, context [1, N, 4 x 2880] with its attention mask (LensGptOssClipModel always returns one; the model turns it into an additive fp32 [B, 1, 1, h*w + N] joint mask)",
            img("lens", ((1024, 1024), (1440, 1440)), (256,)) + img("lens", ((2048, 2048),), (256,), (1,))
            + img("lens", ((1440, 1440),), (512,), (1,)),
            context_dim=4 * 2880, comfy_class="Lens", config=LENS,
            conds=lambda c: {"attention_mask": torch.ones((1, c.text_tokens), dtype=torch.long, device="cuda")}),
        "ernie-image": Arch(
            "ernie-image", "diffusion", lambda: _dit_model(ERNIE_IMAGE, "ErnieImage"),
            lambda c: [c.batch, 128, c.height // 16, c.width // 16], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (latent_formats.Flux2, supported_models.py:2329: 128 channels at /16, patch 1, one token per latent pixel; ldm/ernie/model.py:244-256 concatenates them with the text); text_tokens = Ministral 3B tokens of the prompt, context [1, N, 3072] (text_encoders/ernie.py:18-21, hidden layer -2); ErnieImage.extra_conds (model_base.py:2779-2788) passes only c_crossattn (no mask)",
            img("ernie-image", ((1024, 1024), (1536, 1536)), (256,)) + img("ernie-image", ((2048, 2048),), (256,), (1,))
            + img("ernie-image", ((1024, 1024),), (512,), (1,)),
            context_dim=3072, comfy_class="ErnieImage", conds=lambda c: {}, config=ERNIE_IMAGE),
        "ideogram4": Arch(
            "ideogram4", "diffusion", lambda: _dit_model(IDEOGRAM4, "Ideogram4"),
            lambda c: [c.batch, 128, c.height // 16, c.width // 16], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (latent_formats.Flux2, supported_models.py:1911: 128 channels at /16 = the 32-channel VAE's 2x2 patches, ldm/ideogram4/model.py:240-247, one token per latent pixel) after N text tokens in one packed sequence (model.py:262-280); text_tokens = Qwen3-VL 8B tokens, context [1, N, 13 x 4096 = 53248] (text_encoders/ideogram4.py:60-68); its mask is all ones for one prompt, which Ideogram4.extra_conds drops (model_base.py:2540-2549); the conditional model only (the unconditional one of DualModelGuider runs on image tokens alone)",
            img("ideogram4", ((1024, 1024), (1536, 1536)), (256,)) + img("ideogram4", ((2048, 2048),), (256,), (1,))
            + img("ideogram4", ((1024, 1024),), (512,), (1,)),
            context_dim=53248, comfy_class="Ideogram4", conds=lambda c: {}, config=IDEOGRAM4),
        "boogu": Arch(
            "boogu", "diffusion", lambda: _dit_model(BOOGU, "Boogu"),
            lambda c: [c.batch, 16, c.height // 8, c.width // 8], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (Omnigen2's latent_formats.Flux, supported_models.py:1868: 16 channels at /8, patch 2); text_tokens = Qwen3-VL 8B tokens of the templated prompt, context [1, N, 4096] (text_encoders/boogu.py:36-47, last layer, final norm); Boogu (model_base.py:2462-2465) inherits Omnigen2.extra_conds (:2440-2456): a one-prompt mask is all ones, so no mask and num_tokens = N (Omnigen2FullMask); no reference latents",
            img("boogu", ((1024, 1024), (1536, 1536)), (256,)) + img("boogu", ((2048, 2048),), (256,), (1,))
            + img("boogu", ((1024, 1024),), (512,), (1,)),
            context_dim=4096, comfy_class="Boogu", conds=lambda c: {}, config=BOOGU, patch=Omnigen2FullMask),
        "ovis-image": Arch(
            "ovis-image", "diffusion", lambda: _dit_model(OVIS_IMAGE, "FluxSchnell"),
            lambda c: [c.batch, 16, c.height // 8, c.width // 8], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (latent_formats.Flux, 16 channels at /8, patch 2); text_tokens = Ovis 2.5 (Qwen3 2B) "
            "tokens after OvisTEModel cuts the system template off (text_encoders/ovis.py:37-54; the tokenizer pads the "
            "templated prompt to 284, :11), context [1, N, 2048], no mask (return_attention_masks False, :29), no "
            "pooled vector; Flux.extra_conds (model_base.py:1024-1055) adds guidance, which a model without "
            "guidance_in ignores",
            img("ovis-image", ((1024, 1024), (1536, 1536)), (256,)) + img("ovis-image", ((2048, 2048),), (256,), (1,))
            + img("ovis-image", ((1024, 1024),), (512,), (1,)),
            context_dim=2048, comfy_class="FluxSchnell", conds=lambda c: {}, config=OVIS_IMAGE),
        "joyimage": Arch(
            "joyimage", "diffusion", lambda: _dit_model(JOYIMAGE, "JoyImage"),
            lambda c: [c.batch, 16, 1, c.height // 8, c.width // 8],
            lambda c: (1 + c.refs) * (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) of the output (latent_formats.Wan21, supported_models.py:2033: 16 channels at /8, "
            "patch (1, 2, 2); EmptySD3LatentImage's [B, 16, h, w] becomes [B, 16, 1, h, w] in fix_empty_latent_channels) "
            "plus (h/16)*(w/16) per reference latent (TextEncodeJoyImageEdit's image; ldm/joyimage/model.py:395-404 "
            "patchifies each and concatenates it to the image tokens, attended in every block); traced without and with one "
            "reference of the output size; text_tokens = Qwen3-VL 8B tokens after the 34-token system prefix is dropped "
            "(text_encoders/joyimage.py:19, 74-85), context [1, N, 4096]; JoyImage.extra_conds (model_base.py:2519-2527) "
            "passes no mask",
            img("joyimage", ((1024, 1024), (1536, 1536)), (256,)) + img("joyimage", ((2048, 2048),), (256,), (1,))
            + img("joyimage", ((1024, 1024),), (512,), (1,))
            + _grid([dict(arch="joyimage", batch=b, width=1024, height=1024, text_tokens=256, refs=1) for b in (1, 2)]),
            context_dim=4096, comfy_class="JoyImage", config=JOYIMAGE,
            conds=lambda c: {"reference_latents": [torch.zeros((1, 16, 1, c.height // 8, c.width // 8), device="cuda")
                                                   for _ in range(c.refs)]} if c.refs else {},
            extra_area=lambda c: c.refs * (c.height // 8) * (c.width // 8)),
        "mage-flow": Arch(
            "mage-flow", "diffusion", lambda: _dit_model(MAGE_FLOW, "MageFlow"),
            lambda c: [c.batch, 128, c.height // 16, c.width // 16],
            lambda c: (1 + c.refs) * (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) (latent_formats.Flux2, supported_models.py:1967: 128 channels at /16, patch 1, one "
            "token per latent pixel, ldm/mage_flow/model.py:80-91) plus (h/16)*(w/16) per reference latent "
            "(TextEncodeMageFlowEdit; model.py:108-118 appends them to the image tokens); traced without and with one "
            "reference of the output size; text_tokens = Qwen3-VL 4B tokens after the template's leading tokens are "
            "stripped (text_encoders/mage_flow.py:56-82; an all-ones mask is dropped there), context [1, N, 2560]; "
            "QwenImage.extra_conds (model_base.py:2472-2490)",
            img("mage-flow", ((1024, 1024), (1536, 1536)), (256,)) + img("mage-flow", ((2048, 2048),), (256,), (1,))
            + img("mage-flow", ((1024, 1024),), (512,), (1,))
            + _grid([dict(arch="mage-flow", batch=b, width=1024, height=1024, text_tokens=256, refs=1) for b in (1, 2)]),
            context_dim=2560, comfy_class="MageFlow", config=MAGE_FLOW,
            conds=lambda c: {"reference_latents": [torch.zeros((1, 128, c.height // 16, c.width // 16), device="cuda")
                                                   for _ in range(c.refs)]} if c.refs else {},
            extra_area=lambda c: c.refs * (c.height // 16) * (c.width // 16)),
        "pixeldit": Arch(
            "pixeldit", "diffusion", lambda: _dit_model(PIXELDIT, "PixelDiTT2I"),
            lambda c: [c.batch, 3, c.height, c.width], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) patch tokens of the RGB image (latent_formats.PixelDiTPixel, pixel space: "
            "EmptyChromaRadianceLatentImage's [B, 3, H, W]; ldm/pixeldit/model.py:221-228 unfolds 16x16 patches); the two "
            "pixel blocks then run a 16-wide stream per pixel (256 per patch token), which the per-token constants "
            "include; text_tokens = Gemma 2 2B tokens: PixelDiTGemma2TE keeps BOS + the last 299 of the chi-prompted, "
            "padded prompt (text_encoders/pixeldit.py:45, 59-68, 84-95), always 300 in ComfyUI, the model reads at most "
            "txt_max_length 300 (model.py:236); traced at 300 and 150 (to separate the text constant); the TE's "
            "attention mask reaches forward through PixelDiTT2I.extra_conds (model_base.py:1568-1573) but the blocks "
            "get None (model.py:245)",
            img("pixeldit", ((1024, 1024), (1536, 1536)), (300,)) + img("pixeldit", ((2048, 2048),), (300,), (1,))
            + img("pixeldit", ((1024, 1024),), (150,), (1,)),
            context_dim=2304, comfy_class="PixelDiTT2I", config=PIXELDIT,
            conds=lambda c: {"attention_mask": torch.ones((1, c.text_tokens), dtype=torch.long, device="cuda")}),
        "pid": Arch(
            "pid", "diffusion", lambda: _dit_model(PID_FLUX1, "PiD"),
            lambda c: [c.batch, 3, c.height, c.width], lambda c: (c.height // 16) * (c.width // 16),
            "tokens = (H/16)*(W/16) patch tokens of the OUTPUT image (pixel space, as pixeldit: "
            "EmptyChromaRadianceLatentImage [B, 3, H, W]; the two pixel blocks run 256 pixels a token); the LQ latent "
            "(PiDConditioning, nodes_pid.py:33-50: the Flux latent of the 4x smaller image, [1, 16, H/32, W/32], with "
            "degrade_sigma [1]) goes through LQProjection2D once per call (pid.py:236-262: res blocks at the patch grid, "
            "7 features added before every second patch block) and adds no tokens; text_tokens = Gemma 2 2B tokens, 300 "
            "(as pixeldit); PiD.extra_conds (model_base.py:1576-1590)",
            img("pid", ((2048, 2048), (4096, 4096)), (300,)) + img("pid", ((3072, 3072),), (300,), (1,))
            + img("pid", ((2048, 2048),), (150,), (1,)),
            context_dim=2304, comfy_class="PiD", config=PID_FLUX1,
            conds=lambda c: {"attention_mask": torch.ones((1, c.text_tokens), dtype=torch.long, device="cuda"),
                             "lq_latent": torch.zeros((1, 16, c.height // 32, c.width // 32), device="cuda"),
                             "degrade_sigma": torch.zeros((1,), device="cuda")}),
        "hidream-o1": Arch(
            "hidream-o1", "diffusion", lambda: _dit_model(HIDREAM_O1, "HiDreamO1"),
            lambda c: [c.batch, 3, c.height, c.width], lambda c: (c.height // 32) * (c.width // 32),
            "tokens = (H/32)*(W/32) raw 32x32 RGB patches (latent_formats.HiDreamO1Pixel, pixel space: "
            "EmptyHiDreamO1LatentImage's [B, 3, H, W]; ldm/hidream_o1/model.py:160-165) after the N prompt tokens in "
            "one Qwen3-VL 8B decoder sequence (model.py:193-194); text_tokens = the templated prompt's token ids "
            "(HiDreamO1Tokenizer: 3 + prompt + 7 tokens, unpadded, text_encoders/hidream_o1.py:84-97; the 'CLIP' is a "
            "tokenizer, the LLM runs inside diffusion_model every step); the first call of a sampling (the cold path, "
            "model.py:240-274) runs the whole sequence and snapshots the prompt's K/V for the next steps (36 layers x "
            "k, v [B, 8, N-1, 128]), traced; later steps only project the image positions. T2I, no reference images. "
            "HiDreamO1.extra_conds (model_base.py:2320-2344) builds input_ids / MRoPE position_ids / token_types / "
            "vinput_mask / ar_len = N-1 on real tensors (HiDreamO1FakeSafe); c_crossattn is the TE's [1, N, 1] surrogate",
            img("hidream-o1", ((1024, 1024), (2048, 2048)), (256,)) + img("hidream-o1", ((2560, 2560),), (256,), (1,))
            + img("hidream-o1", ((2048, 2048),), (512,), (1,)),
            context_dim=1, comfy_class="HiDreamO1", config=HIDREAM_O1, patch=HiDreamO1FakeSafe,
            conds=lambda c: {"text_input_ids": torch.zeros((1, c.text_tokens), dtype=torch.long, device="cuda")}),
        "minimax-h3": Arch(
            "minimax-h3", "diffusion", lambda: _dit_model(MINIMAX_H3, "MiniMaxH3"),
            lambda c: [1, 1, math.prod(h3_video(c)[1:]) + math.prod(h3_audio(c)[1:])],
            lambda c: h3_video(c)[2] * (c.height // 32) * (c.width // 32),
            "tokens = latent_t*(H/32)*(W/32) video rows (latent_formats.MiniMaxH3AV, supported_models.py:972: 24 channels "
            "at /16, patch (1, 2, 2); one latent frame for an image: EmptyLatentImage's [B, 4, H/8, W/8] becomes 32 "
            "channels at /16 and MiniMaxH3AV.fix_empty_latent (latent_formats.py:657-672) splits it into the video [B, 24, "
            "1, H/16, W/16] and a stereo audio latent [B, 32, 2, round(frames x 5/3)]; pixel frames 17k+5 -> latent frames "
            "5k+2), packed [1, 1, V + A] with latent_shapes (utils.pack_latents); the packed sequence (model.py:318-431) is "
            "text | audio (2 rows per audio latent frame, traced, not counted in tokens: 4 for an image, 414 for 124 frames) "
            "| video; text_tokens = Qwen3-VL 32B tokens of the raw prompt, unpadded (text_encoders/minimax.py), context "
            "[1, N, 5120], which MiniMaxH3.extra_conds (model_base.py:2164-2222) runs through condition_proj + the 2-layer "
            "token refiner once per sampling; its token tags (all 1 for a text prompt) give the same single text segment as "
            "none. Batch 1 only (model.py:556-557 raises otherwise), so the fit has no batch terms; no keyframes / references; "
            "audio_scale 1 (model.latent_shapes unset)",
            _grid([dict(arch="minimax-h3", batch=1, width=s, height=s, text_tokens=256) for s in (1024, 1536, 2048)])
            + _grid([dict(arch="minimax-h3", batch=1, width=1024, height=1024, text_tokens=512)])
            + _grid([dict(arch="minimax-h3", batch=1, width=w, height=h, frames=f, text_tokens=256)
                     for (w, h, f) in ((1344, 768, 124), (960, 544, 73))]),
            context_dim=5120, comfy_class="MiniMaxH3", config=MINIMAX_H3, patch=MiniMaxH3FakeSafe,
            conds=lambda c: {"latent_shapes": [h3_video(c), h3_audio(c)]}),
        "minimax-music3": Arch(
            "minimax-music3", "diffusion", lambda: _dit_model(MINIMAX_MUSIC3, "MiniMaxMusic3"),
            lambda c: [c.batch, 128, music_latent(c.text_tokens)], lambda c: min(music_latent(c.text_tokens), 689),
            "tokens = latent frames in one window: min(L, 689) (EmptyMiniMaxMusic3LatentAudio: [B, 128, L], L = "
            "latent_length(25 x seconds) = int(frames x 44100/24000 x 960/512), dit.py:16-17; MiniMaxMusic3DiT.forward "
            "runs a latent longer than latent_length(200) = 689 in windows of 689 frames, hop 344, one after another, "
            "dit.py:191-213, and only the one timestep token joins them, :142); text_tokens = the acoustic frames N of "
            "the conditioning MiniMaxMusic3TextEncode generates (25 a second; context [1, N, 8 x 4096], dit.py:178-186 "
            "mixes the 8 layers, convolves and stretches it to latent_length(N) frames, then pads / crops it to L). "
            "Traced with the latent as long as the conditioning (L = latent_length(N): the text encoder's max_duration = "
            "the latent's seconds), so the full-length tensors (the stretched condition [B, 2048, L], the output and its "
            "window count) are in c; conditioning_scale [1, 1, 1] (nodes_minimax_music.py:40). Traced from 30 s (N = "
            "750, L = 2583: several windows) to 120 s: below 8 s (one window, tokens < 689) the peak is the window's "
            "transformer instead of the conditioning's 8-layer mix, which this one linear form does not follow (a trace "
            "at N = 100 / 200 gave 0.046 / 0.093 GiB at batch 1)",
            _grid([dict(arch="minimax-music3", batch=b, text_tokens=n) for n in (750, 1500) for b in (1, 2)])
            + _grid([dict(arch="minimax-music3", batch=1, text_tokens=n) for n in (2250, 3000)]),
            context_dim=8 * 4096, comfy_class="MiniMaxMusic3", config=MINIMAX_MUSIC3,
            conds=lambda c: {"conditioning_scale": torch.ones((1, 1, 1), device="cuda")}),
        "trellis2": Arch(
            "trellis2", "diffusion", lambda: _dit_model(TRELLIS2, "Trellis2"),
            lambda c: [c.batch, 32, 16, 16, 16], lambda c: 16 ** 3,
            "tokens = 4096, the cells of the 16^3 sparse-structure grid (EmptyTrellis2LatentStructure: [B, 32, 16, 16, 16], "
            "nodes_trellis2.py:591-609; Trellis2.forward keeps the first 8 channels, model.py:1024-1027, and the "
            "structure_model attends over every cell, model.py:689-700): the structure stage, the only dense one (the "
            "shape / texture stages run on the occupied voxels found at run time); text_tokens = DINOv3-L tokens of the "
            "512 px image (global_512: CLS + 4 registers + 32^2 patches = 1029, nodes_trellis2.py:425-433), context "
            "[1, 1029, 1024] reached by cross attention; Trellis2.extra_conds (model_base.py:1928-1939) also carries "
            "'embeds' (global_1024, [1, 4101, 1024]), which the structure stage does not read (an input here). The grid "
            "is fixed, so only the batch and the context length vary (2058: a longer context, for the fit)",
            _grid([dict(arch="trellis2", batch=b, text_tokens=1029) for b in (1, 2, 4)])
            + _grid([dict(arch="trellis2", batch=b, text_tokens=2058) for b in (1, 2)]),
            context_dim=1024, comfy_class="Trellis2", config=TRELLIS2,
            conds=lambda c: {"embeds": torch.zeros((1, 4101, 1024), device="cuda")}),
        **{key: Arch(
            key, "diffusion", lambda config=config, cls=cls: _dit_model(config, cls),
            lambda c: [c.batch, 16, _latent_T(c.frames), c.height // 8, c.width // 8],
            lambda c, pt=pt: -(-_latent_T(c.frames) // pt) * (c.height // 16) * (c.width // 16),
            "tokens = T'*(H/16)*(W/16) (latent_formats.CogVideoX: 16 channels at /8, T = (F-1)//4+1 latent frames; "
            "patch 2x2, CogVideoX 1.5 also 2 frames: T' = ceil(T/2), ldm/cogvideo/model.py:450-451 pads T to even); "
            "text_tokens = T5-XXL tokens padded to 226 (text_encoders/cogvideo.py CogVideoXT5Tokenizer), context "
            "[1, N, 4096] joined to the video tokens in every block (model.py:274); CogVideoX.extra_conds / "
            "concat_cond (model_base.py:2794-2850): an Inpaint / I2V model's extra in_channels are the concat latent, "
            "zeros when none is given",
            _grid([dict(arch=key, batch=b, width=w, height=h, frames=f, text_tokens=226)
                   for (w, h, f) in sizes for b in (1, 2)])
            + _grid([dict(arch=key, batch=1, width=sizes[0][0], height=sizes[0][1], frames=sizes[0][2],
                          text_tokens=452)]),
            context_dim=4096, comfy_class=cls, config=config, conds=lambda c: {})
          for key, config, cls, pt, sizes in (
              ("cogvideox-2b", COGVIDEOX_2B, "CogVideoX_T2V", 1, ((720, 480, 49), (720, 480, 25), (1024, 576, 49))),
              ("cogvideox-5b", COGVIDEOX_5B, "CogVideoX_T2V", 1, ((720, 480, 49), (720, 480, 25), (1024, 576, 49))),
              ("cogvideox1.5-5b", COGVIDEOX15_5B_INP, "CogVideoX_Inpaint", 2,
               ((1360, 768, 81), (720, 480, 49), (1024, 576, 85))))},
        "seedvr2-3b": seedvr2("seedvr2-3b", SEEDVR2_3B),
        "seedvr2-7b": seedvr2("seedvr2-7b", SEEDVR2_7B),
        "trellis2-pixal3d": Arch(
            "trellis2-pixal3d", "diffusion", lambda: _dit_model(PIXAL3D, "Trellis2"),
            lambda c: [c.batch, 32, 16, 16, 16], lambda c: 16 ** 3,
            "as trellis2 (tokens = the 4096 cells of the 16^3 structure grid; text_tokens = the 1029 DINOv3-L tokens "
            "of the 512 px image), for Pixal3D: the structure model's cross attention also adds proj_linear of the "
            "per-cell back-projected image features (ProjectAttentionDense, ldm/trellis2/model.py:246-260), "
            "trellis2_proj_feats [1, 4096, 1024] from Pixal3DConditioning (nodes_trellis2.py:744-760, "
            "compute_stage_proj_feats 'ss'), repeated to the call's batch (_shape_proj_cond, model.py:889-940); the "
            "template's CFG runs cond + uncond as one batch of 2",
            _grid([dict(arch="trellis2-pixal3d", batch=b, text_tokens=1029) for b in (1, 2, 4)])
            + _grid([dict(arch="trellis2-pixal3d", batch=b, text_tokens=2058) for b in (1, 2)]),
            context_dim=1024, comfy_class="Trellis2", config=PIXAL3D,
            conds=lambda c: {"embeds": torch.zeros((1, 4101, 1024), device="cuda"),
                             "trellis2_proj_feats": torch.zeros((1, 4096, 1024), device="cuda")}),
        "triposplat": Arch(
            "triposplat", "diffusion", lambda: _dit_model(TRIPOSPLAT, "TripoSplat"),
            lambda c: [c.batch, 1, 8192 * 16 + 5], lambda c: 8192,
            "tokens = 8192, the fixed shape-code sequence (TripoSplatConditioning, comfy_extras/nodes_triposplat.py:"
            "16-18, 132-137: zeros [B, 8192, 16] + a [B, 1, 5] camera token whatever the image; the estimator reads it "
            "as a '3d' LatentShape of height 1, width 8192, patch (1, 1): memory.latent_tokens = 8192), denoised by "
            "LatentSeqMMFlowModel's defaults (model_detection.py:812-813 gives only {'image_model': 'triposplat'}; "
            "ldm/triposplat/model.py:215-235: 1024 wide, 16 heads of 64, 24 joint blocks + 2 noise / 2 context "
            "refiners); the NestedTensor latent reaches apply_model packed [B, 1, 8192 x 16 + 5] with latent_shapes "
            "(samplers.py:1280-1283, utils.pack_latents) and is unpacked there (model_base.py:241-242); the camera "
            "token joins the joint sequence (model.py:313), traced, not counted. text_tokens = the DINOv3 ViT-H/16+ "
            "tokens of the S x S preprocessed image (CLS + 4 registers + (S/16)^2 patches; 4101 at the template's and "
            "the trained S = 1024, the estimator's TEXT_TOKENS), context [1, N, 1280] (nodes_triposplat.py:116-123), "
            "refined by the 2 context blocks and joined to the 8192 tokens in every block; the Flux.2 VAE latent of the "
            "image ([1, 128, S/16, S/16], :126) is the reference_latents entry, front-padded to N tokens and added to "
            "the context (model.py:294-299: no extra tokens). TripoSplat.extra_conds (model_base.py:2278-2289); the "
            "negative is zeros of the same shapes, so CFG runs cond + uncond as one batch of 2. Traced at S = 512, "
            "768, 1024 (the template's, TripoSplatPreprocessImage size 1024) and 1536",
            _grid([dict(arch="triposplat", batch=b, width=s, height=s, text_tokens=1 + 4 + (s // 16) ** 2)
                   for s in (768, 1024) for b in (1, 2)])
            + _grid([dict(arch="triposplat", batch=1, width=s, height=s, text_tokens=1 + 4 + (s // 16) ** 2)
                     for s in (512, 1536)]),
            context_dim=1280, comfy_class="TripoSplat", config=TRIPOSPLAT, patch=TripoSplatFakeSafe,
            conds=lambda c: {"reference_latents": [torch.zeros((1, 128, c.height // 16, c.width // 16), device="cuda")],
                             "latent_shapes": [[c.batch, 8192, 16], [c.batch, 1, 5]]}),
        "ltx2.5": Arch(
            "ltx2.5", "diffusion", lambda: _dit_model(LTX25_22B, "LTXAV"),
            lambda c: [c.batch, 1, math.prod(ltx_video(c)[1:]) + math.prod(ltx_audio(c)[1:])],
            lambda c: math.prod(ltx_video(c)[2:]),
            "tokens = video tokens ((L-1)//8+1)*(H/32)*(W/32) (LTX-2 latent format: 128 channels, /32 spatial, /8 temporal, "
            "patch 1); the audio stream adds ceil(L / fps * 25) audio tokens (latent [B, 8, Ta, 16], 2048 wide), traced at "
            "25 fps next to the video tokens, not counted in tokens; packed [B, 1, V + A] with latent_shapes as "
            "ltx2.3-22b; text_tokens = max(1024, Gemma 4 12B prompt tokens) (text_encoders/lt.py:84-92 pads to 1024), fed "
            "as LTXAVTEModel's dual_linear output [1, N, 4096 + 2048] (lt.py:146, 202, 274) through LTXAV.extra_conds "
            "(two 8-layer gated connectors); LTX-2.3's layout plus ff_bias False and the keyframe marker (no keyframes "
            "here: T2V)",
            _grid([dict(arch="ltx2.5", batch=b, width=w, height=h, frames=f, text_tokens=1024)
                   for (w, h, f) in ((768, 512, 97), (1280, 720, 121)) for b in (1, 2)])
            + _grid([dict(arch="ltx2.5", batch=1, width=768, height=512, frames=193, text_tokens=1024),
                     dict(arch="ltx2.5", batch=1, width=768, height=512, frames=97, text_tokens=2048)]),
            context_dim=6144, comfy_class="LTXAV", config=LTX25_22B,
            conds=lambda c: {"latent_shapes": [ltx_video(c), ltx_audio(c)], "unprocessed_ltxav_embeds": True,
                             "frame_rate": 25}),
    }


def _te_arches_018() -> dict[str, Arch]:
    """LLM text encoders of the ComfyUI 0.18.2 families: ComfyUI's own SDClipModel subclasses with
    bf16 weights (the published files' dtype, which sd.py passes as dtype_llama) and manual_cast ops.
    Keys are the estimator's family ids (nodes/estimator/families.py)."""
    import torch

    def te(module: str, cls: str, **kw):
        def build():
            import importlib

            return getattr(importlib.import_module(module), cls)(device="cuda", dtype=torch.bfloat16, **kw)
        return build

    t = lambda fam, ns: _grid([dict(arch=fam, batch=1, text_tokens=n) for n in ns])
    shape = lambda c: [c.batch, c.text_tokens]
    tokens = lambda c: c.text_tokens
    return {
        # Qwen-Image / HunyuanVideo 1.5 / HunyuanImage 2.1 / Kandinsky 5: qwen_image.Qwen25_7BVLIModel
        # (last hidden state); Qwen/Qwen2.5-VL-7B-Instruct config.json: 28 layers, hidden 3584, 28 / 4 heads.
        "qwen2.5-vl-7b": Arch("qwen2.5-vl-7b", "text_encoder",
                              te("comfy.text_encoders.qwen_image", "Qwen25_7BVLIModel"), shape, tokens,
                              "tokens = prompt tokens after the model's chat template (text only; an edit "
                              "image adds its vision tokens)", t("qwen2.5-vl-7b", (64, 256, 512, 1024)),
                              comfy_class="Qwen25_7BVLIModel"),
        # Z-Image: z_image.Qwen3_4BModel (hidden state -2); Qwen/Qwen3-4B config.json: 36 layers, hidden 2560.
        "qwen3": Arch("qwen3", "text_encoder", te("comfy.text_encoders.z_image", "Qwen3_4BModel"), shape, tokens,
                      "tokens = Qwen3 4B prompt tokens (Z-Image: chat template; Flux.2 klein pads to 512)",
                      t("qwen3", (64, 256, 512, 1024)), comfy_class="Qwen3_4BModel"),
        # Flux.2 dev: flux.Mistral3_24BModel (hidden states of layers 10, 20, 30 stacked -> 15360);
        # mistralai/Mistral-Small-3.2-24B-Instruct-2506 text config: 40 layers, hidden 5120, 32 / 8 heads.
        "mistral": Arch("mistral", "text_encoder", te("comfy.text_encoders.flux", "Mistral3_24BModel"), shape, tokens,
                        "tokens = Mistral prompt tokens (Flux.2 pads the conditioning to 512 afterwards)",
                        t("mistral", (128, 512, 1024)), comfy_class="Mistral3_24BModel"),
        # HiDream: hunyuan_video.LLAMAModel(layer="all") keeps the hidden states of all 32 layers
        # (text_encoders/hidream.py:60); meta-llama/Llama-3.1-8B-Instruct config.json: 32 layers, 4096.
        "llama3-8b": Arch("llama3-8b", "text_encoder",
                          te("comfy.text_encoders.hunyuan_video", "LLAMAModel", layer="all", layer_idx=None,
                             special_tokens={"start": 128000, "pad": 128009}), shape, tokens,
                          "tokens = Llama 3.1 prompt tokens (HiDream pads to 128; all 32 layers' states kept)",
                          t("llama3-8b", (128, 256, 512)), comfy_class="LLAMAModel"),
        # LTX-2: lt.Gemma3_12BModel (all hidden states; the tokenizer pads left to 1024);
        # google/gemma-3-12b-it text config: 48 layers, hidden 3840, 16 / 8 heads.
        "gemma3": Arch("gemma3", "text_encoder", te("comfy.text_encoders.lt", "Gemma3_12BModel"), shape, tokens,
                       "tokens = Gemma 3 prompt tokens, 1024 minimum (LTX-2 pads left)",
                       t("gemma3", (1024, 1536, 2048)), comfy_class="Gemma3_12BModel"),
        # OmniGen2: omnigen2.Qwen25_3BModel (last hidden state, llama.Qwen25_3B: the LLM only, no vision tower);
        # llama.py Qwen25_3BConfig = Qwen/Qwen2.5-VL-3B-Instruct's text config: 36 layers, hidden 2048, 16 / 2 heads.
        "qwen2.5-3b": Arch("qwen2.5-3b", "text_encoder", te("comfy.text_encoders.omnigen2", "Qwen25_3BModel"), shape,
                           tokens, "tokens = Qwen2.5 3B prompt tokens in OmniGen2's chat template (25 for an empty "
                           "prompt; no padding)", t("qwen2.5-3b", (64, 256, 512)), comfy_class="Qwen25_3BModel"),
        # Lumina Image 2.0: lumina2.Gemma2_2BModel (hidden state -2); google/gemma-2-2b: 26 layers, 2304.
        "gemma": Arch("gemma", "text_encoder", te("comfy.text_encoders.lumina2", "Gemma2_2BModel"), shape, tokens,
                      "tokens = Gemma 2 prompt tokens (system prompt + prompt)",
                      t("gemma", (64, 256, 512)), comfy_class="Gemma2_2BModel"),
    }


def trace_text_encoder(arch: Arch, case: Case, deadline_s: float) -> dict:
    def make_inputs(model):
        # One prompt of N tokens: N-1 word tokens then the end token (1 for T5/umT5, 49407 CLIP).
        end = model.special_tokens.get("end", 1)
        start = model.special_tokens.get("start")
        toks = []
        for _ in range(case.batch):
            row = [5] * case.text_tokens
            if start is not None:
                row[0] = start
            row[-1] = end
            toks.append(row)
        return (toks,)

    def call(model, toks):
        return model(toks)

    res = run_trace(arch.build, make_inputs, call, deadline_s)
    return _point(arch, case, [case.batch, case.text_tokens], res)


# --------------------------------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------------------------------

ROPE_ARCHES = ("flux1-dev", "wan2.1-14b", "wan2.1-1.3b", "wan2.2-ti2v-5b", "qwen-image", "hunyuan-video")


class RopeEager(_CT.EagerRope):
    """Swap comfy-kitchen's fused RoPE op for its eager backend (nodes/comfy_trace.py ``EagerRope``).

    ComfyUI 0.8.0 binds ``apply_rope``/``apply_rope1`` to ``comfy.quant_ops.ck`` (flux/math.py:32-35);
    quant_ops.py:16-20 disables comfy-kitchen's CUDA backend on torch built for CUDA < 13, and the op
    then runs the eager backend (fp32 temporaries), the same math as ComfyUI's own fallback
    (flux/math.py:38-47). Default (no variant) = CUDA >= 13 torch, fused kernel: output only.
    The three modules that bind the op are imported first; comfy-kitchen is required.
    """

    MODULES = ("comfy.ldm.flux.math", "comfy.ldm.wan.model", "comfy.ldm.qwen_image.model")

    def __init__(self):
        super().__init__(import_first=self.MODULES, required=True)


class WanI2V:
    """Wan 2.1 I2V 14B (WAN21_I2V): 36 input channels and 257 CLIP-vision tokens of extra context."""

    def __enter__(self):
        _BUILD["wan_i2v"] = True
        return self

    def __exit__(self, *exc):
        _BUILD["wan_i2v"] = False
        return False


class FluxKontext:
    """Flux Kontext: a same-size reference latent passed as ref_latents (its tokens join the image
    tokens in every block), to check that the token rule covers it."""

    def __enter__(self):
        _BUILD["flux_ref"] = True
        return self

    def __exit__(self, *exc):
        _BUILD["flux_ref"] = False
        return False


class Fp8Weights:
    """Build diffusion models with float8_e4m3fn weights and bf16 compute (manual_cast ops), as
    ComfyUI does for fp8 checkpoints / UNETLoader weight_dtype=fp8_e4m3fn without ``--fast``
    (ops.pick_operations :718-750): every layer casts its weight to bf16 for its matmul, a
    transient copy that is working memory (ops.cast_bias_weight :75-127)."""

    def __enter__(self):
        _BUILD.update(weight_dtype="float8_e4m3fn", manual_cast="bfloat16")
        return self

    def __exit__(self, *exc):
        _BUILD.update(weight_dtype="bfloat16", manual_cast=None)
        return False


# --------------------------------------------------------------------------------------------------
# Fit
# --------------------------------------------------------------------------------------------------

# One formula for every architecture; unused coefficients are stored as 0.
FORMULA = "batch * (a * tokens + c * text_tokens) + d * tokens + q * tokens**2 + b"
COEFF_UNITS = {
    "a": "bytes per latent token per batch item",
    "c": "bytes per text token per batch item",
    "d": "bytes per latent token, batch-independent (e.g. RoPE tables computed once per call)",
    "q": "bytes per tokens^2 (text encoders: relative position bias / mask, batch-independent)",
    "b": "bytes, constant",
}


def predict(coeffs: dict, batch: int, tokens: int, text_tokens: int) -> float:
    return (batch * (coeffs["a"] * tokens + coeffs["c"] * text_tokens)
            + coeffs["d"] * tokens + coeffs["q"] * tokens ** 2 + coeffs["b"])


def _features(kind: str, points: list[dict]) -> list[str]:
    """The coefficients that the sweep can identify (a constant column would alias with b)."""
    names = ["a", "b"]
    batches = {p["batch"] for p in points}
    if kind == "diffusion":
        # batch * text_tokens is identifiable when either varies (with a fixed 512-token umT5 context,
        # c * 512 is the per-batch-item constant: text stream, cross-attention K/V, modulation).
        texts = {p["text_tokens"] for p in points}
        if any(texts) and (len(texts) > 1 or len(batches) > 1):
            names.append("c")
        if len(batches) > 1 and len({p["tokens"] for p in points}) > 1:
            names.append("d")
    else:
        if len({p["tokens"] for p in points}) > 2:
            names.append("q")
    return names


def _column(name: str, p: dict) -> float:
    return {"a": p["batch"] * p["tokens"], "c": p["batch"] * p["text_tokens"], "d": p["tokens"],
            "q": p["tokens"] ** 2, "b": 1.0}[name]


def fit(kind: str, points: list[dict]) -> tuple[dict, float]:
    """Minimax fit of FORMULA in relative error: min t s.t. |pred_i - y_i| <= t * y_i, coefficients >= 0 (an LP).

    Minimising the largest relative error (rather than squared error) is what the estimator needs:
    the stored max_rel_error is then the smallest bound any coefficients of this form can give.
    """
    import numpy as np
    from scipy.optimize import linprog

    names = _features(kind, points)
    X = np.array([[_column(n, p) for n in names] for p in points], dtype=float)
    y = np.array([p["working_bytes"] for p in points], dtype=float)
    # Relative form, well scaled for the solver: R = X / y (row-wise), columns scaled to max 1;
    # |R w - 1| <= t.
    R = X / y[:, None]
    scale = np.abs(R).max(axis=0)
    scale[scale == 0] = 1.0
    Rs = R / scale
    n = len(names)
    ones = np.ones(len(y))
    c_obj = np.zeros(n + 1)
    c_obj[-1] = 1.0
    A = np.vstack([np.hstack([Rs, -ones[:, None]]), np.hstack([-Rs, -ones[:, None]])])
    bnd = np.concatenate([ones, -ones])
    # The per-token/per-batch slopes a, c, q are sums of tensor sizes, so they may not be negative.
    # b and d are left free: the peak is a max over blocks of linear pieces (e.g. Qwen-Image's
    # attention output needs a copy only when batch > 1), and a small negative b or d is how one
    # linear formula straddles two pieces. tests/ check predictions stay positive and monotonic.
    bounds = [(None, None) if nm in ("b", "d") else (0, None) for nm in names] + [(0, None)]
    res = linprog(c_obj, A_ub=A, b_ub=bnd, bounds=bounds, method="highs")
    if not res.success:
        raise RuntimeError(f"fit failed: {res.message}")
    w = res.x[:n] / scale
    coeffs = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0, "q": 0.0}
    for name, val in zip(names, w):
        coeffs[name] = float(val)
    errs = [abs(predict(coeffs, p["batch"], p["tokens"], p["text_tokens"]) - p["working_bytes"])
            / p["working_bytes"] for p in points]
    return coeffs, max(errs)


def _round_coeffs(coeffs: dict) -> dict:
    # a, c, q as floats to 6 significant digits; b as whole bytes.
    return {k: (round(v) if k == "b" else float(f"{v:.6g}")) for k, v in coeffs.items()}


def summarize(kind: str, points: list[dict]) -> dict:
    coeffs, _ = fit(kind, points)
    coeffs = _round_coeffs(coeffs)
    max_err = 0.0
    for p in points:
        pred = predict(coeffs, p["batch"], p["tokens"], p["text_tokens"])
        p["predicted_bytes"] = int(round(pred))
        p["rel_error"] = round((pred - p["working_bytes"]) / p["working_bytes"], 5)
        max_err = max(max_err, abs(p["rel_error"]))
    return {"formula": FORMULA, "coefficients": coeffs, "max_rel_error": round(max_err, 5)}


# --------------------------------------------------------------------------------------------------
# Provenance and main
# --------------------------------------------------------------------------------------------------

# ComfyUI trees unpacked from the project's shared archives (shared/comfyui/README.md), whose exact
# commit is not in the git mirror: (commit, commit date, source).
ARCHIVE_SOURCES = {
    "0.33.0": ("", "", "ComfyUI 0.33.0 release tree (comfyui_version.py 0.33.0) as the CI cache unpacks it "
               "(~/.cache/comfyui-vram-budget-ci/src-*/ComfyUI-0.33); commit not recorded"),
    "0.18.2": ("a93ddcb", "2026-04", "shared/comfyui/ComfyUI-0.18.2.tar.gz: upstream ComfyUI 0.18.2 plus a "
               "Windows-on-ARM DirectML auto-detect that does nothing on Linux (commit a93ddcb)"),
}


def provenance() -> dict:
    import torch

    def git(*a):
        try:
            return subprocess.run(["git", "--git-dir", MIRROR_GIT, *a], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except OSError:
            return ""

    ver = {}
    with open(os.path.join(COMFY_PATH, "comfyui_version.py"), encoding="utf-8") as fh:
        m = re.search(r'__version__\s*=\s*"([^"]+)"', fh.read())  # read, never executed
    ver["__version__"] = m.group(1) if m else "unknown"
    try:
        import importlib.metadata as md
        ck = md.version("comfy-kitchen")
    except Exception:
        ck = None
    version = ver.get("__version__")
    if version in ARCHIVE_SOURCES:  # a release archive, not the git mirror
        commit, commit_date, source = ARCHIVE_SOURCES[version]
    else:
        commit, commit_date = git("rev-parse", "HEAD"), git("log", "-1", "--format=%cI")
        source = "github:pollockjj/ComfyUI (tree identical to upstream 3cd7b32)"
    return {
        "comfyui_version": version,
        "comfyui_commit": commit,
        "comfyui_commit_date": commit_date,
        "comfyui_source": source,
        "torch_version": torch.__version__,
        "comfy_kitchen_version": ck,
        "python_version": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tracer": "bench/trace_working_memory.py",
        "method": ("FakeTensorMode on a fake cuda device, torch.inference_mode, full-size ComfyUI models; "
                   "peak of live tensor-storage bytes excluding parameters/buffers; inputs included"),
        "attention": ("F.scaled_dot_product_attention replaced by the flash (no mask) / memory-efficient "
                      "(mask) kernel's allocations: output [B,N,H,D] + fp32 logsumexp, no NxN"),
        "compute_dtype": ("bfloat16 (diffusion); text encoders: fp16 (CLIP, T5) or bf16 (LLM) weights cast per "
                          "layer (manual_cast)"),
        "default_rope": "comfy-kitchen fused CUDA op (torch built for CUDA >= 13); see variants.rope_eager",
        "not_included": ("CUDA caching-allocator rounding/fragmentation, cuBLAS/cuDNN workspaces, CUDA context, "
                         "VAE, sampler state outside apply_model"),
    }


VARIANTS = {
    "rope_eager": ("RoPE via comfy-kitchen's eager backend (torch built for CUDA < 13)", RopeEager, ROPE_ARCHES),
    "fp8_manual_cast": ("float8_e4m3fn weights, bf16 compute via manual_cast (per-layer weight cast)",
                        Fp8Weights, ("flux1-dev", "wan2.1-14b", "wan2.1-1.3b", "wan2.2-ti2v-5b", "sdxl",
                                     "qwen-image", "hunyuan-video")),
    "i2v": ("Wan 2.1 I2V 14B (in_dim 36, c_concat + 257 CLIP-vision tokens)", WanI2V, ("wan2.1-14b",)),
    "kontext": ("Flux Kontext: one same-size reference latent; tokens count image + reference tokens",
                FluxKontext, ("flux1-dev",)),
}


def _entry_provenance(entry: dict, file_prov: dict, run_prov: dict | None, now: str) -> None:
    """An architecture traced by a ComfyUI other than the file's gets its own provenance (memory.py
    reads an entry's own provenance first); a refit only stamps the date."""
    if run_prov is None:
        if "provenance" in entry:
            entry["provenance"]["refit_date"] = now
        return
    if run_prov.get("comfyui_version") != file_prov.get("comfyui_version") or "provenance" in entry:
        entry["provenance"] = run_prov


def _key(p: dict) -> tuple:
    return (p["batch"], p["width"], p["height"], p["frames"], p["text_tokens"], p["tokens"])


def _write(path: str, doc: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def _comfy_baseline(arch: Arch, p: dict, factor: float | None, extra_area: int = 0) -> None:
    if arch.kind != "diffusion" or factor is None:
        return
    mr = _memory_required_flash(p["latent_shape"], factor, extra_area=extra_area)
    p["comfy_extra_area"] = extra_area
    p["comfy_memory_required_bytes"] = mr
    p["measured_over_comfy"] = round(p["working_bytes"] / mr, 4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="nodes/estimator/data/working_memory.json")
    ap.add_argument("--only", default="", help="comma-separated family ids")
    ap.add_argument("--variants", default="rope_eager,fp8_manual_cast,i2v,kontext",
                    help="comma-separated, or 'none'")
    ap.add_argument("--deadline", type=float, default=120.0, help="seconds per trace before it is skipped")
    ap.add_argument("--resume", action="store_true", help="keep points already in --out, trace the rest")
    ap.add_argument("--refit", action="store_true", help="only refit the points already in --out")
    ap.add_argument("--markdown", action="store_true", help="print the docs tables for --out and exit (no torch)")
    args = ap.parse_args(argv)

    if args.markdown:
        with open(args.out) as f:
            print(report_markdown(json.load(f)))
        return 0

    import_comfy()
    arches = {**_arches(), **_arches_018(), **_arches_033(), **_te_arches(), **_te_arches_018()}
    only = [s for s in args.only.split(",") if s] or list(arches)
    variants = [] if args.variants == "none" else [v for v in args.variants.split(",") if v]

    doc: dict = {}
    if (args.resume or args.refit) and os.path.exists(args.out):
        with open(args.out) as f:
            doc = json.load(f)
    doc["schema"] = SCHEMA
    doc["description"] = ("Working memory (activations, excluding weights) of one model forward, traced from "
                          "ComfyUI's own model code; the ComfyUI version is the file's provenance unless an "
                          "architecture carries its own; see docs/working-memory.md")
    doc["units"] = {"bytes": "all *_bytes values and coefficient b", "coefficients": COEFF_UNITS}
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if args.refit and "provenance" in doc:
        doc["provenance"]["refit_date"] = now
    run_prov = None if args.refit else provenance()
    if run_prov is not None and (not args.resume or "provenance" not in doc):
        doc["provenance"] = run_prov
    archs_doc = doc.setdefault("architectures", {})

    for fam in only:
        arch = arches[fam]
        entry = archs_doc.setdefault(fam, {})
        entry.update({"kind": arch.kind, "token_rule": arch.token_rule, "comfy_model_class": arch.comfy_class})
        _entry_provenance(entry, doc["provenance"], run_prov, now)
        runs = [("", None)] + [(v, VARIANTS[v]) for v in variants if fam in VARIANTS[v][2]]
        for vname, vspec in runs:
            target = entry if not vname else entry.setdefault("variants", {}).setdefault(vname, {})
            if vname:
                target["description"] = vspec[0]
            old = {_key(p): p for p in target.get("points", [])} if (args.resume or args.refit) else {}
            points = []
            skipped = []
            cases = arch.cases
            if vname == "fp8_manual_cast":  # a per-layer constant: batch 1 shows it
                cases = [c for c in arch.cases if c.batch == 1]
            elif vname == "kontext":
                cases = [c for c in arch.cases if c.text_tokens == 512 and c.batch <= 2 and c.width == c.height]
            for case in cases:
                with (vspec[1]() if vspec else contextlib.nullcontext()):
                    probe = {"batch": case.batch, "width": case.width, "height": case.height,
                             "frames": case.frames, "text_tokens": case.text_tokens, "tokens": arch.tokens(case)}
                    if case.refs:
                        probe["refs"] = case.refs
                    if _key(probe) in old:
                        points.append(old[_key(probe)])
                        continue
                    if args.refit:
                        continue
                    t0 = time.time()
                    try:
                        if arch.kind == "diffusion":
                            p = trace_diffusion(arch, case, args.deadline)
                        else:
                            p = trace_text_encoder(arch, case, args.deadline)
                    except Deadline:
                        skipped.append({**probe, "reason": f"deadline {args.deadline}s"})
                        print(f"SKIP {case.label()} {vname}: deadline", flush=True)
                        continue
                    except Exception as e:  # keep sweeping; record why
                        skipped.append({**probe, "reason": f"{type(e).__name__}: {e}"[:300]})
                        print(f"FAIL {case.label()} {vname}: {e}", flush=True)
                        traceback.print_exc()
                        continue
                target["weight_bytes"] = p.pop("weight_bytes")
                points.append(p)
                print(f"{case.label():45s} {vname:16s} {p['working_bytes'] / GIB:8.3f} GiB "
                      f"peak@{p['peak_module']} ({time.time() - t0:.1f}s)", flush=True)
                target["points"] = points
                _write(args.out, doc)
            if not vname:
                entry["memory_usage_factor"] = _memory_usage_factor(arch)
            for p in points:
                # ComfyUI adds Kontext's reference latents to the area as a [1, 16, sum(h*w)] cond
                # (model_base.Flux.extra_conds_shapes); the other variants feed the same latent.
                extra_area = (p["height"] // 8) * (p["width"] // 8) if vname == "kontext" else \
                    arch.extra_area(Case(fam, p["batch"], p["width"], p["height"], p["frames"], p["text_tokens"],
                                         p.get("refs", 0)))
                _comfy_baseline(arch, p, entry.get("memory_usage_factor"), extra_area)
            target["points"] = points
            if skipped:
                target["skipped"] = skipped
            else:
                target.pop("skipped", None)
            if len(points) >= 2:
                target.update(summarize(arch.kind, points))
            _write(args.out, doc)
    return 0


def _shape_label(p: dict) -> str:
    if p["width"]:
        s = f"{p['width']}x{p['height']}"
        if p["frames"] > 1:
            s += f"x{p['frames']}"
        return s
    return f"{p['tokens']} tok"


def report_markdown(doc: dict) -> str:
    """The tables of docs/working-memory.md, from the JSON (regenerate after a new sweep)."""
    out = []
    out.append("### Fitted constants\n")
    out.append("| family | ComfyUI class | a (B/token/batch) | c (B/text token/batch) | d (B/token) | q (B/token²) "
               "| b (MiB) | max rel. error | points | peak at |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    file_ver = doc.get("provenance", {}).get("comfyui_version", "?")
    for fam, e in doc["architectures"].items():
        k = e["coefficients"]
        ver = e.get("provenance", {}).get("comfyui_version", file_ver)
        peaks = sorted({re.sub(r"\.\d+", ".N", p["peak_module"].replace("diffusion_model.", "")) for p in e["points"]})
        out.append(f"| `{fam}` | {e.get('comfy_model_class', '')} ({ver}) | {k['a']:,.0f} | {k['c']:,.0f} "
                   f"| {k['d']:,.0f} | {k['q']:,.1f} | {k['b'] / MIB:,.1f} "
                   f"| {e['max_rel_error'] * 100:.2f} % | {len(e['points'])} | {'; '.join(peaks)} |")
    out.append("")
    out.append("### Variants (same formula, own constants)\n")
    out.append("| family | variant | a | c | d | b (MiB) | max rel. error | vs default at the largest B=1 point |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for fam, e in doc["architectures"].items():
        base = {(p["batch"], p["tokens"], p["text_tokens"]): p["working_bytes"] for p in e["points"]}
        for vn, v in e.get("variants", {}).items():
            k = v["coefficients"]
            b1 = [p for p in v["points"] if p["batch"] == 1]
            big = max(b1, key=lambda p: (p["tokens"], p["text_tokens"]))
            ref = base.get((big["batch"], big["tokens"], big["text_tokens"]))
            delta = f"{(big['working_bytes'] - ref) / MIB:+,.0f} MiB ({_shape_label(big)})" if ref else "-"
            out.append(f"| `{fam}` | {vn} | {k['a']:,.0f} | {k['c']:,.0f} | {k['d']:,.0f} | {k['b'] / MIB:,.1f} "
                       f"| {v['max_rel_error'] * 100:.2f} % | {delta} |")
    out.append("")
    out.append("### Every point: measured, fitted, and ComfyUI's `memory_required` at the same batch\n")
    out.append("| family | shape | batch | tokens | text | measured GiB | fit GiB | fit err | ComfyUI GiB | measured / ComfyUI |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for fam, e in doc["architectures"].items():
        for p in e["points"]:
            comfy = p.get("comfy_memory_required_bytes")
            out.append(f"| `{fam}` | {_shape_label(p)} | {p['batch']} | {p['tokens']:,} | {p['text_tokens']} "
                       f"| {p['working_bytes'] / GIB:.3f} | {p['predicted_bytes'] / GIB:.3f} | {p['rel_error'] * 100:+.2f} % "
                       f"| {comfy / GIB if comfy else float('nan'):.3f} | {p.get('measured_over_comfy') or '-'} |")
    return "\n".join(out)


_FACTOR_CACHE: dict[str, float | None] = {}


def _memory_usage_factor(arch: Arch) -> float | None:
    """The supported_models memory_usage_factor ComfyUI would use (diffusion models only)."""
    if arch.kind != "diffusion":
        return None
    if arch.family not in _FACTOR_CACHE:
        import comfy.model_detection

        cfg = arch.config or {"flux1-dev": FLUX_DEV, "wan2.1-14b": WAN_14B_T2V, "wan2.1-1.3b": WAN_13B_T2V,
                              "wan2.2-ti2v-5b": WAN22_5B, "sdxl": SDXL_UNET, "sd15": SD15_UNET,
                              "qwen-image": QWEN_IMAGE, "hunyuan-video": HUNYUAN_VIDEO}[arch.family]
        mc = comfy.model_detection.model_config_from_unet_config(dict(cfg))
        # sd.py calls set_inference_dtype on load; Anima's rescales the factor there (supported_models.py:1050-1054).
        import torch

        mc.set_inference_dtype(getattr(torch, _BUILD["weight_dtype"]), None)
        _FACTOR_CACHE[arch.family] = float(mc.memory_usage_factor)
    return _FACTOR_CACHE[arch.family]


if __name__ == "__main__":
    sys.exit(main())
