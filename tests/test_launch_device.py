"""One launch-flags -> Device mapping (estimator/device.py device_for_launch) for the command line, the
VRAM Budget node and the panel, and one answer on a ComfyUI without a CUDA device.

ComfyUI is faked here (no torch, no ComfyUI): its parsed flags are a namespace with comfy.cli_args'
attribute names and defaults, comfy.model_management a module with the few functions the bridge asks.
tests/comfy/test_budget_node.py checks the same in a real ComfyUI (--cpu)."""
from __future__ import annotations

import argparse
import enum
import sys
import types
from dataclasses import replace

import pytest

from vram_budget.nodes import budget_node, comfy_bridge, routes, wan_planner
from vram_budget.nodes.comfy_bridge import launch as bridge_launch
from vram_budget.nodes.comfy_bridge import CudaDeviceMemory, DeviceState
from vram_budget.nodes.estimator.cli import cli_estimate
from vram_budget.nodes.estimator.machine.device import (
    COMFY_RESERVE_BYTES, CUDA_CONTEXT_BYTES, LaunchFlags, device_for_launch,
)
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.machine.host_memory import Host

GiB = 1024 ** 3
MiB = 1024 ** 2
HOST = Host(ram_total_bytes=64 * GiB, swap_total_bytes=0, source="live")

VRAMState = enum.Enum("VRAMState", "DISABLED NO_VRAM LOW_VRAM NORMAL_VRAM HIGH_VRAM SHARED")


def comfy_args(**flags) -> types.SimpleNamespace:
    """comfy.cli_args.args as ComfyUI 0.33 parses a command line: its attribute names and defaults."""
    args = dict(lowvram=False, novram=False, highvram=False, gpu_only=False, cpu=False, reserve_vram=None,
                vram_headroom=0.0, cpu_vae=False, disable_smart_memory=False, disable_dynamic_vram=False,
                enable_dynamic_vram=False, cache_classic=False, cache_lru=0, cache_none=False, cache_ram=None,
                high_ram=False, disable_pinned_memory=False)
    unknown = set(flags) - set(args)
    assert not unknown, unknown
    args.update(flags)
    return types.SimpleNamespace(**args)


class FakeDevice:  # a torch.device
    def __init__(self, type_: str, index: int | None = None):
        self.type, self.index = type_, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


def install_comfy(monkeypatch, args, *, version="0.33.0", compute="cpu", total=64 * GiB, free=40 * GiB,
                  aimdo=False, os_name="Linux"):
    """A ComfyUI started with `args` on a `compute` device (comfy.* and comfyui_version modules)."""
    comfy = types.ModuleType("comfy")
    mm = types.ModuleType("comfy.model_management")
    dev = FakeDevice(compute, 0 if compute == "cuda" else None)
    mm.get_torch_device = lambda: dev
    mm.get_total_memory = lambda d=None: total
    mm.get_free_memory = lambda d=None, torch_free_too=False: (free, free) if torch_free_too else free
    mm.get_torch_device_name = lambda d: "cpu" if compute == "cpu" else "cuda:0 NVIDIA GeForce RTX 4090 : native"
    mm.cpu_state = object() if compute == "cpu" else None
    mm.vram_state = VRAMState.DISABLED if compute == "cpu" else VRAMState.NORMAL_VRAM
    mm.extra_reserved_memory = lambda: COMFY_RESERVE_BYTES if args.reserve_vram is None else int(args.reserve_vram * GiB)
    mm.current_loaded_models = []
    mm.supports_fp8_compute = lambda d: compute == "cuda"
    mm.text_encoder_device = lambda: dev
    cmm = types.ModuleType("comfy.memory_management")
    cmm.aimdo_enabled = aimdo
    cli = types.ModuleType("comfy.cli_args")
    cli.args = args
    comfy.model_management, comfy.memory_management, comfy.cli_args = mm, cmm, cli
    mm.unet_manual_cast = lambda dtype, device: None  # 16-bit compute: no fp32 upcast
    ver = types.ModuleType("comfyui_version")
    ver.__version__ = version
    torch = types.ModuleType("torch")  # device_state / _compute_fp32_reason ask torch on a CUDA device
    torch.float16, torch.bfloat16, torch.float32 = "float16", "bfloat16", "float32"
    torch.cuda = types.SimpleNamespace(mem_get_info=lambda d: (free, total), memory_stats=lambda d: {})
    modules = {"comfy": comfy, "comfy.model_management": mm, "comfy.memory_management": cmm, "comfy.cli_args": cli,
               "comfyui_version": ver, "torch": torch}
    for name, mod in modules.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(bridge_launch.platform, "system", lambda: os_name)
    monkeypatch.setattr(bridge_launch, "live_host", lambda: HOST)  # psutil's figures move between two calls


