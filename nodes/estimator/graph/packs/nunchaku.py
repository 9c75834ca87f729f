"""mit-han-lab/ComfyUI-nunchaku: SVDQuant 4-bit (int4 / fp4) Flux and Qwen-Image models.

The DiT loader names a model folder or file under models/diffusion_models (``model_path``:
e.g. svdq-int4-flux.1-dev); its weights are 4-bit with low-rank 16-bit branches, priced by the
file (or its name, "svdq"). ``cpu_offload`` enabled keeps the transformer blocks in RAM and
streams them (nunchaku's own offload), which the estimate notes. The text-encoder loaders name
T5 / CLIP files like DualCLIPLoader.
"""
from __future__ import annotations

from . import Pack, loader, lora_on_model

DIT_LOADERS = {"NunchakuFluxDiTLoader": "model_path", "NunchakuQwenImageDiTLoader": "model_name",
               "NunchakuFluxDiTLoaderV2": "model_path"}
WIDGETS = {
    "NunchakuFluxDiTLoader": ["model_path", "cache_threshold", "attention", "cpu_offload", "device_id", "data_type"],
    "NunchakuTextEncoderLoaderV2": ["model_type", "text_encoder1", "text_encoder2", "t5_min_length"],
    "NunchakuTextEncoderLoader": ["model_type", "text_encoder1", "text_encoder2", "t5_min_length"],
    "NunchakuFluxLoraLoader": ["lora_name", "lora_strength"],
}


@loader
def _dit(a, node, slot, type_, visiting):
    if type_ != "MODEL":
        return []
    offload = a.value(node, "cpu_offload")
    if offload in ("enable", "enabled", True):
        a.note(f"{a.label(node)}: nunchaku cpu_offload on: transformer blocks stream from RAM (slower, less VRAM)")
    ref = a.loader_ref(node, DIT_LOADERS[node.type], role="diffusion", folder="diffusion_models")
    return [ref] if ref else []


@loader
def _text_encoders(a, node, slot, type_, visiting):
    if type_ != "CLIP":
        return []
    out = []
    for widget in ("text_encoder1", "text_encoder2"):
        ref = a.loader_ref(node, widget, role="text_encoder", folder="text_encoders", clip_type="flux")
        if ref:
            out.append(ref)
    return out


def _lora(a, node, slot, type_, visiting):
    return lora_on_model(a, node, visiting, strength_widget="lora_strength") if type_ == "MODEL" else []


PACK = Pack(
    name="ComfyUI-nunchaku",
    refs={**{t: _dit for t in DIT_LOADERS}, "NunchakuTextEncoderLoader": _text_encoders,
          "NunchakuTextEncoderLoaderV2": _text_encoders, "NunchakuFluxLoraLoader": _lora},
    widgets=WIDGETS,
    output_types={**{t: ["MODEL"] for t in DIT_LOADERS}, "NunchakuTextEncoderLoader": ["CLIP"],
                  "NunchakuTextEncoderLoaderV2": ["CLIP"], "NunchakuFluxLoraLoader": ["MODEL"]},
    input_types={"NunchakuFluxLoraLoader": {"model": "MODEL"}},
    handled={"NunchakuPuLIDLoaderV2", "NunchakuModelMerger"},
    unpriced={"NunchakuFluxPuLIDApplyV2": "PuLID (its weights, an EVA-CLIP vision encoder and InsightFace)",
              "NunchakuDepthPreprocessor": "a Depth Anything model"},
)
