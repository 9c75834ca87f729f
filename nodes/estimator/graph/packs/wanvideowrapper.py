"""kijai/ComfyUI-WanVideoWrapper: Wan 2.1 / 2.2 (and relatives) with the wrapper's own loaders,
sampler, block swap and VAE.

Socket types (the wrapper's nodes.py / nodes_model_loading.py / nodes_sampler.py): WANVIDEOMODEL
(the DiT, from WanVideoModelLoader), WANTEXTENCODER (umT5, LoadWanVideoT5TextEncoder), WANVAE
(WanVideoVAELoader), WANVIDLORA (WanVideoLoraSelect chains), WANVIDIMAGE_EMBEDS (the sampler's
size: WanVideoEmptyEmbeds / WanVideoImageToVideoEncode / WanVideoVACEEncode ... width, height,
num_frames), BLOCKSWAPARGS (WanVideoBlockSwap: blocks_to_swap), WANVIDCONTEXT (context windows).

What differs from ComfyUI's own Wan nodes, for memory: the wrapper places the weights itself (the
whole DiT on the main device except `blocks_to_swap` blocks kept in RAM and brought in one at a
time; no partial load), runs cond and uncond one after another unless `batched_cfg`, and its VAE
decode does not fall back to tiles on OOM. The stages carry `manager="WanVideoWrapper"` so the
runtime simulator applies those rules instead of ComfyUI's.
"""
from __future__ import annotations

import math

from ...workload import AUDIO_ENCODE, CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE, LatentShape, ModelRef, Stage
from ...machine.resolve import PACK_FP32
from ..base import MAX_CHAIN, _Link, _replace
from . import Pack, loader, upstream_chain

MANAGER = "WanVideoWrapper"
FP8 = ("fp8_e4m3fn", "fp8_e4m3fn_fast", "fp8_e5m2", "fp8_e4m3fn_scaled", "fp8_e4m3fn_scaled_fast", "fp8_e5m2_scaled")
# Wan latent geometry: (channels, spatial /, temporal /). Wan 2.1 VAE 16 ch /8; Wan 2.2 VAE (TI2V 5B) 48 ch /16.
WAN21 = (16, 8, 4)
WAN22_5B = (48, 16, 4)
EMBED_CREATORS = {"WanVideoEmptyEmbeds", "WanVideoImageToVideoEncode", "WanVideoVACEEncode", "WanVideoAnimateEmbeds",
                  "WanVideoImageToVideoMultiTalk", "WanVideoFunCameraEmbeds", "WanVideoPhantomEmbeds",
                  "WanVideoImageClipEncode", "WanVideoControlEmbeds", "HuMoEmbeds"}
SAMPLERS = {"WanVideoSampler", "WanVideoSamplerFromSettings", "WanVideoDiffusionForcingSampler",
            "WanVideoSamplerExtraArgs"}
# Option / settings nodes that hold no model and no latent (their outputs only tune the sampler).
SETTINGS = {"WanVideoTorchCompileSettings", "WanVideoBlockSwap", "WanVideoTeaCache", "WanVideoMagCache",
            "WanVideoEasyCache", "WanVideoSLG", "WanVideoExperimentalArgs", "WanVideoEnhanceAVideo",
            "WanVideoVRAMManagement", "WanVideoContextOptions", "WanVideoScheduler", "WanVideoLoopArgs",
            "WanVideoFlowEdit", "WanVideoFreeInitArgs", "WanVideoSamplerSettings", "WanVideoVACEStartToEndFrame",
            "WanVideoReCamMasterGenerateOrbitCamera", "WanVideoReCamMasterDefaultCamera", "WanVideoSetRadialAttention",
            "WanVideoTextEmbedBridge", "WanVideoPassImagesFromSamples", "WanVideoApplyNAG", "WanVideoSigmaToStep",
            "WanVideoSetAttentionModeOverride", "WanVideoLoraBlockEdit", "WanVideoTinyVAELoader", "WanVideoUni3C_embeds"}

