"""The family registry (nodes/estimator/families/): each module holds one family's facts, the estimator's
tables are views over them, a key two modules define is refused, and a new module file is picked up with
no other file touched (the estimator copied to a temporary folder, one file added there)."""
import importlib
import shutil
import sys
import types
from pathlib import Path

import pytest

from vram_budget.nodes.estimator import memory, name_infer, resolve, runtime, vae_memory
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
from ._spec import DIFFUSION, Family, _r

ORDER = 5
FAMILIES = {"toy-dit": Family(DIFFUSION, "Toy DiT (1B)", dict(hidden_size=1024, depth=8, heads=8, head_dim=128,
            in_channels=16, out_channels=16, patch_size=(2, 2), latent_channels=16, spatial_compression=8))}
MEMORY_USAGE_FACTOR = {"toy-dit": 2.5}
NAME_RULES = {DIFFUSION: (_r(r"toy[_-]?dit", "toy-dit", "Toy DiT (1B)", 1_000_000_000, "test"),)}
'''


def test_a_new_family_is_one_new_file(tmp_path, monkeypatch):
    pkg = tmp_path / "estcopy"
    shutil.copytree(ESTIMATOR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "families" / "toy_dit.py").write_text(NEW_FAMILY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        fam = importlib.import_module("estcopy.families")
        ni = importlib.import_module("estcopy.name_infer")
        rt = importlib.import_module("estcopy.runtime")
        assert fam.FAMILIES["toy-dit"].label == "Toy DiT (1B)"
        assert rt.MEMORY_USAGE_FACTOR["toy-dit"] == 2.5
        info, _why = ni.infer_info("toy_dit_fp16.safetensors", "diffusion", "diffusion_models")
        assert (info.family, info.params) == ("toy-dit", 1_000_000_000)
        assert fam.registry.module_of("toy-dit") == "toy_dit"
    finally:
        for name in [m for m in sys.modules if m == "estcopy" or m.startswith("estcopy.")]:
            del sys.modules[name]
    assert "toy-dit" not in FAMILIES  # the real registry is untouched


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
