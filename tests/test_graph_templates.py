"""read_workflow on every official ComfyUI workflow template that runs local models.

The templates come from the `comfyui-workflow-templates-*` packages on PyPI (optional test
dependencies): since 2026 the workflow JSON files are in `comfyui-workflow-templates-json`
(`comfyui_workflow_templates_json/templates/*.json`, with `index.json` = the template index);
older releases kept them in the media bundles (`comfyui_workflow_templates_media_{image,video,
other,api}/templates/`). Both layouts are searched in this interpreter's site-packages.

Templates that call cloud API nodes are skipped: the index marks them `openSource: false`, and
their node types are in widget_specs.json "api" (classes with API_NODE = True in ComfyUI's
comfy_api_nodes).
"""
from __future__ import annotations

import collections
import importlib.util
import json
import re
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.errors import WorkflowError
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.graph.node_specs import load_specs
from vram_budget.nodes.estimator.workload import SAMPLE

TEMPLATE_PACKAGES = ("comfyui_workflow_templates_json", "comfyui_workflow_templates_media_image",
                     "comfyui_workflow_templates_media_video", "comfyui_workflow_templates_media_other",
                     "comfyui_workflow_templates_media_api")
MODEL_FILE = re.compile(r"\.(safetensors|sft|gguf|ckpt|pt|pth|bin|pt2)$", re.IGNORECASE)


def template_dirs() -> list[Path]:
    dirs = []
    for package in TEMPLATE_PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location) / "templates"
            if folder.is_dir():
                dirs.append(folder)
    return dirs


def load_templates():
    dirs = template_dirs()
    if not dirs:
        pytest.skip("no comfyui-workflow-templates package installed "
                    "(pip install comfyui-workflow-templates-json comfyui-workflow-templates-core)")
    meta = {}
    for folder in dirs:
        index = folder / "index.json"
        if index.is_file():
            for category in json.loads(index.read_text()):
                for entry in category.get("templates", []):
                    meta[entry["name"]] = entry
    files = {}
    for folder in dirs:
        for path in sorted(folder.glob("*.json")):
            if path.stem.startswith("index") or path.stem in files:
                continue
            data = json.loads(path.read_text())
            if isinstance(data, dict) and isinstance(data.get("nodes"), list):
                files[path.stem] = data
    return files, meta


def node_types(workflow: dict) -> set[str]:
    nodes = list(workflow.get("nodes", []))
    for subgraph in workflow.get("definitions", {}).get("subgraphs", []):
        nodes += subgraph.get("nodes", [])
    return {n.get("type") for n in nodes}


def is_api_template(name: str, workflow: dict, meta: dict, api_nodes: set[str]) -> bool:
    return meta.get(name, {}).get("openSource") is False or bool(node_types(workflow) & api_nodes)


@pytest.fixture(scope="module")
def local_templates():
    files, meta = load_templates()
    api_nodes = set(load_specs().get("api", ()))
    local = {n: wf for n, wf in files.items() if not is_api_template(n, wf, meta, api_nodes)}
    print(f"\n{len(files)} template workflows, {len(files) - len(local)} use cloud API nodes, {len(local)} local")
    return local


def test_every_local_template_reads(local_templates):
    failures, with_sample, with_shape, with_subgraph_ids = [], 0, 0, 0
    unknown = collections.Counter()
    names, named_files = 0, 0
    for name, workflow in local_templates.items():
        try:
            w = read_workflow(workflow)
        except WorkflowError as exc:  # no other exception type may escape
            failures.append(f"{name}: {exc}")
            continue
        samples = w.stages_of(SAMPLE)
        with_sample += bool(samples)
        with_shape += any(s.latent is not None for s in samples)
        with_subgraph_ids += any(":" in s.node_id for s in w.stages)
        unknown.update({t for _, t in w.unknown_nodes})
        for ref in w.models:
            names += 1
            named_files += bool(MODEL_FILE.search(ref.name)) or ref.name in ("taesd", "taesdxl", "taesd3", "taef1",
                                                                             "pixel_space")
    total = len(local_templates)
    print(f"read {total - len(failures)}/{total} local templates; sample stage in {with_sample}, "
          f"resolved latent shape in {with_shape}; subgraph stages in {with_subgraph_ids}; "
          f"{named_files}/{names} model names look like files")
    print("node types not understood (templates using them):", unknown.most_common(15))
    assert not failures, failures[:10]
    assert total >= 100, "the template package looks incomplete"
    assert with_sample >= 0.8 * total
    assert with_shape >= 0.6 * total  # the rest: audio/3D latents, loaded-image sizes, newer nodes
    assert with_subgraph_ids >= 0.2 * total  # many templates wrap their pipeline in a subgraph
    assert named_files >= 0.98 * names  # widget values land on the right names
