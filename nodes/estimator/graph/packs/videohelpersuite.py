"""Kosinkadink/ComfyUI-VideoHelperSuite: loading and saving videos.

A loaded video's frame count and size are fixed by the graph only when the node says them:
``custom_width`` / ``custom_height`` (force_size) and ``frame_load_cap``; otherwise they depend on
the file and are left unknown (said so). VHS saves widgets_values as a dict, so names are known.
"""
from __future__ import annotations

from ..base import _ImageSize, _UNKNOWN
from . import Pack

LOADERS = {"VHS_LoadVideo", "VHS_LoadVideoPath", "VHS_LoadVideoFFmpeg", "VHS_LoadVideoFFmpegPath"}


def _load_video(a, node, link, depth):
    if link.slot != 0:
        return None
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
    output_nodes={"VHS_VideoCombine"},
    handled=LOADERS | {"VHS_VideoInfo", "VHS_VideoInfoLoaded", "VHS_VideoInfoSource", "VHS_SelectEveryNthImage",
                       "VHS_LoadAudio", "VHS_LoadAudioUpload", "VHS_LoadImages", "VHS_LoadImagesPath"},
    images={**{t: _load_video for t in LOADERS}, "VHS_SelectEveryNthImage": _every_nth},
    values={t: _frame_count for t in LOADERS},
    vae_decoders={"VHS_VAEDecodeBatched"},
    vae_encoders={"VHS_VAEEncodeBatched"},
)
