"""ComfyUI 0.33.0 comfy_extras/nodes_trellis2.py: TRELLIS.2 / Pixal3D's nodes (families/trellis2.py).

- EmptyTrellis2LatentStructure (:591-609): zeros [B, 32, 16, 16, 16], the structure stage's dense latent: read as
  a "3d" LatentShape of 16^3 = 4096 tokens (height 1, width 4096), as Hunyuan3D's [B, 64, N].
- Trellis2ShapeStage (:491-527), Trellis2UpsampleStage (:323-385), Trellis2TextureStage (:554-588): their LATENT is
  zeros [B, 32, N, 1], N the occupied voxels of the structure (argwhere of the decoded voxel grid, :493) or of the
  shape VAE's 4x upsampling quantised to target_resolution / 16 (:340-367), found at run time. The graph does not
  fix N, so the latent is unknown and the sampling is left unpriced with that reason (the only bound the code
  gives is the whole grid, 32^3 / 96^3 cells at the template's settings, far above any real occupancy, and it
  would turn the "at least" of an incomplete estimate into an upper bound).
- Trellis2UpsampleStage also runs the shape VAE on the GPU (prepare_decode + upsample_shape, :325, :340-350):
  a decode stage of the shape VAE on that unknown-length latent.
- VaeDecodeStructureTrellis2 (:262-280): the shape VAE's structure decoder on [B, 8, 16, 16, 16] (:264-266):
  priced with sd.py's memory_used_decode (families/trellis2.py VAE_FORMULAS).
- VaeDecodeShapeTrellis (:116-169), VaeDecodeTextureTrellis (:192-243): decodes of the sparse latents (unknown N).
- Trellis2Conditioning (:425-434), Pixal3DConditioning (:688-761): DINOv3 (and Pixal3D's NAF upsampler) on the
  GPU: CLIP-vision stages (their weights).
"""
from __future__ import annotations

from ...families.trellis2 import LATENT_CHANNELS, STRUCTURE_TOKENS
from ...workload import CLIP_VISION_ENCODE, VAE_DECODE, LatentShape
from . import Pack

SPARSE_STAGES = {
    "Trellis2ShapeStage": "the occupied voxels of the decoded structure grid (nodes_trellis2.py:493, :509-510)",
    "Trellis2UpsampleStage": ("the voxels of the shape VAE's upsampled shape at target_resolution / 16 "
                              "(nodes_trellis2.py:340-367)"),
    "Trellis2TextureStage": "the voxels of the shape latent it is given (nodes_trellis2.py:556-565)",
}


def _structure_latent(a, node, slot, depth):
    """EmptyTrellis2LatentStructure (:605-609): zeros [B, 32, 16, 16, 16]: 4096 grid tokens."""
    batch = a.number(node, "batch_size", 1) or 1
    return LatentShape(batch=batch, channels=LATENT_CHANNELS, height=1, width=STRUCTURE_TOKENS, pixel_height=1,
                       pixel_width=STRUCTURE_TOKENS, spatial_compression=1, media="3d", source_node=node.id,
                       source_type=node.type)


def _sparse_latent(a, node, slot, depth):
    """A sparse stage's LATENT (slot 2): [B, 32, N, 1], N known only at run time."""
    if slot != 2:
        return None
    a.unpriced(f"TRELLIS.2 sparse latent of {a.label(node)}: its token count is "
               f"{SPARSE_STAGES[node.type]}, known only at run time")
    return None


def _upsample(a, node):
    """Trellis2UpsampleStage: the shape VAE upsamples the 512 shape latent on the GPU (:325-350)."""
    return a.decode_stage(node, samples=a.link(node, "shape_latent"))


PACK = Pack(
    name="comfy_extras.nodes_trellis2",
    vae_decoders={"VaeDecodeStructureTrellis2", "VaeDecodeShapeTrellis", "VaeDecodeTextureTrellis"},
    stage_kinds={"Trellis2Conditioning": CLIP_VISION_ENCODE, "Pixal3DConditioning": CLIP_VISION_ENCODE,
                 "Trellis2UpsampleStage": VAE_DECODE},
    latents={"EmptyTrellis2LatentStructure": _structure_latent, "Trellis2ShapeStage": _sparse_latent,
             "Trellis2UpsampleStage": _sparse_latent, "Trellis2TextureStage": _sparse_latent},
    stages={"Trellis2UpsampleStage": _upsample},
)
