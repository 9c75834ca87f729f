"""aigc-apps/VideoX-Fun (comfyui/*/nodes.py at HEAD): Wan 2.1 / 2.2 (Fun, VACE Fun), Qwen-Image, FLUX.2 and Z-Image
run as diffusers pipelines the pack drives itself, outside ComfyUI's model management; and its predecessor
aigc-apps/EasyAnimate (comfyui/comfyui_nodes.py at c2a70d17), the same nodes and pipelines for EasyAnimate V3-V5.1.

- Load<Family>Model (LoadWanModel, LoadWanFunModel, LoadWan2_2Model, LoadWan2_2FunModel, LoadQwenImageModel,
  LoadFlux2Model, LoadZImageModel) pick a diffusers folder of models/Fun_Models by name -> FunModels. The folders
  hold the same weights as the single-file releases in the catalogue (MODELS), and the loader casts every component
  to its ``precision`` widget, so they are priced as those files at 16 bit.
- The chunked loaders (Load<Family>TransformerModel / TextEncoderModel / VAEModel) read files of diffusion_models /
  text_encoders / vae, cast to ``precision`` (fp8 files are upcast); Combine<Family>Pipeline makes the FunModels.
- ``GPU_memory_mode`` (the loader or the combine node) is how the weights move (runtime.run_diffusers): model_full_load
  ("full"), model_cpu_offload ("model"), sequential_cpu_offload ("sequential"), model_group_offload ("group"); the
  "_and_qfloat8" modes store the transformer in float8 (convert_model_weight_to_float8).
- A sampler node runs the whole pipeline: the text encoder, the transformer (Wan 2.2 A14B: transformer_2 for the
  high-noise steps, then transformer; model_cpu_offload_seq "text_encoder->transformer_2->transformer->vae" keeps one
  expert on the card), and the VAE (for image-to-video and video-to-video, the input frames are VAE-encoded first).
  Its size is ``width`` x ``height`` or ``base_resolution`` (the input's aspect picks one of the pack's sizes of about
  that area: priced square, the largest), ``video_length`` frames. CFG runs cond and uncond batched (Wan, Qwen,
  Z-Image: torch.cat([latents] * 2)); FLUX.2 has no negative prompt (guidance is embedded).

EasyAnimate V5.1 12B (families/easyanimate.py): its Qwen2-VL-7B text encoder is priced as Qwen2.5-VL 7B's file (the
same 8.29B layout) at 16 bit, an upper bound (the qfloat8 / sequential modes drop its vision tower or store it in
fp8); its MagViT VAE (246.5M parameters, the HunyuanVideo VAE's count) with the HunyuanVideo VAE's rule, which decodes
several latent frames at once: an upper bound too (EasyAnimate decodes one latent frame at a time).

CogVideoX-Fun (V1.1 2B / 5B, V1.5 5B: families/cogvideox.py, ComfyUI 0.33's CogVideoX class counted and traced): its
T5-XXL priced at 16 bit and padded to 226 tokens, the CogVideoX VAE with its traced decode of the whole clip (ComfyUI's
own rolling decoder; the pipeline's diffusers decoder runs 2 latent frames a call: an upper bound).

EasyAnimate V5 12B: V5.1's transformer count (the text projections differ by 0.01 %), HunyuanDiT's BERT (at the
precision widget) and mT5-XL (float32: T5EncoderModel is loaded with no dtype), the same VAE rule as V5.1.

Not priced, and said: EasyAnimate V3 / V4 (no family here for their transformers), Wan 2.2 VACE Fun (its VACE
blocks), the CLIP vision encode of Wan image-to-video (a ViT-H pass, smaller than the sampling), a ControlNet
loaded into the transformer from model_patches (unknown files are named missing).
"""
from __future__ import annotations

import math
import re

from ...machine.resolve import PACK_16BIT, PACK_FP32
from ...workload import DIFFUSERS, SAMPLE, VAE_DECODE, VAE_ENCODE, LatentShape, ModelRef, Stage
from ..base import _replace
from . import Pack, loader, upstream_chain

