"""LTX-2.5 (ComfyUI 0.33.0; "LTX 2.4" in its code): the LTXAV transformer with LTX-2.3's widths but another
configuration (ff_bias False, the keyframe marker), traced with ComfyUI 0.33.0's own code; its video VAE is
another class (CausalDiffusionVAE, sd.py:616-631), untraced, priced with ComfyUI 0.33's own estimate for it
(sd.py:625-626); its audio VAE is LTX-2.3's class (AudioVAE) with a configuration only the file's metadata gives,
priced with the class's own estimate (sd.py:953), not LTX-2.3's trace. families/ltx.py."""
import json

import pytest

from vram_budget.nodes.estimator.physics import memory, vae_memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.errors import VramBudgetError
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families.ltx import P_LTX25, P_VAE_LTX25
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape


def test_ltx25_lives_in_the_ltx_module_without_borrowing_ltx23s_profile():
    assert registry.module_of("ltx2.5") == "ltx"
    assert FAMILIES["ltx2.5"].kind == DIFFUSION
    assert "ltx2.5" not in registry.WORKING_MEMORY_ALIAS  # another configuration than the traced LTX-2.3
    assert registry.TEXT_TOKENS["ltx2.5"] == 1024  # text_encoders/lt.py:84-90 (Gemma 4 padded to 1024)
    assert "vae-ltx2.5" not in registry.VAE_TRACED_AS


def test_names_pick_the_ltx25_family_and_not_ltx2():
    info, _ = infer_info("ltx-2.5-22b-dev-transformer-bf16.safetensors", "diffusion", "diffusion_models")
    assert info.family == "ltx2.5" and info.params == P_LTX25
    info, _ = infer_info("ltx-2.3-22b-dev.safetensors", "diffusion", "diffusion_models")
    assert info.family == "ltx2.3"
    vae, _ = infer_info("ltx-2.5-video-vae-fp16.safetensors", "vae", "vae")
    assert vae.family == "vae-ltx2.5" and vae.params == P_VAE_LTX25
    conv, _ = infer_info("ltx-2.5-video-vae-conv-bf16.safetensors", "vae", "vae")
    assert conv is None or conv.family != "vae-ltx2.5"  # the conv VAE is another file


def test_the_diffusion_vae_count_reproduces_the_published_size():
    assert round(2 * P_VAE_LTX25 / 1e9, 2) == 1.47  # ltx-2.5-video-vae-bf16: 1.47 GB published
    assert round(1 * P_LTX25 / 1e9, 1) == 21.0  # all linears at 1 byte; the int8-convrot file is 21.50 GB


def test_the_transformer_is_traced_with_comfyuis_0_33_code():
    """LTX-2.5 traced with ComfyUI 0.33.0's LTXAV at its own configuration (bench/trace_working_memory.py
    _arches_033: ff_bias False, the keyframe marker, Gemma 4's 6144-wide dual text): more per token than
    LTX-2.3's 0.18.2 trace (115.7 K against 94.9 K bytes a video token, the fits in data/working_memory.json)."""
    lat = LatentShape(batch=1, channels=128, height=16, width=24, frames=16, pixel_frames=121)
    wm = memory.diffusion_working("ltx2.5", FAMILIES["ltx2.5"].arch, lat, 1)
    assert wm.source == "traced" and "constants traced from ComfyUI 0.33.0 model code" in wm.assumption
    traced23 = memory.diffusion_working("ltx2.3", FAMILIES["ltx2.3"].arch, lat, 1)
    assert traced23.source == "traced" and wm.bytes > traced23.bytes


def test_the_diffusion_vae_has_no_borrowed_working_memory():
    with pytest.raises(VramBudgetError, match="vae-ltx2.5"):
        vae_memory.vae_decode_bytes("vae-ltx2.5", (1, 128, 16, 16, 24))


