"""Node-pack modules (nodes/estimator/graph/packs/): each pack's nodes are read into the stages,
models and shapes ComfyUI (or the pack) will run, and the runtime applies the pack's placement.

The workflows here are written for the tests in the packs' own node layout (class names, socket
types and widget order as the packs' example workflows save them)."""
from __future__ import annotations

import importlib
import pkgutil

import pytest

from vram_budget.nodes.estimator.plan import planning as B
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph import packs
from vram_budget.nodes.estimator.units import GiB
from vram_budget.nodes.estimator.workload import AUDIO_ENCODE, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE


def device(card: str = "RTX 4090") -> B.Device:
    return B.Device.from_card(find_card(card))


def stages(workload, kind=None):
    return [s for s in workload.stages if kind is None or s.kind == kind]


# ------------------------------------------------------------------------------------ registry
def test_every_module_in_packs_is_registered_and_tables_do_not_clash():
    modules = {m.name for m in pkgutil.iter_modules(packs.__path__)}
    names = {importlib.import_module(f"{packs.__name__}.{m}").PACK.name for m in modules}
    assert {p.name for p in packs.PACKS} == names
    assert {"comfy-core", "ComfyUI-WanVideoWrapper", "ComfyUI-MultiGPU", "ComfyUI-GGUF",
            "ComfyUI-VideoHelperSuite", "RES4LYF", "ComfyUI-nunchaku", "ComfyUI-Easy-Use",
            "ComfyUI-KJNodes", "x-flux-comfyui"} <= names
    with pytest.raises(ValueError, match="both define"):
        packs.Pack("a", samplers=set(), refs={"X": len}).merged_with(packs.Pack("b", refs={"X": len}))


def test_unknown_loader_with_a_model_file_widget_is_priced_and_said_so():
    prompt = {
        "1": {"class_type": "SomePackFluxLoader", "inputs": {"ckpt": "flux1-dev.safetensors", "precision": "bf16"}},
        "2": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "3": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "latent_image": ["2", 0], "steps": 20,
                                                   "cfg": 1.0, "positive": ["4", 0], "negative": ["4", 0]}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a cat", "clip": ["5", 0]}},
        "5": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": "flux"}},
        "6": {"class_type": "SaveLatent", "inputs": {"samples": ["3", 0]}},
    }
    w = read_workflow(prompt)
    sample = stages(w, SAMPLE)[0]
    assert [m.name for m in sample.models] == ["flux1-dev.safetensors"]
    assert sample.models[0].role == "diffusion"
    assert any("unknown loader; priced from the file in 'ckpt'" in n for n in w.notes)
    b = B.estimate(w, device())
    assert b.stages[1].weights_bytes > 20 * 10**9  # Flux dev at 16 bit, not 0


# ---------------------------------------------------------------------------- WanVideoWrapper
def wrapper_prompt(model="wan2.1_t2v_14B_fp8_e4m3fn.safetensors", quant="fp8_e4m3fn", swap=None, batched=False,
                   width=832, height=480, frames=81, cfg=6.0, context=None):
    p = {
        "1": {"class_type": "LoadWanVideoT5TextEncoder",
              "inputs": {"model_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "precision": "bf16",
                         "load_device": "offload_device", "quantization": "disabled"}},
        "2": {"class_type": "WanVideoTextEncode",
              "inputs": {"t5": ["1", 0], "positive_prompt": "a red fox running through snow",
                         "negative_prompt": "blurry", "force_offload": True}},
        "3": {"class_type": "WanVideoModelLoader",
              "inputs": {"model": model, "base_precision": "bf16", "quantization": quant,
                         "load_device": "offload_device", "attention_mode": "sdpa"}},
        "4": {"class_type": "WanVideoEmptyEmbeds", "inputs": {"width": width, "height": height, "num_frames": frames}},
        "5": {"class_type": "WanVideoSampler",
              "inputs": {"model": ["3", 0], "image_embeds": ["4", 0], "text_embeds": ["2", 0], "steps": 30,
                         "cfg": cfg, "shift": 5.0, "seed": 1, "force_offload": True, "scheduler": "unipc",
                         "riflex_freq_index": 0, "batched_cfg": batched}},
        "6": {"class_type": "WanVideoVAELoader", "inputs": {"model_name": "wan_2.1_vae.safetensors", "precision": "bf16"}},
        "7": {"class_type": "WanVideoDecode",
              "inputs": {"vae": ["6", 0], "samples": ["5", 0], "enable_vae_tiling": False, "tile_x": 272,
                         "tile_y": 272, "tile_stride_x": 144, "tile_stride_y": 128}},
        "8": {"class_type": "VHS_VideoCombine", "inputs": {"images": ["7", 0], "frame_rate": 16}},
    }
    if swap is not None:
        p["9"] = {"class_type": "WanVideoBlockSwap",
                  "inputs": {"blocks_to_swap": swap, "offload_img_emb": False, "offload_txt_emb": False}}
        p["3"]["inputs"]["block_swap_args"] = ["9", 0]
    if context is not None:
        p["10"] = {"class_type": "WanVideoContextOptions",
                   "inputs": {"context_schedule": "uniform_standard", "context_frames": context, "context_stride": 4,
                              "context_overlap": 16}}
        p["5"]["inputs"]["context_options"] = ["10", 0]
    return p


def test_wrapper_workflow_reads_as_text_encode_sample_decode_with_the_wrappers_own_placement():
    w = read_workflow(wrapper_prompt(swap=20))
    assert [s.kind for s in w.stages] == [TEXT_ENCODE, SAMPLE, VAE_DECODE]
    assert not w.unknown_nodes
    text, sample, decode = w.stages
    assert [m.name for m in text.models] == ["umt5_xxl_fp8_e4m3fn_scaled.safetensors"]
    assert sample.models[0].name == "wan2.1_t2v_14B_fp8_e4m3fn.safetensors"
    assert sample.models[0].weight_dtype == "fp8_e4m3fn"
    lat = sample.latent
    assert (lat.channels, lat.frames, lat.height, lat.width) == (16, 21, 60, 104)  # 81 frames -> 21; 480/8, 832/8
    assert (sample.steps, sample.cfg, sample.blocks_to_swap, sample.manager) == (30, 6.0, 20, "WanVideoWrapper")
    assert decode.latent == lat and decode.manager == "WanVideoWrapper"
    assert [m.name for m in decode.models] == ["wan_2.1_vae.safetensors"]


