"""Published training-memory measurements that `vram-budget train` is checked against
(tests/test_training_accuracy.py; the table in docs/accuracy-training.md is generated from these).

Each case: the model (a published config.json), the trainer's settings as its source states them (or as
the trainer's code / config file of that run sets them: cited in ``setup``), the published figure and
its source URL. Two kinds:
- ``peak``: a measured peak in GB (10^9 bytes). ``measure`` says what was measured: "allocated"
  (torch.cuda.max_memory_allocated: compared with our peak before the working margin) or "device"
  (the card's used memory, e.g. nvidia-smi: compared with our peak + 1 GB for the CUDA context and the
  allocator's cache);
- ``max_seq``: the longest sequence that trained on a card of ``vram_gb`` (GiB): our peak + 1 GB at that
  sequence compared with the card (the longest sequence we let fit is shown beside it);
- ``diffusion``: a diffusion LoRA sized from a catalogue file name (``diffusion`` keywords for
  training.diffusion_lora_budget), compared like ``peak``.
Tolerance 10 % unless ``tol`` says otherwise (a figure published rounded to whole GB gets the rounding
added). ``known_miss``: a case we do not meet, with the reason (counted as a miss).
"""
from __future__ import annotations

HF = "https://huggingface.co/{}/blob/main/config.json"


def _llama(hidden, inter, layers, heads, kv, vocab, ctx, tied=False, head_dim=None, model_type="llama"):
    return dict(model_type=model_type, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim or hidden // heads,
                vocab_size=vocab, max_position_embeddings=ctx, tie_word_embeddings=tied, torch_dtype="bfloat16")


# config.json of each model (the keys llm.config_from_hf reads)
MODELS = {
    "llama-2-7b": dict(repo="meta-llama/Llama-2-7b-hf", config=_llama(4096, 11008, 32, 32, 32, 32000, 4096)),
    "llama-2-13b": dict(repo="meta-llama/Llama-2-13b-hf", config=_llama(5120, 13824, 40, 40, 40, 32000, 4096)),
    "llama-3-8b": dict(repo="meta-llama/Meta-Llama-3-8B", config=_llama(4096, 14336, 32, 32, 8, 128256, 8192)),
    "llama-3.1-8b": dict(repo="meta-llama/Llama-3.1-8B", config=_llama(4096, 14336, 32, 32, 8, 128256, 131072)),
    "llama-3.3-70b": dict(repo="meta-llama/Llama-3.3-70B-Instruct",
                          config=_llama(8192, 28672, 80, 64, 8, 128256, 131072)),
    "mistral-7b": dict(repo="mistralai/Mistral-7B-v0.1", config=_llama(4096, 14336, 32, 32, 8, 32000, 32768)),
    "tinyllama-1.1b": dict(repo="TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
                           config=_llama(2048, 5632, 22, 32, 4, 32000, 2048)),
}

LITGPT_TABLES = "https://github.com/Lightning-AI/litgpt/blob/main/tutorials/resource-tables.md"
LITGPT_HUB = "https://github.com/Lightning-AI/litgpt/blob/main/config_hub/finetune/README.md"
LLAMA_FACTORY = "https://github.com/hiyouga/LLaMA-Factory/wiki/Performance-comparison"
UNSLOTH = "https://docs.unsloth.ai/basics/unsloth-benchmarks"
HF_FLUX_QLORA = "https://huggingface.co/blog/flux-qlora"

