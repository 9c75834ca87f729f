"""The original Segment Anything (facebookresearch/segment-anything at dca509f): ViT-B / L / H, as Impact Pack's
SAMLoader loads it (models/sams: sam_vit_b_01ec64.pth, sam_vit_l_0b3195.pth, sam_vit_h_4b8939.pth) for a detailer's
``sam_model_opt``.

- Weights: float32 modules (build_sam.py, the checkpoints are fp32), moved to the GPU by Impact's SAMWrapper for the
  detection (device_mode AUTO / Prefer GPU) and back to the CPU after it, outside ComfyUI's model management.
  Parameters + buffers at float32 (bench/trace_vision.py param_bytes): ViT-B 374,942,936 bytes, ViT-L 1,249,372,376,
  ViT-H 2,564,363,480: the published 375 MB / 1.25 GB / 2.56 GB files.
- Working memory: SamPredictor.set_image (predictor.py:34-89) runs the image encoder on the whole image resized to a
  long side of 1024 and padded to 1024 x 1024 (modeling/sam.py:164-175), so the peak is a CONSTANT per variant,
  whatever the image. TRACED with the repo's own code (bench/trace_vision.py ``sam1-vit_b`` / ``_l`` / ``_h``,
  2026-12-06: full size, float32, fake CUDA tensors, the uint8 input included): 2,521,825,280 / 3,356,491,776 /
  3,377,987,584 bytes, each at a global-attention block (64 x 64 tokens, relative positions added to the scores).
  The per-box mask decoder after it is small and not traced.
"""
from __future__ import annotations

import re

from ._spec import DIFFUSION, Family, _r

ORDER = 177  # "sam_vit_b" / "_l" / "_h": no other family's rules contain "sam_vit"

P_SAM1 = {"sam1-vit-b": 374_942_936 // 4, "sam1-vit-l": 1_249_372_376 // 4, "sam1-vit-h": 2_564_363_480 // 4}
P_SAM1_VIT_B, P_SAM1_VIT_L, P_SAM1_VIT_H = P_SAM1["sam1-vit-b"], P_SAM1["sam1-vit-l"], P_SAM1["sam1-vit-h"]
TRACE = {"sam1-vit-b": 2_521_825_280, "sam1-vit-l": 3_356_491_776, "sam1-vit-h": 3_377_987_584}
TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-06: segment-anything's {label} image encoder, full "
                "size, float32, fake CUDA tensors, on the 1024×1024 padded image SamPredictor.set_image encodes")

FAMILIES = {  # no hidden_size on purpose: the DiT formula must never price these (the trace does)
    f: Family(DIFFUSION, f"Segment Anything (ViT-{f[-1].upper()})", dict(fixed_precision=True))
    for f in P_SAM1
}

# sam_vit_b_01ec64.pth, sam_vit_l_0b3195.pth, sam_vit_h_4b8939.pth; not SAM-HQ (sam_hq_vit_*) or SAM 2 / 3
_PATTERN = r"(?<![a-z])sam[_-]vit[_-]?{v}(?![a-z])"
NAME_RULES = {
    DIFFUSION: tuple(
        _r(_PATTERN.format(v=f[-1]), f, FAMILIES[f].label, P_SAM1[f],
           f"segment-anything's build_sam at ViT-{f[-1].upper()}: {P_SAM1[f] * 4:,} bytes at float32 "
           "(families/sam1.py)") for f in P_SAM1),
}


def family_of(name: str) -> tuple[str | None, str]:
    """sam1-vit-b / -l / -h from a file name, or None and why the SAM is not priced."""
    n = (name or "").lower()
    for f in P_SAM1:
        if re.search(_PATTERN.format(v=f[-1]), n):
            return f, ""
    return None, f"which SAM '{name}' is (ViT-B, L or H; SAM-HQ is another model) is not known from its name"