def cli_device(*argv: str):
    parser = argparse.ArgumentParser()
    cli_estimate.add_estimate_parser(parser.add_subparsers())
    return cli_estimate.device_from_args(parser.parse_args(["estimate", "x.json", *argv]))


def test_launch_flags_from_comfyuis_args_and_the_command_lines():
    got = LaunchFlags.from_args(comfy_args(lowvram=True, reserve_vram=1.5, vram_headroom=0.5, cpu_vae=True,
                                           disable_smart_memory=True), os="windows", rules="0.18")
    assert got == LaunchFlags(lowvram=True, reserve_vram=1.5, vram_headroom=0.5, cpu_vae=True,
                              disable_smart_memory=True, os="windows", rules="0.18")
    assert got.vram_state == "low"
    # a ComfyUI that lacks a flag (0.8 has no --vram-headroom / --disable-dynamic-vram) keeps its default
    assert LaunchFlags.from_args(types.SimpleNamespace(highvram=True), rules="0.8") == LaunchFlags(
        highvram=True, rules="0.8")
    parser = argparse.ArgumentParser()
    cli_estimate.add_estimate_parser(parser.add_subparsers())
    cli = parser.parse_args(["estimate", "x.json", "--novram", "--os", "windows", "--comfyui-version", "0.8"])
    assert LaunchFlags.from_args(cli) == LaunchFlags(novram=True, os="windows", rules="0.8", release="0.8")


@pytest.mark.parametrize("release, compiler, te_gpu", [("", True, True), ("0.34.0", False, False),
                                                        ("0.35.1", True, False), ("0.37.0", True, True)])
def test_038_rules_by_release(release, compiler, te_gpu):
    """issue 32: the Comfy Compiler from 0.35 (under Dynamic VRAM, model_prefetch.py:29-30 in 0.38.1), text
    encoders on the GPU under Dynamic VRAM from 0.37 (model_management.py:1222-1223): a Pascal card under Linux
    then keeps its text encoder on the GPU; a release not given takes the newest rules."""
    d = device_for_launch(find_card("GTX 1070"), LaunchFlags(rules="0.38", release=release))
    assert (d.comfy_compiler, d.te_on_gpu, not d.te_cpu_reason) == (compiler, te_gpu, te_gpu)
    assert d.compute_fp32_reason  # the diffusion model still computes in fp32 there
    off = device_for_launch(find_card("RTX 4090"), LaunchFlags(release=release, disable_comfy_compiler=True))
    assert not off.comfy_compiler and not off.cuda_graphs
    classic = device_for_launch(find_card("RTX 4090"), LaunchFlags(release=release, highvram=True))
    assert not classic.comfy_compiler  # no Dynamic VRAM, no compiler
    old = device_for_launch(find_card("GTX 1070"), LaunchFlags(rules="0.33"))
    assert not old.comfy_compiler and old.te_cpu_reason


@pytest.mark.parametrize("argv, fast", [([], False), (["--disk", "nvme"], True), (["--disk", "sata"], False),
                                        (["--disk", "sata", "--fast-disk"], True),
                                        (["--disk", "nvme", "--disable-fast-disk"], False),
                                        (["--disk", "nvme", "--comfyui-version", "0.36"], False),
                                        (["--disk", "nvme", "--highvram"], False)])