FUN, TRANSFORMER, TEXT, VAEM = "FunModels", "TransformerModel", "TextEncoderModel", "VAEModel"
CLIPENC = "ClipEncoderModel"
EASY = "EASYANIMATESMODEL"  # EasyAnimate's pipeline socket: read as FunModels
FUN_TEXT, FUN_VAE = "FunModels:text_encoder", "FunModels:vae"  # the pipeline's other components, asked by the samplers
MODES = {"model_full_load": ("full", False), "model_full_load_and_qfloat8": ("full", True),
         "model_cpu_offload": ("model", False), "model_cpu_offload_and_qfloat8": ("model", True),
         "sequential_cpu_offload": ("sequential", False), "model_group_offload": ("group", False)}
FP8 = "fp8_e4m3fn"

WAN_TE, WAN_VAE, WAN22_VAE = "umt5_xxl_fp16.safetensors", "wan_2.1_vae.safetensors", "wan2.2_vae.safetensors"
QWEN = ("qwen_2.5_vl_7b.safetensors", "qwen_image_vae.safetensors")
# EasyAnimate V5's text_encoder / text_encoder_2 (names their HF configs give) -> the weights' dtype
EASYANIMATE_V5_TE = (("chinese-roberta-wwm-ext-large", PACK_16BIT), ("mt5-xl", PACK_FP32))
# geometry: (latent channels, spatial /, temporal / or None for images)
WAN21, WAN22_5B, IMAGE16, FLUX2 = (16, 8, 4), (48, 16, 4), (16, 8, None), (128, 16, None)


def _wan(*diffusion: str, vae: str = WAN_VAE, geometry=WAN21) -> tuple:
    return diffusion, WAN_TE, vae, geometry


def _a14b(kind: str) -> tuple:
    return _wan(f"wan2.2_{kind}_high_noise_14B_fp16.safetensors", f"wan2.2_{kind}_low_noise_14B_fp16.safetensors")


