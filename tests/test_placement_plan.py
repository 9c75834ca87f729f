"""Issue 24: the placement plan for several cards (nodes/estimator/plan/placement_plan.py): which device each
loader puts its model on, DisTorch2 allocations for a model too big for its card (parsed with DisTorch2's own
parser, extracted from ComfyUI-MultiGPU's source at test time), each card's predicted peak, the other
engines, and ComfyUI 0.33's own Select*Device nodes read as placements."""
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodes.estimator.plan import placement_plan
from nodes.estimator.graph import read_workflow
from nodes.estimator.plan.planning import estimate
from nodes.estimator.cli.cli_estimate import devices_from_args
from nodes.estimator.machine.distorch import gib_text
from test_multigpu_placement import NODEPACK, PREFIX, _args, _corpus_file, _parse_with_distorch2

REPO = Path(__file__).resolve().parent.parent
WAN22_FP16 = REPO / "example_workflows" / "wan22_14b_i2v_720p.json"
GIB = 1024**3


def _plan(path_or_data, *flags, core=False):
    """The plan on devices from the command line's flags; ``core=False``: a ComfyUI without its own placement nodes
    (the ComfyUI-MultiGPU / DisTorch2 target these tests check), ``core=True``: ComfyUI 0.33's Select*Device."""
    data = json.loads(Path(path_or_data).read_text()) if not isinstance(path_or_data, dict) else path_or_data
    devices = [dataclasses.replace(d, core_device_nodes=core) for d in devices_from_args(_args(*flags))]
    wl = read_workflow(data)
    return wl, devices, estimate(wl, devices[0], None, others=devices[1:])


def _templates():
    try:
        import comfyui_workflow_templates_json as t
    except ImportError:
        pytest.skip("comfyui-workflow-templates-json is not installed")
    return Path(t.__file__).parent / "templates"


def test_wan22_14b_fp16_i2v_on_two_24gb_cards_every_card_fits_and_the_strings_parse_with_distorch2():
    """The issue's done-when: Wan 2.2 14B fp16 image-to-video (26.6 GiB per expert) on two 24 GB cards. The
    experts go to different cards (no expert reloads the other's weights), each split by DisTorch2 with what
    fits beside its sampling's working memory on its own card and the rest in RAM; the text encoder and the
    VAE where they fit; every card's predicted peak fits."""
    wl, devices, b = _plan(WAN22_FP16, "--vram", "24,24")
    single = estimate(wl, devices[0], None)  # the same card alone, every model on it
    plan = b.placement_plan
    assert plan is not None and plan.engine == "ComfyUI-MultiGPU"
    by_model = {m: s for s in plan.loaders for m in s.models}
    high = by_model["diffusion_models/wan2.2_i2v_high_noise_14B_fp16.safetensors"]
    low = by_model["diffusion_models/wan2.2_i2v_low_noise_14B_fp16.safetensors"]
    assert {high.device, low.device} == {"cuda:0", "cuda:1"}
    te = by_model["text_encoders/umt5_xxl_fp16.safetensors"]
    assert te.device in ("cuda:0", "cuda:1", "cpu")
    for dev in plan.devices:
        if dev.device.startswith("cuda"):
            assert dev.outcome in ("fits", "tight"), dev
            assert dev.predicted_peak_bytes <= dev.card.capacity_bytes
    assert plan.verdict in ("fits", "tight")
    # each expert split with DisTorch2, written in the loader's widgets, hand-checked against its card's room
    assert len(plan.splits) == 2
    for setting in (high, low):
        assert setting.use_type == "UNETLoaderDisTorch2MultiGPU" and setting.changed
        assert setting.widgets["compute_device"] == setting.device
        text = setting.widgets["expert_mode_allocations"]
        assert text.startswith(setting.device + ",") and text.endswith(";cpu,*")
        split = next(s for s in plan.splits if s.device == setting.device)
        card = plan.devices[int(setting.device[-1])]
        on_card = split.allocation["shares"][setting.device]
        # hand check: the card keeps its usable memory less the reserve and less what its stage needs beside
        # the weights as ComfyUI runs it on one card (cond / uncond in turn), rounded down to 0.01 GiB
        stage = next(i for i, sb in enumerate(single.stages) if sb.stage.kind == "sample"
                     and any(r.name in setting.models[0] for r in sb.stage.models))
        run = single.runs[stage]
        room = devices[0].capacity_bytes - devices[0].reserve_bytes - (run.peak_bytes - run.resident_bytes)
        assert on_card == int(float(gib_text(room)[:-2]) * GIB) <= room
        weights = next(it.bytes for it in single.stages[stage].items if it.model is not None
                       and it.model.kind == "diffusion")
        assert on_card + split.offloaded_bytes == weights
        assert card.predicted_peak_bytes <= card.card.capacity_bytes
        if NODEPACK.is_file():
            model = on_card + split.offloaded_bytes
            got = _parse_with_distorch2(text, model, {"cpu": 128 * GIB, "cuda:0": 24 * GIB, "cuda:1": 24 * GIB})
            assert abs(got["bytes"][setting.device] - on_card) <= 1
            assert abs(got["bytes"]["cpu"] - split.offloaded_bytes) <= 1
        low_s, high_s = split.slowdown
        assert 1.0 <= low_s <= high_s and split.copy_seconds_per_step > 0 and split.compute_seconds_per_step > 0


