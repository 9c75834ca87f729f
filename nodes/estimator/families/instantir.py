"""InstantIR (instantX-research/InstantIR) as smthemex/ComfyUI_InstantIR_Wrapper runs it (InstantIR_node.py, utils.py,
pipelines/sdxl_instantir.py at 1f3da90): its own diffusers pipeline on an SDXL checkpoint, counted and traced with the
pack's own code by bench/trace_instantir.py (diffusers 0.31, peft 0.13, meta device, 2026-12-06).

- The UNet as it samples: SDXL's 2,567,463,684 + the IP attention processors on 70 cross-attentions (767,104,000) +
  the DINOv2 resampler (82,695,424) + the previewer and LCM LoRAs, rank 64, unmerged (429,940,736): 3,847,203,844, in
  float16.
- The aggregator: SDXL's down and mid blocks without cross-attention (Aggregator.from_unet, remove_attn2):
  1,004,809,280, float16; its own offload hook keeps it on the GPU from its first forward to the pipeline's end.
- DINOv2-large, float16, 304,368,640 (families/hunyuan3d.py's count), at 224 px.
- Working memory, traced at the CFG batch of 2: one step's aggregator (its input and the preview latent side by side)
  then the UNet with the aggregator's residuals: 639,666,432 bytes at 1024 x 1024 (159,942,912 at 512², 359,827,712 at
  768²: linear in the pixels), above the previewer's own pass (414,723,328). The VAE in float32 (force_upcast), untiled,
  one image: encode 2,696,937,472 and decode 3,221,750,016 bytes at 1024 x 1024.
"""
from __future__ import annotations

ORDER = 185  # no name rules: the pack's loader names an SDXL checkpoint, priced as one

P_UNET_SAMPLED = 3_847_203_844
P_AGGREGATOR = 1_004_809_280
P_DINOV2_L = 304_368_640
P_SDXL_UNET = 2_567_463_684
P_SDXL_VAE = 83_653_863
TRACED_PIXELS = 1024 * 1024
STEP_BYTES = 639_666_432  # aggregator, then the UNet with its residuals (batch 2)
VAE_ENCODE_FP32, VAE_DECODE_FP32 = 2_696_937_472, 3_221_750_016
TRACE_SOURCE = "traced with bench/trace_instantir.py on 2026-12-06 (the pack's own code, meta device, 1024 x 1024)"