def test_fast_disk_is_comfyuis_rule(argv, fast):
    """0.37+: fast disk when every disk of the model files is NVMe at PCIe Gen3 x4+ (storage.py:51 in 0.38.1; an
    unknown disk is not fast), --fast-disk forces it, --disable-fast-disk overrides; only under Dynamic VRAM."""
    assert cli_device("--gpu", "RTX 4090", *argv).fast_disk is fast


@pytest.mark.parametrize("flags, mode", [
    ({}, "dynamic"), ({"lowvram": True}, "dynamic"), ({"novram": True}, "classic"), ({"highvram": True}, "classic"),
    ({"gpu_only": True}, "classic"), ({"cpu": True}, "classic"), ({"disable_dynamic_vram": True}, "classic"),
    ({"highvram": True, "enable_dynamic_vram": True}, "dynamic"), ({"rules": "0.8"}, "classic"),
])
def test_memory_mode_is_comfyuis_enables_dynamic_vram(flags, mode):
    # cli_args.enables_dynamic_vram (0.18.2 cli_args.py:265-268, 0.33.0 :312-315) on an NVIDIA card from 0.16
    assert LaunchFlags(**flags).memory_mode(find_card("RTX 4090")) == mode
    assert LaunchFlags(**flags).memory_mode(find_card("RX 7900 XTX")) == ("dynamic" if flags.get("enable_dynamic_vram")
                                                                         else "classic")


def test_reserve_is_comfyuis_extra_reserved_vram():
    assert LaunchFlags().reserve_bytes(24 * GiB) == 400 * MiB
    assert LaunchFlags(os="windows").reserve_bytes(24 * GiB) == 700 * MiB  # +100 MiB over 15 GiB
    assert LaunchFlags(os="windows").reserve_bytes(12 * GiB) == 600 * MiB
    assert LaunchFlags(os="windows", reserve_vram=2.0).reserve_bytes(12 * GiB) == 2 * GiB


def test_measurements_replace_what_the_flags_say():
    card = find_card("GTX 1070")  # Pascal under Linux: text encoders on the CPU, fp32 compute, by rule
    ruled = device_for_launch(card, LaunchFlags(rules="0.33"))
    assert ruled.te_cpu_reason and ruled.compute_fp32_reason and ruled.source == "catalogue"
    measured = device_for_launch(card, LaunchFlags(rules="0.33"), te_cpu_reason="", compute_fp32_reason="", total_bytes=8 * GiB,
                                 other_processes_bytes=GiB, source="live")
    assert (measured.te_cpu_reason, measured.compute_fp32_reason) == ("", "")  # ComfyUI's own answer wins
    assert (measured.total_bytes, measured.other_processes_bytes, measured.source) == (8 * GiB, GiB, "live")
    assert device_for_launch(card, LaunchFlags(), other_processes_bytes=None).other_processes_bytes == 0  # None: not measured
    with pytest.raises(TypeError, match="vram_state"):
        device_for_launch(card, LaunchFlags(), vram_state="high")  # a flag, not a measurement


# The command line's flags and the same flags as ComfyUI parsed them (comfy_args), for one card
SAME_FLAGS = [
    ([], {}),
    (["--lowvram"], {"lowvram": True}),
    (["--novram"], {"novram": True}),
    (["--highvram"], {"highvram": True}),
    (["--gpu-only"], {"gpu_only": True}),
    (["--reserve-vram", "1.5"], {"reserve_vram": 1.5}),
    (["--reserve-vram", "0.5", "--vram-headroom", "2"], {"reserve_vram": 0.5, "vram_headroom": 2.0}),
    (["--cpu-vae", "--disable-smart-memory"], {"cpu_vae": True, "disable_smart_memory": True}),
]


