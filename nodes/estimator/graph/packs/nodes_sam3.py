"""ComfyUI 0.33.0 comfy_extras/nodes_sam3.py: SAM 3 / SAM 3.1's nodes (families/sam3.py).

- SAM3_Detect (:88-257): MODEL (CheckpointLoaderSimple of a SAM 3 / 3.1 file) + IMAGE (+ optional CONDITIONING from
  CLIPTextEncode, boxes, points) -> MASK. ``load_model_gpu(model)`` (:152) puts the detector + tracker on the GPU;
  every image is stretched to 1008 x 1008 (:118) and run through the detector one image at a time (:176-177,
  ``image_in[b:b+1]``), so what one forward holds does not depend on the number of images (a video's frames);
  point prompts take the tracker's SAM decoder instead, box / mask refinement runs ``refine_iterations`` more
  decoder passes (:188, :202).
- SAM3_VideoTrack (:260-312): IMAGE frames + MODEL (+ initial masks / conditioning) -> SAM3_TRACK_DATA.
  ``load_model_gpu(model)`` (:288), then ``forward_video`` (:303-306, comfy/ldm/sam3/tracker.py) over all N frames
  with a memory bank of past frames and up to ``max_objects`` tracked objects (0: 64, :276).
- SAM3_TrackPreview (:315-470), SAM3_TrackToMask (:473-518): drawing / mask unions of the track data, no model
  forward.

Weights: the MODEL part of the checkpoint (CHECKPOINT_SPLITS["sam3.1"]["model"]) is priced. Working memory: not
estimated (the note says why). The ViT trunk's per-block peak at 72 x 72 tokens would follow the first-principles
transformer formula, but the tensors the backbone keeps after it are larger and are not covered by any formula or
trace here (see ``backbone_maps_bytes``); the video tracker adds a memory bank that depends on the run-time frame
and object counts.
"""
from __future__ import annotations

from ...families.sam3 import SAM3_IMAGE_SIZE, SAM3_PATCH
from ...workload import SAMPLE
from . import Pack

DETECT = "SAM3_Detect"
VIDEO_TRACK = "SAM3_VideoTrack"
_D_MODEL = 256  # detector.py:389 (d_model), sam.py:378
_QUERIES = 200  # detector.py:389 (num_queries)
_FPN_SCALES = (4.0, 2.0, 1.0)  # sam.py:386 (SAM 3.1 multiplex: three levels per FPN set)


def backbone_maps_bytes(dtype_bytes: int = 2) -> int:
    """What SAM3VisionBackbone.forward (sam.py:397-425) keeps after the trunk for one 1008 x 1008 image of the
    SAM 3.1 file in SAM3_Detect (detector.py:406-413: tracker_mode "propagation"): three detector FPN levels and
    three tracker levels (256 channels at 4x, 2x, 1x the 72 x 72 grid), their 16-bit position maps (cast_to_input of
    the expanded cache, sam.py:409 / :424) and the float32 sine cache itself (PositionEmbeddingSine, sam.py:364-374,
    one per level shape). A lower bound of the post-trunk peak: the detector transformer, the decoder's box
    relative-position bias and the segmentation head come on top."""
    grid = SAM3_IMAGE_SIZE // SAM3_PATCH
    elems = sum(int(grid * s) ** 2 * _D_MODEL for s in _FPN_SCALES)
    return elems * (4 * dtype_bytes + 4)  # features + positions (detector, tracker) + fp32 cache


def trunk_formula_bytes(dtype_bytes: int = 2) -> int:
    """memory._formula_bytes's per-token transformer peak (6 x width + 2 x FFN) at the trunk's 72 x 72 tokens."""
    tokens = (SAM3_IMAGE_SIZE // SAM3_PATCH) ** 2
    return tokens * (6 * 1024 + 2 * int(1024 * 4.625)) * dtype_bytes


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


WHY_DETECT = (f"SAM 3 / 3.1's detector (comfy/ldm/sam3): the ViT trunk's per-block peak at {SAM3_IMAGE_SIZE}x"
              f"{SAM3_IMAGE_SIZE} px / patch {SAM3_PATCH} = {(SAM3_IMAGE_SIZE // SAM3_PATCH) ** 2:,} tokens, width 1024, "
              f"FFN 4736 would be ~{_mib(trunk_formula_bytes())} (first-principles formula), but the FPN features and "
              f"position maps the backbone keeps after it are ~{_mib(backbone_maps_bytes())} (SAM 3.1 file, "
              "sam.py:397-425) before "
              "the detector transformer and segmentation head run: no trace or formula here covers that peak")


def _model_stage(a, node, image_input: str, why: str):
    model = a.link(node, "model")
    if model is None or a.link(node, image_input) is None:
        return None
    a.stage_note(f"working memory not estimated: {why}")
    return a.sample_stage(node, model_links=[model], cond_links=[], cfg=None, uses_negative=False, steps=1,
                          latent=None)


def query_masks_bytes(width: int, height: int, dtype_bytes: int = 2) -> int:
    """SAM3Detector.forward (detector.py:479-482): the masks of all 200 queries (detector.py:389, num_queries) are
    interpolated to the input image's own height x width before the node keeps those above the threshold
    (nodes_sam3.py:209-215): one [1, 200, H, W] tensor in the model's dtype, on top of the detector's own peak."""
    return _QUERIES * width * height * dtype_bytes


def _detect(a, node):
    why = WHY_DETECT
    size = a.image_size(a.link(node, "image"))
    if size is not None and size.width and size.height:
        said = "" if size.exact else " (assumed)"
        why += (f"; then the {_QUERIES} query masks are upsampled to the input's {size.width}×{size.height}{said} "
                f"(detector.py:482): {_mib(query_masks_bytes(size.width, size.height))} more at 16 bit")
    else:
        why += (f"; then the {_QUERIES} query masks are upsampled to the input's own size (detector.py:482, "
                f"{_QUERIES} × H × W × 2 bytes), unknown before running")
    stage = _model_stage(a, node, "image", why)
    if stage is not None:
        a.note(f"{a.label(node)}: SAM 3's detector runs on the GPU (nodes_sam3.py:152 load_model_gpu; :118, :176-177: "
               f"each image stretched to {SAM3_IMAGE_SIZE}×{SAM3_IMAGE_SIZE}, one at a time, so the number of images "
               "or video frames changes the time, not the memory); its weights are priced, its activations are not")
    return stage


def _track(a, node):
    why = ("SAM 3 / 3.1's video tracker (nodes_sam3.py:303-306 forward_video, comfy/ldm/sam3/tracker.py): each frame runs "
           "the detector's backbone, plus a memory bank of past frames and up to max_objects tracked objects; the "
           "frame count is known only at run time (a video's frames) and no trace or formula here covers the tracker")
    stage = _model_stage(a, node, "images", why)
    if stage is not None:
        a.note(f"{a.label(node)}: SAM 3 video tracking on the GPU (nodes_sam3.py:288 load_model_gpu); the number of "
               "frames is not fixed by the graph; weights priced, activations not")
    return stage


PACK = Pack(
    name="nodes_sam3",
    stage_kinds={DETECT: SAMPLE, VIDEO_TRACK: SAMPLE},
    stages={DETECT: _detect, VIDEO_TRACK: _track},
    handled={"SAM3_TrackPreview", "SAM3_TrackToMask"},
)
