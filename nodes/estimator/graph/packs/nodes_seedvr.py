"""ComfyUI 0.33.0 comfy_extras/nodes_seedvr.py: SeedVR2's nodes (families/seedvr2.py).

- SeedVR2Conditioning (:363-420): MODEL + the VAE latent -> positive / negative conditioning (the model's own text
  embedding buffers, the latent concatenated with a mask as `condition`); no latent of its own. The sampler's
  latent is the same VAE encoding (the templates wire VAEEncode(Tiled) to both).
- SeedVR2Preprocess (:136-158): pads the resized image to a multiple of 16 and video lengths to 4n+1 (IMAGE -> IMAGE).
- SeedVR2PostProcessing (:161-250): colour correction on the decoded image (IMAGE -> IMAGE).
- SeedVR2TemporalChunk (:423-514): splits a video latent into chunks of `frames_per_chunk` pixel frames
  ((frames - 1) // 4 + 1 latent frames, :502) sampled one at a time; in "auto" mode the chunk is the largest
  its VRAM law fits in the free memory at run time (:480-490), which a graph alone does not fix.
- SeedVR2TemporalMerge (:517-580): the chunks recombined into the full-length latent.
"""
from __future__ import annotations

from ..base import _replace
from . import Pack, upstream_chain

CHUNK, MERGE = "SeedVR2TemporalChunk", "SeedVR2TemporalMerge"


def _chunk_latent(a, node, slot, depth):
    if slot != 0:
        return None
    src = a.latent(a.link(node, "latent"), depth + 1)
    if src is None:
        return None
    mode = a.value(node, "chunking_mode")
    if mode != "manual":
        a.note(f"{a.label(node)}: chunking_mode '{mode}' sizes the chunk from the free VRAM at run time "
               "(nodes_seedvr.py:480-490); the chunk's latent size is not known here")
        return None
    per_chunk = a.number(node, "chunking_mode.frames_per_chunk") or a.number(node, "frames_per_chunk")
    if per_chunk is None or not src.frames:
        return None
    t_pixel = 4 * (src.frames - 1) + 1  # nodes_seedvr.py:478
    if t_pixel <= per_chunk:
        return src
    frames = (per_chunk - 1) // 4 + 1  # nodes_seedvr.py:502
    return _replace(src, frames=frames, pixel_frames=per_chunk, source_node=node.id, source_type=node.type)


def _merge_latent(a, node, slot, depth):
    """The full-length latent: the latent the upstream SeedVR2TemporalChunk split."""
    def previous(n):
        if n.type == CHUNK:
            return None
        ins = a.linked_inputs_of_type(n, "LATENT")
        return ins[0][1] if ins else None

    for n in upstream_chain(a, a.link(node, "latents"), previous):
        if n.type == CHUNK:
            return a.latent(a.link(n, "latent"), depth + 1)
    return None


PACK = Pack(
    name="nodes_seedvr",
    handled={"SeedVR2Conditioning", "SeedVR2Preprocess", "SeedVR2PostProcessing"},
    latents={CHUNK: _chunk_latent, MERGE: _merge_latent},
)
