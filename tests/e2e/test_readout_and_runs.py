"""The top-bar VRAM readout, the measured-vs-predicted view and the Auto Tiled nodes' on-node text,
in headless Chromium against a real ComfyUI (run the file once per ComfyUI version / frontend).

- readout: in the top bar (the action bar of frontends 1.35.9, 1.41 and 1.58), used / total, updates
  by polling, holds the peak of the run, a click opens (and closes) the VRAM panel;
- a run of a workflow holding the VRAM Budget node and a VAE Decode (Auto Tiled) node, queued from the
  editor: the panel shows the run's prediction next to what was measured (on this CPU machine:
  "not measured (CPU)"), the log downloads, and the Auto Tiled node keeps "which path ran and why"
  after the job ended (frontend 1.58 clears progress text then);
- the GPU layout of both, rendered from documents built by the server's own helpers (this machine
  has no GPU). Screenshots go to artifacts/; docs/readout.png and docs/measured_vs_predicted.png are
  refreshed when UPDATE_SCREENSHOTS=1 or when they do not exist yet.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from helpers_models import write_vae  # tests/conftest.py puts tests/ on sys.path

pytestmark = pytest.mark.e2e
DOCS = Path(__file__).resolve().parents[2] / "docs"
VAE_NAME = "sd_vae_zero.safetensors"
READOUT = "button.vrb-readout-btn .vrb-readout"
PANEL = "[data-testid=vram-budget-panel]"
GiB = 1024**3


@pytest.fixture(scope="module")
def server(e2e_server_factory):
    return e2e_server_factory(lambda base: write_vae(base / "models" / "vae" / VAE_NAME, "kl4", "F16", scale=1))


@pytest.fixture(scope="module")
def page(browser, server):
    context = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.readout_requests = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda msg: msg.type == "error" and "vram" in msg.text.lower() and page.errors.append(msg.text))
    page.on("request", lambda req: "/vram_budget/readout" in req.url and page.readout_requests.append(time.time()))
    page.goto(server.url)
    page.wait_for_function("() => window.__vramBudgetReadout && window.comfyAPI?.app?.app?.extensionManager"
                           " && window.LiteGraph?.registered_node_types?.VAEDecodeAutoTiled"
                           " && window.comfyAPI.app.app.canvas", timeout=120_000)
    yield page
    context.close()


def graph(page) -> str:
    return "(window.comfyAPI.app.app.rootGraph ?? window.comfyAPI.app.app.graph)"


def shoot_topbar(page, path: Path) -> None:
    """The readout and the action bar around it (the Run button)."""
    page.mouse.move(700, 600)
    box = page.locator("button.vrb-readout-btn").bounding_box()
    x = max(0, box["x"] - 24)
    page.screenshot(path=str(path), clip={"x": x, "y": max(0, box["y"] - 18), "width": min(460, 1500 - x),
                                          "height": box["height"] + 36})


def test_readout_is_visible_updates_and_opens_the_panel(server, page, artifacts, e2e_comfy):
    readout = page.locator(READOUT)
    readout.wait_for(state="visible", timeout=60_000)
    assert page.locator("button.vrb-readout-btn").count() == 1
    page.wait_for_function(f"() => /GiB$/.test(document.querySelector('{READOUT} .vrb-readout-text')?.textContent)",
                           timeout=30_000)
    text = page.locator(f"{READOUT} .vrb-readout-text").inner_text()
    assert re.fullmatch(r"\d+\.\d / \d+\.\d GiB", text), text
    assert page.locator(f"{READOUT} .vrb-readout-label").inner_text() == "RAM"  # ComfyUI runs on the CPU here
    status, live = server.request("GET", "/vram_budget/readout")
    assert status == 200 and text.endswith(f"/ {live['total'] / GiB:.1f} GiB")
    assert abs(float(text.split(" / ")[0]) - live["used"] / GiB) < 2.0  # RAM moves a little between readings
    # it is in the top bar, at the top of the window
    box = page.locator("button.vrb-readout-btn").bounding_box()
    assert box["y"] < 80 and box["width"] > 100, box

    # updates: it polls (modestly) and shows each new reading
    before = len(page.readout_requests)
    page.wait_for_timeout(4500)
    assert 2 <= len(page.readout_requests) - before <= 4
    page.evaluate("() => window.__vramBudgetReadout.preview({kind: 'cpu', name: 'RAM', total: 32 * 1024 ** 3, "
                  "used: 12.25 * 1024 ** 3, peak_used: null, torch_peak: null, running: null, last_run: null})")
    assert page.locator(f"{READOUT} .vrb-readout-text").inner_text() == "12.3 / 32.0 GiB"
    page.evaluate("() => window.__vramBudgetReadout.preview(null)")
    page.wait_for_function(f"() => document.querySelector('{READOUT} .vrb-readout-text').textContent !== '12.3 / 32.0 GiB'",
                           timeout=10_000)
    shoot_topbar(page, artifacts / f"readout_{e2e_comfy[2]}.png")

    # a click opens the panel, a second one closes it
    page.locator("button.vrb-readout-btn").click()
    page.wait_for_selector(f"{PANEL} .vrb-bar", timeout=30_000)
    page.locator("button.vrb-readout-btn").click()
    page.wait_for_selector(PANEL, state="detached", timeout=10_000)
    assert not page.errors, page.errors


BUILD_TILED = """(vae) => {
    const app = window.comfyAPI.app.app, LG = window.LiteGraph;
    const g = app.rootGraph ?? app.graph;
    g.clear();
    const add = (type, pos) => { const n = LG.createNode(type); n.pos = pos; g.add(n); return n; };
    const loader = add("VAELoader", [20, 60]);
    loader.widgets.find(w => w.name === "vae_name").value = vae;
    const latent = add("EmptyLatentImage", [20, 220]);
    latent.widgets.find(w => w.name === "width").value = 64 + 8 * Math.floor(Math.random() * 60);
    latent.widgets.find(w => w.name === "height").value = 64;
    const tiled = add("VAEDecodeAutoTiled", [380, 60]);
    const preview = add("PreviewImage", [760, 60]);
    latent.connect(0, tiled, 0);
    loader.connect(0, tiled, 1);
    tiled.connect(0, preview, 0);
    const budget = add("VRAMBudget", [20, 420]);
    app.canvas.ds.scale = 1; app.canvas.ds.offset = [70, 60];
    g.setDirtyCanvas(true, true);
    return {tiled: tiled.id, budget: budget.id, preview: preview.id};
}"""


def load_tiled_workflow(page) -> dict:
    """VAELoader -> EmptyLatentImage -> VAE Decode (Auto Tiled) -> PreviewImage, plus the VRAM Budget node,
    built in the editor; returns the node ids. The frontend may still restore its start-up workflow
    over a graph built too early: build until the graph stays."""
    for _ in range(10):
        ids = page.evaluate(BUILD_TILED, VAE_NAME)
        page.wait_for_timeout(1200)
        if page.evaluate(f"(id) => {graph(page)}.getNodeById(id)?.type === 'VAEDecodeAutoTiled'", ids["tiled"]):
            return ids
    raise AssertionError("the workflow built in the editor did not stay")


def queue_and_wait(page, server, harness) -> str:
    before = server.request("GET", "/history")[1]
    page.evaluate("async () => { await window.comfyAPI.app.app.queuePrompt(0, 1); }")
    deadline = time.time() + 120
    while time.time() < deadline:
        history = server.request("GET", "/history")[1]
        new = [k for k in history if k not in before]
        if new:
            harness.wait_idle(server)
            return new[0]
        time.sleep(0.3)
    raise AssertionError(f"the run did not start:\n{server.log()[-3000:]}")


def test_run_from_the_editor(server, page, harness, artifacts, e2e_comfy):
    ids = load_tiled_workflow(page)
    page.wait_for_function(f"(id) => {graph(page)}.getNodeById(id).widgets.some(w => w.name === 'vram_tiling')",
                           arg=ids["tiled"], timeout=10_000)
    prompt_id = queue_and_wait(page, server, harness)
    status, history = server.request("GET", f"/history/{prompt_id}")
    assert history[prompt_id]["status"]["status_str"] == "success", history[prompt_id]["status"]

    # The Auto Tiled node keeps which path ran and why after the job ended (frontend 1.58 clears
    # progress text at job end; the ui output stays).
    page.wait_for_function(
        f"(id) => {graph(page)}.getNodeById(id).widgets.find(w => w.name === 'vram_tiling')?.element?.textContent.startsWith('decoded')",
        arg=ids["tiled"], timeout=30_000)
    page.wait_for_timeout(2500)
    tiled_text = page.evaluate(f"(id) => {graph(page)}.getNodeById(id).widgets.find(w => w.name === 'vram_tiling').element.textContent",
                               ids["tiled"])
    assert tiled_text == history[prompt_id]["outputs"][str(ids["tiled"])]["text"][0]
    assert re.match(r"decoded (in one go|in \d+ tiles).*\(\d+\.\d s\)$", tiled_text), tiled_text
    assert page.locator(".vram-budget-tiling", has_text=tiled_text).first.is_visible()
    widgets = page.evaluate(f"(id) => {graph(page)}.getNodeById(id).widgets.map(w => w.name)", ids["tiled"])
    assert widgets.count("vram_tiling") == 1 and "$$node-text-preview" not in widgets, widgets
    # the budget node: a coloured verdict line over its report
    verdict = page.locator(".vram-budget-verdict").first
    verdict.wait_for(state="visible", timeout=30_000)
    assert verdict.get_attribute("data-verdict") in ("fits", "tight", "runs_slower", "oom", "unknown")
    page.mouse.move(1400, 900)
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / f"auto_tiled_{e2e_comfy[2]}.png"), clip={"x": 0, "y": 0, "width": 1200, "height": 900})

    # The run in the panel: its prediction next to the measurement (none on a CPU), and the log export.
    page.locator("button.vrb-readout-btn").click()
    runs = page.locator("[data-section=runs]")
    runs.locator(f".vrb-run[data-prompt-id='{prompt_id}']").wait_for(timeout=30_000)
    text = runs.inner_text()
    _, data = server.request("GET", "/vram_budget/runs?limit=1")
    record = data["runs"][0]
    assert record["prompt_id"] == prompt_id and record["predicted"]["node_id"] == str(ids["budget"])
    assert record["summary"] in text and "not measured (CPU)" in text
    assert "Measured against predicted" in text and "no GPU peak to measure" in text
    with page.expect_download(timeout=30_000) as download:
        runs.locator("[data-action=export_runs]").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert json.loads(lines[-1])["prompt_id"] == prompt_id
    page.mouse.move(1400, 900)
    page.wait_for_timeout(400)
    runs.screenshot(path=str(artifacts / f"runs_{e2e_comfy[2]}.png"))
    # the readout knows the run too (the "vram_budget.run" event)
    assert page.evaluate("() => window.__vramBudgetReadout.readout.lastRun?.prompt_id") == prompt_id
    assert prompt_id and record["summary"] in page.locator(READOUT).get_attribute("title")
    page.locator("button.vrb-readout-btn").click()
    page.wait_for_selector(PANEL, state="detached", timeout=10_000)
    assert not page.errors, page.errors


def gpu_records() -> list[dict]:
    """Records as run_log builds them, for runs on an RTX 4090 (numbers injected: no GPU here)."""
    from vram_budget.nodes import run_log

    def record(pid, predicted, measured, verdict, ended, seconds):
        rec = run_log.RunRecord(pid, ended - seconds, ended, "success",
                                run_log.Prediction(int(predicted * GiB), int((predicted - 0.9) * GiB), int((predicted + 0.7) * GiB),
                                                   verdict, "NVIDIA GeForce RTX 4090", True, "12"),
                                run_log.Measurement(int(measured * GiB), int((measured - 1.6) * GiB), "cuda:0"))
        return rec.to_dict()
    now = time.time()
    return [record("p3", 22.9, 23.4, "runs_slower", now - 1000, 61.2), record("p2", 14.1, 13.8, "fits", now - 400, 38.5),
            record("p1", 22.9, 23.3, "runs_slower", now - 30, 60.4)]


def test_gpu_layout_of_readout_and_runs(server, page, artifacts, e2e_comfy):
    doc = {"kind": "cuda", "name": "NVIDIA GeForce RTX 4090", "index": 0, "total": int(23.99 * GiB),
           "used": int(18.42 * GiB), "torch_reserved": int(17.6 * GiB), "torch_peak": int(22.7 * GiB),
           "peak_used": int(23.52 * GiB), "running": None, "last_run": gpu_records()[-1], "runs_recorded": 3}
    page.evaluate("(doc) => window.__vramBudgetReadout.preview(doc)", doc)
    readout = page.locator(READOUT)
    assert readout.locator(".vrb-readout-label").inner_text() == "VRAM"
    assert readout.locator(".vrb-readout-text").inner_text() == "18.4 / 24.0 GiB"
    peak_left = page.evaluate(f"() => document.querySelector('{READOUT} .vrb-readout-peak').style.left")
    # the peak-hold mark at the run's peak (PyTorch's peak + what is outside PyTorch)
    assert abs(float(re.search(r"calc\(([\d.]+)%", peak_left).group(1)) - 100 * 23.52 / 23.99) < 0.06, peak_left
    assert readout.locator(".vrb-readout-fill").get_attribute("data-level") == "warn"  # 77 % used
    title = readout.get_attribute("title")
    assert "Peak of this run: 23.5 GiB" in title and "predicted 22.9, measured 23.3 GiB (+0.4)" in title
    top = artifacts / f"readout_gpu_{e2e_comfy[2]}.png"
    shoot_topbar(page, top)

    page.locator("button.vrb-readout-btn").click()
    page.wait_for_selector(f"{PANEL} [data-section=runs]", timeout=30_000)
    # the panel's one load of the server's runs (vram_panel.js loadRuns) must land first, or it replaces the runs
    # injected below (this ComfyUI measures on the CPU): a race a loaded CI machine lost once
    page.wait_for_function("() => window.__vramBudget.state.runsMeasuring !== null", timeout=30_000)
    page.evaluate("() => { window.__vramBudget.state.runsMeasuring = 'cuda'; window.__vramBudget.state.runs = []; }")
    for rec in gpu_records():  # oldest first: each new one goes on top, as after real runs
        page.evaluate("(rec) => window.__vramBudget.onRunRecorded({detail: rec})", rec)
    runs = page.locator("[data-section=runs]")
    text = runs.inner_text()
    assert "predicted 22.9, measured 23.4 GiB (+0.5)" in text and "predicted 14.1, measured 13.8 GiB (−0.3)" in text
    assert runs.locator(".vrb-run-bars").count() == 3
    widths = page.evaluate("""() => [...document.querySelectorAll('[data-section=runs] .vrb-run')][0]
        .querySelectorAll('.vrb-run-fill').length""")
    assert widths == 2
    page.mouse.move(1400, 900)
    page.wait_for_timeout(400)
    shot = artifacts / f"runs_gpu_{e2e_comfy[2]}.png"
    runs.screenshot(path=str(shot))
    for src, name in ((top, "readout.png"), (shot, "measured_vs_predicted.png")):
        if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not (DOCS / name).exists():
            shutil.copyfile(src, DOCS / name)
    page.locator("button.vrb-readout-btn").click()
    page.evaluate("() => window.__vramBudgetReadout.preview(null)")
    assert not page.errors, page.errors


def test_preview_wins_over_a_poll_in_flight(server, page):
    """A /readout answer whose request began before preview() must not replace the previewed
    document (CI once saw 'RAM' where a preview of a GPU's readout said 'VRAM': the live answer of
    this CPU-only ComfyUI landed after the preview)."""
    doc = {"kind": "cuda", "name": "NVIDIA GeForce RTX 4090", "index": 0, "total": int(23.99 * GiB),
           "used": int(18.42 * GiB), "torch_reserved": int(17.6 * GiB), "torch_peak": int(22.7 * GiB),
           "peak_used": int(18.42 * GiB), "running": None, "last_run": None, "runs_recorded": 0}
    page.evaluate("""(doc) => {
        const fetch0 = window.fetch;
        window.__vrbFetch0 = fetch0;
        // hold every /readout answer 600 ms: the preview below lands while the poll awaits it
        window.fetch = async (...args) => {
            const response = await fetch0(...args);
            if (String(args[0]).includes('/vram_budget/readout')) await new Promise(r => setTimeout(r, 600));
            return response;
        };
        window.__vramBudgetReadout.poll();
        window.__vramBudgetReadout.preview(doc);
    }""", doc)
    page.wait_for_timeout(1200)
    try:
        readout = page.locator(READOUT)
        assert readout.locator(".vrb-readout-label").inner_text() == "VRAM"
        assert readout.locator(".vrb-readout-text").inner_text() == "18.4 / 24.0 GiB"
        # and back live: the CPU machine's own readout again
        page.evaluate("() => window.__vramBudgetReadout.preview(null)")
        page.wait_for_function(
            "() => document.querySelector('button.vrb-readout-btn .vrb-readout-label')?.innerText === 'RAM'",
            timeout=10_000)
    finally:
        page.evaluate("() => { if (window.__vrbFetch0) window.fetch = window.__vrbFetch0; }")
    assert not page.errors, page.errors
