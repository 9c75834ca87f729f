"""IP-Adapter files (h94/IP-Adapter, models/ipadapter) as ComfyUI_IPAdapter_plus builds them.

Sizes by the node pack's own layout (IPAdapterPlus.py class IPAdapter, image_proj_models.py): ``ip_layers`` holds a
to_k_ip and a to_v_ip linear (no bias) from the image tokens' width to each cross-attention layer's width, for the
16 cross-attention layers of SD1.5 and the 70 of SDXL (the patch loops of ipadapter_execute); ``image_proj`` is a
linear + LayerNorm to 4 tokens (ImageProjModel), a 4-layer perceiver Resampler to 16 tokens (plus, plus-face) or an
MLP (full-face). At 16 bit: 44.6 / 98.2 / 43.6 / 46.2 MB for SD1.5 base / plus / full-face / ViT-G, 698 / 703 /
848 MB for SDXL ViT-H / ViT-bigG / plus (computed; a file present is read from its header), the sizes
ComfyUI-Manager's model list gives for h94's files (tests/test_ipadapter_plus.py). The composition adapters have
the plus layout. FaceID, portrait, Kolors and Flux files have other layouts: priced from their header only.
"""
from __future__ import annotations

from ._spec import IPADAPTER, Family, _r

ORDER = 185  # "ip-adapter" / "ipadapter" names share no pattern with another family's name rules

# cross-attention widths, in the order ipadapter_execute patches them (IPAdapterPlus.py:504-537)
SD15_LAYERS = (320, 320, 640, 640, 1280, 1280) + (1280, 1280, 1280, 640, 640, 640, 320, 320, 320) + (1280,)
SDXL_LAYERS = (640,) * 4 + (1280,) * 20 + (1280,) * 30 + (640,) * 6 + (1280,) * 10


def ip_layers(context: int, widths: tuple[int, ...]) -> int:
    """to_k_ip + to_v_ip of every cross-attention layer: Linear(context -> width, bias=False) twice."""
    return sum(2 * context * w for w in widths)


def resampler(dim: int, heads: int, embedding: int, output: int, queries: int = 16, depth: int = 4,
              dim_head: int = 64, ff_mult: int = 4) -> int:
    """image_proj_models.Resampler: latents, proj_in / proj_out (bias), norm_out, and per layer a
    PerceiverAttention (2 LayerNorms, to_q / to_kv / to_out without bias) and a FeedForward (LayerNorm, two
    bias-less linears)."""
    inner = dim_head * heads
    layer = (4 * dim + dim * inner * 4) + (2 * dim + 2 * dim * dim * ff_mult)
    return queries * dim + (embedding * dim + dim) + (dim * output + output) + 2 * output + depth * layer


def image_proj(clip: int, context: int, tokens: int = 4) -> int:
    """ImageProjModel: Linear(clip -> tokens x context) + LayerNorm(context)."""
    return clip * tokens * context + tokens * context + 2 * context


def mlp_proj(clip: int, context: int) -> int:
    """MLPProjModel (full-face): Linear(clip, clip), GELU, Linear(clip, context), LayerNorm(context)."""
    return clip * clip + clip + clip * context + context + 2 * context


# image embeddings: CLIP ViT-H/14's projection 1024 and penultimate hidden state 1280; ViT-bigG/14's projection 1280
P_IPA_SD15 = ip_layers(768, SD15_LAYERS) + image_proj(1024, 768)
P_IPA_SD15_VIT_G = ip_layers(768, SD15_LAYERS) + image_proj(1280, 768)
P_IPA_SD15_PLUS = ip_layers(768, SD15_LAYERS) + resampler(768, 12, 1280, 768)
P_IPA_SD15_FULL_FACE = ip_layers(768, SD15_LAYERS) + mlp_proj(1280, 768)
P_IPA_SDXL_VIT_H = ip_layers(2048, SDXL_LAYERS) + image_proj(1024, 2048)
P_IPA_SDXL = ip_layers(2048, SDXL_LAYERS) + image_proj(1280, 2048)
P_IPA_SDXL_PLUS = ip_layers(2048, SDXL_LAYERS) + resampler(1280, 20, 1280, 2048)

FAMILIES = {"ip-adapter-sd15": Family(IPADAPTER, "IP-Adapter SD1.5", {}),
            "ip-adapter-sdxl": Family(IPADAPTER, "IP-Adapter SDXL", {}),
            "ip-adapter": Family(IPADAPTER, "IP-Adapter", {})}

_S = "families/ip_adapter.py"
NAME_RULES = {
    IPADAPTER: (
        # other layouts (insightface embeddings, LoRA layers, Kolors' 4096-wide context): the header prices them
        _r(r"faceid|portrait|kolors|instantx|flux|sd3", "ip-adapter", "IP-Adapter (a FaceID, portrait or "
           "community layout)"),
        _r(r"plus.*sdxl|sdxl.*plus", "ip-adapter-sdxl", "IP-Adapter SDXL plus", P_IPA_SDXL_PLUS,
           f"{_S} P_IPA_SDXL_PLUS"),
        _r(r"sdxl.*vit.?h|vit.?h.*sdxl", "ip-adapter-sdxl", "IP-Adapter SDXL (ViT-H)", P_IPA_SDXL_VIT_H,
           f"{_S} P_IPA_SDXL_VIT_H"),
        _r(r"sdxl", "ip-adapter-sdxl", "IP-Adapter SDXL (ViT-bigG)", P_IPA_SDXL, f"{_S} P_IPA_SDXL"),
        _r(r"full.?face", "ip-adapter-sd15", "IP-Adapter SD1.5 full-face", P_IPA_SD15_FULL_FACE,
           f"{_S} P_IPA_SD15_FULL_FACE"),
        _r(r"plus", "ip-adapter-sd15", "IP-Adapter SD1.5 plus", P_IPA_SD15_PLUS, f"{_S} P_IPA_SD15_PLUS"),
        _r(r"vit.?g", "ip-adapter-sd15", "IP-Adapter SD1.5 (ViT-bigG)", P_IPA_SD15_VIT_G, f"{_S} P_IPA_SD15_VIT_G"),
        _r(r"sd15|sd1\.?5|ip.?adapter", "ip-adapter-sd15", "IP-Adapter SD1.5", P_IPA_SD15, f"{_S} P_IPA_SD15"),
    ),
}
