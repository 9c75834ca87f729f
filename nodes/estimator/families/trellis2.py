"""TRELLIS.2 and Pixal3D (ComfyUI 0.33.0's Trellis2): one checkpoint holding four flow transformers run in a
cascade: a dense sparse-structure model on a 16^3 grid, a shape model at 512 (32^3 coords), a shape model at
1024-2048 and a texture model, the last three on sparse voxel tokens; plus the shape VAE (structure + shape
decoders) and the texture VAE. Pixal3D is the same class with projected-feature cross attention ("proj" mode).

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:123-142: `img2shape.t_embedder.mlp.0.weight` or `shape2txt.t_embedder.mlp.0.weight`
  select it ("image_model": "trellis2"); a `<sub>.blocks.0.cross_attn.proj_linear.weight` key sets that sub-model's
  image_attn_mode "proj" (Pixal3D).
- comfy/supported_models.py:1481-1504 (class Trellis2): num_heads 12 (:1486), memory_usage_factor 6 (:1492),
  bf16 / fp32, no text encoder.
- comfy/ldm/trellis2/model.py:945-989 (Trellis2 defaults): model_channels 1536, cond_channels 1024 (DINOv3-L),
  30 blocks, 12 heads (head 128), mlp_ratio 5.3334 (FFN int(1536 x 5.3334) = 8192), in_channels 32; :981-987 the
  sub-models: img2shape / shape2txt (SLatFlowModel, :358-449), img2shape_512 (resolution 32) and structure_model
  (SparseStructureFlowModel, resolution 16, 8 channels, :612-700: one token per cell of the 16^3 grid, no
  patching: 4096 tokens, :689).
- comfy_extras/nodes_trellis2.py:591-609 (EmptyTrellis2LatentStructure): zeros [B, 32, 16, 16, 16], of which the
  structure model reads the first 8 channels (model.py:1024); graph/packs/nodes_trellis2.py reads it as a
  "3d" LatentShape of 4096 tokens. The context: DINOv3-L (image_encoders/dino3_large.json: patch 16, 4 register
  tokens) at 512 px for the structure stage (nodes_trellis2.py:425-433, 744-760: global_512): 1 + 4 + 32^2 = 1029
  tokens (TEXT_TOKENS). Pixal3D's projected features are added per token (ProjectAttentionDense, model.py:246-260),
  no extra tokens.
- The sparse stages (Trellis2ShapeStage :491-527, Trellis2UpsampleStage :323-385, Trellis2TextureStage
  :554-588) make zeros [B, 32, N, 1] with N the occupied voxels the structure decode / the shape VAE's upsampling
  finds at run time (:493, :340-367, :559): not known from the graph, so those samplings are not priced.
- The VAEs (comfy/sd.py:579-588): ShapeVae and TextureVae, each with ComfyUI's own estimate memory_used_decode =
  2500 x prod(shape[2:]) x dtype bytes (:581, :586): VAE_FORMULAS prices it where the latent's shape is known (the
  structure decode: VaeDecodeStructureTrellis2 decodes [B, 8, 16, 16, 16], nodes_trellis2.py:264-266).

Working memory: the structure stage traced with ComfyUI 0.33.0's own model code at full size (data/working_memory.json
"trellis2", bench/trace_working_memory.py _arches_033: model_detection.py:123-142, model_base.py:1924-1939, context
1029 DINOv3 tokens), batch 1 / 2 / 4 on the 16^3 grid (4096 tokens), fit within 0.001 %. Pixal3D's "proj" variant
traces 0.214 GiB against 0.190 at batch 1 (12 % more) and is priced with this entry (not routed: the name rules
give no arch key that tells it apart).
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, VAE, Family, Found, _r, Detector

ORDER = 166  # "trellis2" / "pixal3d" share no pattern with another family's name rules

STRUCTURE_RESOLUTION = 16  # model.py:987, nodes_trellis2.py:607
STRUCTURE_TOKENS = STRUCTURE_RESOLUTION ** 3
LATENT_CHANNELS = 32  # nodes_trellis2.py:606
VAE_BYTES_PER_TOKEN = 2500  # sd.py:581, :586 (x dtype bytes)


def dinov3_tokens(size: int) -> int:
    """DINOv3-L/16's sequence for a size x size image: CLS + 4 registers + (size / 16)^2 patches."""
    return 1 + 4 + (size // 16) ** 2


# Published files (data/template_models.json). The int8 convrot files: one byte a quantised weight (norms / biases
# unquantised), so the byte count stands for the parameter count, as families/minimax.py P_FASTH3_OMNIREF.
P_PIXAL3D = 5_583_457_485  # Comfy-Org/Pixal3D diffusion_models/pixal3d_int8_convrot.safetensors
P_TRELLIS2 = 5_250_597_519  # Comfy-Org/TRELLIS.2 diffusion_models/trellis_2_int8_convrot.safetensors
P_TRELLIS2_SHAPE_VAE = 1_095_216_660 // 2  # vae/trellis_2_shape_vae_bf16.safetensors / 2
P_TRELLIS2_TEXTURE_VAE = 948_436_992 // 2  # vae/trellis_2_texture_vae_bf16.safetensors / 2

_ARCH = dict(hidden_size=1536, depth=30, heads=12, head_dim=128, ffn_dim=8192, in_channels=LATENT_CHANNELS,
             out_channels=LATENT_CHANNELS, patch_size=(1, 1), context_dim=1024, latent_channels=LATENT_CHANNELS)

FAMILIES = {
    "trellis2": Family(DIFFUSION, "TRELLIS.2 (image to 3D)", _ARCH),
    # sd.py:579-583: ShapeVae (structure + shape decoders), working dtypes fp16 / bf16 / fp32
    "vae-trellis2-shape": Family(VAE, "TRELLIS.2 shape VAE", dict(latent_channels=LATENT_CHANNELS,
                                                                  spatial_compression=1)),
    # sd.py:584-588: TextureVae
    "vae-trellis2-texture": Family(VAE, "TRELLIS.2 texture VAE", dict(latent_channels=LATENT_CHANNELS,
                                                                      spatial_compression=1)),
}

MEMORY_USAGE_FACTOR = {"trellis2": 6}  # supported_models.py:1492

# The structure stage's context: DINOv3-L tokens of the 512 px image (nodes_trellis2.py:428, :759)
TEXT_TOKENS = {"trellis2": dinov3_tokens(512)}

NAME_RULES = {
    DIFFUSION: (
        _r(r"pixal[_-]?3d", "trellis2", "Pixal3D (TRELLIS.2)", P_PIXAL3D,
           "P_PIXAL3D (the published int8 convrot file, 5,583,457,485 bytes at one byte a weight)"),
        _r(r"trellis[_-]?\.?2", "trellis2", "TRELLIS.2 (image to 3D)", P_TRELLIS2,
           "P_TRELLIS2 (the published int8 convrot file, 5,250,597,519 bytes at one byte a weight)"),
    ),
    VAE: (
        _r(r"trellis[_-]?\.?2.*shape", "vae-trellis2-shape", "TRELLIS.2 shape VAE", P_TRELLIS2_SHAPE_VAE,
           "P_TRELLIS2_SHAPE_VAE (the published bf16 file, 1,095,216,660 bytes / 2)"),
        _r(r"trellis[_-]?\.?2.*(texture|tex)", "vae-trellis2-texture", "TRELLIS.2 texture VAE",
           P_TRELLIS2_TEXTURE_VAE, "P_TRELLIS2_TEXTURE_VAE (the published bf16 file, 948,436,992 bytes / 2)"),
    ),
}


def _detect(v) -> Found | None:
    """model_detection.py:123-142: img2shape / shape2txt t_embedder keys select Trellis2; a proj_linear key marks
    Pixal3D's projected-feature attention. The width from the timestep embedder, the depth from the blocks."""
    sub = next((s for s in ("img2shape", "shape2txt") if v.has(f"{s}.t_embedder.mlp.0.weight")), None)
    if sub is None:
        return None
    arch = dict(_ARCH)
    hidden = v.dim(f"{sub}.t_embedder.mlp.0.weight", 0, arch["hidden_size"])
    arch.update(hidden_size=hidden, depth=v.count_blocks(f"{sub}.blocks.") or arch["depth"])
    arch["heads"] = max(1, hidden // arch["head_dim"])
    pixal = any(v.has(f"{s}.blocks.0.cross_attn.proj_linear.weight")
                for s in ("img2shape", "shape2txt", "structure_model"))
    what = "Pixal3D, projected-feature attention" if pixal else "TRELLIS.2"
    return Found("trellis2", arch, (f"key {sub}.t_embedder.mlp.0.weight ({what}, model_detection.py:123-142)",),
                 variant="pixal3d" if pixal else None)


def _read_shape_vae(v) -> Found | None:
    """sd.py:579: shape_dec.blocks.1.16.to_subdiv.weight builds the Trellis2 ShapeVae."""
    return Found("vae-trellis2-shape", dict(FAMILIES["vae-trellis2-shape"].arch),
                 ("key shape_dec.blocks.1.16.to_subdiv.weight (TRELLIS.2 shape VAE, sd.py:579)",))


def _read_texture_vae(v) -> Found | None:
    """sd.py:584: txt_dec.blocks.3.4.conv2.weight builds the Trellis2 TextureVae."""
    return Found("vae-trellis2-texture", dict(FAMILIES["vae-trellis2-texture"].arch),
                 ("key txt_dec.blocks.3.4.conv2.weight (TRELLIS.2 texture VAE, sd.py:584)",))


DETECT = {
    DIFFUSION: (_detect,),
    VAE: (Detector((("shape_dec.blocks.1.16.to_subdiv.weight",),), _read_shape_vae),
          Detector((("txt_dec.blocks.3.4.conv2.weight",),), _read_texture_vae)),
}


def _vae_bytes(op: str, latent, dtype_bytes: int, tiled=None, options=None):
    """sd.py:581 / :586: 2500 x prod(shape[2:]) x dtype bytes, shape[2:] the latent's token axes (height x width
    of a "3d" LatentShape: the 16^3 grid's 4096 cells for the structure decode). One batch item's figure: the
    decode nodes run as many items at once as fit beside it (sd.py:1298-1305 prepare_decode)."""
    if latent.media != "3d" or tiled:
        return None
    tokens = int(latent.height) * int(latent.width)
    value = VAE_BYTES_PER_TOKEN * tokens * dtype_bytes
    return math.ceil(value), (f"{tokens} latent cells: ComfyUI 0.33's own estimate for the TRELLIS.2 VAEs "
                              f"({VAE_BYTES_PER_TOKEN} × cells × {dtype_bytes} bytes, sd.py:581/586 "
                              "memory_used_decode, one batch item per call as prepare_decode sizes it), not traced")


VAE_FORMULAS = {"vae-trellis2-shape": _vae_bytes, "vae-trellis2-texture": _vae_bytes}
