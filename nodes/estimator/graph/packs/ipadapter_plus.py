"""cubiq/ComfyUI_IPAdapter_plus (IPAdapterPlus.py, utils.py at 9d076a3): IP-Adapter loaders and the nodes that apply it.

- IPAdapterModelLoader: a file from models/ipadapter -> IPADAPTER (a state dict in RAM).
- IPAdapterUnifiedLoader: MODEL + preset -> MODEL, IPADAPTER holding the preset's CLIP vision and IP-Adapter files,
  found by a pattern among the installed files (utils.py get_clipvision_file / get_ipadapter_file), the IP-Adapter
  file chosen by whether the model is SDXL (IPAdapterPlus.py:596). Here the file h94/IP-Adapter publishes under that
  pattern is named and said; a model of unknown family leaves it unpriced.
- The apply nodes (IPAdapter, IPAdapterAdvanced, ... IPAdapterEmbeds): encode the reference image with CLIP vision
  through ComfyUI's model management (utils.py encode_image_masked_: load_model_gpu at 224 px), then build the
  IP-Adapter module and move it to the GPU in the UNet's dtype, where the attention patches keep it while the model
  samples (ipadapter_execute: IPAdapter(...).to(device, dtype), patch_kwargs["ipadapter"]). So: a CLIP vision encode
  stage, and the IP-Adapter's weights ride on the MODEL they patch (role "ipadapter", priced in the sampling stage;
  sizes families/ip_adapter.py).
- IPAdapterUnifiedLoaderFaceID: the preset's IP-Adapter and LoRA files (utils.py get_ipadapter_file's FaceID patterns:
  the h94/IP-Adapter-FaceID files ComfyUI-Manager lists), the LoRA applied to the MODEL it passes on
  (load_lora_for_models), CLIP-ViT-H for the Plus presets, and InsightFace on the provider its widget names.
- FaceID nodes: the CLIP vision encode as the others, plus InsightFace's face analysis (onnxruntime, buffalo_l /
  antelopev2) on the provider of the InsightFace loader or the unified loader: on the CPU provider it takes nothing
  on the card; on a GPU provider its onnxruntime arena is not priced, said, and the estimate stays incomplete.
- IPAdapterUnifiedLoaderCommunity: not priced, said.
"""
from __future__ import annotations

from ...models.name_infer import base_family
from ...models.published import civitai_info
from ...model_info import CHECKPOINT
from ...workload import CLIP_VISION_ENCODE, ModelRef, Stage
from . import Pack, loader

IPADAPTER = "IPADAPTER"
APPLY = ("IPAdapter", "IPAdapterAdvanced", "IPAdapterBatch", "IPAdapterClipVisionEnhancer",
         "IPAdapterClipVisionEnhancerBatch", "IPAdapterPreciseComposition", "IPAdapterPreciseCompositionBatch",
         "IPAdapterPreciseStyleTransfer", "IPAdapterPreciseStyleTransferBatch", "IPAdapterStyleComposition",
         "IPAdapterStyleCompositionBatch", "IPAdapterTiled", "IPAdapterTiledBatch", "IPAdapterFromParams")
EMBEDS_APPLY = ("IPAdapterEmbeds", "IPAdapterEmbedsBatch")  # image embeddings from IPAdapterEncoder: no encode here
ENCODER = "IPAdapterEncoder"
UNIFIED = "IPAdapterUnifiedLoader"
FACEID_UNIFIED, COMMUNITY_UNIFIED = "IPAdapterUnifiedLoaderFaceID", "IPAdapterUnifiedLoaderCommunity"
OTHER_UNIFIED = (FACEID_UNIFIED, COMMUNITY_UNIFIED)
INSIGHTFACE_LOADER = "IPAdapterInsightFaceLoader"
# FaceID: InsightFace (onnxruntime, its own provider) finds the face, and the FaceID layouts add LoRA layers
FACEID = ("IPAdapterFaceID", "IPAdapterFaceIDKolors", "IPAAdapterFaceIDBatch", "IPAdapterMS")

