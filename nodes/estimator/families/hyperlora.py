"""HyperLoRA (ByteDance, models/hyper_lora) as ComfyUI-HyperLoRA (hyperlora/nodes.py, modules.py at HEAD) loads it:
HyperLoRALoader builds every part and moves it to the GPU by hand in its ``dtype`` widget (``.to(device, dtype)``),
outside ComfyUI's model management, and its cached output keeps it there while the SDXL model samples:

- the CLIP ViT-L/14 image encoder with its projection (CLIPVisionModelWithProjection, 303,966,208 parameters);
- one HyperLoRAModule per attention of the SDXL UNet (hyper_lora_modules.json: 70 transformer blocks, self- and
  cross-attention each), four HyperLoRALayers of ``hyper_dim x (in x rank + rank x out)`` bases;
- the Resampler (a perceiver of ``8 x modules`` queries) and, with ArcFace, the ID projector.

The counts below are those modules' shapes at the published configuration (HyperLoRAUniLoader fixes it: resampler
1024 / 64 / 12 heads / depth 4 / ff x4, id_embed_dim 512, 16 ID tokens, hyper_dim 128, LoRA rank 8, no base LoRA,
CLIP + ArcFace). InsightFace runs on the CPU provider (FaceAnalysis(providers=['CPUExecutionProvider'])); the LoRA the
generate node makes (rank 8, 11.6M parameters) lives on the CPU until ComfyUI patches it in.
"""
from __future__ import annotations

from ._spec import HYPERLORA, Family, _r

ORDER = 191  # folders of models/hyper_lora/hyper_lora: no other family's name rules look there

P_CLIP_VIT_L14_PROJ = 303_966_208  # transformers CLIPVisionModelWithProjection, openai/clip-vit-large-patch14
SDXL_ATTENTIONS = ((640, 10), (1280, 60))  # (hidden size, transformer blocks) of the SDXL UNet; cross-attention 2048
SDXL_CROSS = 2048


def hyper_lora_modules(hyper_dim: int = 128, rank: int = 8, blocks=SDXL_ATTENTIONS, cross: int = SDXL_CROSS) -> int:
    """HyperLoRAModule per attention (to_q, to_k, to_v, to_out), each layer ``hyper_dim x rank x (in + out)``."""
    per = hyper_dim * rank
    total = 0
    for hidden, count in blocks:
        self_attn = 4 * per * 2 * hidden
        cross_attn = per * (2 * hidden + 2 * (cross + hidden) + 2 * hidden)
        total += count * (self_attn + cross_attn)
    return total


def resampler(modules: int, dim: int = 1024, depth: int = 4, dim_head: int = 64, heads: int = 12, ff_mult: int = 4,
              embedding: int = 1024, output: int = 128, n_conds: int = 2) -> int:
    """modules.py Resampler: the queries, proj_in (twice with two conditions), proj_out and ``depth`` perceiver
    blocks of 4 (6) LayerNorms, 2 (3) bias-free diffusers Attentions and a GELU FeedForward."""
    inner = heads * dim_head
    attention = 4 * dim * inner
    block = (4 + 2 * (n_conds == 2)) * 2 * dim + (1 + n_conds) * attention
    block += dim * dim * ff_mult + dim * ff_mult + dim * ff_mult * dim + dim
    total = 8 * modules * dim + (embedding * dim + dim) * n_conds + dim * output + output
    return total + depth * block


def id_projector(id_embed: int = 512, tokens: int = 16, dim: int = 1024) -> int:
    """Linear(id_embed, dim x tokens) and a LayerNorm(dim)."""
    return id_embed * dim * tokens + dim * tokens + 2 * dim


MODULES_SDXL = sum(count for _, count in SDXL_ATTENTIONS) * 2
P_HYPERLORA_SDXL = (P_CLIP_VIT_L14_PROJ + hyper_lora_modules() + resampler(MODULES_SDXL) + id_projector())

FAMILIES = {"hyperlora-sdxl": Family(HYPERLORA, "HyperLoRA (SDXL)", {})}
NAME_RULES = {HYPERLORA: (_r(r".", "hyperlora-sdxl", "HyperLoRA (SDXL)", P_HYPERLORA_SDXL,
                            "families/hyperlora.py P_HYPERLORA_SDXL (computed from the pack's modules at the "
                            "published configuration)"),)}
