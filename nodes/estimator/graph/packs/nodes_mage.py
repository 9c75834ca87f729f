"""ComfyUI 0.33.0 comfy_extras/nodes_mage.py: TextEncodeMageFlowEdit, Mage-Flow's text encoder node
(families/mage_flow.py), for text-to-image and edit alike.

What it does (nodes_mage.py:44-91):
- its LATENT output (slot 2) is zeros [batch_size, 128, height // 16, width // 16]; width / height 0 take the first
  reference image's size (1024 x 1024 without images), each floored to a multiple of 16 (:50-60, :90);
- with a VAE, every reference image is resized to that output size and VAE-encoded (:62-75), and the latents join
  both conditionings' reference_latents (:86-88): the model attends over them next to the image's own tokens;
- the prompt is encoded with the images (long edge capped at 384 px) by Qwen3-VL (:83-84).
"""
from __future__ import annotations

from ...workload import TEXT_ENCODE, LatentShape
from . import Pack

NODE = "TextEncodeMageFlowEdit"
IMAGES = tuple(f"images.image_{i}" for i in range(1, 17))  # io.Autogrow names (nodes_mage.py:27-31)
CHANNELS, SPATIAL = 128, 16  # nodes_mage.py:90 (the Mage-VAE / Flux.2 latent)


def _image_links(a, node) -> list:
    return [link for link in (a.link(node, name) for name in IMAGES) if link is not None]


def _output_size(a, node, depth: int) -> tuple[int, int] | None:
    """(width, height) of the node's latent, in pixels, as nodes_mage.py:50-60 computes it (None: unknown)."""
    width, height = a.number(node, "width", 0), a.number(node, "height", 0)
    if width is None or height is None:
        return None
    if width == 0 or height == 0:
        images = _image_links(a, node)
        if images:
            size = a.image_size(images[0], depth + 1)
            if size is None or not size.width or not size.height:
                return None
            ref_w, ref_h = size.width, size.height
        else:
            ref_w = ref_h = 1024
        width, height = width or ref_w, height or ref_h
    return max(16, width // 16 * 16), max(16, height // 16 * 16)


def _latent(a, node, slot, depth):
    if slot != 2:
        return None
    size = _output_size(a, node, depth)
    if size is None:
        return None
    width, height = size
    batch = a.number(node, "batch_size", 1) or 1
    return LatentShape(batch=batch, channels=CHANNELS, height=height // SPATIAL, width=width // SPATIAL,
                       pixel_height=height, pixel_width=width, spatial_compression=SPATIAL,
                       source_node=node.id, source_type=node.type)


def _references(a, node) -> list[tuple[int, int]]:
    """One reference latent at the output size per image, when a VAE is given (nodes_mage.py:62-75)."""
    if a.link(node, "vae") is None:
        return []
    images = _image_links(a, node)
    size = _output_size(a, node, 0) if images else None
    if size is None:
        return []
    width, height = size
    return [(height // SPATIAL, width // SPATIAL)] * len(images)


def _stages(a, node):
    """The prompt's text encode, then (with a VAE and images) the reference images' VAE encode."""
    stages = [a.text_stage(node)]
    if a.link(node, "vae") is not None and _image_links(a, node):
        stages.append(a.encode_stage(node))
    return stages


PACK = Pack(
    name="nodes_mage",
    stage_kinds={NODE: TEXT_ENCODE},
    stages={NODE: _stages},
    internal_encoders={NODE: IMAGES},
    latents={NODE: _latent},
    cond_references={NODE: _references},
)
