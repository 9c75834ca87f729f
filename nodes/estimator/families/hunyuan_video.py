"""HunyuanVideo, HunyuanVideo 1.5 (and Capybara, its architecture) and their VAEs."""
from __future__ import annotations

import re

from ._spec import DIFFUSION, Family, VAE, LiveVae, VaeFamily, _r, Detector, Found, all_families

ORDER = 20  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_HUNYUAN_VIDEO = 12_800_000_000  # hunyuan_video_t2v_720p_bf16.safetensors 25.6 GB / 2 (model card: 13B)
P_HUNYUAN_VIDEO_15 = 8_300_000_000  # tencent/HunyuanVideo-1.5 model card: 8.3B parameters


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "hunyuan-video": Family(DIFFUSION, "HunyuanVideo (13B)", dict(
        hidden_size=3072, depth=60, depth_double=20, depth_single=40, heads=24, head_dim=128, mlp_ratio=4.0,
        ffn_dim=12288, in_channels=16, out_channels=16, patch_size=(1, 2, 2), context_dim=4096,
        latent_channels=16, spatial_compression=8, temporal_compression=4)),
    "hunyuan-video-1.5": Family(DIFFUSION, "HunyuanVideo 1.5 (8.3B)", dict(
        hidden_size=2048, depth=54, depth_double=54, depth_single=0, heads=16, head_dim=128, mlp_ratio=4.0,
        ffn_dim=8192, in_channels=32, out_channels=32, patch_size=(1, 1, 1), context_dim=3584, latent_channels=32,
        spatial_compression=16, temporal_compression=4)),
    "vae-hunyuan": Family(VAE, "HunyuanVideo VAE", dict(latent_channels=16, spatial_compression=8,
                                                        temporal_compression=4, base_channels=128)),
    "vae-hunyuan15": Family(VAE, "HunyuanVideo 1.5 VAE", dict(latent_channels=32, spatial_compression=16,
                                                             temporal_compression=4)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "hunyuan-video": 256,
    "hunyuan-video-1.5": 256,
}

# Traced activations x this = the published peak (memory.ACTIVATION_CALIBRATION; group keys)
# ComfyUI's own eager code (no TorchCompileModel): the eager factor measured on the nearest architecture, Flux's
# double/single-stream MMDiT (1.75, flux1.py); kijai/ComfyUI-HunyuanVideoWrapper#189: "without torch.compile it
# will oom, in both comfy native and this wrapper" where the compiled run took ~22 GB.
CALIBRATION = {
    "hunyuan-video": 1.75,
}
# Under torch.compile (a TorchCompileModel node): ~22 GB at 960x544x129 on a 4090 (the same thread)
COMPILED_CALIBRATION = {
    "hunyuan-video": 1.6,
}

# memory_usage_factor (comfy/supported_models.py) (runtime.MEMORY_USAGE_FACTOR)
MEMORY_USAGE_FACTOR = {
    "hunyuan-video": 1.8,
}

# Catalogue entries that stand for the whole family (name_infer)
FAMILY_ENTRY = {
    "vae-hunyuan": "hunyuan_video_vae_bf16.safetensors",
}

# One family id, several traced configurations: (family, arch key, value, traced entry) (memory.ARCH_ROUTES)
ARCH_ROUTES = (
    ("hunyuan-video", "latent_channels", 32, "hunyuan-video-1.5"),
    ("hunyuan-video", "latent_channels", 64, "hunyuan-image-2.1"),
)

