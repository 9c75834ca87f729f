"""kijai/ComfyUI-HunyuanVideoWrapper (nodes.py at 3ce9640): its loaders, text encoders, sampler and VAE nodes.

- DownloadAndLoadHyVideoTextEncoder: the LLM named in ``llm_model`` (Kijai/llava-llama-3-8b-text-encoder-tokenizer,
  a Llama 3 8B, from models/LLM) at its ``precision`` widget (fp16 / bf16 / fp32), or with ``quantization``
  fp8_e4m3fn (1 byte a weight, the embedding at the precision) or bnb_nf4 (bitsandbytes 4-bit with double
  quantization, priced at 16 bits here: an upper bound, said); and, unless ``clip_model`` is "disabled", OpenAI's
  CLIP ViT-L/14 text tower from models/clip.
- HyVideoTextEncode: moves the LLM to the text-encoder device, encodes the prompt (and the negative one with a
  HYVID_CFG), and back to the offload device with force_offload; then the CLIP-L, or ComfyUI's CLIP given on its
  ``clip_l`` input: one stage with both.
- HyVideoModelLoader (nodes.py:276-490): the HunyuanVideo DiT from models/diffusion_models, cast to
  ``base_precision`` or stored in fp8 with ``quantization``; the pack places it itself (manager "HunyuanVideoWrapper",
  machine/runtime.py BLOCK_SWAP_RULES): the sampler moves the whole transformer to the GPU (``transformer.to(device)``
  with manual offloading) and back after it, but for the double and single blocks HyVideoBlockSwap keeps in RAM
  (each its share of the weights, one moved in at a time). ``auto_cpu_offload`` (DiffSynth's per-module offload) is
  not modelled: a sampler behind it is named, not priced.
- HyVideoSampler (nodes.py:1286-1500): [1, 16, (num_frames - 1) // 4 + 1, height / 8, width / 8] at its widgets
  (the latent it is given only starts it), embedded guidance; a HyVideoCFG on the embeds adds the negative,
  batched with the positive unless its ``batched_cfg`` is off.
- HyVideoInverseSampler / HyVideoReSampler (RF-Inversion) on the latent they are given, HyVideoPromptMixSampler's two
  prompts as a batch of 2 at its widgets' size (nodes_rf_inversion.py).
- HyVideoDecode / HyVideoEncode: the pack's own causal 3D VAE, tiled when ``enable_vae_tiling``: 256 px tiles of 64
  frames with a quarter overlap under ``auto_tile_size`` (nodes.py:1557-1575), else the widgets' tile sizes.
"""
from __future__ import annotations

from ...families.hunyuan_video import FAMILIES as DIFFUSION_FAMILIES
from ...machine.resolve import PACK_FP32
from ...machine.runtime import HYVIDEO
from ...workload import SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE, LatentShape
from ..base import _replace
from . import Pack, loader

LOADER, ENCODER, ENCODERS = "DownloadAndLoadHyVideoTextEncoder", "HyVideoTextEncode", "HYVIDTEXTENCODER"
IMAGE_ENCODERS = ("HyVideoTextImageEncode", "HyVideoI2VEncode")
MODEL_LOADER, MODEL, SAMPLER = "HyVideoModelLoader", "HYVIDEOMODEL", "HyVideoSampler"
DECODE, ENCODE, VAE_LOADER = "HyVideoDecode", "HyVideoEncode", "HyVideoVAELoader"
# quantization widget -> the dtype the weights are stored in (nodes.py:391-399: fp8_scaled stores float8_e4m3fn)
FP8 = {"fp8_e4m3fn": "fp8_e4m3fn", "fp8_e4m3fn_fast": "fp8_e4m3fn_fast", "fp8_e5m2": "fp8_e5m2",
       "fp8_scaled": "fp8_e4m3fn"}
SETTINGS = {"HyVideoBlockSwap", "HyVideoTorchCompileSettings", "HyVideoTeaCache", "HyVideoEnhanceAVideo",
            "HyVideoSTG", "HyVideoContextOptions", "HyVideoLoopArgs", "HyVideoCustomPromptTemplate"}


