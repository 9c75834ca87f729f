"""CogVideoX (issue 33): ComfyUI 0.33.0's native CogVideoX as one family module (families/cogvideox.py: counts of
ComfyUI's own class, its detection keys, its traced working memory and VAE), and the two node packs that run it
themselves: kijai/ComfyUI-CogVideoXWrapper (graph/packs/cogvideox_wrapper.py) and VideoX-Fun's CogVideoX-Fun
(graph/packs/videox_fun.py)."""
from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from helpers_models import spec_params, write_safetensors
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.machine.host_memory import Host
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.models.name_infer import family_of
from vram_budget.nodes.estimator.physics import memory, vae_memory
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.plan.report import format_report
from vram_budget.nodes.estimator.units import GiB
from vram_budget.nodes.estimator.workload import DIFFUSERS, LatentShape

P = registry.PARAMS
CORPUS = Path(__file__).resolve().parent / "workflows" / "community_extra"
TRACES = json.loads((Path(registry.__file__).resolve().parents[1] / "data" / "working_memory.json").read_text())


def _dev(card="RTX 4090", ram_gib=32):
    return replace(Device.from_card(find_card(card)), host=Host(ram_total_bytes=int(ram_gib * GiB)))


def _teacache() -> dict:
    return json.loads((CORPUS / "welltop-cn__ComfyUI-TeaCache__cogvideox.json").read_text(encoding="utf-8"))


def _set(wf: dict, node_type: str, index: int, value) -> dict:
    wf = copy.deepcopy(wf)
    for n in wf["nodes"]:
        if n["type"] == node_type:
            n["widgets_values"][index] = value
    return wf


# ------------------------------------------------------------------ the family
def test_one_module_with_comfyuis_factor_and_text_length():
    for fam in ("cogvideox-2b", "cogvideox-5b", "cogvideox1.5-5b"):
        assert registry.module_of(fam) == "cogvideox" and FAMILIES[fam].kind == DIFFUSION
        assert registry.MEMORY_USAGE_FACTOR[fam] == 2.0  # supported_models_base.BASE: CogVideoX_T2V sets none
        assert registry.TEXT_TOKENS[fam] == 226  # text_encoders/cogvideo.py pads T5 to 226
    assert FAMILIES["vae-cogvideox"].kind == VAE and vae_memory.FAMILIES["vae-cogvideox"].temporal == 4


def test_counts_reproduce_the_published_files():
    """ComfyUI 0.33's class at the published configs (families/cogvideox.py) against the published bytes."""
    assert abs(2 * P["P_COGVIDEOX_2B"] - 3.39e9) < 0.01e9  # CogVideoX-2b transformer, fp16
    assert abs(2 * P["P_COGVIDEOX_5B"] - 11.14e9) < 0.01e9  # CogVideoX-5b transformer, bf16 (two shards)
    assert abs(2 * P["P_COGVIDEOX15_5B_INP"] - 11_145_440_133) < 0.005 * GiB  # void_pass1: 10.38 GiB published
    assert abs(2 * P["P_VAE_COGVIDEOX"] - 431_174_451) < 0.001e9  # cogvideox_vae.safetensors, 411.2 MiB
    # the 5B and the 1.5 5B are one block layout: they differ only in the patch embedding and its inputs
    assert abs(P["P_COGVIDEOX15_5B"] - P["P_COGVIDEOX_5B"]) < 1e6


@pytest.mark.parametrize("name, family, params", [
    ("CogVideoX-2b", "cogvideox-2b", "P_COGVIDEOX_2B"),
    ("CogVideoX-5b", "cogvideox-5b", "P_COGVIDEOX_5B"),
    ("CogVideoX-5b-I2V", "cogvideox-5b", "P_COGVIDEOX_5B_I2V"),
    ("CogVideoX-5b-1.5-T2V", "cogvideox1.5-5b", "P_COGVIDEOX15_5B"),  # kijai's names put the size first
    ("CogVideoX-5b-1.5-I2V", "cogvideox1.5-5b", "P_COGVIDEOX15_5B_I2V"),
    ("CogVideoX-Fun-V1.5-5b-InP", "cogvideox1.5-5b", "P_COGVIDEOX15_5B_INP"),
    ("CogVideoX-Fun-V1.1-5b-InP", "cogvideox-5b", "P_COGVIDEOX_5B"),  # V1.1 is the 1.0 layout
    ("cogvideox1.5_5b_t2v_bf16.safetensors", "cogvideox1.5-5b", "P_COGVIDEOX15_5B"),
    ("void_pass2.safetensors", "cogvideox1.5-5b", "P_COGVIDEOX15_5B_INP"),
])
def test_names(name, family, params):
    assert family_of(name, DIFFUSION)[0] == family
    rule = next(r for r in registry.name_rules(DIFFUSION) if r.family == family and r.params == P[params])
    assert rule is not None
    assert family_of("cogvideox_vae.safetensors", VAE)[0] == "vae-cogvideox"
    assert family_of("CogvideoX-Interpolation", DIFFUSION) is None  # no size in the name: not guessed


