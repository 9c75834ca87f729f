"""OmniGen2."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r, Detector, Found, all_families

ORDER = 70  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_OMNIGEN2 = 3_967_163_400  # ComfyUI 0.18.2 Omnigen2 traced at full size: weight_bytes 7,934,326,800 / 2 (= the published 7.93 GB)


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # OmniGen2 (model_detection.py:646-663, a fixed config; supported_models.Omnigen2): 32 layers of 2520 (21 heads
    # x 120, 7 KV heads, SwiGLU 10240) plus 2 noise, 2 reference-image and 2 context refiner layers; Qwen2.5-VL 3B
    # context (2048); Flux VAE latent, patch 2; reference latents join the image tokens. 3.97B params traced.
    "omnigen2": Family(DIFFUSION, "OmniGen2 (4B)", dict(
        hidden_size=2520, depth=32, heads=21, kv_heads=7, head_dim=120, ffn_dim=10240,
        in_channels=16, out_channels=16, patch_size=(2, 2), context_dim=2048, latent_channels=16,
        spatial_compression=8)),
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "omnigen2": 80,
}

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"omni[_-]?gen[_-]?2", "omnigen2", "OmniGen2 (4B)", P_OMNIGEN2,
           f"{_C} P_OMNIGEN2 (ComfyUI's Omnigen2 traced at full size)"),
    ),
}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
def _omnigen2(v) -> Found:
    """model_detection.py:646-663: this key alone selects OmniGen2, whose config ComfyUI fixes (no shapes read)."""
    arch = dict(all_families()["omnigen2"].arch)
    layers = v.count_blocks("layers.")
    if layers:
        arch["depth"] = layers
    return Found("omnigen2", arch, ("key time_caption_embed.timestep_embedder.linear_1.bias (OmniGen2)",))

# Boogu-Image (an OmniGen2 derivative, model_detection.py:890) has the same key: families/boogu.py takes it
DETECT = {DIFFUSION: (Detector(keys=(("time_caption_embed.timestep_embedder.linear_1.bias",),),
                               banned=("double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight",),
                               read=_omnigen2, order=900),)}
