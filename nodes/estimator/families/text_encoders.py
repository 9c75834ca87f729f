"""Text encoders: CLIP, T5 / umT5, and the LLM encoders (Qwen, Llama, Gemma, Mistral)."""
from __future__ import annotations

from ._spec import Family, TEXT_ENCODER, _r, Detector, Found, all_families

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
# HunyuanDiT's two encoders as ComfyUI builds them (comfy/text_encoders/hydit.py, hydit_clip.json / mt5_config_xl.json,
# counted on the meta device in 0.33.0): the mT5-XL encoder with its 250112-row shared embedding, and Chinese
# RoBERTa-wwm-ext-large (a BERT-large) plus the pooler transformers' BertModel keeps (1024 x 1024 + 1024)
P_MT5_XL = 1_669_958_656
P_HYDIT_BERT = 350_986_240 + 1_049_600
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
    # hfl/chinese-roberta-wwm-ext-large (ComfyUI's hydit_clip.json): HunyuanDiT's and EasyAnimate V4 / V5's BERT
    "hydit-bert": Family(TEXT_ENCODER, "Chinese RoBERTa-large (BERT)", dict(hidden_size=1024, layers=24, heads=16,
                                                                          head_dim=64, ffn_dim=4096, vocab=47020,
                                                                          max_tokens=512)),
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
        # mT5-XL (HunyuanDiT's, EasyAnimate V4 / V5's text_encoder_2): the T5-XL layout with mT5's vocabulary
        _r(r"(?<![a-z])mt5[_-]?xl", "t5-xl", "mT5-XL encoder", P_MT5_XL,
           f"{_C} P_MT5_XL (ComfyUI's T5 at mt5_config_xl.json)"),
        _r(r"chinese[_-]?roberta|hydit[_-]?bert", "hydit-bert", "Chinese RoBERTa-large (BERT)", P_HYDIT_BERT,
           f"{_C} P_HYDIT_BERT (ComfyUI's BertModel at hydit_clip.json, + the pooler)"),
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


# --- Header detectors (comfy/sd.py detect_te_model, 0.33.0; each Detector's order is the line it mirrors) ---------
def _clip(v) -> Found:
    layers = v.count_blocks("text_model.encoder.layers.")
    fc1 = v.shape("text_model.encoder.layers.0.mlp.fc1.weight")
    family = "clip-g" if layers > 30 else "clip-h" if layers > 22 else "clip-l"
    arch = dict(layers=layers, hidden_size=fc1[1], ffn_dim=fc1[0],
                vocab=v.dim("text_model.embeddings.token_embedding.weight", 0), max_tokens=77)
    arch["heads"] = fc1[1] // 64
    arch["head_dim"] = 64
    return Found(family, arch, (f"keys text_model.encoder.layers.0..{layers - 1} (CLIP text, {layers} layers)",))


