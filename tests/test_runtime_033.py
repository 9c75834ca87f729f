"""ComfyUI 0.33.0's run-time rules under Dynamic VRAM (issue 21): the block prefetch of comfy/model_prefetch.py.

Numbers derived by hand from the cited 0.33.0 code (docs/runtime.md, "0.33.0" rows)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from vram_budget.nodes.estimator.machine import runtime
from vram_budget.nodes.estimator.machine.device import Device, LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.units import MiB
from vram_budget.nodes.estimator.workload import SAMPLE

LTX2_PARAMS = 19_585_135_392  # families/ltx.py: LTXAV + connectors as traced
LTX2_BF16 = 2 * LTX2_PARAMS


def ltx2_prompt(ckpt="ltx-2-19b-dev.safetensors", frames=97, cfg=4.0):
    """The diffusion half of an LTX-2 text-to-video prompt: enough for the sampling stage."""
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": ckpt}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a puppet sings"}},
        "6": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 768, "height": 512, "length": frames,
                                                               "batch_size": 1}},
        "9": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                                   "latent_image": ["6", 0], "seed": 1, "steps": 20, "cfg": cfg,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
    }


def sample_of(budget):
    i = next(n for n, sb in enumerate(budget.stages) if sb.stage.kind == SAMPLE)
    return budget.stages[i], budget.runs[i]


# --- one block, from the block classes ------------------------------------------------------------------
def test_ltxav_block_is_counted_from_basic_av_transformer_block():
    """av_model.py:85-204 at h = 4096, a = 32 x 64 = 2048 (av_model.py:400-404):
    attn1 4h² = 67,108,864; attn2 4h² = 67,108,864; audio_attn1 + audio_attn2 2 x 4a² = 33,554,432;
    audio_to_video (q h·a, k a·a, v a·a, out a·h) = 25,165,824; video_to_audio (q a·a, k h·a, v h·a, out a·a)
    = 25,165,824; ff 2·h·4h = 134,217,728; audio_ff 2·a·4a = 33,554,432: 385,875,968 (48 blocks: 94.6 % of
    19,585,135,392)."""
    from vram_budget.nodes.estimator.families import ltx

    assert ltx._ltxav_block_params({"hidden_size": 4096}) == 385_875_968
    assert runtime.PREFETCH_BLOCK_PARAMS["ltx2.3"] is runtime.PREFETCH_BLOCK_PARAMS["ltx2.5"] is ltx._ltxav_block_params


def test_minimax_h3_block_is_counted_from_dit_block():
    """ldm/minimax/model.py:158-203 at the defaults (:441-444): hidden 5376, 56 heads x 128 = 7168, ffn 14336:
    qkv 5376 x 21504 = 115,605,504 + out 7168 x 5376 = 38,535,168 + fc1 5376 x 28672 = 154,140,672
    + fc2 14336 x 5376 = 77,070,336: 385,351,680."""
    from vram_budget.nodes.estimator.families import minimax

    arch = dict(hidden_size=5376, heads=56, head_dim=128, ffn_dim=14336, depth=50)
    assert minimax._minimax_h3_block_params(arch) == 385_351_680
    # an int8 convrot export (1 byte a quantised weight, ops.py:1176-1188): the block is 385,351,680 bytes
    model = SimpleNamespace(family="minimax-h3", arch=arch, params=22_200_000_000)
    assert runtime.prefetch_block_bytes(model, 22_200_000_000) == 385_351_680


def test_block_bytes_follow_the_loaded_bytes_and_only_prefetching_models_have_one():
    model = SimpleNamespace(family="ltx2", arch={"hidden_size": 4096, "depth": 48}, params=LTX2_PARAMS)
    assert runtime.prefetch_block_bytes(model, LTX2_BF16) == 771_751_936  # 2 bytes x 385,875,968 = 736 MiB
    flux = SimpleNamespace(family="flux1", arch={"hidden_size": 3072, "depth": 19}, params=11_901_408_320)
    assert runtime.prefetch_block_bytes(flux, 2 * 11_901_408_320) == 0  # flux/model.py has no prefetch queue
    assert runtime.prefetch_block_bytes(None, 1) == 0


# --- which ComfyUI has the rule ---------------------------------------------------------------------------
@pytest.mark.parametrize("rules, prefetch", [("0.8", False), ("0.18", False), ("0.33", True)])
def test_only_the_033_rules_prefetch(rules, prefetch):
    assert device_for_launch(find_card("RTX 5090"), LaunchFlags(rules=rules)).model_prefetch is prefetch


# --- what it does to a run -------------------------------------------------------------------------------
def test_ltx2_on_a_5090_streams_two_blocks_more_under_033():
    """RTX 5090, LTX-2 19B bf16 (39,170,270,784 bytes), Dynamic VRAM. The rules of 0.18 keep NUM_STREAMS + 1 = 3
    casts of the largest weight free: 3 x (4096 x 16384 x 2 bytes) = 3 x 128 MiB = 384 MiB. 0.33 prefetches a
    streamed block whole into one of NUM_STREAMS = 2 stream buffers (model_prefetch.py:99-124, ops.py:149-162):
    2 x 736 MiB + 128 MiB = 1600 MiB. Both rooms are whole 32 MiB pages apart, so 0.33 keeps exactly
    1600 - 384 = 1216 MiB less resident, streams 1216 MiB more, and needs 1216 MiB more at the minimum."""
    card = find_card("RTX 5090")
    old = estimate(read_workflow(ltx2_prompt()), device_for_launch(card, LaunchFlags(rules="0.18")))
    new = estimate(read_workflow(ltx2_prompt()), device_for_launch(card, LaunchFlags(rules="0.33")))
    sb, r18 = sample_of(old)
    _, r33 = sample_of(new)
    assert sb.weights_bytes == LTX2_BF16
    assert runtime.largest_module_bytes(next(i.model for i in sb.items if i.model is not None), LTX2_BF16) == 128 * MiB
    assert r18.streamed_bytes > 0 and r33.outcome == r18.outcome == "runs_slower"
    assert r18.resident_bytes - r33.resident_bytes == 1216 * MiB
    assert r33.streamed_bytes - r18.streamed_bytes == 1216 * MiB
    assert r33.minimum_bytes - r18.minimum_bytes == 1216 * MiB
    assert any("prefetches each streamed block whole" in e for e in r33.explanation)
    assert any(rule.startswith("model_prefetch.py") for rule in r33.rules)


def _ltx2_device(total: int, prefetch: bool) -> Device:
    return Device("test card", total, memory_mode="dynamic", model_prefetch=prefetch)


def test_no_buffers_when_every_block_is_resident_and_streaming_less_than_a_block_frees_nothing():
    """A fully resident block is not copied (ops.py:166-176), so with room for all weights + activations + the
    256 MiB headroom and 100 MiB more, 0.33 streams nothing, where the rule without prefetch (3 casts of 128 MiB
    kept free) streams. 200 MiB short of that, 0.33 must stream whole blocks: the two buffers (1472 MiB) + the
    compute-side cast (128 MiB) + the 200 MiB, at least 1800 MiB."""
    wl = read_workflow(ltx2_prompt(cfg=1.0))  # one cond: the working memory is the stage's working_bytes
    probe = estimate(wl, _ltx2_device(200 * 1024 * MiB, True))
    sb, r = sample_of(probe)
    context, work = probe.device.context_bytes, sb.working_bytes
    assert r.streamed_bytes == 0 and r.peak_bytes == context + LTX2_BF16 + work
    snug = context + LTX2_BF16 + work + 256 * MiB + 100 * MiB
    assert sample_of(estimate(wl, _ltx2_device(snug, True)))[1].streamed_bytes == 0
    assert sample_of(estimate(wl, _ltx2_device(snug, False)))[1].streamed_bytes > 0
    short = sample_of(estimate(wl, _ltx2_device(snug - 300 * MiB, True)))[1]
    assert short.streamed_bytes >= (2 * 736 + 128 + 200) * MiB
    assert short.resident_bytes % (32 * MiB) == 0


def test_models_without_a_prefetch_queue_keep_the_old_rule():
    """flux/model.py has no make_prefetch_queue: 0.33 and 0.18 agree on Flux."""
    from test_budget import flux_workload  # tests/ is on sys.path

    card = find_card("RTX 4070")
    runs = [sample_of(estimate(flux_workload(), device_for_launch(card, LaunchFlags(rules=rules))))[1]
            for rules in ("0.18", "0.33")]
    assert runs[0].streamed_bytes > 0
    assert (runs[0].resident_bytes, runs[0].streamed_bytes, runs[0].minimum_bytes) == (
        runs[1].resident_bytes, runs[1].streamed_bytes, runs[1].minimum_bytes)


def test_classic_mode_has_no_prefetch():
    """make_prefetch_queue needs prefetch_dynamic_vbars, set only for a dynamic patcher (model_base.py:245)."""
    card = find_card("RTX 5090")
    flags = LaunchFlags(rules="0.33", disable_dynamic_vram=True)
    classic = sample_of(estimate(read_workflow(ltx2_prompt()), device_for_launch(card, flags)))[1]
    assert not any(rule.startswith("model_prefetch.py") for rule in classic.rules)
