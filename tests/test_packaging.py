"""The pack as ComfyUI-Manager / the Comfy Registry see it, without ComfyUI."""
from __future__ import annotations

import functools
import json
import os
import re
import sys
from pathlib import Path

import pytest

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
    for path in (REPO / "nodes" / "estimator").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(comfy|torch|folder_paths|server)\b", text, re.M), path.name


def test_example_workflows_are_listed_for_comfyui_templates():
    examples = sorted(p.name for p in (REPO / "example_workflows").glob("*.json"))
    assert {"flux_dev_1024.json", "wan22_14b_i2v_720p.json"} <= set(examples)
    for name in examples:
        data = json.loads((REPO / "example_workflows" / name).read_text())
        assert "nodes" in data and "links" in data, name  # UI format: loadable as a template


# --- ComfyUI-Manager's scanner (issue 12, item 8) -------------------------------------------------
# ComfyUI-Manager builds extension-node-map.json ("which pack provides this missing node") with its
# scanner.py, cited here at Comfy-Org/ComfyUI-Manager f39cbd56 (SCANNER_VERSION 2.0.13):
# - gen_json, scanner.py:1550-1575: json.load(node_list.json), then `for x, desc in
#   node_list_json.items(): nodes.add(x.strip())` -- a JSON *object*; a list raised
#   "'list' object has no attribute 'items'" (caught and logged as "Invalid json format" since the
#   2.x scanner; the 2025-03 ltdrdata/ComfyUI-Manager scanner.py had no try and crashed).
# - extract_nodes_from_repo, scanner.py:332-465: every .py file of the clone outside dot-folders and
#   __pycache__, tests and benchmarks included; the node names are the union of the AST phases
#   (top-level NODE_CLASS_MAPPINGS / NODE_CONFIG dict keys, NODE_DISPLAY_NAME_MAPPINGS keys) and of
#   regexes over the raw text, strings included (scanner.py:393, 431, 445-450).
_SCANNER_DICT = r"_CLASS_MAPPINGS\s*(?::\s*\w+\s*)?=\s*(?:\\\s*)?{([^}]*)}"
_SCANNER_UPDATE = r"_CLASS_MAPPINGS\.update\s*\(\s*{([^}]*)}\s*\)"
_SCANNER_KEYS = (r"\"([^\"]*)\"\s*:\s*([^,\n]*)", r"'([^']*)'\s*:\s*([^,\n]*)")
_SCANNER_PATTERNS = (r'^[^=]*_CLASS_MAPPINGS\["(.*?)"\]', r'^[^=]*_CLASS_MAPPINGS\[\'(.*?)\'\]',
                     r'@register_node\("(.+)",\s*\".+"\)', r'"(\w+)"\s*:\s*{"class":\s*\w+\s*')
REGISTRY_URL = "https://github.com/comfyui-vram-budget/comfyui-vram-budget"


def _pack_files() -> list[str]:
    """The files a clone of this repository has: tracked, plus new ones git does not ignore."""
    return list(_git_files())


@functools.lru_cache(maxsize=1)
def _git_files() -> tuple[str, ...]:
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: the Registry and ComfyUI-Manager work from git")
    return tuple(sorted(f for f in set(out.splitlines()) if (REPO / f).is_file()))


def _pack_nodes() -> set[str]:
    """The node ids the pack registers: the keys of the NODE_CLASS_MAPPINGS dict literals of nodes/*.py."""
    import ast

    ids = set()
    for path in (REPO / "nodes").glob("*.py"):
        for stmt in ast.parse(path.read_text()).body:
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "NODE_CLASS_MAPPINGS" for t in stmt.targets) \
                    and isinstance(stmt.value, ast.Dict):
                ids |= {k.value for k in stmt.value.keys if isinstance(k, ast.Constant)}
    return ids


