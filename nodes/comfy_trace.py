"""Ask ComfyUI itself: identify a model file with ComfyUI's own detection, and trace its forward at
the prompt's exact shapes.

Two halves in one file:
- **Worker** (``python comfy_trace.py --worker COMFYUI_ROOT``, run with ComfyUI's own Python): it
  imports ComfyUI with CUDA hidden and PyTorch attention selected (what an NVIDIA GPU runs,
  model_management.py), and answers JSON-line requests on stdin:
  ``detect``: the file's tensor names / shapes / dtypes (sent by the parent, read from the header;
  the worker never opens a path) become meta tensors, and ``comfy.model_detection``
  (``unet_prefix_from_state_dict`` + ``model_config_from_unet``) names the model class and config
  exactly as ComfyUI's loader would (a checkpoint's ``model.diffusion_model.`` prefix included);
  for text encoders ``comfy.sd.detect_te_model``.
  ``trace``: the detected model is built at FULL size from ComfyUI's classes inside a
  ``FakeTensorMode`` on a fake ``cuda`` device (no data: a 14B model costs nothing), one forward runs
  at the prompt's latent shape through ``model.extra_conds`` + ``apply_model`` (as the sampler calls
  it) under a live-storage tracker, and the peak of new tensor storage is the working memory
  (weights excluded; attention counted as the fused SDPA kernels allocate it).
- **Client** (``LiveTracer``, imported in the server process; no torch import): starts the worker
  lazily as a subprocess (never in ComfyUI's process, so a running prompt is not disturbed and a
  stuck trace can be killed), one request at a time under a lock, a time limit per request, and a
  disk cache keyed by (ComfyUI version, the model's tensor shapes, the prompt's shapes). Every
  failure answers None: the caller falls back to the shipped table and says so.

The tracker is the one bench/trace_working_memory.py uses to build the shipped table.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass
from typing import Any, Mapping

SCHEMA = 1
DEFAULT_TIMEOUT_S = 60.0
IDLE_EXIT_S = 300.0  # the worker exits after this long without a request (it holds torch: ~1 GB of RAM)
MAX_CACHE_ENTRIES = 2000


# =============================================================================== worker side (torch)
def _tensors_in(obj: Any):
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


def storage_key(t) -> int:
    return t.untyped_storage()._cdata


@dataclass
class PeakInfo:
    bytes: int = 0
    op: str = ""
    module: str = ""


def make_tracker_cls():
    """A TorchDispatchMode counting live tensor-storage bytes (parameters / buffers excluded).

    Ops with a CUDA kernel run as one op (outputs only, like the fused kernel); ops that only have a
    CompositeImplicitAutograd kernel are decomposed so their intermediates count as on a GPU.
    ``aten.scaled_dot_product_attention`` is replaced by what the flash / memory-efficient kernels
    allocate: the output plus an fp32 logsumexp, no N × N matrix.
    """
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    sdpa_ops = {aten.scaled_dot_product_attention.default}
    fused_sdpa_ops = {
        aten._scaled_dot_product_flash_attention.default,
        aten._scaled_dot_product_efficient_attention.default,
        aten._scaled_dot_product_cudnn_attention.default,
        aten._scaled_dot_product_flash_attention_for_cpu.default,
    }

    class LiveStorageTracker(TorchDispatchMode):
        def __init__(self, excluded_keys: set[int]) -> None:
            super().__init__()
            self.excluded = excluded_keys
            self.live: dict[int, int] = {}
            self.current = 0
            self.peak = PeakInfo()
            self.module_stack: list[str] = []
            self.n_ops = 0
            self.attention_calls = 0
            self.decomposed: dict[str, int] = {}
            # with autograd on, SDPA is decomposed above this mode into the fused kernel (the flash
            # kernel's own outputs: out + logsumexp, as on a GPU); counted as any op
            self.allow_fused = False

        def _free(self, key: int) -> None:
            n = self.live.pop(key, None)
            if n is not None:
                self.current -= n

        def _track(self, t, func_name: str) -> None:
            st = t.untyped_storage()
            key = st._cdata
            if key in self.excluded:
                return
            n = st.nbytes()
            old = self.live.get(key)
            if old is None:
                self.live[key] = n
                self.current += n
                weakref.finalize(st, self._free, key)
            elif old != n:  # resized in place
                self.live[key] = n
                self.current += n - old
            if self.current > self.peak.bytes:
                self.peak = PeakInfo(self.current, func_name, self.module_stack[-1] if self.module_stack else "")

        def track_tensor(self, t) -> None:
            self._track(t, "input")

        def _fused_attention(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                             enable_gqa=False):
            self.attention_calls += 1
            with self:
                B, H, Nq, D = q.shape
                Dv = v.shape[-1]
                transient = [x.contiguous() for x in (q, k, v) if x.stride(-1) != 1]
                if attn_mask is None:
                    lse_len = Nq  # flash: logsumexp [B, H, Nq] fp32
                else:
                    lse_len = (Nq + 31) // 32 * 32  # memory-efficient: padded to 32 rows
                    m = attn_mask
                    if m.dtype == torch.bool:
                        m = torch.zeros(m.shape, dtype=q.dtype, device=q.device)
                        transient.append(m)
                    if m.shape[-1] % 16 != 0:
                        padded = list(m.shape)
                        padded[-1] = (padded[-1] + 15) // 16 * 16
                        transient.append(torch.empty(padded, dtype=m.dtype, device=m.device))
                out = torch.empty((B, Nq, H, Dv), dtype=q.dtype, device=q.device).transpose(1, 2)
                lse = torch.empty((B, H, lse_len), dtype=torch.float32, device=q.device)
                del lse, transient
            return out

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self.n_ops += 1
            if func in sdpa_ops:
                return self._fused_attention(*args, **kwargs)
            if func in fused_sdpa_ops and not self.allow_fused:
                raise RuntimeError(f"unexpected direct call of {func}")
            name = func.name()
            if (func.namespace == "aten"
                    and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA")
                    and torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")):
                self.decomposed[name] = self.decomposed.get(name, 0) + 1
                with self:
                    r = func.decompose(*args, **kwargs)
                if r is not NotImplemented:
                    return r
            out = func(*args, **kwargs)
            for t in _tensors_in(out):
                self._track(t, name)
            return out

    return LiveStorageTracker


def module_name_hooks(model, tracker) -> list:
    """Forward pre/post hooks that keep tracker.module_stack (which module holds the peak)."""
    hooks = []
    for name, mod in model.named_modules():
        if not name or name.count(".") > 3:
            continue

        def pre(_m, _a, name=name):
            tracker.module_stack.append(name)

        def post(_m, _a, _o, name=name):
            if tracker.module_stack and tracker.module_stack[-1] == name:
                tracker.module_stack.pop()

        hooks.append(mod.register_forward_pre_hook(pre))
        hooks.append(mod.register_forward_hook(post))
    return hooks


def import_comfy(comfy_root: str) -> str:
    """Import ComfyUI as the NVIDIA path runs it (attention_pytorch), without touching a GPU."""
    if comfy_root not in sys.path:
        sys.path.insert(0, comfy_root)
    import comfy.cli_args

    a = comfy.cli_args.args
    a.cpu = True  # the model code runs on fake CUDA tensors; no real device is used
    a.use_pytorch_cross_attention = True
    a.disable_async_offload = True
    import comfy.model_management  # noqa: F401
    import comfy.ldm.modules.attention as attn

    if attn.optimized_attention is not attn.attention_pytorch:
        raise RuntimeError(f"expected attention_pytorch, got {attn.optimized_attention.__name__}")
    try:
        import comfyui_version

        return str(comfyui_version.__version__)
    except Exception:  # noqa: BLE001
        return "unknown"


_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64", "I32": "int32",
           "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "F8_E4M3": "float8_e4m3fn",
           "F8_E5M2": "float8_e5m2"}


def meta_state_dict(tensors: list) -> dict:
    """[name, dtype, shape] triples -> {name: meta tensor}: shapes and dtypes, no data."""
    import torch

    sd = {}
    for name, dtype, shape in tensors:
        dt = getattr(torch, _DTYPES.get(str(dtype).upper(), "bfloat16"))
        sd[str(name)] = torch.empty([int(s) for s in shape], dtype=dt, device="meta")
    return sd


def _jsonable(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def diffusion_config(sd: dict, metadata: Mapping | None = None):
    """(model_config, state dict as the model sees it) the way UNETLoader loads a file
    (comfy/sd.py load_diffusion_model_state_dict, 0.18.2 :1723-1745): strip a checkpoint's prefix
    when present, detect; else try the diffusers layouts. (None, sd) when ComfyUI finds no model."""
    import comfy.model_detection as md
    import comfy.utils

    prefix = md.unet_prefix_from_state_dict(sd)
    stripped = comfy.utils.state_dict_prefix_replace(sd, {prefix: ""}, filter_keys=True)
    if len(stripped) > 0:
        sd = stripped
    meta = dict(metadata or {})
    try:
        config = md.model_config_from_unet(sd, "", metadata=meta)
    except Exception:  # noqa: BLE001 - not a diffusion model (text encoder, VAE...)
        config = None
    if config is None:
        try:
            converted = md.convert_diffusers_mmdit(sd, "")
            if converted is not None:
                config = md.model_config_from_unet(converted, "", metadata=meta)
                sd = converted if config is not None else sd
            if config is None:
                config = md.model_config_from_diffusers_unet(sd)
        except Exception:  # noqa: BLE001
            config = None
    return config, sd


def detect(tensors: list, metadata: Mapping | None = None) -> dict:
    """What ComfyUI's loader would make of these tensors."""
    sd = meta_state_dict(tensors)
    config, _ = diffusion_config(dict(sd), metadata)  # a copy: the prefix strip pops keys from its input
    if config is not None:
        lf = config.latent_format
        return {"kind": "diffusion", "class": type(config).__name__,
                "unet_config": _jsonable(config.unet_config),
                "latent_channels": int(getattr(lf, "latent_channels", 4)),
                "latent_dimensions": int(getattr(lf, "latent_dimensions", 2)),
                "memory_usage_factor": float(getattr(config, "memory_usage_factor", 1.0))}
    try:
        import comfy.sd

        te = comfy.sd.detect_te_model(sd)
        if te is not None:
            return {"kind": "text_encoder", "class": getattr(te, "name", str(te))}
    except Exception:  # noqa: BLE001
        pass
    vae = vae_from(sd)
    if vae is not None:
        return {"kind": "vae", **_vae_facts(vae)}
    return {"kind": "unknown"}


