"""Audio encoders (comfy/audio_encoders, ComfyUI 0.18.2): AudioEncoderEncode is its own stage that loads the
encoder on the GPU (text-encoder device and dtype), Wan S2V's wav2vec2 and HuMo's Whisper large v3."""
from __future__ import annotations

import helpers_models as hm

from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.families.registry import PARAMS as P
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.families import describe
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.workload import AUDIO_ENCODE

RTX_4090 = Device.from_card(find_card("RTX 4090"))


def _prompt(encoder: str) -> dict:
    return {
        "1": {"class_type": "AudioEncoderLoader", "inputs": {"audio_encoder_name": encoder}},
        "2": {"class_type": "LoadAudio", "inputs": {"audio": "speech.wav"}},
        "3": {"class_type": "AudioEncoderEncode", "inputs": {"audio_encoder": ["1", 0], "audio": ["2", 0]}},
        "4": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.2_s2v_14B_fp8_scaled.safetensors",
                                                     "weight_dtype": "default"}},
        "5": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 832, "height": 480, "length": 77,
                                                                  "batch_size": 1}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["4", 0], "latent_image": ["5", 0], "seed": 1, "steps": 4,
                                                   "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple",
                                                   "denoise": 1.0, "positive": ["7", 0], "negative": ["7", 0]}},
        "7": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["8", 0]}},
        "8": {"class_type": "CLIPTextEncode", "inputs": {"text": "x", "clip": ["9", 0]}},
        "9": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                     "type": "wan"}},
        "10": {"class_type": "SaveLatent", "inputs": {"samples": ["6", 0], "filename_prefix": "x"}},
    }


def _audio_stage(budget):
    return next(sb for sb in budget.stages if sb.stage.kind == AUDIO_ENCODE)


def test_audio_encode_is_a_stage_that_loads_the_encoder():
    w = read_workflow(_prompt("wav2vec2_large_english_fp16.safetensors"))
    assert not w.unknown_nodes
    stage = next(s for s in w.stages if s.kind == AUDIO_ENCODE)
    assert [(m.role, m.folder) for m in stage.models] == [("audio_encoder", "audio_encoders")]
    b = estimate(w, RTX_4090)
    audio = _audio_stage(b)
    assert abs(audio.weights_bytes - round(601.8 * 2**20)) <= 1  # the template's published 601.8 MB (fp16 file)
    weights = next(i for i in audio.items if i.category == "weights")
    assert weights.model.family == "wav2vec2" and "text-encoder dtype" in weights.assumption
    assert any("activations not counted" in n for n in audio.notes)
    assert b.complete
    assert b.peak_bytes > audio.weights_bytes  # sampling, not the audio encoder, sets the peak


def test_whisper_file_loads_only_its_encoder():
    info = catalogue_info("whisper_large_v3_fp16.safetensors", "audio_encoders")
    assert info.family == "whisper-encoder" and info.weights_bytes == round(2.88 * 2**30)  # encoder + decoder file
    audio = _audio_stage(estimate(read_workflow(_prompt("whisper_large_v3_fp16.safetensors")), RTX_4090))
    assert audio.weights_bytes == 2 * P["P_WHISPER_V3_ENCODER"]  # 1.27 GB: the decoder is not loaded
    assert "decoder is not loaded" in next(i.assumption for i in audio.items if i.category == "weights")


def test_an_audio_encoder_nothing_knows_is_said_so():
    b = estimate(read_workflow(_prompt("my_speech_encoder.safetensors")), RTX_4090)
    assert not b.complete and [m.name for m in b.missing] == ["my_speech_encoder.safetensors"]


def test_audio_encoders_detected_from_their_keys(tmp_path):
    wav = {"wav2vec2.feature_extractor.conv_layers.0.conv.weight": ("F16", (512, 1, 10)),
           "wav2vec2.feature_projection.projection.weight": ("F16", (1024, 512)),
           "wav2vec2.encoder.layer_norm.bias": ("F16", (1024,)),
           **{f"wav2vec2.encoder.layers.{i}.attention.q_proj.weight": ("F16", (1024, 1024)) for i in range(3)}}
    info = describe(hm.write_safetensors(tmp_path / "a.safetensors", wav).path)
    assert (info.kind, info.family, info.arch["hidden_size"], info.arch["layers"]) == ("audio_encoder", "wav2vec2", 1024, 3)
    whisper = {"model.encoder.conv1.weight": ("F16", (1280, 128, 3)),
               "model.encoder.embed_positions.weight": ("F16", (1500, 1280)),
               **{f"model.encoder.layers.{i}.fc1.weight": ("F16", (5120, 1280)) for i in range(2)}}
    info = describe(hm.write_safetensors(tmp_path / "b.safetensors", whisper).path)
    assert (info.kind, info.family, info.arch["layers"]) == ("audio_encoder", "whisper-encoder", 2)
