"""MiDaS DPT-Hybrid as comfyui_controlnet_aux runs it (src/custom_controlnet_aux/midas/transformers.py at e8b689a):
``MidasDetector.from_pretrained()`` with no arguments loads transformers' DPTForDepthEstimation from the Hugging Face
repository Intel/dpt-hybrid-midas (the default filename "dpt_hybrid-midas-501f0c75.pt" maps to it), then
``.to(model_management.get_torch_device())``: outside ComfyUI's model management and its model folders.

- Weights: float32 (the published checkpoint's dtype). The architecture is transformers' conversion script's
  (models/dpt/convert_dpt_hybrid_to_pytorch.py get_dpt_config for a "midas" checkpoint: a BiT-ResNet stem and a
  12-block ViT of 768, reassemble factors 1/1/1/0.5, neck 256/512/768/768): 122,377,985 parameters, no buffers,
  489,511,940 bytes (the published model.safetensors, 490 MB). Counted by bench/trace_vision.py ``midas@WxH``.
- Working memory: DPTImageProcessor resizes every image to 384 x 384 (its default size, keep_aspect_ratio False),
  so the network's peak is a CONSTANT: 185,247,744 bytes, TRACED with transformers' own model code (5.25.0, on
  ComfyUI 0.33.0's interpreter; full size, float32, fake CUDA tensors, 2026-12-06) at the head's upsampling. After
  it the predicted depth is resized (bicubic) to the detect map's W x H and cloned: 8 bytes a pixel of that map
  (the ``midas@WxH`` traces at 512², 1024² and 2048² keep the network's peak: the map stays below it up to
  about 23 million pixels).
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 185  # "dpt_hybrid" / "dpt-hybrid-midas" share no pattern with another family's name rules

FAMILY = "midas-dpt-hybrid"
P_MIDAS_DPT_HYBRID = 122_377_985
TRACE_BYTES = 185_247_744  # the network at 384 x 384 (bench/trace_vision.py midas@512x512, the head's upsample)
DEPTH_MAP_BYTES_PER_PIXEL = 8  # the bicubic output and its clone, float32, at the detect map's size
HF_REPO = "Intel/dpt-hybrid-midas"
TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-06: transformers' DPTForDepthEstimation at "
                "Intel/dpt-hybrid-midas's configuration, full size, float32, fake CUDA tensors, on the 384×384 "
                "image DPTImageProcessor makes of every input")

FAMILIES = {  # no hidden_size on purpose: the DiT formula must never price it (the trace does)
    FAMILY: Family(DIFFUSION, "MiDaS DPT-Hybrid", dict(fixed_precision=True)),
}

NAME_RULES = {
    DIFFUSION: (
        _r(r"dpt[_-]hybrid", FAMILY, "MiDaS DPT-Hybrid", P_MIDAS_DPT_HYBRID,
           "transformers' conversion of DPT-Hybrid MiDaS: 489,511,940 bytes at float32 (families/midas.py)"),
    ),
}


def working_bytes(map_width: int, map_height: int) -> int:
    """The stage's peak above the weights for a detect map of map_width x map_height: the traced network, or the
    resized depth map and its copy when they are larger."""
    return max(TRACE_BYTES, DEPTH_MAP_BYTES_PER_PIXEL * map_width * map_height)
