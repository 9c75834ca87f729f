"""Krea 2 (K2; ComfyUI 0.33.0's Krea2): a single-stream DiT of 6144 wide (48 query heads, 12 KV heads of 128,
SwiGLU 16384, 28 blocks) on the Wan 2.1 / Qwen-Image latent (16 channels at /8, 2x2 patches), conditioned on a
12-layer stack of Qwen3-VL 4B hidden states fused by a small text transformer.

Sources, ComfyUI 0.33.0: comfy/model_detection.py:970-982 (the key `txtfusion.projector.weight` selects it; the
widths, depth and heads are read from the file's shapes), comfy/supported_models.py:1928-1953 (class Krea2:
latent_formats.Wan21, memory_usage_factor 2.2, bf16 / fp16 / fp32, Qwen3-VL 4B text encoder),
comfy/ldm/krea2/model.py:233-275 (SingleStreamDiT defaults: features 6144, heads 48, kvheads 12, multiplier 4,
layers 28, patch 2, channels 16, txtdim 2560, txtlayers 12) and :48-56 (SwiGLU width int(2*6144/3)*4 = 16384).
Reference latents (the style-reference template's TextEncodeQwenImageEditPlus) join the image tokens
(model.py:310-330). No traced working-memory entry: the first-principles DiT formula prices it ("uncalibrated
for krea2"); inside ComfyUI with the file present it is traced live.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, Found, _r, Detector

ORDER = 125  # no other family's name rule contains "krea2" (Flux.1 Krea dev is not named "krea2")

# Computed from the architecture: ComfyUI 0.33.0's SingleStreamDiT built at its defaults (above) on the meta
# device, every state-dict tensor counted (12,818,591,756 of them in 2-D weights). The published files:
# krea2_turbo_fp8_scaled 13,142,599,926 bytes, krea2_turbo_int8_convrot 13,496,934,728 (data/template_models.json).
P_KREA2 = 12_820_073_036

FAMILIES = {
    "krea2": Family(DIFFUSION, "Krea 2 (12.8B)", dict(
        hidden_size=6144, depth=28, heads=48, kv_heads=12, head_dim=128, ffn_dim=16384, in_channels=16,
        out_channels=16, patch_size=(2, 2), context_dim=2560, latent_channels=16,
        spatial_compression=8)),
}

# supported_models.py:1938 (0.33.0)
MEMORY_USAGE_FACTOR = {"krea2": 2.2}

# a Qwen3-VL encoded prompt without padding (text_encoders/krea2.py): a 256-token templated prompt assumed, as
# for Qwen-Image, which uses the same kind of encoder
TEXT_TOKENS = {"krea2": 256}

NAME_RULES = {
    DIFFUSION: (
        _r(r"krea[_-]?2(?!\d)", "krea2", "Krea 2 (12.8B)", P_KREA2,
           "catalogue P_KREA2 (ComfyUI 0.33's SingleStreamDiT at its defaults, computed)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:970-983: `txtfusion.projector.weight` selects Krea 2; `first.weight` gives the width and
    the input channels (/ patch 2x2), `blocks.0.attn.wq` / `wk` the query and KV heads of 128."""
    first = v.shape("first.weight")
    if first is None or len(first) != 2:
        return None
    arch = dict(FAMILIES["krea2"].arch)
    hidden = int(first[0])
    arch.update(hidden_size=hidden, in_channels=int(first[1]) // 4, depth=v.count_blocks("blocks.") or 28)
    wq, wk = v.dim("blocks.0.attn.wq.weight", 0), v.dim("blocks.0.attn.wk.weight", 0)
    if wq:
        arch["heads"] = wq // 128
    if wk:
        arch["kv_heads"] = wk // 128
    ffn = v.dim("blocks.0.mlp.gate.weight", 0)
    if ffn:
        arch["ffn_dim"] = ffn
    txtdim = v.dim("txtfusion.layerwise_blocks.0.prenorm.scale", 0)
    if txtdim:
        arch["context_dim"] = txtdim
    return Found("krea2", arch, ("key txtfusion.projector.weight (Krea 2, model_detection.py:970)",))


DETECT = {
    DIFFUSION: (Detector((("txtfusion.projector.weight",),), _read),),
}
