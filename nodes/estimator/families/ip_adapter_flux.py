"""InstantX's Flux IP-Adapter (InstantX/FLUX.1-dev-IP-Adapter, models/ipadapter-flux) and the SigLIP so400m vision
tower it encodes the image with, as ComfyUI-IPAdapter-Flux (Shakker-Labs, ipadapter_flux.py /
attention_processor.py at eef22b6) builds them.

Counts by the pack's own layout (the derivation is the functions below):
- InstantXFluxIPAdapterModel: an MLPProjModel from SigLIP's pooled 1152 to 128 tokens of 4096 (the loader passes
  num_tokens=128) and 57 IPAFluxAttnProcessor2_0 (19 double + 38 single blocks), each a to_k_ip and a to_v_ip
  Linear(4096 -> 3072, no bias): 2,645,600,512 parameters, 5.29 GB at 16 bit, the 5.29 GB ComfyUI-Manager's model
  list gives for ip-adapter.bin (tests/test_ipadapter_flux.py).
- SigLIP so400m/14 at 384 px (transformers SiglipVisionModel, google/siglip-so400m-patch14-384's config: width 1152,
  27 layers, MLP 4304, 729 patches, the attention-pooling head): 428,113,600 parameters, the 857 MB
  Comfy-Org/sigclip_vision_384 publishes for the same tower.
With the provider "cuda" the loader builds all of it on the GPU in fp16 (``.to(device, dtype=torch.float16)``),
outside ComfyUI's model management, and the node's cached output keeps it there while the patched model samples.
"""
from __future__ import annotations

from ._spec import IPADAPTER_FLUX, Family, _r

ORDER = 188  # files of models/ipadapter-flux: no other family's name rules look there


def linear(i: int, o: int, bias: bool = True) -> int:
    return i * o + (o if bias else 0)


def instantx_flux(tokens: int = 128, embedding: int = 1152, context: int = 4096, hidden: int = 3072,
                  blocks: int = 19 + 38) -> int:
    """MLPProjModel (Linear(1152, 2304), GELU, Linear(2304, 128 x 4096), LayerNorm(4096)) and, per Flux block, an
    IPAFluxAttnProcessor2_0: to_k_ip and to_v_ip Linear(4096 -> 3072, bias=False); its RMSNorms have no weights."""
    proj = linear(embedding, 2 * embedding) + linear(2 * embedding, tokens * context) + 2 * context
    return proj + blocks * 2 * linear(context, hidden, bias=False)


def siglip_vision(width: int = 1152, layers: int = 27, mlp: int = 4304, patch: int = 14, image: int = 384) -> int:
    """transformers SiglipVisionTransformer: patch conv and positions, per layer (two LayerNorms, q / k / v / out
    with biases, fc1 / fc2), the post LayerNorm and the attention-pooling head (probe, nn.MultiheadAttention,
    LayerNorm, MLP)."""
    attn = 4 * linear(width, width)
    block = 4 * width + attn + linear(width, mlp) + linear(mlp, width)
    embed = 3 * patch * patch * width + width + (image // patch) ** 2 * width
    head = width + attn + 2 * width + linear(width, mlp) + linear(mlp, width)
    return embed + layers * block + 2 * width + head


def xlabs_flux_held(context: int = 4096, hidden: int = 3072, blocks: int = 19) -> int:
    """XLabs' Flux IP-Adapter as ApplyFluxIPAdapter holds it on the GPU (x-flux-comfyui nodes.py, xflux/src/flux/
    layers.py IPProcessor): per double block, ip_adapter_double_stream_k_proj and _v_proj, Linear(4096 -> 3072) with
    bias, moved to the GPU in bf16. Its ImageProjModel (768 -> tokens x 4096) runs where the loader left it, on the
    CPU, as does its CLIP ViT-L vision tower (FluxClipViT: from_pretrained with no device): not on the card. The file
    holds both: with 4 image tokens, 478,267,392 + 12,607,488 = 490,874,880 parameters, the 982 MB
    XLabs-AI/flux-ip-adapter publishes at 16 bit."""
    return blocks * 2 * linear(context, hidden)


P_IPA_FLUX_INSTANTX = instantx_flux()
P_IPA_FLUX_XLABS_HELD = xlabs_flux_held()
P_SIGLIP_SO400M_VISION = siglip_vision()
SIGLIP_NAME = "google/siglip-so400m-patch14-384 (transformers, fp16)"

FAMILIES = {"ip-adapter-flux-instantx": Family(IPADAPTER_FLUX, "InstantX Flux IP-Adapter", {}),
            "ip-adapter-flux-xlabs": Family(IPADAPTER_FLUX, "XLabs Flux IP-Adapter (its 19 block processors)", {}),
            "siglip-so400m-vision": Family(IPADAPTER_FLUX, "SigLIP so400m/14 384px vision", {})}
NAME_RULES = {  # tested on the path with its folder ("ipadapter-flux/..."): every file there is the adapter
    IPADAPTER_FLUX: (
        _r(r"siglip", "siglip-so400m-vision", "SigLIP so400m/14 384px vision", P_SIGLIP_SO400M_VISION,
           "families/ip_adapter_flux.py P_SIGLIP_SO400M_VISION (computed from its config)"),
        # x-flux-comfyui's folder (models/xlabs/ipadapters): the count is what ApplyFluxIPAdapter holds on the GPU
        _r(r"xlabs", "ip-adapter-flux-xlabs", "XLabs Flux IP-Adapter (its 19 block processors)", P_IPA_FLUX_XLABS_HELD,
           "families/ip_adapter_flux.py P_IPA_FLUX_XLABS_HELD (the processors ApplyFluxIPAdapter moves to the GPU)"),
        _r(r".", "ip-adapter-flux-instantx", "InstantX Flux IP-Adapter", P_IPA_FLUX_INSTANTX,
           "families/ip_adapter_flux.py P_IPA_FLUX_INSTANTX (computed from the pack's layout)"),
    ),
}
