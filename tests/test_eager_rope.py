"""nodes/comfy_trace.py EagerRope: the one RoPE swap used by the live training trace and by
bench/trace_working_memory.py's rope_eager variant. Stand-in modules only (no torch, no ComfyUI)."""
from __future__ import annotations

import sys
import types

import pytest

from vram_budget.nodes.comfy_trace import EagerRope


def _module(monkeypatch, name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    parts = name.split(".")
    for i in range(1, len(parts)):  # parents, so importlib.import_module finds them in sys.modules
        parent = ".".join(parts[:i])
        if parent not in sys.modules:
            monkeypatch.setitem(sys.modules, parent, types.ModuleType(parent))
    monkeypatch.setitem(sys.modules, name, mod)
    return mod


def fused_rope(*a):
    return "fused"


def fused_rope1(*a):
    return "fused1"


def eager_rope(*a):
    return "eager"


def eager_rope1(*a):
    return "eager1"


@pytest.fixture
def kitchen(monkeypatch):
    return _module(monkeypatch, "comfy_kitchen.backends.eager.rope", apply_rope=eager_rope, apply_rope1=eager_rope1)


def test_patches_every_comfy_ldm_binding_and_restores(monkeypatch, kitchen):
    flux = _module(monkeypatch, "comfy.ldm.flux.math", apply_rope=fused_rope, apply_rope1=fused_rope1)
    wan = _module(monkeypatch, "comfy.ldm.wan.model", apply_rope1=fused_rope1)
    other = _module(monkeypatch, "comfy.other", apply_rope1=fused_rope1)  # not comfy.ldm.*: left alone
    with EagerRope():
        assert (flux.apply_rope, flux.apply_rope1, wan.apply_rope1) == (eager_rope, eager_rope1, eager_rope1)
        assert not hasattr(wan, "apply_rope")  # a name a module does not bind is not added
        assert other.apply_rope1 is fused_rope1
    assert (flux.apply_rope, flux.apply_rope1, wan.apply_rope1) == (fused_rope, fused_rope1, fused_rope1)


def test_import_first_loads_the_named_modules_before_patching(monkeypatch, kitchen):
    imported = []
    real_import = __import__("importlib").import_module

    def fake_import(name, *a, **k):
        imported.append(name)
        if name == "comfy.ldm.qwen_image.model":  # "loads" it: now it is in sys.modules
            _module(monkeypatch, name, apply_rope1=fused_rope1)
        return real_import(name, *a, **k)

    monkeypatch.setattr("importlib.import_module", fake_import)
    rope = EagerRope(import_first=("comfy.ldm.qwen_image.model",))
    with rope:
        assert imported == ["comfy.ldm.qwen_image.model"]
        assert sys.modules["comfy.ldm.qwen_image.model"].apply_rope1 is eager_rope1
    assert sys.modules["comfy.ldm.qwen_image.model"].apply_rope1 is fused_rope1


def test_without_comfy_kitchen(monkeypatch):
    monkeypatch.setitem(sys.modules, "comfy_kitchen", None)  # import raises ImportError
    flux = _module(monkeypatch, "comfy.ldm.flux.math", apply_rope=fused_rope)
    with EagerRope():  # the live trace: ComfyUI already runs its own eager RoPE, nothing to do
        assert flux.apply_rope is fused_rope
    with pytest.raises(ImportError):  # the bench variant must not record the fused numbers as eager
        with EagerRope(required=True):
            pass
