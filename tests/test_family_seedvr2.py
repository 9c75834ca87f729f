"""SeedVR2 (ComfyUI 0.33.0), one family module (nodes/estimator/families/seedvr2.py) and one node-pack module
(graph/packs/nodes_seedvr.py): the 3B / 7B headers and the SeedVR2 VAE are recognised (the VAE no longer taken for a
16-channel KL VAE), the published files are priced, the temporal chunk / merge nodes carry the right latents, and
the upscale templates get a priced sampling stage. The VAE (no traced profile of its class) is priced with ComfyUI
0.33's own estimate for it (sd.py:594-595, ldm/seedvr/vae.py:1581-1604), checked against the code written out by
hand: the image templates are complete; the video one still lacks its input video's size."""
import json

import pytest

from helpers_models import spec_vae_kl, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.stages.vae import vae_working
from vram_budget.nodes.estimator.workload import LatentShape

RTX4090 = Device.from_card(find_card("RTX 4090"))


def nadit_spec(blocks=32, width=64, dtype="BF16"):
    """The keys model_detection.py:690-728 tests (0.33.0), at a small width."""
    spec = {"vid_in.proj.weight": (dtype, (width, 33 * 4))}
    for i in range(blocks):
        spec[f"blocks.{i}.mlp.all.proj_in_gate.weight"] = (dtype, (width * 2, width))
        spec[f"blocks.{i}.mlp.all.proj_out.weight"] = (dtype, (width, width * 2))
    return spec


def test_the_families_live_in_one_module():
    assert registry.module_of("seedvr2-3b") == registry.module_of("vae-seedvr2") == "seedvr2"
    assert FAMILIES["seedvr2-3b"].arch["hidden_size"] == 2560 and FAMILIES["seedvr2-7b"].arch["hidden_size"] == 3072
    vae = registry.VAE_FAMILIES["vae-seedvr2"]
    assert (vae.latent_channels, vae.spatial, vae.temporal) == (16, 8, 4)


@pytest.mark.parametrize("blocks, family", [(32, "seedvr2-3b"), (36, "seedvr2-7b")])
def test_headers_are_recognised(tmp_path, blocks, family):
    info = describe(write_safetensors(tmp_path / "x.safetensors", nadit_spec(blocks)).path)
    assert (info.kind, info.family) == (DIFFUSION, family)


def test_the_vae_header_is_seedvr2_not_a_kl_vae(tmp_path):
    kl = spec_vae_kl(z=16, dtype="F16")
    assert describe(write_safetensors(tmp_path / "kl.safetensors", kl).path).family == "vae-kl16"  # the near miss
    spec = dict(kl, **{"decoder.up_blocks.2.upsamplers.0.upscale_conv.weight": ("F16", (512, 512, 1, 1, 1))})
    info = describe(write_safetensors(tmp_path / "seedvr.safetensors", spec).path)
    assert (info.kind, info.family) == (VAE, "vae-seedvr2")


@pytest.mark.parametrize("name, family, size", [("seedvr2_3b_int8_convrot.safetensors", "seedvr2-3b", 3_457_448_673),
                                                ("seedvr2_7b_int8_convrot.safetensors", "seedvr2-7b", 8_332_236_554)])
def test_the_published_files_are_priced(name, family, size):
    info = catalogue_info(name, "diffusion_models")
    assert (info.family, info.weights_bytes, info.quantization) == (family, size, "int8")
    vae = catalogue_info("seedvr2_ema_vae_fp16.safetensors", "vae")
    assert (vae.family, vae.weights_bytes) == ("vae-seedvr2", 501_324_186)


def _chunked_prompt(mode="manual"):
    chunk = {"latent": ["2", 0], "temporal_overlap": 0, "chunking_mode": mode}
    if mode == "manual":
        chunk["chunking_mode.frames_per_chunk"] = 21
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "seedvr2_3b_int8_convrot.safetensors",
                                                      "weight_dtype": "default"}},
        "2": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 1280, "height": 720, "length": 81,
                                                                   "batch_size": 1}},
        "3": {"class_type": "SeedVR2TemporalChunk", "inputs": chunk},
        "4": {"class_type": "SeedVR2Conditioning", "inputs": {"model": ["1", 0], "vae_conditioning": ["3", 0]}},
        "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 1],
                                                    "latent_image": ["3", 0], "seed": 1, "steps": 1, "cfg": 1.0,
                                                    "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "6": {"class_type": "SeedVR2TemporalMerge", "inputs": {"latents": ["5", 0], "temporal_overlap": ["3", 1]}},
        "7": {"class_type": "VAELoader", "inputs": {"vae_name": "seedvr2_ema_vae_fp16.safetensors"}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["7", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "x"}},
    }


def test_a_manual_chunk_is_sampled_and_the_merge_is_the_whole_latent():
    budget = estimate(read_workflow(_chunked_prompt()), RTX4090)
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.title == "Sample: SeedVR2 3B"
    assert (sample.stage.latent.frames, sample.stage.latent.pixel_frames) == (6, 21)  # (21 - 1) // 4 + 1
    work = next(it for it in sample.items if it.category == "working")
    assert "21600 latent tokens" in work.assumption  # 6 x 90/2 x 160/2
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    assert decode.stage.latent.frames == 21  # 81 frames -> (81 - 1) // 4 + 1, the merged length


def test_an_auto_chunk_is_unknown_not_guessed():
    budget = estimate(read_workflow(_chunked_prompt("auto")), RTX4090)
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.stage.latent is None and any("latent size unknown" in g for g in budget.incomplete)


