"""Stable Diffusion UNets: 1.5, 2.x, XL (and Pony / Illustrious), Lotus, Stable Video Diffusion; the 4-channel KL VAE."""
from __future__ import annotations

from ._spec import (CLIP_VISION, CONTROLNET, DIFFUSION, Family, TEXT_ENCODER, VAE, LiveVae, VaeFamily, _r, Detector,
                   Found, all_families)

ORDER = 150  # name rules of a lower ORDER are tried first (specific before general)

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_SD15 = 859_520_964 + 123_060_480 + 83_653_863  # UNet + CLIP-L text + VAE
P_SDXL = 2_567_463_684 + 123_060_480 + 694_659_841 + 83_653_863  # UNet + CLIP-L + CLIP-G (OpenCLIP) + VAE
# A full ControlNet (the UNet's encoder copy, its zero convs and hint block; not a Control-LoRA, T2I-Adapter or a
# "small" / "mid" one): ComfyUI-Manager's model list (data/manager_models.json) sizes the 17 full SD1.5 ones it
# offers in fp16 at 722.6 MB each and the 14 full SDXL ones in fp16 at 2.50 GB (the 5 fp32 at 5.00 GB): bytes / 2.
# ComfyUI loads a non-fp8 ControlNet in the UNet's 16-bit dtype (comfy/controlnet.py:489-500 controlnet_config ->
# model_management.unet_dtype), so its card share is this count x 2 whatever the file holds.
P_SD15_CN = 361_300_000
P_SDXL_CN = 1_250_000_000


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "controlnet-sd15": Family(CONTROLNET, "SD 1.5 ControlNet", {}),
    "controlnet-sdxl": Family(CONTROLNET, "SDXL ControlNet", {}),
    "sd15": Family(DIFFUSION, "Stable Diffusion 1.5", dict(
        model_channels=320, hidden_size=320, channel_mult=(1, 2, 4, 4), transformer_depth=(1, 1, 1, 0), depth=16,
        heads=8, head_dim=None, context_dim=768, in_channels=4, out_channels=4, latent_channels=4,
        spatial_compression=8)),
    "sd2": Family(DIFFUSION, "Stable Diffusion 2.x", dict(
        model_channels=320, hidden_size=320, channel_mult=(1, 2, 4, 4), transformer_depth=(1, 1, 1, 0), depth=16,
        heads=None, head_dim=64, context_dim=1024, in_channels=4, out_channels=4, latent_channels=4,
        spatial_compression=8)),
    # Lotus depth / normal (jingheya/lotus): an SD 2 UNet with a 4-wide task embedding (supported_models.LotusD)
    "lotus-d": Family(DIFFUSION, "Lotus (SD 2 UNet)", dict(
        model_channels=320, hidden_size=320, channel_mult=(1, 2, 4, 4), transformer_depth=(1, 1, 1, 0), depth=16,
        heads=None, head_dim=64, context_dim=1024, in_channels=4, out_channels=4, latent_channels=4,
        spatial_compression=8, adm_in_channels=4)),
    "sdxl": Family(DIFFUSION, "Stable Diffusion XL", dict(
        model_channels=320, hidden_size=320, channel_mult=(1, 2, 4), transformer_depth=(0, 2, 10), depth=70,
        heads=None, head_dim=64, context_dim=2048, adm_in_channels=2816, in_channels=4, out_channels=4,
        latent_channels=4, spatial_compression=8)),
    # Stable Video Diffusion (SVD_img2vid, supported_models.py:301-318): SD 2-style UNet with temporal layers;
    # the frames are the batch, 4-channel SD latent /8, a CLIP-ViT-H image embedding as the context
    "svd": Family(DIFFUSION, "Stable Video Diffusion (1.5B UNet)", dict(
        model_channels=320, hidden_size=320, channel_mult=(1, 2, 4, 4), transformer_depth=(1, 1, 1, 0), depth=16,
        heads=None, head_dim=64, context_dim=1024, in_channels=8, out_channels=4, latent_channels=4,
        spatial_compression=8)),
    # VAEs (comfy/sd.py VAE.__init__ branches)
    "vae-kl4": Family(VAE, "SD/SDXL VAE (4 ch)", dict(latent_channels=4, spatial_compression=8, base_channels=128,
                                                      channel_mult=(1, 2, 4, 4))),
    "vae-svd": Family(VAE, "Stable Video Diffusion VAE", dict(latent_channels=4, spatial_compression=8)),
}

# Families that share another's traced working-memory profile (memory.WORKING_MEMORY_ALIAS)
WORKING_MEMORY_ALIAS = {
    "sd2": "sd15",
    "lotus-d": "sd15",
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "lotus-d": 2,
    "svd": 1,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "sd15": 1.0,  # SD15:48 SD20:95 SDXL:198 SD3:545
    "sd2": 1.0,  # SD15:48 SD20:95 SDXL:198 SD3:545
    "sdxl": 0.8,  # SD15:48 SD20:95 SDXL:198 SD3:545
}