# ------------------------------------------------------------------------------------------- VAEs
def vae_from(sd: dict):
    """comfy.sd.VAE built from the file's keys and shapes as VAELoader builds it (0.18.2 sd.py VAE.__init__:
    the branch its keys select), every tensor on the meta device; None when ComfyUI's VAE would leave most
    of its own weights unloaded (not a VAE)."""

    import torch
    import comfy.sd

    if not any(k.startswith(("decoder.", "encoder.", "first_stage_model.", "vae.", "audio_vae.", "geo_decoder.",
                             "post_quant_conv", "conv_in", "conv1.", "decoder_")) for k in sd):
        return None
    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # "missing VAE keys" on purpose-built partial files
    try:
        with torch.device("meta"):
            vae = comfy.sd.VAE(sd=dict(sd), dtype=torch.bfloat16)
    except Exception:  # noqa: BLE001 - keys ComfyUI's VAE cannot build from
        return None
    finally:
        logging.getLogger().setLevel(level)
    fsm = getattr(vae, "first_stage_model", None)
    if fsm is None:
        return None
    keys = set(sd)
    if "decoder.up_blocks.0.resnets.0.norm1.weight" in keys:  # diffusers layout: VAE.__init__ converts it
        import comfy.diffusers_convert

        keys = set(comfy.diffusers_convert.convert_vae_state_dict(dict(sd)))
    own = set(fsm.state_dict().keys())
    if not own or len(own & keys) < 0.5 * len(own):
        return None
    from comfy.ldm.modules.diffusionmodules.model import pytorch_attention

    for m in fsm.modules():  # NVIDIA's default attention (model_management: pytorch attention)
        if hasattr(m, "optimized_attention"):
            m.optimized_attention = pytorch_attention
    return vae


