"""Second sampling passes on parts of an image: ltdrdata/ComfyUI-Impact-Pack detailers and
ssitu/ComfyUI_UltimateSDUpscale.

Both encode a crop or tile with the VAE, sample it with the model and decode it, one crop / tile
at a time, so their memory is that of a small image, whatever the full image's size:
- Impact detailers (FaceDetailer, DetailerForEach...): each detected crop is scaled so its longer
  side is ``guide_size`` (at most ``max_size``) px; the estimate takes a max_size square (upper
  bound) unless the crop sizes are known (they are not before running).
- UltimateSDUpscale: ``tile_width`` × ``tile_height`` tiles plus ``tile_padding`` on each side.
"""
from __future__ import annotations

from ...workload import SAMPLE, VAE_DECODE, VAE_ENCODE, LatentShape
from ..base import _replace
from . import Pack

DETAILERS = {"FaceDetailer", "DetailerForEach", "DetailerForEachDebug", "FaceDetailerPipe", "DetailerForEachPipe",
             "DetailerForEachDebugPipe", "DetailerForEachPipeForAnimateDiff", "MaskDetailerPipe"}
USDU = {"UltimateSDUpscale", "UltimateSDUpscaleNoUpscale", "UltimateSDUpscaleCustomSample"}
_DETAILER_WIDGETS = ["guide_size", "guide_size_for", "max_size", "seed", "steps", "cfg", "sampler_name", "scheduler",
                     "denoise"]
WIDGETS = {**{t: _DETAILER_WIDGETS for t in DETAILERS},
           "UltimateSDUpscale": ["upscale_by", "seed", "steps", "cfg", "sampler_name", "scheduler", "denoise",
                                 "mode_type", "tile_width", "tile_height", "mask_blur", "tile_padding"],
           "UltimateSDUpscaleNoUpscale": ["seed", "steps", "cfg", "sampler_name", "scheduler", "denoise",
                                          "mode_type", "tile_width", "tile_height", "mask_blur", "tile_padding"]}


def _square(node, side: int) -> LatentShape:
    return LatentShape(batch=1, channels=None, height=side // 8, width=side // 8, pixel_height=side, pixel_width=side,
                       source_node=node.id, source_type=node.type)


PIPE_INPUTS = ("detailer_pipe", "basic_pipe")
PIPE_NODES = {"FromDetailerPipe", "ToDetailerPipe", "FromDetailerPipe_v2", "ToBasicPipe", "FromBasicPipe",
              "FromBasicPipe_v2", "EditDetailerPipe", "EditBasicPipe", "BasicPipeToDetailerPipe",
              "BasicPipeToDetailerPipeSDXL", "DetailerPipeToBasicPipe", "EditDetailerPipeSDXL", "ToDetailerPipeSDXL",
              "FromDetailerPipeSDXL"}


def _through_pipes(a, node, socket: str):
    """The link feeding ``socket`` (model / vae): the node's own input, else the one that made the pipe it
    takes, following Impact's pipe converters and editors (an Edit* node's linked input replaces the pipe's)."""
    seen = {node.id}
    current, upstream = node, None
    for _ in range(64):
        link = a.link(current, socket)
        if link is not None:
            return link
        before = upstream
        upstream = next((a.link(current, name) for name in PIPE_INPUTS if a.link(current, name) is not None), None)
        if upstream is None and before is not None and current.type not in PIPE_NODES:
            # the pipe starts at a node that takes no pipe and has no such socket (a workflow component,
            # "## make-basic_pipe [2c8c61]"): its pipe link, which the analyzer reads as a loader when no pack knows
            # the node and it names a checkpoint (_unknown_loader)
            return before
        current = a.nodes.get(upstream.node) if upstream is not None else None
        if current is None or current.id in seen:
            return None
        seen.add(current.id)
    return None


_SOCKET = {"MODEL": "model", "CLIP": "clip", "VAE": "vae"}


def _pipe_refs(a, node, slot, type_, visiting):
    """From*Pipe outputs (MODEL, CLIP, VAE): the models that went into the pipe."""
    name = _SOCKET.get(type_)
    return a.refs(_through_pipes(a, node, name), type_, visiting) if name else []


def _three_stages(a, node, shape: LatentShape, what: str):
    """VAE encode, sample, VAE decode of one crop / tile (the node's own model, VAE and settings, or those of
    the pipe it takes)."""
    model_link = _through_pipes(a, node, "model")
    cfg = a.number(node, "cfg", integer=False)
    sample = a.sample_stage(node, model_links=[model_link] if model_link else [], cfg=cfg,
                            uses_negative=cfg is not None and cfg > 1, steps=a.number(node, "steps"), latent=shape)
    vae = a.refs(_through_pipes(a, node, "vae"), "VAE")
    a.stage_note(f"{what}: one at a time, {shape.pixel_width}×{shape.pixel_height} px each")
    encode = _replace(sample, kind=VAE_ENCODE, models=tuple(vae), cfg=None, steps=None)
    decode = _replace(sample, kind=VAE_DECODE, models=tuple(vae), cfg=None, steps=None)
    return [encode, sample, decode]


def _detailer(a, node):
    side = a.number(node, "max_size", 1024) or 1024
    side = max(64, min(side, 16384)) // 8 * 8
    a.stage_note(f"crop size unknown before running: a {side}-px square (max_size) assumed, an upper bound")
    if a.link(node, "sam_model_opt") is not None:  # SAM (ViT-B / L / H) refines each crop's mask on the GPU
        a.unpriced("the SAM model (sam_model_opt) that refines each crop's mask is not priced")
    return _three_stages(a, node, _square(node, side), "detected crops re-sampled")


def _usdu(a, node):
    w = a.number(node, "tile_width", 512) or 512
    h = a.number(node, "tile_height", 512) or 512
    pad = a.number(node, "tile_padding", 32) or 0
    w, h = min(w + 2 * pad, 16384) // 8 * 8, min(h + 2 * pad, 16384) // 8 * 8
    shape = LatentShape(batch=1, channels=None, height=h // 8, width=w // 8, pixel_height=h, pixel_width=w,
                        source_node=node.id, source_type=node.type)
    return _three_stages(a, node, shape, "tiles re-sampled")


PACK = Pack(
    name="Impact-Pack + UltimateSDUpscale",
    stage_kinds={t: SAMPLE for t in DETAILERS | USDU},
    stages={**{t: _detailer for t in DETAILERS}, **{t: _usdu for t in USDU}},
    widgets=WIDGETS,
    relevant_types={"DETAILER_PIPE", "BASIC_PIPE"},
    refs={t: _pipe_refs for t in PIPE_NODES},
    text_encoders_no_stage=set(PIPE_NODES),  # they take a CLIP and compute nothing
    handled=PIPE_NODES | {"UltralyticsDetectorProvider", "SAMLoader", "BboxDetectorSEGS", "SegmDetectorSEGS",
                          "ImpactSimpleDetectorSEGS"},
)
