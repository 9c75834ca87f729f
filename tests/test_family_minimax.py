"""MiniMax H3 (ComfyUI 0.33.0), added as one family module (nodes/estimator/families/minimax.py) and one node pack
(graph/packs/nodes_minimax_h3.py): its DiT and VAE headers are recognised, its published files are priced, its
nodes make the audio-video latent the sampler and both decoders see, and its official templates get complete
estimates. The VAEs are priced with ComfyUI 0.33's own estimates for their classes (sd.py), checked here against
the formulas written out by hand."""
import json
import math

import pytest

from helpers_models import spec_params, write_safetensors
from workflows.templates import template_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.minimax import (P_FASTH3_OMNIREF, P_MINIMAX_H3_VIDEO_VAE,
                                                          video_latent_frames, video_pixel_frames)
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape

TEMPLATES = ("video_minimax_h3_t2v", "video_minimax_h3_i2v", "video_minimax_h3_i2v_continuation",
             "video_minimax_h3_r2v", "video_minimax_h3_multiframe_reference", "video_fastvideo_fasth3_t2v",
             "video_fastvideo_fasth3_i2v", "video_fasth3_ominiref_r2v", "image_minimax_h3_t2i")


def h3_spec(hidden=256, heads=2, head_dim=128, ffn=512, layers=3, dtype="BF16"):
    """The key layout of comfy/ldm/minimax/model.py (0.33.0) at a small width."""
    spec = {"video_patch_proj.weight": ("F32", (hidden, 24 * 4)), "video_patch_proj.bias": ("F32", (hidden,)),
            "audio_patch_proj.weight": ("F32", (hidden, 32)), "audio_patch_proj.bias": ("F32", (hidden,)),
            "condition_proj.weight": (dtype, (hidden, 5120)), "condition_proj.bias": (dtype, (hidden,)),
            "final_layer.video_out.weight": ("F32", (24 * 4, hidden)),
            "final_layer.audio_out.weight": ("F32", (32, hidden))}
    for i in range(layers):
        p = f"blocks.{i}."
        spec[p + "attn.qkv_proj.weight"] = (dtype, (3 * heads * head_dim, hidden))
        spec[p + "attn.q_norm.weight"] = (dtype, (head_dim,))
        spec[p + "attn.k_norm.weight"] = (dtype, (head_dim,))
        spec[p + "attn.out_proj.weight"] = (dtype, (hidden, heads * head_dim))
        spec[p + "mlp.fc1.weight"] = (dtype, (2 * ffn, hidden))
        spec[p + "mlp.fc2.weight"] = (dtype, (hidden, ffn))
    return spec


def test_the_family_lives_in_one_module():
    assert registry.module_of("minimax-h3") == "minimax"
    assert FAMILIES["minimax-h3"].kind == DIFFUSION and FAMILIES["minimax-h3"].arch["hidden_size"] == 5376
    assert registry.MEMORY_USAGE_FACTOR["minimax-h3"] == 0.114
    assert {"vae-minimax-h3", "vae-minimax-h3-audio"} <= set(registry.VAE_FORMULAS)


def test_a_header_is_recognised_by_the_modules_own_detector(tmp_path):
    spec = h3_spec()
    info = describe(write_safetensors(tmp_path / "some_finetune.safetensors", spec).path)
    assert (info.kind, info.family) == (DIFFUSION, "minimax-h3")
    arch = info.arch
    assert (arch["hidden_size"], arch["heads"], arch["head_dim"], arch["ffn_dim"], arch["depth"]) == \
        (256, 2, 128, 512, 3)
    assert arch["latent_channels"] == 24 and arch["context_dim"] == 5120
    assert info.params == spec_params(spec)


def test_a_header_without_the_audio_stream_is_not_taken_for_it(tmp_path):
    spec = {k: v for k, v in h3_spec().items() if not k.startswith("audio_patch_proj")}
    assert describe(write_safetensors(tmp_path / "other.safetensors", spec).path).family != "minimax-h3"


