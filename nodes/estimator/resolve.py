"""Model resolution and ComfyUI's cast rules: a workflow's model reference -> ModelInfo (file on disk,
exact -> catalogue, published -> name, inferred -> unknown), a checkpoint's parts, and the bytes ComfyUI puts
on the GPU for each (the dtype it loads at)."""
from __future__ import annotations

import os
from typing import Callable

from .catalogue import catalogue_info
from .device import Device
from .errors import ModelFileError
from .families import FAMILIES, describe
from .model_info import AUDIO_ENCODER, CHECKPOINT, CLIP_VISION, CONTROLNET, DIFFUSION, LORA, TEXT_ENCODER, UNKNOWN, VAE, ModelInfo
from .name_infer import infer_info
from .units import GiB
from .workload import ModelRef


# Quantized formats ComfyUI (or the pack that loads them: nunchaku, bitsandbytes) keeps at their
# stored size, dequantizing per layer: weights on the GPU = the file's bytes.
KEPT_QUANTIZED = ("scaled", "nvfp4", "int8", "int4", "nf4", "mxfp4", "fp4", "awq", "gptq", "svdq", "int8/fp4")


# UNETLoader weight_dtype options, and WanVideoWrapper's `quantization` options (1 byte/param too).
FP8_WIDGETS = {"fp8_e4m3fn", "fp8_e4m3fn_fast", "fp8_e5m2", "fp8_e4m3fn_scaled", "fp8_e4m3fn_scaled_fast",
               "fp8_e5m2_scaled"}


Resolver = Callable[[str, str], "str | None"]


# ----------------------------------------------------------------------------------------------
# Model resolution: file on disk (exact) -> catalogue (published numbers) -> unknown.
def ref_key(ref: ModelRef) -> str:
    return f"{ref.folder}/{ref.name}"


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
            return describe(path), None
        except ModelFileError as exc:
            info = catalogue_info(ref.name, ref.folder)
            if info is not None:
                return info, f"{ref.name}: {exc.problem}; using published figures instead"
            raise
    info = catalogue_info(ref.name, ref.folder)
    if info is not None:
        where = "not found in the model folders" if resolver is not None else "no model folder given"
        cite = info.notes[0] if info.notes else "catalogue"
        return info, f"{ref.name}: {where}; using the published size ({cite})"
    info, why = infer_info(ref.name, ref.role, ref.folder)
    if info is not None:  # source "inferred": report.py lists these names in one note
        return info, None
    return (
        ModelInfo(kind=UNKNOWN, family="unknown", label=ref.name, params=0, weights_bytes=0, source="missing"),
        f"{ref.name}: not found and not in the catalogue; its size is unknown ({why}; the estimate is a lower bound)",
    )


