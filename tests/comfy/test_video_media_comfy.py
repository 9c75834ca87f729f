"""ComfyUI's own loaders decode the files of tests/media/ to the sizes and frame counts the header reader
(models/video_header.py, models/media.py) gives without decoding; and a running ComfyUI prices a loaded
video's frames from its input folder.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.models.media import input_reader, media_of

pytestmark = pytest.mark.comfy

MEDIA = Path(__file__).parent.parent / "media"
NAMES = sorted(json.loads((MEDIA / "videos.json").read_text())["videos"])

SNIPPET = r"""
import json, os, sys
from comfy_api.latest._input_impl.video_types import VideoFromFile
import nodes
out = {}
for path in PATHS:
    name = os.path.basename(path)
    row = {}
    if not name.endswith(".webp"):  # PyAV does not decode animated WebP; LoadImage falls back to Pillow for it
        shape = VideoFromFile(path).get_components().images.shape
        row["video"] = [int(shape[2]), int(shape[1]), int(shape[0])]
    if name.endswith((".gif", ".webp")):
        import folder_paths
        folder_paths.set_input_directory(os.path.dirname(path))  # LoadImage reads names in its input folder
        image = nodes.LoadImage().load_image(name)[0]
        row["image"] = [int(image.shape[2]), int(image.shape[1]), int(image.shape[0])]
    if name == "mpeg4_ntsc.mp4":
        try:
            trimmed = VideoFromFile(path, start_time=0.5, duration=0.5).get_components().images.shape
            row["slice"] = int(trimmed[0])
        except TypeError:  # a ComfyUI without Video Slice (0.8)
            pass
    out[name] = row
print(json.dumps(out))
"""


def test_comfyuis_own_decoders_agree_with_the_header_reader(run_in_comfy, comfy_install):
    _, _, version = comfy_install
    # the paths go in the code: ComfyUI's own argument parser reads sys.argv
    got = run_in_comfy(f"PATHS = {[str(MEDIA / n) for n in NAMES]!r}\n" + SNIPPET)
    rotates = tuple(int(x) for x in version.split(".")[:2]) >= (0, 33)  # 0.8 / 0.18 ignore a turned clip's matrix
    for name in NAMES:
        ours = media_of(str(MEDIA / name))
        want = [ours.width, ours.height, ours.frames]
        if name == "rotated90.mp4" and not rotates:
            want = [ours.height, ours.width, ours.frames]
        for kind in ("video", "image"):
            if kind in got[name]:
                assert got[name][kind] == want, (name, kind, got[name], ours)
    if "slice" in got["mpeg4_ntsc.mp4"]:
        # the graph's Video Slice rule (core.video_of) at start 0.5 s, duration 0.5 s
        from vram_budget.nodes.estimator.graph import read_workflow
        from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA

        prompt = {
            "1": {"class_type": "LoadVideo", "inputs": {"file": "mpeg4_ntsc.mp4"}},
            "2": {"class_type": "Video Slice", "inputs": {"video": ["1", 0], "start_time": 0.5, "duration": 0.5,
                                                         "strict_duration": False}},
            "3": {"class_type": "GetVideoComponents", "inputs": {"video": ["2", 0]}},
            "4": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
            "5": {"class_type": "VAEEncode", "inputs": {"pixels": ["3", 0], "vae": ["4", 0]}},
            "6": {"class_type": "SaveLatent", "inputs": {"samples": ["5", 0], "filename_prefix": "x"}},
        }
        token = INPUT_MEDIA.set(input_reader(str(MEDIA)))
        try:
            latent = read_workflow(prompt).stages_of("vae_encode")[0].latent
        finally:
            INPUT_MEDIA.reset(token)
        assert latent.pixel_frames == got["mpeg4_ntsc.mp4"]["slice"]


def test_server_prices_a_loaded_videos_frames_from_its_input_folder(comfy_server):
    shutil.copy(MEDIA / "h264.mp4", comfy_server.base / "input" / "probe_clip.mp4")
    prompt = {
        "1": {"class_type": "LoadVideo", "inputs": {"file": "probe_clip.mp4"}},
        "2": {"class_type": "GetVideoComponents", "inputs": {"video": ["1", 0]}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "VAEEncode", "inputs": {"pixels": ["2", 0], "vae": ["3", 0]}},
        "5": {"class_type": "SaveLatent", "inputs": {"samples": ["4", 0], "filename_prefix": "x"}},
    }
    status, data = comfy_server.request("POST", "/vram_budget/estimate", {"prompt": prompt})
    assert status == 200, data
    encode = next(s for s in data["budget"]["stages"] if s["kind"] == "vae_encode")
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.plan.planning import estimate

    here_dir = comfy_server.base / "input"
    token = INPUT_MEDIA.set(input_reader(str(here_dir)))
    try:
        here = estimate(read_workflow(prompt), Device.from_card(find_card("RTX 4090")))
    finally:
        INPUT_MEDIA.reset(token)
    here_encode = next(sb for sb in here.stages if sb.stage.kind == "vae_encode")
    assert (here_encode.stage.latent.pixel_width, here_encode.stage.latent.batch) == (320, 17)
    assert encode["working_bytes"] == here_encode.working_bytes > 0
