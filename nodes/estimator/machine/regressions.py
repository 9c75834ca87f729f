"""Known memory regressions by version (data/regressions.jsonl): the table's schema as code, which releases a
regression covers, where it hits (`applies`: model families, card makers, OS, memory modes, a release that works
around it) and what it does where the arithmetic can price it (`effect`). In the machine wing because the stages and
ComfyUI's run-time decisions read an effect (a VAE's working memory under torch 2.9.0); plan/evidence.py matches the
table on a whole estimate and re-exports these names. Nothing here imports torch or comfy.
"""
from __future__ import annotations

import json
import re
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Mapping

from ..errors import VramBudgetError
from .device import version_tuple

ROOT = Path(__file__).resolve().parents[3]  # the pack's root (the repository; `vram_budget` when installed)
REGRESSIONS_FILE = ROOT / "data" / "regressions.jsonl"
OSES = ("windows", "linux", "macos", "wsl")
SOURCE = re.compile(r"https?://[^\s]+")


def thread(source: str) -> str:
    """A source URL without its #comment or ?query, lower case: the thread every record of it shares."""
    return re.sub(r"[#?].*$", "", str(source).strip().lower()).rstrip("/")


def read_jsonl(path: Path, check: Callable[[object], list]) -> list[dict]:
    """The records of one JSON-lines file; a bad line is an error naming the file and line."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise VramBudgetError(f"{path.name}:{n}: not JSON ({exc})") from None
            problems = check(rec)
            if problems:
                raise VramBudgetError(f"{path.name}:{n}: {'; '.join(problems[:5])}")
            out.append(rec)
    return out


REGRESSION_FIELDS = ("id", "component", "affected_from", "affected_to", "fixed_in", "symptom", "hits", "avoid", "kind",
                     "sources", "quote", "note", "requires", "applies", "effect", "attribution")
# `attribution`: "established" (the default: the sources tie the symptom to this release) or "suspected" (they do not
# settle that this release is the cause): a suspected regression is said, not a high risk by itself
ATTRIBUTIONS = ("established", "suspected")
# `requires`: a run-time state of ComfyUI the regression needs (a Device attribute that must be on): the compiler's
# and fast disk's regressions hit only where they are on
REQUIRES = ("comfy_compiler", "fast_disk")
# `applies`: which workflows and machines a regression hits, from its sources (each key optional; all must hold):
#   families      model families (families/registry FAMILIES) of which the workflow must hold one: a Wan 2.2 bug is
#                 not a risk of a Flux workflow on the same release
#   vendors       card makers it was seen on (a cuDNN bug is NVIDIA's)
#   os            operating systems it was seen on
#   memory_modes  "classic" / "dynamic" (ComfyUI's Dynamic VRAM)
#   video         true: only a workflow that samples a video
#   unless        {component: version}: not from that release of another component on (ComfyUI's own work-around
#                 of a PyTorch bug)
# What the estimate does not know (an unpriced model, no version given) never rules a regression out.
APPLIES_KEYS = ("families", "vendors", "os", "memory_modes", "video", "unless")
# `effect`: what the regression does, where the arithmetic can price it; then the simulation does (the verdict
# follows the numbers), and the regression is said, not a high risk by itself:
#   vae_working_factor  the working memory of a VAE of applies.families is this many times the traced one
EFFECTS = {"vae_working_factor": (1.0, 10.0)}
_EFFECT_WORDS = {"vae_working_factor": "the VAE needs {v:g}x its usual working memory"}
VENDORS = ("NVIDIA", "AMD", "Intel", "Apple")
MEMORY_MODES = ("classic", "dynamic")
COMPONENTS = {"comfyui": "ComfyUI", "comfy-aimdo": "comfy-aimdo", "pytorch": "PyTorch", "torch": "PyTorch",
              "comfyui-wanvideowrapper": "ComfyUI-WanVideoWrapper", "comfyui-gguf": "ComfyUI-GGUF",
              "comfyui-multigpu": "ComfyUI-MultiGPU", "comfyui-ltxvideo": "ComfyUI-LTXVideo"}


@dataclass(frozen=True)
class Scope:
    """What a regression's `applies` is judged on; None = not known (then it does not rule the regression out)."""

    families: frozenset | None = None
    vendor: str | None = None
    os: str | None = None
    memory_mode: str | None = None
    video: bool | None = None


