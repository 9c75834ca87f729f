"""ComfyUI 0.33's JoyImage node (comfy_extras/nodes_joyimage.py): TextEncodeJoyImageEdit. Line references are
ComfyUI 0.33.0.

Each reference image (1 to 6, one image each) is resized and centre-cropped to the 1024-class bucket nearest its
aspect ratio (:8-35 BUCKETS_1024, :38-49); the prompt is encoded by Qwen3-VL 8B with those images (:52-53), then
each is VAE-encoded (:54-55) and put on the conditioning as a reference latent (:56-58), which the JoyImage model
patchifies next to the image tokens (comfy/ldm/joyimage/model.py:395-404). Read here as: the text-encode stage
(the images counted as image tokens), one VAE-encode stage per reference, and the reference latents for the
sampler (cond_references)."""
from __future__ import annotations

from ...workload import Stage
from ..base import autogrow_images
from . import Pack, reference_encodes

WAN21_VAE = (16, 8)  # JoyImage's Wan 2.1 VAE (supported_models.py:2014 JoyImage: latent_formats.Wan21): 16 ch, /8

# nodes_joyimage.py:8-35 BUCKETS_1024, (height, width)
BUCKETS_1024 = (
    (512, 1792), (512, 1856), (512, 1920), (512, 1984), (512, 2048),
    (576, 1600), (576, 1664), (576, 1728), (576, 1792),
    (640, 1472), (640, 1536), (640, 1600),
    (704, 1344), (704, 1408), (704, 1472),
    (768, 1216), (768, 1280), (768, 1344),
    (832, 1152), (832, 1216),
    (896, 1088), (896, 1152),
    (960, 1024), (960, 1088),
    (1024, 960), (1024, 1024),
    (1088, 896), (1088, 960),
    (1152, 832), (1152, 896),
    (1216, 768), (1216, 832),
    (1280, 768),
    (1344, 704), (1344, 768),
    (1408, 704),
    (1472, 640), (1472, 704),
    (1536, 640),
    (1600, 576), (1600, 640),
    (1664, 576),
    (1728, 576),
    (1792, 512), (1792, 576),
    (1856, 512),
    (1920, 512),
    (1984, 512),
    (2048, 512),
)


def best_bucket(height: int, width: int) -> tuple[int, int]:
    """nodes_joyimage.py:38-40 _find_best_bucket: the (height, width) bucket nearest the aspect ratio (first on ties)."""
    target = height / width
    return min(BUCKETS_1024, key=lambda hw: abs(hw[0] / hw[1] - target))


def _sizes(a, node) -> list[tuple[int, int]]:
    """(width, height) px of each reference after the bucket resize (:43-49)."""
    out = []
    for name, size in autogrow_images(a, node):
        if size is None or not size.width or not size.height:
            a.stage_note(f"TextEncodeJoyImageEdit {name.split('.')[-1]}: its size is not fixed by the graph; it is "
                         "not counted")
            continue
        h, w = best_bucket(size.height, size.width)
        out.append((w, h))
    return out


def _geometry(a, node) -> tuple[int, int]:
    geometry, _name = a.vae_geometry(a.link(node, "vae"))
    return (geometry[0] or WAN21_VAE[0], geometry[1] or WAN21_VAE[1]) if geometry else WAN21_VAE


def _references(a, node) -> list[tuple[int, int]]:
    if a.link(node, "vae") is None:  # the VAE is optional (:66); without it no reference latent
        return []
    _channels, spatial = _geometry(a, node)
    return [(h // spatial, w // spatial) for w, h in _sizes(a, node)]


def _stages(a, node) -> list[Stage]:
    sizes = _sizes(a, node)
    vae = a.refs(a.link(node, "vae"), "VAE") if a.link(node, "vae") is not None else []
    channels, spatial = _geometry(a, node) if vae and sizes else WAN21_VAE
    stages = reference_encodes(a, node, sizes, channels, spatial, sizes)
    if len(stages) > 1:
        a.stage_note(f"VAE-encodes {len(sizes)} reference image(s) at their 1024-class bucket size "
                     "(nodes_joyimage.py:43-55); Qwen3-VL reads them at that size too")
    return stages[-1:] + stages[:-1]  # the text encode, then the reference encodes


PACK = Pack(
    name="nodes_joyimage",
    internal_encoders={"TextEncodeJoyImageEdit": ()},
    stages={"TextEncodeJoyImageEdit": _stages},
    cond_references={"TextEncodeJoyImageEdit": _references},
)
