"""Microsoft Lens (ComfyUI 0.33.0's Lens): a 48-layer dual-stream MMDiT of 1536 (24 heads of 64, SwiGLU 4096 per
stream) on the Flux.2 latent (128 channels at /16, one token per latent pixel), conditioned on four GPT-OSS-20B
hidden layers (2880 wide each).

Sources, ComfyUI 0.33.0: comfy/model_detection.py:920-941 (the keys `transformer_blocks.0.attn.norm_added_q.weight`
+ `transformer_blocks.0.img_mlp.w1.weight` select it; heads = img_in width / 64, depth and the text width are read
from the file), comfy/supported_models.py:841-872 (class Lens: latent_formats.Flux2, memory_usage_factor 4.0,
bf16 / fp32 only, GPT-OSS-20B text encoder), comfy/ldm/lens/model.py:298-360 (LensTransformer2DModel defaults:
in_channels 128, 48 layers, 24 heads of 64, enc_hidden_dim 2880, 4 selected text layers) and :213 (SwiGLU width
int(1536 / 3 * 8) = 4096); its forward (:384-385) takes the 128-channel latent as h*w tokens, no patchify.
No traced working-memory entry: the first-principles DiT formula prices it ("uncalibrated for lens").
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, Found, _r, Detector

ORDER = 126

# The published bf16 file (Comfy-Org/Lens diffusion_models/lens_bf16.safetensors and lens_turbo_bf16, 8,203,387,535
# bytes each in data/template_models.json) / 2 bytes a parameter. (ComfyUI 0.33's LensTransformer2DModel built at
# the defaults above counts 4,104,225,152, 0.06 % more than the file holds.)
P_LENS = 8_203_387_535 // 2

FAMILIES = {
    "lens": Family(DIFFUSION, "Lens (4.1B)", dict(
        hidden_size=1536, depth=48, heads=24, head_dim=64, ffn_dim=4096, in_channels=128, out_channels=128,
        patch_size=(1, 1), context_dim=2880, latent_channels=128, spatial_compression=16)),
}

# supported_models.py:855 (0.33.0)
MEMORY_USAGE_FACTOR = {"lens": 4.0}

# GPT-OSS-20B encodes the prompt without padding (text_encoders/gpt_oss.py): a 256-token templated prompt assumed
TEXT_TOKENS = {"lens": 256}

NAME_RULES = {
    DIFFUSION: (
        # "lens" alone is an ordinary word: the rule wants it as the name's first word (lens_bf16, lens_turbo_bf16)
        _r(r"(?:^|[/\\])lens(?:[_-]turbo)?[_.-]", "lens", "Lens (4.1B)", P_LENS,
           "catalogue P_LENS (the published bf16 file / 2)"),
    ),
}


def _read(v) -> Found | None:
    """model_detection.py:920-941: dual-stream blocks with added-key norms and a SwiGLU `img_mlp.w1`; `img_in.weight`
    gives the width (heads of 64) and the input channels, `txt_norm[.0].weight` the text feature width."""
    img_in = v.shape("img_in.weight")
    if img_in is None or len(img_in) != 2:
        return None
    arch = dict(FAMILIES["lens"].arch)
    hidden = int(img_in[0])
    arch.update(hidden_size=hidden, heads=max(1, hidden // 64), in_channels=int(img_in[1]),
                depth=v.count_blocks("transformer_blocks.") or 48)
    ffn = v.dim("transformer_blocks.0.img_mlp.w1.weight", 0)
    if ffn:
        arch["ffn_dim"] = ffn
    ctx = v.dim("txt_norm.0.weight", 0) or v.dim("txt_norm.weight", 0)
    if ctx:
        arch["context_dim"] = ctx
    return Found("lens", arch, ("keys transformer_blocks.0.attn.norm_added_q.weight + img_mlp.w1.weight "
                                "(Lens, model_detection.py:920)",))


DETECT = {
    DIFFUSION: (Detector((("transformer_blocks.0.attn.norm_added_q.weight",
                            "transformer_blocks.0.img_mlp.w1.weight"),),
                         _read),),
}
