"""Well-known public model files by file name: what they are and how big they are as published.

Used when a workflow names a file that is not on this machine (or before it is downloaded); a name
in neither table goes to name_infer.py. The entries are data, one file a line, in data/catalogue.json
(hand-kept, each with its source): ``ENTRIES``, the core Flux/Wan/Qwen/SD files with computed
parameter counts; ``PUBLISHED``, one line per further file named by the official templates and the
community corpus (tests/workflows/community), with whose listing gave its size. A count that comes
from the family modules is written as the name (or the sum) of their P_* constants ("P_FLUX1_DEV",
"P_WAN14_T2V + P_WAN22_I2V_EXTRA"), so it follows the family module. After these, the generated table
data/template_models.json (published.py, template_info): every file an official template's notes
give a size for (bench/gen_template_models.py).
Bytes are decimal as published (1 GB = 10^9 bytes): the Hugging Face "Files and versions"
listing (rounded to 3 significant digits there), the exact LFS pointer size where one was found,
or params x bytes-per-param where only the parameter count is known. Every entry says which in
``source``. Parameter counts marked "computed" come from the full-size architecture (key names and
shapes of ComfyUI's model code, the same shapes tests/helpers_models.py builds); they reproduce
the published file sizes to within the header (e.g. Flux.1 dev 11,901,408,320 x 2 bytes =
23.80 GB against the listed 23.8 GB).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields

from types import MappingProxyType
from typing import Mapping

from ..families import FAMILIES
from ..families.registry import PARAMS
from ..model_info import CHECKPOINT, ModelInfo

DATA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "catalogue.json")

# The listings a size in the file comes from (its `source` names one): a Hugging Face "Files and versions"
# listing (3 significant digits) or an exact LFS pointer size; the "size" field of ComfyUI-Manager's model list
# (checked against the parameter count: its 4.89 GB for qwen_image_edit_fp8_e4m3fn is wrong, 20.4 GB listed, not
# used); the "size" of a template that downloads only this file (its GiB figure rounded, within 54 MB). Without
# a family count, params = bytes / bytes-per-weight of the stored dtype, said in the source.
_HF = "Hugging Face file listing"
_MGR = "Comfy-Org/ComfyUI-Manager model-list.json @ f39cbd5"
_TPL = "comfyui-workflow-templates-json 0.1.123 index.json"


@dataclass(frozen=True)
class CatalogueEntry:
    name: str  # file name as published
    family: str
    params: int
    bytes: int
    dtype: str  # main stored dtype (safetensors / GGUF type name)
    source: str  # where params and bytes come from
    quantization: str | None = None
    kind: str | None = None  # default: the family's kind
    folder: str | None = None  # ComfyUI models/ folder it is meant for (disambiguates equal names)
    variant: str | None = None
    label: str | None = None  # default: the family's label (needed for family "unknown")
    # an all-in-one checkpoint whose parts are stored at different precisions (SD3 Medium with a fp8 T5): each part's
    # family, label, params and bytes, {part: {...}} with part one of the family's CHECKPOINT_SPLITS keys
    parts: Mapping | None = None


_FIELDS = {f.name for f in fields(CatalogueEntry)}
_PROVENANCE = {"note"}  # where a figure comes from, beyond `source`: for the reader of the file, not the code


def _params(value, name: str) -> int:
    """An integer, or "P_A + P_B": the family modules' P_* counts (families.registry.PARAMS)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        terms = [t.strip() for t in value.split("+")]
        unknown = [t for t in terms if t not in PARAMS]
        if not unknown:
            return sum(PARAMS[t] for t in terms)
        raise ValueError(f"data/catalogue.json, {name}: params {value!r}: no family defines {', '.join(unknown)}")
    raise ValueError(f"data/catalogue.json, {name}: params must be an integer or P_* names, not {value!r}")


def _load(path: str = DATA_PATH) -> tuple[tuple[CatalogueEntry, ...], tuple[CatalogueEntry, ...]]:
    """(ENTRIES, PUBLISHED) from the data file; a malformed row is an error naming the file and the row."""
    with open(path, encoding="utf-8") as fh:
        rows = json.load(fh)["files"]
    tables: dict[str, list[CatalogueEntry]] = {"entries": [], "published": []}
    for row in rows:
        row = dict(row)
        table, name = row.pop("table", None), row.get("name")
        for key in _PROVENANCE:
            row.pop(key, None)
        extra = set(row) - _FIELDS
        if table not in tables or extra or not isinstance(row.get("bytes"), int):
            raise ValueError(f"data/catalogue.json, {name}: table must be 'entries' or 'published', bytes an integer, "
                             f"no other keys (got table={table!r}, extra={sorted(extra)})")
        row["params"] = _params(row.get("params"), name)
        if row.get("parts") is not None:
            row["parts"] = _parts(row["parts"], name, row["bytes"])
        tables[table].append(CatalogueEntry(**row))
    return tuple(tables["entries"]), tuple(tables["published"])


_PART_FIELDS = {"family", "label", "params", "bytes", "dtype", "quantization", "source"}