# the loaders' model options -> (diffusion files, text encoder, VAE, latent geometry): the single-file releases of the
# same weights (Comfy-Org's repackaged files; Hugging Face listings in data/catalogue.json, else the family's count)
MODELS = {
    "Wan2.1-T2V-1.3B": _wan("wan2.1_t2v_1.3B_bf16.safetensors"),
    "Wan2.1-T2V-14B": _wan("wan2.1_t2v_14B_bf16.safetensors"),
    "Wan2.1-I2V-14B-480P": _wan("wan2.1_i2v_480p_14B_bf16.safetensors"),
    "Wan2.1-I2V-14B-720P": _wan("wan2.1_i2v_720p_14B_bf16.safetensors"),
    **{f"Wan2.1-Fun-{v}{size}-{kind}": _wan(f"wan2.1_fun_{file}_{size}_bf16.safetensors")
       for v in ("", "V1.1-") for size in ("1.3B", "14B")
       for kind, file in (("InP", "inp"), ("Control", "control"), ("Control-Camera", "camera_v1.1"))},
    "Wan2.2-T2V-A14B": _a14b("t2v"),
    "Wan2.2-I2V-A14B": _a14b("i2v"),
    "Wan2.2-TI2V-5B": _wan("wan2.2_ti2v_5B_fp16.safetensors", vae=WAN22_VAE, geometry=WAN22_5B),
    "Wan2.2-Fun-A14B-InP": _a14b("fun_inpaint"),
    "Wan2.2-Fun-A14B-Control": _a14b("fun_control"),
    "Wan2.2-Fun-A14B-Control-Camera": _a14b("fun_camera"),
    "Qwen-Image": (("qwen_image_bf16.safetensors",), *QWEN, IMAGE16),
    "Qwen-Image-2512": (("qwen_image_2512_bf16.safetensors",), *QWEN, IMAGE16),
    "Qwen-Image-Edit": (("qwen_image_edit_bf16.safetensors",), *QWEN, IMAGE16),
    "Qwen-Image-Edit-2509": (("qwen_image_edit_2509_bf16.safetensors",), *QWEN, IMAGE16),
    "Qwen-Image-Edit-2511": (("qwen_image_edit_2511_bf16.safetensors",), *QWEN, IMAGE16),
    "FLUX.2-dev": (("flux2_dev_bf16.safetensors",), "mistral_3_small_flux2_bf16.safetensors", "flux2-vae.safetensors",
                   FLUX2),
    "Z-Image-Turbo": (("z_image_turbo_bf16.safetensors",), "qwen_3_4b.safetensors", "ae.safetensors", IMAGE16),
    "Z-Image": (("z_image_bf16.safetensors",), "qwen_3_4b.safetensors", "ae.safetensors", IMAGE16),
    **{f"EasyAnimateV5.1-12b-zh{kind}": ((f"EasyAnimateV5.1-12b-zh{kind}",), "qwen_2.5_vl_7b.safetensors",
                                         "hunyuan_video_vae_bf16.safetensors", WAN21)
       for kind in ("", "-InP", "-Control", "-Control-Camera")},
    # V5: HunyuanDiT's BERT and mT5-XL (comfyui_nodes.py: BertModel at the precision widget, T5EncoderModel with no
    # torch_dtype, so float32: EASYANIMATE_V5_TE), the same MagViT VAE as V5.1
    **{f"EasyAnimateV5-12b-zh{kind}": ((f"EasyAnimateV5-12b-zh{kind}",), EASYANIMATE_V5_TE,
                                       "hunyuan_video_vae_bf16.safetensors", WAN21)
       for kind in ("", "-InP", "-Control")},
    # CogVideoX-Fun (comfyui/cogvideox_fun/nodes.py): the CogVideoX transformer of its size (families/cogvideox.py,
    # by the folder's name), T5-XXL and the CogVideoX VAE (16 channels, /8, /4), as the single-file releases
    **{f"CogVideoX-Fun-V{v}-{size}-{kind}": ((f"CogVideoX-Fun-V{v}-{size}-{kind}",), "t5xxl_fp16.safetensors",
                                             "cogvideox_vae.safetensors", WAN21)
       for v, size, kind in (("1.1", "2b", "InP"), ("1.1", "5b", "InP"), ("1.1", "2b", "Pose"), ("1.1", "5b", "Pose"),
                             ("1.1", "5b", "Control"), ("1.5", "5b", "InP"), ("1.5", "5b", "Control"))},
}
FOLDER_LOADERS = {"LoadWanModel", "LoadWanFunModel", "LoadWan2_2Model", "LoadWan2_2FunModel", "LoadQwenImageModel",
                  "LoadFlux2Model", "LoadZImageModel", "LoadEasyAnimateModel", "LoadCogVideoXFunModel"}
UNPRICED_LOADERS = {"LoadCogVideoXFunModel": "a CogVideoX-Fun model this estimator does not know",
                    "LoadEasyAnimateModel": "EasyAnimate before V5 (no family in this estimator for its transformer)",
                    "LoadWan2_2VaceFunModel": "Wan 2.2 VACE Fun (its VACE blocks are not counted)",
                    "CombineWan2_2VaceFunPipeline": "Wan 2.2 VACE Fun (its VACE blocks are not counted)"}
COMBINE = {"CombineWanPipeline", "CombineWan2_2Pipeline", "CombineQwenImagePipeline", "CombineFlux2Pipeline",
           "CombineZImagePipeline"}
LORAS = {"LoadWanLora", "LoadWanFunLora", "LoadWan2_2Lora", "LoadWan2_2FunLora", "LoadQwenImageLora", "LoadFlux2Lora",
         "LoadZImageLora", "LoadCogVideoXFunLora", "LoadEasyAnimateLora"}
