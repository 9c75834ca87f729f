#!/usr/bin/env python3
"""Trace SAM 3.1's detector forward (what SAM3_Detect runs) with ComfyUI's own model code, without a GPU.

Run with ComfyUI 0.33.0's interpreter, one process, one thread:

    COMFYUI_PATH=.../ComfyUI-0.33 OMP_NUM_THREADS=1 .../bin/python bench/trace_sam3.py [CASE ...]

The model is built as ComfyUI 0.33.0 builds it from the published checkpoint sam3.1_multiplex_fp16.safetensors:
model_detection.py:1117-1123 gives {"image_model": "SAM31"} (the file has
``detector.backbone.vision_backbone.propagation_convs.0.conv_1x1.weight``) -> supported_models.SAM31
(supported_models.py:2346-2394) -> model_base.SAM3 (model_base.py:2790-2792) -> comfy.ldm.sam3.detector.SAM3Model,
at FULL size, fp16 weights (the file's dtype, one of SAM3.supported_inference_dtypes), inside FakeTensorMode on a
fake cuda device under torch.inference_mode, with bench/trace_working_memory.py's live-storage tracker (parameters
and buffers excluded, fused SDPA attention as the CUDA kernels allocate it). Everything is that module's machinery
(import_comfy, run_trace, _dit_model); this file only says which forward runs at which shapes.

Cases (each one forward of ONE 1008 x 1008 image, as comfy_extras/nodes_sam3.py:118 / :176-177 feed it):
- ``text``: SAM3_Detect's text-prompt path, nodes_sam3.py:209-211 -> SAM3Model.forward (detector.py:517-518) ->
  SAM3Detector.forward (detector.py:468-489) with one CLIPTextEncode prompt (32 tokens x 1024, sam3_clip.py:21;
  attention mask [1, 32]) and orig_size=None: the detector's own peak (masks kept at the 288 x 288 head size).
- ``text@WxH``: the same with orig_size=(H, W), i.e. including the mask upsampling to the input's size
  (detector.py:482); the difference to ``text`` shows how the [1, 200, H, W] mask tensor adds on top.
- ``refine``: _refine_mask's decoder pass (nodes_sam3.py:76-78): SAM3Model.forward_segment (detector.py:520-561)
  on one 1008 x 1008 crop with a [1, 1, 1008, 1008] mask prompt (what the text path runs refine_iterations times
  per kept detection, and the box path runs after its first box pass).
- ``node@WxH[:R][*N]``: SAM3_Detect.execute's GPU work for N images (default 1) of W x H with one text prompt
  and one kept detection per image refined R times (default 2, the node's default and the templates' value): see
  ``case_node``.
- ``box``: forward_segment with one box prompt (nodes_sam3.py:201). ``point``: with one positive point (:187).

Two fake-tensor workarounds, each said where it is defined: ``eager_upsample`` (F.interpolate traced as the single
CUDA kernel eager PyTorch runs, not torch._decomp's float32 Python re-implementation, which the tracker would
otherwise count: 5,967 MiB instead of 703 MiB for ``text@1024x1024``) and ``prompt_encoder_fake_safe`` (the SAM prompt
encoder's boolean-mask writes, tracker.py:556-560, as torch.where on its few-KB point embeddings: a fake tensor
cannot index by a data-dependent mask). ``--python-upsample`` turns the first off.

Prints one JSON line per case: peak bytes (inputs included: the frame / prompts are on the GPU during the node's
forward), input bytes, the op and module at the peak, seconds. With no CASE: DEFAULT_CASES, whose node@ points are
families/sam3.py's SAM31_DETECT_TRACE (one process, ~2 minutes on one core).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_working_memory as twm  # noqa: E402

IMAGE = 1008  # nodes_sam3.py:118
TEXT_TOKENS, TEXT_WIDTH = 32, 1024  # sam3_clip.py:21 (max_length 32), :7 (hidden_size 1024)


def build():
    twm._BUILD["weight_dtype"] = "float16"  # the published file is fp16 (SAM3.supported_inference_dtypes[0])
    return twm._dit_model({"image_model": "SAM31"}, "SAM31")


def _frame(torch):
    return torch.empty(1, 3, IMAGE, IMAGE, dtype=torch.float16, device="cuda")


def case_text(orig_size=None):
    def make_inputs(model):
        import torch
        emb = torch.empty(1, TEXT_TOKENS, TEXT_WIDTH, dtype=torch.float16, device="cuda")
        mask = torch.ones(1, TEXT_TOKENS, dtype=torch.int64, device="cuda")  # nodes_sam3.py:36-37
        return (_frame(torch), emb, mask)

    def call(model, frame, emb, mask):
        # nodes_sam3.py:209-211 (threshold only filters afterwards, :217-219)
        return model.diffusion_model(frame, text_embeddings=emb, text_mask=mask, boxes=None, threshold=0.5,
                                     orig_size=orig_size)
    return make_inputs, call


def case_node(width: int, height: int, refine_iterations: int = 2, frames: int = 1):
    """SAM3_Detect.execute's GPU work for ``frames`` images of W x H, one text prompt and ONE kept detection per
    image, line by line with the node's own variable names, so that what a Python name keeps alive from one image
    into the next (``results`` / ``masks`` / ``kept_masks`` until rebound, the GPU union masks in ``all_masks``)
    lives as long as in the node (nodes_sam3.py:176-244; the image / crop resizes run on the CPU, :118 / :65, and
    arrive as the fp16 1008 x 1008 frame): the detector forward with orig_size=(H, W) (:209-211, the masks
    upsampled at detector.py:482), the kept detection's copies (:221 masks[keep], :226 [order]), then _refine_mask
    (:42-84): refine_iterations forward_segment passes on the 1008 x 1008 crop with the coarse mask resized to
    1008 x 1008 (:75-78), the refined crop pasted into a full-size mask and the coarse mask upsampled (:80-84), the
    union (:240-244, individual_masks False) appended to all_masks on the GPU (moved off at :253, after the
    loop). The detection box is taken as the whole image (the largest crop). A data-dependent ``masks[keep]`` cannot
    run on fake tensors: one detection is a fixed index."""
    import torch.nn.functional as F
    H, W, B = height, width, frames

    def make_inputs(model):
        import torch
        emb = torch.empty(1, TEXT_TOKENS, TEXT_WIDTH, dtype=torch.float16, device="cuda")
        mask = torch.ones(1, TEXT_TOKENS, dtype=torch.int64, device="cuda")
        return (emb, mask)

    def call(model, text_embeddings, text_mask):
        import torch
        sam3_model = model.diffusion_model
        all_masks = []
        for b in range(B):  # :176
            frame = torch.empty(1, 3, IMAGE, IMAGE, dtype=torch.float16, device="cuda")  # :177 (from the CPU)
            frame_masks = []  # :183
            results = sam3_model(frame, text_embeddings=text_embeddings, text_mask=text_mask, boxes=None,
                                 threshold=0.5, orig_size=(H, W))  # :209-211
            masks = results["masks"][0]  # :215
            probs = results["scores"][0].sigmoid()  # :214, :217
            keep_idx = torch.zeros(1, dtype=torch.int64, device=masks.device)  # one detection above the threshold
            kept_scores = probs.index_select(0, keep_idx)  # :220 (moved to the CPU there: a few bytes)
            kept_masks = masks.index_select(0, keep_idx)  # :221 masks[keep] (a copy)
            order = kept_scores.argsort(descending=True)[:1]  # :223 (max_det 1)
            kept_masks = kept_masks[order]  # :226 (a copy)
            for m in kept_masks:  # :234-236 -> _refine_mask(..., refine_iterations)
                if refine_iterations <= 0:  # :51-52 -> _coarse_fallback (:47-49)
                    frame_masks.append((F.interpolate(m.unsqueeze(0).unsqueeze(0), size=(H, W), mode="bilinear",
                                                      align_corners=False)[0] > 0).float())
                    continue
                crop_frame = torch.empty(1, 3, IMAGE, IMAGE, dtype=torch.float16, device="cuda")  # :65-66
                cy1, cx1, cy2, cx2 = 0, 0, H, W  # the box + 10 % clipped to the image (:55-60): whole image
                mask_h, mask_w = m.shape[-2:]
                mask_logit = m[..., int(cy1 / H * mask_h):int(cy2 / H * mask_h),
                               int(cx1 / W * mask_w):int(cx2 / W * mask_w)].unsqueeze(0).unsqueeze(0)  # :71-75
                for _ in range(refine_iterations):
                    coarse_input = F.interpolate(mask_logit, size=(IMAGE, IMAGE), mode="bilinear", align_corners=False)
                    mask_logit = sam3_model.forward_segment(crop_frame, mask_inputs=coarse_input)
                refined_crop = F.interpolate(mask_logit, size=(cy2 - cy1, cx2 - cx1), mode="bilinear",
                                             align_corners=False)  # :80
                full_mask = torch.zeros(1, 1, H, W, device=m.device, dtype=m.dtype)  # :81
                full_mask[:, :, cy1:cy2, cx1:cx2] = refined_crop  # :82
                coarse_full = F.interpolate(m.unsqueeze(0).unsqueeze(0), size=(H, W), mode="bilinear",
                                            align_corners=False)  # :83
                frame_masks.append(((full_mask[0] > 0) | (coarse_full[0] > 0)).float())  # :84
                del crop_frame, mask_logit, coarse_input, refined_crop, full_mask, coarse_full  # _refine_mask returns
            combined = torch.cat(frame_masks, dim=0)  # :240
            all_masks.append((combined > 0).any(dim=0).float())  # :244 (individual_masks False)
        return all_masks
    return make_inputs, call


EXTRA = {}  # what a case stashes besides the peak (case_backbone: its outputs' bytes)


def _fake_connected_components(mask_bin):
    """tracker.py:97-113 (_get_connected_components) without its CPU round trip: cv2 / scipy label a NumPy copy,
    which a fake tensor cannot give. The result is what it returns on the GPU: int32 labels and areas, each
    [B, 1, H, W] on the mask's device (:110-113); their values only pick which small regions get filled."""
    import torch
    z = torch.zeros(mask_bin.shape, dtype=torch.int32, device=mask_bin.device)
    return z, torch.zeros_like(z)