# ------------------------------------------------------------------ headers (small widths, ComfyUI's key layout)
def cog_spec(d=128, layers=3, in_channels=16, v15=False, dtype="BF16"):
    """model_detection.py:642-685: blocks.N.norm1.linear (6·dim x time_embed_dim), patch_embed.proj Conv2d (1.0)
    or Linear over 2x2x2 patches (1.5), patch_embed.text_proj."""
    spec = {"patch_embed.proj.weight": (dtype, (d, in_channels * 8) if v15 else (d, in_channels, 2, 2)),
            "patch_embed.text_proj.weight": (dtype, (d, 4096))}
    for i in range(layers):
        spec[f"blocks.{i}.norm1.linear.weight"] = (dtype, (6 * d, 512))
        spec[f"blocks.{i}.ff_proj.weight"] = (dtype, (4 * d, d))
    return spec


@pytest.mark.parametrize("v15, in_channels, family, patch", [
    (False, 16, "cogvideox-2b", (1, 2, 2)),
    (True, 48, "cogvideox1.5-5b", (2, 2, 2)),
])
def test_a_header_is_recognised_by_the_key_comfyui_tests(tmp_path, v15, in_channels, family, patch):
    spec = cog_spec(in_channels=in_channels, v15=v15)
    info = describe(write_safetensors(tmp_path / "my_finetune.safetensors", spec).path)  # the name says nothing
    assert (info.kind, info.family) == (DIFFUSION, family)
    assert (info.arch["hidden_size"], info.arch["depth"], info.arch["in_channels"], info.arch["patch_size"]) == (
        128, 3, in_channels, patch)
    assert info.params == spec_params(spec)
    # without the patch embedding ComfyUI's test does not hold: not CogVideoX
    near = {k: v for k, v in spec.items() if not k.startswith("patch_embed.proj")}
    assert describe(write_safetensors(tmp_path / "near.safetensors", near).path).family != family


def test_the_vae_header_is_cogvideox_not_hunyuan(tmp_path):
    """sd.py:759 / :776 / :787: the CogVideoX VAE's mid-block norm key comes before HunyuanVideo's branch."""
    base = {"decoder.conv_in.conv.weight": ("BF16", (64, 16, 3, 3, 3)),
            "encoder.conv_out.conv.weight": ("BF16", (32, 64, 3, 3, 3))}
    cog = dict(base, **{"decoder.mid_block.resnets.0.norm1.norm_layer.weight": ("BF16", (64,))})
    assert describe(write_safetensors(tmp_path / "a_vae.safetensors", cog).path).family == "vae-cogvideox"
    assert describe(write_safetensors(tmp_path / "b_vae.safetensors", base).path).family == "vae-hunyuan"


# ------------------------------------------------------------------ traced working memory
@pytest.mark.parametrize("key", ["cogvideox-2b", "cogvideox-5b", "cogvideox1.5-5b"])
def test_the_traced_profile_reproduces_its_points(key):
    entry = TRACES["architectures"][key]
    assert entry["provenance"]["comfyui_version"] == "0.33.0" and len(entry["points"]) >= 7
    arch = FAMILIES[key].arch
    for pt in entry["points"]:
        frames = (pt["frames"] - 1) // 4 + 1
        latent = LatentShape(1, 16, pt["height"] // 8, pt["width"] // 8, frames=frames, pixel_height=pt["height"],
                             pixel_width=pt["width"], pixel_frames=pt["frames"], spatial_compression=8,
                             temporal_compression=4)
        assert memory.latent_tokens(key, arch, latent) == pt["tokens"]  # 1.5: the frames in pairs, padded
        wm = memory.diffusion_working(key, arch, latent, pt["batch"], pt["text_tokens"])
        assert wm.source == "traced"
        assert abs(wm.traced_bytes - pt["working_bytes"]) <= 0.01 * pt["working_bytes"]


