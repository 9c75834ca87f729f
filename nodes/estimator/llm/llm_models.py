"""Known LLMs by name, with their published Hugging Face ``config.json`` values.

Each entry is the text model's config.json as published (the keys ``llm.config_from_hf`` reads, so a
known name and a downloaded folder go through the same parser), the page it comes from, and, for
vision-language models, the parameters of the vision tower that config.json does not count in its
text fields. Adding a model = adding one entry.

Sources (config.json of each repository; the same values appear in ComfyUI 0.18.2's
comfy/text_encoders/llama.py for the ones ComfyUI ships as text encoders, cited per entry):
- meta-llama/Llama-3.1-8B, Llama-3.1-70B, Llama-3.3-70B-Instruct (the 3.x 70B models share one config),
  Llama-3.1-405B and Llama-3.1-405B-Instruct-FP8 (partly quantised: its modules kept BF16 ride along)
- Qwen/Qwen3-4B, Qwen3-8B, Qwen3-14B, Qwen3-32B, Qwen3-30B-A3B
- mistralai/Mistral-7B-v0.3, Mistral-Small-24B-Base-2501
- google/gemma-3-4b-pt, gemma-3-12b-pt, gemma-3-27b-pt (text_config; Gemma3TextConfig defaults filled in)
- Qwen/Qwen2.5-VL-7B-Instruct
"""
from __future__ import annotations

import re

HF = "https://huggingface.co/{}/blob/main/config.json"


def _llama(hidden, inter, layers, heads, kv, vocab, ctx, tied=False, **extra):
    return dict(model_type="llama", hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, head_dim=128, vocab_size=vocab,
                max_position_embeddings=ctx, tie_word_embeddings=tied, torch_dtype="bfloat16", **extra)


def _qwen3(hidden, inter, layers, heads, kv, tied=False, **extra):
    return dict(model_type="qwen3", hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, head_dim=128, vocab_size=151936,
                max_position_embeddings=40960, tie_word_embeddings=tied, torch_dtype="bfloat16", **extra)


def _gemma3(hidden, inter, layers, heads, kv, head_dim):
    # Gemma3TextConfig: vocab 262208, sliding window 1024 on 5 of every 6 layers (sliding_window_pattern 6),
    # 128k context, tied embeddings (transformers models/gemma3/configuration_gemma3.py defaults).
    return dict(model_type="gemma3_text", hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim, vocab_size=262208,
                max_position_embeddings=131072, sliding_window=1024, sliding_window_pattern=6,
                tie_word_embeddings=True, torch_dtype="bfloat16")


# Vision towers (parameters outside the text config; checked against the repositories' published totals
# in tests/test_llm.py):
# - Gemma 3: SigLIP so400m/14 at 896 px: 27 blocks of width 1152, MLP 4304 (attention 4·1152²+biases,
#   MLP 2·1152·4304+biases, 2 LayerNorms) + patch embedding 3·14·14·1152 + 4096 positions·1152 + post norm
#   = 416,866,032; + multi_modal_projector 1152·hidden + a 1152 norm.
SIGLIP_896 = 416_866_032
# - Qwen2.5-VL 7B: 32 blocks of width 1280 (qkv 1280·3840+b, proj 1280²+b, SwiGLU MLP 3·1280·3420+biases,
#   2 RMSNorms) + Conv3d patch embedding 1280·3·2·14·14 + merger (RMSNorm 1280, Linear 5120→5120,
#   Linear 5120→3584, with biases) = 676,550,144.
QWEN25_VL_VISION = 676_550_144