def _suppress_recently_occluded(low_res_masks, last_occluded, frame_idx, threshold=0.3):
    """tracker.py:1486-1507 with its two boolean-mask writes (``last_occluded[newly_occluded] = frame_idx``,
    ``low_res_masks[to_suppress] = -10.0``) as torch.where into the same tensors: a fake tensor cannot index by a
    data-dependent mask. The temporaries ([N_obj, 288, 288] masks, [N_obj, N_obj] overlaps) are the original's."""
    import torch
    from comfy.ldm.sam3.tracker import _compute_mask_overlap
    n_obj = low_res_masks.shape[0]
    if n_obj <= 1:
        return low_res_masks
    binary = low_res_masks[:, 0] > 0
    iou = _compute_mask_overlap(low_res_masks[:, 0], low_res_masks[:, 0])
    overlapping = torch.triu(iou >= threshold, diagonal=1)
    last_i, last_j = last_occluded.unsqueeze(1), last_occluded.unsqueeze(0)
    suppress_i = overlapping & (last_i > last_j) & (last_j > -1)
    suppress_j = overlapping & (last_j > last_i) & (last_i > -1)
    to_suppress = suppress_i.any(dim=1) | suppress_j.any(dim=0)
    is_empty = ~binary.any(dim=(-1, -2))
    newly_occluded = is_empty | to_suppress
    last_occluded.copy_(torch.where(newly_occluded, frame_idx, last_occluded))
    low_res_masks.copy_(torch.where(to_suppress[:, None, None, None], -10.0, low_res_masks))
    return low_res_masks


