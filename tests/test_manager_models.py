"""Issue 33: the sizes ComfyUI-Manager's model list publishes for the files it installs, as a generated fallback
after the hand catalogue and the templates (data/manager_models.json, bench/gen_manager_models.py)."""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from vram_budget.nodes.estimator.models import catalogue
from vram_budget.nodes.estimator.models.published import MANAGER_MODELS, catalogue_info, manager_info, manager_models

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import gen_manager_models as gen  # noqa: E402

TABLE = json.loads(Path(MANAGER_MODELS).read_text(encoding="utf-8"))


def test_the_table_names_its_source_and_every_entry_is_sized_and_placed():
    assert TABLE["source"].startswith("Comfy-Org/ComfyUI-Manager@") and len(TABLE["source"].split("@")[1]) >= 40 + 1
    assert len(TABLE["files"]) >= 500
    for f in TABLE["files"]:
        assert f["bytes"] > 0 and f["url"].startswith("http") and f["folder"] and f["path"], f
        assert f["bytes"] == gen.size_bytes(f["size"])  # the stated size, decimal units


def test_decimal_units_agree_with_the_files_the_hand_catalogue_sizes_exactly():
    by_name = manager_models()["by_name"]
    ratios = [fs[0]["bytes"] / e.bytes for e in catalogue.ENTRIES if e.bytes
              for (folder, name), fs in by_name.items() if name == catalogue._norm(e.name)]
    assert len(ratios) >= 30
    assert abs(statistics.median(ratios) - 1) < 0.01  # read as GiB the median would be 1.074


def test_the_generator_rebuilds_the_committed_table_from_the_lists_own_format():
    back = {"models": [{"name": f["name"], "type": f["type"], "base": f["base"], "filename": f["path"].rsplit("/", 1)[-1],
                        "save_path": "/".join([f["folder"]] + f["path"].split("/")[:-1]), "url": f["url"],
                        "size": f["size"]} for f in TABLE["files"]]}
    assert gen.build(back["models"], TABLE["source"]) == TABLE
    odd = [{"filename": "x.safetensors", "save_path": "default", "type": "upscale", "url": "https://a/x", "size": "67MB"},
           {"filename": "y.bin", "save_path": "loras", "url": "<huggingface>", "size": "1GB"},
           {"filename": "z.bin", "save_path": "loras", "url": "https://a/z", "size": "big"}]
    built = gen.build(odd, "s")["files"]
    assert [(f["folder"], f["path"], f["bytes"]) for f in built] == [("upscale_models", "x.safetensors", 67 * 10 ** 6)]


def test_a_manager_file_is_priced_by_its_published_size():
    rank256 = manager_info("control-lora/control-lora-depth-rank256.safetensors", "controlnet")
    assert rank256 is not None and rank256.kind == "controlnet" and rank256.weights_bytes == 774_400_000
    assert "ComfyUI-Manager" in rank256.evidence[0] and TABLE["source"] in rank256.notes[0]
    # a file name many entries share needs the sub-folder the workflow names, and sizes that agree
    assert manager_info("instantid/diffusion_pytorch_model.safetensors", "controlnet").weights_bytes == 2_500_000_000
    assert manager_info("diffusion_pytorch_model.safetensors", "controlnet") is None
    assert manager_info("control-lora-depth-rank256.safetensors", "loras") is None  # another folder: not that file
    assert manager_info("no-such-model.safetensors", "controlnet") is None
    # the hand catalogue and the templates come first (Manager's list sizes qwen_image_bf16 at 9.78 GB)
    assert catalogue_info("qwen_image_bf16.safetensors", "diffusion_models").weights_bytes > 40 * 10 ** 9


def test_a_control_lora_the_list_does_not_name_is_sized_by_its_siblings_of_the_same_rank():
    """A Control-LoRA's layout is the SDXL ControlNet's factored at its rank, whatever it controls: Stability's four
    rank-256 files agree to 0.1 MB, so thibaud's openposeXL2 rank-256 file is priced at their median; a name with no
    rank, or a rank no listed sibling has, is not priced."""
    from vram_budget.nodes.estimator.models.published import catalogue_info, control_lora_sibling
    info = catalogue_info("control-lora-openposeXL2-rank256.safetensors", "controlnet")
    assert info is not None and info.kind == "controlnet" and 774_400_000 <= info.weights_bytes <= 774_500_000
    assert "rank-256" in info.notes[0]
    small = control_lora_sibling("thibaud/control-lora-openposeXL2-rank128.safetensors")
    assert small is not None and small.weights_bytes == 395_700_000
    assert control_lora_sibling("control-lora-openposeXL2.safetensors") is None
    assert control_lora_sibling("control-lora-x-rank64.safetensors") is None
