"""SAM 3 / SAM 3.1 (ComfyUI 0.33.0 comfy/ldm/sam3, comfy/text_encoders/sam3_clip.py, comfy_extras/nodes_sam3.py;
families/sam3.py and graph/packs/nodes_sam3.py): the all-in-one checkpoint's parts (the CLIP text encoder, priced
with the text-encoder formula at its 32 tokens, and the detector + tracker); SAM3_Detect's working memory traced
with ComfyUI 0.33.0's own model code (bench/trace_sam3.py: a constant at 1008 x 1008 x the calibration, plus the
masks at the input's own size), so the templates whose only gap was the detector are complete; SAM3_VideoTrack's
tracker traced the same way for at most max_objects objects (any frame count and size), so the SCAIL 2 templates
are complete; SAM3_Detect on a loaded video's unknown frame count still says why it is not estimated."""
import json
from dataclasses import replace
from types import MappingProxyType

import pytest

from workflows.templates import template_workflow
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.machine import resolve
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families import sam3 as F
from vram_budget.nodes.estimator.families.sam3 import (ORDER, P_SAM3_TEXT, P_SAM3_VIT_TRUNK, P_SAM31_FILE,
                                                       P_SAM31_MODEL, SAM3_TEXT_TOKENS)
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA
from vram_budget.nodes.estimator.graph.packs.nodes_sam3 import prompt_parts
from vram_budget.nodes.estimator.model_info import CHECKPOINT, DIFFUSION, TEXT_ENCODER
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.machine.resolve import part_of
from vram_budget.nodes.estimator.workload import LatentShape, ModelRef

RTX4090 = Device.from_card(find_card("RTX 4090"))
CKPT = "sam3.1_multiplex_fp16.safetensors"
COMPLETE = ("utility_image_segment_sam3", "video_wan_vace_inpainting")  # their only gap was SAM3_Detect
# a loaded video's frame count (SAM3_Detect): still "can't tell"
TEMPLATES = ("utility_video_segment_sam3",)
# SAM3_VideoTrack (traced for max_objects 4; the int8 one's prompt has two parts) on a video of unknown length
TRACKED = ("video_wan21_scail2_character_replacement", "video_wan21_scail2_character_replacement_int8")


def _clip_text_params(vocab, positions, width, ffn, layers):
    """comfy/clip_model.py CLIPTextModel: embeddings, layers (q/k/v/out with bias, fc1/fc2, 2 norms), final norm,
    text_projection (width x width, no bias)."""
    layer = 4 * (width * width + width) + (width * ffn + ffn) + (ffn * width + width) + 2 * 2 * width
    return vocab * width + positions * width + layers * layer + 2 * width + width * width


def test_the_family_lives_in_one_module_with_counts_from_the_code():
    assert registry.module_of("sam3.1") == "sam3" and registry.module_of("sam3-clip") == "sam3"
    assert 170 <= ORDER <= 179
    # sam3_clip.py:4-16 SAM3_CLIP_CONFIG
    assert P_SAM3_TEXT == _clip_text_params(49408, 32, 1024, 4096, 24) == 353_986_560
    # sam.py:224 ViTDet: 32 blocks of width 1024, FFN int(1024 * 4.625) = 4736, patch 14, 577 position rows
    block = (1024 * 3072 + 3072) + (1024 * 1024 + 1024) + 4 * 1024 + (1024 * 4736 + 4736) + (4736 * 1024 + 1024)
    assert P_SAM3_VIT_TRUNK == 32 * block + 577 * 1024 + 3 * 14 * 14 * 1024 + 2048 == 446_237_696
    assert P_SAM31_FILE == 858_993_459 and P_SAM31_MODEL + P_SAM3_TEXT == P_SAM31_FILE
    rest = P_SAM31_MODEL - P_SAM3_VIT_TRUNK  # FPN sets + detector + tracker: tens of millions, not hundreds
    assert 20_000_000 < rest < 100_000_000
    assert FAMILIES["sam3-clip"].kind == TEXT_ENCODER and FAMILIES["sam3.1"].kind == DIFFUSION


def test_the_text_encoder_is_priced_at_its_32_tokens_and_the_detector_never_by_the_dit_formula():
    arch = FAMILIES["sam3-clip"].arch
    work = memory.text_encoder_working("sam3-clip", arch)
    assert work.tokens == SAM3_TEXT_TOKENS == 32
    assert work.bytes == 32 * (6 * 1024 + 2 * 4096) * 2
    # no hidden_size on the detector family: the DiT formula gives no (made-up) figure for a detector forward
    latent = LatentShape(1, 3, 1008, 1008, pixel_height=1008, pixel_width=1008, spatial_compression=1)
    assert memory.diffusion_working("sam3.1", FAMILIES["sam3.1"].arch, latent, 1) is None


