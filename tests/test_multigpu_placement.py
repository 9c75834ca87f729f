"""Issue 24: which device each stage and model runs on (ComfyUI-MultiGPU / DisTorch2 loaders), several
cards in one estimate (--gpus / --vram a,b), and DisTorch2 allocation strings parsed by DisTorch2's own
parser (extracted from ComfyUI-MultiGPU's distorch_2.py with ast at test time, never copied here)."""
import argparse
import ast
import json
import logging
import tarfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from nodes.estimator.cli.cli_estimate import add_estimate_parser, devices_from_args
from nodes.estimator.machine.distorch import GIB, gib_text, write_allocation
from nodes.estimator.errors import VramBudgetError
from nodes.estimator.graph import read_workflow
from nodes.estimator.plan.planning import estimate
from nodes.estimator.workload import Workload

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
NODEPACK = SHARED / "nodepacks" / "ComfyUI-MultiGPU.tar.gz"
CORPUS = SHARED / "corpus" / "community"
LOCAL_CORPUS = REPO / "tests" / "workflows" / "community"
PREFIX = "pollockjj__ComfyUI-MultiGPU__"


def _corpus_file(name: str) -> Path:
    for folder in (LOCAL_CORPUS, CORPUS):
        if (folder / name).is_file():
            return folder / name
    pytest.skip(f"{name} is not in the community corpus here ({CORPUS})")


def _multigpu_examples() -> list[Path]:
    for folder in (LOCAL_CORPUS, CORPUS):
        found = sorted(folder.glob(PREFIX + "*.json")) if folder.is_dir() else []
        if found:
            return found
    return []


def _args(*flags):
    p = argparse.ArgumentParser(prog="vram-budget")
    add_estimate_parser(p.add_subparsers(dest="command", required=True))
    return p.parse_args(["estimate", "x.json", *flags])


def _estimate(path: Path, *flags):
    devices = devices_from_args(_args(*flags))
    wl = read_workflow(json.loads(path.read_text()))
    return wl, estimate(wl, devices[0], None, others=devices[1:])


def _unplaced(wl: Workload) -> Workload:
    """The same workload with every loader's placement removed (all on ComfyUI's main device)."""
    def strip(r):
        return replace(r, device=None, placed_by="", offload_bytes=0, donor_device=None, allocation="")
    return replace(wl, stages=tuple(replace(s, device=None, device_reason="", models=tuple(strip(r) for r in s.models))
                                    for s in wl.stages), models=tuple(strip(r) for r in wl.models))


# ---------------------------------------------------------------------------------------------- 1. devices
def test_flux_text_encoder_on_cpu_and_vae_on_cuda1_are_said_and_not_counted_on_this_card():
    path = _corpus_file(PREFIX + "flux_unet_dual_clip_vae_loaders_api.json")
    wl, b = _estimate(path, "--gpu", "RTX 4090")
    d = b.to_dict()
    devs = [(s["kind"], s["device"], s["on_this_card"]) for s in d["stages"]]
    assert devs == [("text_encode", "cpu", False), ("sample", "cuda:0", True), ("vae_decode", "cuda:1", False)]
    te, sample, vae = d["stages"]
    assert te["device_reason"] == "ComfyUI-MultiGPU DualCLIPLoaderMultiGPU device=cpu"
    assert vae["device_reason"] == "ComfyUI-MultiGPU VAELoaderMultiGPU device=cuda:1"
    # on this card the off-card stages hold only the CUDA context; the peak is the sampling stage's
    ctx = b.device.context_bytes
    assert te["peak_bytes"] == vae["peak_bytes"] == ctx
    assert d["peak_stage"] == 1 and d["peak_bytes"] == sample["peak_bytes"]
    # hand check: the VAE decode on cuda:1 costs there what it costs on cuda:0 when nothing is placed
    base = estimate(_unplaced(wl), b.device).to_dict()
    assert vae["device_peak_bytes"] == base["stages"][2]["peak_bytes"] > ctx
    assert te["device_peak_bytes"] is None  # the CPU: no VRAM of any card
    assert d["models"]["vae/ae.safetensors"]["device"] == "cuda:1"
    assert d["models"]["text_encoders/clip_l.safetensors"]["device"] == "cpu"
    # one card given: cuda:1 is priced with its rules and not checked
    place = {p["device"]: p for p in d["placement"]}
    assert place["cuda:1"]["card"] is None and place["cuda:1"]["outcome"] == "not_checked"
    assert place["cuda:1"]["peak_bytes"] == vae["device_peak_bytes"]
    assert place["cpu"]["outcome"] == "no_vram" and place["cpu"]["peak_bytes"] == 0
    from nodes.estimator.plan.report import format_report
    text = format_report(b)
    assert "runs on the CPU: no VRAM" in text and "not on this card" in text and "cuda:1" in text


