"""vuongminh1907/ComfyUI_ZenID (ZenID.py at 21b90a9): InstantID's face identity for face swap and face combining.

- ZenInstantIDModelLoader / ZenInstantIDFaceAnalysis: InstantID's IP-Adapter from models/instantid and InsightFace
  antelopev2 on its provider, as ComfyUI_InstantID's loaders (graph/packs/instantid.py).
- ApplyZenID: loads the ``instantid_file`` and InsightFace on the ``insightface`` provider itself, encodes its own
  fixed prompts with the CLIP it is given (encode_prompt), VAE-encodes the source image twice at its size cropped
  to multiples of 8 (prepare_condition_inpainting: the masked copy for the conditioning, the original as the LATENT
  it returns), moves the IP-Adapter to the GPU in the UNet's dtype and patches the model's cross-attention (it rides
  on the MODEL, role "instantid", as ComfyUI_InstantID's), and sets the ControlNet it is given on the conditioning.
- ZenIDCombineFace: the same patch and ControlNet on the model and prompts it is given, from two face images.

The ControlNet these nodes take is InstantID's (downloadmodel.py fetches InstantX/InstantID's
ControlNetModel/diffusion_pytorch_model.safetensors into models/controlnet): its loader's file is read with that
family hint (Pack.controlnet_hints). InsightFace: nothing on the CPU provider, named as not priced on a GPU one.
"""
from __future__ import annotations

from ...workload import TEXT_ENCODE
from . import Pack, encode_and_prompts, image_sd_latent, loader, model_file_loader
from .pulid_flux import FACEANALYSIS, _insightface_loader, insightface_refs

INSTANTID_MODEL = "INSTANTID"
APPLY, COMBINE = "ApplyZenID", "ZenIDCombineFace"
MODEL_LOADER, FACE_LOADER = "ZenInstantIDModelLoader", "ZenInstantIDFaceAnalysis"


def _held(a, node, slot, type_, visiting):
    """MODEL: the model it is given, with the InstantID IP-Adapter the node loads itself and keeps on the GPU, and
    InsightFace when its provider is a GPU one (not priced, said)."""
    if type_ != "MODEL":
        return []
    refs = list(a.refs(a.link(node, "model"), "MODEL", visiting))
    ref = a.loader_ref(node, "instantid_file", role="instantid", folder="instantid")
    if ref is not None and ref not in refs:
        refs.append(ref)
    return refs + insightface_refs(node, a.value(node, "insightface"))


def _latent(a, node, slot, depth):
    """The LATENT output: the source image VAE-encoded (prepare_condition_inpainting)."""
    return image_sd_latent(a, node, "image_source", depth) if slot == 3 else None


def _apply_stages(a, node):
    """Its own work: the source image VAE-encoded (twice, one after the other: priced once) and its fixed prompts
    through the CLIP it is given."""
    return encode_and_prompts(a, node, "image_source", min_tokens=77)


PACK = Pack(
    name="ComfyUI_ZenID",
    refs={MODEL_LOADER: loader(model_file_loader("instantid_file", "instantid", INSTANTID_MODEL, role="instantid")),
          FACE_LOADER: _insightface_loader, APPLY: _held, COMBINE: _held},
    latents={APPLY: _latent},
    internal_encoders={APPLY: ("image_source",)},
    stage_kinds={APPLY: TEXT_ENCODE},
    stages={APPLY: _apply_stages},
    controlnet_hints={APPLY: "instantid", COMBINE: "instantid"},
    widgets={MODEL_LOADER: ["instantid_file"], FACE_LOADER: ["provider"],
             APPLY: ["instantid_file", "insightface", "weight", "start_at", "end_at", "blur_kernel"],
             COMBINE: ["instantid_file", "insightface", "balance", "weight", "start_at", "end_at"]},
    output_types={MODEL_LOADER: [INSTANTID_MODEL], FACE_LOADER: [FACEANALYSIS],
                  APPLY: ["MODEL", "CONDITIONING", "CONDITIONING", "LATENT"],
                  COMBINE: ["MODEL", "CONDITIONING", "CONDITIONING"]},
    input_types={APPLY: {"control_net": "CONTROL_NET", "model": "MODEL", "clip": "CLIP", "vae": "VAE",
                         "image_source": "IMAGE", "image_face": "IMAGE", "mask": "MASK"},
                 COMBINE: {"control_net": "CONTROL_NET", "model": "MODEL", "positive": "CONDITIONING",
                           "negative": "CONDITIONING", "image_1": "IMAGE", "image_2": "IMAGE"}},
    relevant_types={INSTANTID_MODEL},
)
