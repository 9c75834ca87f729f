"""Training memory (nodes/estimator/llm/training.py): the guide's training figures (FACTS.md "Training",
"Cards"), ZeRO sharding, activations, ComfyUI TrainLoraNode's adapters, the remedies, the CLI."""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from helpers_models import spec_flux, write_safetensors
from vram_budget.nodes.estimator import llm
from vram_budget.nodes.estimator.llm import training as T
from vram_budget.nodes.estimator.errors import VramBudgetError
from vram_budget.nodes.estimator.machine.gpus import CARDS, find_card
from vram_budget.nodes.estimator.units import GB

REPO = Path(__file__).resolve().parents[1]


def close(value: float, target: float, tol: float = 0.05) -> bool:
    return abs(value - target) <= tol * target


def nominal(name: str) -> int:
    return next(c.nominal_gb for c in CARDS if c.name == name)


@pytest.fixture(scope="module")
def m7():
    return llm.load_model("Mistral 7B")


@pytest.fixture(scope="module")
def l8():
    return llm.load_model("Llama 3.1 8B")


@pytest.fixture(scope="module")
def l70():
    return llm.load_model("Llama 3.x 70B")


# ---------------------------------------------------------------------------------------------
# FACTS.md "Training"
def test_full_finetune_16_bytes_per_parameter(m7):
    """"2 weights, 2 gradients, 4 FP32 master copy, 8 optimizer states": 7B ≈ 112 GB before activations."""
    b = T.llm_training(m7, T.TrainSetup())
    p = m7.params
    assert (b.items["weights"], b.items["gradients"], b.items["master_weights"], b.items["optimizer_states"]) == \
        (2 * p, 2 * p, 4 * p, 8 * p)
    assert b.before_activations == 16 * p
    assert close(b.before_activations / GB, 112)


@pytest.mark.parametrize("optimizer,precision,per_param", [
    ("adamw8bit", "mixed", 2 + 2 + 4 + 2),  # "8-bit AdamW (optimizer 8 → ~2 bytes/param)"
    ("sgd", "mixed", 2 + 2 + 4),  # SGD (no momentum): no state
    ("rmsprop", "mixed", 2 + 2 + 4 + 4),  # one FP32 state
    ("adamw", "fp32", 4 + 4 + 8),  # FP32 weights are their own master copy
    ("adamw", "bf16", 2 + 2 + 4),  # pure bf16: bf16 states, no master copy
])
def test_optimizers_and_precisions(m7, optimizer, precision, per_param):
    b = T.llm_training(m7, T.TrainSetup(optimizer=optimizer, precision=precision))
    assert b.before_activations == per_param * m7.params


def test_qlora_8b_in_10_to_16_gb(l8):
    """"8B QLoRA in 10-16 GB" (gradient checkpointing, the QLoRA recipe; 2,048 tokens, rank 16 on all linears)."""
    b = T.llm_training(l8, T.TrainSetup(method="qlora", grad_ckpt=True))
    assert 10 * GB <= b.peak_high <= 16 * GB
    assert b.trainable_params == 32 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336))
    nf4 = b.items["weights"]
    linear = l8.params - 2 * 128256 * 4096 - (2 * 32 + 1) * 4096
    # BitsAndBytesConfig's default: no double quantization, one FP32 absmax per 64 weights (4.5 bits)
    assert nf4 == math.ceil(linear * (4 + 32 / 64) / 8) + (l8.params - linear) * 2
    dq = T.llm_training(l8, T.TrainSetup(method="qlora", grad_ckpt=True, quant="nf4-dq")).items["weights"]
    assert dq == math.ceil(linear * (4 + 8 / 64 + 32 / 16384) / 8) + (l8.params - linear) * 2
    prep = T.llm_training(l8, T.TrainSetup(method="qlora", grad_ckpt=True, kbit_prep=True))
    assert prep.items["weights"] == nf4 + (l8.params - linear) * 2  # prepare_model_for_kbit_training: FP32
    assert prep.items["autocast_copies"] == 128256 * 4096 * 2  # the FP32 head's 16-bit cast, kept for backward
    assert b.items["dequantized_weight"] == 14336 * 4096 * 2  # the largest linear, dequantised to 16 bit