def test_a_workflow_without_multigpu_nodes_gets_no_new_json_fields():
    wl = read_workflow(json.loads((REPO / "example_workflows" / "flux_dev_1024.json").read_text()))
    d = estimate(wl, devices_from_args(_args("--gpu", "RTX 4090"))[0]).to_dict()
    assert "placement" not in d and "overall_verdict" not in d
    assert all("device" not in s for s in d["stages"]) and all("device" not in m for m in d["models"].values())


def test_ui_and_api_exports_of_the_same_example_read_the_same_devices():
    pairs = [("flux_unet_dual_clip_vae_loaders", "flux_unet_dual_clip_vae_loaders_api"),
             ("ComfyUI-GGUF_flux_unet_dual_clip_loaders", "ComfyUI-GGUF_flux_unet_dual_clip_loaders_api"),
             ("ComfyUI-WanVideoWrapper_wanvideo_T2V", "ComfyUI-WanVideoWrapper_wanvideo_T2V_API"),
             ("wan2_2_t2v_lightx2v_lora_distorch2", "wan2_2_t2v_lightx2v_lora_distorch2_api")]
    for ui, api in pairs:
        got = []
        for name in (ui, api):
            wl = read_workflow(json.loads(_corpus_file(PREFIX + name + ".json").read_text()))
            got.append(sorted({(r.name, r.device, r.offload_bytes) for s in wl.stages for r in s.models
                               if r.placed_by and not r.placed_by.startswith("patches")}))
        assert got[0] == got[1], (ui, got)
        assert got[0], ui


def test_every_multigpu_example_in_the_corpus_reports_each_models_device():
    examples = _multigpu_examples()
    if not examples:
        pytest.skip(f"no {PREFIX}*.json in the community corpus ({CORPUS})")
    device = devices_from_args(_args("--gpu", "RTX 4090"))[0]
    for path in examples:
        wl = read_workflow(json.loads(path.read_text()))
        d = estimate(wl, device).to_dict()
        assert d["models"], path.name
        for key, m in d["models"].items():
            assert m["device"] in ("cpu",) or m["device"].startswith("cuda:"), (path.name, key, m["device"])
            assert m["device_reason"], (path.name, key)
        for s in d["stages"]:
            assert s["device"] and s["device_reason"] and isinstance(s["on_this_card"], bool), (path.name, s["title"])
        # every model a MultiGPU loader names says so
        placed = {f"{r.folder}/{r.name}" for st in wl.stages for r in st.models
                  if r.loader_type.endswith("MultiGPU")}
        assert placed, path.name
        for key in placed:
            assert d["models"][key]["device_reason"].startswith("ComfyUI-MultiGPU "), (path.name, key)
        assert {p["device"] for p in d["placement"]} >= {m["device"] for m in d["models"].values()}


def test_distorch2_widgets_are_read_by_position_in_a_ui_workflow():
    wl = read_workflow(json.loads(_corpus_file(PREFIX + "wan2_2_distorch2_double_unet_no_cpu.json").read_text()))
    experts = [r for s in wl.stages for r in s.models if r.role == "diffusion"]
    # UNETLoaderDisTorch2MultiGPU widgets: unet_name, weight_dtype, compute_device='cuda:0', virtual_vram_gb=9,
    # donor_device='cuda:1', expert_mode_allocations='', eject_models (wrappers.py:30-34)
    assert [(r.device, r.offload_bytes, r.donor_device) for r in experts] == [("cuda:0", 9 * GIB, "cuda:1")] * 2
    te = next(r for s in wl.stages for r in s.models if r.role == "text_encoder")
    assert (te.device, te.placed_by) == ("cuda:1", "ComfyUI-MultiGPU CLIPLoaderMultiGPU device=cuda:1")