# LitGPT (finetune/lora.py, --precision bf16-true: weights, adapters and AdamW states in bf16; the loss
# through chunked_cross_entropy on bf16 logits (litgpt/utils.py); LoRA dropout 0.05; no activation
# checkpointing). --quantize bnb.* goes through Lightning's BitsandbytesPrecision (bnb_lightning): every
# nn.Linear 4-bit, the head included, quantised from an FP16 copy (lightning/fabric/plugins/precision/
# bitsandbytes.py:335 at b19c3a96, the same at 71aed751 of 2023), so MatMul4Bit dequantises to FP16 and casts
# to bf16. Resource tables (A100, LitGPT 8641822, Oct 2023): rank 8 on query and value, the longest Alpaca
# sample is the peak (Llama 2: 1,304 tokens; a micro-batch of 2 pads to it); bitsandbytes 0.41.1, whose
# MatMul4Bit kept each 4-bit linear's input (bnb_legacy). That longest sample is forced into iteration 0
# (finetune/lora.py:212 and get_batch ``ix[0] = longest_seq_ix``), before any earlier graph exists: no
# keep_graph.
_LIT_RT = dict(bnb_legacy=True, bnb_lightning=True, precision="bf16", loss="chunked", lora_dropout=0.05,
               optimizer="adamw", rank=8, targets="q,v", seq=1304, measure="allocated", source=LITGPT_TABLES,
               setup="LitGPT resource tables: bf16-true, LoRA r=8 on q,v, dropout 0.05, longest Alpaca sample "
                     "1,304 tokens")
# Config hub (A10G, Alpaca2k truncated to max_seq_length 512; the yaml files of config_hub/finetune/* at
# LitGPT 41397ed6 / 41dece20 / 0d207708 / 58c5b188, March-April 2024, measured then and carried unchanged
# into the table of July 2024: LoRA r=32 on q,v, dropout 0.05; quantize: bnb.nf4 for qlora.yaml; bitsandbytes
# pinned to 0.41.0 (pyproject.toml, and Lightning's RequirementCache("bitsandbytes==0.41.0")): bnb_legacy).
# fit() keeps ``logits`` (and through it the graph) until the next ``logits = model(...)`` returns
# (litgpt/finetune/lora.py:243 at 41397ed6; ``loss`` becomes a float at :259): MatMul4Bit's ctx.tensors of the
# previous micro-batch (bitsandbytes 0.41.0 autograd/_functions.py:523, a ctx attribute the backward does not
# free) are still allocated at the end of the next forward (keep_graph). Batches are shuffled, padded to their
# longest sample and truncated at 512: the peak is taken on a 512-token batch after another.
_LIT_HUB = dict(bnb_legacy=True, bnb_lightning=True, keep_graph=True, precision="bf16", loss="chunked",
                lora_dropout=0.05, optimizer="adamw", rank=32, targets="q,v", seq=512, measure="allocated",
                source=LITGPT_HUB,
                setup="LitGPT config_hub/finetune/<model>/*.yaml: bf16-true, r=32 on q,v, dropout 0.05, 512 tokens")
# LLaMA-Factory wiki (A100 40GB, LLaMA2-7B, batch 1, LoRA rank 8 on all modules, 4-bit, FlashAttention-2;
# LLaMA-Factory's defaults: gradient checkpointing on, double quantization on, lora_dropout 0, the Trainer's
# bf16 autocast, transformers' upcast loss). Published rounded to whole GB: tolerance 10 % + 0.5 GB.
_LF = dict(method="qlora", quant="nf4-dq", precision="mixed", loss="upcast", optimizer="adamw", rank=8,
           targets="all-linear", batch=1, grad_ckpt=True, measure="device", source=LLAMA_FACTORY, round_gb=0.5,
           setup="LLaMA-Factory QLoRA 4-bit (double quant), r=8 all modules, FA2, gradient checkpointing, batch 1")
# Unsloth benchmarks, the "Hugging Face + FA2" column: the longest sequence of a QLoRA (rank 32 on all
# linear layers, batch 1, sequences padded) on a card of that size: transformers + PEFT
# (prepare_model_for_kbit_training, gradient checkpointing), bf16 autocast, the upcast loss.
_UN = dict(kind="max_seq", method="qlora", quant="nf4-dq", kbit_prep=True, precision="mixed", loss="upcast",
           optimizer="adamw", rank=32, targets="all-linear", batch=1, grad_ckpt=True, source=UNSLOTH,
           setup="HF + FA2 QLoRA (PEFT prepare_model_for_kbit_training), r=32 all linear, batch 1, "
                 "gradient checkpointing")