# Socket types of the wrapper's nodes as its example workflows save them (UI format carries
# them; API prompts do not, so the analyzer looks them up here). Generated from tests/workflows/community.
INPUT_TYPES = {
    "WanVideoAddControlEmbeds": {"embeds": "WANVIDIMAGE_EMBEDS", "latents": "LATENT", "fun_ref_image": "LATENT"},
    "WanVideoAddFantasyPortrait": {"embeds": "WANVIDIMAGE_EMBEDS", "portrait_embeds": "PORTRAIT_EMBEDS"},
    "WanVideoAddStandInLatent": {"embeds": "WANVIDIMAGE_EMBEDS", "ip_image_latent": "LATENT"},
    "WanVideoAddSteadyDancerEmbeds": {"embeds": "WANVIDIMAGE_EMBEDS", "pose_latents_positive": "LATENT", "pose_latents_negative": "LATENT", "clip_vision_embeds": "WANVIDIMAGE_CLIPEMBEDS"},
    "WanVideoAddTTMLatents": {"embeds": "WANVIDIMAGE_EMBEDS", "reference_latents": "LATENT", "mask": "MASK"},
    "WanVideoAnimateEmbeds": {"vae": "WANVAE", "clip_embeds": "WANVIDIMAGE_CLIPEMBEDS", "ref_images": "IMAGE", "pose_images": "IMAGE", "face_images": "IMAGE", "bg_images": "IMAGE", "mask": "MASK"},
    "WanVideoClipVisionEncode": {"clip_vision": "CLIP_VISION", "image_1": "IMAGE", "image_2": "IMAGE", "negative_image": "IMAGE"},
    "WanVideoContextOptions": {"reference_latent": "LATENT"},
    "WanVideoControlEmbeds": {"latents": "LATENT"},
    "WanVideoControlnet": {"model": "WANVIDEOMODEL", "controlnet": "WANVIDEOCONTROLNET", "control_images": "IMAGE"},
    "WanVideoDecode": {"vae": "WANVAE", "samples": "LATENT"},
    "WanVideoDiffusionForcingSampler": {"model": "WANVIDEOMODEL", "text_embeds": "WANVIDEOTEXTEMBEDS", "image_embeds": "WANVIDIMAGE_EMBEDS", "samples": "LATENT", "prefix_samples": "LATENT", "cache_args": "CACHEARGS", "slg_args": "SLGARGS", "experimental_args": "EXPERIMENTALARGS", "unianimate_poses": "UNIANIMATE_POSE"},
    "WanVideoEmptyEmbeds": {"control_embeds": "WANVIDIMAGE_EMBEDS", "extra_latents": "LATENT"},
    "WanVideoEncode": {"vae": "WANVAE", "image": "IMAGE", "mask": "MASK"},
    "WanVideoFunCameraEmbeds": {"poses": "CAMERACTRL_POSES"},
    "WanVideoImageToVideoEncode": {"vae": "WANVAE", "clip_embeds": "WANVIDIMAGE_CLIPEMBEDS", "start_image": "IMAGE", "end_image": "IMAGE", "control_embeds": "WANVIDIMAGE_EMBEDS", "temporal_mask": "MASK", "extra_latents": "LATENT", "add_cond_latents": "ADD_COND_LATENTS"},
    "WanVideoImageToVideoMultiTalk": {"vae": "WANVAE", "start_image": "IMAGE", "clip_embeds": "WANVIDIMAGE_CLIPEMBEDS"},
    "WanVideoImageClipEncode": {"clip_vision": "CLIP_VISION", "image": "IMAGE", "vae": "WANVAE"},
    "HuMoEmbeds": {"whisper_model": "WHISPERMODEL", "vae": "WANVAE", "reference_images": "IMAGE", "audio": "AUDIO"},
    "MultiTalkWav2VecEmbeds": {"wav2vec_model": "WAV2VECMODEL", "audio": "AUDIO", "audio_1": "AUDIO", "audio_2": "AUDIO",
                               "audio_3": "AUDIO", "audio_4": "AUDIO", "ref_target_masks": "MASK"},
    "FantasyTalkingWav2VecEmbeds": {"wav2vec_model": "WAV2VECMODEL", "fantasytalking_model": "FANTASYTALKINGMODEL",
                                    "audio": "AUDIO"},
    "WanVideoLoraSelect": {"prev_lora": "WANVIDLORA", "blocks": "SELECTEDBLOCKS"},
    "WanVideoLoraSelectMulti": {"prev_lora": "WANVIDLORA", "blocks": "SELECTEDBLOCKS"},
    "WanVideoModelLoader": {"compile_args": "WANCOMPILEARGS", "block_swap_args": "BLOCKSWAPARGS", "lora": "WANVIDLORA", "vram_management_args": "VRAM_MANAGEMENTARGS", "vace_model": "VACEPATH", "fantasytalking_model": "FANTASYTALKINGMODEL", "extra_model": "VACEPATH", "multitalk_model": "MULTITALKMODEL", "fantasyportrait_model": "FANTASYPORTRAITMODEL"},
    "WanVideoPassImagesFromSamples": {"samples": "LATENT"},
    "WanVideoPhantomEmbeds": {"phantom_latent_1": "LATENT", "phantom_latent_2": "LATENT", "phantom_latent_3": "LATENT", "phantom_latent_4": "LATENT", "vace_embeds": "WANVIDIMAGE_EMBEDS"},
    "WanVideoReCamMasterCameraEmbed": {"camera_poses": "CAMERAPOSES", "latents": "LATENT"},
    "WanVideoReCamMasterDefaultCamera": {"latents": "LATENT"},
    "WanVideoSampler": {"model": "WANVIDEOMODEL", "text_embeds": "WANVIDEOTEXTEMBEDS", "image_embeds": "WANVIDIMAGE_EMBEDS", "samples": "LATENT", "feta_args": "FETAARGS", "context_options": "WANVIDCONTEXT", "cache_args": "CACHEARGS", "flowedit_args": "FLOWEDITARGS", "slg_args": "SLGARGS", "loop_args": "LOOPARGS", "experimental_args": "EXPERIMENTALARGS", "sigmas": "SIGMAS", "unianimate_poses": "UNIANIMATE_POSE", "fantasytalking_embeds": "FANTASYTALKING_EMBEDS", "uni3c_embeds": "UNI3C_EMBEDS", "multitalk_embeds": "MULTITALK_EMBEDS", "freeinit_args": "FREEINITARGS"},
    "WanVideoSamplerFromSettings": {"sampler_inputs": "SAMPLER_ARGS"},
    "WanVideoSamplerSettings": {"model": "WANVIDEOMODEL", "image_embeds": "WANVIDIMAGE_EMBEDS", "text_embeds": "WANVIDEOTEXTEMBEDS", "samples": "LATENT", "feta_args": "FETAARGS", "context_options": "WANVIDCONTEXT", "cache_args": "CACHEARGS", "flowedit_args": "FLOWEDITARGS", "slg_args": "SLGARGS", "loop_args": "LOOPARGS", "experimental_args": "EXPERIMENTALARGS", "sigmas": "SIGMAS", "unianimate_poses": "UNIANIMATE_POSE", "fantasytalking_embeds": "FANTASYTALKING_EMBEDS", "uni3c_embeds": "UNI3C_EMBEDS", "multitalk_embeds": "MULTITALK_EMBEDS", "freeinit_args": "FREEINITARGS"},
    "WanVideoScheduler": {"sigmas": "SIGMAS"},
    "WanVideoSetBlockSwap": {"model": "WANVIDEOMODEL", "block_swap_args": "BLOCKSWAPARGS"},
    "WanVideoSetLoRAs": {"model": "WANVIDEOMODEL", "lora": "WANVIDLORA"},
    "WanVideoTextEmbedBridge": {"positive": "CONDITIONING", "negative": "CONDITIONING"},
    "WanVideoTextEncode": {"t5": "WANTEXTENCODER", "model_to_offload": "WANVIDEOMODEL"},
    "WanVideoTextEncodeCached": {"extender_args": "WANVIDEOPROMPTEXTENDER_ARGS"},
    "WanVideoVACEEncode": {"vae": "WANVAE", "input_frames": "IMAGE", "ref_images": "IMAGE", "input_masks": "MASK", "prev_vace_embeds": "WANVIDIMAGE_EMBEDS"},
    "WanVideoVACEStartToEndFrame": {"start_image": "IMAGE", "end_image": "IMAGE", "control_images": "IMAGE", "inpaint_mask": "MASK"},
    "WanVideoVAELoader": {"compile_args": "WANCOMPILEARGS"},
}
OUTPUT_TYPES = {
    "LoadWanVideoClipTextEncoder": ["CLIP_VISION"],
    "LoadWanVideoT5TextEncoder": ["WANTEXTENCODER"],
    "WanVideoAddControlEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoAddFantasyPortrait": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoAddStandInLatent": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoAddSteadyDancerEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoAddTTMLatents": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoAnimateEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoBlockSwap": ["BLOCKSWAPARGS"],
    "WanVideoClipVisionEncode": ["WANVIDIMAGE_CLIPEMBEDS"],
    "WanVideoContextOptions": ["WANVIDCONTEXT"],
    "WanVideoControlEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoControlnet": ["WANVIDEOMODEL"],
    "WanVideoControlnetLoader": ["WANVIDEOCONTROLNET"],
    "WanVideoDecode": ["IMAGE"],
    "WanVideoDiffusionForcingSampler": ["LATENT"],
    "WanVideoEasyCache": ["CACHEARGS"],
    "WanVideoEmptyEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoEncode": ["LATENT"],
    "WanVideoEnhanceAVideo": ["FETAARGS"],
    "WanVideoExperimentalArgs": ["EXPERIMENTALARGS"],
    "WanVideoFunCameraEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoImageToVideoEncode": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoImageToVideoMultiTalk": ["WANVIDIMAGE_EMBEDS", "STRING"],
    "WanVideoImageClipEncode": ["WANVIDIMAGE_EMBEDS"],
    "WhisperModelLoader": ["WHISPERMODEL"],
    "MultiTalkModelLoader": ["MULTITALKMODEL"],
    "FantasyTalkingModelLoader": ["FANTASYTALKINGMODEL"],
    "DownloadAndLoadWav2VecModel": ["WAV2VECMODEL"],
    "Wav2VecModelLoader": ["WAV2VECMODEL"],
    "MultiTalkWav2VecEmbeds": ["MULTITALK_EMBEDS", "AUDIO", "INT"],
    "FantasyTalkingWav2VecEmbeds": ["FANTASYTALKING_EMBEDS"],
    "HuMoEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoLoraSelect": ["WANVIDLORA"],
    "WanVideoLoraSelectMulti": ["WANVIDLORA"],
    "WanVideoModelLoader": ["WANVIDEOMODEL"],
    "WanVideoPassImagesFromSamples": ["IMAGE"],
    "WanVideoPhantomEmbeds": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoReCamMasterCameraEmbed": ["WANVIDIMAGE_EMBEDS", "CAMERAPOSES"],
    "WanVideoReCamMasterDefaultCamera": ["CAMERAPOSES"],
    "WanVideoReCamMasterGenerateOrbitCamera": ["CAMERAPOSES"],
    "WanVideoSLG": ["SLGARGS"],
    "WanVideoSampler": ["LATENT"],
    "WanVideoSamplerFromSettings": ["LATENT", "LATENT"],
    "WanVideoSamplerSettings": ["SAMPLER_ARGS"],
    "WanVideoScheduler": ["SIGMAS", "INT", "FLOAT", "COMBO", "INT", "INT"],
    "WanVideoSetBlockSwap": ["WANVIDEOMODEL"],
    "WanVideoSetLoRAs": ["WANVIDEOMODEL"],
    "WanVideoTeaCache": ["CACHEARGS"],
    "WanVideoTextEmbedBridge": ["WANVIDEOTEXTEMBEDS"],
    "WanVideoTextEncode": ["WANVIDEOTEXTEMBEDS"],
    "WanVideoTextEncodeCached": ["WANVIDEOTEXTEMBEDS", "WANVIDEOTEXTEMBEDS", "STRING"],
    "WanVideoTorchCompileSettings": ["WANCOMPILEARGS"],
    "WanVideoVACEEncode": ["WANVIDIMAGE_EMBEDS"],
    "WanVideoVACEModelSelect": ["VACEPATH"],
    "WanVideoVACEStartToEndFrame": ["IMAGE", "MASK"],
    "WanVideoVAELoader": ["WANVAE"],
    "WanVideoVRAMManagement": ["VRAM_MANAGEMENTARGS"],
}