@contextlib.contextmanager
def tracker_fake_safe():
    """The two data-dependent helpers of the video tracker, fake-tensor safe (above); restored afterwards."""
    import comfy.ldm.sam3.tracker as tr
    saved = (tr._get_connected_components, tr.SAM31Tracker._suppress_recently_occluded)
    tr._get_connected_components = _fake_connected_components
    tr.SAM31Tracker._suppress_recently_occluded = staticmethod(_suppress_recently_occluded)
    try:
        yield
    finally:
        tr._get_connected_components = saved[0]
        tr.SAM31Tracker._suppress_recently_occluded = staticmethod(saved[1])


def _backbone_fn(sam3):
    """detector.py:569-575 (forward_video's backbone_fn, the multiplex SAM 3.1 path)."""
    bb = sam3.detector.backbone["vision_backbone"]

    def backbone_fn(frame, frame_idx=None):
        trunk_out = bb.trunk(frame)
        _, _, tf, tp = bb(frame, tracker_mode="propagation", cached_trunk=trunk_out, tracker_only=True)
        return tf, tp, trunk_out
    return backbone_fn


def _prep_frame(width, height):
    """tracker.py:207-209: one full-size frame moved to the GPU in the model's dtype and stretched (bicubic) to
    1008 x 1008. The frames themselves stay on the CPU (nodes_sam3.py:296, images[..., :3].movedim(-1, 1))."""
    import torch
    import comfy.utils
    x = torch.empty(1, 3, height, width, dtype=torch.float16, device="cuda")
    return comfy.utils.common_upscale(x, IMAGE, IMAGE, "bicubic", crop="disabled")


