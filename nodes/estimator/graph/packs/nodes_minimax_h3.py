"""ComfyUI 0.33.0's MiniMax H3 nodes (comfy_extras/nodes_minimax_h3.py): the audio-video latent they make, the
images / clips / audio they VAE-encode inside, and the prompt they encode.

The latent (nodes_minimax_h3.py:81-87, _empty_av_latent) is a NestedTensor pair: the video [1, 24, T, H/16, W/16]
with T = 5k+2 latent frames for the 17k+5 pixel frames `length` snaps up to (:34-47), and the audio
[1, 32, 2, round(frames / 24 x 40)]. It is read as the video LatentShape carrying the audio one (LatentShape.audio),
as LTX-2's LTXVConcatAVLatent is: VAEDecode decodes the video stream, VAEDecodeAudio the audio stream
(nodes.py:335-336, comfy_extras/nodes_audio.py:100-101).
"""
from __future__ import annotations

import math

from ...families.minimax import video_latent_frames
from ...workload import TEXT_ENCODE, VAE_ENCODE, LatentShape, Stage
from ..base import _Link, _replace
from . import Pack

FPS, AUDIO_LATENT_FPS = 24, 40  # nodes_minimax_h3.py:30-31
CANVAS_MULTIPLE, BASE_SHORT_EDGE, MAX_PIXELS, REF_IMAGE_SHORT_EDGE = 32, 768, 768 * 1344, 2048  # :26-29
SPATIAL = 16  # latent_formats.MiniMaxH3Video spacial_downscale_ratio (latent_formats.py:624)
VIDEO_CHANNELS, AUDIO_CHANNELS = 24, 32


def align_frame_count(n: int) -> int:
    """nodes_minimax_h3.py:34-37: up to the next 17k+5 frame count."""
    return n + (5 - n % 17) % 17


def temporal_shape(length: int) -> tuple[int, int, int]:
    """nodes_minimax_h3.py:44-47: (pixel frames, video latent frames, audio latent frames)."""
    frames = align_frame_count(max(5, length))
    return frames, video_latent_frames(frames), round(frames / FPS * AUDIO_LATENT_FPS)


def av_latent(a, node, width: int, height: int, length: int) -> LatentShape:
    frames, latent_t, audio_t = temporal_shape(length)
    audio = LatentShape(batch=1, channels=AUDIO_CHANNELS, height=2, width=audio_t, spatial_compression=1, media="audio",
                        source_node=node.id, source_type=node.type)
    return LatentShape(batch=1, channels=VIDEO_CHANNELS, height=height // SPATIAL, width=width // SPATIAL,
                       frames=latent_t, pixel_height=height, pixel_width=width, pixel_frames=frames,
                       spatial_compression=SPATIAL, temporal_compression=4, source_node=node.id, source_type=node.type,
                       audio=audio)


def _av_latent(a, node, slot, depth):
    """EmptyMiniMaxH3LatentAV (slot 0), MiniMaxH3ImageToVideo / MiniMaxH3ReferenceToVideo (slot 1)."""
    if node.type != "EmptyMiniMaxH3LatentAV" and slot != 1:
        return None
    for name in ("width", "height", "length"):
        a.check_widget_range(node, name)
    width, height, length = a.number(node, "width", 1344), a.number(node, "height", 768), a.number(node, "length", 124)
    if None in (width, height, length):
        return None
    return av_latent(a, node, width, height, length)