# Leading widgets of each node, in order (INPUT_TYPES of the wrapper's nodes_model_loading.py,
# nodes.py and nodes_sampler.py; newer versions append widgets, so a prefix reads old and new
# workflows alike).
_SAMPLER_WIDGETS = ["steps", "cfg", "shift", "seed", "force_offload", "scheduler", "riflex_freq_index",
                    "denoise_strength", "batched_cfg", "rope_function", "start_step", "end_step"]
WIDGETS = {
    "WanVideoModelLoader": ["model", "base_precision", "quantization", "load_device", "attention_mode"],
    "LoadWanVideoT5TextEncoder": ["model_name", "precision", "load_device", "quantization"],
    "WanVideoVAELoader": ["model_name", "precision"],
    "WhisperModelLoader": ["model", "base_precision", "load_device"],
    "DownloadAndLoadWav2VecModel": ["model", "base_precision", "load_device"],
    "MultiTalkModelLoader": ["model"],
    "FantasyTalkingModelLoader": ["model", "base_precision"],
    "Wav2VecModelLoader": ["model", "base_precision", "load_device"],
    "MultiTalkWav2VecEmbeds": ["normalize_loudness", "num_frames", "fps", "audio_scale", "audio_cfg_scale"],
    "FantasyTalkingWav2VecEmbeds": ["num_frames", "fps", "audio_scale", "audio_cfg_scale"],
    "LoadWanVideoClipTextEncoder": ["model_name", "precision", "load_device"],
    "WanVideoBlockSwap": ["blocks_to_swap", "offload_img_emb", "offload_txt_emb"],
    "WanVideoSampler": _SAMPLER_WIDGETS,
    "WanVideoSamplerSettings": _SAMPLER_WIDGETS,
    "WanVideoEmptyEmbeds": ["width", "height", "num_frames"],
    "WanVideoImageToVideoEncode": ["width", "height", "num_frames"],
    "WanVideoVACEEncode": ["width", "height", "num_frames"],
    "WanVideoAnimateEmbeds": ["width", "height", "num_frames", "force_offload", "frame_window_size"],
    # multitalk/nodes.py WanVideoImageToVideoMultiTalk: the window, not the video's length (MultiTalkWav2VecEmbeds')
    "WanVideoImageToVideoMultiTalk": ["width", "height", "frame_window_size", "motion_frame", "force_offload",
                                      "colormatch"],
    "WanVideoPhantomEmbeds": ["num_frames", "phantom_cfg_scale", "phantom_start_percent", "phantom_end_percent"],
    "HuMoEmbeds": ["num_frames", "width", "height", "audio_scale", "audio_cfg_scale", "audio_start_percent",
                   "audio_end_percent", "tiled_vae"],
    "WanVideoTextEncode": ["positive_prompt", "negative_prompt", "force_offload"],
    "WanVideoTextEncodeCached": ["model_name", "precision", "positive_prompt", "negative_prompt", "quantization"],
    "WanVideoDecode": ["enable_vae_tiling", "tile_x", "tile_y", "tile_stride_x", "tile_stride_y"],
    "WanVideoEncode": ["enable_vae_tiling", "tile_x", "tile_y", "tile_stride_x", "tile_stride_y"],
    "WanVideoContextOptions": ["context_schedule", "context_frames", "context_stride", "context_overlap"],
    "WanVideoLoraSelect": ["lora", "strength"],
    "WanVideoLoraSelectMulti": [n for i in range(5) for n in (f"lora_{i}", f"strength_{i}")],
    "WanVideoVACEModelSelect": ["vace_model"],
    "WanVideoImageClipEncode": ["generation_width", "generation_height", "num_frames", "force_offload",
                                "noise_aug_strength", "latent_strength", "clip_embed_strength", "adjust_resolution"],
}


