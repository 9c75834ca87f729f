"""Ovis-Image 7B (AIDC-AI; in ComfyUI 0.33.0 a Flux variant): Flux's layout at 3072 wide (24 heads of 128) with
6 double-stream and 27 single-stream blocks, a gated (SwiGLU, "yak") MLP of 12288 in the double blocks, an RMSNorm
on the 2048-wide Ovis 2.5 (Qwen3 2B) text features, no guidance embedding; Flux VAE latent (16 channels at /8,
2x2 patches).

Sources, ComfyUI 0.33.0: comfy/model_detection.py:263-353 (the Flux test; `double_blocks.0.img_mlp.gate_proj.weight`
sets yak_mlp and `txt_norm.*` sets txt_norm, both together are "Ovis model" at :352; width, context width and
block counts are read from the file's shapes), comfy/ldm/flux/layers.py:60-76 (YakMLP: gate / up / down of
int(3072 x 4.0) = 12288) and :276-304 (single blocks), comfy/ldm/flux/model.py:98-101 (txt_norm),
comfy/supported_models.py:734-746 / :783 (Flux / FluxSchnell: latent_formats.Flux, memory_usage_factor 3.1).
The block counts and widths are the published model's: ComfyUI's Flux built with them (6 + 27 blocks, 3072, text
2048) counts 7,370,449,728 parameters, 2 bytes each 14,740,899,456 bytes, which is the published bf16 file
(ovis_image_bf16.safetensors, 14,742,475,244 bytes in data/template_models.json) less its header.
Its own module, not families/flux1.py: neither the depth nor the MLP is Flux.1's, so Flux.1's traced working memory
does not apply. Sampling working memory traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033, data/working_memory.json "ovis-image": model_detection.py:263-353, Flux.extra_conds
model_base.py:1024-1055, no mask), 6 points, fit within 0.001 %.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 130

# Computed (above): ComfyUI 0.33.0's Flux at Ovis-Image's config on the meta device, every state-dict tensor counted
P_OVIS_IMAGE = 7_370_449_728

FAMILIES = {
    "ovis-image": Family(DIFFUSION, "Ovis-Image (7.4B)", dict(
        hidden_size=3072, depth=33, depth_double=6, depth_single=27, heads=24, head_dim=128, mlp_ratio=4.0,
        ffn_dim=12288, in_channels=16, out_channels=16, patch_size=(2, 2), context_dim=2048, latent_channels=16,
        spatial_compression=8, guidance_embed=False)),
}

# supported_models.py:746 (Flux's, which FluxSchnell inherits; 0.33.0)
MEMORY_USAGE_FACTOR = {"ovis-image": 3.1}

# text_encoders/ovis.py:11 pads the templated prompt to min_length 284 tokens and OvisTEModel (:37-54) cuts the
# system template off the front (28 tokens in the published pipeline): about 256 tokens reach the model
TEXT_TOKENS = {"ovis-image": 256}

NAME_RULES = {
    DIFFUSION: (
        # "ovis_2.5" is the text encoder (another kind); the diffusion model is named ovis_image / ovis-image
        _r(r"ovis[_-]?image", "ovis-image", "Ovis-Image (7.4B)", P_OVIS_IMAGE,
           "catalogue P_OVIS_IMAGE (ComfyUI 0.33's Flux at Ovis-Image's config, computed; = the bf16 file / 2)"),
    ),
}
