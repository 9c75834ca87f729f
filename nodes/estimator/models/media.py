"""The pixel size of an input image from its header (PNG, JPEG, WebP, GIF), without decoding it,
and of an input video (models/video_header.py).

Used for the images and videos a workflow loads (LoadImage, LoadVideo, VideoHelperSuite): inside
ComfyUI from its input folder, on the command line from ``--input-dir``. Reads at most MAX_READ
bytes of an image's head; anything it cannot parse is None.
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple

from .video_header import MAX_BOXES, MAX_GIF, gif_info, video_info

MAX_READ = 256 * 1024  # JPEG SOF markers come after the EXIF / ICC blocks; 256 KiB covers real files


def image_size(path: str) -> tuple[int, int] | None:
    """(width, height) from the file's header, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_READ)
    except OSError:
        return None
    for parse in (_png, _gif, _webp, _jpeg):
        try:
            size = parse(head)
        except (struct.error, IndexError, ValueError):
            size = None
        if size and 0 < size[0] <= 1 << 16 and 0 < size[1] <= 1 << 16:
            return size
    return None


def _png(b: bytes):
    if b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR":
        return struct.unpack(">II", b[16:24])
    return None


def _gif(b: bytes):
    if b[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", b[6:10])
    return None


def _webp(b: bytes):
    if b[:4] != b"RIFF" or b[8:12] != b"WEBP":
        return None
    chunk = b[12:16]
    if chunk == b"VP8 ":  # lossy: frame header after a 3-byte tag and the start code 9d 01 2a
        w, h = struct.unpack("<HH", b[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14-bit width-1 and height-1 after the 0x2f signature
        bits = int.from_bytes(b[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit canvas width-1 / height-1
        return int.from_bytes(b[24:27], "little") + 1, int.from_bytes(b[27:30], "little") + 1
    return None


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg(b: bytes):
    if b[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 4 <= len(b):
        if b[i] != 0xFF:
            i += 1
            continue
        marker = b[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", b[i + 2:i + 4])[0]
        if marker in _SOF:
            h, w = struct.unpack(">HH", b[i + 5:i + 9])
            return w, h
        i += 2 + length
    return None


class Media(NamedTuple):
    """A loaded file as ComfyUI decodes it: frames 1 for a still image, the animation's or video's
    frame count otherwise (None where the header does not state it); fps None for a still image."""
    width: int
    height: int
    frames: int | None
    fps: float | None = None


def animation(path: str) -> tuple[int, float | None]:
    """(frames, fps) ComfyUI's LoadImage makes of the image (0.33.0 nodes.py:1760-1790 decodes every frame of an
    animated GIF or WebP): the animation's frame count and rate (GIF frame delays), (1, None) for a still image."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            if head[:6] in (b"GIF87a", b"GIF89a"):
                f.seek(0)
                info = gif_info(f.read(MAX_GIF + 1))
                return (info.frames or 1, info.fps) if info else (1, None)
            if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
                return _webp_frames(f) or 1, None
    except (OSError, struct.error, IndexError, ValueError):
        pass
    return 1, None


def _webp_frames(f) -> int:
    """ANMF chunks of an animated WebP (RIFF chunks walked by their sizes, at most MAX_BOXES)."""
    pos, frames = 12, 0
    for _ in range(MAX_BOXES):
        f.seek(pos)
        hdr = f.read(8)
        if len(hdr) < 8:
            break
        size = struct.unpack("<I", hdr[4:8])[0]
        frames += hdr[:4] == b"ANMF"
        pos += 8 + size + (size & 1)
    return frames


def media_of(path: str) -> Media | None:
    """An input file as ComfyUI would load it: a still or animated image, else a video."""
    size = image_size(path)
    if size is not None:
        return Media(size[0], size[1], *animation(path))
    info = video_info(path)
    return Media(info.width, info.height, info.frames, info.fps) if info else None


MAX_CACHED = 256  # files one reader remembers (a workflow loads a handful)


def input_reader(root: str):
    """A reader for graph.base.INPUT_MEDIA confined to ``root``: (name) -> Media or None.
    Names with ``..`` or absolute paths that leave ``root`` are refused. Each file's header is read once per reader
    (one reader per estimate: the graph asks for a loaded file's size at every node that uses it)."""
    root = os.path.realpath(root)
    seen: dict = {}

    def read(name: str):
        if not isinstance(name, str) or not name or "\x00" in name:
            return None
        clean = name.split(" [", 1)[0]  # ComfyUI's annotated names: "x.png [input]"
        path = os.path.realpath(os.path.join(root, clean))
        if os.path.commonpath([root, path]) != root or not os.path.isfile(path):
            return None
        if path not in seen:
            if len(seen) >= MAX_CACHED:
                seen.clear()
            seen[path] = media_of(path)
        return seen[path]

    return read