def _bytes_of(obj) -> int:
    seen, total = set(), 0
    for t in twm._tensors_in(obj):
        key = t.untyped_storage()._cdata
        if key not in seen:
            seen.add(key)
            total += t.untyped_storage().nbytes()
    return total


def case_backbone(width: int, height: int):
    """One frame's _compute_backbone_frame (tracker.py:1481-1483, what the tracker prefetches for the next frame on
    a second CUDA stream, :1690-1694): its peak, and in EXTRA the bytes of what it returns (kept until that frame
    is tracked)."""
    def make_inputs(model):
        return ()

    def call(model):
        sam3 = model.diffusion_model
        out = sam3.tracker._compute_backbone_frame(_backbone_fn(sam3), _prep_frame(width, height), frame_idx=0)
        EXTRA["backbone_out_bytes"] = _bytes_of(out)
        return out
    return make_inputs, call


def case_track(width: int, height: int, objects: int = 4, frames: int = 20, parts: int = 1):
    """SAM3_VideoTrack.execute's GPU work (nodes_sam3.py:284-306) with one text prompt: forward_video
    (detector.py:563-594) -> SAM31Tracker.track_video_with_detection (tracker.py:1648-1790) over ``frames`` frames of
    width x height, line by line with the code's own names, so that what output_dict keeps (the conditioning frame
    and the last lookback = max(num_maskmem 7, max_obj_ptrs 16) = 16 propagation frames, :1736-1739) lives as long
    as there. Data-dependent choices are fixed, each toward more memory:
    - ``objects`` detections are kept on frame 0 (the scores above the threshold, :1699-1703) and seed the
      MultiplexState (:1722-1731); they stay matched after that, so no object is added (the count the node's
      max_objects caps, :1625-1632).
    - detection runs on EVERY frame (the code stops it once max_objects are tracked, :1695-1698) and every
      detection is high-confidence and matched, so each frame takes the recondition path: the tracked masks are
      overwritten by the detections and the memory re-encoded (:1603-1619).
    - the frames run one after the other; the next frame's backbone, which the code starts on a second CUDA stream
      before this frame's tracking work (:1686-1694), is computed first and held, as its outputs are. What the two
      streams' overlapping temporaries add is bounded separately (case_backbone; families/sam3.py).
    The mask packing's GPU temporaries (pack_masks, :1764) are included; the packed masks go to the CPU (:1764, the
    intermediate device), so they are not kept. ``parts``: the prompt's comma-separated parts (sam3_clip.py:29-43),
    each its own [1, 32, 1024] embedding that the detector runs on every frame (detector.py:581-587)."""
    import torch.nn.functional as F

    def make_inputs(model):
        import torch
        emb = torch.empty(1, TEXT_TOKENS, TEXT_WIDTH, dtype=torch.float16, device="cuda")
        mask = torch.ones(1, TEXT_TOKENS, dtype=torch.int64, device="cuda")  # nodes_sam3.py:36-37
        return (emb, mask)

    def call(model, emb, text_mask):
        import torch
        import comfy.ldm.sam3.tracker as tr
        embs = [emb] + [torch.empty_like(emb) for _ in range(parts - 1)]
        sam3 = model.diffusion_model
        trk = sam3.tracker
        bb = sam3.detector.backbone["vision_backbone"]
        device, dt = "cuda", torch.float16
        backbone_fn = _backbone_fn(sam3)
        resizer = sam3.detector.backbone["language_backbone"]["resizer"]
        resized = [(resizer(e), text_mask.bool()) for e in embs]  # detector.py:579-580

        def detect_fn(trunk_out):  # detector.py:581-587
            all_scores, all_masks = [], []
            for e, m in resized:
                det = sam3.detector.forward_from_trunk(trunk_out, e, m)
                all_scores.append(det["scores"])
                all_masks.append(det["masks"])
            return {"scores": torch.cat(all_scores, dim=1), "masks": torch.cat(all_masks, dim=1)}

        N = frames
        output_dict = {"cond_frame_outputs": {}, "non_cond_frame_outputs": {}}  # :1657
        mux_state = None
        last_occluded = torch.empty(0, device=device, dtype=torch.long)  # :1665
        cur_bb = trk._compute_backbone_frame(backbone_fn, _prep_frame(width, height), frame_idx=0)  # :1676
        keep_idx = torch.arange(objects, device=device)
        for frame_idx in range(N):  # :1678
            vision_feats, vision_pos, feat_sizes, high_res_prop, trunk_out = cur_bb
            next_bb = None
            if frame_idx + 1 < N:  # :1682-1685 (the prefetch stream)
                next_bb = trk._compute_backbone_frame(backbone_fn, _prep_frame(width, height),
                                                      frame_idx=frame_idx + 1)
            det_out = detect_fn(trunk_out)  # :1696-1703
            scores = det_out["scores"][0].sigmoid()
            det_masks, det_scores = det_out["masks"][0].index_select(0, keep_idx), scores.index_select(0, keep_idx)
            if objects > 1:  # _nms_masks (:84-94): the reorder and the kept rows, two copies
                order = det_scores.argsort(descending=True)
                det_masks, det_scores = det_masks[order], det_scores[order]
                det_masks, det_scores = det_masks.index_select(0, keep_idx), det_scores.index_select(0, keep_idx)
            if frame_idx == 0:  # :1720-1733 (no initial mask: the first detections seed the tracks)
                mux_state = tr.MultiplexState(objects, trk.num_multiplex, device, dt)
                current_out = trk._condition_with_masks(
                    det_masks, frame_idx, vision_feats, vision_pos, feat_sizes, high_res_prop, output_dict, N,
                    mux_state, bb, _prep_frame(width, height), trunk_out, threshold=0.0)
                last_occluded = torch.full((objects,), -1, device=device, dtype=torch.long)
            else:  # :1745-1761
                current_out = trk.track_step(
                    frame_idx=frame_idx, is_init_cond_frame=False, current_vision_feats=vision_feats,
                    current_vision_pos_embeds=vision_pos, feat_sizes=feat_sizes, mask_inputs=None,
                    output_dict=output_dict, num_frames=N, propagation_high_res=high_res_prop,
                    multiplex_state=mux_state, run_mem_encoder=False)
                current_out["pred_masks"] = tr.fill_holes_in_mask_scores(current_out["pred_masks"], max_area=16)
                if last_occluded.shape[0] == objects and objects > 1:
                    trk._suppress_recently_occluded(current_out["pred_masks"], last_occluded, frame_idx)
                trk._deferred_memory_encode(current_out, objects, vision_feats, feat_sizes, mux_state, device)
                output_dict["non_cond_frame_outputs"][frame_idx] = current_out
                lookback = max(trk.num_maskmem, trk.max_obj_ptrs_in_encoder)
                for old_idx in list(output_dict["non_cond_frame_outputs"]):
                    if old_idx < frame_idx - lookback:
                        del output_dict["non_cond_frame_outputs"][old_idx]
                # _match_and_add_detections (:1577-1640): every detection matches a track and is >= 0.8
                trk_masks = current_out["pred_masks"][:, 0]
                det_resized = F.interpolate(det_masks.unsqueeze(1), size=trk_masks.shape[-2:], mode="bilinear",
                                            align_corners=False)[:, 0]
                overlap = tr._compute_mask_overlap(det_resized, trk_masks)
                for det_idx in range(objects):
                    current_out["pred_masks"][det_idx] = det_resized[det_idx].unsqueeze(0)
                    det_hr = F.interpolate(det_masks[det_idx:det_idx + 1].unsqueeze(1),
                                           size=current_out["pred_masks_high_res"].shape[-2:], mode="bilinear",
                                           align_corners=False)
                    current_out["pred_masks_high_res"][det_idx] = det_hr[0]
                    del det_hr
                trk._deferred_memory_encode(current_out, objects, vision_feats, feat_sizes, mux_state, device)
                del trk_masks, det_resized, overlap
            masks_out = current_out["pred_masks_high_res"][:, 0]  # :1762-1767
            packed = tr.pack_masks(masks_out)  # .to(idev): to the CPU, not kept on the GPU
            del packed, masks_out, det_out, scores, det_masks, det_scores, current_out
            del vision_feats, vision_pos, feat_sizes, high_res_prop, trunk_out
            cur_bb = next_bb  # :1772-1775
        return None
    return make_inputs, call