def test_wrapper_ui_workflow_without_widget_sockets_reads_widgets_by_the_packs_order():
    ui = {"nodes": [
        {"id": 1, "type": "WanVideoModelLoader", "mode": 0, "inputs": [],
         "outputs": [{"name": "model", "type": "WANVIDEOMODEL", "links": [1]}],
         "widgets_values": ["wan2.1_t2v_14B_fp8_e4m3fn.safetensors", "bf16", "fp8_e4m3fn", "offload_device", "sdpa"]},
        {"id": 2, "type": "WanVideoEmptyEmbeds", "mode": 0, "inputs": [],
         "outputs": [{"name": "image_embeds", "type": "WANVIDIMAGE_EMBEDS", "links": [2]}],
         "widgets_values": [1280, 720, 49]},
        {"id": 3, "type": "WanVideoSampler", "mode": 0,
         "inputs": [{"name": "model", "type": "WANVIDEOMODEL", "link": 1},
                    {"name": "image_embeds", "type": "WANVIDIMAGE_EMBEDS", "link": 2}],
         "outputs": [{"name": "samples", "type": "LATENT", "links": [3]}],
         "widgets_values": [25, 1.0, 8, 47, "fixed", True, "unipc", 0, 1, False, "comfy", 0, -1, False]},
        {"id": 4, "type": "SaveLatent", "mode": 0, "inputs": [{"name": "samples", "type": "LATENT", "link": 3}],
         "outputs": [], "widgets_values": ["x"]},
    ], "links": [[1, 1, 0, 3, 0, "WANVIDEOMODEL"], [2, 2, 0, 3, 1, "WANVIDIMAGE_EMBEDS"], [3, 3, 0, 4, 0, "LATENT"]]}
    sample = stages(read_workflow(ui), SAMPLE)[0]
    assert (sample.steps, sample.cfg) == (25, 1.0)
    assert sample.uses_negative is False  # cfg 1: the wrapper skips the uncond pass
    assert (sample.latent.frames, sample.latent.height, sample.latent.width) == (13, 90, 160)


def test_wan22_ti2v_5b_by_name_gets_the_48_channel_latent_at_16x():
    w = read_workflow(wrapper_prompt(model="Wan2_2-TI2V-5B_fp8_e4m3fn_scaled_KJ.safetensors", width=1280,
                                     height=704, frames=121))
    lat = stages(w, SAMPLE)[0].latent
    assert (lat.channels, lat.frames, lat.height, lat.width) == (48, 31, 44, 80)


def test_wrapper_does_not_partially_load_so_14b_bf16_on_a_4090_is_oom_until_blocks_are_swapped():
    name = "wan2.1_t2v_14B_bf16.safetensors"
    plain = B.estimate(read_workflow(wrapper_prompt(model=name, quant="disabled")), device("RTX 4090"))
    run = plain.runs[1]
    assert run.outcome == "oom"
    advice = " ".join(run.explanation)
    assert "does not load partially" in advice and "blocks_to_swap to" in advice
    wanted = int(advice.split("blocks_to_swap to ")[1].split(" ")[0])
    assert 10 < wanted < 40
    swapped = B.estimate(read_workflow(wrapper_prompt(model=name, quant="disabled", swap=wanted)), device("RTX 4090"))
    assert swapped.runs[1].outcome in ("fits", "runs_slower")
    assert swapped.runs[1].streamed_bytes > 0
    fewer = B.estimate(read_workflow(wrapper_prompt(model=name, quant="disabled", swap=wanted - 3)), device("RTX 4090"))
    assert fewer.runs[1].outcome == "oom"  # the advice is the minimum, not a guess


def test_wrapper_cfg_runs_cond_and_uncond_in_turn_unless_batched():
    one = B.estimate(read_workflow(wrapper_prompt()), device("H100"))
    two = B.estimate(read_workflow(wrapper_prompt(batched=True)), device("H100"))
    assert one.runs[1].cond_batch == 1 and two.runs[1].cond_batch == 2
    assert two.runs[1].peak_bytes > one.runs[1].peak_bytes


def test_wrapper_context_windows_are_noted():
    w = read_workflow(wrapper_prompt(frames=241, context=81))
    sample = stages(w, SAMPLE)[0]
    assert sample.context_frames == 81
    assert any("context windows of 81 frames" in n for n in sample.notes)


# ----------------------------------------------------------------------------------- MultiGPU
def multigpu_prompt(unet_device="cuda:0", clip_device="cuda:0", virtual=None):
    unet = {"class_type": "UNETLoaderMultiGPU",
            "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default", "device": unet_device}}
    if virtual is not None:
        unet = {"class_type": "UNETLoaderDisTorch2MultiGPU",
                "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default", "compute_device": "cuda:0",
                           "virtual_vram_gb": virtual, "donor_device": "cpu"}}
    return {
        "1": unet,
        "2": {"class_type": "DualCLIPLoaderMultiGPU",
              "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux",
                         "device": clip_device}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a cat", "clip": ["2", 0]}},
        "4": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                                   "latent_image": ["4", 0], "steps": 20, "cfg": 1.0}},
        "6": {"class_type": "VAELoaderMultiGPU", "inputs": {"vae_name": "ae.safetensors", "device": "cuda:1"}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}},
        "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0]}},
    }


def test_multigpu_variants_read_as_their_base_loader_and_models_on_another_gpu_are_not_on_this_card():
    w = read_workflow(multigpu_prompt(clip_device="cuda:1"))
    assert not w.unknown_nodes
    b = B.estimate(w, device())
    text, sample, decode = b.stages
    assert text.weights_bytes == 0 and decode.weights_bytes == 0  # both on cuda:1
    assert any("placed on cuda:1" in it.assumption for it in text.items)
    assert sample.weights_bytes > 20 * 10**9
    same = B.estimate(read_workflow(multigpu_prompt()), device())
    assert same.stages[0].weights_bytes > 9 * 10**9  # T5 fp16 on this card


def test_distorch2_virtual_vram_keeps_that_many_gib_off_the_card():
    full = B.estimate(read_workflow(multigpu_prompt()), device())
    virt = B.estimate(read_workflow(multigpu_prompt(virtual=8)), device())
    assert full.stages[1].weights_bytes - virt.stages[1].weights_bytes == 8 * GiB
    assert any("DisTorch virtual VRAM" in n for n in virt.notes) or any(
        "DisTorch virtual VRAM" in it.assumption for it in virt.stages[1].items)


# ------------------------------------------------------------------------ VHS, KJNodes, Impact
def test_vhs_video_size_fixed_by_custom_size_and_frame_cap_reaches_the_encode():
    prompt = {
        "1": {"class_type": "VHS_LoadVideo", "inputs": {"video": "in.mp4", "force_rate": 0, "custom_width": 640,
                                                       "custom_height": 352, "frame_load_cap": 81,
                                                       "skip_first_frames": 0, "select_every_nth": 1}},
        "2": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "3": {"class_type": "VAEEncode", "inputs": {"pixels": ["1", 0], "vae": ["2", 0]}},
        "4": {"class_type": "SaveLatent", "inputs": {"samples": ["3", 0]}},
    }
    enc = stages(read_workflow(prompt), VAE_ENCODE)[0]
    assert (enc.latent.pixel_width, enc.latent.pixel_height, enc.latent.pixel_frames, enc.latent.frames) == (
        640, 352, 81, 21)
    prompt["1"]["inputs"]["frame_load_cap"] = 0
    w = read_workflow(prompt)
    assert stages(w, VAE_ENCODE)[0].latent is None
    assert any("come from the file" in n for n in w.notes)


