"""kijai/ComfyUI-KJNodes: image resize / size helpers, model patches and loaders used around Flux and Wan.

SetNode / GetNode are resolved by the UI reader (virtual nodes). Model patches (sage attention,
torch compile, block swap settings for native models...) pass the MODEL through and are read by
the generic analyzer. The loaders (nodes/model_optimization_nodes.py at 3f20054): DiffusionModelLoaderKJ and
CheckpointLoaderKJ are UNETLoader / CheckpointLoaderSimple with a wider ``weight_dtype`` (fp16 / bf16 / fp32 too,
model_options["dtype"], :375-410 and :234-270); DiffusionModelLoaderKJ's ``extra_state_dict`` (a path, from
DiffusionModelSelector) is merged into the model's state dict before it is built and cast
(_load_diffusion_model_kj, :331-350): a VACE module's weights join the model's, in its dtype.
"""
from __future__ import annotations

from ...machine.resolve import PACK_16BIT, PACK_FP32
from ...workload import ModelRef
from ..base import _ImageSize, _UNKNOWN, frames_bound, from_video
from . import Pack, loader

FP8 = ("fp8_e4m3fn", "fp8_e4m3fn_fast", "fp8_e5m2")
# weight_dtype -> the ModelRef's weight_dtype (machine/resolve.py): fp8 as UNETLoader's; 16-bit / fp32 cast every weight
KJ_DTYPES = {**{d: d for d in FP8}, "fp16": PACK_16BIT, "bf16": PACK_16BIT, "fp32": PACK_FP32}
SELECTOR = "DiffusionModelSelector"


def _kj_dtype(a, node) -> str | None:
    value = a.value(node, "weight_dtype")
    return KJ_DTYPES.get(value) if isinstance(value, str) else None


@loader
def _diffusion_loader_kj(a, node, slot, type_, visiting):
    """DiffusionModelLoaderKJ: its file at its weight_dtype, and the state dict its extra_state_dict names."""
    if type_ != "MODEL":
        return []
    dtype = _kj_dtype(a, node)
    ref = a.loader_ref(node, "model_name", role="diffusion", folder="diffusion_models", weight_dtype=dtype)
    out = [ref] if ref else []
    extra = a.link(node, "extra_state_dict")
    if extra is None:
        return out
    src = a.nodes.get(extra.node)
    if src is not None and src.type == SELECTOR:
        # an add-on module (kijai's "Wan2_1-VACE_module_14B"): its own blocks, cast with the model it joins
        module = a.loader_ref(src, "model_name", role="controlnet", folder="diffusion_models",
                              weight_dtype=dtype if dtype in FP8 else None)
        return out + ([module] if module else [])
    # a path made some other way: a state dict of unknown size joins the model (never 0 bytes)
    a.note(f"{a.label(node)}: extra_state_dict comes from {a.label(src) if src else 'a node not in the prompt'}; "
           "the state dict it names is not known here")
    return out + [ModelRef(name=f"(the state dict in {a.label(node)}'s extra_state_dict)", loader_node=node.id,
                           loader_type=node.type, role="controlnet", folder="diffusion_models", unset=True)]


@loader
def _gguf_loader_kj(a, node, slot, type_, visiting):
    """GGUFLoaderKJ (model_optimization_nodes.py:1588-1700): ComfyUI-GGUF's loader of ``model_name`` (models/unet),
    with ``extra_model_name`` merged into its state dict when not "none": another .gguf (a VACE module) or an LTX-2
    connector from models/text_encoders (sd.update(extra_model) before the model is built)."""
    if type_ != "MODEL":
        return []
    ref = a.loader_ref(node, "model_name", role="diffusion", folder="diffusion_models", gguf=True)
    out = [ref] if ref else []
    extra = a.value(node, "extra_model_name")
    if isinstance(extra, str) and extra.strip() and extra != "none":
        gguf = extra.endswith(".gguf")
        module = a.loader_ref(node, "extra_model_name", role="controlnet",
                              folder="diffusion_models" if gguf else "text_encoders", gguf=gguf)
        out += [module] if module else []
    return out


@loader
def _checkpoint_loader_kj(a, node, slot, type_, visiting):
    """CheckpointLoaderKJ: CheckpointLoaderSimple's three parts; weight_dtype applies to the MODEL's weights."""
    part = {0: "model", 1: "clip", 2: "vae"}.get(slot)
    if part is None or type_ != ("MODEL", "CLIP", "VAE")[slot]:
        return []
    ref = a.loader_ref(node, "ckpt_name", role="checkpoint", folder="checkpoints", part=part,
                       weight_dtype=_kj_dtype(a, node) if part == "model" else None)
    return [ref] if ref else []