# ---------------------------------------------------------------------------------------------- 2. several cards
def test_two_cards_each_device_gets_its_peak_and_the_overall_verdict_is_the_worst():
    path = _corpus_file(PREFIX + "wan2_2_distorch2_double_unet_no_cpu.json")
    wl, b = _estimate(path, "--vram", "24,12")
    d = b.to_dict()
    place = {p["device"]: p for p in d["placement"]}
    assert place["cuda:0"]["card"]["name"] == "24 GB GPU" and place["cuda:1"]["card"]["name"] == "12 GB GPU"
    assert place["cuda:0"]["peak_bytes"] == d["peak_bytes"]
    # cuda:1 holds the text encoder, the VAE and 9 GiB of each expert (DisTorch2 donor_device=cuda:1),
    # one at a time: its peak is the largest of the three (hand check: 9 GiB + the CUDA context)
    ctx = b.device.context_bytes
    te = next(s for s in d["stages"] if s["kind"] == "text_encode")
    vae = next(s for s in d["stages"] if s["kind"] == "vae_decode")
    assert place["cuda:1"]["peak_bytes"] == max(9 * GIB + ctx, te["device_peak_bytes"], vae["device_peak_bytes"])
    assert place["cuda:1"]["peak_bytes"] == 9 * GIB + ctx
    assert d["overall_verdict"] == "fits"
    # a 10 GB second card cannot hold the 9 GiB donor share + context next to what ComfyUI reserves there
    _, small = _estimate(path, "--vram", "24,9")
    ds = small.to_dict()
    assert {p["device"]: p["outcome"] for p in ds["placement"]}["cuda:1"] == "oom"
    assert ds["overall_verdict"] == "oom" and ds["verdict"] != "oom"  # cuda:0 alone is fine


def test_gpus_flag_names_the_cards_in_cuda_order():
    path = _corpus_file(PREFIX + "flux_unet_dual_clip_vae_loaders_api.json")
    _, b = _estimate(path, "--gpus", "RTX 4090,RTX 3090")
    place = {p["device"]: p for p in b.to_dict()["placement"]}
    assert place["cuda:0"]["card"]["name"] == "RTX 4090" and place["cuda:1"]["card"]["name"] == "RTX 3090"
    assert place["cuda:1"]["models"] == ["vae/ae.safetensors"] and place["cuda:1"]["outcome"] == "fits"
    assert place["cuda:0"]["models"] == ["diffusion_models/flux1-dev-fp8.safetensors"]


def test_vram_flag_keeps_its_single_card_meaning():
    assert len(devices_from_args(_args("--vram", "24"))) == 1
    two = devices_from_args(_args("--vram", "24,16"))
    assert [d.ordinal for d in two] == ["cuda:0", "cuda:1"] and two[1].total_bytes < two[0].total_bytes
    with pytest.raises(VramBudgetError):
        devices_from_args(_args("--gpus", "RTX 4090,,RTX 3090"))
    with pytest.raises(SystemExit):
        _args("--vram", "24,x")


# ---------------------------------------------------------------------------------------------- 3. DisTorch2 strings
def test_allocation_writer_hand_checked():
    a = write_allocation(int(20.5 * GIB), [("cuda:0", int(14.2 * GIB) + 1000), ("cuda:1", 6 * GIB)])
    assert a.text == "cuda:0,14.2gb;cuda:1,6gb;cpu,*"
    assert a.rest_bytes == int(20.5 * GIB) - int(14.2 * GIB) - 6 * GIB
    # everything fits on the first card: no share for the second, the CPU gets nothing
    b = write_allocation(10 * GIB, [("cuda:0", 14 * GIB), ("cuda:1", 6 * GIB)])
    assert b.text == "cuda:0,10gb;cpu,*" and b.rest_bytes == 0
    assert gib_text(int(0.004 * GIB)) == "0gb"
    with pytest.raises(ValueError):
        write_allocation(GIB, [("cuda:0,1", GIB)])