def test_a_video_of_unknown_size_resized_by_kjnodes_is_at_most_its_frame_cap():
    """VHS_LoadVideo with frame_load_cap 81 and no custom size, through GetImageSizeAndCount and a fixed-size
    ImageResizeKJ: 832x480, at most 81 frames (VHS stops at the cap); without the cap nothing is assumed. Into
    ReCamMaster's camera embed, the model attends over twice the source's latent frames; the decode sees them once."""
    def prompt(cap):
        return {
            "1": {"class_type": "VHS_LoadVideo", "inputs": {"video": "in.mp4", "force_rate": 0, "custom_width": 0,
                                                           "custom_height": 0, "frame_load_cap": cap,
                                                           "skip_first_frames": 0, "select_every_nth": 1}},
            "2": {"class_type": "GetImageSizeAndCount", "inputs": {"image": ["1", 0]}},
            "3": {"class_type": "ImageResizeKJ", "inputs": {"image": ["2", 0], "width": 832, "height": 480,
                                                            "upscale_method": "lanczos", "keep_proportion": False,
                                                            "divisible_by": 16}},
            "4": {"class_type": "WanVideoVAELoader", "inputs": {"model_name": "Wan2_1_VAE_bf16.safetensors",
                                                                "precision": "bf16"}},
            "5": {"class_type": "WanVideoEncode", "inputs": {"vae": ["4", 0], "image": ["3", 0],
                                                             "enable_vae_tiling": False}},
            "6": {"class_type": "WanVideoReCamMasterDefaultCamera", "inputs": {"camera_type": "pan_right"}},
            "7": {"class_type": "WanVideoReCamMasterCameraEmbed", "inputs": {"camera_poses": ["6", 0],
                                                                             "latents": ["5", 0]}},
            "8": {"class_type": "WanVideoModelLoader", "inputs": {
                "model": "Wan2_1_kwai_recammaster_1_3B_step20000_bf16.safetensors", "base_precision": "bf16",
                "quantization": "disabled", "load_device": "offload_device"}},
            "9": {"class_type": "LoadWanVideoT5TextEncoder", "inputs": {
                "model_name": "umt5-xxl-enc-bf16.safetensors", "precision": "bf16"}},
            "10": {"class_type": "WanVideoTextEncode", "inputs": {"t5": ["9", 0], "positive_prompt": "a cat",
                                                                  "negative_prompt": ""}},
            "11": {"class_type": "WanVideoSampler", "inputs": {"model": ["8", 0], "text_embeds": ["10", 0],
                                                               "image_embeds": ["7", 0], "steps": 20, "cfg": 6,
                                                               "shift": 5, "seed": 1, "scheduler": "unipc"}},
            "12": {"class_type": "WanVideoDecode", "inputs": {"vae": ["4", 0], "samples": ["11", 0]}},
        }

    w = read_workflow(prompt(81))
    enc = stages(w, VAE_ENCODE)[0]
    assert (enc.latent.pixel_width, enc.latent.pixel_height, enc.latent.frames) == (832, 480, 21)
    sample, decode = stages(w, SAMPLE)[0], stages(w, VAE_DECODE)[0]
    assert sample.latent.frames == 2 * 21 and decode.latent.frames == 21
    assert stages(read_workflow(prompt(0)), VAE_ENCODE)[0].latent is None  # no cap: the frame count is unknown


def test_kjnodes_resize_fixes_the_image_size():
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": "x.png"}},
        "2": {"class_type": "ImageResizeKJv2", "inputs": {"image": ["1", 0], "width": 832, "height": 480,
                                                         "upscale_method": "lanczos", "keep_proportion": "crop"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "VAEEncode", "inputs": {"pixels": ["2", 0], "vae": ["3", 0]}},
        "5": {"class_type": "SaveLatent", "inputs": {"samples": ["4", 0]}},
    }
    enc = stages(read_workflow(prompt), VAE_ENCODE)[0]
    assert (enc.latent.pixel_width, enc.latent.pixel_height) == (832, 480)


def _kj_loader_prompt(weight_dtype="fp8_e4m3fn", extra=None):
    """A Wan 2.1 t2v prompt whose model DiffusionModelLoaderKJ loads; ``extra``: the node feeding extra_state_dict."""
    p = {
        "1": {"class_type": "DiffusionModelLoaderKJ", "inputs": {
            "model_name": "Phantom-Wan-14B_fp16.safetensors", "weight_dtype": weight_dtype, "compute_dtype": "fp16",
            "patch_cublaslinear": False, "sage_attention": "disabled", "enable_fp16_accumulation": False}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                     "type": "wan"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a cat", "clip": ["2", 0]}},
        "4": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 832, "height": 480, "length": 81,
                                                                  "batch_size": 1}},
        "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                                   "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 6.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "6": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}},
        "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}},
    }
    if extra is not None:
        p["9"] = extra
        p["1"]["inputs"]["extra_state_dict"] = ["9", 0]
    return p


def test_kjnodes_diffusion_loader_casts_to_its_weight_dtype_and_merges_its_extra_state_dict():
    """DiffusionModelLoaderKJ (KJNodes model_optimization_nodes.py:331-410): the file at weight_dtype (fp8: a byte a
    weight, bf16 / fp16: two), and the VACE module DiffusionModelSelector names merged in, cast alike."""
    plain = read_workflow(_kj_loader_prompt())
    (ref,) = [r for r in stages(plain, SAMPLE)[0].models if r.role == "diffusion"]
    assert ref.name == "Phantom-Wan-14B_fp16.safetensors" and ref.weight_dtype == "fp8_e4m3fn"
    assert not plain.unknown_nodes
    selector = {"class_type": "DiffusionModelSelector",
                "inputs": {"model_name": "Wan2_1-VACE_module_14B_bf16.safetensors"}}
    w = read_workflow(_kj_loader_prompt(extra=selector))
    refs = {r.name: r for r in stages(w, SAMPLE)[0].models}
    module = refs["Wan2_1-VACE_module_14B_bf16.safetensors"]
    assert module.role == "controlnet" and module.weight_dtype == "fp8_e4m3fn"
    b_plain = B.estimate(plain, device())
    b_vace = B.estimate(w, device())
    assert b_plain.complete and b_vace.complete
    by_name = {s.title: s for s in b_vace.stages}
    weights = lambda b: max(s.weights_bytes for s in b.stages)  # noqa: E731
    # the module adds its own blocks (about 3 GB at fp8), never a second 14B model
    assert 1.5 * GiB < weights(b_vace) - weights(b_plain) < 5 * GiB, by_name
    # bf16: two bytes a weight whatever the file
    b16 = B.estimate(read_workflow(_kj_loader_prompt("bf16")), device())
    assert 1.8 < weights(b16) / weights(b_plain) < 2.2


def test_kjnodes_extra_state_dict_from_elsewhere_is_never_free():
    """A path typed into a string node: the state dict it names joins the model, its size unknown: can't tell."""
    w = read_workflow(_kj_loader_prompt(extra={"class_type": "PrimitiveString",
                                               "inputs": {"value": "/models/vace.safetensors"}}))
    assert any(r.unset for r in stages(w, SAMPLE)[0].models)
    assert not B.estimate(w, device()).complete


def test_kjnodes_gguf_loader_merges_its_extra_model():
    """GGUFLoaderKJ (model_optimization_nodes.py:1588-1700): its GGUF file, and the extra .gguf it merges (a VACE
    module) priced as that add-on, kept quantized; "none" adds nothing."""
    p = _kj_loader_prompt()
    p["1"] = {"class_type": "GGUFLoaderKJ", "inputs": {
        "model_name": "wan2.1-t2v-14b-Q8_0.gguf", "extra_model_name": "Wan2_1-VACE_module_14B_Q8_0.gguf",
        "dequant_dtype": "default", "patch_dtype": "default", "patch_on_device": False,
        "enable_fp16_accumulation": False, "attention_override": "none"}}
    w = read_workflow(p)
    refs = {r.name: r for r in stages(w, SAMPLE)[0].models}
    assert refs["wan2.1-t2v-14b-Q8_0.gguf"].gguf and refs["wan2.1-t2v-14b-Q8_0.gguf"].role == "diffusion"
    module = refs["Wan2_1-VACE_module_14B_Q8_0.gguf"]
    assert module.gguf and module.role == "controlnet"
    assert not w.unknown_nodes
    p["1"]["inputs"]["extra_model_name"] = "none"
    assert [r.name for r in stages(read_workflow(p), SAMPLE)[0].models] == ["wan2.1-t2v-14b-Q8_0.gguf"]


