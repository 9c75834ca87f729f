"""ComfyUI's own placement nodes in the browser (issue 32): on ComfyUI 0.33, which registers SelectModelDevice /
SelectCLIPDevice / SelectVAEDevice, the panel's plan for two cards moves a model whole by adding one of them on the
loader's output (ComfyUI-MultiGPU, archived, is not installed and not needed), and "Apply" adds it, moves the
loader's consumers onto it and sets its device, as one undoable edit. On a ComfyUI without those nodes (0.8, 0.18)
the plan is ComfyUI-MultiGPU's, says the pack is archived, and Apply changes nothing.

The workflow is the pack's Wan 2.2 14B fp16 image-to-video example: two 28.6 GB experts on two 24 GB cards."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e_shots import editor_page, load_graph, plan_for_two_cards, shoot  # tests/ on sys.path

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "example_workflows" / "wan22_14b_i2v_720p.json"


@pytest.fixture(scope="module")
def server(e2e_server_factory):
    return e2e_server_factory()


@pytest.fixture(scope="module")
def page(browser, server):
    page = editor_page(browser, server.url)
    yield page
    page.context.close()


def _graph(page) -> dict:
    """{node id: (type, {widget: value})} and the links as (from id, from slot type, to id)."""
    return page.evaluate("""() => { const g = window.comfyAPI.app.app.graph;
        const nodes = Object.fromEntries(g._nodes.map(n => [Number(n.id), [n.type,
            Object.fromEntries((n.widgets || []).map(w => [w.name, w.value]))]]));
        const raw = g.links?.values ? [...g.links.values()] : Object.values(g.links || {});
        const links = raw.filter(Boolean).map(l => [Number(l.origin_id), l.type, Number(l.target_id)]);
        return {nodes, links}; }""")


def _official_wan22() -> Path | None:
    try:
        import comfyui_workflow_templates_json as t
    except ImportError:
        return None
    path = Path(t.__file__).parent / "templates" / "video_wan2_2_14B_i2v.json"
    return path if path.is_file() else None


@pytest.mark.parametrize("which", ["example", "official template"])
def test_core_plan_adds_select_model_device_undoably(server, page, artifacts, e2e_comfy, which):
    """The pack's Wan 2.2 example and the official Wan 2.2 image-to-video template (fp8 experts, the LightX2V
    LoRAs), each planned on an RTX 4090 + RTX 3090."""
    path = WORKFLOW if which == "example" else _official_wan22()
    if path is None:
        pytest.skip("comfyui-workflow-templates-json is not installed (a test dependency)")
    wf = json.loads(path.read_text())
    ok = load_graph(page, wf, 'app.graph._nodes.filter(n => n.type === "UNETLoader").length === 2')
    assert ok, f"the Wan 2.2 {which} did not stay loaded"
    status, info = server.request("GET", "/object_info/SelectModelDevice")
    core = status == 200 and bool(info)
    page.keyboard.press("Escape")
    before = _graph(page)
    plan = plan_for_two_cards(page, "RTX 4090", "RTX 3090")
    data = page.evaluate("() => window.__vramBudget.state.budget.data.budget.placement_plan")
    button = plan.locator("button.vrb-apply-plan")
    if not core:
        assert data["engine"] == "ComfyUI-MultiGPU" and any("archived" in n for n in data["notes"])
        assert page.evaluate("() => window.__vramBudget.applyPlan(window.__vramBudget.state.budget.data.budget"
                             ".placement_plan)") == 0
        assert _graph(page) == before
        assert not page.errors, page.errors
        return
    assert data["engine"] == "ComfyUI" and not data["splits"]
    moved = [s for s in data["loaders"] if s["changed"]]
    assert moved and all(s["insert"] in ("SelectModelDevice", "SelectCLIPDevice", "SelectVAEDevice") for s in moved)
    assert "add SelectModelDevice" in plan.inner_text()
    plan.scroll_into_view_if_needed()
    shoot(page, artifacts, f"core_placement_plan_{which.replace(' ', '_')}_{e2e_comfy[2]}.png")
    assert button.is_enabled() and "Apply to" in button.inner_text()
    button.click()
    page.wait_for_timeout(800)
    after = _graph(page)
    added = {int(k): v for k, v in after["nodes"].items() if k not in before["nodes"]}
    assert len(added) == len(moved), added
    for s in moved:
        node_id, (node_type, widgets) = next((k, v) for k, v in added.items() if v[0] == s["insert"]
                                             and any(l[0] == int(s["node"]) and l[2] == k for l in after["links"]))
        assert widgets["device"] == s["insert_widgets"]["device"]
        # the loader now feeds only the new node, which feeds what the loader fed before
        fed_before = sorted(t for f, typ, t in before["links"] if f == int(s["node"]) and typ == s["insert_socket"])
        assert sorted(t for f, typ, t in after["links"] if f == int(s["node"]) and typ == s["insert_socket"]) == [node_id]
        assert sorted(t for f, _, t in after["links"] if f == node_id) == fed_before
    undone = page.evaluate("""async () => { const t = window.__vramBudget.changeTracker();
        if (!t?.undo) return false; await t.undo(); return true; }""")
    assert undone, "no change tracker with undo() in this frontend"
    page.wait_for_timeout(800)
    restored = _graph(page)
    assert set(restored["nodes"]) == set(before["nodes"]) and sorted(map(tuple, restored["links"])) == \
        sorted(map(tuple, before["links"]))
    assert not page.errors, page.errors
