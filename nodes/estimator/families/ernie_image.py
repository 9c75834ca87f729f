"""ERNIE-Image (Baidu; ComfyUI 0.33.0's ErnieImage): a single-stream DiT on the Flux.2 latent (128 channels
at /16, patch 1), conditioned on a Ministral 3B text encoder (3072 wide).

Sources, ComfyUI 0.33.0: comfy/model_detection.py:1112-1115 (the key that selects it), comfy/supported_models.py
:2316-2343 (latent_formats.Flux2, memory_usage_factor 10.0, bf16 / fp32 only), comfy/ldm/ernie/model.py:193-224
(ErnieImageModel defaults: hidden 4096, 32 heads of 128, 36 layers, SwiGLU FFN 12288, in_channels 128,
patch 1, text_in_dim 3072). Its sampling working memory is not traced yet (no data/working_memory.json entry):
the estimator prices it with its first-principles DiT formula from these numbers, times the default calibration
(1.6), and says so ("uncalibrated for ernie-image"); inside ComfyUI with the file present it is traced live.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, Found, _r

ORDER = 115  # after Flux.1: its name shares no pattern with another family's

# The published bf16 file (Comfy-Org/ERNIE-Image diffusion_models/ernie-image.safetensors, 16,063,177,687 bytes in
# data/template_models.json) / 2 bytes a parameter
P_ERNIE_IMAGE = 16_063_177_687 // 2

FAMILIES = {
    "ernie-image": Family(DIFFUSION, "ERNIE-Image (8B)", dict(
        hidden_size=4096, depth=36, heads=32, head_dim=128, ffn_dim=12288, in_channels=128, out_channels=128,
        patch_size=(1, 1), context_dim=3072, latent_channels=128, spatial_compression=16)),
}

# supported_models.py:2326 (0.33.0)
MEMORY_USAGE_FACTOR = {"ernie-image": 10.0}

# an LLM-encoded family without padding: a 256-token templated prompt assumed (as Z-Image / Lumina 2)
TEXT_TOKENS = {"ernie-image": 256}

NAME_RULES = {
    DIFFUSION: (
        _r(r"ernie[_-]?image", "ernie-image", "ERNIE-Image (8B)", P_ERNIE_IMAGE,
           "catalogue P_ERNIE_IMAGE (the published bf16 file / 2)"),
    ),
}


def _detect(v) -> Found | None:
    """model_detection.py:1112: `layers.0.mlp.linear_fc2.weight` selects ErnieImage (its config is the model's
    defaults); the file's shapes give the width, the FFN and the depth."""
    fc2 = v.shape("layers.0.mlp.linear_fc2.weight")
    if fc2 is None or len(fc2) != 2 or not v.has("layers.0.mlp.gate_proj.weight"):
        return None
    arch = dict(FAMILIES["ernie-image"].arch)
    hidden, ffn = int(fc2[0]), int(fc2[1])
    arch.update(hidden_size=hidden, ffn_dim=ffn, heads=max(1, hidden // 128), depth=v.count_blocks("layers.") or 36)
    return Found("ernie-image", arch, ("key layers.0.mlp.linear_fc2.weight (ERNIE-Image, model_detection.py:1112)",))


DETECT = {DIFFUSION: (_detect,)}
