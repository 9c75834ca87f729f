"""Issue 34: a name of this pack cited in docs/ or in a comment or docstring (`module.name`) still exists. Only the
modules whose names ComfyUI does not also use are checked (its memory, vae, wan ... are cited too)."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = {
    "budget": "nodes.estimator.budget", "host_memory": "nodes.estimator.host_memory", "runtime": "nodes.estimator.runtime",
    "planning": "nodes.estimator.planning", "evidence": "nodes.estimator.evidence",
    "evidence_replay": "nodes.estimator.evidence_replay", "risk": "nodes.estimator.risk",
    "advice": "nodes.estimator.advice", "capacity": "nodes.estimator.capacity", "resolve": "nodes.estimator.resolve",
    "vae_memory": "nodes.estimator.vae_memory", "node_specs": "nodes.estimator.node_specs",
    "gpus": "nodes.estimator.gpus", "name_infer": "nodes.estimator.name_infer", "wan_plan": "nodes.estimator.wan_plan",
    "video_plan": "nodes.estimator.video_plan", "llm_models": "nodes.estimator.llm_models",
    "llm_quant": "nodes.estimator.llm_quant", "training": "nodes.estimator.training",
    "placement_plan": "nodes.estimator.placement_plan", "multi_device": "nodes.estimator.multi_device",
    "cli_estimate": "nodes.estimator.cli_estimate", "published": "nodes.estimator.published",
    "model_info": "nodes.estimator.model_info", "comfy_bridge": "nodes.comfy_bridge", "live_models": "nodes.live_models",
    "cotenants": "nodes.cotenants", "admission": "nodes.admission", "leaks": "nodes.leaks",
    "mcp_server": "nodes.estimator.mcp_server", "registry": "nodes.estimator.families.registry",
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