CONTROLNET_IN_PIPELINE = {"LoadQwenImageControlNetInPipeline", "LoadFlux2ControlNetInPipeline",
                          "LoadZImageControlNetInPipeline"}
CONTROLNET_IN_MODEL = {"LoadQwenImageControlNetInModel", "LoadFlux2ControlNetInModel", "LoadZImageControlNetInModel"}
# chunked loaders: class -> (role, folder, output type)
FILE_LOADERS = {
    **{f"Load{f}TransformerModel": ("diffusion", "diffusion_models", TRANSFORMER)
       for f in ("Wan", "Wan2_2", "QwenImage", "Flux2", "ZImage")},
    "LoadVaceWanTransformer3DModel": ("diffusion", "diffusion_models", TRANSFORMER),
    **{f"Load{f}TextEncoderModel": ("text_encoder", "text_encoders", TEXT)
       for f in ("Wan", "QwenImage", "Flux2", "ZImage")},
    **{f"Load{f}VAEModel": ("vae", "vae", VAEM) for f in ("Wan", "QwenImage", "Flux2", "ZImage")},
    "LoadWanClipEncoderModel": ("clip_vision", "clip_vision", CLIPENC),
}
_VIDEO = ["video_length", "width", "height", "is_image", "seed", "steps", "cfg", "scheduler", "shift"]
_BASE = ["video_length", "base_resolution", "seed", "steps", "cfg", "scheduler", "shift"]
_V2V = ["video_length", "base_resolution", "seed", "steps", "cfg", "denoise_strength", "scheduler", "shift"]
_IMAGE = ["width", "height", "seed", "steps", "cfg", "scheduler", "shift"]
SAMPLER_WIDGETS = {
    "WanT2VSampler": _VIDEO, "WanFunT2VSampler": _VIDEO, "Wan2_2T2VSampler": _VIDEO + ["boundary"],
    "Wan2_2FunT2VSampler": _VIDEO + ["boundary"],
    "WanI2VSampler": _BASE, "WanFunInpaintSampler": _BASE, "Wan2_2I2VSampler": _BASE + ["boundary"],
    "Wan2_2FunInpaintSampler": _BASE + ["boundary"], "Wan2_2VaceFunSampler": _BASE + ["boundary"],
    "WanFunV2VSampler": _V2V, "Wan2_2FunV2VSampler": _V2V + ["boundary"],
    "QwenImageT2VSampler": _IMAGE, "QwenImageEditSampler": _IMAGE, "QwenImageEditPlusSampler": _IMAGE,
    "QwenImageControlSampler": _IMAGE, "ZImageT2ISampler": _IMAGE, "ZImageControlSampler": _IMAGE,
    "Flux2T2ISampler": _IMAGE, "Flux2ControlSampler": _IMAGE,
    "CogVideoXFunT2VSampler": ["video_length", "width", "height", "is_image", "seed", "steps", "cfg", "scheduler"],
    "EasyAnimateT2VSampler": ["video_length", "width", "height", "is_image", "seed", "steps", "cfg", "scheduler"],
    "EasyAnimateV5_T2VSampler": ["video_length", "width", "height", "is_image", "seed", "steps", "cfg", "scheduler"],
    **{t: ["video_length", "base_resolution", "seed", "steps", "cfg", "scheduler"]
       for t in ("EasyAnimateI2VSampler", "EasyAnimateV5_I2VSampler")},
    **{t: ["video_length", "base_resolution", "seed", "steps", "cfg", "denoise_strength", "scheduler"]
       for t in ("EasyAnimateV2VSampler", "EasyAnimateV5_V2VSampler")},
    "CogVideoXFunInpaintSampler": ["video_length", "base_resolution", "seed", "steps", "cfg", "scheduler"],
    "CogVideoXFunV2VSampler": ["video_length", "base_resolution", "seed", "steps", "cfg", "denoise_strength",
                               "scheduler"],
}
SAMPLERS = set(SAMPLER_WIDGETS)
_MODEL_INPUT = ("funmodels", "cogvideoxfun_model", "easyanimate_model")
# image / video inputs a sampler VAE-encodes before sampling
_ENCODED = ("start_img", "end_img", "validation_video", "control_video", "start_image", "end_image", "ref_image",
            "image", "control_image", "inpaint_image", "subject_ref_images")
