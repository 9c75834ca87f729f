"""LLM memory (nodes/estimator/llm/llm.py): the guide's tables (FACTS.md "LLM" and "Cards"), the KV cache
as engines and ComfyUI allocate it, real Hugging Face folders and GGUF files, engine rules, the CLI."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers_models import ITEMSIZE, gguf_expected_bytes, write_gguf, write_safetensors
from vram_budget.nodes.estimator import llm
from vram_budget.nodes.estimator.llm import llm_models, serve as llm_serve
from vram_budget.nodes.estimator.models import llm_quant
from vram_budget.nodes.estimator.errors import ModelFileError, VramBudgetError
from vram_budget.nodes.estimator.machine.gpus import CARDS, find_card
from vram_budget.nodes.estimator.models.llm_quant import GGML_BLOCK, gguf_tensor_type, tensor_list, text_params
from vram_budget.nodes.estimator.units import GB, KiB

REPO = Path(__file__).resolve().parents[1]
GUIDE_MODELS = {"8B": "Llama 3.1 8B", "32B": "Qwen3 32B", "70B": "Llama 3.x 70B"}


def close(value: float, target: float, tol: float = 0.05) -> bool:
    return abs(value - target) <= tol * target


# ---------------------------------------------------------------------------------------------
# FACTS.md "LLM": the weights table, the KV cache per token, the two chats
@pytest.mark.parametrize("size,weights,gb", [
    ("8B", "16bit", 16), ("8B", "fp8", 8), ("8B", "8bit", 8), ("8B", "4bit", 5),
    ("32B", "16bit", 66), ("32B", "fp8", 33), ("32B", "4bit", 20),
    ("70B", "16bit", 141), ("70B", "fp8", 71), ("70B", "4bit", 43),
])
def test_guide_weights_table(size, weights, gb):
    cfg = llm.load_model(GUIDE_MODELS[size])
    got = llm.weights_bytes(cfg, weights) / GB
    assert close(got, gb), f"{size} {weights}: {got:.2f} GB, guide ~{gb} GB"


@pytest.mark.parametrize("name,kib", [("Llama 3.1 8B", 128), ("Qwen3 32B", 256), ("Llama 3.x 70B", 320)])
def test_guide_kv_per_token(name, kib):
    cfg = llm.load_model(name)
    per_token = llm.kv_bytes_per_token(cfg)
    assert per_token == cfg.layers * cfg.kv_heads * cfg.head_dim * 2 * 2
    assert per_token == kib * KiB  # exact: the guide's "KB" are KiB


def test_guide_chats():
    qwen, llama70 = llm.load_model("Qwen3 32B"), llm.load_model("llama-3.3-70b")
    assert close(llm.kv_cache_bytes(qwen, 32_000) / GB, 8)
    assert close(llm.kv_cache_bytes(llama70, 128_000) / GB, 42)
    # "q8_0 / fp8 KV cache halves it"
    full = llm.kv_cache_bytes(qwen, 32_000)
    assert llm.kv_cache_bytes(qwen, 32_000, kv_dtype="fp8") * 2 == full
    assert llm.kv_cache_bytes(qwen, 32_000, kv_dtype="q8_0") == full * 34 // 64  # 34 bytes per 32 elements
    assert llm.kv_cache_bytes(qwen, 32_000, kv_dtype="q4_0") == full * 18 // 64
    assert llm.kv_cache_bytes(qwen, 1000, batch=3) == 3 * llm.kv_cache_bytes(qwen, 1000)


def test_gguf_mix_reproduces_published_files():
    """llama.cpp's Q4_K_M / Q8_0 mixes against published file sizes (bartowski's GGUF repositories:
    Meta-Llama-3.1-8B-Instruct Q4_K_M 4.92 GB, Q8_0 8.54 GB; Llama-3.3-70B-Instruct Q4_K_M 42.52 GB).
    Files also hold the tokenizer (a few MB), hence 1 %."""
    l8, l70 = llm.load_model("Llama 3.1 8B"), llm.load_model("Llama 3.3 70B")
    assert close(llm.weights_bytes(l8, "Q4_K_M") / GB, 4.92, 0.01)
    assert close(llm.weights_bytes(l8, "Q8_0") / GB, 8.54, 0.01)
    assert close(llm.weights_bytes(l70, "Q4_K_M") / GB, 42.52, 0.01)
    # the mix itself: Q6_K output head, Q6_K attn_v/ffn_down on use_more_bits layers, Q4_K elsewhere
    types = {t.name: gguf_tensor_type(t, "Q4_K_M", l8) for t in tensor_list(l8)}
    assert types["output.weight"] == "Q6_K" and types["token_embd.weight"] == "Q4_K"
    more = [i for i in range(32) if types[f"blk.{i}.ffn_down.weight"] == "Q6_K"]
    assert more == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
    assert types["blk.4.attn_v.weight"] == "Q4_K" and types["blk.4.attn_q.weight"] == "Q4_K"
    # the 70B bump: attn_v never below Q5_K
    t70 = {t.name: gguf_tensor_type(t, "Q4_K_M", l70) for t in tensor_list(l70)}
    assert {t70[f"blk.{i}.attn_v.weight"] for i in range(80)} == {"Q5_K", "Q6_K"}


def test_block_sizes_are_ggmls():
    gguf = pytest.importorskip("gguf")
    published = {k.name: v for k, v in gguf.GGML_QUANT_SIZES.items()}
    for name, block in GGML_BLOCK.items():
        assert published[name] == block, name


@pytest.mark.parametrize("key", list(llm_models.KNOWN))
def test_known_configs_parse(key):
    cfg = llm.known_config(key)
    assert cfg.layers > 0 and cfg.kv_heads <= cfg.heads and cfg.heads % cfg.kv_heads == 0
    assert cfg.params >= text_params(cfg) > 0
    assert llm_models.lookup(cfg.name) == key


@pytest.mark.parametrize("name,billions", [
    # published totals on each repository's page (safetensors parameter count)
    ("Llama 3.1 8B", 8.03), ("Llama 3.x 70B", 70.6), ("Qwen3 8B", 8.19), ("Qwen3 14B", 14.8), ("Qwen3 32B", 32.8),
    ("qwen3-30b-a3b", 30.5), ("Mistral 7B", 7.25), ("Mistral Small 24B", 23.6), ("Gemma 3 4B", 4.3),
    ("Gemma 3 12B", 12.2), ("Gemma 3 27B", 27.4), ("Qwen2.5-VL 7B", 8.29),
])
def test_known_parameter_counts(name, billions):
    assert close(llm.load_model(name).params / 1e9, billions, 0.01)


@pytest.mark.parametrize("alias", ["meta-llama/Llama-3.1-8B-Instruct", "llama3.1:8b", "LLAMA 3.1 8B", "qwen3:32b",
                                   "gemma3:27b", "Qwen/Qwen2.5-VL-7B-Instruct", "mistral-small-3.1-24b"])
def test_names_resolve(alias):
    assert llm_models.lookup(alias) is not None


def test_sliding_window_layers():
    g = llm.load_model("Gemma 3 4B")
    assert (g.sliding_window, g.sliding_layers) == (1024, 34 - 34 // 6)
    full = llm.kv_cache_bytes(g, 32_000)
    windowed = llm.kv_cache_bytes(g, 32_000, windowed=True)
    row = g.kv_heads * g.head_dim * 2 * 2
    assert windowed == row * ((34 - 29) * 32_000 + 29 * 1024)
    assert full == row * 34 * 32_000 and windowed < full / 5
    assert llm.kv_cache_bytes(g, 500, windowed=True) == llm.kv_cache_bytes(g, 500)  # under the window: no difference


# ---------------------------------------------------------------------------------------------
# ComfyUI TextGenerate
def test_textgen_kv_cache_is_comfyuis_allocation():
    """llama.py:832-836: per layer two empty([batch, kv_heads, prompt + max_length, head_dim]) at the
    execution dtype; every layer in full (Gemma 3's sliding layers too)."""
    g = llm.load_model("Gemma 3 4B")
    got = llm.textgen_kv_cache_bytes(g, prompt_tokens=900, max_length=256)
    assert got == 34 * 2 * (1 * 4 * (900 + 256) * 256) * 2
    assert got == llm.kv_cache_bytes(g, 900 + 256)
    assert llm.textgen_kv_cache_bytes(g, 900, 256, batch=2, dtype_bytes=4) == 4 * got
    with pytest.raises(VramBudgetError, match="max_length"):
        llm.textgen_kv_cache_bytes(g, 10, 0)


def test_textgen_citation_matches_comfyui_source():
    root = os.environ.get("COMFYUI_018_PATH") or os.environ.get("COMFYUI_PATH")
    if not root or not os.path.isfile(os.path.join(root, "comfy/text_encoders/llama.py")):
        pytest.skip("COMFYUI_018_PATH / COMFYUI_PATH not set (ComfyUI 0.18.2 source)")
    lines = Path(root, "comfy/text_encoders/llama.py").read_text().splitlines()
    if not any("max_cache_len" in ln for ln in lines):
        pytest.skip("this ComfyUI has no TextGenerate KV cache (older than 0.18)")
    assert "max_cache_len = embeds.shape[1] + max_length" in lines[832], lines[832]
    assert "num_key_value_heads, max_cache_len, model_config.head_dim" in lines[834]


def test_config_from_arch_uses_known_kv_heads():
    """families.py gives Gemma 3 12B Gemma 2's 4 KV heads; the known config with the same width and depth wins."""
    arch = dict(hidden_size=3840, layers=48, heads=8, kv_heads=4, head_dim=256, ffn_dim=15360, vocab=262208)
    cfg = llm.config_from_arch("gemma 3 12b file", arch, params=12_000_000_000)
    assert (cfg.kv_heads, cfg.head_dim, cfg.params) == (8, 256, 12_000_000_000)
    odd = llm.config_from_arch("odd", dict(hidden_size=1024, layers=3, heads=8, kv_heads=2, head_dim=128, vocab=100))
    assert (odd.kv_heads, odd.head_dim) == (2, 128) and odd.params == text_params(odd)


# ---------------------------------------------------------------------------------------------
# Real files
SMALL = dict(model_type="qwen3", hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=64, vocab_size=1024, max_position_embeddings=8192,
             tie_word_embeddings=False, torch_dtype="bfloat16")


def hf_spec(c: dict, dtype: str = "BF16") -> dict:
    """transformers Qwen3ForCausalLM state dict names and shapes."""
    h, hq, hkv, i = c["hidden_size"], c["num_attention_heads"] * c["head_dim"], \
        c["num_key_value_heads"] * c["head_dim"], c["intermediate_size"]
    spec = {"model.embed_tokens.weight": (dtype, (c["vocab_size"], h)), "model.norm.weight": (dtype, (h,)),
            "lm_head.weight": (dtype, (c["vocab_size"], h))}
    for n in range(c["num_hidden_layers"]):
        p = f"model.layers.{n}."
        spec.update({p + "self_attn.q_proj.weight": (dtype, (hq, h)), p + "self_attn.k_proj.weight": (dtype, (hkv, h)),
                     p + "self_attn.v_proj.weight": (dtype, (hkv, h)), p + "self_attn.o_proj.weight": (dtype, (h, hq)),
                     p + "self_attn.q_norm.weight": (dtype, (c["head_dim"],)),
                     p + "self_attn.k_norm.weight": (dtype, (c["head_dim"],)),
                     p + "mlp.gate_proj.weight": (dtype, (i, h)), p + "mlp.up_proj.weight": (dtype, (i, h)),
                     p + "mlp.down_proj.weight": (dtype, (h, i)),
                     p + "input_layernorm.weight": (dtype, (h,)), p + "post_attention_layernorm.weight": (dtype, (h,))})
    return spec


def write_hf_folder(folder: Path, config: dict = SMALL, shards: int = 2) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    spec = hf_spec(config)
    names = sorted(spec)
    weight_map = {}
    for s in range(shards):
        part = {n: spec[n] for n in names[s::shards]}
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(folder / fname, part)
        weight_map.update({n: fname for n in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return spec


def test_hf_folder_read_from_headers(tmp_path):
    spec = write_hf_folder(tmp_path / "small")
    cfg = llm.load_model(str(tmp_path / "small"))
    params = sum(math.prod(s) for _, s in spec.values())
    nbytes = sum(math.prod(s) * ITEMSIZE[d] for d, s in spec.values())
    assert (cfg.layers, cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.vocab) == (4, 256, 4, 2, 64, 1024)
    assert cfg.params == params == text_params(cfg)  # the config's tensor list is the file's
    assert cfg.stored.total == nbytes == llm.weights_bytes(cfg, "file") == llm.weights_bytes(cfg, "16bit")
    assert cfg.stored.embed == 1024 * 256 * 2 and cfg.stored.output == 1024 * 256 * 2
    assert len(set(cfg.stored.layers)) == 1 and cfg.stored_format == "safetensors BF16"
    assert llm.kv_bytes_per_token(cfg) == 4 * 2 * 64 * 2 * 2
    # config.json inside the folder, or one shard, name the same model
    assert llm.load_model(str(tmp_path / "small" / "config.json")).params == params
    # a second copy outside the index (Mistral's consolidated.safetensors) is not counted twice
    write_safetensors(tmp_path / "small" / "consolidated.safetensors", spec)
    assert llm.load_model(str(tmp_path / "small")).params == params


def test_hf_folder_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFileError, match="no config.json"):
        llm.load_model(str(tmp_path / "empty"))
    write_hf_folder(tmp_path / "broken")
    os.remove(tmp_path / "broken" / "model-00002-of-00002.safetensors")
    with pytest.raises(ModelFileError, match="model-00002-of-00002.safetensors: listed in model.safetensors.index"):
        llm.load_model(str(tmp_path / "broken"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({**SMALL, "num_hidden_layers": "four"}))
    with pytest.raises(ModelFileError, match="num_hidden_layers"):
        llm.load_model(str(bad))
    (bad / "config.json").write_text("{not json")
    with pytest.raises(ModelFileError, match="not valid JSON"):
        llm.load_model(str(bad))
    with pytest.raises(VramBudgetError, match="unknown model 'Llama 9 1T'"):
        llm.load_model("Llama 9 1T")


def llama_gguf_tensors(cfg, ftype: str) -> dict:
    """The tensors convert_hf_to_gguf + llama-quantize write for a llama-arch model, typed by the mix."""
    out = {}
    for t in tensor_list(cfg):
        if t.category == "norm":
            name = t.name if t.name.endswith(".weight") else t.name.replace("norm", "attn_norm.weight")
            if name in out:
                name = name.replace("attn_norm", "ffn_norm")
            out[name] = ("F32", t.shape)
        else:
            out[t.name] = (gguf_tensor_type(t, ftype, cfg), t.shape)
    return out


def test_gguf_file_read_from_metadata(tmp_path):
    c = {**SMALL, "model_type": "llama", "head_dim": 128, "hidden_size": 512, "num_attention_heads": 4,
         "intermediate_size": 1024, "vocab_size": 2048}
    cfg0 = llm.config_from_hf(c, "tiny", "test")
    tensors = llama_gguf_tensors(cfg0, "Q4_K_M")
    meta = {"llama.block_count": 4, "llama.embedding_length": 512, "llama.feed_forward_length": 1024,
            "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2, "llama.context_length": 8192,
            "general.file_type": 15, "general.name": "tiny-llama"}
    written = write_gguf(tmp_path / "tiny.gguf", tensors, arch="llama", metadata=meta)
    cfg = llm.load_model(str(tmp_path / "tiny.gguf"))
    assert (cfg.name, cfg.layers, cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim) == ("tiny-llama", 4, 512, 4, 2, 128)
    assert (cfg.vocab, cfg.max_context, cfg.tied_embeddings) == (2048, 8192, False)
    assert cfg.stored_format == "GGUF Q4_K_M"
    assert cfg.params == written.params == text_params(cfg)
    assert cfg.stored.total == gguf_expected_bytes(tensors) == llm.weights_bytes(cfg, "file")
    assert llm.weights_bytes(cfg, "Q4_K_M") == cfg.stored.total  # the mix rebuilt from the config = the file
    assert cfg.stored.output == 2048 * 512 // 256 * 210  # Q6_K head
    # llama.cpp puts the output head + last layers on the GPU: per-layer bytes come from the file
    assert sum(cfg.stored.layers) + cfg.stored.embed + cfg.stored.output + cfg.stored.other == cfg.stored.total


def test_tied_gguf_counts_the_embedding_once(tmp_path):
    """No output.weight: the head is token_embd (stored once); llama.cpp duplicates it onto the GPU."""
    c = {**SMALL, "model_type": "llama", "head_dim": 128, "hidden_size": 512, "num_attention_heads": 4,
         "intermediate_size": 1024, "vocab_size": 2048, "tie_word_embeddings": True}
    cfg0 = llm.config_from_hf(c, "tied", "test")
    tensors = llama_gguf_tensors(cfg0, "Q8_0")
    meta = {"llama.block_count": 4, "llama.embedding_length": 512, "llama.attention.head_count": 4,
            "llama.attention.head_count_kv": 2, "general.file_type": 7}
    write_gguf(tmp_path / "tied.gguf", tensors, arch="llama", metadata=meta)
    cfg = llm.load_model(str(tmp_path / "tied.gguf"))
    assert cfg.tied_embeddings and cfg.stored.tied and cfg.stored_format == "GGUF Q8_0"
    assert cfg.stored.total == gguf_expected_bytes(tensors) and cfg.stored.output == cfg.stored.embed
    assert llm.weights_bytes(cfg, "Q8_0") == cfg.stored.total
    p = llm.serve_plan(cfg, 1024, weights="file", engine="llama.cpp")
    assert p.per_gpu_high == sum(cfg.stored.layers) + cfg.stored.output + cfg.stored.other + \
        llm.kv_cache_bytes(cfg, 1024) + 2 * GB


def test_gguf_without_hyperparameters_is_an_error(tmp_path):
    path = tmp_path / "x.gguf"
    write_gguf(path, {"token_embd.weight": ("F16", (32, 32))}, arch="llama", metadata={})
    with pytest.raises(ModelFileError, match="llama.block_count"):
        llm.load_model(str(path))


# ---------------------------------------------------------------------------------------------
# Engines
def test_vllm_share_and_flags():
    qwen = llm.load_model("Qwen3 32B")
    l40s = find_card("L40S")
    p = llm.serve_plan(qwen, 32_000, weights="fp8", engine="vllm", card=l40s)
    assert p.capacity_bytes == int(0.92 * l40s.total_bytes) and p.verdict == "fits"  # vLLM 0.21's default
    r = llm.vllm_reserve(qwen, 32_000, 1, l40s)
    assert p.reserve_bytes == r.total and p.vllm_reserve == r.to_dict()
    assert p.per_gpu_high == llm.weights_bytes(qwen, "fp8", "vllm") + llm.kv_cache_bytes(qwen, 32_000) + r.total
    assert "--max-model-len 32000" in p.flags and "--gpu-memory-utilization 0.92" in p.flags
    fp8kv = llm.serve_plan(qwen, 32_000, weights="fp8", kv_dtype="fp8", engine="vllm", card=l40s)
    assert "--kv-cache-dtype fp8" in fp8kv.flags and fp8kv.max_users > p.max_users >= 1
    # a plan that needs a little more than the default: vLLM's own knob is raised (up to 0.95), and said
    l70 = llm.load_model("Llama 3.x 70B")
    h = llm.serve_plan(l70, 8192, weights="fp8", engine="vllm", card=find_card("H100"))
    assert h.verdict == "fits" and 0.92 < h.utilization <= 0.95
    assert f"--gpu-memory-utilization {h.utilization:.2f}" in h.flags
    eager = llm.serve_plan(l70, 8192, weights="fp8", engine="vllm", card=find_card("H100"), enforce_eager=True)
    assert eager.verdict == "fits" and "--enforce-eager" in eager.flags  # no CUDA-graph memory to hold
    fixed = llm.serve_plan(l70, 8192, weights="fp8", engine="vllm", card=find_card("H100"), utilization=0.9)
    assert fixed.verdict != "fits"
    assert llm.vllm_rules("0.6.4").utilization == 0.9 and llm.serve_plan(
        qwen, 32_000, weights="fp8", engine="vllm", card=l40s, vllm_version="0.11").utilization == 0.9


def test_vllm_counts_use_the_share_it_sets():
    """The bug of issue 23: no --gpu-memory-utilization printed 'set 0.90' but sized rooms at 0.95."""
    l8 = llm.load_model("Llama 3.1 8B")
    card = find_card("RTX 4090")
    p = llm.serve_plan(l8, 8192, engine="vllm", card=card)
    assert p.utilization == 0.92 and p.capacity_bytes == int(0.92 * card.total_bytes)
    one_more = llm.serve_plan(l8, 8192, users=p.max_users + 1, engine="vllm", card=card, utilization=0.92,
                              fit_max_num_seqs=False)  # at vLLM's default --max-num-seqs, as the room count is
    assert one_more.verdict != "fits"  # the room count is the pool at the share the flags set
    per_token = 32 * 8 * 128 * 2 * 2
    pool = p.capacity_bytes - llm.weights_bytes(l8, "16bit", "vllm") - p.reserve_bytes
    assert p.kv_cache_tokens == pool // (per_token * 16) * 16
    assert p.max_concurrency == round(p.kv_cache_tokens / 8192, 2)


def test_vllm_reserve_grows_with_the_profiled_tokens():
    l8 = llm.load_model("Llama 3.1 8B")
    v0 = llm.vllm_rules("0.6.4")
    a, b = llm.vllm_reserve(l8, 20_000, rules=v0), llm.vllm_reserve(l8, 29_000, rules=v0)
    assert (a.max_num_batched_tokens, b.max_num_batched_tokens) == (20_000, 29_000) and not a.chunked_prefill
    assert b.activation_bytes - a.activation_bytes == 9_000 * 110_592  # 0.93 GiB; vllm#10517 logged 0.92
    assert llm.vllm_reserve(l8, 40_000, rules=v0).max_num_batched_tokens == 512  # V0 chunks above 32k
    cur = llm.vllm_reserve(l8, 131_072)
    assert cur.chunked_prefill and cur.max_num_batched_tokens == 2048 and cur.cuda_graph_bytes > 0
    big = llm.vllm_reserve(l8, 131_072, card=find_card("H100"))
    assert (big.max_num_batched_tokens, big.max_num_seqs) == (8192, 1024)
    assert llm.vllm_reserve(l8, 131_072, card=find_card("A100 80GB")).max_num_batched_tokens == 2048
    assert llm.vllm_reserve(l8, 1000, enforce_eager=True).cuda_graph_bytes == 0
    assert llm.vllm_reserve(l8, 1000, gpus=4).non_torch_bytes > cur.non_torch_bytes  # grows with TP
    assert llm.vllm_reserve(l8, 1000, max_num_batched_tokens=4096).activation_bytes == 4096 * 110_592
    with pytest.raises(VramBudgetError, match="--vllm-version 'x'"):
        llm.vllm_rules("x")
    with pytest.raises(VramBudgetError, match="--max-num-batched-tokens 0"):
        llm.vllm_reserve(l8, 1000, max_num_batched_tokens=0)


def test_vllm_refuses_what_its_pool_cannot_hold():
    """vllm#10517: Llama 3.1 8B on an RTX 3090 at 0.9 started at 20k tokens and refused 29k."""
    l8, card = llm.load_model("Llama 3.1 8B"), find_card("RTX 3090")
    ok = llm.serve_plan(l8, 20_000, engine="vllm", card=card, utilization=0.9, vllm_version="0.6.4")
    bad = llm.serve_plan(l8, 29_000, engine="vllm", card=card, utilization=0.9, vllm_version="0.6.4")
    assert ok.verdict == "fits" and bad.verdict == "oom" and bad.kv_cache_tokens < 29_000 <= ok.kv_cache_tokens


def test_vllm_max_model_len_auto():
    l8, card = llm.load_model("Llama 3.1 8B"), find_card("RTX 4090")
    p = llm.serve_plan(l8, "auto", engine="vllm", card=card)
    assert p.context == p.max_context == p.kv_cache_tokens and p.verdict == "fits" and p.max_concurrency == 1.0
    assert f"--max-model-len {p.context}" in p.flags
    assert llm.serve_plan(llm.load_model("Qwen3 4B"), "auto", engine="vllm", card=find_card("H100")).context == 40960
    for kw, needle in [(dict(card=None), "give a card"), (dict(card=card, context="long"), "'long'")]:
        with pytest.raises(VramBudgetError, match=needle):
            llm.serve_plan(l8, **{"context": "auto", **kw}, engine="vllm")
    with pytest.raises(VramBudgetError, match="leaves no room"):
        llm.serve_plan(llm.load_model("Llama 3.x 70B"), "auto", engine="vllm", card=card)


def test_vllm_tensor_parallel_splits_weights_and_kv_heads():
    l70 = llm.load_model("Llama 3.x 70B")
    one = llm.serve_plan(l70, 128_000, weights="fp8", engine="vllm")
    two = llm.serve_plan(l70, 128_000, weights="fp8", engine="vllm", gpus=2)
    w = llm.weights_bytes(l70, "fp8", "vllm")
    r2 = llm.vllm_reserve(l70, 128_000, gpus=2)
    assert two.per_gpu_high == -(-w // 2) + llm.kv_cache_bytes(l70, 128_000) // 2 + r2.total
    assert "--tensor-parallel-size 2" in two.flags and one.per_gpu_high > two.per_gpu_high
    # more cards than KV heads: each card keeps a copy of one head (8 heads, 16 cards -> 1/8 of the cache each)
    sixteen = llm.serve_plan(l70, 128_000, weights="fp8", engine="vllm", gpus=16)
    r16 = llm.vllm_reserve(l70, 128_000, gpus=16)
    assert sixteen.per_gpu_high == -(-w // 16) + llm.kv_cache_bytes(l70, 128_000) // 8 + r16.total
    with pytest.raises(VramBudgetError, match="divisible"):
        llm.serve_plan(l70, 1000, engine="vllm", gpus=3)


def test_partly_quantised_checkpoint_keeps_ignored_modules_16bit(tmp_path):
    """An FP8 checkpoint that keeps attention in BF16 (compressed-tensors ignore list) is not 'every linear FP8'."""
    base = dict(SMALL)
    ignore_attn = {**base, "quantization_config": {
        "quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}}}}
    folder = tmp_path / "fp8"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(ignore_attn))
    cfg = llm.load_model(str(folder))
    assert cfg.quant.method == "compressed-tensors" and cfg.quant.bits == 8
    h, i, kvd, L = 256, 512, 2 * 64, 4
    attn = L * (2 * h * 4 * 64 + 2 * h * kvd)
    mlp = L * 3 * h * i
    everything_fp8 = llm.weights_bytes(dataclasses.replace(cfg, quant=None), "fp8", "vllm")
    got = llm.weights_bytes(cfg, "file", "vllm")  # config only: sized from quantization_config
    assert llm.weight_format("file", "vllm", cfg) == "checkpoint"
    # asking for the checkpoint's own precision is the checkpoint, not "every linear FP8"; another one is not
    assert llm.weight_format("fp8", "vllm", cfg) == "checkpoint" and llm.weights_bytes(cfg, "fp8", "vllm") == got
    assert llm.weight_format("4bit", "vllm", cfg) != "checkpoint"
    assert got - everything_fp8 == attn  # attention kept 2 bytes instead of 1
    assert got == llm.weights_bytes(cfg, "16bit") - mlp
    # vLLM's own Fp8Config spelling, and AWQ's modules_to_not_convert
    q = llm_quant.checkpoint_quant({"quant_method": "fp8", "ignored_layers": ["model.layers.0.mlp.down_proj"]})
    assert q.bits == 8 and q.ignored("model.layers.0.mlp.down_proj") and not q.ignored("model.layers.1.mlp.down_proj")
    awq = llm_quant.checkpoint_quant({"quant_method": "awq", "bits": 4, "group_size": 128,
                                      "modules_to_not_convert": ["visual"]})
    assert awq.bits == 4 + 20 / 128 and awq.ignored("visual.blocks.0.attn.qkv")
    assert llm_quant.checkpoint_quant({"quant_method": "mystery"}) is None and llm_quant.checkpoint_quant(None) is None
    out = run("llm", str(folder), "--json")
    d = json.loads(out.stdout)
    assert out.returncode == 0 and d["weight_format"] == "checkpoint" and d["weights_bytes"] == got
    assert d["config"]["quantization"] == {"method": "compressed-tensors", "bits": 8.0,
                                           "ignore": ["lm_head", "re:.*self_attn.*"]}
    # with the safetensors present the headers win, and each module kind's dtype is recorded
    spec = write_hf_folder(tmp_path / "hdr", {**base})
    cfg2 = llm.load_model(str(tmp_path / "hdr"))
    assert "attention BF16" in llm.module_dtype_summary(cfg2) and "mlp BF16" in llm.module_dtype_summary(cfg2)
    d2 = json.loads(run("llm", str(tmp_path / "hdr"), "--json").stdout)
    assert "attention BF16" in d2["config"]["module_dtypes"] and d2["config"]["quantization"] is None
    assert sum(b for _, _, b in cfg2.module_dtypes) == cfg2.stored.total == sum(
        math.prod(sh) * ITEMSIZE[d] for d, sh in spec.values())


def test_llamacpp_offload_layers_and_flash_attention():
    l70 = llm.load_model("Llama 3.x 70B")
    card = find_card("RTX 4090")
    p = llm.serve_plan(l70, 8192, weights="4bit", engine="llama.cpp", card=card)
    assert p.verdict == "offload" and f"-ngl {p.gpu_layers}" in p.flags
    layout = llm.weights_layout(l70, "4bit", "llama.cpp")
    kv_layer = llm.kv_cache_bytes(l70, 8192) // 80
    n = p.gpu_layers - 1  # -ngl counts the output head as one layer
    used = layout.output + layout.other + sum(layout.layers[-n:]) + n * kv_layer
    assert used + 2 * GB <= card.total_bytes < used + layout.layers[-n - 1] + kv_layer + 2 * GB
    q = llm.serve_plan(l70, 8192, weights="4bit", kv_dtype="q8_0", engine="llama.cpp", card=find_card("L40S"))
    assert {"--cache-type-k q8_0", "--cache-type-v q8_0", "-fa on"} <= set(q.flags)
    assert any("flash attention" in n for n in q.notes) and "-ngl 99" in q.flags
    multi = llm.serve_plan(l70, 4096, users=4, weights="4bit", engine="llama.cpp")
    assert "-c 16384" in multi.flags and "-np 4" in multi.flags  # -c is shared by the -np slots
    with pytest.raises(VramBudgetError, match="llama.cpp cannot run fp8"):
        llm.serve_plan(l70, 4096, weights="fp8", engine="llama.cpp")
    with pytest.raises(VramBudgetError, match="no fp8 KV cache"):
        llm.serve_plan(l70, 4096, weights="4bit", kv_dtype="fp8", engine="llama.cpp")


def test_ollama_defaults_and_environment():
    q8 = llm.load_model("Qwen3 8B")
    # server/routes.go (v0.15.5+): the driver's total memory, 4k below 23 GiB, 32k from 23 GiB, 256k from 47 GiB
    assert llm.serve_plan(q8, engine="ollama", weights="4bit", card=find_card("RTX 4060")).context == 4096
    assert llm.serve_plan(q8, engine="ollama", weights="4bit", card=find_card("RTX 4090")).context == 32768
    assert llm.serve_plan(q8, engine="ollama", weights="4bit", card=find_card("RTX 5090")).context == 32768
    assert llm.serve_plan(q8, engine="ollama", weights="4bit", card=find_card("RTX 4060"), gpus=3).context == 32768
    # before 0.15.5 the default was 4096 whatever the card, before 0.6.7 2048
    for v, ctx in (("0.15.4", 4096), ("0.6.6", 2048), ("0.12.10", 4096)):
        assert llm.serve_plan(q8, engine="ollama", weights="4bit", card=find_card("RTX 4090"),
                              ollama_version=v).context == ctx
    assert llm.serve_plan(q8, engine="ollama", weights="4bit", card=find_card("H100")).context == q8.max_context
    p = llm.serve_plan(q8, 16384, users=2, weights="4bit", kv_dtype="q8_0", engine="ollama", card=find_card("RTX 4090"))
    assert p.env == {"OLLAMA_CONTEXT_LENGTH": "16384", "OLLAMA_NUM_PARALLEL": "2", "OLLAMA_KV_CACHE_TYPE": "q8_0",
                     "OLLAMA_FLASH_ATTENTION": "1"}
    assert p.kv_bytes == llm.kv_cache_bytes(q8, 16384, 2, "q8_0")


def test_serving_errors():
    cfg = llm.load_model("Qwen3 8B")
    for kw, needle in [(dict(context=0), "--context 0"), (dict(users=-1), "--users -1"), (dict(gpus=0), "--gpus 0"),
                       (dict(context=10**6), "trained for 40960"), (dict(engine="tgi"), "--engine 'tgi'"),
                       (dict(weights="3bit"), "--weights '3bit'"), (dict(kv_dtype="int2"), "--kv-dtype 'int2'"),
                       (dict(utilization=float("nan")), "--gpu-memory-utilization nan"),
                       (dict(weights="file"), "--weights file")]:
        with pytest.raises(VramBudgetError, match=re.escape(needle)):
            llm.serve_plan(cfg, **kw)


# ---------------------------------------------------------------------------------------------
# FACTS.md "Cards": which card serves (the LLM rows), on each engine
def cheapest(cfg, **kw):
    options = llm.cheapest_serving(cfg, **kw)
    assert options, kw
    single = next((o for o in options if o.count == 1), None)
    return single, options


def nominal(option) -> int:
    return next(c.nominal_gb for c in CARDS if c.name == option.card)


@pytest.mark.parametrize("engine,eight", [("vllm", "fp8"), ("llama.cpp", "8bit"), ("ollama", "8bit")])
def test_cards_32b_long_context_or_users(engine, eight):
    """"32B LLM with >32,000 tokens of context or several users: 48-80 GB"."""
    qwen = llm.load_model("Qwen3 32B")
    for kw in (dict(context=32_000, weights=eight), dict(context=32_000, weights="16bit"),
               dict(context=8_000, users=4, weights=eight)):
        single, _ = cheapest(qwen, engine=engine, **kw)
        assert 48 <= nominal(single) <= 80, (engine, kw, single)


@pytest.mark.parametrize("engine", ["vllm", "llama.cpp", "ollama"])
def test_cards_70b(engine):
    """"70B LLM in 4 bit: 48 GB normal context, 80 GB long context or serving"; "70B in FP8: 80-96 GB short
    context, 141 GB or two cards long context"."""
    l70 = llm.load_model("Llama 3.x 70B")
    eight = "fp8" if engine == "vllm" else "8bit"
    assert nominal(cheapest(l70, context=8192, weights="4bit", engine=engine)[0]) == 48
    assert nominal(cheapest(l70, context=65536, weights="4bit", engine=engine)[0]) == 80
    assert nominal(cheapest(l70, context=16384, users=4, weights="4bit", engine=engine)[0]) == 80
    assert 80 <= nominal(cheapest(l70, context=8192, weights=eight, engine=engine)[0]) <= 96
    single, options = cheapest(l70, context=128_000, weights=eight, engine=engine)
    assert nominal(single) == 141 and any(o.count >= 2 for o in options)
    two = llm.serve_plan(l70, 128_000, weights=eight, engine=engine, gpus=2, card=find_card("H100"))
    assert two.verdict == "fits"


def test_remedies_follow_the_guide():
    l70 = llm.load_model("Llama 3.x 70B")
    card = find_card("H100")
    p = llm.serve_plan(l70, 128_000, weights="16bit", engine="vllm", card=card)
    steps = llm.serve_remedies(l70, p, card, "16bit", "vllm")
    kinds = [s.what.split(" (")[0] for s in steps]
    assert kinds == ["fp8 KV cache", "FP8 / 8-bit weights", "4-bit weights"]
    assert steps[-1].verdict == "fits" and all(a.per_gpu_high > b.per_gpu_high for a, b in zip(steps, steps[1:]))


# ---------------------------------------------------------------------------------------------
# Command line
def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_cli_llm_text():
    out = run("llm", "Qwen3 32B", "--context", "32000", "--weights", "fp8")
    assert out.returncode == 0, out.stderr
    assert "Qwen3 32B on vLLM" in out.stdout and "256 KiB/token" in out.stdout
    assert "on L40S" in out.stdout and ": fits" in out.stdout and "--max-model-len 32000" in out.stdout
    assert "cheapest: L40S, €1.06/h" in out.stdout


def test_cli_llm_json_and_engines(tmp_path):
    out = run("llm", "llama-3.3-70b", "--context", "8192", "--weights", "4bit", "--engine", "llama.cpp",
              "--kv-dtype", "q8_0", "--gpu", "RTX 4090", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["engine"] == "llama.cpp" and d["weight_format"] == "Q4_K_M" and d["verdict"] == "offload"
    assert d["kv_bytes_per_token"] == 80 * 8 * 128 * 2 * 34 // 32 and "-fa on" in d["flags"]
    assert d["model"] == "Llama 3.x 70B" and d["config"]["layers"] == 80 and d["cheapest"][0]["card"] == "L40S" and d["remedies"]
    write_hf_folder(tmp_path / "small")
    out = run("llm", str(tmp_path / "small"), "--engine", "ollama", "--ollama-version", "0.12.10", "--json")
    d = json.loads(out.stdout)
    assert out.returncode == 0 and d["weight_format"] == "file" and d["env"]["OLLAMA_CONTEXT_LENGTH"] == "4096"
    assert any("GGUF" in n for n in d["notes"])


@pytest.mark.parametrize("args,needle", [
    (("llm", "Llama 9 1T"), "unknown model 'Llama 9 1T'"),
    (("llm", "Qwen3 8B", "--context", "0"), "--context 0"),
    (("llm", "Qwen3 8B", "--users", "-2"), "--users -2"),
    (("llm", "Qwen3 8B", "--gpu-memory-utilization", "nan"), "--gpu-memory-utilization nan"),
    (("llm", "Qwen3 8B", "--gpu-memory-utilization", "inf"), "--gpu-memory-utilization inf"),
    (("llm", "Qwen3 8B", "--engine", "tgi"), "--engine 'tgi'"),
    (("llm", "Qwen3 8B", "--gpu", "Voodoo 2"), "unknown GPU"),
    (("llm", "Qwen3 8B", "--kv-dtype", "fp8", "--engine", "ollama"), "Ollama has no fp8 KV cache"),
    (("llm", "Qwen3 8B", "--context", "nan"), "invalid int value"),
    (("llm", "/no/such/folder"), "no such file or folder"),
])
def test_cli_llm_errors(args, needle):
    out = run(*args)
    assert out.returncode == 2, out.stdout
    assert needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_cli_llm_missing_config(tmp_path):
    (tmp_path / "m").mkdir()
    out = run("llm", str(tmp_path / "m"))
    assert out.returncode == 2 and "no config.json" in out.stderr and len(out.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# Issue 23: Ollama's own split, llama.cpp -ngl / --n-cpu-moe / --tensor-split, speed, the new CLI flags
QWEN2_72B = dict(model_type="qwen2", hidden_size=8192, intermediate_size=29568, num_hidden_layers=80,
                 num_attention_heads=64, num_key_value_heads=8, vocab_size=152064, max_position_embeddings=32768,
                 tie_word_embeddings=False)
GiB_ = 1 << 30


def test_ollama_estimate_follows_memory_go():
    """ollama#5913: dolphin-qwen2:72b q4_k_s, num_ctx 2048, 24.0 GiB free -> layers.offload=43, kv 640 MiB,
    graph.full 313.0 MiB, graph.partial 1.3 GiB, allocations 23.7 GiB."""
    cfg = llm.config_from_hf(QWEN2_72B, "Qwen2 72B", "test")
    layout = llm.weights_layout(cfg, "Q4_K_S", "ollama")
    e = llm.ollama_estimate(cfg, layout, 2048, [24 * GiB_])
    assert (e.layers_model, e.layers_offload, e.layers_split) == (81, 43, (43,))
    assert e.kv_bytes == 640 * 2**20 and round(e.graph_full_bytes / 2**20, 1) == 313.0
    assert round(e.graph_partial_bytes / GiB_, 1) == 1.3 and round(e.allocations[0] / GiB_, 1) == 23.5
    assert e.required_full == e.required_partial + e.overflow and e.overflow > 0
    # every layer reserved once more up front (blk.0 + its KV): memory.go:303
    first = layout.layers[0] + 8 * 2**20
    assert e.allocations[0] == llm.OLLAMA_MINIMUM_MEMORY + first + sum(layout.layers[-43:]) + 43 * 8 * 2**20 + \
        e.graph_partial_bytes
    # num_gpu as an input, several GPUs (the partial graph on each), and the plan around it
    assert llm.ollama_estimate(cfg, layout, 2048, [24 * GiB_], num_gpu=10).layers_offload == 10
    two = llm.ollama_estimate(cfg, layout, 2048, [24 * GiB_, 24 * GiB_])
    assert two.graph_full_bytes == two.graph_partial_bytes and sum(two.layers_split) == two.layers_offload > 43
    p = llm.serve_plan(cfg, 2048, weights="Q4_K_S", engine="ollama", free_bytes=[24 * GiB_], card=find_card("RTX 4090"),
                       ollama_version="0.3.0")
    assert p.verdict == "offload" and p.gpu_layers == 43 and p.ollama["layers_offload"] == 43
    assert "PARAMETER num_gpu 43 (layers on the GPU)" in p.flags
    ngl = llm.serve_plan(cfg, 2048, weights="Q4_K_S", engine="ollama", card=find_card("H100"), gpu_layers=20,
                         ollama_version="0.3.0")
    assert ngl.gpu_layers == 20 and ngl.verdict == "offload"


def test_ollama_counts_the_vision_projector_and_its_graph():
    g = llm.load_model("Gemma 3 27B")
    w, graph = llm.ollama_projector(g)
    assert w == g.vision_params * 2 and graph == 4 * (896 * 896 * 3 + 1152 * 14 + 4096 * 4096 * 16)
    p = llm.serve_plan(g, 8192, weights="4bit", engine="ollama", card=find_card("RTX 4090"), ollama_version="0.9.2")
    assert p.ollama["projector_graph"] == graph and p.per_gpu_high > llm.weights_bytes(g, "4bit", "ollama")
    q = llm.serve_plan(llm.load_model("Qwen2.5-VL 7B"), 4096, weights="4bit", engine="ollama", card=find_card("H100"),
                       ollama_version="0.9.2")
    assert q.ollama["projector_graph"] > 0 and q.verdict == "fits"
    assert llm.ollama_projector(llm.load_model("Qwen3 8B")) == (0, 0)
    # Gemma 3's sliding layers hold parallel x window + batch tokens in Ollama (ggml.go gemma3 case)
    kvl, _, _ = llm.ollama_graph(g, 32768)
    row = 2 * g.head_dim * g.kv_heads * 2
    assert kvl[5] == 32768 * row and kvl[0] == (1024 + 512) * row


def test_llamacpp_ngl_as_input():
    """ollama#3301: Llama 3 70B Q4_0 at -ngl 30 -> CUDA0 buffer 13771.88 MiB (the last 30 layers)."""
    l70 = llm.load_model("Llama 3.1 70B")
    layout = llm.weights_layout(l70, "Q4_0", "llama.cpp")
    assert round(sum(layout.layers[-30:]) / 2**20, 2) == 13771.88
    p = llm.serve_plan(l70, 2048, weights="Q4_0", engine="llama.cpp", gpu_layers=30, card=find_card("RTX 4090"))
    kv30 = 30 * llm.kv_cache_bytes(l70, 2048) // 80
    assert p.per_gpu_high == sum(layout.layers[-30:]) + kv30 + 2 * GB and p.gpu_layers == 30
    assert p.verdict == "offload" and "-ngl 30" in p.flags
    assert llm.serve_plan(l70, 2048, weights="Q4_0", engine="llama.cpp", gpu_layers=60,
                          card=find_card("RTX 4090")).verdict == "oom"
    everything = llm.serve_plan(l70, 2048, weights="Q4_0", engine="llama.cpp", gpu_layers=99)
    assert everything.per_gpu_high == llm.serve_plan(l70, 2048, weights="Q4_0", engine="llama.cpp").per_gpu_high
    with pytest.raises(VramBudgetError, match="-ngl"):
        llm.serve_plan(l70, 2048, engine="vllm", gpu_layers=3)
    with pytest.raises(VramBudgetError, match="-ngl -1"):
        llm.serve_plan(l70, 2048, weights="Q4_0", engine="llama.cpp", gpu_layers=-1)


def test_llamacpp_cpu_moe():
    q = llm.load_model("qwen3-30b-a3b")
    card = find_card("RTX 4060 Ti 8GB")
    layout = llm.weights_layout(q, "Q4_K_M", "llama.cpp")
    assert len(layout.experts) == 48 and all(0 < e < b for e, b in zip(layout.experts, layout.layers))
    ten = llm.serve_plan(q, 8192, weights="Q4_K_M", engine="llama.cpp", n_cpu_moe=10)
    base = llm.serve_plan(q, 8192, weights="Q4_K_M", engine="llama.cpp")
    assert base.per_gpu_high - ten.per_gpu_high == sum(layout.experts[:10]) == ten.cpu_moe_bytes
    assert ten.n_cpu_moe == 10 and "--n-cpu-moe 10" in ten.flags and ten.weights_bytes == base.weights_bytes
    every = llm.serve_plan(q, 8192, weights="Q4_K_M", engine="llama.cpp", n_cpu_moe="all")
    assert "--cpu-moe" in every.flags and every.cpu_moe_bytes == sum(layout.experts)
    auto = llm.serve_plan(q, 8192, weights="Q4_K_M", engine="llama.cpp", n_cpu_moe="auto", card=card)
    fewer = llm.serve_plan(q, 8192, weights="Q4_K_M", engine="llama.cpp", n_cpu_moe=auto.n_cpu_moe - 1, card=card)
    assert auto.verdict == "fits" and fewer.verdict != "fits"  # the fewest layers, as llama-fit-params searches
    for kw, needle in [(dict(n_cpu_moe=2, engine="vllm"), "llama.cpp's"), (dict(n_cpu_moe="some"), "'some'"),
                       (dict(n_cpu_moe=-1), "--n-cpu-moe -1"), (dict(n_cpu_moe="auto"), "give a card")]:
        with pytest.raises(VramBudgetError, match=needle):
            llm.serve_plan(q, 8192, **{"weights": "Q4_K_M", "engine": "llama.cpp", **kw})
    with pytest.raises(VramBudgetError, match="not a mixture-of-experts"):
        llm.serve_plan(llm.load_model("Qwen3 8B"), 8192, weights="Q4_K_M", engine="llama.cpp", n_cpu_moe=2)


def test_llamacpp_tensor_split():
    l70 = llm.load_model("Llama 3.3 70B")
    even = llm.serve_plan(l70, 8192, weights="4bit", engine="llama.cpp", gpus=2)
    uneven = llm.serve_plan(l70, 8192, weights="4bit", engine="llama.cpp", gpus=2, tensor_split=[3, 1])
    assert llm_serve._split_layers(80, (3, 1)) == [60, 20] and llm_serve._split_layers(80, (1, 1)) == [40, 40]
    layout = llm.weights_layout(l70, "4bit", "llama.cpp")
    assert uneven.per_gpu_high == sum(layout.layers[:60]) + 60 * llm.kv_cache_bytes(l70, 8192) // 80 + 2 * GB
    assert uneven.per_gpu_high > even.per_gpu_high and "--tensor-split 3,1" in uneven.flags
    assert uneven.tensor_split == (3.0, 1.0)
    for split, needle in [([1], "give 2"), ([1, -1], "give 2"), ("a,b", "'a,b'")]:
        with pytest.raises(VramBudgetError, match=needle):
            llm.serve_plan(l70, 8192, weights="4bit", engine="llama.cpp", gpus=2, tensor_split=split)
    with pytest.raises(VramBudgetError, match="llama.cpp's"):
        llm.serve_plan(l70, 8192, engine="vllm", gpus=2, tensor_split=[1, 1])


def test_tokens_per_second_is_an_estimate_with_its_basis():
    l8 = llm.load_model("Llama 3.1 8B")
    card = find_card("RTX 4090")
    p = llm.serve_plan(l8, 8192, engine="vllm", card=card)
    read = llm.weights_bytes(l8, "16bit") - 128256 * 4096 * 2 + llm.kv_cache_bytes(l8, 8192)
    assert p.decode_tokens_per_s == round(1008e9 / read, 1)  # bandwidth over the bytes one token reads
    assert p.prefill_tokens_per_s == round(165.2e12 * 0.5 / (2 * l8.params))
    assert p.speed_basis.startswith("estimate:") and "1008 GB/s" in p.speed_basis
    h100 = find_card("H100")
    moe = llm.serve_plan(llm.load_model("qwen3-30b-a3b"), 8192, weights="Q4_K_M", engine="llama.cpp", card=h100)
    dense = llm.serve_plan(llm.load_model("Qwen3 32B"), 8192, weights="Q4_K_M", engine="llama.cpp", card=h100)
    assert moe.decode_tokens_per_s > 3 * dense.decode_tokens_per_s  # 3B active of 30B
    assert llm.serve_plan(l8, 8192, engine="vllm").decode_tokens_per_s == 0  # no card, no speed


def test_cli_llm_issue23_flags_and_fields():
    out = run("llm", "Llama 3.1 8B", "--max-model-len", "auto", "--gpu", "RTX 4090", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    for key in ("kv_cache_tokens", "max_concurrency", "reserve_bytes", "engine_version", "vllm_reserve", "ollama",
                "n_cpu_moe", "cpu_moe_bytes", "tensor_split", "decode_tokens_per_s", "prefill_tokens_per_s",
                "speed_basis"):
        assert key in d, key
    assert d["context"] == d["kv_cache_tokens"] == d["max_context"] and d["max_concurrency"] == 1.0
    assert d["utilization"] == 0.92 and "0.92" in d["engine_version"] and d["vllm_reserve"]["cuda_graph_bytes"] > 0
    out = run("llm", "Llama 3.1 8B", "--context", "8192", "--gpu", "RTX 4090", "--enforce-eager",
              "--max-num-batched-tokens", "4096", "--max-num-seqs", "64", "--vllm-version", "0.11")
    assert out.returncode == 0, out.stderr
    assert "GPU KV cache size:" in out.stdout and "Maximum concurrency for 8,192 tokens per request:" in out.stdout
    assert "--enforce-eager" in out.stdout and "--max-num-batched-tokens 4096" in out.stdout
    assert "--gpu-memory-utilization 0.90" in out.stdout and "speed (estimate)" in out.stdout
    out = run("llm", "Llama 3.3 70B", "--engine", "llama.cpp", "--weights", "Q4_0", "-ngl", "30", "--vram", "20",
              "--json")
    d = json.loads(out.stdout)
    assert out.returncode == 0 and d["gpu_layers"] == 30 and d["card"] == "20 GiB free" and "-ngl 30" in d["flags"]
    out = run("llm", "qwen3-30b-a3b", "--engine", "llama.cpp", "--weights", "Q4_K_M", "--n-cpu-moe", "auto",
              "--gpu", "RTX 4060 Ti 8GB", "--json")
    d = json.loads(out.stdout)
    assert out.returncode == 0 and d["verdict"] == "fits" and d["n_cpu_moe"] > 0
    out = run("llm", "Llama 3.3 70B", "--engine", "llama.cpp", "--weights", "4bit", "--gpus", "2", "--tensor-split",
              "3,1", "--json")
    assert json.loads(out.stdout)["tensor_split"] == [3.0, 1.0]
    out = run("llm", "Qwen3 8B", "--engine", "ollama", "--weights", "4bit", "--vram", "6", "--ollama-version", "0.12.10")
    assert out.returncode == 0 and "Ollama: layers.offload=" in out.stdout


@pytest.mark.parametrize("args,needle", [
    (("llm", "Qwen3 8B", "--max-model-len", "lots"), "--max-model-len 'lots'"),
    (("llm", "Qwen3 8B", "--max-model-len", "4096", "--context", "4096"), "name the same thing"),
    (("llm", "Qwen3 8B", "--vram", "-3"), "--vram -3.0"),
    (("llm", "Qwen3 8B", "--vram", "nan"), "--vram nan"),
    (("llm", "Qwen3 8B", "--vram", "12", "--gpu", "RTX 4090"), "give one"),
    (("llm", "Qwen3 8B", "--vllm-version", "new"), "--vllm-version 'new'"),
    (("llm", "Qwen3 8B", "--max-num-batched-tokens", "0"), "--max-num-batched-tokens 0"),
    (("llm", "Qwen3 8B", "--max-num-seqs", "-1"), "--max-num-seqs -1"),
    (("llm", "Qwen3 8B", "-ngl", "20"), "-ngl / --n-gpu-layers is for llama.cpp"),
    (("llm", "Qwen3 8B", "--engine", "llama.cpp", "-ngl", "-2"), "-ngl -2"),
    (("llm", "Qwen3 8B", "--engine", "llama.cpp", "--n-cpu-moe", "4"), "not a mixture-of-experts"),
    (("llm", "qwen3-30b-a3b", "--engine", "llama.cpp", "--n-cpu-moe", "x"), "--n-cpu-moe 'x'"),
    (("llm", "Qwen3 8B", "--engine", "llama.cpp", "--gpus", "2", "--tensor-split", "1"), "give 2 non-negative"),
    (("llm", "Qwen3 8B", "--tensor-split", "1,1", "--gpus", "2"), "--tensor-split is llama.cpp's"),
])
def test_cli_llm_issue23_errors(args, needle):
    out = run(*args)
    assert out.returncode == 2, out.stdout
    assert needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_vllm_sliding_window_concurrency_matches_the_rooms():
    g = llm.load_model("Gemma 3 27B")
    p = llm.serve_plan(g, 32768, engine="vllm", card=find_card("H100"))
    assert p.verdict == "fits" and int(p.max_concurrency) == p.max_users >= 2
    assert p.kv_cache_tokens // 32768 == p.max_users


# ---------------------------------------------------------------------------------------------
# Issue 23: vLLM pipeline parallelism over mixed cards (--pipeline-parallel, VLLM_PP_LAYER_PARTITION)
def test_vllm_default_partition_is_get_pp_indices():
    """vllm/distributed/utils.py:101-107: layers // N each, the remainder to partitions[-2], [-3], ..."""
    assert llm.vllm_default_partition(32, 2) == (16, 16)
    assert llm.vllm_default_partition(32, 3) == (11, 11, 10)
    assert llm.vllm_default_partition(80, 3) == (27, 27, 26)
    assert llm.vllm_default_partition(33, 4) == (8, 8, 9, 8)
    assert llm.vllm_default_partition(30, 4) == (7, 8, 8, 7)
    assert llm.vllm_default_partition(31, 4) == (8, 8, 8, 7)  # remainder N-1 reaches the first rank too
    assert llm.parse_pp_partition(" 22, 10", 32, 2) == (22, 10)


def test_vllm_pipeline_hand_checked_llama8b_on_4090_and_3060():
    """Llama 3.1 8B bf16, --context 65536, RTX 4090 + RTX 3060, vLLM 0.21 defaults, derived by hand:
    cards (gpus.py): 4090 = 24 GiB - int(0.35 GiB) = 25,769,803,776 - 375,809,638 = 25,393,994,138 B, share 0.92 ->
      int(0.92 x) = 23,362,474,606; 3060 = 12,884,901,888 - 375,809,638 = 12,509,092,250 -> 11,508,364,870.
    weights: a layer = q,o 4096x4096 x2 + k,v 4096x1024 x2 + gate,up,down 3x4096x14336 + 2 norms x4096
      = 218,112,000 params = 436,224,000 B; embed_tokens = lm_head = 128256 x 4096 x 2 = 1,050,673,152 B; the final
      norm 8,192 B (counted on every stage). Rank 0 holds the embedding, the last rank lm_head (llama.py:372-381,
      :538-553). KV: 8 heads x 128 x 2 (K,V) x 2 B = 4,096 B per layer per token; a 16-token block 65,536 B/layer.
    reserve per rank: activations 2048 tokens x 2 B x (3 x 14336 + 3 x 4096) = 226,492,416; non-torch int(0.35 GiB)
      + int(0.10 GiB) (2 ranks) = 483,183,820; CUDA graphs 16 MiB per layer of the rank; on the last rank only the
      sampler warm-up over the forward: 256 x 128256 x 38 - 226,492,416 = 1,021,181,952 (top-k / top-p sort).
    23,9: rank 0: weights 23 x 436,224,000 + 1,050,673,152 + 8,192 = 11,083,833,344; reserve 226,492,416 +
      483,183,820 + 23 x 16,777,216 = 1,095,552,204; pool 23,362,474,606 - both = 11,183,089,058
      -> // (23 x 65,536) = 7,419 blocks = 118,704 tokens.
      rank 1: weights 3,926,016,000 + 1,050,681,344 = 4,976,697,344; reserve 226,492,416 + 1,021,181,952 +
      483,183,820 + 150,994,944 = 1,881,853,132; pool 4,649,814,394 -> // 589,824 = 7,883 blocks = 126,128 tokens.
      vLLM takes the smaller: 118,704 tokens >= 65,536: fits. (22,10 -> rank 1 holds 102,448; 24,8 -> rank 0
      holds 109,152: 23,9 is the best.)
    16,16 (vLLM's default): rank 1 weights 6,979,584,000 + 1,050,681,344 = 8,030,265,344; reserve 1,999,293,644;
      pool 1,478,805,882 -> // 1,048,576 = 1,410 blocks = 22,560 tokens < 65,536: does not fit."""
    l8 = llm.load_model("Llama 3.1 8B")
    cards = [find_card("RTX 4090"), find_card("RTX 3060")]
    p = llm.serve_pipeline(l8, cards, 65536)
    pp = p.pipeline
    assert pp["vllm_pp_layer_partition"] == "23,9" and pp["layers_per_card"] == [23, 9]
    assert p.kv_cache_tokens == pp["kv_cache_tokens"] == 118_704 and p.verdict == "fits"
    r0, r1 = pp["per_card"]
    assert (r0["card"], r0["layers"], r0["first_layer"], r1["first_layer"]) == ("RTX 4090", 23, 0, 23)
    assert r0["capacity_bytes"] == 23_362_474_606 and r1["capacity_bytes"] == 11_508_364_870
    assert r0["weights_bytes"] == 11_083_833_344 and r0["reserve_bytes"] == 1_095_552_204
    assert r1["weights_bytes"] == 4_976_697_344 and r1["reserve_bytes"] == 1_881_853_132
    assert (r0["kv_cache_tokens"], r1["kv_cache_tokens"]) == (118_704, 126_128)
    assert r0["kv_bytes"] == 23 * 4096 * 65536 and r1["kv_bytes"] == 9 * 4096 * 65536
    assert r1["total_bytes"] == 4_976_697_344 + 9 * 4096 * 65536 + 1_881_853_132 and r0["fits"] and r1["fits"]
    assert pp["default_partition"] == [16, 16] and pp["default_kv_cache_tokens"] == 22_560
    assert not pp["default_fits"] and pp["custom_needed"] and pp["partition"] == "chosen"
    assert p.env == {"VLLM_PP_LAYER_PARTITION": "23,9"} and "--pipeline-parallel-size 2" in p.flags
    assert not any("--tensor-parallel-size" in f for f in p.flags) and p.max_concurrency == round(118_704 / 65536, 2)
    assert p.weights_bytes == llm.weights_bytes(l8, "16bit", "vllm") + 8192  # the final norm counted on both ranks
    # every split, tried as a given VLLM_PP_LAYER_PARTITION: none holds more than the one chosen
    pools = {}
    for a in range(1, 32):
        try:
            pools[a] = llm.serve_pipeline(l8, cards, 4096, partition=f"{a},{32 - a}").kv_cache_tokens
        except VramBudgetError:
            pass
    assert max(pools.values()) == pools[23] == 118_704 and pools[16] == 22_560


def test_vllm_pipeline_default_split_fails_where_the_custom_one_fits():
    l8 = llm.load_model("Llama 3.1 8B")
    cards = [find_card("RTX 4090"), find_card("RTX 3060")]
    p = llm.serve_pipeline(l8, cards, 65536)
    assert any("default split 16,16" in n and "does not fit" in n and "23,9 fits" in n for n in p.notes)
    with pytest.raises(VramBudgetError, match=r"16,16 does not fit on RTX 4090 \+ RTX 3060: RTX 3060 \(rank 1, 16 "
                                              r"layers\).*VLLM_PP_LAYER_PARTITION=23,9 holds 118,704 tokens"):
        llm.serve_pipeline(l8, cards, 65536, partition="16,16")
    short = llm.serve_pipeline(l8, cards, 8192)  # here vLLM's default also fits: said, the larger pool still chosen
    assert short.pipeline["default_fits"] and not short.pipeline["custom_needed"]
    assert short.pipeline["vllm_pp_layer_partition"] == "23,9" and any("also fits" in n for n in short.notes)
    given = llm.serve_pipeline(l8, cards, 8192, partition=[16, 16])
    assert given.pipeline["partition"] == "given" and given.kv_cache_tokens == 22_560
    assert any("23,9 would hold more" in n for n in given.notes)
    too_long = llm.serve_pipeline(l8, cards, 131072)  # no split holds 128k tokens: the longest that does is said
    assert too_long.verdict == "oom" and too_long.max_context == 118_704
    auto = llm.serve_pipeline(l8, cards, "auto")
    assert auto.context == auto.kv_cache_tokens == 118_704 and auto.verdict == "fits"
    three = llm.serve_pipeline(l8, [find_card("RTX 4090"), find_card("RTX 3090"), find_card("RTX 3060")], 32768)
    assert sum(three.pipeline["layers_per_card"]) == 32 and three.pipeline["layers_per_card"][2] < 11
    assert three.kv_cache_tokens > three.pipeline["default_kv_cache_tokens"] and three.verdict == "fits"
    # tied embeddings: the last rank builds its own copy for lm_head (llama.py:372-373)
    q4 = llm.load_model("Qwen3 4B")
    t = llm.serve_pipeline(q4, [find_card("RTX 3060")] * 2, 8192, partition="18,18")
    w = [s["weights_bytes"] for s in t.pipeline["per_card"]]
    assert q4.tied_embeddings and t.pipeline["layers_per_card"] == [18, 18] and w[0] == w[1]
    # chosen: the last rank also warms the sampler over Qwen3's 151,936-entry vocabulary, so it takes fewer layers
    assert llm.serve_pipeline(q4, [find_card("RTX 3060")] * 2, 8192).pipeline["layers_per_card"] == [19, 17]


@pytest.mark.parametrize("kw,needle", [
    (dict(cards=["RTX 4090"]), "at least 2 cards"),
    (dict(partition="16,15"), "add up to 31 layers, the model has 32"),
    (dict(partition="32"), "1 value(s) for 2 cards"),
    (dict(partition="a,b"), "whole numbers"),
    (dict(partition="32,0"), "at least one layer"),
    (dict(model="Llama 3.3 70B"), "no VLLM_PP_LAYER_PARTITION fits Llama 3.x 70B (16bit weights)"),
    (dict(context="long"), "'long'"),
    (dict(kv_dtype="q8_0"), "vLLM has no q8_0 KV cache"),
    (dict(tensor_split=[1, 1]), "--tensor-split is llama.cpp's"),
])
def test_vllm_pipeline_errors(kw, needle):
    model = llm.load_model(kw.pop("model", "Llama 3.1 8B"))
    cards = [find_card(c) for c in kw.pop("cards", ["RTX 4090", "RTX 3060"])]
    with pytest.raises(VramBudgetError) as e:
        llm.serve_pipeline(model, cards, **{"context": 8192, **kw})
    assert needle in str(e.value)


def test_cli_llm_pipeline_json_and_text():
    out = run("llm", "Llama 3.1 8B", "--gpu", "RTX 4090,RTX 3060", "--pipeline-parallel", "--context", "65536",
              "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    pp = d["pipeline"]
    for key in ("pipeline_parallel_size", "cards", "layers_per_card", "vllm_pp_layer_partition", "kv_cache_tokens",
                "partition", "default_partition", "default_fits", "default_kv_cache_tokens", "custom_needed",
                "per_card"):
        assert key in pp, key
    for key in ("rank", "card", "layers", "first_layer", "weights_bytes", "kv_bytes", "reserve_bytes", "total_bytes",
                "capacity_bytes", "fits", "kv_cache_tokens"):
        assert all(key in s for s in pp["per_card"]), key
    assert pp["cards"] == ["RTX 4090", "RTX 3060"] and pp["layers_per_card"] == [23, 9]
    assert pp["vllm_pp_layer_partition"] == "23,9" and pp["kv_cache_tokens"] == d["kv_cache_tokens"] == 118_704
    assert d["env"]["VLLM_PP_LAYER_PARTITION"] == "23,9" and "--pipeline-parallel-size 2" in d["flags"]
    assert d["gpus"] == 2 and d["card"] == "RTX 4090 + RTX 3060" and d["verdict"] == "fits"
    for key in ("model", "weights_bytes", "kv_bytes", "per_gpu_high", "capacity_bytes", "utilization", "max_context",
                "max_concurrency", "reserve_bytes", "vllm_reserve", "config", "cheapest", "remedies"):
        assert key in d, key  # the usual fields stay
    assert json.loads(run("llm", "Llama 3.1 8B", "--gpu", "RTX 4090", "--context", "8192", "--json").stdout)[
        "pipeline"] is None  # added, not in place of anything
    out = run("llm", "Llama 3.1 8B", "--gpu", "RTX 4090,RTX 3060", "--pipeline-parallel", "--context", "65536")
    assert out.returncode == 0, out.stderr
    assert 'VLLM_PP_LAYER_PARTITION="23,9" (chosen; vLLM\'s default 16,16 does not fit)' in out.stdout
    assert "rank 1 RTX 3060" in out.stdout and "GPU KV cache size: 118,704 tokens" in out.stdout
    assert "set: VLLM_PP_LAYER_PARTITION=23,9" in out.stdout
    same = json.loads(run("llm", "Llama 3.1 8B", "--gpu", "RTX 4090,RTX 4090", "--context", "8192", "--json").stdout)
    assert same["gpus"] == 2 and "--tensor-parallel-size 2" in same["flags"] and same["pipeline"] is None
    copies = json.loads(run("llm", "Llama 3.1 8B", "--gpu", "RTX 4090", "--gpus", "2", "--pipeline-parallel",
                            "--context", "8192", "--json").stdout)
    assert copies["pipeline"]["vllm_pp_layer_partition"] == "16,16"  # equal cards: vLLM's own split is the best
    out = run("llm", "Llama 3.1 8B", "--gpu", "RTX 4090,RTX 3060", "--pp-layer-partition", "20,12", "--max-model-len",
              "auto", "--json")
    d = json.loads(out.stdout)
    assert out.returncode == 0 and d["pipeline"]["partition"] == "given" and d["context"] == d["kv_cache_tokens"]


@pytest.mark.parametrize("args,needle", [
    (("--gpu", "RTX 4090,RTX 3060"), "mixed cards (RTX 4090, RTX 3060) with tensor parallelism"),
    (("--gpu", "RTX 4090,RTX 3060", "--engine", "llama.cpp"), "a list of mixed cards is for vLLM --pipeline-parallel"),
    (("--gpu", "RTX 4090,RTX 9999", "--pipeline-parallel"), "unknown card 'RTX 9999' (card 2 of 2)"),
    (("--gpu", "RTX 4090,", "--pipeline-parallel"), "an empty name in the list"),
    (("--pipeline-parallel",), "name the cards with --gpu"),
    (("--gpu", "RTX 4090", "--pipeline-parallel"), "at least 2 cards"),
    (("--gpu", "RTX 4090,RTX 3060", "--pipeline-parallel", "--gpus", "3"), "--gpus 3 but --gpu names 2 cards"),
    (("--gpu", "RTX 4090,RTX 3060", "--pipeline-parallel", "--engine", "ollama"), "are vLLM's"),
    (("--gpu", "RTX 4090,RTX 3060", "--pp-layer-partition", "16,15"), "add up to 31 layers"),
    (("--gpu", "RTX 4090,RTX 3060", "--pp-layer-partition", "16,16", "--context", "65536"),
     "RTX 3060 (rank 1, 16 layers) needs"),
    (("--gpu", "RTX 4090,RTX 3060", "--pipeline-parallel", "-ngl", "3"), "-ngl / --n-gpu-layers is for llama.cpp"),
])
def test_cli_llm_pipeline_errors(args, needle):
    out = run("llm", "Llama 3.1 8B", *args)
    assert out.returncode == 2, out.stdout
    assert needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_ollama_from_0_30_runs_llama_server_and_llama_cpp_places_the_layers():
    """Ollama >= 0.30 (the default) starts llama-server with -c = num_ctx x parallel and no -ngl
    (llm/llama_server.go): the answer is llama.cpp's of Ollama's pinned build at Ollama's default num_ctx, named as
    Ollama's, with Ollama's settings; --ollama-version 0.12.10 keeps the llm/memory.go estimator."""
    q32 = llm.load_model("Qwen3 32B")
    card = find_card("RTX 4090")
    new = llm.serve_plan(q32, weights="Q4_K_M", engine="ollama", card=card)
    same = llm.serve_plan(q32, 32768, weights="Q4_K_M", engine="llama.cpp", card=card,
                          llamacpp_version=llm.OLLAMA_LLAMACPP_BUILD)
    assert new.engine == "Ollama" and new.context == 32768 and "llama-server" in new.engine_version
    assert llm.OLLAMA_ASSUMED_VERSION in new.engine_version and new.ollama is None
    assert (new.verdict, new.gpu_layers, new.per_gpu_high) == (same.verdict, same.gpu_layers, same.per_gpu_high)
    assert new.verdict == "offload" and 0 < new.gpu_layers < q32.layers + 1
    assert new.env["OLLAMA_CONTEXT_LENGTH"] == "32768" and any("num_gpu" in f for f in new.flags)
    old = llm.serve_plan(q32, weights="Q4_K_M", engine="ollama", card=card, ollama_version="0.12.10")
    assert old.context == 4096 and old.ollama is not None and "memory.go" in old.engine_version
    mid = llm.serve_plan(q32, weights="Q4_K_M", engine="ollama", card=card, ollama_version="0.20.1")
    assert mid.context == 32768 and "approximation" in mid.engine_version
    with pytest.raises(VramBudgetError, match="--ollama-version"):
        llm.serve_plan(q32, engine="ollama", ollama_version="latest")
    out = run("llm", "Qwen3 32B", "--engine", "ollama", "--weights", "Q4_K_M", "--gpu", "RTX 4090", "--json")
    d = json.loads(out.stdout)
    assert out.returncode == 0 and d["engine_version"] == new.engine_version and d["context"] == 32768