# VAEs priced with the traced VAE constants (vae_memory.FAMILIES)
# a VAE file name -> (latent channels, spatial /, temporal /) for a node whose latent depends on its VAE (comfy/sd.py
# VAE.__init__; a guess by name, said as such): registry.VAE_NAME_GEOMETRY, tried in ORDER
VAE_NAME_GEOMETRY = (
    (re.compile(r"hunyuan.?video.?1[._]?5|hunyuanvideo15"), (32, 16, 4)),
    (re.compile(r"hunyuan.?video"), (16, 8, 4)),
)
VAES = (
    # sd.py:503-518 (AutoencoderKL with conv3d, time_compress 4)
    VaeFamily("vae-hunyuan", "HunyuanVideo VAE", 16, 8, 4, "AutoencoderKL (conv3d)",
              LiveVae(("AutoencoderKL", "AutoencodingEngine"), latent_dim=3, plain_decoder=True)),
    # 0.18.2 sd.py:631-647: HunyuanVideo 1.5 / Capybara (32 ch, 16x spatial, 4x temporal)
    VaeFamily("vae-hunyuan15", "HunyuanVideo 1.5 VAE", 32, 16, 4, "AutoencodingEngine (HunyuanVideo 1.5)"),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"hunyuan[_-]?video[_-]?1[._]?5|hunyuanvideo15", "hunyuan-video-1.5", "HunyuanVideo 1.5", P_HUNYUAN_VIDEO_15, f"{_C} P_HUNYUAN_VIDEO_15 (model card)"),
        _r(r"hunyuan[_-]?video|hyvid|skyreels.*hunyuan", "hunyuan-video", "HunyuanVideo (13B)", P_HUNYUAN_VIDEO, f"{_C} P_HUNYUAN_VIDEO (25.6 GB bf16 listing / 2)"),
        # Capybara: ComfyUI 0.18.2 detects it as HunyuanVideo15 (no code of its own; same 54 double blocks)
        _r(r"capybara", "hunyuan-video-1.5", "Capybara (HunyuanVideo 1.5 architecture, 8.3B)", P_HUNYUAN_VIDEO_15,
           f"{_C} P_HUNYUAN_VIDEO_15 (model card)"),
    ),
    VAE: (
        _r(r"hunyuan[_-]?video[_-]?1[._]?5|hunyuanvideo15", "vae-hunyuan15", "HunyuanVideo 1.5 VAE"),
        _r(r"hunyuan[_-]?video[_-]?vae|hunyuan_video", "vae-hunyuan", "HunyuanVideo VAE"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _hunyuan_video(v) -> Found:
    w = v.shape("img_in.proj.weight") or ()
    ev = ["key txt_in.individual_token_refiner.blocks.0.norm1.weight (HunyuanVideo)"]
    dd, ds = v.count_blocks("double_blocks."), v.count_blocks("single_blocks.")
    hidden = w[0] if w else None
    arch = dict(hidden_size=hidden, depth=dd + ds, depth_double=dd, depth_single=ds,
                heads=max(1, hidden // 128) if hidden else None, head_dim=128, in_channels=w[1] if len(w) > 1 else None,
                patch_size=tuple(w[2:]) if len(w) > 2 else None, context_dim=v.dim("txt_in.input_embedder.weight", 1),
                mlp_ratio=4.0, latent_channels=16, spatial_compression=8, temporal_compression=4)
    variant = None
    if len(w) == 4:
        variant = "image-2.1"
        ev.append("img_in.proj.weight is 4-D (HunyuanImage 2.1)")
        arch.update(temporal_compression=None, latent_channels=64, spatial_compression=32)
    elif v.has("vision_in.proj.0.weight"):
        variant = "1.5"
        ev.append("key vision_in.proj.0.weight (HunyuanVideo 1.5)")
        arch.update(latent_channels=32, spatial_compression=16)
    elif arch["in_channels"] == 32:
        variant = "i2v"
    return Found("hunyuan-video", arch, tuple(ev), variant)

GGUF_ARCH = {"hyvid": "hunyuan-video"}  # ComfyUI-GGUF convert.py model type

def _hunyuan_vae(v) -> Found:
    """sd.py:759 (32 latent channels: HunyuanVideo 1.5, /16) and :787 (HunyuanVideo)."""
    c = v.dim("decoder.conv_in.conv.weight", 1)
    if c != 32 and v.has("decoder.mid_block.resnets.0.norm1.norm_layer.weight"):
        return None  # sd.py:776, tested before :787: the CogVideoX VAE (families/cogvideox.py)
    arch = dict(all_families()["vae-hunyuan"].arch)
    variant = None
    if c == 32:
        arch.update(latent_channels=32, spatial_compression=16)
        variant = "1.5"
    return Found("vae-hunyuan", arch, (f"key decoder.conv_in.conv.weight ({c} latent channels, HunyuanVideo VAE)",),
                 variant)


DETECT = {DIFFUSION: (Detector(keys=(("txt_in.individual_token_refiner.blocks.0.norm1.weight",),), read=_hunyuan_video,
                               order=211),),
          VAE: (Detector(keys=(("decoder.conv_in.conv.weight",),), read=_hunyuan_vae, order=759),)}