def test_the_traced_constants_and_their_phases_reproduce_every_traced_point():
    # bench/trace_sam3.py, ComfyUI 0.33.0, 2026-12-03: the detector forward at 1008 x 1008, the live bytes when its
    # masks are upsampled (detector.py:482), the refine passes (nodes_sam3.py:42-84)
    assert F.SAM31_DETECT_PEAK == 413_823_763 and F.SAM31_AT_UPSAMPLE == 318_154_034
    assert F.SAM31_REFINE_PEAK == {1: 359_340_148, 2: 361_372_276}
    assert F.UPSAMPLED_MASKS_PER_PIXEL == 200 * 2  # [1, 200, H, W] fp16
    assert "bench/trace_sam3.py" in F.SAM31_DETECT_TRACE_SOURCE and "2026-12-03" in F.SAM31_DETECT_TRACE_SOURCE
    assert len(F.SAM31_DETECT_TRACE) >= 10
    for (w, h, n, r), traced in F.SAM31_DETECT_TRACE.items():
        assert F.detect_peak(w, h, n, r) == traced, (w, h, n, r)
    # one image: the refine passes with the 200 upsampled masks and the kept copy: 402 bytes a pixel on the constant
    assert F.detect_peak(1920, 1080) == F.SAM31_REFINE_PEAK[2] + 402 * 1920 * 1080
    # a small image: the detector's own constant
    assert F.detect_peak(64, 64) == F.SAM31_DETECT_PEAK


def test_prompt_parts_follow_sam3_clip():
    assert prompt_parts("guitar") == [("guitar", 1)]
    assert prompt_parts("cat, dog:3") == [("cat", 1), ("dog", 3)]
    assert prompt_parts("(person)") == [("person", 1)]


def _as_family(info):
    return replace(info, family="sam3.1", arch=MappingProxyType(dict(FAMILIES["sam3.1"].arch)))


def test_the_checkpoint_splits_into_text_encoder_and_detector_by_parameter_counts():
    info = catalogue_info(CKPT, "checkpoints")
    assert info.kind == CHECKPOINT and info.weights_bytes == 1_717_986_918
    info = _as_family(info)  # what the catalogue row gives once its family is "sam3.1"
    clip = part_of(info, ModelRef(name=CKPT, role="text_encoder", folder="checkpoints", part="clip"))
    model = part_of(info, ModelRef(name=CKPT, role="diffusion", folder="checkpoints", part="model"))
    assert (clip.kind, clip.family, clip.params) == (TEXT_ENCODER, "sam3-clip", P_SAM3_TEXT)
    assert (model.kind, model.family, model.params) == (DIFFUSION, "sam3.1", P_SAM31_MODEL)
    assert clip.weights_bytes == pytest.approx(2 * P_SAM3_TEXT, abs=2)
    assert clip.weights_bytes + model.weights_bytes == pytest.approx(info.weights_bytes, abs=2)


def _budget(name):
    return estimate(read_workflow(template_workflow(name)), RTX4090)


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_templates_no_longer_say_fits_with_an_unpriced_sam3_forward(name):
    budget = _budget(name)
    out = budget.to_dict()
    assert out["complete"] is False and out["verdict"] == "unknown"
    sam = [s for s in budget.stages if s.stage.node_type in ("SAM3_Detect", "SAM3_VideoTrack")]
    assert sam and all(any(it.category == "weights" and it.bytes > 0 for it in s.items) for s in sam)
    json.dumps(out)


def _detect_stage(budget):
    (stage,) = [s for s in budget.stages if s.stage.node_type == "SAM3_Detect"]
    return {it.label: it for it in stage.items if it.category == "working"}


@pytest.mark.parametrize("name", COMPLETE)
def test_the_templates_whose_only_gap_was_the_detector_are_complete(name):
    budget = _budget(name)
    out = budget.to_dict()
    assert out["complete"] is True and out["verdict"] != "unknown", out["incomplete"]
    items = _detect_stage(budget)
    traced = items["detector activations (traced)"]
    k = memory.calibration("sam3.1")
    constants = (F.SAM31_DETECT_PEAK, F.SAM31_AT_UPSAMPLE, *F.SAM31_REFINE_PEAK.values())
    assert traced.bytes in {int((c + extra) * k) for c in constants for extra in (0, F.SAM31_PREVIOUS_IMAGE_BYTES)}
    assert "bench/trace_sam3.py" in traced.assumption and "ComfyUI 0.33.0" in traced.assumption
    json.dumps(out)