QWEN_EDIT_REFERENCE_PX = 1024
COGVIDEOX_TEXT_TOKENS = 226  # pipeline_qwenimage_edit_plus.py VAE_IMAGE_SIZE: the reference image at 1024² pixels


def _mode(a, node) -> tuple[str, bool]:
    return MODES.get(str(a.value(node, "GPU_memory_mode") or "model_cpu_offload"), ("model", False))


def _ref(node, name: str, role: str, folder: str, weight_dtype=PACK_16BIT) -> ModelRef:
    return ModelRef(name=name, role=role, folder=folder, loader_node=node.id, loader_type=node.type,
                    weight_dtype=weight_dtype)


def _fp8(refs, qfloat8: bool) -> list:
    return [_replace(r, weight_dtype=FP8) if qfloat8 and r.role == "diffusion" else r for r in refs]


@loader
def _folder_loader(a, node, slot, type_, visiting):
    entry = MODELS.get(str(a.value(node, "model") or ""))
    if entry is None:
        return []
    diffusion, te, vae, _ = entry
    if type_ in (FUN, EASY):
        return _fp8([_ref(node, name, "diffusion", "diffusion_models") for name in diffusion], _mode(a, node)[1])
    if type_ == FUN_TEXT:
        if isinstance(te, tuple):  # several encoders, each at its own dtype
            if te == EASYANIMATE_V5_TE:
                a.note(f"{a.label(node)}: EasyAnimate V5's mT5-XL is loaded without a dtype (T5EncoderModel's "
                       "default, float32): priced in float32, an upper bound where transformers loads it in its "
                       "stored dtype")
            return [_ref(node, name, "text_encoder", "text_encoders", weight_dtype=dt) for name, dt in te]
        return [_ref(node, te, "text_encoder", "text_encoders")]
    if type_ == FUN_VAE:
        return [_ref(node, vae, "vae", "vae", weight_dtype=None)]
    return []


@loader
def _file_loader(a, node, slot, type_, visiting):
    role, folder, out = FILE_LOADERS[node.type]
    if type_ != out:
        return []
    ref = a.loader_ref(node, "model_name", role=role, folder=folder,
                       weight_dtype=PACK_16BIT if role in ("diffusion", "text_encoder") else None)
    return [ref] if ref else []


def _combine(a, node, slot, type_, visiting):
    if type_ == FUN:
        refs = a.refs(a.link(node, "transformer_2"), TRANSFORMER, visiting) + a.refs(a.link(node, "transformer"),
                                                                                    TRANSFORMER, visiting)
        return _fp8(refs, _mode(a, node)[1])
    if type_ == FUN_TEXT:
        return a.refs(a.link(node, "text_encoder"), TEXT, visiting)
    if type_ == FUN_VAE:
        return a.refs(a.link(node, "vae"), VAEM, visiting)
    return []


def _passthrough(a, node, slot, type_, visiting):
    """A LoRA or ControlNet-in-pipeline node: the pipeline it is given (+ its LoRA / ControlNet on the transformer)."""
    src = next((a.link(node, n) for n in _MODEL_INPUT if a.link(node, n) is not None), None)
    refs = list(a.refs(src, type_, visiting))
    if type_ == FUN and node.type in LORAS:
        for widget in ("lora_name", "lora_high_name"):
            name = a.value(node, widget)
            if isinstance(name, str) and name and name.lower() != "none":
                refs.append(ModelRef(name=name, role="lora", folder="loras", loader_node=node.id,
                                     loader_type=node.type, strength=a.number(node, "strength_model", 1.0,
                                                                              integer=False)))
    if type_ == FUN and node.type in CONTROLNET_IN_PIPELINE:
        refs.append(_ref(node, str(a.value(node, "model_name") or ""), "controlnet", "model_patches", None))
    return refs


