"""CogVideoX (THUDM; native in ComfyUI 0.33.0 as comfy/ldm/cogvideo) and the models built on it: CogVideoX-Fun
(aigc-apps VideoX-Fun) and Netflix's VOID inpainting passes (Comfy-Org void-model). An expert-adaptive DiT: the
video tokens (16-channel latent at /8 spatial, /4 temporal, 2x2 patches; CogVideoX 1.5 also 2 latent frames a
patch) and the T5-XXL text tokens (padded to 226) run joined through every block (full 3D attention), 64-wide heads.

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:642-685: the key `blocks.0.norm1.linear.weight` selects it; heads = its rows / 6 / 64,
  layers counted, `patch_embed.proj.weight` a Conv2d (1.0: in_channels = its columns) or a Linear (1.5: patch_size_t
  2, in_channels = columns / 8); no `patch_embed.pos_embedding` -> rotary positions.
- comfy/supported_models.py:2397-2463: CogVideoX_T2V / _I2V (in_channels 32) / _Inpaint (48), the BASE
  memory_usage_factor 2.0, T5-XXL text encoder (text_encoders/cogvideo.py: padded to 226 tokens).
- comfy/ldm/cogvideo/model.py: CogVideoXTransformer3DModel (30 heads / 30 layers for 2B, 48 / 42 for 5B;
  feed-forward 4 x dim; :450-451 pads the latent frames to the temporal patch).
- comfy/sd.py:776-787: the CogVideoX VAE (keys `decoder.conv_in.conv.weight` + `decoder.mid_block.resnets.0.norm1.
  norm_layer.weight`), AutoencoderKLCogVideoX, 16 latent channels, /8 and /4 (4k+1 pixel frames).

Counts: ComfyUI 0.33.0's classes built on the meta device at the published configs, every state-dict tensor counted.
They match the published files: CogVideoX-2b's transformer 3.39 GB fp16, CogVideoX-5b's 11.1 GB bf16, the VOID
passes 11,142,925,568 bytes (10.38 GiB, data/template_models.json: the Fun-V1.5 inpaint layout, 48 input channels),
the VAE 431 MB (cogvideox_vae.safetensors 411.2 MiB).

Working memory: traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033,
data/working_memory.json "cogvideox-2b" / "cogvideox-5b" / "cogvideox1.5-5b", 7 points each); the VAE's decode and
encode likewise (bench/trace_vae_memory.py, data/vae_memory.json "vae-cogvideox": the rolling decode, which moves
each finished 4-frame chunk to the host and puts the whole clip back on the device at the end).
"""
from __future__ import annotations

from ._spec import DIFFUSION, VAE, Detector, Family, Found, VaeFamily, _r

ORDER = 137  # names with "cogvideo" or VOID's "void_pass": no other family's rules contain them

# ComfyUI 0.33.0's CogVideoXTransformer3DModel on the meta device, state dict counted (bench notes above)
P_COGVIDEOX_2B = 1_693_783_872
P_COGVIDEOX_5B = 5_570_283_072
P_COGVIDEOX_5B_I2V = 5_625_087_552  # in_channels 32 and the learned positional table (a persistent buffer)
P_COGVIDEOX15_5B = 5_570_676_352
P_COGVIDEOX15_5B_I2V = 5_571_594_880  # in_channels 32 and the OFS embedding
P_COGVIDEOX15_5B_INP = 5_571_462_784  # CogVideoX-Fun V1.5 InP / VOID: in_channels 48
P_VAE_COGVIDEOX = 215_583_907  # AutoencoderKLCogVideoX(latent_channels=16)


def _arch(hidden: int, depth: int, in_channels: int, patch=(1, 2, 2)) -> dict:
    return dict(hidden_size=hidden, depth=depth, heads=hidden // 64, head_dim=64, ffn_dim=4 * hidden,
                in_channels=in_channels, out_channels=16, patch_size=patch, context_dim=4096, latent_channels=16,
                spatial_compression=8, temporal_compression=4)


FAMILIES = {
    "cogvideox-2b": Family(DIFFUSION, "CogVideoX 2B", _arch(1920, 30, 16)),
    "cogvideox-5b": Family(DIFFUSION, "CogVideoX 5B", _arch(3072, 42, 16)),
    "cogvideox1.5-5b": Family(DIFFUSION, "CogVideoX 1.5 5B", _arch(3072, 42, 16, (2, 2, 2))),
    "vae-cogvideox": Family(VAE, "CogVideoX VAE", dict(latent_channels=16, spatial_compression=8,
                                                       temporal_compression=4)),
}

# supported_models_base.BASE.memory_usage_factor (0.33.0): CogVideoX_T2V sets none
MEMORY_USAGE_FACTOR = {"cogvideox-2b": 2.0, "cogvideox-5b": 2.0, "cogvideox1.5-5b": 2.0}