def _scanner_names(code: str) -> set[str]:
    """The names scanner.py's AST phase 1/4 and regexes take from one file (cited above)."""
    import ast

    names: set[str] = set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        tree = None
    for stmt in tree.body if tree else ():
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else (stmt.targets[0] if isinstance(stmt, ast.Assign) else None)
        if getattr(target, "id", "") in ("NODE_CONFIG", "NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS") \
                and isinstance(stmt.value, ast.Dict):
            names |= {k.value.strip() for k in stmt.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    for m in re.finditer(_SCANNER_DICT, code, re.MULTILINE | re.DOTALL):
        line = code[code.rfind("\n", 0, m.start()) + 1:code.find("\n", m.start())]
        if re.match(r"^\s*#", line):
            continue
        body = "\n".join(ln for ln in m.group(1).split("\n") if not re.match(r"^\s*#", ln))
        for pattern in _SCANNER_KEYS:
            names |= {k.strip() for k, _ in re.findall(pattern, body)}
    cleaned = re.sub(r"^#.*?$", "", code, flags=re.MULTILINE)
    update = re.search(_SCANNER_UPDATE, cleaned, re.DOTALL)
    if update:
        for pattern in _SCANNER_KEYS:
            names |= {k.strip() for k, _ in re.findall(pattern, update.group(1))}
    for pattern in _SCANNER_PATTERNS:
        names |= {k.strip() for k in re.findall(pattern, cleaned)}
    return names


def test_node_list_is_the_object_the_manager_scanner_reads():
    data = json.loads((REPO / "node_list.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict), "scanner.py gen_json calls node_list_json.items()"
    nodes = {x.strip() for x, desc in data.items()}  # what gen_json adds
    assert nodes == _pack_nodes() == set(data)
    assert all(isinstance(desc, str) and desc for desc in data.values())


def test_the_scanner_patterns_credit_exactly_the_pack_nodes():
    """Before: tests/comfy_harness.py carried a NODE_CLASS_MAPPINGS = {...} literal inside a string
    and the scanner credited the pack with VramBudgetOomProbe and VramBudgetSleepProbe."""
    credited: dict[str, set[str]] = {}
    for rel in _pack_files():
        parts = Path(rel).parts
        if not rel.endswith(".py") or "__pycache__" in rel or any(p.startswith(".") for p in parts):
            continue
        for name in _scanner_names((REPO / rel).read_text(encoding="utf-8", errors="ignore")):
            credited.setdefault(name, set()).add(rel)
    extra = {n: sorted(files) for n, files in credited.items() if n not in _pack_nodes()}
    assert not extra, f"the Manager scanner would credit the pack with {extra}"
    assert set(credited) == _pack_nodes()


def _stand_in_modules(monkeypatch) -> None:
    """scanner.py imports GitPython and PyGithub (and requests, urllib3) at the top, for cloning and
    star counts; gen_json and the parsing never call them. Stand-ins only where one is missing."""
    import importlib
    import types

    needs = {"git": ("Repo",), "github": ("Github", "Auth"), "requests": ("get",), "urllib3.util.retry": ("Retry",)}
    for name, attrs in needs.items():
        try:
            importlib.import_module(name)
        except ImportError:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                sub = ".".join(parts[:i])
                if sub not in sys.modules or sub == name:
                    monkeypatch.setitem(sys.modules, sub, types.ModuleType(sub))
            for attr in attrs:
                setattr(sys.modules[name], attr, object)


def test_real_manager_scanner_reads_the_pack(tmp_path, monkeypatch, capsys):
    """ComfyUI-Manager's own scanner.py, run on a copy of this repository as it would be cloned.

    scanner.py is not on PyPI (the comfyui-manager wheel leaves it out) and CI cannot reach GitHub:
    set COMFYUI_MANAGER_SCANNER to a scanner.py of Comfy-Org/ComfyUI-Manager (2.x, with its
    `if __name__ == "__main__"` guard) to run this test; the two tests above reproduce its rules.
    """
    import importlib.util
    import inspect
    import shutil

    path = os.environ.get("COMFYUI_MANAGER_SCANNER")
    if not path or not Path(path).is_file():
        pytest.skip("COMFYUI_MANAGER_SCANNER (path to ComfyUI-Manager's scanner.py) is not set")
    _stand_in_modules(monkeypatch)
    spec = importlib.util.spec_from_file_location("comfyui_manager_scanner", path)
    scanner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scanner)  # not __main__: nothing is cloned or fetched
    clones = tmp_path / "clones"
    for rel in _pack_files():
        dest = clones / "comfyui-vram-budget" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, dest)
    monkeypatch.setattr(scanner, "temp_dir", str(clones), raising=False)
    monkeypatch.chdir(tmp_path)  # gen_json writes extension-node-map.json into the working folder
    node_info = {"comfyui-vram-budget": (REGISTRY_URL, "VRAM Budget", None, None)}
    kwargs = {"force_rescan": True} if "force_rescan" in inspect.signature(scanner.gen_json).parameters else {}
    scanner.gen_json(node_info, **kwargs)
    printed = capsys.readouterr().out
    assert "ERROR" not in printed and "Invalid json" not in printed, printed
    data = json.loads((tmp_path / "extension-node-map.json").read_text())
    nodes, meta = data[REGISTRY_URL]
    assert nodes == sorted(_pack_nodes()) and meta["title_aux"] == "VRAM Budget"
    # and node_list.json is really read: a name only it carries is credited too
    listed = clones / "comfyui-vram-budget" / "node_list.json"
    listed.write_text(json.dumps({**json.loads(listed.read_text()), "OnlyInNodeList": "probe"}))
    scanner.gen_json(node_info, **kwargs)
    nodes, _ = json.loads((tmp_path / "extension-node-map.json").read_text())[REGISTRY_URL]
    assert nodes == sorted(_pack_nodes() | {"OnlyInNodeList"})


# --- the Registry archive (.comfyignore) and its metadata -------------------------------------
def _registry_archive() -> list[str]:
    """What `comfy node pack` / `comfy node publish` put in the archive: the git-tracked files
    minus .comfyignore, matched as comfy-cli matches it (comfy_cli/file_utils.py:
    _load_comfyignore_spec strips lines and drops blank and '#' ones, then
    PathSpec.from_lines("gitwildmatch", ...); zip_files skips every file it matches)."""
    import warnings

    pathspec = pytest.importorskip("pathspec")
    lines = [ln.strip() for ln in (REPO / ".comfyignore").read_text(encoding="utf-8").splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    with warnings.catch_warnings():  # pathspec >= 0.13 names the same rules "gitignore"
        warnings.simplefilter("ignore", DeprecationWarning)
        spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
    return [f for f in _pack_files() if not spec.match_file(f)]


def test_registry_archive_leaves_out_tests_bench_and_ci():
    packed = _registry_archive()
    assert not [f for f in packed if f.split("/")[0] in ("tests", "bench", ".ci", "artifacts")]
    assert not [f for f in packed if "__pycache__" in f or f.endswith(".pyc")]
    assert len(packed) < len(_pack_files()) * 0.7  # the issue's archive shipped tests and bench: 102 files


def test_registry_archive_holds_what_the_pack_needs_at_run_time():
    packed = set(_registry_archive())
    everything = _pack_files()
    for top in ("nodes/", "web/", "example_workflows/"):
        wanted = {f for f in everything if f.startswith(top)}
        assert wanted and wanted <= packed, sorted(wanted - packed)
    for name in ("__init__.py", "pyproject.toml", "requirements.txt", "LICENSE", "README.md", "node_list.json"):
        assert name in packed
    data = PYPROJECT["tool"]["setuptools"]["package-data"]["vram_budget.nodes.estimator"]
    assert {f for f in everything if any(Path(f).match("nodes/estimator/" + g) for g in data)} <= packed
    # every page and picture the README links to (the Registry and Manager show the README)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = set(re.findall(r"\]\(((?!https?:|#)[^)\s#]+)", readme)) | set(re.findall(r'src="((?!https?:)[^"]+)"', readme))
    assert links and links <= packed, sorted(links - packed)
    # every relative import of a shipped module resolves to a shipped file
    for rel in sorted(f for f in packed if f.endswith(".py")):
        here = Path(rel).parent
        for dots, mod in re.findall(r"^\s*from\s+(\.+)([\w.]*)\s+import", (REPO / rel).read_text(), re.M):
            base = here
            for _ in range(len(dots) - 1):
                base = base.parent
            target = base.joinpath(*mod.split(".")) if mod else base
            assert f"{target.as_posix()}.py" in packed or f"{target.as_posix()}/__init__.py" in packed, (rel, dots + mod)


def test_registry_urls_name_one_repository():
    """Repository, Homepage, Documentation and Issues are the [project.urls] names ComfyUI
    (comfy_config/types.py, class URLs) and comfy-cli (registry/config_parser.py) read; the Icon is
    served from the same repository, and the file exists."""
    urls = PYPROJECT["project"]["urls"]
    repo = urls["Repository"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", repo) and repo == REGISTRY_URL
    assert urls["Homepage"] == repo and urls["Documentation"].startswith(repo)
    assert urls["Issues"] == repo + "/issues"
    owner_name = repo.removeprefix("https://github.com/")
    icon = PYPROJECT["tool"]["comfy"]["Icon"]
    m = re.fullmatch(rf"https://raw\.githubusercontent\.com/{re.escape(owner_name)}/main/(.+)", icon)
    assert m and (REPO / m.group(1)).is_file() and m.group(1) in _pack_files()


def test_comfyui_reads_the_urls(monkeypatch):
    """ComfyUI's own pyproject parser (comfy_config/config_parser.py), where a ComfyUI tree is given."""
    root = os.environ.get("COMFYUI_PATH")
    if not root or not (Path(root) / "comfy_config" / "config_parser.py").is_file():
        pytest.skip("COMFYUI_PATH (a ComfyUI tree with comfy_config/) is not set")
    pytest.importorskip("pydantic_settings")
    monkeypatch.syspath_prepend(root)
    from comfy_config import config_parser  # noqa: PLC0415

    cfg = config_parser.extract_node_configuration(str(REPO))
    assert cfg.project.urls.repository == REGISTRY_URL and cfg.project.urls.issues == REGISTRY_URL + "/issues"
    assert cfg.project.urls.homepage == REGISTRY_URL and cfg.tool_comfy.icon.endswith("/docs/icon.svg")


# --- the web folder ----------------------------------------------------------------------------
def test_web_scripts_share_one_stylesheet_helper_that_is_harmless_on_its_own():
    """ComfyUI lists every .js file under WEB_DIRECTORY as an extension script (server.py, GET
    /extensions: glob '**/*.js') and the frontend imports each one, so the shared module is loaded on
    its own too: it may only declare exported functions (no top-level statement runs anything)."""
    shared = (REPO / "web" / "vram_style.js").read_text(encoding="utf-8")
    code = re.sub(r"//[^\n]*", "", shared)
    tops = [ln for ln in code.splitlines() if ln.strip() and not ln.startswith((" ", "}"))]
    assert tops and all(ln.startswith("export function ") for ln in tops), tops
    for name in ("vram_panel.js", "vram_readout.js"):
        text = (REPO / "web" / name).read_text(encoding="utf-8")
        assert 'import { ensureStylesheet } from "./vram_style.js";' in text, name
        assert "function ensureStylesheet" not in text, name
