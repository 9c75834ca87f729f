"""Stable Audio 3 Medium (families/stable_audio.py; ComfyUI 0.33.0 supported_models.py:615-633 StableAudio3).
The DiT's configuration is Stability AI's published sa3-m one (Stability-AI/stable-audio-3
optimized/mlx/models/defs/dit_mlx_medium.py, branch_map_medium_lora.json), counted with ComfyUI 0.33's own
AudioDiffusionTransformer; its VAE is SA3AudioVAE's SAME-L configuration (sd.py:968-973), which the published
checkpoint size pins down (fp32 DiT + SAME-L = the file). Sampling working memory: the first-principles formula,
uncalibrated; VAE decode: ComfyUI 0.33's own memory_used_decode for that branch (sd.py:973)."""
import json

import pytest

from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families.stable_audio import P_SA3_SAME_L, P_SA3M_DIT
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import CHECKPOINT, DIFFUSION
from vram_budget.nodes.estimator.models.name_infer import family_of
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape

PUBLISHED_BYTES = 9_223_442_268  # data/template_models.json, both checkpoints
TEMPLATES = ("audio_stable_audio_3_medium", "audio_stable_audio_3_medium_base")


def _prompt(seconds=150, batch=1, cfg=1.0, ckpt="stable_audio_3_medium.safetensors"):
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": ckpt}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5gemma_b_b_ul2.safetensors", "type": "stable_audio",
                                                     "device": "default"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "lo-fi piano"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": ""}},
        "5": {"class_type": "EmptyLatentAudio", "inputs": {"seconds": seconds, "batch_size": batch}},
        "6": {"class_type": "KSampler", "inputs": {
            "model": ["1", 0], "positive": ["3", 0], "negative": ["4", 0], "latent_image": ["5", 0], "seed": 1,
            "steps": 8, "cfg": cfg, "sampler_name": "lcm", "scheduler": "simple", "denoise": 1.0}},
        "7": {"class_type": "VAEDecodeAudio", "inputs": {"samples": ["6", 0], "vae": ["1", 2]}},
        "8": {"class_type": "SaveAudio", "inputs": {"audio": ["7", 0], "filename_prefix": "a"}},
    }


def _budget(prompt):
    return estimate(read_workflow(prompt), Device.from_card(find_card("RTX 4090")))


def test_the_medium_family_and_its_published_configuration():
    assert registry.module_of("stable-audio-3-medium") == "stable_audio"
    arch = FAMILIES["stable-audio-3-medium"].arch
    assert (arch["hidden_size"], arch["depth"], arch["heads"], arch["head_dim"], arch["ffn_dim"]) == (1536, 24, 24, 64, 6144)
    assert (arch["latent_channels"], arch["temporal_compression"]) == (256, 4096)  # latent_formats.StableAudio3
    assert registry.MEMORY_USAGE_FACTOR["stable-audio-3-medium"] == 7  # supported_models.py:628
    assert registry.TEXT_TOKENS["stable-audio-3-medium"] == 257  # model_base.py:893-899: 256 padded + seconds_total
    for name in ("stable_audio_3_medium.safetensors", "stable_audio_3_medium_base.safetensors"):
        assert family_of(name, DIFFUSION)[0] == "stable-audio-3-medium"
    # the generic rule still names other Stable Audio 3 files without widths
    assert family_of("stable_audio_3_small.safetensors", DIFFUSION)[0] == "stable-audio-3"
    assert "hidden_size" not in FAMILIES["stable-audio-3"].arch


@pytest.mark.parametrize("name", ["stable_audio_3_medium.safetensors", "stable_audio_3_medium_base.safetensors"])
def test_the_checkpoint_is_priced_at_its_published_size_as_fp32_dit_and_same_l(name):
    info = catalogue_info(name, "checkpoints")
    assert (info.kind, info.family) == (CHECKPOINT, "stable-audio-3-medium")
    assert info.weights_bytes == PUBLISHED_BYTES
    # both parts at 4 bytes a parameter; the seconds_total embedder, padding embedding and header on top (2.25 MB).
    # SAME-S (108,244,529 params, sd.py:974-979) would leave ~3 GB unexplained: the file holds SAME-L.
    assert 0 < PUBLISHED_BYTES - 4 * (P_SA3M_DIT + P_SA3_SAME_L) < 3_000_000