def test_the_vae_headers_are_recognised(tmp_path):
    video = {"decoder.transformer_blocks.0.scale1": ("F16", (64,)),
             "encoder.down.5.block.0.conv1.weight": ("F16", (8, 8, 3, 3, 3)),
             "decoder.x_embedder.weight": ("F16", (64, 24))}
    audio = {"pre_block.attn.zero_k_bias": ("F32", (64,)), "decoder.conv_pre.weight": ("F32", (32, 64, 7))}
    assert describe(write_safetensors(tmp_path / "a.safetensors", video).path).family == "vae-minimax-h3"
    info = describe(write_safetensors(tmp_path / "b.safetensors", audio).path)
    assert (info.kind, info.family) == (VAE, "vae-minimax-h3-audio")


def test_the_published_files_are_priced():
    # in data/template_models.json: the published bytes, the family from the name
    info = catalogue_info("minimax_h3_fl2va_pruned_int8_convrot.safetensors", "diffusion_models")
    assert (info.family, info.weights_bytes) == ("minimax-h3", 20_970_177_823)
    assert catalogue_info("minimax_h3_audio_vae_fp32.safetensors", "vae").family == "vae-minimax-h3-audio"
    assert catalogue_info("minimax_h3_video_vae_int8_convrot.safetensors", "vae").family == "vae-minimax-h3"
    # not in it: the notes' sizes through the name rules (22.2 GB int8, 5.21 GB fp16)
    info, _ = infer_info("fasth3_omniref_8step_pruned_int8_convrot.safetensors", None, "diffusion_models")
    assert (info.family, info.weights_bytes) == ("minimax-h3", P_FASTH3_OMNIREF) == ("minimax-h3", 22_200_000_000)
    info, _ = infer_info("minimax_h3_video_vae_fp16.safetensors", None, "vae")
    assert (info.family, info.weights_bytes) == ("vae-minimax-h3", 2 * P_MINIMAX_H3_VIDEO_VAE)
    assert info.weights_bytes == 5_210_000_000


def test_frame_grids_are_comfyuis():
    # nodes_minimax_h3.py video_latent_t / sd.py upscale_ratio: 17k+5 pixel frames <-> 5k+2 latent frames
    assert [video_latent_frames(f) for f in (5, 22, 124, 362)] == [2, 7, 37, 107]
    assert [video_pixel_frames(t) for t in (1, 2, 7, 37, 107)] == [1, 5, 22, 124, 362]


def test_the_vaes_are_priced_with_comfyuis_own_estimates():
    av = LatentShape(batch=1, channels=24, height=48, width=84, frames=37, pixel_height=768, pixel_width=1344,
                     pixel_frames=124, spatial_compression=16)
    got, how, notes = vae_working("vae-minimax-h3", av, decode=True, dtype_bytes=2)
    # sd.py:1023-1026: frames 124 > 22: fixed 270 MB; min(124, 28 + 2) frames resident; fp16; x 1.03
    assert got == math.ceil((9.5 * 30 * 768 * 1344 + 270_000_000) * 2 * 1.03) and not notes and "sd.py" in how
    image = LatentShape(batch=1, channels=24, height=48, width=84, frames=1, pixel_height=768, pixel_width=1344,
                        pixel_frames=1, spatial_compression=16)
    # sd.py:1016-1021: one image: 7 elements a pixel + 110 MB
    assert vae_working("vae-minimax-h3", image, decode=False, dtype_bytes=2)[0] == math.ceil(
        (7 * 768 * 1344 + 110_000_000) * 2 * 1.03)
    audio = LatentShape(batch=1, channels=32, height=2, width=207, spatial_compression=1, media="audio")
    # sd.py:1046-1047: max(42 MB, 220 x samples + 20 MB), samples = 207 x 800, fp32 only
    assert vae_working("vae-minimax-h3-audio", audio, decode=True)[0] == math.ceil(
        (220 * 207 * 800 + 20_000_000) * 4 * 1.03)