def _parts(value, name: str, total: int) -> Mapping:
    """A checkpoint's parts as stored ({part: {family, label, params, bytes, dtype, source}}); their bytes must add
    up to the file's within 2 % (the header and tied copies), or the row is an error naming the file."""
    if not isinstance(value, dict) or not value:
        raise ValueError(f"data/catalogue.json, {name}: parts must be an object of parts")
    out = {}
    for part, spec in value.items():
        if not isinstance(spec, dict) or set(spec) - _PART_FIELDS or not isinstance(spec.get("bytes"), int) \
                or spec.get("family") not in FAMILIES or not spec.get("dtype"):
            raise ValueError(f"data/catalogue.json, {name}: part {part!r} needs family (a known one), params, bytes "
                             f"and dtype, and no other keys than {sorted(_PART_FIELDS)}")
        out[part] = MappingProxyType({**spec, "params": _params(spec.get("params"), f"{name} part {part}")})
    stored = sum(p["bytes"] for p in out.values())
    if abs(stored - total) > 0.02 * total:
        raise ValueError(f"data/catalogue.json, {name}: its parts add up to {stored:,} bytes, the file is {total:,}")
    return MappingProxyType(out)


ENTRIES, PUBLISHED = _load()


def _norm(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()


_BY_NAME: dict[str, list[CatalogueEntry]] = {}
# an entry named with its repository folder ("FLUX.1-dev-Controlnet-Inpainting-Beta/diffusion_pytorch_model.
# safetensors"): a generic file name many repositories share, matched only with that folder in the path
_BY_PATH: dict[str, CatalogueEntry] = {}
for _entry in ENTRIES + PUBLISHED:
    if "/" in _entry.name:
        _BY_PATH[_entry.name.replace("\\", "/").strip().lower()] = _entry
    else:
        _BY_NAME.setdefault(_norm(_entry.name), []).append(_entry)

_FOLDER_ALIASES = {"unet": "diffusion_models", "clip": "text_encoders"}  # folder_paths.map_legacy


def lookup(name: str, folder: str | None = None) -> CatalogueEntry | None:
    """The catalogue entry for a file name (case-insensitive; sub-folders and Windows separators ignored, but for
    an entry named with its folder, which needs that folder in the path).

    ``folder`` (a ComfyUI models/ folder such as "checkpoints") picks between entries that share a
    name; without it a folder named in the path is used, else the first (diffusion model) entry.
    """
    if not name:
        return None
    path = name.replace("\\", "/").strip().lower()
    for key, entry in _BY_PATH.items():
        if path == key or path.endswith("/" + key):
            return entry
    hits = _BY_NAME.get(_norm(name))
    if not hits:
        return None
    wanted = folder
    if wanted is None:
        parts = [p.lower() for p in name.replace("\\", "/").split("/")[:-1]]
        for p in reversed(parts):
            p = _FOLDER_ALIASES.get(p, p)
            if any(h.folder == p for h in hits):
                wanted = p
                break
    if wanted:
        wanted = _FOLDER_ALIASES.get(wanted, wanted)
        for h in hits:
            if h.folder == wanted:
                return h
    return hits[0]


def entry_info(name: str, folder: str | None = None) -> ModelInfo | None:
    """A ModelInfo (source "catalogue") for a file of the hand entries above, or None (published.py
    then looks in the sizes the official templates publish)."""
    entry = lookup(name, folder)
    if entry is None:
        return None
    fam = FAMILIES.get(entry.family, FAMILIES["unknown"])
    kind = entry.kind or fam.kind
    label = (entry.label or fam.label) + (" checkpoint" if kind == CHECKPOINT else "")
    if entry.variant:
        label += f" [{entry.variant.replace('_', '-')}]"
    evidence = (f"file name {entry.name!r} is in the catalogue of public files",)
    parts = {}
    for part, spec in (entry.parts or {}).items():
        pfam = FAMILIES[spec["family"]]
        parts[part] = ModelInfo(
            kind=pfam.kind, family=spec["family"], label=f"{spec.get('label') or pfam.label} (from {label})",
            params=spec["params"], weights_bytes=spec["bytes"], dtype=spec["dtype"],
            quantization=spec.get("quantization"), arch=MappingProxyType(dict(pfam.arch)),
            evidence=evidence + (f"its {part} part as stored: {spec.get('source') or entry.source}",),
            source="catalogue", path=None, largest_tensor_bytes=0, notes=(entry.source,))
    return ModelInfo(
        kind=kind, family=entry.family, label=label, params=entry.params, weights_bytes=entry.bytes,
        dtype=entry.dtype, quantization=entry.quantization, arch=MappingProxyType(dict(fam.arch)),
        evidence=evidence, source="catalogue",
        path=None, largest_tensor_bytes=0, variant=entry.variant, notes=(entry.source,),
        parts=MappingProxyType(parts),
    )


def entries_for_family(family: str) -> list[CatalogueEntry]:
    return [e for e in ENTRIES + PUBLISHED if e.family == family]


