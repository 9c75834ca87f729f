"""PuLID for Flux and SDXL (guozinan/PuLID, models/pulid) and the EVA02-CLIP-L vision tower they encode the face
with, as the node packs build them: ComfyUI-PuLID-Flux (balazik, pulidflux.py / encoders_flux.py at its HEAD; the
Enhanced fork by sipie800 builds the same modules) and PuLID_ComfyUI (cubiq, pulid.py / encoders.py, SDXL).

Counts by the pack's own layout (the derivation is the functions below):
- PulidFluxModel: an IDFormer (encoders_flux.py IDFormer: dim 1024, depth 10, 16 heads of 64, 5 id tokens,
  32 queries, output 2048, FF x4; five ViT-feature mappings and the ArcFace id mapping) and 20
  PerceiverAttentionCA blocks (19 // 2 + 38 // 4 = 18, + 1 + 1 for the remainders: pulidflux.py PulidFluxModel),
  each dim 3072, 16 heads of 128, kv_dim 2048. 571,238,400 parameters: 1.142 GB at 16 bit, the 1.14 GB
  ComfyUI-Manager's model list gives for pulid_flux_v0.9.1.safetensors (tests/test_pulid_flux.py).
- PuLID SDXL (cubiq PulidModel): an IDEncoder (encoders.py: width 1280 -> 5 tokens of 2048, five CLS and five
  patch mappings from 1024) and to_k_ip / to_v_ip for SDXL's 70 cross-attention layers from 2048 (To_KV built from
  the file's ip_adapter keys, the layers ComfyUI_IPAdapter_plus patches too): 395,673,600 parameters, 791 MB at 16
  bit. PulidModel also keeps the loaded state dict, but as a plain dict on the CPU: .to(device) moves the modules.
- EVA02-CLIP-L-14-336's visual tower (eva_clip/model_configs/EVA02-CLIP-L-14-336.json: width 1024, 24 layers,
  head width 64, mlp_ratio 2.6667 SwiGLU with sub-LN, patch 14 at 336 px, embed_dim 768): 304,432,832 parameters.
  open_clip downloads it to the Hugging Face cache, not to a ComfyUI folder, so it is priced by this count.
ApplyPulidFlux moves both to the GPU in the Flux model's dtype (pulidflux.py ApplyPulidFlux.apply_pulid_flux:
eva_clip.to(device, dtype), pulid_flux.to(device, dtype)), where they stay while the patched model samples.
"""
from __future__ import annotations

from ._spec import PULID, Family, _r
from .ip_adapter import SDXL_LAYERS, ip_layers

ORDER = 186  # "pulid" / "eva02" names share no pattern with another family's name rules


def linear(i: int, o: int, bias: bool = True) -> int:
    return i * o + (o if bias else 0)


def perceiver_attention(dim: int, dim_head: int, heads: int, kv_dim: int | None = None) -> int:
    """encoders_flux.py PerceiverAttention / PerceiverAttentionCA: two LayerNorms, to_q, to_kv, to_out (no bias)."""
    inner, kv = dim_head * heads, kv_dim or dim
    return 2 * kv + 2 * dim + linear(dim, inner, False) + linear(kv, 2 * inner, False) + linear(inner, dim, False)


def id_former(dim: int = 1024, depth: int = 10, dim_head: int = 64, heads: int = 16, num_id_token: int = 5,
              num_queries: int = 32, output_dim: int = 2048, ff_mult: int = 4) -> int:
    """encoders_flux.py IDFormer: latents, proj_out, depth x (PerceiverAttention + FeedForward), five ViT-feature
    mappings (Linear, LN, Linear, LN, Linear from 1024) and the id-embedding mapping (from ArcFace's 1280)."""
    ff = 2 * dim + linear(dim, dim * ff_mult, False) + linear(dim * ff_mult, dim, False)
    layers = depth * (perceiver_attention(dim, dim_head, heads) + ff)
    mapping = linear(1024, 1024) + 2048 + linear(1024, 1024) + 2048 + linear(1024, dim)
    id_mapping = linear(1280, 1024) + 2048 + linear(1024, 1024) + 2048 + linear(1024, dim * num_id_token)
    return num_queries * dim + dim * output_dim + layers + 5 * mapping + id_mapping


def eva_visual(width: int = 1024, layers: int = 24, head_width: int = 64, mlp_ratio: float = 2.6667,
               patch: int = 14, image: int = 336, embed_dim: int = 768) -> int:
    """eva_clip eva_vit_model.py EVAVisionTransformer with rope, sub-LN and SwiGLU: patch conv, class token,
    positions, per block (norm1, q / k / v with q and v biases, inner LN, proj; norm2, SwiGLU w1 / w2 / ffn_ln / w3),
    the final norm and the head to the embedding."""
    hidden = int(width * mlp_ratio)
    attn = 3 * width * width + 2 * width + 2 * width + linear(width, width)
    mlp = 2 * linear(width, hidden) + 2 * hidden + linear(hidden, width)
    block = 2 * width + attn + 2 * width + mlp
    positions = (image // patch) ** 2 + 1
    return (3 * patch * patch * width + width) + width + positions * width + layers * block + 2 * width + \
        linear(width, embed_dim)


def id_encoder(width: int = 1280, context_dim: int = 2048, num_token: int = 5) -> int:
    """encoders.py IDEncoder: the body (Linear, LN, Linear, LN, Linear to num_token x context) and five CLS and five
    patch mappings (Linear, LN, Linear, LN, Linear from 1024)."""
    h1, h2 = min(context_dim * num_token // 4, 1024), min(context_dim * num_token // 2, 1024)
    body = linear(width, h1) + 2 * h1 + linear(h1, h2) + 2 * h2 + linear(h2, context_dim * num_token)
    mapping = linear(1024, 1024) + 2048 + linear(1024, 1024) + 2048 + linear(1024, context_dim)
    return body + 10 * mapping


P_PULID_SDXL = id_encoder() + ip_layers(2048, SDXL_LAYERS)
P_PULID_FLUX = id_former() + 20 * perceiver_attention(3072, 128, 16, 2048)
P_EVA02_CLIP_L_336 = eva_visual()
EVA_CLIP_NAME = "EVA02-CLIP-L-14-336 (open_clip, Hugging Face cache)"

FAMILIES = {"pulid-flux": Family(PULID, "PuLID Flux", {}),
            "pulid-sdxl": Family(PULID, "PuLID SDXL", {}),
            "eva02-clip-l": Family(PULID, "EVA02-CLIP-L vision (PuLID)", {})}
NAME_RULES = {  # tested on the path with its folder ("pulid/..."): the patterns look at the file name only
    PULID: (
        _r(r"eva02.?clip.?l", "eva02-clip-l", "EVA02-CLIP-L-14-336 vision", P_EVA02_CLIP_L_336,
           "families/pulid.py P_EVA02_CLIP_L_336 (computed from its config)"),
        _r(r"(?:^|/)[^/]*(?:pulid[^/]*flux|flux[^/]*pulid)[^/]*$", "pulid-flux", "PuLID Flux", P_PULID_FLUX,
           "families/pulid.py P_PULID_FLUX (computed from the pack's layout)"),
        _r(r"(?:^|/)[^/]*pulid[^/]*$", "pulid-sdxl", "PuLID SDXL", P_PULID_SDXL,
           "families/pulid.py P_PULID_SDXL (computed from the pack's layout)"),
    ),
}
