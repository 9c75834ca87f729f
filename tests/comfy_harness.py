"""Harness for tests and benchmarks against a real ComfyUI (no fixtures: those are in
tests/comfy/conftest.py). Importable as `comfy_harness` wherever tests/ is on sys.path: the
tests, tests/e2e and the benchmarks under bench/ share it.

ComfyUI is not on PyPI: point COMFYUI_PATH at a ComfyUI source tree and COMFYUI_PYTHON at the
python of its venv (torch, ComfyUI's requirements). `comfy_paths()` skips the calling test with
that reason when they are unset.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]  # this file is tests/comfy_harness.py
PACK_DIR_NAME = "comfyui-vram-budget"


def require_or_skip(reason: str) -> None:
    """Skip with `reason`, or fail with it when VRAM_BUDGET_REQUIRE_COMFYUI=1 (CI: a real-ComfyUI
    test that silently skips would let a broken adapter land)."""
    if os.environ.get("VRAM_BUDGET_REQUIRE_COMFYUI") == "1":
        pytest.fail(f"VRAM_BUDGET_REQUIRE_COMFYUI=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def comfy_paths() -> tuple[Path, str]:
    path = os.environ.get("COMFYUI_PATH")
    if not path:
        require_or_skip("COMFYUI_PATH is not set: these tests need a real ComfyUI source tree (and COMFYUI_PYTHON)")
    py = os.environ.get("COMFYUI_PYTHON") or sys.executable
    if not (Path(path) / "main.py").is_file():
        require_or_skip(f"COMFYUI_PATH={path} has no main.py")
    return Path(path), py


def frontend_args() -> tuple[str, ...]:
    """`--front-end-root DIR` when COMFYUI_FRONTEND_ROOT names a frontend build (e.g. the static/
    folder of comfyui-frontend-package==1.58.1); ComfyUI's own pinned frontend otherwise."""
    root = os.environ.get("COMFYUI_FRONTEND_ROOT")
    if not root:
        return ()
    if not (Path(root) / "index.html").is_file():
        raise RuntimeError(f"COMFYUI_FRONTEND_ROOT={root} has no index.html")
    return ("--front-end-root", root)


def frontend_label() -> str:
    """Which frontend the e2e tests see, for screenshot names: "fe1.58.1" for a pip-installed
    comfyui-frontend-package given through COMFYUI_FRONTEND_ROOT, "" for ComfyUI's own."""
    root = os.environ.get("COMFYUI_FRONTEND_ROOT")
    if not root:
        return ""
    for info in Path(root).resolve().parents[1].glob("comfyui_frontend_package-*.dist-info"):
        return "fe" + info.name.split("-")[1].removesuffix(".dist")
    return "fe-" + Path(root).resolve().parent.name


def comfy_version(path: Path) -> str:
    text = (path / "comfyui_version.py").read_text()
    return text.split('__version__ = "')[1].split('"')[0]


def install_pack(base: Path) -> Path:
    """Copy the pack (tracked source only, as the Registry would ship it) into base/custom_nodes."""
    dest = base / "custom_nodes" / PACK_DIR_NAME
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".pytest_cache", "*.egg-info", "tests", "bench", ".whl", ".gl", "artifacts")
    shutil.copytree(REPO, dest, ignore=ignore, dirs_exist_ok=True)
    return dest


