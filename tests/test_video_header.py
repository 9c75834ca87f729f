"""A loaded video's size and frame count from its header (models/video_header.py), and the graph using them.

tests/media/ holds real files written by FFmpeg's muxers through PyAV and by Pillow (bench/gen_video_fixtures.py);
videos.json records what PyAV / Pillow decode from each. The header reader must agree with every one, refuse
anything outside the input folder, and survive any mangled file in bounded time.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA
from vram_budget.nodes.estimator.models.media import Media, input_reader, media_of
from vram_budget.nodes.estimator.models.video_header import video_info
from vram_budget.nodes.estimator.workload import SAMPLE, VAE_ENCODE

MEDIA = Path(__file__).parent / "media"
DECODED = json.loads((MEDIA / "videos.json").read_text())["videos"]


@pytest.mark.parametrize("name", sorted(DECODED))
def test_header_agrees_with_what_the_decoder_gives(name):
    want = DECODED[name]
    got = media_of(str(MEDIA / name))
    assert got is not None, name
    assert (got.width, got.height, got.frames) == (want["width"], want["height"], want["frames"]), name
    if want["fps"] is None:
        assert got.fps is None
    else:
        assert got.fps == pytest.approx(want["fps"], rel=1e-6), name


def test_a_turned_phone_clip_is_read_upright_and_a_still_image_is_one_frame(tmp_path):
    assert video_info(str(MEDIA / "rotated90.mp4"))[:2] == (240, 320)  # the h264.mp4 frames, turned 90 degrees
    # an animated GIF is a video to LoadVideo and a batch of frames to LoadImage
    assert media_of(str(MEDIA / "anim.gif")) == Media(64, 48, 5, 10.0)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(DECODED)), cuts=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)),
                                                           max_size=8), trunc=st.integers(0, 4000))
def test_mangled_files_give_none_or_a_sane_size_never_an_error(tmp_path_factory, name, cuts, trunc):
    data = bytearray((MEDIA / name).read_bytes())
    for at, byte in cuts:
        if at < len(data):
            data[at] = byte
    path = tmp_path_factory.mktemp("m") / name
    path.write_bytes(bytes(data[:max(trunc, 16)] if trunc < len(data) else data))
    got = media_of(str(path))
    assert got is None or (0 < got.width <= 1 << 16 and 0 < got.height <= 1 << 16 and
                           (got.frames is None or got.frames >= 1))


def test_a_damaged_duration_gives_no_length_not_a_negative_one(tmp_path):
    """The property test's find: h264.mkv with one byte of its duration changed (offset 285) and cut at 394 bytes
    claimed -9 frames; a count below 1 (or an absurd one) is not stated."""
    data = bytearray((MEDIA / "h264.mkv").read_bytes())
    data[285] = 192
    path = tmp_path / "h264.mkv"
    path.write_bytes(bytes(data[:394]))
    got = media_of(str(path))
    assert got is not None and (got.width, got.height) == (200, 120) and got.frames is None


def test_huge_claims_are_not_read(tmp_path):
    import struct

    # a moov box claiming 4 GiB and a box chain claiming more boxes than a file holds
    (tmp_path / "big.mp4").write_bytes(struct.pack(">I4s", 24, b"ftyp") + b"isom" * 4 +
                                       struct.pack(">I4s", 0xFFFFFFF0, b"moov") + b"\0" * 64)
    assert video_info(str(tmp_path / "big.mp4")) is None
    (tmp_path / "loop.mp4").write_bytes(struct.pack(">I4s", 8, b"ftyp") + struct.pack(">I4s", 8, b"free") * 50_000)
    assert video_info(str(tmp_path / "loop.mp4")) is None
    (tmp_path / "x.webm").write_bytes(b"\x1a\x45\xdf\xa3" + b"\xff" * 64)
    assert video_info(str(tmp_path / "x.webm")) is None


def _input_dir(tmp_path, **files):
    folder = tmp_path / "input"
    folder.mkdir()
    for dst, src in files.items():
        shutil.copy(MEDIA / src, folder / dst.replace("__", "."))
    (tmp_path / "outside.mp4").write_bytes((MEDIA / "h264.mp4").read_bytes())
    return input_reader(str(folder))


def test_the_reader_stays_in_the_input_folder(tmp_path):
    read = _input_dir(tmp_path, clip__mp4="h264.mp4")
    assert read("clip.mp4") == Media(320, 240, 17, 24.0)
    assert read("clip.mp4 [input]") == Media(320, 240, 17, 24.0)
    assert read("../outside.mp4") is None and read(str(tmp_path / "outside.mp4")) is None


def _with(read, prompt):
    token = INPUT_MEDIA.set(read)
    try:
        return read_workflow(prompt)
    finally:
        INPUT_MEDIA.reset(token)


def _wan_encode(images_from: list, extra: dict) -> dict:
    """A Wan 2.1 VACE-free control graph: the frames VAE-encoded by the Wan VAE (whose latent is 4x temporal)."""
    return {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "2": {"class_type": "VAEEncode", "inputs": {"pixels": images_from, "vae": ["1", 0]}},
        "3": {"class_type": "SaveLatent", "inputs": {"samples": ["2", 0], "filename_prefix": "x"}},
        **extra,
    }


def test_load_video_to_frames_is_sized_by_the_files_header(tmp_path):
    read = _input_dir(tmp_path, clip__mp4="mpeg4_ntsc.mp4")  # 96x64, 30 frames at 29.97 fps
    prompt = _wan_encode(["12", 0], {
        "10": {"class_type": "LoadVideo", "inputs": {"file": "clip.mp4"}},
        "11": {"class_type": "Video Slice", "inputs": {"video": ["10", 0], "start_time": 0.5, "duration": 0.5,
                                                        "strict_duration": False}},
        "12": {"class_type": "GetVideoComponents", "inputs": {"video": ["11", 0]}},
    })
    unknown = read_workflow(prompt)
    assert unknown.stages_of(VAE_ENCODE)[0].latent is None  # no input folder: not known before running
    w = _with(read, prompt)
    lat = w.stages_of(VAE_ENCODE)[0].latent
    # 0.5 s at 30000/1001 fps: frames whose time is in [0.5, 1.0): ceil(14.985) = 15 frames
    assert (lat.pixel_width, lat.pixel_height, lat.pixel_frames) == (96, 64, 15)
    prompt["12"]["inputs"]["video"] = ["10", 0]  # the whole clip
    assert _with(read, prompt).stages_of(VAE_ENCODE)[0].latent.pixel_frames == 30


def test_videohelpersuite_loader_applies_its_own_widgets_to_the_file(tmp_path):
    read = _input_dir(tmp_path, clip__mp4="mpeg4_ntsc.mp4")  # 96x64, 30 frames at 29.97 fps

    def loaded(**widgets):
        inputs = {"video": "clip.mp4", "force_rate": 0, "custom_width": 0, "custom_height": 0, "frame_load_cap": 0,
                  "skip_first_frames": 0, "select_every_nth": 1, "format": "None", **widgets}
        prompt = _wan_encode(["10", 0], {"10": {"class_type": "VHS_LoadVideo", "inputs": inputs}})
        lat = _with(read, prompt).stages_of(VAE_ENCODE)[0].latent
        return (lat.pixel_width, lat.pixel_height, lat.pixel_frames) if lat else None

    assert loaded() == (96, 64, 30)
    # load_video_nodes.py cv_frame_generator: skip 4, then every 3rd of the 26 left: ceil(26 / 3) = 9
    assert loaded(skip_first_frames=4, select_every_nth=3) == (96, 64, 9)
    # force_rate 10: int(30 / 29.97 * 10) = 10 frames; cap 8 of them
    assert loaded(force_rate=10) == (96, 64, 10) and loaded(force_rate=10, frame_load_cap=8) == (96, 64, 8)
    # one custom side keeps the aspect ratio, rounded to the format's 8 (target_size): 200 x 133.3 -> 200 x 136
    assert loaded(custom_width=200, format="AnimateDiff") == (200, 136, 30)
    # the Wan format keeps 4k + 1 frames: 30 -> 29
    assert loaded(format="Wan") == (96, 64, 29)
    # a path outside the input folder is never read: the node's size stays unknown
    prompt = _wan_encode(["10", 0], {"10": {"class_type": "VHS_LoadVideoPath", "inputs": {
        "video": str(tmp_path / "outside.mp4"), "force_rate": 0, "custom_width": 0, "custom_height": 0,
        "frame_load_cap": 0, "skip_first_frames": 0, "select_every_nth": 1}}})
    assert _with(read, prompt).stages_of(VAE_ENCODE)[0].latent is None


def test_a_video_template_is_complete_with_its_input_file(tmp_path):
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.plan.planning import estimate

    templates = pytest.importorskip("comfyui_workflow_templates_json")
    (path,) = Path(templates.__file__).parent.glob("**/utility_video_frame_interpolation.json")
    wf = json.loads(path.read_text(encoding="utf-8"))
    name = next(n["widgets_values"][0] for n in wf["nodes"] if n["type"] == "LoadVideo")
    read = _input_dir(tmp_path, **{name.replace(".", "__"): "h264.mp4"})
    device = Device.from_card(find_card("RTX 4090"))
    assert not estimate(read_workflow(wf), device).complete
    b = estimate(_with(read, wf), device)
    assert b.complete, b.incomplete
    stage = next(s for s in b.stages if s.stage.kind == SAMPLE)
    assert stage.working_bytes > 0
