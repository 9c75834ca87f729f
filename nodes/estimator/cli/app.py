"""The ``vram-budget`` command line.

    vram-budget inspect PATH...        what each model file is (files or folders, e.g. ComfyUI/models)
    vram-budget estimate WORKFLOW...   the budget of a workflow (cli_estimate.py)
    vram-budget mcp                    a Model Context Protocol server on stdio (mcp_server.py)

Subcommands register themselves on an argparse sub-parser set: ``inspect`` here;
``add_estimate_parser`` is the hook that adds ``estimate`` from cli_estimate.py.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from ..errors import VramBudgetError
from ..families import describe, info_to_dict
from ..files import iter_model_files
from ..units import fmt_gib, fmt_params
from .cli_llm import add_llm_parsers
from .cli_estimate import add_estimate_parser as add
from .requirements import add_requirements_parser
from .mcp_server import add_mcp_parser
from ..files import inspect_file


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vram-budget",
        description="Predict and explain the GPU memory of ComfyUI workflows from the model files' headers.",
    )
    subparsers = parser.add_subparsers(dest="command", title="commands")
    subparsers.required = True
    add_inspect_parser(subparsers)
    add_estimate_parser(subparsers)
    add_cards_parser(subparsers)
    add_requirements_parser(subparsers)
    add_llm_parsers(subparsers)
    add_mcp_parser(subparsers)
    return parser


def add_inspect_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "inspect", help="identify model files from their headers (no weights are read)",
        description="One row per model file: family, parameters, stored dtypes, bytes and quantization. "
                    "Folders are searched recursively for .safetensors/.sft/.gguf/.ckpt/.pt/.pth/.bin files.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="model files or folders (e.g. ComfyUI/models)")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of the table")
    p.set_defaults(func=cmd_inspect)


def add_cards_parser(subparsers) -> None:
    p = subparsers.add_parser("cards", help="list the cards --gpu / --gpus / --workers know",
                              description="The card catalogue: name, memory, architecture, group (gpus.py).")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_cards)


def cmd_cards(args, out=None) -> int:
    from ..machine.gpus import CARDS  # noqa: PLC0415
    out = out or sys.stdout
    rows = [{"name": c.name, "nominal_gb": c.nominal_gb, "group": c.group, "arch": c.arch, "vendor": c.vendor,
             "aliases": list(c.aliases), "price_eur_h": c.price_eur_h} for c in CARDS]
    if args.json:
        print(json.dumps(rows, indent=1), file=out)
        return 0
    group = None
    for r in rows:
        if r["group"] != group:
            group = r["group"]
            print(f"\n{group}:", file=out)
        print(f"  {r['name']:<22} {r['nominal_gb']:>4} GB  {r['arch']}", file=out)
    return 0


def add_estimate_parser(subparsers) -> None:
    """Hook for the ``estimate`` subcommand (workflow -> peak VRAM), defined in cli_estimate.py."""
    add(subparsers)


# ---------------------------------------------------------------------------------------------
def cmd_inspect(args: argparse.Namespace, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    rows: list[dict] = []
    failures = 0
    for raw in args.paths:
        try:
            files = list(iter_model_files(raw))
        except VramBudgetError as exc:
            failures += 1
            print(f"error: {exc}", file=err)
            rows.append({"path": os.fspath(raw), "error": str(exc)})
            continue
        if not files:
            print(f"note: no model files under {raw}", file=err)
        for path in files:
            try:
                info = describe(path)
            except VramBudgetError as exc:
                failures += 1
                print(f"error: {exc}", file=err)
                rows.append({"path": path, "error": str(exc)})
                continue
            row = info_to_dict(info)
            row["path"] = path
            row["dtype_mix"] = _dtype_mix(path)
            rows.append(row)
    if args.json:
        json.dump(rows, out, indent=2)
        out.write("\n")
    else:
        _print_table([r for r in rows if "error" not in r], out)
    return 1 if failures else 0


def _dtype_mix(path: str) -> dict[str, int]:
    return inspect_file(path).bytes_by_dtype


def _fmt_mix(mix: dict[str, int]) -> str:
    total = sum(mix.values()) or 1
    parts = [f"{d} {100 * b / total:.0f}%" for d, b in mix.items() if b / total >= 0.005]
    return ", ".join(parts[:3]) + (", ..." if len(parts) > 3 else "")


def _print_table(rows: list[dict], out) -> None:
    if not rows:
        return
    header = ("file", "model", "params", "dtypes (bytes)", "weights", "quantization")
    table = [header]
    for r in rows:
        name = os.path.basename(r["path"])
        label = r["label"] if r["family"] == "unknown" else f"{r['label']} <{r['family']}>"
        if r["kind"] == "checkpoint" and r["parts"]:
            label += " = " + " + ".join(f"{k}:{v['family']}" for k, v in r["parts"].items())
        if r["kind"] == "lora":
            a = r["arch"]
            label += f" rank {a.get('rank')} -> {a.get('target_family')}"
        table.append((name, label, fmt_params(r["params"]), _fmt_mix(r["dtype_mix"]), fmt_gib(r["weights_bytes"]),
                      r["quantization"] or "-"))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        cells = [str(c).ljust(w) if j not in (2, 4) else str(c).rjust(w) for j, (c, w) in enumerate(zip(row, widths))]
        out.write("  ".join(cells).rstrip() + "\n")
        if i == 0:
            out.write("  ".join("-" * w for w in widths) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # `vram-budget ... | head`: the reader left, not an error
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (keep Python's exit flush quiet)
        except OSError:
            pass
        return 0


if __name__ == "__main__":  # python -m vram_budget.nodes.estimator.cli (cli/__main__.py)
    sys.exit(main())
