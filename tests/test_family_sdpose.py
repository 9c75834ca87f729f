"""SDPose (ComfyUI 0.33.0 comfy_extras/nodes_sdpose.py; families/sdpose.py, graph/packs/nodes_sdpose.py and
graph/packs/nodes_rtdetr.py): the all-in-one checkpoint is split into its SD 2 UNet + heatmap head and the SD KL VAE
('vae-kl4', the class and config sd.py:661-690 builds), SDPoseKeypointExtractor is read as what it runs (a VAE
encode and one UNet forward of 768 x 1024 images: 4 x 128 x 96 latents), and RTDETR_detect's detector is named and
left unpriced rather than ignored."""
import json

import pytest

from helpers_models import spec_params, spec_unet, spec_vae_kl, write_safetensors
from workflows.templates import template_workflow
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.rt_detr import P_RTDETR_X
from vram_budget.nodes.estimator.families.sdpose import ORDER, P_SDPOSE_HEAD, P_SDPOSE_UNET, P_SDPOSE_VAE
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.packs.nodes_sdpose import head_working_bytes
from vram_budget.nodes.estimator.model_info import CHECKPOINT, DIFFUSION, VAE
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.machine.resolve import part_of
from vram_budget.nodes.estimator.workload import LatentShape, ModelRef

RTX4090 = Device.from_card(find_card("RTX 4090"))
CKPT = "sdpose_wholebody_fp16.safetensors"
LATENT = (4, 128, 96)  # 768 x 1024 pixels (HeatmapHead input_size, ldm/modules/sdpose.py:10) through a /8 VAE


def test_the_family_lives_in_one_module():
    assert registry.module_of("sdpose") == "sdpose" and 150 <= ORDER <= 159
    assert FAMILIES["sdpose"].kind == DIFFUSION and FAMILIES["sdpose"].arch["context_dim"] == 1024
    assert registry.WORKING_MEMORY_ALIAS["sdpose"] == "sd15" and registry.TEXT_TOKENS["sdpose"] == 2
    # HeatmapHead: ConvTranspose2d 640->640 k4 no bias, Conv2d 640->640 k1, Conv2d 640->133 k1
    assert P_SDPOSE_HEAD == 6_553_600 + 410_240 + 85_253
    # the SD 2 UNet count the repo's ComfyUI key layout builds
    assert P_SDPOSE_UNET - P_SDPOSE_HEAD == spec_params(spec_unet("sd2"))
    assert P_SDPOSE_VAE == spec_params(spec_vae_kl())


def test_the_catalogued_checkpoint_takes_its_family_and_splits_into_unet_and_kl_vae():
    info = catalogue_info(CKPT, "checkpoints")
    assert (info.kind, info.family) == (CHECKPOINT, "sdpose")
    vae = part_of(info, ModelRef(name=CKPT, role="vae", folder="checkpoints", part="vae"))
    model = part_of(info, ModelRef(name=CKPT, role="diffusion", folder="checkpoints", part="model"))
    assert (vae.kind, vae.family) == (VAE, "vae-kl4")
    assert (model.kind, model.family) == (DIFFUSION, "sdpose")
    assert vae.weights_bytes + model.weights_bytes == pytest.approx(info.weights_bytes, abs=2)


@pytest.mark.parametrize("name, folder", [("gemma4_e4b_it_fp8_scaled.safetensors", "text_encoders"),
                                          ("qwen3.5_4b_bf16.safetensors", "text_encoders")])
def test_other_catalogue_rows_without_a_family_stay_unknown(name, folder):
    """The SDPose row's family is the catalogue's own (data/catalogue.json), not guessed for other rows."""
    info = catalogue_info(name, folder)
    assert info is not None and info.family == "unknown"


def test_a_file_on_disk_is_split_by_its_keys(tmp_path):
    spec = {**spec_unet("sd2", scale=8, prefix="model.diffusion_model."),
            "model.diffusion_model.heatmap_head.conv_layers.0.weight": ("F16", (640, 640, 1, 1)),
            **spec_vae_kl(dtype="F16", scale=8, prefix="first_stage_model.")}
    info = describe(write_safetensors(tmp_path / "my_pose.safetensors", spec).path)
    assert info.kind == CHECKPOINT and info.parts["vae"].family == "vae-kl4"