@pytest.mark.parametrize("cli_flags, comfy_flags", SAME_FLAGS)
@pytest.mark.parametrize("version, rules", [("0.8.0", "0.8"), ("0.18.2", "0.18"), ("0.33.0", "0.33")])
@pytest.mark.parametrize("os_name", ["Linux", "Windows"])
@pytest.mark.parametrize("card", ["RTX 4090", "GTX 1070", "RTX 3060"])
def test_a_card_named_in_comfyui_is_the_command_lines(monkeypatch, cli_flags, comfy_flags, version, rules, os_name,
                                                      card):
    """The node's / panel's catalogue card on a ComfyUI started with some flags = `vram-budget estimate
    --gpu CARD` with the same flags (the host aside: the command line's comes from --ram)."""
    args = comfy_args(**comfy_flags)
    # what this ComfyUI's main.py does: Dynamic VRAM on NVIDIA from 0.16 unless a flag turns it off
    aimdo = rules != "0.8" and not (args.novram or args.highvram or args.gpu_only)
    install_comfy(monkeypatch, args, version=version, compute="cuda", aimdo=aimdo, os_name=os_name)
    node = budget_node.live_device("auto", 0.0, card)
    cli = cli_device("--gpu", card, "--comfyui-version", version, "--os", os_name.lower(), *cli_flags)
    assert replace(node, host=None, versions=()) == replace(cli, host=None, versions=())
    assert dict(cli.versions)["ComfyUI"] == version  # the release, for its known regressions
    assert node.host is HOST
    assert routes.estimator_device(card) == (node, None)


def test_cpu_only_comfyui_node_and_panel_give_one_device(monkeypatch):
    """`python main.py --cpu`: the node's "this GPU" and the panel's "no card" are one Device, the
    machine's memory (models live in RAM there), and the panel's note says so."""
    install_comfy(monkeypatch, comfy_args(cpu=True), compute="cpu", total=64 * GiB)
    node = budget_node.live_device("auto", 0.0)
    panel, note = routes.estimator_device(None)
    assert node == panel
    assert node.name == "cpu (no CUDA device: RAM)" and node.total_bytes == 64 * GiB
    assert (node.context_bytes, node.memory_mode, node.source, node.host) == (0, "classic", "live", HOST)
    assert note.startswith("No CUDA device: ComfyUI runs on the cpu") and "64.00 GiB" in note
    assert routes.default_device_name() == "System memory"
    # a named card and a typed budget: the same Device from the node, the Wan planner and the panel
    assert budget_node.live_device("auto", 0.0, "RTX 5090") == routes.estimator_device("RTX 5090")[0]
    typed = budget_node.live_device("auto", 12.0)
    assert (typed.name, typed.total_bytes, typed.source, typed.memory_mode) == ("12 GiB budget", 12 * GiB,
                                                                                "budget input", "classic")
    # the node's choice of mode is kept
    assert budget_node.live_device("dynamic", 0.0).memory_mode == "dynamic"


def test_the_live_gpu_is_measured_and_takes_the_flags(monkeypatch):
    args = comfy_args(lowvram=True, reserve_vram=2.0, vram_headroom=1.0)
    install_comfy(monkeypatch, args, compute="cuda", aimdo=True)
    total, free, reserved, allocated = int(23.65 * GiB), 20 * GiB, 2 * GiB, GiB
    monkeypatch.setattr(bridge_launch, "cuda_devices", lambda: [CudaDeviceMemory(
        index=0, name="NVIDIA GeForce RTX 4090", total=total, driver_free=free, torch_reserved=reserved,
        torch_allocated=allocated, is_compute_device=True, source="torch")])
    monkeypatch.setattr(comfy_bridge, "cuda_devices", bridge_launch.cuda_devices)  # the panel asks the face
    dev = budget_node.live_device("auto", 0.0)
    assert dev == routes.estimator_device(None)[0]
    assert (dev.name, dev.total_bytes, dev.source) == ("NVIDIA GeForce RTX 4090", total, "live")
    assert dev.other_processes_bytes == total - free - reserved - CUDA_CONTEXT_BYTES
    assert dev.reserved_unallocated_bytes == GiB and dev.held_by_models_bytes == 0
    assert (dev.memory_mode, dev.lowvram, dev.vram_state) == ("dynamic", True, "low")
    # --reserve-vram is ComfyUI 0.33's aimdo headroom, --vram-headroom on top: as on the command line
    assert (dev.reserve_bytes, dev.aimdo_headroom_bytes, dev.vram_headroom_bytes) == (2 * GiB, 2 * GiB, GiB)
    assert dev.flops == find_card("RTX 4090").flops  # the catalogue's speed for the live card
    assert routes.default_device_name() == "This GPU"


