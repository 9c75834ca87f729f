"""SAM 3 / SAM 3.1 (ComfyUI 0.33.0's SAM3 / SAM31): Meta's promptable detector + video tracker, loaded as one
all-in-one checkpoint by CheckpointLoaderSimple. Its MODEL output is the detector + tracker (comfy/ldm/sam3/), its
CLIP output a CLIP text transformer (comfy/text_encoders/sam3_clip.py); there is no VAE in the file.

The derivation, rule by rule with its sources: docs/derivations.md, "families/sam3.py: SAM 3 / SAM 3.1"."""
from __future__ import annotations

from ._spec import DIFFUSION, TEXT_ENCODER, Family

ORDER = 172  # no name rules: the published checkpoint takes this family from its data/catalogue.json row
# (family "sam3.1"); a file on disk is not split yet (its detector.* / tracker.* keys are no checkpoint prefix
# families/detect.py knows)

SAM3_IMAGE_SIZE = 1008  # nodes_sam3.py:118 (common_upscale to 1008 x 1008), sam.py:224 (img_size)
SAM3_PATCH = 14  # sam.py:224
SAM3_TEXT_TOKENS = 32  # sam3_clip.py:21 / :25 (max_length 32)

# comfy/text_encoders/sam3_clip.py:4-16 at comfy/clip_model.py CLIPTextModel (see the module docstring)
_TE = dict(vocab=49408, positions=32, hidden=1024, ffn=4096, layers=24)
P_SAM3_TEXT = (_TE["vocab"] * _TE["hidden"] + _TE["positions"] * _TE["hidden"]
               + _TE["layers"] * (4 * (_TE["hidden"] ** 2 + _TE["hidden"])
                                  + _TE["hidden"] * _TE["ffn"] + _TE["ffn"] + _TE["ffn"] * _TE["hidden"] + _TE["hidden"]
                                  + 4 * _TE["hidden"])
               + 2 * _TE["hidden"] + _TE["hidden"] ** 2)  # = 353,986,560
