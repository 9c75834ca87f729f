"""A video's frame size, frame count and rate from its container header, without decoding it.

Read for the videos a workflow loads (LoadVideo, VideoHelperSuite's loaders): inside ComfyUI from
its input folder, on the command line from ``--input-dir``. What ComfyUI 0.33 itself reports:

- the size is the decoded frame's (the sample description, not the display size), turned by a
  90 / 270 degree display rotation (comfy_api/latest/_input_impl/video_types.py:500-502 rotates
  every frame by ``frame.rotation``);
- the frame count is every frame in the stream (get_components decodes to the end, :433-503);
  MP4 / MOV state it (``stsz``); Matroska / WebM state a duration and a frame period, so the count
  is their quotient, as get_frame_count's second rule (:322-334).

Formats: ISO BMFF (MP4, MOV, M4V; fragmented files too), Matroska / WebM, GIF. Reading is bounded:
at most MAX_BOXES top-level boxes, a ``moov`` of at most MAX_MOOV bytes, MAX_EBML bytes of a
Matroska head, MAX_GIF bytes of a GIF. Anything it cannot parse is None, never a guess.
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple

MAX_BOXES = 20_000
MAX_MOOV = 64 * 1024 * 1024
MAX_EBML = 4 * 1024 * 1024
MAX_GIF = 64 * 1024 * 1024
MAX_SIDE = 1 << 16
MAX_FRAMES = 10_000_000  # 46 hours at 60 fps: a longer count is a damaged header
MAX_FPS = 10_000.0


class VideoInfo(NamedTuple):
    """Frames as ComfyUI decodes them; ``frames`` / ``fps`` are None when the header does not state them."""
    width: int
    height: int
    frames: int | None
    fps: float | None


def video_info(path: str) -> VideoInfo | None:
    """The video at ``path`` as ComfyUI would decode it, or None when its header cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            f.seek(0)
            if head[:4] == b"\x1a\x45\xdf\xa3":
                info = _matroska(f.read(MAX_EBML))
            elif head[:6] in (b"GIF87a", b"GIF89a"):
                info = gif_info(f.read(MAX_GIF + 1))
            elif head[4:8] in (b"ftyp", b"moov", b"mdat", b"free", b"wide", b"skip", b"pnot"):
                info = _iso_bmff(f, os.fstat(f.fileno()).st_size)
            else:
                info = None
    except (OSError, struct.error, IndexError, ValueError, OverflowError):
        return None
    if info is None or not (0 < info.width <= MAX_SIDE and 0 < info.height <= MAX_SIDE):
        return None
    # a damaged duration or frame rate (a negative or absurd count) is not stated: None, never a made-up length
    frames = info.frames if isinstance(info.frames, int) and 0 < info.frames <= MAX_FRAMES else None
    fps = info.fps if isinstance(info.fps, (int, float)) and 0 < info.fps <= MAX_FPS else None
    return info._replace(frames=frames, fps=fps)


# -- ISO BMFF (MP4 / MOV) ------------------------------------------------------------------------

def _boxes(buf: bytes, start: int = 0, end: int | None = None):
    """(type, payload start, payload end) of the boxes in buf[start:end]."""
    end = len(buf) if end is None else end
    i, n = start, 0
    while i + 8 <= end and n < MAX_BOXES:
        size, kind = struct.unpack(">I4s", buf[i:i + 8])
        head = 8
        if size == 1:
            size = struct.unpack(">Q", buf[i + 8:i + 16])[0]
            head = 16
        elif size == 0:
            size = end - i
        if size < head or i + size > end:
            return
        yield kind, i + head, i + size
        i += size
        n += 1


def _child(buf, start, end, kind):
    return next(((s, e) for k, s, e in _boxes(buf, start, end) if k == kind), None)


def _iso_bmff(f, file_size: int) -> VideoInfo | None:
    moov, moof_samples, pos = None, {}, 0
    for _ in range(MAX_BOXES):
        if pos + 8 > file_size:
            break
        f.seek(pos)
        hdr = f.read(16)
        if len(hdr) < 8:
            break
        size, kind = struct.unpack(">I4s", hdr[:8])
        head = 8
        if size == 1:
            size, head = struct.unpack(">Q", hdr[8:16])[0], 16
        elif size == 0:
            size = file_size - pos
        if size < head:
            break
        if kind == b"moov":
            if size > MAX_MOOV:
                return None
            f.seek(pos + head)
            moov = f.read(size - head)
        elif kind == b"moof" and size <= MAX_MOOV:
            f.seek(pos + head)
            _count_fragment(f.read(size - head), moof_samples)
        pos += size
    if moov is None:
        return None
    for kind, s, e in _boxes(moov):
        if kind == b"trak":
            info = _video_track(moov, s, e, moof_samples)
            if info is not None:
                return info
    return None


