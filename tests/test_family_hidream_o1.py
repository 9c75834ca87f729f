"""HiDream-O1-Image (ComfyUI 0.33.0), added as one family module (nodes/estimator/families/hidream_o1.py) and
one node-pack module (graph/packs/nodes_hidream_o1.py): its header and its published checkpoint are recognised
(and kept apart from HiDream-I1), the all-in-one checkpoint splits into the DiT, a weightless tokenizer and the
pixel-space "VAE", and the official templates get a complete estimate."""
import json

import pytest

from helpers_models import spec_hidream, spec_params, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, describe, registry
from vram_budget.nodes.estimator.families.hidream_o1 import P_HIDREAM_O1
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.model_info import CHECKPOINT, DIFFUSION
from vram_budget.nodes.estimator.models.name_infer import family_of
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info


def o1_spec(hidden=256, ffn=768, layers=3, dtype="BF16"):
    """The key layout of comfy/ldm/hidream_o1/model.py (0.33.0) at a small width: patch shims + Qwen3 decoder."""
    spec = {"t_embedder1.mlp.0.weight": (dtype, (hidden, 256)), "t_embedder1.mlp.2.weight": (dtype, (hidden, hidden)),
            "x_embedder.proj1.weight": (dtype, (hidden // 4, 3072)), "x_embedder.proj2.weight": (dtype, (hidden, hidden // 4)),
            "final_layer2.linear.weight": (dtype, (3072, hidden)),
            "language_model.embed_tokens.weight": (dtype, (1000, hidden))}
    for i in range(layers):
        p = f"language_model.layers.{i}."
        for n in ("q", "o"):
            spec[p + f"self_attn.{n}_proj.weight"] = (dtype, (hidden, hidden))
        spec[p + "mlp.gate_proj.weight"] = (dtype, (ffn, hidden))
        spec[p + "mlp.up_proj.weight"] = (dtype, (ffn, hidden))
        spec[p + "mlp.down_proj.weight"] = (dtype, (hidden, ffn))
    return spec


def test_the_family_lives_in_its_module_and_is_tried_before_hidream_i1():
    assert registry.module_of("hidream-o1") == "hidream_o1"
    arch = FAMILIES["hidream-o1"].arch
    assert (arch["latent_channels"], arch["spatial_compression"], arch["patch_size"]) == (3, 1, (32, 32))
    assert registry.MEMORY_USAGE_FACTOR["hidream-o1"] == 0.033
    orders = {m.__name__.rsplit(".", 1)[-1]: m.ORDER for m in registry.MODULES}
    assert orders["hidream_o1"] < orders["hidream"]
    assert family_of("hidream_o1_image_dev_fp8_scaled.safetensors", DIFFUSION)[0] == "hidream-o1"
    assert family_of("hidream_i1_full_fp16.safetensors", DIFFUSION)[0] == "hidream"


def test_a_header_is_recognised_and_hidream_i1_still_is(tmp_path):
    spec = o1_spec()
    info = describe(write_safetensors(tmp_path / "some_model.safetensors", spec).path)
    assert (info.kind, info.family) == (DIFFUSION, "hidream-o1")
    assert (info.arch["hidden_size"], info.arch["ffn_dim"], info.arch["depth"]) == (256, 768, 3)
    assert info.params == spec_params(spec)
    near = {k: v for k, v in spec.items() if not k.startswith("x_embedder.")}
    assert describe(write_safetensors(tmp_path / "near.safetensors", near).path).family != "hidream-o1"
    i1 = describe(write_safetensors(tmp_path / "i1.safetensors", spec_hidream()).path)
    assert i1.family == "hidream"


def test_the_published_checkpoint_splits_into_the_dit_and_weightless_parts():
    info = catalogue_info("hidream_o1_image_bf16.safetensors", "checkpoints")
    assert (info.kind, info.family, info.weights_bytes) == (CHECKPOINT, "hidream-o1", 16_363_825_398)
    split = registry.CHECKPOINT_SPLITS["hidream-o1"]
    assert split["model"][0] == P_HIDREAM_O1 and split["clip"][0] == 0 and split["vae"][2] == "vae-pixel"


@pytest.mark.parametrize("name, cfg_batch", [("image_hidream_o1", 2), ("image_hidream_o1_dev", 1)])
def test_the_official_templates_are_complete(name, cfg_batch):
    templates = pytest.importorskip("workflows.templates")
    found = [t for t in templates.load_templates() if t.name == name]
    if not found:
        pytest.skip(f"comfyui-workflow-templates has no {name} template in this version")
    budget = estimate(read_workflow(found[0].workflow), Device.from_card(find_card("RTX 4090")))
    assert not budget.incomplete, budget.incomplete
    sample = next(s for s in budget.stages if s.stage.kind == "sample")
    assert sample.title.startswith("Sample: HiDream-O1")
    work = [it for it in sample.items if it.category == "working"]
    assert work and work[0].bytes > 0 and "constants traced from ComfyUI 0.33.0 model code" in work[0].assumption
    # 2048 x 2048 pixels in 32 px patches: 64 x 64 image tokens in the sequence
    assert f"batch {cfg_batch}, 4096 latent tokens" in work[0].assumption
    text = next(s for s in budget.stages if s.stage.kind == "text_encode" and "tokenizer" in s.title)
    assert sum(it.bytes for it in text.items if it.category == "weights") == 0
    decode = next(s for s in budget.stages if s.stage.kind == "vae_decode")
    assert "pixel space" in decode.title
    json.dumps(budget.to_dict())