def _template(name):
    return estimate(read_workflow(template_workflow(name)), RTX4090)


@pytest.mark.parametrize("name, batch, complete", [
    ("utility_sdpose_ood_image_to_pose", 1, True),         # one LoadImage picture, full-image mode
    ("utility_sdpose_ood_video_to_pose_map", 16, True),    # frames unknown: batch_size 16 per call, an upper bound
    ("utility_sdpose_multi_person", 1, True),              # bbox crops one at a time; RT-DETR traced
    ("utility_sdpose_multi_person_video", 1, True),        # (tests/test_family_vision_utils.py)
])
def test_the_templates(name, batch, complete):
    budget = _template(name)
    d = budget.to_dict()
    assert d["complete"] is complete, d["incomplete"]
    encode = next(s for s in budget.stages if s.stage.kind == "vae_encode")
    sample = next(s for s in budget.stages if s.stage.kind == "sample" and s.stage.node_type == "SDPoseKeypointExtractor")
    lat = encode.stage.latent
    assert (lat.batch, lat.channels, lat.height, lat.width) == (batch,) + LATENT
    assert sample.stage.latent == lat and sample.stage.steps == 1 and sample.stage.cfg == 1.0
    # the encode is priced with the KL VAE and the forward with the traced SD UNet profile at 128 x 96 tokens
    assert any(it.model is not None and it.model.family == "vae-kl4" for it in encode.items)
    assert encode.working_bytes > 0 and not any("VAE not identified" in g for g in budget.incomplete)
    work = next(it for it in sample.items if it.category == "working")
    assert "12288 latent tokens" in work.assumption and f"batch {batch}" in work.assumption
    # the heatmap head after the forward is smaller than the forward's working memory (note in the estimate)
    assert head_working_bytes(batch) < work.bytes
    if "multi_person" in name:  # the detector's weights (RTv4 at enc_h 384, fp16) and traced working memory
        detector = next(s for s in budget.stages if s.stage.node_type == "RTDETR_detect")
        assert detector.items[0].bytes == 2 * P_RTDETR_X
        assert any(it.category == "working" and "traced" in it.label for it in detector.items)
    json.dumps(d)


def test_the_head_is_below_the_forward_at_any_batch():
    arch = FAMILIES["sdpose"].arch
    for batch in (1, 4, 16, 64):
        lat = LatentShape(batch=batch, channels=4, height=128, width=96, pixel_height=1024, pixel_width=768)
        assert head_working_bytes(batch) < memory.diffusion_working("sdpose", arch, lat, batch).bytes


def test_a_stage_without_latent_shows_the_reason_its_pack_gave():
    """stages/sample.py: a sampling-kind stage with no latent says "latent size unknown" unless its node pack's
    handler gave its reason (Stage.unpriced; RTDETR_detect: a detector has no latent)."""
    from vram_budget.nodes.estimator.stages import build_stage, gap
    from vram_budget.nodes.estimator.machine.resolve import resolve_model
    from vram_budget.nodes.estimator.workload import Stage

    ref = ModelRef(name="rt_detr_v4-x-hgnet_fp16.safetensors", role="diffusion", folder="diffusion_models")
    info_for = lambda r: resolve_model(r, None)[0]  # noqa: E731
    plain = build_stage(Stage(kind="sample", node_id="1", node_type="X", models=(ref,)), RTX4090, info_for)
    assert gap(plain) == "working memory not estimated: latent size unknown"
    told = build_stage(Stage(kind="sample", node_id="1", node_type="RTDETR_detect", models=(ref,),
                             unpriced="a detector"), RTX4090, info_for)
    assert gap(told) == "working memory not estimated: a detector"
    assert told.items[0].bytes == plain.items[0].bytes > 0  # its weights are priced either way
