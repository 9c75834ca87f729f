"""bytedance/ComfyUI-HyperLoRA (hyperlora/nodes.py at HEAD): an identity LoRA generated from face photos for an SDXL
model (families/hyperlora.py counts what it holds).

- HyperLoRALoader (with HyperLoRAConfig) / HyperLoRAUniLoader: a folder of models/hyper_lora/hyper_lora -> HYPER_LORA.
  It builds the CLIP ViT-L/14, the HyperLoRA modules, the resampler and the ID projector and moves each to the GPU
  in its ``dtype`` widget (``.to(device, dtype)``); ComfyUI's model management never sees them and the cached output
  keeps them there. The files fix the configuration: load_state_dict is strict, so a config other than the
  published one does not load the published files.
- HyperLoRAFaceAttr / HyperLoRAIDCond / HyperLoRABaseCond: InsightFace on the CPU provider and image crops; the ID
  condition's CLIP / resampler forward runs in the generate nodes on a handful of 224 px faces (tens of MB next to
  the held weights) before the SDXL model is loaded.
- HyperLoRAGenerateIDLoRA / ...BaseLoRA / HyperLoRAUniGenerateIDLoRA -> LORA: a rank-8 LoRA on the CPU; its LORA
  output carries the loader's model, so the model it patches holds it.
- HyperLoRAApplyLoRA: MODEL + LORA -> MODEL, ComfyUI's own LoRA patching with the held HyperLoRA riding on it.
"""
from __future__ import annotations

from ...families._spec import HYPERLORA
from ..base import _ImageSize
from . import Pack, loader, model_with

HYPER, CONFIG, LORA = "HYPER_LORA", "HYPER_LORA_CONFIG", "LORA"
LOADER, UNI_LOADER, CONFIG_NODE = "HyperLoRALoader", "HyperLoRAUniLoader", "HyperLoRAConfig"
GENERATORS = {"HyperLoRAGenerateIDLoRA": "id_cond", "HyperLoRAGenerateBaseLoRA": "base_cond",
              "HyperLoRAUniGenerateIDLoRA": "images"}
CONDS = {"HyperLoRAIDCond": "ID_COND", "HyperLoRABaseCond": "BASE_COND"}
APPLY = "HyperLoRAApplyLoRA"
_DTYPE = {"fp32": "float32"}  # resolve._HELD_BYTES: 16-bit otherwise


@loader
def _loader(a, node, slot, type_, visiting):
    if type_ != HYPER:
        return []
    ref = a.loader_ref(node, "model", role=HYPERLORA, folder="hyper_lora",
                       weight_dtype=_DTYPE.get(str(a.value(node, "dtype") or "fp16")))
    return [ref] if ref else []


def _generated(a, node, slot, type_, visiting):
    """LORA: the HyperLoRA that made it (the generated rank-8 tensors themselves stay on the CPU)."""
    return list(a.refs(a.link(node, "hyper_lora"), HYPER, visiting)) if type_ == LORA else []


def _apply(a, node, slot, type_, visiting):
    return model_with(a, node, type_, visiting, (("lora", LORA),))


def _faces(a, node, link, depth):
    """IDCond / BaseCond's IMAGE: the cropped faces at 512 x 512, one a photo."""
    if link.slot != 1:
        return None
    src = a.image_size(a.link(node, "images"), depth + 1)
    return _ImageSize(512, 512, src.batch if src else 1, src is not None)


_CONFIG_WIDGETS = ["image_processor", "image_encoder", "resampler.dim", "resampler.dim_head", "resampler.heads",
                   "resampler.depth", "resampler.ff_mult", "encoder_types", "face_analyzer", "id_embed_dim",
                   "num_id_tokens", "hyper_dim", "lora_rank", "has_base_lora"]

PACK = Pack(
    name="ComfyUI-HyperLoRA",
    refs={LOADER: _loader, UNI_LOADER: _loader, APPLY: _apply, **{t: _generated for t in GENERATORS}},
    images={t: _faces for t in CONDS},
    handled={CONFIG_NODE, "HyperLoRAFaceAttr", "HyperLoRASaveLoRA", *CONDS},
    widgets={CONFIG_NODE: _CONFIG_WIDGETS, LOADER: ["model", "dtype"],
             UNI_LOADER: ["image_processor", "image_encoder", "encoder_types", "face_analyzer", "model", "dtype"],
             "HyperLoRAIDCond": ["grayscale", "remove_background"], "HyperLoRAUniGenerateIDLoRA":
                 ["grayscale", "remove_background"], APPLY: ["weight"]},
    output_types={CONFIG_NODE: [CONFIG], LOADER: [HYPER], UNI_LOADER: [HYPER], "HyperLoRAFaceAttr": ["FACE_ATTR"],
                  "HyperLoRAIDCond": ["ID_COND", "IMAGE"], "HyperLoRABaseCond": ["BASE_COND", "IMAGE"],
                  **{t: [LORA] for t in GENERATORS}, APPLY: ["MODEL"], "HyperLoRASaveLoRA": []},
    input_types={LOADER: {"config": CONFIG}, "HyperLoRAFaceAttr": {"hyper_lora": HYPER, "images": "IMAGE"},
                 **{t: {"hyper_lora": HYPER, "images": "IMAGE", "face_attr": "FACE_ATTR"} for t in CONDS},
                 "HyperLoRAGenerateIDLoRA": {"hyper_lora": HYPER, "id_cond": "ID_COND"},
                 "HyperLoRAGenerateBaseLoRA": {"hyper_lora": HYPER, "base_cond": "BASE_COND"},
                 "HyperLoRAUniGenerateIDLoRA": {"hyper_lora": HYPER, "images": "IMAGE"},
                 APPLY: {"model": "MODEL", "lora": LORA}, "HyperLoRASaveLoRA": {"lora": LORA}},
    relevant_types={HYPER, CONFIG, "ID_COND", "BASE_COND", "FACE_ATTR"},
)
