"""ComfyUI 0.33.0 comfy_extras/nodes_sam3.py: SAM 3 / SAM 3.1's nodes (families/sam3.py).

- SAM3_Detect (:88-257): MODEL (CheckpointLoaderSimple of a SAM 3 / 3.1 file) + IMAGE (+ optional CONDITIONING from
  CLIPTextEncode, boxes, points) -> MASK. ``load_model_gpu(model)`` (:152) puts the detector + tracker on the GPU;
  every image is stretched to 1008 x 1008 (:118) and run through the detector one image at a time (:176-177,
  ``image_in[b:b+1]``), so the model's own activations do not depend on the input; the masks the node keeps at
  the input's size do (below); point prompts take the tracker's SAM decoder instead, box / mask refinement runs
  ``refine_iterations`` more
  decoder passes (:188, :202).
- SAM3_VideoTrack (:260-312): IMAGE frames + MODEL (+ initial masks / conditioning) -> SAM3_TRACK_DATA.
  ``load_model_gpu(model)`` (:288), then ``forward_video`` (:303-306, comfy/ldm/sam3/tracker.py) over all N frames
  with a memory bank of past frames and up to ``max_objects`` tracked objects (0: 64, :276).
- SAM3_TrackPreview (:315-470), SAM3_TrackToMask (:473-518): drawing / mask unions of the track data, no model
  forward.

Weights: the MODEL part of the checkpoint (CHECKPOINT_SPLITS["sam3.1"]["model"]) is priced. Working memory:
- SAM3_Detect (text prompt): TRACED with ComfyUI 0.33.0's own model code (bench/trace_sam3.py; the constants and
  phases in families/sam3.py): the detector's activations at 1008 x 1008 are a constant per image (× the estimator's
  calibration for traced activations, memory.calibration), plus the masks the node keeps at the input image's own
  size: the 200 query masks upsampled to it (detector.py:482), the kept detection's copy, and from the second image
  on the previous image's masks and every earlier image's union mask (nodes_sam3.py:209-253). The input's size and
  count come from the graph (LoadImage: the file's size with the input media reader, else an assumed 1 megapixel,
  said); a loaded video's size and frame count are unknown before running, so the stage says "not estimated"
  there, as it does for paths not traced (box / point prompts, several prompt parts, ':N' max detections).
- SAM3_VideoTrack: TRACED (bench/trace_sam3.py case_track; families/sam3.py SAM31_TRACK_TRACE) for at most the
  node's max_objects tracked objects with detection on every frame: the peak is reached by the 20th frame (the memory
  bank keeps the conditioning frame and the last 16) and does not depend on the frames' size (each is stretched to
  1008 x 1008), so a loaded video of unknown size and length is priced; plus the next frame's backbone on a second
  CUDA stream; each comma-separated part of the prompt past the first adds its traced detector outputs.
"""
from __future__ import annotations

import re

from ...physics import memory
from ...families import sam3 as F
from ...families.sam3 import SAM3_IMAGE_SIZE
from ...units import fmt_mib
from ...workload import SAMPLE
from ..base import _replace, frames_bound, from_video
from . import Pack

DETECT = "SAM3_Detect"
VIDEO_TRACK = "SAM3_VideoTrack"



def _forward_stage(a, node, model_link):
    """A SAM 3 forward: a model stage with no conditioning, latent or steps (its working memory is the node's)."""
    return a.sample_stage(node, model_links=[model_link], cond_links=[], cfg=None, uses_negative=False, steps=1,
                          latent=None)


_MULTI = re.compile(r"^(.+?)\s*:\s*([\d.]+)\s*$")  # sam3_clip.py:36 (a part's ':N' max detections)


def prompt_parts(text: str) -> list[tuple[str, int]]:
    """sam3_clip.py:29-43 (_parse_prompts): the comma-separated parts of a SAM 3 prompt and each one's max detections
    (':N', default 1); nodes_sam3.py:208-236 runs the detector once per part and refines up to N detections of it."""
    parts = [p.strip() for p in text.replace("(", "").replace(")", "").split(",") if p.strip()]
    out = []
    for part in parts:
        m = _MULTI.match(part)
        out.append((m.group(1).strip(), max(1, round(float(m.group(2))))) if m else (part, 1))
    return out


def _prompt_text(a, node):
    """The text of the CLIPTextEncode feeding SAM3_Detect's conditioning, if the graph fixes it."""
    link = a.link(node, "conditioning")
    src = a.nodes.get(link.node) if link is not None else None
    if src is None or src.type != "CLIPTextEncode":
        return None
    text = a.text(src, "text")
    return text if isinstance(text, str) else None


