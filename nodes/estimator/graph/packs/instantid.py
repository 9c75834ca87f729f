"""cubiq/ComfyUI_InstantID: InstantIDModelLoader (models/instantid -> INSTANTID), InstantIDFaceAnalysis (InsightFace
antelopev2 on its provider -> FACEANALYSIS) and the apply nodes. ApplyInstantID / ApplyInstantIDAdvanced and
InstantIDAttentionPatch move the adapter to the GPU in the UNet's dtype and patch the model's cross-attention, so it
rides on the MODEL (role "instantid"; size families/instantid.py); the first two also set the ControlNet they are
given on the conditioning, which the generic reading prices (a CONTROL_NET input on the conditioning chain).
InsightFace as in pulid_flux.py: nothing on the CPU provider, named as not priced on CUDA / ROCm."""
from __future__ import annotations

from . import Pack, loader, model_file_loader
from .pulid_flux import FACEANALYSIS, _insightface_loader, _pack_held

INSTANTID_MODEL = "INSTANTID"
APPLY = ("ApplyInstantID", "ApplyInstantIDAdvanced")
PATCH = "InstantIDAttentionPatch"


def _apply_refs(a, node, slot, type_, visiting):
    return _pack_held(a, node, type_, visiting, (("instantid", INSTANTID_MODEL), ("insightface", FACEANALYSIS)),
                      facexlib=False)


PACK = Pack(
    name="ComfyUI_InstantID",
    refs={"InstantIDModelLoader": loader(model_file_loader("instantid_file", "instantid", INSTANTID_MODEL, role="instantid")),
          "InstantIDFaceAnalysis": _insightface_loader,
          **{t: _apply_refs for t in (*APPLY, PATCH)}},
    widgets={"InstantIDModelLoader": ["instantid_file"], "InstantIDFaceAnalysis": ["provider"],
             "ApplyInstantID": ["weight", "start_at", "end_at"]},
    output_types={"InstantIDModelLoader": [INSTANTID_MODEL], "InstantIDFaceAnalysis": [FACEANALYSIS],
                  **{t: ["MODEL", "CONDITIONING", "CONDITIONING"] for t in APPLY}, PATCH: ["MODEL", "FACE_EMBEDS"]},
    input_types={**{t: {"instantid": INSTANTID_MODEL, "insightface": FACEANALYSIS, "control_net": "CONTROL_NET",
                        "image": "IMAGE", "model": "MODEL", "positive": "CONDITIONING", "negative": "CONDITIONING",
                        "image_kps": "IMAGE", "mask": "MASK"} for t in APPLY},
                 PATCH: {"instantid": INSTANTID_MODEL, "insightface": FACEANALYSIS, "image": "IMAGE", "model": "MODEL",
                         "mask": "MASK"}},
    relevant_types={INSTANTID_MODEL},
)