def _controlnet_in_model(a, node, slot, type_, visiting):
    if type_ != TRANSFORMER:
        return []
    return list(a.refs(a.link(node, "transformer"), TRANSFORMER, visiting)) + [
        _ref(node, str(a.value(node, "model_name") or ""), "controlnet", "model_patches", None)]


def _source(a, node):
    """The loader or combine node behind a sampler's FunModels (through LoRA / ControlNet nodes), or None."""
    link = next((a.link(node, n) for n in _MODEL_INPUT if a.link(node, n) is not None), None)

    def up(n):
        return next((a.link(n, i) for i in _MODEL_INPUT if a.link(n, i) is not None), None)
    chain = upstream_chain(a, link, up)
    return (chain[-1] if chain else None), link


def _geometry(a, src) -> tuple | None:
    if src is None:
        return None
    if src.type in FOLDER_LOADERS:
        entry = MODELS.get(str(a.value(src, "model") or ""))
        return entry[3] if entry else None
    names = " ".join(r.name.lower() for r in a.refs(a.link(src, "transformer"), TRANSFORMER))
    if "wan" in src.type.lower():
        return WAN22_5B if re.search(r"ti2v|5b", names) else WAN21
    return {"CombineQwenImagePipeline": IMAGE16, "CombineZImagePipeline": IMAGE16,
            "CombineFlux2Pipeline": FLUX2}.get(src.type)