def _vae_facts(vae) -> dict:
    fsm = vae.first_stage_model

    def call(name):
        try:
            value = getattr(vae, name)()
            return int(value) if value is not None else None
        except Exception:  # noqa: BLE001
            return None

    return {"class": type(fsm).__name__, "latent_channels": int(getattr(vae, "latent_channels", 4)),
            "latent_dim": int(getattr(vae, "latent_dim", 2)), "spatial": call("spacial_compression_decode"),
            "temporal": call("temporal_compression_decode"),
            "params": int(sum(p.numel() for p in fsm.parameters()))}


def trace_vae(tensors: list, shape: list, op: str = "decode") -> dict:
    """Working memory of ``first_stage_model.decode`` on a latent of ``shape`` (or ``encode`` on pixels
    [B, 3, (T,) H, W]): the call VAE.decode / VAE.encode make on the device, at these shapes, every tensor
    on the meta device; live bytes of the storages the call creates (weights excluded), fused attention."""
    import torch

    vae = vae_from(meta_state_dict(tensors))
    if vae is None:
        raise ValueError("ComfyUI does not build a VAE from this file")
    fsm = vae.first_stage_model
    if getattr(fsm, "comfy_has_chunked_io", False):
        raise ValueError("chunked-IO VAEs (LTX) are priced from the shipped table")
    mode = _meta_live_bytes()()
    t0 = time.time()
    with torch.inference_mode(), _fused_sdpa(), mode:
        x = torch.empty([int(v) for v in shape], dtype=torch.bfloat16, device="meta")
        y = fsm.decode(x) if op == "decode" else fsm.encode(vae.process_input(x))
        out_shape = list(y.shape)
        del y, x
    return {"working_bytes": int(mode.peak), "class": type(fsm).__name__, "out_shape": out_shape,
            "seconds": round(time.time() - t0, 2)}


