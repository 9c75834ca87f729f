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
