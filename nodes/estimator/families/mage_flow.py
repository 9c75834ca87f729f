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
  channels, /16. No VAE family this estimator has traced is that class, so its decode / encode working memory
  stays unknown here (sd.py's own memory_used_decode is a reservation, not a measurement); inside ComfyUI with the
  file present it is traced live.

Sampling working memory: not traced; the first-principles DiT formula, labelled "uncalibrated for mage-flow".
"""
from __future__ import annotations

from ._spec import DIFFUSION, VAE, Family, Found, VaeFamily, _r

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


def _detect_vae(v) -> Found | None:
    """sd.py:605: `student.dconv_encoder.proj_out.weight` selects the Mage-VAE."""
    if not v.has("student.dconv_encoder.proj_out.weight"):
        return None
    return Found("vae-mage", dict(FAMILIES["vae-mage"].arch),
                 ("key student.dconv_encoder.proj_out.weight (Mage-VAE, sd.py:605)",))


DETECT = {DIFFUSION: (_detect,), VAE: (_detect_vae,)}
