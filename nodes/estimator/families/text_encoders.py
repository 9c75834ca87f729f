"""Text encoders: CLIP, T5 / umT5, and the LLM encoders (Qwen, Llama, Gemma, Mistral)."""
from __future__ import annotations

from ._spec import Family, TEXT_ENCODER, _r

ORDER = 170  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_QWEN25_VL_7B = 8_300_000_000  # 16.6 GB BF16 listing / 2
P_T5XXL = 4_762_310_656  # encoder + shared embedding (32128 x 4096)
P_UMT5XXL = 5_680_910_336  # encoder + shared embedding (256384 x 4096), bias in every block
P_CLIP_L = 123_060_480  # CLIP-L text model without the projection
# Qwen2.5-VL 3B's LLM as ComfyUI loads it for OmniGen2 (llama.Qwen25_3B: no vision tower): traced weight_bytes 6,171,877,380 / 2
P_QWEN25_3B_LLM = 3_085_938_690
P_CLIP_G = 694_659_841  # OpenCLIP bigG text model (resolve.CHECKPOINT_SPLITS)
P_QWEN3_4B = 4_022_468_096  # Qwen3-4B config.json (36 layers, 2560, tied embeddings); the file is 2 x this + header
P_LLAMA31_8B = 8_030_261_248  # Llama-3.1-8B config.json (32 layers, 4096, untied embeddings)
P_MISTRAL_FLUX2 = 17_800_000_000  # mistral_3_small_flux2_bf16.safetensors 35.6 GB / 2 (ComfyUI keeps the layers Flux.2 reads)


# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    # text encoders (HF config.json of each)
    "clip-l": Family(TEXT_ENCODER, "CLIP-L (text)", dict(hidden_size=768, layers=12, heads=12, head_dim=64,
                                                         ffn_dim=3072, vocab=49408, max_tokens=77)),
    "clip-g": Family(TEXT_ENCODER, "CLIP-G (text)", dict(hidden_size=1280, layers=32, heads=20, head_dim=64,
                                                         ffn_dim=5120, vocab=49408, max_tokens=77)),
    "clip-h": Family(TEXT_ENCODER, "OpenCLIP ViT-H (text)", dict(hidden_size=1024, layers=24, heads=16,
                                                                 head_dim=64, ffn_dim=4096, vocab=49408,
                                                                 max_tokens=77)),
    "t5-xxl": Family(TEXT_ENCODER, "T5-XXL encoder", dict(hidden_size=4096, layers=24, heads=64, head_dim=64,
                                                          ffn_dim=10240, vocab=32128)),
    "t5-xl": Family(TEXT_ENCODER, "T5-XL encoder", dict(hidden_size=2048, layers=24, heads=32, head_dim=64,
                                                        ffn_dim=5120, vocab=32128)),
    "t5-base": Family(TEXT_ENCODER, "T5-base encoder", dict(hidden_size=768, layers=12, heads=12, head_dim=64,
                                                            ffn_dim=2048, vocab=32128)),
    "umt5-xxl": Family(TEXT_ENCODER, "umT5-XXL encoder", dict(hidden_size=4096, layers=24, heads=64, head_dim=64,
                                                              ffn_dim=10240, vocab=256384)),
    "qwen2.5-vl-7b": Family(TEXT_ENCODER, "Qwen2.5-VL 7B", dict(hidden_size=3584, layers=28, heads=28, kv_heads=4,
                                                               head_dim=128, ffn_dim=18944, vocab=152064)),
    "qwen2.5-3b": Family(TEXT_ENCODER, "Qwen2.5 3B", dict(hidden_size=2048, layers=36, heads=16, kv_heads=2,
                                                         head_dim=128, ffn_dim=11008, vocab=151936)),
    "llama3-8b": Family(TEXT_ENCODER, "Llama 3 8B", dict(hidden_size=4096, layers=32, heads=32, kv_heads=8,
                                                        head_dim=128, ffn_dim=14336, vocab=128256)),
    "gemma": Family(TEXT_ENCODER, "Gemma 2 2B", dict(hidden_size=2304, layers=26, heads=8, kv_heads=4, head_dim=256,
                                                     ffn_dim=9216, vocab=256000)),
    "qwen3": Family(TEXT_ENCODER, "Qwen3 4B", dict(hidden_size=2560, layers=36, heads=32, kv_heads=8, head_dim=128,
                                                   ffn_dim=9728, vocab=151936)),
    "mistral": Family(TEXT_ENCODER, "Mistral Small 3 24B", dict(hidden_size=5120, layers=40, heads=32, kv_heads=8,
                                                                head_dim=128, ffn_dim=32768, vocab=131072)),
    # LTX-2's encoder: google/gemma-3-12b-it text config (48 layers, hidden 3840, 16 / 8 heads of 256)
    "gemma3": Family(TEXT_ENCODER, "Gemma 3 12B", dict(hidden_size=3840, layers=48, heads=16, kv_heads=8, head_dim=256,
                                                       ffn_dim=15360, vocab=262208)),
    # a Qwen LLM whose size only the file name gives (name_infer's generic "qwen" rule)
    "qwen": Family(TEXT_ENCODER, "Qwen LLM", {}),
}

