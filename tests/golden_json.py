"""The `vram-budget estimate --json` output of every bundled example and test workflow, as digests.

A restructuring of the estimator must not change one byte of its public answer (issue 22). This
module runs the command line's own path (argument parser -> device_from_args -> read_workflow ->
estimate -> with_capacity -> to_dict -> json.dumps) in-process on:
- example_workflows/*.json, tests/fixtures/{api,ui,frontend}/*.json;
- the community corpus (tests/workflows/corpus.py);
- the official templates that are installed (tests/workflows/templates.py);
under a few launch configurations that reach the card, host-memory, capacity and fallback paths.

The record (tests/golden/estimate_json.json) keeps, per configuration and workflow, the sha256 of
the input file and of the output: a workflow whose input changed (a newer templates package) is
compared only once its record is rewritten. `python3 tests/golden_json.py --write` rewrites the
record; `--show KEY` prints one output.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
RECORD = TESTS / "golden" / "estimate_json.json"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# name -> command-line flags (after the workflow). "examples" configurations run on the bundled
# examples and fixtures only (the capacity searches are slow); the others on everything.
CONFIGS = {
    "4090": (["--gpu", "RTX 4090"], "all"),
    "3060-win-0.8-16g": (["--gpu", "RTX 3060", "--os", "windows", "--ram", "16", "--comfyui-version", "0.8"], "all"),
    "4070-0.18-32g-lowvram": (["--gpu", "RTX 4070", "--ram", "32", "--swap", "8", "--comfyui-version", "0.18",
                               "--lowvram", "--cache-none"], "all"),
    "8g-classic-highvram": (["--vram", "8", "--memory-mode", "classic", "--highvram", "--ram", "64"], "examples"),
    "5090-max": (["--gpu", "RTX 5090", "--max", "batch", "--max", "resolution", "--ram", "64"], "examples"),
    "1070-linux": (["--gpu", "GTX 1070", "--cpu-vae", "--no-fp8-compute"], "examples"),
    # two cards: each device's peak and the placement plan (issue 24), with the machine's RAM judged once
    "2gpu-4090-3090-64g": (["--gpus", "RTX 4090,RTX 3090", "--ram", "64"], "examples"),
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def workflows() -> dict[str, tuple[str, bytes]]:
    """key -> (group, raw file bytes). Keys are stable across checkouts."""
    out: dict[str, tuple[str, bytes]] = {}
    for folder in ("example_workflows", "tests/fixtures/api", "tests/fixtures/ui", "tests/fixtures/frontend"):
        for p in sorted((REPO / folder).glob("*.json")):
            out[f"{folder}/{p.name}"] = ("examples", p.read_bytes())
    from workflows.corpus import community_dir  # noqa: PLC0415  (tests/ on sys.path only when run here)

    for p in sorted(community_dir().glob("*.json")):
        out[f"community/{p.name}"] = ("corpus", p.read_bytes())
    try:
        from workflows.templates import load_templates  # noqa: PLC0415

        for t in load_templates():
            out[f"templates/{t.name}"] = ("corpus", t.path.read_bytes())
    except Exception:  # templates not installed: only the rest is compared
        pass
    return out


def _parser():
    from nodes.estimator.cli.cli_estimate import add_estimate_parser  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="vram-budget")
    add_estimate_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def output(config: str, raw: bytes) -> str:
    """The exact text `vram-budget estimate FILE --json <flags>` prints (without the "workflow" path),
    or the error line it prints."""
    from nodes.estimator.plan.planning import estimate, with_capacity  # noqa: PLC0415
    from nodes.estimator.cli.cli_estimate import device_from_args  # noqa: PLC0415
    from nodes.estimator.errors import VramBudgetError  # noqa: PLC0415
    from nodes.estimator.graph import read_workflow  # noqa: PLC0415

    args = _parser().parse_args(["estimate", "x.json", "--json", *CONFIGS[config][0]])
    try:
        device = device_from_args(args)
        data = json.loads(raw)
        workload = read_workflow(data)
        budget = estimate(workload, device, None)
        if args.max:
            budget = with_capacity(budget, workload, dict.fromkeys(args.max), None)
    except (VramBudgetError, ValueError, RecursionError) as exc:
        return f"error: {exc}"
    return json.dumps(budget.to_dict(), indent=2)


def compute(selected: dict[str, tuple[str, bytes]] | None = None) -> dict[str, dict[str, str]]:
    selected = workflows() if selected is None else selected
    record: dict[str, dict[str, str]] = {}
    for config, (_flags, scope) in CONFIGS.items():
        for key, (group, raw) in selected.items():
            if scope == "examples" and group != "examples":
                continue
            record[f"{config}|{key}"] = {"in": _sha(raw), "out": _sha(output(config, raw).encode())}
    return record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite tests/golden/estimate_json.json")
    ap.add_argument("--show", metavar="CONFIG|WORKFLOW", help="print one output")
    a = ap.parse_args(argv)
    if a.show:
        config, key = a.show.split("|", 1)
        print(output(config, workflows()[key][1]))
        return 0
    rec = compute()
    if a.write:
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        print(f"{len(rec)} outputs recorded in {RECORD.relative_to(REPO)}")
        return 0
    old = json.loads(RECORD.read_text())
    diff = [k for k, v in rec.items() if k in old and old[k]["in"] == v["in"] and old[k]["out"] != v["out"]]
    print(f"{len(rec)} outputs, {sum(1 for k in rec if k in old and old[k]['in'] == rec[k]['in'])} comparable, "
          f"{len(diff)} differ")
    for k in diff[:40]:
        print("  differs:", k)
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
