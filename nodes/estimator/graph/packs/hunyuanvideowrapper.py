"""kijai/ComfyUI-HunyuanVideoWrapper's text encoders (nodes.py DownloadAndLoadHyVideoTextEncoder, HyVideoTextEncode,
HyVideoTextImageEncode, HyVideoI2VEncode). The rest of the pack is read by its socket types (graph/node_specs); its
HYVIDEOMODEL is a model type no rule here prices, so a sampler that runs it stays "not estimated" (never read as a
pass-through: the type stays out of relevant_types).

- DownloadAndLoadHyVideoTextEncoder: the LLM named in ``llm_model`` (Kijai/llava-llama-3-8b-text-encoder-tokenizer,
  a Llama 3 8B, from models/LLM) at its ``precision`` widget (fp16 / bf16 / fp32), or with ``quantization``
  fp8_e4m3fn (1 byte a weight, the embedding at the precision) or bnb_nf4 (bitsandbytes 4-bit with double
  quantization, priced at 16 bits here: an upper bound, said); and, unless ``clip_model`` is "disabled", OpenAI's
  CLIP ViT-L/14 text tower from models/clip.
- HyVideoTextEncode: moves the LLM to the text-encoder device, encodes the prompt (and the negative one with a
  HYVID_CFG), and back to the offload device with force_offload; then the CLIP-L, or ComfyUI's CLIP given on its
  ``clip_l`` input: one stage with both.
"""
from __future__ import annotations

from ...workload import TEXT_ENCODE
from . import Pack, loader

LOADER, ENCODER, ENCODERS = "DownloadAndLoadHyVideoTextEncoder", "HyVideoTextEncode", "HYVIDTEXTENCODER"
IMAGE_ENCODERS = ("HyVideoTextImageEncode", "HyVideoI2VEncode")


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


PACK = Pack(
    name="ComfyUI-HunyuanVideoWrapper",
    widgets={LOADER: ["llm_model", "clip_model", "precision", "apply_final_norm", "hidden_state_skip_layer",
                      "quantization", "load_device"]},
    refs={LOADER: _text_encoders},
    stage_kinds={ENCODER: TEXT_ENCODE, **{t: TEXT_ENCODE for t in IMAGE_ENCODERS}},
    stages={ENCODER: _encode, **{t: _encode_with_images for t in IMAGE_ENCODERS}},
    relevant_types={ENCODERS},
    output_types={LOADER: [ENCODERS]},
    input_types={t: {"text_encoders": ENCODERS, "clip_l": "CLIP", "image": "IMAGE"}
                 for t in (ENCODER,) + IMAGE_ENCODERS},
)