def test_the_plan_is_in_the_json_and_the_report():
    # ComfyUI 0.18 has no SelectModelDevice: the plan targets ComfyUI-MultiGPU's DisTorch2 (said to be archived)
    out = subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", str(WAN22_FP16), "--vram", "24,24",
                          "--comfyui-version", "0.18", "--json"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    plan = data["placement_plan"]
    assert {"engine", "verdict", "devices", "loaders", "splits", "other_engines"} <= set(plan)
    assert all(isinstance(d["peak_bytes"], int) for d in plan["devices"])
    assert any(s["widgets"].get("expert_mode_allocations") for s in plan["loaders"])
    assert plan["engine"] == "ComfyUI-MultiGPU" and any("archived" in n for n in plan["notes"])
    text = subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", str(WAN22_FP16), "--vram", "24,24",
                           "--comfyui-version", "0.18"], cwd=REPO, capture_output=True, text=True, timeout=120).stdout
    assert "Placement plan for these cards" in text and "UNETLoaderDisTorch2MultiGPU" in text
    # ComfyUI 0.33 (the default) has its own placement nodes: the plan adds them, moves models whole, no DisTorch2
    core = json.loads(subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", str(WAN22_FP16),
                                      "--vram", "24,24", "--json"], cwd=REPO, capture_output=True, text=True,
                                     timeout=120).stdout)["placement_plan"]
    assert core["engine"] == "ComfyUI" and not core["splits"]
    assert not any(s["use_type"].endswith("MultiGPU") for s in core["loaders"])
    moved = [s for s in core["loaders"] if s["changed"]]
    assert moved and all(s["target"] == "ComfyUI" and s["insert"] in placement_plan.CORE_SELECT_NODES_ALL
                         and s["insert_widgets"]["device"].startswith("gpu:") for s in moved)
    text = subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", str(WAN22_FP16), "--vram", "24,24"],
                          cwd=REPO, capture_output=True, text=True, timeout=120).stdout
    assert "add SelectModelDevice on its MODEL output, device = 'gpu:1'" in text
    one = json.loads(subprocess.run([sys.executable, "-m", "nodes.estimator.cli", "estimate", str(WAN22_FP16),
                                     "--vram", "24", "--json"], cwd=REPO, capture_output=True, text=True,
                                    timeout=120).stdout)
    assert "placement_plan" not in one  # one card: nothing to place


def test_fp8_template_on_a_4090_and_a_3090_needs_no_split():
    """The official Wan 2.2 14B fp8 image-to-video template: each 13.3 GiB expert fits its own card whole, so
    the plan is the device-only variants (UNETLoaderMultiGPU), no DisTorch2 string, no copies."""
    _, devices, b = _plan(_templates() / "video_wan2_2_14B_i2v.json", "--gpus", "RTX 4090,RTX 3090")
    plan = b.placement_plan
    experts = [s for s in plan.loaders if "14B" in " ".join(s.models) and "diffusion_models" in s.models[0]]
    assert len(experts) == 2 and {s.device for s in experts} == {"cuda:0", "cuda:1"}
    assert not plan.splits and plan.copy_seconds == 0
    moved = next(s for s in experts if s.device == "cuda:1")
    assert moved.use_type == "UNETLoaderMultiGPU" and moved.widgets == {"device": "cuda:1"}
    assert all(d.outcome in ("fits", "tight") for d in plan.devices if d.device.startswith("cuda"))