def test_kjnodes_checkpoint_loader_weight_dtype_reaches_the_model_only():
    p = {"1": {"class_type": "CheckpointLoaderKJ", "inputs": {
            "ckpt_name": "sd_xl_base_1.0.safetensors", "weight_dtype": "fp8_e4m3fn", "compute_dtype": "default",
            "patch_cublaslinear": False, "sage_attention": "disabled", "enable_fp16_accumulation": False}},
         "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a face", "clip": ["1", 1]}},
         "3": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
         "4": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0],
                                                    "latent_image": ["3", 0], "seed": 1, "steps": 20, "cfg": 6.0,
                                                    "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
         "5": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["1", 2]}},
         "6": {"class_type": "SaveImage", "inputs": {"images": ["5", 0], "filename_prefix": "x"}}}
    w = read_workflow(p)
    (model,) = stages(w, SAMPLE)[0].models
    assert (model.part, model.weight_dtype) == ("model", "fp8_e4m3fn")
    (vae,) = stages(w, VAE_DECODE)[0].models
    assert (vae.part, vae.weight_dtype) == ("vae", None)
    assert not w.unknown_nodes and B.estimate(w, device()).complete


def _flux_with_power_lora(rows: dict, clip_linked=True):
    """Flux dev through rgthree's Power Lora Loader (API prompt: rows as inputs lora_1, lora_2 ...)."""
    lora = {"model": ["1", 0], **rows}
    if clip_linked:
        lora["clip"] = ["2", 0]
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors",
                                                         "clip_name2": "t5xxl_fp16.safetensors", "type": "flux"}},
        "3": {"class_type": "Power Lora Loader (rgthree)", "inputs": lora},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a cat",
                                                         "clip": ["3", 1] if clip_linked else ["2", 0]}},
        "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["3", 0], "positive": ["4", 0], "negative": ["4", 0],
                                                   "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "7": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["7", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "x"}},
    }


def test_rgthree_power_lora_loader_applies_the_rows_that_are_on():
    """rgthree's load_loras (py/power_lora_loader.py:37-57): a row on with a strength other than 0 is core's LoraLoader
    on the model (strength) and the CLIP (strengthTwo, else strength); rows off or at 0 apply nothing."""
    rows = {"lora_1": {"on": True, "lora": "flux_style.safetensors", "strength": 0.8},
            "lora_2": {"on": False, "lora": "off.safetensors", "strength": 1.0},
            "lora_3": {"on": True, "lora": "clip_only.safetensors", "strength": 0, "strengthTwo": 0.5},
            "lora_4": {"on": True, "lora": "zero.safetensors", "strength": 0, "strengthTwo": 0}}
    w = read_workflow(_flux_with_power_lora(rows))
    model = {r.name: r.strength for r in stages(w, SAMPLE)[0].models if r.role == "lora"}
    clip = {r.name: r.strength for r in stages(w, TEXT_ENCODE)[0].models if r.role == "lora"}
    assert model == {"flux_style.safetensors": 0.8}
    assert clip == {"flux_style.safetensors": 0.8, "clip_only.safetensors": 0.5}
    assert not w.unknown_nodes
    # the LoRA's weights join the sampling stage's
    sample = lambda b: next(s for s in b.stages if s.stage.kind == SAMPLE)  # noqa: E731
    plain = B.estimate(read_workflow(_flux_with_power_lora({})), device())
    assert sample(B.estimate(w, device())).weights_bytes > sample(plain).weights_bytes
    # no CLIP linked: strengthTwo is ignored and the CLIP path has no LoRA
    w2 = read_workflow(_flux_with_power_lora(rows, clip_linked=False))
    assert not [r for r in stages(w2, TEXT_ENCODE)[0].models if r.role == "lora"]


def test_rgthree_power_lora_loader_rows_in_a_ui_workflow():
    """A UI workflow saves the rows in widgets_values beside the header widget: read the same way."""
    ui = {"last_node_id": 5, "last_link_id": 3,
          "links": [[1, 1, 0, 2, 0, "MODEL"], [2, 2, 0, 4, 0, "MODEL"], [3, 3, 0, 4, 3, "LATENT"]],
          "nodes": [
              {"id": 1, "type": "UNETLoader", "inputs": [],
               "outputs": [{"name": "MODEL", "type": "MODEL", "links": [1]}],
               "widgets_values": ["flux1-dev.safetensors", "default"]},
              {"id": 2, "type": "Power Lora Loader (rgthree)",
               "inputs": [{"name": "model", "type": "MODEL", "link": 1}],
               "outputs": [{"name": "MODEL", "type": "MODEL", "links": [2]},
                           {"name": "CLIP", "type": "CLIP", "links": []}],
               "widgets_values": [None, {"type": "PowerLoraLoaderHeaderWidget"},
                                  {"on": True, "lora": "flux_style.safetensors", "strength": 0.9, "strengthTwo": None},
                                  {"on": False, "lora": "off.safetensors", "strength": 1}, None, ""]},
              {"id": 3, "type": "EmptySD3LatentImage", "inputs": [],
               "outputs": [{"name": "LATENT", "type": "LATENT", "links": [3]}], "widgets_values": [1024, 1024, 1]},
              {"id": 4, "type": "KSampler",
               "inputs": [{"name": "model", "type": "MODEL", "link": 2},
                          {"name": "positive", "type": "CONDITIONING", "link": None},
                          {"name": "negative", "type": "CONDITIONING", "link": None},
                          {"name": "latent_image", "type": "LATENT", "link": 3}],
               "outputs": [{"name": "LATENT", "type": "LATENT", "links": []}],
               "widgets_values": [1, "fixed", 20, 1.0, "euler", "simple", 1.0]}]}
    w = read_workflow(ui)
    loras = {r.name: r.strength for r in stages(w, SAMPLE)[0].models if r.role == "lora"}
    assert loras == {"flux_style.safetensors": 0.9}
    assert not w.unknown_nodes


def test_a_socket_read_node_whose_row_widgets_name_model_files_is_not_read_as_passing_through():
    """A pack node no module describes, MODEL in and out, whose widget rows (dicts) name a LoRA file: its sockets do not
    say what the file costs, so it is 'not understood' (never 'adding no model of its own')."""
    p = _flux_with_power_lora({})
    p["3"] = {"class_type": "SomePackLoraRows", "inputs": {
        "model": ["1", 0], "clip": ["2", 0], "row_1": {"enabled": True, "file": "style.safetensors", "weight": 1.0}}}
    w = read_workflow(p)
    assert ("3", "SomePackLoraRows") in w.unknown_nodes
    assert not B.estimate(w, device()).complete


def _sdxl_base():
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a face", "clip": ["1", 1]}},
        "3": {"class_type": "LoadImage", "inputs": {"image": "x.png"}},
    }


