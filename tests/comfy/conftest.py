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
import subprocess
import textwrap

import pytest

from comfy_harness import PACK_DIR_NAME, RUNNER, ComfyServer, comfy_paths, comfy_version, make_base


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

    def make(setup=None, extra_args=(), env=None):
        base = make_base(tmp_path_factory.mktemp("comfy_base_custom"))
        if setup is not None:
            setup(base)
        server = ComfyServer(path, python, base, extra_args, env=env)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


# Test-only custom nodes: one raises a real torch.OutOfMemoryError with the message it is
# given, so ComfyUI's own OOM path runs (execution.py: TIPS appended, unload_all_models,