def _template(name):
    return template_workflow(name)


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_official_templates_are_complete(name):
    budget = estimate(read_workflow(_template(name)), Device.from_card(find_card("RTX 4090")))
    assert not budget.incomplete, budget.incomplete
    json.dumps(budget.to_dict())


def test_the_text_to_video_template_decodes_both_streams_of_one_latent():
    budget = estimate(read_workflow(_template("video_minimax_h3_t2v")), Device.from_card(find_card("RTX 4090")))
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.title.startswith("Sample: MiniMax H3")
    work = [it for it in sample.items if it.category == "working"]
    # 124 frames at 1344x768: 37 latent frames x 24 x 42 patches
    assert work and "37296 latent tokens" in work[0].assumption and "constants traced from ComfyUI 0.33.0 model code" in work[0].assumption
    decodes = {s.title: s for s in budget.stages if s.stage.kind == "vae_decode"}
    audio = decodes["VAE decode: MiniMax H3 audio VAE"]
    assert audio.stage.latent.media == "audio" and audio.stage.latent.width == round(124 / 24 * 40)  # 207
    assert sum(it.bytes for it in audio.items if it.category == "weights") == 605_238_067 // 4 * 4  # fp32 kept
    video = decodes["VAE decode: MiniMax H3 video VAE"]
    assert sum(it.bytes for it in video.items if it.category == "weights") == 2_813_203_579  # int8 kept quantized


def test_keyframes_and_references_join_the_sampled_tokens():
    device = Device.from_card(find_card("RTX 4090"))
    i2v = estimate(read_workflow(_template("video_minimax_h3_i2v")), device)
    sample = next(s for s in i2v.stages if s.stage.kind == "sample")
    assert sample.stage.reference_latents == ((48, 84),)  # the first frame at the target's size, one latent frame
    encodes = [s for s in i2v.stages if s.stage.kind == "vae_encode"]
    assert encodes and all(s.title.startswith("VAE encode: MiniMax H3 video VAE") for s in encodes)
    guides = estimate(read_workflow(_template("video_minimax_h3_multiframe_reference")), device)
    sample = next(s for s in guides.stages if s.stage.kind == "sample")
    assert len(sample.stage.reference_latents) == 4  # one reference image + three one-frame guides


# --- MiniMax Music 3 (families/minimax_music.py, graph/packs/nodes_minimax_music.py) ---------------------------
def test_music3_counts_match_the_published_files():
    from vram_budget.nodes.estimator.families.minimax_music import P_MINIMAX_MUSIC3, P_MINIMAX_MUSIC3_DAV

    # computed from dit.py / dav.py; the published fp16 / fp32 files are these plus their headers (under 0.1 %)
    assert 0 < 4_917_737_554 - 2 * P_MINIMAX_MUSIC3 < 0.001 * 4_917_737_554
    assert 0 < 216_740_659 - 4 * P_MINIMAX_MUSIC3_DAV < 0.001 * 216_740_659
    info = catalogue_info("minimax_music3_dit_fp16.safetensors", "diffusion_models")
    assert (info.family, info.params, info.weights_bytes) == ("minimax-music3", P_MINIMAX_MUSIC3, 4_917_737_554)
    assert catalogue_info("minimax_music3_dav.safetensors", "vae").family == "vae-minimax-music3-dav"
    assert catalogue_info("minimax_music3_dit_int8_convrot.safetensors", "diffusion_models").family == "minimax-music3"


def test_music3_headers_are_recognised(tmp_path):
    dit = {"cond_layer_logits": ("F16", (8,)), "latent_conditioners.0.weight": ("F16", (64, 128, 3)),
           "diffusion_transformer.transformer.layers.0.self_attn.to_qkv.weight": ("F16", (192, 64))}
    dav = {"dec_in_proj.weight": ("F32", (64, 64, 1)), "decoder.model.0.weight_g": ("F32", (96, 1, 1)),
           "decoder.model.0.weight_v": ("F32", (96, 64, 7))}
    assert describe(write_safetensors(tmp_path / "x.safetensors", dit).path).family == "minimax-music3"
    info = describe(write_safetensors(tmp_path / "y.safetensors", dav).path)
    assert (info.kind, info.family) == (VAE, "vae-minimax-music3-dav")


