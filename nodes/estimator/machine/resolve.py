"""Model resolution and ComfyUI's cast rules: a workflow's model reference -> ModelInfo (file on disk,
exact -> catalogue, published -> name, inferred -> unknown), a checkpoint's parts, and the bytes ComfyUI puts
on the GPU for each (the dtype it loads at)."""
from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Callable

from ..models.published import catalogue_info, civitai_info
from .device import Device
from ..errors import ModelFileError
from ..families import FAMILIES, describe, registry
from ..families.registry import VAE_FAMILIES
from ..families._spec import (BRUSHNET, HELD_BY_PACK, HYPERLORA, INSTANTID, IPADAPTER, IPADAPTER_FLUX, LLLITE,
                              PHOTOMAKER, PULID)
from ..model_info import (AUDIO_ENCODER, CHECKPOINT, CLIP_VISION, CONTROLNET, DIFFUSION, LORA, TEXT_ENCODER, UNKNOWN,
                          VAE, ModelInfo)
from ..models.name_infer import infer_info
from ..units import GiB
from ..workload import ModelRef, ref_key  # noqa: F401  (ref_key: re-exported, its old home)


# Quantized formats ComfyUI (or the pack that loads them: nunchaku, bitsandbytes) keeps at their
# stored size, dequantizing per layer: weights on the GPU = the file's bytes.
KEPT_QUANTIZED = ("scaled", "nvfp4", "int8", "int4", "nf4", "mxfp4", "fp4", "awq", "gptq", "svdq", "int8/fp4")


# UNETLoader weight_dtype options, and WanVideoWrapper's `quantization` options (1 byte/param too).
PACK_FP32 = "fp32 (pack)"  # a ModelRef's weight_dtype where a node pack's loader keeps fp32 modules
PACK_16BIT = "16-bit (pack)"  # ... where it casts every weight to its bf16 / fp16 precision widget, whatever the file
FP8_WIDGETS = {"fp8_e4m3fn", "fp8_e4m3fn_fast", "fp8_e5m2", "fp8_e4m3fn_scaled", "fp8_e4m3fn_scaled_fast",
               "fp8_e5m2_scaled"}


Resolver = Callable[[str, str], "str | None"]


# ----------------------------------------------------------------------------------------------
# Model resolution: file on disk (exact) -> catalogue (published numbers) -> unknown.
def resolve_model(ref: ModelRef, resolver: Resolver | None) -> tuple[ModelInfo, str | None]:
    """ModelInfo for a workflow's model reference and a note on where it came from (None if exact, or
    inferred from the name: report.py lists those in one note)."""
    if ref.unset:
        return (ModelInfo(kind=UNKNOWN, family="unknown", label=ref.name, params=0, weights_bytes=0, source="unset"),
                None)
    if ref.role == "vae" and ref.name == "pixel_space":  # nodes.py VAELoader: PixelspaceConversionVAE, one scalar
        return (ModelInfo(kind=VAE, family=PIXEL_SPACE_VAE, label="pixel space (no VAE: decode is the identity)",
                          params=1, weights_bytes=4, dtype="F32", source="virtual",
                          evidence=("nodes.py VAELoader 'pixel_space' -> comfy/pixel_space_convert.py",)), None)
    path = None
    if resolver is not None:
        try:
            path = resolver(ref.folder, ref.name)
        except Exception:  # a resolver must never break an estimate
            path = None
    if path:
        try:
            info = describe(path)
            if ref.role in _HELD and info.kind == UNKNOWN:  # its tensors are what the pack's loader loads: that kind
                family, label, _ = _HELD[ref.role]
                info = replace(info, kind=ref.role, family=family, label=f"{label} (size from its header)")
            return info, None
        except ModelFileError as exc:
            info = catalogue_info(ref.name, ref.folder)
            if info is not None:
                return info, f"{ref.name}: {exc.problem}; using published figures instead"
            raise
    info = catalogue_info(ref.name, ref.folder)
    if info is None and ref.hint:  # the loader's family hint, read as a sub-folder (ZenID's InstantID ControlNet)
        info = catalogue_info(f"{ref.hint}/{ref.name}", ref.folder)
    if info is not None:
        where = "not found in the model folders" if resolver is not None else "no model folder given"
        cite = info.notes[0] if info.notes else "catalogue"
        return info, f"{ref.name}: {where}; using the published size ({cite})"
    info, why = infer_info(ref.name, ref.role, ref.folder, hint=ref.hint)
    if info is not None:  # source "inferred": report.py lists these names in one note
        return info, None
    info = civitai_info(ref.name, ref.role, ref.folder)  # a community fine-tune Civitai lists
    if info is not None:
        return info, (f"{ref.name}: {info.notes[0]}" if info.source == "catalogue" else None)
    return (
        ModelInfo(kind=UNKNOWN, family="unknown", label=ref.name, params=0, weights_bytes=0, source="missing"),
        f"{ref.name}: not found and not in the catalogue; its size is unknown ({why}; the estimate is a lower bound)",
    )


