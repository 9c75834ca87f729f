"""T5's untied encoder.embed_tokens copy and umT5's SentencePiece blob are in the files but ComfyUI
does not load them (comfy/text_encoders/t5.py has only `shared`; sd.py hands `spiece_model` to the
tokenizer): `inspect` and the budget count what ComfyUI loads (T5-XXL: 4.76 B params, 9.52 GB fp16)."""
from __future__ import annotations

import io
import json
import math

import helpers_models as hm
from vram_budget.nodes.estimator.families.registry import PARAMS as P
from vram_budget.nodes.estimator.cli import app as cli
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.machine.resolve import folder_resolver
from vram_budget.nodes.estimator.families import describe
from vram_budget.nodes.estimator.files import clear_cache, inspect_file
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.workload import TEXT_ENCODE, ModelRef, Stage, Workload

SPIECE = ("U8", (4_548_313,))  # a SentencePiece model stored as a uint8 tensor, as in Comfy-Org's umT5 files


def _inspect_json(path) -> dict:
    out = io.StringIO()
    args = cli.build_parser().parse_args(["inspect", "--json", str(path)])
    assert cli.cmd_inspect(args, out=out, err=io.StringIO()) == 0
    return json.loads(out.getvalue())[0]


def test_inspect_counts_what_comfyui_loads_for_a_full_size_t5xxl(tmp_path):
    spec = dict(hm.spec_t5(False, "F16", both_embeddings=True))
    spec["spiece_model"] = SPIECE
    path = tmp_path / "text_encoders" / "t5xxl_fp16.safetensors"
    hm.write_safetensors(path, spec, sparse=True)
    clear_cache()
    inv = inspect_file(str(path))
    assert inv.param_count == P["P_T5XXL"] + 32128 * 4096 + SPIECE[1][0]  # the file holds both and the blob
    row = _inspect_json(path)
    assert (row["family"], row["params"], row["weights_bytes"]) == ("t5-xxl", 4_762_310_656, 2 * 4_762_310_656)
    assert row["params"] == P["P_T5XXL"] and abs(row["weights_bytes"] - 9.52e9) < 0.01e9
    assert any("encoder.embed_tokens.weight" in n and "spiece_model" in n for n in row["notes"])
    table = io.StringIO()
    cli.cmd_inspect(cli.build_parser().parse_args(["inspect", str(path)]), out=table, err=io.StringIO())
    assert "4.76B" in table.getvalue()


def test_umt5_spiece_blob_is_not_counted(tmp_path):
    spec = dict(hm.spec_t5(True, "BF16"))
    spec["spiece_model"] = SPIECE
    path = tmp_path / "umt5_xxl_bf16.safetensors"
    hm.write_safetensors(path, spec, sparse=True)
    info = describe(str(path))
    assert (info.family, info.params, info.weights_bytes) == ("umt5-xxl", P["P_UMT5XXL"], 2 * P["P_UMT5XXL"])


def test_the_copy_inside_a_checkpoint_is_not_counted_either(tmp_path):
    parts = hm.spec_checkpoint("flux", "F16", 8)
    spec = {k: v for p in parts.values() for k, v in p.items()}
    pre = "text_encoders.t5xxl.transformer."
    copy = spec[pre + "shared.weight"]
    spec[pre + "encoder.embed_tokens.weight"] = copy
    spec[pre + "spiece_model"] = ("U8", (1000,))
    w = hm.write_safetensors(tmp_path / "flux_aio.safetensors", spec)
    info = describe(w.path)
    t5 = info.parts["clip"].parts["t5-xxl"]
    loaded = {k: v for k, v in spec.items() if not k.endswith(("embed_tokens.weight", "spiece_model"))}
    t5_loaded = {k: v for k, v in loaded.items() if k.startswith(pre)}
    assert t5.params == hm.spec_params(t5_loaded) and any("embed_tokens" in n for n in t5.notes)
    assert info.params == hm.spec_params(loaded)  # the checkpoint's count drops it too
    assert info.weights_bytes == sum(p.weights_bytes for p in info.parts.values())
    assert info.params == hm.spec_params(spec) - math.prod(copy[1]) - 1000


def test_budget_weights_for_a_t5xxl_file_on_disk(tmp_path):
    spec = dict(hm.spec_t5(False, "F16", both_embeddings=True))
    hm.write_safetensors(tmp_path / "text_encoders" / "t5xxl_fp16.safetensors", spec, sparse=True)
    clear_cache()
    ref = ModelRef("text_encoder", "t5xxl_fp16.safetensors", "text_encoders")
    workload = Workload(stages=(Stage(TEXT_ENCODE, "6", "CLIPTextEncode", models=(ref,)),), models=(ref,))
    budget = estimate(workload, Device.from_card(find_card("RTX 4090")), folder_resolver(tmp_path))
    item = next(it for sb in budget.stages for it in sb.items if it.category == "weights")
    assert item.bytes == 2 * P["P_T5XXL"]  # 9.52 GB, not the file's 9.79 GB
