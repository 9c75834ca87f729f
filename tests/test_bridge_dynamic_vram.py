"""comfy_bridge.dynamic_vram_status against the two comfy-aimdo APIs, with fake modules (no GPU,
no ComfyUI): the getter of the comfy-aimdo that ComfyUI 0.18.2 installs, and comfy-aimdo 0.4.13
(ComfyUI 0.33.0's pin), which only has set_simple_vram_headroom and keeps the value in its library."""
from __future__ import annotations

import ctypes
import sys
import types

import pytest

from vram_budget.nodes import comfy_bridge

GiB = 1024 ** 3
MiB = 1024 ** 2


def _install(monkeypatch, control, *, aimdo_enabled=True, reserve_vram=None, vram_headroom=None):
    comfy = types.ModuleType("comfy")
    cmm = types.ModuleType("comfy.memory_management")
    cmm.aimdo_enabled = aimdo_enabled
    cli = types.ModuleType("comfy.cli_args")
    args = types.SimpleNamespace(reserve_vram=reserve_vram)
    if vram_headroom is not None:  # 0.33's --vram-headroom; 0.18 has no such flag
        args.vram_headroom = vram_headroom
    cli.args = args
    comfy.memory_management, comfy.cli_args = cmm, cli
    aimdo = types.ModuleType("comfy_aimdo")
    aimdo.control = control
    for name, mod in {"comfy": comfy, "comfy.memory_management": cmm, "comfy.cli_args": cli,
                      "comfy_aimdo": aimdo, "comfy_aimdo.control": control}.items():
        monkeypatch.setitem(sys.modules, name, mod)


def _control_with_getter(simple: int, usage: int):
    """comfy-aimdo as ComfyUI 0.18.2 installs it: get_simple_vram_headroom() exists."""
    control = types.ModuleType("comfy_aimdo.control")
    control.get_simple_vram_headroom = lambda: simple
    control.get_total_vram_usage = lambda: usage
    return control


class _Lib:  # stands for the ctypes.CDLL of aimdo.so
    pass


def _control_0_4(usage: int, lib=None):
    """comfy-aimdo 0.4.13: init / set_simple_vram_headroom / get_total_vram_usage and `lib`, no getter."""
    control = types.ModuleType("comfy_aimdo.control")
    control.lib = lib
    control.set_simple_vram_headroom = lambda headroom: None
    control.get_total_vram_usage = lambda: usage
    return control


def test_getter_api(monkeypatch):
    _install(monkeypatch, _control_with_getter(3 * GiB, 5 * GiB))
    assert comfy_bridge.dynamic_vram_status() == comfy_bridge.DynamicVram(True, 3 * GiB, 5 * GiB)


def test_getter_api_keeps_the_256_mb_floor(monkeypatch):
    _install(monkeypatch, _control_with_getter(0, 1))
    assert comfy_bridge.dynamic_vram_status().headroom == 256 * MiB


def test_aimdo_0_4_reads_the_library_value(monkeypatch):
    lib = _Lib()
    read = {}

    def lib_int64(got_lib, name):
        read[name] = got_lib
        return 2 * GiB

    monkeypatch.setattr(comfy_bridge.memory, "_lib_int64", lib_int64)
    _install(monkeypatch, _control_0_4(7 * GiB, lib), reserve_vram=1.0)
    status = comfy_bridge.dynamic_vram_status()
    assert status == comfy_bridge.DynamicVram(True, 2 * GiB, 7 * GiB)
    assert read == {"simple_vram_headroom": lib}


def test_aimdo_0_4_adds_the_per_device_vram_headroom(monkeypatch):
    monkeypatch.setattr(comfy_bridge.memory, "_lib_int64", lambda lib, name: 256 * MiB)
    _install(monkeypatch, _control_0_4(0, _Lib()), vram_headroom=1.5)
    assert comfy_bridge.dynamic_vram_status().headroom == 256 * MiB + int(1.5 * GiB)


@pytest.mark.parametrize("reserve, expected", [(None, 256 * MiB), (2.0, 2 * GiB)])
def test_aimdo_0_4_without_the_symbol_uses_what_main_py_passed(monkeypatch, reserve, expected):
    # 0.33 main.py:99-101: init(simple_vram_headroom=--reserve-vram GB or None = library default)
    monkeypatch.setattr(comfy_bridge.memory, "_lib_int64", lambda lib, name: None)
    _install(monkeypatch, _control_0_4(4 * GiB, _Lib()), reserve_vram=reserve, vram_headroom=0)
    assert comfy_bridge.dynamic_vram_status() == comfy_bridge.DynamicVram(True, expected, 4 * GiB)


def test_a_failing_headroom_does_not_lose_the_aimdo_bytes(monkeypatch):
    control = _control_with_getter(0, 9 * GiB)

    def broken():
        raise RuntimeError("comfy-aimdo is not initialized")

    control.get_simple_vram_headroom = broken
    _install(monkeypatch, control)
    assert comfy_bridge.dynamic_vram_status() == comfy_bridge.DynamicVram(True, None, 9 * GiB)


def test_disabled_dynamic_vram(monkeypatch):
    _install(monkeypatch, _control_with_getter(GiB, GiB), aimdo_enabled=False)
    assert comfy_bridge.dynamic_vram_status() == comfy_bridge.DynamicVram(False, None, None)


def test_lib_int64_reads_an_exported_variable():
    # libpython exports PyExc_TypeError, an 8-byte pointer variable: the same read as aimdo.so's
    # int64 simple_vram_headroom
    if not hasattr(ctypes, "pythonapi") or ctypes.sizeof(ctypes.c_void_p) != 8:
        pytest.fail("needs a 64-bit CPython")
    want = ctypes.c_void_p.in_dll(ctypes.pythonapi, "PyExc_TypeError").value
    assert comfy_bridge.memory._lib_int64(ctypes.pythonapi, "PyExc_TypeError") == ctypes.c_int64(want).value
    assert comfy_bridge.memory._lib_int64(ctypes.pythonapi, "no_such_symbol_vram_budget") is None
