"""Second sampling passes on parts of an image: ltdrdata/ComfyUI-Impact-Pack detailers and
ssitu/ComfyUI_UltimateSDUpscale.

Both encode a crop or tile with the VAE, sample it with the model and decode it, one crop / tile
at a time, so their memory is that of a small image, whatever the full image's size:
- Impact detailers (FaceDetailer, DetailerForEach...): each detected crop is scaled so its longer
  side is ``guide_size`` (at most ``max_size``) px; the estimate takes a max_size square (upper
  bound) unless the crop sizes are known (they are not before running).
- UltimateSDUpscale: ``tile_width`` × ``tile_height`` tiles plus ``tile_padding`` on each side.
- SAM (SAMLoader's original Segment Anything, a detailer's ``sam_model_opt`` or SAMDetectorCombined /
  SAMDetectorSegmented): its own stage before the crops, its fp32 weights and its image encoder's traced peak on the
  1024 x 1024 padded image (families/sam1.py); on the CPU when SAMLoader's device_mode says so.
- ImpactSwitch (Impact's GeneralSwitch): its first output is ``input{select}`` (``select`` is 1-based; an input not
  given yields None), so a model, latent, image or value behind it is the selected input's; when ``select`` is
  computed by a node not read here, every input's models are counted and the first known latent / image taken.
"""
from __future__ import annotations

from ...families import sam1 as S
from ...machine.resolve import PACK_FP32
from ...physics import memory
from ...units import fmt_mib
from ...workload import SAMPLE, VAE_DECODE, VAE_ENCODE, LatentShape
from ..base import _replace, _UNKNOWN
from . import Pack, model_file_loader

DETAILERS = {"FaceDetailer", "DetailerForEach", "DetailerForEachDebug", "FaceDetailerPipe", "DetailerForEachPipe",
             "DetailerForEachDebugPipe", "DetailerForEachPipeForAnimateDiff", "MaskDetailerPipe"}
USDU = {"UltimateSDUpscale", "UltimateSDUpscaleNoUpscale", "UltimateSDUpscaleCustomSample"}
_DETAILER_WIDGETS = ["guide_size", "guide_size_for", "max_size", "seed", "steps", "cfg", "sampler_name", "scheduler",
                     "denoise"]
WIDGETS = {**{t: _DETAILER_WIDGETS for t in DETAILERS},
           "UltimateSDUpscale": ["upscale_by", "seed", "steps", "cfg", "sampler_name", "scheduler", "denoise",
                                 "mode_type", "tile_width", "tile_height", "mask_blur", "tile_padding"],
           "UltimateSDUpscaleNoUpscale": ["seed", "steps", "cfg", "sampler_name", "scheduler", "denoise",
                                          "mode_type", "tile_width", "tile_height", "mask_blur", "tile_padding"],
           "SAMLoader": ["model_name", "device_mode"]}
SAM_DETECTORS = {"SAMDetectorCombined", "SAMDetectorSegmented"}


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


_SOCKET = {"MODEL": "model", "CLIP": "clip", "VAE": "vae", "SAM_MODEL": "sam_model_opt"}


def _pipe_refs(a, node, slot, type_, visiting):
    """From*Pipe outputs (MODEL, CLIP, VAE, SAM_MODEL): the models that went into the pipe."""
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


def _sam_stage(a, node, sam_link):
    """The SAM pass (Impact's make_sam_mask on the whole image): a stage of its own, or None on the CPU."""
    refs = a.refs(sam_link, "SAM_MODEL")
    loader = a.nodes.get(refs[0].loader_node) if refs else None
    if loader is not None and str(a.value(loader, "device_mode") or "").upper() == "CPU":
        a.note(f"{a.label(node)}: SAMLoader's device_mode is CPU: the SAM runs on the CPU")
        return None
    stage = a.sample_stage(node, model_links=[sam_link], cond_links=[], cfg=None, uses_negative=False, steps=1,
                           latent=None, model_type="SAM_MODEL")
    fam, why_not = S.family_of(refs[0].name if refs else "")
    if why_not:
        a.unpriced(why_not)
        return stage
    traced, k = S.TRACE[fam], memory.calibration(fam)
    label = S.FAMILIES[fam].label
    why = (f"{S.TRACE_SOURCE.format(label=label)} (predictor.py:34-89: the long side resized to 1024, padded square), "
           f"so it does not depend on the image's size: {fmt_mib(traced)} × {k} for the allocator and untraced "
           "transients")
    a.stage_note(f"{label}: its image encoder on the whole image, ~{fmt_mib(int(traced * k))}")
    return _replace(stage, working=((f"{label} image encoder (traced)", int(traced * k), why),))


