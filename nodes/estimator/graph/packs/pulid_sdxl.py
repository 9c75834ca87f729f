"""cubiq/PuLID_ComfyUI: a face identity added to an SDXL model, built as ComfyUI-PuLID-Flux builds its own
(pulid_flux.py): PulidModelLoader (models/pulid -> PULID), PulidEvaClipLoader (EVA02-CLIP-L-14-336 from the Hugging
Face cache -> EVA_CLIP), PulidInsightFaceLoader (antelopev2 on the provider its widget names -> FACEANALYSIS), and
ApplyPulid / ApplyPulidAdvanced, which move the EVA CLIP and the PuLID modules to the GPU in the UNet's dtype
(pulid.py apply_pulid: eva_clip.to(device, dtype), pulid.to(device, dtype)) for the patched model's sampling.
Sizes: families/pulid.py (P_PULID_SDXL)."""
from __future__ import annotations

from . import Pack, loader, model_file_loader
from .pulid_flux import EVA_CLIP, FACEANALYSIS, _eva_loader, _insightface_loader, _pack_held

PULID_MODEL = "PULID"


def _apply_refs(a, node, slot, type_, visiting):
    return _pack_held(a, node, type_, visiting, (("pulid", PULID_MODEL), ("eva_clip", EVA_CLIP),
                                                 ("face_analysis", FACEANALYSIS)))


APPLY = ("ApplyPulid", "ApplyPulidAdvanced")
PACK = Pack(
    name="PuLID_ComfyUI",
    refs={"PulidModelLoader": loader(model_file_loader("pulid_file", "pulid", PULID_MODEL, role="pulid")),
          "PulidEvaClipLoader": _eva_loader,
          "PulidInsightFaceLoader": _insightface_loader, **{t: _apply_refs for t in APPLY}},
    widgets={"PulidModelLoader": ["pulid_file"], "PulidInsightFaceLoader": ["provider"],
             "ApplyPulid": ["method", "weight", "start_at", "end_at"]},
    output_types={"PulidModelLoader": [PULID_MODEL], "PulidEvaClipLoader": [EVA_CLIP],
                  "PulidInsightFaceLoader": [FACEANALYSIS], **{t: ["MODEL"] for t in APPLY}},
    input_types={t: {"model": "MODEL", "pulid": PULID_MODEL, "eva_clip": EVA_CLIP, "face_analysis": FACEANALYSIS,
                     "image": "IMAGE", "attn_mask": "MASK"} for t in APPLY},
    relevant_types={PULID_MODEL},
)