@loader
def _text_encoders(a, node, slot, type_, visiting):
    if type_ != ENCODERS:
        return []
    quant = str(a.value(node, "quantization") or "disabled")
    if quant == "bnb_nf4":
        a.note(f"{a.label(node)}: bnb_nf4 quantization is priced at 16 bits, an upper bound")
    refs = [a.loader_ref(node, "llm_model", role="text_encoder", folder="LLM",
                         weight_dtype="fp8_e4m3fn" if quant == "fp8_e4m3fn" else None)]
    clip = a.value(node, "clip_model")
    if isinstance(clip, str) and clip and clip != "disabled":  # openai/clip-vit-large-patch14: CLIP-L's text tower
        refs.append(a.loader_ref(node, "clip_model", role="text_encoder", folder="clip", hint="clip-l"))
    return [r for r in refs if r]


@loader
def _model_loader(a, node, slot, type_, visiting):
    """The DiT at the loader's quantization (fp8: one byte a weight) or base_precision (fp32: four), and the LoRAs
    its ``lora`` input chains (HyVideoLoraSelect)."""
    if type_ != MODEL:
        return []
    quant = str(a.value(node, "quantization") or "disabled")
    dtype = FP8.get(quant)
    if dtype is None and a.value(node, "base_precision") == "fp32":
        dtype = PACK_FP32
    # it builds HYVideoDiffusionTransformer whatever the file (SkyReels V1 included): the family's hint
    ref = a.loader_ref(node, "model", role="diffusion", folder="diffusion_models", weight_dtype=dtype,
                       device=str(a.value(node, "load_device") or "") or None, hint="hunyuan-video")
    return ([ref] if ref else []) + a.refs(a.link(node, "lora"), "HYVIDLORA", visiting)


def _lora_select(a, node, slot, type_, visiting):
    """HyVideoLoraSelect: its file (models/loras) at its strength, after the LoRAs of ``prev_lora``."""
    if type_ != "HYVIDLORA":
        return []
    out = a.refs(a.link(node, "prev_lora"), "HYVIDLORA", visiting)
    strength = a.number(node, "strength", 1.0, integer=False)
    ref = a.loader_ref(node, "lora", role="lora", folder="loras") if strength != 0 else None
    return out + ([_replace(ref, strength=strength)] if ref else [])


def _loader_node(a, model_link):
    """The HyVideoModelLoader a HYVIDEOMODEL comes from, or None."""
    node = a.nodes.get(getattr(model_link, "node", None))
    return node if node is not None and node.type == MODEL_LOADER else None


def sample(a, node, latent: LatentShape | None, *, cfg: float | None = None, batched: bool = False,
           steps: int | None = None, notes=()):
    """A sampling stage of the wrapper's transformer (its own placement, manager HYVIDEO)."""
    model_link = a.link(node, "model")
    loader_node = _loader_node(a, model_link)
    swap = ()
    if loader_node is not None:
        swap = _swap_blocks(a, loader_node)
        if a.value(loader_node, "auto_cpu_offload") is True:
            a.unpriced("HunyuanVideoWrapper's auto_cpu_offload (DiffSynth's per-module offload) is not modelled")
    return a.sample_stage(node, model_links=[model_link], cond_links=[], cfg=cfg,
                          uses_negative=cfg is not None and cfg != 1, steps=steps, notes=notes, model_type=MODEL,
                          latent=latent, manager=HYVIDEO, cfg_batched=batched, swap_blocks=swap,
                          offload_fix="HyVideoBlockSwap: up to 20 double and 40 single blocks")


# HunyuanVideo's blocks (hyvideo/modules/models.py MMDoubleStreamBlock / MMSingleStreamBlock), weights in units of
# hidden_size² (biases and norms aside): a double block's image and text streams each hold modulation 6, qkv 3,
# proj 1 and an MLP of 2 x 4 (18 each, 36); a single block linear1 3 + 4, linear2 4 + 1 and modulation 3 (15)
DOUBLE_BLOCK, SINGLE_BLOCK = 36, 15


