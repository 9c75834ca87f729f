"""Models in ComfyUI: file names resolved only through its model folders, what is loaded, unloading, VAEs."""
from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass

from .base import _folder_paths, _mm
from .memory import available_bytes
from ..estimator.families.registry import VAE_FAMILIES


# ----------------------------------------------------------------------------------------------
# Model paths: names from a workflow are resolved ONLY through ComfyUI's model folders.
def resolve_model_path(folder: str, name: str) -> str | None:
    """Full path of a model named in a workflow, or None when it is not in ComfyUI's folders."""
    fp = _folder_paths()
    try:
        path = fp.get_full_path(folder, name)
    except Exception:
        return None
    return path if path and os.path.isfile(path) else None


def model_resolver():
    """A callable (folder, name) -> path | None for the estimator."""
    return resolve_model_path


@dataclass(frozen=True)
class LoadedModelInfo:
    """One entry of ``comfy.model_management.current_loaded_models`` (newest first)."""

    key: str  # stable while the model stays loaded: id of its ModelPatcher, hex
    index: int  # position in current_loaded_models when the snapshot was taken
    name: str  # model class, e.g. "Flux", "AutoencodingEngine", "FluxClipModel"
    file: str | None  # base name of the weights file when ComfyUI recorded it
    type: str  # "diffusion" | "text_encoder" | "vae" | "controlnet" | "clip_vision" | "upscale" | "other"
    device: str  # load device, e.g. "cuda:0" / "cpu"
    device_type: str
    size: int  # bytes of all weights at the loaded dtype (model_memory)
    loaded: int  # bytes on the load device (model_loaded_memory)
    currently_used: bool
    dynamic: bool  # streamed by comfy-aimdo


def _model_type(model) -> str:
    cls = type(model)
    module = (cls.__module__ or "").lower()
    try:
        import comfy.model_base  # noqa: PLC0415

        if isinstance(model, comfy.model_base.BaseModel):
            return "diffusion"
    except Exception:
        pass
    if "clip_vision" in module:
        return "clip_vision"
    if "sd1_clip" in module or "text_encoders" in module or "sdxl_clip" in module or "clip" in cls.__name__.lower():
        return "text_encoder"
    if "vae" in module or "autoencoder" in module or "taesd" in module or "vae" in cls.__name__.lower():
        return "vae"
    if "cldm" in module or "controlnet" in module or "t2i_adapter" in module:
        return "controlnet"
    if "spandrel" in module or "upscale" in module:
        return "upscale"
    return "other"


def _model_file(patcher, cache: dict) -> str | None:
    """The weights file ComfyUI loaded this model from, when it kept a record (exact, else None).

    - 0.13+: loaders set ``patcher.cached_patcher_init = (fn, (path_or_paths, ...))``.
    - Dynamic VRAM: tensors are slices of the file (``storage._comfy_tensor_file_slice.file_ref``).
    0.8.0 keeps neither, so its models are shown by class name only.
    """
    key = id(patcher)
    if key in cache:
        return cache[key]
    found = None
    init = getattr(patcher, "cached_patcher_init", None)
    try:
        if init and len(init) > 1 and init[1]:
            first = init[1][0]
            paths = first if isinstance(first, (list, tuple)) else [first]
            names = [os.path.basename(str(p)) for p in paths if isinstance(p, (str, os.PathLike))]
            found = " + ".join(names) or None
    except Exception:
        found = None
    if found is None:
        try:
            param = next(iter(patcher.model.parameters()))
            info = getattr(param.untyped_storage(), "_comfy_tensor_file_slice", None)
            name = getattr(getattr(info, "file_ref", None), "name", None)
            if isinstance(name, str):
                found = os.path.basename(name)
        except Exception:
            found = None
    cache[key] = found
    return found


_MODEL_FILE_CACHE: dict = {}


def loaded_models() -> list[LoadedModelInfo]:
    """Snapshot of ComfyUI's loaded models; safe to call from any thread (reads only)."""
    mm = _mm()
    out: list[LoadedModelInfo] = []
    live = set()
    for index, lm in enumerate(list(mm.current_loaded_models)):
        try:
            patcher = lm.model
            if patcher is None:
                continue
            model = patcher.model
            size = int(lm.model_memory())
            loaded = int(lm.model_loaded_memory())
            dynamic = bool(getattr(patcher, "is_dynamic", lambda: False)())
            live.add(id(patcher))
            dev = lm.device
            out.append(LoadedModelInfo(
                key=f"{id(patcher):x}", index=index, name=type(model).__name__.rstrip("_"),
                file=_model_file(patcher, _MODEL_FILE_CACHE), type=_model_type(model), device=str(dev),
                device_type=getattr(dev, "type", str(dev)), size=size, loaded=min(loaded, size) if size else loaded,
                currently_used=bool(lm.currently_used), dynamic=dynamic,
            ))
        except Exception:
            continue  # a model being torn down on the worker thread right now
    for stale in [k for k in _MODEL_FILE_CACHE if k not in live]:
        _MODEL_FILE_CACHE.pop(stale, None)
    return out