def test_the_image_template_uses_the_traced_constant_and_masks_at_the_input_size():
    wf = template_workflow("utility_image_segment_sam3")
    k = memory.calibration("sam3.1")
    items = _detect_stage(_budget("utility_image_segment_sam3"))  # no input folder: LoadImage assumed 1 MP, said
    assert items["detector activations (traced)"].bytes == int(F.SAM31_REFINE_PEAK[2] * k)
    masks = items["masks at the input's size (1024×1024)"]
    assert masks.bytes == 402 * 1024 * 1024 and "assumed: 1 megapixel" in masks.assumption
    sizes = {}
    for w, h in ((1920, 1080), (640, 480), (128, 96)):
        token = INPUT_MEDIA.set(lambda name, w=w, h=h: (w, h, 1))
        try:
            sizes[(w, h)] = _detect_stage(estimate(read_workflow(wf), RTX4090))
        finally:
            INPUT_MEDIA.reset(token)
    # the mask term follows the input's own size; the traced constant does not
    assert sizes[(1920, 1080)]["masks at the input's size (1920×1080)"].bytes == 402 * 1920 * 1080
    assert sizes[(640, 480)]["masks at the input's size (640×480)"].bytes == 402 * 640 * 480
    assert "assumed" not in sizes[(640, 480)]["masks at the input's size (640×480)"].assumption
    assert sizes[(1920, 1080)]["detector activations (traced)"].bytes == int(F.SAM31_REFINE_PEAK[2] * k)
    # a small image: the detector forward's own constant is the larger phase (no mask term at that phase)
    assert sizes[(128, 96)]["detector activations (traced)"].bytes == int(F.SAM31_DETECT_PEAK * k)
    assert not any(label.startswith("masks") for label in sizes[(128, 96)])


def test_video_frames_bounded_by_image_from_batch_are_priced_as_an_upper_bound():
    items = _detect_stage(_budget("video_wan_vace_inpainting"))  # ImageFromBatch length 81 -> Resize 720 x 720
    masks = items["masks at the input's size (720×720)"]
    assert masks.bytes == (400 + 406 + 4 * 80) * 720 * 720  # the last frame's upsample phase, 80 earlier unions
    assert "upper bound" in items["detector activations (traced)"].assumption


def test_a_loaded_video_without_a_frame_bound_stays_unknown():
    budget = _budget("utility_video_segment_sam3")
    assert any("SAM 3.1" in gap and "not known before running" in gap for gap in budget.incomplete)


@pytest.mark.parametrize("name, why", [("utility_video_segment_sam3", "not known before running")])
def test_with_the_family_on_the_catalogue_row_the_parts_are_priced(monkeypatch, name, why):
    original = resolve.catalogue_info

    def with_family(n, folder=None):
        info = original(n, folder)
        return _as_family(info) if info is not None and n == CKPT else info

    monkeypatch.setattr(resolve, "catalogue_info", with_family)
    budget = _budget(name)
    text = [s for s in budget.stages if s.stage.kind == "text_encode" and "SAM 3 text encoder" in s.title]
    assert text
    for s in text:
        weights = sum(it.bytes for it in s.items if it.category == "weights")
        assert weights == pytest.approx(2 * P_SAM3_TEXT, abs=2)
        assert any(it.category == "working" and it.bytes > 0 for it in s.items)
    sam = [s for s in budget.stages if s.stage.node_type in ("SAM3_Detect", "SAM3_VideoTrack")]
    assert sam and all(sum(it.bytes for it in s.items if it.category == "weights")
                       == pytest.approx(2 * P_SAM31_MODEL, abs=2) for s in sam)
    assert budget.to_dict()["complete"] is False
    assert any(why in gap for gap in budget.incomplete)


# -- SAM3_VideoTrack: the tracker traced (bench/trace_sam3.py case_track) ---------------------------------------------

def test_the_track_table_is_the_trace_one_object_step_within_a_bucket_and_one_part_step():
    per_object = F.SAM31_TRACK_TRACE[4] - F.SAM31_TRACK_TRACE[3]
    assert per_object == 84_146_839
    for a, b in ((3, 4), (4, 5), (5, 6), (6, 8), (8, 12), (12, 16), (17, 24)):  # the same bucket: one step an object
        assert abs(F.SAM31_TRACK_TRACE[b] - F.SAM31_TRACK_TRACE[a] - (b - a) * per_object) < 1024, (a, b)
    # a 17th object opens a second bucket of 16: a larger step
    assert F.SAM31_TRACK_TRACE[17] - F.SAM31_TRACK_TRACE[16] > 5 * per_object
    assert sorted(F.SAM31_TRACK_TRACE.values()) == [F.SAM31_TRACK_TRACE[k] for k in sorted(F.SAM31_TRACK_TRACE)]
    assert F.SAM31_STREAM_OVERLAP == F.SAM31_BACKBONE_PEAK - F.SAM31_BACKBONE_OUT > 0


