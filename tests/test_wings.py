"""Issue 34: the estimator's wings and their order, as code. Every import inside nodes/estimator (at module level or
inside a function) goes to the same wing or to one below it; no module-level import circle; the estimator's own
folder holds only the floor (plain data shared by every wing); each wing's __init__ names its modules."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ESTIMATOR = Path(__file__).resolve().parents[1] / "nodes" / "estimator"
# bottom to top; a wing imports only itself and the wings before it (docs/DESIGN.md "Layout as built")
WINGS = ("floor", "families", "models", "physics", "machine", "llm", "stages", "graph", "plan", "cli")
FLOOR = {"__init__", "units", "errors", "serial", "model_info", "workload", "files"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(ESTIMATOR.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        parts = list(p.relative_to(ESTIMATOR).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _wing(module: str) -> str:
    head = module.split(".")[0]
    return head if "." in module or head in WINGS else "floor"


def _imports(module: str, path: Path, top_level_only: bool) -> set[str]:
    """The estimator modules `module` imports (relative imports; the estimator uses no absolute self-imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if module == "":
        base = []
    out = set()
    for node in nodes:
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        up = base[:len(base) - (node.level - 1)] if node.level > 1 else base
        if node.level - 1 > len(base):
            continue  # above the estimator (never: test_packaging checks it imports nothing of ComfyUI's side)
        target = up + (node.module.split(".") if node.module else [])
        for alias in node.names:
            full = ".".join(target + [alias.name])
            if full in MODULES:
                out.add(full)
            elif ".".join(target) in MODULES:
                out.add(".".join(target))
    out.discard(module)
    return out


def test_the_estimators_folder_holds_only_the_floor_and_the_wings():
    top_files = {p.stem for p in ESTIMATOR.glob("*.py")}
    assert top_files == FLOOR, f"a new module belongs in a wing: {sorted(top_files - FLOOR)}"
    folders = {p.name for p in ESTIMATOR.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(WINGS) - {"floor"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_import_goes_down_or_stays_in_its_wing(module):
    rank = WINGS.index(_wing(module))
    upward = [t for t in _imports(module, MODULES[module], False) if WINGS.index(_wing(t)) > rank]
    assert not upward, f"{module} ({_wing(module)}) imports {upward} from a wing above it"


def test_no_import_circle_at_module_level():
    graph = {m: _imports(m, p, True) for m, p in MODULES.items()}
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError(" -> ".join(stack[stack.index(t):] + [t]))
            if not state.get(t):
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m, [m])


@pytest.mark.parametrize("wing", [w for w in WINGS if w not in ("floor", "families", "stages")])
def test_each_wing_face_names_its_modules(wing):
    face = (ESTIMATOR / wing / "__init__.py").read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(face)) or ""
    members = {p.stem for p in (ESTIMATOR / wing).glob("*.py")} - {"__init__", "__main__"}
    unnamed = [m for m in sorted(members) if m not in doc]
    assert not unnamed, f"{wing}/__init__.py does not name {unnamed}"


def test_a_module_importing_upward_is_caught(tmp_path):
    """The check itself can fail: a floor module importing the plan wing is reported."""
    p = tmp_path / "units.py"
    p.write_text("from .plan.budget import Budget\n")
    assert _imports("units", p, False) == {"plan.budget"}
    assert WINGS.index(_wing("plan.budget")) > WINGS.index(_wing("units"))