def unload_loaded_model(key: str) -> LoadedModelInfo | None:
    """Unload one model through ComfyUI's own ``free_memory`` (every other model kept loaded).

    Returns what was unloaded, or None when no loaded model has that key. The CALLER must make
    sure no prompt is running (free_memory belongs to the prompt worker: main.py prompt_worker).
    """
    mm = _mm()
    snapshot = list(mm.current_loaded_models)
    target = None
    for lm in snapshot:
        patcher = lm.model
        if patcher is not None and f"{id(patcher):x}" == key:
            target = lm
            break
    if target is None:
        return None
    info = next((m for m in loaded_models() if m.key == key), None)
    others = [lm for lm in snapshot if lm is not target]
    mm.free_memory(1e30, target.device, keep_loaded=others)
    if target in mm.current_loaded_models and target.model is not None:
        # free_memory skips models it considers dead or in use elsewhere; detach it the same way it would.
        if target.model_unload():
            mm.current_loaded_models.remove(target)
            mm.soft_empty_cache()
    return info


# ----------------------------------------------------------------------------------------------
# A loaded MODEL, described as plain data (the Wan planner's MODEL input)
def describe_loaded_model(model) -> dict:
    """What a MODEL (ModelPatcher) or BaseModel is, as plain data; never loads or moves weights.

    Keys: class_name (``model.model`` class: WAN21, WAN22, Flux, ...), image_model / model_type
    (ComfyUI's detected unet_config), dim, num_layers, in_dim, out_dim, ffn_dim, num_heads,
    patch_size (read from ``model.model.diffusion_model``, else the unet_config), params (logical
    parameter count), weights_bytes (bytes as held: quantized bytes for GGUF / fp8), dtype (the most
    common parameter dtype, e.g. "bfloat16", "float8_e4m3fn"), gguf (ComfyUI-GGUF GGMLTensor
    weights, whose class carries ``tensor_type`` / ``tensor_shape``: ComfyUI-GGUF ops.py),
    gguf_type (most common quantized type, e.g. "Q4_K"), largest_tensor_params, manual_cast_dtype.
    """
    base = getattr(model, "model", model)  # ModelPatcher -> BaseModel
    dm = getattr(base, "diffusion_model", None)
    config = getattr(getattr(base, "model_config", None), "unet_config", None) or {}
    out: dict = {"class_name": type(base).__name__, "image_model": config.get("image_model"),
                 "model_type": config.get("model_type")}
    for key in ("dim", "num_layers", "in_dim", "out_dim", "ffn_dim", "num_heads", "patch_size"):
        value = getattr(dm, key, None) if dm is not None else None
        if value is None:
            value = config.get(key)
        if key == "num_layers" and value is None and dm is not None and hasattr(dm, "blocks"):
            value = len(dm.blocks)
        if key == "ffn_dim" and value is None and dm is not None and hasattr(dm, "blocks") and len(dm.blocks):
            value = getattr(dm.blocks[0], "ffn_dim", None)
        out[key] = list(value) if isinstance(value, tuple) else value
    params = nbytes = largest = 0
    dtypes: Counter = Counter()
    ggml: Counter = Counter()
    module = dm if dm is not None else base
    tensors = list(module.parameters()) if hasattr(module, "parameters") else []
    for t in tensors:
        shape = getattr(t, "tensor_shape", None)  # GGMLTensor: logical shape; its storage is raw bytes
        numel = int(math.prod(shape)) if shape is not None else int(t.numel())
        params += numel
        nbytes += int(t.numel()) * int(t.element_size())
        largest = max(largest, numel)
        ttype = getattr(t, "tensor_type", None)
        if shape is not None and ttype is not None:
            name = getattr(ttype, "name", str(ttype))
            if name not in ("F16", "F32", "BF16"):
                ggml[name] += numel
            dtypes[name.lower()] += numel
        else:
            dtypes[str(t.dtype).replace("torch.", "")] += numel
    size_fn = getattr(model, "model_size", None)
    if callable(size_fn) and not ggml:
        try:
            nbytes = int(size_fn()) or nbytes  # ModelPatcher's own count at the loaded dtype (includes buffers)
        except Exception:
            pass
    cast = getattr(base, "manual_cast_dtype", None)
    out.update({
        "params": params, "weights_bytes": nbytes, "largest_tensor_params": largest,
        "dtype": dtypes.most_common(1)[0][0] if dtypes else None,
        "gguf": bool(ggml), "gguf_type": ggml.most_common(1)[0][0] if ggml else None,
        "manual_cast_dtype": str(cast).replace("torch.", "") if cast is not None else None,
    })
    return out


