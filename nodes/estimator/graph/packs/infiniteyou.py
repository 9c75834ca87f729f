"""bytedance/ComfyUI_InfiniteYou (nodes.py at 1c97939): InfiniteYou's identity on Flux.

- InfuseNetLoader: the InfuseNet, a Flux ControlNet (4 double / 10 single blocks) from models/infinite_you, loaded by
  ComfyUI's own ControlNet code (infuse_net.py load_infuse_net_flux: controlnet_config), so an fp8 file stays fp8;
  InfuseNetApply sets it on the conditioning as ControlNetApply does (read by its sockets).
- IDEmbeddingModelLoader returns three objects typed MODEL that are not ComfyUI models: InsightFace antelopev2 on
  the provider its widget names, facexlib's ArcFace (IR-SE50) and the image projection (a Resampler in bf16), both
  moved to the GPU at load. ExtractIDEmbedding / ExtractFacePoseImage run them: not priced here (facexlib's ArcFace
  has no published size here, and InsightFace on a GPU provider is onnxruntime's), so they are named, never free.
"""
from __future__ import annotations

from . import Pack, loader

LOADER, ID_LOADER = "InfuseNetLoader", "IDEmbeddingModelLoader"
RUNS = "InsightFace antelopev2 (on its provider), facexlib's ArcFace IR-SE50 and InfiniteYou's image projection"


@loader
def _infusenet(a, node, slot, type_, visiting):
    if type_ != "CONTROL_NET":
        return []
    ref = a.loader_ref(node, "controlnet_name", role="controlnet", folder="infinite_you")
    return [ref] if ref else []


PACK = Pack(
    name="ComfyUI_InfiniteYou",
    refs={LOADER: _infusenet},
    handled={ID_LOADER},
    unpriced={"ExtractIDEmbedding": RUNS, "ExtractFacePoseImage": RUNS},
    widgets={LOADER: ["controlnet_name"],
             ID_LOADER: ["image_proj_model_name", "image_proj_num_tokens", "face_analysis_provider",
                         "face_analysis_det_size"],
             "ExtractFacePoseImage": ["width", "height"],
             "InfuseNetApply": ["strength", "start_percent", "end_percent"]},
    output_types={LOADER: ["CONTROL_NET"], ID_LOADER: ["MODEL", "MODEL", "MODEL"],
                  "ExtractIDEmbedding": ["CONDITIONING"], "ExtractFacePoseImage": ["IMAGE"]},
    input_types={"ExtractIDEmbedding": {"face_detector": "MODEL", "arcface_model": "MODEL",
                                        "image_proj_model": "MODEL", "image": "IMAGE"},
                 "ExtractFacePoseImage": {"face_detector": "MODEL", "image": "IMAGE", "mask": "MASK"},
                 "InfuseNetApply": {"positive": "CONDITIONING", "id_embedding": "CONDITIONING",
                                    "control_net": "CONTROL_NET", "image": "IMAGE", "negative": "CONDITIONING",
                                    "vae": "VAE", "control_mask": "MASK"}},
)
