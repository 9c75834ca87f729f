"""Issue 35 on a real ComfyUI (CPU): a node written for the test that keeps 200 MiB of RAM each run (as a node
pack holding references would) is flagged after five runs, with its pack named; the same node keeping nothing is
not. The panel side: tests/e2e."""
from __future__ import annotations

import textwrap
import time

import pytest

pytestmark = pytest.mark.comfy

import comfy_harness as HARNESS  # noqa: E402,N812

PACK = "ComfyUI-Leaky-Probe"
SOURCE = textwrap.dedent('''
    _HELD = []

    class VramBudgetLeakProbe:
        """Keeps `mib` MiB of RAM referenced each run, on purpose (a test of the pack's leak watch)."""
        @classmethod
        def INPUT_TYPES(cls):
            return {"required": {"mib": ("INT", {"default": 200, "min": 0, "max": 4096}),
                                 "seed": ("INT", {"default": 0, "min": 0, "max": 2147483647})}}
        RETURN_TYPES = ()
        OUTPUT_NODE = True
        FUNCTION = "run"
        CATEGORY = "testing"

        def run(self, mib, seed):
            if mib:
                _HELD.append(b"\\x01" * (mib * 1024 * 1024))  # every page written: resident
            return {}

    NODE_CLASS_MAPPINGS = dict(VramBudgetLeakProbe=VramBudgetLeakProbe)
''')


def _setup(base):
    folder = base / "custom_nodes" / PACK
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(SOURCE)


@pytest.fixture(scope="module")
def server(comfy_server_factory):
    return comfy_server_factory(setup=_setup)


_seed = iter(range(1, 10_000))


def run(server, mib: int) -> None:
    status, data = server.request("POST", "/prompt", {"prompt": {"1": {"class_type": "VramBudgetLeakProbe",
                                                                       "inputs": {"mib": mib, "seed": next(_seed)}}}})
    assert status == 200, data
    HARNESS.wait_idle(server)


def leaks(server) -> dict:
    return server.request("GET", "/vram_budget/status")[1]["leaks"]


def test_a_node_that_leaks_is_flagged_and_one_that_does_not_is_not(server):
    for _ in range(5):
        run(server, 0)
    st = leaks(server)
    assert st["runs"] == 5 and st["flag"] is None, st
    assert all(b["packs"] == [PACK] for b in st["recent"])
    for _ in range(5):
        run(server, 200)
    flag = leaks(server)["flag"]
    assert flag is not None and flag["kind"] == "ram", leaks(server)
    assert 150 * 2**20 < flag["per_run_bytes"] < 260 * 2**20 and flag["packs"] == [PACK]
    assert "RAM after each run grew" in flag["text"] and PACK in flag["fixes"][0]
    deadline = time.time() + 10
    while "grew" not in server.log() and time.time() < deadline:
        time.sleep(0.2)
    assert f"RAM after each run grew" in server.log()  # the run log's warning, in ComfyUI's console
    records = server.request("GET", "/vram_budget/runs?limit=1")[1]
    rec = records["runs"][0] if isinstance(records, dict) else records[0]
    assert rec["leak"]["kind"] == "ram" and rec["baseline"]["packs"] == [PACK]