def _str(value) -> str | None:
    return value if isinstance(value, str) and value else None


# -------------------------------------------------------------------------------------- refs
@loader
def _model_loader(a, node, slot, type_, visiting):
    if type_ != "WANVIDEOMODEL":
        return []
    quant = _str(a.value(node, "quantization"))
    device = _str(a.value(node, "load_device"))
    name = str(a.value(node, "model") or "")
    dtype = quant if quant in FP8 else None
    if dtype is None and a.value(node, "base_precision") == "fp32" and "fp8" not in name.lower() \
            and not name.endswith(".gguf"):
        # quantization "disabled" keeps an fp8 file fp8 (it detects the dtype) and casts any other to base_precision
        # (nodes_model_loading.py: dtype = base_dtype, set_module_tensor_to_device(..., dtype=dtype_to_use))
        dtype = PACK_FP32
    ref = a.loader_ref(node, "model", role="diffusion", folder="diffusion_models",
                       weight_dtype=dtype, gguf=name.endswith(".gguf"), device=device)
    out = [ref] if ref else []
    out += a.refs(a.link(node, "lora"), "WANVIDLORA", visiting)
    out += a.refs(a.link(node, "vace_model"), "VACEPATH", visiting)
    # the talking-video add-ons: their state dicts join the DiT's before it is cast (nodes_model_loading.py: the
    # MultiTalk / FantasyTalking layers are added to the transformer), so the loader's fp8 quantization reaches them
    for link_name, talk_type in (("multitalk_model", "MULTITALKMODEL"), ("fantasytalking_model", "FANTASYTALKINGMODEL")):
        out += [_replace(r, weight_dtype=dtype) if dtype in FP8 and not r.gguf else r
                for r in a.refs(a.link(node, link_name), talk_type, visiting)]
    return out


@loader
def _talk_loader(a, node, slot, type_, visiting):
    """MultiTalkModelLoader / FantasyTalkingModelLoader: the add-on's file (families/wan_talking.py), from
    models/diffusion_models (MultiTalk: or unet_gguf); its layers live inside the DiT once loaded."""
    if type_ not in ("MULTITALKMODEL", "FANTASYTALKINGMODEL"):
        return []
    name = str(a.value(node, "model") or "")
    ref = a.loader_ref(node, "model", role="controlnet", folder="diffusion_models", gguf=name.endswith(".gguf"))
    return [ref] if ref else []


@loader
def _clip_loader(a, node, slot, type_, visiting):
    """LoadWanVideoClipTextEncoder: Wan's open-clip ViT-H from models/clip_vision, built in its ``precision``
    (nodes.py: CLIPModel(dtype=dtype, ...)); fp32 keeps 4 bytes a weight."""
    if type_ != "CLIP_VISION":
        return []
    fp32 = a.value(node, "precision") == "fp32"
    ref = a.loader_ref(node, "model_name", role="clip_vision", folder="clip_vision",
                       weight_dtype=PACK_FP32 if fp32 else None)
    return [ref] if ref else []


@loader
def _t5_loader(a, node, slot, type_, visiting):
    if type_ != "WANTEXTENCODER":
        return []
    quant = _str(a.value(node, "quantization"))
    ref = a.loader_ref(node, "model_name", role="text_encoder", folder="text_encoders", clip_type="wan",
                        weight_dtype=quant if quant in FP8 else None)
    return [ref] if ref else []


def _lora_select(a, node, slot, type_, visiting):
    if type_ != "WANVIDLORA":
        return []
    out = a.refs(a.link(node, "prev_lora"), "WANVIDLORA", visiting)
    names = ["lora"] + [f"lora_{i}" for i in range(5)]
    for name in names:
        value = a.value(node, name)
        if not isinstance(value, str) or value in ("", "none"):
            continue
        strength_name = "strength" if name == "lora" else f"strength_{name.split('_')[1]}"
        strength = a.number(node, strength_name, 1.0, integer=False)
        if strength == 0:
            a.note(f"{a.label(node)}: {value} has strength 0, not applied")
            continue
        out.append(ModelRef(name=value, role="lora", folder="loras", loader_node=node.id, loader_type=node.type,
                            strength=strength))
    return out


@loader
def _vace_select(a, node, slot, type_, visiting):
    if type_ != "VACEPATH":
        return []
    ref = a.loader_ref(node, "vace_model", role="controlnet", folder="diffusion_models")
    return [ref] if ref else []


def _set_loras(a, node, slot, type_, visiting):
    if type_ != "WANVIDEOMODEL":
        return []
    return a.refs(a.link(node, "model"), type_, visiting) + a.refs(a.link(node, "lora"), "WANVIDLORA", visiting)


# ----------------------------------------------------------------------------------- latents
# ReCamMaster (WanVideoReCamMasterCameraEmbed, recammaster nodes.py): the embeds' target_shape is the source video's
# latents, and the sampler runs the model on the noise with those latents alongside: seq_len *= 2
# (nodes_sampler.py, "recammaster" branch), so the model attends over twice the frames the output has
RECAMMASTER = "WanVideoReCamMasterCameraEmbed"


def _embeds_node(a, link, type_: str):
    """The node of ``type_`` on a WANVIDIMAGE_EMBEDS chain, or None."""
    for _ in range(MAX_CHAIN):
        node = a.nodes.get(link.node) if link else None
        if node is None or node.type == type_:
            return node
        ins = a.linked_inputs_of_type(node, "WANVIDIMAGE_EMBEDS")
        link = ins[0][1] if ins else None
    return None