# Parameter split of all-in-one checkpoints known only from the catalogue (a file on disk is split
# exactly by its keys in families.py). Counts of the reference implementations: SD1.5 UNet
# 859,520,964 / CLIP-L text 123,060,480 / VAE 83,653,863; SDXL base UNet 2,567,463,684 /
# CLIP-L + OpenCLIP bigG text 123,060,480 + 694,659,841 / VAE 83,653,863.
CHECKPOINT_SPLITS = registry.CHECKPOINT_SPLITS  # each family module's CHECKPOINT_SPLITS


PIXEL_SPACE_VAE = "vae-pixel"


FP8_MODEL_ONLY_SPLITS = registry.FP8_MODEL_ONLY_SPLITS  # fp8 all-in-one files that quantize the diffusion model only


def checkpoint_parts(info: ModelInfo) -> tuple[dict, str]:
    """The parts of an all-in-one checkpoint of `info`'s family (CHECKPOINT_SPLITS), its "model" part the size of
    the family's (CHECKPOINT_MODEL_SIZES) that the file's own count is nearest (the name's "13b", a published size),
    and what chose it. An LTX-Video 13B checkpoint is not the 2B's split (issue 30: it was priced as the 2B)."""
    parts = dict(CHECKPOINT_SPLITS.get(info.family, {}))
    if "model" not in parts:
        return parts, ""
    others = sum(p for name, (p, *_) in parts.items() if name != "model")
    chosen = registry.nearest_model_size(info.family, info.params, others)
    if chosen is None or not chosen[3]:  # one size, or the split's own
        return parts, ""
    params, label, arch, source = chosen
    base = parts["model"]
    parts["model"] = (params, base[1], base[2], label, arch)
    return parts, f"; the {label} ({source}): the size nearest the file's {info.params / 1e9:.1f}B"


def part_of(info: ModelInfo, ref: ModelRef) -> ModelInfo:
    if info.kind != CHECKPOINT or not ref.part:
        return info
    if ref.part in info.parts:
        return info.parts[ref.part]
    parts, size_note = checkpoint_parts(info)
    split = parts.get(ref.part)
    if split is None:
        if ref.part == "clip_vision":  # an image encoder inside a checkpoint this table cannot split: unpriced
            return ModelInfo(kind=UNKNOWN, family="unknown", label=f"{info.label}: image encoder", params=0,
                             weights_bytes=0, source="missing")
        return info
    params, kind, family, label, *more = split
    total = sum(p for p, *_ in parts.values())
    nbytes = int(info.weights_bytes * params / total)
    how = "catalogue checkpoint split by published parameter counts" + size_note
    dtype, quant = info.dtype, info.quantization
    if info.family in FP8_MODEL_ONLY_SPLITS and (quant or "").startswith(("fp8", "scaled fp8")):
        # these fp8 all-in-one files quantize the diffusion model only: the other parts keep 2 bytes a
        # param and the model takes the rest of the file
        rest = sum(p for name, (p, *_r) in parts.items() if name != "model")
        if ref.part == "model":
            nbytes = max(params, info.weights_bytes - 2 * rest)
        else:
            nbytes, dtype, quant = 2 * params, "BF16", None
        how += "; in this fp8 file the diffusion model is fp8 and the other parts 16-bit"
    arch = {**(FAMILIES[family].arch if family in FAMILIES else {}), **(more[0] if more else {})}
    return ModelInfo(kind=kind, family=family, label=f"{label} (from {info.label})", params=params,
                     weights_bytes=nbytes, dtype=dtype, quantization=quant, arch=arch,
                     evidence=(how,), source=info.source)


