"""Kosinkadink/ComfyUI-VideoHelperSuite: loading and saving videos.

A loaded video's frames follow load_video_nodes.py (Kosinkadink/ComfyUI-VideoHelperSuite@4ee72c0): the file's own
size and frame count come from its header when the caller can read it (INPUT_MEDIA: ComfyUI's input folder, or
--input-dir; never a path outside it), then force_rate, skip_first_frames / start_time, select_every_nth,
frame_load_cap, custom_width / custom_height and the format's rounding as the loader applies them. Without the
file, the graph fixes them only when custom_width, custom_height and frame_load_cap are all set (the cap is then
the count: at most that many frames); otherwise they stay unknown (said so). VHS saves widgets_values as a dict,
so names are known.
"""
from __future__ import annotations

import math

from ..base import INPUT_MEDIA, _ImageSize, _UNKNOWN
from . import Pack

LOADERS = {"VHS_LoadVideo", "VHS_LoadVideoPath", "VHS_LoadVideoFFmpeg", "VHS_LoadVideoFFmpegPath"}
FFMPEG_LOADERS = {"VHS_LoadVideoFFmpeg", "VHS_LoadVideoFFmpegPath"}
# load_video_nodes.py:24-32 VHSLoadFormats: the format's size rounding ('dim'[0]) and frame rule ('frames':
# count = (n - mod) // div * div + mod, :388-395). The widget's default is 'AnimateDiff' (get_load_formats).
FORMATS = {"None": (1, None), "AnimateDiff": (8, None), "Mochi": (16, (6, 1)), "LTXV": (32, (8, 1)),
           "Hunyuan": (16, (4, 1)), "Cosmos": (16, (8, 1)), "Wan": (8, (4, 1))}


def target_size(width, height, custom_width, custom_height, ratio):
    """load_video_nodes.py:59-75 target_size: one custom side keeps the aspect ratio; both rounded to ``ratio``."""
    if custom_width and custom_height:
        width, height = custom_width, custom_height
    elif custom_width:
        width, height = custom_width, height * custom_width / width
    elif custom_height:
        width, height = width * custom_height / height, custom_height
    return int(width / ratio + 0.5) * ratio, int(height / ratio + 0.5) * ratio


def _from_file(a, node, media):
    """The loaded frames of ``media`` (the file's header) under the node's widgets."""
    rate = a.number(node, "force_rate", 0, False) or 0
    cap = a.number(node, "frame_load_cap", 0) or 0
    cw, ch = a.number(node, "custom_width", 0) or 0, a.number(node, "custom_height", 0) or 0
    fmt = a.value(node, "format")
    ratio, frames_rule = FORMATS.get(fmt if isinstance(fmt, str) else "AnimateDiff", (1, None))
    if a.link(node, "vae") is not None:
        ratio = 8  # load_video (:322-323): getattr(vae, "downscale_ratio", 8)
    if media.frames is None or (rate and not media.fps):
        return None
    if node.type in FFMPEG_LOADERS:  # ffmpeg_frame_generator (:170-250): -ss start_time, fps filter, -frames:v cap
        start = a.number(node, "start_time", 0, False) or 0
        seconds = media.frames / media.fps if media.fps else None
        n = media.frames if not start and not rate else (
            int(max(0.0, seconds - start) * (rate or media.fps)) if seconds else None)
        if n is None:
            return None
        width, height = (target_size(media.width, media.height, cw, ch, ratio) if cw or ch
                         else (media.width, media.height))
    else:  # cv_frame_generator (:77-168): resample to force_rate, skip, every nth, cap; always rounded
        every = max(1, a.number(node, "select_every_nth", 1) or 1)
        skip = max(0, a.number(node, "skip_first_frames", 0) or 0)
        n = int(media.frames / media.fps * rate) if rate else media.frames
        n = math.ceil(max(0, n - skip) / every)
        width, height = target_size(media.width, media.height, cw, ch, ratio)
    if cap:
        n = min(n, cap)
    if frames_rule and n:
        div, mod = frames_rule
        n = (n - mod) // div * div + mod
    return _ImageSize(width, height, n) if n > 0 and width > 0 and height > 0 else None


def _load_video(a, node, link, depth):
    if link.slot != 0:
        return None
    reader, name = INPUT_MEDIA.get(), a.value(node, "video")
    media = reader(name) if reader is not None and isinstance(name, str) else None
    if media is not None:
        size = _from_file(a, node, media)
        if size is not None:
            return size
    width, height = a.number(node, "custom_width", 0), a.number(node, "custom_height", 0)
    cap = a.number(node, "frame_load_cap", 0)
    every = a.number(node, "select_every_nth", 1) or 1
    if width and height and cap:
        return _ImageSize(width, height, max(1, cap // every))
    a.note(f"{a.label(node)}: the video's size / frame count come from the file (set custom_width, "
           f"custom_height and frame_load_cap to fix them); shapes that depend on it are left unknown")
    return None


def _frame_count(a, node, link, depth, sub):
    if link.slot != 1:
        return _UNKNOWN
    size = _load_video(a, node, type(link)(link.node, 0), depth)
    return size.batch if size is not None else _UNKNOWN


def _every_nth(a, node, link, depth):
    src = a.image_size(a.link(node, "images"), depth + 1)
    n = a.number(node, "select_every_nth", 1) or 1
    return _ImageSize(src.width, src.height, max(1, -(-src.batch // n)), src.exact) if src else None


PACK = Pack(
    name="ComfyUI-VideoHelperSuite",
    # load_video_nodes.py:115-116 / :162 (cv2) and :244-246 (ffmpeg): at most frame_load_cap frames when it is > 0
    frame_caps={t: "frame_load_cap" for t in LOADERS},
    output_nodes={"VHS_VideoCombine"},
    handled=LOADERS | {"VHS_VideoInfo", "VHS_VideoInfoLoaded", "VHS_VideoInfoSource", "VHS_SelectEveryNthImage",
                       "VHS_LoadAudio", "VHS_LoadAudioUpload", "VHS_LoadImages", "VHS_LoadImagesPath"},
    images={**{t: _load_video for t in LOADERS}, "VHS_SelectEveryNthImage": _every_nth},
    values={t: _frame_count for t in LOADERS},
    vae_decoders={"VHS_VAEDecodeBatched"},
    vae_encoders={"VHS_VAEEncodeBatched"},
)