def _detect(a, node):
    model_link, image = a.link(node, "model"), a.link(node, "image")
    if model_link is None or image is None:
        return None
    why = None
    prompts = None
    if a.link(node, "conditioning") is None:
        why = "no text prompt: the box / point prompt paths (nodes_sam3.py:186-204) are not traced here"
    elif any(a.link(node, k) is not None and a.value(node, k) is not None
             for k in ("bboxes", "positive_coords", "negative_coords")):
        why = ("box / point prompts besides the text (nodes_sam3.py:186-204, boxes into the detector): only the "
               "text-prompt path is traced (families/sam3.py)")
    else:
        text = _prompt_text(a, node)
        prompts = prompt_parts(text) if text is not None else None
        if prompts and (len(prompts) > 1 or prompts[0][1] > 1):
            why = (f"the prompt has {len(prompts)} part(s) / up to {max(n for _, n in prompts)} detections each "
                   "(sam3_clip.py:29-43): the detector runs once per part and keeps the previous part's masks "
                   "(nodes_sam3.py:208-236); traced for one prompt with one kept detection only (families/sam3.py)")
    size = a.image_size(image)
    images = max(1, size.batch or 1) if size is not None else None
    count_said = ""
    if why is None and size is not None and from_video(a, image):
        bound = frames_bound(a, image)
        if bound:
            images = bound
            count_said = (f" (a video's frames: at most {bound}, the ImageFromBatch length upstream; the video's own "
                          "count is known only at run time, so this is an upper bound)")
        else:
            why = (f"the number of video frames is known only at run time: every earlier frame's union mask stays on "
                   f"the GPU until the last one ({F.UNION_PER_PIXEL} bytes a pixel per frame, nodes_sam3.py:244, :253) "
                   f"on top of the traced per-image peak (families/sam3.py)")
    if why is None and size is None:
        why = (f"the input's size and image / frame count are not known before running (a loaded video): the "
               f"detector's own peak is a constant ({fmt_mib(F.SAM31_DETECT_PEAK)} traced at "
               f"{SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE}), but the node also keeps the {F.SAM3_QUERIES} query masks "
               f"at the input's size ({F.UPSAMPLED_MASKS_PER_PIXEL} bytes a pixel, detector.py:482) and every "
               f"frame's union mask on the GPU until the last frame ({F.UNION_PER_PIXEL} bytes a pixel per frame, "
               "nodes_sam3.py:244, :253)")
    if why is not None:
        a.unpriced(why)
        stage = _forward_stage(a, node, model_link)
        a.note(f"{a.label(node)}: SAM 3's detector runs on the GPU (nodes_sam3.py:152 load_model_gpu); its weights "
               "are priced, its activations are not (see the stage)")
        return stage
    refine = a.number(node, "refine_iterations", 2)
    refine = 2 if refine is None else max(0, refine)
    w, h = size.width, size.height
    said = f"the input's {w}×{h}" + ("" if size.exact else " (assumed: 1 megapixel, the file's size is not known "
                                                            "here)")
    k = memory.calibration("sam3.1")
    phases = F.detect_phases(w, h, images, refine)
    what, const, pixels = max(phases, key=lambda p: p[1] * k + p[2])
    prompt_said = ("one text prompt, one kept detection" if prompts is not None else
                   "one text prompt with one kept detection assumed (the prompt's text is not known here)")
    why_const = (f"{F.SAM31_DETECT_TRACE_SOURCE}: at the peak ({what}; {images} image(s){count_said} of {said}, "
                 f"refine_iterations {refine}, {prompt_said}) the model's own activations at "
                 f"{SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE} are {fmt_mib(const)} (a constant: every image is stretched to "
                 f"{SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE}, nodes_sam3.py:118, one at a time, :176-177) × {k} for the "
                 "allocator and untraced transients")
    why_px = (f"masks at {said} (exact tensor sizes; the traced phases in families/sam3.py): the {F.SAM3_QUERIES} "
              f"query masks upsampled to it (detector.py:482, {F.UPSAMPLED_MASKS_PER_PIXEL} bytes a pixel), the kept "
              f"detection's copy (nodes_sam3.py:221/:226)" +
              (f", the previous image's masks until rebound (:209-240) and {images - 1} earlier image(s)' union "
               f"masks kept on the GPU until the loop ends (:244, :253; {F.UNION_PER_PIXEL} bytes a pixel each)"
               if images > 1 else ""))
    working = [("detector activations (traced)", int(const * k), why_const)]
    if pixels:
        working.append((f"masks at the input's size ({w}×{h})", int(pixels), why_px))
    a.stage_note(f"SAM3_Detect working memory ~{fmt_mib(int(const * k) + pixels)}: traced {fmt_mib(const)} at "
                 f"{SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE} × {k} + {fmt_mib(pixels)} of masks at {said}")
    stage = _forward_stage(a, node, model_link)
    a.note(f"{a.label(node)}: SAM 3's detector runs on the GPU (nodes_sam3.py:152 load_model_gpu; :118, :176-177: "
           f"each image stretched to {SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE}, one at a time); its working memory is "
           "traced (families/sam3.py) plus the masks it keeps at the input's size")
    return _replace(stage, working=tuple(working))