# ----------------------------------------------------------------------------------------------
# VAE (added for nodes/vae_decode.py: VAE Decode / Encode (Auto Tiled))
@dataclass(frozen=True)
class VaeInfo:
    """What the VAE planner needs to know about a loaded comfy.sd.VAE."""

    family: str | None  # estimator family id ("vae-kl16", "vae-wan2.1", ...), None when not traced
    class_name: str  # module.Class of first_stage_model
    latent_channels: int
    latent_dim: int  # 2 images, 3 video (1 audio)
    spatial: int  # spacial_compression_decode()
    temporal: int | None  # temporal_compression_decode()
    dtype_bytes: int  # vae_dtype size
    device: str  # "cuda:0", "cpu"
    device_type: str
    weights_bytes: int


def vae_family_of(vae) -> str | None:
    """The estimator's family id for a comfy.sd.VAE, from what ComfyUI built (comfy/sd.py VAE branches): the
    first_stage_model class, latent channels and compression ratios, matched against each VAE family's
    `live` description (families/_spec.py LiveVae, in the family's own module)."""
    fsm = getattr(vae, "first_stage_model", None)
    if fsm is None:
        return None
    cls = type(fsm)
    name = f"{cls.__module__}.{cls.__name__}"
    ch = int(getattr(vae, "latent_channels", 0))
    try:
        spatial = int(vae.spacial_compression_decode())
        temporal = vae.temporal_compression_decode()
    except Exception:
        return None
    dim = int(getattr(vae, "latent_dim", 2))
    dec = type(getattr(fsm, "decoder", None))
    plain = (dec.__module__ == "comfy.ldm.modules.diffusionmodules.model" and dec.__name__ == "Decoder"
             and getattr(fsm, "bn", None) is None)
    for fam in VAE_FAMILIES.values():
        live = fam.live
        if live is None or spatial != fam.spatial or (live.check_channels and ch != fam.latent_channels):
            continue
        if not any(name == c or (c.startswith(".") and name.endswith(c)) or ("." not in c and cls.__name__ == c)
                   for c in live.classes):
            continue
        if live.plain_decoder and not plain:
            continue
        if live.latent_dim is not None and (dim != live.latent_dim or (fam.temporal or None) != (temporal or None)):
            continue
        return fam.id
    return None

def vae_info(vae) -> VaeInfo:
    fsm = vae.first_stage_model
    cls = type(fsm)
    dtype = getattr(vae, "vae_dtype", None)
    try:
        dtype_bytes = int(dtype.itemsize)
    except Exception:
        dtype_bytes = int(_mm().dtype_size(dtype)) if dtype is not None else 4
    try:
        temporal = vae.temporal_compression_decode()
    except Exception:
        temporal = None
    dev = getattr(vae, "device", None)
    try:
        weights = int(vae.model_size())
    except Exception:
        weights = 0
    return VaeInfo(
        family=vae_family_of(vae), class_name=f"{cls.__module__}.{cls.__name__}",
        latent_channels=int(getattr(vae, "latent_channels", 0)), latent_dim=int(getattr(vae, "latent_dim", 2)),
        spatial=int(vae.spacial_compression_decode()), temporal=None if temporal is None else int(temporal),
        dtype_bytes=dtype_bytes, device=str(dev), device_type=getattr(dev, "type", str(dev)), weights_bytes=weights,
    )


def comfy_vae_estimate(vae, shape, op: str = "decode") -> int:
    """ComfyUI's own memory_used_decode / memory_used_encode for a tensor shape (its heuristic)."""
    fn = vae.memory_used_decode if op == "decode" else vae.memory_used_encode
    return int(fn(tuple(shape), vae.vae_dtype))


def prepare_vae(vae, memory_required: int) -> int:
    """Load the VAE the way VAE.decode does, asking ComfyUI to unload other models until
    `memory_required` bytes are free besides it; returns the free bytes on the VAE's device after.
    (0.18+ with Dynamic VRAM: the patcher's get_free_memory also counts evictable weights.)"""
    mm = _mm()
    mm.load_models_gpu([vae.patcher], memory_required=int(memory_required),
                       force_full_load=bool(getattr(vae, "disable_offload", False)))
    dev = vae.device
    if getattr(dev, "type", str(dev)) == "cpu":
        return available_bytes(dev)
    patcher_free = getattr(vae.patcher, "get_free_memory", None)
    if callable(patcher_free):
        try:
            return int(patcher_free(dev))
        except Exception:
            pass
    return int(mm.get_free_memory(dev))