def test_the_vae_decode_is_traced_per_frame_count():
    small = vae_memory.vae_decode_bytes("vae-cogvideox", (1, 16, 2, 60, 90), dtype_bytes=2)
    long = vae_memory.vae_decode_bytes("vae-cogvideox", (1, 16, 13, 60, 90), dtype_bytes=2)
    assert 6 * GiB < small < long < 10 * GiB  # 720x480: 6.8 GiB at 2 latent frames, 8.5 GiB at 13 (traced)


# ------------------------------------------------------------------ kijai/ComfyUI-CogVideoXWrapper
def test_the_wrappers_pipeline_is_priced_as_it_places_it():
    budget = estimate(read_workflow(_teacache()), _dev())
    assert budget.complete, budget.incomplete
    kinds = [sb.stage.kind for sb in budget.stages]
    assert kinds == ["text_encode", "sample", "vae_decode"]
    sample = budget.stages[1]
    assert (sample.stage.manager, sample.stage.offload, sample.stage.text_tokens) == (DIFFUSERS, "model", 226)
    weights = next(i for i in sample.items if i.category == "weights")
    assert weights.model.family == "cogvideox1.5-5b" and weights.bytes == 2 * P["P_COGVIDEOX15_5B"]
    # 512x512 from the empty latent, 49 frames: 13 latent frames, paired by the 1.5 model's temporal patch
    assert sample.stage.latent.frames == 13 and memory.latent_tokens(
        "cogvideox1.5-5b", weights.model.arch, sample.stage.latent) == 7 * 32 * 32
    assert sample.batch_factor == 2  # cfg 6: cond and uncond in one batch
    decode = budget.stages[2]
    assert decode.stage.latent.frames == 13 and decode.working_bytes > 5 * GiB  # the clip, not one image
    assert budget.verdict == "fits"


def test_no_partial_load_and_the_offload_widget_is_the_fix():
    """The sampler moves the whole transformer to the GPU (nodes.py:692-693): 10.4 GiB + activations do not fit a
    12 GB card; enable_sequential_cpu_offload streams it leaf by leaf."""
    budget = estimate(read_workflow(_teacache()), _dev("RTX 3060"))
    assert budget.verdict == "oom" and budget.stages[budget.peak_stage].stage.kind == "sample"
    seq = estimate(read_workflow(_set(_teacache(), "DownloadAndLoadCogVideoModel", 3, True)), _dev("RTX 3060"))
    assert seq.stages[1].stage.offload == "sequential" and seq.verdict in ("fits", "runs_slower")
    fp8 = estimate(read_workflow(_set(_teacache(), "DownloadAndLoadCogVideoModel", 2, "fp8_e4m3fn")), _dev())
    assert next(i for i in fp8.stages[1].items if i.category == "weights").bytes < 0.55 * 2 * P["P_COGVIDEOX15_5B"]


def test_absurd_frame_counts_are_bounded_by_the_widget():
    budget = estimate(read_workflow(_set(_teacache(), "CogVideoSampler", 0, 10**9)), _dev())
    assert budget.stages[1].stage.latent.pixel_frames == 1021  # num_frames max 1024 -> 4k+1


def test_the_report_does_not_say_dynamic_vram_decides_a_pack_placed_stage():
    text = format_report(estimate(read_workflow(_teacache()), replace(_dev("RTX 3060"), memory_mode="dynamic")))
    assert "Dynamic VRAM" in text and "so the verdict is on working memory" not in text
    assert "enable_sequential_cpu_offload on the model loader" in text  # the fix in the pack's own widgets
    assert "the models a node pack places itself load as that pack loads them" in text


# ------------------------------------------------------------------ VideoX-Fun's CogVideoX-Fun
def test_cogvideox_fun_completes_with_its_t5_and_vae():
    wf = json.loads((CORPUS / "aigc-apps__VideoX-Fun__cogvideoxfunv1.5_workflow_i2v.json").read_text(encoding="utf-8"))
    budget = estimate(read_workflow(wf), _dev())
    assert budget.complete, budget.incomplete
    fams = {i.model.family for sb in budget.stages for i in sb.items if i.category == "weights" and i.model}
    assert {"cogvideox1.5-5b", "vae-cogvideox"} <= fams
    text = next(sb for sb in budget.stages if sb.stage.kind == "text_encode")
    assert text.stage.text_tokens == 226