def _shape(a, node, geometry) -> LatentShape | None:
    channels, spatial, temporal = geometry
    if "base_resolution" in SAMPLER_WIDGETS[node.type]:
        base = a.number(node, "base_resolution")
        width = height = base
        if base:
            a.stage_note(f"base_resolution {base}: the input's aspect picks one of the pack's sizes of about {base}² "
                         "pixels; priced square, the largest of them")
    else:
        width, height = a.number(node, "width"), a.number(node, "height")
    if not width or not height:
        return None
    step = 16
    width, height = max(step, width // step * step), max(step, height // step * step)
    frames = pixel_frames = None
    if temporal is not None:
        length = a.number(node, "video_length") or 1
        if a.value(node, "is_image") is True:
            length = 1
        frames = (max(1, length) - 1) // temporal + 1
        pixel_frames = (frames - 1) * temporal + 1
    a.check_size(node, width, height, pixel_frames, 1)
    return LatentShape(batch=1, channels=channels, height=height // spatial, width=width // spatial, frames=frames,
                       pixel_height=height, pixel_width=width, pixel_frames=pixel_frames, spatial_compression=spatial,
                       temporal_compression=temporal, source_node=node.id, source_type=node.type)


def _high_noise_steps(steps: int, boundary: float, shift: float) -> int:
    """Steps whose shifted flow sigma is at or above ``boundary`` (the high-noise expert's share): sigma = 1 - i / steps
    shifted as shift·s / (1 + (shift - 1)·s), the pipelines' FlowMatch schedule, increasing in s; so the steps with
    s >= boundary / (shift - (shift - 1)·boundary), counted in closed form (steps is the user's number: no loop)."""
    shift = shift if shift and shift > 0 else 1.0
    if steps <= 0 or boundary <= 0:
        return max(0, steps)
    if boundary > 1:
        return 0
    s0 = boundary / (shift - (shift - 1) * boundary)
    return min(steps, int(math.floor(steps * (1 - s0) + 1e-9)) + 1)


def _sample(a, node):
    src, link = _source(a, node)
    if src is None:
        return None
    if src.type in UNPRICED_LOADERS and not (src.type in FOLDER_LOADERS and str(a.value(src, "model")) in MODELS):
        a.unpriced(f"{node.type} runs {UNPRICED_LOADERS[src.type]}")
        return Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, manager=DIFFUSERS)
    mode, qfloat8 = _mode(a, src)
    geometry = _geometry(a, src)
    shape = _shape(a, node, geometry) if geometry else None
    if geometry is None:
        a.stage_note("the pipeline's model is not one this estimator knows: latent geometry unknown")
    cfg = a.number(node, "cfg", integer=False)
    flux2 = node.type.startswith("Flux2")
    uses_negative = not flux2 and cfg is not None and cfg > 1
    steps = a.number(node, "steps")
    common = dict(manager=DIFFUSERS, offload=mode)
    text = _replace(a.text_stage(node, models=a.refs(link, FUN_TEXT)), **common)
    if node.type.startswith("CogVideoX"):  # the CogVideoX pipelines' max_sequence_length: T5 padded to 226 tokens
        text = _replace(text, text_tokens=COGVIDEOX_TEXT_TOKENS)
    stages = [text]
    if any(a.link(node, n) is not None for n in _ENCODED) and shape is not None and not flux2 \
            and not node.type.startswith(("QwenImage", "ZImage")):
        stages.append(Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type,
                            models=tuple(a.refs(link, FUN_VAE)), latent=shape, **common))
    references = ()
    if node.type.startswith("QwenImageEdit") and a.link(node, "image") is not None and shape is not None:
        side = QWEN_EDIT_REFERENCE_PX // 8
        references = ((side, side),)
        a.stage_note(f"the reference image at {QWEN_EDIT_REFERENCE_PX}² pixels: the model attends over its tokens too")
    if qfloat8:
        a.stage_note("GPU_memory_mode _and_qfloat8: the transformer's weights in float8")
    sample = a.sample_stage(node, model_links=[link], cond_links=[], cfg=None if flux2 else cfg,
                            uses_negative=uses_negative, steps=steps, model_type=FUN, latent=shape,
                            cfg_batched=True, reference_latents=references, **common)
    experts = [m for m in sample.models if m.role == "diffusion"]
    if len(experts) == 2 and steps:  # transformer_2 (high noise) then transformer (low noise)
        shift = a.number(node, "shift", integer=False) or 5.0
        boundary = a.number(node, "boundary", integer=False) or 0.875
        high = _high_noise_steps(steps, boundary, shift)
        extra = tuple(m for m in sample.models if m.role != "diffusion")
        for ref, n, expert in ((experts[0], high, "high_noise"), (experts[1], steps - high, "low_noise")):
            stages.append(_replace(sample, models=(ref,) + extra, steps=n, expert=expert))
    else:
        stages.append(sample)
    stages.append(Stage(kind=VAE_DECODE, node_id=node.id, node_type=node.type, models=tuple(a.refs(link, FUN_VAE)),
                        latent=shape, **common))
    return stages


def _widgets() -> dict:
    out = {t: ["model", "GPU_memory_mode", "config", "precision"] for t in ("LoadWanModel", "LoadWan2_2Model")}
    out.update({t: ["model", "model_type", "GPU_memory_mode", "config", "precision"]
                for t in ("LoadWanFunModel", "LoadWan2_2FunModel")})
    out.update({t: ["model", "GPU_memory_mode", "precision"]
                for t in ("LoadQwenImageModel", "LoadFlux2Model", "LoadZImageModel")})
    out["LoadCogVideoXFunModel"] = ["model", "model_type", "GPU_memory_mode", "precision"]
    out["LoadEasyAnimateModel"] = ["model", "GPU_memory_mode", "model_type", "config", "precision"]
    out["LoadWan2_2VaceFunModel"] = ["model", "GPU_memory_mode", "config", "precision"]
    out.update({t: ["model_name", "precision"] for t in FILE_LOADERS})
    out["LoadQwenImageTransformerModel"] = ["model_name", "zero_cond_t", "precision"]
    out.update({t: ["model_name", "GPU_memory_mode", "model_type"] for t in COMBINE | {"CombineWan2_2VaceFunPipeline"}})
    out.update({t: ["lora_name", "strength_model", "lora_cache"] for t in LORAS})
    out.update({t: ["lora_name", "lora_high_name", "strength_model", "lora_cache"]
                for t in ("LoadWan2_2Lora", "LoadWan2_2FunLora")})
    out.update({t: ["config", "model_name"] for t in CONTROLNET_IN_PIPELINE | CONTROLNET_IN_MODEL})
    out.update(SAMPLER_WIDGETS)
    out["FunTextBox"] = out["EasyAnimate_TextBox"] = ["prompt"]
    return out