def test_impact_detailer_is_encode_sample_decode_of_one_max_size_crop():
    p = _sdxl_base()
    p["4"] = {"class_type": "FaceDetailer", "inputs": {
        "image": ["3", 0], "model": ["1", 0], "clip": ["1", 1], "vae": ["1", 2], "positive": ["2", 0],
        "negative": ["2", 0], "guide_size": 512, "guide_size_for": True, "max_size": 1024, "seed": 1, "steps": 20,
        "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 0.5}}
    p["5"] = {"class_type": "SaveImage", "inputs": {"images": ["4", 0]}}
    w = read_workflow(p)
    assert [s.kind for s in w.stages if s.node_id == "4"] == [VAE_ENCODE, SAMPLE, VAE_DECODE]
    sample = stages(w, SAMPLE)[0]
    assert (sample.latent.pixel_width, sample.latent.pixel_height, sample.steps, sample.cfg) == (1024, 1024, 20, 7.0)
    assert sample.models[0].name == "sd_xl_base_1.0.safetensors"


def test_a_detailer_refining_with_sam_prices_sam_as_a_stage_of_its_own():
    """FaceDetailer's sam_model_opt: Impact's SAMLoader (the original Segment Anything, fp32) runs its image encoder
    on the whole image, padded to 1024 x 1024, before the crops: a stage of its own with the traced peak
    (families/sam1.py); on the CPU when device_mode says so; a SAM the name does not tell stays not priced.
    SAMDetectorCombined runs the same pass."""
    from vram_budget.nodes.estimator.families import sam1

    def prompt(name="sam_vit_h_4b8939.pth", mode="AUTO", node="FaceDetailer"):
        p = _sdxl_base()
        p["6"] = {"class_type": "SAMLoader", "inputs": {"model_name": name, "device_mode": mode}}
        if node == "FaceDetailer":
            p["4"] = {"class_type": "FaceDetailer", "inputs": {
                "image": ["3", 0], "model": ["1", 0], "clip": ["1", 1], "vae": ["1", 2], "positive": ["2", 0],
                "negative": ["2", 0], "sam_model_opt": ["6", 0], "guide_size": 512, "guide_size_for": True,
                "max_size": 1024, "seed": 1, "steps": 20, "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal",
                "denoise": 0.5}}
            p["5"] = {"class_type": "SaveImage", "inputs": {"images": ["4", 0]}}
        else:
            p["4"] = {"class_type": "SAMDetectorCombined", "inputs": {"sam_model": ["6", 0], "image": ["3", 0],
                                                                      "detection_hint": "center-1"}}
            p["5"] = {"class_type": "MaskToImage", "inputs": {"mask": ["4", 0]}}
            p["7"] = {"class_type": "SaveImage", "inputs": {"images": ["5", 0]}}
        return p

    w = read_workflow(prompt())
    assert [s.kind for s in w.stages if s.node_id == "4"] == [SAMPLE, VAE_ENCODE, SAMPLE, VAE_DECODE]
    budget = B.estimate(w, device())
    assert budget.complete, (budget.incomplete, budget.missing)
    sam = next(s for s in budget.stages if s.stage.node_id == "4" and "Segment Anything" in s.title)
    assert sam.weights_bytes == sam1.P_SAM1_VIT_H * 4  # fp32, the published 2.56 GB
    assert sam.working_bytes >= sam1.TRACE["sam1-vit-h"]
    cpu = read_workflow(prompt(mode="CPU"))
    assert [s.kind for s in cpu.stages if s.node_id == "4"] == [VAE_ENCODE, SAMPLE, VAE_DECODE]
    hq = read_workflow(prompt(name="sam_hq_vit_h.pth"))
    assert any("which SAM" in (s.unpriced or "") for s in hq.stages if s.node_id == "4")
    alone = B.estimate(read_workflow(prompt(name="sam_vit_b_01ec64.pth", node="SAMDetectorCombined")), device())
    assert alone.complete and any("Segment Anything (ViT-B)" in s.title for s in alone.stages)


def test_a_pack_node_that_runs_a_model_the_module_does_not_price_is_an_unpriced_stage():
    """Pack.unpriced: nunchaku's PuLID apply runs models nothing prices; it was 'handled' as if free. Now it is a
    stage that says what it runs, and the estimate is incomplete. (x-flux's IP-Adapter apply was the other: it is
    priced now, tests/test_ipadapter_flux.py.)"""
    assert "ApplyFluxIPAdapter" not in packs.REGISTRY.unpriced
    p = _sdxl_base()
    p["6"] = {"class_type": "NunchakuFluxPuLIDApplyV2", "inputs": {"model": ["1", 0], "image": ["3", 0]}}
    p["7"] = {"class_type": "KSampler", "inputs": {"model": ["6", 0], "positive": ["2", 0], "negative": ["2", 0],
                                                   "latent_image": ["9", 0], "seed": 1, "steps": 20, "cfg": 7.0,
                                                   "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}}
    p["9"] = {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}}
    p["8"] = {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["1", 2]}}
    p["5"] = {"class_type": "SaveImage", "inputs": {"images": ["8", 0]}}
    w = read_workflow(p)
    runner = [s for s in w.stages if s.node_type == "NunchakuFluxPuLIDApplyV2"]
    assert runner and "PuLID" in runner[0].unpriced
    assert stages(w, SAMPLE)[-1].models[0].name == "sd_xl_base_1.0.safetensors"  # the model flows on
    assert not B.estimate(w, device()).complete


def test_impact_pipes_carry_the_model_and_vae_through_converters_and_editors():
    """ToBasicPipe -> BasicPipeToDetailerPipe -> FromDetailerPipe feeds a FaceDetailer; DetailerPipeToBasicPipe
    -> EditBasicPipe (a new VAE) feeds a DetailerForEachPipe: each detailer gets the models that went in."""
    p = _sdxl_base()
    p.update({
        "6": {"class_type": "ToBasicPipe", "inputs": {"model": ["1", 0], "clip": ["1", 1], "vae": ["1", 2],
                                                      "positive": ["2", 0], "negative": ["2", 0]}},
        "7": {"class_type": "BasicPipeToDetailerPipe", "inputs": {"basic_pipe": ["6", 0], "wildcard": "",
                                                                  "Select to add LoRA": "", "Select to add Wildcard": ""}},
        "8": {"class_type": "FromDetailerPipe", "inputs": {"detailer_pipe": ["7", 0]}},
        "4": {"class_type": "FaceDetailer", "inputs": {
            "image": ["3", 0], "model": ["8", 0], "clip": ["8", 1], "vae": ["8", 2], "positive": ["8", 3],
            "negative": ["8", 4], "guide_size": 512, "guide_size_for": True, "max_size": 768, "seed": 1, "steps": 20,
            "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 0.5}},
        "9": {"class_type": "DetailerPipeToBasicPipe", "inputs": {"detailer_pipe": ["7", 0]}},
        "10": {"class_type": "VAELoader", "inputs": {"vae_name": "sdxl_vae.safetensors"}},
        "11": {"class_type": "EditBasicPipe", "inputs": {"basic_pipe": ["9", 0], "vae": ["10", 0]}},
        "12": {"class_type": "DetailerForEachPipe", "inputs": {
            "image": ["4", 0], "segs": ["13", 0], "basic_pipe": ["11", 0], "guide_size": 512, "guide_size_for": True,
            "max_size": 1024, "seed": 1, "steps": 20, "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal",
            "denoise": 0.5}},
        "13": {"class_type": "ImpactSimpleDetectorSEGS", "inputs": {"image": ["3", 0]}},
        "5": {"class_type": "SaveImage", "inputs": {"images": ["12", 0]}},
    })
    w = read_workflow(p)
    assert not w.unknown_nodes
    assert not [s for s in w.stages if s.node_type in ("ToBasicPipe", "EditBasicPipe")]  # no compute of their own
    by_node = {(s.node_id, s.kind): s for s in w.stages}
    assert [m.name for m in by_node[("4", SAMPLE)].models] == ["sd_xl_base_1.0.safetensors"]
    assert [m.name for m in by_node[("4", VAE_DECODE)].models] == ["sd_xl_base_1.0.safetensors"]
    assert [m.name for m in by_node[("12", SAMPLE)].models] == ["sd_xl_base_1.0.safetensors"]
    assert [m.name for m in by_node[("12", VAE_ENCODE)].models] == ["sdxl_vae.safetensors"]  # EditBasicPipe's VAE


def test_ultimate_sd_upscale_samples_padded_tiles():
    p = _sdxl_base()
    p["4"] = {"class_type": "UltimateSDUpscale", "inputs": {
        "image": ["3", 0], "model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0], "vae": ["1", 2],
        "upscale_by": 2, "seed": 1, "steps": 20, "cfg": 6, "sampler_name": "euler", "scheduler": "normal",
        "denoise": 0.2, "mode_type": "Chess", "tile_width": 768, "tile_height": 512, "mask_blur": 8,
        "tile_padding": 32}}
    p["5"] = {"class_type": "SaveImage", "inputs": {"images": ["4", 0]}}
    sample = stages(read_workflow(p), SAMPLE)[0]
    assert (sample.latent.pixel_width, sample.latent.pixel_height) == (832, 576)


# ----------------------------------------------------------------- RES4LYF, nunchaku, Easy-Use
def test_res4lyf_all_in_one_loader_and_clownshark_sampler():
    ui = {"nodes": [
        {"id": 1, "type": "FluxLoader", "mode": 0, "inputs": [],
         "outputs": [{"name": "model", "type": "MODEL", "links": [1]}, {"name": "clip", "type": "CLIP", "links": []},
                     {"name": "vae", "type": "VAE", "links": []}],
         "widgets_values": ["flux1-dev.sft", "fp8_e4m3fn_fast", "clip_l.safetensors", "t5xxl_fp16.safetensors",
                            "ae.sft", ".none", ".none"]},
        {"id": 2, "type": "EmptySD3LatentImage", "mode": 0, "inputs": [],
         "outputs": [{"name": "LATENT", "type": "LATENT", "links": [2]}], "widgets_values": [1024, 1024, 1]},
        {"id": 3, "type": "ClownsharKSampler_Beta", "mode": 0,
         "inputs": [{"name": "model", "type": "MODEL", "link": 1}, {"name": "latent_image", "type": "LATENT", "link": 2}],
         "outputs": [{"name": "output", "type": "LATENT", "links": [3]}],
         "widgets_values": [0.5, "multistep/res_2m", "bong_tangent", 30, -1, 1, 4, 3, "fixed", "standard", True]},
        {"id": 4, "type": "SaveLatent", "mode": 0, "inputs": [{"name": "samples", "type": "LATENT", "link": 3}],
         "outputs": [], "widgets_values": ["x"]},
    ], "links": [[1, 1, 0, 3, 0, "MODEL"], [2, 2, 0, 3, 1, "LATENT"], [3, 3, 0, 4, 0, "LATENT"]]}
    w = read_workflow(ui)
    sample = stages(w, SAMPLE)[0]
    assert [(m.name, m.weight_dtype) for m in sample.models] == [("flux1-dev.sft", "fp8_e4m3fn_fast")]
    assert (sample.steps, sample.cfg) == (30, 4)
    assert {m.name for m in w.models} >= {"clip_l.safetensors", "t5xxl_fp16.safetensors", "ae.sft"}
    assert not w.unknown_nodes


def test_nunchaku_svdq_loader_lora_and_text_encoders():
    prompt = {
        "1": {"class_type": "NunchakuFluxDiTLoader", "inputs": {"model_path": "svdq-int4-flux.1-dev",
                                                                "cache_threshold": 0, "attention": "nunchaku-fp16",
                                                                "cpu_offload": "auto", "device_id": 0}},
        "2": {"class_type": "NunchakuFluxLoraLoader", "inputs": {"model": ["1", 0], "lora_name": "turbo.safetensors",
                                                                 "lora_strength": 1.0}},
        "3": {"class_type": "NunchakuTextEncoderLoaderV2", "inputs": {"model_type": "flux.1",
                                                                      "text_encoder1": "clip_l.safetensors",
                                                                      "text_encoder2": "t5xxl_fp16.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a cat", "clip": ["3", 0]}},
        "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["2", 0], "positive": ["4", 0], "negative": ["4", 0],
                                                   "latent_image": ["5", 0], "steps": 8, "cfg": 1.0}},
        "7": {"class_type": "SaveLatent", "inputs": {"samples": ["6", 0]}},
    }
    w = read_workflow(prompt)
    assert [(m.name, m.role) for m in stages(w, SAMPLE)[0].models] == [
        ("svdq-int4-flux.1-dev", "diffusion"), ("turbo.safetensors", "lora")]
    assert [m.name for m in stages(w, TEXT_ENCODE)[0].models] == ["clip_l.safetensors", "t5xxl_fp16.safetensors"]
    sample = B.estimate(w, device("RTX 4070")).stages[1]
    # SVDQuant 4-bit stays 4-bit on the GPU (nunchaku dequantizes per layer): ~6.6 GB, not Flux's 23.8 GB
    assert 5 * 10**9 < sample.weights_bytes - 0 < 8 * 10**9 + 300 * 10**6


def test_easy_use_pipe_loader_presampling_ksampler():
    prompt = {
        "1": {"class_type": "easy a1111Loader", "inputs": {
            "ckpt_name": "sd_xl_base_1.0.safetensors", "vae_name": "Baked VAE", "clip_skip": -1, "lora_name": "None",
            "resolution": "832 x 1216", "empty_latent_width": 512, "empty_latent_height": 512,
            "positive": "a cat", "negative": "", "batch_size": 2}},
        "2": {"class_type": "easy preSampling", "inputs": {"pipe": ["1", 0], "steps": 25, "cfg": 7.0,
                                                           "sampler_name": "euler", "scheduler": "normal", "denoise": 1}},
        "3": {"class_type": "easy kSampler", "inputs": {"pipe": ["2", 0], "image_output": "Preview"}},
    }
    w = read_workflow(prompt)
    sample, decode = [s for s in w.stages if s.node_id == "3"]
    assert (sample.kind, decode.kind) == (SAMPLE, VAE_DECODE)
    assert (sample.latent.pixel_width, sample.latent.pixel_height, sample.latent.batch) == (832, 1216, 2)
    assert (sample.steps, sample.cfg) == (25, 7.0)
    assert [(m.name, m.part) for m in sample.models] == [("sd_xl_base_1.0.safetensors", "model")]
    assert [(m.name, m.part) for m in decode.models] == [("sd_xl_base_1.0.safetensors", "vae")]


def test_res4lyf_chain_sampler_continues_with_the_model_of_the_sampler_before_it():
    prompt = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "3": {"class_type": "ClownsharKSampler_Beta", "inputs": {"model": ["1", 0], "latent_image": ["2", 0],
                                                                  "steps": 30, "cfg": 1.0}},
        "4": {"class_type": "ClownsharkChainsampler_Beta", "inputs": {"latent_image": ["3", 0], "steps_to_run": 5,
                                                                       "cfg": 1.0}},
        "5": {"class_type": "SaveLatent", "inputs": {"samples": ["4", 0]}},
    }
    first, chain = stages(read_workflow(prompt), SAMPLE)
    assert [m.name for m in chain.models] == ["flux1-dev.safetensors"] and chain.steps == 5
    assert chain.latent == first.latent


def test_an_all_in_one_flux_checkpoint_is_split_into_its_parts():
    prompt = {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "flux1-schnell-fp8.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
        "3": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "4": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0],
                                                   "latent_image": ["3", 0], "steps": 4, "cfg": 1.0}},
        "5": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["1", 2]}},
        "6": {"class_type": "SaveImage", "inputs": {"images": ["5", 0]}},
    }
    b = B.estimate(read_workflow(prompt), device())
    assert b.complete, (b.missing, b.incomplete)
    text, sample, decode = b.stages
    assert 11 * 10**9 < sample.weights_bytes < 13 * 10**9  # the fp8 transformer's share of 17.2 GB
    assert 4 * 10**9 < text.weights_bytes < 6 * 10**9 and decode.weights_bytes < 10**9


