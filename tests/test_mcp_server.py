"""Issue 35, `vram-budget mcp`: the official `mcp` client lists and calls the tools; the answer is the same fits
answer as the command line's estimate; bad input answers with an error in bounded time and the server keeps
serving. Against a running ComfyUI: tests/comfy/test_routes.py."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

from mcp_client import auto_run, session_run
from vram_budget.nodes.estimator.cli import mcp_server
from vram_budget.nodes.estimator.cli.agent import FITS_FIELDS, fits_answer

ROOT = Path(__file__).resolve().parents[1]
FLUX = str(ROOT / "example_workflows" / "flux_dev_1024.json")


def _cli_json(*args) -> dict:
    out = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", FLUX, "--json", *args],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return json.loads(out)


def test_official_client_lists_and_calls_the_tools():
    async def steps(s):
        tools = await s.list_tools()
        est = await s.call_tool("estimate_workflow", {"workflow": FLUX, "gpu": "RTX 3060", "ram_gib": 32})
        missing = await s.call_tool("estimate_workflow", {"workflow": str(ROOT / "no-such.json")})
        bad = await s.call_tool("estimate_workflow", {"workflow": FLUX, "flags": ["--gpu", "RTX 9999 Imaginary"]})
        gone = await s.call_tool("check_prompt", {"workflow": FLUX, "comfyui_url": "http://127.0.0.1:9"})
        url = await s.call_tool("free_memory", {"comfyui_url": "file:///etc/passwd"})
        return tools, est, missing, bad, gone, url

    init, (tools, est, missing, bad, gone, url) = session_run(steps)
    assert init.server_info.name == "vram-budget" and init.capabilities.tools is not None
    assert {t.name for t in tools.tools} == set(mcp_server.HANDLERS)
    assert all(t.input_schema["type"] == "object" for t in tools.tools)
    assert est.is_error is False
    assert est.structured_content == fits_answer({"budget": _cli_json("--gpu", "RTX 3060", "--ram", "32.0")})
    assert tuple(est.structured_content) == FITS_FIELDS
    assert est.structured_content["card"] == "RTX 3060" and "RTX 3060" in est.content[0].text
    assert missing.is_error and "no-such.json" in missing.content[0].text
    assert bad.is_error and "RTX 9999" in bad.content[0].text
    assert gone.is_error and "not reachable" in gone.content[0].text
    assert url.is_error and "http(s)" in url.content[0].text


def test_high_level_client_falls_back_to_the_handshake():
    async def steps(c):
        return await c.list_tools(), await c.call_tool("estimate_workflow", {"workflow": FLUX, "gpu": "RTX 4090"})
    tools, est = auto_run(steps)
    assert len(tools.tools) == len(mcp_server.TOOLS)
    assert est.is_error is False and est.structured_content["card"] == "RTX 4090"


def _serve(data: bytes, limit: int | None = None, monkeypatch=None) -> list[dict]:
    if limit is not None:
        monkeypatch.setattr(mcp_server, "MAX_LINE_BYTES", limit)
    out = io.BytesIO()
    t0 = time.perf_counter()
    assert mcp_server.serve(io.BytesIO(data), out) == 0
    assert time.perf_counter() - t0 < 10
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_hostile_input_gets_errors_and_the_server_keeps_serving(monkeypatch):
    ping = b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'
    lines = (b"not json\n" + b'[1,2]\n' + b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}\n'
             + b'{"jsonrpc":"2.0","id":2,"method":"resources/list"}\n'
             + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
             + b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}\n'
             + b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"estimate_workflow",'
               b'"arguments":{"workflow":"x.json","ram_gib":"lots"}}}\n'
             + b"[" * 100000 + b"\n" + b"x" * 5000 + b"\n" + ping)
    replies = _serve(lines, limit=4096, monkeypatch=monkeypatch)
    codes = [r.get("error", {}).get("code") for r in replies]
    assert codes[:4] == [-32700, -32600, -32602, -32601]
    assert replies[4]["result"]["isError"] and "unknown tool" in replies[4]["result"]["content"][0]["text"]
    assert replies[5]["result"]["isError"] and "ram_gib" in replies[5]["result"]["content"][0]["text"]
    assert codes[6:8] == [-32600, -32600]  # both over the line limit, skipped, not parsed
    assert replies[-1] == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert len(replies) == 9  # the notification is not answered


def test_protocol_version_is_negotiated():
    def init(version):
        msg = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": version}}
        return _serve(json.dumps(msg).encode() + b"\n")[0]["result"]["protocolVersion"]
    assert init("2024-11-05") == "2024-11-05"
    assert init("1999-01-01") == mcp_server.PROTOCOL_VERSIONS[0]
