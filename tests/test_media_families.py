"""Audio, audio-video and 3D workflows (issue 10): ACE-Step v1, LTX-2 19B and Hunyuan3D 2.1 read from real
ComfyUI node graphs (API prompts as the frontend sends them) and priced stage by stage: latent shapes as
ComfyUI's nodes make them, checkpoints split into their traced parts, working memory from the traced tables.
No ComfyUI needed: the model files are priced from the catalogue by name."""
from __future__ import annotations

import math

from vram_budget.nodes.estimator.physics import memory, vae_memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.units import GB
from vram_budget.nodes.estimator.workload import SAMPLE, VAE_DECODE

RTX_4090 = Device.from_card(find_card("RTX 4090"))


def _sampler(model, positive, negative, latent, cfg):
    return {"class_type": "KSampler", "inputs": {
        "model": model, "positive": positive, "negative": negative, "latent_image": latent, "seed": 1,
        "steps": 20, "cfg": cfg, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}}


def ace_prompt(seconds=120.0, batch=1):
    """The official audio_ace_step_1_t2a_song template's graph (comfy_extras/nodes_ace.py)."""
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "ace_step_v1_3.5b.safetensors"}},
        "2": {"class_type": "TextEncodeAceStepAudio", "inputs": {"clip": ["1", 1], "tags": "j-pop, piano",
                                                                 "lyrics": "[verse]\nla la la", "lyrics_strength": 1.0}},
        "3": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["2", 0]}},
        "4": {"class_type": "EmptyAceStepLatentAudio", "inputs": {"seconds": seconds, "batch_size": batch}},
        "5": _sampler(["1", 0], ["2", 0], ["3", 0], ["4", 0], 5.0),
        "6": {"class_type": "VAEDecodeAudio", "inputs": {"samples": ["5", 0], "vae": ["1", 2]}},
        "7": {"class_type": "SaveAudio", "inputs": {"audio": ["6", 0], "filename_prefix": "x"}},
    }


def test_ace_step_latent_stages_and_parts():
    budget = estimate(read_workflow(ace_prompt(120.0, batch=2)), RTX_4090)
    assert budget.complete, (budget.missing, budget.incomplete)
    sample = next(s for s in budget.stages if s.stage.kind == SAMPLE)
    lat = sample.stage.latent
    # nodes_ace.py:82: length = int(seconds * 44100 / 512 / 8)
    assert (lat.batch, lat.channels, lat.height, lat.width, lat.media) == (2, 8, 16, int(120 * 44100 / 512 / 8), "audio")
    assert memory.latent_tokens("ace-step-v1", {"patch_size": (16, 1)}, lat) == lat.width  # patch 16 x 1
    weights = {i.model.family: i.bytes for i in sample.items if i.model is not None}
    assert weights == {"ace-step-v1": 2 * 3_322_438_608}  # the transformer part only, at 16 bit
    decode = next(s for s in budget.stages if s.stage.kind == VAE_DECODE)
    work = next(i for i in decode.items if i.category == "working")
    single, _ = vae_memory.media_decode_bytes("vae-ace", (1, 8, 16, lat.width))
    assert single < work.bytes < 1.05 * single  # the DCAE decodes one item at a time: a batch of 2 ~ one
    assert "one item at a time" in work.assumption
    longer = estimate(read_workflow(ace_prompt(240.0)), RTX_4090)
    assert (next(s for s in longer.stages if s.stage.kind == VAE_DECODE).working_bytes
            > 1.9 * next(s for s in estimate(read_workflow(ace_prompt(120.0)), RTX_4090).stages
                         if s.stage.kind == VAE_DECODE).working_bytes)