def test_a_node_that_encodes_its_control_image_inside_gets_the_images_size():
    prompt = {
        "1": {"class_type": "EmptyImage", "inputs": {"width": 1328, "height": 1328, "batch_size": 1, "color": 0}},
        "2": {"class_type": "VAELoader", "inputs": {"vae_name": "qwen_image_vae.safetensors"}},
        "3": {"class_type": "SomeControlNetApplyWithVae", "inputs": {"image": ["1", 0], "vae": ["2", 0],
                                                                      "positive": ["4", 0], "strength": 1.0}},
        "4": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["4", 0]}},
        "5": {"class_type": "PreviewAny", "inputs": {"source": ["3", 0]}},
    }
    enc = stages(read_workflow(prompt), VAE_ENCODE)[0]
    assert (enc.latent.pixel_width, enc.latent.pixel_height) == (1328, 1328)


def test_wan_planner_outputs_drive_the_wrappers_embeds():
    p = wrapper_prompt(swap=20)
    p["20"] = {"class_type": "VRAMBudgetWanPlanner", "inputs": {
        "variant": "Wan 2.1 14B", "precision": "fp8_e4m3fn", "width": 1280, "height": 720, "length": 81,
        "seconds": 0.0, "keep": "balanced"}}
    p["4"]["inputs"].update(width=["20", 0], height=["20", 1], num_frames=["20", 2])
    sample = stages(read_workflow(p), SAMPLE)[0]
    assert (sample.latent.pixel_width, sample.latent.pixel_height, sample.latent.pixel_frames) == (1280, 720, 81)
    assert sample.blocks_to_swap == 20


