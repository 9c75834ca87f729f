"""Lightricks/ComfyUI-LTXVideo's low-VRAM loaders (low_vram_loaders.py at the table's commit): ComfyUI's own
loaders with an extra ``dependencies`` input (any type) that only orders their execution, so they load what the core
node loads. LowVRAMCheckpointLoader subclasses CheckpointLoaderSimple (load_checkpoint(ckpt_name)),
LowVRAMAudioVAELoader reads the audio VAE of an LTX-2 checkpoint as core's LTXVAudioVAELoader does, and
LowVRAMLatentUpscaleModelLoader calls LatentUpscaleModelLoader.execute(model_name). Without this module the audio VAE
loader would read, by its sockets, as a loader of a whole checkpoint file priced as a VAE.
"""
from __future__ import annotations

from . import Pack
from .core import SIMPLE_LOADERS, _ltxv_audio_vae

PACK = Pack(
    name="ComfyUI-LTXVideo",
    checkpoint_loaders={"LowVRAMCheckpointLoader": {0: "model", 1: "clip", 2: "vae"}},
    simple_loaders={"LowVRAMLatentUpscaleModelLoader": SIMPLE_LOADERS["LatentUpscaleModelLoader"]},
    output_types={"LowVRAMCheckpointLoader": ["MODEL", "CLIP", "VAE"], "LowVRAMAudioVAELoader": ["VAE"],
                  "LowVRAMLatentUpscaleModelLoader": ["LATENT_UPSCALE_MODEL"]},
    widgets={"LowVRAMCheckpointLoader": ["ckpt_name"], "LowVRAMAudioVAELoader": ["ckpt_name"],
             "LowVRAMLatentUpscaleModelLoader": ["model_name"]},
    refs={"LowVRAMAudioVAELoader": _ltxv_audio_vae},
)