KNOWN: dict[str, dict] = {
    "llama-3.1-8b": dict(
        label="Llama 3.1 8B", repo="meta-llama/Llama-3.1-8B",
        aliases=("llama-3-8b", "llama-3.1-8b-instruct", "llama3.1", "llama3"),
        config=_llama(4096, 14336, 32, 32, 8, 128256, 131072),  # ComfyUI llama.py:18-29 (Llama2Config, HiDream)
    ),
    "llama-3.1-70b": dict(
        label="Llama 3.x 70B", repo="meta-llama/Llama-3.1-70B",
        aliases=("llama-3.3-70b", "llama-3-70b", "llama-3.x-70b", "llama3.3", "llama3.1-70b", "llama-70b"),
        config=_llama(8192, 28672, 80, 64, 8, 128256, 131072),
    ),
    "llama-3.1-405b": dict(
        label="Llama 3.1 405B", repo="meta-llama/Llama-3.1-405B",
        aliases=("llama-3.1-405b-instruct", "meta-llama-3.1-405b", "llama3.1-405b", "llama-405b"),
        config=_llama(16384, 53248, 126, 128, 8, 128256, 131072),
    ),
    # Meta's FP8 release quantises the feed-forward linears only (fbgemm row-wise FP8), attention and the
    # first and last layers stay BF16 (the model card's "Quantization" section; its config.json lists every
    # such module in modules_to_not_convert, written here as patterns for the same set). Checked: vLLM logs
    # "Loading model weights took 57.7520 GB" per rank at TP 8 (vllm#6746).
    "llama-3.1-405b-fp8": dict(
        label="Llama 3.1 405B FP8", repo="meta-llama/Llama-3.1-405B-Instruct-FP8",
        aliases=("meta-llama-3.1-405b-instruct-fp8", "llama3.1-405b-fp8", "llama-405b-fp8"),
        config=_llama(16384, 53248, 126, 128, 8, 128256, 131072, quantization_config=dict(
            quant_method="fbgemm_fp8", activation_scale_ub=1200.0,
            modules_to_not_convert=["re:model\\.layers\\.\\d+\\.self_attn\\..*",
                                    "re:model\\.layers\\.(0|125)\\.mlp\\..*", "lm_head"])),
    ),
    "qwen3-4b": dict(
        label="Qwen3 4B", repo="Qwen/Qwen3-4B", aliases=(),
        config=_qwen3(2560, 9728, 36, 32, 8, tied=True),  # ComfyUI llama.py:183-194 (Z-Image text encoder)
    ),
    "qwen3-8b": dict(
        label="Qwen3 8B", repo="Qwen/Qwen3-8B", aliases=("qwen3",),
        config=_qwen3(4096, 12288, 36, 32, 8),  # ComfyUI llama.py:207-218
    ),
    "qwen3-14b": dict(label="Qwen3 14B", repo="Qwen/Qwen3-14B", aliases=(), config=_qwen3(5120, 17408, 40, 40, 8)),
    "qwen3-32b": dict(label="Qwen3 32B", repo="Qwen/Qwen3-32B", aliases=(), config=_qwen3(5120, 25600, 64, 64, 8)),
    "qwen3-30b-a3b": dict(
        label="Qwen3 30B-A3B (MoE)", repo="Qwen/Qwen3-30B-A3B", aliases=("qwen3-30b",),
        config={**_qwen3(2048, 6144, 48, 32, 4), "model_type": "qwen3_moe", "num_experts": 128,
                "num_experts_per_tok": 8, "moe_intermediate_size": 768},
    ),
    "mistral-7b": dict(
        label="Mistral 7B v0.3", repo="mistralai/Mistral-7B-v0.3", aliases=("mistral-7b-v0.3", "mistral"),
        config={**_llama(4096, 14336, 32, 32, 8, 32768, 32768), "model_type": "mistral"},
    ),
    "mistral-small-24b": dict(
        label="Mistral Small 3 24B", repo="mistralai/Mistral-Small-24B-Base-2501",
        aliases=("mistral-small", "mistral-small-3", "mistral-small-3.1-24b", "mistral-small-3.2-24b",
                 "mistral-small-24b-2501"),
        # ComfyUI llama.py:41-52 (Mistral3Small24BConfig, the Flux 2 text encoder)
        config={**_llama(5120, 32768, 40, 32, 8, 131072, 32768), "model_type": "mistral"},
    ),
    "gemma-3-4b": dict(
        label="Gemma 3 4B", repo="google/gemma-3-4b-pt", aliases=("gemma3",),
        config=_gemma3(2560, 10240, 34, 8, 4, 256), vision_params=SIGLIP_896 + 1152 * 2560 + 1152,  # llama.py:302-313
    ),
    "gemma-3-12b": dict(
        label="Gemma 3 12B", repo="google/gemma-3-12b-pt", aliases=(),
        config=_gemma3(3840, 15360, 48, 16, 8, 256), vision_params=SIGLIP_896 + 1152 * 3840 + 1152,  # llama.py:334-345
    ),
    "gemma-3-27b": dict(
        label="Gemma 3 27B", repo="google/gemma-3-27b-pt", aliases=(),
        config=_gemma3(5376, 21504, 62, 32, 16, 128), vision_params=SIGLIP_896 + 1152 * 5376 + 1152,
    ),
    "qwen2.5-vl-7b": dict(
        label="Qwen2.5-VL 7B", repo="Qwen/Qwen2.5-VL-7B-Instruct", aliases=("qwen2.5vl-7b", "qwen2.5-vl"),
        # ComfyUI llama.py:254-265 (Qwen25_7BVLI_Config, the Qwen-Image text encoder)
        config=dict(model_type="qwen2_5_vl", hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                    num_attention_heads=28, num_key_value_heads=4, vocab_size=152064,
                    max_position_embeddings=128000, tie_word_embeddings=False, torch_dtype="bfloat16"),
        vision_params=QWEN25_VL_VISION,
    ),
}

_DROP = ("instruct", "it", "pt", "base", "chat", "hf")


def normalize(name: str) -> str:
    """'meta-llama/Llama-3.1-8B-Instruct' -> 'llama3.18b'; 'qwen3:32b' -> 'qwen332b'."""
    s = name.strip().lower().rsplit("/", 1)[-1]
    words = [w for w in re.split(r"[\s_:\-]+", s) if w and w not in _DROP]
    return re.sub(r"[^a-z0-9.]", "", "".join(words))


def _index() -> dict[str, str]:
    idx: dict[str, str] = {}
    for key, entry in KNOWN.items():
        for n in (key, entry["label"], entry["repo"], *entry["aliases"]):
            idx.setdefault(normalize(n), key)
    return idx


_INDEX = _index()


def lookup(name: str) -> str | None:
    """The KNOWN key for a model name, or None."""
    return _INDEX.get(normalize(name))


def known_names() -> str:
    return ", ".join(e["label"] for e in KNOWN.values())