def case_segment(kind):
    def make_inputs(model):
        import torch
        frame = _frame(torch)
        if kind == "refine":  # nodes_sam3.py:76-78: the coarse mask resized to 1008 x 1008
            return (frame, dict(mask_inputs=torch.empty(1, 1, IMAGE, IMAGE, dtype=torch.float16, device="cuda")))
        if kind == "box":  # nodes_sam3.py:195-199
            return (frame, dict(box_inputs=torch.empty(1, 2, 2, dtype=torch.float16, device="cuda")))
        return (frame, dict(point_inputs={  # nodes_sam3.py:160-167, one positive point
            "point_coords": torch.empty(1, 1, 2, dtype=torch.float16, device="cuda"),
            "point_labels": torch.ones(1, 1, dtype=torch.int32, device="cuda")}))

    def call(model, frame, kw):
        return model.diffusion_model.forward_segment(frame, **kw)
    return make_inputs, call


_UPSAMPLE_VEC = ("upsample_bilinear2d", "upsample_nearest2d", "_upsample_bilinear2d_aa")


@contextlib.contextmanager
def eager_upsample(names=_UPSAMPLE_VEC):
    """F.interpolate's ``aten.upsample_*2d.vec`` as eager CUDA runs it. The tracker decomposes ops without a CUDA
    kernel through ``OpOverload.decompose``, which prefers torch._decomp's Python CompositeImplicitAutograd kernel:
    for these ops that is an elementwise float32 re-implementation of the resize (several full-size intermediates).
    Eager PyTorch on a GPU does not run the Python dispatcher: the C++ composite kernel computes the output size and
    calls ``aten.upsample_*2d.default``, one CUDA kernel that allocates only its output. Hiding the Python kernel
    for the trace makes ``decompose`` take that C++ kernel, so the tracker sees the ``.default`` op."""
    from torch._C import DispatchKey
    import torch

    saved = []
    for name in names:
        op = getattr(torch.ops.aten, name).vec
        k = op.py_kernels.pop(DispatchKey.CompositeImplicitAutograd, None)
        saved.append((op, k))
    try:
        yield
    finally:
        for op, k in saved:
            if k is not None:
                op.py_kernels[DispatchKey.CompositeImplicitAutograd] = k


