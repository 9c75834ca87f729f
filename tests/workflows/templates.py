"""The official ComfyUI workflow templates, from the installed `comfyui-workflow-templates-*` packages.

Nothing is copied into this repository: the templates are read where pip installed them
(``pip install comfyui-workflow-templates-json``; it is in the ``test`` extra of pyproject.toml).
Since 2026 the workflow JSON files are in ``comfyui_workflow_templates_json/templates/*.json``
with ``index.json`` the template index; older releases kept them in the media bundles
(``comfyui_workflow_templates_media_{image,video,other,api}/templates/``). Both layouts are searched,
as tests/test_graph_templates.py does.

A template is *local-model* when it runs models on the user's machine:
- not a cloud API template: the index does not mark it ``openSource: false`` and none of its node
  types is an API node (widget_specs.json "api": classes with API_NODE = True in ComfyUI's
  comfy_api_nodes);
- and it names at least one model file: a node's ``properties.models`` entry (the download list the
  frontend shows) or a widget value that is a model file name.

Used by bench/coverage.py; importable from tests (``sys.path`` has tests/, see conftest.py).
"""
from __future__ import annotations

# The loader is the pack's own (vram_budget.nodes.estimator.templates); this module re-exports it for the
# tests and bench scripts that import `workflows.templates`, and adds what only tests need.
from vram_budget.nodes.estimator.templates import (  # noqa: F401
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
