"""Issue 34: a name of this pack cited in docs/ or in a comment or docstring (`module.name`) still exists. Only the
modules whose names ComfyUI does not also use are checked (its memory, vae, wan ... are cited too)."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = {
    "budget": "nodes.estimator.plan.budget", "host_memory": "nodes.estimator.machine.host_memory",
    "runtime": "nodes.estimator.machine.runtime", "planning": "nodes.estimator.plan.planning",
    "evidence": "nodes.estimator.plan.evidence", "evidence_replay": "nodes.estimator.cli.evidence_replay",
    "risk": "nodes.estimator.plan.risk", "advice": "nodes.estimator.plan.advice",
    "capacity": "nodes.estimator.plan.capacity", "resolve": "nodes.estimator.machine.resolve",
    "vae_memory": "nodes.estimator.physics.vae_memory", "node_specs": "nodes.estimator.graph.node_specs",
    "gpus": "nodes.estimator.machine.gpus", "name_infer": "nodes.estimator.models.name_infer",
    "wan_plan": "nodes.estimator.plan.wan_plan", "video_plan": "nodes.estimator.plan.video_plan",
    "llm_models": "nodes.estimator.llm.llm_models", "llm_quant": "nodes.estimator.models.llm_quant",
    "training": "nodes.estimator.llm.training", "placement_plan": "nodes.estimator.plan.placement_plan",
    "multi_device": "nodes.estimator.plan.multi_device", "cli_estimate": "nodes.estimator.cli.cli_estimate",
    "published": "nodes.estimator.models.published", "model_info": "nodes.estimator.model_info",
    "comfy_bridge": "nodes.comfy_bridge", "live_models": "nodes.live_models", "cotenants": "nodes.cotenants",
    "admission": "nodes.admission", "leaks": "nodes.leaks", "mcp_server": "nodes.estimator.cli.mcp_server",
    "registry": "nodes.estimator.families.registry",
}
CITED = re.compile(r"(?<![\w/.])(" + "|".join(OURS) + r")\.([A-Za-z_][A-Za-z0-9_]*)\b(?!\.\w)")
NOT_NAMES = {"py", "md", "json", "jsonl", "png"}


def _texts():
    for p in sorted((ROOT / "docs").glob("*.md")):
        yield p, p.read_text(encoding="utf-8")
    for folder in ("nodes", "bench"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            text = p.read_text(encoding="utf-8")
            yield p, "\n".join(re.findall(r"#[^\n]*|\"\"\"[\s\S]*?\"\"\"", text))


def test_every_cited_name_of_this_pack_exists():
    stale = []
    for path, text in _texts():
        for mod, name in set(CITED.findall(text)):
            if name in NOT_NAMES:
                continue
            module = importlib.import_module("vram_budget." + OURS[mod])
            if not hasattr(module, name):
                stale.append(f"{path.relative_to(ROOT)}: {mod}.{name}")
    assert not stale, stale


def test_module_docstrings_stay_short_and_their_derivations_are_where_they_say():
    """Issue 34 "words to size": a module's docstring says what a reader of the code needs (45 lines at most, the
    HTTP route table of routes.py being the longest); a derivation moved to docs/derivations.md is named by its
    section title, and that section exists."""
    import ast

    sections = set(re.findall(r"^#{2,3} (.+)$", (ROOT / "docs" / "derivations.md").read_text(encoding="utf-8"), re.M))
    long, missing = [], []
    for p in sorted((ROOT / "nodes").rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        doc = ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or ""
        if doc.count("\n") + 1 > 45:
            long.append(f"{p.relative_to(ROOT)}: {doc.count(chr(10)) + 1} lines")
        missing += [f"{p.relative_to(ROOT)}: {t}" for t in re.findall(r'docs/derivations\.md,\s+"([^"]+)"', doc)
                    if t not in sections]
    assert not long, long
    assert not missing, missing
