"""Stable Audio Open 1.0 and Stable Audio 3 (ComfyUI 0.33.0, families/stable_audio.py; EmptyLatentAudio read by
graph/packs/nodes_audio.py). Open 1.0's DiT is ComfyUI's AudioDiffusionTransformer at its defaults, priced by the
first-principles formula; Stable Audio 3's widths come from its file only, so they stay unknown. Neither audio VAE
is traced (Open's is not borrowed from ACE-Step 1.5's Oobleck VAE, another configuration): Open's is priced with
ComfyUI 0.33's own estimate for its branch (sd.py:712-713), Stable Audio 3's stays unknown."""
import json

import pytest

from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families.stable_audio import P_SA1_DIT, P_SA1_VAE
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import CHECKPOINT, DIFFUSION
from vram_budget.nodes.estimator.models.name_infer import family_of
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape


def _prompt(seconds=47.6, batch=1, ckpt="stable-audio-open-1.0.safetensors"):
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": ckpt}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5-base.safetensors", "type": "stable_audio",
                                                     "device": "default"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "rain on a tin roof"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": ""}},
        "5": {"class_type": "EmptyLatentAudio", "inputs": {"seconds": seconds, "batch_size": batch}},
        "6": {"class_type": "KSampler", "inputs": {
            "model": ["1", 0], "positive": ["3", 0], "negative": ["4", 0], "latent_image": ["5", 0], "seed": 1,
            "steps": 50, "cfg": 4.98, "sampler_name": "dpmpp_3m_sde_gpu", "scheduler": "exponential",
            "denoise": 1.0}},
        "7": {"class_type": "VAEDecodeAudio", "inputs": {"samples": ["6", 0], "vae": ["1", 2]}},
        "8": {"class_type": "SaveAudio", "inputs": {"audio": ["7", 0], "filename_prefix": "a"}},
    }


def _budget(prompt):
    return estimate(read_workflow(prompt), Device.from_card(find_card("RTX 4090")))


def test_the_families_live_in_one_module():
    assert registry.module_of("stable-audio-1.0") == registry.module_of("stable-audio-3") == "stable_audio"
    assert registry.MEMORY_USAGE_FACTOR["stable-audio-3"] == 7
    assert "hidden_size" not in FAMILIES["stable-audio-3"].arch  # no width in ComfyUI's code: none made up


def test_the_open_checkpoint_is_its_fp32_dit_and_vae():
    info = catalogue_info("stable-audio-open-1.0.safetensors", "checkpoints")
    assert (info.kind, info.family) == (CHECKPOINT, "stable-audio-1.0")
    # the published bytes: both parts at 4 bytes a parameter, the number embedders and the header on top
    assert 0 < info.weights_bytes - 4 * (P_SA1_DIT + P_SA1_VAE) < 2_000_000


def test_empty_latent_audio_has_a_length_and_the_dit_is_priced_by_the_formula():
    budget = _budget(_prompt(seconds=47.6, batch=2))
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    latent = sample.stage.latent
    assert (latent.media, latent.channels, latent.width, latent.batch) == ("audio", 64, 1024, 2)  # round(512.49) * 2
    assert sample.title.startswith("Sample: Stable Audio Open 1.0 DiT")
    work = [it for it in sample.items if it.category == "working"]
    assert work and "uncalibrated for stable-audio-1.0" in work[0].assumption and "1024 latent tokens" in work[0].assumption
    assert sum(it.bytes for it in sample.items if it.category == "weights") == 2 * P_SA1_DIT  # cast to 16 bit
    longer = next(s for s in _budget(_prompt(seconds=95.2, batch=2)).stages if s.stage.kind == "sample")
    assert [it for it in longer.items if it.category == "working"][0].bytes > work[0].bytes
    # the audio VAE is not traced (ACE-Step's traced Oobleck is another configuration): ComfyUI 0.33's own estimate,
    # sd.py:713 per batch item, x 2 items
    assert not budget.incomplete, budget.incomplete
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    assert next(it.bytes for it in decode.items if it.category == "working") == 2 * 1000 * 1024 * 2048 * 2


def test_the_oobleck_vae_is_priced_with_comfyuis_own_estimate():
    latent = LatentShape(batch=1, channels=64, height=1, width=1024, spatial_compression=1, media="audio")
    got, how, notes = vae_working("vae-stable-audio", latent, decode=True, dtype_bytes=2)
    # sd.py:713: memory_used_decode = 1000 * shape[2] * 2048 * dtype_size on [1, 64, 1024], fp16 / bf16
    assert got == 1000 * 1024 * 2048 * 2 == 4_194_304_000 and not notes
    assert "sd.py:713" in how and "not traced" in how
    # VAEDecodeAudioTiled 512: decode_tiled bounds the length by the tile (sd.py:1322-1323, 1328)
    tiled = {"tile_size": 512, "overlap": 64}
    assert vae_working("vae-stable-audio", latent, decode=True, tiled=tiled, dtype_bytes=2)[0] == 1000 * 512 * 2048 * 2
    # sd.py:712: memory_used_encode = 1000 * shape[2] * dtype_size on the [1, 2, 1024 x 2048] waveform
    assert vae_working("vae-stable-audio", latent, decode=False, dtype_bytes=2)[0] == 1000 * 1024 * 2048 * 2
    # Stable Audio 3's VAE (two configurations with different estimates, sd.py:972-979): not priced
    assert "vae-stable-audio-3" not in registry.VAE_FORMULAS


def test_stable_audio_3_is_named_but_not_priced_without_its_widths():
    # a Stable Audio 3 file other than Medium (whose published configuration tests/test_family_stable_audio3.py
    # covers): named, its widths unknown, so no figure
    assert family_of("stable_audio_3_small.safetensors", DIFFUSION) == ("stable-audio-3", "Stable Audio 3")
    budget = _budget(_prompt(ckpt="stable_audio_3_small.safetensors"))
    assert any("no diffusion model identified" in gap for gap in budget.incomplete)


def test_the_templates():
    templates = pytest.importorskip("workflows.templates")
    found = {t.name: t for t in templates.load_templates()}
    if "audio_stable_audio_example" not in found:
        pytest.skip("no Stable Audio template in this version")
    budget = estimate(read_workflow(found["audio_stable_audio_example"].workflow), Device.from_card(find_card("RTX 4090")))
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert any(it.category == "working" and it.bytes > 0 for it in sample.items)
    assert not budget.incomplete, budget.incomplete
    assert budget.to_dict()["complete"] is True
    json.dumps(budget.to_dict())