@pytest.mark.parametrize("name, family", [("utility_seedvr2_3b_int8_upscale_image", "SeedVR2 3B"),
                                          ("utility_seedvr2_7b_int8_upscale_image", "SeedVR2 7B")])
def test_the_image_templates_are_complete(name, family):
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == name]
    if not found:
        pytest.skip(f"comfyui-workflow-templates has no {name} template in this version")
    budget = estimate(read_workflow(found[0].workflow), RTX4090)
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    work = next(it for it in sample.items if it.category == "working")
    assert sample.title == f"Sample: {family}" and work.bytes > 0
    # LoadImage's unknown file is assumed 1024 px; ResizeImageMaskNode x4 -> 4096 px -> /8 latent, 2x2 patches
    assert "4096×4096" in work.assumption and "65536 latent tokens" in work.assumption
    assert not budget.incomplete, budget.incomplete
    assert budget.to_dict()["complete"] is True
    vae = {s.stage.kind: next(it for it in s.items if it.category == "working") for s in budget.stages
           if s.stage.kind in ("vae_encode", "vae_decode")}
    # VAEEncodeTiled: sd.py:1427 reserves sd.py:595 for the whole 4096 x 4096 image (one frame -> max(1, 5)), fp16
    assert vae["vae_encode"].bytes == 5 * 4096 * 4096 * 64 * 2
    # VAEDecodeTiled 512 px: one 64 x 64 latent tile (sd.py:1328) -> 512 x 512 x 1 output pixels x 160 (vae.py:1582)
    assert vae["vae_decode"].bytes == 512 * 512 * 160
    assert all("not traced" in it.assumption for it in vae.values())
    json.dumps(budget.to_dict())


def test_the_vae_is_priced_with_comfyuis_own_estimate():
    video = LatentShape(batch=1, channels=16, height=44, width=80, frames=21, pixel_height=352, pixel_width=640,
                        pixel_frames=81, spatial_compression=8, temporal_compression=4)
    got, how, notes = vae_working("vae-seedvr2", video, decode=True, dtype_bytes=2)
    # ldm/seedvr/vae.py:1581-1604 on [1, 16, 21, 44, 80]: output_t (21 - 1) * 4 + 1 = 81, x 44*8 x 80*8 pixels,
    # 160 bytes a pixel whatever the dtype
    assert got == 81 * 352 * 640 * 160 == 2_919_628_800 and not notes and "vae.py:1581" in how
    # sd.py:595 on the [1, 3, 81, 352, 640] pixels: max(81, 5) x H x W x 64 x dtype_size
    assert vae_working("vae-seedvr2", video, decode=False, dtype_bytes=2)[0] == 81 * 352 * 640 * 64 * 2
    image = LatentShape(batch=1, channels=16, height=128, width=96, pixel_height=1024, pixel_width=768)
    # one image is one frame: output_t 1; encode max(1, 5) = 5 frames' worth
    assert vae_working("vae-seedvr2", image, decode=True)[0] == 1024 * 768 * 160
    assert vae_working("vae-seedvr2", image, decode=False, dtype_bytes=2)[0] == 5 * 1024 * 768 * 64 * 2
    # VAEDecodeTiled 256 px, 16 frames: tiles of 32 x 32 latent pixels x max(2, 16 // 4) = 4 latent frames
    tiled = {"tile_size": 256, "overlap": 64, "temporal_size": 16, "temporal_overlap": 8}
    assert vae_working("vae-seedvr2", video, decode=True, tiled=tiled)[0] == ((4 - 1) * 4 + 1) * 256 * 256 * 160


def test_the_video_template_still_lacks_only_the_input_videos_size():
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == "utility_seedvr2_3b_int8_upscale_video"]
    if not found:
        pytest.skip("no utility_seedvr2_3b_int8_upscale_video template in this version")
    budget = estimate(read_workflow(found[0].workflow), RTX4090)
    assert budget.incomplete and all("latent size unknown" in gap for gap in budget.incomplete)


def test_a_video_encoded_by_the_seedvr2_vae_has_its_temporal_compression():
    """graph/analyzer.py vae_geometry: a VAE no name pattern there knows takes its family module's VaeFamily when
    the /8 image default is wrong for it (here a video VAE: 81 frames -> 21 latent frames, 16 channels)."""
    prompt = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "seedvr2_3b_int8_convrot.safetensors",
                                                      "weight_dtype": "default"}},
        "2": {"class_type": "EmptyImage", "inputs": {"width": 640, "height": 352, "batch_size": 81, "color": 0}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "seedvr2_ema_vae_fp16.safetensors"}},
        "4": {"class_type": "VAEEncode", "inputs": {"pixels": ["2", 0], "vae": ["3", 0]}},
        "5": {"class_type": "SeedVR2Conditioning", "inputs": {"model": ["1", 0], "vae_conditioning": ["4", 0]}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["5", 0], "negative": ["5", 1],
                                                    "latent_image": ["4", 0], "seed": 1, "steps": 1, "cfg": 1.0,
                                                    "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "7": {"class_type": "SaveLatent", "inputs": {"samples": ["6", 0], "filename_prefix": "x"}},
    }
    budget = estimate(read_workflow(prompt), RTX4090)
    latent = next(s for s in budget.stages if s.stage.kind == "sample").stage.latent
    assert (latent.batch, latent.frames, latent.channels, latent.height, latent.width) == (1, 21, 16, 44, 80)