def hunyuan3d_prompt(tokens=4096, num_chunks=8000, octree=256):
    """The official 3d_hunyuan3d-v2.1 template's graph (comfy_extras/nodes_hunyuan3d.py)."""
    return {
        "1": {"class_type": "ImageOnlyCheckpointLoader", "inputs": {"ckpt_name": "hunyuan_3d_v2.1.safetensors"}},
        "2": {"class_type": "LoadImage", "inputs": {"image": "chair.png"}},
        "3": {"class_type": "CLIPVisionEncode", "inputs": {"clip_vision": ["1", 1], "image": ["2", 0], "crop": "center"}},
        "4": {"class_type": "Hunyuan3Dv2Conditioning", "inputs": {"clip_vision_output": ["3", 0]}},
        "5": {"class_type": "EmptyLatentHunyuan3Dv2", "inputs": {"resolution": tokens, "batch_size": 1}},
        "6": {"class_type": "ModelSamplingAuraFlow", "inputs": {"model": ["1", 0], "shift": 1.0}},
        "7": _sampler(["6", 0], ["4", 0], ["4", 1], ["5", 0], 5.0),
        "8": {"class_type": "VAEDecodeHunyuan3D", "inputs": {"samples": ["7", 0], "vae": ["1", 2],
                                                            "num_chunks": num_chunks, "octree_resolution": octree}},
        "9": {"class_type": "VoxelToMesh", "inputs": {"voxel": ["8", 0], "algorithm": "surface net", "threshold": 0.6}},
        "10": {"class_type": "SaveGLB", "inputs": {"mesh": ["9", 0], "filename_prefix": "x"}},
    }


def test_hunyuan3d_decode_is_priced_from_its_chunk_and_octree_settings():
    budget = estimate(read_workflow(hunyuan3d_prompt()), RTX_4090)
    assert budget.complete, (budget.missing, budget.incomplete)
    kinds = [s.stage.kind for s in budget.stages]
    assert kinds == ["clip_vision_encode", SAMPLE, VAE_DECODE]
    vision = budget.stages[0]
    assert [i.model.label for i in vision.items if i.model is not None] == ["DINOv2-L image encoder (from Hunyuan3D 2.1 checkpoint)"]
    lat = budget.stages[1].stage.latent
    assert (lat.channels, lat.height, lat.width, lat.media) == (64, 1, 4096, "3d")
    decode = budget.stages[2]
    assert decode.stage.decode_options == {"num_chunks": 8000, "octree_resolution": 256}
    default = decode.working_bytes
    assert default == vae_memory.hunyuan3d_decode_bytes(1, 256, 8000, tokens=4096)[0]
    more = estimate(read_workflow(hunyuan3d_prompt(num_chunks=32000)), RTX_4090).stages[2].working_bytes
    finer = estimate(read_workflow(hunyuan3d_prompt(octree=384)), RTX_4090).stages[2].working_bytes
    assert more > 2 * default and finer > 1.5 * default


def ltx2_prompt(ckpt="ltx-2-19b-dev.safetensors", frames=97, fps=25):
    """LTX-2 audio + video as the official video_ltx2_t2v template wires it (comfy_extras/nodes_lt*.py)."""
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": ckpt}},
        "2": {"class_type": "LTXAVTextEncoderLoader", "inputs": {"text_encoder": "gemma_3_12B_it_fp4_mixed.safetensors",
                                                                 "ckpt_name": ckpt, "device": "default"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "a puppet sings"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "blurry"}},
        "5": {"class_type": "LTXVAudioVAELoader", "inputs": {"ckpt_name": ckpt}},
        "6": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 768, "height": 512, "length": frames,
                                                               "batch_size": 1}},
        "7": {"class_type": "LTXVEmptyLatentAudio", "inputs": {"frames_number": frames, "frame_rate": fps,
                                                               "batch_size": 1, "audio_vae": ["5", 0]}},
        "8": {"class_type": "LTXVConcatAVLatent", "inputs": {"video_latent": ["6", 0], "audio_latent": ["7", 0]}},
        "9": _sampler(["1", 0], ["3", 0], ["4", 0], ["8", 0], 4.0),
        "10": {"class_type": "LTXVSeparateAVLatent", "inputs": {"av_latent": ["9", 0]}},
        "11": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["1", 2]}},
        "12": {"class_type": "LTXVAudioVAEDecode", "inputs": {"samples": ["10", 1], "audio_vae": ["5", 0]}},
        "13": {"class_type": "SaveImage", "inputs": {"images": ["11", 0], "filename_prefix": "x"}},
        "14": {"class_type": "SaveAudio", "inputs": {"audio": ["12", 0], "filename_prefix": "x"}},
    }


