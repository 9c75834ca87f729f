"""Issue 35 in the panel, headless Chromium on a real ComfyUI: another program on the card (a stand-in `ollama`
listed by a stand-in nvidia-smi) is named with its fix; a prompt held until it fits shows why, and "Run anyway"
runs it; a node that leaks on purpose is flagged after five runs. Screenshots: artifacts/watch_*.png."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cotenant_standin import fake_smi, start_holder, stop
from e2e_shots import panel_page, shoot
from helpers_models import write_vae

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "comfy"))
from test_admission_comfy import HOLD_MIB, VAE  # noqa: E402  (the decode a stand-in co-tenant blocks)
from test_admission_comfy import prompt as decode  # noqa: E402
from test_leaks_comfy import PACK, SOURCE  # noqa: E402  (the node that leaks on purpose)

pytestmark = pytest.mark.e2e

PANEL = "[data-testid=vram-budget-panel]"
TAB_BUTTON = ".side-bar-button:has(i.pi-microchip)"


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("standin_ui")
    fake_smi(folder)
    return folder


@pytest.fixture(scope="module")
def server(e2e_server_factory, standin):
    def setup(base: Path) -> None:
        write_vae(base / "models" / "vae" / VAE, "kl4", "F16", scale=1)
        (base / "custom_nodes" / PACK).mkdir(parents=True)
        (base / "custom_nodes" / PACK / "__init__.py").write_text(SOURCE)

    return e2e_server_factory(setup, env={"VRAM_BUDGET_NVIDIA_SMI": str(standin / "nvidia-smi"),
                                          "VRAM_BUDGET_ADMISSION": "1"})


@pytest.fixture(scope="module")
def page(browser, server):
    page = panel_page(browser, {"width": 1280, "height": 1100})
    page.goto(server.url)
    page.wait_for_function("() => window.__vramBudget && window.comfyAPI?.app?.app?.extensionManager", timeout=120_000)
    page.wait_for_selector(TAB_BUTTON, timeout=60_000)
    page.locator(TAB_BUTTON).first.click()
    page.wait_for_selector(f"{PANEL} .vrb-bar", timeout=30_000)
    yield page
    page.context.close()


def test_who_holds_the_card_a_held_prompt_and_a_leak(server, page, standin, harness, artifacts, e2e_comfy):
    holder = start_holder(standin, HOLD_MIB)
    try:
        status, data = server.request("POST", "/prompt", {"prompt": decode(64)})
        assert status == 200
        pid = data["prompt_id"]
        held = page.locator("[data-testid=admission-held]")
        held.wait_for(timeout=30_000)
        assert "Ollama" in held.inner_text() and f"pid {holder.pid}" in held.inner_text()
        co = page.locator("[data-testid=cotenants]")
        assert "Other programs hold 11.62 GiB" in co.inner_text() and "Ollama (sha256-ab12)" in co.inner_text()
        assert page.locator("[data-testid=admission-switch]").is_checked()
        fixes = page.locator("[data-testid=admission-fixes]")
        assert not fixes.is_checked()
        fixes.click()
        page.wait_for_function("() => document.querySelector('[data-testid=admission-fixes]').checked")
        assert server.request("GET", "/vram_budget/admission")[1]["fixes"] is True
        assert held.is_visible()  # nothing in this prompt to fix: still waiting
        shoot(page, artifacts, f"watch_held_{e2e_comfy[2]}.png")
        page.locator("[data-testid=admission-held] button[data-action=release]").click()
        harness.wait_idle(server)
        assert pid in server.request("GET", "/history")[1]
        held.wait_for(state="detached", timeout=10_000)
    finally:
        stop(holder)
    page.locator("[data-testid=cotenants]").wait_for(state="detached", timeout=10_000)
    for seed in range(5):
        server.request("POST", "/prompt", {"prompt": {"1": {"class_type": "VramBudgetLeakProbe",
                                                            "inputs": {"mib": 200, "seed": seed}}}})
        harness.wait_idle(server)
    leak = page.locator("[data-testid=leak]")
    page.wait_for_function(f"() => document.querySelector('[data-testid=leak]')?.textContent.includes('{PACK}')",
                           timeout=15_000)
    assert "RAM after each run grew" in leak.inner_text() and PACK in leak.inner_text()
    shoot(page, artifacts, f"watch_leak_{e2e_comfy[2]}.png")
    page.locator("[data-testid=admission-switch]").click()
    page.wait_for_function("() => !document.querySelector('[data-testid=admission-switch]').checked")
    assert server.request("GET", "/vram_budget/admission")[1]["enabled"] is False
    assert page.errors == []
