"""The official ComfyUI workflow templates, from the installed `comfyui-workflow-templates-*` packages.

Nothing is copied into this repository: the templates are read where pip installed them
(``pip install comfyui-workflow-templates-json``; ComfyUI's requirements.txt pins it, and it is in the
``test`` extra of pyproject.toml). Since 2026 the workflow JSON files are in
``comfyui_workflow_templates_json/templates/*.json`` with ``index.json`` the template index; older releases
kept them in the media bundles (``comfyui_workflow_templates_media_{image,video,other,api}/templates/``).
Both layouts are searched.

A template is *local-model* when it runs models on the user's machine:
- not a cloud API template: the index does not mark it ``openSource: false`` and none of its node
  types is an API node (widget_specs.json "api": classes with API_NODE = True in ComfyUI's
  comfy_api_nodes);
- and it names at least one model file: a node's ``properties.models`` entry (the download list the
  frontend shows) or a widget value that is a model file name.

Read by `vram-budget requirements` (requirements.py), bench/coverage.py and the tests (tests/workflows/templates.py).
"""
from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

TEMPLATE_PACKAGES = ("comfyui_workflow_templates_json", "comfyui_workflow_templates_media_image",
                     "comfyui_workflow_templates_media_video", "comfyui_workflow_templates_media_other",
                     "comfyui_workflow_templates_media_api")
MODEL_FILE = re.compile(r"\.(safetensors|sft|gguf|ckpt|pt|pth|bin|pt2)$", re.IGNORECASE)


@dataclass(frozen=True)
class Template:
    name: str
    workflow: dict
    meta: dict  # the template's entry in index.json ({} when it has none)
    path: Path


def template_dirs(site: Path | None = None) -> list[Path]:
    """The ``templates/`` folder of every installed template package (importlib.resources), or of
    those installed in ``site`` (another environment's site-packages, e.g. the venv of the ComfyUI
    release whose requirements.txt pins the templates it ships)."""
    if site is not None:
        return [site / package / "templates" for package in TEMPLATE_PACKAGES
                if (site / package / "templates").is_dir()]
    dirs = []
    for package in TEMPLATE_PACKAGES:
        try:
            folder = importlib.resources.files(package) / "templates"
        except ModuleNotFoundError:
            continue
        if folder.is_dir():
            dirs.append(Path(str(folder)))
    return dirs


def package_versions(site: Path | None = None) -> dict[str, str]:
    """Installed distribution -> version, for the template packages that are installed (in ``site``
    when given)."""
    wanted = {p.replace("_", "-") for p in TEMPLATE_PACKAGES + ("comfyui_workflow_templates", "comfyui_workflow_templates_core")}
    if site is not None:
        found = {d.metadata["Name"].lower().replace("_", "-"): d.version
                 for d in importlib.metadata.distributions(path=[str(site)])}
        return {name: found[name] for name in sorted(wanted) if name in found}
    versions = {}
    for dist in sorted(wanted):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _index(dirs: Iterable[Path]) -> dict[str, dict]:
    meta = {}
    for folder in dirs:
        index = folder / "index.json"
        if index.is_file():
            for category in json.loads(index.read_text(encoding="utf-8")):
                for entry in category.get("templates", []):
                    meta.setdefault(entry["name"], entry)
    return meta


def load_templates(site: Path | None = None) -> list[Template]:
    """Every UI-format template workflow (the index files and non-workflow JSON are skipped)."""
    dirs = template_dirs(site)
    meta = _index(dirs)
    seen, out = set(), []
    for folder in dirs:
        for path in sorted(folder.glob("*.json")):
            if path.stem.startswith("index") or path.stem in seen:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("nodes"), list):
                seen.add(path.stem)
                out.append(Template(path.stem, data, meta.get(path.stem, {}), path))
    return out


def all_nodes(workflow: dict) -> list[dict]:
    """The workflow's nodes and those of its subgraph definitions."""
    nodes = [n for n in workflow.get("nodes") or [] if isinstance(n, dict)] if isinstance(workflow.get("nodes"), list) else []
    defs = workflow.get("definitions")  # a published workflow may carry "definitions": null
    subgraphs = defs.get("subgraphs") if isinstance(defs, dict) else None
    for subgraph in subgraphs if isinstance(subgraphs, list) else []:
        if isinstance(subgraph, dict) and isinstance(subgraph.get("nodes"), list):
            nodes += [n for n in subgraph["nodes"] if isinstance(n, dict)]
    return nodes


def is_api_template(template: Template, api_nodes: set[str]) -> bool:
    return (template.meta.get("openSource") is False
            or any(n.get("type") in api_nodes for n in all_nodes(template.workflow)))


def model_files(workflow: dict) -> set[str]:
    """Model file names the workflow names: properties.models entries and widget values."""
    names = set()
    for node in all_nodes(workflow):
        props = node.get("properties") or {}
        for model in props.get("models") or []:
            if isinstance(model, dict) and model.get("name"):
                names.add(model["name"])
        values = node.get("widgets_values")
        for value in values if isinstance(values, list) else (values or {}).values() if isinstance(values, dict) else ():
            if isinstance(value, str) and MODEL_FILE.search(value):
                names.add(value)
    return names


def local_model_templates(api_nodes: set[str], site: Path | None = None) -> list[Template]:
    """Templates that run local models: not cloud API ones, and naming at least one model file."""
    return [t for t in load_templates(site) if not is_api_template(t, api_nodes) and model_files(t.workflow)]