def test_ltx2_audio_travels_with_the_video_and_each_part_is_priced():
    budget = estimate(read_workflow(ltx2_prompt(frames=121, fps=24)), Device.from_card(find_card("RTX 5090")))
    assert budget.complete, (budget.missing, budget.incomplete)
    sample = next(s for s in budget.stages if s.stage.kind == SAMPLE)
    assert sample.stage.latent.audio.height == math.ceil(121 / 24 * 25)  # nodes_lt_audio.py: 25 latents a second
    assert memory.working_memory_key("ltx2", {}) == "ltx2-19b"
    parts = {i.model.family: i.bytes for s in budget.stages for i in s.items if i.model is not None}
    assert parts["ltx2"] == 2 * 19_585_135_392 and parts["vae-ltx2"] == 2 * 1_246_913_522
    assert parts["vae-ltx2-audio"] == 2 * 108_840_948
    assert "gemma3" in {i.model.family for s in budget.stages for i in s.items if i.model is not None}
    text = next(s for s in budget.stages if s.stage.kind == "text_encode")
    assert "1024 tokens" in next(i.assumption for i in text.items if i.category == "working")  # lt.py min_length
    decodes = {s.stage.node_type: s for s in budget.stages if s.stage.kind == VAE_DECODE}
    audio = decodes["LTXVAudioVAEDecode"]
    assert audio.stage.latent.media == "audio" and audio.working_bytes > 0
    assert decodes["VAEDecode"].stage.latent.media == ""  # the video half, without the audio


def test_ltx2_audio_from_a_file_is_bounded_by_its_trim():
    """Audio-to-video (video_ltx2_3_ia2v): the audio latent is the encode of a loaded file, whose length only the run
    knows; TrimAudioDuration cuts it to at most `duration` seconds, so the latent is bounded and said to be."""
    prompt = ltx2_prompt()
    prompt["15"] = {"class_type": "LoadAudio", "inputs": {"audio": "song.mp3"}}
    prompt["16"] = {"class_type": "TrimAudioDuration", "inputs": {"audio": ["15", 0], "start_index": 0.0,
                                                                  "duration": 9.0}}
    prompt["7"] = {"class_type": "LTXVAudioVAEEncode", "inputs": {"audio": ["16", 0], "audio_vae": ["5", 0]}}
    workload = read_workflow(prompt)
    sample = workload.stages_of(SAMPLE)[0]
    assert sample.latent.audio is not None and sample.latent.audio.height == 9 * 25
    assert any("at most 9 s" in n for n in workload.notes)
    budget = estimate(workload, Device.from_card(find_card("RTX 5090")))
    assert budget.complete, (budget.missing, budget.incomplete)
    # without the trim the file's length is unknown: the audio decode is not priced
    prompt["7"]["inputs"]["audio"] = ["15", 0]
    assert not estimate(read_workflow(prompt), Device.from_card(find_card("RTX 5090"))).complete


def test_ltx2_fp8_checkpoint_keeps_its_other_parts_16_bit():
    """ltx-2-19b-dev-fp8 (27.1 GB): the VAEs and the text projection stay 16-bit, the transformer takes the rest."""
    budget = estimate(read_workflow(ltx2_prompt("ltx-2-19b-dev-fp8.safetensors")), Device.from_card(find_card("RTX 5090")))
    infos = {i.model.family: i.model for s in budget.stages for i in s.items if i.model is not None}
    rest = 1_246_913_522 + 108_840_948 + 722_534_400
    assert infos["ltx2"].weights_bytes == int(27.1 * GB) - 2 * rest
    assert infos["vae-ltx2"].weights_bytes == 2 * 1_246_913_522 and infos["vae-ltx2"].quantization is None