def _video_track(buf, s, e, moof_samples) -> VideoInfo | None:
    mdia = _child(buf, s, e, b"mdia")
    tkhd = _child(buf, s, e, b"tkhd")
    if mdia is None or tkhd is None:
        return None
    hdlr = _child(buf, *mdia, b"hdlr")
    if hdlr is None or buf[hdlr[0] + 8:hdlr[0] + 12] != b"vide":
        return None
    version = buf[tkhd[0]]
    track_id = struct.unpack(">I", buf[tkhd[0] + (20 if version == 1 else 12):][:4])[0]
    # after the times, id and duration (36 / 24 bytes): 16 bytes of layer, group, volume, then the 3x3 matrix
    m = struct.unpack(">9i", buf[tkhd[0] + (36 if version == 1 else 24) + 16:][:36])
    turned = m[0] == 0 and m[4] == 0 and abs(m[1]) == 0x10000 and abs(m[3]) == 0x10000  # 90 or 270 degrees
    mdhd = _child(buf, *mdia, b"mdhd")
    minf = _child(buf, *mdia, b"minf")
    stbl = _child(buf, *minf, b"stbl") if minf else None
    stsd = _child(buf, *stbl, b"stsd") if stbl else None
    if mdhd is None or stsd is None:
        return None
    # stsd: full box (4) + entry count (4), then the first sample entry: size, format, 6 reserved,
    # data reference index (2), 16 bytes pre-defined / reserved, width (2), height (2)
    entry = stsd[0] + 8
    width, height = struct.unpack(">HH", buf[entry + 32:entry + 36])
    if turned:
        width, height = height, width
    v = buf[mdhd[0]]
    if v == 1:
        timescale, duration = struct.unpack(">IQ", buf[mdhd[0] + 20:mdhd[0] + 32])
    else:
        timescale, duration = struct.unpack(">II", buf[mdhd[0] + 12:mdhd[0] + 20])
    frames = None
    stsz = _child(buf, *stbl, b"stsz")
    if stsz is not None:
        frames = struct.unpack(">I", buf[stsz[0] + 8:stsz[0] + 12])[0] or None
    if frames is None and moof_samples.get(track_id):
        frames, duration = moof_samples[track_id]
    fps = frames / (duration / timescale) if frames and duration and timescale else None
    return VideoInfo(width, height, frames, fps)


