"""End-to-end harness: a real ComfyUI with the pack, and headless Chromium driven by Playwright.

Needs COMFYUI_PATH/COMFYUI_PYTHON (as tests/comfy), the Python package `playwright` (never
`playwright install`: the system Chromium is used) and /usr/bin/chromium (apt-get install
chromium). Each missing piece skips with its reason.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
ARTIFACTS = REPO / "artifacts"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]


import comfy_harness as HARNESS  # noqa: E402,N812  (tests/comfy_harness.py)


@pytest.fixture(scope="session")
def e2e_comfy():
    """(path, python, label): label is the ComfyUI version, plus the frontend when
    COMFYUI_FRONTEND_ROOT serves another one ("0.18.2-fe1.58.1"); screenshots are named by it."""
    path, python = HARNESS.comfy_paths()
    label = "-".join(filter(None, (HARNESS.comfy_version(path), HARNESS.frontend_label())))
    return path, python, label


@pytest.fixture(scope="session")
def e2e_server_factory(e2e_comfy, tmp_path_factory):
    """make(setup) -> a running ComfyServer with this pack (stopped at session end)."""
    path, python, _ = e2e_comfy
    servers = []

    def make(setup=None, extra_args=(), env=None):
        base = HARNESS.make_base(tmp_path_factory.mktemp("e2e_base"))
        if setup is not None:
            setup(base)
        server = HARNESS.ComfyServer(path, python, base, extra_args, env=env)
        servers.append(server)
        # Offline, a first start opens the templates dialog; mark the tutorial as done.
        status, _ = server.request("POST", "/api/settings", {"Comfy.TutorialCompleted": True})
        assert status == 200
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        HARNESS.require_or_skip("the Python package playwright is not installed (pip install playwright; no `playwright install`)")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        HARNESS.require_or_skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def harness():
    """tests/comfy/conftest.py as a module: ComfyServer, install_oom_probe, wait_idle, ..."""
    return HARNESS
