"""kijai/ComfyUI-CogVideoXWrapper (at fdb8abd): CogVideoX 2B / 5B / 1.5 5B and CogVideoX-Fun run as the pack's own
diffusers pipeline (families/cogvideox.py: ComfyUI 0.33's CogVideoX class, counted and traced, prices them).

- DownloadAndLoadCogVideoModel (model_loading.py:128-440) loads a Hugging Face folder of models/CogVideo by its repo
  name and casts the transformer to ``precision`` (fp8 when ``quantization`` asks), the VAE likewise; it returns the
  pipeline (COGVIDEOMODEL) and the VAE. CogVideoXModelLoader / CogVideoXVAELoader read single files of
  diffusion_models / vae the same way.
- CogVideoTextEncode (nodes.py:150-190) encodes with ComfyUI's own CLIP (T5-XXL) padded to 226 tokens, then offloads it
  (force_offload): a text-encode stage under ComfyUI's memory management.
- CogVideoSampler (nodes.py:608-790) moves the whole transformer to the GPU (:692-693, no partial load; with
  enable_sequential_cpu_offload accelerate streams it leaf by leaf), runs cond and uncond batched
  (pipeline_cogvideox.py:657 torch.cat([latents] * 2) when cfg > 1), then moves it back. Its size: the height / width of
  ``samples`` (a 4-D empty latent) or of ``image_cond_latents``, ``num_frames`` pixel frames.
- CogVideoDecode (nodes.py:849-890) moves the VAE to the GPU and decodes the clip (tiled with enable_vae_tiling); a
  decode that fails is retried tiled (:883-889), as ComfyUI's own VAE decode is: priced as ComfyUI's decode of the
  clip with its tiled retry (the traced CogVideoX decode; the diffusers decoder runs 2 latent frames a call, so an
  upper bound). CogVideoImageEncode / CogVideoImageEncodeFunInP encode the start (and end) image(s) likewise.

Not priced, and said: the GGUF loader's Q4_0 files (their sizes are not known here), the ControlNet and Tora models.
"""
from __future__ import annotations

from ...machine.resolve import PACK_16BIT
from ...workload import DIFFUSERS, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE, LatentShape, ModelRef, Stage
from ..base import _replace
from . import Pack, loader

MODEL = "COGVIDEOMODEL"
DOWNLOAD, FILE_LOADER, VAE_LOADER = "DownloadAndLoadCogVideoModel", "CogVideoXModelLoader", "CogVideoXVAELoader"
TEXT, SAMPLER, DECODE = "CogVideoTextEncode", "CogVideoSampler", "CogVideoDecode"
ENCODE, ENCODE_FUN = "CogVideoImageEncode", "CogVideoImageEncodeFunInP"
FOLDER = "CogVideo"  # folder_paths "CogVideo" -> models/CogVideo (the download loader's folder)
TEXT_TOKENS = 226  # CogVideoTextEncode max_tokens (nodes.py:168): T5 padded to 226
VAE_NAME = "cogvideox_vae.safetensors"  # the pipelines' vae/ folder: the CogVideoX VAE (families/cogvideox.py)
FP8 = "fp8_e4m3fn"


def _weight_dtype(a, node, precision_widget: str) -> str | None:
    quant = str(a.value(node, "quantization") or "disabled")
    if quant != "disabled":
        if "fp6" in quant:
            a.note(f"{a.label(node)}: quantization {quant} priced as fp8 (1 byte a weight; torchao's fp6 packs "
                   "6 bits: an upper bound)")
        return FP8  # fp8_e4m3fn(_fastmode), torchao fp8 / int8: 1 byte a weight
    return None if str(a.value(node, precision_widget) or "bf16") == "fp32" else PACK_16BIT


@loader
def _download_refs(a, node, slot, type_, visiting):
    repo = str(a.value(node, "model") or "")
    name = repo.rsplit("/", 1)[-1]
    if not name:
        return []
    if type_ == MODEL:
        return [ModelRef(name=name, role="diffusion", folder=FOLDER, loader_node=node.id, loader_type=node.type,
                         weight_dtype=_weight_dtype(a, node, "precision"))]
    if type_ == "VAE":
        return [ModelRef(name=VAE_NAME, role="vae", folder="vae", loader_node=node.id, loader_type=node.type)]
    return []


