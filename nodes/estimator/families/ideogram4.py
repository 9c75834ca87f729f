"""Ideogram 4 (ComfyUI 0.33.0's Ideogram4): a single-stream DiT of 4608 (18 heads of 256, SwiGLU 12288, 34 layers)
over a packed [text, image] sequence on the Flux.2 latent (128 channels at /16: the 32-channel VAE's 2x2 patches,
one token per latent pixel), conditioned on Qwen3-VL 8B hidden states (53248 features). Its templates run two
such models: the conditional one and an "unconditional" one (image tokens only) through DualModelGuider
(graph/packs/nodes_ideogram4.py), each called on its own batch.

Sources, ComfyUI 0.33.0: comfy/model_detection.py:963-968 (the key `embed_image_indicator.weight` selects it;
input channels and layer count are read from the file), comfy/supported_models.py:1889-1926 (class Ideogram4:
memory_usage_factor 11.6, unet_extra_config 18 heads of 256, intermediate 12288, llm_features_dim 53248;
latent_formats.Flux2; bf16 / fp32 only), comfy/ldm/ideogram4/model.py:221-246 (Ideogram4Transformer2DModel
defaults: in_channels 128, num_layers 34) and :243-247 (the image tokens are the latent's pixels).
No traced working-memory entry: the first-principles DiT formula prices it ("uncalibrated for ideogram4").
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, Found, _r, Detector

ORDER = 128

# Computed from the architecture: ComfyUI 0.33.0's Ideogram4Transformer2DModel at supported_models' config and 34
# layers, built on the meta device, every state-dict tensor counted. The published files are priced by their own
# sizes (ideogram4[_unconditional]_fp8_scaled 9,277,129,359 bytes, ..._int8_convrot 9,588,514,488;
# data/template_models.json).
P_IDEOGRAM4 = 9_279_288_448

FAMILIES = {
    "ideogram4": Family(DIFFUSION, "Ideogram 4 (9.3B)", dict(
        hidden_size=4608, depth=34, heads=18, head_dim=256, ffn_dim=12288, in_channels=128, out_channels=128,
        patch_size=(1, 1), context_dim=53248, latent_channels=128, spatial_compression=16)),
}

# supported_models.py:1899 (0.33.0)
MEMORY_USAGE_FACTOR = {"ideogram4": 11.6}

# Qwen3-VL 8B without padding (text_encoders/ideogram4.py:19-25, min_length 1): a 256-token prompt assumed
TEXT_TOKENS = {"ideogram4": 256}

NAME_RULES = {
    DIFFUSION: (
        _r(r"ideogram[_-]?4", "ideogram4", "Ideogram 4 (9.3B)", P_IDEOGRAM4,
           "catalogue P_IDEOGRAM4 (ComfyUI 0.33's Ideogram4Transformer2DModel at 34 layers, computed)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:963-968: `embed_image_indicator.weight` selects Ideogram 4; `input_proj.weight` gives the
    width and the input channels, the `layers.` blocks the depth."""
    proj = v.shape("input_proj.weight")
    if proj is None or len(proj) != 2:
        return None
    arch = dict(FAMILIES["ideogram4"].arch)
    hidden = int(proj[0])
    arch.update(hidden_size=hidden, in_channels=int(proj[1]), heads=max(1, hidden // 256),
                depth=v.count_blocks("layers.") or 34)
    ffn = v.dim("layers.0.feed_forward.w1.weight", 0)
    if ffn:
        arch["ffn_dim"] = ffn
    return Found("ideogram4", arch, ("key embed_image_indicator.weight (Ideogram 4, model_detection.py:963)",))


DETECT = {
    DIFFUSION: (Detector((("embed_image_indicator.weight",),), _read),),
}