def test_an_unknown_live_gpu_keeps_its_measurements(monkeypatch):
    install_comfy(monkeypatch, comfy_args(), compute="cuda", aimdo=True)
    monkeypatch.setattr(bridge_launch, "cuda_devices", lambda: [CudaDeviceMemory(
        index=0, name="NVIDIA Future GPU 9000", total=96 * GiB, driver_free=90 * GiB, torch_reserved=0,
        torch_allocated=0, is_compute_device=True, source="torch")])
    monkeypatch.setattr(comfy_bridge, "cuda_devices", bridge_launch.cuda_devices)  # the panel asks the face
    dev = budget_node.live_device("auto", 0.0)
    assert (dev.name, dev.total_bytes, dev.fp8_compute, dev.memory_mode) == ("NVIDIA Future GPU 9000", 96 * GiB,
                                                                            True, "dynamic")
    assert dev.flops == 165.2e12  # an unknown card's speed: the default


def test_wan_planner_plans_for_the_nodes_device(monkeypatch):
    install_comfy(monkeypatch, comfy_args(cpu=True), compute="cpu")
    seen = []

    class Planned(Exception):
        pass

    def plan(spec, device, *args):
        seen.append(device)
        raise Planned

    monkeypatch.setattr(wan_planner, "plan", plan)
    with pytest.raises(Planned):
        wan_planner.WanPlanner().run("Wan 2.1 14B", "fp16", 832, 480, 81, 0.0, "balanced")
    assert seen == [budget_node.live_device("auto", 0.0)]


def test_a_live_038_comfyui_asks_its_own_fast_disk_rule(monkeypatch, tmp_path):
    """Inside ComfyUI 0.37+ the models' disk is ComfyUI's own answer (comfy/storage.py fast_storage on the
    diffusion_models folder); the release picks the rules; --disable-fast-disk in its args overrides."""
    args = comfy_args()
    args.fast_disk, args.disable_fast_disk, args.disable_comfy_compiler = False, False, False
    install_comfy(monkeypatch, args, version="0.38.1", compute="cuda", aimdo=True)
    storage = types.ModuleType("comfy.storage")
    asked = []
    storage.fast_storage = lambda path: asked.append(path) or True
    folders = types.ModuleType("folder_paths")
    folders.get_folder_paths = lambda name: [str(tmp_path)] if name == "diffusion_models" else []
    monkeypatch.setitem(sys.modules, "comfy.storage", storage)
    monkeypatch.setitem(sys.modules, "folder_paths", folders)
    flags = comfy_bridge.live_launch_flags()
    assert (flags.rules, flags.release, flags.disk) == ("0.38", "0.38.1", "nvme") and asked == [str(tmp_path)]
    dev = device_for_launch(find_card("RTX 4090"), flags)
    assert dev.fast_disk and dev.comfy_compiler
    args.disable_fast_disk = True
    assert not device_for_launch(find_card("RTX 4090"), comfy_bridge.live_launch_flags()).fast_disk
    storage.fast_storage = lambda path: (_ for _ in ()).throw(OSError("no sysfs"))
    assert comfy_bridge.live_fast_disk() is None  # a disk question never costs an estimate
    monkeypatch.delitem(sys.modules, "comfy.storage")
    assert comfy_bridge.live_fast_disk() is None  # 0.33: no such rule