def raises_risk(entry: Mapping) -> bool:
    """Whether a matched regression makes the risk high by itself: a memory regression (vram / ram) the sources
    attribute to the release, whose effect the simulation does not price already."""
    return entry.get("kind") in ("vram", "ram") and not entry.get("effect") and entry.get("attribution") != "suspected"


def effect_words(entry: Mapping) -> str:
    """What a regression's `effect` does, in words ("" without one)."""
    return "; ".join(_EFFECT_WORDS[k].format(v=v) for k, v in (entry.get("effect") or {}).items() if k in _EFFECT_WORDS)


def check_regression(rec) -> list[str]:
    """The problems of one entry of the table, in words ([] for a valid one)."""
    if not isinstance(rec, dict):
        return ["a regression is a JSON object"]
    errors = [f"{k} is required" for k in ("id", "component", "affected_from", "symptom", "kind", "sources")
              if not rec.get(k)]
    errors += [f"unknown field {k!r}" for k in rec if k not in REGRESSION_FIELDS]
    if rec.get("kind") not in ("vram", "ram", "speed"):
        errors.append(f"kind {rec.get('kind')!r}: vram, ram or speed")
    if rec.get("requires") is not None and rec.get("requires") not in REQUIRES:
        errors.append(f"requires {rec.get('requires')!r}: one of {', '.join(REQUIRES)}")
    if rec.get("attribution") is not None and rec.get("attribution") not in ATTRIBUTIONS:
        errors.append(f"attribution {rec.get('attribution')!r}: one of {', '.join(ATTRIBUTIONS)}")
    if rec.get("applies") is not None:
        errors += _check_applies(rec["applies"])
    if rec.get("effect") is not None:
        eff = rec["effect"]
        if not isinstance(eff, dict) or not eff:
            errors.append("effect: an object, e.g. {\"vae_working_factor\": 3}")
        else:
            for k, v in eff.items():
                lo_hi = EFFECTS.get(k)
                if lo_hi is None:
                    errors.append(f"effect: unknown {k!r} (one of {', '.join(EFFECTS)})")
                elif isinstance(v, bool) or not isinstance(v, (int, float)) or not lo_hi[0] < v <= lo_hi[1]:
                    errors.append(f"effect.{k}: a number over {lo_hi[0]:g}, at most {lo_hi[1]:g}")
            if "vae_working_factor" in eff and not (rec.get("applies") or {}).get("families"):
                errors.append("effect.vae_working_factor needs applies.families (the VAEs it multiplies)")
    if not isinstance(rec.get("sources"), list) or not all(isinstance(s, str) and SOURCE.fullmatch(s)
                                                           for s in rec.get("sources") or [None]):
        errors.append("sources: a list of URLs")
    return errors


def _check_applies(a) -> list[str]:
    if not isinstance(a, dict) or not a:
        return ["applies: an object with one or more of " + ", ".join(APPLIES_KEYS)]
    from ..families import FAMILIES  # noqa: PLC0415  (kept local: reading the table needs no registry)
    errors = [f"applies: unknown key {k!r}" for k in a if k not in APPLIES_KEYS]
    for key, known in (("families", FAMILIES), ("vendors", VENDORS), ("os", OSES), ("memory_modes", MEMORY_MODES)):
        v = a.get(key)
        if v is None:
            continue
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            errors.append(f"applies.{key}: a list of names")
        else:
            errors += [f"applies.{key}: unknown {x!r}" for x in v if x not in known]
    if "video" in a and not isinstance(a["video"], bool):
        errors.append("applies.video: true or false")
    if "unless" in a:
        u = a["unless"]
        if not isinstance(u, dict) or not u or not all(
                isinstance(c, str) and COMPONENTS.get(c.lower()) and version_tuple(v) for c, v in u.items()):
            errors.append("applies.unless: {component: release}, a known component and a release number")
    return errors


