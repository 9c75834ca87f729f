"""The arithmetic gaps issue 30 names, each a general cause of published misses: attention without fused
kernels, an add-on module named after its base, --gpu-only / --highvram keeping earlier models, a card given
as GB on Windows, Linux swap, eager vs compiled activations, and the cheapest card keeping the launch flags."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from vram_budget.nodes.estimator.machine.device import LaunchFlags, device_for_launch
from vram_budget.nodes.estimator.machine.gpus import card_for_vram, find_card, windows_desktop_bytes
from vram_budget.nodes.estimator.machine.host_memory import LINUX_SWAP_ASSUMED_BYTES, Host
from vram_budget.nodes.estimator.models.name_infer import infer_info
from vram_budget.nodes.estimator.units import GiB

REPO = Path(__file__).resolve().parents[1]
WAN = str(REPO / "example_workflows" / "wan22_14b_i2v_720p.json")
FLUX = str(REPO / "example_workflows" / "flux_dev_1024.json")


def cli_json(*args) -> dict:
    out = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", *args, "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def wan13b(tmp_path, w=832, h=480, length=81) -> str:
    prompt = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.1_t2v_1.3B_fp16.safetensors",
                                                     "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["2", 0]}},
        "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["2", 0]}},
        "6": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": w, "height": h, "length": length,
                                                                  "batch_size": 1}},
        "7": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "seed": 0, "steps": 20, "cfg": 6.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "positive": ["4", 0],
                                                   "negative": ["5", 0], "latent_image": ["6", 0], "denoise": 1.0}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["3", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "x"}},
    }
    path = tmp_path / "wan13b.json"
    path.write_text(json.dumps(prompt))
    return str(path)


def _item(d: dict, label: str) -> int:
    return sum(i["bytes"] for s in d["stages"] for i in s["items"] if i["label"] == label)


def test_sdpa_without_kernels_allocates_the_whole_score_tensor_on_strix_halo_before_016(tmp_path):
    """Comfy-Org/ComfyUI#9801: Wan 2.1 1.3B at 832x480x81 on a Ryzen AI Max+ 395 (64 GB to the GPU), ComfyUI
    0.3.x: 'Tried to allocate 47.98 GiB'. 0.8.0 turns SDPA on for gfx1151 without asking for kernels."""
    wf = wan13b(tmp_path)
    old = cli_json(wf, "--gpu", "Radeon 8060S", "--vram", "64", "--comfyui-version", "0.3.64")
    scores = _item(old, "attention scores (SDPA math path)")
    assert scores == 2 * 12 * 32760 ** 2 * 4  # q·kᵀ and its softmax, 12 heads, 32,760 tokens, fp32
    assert round(scores / 2 / GiB, 2) == 47.98  # the published request
    new = cli_json(wf, "--gpu", "Radeon 8060S", "--vram", "64", "--comfyui-version", "0.18.2")
    assert _item(new, "attention scores (SDPA math path)") == 0  # 0.18 asks aotriton_supported() first
    nvidia = cli_json(wf, "--gpu", "RTX 4090", "--comfyui-version", "0.3.64")
    assert _item(nvidia, "attention scores (SDPA math path)") == 0
    forced = cli_json(wf, "--gpu", "RX 6800 XT", "--use-pytorch-cross-attention")
    assert _item(forced, "attention scores (SDPA math path)") > 0 and forced["verdict"] == "oom"


def test_a_card_given_as_gb_can_say_what_it_is():
    d = device_for_launch(card_for_vram(16, arch="rdna2"), LaunchFlags())
    assert (d.vendor, d.bf16, d.fp8_compute, d.attention) == ("AMD", False, False, "subquad")
    assert card_for_vram(16).vendor == "NVIDIA"


def test_a_vace_module_is_its_blocks_not_the_base_model():
    info, why = infer_info("Wan2_1-VACE_module_14B_fp8_e4m3fn.safetensors", "diffusion", "diffusion_models")
    assert 2.9e9 < info.weights_bytes < 3.2e9 and "VACE" in info.label  # kijai's file: 3.07 GB
    full, _ = infer_info("wan2.1_vace_14B_fp16.safetensors", "diffusion", "diffusion_models")
    assert full.params > 14e9


def test_gpu_only_keeps_every_earlier_model_and_highvram_the_diffusion_models():
    plain = cli_json(WAN, "--gpu", "RTX PRO 6000", "--memory-mode", "classic")
    gpu_only = cli_json(WAN, "--gpu", "RTX PRO 6000", "--gpu-only")
    high = cli_json(WAN, "--gpu", "RTX PRO 6000", "--highvram")
    peaks = [max(s["run"]["peak_bytes"] for s in d["stages"]) for d in (plain, gpu_only, high)]
    assert peaks[1] > peaks[0] and peaks[2] > peaks[0]
    low_expert = [s for s in high["stages"] if "low-noise" in s["title"]][0]
    assert any("--highvram" in e for e in low_expert["run"]["explanation"])  # the high-noise expert stays


def test_a_card_given_as_gb_on_windows_has_the_desktop_share():
    assert windows_desktop_bytes(card_for_vram(12)) == GiB
    assert windows_desktop_bytes(card_for_vram(80)) == 0
    assert windows_desktop_bytes(find_card("H100")) == 0 and windows_desktop_bytes(find_card("RTX 3060")) == GiB
    win = cli_json(FLUX, "--vram", "12", "--os", "windows")
    assert win["device"]["other_processes_bytes"] == GiB


def test_linux_swap_is_assumed_as_a_desktop_distribution_makes_it_and_zero_can_be_said():
    assert Host(ram_total_bytes=32 * GiB).swap_bytes == LINUX_SWAP_ASSUMED_BYTES
    assert Host(ram_total_bytes=32 * GiB, swap_total_bytes=0).swap_bytes == 0
    d = cli_json(WAN, "--ram", "32", "--comfyui-version", "0.8")
    assert d["host"]["host"]["swap_assumed_bytes"] == LINUX_SWAP_ASSUMED_BYTES


def test_eager_activations_are_not_the_compiled_figure():
    from vram_budget.nodes.estimator.physics import memory
    assert memory.calibration("hunyuan-video", compiled=True) == 1.6  # ~22 GB under torch.compile (HVW#189)
    assert memory.calibration("hunyuan-video") > 1.6  # without it the same run ran out of memory


def test_the_cheapest_card_runs_it_with_the_same_launch_flags():
    """Issue 34: on an RTX 3060 with --vram-headroom 8 the advice named an L40S where, with that flag, it runs
    slower: the card is now priced as the user's ComfyUI would run there."""
    d = cli_json(WAN, "--gpu", "RTX 3060", "--vram-headroom", "8")
    card = d["cheapest_card"]["name"]
    there = cli_json(WAN, "--gpu", card, "--vram-headroom", "8")
    assert there["outcome"] == "fits", (card, there["verdict"])