def _resize(a, node, link, depth):
    """ImageResizeKJ / v2: the width / height widgets (or inputs); keep_proportion scales the source."""
    if link.slot == 0:
        w = a.number(node, "width") if "width" in node.inputs else a.number(node, "width_input")
        h = a.number(node, "height") if "height" in node.inputs else a.number(node, "height_input")
        src = a.image_size(a.link(node, "image"), depth + 1)
        if not w or not h:
            return None
        keep = a.value(node, "keep_proportion")
        if src is None and keep not in (True, "resize") and from_video(a, a.link(node, "image")):
            # a video's frames of unknown size: the widgets' size, at most the frames' bound (a consumer that needs
            # the count asks base.frames_bound; without one, one frame stands for each, inexact)
            src = _ImageSize(w, h, frames_bound(a, a.link(node, "image")) or 1, False)
        if keep in (True, "resize") and src is not None:
            ratio = min(w / src.width, h / src.height)
            w, h = round(src.width * ratio), round(src.height * ratio)
        divisible = a.number(node, "divisible_by", 0) or 0
        if divisible > 1:
            w, h = w - w % divisible, h - h % divisible
        return _ImageSize(w, h, src.batch if src else 1, (src.exact if src else False) and keep not in (True, "resize"))
    return None


def _resize_value(a, node, link, depth, sub):
    size = _resize(a, node, type(link)(link.node, 0), depth)
    if size is None or link.slot not in (1, 2):
        return _UNKNOWN
    return size.width if link.slot == 1 else size.height


def _size_and_count(a, node, link, depth, sub):
    size = a.image_size(a.link(node, "image"), depth + 1)
    if size is None or not size.exact or link.slot == 0:
        return _UNKNOWN
    return (None, size.width, size.height, size.batch)[link.slot] if link.slot < 4 else _UNKNOWN


def _gradient_mask(a, node, link, depth):
    """CreateGradientMask (mask_nodes.py createmask): zeros [frames, height, width], a gradient per frame."""
    w, h, frames = a.number(node, "width"), a.number(node, "height"), a.number(node, "frames")
    return _ImageSize(w, h, frames) if w and h and frames else None


def _passthrough_image(a, node, link, depth):
    return a.image_size(a.link(node, "image"), depth + 1) if link.slot == 0 else None


WIDGETS = {  # leading widgets, in order (KJNodes image_nodes.py INPUT_TYPES)
    "ImageResizeKJ": ["width", "height", "upscale_method", "keep_proportion", "divisible_by"],
    "ImageResizeKJv2": ["width", "height", "upscale_method", "keep_proportion", "pad_color", "crop_position",
                        "divisible_by"],
    # constants (KJNodes nodes/nodes.py INTConstant / FloatConstant: one widget, "value")
    "INTConstant": ["value"],
    "CreateGradientMask": ["invert", "frames", "width", "height"],
    "FloatConstant": ["value"],
    # loaders (nodes/model_optimization_nodes.py INPUT_TYPES)
    "DiffusionModelLoaderKJ": ["model_name", "weight_dtype", "compute_dtype", "patch_cublaslinear", "sage_attention",
                               "enable_fp16_accumulation"],
    "GGUFLoaderKJ": ["model_name", "extra_model_name", "dequant_dtype", "patch_dtype", "patch_on_device",
                     "enable_fp16_accumulation", "attention_override"],
    "CheckpointLoaderKJ": ["ckpt_name", "weight_dtype", "compute_dtype", "patch_cublaslinear", "sage_attention",
                           "enable_fp16_accumulation"],
    SELECTOR: ["model_name"],
}

PACK = Pack(
    name="ComfyUI-KJNodes",
    # resize every image of the batch / pass it through (nodes/image_nodes.py)
    keeps_count={"ImageResizeKJ", "ImageResizeKJv2", "GetImageSizeAndCount"},
    widgets=WIDGETS,
    value_primitives={"INTConstant", "FloatConstant"},
    output_types={"INTConstant": ["INT"], "FloatConstant": ["FLOAT"], "ImageResizeKJ": ["IMAGE", "INT", "INT"], "ImageResizeKJv2": ["IMAGE", "INT", "INT"],
                  "GetImageSizeAndCount": ["IMAGE", "INT", "INT", "INT"], "DiffusionModelLoaderKJ": ["MODEL"],
                  "CheckpointLoaderKJ": ["MODEL", "CLIP", "VAE"], SELECTOR: ["STRING"], "GGUFLoaderKJ": ["MODEL"]},
    refs={"DiffusionModelLoaderKJ": _diffusion_loader_kj, "CheckpointLoaderKJ": _checkpoint_loader_kj,
          "GGUFLoaderKJ": _gguf_loader_kj},
    images={"ImageResizeKJ": _resize, "ImageResizeKJv2": _resize, "GetImageSizeAndCount": _passthrough_image,
            "CreateGradientMask": _gradient_mask},
    values={"ImageResizeKJ": _resize_value, "ImageResizeKJv2": _resize_value, "GetImageSizeAndCount": _size_and_count},
    handled={SELECTOR, "ImageConcatMulti", "GetImageRangeFromBatch", "ImagePadKJ", "AddLabel",
             "StringConstantMultiline", "ImageBatchMulti", "ColorMatch", "WidgetToString", "SomethingToString",
             "CreateShapeMask", "GrowMaskWithBlur", "PathchSageAttentionKJ", "PatchSageAttentionKJ",
             "ModelPatchTorchSettings", "TorchCompileModelWanVideo", "TorchCompileModelFluxAdvanced",
             "LeapfusionHunyuanI2VPatcher", "GetLatentRangeFromBatch", "SkipLayerGuidanceWanVideo"},
)