# The kinds a node pack moves to the GPU in the patched model's dtype and keeps there (_spec.HELD_BY_PACK; the
# ModelRef role is the kind): the family a file of unknown header is, its label, and who holds it at what dtype.
# IPAdapterPlus.py ipadapter_execute: IPAdapter(...).to(device, unet dtype); InstantID.py ApplyInstantID:
# self.instantid.to(device, dtype); pulidflux.py apply_pulid_flux: eva_clip / pulid_flux .to(device, dtype).
_HELD = {
    IPADAPTER: ("ip-adapter", "IP-Adapter", "16-bit (the UNet's dtype): ComfyUI_IPAdapter_plus"),
    INSTANTID: ("instantid", "InstantID IP-Adapter", "16-bit (the UNet's dtype; the file is fp32): ComfyUI_InstantID"),
    PULID: ("pulid-flux", "PuLID Flux", "16-bit (the Flux model's dtype): ComfyUI-PuLID-Flux"),
    # ipadapter_flux.py InstantXFluxIPAdapterModel: .to(device, dtype=torch.float16) when the loader's provider is cuda
    IPADAPTER_FLUX: ("ip-adapter-flux-instantx", "InstantX Flux IP-Adapter", "fp16 (its loader's own dtype): "
                     "ComfyUI-IPAdapter-Flux"),
    # photomaker.py PhotoMakerEncodePlus: photomaker.to(load_device), the ID encoder in the text-encoder dtype, never
    # moved back; PhotoMakerLoraLoaderPlus puts the file's LoRA on the model: the whole fp16 file on the card
    PHOTOMAKER: ("photomaker", "PhotoMaker ID encoder + LoRA", "16-bit (the file's dtype; the ID encoder in the "
                 "text-encoder dtype): ComfyUI-PhotoMaker-Plus"),
    # brushnet_nodes.py BrushNetLoader: load_checkpoint_and_dispatch(device_map="sequential", dtype=its widget)
    BRUSHNET: ("brushnet-sd15", "BrushNet", "its loader's dtype widget: ComfyUI-BrushNet"),
    # hyperlora/nodes.py HyperLoRALoaderNode: image encoder, modules, resampler, ID projector .to(device, dtype)
    HYPERLORA: ("hyperlora-sdxl", "HyperLoRA", "its loader's dtype widget: ComfyUI-HyperLoRA"),
    # node_control_net_lllite.py: LLLiteModule(...) per module, set as the model's attn1 / attn2 patch, which ComfyUI
    # moves with the model (model_patches_to its device and dtype)
    LLLITE: ("lllite-sdxl", "ControlNet-LLLite", "16-bit (the model's dtype, as ComfyUI moves its patches): "
             "ControlNet-LLLite-ComfyUI"),
}
# a held kind's loader dtype widget (ModelRef.weight_dtype) -> bytes a parameter; 16 bit where it says none
_HELD_BYTES = {"float32": 4, "float64": 8}
assert set(_HELD) == set(HELD_BY_PACK)


def vae_dtype_bytes(family: str, device: Device) -> int:
    """ComfyUI's vae_dtype (sd.py:672-677 / :810-817): the first working dtype the card runs well.
    KL VAEs (SD, SDXL, Flux, SD3) list [bf16, fp32]: fp32 without bf16 (Turing, Pascal). The video
    VAEs list fp16 too, so they stay 16-bit. A family whose arch gives `vae_dtype_bytes` has one working
    dtype only (e.g. [float32]): that size on every card."""
    pinned = FAMILIES[family].arch.get("vae_dtype_bytes") if family in FAMILIES else None
    if pinned:
        return int(pinned)
    if not device.bf16 and getattr(VAE_FAMILIES.get(family), "kl", False):
        return 4
    return 2