# utils.py get_clipvision_file: the README's files for its patterns
CLIP_VISION_H = "CLIP-ViT-H-14-laion2B-s32B-b79K.safetensors"
CLIP_VISION_BIGG = "CLIP-ViT-bigG-14-laion2B-39B-b160k.safetensors"
# utils.py get_ipadapter_file: preset prefix -> (SD1.5 file, SDXL file) h94/IP-Adapter publishes for its patterns;
# None where the loader raises ("not supported for SDXL")
PRESET_FILES = (
    ("light", ("ip-adapter_sd15_light_v11.bin", None)),
    ("standard", ("ip-adapter_sd15.safetensors", "ip-adapter_sdxl_vit-h.safetensors")),
    ("vit-g", ("ip-adapter_sd15_vit-G.safetensors", "ip-adapter_sdxl.safetensors")),
    ("plus (", ("ip-adapter-plus_sd15.safetensors", "ip-adapter-plus_sdxl_vit-h.safetensors")),
    ("plus face", ("ip-adapter-plus-face_sd15.safetensors", "ip-adapter-plus-face_sdxl_vit-h.safetensors")),
    ("full", ("ip-adapter-full-face_sd15.safetensors", None)),
)


# utils.py get_ipadapter_file's FaceID presets: prefix -> ((SD1.5 IP-Adapter, LoRA), (SDXL IP-Adapter, LoRA)), the
# h94/IP-Adapter-FaceID files its patterns match; None where the loader raises. All use InsightFace; the Plus ones
# also CLIP vision (ViT-H)
FACEID_FILES = (
    ("faceid plus v2", (("ip-adapter-faceid-plusv2_sd15.bin", "ip-adapter-faceid-plusv2_sd15_lora.safetensors"),
                        ("ip-adapter-faceid-plusv2_sdxl.bin", "ip-adapter-faceid-plusv2_sdxl_lora.safetensors"))),
    ("faceid plus -", (("ip-adapter-faceid-plus_sd15.bin", "ip-adapter-faceid-plus_sd15_lora.safetensors"), None)),
    ("faceid portrait unnorm", (None, ("ip-adapter-faceid-portrait_sdxl_unnorm.bin", None))),
    ("faceid portrait (", (("ip-adapter-faceid-portrait-v11_sd15.bin", None), ("ip-adapter-faceid-portrait_sdxl.bin",
                                                                                 None))),
    ("faceid", (("ip-adapter-faceid_sd15.bin", "ip-adapter-faceid_sd15_lora.safetensors"),
                ("ip-adapter-faceid_sdxl.bin", "ip-adapter-faceid_sdxl_lora.safetensors"))),
)


def _unset(node, what: str, role: str, folder: str) -> ModelRef:
    return ModelRef(name=f"({what})", role=role, folder=folder, loader_node=node.id, loader_type=node.type, unset=True)


def _base_family(a, node, visiting) -> str | None:
    """"sd15" / "sdxl" of the model the loader is given, by its file's name rule or Civitai's listing of it
    (published.civitai_info: "realisticVisionV60B1_v51VAE" is SD 1.5), or None."""
    for ref in a.refs(a.link(node, "model"), "MODEL", visiting):
        if ref.role not in ("diffusion", "checkpoint"):
            continue
        family = base_family(ref.name, CHECKPOINT)
        if family is None:
            listed = civitai_info(ref.name, ref.role, ref.folder)
            family = listed.family if listed is not None and listed.family in ("sd15", "sdxl") else None
        if family:
            return family
    return None


@loader
def _model_loader(a, node, slot, type_, visiting):
    if type_ != IPADAPTER:
        return []
    ref = a.loader_ref(node, "ipadapter_file", role="ipadapter", folder="ipadapter")
    return [ref] if ref else []


def _passed_model(a, node, type_, visiting) -> list | None:
    """A unified loader's MODEL output is the model it is given; its IPADAPTER output: None (the caller reads it)."""
    if type_ == IPADAPTER:
        return None
    return a.refs(a.link(node, "model"), "MODEL", visiting) if type_ == "MODEL" else []


