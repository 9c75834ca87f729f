"""The version-regression guard in the panel's "Measured against predicted" section, in headless
Chromium against a real ComfyUI.

The run log of the server is given GPU runs as run_log writes them (this machine has no GPU: the
measured peaks are injected, as test_readout_and_runs.py does): a Flux workflow measured before
and after a ComfyUI update that brought comfy-aimdo, and a Wan workflow before and after a
WanVideoWrapper update. The server's own /vram_budget/runs route finds the two regressions; the
panel must show each as one plain sentence, the route's. Only "measuring" is answered as "cuda" to
the browser (the records are GPU runs; the server itself runs on the CPU). The screenshot goes to
artifacts/ and to docs/version_guard.png (when UPDATE_SCREENSHOTS=1 or it does not exist yet).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from e2e_shots import panel_page  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.e2e
DOCS = Path(__file__).resolve().parents[2] / "docs"
PANEL = "[data-testid=vram-budget-panel]"
RUNS = "[data-section=runs]"
GiB = 1024**3


@pytest.fixture(scope="module")
def server(e2e_server_factory):
    return e2e_server_factory()


@pytest.fixture(scope="module")
def page(browser, server):
    page = panel_page(browser, {"width": 1500, "height": 1000})

    def as_cuda(route):  # the real answer, only "measuring" as on the GPU machine these runs came from
        response = route.fetch()
        data = response.json()
        data["measuring"] = "cuda"
        route.fulfill(response=response, body=json.dumps(data), headers={**response.headers, "content-type": "application/json"})

    page.route(re.compile(r"/vram_budget/runs\?"), as_cuda)
    page.goto(server.url)
    page.wait_for_function("() => window.__vramBudgetReadout && window.__vramBudget && window.comfyAPI?.app?.app?.extensionManager",
                           timeout=120_000)
    yield page
    page.context.close()


def versions(comfy="0.18.2", aimdo="0.2.4", wan="1.3.6"):
    return {"comfyui": comfy, "comfy_aimdo": aimdo, "torch": "2.14.1+cu128",
            "custom_nodes": {"ComfyUI-KJNodes": "1.1.7", "ComfyUI-WanVideoWrapper": wan, "comfyui-vram-budget": "0.1.0"},
            "custom_nodes_omitted": 0}


def gpu_log() -> list[dict]:
    """Five runs on an RTX 4090, oldest first, as run_log writes them."""
    from vram_budget.nodes import run_log
    from vram_budget.nodes.routes import DYNAMIC_NOTE

    flux = {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "fp8_e4m3fn"}},
            "2": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}}}
    wan = {"1": {"class_type": "WanVideoModelLoader", "inputs": {"model": "wan2.1_t2v_14B_fp16.safetensors", "quantization": "fp8_e4m3fn"}},
           "2": {"class_type": "WanVideoEmptyEmbeds", "inputs": {"width": 832, "height": 480, "num_frames": 81}}}
    now = time.time()

    def record(pid, prompt, predicted, measured, vers, ago, notes=()):
        rec = run_log.RunRecord(pid, now - ago - 60, now - ago, "success",
                                run_log.Prediction(int(predicted * GiB), None, None, "fits", "NVIDIA GeForce RTX 4090", True, "12"),
                                run_log.Measurement(int(measured * GiB), int((measured - 1.2) * GiB), "cuda:0"), None, list(notes),
                                workflow_key=run_log.workflow_key(prompt), workflow_label=run_log.workflow_label(prompt), versions=vers)
        return rec.to_dict()

    return [record("f1", flux, 14.2, 12.4, versions(comfy="0.15.1", aimdo=None), 9000),
            record("f2", flux, 14.2, 15.9, versions(), 7000, [DYNAMIC_NOTE]),
            record("w1", wan, 16.0, 14.5, versions(), 3000, [DYNAMIC_NOTE]),
            record("w2", wan, 16.0, 14.6, versions(), 2000, [DYNAMIC_NOTE]),
            record("w3", wan, 16.0, 23.1, versions(wan="1.3.9"), 60, [DYNAMIC_NOTE])]


def open_panel(page):
    page.locator("button.vrb-readout-btn").click()
    page.wait_for_selector(f"{PANEL} {RUNS} .vrb-section-title", timeout=30_000)
    page.wait_for_function(f"() => !document.querySelector('{RUNS}').textContent.includes('Reading the run log')", timeout=30_000)


def close_panel(page):
    page.locator("button.vrb-readout-btn").click()
    page.wait_for_selector(PANEL, state="detached", timeout=10_000)


def test_panel_shows_one_sentence_per_regression(server, page, artifacts, e2e_comfy):
    from vram_budget.nodes import run_log

    page.locator("button.vrb-readout-btn").wait_for(state="visible", timeout=60_000)
    open_panel(page)
    assert page.locator(f"{RUNS} .vrb-regression").count() == 0  # an empty log: nothing to say
    close_panel(page)

    logfile = run_log.RunLogFile(str(server.base / "user" / "vram_budget" / "runs.jsonl"))
    for rec in gpu_log():
        logfile.append(rec)
    status, data = server.request("GET", "/vram_budget/runs?limit=20")
    assert status == 200 and [r["prompt_id"] for r in data["runs"]] == ["w3", "w2", "w1", "f2", "f1"]
    sentences = [r["sentence"] for r in data["regressions"]]
    assert len(sentences) == 2, data["regressions"]
    assert "14.60 GiB on ComfyUI-WanVideoWrapper 1.3.6, 23.10 GiB on 1.3.9 (+58 %)" in sentences[0]
    assert "pinning ComfyUI-WanVideoWrapper back to 1.3.6 should bring the earlier figure back." in sentences[0]
    assert ("12.40 GiB on ComfyUI 0.15.1 and comfy-aimdo not installed, 15.90 GiB on ComfyUI 0.18.2 and "
            "comfy-aimdo 0.2.4 (+28 %)") in sentences[1]
    assert "--disable-dynamic-vram may help" in sentences[1] and "--disable-pinned-memory may help" in sentences[1]

    open_panel(page)
    runs = page.locator(RUNS)
    shown = runs.locator(".vrb-regression")
    shown.first.wait_for(timeout=30_000)
    assert shown.count() == 2
    assert [shown.nth(i).inner_text().strip() for i in range(2)] == sentences  # the route's sentences, one each
    flags = shown.nth(1).locator("code.vrb-flag")  # the flags stay on one line each
    assert [flags.nth(i).inner_text() for i in range(flags.count())] == ["--disable-dynamic-vram", "--disable-pinned-memory"]
    keys = [shown.nth(i).get_attribute("data-workflow-key") for i in range(2)]
    assert keys == [r["workflow_key"] for r in data["regressions"]]
    # above the runs, which are all still listed with their bars
    assert runs.locator(".vrb-run").count() == 5 and runs.locator(".vrb-run-bars").count() == 5
    assert page.evaluate(f"""() => {{
        const s = document.querySelector('{RUNS}');
        return s.querySelector('.vrb-regressions').compareDocumentPosition(s.querySelector('.vrb-runs')) & Node.DOCUMENT_POSITION_FOLLOWING;
    }}""")

    # a new measured run (the "vram_budget.run" event) asks the guard again: back on the old figure,
    # the Wan regression is gone and the Flux one stays
    back = run_log.RunRecord("w4", time.time() - 30, time.time(), "success", None,
                        run_log.Measurement(int(14.5 * GiB), int(13.2 * GiB), "cuda:0"),
                        workflow_key=data["runs"][0]["workflow_key"], workflow_label=data["runs"][0]["workflow_label"],
                        versions=versions(wan="1.3.6")).to_dict()
    page.mouse.move(1400, 900)
    page.wait_for_timeout(400)
    shot = artifacts / f"version_guard_{e2e_comfy[2]}.png"
    runs.evaluate("(el) => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)
    top = runs.bounding_box()
    first_run = runs.locator(".vrb-run").first.bounding_box()  # the regressions and the run that shows one
    page.screenshot(path=str(shot), clip={"x": top["x"], "y": top["y"], "width": top["width"],
                                          "height": first_run["y"] + first_run["height"] + 8 - top["y"]})
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not (DOCS / "version_guard.png").exists():
        shutil.copyfile(shot, DOCS / "version_guard.png")

    logfile.append(back)
    page.evaluate("(rec) => window.__vramBudget.onRunRecorded({detail: rec})", back)
    page.wait_for_function(f"() => document.querySelectorAll('{RUNS} .vrb-regression').length === 1", timeout=15_000)
    assert runs.locator(".vrb-regression").inner_text().strip() == sentences[1]
    close_panel(page)
    assert not page.errors, page.errors
