"""The family registry: every module of this package but the private ones (`_spec`, `detect`,
`registry`) is one family or a group of close variants, holding all that family's facts in named
sections (FAMILIES, NAME_RULES, WORKING_MEMORY_ALIAS, ARCH_ROUTES, TEXT_TOKENS, TE_TOKENS, CALIBRATION,
MEMORY_USAGE_FACTOR, CHECKPOINT_SPLITS, CHECKPOINT_MODEL_SIZES, VAES, MEDIA_VAES, VAE_TRACED_AS, FAMILY_ENTRY,
GGUF_SAME_ARCH, VARIANT_PARAMS, FP8_MODEL_ONLY_SPLITS, VAE_FORMULAS, TEXT_TOKENS_OF_LATENT, GGUF_ARCH, EXTRA_TOKENS,
LATENT_HAS_EXTRA, PREFETCH_BLOCK_PARAMS, VAE_NAME_GEOMETRY, DETECT header detectors, P_* parameter counts). The
tables the estimator reads are views
built here, once, by merging the sections in ORDER (a module's ORDER also ranks its name rules: lower
first, specific before general). A new family is one new file: nothing here names a family.

A key two modules both define is an error (it would make the answer depend on import order).
"""
from __future__ import annotations

import difflib
from functools import lru_cache
import importlib
import math
import os
import pkgutil
from types import MappingProxyType, ModuleType

from ._spec import Family, Rule, VaeFamily

_PRIVATE = {"detect", "registry"}
_PACKAGE_PATH = [os.path.dirname(os.path.abspath(__file__))]  # this package's folder, wherever it is installed
DICT_SECTIONS = ("FAMILIES", "WORKING_MEMORY_ALIAS", "TEXT_TOKENS", "TE_TOKENS", "CALIBRATION", "MEMORY_USAGE_FACTOR",
                 "CHECKPOINT_SPLITS", "MEDIA_VAES", "VAE_TRACED_AS", "FAMILY_ENTRY", "GGUF_SAME_ARCH", "VARIANT_PARAMS",
                 "VAE_FORMULAS", "TEXT_TOKENS_OF_LATENT", "COMPILED_CALIBRATION", "GGUF_ARCH",
                 "EXTRA_TOKENS", "LATENT_HAS_EXTRA", "PREFETCH_BLOCK_PARAMS", "CHECKPOINT_MODEL_SIZES")


# The contract of a family module (issue 34): each section it may define and the type it must have. A section a
# module misspells (MEMORY_USAGE_FACTORS) would load and be silently ignored: check_module refuses it at import.
SECTIONS: dict[str, type | tuple[type, ...]] = {
    **{name: dict for name in DICT_SECTIONS}, "NAME_RULES": dict, "DETECT": dict, "ARCH_ROUTES": (tuple, list),
    "VAES": (tuple, list), "FP8_MODEL_ONLY_SPLITS": (tuple, list, set, frozenset), "ORDER": int,
    "VAE_NAME_GEOMETRY": (tuple, list),
}


def _near(name: str) -> str:
    """The section `name` looks like a misspelling of ('' when none): one edit away, or the same words in
    another number (FAMILY / FAMILIES, RULE / RULES)."""
    def stem(n: str) -> str:
        return "_".join(w[:-3] + "Y" if w.endswith("IES") else w.rstrip("S") for w in n.split("_"))
    for section in SECTIONS:
        if name != section and (stem(name) == stem(section) or difflib.SequenceMatcher(None, name, section).ratio() >= 0.93):
            return section
    return ""


def check_module(mod: ModuleType) -> None:
    """Refuse a family module that breaks the contract: a section of the wrong type, or a public upper-case name
    that misspells a section (it would be ignored)."""
    where = mod.__name__.rsplit(".", 1)[-1]
    for name, value in vars(mod).items():
        if name in SECTIONS:
            if not isinstance(value, SECTIONS[name]) or isinstance(value, bool):
                want = SECTIONS[name] if isinstance(SECTIONS[name], tuple) else (SECTIONS[name],)
                raise ValueError(f"families/{where}.py: {name} is a {type(value).__name__}, the registry reads a "
                                 f"{' / '.join(t.__name__ for t in want)}")
        elif (name.isupper() and not name.startswith("_") and isinstance(value, (dict, tuple, list, set, frozenset))
              and (near := _near(name))):  # a section is a table; a kind constant (VAE = "vae") is not one
            raise ValueError(f"families/{where}.py: {name} is not a registry section and would be ignored "
                             f"(did you mean {near}?)")