def _detailer(a, node):
    side = a.number(node, "max_size", 1024) or 1024
    side = max(64, min(side, 16384)) // 8 * 8
    a.stage_note(f"crop size unknown before running: a {side}-px square (max_size) assumed, an upper bound")
    sam_link = _through_pipes(a, node, "sam_model_opt")  # SAM (ViT-B / L / H) refines each crop's mask on the GPU
    sam = _sam_stage(a, node, sam_link) if sam_link is not None else None
    return ([sam] if sam is not None else []) + _three_stages(a, node, _square(node, side), "detected crops re-sampled")


def _sam_detector(a, node):
    link = a.link(node, "sam_model")
    return _sam_stage(a, node, link) if link is not None else None


def _usdu(a, node):
    w = a.number(node, "tile_width", 512) or 512
    h = a.number(node, "tile_height", 512) or 512
    pad = a.number(node, "tile_padding", 32) or 0
    w, h = min(w + 2 * pad, 16384) // 8 * 8, min(h + 2 * pad, 16384) // 8 * 8
    shape = LatentShape(batch=1, channels=None, height=h // 8, width=w // 8, pixel_height=h, pixel_width=w,
                        source_node=node.id, source_type=node.type)
    return _three_stages(a, node, shape, "tiles re-sampled")


# ----------------------------------------------------------------------------- ImpactSwitch
SWITCH = "ImpactSwitch"


def _switch_inputs(a, node) -> list[str]:
    """The input names ImpactSwitch passes on: input{select} when select is known, else every inputN in order."""
    select = a.value(node, "select")
    if isinstance(select, int) and not isinstance(select, bool):
        return [f"input{select}"]
    names = [k for k in node.inputs if k.startswith("input") and k[5:].isdigit()]
    return sorted(names, key=lambda k: int(k[5:]))


def _switch_refs(a, node, slot, type_, visiting):
    if slot != 0:
        return []
    names = _switch_inputs(a, node)
    if len(names) > 1:
        a.note(f"{a.label(node)}: its 'select' is not known here; the models of every input counted")
    return [ref for name in names for ref in a.refs(a.link(node, name), type_, visiting)]


def _switch_first(a, node, slot, depth, read):
    """The first input the switch passes on whose shape `read` (a.latent / a.image_size) knows."""
    if slot != 0:
        return None
    return next((s for s in (read(a.link(node, n), depth + 1) for n in _switch_inputs(a, node)) if s), None)


def _switch_latent(a, node, slot, depth):
    return _switch_first(a, node, slot, depth, a.latent)


def _switch_image(a, node, link, depth):
    return _switch_first(a, node, link.slot, depth, a.image_size)


def _switch_value(a, node, link, depth, sub):
    if link.slot == 2:  # selected_index
        select = sub("select")
        return select if isinstance(select, int) else _UNKNOWN
    names = _switch_inputs(a, node) if link.slot == 0 else []
    return sub(names[0]) if len(names) == 1 else _UNKNOWN


PACK = Pack(
    name="Impact-Pack + UltimateSDUpscale",
    stage_kinds={t: SAMPLE for t in DETAILERS | USDU | SAM_DETECTORS},
    stages={**{t: _detailer for t in DETAILERS}, **{t: _usdu for t in USDU},
            **{t: _sam_detector for t in SAM_DETECTORS}},
    widgets=WIDGETS,
    relevant_types={"DETAILER_PIPE", "BASIC_PIPE", "SAM_MODEL"},
    output_types={"SAMLoader": ["SAM_MODEL"]},
    latents={SWITCH: _switch_latent},
    images={SWITCH: _switch_image},
    values={SWITCH: _switch_value},
    refs={**{t: _pipe_refs for t in PIPE_NODES}, SWITCH: _switch_refs,
          "SAMLoader": model_file_loader("model_name", "sams", "SAM_MODEL", weight_dtype=PACK_FP32)},
    text_encoders_no_stage=set(PIPE_NODES),  # they take a CLIP and compute nothing
    handled=PIPE_NODES | {"UltralyticsDetectorProvider", "BboxDetectorSEGS", "SegmDetectorSEGS",
                          "ImpactSimpleDetectorSEGS"},
)
