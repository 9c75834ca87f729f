"""ComfyUI 0.33.0 comfy_extras/nodes_triposplat.py: TripoSplat's nodes (families/triposplat.py).

- TripoSplatPreprocessImage (:62-89): crops each image around its mask onto a size x size square, size snapped
  down to a multiple of 16 (:83); the IMAGE it returns is that square.
- TripoSplatConditioning (:92-137): DINOv3 encodes the image (clip_vision, on the GPU, :116-123), the Flux.2 VAE
  encodes it whole (:126, a VAE encode at the image's size), and the LATENT it returns is the fixed noise target
  zeros [B, 8192, 16] + a [B, 1, 5] camera token (:132-137), B the image batch: read as a "3d" LatentShape of
  8192 tokens (height 1, width 8192), as Hunyuan3D's [B, 64, N].
- VAEDecodeTripoSplat (:140-182): the octree gaussian decoder turns the latent into `num_gaussians` gaussians,
  reserving ComfyUI's own estimate first (:173-177, families/triposplat.py VAE_FORMULAS): a decode stage carrying
  num_gaussians.
- TripoSplatSamplingPreview (:185-255): MODEL -> MODEL (a sampling wrapper), read generically, with a note: its
  per-step preview loads the decoder during sampling (:216-218, :235-237), not counted in the sampling stage.
"""
from __future__ import annotations

from ...families.triposplat import LATENT_CHANNELS, Q_TOKEN_LENGTH, snap_gaussians
from ...workload import VAE_ENCODE, LatentShape, Stage
from ..base import _ImageSize, _replace
from . import Pack


def _preprocessed(a, node, link, depth):
    """TripoSplatPreprocessImage (:82-89): a size x size square per image, size = max(16, size // 16 * 16)."""
    size = a.number(node, "size", 1024)
    if size is None:
        return None
    size = max(16, (int(size) // 16) * 16)
    src = a.image_size(a.link(node, "image"), depth + 1)
    return _ImageSize(width=size, height=size, batch=(src.batch if src else 1) or 1)


def _conditioning_latent(a, node, slot, depth):
    """TripoSplatConditioning's LATENT (slot 2, :132-137): [B, 8192, 16] (+ the camera token), B the image batch."""
    if slot != 2:
        return None
    size = a.image_size(a.link(node, "image"), depth + 1)
    batch = (size.batch if size else 1) or 1
    return LatentShape(batch=batch, channels=LATENT_CHANNELS, height=1, width=Q_TOKEN_LENGTH, pixel_height=1,
                       pixel_width=Q_TOKEN_LENGTH, spatial_compression=1, media="3d", source_node=node.id,
                       source_type=node.type)


def _conditioning(a, node):
    """TripoSplatConditioning: the DINOv3 encode of the image (:116-123) and the Flux.2 VAE encode of it (:126)."""
    stages = []
    vision = a.clip_vision_stage(node)
    if vision.models:
        stages.append(vision)
    vae = a.linked_inputs_of_type(node, "VAE")
    if vae:
        shape = a.encoded_shape(node, "image", vae[0][0])
        if shape is None:
            a.stage_note("latent shape unknown (the image size is not fixed by the graph)")
        else:
            a.stage_note("VAE-encodes its image inside this node (nodes_triposplat.py:126)")
        stages.append(Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type,
                            models=tuple(a.refs(vae[0][1], "VAE")), latent=shape))
    return stages


def _preview_refs(a, node, slot, type_, visiting):
    """TripoSplatSamplingPreview: MODEL -> MODEL, read generically; said: its per-step preview loads the decoder
    beside the diffusion model and reserves memory for it (:216-218, :235-237), which the sampling stage does not
    count."""
    n = a.number(node, "num_gaussians", 16384) or 16384
    a.note(f"{a.label(node)}: each sampling step also decodes a {n:,}-gaussian preview: ComfyUI loads the TripoSplat "
           f"decoder beside the diffusion model and reserves (8192 × 4 + {n} / 32 × 10) × 1024 × dtype bytes for it "
           "(nodes_triposplat.py:216-218, 235-237); not counted in the sampling stage")
    return None


def _decode(a, node):
    """VAEDecodeTripoSplat: a decode of the sampled latent into num_gaussians gaussians (:163-182)."""
    stage = a.decode_stage(node)
    n = a.number(node, "num_gaussians", 262144) or 262144
    return _replace(stage, decode_options={"num_gaussians": snap_gaussians(n)})


PACK = Pack(
    name="comfy_extras.nodes_triposplat",
    vae_decoders={"VAEDecodeTripoSplat"},
    stage_kinds={"TripoSplatConditioning": VAE_ENCODE},
    internal_encoders={"TripoSplatConditioning": ("image",)},
    handled={"TripoSplatPreprocessImage"},
    images={"TripoSplatPreprocessImage": _preprocessed},
    latents={"TripoSplatConditioning": _conditioning_latent},
    refs={"TripoSplatSamplingPreview": _preview_refs},
    stages={"TripoSplatConditioning": _conditioning, "VAEDecodeTripoSplat": _decode},
)