def _discover() -> tuple[ModuleType, ...]:
    package = __name__.rsplit(".", 1)[0]
    mods = [importlib.import_module(f"{package}.{m.name}") for m in pkgutil.iter_modules(_PACKAGE_PATH)
            if not m.name.startswith("_") and m.name not in _PRIVATE]
    for mod in mods:
        check_module(mod)
    return tuple(sorted(mods, key=lambda m: (getattr(m, "ORDER", 1000), m.__name__)))


MODULES = _discover()


def merge(section: str, modules=None) -> dict:
    """One section of every module as one dict; a key two modules define is a ValueError."""
    out: dict = {}
    owner: dict = {}
    for mod in MODULES if modules is None else modules:
        for key, value in getattr(mod, section, {}).items():
            if key in out:
                raise ValueError(f"{section}[{key!r}] is defined in both {owner[key]} and {mod.__name__}")
            out[key], owner[key] = value, mod.__name__
    return out


_merged = {name: merge(name) for name in DICT_SECTIONS}

FAMILIES: MappingProxyType = MappingProxyType(
    {fid: Family(f.kind, f.label, MappingProxyType(dict(f.arch))) for fid, f in _merged["FAMILIES"].items()})
WORKING_MEMORY_ALIAS = MappingProxyType(_merged["WORKING_MEMORY_ALIAS"])
TEXT_TOKENS = MappingProxyType(_merged["TEXT_TOKENS"])
TE_TOKENS = MappingProxyType(_merged["TE_TOKENS"])
CALIBRATION = MappingProxyType(_merged["CALIBRATION"])
# a family whose published peak was measured under torch.compile: that factor, used when the workflow compiles
COMPILED_CALIBRATION = MappingProxyType(_merged["COMPILED_CALIBRATION"])
MEMORY_USAGE_FACTOR = MappingProxyType(_merged["MEMORY_USAGE_FACTOR"])
CHECKPOINT_SPLITS = MappingProxyType(_merged["CHECKPOINT_SPLITS"])
# a family whose all-in-one checkpoints come in several sizes: family -> ((params, label, arch overrides, source),
# ...), the other sizes of the split's "model" part (resolve.part_of picks the one the file's count is nearest)
CHECKPOINT_MODEL_SIZES = MappingProxyType(_merged["CHECKPOINT_MODEL_SIZES"])


def nearest_model_size(family: str, params: int | None, others: int = 0) -> tuple | None:
    """The size of ``family``'s diffusion model ``params`` is nearest, as (params, label, arch overrides, source):
    its checkpoint split's own "model" part (source "") or a CHECKPOINT_MODEL_SIZES entry; None when the family has
    one size. ``others``: the split's other parts, for a count that may be the whole file's rather than the model's.
    (resolve.checkpoint_parts for a checkpoint's split, name_infer.size_arch for a diffusion file named by size.)"""
    sizes = CHECKPOINT_MODEL_SIZES.get(family, ())
    base = CHECKPOINT_SPLITS.get(family, {}).get("model")
    if not sizes or not base or not params:
        return None
    options = [(base[0], base[3], base[4] if len(base) > 4 else {}, "")] + list(sizes)
    return min(options, key=lambda o: min(abs(math.log((o[0] + others) / params)), abs(math.log(o[0] / params))))
