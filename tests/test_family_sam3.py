"""SAM 3 / SAM 3.1 (ComfyUI 0.33.0 comfy/ldm/sam3, comfy/text_encoders/sam3_clip.py, comfy_extras/nodes_sam3.py;
families/sam3.py and graph/packs/nodes_sam3.py): the all-in-one checkpoint's parts (the CLIP text encoder, priced
with the text-encoder formula at its 32 tokens, and the detector + tracker), and SAM3_Detect / SAM3_VideoTrack read
as GPU stages that hold the model's weights and say why their working memory is not estimated, so the templates
that run them say "can't tell" instead of "fits"."""
import json
from dataclasses import replace
from types import MappingProxyType

import pytest

from workflows.templates import template_workflow
from vram_budget.nodes.estimator import memory, resolve
from vram_budget.nodes.estimator.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families.sam3 import (ORDER, P_SAM3_TEXT, P_SAM3_VIT_TRUNK, P_SAM31_FILE,
                                                       P_SAM31_MODEL, SAM3_TEXT_TOKENS)
from vram_budget.nodes.estimator.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs.nodes_sam3 import backbone_maps_bytes, query_masks_bytes
from vram_budget.nodes.estimator.model_info import CHECKPOINT, DIFFUSION, TEXT_ENCODER
from vram_budget.nodes.estimator.planning import estimate
from vram_budget.nodes.estimator.published import catalogue_info
from vram_budget.nodes.estimator.resolve import part_of
from vram_budget.nodes.estimator.workload import LatentShape, ModelRef

RTX4090 = Device.from_card(find_card("RTX 4090"))
CKPT = "sam3.1_multiplex_fp16.safetensors"
TEMPLATES = ("utility_image_segment_sam3", "utility_video_segment_sam3", "video_wan_vace_inpainting",
             "video_wan21_scail2_character_replacement", "video_wan21_scail2_character_replacement_int8")


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


def test_the_backbone_and_mask_figures_come_from_the_shapes():
    # 3 FPN levels of 256 channels at 288^2, 144^2, 72^2 (1008 / 14 = 72 times 4, 2, 1): detector + tracker
    # features and 16-bit positions (4 x 2 bytes) and the float32 sine cache (4 bytes)
    assert backbone_maps_bytes() == (288 ** 2 + 144 ** 2 + 72 ** 2) * 256 * 12
    assert query_masks_bytes(1920, 1080) == 200 * 1920 * 1080 * 2


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


@pytest.mark.parametrize("name, why", [("utility_image_segment_sam3", "SAM 3 / 3.1's detector"),
                                       ("video_wan21_scail2_character_replacement_int8", "known only at run time")])
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
