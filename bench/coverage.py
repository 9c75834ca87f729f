"""Coverage: how many real workflows get a complete estimate, and what the rest could not price.

Runs the estimator exactly as `vram-budget estimate WORKFLOW.json` does (the same parser, device
and calls: graph.read_workflow -> planning.estimate, no --models-dir, so model sizes come from the
catalogue by name) over
- the community corpus: tests/workflows/community/*.json (sources in its SOURCES.md), or the
  folders given with --corpus;
- the official local-model templates of the installed comfyui-workflow-templates packages
  (tests/workflows/templates.py).

A workflow is *complete* when Budget.complete holds: every model priced (Budget.missing empty),
every stage with a working-memory figure (Budget.incomplete empty) and at least one stage.
Prints a markdown table per workflow, the totals, and the missing things ranked by how many
workflows they block: model files, stages without working memory, node types not understood.

    python3 bench/coverage.py [--corpus DIR ...] [--no-templates] [--templates-site SITE_PACKAGES] [--gpu 'RTX 4090'] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _import_pack() -> None:
    """`vram_budget` as installed (pip install -e .), else this checkout mapped to that name."""
    try:
        if importlib.util.find_spec("vram_budget.nodes.estimator") is not None:
            return
    except ImportError:
        pass
    module = types.ModuleType("vram_budget")
    module.__path__ = [str(ROOT)]
    sys.modules["vram_budget"] = module


_import_pack()

from vram_budget.nodes.estimator.plan.planning import estimate  # noqa: E402
from vram_budget.nodes.estimator.cli.cli_estimate import add_estimate_parser, device_from_args  # noqa: E402
from vram_budget.nodes.estimator.errors import VramBudgetError  # noqa: E402
from vram_budget.nodes.estimator.graph import read_workflow  # noqa: E402
from vram_budget.nodes.estimator.graph.node_specs import load_specs  # noqa: E402
from workflows import templates  # noqa: E402  (tests/workflows/templates.py)
from workflows.corpus import community_dir  # noqa: E402

CORPUS = community_dir()  # tests/workflows/community, else ../shared/corpus/community (tests/workflows/corpus.py)


@dataclass
class Result:
    name: str
    group: str  # "community" | "templates"
    status: str  # "complete" | "incomplete" | "error" | "crash"
    missing: list = field(default_factory=list)  # (name, folder, role, problem)
    incomplete: list = field(default_factory=list)  # stage strings from Budget.incomplete
    unknown: list = field(default_factory=list)  # node types the estimator did not understand
    error: str = ""
    in_known: bool = True  # every node type exists in a ComfyUI this pack tests (the newest: NEWEST_COMFYUI)
    packs: str = ""  # community: "core only" | "packs with a module" | "a pack without a module" (pack_group)


def cli_device(gpu: str | None):
    """The device `vram-budget estimate` uses with the same flags (default: RTX 4090, classic)."""
    parser = argparse.ArgumentParser()
    add_estimate_parser(parser.add_subparsers())
    return device_from_args(parser.parse_args(["estimate", "x.json"] + (["--gpu", gpu] if gpu else [])))


def run_one(name: str, group: str, data, device) -> Result:
    try:
        budget = estimate(read_workflow(data), device)
    except VramBudgetError as exc:
        return Result(name, group, "error", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a crash is a finding, reported with its type
        return Result(name, group, "crash", error=f"{type(exc).__name__}: {exc}")
    incomplete = list(budget.incomplete) or ([] if budget.stages else ["no stage that uses the GPU was found"])
    return Result(
        name, group, "complete" if budget.complete else "incomplete",
        missing=[(m.name, m.folder, m.role, m.problem) for m in budget.missing],
        incomplete=incomplete,
        unknown=sorted({t for _, t in budget.unknown_nodes}),
    )


def community(dirs: list[Path]):
    for folder in dirs:
        for path in sorted(folder.glob("*.json")):
            if path.name == "manifest.json":  # a corpus's list of its sources (tests/workflows/community_extra)
                continue
            try:
                yield path.stem, json.loads(path.read_bytes())
            except ValueError as exc:
                yield path.stem, exc


UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


NEWEST_COMFYUI = max(load_specs().get("comfyui_versions") or ["0.18.2"], key=lambda v: tuple(map(int, v.split("."))))


def runs_on_known_comfyui(workflow) -> bool:
    """True when every node type of the workflow is one the ComfyUI versions of data/widget_specs.json have
    (generated from 0.8.0, 0.18.2 and 0.33.0) or a frontend-only node; templates made for ComfyUI releases
    newer than NEWEST_COMFYUI are not."""
    specs = load_specs()
    known = set(specs.get("nodes", {})) | set(specs.get("core", ()))
    frontend = {"Reroute", "PrimitiveNode", "Note", "MarkdownNote"}
    types_ = {n.get("type") for n in templates.all_nodes(workflow) if isinstance(n, dict)}
    return all(t in known or t in frontend or (isinstance(t, str) and UUID.match(t)) for t in types_)


def pack_group(workflow) -> str:
    """'core only' (every node is ComfyUI's own or the frontend's), 'packs with a module' (every custom node type
    is one a module of graph/packs/ describes), else 'a pack without a module' (issue 33 reports these apart)."""
    from vram_budget.nodes.estimator.graph.packs import REGISTRY  # noqa: PLC0415

    specs = load_specs()
    core = set(specs.get("nodes", {})) | set(specs.get("core", ())) | set(specs.get("api", ()))
    frontend = {"Reroute", "PrimitiveNode", "Note", "MarkdownNote"}
    nodes = templates.all_nodes(workflow) if "nodes" in workflow else list(workflow.values())  # UI or API prompt
    custom = {t for n in nodes if isinstance(n, dict)
              for t in [n.get("type") or n.get("class_type")]
              if isinstance(t, str) and t not in core and t not in frontend and not UUID.match(t)}
    if not custom:
        return "core only"
    return "packs with a module" if custom <= set(REGISTRY.known_types) else "a pack without a module"


def official(site: Path | None = None):
    api_nodes = set(load_specs().get("api", ()))
    for t in templates.local_model_templates(api_nodes, site):
        yield t.name, t.workflow


def gaps(result: Result) -> str:
    if result.error:
        return f"{result.status}: {result.error[:160]}"
    parts = [f"{n} ({role}: {problem})" for n, _folder, role, problem in result.missing]
    parts += result.incomplete
    return "; ".join(parts).replace("|", "\\|")


def stage_reason(text: str) -> str:
    """'Sample (node 3, WanVideoSampler): working memory unknown' -> the reason, without the stage's
    own title and node id, so that equal reasons rank together."""
    reason = text.split(": ", 1)[1] if ": " in text else text
    return re.sub(r"\d+(\.\d+)?", "N", reason)


def print_table(results: list[Result]) -> None:
    print("| workflow | group | result | could not price | node types not understood |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r.name} | {r.group} | {r.status} | {gaps(r) if r.status != 'complete' else ''} | "
              f"{', '.join(r.unknown)} |")


def print_totals(results: list[Result]) -> None:
    print("\n| group | workflows | complete | % complete | incomplete | error | crash |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    groups = [("templates", lambda r: r.group == "templates"),
              (f"templates whose nodes all exist in ComfyUI {NEWEST_COMFYUI}",
               lambda r: r.group == "templates" and r.in_known),
              ("community", lambda r: r.group == "community")] + [
        (f"community, {g}", lambda r, g=g: r.group == "community" and r.packs == g)
        for g in ("core only", "packs with a module", "a pack without a module")]
    for group, keep in groups:
        rows = [r for r in results if keep(r)]
        if not rows:
            continue
        count = collections.Counter(r.status for r in rows)
        pct = 100.0 * count["complete"] / len(rows)
        print(f"| {group} | {len(rows)} | {count['complete']} | {pct:.1f} % | {count['incomplete']} | "
              f"{count['error']} | {count['crash']} |")
    by_source = collections.defaultdict(list)
    for r in results:
        if r.group == "community":
            by_source["/".join(r.name.split("__")[:2])].append(r.status == "complete")
    if by_source:
        print("\n| community source | workflows | complete |")
        print("| --- | --- | --- |")
        for source, done in sorted(by_source.items(), key=lambda kv: -len(kv[1])):
            print(f"| {source} | {len(done)} | {sum(done)} |")


def ranked(results: list[Result], top: int) -> None:
    """What blocks a complete estimate, by the number of workflows it blocks (each counted once a workflow)."""
    blocked = [r for r in results if r.status != "complete"]
    models = collections.Counter()
    by_role = collections.Counter()
    roles = {}
    stages = collections.Counter()
    nodes = collections.Counter()
    errors = collections.Counter()
    for r in blocked:
        for name, folder, role, problem in r.missing:
            roles[name] = f"{role}, models/{folder}, {problem}"
        models.update({name for name, *_ in r.missing})
        by_role.update({role for _name, _folder, role, _problem in r.missing})
        stages.update({stage_reason(s) for s in r.incomplete})
        nodes.update(set(r.unknown))
        if r.error:
            errors[stage_reason(r.error)[:120]] += 1
    sections = [("roles of the model files not priced", by_role, {}), ("model files not priced", models, roles), ("stages without working memory", stages, {}),
                ("node types not understood (in workflows not complete)", nodes, {}), ("errors", errors, {})]
    for title, counter, extra in sections:
        if not counter:
            continue
        print(f"\n### Top {title} (workflows blocked, of {len(blocked)} not complete)\n")
        print("| # | what | workflows | detail |")
        print("| --- | --- | --- | --- |")
        for i, (what, n) in enumerate(counter.most_common(top), 1):
            print(f"| {i} | {str(what).replace('|', chr(92) + '|')} | {n} | {extra.get(what, '')} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--corpus", action="append", type=Path, help=f"folder of workflow JSON files (default {CORPUS})")
    p.add_argument("--no-templates", action="store_true", help="skip the official templates")
    p.add_argument("--no-community", action="store_true", help="skip the community corpus")
    p.add_argument("--gpu", help="card, as vram-budget estimate --gpu (default RTX 4090)")
    p.add_argument("--top", type=int, default=30, help="how many entries each ranking shows")
    p.add_argument("--json", type=Path, help="also write every result to this JSON file")
    p.add_argument("--templates-site", type=Path,
                   help="read the template packages installed in this site-packages folder instead of this "
                        "interpreter's (e.g. a ComfyUI venv's: the templates that release pins and ships)")
    args = p.parse_args(argv)
    device = cli_device(args.gpu)
    results = []
    if not args.no_templates:
        for n, wf in official(args.templates_site):
            result = run_one(n, "templates", wf, device)
            result.in_known = runs_on_known_comfyui(wf)
            results.append(result)
        if not results:
            print("no comfyui-workflow-templates package installed: templates skipped", file=sys.stderr)
    if not args.no_community:
        before = len(results)
        for name, data in community(args.corpus or [CORPUS]):
            if isinstance(data, Exception):
                results.append(Result(name, "community", "error", error=f"not valid JSON: {data}"))
                continue
            results.append(run_one(name, "community", data, device))
            results[-1].packs = pack_group(data) if isinstance(data, dict) else "a pack without a module"
        if len(results) == before:
            print(f"no workflow JSON in {', '.join(map(str, args.corpus or [CORPUS]))}: community skipped",
                  file=sys.stderr)
    versions = templates.package_versions(args.templates_site)
    print(f"# Estimate coverage ({device.name}; templates: "
          f"{', '.join(f'{k} {v}' for k, v in versions.items()) or 'none installed'})\n")
    print_table(results)
    print_totals(results)
    ranked(results, args.top)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