# comfy/ldm/sam3/sam.py:152-236 (ViTDet defaults)
_VIT = dict(width=1024, depth=32, ffn=int(1024 * 4.625), patch=14, pos_rows=(336 // 14) ** 2 + 1)
P_SAM3_VIT_TRUNK = (_VIT["pos_rows"] * _VIT["width"] + 3 * _VIT["patch"] ** 2 * _VIT["width"] + 2 * _VIT["width"]
                    + _VIT["depth"] * (_VIT["width"] * 3 * _VIT["width"] + 3 * _VIT["width"] + _VIT["width"] ** 2
                                       + _VIT["width"] + 4 * _VIT["width"] + _VIT["width"] * _VIT["ffn"] + _VIT["ffn"]
                                       + _VIT["ffn"] * _VIT["width"] + _VIT["width"]))  # = 446,237,696
P_SAM31_FILE = 1_717_986_918 // 2  # the published fp16 file (template utility_image_segment_sam3's Model Links)
P_SAM31_MODEL = P_SAM31_FILE - P_SAM3_TEXT  # trunk + FPN sets + detector + tracker (the rest of the file)

FAMILIES = {
    # the ViT trunk's numbers (sam.py:224: depth 32, 16 heads of 64, FFN 4736, patch 14 at 1008 px; its width 1024
    # and the detector's d_model 256 / 200 queries, detector.py:389, are in the docstring). No hidden_size on
    # purpose: the sampling formula must not price a detector forward (see the docstring)
    "sam3.1": Family(DIFFUSION, "SAM 3.1 (multiplex) detector + tracker", dict(
        image_size=SAM3_IMAGE_SIZE, patch_size=(SAM3_PATCH, SAM3_PATCH), depth=32, heads=16, head_dim=64,
        ffn_dim=_VIT["ffn"])),
    "sam3-clip": Family(TEXT_ENCODER, "SAM 3 text encoder (CLIP text, 24 x 1024)", dict(
        hidden_size=1024, ffn_dim=4096, layers=24, heads=16, head_dim=64, vocab=49408, max_tokens=32)),
}

# sam3_clip.py:21 / :25: every prompt is padded or truncated to 32 tokens (a comma-separated prompt is encoded one
# part at a time, :76-80, each 32 tokens)
TE_TOKENS = {"sam3-clip": SAM3_TEXT_TOKENS}

# CheckpointLoaderSimple on the published SAM 3.1 file: part -> (params, kind, family, label); no VAE in the file
CHECKPOINT_SPLITS = {
    "sam3.1": {
        "model": (P_SAM31_MODEL, DIFFUSION, "sam3.1", "SAM 3.1 detector + tracker"),
        "clip": (P_SAM3_TEXT, TEXT_ENCODER, "sam3-clip", "SAM 3 text encoder (CLIP text, 24 x 1024)"),
    },
}


# ---- SAM3_Detect working memory: traced with ComfyUI 0.33.0's own model code (see the docstring) ----
SAM31_DETECT_TRACE_SOURCE = ("traced with bench/trace_sam3.py on 2026-12-03: ComfyUI 0.33.0's SAM3Model (SAM 3.1 "
                             "file), full size, fp16, fake CUDA tensors, SAM3_Detect.execute's GPU work "
                             "(comfy_extras/nodes_sam3.py:176-244)")
SAM31_DETECT_PEAK = 413_823_763  # SAM3Detector.forward (detector.py:468-489) of one 1008 x 1008 image, text prompt
SAM31_AT_UPSAMPLE = 318_154_034  # live when detector.py:482 upsamples the 200 masks (+ its 400 bytes a pixel output)
# _refine_mask (nodes_sam3.py:42-84) forward_segment passes (detector.py:520-561): by refine_iterations (1; 2 or more,
# the node's default 2 and 5 traced identical), + 402 bytes a pixel (the 200 masks and the kept copy)
SAM31_REFINE_PEAK = {1: 359_340_148, 2: 361_372_276}
SAM31_PREVIOUS_IMAGE_BYTES = 2_420  # the previous image's scores / boxes / probs until rebound (nodes_sam3.py:209-217)
SAM3_QUERIES = 200  # detector.py:389 (num_queries)
UPSAMPLED_MASKS_PER_PIXEL = SAM3_QUERIES * 2  # [1, 200, H, W] fp16 (detector.py:482)
KEPT_MASK_PER_PIXEL = 2  # one kept detection's fp16 copy (nodes_sam3.py:221, :226)
COMBINED_PER_PIXEL = 4  # ``combined`` (float32 [1, H, W], nodes_sam3.py:240) of the previous image
UNION_PER_PIXEL = 4  # each earlier image's float32 union mask in all_masks (nodes_sam3.py:244) until :253

# (width, height, images, refine_iterations) -> traced peak bytes (bench/trace_sam3.py node@WxH[:R][*N], 2026-12-03);
# detect_phases reproduces each exactly (tests/test_family_sam3.py)
SAM31_DETECT_TRACE = {
    (1024, 1024, 1, 2): 782_899_828, (720, 720, 1, 2): 569_769_076, (1280, 720, 1, 2): 731_855_476,
    (512, 512, 1, 2): 466_754_164, (1024, 1024, 1, 5): 782_899_828, (1024, 1024, 1, 1): 780_867_700,
    (1024, 1024, 1, 0): 737_584_434, (1024, 1024, 2, 2): 1_167_503_014, (1024, 1024, 3, 2): 1_171_697_318,
    (720, 720, 3, 2): 740_134_054, (1024, 1024, 2, 0): 1_167_503_014, (256, 256, 2, 2): 440_695_943,
    (128, 128, 3, 2): 420_609_159, (640, 480, 2, 2): 566_988_454, (512, 512, 4, 2): 532_590_246,
}


def detect_phases(width: int, height: int, images: int = 1, refine_iterations: int = 2):
    """SAM3_Detect's GPU peak phases for ``images`` images of width x height, one text prompt, one kept detection
    each: [(what, traced constant bytes, bytes that scale with the input's pixels)]; the peak is the largest sum.
    The constants are the model's own activations at 1008 x 1008 (traced); the pixel terms are the masks the node
    keeps at the input's size (the counts above, exact tensor sizes)."""
    hw = int(width) * int(height)
    n = max(1, int(images))
    prev_c = SAM31_PREVIOUS_IMAGE_BYTES if n > 1 else 0
    prev_px = (UPSAMPLED_MASKS_PER_PIXEL + KEPT_MASK_PER_PIXEL + COMBINED_PER_PIXEL) if n > 1 else 0
    unions_px = UNION_PER_PIXEL * (n - 1)
    phases = [
        ("detector forward", SAM31_DETECT_PEAK + prev_c, (prev_px + unions_px) * hw),
        ("the 200 masks upsampled to the input's size", SAM31_AT_UPSAMPLE + prev_c,
         (UPSAMPLED_MASKS_PER_PIXEL + prev_px + unions_px) * hw),
    ]
    if refine_iterations >= 1:
        phases.append(("refine decoder passes", SAM31_REFINE_PEAK[min(int(refine_iterations), 2)] + prev_c,
                       (UPSAMPLED_MASKS_PER_PIXEL + KEPT_MASK_PER_PIXEL
                        + (COMBINED_PER_PIXEL if n > 1 else 0) + unions_px) * hw))
    return phases


def detect_peak(width: int, height: int, images: int = 1, refine_iterations: int = 2) -> int:
    """The bare traced peak (no allocator calibration)."""
    return max(c + px for _, c, px in detect_phases(width, height, images, refine_iterations))


# ---- SAM3_VideoTrack working memory: traced with ComfyUI 0.33.0's own model code (bench/trace_sam3.py) ----
SAM31_TRACK_TRACE_SOURCE = ("traced with bench/trace_sam3.py on 2026-12-06: ComfyUI 0.33.0's SAM31Tracker (SAM 3.1 "
                            "file), full size, fp16, fake CUDA tensors, SAM3_VideoTrack's forward_video with one text "
                            "prompt (tracker.py:1648-1790, case_track)")
# tracked objects -> peak bytes over 20 frames of 1280 x 720 (track@1280x720:K*20). The peak stops growing at 20 frames
# (output_dict keeps the conditioning frame and the last 16 propagation frames, tracker.py:1736-1739: 21 and 24
# frames trace the same) and does not depend on the video's size (every frame is stretched to 1008 x 1008,
# tracker.py:207-209: 512 x 512 and 3840 x 2160 trace the same). Detection runs on every frame and every frame takes
# the recondition path (more than the code does once max_objects are tracked); see case_track. Within a bucket of
# 16 multiplexed objects the peak grows by the same 84,146,839 bytes an object; a new bucket adds 422 MiB more.
SAM31_TRACK_TRACE = {
    1: 1_014_743_734, 2: 1_089_020_220, 3: 1_165_210_629, 4: 1_249_357_468, 5: 1_333_504_307, 6: 1_417_651_146,
    8: 1_585_944_824, 12: 1_922_532_180, 16: 2_259_119_536, 17: 2_765_589_639, 24: 3_354_617_960,
    32: 4_027_793_184, 48: 5_796_468_880, 64: 7_565_146_624,
}
# each comma-separated part of the prompt past the first: the detector runs once per part on every frame and keeps
# its scores and 200 masks until they are joined (detector.py:581-587). track@1280x720:K*20+P traces exactly this
# much more per part at K = 1, 4 and 16 and P = 2, 3 and 8
SAM31_TRACK_PER_PART = 33_260_352
SAM31_TRACK_MAX_OBJECTS = 64  # tracker.py:1646 INTERNAL_MAX_OBJECTS (max_objects 0 or above it is clamped there)
# One frame's backbone (backbone@WxH): its peak and the bytes it returns. The tracker starts the next frame's backbone
# on a second CUDA stream while this frame is tracked (tracker.py:1668-1694); the trace runs it first and holds its
# outputs, so the temporaries the two streams may overlap add at most the backbone's peak less its outputs
SAM31_BACKBONE_PEAK = 242_323_712
SAM31_BACKBONE_OUT = 122_093_568
SAM31_STREAM_OVERLAP = SAM31_BACKBONE_PEAK - SAM31_BACKBONE_OUT
# the track data the node returns: every frame's masks of the tracked objects, bit-packed at 1008 x 1008
# (tracker.py:194-198 pack_masks, :1764 moved to the intermediate device), stacked at the end (:1781-1790)
PACKED_MASK_BYTES = SAM3_IMAGE_SIZE * SAM3_IMAGE_SIZE // 8


def track_objects_bound(max_objects) -> int:
    """How many objects the tracker may hold: the node's max_objects, 0 or above the cap meaning the cap
    (tracker.py:1653-1654)."""
    m = int(max_objects or 0)
    return SAM31_TRACK_MAX_OBJECTS if m <= 0 or m > SAM31_TRACK_MAX_OBJECTS else m


def track_peak(max_objects, parts: int = 1) -> tuple[int, int]:
    """(objects traced, bare traced peak bytes incl. the stream overlap) for at most ``max_objects`` tracked objects
    and a prompt of ``parts`` comma-separated parts: the smallest traced object count at or above the bound (the peak
    grows with the count, so this is an upper bound); any frame count (the peak is reached by 20 frames and stays
    there)."""
    bound = track_objects_bound(max_objects)
    k = min(n for n in SAM31_TRACK_TRACE if n >= bound)
    return k, SAM31_TRACK_TRACE[k] + SAM31_TRACK_PER_PART * (max(1, int(parts)) - 1) + SAM31_STREAM_OVERLAP