# Tokens a text encoder pads to (memory.DEFAULT_TE_TOKENS)
TE_TOKENS = {
    "t5-xxl": 512,
    "umt5-xxl": 512,
    "mistral": 512,
    "gemma3": 1024,
    "qwen2.5-3b": 80,
}

# One family id, several traced configurations: (family, arch key, value, traced entry) (memory.ARCH_ROUTES)
ARCH_ROUTES = (
    ("gemma", "hidden_size", 3840, "gemma3"),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    TEXT_ENCODER: (
        _r(r"umt5", "umt5-xxl", "umT5-XXL encoder", P_UMT5XXL, f"{_C} P_UMT5XXL (computed)"),
        _r(r"t5[_-]?(?:v1[_.]1[_-])?xxl|t5xxl", "t5-xxl", "T5-XXL encoder", P_T5XXL, f"{_C} P_T5XXL (computed)"),
        _r(r"clip[_-]?l(?![a-z])", "clip-l", "CLIP-L (text)", P_CLIP_L, f"{_C} P_CLIP_L (computed)"),
        # CLIP-L is OpenAI's ViT-L/14 CLIP: its fine-tunes keep the name ("ViT-L-14-BEST-smooth-GmP-TE-only"); a
        # text-encoder loader reads only the text tower
        _r(r"vit[_-]?l[_-]?14", "clip-l", "CLIP-L (text, a ViT-L/14 fine-tune)", P_CLIP_L,
           f"{_C} P_CLIP_L (computed)"),
        _r(r"clip[_-]?g(?![a-z])", "clip-g", "CLIP-G (text)", P_CLIP_G, f"{_C} P_CLIP_G"),
        _r(r"qwen[_-]?2[._]?5[_-]?vl[_-]?3b", "qwen2.5-3b", "Qwen2.5-VL 3B (LLM)", P_QWEN25_3B_LLM,
           f"{_C} P_QWEN25_3B_LLM (ComfyUI's Qwen25_3B traced: the LLM, no vision tower)", sized=True),
        _r(r"qwen[_-]?2[._]?5[_-]?vl[_-]?7b|qwen[_-]?2[._]?5[_-]?vl(?!.*\db)", "qwen2.5-vl-7b", "Qwen2.5-VL 7B", P_QWEN25_VL_7B, f"{_C} P_QWEN25_VL_7B (16.6 GB bf16 listing / 2)", sized=True),
        _r(r"qwen[_-]?3[_-]?4b", "qwen3", "Qwen3 4B", P_QWEN3_4B, f"{_C} P_QWEN3_4B (config.json)", sized=True),
        _r(r"qwen", "qwen", "Qwen LLM"),
        _r(r"llama", "llama3-8b", "Llama 3.1 8B", P_LLAMA31_8B, f"{_C} P_LLAMA31_8B (config.json)"),
        _r(r"mistral.*flux[._-]?2", "mistral", "Mistral Small 3 (Flux.2 cut)", P_MISTRAL_FLUX2, f"{_C} P_MISTRAL_FLUX2 (35.6 GB bf16 listing / 2)"),
        _r(r"mistral|ministral", "mistral", "Mistral"),
        _r(r"gemma[_-]?2[_-]?2b", "gemma", "Gemma 2 2B", None, "decoder count from FAMILIES['gemma'] (tied embeddings)", sized=True),
        _r(r"gemma", "gemma3", "Gemma"),
    ),
}
