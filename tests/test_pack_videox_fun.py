"""Issue 33: aigc-apps/VideoX-Fun (graph/packs/videox_fun.py, runtime.run_diffusers): diffusers pipelines the pack
drives itself. A sampler node runs the text encoder, the transformer(s) and the VAE; GPU_memory_mode says how the
weights move (whole per component, layer by layer, streamed one ahead, or everything resident); the pipeline keeps
every component in RAM while its node runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs.videox_fun import _high_noise_steps
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.machine.host_memory import Host
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.units import GiB

CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
DEV = Device.from_card(find_card("RTX 4090"))
EXAMPLES = ("flux2_workflow_t2i", "qwenimage_chunked_loading_workflow_edit_2509", "qwenimage_workflow_t2i",
            "wan2.1_fun_workflow_v2v_control_pose", "wan2.2_chunked_loading_workflow_t2v_5b", "wan2.2_workflow_i2v")


def _wf(name: str) -> dict:
    return json.loads((CORPUS / f"aigc-apps__VideoX-Fun__{name}.json").read_text(encoding="utf-8"))


def _set(wf: dict, node_type: str, index: int, value) -> dict:
    for n in wf["nodes"]:
        if n["type"] == node_type:
            n["widgets_values"][index] = value
    return wf


def _est(wf, dev=DEV, ram_gib=None):
    if ram_gib is not None:
        from dataclasses import replace
        dev = replace(dev, host=Host(ram_total_bytes=int(ram_gib * GiB)))
    return estimate(read_workflow(wf), dev)


def _sample(budget):
    return [(sb, run) for sb, run in zip(budget.stages, budget.runs) if sb.stage.kind == "sample"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_examples_complete_as_pipelines(name):
    budget = _est(_wf(name))
    assert budget.complete, (name, budget.incomplete, budget.missing)
    kinds = [sb.stage.kind for sb in budget.stages]
    assert kinds[0] == "text_encode" and kinds[-1] == "vae_decode" and "sample" in kinds
    assert {sb.stage.manager for sb in budget.stages} == {"diffusers"}


def test_a14b_runs_one_expert_at_a_time_and_keeps_both_in_ram():
    budget = _est(_wf("wan2.2_workflow_i2v"))  # sequential_cpu_offload, 43 steps, boundary 0.9, shift 5
    samples = _sample(budget)
    assert [sb.stage.expert for sb, _ in samples] == ["high_noise", "low_noise"]
    assert all(len([m for m in sb.stage.models if m.role == "diffusion"]) == 1 for sb, _ in samples)
    assert sum(sb.stage.steps for sb, _ in samples) == 43
    assert samples[0][0].stage.steps == _high_noise_steps(43, 0.9, 5.0) > 0
    for sb, run in samples:  # layer by layer: nothing resident, every weight copied in per forward
        assert run.resident_bytes == 0 and run.streamed_bytes == sb.weights_bytes and run.outcome == "runs_slower"
    experts = sum(sb.weights_bytes for sb, _ in samples)
    assert budget.host.peak_bytes > experts  # the pipeline holds both experts and the T5 in RAM


def test_gpu_memory_mode_decides_what_is_on_the_card():
    def sample_run(mode):
        _, run = _sample(_est(_set(_wf("qwenimage_workflow_t2i"), "LoadQwenImageModel", 1, mode)))[0]
        return run
    whole, layered, grouped = (sample_run(m) for m in ("model_cpu_offload", "sequential_cpu_offload",
                                                       "model_group_offload"))
    assert whole.outcome == "oom" and whole.streamed_bytes == 0  # 38 GiB of bf16 weights moved whole: no partial load
    assert "sequential_cpu_offload" in whole.explanation[0]
    assert layered.outcome == grouped.outcome == "runs_slower" and layered.resident_bytes == 0
    assert grouped.peak_bytes > layered.peak_bytes  # one layer prefetched beside the one that runs
    assert grouped.slowdown <= layered.slowdown  # the copies overlap the compute on a second stream
    fp8 = sample_run("model_cpu_offload_and_qfloat8")
    assert fp8.resident_bytes * 2 == whole.resident_bytes  # float8 storage: one byte a parameter
    assert fp8.outcome in ("fits", "runs_slower")


def test_full_load_keeps_the_text_encoder_on_the_card_while_sampling():
    cpu = _est(_wf("wan2.1_fun_workflow_v2v_control_pose"))
    full = _est(_set(_wf("wan2.1_fun_workflow_v2v_control_pose"), "LoadWanFunModel", 2, "model_full_load"))
    first = next(i for i, sb in enumerate(cpu.stages) if sb.stage.kind == "sample")
    before = sum(sb.weights_bytes for sb in cpu.stages[:first])  # the T5, and the VAE that encoded the control video
    assert [sb.stage.kind for sb in cpu.stages[:first]] == ["text_encode", "vae_encode"]
    (_, run_cpu), (_, run_full) = _sample(cpu)[0], _sample(full)[0]
    assert run_full.peak_bytes - run_cpu.peak_bytes == before
    assert any("model_full_load" in e for e in run_full.explanation)


def test_chunked_loaders_upcast_fp8_files_to_their_precision():
    budget = _est(_wf("qwenimage_chunked_loading_workflow_edit_2509"))
    (sb, _), = _sample(budget)
    item = next(it for it in sb.items if it.category == "weights" and it.model and it.model.kind == "diffusion")
    assert item.bytes == 2 * item.model.params and "precision widget" in item.assumption  # the fp8 file, cast to bf16
    assert sb.stage.reference_latents  # the edit image's tokens at 1024² pixels


def test_ram_decides_a_bf16_flux2_pipeline():
    wf = _wf("flux2_workflow_t2i")
    assert _est(wf, ram_gib=64).verdict == "oom"  # 32B transformer + 24B text encoder, both held in RAM
    assert _est(wf, ram_gib=192).verdict == "runs_slower"


def test_what_it_does_not_price_is_named():
    # CogVideoX-Fun V1.5 is priced (tests/test_cogvideox.py); a model name the loader's list does not have is not
    cog = _est(_set(_wf("cogvideoxfunv1.5_workflow_i2v"), "LoadCogVideoXFunModel", 0, "CogVideoX-Fun-V9-5b-InP"))
    assert not cog.complete and any("CogVideoX-Fun model this estimator does not know" in i for i in cog.incomplete)
    control = _est(_wf("flux2_chunked_loading_workflow_t2i_control"))
    assert not control.complete
    assert any("FLUX.2-dev-Fun-Controlnet-Union" in m.name for m in control.missing)


def test_high_noise_steps_follow_the_shifted_schedule():
    assert _high_noise_steps(40, 0.875, 1.0) == 6  # unshifted: sigma = 1 - i / 40 >= 0.875 for i <= 5
    assert _high_noise_steps(40, 0.875, 5.0) > 6  # the shift keeps sigma high for longer
    assert _high_noise_steps(10**12, 0.9, 5.0) < 10**12  # a user's absurd step count: closed form, no loop
    assert _high_noise_steps(20, 0.875, -1) == _high_noise_steps(20, 0.875, 1.0)  # a nonsense shift reads as none


def _easy(name: str) -> dict:
    return json.loads((CORPUS / f"aigc-apps__EasyAnimate__{name}.json").read_text(encoding="utf-8"))


def test_easyanimate_v51_is_priced_and_the_packs_own_advice_holds():
    """The example's note: a 12B model on a card of 24 GB or less needs model_cpu_offload_and_qfloat8, 'otherwise
    you may receive an out-of-memory error'."""
    from vram_budget.nodes.estimator.families.easyanimate import P_EASYANIMATE_V51_12B
    for name in ("easyanimatev5.1_workflow_t2v", "easyanimatev5.1_workflow_v2v_control",
                 "easyanimatev5.1_workflow_control_camera"):
        budget = _est(_easy(name))
        assert budget.complete, (name, budget.incomplete)
        (sb, run), = _sample(budget)
        item = next(it for it in sb.items if it.model is not None and it.model.kind == "diffusion")
        assert item.model.family == "easyanimate-v5.1-12b" and item.bytes == P_EASYANIMATE_V51_12B  # float8
        assert run.outcome == "fits"
    bf16 = _est(_set(_easy("easyanimatev5.1_workflow_t2v"), "LoadEasyAnimateModel", 1, "model_cpu_offload"))
    (_, run), = _sample(bf16)
    assert bf16.verdict == "oom" and run.outcome == "oom"