# ----------------------------------------------------------------------------------------------
# Loaded bytes: what ComfyUI puts on the GPU for a file.
def loaded_weights(info: ModelInfo, ref: ModelRef, device: Device) -> tuple[int, str]:
    """(bytes on the GPU, assumption) following ComfyUI's cast rules."""
    q = info.quantization or ""
    stored = info.weights_bytes
    params = info.params
    dtype = info.dtype or "?"
    if info.source in ("missing", "unset"):
        return 0, "size unknown: not counted (the estimate is a lower bound)"
    if ref.role == "model_patch":
        return _model_patch_bytes(info, ref, device)
    if ref.weight_dtype == PACK_16BIT and params and info.kind in (DIFFUSION, TEXT_ENCODER):
        return params * 2, "16-bit: the node pack casts the weights to its precision widget, whatever the file"
    if ref.weight_dtype == PACK_FP32 and params and info.kind in (DIFFUSION, TEXT_ENCODER, CLIP_VISION):
        return params * 4, "fp32: the node pack builds fp32 modules and copies the file into them"
    if info.kind == DIFFUSION:
        if ref.weight_dtype in FP8_WIDGETS:
            return params, f"weight_dtype {ref.weight_dtype}: 1 byte/param (widget overrides the file's {dtype})"
        if q.startswith("gguf"):
            return stored, f"GGUF {dtype} kept quantized ({stored / max(params, 1) * 8:.1f} bits/param)"
        if q.startswith(KEPT_QUANTIZED):
            return stored, f"{q} file kept quantized"
        if q.startswith("fp8"):
            if device.fp8_compute:
                return stored, f"{q} kept (this GPU computes in fp8)"
            max_weights = device.total_bytes * 0.88 - (0.8 * GiB + device.reserve_bytes)
            if params * 2 > max_weights:
                return stored, f"{q} kept: the 16-bit copy would not fit (model_management.unet_dtype)"
            return params * 2, f"{q} file upcast to 16 bit: no fp8 compute on this GPU and the 16-bit copy fits"
        return params * 2, f"16-bit ({'bf16/fp16' if dtype in ('F32', 'F64') else dtype})"
    if info.kind == TEXT_ENCODER and info.family == "chatglm3-6b" and params:
        # ComfyUI-Kolors-MZ mz_kolors_core.py MZ_ChatGLM3Loader_call: text_encoder.quantize(8 / 4) when the file's
        # name says 8bit / 4bit (the four Linear weights of each layer), else the file's fp16
        from ..families.kolors import chatglm3_loaded_bytes  # noqa: PLC0415
        low = ref.name.lower()
        bits = 8 if "8bit" in low else 4 if "4bit" in low else 16
        return chatglm3_loaded_bytes(bits), ("fp16" if bits == 16 else
                                             f"{bits}-bit Linear weights (ChatGLM quantize, the name's {bits}bit), "
                                             "embeddings and output layer fp16")
    if info.kind == TEXT_ENCODER:
        if ref.weight_dtype in FP8_WIDGETS:  # WanVideoWrapper's T5 loader `quantization`
            return params, f"quantization {ref.weight_dtype} on the loader: 1 byte/param"
        if q.startswith("gguf"):
            return stored, f"GGUF {dtype} kept quantized"
        if ("fp8" in q) and info.family in ("t5-xxl", "umt5-xxl") and info.source == "catalogue":
            # a published file size counts the encoder.embed_tokens copy ComfyUI does not load
            # (text_encoders/t5.py:234): the loaded weights are the parameters at 1 byte
            return min(stored, params), f"{q} kept (T5 keeps the file's dtype): {params / 1e9:.2f}B params × 1 byte"
        if q.startswith(KEPT_QUANTIZED):
            return stored, f"{q} kept"
        if q.startswith("fp8") and info.family in ("t5-xxl", "umt5-xxl"):
            return stored, f"{q} kept (T5 keeps the file's dtype)"
        return params * 2, "fp16 (ComfyUI's text-encoder dtype)"
    if info.kind == VAE and q.startswith(KEPT_QUANTIZED) and info.family in FAMILIES \
            and FAMILIES[info.family].arch.get("quantized_ops"):  # sd.py builds it with mixed_precision_ops
        return stored, f"{q} file kept quantized"
    if info.kind == VAE and vae_dtype_bytes(info.family, device) == 4:
        if FAMILIES[info.family].arch.get("vae_dtype_bytes") if info.family in FAMILIES else None:
            return params * 4, "fp32: the VAE's only working dtype in ComfyUI"
        return params * 4, "fp32: no bf16 on this GPU (ComfyUI's vae_dtype for this VAE)"
    if info.kind == CONTROLNET and q.startswith("gguf"):
        return stored, f"GGUF {dtype} kept quantized"
    if info.kind == CONTROLNET and ref.weight_dtype in FP8_WIDGETS and params:  # an add-on cast with its model
        return params, f"{ref.weight_dtype} with the model it joins: 1 byte/param"
    if info.kind == CONTROLNET and q.startswith("fp8") and params:
        # controlnet.py controlnet_config / load_controlnet_state_dict call unet_dtype(model_params=-1, weight_dtype=the
        # file's), and model_params -1 reads as 1e21, so an fp8 file always keeps its fp8 dtype (0.33.0 controlnet.py:
        # 489-497, :829-834; model_management.py:1106-1134; the same in 0.8.0 and 0.18.2)
        return params, f"{q} file kept in fp8 (ComfyUI's ControlNet loader keeps an fp8 file's dtype): 1 byte/param"
    if info.kind in (VAE, CONTROLNET, CLIP_VISION):
        return params * 2, "16-bit"
    if info.kind == AUDIO_ENCODER and ref.weight_dtype == PACK_FP32 and params:
        return params * 4, "fp32: the node pack's precision widget"
    if info.kind == AUDIO_ENCODER:  # audio_encoders.py:11-13: the text encoder's device and dtype
        if info.family == "whisper-encoder" and params and stored > params * 2 * 1.05:
            return params * 2, ("fp16 (ComfyUI's text-encoder dtype); the encoder only: the file's Whisper decoder is "
                                "not loaded (load_sd strict=False)")
        return (params * 2 or stored), "fp16 (ComfyUI's text-encoder dtype, audio_encoders.py:11-13)"
    if info.kind == LORA:
        return stored, f"LoRA patch tensors ({dtype}) on the GPU while they are merged"
    if info.kind in _HELD and params:  # the apply node moves it to the GPU in the model's dtype (see _HELD)
        held_by = _HELD_FAMILY.get(info.family) or _HELD[info.kind][2]
        per = _HELD_BYTES.get(ref.weight_dtype or "", 2)
        return params * per, (f"{held_by}{f' ({ref.weight_dtype})' if per != 2 else ''} keeps it on the GPU, outside "
                              "ComfyUI's model management, while the patched model samples")
    return stored, "unknown architecture: bytes from the file"