def _prompt_encoder_forward(self, points=None, boxes=None, masks=None):
    """tracker.py:544-577 (SAMPromptEncoder.forward) with its boolean-mask writes (:556-560, ``pe[labels == i] +=``,
    ``pe[invalid] = 0``) as torch.where: a fake tensor cannot index by a data-dependent mask (aten.nonzero). Same
    shapes and dtypes; the point embeddings are [B, points + 1, 256] (a few KB), so the trace is unchanged but for
    those bytes. Every other line is the original."""
    import torch
    from comfy.ldm.sam3.tracker import cast_to_input

    ref = points[0] if points is not None else boxes if boxes is not None else masks
    B = 1
    sparse = torch.empty((B, 0, self.embed_dim), device=ref.device, dtype=ref.dtype)
    if points is not None:
        coords, labels = points
        B = coords.shape[0]
        if boxes is None:
            coords = torch.cat([coords, torch.zeros(B, 1, 2, device=coords.device, dtype=coords.dtype)], dim=1)
            labels = torch.cat([labels, -torch.ones(B, 1, device=labels.device, dtype=labels.dtype)], dim=1)
        pe = self.pe_layer.forward_with_coords(coords + 0.5, self.input_image_size)
        for i in range(4):
            pe = pe + (labels == i).unsqueeze(-1).to(pe.dtype) * cast_to_input(self.point_embeddings[i].weight, ref)
        invalid = (labels == -1).unsqueeze(-1)
        pe = torch.where(invalid, cast_to_input(self.not_a_point_embed.weight, ref).to(pe.dtype), pe)
        sparse = torch.cat([sparse.expand(B, -1, -1), pe], dim=1)
    if boxes is not None:
        B = boxes.shape[0]
        corners = self.pe_layer.forward_with_coords((boxes.reshape(-1, 2, 2) + 0.5), self.input_image_size)
        corners[:, 0] += cast_to_input(self.point_embeddings[2].weight, ref)
        corners[:, 1] += cast_to_input(self.point_embeddings[3].weight, ref)
        sparse = torch.cat([sparse.expand(B, -1, -1), corners], dim=1)
    if masks is not None:
        dense = self.mask_downscaling(masks)
    else:
        dense = cast_to_input(self.no_mask_embed.weight, ref).reshape(1, -1, 1, 1).expand(
            B, -1, self.image_embedding_size[0], self.image_embedding_size[1])
    return sparse, dense


