"""The VRAM sidebar panel in headless Chromium against a real ComfyUI with the pack installed.

One flow per ComfyUI version (run the file once per COMFYUI_PATH): the sidebar button exists,
the panel opens, bars and the model list render, "Unload all models" empties the list, polling
stops when the tab closes, a real OOM (a probe node raising torch.OutOfMemoryError inside
ComfyUI's executor) is explained in the panel and in a toast, and the workflow-budget section
settles. Screenshots go to artifacts/ (git-ignored); docs/panel_live.png is refreshed when
UPDATE_SCREENSHOTS=1 or when it does not exist yet.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from helpers_models import write_vae  # tests/conftest.py puts tests/ on sys.path
from e2e_shots import shoot  # noqa: E402  (tests/ is on sys.path)

TESTS = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e

DOCS_SCREENSHOT = TESTS.parent / "docs" / "panel_live.png"
VAE_NAME = "sd_vae_zero.safetensors"
OOM_MESSAGE = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.12 GiB "
    "is free. Including non-PyTorch memory, this process has 21.90 GiB memory in use. Of the allocated memory "
    "20.10 GiB is allocated by PyTorch, and 1.31 GiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
PANEL = "[data-testid=vram-budget-panel]"
TAB_BUTTON = ".side-bar-button:has(i.pi-microchip)"


@pytest.fixture(scope="module")
def server(e2e_server_factory, harness):
    def setup(base: Path) -> None:
        harness.install_oom_probe(base)
        write_vae(base / "models" / "vae" / VAE_NAME, "kl4", "F16", scale=1)

    return e2e_server_factory(setup)


@pytest.fixture(scope="module")
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 1100})
    page = context.new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.status_requests = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda msg: msg.type == "error" and "vram" in msg.text.lower() and page.errors.append(msg.text))
    page.on("request", lambda req: "/vram_budget/status" in req.url and page.status_requests.append(time.time()))
    page.goto(server.url)
    page.wait_for_function("() => window.__vramBudget && window.comfyAPI?.app?.app?.extensionManager", timeout=120_000)
    page.wait_for_selector(TAB_BUTTON, timeout=60_000)
    page.keyboard.press("Escape")  # any first-run dialog
    yield page
    context.close()


_sizes = iter(range(64, 4096, 8))


def load_vae(server, harness) -> None:
    prompt = {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": VAE_NAME}},
        "2": {"class_type": "EmptyLatentImage", "inputs": {"width": next(_sizes), "height": 64, "batch_size": 1}},
        "3": {"class_type": "VAEDecode", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
        "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}},
    }
    status, data = server.request("POST", "/prompt", {"prompt": prompt})
    assert status == 200, data
    harness.wait_idle(server)


def open_panel(page) -> None:
    if page.locator(PANEL).count() == 0:
        page.locator(TAB_BUTTON).first.click()
    page.wait_for_selector(f"{PANEL} .vrb-bar", timeout=30_000)


def close_panel(page) -> None:
    if page.locator(PANEL).count():
        page.locator(TAB_BUTTON).first.click()
    page.wait_for_selector(PANEL, state="detached", timeout=10_000)


def settle_budget(page) -> str:
    """Wait until the workflow-budget section shows a result (or says why not); returns its text."""
    page.wait_for_function(
        """() => { const s = document.querySelector('[data-section=budget]');
                   return s && s.textContent && !s.textContent.includes('Estimating the current workflow'); }""",
        timeout=60_000)
    return page.locator("[data-section=budget]").inner_text()


def test_panel_end_to_end(server, page, harness, artifacts, e2e_comfy):
    version = e2e_comfy[2]
    load_vae(server, harness)

    # The refresh-interval setting is registered with its default.
    assert page.evaluate("() => window.comfyAPI.app.app.extensionManager.setting.get('VRAMBudget.Panel.RefreshMs')") == 1500

    # The sidebar button exists (once) and opens the panel.
    assert page.locator(TAB_BUTTON).count() == 1
    open_panel(page)
    panel = page.locator(PANEL)
    assert panel.count() == 1

    # Bars: on --cpu, RAM only, and the panel says there is no CUDA device.
    page.wait_for_selector(f"{PANEL} .vrb-model", timeout=30_000)
    devices = page.locator("[data-section=devices]").inner_text()
    assert "No CUDA device" in devices and "System memory" in devices
    assert page.locator(f"{PANEL} [data-section=devices] .vrb-bar").count() == 1
    assert " GiB" in devices  # two-decimal GiB values
    models = page.locator("[data-section=models]").inner_text()
    assert "AutoencoderKL" in models and "VAE" in models
    unload_all = page.locator("[data-action=unload_all]")
    assert "1 model" in unload_all.inner_text()

    # render() is idempotent: rendering again into the same element keeps one panel.
    page.evaluate("""() => { const el = document.querySelector('[data-testid=vram-budget-panel]').parentElement;
                             window.__vramBudget.render(el); window.__vramBudget.render(el); }""")
    assert page.locator(PANEL).count() == 1
    budget_text = settle_budget(page)
    assert ("Estimator not available" in budget_text or "peak" in budget_text
            or "Nothing to estimate" in budget_text or "Could not" in budget_text), budget_text
    if "peak" in budget_text:
        assert page.locator("[data-section=budget] .vrb-badge").count() == 1
    shoot(page, artifacts, f"panel_loaded_{version}.png")

    # "Unload all models": the list becomes empty and the panel says what it did.
    unload_all.click()
    page.wait_for_selector("[data-section=models] .vrb-empty", timeout=30_000)
    assert "No models loaded" in page.locator("[data-section=models]").inner_text()
    result = page.locator("[data-section=actions] .vrb-result").inner_text()
    assert "1 model unloaded" in result, result
    status, st = server.request("GET", "/vram_budget/status")
    assert status == 200 and st["models"] == []

    # Polling runs only while the tab is mounted.
    close_panel(page)
    time.sleep(0.5)
    before = len(page.status_requests)
    page.wait_for_timeout(4000)  # > 2 refresh intervals (1.5 s)
    assert len(page.status_requests) == before, "the panel kept polling after it was closed"
    open_panel(page)
    page.wait_for_timeout(3500)
    assert len(page.status_requests) >= before + 2
    assert page.locator(PANEL).count() == 1

    # A real OOM inside ComfyUI's executor: the websocket execution_error reaches the panel,
    # which asks the server to explain it and shows a toast.
    page.evaluate(
        """async (message) => {
            const api = window.comfyAPI.api.api;
            const prompt = {"1": {class_type: "VramBudgetOomProbe", inputs: {message}}};
            const r = await api.fetchApi("/prompt", {method: "POST", headers: {"Content-Type": "application/json"},
                                                     body: JSON.stringify({prompt, client_id: api.clientId})});
            if (r.status !== 200) throw new Error("queue failed " + r.status);
        }""",
        OOM_MESSAGE,
    )
    page.wait_for_selector("[data-section=oom] .vrb-oom", timeout=60_000)
    oom = page.locator("[data-section=oom]").inner_text()
    assert "Out of GPU memory on GPU 0 (2.00 GiB request failed)" in oom, oom
    assert "The failed request was 2.00 GiB; the card has 23.65 GiB in total and only 1.12 GiB was free." in oom
    assert "VramBudgetOomProbe" in oom
    toast = page.locator(".p-toast-message, [data-testid=toast]", has_text="Out of GPU memory")
    toast.first.wait_for(timeout=10_000)
    assert "Details in the VRAM panel" in toast.first.inner_text()
    for _ in range(3):  # ComfyUI's own error dialog / toasts
        page.keyboard.press("Escape")
        page.wait_for_timeout(200)
    # The server keeps it too (a reloaded page shows it again).
    status, data = server.request("GET", "/vram_budget/last_oom")
    assert status == 200 and data["last_oom"]["diagnosis"]["requested_bytes"] == 2 * 1024**3

    # Load a model again for the screenshot: models, bars, budget and the OOM diagnosis together.
    load_vae(server, harness)
    page.wait_for_selector(f"{PANEL} .vrb-model", timeout=30_000)
    page.wait_for_timeout(4500)  # toasts fade, the flash ends
    # the unload result is old news: dismiss it, unless the panel already let it go (it clears itself after 30 s,
    # which a loaded machine can pass between the unload above and here)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: PLC0415  (the browser suites' own)
    dismiss = page.locator("[data-section=actions] .vrb-dismiss")
    if dismiss.count():
        try:
            dismiss.first.click(timeout=5_000)
        except PlaywrightTimeout:  # it cleared itself in between
            pass
    page.wait_for_selector("[data-section=actions] .vrb-result", state="detached", timeout=10_000)
    assert page.locator("[data-section=actions] .vrb-result").count() == 0
    dark = shoot(page, artifacts, f"panel_{version}.png")
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not DOCS_SCREENSHOT.exists():
        DOCS_SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(dark, DOCS_SCREENSHOT)

    # Light theme: the panel follows ComfyUI's palette variables.
    dark_fg = page.evaluate("() => getComputedStyle(document.querySelector('.vrb-panel')).color")
    page.evaluate("() => window.comfyAPI.app.app.extensionManager.setting.set('Comfy.ColorPalette', 'light')")
    page.wait_for_timeout(1500)
    light_fg = page.evaluate("() => getComputedStyle(document.querySelector('.vrb-panel')).color")
    shoot(page, artifacts, f"panel_light_{version}.png")
    page.evaluate("() => window.comfyAPI.app.app.extensionManager.setting.set('Comfy.ColorPalette', 'dark')")
    assert dark_fg != light_fg, (dark_fg, light_fg)

    assert not page.errors, page.errors


def test_gpu_layout_renders(server, page, artifacts, e2e_comfy):
    """This machine has no GPU: render a status document shaped by the server's own helpers
    (routes.device_bar / would_free) for two CUDA cards, to check the GPU layout end to end in
    the real frontend: one bar per card, fragmentation advice, processes, partly loaded models."""
    from vram_budget.nodes import routes

    gib = 1024**3
    status, live = server.request("GET", "/vram_budget/status")
    assert status == 200
    card0 = routes.device_bar(total=int(23.65 * gib), driver_free=int(1.9 * gib), torch_reserved=int(19.6 * gib),
                              torch_allocated=int(16.8 * gib))
    card1 = routes.device_bar(total=int(11.6 * gib), driver_free=int(10.9 * gib), torch_reserved=0, torch_allocated=0)
    devices = [
        {"index": 0, "name": "NVIDIA GeForce RTX 4090", "type": "cuda", "is_compute_device": True, "source": "torch",
         **card0, "fragmentation": routes.fragmentation_flag(card0["reserved_unallocated"]),
         "processes": [{"pid": 4242, "name": "python3", "used": int(20.9 * gib), "self": True},
                       {"pid": 777, "name": "Xorg", "used": int(0.45 * gib), "self": False}]},
        {"index": 1, "name": "NVIDIA GeForce RTX 3060", "type": "cuda", "is_compute_device": False, "source": "nvml",
         **card1, "fragmentation": None},
    ]
    models = [
        {"id": "7f1a0001", "index": 0, "name": "Flux", "file": "flux1-dev-fp8.safetensors", "type": "diffusion",
         "device": "cuda:0", "device_type": "cuda", "size": int(11.1 * gib), "loaded": int(8.9 * gib),
         "fully_loaded": False, "currently_used": True, "dynamic": False, "unload_frees": int(8.9 * gib)},
        {"id": "7f1a0002", "index": 1, "name": "AutoencodingEngine", "file": "ae.safetensors", "type": "vae",
         "device": "cuda:0", "device_type": "cuda", "size": int(0.16 * gib), "loaded": int(0.16 * gib),
         "fully_loaded": True, "currently_used": False, "dynamic": False, "unload_frees": int(0.16 * gib)},
        {"id": "7f1a0003", "index": 2, "name": "FluxClipModel", "file": "t5xxl_fp8_e4m3fn.safetensors + clip_l.safetensors",
         "type": "text_encoder", "device": "cpu", "device_type": "cpu", "size": int(4.9 * gib), "loaded": int(4.9 * gib),
         "fully_loaded": True, "currently_used": False, "dynamic": False, "unload_frees": 0},
    ]
    doc = dict(live, cuda=True, message=None, devices=devices, models=models, memory_mode="classic",
               vram_state="NORMAL_VRAM", compute_device={"name": "cuda:0 NVIDIA GeForce RTX 4090 : cudaMallocAsync",
                                                         "type": "cuda", "index": 0, "id": "cuda:0"},
               would_free=routes.would_free(models, "cuda:0", card0["reserved_unallocated"]), busy=False)
    open_panel(page)
    page.evaluate("(doc) => window.__vramBudget.preview(doc)", doc)
    section = page.locator("[data-section=devices]")
    text = section.inner_text()
    assert section.locator(".vrb-bar").count() == 3  # two GPUs + RAM
    assert "GPU 0" in text and "GPU 1" in text and "Not used by this ComfyUI" in text
    assert "No CUDA device" not in text
    assert "Fragmentation: 2.80 GiB cached but unused." in text
    section.locator(".vrb-fix summary").click()  # "How to fix" opens the advice
    assert "expandable_segments:True" in section.inner_text()
    assert "2 processes on this GPU" in text
    # bar segments are proportional: allocated / total of card 0
    width = page.evaluate("""() => parseFloat(document.querySelector('[data-section=devices] .vrb-device .vrb-seg.vrb-alloc').style.width)""")
    assert abs(width - 100 * card0["allocated"] / card0["total"]) < 0.01
    models_text = page.locator("[data-section=models]").inner_text()
    assert "partly loaded: 8.90 GiB of 11.10 GiB" in models_text and "flux1-dev-fp8.safetensors" in models_text
    expected = doc["would_free"]["unload_all"]["vram"] / gib
    assert f"frees {expected:.2f} GiB of VRAM" in page.locator("[data-action=unload_all]").inner_text()
    shoot(page, artifacts, f"panel_gpu_preview_{e2e_comfy[2]}.png")
    page.evaluate("() => window.__vramBudget.preview(null)")
    page.wait_for_function("() => document.querySelector('[data-section=devices]').textContent.includes('No CUDA device')",
                           timeout=10_000)
    assert not page.errors, page.errors


def test_last_oom_survives_a_page_reload(server, page):
    """After a reload the panel reads the last OOM back from the server (ComfyUI's history)."""
    page.reload()
    page.wait_for_function("() => window.__vramBudget && window.comfyAPI?.app?.app?.extensionManager", timeout=120_000)
    page.wait_for_selector(TAB_BUTTON, timeout=60_000)
    assert page.evaluate("() => window.__vramBudget.state.lastOom") is None  # nothing client-side yet
    open_panel(page)
    page.wait_for_selector("[data-section=oom] .vrb-oom", timeout=30_000)
    assert "Out of GPU memory on GPU 0 (2.00 GiB request failed)" in page.locator("[data-section=oom]").inner_text()
    assert not page.errors, page.errors