def _distorch_source() -> str:
    if not NODEPACK.is_file():
        pytest.skip(f"ComfyUI-MultiGPU's source is not here ({NODEPACK}): cannot check against DisTorch2's parser")
    with tarfile.open(NODEPACK) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith("distorch_2.py")), None)
        assert member is not None, "distorch_2.py not in the ComfyUI-MultiGPU archive"
        return tar.extractfile(member).read().decode()


def _their_functions(source: str, names):
    """The named top-level functions of distorch_2.py, compiled alone (the module imports torch and comfy)."""
    tree = ast.parse(source)
    picked = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {n.name for n in picked} == set(names), "DisTorch2's parser functions moved or were renamed"
    return ast.Module(body=picked, type_ignores=[]), tree


class _Patcher:
    def __init__(self, model_bytes):
        blocks = 40
        sizes = [model_bytes // blocks] * blocks
        sizes[-1] += model_bytes - sum(sizes)
        self._blocks = [(s, f"blocks.{i}", None, []) for i, s in enumerate(sizes)]

    def _load_list(self):
        return self._blocks


def _parse_with_distorch2(text: str, model_bytes: int, totals: dict) -> dict:
    import re

    module, tree = _their_functions(_distorch_source(), ("unpack_load_item", "parse_memory_string",
                                                         "calculate_fraction_from_byte_expert_string"))
    made = []

    class Recording(defaultdict):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    class MM:
        @staticmethod
        def get_total_memory(dev):
            return totals[str(dev)]

    class Torch:
        @staticmethod
        def device(name):
            return name

    ns = {"re": re, "defaultdict": Recording, "logger": logging.getLogger("distorch-test"), "mm": MM, "torch": Torch}
    exec(compile(module, "distorch_2.py", "exec"), ns)  # noqa: S102  (their functions, extracted at test time)
    fractions = ns["calculate_fraction_from_byte_expert_string"](_Patcher(model_bytes), text)
    assert made, "the parser no longer builds its byte allocations in a defaultdict"
    # the dispatch in analyze_safetensor_loading: a string with any of these letters is the bytes form
    analyze = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "analyze_safetensor_loading")
    letters = [[e.value for e in node.elts] for node in ast.walk(analyze)
               if isinstance(node, ast.List) and node.elts and all(isinstance(e, ast.Constant) for e in node.elts)]
    assert ["g", "m", "k", "b"] in letters
    assert any(c in text.lower() for c in ["g", "m", "k", "b"]) and "%" not in text
    return {"bytes": dict(made[-1]), "fractions": fractions}


@pytest.mark.parametrize("model_gib, rooms", [
    (20.5, [("cuda:0", 14.2), ("cuda:1", 6.0)]),  # the example: the rest (0.3 GiB) on the CPU
    (26.6, [("cuda:0", 14.27), ("cuda:1", 20.0)]),  # a Wan 2.2 14B fp16 expert over two 24 GB cards
    (13.3, [("cuda:0", 21.0), ("cuda:1", 20.0)]),  # fits the first card whole
    (31.0, [("cuda:0", 9.99), ("cuda:1", 0.004), ("cuda:2", 7.5)]),  # a card with no room is left out
])
def test_written_strings_parse_with_distorch2s_own_parser(model_gib, rooms):
    model = int(model_gib * GIB)
    alloc = write_allocation(model, [(d, int(g * GIB)) for d, g in rooms])
    totals = {"cpu": 64 * GIB, "cuda:0": 24 * GIB, "cuda:1": 24 * GIB, "cuda:2": 12 * GIB}
    got = _parse_with_distorch2(alloc.text, model, totals)
    expected = dict(alloc.shares)
    if alloc.rest_bytes:
        expected["cpu"] = alloc.rest_bytes
    # DisTorch2 keeps the shares as floats (GiB × 1024**3); ours are whole bytes: within one byte each
    assert set(got["bytes"]) == set(expected)
    assert all(abs(got["bytes"][k] - expected[k]) <= 1 for k in expected), (got["bytes"], expected)
    for device, share in alloc.shares:  # never more than the room it was given
        assert got["bytes"][device] <= int(dict(rooms)[device] * GIB)
    assert abs(sum(got["bytes"].values()) - model) <= 1
    assert got["fractions"].split(";")[0].startswith(rooms[0][0] + ",")


