"""Issue 33: the audio models of WanVideoWrapper's talking-video examples, priced by their own code:
kijai/ComfyUI-MelBandRoFormer (graph/packs/melband_roformer.py, families/melband_roformer.py) and the wrapper's
wav2vec2 loaders and embeds nodes (MultiTalk / InfiniteTalk, FantasyTalking)."""
from __future__ import annotations

import json

import helpers_models as hm
import pytest

from vram_budget.nodes.estimator.families import describe, melband_roformer as MB
from vram_budget.nodes.estimator.families.adapters import P_WAV2VEC2_BASE
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs import melband_roformer as MBP
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.plan.planning import estimate
from workflows.corpus import community_dir

DEV = Device.from_card(find_card("RTX 4090"))


def test_the_melband_count_is_the_models_own():
    bins = MB.bins_per_band()
    assert len(bins) == 60 and sum(bins) == 1979  # 3,958 with both channels: the model's mask output width
    assert MB.P_MELBAND == 228_202_788
    # the two published files: fp32 912.8 MB, fp16 456.4 MB
    assert round(MB.P_MELBAND * 4 / 1e6, 1) == 912.8 and round(MB.P_MELBAND * 2 / 1e6, 1) == 456.4
    smaller = dict(MB.CONFIG, depth=3)
    assert MB.parameters(smaller) < MB.P_MELBAND  # a count computed from the configuration, not a constant


def _melband_prompt(name: str) -> dict:
    return {
        "1": {"class_type": "LoadAudio", "inputs": {"audio": "song.wav"}},
        "2": {"class_type": "MelBandRoFormerModelLoader", "inputs": {"model_name": name}},
        "3": {"class_type": "MelBandRoFormerSampler", "inputs": {"model": ["2", 0], "audio": ["1", 0]}},
        "4": {"class_type": "SaveAudio", "inputs": {"audio": ["3", 0], "filename_prefix": "vocals"}},
    }


def _stage(prompt, kind: str):
    budget = estimate(read_workflow(prompt), DEV)
    assert budget.complete, budget.incomplete
    return next(s for s in budget.stages if s.stage.kind == kind)


def test_melband_weights_are_fp32_whatever_the_file_and_one_chunk_works():
    for name in ("MelBandRoformer_fp16.safetensors", "MelBandRoFormer/MelBandRoformer_fp32.safetensors"):
        stage = _stage(_melband_prompt(name), "sample")
        assert stage.weights_bytes == 4 * MB.P_MELBAND, name
        assert stage.working_bytes == sum(n for _, n, _ in MBP.chunk_working())
    # 801 frames x 60 bands x 384 x 4 bytes x 11: the feed-forward's widths of one 8 s chunk
    assert MBP.chunk_working()[0][1] == 11 * 801 * 60 * 384 * 4
    notes = _stage(_melband_prompt("MelBandRoformer_fp16.safetensors"), "sample").stage.notes
    assert any("1 MB per second of audio" in n for n in notes), notes


def _talk_prompt(loader: dict, embeds: str, frames: int, fps: float) -> dict:
    inputs = {"wav2vec_model": ["2", 0], "num_frames": frames, "fps": fps, "audio_scale": 1.0,
              "audio_cfg_scale": 1.0}
    if embeds == "MultiTalkWav2VecEmbeds":
        inputs.update(audio_1=["1", 0], normalize_loudness=True, multi_audio_type="para")
    else:
        inputs.update(audio=["1", 0], fantasytalking_model=["5", 0])
    return {
        "1": {"class_type": "LoadAudio", "inputs": {"audio": "voice.wav"}},
        "2": loader,
        "3": {"class_type": embeds, "inputs": inputs},
        "4": {"class_type": "PreviewAny", "inputs": {"source": ["3", 0]}},
        "5": {"class_type": "FantasyTalkingModelLoader", "inputs": {"model": "fantasytalking_fp16.safetensors",
                                                                    "base_precision": "fp16"}},
    }


@pytest.mark.parametrize("loader", [
    {"class_type": "DownloadAndLoadWav2VecModel", "inputs": {"model": "TencentGameMate/chinese-wav2vec2-base",
                                                            "base_precision": "fp16", "load_device": "main_device"}},
    {"class_type": "Wav2VecModelLoader", "inputs": {"model": "wav2vec2-chinese-base_fp16.safetensors",
                                                   "base_precision": "fp16", "load_device": "main_device"}},
])
def test_multitalk_wav2vec_reads_num_frames_over_fps_seconds(loader):
    short = _stage(_talk_prompt(loader, "MultiTalkWav2VecEmbeds", 81, 25.0), "audio_encode")
    long = _stage(_talk_prompt(loader, "MultiTalkWav2VecEmbeds", 405, 25.0), "audio_encode")
    assert short.weights_bytes == long.weights_bytes == 2 * P_WAV2VEC2_BASE
    assert 4.5 < long.working_bytes / short.working_bytes < 5.5  # five times the seconds


def test_fp32_precision_keeps_four_bytes_and_fantasytalking_keeps_one_state():
    loader = {"class_type": "DownloadAndLoadWav2VecModel", "inputs": {"model": "facebook/wav2vec2-base-960h",
                                                                     "base_precision": "fp32",
                                                                     "load_device": "main_device"}}
    fantasy = _stage(_talk_prompt(loader, "FantasyTalkingWav2VecEmbeds", 81, 23.0), "audio_encode")
    multi = _stage(_talk_prompt(loader, "MultiTalkWav2VecEmbeds", 81, 23.0), "audio_encode")
    assert fantasy.weights_bytes == 4 * P_WAV2VEC2_BASE
    assert fantasy.working_bytes < multi.working_bytes  # MultiTalk keeps all 13 hidden states


def test_a_wav2vec2_base_file_is_read_as_base_by_its_header(tmp_path):
    spec = {"encoder.layer_norm.bias": ("F16", (768,)),
            "encoder.layers.0.attention.k_proj.weight": ("F16", (768, 768)),
            "feature_extractor.conv_layers.0.conv.weight": ("F16", (512, 1, 10))}
    info = describe(hm.write_safetensors(tmp_path / "some_speech_encoder.safetensors", spec).path)
    assert info.family == "wav2vec2-base"
    large = dict(spec, **{"encoder.layer_norm.bias": ("F16", (1024,))})
    assert describe(hm.write_safetensors(tmp_path / "large.safetensors", large).path).family == "wav2vec2"
    named, _ = infer_info("TencentGameMate/chinese-wav2vec2-base", "audio_encoder", "transformers")
    assert named.family == "wav2vec2-base" and named.params == P_WAV2VEC2_BASE


def test_the_talking_examples_are_complete():
    folder = community_dir()
    for name in ("wanvideo_2_1_14B_HuMo_example_01", "wanvideo_2_1_14B_I2V_FantasyTalking_example_01",
                 "wanvideo_2_1_14B_I2V_InfiniteTalk_example_03", "wanvideo_2_1_14B_V2V_InfiniteTalk_example_02"):
        path = folder / f"kijai__ComfyUI-WanVideoWrapper__{name}.json"
        if not path.is_file():
            pytest.skip(f"{path} is not in this checkout's corpus")
        budget = estimate(read_workflow(json.loads(path.read_text())), DEV)
        assert budget.complete, (name, budget.incomplete)
