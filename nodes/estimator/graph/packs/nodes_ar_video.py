"""ComfyUI 0.33's autoregressive video nodes (comfy_extras/nodes_ar_video.py: Causal Forcing / Self-Forcing on a
Wan 2.1 backbone). Line references are ComfyUI 0.33.0."""
from __future__ import annotations

from ...workload import VAE_ENCODE
from ..base import _replace
from . import Pack


def _ar_i2v_encode(a, node):
    """ARVideoI2V.execute (nodes_ar_video.py:106-110): the start image's first frame, resized to width x height,
    VAE-encoded alone (one latent frame), not the video its LATENT output holds."""
    stage = a.encode_stage(node)
    if stage is None or stage.latent is None:
        return stage
    one = _replace(stage.latent, frames=1, pixel_frames=1)
    return _replace(stage, latent=one)


# Latents: zeros([batch_size, 16, ((length - 1) // 4) + 1, height // 8, width // 8]) from the width / height /
# length / batch_size widgets: EmptyARVideoLatent.execute (nodes_ar_video.py:35-42), ARVideoI2V.execute (:117-121).
PACK = Pack(
    name="nodes_ar_video",
    latent_creators={"EmptyARVideoLatent": (16, 8, 4, None), "ARVideoI2V": (16, 8, 4, None)},
    internal_encoders={"ARVideoI2V": ("start_image",)},
    stage_kinds={"ARVideoI2V": VAE_ENCODE},
    stages={"ARVideoI2V": _ar_i2v_encode},
    # SamplerARVideo (:44-73): a SAMPLER ("ar_video" with num_frame_per_block); the block size is read from the
    # checkpoint's family (framewise / chunkwise), which it must match
    handled={"SamplerARVideo"},
)
