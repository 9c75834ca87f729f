"""Mage-Flow (Microsoft; ComfyUI 0.33.0's MageFlow) and its own VAE (Mage-VAE): a 12-layer Qwen-Image
double-stream MMDiT at patch size 1 on a Flux.2-shaped latent (128 channels at /16), conditioned on Qwen3-VL 4B
(2560 wide). The edit variants (Mage-Flow-Edit) add reference latents at the output resolution
(TextEncodeMageFlowEdit, graph/packs/nodes_mage.py).

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:944-948: `txt_norm.weight` of 2560 and `proj_out.weight` of 128 rows select it (tested
  before Qwen-Image, whose txt_norm / proj_out are 3584 / 64).
- comfy/supported_models.py:1956-1983 (MageFlow): latent_formats.Flux2, memory_usage_factor 6.5 (:1966),
  bf16 / fp32 only; text encoder Qwen3-VL 4B (comfy/text_encoders/mage_flow.py).
- comfy/ldm/mage_flow/model.py:36-48 (defaults: 128 in / out channels, 12 layers, 24 heads of 128 -> 3072 wide,
  joint_attention_dim 2560), :52 (patch_size 1: one token per latent pixel), :64-74 (QwenImageTransformerBlock:
  comfy/ldm/qwen_image/model.py FeedForward mult 4 -> 12288).
- comfy/sd.py:605-613: the Mage-VAE branch (key `student.dconv_encoder.proj_out.weight`): MageVAE
  (comfy/ldm/mage_flow/vae.py:448-477: a one-step diffusion codec, DConvEncoder + DConvDenoiser), 128 latent
  channels, /16. No VAE family this estimator has traced is that class, so its decode / encode working memory is
  ComfyUI 0.33's own estimate for it (sd.py:614-615: memory_used_encode / memory_used_decode, the memory ComfyUI
  frees before the call; VAE_FORMULAS below), said as "not traced"; inside ComfyUI with the file present it is
  traced live.

Sampling working memory: traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033, data/working_memory.json "mage-flow": model_detection.py:944-949,
QwenImage.extra_conds model_base.py:2472-2490), 8 points (2 with a reference image), fit within 0.76 %.
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, VAE, Family, Found, VaeFamily, _r, Detector

ORDER = 136  # its names ("mage_flow_*") share no pattern with another family's

# The published bf16 files (Comfy-Org Mage-Flow diffusion_models/mage_flow{,_turbo,_edit,_edit_turbo}_bf16
# .safetensors, 8,235,599,790 bytes each in data/template_models.json) / 2 bytes a parameter. The int8 convrot
# files (4,155,380,859 bytes) are the same model with its linears at 1 byte.
P_MAGE_FLOW = 8_235_599_790 // 2
# The published Mage-VAE (mage_flow_vae_bf16.safetensors, 345,086,362 bytes) / 2; ComfyUI drops its Flux.2 anchor
# encoder at load (sd.py:607-608), so what is loaded is a little less.
P_MAGE_VAE = 345_086_362 // 2

FAMILIES = {
    "mage-flow": Family(DIFFUSION, "Mage-Flow (4.1B)", dict(
        hidden_size=3072, depth=12, heads=24, head_dim=128, ffn_dim=12288, in_channels=128, out_channels=128,
        patch_size=(1, 1), context_dim=2560, latent_channels=128, spatial_compression=16)),
    "vae-mage": Family(VAE, "Mage-VAE (128 ch, /16)", dict(latent_channels=128, spatial_compression=16)),
}

# supported_models.py:1966 (0.33.0)
MEMORY_USAGE_FACTOR = {"mage-flow": 6.5}

# Qwen3-VL 4B's last hidden state with the template's leading tokens stripped (text_encoders/mage_flow.py), unpadded:
# a 256-token prompt assumed, as for Qwen-Image
TEXT_TOKENS = {"mage-flow": 256}

VAES = (
    # sd.py:605-613: MageVAE, latent_channels 128, downscale / upscale ratio 16, an image VAE
    VaeFamily("vae-mage", "Mage-VAE (128 ch, /16)", 128, 16, None, "MageVAE (one-step diffusion codec)"),
)

NAME_RULES = {
    DIFFUSION: (
        _r(r"(?<![a-z])mage[_-]?flow", "mage-flow", "Mage-Flow (4.1B)", P_MAGE_FLOW,
           "catalogue P_MAGE_FLOW (the published bf16 file / 2)"),
    ),
    VAE: (
        _r(r"(?<![a-z])mage[_-]?(flow[_-]?)?vae", "vae-mage", "Mage-VAE", P_MAGE_VAE,
           "catalogue P_MAGE_VAE (the published bf16 file / 2)"),
    ),
}


def is_mage_flow(v) -> bool:
    """model_detection.py:944: txt_norm 2560 wide and proj_out of 128 rows (Qwen-Image's are 3584 / 64)."""
    return (v.has("txt_norm.weight") and v.has("proj_out.weight") and v.dim("txt_norm.weight", 0) == 2560
            and v.dim("proj_out.weight", 0) == 128)


def _detect(v) -> Found | None:
    if not (is_mage_flow(v) and v.has("img_in.weight")):
        return None
    arch = dict(FAMILIES["mage-flow"].arch)
    w = v.shape("img_in.weight")
    if w and len(w) == 2:
        arch.update(hidden_size=int(w[0]), heads=max(1, int(w[0]) // 128), in_channels=int(w[1]))
    ffn = v.dim("transformer_blocks.0.img_mlp.net.0.proj.weight", 0)
    if ffn:
        arch["ffn_dim"] = int(ffn)
    arch["depth"] = v.count_blocks("transformer_blocks.") or 12
    return Found("mage-flow", arch, ("keys txt_norm.weight (2560) + proj_out.weight (128 rows) (Mage-Flow, "
                                     "model_detection.py:944)",))


def _read_vae(v) -> Found | None:
    """sd.py:605: `student.dconv_encoder.proj_out.weight` selects the Mage-VAE."""
    return Found("vae-mage", dict(FAMILIES["vae-mage"].arch),
                 ("key student.dconv_encoder.proj_out.weight (Mage-VAE, sd.py:605)",))


DETECT = {
    DIFFUSION: (_detect,),
    VAE: (Detector((("student.dconv_encoder.proj_out.weight",),), _read_vae),),
}


# --- The Mage-VAE's working memory: ComfyUI 0.33's own estimate (comfy/sd.py:605-615), not traced ----------------
# MageVAE (ldm/mage_flow/vae.py:448-477) decodes [B, 128, h, w] latents (sd.py:1229 passes their shape) and encodes
# [B, 3, H, W] pixels (sd.py:1371); working_dtypes [bf16, fp32] (sd.py:613).
MAGE_VAE_DECODE_ELEMENTS = 1000 * 16 * 16  # sd.py:615: 1000 x h x w x 16 x 16 elements
MAGE_VAE_ENCODE_ELEMENTS = 400  # sd.py:614: 400 x H x W elements


def _mage_vae_bytes(op: str, latent, dtype_bytes: int, tiled=None):
    """sd.py:615 decode 1000 x h x w x 256 x dtype, sd.py:614 encode 400 x H x W x dtype, per batch item (the
    lambdas read no batch; ComfyUI runs as many items in one call as fit, sd.py:1230-1233). VAEDecodeTiled: tile_size
    / 16 latent pixels a side, ComfyUI reserves the estimate at one tile (sd.py:1328); a tiled encode reserves it for
    the whole image (sd.py:1427)."""
    if latent.media or latent.is_video:
        return None
    batch = max(1, int(latent.batch))
    if op == "decode":
        h, w = int(latent.height), int(latent.width)
        where = "sd.py:615, 1229: memory_used_decode"
        if tiled:
            size = int(tiled.get("tile_size", 512) or 512) // 16
            h, w = min(h, size), min(w, size)
            where = "sd.py:615, 1328: memory_used_decode at one tile"
        value = MAGE_VAE_DECODE_ELEMENTS * h * w * dtype_bytes * batch
        what = f"{w}×{h} latent{' (one tile)' if tiled else ''}"
    else:
        h = int(latent.pixel_height or latent.height * 16)
        w = int(latent.pixel_width or latent.width * 16)
        value = MAGE_VAE_ENCODE_ELEMENTS * h * w * dtype_bytes * batch
        where = "sd.py:614, 1371: memory_used_encode" + (", the whole image for a tiled encode (sd.py:1427)"
                                                         if tiled else "")
        what = f"{w}×{h} px"
    return math.ceil(value), (f"{what} × batch {batch}: ComfyUI 0.33's own estimate for the Mage-VAE (MageVAE, "
                              f"{where}), not traced; {dtype_bytes}-byte working dtype")


VAE_FORMULAS = {"vae-mage": _mage_vae_bytes}
