"""ComfyUI 0.33's Bernini node (comfy_extras/nodes_bernini.py): in-context conditioning for the Wan 2.2 A14B
Bernini-R experts. Line references are ComfyUI 0.33.0."""
from __future__ import annotations

from ..base import _Link
from . import Pack

WAN_SPATIAL, WAN_TEMPORAL = 8, 4  # Wan 2.1 VAE: /8 spatially, 4 pixel frames a latent frame


def _resize_long_edge(width: int, height: int, max_size: int, stride: int = 16) -> tuple[int, int]:
    """nodes_bernini.py:10-16 _resize_long_edge: long edge <= max_size, each side snapped to `stride`."""
    scale = min(max_size / max(height, width), 1.0)
    return max(stride, round(width * scale / stride) * stride), max(stride, round(height * scale / stride) * stride)


def _latent_frames(pixel_frames: int) -> int:
    return (max(1, pixel_frames) - 1) // WAN_TEMPORAL + 1


def _context_latents(a, node) -> list[tuple[int, int]]:
    """BerniniConditioning's context latents (nodes_bernini.py:73-96), which the Wan model patch-embeds and
    appends to the image tokens (ldm/wan/model.py:585-591, rope per stream :702-707): the source video at the
    node's width x height, trimmed to `length`; the reference video (long edge <= ref_max_size, trimmed to
    `length`); each reference image (long edge <= ref_max_size), one frame each. One entry per latent frame."""
    out: list[tuple[int, int]] = []
    latent = a.latent(_Link(node.id, 2))  # the node's own LATENT output (width x height x length)
    if latent is None:
        return out
    length = latent.pixel_frames or 1
    max_size = a.number(node, "ref_max_size", 848) or 848
    if isinstance(node.inputs.get("source_video"), _Link):
        size = a.image_size(a.link(node, "source_video"))
        frames = latent.frames or 1
        if size is not None and size.batch < length:
            frames = _latent_frames(size.batch)
        elif size is None:
            a.stage_note("Bernini source video: its frame count is not fixed by the graph; taken as the node's "
                         f"length ({length} frames, what it is trimmed to)")
        out += [(latent.height, latent.width)] * frames
    if isinstance(node.inputs.get("reference_video"), _Link):
        size = a.image_size(a.link(node, "reference_video"))
        if size is None:
            a.stage_note("Bernini reference video: its size is not fixed by the graph; its tokens are not counted")
        else:
            w, h = _resize_long_edge(size.width, size.height, max_size)
            out += [(h // WAN_SPATIAL, w // WAN_SPATIAL)] * _latent_frames(min(size.batch, length))
    for name in sorted(k for k in node.inputs if k.startswith("reference_images.")):
        if not isinstance(node.inputs.get(name), _Link):
            continue
        size = a.image_size(node.inputs[name])
        if size is None:
            a.stage_note(f"Bernini {name.split('.')[-1]}: its size is not fixed by the graph; its tokens are not "
                         "counted")
            continue
        w, h = _resize_long_edge(size.width, size.height, max_size)
        out += [(h // WAN_SPATIAL, w // WAN_SPATIAL)] * max(1, size.batch)  # one stream per image, 1 frame each
    if out:
        a.stage_note(f"BerniniConditioning: {len(out)} context latent frame(s) the model attends over next to the "
                     "video's (nodes_bernini.py:73-96)")
    return out


# BerniniConditioning.execute (nodes_bernini.py:71): zeros([batch_size, 16, ((length - 1) // 4) + 1,
# height // 8, width // 8]): Wan 2.1's latent geometry, from its width / height / length / batch_size widgets.
# It VAE-encodes the source video resized to width x height (the largest of its encodes) and the references.
PACK = Pack(
    name="nodes_bernini",
    latent_creators={"BerniniConditioning": (16, WAN_SPATIAL, WAN_TEMPORAL, None)},
    internal_encoders={"BerniniConditioning": ("source_video", "reference_video")},
    cond_references={"BerniniConditioning": _context_latents},
)