@pytest.mark.parametrize("max_objects, objects", [(4, 4), (1, 1), (7, 8), (13, 16), (17, 17), (0, 64), (99, 64),
                                                  (-3, 64), (64, 64)])
def test_track_peak_takes_the_next_traced_count_and_the_cap(max_objects, objects):
    traced, bare = F.track_peak(max_objects)
    assert traced == objects
    assert bare == F.SAM31_TRACK_TRACE[objects] + F.SAM31_STREAM_OVERLAP
    assert F.track_peak(max_objects, parts=3)[1] == bare + 2 * F.SAM31_TRACK_PER_PART


def _track_stages(budget):
    return [s for s in budget.stages if s.stage.node_type == "SAM3_VideoTrack"]


@pytest.mark.parametrize("name", TRACKED)
def test_the_scail2_templates_are_complete_with_the_traced_tracker(name):
    budget = _budget(name)
    out = budget.to_dict()
    assert out["complete"] is True and out["verdict"] != "unknown", out["incomplete"]
    k = memory.calibration("sam3.1")
    parts = 2 if name.endswith("int8") else 1  # 'girl, handkerchief' / 'human'
    stages = _track_stages(budget)
    assert len(stages) == 4
    for s in stages:
        (item,) = [it for it in s.items if it.category == "working"]
        prompt = s.stage.node_id  # the two tracker pairs read different prompts in the int8 template
        assert item.bytes in {int(F.track_peak(4, p)[1] * k) for p in (1, parts)}, prompt
        assert "bench/trace_sam3.py" in item.assumption and "at most 4 tracked object(s)" in item.assumption
    if parts == 2:
        assert any("2 comma-separated parts" in it.assumption for s in stages for it in s.items)
    json.dumps(out)


def _video_track_workflow(max_objects=4, prompt="person", frames_cap=None):
    """LoadVideo -> GetVideoComponents -> SAM3_VideoTrack with a CLIPTextEncode prompt, API format."""
    images = ["3", 0]
    wf = {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": CKPT}},
        "2": {"class_type": "LoadVideo", "inputs": {"file": "clip.mp4"}},
        "3": {"class_type": "GetVideoComponents", "inputs": {"video": ["2", 0]}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": prompt}},
        "6": {"class_type": "SAM3_TrackToMask", "inputs": {"track_data": ["5", 0], "object_indices": ""}},
        "7": {"class_type": "PreviewImage", "inputs": {"images": ["8", 0]}},
        "8": {"class_type": "MaskToImage", "inputs": {"mask": ["6", 0]}},
    }
    if frames_cap:
        wf["9"] = {"class_type": "ImageFromBatch", "inputs": {"image": ["3", 0], "batch_index": 0,
                                                              "length": frames_cap}}
        images = ["9", 0]
    wf["5"] = {"class_type": "SAM3_VideoTrack", "inputs": {
        "images": images, "model": ["1", 0], "conditioning": ["4", 0], "detection_threshold": 0.5,
        "max_objects": max_objects, "detect_interval": 1}}
    return wf


def _track_item(wf):
    budget = estimate(read_workflow(json.dumps(wf)), RTX4090)
    (stage,) = _track_stages(budget)
    (item,) = [it for it in stage.items if it.category == "working"]
    return budget, stage, item


def test_a_loaded_video_of_unknown_size_and_length_is_tracked_at_the_traced_bound():
    k = memory.calibration("sam3.1")
    budget, stage, item = _track_item(_video_track_workflow())
    assert not stage.unpriced and item.bytes == int(F.track_peak(4)[1] * k)
    assert stage.stage.host_output_bytes == 0  # the frame count is not known: said, not assumed
    assert any("grows with the frame count" in n for n in budget.notes)
    # max_objects 0: the tracker's own cap of 64; a three-part prompt adds two traced detector outputs
    _, _, item0 = _track_item(_video_track_workflow(max_objects=0, prompt="a, b, c"))
    assert item0.bytes == int((F.SAM31_TRACK_TRACE[64] + 2 * F.SAM31_TRACK_PER_PART + F.SAM31_STREAM_OVERLAP) * k)
    assert "the tracker's cap" in item0.assumption and "3 comma-separated parts" in item0.assumption


def test_a_frame_bound_prices_the_packed_masks_kept_on_the_cpu():
    _, stage, item = _track_item(_video_track_workflow(max_objects=6, frames_cap=100))
    assert stage.stage.host_output_bytes == 2 * 100 * 6 * (1008 * 1008 // 8)
    _, stage5, _ = _track_item(_video_track_workflow(max_objects=5, frames_cap=100))
    assert stage5.stage.host_output_bytes == 2 * 100 * 5 * (1008 * 1008 // 8)