def applies(entry: Mapping, scope: Scope | None, versions: Mapping[str, str] | None = None) -> bool:
    """Whether a regression whose release matched hits this workflow on this machine (its `applies`); what the scope
    does not know never rules it out."""
    a = entry.get("applies") or {}
    if not a or scope is None:
        return True
    if a.get("families") and scope.families is not None and not scope.families & set(a["families"]):
        return False
    for key, have in (("vendors", scope.vendor), ("os", scope.os), ("memory_modes", scope.memory_mode)):
        if a.get(key) and have is not None and have not in a[key]:
            return False
    if a.get("video") is not None and scope.video is not None and a["video"] != scope.video:
        return False
    want = {COMPONENTS.get(k.lower(), k): v for k, v in (versions or {}).items() if v}
    for comp, release in (a.get("unless") or {}).items():
        have = version_tuple(want.get(COMPONENTS.get(comp.lower(), comp)))
        if have is not None and _pad(have) >= _pad(version_tuple(release)):
            return False
    return True


def vae_working_factor(family: str, device, own_code: bool = False, stage=None) -> tuple[float, dict | None]:
    """(factor, regression) for the working memory of a VAE of `family` on `device` under its versions: the largest
    `effect.vae_working_factor` of a known regression that applies, else (1.0, None). `own_code` (or a `stage` a node
    pack runs: Stage.manager): the VAE runs in the pack's own code, which neither a ComfyUI release's regression nor
    its work-around (`applies.unless`) is in. One place for the stage's build, ComfyUI's tiled retry, the tiling
    remedy and the listing of what was priced."""
    own_code = own_code or bool(getattr(stage, "manager", None))
    versions = getattr(device, "known_versions", None)
    if versions is None:  # a bare object with `versions` (no Device)
        versions = dict(getattr(device, "versions", ()) or ())
    if own_code:
        versions = {k: v for k, v in versions.items() if COMPONENTS.get(k.lower(), k) != "ComfyUI"}
    if not versions:
        return 1.0, None
    scope = Scope(families=frozenset({family}), vendor=getattr(device, "vendor", None) or None,
                  os=getattr(device, "os", None) or None, memory_mode=getattr(device, "memory_mode", None) or None)
    entries = [r for r in regressions() if (r.get("effect") or {}).get("vae_working_factor")]
    best: tuple[float, dict | None] = (1.0, None)
    for e in known_regressions(versions, entries, scope):
        factor = float(e["effect"]["vae_working_factor"])
        if factor > best[0]:
            best = (factor, e)
    return best


@lru_cache(maxsize=2)
def _regressions(path: str) -> tuple[dict, ...]:
    p = Path(path)
    return tuple(read_jsonl(p, check_regression)) if p.is_file() else ()


def regressions(path: Path | None = None) -> tuple[dict, ...]:
    return _regressions(str(path or REGRESSIONS_FILE))


def _pad(v: tuple[int, ...]) -> tuple[int, ...]:
    return v + (0,) * (4 - len(v))


def affects(entry: Mapping, version: str) -> bool | None:
    """Whether `version` of the entry's component is in its affected range: True, False, or None when the entry's
    range is given by commits (no release number to compare)."""
    v = version_tuple(version)
    lo = version_tuple(entry.get("affected_from"))
    if v is None or lo is None:
        return None
    hi = version_tuple(entry.get("affected_to"))
    fixed = version_tuple(entry.get("fixed_in"))
    if _pad(v) < _pad(lo):
        return False
    if fixed is not None:
        return _pad(v) < _pad(fixed)
    if hi is not None:
        # "0.30" as the last bad release covers 0.30.x
        return _pad(v)[:len(hi)] <= hi
    return True


# Leave one thread out (evidence_replay.judge): while a published record is re-run, a regression known only from that
# record's own thread is not known yet, so it cannot warn of that record (its other sources still can)
LEAVE_OUT: ContextVar[frozenset] = ContextVar("leave_out_threads", default=frozenset())


def known_regressions(versions: Mapping[str, str], entries: Iterable[Mapping] | None = None,
                      scope: Scope | None = None) -> list[dict]:
    """The regressions whose affected range holds one of `versions` ({component: version}, component names as
    COMPONENTS spells them, any case) and that apply to `scope` (the workflow and machine; None: any): each entry
    with `matched` = the version that matched."""
    want = {COMPONENTS.get(k.lower(), k): v for k, v in versions.items() if v}
    out = []
    left_out = LEAVE_OUT.get()
    for e in (regressions() if entries is None else entries):
        if left_out and all(thread(s) in left_out for s in e.get("sources") or ()):
            continue
        comp = COMPONENTS.get(str(e["component"]).lower(), e["component"])
        if comp in want and affects(e, want[comp]) and applies(e, scope, want):
            out.append({**e, "matched": f"{comp} {want[comp]}"})
    return out
