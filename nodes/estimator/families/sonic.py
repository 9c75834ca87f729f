"""Sonic (jixiaozhong/Sonic) as smthemex/ComfyUI_Sonic runs it (sonic_node.py, sonic.py at 8556234), counted with the
pack's own classes on the meta device (bench/count_sonic.py, diffusers 0.31, transformers 4.46, 2026-12-06):

- the UNet: SVD's UNetSpatioTemporalConditionModel (svd_repo/unet: 1,524,623,082) with 32-token audio IP-adapters
  on its cross-attention (add_ip_adapters: 51,118,080): 1,575,741,162, built on the GPU in the loader's dtype and
  filled from ComfyUI's SVD MODEL and the pack's unet.pth; its activations are SVD's (the traced SVD profile);
- audio2token (AudioProjModel, 54,300,672), audio2bucket (Audio2bucketModel, 21,762,050) and whisper-tiny's whole
  WhisperModel (37,760,640), float32 on the GPU for SONIC_PreData;
- the face detector yoloface_v5m.pt (TorchScript, float32): YOLOv5m-face, 21.063M parameters (deepcam-cn/yolov5-face
  README, Pretrained-Models table), by its name;
- RIFE's IFNet (3,038,015, float32), on the GPU from the loader on.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r
from .stable_diffusion import FAMILIES as _SD

ORDER = 185

P_SONIC_UNET = 1_575_741_162
P_AUDIO2TOKEN, P_AUDIO2BUCKET, P_WHISPER_TINY = 54_300_672, 21_762_050, 37_760_640
P_YOLOV5M_FACE = 21_063_000
P_RIFE_IFNET = 3_038_015

FAMILY = "sonic-unet"
# SVD's layout (its working memory is SVD's traced profile: WORKING_MEMORY_ALIAS); fixed_precision: the loader's
# dtype widget offers no fp8, so no lower-precision remedy applies
# no hidden_size / depth: a UNet's step is timed as 2 x parameters x latent tokens (machine/runtime.forward_flops)
FAMILIES = {FAMILY: Family(DIFFUSION, "Sonic UNet (SVD + audio adapters)",
                           dict({k: v for k, v in _SD["svd"].arch.items() if k not in ("hidden_size", "depth")},
                                fixed_precision=True))}
WORKING_MEMORY_ALIAS = {FAMILY: "svd"}
TEXT_TOKENS = {FAMILY: 1}

NAME_RULES = {
    DIFFUSION: (
        # the loader's file from models/sonic (the loader's hint reads as that sub-folder): priced as SVD's UNet
        # family (its layout, the traced SVD activations) at the count with the audio adapters
        _r(r"(?:^|/)sonic/.*unet", FAMILY, "Sonic UNet (SVD + audio adapters)", P_SONIC_UNET,
           "ComfyUI_Sonic's UNet with its audio adapters counted on the meta device (families/sonic.py)"),
    ),
}