def test_wrapper_block_swap_does_nothing_in_high_vram_mode():
    """WanVideoWrapper swaps blocks, and offloads its T5 and VAE, to mm.unet_offload_device(), the GPU under
    --highvram / --gpu-only (model_management.py:1076-1080): the blocks and the T5 stay on the card and the fix is the
    launch flag, not more swap."""
    import pytest
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.plan.planning import estimate
    from workflows.corpus import community_dir
    path = community_dir() / "kijai__ComfyUI-WanVideoWrapper__wanvideo_2_1_14B_T2V_example_03.json"
    if not path.exists():
        pytest.skip(f"the community corpus is not here ({path.parent}): bench/fetch_corpus.py rebuilds it")
    wf = json.loads(path.read_text(encoding="utf-8"))
    card = find_card("RTX 3090")
    runs = {}
    for name, flags in (("normal", LaunchFlags()), ("high", LaunchFlags(highvram=True)),
                        ("gpu_only", LaunchFlags(gpu_only=True))):
        budget = estimate(read_workflow(wf), device_for_launch(card, flags))
        runs[name] = next(r for sb, r in zip(budget.stages, budget.runs) if sb.stage.kind == "sample")
        swap = next(sb.stage.blocks_to_swap for sb in budget.stages if sb.stage.kind == "sample")
    assert swap and runs["normal"].streamed_bytes > 0
    for name in ("high", "gpu_only"):
        run = runs[name]
        assert run.streamed_bytes == 0 and run.resident_bytes > runs["normal"].resident_bytes
        assert any("does nothing" in e for e in run.explanation), name
        # its T5 loader offloads to the same device: the text encoder is still on the card while it samples
        assert any("GPU in high-VRAM mode" in e and "earlier models stay on the card" in e for e in run.explanation)
        if run.outcome == "oom":
            assert "without --highvram" in run.explanation[0]


