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
# The git mirror this ComfyUI tree was exported from (COMFYUI-NOTES.md §0).
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


@dataclass(frozen=True)
class Case:
    arch: str
    batch: int
    width: int = 0
    height: int = 0
    frames: int = 1
    text_tokens: int = 0

    def label(self) -> str:
        s = f"{self.arch} B{self.batch}"
        if self.width:
            s += f" {self.width}x{self.height}"
        if self.frames > 1:
            s += f"x{self.frames}f"
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


def trace_diffusion(arch: Arch, case: Case, deadline_s: float) -> dict:
    import torch

    shape = arch.latent_shape(case)

    def make_inputs(model):
        # What the sampler hands apply_model: fp32 latents and sigmas, fp32 text-encoder output
        # (samplers.py calc_cond_batch -> cond_cat); apply_model casts them to the model dtype.
        x = torch.zeros(shape, dtype=torch.float32, device="cuda")
        sigma = torch.full((case.batch,), 0.5, dtype=torch.float32, device="cuda")
        ctx = torch.zeros((case.batch, case.text_tokens, arch.context_dim), dtype=torch.float32, device="cuda")
        return x, sigma, ctx, arch.extra(case)

    def call(model, x, sigma, ctx, extra):
        return model.apply_model(x, sigma, c_crossattn=ctx, transformer_options={}, **extra)

    res = run_trace(arch.build, make_inputs, call, deadline_s)
    return _point(arch, case, shape, res)


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


class RopeEager:
    """Swap comfy-kitchen's fused RoPE op for its eager backend.

    ComfyUI 0.8.0 binds ``apply_rope``/``apply_rope1`` to ``comfy.quant_ops.ck`` (flux/math.py:32-35);
    quant_ops.py:16-20 disables comfy-kitchen's CUDA backend on torch built for CUDA < 13, and the op
    then runs the eager backend (fp32 temporaries), the same math as ComfyUI's own fallback
    (flux/math.py:38-47). Default (no variant) = CUDA >= 13 torch, fused kernel: output only.
    """

    TARGETS = (("comfy.ldm.flux.math", ("apply_rope", "apply_rope1")),
               ("comfy.ldm.wan.model", ("apply_rope1",)),
               ("comfy.ldm.qwen_image.model", ("apply_rope1",)))

    def __enter__(self):
        import importlib
        from comfy_kitchen.backends.eager import rope as eager

        self.saved = []
        for mod_name, names in self.TARGETS:
            mod = importlib.import_module(mod_name)
            for n in names:
                if hasattr(mod, n):
                    self.saved.append((mod, n, getattr(mod, n)))
                    setattr(mod, n, getattr(eager, n))
        return self

    def __exit__(self, *exc):
        for mod, n, f in self.saved:
            setattr(mod, n, f)
        return False


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
    return {
        "comfyui_version": ver.get("__version__"),
        "comfyui_commit": git("rev-parse", "HEAD"),
        "comfyui_commit_date": git("log", "-1", "--format=%cI"),
        "comfyui_source": "github:pollockjj/ComfyUI (tree identical to upstream 3cd7b32)",
        "torch_version": torch.__version__,
        "comfy_kitchen_version": ck,
        "python_version": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tracer": "bench/trace_working_memory.py",
        "method": ("FakeTensorMode on a fake cuda device, torch.inference_mode, full-size ComfyUI models; "
                   "peak of live tensor-storage bytes excluding parameters/buffers; inputs included"),
        "attention": ("F.scaled_dot_product_attention replaced by the flash (no mask) / memory-efficient "
                      "(mask) kernel's allocations: output [B,N,H,D] + fp32 logsumexp, no NxN"),
        "compute_dtype": "bfloat16 (diffusion); float32 activations with fp16 weights cast per layer (text encoders)",
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
    arches = {**_arches(), **_te_arches()}
    only = [s for s in args.only.split(",") if s] or list(arches)
    variants = [] if args.variants == "none" else [v for v in args.variants.split(",") if v]

    doc: dict = {}
    if (args.resume or args.refit) and os.path.exists(args.out):
        with open(args.out) as f:
            doc = json.load(f)
    doc["schema"] = SCHEMA
    doc["description"] = ("Working memory (activations, excluding weights) of one model forward in ComfyUI "
                          "0.8.0, traced from ComfyUI's own model code; see docs/working-memory.md")
    doc["units"] = {"bytes": "all *_bytes values and coefficient b", "coefficients": COEFF_UNITS}
    if args.refit and "provenance" in doc:
        doc["provenance"]["refit_date"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        doc["provenance"] = provenance()
    archs_doc = doc.setdefault("architectures", {})

    for fam in only:
        arch = arches[fam]
        entry = archs_doc.setdefault(fam, {})
        entry.update({"kind": arch.kind, "token_rule": arch.token_rule, "comfy_model_class": arch.comfy_class})
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
                extra_area = (p["height"] // 8) * (p["width"] // 8) if vname == "kontext" else 0
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
    out.append("| family | a (B/token/batch) | c (B/text token/batch) | d (B/token) | q (B/token²) | b (MiB) "
               "| max rel. error | points | peak at |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for fam, e in doc["architectures"].items():
        k = e["coefficients"]
        peaks = sorted({re.sub(r"\.\d+", ".N", p["peak_module"].replace("diffusion_model.", "")) for p in e["points"]})
        out.append(f"| `{fam}` | {k['a']:,.0f} | {k['c']:,.0f} | {k['d']:,.0f} | {k['q']:,.1f} | {k['b'] / MIB:,.1f} "
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

        cfg = {"flux1-dev": FLUX_DEV, "wan2.1-14b": WAN_14B_T2V, "wan2.1-1.3b": WAN_13B_T2V,
               "wan2.2-ti2v-5b": WAN22_5B, "sdxl": SDXL_UNET, "sd15": SD15_UNET, "qwen-image": QWEN_IMAGE,
               "hunyuan-video": HUNYUAN_VIDEO}[arch.family]
        mc = comfy.model_detection.model_config_from_unet_config(dict(cfg))
        _FACTOR_CACHE[arch.family] = float(mc.memory_usage_factor)
    return _FACTOR_CACHE[arch.family]


if __name__ == "__main__":
    sys.exit(main())
