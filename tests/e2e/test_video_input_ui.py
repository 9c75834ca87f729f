"""A loaded video in the panel (issue 33): the official frame-interpolation template, with a clip in ComfyUI's input
folder under the file name the template loads, is priced from that clip's header. Without the clip the same
template says the frames' size is known only at run time. Screenshot: artifacts/video_input_panel-<version>.png."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from e2e_shots import shoot  # noqa: E402  (tests/ is on sys.path)

TESTS = Path(__file__).resolve().parents[1]
# heavy: the template's FrameInterpolate node is ComfyUI 0.33's, so CI runs it there only (.ci/test-all)
pytestmark = [pytest.mark.e2e, pytest.mark.heavy]
PANEL = "[data-testid=vram-budget-panel]"
TAB_BUTTON = ".side-bar-button:has(i.pi-microchip)"
TEMPLATE = "utility_video_frame_interpolation"


def _template() -> dict:
    templates = pytest.importorskip("comfyui_workflow_templates_json")
    (path,) = Path(templates.__file__).parent.glob(f"**/{TEMPLATE}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _clip_name(workflow: dict) -> str:
    return next(n["widgets_values"][0] for n in workflow["nodes"] if n["type"] == "LoadVideo")


@pytest.fixture(scope="module")
def server(e2e_server_factory):
    def setup(base: Path) -> None:
        shutil.copy(TESTS / "media" / "h264.mp4", base / "input" / _clip_name(_template()))  # 320x240, 17 frames

    return e2e_server_factory(setup)


def _budget_text(page) -> str:
    page.wait_for_function(
        """() => { const s = document.querySelector('[data-section=budget]');
                   return s && s.textContent && !s.textContent.includes('Estimating the current workflow'); }""",
        timeout=90_000)
    return page.locator("[data-section=budget]").inner_text()


def test_the_panel_prices_a_loaded_video_from_the_input_folder(browser, server, artifacts, e2e_comfy):
    workflow = _template()
    status, data = server.request("POST", "/vram_budget/estimate", {"workflow": workflow})
    assert status == 200, data
    interpolate = next(s for s in data["budget"]["stages"] if s["node_type"] == "FrameInterpolate")
    assert interpolate["working_bytes"] > 0 and not interpolate["unpriced"], interpolate
    assert "320×240" in json.dumps(interpolate, ensure_ascii=False)

    context = browser.new_context(viewport={"width": 1280, "height": 1100})
    page = context.new_page()
    try:
        page.goto(server.url)
        page.wait_for_function("() => window.__vramBudget && window.comfyAPI?.app?.app?.extensionManager",
                               timeout=120_000)
        page.wait_for_selector(TAB_BUTTON, timeout=60_000)
        page.keyboard.press("Escape")
        page.evaluate("async (wf) => { await window.comfyAPI.app.app.loadGraphData(wf); }", workflow)
        page.locator(TAB_BUTTON).first.click()
        page.wait_for_selector(f"{PANEL} .vrb-bar", timeout=30_000)
        text = _budget_text(page)
        shoot(page, artifacts, f"video_input_panel-{e2e_comfy[2]}.png")
        assert "frames' size is known only at run time" not in text, text
        assert "Can't tell" not in text and "can't tell" not in text, text
    finally:
        context.close()
