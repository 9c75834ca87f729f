"""shiimizu/ComfyUI-PhotoMaker-Plus (photomaker.py at 459f5c0): PhotoMaker V1 / V2 on an SDXL model
(families/photomaker.py).

- PhotoMakerLoaderPlus: a file from models/photomaker -> PHOTOMAKER, the ID encoder built on the CPU.
- PhotoMakerEncodePlus: CLIP + PHOTOMAKER + images -> CONDITIONING: ComfyUI's text encode of the prompt, then the ID
  encoder, which it moves to the GPU by hand (photomaker.to(load_device), never moved back) and runs on the reference
  images at 224 px (one small forward). A text-encode stage.
- PhotoMakerLoraLoaderPlus: MODEL + PHOTOMAKER -> MODEL, the file's LoRA on the model. The PhotoMaker file rides on
  that MODEL (role "photomaker", memory that cannot stream: the ID encoder the encode node left on the card and the
  LoRA, together the fp16 file).
- PhotoMakerInsightFaceLoader (V2): InsightFace on the provider its widget names; on the CPU it holds no GPU memory,
  on CUDA / ROCm onnxruntime's GPU memory is not priced and the estimate says so.
- PhotoMakerStyles, PrepImagesForClipVisionFromPath: strings and images, read by their sockets.
"""
from __future__ import annotations

from ...families._spec import PHOTOMAKER
from ...workload import ModelRef
from . import Pack, model_with

LOADER, ENCODE, LORA, FACE = ("PhotoMakerLoaderPlus", "PhotoMakerEncodePlus", "PhotoMakerLoraLoaderPlus",
                              "PhotoMakerInsightFaceLoader")
PHOTOMAKER_TYPE, INSIGHTFACE = "PHOTOMAKER", "INSIGHTFACE"


def _loader(a, node, slot, type_, visiting):
    if type_ != PHOTOMAKER_TYPE:
        return []
    ref = a.loader_ref(node, "photomaker_model_name", role=PHOTOMAKER, folder="photomaker")
    return [ref] if ref else []


def _insightface(a, node, slot, type_, visiting):
    """INSIGHTFACE: nothing of the card's on the CPU provider; on a GPU provider a placeholder the encode reads."""
    if type_ != INSIGHTFACE or str(a.value(node, "provider") or "CPU").upper() == "CPU":
        return []
    return [ModelRef(name=f"(InsightFace on the {a.value(node, 'provider')} provider)", role=PHOTOMAKER,
                     folder="insightface", loader_node=node.id, loader_type=node.type, unset=True)]


def _lora(a, node, slot, type_, visiting):
    """MODEL: the model it is given, with the PhotoMaker file (its LoRA, and the ID encoder left on the card)."""
    return model_with(a, node, type_, visiting, (("photomaker", PHOTOMAKER_TYPE),))


def _encode(a, node):
    """ComfyUI's text encode of the prompt; InsightFace on a GPU provider leaves the stage unpriced, named."""
    stage = a.text_stage(node)
    for ref in a.refs(a.link(node, "insightface_opt"), INSIGHTFACE):
        a.unpriced(f"{ref.name[1:-1]}: onnxruntime's GPU memory is not priced (the CPU provider holds none)")
    a.stage_note("the PhotoMaker ID encoder runs once on the 224 px reference images and stays on the card: priced "
                 "with the model it patches (PhotoMaker LoRA Loader Plus)")
    return stage


PACK = Pack(
    name="ComfyUI-PhotoMaker-Plus",
    refs={LOADER: _loader, FACE: _insightface, LORA: _lora},
    stages={ENCODE: _encode},
    stage_kinds={ENCODE: "text_encode"},
    widgets={LOADER: ["photomaker_model_name"], FACE: ["provider"], LORA: ["lora_strength"],
             ENCODE: ["trigger_word", "text"]},
    output_types={LOADER: [PHOTOMAKER_TYPE], FACE: [INSIGHTFACE], LORA: ["MODEL"], ENCODE: ["CONDITIONING"]},
    input_types={LORA: {"model": "MODEL", "photomaker": PHOTOMAKER_TYPE},
                 ENCODE: {"clip": "CLIP", "photomaker": PHOTOMAKER_TYPE, "image": "IMAGE", "text": "STRING",
                          "insightface_opt": INSIGHTFACE}},
    relevant_types={PHOTOMAKER_TYPE, INSIGHTFACE},
)