# All-in-one checkpoints known from the catalogue: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    "sd15": {"model": (859_520_964, DIFFUSION, "sd15", "SD 1.5 UNet"), "clip": (123_060_480, TEXT_ENCODER, "clip-l", "CLIP-L"),
             "vae": (83_653_863, VAE, "vae-kl4", "SD VAE")},
    "sdxl": {"model": (2_567_463_684, DIFFUSION, "sdxl", "SDXL UNet"),
             "clip": (817_720_321, TEXT_ENCODER, "clip-g", "CLIP-L + CLIP-G"),
             "vae": (83_653_863, VAE, "vae-kl4", "SDXL VAE")},
    # Stable Video Diffusion (svd_xt, fp32): the UNet (1,524,627,120 traced), CLIP-ViT-H with projection
    # (632,076,800) and the temporal VAE (97,742,775); the published 9.56 GB holds ~136M more (not split out)
    "svd": {"model": (1_524_627_120, DIFFUSION, "svd", "SVD UNet"),
            "clip_vision": (632_076_800, CLIP_VISION, "clip-vision", "CLIP-ViT-H image encoder"),
            "vae": (97_742_775, VAE, "vae-svd", "SVD temporal VAE")},
}

# Catalogue entries that stand for the whole family (name_infer)
FAMILY_ENTRY = {
    "vae-kl4": "vae-ft-mse-840000-ema-pruned.safetensors",
}