def test_an_esrgan_upscale_is_a_stage_priced_as_comfyui_reserves_it():
    """ImageUpscaleWithModel after a decode: the upscale model's weights plus what ComfyUI frees before it
    runs (nodes_upscale_model.py:70-73: 512²·3·4 bytes·scale·384 + the input image)."""
    prompt = {
        "1": {"class_type": "UpscaleModelLoader", "inputs": {"model_name": "4x-UltraSharp.pth"}},
        "2": {"class_type": "EmptyImage", "inputs": {"width": 1024, "height": 768, "batch_size": 1, "color": 0}},
        "3": {"class_type": "ImageUpscaleWithModel", "inputs": {"upscale_model": ["1", 0], "image": ["2", 0]}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "x"}},
    }
    budget = estimate(read_workflow(prompt), RTX_4090)
    assert budget.complete, (budget.missing, budget.incomplete)
    (stage,) = budget.stages
    assert stage.stage.kind == "upscale" and stage.stage.images == ((1024, 768),)
    assert stage.working_bytes == 512 * 512 * 3 * 4 * 4 * 384 + 1024 * 768 * 3 * 4
    assert 60e6 < sum(i.bytes for i in stage.items if i.category == "weights") < 80e6  # 67 MB published
    unknown = dict(prompt, **{"2": {"class_type": "LoadImage", "inputs": {"image": "nowhere.png"}}})
    assert estimate(read_workflow(unknown), RTX_4090).stages[0].working_bytes > 0  # 1 MP assumed, said so


def test_edit_models_attend_over_their_reference_latents():
    """Flux Kontext's ReferenceLatent and Qwen-Image-Edit's text-encode node add the reference image's tokens
    to every model call (nodes_edit_model.py:23-26, nodes_qwen.py:80-98): the sampler's working memory grows
    by them, counted once per conditioning (the negative carries its own copy, not a second one)."""
    def kontext(with_reference: bool):
        prompt = {
            "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-kontext-dev.safetensors",
                                                         "weight_dtype": "default"}},
            "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors",
                                                             "clip_name2": "t5xxl_fp16.safetensors", "type": "flux"}},
            "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
            "4": {"class_type": "EmptyImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1, "color": 0}},
            "5": {"class_type": "VAEEncode", "inputs": {"pixels": ["4", 0], "vae": ["3", 0]}},
            "6": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "make it red"}},
            "7": {"class_type": "ReferenceLatent", "inputs": {"conditioning": ["6", 0], "latent": ["5", 0]}},
            "8": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["7" if with_reference else "6", 0]}},
            "9": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
            "10": _sampler(["1", 0], ["7" if with_reference else "6", 0], ["8", 0], ["9", 0], 2.5),
            "11": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["3", 0]}},
            "12": {"class_type": "SaveImage", "inputs": {"images": ["11", 0], "filename_prefix": "x"}},
        }
        return estimate(read_workflow(prompt), RTX_4090)

    plain, edit = kontext(False), kontext(True)
    s_plain = next(s for s in plain.stages if s.stage.kind == SAMPLE)
    s_edit = next(s for s in edit.stages if s.stage.kind == SAMPLE)
    assert s_plain.stage.reference_latents == () and s_edit.stage.reference_latents == ((128, 128),)
    work = lambda s: next(i for i in s.items if i.category == "working")  # noqa: E731
    assert "8192 latent tokens (incl. 4096 of 1 reference latent(s))" in work(s_edit).assumption
    assert 1.8 < work(s_edit).bytes / work(s_plain).bytes < 2.2  # twice the image tokens

    qwen = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "qwen_image_edit_2509_fp8_e4m3fn.safetensors",
                                                     "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen_2.5_vl_7b_fp8_scaled.safetensors",
                                                     "type": "qwen_image"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "qwen_image_vae.safetensors"}},
        "4": {"class_type": "EmptyImage", "inputs": {"width": 2048, "height": 1024, "batch_size": 1, "color": 0}},
        "5": {"class_type": "TextEncodeQwenImageEditPlus", "inputs": {"clip": ["2", 0], "prompt": "x", "vae": ["3", 0],
                                                                      "image1": ["4", 0], "image2": ["4", 0]}},
        "6": {"class_type": "TextEncodeQwenImageEditPlus", "inputs": {"clip": ["2", 0], "prompt": "", "vae": ["3", 0],
                                                                      "image1": ["4", 0], "image2": ["4", 0]}},
        "7": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "8": _sampler(["1", 0], ["5", 0], ["6", 0], ["7", 0], 2.5),
        "9": {"class_type": "SaveLatent", "inputs": {"samples": ["8", 0], "filename_prefix": "x"}},
    }
    sample = next(s for s in estimate(read_workflow(qwen), RTX_4090).stages if s.stage.kind == SAMPLE)
    # each image scaled to 1 MP (1448 x 728 px, multiples of 8) and VAE-encoded (/8): two per conditioning
    assert sample.stage.reference_latents == ((91, 181), (91, 181))


