"""A broken estimator fails loudly in a real ComfyUI, and ComfyUI still loads.

The pack is copied with nodes/estimator/plan/planning.py made to raise on import. ComfyUI loads the
pack (no crash, its other custom nodes unaffected); every module that needs the estimator logs
"[VRAM Budget] failed to load ..." with its traceback, is listed in nodes.registry.LOAD_ERRORS and
registers nothing: no node, no route answering "estimator not available"."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from comfy_harness import PACK_DIR_NAME, RUNNER, make_base

pytestmark = pytest.mark.comfy

SNIPPET = """
registry = sys.modules[PACK.__name__ + ".nodes.registry"]
print(json.dumps({"nodes": sorted(PACK.NODE_CLASS_MAPPINGS), "errors": registry.LOAD_ERRORS}))
"""


def test_a_broken_estimator_is_logged_and_comfyui_loads(comfy_install, tmp_path):
    path, python, _ = comfy_install
    base = make_base(tmp_path)
    pack_dir = base / "custom_nodes" / PACK_DIR_NAME
    planning = pack_dir / "nodes" / "estimator" / "plan" / "planning.py"
    planning.write_text('raise ImportError("estimator broken on purpose")\n')
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([python, "-c", RUNNER + SNIPPET, str(path), str(pack_dir)], cwd=path, env=env,
                          capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]  # ComfyUI loaded the pack: nothing crashed
    got = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    assert set(got["errors"]) == {"budget_node", "wan_planner", "routes"}, got
    assert all("estimator broken on purpose" in e for e in got["errors"].values()), got
    # the modules that need the estimator register nothing; the tiled VAE nodes need only vae_memory
    assert got["nodes"] == ["VAEDecodeAutoTiled", "VAEEncodeAutoTiled"], got
    for name in ("budget_node", "wan_planner", "routes"):
        assert f"[VRAM Budget] failed to load {name}" in output, output[-6000:]
    assert "Traceback" in output and "estimator broken on purpose" in output