def test_qlora_70b_about_48_gb(l70):
    """"70B ~48 GB, comfortable on 80 GB"."""
    # the QLoRA paper's recipe: double quantization and paged AdamW (the states page out under pressure)
    b = T.llm_training(l70, T.TrainSetup(method="qlora", grad_ckpt=True, quant="nf4-dq", optimizer="paged_adamw"))
    assert close(b.peak_high / GB, 48, 0.06)
    assert b.peak_high <= find_card("H100").total_bytes


def test_lora_keeps_fp32_adapters_and_a_16bit_base(l8):
    b = T.llm_training(l8, T.TrainSetup(method="lora", rank=8, optimizer="adamw"))
    n = T.lora_params(l8, 8)
    assert b.items["weights"] == 2 * l8.params
    assert b.items["gradients"] == 4 * n and b.items["optimizer_states"] == 8 * n
    assert T.lora_params(l8, 8, "attention") == 32 * 8 * (2 * (4096 + 4096) + 2 * (4096 + 1024))


def test_zero_stages_shard_as_the_zero_paper(l8):
    """Rajbhandari et al. 2020: stage 1 shards the optimizer states (incl. the FP32 master), stage 2 also the
    gradients, stage 3 also the weights: per card 2Ψ+2Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N."""
    p, n = l8.params, 4
    per = {z: T.llm_training(l8, T.TrainSetup(gpus=n, zero=z)).before_activations for z in (0, 1, 2, 3)}
    assert per[0] == 16 * p
    assert per[1] == 4 * p + 3 * -(-4 * p // n)
    assert per[2] == 2 * p + -(-2 * p // n) + 3 * -(-4 * p // n)
    gather = 2 * (2 * p) // l8.layers
    assert per[3] == -(-2 * p // n) * 2 + 3 * -(-4 * p // n) + gather
    assert T.llm_training(l8, T.TrainSetup(zero=3)).before_activations == 16 * p  # one card: nothing to shard


def test_activations_formula(l8):
    per_layer = T.layer_activation_elements(l8)
    assert per_layer == 4 * 4096 + 2 * 4096 + 2 * 1024 + 4 * 14336  # Korthikanti et al.'s count
    s = T.TrainSetup(batch=2, seq=1024)
    full = T.layer_activation_bytes(l8, s)
    # attention q,k,v,out + MLP gate/act/up + FP32 norm inputs + 16-bit normalised (trainable norm weights)
    # + the inputs of q/k/v, gate/up and down (trainable linears)
    assert full == (2 * 4096 + 2 * 1024) * 2 + 3 * 14336 * 2 + 2 * 4096 * 4 + 2 * 4096 * 2 + 2 * 4096 * 2 + 14336 * 2
    acts, logits = T.activation_bytes(l8, s)
    assert acts == 2 * 1024 * 32 * full and logits == 2 * 1024 * 128256 * 14  # the upcast loss: 14 B per entry
    ck, _ = T.activation_bytes(l8, replace(s, grad_ckpt=True))
    assert ck == 2 * 1024 * (32 * 4096 * 2 + full) and ck < acts / 10
    assert T.activation_bytes(l8, replace(s, batch=4))[0] == 2 * acts  # linear in the micro-batch
    off, _ = T.activation_bytes(l8, replace(s, grad_ckpt=True, ckpt_offload=True))
    assert off == 2 * 1024 * (2 * 4096 * 2 + full)  # two layer inputs on the GPU, the rest in CPU RAM


def test_frozen_base_keeps_fewer_activations(l8):
    """A frozen linear needs only its weight for the backward: LoRA on q,v keeps the q/k/v input, not the
    MLP's inputs; a dropout adds its 16-bit output and 1-byte mask per adapted module."""
    qv = T.TrainSetup(method="lora", targets="q,v", rank=8, precision="bf16")
    want = (2 * 4096 + 2 * 1024) * 2 + 3 * 14336 * 2 + 2 * 4096 * 4 + 4096 * 2 + 8 * 2 * 2
    assert T.layer_activation_bytes(l8, qv) == want
    assert T.layer_activation_bytes(l8, replace(qv, lora_dropout=0.05)) == want + 2 * 4096 * 3
    legacy = replace(qv, method="qlora", bnb_legacy=True)  # bitsandbytes < 0.43.2 kept every 4-bit input
    assert T.layer_activation_bytes(l8, legacy) == want + (4096 + 4096 + 14336) * 2
    assert T.layer_activation_bytes(l8, replace(legacy, bnb_legacy=False)) == want


def test_litgpt_qlora_lightning_and_kept_graph(l8):
    """LitGPT's QLoRA (issue 23's config-hub rows): Lightning's BitsandbytesPrecision quantises the head too, from
    an FP16 copy (dequantised to FP16, then cast to bf16: 4 B per weight of the head, the largest linear); with
    bitsandbytes < 0.43.2 and the last step's graph kept through the next forward, the previous micro-batch's
    4-bit inputs (per layer: attention input, attention output, MLP input, product; plus the head's input)."""
    s = T.TrainSetup(method="qlora", targets="q,v", rank=32, precision="bf16", batch=2, seq=512, loss="chunked",
                     bnb_legacy=True)
    plain = T.llm_training(l8, s)
    light = T.llm_training(l8, replace(s, bnb_lightning=True))
    head = 128256 * 4096
    assert plain.items["weights"] - light.items["weights"] == head * 2 - head * 9 // 16  # head: 16 bit -> NF4
    assert plain.items["dequantized_weight"] == 14336 * 4096 * 2 and light.items["dequantized_weight"] == head * 4
    assert "previous_step_inputs" not in light.items  # keep_graph off: nothing from the last step
    kept = T.llm_training(l8, replace(s, bnb_lightning=True, keep_graph=True))
    want = 2 * 512 * (32 * (2 * 4096 + 4096 + 14336) + 4096) * 2
    assert kept.items["previous_step_inputs"] == want and kept.peak == light.peak + want
    # bitsandbytes >= 0.43.2 keeps no input; gradient checkpointing runs the layers without a graph
    assert T.bnb_kept_inputs(l8, replace(s, keep_graph=True, bnb_legacy=False)) == 0
    assert T.bnb_kept_inputs(l8, replace(s, keep_graph=True, bnb_lightning=True, grad_ckpt=True)) == 2 * 512 * 4096 * 2


@pytest.mark.parametrize("loss,per_token", [("upcast", 128256 * 14), ("chunked", 128256 * 4), ("fused", 2 * 4096)])
def test_loss_paths(l8, loss, per_token):
    assert T.activation_bytes(l8, T.TrainSetup(seq=1000, loss=loss))[1] == 1000 * per_token


def test_amp_keeps_18_bytes_per_parameter(m7):
    """PyTorch autocast over FP32 weights: 4 + 4 + 8 persistent and autocast's 16-bit copy of every weight."""
    b = T.llm_training(m7, T.TrainSetup(precision="amp"))
    p = m7.params
    assert b.before_activations == 16 * p and b.items["autocast_copies"] == 2 * p
    assert b.peak == 16 * p + 2 * p + b.items["activations"] + b.items["logits"]


def test_offload_and_paged_optimizers(m7):
    base = T.llm_training(m7, T.TrainSetup(grad_ckpt=True))
    off = T.llm_training(m7, T.TrainSetup(grad_ckpt=True, offload="optimizer"))
    assert off.items["optimizer_states"] == off.items["master_weights"] == 0
    assert off.setup["host_bytes"] == 12 * m7.params and "ZeRO-Offload" in off.notes[0]
    assert base.peak - off.peak == 12 * m7.params
    paged = T.llm_training(m7, T.TrainSetup(grad_ckpt=True, optimizer="paged_adamw8bit"))
    assert paged.items["optimizer_states"] == 0 and paged.setup["paged_bytes"] == 2 * m7.params
    assert any("paged optimizer" in n for n in paged.notes)


def test_lora_targets(l8):
    assert T.lora_target_modules("q,v") == ("attn_q", "attn_v")
    assert T.lora_target_modules("Q_PROJ, v_proj") == ("attn_q", "attn_v")
    assert T.lora_target_modules("gate,up,down") == T.LORA_TARGETS["mlp"]
    assert T.lora_params(l8, 8, "q,v") == 32 * 8 * ((4096 + 4096) + (4096 + 1024))
    for bad in ("qkv", "", "q,x"):
        with pytest.raises(VramBudgetError, match="--lora-targets"):
            T.lora_target_modules(bad)


def test_largest_that_fits(l8):
    s = T.TrainSetup(method="qlora", grad_ckpt=True)
    cap = 24 * 2**30
    n = T.llm_max(l8, s, cap, "seq")
    assert T.llm_training(l8, replace(s, seq=n)).peak_high <= cap < T.llm_training(l8, replace(s, seq=n + 1)).peak_high
    b = T.llm_max(l8, replace(s, seq=512), cap, "batch")
    assert T.llm_training(l8, replace(s, seq=512, batch=b)).peak_high <= cap
    assert T.llm_training(l8, replace(s, seq=512, batch=b + 1)).peak_high > cap
    assert T.llm_max(l8, T.TrainSetup(), cap, "seq") == 0  # a full fine-tune of 8B never fits 24 GB
    with pytest.raises(VramBudgetError, match="--max 'rank'"):
        T.llm_max(l8, s, cap, "rank")


# ---------------------------------------------------------------------------------------------
# FACTS.md "Cards": full fine-tune of a 7-8B: 80 GB+ or several cards (QLoRA fits 16-24 GB);
# "H200 141 GB and B200 are the only single cards that hold a 7B full fine-tune".
def test_cards_full_finetune(m7, l8):
    for cfg in (m7, l8):
        options = T.cheapest_training_cards(cfg, T.TrainSetup(grad_ckpt=True))
        assert options[0].count == 1 and options[0].card == "H200"
        assert any(o.count >= 2 and o.how == "ZeRO-3" for o in options)
    assert T.llm_training(m7, T.TrainSetup(grad_ckpt=True)).peak_high > find_card("H100").total_bytes


def test_cards_qlora(l8):
    options = T.cheapest_training_cards(l8, T.TrainSetup(method="qlora", grad_ckpt=True))
    assert 16 <= nominal(options[0].card) <= 24


def test_remedies_in_the_guides_order(l8):
    card = find_card("RTX 4090")
    steps = T.llm_training_remedies(l8, T.TrainSetup(batch=8), card.total_bytes)
    whats = [s.what for s in steps]
    assert whats[0] == "micro-batch 1 with 8 gradient-accumulation steps (same effective batch 8)"
    assert whats[1] == "gradient checkpointing" and steps[1].cost == "≈20-30 % slower"
    assert whats[2].startswith("8-bit AdamW") and whats[3].startswith("LoRA")
    assert steps[-1].peak_high <= card.total_bytes < steps[-2].peak_high
    assert all(s.saving > 0 for s in steps)
    assert T.llm_training_remedies(l8, T.TrainSetup(method="qlora"), find_card("H100").total_bytes) == []
    assert "hundreds of steps is a leak" in T.LEAK_HINT and "loss.item()" in T.LEAK_HINT


def test_setup_errors(l8):
    for kw, needle in [(dict(method="dpo"), "--method 'dpo'"), (dict(optimizer="lion"), "--optimizer 'lion'"),
                       (dict(batch=0), "--batch 0"), (dict(seq=-5), "--seq -5"), (dict(zero=4), "--zero 4"),
                       (dict(gpus=0), "--gpus 0"), (dict(rank=1.5), "--rank 1.5"), (dict(loss="fast"), "--loss 'fast'"),
                       (dict(quant="int4"), "--quant 'int4'"), (dict(offload="disk"), "--offload 'disk'"),
                       (dict(lora_dropout=1.0), "--lora-dropout 1.0"), (dict(targets="qk"), "--lora-targets 'qk'")]:
        with pytest.raises(VramBudgetError, match=re.escape(needle)):
            T.llm_training(l8, T.TrainSetup(**kw))


# ---------------------------------------------------------------------------------------------
# ComfyUI TrainLoraNode (0.18.2)
def test_comfy_factorization_matches_comfyuis_table():
    """The examples in comfy/weight_adapter/base.py factorization()'s docstring, except 360 with factor 16:
    the docstring says (12, 30), the code (which never updates ``length``) returns (15, 24), which is what
    ComfyUI allocates (tests/comfy/test_llm_training_comfy.py runs the real function)."""
    table = {(127, 8): (1, 127), (128, -1): (8, 16), (128, 2): (2, 64), (128, 4): (4, 32), (250, -1): (10, 25),
             (250, 8): (5, 50), (360, 4): (4, 90), (360, 16): (15, 24), (512, 8): (8, 64), (1024, 16): (16, 64),
             (1024, -1): (32, 32)}
    for (dim, factor), want in table.items():
        assert T.comfy_factorization(dim, factor) == want, (dim, factor)


def test_comfy_adapter_params():
    assert T.comfy_adapter_params((3072, 3072), 16, "LoRA") == 16 * (3072 + 3072) + 1
    assert T.comfy_adapter_params((320, 4, 3, 3), 8, "LoRA") == 8 * (320 + 4 * 9) + 1
    assert T.comfy_adapter_params((3072, 3072), 16, "LoHa") == 2 * 16 * 6144 + 1
    assert T.comfy_adapter_params((1024, 512), 8, "LoKr") == 8 * 8 + 128 * 64 + 1  # (8,128) × (8,64)
    assert T.comfy_adapter_params((1024, 512), 16, "OFT") == 64 * 16 * 16 + 1  # 64 blocks of 16×16
    assert T.comfy_adapter_params((3072,), 16, "LoRA") == 3072  # 1-D weight: a full-size diff
    with pytest.raises(VramBudgetError, match="GLoRA"):
        T.comfy_adapter_params((8, 8), 4, "GLoRA")


def test_comfy_trainable_params_from_tensors():
    tensors = {"a.weight": (64, 32), "a.bias": (64,), "norm.weight": (32,), "conv.weight": (16, 8, 3, 3),
               "blocks.0.modulation": (1, 6, 64), "a.scale_weight": (1,)}
    want = (4 * (64 + 32) + 1) + 64 + 32 + (4 * (16 + 8 * 9) + 1)
    assert T.comfy_trainable_params(tensors, 4) == want
    assert T.comfy_trainable_params(list(tensors.items()), 4) == want


def test_comfy_lora_training_dtypes_and_optimizers():
    base, n, acts = 20 * GB, 10_000_000, 3 * GB
    b = T.comfy_lora_training(base, n, "bf16", "AdamW", acts)
    assert b.items == dict(weights=base, adapter=2 * n, gradients=2 * n, optimizer_states=4 * n, activations=acts,
                           optimizer_step=2 * n)  # bf16 lora_dtype: bf16 AdamW states, no FP32 master
    assert b.peak_high == base + 8 * n + acts + 2 * GB
    f = T.comfy_lora_training(base, n, "fp32", "AdamW", acts)
    assert f.items["optimizer_states"] == 8 * n and f.items["adapter"] == 4 * n
    assert T.comfy_lora_training(base, n, "bf16", "SGD").items["optimizer_states"] == 0
    assert T.comfy_lora_training(base, n, "bf16", "RMSprop").items["optimizer_states"] == 2 * n
    small = T.comfy_lora_training(base, n, "bf16", "AdamW", 0)  # no activations: the step's temporary is the peak
    assert small.peak_high == base + 8 * n + 2 * n + 2 * GB
    with pytest.raises(VramBudgetError, match="lora_dtype 'fp8'"):
        T.comfy_lora_training(base, n, "fp8")


def test_comfy_training_ladder():
    steps = T.comfy_training_ladder(batch_size=4, grad_accumulation_steps=2, gradient_checkpointing=False,
                                    training_dtype="fp32", lora_dtype="fp32", rank=32, resolution=1024)
    assert [s["key"] for s in steps] == ["batch", "checkpointing", "bf16", "rank", "resolution", "offloading"]
    assert steps[0]["change"] == {"batch_size": 1, "grad_accumulation_steps": 8}
    assert "same effective batch 8" in steps[0]["what"] and steps[1]["cost"] == "≈20-30 % slower"
    done = T.comfy_training_ladder(gradient_checkpointing=True, checkpoint_depth=2, rank=4, resolution=512,
                                   offloading=True)
    assert done == []


@pytest.fixture(scope="module")
def flux_file(tmp_path_factory):
    return write_safetensors(tmp_path_factory.mktemp("flux") / "flux1-dev.safetensors", spec_flux("BF16"), sparse=True)


def test_diffusion_lora_budget(flux_file):
    from vram_budget.nodes.estimator.families import describe

    info = describe(flux_file.path)
    b = T.diffusion_lora_budget(info, resolution=1024, rank=16)
    assert b.items["weights"] == flux_file.nbytes
    assert b.trainable_params == T.comfy_trainable_params({k: s for k, (_, s) in flux_file.spec.items()}, 16)
    tokens = 64 * 64 + 256  # 2×2 patches of a 128×128 latent + Flux's 256 T5 tokens
    per_block = T.dit_block_activation_elements(info.arch)
    assert per_block == 8 * 3072 + 2 * 12288
    assert b.items["activations"] == tokens * 57 * per_block * 2
    ck = T.diffusion_lora_budget(info, resolution=1024, rank=16, grad_ckpt=True)
    assert ck.items["activations"] == tokens * (57 * 3072 * 2 + per_block * 2)
    steps = T.diffusion_remedies(info, find_card("RTX 5090").total_bytes, batch=2)
    assert steps[0].what.startswith("batch_size 1") and steps[1].what.startswith("gradient_checkpointing on")


# ---------------------------------------------------------------------------------------------
# Command line
def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "train", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_cli_train_text():
    out = run("Mistral 7B")
    assert out.returncode == 0, out.stderr
    assert "FP32 master copy" in out.stdout and "before activations" in out.stdout
    assert "on H200" in out.stdout and "cheapest: H200" in out.stdout and "is a leak" in out.stdout


def test_cli_train_json_and_remedies():
    out = run("Llama 3.1 8B", "--batch", "8", "--gpu", "RTX 4090", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["model"] == "Llama 3.1 8B" and d["card"] == "RTX 4090" and d["fits"] is False
    assert d["items"]["optimizer_states"] == 8 * d["config"]["params"]
    assert d["remedies"][0]["what"].startswith("micro-batch 1") and "leak" in d["leak_hint"]
    q = json.loads(run("llama 3.1 8b", "--method", "qlora", "--grad-ckpt", "--json").stdout)
    assert q["card"] == "RTX 4090" and q["fits"] is True and q["remedies"] == []


def test_cli_train_diffusion_file(flux_file):
    out = run(flux_file.path, "--resolution", "512", "--grad-ckpt", "--rank", "8", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert "TrainLoraNode" in d["label"] and d["items"]["weights"] == flux_file.nbytes
    assert d["setup"]["lora_dtype"] == "bf16" and d["setup"]["optimizer"] == "AdamW" and d["cheapest"]
    assert d["setup"]["base"] == "stored" and d["setup"]["resolution"] == 512 and d["peak_allocated"] > 0


@pytest.mark.parametrize("args,needle", [
    (("Llama 9 1T",), "unknown model 'Llama 9 1T'"),
    (("Qwen3 8B", "--method", "dpo"), "--method 'dpo'"),
    (("Qwen3 8B", "--batch", "0"), "--batch 0"),
    (("Qwen3 8B", "--zero", "7", "--gpus", "2"), "--zero 7"),
    (("Qwen3 8B", "--resolution", "1024"), "--resolution is for diffusion models"),
    (("Qwen3 8B", "--seq", "nan"), "invalid int value"),
    (("Qwen3 8B", "--gpu", ""), "--gpu ''"),
    (("Qwen3 8B", "--vram", "-3"), "--vram -3"),
    (("Qwen3 8B", "--vram", "20", "--gpu", "RTX 4090"), "--vram and --gpu"),
    (("Qwen3 8B", "--lora-targets", "qkv"), "--lora-targets 'qkv'"),
    (("Qwen3 8B", "--lora-dropout", "1.5"), "--lora-dropout 1.5"),
    (("Qwen3 8B", "--loss", "fast"), "--loss 'fast'"),
    (("Qwen3 8B", "--quant", "int3"), "--quant 'int3'"),
    (("Qwen3 8B", "--offload", "disk"), "--offload 'disk'"),
    (("Qwen3 8B", "--max", "rank", "--gpu", "H100"), "--max 'rank'"),
    (("Qwen3 8B", "--max", "resolution", "--gpu", "H100"), "--max 'resolution'"),
    (("Qwen3 8B", "--base", "fp8"), "--base is for a diffusion LoRA"),
    (("Qwen3 8B", "--optimizer", "lion"), "--optimizer 'lion'"),
    (("Llama 3.x 70B", "--max", "seq"), "--max seq: give --gpu or --vram"),
])
def test_cli_train_errors(args, needle):
    out = run(*args)
    assert out.returncode == 2, out.stdout
    assert needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_cli_train_diffusion_rejects_llm_flags(flux_file):
    out = run(flux_file.path, "--method", "qlora")
    assert out.returncode == 2 and "--method is for LLMs" in out.stderr
    out = run(flux_file.path, "--loss", "fused", "--kbit-prep")
    assert out.returncode == 2 and "--loss/--kbit-prep are for LLMs" in out.stderr


def test_cli_train_new_llm_flags():
    out = run("Llama 3.1 8B", "--method", "QLoRA", "--optimizer", "PAGED_AdamW8bit", "--grad-ckpt", "--vram", "20",
              "--max", "seq", "--lora-targets", "q,v", "--lora-dropout", "0.05", "--loss", "chunked", "--quant",
              "nf4-dq", "--kbit-prep", "--bnb-legacy", "--bnb-lightning", "--keep-graph", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["card"] == "20 GiB free" and d["max"] == "seq" and d["max_value"] > 2048 and d["max_card"] == "20 GiB free"
    st = d["setup"]
    assert st["method"] == "qlora" and st["optimizer"] == "paged_adamw8bit"
    assert st["lora_modules"] == ["attn_q", "attn_v"]
    assert st["loss"] == "chunked" and st["quant"] == "nf4-dq" and st["kbit_prep"] and st["bnb_legacy"]
    assert st["bnb_lightning"] and st["keep_graph"]
    assert st["lora_dropout"] == 0.05 and st["paged_bytes"] > 0 and d["peak_allocated"] < d["peak_low"]
    assert d["items"]["autocast_copies"] > 0 and d["items"]["dequantized_weight"] > 0
    off = json.loads(run("Mistral 7B", "--offload", "optimizer", "--ckpt-offload", "--gpu", "H100", "--max", "batch",
                         "--json").stdout)
    assert off["setup"]["offload"] == "optimizer" and off["setup"]["ckpt_offload"] and off["setup"]["grad_ckpt"]
    assert off["setup"]["host_bytes"] > 12 * off["config"]["params"] and off["max_value"] >= 1
    amp = json.loads(run("Qwen3 4B", "--precision", "AMP", "--json").stdout)
    assert amp["setup"]["precision"] == "amp" and amp["items"]["autocast_copies"] == 2 * amp["config"]["params"]
    text = run("Llama 3.1 8B", "--method", "lora", "--vram", "24", "--max", "batch").stdout
    assert "largest that fits on 24 GiB free:" in text and "micro-batch" in text


def test_cli_train_diffusion_options(flux_file):
    d = json.loads(run(flux_file.path, "--base", "fp8", "--optimizer", "adamw8bit", "--vram", "16", "--max",
                       "resolution", "--grad-ckpt", "--json").stdout)
    assert d["setup"]["base"] == "fp8" and d["setup"]["optimizer"] == "AdamW8bit" and d["max"] == "resolution"
    assert d["items"]["weights"] < flux_file.nbytes and d["items"]["dequantized_weight"] > 0
    assert d["max_value"] % 64 == 0
    b = json.loads(run(flux_file.path, "--gpu", "RTX 5090", "--max", "batch", "--grad-ckpt", "--json").stdout)
    assert b["max"] == "batch" and b["max_card"] == "RTX 5090" and b["max_value"] >= 1
    assert any("bitsandbytes" in n for n in d["notes"])
    sgd = json.loads(run(flux_file.path, "--optimizer", "sgd", "--json").stdout)
    assert sgd["setup"]["optimizer"] == "SGD" and sgd["items"]["optimizer_states"] == 0
    for args, needle in [(("--base", "fp16x"), "--base 'fp16x'"), (("--optimizer", "lion"), "--optimizer 'lion'"),
                         (("--max", "seq", "--gpu", "H100"), "--max 'seq'")]:
        out = run(flux_file.path, *args)
        assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_diffusion_quantised_base(flux_file):
    from vram_budget.nodes.estimator.families import describe

    info = describe(flux_file.path)
    linear = [math.prod(s) for k, (_, s) in flux_file.spec.items() if k.endswith(".weight") and len(s) == 2]
    stored = T.diffusion_lora_budget(info, rank=8)
    for base, bits in (("fp8", 8), ("nf4", 4.5), ("nf4-dq", 4 + 8 / 64 + 32 / 16384)):
        b = T.diffusion_lora_budget(info, rank=8, base=base)
        assert b.items["weights"] == flux_file.nbytes - 2 * sum(linear) + math.ceil(sum(linear) * bits / 8)
        assert b.items["dequantized_weight"] == 2 * max(linear)
        assert b.trainable_params == stored.trainable_params
    eight = T.diffusion_lora_budget(info, rank=8, optimizer="adamw8bit")
    assert eight.items["optimizer_states"] == 2 * eight.trainable_params and "optimizer_step" not in eight.items
    paged = T.diffusion_lora_budget(info, rank=8, optimizer="PagedAdamW8bit")
    assert paged.items["optimizer_states"] == 0 and any("paged optimizer" in n for n in paged.notes)


def test_cli_train_catalogue_name_without_the_file(tmp_path):
    """The README's `vram-budget train flux1-dev.safetensors` with no such file: the catalogue entry."""
    cli = [sys.executable, "-m", "vram_budget.nodes.estimator.cli", "train"]
    args = ["flux1-dev.safetensors", "--resolution", "768", "--rank", "16", "--grad-ckpt", "--json"]
    out = subprocess.run(cli + args, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["items"]["weights"] == 23_800_000_000 and "catalogue" in d["notes"][0]
    bad = subprocess.run(cli + ["no-such-model.safetensors"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert bad.returncode == 2 and "no such file, and not a file name the catalogue knows" in bad.stderr


def test_trainer_litgpt_and_bnb_version_set_the_code_paths(tmp_path):
    """--trainer litgpt fills in LitGPT's code paths where the user left the default (chunked loss, Lightning's
    bitsandbytes QLoRA, the graph kept, LoRA on q,v); --bnb-version before 0.43.2 keeps each 4-bit input; the
    answer says what it assumed."""
    import argparse
    p = argparse.ArgumentParser()
    for flag, kw in (("--method", dict(default="full")), ("--optimizer", {}), ("--precision", dict(default="mixed")),
                     ("--batch", dict(type=int, default=1)), ("--seq", dict(type=int)), ("--grad-ckpt", dict(action="store_true")),
                     ("--gpus", dict(type=int, default=1)), ("--zero", dict(type=int, default=0)),
                     ("--rank", dict(type=int, default=16))):
        p.add_argument(flag, **kw)
    T.add_train_arguments(p)
    plain = T.train_setup_from_args(p.parse_args(["--method", "qlora"]))
    lit = T.train_setup_from_args(p.parse_args(["--method", "qlora", "--trainer", "litgpt"]))
    assert (plain.loss, plain.bnb_lightning, plain.keep_graph, plain.targets, plain.bnb_legacy) == \
        ("upcast", False, False, "all-linear", False)
    assert (lit.loss, lit.bnb_lightning, lit.keep_graph, lit.targets) == ("chunked", True, True, "q,v")
    # what the user set wins over the preset
    own = T.train_setup_from_args(p.parse_args(["--method", "qlora", "--trainer", "litgpt", "--loss", "fused",
                                                "--lora-targets", "attention"]))
    assert (own.loss, own.targets) == ("fused", "attention")
    old = T.train_setup_from_args(p.parse_args(["--method", "qlora", "--bnb-version", "0.41.1"]))
    assert old.bnb_legacy and not T.train_setup_from_args(p.parse_args(["--bnb-version", "0.43.2"])).bnb_legacy
    with pytest.raises(VramBudgetError, match="--bnb-version"):
        T.train_setup_from_args(p.parse_args(["--bnb-version", "new"]))
    with pytest.raises(VramBudgetError, match="--trainer"):
        T.train_setup_from_args(p.parse_args(["--trainer", "axolotl"]))
    cfg = llm.load_model("Llama 3.1 8B")
    assert T.llm_training(cfg, replace(lit, bnb_legacy=True)).peak > T.llm_training(cfg, lit).peak
    said = T.trainer_assumption(p.parse_args(["--method", "qlora", "--trainer", "litgpt", "--bnb-version", "0.41.1"]))
    assert "LitGPT" in said and "0.41.1" in said and "before 0.43.2" in said
    assert T.BNB_ASSUMED_VERSION in T.trainer_assumption(p.parse_args(["--method", "qlora"]))
    assert T.BNB_LITGPT_VERSION in T.trainer_assumption(p.parse_args(["--method", "qlora", "--trainer", "litgpt"]))
    out = run("Llama 3.1 8B", "--method", "qlora", "--trainer", "litgpt", "--json")
    assert out.returncode == 0 and "LitGPT" in json.loads(out.stdout)["assumes"]
