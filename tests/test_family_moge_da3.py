"""MoGe and Depth Anything 3 (ComfyUI 0.33.0 comfy_extras/nodes_moge.py, nodes_depth_anything_3.py; families/moge.py,
families/depth_anything3.py, graph/packs/nodes_moge.py, nodes_depth_anything_3.py): each inference node is a GPU
stage holding the model's weights (published file sizes) and a first-principles ViT + head working-memory figure
(Stage.working, read by stages/sample.py and runtime.run_sample)."""
import pytest

from workflows.templates import template_workflow
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.families import FAMILIES, registry
from vram_budget.nodes.estimator.families import depth_anything3 as DA3
from vram_budget.nodes.estimator.families import moge as MOGE
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.stages import sample
from vram_budget.nodes.estimator.workload import SAMPLE, ModelRef, Stage

RTX4090 = Device.from_card(find_card("RTX 4090"))


def _template(name):
    return estimate(read_workflow(template_workflow(name)), RTX4090)


def test_families_live_in_their_modules():
    assert registry.module_of("moge-v2") == "moge" and 180 <= MOGE.ORDER <= 189
    assert registry.module_of("da3-large") == "depth_anything3" and 180 <= DA3.ORDER <= 189
    assert MOGE.ORDER != DA3.ORDER
    assert FAMILIES["moge-v2"].arch["hidden_size"] == 1024 and FAMILIES["moge-v2-vitg"].arch["depth"] == 40


@pytest.mark.parametrize("name, complete", [
    ("3d_moge_panorama_to_mesh", True),
    ("3d_moge_perspective_to_mesh", True),
    ("utility_moge_depth_estimation", True),
    ("utility_moge3_geometry_estimation", True),
    ("utility_depth_anything3_image_depth_estimation", True),
    # lower_bound_resize: the longest side follows the video's aspect ratio, unknown before it loads
    ("utility_depth_anything3_video_depth_estimation", False),
])
def test_templates(name, complete):
    b = _template(name)
    assert b.complete is complete, (b.missing, b.incomplete)
    stages = [s for s in b.stages if s.stage.kind == SAMPLE]
    assert len(stages) == 1 and stages[0].weights_bytes > 0
    if complete:
        assert any("first-principles formula, uncalibrated" in i.assumption for i in stages[0].items
                   if i.category == "working")
        # runtime.run_sample simulates the pack-priced stage as one forward (not "unknown": no latent needed)
        run = next(st["run"] for st in b.to_dict()["stages"] if st["kind"] == SAMPLE)
        assert run["outcome"] == "fits"
    else:
        assert "lower_bound_resize" in b.incomplete[0]


def test_panorama_by_hand():
    # 3d_moge_panorama_to_mesh: MoGePanoramaInference resolution_level 5, split_resolution 512, batch_size 4.
    # num_tokens = int(1200 + 5/9 x (3600 - 1200)) = int(2533.3) = 2533 (model.py:293-295, v2 range model.py:107);
    # square views: base = round(sqrt(2533)) = round(50.33) = 50 -> 50 x 50 = 2500 patches + 1 cls = 2501 tokens.
    # ViT (ViT-L: width 1024, FFN 4096): 4 views x 2501 x (6 x 1024 + 2 x 4096 + 4 x 1024) x 2 B
    #   = 4 x 2501 x 18432 x 2 = 368,787,456 bytes (~352 MiB)
    # head: 4 x (50 x 16)^2 x (2 UV + 3 + 1 + 3) x 2 B = 4 x 640,000 x 18 = 46,080,000 bytes
    # input-size maps: 4 views x 512 x 512 x (3 x 4 + 7 x 2 + 3 x 4 = 38 B) = 39,845,888 bytes
    assert MOGE.num_tokens(2, 5) == 2533 and MOGE.patch_grid(2, 2533) == (50, 50)
    assert MOGE.vit_working_bytes(2501, 1024, 4096, batch=4) == 368_787_456
    assert MOGE.head_working_bytes(2, 50, 50, batch=4) == 46_080_000
    st = next(s for s in _template("3d_moge_panorama_to_mesh").stages if s.stage.kind == SAMPLE)
    working = {i.label: i.bytes for i in st.items if i.category == "working"}
    assert working == {"ViT activations (formula)": 368_787_456, "head maps (formula)": 46_080_000,
                       "input-size maps (formula)": 39_845_888}
    assert st.weights_bytes == 661_861_170  # the published fp16 file (661,861,171 bytes), parameters x 2


def test_moge_names():
    assert MOGE.family_of("moge_3_vitg_fp16.safetensors") == "moge-v2-vitg"
    assert MOGE.family_of("moge_3_vitl_fp16.safetensors") == "moge-v2"
    assert MOGE.family_of("moge_1_vitl_fp16.safetensors") == "moge-v1"
    # v1: num_tokens at level 9 = 2500 (model.py:53); 2500 x 14^2 px square -> 700 / 14 = 50 x 50 patches
    assert MOGE.num_tokens(1, 9) == 2500 and MOGE.patch_grid(1, 2500) == (50, 50)


def test_da3_target_size():
    # preprocess.py:24-39: 1024 x 1024 at 504 -> 504 x 504 (36 x 36 patches); lower bound on 1080 x 1920 -> 504 x 896
    assert DA3.target_size(1024, 1024, 504, "upper_bound_resize") == (504, 504)
    assert DA3.target_size(1080, 1920, 504, "lower_bound_resize") == (504, 896)


def test_da3_image_by_hand():
    # utility_depth_anything3_image_depth_estimation: DA3Inference resolution 504, upper_bound_resize, mono; the
    # LoadImage file is not readable here (assumed 1024 x 1024), so the square bound: 504 x 504 (preprocess.py:24-39)
    # -> 36 x 36 = 1296 patches + 1 cls = 1297 tokens; ViT-L: 1297 x (6 x 1024 + 2 x 4096 + 4 x 1024) x 2 B
    #   = 1297 x 18432 x 2 = 47,812,608 bytes; DPT maps: 504 x 504 x (128 + 2 x 32) x 2 B = 97,542,144 bytes;
    # input-size maps: 1024 x 1024 x (3 x 4 + 4) = 16,777,216 bytes
    st = next(s for s in _template("utility_depth_anything3_image_depth_estimation").stages if s.stage.kind == SAMPLE)
    working = {i.label: i.bytes for i in st.items if i.category == "working"}
    assert working == {"ViT activations (formula)": 47_812_608, "DPT head maps (formula)": 97_542_144,
                       "input-size maps (formula)": 16_777_216}
    assert st.weights_bytes == 665_719_930  # the fp32 file's 332,859,965 parameters at 16 bit


def test_stage_working_hook():
    """A pack-priced stage without a latent gets its Stage.working as working items (the generic hook)."""
    ref = ModelRef(name="moge_2_vitl_normal_fp16.safetensors", role="diffusion", folder="geometry_estimation")
    st = Stage(kind=SAMPLE, node_id="1", node_type="MoGeInference", models=(ref,),
               working=(("ViT activations (formula)", 123, "first-principles formula, uncalibrated"),))
    from vram_budget.nodes.estimator.machine.resolve import resolve_model
    sb = sample.build(st, RTX4090, lambda r: resolve_model(r, None)[0])
    assert [(i.label, i.bytes) for i in sb.items if i.category == "working"] == [("ViT activations (formula)", 123)]
    assert sb.working_bytes == 123