def test_humo_embeds_add_a_latent_frame_per_reference_and_always_vae_encode():
    """HuMoEmbeds (WanVideoWrapper HuMo/nodes.py:119-230): frames rounded to 4k+1, each reference image one
    more latent frame, and the whole video's zero frames VAE-encoded; KJNodes INTConstant feeds num_frames."""
    p = wrapper_prompt(model="humo_17B_fp8_e4m3fn.safetensors", width=1280, height=720)
    p["11"] = {"class_type": "INTConstant", "inputs": {"value": 67}}  # rounded down to 65 -> 17 latent frames
    p["12"] = {"class_type": "EmptyImage", "inputs": {"width": 1280, "height": 720, "batch_size": 2, "color": 0}}
    p["4"] = {"class_type": "HuMoEmbeds", "inputs": {
        "num_frames": ["11", 0], "width": 1280, "height": 720, "audio_scale": 1.0, "audio_cfg_scale": 2.0,
        "audio_start_percent": 0.0, "audio_end_percent": 1.0, "tiled_vae": False, "vae": ["6", 0],
        "reference_images": ["12", 0], "whisper_model": ["13", 0]}}
    p["13"] = {"class_type": "WhisperModelLoader", "inputs": {
        "model": "whisper_large_v3_encoder_fp16.safetensors", "base_precision": "fp16", "load_device": "main_device"}}
    w = read_workflow(p)
    assert not w.unknown_nodes
    assert [s.kind for s in w.stages] == [TEXT_ENCODE, AUDIO_ENCODE, VAE_ENCODE, SAMPLE, VAE_DECODE]
    audio = stages(w, AUDIO_ENCODE)[0]  # Whisper encodes the audio on the GPU first (HuMo/nodes.py:150-190)
    assert [(m.name, m.role, m.folder) for m in audio.models] == [
        ("whisper_large_v3_encoder_fp16.safetensors", "audio_encoder", "audio_encoders")]
    assert audio.manager == "WanVideoWrapper"
    sample = stages(w, SAMPLE)[0]
    assert (sample.latent.pixel_frames, sample.latent.frames) == (65, 17 + 2)
    encode = stages(w, VAE_ENCODE)[0]
    assert encode.manager == "WanVideoWrapper" and [m.name for m in encode.models] == ["wan_2.1_vae.safetensors"]
    # without reference images: no extra latent frame, and the encode still runs
    del p["4"]["inputs"]["reference_images"]
    w = read_workflow(p)
    assert stages(w, SAMPLE)[0].latent.frames == 17 and len(stages(w, VAE_ENCODE)) == 1
    b = B.estimate(w, device())
    assert all(s.weights_bytes > 0 for s in b.stages)


def test_phantom_embeds_take_the_size_of_their_latents_and_add_their_frames():
    """WanVideoPhantomEmbeds (nodes.py:1536-1590): H, W from the phantom latents, frames from num_frames,
    and the sampler appends the phantom latents' frames (nodes_sampler.py:1314-1317)."""
    p = wrapper_prompt(model="Phantom-Wan-14B_fp16.safetensors")
    p["12"] = {"class_type": "EmptyImage", "inputs": {"width": 832, "height": 480, "batch_size": 1, "color": 0}}
    for node_id in ("13", "14"):
        p[node_id] = {"class_type": "WanVideoEncode", "inputs": {
            "vae": ["6", 0], "image": ["12", 0], "enable_vae_tiling": False, "tile_x": 272, "tile_y": 272,
            "tile_stride_x": 144, "tile_stride_y": 128}}
    p["4"] = {"class_type": "WanVideoPhantomEmbeds", "inputs": {
        "num_frames": 121, "phantom_cfg_scale": 5.0, "phantom_start_percent": 0.0, "phantom_end_percent": 1.0,
        "phantom_latent_1": ["13", 0], "phantom_latent_2": ["14", 0]}}
    w = read_workflow(p)
    sample = stages(w, SAMPLE)[0]
    assert (sample.latent.frames, sample.latent.height, sample.latent.width) == (31 + 2, 60, 104)
    assert sample.latent.pixel_frames == 121
    assert B.estimate(w, device()).complete
    del p["4"]["inputs"]["phantom_latent_1"], p["4"]["inputs"]["phantom_latent_2"]
    assert stages(read_workflow(p), SAMPLE)[0].latent is None  # no latent: no size, said as unknown


