"""`vram-budget mcp`: a Model Context Protocol server on stdio (issue 35) for agents that drive ComfyUI.

Tools: estimate a workflow file (this machine, no ComfyUI needed), ask a running ComfyUI whether a prompt fits now
(POST /vram_budget/fits), read what holds its memory (GET /vram_budget/status) and free it (ComfyUI's own POST
/free). JSON-RPC 2.0, one message a line (the MCP stdio transport), the handshake era's `initialize` (protocol
2024-11-05 .. 2025-11-25); a newer client's `server/discover` probe gets "method not found" and falls back to it,
as the specification asks. Standard library only: the protocol is small, and the pack adds no dependency for it.
"""
from __future__ import annotations

import contextlib
import io
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, BinaryIO, Callable

from .agent import fits_answer
from ..units import fmt_gib

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
MAX_LINE_BYTES = 8 * 1024 * 1024  # one JSON-RPC message; longer lines are answered with an error and skipped
MAX_FLAGS = 32
MAX_FLAG_CHARS = 200
HTTP_TIMEOUT_S = 60.0
MAX_HTTP_BYTES = 4 * 1024 * 1024
DEFAULT_URL = "http://127.0.0.1:8188"
SERVER_INFO = {"name": "vram-budget", "version": "0.1.0"}

_URL = {"type": "string", "description": f"the running ComfyUI (default {DEFAULT_URL})"}
TOOLS = [
    {"name": "estimate_workflow",
     "description": "Will this ComfyUI workflow run on a card and this much RAM? Reads a workflow or API prompt JSON "
                    "file and the model files' headers (no ComfyUI needed). Answers fits / verdict / peak / RAM / "
                    "time / risk / the cheapest fixes / what it assumed.",
     "inputSchema": {"type": "object", "required": ["workflow"], "additionalProperties": False, "properties": {
         "workflow": {"type": "string", "description": "path of a workflow (UI) or API prompt .json file"},
         "gpu": {"type": "string", "description": "a card name, e.g. 'RTX 4090' (vram-budget cards)"},
         "ram_gib": {"type": "number", "description": "system RAM in GiB (default: this machine's)"},
         "models_dir": {"type": "string", "description": "ComfyUI's models folder, to read the files' headers"},
         "comfyui_version": {"type": "string", "description": "the ComfyUI version whose rules apply"},
         "flags": {"type": "array", "maxItems": MAX_FLAGS, "items": {"type": "string"},
                   "description": "more `vram-budget estimate` options, e.g. ['--lowvram']"}}}},
    {"name": "check_prompt",
     "description": "Ask a running ComfyUI whether a prompt fits now, on its card and its free memory "
                    "(POST /vram_budget/fits), before queueing it.",
     "inputSchema": {"type": "object", "additionalProperties": False, "properties": {
         "comfyui_url": _URL,
         "prompt": {"type": "object", "description": "the API prompt, as /prompt takes it"},
         "workflow": {"type": "string", "description": "or: a workflow / API prompt .json file to send"},
         "card": {"type": "string", "description": "judge it on this catalogue card instead of the machine's"}}}},
    {"name": "comfyui_memory",
     "description": "What holds memory in a running ComfyUI now: the card's free VRAM, the RAM, the models it "
                    "keeps loaded and other processes on the card (GET /vram_budget/status).",
     "inputSchema": {"type": "object", "additionalProperties": False, "properties": {"comfyui_url": _URL}}},
    {"name": "free_memory",
     "description": "Ask a running ComfyUI to unload its models and free its cached memory (its own POST /free); "
                    "it does so when the current prompt, if any, ends.",
     "inputSchema": {"type": "object", "additionalProperties": False, "properties": {
         "comfyui_url": _URL,
         "unload_models": {"type": "boolean", "description": "unload the models too (default true)"}}}},
]


class ToolError(ValueError):
    """A tool's clear refusal (bad arguments, ComfyUI unreachable): answered as isError, never a crash."""


def _string(args: dict, key: str, limit: int = 4096) -> str | None:
    v = args.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or not v.strip() or len(v) > limit:
        raise ToolError(f"'{key}' must be a non-empty string of at most {limit} characters")
    return v


