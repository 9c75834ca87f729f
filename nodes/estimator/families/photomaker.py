"""PhotoMaker (TencentARC, models/photomaker) as ComfyUI-PhotoMaker-Plus (shiimizu, photomaker.py at 459f5c0) holds
it: one file with an ID encoder (ComfyUI's CLIPVisionModelProjection, a ViT-L/14, with PhotoMaker's fuse module; V2
adds a Q-Former perceiver for the InsightFace embedding) and LoRA weights for the SDXL UNet.

The published files are fp16 (photomaker-v1.bin is 934.1 MB, ComfyUI-Manager's model list: a fp32 ViT-L/14 alone
would be 1.2 GB), so the card holds the whole file once the encode node has moved the ID encoder to the GPU in the
text-encoder dtype (PhotoMakerEncodePlus: photomaker.to(load_device), never moved back) and the LoRA loader has put
the LoRA on the model: its size at 16 bit. The files' sizes are in data/catalogue.json.
"""
from __future__ import annotations

from ._spec import PHOTOMAKER, Family, _r

ORDER = 189  # files of models/photomaker: no other family's name rules look there

FAMILIES = {"photomaker": Family(PHOTOMAKER, "PhotoMaker ID encoder + LoRA", {})}
NAME_RULES = {PHOTOMAKER: (_r(r".", "photomaker", "PhotoMaker ID encoder + LoRA"),)}
