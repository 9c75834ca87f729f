"""Published ComfyUI outcomes (data/outcomes/*.jsonl) and known memory regressions (data/regressions.jsonl):
the record schema as code, the calibration / validation split, the published runs nearest to a workflow,
and the regressions that match a set of versions.

The records are data others can use: docs/accuracy.md is generated from them (bench/accuracy_table.py),
evidence_replay.py re-runs the estimator on each. Nothing here imports torch or comfy.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from ..machine.device import version_tuple  # noqa: F401  (its users import it from here too)
from ..machine.regressions import (  # noqa: F401  (the known regressions: their users import them from here too)
    APPLIES_KEYS, ATTRIBUTIONS, COMPONENTS, EFFECTS, LEAVE_OUT, MEMORY_MODES, OSES, REGRESSION_FIELDS, REGRESSIONS_FILE, REQUIRES,
    SOURCE as _SOURCE, VENDORS, Scope, affects, applies, check_regression, effect_words, known_regressions,
    raises_risk, regressions, thread, vae_working_factor)
from ..machine.regressions import read_jsonl as _read_jsonl
from ..errors import VramBudgetError

ROOT = Path(__file__).resolve().parents[3]  # the pack's root (the repository; `vram_budget` when installed)
OUTCOMES_DIR = ROOT / "data" / "outcomes"

OUTCOMES = ("oom", "runs_slower", "fits", "runs")
OOM_KINDS = ("cuda", "hip", "ram_killed", "pagefile", "cpu_allocator", "mps", "other")
STAGES = ("load", "text_encode", "sample", "vae_decode", "vae_encode", "upscale", "other")
RUNNERS = ("native", "wanvideowrapper", "hunyuanvideowrapper", "ltxvideo", "other")
PIPELINES = (
    "sd15", "sdxl", "sd35-large", "sd35-medium", "flux1-dev", "flux1-schnell", "flux1-kontext", "flux1-fill",
    "flux2-dev", "flux2-klein", "chroma", "hidream", "qwen-image", "qwen-image-edit", "z-image", "lumina2",
    "wan21-t2v-1.3b", "wan21-t2v-14b", "wan21-i2v-14b", "wan21-vace-14b", "wan21-vace-1.3b", "wan21-flf2v-14b",
    "wan22-t2v-a14b", "wan22-i2v-a14b", "wan22-ti2v-5b", "wan22-animate-14b", "wan22-s2v-14b", "wan22-fun-a14b",
    "hunyuan-video", "hunyuan-video-i2v", "hunyuan-video-1.5", "ltxv-2b", "ltxv-13b", "ltx2", "ltx2.3", "other",
)
LOG_FIGURES = ("loaded_partially_mib", "loaded_completely_mib", "requested_mib", "allocated_gib", "device_limit_gib",
               "peak_gib", "seconds", "s_per_it")
MAX_RECORD_CHARS = 8192  # a record is a short summary with a quote, not a log

_STR, _NUM, _INT = (str,), (int, float), (int,)
ON_OFF = ("on", "off")
# name: (types, required, allowed values or None, max length / largest value)
FIELDS: dict[str, tuple] = {
    "id": (_STR, True, None, 120), "source": (_STR, True, None, 400), "date": (_STR, True, None, 10),
    "quote": (_STR, True, None, 420), "outcome": (_STR, True, OUTCOMES, 16),
    "oom_kind": (_STR, False, OOM_KINDS, 16), "failing_stage": (_STR, False, STAGES, 16),
    "gpu": (_STR, True, None, 120), "vram_gib": (_NUM, False, None, 1024), "ram_gib": (_NUM, False, None, 65536),
    "swap_gib": (_NUM, False, None, 65536), "os": (_STR, False, OSES, 8), "comfyui": (_STR, False, None, 80),
    "pytorch": (_STR, False, None, 80), "node_packs": ((dict,), False, None, 40), "frontend": (_STR, False, None, 80),
    "flags": ((list,), False, None, 40), "pipeline": (_STR, True, PIPELINES, 40), "runner": (_STR, True, RUNNERS, 24),
    "template": (_STR, False, None, 120), "models": ((dict,), False, None, 20), "precision": (_STR, False, None, 40),
    "weight_dtype": (_STR, False, None, 40), "width": (_INT, False, None, 16384), "height": (_INT, False, None, 16384),
    "frames": (_INT, False, None, 10000), "batch": (_INT, False, None, 4096), "steps": (_INT, False, None, 10000),
    "cfg": (_NUM, False, None, 100), "blocks_to_swap": (_INT, False, None, 100), "attention": (_STR, False, None, 24),
    # HunyuanVideoWrapper's HyVideoBlockSwap: blocks_to_swap is its double blocks, this its single blocks, as stated
    "single_blocks_to_swap": (_INT, False, None, 100),
    "log": ((dict,), False, None, 20), "note": (_STR, False, None, 1200), "collector": (_STR, False, None, 80),
    # issue 32: the run-time state of 0.35+ ComfyUI that moves memory, when the source states it
    "comfy_compiler": (_STR, False, ON_OFF, 4), "cuda_graphs": (_STR, False, ON_OFF, 4),
    "fast_disk": (_STR, False, ON_OFF, 4), "container_ram_gib": (_NUM, False, None, 65536),
    # WanVideoWrapper's Multi/InfiniteTalk long-video loop (windows of frame_window_size), when the source names it
    "long_video": (_STR, False, ("infinitetalk", "multitalk"), 16),
    # WanVideoWrapper's frame_window_size (Wan-Animate, Multi/InfiniteTalk windows) when the source states it
    "frame_window": (_INT, False, None, 10000),
}
_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
_DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")


def validate(rec) -> list[str]:
    """The problems of one outcome record (empty: valid)."""
    if not isinstance(rec, dict):
        return ["a record is a JSON object"]
    errors = [f"unknown field {k!r}" for k in rec if k not in FIELDS]
    for name, (types, required, allowed, limit) in FIELDS.items():
        value = rec.get(name)
        if value is None:
            if required and name != "gpu":
                errors.append(f"{name} is required")
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            errors.append(f"{name}: {type(value).__name__} where {'/'.join(t.__name__ for t in types)} is expected")
            continue
        if allowed is not None and value not in allowed:
            errors.append(f"{name}: {value!r} is not one of {', '.join(allowed)}")
        if isinstance(value, str) and len(value) > limit:
            errors.append(f"{name}: {len(value)} characters, at most {limit}")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 <= value <= limit:
            errors.append(f"{name}: {value} outside 0..{limit}")
        if isinstance(value, (list, dict)) and len(value) > limit:
            errors.append(f"{name}: {len(value)} entries, at most {limit}")
    if "gpu" not in rec:
        errors.append("gpu is required (null when the source names only the size)")
    if isinstance(rec.get("id"), str) and not _ID.fullmatch(rec["id"]):
        errors.append(f"id {rec['id']!r}: lower-case letters, digits, '.', '-', '_'")
    if isinstance(rec.get("date"), str) and not _DATE.fullmatch(rec["date"]):
        errors.append(f"date {rec['date']!r}: YYYY-MM-DD or YYYY-MM")
    if isinstance(rec.get("source"), str) and not _SOURCE.fullmatch(rec["source"]):
        errors.append(f"source {rec['source']!r}: a URL")
    if rec.get("outcome") == "oom" and not rec.get("oom_kind"):
        errors.append("oom_kind is required for an oom")
    if rec.get("gpu") is None and rec.get("vram_gib") is None:
        errors.append("a card or its size (vram_gib) is required")
    if isinstance(rec.get("log"), dict):
        errors += [f"log: unknown figure {k!r}" for k in rec["log"] if k not in LOG_FIGURES]
        errors += [f"log.{k}: not a number" for k, v in rec["log"].items()
                   if isinstance(v, bool) or not isinstance(v, (int, float))]
    if isinstance(rec.get("flags"), list) and not all(isinstance(f, str) and len(f) <= 80 for f in rec["flags"]):
        errors.append("flags: a list of strings")
    if len(json.dumps(rec, ensure_ascii=False)) > MAX_RECORD_CHARS:
        errors.append(f"record longer than {MAX_RECORD_CHARS} characters")
    return errors


PRIOR_SOURCES_FILE = OUTCOMES_DIR / "prior_sources.txt"


_thread = thread  # the name the replay and the tests use


@lru_cache(maxsize=1)
def prior_sources() -> frozenset[str]:
    """The threads the estimator was calibrated on before this evidence base (data/outcomes/prior_sources.txt)."""
    try:
        lines = PRIOR_SOURCES_FILE.read_text(encoding="utf-8").splitlines()
    except OSError:
        return frozenset()
    return frozenset(_thread(ln) for ln in lines if ln.strip() and not ln.startswith("#"))


def split_of(source: str) -> str:
    """'calibration' or 'validation', once and for all, from a hash of the source thread (the URL without
    its #fragment and query), so every record of one thread lands in the same half. A thread the estimator
    was calibrated on before the evidence base existed (prior_sources) is calibration: it was seen."""
    key = _thread(source)
    if key in prior_sources():
        return "calibration"
    return "calibration" if hashlib.sha256(key.encode()).digest()[0] % 2 == 0 else "validation"


def read_jsonl(path: Path, check=validate) -> list[dict]:
    """The records of one JSON-lines file; a bad line is an error naming the file and line."""
    return _read_jsonl(path, check)


@lru_cache(maxsize=2)
def _load(folder: str) -> tuple[dict, ...]:
    recs: list[dict] = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        recs += read_jsonl(path)
    ids = [r["id"] for r in recs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise VramBudgetError(f"outcome ids used twice: {', '.join(dup[:5])}")
    return tuple(recs)


def outcomes(folder: Path | None = None) -> tuple[dict, ...]:
    """Every published outcome record, validated (cached)."""
    return _load(str(folder or OUTCOMES_DIR))


# ----------------------------------------------------------------------------------------------
# Which estimator families a pipeline runs (for the nearest published runs of a workflow)
PIPELINE_FAMILIES: dict[str, tuple[str, ...]] = {
    "sd15": ("sd15",), "sdxl": ("sdxl",), "sd35-large": ("sd3",), "sd35-medium": ("sd3",),
    "flux1-dev": ("flux1-dev",), "flux1-schnell": ("flux1-schnell",), "flux1-kontext": ("flux1-kontext",),
    "flux1-fill": ("flux1-fill",), "flux2-dev": ("flux2",), "flux2-klein": ("flux2-klein", "flux2-klein-9b"),
    "chroma": ("chroma",), "hidream": ("hidream",), "qwen-image": ("qwen-image",), "qwen-image-edit": ("qwen-image",),
    "z-image": ("z-image",), "lumina2": ("lumina2",), "wan21-t2v-1.3b": ("wan2.1-1.3b",),
    "wan21-vace-1.3b": ("wan2.1-1.3b",), "wan21-t2v-14b": ("wan2.1-14b",), "wan21-i2v-14b": ("wan2.1-14b",),
    "wan21-vace-14b": ("wan2.1-14b",), "wan21-flf2v-14b": ("wan2.1-14b",), "wan22-animate-14b": ("wan2.1-14b",),
    "wan22-s2v-14b": ("wan2.1-14b",), "wan22-t2v-a14b": ("wan2.2-14b",), "wan22-i2v-a14b": ("wan2.2-14b",),
    "wan22-fun-a14b": ("wan2.2-14b",), "wan22-ti2v-5b": ("wan2.2-ti2v-5b",), "hunyuan-video": ("hunyuan-video",),
    "hunyuan-video-i2v": ("hunyuan-video",), "hunyuan-video-1.5": ("hunyuan-video-1.5",), "ltxv-2b": ("ltxv",),
    "ltxv-13b": ("ltxv",), "ltx2": ("ltx2",), "ltx2.3": ("ltx2.3",),
}


@dataclass(frozen=True)
class Similar:
    """One published run near a workflow: what it was, what happened, where it is said."""

    id: str
    source: str
    date: str
    outcome: str
    card: str
    vram_gib: float | None
    size: str
    ram_gib: float | None
    summary: str
    distance: float

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "source", "date", "outcome", "card", "vram_gib", "size", "ram_gib",
                                              "summary")}


def size_text(rec: Mapping) -> str:
    w, h, f = rec.get("width"), rec.get("height"), rec.get("frames")
    if not (w and h):
        return "size not stated"
    return f"{w}x{h}" + (f"x{f}" if f else "") + (f" (batch {rec['batch']})" if (rec.get("batch") or 1) > 1 else "")


def _outcome_words(rec: Mapping) -> str:
    o = rec["outcome"]
    if o == "oom":
        kind = rec.get("oom_kind")
        return {"ram_killed": "ran out of system RAM", "pagefile": "ran out of page file",
                "cpu_allocator": "ran out of system RAM"}.get(kind, "ran out of memory")
    return {"runs_slower": "ran, offloading", "fits": "ran, fully loaded"}.get(o, "ran")


def summary(rec: Mapping) -> str:
    """'RTX 3060 12 GB, 32 GB RAM: 1280x720x81 ran out of system RAM (Comfy-Org/ComfyUI#10771)'."""
    card = rec.get("gpu") or f"{rec.get('vram_gib'):g} GB card"
    mem = f"{card}" + (f", {rec['ram_gib']:g} GB RAM" if rec.get("ram_gib") else "")
    m = re.match(r"https?://github\.com/([^/]+/[^/]+)/(?:issues|pull|discussions)/(\d+)", rec["source"])
    where = f"{m.group(1)}#{m.group(2)}" if m else rec["source"]
    return f"{mem}: {size_text(rec)} {_outcome_words(rec)} ({where})"


# Stage.manager of the sample stage -> a record's `runner`: the same model run by another runner (a wrapper's block
# swap against ComfyUI's partial load) is a different run, one card-size step away
RUNNER_OF_MANAGER = {None: "native", "WanVideoWrapper": "wanvideowrapper", "HunyuanVideoWrapper": "hunyuanvideowrapper"}
OTHER_RUNNER_STEP = 1.0


def similar(families: Iterable[str], vram_gib: float, width: int | None = None, height: int | None = None,
            frames: int | None = None, limit: int = 3, records: Iterable[Mapping] | None = None,
            runner: str | None = None) -> list[Similar]:
    """The published runs nearest to a workflow: the same model family first, then the nearest card size
    (a factor of 2 away counts as one step), the same runner (`runner`, as records name it; None: any), then the
    nearest pixel count and length. One record per thread and outcome: a thread's run and its OOM both show."""
    fams = set(families)
    if not fams or not vram_gib or vram_gib <= 0:
        return []
    import math
    out = []
    for rec in (outcomes() if records is None else records):
        rf = PIPELINE_FAMILIES.get(rec["pipeline"], ())
        if not fams.intersection(rf):
            continue
        card_gb = rec.get("vram_gib") or _card_gb(rec.get("gpu"))
        if not card_gb:
            continue
        d = abs(math.log2(card_gb / vram_gib))
        if width and height and rec.get("width") and rec.get("height"):
            d += 0.5 * abs(math.log2((rec["width"] * rec["height"]) / (width * height)))
        elif width and height:
            d += 0.5
        if frames and rec.get("frames"):
            d += 0.5 * abs(math.log2(rec["frames"] / frames))
        if runner and rec.get("runner") != runner:
            d += OTHER_RUNNER_STEP
        out.append(Similar(rec["id"], rec["source"], rec["date"], rec["outcome"], rec.get("gpu") or "",
                           card_gb, size_text(rec), rec.get("ram_gib"), summary(rec), round(d, 3)))
    out.sort(key=lambda s: (s.distance, s.id))
    seen: set = set()
    kept = []
    for s in out:
        key = (thread(s.source), s.outcome == "oom")
        if key not in seen:
            seen.add(key)
            kept.append(s)
    return kept[:limit]


def _card_gb(name: str | None) -> float | None:
    if not name:
        return None
    from ..machine.gpus import find_card  # noqa: PLC0415  (kept local: this module's imports stay data-only)
    try:
        return float(find_card(name).nominal_gb)
    except VramBudgetError:
        return None
