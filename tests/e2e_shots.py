"""The panel screenshot the browser tests take (tests/e2e): the sidebar and a strip of the canvas."""
from __future__ import annotations

from pathlib import Path


def shoot(page, artifacts: Path, name: str) -> Path:
    """The sidebar and a strip of the canvas, tall enough for the whole panel."""
    page.mouse.move(1200, 1000)  # no tooltip over the panel
    needed = page.evaluate("""() => { const p = document.querySelector('.vrb-panel');
        const s = p && p.querySelector('.vrb-scroll');
        return p ? Math.ceil(p.getBoundingClientRect().top + (s ? s.scrollHeight : 0) + 60) : 1100; }""")
    height = max(900, min(2400, needed))
    page.set_viewport_size({"width": 1280, "height": height})
    page.wait_for_timeout(600)
    path = artifacts / name
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": 760, "height": height})
    page.set_viewport_size({"width": 1280, "height": 1100})
    return path


def panel_page(browser, viewport: dict):
    """A page on ComfyUI's editor that collects page errors and the panel's console errors in
    ``page.errors`` (the browser tests assert none)."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda msg: msg.type == "error" and "vram" in msg.text.lower() and page.errors.append(msg.text))
    return page


PANEL = "[data-testid=vram-budget-panel]"
TAB_BUTTON = ".side-bar-button:has(i.pi-microchip)"
PLAN = "[data-section=placement]"


def load_graph(page, workflow: dict, holds_js: str) -> bool:
    """Load a UI workflow until ``holds_js`` (a JS expression on ``app``) is true: a frontend may restore its own
    start-up workflow over the first load."""
    return page.evaluate("""async ([wf, holds]) => {
        const app = window.comfyAPI.app.app;
        const has = new Function("app", "return " + holds);
        for (let i = 0; i < 10; i++) {
            if (!has(app)) await app.loadGraphData(wf);
            await new Promise(r => setTimeout(r, 800));
            if (has(app)) return true;
        }
        return false;
    }""", [workflow, holds_js])


def plan_for_two_cards(page, first: str, second: str):
    """Close what covers the sidebar, open the panel, pick two cards and wait for the placement plan; the plan's
    locator (an AssertionError with the panel's text when none comes)."""
    for _ in range(3):  # a "missing nodes" / "missing models" dialog of an older frontend covers the sidebar
        if page.locator(".p-dialog-mask").count() == 0:
            break
        page.keyboard.press("Escape")
        page.wait_for_timeout(500)
    panel = page.locator(PANEL)
    if panel.count() == 0 or not panel.first.is_visible():  # a second plan on the same page: the tab is open
        page.locator(TAB_BUTTON).first.click()
    page.wait_for_selector(f"{PANEL} [data-section=budget] select.vrb-select-second", timeout=60_000)
    page.evaluate("() => { window.__vramBudget.state.detailsOpen = true; }")  # the plan is under Details
    page.locator(f"{PANEL} [data-section=budget] select.vrb-select").first.select_option(first)
    page.wait_for_timeout(300)
    page.locator(f"{PANEL} select.vrb-select-second").select_option(second)
    try:
        page.wait_for_selector(f"{PANEL} {PLAN}", timeout=60_000)
    except Exception:
        raise AssertionError("no placement plan in the panel: "
                             + page.locator(f"{PANEL} [data-section=budget]").inner_text()[-900:]) from None
    settle_budget(page)
    return page.locator(f"{PANEL} {PLAN}")


def settle_budget(page, quiet_ms: int = 1500, timeout: int = 30_000) -> None:
    """Wait until the panel's estimate has not changed for ``quiet_ms``: a re-estimate that lands after the plan
    appeared (the frontend settling the graph it just loaded) rebuilds the budget section, and an element taken
    from the old one is then detached (seen on a loaded 2-core machine)."""
    page.evaluate("() => { delete window.__vrbSettle; }")
    page.wait_for_function("""(quiet) => { const w = window.__vrbSettle ||= {key: null, since: 0};
        const key = JSON.stringify(window.__vramBudget?.state?.budget ?? null);
        const now = performance.now();
        if (key !== w.key) { w.key = key; w.since = now; return false; }
        return now - w.since >= quiet; }""", arg=quiet_ms, timeout=timeout, polling=100)


def editor_page(browser, url: str):
    """panel_page on ComfyUI's editor at ``url``, once the pack's panel and the core nodes are registered and the
    frontend has restored its start-up workflow."""
    page = panel_page(browser, {"width": 1280, "height": 1100})
    page.goto(url)
    page.wait_for_function("() => window.__vramBudget && window.comfyAPI?.app?.app?.extensionManager "
                           "&& window.LiteGraph?.registered_node_types?.KSampler", timeout=120_000)
    page.wait_for_selector(TAB_BUTTON, timeout=60_000)
    page.keyboard.press("Escape")
    page.wait_for_timeout(1500)
    return page


LABEL = {"fits": "Fits", "tight": "Fits (tight)", "runs_slower": "Runs, slower", "oom": "Out of memory",
         "unknown": "Can't tell"}


def card_label(doc: dict) -> str:
    """The badge vram_summary.js shows for a Budget JSON: streamed weights that hide behind the compute
    (slowdown_high under 1.05) read "Runs (streaming)", not "slower" (report.verdict_text says the same)."""
    card = doc.get("vram_verdict") or doc["verdict"]
    if card == "runs_slower" and doc.get("slowdown_high", 2.0) < 1.05:
        return "Runs (streaming)"
    return LABEL[card]
