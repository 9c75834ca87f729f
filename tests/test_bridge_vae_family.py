"""Issue 34: the VAE a running ComfyUI built is named by the families' own LiveVae descriptions (no class map in
the bridge). Stand-ins with ComfyUI's class names here; tests/comfy/test_vae_decode.py builds ComfyUI's real VAEs."""
from __future__ import annotations

import types

import pytest

from vram_budget.nodes.comfy_bridge.models import vae_family_of
from vram_budget.nodes.estimator.families.registry import VAE_FAMILIES

KL = "comfy.ldm.models.autoencoder"
PLAIN = ("comfy.ldm.modules.diffusionmodules.model", "Decoder")


def built(module, name, channels, spatial, temporal, dim=2, decoder=PLAIN, bn=None):
    dec = type(decoder[1], (), {"__module__": decoder[0]})
    fsm = type(name, (), {"__module__": module})()
    fsm.decoder, fsm.bn = dec(), bn
    return types.SimpleNamespace(first_stage_model=fsm, latent_channels=channels, latent_dim=dim,
                                 spacial_compression_decode=lambda: spatial,
                                 temporal_compression_decode=lambda: temporal)


@pytest.mark.parametrize("vae, family", [
    (built("comfy.ldm.wan.vae", "WanVAE", 16, 8, 4, 3), "vae-wan2.1"),
    (built("comfy.ldm.wan.vae2_2", "WanVAE", 48, 16, 4, 3), "vae-wan2.2"),
    (built("comfy.ldm.lightricks.vae.causal_video_autoencoder", "VideoVAE", 128, 32, 8, 3), "vae-ltxv"),
    (built(KL, "AutoencoderKL", 4, 8, None), "vae-kl4"),
    (built(KL, "AutoencodingEngine", 16, 8, None), "vae-kl16"),
    (built(KL, "AutoencoderKL", 16, 8, 4, 3), "vae-hunyuan"),
    (built(KL, "AutoencoderKL", 32, 16, None, bn=object()), None),  # Flux.2's batch-norm latent
    (built(KL, "AutoencoderKL", 4, 8, None, decoder=("comfy.ldm.other", "Decoder")), None),  # not the plain decoder
    (built("comfy.ldm.wan.vae", "WanVAE", 48, 16, 4, 3), None),  # Wan 2.1's class with 2.2's geometry
    (built("somepack.vae", "MyVAE", 4, 8, None), None),
])
def test_a_built_vae_is_named_by_its_familys_live_description(vae, family):
    assert vae_family_of(vae) == family


def test_the_live_descriptions_live_in_the_family_modules():
    live = {k for k, v in VAE_FAMILIES.items() if v.live is not None}
    assert live == {"vae-wan2.1", "vae-wan2.2", "vae-ltxv", "vae-kl4", "vae-kl16", "vae-hunyuan"}
    import inspect

    from vram_budget.nodes.comfy_bridge import models
    assert "vae-" not in inspect.getsource(models.vae_family_of)  # no family id typed in the bridge
