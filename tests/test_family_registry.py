"""The family registry (nodes/estimator/families/): each module holds one family's facts, the estimator's
tables are views over them, a key two modules define is refused, and a new module file is picked up with
no other file touched (the estimator copied to a temporary folder, one file added there)."""
import importlib
import shutil
import sys
import types
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.physics import memory, vae_memory
from vram_budget.nodes.estimator.models import name_infer
from vram_budget.nodes.estimator.machine import resolve, runtime
from vram_budget.nodes.estimator.families import FAMILIES, registry

ESTIMATOR = Path(__file__).resolve().parents[1] / "nodes" / "estimator"


def test_every_view_is_the_registrys():
    assert memory.DEFAULT_TEXT_TOKENS is registry.TEXT_TOKENS
    assert memory.WORKING_MEMORY_ALIAS is registry.WORKING_MEMORY_ALIAS
    assert memory.ARCH_ROUTES is registry.ARCH_ROUTES
    assert runtime.MEMORY_USAGE_FACTOR is registry.MEMORY_USAGE_FACTOR
    assert resolve.CHECKPOINT_SPLITS is registry.CHECKPOINT_SPLITS
    assert vae_memory.FAMILIES is registry.VAE_FAMILIES
    assert name_infer._RULES["diffusion"] == registry.name_rules("diffusion")


def test_every_fact_names_a_family_of_the_registry():
    """Keys of the per-family sections are family ids (or the coarse groups memory.family_group gives)."""
    groups = {"flux", "wan", "unet"}
    for section in ("MEMORY_USAGE_FACTOR", "CHECKPOINT_SPLITS", "WORKING_MEMORY_ALIAS", "GGUF_SAME_ARCH"):
        for key in getattr(registry, section):
            assert key in FAMILIES, f"{section}[{key!r}] names no family"
    for key in registry.TEXT_TOKENS:
        assert key in FAMILIES or key in groups, key
    for fam, _key, _value, _target in registry.ARCH_ROUTES:
        assert fam in FAMILIES
    for role in ("diffusion", "text_encoder", "vae", "clip_vision", "audio_encoder", "lora"):
        for rule in registry.name_rules(role):
            assert rule.family in FAMILIES, rule
    for fid, vae in registry.VAE_FAMILIES.items():
        assert FAMILIES[fid].kind == "vae" and vae.id == fid


def test_a_key_defined_in_two_modules_is_refused():
    A, B = types.ModuleType("families.a"), types.ModuleType("families.b")
    A.MEMORY_USAGE_FACTOR, B.MEMORY_USAGE_FACTOR = {"x": 1.0}, {"x": 2.0}

    with pytest.raises(ValueError, match=r"MEMORY_USAGE_FACTOR\['x'\] is defined in both families.a and families.b"):
        registry.merge("MEMORY_USAGE_FACTOR", (A, B))
    assert registry.merge("MEMORY_USAGE_FACTOR", (A,)) == {"x": 1.0}


NEW_FAMILY = '''
from ._spec import DIFFUSION, Detector, Family, Found, _r

ORDER = 5
FAMILIES = {"toy-dit": Family(DIFFUSION, "Toy DiT (1B)", dict(hidden_size=1024, depth=8, heads=8, head_dim=128,
            in_channels=16, out_channels=16, patch_size=(2, 2), latent_channels=16, spatial_compression=8))}
MEMORY_USAGE_FACTOR = {"toy-dit": 2.5}
NAME_RULES = {DIFFUSION: (_r(r"toy[_-]?dit", "toy-dit", "Toy DiT (1B)", 1_000_000_000, "test"),)}
# a look-alike header: Wan's head.modulation plus a key of its own, tested before Wan (model_detection.py :728)
DETECT = {DIFFUSION: (Detector(keys=(("head.modulation", "toy_marker.weight"),), order=700,
                               read=lambda v: Found("toy-dit", {"hidden_size": v.dim("head.modulation", -1)},
                                                    ("keys head.modulation + toy_marker.weight",))),)}
'''