def test_empty_latent_audio_is_reshaped_to_the_model_format_and_the_dit_is_uncalibrated():
    budget = _budget(_prompt(seconds=150, batch=1, cfg=4.0))
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.title.startswith("Sample: Stable Audio 3 Medium DiT")
    # EmptyLatentAudio: round(150 * 44100 / 2048 / 2) * 2 = 3230 columns at 2048; sample.py:51-52, 61-65:
    # 256 channels, round(3230 * 2048 / 4096) = 1615 at 4096
    work = [it for it in sample.items if it.category == "working"]
    assert work and "uncalibrated for stable-audio-3-medium" in work[0].assumption
    assert "1615 latent tokens" in work[0].assumption and "257 text tokens" in work[0].assumption
    assert sum(it.bytes for it in sample.items if it.category == "weights") == 2 * P_SA3M_DIT  # cast to 16 bit
    assert not budget.incomplete, budget.incomplete
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    assert "SAME-L" in decode.title
    assert sum(it.bytes for it in decode.items if it.category == "weights") == 2 * P_SA3_SAME_L
    # sd.py:973: 1500 x L x 4096 x 2 bytes (bf16) on [1, 256, 1615]
    assert next(it.bytes for it in decode.items if it.category == "working") == 1500 * 1615 * 4096 * 2


def test_the_same_l_vae_is_priced_with_comfyuis_own_estimate():
    latent = LatentShape(batch=2, channels=256, height=1, width=100, spatial_compression=1, media="audio",
                         temporal_compression=4096)
    got, how, notes = vae_working("vae-stable-audio-3-l", latent, decode=True, dtype_bytes=2)
    assert got == 2 * 1500 * 100 * 4096 * 2 and not notes and "sd.py:973" in how and "not traced" in how
    # VAEDecodeAudioTiled: decode_tiled reserves the estimate of one tile (sd.py:1326-1328, 1322-1323)
    got, how, _ = vae_working("vae-stable-audio-3-l", latent, decode=True, tiled={"tile_size": 64, "overlap": 8},
                              dtype_bytes=2)
    assert got == 2 * 1500 * 64 * 4096 * 2 and "one tile" in how
    got, how, _ = vae_working("vae-stable-audio-3-l", latent, decode=False, dtype_bytes=2)
    assert got == 2 * 1500 * 100 * 4096 * 2 and "sd.py:972" in how
    assert "vae-stable-audio-3" not in registry.VAE_FORMULAS  # the configuration-agnostic id stays unpriced


def test_stable_audio_open_keeps_its_latent():
    # the reshape is the model's format: Stable Audio Open's is EmptyLatentAudio's own (64 at 2048)
    prompt = _prompt(seconds=47.6, ckpt="stable-audio-open-1.0.safetensors")
    prompt["2"]["inputs"]["clip_name"] = "t5-base.safetensors"
    sample = next(s for s in _budget(prompt).stages if s.stage.kind == "sample")
    assert "1024 latent tokens" in [it for it in sample.items if it.category == "working"][0].assumption


@pytest.mark.parametrize("key", TEMPLATES)
def test_the_templates_are_complete(key):
    templates = pytest.importorskip("workflows.templates")
    found = {t.name: t for t in templates.load_templates()}
    if key not in found:
        pytest.skip(f"no {key} template in this version")
    budget = estimate(read_workflow(found[key].workflow), Device.from_card(find_card("RTX 4090")))
    record = budget.to_dict()
    assert not budget.incomplete, budget.incomplete
    assert record["complete"] is True
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    work = [it for it in sample.items if it.category == "working"]
    assert work and "uncalibrated for stable-audio-3-medium" in work[0].assumption
    json.dumps(record)