@loader
def _file_refs(a, node, slot, type_, visiting):
    if node.type == FILE_LOADER and type_ == MODEL:
        ref = a.loader_ref(node, "model", role="diffusion", folder="diffusion_models",
                           weight_dtype=_weight_dtype(a, node, "base_precision"))
        return [ref] if ref else []
    if node.type == VAE_LOADER and type_ == "VAE":
        ref = a.loader_ref(node, "model_name", role="vae", folder="vae")
        return [ref] if ref else []
    return []


def _clip(node, pixel_height: int, pixel_width: int, frames: int) -> LatentShape:
    """A CogVideoX latent of `frames` pixel frames (bounded by the widgets' 1024) -> (n - 1) // 4 + 1 latent frames,
    16 channels at /8."""
    latent_frames = (max(1, min(int(frames), 1024)) - 1) // 4 + 1
    return LatentShape(batch=1, channels=16, height=pixel_height // 8, width=pixel_width // 8, frames=latent_frames,
                       pixel_height=pixel_height, pixel_width=pixel_width, pixel_frames=(latent_frames - 1) * 4 + 1,
                       spatial_compression=8, temporal_compression=4, source_node=node.id, source_type=node.type)


def _latent(a, node, frames: int | None) -> LatentShape | None:
    """The sampler's size: the 4-D `samples` latent's or the 5-D `image_cond_latents`' height and width (nodes.py:
    674-684), num_frames pixel frames (the widget's own limit 1024, nodes.py:617)."""
    src = a.latent(a.link(node, "image_cond_latents")) or a.latent(a.link(node, "samples"))
    if src is None or not frames:
        return None
    shape = _clip(node, src.height * 8, src.width * 8, frames)
    a.check_size(node, shape.pixel_width, shape.pixel_height, shape.pixel_frames, 1)
    return shape


def _sampled(a, node, slot, depth):
    """The sampler's LATENT: the clip it samples (its `samples` input only gives the size)."""
    return _latent(a, node, a.number(node, "num_frames", 49))


def _model_node(a, node):
    refs = a.refs(a.link(node, "model"), MODEL)
    return (a.nodes.get(refs[0].loader_node) if refs else None), refs


def _sample(a, node):
    loader_node, _ = _model_node(a, node)
    sequential = loader_node is not None and a.value(loader_node, "enable_sequential_cpu_offload") is True
    shape = _latent(a, node, a.number(node, "num_frames", 49))
    cfg = a.number(node, "cfg", integer=False)
    if a.link(node, "controlnet") is not None or a.link(node, "tora_trajectory") is not None:
        a.unpriced("the CogVideoX ControlNet / Tora model the sampler is given is not priced")
    if shape is None:
        a.stage_note("the sampler's size comes from its samples / image_cond_latents input, not known here")
    stage = a.sample_stage(node, model_links=[a.link(node, "model")], cond_links=[], cfg=cfg,
                           uses_negative=cfg is not None and cfg > 1, steps=a.number(node, "steps"), model_type=MODEL,
                           latent=shape, cfg_batched=True, manager=DIFFUSERS,
                           offload="sequential" if sequential else "model", text_tokens=TEXT_TOKENS,
                           offload_fix="enable_sequential_cpu_offload on the model loader (or quantization "
                                       "fp8_e4m3fn)")
    return [stage]


def _text(a, node):
    return [_replace(a.text_stage(node), text_tokens=TEXT_TOKENS)]


def _tiles(a, node, widget: str):
    """diffusers AutoencoderKLCogVideoX.enable_tiling: tiles of tile_sample_min_height x _width pixels (auto: half the
    size), all frames; None when tiling is off."""
    if a.value(node, widget) is not True:
        return None
    side = min(a.number(node, "tile_sample_min_height", 240) or 240,
               a.number(node, "tile_sample_min_width", 360) or 360)
    return {"tile_size": max(64, side), "overlap": max(8, side // 5), "temporal_size": 10_000, "temporal_overlap": 0}


def _decode(a, node):
    shape = a.latent(a.link(node, "samples"))
    vae = tuple(a.refs(a.link(node, "vae"), "VAE"))
    a.stage_note("the wrapper's diffusers VAE, priced as ComfyUI's CogVideoX decode of the whole clip (its decoder "
                 "runs 2 latent frames a call: an upper bound); a failed decode is retried tiled (nodes.py:883-889)")
    return [Stage(kind=VAE_DECODE, node_id=node.id, node_type=node.type, models=vae, latent=shape,
                  tiled=_tiles(a, node, "enable_vae_tiling"))]


def _encode(a, node):
    size = a.image_size(a.link(node, "start_image"))
    vae = tuple(a.refs(a.link(node, "vae"), "VAE"))
    if size is None:
        return [Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type, models=vae, latent=None)]
    # CogVideoImageEncode encodes the start image alone (one frame); the Fun InP encode pads it to num_frames
    frames = (a.number(node, "num_frames", 49) or 49) if node.type == ENCODE_FUN else 1
    shape = _clip(node, size.height, size.width, frames)
    tiled = None
    if a.value(node, "enable_tiling") is True:
        tiled = {"tile_size": 256, "overlap": 32, "temporal_size": 10_000, "temporal_overlap": 0}
    return [Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type, models=vae, latent=shape, tiled=tiled)]


