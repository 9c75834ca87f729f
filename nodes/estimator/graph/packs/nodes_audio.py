"""ComfyUI's audio latent node (comfy_extras/nodes_audio.py, 0.33.0) for the Stable Audio models."""
from __future__ import annotations

from ...workload import LatentShape
from . import Pack


def _empty_latent_audio(a, node, slot, depth):
    """EmptyLatentAudio (nodes_audio.py:31-34): zeros([batch, 64, round((seconds * 44100 / 2048) / 2) * 2]), tagged
    downscale_ratio_temporal 2048 (Stable Audio Open's latent). A model with another latent format re-shapes the
    empty latent at sampling (sample.py:45-70 fix_empty_latent_channels: Stable Audio 3's 256 channels at 4096
    samples a latent hold half as many columns)."""
    seconds = a.number(node, "seconds", 47.6, integer=False)
    batch = a.number(node, "batch_size", 1) or 1
    if seconds is None:
        return None
    length = round((seconds * 44100 / 2048) / 2) * 2
    return LatentShape(batch=batch, channels=64, height=1, width=length, spatial_compression=1, media="audio",
                       temporal_compression=2048, source_node=node.id, source_type=node.type)


PACK = Pack(name="nodes_audio", latents={"EmptyLatentAudio": _empty_latent_audio})
