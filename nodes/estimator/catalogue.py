"""Well-known public model files by file name: what they are and how big they are as published.

Used when a workflow names a file that is not on this machine (or before it is downloaded); a name
in neither table goes to name_infer.py. ``ENTRIES``: the core Flux/Wan/Qwen/SD files with computed
parameter counts; ``PUBLISHED``: one line per further file named by the official templates and the
community corpus (tests/workflows/community), with whose listing gave its size; after those, the
generated table data/template_models.json (template_info): every file an official template's notes
give a size for (bench/gen_template_models.py).
Bytes are decimal as published (1 GB = 10^9 bytes): the Hugging Face "Files and versions"
listing (rounded to 3 significant digits there), the exact LFS pointer size where one was found,
or params x bytes-per-param where only the parameter count is known. Every entry says which in
``source``. Parameter counts marked "computed" come from the full-size architecture (key names and
shapes of ComfyUI's model code, the same shapes tests/helpers_models.py builds); they reproduce
the published file sizes to within the header (e.g. Flux.1 dev 11,901,408,320 x 2 bytes =
23.80 GB against the listed 23.8 GB).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from .families import FAMILIES
from .families.adapters import P_CLIP_VISION_H
from .families.flux1 import P_AE, P_FLUX1_CONTROL, P_FLUX1_DEV, P_FLUX1_FILL, P_FLUX1_SCHNELL, P_FLUX_CN_5_0, P_FLUX_CN_6_0, P_XLABS_CN
from .families.flux2 import P_FLUX2
from .families.hidream import P_HIDREAM
from .families.hunyuan_video import P_HUNYUAN_VIDEO
from .families.qwen_image import P_QWEN_IMAGE
from .families.stable_diffusion import P_SD15, P_SDXL
from .families.text_encoders import P_CLIP_G, P_CLIP_L, P_LLAMA31_8B, P_MISTRAL_FLUX2, P_QWEN25_VL_7B, P_QWEN3_4B, P_T5XXL, P_UMT5XXL
from .families.wan import P_WAN13, P_WAN14_FLF, P_WAN14_I2V, P_WAN14_T2V, P_WAN22_I2V_EXTRA, P_WAN5
from .model_info import CHECKPOINT, DIFFUSION, TEXT_ENCODER, VAE, ModelInfo

GB = 10**9
MB = 10**6


_HF = "Hugging Face file listing"


@dataclass(frozen=True)
class CatalogueEntry:
    name: str  # file name as published
    family: str
    params: int
    bytes: int
    dtype: str  # main stored dtype (safetensors / GGUF type name)
    source: str  # where params and bytes come from
    quantization: str | None = None
    kind: str | None = None  # default: the family's kind
    folder: str | None = None  # ComfyUI models/ folder it is meant for (disambiguates equal names)
    variant: str | None = None
    label: str | None = None  # default: the family's label (needed for family "unknown")


def _e(name, family, params, nbytes, dtype, source, **kw) -> CatalogueEntry:
    return CatalogueEntry(name, family, int(params), int(nbytes), dtype, source, **kw)


def _gguf_flux(quant: str, size_gb: float) -> CatalogueEntry:
    return _e(f"flux1-dev-{quant}.gguf", "flux1-dev", P_FLUX1_DEV, size_gb * GB, quant,
              f"city96/FLUX.1-dev-gguf: {_HF} {size_gb} GB; params computed", quantization=f"gguf {quant}",
              folder="diffusion_models")


def _gguf_wan(quant: str, size_gb: float) -> CatalogueEntry:
    return _e(f"wan2.1-t2v-14b-{quant}.gguf", "wan2.1-14b", P_WAN14_T2V, size_gb * GB, quant,
              f"city96/Wan2.1-T2V-14B-gguf: {_HF} {size_gb} GB; params computed",
              quantization=None if quant in ("F16", "BF16") else f"gguf {quant}", folder="diffusion_models",
              variant="t2v")


_WAN_REPO = "Comfy-Org/Wan_2.1_ComfyUI_repackaged split_files"
_WAN22_REPO = "Comfy-Org/Wan_2.2_ComfyUI_Repackaged split_files"

ENTRIES: tuple[CatalogueEntry, ...] = (
    # --- Flux.1 -------------------------------------------------------------------------------
    _e("flux1-dev.safetensors", "flux1-dev", P_FLUX1_DEV, 23.8 * GB, "BF16",
       f"black-forest-labs/FLUX.1-dev: {_HF} 23.8 GB (BF16); 11.9B params computed, the model card says 12B",
       folder="diffusion_models"),
    _e("flux1-dev.sft", "flux1-dev", P_FLUX1_DEV, 23.8 * GB, "BF16",
       f"same file as flux1-dev.safetensors under its early .sft name ({_HF} 23.8 GB)", folder="diffusion_models"),
    _e("flux1-schnell.safetensors", "flux1-schnell", P_FLUX1_SCHNELL, P_FLUX1_SCHNELL * 2, "BF16",
       "params x 2 bytes (BF16): 11.89B params computed (dev without guidance_in)", folder="diffusion_models"),
    _e("flux1-dev-fp8.safetensors", "flux1-dev", P_FLUX1_DEV, 11.9 * GB, "F8_E4M3",
       f"Kijai/flux-fp8 (diffusion model only): {_HF} 11.9 GB", quantization="fp8_e4m3fn",
       folder="diffusion_models"),
    _e("flux1-dev-fp8.safetensors", "flux1-dev", P_FLUX1_DEV + P_CLIP_L + P_T5XXL + P_AE, 17.2 * GB, "F8_E4M3",
       f"Comfy-Org/flux1-dev all-in-one checkpoint (model + CLIP-L + T5-XXL fp8 + VAE): {_HF} 17.2 GB",
       quantization="fp8_e4m3fn", kind=CHECKPOINT, folder="checkpoints"),
    _gguf_flux("Q8_0", 12.7), _gguf_flux("Q6_K", 9.86), _gguf_flux("Q5_K_S", 8.29), _gguf_flux("Q4_K_S", 6.81),
    _gguf_flux("Q4_0", 6.79), _gguf_flux("Q3_K_S", 5.23), _gguf_flux("Q2_K", 4.03),
    _e("ae.safetensors", "vae-kl16", P_AE, 335 * MB, "F32",
       f"black-forest-labs/FLUX.1-dev ae.safetensors: {_HF} 335 MB (F32); params computed", folder="vae"),
    _e("ae.sft", "vae-kl16", P_AE, 335 * MB, "F32", f"ae.safetensors under its .sft name ({_HF} 335 MB)",
       folder="vae"),
    # --- Flux text encoders (comfyanonymous/flux_text_encoders) --------------------------------
    _e("t5xxl_fp16.safetensors", "t5-xxl", P_T5XXL, 9.79 * GB, "F16",
       f"comfyanonymous/flux_text_encoders: {_HF} 9.79 GB; 4.76B params computed (the file also carries"
       " a tied copy of the 32128 x 4096 embedding, hence 9.79 rather than 9.52 GB)", folder="text_encoders"),
    _e("t5xxl_fp8_e4m3fn.safetensors", "t5-xxl", P_T5XXL, 4.89 * GB, "F8_E4M3",
       f"comfyanonymous/flux_text_encoders: {_HF} 4.89 GB", quantization="fp8_e4m3fn", folder="text_encoders"),
    _e("t5xxl_fp8_e4m3fn_scaled.safetensors", "t5-xxl", P_T5XXL, 5.16 * GB, "F8_E4M3",
       f"comfyanonymous/flux_text_encoders: {_HF} 5.16 GB", quantization="scaled fp8_e4m3fn",
       folder="text_encoders"),
    _e("clip_l.safetensors", "clip-l", P_CLIP_L, 246 * MB, "F16",
       f"comfyanonymous/flux_text_encoders: {_HF} 246 MB; 123M params computed", folder="text_encoders"),
    # --- Stable Diffusion checkpoints -----------------------------------------------------------
    _e("sd_xl_base_1.0.safetensors", "sdxl", P_SDXL, 6.94 * GB, "F16",
       f"stabilityai/stable-diffusion-xl-base-1.0: {_HF} 6.94 GB; params computed (UNet 2.567B + CLIP-L"
       " + CLIP-G + VAE)", kind=CHECKPOINT, folder="checkpoints"),
    _e("sd_xl_base_1.0_0.9vae.safetensors", "sdxl", P_SDXL, 6.94 * GB, "F16",
       f"stabilityai/stable-diffusion-xl-base-1.0: {_HF} 6.94 GB", kind=CHECKPOINT, folder="checkpoints"),
    _e("v1-5-pruned-emaonly.safetensors", "sd15", P_SD15, 4.27 * GB, "F32",
       f"Comfy-Org/stable-diffusion-v1-5-archive: {_HF} 4.27 GB (F32); params computed (UNet 859.5M + CLIP-L + VAE)",
       kind=CHECKPOINT, folder="checkpoints"),
    _e("v1-5-pruned-emaonly-fp16.safetensors", "sd15", P_SD15, 2.13 * GB, "F16",
       f"Comfy-Org/stable-diffusion-v1-5-archive: {_HF} 2.13 GB", kind=CHECKPOINT, folder="checkpoints"),
    # --- Wan 2.1 (Comfy-Org repackaged) ----------------------------------------------------------
    _e("wan2.1_t2v_14B_fp16.safetensors", "wan2.1-14b", P_WAN14_T2V, 28.6 * GB, "F16",
       f"{_WAN_REPO}/diffusion_models: {_HF} 28.6 GB; 14.29B params computed", folder="diffusion_models",
       variant="t2v"),
    _e("wan2.1_t2v_14B_bf16.safetensors", "wan2.1-14b", P_WAN14_T2V, 28.6 * GB, "BF16",
       f"{_WAN_REPO}/diffusion_models: {_HF} 28.6 GB", folder="diffusion_models", variant="t2v"),
    _e("wan2.1_t2v_14B_fp8_e4m3fn.safetensors", "wan2.1-14b", P_WAN14_T2V, 14.3 * GB, "F8_E4M3",
       f"{_WAN_REPO}/diffusion_models: {_HF} 14.3 GB (mirror listing)", quantization="fp8_e4m3fn",
       folder="diffusion_models", variant="t2v"),
    _e("wan2.1_t2v_1.3B_bf16.safetensors", "wan2.1-1.3b", P_WAN13, 2_838_104_528, "BF16",
       f"{_WAN_REPO}/diffusion_models: LFS pointer size 2,838,104,528 bytes", folder="diffusion_models",
       variant="t2v"),
    _e("wan2.1_t2v_1.3B_fp16.safetensors", "wan2.1-1.3b", P_WAN13, 2.84 * GB, "F16",
       f"{_WAN_REPO}/diffusion_models: {_HF} 2.84 GB", folder="diffusion_models", variant="t2v"),
    *(_e(f"wan2.1_i2v_{res}_14B_{dt}.safetensors", "wan2.1-14b", P_WAN14_I2V, 32.8 * GB, dtype,
         f"{_WAN_REPO}/diffusion_models: {_HF} 32.8 GB; 16.39B params computed", folder="diffusion_models",
         variant="i2v")
      for res in ("480p", "720p") for dt, dtype in (("fp16", "F16"), ("bf16", "BF16"))),
    *(_e(f"wan2.1_i2v_{res}_14B_{dt}.safetensors", "wan2.1-14b", P_WAN14_I2V, 16.4 * GB, "F8_E4M3",
         f"{_WAN_REPO}/diffusion_models: {_HF} 16.4 GB", quantization=q, folder="diffusion_models", variant="i2v")
      for res in ("480p", "720p")
      for dt, q in (("fp8_e4m3fn", "fp8_e4m3fn"), ("fp8_scaled", "scaled fp8_e4m3fn"))),
    # XLabs-AI Flux ControlNets v3 (x-flux-comfyui LoadFluxControlNet): xflux/src/flux/controlnet.py ControlNetFlux,
    # 2 Flux double blocks + embedders + 2 zero Linear(3072) + a 8-conv hint block = 743,807,280 params; bf16 on the
    # GPU while sampling (nodes.py:434 casts it to the model's dtype; built in fp32 first, nodes.py:225)
    *(_e(f"flux-{kind}-controlnet-v3.safetensors", "controlnet", P_XLABS_CN, 2 * P_XLABS_CN, "BF16",
         "XLabs-AI/x-flux-comfyui ControlNetFlux (controlnet_depth=2) params computed; x 2 bytes (BF16 assumed)",
         folder="xlabs/controlnets", label="XLabs Flux ControlNet v3")
      for kind in ("canny", "depth", "hed")),
    # Diffusers-format Flux ControlNets (FluxControlNetModel; ComfyUI controlnet.py load_controlnet_flux_instantx):
    # params computed from num_layers (Flux double blocks) / num_single_layers of their config.json, 16-bit files.
    # The sums reproduce the exact published byte counts less the header (Union-Pro-2.0 6/0: 4,281,753,600 of
    # 4,281,779,224; Union-Pro v1 5/10: 6,603,913,216 of 6,603,953,920), so the 5/0 ones are sized the same way.
    _e("instantx_flux_canny.safetensors", "controlnet", P_FLUX_CN_5_0, 2 * P_FLUX_CN_5_0, "BF16",
       "InstantX/FLUX.1-dev-Controlnet-Canny (5 double / 0 single blocks): params computed; Hugging Face listing "
       "3.58 GB (ComfyUI_examples renames it)", folder="controlnet", label="InstantX Flux Canny ControlNet"),
    _e("controlnet-union-pro-2.0.safetensors", "controlnet", P_FLUX_CN_6_0, 4_281_779_224, "BF16",
       "Shakker-Labs/FLUX.1-dev-ControlNet-Union-Pro-2.0 (6 double / 0 single blocks, no mode embedding): params "
       "computed; exact file size 4,281,779,224 bytes", folder="controlnet", label="Flux ControlNet Union Pro 2.0"),
    _e("flux_tile.safetensors", "controlnet", P_FLUX_CN_5_0, 2 * P_FLUX_CN_5_0, "BF16",
       "jasperai/Flux.1-dev-Controlnet-Upscaler (5 double / 0 single blocks), the file RES4LYF's upscale workflows "
       "load as flux_tile (their note: Jasper's tile controlnet): params computed; ComfyUI-Manager 3.58GB",
       folder="controlnet", label="Jasper Flux tile/upscaler ControlNet"),
    # ChronoEdit 14B: a Wan 2.1 I2V 14B fine-tune (the template runs it through WanImageToVideo with CLIP vision);
    # the template note's 30.54 GiB is the byte size of wan2.1_i2v_*_14B_fp16 (32.8 GB)
    _e("chrono_edit_14B_fp16.safetensors", "wan2.1-14b", P_WAN14_I2V, round(30.54 * 2**30), "F16",
       "comfyui-workflow-templates-json 0.1.123, template image_chrono_edit_14B: 30.54 GB (binary units); "
       "16.39B params: the Wan 2.1 I2V 14B count it matches", folder="diffusion_models", variant="i2v",
       label="ChronoEdit 14B (Wan 2.1 I2V architecture)"),
    _e("wan2.1_flf2v_720p_14B_fp16.safetensors", "wan2.1-14b", P_WAN14_FLF, 32.8 * GB, "F16",
       f"{_WAN_REPO}/diffusion_models: {_HF} 32.8 GB", folder="diffusion_models", variant="flf"),
    _e("wan2.1_flf2v_720p_14B_fp8_e4m3fn.safetensors", "wan2.1-14b", P_WAN14_FLF, 16_397_952_536, "F8_E4M3",
       f"{_WAN_REPO}/diffusion_models: LFS pointer size 16,397,952,536 bytes", quantization="fp8_e4m3fn",
       folder="diffusion_models", variant="flf"),
    _e("umt5_xxl_fp16.safetensors", "umt5-xxl", P_UMT5XXL, 11_366_399_385, "F16",
       f"{_WAN_REPO}/text_encoders: LFS pointer size 11,366,399,385 bytes; 5.68B params computed",
       folder="text_encoders"),
    _e("umt5_xxl_fp8_e4m3fn_scaled.safetensors", "umt5-xxl", P_UMT5XXL, 6_735_906_897, "F8_E4M3",
       f"{_WAN_REPO}/text_encoders: LFS pointer size 6,735,906,897 bytes", quantization="scaled fp8_e4m3fn",
       folder="text_encoders"),
    _e("wan_2.1_vae.safetensors", "vae-wan2.1", 127 * MB, 254 * MB, "BF16",
       f"{_WAN_REPO}/vae: {_HF} 254 MB; params = bytes / 2 (BF16)", folder="vae"),
    _e("clip_vision_h.safetensors", "clip-vision", P_CLIP_VISION_H, 1_264_219_396, "F16",
       "Comfy-Org clip_vision_h.safetensors: LFS pointer size 1,264,219,396 bytes (mirror); params computed"
       " (OpenCLIP ViT-H/14 vision tower)", folder="clip_vision", variant="vit-h"),
    # --- Wan 2.2 (Comfy-Org repackaged) ----------------------------------------------------------
    *(_e(f"wan2.2_{task}_{expert}_14B_{dt}.safetensors", "wan2.2-14b", P_WAN14_T2V + (P_WAN22_I2V_EXTRA if task == "i2v" else 0),
         (28.6 if dt == "fp16" else 14.3) * GB, "F16" if dt == "fp16" else "F8_E4M3",
         f"{_WAN22_REPO}/diffusion_models: {_HF} {'28.6' if dt == 'fp16' else '14.3'} GB (duplicate listing);"
         " params computed (Wan 2.1 14B architecture)",
         quantization=None if dt == "fp16" else "scaled fp8_e4m3fn", folder="diffusion_models", variant=expert)
      for task in ("t2v", "i2v") for expert in ("high_noise", "low_noise") for dt in ("fp16", "fp8_scaled")),
    _e("wan2.2_ti2v_5B_fp16.safetensors", "wan2.2-ti2v-5b", P_WAN5, 10.0 * GB, "F16",
       f"Comfy-Org/Wan-2.2 split_files/diffusion_models: {_HF} 10 GB; 5.00B params computed",
       folder="diffusion_models", variant="ti2v"),
    _e("wan2.2_vae.safetensors", "vae-wan2.2", 705 * MB, 1.41 * GB, "F16",
       f"Comfy-Org/Wan-2.2 split_files/vae: {_HF} 1.41 GB; params = bytes / 2 assuming 16-bit storage",
       folder="vae"),
    # --- Qwen-Image (Comfy-Org/Qwen-Image_ComfyUI) -------------------------------------------------
    _e("qwen_image_bf16.safetensors", "qwen-image", P_QWEN_IMAGE, 40.9 * GB, "BF16",
       f"Comfy-Org/Qwen-Image_ComfyUI split_files/diffusion_models: {_HF} 40.9 GB; params = bytes / 2",
       folder="diffusion_models"),
    _e("qwen_image_fp8_e4m3fn.safetensors", "qwen-image", P_QWEN_IMAGE, 20.4 * GB, "F8_E4M3",
       f"Comfy-Org/Qwen-Image_ComfyUI split_files/diffusion_models: {_HF} 20.4 GB", quantization="fp8_e4m3fn",
       folder="diffusion_models"),
    _e("qwen_2.5_vl_7b.safetensors", "qwen2.5-vl-7b", P_QWEN25_VL_7B, 16.6 * GB, "BF16",
       f"Comfy-Org/Qwen-Image_ComfyUI split_files/text_encoders: {_HF} 16.6 GB; params = bytes / 2",
       folder="text_encoders"),
    _e("qwen_2.5_vl_7b_fp8_scaled.safetensors", "qwen2.5-vl-7b", P_QWEN25_VL_7B, 9_384_670_680, "F8_E4M3",
       "Comfy-Org/Qwen-Image_ComfyUI split_files/text_encoders: LFS pointer size 9,384,670,680 bytes",
       quantization="scaled fp8_e4m3fn", folder="text_encoders"),
    _e("qwen_image_vae.safetensors", "vae-wan2.1", 127 * MB, 254 * MB, "BF16",
       "Qwen-Image uses the Wan 2.1 VAE architecture (COMFYUI-NOTES §3.2); size taken as wan_2.1_vae's 254 MB"
       " (the Qwen-Image-Layered VAE lists 254 MB too); not confirmed from this file's own listing",
       folder="vae"),
)

# city96/Wan2.1-T2V-14B-gguf listing (GB)
ENTRIES = ENTRIES + tuple(_gguf_wan(q, s) for q, s in (
    ("Q3_K_S", 6.99), ("Q3_K_M", 7.65), ("Q4_0", 9.03), ("Q4_1", 9.73), ("Q4_K_S", 9.22), ("Q4_K_M", 10.1),
    ("Q5_0", 10.8), ("Q5_K_M", 11.3), ("F16", 29.1), ("BF16", 29.1)))


# --- Published sizes, one line per file --------------------------------------------------------
# _pub(name, family, folder, size, dtype, where, params=..., **fields): ``size`` is the Hugging Face
# listing ("3.23 GB", 3 significant digits) or an exact LFS pointer size (an int); ``where`` says
# whose listing. Without ``params`` the count is bytes / bytes-per-weight of ``dtype`` (said in the
# source). _MGR: the "size" field of ComfyUI-Manager's model list (checked against the parameter
# count: its 4.89 GB for qwen_image_edit_fp8_e4m3fn is wrong, 20.4 GB listed, not used). _TPL: the
# "size" of a template that downloads only this file (its GiB figure rounded, within 54 MB).
_MGR = "Comfy-Org/ComfyUI-Manager model-list.json @ f39cbd5"
_TPL = "comfyui-workflow-templates-json 0.1.123 index.json"
_DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1}
_UNITS = {"GB": GB, "MB": MB}


def _size(size, where: str) -> tuple[int, str]:
    if isinstance(size, int):
        return size, f"{size:,} bytes" if where.startswith((_MGR, _TPL)) else f"LFS pointer size {size:,} bytes"
    value, unit = size.split()
    return int(float(value) * _UNITS[unit]), size if where.startswith((_MGR, _TPL)) else f"{_HF} {size}"


def _pub(name, family, folder, size, dtype, where, params=None, assumed=False, **kw) -> CatalogueEntry:
    """One published file; ``assumed``: the stored dtype is not published (16-bit taken: the larger
    on-GPU figure for kinds ComfyUI casts to 16 bit)."""
    nbytes, how = _size(size, where)
    if assumed:
        how += f", dtype not published ({dtype} assumed)"
    if params is None:
        per = _DTYPE_BYTES.get(dtype, 2)
        params, pnote = nbytes // per, f"params = bytes / {per} ({dtype})"
    else:
        pnote = "params: the family's count (see the P_* constants)"
    return _e(name, family, params, nbytes, dtype, f"{where}: {how}; {pnote}", folder=folder, **kw)


_W21 = "Comfy-Org/Wan_2.1_ComfyUI_repackaged split_files/diffusion_models"
_W22L = "Comfy-Org/Wan_2.2_ComfyUI_Repackaged split_files/loras"
_KJ = "Kijai/WanVideo_comfy"
_KJS = "Kijai/WanVideo_comfy_fp8_scaled"
_HID = "Comfy-Org/HiDream-I1_ComfyUI split_files"
_QIE = "Comfy-Org/Qwen-Image-Edit_ComfyUI split_files/diffusion_models"
_HYV = "Comfy-Org/HunyuanVideo_repackaged split_files"
_S8 = "scaled fp8_e4m3fn"
_DM, _TE, _VA, _LO, _CN, _CV, _CK = ("diffusion_models", "text_encoders", "vae", "loras", "controlnet", "clip_vision",
                                      "checkpoints")

PUBLISHED: tuple[CatalogueEntry, ...] = (
    # Flux.1 / Flux.2
    _pub("flux1-canny-dev.safetensors", "flux1-dev", _DM, "23.8 GB", "BF16", "evilsocket/flux1-dev (duplicate of Comfy-Org/flux1-dev)", params=P_FLUX1_CONTROL, variant="canny"),
    _pub("flux1-fill-dev.safetensors", "flux1-fill", _DM, 23_804_922_408, "BF16", "MaxedOut/ComfyUI-Starter-Packs commit f230a09 (sha256 03e289f5, the BFL file)", params=P_FLUX1_FILL, variant="fill"),
    _pub("flux1-depth-dev-lora.safetensors", "lora", _LO, 1_244_440_512, "BF16", "Comfy-Org/flux1-dev commit a651876 split_files/loras"),
    _pub("flux1-dev-kontext_fp8_scaled.safetensors", "flux1-kontext", _DM, "11.9 GB", "F8_E4M3", "Akul/FLUX.1-8bit (same file name as Comfy-Org/flux1-kontext-dev_ComfyUI)", params=P_FLUX1_DEV, quantization=_S8, variant="kontext"),
    _pub("flux1-krea-dev_fp8_scaled.safetensors", "flux1-dev", _DM, "11.9 GB", "F8_E4M3", "Comfy-Org/FLUX.1-Krea-dev_ComfyUI split_files/diffusion_models", params=P_FLUX1_DEV, quantization=_S8, variant="krea"),
    _pub("flux1-redux-dev.safetensors", "unknown", "style_models", "129 MB", "BF16", "UmeAiRT/ComfyUI-Auto_installer mirror (sha256 a1b3bdcb)", kind="style_model", label="Flux.1 Redux (style model)"),
    _pub("flux1-schnell-fp8.safetensors", "flux1-schnell", _CK, 17_236_328_572, "F8_E4M3", "Comfy-Org/flux1-schnell commit 0cb207e (model + CLIP-L + T5-XXL fp8 + VAE)", params=P_FLUX1_SCHNELL + P_CLIP_L + P_T5XXL + P_AE, quantization="fp8_e4m3fn", kind=CHECKPOINT),
    _pub("flux1-schnell-fp8.safetensors", "flux1-schnell", _DM, "11.9 GB", "F8_E4M3", "Kijai/flux-fp8", params=P_FLUX1_SCHNELL, quantization="fp8_e4m3fn"),
    _pub("flux2_dev_fp8mixed.safetensors", "flux2", _DM, "35.5 GB", "F8_E4M3", "Comfy-Org/flux2-dev split_files/diffusion_models", params=P_FLUX2, quantization="scaled fp8 (mixed precision)"),
    _pub("flux2-vae.safetensors", "vae-flux2", _VA, "336 MB", "F32", "Comfy-Org/flux2-dev split_files/vae (F32 taken from ae.safetensors, 335 MB F32)", assumed=True),
    _pub("mistral_3_small_flux2_bf16.safetensors", "mistral", _TE, "35.6 GB", "BF16", "Comfy-Org/flux2-dev split_files/text_encoders"),
    _pub("mistral_3_small_flux2_fp8.safetensors", "mistral", _TE, "18 GB", "F8_E4M3", "Comfy-Org/flux2-dev split_files/text_encoders", params=P_MISTRAL_FLUX2, quantization=_S8),
    # Wan 2.1 / 2.2 (Comfy-Org)
    _pub("wan2.1_t2v_14B_fp8_scaled.safetensors", "wan2.1-14b", _DM, "14.3 GB", "F8_E4M3", _MGR, params=P_WAN14_T2V, quantization=_S8, variant="t2v"),
    _pub("wan2.1_fun_camera_v1.1_1.3B_bf16.safetensors", "wan2.1-1.3b", _DM, "3.23 GB", "BF16", _W21, variant="fun-camera"),
    _pub("wan2.1_fun_camera_v1.1_14B_bf16.safetensors", "wan2.1-14b", _DM, "33.8 GB", "BF16", _W21, variant="fun-camera"),
    _pub("wan2.1_fun_control_1.3B_bf16.safetensors", "wan2.1-1.3b", _DM, "3.13 GB", "BF16", _W21, variant="fun-control"),
    _pub("wan2.1_fun_inp_1.3B_bf16.safetensors", "wan2.1-1.3b", _DM, "3.13 GB", "BF16", _W21, variant="fun-inp"),
    # rank 64 x 4,792,320 (attention + FFN linears of the 40 blocks, name_infer.lora_sum) = 306.7M x 4 bytes = 1.23 GB: F32
    _pub("wan2.2_i2v_lightx2v_4steps_lora_v1_high_noise.safetensors", "lora", _LO, "1.23 GB", "F32", _W22L),
    _pub("wan2.2_i2v_lightx2v_4steps_lora_v1_low_noise.safetensors", "lora", _LO, "1.23 GB", "F32", _W22L),
    _pub("wan2.2_t2v_lightx2v_4steps_lora_v1.1_high_noise.safetensors", "lora", _LO, "1.23 GB", "F32", _W22L),
    _pub("wan2.2_t2v_lightx2v_4steps_lora_v1.1_low_noise.safetensors", "lora", _LO, "1.23 GB", "F32", _W22L),
    _pub("wan2.2_animate_14B_relight_lora_bf16.safetensors", "lora", _LO, "1.44 GB", "BF16", _W22L),
    # Wan (Kijai, WanVideoWrapper)
    _pub("Wan2_1-I2V-14B-480P_fp8_e4m3fn.safetensors", "wan2.1-14b", _DM, "17 GB", "F8_E4M3", _KJ, params=P_WAN14_I2V, quantization="fp8_e4m3fn", variant="i2v"),
    _pub("Wan2_1-I2V-14B-720P_fp8_e4m3fn.safetensors", "wan2.1-14b", _DM, "17 GB", "F8_E4M3", _KJ, params=P_WAN14_I2V, quantization="fp8_e4m3fn", variant="i2v"),
    _pub("Wan2_1-T2V-14B_fp8_e4m3fn.safetensors", "wan2.1-14b", _DM, "14.9 GB", "F8_E4M3", _KJ, params=P_WAN14_T2V, quantization="fp8_e4m3fn", variant="t2v"),
    _pub("Wan2_1-T2V-1_3B_bf16.safetensors", "wan2.1-1.3b", _DM, "2.87 GB", "BF16", _KJ, variant="t2v"),
    _pub("Wan2.1-Fun-Control-14B_fp8_e4m3fn.safetensors", "wan2.1-14b", _DM, "16.6 GB", "F8_E4M3", _KJ, quantization="fp8_e4m3fn", variant="fun-control"),
    _pub("Wan2.1-Fun-InP-14B_fp8_e4m3fn.safetensors", "wan2.1-14b", _DM, "16.6 GB", "F8_E4M3", _KJ, quantization="fp8_e4m3fn", variant="fun-inp"),
    _pub("Wan2_1_VAE_bf16.safetensors", "vae-wan2.1", _VA, "254 MB", "BF16", _KJ),
    _pub("Wan2_1_VAE_fp32.safetensors", "vae-wan2.1", _VA, "508 MB", "F32", _KJ),
    _pub("umt5-xxl-enc-bf16.safetensors", "umt5-xxl", _TE, "11.4 GB", "BF16", _KJ, params=P_UMT5XXL),
    _pub("umt5-xxl-enc-fp8_e4m3fn.safetensors", "umt5-xxl", _TE, 6_731_333_792, "F8_E4M3", f"{_KJ} commit 5f8b249", params=P_UMT5XXL, quantization="fp8_e4m3fn"),
    _pub("open-clip-xlm-roberta-large-vit-huge-14_fp16.safetensors", "clip-vision", _CV, "2.39 GB", "F16", _KJ, label="OpenCLIP XLM-RoBERTa-large + ViT-H/14"),
    _pub("Wan2_2-Fun-Control-A14B-HIGH_fp8_e4m3fn_scaled_KJ_fixed.safetensors", "wan2.2-14b", _DM, "14.5 GB", "F8_E4M3", f"{_KJS}/Fun", quantization=_S8, variant="high_noise"),
    _pub("Wan2_2-Fun-Control-A14B-LOW_fp8_e4m3fn_scaled_KJ_fixed.safetensors", "wan2.2-14b", _DM, "14.5 GB", "F8_E4M3", f"{_KJS}/Fun", quantization=_S8, variant="low_noise"),
    _pub("Wan2_2-Fun-Control-Camera-A14B-HIGH_fp8_e4m3fn_scaled_KJ.safetensors", "wan2.2-14b", _DM, "15.5 GB", "F8_E4M3", f"{_KJS}/Fun", quantization=_S8, variant="high_noise"),
    _pub("Wan2_2-Animate-14B_fp8_e4m3fn_scaled_KJ.safetensors", "wan2.1-14b", _DM, "18.4 GB", "F8_E4M3", f"{_KJS}/Wan22Animate", quantization=_S8, variant="animate"),
    _pub("Wan2_1-T2V-14B-Phantom_fp8_e4m3fn_scaled_KJ.safetensors", "wan2.1-14b", _DM, 15_001_361_458, "F8_E4M3", f"{_KJS} commit a7c537e", quantization=_S8, variant="phantom"),
    # Qwen-Image
    _pub("qwen_image_edit_bf16.safetensors", "qwen-image", _DM, "40.9 GB", "BF16", _QIE, params=P_QWEN_IMAGE, variant="edit"),
    _pub("qwen_image_edit_fp8_e4m3fn.safetensors", "qwen-image", _DM, "20.4 GB", "F8_E4M3", _QIE, params=P_QWEN_IMAGE, quantization="fp8_e4m3fn", variant="edit"),
    _pub("qwen_image_edit_2509_bf16.safetensors", "qwen-image", _DM, "40.9 GB", "BF16", _QIE, params=P_QWEN_IMAGE, variant="edit"),
    _pub("qwen_image_edit_2509_fp8_e4m3fn.safetensors", "qwen-image", _DM, "20.4 GB", "F8_E4M3", _QIE, params=P_QWEN_IMAGE, quantization="fp8_e4m3fn", variant="edit"),
    _pub("Qwen-Image-InstantX-ControlNet-Union.safetensors", "controlnet", _CN, "2.54 GB", "BF16", _MGR, assumed=True),
    _pub("Qwen-Image-InstantX-ControlNet-Inpainting.safetensors", "controlnet", _CN, "2.54 GB", "BF16", _MGR, assumed=True),
    # OmniGen2 (ComfyUI's Omnigen2 and its Qwen2.5-VL 3B encoder, sd.py TEModel.QWEN25_3B, both traced with 0.18.2)
    _pub("qwen_2.5_vl_fp16.safetensors", "qwen2.5-3b", _TE, "7.51 GB", "F16", f"{_MGR} (Comfy-Org/Omnigen2_ComfyUI_repackaged)", kind=TEXT_ENCODER, label="Qwen2.5-VL 3B (OmniGen2)"),
    _pub("omnigen2_fp16.safetensors", "omnigen2", _DM, "7.93 GB", "F16", f"{_MGR} (Comfy-Org/Omnigen2_ComfyUI_repackaged)", kind=DIFFUSION),
    # HiDream
    *(_pub(f"hidream_{m}_{dt}.safetensors", "hidream", _DM, "34.2 GB" if dt != "fp8" else "17.1 GB",
           {"bf16": "BF16", "fp16": "F16", "fp8": "F8_E4M3"}[dt], f"{_HID}/diffusion_models", params=P_HIDREAM,
           quantization="fp8_e4m3fn" if dt == "fp8" else None, variant=m.replace("_", "-"))
      for m, dt in (("e1_1", "bf16"), ("e1_full", "bf16"), ("i1_dev", "bf16"), ("i1_dev", "fp8"), ("i1_fast", "bf16"),
                    ("i1_fast", "fp8"), ("i1_full", "fp16"), ("i1_full", "fp8"))),
    _pub("clip_g_hidream.safetensors", "clip-g", _TE, "1.39 GB", "F16", f"{_HID}/text_encoders", params=P_CLIP_G),
    _pub("clip_l_hidream.safetensors", "clip-l", _TE, "248 MB", "F16", f"{_HID}/text_encoders", params=P_CLIP_L),
    _pub("llama_3.1_8b_instruct_fp8_scaled.safetensors", "llama3-8b", _TE, "9.08 GB", "F8_E4M3", f"{_HID}/text_encoders", params=P_LLAMA31_8B, quantization=_S8),
    # HunyuanVideo
    *(_pub(f"hunyuan_video_{v}_720p_bf16.safetensors", "hunyuan-video", _DM, "25.6 GB", "BF16", f"{_HYV}/diffusion_models", params=P_HUNYUAN_VIDEO, variant=var)
      for v, var in (("t2v", "t2v"), ("image_to_video", "i2v"), ("v2_replace_image_to_video", "i2v"))),
    _pub("hunyuan_video_vae_bf16.safetensors", "vae-hunyuan", _VA, "493 MB", "BF16", f"{_HYV}/vae"),
    _pub("llava_llama3_fp16.safetensors", "llama3-8b", _TE, "16.1 GB", "F16", f"{_MGR} (Comfy-Org/HunyuanVideo_repackaged)", params=P_LLAMA31_8B),
    _pub("llava_llama3_fp8_scaled.safetensors", "llama3-8b", _TE, "9.09 GB", "F8_E4M3", f"{_MGR} (Comfy-Org/HunyuanVideo_repackaged)", params=P_LLAMA31_8B, quantization=_S8),
    _pub("llava_llama3_vision.safetensors", "clip-vision", _CV, "649 MB", "F16", f"{_MGR} (Comfy-Org/HunyuanVideo_repackaged)", label="LLaVA-Llama-3 vision tower"),
    _pub("byt5_small_glyphxl_fp16.safetensors", "unknown", _TE, "439 MB", "F16", "Comfy-Org/HunyuanVideo_1.5_repackaged split_files/text_encoders", kind=TEXT_ENCODER, label="ByT5-small (Glyph-SDXL)"),
    _pub("sigclip_vision_patch14_384.safetensors", "clip-vision", _CV, "857 MB", "F16", f"{_MGR} (Comfy-Org/sigclip_vision_384)", label="SigLIP so400m/14 384px vision"),
    # Z-Image
    _pub("z_image_turbo_bf16.safetensors", "z-image", _DM, "12.3 GB", "BF16", "Comfy-Org/z_image_turbo split_files/diffusion_models", kind=DIFFUSION, label="Z-Image Turbo (6B)"),
    _pub("qwen_3_4b.safetensors", "qwen3", _TE, 8_044_982_048, "BF16", "Comfy-Org/z_image_turbo discussion #28 (exact size; listing 8.04 GB)", params=P_QWEN3_4B),
    # LTX-Video / LTX-2 (Lightricks, via the Manager list)
    # 9.37 GB = 4 bytes x (1.923B transformer + 0.419B VAE): v0.9 is stored in fp32 (budget.CHECKPOINT_SPLITS)
    _pub("ltx-video-2b-v0.9.safetensors", "ltxv", _CK, "9.37 GB", "F32", _MGR + " (F32: the size is 4 bytes x the traced parameter count)", params=1_923_405_472 + 419_193_649, kind=CHECKPOINT),
    _pub("ltx-video-2b-v0.9.5.safetensors", "ltxv", _CK, "6.34 GB", "BF16", _MGR, assumed=True, kind=CHECKPOINT),
    _pub("ltx-2-19b-dev.safetensors", "ltx2", _CK, "43.3 GB", "BF16", _MGR, kind=CHECKPOINT, label="LTX-2 19B dev"),
    _pub("ltx-2-19b-distilled.safetensors", "ltx2", _CK, "43.3 GB", "BF16", _MGR, kind=CHECKPOINT, label="LTX-2 19B distilled"),
    _pub("ltx-2-19b-dev-fp8.safetensors", "ltx2", _CK, "27.1 GB", "F8_E4M3", _MGR, quantization=_S8, kind=CHECKPOINT, label="LTX-2 19B dev"),
    _pub("ltx-2-19b-distilled-lora-384.safetensors", "lora", _LO, "7.67 GB", "BF16", _MGR, assumed=True),
    _pub("ltx-2-19b-ic-lora-canny-control.safetensors", "lora", _LO, "654 MB", "BF16", _MGR, assumed=True),
    _pub("ltx-2-19b-ic-lora-depth-control.safetensors", "lora", _LO, "654 MB", "BF16", _MGR, assumed=True),
    _pub("ltx-2-spatial-upscaler-x2-1.0.safetensors", "unknown", "latent_upscale_models", "996 MB", "BF16", _MGR, kind="upscaler", label="LTX-2 latent upscaler x2"),
    _pub("ltx-2.3-22b-dev-fp8.safetensors", "ltx2.3", _CK, "27.14 GB", "F8_E4M3", _MGR, quantization=_S8, kind=CHECKPOINT, label="LTX-2.3 22B dev"),
    _pub("ltx-2.3-22b-distilled-fp8.safetensors", "ltx2.3", _CK, "27.50 GB", "F8_E4M3", _MGR, quantization=_S8, kind=CHECKPOINT, label="LTX-2.3 22B distilled"),
    _pub("ltx-2.3-22b-ic-lora-ingredients-0.9.safetensors", "lora", _LO, "1.31 GB", "BF16", _MGR, assumed=True),
    _pub("ltx-2.3-22b-ic-lora-union-control-ref0.5.safetensors", "lora", _LO, "0.61 GB", "BF16", _MGR, assumed=True),
    _pub("ltx-2.3-spatial-upscaler-x2-1.1.safetensors", "unknown", "latent_upscale_models", "0.93 GB", "BF16", _MGR, kind="upscaler", label="LTX-2.3 latent upscaler x2"),
    _pub("ltx-2.5-22b-distilled-transformer-comfy-int8-convrot.safetensors", "unknown", _DM, "21.50 GB", "I8", _MGR, quantization="int8", kind=DIFFUSION, label="LTX-2.5 22B distilled"),
    _pub("gemma4-12b-with-proj-ltx-2.5-comfy-int8-convrot.safetensors", "unknown", _TE, "15.37 GB", "I8", _MGR, quantization="int8", kind=TEXT_ENCODER, label="Gemma 4 12B (LTX-2.5)"),
    _pub("ltx-2.5-video-vae-bf16.safetensors", "unknown", _VA, "1.47 GB", "BF16", _MGR, kind=VAE, label="LTX-2.5 video VAE"),
    _pub("ltx-2.5-audio-vae-bf16.safetensors", "unknown", _VA, "0.36 GB", "BF16", _MGR, kind=VAE, label="LTX-2.5 audio VAE"),
    _pub("ltx-2.5-latent-spatial-upscaler-x2-bf16-1.0.safetensors", "unknown", "latent_upscale_models", "0.96 GB", "BF16", _MGR, kind="upscaler", label="LTX-2.5 latent upscaler x2"),
    _pub("gemma_3_12B_it_fp4_mixed.safetensors", "gemma3", _TE, "9.45 GB", "BF16", "Comfy-Org/ltx-2 split_files/text_encoders (fp4 + 16-bit mix: params = bytes / 2 is a floor)", quantization="nvfp4 (mixed)", kind=TEXT_ENCODER, label="Gemma 3 12B"),
    # Stable Diffusion family
    _pub("sd_xl_refiner_1.0.safetensors", "sdxl", _CK, "6.08 GB", "F16", _MGR, kind=CHECKPOINT, variant="refiner"),
    _pub("sd_xl_turbo_1.0_fp16.safetensors", "sdxl", _CK, "6.94 GB", "F16", _MGR, params=P_SDXL, kind=CHECKPOINT, variant="turbo"),
    _pub("svd_xt.safetensors", "svd", _CK, "9.56 GB", "F32", _MGR, assumed=True, kind=CHECKPOINT, label="Stable Video Diffusion XT"),
    _pub("vae-ft-mse-840000-ema-pruned.safetensors", "vae-kl4", _VA, "334.6 MB", "F32", _MGR),
    _pub("clip_vision_g.safetensors", "clip-vision", _CV, "3.69 GB", "F16", _MGR, assumed=True, label="OpenCLIP ViT-bigG vision"),
    *(_pub(f"sd3.5_large_controlnet_{c}.safetensors", "controlnet", _CN, "8.65 GB", "BF16", _MGR, assumed=True) for c in ("blur", "canny", "depth")),
    _pub("sd3.5_large_fp8_scaled.safetensors", "sd3", _CK, 14_935_748_772, "F8_E4M3", f"{_TPL} (template sd3.5_simple_example)", quantization=_S8, kind=CHECKPOINT, variant="large"),
    _pub("t5-v1_1-xxl-encoder-Q4_K_S.gguf", "t5-xxl", _TE, "2.74 GB", "Q4_K", f"{_MGR} (city96/t5-v1_1-xxl-encoder-gguf)", params=P_T5XXL, quantization="gguf Q4_K"),
    _pub("4x-UltraSharp.pth", "unknown", "upscale_models", "67.0 MB", "F32", f"{_MGR} (Kim2091/UltraSharp)", kind="upscaler", label="ESRGAN 4x upscaler"),
    # Templates index: templates that download only this file (over 1 GiB, so the rounding is under 5 %)
    _pub("NetaYumev35_pretrained_all_in_one.safetensors", "lumina2", _CK, 10_630_044_058, "BF16", f"{_TPL} (template image_netayume_lumina_t2i)", assumed=True, kind=CHECKPOINT, label="NetaYume Lumina"),
    _pub("ace_step_1.5_turbo_aio.safetensors", "ace-step-1.5", _CK, 10_737_418_240, "BF16", f"{_TPL} (template audio_ace_step_1_5_checkpoint)", assumed=True, kind=CHECKPOINT, label="ACE-Step 1.5 turbo (all-in-one)"),
    _pub("ace_step_v1_3.5b.safetensors", "ace-step-v1", _CK, 7_698_728_878, "BF16", f"{_TPL} (template audio_ace_step_1_m2m_editing)", assumed=True, kind=CHECKPOINT, label="ACE-Step v1 3.5B"),
    _pub("gemma4_e4b_it_fp8_scaled.safetensors", "unknown", _TE, 9_019_431_322, "F8_E4M3", f"{_TPL} (template llm_gemma4_text_gen)", quantization=_S8, kind=TEXT_ENCODER, label="Gemma 4 E4B"),
    *(_pub(f"{n}.safetensors", "unknown", _CK, size, "F16", f"{_TPL} (template {t})", kind=CHECKPOINT, label=label)
      for n, size, t, label in (
          ("sam3.1_multiplex_fp16", 1_717_986_918, "utility_image_segment_sam3", "SAM 3.1"),
          ("sdpose_wholebody_fp16", 1_932_735_283, "utility_sdpose_ood_image_to_pose", "SDPose whole-body"))),
    # Hunyuan3D 2.0 (DiT + DINOv2-giant + shape VAE in one fp16 file, budget.CHECKPOINT_SPLITS)
    *(_pub(f"{n}.safetensors", fam, _CK, size, "F16", f"{_TPL} (template {t})", kind=CHECKPOINT, label=label)
      for n, fam, size, t, label in (
          ("hunyuan3d-dit-v2-mv-turbo_fp16", "hunyuan3d-2.0-mv", 4_928_474_972, "3d_hunyuan3d_multiview_to_model_turbo",
           "Hunyuan3D 2.0 multiview turbo"),
          ("hunyuan3d-dit-v2-mv_fp16", "hunyuan3d-2.0-mv", 4_928_474_972, "3d_hunyuan3d_multiview_to_model",
           "Hunyuan3D 2.0 multiview"))),
    _pub("hunyuan3d-dit-v2_fp16.safetensors", "hunyuan3d-2.0", _CK, 4_928_151_562, "F16",
         "tencent/Hunyuan3D-2 @ d852d88 hunyuan3d-dit-v2-0/model.safetensors: LFS pointer size 4,928,151,562 bytes "
         "(sha256 360bc281..., which a public downloader gives for the Comfy-Org file)", kind=CHECKPOINT,
         label="Hunyuan3D 2.0"),
    # the index gives 4.6 GiB, as for Hunyuan3D 2.0; the traced DiT + VAE (budget.CHECKPOINT_SPLITS) are 3.38B
    # params: the loaded figures come from those counts
    _pub("hunyuan_3d_v2.1.safetensors", "hunyuan3d-2.1", _CK, 4_939_212_390, "F16", f"{_TPL} (template 3d_hunyuan3d-v2.1)", assumed=True, kind=CHECKPOINT, label="Hunyuan3D 2.1"),
    # Lotus depth (SD 2 UNet, supported_models.LotusD): the size a public model-restore script checks
    # downloads against (Comfy-Org/lotus; F16: 2 bytes x 0.87B params)
    _pub("lotus-depth-d-v1-1.safetensors", "lotus-d", _DM, 1_735_197_352, "F16",
         "Comfy-Org/lotus lotus-depth-d-v1-1.safetensors (1,735,197,352 B as recorded by a public restore script's size check)",
         kind=DIFFUSION, label="Lotus depth (SD 2 UNet)"),
    # black-forest-labs/FLUX.2-small-decoder: Flux.2's encoder with a smaller decoder; its decode is priced
    # as Flux.2's full decoder (traced), an upper bound
    _pub("full_encoder_small_decoder.safetensors", "vae-flux2", _VA, 249_519_092, "F32",
         "black-forest-labs/FLUX.2-small-decoder @ a3efc24: LFS pointer size 249,519,092 bytes (sha256 ea4273f0..., "
         "as recorded by a public download script)", assumed=True, kind=VAE,
         label="Flux.2 VAE, small decoder (decode priced as the full decoder: an upper bound)"),
    _pub("ace_1.5_vae.safetensors", "vae-ace15", _VA, 337_431_732, "BF16",
         "Comfy-Org/ace_step_1.5_ComfyUI_files @ d04a435: LFS pointer size 337,431,732 bytes", kind=VAE,
         label="ACE-Step 1.5 audio VAE"),
    _pub("qwen_0.6b_ace15.safetensors", "qwen3", _TE, 1_191_588_248, "BF16",
         "Comfy-Org/ace_step_1.5_ComfyUI_files @ c62f52c: LFS pointer size 1,191,588,248 bytes", kind=TEXT_ENCODER,
         label="Qwen3 0.6B (ACE-Step 1.5)"),
    # HunyuanVideo 1.5 VAE (also Capybara's): 2 bytes x 1,262,735,363 params (ComfyUI 0.18.2's module traced
    # at full size, data/vae_memory.json vae-hunyuan15) = 2.525 GB, the published 2.52 GB
    _pub("hunyuanvideo15_vae_fp16.safetensors", "vae-hunyuan15", _VA, "2.52 GB", "F16",
         f"Comfy-Org/HunyuanVideo_1.5_repackaged split_files/vae ({_HF} figure as quoted by public download scripts)",
         params=1_262_735_363, kind=VAE, label="HunyuanVideo 1.5 VAE"),
    _pub("qwen3.5_4b_bf16.safetensors", "unknown", _TE, 9_341_553_869, "BF16", f"{_TPL} (template llm_qwen3_5_text_gen)", kind=TEXT_ENCODER, label="Qwen3.5 4B"),
    _pub("qwen3vl_4b_fp8_scaled.safetensors", "unknown", _TE, 5_261_334_938, "F8_E4M3", f"{_TPL} (template llm_qwen3vl_text_gen)", quantization=_S8, kind=TEXT_ENCODER, label="Qwen3-VL 4B"),
    _pub("yue2_3b_int8_convrot.safetensors", "unknown", _CK, 3_972_844_749, "I8", f"{_TPL} (template audio_yue2_text2music)", quantization="int8", kind=CHECKPOINT, label="YuE 2 3B"),
)


def _norm(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()


_BY_NAME: dict[str, list[CatalogueEntry]] = {}
for _entry in ENTRIES + PUBLISHED:
    _BY_NAME.setdefault(_norm(_entry.name), []).append(_entry)

_FOLDER_ALIASES = {"unet": "diffusion_models", "clip": "text_encoders"}  # folder_paths.map_legacy


def lookup(name: str, folder: str | None = None) -> CatalogueEntry | None:
    """The catalogue entry for a file name (case-insensitive; sub-folders and Windows separators ignored).

    ``folder`` (a ComfyUI models/ folder such as "checkpoints") picks between entries that share a
    name; without it a folder named in the path is used, else the first (diffusion model) entry.
    """
    if not name:
        return None
    hits = _BY_NAME.get(_norm(name))
    if not hits:
        return None
    wanted = folder
    if wanted is None:
        parts = [p.lower() for p in name.replace("\\", "/").split("/")[:-1]]
        for p in reversed(parts):
            p = _FOLDER_ALIASES.get(p, p)
            if any(h.folder == p for h in hits):
                wanted = p
                break
    if wanted:
        wanted = _FOLDER_ALIASES.get(wanted, wanted)
        for h in hits:
            if h.folder == wanted:
                return h
    return hits[0]


def entry_info(name: str, folder: str | None = None) -> ModelInfo | None:
    """A ModelInfo (source "catalogue") for a file of the hand entries above, or None (published.py
    then looks in the sizes the official templates publish)."""
    entry = lookup(name, folder)
    if entry is None:
        return None
    fam = FAMILIES.get(entry.family, FAMILIES["unknown"])
    kind = entry.kind or fam.kind
    label = (entry.label or fam.label) + (" checkpoint" if kind == CHECKPOINT else "")
    if entry.variant:
        label += f" [{entry.variant.replace('_', '-')}]"
    return ModelInfo(
        kind=kind, family=entry.family, label=label, params=entry.params, weights_bytes=entry.bytes,
        dtype=entry.dtype, quantization=entry.quantization, arch=MappingProxyType(dict(fam.arch)),
        evidence=(f"file name {entry.name!r} is in the catalogue of public files",), source="catalogue",
        path=None, largest_tensor_bytes=0, variant=entry.variant, notes=(entry.source,),
    )


def entries_for_family(family: str) -> list[CatalogueEntry]:
    return [e for e in ENTRIES + PUBLISHED if e.family == family]


