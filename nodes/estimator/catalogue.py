"""Well-known public model files by file name: what they are and how big they are as published.

Used when a workflow names a file that is not on this machine (or before it is downloaded).
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
from .model_info import CHECKPOINT, ModelInfo

GB = 10**9
MB = 10**6

# Parameter counts computed from the full-size architectures (see module docstring).
P_FLUX1_DEV = 11_901_408_320
P_FLUX1_SCHNELL = 11_891_178_560  # dev minus guidance_in (2 x Linear: 256->3072, 3072->3072)
P_WAN14_T2V = 14_288_491_584
P_WAN14_I2V = 16_394_878_784  # + k_img/v_img/norm_k_img per block + img_emb MLP
P_WAN14_FLF = P_WAN14_I2V + 514 * 1280  # + img_emb.emb_pos [1, 514, 1280]
P_WAN13 = 1_418_996_800
P_WAN22_I2V_EXTRA = 20 * 5120 * 2 * 2  # Wan 2.2 I2V: patch_embedding takes 36 instead of 16 channels
P_QWEN_IMAGE = 20_450_000_000  # 40.9 GB BF16 listing / 2
P_QWEN25_VL_7B = 8_300_000_000  # 16.6 GB BF16 listing / 2
P_WAN5 = 4_999_787_712
P_T5XXL = 4_762_310_656  # encoder + shared embedding (32128 x 4096)
P_UMT5XXL = 5_680_910_336  # encoder + shared embedding (256384 x 4096), bias in every block
P_CLIP_L = 123_060_480  # CLIP-L text model without the projection
P_SD15 = 859_520_964 + 123_060_480 + 83_653_863  # UNet + CLIP-L text + VAE
P_SDXL = 2_567_463_684 + 123_060_480 + 694_659_841 + 83_653_863  # UNet + CLIP-L + CLIP-G (OpenCLIP) + VAE
P_AE = 83_819_683  # Flux VAE (16-channel KL, no quant convs)
P_CLIP_VISION_H = 632_076_800  # OpenCLIP ViT-H/14 vision tower, HF layout

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


def _norm(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()


_BY_NAME: dict[str, list[CatalogueEntry]] = {}
for _entry in ENTRIES:
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


def catalogue_info(name: str, folder: str | None = None) -> ModelInfo | None:
    """A ModelInfo (source "catalogue") for a well-known public file, or None."""
    entry = lookup(name, folder)
    if entry is None:
        return None
    fam = FAMILIES.get(entry.family, FAMILIES["unknown"])
    kind = entry.kind or fam.kind
    label = fam.label + (" checkpoint" if kind == CHECKPOINT else "")
    if entry.variant:
        label += f" [{entry.variant.replace('_', '-')}]"
    return ModelInfo(
        kind=kind, family=entry.family, label=label, params=entry.params, weights_bytes=entry.bytes,
        dtype=entry.dtype, quantization=entry.quantization, arch=MappingProxyType(dict(fam.arch)),
        evidence=(f"file name {entry.name!r} is in the catalogue of public files",), source="catalogue",
        path=None, largest_tensor_bytes=0, variant=entry.variant, notes=(entry.source,),
    )


def entries_for_family(family: str) -> list[CatalogueEntry]:
    return [e for e in ENTRIES if e.family == family]

