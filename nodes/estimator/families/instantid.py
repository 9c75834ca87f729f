"""InstantID's IP-Adapter (InstantX/InstantID ip-adapter.bin, models/instantid) as cubiq/ComfyUI_InstantID builds it
(InstantID.py class InstantID at its HEAD): a perceiver Resampler (dim 1280, 4 layers, 20 heads of 64, 16 queries,
from the 512-wide ArcFace embedding to 2048) and to_k_ip / to_v_ip for SDXL's 70 cross-attention layers from 2048
(To_KV from the file's ip_adapter keys; the ten input / output / middle blocks ApplyInstantID patches). 422,765,824
parameters: the published file is fp32 (1.69 GB in ComfyUI-Manager's model list = 4 bytes each), and
ApplyInstantID moves it to the GPU in the UNet's dtype (self.instantid.to(self.device, dtype=self.dtype)): 845 MB at
16 bit, kept there while the patched model samples. Its ControlNet is an ordinary ControlNetLoader file.
"""
from __future__ import annotations

from ._spec import INSTANTID, Family, _r
from .ip_adapter import SDXL_LAYERS, ip_layers, resampler

ORDER = 187  # files of models/instantid: no other family's name rules look there

P_INSTANTID = resampler(1280, 20, 512, 2048, queries=16, depth=4) + ip_layers(2048, SDXL_LAYERS)

FAMILIES = {"instantid": Family(INSTANTID, "InstantID IP-Adapter (SDXL)", {})}
NAME_RULES = {  # the folder names the kind; every file there is the InstantID adapter
    INSTANTID: (_r(r".", "instantid", "InstantID IP-Adapter (SDXL)", P_INSTANTID,
                   "families/instantid.py P_INSTANTID (computed from the pack's layout)"),),
}