def _swap_blocks(a, loader_node) -> tuple:
    """HyVideoBlockSwap on the loader: the sampler calls block_swap(double - 1, single - 1), which keeps double blocks
    0..double - 1 and single blocks 0..single - 1 on the offload device and moves each in for its forward
    (models.py:774-791, :975-997); as (count, parameters of one block) pairs for runtime.run_wrapper."""
    args = a.nodes.get(getattr(a.link(loader_node, "block_swap_args"), "node", None))
    if args is None:
        return ()
    arch = DIFFUSION_FAMILIES["hunyuan-video"].arch
    d = arch["hidden_size"]
    double = min(max(a.number(args, "double_blocks_to_swap", 0) or 0, 0), arch["depth_double"])
    single = min(max(a.number(args, "single_blocks_to_swap", 0) or 0, 0), arch["depth_single"])
    if double or single:
        a.stage_note(f"block swap: {double} double and {single} single blocks kept in RAM, moved in one at a time")
    return tuple((n, k * d * d) for n, k in ((double, DOUBLE_BLOCK), (single, SINGLE_BLOCK)) if n)


def video_latent(a, node, width: int | None, height: int | None, frames: int | None) -> LatentShape | None:
    """[1, 16, (frames - 1) // 4 + 1, height / 8, width / 8]: HunyuanVideo's latent (nodes.py:1372-1379: sizes
    aligned to 16)."""
    if None in (width, height, frames):
        return None
    a.check_size(node, width, height, frames, 1)
    width, height = (width + 15) // 16 * 16, (height + 15) // 16 * 16
    return LatentShape(batch=1, channels=16, height=height // 8, width=width // 8, frames=(frames - 1) // 4 + 1,
                       pixel_height=height, pixel_width=width, pixel_frames=frames, spatial_compression=8,
                       temporal_compression=4, source_node=node.id, source_type=node.type)


def _sampler_latent(a, node, slot, depth):
    """Its widgets' video: the pipeline runs at width x height x num_frames whatever ``samples`` holds (the init
    latents of video-to-video, or leapfusion's one image latent put in the first frame: nodes.py:1453-1460)."""
    shape = video_latent(a, node, a.number(node, "width"), a.number(node, "height"), a.number(node, "num_frames"))
    return shape if shape is not None else a.latent(a.link(node, "samples"), depth + 1)


def _cfg(a, node):
    """(cfg, batched) from the HyVideoCFG on the sampler's embeds (its negative prompt), or (None, False)."""
    embeds = a.nodes.get(getattr(a.link(node, "hyvid_embeds"), "node", None))
    cfg_node = a.nodes.get(getattr(a.link(embeds, "hyvid_cfg"), "node", None)) if embeds is not None else None
    if cfg_node is None:
        return None, False
    return a.number(cfg_node, "cfg", integer=False), a.value(cfg_node, "batched_cfg") is not False


def _sample(a, node):
    steps = a.number(node, "steps")
    denoise = a.number(node, "denoise_strength", 1.0, integer=False)
    notes = []
    if steps and a.link(node, "samples") is not None and denoise is not None and 0 < denoise < 1:
        notes.append(f"denoise {denoise}: {int(steps * denoise)} of {steps} steps")
        steps = int(steps * denoise)
    cfg, batched = _cfg(a, node)
    return sample(a, node, _sampler_latent(a, node, 0, 0), cfg=cfg, batched=batched, steps=steps, notes=notes)


# nodes_rf_inversion.py: RF-Inversion's two samplers run on the LATENT they are given (batch 1, one forward at a
# time); the prompt-mix sampler runs its two prompts as one batch of 2 at its widgets' size (torch.cat of the
# weighted latents, :620-660)
INVERSE, RESAMPLER, PROMPT_MIX = "HyVideoInverseSampler", "HyVideoReSampler", "HyVideoPromptMixSampler"


