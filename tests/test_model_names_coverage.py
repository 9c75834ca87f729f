"""Every model file the official templates and the community corpus name resolves: published size
(catalogue), size inferred from the name (name_infer), or a stated reason why it stays unpriced."""
from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest
from workflows import templates
from workflows.corpus import community_dir

from vram_budget.nodes.estimator.machine.resolve import resolve_model
from vram_budget.nodes.estimator.models.catalogue import lookup
from vram_budget.nodes.estimator.models.published import civitai_models, manager_info
from vram_budget.nodes.estimator.models.published import template_models
from vram_budget.nodes.estimator.errors import WorkflowError
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.node_specs import load_specs

CORPUS = community_dir()  # tests/workflows/community, else ../shared/corpus/community
# Flux.1/Flux.2 and Wan models in the roles the budget prices: these must never stay unpriced.
CORE = re.compile(r"flux(?![._-]?[3-9])|wan", re.IGNORECASE)
CORE_ROLES = {"diffusion", "text_encoder", "vae", "checkpoint", "lora"}
FLOOR = {"templates": 0.9, "community": 0.85}  # share of distinct model names priced


def _refs(workflows) -> dict:
    refs = collections.OrderedDict()
    for data in workflows:
        try:
            workload = read_workflow(data)
        except WorkflowError:
            continue
        for ref in workload.models:
            refs.setdefault((ref.name, ref.folder), ref)
    return refs


def _corpus():
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(CORPUS.glob("*.json"))]


def _templates():
    if not templates.template_dirs():
        pytest.skip("no comfyui-workflow-templates package installed (pip install comfyui-workflow-templates-json)")
    api = set(load_specs().get("api", ()))
    return [t.workflow for t in templates.local_model_templates(api)]


def _resolve_all(refs) -> dict[str, list]:
    outcome = {"catalogue": [], "inferred": [], "missing": [], "virtual": []}
    for ref in refs.values():
        info, note = resolve_model(ref, None)
        outcome[info.source].append((ref, info, note))
    return outcome


@pytest.mark.parametrize("source", ["templates", "community"])
def test_every_model_name_resolves_or_says_why(source):
    workflows = _templates() if source == "templates" else _corpus()
    if not workflows:
        pytest.skip(f"no {source} workflows")
    refs = _refs(workflows)
    outcome = _resolve_all(refs)
    assert sum(map(len, outcome.values())) == len(refs)
    for ref, info, note in outcome["catalogue"]:
        # the hand catalogue, or the sizes the templates, ComfyUI-Manager's list or Civitai's listing publish
        base = ref.name.replace("\\", "/").rsplit("/", 1)[-1].lower()
        generated = (base in template_models()["files"] or manager_info(ref.name, ref.folder) is not None
                     or base in civitai_models()["files"])
        assert (lookup(ref.name, ref.folder) is not None or generated) and info.notes and info.weights_bytes > 0
    for ref, info, note in outcome["inferred"]:
        assert info.weights_bytes > 0 and info.params > 0, ref.name
        assert note is None and info.notes and "from the name" in info.notes[0], ref.name
    for ref, info, note in outcome["missing"]:
        assert info.weights_bytes == 0 and "size is unknown (" in note, ref.name  # the reason in brackets
    for ref, info, note in outcome["virtual"]:  # made by ComfyUI, no file: VAELoader's pixel_space
        assert ref.name == "pixel_space" and "nodes.py" in info.evidence[0], ref.name
    core = [ref.name for ref, _, _ in outcome["missing"] if ref.role in CORE_ROLES and CORE.search(ref.name)]
    assert not core, f"Flux/Wan models left unpriced: {core}"
    priced = len(outcome["catalogue"]) + len(outcome["inferred"]) + len(outcome["virtual"])
    print(f"\n{source}: {len(refs)} model names: {len(outcome['catalogue'])} catalogue, "
          f"{len(outcome['inferred'])} inferred, {len(outcome['missing'])} unpriced")
    # what stays unpriced is mostly new 3D/audio/image families whose name gives no size (templates)
    assert priced >= FLOOR[source] * len(refs)