CASES = [
    # --- LitGPT resource tables (A100, max_memory_allocated)
    dict(_LIT_RT, id="litgpt-rt-llama2-7b-lora-b1", model="llama-2-7b", method="lora", batch=1, published_gb=21.30),
    dict(_LIT_RT, id="litgpt-rt-llama2-7b-lora-b2", model="llama-2-7b", method="lora", batch=2, published_gb=29.07),
    dict(_LIT_RT, id="litgpt-rt-llama2-7b-nf4", model="llama-2-7b", method="qlora", quant="nf4", batch=1,
         published_gb=14.14),
    dict(_LIT_RT, id="litgpt-rt-llama2-7b-nf4-dq", model="llama-2-7b", method="qlora", quant="nf4-dq", batch=1,
         published_gb=13.84),
    dict(_LIT_RT, id="litgpt-rt-llama2-13b-lora-b1", model="llama-2-13b", method="lora", batch=1,
         published_gb=38.12),
    dict(_LIT_RT, id="litgpt-rt-llama2-13b-nf4", model="llama-2-13b", method="qlora", quant="nf4", batch=1,
         published_gb=23.14),
    dict(_LIT_RT, id="litgpt-rt-llama2-13b-nf4-dq", model="llama-2-13b", method="qlora", quant="nf4-dq", batch=1,
         published_gb=22.55),
    # --- LitGPT config hub (A10G, max_memory_allocated)
    dict(_LIT_HUB, id="litgpt-hub-llama2-7b-lora", model="llama-2-7b", method="lora", batch=2, published_gb=19.77),
    dict(_LIT_HUB, id="litgpt-hub-llama2-7b-qlora", model="llama-2-7b", method="qlora", quant="nf4", batch=2,
         published_gb=13.68),
    dict(_LIT_HUB, id="litgpt-hub-llama3-8b-lora", model="llama-3-8b", method="lora", batch=1, published_gb=19.73),
    dict(_LIT_HUB, id="litgpt-hub-llama3-8b-qlora", model="llama-3-8b", method="qlora", quant="nf4", batch=2,
         published_gb=17.41),
    dict(_LIT_HUB, id="litgpt-hub-mistral-7b-lora", model="mistral-7b", method="lora", batch=2, published_gb=20.66),
    dict(_LIT_HUB, id="litgpt-hub-mistral-7b-qlora", model="mistral-7b", method="qlora", quant="nf4", batch=2,
         published_gb=14.29),
    dict(_LIT_HUB, id="litgpt-hub-tinyllama-full", model="tinyllama-1.1b", method="full", batch=4, rank=0,
         targets="all-linear", lora_dropout=0.0, published_gb=14.10,
         setup="LitGPT config_hub/finetune/tiny-llama/full.yaml: bf16-true full fine-tune, AdamW, micro-batch 4, "
               "512 tokens"),
    dict(_LIT_HUB, id="litgpt-hub-tinyllama-lora", model="tinyllama-1.1b", method="lora", batch=8,
         targets="all-linear", published_gb=13.50,
         setup="LitGPT config_hub/finetune/tiny-llama/lora.yaml: bf16-true, r=32 on every linear (and the head), "
               "dropout 0.05, micro-batch 8, 512 tokens"),
    dict(_LIT_HUB, id="litgpt-hub-tinyllama-qlora", model="tinyllama-1.1b", method="qlora", quant="nf4", batch=8,
         targets="all-linear", published_gb=16.24,
         setup="LitGPT config_hub/finetune/tiny-llama/qlora.yaml: as lora.yaml with quantize bnb.nf4"),
    # --- LLaMA-Factory wiki: 16-bit LoRA, batch 4 x 1,024 tokens (HF + FA2 row)
    dict(_LF, id="llama-factory-llama2-7b-lora-b4", model="llama-2-7b", method="lora", batch=4, seq=1024,
         published_gb=17, setup="LLaMA-Factory 16-bit LoRA r=8 all modules, HF + FA2, batch 4, 1,024 tokens, "
                                 "gradient checkpointing"),
    dict(_LF, id="llama-factory-llama2-7b-lora-b4-sdpa", model="llama-2-7b", method="lora", batch=4, seq=1024,
         published_gb=18, setup="LLaMA-Factory 16-bit LoRA r=8 all modules, HF row (transformers' SDPA attention), "
                                 "batch 4, 1,024 tokens, gradient checkpointing"),
    dict(_LF, id="llama-factory-llama2-7b-qlora-b4-sdpa", model="llama-2-7b", batch=4, seq=1024, published_gb=9,
         setup="LLaMA-Factory QLoRA 4-bit r=8 all modules, HF row (SDPA), batch 4, 1,024 tokens, "
               "gradient checkpointing"),
    # --- LLaMA-Factory wiki: QLoRA memory by sequence length (rounded GB)
    dict(_LF, id="llama-factory-llama2-7b-qlora-1k", model="llama-2-7b", seq=1024, published_gb=6),
    dict(_LF, id="llama-factory-llama2-7b-qlora-2k", model="llama-2-7b", seq=2048, published_gb=7),
    dict(_LF, id="llama-factory-llama2-7b-qlora-4k", model="llama-2-7b", seq=4096, published_gb=9),
    dict(_LF, id="llama-factory-llama2-7b-qlora-8k", model="llama-2-7b", seq=8192, published_gb=12),
    dict(_LF, id="llama-factory-llama2-7b-qlora-16k", model="llama-2-7b", seq=16384, published_gb=19),
    dict(_LF, id="llama-factory-llama2-7b-qlora-32k", model="llama-2-7b", seq=32768, published_gb=32),
    # --- Unsloth benchmarks: Hugging Face + FA2, longest sequence per card size
    dict(_UN, id="unsloth-hf-llama3.1-8b-12gb", model="llama-3.1-8b", vram_gb=12, published_seq=932),
    dict(_UN, id="unsloth-hf-llama3.1-8b-16gb", model="llama-3.1-8b", vram_gb=16, published_seq=2551),
    dict(_UN, id="unsloth-hf-llama3.1-8b-24gb", model="llama-3.1-8b", vram_gb=24, published_seq=5789),
    dict(_UN, id="unsloth-hf-llama3.1-8b-40gb", model="llama-3.1-8b", vram_gb=40, published_seq=12264),
    dict(_UN, id="unsloth-hf-llama3.1-8b-48gb", model="llama-3.1-8b", vram_gb=48, published_seq=15502),
    dict(_UN, id="unsloth-hf-llama3.1-8b-80gb", model="llama-3.1-8b", vram_gb=80, published_seq=28454),
    dict(_UN, id="unsloth-hf-llama3.3-70b-80gb", model="llama-3.3-70b", vram_gb=80, published_seq=6916),
    # --- Hugging Face blog "(LoRA) Fine-Tuning FLUX.1-dev on Consumer Hardware" (RTX 4090; diffusers
    # train_dreambooth_lora_flux_miniature.py: rank 4 on the attention projections, 512x768, batch 1,
    # gradient checkpointing, 8-bit AdamW, cached latents and 77-token text embeddings). "Approximately
    # 9GB" / "26 GB": read as the card's memory, rounded (+0.5 GB). Our adapter is the catalogue estimate
    # (every linear, 31M parameters, where the script trains 4.7M: 0.2 GB at most).
    dict(id="hf-blog-flux1-dev-qlora", kind="diffusion", model="flux1-dev.safetensors", measure="device",
         round_gb=0.5, published_gb=9, source=HF_FLUX_QLORA, method="lora", batch=1,
         diffusion=dict(resolution=512, height=768, rank=4, grad_ckpt=True, optimizer="AdamW8bit", base="nf4",
                        text_tokens=77),
         setup="diffusers QLoRA: NF4 base (BitsAndBytesConfig, no double quant), rank 4, 512x768, 8-bit AdamW, "
               "gradient checkpointing"),
    dict(id="hf-blog-flux1-dev-lora-bf16", kind="diffusion", model="flux1-dev.safetensors", measure="device",
         round_gb=0.5, published_gb=26, source=HF_FLUX_QLORA, method="lora", batch=1,
         diffusion=dict(resolution=512, height=768, rank=4, grad_ckpt=True, optimizer="AdamW8bit", base="stored",
                        text_tokens=77),
         setup="diffusers LoRA on the 16-bit base, otherwise as the QLoRA run"),
]
