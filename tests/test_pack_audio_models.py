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
    notes = estimate(read_workflow(_melband_prompt("MelBandRoformer_fp16.safetensors")), DEV).notes
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
        if "V2V" in name:  # WanVideoEncode takes the whole loaded video (frame_load_cap 0): its length is the file's
            assert not budget.complete and any("latent size unknown" in i for i in budget.incomplete), name
            continue
        assert budget.complete, (name, budget.incomplete)


def _long_video_prompt(frames: int, window: int = 81) -> dict:
    return {
        "1": {"class_type": "WanVideoModelLoader", "inputs": {"model": "Wan2_1-I2V-14B-480P_fp8_e4m3fn.safetensors",
                                                             "base_precision": "bf16", "quantization": "fp8_e4m3fn",
                                                             "load_device": "offload_device", "attention_mode": "sdpa",
                                                             "multitalk_model": ["9", 0]}},
        "2": {"class_type": "LoadWanVideoT5TextEncoder", "inputs": {
            "model_name": "umt5-xxl-enc-bf16.safetensors", "precision": "bf16", "load_device": "offload_device"}},
        "3": {"class_type": "WanVideoTextEncode", "inputs": {"t5": ["2", 0], "positive_prompt": "a",
                                                             "negative_prompt": "", "force_offload": True}},
        "4": {"class_type": "WanVideoVAELoader", "inputs": {"model_name": "Wan2_1_VAE_bf16.safetensors",
                                                            "precision": "bf16"}},
        "5": {"class_type": "LoadImage", "inputs": {"image": "face.png"}},
        "6": {"class_type": "WanVideoImageToVideoMultiTalk", "inputs": {
            "vae": ["4", 0], "width": 832, "height": 480, "frame_window_size": window, "motion_frame": 25,
            "force_offload": False, "colormatch": "disabled", "start_image": ["5", 0]}},
        "7": {"class_type": "LoadAudio", "inputs": {"audio": "voice.wav"}},
        "8": {"class_type": "DownloadAndLoadWav2VecModel", "inputs": {
            "model": "TencentGameMate/chinese-wav2vec2-base", "base_precision": "fp16", "load_device": "main_device"}},
        "9": {"class_type": "MultiTalkModelLoader", "inputs": {"model": "Wan2_1-InfiniteTalk_Single_fp16.safetensors"}},
        "10": {"class_type": "MultiTalkWav2VecEmbeds", "inputs": {
            "wav2vec_model": ["8", 0], "audio_1": ["7", 0], "normalize_loudness": True, "num_frames": frames,
            "fps": 25.0, "audio_scale": 1.0, "audio_cfg_scale": 1.0, "multi_audio_type": "para"}},
        "11": {"class_type": "WanVideoSampler", "inputs": {
            "model": ["1", 0], "text_embeds": ["3", 0], "image_embeds": ["6", 0], "multitalk_embeds": ["10", 0],
            "steps": 6, "cfg": 1.0, "shift": 5.0, "seed": 0, "force_offload": True, "scheduler": "unipc"}},
        "12": {"class_type": "WanVideoDecode", "inputs": {"vae": ["4", 0], "samples": ["11", 0],
                                                          "enable_vae_tiling": False}},
        "13": {"class_type": "SaveImage", "inputs": {"images": ["12", 0], "filename_prefix": "talk"}},
    }


def test_a_long_infinitetalk_video_samples_one_window_and_keeps_every_frame_in_ram():
    short = estimate(read_workflow(_long_video_prompt(81)), DEV)
    long = estimate(read_workflow(_long_video_prompt(1000)), DEV)
    assert short.complete and long.complete, long.incomplete
    sample = [s for s in long.stages if s.stage.kind == "sample" and s.stage.manager == "WanVideoWrapper"][0]
    assert sample.stage.latent.pixel_frames == 81  # the window, whatever the video's length
    assert sample.peak_bytes == [s for s in short.stages if s.stage.kind == "sample"
                                 and s.stage.manager == "WanVideoWrapper"][0].peak_bytes
    decode = next(s for s in long.stages if s.stage.kind == "vae_decode")
    assert decode.stage.host_output_bytes == 1000 * 832 * 480 * 3 * 4  # WanVideoDecode's float32 frames
    assert sample.stage.host_output_bytes == 1000 * 832 * 480 * 3 * 4  # the loop's bf16 windows and their concat
    assert long.host.peak_bytes > short.host.peak_bytes
    assert any("windows of 81 frames" in n for n in long.notes)
    window = estimate(read_workflow(_long_video_prompt(1000, window=49)), DEV)
    assert [s for s in window.stages if s.stage.kind == "sample" and s.stage.manager == "WanVideoWrapper"][0] \
        .stage.latent.pixel_frames == 49


def test_an_absurd_video_length_is_bounded():
    budget = estimate(read_workflow(_long_video_prompt(10**12)), DEV)
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    assert decode.stage.host_output_bytes == 100_000 * 832 * 480 * 3 * 4
