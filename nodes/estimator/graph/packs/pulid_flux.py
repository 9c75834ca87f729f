"""ComfyUI-PuLID-Flux (balazik) and its Enhanced fork (sipie800): a face identity added to a Flux model.

- PulidFluxModelLoader: a file from models/pulid -> PULIDFLUX (built on the CPU).
- PulidFluxEvaClipLoader: EVA02-CLIP-L-14-336's vision tower from the Hugging Face cache -> EVA_CLIP.
- PulidFluxInsightFaceLoader: InsightFace antelopev2 (onnxruntime) on the provider its widget names -> FACEANALYSIS.
- ApplyPulidFlux: MODEL -> MODEL. It moves the EVA CLIP and PuLID to the GPU in the Flux model's dtype and keeps
  them there for the patched model's sampling (pulidflux.py apply_pulid_flux), so both ride on the MODEL (role
  "pulid", priced in the sampling stage as memory that cannot stream; sizes families/pulid.py). While it runs, it
  also builds facexlib's RetinaFace detector and BiSeNet face parser on the GPU for the reference image and lets
  them go when it returns: a transient under 2 GB all told, before any sampling, said in a note.
- InsightFace on the CPU provider holds no GPU memory; on CUDA or ROCm, onnxruntime's GPU arena is not priced and
  the estimate says so.
"""
from __future__ import annotations

from ...families.pulid import EVA_CLIP_NAME
from ...workload import ModelRef
from . import Pack, loader, model_file_loader, model_with

PULIDFLUX, EVA_CLIP, FACEANALYSIS = "PULIDFLUX", "EVA_CLIP", "FACEANALYSIS"


@loader
def _eva_loader(a, node, slot, type_, visiting):
    if type_ != EVA_CLIP:
        return []
    return [ModelRef(name=EVA_CLIP_NAME, role="pulid", folder="pulid", loader_node=node.id, loader_type=node.type)]


@loader
def insightface_refs(node, provider) -> list:
    """InsightFace antelopev2 on ``provider`` (the loader's widget): nothing on the CPU provider; on a GPU one an
    unpriced reference that says so (onnxruntime's arena is not priced)."""
    provider = str(provider or "CPU")
    if provider.upper() == "CPU":
        return []
    why = (f"InsightFace antelopev2 on the {provider} provider: onnxruntime's GPU memory is not priced (the CPU "
           "provider holds none)")
    return [ModelRef(name=f"({why})", role="pulid", folder="insightface", loader_node=node.id, loader_type=node.type,
                     unset=True)]


def _insightface_loader(a, node, slot, type_, visiting):
    return insightface_refs(node, a.value(node, "provider")) if type_ == FACEANALYSIS else []


def _pack_held(a, node, type_, visiting, inputs, facexlib: bool = True) -> list:
    """MODEL: the model it is given, with what its inputs (name, socket type) load and the node keeps on the GPU for
    sampling (packs.model_with; shared with pulid_sdxl.py and instantid.py); `facexlib`: the node also runs
    facexlib's face models."""
    if type_ == "MODEL" and facexlib:
        a.note(f"{a.label(node)}: facexlib's RetinaFace detector (109.5 MB, fp32) and BiSeNet face parser run on the "
               "GPU while the node encodes the face and are let go before sampling, with the EVA CLIP and PuLID "
               "weights a transient under 2 GB, below the sampling stage: not added")
    return model_with(a, node, type_, visiting, inputs)


def _apply_refs(a, node, slot, type_, visiting):
    """MODEL: the model it is given, with the PuLID model and EVA CLIP it keeps on the GPU for sampling."""
    return _pack_held(a, node, type_, visiting, (("pulid_flux", PULIDFLUX), ("eva_clip", EVA_CLIP),
                                                 ("face_analysis", FACEANALYSIS)))


PACK = Pack(
    name="ComfyUI-PuLID-Flux",
    refs={"PulidFluxModelLoader": loader(model_file_loader("pulid_file", "pulid", PULIDFLUX, role="pulid")),
          "PulidFluxEvaClipLoader": _eva_loader,
          "PulidFluxInsightFaceLoader": _insightface_loader, "ApplyPulidFlux": _apply_refs},
    widgets={"PulidFluxModelLoader": ["pulid_file"], "PulidFluxInsightFaceLoader": ["provider"],
             "ApplyPulidFlux": ["weight", "start_at", "end_at"]},
    output_types={"PulidFluxModelLoader": [PULIDFLUX], "PulidFluxEvaClipLoader": [EVA_CLIP],
                  "PulidFluxInsightFaceLoader": [FACEANALYSIS], "ApplyPulidFlux": ["MODEL"]},
    input_types={"ApplyPulidFlux": {"model": "MODEL", "pulid_flux": PULIDFLUX, "eva_clip": EVA_CLIP,
                                    "face_analysis": FACEANALYSIS, "image": "IMAGE", "attn_mask": "MASK"}},
    relevant_types={PULIDFLUX, EVA_CLIP, FACEANALYSIS},
)