def test_music3_template_is_complete_with_windows_and_tiles():
    budget = estimate(read_workflow(_template("audio_minimax_music_3")), Device.from_card(find_card("RTX 4090")))
    assert not budget.incomplete, budget.incomplete
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    # max_duration 60 s: 1500 acoustic frames -> latent_length 5167 frames, run in windows of 689 (dit.py:198-213)
    assert sample.stage.latent.width == 5167
    work = next(it for it in sample.items if it.category == "working")
    assert "689 latent tokens + 1500 text tokens (the conditioning's acoustic frames" in work.assumption
    decodes = {s.stage.node_type: s for s in budget.stages if s.stage.kind == "vae_decode"}
    full = next(it.bytes for it in decodes["VAEDecodeAudio"].items if it.category == "working")
    tiled = next(it.bytes for it in decodes["VAEDecodeAudioTiled"].items if it.category == "working")
    # sd.py:533 at fp32: (frames x 512 x 1400 + 800 MB) x 4; the tiled node's 1536-frame tiles (sd.py:1328)
    assert (full, tiled) == ((5167 * 512 * 1400 + 800_000_000) * 4, (1536 * 512 * 1400 + 800_000_000) * 4)


def test_music3_decode_that_does_not_fit_says_cant_tell_instead_of_crashing():
    """On a 12 GB card the DAV's one-pass decode does not fit; ComfyUI then retries tiled, whose memory the
    pack has no figure for this media VAE: the answer is "can't tell" with that reason (it used to stop with
    "unknown VAE family 'vae-minimax-music3-dav'" from the image VAEs' tiled table)."""
    budget = estimate(read_workflow(_template("audio_minimax_music_3")), Device.from_card(find_card("RTX 3060")))
    decode = next(i for i, sb in enumerate(budget.stages) if sb.stage.kind == "vae_decode" and not sb.stage.tiled)
    run = budget.runs[decode]
    assert run.outcome == "unknown" and "retries tiled" in run.explanation[0]
    assert "vae-minimax-music3-dav" in run.explanation[0]
    assert budget.verdict == "unknown"


def test_music3_dit_uses_its_0_33_trace_at_the_conditionings_length():
    """The DiT's working memory is ComfyUI 0.33.0's trace (data/working_memory.json "minimax-music3"): one window's
    689 latent frames + the conditioning's acoustic frames N, which the template's latent fixes: 60 s -> 1500
    frames -> latent_length 5167; the bytes are the fit's, by hand."""
    from vram_budget.nodes.estimator.physics import memory
    from vram_budget.nodes.estimator.families.minimax_music import conditioning_frames, latent_length
    lat = LatentShape(batch=1, channels=128, height=1, width=latent_length(1500), media="audio")
    assert lat.width == 5167 and conditioning_frames(lat)[0] == 1500
    for n in (1, 199, 200, 750, 3000, 9000):
        assert conditioning_frames(LatentShape(1, 128, 1, latent_length(n), media="audio"))[0] == n
    entry = memory.traced_constants()["minimax-music3"]
    co = entry["coefficients"]
    wm = memory.diffusion_working("minimax-music3", FAMILIES["minimax-music3"].arch, lat, 2)
    by_hand = 2 * (co["a"] * 689 + co["c"] * 1500) + co["b"]
    assert wm.source == "traced" and wm.traced_bytes == pytest.approx(by_hand, rel=1e-6)
    assert "1500 text tokens (the conditioning's acoustic frames" in wm.assumption
    budget = estimate(read_workflow(_template("audio_minimax_music_3")), Device.from_card(find_card("RTX 4090")))
    sample = next(sb for sb in budget.stages if sb.stage.kind == "sample")
    work = [it for it in sample.items if it.category == "working"]
    assert work and "constants traced from ComfyUI 0.33.0" in work[0].assumption