def embeds_shape(a, link, depth: int = 0) -> LatentShape | None:
    """The latent a WANVIDIMAGE_EMBEDS describes: the node with width / height / num_frames."""
    for _ in range(MAX_CHAIN):
        node = a.nodes.get(link.node) if link else None
        if node is None:
            return None
        if all(k in node.inputs for k in ("width", "height", "num_frames")) or node.type in (
                "WanVideoPhantomEmbeds", MULTITALK):
            return _embeds_creator(a, node)
        if node.type in IMAGE_CLIP_ENCODERS:
            return image_clip_shape(a, node)
        if node.type in ("WanVideoControlEmbeds", RECAMMASTER):  # target_shape: the given latents' shape
            return a.latent(a.link(node, "latents"), depth + 1)
        ins = a.linked_inputs_of_type(node, "WANVIDIMAGE_EMBEDS")
        if not ins:
            return None
        link = ins[0][1]
    return None


def _phantom_embeds(a, node) -> LatentShape | None:
    """WanVideoPhantomEmbeds (nodes.py:1536-1590): the video's size from the phantom latents (H, W), its
    frames from num_frames; the sampler appends the phantom latents' frames to the latent while the
    phantom window is on (nodes_sampler.py:1314-1317), so the model sees them too."""
    latents = [a.latent(a.link(node, f"phantom_latent_{i}")) for i in range(1, 5)
               if a.link(node, f"phantom_latent_{i}") is not None]
    frames = a.number(node, "num_frames")
    if not latents or latents[0] is None or frames is None:
        return None
    first = latents[0]
    unknown = sum(1 for lat in latents if lat is None or not lat.frames)
    if unknown:
        a.note(f"{a.label(node)}: frames of {unknown} phantom latent(s) unknown; one each assumed "
               "(a single reference image encodes to one latent frame)")
    extra = sum((lat.frames if lat is not None and lat.frames else 1) for lat in latents)
    spatial = first.spatial_compression or 8
    return LatentShape(batch=1, channels=first.channels or 16, height=first.height, width=first.width,
                       frames=(frames - 1) // 4 + 1 + extra, pixel_height=first.height * spatial,
                       pixel_width=first.width * spatial, pixel_frames=frames, spatial_compression=spatial,
                       temporal_compression=4, source_node=node.id, source_type=node.type)