@loader
def _unified(a, node, slot, type_, visiting):
    passed = _passed_model(a, node, type_, visiting)
    if passed is not None:
        return passed
    preset = str(a.value(node, "preset") or "").lower()
    vision = CLIP_VISION_BIGG if preset.startswith("vit-g") else CLIP_VISION_H
    out = [ModelRef(name=vision, role="clip_vision", folder="clip_vision", loader_node=node.id, loader_type=node.type)]
    files = next((f for p, f in PRESET_FILES if preset.startswith(p)), None)
    family = _base_family(a, node, visiting)
    if files is None or family is None:
        why = (f"the IP-Adapter file of preset '{preset}'" if files is None else
               "the IP-Adapter file: the unified loader picks it by whether the model is SDXL, and the model's family "
               "is not known here")
        a.note(f"{a.label(node)}: {why} is not priced")
        return out + [_unset(node, why, "ipadapter", "ipadapter")]
    name = files[family == "sdxl"]
    if name is None:
        a.note(f"{a.label(node)}: preset '{preset}' is not offered for SDXL (ComfyUI_IPAdapter_plus raises)")
        return out + [_unset(node, f"preset '{preset}' on SDXL", "ipadapter", "ipadapter")]
    a.note(f"{a.label(node)}: preset '{preset}' on a {family.upper()} model loads {name} and {vision} (the files "
           "h94/IP-Adapter and the README publish for utils.py get_ipadapter_file / get_clipvision_file's patterns)")
    return out + [ModelRef(name=name, role="ipadapter", folder="ipadapter", loader_node=node.id, loader_type=node.type)]


def _faceid_files(a, node, visiting) -> tuple | None:
    """(IP-Adapter file, LoRA file or None, plus) of a FaceID unified loader's preset on its model, or None (said)."""
    preset = str(a.value(node, "preset") or "").lower()
    files = next((f for p, f in FACEID_FILES if preset == p or (p != "faceid" and preset.startswith(p))), None)
    family = _base_family(a, node, visiting)
    pair = files[family == "sdxl"] if files is not None and family is not None else None
    if pair is None:
        return None
    return pair[0], pair[1], "plus" in preset


@loader
def _other_unified(a, node, slot, type_, visiting):
    if node.type == FACEID_UNIFIED:
        found = _faceid_files(a, node, visiting)
        if found is not None:
            ipa, lora, plus = found
            if type_ == "MODEL":  # IPAdapterPlus.py: the preset's LoRA applied with load_lora_for_models
                base = a.refs(a.link(node, "model"), "MODEL", visiting)
                strength = a.number(node, "lora_strength", 0.6, integer=False)
                return base + ([ModelRef(name=lora, role="lora", folder="loras", loader_node=node.id,
                                         loader_type=node.type, strength=strength)] if lora else [])
            if type_ != IPADAPTER:
                return []
            a.note(f"{a.label(node)}: preset '{a.value(node, 'preset')}' loads {ipa}"
                   + (f" and the LoRA {lora}" if lora else "") + (f" and {CLIP_VISION_H}" if plus else "")
                   + " (h94/IP-Adapter-FaceID's files for utils.py get_ipadapter_file's patterns)")
            out = [ModelRef(name=ipa, role="ipadapter", folder="ipadapter", loader_node=node.id,
                            loader_type=node.type)]
            if plus:
                out.insert(0, ModelRef(name=CLIP_VISION_H, role="clip_vision", folder="clip_vision",
                                       loader_node=node.id, loader_type=node.type))
            return out
    passed = _passed_model(a, node, type_, visiting)
    if passed is not None:
        return passed
    preset = str(a.value(node, "preset") or "")
    return [_unset(node, f"{node.type} preset '{preset}': its IP-Adapter, LoRA and InsightFace files are not priced",
                   "ipadapter", "ipadapter")]