def test_cfg_split_is_no_gain_at_cfg_1_and_priced_above_it():
    data = json.loads(_corpus_file(PREFIX + "wan2_2_t2v_lightx2v_lora_distorch2_api.json").read_text())
    _, _, b = _plan(data, "--gpus", "RTX 4090,RTX 4090")
    cfg_split = next(e for e in b.placement_plan.other_engines if "CFG Split" in e["engine"])
    assert cfg_split["useful"] is False and "no gain at CFG 1" in cfg_split["why"]
    # the fp16 example samples at CFG > 1: priced, and a 26.6 GiB copy per card does not fit 24 GB cards
    _, _, b = _plan(WAN22_FP16, "--vram", "24,24")
    cfg_split = next(e for e in b.placement_plan.other_engines if "CFG Split" in e["engine"])
    assert cfg_split["useful"] is False and cfg_split["need_per_card_bytes"] > 24 * 10**9
    raylight = next(e for e in b.placement_plan.other_engines if e["engine"] == "Raylight")
    assert raylight["mode"] in ("FSDP CPU offload", "Ulysses degree 2 with FSDP on")
    _, _, b = _plan(WAN22_FP16, "--vram", "80,80")
    cfg_split = next(e for e in b.placement_plan.other_engines if "CFG Split" in e["engine"])
    assert cfg_split["useful"] is True
    raylight = next(e for e in b.placement_plan.other_engines if e["engine"] == "Raylight")
    assert raylight["mode"] == "Ulysses degree 2, FSDP off"


def _with_select(data: dict, loader_id: str, socket: str, node_type: str, device: str) -> dict:
    """An API prompt with ComfyUI 0.33's Select*Device node between a loader and its users."""
    data = json.loads(json.dumps(data))
    new = "9001"
    data[new] = {"class_type": node_type, "inputs": {socket: [loader_id, 0], "device": device}}
    for nid, node in data.items():
        if nid == new:
            continue
        for k, v in node.get("inputs", {}).items():
            if isinstance(v, list) and len(v) == 2 and v[0] == loader_id and v[1] == 0:
                node["inputs"][k] = [new, 0]
    return data


def test_comfyuis_own_select_device_nodes_place_the_model():
    data = json.loads(_corpus_file(PREFIX + "wan2_2_t2v_lightx2v_lora_distorch2_api.json").read_text())
    vae_loader = next(n for n, v in data.items() if v.get("class_type", "").startswith("VAELoader"))
    placed = _with_select(data, vae_loader, "vae", "SelectVAEDevice", "gpu:1")
    wl, devices, b = _plan(placed, "--gpus", "RTX 4090,RTX 3060")
    vae_key = next(k for k in b.model_devices if k.startswith("vae/"))
    dev, why = b.model_devices[vae_key]
    assert dev == "cuda:1" and "SelectVAEDevice device=gpu:1" in why and "nodes_multigpu.py" in why
    decode = next(sb for sb in b.stages if sb.stage.kind == "vae_decode")
    assert decode.device == "cuda:1"
    # "default" keeps the loader's device
    wl = read_workflow(_with_select(data, vae_loader, "vae", "SelectVAEDevice", "default"))
    assert all(r.device is None or r.device == "cuda:0" for s in wl.stages for r in s.models if r.role == "vae")


def test_one_card_or_nothing_to_place_gives_no_plan():
    wl = read_workflow(json.loads(WAN22_FP16.read_text()))
    devices = devices_from_args(_args("--vram", "24"))
    assert placement_plan.plan(wl, devices) is None


def test_the_machines_ram_is_judged_once_for_the_plan():
    """ComfyUI is one process for every card: the DisTorch2 shares both experts keep on the CPU (2 x 14.30
    GiB here) plus ComfyUI and the OS must fit the machine's RAM. 23 GiB without swap is out of memory
    whatever the cards say; 64 GiB fits; RAM not given is said."""
    _, _, b = _plan(WAN22_FP16, "--vram", "24,24", "--ram", "23")
    plan = b.placement_plan
    offloaded = sum(s.offloaded_bytes for s in plan.splits)
    assert plan.ram_floor_bytes >= offloaded + 3 * GIB  # ComfyUI 2 GiB + Linux 1 GiB, assumed (host_memory.py)
    assert plan.host_outcome == "oom" and plan.verdict == "oom"
    assert all(d.outcome in ("fits", "tight") for d in plan.devices if d.device.startswith("cuda"))
    assert any("out of memory" in n and "system RAM" in n for n in plan.notes)
    _, _, b = _plan(WAN22_FP16, "--vram", "24,24", "--ram", "64")
    assert b.placement_plan.host_outcome == "fits" and b.placement_plan.verdict in ("fits", "tight")
    _, _, b = _plan(WAN22_FP16, "--vram", "24,24")
    assert b.placement_plan.host_outcome == "not_checked"
    assert any("give --ram" in n for n in b.placement_plan.notes)