def _rf_latent(a, node, slot, depth):
    if node.type == PROMPT_MIX:
        shape = video_latent(a, node, a.number(node, "width"), a.number(node, "height"), a.number(node, "num_frames"))
        return _replace(shape, batch=2) if shape is not None else None
    return a.latent(a.link(node, "samples"), depth + 1)


def _rf_sample(a, node):
    if node.type == PROMPT_MIX:
        a.stage_note("its two prompts run as one batch of 2")
    return sample(a, node, _rf_latent(a, node, 0, 0), steps=a.number(node, "steps"))


def _tiles(a, node) -> dict | None:
    """HyVideoDecode / HyVideoEncode tiling (nodes.py:1557-1575): auto_tile_size: 256 px tiles over 64 frames, a
    quarter overlap; else spatial_tile_sample_min_size and temporal_tiling_sample_size (a quarter overlap at 64
    frames, none otherwise)."""
    if a.value(node, "enable_vae_tiling") is False:
        return None
    if a.value(node, "auto_tile_size") is False:
        tile = a.number(node, "spatial_tile_sample_min_size", 256) or 256
        temporal = a.number(node, "temporal_tiling_sample_size", 64) or 64
    else:
        tile, temporal = 256, 64
    return {"tile_size": tile, "overlap": tile // 4, "temporal_size": temporal,
            "temporal_overlap": temporal // 4 if temporal == 64 else 0}


def _decode(a, node):
    return a.decode_stage(node, tiled=_tiles(a, node), manager=HYVIDEO)


def _vae_encode(a, node):
    return a.encode_stage(node, pixels="image", tiled=_tiles(a, node), manager=HYVIDEO)


def _encode_latent(a, node, slot, depth):
    return a.encoded_shape(node, "image", "vae", "VAE")


def _encode(a, node):
    models = list(a.refs(a.link(node, "text_encoders"), ENCODERS))
    if a.link(node, "clip_l") is not None:  # ComfyUI's CLIP instead of the loader's
        models += a.refs(a.link(node, "clip_l"), "CLIP")
    return a.text_stage(node, models=models)


def _encode_with_images(a, node):
    """HyVideoTextImageEncode / HyVideoI2VEncode: the same encoders, and the images as the LLM's image tokens (a
    LLaVA vision tower with xtuner's model): that part is not priced, said."""
    stage = _encode(a, node)
    a.unpriced("its images, encoded as the LLaVA model's image tokens, are not priced")
    return stage


_TILES = ["enable_vae_tiling", "temporal_tiling_sample_size", "spatial_tile_sample_min_size", "auto_tile_size"]
PACK = Pack(
    name="ComfyUI-HunyuanVideoWrapper",
    widgets={LOADER: ["llm_model", "clip_model", "precision", "apply_final_norm", "hidden_state_skip_layer",
                      "quantization", "load_device"],
             MODEL_LOADER: ["model", "base_precision", "quantization", "load_device", "attention_mode",
                            "auto_cpu_offload", "upcast_rope"],
             VAE_LOADER: ["model_name", "precision"],
             "HyVideoLoraSelect": ["lora", "strength"],
             "HyVideoBlockSwap": ["double_blocks_to_swap", "single_blocks_to_swap", "offload_txt_in",
                                  "offload_img_in"],
             "HyVideoCFG": ["negative_prompt", "cfg", "start_percent", "end_percent", "batched_cfg"],
             SAMPLER: ["width", "height", "num_frames", "steps", "embedded_guidance_scale", "flow_shift", "seed",
                       "force_offload", "denoise_strength"],
             DECODE: _TILES, ENCODE: _TILES,
             INVERSE: ["steps", "embedded_guidance_scale", "flow_shift", "seed", "force_offload", "gamma",
                       "start_step", "end_step", "gamma_trend"],
             RESAMPLER: ["steps", "embedded_guidance_scale", "flow_shift", "force_offload", "start_step", "end_step",
                         "eta_base", "eta_trend"],
             PROMPT_MIX: ["width", "height", "num_frames", "steps", "embedded_guidance_scale", "flow_shift",
                          "force_offload", "seed", "alpha"]},
    refs={LOADER: _text_encoders, MODEL_LOADER: _model_loader, "HyVideoLoraSelect": _lora_select},
    simple_loaders={VAE_LOADER: ("model_name", "vae", "vae", "VAE")},
    samplers={SAMPLER, INVERSE, RESAMPLER, PROMPT_MIX},
    vae_decoders={DECODE},
    vae_encoders={ENCODE},
    latents={SAMPLER: _sampler_latent, ENCODE: _encode_latent, **{t: _rf_latent for t in (INVERSE, RESAMPLER,
                                                                                          PROMPT_MIX)}},
    stage_kinds={ENCODER: TEXT_ENCODE, **{t: TEXT_ENCODE for t in IMAGE_ENCODERS},
                 **{t: SAMPLE for t in (SAMPLER, INVERSE, RESAMPLER, PROMPT_MIX)},
                 DECODE: VAE_DECODE, ENCODE: VAE_ENCODE},
    stages={ENCODER: _encode, **{t: _encode_with_images for t in IMAGE_ENCODERS}, SAMPLER: _sample,
            **{t: _rf_sample for t in (INVERSE, RESAMPLER, PROMPT_MIX)},
            DECODE: _decode, ENCODE: _vae_encode},
    handled=SETTINGS | {"HyVideoCFG", "HyVideoEmptyTextEmbeds"},
    relevant_types={ENCODERS, MODEL, "HYVIDLORA"},
    output_types={LOADER: [ENCODERS], MODEL_LOADER: [MODEL], VAE_LOADER: ["VAE"], "HyVideoLoraSelect": ["HYVIDLORA"],
                  SAMPLER: ["LATENT"], DECODE: ["IMAGE"], ENCODE: ["LATENT"], "HyVideoCFG": ["HYVID_CFG"],
                  ENCODER: ["HYVIDEMBEDS"], "HyVideoEmptyTextEmbeds": ["HYVIDEMBEDS"],
                  **{t: ["LATENT"] for t in (INVERSE, RESAMPLER, PROMPT_MIX)}},
    input_types={**{t: {"text_encoders": ENCODERS, "clip_l": "CLIP", "image": "IMAGE",
                        "model_to_offload": MODEL, "hyvid_cfg": "HYVID_CFG"}
                    for t in (ENCODER,) + IMAGE_ENCODERS},
                 MODEL_LOADER: {"compile_args": "COMPILEARGS", "block_swap_args": "BLOCKSWAPARGS",
                                "lora": "HYVIDLORA"},
                 "HyVideoLoraSelect": {"prev_lora": "HYVIDLORA", "blocks": "SELECTEDBLOCKS"},
                 SAMPLER: {"model": MODEL, "hyvid_embeds": "HYVIDEMBEDS", "samples": "LATENT",
                           "image_cond_latents": "LATENT", "stg_args": "STGARGS", "context_options": "HYVIDCONTEXT",
                           "feta_args": "FETAARGS", "teacache_args": "TEACACHEARGS", "loop_args": "LOOPARGS",
                           "mask": "MASK"},
                 DECODE: {"vae": "VAE", "samples": "LATENT"}, ENCODE: {"vae": "VAE", "image": "IMAGE"},
                 INVERSE: {"model": MODEL, "hyvid_embeds": "HYVIDEMBEDS", "samples": "LATENT"},
                 RESAMPLER: {"model": MODEL, "hyvid_embeds": "HYVIDEMBEDS", "samples": "LATENT",
                             "inversed_latents": "LATENT"},
                 PROMPT_MIX: {"model": MODEL, "hyvid_embeds": "HYVIDEMBEDS", "hyvid_embeds_2": "HYVIDEMBEDS"}},
)
