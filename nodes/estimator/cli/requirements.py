"""What the official ComfyUI templates need, as data others can use (issue 30): for every local-model template
of the installed templates package, the VRAM it needs with every weight on the card, the least VRAM it runs
with (weights streamed from RAM), and on one NVIDIA card of each common size (8 / 12 / 16 / 24 / 32 / 48 / 80 GB)
the verdict, the peak and the system RAM it needs, under one ComfyUI version's memory rules. Every figure is
this estimator's prediction from the published model files' sizes, not a measurement, and the file says so.

`vram-budget requirements --out data/requirements.json` writes it; tests/test_requirements.py regenerates a
sample and checks the committed file against the installed templates."""
from __future__ import annotations

import json
import sys
import time
from typing import Callable, Iterable

from ..errors import VramBudgetError
from ..units import GiB

# one card per size: the common card of that size, as `--gpu` names it (gpus.py)
CARDS = (("8", "RTX 4060"), ("12", "RTX 3060"), ("16", "RTX 4060 Ti 16GB"), ("24", "RTX 4090"), ("32", "RTX 5090"),
         ("48", "L40S"), ("80", "H100"))
MAX_TEMPLATES = 5000


def _device(card: str, version: str):
    import argparse  # noqa: PLC0415

    from .cli_estimate import add_estimate_parser, devices_from_args  # noqa: PLC0415
    parser = argparse.ArgumentParser(prog="vram-budget")
    add_estimate_parser(parser.add_subparsers(dest="command"))
    return devices_from_args(parser.parse_args(["estimate", "x.json", "--gpu", card, "--comfyui-version", version]))[0]


def _pack_version() -> str:
    try:
        import importlib.metadata as md  # noqa: PLC0415
        return md.version("comfyui-vram-budget")
    except Exception:  # noqa: BLE001  (run from a checkout that was never installed)
        return "unknown"


def template_entry(workflow: dict, devices) -> dict:
    """One template's figures on every card (bytes; verdicts as in --json)."""
    from ..graph import read_workflow  # noqa: PLC0415
    from ..plan.planning import estimate  # noqa: PLC0415

    workload = read_workflow(workflow)
    by_card, resident, complete, missing, why = {}, 0, True, [], ""
    least: dict[int, int] = {}  # stage index -> the least VRAM it ran with on any card
    for gb, device in devices:
        b = estimate(workload, device, None)
        d = b.to_dict()
        complete = complete and bool(d.get("complete", True)) and b.verdict != "unknown"
        missing = missing or [m.get("name") or m.get("label") or "" for m in d.get("missing", [])][:5]
        if not why and b.verdict == "unknown":
            why = next((f"{m.get('name')}: {m.get('problem')}" for m in d.get("missing", [])), "") \
                or next(iter(b.incomplete), "") \
                or next((f"{sb.title}: {(r.explanation or ('not priced',))[0]}" for sb, r in zip(b.stages, b.runs)
                         if r.outcome == "unknown"), "")
            why = f"on {gb} GB: {why}"[:300]
        resident = max(resident, b.peak_bytes)
        # the least a stage runs with: streamed weights need cast buffers a resident run does not, so the smaller
        # of the streaming minimum and the stage's all-resident peak; a small card shows the fallbacks a large one
        # never needs (a VAE's tiled retry), so each stage's least is taken over the cards
        for i, (sb, r) in enumerate(zip(b.stages, b.runs)):
            # a stage that fits in pieces (a VAE decoding the batch a few images at a time) needs its run's peak
            ran = r.peak_bytes if r.outcome in ("fits", "tight") and r.peak_bytes else sb.peak_bytes
            need = min(r.minimum_bytes or ran, sb.peak_bytes)
            least[i] = min(least.get(i, need), need)
        by_card[gb] = {"card": device.name, "verdict": d.get("vram_verdict") or d["verdict"],
                       "peak_bytes": d["peak_bytes"], "ram_peak_bytes": d.get("ram_peak_bytes"),
                       "offload_bytes": d.get("offload_bytes")}
    return {"complete": complete, "missing": missing, "why": why, "resident_peak_bytes": resident,
            "minimum_vram_bytes": max(least.values(), default=0), "cards": by_card}


