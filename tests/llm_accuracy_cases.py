"""Published serving figures (engine start-up logs quoted in GitHub threads) for `vram-budget llm`.

Each case: the model (a known name or its config.json values), the engine and its flags as the log
shows them, the figure the engine printed, the tolerance (weights 3 %, the rest 10 %) and ``before``:
what the pack said before issue 23 (None: it printed no such figure, which counts as a miss).
``known_miss``: a reason, when the pack is known not to reproduce the figure (it counts as a miss).
tests/test_llm_accuracy.py computes ours, asserts each case and the pass rate, and writes the table
in docs/accuracy-llm.md (``python tests/test_llm_accuracy.py --write``).
"""
from __future__ import annotations

GIB, MIB = 1 << 30, 1 << 20

# config.json values of models not in llm_models.KNOWN (from each repository's config.json)
QWEN2_72B = dict(model_type="qwen2", hidden_size=8192, intermediate_size=29568, num_hidden_layers=80,
                 num_attention_heads=64, num_key_value_heads=8, vocab_size=152064, max_position_embeddings=32768,
                 tie_word_embeddings=False)  # Qwen/Qwen2-72B
QWEN25_7B = dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                 num_attention_heads=28, num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768,
                 tie_word_embeddings=False)  # Qwen/Qwen2.5-7B-Instruct(-AWQ)
QWEN25_14B = dict(model_type="qwen2", hidden_size=5120, intermediate_size=13824, num_hidden_layers=48,
                  num_attention_heads=40, num_key_value_heads=8, vocab_size=152064, max_position_embeddings=131072,
                  tie_word_embeddings=False)  # deepseek-ai/DeepSeek-R1-Distill-Qwen-14B
LLAMA2_70B = dict(model_type="llama", hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                  num_attention_heads=64, num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096,
                  tie_word_embeddings=False)  # meta-llama/Llama-2-70b-hf
QWEN3_235B = dict(model_type="qwen3_moe", hidden_size=4096, intermediate_size=12288, num_hidden_layers=94,
                  num_attention_heads=64, num_key_value_heads=4, head_dim=128, vocab_size=151936,
                  max_position_embeddings=40960, num_experts=128, num_experts_per_tok=8, moe_intermediate_size=1536,
                  tie_word_embeddings=False)  # Qwen/Qwen3-235B-A22B(-FP8)

V10517 = "https://github.com/vllm-project/vllm/issues/10517"
V12569 = "https://github.com/vllm-project/vllm/pull/12569"
V13882 = "https://github.com/vllm-project/vllm/issues/13882"
V21348 = "https://github.com/vllm-project/vllm/issues/21348"
V13061 = "https://github.com/vllm-project/vllm/issues/13061"
V6746 = "https://github.com/vllm-project/vllm/issues/6746"
V2031 = "https://github.com/vllm-project/vllm/pull/2031"
L3430 = "https://github.com/LMCache/LMCache/issues/3430"
O5913 = "https://github.com/ollama/ollama/issues/5913"
O10740 = "https://github.com/ollama/ollama/issues/10740"
O6279 = "https://github.com/ollama/ollama/pull/6279"
O3301 = "https://github.com/ollama/ollama/issues/3301"

_L8_3090 = dict(model="Llama 3.1 8B", engine="vllm", card="RTX 3090", utilization=0.9, vllm_version="0.6.4")
# Ollama's logs of the llm/memory.go era (ollama#5913: July 2024; ollama#10740: May 2025, before v0.12.11)
_Q72 = dict(model=QWEN2_72B, engine="ollama", weights="Q4_K_S", context=2048, free_gib=[24.0], ollama_version="0.2.8")
_Q32 = dict(model="Qwen3 32B", engine="ollama", weights="Q6_K", context=32768, free_gib=[23.1, 23.3, 23.3],
            ollama_version="0.7.0")