# Parameter split of all-in-one checkpoints known only from the catalogue (a file on disk is split
# exactly by its keys in families.py). Counts of the reference implementations: SD1.5 UNet
# 859,520,964 / CLIP-L text 123,060,480 / VAE 83,653,863; SDXL base UNet 2,567,463,684 /
# CLIP-L + OpenCLIP bigG text 123,060,480 + 694,659,841 / VAE 83,653,863.
CHECKPOINT_SPLITS = {
    "sd15": {"model": (859_520_964, DIFFUSION, "sd15", "SD 1.5 UNet"), "clip": (123_060_480, TEXT_ENCODER, "clip-l", "CLIP-L"),
             "vae": (83_653_863, VAE, "vae-kl4", "SD VAE")},
    "sdxl": {"model": (2_567_463_684, DIFFUSION, "sdxl", "SDXL UNet"),
             "clip": (817_720_321, TEXT_ENCODER, "clip-g", "CLIP-L + CLIP-G"),
             "vae": (83_653_863, VAE, "vae-kl4", "SDXL VAE")},
    # Comfy-Org's Flux all-in-one fp8 checkpoints: Flux transformer + T5-XXL + CLIP-L + the Flux VAE
    # (catalogue P_* counts: 11.9B, 4.76B + 0.123B, 83.8M)
    "flux1-dev": {"model": (11_901_408_320, DIFFUSION, "flux1-dev", "Flux.1 dev"),
                  "clip": (4_762_310_656 + 123_060_480, TEXT_ENCODER, "t5-xxl", "T5-XXL + CLIP-L"),
                  "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
    "flux1-schnell": {"model": (11_891_178_560, DIFFUSION, "flux1-schnell", "Flux.1 schnell"),
                      "clip": (4_762_310_656 + 123_060_480, TEXT_ENCODER, "t5-xxl", "T5-XXL + CLIP-L"),
                      "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
    # SD3.5 Large with its text encoders (sd3.5_large_fp8_scaled): MMDiT 8.1B (model card) + CLIP-L +
    # CLIP-G (OpenCLIP bigG text, 695M) + T5-XXL + the 16-channel VAE
    "sd3": {"model": (8_100_000_000, DIFFUSION, "sd3", "SD3.5 MMDiT"),
            "clip": (123_060_480 + 694_659_841 + 4_762_310_656, TEXT_ENCODER, "t5-xxl", "CLIP-L + CLIP-G + T5-XXL"),
            "vae": (83_819_683, VAE, "vae-kl16", "SD3 VAE")},
    # LTX-Video 2B checkpoints (ltx-video-2b-v0.9*.safetensors): the transformer (1,923,405,472 params:
    # ComfyUI 0.18.2's LTXV at full size, traced weight_bytes 3,846,810,944 at bf16) + the causal video
    # VAE (419,193,649 params, traced: data/vae_memory.json vae-ltxv); no text encoder (T5-XXL loads
    # separately). 4 bytes x both = 9.37 GB, the published size of v0.9 (stored in fp32).
    "ltxv": {"model": (1_923_405_472, DIFFUSION, "ltxv", "LTX-Video 2B transformer"),
             "vae": (419_193_649, VAE, "vae-ltxv", "LTX-Video VAE")},
    # LTX-2 19B checkpoints (ltx-2-19b-*.safetensors): LTXAV with its text connectors (19,585,135,392 params:
    # ComfyUI 0.18.2's LTXAV traced at full size, weight_bytes 39,170,270,784), the video VAE (VideoVAE
    # version 2, 1,246,913,522, data/vae_memory.json vae-ltx2), the audio VAE + vocoder (108,840,948,
    # vae-ltx2-audio) and the Gemma projection LTXAVTextEncoderLoader reads (text_encoders/lt.py:129:
    # Linear(3840*49, 3840) = 722,534,400). 2 bytes x the sum = 43.33 GB, the published 43.3 GB.
    "ltx2": {"model": (19_585_135_392, DIFFUSION, "ltx2", "LTX-2 19B transformer"),
             "vae": (1_246_913_522, VAE, "vae-ltx2", "LTX-2 video VAE"),
             "audio_vae": (108_840_948, VAE, "vae-ltx2-audio", "LTX-2 audio VAE"),
             "clip": (722_534_400, TEXT_ENCODER, "gemma3", "LTX-2 text projection")},
    # ACE-Step v1 3.5B (ace_step_v1_3.5b.safetensors, 7,698,728,878 B published): the transformer (3,322,438,608
    # params: ComfyUI 0.18.2's ACEStep traced, weight_bytes 6,644,877,216), the music DCAE + vocoder
    # (259,817,564: vae-ace traced) and the rest, the UMT5-base text encoder (the published size / 2 - both)
    "ace-step-v1": {"model": (3_322_438_608, DIFFUSION, "ace-step-v1", "ACE-Step v1 transformer"),
                    "clip": (7_698_728_878 // 2 - 3_322_438_608 - 259_817_564, TEXT_ENCODER, "t5-base",
                             "UMT5-base (ACE-Step)"),
                    "vae": (259_817_564, VAE, "vae-ace", "ACE-Step music DCAE + vocoder")},
    # Hunyuan3D 2.1 (hunyuan_3d_v2.1.safetensors): the DiT (3,050,762,768: Hunyuan3Dv2_1 traced, weight_bytes
    # 6,101,525,536), the shape VAE (327,614,977: vae-hunyuan3d traced) and its DINOv2 image encoder
    "hunyuan3d-2.1": {"model": (3_050_762_768, DIFFUSION, "hunyuan3d-2.1", "Hunyuan3D 2.1 DiT"),
                      "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                      # ImageOnlyCheckpointLoader's CLIP_VISION: DINOv2-L (facebook/dinov2-large, 304M params)
                      "clip_vision": (304_368_640, CLIP_VISION, "clip-vision", "DINOv2-L image encoder")},
    # Hunyuan3D 2.0 (hunyuan3d-dit-v2*_fp16): the DiT (Hunyuan3Dv2 traced: 1,113,276,432 params; multiview
    # 1,114,589,200), the shape VAE (327,614,977, vae-hunyuan3d) and DINOv2-giant: the rest of the 2-byte file
    "hunyuan3d-2.0": {"model": (1_113_276_432, DIFFUSION, "hunyuan3d-2.0", "Hunyuan3D 2.0 DiT"),
                      "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                      "clip_vision": (4_928_151_562 // 2 - 1_113_276_432 - 327_614_977, CLIP_VISION, "clip-vision",
                                      "DINOv2-giant image encoder")},
    "hunyuan3d-2.0-mv": {"model": (1_114_589_200, DIFFUSION, "hunyuan3d-2.0-mv", "Hunyuan3D 2.0 multiview DiT"),
                         "vae": (327_614_977, VAE, "vae-hunyuan3d", "Hunyuan3D shape VAE"),
                         "clip_vision": (4_928_474_972 // 2 - 1_114_589_200 - 327_614_977, CLIP_VISION, "clip-vision",
                                         "DINOv2-giant image encoder")},
    # LTX-2.3 22B (ltx-2.3-22b-*.safetensors): LTXAV with its connectors (21,005,004,544 params traced), the
    # video VAE (726,105,969), audio VAE + 48 kHz vocoder (181,785,594) and the dual text projection
    # (1,156,061,184); 2 bytes x the sum = 46.1 GB, the published ~46 GB bf16 file (5947 tensors)
    "ltx2.3": {"model": (21_005_004_544, DIFFUSION, "ltx2.3", "LTX-2.3 22B transformer"),
               "vae": (726_105_969, VAE, "vae-ltx2.3", "LTX-2.3 video VAE"),
               "audio_vae": (181_785_594, VAE, "vae-ltx2.3-audio", "LTX-2.3 audio VAE"),
               "clip": (1_156_061_184, TEXT_ENCODER, "gemma3", "LTX-2.3 text projection")},
    # ACE-Step 1.5 all-in-one (ace_step_1.5_turbo_aio): ACEStep15 (2,436,202,246 params traced), Qwen3 0.6B
    # (595,776,512) + the 1.7B song LM (1,854,243,840; ACEStep15.clip_target), the Oobleck VAE (168,695,426)
    "ace-step-1.5": {"model": (2_436_202_246, DIFFUSION, "ace-step-1.5", "ACE-Step 1.5 DiT"),
                     "clip": (595_776_512 + 1_854_243_840, TEXT_ENCODER, "qwen3", "Qwen3 0.6B + 1.7B LM (ACE-Step 1.5)"),
                     "vae": (168_695_426, VAE, "vae-ace15", "ACE-Step 1.5 audio VAE")},
    # Stable Video Diffusion (svd_xt, fp32): the UNet (1,524,627,120 traced), CLIP-ViT-H with projection
    # (632,076,800) and the temporal VAE (97,742,775); the published 9.56 GB holds ~136M more (not split out)
    "svd": {"model": (1_524_627_120, DIFFUSION, "svd", "SVD UNet"),
            "clip_vision": (632_076_800, CLIP_VISION, "clip-vision", "CLIP-ViT-H image encoder"),
            "vae": (97_742_775, VAE, "vae-svd", "SVD temporal VAE")},
    # Lumina 2 all-in-one (NetaYume): Lumina 2 DiT 2.6B + Gemma 2 2B (2.61B) + the Flux VAE
    "lumina2": {"model": (2_600_000_000, DIFFUSION, "lumina2", "Lumina 2 DiT"),
                "clip": (2_614_341_888, TEXT_ENCODER, "gemma", "Gemma 2 2B"),
                "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
}


PIXEL_SPACE_VAE = "vae-pixel"


FP8_MODEL_ONLY_SPLITS = {"ltx2", "ltx2.3"}  # Lightricks' ltx-2-19b-dev-fp8: transformer fp8, VAEs and projection bf16


def part_of(info: ModelInfo, ref: ModelRef) -> ModelInfo:
    if info.kind != CHECKPOINT or not ref.part:
        return info
    if ref.part in info.parts:
        return info.parts[ref.part]
    split = CHECKPOINT_SPLITS.get(info.family, {}).get(ref.part)
    if split is None:
        if ref.part == "clip_vision":  # an image encoder inside a checkpoint this table cannot split: unpriced
            return ModelInfo(kind=UNKNOWN, family="unknown", label=f"{info.label}: image encoder", params=0,
                             weights_bytes=0, source="missing")
        return info
    params, kind, family, label = split
    parts = CHECKPOINT_SPLITS[info.family]
    total = sum(p for p, *_ in parts.values())
    nbytes = int(info.weights_bytes * params / total)
    how = "catalogue checkpoint split by published parameter counts"
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
    arch = FAMILIES[family].arch if family in FAMILIES else {}
    return ModelInfo(kind=kind, family=family, label=f"{label} (from {info.label})", params=params,
                     weights_bytes=nbytes, dtype=dtype, quantization=quant, arch=arch,
                     evidence=(how,), source=info.source)


def vae_dtype_bytes(family: str, device: Device) -> int:
    """ComfyUI's vae_dtype (sd.py:672-677 / :810-817): the first working dtype the card runs well.
    KL VAEs (SD, SDXL, Flux, SD3) list [bf16, fp32]: fp32 without bf16 (Turing, Pascal). The video
    VAEs list fp16 too, so they stay 16-bit."""
    if not device.bf16 and family in ("vae-kl4", "vae-kl16", "vae-flux2"):
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
    if info.kind == VAE and vae_dtype_bytes(info.family, device) == 4:
        return params * 4, "fp32: no bf16 on this GPU (ComfyUI's vae_dtype for this VAE)"
    if info.kind in (VAE, CONTROLNET, CLIP_VISION):
        return params * 2, "16-bit"
    if info.kind == AUDIO_ENCODER:  # audio_encoders.py:11-13: the text encoder's device and dtype
        if info.family == "whisper-encoder" and params and stored > params * 2 * 1.05:
            return params * 2, ("fp16 (ComfyUI's text-encoder dtype); the encoder only: the file's Whisper decoder is "
                                "not loaded (load_sd strict=False)")
        return (params * 2 or stored), "fp16 (ComfyUI's text-encoder dtype, audio_encoders.py:11-13)"
    if info.kind == LORA:
        return stored, f"LoRA patch tensors ({dtype}) on the GPU while they are merged"
    return stored, "unknown architecture: bytes from the file"


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
