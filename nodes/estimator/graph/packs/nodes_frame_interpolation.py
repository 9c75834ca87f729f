"""ComfyUI 0.33.0 comfy_extras/nodes_frame_interpolation.py: FILM / RIFE frame interpolation
(families/frame_interpolation.py).

- FrameInterpolationModelLoader (:16-71): a file from models/frame_interpolation -> INTERP_MODEL (FILMNet or IFNet,
  fp16 where the GPU does fp16, :38-39).
- FrameInterpolate (:74-187): INTERP_MODEL + IMAGE frames + multiplier -> IMAGE. ``load_models_gpu`` with
  ComfyUI's own memory_used_forward request (:104-105), then pair after pair on the GPU with a feature cache; the
  result, (frames - 1) x multiplier + 1 frames, is a float32 tensor on the CPU (:126-127), kept in the cache like a
  decode's frames. Working memory TRACED (families/frame_interpolation.py): per pixel of one frame, independent of
  the frame count. The frames' size comes from the graph; a loaded video's size is known only at run time: not
  estimated, with the per-pixel cost said.
"""
from __future__ import annotations

from ...physics import memory
from ...families import frame_interpolation as F
from ...units import fmt_gib, fmt_mib
from ...workload import SAMPLE
from ..base import _replace, from_video
from . import Pack, model_file_loader

LOADER, INTERPOLATE = "FrameInterpolationModelLoader", "FrameInterpolate"
MODEL_TYPE = "INTERP_MODEL"


def _interpolate(a, node):
    model, images = a.link(node, "interp_model"), a.link(node, "images")
    if model is None or images is None:
        return None
    refs = a.refs(model, MODEL_TYPE)
    fam, why_not = F.family_of(refs[0].name if refs else "")
    mult = a.number(node, "multiplier", 2)
    mult = 2 if mult is None else max(2, int(mult))
    size = a.image_size(images)
    stage = a.sample_stage(node, model_links=[model], cond_links=[], cfg=None, uses_negative=False, steps=1,
                           latent=None, model_type=MODEL_TYPE)
    if fam is not None and (size is None or not (size.width and size.height)):
        per_px = F.peak(fam, 1920, 1080, mult) / (1920 * 1080)
        why_not = (f"the frames' size is known only at run time (a loaded video): {F.FAMILIES[fam].label} needs "
                   f"about {per_px:,.0f} bytes a frame pixel at multiplier {mult} (traced, "
                   f"families/frame_interpolation.py): {fmt_gib(F.peak(fam, 1920, 1080, mult))} at 1920×1080")
    if why_not:
        a.unpriced(why_not)
        return stage
    w, h = size.width, size.height
    traced = F.peak(fam, w, h, mult)
    k = memory.calibration(fam)
    source = F.TRACE_SOURCE.format(model="FILMNet" if fam == "film" else "IFNet")
    said = f"frames of {w}×{h}" + ("" if size.exact else " (assumed)")
    how = ("all multiplier - 1 timesteps from one flow (forward_multi_timestep, :150-158)" if fam == "film" else
           f"one batched forward of {mult - 1} timestep(s) on frames padded to {F.RIFE_PAD} (:162-176; halved on OOM "
           f"down to 1: {fmt_mib(int(F.peak(fam, w, h, mult, 1) * k))})")
    why = (f"{source}: {said}, multiplier {mult}, {how}: {fmt_mib(traced)} × {k} for the allocator and untraced "
           f"transients; ComfyUI itself frees memory_used_forward = {fmt_mib(F.comfy_request(fam, w, h))} for it "
           "before it runs (:104-105)")
    a.stage_note(f"FrameInterpolate working memory ~{fmt_mib(int(traced * k))}: traced {fmt_mib(traced)} at {w}×{h} × {k}")
    host = 0
    if size.batch and not from_video(a, images):
        frames_out = (max(1, size.batch) - 1) * mult + 1
        host = frames_out * 3 * w * h * 4
        a.note(f"{a.label(node)}: its {frames_out} output frames are a float32 tensor on the CPU "
               f"(nodes_frame_interpolation.py:126-127): {fmt_gib(host)} of RAM, kept in the cache")
    return _replace(stage, working=((f"{F.FAMILIES[fam].label} activations (traced)", int(traced * k), why),),
                    host_output_bytes=host)


PACK = Pack(
    name="nodes_frame_interpolation",
    stage_kinds={INTERPOLATE: SAMPLE},
    stages={INTERPOLATE: _interpolate},
    refs={LOADER: model_file_loader("model_name", "frame_interpolation", MODEL_TYPE)},
    relevant_types={MODEL_TYPE},
    widgets={LOADER: ["model_name"], INTERPOLATE: ["multiplier"]},
)