def _open_clip(v) -> Found:
    layers = v.count_blocks("transformer.resblocks.")
    width = v.dim("transformer.resblocks.0.attn.in_proj_weight", 1)
    family = "clip-g" if layers > 30 else "clip-h" if layers > 22 else "clip-l"
    arch = dict(layers=layers, hidden_size=width, ffn_dim=v.dim("transformer.resblocks.0.mlp.c_fc.weight", 0),
                vocab=v.dim("token_embedding.weight", 0), heads=(width or 64) // 64, head_dim=64, max_tokens=77)
    return Found(family, arch, (f"keys transformer.resblocks.0..{layers - 1} (OpenCLIP text, {layers} layers)",))


def _t5(v) -> Found:
    wi, wi_old = _WI, _WI_OLD
    layers = v.count_blocks("encoder.block.")
    s = v.shape(wi) or v.shape(wi_old)
    d_model, ffn = s[1], s[0]
    vocab = v.dim("shared.weight", 0) or v.dim("encoder.embed_tokens.weight", 0)
    per_block_bias = v.has("encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight")
    ev = [f"keys encoder.block.0..{layers - 1} with DenseReluDense (T5 encoder, {layers} blocks)"]
    if vocab == 256384 or per_block_bias:
        family = "umt5-xxl"
        ev.append(f"shared.weight rows {vocab} (umT5 vocabulary 256384)" if vocab == 256384
                  else "relative attention bias in every block (umT5)")
    elif layers <= 12:
        family = "t5-base"
    elif d_model == 2048:
        family = "t5-xl"
        ev.append("d_model 2048 (T5-XL)")
    else:
        family = "t5-xxl"
        if vocab:
            ev.append(f"shared.weight rows {vocab} (T5 vocabulary 32128)")
    arch = dict(layers=layers, hidden_size=d_model, ffn_dim=ffn, vocab=vocab,
                heads=all_families()[family].arch.get("heads"), head_dim=64)
    variant = "v1.0" if v.has(wi_old) else None
    return Found(family, arch, tuple(ev), variant)


def _gemma(v) -> Found:
    layers = v.count_blocks("model.layers.")
    variant = "3-12b" if v.has("model.layers.47.self_attn.q_norm.weight") else \
        "3-4b" if v.has("model.layers.0.self_attn.q_norm.weight") else "2-2b"
    return Found("gemma", llm_arch(v, "gemma"), ("key model.layers.0.post_feedforward_layernorm.weight (Gemma)",),
                 variant)


def _qwen25(v) -> Found:
    width = v.dim("model.layers.0.self_attn.k_proj.bias", 0)
    if width == 256:
        return Found("qwen2.5-3b", llm_arch(v, "qwen2.5-3b"), ("k_proj.bias width 256 (Qwen2.5 3B)",))
    ev = [f"key model.layers.0.self_attn.k_proj.bias width {width} (Qwen2.5 7B)"]
    if v.startswith("visual."):
        ev.append("keys visual.* (vision tower: Qwen2.5-VL)")
    return Found("qwen2.5-vl-7b", llm_arch(v, "qwen2.5-vl-7b"), tuple(ev))


def _llama_like(v) -> Found:
    width = v.dim("model.layers.0.post_attention_layernorm.weight", 0)
    if v.has("model.layers.0.self_attn.q_norm.weight"):
        variant = {2560: "4b", 2048: "2b"}.get(width)
        return Found("qwen3", llm_arch(v, "qwen3"), ("key self_attn.q_norm.weight (Qwen3)",), variant)
    if width == 5120:
        layers = v.count_blocks("model.layers.")
        return Found("mistral", llm_arch(v, "mistral"), (f"hidden width 5120 (Mistral 3 24B), {layers} layers",),
                     None if layers >= 40 else "pruned")
    return Found("llama3-8b", llm_arch(v, "llama3-8b"), ("key post_attention_layernorm.weight (Llama 3)",))


def llm_arch(v, family: str) -> dict:
    """An LLM text encoder's numbers from its header (layers, width, vocabulary, MLP), over the family's."""
    arch = dict(all_families()[family].arch)
    arch["layers"] = v.count_blocks("model.layers.")
    hidden = v.dim("model.layers.0.post_attention_layernorm.weight", 0) or v.dim("model.norm.weight", 0)
    if hidden:
        arch["hidden_size"] = hidden
    vocab = v.dim("model.embed_tokens.weight", 0)
    if vocab:
        arch["vocab"] = vocab
    ffn = v.dim("model.layers.0.mlp.gate_proj.weight", 0)
    if ffn:
        arch["ffn_dim"] = ffn
    return arch


_WI, _WI_OLD = "encoder.block.0.layer.1.DenseReluDense.wi_1.weight", "encoder.block.0.layer.1.DenseReluDense.wi.weight"
DETECT = {TEXT_ENCODER: (
    Detector(keys=(("text_model.encoder.layers.0.mlp.fc1.weight",),), read=_clip, order=1611),
    Detector(keys=(("transformer.resblocks.0.attn.in_proj_weight",),), read=_open_clip, order=1612),  # OpenCLIP layout
    Detector(keys=((_WI,), (_WI_OLD,)), read=_t5, order=1619),
    Detector(keys=(("model.layers.0.post_feedforward_layernorm.weight",),), read=_gemma, order=1634),
    Detector(keys=(("model.layers.0.self_attn.k_proj.bias",),), read=_qwen25, order=1655),
    Detector(keys=(("model.layers.0.post_attention_layernorm.weight",),), read=_llama_like, order=1677),
)}
