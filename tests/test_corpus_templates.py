"""tests/workflows/templates.py: which official templates count as local-model ones (bench/coverage.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from workflows import templates

from vram_budget.nodes.estimator.graph.node_specs import load_specs


def _template(nodes, meta=None, subgraph_nodes=()):
    workflow = {"nodes": nodes, "definitions": {"subgraphs": [{"id": "sg", "nodes": list(subgraph_nodes)}]}}
    return templates.Template("t", workflow, meta or {}, Path("t.json"))


def test_model_files_from_properties_widgets_and_subgraphs():
    t = _template(
        [{"type": "UNETLoader", "widgets_values": ["flux1-dev.safetensors", "default"],
          "properties": {"models": [{"name": "flux1-dev.safetensors", "directory": "diffusion_models"}]}},
         {"type": "KSampler", "widgets_values": [1, "fixed", 20, 1.0, "euler", "simple", 1.0]},
         {"type": "SomeNode", "widgets_values": {"ckpt": "model.GGUF", "text": "a photo.png"}}],
        subgraph_nodes=[{"type": "VAELoader", "widgets_values": ["ae.safetensors"]}])
    assert templates.model_files(t.workflow) == {"flux1-dev.safetensors", "model.GGUF", "ae.safetensors"}


def test_api_templates_by_index_flag_or_api_node():
    local = _template([{"type": "UNETLoader", "widgets_values": ["x.safetensors"]}])
    assert not templates.is_api_template(local, {"FluxProUltraImageNode"})
    flagged = _template(local.workflow["nodes"], meta={"openSource": False})
    assert templates.is_api_template(flagged, set())
    api_in_subgraph = _template([], subgraph_nodes=[{"type": "FluxProUltraImageNode"}])
    assert templates.is_api_template(api_in_subgraph, {"FluxProUltraImageNode"})


def test_installed_templates_split_into_api_and_local_model():
    if not templates.template_dirs():
        pytest.skip("no comfyui-workflow-templates package installed (pip install comfyui-workflow-templates-json)")
    api_nodes = set(load_specs().get("api", ()))
    every = templates.load_templates()
    local = templates.local_model_templates(api_nodes)
    assert templates.package_versions(), "a template folder was found, so its distribution has a version"
    assert len(every) >= 100 and 0.2 * len(every) <= len(local) < len(every)
    names = {t.name for t in local}
    assert all(templates.model_files(t.workflow) for t in local)
    assert not any(t.meta.get("openSource") is False for t in local)
    assert len(names) == len(local)