def test_the_catalogue_gives_the_published_files_their_families():
    """data/catalogue.json: the transformer and the video VAE at the module's computed counts; the audio VAE its own
    family (sd.py:949-967 builds LTX-2.3's class AudioVAE, but from the file's metadata config, which sd.py does not
    show to be LTX-2.3's: not LTX-2.3's traced profile)."""
    dit = catalogue_info("ltx-2.5-22b-distilled-transformer-comfy-int8-convrot.safetensors", "diffusion_models")
    assert (dit.family, dit.params, dit.weights_bytes) == ("ltx2.5", P_LTX25, 21_500_000_000)
    vae = catalogue_info("ltx-2.5-video-vae-bf16.safetensors", "vae")
    assert (vae.family, vae.params, vae.weights_bytes) == ("vae-ltx2.5", P_VAE_LTX25, 1_470_000_000)
    audio = catalogue_info("ltx-2.5-audio-vae-bf16.safetensors", "vae")
    assert (audio.kind, audio.family, audio.weights_bytes) == (VAE, "vae-ltx2.5-audio", 360_000_000)
    assert "vae-ltx2.5-audio" not in registry.MEDIA_VAES and "vae-ltx2.5-audio" in registry.VAE_FORMULAS


def test_the_vaes_are_priced_with_comfyuis_own_estimates():
    video = LatentShape(batch=1, channels=128, height=32, width=48, frames=16, pixel_height=1024, pixel_width=1536,
                        pixel_frames=121, spatial_compression=32, temporal_compression=8)
    got, how, notes = vae_working("vae-ltx2.5", video, decode=True, dtype_bytes=2)
    # sd.py:625: 1700 * shape[2] * shape[3] * shape[4] * (8 * 8 * 8) * dtype_size on [1, 128, 16, 32, 48], bf16
    assert got == 1700 * 16 * 32 * 48 * 512 * 2 == 42_781_900_800 and not notes
    assert "sd.py:625" in how and "not traced" in how
    # VAEDecodeTiled 512 px / 64 frames (nodes.py:357-375): 16 x 16 latent pixels x max(2, 64 // 8) = 8 latent
    # frames; decode_tiled reserves the estimate at that tile (sd.py:1328)
    tiled = {"tile_size": 512, "overlap": 64, "temporal_size": 64, "temporal_overlap": 16}
    assert vae_working("vae-ltx2.5", video, decode=True, tiled=tiled, dtype_bytes=2)[0] == \
        1700 * 8 * 16 * 16 * 512 * 2 == 3_565_158_400
    # sd.py:626: 80 * max(shape[2], 7) * shape[3] * shape[4] * dtype_size on the [1, 3, 121, 1024, 1536] pixels
    assert vae_working("vae-ltx2.5", video, decode=False, dtype_bytes=2)[0] == 80 * 121 * 1024 * 1536 * 2
    image = LatentShape(batch=1, channels=128, height=16, width=24, pixel_height=512, pixel_width=768,
                        spatial_compression=32)
    # one image: [1, 3, 1, 512, 768] -> max(1, 7) = 7
    assert vae_working("vae-ltx2.5", image, decode=False, dtype_bytes=2)[0] == 80 * 7 * 512 * 768 * 2
    audio = LatentShape(batch=1, channels=8, height=127, width=16, spatial_compression=1, media="audio")
    # sd.py:953: shape[2] * shape[3] * 87000 * dtype_size on [1, 8, 127, 16]; fp32 only (sd.py:964)
    got, how, _ = vae_working("vae-ltx2.5-audio", audio, decode=True, dtype_bytes=4)
    assert got == 127 * 16 * 87000 * 4 == 707_136_000 and "sd.py:953" in how


@pytest.mark.parametrize("name", ["video_ltx2_5_t2v", "video_ltx2_5_i2v", "video_ltx2_5_flf2v"])
def test_the_templates_are_complete(name):
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == name]
    if not found:
        pytest.skip(f"no {name} template in this version")
    budget = estimate(read_workflow(found[0].workflow), Device.from_card(find_card("RTX 4090")))
    assert not budget.incomplete, budget.incomplete
    assert budget.to_dict()["complete"] is True
    samples = [s for s in budget.stages if s.stage.kind == "sample"]
    assert samples and all("constants traced from ComfyUI 0.33.0 model code" in it.assumption
                           for s in samples for it in s.items if it.category == "working")
    vaes = [s for s in budget.stages if s.stage.kind in ("vae_decode", "vae_encode")]
    assert vaes and all("not traced" in it.assumption for s in vaes for it in s.items if it.category == "working")
    audio = next(s for s in vaes if "audio VAE" in s.title)
    # fp32 its only working dtype (sd.py:964): the 180M params of the 0.36 GB bf16 file loaded at 4 bytes
    assert sum(it.bytes for it in audio.items if it.category == "weights") == 180_000_000 * 4
    json.dumps(budget.to_dict())