def _insightface_provider(a, node) -> str | None:
    """The onnxruntime provider InsightFace runs on for a FaceID node: its InsightFace loader's, else the FaceID unified
    loader's behind its ipadapter input (the loader puts InsightFace in the IPADAPTER it returns)."""
    link = a.link(node, "insightface")
    if link is not None:
        src = a.nodes.get(link.node)
        return str(a.value(src, "provider") or "") if src is not None and src.type == INSIGHTFACE_LOADER else None
    for ref in a.refs(a.link(node, "ipadapter"), IPADAPTER):
        src = a.nodes.get(ref.loader_node)
        if src is not None and src.type == FACEID_UNIFIED:
            return str(a.value(src, "provider") or "")
    return None


def _faceid(a, node):
    stage = _encode(a, node)
    provider = _insightface_provider(a, node)
    if provider and provider.upper() == "CPU":
        a.stage_note("InsightFace runs on onnxruntime's CPU provider: nothing on the card")
    else:
        a.unpriced(f"FaceID: InsightFace's face analysis on onnxruntime's {provider or 'unknown'} provider: its GPU "
                   "memory (the provider's arena) is not priced (the CPU provider takes none)")
    return stage


def _apply_refs(a, node, slot, type_, visiting):
    """MODEL: the model it is given, with the IP-Adapter module its patches keep on the GPU."""
    if type_ != "MODEL":
        return []
    base = a.refs(a.link(node, "model"), "MODEL", visiting)
    extra = [r for r in a.refs(a.link(node, "ipadapter"), IPADAPTER, visiting) if r.role == "ipadapter"]
    return base + [r for r in extra if r not in base]


def _encode(a, node):
    """The reference image through CLIP vision: the node's clip_vision input, else the unified loader's."""
    link = a.link(node, "clip_vision")
    if link is not None:
        models = a.refs(link, "CLIP_VISION")
    else:
        models = [r for r in a.refs(a.link(node, "ipadapter"), IPADAPTER) if r.role == "clip_vision"]
    if not models:
        a.unpriced("the CLIP vision model that encodes the reference image is not named (no clip_vision input and "
                   "no unified loader)")
    return Stage(kind=CLIP_VISION_ENCODE, node_id=node.id, node_type=node.type, models=tuple(models))


PACK = Pack(
    name="ComfyUI_IPAdapter_plus",
    stage_kinds={t: CLIP_VISION_ENCODE for t in (*APPLY, ENCODER, *FACEID)},
    stages={**{t: _encode for t in (*APPLY, ENCODER)}, **{t: _faceid for t in FACEID}},
    refs={"IPAdapterModelLoader": _model_loader, UNIFIED: _unified, **{t: _other_unified for t in OTHER_UNIFIED},
          **{t: _apply_refs for t in (*APPLY, *EMBEDS_APPLY, *FACEID)}},
    widgets={"IPAdapterModelLoader": ["ipadapter_file"], UNIFIED: ["preset"], COMMUNITY_UNIFIED: ["preset"],
             FACEID_UNIFIED: ["preset", "lora_strength", "provider"], INSIGHTFACE_LOADER: ["provider", "model_name"]},
    output_types={"IPAdapterModelLoader": [IPADAPTER], **{t: ["MODEL", IPADAPTER] for t in (UNIFIED, *OTHER_UNIFIED)},
                  **{t: ["MODEL"] for t in (*APPLY, *EMBEDS_APPLY)}, ENCODER: ["EMBEDS", "EMBEDS"],
                  **{t: ["MODEL", "IMAGE"] for t in FACEID if t != "IPAdapterMS"}, "IPAdapterMS": ["MODEL"]},
    input_types={**{t: {"model": "MODEL", "ipadapter": IPADAPTER} for t in (UNIFIED, *OTHER_UNIFIED)},
                 **{t: {"model": "MODEL", "ipadapter": IPADAPTER, "image": "IMAGE", "clip_vision": "CLIP_VISION"}
                    for t in (*APPLY, *EMBEDS_APPLY)},
                 **{t: {"model": "MODEL", "ipadapter": IPADAPTER, "image": "IMAGE", "clip_vision": "CLIP_VISION",
                        "insightface": "INSIGHTFACE"} for t in FACEID},
                 ENCODER: {"ipadapter": IPADAPTER, "image": "IMAGE", "clip_vision": "CLIP_VISION"}},
    relevant_types={IPADAPTER},
)