def test_easyanimate_before_v5_is_named_not_priced():
    for name in ("easyanimatev3_workflow_i2v", "easyanimatev4_workflow_t2v"):
        budget = _est(_easy(name))
        assert not budget.complete and any("EasyAnimate before V5" in i for i in budget.incomplete), name


def test_easyanimate_v5_reads_two_encoders_mt5_in_float32():
    """V5: V5.1's transformer (the text projections differ by 0.01 %), HunyuanDiT's BERT at the precision widget and
    mT5-XL in float32 (comfyui_nodes.py loads T5EncoderModel with no torch_dtype)."""
    from vram_budget.nodes.estimator.families.easyanimate import P_EASYANIMATE_V51_12B
    from vram_budget.nodes.estimator.families.text_encoders import P_HYDIT_BERT, P_MT5_XL
    for name in ("easyanimatev5_workflow_t2v", "easyanimatev5_workflow_i2v"):
        budget = _est(_easy(name))
        assert budget.complete, (name, budget.incomplete)
        (sb, _run), = _sample(budget)
        item = next(it for it in sb.items if it.model is not None and it.model.kind == "diffusion")
        assert item.model.family == "easyanimate-v5-12b" and item.bytes == P_EASYANIMATE_V51_12B  # qfloat8
        text = next(s for s in budget.stages if s.stage.kind == "text_encode")
        weights = {it.model.family: it.bytes for it in text.items if it.category == "weights"}
        assert weights == {"hydit-bert": 2 * P_HYDIT_BERT, "t5-xl": 4 * P_MT5_XL}