def test_classic_memory_management_keeps_comfyuis_own_load_rule():
    """Under classic memory management ComfyUI loads a model whole only when 1.1 x its weights plus its own
    inference estimate are free (model_management.py load_models_gpu); the plan shrinks each DisTorch2 share
    until the card's simulation streams nothing, still one expert per card."""
    _, devices, b = _plan(WAN22_FP16, "--vram", "24,24", "--memory-mode", "classic", "--ram", "64")
    plan = b.placement_plan
    devs = {s.device for s in plan.loaders if "14B" in s.models[0]}
    assert devs == {"cuda:0", "cuda:1"}
    for sp in plan.splits:
        assert sp.allocation["shares"][sp.device] < 13 * GIB  # less than the dynamic plan's 12.32 GiB + margin
    assert all(d.outcome in ("fits", "tight") for d in plan.devices if d.device.startswith("cuda"))


def test_a_distorch2_example_keeps_its_loader_types_and_loses_its_virtual_vram():
    """ComfyUI-MultiGPU's own Wan 2.2 example: both fp8 experts with 13 GB of virtual VRAM on cuda:0. With
    an RTX 4090 and an RTX 3090 each expert fits a card whole: the DisTorch2 loaders keep their type, the
    low-noise one goes to cuda:1, and virtual_vram_gb is set to 0 on both (no copies per step)."""
    data = json.loads(_corpus_file(PREFIX + "wan2_2_t2v_lightx2v_lora_distorch2_api.json").read_text())
    _, _, b = _plan(data, "--gpus", "RTX 4090,RTX 3090")
    plan = b.placement_plan
    experts = {("high" if "high_noise" in s.models[0] else "low"): s for s in plan.loaders if "14B" in s.models[0]}
    assert set(experts) == {"high", "low"}
    for s in experts.values():
        assert s.use_type == s.node_type == "UNETLoaderDisTorch2MultiGPU" and s.changed
        assert s.widgets["virtual_vram_gb"] == 0 and s.widgets["expert_mode_allocations"] == ""
    assert {experts["high"].device, experts["low"].device} == {"cuda:0", "cuda:1"}
    assert not plan.splits and plan.copy_seconds == 0


def test_cfg_split_speed_from_each_cards_throughput_and_ulysses_degree_divides_the_heads():
    """CFG split runs one cond per card and the slower card paces each step: two H100s sample 2x as fast,
    an RTX 4090 with an RTX 3060 slower than the 4090 alone (runtime.forward_flops at each card's tensor
    throughput; the ratio by hand). Raylight's Ulysses degree must divide Wan 14B's 40 heads: 2 of 3 cards."""
    from nodes.estimator.machine.gpus import find_card
    _, _, b = _plan(WAN22_FP16, "--gpus", "H100,H100,H100")
    engines = {e["engine"]: e for e in b.placement_plan.other_engines}
    split = engines["ComfyUI MultiGPU CFG Split (MultiGPU_WorkUnits)"]
    assert split["speedup"] == 2.0 and split["useful"] is True
    assert engines["Raylight"]["mode"] == "Ulysses degree 2, FSDP off"
    _, devices, b = _plan(WAN22_FP16, "--gpus", "RTX 4090,RTX 3060")
    split = next(e for e in b.placement_plan.other_engines if "CFG Split" in e["engine"])
    by_hand = 2 / (devices[0].flops / devices[1].flops)  # alone: 2 conds on the 4090; split: 1 on the 3060
    assert split["speedup"] == pytest.approx(by_hand, abs=0.01) and split["speedup"] < 1
    assert split["useful"] is False and "slower" in split["why"]
    assert find_card("RTX 3060").flops < find_card("RTX 4090").flops


