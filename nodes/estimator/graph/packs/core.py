"""ComfyUI's own nodes (comfy-core): loaders, samplers, VAE nodes, latent and image helpers.

Tables are read by the generic analyzer; the handlers below cover nodes whose output a table
cannot describe (a resize, a split of sigmas, a switch). Line references are ComfyUI 0.18.2.
"""
from __future__ import annotations

import math
import re

from ...workload import TRAIN, UPSCALE, LatentShape, Stage
from ...models.media import Media
from ..base import (ASSUMED_IMAGE_SIDE, INPUT_MEDIA, MAX_DEPTH, _ImageSize, _MathEval, _replace, _UNKNOWN,
                    frames_bound, from_video)
from . import Pack, loader

DIFFUSION_LOADERS = {  # (name widget, gguf)
    "UNETLoader": ("unet_name", False),
}
CHECKPOINT_LOADERS = {  # output slot -> part
    "CheckpointLoaderSimple": {0: "model", 1: "clip", 2: "vae"},
    "CheckpointLoader": {0: "model", 1: "clip", 2: "vae"},
    "ImageOnlyCheckpointLoader": {0: "model", 1: "clip_vision", 2: "vae"},
    "unCLIPCheckpointLoader": {0: "model", 1: "clip", 2: "vae", 3: "clip_vision"},
}
TE_LOADERS = {  # (file widgets, gguf, implicit clip type when the node has no `type` widget)
    "CLIPLoader": (("clip_name",), False, None),
    "DualCLIPLoader": (("clip_name1", "clip_name2"), False, None),
    "TripleCLIPLoader": (("clip_name1", "clip_name2", "clip_name3"), False, "sd3"),  # nodes_sd3.py: CLIPType.SD3
    # nodes_hidream.py: CLIPType.HIDREAM
    "QuadrupleCLIPLoader": (("clip_name1", "clip_name2", "clip_name3", "clip_name4"), False, "hidream"),
}
SIMPLE_LOADERS = {  # class_type -> (name widget, role, folder, output type)
    "VAELoader": ("vae_name", "vae", "vae", "VAE"),
    "CLIPVisionLoader": ("clip_name", "clip_vision", "clip_vision", "CLIP_VISION"),
    "ControlNetLoader": ("control_net_name", "controlnet", "controlnet", "CONTROL_NET"),
    "DiffControlNetLoader": ("control_net_name", "controlnet", "controlnet", "CONTROL_NET"),
    "ModelPatchLoader": ("name", "model_patch", "model_patches", "MODEL_PATCH"),
    "UpscaleModelLoader": ("model_name", "upscale_model", "upscale_models", "UPSCALE_MODEL"),
    "LatentUpscaleModelLoader": ("model_name", "latent_upscale_model", "latent_upscale_models",
                                 "LATENT_UPSCALE_MODEL"),
    "AudioEncoderLoader": ("audio_encoder_name", "audio_encoder", "audio_encoders", "AUDIO_ENCODER"),
    "StyleModelLoader": ("style_model_name", "style_model", "style_models", "STYLE_MODEL"),
    "GLIGENLoader": ("gligen_name", "gligen", "gligen", "GLIGEN"),
}
# VAELoader virtual names (nodes.py VAELoader.vae_list): tiny decoders from models/vae_approx.
VIRTUAL_VAES = {"taesd", "taesdxl", "taesd3", "taef1", "pixel_space"}
LORA_LOADERS = {"LoraLoader", "LoraLoaderModelOnly"}
SAMPLERS = {"KSampler", "KSamplerAdvanced", "SamplerCustom", "SamplerCustomAdvanced"}