# VAEs priced with the traced VAE constants (vae_memory.FAMILIES)
VAES = (
    # sd.py:408-433, SD1.x/SD2.x/SDXL files have (post_)quant_conv -> AutoencoderKL
    VaeFamily("vae-kl4", "KL VAE, 4 channels (SD 1.x / SDXL)", 4, 8, None, "AutoencoderKL",
              LiveVae(("AutoencoderKL", "AutoencodingEngine"), latent_dim=2, plain_decoder=True), kl=True),
    # 0.18.2 sd.py:472-479: SVD's KL encoder + temporal VideoDecoder; the frames are the batch (mixed in one call)
    VaeFamily("vae-svd", "Stable Video Diffusion VAE (temporal decoder)", 4, 8, None, "AutoencodingEngine (VideoDecoder)"),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
_NOT_FULL_CN = r"^(?!.*(?:lora|rank\d|dim\d|t2i|adapter|small|mid|lllite|brushnet|powerpaint|ip[_-]?adapter))"
# community SDXL fine-tunes say "XL" as a suffix: juggernautXL_v8, RealVisXL_V4.0, realvisxlV40, Formula-XL, cosxl
_SDXL = r"sd[_-]?xl|sdxl|pony|illustrious|(?<![a-z])(?<!pixart-)(?<!pixart_)xl(?![a-z])|[a-z]xl(?=[_\-. ]|v\d|$)"
_SD15 = r"sd[_-]?1[._-]?5|v1-5|(?<![a-z])sd15"
NAME_RULES = {
    # a ControlNet whose name says its base model and no lighter layout: the full layout, the largest (said so)
    CONTROLNET: (
        _r(_NOT_FULL_CN + f".*(?:{_SDXL})", "controlnet-sdxl", "SDXL ControlNet", P_SDXL_CN,
           "P_SDXL_CN (ComfyUI-Manager's full SDXL ControlNets)", largest=True),
        _r(_NOT_FULL_CN + f".*(?:{_SD15})", "controlnet-sd15", "SD 1.5 ControlNet", P_SD15_CN,
           "P_SD15_CN (ComfyUI-Manager's full SD1.5 ControlNets)", largest=True),
    ),
    DIFFUSION: (
        _r(r"lotus[_-]?(?:depth|normal)", "lotus-d", "Lotus (SD 2 UNet)"),
        # Stable Video Diffusion's checkpoints (svd.safetensors, svd_xt.safetensors, svd_xt_1_1.safetensors)
        _r(r"(?:^|/)svd(?:[_-]?xt)?(?:[_-]1[_.]1)?(?![a-z])", "svd", "Stable Video Diffusion", 1_524_627_120,
           "resolve.CHECKPOINT_SPLITS (SVD UNet)"),
        _r(_SDXL, "sdxl", "Stable Diffusion XL", 2_567_463_684, "resolve.CHECKPOINT_SPLITS (SDXL UNet)"),
        _r(_SD15, "sd15", "Stable Diffusion 1.5", 859_520_964, "resolve.CHECKPOINT_SPLITS (SD1.5 UNet)"),
    ),
    VAE: (
        _r(r"sdxl|sd_xl|ft[_-]mse|sd[_-]?1[._]?5|kl[_-]f8", "vae-kl4", "SD/SDXL VAE (4 ch)"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _sd_unet(v) -> Found:
    w = v.shape("input_blocks.0.0.weight") or (320, 4, 3, 3)
    mc, in_ch = w[0], w[1]
    out_ch = v.dim("out.2.weight", 0, 4)
    context = None
    n_transformers = 0
    per_block: dict[int, int] = {}  # input block -> transformer blocks in it
    for group in ("input_blocks", "middle_block", "output_blocks"):
        for k in v.groups.get(group, ()):
            if k.endswith(".attn2.to_k.weight") and ".transformer_blocks." in k:
                n_transformers += 1
                t = v.t[k]
                if group == "input_blocks":
                    if context is None:
                        context = t.shape[1] if len(t.shape) > 1 else None
                    parts = k.split(".")
                    if parts[1].isdecimal():
                        per_block[int(parts[1])] = per_block.get(int(parts[1]), 0) + 1
    if context is None:
        s = v.shape("middle_block.1.transformer_blocks.0.attn2.to_k.weight")
        context = s[1] if s else None
    adm = v.dim("label_emb.0.0.weight", 1)
    # transformer depth per input res block, as model_detection.calculate_transformer_depth lists it
    depths = [per_block.get(i, 0) for i in range(1, v.count_blocks("input_blocks."))
              if v.has(f"input_blocks.{i}.0.in_layers.0.weight")]
    ev = ["key input_blocks.0.0.weight (UNet)"]
    variant = None
    if adm is not None and (adm == 2816 or (context == 2048 and adm)):
        family = "sdxl"
        ev.append(f"label_emb.0.0.weight width {adm} with context {context} (SDXL)")
    elif adm == 2560:
        family, variant = "sdxl", "refiner"
        ev.append("label_emb width 2560 (SDXL refiner)")
    elif context == 1024 and adm == 4:
        # ComfyUI's LotusD (model_detection.py:1047 of 0.18.2): SD 2 UNet, adm_in_channels 4 (the task embedding)
        family = "lotus-d"
        ev.append("label_emb.0.0.weight width 4 with context 1024 (Lotus depth/normal, SD 2 UNet)")
    elif context == 1024:
        family = "sd2"
        ev.append("cross-attention context width 1024 (SD 2.x, OpenCLIP ViT-H)")
        if adm:
            variant = "unclip"
    elif context == 768:
        family = "sd15"
        ev.append("cross-attention context width 768 (SD 1.x, CLIP-L)")
    else:
        family = "sdxl" if adm else "sd15"
        ev.append(f"unusual context width {context}: closest family by structure")
    if in_ch == 9:
        variant = "inpaint"
    arch = dict(model_channels=mc, hidden_size=mc, in_channels=in_ch, out_channels=out_ch, context_dim=context,
                transformer_depth=tuple(depths), depth=n_transformers, adm_in_channels=adm,
                latent_channels=4, spatial_compression=8, head_dim=all_families()[family].arch.get("head_dim"),
                heads=all_families()[family].arch.get("heads"))
    return Found(family, arch, tuple(ev), variant)

GGUF_ARCH = {"sd1": "sd15", "sdxl": "sdxl"}  # ComfyUI-GGUF convert.py model type

def _kl_vae(v) -> Found | None:
    """sd.py:632: a KL VAE with 4 latent channels (SD 1.x / SDXL: the keys cannot tell them apart), or another
    count than flux1's 16 / 64."""
    s = v.shape("decoder.conv_in.weight") or ()
    c = s[1] if len(s) > 1 else None
    base = v.dim("encoder.conv_in.weight", 0, 128)
    if c == 16 or (len(s) == 4 and c == 64):
        return None  # flux1's
    if c == 4 or c is None:
        ev = ["decoder.conv_in.weight input 4 channels (SD/SDXL VAE; the two cannot be told apart by keys)"]
        if v.has("decoder.up_blocks.0.resnets.0.norm1.weight"):
            ev.append("diffusers key layout")
        return Found("vae-kl4", dict(all_families()["vae-kl4"].arch, base_channels=base), tuple(ev))
    arch = dict(all_families()["vae-kl4"].arch, latent_channels=c, base_channels=base)
    return Found("vae-kl4" if c < 16 else "vae-kl16", arch, (f"decoder.conv_in.weight input {c} channels (KL VAE)",))


DETECT = {DIFFUSION: (Detector(keys=(("input_blocks.0.0.weight",),), read=_sd_unet, order=1144),),
          VAE: (Detector(keys=(("decoder.conv_in.weight",),), read=_kl_vae, order=632,
                         banned=("decoder.up_blocks.2.upsamplers.0.upscale_conv.weight", "bn.running_mean")),)}