def _meta_live_bytes():
    """A TorchDispatchMode counting the live bytes of the storages created under it (bench/trace_vae_memory.py)."""
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    import torch

    class LiveBytes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live, self.outside, self.current, self.peak = {}, {}, 0, 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
                self.current -= self.live.pop(key)[1]
            for t in tree_flatten((args, kwargs))[0]:  # storages from before (weights): never counted
                if isinstance(t, torch.Tensor):
                    key = t.untyped_storage()._cdata
                    if key not in self.live and key not in self.outside:
                        self.outside[key] = StorageWeakRef(t.untyped_storage())
            out = func(*args, **kwargs)
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.device.type == "meta":
                    storage = t.untyped_storage()
                    key = storage._cdata
                    if key not in self.live and key not in self.outside:
                        self.live[key] = (StorageWeakRef(storage), int(storage.nbytes()))
                        self.current += int(storage.nbytes())
            self.peak = max(self.peak, self.current)
            return out

    return LiveBytes


@contextlib.contextmanager
def _fused_sdpa():
    """SDPA as the fused GPU kernel allocates it (output + fp32 logsumexp, no N x N matrix)."""
    import torch
    import comfy.ops

    def sdpa(q, k, v, *args, **kwargs):
        out = torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
        torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        return out

    saved = comfy.ops.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention
    comfy.ops.scaled_dot_product_attention = torch.nn.functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        comfy.ops.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention = saved


_CONTEXT_KEYS = ("context_in_dim", "context_dim", "cond_seq_dim", "text_dim", "joint_attention_dim", "caption_channels",
                 "cap_feat_dim", "text_states_dim", "encoder_hidden_size", "cross_attention_dim")
_POOLED_KEYS = ("vec_in_dim", "adm_in_channels", "pooled_projection_dim", "text_states_dim_2")


def _first(cfg: Mapping, keys) -> int | None:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, int) and v > 0:
            return v
        if isinstance(v, (list, tuple)) and v and isinstance(v[-1], int):
            return v[-1]
    return None


def _fake_model(tensors: list, metadata: Mapping | None, device: str):
    """(model_config, model) built at full size from ComfyUI's classes in a FakeTensorMode on
    ``device``, bf16 weights (a full load: model_management.unet_dtype; TrainLoraNode's default
    training_dtype), plus the fake mode and the parameter/buffer storages to leave out."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    config, sd = diffusion_config(meta_state_dict(tensors), metadata)
    if config is None:
        raise ValueError("ComfyUI does not detect a diffusion model in this file")
    config.set_inference_dtype(torch.bfloat16, None)
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    with fake:
        model = config.get_model(sd, "", device=torch.device(device))
        model.model_sampling.to(device)
    excluded = {storage_key(t) for t in list(model.parameters()) + list(model.buffers())}
    return config, model, fake, excluded


def _sampler_inputs(config, model, latent: list, text_tokens: int, device: str, requires_grad: bool = False):
    """(x, sigma, c_crossattn, extra conds) as the sampler hands them to apply_model: fp32 latents,
    sigmas and text-encoder output, conds from the model's own extra_conds (call inside the fake mode)."""
    import torch

    ucfg = config.unet_config
    ctx_dim = _first(ucfg, _CONTEXT_KEYS) or 4096
    pooled_dim = _first(ucfg, _POOLED_KEYS)
    batch = int(latent[0])
    x = torch.zeros([int(v) for v in latent], dtype=torch.float32, device=device, requires_grad=requires_grad)
    sigma = torch.full((batch,), 0.5, dtype=torch.float32, device=device)
    ctx = torch.zeros((batch, int(text_tokens), ctx_dim), dtype=torch.float32, device=device)
    kwargs = {"noise": x, "cross_attn": ctx, "device": x.device, "width": x.shape[-1] * 8, "height": x.shape[-2] * 8}
    if pooled_dim:
        kwargs["pooled_output"] = torch.zeros((batch, pooled_dim), dtype=torch.float32, device=device)
    conds = model.extra_conds(**kwargs)
    # small conds (guidance from torch.FloatTensor([3.5])) become fake *constants*, which the fake
    # mode would compute for real on the device: give every cond a plain fake tensor instead
    extra = {k: _plain_fake(v.cond if hasattr(v, "cond") else v, device) for k, v in conds.items()}
    c_cross = extra.pop("c_crossattn", ctx)
    # the caller holds the conds as the sampler does (ComfyUI keeps them for every step)
    return x, sigma, c_cross, extra, (ctx, conds, kwargs)