@contextlib.contextmanager
def prompt_encoder_fake_safe():
    import comfy.ldm.sam3.tracker as tr

    orig = tr.SAMPromptEncoder.forward
    tr.SAMPromptEncoder.forward = _prompt_encoder_forward
    try:
        yield
    finally:
        tr.SAMPromptEncoder.forward = orig


def run_case(name: str, python_upsample: bool = False) -> dict:
    if name == "text":
        make_inputs, call = case_text()
    elif name.startswith("text@"):
        w, h = (int(v) for v in name[5:].split("x"))
        make_inputs, call = case_text((h, w))
    elif name.startswith("node@"):  # node@WxH[:R][*FRAMES]
        rest, _, frames = name[5:].partition("*")
        size, _, r = rest.partition(":")
        w, h = (int(v) for v in size.split("x"))
        make_inputs, call = case_node(w, h, int(r) if r else 2, int(frames) if frames else 1)
    elif name in ("refine", "box", "point"):
        make_inputs, call = case_segment(name)
    elif name.startswith("track@"):  # track@WxH[:OBJECTS][*FRAMES][+PARTS]
        rest, _, parts = name[6:].partition("+")
        rest, _, frames = rest.partition("*")
        size, _, k = rest.partition(":")
        w, h = (int(v) for v in size.split("x"))
        make_inputs, call = case_track(w, h, int(k) if k else 4, int(frames) if frames else 20,
                                       int(parts) if parts else 1)
    elif name.startswith("backbone@"):
        w, h = (int(v) for v in name[9:].split("x"))
        make_inputs, call = case_backbone(w, h)
    else:
        raise SystemExit(f"unknown case {name}")
    EXTRA.clear()
    names = _UPSAMPLE_VEC + ("upsample_bicubic2d",)  # the frame's bicubic stretch (tracker.py:209)
    with (contextlib.nullcontext() if python_upsample else eager_upsample(names)), prompt_encoder_fake_safe(), \
            tracker_fake_safe():
        res = twm.run_trace(build, make_inputs, call, deadline_s=3000)
    return {"case": name, "upsample": "python decomposition" if python_upsample else "eager (C++ composite)",
            "peak_bytes": res.peak_bytes, "peak_mib": round(res.peak_bytes / 2**20, 2),
            "input_bytes": res.input_bytes, "param_bytes": res.param_bytes, "peak_op": res.peak_op,
            "peak_module": res.peak_module, "n_ops": res.n_ops, "attention_calls": res.attention_calls,
            "seconds": res.seconds, "decomposed": res.decomposed, **EXTRA}


# the points of families/sam3.py SAM31_DETECT_TRACE (node@WxH[:R][*N]) and the single forwards
DEFAULT_CASES = ["text", "text@1024x1024", "refine", "box", "point",
                 "node@1024x1024", "node@720x720", "node@1280x720", "node@512x512", "node@1024x1024:5",
                 "node@1024x1024:1", "node@1024x1024:0", "node@1024x1024*2", "node@1024x1024*3", "node@720x720*3",
                 "node@1024x1024:0*2", "node@256x256*2", "node@128x128*3", "node@640x480*2", "node@512x512*4"]


def main(argv=None) -> int:
    argv = list(argv if argv is not None else sys.argv[1:])
    python_upsample = "--python-upsample" in argv  # the tracker's default decomposition (overcounts, see above)
    argv = [a for a in argv if a != "--python-upsample"]
    cases = argv or DEFAULT_CASES
    twm.import_comfy()
    import torch
    print(json.dumps({"torch": torch.__version__, "comfyui": getattr(__import__("comfyui_version"), "__version__", "?"),
                      "comfy_path": twm.COMFY_PATH}), flush=True)
    for name in cases:
        print(json.dumps(run_case(name, python_upsample)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