CASES: list[dict] = [
    # vLLM 0.6.4 (V0), Llama-3.1-8B-Instruct on an RTX 3090, --gpu-memory-utilization 0.9
    dict(id="vllm-8b-weights", source=V10517, **_L8_3090, context=20000, metric="weights_gib",
         published=14.9888, label="Loading model weights took 14.9888 GB", before=14.96),
    dict(id="vllm-8b-20k-tokens", source=V10517, **_L8_3090, context=20000, metric="kv_tokens",
         published=1952 * 16, label="# GPU blocks: 1952 (x16 tokens)", before=36560),
    dict(id="vllm-8b-20k-concurrency", source=V10517, **_L8_3090, context=20000, metric="concurrency",
         published=1.56, label="Maximum concurrency for 20000 tokens per request: 1.56x", before=1.83),
    dict(id="vllm-8b-29k-tokens", source=V10517, **_L8_3090, context=29000, metric="kv_tokens",
         published=23648, label="maximum number of tokens that can be stored in KV cache (23648)", before=36560),
    dict(id="vllm-8b-29k-concurrency", source=V10517, **_L8_3090, context=29000, metric="concurrency",
         published=0.82, label="Maximum concurrency for 29000 tokens per request: 0.82x (vLLM refuses to start)",
         before=1.26),
    dict(id="vllm-8b-20k-kv-gib", source=V10517, **_L8_3090, context=20000, metric="kv_pool_gib",
         published=3.81, label="kv_cache_size=3.81GiB", before=None),
    dict(id="vllm-8b-29k-kv-gib", source=V10517, **_L8_3090, context=29000, metric="kv_pool_gib",
         published=2.89, label="kv_cache_size=2.89GiB", before=None),
    # vLLM 0.7.1 V1, Meta-Llama-3.1-70B-Instruct-quantized.w8a8 on an H100, 0.98, --max-model-len 2048
    dict(id="vllm-70b-w8a8-weights", source=V12569, model="Llama 3.3 70B", engine="vllm", weights="fp8",
         card="H100", utilization=0.98, context=2048, vllm_version="0.7.1", metric="weights_gib",
         published=67.7229, label="Loading model weights took 67.7229 GB", before=67.67),
    dict(id="vllm-70b-w8a8-concurrency", source=V12569, model="Llama 3.3 70B", engine="vllm", weights="fp8",
         card="H100", utilization=0.98, context=2048, vllm_version="0.7.1", metric="concurrency",
         published=10.79, label="Maximum concurrency for 2048 tokens per request: 10.79x", before=None,
         known_miss="early V1 (0.7.1, VLLM_USE_V1=1) reserved 3.6 GiB besides weights and KV where the forward of "
                    "2,048 tokens + non-torch memory explain 0.8 GiB: its profile (torch.compile, logits of every "
                    "profiled token) is not modelled"),
    # vLLM 0.7.x V0, Qwen2.5-7B-Instruct-AWQ on an RTX 4060 8 GiB, 0.7, --max-model-len 4096
    dict(id="vllm-qwen7b-awq-weights", source=V13882, model=QWEN25_7B, engine="vllm", weights="awq",
         card="RTX 4060", utilization=0.7, context=4096, vllm_version="0.7.3", metric="weights_gib",
         published=5.2032, label="Loading model weights took 5.2032 GB", before=5.188),
    dict(id="vllm-qwen7b-awq-activation", source=V13882, model=QWEN25_7B, engine="vllm", weights="awq",
         card="RTX 4060", utilization=0.7, context=4096, vllm_version="0.7.3", metric="activation_gib",
         published=1.42, label="PyTorch activation peak memory takes 1.42GiB (the V0 sampler's peak, not the "
                               "forward's)", before=None),
    # vLLM 0.7.x V0, DeepSeek-R1-Distill-Qwen-14B, tensor parallel 2 on two RTX 4090s
    dict(id="vllm-14b-tp2-weights", source=V13061, model=QWEN25_14B, engine="vllm", gpus=2, metric="weights_gib",
         published=13.9476, label="Loading model weights took 13.9476 GB (per card)", before=13.75),
    # vLLM 0.5.3 (V0), Meta-Llama-3.1-405B-Instruct-FP8, tensor parallel 8 on H100s: a partly quantised release
    # named (attention and the first / last layers kept BF16 by its quantization_config)
    dict(id="vllm-405b-fp8-tp8-weights", source=V6746, model="meta-llama/Meta-Llama-3.1-405B-Instruct-FP8",
         engine="vllm", weights="fp8", gpus=8, metric="weights_gib", published=57.752,
         label="Loading model weights took 57.7520 GB (per rank)", before=47.74),
    # vLLM 0.2.5 (PR #2031, merged for 0.2.5): Llama-2-70B, tensor parallel 4 on 4 x A100-80GB, default 0.9
    dict(id="vllm-l2-70b-tp4-0.2.4-blocks", source=V2031, model=LLAMA2_70B, engine="vllm", gpus=4, card="A100 80GB",
         utilization=0.9, context=4096, vllm_version="0.2.4", metric="kv_tokens", published=31615 * 16,
         label="# GPU blocks: 31615 (x16 tokens; 'current main' before the PR: the torch allocator's peak)",
         before=None),
    dict(id="vllm-l2-70b-tp4-0.2.5-blocks", source=V2031, model=LLAMA2_70B, engine="vllm", gpus=4, card="A100 80GB",
         utilization=0.9, context=4096, vllm_version="0.2.5", metric="kv_tokens", published=20865 * 16,
         label="# GPU blocks: 20865 (x16 tokens; with the PR: total - free after the profile)", before=None,
         known_miss="from 0.2.5 to 0.6.3 vLLM counted everything the card held after the profile (total - free: "
                    "the allocator's cached blocks, NCCL, the CUDA context), 13 GiB per rank more than the torch "
                    "peak on that machine at TP 4, a figure the code does not determine; the pack prices the torch "
                    "peak + 0.35 GiB + 0.1 GiB per extra rank"),
    dict(id="vllm-14b-tp2-tokens", source=V13061, model=QWEN25_14B, engine="vllm", gpus=2, card="RTX 4090",
         utilization=0.98, context=131072, vllm_version="0.7.2", metric="kv_tokens", published=81536,
         label="maximum number of tokens that can be stored in KV cache (81536) (rank 0's pool: only it samples)",
         before=None),
    # vLLM >= 0.21 (CUDA-graph memory profiled by default), Qwen3-8B, LLMCache's CPU-offloading quickstart
    dict(id="vllm-qwen3-8b-cuda-graphs", source=L3430, model="Qwen3 8B", engine="vllm", card="RTX 4090",
         context=16384, metric="cuda_graph_gib", published=0.52,
         label="Estimated CUDA graph memory: 0.52 GiB total (the log the 16 MiB/layer constant is read from: "
               "a consistency check, not an independent one)", before=None),
    dict(id="vllm-qwen3-8b-tokens", source=L3430, model="Qwen3 8B", engine="vllm", metric="tokens_from_gib",
         kv_gib=6.37, published=46368, label="Available KV cache memory: 6.37 GiB -> GPU KV cache size: 46,368 "
                                             "tokens", before=None),
    # vLLM (V1), Qwen3-235B-A22B-FP8, tensor parallel 4 on H100s: tokens from the logged KV memory
    dict(id="vllm-235b-tp4-tokens", source=V21348, model=QWEN3_235B, engine="vllm", gpus=4, metric="tokens_from_gib",
         kv_gib=8.11, published=178880, label="Available KV cache memory: 8.11 GiB -> GPU KV cache size: 178,880 "
                                              "tokens", before=None),
    # Ollama 0.2.x (memory.go), dolphin-qwen2:72b q4_k_s on a 24 GiB ROCm card, num_ctx 2048
    dict(id="ollama-q72-offload", source=O5913, **_Q72, metric="ollama_layers", published=43,
         label="layers.offload=43", before=43),
    dict(id="ollama-q72-kv", source=O5913, **_Q72, metric="ollama_kv_mib", published=640.0,
         label='memory.required.kv="640.0 MiB"', before=640.0),
    dict(id="ollama-q72-graph-full", source=O5913, **_Q72, metric="ollama_graph_full_mib", published=313.0,
         label='memory.graph.full="313.0 MiB"', before=None),
    dict(id="ollama-q72-graph-partial", source=O5913, **_Q72, metric="ollama_graph_partial_gib", published=1.3,
         label='memory.graph.partial="1.3 GiB"', before=None),
    dict(id="ollama-q72-weights", source=O5913, **_Q72, metric="ollama_weights_gib", published=39.9, tol=0.03,
         label='memory.weights.total="39.9 GiB"', before=40.14),
    dict(id="ollama-q72-nonrepeating", source=O5913, **_Q72, metric="ollama_nonrepeating_mib", published=974.6,
         tol=0.03, label='memory.weights.nonrepeating="974.6 MiB"', before=974.5),
    dict(id="ollama-q72-repeating", source=O5913, **_Q72, metric="ollama_repeating_gib", published=38.9, tol=0.03,
         label='memory.weights.repeating="38.9 GiB"', before=39.19),
    dict(id="ollama-q72-required-full", source=O5913, **_Q72, metric="ollama_required_full_gib", published=43.1,
         label='memory.required.full="43.1 GiB"', before=None),
    dict(id="ollama-q72-allocation", source=O5913, **_Q72, metric="ollama_alloc_gib", published=23.7,
         label='memory.required.allocations="[23.7 GiB]"', before=None),
    # Ollama 0.6.8, Qwen3-32B Q6_K, num_ctx 32768 on three RTX 3090s
    dict(id="ollama-qwen3-32b-required", source=O10740, **_Q32, metric="ollama_required_full_gib", published=67.3,
         label="total required memory of 67.3 GiB (memory.required.full)", before=None),
    dict(id="ollama-qwen3-32b-offload", source=O10740, **_Q32, metric="ollama_layers", published=65,
         label="all 65 layers on the GPUs (actual VRAM use ~36 GiB)", before=65),
    # llama.cpp (in Ollama), Llama 3.x 70B Q4_0: file size, and -ngl 30 on a 16 GB card
    dict(id="llamacpp-70b-q4_0-size", source=O6279, model="Llama 3.1 70B", engine="llama.cpp", weights="Q4_0",
         metric="weights_gib", published=37.22, tol=0.03, label="model size = 37.22 GiB (4.53 BPW)", before=37.22),
    dict(id="llamacpp-70b-ngl30-gpu", source=O3301, model="Llama 3.1 70B", engine="llama.cpp", weights="Q4_0",
         ngl=30, context=2048, metric="ngl_gpu_mib", published=13771.88, tol=0.03,
         label="offloaded 30/81 layers: CUDA0 buffer size = 13771.88 MiB", before=None),
    dict(id="llamacpp-70b-ngl30-cpu", source=O3301, model="Llama 3.1 70B", engine="llama.cpp", weights="Q4_0",
         ngl=30, context=2048, metric="weights_mib", published=38110.61, tol=0.03,
         label="CPU buffer size = 38110.61 MiB (the whole file, memory-mapped)", before=38110.6),
]
