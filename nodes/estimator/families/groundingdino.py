"""GroundingDINO Swin-T OGC (IDEA-Research), as storyicon/comfyui_segment_anything loads it (node.py at ab63955:
load_groundingdino_model builds it from GroundingDINO_SwinT_OGC.cfg.py with its local copy of the code, loads
groundingdino_swint_ogc.pth from models/grounding-dino and moves it to the GPU in float32).

- Weights: 172,839,682 parameters and 29,836 buffers (Swin-T, BERT-base, the deformable encoder / decoder and the
  text-image fusion), float32: 691,478,072 bytes, the published 694 MB file. Counted by bench/trace_groundingdino.py.
- Working memory: TRACED by a real forward of the pack's code on the CPU (bench/trace_groundingdino.py, 2026-12-06,
  random weights: memory does not depend on their values) at 1333 x 800, the largest input its RandomResize([800],
  max_size=1333) makes: 1,373,412,314 bytes, float32. Used as the bound for any image (one image at a time: the node
  loops over the batch). The Swin-B variant (groundingdino_swinb_cogcoor.pth) is not counted here.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 186  # "groundingdino" shares no pattern with another family's name rules

FAMILY = "groundingdino-swint"
P_GROUNDINGDINO_SWINT = 172_839_682 + 29_836  # parameters and buffers, all float32
TRACE_BYTES = 1_373_412_314
TRACE_SOURCE = ("traced with bench/trace_groundingdino.py on 2026-12-06: one real forward of comfyui_segment_anything's "
                "GroundingDINO code at 1333 x 800 (the largest input it makes), float32")

FAMILIES = {FAMILY: Family(DIFFUSION, "GroundingDINO (Swin-T OGC)", dict(fixed_precision=True))}

NAME_RULES = {
    DIFFUSION: (
        _r(r"groundingdino[_-]?swint", FAMILY, "GroundingDINO (Swin-T OGC)", P_GROUNDINGDINO_SWINT,
           "GroundingDINO Swin-T OGC counted by bench/trace_groundingdino.py: 691,478,072 bytes at float32"),
    ),
}