def _count_fragment(buf, totals):
    """Add one ``moof``'s samples and duration (in the track's timescale) to ``totals`` by track id."""
    for kind, s, e in _boxes(buf):
        if kind != b"traf":
            continue
        tfhd = _child(buf, s, e, b"tfhd")
        if tfhd is None:
            continue
        flags = int.from_bytes(buf[tfhd[0] + 1:tfhd[0] + 4], "big")
        track = struct.unpack(">I", buf[tfhd[0] + 4:tfhd[0] + 8])[0]
        at = tfhd[0] + 8 + (8 if flags & 0x1 else 0) + (4 if flags & 0x2 else 0)
        default_duration = struct.unpack(">I", buf[at:at + 4])[0] if flags & 0x8 else 0
        samples = duration = 0
        for k, ts, te in _boxes(buf, s, e):
            if k != b"trun":
                continue
            tflags = int.from_bytes(buf[ts + 1:ts + 4], "big")
            count = struct.unpack(">I", buf[ts + 4:ts + 8])[0]
            samples += count
            if tflags & 0x100:  # per-sample durations
                at = ts + 8 + (4 if tflags & 0x1 else 0) + (4 if tflags & 0x4 else 0)
                step = 4 * sum(1 for bit in (0x100, 0x200, 0x400, 0x800) if tflags & bit)
                duration += sum(struct.unpack(">I", buf[at + i * step:at + i * step + 4])[0]
                                for i in range(min(count, (te - at) // max(step, 1))))
            else:
                duration += count * default_duration
        prev = totals.get(track, (0, 0))
        totals[track] = (prev[0] + samples, prev[1] + duration)


# -- Matroska / WebM ----------------------------------------------------------------------------

_SEGMENT, _INFO, _TRACKS, _CLUSTER = 0x18538067, 0x1549A966, 0x1654AE6B, 0x1F43B675
_TRACK_ENTRY, _TRACK_TYPE, _DEFAULT_DURATION, _VIDEO = 0xAE, 0x83, 0x23E383, 0xE0
_PIXEL_W, _PIXEL_H, _TIMESTAMP_SCALE, _DURATION = 0xB0, 0xBA, 0x2AD7B1, 0x4489


def _vint(b, i, keep_marker):
    first = b[i]
    length = 1
    while length <= 8 and not first & (0x80 >> (length - 1)):
        length += 1
    if length > 8:
        raise ValueError("bad EBML length")
    value = first if keep_marker else first & (0xFF >> length)
    for k in range(1, length):
        value = (value << 8) | b[i + k]
    unknown = not keep_marker and value == (1 << (7 * length)) - 1
    return value, i + length, unknown


def _elements(b, start, end):
    i, n = start, 0
    while i < end and n < MAX_BOXES:
        eid, i, _ = _vint(b, i, True)
        size, i, unknown = _vint(b, i, False)
        stop = end if unknown else min(end, i + size)
        yield eid, i, stop, unknown
        if unknown:
            return
        i = stop
        n += 1


def _uint(b, s, e):
    return int.from_bytes(b[s:e], "big")


def _matroska(b: bytes) -> VideoInfo | None:
    segment = next(((s, e) for eid, s, e, _ in _elements(b, 0, len(b)) if eid == _SEGMENT), None)
    if segment is None:
        return None
    scale, duration, video = 1_000_000, None, None
    for eid, s, e, unknown in _elements(b, *segment):
        if eid == _CLUSTER:
            break
        if eid == _INFO:
            for cid, cs, ce, _ in _elements(b, s, e):
                if cid == _TIMESTAMP_SCALE:
                    scale = _uint(b, cs, ce) or scale
                elif cid == _DURATION and ce - cs in (4, 8):
                    duration = struct.unpack(">f" if ce - cs == 4 else ">d", b[cs:ce])[0]
        elif eid == _TRACKS and video is None:
            for tid, ts, te, _ in _elements(b, s, e):
                if tid == _TRACK_ENTRY:
                    video = _mkv_video_track(b, ts, te) or video
                    if video:
                        break
    if video is None:
        return None
    width, height, period_ns = video
    fps = 1e9 / period_ns if period_ns else None
    frames = round(duration * scale / 1e9 * fps) if duration and fps else None
    return VideoInfo(width, height, frames or None, fps)


def _mkv_video_track(b, s, e):
    kind, period, width, height = None, None, None, None
    for eid, cs, ce, _ in _elements(b, s, e):
        if eid == _TRACK_TYPE:
            kind = _uint(b, cs, ce)
        elif eid == _DEFAULT_DURATION:
            period = _uint(b, cs, ce)
        elif eid == _VIDEO:
            for vid, vs, ve, _ in _elements(b, cs, ce):
                if vid == _PIXEL_W:
                    width = _uint(b, vs, ve)
                elif vid == _PIXEL_H:
                    height = _uint(b, vs, ve)
    return (width, height, period) if kind == 1 and width and height else None


# -- GIF ----------------------------------------------------------------------------------------

def gif_info(b: bytes) -> VideoInfo | None:
    """A GIF's canvas, its frames (image descriptors) and their rate from the frame delays; frames
    None when the file is longer than MAX_GIF or cut short."""
    if len(b) < 13 or b[:6] not in (b"GIF87a", b"GIF89a"):
        return None
    width, height, flags = struct.unpack("<HHB", b[6:11])
    i = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)
    frames, delay_cs = 0, 0
    complete = len(b) <= MAX_GIF
    while complete and i < len(b):
        block = b[i]
        if block == 0x3B:
            break
        if block == 0x21:  # extension: label, then sub-blocks
            if b[i + 1] == 0xF9 and b[i + 2] == 4:
                delay_cs += struct.unpack("<H", b[i + 4:i + 6])[0]
            i = _skip_sub_blocks(b, i + 2)
        elif block == 0x2C:  # image descriptor (10 bytes), local colour table, LZW code size, sub-blocks
            local = b[i + 9]
            i += 10 + (3 << ((local & 7) + 1) if local & 0x80 else 0) + 1
            i = _skip_sub_blocks(b, i)
            frames += 1
        else:
            complete = False
        if i > len(b):
            complete = False
    if not complete or not frames:
        return VideoInfo(width, height, None, None)
    fps = frames / (delay_cs / 100) if delay_cs else None
    return VideoInfo(width, height, frames, fps)


def _skip_sub_blocks(b, i):
    while i < len(b) and b[i]:
        i += b[i] + 1
    return i + 1