# ---------------------------------------------------------------------------------------------
# OmniGen2 (issue 10 section 2): ComfyUI's Omnigen2 and its Qwen2.5-VL 3B encoder, traced with ComfyUI 0.18.2

def _omnigen2_spec(layers=3, hidden=84, text=64, refiners=2):
    """OmniGen2Transformer2DModel's key names (comfy/ldm/omnigen/omnigen2.py), small widths."""
    spec = {"x_embedder.weight": ("BF16", (hidden, 64)), "x_embedder.bias": ("BF16", (hidden,)),
            "ref_image_patch_embedder.weight": ("BF16", (hidden, 64)),
            "ref_image_patch_embedder.bias": ("BF16", (hidden,)),
            "time_caption_embed.timestep_embedder.linear_1.weight": ("BF16", (hidden, 256)),
            "time_caption_embed.timestep_embedder.linear_1.bias": ("BF16", (hidden,)),
            "time_caption_embed.timestep_embedder.linear_2.weight": ("BF16", (hidden, hidden)),
            "time_caption_embed.caption_embedder.0.weight": ("BF16", (text,)),
            "time_caption_embed.caption_embedder.1.weight": ("BF16", (hidden, text)),
            "norm_out.linear_1.weight": ("BF16", (hidden, hidden)), "norm_out.linear_2.weight": ("BF16", (64, hidden)),
            "image_index_embedding": ("BF16", (5, hidden))}
    blocks = [f"layers.{i}." for i in range(layers)] + [
        f"{r}.{i}." for r in ("noise_refiner", "ref_image_refiner", "context_refiner") for i in range(refiners)]
    for p in blocks:
        for k in ("to_q", "to_k", "to_v", "to_out.0"):
            spec[f"{p}attn.{k}.weight"] = ("BF16", (hidden, hidden))
        spec[f"{p}feed_forward.linear_1.weight"] = ("BF16", (4 * hidden, hidden))
        spec[f"{p}norm2.weight"] = ("BF16", (hidden,))
    return spec


def test_omnigen2_detected_by_the_key_comfyui_uses(tmp_path):
    import helpers_models as hm
    from vram_budget.nodes.estimator.families import describe

    info = describe(hm.write_safetensors(tmp_path / "some_model.safetensors", _omnigen2_spec()).path)
    assert (info.kind, info.family, info.label) == ("diffusion", "omnigen2", "OmniGen2 (4B)"), info.evidence
    assert "time_caption_embed.timestep_embedder.linear_1.bias" in info.evidence[0]
    # model_detection.py:646-663 fixes the config; the file's block count is read
    assert (info.arch["hidden_size"], info.arch["depth"], info.arch["context_dim"]) == (2520, 3, 2048)
    other = _omnigen2_spec()
    del other["time_caption_embed.timestep_embedder.linear_1.bias"]  # without it ComfyUI does not say OmniGen2
    assert describe(hm.write_safetensors(tmp_path / "other.safetensors", other).path).family != "omnigen2"


def _omnigen2_template(name):
    from workflows import templates

    found = [t for t in templates.load_templates() if t.name == name] if templates.template_dirs() else []
    if not found:
        import pytest

        pytest.skip(f"template {name} not installed (pip install comfyui-workflow-templates-json)")
    return estimate(read_workflow(found[0].workflow), RTX_4090)