def _input_types() -> dict:
    out = {t: {"transformer": TRANSFORMER, "transformer_2": TRANSFORMER, "vae": VAEM, "text_encoder": TEXT,
               "tokenizer": "Tokenizer", "clip_encoder": CLIPENC, "processor": "Processor"}
           for t in COMBINE | {"CombineWan2_2VaceFunPipeline"}}
    out.update({t: {"funmodels": FUN} for t in LORAS - {"LoadCogVideoXFunLora"} | CONTROLNET_IN_PIPELINE})
    out["LoadCogVideoXFunLora"] = {"cogvideoxfun_model": FUN}
    out["LoadEasyAnimateLora"] = {"easyanimate_model": EASY}
    out.update({t: {"transformer": TRANSFORMER} for t in CONTROLNET_IN_MODEL})
    images = {n: "IMAGE" for n in _ENCODED}
    for t in SAMPLERS:
        if t.startswith("EasyAnimate"):
            out[t] = {"easyanimate_model": EASY, "prompt": "STRING_PROMPT", "negative_prompt": "STRING_PROMPT",
                      "camera_conditions": "STRING", **images}
        else:
            model = "cogvideoxfun_model" if t.startswith("CogVideoX") else "funmodels"
            out[t] = {model: FUN, "prompt": "STRING", "negative_prompt": "STRING", **images}
    return out


def _output_types() -> dict:
    out = {t: [FUN] for t in FOLDER_LOADERS | COMBINE | LORAS | CONTROLNET_IN_PIPELINE | set(UNPRICED_LOADERS)}
    out.update({"LoadEasyAnimateModel": [EASY], "LoadEasyAnimateLora": [EASY], "EasyAnimate_TextBox": ["STRING_PROMPT"]})
    out.update({t: [TRANSFORMER, "STRING"] for t, v in FILE_LOADERS.items() if v[2] == TRANSFORMER})
    out.update({t: [TEXT, "Tokenizer"] for t, v in FILE_LOADERS.items() if v[2] == TEXT})
    out.update({t: [VAEM] for t, v in FILE_LOADERS.items() if v[2] == VAEM})
    out["LoadWanClipEncoderModel"] = [CLIPENC]
    out.update({t: [TRANSFORMER] for t in CONTROLNET_IN_MODEL})
    out.update({t: ["IMAGE"] for t in SAMPLERS})
    out.update({"FunTextBox": ["STRING"], "LoadQwenImageProcessor": ["Processor"]})
    return out


PACK = Pack(
    name="VideoX-Fun",
    samplers=SAMPLERS,
    stage_kinds={t: SAMPLE for t in SAMPLERS},
    stages={t: _sample for t in SAMPLERS},
    refs={**{t: _folder_loader for t in FOLDER_LOADERS}, **{t: _file_loader for t in FILE_LOADERS},
          **{t: _combine for t in COMBINE}, **{t: _passthrough for t in LORAS | CONTROLNET_IN_PIPELINE},
          **{t: _controlnet_in_model for t in CONTROLNET_IN_MODEL}},
    handled={"FunTextBox", "FunRiflex", "FunCompile", "FunAttention", "LoadQwenImageProcessor", "EasyAnimate_TextBox",
             *(set(UNPRICED_LOADERS) - FOLDER_LOADERS)},
    widgets=_widgets(),
    input_types=_input_types(),
    output_types=_output_types(),
    relevant_types={FUN, EASY, TRANSFORMER, TEXT, VAEM, CLIPENC},
    value_primitives=set(),
)