def _pixels_shape(node, width: int, height: int, frames: int) -> LatentShape:
    """What the video VAE encodes: `frames` pixel frames at width x height (a LatentShape in the VAE's units)."""
    return LatentShape(batch=1, channels=VIDEO_CHANNELS, height=max(1, height // SPATIAL),
                       width=max(1, width // SPATIAL),
                       frames=video_latent_frames(frames) if frames > 1 else 1, pixel_height=height, pixel_width=width,
                       pixel_frames=frames, spatial_compression=SPATIAL, temporal_compression=4 if frames > 1 else None,
                       source_node=node.id, source_type=node.type)


def _vae_refs(a, node, name: str):
    link = node.inputs.get(name)
    return tuple(a.refs(link, "VAE")) if isinstance(link, _Link) else ()


def _encode(a, node, vae_input: str, latent: LatentShape | None, what: str) -> Stage:
    models = _vae_refs(a, node, vae_input)
    if not models:
        a.stage_note(f"no VAE loader found upstream of '{vae_input}'")
    if latent is None:
        a.stage_note(f"{what}: its length is not fixed by the graph")
    return Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type, models=models, latent=latent,
                 title=f"VAE encode ({what})")


def _audio_encode(a, node, what: str) -> Stage:
    """A reference / guide audio the audio VAE encodes whole (nodes_minimax_h3.py:70-78): its length is the
    loaded file's, unknown before running."""
    return _encode(a, node, "audio_vae", None, what)


def _guide_frames(batch: int | None) -> int:
    """nodes_minimax_h3.py:199-206: under 5 images one frame, else down to the nearest 17k+5."""
    n = batch or 1
    if n < 5:
        return 1
    while n % 17 != 5:
        n -= 1
    return n


def _text(a, node) -> Stage:
    """The prompt (with the keyframe / reference images' vision tokens) through the Qwen3-VL encoder; the VAE
    encodes are their own stages here."""
    stage = a.text_stage(node)
    return _replace(stage, models=tuple(m for m in stage.models if m.role != "vae"))


def _i2v_frames(a, node) -> list[tuple[str, LatentShape | None]]:
    """MiniMaxH3ImageToVideo's keyframes (nodes_minimax_h3.py:139-158): first_frame / last_frame, each one image
    resized to width x height and VAE-encoded."""
    width, height = a.number(node, "width", 1344), a.number(node, "height", 768)
    return [(name, _pixels_shape(node, width, height, 1) if width and height else None)
            for name in ("first_frame", "last_frame") if isinstance(node.inputs.get(name), _Link)]


def _image_to_video(a, node):
    """MiniMaxH3ImageToVideo (nodes_minimax_h3.py:112-159): encodes the prompt, then VAE-encodes its keyframes."""
    return [_text(a, node)] + [_encode(a, node, "vae", latent, name) for name, latent in _i2v_frames(a, node)]


def _ref_image_size(a, link, width: int, height: int, mode) -> tuple[int, int] | None:
    """nodes_minimax_h3.py:295-303: 'match' scales a reference (down only, aspect kept) to the target's pixel
    area, 'max' to a 2048 px short edge; both round to 32."""
    size = a.image_size(link)
    if size is None or not size.width or not size.height:
        return None
    w, h = size.width, size.height
    if mode == "max":
        scale = min(1.0, REF_IMAGE_SHORT_EDGE / min(w, h))
    else:
        scale = min(1.0, math.sqrt((width * height) / (w * h)))
    return (max(CANVAS_MULTIPLE, round(w * scale / CANVAS_MULTIPLE) * CANVAS_MULTIPLE),
            max(CANVAS_MULTIPLE, round(h * scale / CANVAS_MULTIPLE) * CANVAS_MULTIPLE))


def _adapt_canvas(width: int, height: int) -> tuple[int, int]:
    """nodes_minimax_h3.py:50-62: 768-short-edge canvas, 768 x 1344 area cap, each side rounded to 32."""
    ratio = width / height
    if ratio >= 1.0:
        nom_w, nom_h = BASE_SHORT_EDGE * ratio, BASE_SHORT_EDGE
    else:
        nom_w, nom_h = BASE_SHORT_EDGE, BASE_SHORT_EDGE / ratio
    if nom_w * nom_h > MAX_PIXELS:
        s = math.sqrt(MAX_PIXELS / (nom_w * nom_h))
        nom_w, nom_h = nom_w * s, nom_h * s
    return (max(CANVAS_MULTIPLE, round(nom_w / CANVAS_MULTIPLE) * CANVAS_MULTIPLE),
            max(CANVAS_MULTIPLE, round(nom_h / CANVAS_MULTIPLE) * CANVAS_MULTIPLE))


def _linked(node, group: str) -> list[tuple[str, _Link]]:
    return [(k, v) for k, v in node.inputs.items() if k.startswith(group + ".") and isinstance(v, _Link)]


def _r2v_visuals(a, node) -> list[tuple[str, LatentShape | None]]:
    """MiniMaxH3ReferenceToVideo's visual references (nodes_minimax_h3.py:290-337): each reference image one frame
    at its 'match' / 'max' size, each reference video on the canvas of :315-318, cut to the target's frame count
    and down to 17k+5 frames."""
    width, height, length = a.number(node, "width", 1344), a.number(node, "height", 768), a.number(node, "length", 124)
    mode = a.value(node, "ref_image_size")
    out = []
    for name, link in _linked(node, "ref_images"):
        size = _ref_image_size(a, link, width, height, mode) if width and height else None
        out.append((name.split(".")[-1], _pixels_shape(node, *size, 1) if size else None))
    frame_count = temporal_shape(length)[0] if length else None
    for name, link in _linked(node, "ref_videos"):
        size = a.image_size(link)
        latent = None
        if size is not None and size.width and size.height and size.batch and frame_count:
            cw, ch = _adapt_canvas(size.width, size.height)
            if size.width * size.height < cw * ch:
                cw = max(CANVAS_MULTIPLE, round(size.width / CANVAS_MULTIPLE) * CANVAS_MULTIPLE)
                ch = max(CANVAS_MULTIPLE, round(size.height / CANVAS_MULTIPLE) * CANVAS_MULTIPLE)
            n = min(size.batch, frame_count)
            latent = _pixels_shape(node, cw, ch, _guide_frames(n)) if n >= 5 else None
        out.append((name.split(".")[-1], latent))
    return out


def _reference_to_video(a, node):
    """MiniMaxH3ReferenceToVideo (nodes_minimax_h3.py:239-355): encodes the prompt with its references, VAE-encodes
    each visual reference and the audio VAE each soundtrack / reference audio."""
    stages = [_text(a, node)] + [_encode(a, node, "vae", latent, name) for name, latent in _r2v_visuals(a, node)]
    for group in ("ref_video_audios", "ref_audios"):
        for name, _link in _linked(node, group):
            stages.append(_audio_encode(a, node, name.split(".")[-1]))
    return stages


def _guide_image(a, node) -> LatentShape | None:
    """MiniMaxH3AddGuide's image (nodes_minimax_h3.py:196-219): one frame, or the clip cut down to 17k+5 frames,
    resized to the target video's size."""
    target = a.latent(a.link(node, "latent"))
    if target is None or not target.pixel_width or not target.pixel_height:
        return None
    size = a.image_size(a.link(node, "image"))
    return _pixels_shape(node, target.pixel_width, target.pixel_height, _guide_frames(size.batch if size else 1))


def _add_guide(a, node):
    """MiniMaxH3AddGuide (nodes_minimax_h3.py:162-236): the video VAE encodes its image, the audio VAE its audio."""
    stages = []
    if isinstance(node.inputs.get("image"), _Link):
        stages.append(_encode(a, node, "vae", _guide_image(a, node), "image"))
    if isinstance(node.inputs.get("audio"), _Link):
        stages.append(_audio_encode(a, node, "audio"))
    return stages


# --- what the DiT attends over beside the target: the keyframe / reference latents the conditioning carries ---
# model_base.py:2183-2192 puts them in the payload; ldm/minimax/model.py:340-420 packs each latent frame's
# (H/32) x (W/32) rows beside the target's (Stage.reference_latents: one (rows, columns) per latent frame). Their
# audio rows (a guide's or a reference's soundtrack, 2 per audio latent frame) are not counted.
def _frames_of(latents) -> list[tuple[int, int]]:
    return [(lat.height, lat.width) for _name, lat in latents if lat is not None for _ in range(lat.frames or 1)]


def _i2v_references(a, node):
    return _frames_of(_i2v_frames(a, node))


def _r2v_references(a, node):
    return _frames_of(_r2v_visuals(a, node))


def _guide_references(a, node):
    return _frames_of([("image", _guide_image(a, node))]) if isinstance(node.inputs.get("image"), _Link) else []


PACK = Pack(
    name="nodes_minimax_h3",
    latents={"EmptyMiniMaxH3LatentAV": _av_latent, "MiniMaxH3ImageToVideo": _av_latent,
             "MiniMaxH3ReferenceToVideo": _av_latent},
    stage_kinds={"MiniMaxH3ImageToVideo": TEXT_ENCODE, "MiniMaxH3ReferenceToVideo": TEXT_ENCODE,
                 "MiniMaxH3AddGuide": VAE_ENCODE},
    stages={"MiniMaxH3ImageToVideo": _image_to_video, "MiniMaxH3ReferenceToVideo": _reference_to_video,
            "MiniMaxH3AddGuide": _add_guide},
    cond_references={"MiniMaxH3ImageToVideo": _i2v_references, "MiniMaxH3ReferenceToVideo": _r2v_references,
                     "MiniMaxH3AddGuide": _guide_references},
    handled={"MiniMaxH3SigmaShift"},
)
