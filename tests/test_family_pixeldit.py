"""PixelDiT and PiD (ComfyUI 0.33.0), one family module (nodes/estimator/families/pixeldit.py): their headers and
published files are recognised (PiD's "pid_flux1_*" / "pid_flux2_*" / "pid_sd3_*" names no longer taken for
Flux.1 / Flux.2 / SD3 models), and the official templates get priced sampling stages."""
import json

import pytest

from helpers_models import spec_params, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.pixeldit import P_PID, P_PIXELDIT
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import DIFFUSION
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info


def pixdit_spec(hidden=192, layers=2, prefix="core.", pid=False, dtype="BF16"):
    """comfy/ldm/pixeldit/model.py (0.33.0) key layout at a small width (PiD adds lq_proj, model_detection.py:529)."""
    p = "" if pid else prefix
    spec = {p + "pixel_embedder.proj.weight": (dtype, (16, 3)), p + "s_embedder.proj.weight": (dtype, (hidden, 768)),
            p + "y_embedder.proj.weight": (dtype, (hidden, 2304))}
    for i in range(layers):
        spec[p + f"patch_blocks.{i}.attn.qkv.weight"] = (dtype, (3 * hidden, hidden))
        spec[p + f"patch_blocks.{i}.mlp_x.w1.weight"] = (dtype, (hidden * 8 // 3, hidden))
    if pid:
        spec["lq_proj.latent_proj.0.weight"] = (dtype, (64, 16, 3, 3))
    return spec


def test_the_families_live_in_one_module():
    assert registry.module_of("pixeldit") == registry.module_of("pid") == "pixeldit"
    assert FAMILIES["pixeldit"].arch["patch_size"] == (16, 16) and FAMILIES["pid"].arch["latent_channels"] == 3
    assert registry.MEMORY_USAGE_FACTOR["pixeldit"] == registry.MEMORY_USAGE_FACTOR["pid"] == 0.04


@pytest.mark.parametrize("pid", [False, True])
def test_headers_are_recognised(tmp_path, pid):
    spec = pixdit_spec(pid=pid)
    info = describe(write_safetensors(tmp_path / "x.safetensors", spec).path)
    assert (info.kind, info.family) == (DIFFUSION, "pid" if pid else "pixeldit")
    assert (info.arch["hidden_size"], info.arch["depth"]) == (192, 2) and info.params == spec_params(spec)
    near = {k: v for k, v in spec.items() if "pixel_embedder" not in k and "lq_proj" not in k}
    assert describe(write_safetensors(tmp_path / "near.safetensors", near).path).family not in ("pid", "pixeldit")


@pytest.mark.parametrize("name", ["pid_flux1_1024_to_4096_4step_bf16.safetensors",
                                  "pid_flux2_512_to_2048_4step_bf16.safetensors",
                                  "pid_sd3_1024_to_4096_4step_bf16.safetensors"])
def test_pid_files_are_pid_not_the_latent_family_they_decode(name):
    info = catalogue_info(name, "diffusion_models")
    assert (info.family, info.params, info.weights_bytes) == ("pid", P_PID, 2_727_304_233)


def test_the_pixeldit_file_is_priced_by_its_published_size():
    info = catalogue_info("pixeldit_1300m_1024px_bf16.safetensors", "diffusion_models")
    assert (info.family, info.params, info.weights_bytes) == ("pixeldit", P_PIXELDIT, 2_609_192_632)


def _budget(name):
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == name]
    if not found:
        pytest.skip(f"comfyui-workflow-templates has no {name} template in this version")
    return estimate(read_workflow(found[0].workflow), Device.from_card(find_card("RTX 4090")))


def test_the_pixeldit_template_is_complete():
    budget = _budget("image_pixeldit_t2i")
    assert not budget.incomplete, budget.incomplete
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    work = next(it for it in sample.items if it.category == "working")
    assert sample.title.startswith("Sample: PixelDiT") and "constants traced from ComfyUI 0.33.0 model code" in work.assumption
    assert "4096 latent tokens + 300 text tokens" in work.assumption  # 1024 px / 16 px patches; Gemma padded to 300
    json.dumps(budget.to_dict())


def test_the_pid_template_samples_pid_not_flux():
    budget = _budget("utility_pid_latent_upscale_dit")
    assert not budget.incomplete, budget.incomplete
    titles = [s.title for s in budget.stages if s.stage.kind == "sample"]
    assert any(t.startswith("Sample: PiD") for t in titles) and not any("Flux" in t for t in titles)
    pid = next(s for s in budget.stages if s.title.startswith("Sample: PiD"))
    work = next(it for it in pid.items if it.category == "working")
    assert "65536 latent tokens" in work.assumption  # 4096 px / 16
    assert sum(it.bytes for it in pid.items if it.category == "weights") == 2 * P_PID