# a held family whose pack is not its kind's usual one: who holds it, at what dtype
_HELD_FAMILY = {"ip-adapter-flux-xlabs": "bf16 (ApplyFluxIPAdapter's processor.to(device, bfloat16)): x-flux-comfyui"}

_MULTITALK = re.compile(r"infinite[_-]?talk|multi[_-]?talk")


def _model_patch_bytes(info: ModelInfo, ref: ModelRef, device: Device) -> tuple[int, str]:
    """ModelPatchLoader (comfy_extras/nodes_model_patch.py load_model_patch, 0.18.2 / 0.33.0): each patch model is
    built with dtype = comfy.utils.weight_dtype(sd), the file's, and manual_cast ops, so it keeps the file's bytes;
    but MultiTalkModelPatch (InfiniteTalk / MultiTalk) is built with no dtype, fp32, and load_state_dict(sd,
    assign=model_patcher.is_dynamic()) copies a 16-bit file into those fp32 modules unless Dynamic VRAM assigns the
    file's own tensors (0.18.2 :262-271, :536-548)."""
    stored, params = info.weights_bytes, info.params
    if _MULTITALK.search(ref.name.lower()) and params and stored < params * 3 and device.memory_mode != "dynamic":
        return params * 4, ("fp32: ModelPatchLoader builds the InfiniteTalk / MultiTalk patch with no dtype and copies "
                            "the file into it (Dynamic VRAM would keep the file's dtype)")
    return stored, "the file's dtype: ModelPatchLoader builds the patch in it (manual_cast)"


def folder_resolver(models_dir: str | os.PathLike) -> Resolver:
    """Resolve (folder, name) inside a ComfyUI models/ tree, with ComfyUI's legacy folder aliases.

    Names are normalised as folder_paths.get_full_path does (no escaping the folder with '..').
    """
    root = os.path.realpath(os.fspath(models_dir))
    aliases = {
        "diffusion_models": ("diffusion_models", "unet"), "unet": ("unet", "diffusion_models"),
        "text_encoders": ("text_encoders", "clip"), "clip": ("clip", "text_encoders"),
        "controlnet": ("controlnet", "t2i_adapter"),
    }

    def resolve(folder: str, name: str) -> str | None:
        rel = os.path.relpath(os.path.join("/", name.replace("\\", "/")), "/")
        for sub in aliases.get(folder, (folder,)):
            path = os.path.join(root, sub, rel)
            if os.path.isfile(path):
                return path
        return None

    return resolve