def make_base(tmp: Path) -> Path:
    for sub in ("custom_nodes", "user", "input", "output", "temp"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    for folder in ("checkpoints", "diffusion_models", "unet", "text_encoders", "clip", "vae", "loras", "controlnet", "clip_vision"):
        (tmp / "models" / folder).mkdir(parents=True, exist_ok=True)
    install_pack(tmp)
    return tmp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ComfyServer:
    def __init__(self, path: Path, python: str, base: Path, extra_args=(), env=None):
        self.path, self.python, self.base = path, python, base
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "comfyui.log"
        args = [python, "main.py", "--cpu", "--listen", "127.0.0.1", "--port", str(self.port),
                "--base-directory", str(base), "--disable-auto-launch", *frontend_args(), *extra_args]
        self._log = open(self.log_path, "w")
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen(args, cwd=path, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 240
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ComfyUI exited ({self.proc.returncode}):\n{self.log()[-4000:]}")
            try:
                with urllib.request.urlopen(self.url + "/system_stats", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"ComfyUI did not start in time:\n{self.log()[-4000:]}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def request(self, method: str, route: str, body=None, timeout=30):
        """(status, parsed JSON or text) for a request to the server."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + route, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            status, raw, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
        if "json" in ctype:
            return status, json.loads(raw or b"null")
        return status, raw.decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()


RUNNER = textwrap.dedent(
    """
    import sys, os, json, asyncio, logging
    comfy_path, pack_dir = sys.argv[1], sys.argv[2]
    sys.argv = [sys.argv[0], "--cpu"] + sys.argv[3:]
    sys.path.insert(0, comfy_path)
    os.chdir(comfy_path)
    import comfy.options
    comfy.options.enable_args_parsing()
    import comfy.model_management
    import nodes
    if hasattr(nodes, "init_extra_nodes"):
        pass
    ok = asyncio.run(nodes.load_custom_node(pack_dir)) if asyncio.iscoroutinefunction(nodes.load_custom_node) else nodes.load_custom_node(pack_dir)
    assert ok, "pack failed to load"
    PACK = sys.modules[pack_dir.replace(".", "_x_")]
    """
)


# execution_error over the websocket and in the history). Not part of the pack.
OOM_PROBE_SOURCE = textwrap.dedent(
    '''
    import torch

    class VramBudgetOomProbe:
        @classmethod
        def INPUT_TYPES(cls):
            return {"required": {"message": ("STRING", {"multiline": True, "default": "CUDA out of memory."})},
                    "optional": {"oom": ("BOOLEAN", {"default": True})}}

        RETURN_TYPES = ()
        FUNCTION = "run"
        OUTPUT_NODE = True
        CATEGORY = "testing"

        def run(self, message, oom=True):
            raise (torch.OutOfMemoryError if oom else RuntimeError)(message)

    class VramBudgetSleepProbe:
        """Keeps the prompt worker busy for `seconds` (to test what routes do during a prompt)."""

        @classmethod
        def INPUT_TYPES(cls):
            return {"required": {"seconds": ("FLOAT", {"default": 3.0, "min": 0.0, "max": 60.0})}}

        RETURN_TYPES = ()
        FUNCTION = "run"
        OUTPUT_NODE = True
        CATEGORY = "testing"

        def run(self, seconds):
            import time
            time.sleep(seconds)
            return {}

    # dict(...) rather than a {...} literal: ComfyUI-Manager's scanner finds node names with a regex
    # over every .py file of the pack, strings included, and would credit the pack with these probes.
    NODE_CLASS_MAPPINGS = dict(VramBudgetOomProbe=VramBudgetOomProbe, VramBudgetSleepProbe=VramBudgetSleepProbe)
    '''
)


def install_oom_probe(base: Path) -> str:
    """Put the probe nodes (VramBudgetOomProbe, VramBudgetSleepProbe) into base/custom_nodes;
    returns the OOM probe's class_type."""
    dest = base / "custom_nodes" / "vram_budget_oom_probe"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "__init__.py").write_text(OOM_PROBE_SOURCE)
    return "VramBudgetOomProbe"


def wait_idle(server: "ComfyServer", timeout: float = 180) -> None:
    """Wait until the server's queue is empty and nothing runs."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, queue = server.request("GET", "/queue")
        if status == 200 and not queue.get("queue_running") and not queue.get("queue_pending"):
            return
        time.sleep(0.2)
    raise AssertionError(f"ComfyUI still busy after {timeout}s:\n{server.log()[-3000:]}")