def test_a_wan_variant_file_counts_its_own_layers_from_its_published_size():
    """wan2.1_vace_14B_fp16 holds the base model and its VACE blocks: 34.7 GB at 16 bit is 17.3B parameters, not the
    base model's 14.3B the name alone gives (published.template_info)."""
    from vram_budget.nodes.estimator.models.published import template_info
    named, _ = infer_info("wan2.1_vace_14B_fp16.safetensors", None, "diffusion_models")
    info = template_info("wan2.1_vace_14B_fp16.safetensors", "diffusion_models")
    assert named.params < 14.5e9 and info.params == info.weights_bytes // 2 > 17e9
    plain = template_info("wan2.1_t2v_1.3B_fp16.safetensors", "diffusion_models")  # no extra layers: the family count
    if plain is not None:
        assert plain.params == infer_info("wan2.1_t2v_1.3B_fp16.safetensors", None, "diffusion_models")[0].params


def test_wrapper_base_precision_fp32_casts_a_16_bit_file_and_keeps_an_fp8_one():
    """WanVideoModelLoader with quantization disabled keeps an fp8 file fp8 (it detects the dtype) and casts any
    other to base_precision (nodes_model_loading.py: dtype = base_dtype)."""
    import pytest
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.plan.planning import estimate
    from workflows.corpus import community_dir
    path = community_dir() / "kijai__ComfyUI-WanVideoWrapper__wanvideo_2_1_14B_T2V_example_03.json"
    if not path.exists():
        pytest.skip(f"the community corpus is not here ({path.parent}): bench/fetch_corpus.py rebuilds it")
    dev = device_for_launch(find_card("H100 80GB"), LaunchFlags())

    def weights(model: str, base: str) -> int:
        wf = json.loads(path.read_text(encoding="utf-8"))
        for n in wf["nodes"]:
            if n["type"] == "WanVideoModelLoader":
                n["widgets_values"][:3] = [model, base, "disabled"]
        budget = estimate(read_workflow(wf), dev)
        sample = next(sb for sb in budget.stages if sb.stage.kind == "sample")
        return next(it.bytes for it in sample.items if it.model is not None and it.model.kind == "diffusion")
    bf16 = weights("wan2.1_t2v_14B_bf16.safetensors", "bf16")
    assert weights("wan2.1_t2v_14B_bf16.safetensors", "fp32") == 2 * bf16
    fp8 = weights("wan2.1_t2v_14B_fp8_e4m3fn.safetensors", "fp32")
    assert fp8 < bf16


def test_wrapper_windows_price_one_window_of_activations():
    """Wan-Animate's frame_window_size loop and WanVideoContextOptions: the model sees one window at a time, so the
    sampling activations are one window's, not the whole clip's (the wrapper's own 501-frame Animate example)."""
    import pytest
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.plan.planning import estimate
    from workflows.corpus import community_dir
    path = community_dir() / "kijai__ComfyUI-WanVideoWrapper__wanvideo_WanAnimate_example_01.json"
    if not path.exists():
        pytest.skip(f"the community corpus is not here ({path.parent}): bench/fetch_corpus.py rebuilds it")
    dev = device_for_launch(find_card("H100 80GB"), LaunchFlags())

    def working(window: int):
        wf = json.loads(path.read_text(encoding="utf-8"))
        for n in wf["nodes"]:
            if n["type"] == "WanVideoAnimateEmbeds":
                n["widgets_values"][4] = window  # [width, height, num_frames 501, force_offload, frame_window_size]
        sample = next(sb for sb in estimate(read_workflow(wf), dev).stages if sb.stage.node_type == "WanVideoSampler")
        return sample.working_bytes, sample
    looped, sb = working(77)
    whole, _ = working(1001)  # a window longer than the clip: no loop
    assert looped < whole / 3 and any("windows of 21 of the" in n for n in sb.notes)