# Latent creators (the zeros() lines of comfy_extras/*, ComfyUI 0.18.2):
# class -> (channels, spatial /, temporal / or None, fixed batch or None)
LATENT_CREATORS: dict[str, tuple[int | None, int, int | None, int | None]] = {
    "EmptyLatentImage": (None, 8, None, None),  # 4 ch, re-channelled at sampling
    "EmptySD3LatentImage": (16, 8, None, None),
    "EmptyFlux2LatentImage": (128, 16, None, None),
    "EmptyHunyuanImageLatent": (64, 32, None, None),
    "EmptyChromaRadianceLatentImage": (3, 1, None, None),  # pixel space
    "EmptyHunyuanLatentVideo": (16, 8, 4, None),
    "EmptyHunyuanVideo15Latent": (32, 16, 4, None),
    "HunyuanVideo15ImageToVideo": (32, 16, 4, None),
    "HunyuanImageToVideo": (16, 8, 4, None),
    "Kandinsky5ImageToVideo": (16, 8, 4, None),
    "EmptyCosmosLatentVideo": (16, 8, 8, None),
    "CosmosImageToVideoLatent": (16, 8, 8, 1),
    "CosmosPredict2ImageToVideoLatent": (16, 8, 4, 1),
    "EmptyLTXVLatentVideo": (128, 32, 8, None),
    "LTXVImgToVideo": (128, 32, 8, None),
    "EmptyMochiLatentVideo": (12, 8, 6, None),
    "WanImageToVideo": (16, 8, 4, None),
    "WanFunControlToVideo": (16, 8, 4, None),
    "WanVaceToVideo": (16, 8, 4, None),
    "WanCameraImageToVideo": (16, 8, 4, None),
    "WanPhantomSubjectToVideo": (16, 8, 4, None),
    "WanTrackToVideo": (16, 8, 4, None),
    "WanHuMoImageToVideo": (16, 8, 4, None),
    "WanSoundImageToVideo": (16, 8, 4, None),
    "WanAnimateToVideo": (16, 8, 4, None),
    "WanInfiniteTalkToVideo": (16, 8, 4, 1),
    "WanSCAILToVideo": (16, 8, 4, None),
    "WanMoveTrackToVideo": (16, 8, 4, None),
    "Wan22ImageToVideoLatent": (48, 16, 4, None),
    "WanFirstLastFrameToVideo": (16, 8, 4, None),  # vae.latent_channels / spacial compression: see vae_geometry
    "Wan22FunControlToVideo": (16, 8, 4, None),  # idem
    "EmptyQwenImageLayeredLatentImage": (16, 8, None, None),  # frames = layers + 1 (nodes_qwen.py:129)
    "EmptyQwenImageLayeredLatent": (16, 8, None, None),
}
VAE_DEPENDENT_CREATORS = {"WanFirstLastFrameToVideo", "Wan22FunControlToVideo"}
NON_IMAGE_LATENTS = {  # creators of latents the LatentShape cannot describe
    "StableCascade_EmptyLatentImage": "Stable Cascade",
}
# LTX-2's audio VAE (comfy/ldm/lightricks/vae/audio_vae.py:231-267 of 0.18.2): 16 kHz mel spectrogram,
# hop 160, latent /4 -> 25 latents per second; 8 channels x 16 frequency bins (64 mel bins / 4).
LTX2_AUDIO_LATENTS_PER_S, LTX2_AUDIO_CHANNELS, LTX2_AUDIO_BINS = 25, 8, 16
# Conditioning nodes whose LATENT output is the VAE encoding of their `pixels` input.
PIXEL_LATENT_CONDITIONING = {"InpaintModelConditioning", "InstructPixToPixConditioning"}
# Nodes that VAE-encode an image inside (conditioning / latent helpers): class -> image inputs.
# An empty tuple means "always encodes" (WanVaceToVideo encodes gray frames without a control video).
INTERNAL_ENCODERS: dict[str, tuple[str, ...]] = {
    "WanImageToVideo": ("start_image",), "WanFirstLastFrameToVideo": ("start_image", "end_image"),
    "WanFunControlToVideo": ("start_image", "control_video"), "Wan22FunControlToVideo": ("ref_image", "control_video"),
    "WanVaceToVideo": (), "Wan22ImageToVideoLatent": ("start_image",), "WanCameraImageToVideo": ("start_image",),
    "WanPhantomSubjectToVideo": ("images",), "WanTrackToVideo": ("start_image",),
    "WanHuMoImageToVideo": ("ref_image",), "WanSoundImageToVideo": ("ref_image",),
    "WanAnimateToVideo": ("reference_image", "pose_video", "face_video"), "WanInfiniteTalkToVideo": ("start_image",),
    "HunyuanImageToVideo": ("start_image",), "HunyuanVideo15ImageToVideo": ("start_image",),
    "Kandinsky5ImageToVideo": ("start_image",), "CosmosImageToVideoLatent": ("start_image", "end_image"),
    "CosmosPredict2ImageToVideoLatent": ("start_image", "end_image"), "LTXVImgToVideo": ("image",),
    "LTXVImgToVideoInplace": ("image",), "LTXVAddGuide": ("image",), "InpaintModelConditioning": ("pixels",),
    "InstructPixToPixConditioning": ("pixels",), "SVD_img2vid_Conditioning": ("init_image",),
}
VALUE_PRIMITIVES = {"PrimitiveInt", "PrimitiveFloat", "PrimitiveString", "PrimitiveStringMultiline",
                    "PrimitiveBoolean"}
# UI-only nodes: they never reach the server (frontend `isVirtualNode`).
VIRTUAL_NODES = {"Reroute", "PrimitiveNode", "Note", "MarkdownNote", "SetNode", "GetNode"}
# Output nodes when the specs do not say.
OUTPUT_NODE_TYPES = {"SaveImage", "PreviewImage", "SaveVideo", "SaveAnimatedWEBP", "SaveAnimatedPNG", "SaveWEBM",
                     "SaveAudio", "PreviewAudio", "SaveGLB", "PreviewAny", "SaveLatent", "SaveImageWebsocket"}
KONTEXT_RESOLUTIONS = (  # comfy_extras/nodes_flux.py PREFERED_KONTEXT_RESOLUTIONS
    (672, 1568), (688, 1504), (720, 1456), (752, 1392), (800, 1328), (832, 1248), (880, 1184), (944, 1104),
    (1024, 1024), (1104, 944), (1184, 880), (1248, 832), (1328, 800), (1392, 752), (1456, 720), (1504, 688),
    (1568, 672),
)


# ------------------------------------------------------------------------------------ values
def _switch_value(a, node, link, depth, sub):
    switch = sub("switch")
    if switch is _UNKNOWN:
        return _UNKNOWN
    return sub("on_true" if switch else "on_false")


def _math_value(a, node, link, depth, sub):
    names = {k.split(".", 1)[1]: sub(k) for k in node.inputs if k.startswith("values.")}
    result = _MathEval(names).eval(sub("expression"))
    if result is _UNKNOWN:
        return _UNKNOWN
    out = a.out_type(node, link.slot) or ("FLOAT", "INT", "BOOLEAN")[min(link.slot, 2)]
    try:
        return int(result) if out == "INT" else bool(result) if out == "BOOLEAN" else float(result)
    except (OverflowError, ValueError):  # inf / nan
        return _UNKNOWN


def _concat_value(a, node, link, depth, sub):
    left, right, delimiter = sub("string_a"), sub("string_b"), sub("delimiter")
    if _UNKNOWN in (left, right):
        return _UNKNOWN
    return f"{left}{'' if delimiter is _UNKNOWN else delimiter}{right}"


def _combo_value(a, node, link, depth, sub):
    return sub("choice") if link.slot == 0 else sub("index")


def _image_size_value(a, node, link, depth, sub):
    size = a.image_size(a.link(node, "image"))
    if size is None or not size.exact:
        return _UNKNOWN
    return (size.width, size.height, size.batch)[link.slot] if link.slot < 3 else _UNKNOWN


# -------------------------------------------------------------------------------------- refs
@loader
def _ltxv_audio_vae(a, node, slot, type_, visiting):
    """LTXVAudioVAELoader: the audio VAE (+ vocoder) part of an LTX-2 checkpoint."""
    if type_ != "VAE":
        return []
    ref = a.loader_ref(node, "ckpt_name", role="vae", folder="checkpoints", part="audio_vae")
    return [ref] if ref else []


def _ltxav_text_encoder(a, node, slot, type_, visiting):
    """Gemma + the LTX-2 checkpoint's text projection."""
    if type_ != "CLIP":
        return []
    device = a.value(node, "device")
    out = []
    ref = a.loader_ref(node, "text_encoder", role="text_encoder", folder="text_encoders",
                        clip_type="ltxv", device=str(device) if isinstance(device, str) else None)
    if ref:
        out.append(ref)
    if a.value(node, "ckpt_name"):
        ref = a.loader_ref(node, "ckpt_name", role="checkpoint", folder="checkpoints", part="clip")
        if ref:
            out.append(ref)
    return out


