"""MinusZoneAI/ComfyUI-Kolors-MZ (mz_kolors_core.py): Kolors in ComfyUI (families/kolors.py).

- MZ_KolorsUNETLoader / MZ_KolorsUNETLoaderV2: a file from models/unet loaded through ComfyUI's own
  load_unet_state_dict with the pack's hook: a ComfyUI model that KSampler samples as any other, under ComfyUI's model
  management. The loader loads Kolors only, so it names the family (ModelRef.hint) whatever the file is called
  (Kwai's unet/diffusion_pytorch_model.fp16.safetensors).
- MZ_ChatGLM3Loader: ChatGLM3-6B from models/LLM, quantized to 8 / 4 bits when the name says so.
- MZ_ChatGLM3 / MZ_ChatGLM3_V2: mm.unload_all_models(), then the whole ChatGLM3 moved to the GPU by hand
  (text_encoder.to(device)), one forward over the prompt padded to 256 tokens, then back to the offload device: no
  partial load, so a ChatGLM3 that does not fit is an OOM (runtime.run_wrapper with the pack's rule).
"""
from __future__ import annotations

from ...machine.runtime import KOLORS_MZ
from ...workload import TEXT_ENCODE
from ..base import _replace
from . import Pack, loader, model_file_loader

UNET_LOADERS = ("MZ_KolorsUNETLoader", "MZ_KolorsUNETLoaderV2")
GLM_LOADER, GLM = "MZ_ChatGLM3Loader", "CHATGLM3MODEL"
ENCODERS = ("MZ_ChatGLM3", "MZ_ChatGLM3_V2")
MAX_LENGTH = 256  # chatglm3_text_encode: padding="max_length", max_length=256


_unet = loader(model_file_loader("unet_name", "unet", "MODEL", hint="kolors"))
_chatglm3 = loader(model_file_loader("chatglm3_checkpoint", "LLM", GLM, role="text_encoder"))


def _encode(a, node):
    stage = a.text_stage(node, models=a.refs(a.link(node, "chatglm3_model"), GLM))
    return _replace(stage, text_tokens=MAX_LENGTH, manager=KOLORS_MZ)


PACK = Pack(
    name="ComfyUI-Kolors-MZ",
    stage_kinds={t: TEXT_ENCODE for t in ENCODERS},
    stages={t: _encode for t in ENCODERS},
    refs={**{t: _unet for t in UNET_LOADERS}, GLM_LOADER: _chatglm3},
    relevant_types={GLM},
    widgets={**{t: ["unet_name"] for t in UNET_LOADERS}, GLM_LOADER: ["chatglm3_checkpoint"],
             **{t: ["text"] for t in ENCODERS}},
    output_types={**{t: ["MODEL"] for t in UNET_LOADERS}, GLM_LOADER: [GLM], **{t: ["CONDITIONING"] for t in ENCODERS}},
    input_types={t: {"chatglm3_model": GLM} for t in ENCODERS},
)