MEDIA_VAES = MappingProxyType(_merged["MEDIA_VAES"])
VAE_TRACED_AS = MappingProxyType(_merged["VAE_TRACED_AS"])
FAMILY_ENTRY = MappingProxyType(_merged["FAMILY_ENTRY"])
GGUF_SAME_ARCH = MappingProxyType(_merged["GGUF_SAME_ARCH"])
# ComfyUI-GGUF's model types (convert.py, the file's general.architecture) -> family: a GGUF whose keys no
# detector knows is still named by its converter's label
GGUF_ARCH = MappingProxyType(_merged["GGUF_ARCH"])
# working-memory entries whose model attends over tokens the stage latent does not show: key -> fn(latent rows,
# columns) -> (tokens, what); and the latent creators whose latent already holds them (memory.diffusion_working)
EXTRA_TOKENS = MappingProxyType(_merged["EXTRA_TOKENS"])
LATENT_HAS_EXTRA = MappingProxyType(_merged["LATENT_HAS_EXTRA"])
# ComfyUI 0.33's model prefetch: family -> fn(arch) -> the linear parameters of one block (runtime.prefetch_block_bytes)
PREFETCH_BLOCK_PARAMS = MappingProxyType(_merged["PREFETCH_BLOCK_PARAMS"])
VARIANT_PARAMS = MappingProxyType(_merged["VARIANT_PARAMS"])
# VAEs no trace covers whose ComfyUI class states its own working-memory estimate (memory_used_decode /
# memory_used_encode in comfy/sd.py): family id -> fn(op "decode" | "encode", workload.LatentShape, dtype bytes,
# the tiled node's settings or None) -> (bytes, how) or None (stages/vae.py; a live trace comes first)
VAE_FORMULAS = MappingProxyType(_merged["VAE_FORMULAS"])
# Families whose "text tokens" (the conditioning's length) follow from the latent the graph fixes rather than
# from a prompt: family id -> fn(workload.LatentShape) -> (tokens, why) (memory.diffusion_working)
TEXT_TOKENS_OF_LATENT = MappingProxyType(_merged["TEXT_TOKENS_OF_LATENT"])
ARCH_ROUTES: tuple[tuple[str, str, object, str], ...] = tuple(r for m in MODULES for r in getattr(m, "ARCH_ROUTES", ()))
# a VAE file name -> (latent channels, spatial /, temporal /), each module's patterns in ORDER (graph.analyzer)
VAE_NAME_GEOMETRY: tuple = tuple(r for m in MODULES for r in getattr(m, "VAE_NAME_GEOMETRY", ()))
FP8_MODEL_ONLY_SPLITS = frozenset(f for m in MODULES for f in getattr(m, "FP8_MODEL_ONLY_SPLITS", ()))
VAE_FAMILIES: dict[str, VaeFamily] = {}
for _m in MODULES:
    for _v in getattr(_m, "VAES", ()):
        if _v.id in VAE_FAMILIES:
            raise ValueError(f"VAES {_v.id!r} is defined twice ({_m.__name__})")
        VAE_FAMILIES[_v.id] = _v
def _params() -> dict:
    """Every module's P_* parameter counts (the catalogue's names for them); a name two modules define with
    different counts is a ValueError, not a silent override."""
    out: dict = {}
    owner: dict = {}
    for m in MODULES:
        for name, value in vars(m).items():
            if name.startswith("P_") and isinstance(value, int) and not isinstance(value, bool):
                if name in out and out[name] != value:  # (one module importing another's count is the same count)
                    raise ValueError(f"{name} is defined in both {owner[name]} and {m.__name__}")
                out[name], owner[name] = value, m.__name__
    return out


PARAMS = MappingProxyType(_params())


def name_rules(role: str) -> tuple[Rule, ...]:
    """Every module's file-name rules for this role (a ModelInfo kind or "upscaler"), in ORDER."""
    return tuple(r for m in MODULES for r in getattr(m, "NAME_RULES", {}).get(role, ()))


@lru_cache(maxsize=None)
def detectors(kind: str) -> tuple:
    """The family modules' header detectors for a kind (their DETECT sections): each takes the file's tensors
    with the prefix stripped (has / shape / dim / count_blocks, and `name`) and returns a _spec.Found or None.
    Those with an `order` (a _spec.Detector: the line of ComfyUI's model_detection.py it mirrors) run first, in
    that order, as detect_unet_config tests them; then the rest in module ORDER."""
    found = [fn for m in MODULES for fn in getattr(m, "DETECT", {}).get(kind, ())]
    ordered = sorted((fn for fn in found if getattr(fn, "order", None) is not None), key=lambda fn: fn.order)
    return tuple(ordered) + tuple(fn for fn in found if getattr(fn, "order", None) is None)


def module_of(family: str) -> str:
    """The module that defines a family id ('' when none does)."""
    return next((m.__name__.rsplit(".", 1)[-1] for m in MODULES if family in getattr(m, "FAMILIES", {})), "")
