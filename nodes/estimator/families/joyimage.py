"""JoyAI-Image-Edit (JD; ComfyUI 0.33.0's JoyImage): a 40-block dual-stream MMDiT of 4096 (32 heads of 128, GELU
MLP 16384 per stream) on the Wan 2.1 latent (16 channels at /8, (1, 2, 2) patches), conditioned on Qwen3-VL 8B
(4096 wide). The reference latents TextEncodeJoyImageEdit makes (graph/packs/nodes_joyimage.py) are patchified and
concatenated to the image tokens (comfy/ldm/joyimage/model.py:395-404).

Sources: ComfyUI 0.33.0 comfy/model_detection.py:1124-1139 (the keys `double_blocks.0.attn.img_attn_qkv.weight`,
`img_attn_q_norm`, `condition_embedder.time_embedder.linear_1.weight` and a 5-D `img_in.weight` select it; width,
patch, heads and depth are read from the file), comfy/supported_models.py:2014-2044 (class JoyImage:
latent_formats.Wan21, memory_usage_factor 1.8, bf16 / fp32), comfy/ldm/joyimage/model.py:132-160 (blocks: MLP
int(dim x mlp_width_ratio)) and :246-310. ComfyUI's class defaults (hidden 3072, 20 layers) are not the published
model's: the width and depth here are the published model's own config, jd-opensource/JoyAI-Image
joyai_image_comfyui/configs/transformer/config.json (hidden_size 4096, num_attention_heads 32, num_layers 40,
mlp_width_ratio 4.0, patch_size [1, 2, 2], in_channels 16, text_dim 4096), which the published int8 file's size
agrees with (16,428,249,907 bytes for 16.26B parameters at 1 byte each plus scales).
Sampling working memory traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033, data/working_memory.json "joyimage":
model_detection.py:1125-1142, model_base.py:2519-2527, reference latents concatenated), 8 points (2 with a reference
image), fit within 0.024 %.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, Found, _r, Detector

ORDER = 129

# Computed from the architecture: ComfyUI 0.33.0's JoyImageTransformer3DModel built with the config above (hidden
# 4096, 32 heads, 40 layers, in/out 16) on the meta device, every state-dict tensor counted.
P_JOYIMAGE = 16_263_675_968

FAMILIES = {
    "joyimage": Family(DIFFUSION, "JoyAI-Image-Edit (16.3B)", dict(
        hidden_size=4096, depth=40, heads=32, head_dim=128, ffn_dim=16384, in_channels=16, out_channels=16,
        patch_size=(1, 2, 2), context_dim=4096, latent_channels=16, spatial_compression=8)),
}

# supported_models.py:2024 (0.33.0)
MEMORY_USAGE_FACTOR = {"joyimage": 1.8}

# Qwen3-VL 8B without padding (text_encoders/joyimage.py): a 256-token templated prompt assumed, as for Qwen-Image
TEXT_TOKENS = {"joyimage": 256}

NAME_RULES = {
    DIFFUSION: (
        _r(r"joy[_-]?(?:ai[_-]?)?image", "joyimage", "JoyAI-Image-Edit (16.3B)", P_JOYIMAGE,
           "catalogue P_JOYIMAGE (ComfyUI 0.33's JoyImageTransformer3DModel at the published config, computed)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:1124-1139: the dual-stream qkv + q-norm keys, the condition embedder and a 5-D (Conv3d)
    `img_in.weight`: out = width, in = channels, kernel = patch; heads = width / the q-norm's head width."""
    img_in = v.shape("img_in.weight")
    if img_in is None or len(img_in) != 5:
        return None
    arch = dict(FAMILIES["joyimage"].arch)
    hidden, head_dim = int(img_in[0]), v.dim("double_blocks.0.attn.img_attn_q_norm.weight", 0) or 128
    arch.update(hidden_size=hidden, in_channels=int(img_in[1]), patch_size=tuple(int(p) for p in img_in[2:]),
                head_dim=head_dim, heads=max(1, hidden // head_dim), depth=v.count_blocks("double_blocks.") or 40)
    ffn = v.dim("double_blocks.0.img_mlp.net.0.proj.weight", 0)
    if ffn:
        arch["ffn_dim"] = ffn
    return Found("joyimage", arch, ("keys double_blocks.0.attn.img_attn_qkv.weight + condition_embedder.* + 5-D "
                                    "img_in.weight (JoyImage, model_detection.py:1124)",))


DETECT = {
    DIFFUSION: (Detector((("double_blocks.0.attn.img_attn_qkv.weight",
                            "double_blocks.0.attn.img_attn_q_norm.weight",
                            "condition_embedder.time_embedder.linear_1.weight"),),
                         _read),),
}
