"""Drive `vram-budget mcp` with the official Model Context Protocol client from PyPI (`mcp`), as an agent would."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the official MCP client (pip install mcp) is a test dependency")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

SERVER = StdioServerParameters(command=sys.executable, args=["-m", "vram_budget.nodes.estimator.cli", "mcp"])


def session_run(steps):
    """Run `steps(session)` (async) against a fresh server process; return what it returns."""
    async def main():
        async with stdio_client(SERVER) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                return init, await steps(session)
    return _run(main)


def _run(main):
    """anyio.run in a thread of its own: a sync Playwright test earlier in the session may leave an event loop
    running in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, main).result(timeout=300)


def auto_run(steps):
    """The same through mcp's high-level Client (its connect-time era probe, then the handshake)."""
    from mcp.client.client import Client  # noqa: PLC0415

    async def main():
        async with Client(SERVER) as client:
            return await steps(client)
    return _run(main)
