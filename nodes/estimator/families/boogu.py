"""Boogu-Image 0.1 (ComfyUI 0.33.0's Boogu, an OmniGen2 derivative): 8 dual-stream blocks (joint instruction/image
attention plus image self-attention) then 32 single-stream blocks, all 3360 wide (28 query heads, 7 KV heads of
120, SwiGLU 13568), after OmniGen2's 2 noise, 2 reference-image and 2 context refiner blocks; Flux VAE latent
(16 channels at /8, 2x2 patches); conditioned on Qwen3-VL 8B (4096 wide). The edit model's reference latents
(TextEncodeBooguEdit, graph/packs/nodes_boogu.py) are patch-embedded next to the image's and attended over with it.

Sources, ComfyUI 0.33.0: comfy/model_detection.py:890-898 (the key
`double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight` selects it, checked before OmniGen2's; width,
layer counts and the instruction width are read from the file), comfy/supported_models.py:1868-1887 (class
Boogu(Omnigen2): memory_usage_factor 2.15, Omnigen2's latent_formats.Flux), comfy/ldm/boogu/model.py:171-249
(BooguTransformer2DModel defaults: hidden 3360, 32 layers, 8 double-stream layers, 2 refiner layers, 28 heads,
7 KV heads, multiple_of 256, instruction_feat_dim 4096, patch 2, in_channels 16) and
comfy/ldm/omnigen/omnigen2.py:73-78 (LuminaFeedForward: 4 x 3360 rounded up to a multiple of 256 = 13568).
No traced working-memory entry: the first-principles DiT formula prices it ("uncalibrated for boogu").
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, Found, _r, Detector

ORDER = 127

# Computed from the architecture: ComfyUI 0.33.0's BooguTransformer2DModel built at its defaults on the meta device,
# every state-dict tensor counted. The published fp8 files (boogu_image_edit_fp8_scaled / boogu_image_turbo_fp8_scaled
# 10,318,658,929 bytes, boogu_image_edit_int8_convrot 11,370,925,916; data/template_models.json) are 1 byte a weight
# plus their scales and 16-bit norms.
P_BOOGU = 10_292_556_288

FAMILIES = {
    "boogu": Family(DIFFUSION, "Boogu-Image 0.1 (10.3B)", dict(
        hidden_size=3360, depth=40, depth_double=8, depth_single=32, heads=28, kv_heads=7,
        head_dim=120, ffn_dim=13568, in_channels=16, out_channels=16, patch_size=(2, 2), context_dim=4096,
        latent_channels=16, spatial_compression=8)),
}

# supported_models.py:1878 (0.33.0)
MEMORY_USAGE_FACTOR = {"boogu": 2.15}

# Qwen3-VL 8B without padding (text_encoders/boogu.py): a 256-token templated prompt assumed, as for Qwen-Image
TEXT_TOKENS = {"boogu": 256}

NAME_RULES = {
    DIFFUSION: (
        _r(r"boogu", "boogu", "Boogu-Image 0.1 (10.3B)", P_BOOGU,
           "catalogue P_BOOGU (ComfyUI 0.33's BooguTransformer2DModel at its defaults, computed)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:890-898: the dual-stream instruction attention selects Boogu; `x_embedder.weight` gives the
    width, the block counts the depth, `time_caption_embed.caption_embedder.0.weight` the instruction width.
    (families/detect.py lets such a header past its OmniGen2 test, as ComfyUI checks Boogu first.)"""
    arch = dict(FAMILIES["boogu"].arch)
    x = v.shape("x_embedder.weight")
    if x and len(x) == 2:
        hidden = int(x[0])
        arch.update(hidden_size=hidden, in_channels=int(x[1]) // 4, heads=max(1, hidden // 120))
    single, double = v.count_blocks("single_stream_layers."), v.count_blocks("double_stream_layers.")
    if single or double:
        arch.update(depth=single + double, depth_single=single, depth_double=double)
    kv = v.dim("single_stream_layers.0.attn.to_k.weight", 0)
    if kv:
        arch["kv_heads"] = max(1, kv // 120)
    ffn = v.dim("single_stream_layers.0.feed_forward.linear_1.weight", 0)
    if ffn:
        arch["ffn_dim"] = ffn
    ctx = v.dim("time_caption_embed.caption_embedder.0.weight", 0)
    if ctx:
        arch["context_dim"] = ctx
    return Found("boogu", arch, ("key double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight "
                                 "(Boogu-Image, model_detection.py:890)",))


DETECT = {
    DIFFUSION: (Detector((("double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight",),), _read),),
}
