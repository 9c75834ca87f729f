"""Flux.1 (dev, schnell, Fill, Kontext, Canny / Depth), Chroma, Chroma Radiance and the 16-channel KL VAE."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, TEXT_ENCODER, VAE, LiveVae, VaeFamily, _r, Detector, Found, all_families

ORDER = 110  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
# Parameter counts computed from the full-size architectures (see module docstring).
P_FLUX1_DEV = 11_901_408_320
P_FLUX1_SCHNELL = 11_891_178_560  # dev minus guidance_in (2 x Linear: 256->3072, 3072->3072)
# Diffusers FluxControlNetModel at Flux.1 widths: embedders (x, context, timestep, guidance, pooled text,
# controlnet_x) + num_layers double blocks (339,831,296 each) + num_single_layers single blocks (141,591,808) +
# one zero Linear(3072, 3072) per block (+ num_mode x 3072 for the union mode embedding)
P_FLUX_CN_5_0 = 1_791_605_248
P_FLUX_CN_6_0 = 2_140_876_800
# 4 double + 10 single blocks (InfiniteYou's InfuseNet): 45,247,488 + 4 x 349,271,552 + 10 x (141,591,808 + 9,440,256)
P_FLUX_CN_4_10 = 2_952_654_336
# 6 double blocks, 4 more input channels for the mask (alimama's Inpainting Alpha / Beta: extra_condition_channels 4)
P_FLUX_CN_6_0_INPAINT = P_FLUX_CN_6_0 + 4 * 3072
P_XLABS_CN = 743_807_280  # XLabs Flux ControlNet (2 double blocks), computed: see its catalogue lines
P_AE = 83_819_683  # Flux VAE (16-channel KL, no quant convs)
P_FLUX1_FILL = P_FLUX1_DEV + (384 - 64) * 3072  # img_in takes 384 packed channels (16 latent + 16 masked + 64 mask, x4)
P_FLUX1_CONTROL = P_FLUX1_DEV + (128 - 64) * 3072  # Canny/Depth dev: img_in takes 128 (16 latent + 16 control, x4)
P_CHROMA_RADIANCE = 9_506_156_579  # ComfyUI 0.18.2 ChromaRadiance traced at full size: weight_bytes 19,012,313,158 / 2
P_CHROMA = 8_900_000_000  # lodestones/Chroma model card: 8.9B parameters

_FLUX1 = dict(hidden_size=3072, depth=57, depth_double=19, depth_single=38, heads=24, head_dim=128,
              mlp_ratio=4.0, ffn_dim=12288, in_channels=16, out_channels=16, patch_size=(2, 2),
              context_dim=4096, vec_dim=768, latent_channels=16, spatial_compression=8)

# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # diffusion models
    "flux1-dev": Family(DIFFUSION, "Flux.1 dev (12B)", {**_FLUX1, "guidance_embed": True}),
    "flux1-schnell": Family(DIFFUSION, "Flux.1 schnell (12B)", {**_FLUX1, "guidance_embed": False}),
    "flux1-fill": Family(DIFFUSION, "Flux.1 Fill dev (12B)", {**_FLUX1, "in_channels": 96, "guidance_embed": True}),
    "flux1-kontext": Family(DIFFUSION, "Flux.1 Kontext dev (12B)", {**_FLUX1, "guidance_embed": True}),
    "chroma": Family(DIFFUSION, "Chroma (8.9B)", {**_FLUX1, "guidance_embed": False}),
    # Chroma Radiance (model_detection.py:255-276): Chroma's 19 + 38 blocks of 3072 on 16 px pixel patches, a
    # per-pixel NeRF head; latent = the image [B, 3, H, W]
    "chroma-radiance": Family(DIFFUSION, "Chroma Radiance (9.5B, pixel space)", dict(
        hidden_size=3072, depth=57, depth_double=19, depth_single=38, heads=24, head_dim=128, ffn_dim=12288,
        in_channels=3, out_channels=3, patch_size=(16, 16), context_dim=4096, latent_channels=3,
        spatial_compression=1)),
    "vae-kl16": Family(VAE, "Flux/SD3 VAE (16 ch)", dict(latent_channels=16, spatial_compression=8,
                                                         base_channels=128, channel_mult=(1, 2, 4, 4))),
}

# Families that share another's traced working-memory profile (memory.WORKING_MEMORY_ALIAS)
WORKING_MEMORY_ALIAS = {
    "flux1-schnell": "flux1-dev",
    "flux1-fill": "flux1-dev",
    "flux1-kontext": "flux1-dev",
    "chroma": "flux1-dev",
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "flux": 256,
}

# Traced activations x this = the published peak (memory.ACTIVATION_CALIBRATION; group keys)
CALIBRATION = {
    "flux": 1.75,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "flux1-dev": 3.1,  # Flux:707
    "flux1-schnell": 3.1,  # Flux:707
    "flux1-fill": 3.1,  # Flux:707
    "flux1-kontext": 3.1,  # Flux:707
    "chroma": 3.2,  # :1292
}

# All-in-one checkpoints known from the catalogue: part -> (params, kind, family, label) (resolve.CHECKPOINT_SPLITS)
CHECKPOINT_SPLITS = {
    # Comfy-Org's Flux all-in-one fp8 checkpoints: Flux transformer + T5-XXL + CLIP-L + the Flux VAE
    # (catalogue P_* counts: 11.9B, 4.76B + 0.123B, 83.8M)
    "flux1-dev": {"model": (11_901_408_320, DIFFUSION, "flux1-dev", "Flux.1 dev"),
                  "clip": (4_762_310_656 + 123_060_480, TEXT_ENCODER, "t5-xxl", "T5-XXL + CLIP-L"),
                  "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
    "flux1-schnell": {"model": (11_891_178_560, DIFFUSION, "flux1-schnell", "Flux.1 schnell"),
                      "clip": (4_762_310_656 + 123_060_480, TEXT_ENCODER, "t5-xxl", "T5-XXL + CLIP-L"),
                      "vae": (83_819_683, VAE, "vae-kl16", "Flux VAE")},
}

# Catalogue entries that stand for the whole family (name_infer)
FAMILY_ENTRY = {
    "vae-kl16": "ae.safetensors",
}

# GGUF files of these families have the architecture of another (name_infer)
GGUF_SAME_ARCH = {
    "flux1-kontext": "flux1-dev",
    "flux1-fill": "flux1-dev",
    "flux1-schnell": "flux1-dev",
}

# VAEs priced with the traced VAE constants (vae_memory.FAMILIES)
VAES = (
    # same branch, Flux.1 ae.safetensors / SD3: no quant_conv -> AutoencodingEngine
    VaeFamily("vae-kl16", "KL VAE, 16 channels (Flux.1 / SD3)", 16, 8, None, "AutoencodingEngine",
              LiveVae(("AutoencoderKL", "AutoencodingEngine"), latent_dim=2, plain_decoder=True), kl=True),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"flux(?:[._-]?1)?(?![._-]?[02-9]).*fill|fill.*flux(?![._-]?[02-9])", "flux1-fill", "Flux.1 Fill dev (12B)", P_FLUX1_FILL, f"{_C} P_FLUX1_FILL (computed)"),
        _r(r"kontext", "flux1-kontext", "Flux.1 Kontext dev (12B)", P_FLUX1_DEV, f"{_C} P_FLUX1_DEV (computed)"),
        _r(r"flux(?:[._-]?1)?(?![._-]?[02-9]).*(?:canny|depth)", "flux1-dev", "Flux.1 dev (12B)", P_FLUX1_CONTROL, f"{_C} P_FLUX1_CONTROL (computed)"),
        _r(r"schnell", "flux1-schnell", "Flux.1 schnell (12B)", P_FLUX1_SCHNELL, f"{_C} P_FLUX1_SCHNELL (computed)"),
        _r(r"flux(?:[._-]?1)?(?![._-]?[02-9])|xlabs", "flux1-dev", "Flux.1 dev (12B)", P_FLUX1_DEV, f"{_C} P_FLUX1_DEV (computed)"),
        # Chroma Radiance works in pixel space (ChromaRadiance: 16 px patches and a per-pixel NeRF head): its own table
        _r(r"(?<![a-z])chroma[\w.-]*radiance", "chroma-radiance", "Chroma Radiance (9.5B, pixel space)",
           P_CHROMA_RADIANCE,
           f"{_C} P_CHROMA_RADIANCE (ComfyUI's ChromaRadiance traced at full size)"),
        _r(r"(?<![a-z])chroma(?!xl)", "chroma", "Chroma (8.9B)", P_CHROMA, f"{_C} P_CHROMA (model card)"),
    ),
    VAE: (
        # Z-Image ships the Flux VAE (Comfy-Org/z_image_turbo split_files/vae/ae.safetensors), renamed by some
        _r(r"(?<![a-z])ae(?![a-z])|flux|sd3|z[_-]?image", "vae-kl16", "Flux/SD3 VAE (16 ch)"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _is_ovis_image(v) -> bool:
    """model_detection.py:349-353 (0.33.0): a Flux header with a gated MLP (`img_mlp.gate_proj`, yak_mlp) and a
    `txt_norm` is the "Ovis model" (families/ovis.py)."""
    return v.has("img_in.weight") and v.has("double_blocks.0.img_mlp.gate_proj.weight") and (
        v.has("txt_norm.weight") or v.has("txt_norm.scale"))


def _flux(v, name: str) -> Found:
    ev = ["key double_blocks.0.img_attn.norm.key_norm.scale (Flux family)"]
    flux2 = v.has("double_stream_modulation_img.lin.weight")
    chroma = v.has("distilled_guidance_layer.norms.0.scale") or v.has("distilled_guidance_layer.0.norms.0.scale")
    patch = 1 if flux2 else 2
    arch: dict = {}
    w = v.shape("img_in.weight")
    if w:
        arch["hidden_size"] = w[0]
        arch["in_channels"] = w[1] // (patch * patch)
    t = v.shape("txt_in.weight")
    if t:
        arch["context_dim"] = t[1]
        arch.setdefault("hidden_size", t[0])
    hd = v.dim("double_blocks.0.img_attn.norm.query_norm.scale", 0)
    if hd and arch.get("hidden_size"):
        arch["head_dim"] = hd
        arch["heads"] = arch["hidden_size"] // hd
    dd = v.count_blocks("double_blocks.")
    ds = v.count_blocks("single_blocks.")
    arch.update(depth=dd + ds, depth_double=dd, depth_single=ds)
    mlp = v.dim("double_blocks.0.img_mlp.0.weight", 0)
    if mlp and arch.get("hidden_size"):
        ffn = mlp // 2 if flux2 else mlp  # Flux.2 MLP is gated: first layer is 2 x ffn
        arch["ffn_dim"] = ffn
        arch["mlp_ratio"] = ffn / arch["hidden_size"]
    arch["patch_size"] = (patch, patch)
    variant = None
    if _is_ovis_image(v):
        family = "ovis-image"
        ev.append("keys double_blocks.0.img_mlp.gate_proj.weight + txt_norm (Ovis-Image, model_detection.py:352)")
        arch["guidance_embed"] = v.has("guidance_in.in_layer.weight")
        ffn = v.dim("double_blocks.0.img_mlp.gate_proj.weight", 0)
        if ffn and arch.get("hidden_size"):
            arch.update(ffn_dim=ffn, mlp_ratio=ffn / arch["hidden_size"])
        if arch.get("hidden_size") and not arch.get("heads"):
            arch.update(head_dim=128, heads=arch["hidden_size"] // 128)  # // sum(axes_dim 16, 56, 56): :282, :314
    elif flux2:
        family = "flux2"
        ev.append("key double_stream_modulation_img.lin.weight (Flux.2)")
        arch["guidance_embed"] = v.startswith("guidance_in.")
    elif chroma:
        family = "chroma"
        ev.append("keys distilled_guidance_layer.* (Chroma)")
        arch["in_channels"] = 16
    else:
        guidance = v.has("guidance_in.in_layer.weight")
        arch["guidance_embed"] = guidance
        in_ch = arch.get("in_channels")
        lname = name.lower()
        if in_ch == 96:
            family = "flux1-fill"
            ev.append(f"img_in.weight input width {w[1]} = 96 latent channels x 4 (Flux.1 Fill: image + mask)")
        elif guidance and "kontext" in lname:
            family = "flux1-kontext"
            ev.append("key guidance_in.in_layer.weight (guidance-distilled)")
            ev.append("file name contains 'kontext' (Kontext has the same architecture as dev)")
        elif guidance:
            family = "flux1-dev"
            ev.append("key guidance_in.in_layer.weight (guidance-distilled dev; absent in schnell)")
            if in_ch == 32:
                variant = "control"
                ev.append("img_in.weight input width 128 = 32 channels x 4 (Flux.1 Depth/Canny dev)")
        else:
            family = "flux1-schnell"
            ev.append("no guidance_in.* keys (schnell is not guidance-distilled)")
    arch["out_channels"] = all_families()[family].arch.get("out_channels")
    arch["latent_channels"] = all_families()[family].arch.get("latent_channels")
    return Found(family, arch, tuple(ev), variant)

GGUF_ARCH = {"flux": "flux1-dev", "chroma": "chroma"}  # ComfyUI-GGUF convert.py model type

def _kl16_vae(v) -> Found | None:
    """sd.py:632: a KL VAE with 16 latent channels (Flux.1 / SD3), or HunyuanImage 2.1's 64-channel /32 one; the
    other channel counts are stable_diffusion's."""
    s = v.shape("decoder.conv_in.weight") or ()
    c = s[1] if len(s) > 1 else None
    if c == 16:
        arch = dict(all_families()["vae-kl16"].arch, base_channels=v.dim("encoder.conv_in.weight", 0, 128))
        return Found("vae-kl16", arch, ("decoder.conv_in.weight input 16 channels (Flux/SD3 VAE)",))
    if len(s) == 4 and c == 64:
        return Found("vae-kl16", dict(all_families()["vae-kl16"].arch, latent_channels=64, spatial_compression=32),
                     ("decoder.conv_in.weight input 64 channels (HunyuanImage 2.1 VAE)",), "hunyuan-image")
    return None


DETECT = {DIFFUSION: (Detector(
    keys=(("double_blocks.0.img_attn.norm.key_norm.scale", "img_in.weight"),
          ("double_blocks.0.img_attn.norm.key_norm.scale", "distilled_guidance_layer.norms.0.scale"),
          ("double_blocks.0.img_attn.norm.key_norm.scale", "distilled_guidance_layer.0.norms.0.scale"),
          # an Ovis-Image is a Flux whose key norms may be stored as .weight, with Qwen-Image's txt_norm (:350)
          ("img_in.weight", "double_blocks.0.img_mlp.gate_proj.weight", "txt_norm.weight"),
          ("img_in.weight", "double_blocks.0.img_mlp.gate_proj.weight", "txt_norm.scale")),
    read=lambda v: _flux(v, v.name), order=263),),
          VAE: (Detector(keys=(("decoder.conv_in.weight",),), read=_kl16_vae, order=632,
                         banned=("decoder.up_blocks.2.upsamplers.0.upscale_conv.weight", "bn.running_mean")),)}
