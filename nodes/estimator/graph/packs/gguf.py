"""city96/ComfyUI-GGUF: GGUF diffusion models and text encoders (quantized weights, dequantized per layer)."""
from __future__ import annotations

from . import Pack

PACK = Pack(
    name="ComfyUI-GGUF",
    diffusion_loaders={"UnetLoaderGGUF": ("unet_name", True), "UnetLoaderGGUFAdvanced": ("unet_name", True)},
    te_loaders={  # (file widgets, gguf, implicit clip type when the node has no `type` widget)
        "CLIPLoaderGGUF": (("clip_name",), True, None),
        "DualCLIPLoaderGGUF": (("clip_name1", "clip_name2"), True, None),
        "TripleCLIPLoaderGGUF": (("clip_name1", "clip_name2", "clip_name3"), True, "sd3"),  # the pack's default
        "QuadrupleCLIPLoaderGGUF": (("clip_name1", "clip_name2", "clip_name3", "clip_name4"), True, None),
    },
)