def test_a_new_family_is_one_new_file(tmp_path, monkeypatch):
    pkg = tmp_path / "estcopy"
    shutil.copytree(ESTIMATOR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "families" / "toy_dit.py").write_text(NEW_FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        fam = importlib.import_module("estcopy.families")
        ni = importlib.import_module("estcopy.models.name_infer")
        rt = importlib.import_module("estcopy.machine.runtime")
        assert fam.FAMILIES["toy-dit"].label == "Toy DiT (1B)"
        assert rt.MEMORY_USAGE_FACTOR["toy-dit"] == 2.5
        info, _why = ni.infer_info("toy_dit_fp16.safetensors", "diffusion", "diffusion_models")
        assert (info.family, info.params) == ("toy-dit", 1_000_000_000)
        assert fam.registry.module_of("toy-dit") == "toy_dit"
        # its header is told apart from Wan's by its own module alone (detect.py untouched)
        import numpy as np
        from safetensors.numpy import save_file

        det = importlib.import_module("estcopy.families.detect")
        wan = {"head.modulation": np.zeros((1, 2, 1536), np.float16),
               "blocks.0.ffn.0.weight": np.zeros((4, 4), np.float16)}
        save_file(wan, str(tmp_path / "a.safetensors"))
        save_file({**wan, "toy_marker.weight": np.zeros((2,), np.float16)}, str(tmp_path / "b.safetensors"))
        assert det.describe(tmp_path / "a.safetensors").family.startswith("wan")
        toy = det.describe(tmp_path / "b.safetensors")
        assert (toy.family, toy.arch.get("hidden_size")) == ("toy-dit", 1536)
    finally:
        for name in [m for m in sys.modules if m == "estcopy" or m.startswith("estcopy.")]:
            del sys.modules[name]
    assert "toy-dit" not in FAMILIES  # the real registry is untouched


def test_header_detectors_live_in_their_family_modules_in_comfyuis_order():
    """Issue 34: detect.py holds no family's key test; every diffusion detector is its module's DETECT, and the
    ordered ones run in comfy/model_detection.py's order."""
    from vram_budget.nodes.estimator.families import _spec

    found = registry.detectors("diffusion")
    assert all(fn.__module__.rsplit(".", 1)[-1] not in ("detect", "registry") for fn in
               (getattr(f, "read", f) for f in found))
    orders = [f.order for f in found if isinstance(f, _spec.Detector) and f.order is not None]
    assert orders == sorted(orders) and len(orders) >= 10
    import inspect

    from vram_budget.nodes.estimator.families import detect

    text = inspect.getsource(detect._detect_diffusion) + inspect.getsource(detect._detect_any)
    for fid in ("flux1-dev", "wan2.1-14b", "sdxl", "qwen-image", "hunyuan-video"):
        assert f'"{fid}"' not in text, fid
    assert registry.GGUF_ARCH["wan"] == "wan2.1-14b" and registry.GGUF_ARCH["sd1"] == "sd15"


def test_a_misspelled_or_mistyped_section_is_refused_at_load():
    """Issue 34, the sections as a contract: a module that spells MEMORY_USAGE_FACTORS (or FAMILY, or gives a
    section of the wrong type) would load and be silently ignored; check_module refuses it and names the file."""
    import types

    import pytest

    from nodes.estimator.families import registry

    for bad, near in (("MEMORY_USAGE_FACTORS", "MEMORY_USAGE_FACTOR"), ("FAMILY", "FAMILIES"),
                      ("NAME_RULE", "NAME_RULES"), ("CALIBRATON", "CALIBRATION")):
        mod = types.ModuleType("nodes.estimator.families.fake")
        setattr(mod, bad, {"x": 1.0})
        with pytest.raises(ValueError, match=rf"families/fake\.py: {bad} is not a registry section.*{near}"):
            registry.check_module(mod)
    mod = types.ModuleType("nodes.estimator.families.fake")
    mod.CALIBRATION = [("x", 1.0)]
    with pytest.raises(ValueError, match="CALIBRATION is a list, the registry reads a dict"):
        registry.check_module(mod)
    ok = types.ModuleType("nodes.estimator.families.fake")
    ok.VAE, ok.PATCH, ok.FILM_TRACE, ok.ORDER = "vae", 14, {"a": 1}, 5  # kind constants and a module's own tables
    registry.check_module(ok)
    for mod in registry.MODULES:  # every shipped family keeps the contract
        registry.check_module(mod)


def test_the_adding_a_family_guide_names_what_exists():
    """docs/adding-a-family.md: every section, file and Detector field it names exists (a rename breaks this)."""
    import dataclasses
    import re

    from vram_budget.nodes.estimator.families import _spec

    repo = ESTIMATOR.parents[1]
    doc = (repo / "docs" / "adding-a-family.md").read_text(encoding="utf-8")
    for name in set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", doc)):
        assert name in registry.SECTIONS or name.startswith("P_") or name in ("VARIANTS",), name
    for path in set(re.findall(r"`((?:families|tests|bench)/[\w/.]+\.py)`", doc)):
        assert (ESTIMATOR / path).exists() or (repo / path).exists(), path
    fields = {f.name for f in dataclasses.fields(_spec.Detector)}
    for field in re.findall(r"^\s+(keys|banned|read|order)=", doc, re.M):
        assert field in fields
    assert "registry.detectors" in doc and callable(registry.detectors)
