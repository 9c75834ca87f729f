"""SAM 3 / SAM 3.1 (ComfyUI 0.33.0's SAM3 / SAM31): Meta's promptable detector + video tracker, loaded as one
all-in-one checkpoint by CheckpointLoaderSimple. Its MODEL output is the detector + tracker (comfy/ldm/sam3/), its
CLIP output a CLIP text transformer (comfy/text_encoders/sam3_clip.py); there is no VAE in the file.

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:1117-1123: `detector.backbone.vision_backbone.trunk.blocks.0.attn.qkv.weight` +
  `detector.transformer.decoder.query_embed.weight` select SAM3; `...vision_backbone.propagation_convs.0.conv_1x1.weight`
  makes it SAM31 (the "multiplex" file).
- comfy/supported_models.py:2346-2394 (SAM3, SAM31): text_encoder_key_prefix `detector.backbone.language_backbone.`
  (:2349), the text keys are moved out of the model state dict (:2359) and converted to a CLIP text model
  (:2353-2356); clip_target = sam3_clip.SAM3TokenizerWrapper / SAM3ClipModelWrapper (:2388-2390); model_base.SAM3
  (model_base.py:2790-2792) builds comfy.ldm.sam3.detector.SAM3Model.
- Text encoder, comfy/text_encoders/sam3_clip.py:4-16 (SAM3_CLIP_CONFIG: CLIPTextModel, hidden 1024, FFN 4096,
  16 heads, 24 layers, 32 positions, vocab 49408), :19-21 (SDClipModel, max_length 32), :24-26 (the tokenizer pads
  / truncates to 32 tokens). ComfyUI builds it as comfy/clip_model.py CLIPTextModel (:138-142 embeddings,
  :58-100 layers, :161 final norm, :198 text_projection 1024 x 1024 without bias).
- Image encoder, comfy/ldm/sam3/sam.py:223-226 (ViTDet defaults: img_size 1008, patch 14, width 1024, depth 32,
  16 heads, mlp_ratio 4.625 -> FFN int(1024 * 4.625) = 4736 (:154-156), window 24 with global attention in blocks
  7/15/23/31, pretrain_img_size 336 -> 577 position rows (:235-236)); sam.py:377-399 (SAM3VisionBackbone: the
  SAM 3.1 file has three FPN sets `convs`, `propagation_convs`, `interactive_convs`, at scales 4/2/1, 256 ch).
- Detector, comfy/ldm/sam3/detector.py:388-404 (d_model 256, 200 queries, 6 + 6 layer encoder / decoder); tracker
  comfy/ldm/sam3/tracker.py (SAM31's multiplex tracker, :1152).

Parameter counts (computed from those classes):
- text encoder (ComfyUI's CLIPTextModel at SAM3_CLIP_CONFIG): token embedding 49408 x 1024 + 32 x 1024 positions
  + 24 x (4 x (1024^2 + 1024) attention + 1024 x 4096 + 4096 + 4096 x 1024 + 1024 MLP + 2 x 2048 norms)
  + 2048 final norm + 1024 x 1024 projection = 353,986,560.
- ViTDet trunk: 24 x 24 + 1 = 577 x 1024 position rows + 3 x 14 x 14 x 1024 patch conv (no bias) + 2048 ln_pre
  + 32 x (1024 x 3072 + 3072 qkv + 1024^2 + 1024 proj + 2 x 2048 norms + 1024 x 4736 + 4736 + 4736 x 1024 + 1024)
  = 446,237,696.
- the published file: 1,717,986,918 bytes (the template's "1.63 GB", a rounded binary size; data/catalogue.json)
  / 2 bytes (fp16) = 858,993,459 parameters; the model part (trunk + FPN sets + detector + tracker) is the rest,
  858,993,459 - 353,986,560 = 505,006,899 (of which the trunk 446,237,696; the remaining 58.8 M for the FPN convs,
  the detector transformer / heads and the tracker is exact only to the published size's rounding, +- ~5 M).

Working memory:
- the text encode: 32 tokens (sam3_clip.py:21, :25) through the CLIP text transformer: the first-principles
  text-encoder formula (memory.text_encoder_working) from hidden_size / ffn_dim below; no traced CLIP of this width.
- the detector / tracker forward (SAM3_Detect, SAM3_VideoTrack; graph/packs/nodes_sam3.py): the model family has no
  `hidden_size` on purpose, so the DiT formula never prices it: the ViT trunk alone would be covered by the
  transformer formula, but after it the backbone keeps three FPN levels (288^2, 144^2, 72^2 x 256) for the detector
  and three for the tracker, plus their sine position maps (fp32 cache + 16-bit casts), which are larger than the
  trunk's per-block peak. SAM3_Detect's text-prompt path is TRACED instead (below, ``detect_phases``);
  SAM3_VideoTrack's memory bank grows with run-time frame / object counts and stays "not estimated".

SAM3_Detect, traced (bench/trace_sam3.py, 2026-12-03; ComfyUI 0.33.0 = src-0588299823c1aafb, torch 2.14.1; the
SAM 3.1 file's model as ComfyUI builds it: model_detection.py:1117-1123 {"image_model": "SAM31"} ->
supported_models.py SAM31 -> model_base.py:2790-2792 -> comfy/ldm/sam3/detector.py SAM3Model, full size, fp16 weights
(1,043,728,760 bytes of parameters / buffers, excluded), FakeTensorMode on a fake cuda device, torch.inference_mode,
bench/trace_working_memory.py's live-storage tracker with F.interpolate as the eager CUDA kernel runs it). Every
image is stretched to 1008 x 1008 (comfy_extras/nodes_sam3.py:118) and run through the detector one image at a time
(:176-177), so the model's own activations are CONSTANTS; what depends on the input is the masks the node makes at
the input's own H x W. The traced case is SAM3_Detect.execute's GPU work line by line (bench/trace_sam3.py
``case_node``: nodes_sam3.py:176-244 with its own variable lifetimes) for one text prompt (32 tokens, sam3_clip.py:21)
and one kept detection per image, whose box is the whole image (the largest crop):
- the detector forward, SAM3Model.forward -> SAM3Detector.forward (detector.py:517-518, :468-489; nodes_sam3.py:
  209-211): peak SAM31_DETECT_PEAK (in the segmentation head's mask predictor);
- its last step upsamples the 200 query masks to the input's H x W (detector.py:482, F.interpolate to orig_size):
  SAM31_AT_UPSAMPLE is live when it runs, plus its output [1, 200, H, W] fp16 (400 bytes a pixel);
- _refine_mask (nodes_sam3.py:42-84, refine_iterations times SAM3Model.forward_segment, detector.py:520-561, on the
  1008 x 1008 crop) runs while the 200 upsampled masks are still referenced (``masks``, nodes_sam3.py:215) with the
  kept detection's copy (:221 / :226, 2 bytes a pixel): SAM31_REFINE_PEAK + 402 bytes a pixel;
- from the second image on, the previous image's ``results`` / ``masks`` / ``kept_masks`` / ``combined`` (400 + 2
  + 4 bytes a pixel, + SAM31_PREVIOUS_IMAGE_BYTES of scores and boxes) stay alive until rebound (:209-240), and every
  earlier image's union mask (float32, 4 bytes a pixel, :244) stays on the GPU until the loop ends (:253).
The fitted phases (``detect_phases``) reproduce every traced point to the byte (SAM31_DETECT_TRACE; tests). Not
traced: several text prompts (a comma-separated prompt, sam3_clip.py:29-43, runs the detector once per part and keeps
the previous part's masks), more than one kept detection (max_detections > 1), box / point prompts without text.
"""
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