def test_wan22_fp16_expert_too_big_for_one_24gb_card_is_split_over_two():
    """Wan 2.2 14B fp16 image-to-video (26.6 GiB per expert) on two 24 GB cards, classic memory management:
    the written allocation keeps on cuda:0 what fits beside the sampling's working memory, the rest on cuda:1,
    nothing in RAM; and DisTorch2's own parser reads it back so (when its source is here)."""
    path = REPO / "example_workflows" / "wan22_14b_i2v_720p.json"
    _, b = _estimate(path, "--vram", "24,24", "--memory-mode", "classic")
    alloc = b.placement[0].allocation
    assert alloc is not None and alloc["compute_device"] == "cuda:0"
    sb = b.stages[b.peak_stage]
    weights = next(it.bytes for it in sb.items if it.model is not None and it.model.kind == "diffusion")
    run = b.runs[b.peak_stage]
    room0 = b.device.capacity_bytes - b.device.reserve_bytes - (run.peak_bytes - run.resident_bytes)
    assert alloc["shares"]["cuda:0"] == int(float(gib_text(room0)[:-2]) * GIB) <= room0  # hand check
    assert alloc["shares"]["cuda:0"] + alloc["shares"]["cuda:1"] == weights and alloc["rest_bytes"] == 0
    text = alloc["expert_mode_allocations"]
    assert text.startswith("cuda:0,") and text.endswith(";cpu,*")
    if NODEPACK.is_file():
        got = _parse_with_distorch2(alloc["expert_mode_allocations"], weights,
                                    {"cpu": 64 * GIB, "cuda:0": 24 * GIB, "cuda:1": 24 * GIB})
        assert all(abs(got["bytes"][k] - v) <= 1 for k, v in alloc["shares"].items())
        assert "cpu" not in got["bytes"]


def test_expert_mode_allocations_are_priced_per_device():
    """UNETLoaderDisTorch2MultiGPU with expert_mode_allocations 'cuda:0,4gb;cuda:1,6gb;cpu,*' (it wins over
    virtual_vram_gb, wrappers.py:100-106 and distorch_2.py:372-378): 4 GiB of the expert on cuda:0, 6 GiB on
    cuda:1, the rest in RAM."""
    data = json.loads(_corpus_file(PREFIX + "wan2_2_t2v_lightx2v_lora_distorch2_api.json").read_text())
    data["50"]["inputs"]["expert_mode_allocations"] = "cuda:0,4gb;cuda:1,6gb;cpu,*"
    wl = read_workflow(data)
    devices = devices_from_args(_args("--gpus", "RTX 4090,RTX 3060"))
    b = estimate(wl, devices[0], None, others=devices[1:])
    high = next(sb for sb in b.stages if sb.stage.kind == "sample" and "high-noise" in sb.title)
    expert = next(it for it in high.items if it.model is not None and it.model.kind == "diffusion")
    assert expert.bytes == 4 * GIB and "expert allocation" in expert.assumption
    place = {p.device: p for p in b.placement}
    assert place["cuda:1"].donor_for == ("diffusion_models/wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors",)
    assert place["cuda:1"].peak_bytes == 6 * GIB + devices[1].context_bytes


@pytest.mark.parametrize("text", ["cuda:0,4gb;cuda:1,6gb;cpu,*", "cuda:1,512m;cuda:0,3.5g;cpu,*",
                                  "cuda:0,30gb;cpu,*", "cuda:0,1000000000b;cuda:1,*", "cuda:0,2gb;cuda:1,2gb"])
def test_our_allocation_reader_agrees_with_distorch2s_parser(text):
    from nodes.estimator.machine.distorch import read_allocation
    model = int(13.31 * GIB)
    ours = read_allocation(text, model)
    theirs = _parse_with_distorch2(text, model, {"cpu": 64 * GIB, "cuda:0": 24 * GIB, "cuda:1": 24 * GIB})["bytes"]
    assert set(ours) == set(theirs) and all(abs(ours[k] - theirs[k]) <= 1 for k in ours), (ours, theirs)