PACK = Pack(
    name="ComfyUI-CogVideoXWrapper",
    samplers={SAMPLER},
    stage_kinds={SAMPLER: SAMPLE, TEXT: TEXT_ENCODE, DECODE: VAE_DECODE, ENCODE: VAE_ENCODE, ENCODE_FUN: VAE_ENCODE},
    stages={SAMPLER: _sample, TEXT: _text, DECODE: _decode, ENCODE: _encode, ENCODE_FUN: _encode},
    refs={DOWNLOAD: _download_refs, FILE_LOADER: _file_refs, VAE_LOADER: _file_refs},
    latents={SAMPLER: _sampled},
    handled={"CogVideoXTeaCache", "CogVideoXFasterCache", "CogVideoContextOptions", "CogVideoEnhanceAVideo",
             "CogVideoTransformerEdit", "CogVideoXTorchCompileSettings", "CogVideoLoraSelect",
             "CogVideoLoraSelectComfy", "CogVideoTextEncodeCombine", "CogVideoLatentPreview",
             "CogVideoXFunResizeToClosestBucket", "CogVideoControlNet", "ToraEncodeTrajectory",
             "ToraEncodeOpticalFlow"},
    unpriced={"DownloadAndLoadCogVideoGGUFModel": "the wrapper's Q4_0 CogVideoX files (their sizes are not known here)",
              "DownloadAndLoadCogVideoControlNet": "a CogVideoX ControlNet (not priced)",
              "DownloadAndLoadToraModel": "the Tora trajectory model (not priced)"},
    relevant_types={MODEL},
    # the nodes' INPUT_TYPES order at fdb8abd (model_loading.py, nodes.py); "seed" is followed by its
    # control_after_generate value in a UI workflow
    widgets={DOWNLOAD: ["model", "precision", "quantization", "enable_sequential_cpu_offload", "attention_mode",
                        "load_device"],
             FILE_LOADER: ["model", "base_precision", "quantization", "load_device", "enable_sequential_cpu_offload",
                           "attention_mode"],
             VAE_LOADER: ["model_name", "precision"],
             SAMPLER: ["num_frames", "steps", "cfg", "seed", "scheduler", "denoise_strength"],
             DECODE: ["enable_vae_tiling", "tile_sample_min_height", "tile_sample_min_width",
                      "tile_overlap_factor_height", "tile_overlap_factor_width", "auto_tile_size"],
             ENCODE: ["enable_tiling", "noise_aug_strength", "strength", "start_percent", "end_percent"],
             ENCODE_FUN: ["num_frames", "enable_tiling", "noise_aug_strength"],
             TEXT: ["prompt", "strength", "force_offload"]},
    output_types={DOWNLOAD: [MODEL, "VAE"], FILE_LOADER: [MODEL], VAE_LOADER: ["VAE"], SAMPLER: ["LATENT"],
                  TEXT: ["CONDITIONING", "CLIP"], DECODE: ["IMAGE"], ENCODE: ["LATENT"], ENCODE_FUN: ["LATENT"]},
    input_types={SAMPLER: {"model": MODEL, "positive": "CONDITIONING", "negative": "CONDITIONING",
                           "samples": "LATENT", "image_cond_latents": "LATENT"},
                 TEXT: {"clip": "CLIP"}, DECODE: {"vae": "VAE", "samples": "LATENT"},
                 ENCODE: {"vae": "VAE", "start_image": "IMAGE", "end_image": "IMAGE"},
                 ENCODE_FUN: {"vae": "VAE", "start_image": "IMAGE", "end_image": "IMAGE"}},
)
