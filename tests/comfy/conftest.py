"""Harness for tests against a real ComfyUI.

ComfyUI is not on PyPI: point COMFYUI_PATH at a ComfyUI source tree and COMFYUI_PYTHON at the
python of its venv (torch, ComfyUI's requirements). Every test here is skipped with that reason
when they are unset. Run the suite once per ComfyUI version you want to cover.

Two ways in:
- ``comfy_server``: a real ComfyUI process (``main.py --cpu``) on 127.0.0.1 with this pack
  installed in a temporary base directory (custom_nodes/, models/, user/ of its own).
- ``run_in_comfy(code)``: runs a Python snippet in ComfyUI's own interpreter with ComfyUI's
  modules importable and this pack loaded the way ComfyUI loads custom nodes; the snippet prints
  a JSON line that the test parses.
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

REPO = Path(__file__).resolve().parents[2]
PACK_DIR_NAME = "comfyui-vram-budget"


def comfy_paths() -> tuple[Path, str]:
    path = os.environ.get("COMFYUI_PATH")
    if not path:
        pytest.skip("COMFYUI_PATH is not set: these tests need a real ComfyUI source tree (and COMFYUI_PYTHON)")
    py = os.environ.get("COMFYUI_PYTHON") or sys.executable
    if not (Path(path) / "main.py").is_file():
        pytest.skip(f"COMFYUI_PATH={path} has no main.py")
    return Path(path), py


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
    def __init__(self, path: Path, python: str, base: Path, extra_args=()):
        self.path, self.python, self.base = path, python, base
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "comfyui.log"
        args = [python, "main.py", "--cpu", "--listen", "127.0.0.1", "--port", str(self.port),
                "--base-directory", str(base), "--disable-auto-launch", *extra_args]
        self._log = open(self.log_path, "w")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
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


@pytest.fixture(scope="session")
def comfy_install():
    path, python = comfy_paths()
    return path, python, comfy_version(path)


@pytest.fixture(scope="session")
def comfy_server(comfy_install, tmp_path_factory):
    path, python, _ = comfy_install
    base = make_base(tmp_path_factory.mktemp("comfy_base"))
    server = ComfyServer(path, python, base)
    yield server
    server.stop()


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


@pytest.fixture(scope="session")
def pack_base(tmp_path_factory):
    comfy_paths()
    return make_base(tmp_path_factory.mktemp("comfy_pack"))


@pytest.fixture
def run_in_comfy(comfy_install, pack_base):
    """run_in_comfy(code, *extra_args, timeout=600) -> last JSON line the snippet printed.

    In the snippet: ComfyUI modules import as usual (`import comfy.sd`, `import nodes`), and
    ``PACK`` is this pack's module as ComfyUI loaded it (``PACK.NODE_CLASS_MAPPINGS`` ...).
    """
    path, python, _ = comfy_install

    def run(code: str, *extra_args: str, timeout: int = 600):
        script = RUNNER + "\n" + textwrap.dedent(code)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("PYTHONPATH", None)
        pack_dir = str(pack_base / "custom_nodes" / PACK_DIR_NAME)
        proc = subprocess.run([python, "-c", script, str(path), pack_dir, *extra_args], cwd=path, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"snippet failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{") or ln.startswith("[")]
        assert lines, f"snippet printed no JSON:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return json.loads(lines[-1])

    return run


@pytest.fixture(scope="session")
def comfy_server_factory(comfy_install, tmp_path_factory):
    """make(setup=None, extra_args=()) -> a fresh ComfyServer of its own (stopped at session end).

    ``setup(base)`` runs before the server starts, to put model files into ``base/models/...`` or
    an extra custom node into ``base/custom_nodes/`` (e.g. a probe that raises a real
    torch.OutOfMemoryError so ComfyUI's own OOM handling runs).
    """
    path, python, _ = comfy_install
    servers: list[ComfyServer] = []

    def make(setup=None, extra_args=()):
        base = make_base(tmp_path_factory.mktemp("comfy_base_custom"))
        if setup is not None:
            setup(base)
        server = ComfyServer(path, python, base, extra_args)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


# Test-only custom nodes: one raises a real torch.OutOfMemoryError with the message it is
# given, so ComfyUI's own OOM path runs (execution.py: TIPS appended, unload_all_models,
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

    NODE_CLASS_MAPPINGS = {"VramBudgetOomProbe": VramBudgetOomProbe, "VramBudgetSleepProbe": VramBudgetSleepProbe}
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
