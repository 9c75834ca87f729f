"""kijai/ComfyUI-Florence2 (nodes.py at 00b6338): Florence-2 captions, boxes and masks (families/florence2.py).

- DownloadAndLoadFlorence2Model (a Hugging Face repository, downloaded to models/LLM) / Florence2ModelLoader (a
  folder of models/LLM): from_pretrained(torch_dtype = precision) on the offload device -> FL2MODEL.
- Florence2Run: model.to(device), then for each image of the batch one processor call (every image resized to
  768x768) and one generate with num_beams beams and up to max_new_tokens; then model.to(offload_device) unless
  keep_model_loaded. So the stage's memory is the weights and one image's generate, whatever the images' size.
"""
from __future__ import annotations

from ...families import florence2 as F2
from ...machine.resolve import PACK_FP32
from ...workload import SAMPLE
from . import Pack, loader, with_working

LOADERS, RUN, MODEL = ("DownloadAndLoadFlorence2Model", "Florence2ModelLoader"), "Florence2Run", "FL2MODEL"


@loader
def _loader_refs(a, node, slot, type_, visiting):
    if type_ != MODEL:
        return []
    fp32 = a.value(node, "precision") == "fp32"
    ref = a.loader_ref(node, "model", role="diffusion", folder="LLM", weight_dtype=PACK_FP32 if fp32 else None)
    return [ref] if ref else []


def _run(a, node):
    link = a.link(node, "florence2_model")
    stage = a.sample_stage(node, model_links=[link], cond_links=[], cfg=None, uses_negative=False, steps=1,
                           latent=None, model_type=MODEL)
    refs = a.refs(link, MODEL)
    name = (refs[0].name if refs else "").lower()
    size = next((k for k in ("large", "base") if k in name), None)
    if size is None:
        return stage  # the model's size is unknown: the name says neither base nor large (the stage says so)
    loader_node = a.nodes.get(refs[0].loader_node)
    nbytes = 4 if loader_node is not None and a.value(loader_node, "precision") == "fp32" else 2
    beams = min(max(1, a.number(node, "num_beams", 3) or 3), 64)  # the node's widget limits (nodes.py)
    new = min(max(1, a.number(node, "max_new_tokens", 1024) or 1024), 4096)
    return with_working(a, stage, F2.generate_working(size, nbytes, beams, new), "Florence-2",
                        "one image: every image is resized to 768×768 and captioned one at a time; first-principles "
                        "formula, uncalibrated")


PACK = Pack(
    name="ComfyUI-Florence2",
    stage_kinds={RUN: SAMPLE},
    stages={RUN: _run},
    refs={t: _loader_refs for t in LOADERS},
    relevant_types={MODEL},
    # INPUT_TYPES order (nodes.py); older workflows record no widget names
    widgets={**{t: ["model", "precision", "attention", "convert_to_safetensors"] for t in LOADERS},
             RUN: ["text_input", "task", "fill_mask", "keep_model_loaded", "max_new_tokens", "num_beams", "do_sample",
                   "output_mask_select", "seed"]},
    output_types={**{t: [MODEL] for t in LOADERS}, RUN: ["IMAGE", "MASK", "STRING", "JSON"]},
    input_types={RUN: {"florence2_model": MODEL, "image": "IMAGE"}, **{t: {"lora": "PEFTLORA"} for t in LOADERS}},
)
