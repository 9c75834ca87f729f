"""Write the small real videos tests/media/ holds, with PyAV (FFmpeg's own muxers and encoders), and
record what PyAV decodes from each (frame size after the display rotation ComfyUI applies, frame count,
average rate) in tests/media/videos.json, the expected values tests/test_video_header.py checks the
header reader against.

Run it with a Python that has PyAV (ComfyUI's venv: its requirements.txt pins av):

    $COMFYUI_033_PYTHON bench/gen_video_fixtures.py [--check]

--check rewrites nothing and exits 1 when a recorded value differs from what PyAV decodes now.
"""
from __future__ import annotations

import argparse
import fractions
import json
import os
import struct
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "media")

# name, codec, width, height, frames, fps, pixel format, container options
CASES = [
    ("h264.mp4", "libx264", 320, 240, 17, 24, "yuv420p", {}),
    ("h264.mov", "libx264", 160, 96, 10, 30, "yuv420p", {}),
    ("mpeg4_ntsc.mp4", "mpeg4", 96, 64, 30, 30000 / 1001, "yuv420p", {}),
    ("fragmented.mp4", "libx264", 128, 80, 20, 20, "yuv420p", {"movflags": "frag_keyframe+empty_moov"}),
    ("vp9.webm", "libvpx-vp9", 176, 144, 12, 25, "yuv420p", {}),
    ("vp8.webm", "libvpx", 64, 64, 7, 8, "yuv420p", {}),
    ("h264.mkv", "libx264", 200, 120, 9, 12, "yuv420p", {}),
    ("anim.gif", "gif", 64, 48, 5, 10, "rgb8", {}),
]
ROTATED = ("rotated90.mp4", "h264.mp4")  # the first file with its track matrix turned 90 degrees
ANIMATED_WEBP = ("anim.webp", 72, 40, 6)  # written by Pillow (PyAV cannot decode animated WebP; ComfyUI's LoadImage
# falls back to Pillow for it, 0.33.0 nodes.py:1764-1790): its frame count is Pillow's n_frames


def write(av, path, codec, width, height, frames, fps, pix_fmt, options):
    import numpy as np  # noqa: PLC0415  (ComfyUI's venv has numpy)

    with av.open(path, "w", options=options) as out:
        stream = out.add_stream(codec, rate=fractions.Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        for i in range(frames):
            img = np.full((height, width, 3), (i * 37) % 255, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def rotate(src, dst):
    """Copy ``src`` with its tkhd matrix set to a 90-degree turn (a phone's portrait clip)."""
    data = bytearray(open(src, "rb").read())
    at = data.find(b"tkhd")
    version = data[at + 4]
    matrix = at + 4 + (36 if version == 1 else 24) + 16
    data[matrix:matrix + 36] = struct.pack(">9i", 0, 0x10000, 0, -0x10000, 0, 0, 0, 0, 0x40000000)
    open(dst, "wb").write(bytes(data))


def write_webp(path, width, height, frames):
    from PIL import Image  # noqa: PLC0415

    images = [Image.new("RGB", (width, height), ((i * 40) % 255, 0, 0)) for i in range(frames)]
    images[0].save(path, save_all=True, append_images=images[1:], duration=100, loop=0, lossless=True)


def pillow_frames(path):
    from PIL import Image  # noqa: PLC0415

    with Image.open(path) as img:
        return {"width": img.size[0], "height": img.size[1], "frames": getattr(img, "n_frames", 1), "fps": None}


def decoded(av, path):
    """What PyAV decodes: every frame, its size turned by the frame's rotation (as ComfyUI 0.33's
    video_types.py:500-502), and the stream's average rate."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        count, size = 0, None
        for frame in container.decode(stream):
            count += 1
            turned = round(getattr(frame, "rotation", 0) or 0) % 180 != 0
            size = (frame.height, frame.width) if turned else (frame.width, frame.height)
        rate = float(stream.average_rate) if stream.average_rate else None
    return {"width": size[0], "height": size[1], "frames": count, "fps": rate}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    import av  # noqa: PLC0415

    os.makedirs(OUT, exist_ok=True)
    if not args.check:
        for name, codec, w, h, n, fps, fmt, opts in CASES:
            write(av, os.path.join(OUT, name), codec, w, h, n, fps, fmt, opts)
        rotate(os.path.join(OUT, ROTATED[1]), os.path.join(OUT, ROTATED[0]))
        write_webp(os.path.join(OUT, ANIMATED_WEBP[0]), *ANIMATED_WEBP[1:])
    names = [c[0] for c in CASES] + [ROTATED[0]]
    table = {name: decoded(av, os.path.join(OUT, name)) for name in names}
    table[ANIMATED_WEBP[0]] = pillow_frames(os.path.join(OUT, ANIMATED_WEBP[0]))
    path = os.path.join(OUT, "videos.json")
    if args.check:
        old = json.load(open(path))["videos"]
        bad = {k: (old.get(k), v) for k, v in table.items() if old.get(k) != v}
        print("ok" if not bad else f"differ: {bad}")
        return 1 if bad else 0
    with open(path, "w") as fh:
        json.dump({"about": "What PyAV " + av.__version__ + " decodes from each file here "
                            "(bench/gen_video_fixtures.py); tests/test_video_header.py checks the header reader "
                            "against it.", "videos": table}, fh, indent=1)
        fh.write("\n")
    print(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
