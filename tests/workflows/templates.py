"""The official ComfyUI workflow templates for the tests and bench scripts: the pack's own loader
(vram_budget.nodes.estimator.graph.templates: where the templates are read from, what a local-model template is),
re-exported, and `template_workflow`, which skips a test when the installed package lacks a template.
Importable from tests (``sys.path`` has tests/, see conftest.py).
"""
from __future__ import annotations

# The loader is the pack's own (vram_budget.nodes.estimator.graph.templates); this module re-exports it for the
# tests and bench scripts that import `workflows.templates`, and adds what only tests need.
from vram_budget.nodes.estimator.graph.templates import (  # noqa: F401
    MODEL_FILE, TEMPLATE_PACKAGES, Template, all_nodes, is_api_template, load_templates, local_model_templates,
    model_files, package_versions, template_dirs)


def template_workflow(name: str) -> dict:
    """The workflow of the installed official template `name`, for a test; the test is skipped (with the reason)
    when the installed templates package has no such template."""
    import pytest  # noqa: PLC0415  (only tests call this)

    found = [t for t in load_templates() if t.name == name]
    if not found:
        pytest.skip(f"comfyui-workflow-templates has no {name} template in this version")
    return found[0].workflow