def _embeds_creator(a, node) -> LatentShape | None:
    if node.type == "WanVideoPhantomEmbeds":
        return _phantom_embeds(a, node)
    geometry = WAN21
    if a.link(node, "vae") is not None:
        found, vae_name = a.vae_geometry(a.link(node, "vae"), "WANVAE")
        if found is not None:
            geometry = found
    for name in ("width", "height"):
        a.check_widget_range(node, name)
    width, height, frames = a.number(node, "width"), a.number(node, "height"), a.number(node, "num_frames")
    if node.type == MULTITALK:  # the model and the VAE see one window: ((frame_window_size - 1) // 4) * 4 + 1 frames
        window = a.number(node, "frame_window_size", 81) or 81
        frames = ((max(window, 1) - 1) // 4) * 4 + 1
    if None in (width, height, frames):
        return None
    channels, spatial, temporal = geometry
    a.check_size(node, width, height, frames, 1)
    latent_frames = (frames - 1) // temporal + 1
    if node.type == "WanVideoVACEEncode" and a.link(node, "ref_images") is not None:
        latent_frames += 1  # the reference image is one more latent frame
    if node.type == "HuMoEmbeds":
        # HuMo/nodes.py:119-230: frames rounded to 4k+1; each reference image is one more latent frame
        frames = 4 * ((frames - 1) // 4) + 1
        latent_frames = (frames - 1) // temporal + 1 + _reference_count(a, node)
    return LatentShape(batch=1, channels=channels, height=height // spatial, width=width // spatial,
                       frames=latent_frames, pixel_height=height, pixel_width=width, pixel_frames=frames,
                       spatial_compression=spatial, temporal_compression=temporal,
                       source_node=node.id, source_type=node.type)


# The wrapper's first image-to-video node (nodes.py WanVideoImageClipEncode, to spring 2025) and its start-and-end
# fork (raindrop313/ComfyUI-WanVideoStartEndFrames nodes.py WanVideoSEImageClipEncode): the image the first, the
# start and end images the second. The fork samples one more latent frame: (num_frames - 1) // 4 + 2.
IMAGE_CLIP_ENCODERS = {"WanVideoImageClipEncode": ("image", "image", 1),
                       "WanVideoSEImageClipEncode": ("start", "end", 2)}


def image_clip_shape(a, node) -> LatentShape | None:
    """The latent of a WanVideo(SE)ImageClipEncode. With adjust_resolution (the default) the video keeps the image's
    aspect at generation_width x generation_height's area: lat_h = sqrt(area * H / W) // 8 // 2 * 2, lat_w likewise
    (H from the first image, W from the second: the fork reads ``start.shape[1], end.shape[2]``). An image whose size
    the graph does not fix is priced at generation_width x generation_height, whose area bounds every aspect's.
    Without adjust_resolution, the widgets' size. It VAE-encodes num_frames + 1 frames (the image(s), zeros between)."""
    first, second, extra = IMAGE_CLIP_ENCODERS[node.type]
    width, height = a.number(node, "generation_width"), a.number(node, "generation_height")
    frames = a.number(node, "num_frames")
    if None in (width, height, frames):
        return None
    a.check_size(node, width, height, frames, 1)
    lat_h, lat_w = height // 8, width // 8
    if a.value(node, "adjust_resolution") is not False:
        first_size, second_size = a.image_size(a.link(node, first)), a.image_size(a.link(node, second))
        if first_size is not None and second_size is not None and first_size.exact and second_size.exact \
                and first_size.height and second_size.width:
            ratio, area = first_size.height / second_size.width, width * height
            lat_h = int(math.sqrt(area * ratio) // 8 // 2 * 2)
            lat_w = int(math.sqrt(area / ratio) // 8 // 2 * 2)
        else:
            a.note(f"{a.label(node)}: the video takes the image's aspect at {width}x{height}'s area; the image's size "
                   f"is not fixed by the graph, so priced at {width}x{height} (no aspect gives a larger area)")
    if lat_h <= 0 or lat_w <= 0:
        return None
    return LatentShape(batch=1, channels=16, height=lat_h, width=lat_w, frames=(frames - 1) // 4 + extra,
                       pixel_height=lat_h * 8, pixel_width=lat_w * 8, pixel_frames=frames + 1,
                       spatial_compression=8, temporal_compression=4, source_node=node.id, source_type=node.type)


def image_clip_encode(a, node):
    """WanVideo(SE)ImageClipEncode's own work, one after the other: the CLIP vision model on the image, then the
    VAE on num_frames + 1 frames (nodes.py: clip_vision.model.to(device) ... vae.encode)."""
    first, second, _ = IMAGE_CLIP_ENCODERS[node.type]
    clip = _replace(a.clip_vision_stage(node), manager=MANAGER)
    encode = a.encode_stage(node, vae_type="WANVAE", pixels=first)
    if encode is None:
        return [clip]
    return [clip, _replace(encode, latent=image_clip_shape(a, node), manager=MANAGER)]


def _reference_count(a, node) -> int:
    """HuMoEmbeds: how many reference images it encodes (the IMAGE batch when the graph fixes it)."""
    link = a.link(node, "reference_images")
    if link is None:
        return 0
    size = a.image_size(link)
    if size is not None and size.batch:
        return int(size.batch)
    a.note(f"{a.label(node)}: number of reference images unknown; one assumed (each adds a latent frame)")
    return 1


def _sampler_source(a, node):
    """WanVideoSamplerFromSettings reads everything from its WanVideoSamplerSettings node."""
    if node.type == "WanVideoSamplerFromSettings":
        settings = a.nodes.get(getattr(a.link(node, "sampler_inputs"), "node", None))
        return settings or node
    return node


def _sampler_latent_shape(a, node, depth=0):
    src = _sampler_source(a, node)
    shape = embeds_shape(a, a.link(src, "image_embeds"), depth)
    if shape is None:
        shape = a.latent(a.link(src, "samples"), depth + 1)
    return shape


def _sampler_latent(a, node, slot, depth):
    return _sampler_latent_shape(a, node, depth)


def _encode_latent(a, node, slot, depth):
    return a.encoded_shape(node, "image", "vae", "WANVAE")


# ------------------------------------------------------------------------------------ stages
def _chain_nodes(a, link, type_="WANVIDEOMODEL"):
    """The nodes a WANVIDEOMODEL passes through, sampler side first, loader last."""
    def upstream(node):
        ins = a.linked_inputs_of_type(node, type_)
        return ins[0][1] if ins else None

    return upstream_chain(a, link, upstream)


def _blocks_to_swap(a, model_link) -> int | None:
    for node in _chain_nodes(a, model_link):
        args = a.nodes.get(getattr(a.link(node, "block_swap_args"), "node", None))
        if args is not None:
            return a.number(args, "blocks_to_swap", 0)
    return None


def _context_frames(a, src) -> int | None:
    ctx = a.nodes.get(getattr(a.link(src, "context_options"), "node", None))
    if ctx is None:
        return None
    frames = a.number(ctx, "context_frames")
    if frames:
        a.stage_note(f"context windows of {frames} frames ({ctx.type}): the model sees one window at a time")
    return frames


def _sample(a, node):
    src = _sampler_source(a, node)
    model_link = a.link(src, "model")
    shape = _sampler_latent_shape(a, node)
    models = a.refs(model_link, "WANVIDEOMODEL")
    if shape is not None and embeds_shape(a, a.link(src, "image_embeds")) is not None and shape.channels == 16 \
            and any(_is_wan22_5b(m.name) for m in models if m.role == "diffusion"):
        channels, spatial, _ = WAN22_5B
        shape = _replace(shape, channels=channels, height=shape.pixel_height // spatial,
                         width=shape.pixel_width // spatial, spatial_compression=spatial)
        a.stage_note("Wan 2.2 TI2V 5B (by the model's name): 48-channel latent at /16")
    if shape is not None and shape.frames and _embeds_node(a, a.link(src, "image_embeds"), RECAMMASTER) is not None:
        shape = _replace(shape, frames=shape.frames * 2)
        a.stage_note("ReCamMaster: the source video's latents run alongside the noise, so the model attends over "
                     "twice the frames")
    steps = a.number(src, "steps") if "steps" in src.inputs else None
    notes = []
    if steps is not None:
        start = a.number(src, "start_step", 0) or 0
        end = a.number(src, "end_step", -1)
        end = steps if end is None or end < 0 else min(end, steps)
        if start or end != steps:
            notes.append(f"steps {start}..{end} of {steps}")
        steps = max(0, end - start)
    cfg = a.number(src, "cfg", integer=False) if "cfg" in src.inputs else None
    batched = a.value(src, "batched_cfg")
    blocks = _blocks_to_swap(a, model_link)
    if blocks:
        a.stage_note(f"block swap: {blocks} transformer blocks kept in RAM and brought in one at a time")
    context = _context_frames(a, src) or _animate_window(a, a.link(src, "image_embeds"))
    stage = a.sample_stage(node, model_links=[model_link], cond_links=[], cfg=cfg,
                           uses_negative=cfg is not None and cfg != 1, steps=steps, notes=notes,
                           model_type="WANVIDEOMODEL", latent=shape, manager=MANAGER, blocks_to_swap=blocks or 0,
                           cfg_batched=bool(batched) if isinstance(batched, bool) else False, context_frames=context)
    held = _multitalk_output(a, node)
    return _replace(stage, host_output_bytes=held) if held and stage is not None else stage


MULTITALK = "WanVideoImageToVideoMultiTalk"


def multitalk_video(a, sampler) -> tuple[int, int, int, int] | None:
    """(frames in all, window, width, height) of a Multi/InfiniteTalk long video: the sampler's image_embeds from
    WanVideoImageToVideoMultiTalk loop over windows of frame_window_size frames (multitalk/multitalk_loop.py) until
    the audio MultiTalkWav2VecEmbeds cropped to num_frames / fps runs out; None for any other sampler."""
    src = _sampler_source(a, sampler)
    embeds = a.nodes.get(getattr(a.link(src, "image_embeds"), "node", None))
    if embeds is None or embeds.type != MULTITALK:
        return None
    width, height = a.number(embeds, "width"), a.number(embeds, "height")
    window = ((max(a.number(embeds, "frame_window_size", 81) or 81, 1) - 1) // 4) * 4 + 1
    audio = a.nodes.get(getattr(a.link(src, "multitalk_embeds"), "node", None))
    total = a.number(audio, "num_frames") if audio is not None and audio.type == "MultiTalkWav2VecEmbeds" else None
    if not (width and height):
        return None
    total = min(total or window, 100_000)  # the node's own widget stops at 10,000; a hostile value is bounded
    return max(total, window), window, width, height


def _multitalk_output(a, sampler) -> int:
    """Bytes the long video keeps on the CPU: each window is decoded inside the loop and kept in the VAE's bf16
    (multitalk_loop.py: vae.decode(...).cpu(), gen_video_list), then concatenated (a second copy) and returned;
    said as a stage note. 0 when the sampler is not a Multi/InfiniteTalk loop."""
    video = multitalk_video(a, sampler)
    if video is None:
        return 0
    total, window, width, height = video
    a.note(f"{a.label(sampler)}: Multi/InfiniteTalk long video: the model samples windows of {window} frames "
           f"(frame_window_size) and decodes each in the loop; the {total} frames (MultiTalkWav2VecEmbeds num_frames, "
           "at most) collect in RAM")
    return total * width * height * 3 * 2 * 2


def _animate_window(a, link) -> int | None:
    """WanVideoAnimateEmbeds: more frames than frame_window_size and the sampler loops over windows of that many
    frames plus the reference latent (nodes.py WanVideoAnimateEmbeds: looping = num_frames > frame_window_size,
    latent_window_size + 1): the pixel frames one window holds, or None."""
    node = a.nodes.get(getattr(link, "node", None))
    if node is None or node.type != "WanVideoAnimateEmbeds":
        return None
    frames, window = a.number(node, "num_frames"), a.number(node, "frame_window_size") or 77
    if not frames or ((frames - 1) // 4) * 4 + 1 <= window:
        return None
    a.stage_note(f"Wan-Animate loops over windows of {window} frames ({node.type} frame_window_size): the model sees "
                 "one window and the reference at a time")
    return window + 4  # the window's latent frames and the reference latent frame


def _is_wan22_5b(name: str) -> bool:
    key = name.lower().replace("-", "_")
    return "ti2v" in key or "5b" in key and ("wan2_2" in key or "wan2.2" in key or "wan22" in key)


def _text_encode(a, node):
    stage = a.text_stage(node, a.link(node, "t5"), "WANTEXTENCODER")
    device = a.value(node, "device")
    if device == "cpu":
        stage = _replace(stage, models=tuple(_replace(m, device="cpu") for m in stage.models))
    return _replace(stage, manager=MANAGER)


def _text_encode_cached(a, node):
    """Loads the T5 named in its own widget, encodes, caches the embeds on disk and unloads it."""
    ref = a.loader_ref(node, "model_name", role="text_encoder", folder="text_encoders", clip_type="wan")
    a.stage_note("loads its own T5 (cached embeddings are reused on later runs)")
    return _replace(a.text_stage(node, models=[ref] if ref else []), manager=MANAGER)


def _clip_vision_encode(a, node):
    stage = a.clip_vision_stage(node)
    return _replace(stage, manager=MANAGER)


def _decode(a, node):
    tiled = None
    if a.value(node, "enable_vae_tiling") is True:
        tile = a.number(node, "tile_x", 272) or 272
        stride = a.number(node, "tile_stride_x", 144) or 144
        tiled = {"tile_size": tile, "overlap": max(0, tile - stride), "temporal_size": 10_000, "temporal_overlap": 0}
    stage = a.decode_stage(node, vae_type="WANVAE", manager=MANAGER, tiled=tiled)
    sampler = a.nodes.get(getattr(a.link(node, "samples"), "node", None))
    video = multitalk_video(a, sampler) if sampler is not None and sampler.type in SAMPLERS else None
    if video is not None and stage is not None:
        # the sampler hands over the decoded video and WanVideoDecode only converts it: float32 frames in RAM
        total, _window, width, height = video
        return _replace(stage, host_output_bytes=total * width * height * 3 * 4)
    return stage


def _encode(a, node):
    return a.encode_stage(node, vae_type="WANVAE", pixels="image", manager=MANAGER)


@loader
def _wav2vec_loader(a, node, slot, type_, visiting):
    """(Down)load Wav2Vec Model names a Hugging Face repository (models/transformers/<repo>), Wav2VecModelLoader a
    file from models/wav2vec2; both cast every weight to base_precision (multitalk/nodes.py, fantasytalking/nodes.py:
    .to(base_dtype), set_module_tensor_to_device(..., dtype=base_dtype))."""
    if type_ != "WAV2VECMODEL":
        return []
    folder = "transformers" if node.type == "DownloadAndLoadWav2VecModel" else "wav2vec2"
    fp32 = a.value(node, "base_precision") == "fp32"
    ref = a.loader_ref(node, "model", role="audio_encoder", folder=folder, weight_dtype=PACK_FP32 if fp32 else None)
    return [ref] if ref else []


# wav2vec2 base at 16 kHz: the first conv (kernel 10, stride 5) keeps 512 channels at 3,200 steps per second, with its
# GroupNorm and GELU copies; the encoder has 12 layers of 768 at 50 frames per second
_W2V_RATE, _W2V_CONV, _W2V_FRAMES = 16_000, 512, 50


def wav2vec_working(seconds: float, nbytes: int, hidden_states: int, width: int = 768) -> list[tuple[str, int, str]]:
    """The activations of one wav2vec2 forward over `seconds` of audio (first-principles formula, uncalibrated)."""
    samples = int(seconds * _W2V_RATE)
    conv = 3 * _W2V_CONV * (samples // 5) * nbytes
    states = hidden_states * int(seconds * _W2V_FRAMES) * width * nbytes
    return [("wav2vec2 feature extractor (formula)", conv,
             f"first-principles formula, uncalibrated: {seconds:.1f} s at 16 kHz -> the first conv's 512 channels x "
             f"{samples // 5:,} steps, with its norm and GELU copies, {nbytes} bytes each"),
            ("wav2vec2 hidden states (formula)", states + samples * 4,
             f"{hidden_states} hidden state(s) x {int(seconds * _W2V_FRAMES)} frames x {width}, and the fp32 input")]


def _wav2vec_embeds(a, node):
    """MultiTalkWav2VecEmbeds / FantasyTalkingWav2VecEmbeds: wav2vec2.to(device), one forward over the first
    num_frames / fps seconds of each speaker's audio (the node crops it), then wav2vec2.to(offload_device). MultiTalk
    keeps every hidden state (output_hidden_states=True), FantasyTalking the last."""
    link = a.link(node, "wav2vec_model")
    if link is None:
        return []
    refs = tuple(a.refs(link, "WAV2VECMODEL"))
    frames = a.number(node, "num_frames", 81) or 81
    fps = a.number(node, "fps", 25.0) or 25.0
    seconds = min(max(frames, 1) / max(fps, 1.0), 3600.0)
    loader_node = a.nodes.get(refs[0].loader_node) if refs else None
    precision = str(a.value(loader_node, "base_precision") or "fp16") if loader_node is not None else "fp16"
    nbytes = 4 if precision == "fp32" else 2
    states = 13 if node.type == "MultiTalkWav2VecEmbeds" else 1
    a.stage_note(f"{a.label(node)}: wav2vec2 reads the first {seconds:.1f} s of the audio (num_frames / fps); "
                 "a shorter clip uses less")
    return [Stage(kind=AUDIO_ENCODE, node_id=node.id, node_type=node.type, models=refs, manager=MANAGER,
                  working=tuple(wav2vec_working(seconds, nbytes, states)))]


def _humo_embeds(a, node):
    """HuMoEmbeds: Whisper encodes the audio on the GPU (HuMo/nodes.py:150-190: model.to(device), then back to the
    offload device), then the VAE encode of the whole video's zero frames and the references."""
    stages = []
    link = a.link(node, "whisper_model")
    if link is not None:
        stages.append(Stage(kind=AUDIO_ENCODE, node_id=node.id, node_type=node.type,
                            models=tuple(a.refs(link, "WHISPERMODEL")), manager=MANAGER))
    encode = _image_to_video_encode(a, node)
    return stages + ([encode] if encode is not None else [])


def _image_to_video_encode(a, node):
    if node.type == "HuMoEmbeds" and a.link(node, "vae") is not None:
        # HuMo/nodes.py:205-208: always VAE-encodes zero frames for the whole video (+ 4 per reference)
        stage = a.encode_stage(node, vae_type="WANVAE")
        return _replace(stage, latent=embeds_shape(a, _self_link(node)), manager=MANAGER) if stage else None
    if not any(a.link(node, n) for n in ("start_image", "end_image", "ref_images", "input_frames")):
        return None
    stage = a.encode_stage(node, vae_type="WANVAE")
    return _replace(stage, latent=embeds_shape(a, _self_link(node)), manager=MANAGER) if stage else None


def _self_link(node):
    return _Link(node.id, 0)


PACK = Pack(
    name="ComfyUI-WanVideoWrapper",
    samplers=SAMPLERS,
    vae_decoders={"WanVideoDecode"},
    vae_encoders={"WanVideoEncode"},
    stage_kinds={"WanVideoTextEncode": TEXT_ENCODE, "WanVideoTextEncodeCached": TEXT_ENCODE,
                 "WanVideoClipVisionEncode": CLIP_VISION_ENCODE, "WanVideoImageToVideoEncode": VAE_ENCODE,
                 "WanVideoVACEEncode": VAE_ENCODE, "WanVideoAnimateEmbeds": VAE_ENCODE,
                 "WanVideoImageToVideoMultiTalk": VAE_ENCODE, "HuMoEmbeds": VAE_ENCODE,
                 "WanVideoImageClipEncode": VAE_ENCODE, **{t: SAMPLE for t in SAMPLERS},
                 "MultiTalkWav2VecEmbeds": AUDIO_ENCODE, "FantasyTalkingWav2VecEmbeds": AUDIO_ENCODE,
                 "WanVideoDecode": VAE_DECODE, "WanVideoEncode": VAE_ENCODE},
    handled=SETTINGS | EMBED_CREATORS | {"WanVideoSetBlockSwap", "WanVideoControlnet", "WanVideoAddControlEmbeds",
                                         "WanVideoAddFantasyPortrait", "WanVideoAddTTMLatents",
                                         "WanVideoAddSteadyDancerEmbeds", "WanVideoAddStandInLatent",
                                         "WanVideoReCamMasterCameraEmbed"},
    widgets=WIDGETS,
    input_types=INPUT_TYPES,
    output_types=OUTPUT_TYPES,
    relevant_types={"WHISPERMODEL", "WAV2VECMODEL", "MULTITALKMODEL", "FANTASYTALKINGMODEL",
                    "WANVIDEOMODEL", "WANTEXTENCODER", "WANVAE", "WANVIDIMAGE_EMBEDS", "WANVIDEOTEXTEMBEDS",
                    "WANVIDLORA", "VACEPATH", "WANVIDIMAGE_CLIPEMBEDS", "WANVIDEOCONTROLNET"},
    # one file widget each (HuMo/nodes.py WhisperModelLoader: Whisper's encoder, decoder dropped)
    simple_loaders={"WanVideoVAELoader": ("model_name", "vae", "vae", "WANVAE"),
                    "WhisperModelLoader": ("model", "audio_encoder", "audio_encoders", "WHISPERMODEL")},
    refs={"WanVideoModelLoader": _model_loader, "LoadWanVideoT5TextEncoder": _t5_loader,
          "WanVideoLoraSelect": _lora_select, "WanVideoLoraSelectMulti": _lora_select,
          "WanVideoVACEModelSelect": _vace_select, "LoadWanVideoClipTextEncoder": _clip_loader,
          "WanVideoSetLoRAs": _set_loras,
          "DownloadAndLoadWav2VecModel": _wav2vec_loader, "Wav2VecModelLoader": _wav2vec_loader,
          "MultiTalkModelLoader": _talk_loader, "FantasyTalkingModelLoader": _talk_loader},
    latents={**{t: _sampler_latent for t in SAMPLERS}, "WanVideoEncode": _encode_latent},
    stages={**{t: _sample for t in SAMPLERS}, "WanVideoTextEncode": _text_encode,
            "WanVideoTextEncodeCached": _text_encode_cached, "WanVideoClipVisionEncode": _clip_vision_encode,
            "WanVideoDecode": _decode, "WanVideoEncode": _encode,
            "WanVideoImageToVideoEncode": _image_to_video_encode, "WanVideoVACEEncode": _image_to_video_encode,
            "WanVideoAnimateEmbeds": _image_to_video_encode, "WanVideoImageToVideoMultiTalk": _image_to_video_encode,
            "HuMoEmbeds": _humo_embeds, "MultiTalkWav2VecEmbeds": _wav2vec_embeds,
            "WanVideoImageClipEncode": image_clip_encode,
            "FantasyTalkingWav2VecEmbeds": _wav2vec_embeds},
)