def requirements(version: str = "0.33", only: Iterable[str] = (), progress: Callable[[str], None] | None = None) -> dict:
    """The whole file: its provenance, then one entry per local-model template (name order)."""
    from ..graph.node_specs import load_specs  # noqa: PLC0415
    from ..graph.templates import local_model_templates, package_versions  # noqa: PLC0415

    api = set(load_specs().get("api", ()))
    templates = local_model_templates(api)
    if not templates:
        raise VramBudgetError("no official templates are installed: pip install comfyui-workflow-templates-json")
    wanted = set(only)
    templates = [t for t in templates if not wanted or t.name in wanted][:MAX_TEMPLATES]
    devices = [(gb, _device(card, version)) for gb, card in CARDS]
    out: dict[str, dict] = {}
    for t in sorted(templates, key=lambda t: t.name):
        if progress:
            progress(t.name)
        try:
            out[t.name] = template_entry(t.workflow, devices)
        except VramBudgetError as exc:
            out[t.name] = {"complete": False, "error": str(exc)[:300]}
    return {
        "about": "Predicted memory of the official ComfyUI templates: computed by comfyui-vram-budget from the "
                 "published model files' sizes and ComfyUI's memory rules, not measured on a GPU. "
                 "resident_peak_bytes: VRAM with every weight on the card (full speed); minimum_vram_bytes: the "
                 "least VRAM it runs with, weights streamed from RAM and a VAE retried in tiles or in smaller "
                 "batches where ComfyUI does so (the least each stage needed on any card); per card: the card's verdict (fits, tight, "
                 "runs_slower, oom, unknown), its predicted peak and the system RAM the run needs. "
                 "A template with complete=false has a model this estimator cannot size: its figures leave it out.",
        "computed_not_measured": True,
        "comfyui_rules": version,
        "memory_mode": "as ComfyUI uses on each card (Dynamic VRAM on NVIDIA from 0.16)",
        "pack_version": _pack_version(),
        "templates_packages": package_versions(),
        "cards": {gb: card for gb, card in CARDS},
        "templates": out,
    }


def add_requirements_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "requirements", help="predicted VRAM and RAM of every official template on 8 to 80 GB cards (JSON)",
        description="For every local-model template of the installed comfyui-workflow-templates package: the VRAM "
                    "it needs with every weight resident, the least it runs with, and the verdict, peak and RAM "
                    "on one NVIDIA card of each size (8/12/16/24/32/48/80 GB). Computed, not measured.")
    p.add_argument("--out", metavar="FILE", help="write the JSON here (default: print it)")
    p.add_argument("--comfyui-version", default="0.33", metavar="X.Y[.Z]", help="whose memory rules (default 0.33)")
    p.add_argument("--template", action="append", default=[], metavar="NAME",
                   help="only this template (repeatable; at most 64)")
    p.set_defaults(func=cmd_requirements)


def cmd_requirements(args) -> int:
    if len(args.template) > 64:
        print(f"error: --template given {len(args.template)} times; at most 64", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        data = requirements(args.comfyui_version, args.template)
    except VramBudgetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        n = len(data["templates"])
        full = sum(1 for e in data["templates"].values() if e.get("complete"))
        print(f"wrote {args.out}: {n} templates ({full} complete) on {len(CARDS)} cards in "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def summary_gib(entry: dict) -> str:
    """One line for a person: 'needs 23.2 GiB resident, runs from 2.1 GiB; 8 GB: runs_slower, ...'."""
    if not entry.get("complete"):
        return "can't tell"
    cards = ", ".join(f"{gb} GB: {c['verdict']}" for gb, c in entry["cards"].items())
    return (f"needs {entry['resident_peak_bytes'] / GiB:.1f} GiB resident, runs from "
            f"{entry['minimum_vram_bytes'] / GiB:.1f} GiB; {cards}")