# text_encoders/cogvideo.py: CogVideoXT5Tokenizer pads the prompt to 226 T5 tokens
TEXT_TOKENS = {"cogvideox-2b": 226, "cogvideox-5b": 226, "cogvideox1.5-5b": 226}

VAES = (
    # sd.py:776-787: AutoencoderKLCogVideoX, 16 latent channels, /8, 4 pixel frames a latent frame (4k+1)
    VaeFamily("vae-cogvideox", "CogVideoX VAE", 16, 8, 4, "AutoencoderKLCogVideoX"),
)

_COG = r"cog[_ -]?video[_ -]?x"
_V15 = r"(?=.*(?<![\d.])1[._]?5(?!\d))(?=.*5b)"  # "1.5" / "1_5" anywhere with "5b" (kijai names "5b-1.5")
_I2V = r"(?=.*(i2v|img2vid|image|interpolation))"
NAME_RULES = {
    DIFFUSION: (
        _r(_COG + r"(?=.*fun)" + _V15 + r"|(?<![a-z])void[_-]?pass[_-]?[12]", "cogvideox1.5-5b",
           "CogVideoX-Fun 1.5 5B InP", P_COGVIDEOX15_5B_INP,
           "families/cogvideox.py P_COGVIDEOX15_5B_INP (ComfyUI 0.33's class, 48 input channels; the published "
           "VOID passes are this count at 2 bytes)"),
        _r(_COG + _V15 + _I2V, "cogvideox1.5-5b", "CogVideoX 1.5 5B I2V", P_COGVIDEOX15_5B_I2V,
           "families/cogvideox.py P_COGVIDEOX15_5B_I2V (ComfyUI 0.33's class at the published config)"),
        _r(_COG + _V15, "cogvideox1.5-5b", "CogVideoX 1.5 5B", P_COGVIDEOX15_5B,
           "families/cogvideox.py P_COGVIDEOX15_5B (ComfyUI 0.33's class at the published config)"),
        _r(_COG + r"(?=.*5b)" + _I2V, "cogvideox-5b", "CogVideoX 5B I2V", P_COGVIDEOX_5B_I2V,
           "families/cogvideox.py P_COGVIDEOX_5B_I2V (ComfyUI 0.33's class at the published config)"),
        _r(_COG + r".*5b", "cogvideox-5b", "CogVideoX 5B", P_COGVIDEOX_5B,
           "families/cogvideox.py P_COGVIDEOX_5B (ComfyUI 0.33's class at the published config)"),
        _r(_COG + r".*2b", "cogvideox-2b", "CogVideoX 2B", P_COGVIDEOX_2B,
           "families/cogvideox.py P_COGVIDEOX_2B (ComfyUI 0.33's class at the published config)"),
    ),
    VAE: (
        _r(_COG + r".*vae|(?<![a-z])void[_-]?vae", "vae-cogvideox", "CogVideoX VAE", P_VAE_COGVIDEOX,
           "families/cogvideox.py P_VAE_COGVIDEOX (ComfyUI 0.33's AutoencoderKLCogVideoX)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:642-685: heads from the norm1 modulation, layers counted, the patch embedding's rank says
    1.0 (Conv2d) or 1.5 (Linear over 2 frames)."""
    rows = v.dim("blocks.0.norm1.linear.weight", 0)
    proj = v.shape("patch_embed.proj.weight")
    if not rows or not proj:
        return None
    hidden = int(rows) // 6
    depth = v.count_blocks("blocks.") or (42 if hidden >= 3072 else 30)
    if len(proj) == 2:  # CogVideoX 1.5
        fam, arch = "cogvideox1.5-5b", _arch(hidden, depth, int(proj[1]) // 8, (2, 2, 2))
    else:
        fam = "cogvideox-5b" if hidden >= 3072 else "cogvideox-2b"
        arch = _arch(hidden, depth, int(proj[1]))
    return Found(fam, arch, (f"key blocks.0.norm1.linear.weight ({hidden} wide, {depth} blocks; CogVideoX "
                             f"{'1.5' if len(proj) == 2 else '1.0'}, model_detection.py:642)",))


def _read_vae(v) -> Found | None:
    """sd.py:776: the CogVideoX VAE's decoder keys."""
    return Found("vae-cogvideox", dict(FAMILIES["vae-cogvideox"].arch),
                 ("keys decoder.conv_in.conv.weight + decoder.mid_block.resnets.0.norm1.norm_layer.weight "
                  "(CogVideoX VAE, sd.py:776)",))


DETECT = {
    DIFFUSION: (Detector((("blocks.0.norm1.linear.weight", "patch_embed.proj.weight"),), _read, order=642),),
    VAE: (Detector((("decoder.conv_in.conv.weight", "decoder.mid_block.resnets.0.norm1.norm_layer.weight"),),
                   _read_vae, order=776),),
}