def _base_url(args: dict) -> str:
    url = (_string(args, "comfyui_url", 500) or DEFAULT_URL).rstrip("/")
    parts = urllib.parse.urlparse(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolError(f"comfyui_url must be an http(s) address such as {DEFAULT_URL} (got {url[:80]!r})")
    return url


def _http(url: str, body: dict | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:  # noqa: S310  (scheme checked above)
            raw = resp.read(MAX_HTTP_BYTES + 1)
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode("utf-8", "replace")
        try:
            detail = json.loads(detail).get("error", detail)
        except (ValueError, AttributeError):
            pass
        hint = " (is comfyui-vram-budget installed in that ComfyUI?)" if exc.code == 404 else ""
        raise ToolError(f"{url}: HTTP {exc.code}: {str(detail)[:300]}{hint}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ToolError(f"{url}: ComfyUI is not reachable ({getattr(exc, 'reason', exc)})") from None
    if len(raw) > MAX_HTTP_BYTES:
        raise ToolError(f"{url}: answer over {MAX_HTTP_BYTES // 1024 // 1024} MiB")
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise ToolError(f"{url}: the answer is not JSON") from None


def _read_json_file(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(64 * 1024 * 1024 + 1)
    except OSError as exc:
        raise ToolError(f"{path}: {exc.strerror or exc}") from None
    if len(raw) > 64 * 1024 * 1024:
        raise ToolError(f"{path}: over 64 MiB, not a workflow")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ToolError(f"{path}: not valid JSON ({str(exc)[:120]})") from None


def summary(answer: dict) -> str:
    """One short paragraph of a fits answer, for the agent's text channel."""
    if not answer.get("complete"):
        head = "Can't tell: the estimate is incomplete"
    elif answer.get("fits"):
        head = "Runs, streaming weights (slower)" if answer.get("vram_verdict") == "runs_slower" else \
            f"Runs ({answer.get('verdict')})"
    else:
        head = f"Does not run as is ({answer.get('verdict')})"
    bits = [head]
    if answer.get("peak_bytes") is not None and answer.get("capacity_bytes"):
        bits.append(f"peak {fmt_gib(answer['peak_bytes'])} with every weight on the card, "
                    f"{fmt_gib(answer['capacity_bytes'])} usable")
    t = answer.get("time") or {}
    if t.get("run_seconds"):
        bits.append(f"about {t['run_seconds']:.0f} s a run")
    text = "; ".join(bits) + "."
    if answer.get("fixes"):
        text += " Fixes, cheapest first: " + "; ".join(answer["fixes"]) + "."
    if answer.get("assumptions"):
        text += f" Assumes: {answer['assumptions']}."
    return text


def tool_estimate_workflow(args: dict) -> dict:
    from .app import build_parser  # noqa: PLC0415  (the command line's own options and errors)

    argv = ["estimate", _string(args, "workflow") or "", "--json"]
    if not argv[1]:
        raise ToolError("'workflow' (a .json file path) is required")
    for key, flag in (("gpu", "--gpu"), ("models_dir", "--models-dir"), ("comfyui_version", "--comfyui-version")):
        if (v := _string(args, key, 500)) is not None:
            argv += [flag, v]
    if args.get("ram_gib") is not None:
        ram = args["ram_gib"]
        if isinstance(ram, bool) or not isinstance(ram, (int, float)) or not 0 < ram <= 65536:
            raise ToolError("'ram_gib' must be a number of GiB between 0 and 65536")
        argv += ["--ram", repr(float(ram))]
    flags = args.get("flags") or []
    if not isinstance(flags, list) or len(flags) > MAX_FLAGS or \
            not all(isinstance(f, str) and len(f) <= MAX_FLAG_CHARS for f in flags):
        raise ToolError(f"'flags' must be a list of at most {MAX_FLAGS} strings")
    argv += flags
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            parsed = build_parser().parse_args(argv)
            status = parsed.func(parsed)
        except SystemExit:  # argparse's refusal, its message is on err
            status = 2
    if status != 0 or not out.getvalue().strip():
        raise ToolError(err.getvalue().strip()[-600:] or "the estimate failed")
    budget = json.loads(out.getvalue())
    return fits_answer({"budget": budget})


def tool_check_prompt(args: dict) -> dict:
    url = _base_url(args)
    body: dict = {}
    if args.get("prompt") is not None:
        if not isinstance(args["prompt"], dict):
            raise ToolError("'prompt' must be an object (the API prompt)")
        body["prompt"] = args["prompt"]
    elif (path := _string(args, "workflow")) is not None:
        data = _read_json_file(path)
        if not isinstance(data, dict):
            raise ToolError(f"{path}: not a workflow or an API prompt")
        body["workflow" if "nodes" in data else "prompt"] = data
    else:
        raise ToolError("give 'prompt' (an API prompt object) or 'workflow' (a .json file path)")
    if (card := _string(args, "card", 100)) is not None:
        body["card"] = card
    answer = _http(url + "/vram_budget/fits", body)
    if not isinstance(answer, dict):
        raise ToolError(f"{url}: unexpected answer")
    return answer


def tool_comfyui_memory(args: dict) -> dict:
    url = _base_url(args)
    st = _http(url + "/vram_budget/status")
    if not isinstance(st, dict):
        raise ToolError(f"{url}: unexpected answer")
    keep = ("compute_device", "memory_mode", "devices", "ram", "models", "would_free", "queue_remaining", "busy",
            "cotenants", "admission", "leaks")
    return {k: st[k] for k in keep if k in st}


def tool_free_memory(args: dict) -> dict:
    url = _base_url(args)
    unload = args.get("unload_models", True)
    if not isinstance(unload, bool):
        raise ToolError("'unload_models' must be true or false")
    _http(url + "/free", {"unload_models": unload, "free_memory": True})
    return {"requested": True, "unload_models": unload,
            "note": "ComfyUI frees it between prompts: at once when idle, else when the current prompt ends"}


HANDLERS: dict[str, Callable[[dict], dict]] = {
    "estimate_workflow": tool_estimate_workflow, "check_prompt": tool_check_prompt,
    "comfyui_memory": tool_comfyui_memory, "free_memory": tool_free_memory,
}


def call_tool(name: str, args: dict) -> dict:
    """A tools/call result: the answer as structured content and a short text; a refusal as isError."""
    handler = HANDLERS.get(name)
    if handler is None:
        return {"content": [{"type": "text", "text": f"unknown tool {name!r}"}], "isError": True}
    try:
        data = handler(args)
    except ToolError as exc:
        return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
    text = summary(data) if "fits" in data else json.dumps(data)[:4000]
    return {"content": [{"type": "text", "text": text}], "structuredContent": data, "isError": False}


def _error(msg_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def handle(message: Any) -> dict | None:
    """One JSON-RPC message in, its response out (None for a notification)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return _error(message.get("id") if isinstance(message, dict) else None, -32600, "invalid request")
    method, msg_id, params = message["method"], message.get("id"), message.get("params") or {}
    if "id" not in message:  # a notification (notifications/initialized, cancelled ...): nothing to answer
        return None
    if not isinstance(params, dict):
        return _error(msg_id, -32602, "params must be an object")
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {"jsonrpc": "2.0", "id": msg_id, "result": {
            "protocolVersion": version, "capabilities": {"tools": {"listChanged": False}}, "serverInfo": SERVER_INFO,
            "instructions": "Ask estimate_workflow or check_prompt before queueing a ComfyUI prompt."}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": msg_id, "result": {}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": msg_id, "result": {"tools": TOOLS}}
    if method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(args, dict):
            return _error(msg_id, -32602, "tools/call needs a tool name and an arguments object")
        return {"jsonrpc": "2.0", "id": msg_id, "result": call_tool(name, args)}
    return _error(msg_id, -32601, f"method not found: {method[:100]}")


def _read_line(stream: BinaryIO) -> bytes | None:
    """The next line, or b"" for one over MAX_LINE_BYTES (its rest skipped); None at the end of the input."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
        while (more := stream.readline(MAX_LINE_BYTES)) and not more.endswith(b"\n"):
            pass
        return b""
    return line


def serve(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Answer messages until the input ends. Logs go to stderr: stdout carries only the protocol."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    while (line := _read_line(stdin)) is not None:
        if not line.strip():
            if line == b"":
                reply: dict | None = _error(None, -32600, f"message over {MAX_LINE_BYTES // 1024 // 1024} MiB")
            else:
                continue
        else:
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                message, reply = None, _error(None, -32700, "parse error: not JSON")
            else:
                try:
                    reply = handle(message)
                except Exception as exc:  # noqa: BLE001  (a bug answers as an error; the server keeps serving)
                    msg_id = message.get("id") if isinstance(message, dict) else None
                    reply = _error(msg_id, -32603, f"internal error: {type(exc).__name__}: {str(exc)[:200]}")
        if reply is not None:
            stdout.write(json.dumps(reply).encode() + b"\n")
            stdout.flush()
    return 0


def add_mcp_parser(subparsers) -> None:
    p = subparsers.add_parser("mcp", help="serve the Model Context Protocol on stdio (for agents)",
                              description="A Model Context Protocol server on stdin/stdout: estimate a workflow, "
                                          "check a prompt against a running ComfyUI, free its memory "
                                          "(docs/agent-api.md).")
    p.set_defaults(func=lambda args: serve())