def trace(tensors: list, latent: list, text_tokens: int, metadata: Mapping | None = None) -> dict:
    """Working memory of one forward of the detected model at ``latent`` ([B, C, (T,) H, W])."""

    import torch

    config, model, fake, excluded = _fake_model(tensors, metadata, "cuda")
    Tracker = make_tracker_cls()
    t0 = time.time()
    tracker = Tracker(excluded)
    hooks = module_name_hooks(model.diffusion_model, tracker)
    try:
        with torch.inference_mode(), fake, tracker:
            x, sigma, c_cross, extra, held = _sampler_inputs(config, model, latent, text_tokens, "cuda")
            out = model.apply_model(x, sigma, c_crossattn=c_cross, **extra)
            del out, x, extra, held
    finally:
        for h in hooks:
            h.remove()
    result = {"working_bytes": int(tracker.peak.bytes), "peak_op": tracker.peak.op, "peak_module": tracker.peak.module,
              "attention_calls": tracker.attention_calls, "class": type(config).__name__,
              "seconds": round(time.time() - t0, 2)}
    del model, tracker
    gc.collect()
    return result


def _plain_fake(value, device: str = "cuda"):
    """The same shapes as new (non-constant) fake tensors on the fake device; values do not matter."""
    import torch

    if isinstance(value, torch.Tensor):
        return torch.zeros(value.shape, dtype=value.dtype, device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain_fake(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _plain_fake(v, device) for k, v in value.items()}
    return value


def _checkpointed(forward):
    import torch.utils.checkpoint

    def fwd(args, kwargs):
        return forward(*args, **kwargs)

    def checkpointing_fwd(*args, **kwargs):
        return torch.utils.checkpoint.checkpoint(fwd, args, kwargs, use_reentrant=False)

    return checkpointing_fwd


class EagerRope:
    """Bind every ``apply_rope`` / ``apply_rope1`` of ComfyUI's model code to comfy-kitchen's eager
    backend (``comfy_kitchen.backends.eager.rope``) for the duration of a ``with`` block, restoring the
    originals on exit.

    ComfyUI 0.8.0 binds ``apply_rope``/``apply_rope1`` to ``comfy.quant_ops.ck`` (flux/math.py:32-35);
    quant_ops.py:16-20 disables comfy-kitchen's CUDA backend on torch built for CUDA < 13, and the op
    then runs the eager backend (fp32 temporaries), the same math as ComfyUI's own fallback
    (flux/math.py:38-47). Two users:
    - a live training trace (``trace_train``): comfy-kitchen's fused RoPE ops have no autograd
      formula, so a backward needs the eager ones;
    - bench/trace_working_memory.py's ``rope_eager`` variant (torch built for CUDA < 13).

    ``import_first``: modules imported before patching (so they are loaded and patched even when no
    model has imported them yet); then every loaded ``comfy.ldm.*`` module that binds one of the names
    is patched. ``required``: raise ImportError when comfy-kitchen is missing (the bench variant must
    not record the default op's numbers as the eager ones); otherwise do nothing (without comfy-kitchen
    ComfyUI already runs its own eager RoPE)."""

    NAMES = ("apply_rope", "apply_rope1")

    def __init__(self, import_first: tuple = (), required: bool = False):
        self.import_first = tuple(import_first)
        self.required = required
        self.saved = []

    def __enter__(self):
        self.saved = []
        try:
            from comfy_kitchen.backends.eager import rope as eager
        except ImportError:
            if self.required:
                raise
            return self
        for mod_name in self.import_first:
            importlib.import_module(mod_name)
        for mod_name, mod in list(sys.modules.items()):
            if not mod_name.startswith("comfy.ldm.") or mod is None:
                continue
            for name in self.NAMES:
                if hasattr(mod, name) and hasattr(eager, name) and getattr(mod, name) is not getattr(eager, name):
                    self.saved.append((mod, name, getattr(mod, name)))
                    setattr(mod, name, getattr(eager, name))
        return self

    def __exit__(self, *exc):
        for mod, name, value in reversed(self.saved):
            setattr(mod, name, value)
        self.saved = []
        return False


def modules_at_depth(model, depth: int, result=None, current: int = 0) -> list:
    """ComfyUI's find_modules_at_depth (comfy_extras/nodes_train.py:431-466, 0.18.2): containers
    (ModuleList / Sequential / ModuleDict) do not count as a level; depth 1 is the model itself."""
    import torch.nn as nn

    result = [] if result is None else result
    if not isinstance(model, (nn.ModuleList, nn.Sequential, nn.ModuleDict)) and hasattr(model, "forward"):
        current += 1
        if current == depth:
            result.append(model)
            return result
    for child in model.children():
        modules_at_depth(child, depth, result, current)
    return result


def trace_train(tensors: list, latent: list, text_tokens: int, metadata: Mapping | None = None,
                depth: int = 1) -> dict:
    """Activations of one TrainLoraNode step (forward + backward) at ``latent``, as ComfyUI 0.18.2 runs
    it with gradient_checkpointing on at ``checkpoint_depth`` ``depth``: each module at that depth
    wrapped in torch.utils.checkpoint(use_reentrant=False) (nodes_train.py:431-466, :505-525; the
    default depth 1 is the whole diffusion model, recomputed at once in the backward).

    Every weight of 2+ dims is marked trainable (ComfyUI adapts them all), but only the gradient of
    the input is requested: no weight-sized gradient is made, and the peak is the recomputed saved
    activations plus the backward's transients (adapters, their gradients and optimizer states are
    priced by the estimator). Fake tensors on the CPU device: autograd's engine needs a real device
    for CUDA tensors; SDPA then runs as the fused flash kernel (output + logsumexp, as on a GPU)."""

    import torch

    config, model, fake, excluded = _fake_model(tensors, metadata, "cpu")
    for p in model.diffusion_model.parameters():
        p.requires_grad_(p.ndim >= 2)
    for m in modules_at_depth(model.diffusion_model, max(1, int(depth))):  # nodes_train.py patch()
        m.forward = _checkpointed(m.forward)
    Tracker = make_tracker_cls()
    t0 = time.time()
    tracker = Tracker(excluded)
    tracker.allow_fused = True
    try:
        with EagerRope(), torch.enable_grad(), fake, tracker:
            x, sigma, c_cross, extra, held = _sampler_inputs(config, model, latent, text_tokens, "cpu",
                                                             requires_grad=True)
            out = model.apply_model(x, sigma, c_crossattn=c_cross, **extra)
            loss = out.float().square().mean()
            (grad,) = torch.autograd.grad(loss, [x])
            del out, loss, grad, x, extra, held
    finally:
        for p in model.diffusion_model.parameters():
            p.requires_grad_(False)
    result = {"working_bytes": int(tracker.peak.bytes), "peak_op": tracker.peak.op, "class": type(config).__name__,
              "seconds": round(time.time() - t0, 2)}
    model = tracker = None  # noqa: F841  (free the fake model before the next request)
    gc.collect()
    return result


def worker_main(comfy_root: str) -> int:
    """JSON lines in, JSON lines out, until stdin closes or IDLE_EXIT_S passes without a request."""
    try:
        version = import_comfy(comfy_root)
        ready = {"ok": True, "ready": True, "comfyui_version": version}
    except Exception as exc:  # noqa: BLE001
        ready = {"ok": False, "error": f"cannot import ComfyUI: {type(exc).__name__}: {exc}"[:500]}
    print(json.dumps(ready), flush=True)
    if not ready["ok"]:
        return 1
    while True:
        readable, _, _ = select.select([sys.stdin], [], [], IDLE_EXIT_S)
        if not readable:
            return 0
        line = sys.stdin.readline()
        if not line:
            return 0
        try:
            req = json.loads(line)
            if req.get("op") == "detect":
                res = {"ok": True, **detect(req["tensors"], req.get("metadata"))}
            elif req.get("op") == "trace_train":
                res = {"ok": True, **trace_train(req["tensors"], req["latent"], req.get("text_tokens", 256),
                                                 req.get("metadata"), req.get("depth", 1))}
            elif req.get("op") == "trace_vae":
                res = {"ok": True, **trace_vae(req["tensors"], req["shape"], req.get("vae_op", "decode"))}
            elif req.get("op") == "trace":
                res = {"ok": True, **trace(req["tensors"], req["latent"], req.get("text_tokens", 256),
                                           req.get("metadata"))}
            else:
                res = {"ok": False, "error": f"unknown op {req.get('op')!r}"}
        except Exception as exc:  # noqa: BLE001 - every failure is an answer, never a dead worker
            res = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
        print(json.dumps(res), flush=True)


# =============================================================================== client side (no torch)
# The worker (a whole ComfyUI import: ~700 MB) ends after this long without a request (issue 31); the next
# estimate that needs a trace starts it again (~10 s). A failed trace is not asked again for FAIL_TTL_S, and a
# worker that failed to start twice is left alone as long (issue 37: a torch without CUDA retried every time).
IDLE_CLOSE_S = 180.0
FAIL_TTL_S = 900.0


class LiveTracer:
    """Runs the worker with ``python`` (ComfyUI's interpreter) and caches its answers on disk."""

    def __init__(self, comfy_root: str, python: str | None = None, cache_path: str | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, comfy_version: str = "unknown"):
        self.comfy_root = comfy_root
        self.python = python or sys.executable
        self.cache_path = cache_path
        self.timeout_s = timeout_s
        self.comfy_version = comfy_version
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()  # cache and pending requests
        self._worker_lock = threading.Lock()  # the worker's stdin/stdout: one request at a time
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vram-budget-trace")
        self._pending: dict = {}
        self._cache: dict[str, dict] = {}
        self._cache_loaded = False
        self.last_error: str | None = None
        self.stats = {"requests": 0, "cache_hits": 0, "failures": 0, "skipped_failed": 0, "idle_closes": 0}
        self._failed_keys: dict[str, float] = {}  # key -> when it failed (not asked again for FAIL_TTL_S)
        self._start_failures: list[float] = []  # when the worker failed to start
        self._idle_timer: threading.Timer | None = None
        self.idle_close_s = IDLE_CLOSE_S

    # -- cache
    def _load_cache(self) -> None:
        if self._cache_loaded:
            return
        self._cache_loaded = True
        if not self.cache_path:
            return
        try:
            with open(self.cache_path, encoding="utf-8") as f:
                doc = json.load(f)
            if isinstance(doc, dict) and doc.get("schema") == SCHEMA and isinstance(doc.get("entries"), dict):
                self._cache = {k: v for k, v in doc["entries"].items() if isinstance(v, dict)}
        except (OSError, ValueError):
            self._cache = {}

    def _save_cache(self) -> None:
        if not self.cache_path:
            return
        if len(self._cache) > MAX_CACHE_ENTRIES:
            for key in list(self._cache)[: len(self._cache) - MAX_CACHE_ENTRIES]:
                del self._cache[key]
        tmp = f"{self.cache_path}.tmp{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(self.cache_path) or ".", exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"schema": SCHEMA, "entries": self._cache}, f)
            os.replace(tmp, self.cache_path)
        except OSError:
            pass

    def cache_key(self, op: str, tensors: list, **shapes) -> str:
        h = hashlib.sha256()
        h.update(json.dumps([SCHEMA, self.comfy_version, op, shapes], sort_keys=True).encode())
        for name, dtype, shape in sorted(tensors):
            h.update(f"{name}:{dtype}:{list(shape)};".encode())
        return h.hexdigest()

    # -- worker
    def _start(self) -> None:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", HIP_VISIBLE_DEVICES="")
        self._proc = subprocess.Popen(
            [self.python, os.path.abspath(__file__), "--worker", self.comfy_root],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
            cwd=self.comfy_root)
        hello = self._read(self.timeout_s)
        if not hello.get("ok"):
            self.close()
            raise RuntimeError(hello.get("error") or "the trace worker did not start")
        self.comfy_version = str(hello.get("comfyui_version") or self.comfy_version)

    def _read(self, timeout_s: float) -> dict:
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(self._proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        if reader.is_alive() or not out or not out[0]:
            self.close()
            raise TimeoutError(f"no answer from the trace worker within {timeout_s:.0f} s")
        return json.loads(out[0])

    def warm(self) -> bool:
        """Start the worker now if it is not running (False when it cannot start)."""
        try:
            with self._worker_lock:
                if self._proc is None or self._proc.poll() is not None:
                    self._start()
                self._touch()
            return True
        except (OSError, ValueError, RuntimeError, TimeoutError) as exc:
            self.last_error = str(exc)
            return False

    def _touch(self) -> None:
        """(Re)arm the idle timer: the worker ends after idle_close_s without a request."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._idle_timer = threading.Timer(self.idle_close_s, self._close_if_idle)
        self._idle_timer.daemon = True
        self._idle_timer.start()

    def _close_if_idle(self) -> None:
        if self._worker_lock.acquire(blocking=False):  # a request in flight keeps it
            try:
                if self._proc is not None and self._proc.poll() is None:
                    self.stats["idle_closes"] += 1
                    self.close()
            finally:
                self._worker_lock.release()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def _ask(self, op: str, tensors: list, wait_s: float | None = None, **fields) -> dict | None:
        """One answer from the cache or the worker; None (and last_error) on any failure.

        ``wait_s``: how long the caller waits; past it the request goes on in the background (one
        at a time) and its answer is cached for the next estimate."""
        self.stats["requests"] += 1
        key = self.cache_key(op, tensors, **{k: v for k, v in fields.items() if k != "metadata"})
        now = time.monotonic()
        with self._lock:
            self._load_cache()
            if key in self._cache:
                self.stats["cache_hits"] += 1
                return dict(self._cache[key], cached=True)
            failed_at = self._failed_keys.get(key)
            recent_starts = [t for t in self._start_failures if now - t < FAIL_TTL_S]
            if (failed_at is not None and now - failed_at < FAIL_TTL_S) or len(recent_starts) >= 2:
                self.stats["skipped_failed"] += 1
                return None  # failed lately: the shipped table answers, without a retry on every estimate
            future = self._pending.get(key)
            if future is None:
                future = self._pool.submit(self._run, key, op, tensors, fields)
                self._pending[key] = future
        try:
            return future.result(timeout=self.timeout_s if wait_s is None else wait_s)
        except FuturesTimeout:
            self.last_error = f"still tracing after {wait_s:.0f} s; the shipped table is used until it is done"
            return None

    def _run(self, key: str, op: str, tensors: list, fields: dict) -> dict | None:
        try:
            with self._worker_lock:
                if self._proc is None or self._proc.poll() is not None:
                    try:
                        self._start()
                    except (OSError, ValueError, RuntimeError, TimeoutError):
                        with self._lock:
                            self._start_failures = self._start_failures[-4:] + [time.monotonic()]
                        raise
                self._proc.stdin.write(json.dumps({"op": op, "tensors": tensors, **fields}) + "\n")
                self._proc.stdin.flush()
                res = self._read(self.timeout_s)
                self._touch()
        except (OSError, ValueError, RuntimeError, TimeoutError) as exc:
            return self._failed(key, str(exc))
        if not res.get("ok"):
            return self._failed(key, res.get("error"))
        res.pop("ok", None)
        with self._lock:
            self._cache[key] = res
            self._pending.pop(key, None)
            self._save_cache()
        return dict(res, cached=False)

    def _failed(self, key: str, error: str | None) -> None:
        with self._lock:
            self.stats["failures"] += 1
            self.last_error = error
            self._pending.pop(key, None)
            self._failed_keys[key] = time.monotonic()
            if len(self._failed_keys) > MAX_CACHE_ENTRIES:
                self._failed_keys.pop(next(iter(self._failed_keys)))
        return None

    def detect(self, tensors: list, metadata: Mapping | None = None, wait_s: float | None = None) -> dict | None:
        return self._ask("detect", tensors, wait_s, metadata=_jsonable(dict(metadata or {})))

    def trace(self, tensors: list, latent: list, text_tokens: int, metadata: Mapping | None = None,
              wait_s: float | None = None) -> dict | None:
        return self._ask("trace", tensors, wait_s, latent=[int(v) for v in latent], text_tokens=int(text_tokens),
                         metadata=_jsonable(dict(metadata or {})))


    def trace_vae(self, tensors: list, shape: list, op: str = "decode", wait_s: float | None = None) -> dict | None:
        """The VAE's decode (latent ``shape``) or encode (pixels [B, 3, (T,) H, W]) working memory."""
        return self._ask("trace_vae", tensors, wait_s, shape=[int(v) for v in shape], vae_op=op)

    def trace_train(self, tensors: list, latent: list, text_tokens: int, metadata: Mapping | None = None,
                    wait_s: float | None = None, depth: int = 1) -> dict | None:
        return self._ask("trace_train", tensors, wait_s, latent=[int(v) for v in latent],
                         text_tokens=int(text_tokens), depth=int(depth), metadata=_jsonable(dict(metadata or {})))


def tensor_list(inventory) -> list:
    """[name, dtype, shape] of every tensor in an estimator Inventory (header data only)."""
    return [[t.name, t.dtype, list(t.shape)] for t in inventory.tensors.values()]


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--worker":
        sys.exit(worker_main(sys.argv[2]))
    print("usage: comfy_trace.py --worker COMFYUI_ROOT  (started by LiveTracer)", file=sys.stderr)
    sys.exit(2)