def test_the_machines_other_cuda_devices_become_cuda_1_on():
    """Inside ComfyUI the node and the panel add the machine's other CUDA devices (comfy_bridge.other_cuda_devices,
    from the measurements cuda_devices() makes: torch properties, NVML's free memory; numbers given here, no GPU
    on this machine): torch order, each card's size and what other processes hold on it, and none unless ComfyUI
    computes on cuda:0."""
    from vram_budget.nodes.comfy_bridge import CudaDeviceMemory, other_cuda_devices
    from vram_budget.nodes.estimator.machine.device import LaunchFlags

    def dev(i, name, total_gib, free_gib, compute):
        return CudaDeviceMemory(i, name, int(total_gib * GIB), None if free_gib is None else int(free_gib * GIB),
                                0, 0, compute, "nvml" if free_gib is not None else "properties")

    machine = [dev(1, "NVIDIA GeForce RTX 3090", 24, 20, False), dev(0, "NVIDIA GeForce RTX 4090", 23.99, 23, True),
               dev(2, "NVIDIA RTX A6000", 47.99, None, False)]
    others = other_cuda_devices(machine, LaunchFlags())
    assert [d.name for d in others] == ["NVIDIA GeForce RTX 3090", "NVIDIA RTX A6000"]
    assert others[0].total_bytes == 24 * GIB and others[0].other_processes_bytes == 4 * GIB  # 24 - 20 free
    assert others[1].other_processes_bytes == 0 and others[1].source == "live"  # free memory not known: none said
    assert others[0].flops > 0  # the catalogue card of the live name: its speed for the plan's copies
    machine[1] = dev(0, "NVIDIA GeForce RTX 4090", 23.99, 23, False)
    machine[0] = dev(1, "NVIDIA GeForce RTX 3090", 24, 20, True)
    assert other_cuda_devices(machine, LaunchFlags()) == []  # ComfyUI on cuda:1: not named by torch index here


def test_core_placement_nodes_first():
    """ComfyUI 0.33's own nodes are the target (ComfyUI-MultiGPU was archived on 2026-09-30): a model moves whole
    with a Select*Device node on its loader's output (device gpu:N), a text encoder to the CPU with CLIPLoader's own
    `device` widget; a workflow built on ComfyUI-MultiGPU keeps it; without the core nodes the plan says why."""
    unit = placement_plan.Unit("4", "UNETLoader", "UNETLoader", "diffusion", (), "cuda:0")
    s = placement_plan._core_setting(unit, "cuda:1")
    assert (s.insert, s.insert_socket, s.insert_widgets, s.use_type, s.changed) == \
        ("SelectModelDevice", "MODEL", {"device": "gpu:1"}, "UNETLoader", True)
    te = placement_plan.Unit("5", "CLIPLoader", "CLIPLoader", "text_encoder", (), "cuda:0")
    cpu = placement_plan._core_setting(te, placement_plan.CPU)
    assert (cpu.widgets, cpu.insert) == ({"device": "cpu"}, "")
    assert placement_plan._core_setting(te, "cuda:1").insert == "SelectCLIPDevice"
    vae = placement_plan.Unit("6", "VAELoader", "VAELoader", "vae", (), "cuda:0")
    assert placement_plan._core_setting(vae, "cuda:1").insert_widgets == {"device": "gpu:1"}
    assert not placement_plan._core_setting(vae, placement_plan.CPU).changed  # SelectVAEDevice offers no cpu
    assert not placement_plan._core_setting(unit, "cuda:0").changed
    assert placement_plan.core_device("cuda:3") == "gpu:3" and placement_plan.core_device("cpu") == "cpu"
    mg = placement_plan.Unit("7", "UNETLoaderMultiGPU", "UNETLoader", "diffusion", (), "cuda:0")
    wl, devices, b = _plan(WAN22_FP16, "--vram", "24,24", core=True)
    assert placement_plan.plan_target([unit], devices[0]) == "ComfyUI"
    assert placement_plan.plan_target([unit, mg], devices[0]) == "ComfyUI-MultiGPU"
    assert placement_plan.plan_target([unit], dataclasses.replace(devices[0], core_device_nodes=False)) == \
        "ComfyUI-MultiGPU"
    p = b.placement_plan
    assert p.engine == "ComfyUI" and not p.splits and p.verdict in ("runs_slower", "tight", "fits")
    assert not any("archived" in n for n in p.notes)
