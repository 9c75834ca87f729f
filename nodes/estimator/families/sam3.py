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
  trunk's per-block peak; no formula here covers that, so the stage says "working memory not estimated".
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