def _track(a, node):
    """SAM3_VideoTrack: the traced tracker peak for at most max_objects objects (families/sam3.py track_peak): it
    depends on neither the frames' size nor, past 20 frames, their count, so a video of unknown length is priced."""
    model_link, images = a.link(node, "model"), a.link(node, "images")
    if model_link is None or images is None:
        return None
    parts, parts_said = 1, ""
    if a.link(node, "conditioning") is not None:
        text = _prompt_text(a, node)
        prompts = prompt_parts(text) if text is not None else None
        if prompts:
            parts = len(prompts)
            parts_said = (f", a prompt of {parts} comma-separated parts (sam3_clip.py:29-43: the detector runs once "
                          f"per part on every frame, + {fmt_mib(F.SAM31_TRACK_PER_PART)} each past the first, traced)"
                          if parts > 1 else "")
        else:
            parts_said = ", one prompt part assumed (the prompt's text is not known here)"
    # the frame count only sizes the packed masks on the CPU (the GPU peak does not depend on it): a video's frames
    # are bounded by an ImageFromBatch length upstream or not known; an image batch's count is its batch
    size = None if from_video(a, images) else a.image_size(images)
    frames = (frames_bound(a, images) or None) if size is None else max(1, size.batch or 1)
    max_objects = a.number(node, "max_objects", 4)
    bound = F.track_objects_bound(4 if max_objects is None else max_objects)
    traced, bare = F.track_peak(bound, parts)
    k = memory.calibration("sam3.1")
    objects_said = (f"at most {bound} tracked object(s) (max_objects {max_objects}"
                    + (", 0 or above the cap: the tracker's cap, tracker.py:1653-1654" if bound != max_objects else "")
                    + ")" + (f", priced as {traced}, the next traced count" if traced != bound else ""))
    why_const = (f"{F.SAM31_TRACK_TRACE_SOURCE}: {objects_said}{parts_said}, detection on every frame; the peak is reached by the "
                 f"20th frame and stays there (the memory bank keeps the last 16 frames, tracker.py:1736-1739) and "
                 f"does not depend on the frames' size (each is stretched to {SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE}, "
                 f"tracker.py:207-209): {fmt_mib(F.SAM31_TRACK_TRACE[traced])}, + {fmt_mib(F.SAM31_STREAM_OVERLAP)} "
                 f"for the next frame's backbone on a second CUDA stream (tracker.py:1686-1694), × {k} for the "
                 "allocator and untraced transients")
    working = [("video tracker activations (traced)", int(bare * k), why_const)]
    host = 0
    if frames:
        host = 2 * frames * traced * F.PACKED_MASK_BYTES  # the per-frame list and its stack (tracker.py:1781-1790)
    a.stage_note(f"SAM3_VideoTrack working memory ~{fmt_mib(int(bare * k))}: traced {fmt_mib(bare)} for "
                 f"{objects_said} × {k}; any number of frames")
    stage = _forward_stage(a, node, model_link)
    a.note(f"{a.label(node)}: SAM 3 video tracking on the GPU (nodes_sam3.py:288 load_model_gpu): one frame at a time "
           f"at {SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE} with a memory bank of the last 16 frames; its working memory is "
           "traced (families/sam3.py) for the node's max_objects"
           + ("" if frames else f"; its output, bit-packed masks on the CPU ({fmt_mib(traced * F.PACKED_MASK_BYTES)} "
                                 "a frame), grows with the frame count, known only at run time"))
    stage = _replace(stage, working=tuple(working))
    return _replace(stage, host_output_bytes=host) if host else stage


PACK = Pack(
    name="nodes_sam3",
    stage_kinds={DETECT: SAMPLE, VIDEO_TRACK: SAMPLE},
    stages={DETECT: _detect, VIDEO_TRACK: _track},
    handled={"SAM3_TrackPreview", "SAM3_TrackToMask"},
)
