"""The pack as ComfyUI-Manager / the Comfy Registry see it, without ComfyUI."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_registry_metadata():
    project, comfy = PYPROJECT["project"], PYPROJECT["tool"]["comfy"]
    # docs.comfy.org registry spec: name [A-Za-z0-9-_.], < 100 chars, no leading digit/special,
    # no consecutive specials; version semver X.Y.Z
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*", project["name"]) and len(project["name"]) < 100
    assert project["name"] == "comfyui-vram-budget"
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])
    assert project["license"] == {"file": "LICENSE"} and (REPO / "LICENSE").is_file()
    assert "Repository" in project["urls"]
    assert comfy["PublisherId"] and comfy["DisplayName"] == "VRAM Budget"
    assert comfy["Icon"].endswith((".svg", ".png")) and (REPO / "docs" / comfy["Icon"].rsplit("/", 1)[1]).is_file()


def test_dependencies_match_requirements_and_leave_torch_to_comfyui():
    deps = {re.split(r"[<>=! ;]", d)[0].lower() for d in PYPROJECT["project"]["dependencies"]}
    assert deps == {"safetensors", "gguf", "psutil"}
    reqs = {re.split(r"[<>=! ;]", ln)[0].lower() for ln in (REPO / "requirements.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")}
    assert reqs == deps
    assert "torch" not in deps


def test_node_list_matches_the_node_mappings():
    """ComfyUI-Manager builds its node map by regex over NODE_CLASS_MAPPINGS = {...}; node_list.json
    must name the same ids."""
    ids = set()
    for path in (REPO / "nodes").glob("*.py"):
        m = re.search(r"NODE_CLASS_MAPPINGS\s*=\s*\{(.*?)\}", path.read_text(), re.S)
        if m:
            ids |= set(re.findall(r'"([A-Za-z0-9_]+)"\s*:', m.group(1)))
    assert ids == set(json.loads((REPO / "node_list.json").read_text()))


def test_pack_imports_cleanly_without_comfyui():
    import vram_budget

    assert "comfy" not in sys.modules or "comfy.model_management" not in sys.modules
    assert vram_budget.NODE_CLASS_MAPPINGS == {} and vram_budget.WEB_DIRECTORY == "./web"
    assert (REPO / "web" / "vram_panel.js").is_file()


def test_estimator_never_imports_comfy_or_torch():
    for path in (REPO / "nodes" / "estimator").glob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(comfy|torch|folder_paths|server)\b", text, re.M), path.name


def test_example_workflows_are_listed_for_comfyui_templates():
    examples = sorted(p.name for p in (REPO / "example_workflows").glob("*.json"))
    assert {"flux_dev_1024.json", "wan22_14b_i2v_720p.json"} <= set(examples)
    for name in examples:
        data = json.loads((REPO / "example_workflows" / name).read_text())
        assert "nodes" in data and "links" in data, name  # UI format: loadable as a template
