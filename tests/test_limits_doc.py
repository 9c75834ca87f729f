"""docs/limits.md is generated from the code's own constants (bench/limits_doc.py): the page and the
code agree, every constant it names exists at module level, and the README links the page."""
from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import limits_doc  # noqa: E402


def test_limits_page_is_current():
    assert (REPO / "docs" / "limits.md").read_text(encoding="utf-8") == limits_doc.document(), \
        "docs/limits.md is stale: python3 bench/limits_doc.py --write"


def test_every_bound_is_a_number_read_from_its_module():
    for _where, path, name, _what, _past in limits_doc.LIMITS:
        value = limits_doc.constant(path, name)
        assert isinstance(value, (int, float)) and value > 0, (path, name, value)
        # the constant is used in the pack, not only defined
        uses = sum(len(re.findall(rf"\b{name}\b", f.read_text(encoding="utf-8"))) for f in (REPO / "nodes").rglob("*.py"))
        assert uses >= 2, f"{path}: {name} is defined but never used"


def test_a_changed_constant_changes_the_page(monkeypatch):
    real = limits_doc.constant
    monkeypatch.setattr(limits_doc, "constant", lambda p, n: 12345 if n == "MAX_PROMPT_NODES" else real(p, n))
    assert "| 12,345 |" in limits_doc.document()


def test_readme_is_one_page_for_comfyui_users():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(re.findall(r"\S+", readme)) < 1200
    for link in ("docs/limits.md", "docs/cli.md", "docs/llm.md", "docs/accuracy.md", "docs/development.md", "docs/README.md"):
        assert f"({link})" in readme, link
    # install comes before the command line, and the quick start's two commands are there
    assert readme.index("## Install") < readme.index("## The command line")
    assert "python3 -m pip install -e '.[test]' && vram-budget estimate example_workflows/" in readme
    assert "\npython3 -m pytest -q\n" in readme