def test_omnigen2_templates_priced_with_the_traced_working_memory():
    entry = memory.traced_constants()["omnigen2"]
    coeff = entry["coefficients"]
    work = {}
    for name in ("image_omnigen2_t2i", "image_omnigen2_image_edit"):
        budget = _omnigen2_template(name)
        sample = next(s for s in budget.stages if s.stage.kind == SAMPLE)
        weights = next(i for i in sample.items if i.category == "weights")
        assert weights.model.family == "omnigen2" and "OmniGen2" in weights.model.label
        assert weights.bytes == 7_930_000_000  # the published 7.93 GB (= the traced 3.97B params x 2)
        item = next(i for i in sample.items if i.category == "working")
        assert "traced from ComfyUI 0.18.2" in item.assumption and "first-principles" not in item.assumption
        work[name] = item
        encode = next(s for s in budget.stages if s.stage.kind == "text_encode")
        te = next(i for i in encode.items if i.category == "working")
        assert "traced constants (qwen2.5-3b, ComfyUI 0.18.2)" in te.assumption
    # 1024² (4096 tokens), cond + uncond batched; the edit template's ReferenceLatent adds a 1 MP reference
    # (another 4096 tokens) to each conditioning the sampler batches
    t2i, edit = work["image_omnigen2_t2i"], work["image_omnigen2_image_edit"]
    assert "4096 latent tokens" in t2i.assumption and "reference" not in t2i.assumption
    assert "8192 latent tokens (incl. 4096 of 1 reference latent(s))" in edit.assumption

    # Expected bytes worked out by hand, not by re-running the estimator's formula: the stored formula
    # of data/working_memory.json, batch*(a*tokens + c*text_tokens) + d*tokens + q*tokens**2 + b, with
    # omnigen2's traced coefficients (asserted just below, so a refit says which literals to redo),
    # batch 2 (cond + uncond), 80 text tokens (families/omnigen2.py TEXT_TOKENS), and x 1.6, the
    # allocator calibration of a family without a published run (memory.DEFAULT_CALIBRATION):
    #   4096 tokens: 2*(114476*4096 + 125081*80) + 30.0046*4096 + 107604 = 958,030,854.84
    #                x 1.6 = 1,532,849,367.7
    #   8192 tokens: 2*(114476*8192 + 125081*80) + 30.0046*8192 + 107604 = 1,895,941,145.68
    #                x 1.6 = 3,033,505,833.1
    assert coeff == {"a": 114476.0, "b": 107604, "c": 125081.0, "d": 30.0046, "q": 0.0}
    assert abs(t2i.bytes - 1_532_849_367.7) < 1e-6 * t2i.bytes
    assert abs(edit.bytes - 3_033_505_833.1) < 1e-6 * edit.bytes
    # the traced points themselves: 1024² with one reference is about twice the plain image
    pts = {(p["batch"], p["width"], p.get("refs", 0), p["text_tokens"]): p["working_bytes"] for p in entry["points"]}
    assert 1.95 < pts[(1, 1024, 1, 64)] / pts[(1, 1024, 0, 64)] < 2.05


def test_ltxvideo_low_vram_loaders_load_what_the_core_loaders_load():
    """ComfyUI-LTXVideo's LowVRAMCheckpointLoader / LowVRAMAudioVAELoader (low_vram_loaders.py) are the core loaders
    with a 'dependencies' input that orders them: the same files, parts and estimate (the audio VAE is the
    checkpoint's audio VAE part, not the whole checkpoint read as a VAE)."""
    core = ltx2_prompt()
    low = {k: {**v, "inputs": dict(v["inputs"])} for k, v in core.items()}
    low["1"]["class_type"] = "LowVRAMCheckpointLoader"
    low["5"]["class_type"] = "LowVRAMAudioVAELoader"
    low["5"]["inputs"]["dependencies"] = ["1", 0]
    w_core, w_low = read_workflow(core), read_workflow(low)
    assert not w_low.unknown_nodes
    parts = lambda w: sorted((r.name, r.part) for s in w.stages for r in s.models)  # noqa: E731
    assert parts(w_low) == parts(w_core) and ("ltx-2-19b-dev.safetensors", "audio_vae") in parts(w_low)
    card = Device.from_card(find_card("RTX 4090"))
    assert estimate(w_low, card).peak_bytes == estimate(w_core, card).peak_bytes
