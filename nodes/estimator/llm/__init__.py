"""LLM memory: weights + KV cache + a working margin (FACTS.md "LLM"), for serving engines and for
ComfyUI's TextGenerate.

A model is an :class:`LlmConfig`, read from
(a) a Hugging Face folder: config.json + the *.safetensors headers (parameters and bytes exact, no
    tensor data read; files.py);
(b) a GGUF file: ``<arch>.block_count``, ``.attention.head_count(_kv)``, ``.context_length`` ... from
    its metadata and every tensor's type and size (files.py's GGUF reader);
(c) a known name (llm_models.py: published config.json values).

KV cache = layers × KV heads × head dim × 2 (K and V) × bytes per element × tokens × sequences:
Llama 3.1 8B in 16 bit: 32 × 8 × 128 × 2 × 2 = 131,072 B = 128 KiB per token (FACTS.md). ComfyUI's
TextGenerate preallocates exactly this for prompt + max_length tokens (``textgen_kv_cache_bytes``).

Serving (``serve_plan``) applies each engine's rules (ENGINES, a table: a new engine is one entry):
vLLM takes ``--gpu-memory-utilization`` (0.92 from vLLM 0.21, 0.9 before: ``vllm_rules``) of the card,
subtracts the weights and its start-up profile (``vllm_reserve``: a forward of max_num_batched_tokens,
the sampler warm-up, non-torch memory, CUDA graphs) and fills the rest with KV blocks, which it logs as
"GPU KV cache size: N tokens"; it splits heads over ``--tensor-parallel-size`` cards, or layers over
``--pipeline-parallel-size`` (mixed) cards (``serve_pipeline``: the VLLM_PP_LAYER_PARTITION to set). llama.cpp puts
``-ngl`` layers on the GPU (``--n-cpu-moe`` / ``--tensor-split``) and needs flash attention for a quantized
V cache; Ollama sizes ``num_ctx`` by VRAM, splits layers by llm/memory.go's estimate (``ollama_estimate``)
and reads ``OLLAMA_KV_CACHE_TYPE`` only with ``OLLAMA_FLASH_ATTENTION=1``. The answer names the flags.
Accuracy against the engines' logs: docs/accuracy-llm.md.

The modules, bottom to top: model (the config), engines (their rules), weights (weights and KV cache), serve
(one plan, the cheapest card, the fixes), pipeline (vLLM over mixed cards); llm_models (known names) and training
(`vram-budget train`) beside them. This face re-exports their public names.
"""
from .model import (KV_DTYPES, LLM_BOUNDS, Layout, LlmConfig, MARGIN_HIGH, MARGIN_LOW, config_from_arch,
                    config_from_hf, known_config, load_model, module_dtype_summary, read_gguf,
                    read_hf_folder)  # noqa: F401
from .engines import (ENGINES, Engine, LLAMACPP_ASSUMED_VERSION, LLAMACPP_FIT_FROM, LLAMACPP_FIT_MIN_CTX,
                      LLAMACPP_FIT_TARGET, OLLAMA_ASSUMED_VERSION, OLLAMA_BATCH, OLLAMA_LLAMACPP_BUILD,
                      OLLAMA_LLAMA_SERVER_FROM, OLLAMA_MEMORY_GO_UNTIL, OLLAMA_MINIMUM_MEMORY, OllamaEstimate,
                      VLLM_ASSUMED_VERSION, VLLM_GRAPH_PER_LAYER, VLLM_NON_TORCH, VLLM_NON_TORCH_PER_RANK,
                      VLLM_V0_SAMPLER_BYTES, VllmReserve, VllmRules, engine_key, llamacpp_build,
                      ollama_default_context, ollama_estimate, ollama_graph, ollama_projector, ollama_release,
                      vllm_reserve, vllm_rules)  # noqa: F401
from .weights import (GENERIC_WEIGHTS, kv_bytes_per_token, kv_cache_bytes, normalize_kv, normalize_weights,
                      textgen_kv_cache_bytes, weight_format, weights_bytes, weights_layout)  # noqa: F401
from .serve import (CardOption, HOST_BANDWIDTH, PREFILL_MFU, ServePlan, ServeRemedy, cheapest_options,
                    cheapest_serving, rank_cards, serve_plan, serve_remedies)  # noqa: F401
from .pipeline import (PipelinePlan, PipelineStage, parse_pp_partition, serve_pipeline,
                        vllm_default_partition)  # noqa: F401