def _switch_refs(a, node, slot, type_, visiting):
    switch = a.value(node, "switch")
    if switch is _UNKNOWN or switch is None:
        a.note(f"{a.label(node)}: switch value unknown; both branches counted")
        return (a.refs(a.link(node, "on_true"), type_, visiting)
                + a.refs(a.link(node, "on_false"), type_, visiting))
    return a.refs(a.link(node, "on_true" if switch else "on_false"), type_, visiting)


# ----------------------------------------------------------------------------------- latents
def _up(a, node, name, depth):
    return a.latent(a.link(node, name), depth + 1)


def _sampler_latent(a, node, slot, depth):
    return _up(a, node, "latent_image", depth)


def _latent_upscale(a, node, slot, depth):
    src = _up(a, node, "samples", depth)
    width, height = a.number(node, "width"), a.number(node, "height")
    if src is None or width is None or height is None:
        return None
    if width == 0 and height == 0:
        return src
    # nodes.py LatentUpscale.upscale: 0 keeps the aspect, min 64 px, then // 8 in latent units
    if width == 0:
        height = max(64, height)
        width = max(64, round(src.width * height / max(src.height, 1)))
    elif height == 0:
        width = max(64, width)
        height = max(64, round(src.height * width / max(src.width, 1)))
    else:
        width, height = max(64, width), max(64, height)
    return a.resized_latent(src, node, width // 8, height // 8)


def _latent_upscale_by(a, node, slot, depth):
    src = _up(a, node, "samples", depth)
    scale = a.number(node, "scale_by", integer=False)
    if src is None or scale is None:
        return None
    return a.resized_latent(src, node, round(src.width * scale), round(src.height * scale))


def _ltxv_upsampler(a, node, slot, depth):  # the LTX spatial upscaler doubles H and W
    src = _up(a, node, "samples", depth)
    return a.resized_latent(src, node, src.width * 2, src.height * 2) if src else None


def _repeat_latent(a, node, slot, depth):
    src = _up(a, node, "samples", depth)
    amount = a.number(node, "amount", 1) or 1
    return _replace(src, batch=src.batch * amount, source_node=node.id, source_type=node.type) if src else None


def _latent_batch(a, node, slot, depth):
    first, second = _up(a, node, "samples1", depth), _up(a, node, "samples2", depth)
    return _replace(first, batch=first.batch + second.batch) if first and second else first or second


def _latent_from_batch(a, node, slot, depth):
    src = _up(a, node, "samples", depth)
    length = a.number(node, "length", 1) or 1
    return _replace(src, batch=min(length, src.batch)) if src else None


def _trim_video_latent(a, node, slot, depth):
    src = _up(a, node, "samples", depth)
    trim = a.number(node, "trim_amount", 0) or 0
    if src is None or src.frames is None:
        return src
    return _replace(src, frames=max(src.frames - trim, 0))


def _ltxv_concat_av(a, node, slot, depth):
    src = _up(a, node, "video_latent", depth)
    audio = _up(a, node, "audio_latent", depth)
    if src is not None and audio is not None and audio.media == "audio":
        return _replace(src, audio=audio)
    return src


def _ltxv_separate_av(a, node, slot, depth):
    src = _up(a, node, "av_latent", depth)
    if src is None:
        return None
    return _replace(src, audio=None) if slot == 0 else src.audio


def _upscale_with_model(a, node):
    """ImageUpscaleWithModel (comfy_extras/nodes_upscale_model.py:67-95): the upscale model over 512 px tiles."""
    links = a.linked_inputs_of_type(node, "UPSCALE_MODEL")
    models = tuple(a.refs(links[0][1], "UPSCALE_MODEL")) if links else ()
    if not models:
        a.stage_note("no upscale-model loader found upstream")
    size = a.image_size(a.link(node, "image"))
    images = ((size.width, size.height),) * max(1, size.batch or 1) if size and size.width and size.height else ()
    if not images:
        a.stage_note("image size unknown")
    return Stage(kind=UPSCALE, node_id=node.id, node_type=node.type, models=models, images=images)


def _decode_hunyuan3d(a, node):
    """VAEDecodeHunyuan3D (comfy_extras/nodes_hunyuan3d.py): latent -> voxels, num_chunks query points at a
    time on an (octree_resolution + 1)³ grid."""
    stage = a.decode_stage(node)
    options = {"num_chunks": a.number(node, "num_chunks", 8000) or 8000,
               "octree_resolution": a.number(node, "octree_resolution", 256) or 256}
    return _replace(stage, decode_options=options)


def _ace_latent(a, node, slot, depth):
    """EmptyAceStepLatentAudio (comfy_extras/nodes_ace.py:81-83): zeros([B, 8, 16, int(seconds*44100/512/8)])."""
    seconds = a.number(node, "seconds", 120.0, integer=False)
    batch = a.number(node, "batch_size", 1) or 1
    if seconds is None:
        return None
    return LatentShape(batch=batch, channels=8, height=16, width=int(seconds * 44100 / 512 / 8), spatial_compression=1,
                       media="audio", source_node=node.id, source_type=node.type)


def _ace15_latent(a, node, slot, depth):
    """EmptyAceStep1.5LatentAudio (comfy_extras/nodes_ace.py): zeros([B, 64, round(seconds * 48000 / 1920)])."""
    seconds = a.number(node, "seconds", 120.0, integer=False)
    batch = a.number(node, "batch_size", 1) or 1
    if seconds is None:
        return None
    return LatentShape(batch=batch, channels=64, height=1, width=round(seconds * 48000 / 1920), spatial_compression=1,
                       media="audio", source_node=node.id, source_type=node.type)


def _hunyuan3d_latent(a, node, slot, depth):
    """EmptyLatentHunyuan3Dv2 (comfy_extras/nodes_hunyuan3d.py:31-32): zeros([B, 64, resolution])."""
    tokens = a.number(node, "resolution", 3072)
    batch = a.number(node, "batch_size", 1) or 1
    if tokens is None:
        return None
    return LatentShape(batch=batch, channels=64, height=1, width=tokens, spatial_compression=1, media="3d",
                       source_node=node.id, source_type=node.type)


def _ltxv_audio_latent(a, node, slot, depth):
    """LTXVEmptyLatentAudio (comfy_extras/nodes_lt_audio.py:141-168): zeros([B, 8, ceil(frames / fps * 25), 16])."""
    frames, fps = a.number(node, "frames_number", 97), a.number(node, "frame_rate", 25)
    batch = a.number(node, "batch_size", 1) or 1
    if frames is None or not fps:
        return None
    latents = math.ceil(frames / fps * LTX2_AUDIO_LATENTS_PER_S)
    return LatentShape(batch=batch, channels=LTX2_AUDIO_CHANNELS, height=latents, width=LTX2_AUDIO_BINS,
                       spatial_compression=1, media="audio", source_node=node.id, source_type=node.type)


def _ltxv_audio_encode(a, node, slot, depth):
    """LTXVAudioVAEEncode (nodes_lt_audio.py:37-57 -> nodes_audio.py VAEEncodeAudio): 25 latents a second of the audio
    it is given. A loaded file's length is known only at run time; TrimAudioDuration (nodes_audio.py:457-479) cuts
    it to at most `duration` seconds, which bounds the latent (the file may be shorter: an upper bound, said)."""
    link = a.link(node, "audio")
    trim = a.nodes.get(link.node) if link is not None else None
    if trim is None or trim.type != "TrimAudioDuration":
        return None
    seconds = a.number(trim, "duration", None, integer=False)
    if not seconds or seconds <= 0:
        return None
    latents = math.ceil(seconds * LTX2_AUDIO_LATENTS_PER_S)
    a.note(f"{a.label(node)}: the audio is at most {seconds:g} s ({a.label(trim)}), {latents} audio latents; a "
           "shorter file needs less")
    return LatentShape(batch=1, channels=LTX2_AUDIO_CHANNELS, height=latents, width=LTX2_AUDIO_BINS,
                       spatial_compression=1, media="audio", source_node=node.id, source_type=node.type)


def _svd_img2vid(a, node, slot, depth):  # nodes_video_model.py: zeros([video_frames, 4, H/8, W/8])
    width, height, frames = a.number(node, "width"), a.number(node, "height"), a.number(node, "video_frames")
    if None in (width, height, frames):
        return None
    return LatentShape(batch=frames, channels=4, height=height // 8, width=width // 8, pixel_height=height,
                       pixel_width=width, source_node=node.id, source_type=node.type)


def _switch_latent(a, node, slot, depth):
    switch = a.value(node, "switch")
    if switch is _UNKNOWN or switch is None:
        return _up(a, node, "on_true", depth) or _up(a, node, "on_false", depth)
    return _up(a, node, "on_true" if switch else "on_false", depth)


# ------------------------------------------------------------------------------------ images
def _img_up(a, node, depth, name="image"):
    return a.image_size(a.link(node, name), depth + 1)


def _img_image_batch(a, node, link, depth):
    """nodes.py ImageBatch: image2 resized to image1's size (common_upscale), then both batches concatenated."""
    first, second = _img_up(a, node, depth, "image1"), _img_up(a, node, depth, "image2")
    if first is None or second is None:
        return None
    return _ImageSize(first.width, first.height, first.batch + second.batch, first.exact and second.exact)


def _img_switch(a, node, link, depth):
    """ComfySwitchNode on IMAGE: the branch its switch picks (the first known one when the switch is not fixed),
    as _switch_latent does for latents."""
    switch = a.value(node, "switch")
    if switch is _UNKNOWN or switch is None:
        return _img_up(a, node, depth, "on_true") or _img_up(a, node, depth, "on_false")
    return _img_up(a, node, depth, "on_true" if switch else "on_false")


def _img_empty_image(a, node, link, depth):
    w, h = a.number(node, "width"), a.number(node, "height")
    return _ImageSize(w, h, a.number(node, "batch_size", 1) or 1) if w and h else None


IMAGE_LOADERS = {"LoadImage", "LoadImageMask", "LoadImageOutput"}


def _img_video_components(a, node, link, depth):
    """GetVideoComponents' images: the frames of the VIDEO it is given (video_of)."""
    if link.slot != 0:
        return None
    video = video_of(a, a.link(node, "video"), depth + 1)
    if video is not None and video.frames:
        return _ImageSize(video.width, video.height, video.frames)
    a.note(f"{a.label(node)}: the video's size / frame count are not known before running (its file is not "
           "in an input folder this estimate can read, or its header does not state them); shapes that "
           "depend on it are left unknown")
    return None


def _img_load_image(a, node, link, depth):
    """A loaded image: its real size (and an animation's frames) when the caller can read the file
    (INPUT_MEDIA), else for LoadImage a stated 1-megapixel assumption."""
    if link.slot != 0:
        return None
    name = a.value(node, "image") if node.type in IMAGE_LOADERS else None
    reader = INPUT_MEDIA.get()
    if reader is not None and isinstance(name, str):
        size = reader(name)
        if size is not None:
            return _ImageSize(size[0], size[1], size[2] or 1)
    if node.type in IMAGE_LOADERS:
        side = ASSUMED_IMAGE_SIDE
        a.note(f"{a.label(node)}: the image's size is not known here ('{str(name)[:60]}' is not in an input folder "
               f"this estimate can read); assumed {side}×{side} (1 megapixel). Inside ComfyUI, or with --input-dir, "
               "the file's own size is used")
        return _ImageSize(side, side, 1, exact=False)
    return None


def video_of(a, link, depth: int = 0):
    """A VIDEO link's frames as ComfyUI 0.33 decodes them (models.media.Media: width, height, frames, fps), or
    None: LoadVideo's file header (read by the caller's INPUT_MEDIA, confined to the input folder), trimmed by
    Video Slice (nodes_video.py:334-378, VideoFromFile.as_trimmed: the frames whose time is in [start, start +
    duration)), or CreateVideo's images at its fps (:250-258)."""
    node = a.nodes.get(link.node) if link is not None else None
    if node is None or depth > MAX_DEPTH:
        return None
    if node.type == "LoadVideo":
        reader, name = INPUT_MEDIA.get(), a.value(node, "file")
        return reader(name) if reader is not None and isinstance(name, str) else None
    if node.type == "Video Slice":
        src = video_of(a, a.link(node, "video"), depth + 1)
        start, length = a.number(node, "start_time", 0.0, False), a.number(node, "duration", 0.0, False)
        if src is None or not src.frames or start is None or length is None:
            return None
        if not start and not length:
            return src
        if not src.fps:
            return None
        total = src.frames / src.fps
        begin = max(0.0, total + start) if start < 0 else min(start, total)
        end = min(total, begin + length) if length else total
        frames = max(0, math.ceil(round(end * src.fps, 6)) - math.ceil(round(begin * src.fps, 6)))  # k/fps in range
        return src._replace(frames=frames) if frames else None
    if node.type == "ComfySwitchNode":  # the branch its switch picks, as _img_switch
        switch = a.value(node, "switch")
        names = ("on_true", "on_false") if switch is _UNKNOWN or switch is None else \
            (("on_true",) if switch else ("on_false",))
        return next((v for v in (video_of(a, a.link(node, n), depth + 1) for n in names) if v is not None), None)
    if node.type == "CreateVideo":
        size = a.image_size(a.link(node, "images"), depth + 1)
        if size is None or not size.exact:
            return None
        return Media(size.width, size.height, size.batch, a.number(node, "fps", 30.0, False))
    return None


def _img_image_scale(a, node, link, depth):
    w, h, src = a.number(node, "width"), a.number(node, "height"), _img_up(a, node, depth)
    if w is None or h is None:
        return None
    if w == 0 or h == 0:
        if src is None:
            return None
        if w == 0 and h == 0:
            return src
        w = w or max(1, round(src.width * h / src.height))
        h = h or max(1, round(src.height * w / src.width))
    return _ImageSize(w, h, src.batch if src else 1, src.exact if src else True)


def _img_pad_for_outpaint(a, node, link, depth):
    """ImagePadForOutpaint (nodes.py:2021-2029 in 0.33.0): the image with left + right columns and top + bottom rows
    added (d2 + top + bottom, d3 + left + right)."""
    src = _img_up(a, node, depth)
    pads = [a.number(node, k) for k in ("left", "top", "right", "bottom")]
    if src is None or any(p is None or p < 0 for p in pads):
        return None
    left, top, right, bottom = pads
    return _ImageSize(src.width + left + right, src.height + top + bottom, src.batch, src.exact)


def _img_image_scale_by(a, node, link, depth):
    src, scale = _img_up(a, node, depth), a.number(node, "scale_by", integer=False)
    return _ImageSize(round(src.width * scale), round(src.height * scale), src.batch, src.exact) \
        if src and scale else None


def _img_image_scale_to_total_pixels(a, node, link, depth):
    mp = a.number(node, "megapixels", integer=False)
    steps = a.number(node, "resolution_steps", 1) or 1
    if not mp:
        return None
    total = mp * 1024 * 1024
    src = _img_up(a, node, depth)
    if src is None:
        side = round(math.sqrt(total) / steps) * steps
        a.note(f"{a.label(node)}: input size unknown; assumed a square of {mp} megapixels")
        return _ImageSize(side, side, 1, exact=False)
    # nodes_post_processing.py ImageScaleToTotalPixels.execute
    scale = math.sqrt(total / (src.width * src.height))
    return _ImageSize(round(src.width * scale / steps) * steps, round(src.height * scale / steps) * steps,
                      src.batch, src.exact)


def _img_flux_kontext_image_scale(a, node, link, depth):
    src = _img_up(a, node, depth)
    if src is None:
        a.note(f"{a.label(node)}: input size unknown; assumed 1024x1024 (Kontext's square bucket)")
        return _ImageSize(1024, 1024, 1, exact=False)
    aspect = src.width / src.height
    _, w, h = min((abs(aspect - w / h), w, h) for w, h in KONTEXT_RESOLUTIONS)
    return _ImageSize(w, h, src.batch, src.exact)


def _unknown_source_batch(a, node, name):
    """How many images to assume when the size of input ``name`` is unknown: 1 for an image; for a video's frames
    (their count known only at run time) the length of an ImageFromBatch upstream (at most that many), else None:
    no size is assumed (said)."""
    link = a.link(node, name)
    if not from_video(a, link):
        return 1
    bound = frames_bound(a, link)
    if bound:
        return bound
    a.note(f"{a.label(node)}: its input is a video's frames whose count is known only at run time; no size is "
           "assumed")
    return None


def _img_image_scale_to_max_dimension(a, node, link, depth):
    largest = a.number(node, "largest_size")
    src = _img_up(a, node, depth)
    if not largest:
        return None
    if src is None:
        batch = _unknown_source_batch(a, node, "image")
        if batch is None:
            return None
        a.note(f"{a.label(node)}: input size unknown; assumed a {largest}x{largest} square (upper bound)")
        return _ImageSize(largest, largest, batch, exact=False)
    scale = largest / max(src.width, src.height)
    return _ImageSize(round(src.width * scale), round(src.height * scale), src.batch, src.exact)


def _img_resize_image_mask_node(a, node, link, depth):
    src = a.image_size(a.link(node, "input"), depth + 1)
    batch = _unknown_source_batch(a, node, "input") if src is None else src.batch
    return _resize_image_mask(a, node, src, batch) if batch else None


def _img_repeat_image_batch(a, node, link, depth):
    src, amount = _img_up(a, node, depth), a.number(node, "amount", 1) or 1
    return _ImageSize(src.width, src.height, src.batch * amount, src.exact) if src else None


def _img_image_from_batch(a, node, link, depth):
    src, length = _img_up(a, node, depth), a.number(node, "length", 1) or 1
    return _ImageSize(src.width, src.height, min(length, src.batch), src.exact) if src else None


def _resize_image_mask(a, node, src, batch=1):
    """nodes_post_processing.py ResizeImageMaskNode, per resize_type option; ``batch``: the images of an input of
    unknown size (_unknown_source_batch)."""
    mode = a.value(node, "resize_type")
    num = lambda name, integer=True: a.number(node, f"resize_type.{name}", integer=integer)  # noqa: E731
    if mode == "scale dimensions":
        w, h = num("width"), num("height")
        if w and h:
            return _ImageSize(w, h, src.batch if src else batch)
        if src and (w or h):
            return _ImageSize(w or round(src.width * h / src.height), h or round(src.height * w / src.width),
                              src.batch, src.exact)
        return None
    if mode == "match size":
        return a.image_size(a.link(node, "resize_type.match"))
    if src is None:
        if mode == "scale total pixels":
            mp = num("megapixels", integer=False)
            if mp:
                side = round(math.sqrt(mp * 1024 * 1024))
                a.note(f"{a.label(node)}: input size unknown; assumed a square of {mp} megapixels")
                return _ImageSize(side, side, batch, exact=False)
        if mode == "scale longer dimension":
            side = num("longer_size")
            if side:
                a.note(f"{a.label(node)}: input size unknown; assumed a {side}x{side} square (upper bound)")
                return _ImageSize(side, side, batch, exact=False)
        return None
    if mode == "scale by multiplier":
        m = num("multiplier", integer=False)
        return _ImageSize(round(src.width * m), round(src.height * m), src.batch, src.exact) if m else None
    if mode in ("scale longer dimension", "scale shorter dimension"):
        side = num("longer_size" if "longer" in mode else "shorter_size")
        ref = max(src.width, src.height) if "longer" in mode else min(src.width, src.height)
        if not side:
            return None
        return _ImageSize(round(src.width * side / ref), round(src.height * side / ref), src.batch, src.exact)
    if mode in ("scale width", "scale height"):
        side = num("width" if mode == "scale width" else "height")
        if not side:
            return None
        ref = src.width if mode == "scale width" else src.height
        return _ImageSize(round(src.width * side / ref), round(src.height * side / ref), src.batch, src.exact)
    if mode == "scale total pixels":
        mp = num("megapixels", integer=False)
        if not mp:
            return None
        scale = math.sqrt(int(mp * 1024 * 1024) / (src.width * src.height))
        return _ImageSize(round(src.width * scale), round(src.height * scale), src.batch, src.exact)
    if mode == "scale to multiple":
        m = num("multiple") or 1
        return _ImageSize(max(m, src.width // m * m), max(m, src.height // m * m), src.batch, src.exact)
    return None


def _img_saved(a, node, link, depth):
    """SaveImage / PreviewImage return the images they save (nodes.py:1717 '"result": (images,)')."""
    return _img_up(a, node, depth, "images") if link.slot == 0 else None


IMAGES = {
    "EmptyImage": _img_empty_image,
    "SaveImage": _img_saved,
    "PreviewImage": _img_saved,
    "LoadImage": _img_load_image,
    "LoadImageMask": _img_load_image,
    "LoadVideo": _img_load_image,
    "GetVideoComponents": _img_video_components,
    "LoadImageOutput": _img_load_image,
    "ImageScale": _img_image_scale,
    "ImageScaleBy": _img_image_scale_by,
    "ImagePadForOutpaint": _img_pad_for_outpaint,
    "ImageScaleToTotalPixels": _img_image_scale_to_total_pixels,
    "FluxKontextImageScale": _img_flux_kontext_image_scale,
    "ImageScaleToMaxDimension": _img_image_scale_to_max_dimension,
    "ResizeImageMaskNode": _img_resize_image_mask_node,
    "RepeatImageBatch": _img_repeat_image_batch,
    "ImageFromBatch": _img_image_from_batch,
    "ComfySwitchNode": _img_switch,
    # nodes_mask.py ImageCompositeMasked: a copy of the destination with the source pasted in
    "ImageCompositeMasked": lambda a, node, link, depth: _img_up(a, node, depth, "destination"),
    "ImageBatch": _img_image_batch,
    # nodes_mask.py MaskToImage: [B, H, W] -> [B, H, W, 3], the mask's size (a mask producer sizes its MASK output here)
    "MaskToImage": lambda a, node, link, depth: _img_up(a, node, depth, "mask"),
}


# ------------------------------------------------------------------------------------ sigmas
def _basic_scheduler(a, node, link, depth):
    denoise = a.number(node, "denoise", 1.0, integer=False)
    return 0 if denoise is not None and denoise <= 0 else a.number(node, "steps")


def _split_sigmas(a, node, link, depth):
    total = a.sigma_steps(a.link(node, "sigmas"), depth + 1)
    step = a.number(node, "step")
    if total is None or step is None:
        return None
    return min(step, total) if link.slot == 0 else max(total - step, 0)


def _split_sigmas_denoise(a, node, link, depth):  # nodes_custom_sampler.py: low part = round(steps * denoise)
    total = a.sigma_steps(a.link(node, "sigmas"), depth + 1)
    denoise = a.number(node, "denoise", integer=False)
    if total is None or denoise is None:
        return None
    low = round(total * denoise)
    return total - low if link.slot == 0 else low


def _manual_sigmas(a, node, link, depth):
    text = a.text(node, "sigmas")
    if not isinstance(text, str):
        return None
    count = len(re.findall(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?", text))
    return max(count - 1, 0)


# ----------------------------------------------------------------------------------- guiders
def _basic_guider(a, node, depth):
    return {"model": [a.link(node, "model")], "conds": [a.link(node, "conditioning")], "uses_negative": False}


def _cfg_guider(a, node, depth):
    return {"model": [a.link(node, "model")], "conds": [a.link(node, "positive"), a.link(node, "negative")],
            "cfg": a.number(node, "cfg", integer=False)}


def _dual_cfg_guider(a, node, depth):
    a.note(f"{a.label(node)}: three conditionings (cond1, cond2, negative) per step")
    return {"model": [a.link(node, "model")], "conds": [a.link(node, n) for n in ("cond1", "cond2", "negative")],
            "cfg": a.number(node, "cfg_conds", integer=False)}


# ------------------------------------------------------------------------------------ stages
def _ksampler(a, node):
    denoise = a.number(node, "denoise", 1.0, integer=False)
    notes = [f"denoise {denoise}"] if denoise is not None and denoise < 1 else []
    return a.sample_stage(node, steps=a.number(node, "steps"), notes=notes)


def _ksampler_advanced(a, node):
    steps = a.number(node, "steps")
    notes = []
    if steps is not None:
        start = a.number(node, "start_at_step", 0) or 0
        a.advanced_start[node.id] = start
        end = a.number(node, "end_at_step", steps)
        end = steps if end is None else end
        notes.append(f"steps {start}..{min(end, steps)} of {steps}")
        steps = max(0, min(end, steps) - start)
    return a.sample_stage(node, steps=steps, notes=notes)


def _sampler_custom(a, node):
    return a.sample_stage(node, steps=a.sigma_steps(a.link(node, "sigmas")))


def _sampler_custom_advanced(a, node):
    g = a.guider(a.link(node, "guider"))
    if g["type"] is None:
        a.stage_note("no guider connected")
    return a.sample_stage(node, model_links=g["model"], cond_links=g["conds"], cfg=g["cfg"],
                          uses_negative=g["uses_negative"], steps=a.sigma_steps(a.link(node, "sigmas")))


TILED_DEFAULTS = (("tile_size", 512), ("overlap", 64), ("temporal_size", 64), ("temporal_overlap", 8))  # nodes.py


def _tiled_settings(a, node):
    out = {}
    for name, default in TILED_DEFAULTS:
        value = a.number(node, name, default)
        out[name] = default if value is None else value
    return out


def _decode_tiled(a, node):
    return _replace(a.decode_stage(node), tiled=_tiled_settings(a, node))


def _decode_audio_tiled(a, node):
    """VAEDecodeAudioTiled (0.33 comfy_extras/nodes_audio.py:137-156): vae.decode_tiled over tile_size latent frames
    with `overlap` (defaults 512 / 64)."""
    tiled = {}
    for name, default in (("tile_size", 512), ("overlap", 64)):
        value = a.number(node, name, default)
        tiled[name] = default if value is None else value
    return _replace(a.decode_stage(node), tiled=tiled)


def _encode_tiled(a, node):
    stage = a.encode_stage(node)
    return _replace(stage, tiled=_tiled_settings(a, node)) if stage else None


def _text_generate(a, node):
    """comfy_extras/nodes_textgen.py: autoregressive generation with the text encoder's LLM."""
    stage = a.text_stage(node)
    max_length = a.number(node, "max_length", 0) or 0
    a.stage_note(f"generates up to {max_length} tokens with the text encoder (autoregressive)")
    images = ()
    if a.link(node, "image") is not None:
        size = a.image_size(a.link(node, "image"))
        if size is not None:
            images = ((size.width, size.height),) * max(1, size.batch)
        else:
            a.stage_note("an image is attached but its size is unknown: its tokens are not counted")
    return _replace(stage, text_tokens=(stage.text_tokens or 77) + max_length, generate_tokens=max_length,
                    images=images)


TRAIN_WIDGETS = {  # comfy_extras/nodes_train.py TrainLoraNode inputs and defaults (0.18.2 :948-1083)
    "batch_size": 1, "grad_accumulation_steps": 1, "steps": 16, "rank": 8, "optimizer": "AdamW",
    "training_dtype": "bf16", "lora_dtype": "bf16", "algorithm": "LoRA", "gradient_checkpointing": True,
    "checkpoint_depth": 1, "offloading": False, "bucket_mode": False, "bypass_mode": False,
}


def _train_lora(a, node):
    """TrainLoraNode: the model trained on the latents (one batch_size slice at a time)."""
    settings = {}
    for name, default in TRAIN_WIDGETS.items():
        value = a.value(node, name, default)
        settings[name] = default if value is _UNKNOWN or value is None else value
    models = a.refs(a.link(node, "model"), "MODEL")
    if not models:
        a.stage_note("no diffusion-model loader found upstream")
    latent = a.latent(a.link(node, "latents"))
    if latent is None:
        a.stage_note("latent size unknown (the dataset's image size is not fixed by the graph): "
                     "training activations not estimated")
    else:
        latent = _replace(latent, batch=max(1, int(settings["batch_size"])))
    return Stage(kind=TRAIN, node_id=node.id, node_type=node.type, models=tuple(models), latent=latent,
                 train=settings, steps=a.number(node, "steps", 16))


# --- reference latents and latent frames of ComfyUI's own nodes (the analyzer reads them through the Pack) ------
def _reference_latent(a, node) -> list:
    """ReferenceLatent appends its latent to the conditioning's reference_latents (nodes_edit_model.py:23-26)."""
    link = a.link(node, "latent")
    shape = a.latent(link) if link is not None else None
    return [(shape.height, shape.width)] if shape is not None and not shape.media else []


def _qwen_edit_references(a, node) -> list:
    """TextEncodeQwenImageEdit / ...Plus scale each image to 1 MP and VAE-encode it as a reference latent
    (nodes_qwen.py:34-44, :80-98; Plus rounds the sides to multiples of 8)."""
    if a.link(node, "vae") is None:
        return []
    geometry, _name = a.vae_geometry(a.link(node, "vae"))
    spatial = geometry[1] if geometry else 8
    out = []
    for name in ("image", "image1", "image2", "image3"):
        size = a.image_size(a.link(node, name)) if a.link(node, name) is not None else None
        if size is None or not size.width or not size.height:
            continue
        scale = math.sqrt(1024 * 1024 / (size.width * size.height))
        w, h = round(size.width * scale), round(size.height * scale)
        if node.type == "TextEncodeQwenImageEditPlus":
            w, h = round(size.width * scale / 8) * 8, round(size.height * scale / 8) * 8
        out.append((h // spatial, w // spatial))
    return out


def _vace_frames(a, node, frames):
    if frames is not None and a.link(node, "reference_image") is not None:
        frames += 1  # nodes_wan.py: the reference image adds `trim_latent` = 1 latent frame
        a.note(f"{a.label(node)}: the reference image adds one latent frame (trimmed after sampling)")
    return frames


def _layered_frames(a, node, frames):
    return (a.number(node, "layers", 0) or 0) + 1  # nodes_qwen.py: the image and its layers, one frame each


# nodes that resize / crop every image of a batch and keep the count (comfy_extras/nodes_post_processing.py
# ResizeImageMaskNode, nodes.py ImageScale / ImageScaleBy / ImageScaleToTotalPixels, comfy_extras/nodes_images.py
# ImageCrop; comfy_extras/nodes_canny.py Canny, an edge map of each image): base.frames_bound follows a video's frame
# bound through them
KEEPS_COUNT = {"ResizeImageMaskNode", "ImageScale", "ImageScaleBy", "ImageScaleToTotalPixels", "ImageCrop", "Canny"}

PACK = Pack(
    name="comfy-core",
    keeps_count=KEEPS_COUNT,
    diffusion_loaders=DIFFUSION_LOADERS,
    checkpoint_loaders=CHECKPOINT_LOADERS,
    te_loaders=TE_LOADERS,
    simple_loaders=SIMPLE_LOADERS,
    lora_loaders=LORA_LOADERS,
    samplers=SAMPLERS,
    vae_decoders={"VAEDecode", "VAEDecodeTiled", "VAEDecodeHunyuan3D"},
    audio_decoders={"VAEDecodeAudio", "VAEDecodeAudioTiled", "LTXVAudioVAEDecode"},
    skipped_decoders=set(),
    vae_encoders={"VAEEncode", "VAEEncodeTiled", "VAEEncodeForInpaint"},
    text_encoders_no_stage={"CLIPSetLastLayer"},
    stage_kinds={"CLIPVisionEncode": "clip_vision_encode", "ImageUpscaleWithModel": UPSCALE, "TextGenerate": "text_encode",
                 "TextGenerateLTX2Prompt": "text_encode", "TrainLoraNode": TRAIN},
    latent_creators=LATENT_CREATORS,
    vae_dependent_creators=VAE_DEPENDENT_CREATORS,
    non_image_latents=NON_IMAGE_LATENTS,
    pixel_latent_conditioning=PIXEL_LATENT_CONDITIONING,
    internal_encoders=INTERNAL_ENCODERS,
    value_primitives=VALUE_PRIMITIVES,
    virtual_nodes=VIRTUAL_NODES,
    output_nodes=OUTPUT_NODE_TYPES,
    refs={"LTXAVTextEncoderLoader": _ltxav_text_encoder, "LTXVAudioVAELoader": _ltxv_audio_vae, "ComfySwitchNode": _switch_refs},
    values={"ComfySwitchNode": _switch_value, "ComfyMathExpression": _math_value,
            "StringConcatenate": _concat_value, "CustomCombo": _combo_value, "GetImageSize": _image_size_value},
    latents={**{t: _sampler_latent for t in SAMPLERS},
             "LatentUpscale": _latent_upscale, "LatentUpscaleBy": _latent_upscale_by,
             "LTXVLatentUpsampler": _ltxv_upsampler, "RepeatLatentBatch": _repeat_latent,
             "LatentBatch": _latent_batch, "LatentFromBatch": _latent_from_batch,
             "TrimVideoLatent": _trim_video_latent, "LTXVConcatAVLatent": _ltxv_concat_av,
             "LTXVAudioVAEEncode": _ltxv_audio_encode,
             "LTXVSeparateAVLatent": _ltxv_separate_av, "SVD_img2vid_Conditioning": _svd_img2vid,
             "EmptyAceStepLatentAudio": _ace_latent, "EmptyLatentHunyuan3Dv2": _hunyuan3d_latent,
             "EmptyAceStep1.5LatentAudio": _ace15_latent,
             "LTXVEmptyLatentAudio": _ltxv_audio_latent,
             "ComfySwitchNode": _switch_latent},
    images=IMAGES,
    sigmas={"BasicScheduler": _basic_scheduler, "SplitSigmas": _split_sigmas,
            "SplitSigmasDenoise": _split_sigmas_denoise, "ManualSigmas": _manual_sigmas},
    guiders={"BasicGuider": _basic_guider, "CFGGuider": _cfg_guider, "DualCFGGuider": _dual_cfg_guider},
    cond_references={"ReferenceLatent": _reference_latent, "TextEncodeQwenImageEdit": _qwen_edit_references,
                     "TextEncodeQwenImageEditPlus": _qwen_edit_references},
    latent_frames={"WanVaceToVideo": _vace_frames, "EmptyQwenImageLayeredLatentImage": _layered_frames,
                   "EmptyQwenImageLayeredLatent": _layered_frames},
    # model.clone(disable_dynamic=True): a model they feed takes the legacy path even under Dynamic VRAM
    disables_dynamic={"TorchCompileModel": "TorchCompileModel clones the model with disable_dynamic=True "
                                           "(comfy_extras/nodes_torch_compile.py:28 in 0.18.2 and 0.33.0)"},
    encodes_image_as_given={"SVD_img2vid_Conditioning", "LTXVImgToVideo", "LTXVImgToVideoInplace", "LTXVAddGuide"},
    stages={"KSampler": _ksampler, "KSamplerAdvanced": _ksampler_advanced, "SamplerCustom": _sampler_custom,
            "SamplerCustomAdvanced": _sampler_custom_advanced, "VAEDecodeTiled": _decode_tiled,
            "VAEDecodeAudioTiled": _decode_audio_tiled,
            "VAEDecodeHunyuan3D": _decode_hunyuan3d, "ImageUpscaleWithModel": _upscale_with_model,
            "VAEEncodeTiled": _encode_tiled, "TextGenerate": _text_generate, "TextGenerateLTX2Prompt": _text_generate,
            "TrainLoraNode": _train_lora},
    # StyleModelApply (nodes.py StyleModelApply.apply_stylemodel): the style model stays where load_style_model
    # built it, on the CPU (sd.py:1495-1513 StyleModel(model) defaults to device "cpu", never moved), and runs
    # there on the CLIP vision output: no GPU memory
    # ConditioningLoader (newer ComfyUI, comfy_extras/nodes_cond.py): a saved conditioning tensor from the
    # embeddings folder, loaded on the CPU and handed to the sampler as is; no model, no GPU work
    handled={"StyleModelApply", "ConditioningLoader"},
    input_types={"ConditioningLoader": {"conditioning_name": "COMBO"}},
    output_types={"ConditioningLoader": ["CONDITIONING"]},
    widgets={"ConditioningLoader": ["conditioning_name"]},
)
