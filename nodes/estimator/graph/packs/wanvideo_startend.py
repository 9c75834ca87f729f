"""raindrop313/ComfyUI-WanVideoStartEndFrames (nodes.py at 340b4f0): Wan 2.1 image-to-video from a start and an end
frame, a fork of ComfyUI-WanVideoWrapper's spring-2025 nodes under new names. Each node reads as the wrapper's own
(graph/packs/wanvideowrapper.py), with the fork's one change: WanVideoSEImageClipEncode VAE-encodes the start image,
num_frames - 1 zero frames and the end image, and its sampler makes (num_frames - 1) // 4 + 2 latent frames
(wanvideowrapper.image_clip_shape)."""
from __future__ import annotations

from ...workload import SAMPLE, VAE_DECODE, VAE_ENCODE
from . import Pack
from . import wanvideowrapper as wrapper

LOADER, VAE_LOADER = "WanVideoSEModelLoader", "WanVideoSEVAELoader"
ENCODE, SAMPLER, DECODE = "WanVideoSEImageClipEncode", "WanVideoSESampler", "WanVideoSEDecode"

PACK = Pack(
    name="ComfyUI-WanVideoStartEndFrames",
    samplers={SAMPLER},
    vae_decoders={DECODE},
    stage_kinds={ENCODE: VAE_ENCODE, SAMPLER: SAMPLE, DECODE: VAE_DECODE},
    handled={ENCODE},
    simple_loaders={VAE_LOADER: ("model_name", "vae", "vae", "WANVAE")},
    refs={LOADER: wrapper._model_loader},
    latents={SAMPLER: wrapper._sampler_latent},
    # the stages stay the wrapper's (manager "WanVideoWrapper"): its block swap and offloading run unchanged
    stages={ENCODE: wrapper.image_clip_encode, SAMPLER: wrapper._sample, DECODE: wrapper._decode},
    widgets={LOADER: wrapper.WIDGETS["WanVideoModelLoader"], VAE_LOADER: ["model_name", "precision"],
             ENCODE: wrapper.WIDGETS["WanVideoImageClipEncode"] + ["start_frame_weight", "end_frame_weight"],
             SAMPLER: wrapper.WIDGETS["WanVideoSampler"][:8], DECODE: wrapper.WIDGETS["WanVideoDecode"]},
    input_types={LOADER: {"compile_args": "WANCOMPILEARGS", "block_swap_args": "BLOCKSWAPARGS", "lora": "WANVIDLORA",
                          "vram_management_args": "VRAM_MANAGEMENTARGS"},
                 ENCODE: {"clip_vision": "CLIP_VISION", "start": "IMAGE", "end": "IMAGE", "vae": "WANVAE"},
                 SAMPLER: {"model": "WANVIDEOMODEL", "text_embeds": "WANVIDEOTEXTEMBEDS",
                           "image_embeds": "WANVIDIMAGE_EMBEDS", "samples": "LATENT", "feta_args": "FETAARGS",
                           "context_options": "WANVIDCONTEXT", "teacache_args": "TEACACHEARGS",
                           "flowedit_args": "FLOWEDITARGS", "slg_args": "SLGARGS"},
                 DECODE: {"vae": "WANVAE", "samples": "LATENT"}},
    output_types={LOADER: ["WANVIDEOMODEL"], VAE_LOADER: ["WANVAE"], ENCODE: ["WANVIDIMAGE_EMBEDS"],
                  SAMPLER: ["LATENT"], DECODE: ["IMAGE"]},
    relevant_types={"WANVIDEOMODEL", "WANVAE", "WANVIDIMAGE_EMBEDS"},
)