# --------------------------------------------------------------------------------- x-flux-comfyui
def test_xflux_sampler_lora_and_controlnet():
    """XLabs' XlabsSampler (true_gs: real CFG with the negative), FluxLoraLoader from models/xlabs/loras and
    LoadFluxControlNet from models/xlabs/controlnets, applied through ApplyFluxControlNet."""
    p = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "FluxLoraLoader", "inputs": {"model": ["1", 0], "lora_name": "realism_lora.safetensors",
                                                         "strength_model": 1.0}},
        "3": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors",
                                                         "clip_name2": "clip_l.safetensors", "type": "flux"}},
        "4": {"class_type": "CLIPTextEncodeFlux", "inputs": {"clip": ["3", 0], "clip_l": "a cat", "t5xxl": "a cat",
                                                             "guidance": 3.5}},
        "5": {"class_type": "CLIPTextEncodeFlux", "inputs": {"clip": ["3", 0], "clip_l": "", "t5xxl": "",
                                                             "guidance": 3.5}},
        "6": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 768, "batch_size": 1}},
        "7": {"class_type": "LoadFluxControlNet", "inputs": {"model_name": "flux-dev",
                                                             "controlnet_path": "flux-canny-controlnet-v3.safetensors"}},
        "8": {"class_type": "LoadImage", "inputs": {"image": "edges.png"}},
        "9": {"class_type": "ApplyFluxControlNet", "inputs": {"controlnet": ["7", 0], "image": ["8", 0],
                                                              "strength": 0.7}},
        "10": {"class_type": "XlabsSampler", "inputs": {
            "model": ["2", 0], "conditioning": ["4", 0], "neg_conditioning": ["5", 0], "latent_image": ["6", 0],
            "controlnet_condition": ["9", 0], "noise_seed": 1, "steps": 25, "timestep_to_start_cfg": 1,
            "true_gs": 3.5, "image_to_image_strength": 0, "denoise_strength": 1.0}},
        "11": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "12": {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["11", 0]}},
        "13": {"class_type": "SaveImage", "inputs": {"images": ["12", 0], "filename_prefix": "x"}},
    }
    w = read_workflow(p)
    assert not w.unknown_nodes
    sample = stages(w, SAMPLE)[0]
    assert (sample.steps, sample.cfg, sample.uses_negative) == (25, 3.5, True)
    assert (sample.latent.height, sample.latent.width) == (96, 128)
    by_role = {m.role: m for m in sample.models}
    assert by_role["diffusion"].name == "flux1-dev.safetensors"
    assert (by_role["lora"].name, by_role["lora"].folder) == ("realism_lora.safetensors", "xlabs/loras")
    assert (by_role["controlnet"].name, by_role["controlnet"].folder) == ("flux-canny-controlnet-v3.safetensors",
                                                                        "xlabs/controlnets")
    from vram_budget.nodes.estimator.families.flux1 import P_XLABS_CN

    cn = [i for sb in B.estimate(w, device()).stages for i in sb.items if i.model and i.model.kind == "controlnet"]
    assert [i.bytes for i in cn] == [2 * P_XLABS_CN]  # 2 Flux double blocks + embedders, 16-bit: 1.49 GB
    p["9"]["inputs"]["strength"] = 0.0  # not applied: not loaded
    assert "controlnet" not in {m.role for m in stages(read_workflow(p), SAMPLE)[0].models}
    p["10"]["inputs"]["true_gs"] = 1.0  # no real CFG: the negative is not evaluated
    assert stages(read_workflow(p), SAMPLE)[0].uses_negative is False


def test_pack_modules_use_only_the_documented_analyzer_api():
    """packs/__init__.py PACK_API: what a handler may call on the analyzer `a` (every name exists on it); a pack
    that reaches for a private helper fails here, so the analyzer's internals can change freely."""
    import ast
    from pathlib import Path

    from vram_budget.nodes.estimator.graph.analyzer import _Analyzer

    for name in packs.PACK_API - {"nodes", "advanced_start"}:  # (those two are instance attributes)
        assert callable(getattr(_Analyzer, name, None)), name
    folder = Path(packs.__file__).parent
    used = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "a":
                used.setdefault(node.attr, path.name)
    outside = {k: v for k, v in used.items() if k not in packs.PACK_API}
    assert not outside, outside
    assert {"loader_ref", "refs", "sample_stage", "unpriced"} <= set(used)


def test_the_analyzer_names_no_node_type():
    """Issue 34: what a node means lives in its pack module; the generic analyzer compares no class_type with a
    literal (a node type in quotes would be a table or handler of some pack)."""
    import re as _re

    from pathlib import Path

    src = (Path(packs.__file__).parents[1] / "analyzer.py").read_text(encoding="utf-8")
    code = _re.sub(r'"""[\s\S]*?"""|#[^\n]*', "", src)
    compared = _re.findall(r'(?:\.type|node_type)\s*(?:==|!=|in)\s*(\(?\s*"[^"]+")', code)
    assert not compared, compared
    assert not _re.findall(r'"(?:[A-Z][a-z0-9]+){2,}[A-Za-z0-9]*"', code)  # no CamelCase class name at all


def test_hunyuanvideowrapper_text_encoders_are_priced_and_its_sampler_is_a_stage():
    """DownloadAndLoadHyVideoTextEncoder: the Llama 3 8B LLM (fp16, or 1 byte a weight with fp8_e4m3fn) and the
    CLIP-L text tower unless disabled, on the card while HyVideoTextEncode runs. The wrapper's sampler runs its
    HYVIDEOMODEL (tests/test_pack_hunyuanvideowrapper.py prices it), never a pass-through."""
    def prompt(quant="disabled", clip="openai/clip-vit-large-patch14"):
        return {
            "1": {"class_type": "DownloadAndLoadHyVideoTextEncoder", "inputs": {
                "llm_model": "Kijai/llava-llama-3-8b-text-encoder-tokenizer", "clip_model": clip, "precision": "fp16",
                "quantization": quant}},
            "2": {"class_type": "HyVideoTextEncode", "inputs": {"text_encoders": ["1", 0], "prompt": "a cat walks"}},
            "3": {"class_type": "HyVideoModelLoader", "inputs": {
                "model": "hunyuan_video_720_fp8_e4m3fn.safetensors", "base_precision": "bf16",
                "quantization": "fp8_e4m3fn", "load_device": "offload_device"}},
            "4": {"class_type": "HyVideoSampler", "inputs": {"model": ["3", 0], "hyvid_embeds": ["2", 0],
                                                             "width": 512, "height": 320, "num_frames": 49,
                                                             "steps": 30, "embedded_guidance_scale": 6.0}},
        }

    w = read_workflow(prompt())
    text = stages(w, TEXT_ENCODE)[0]
    assert sorted(r.name for r in text.models) == ["Kijai/llava-llama-3-8b-text-encoder-tokenizer",
                                                  "openai/clip-vit-large-patch14"]
    budget = B.estimate(w, device())
    enc = next(s for s in budget.stages if s.stage.kind == TEXT_ENCODE)
    fp8 = next(s for s in B.estimate(read_workflow(prompt(quant="fp8_e4m3fn", clip="disabled")), device()).stages
               if s.stage.kind == TEXT_ENCODE)
    assert enc.weights_bytes > 15 * GiB and 7 * GiB < fp8.weights_bytes < 8 * GiB
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.stage.node_type == "HyVideoSampler" and sample.weights_bytes > 11 * GiB
