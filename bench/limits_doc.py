"""docs/limits.md, generated: every bound on what a request, a workflow, a file or a flag may ask,
with its value read from the code (the module's own constant, by parsing it: no ComfyUI or torch
import) and what happens past it. `python3 bench/limits_doc.py --write` rewrites the page;
tests/test_limits_doc.py fails when the page and the code disagree."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "limits.md"
UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}

# (where a user meets it, module file, constant, what it bounds, what happens past it)
LIMITS = (
    ("Panel and routes", "nodes/routes.py", "MAX_BODY_BYTES", "a request body", "refused with 413 and the size"),
    ("Panel and routes", "nodes/routes.py", "MAX_PROMPT_NODES", "nodes of a prompt or workflow sent to the panel's routes", "refused with 400 naming the count"),
    ("Panel and routes", "nodes/routes.py", "MAX_EXTRA_CARDS", "extra cards of an estimate (\"+ card\": cuda:1 ...)", "refused with 400 naming the bound"),
    ("Panel and routes", "nodes/routes.py", "MAX_OOM_MESSAGE_CHARS", "characters of an out-of-memory message to explain", "the head and the tail are read"),
    ("Panel and routes", "nodes/routes.py", "MAX_OOM_PROMPT_NODES", "nodes of the prompt sent with an OOM message", "refused with 400 naming the count"),
    ("Panel and routes", "nodes/routes.py", "MAX_ANSWER_STRING", "characters of one string in an answer (a model name)", "cut, with an ellipsis"),
    ("Panel and routes", "nodes/routes.py", "RUNS_MAX_LIMIT", "runs one /runs request asks for", "refused with 400 naming the range"),
    ("Panel and routes", "nodes/routes.py", "ESTIMATE_SLOTS", "estimates running or waiting at once", "answered 429 (busy): the panel asks again"),
    ("Panel and routes", "nodes/routes.py", "ESTIMATE_TIMEOUT_S", "seconds a request waits for its estimate", "answered 504 with the reason"),
    ("Panel and routes", "nodes/routes.py", "ACTION_WAIT_S", "seconds an unload / free waits for ComfyUI to do it", "answered 202: scheduled, not yet measured"),
    ("Run log", "nodes/run_log.py", "MAX_LOG_BYTES", "bytes of user/vram_budget/runs.jsonl", "rotated to runs.1.jsonl (one older file kept)"),
    ("Run log", "nodes/run_log.py", "MAX_RECORD_BYTES", "bytes of one run record", "versions, notes, label dropped in that order (said in the record)"),
    ("Run log", "nodes/run_log.py", "MAX_FIELD_CHARS", "characters of one text field of a record", "cut"),
    ("Run log", "nodes/run_log.py", "MAX_ITEMS", "items of one list field of a record", "the rest counted"),
    ("Run log", "nodes/run_log.py", "MAX_PACKS", "custom node packs recorded per run", "the rest counted in custom_nodes_omitted"),
    ("Run log", "nodes/run_log.py", "KEY_MAX_NODES", "nodes of a prompt given a workflow key", "no key: the run is not compared with earlier ones"),
    ("Run log", "nodes/run_log.py", "REGRESSION_SCAN", "newest records the regression guard reads", "older ones are not compared"),
    ("Live tracing", "nodes/comfy_trace.py", "DEFAULT_TIMEOUT_S", "seconds one live trace may take", "the shipped tables answer, said"),
    ("Live tracing", "nodes/comfy_trace.py", "IDLE_EXIT_S", "seconds the trace worker waits for a request", "it exits (it holds torch, about 1 GB of RAM)"),
    ("Live tracing", "nodes/comfy_trace.py", "IDLE_CLOSE_S", "seconds ComfyUI keeps an idle worker", "it is closed; the next estimate starts one"),
    ("Live tracing", "nodes/comfy_trace.py", "FAIL_TTL_S", "seconds a failed trace is remembered", "retried after that"),
    ("Live tracing", "nodes/comfy_trace.py", "MAX_CACHE_ENTRIES", "traced shapes (and failures) kept", "the oldest dropped"),
    ("The node", "nodes/budget_node.py", "LIVE_WAIT_S", "seconds the node waits for a live trace", "the shipped tables answer, said"),
    ("Watching the machine", "nodes/admission.py", "HOLD_POLL_S", "seconds between two checks of a held prompt", "the worker is answered 'nothing yet' and asks again"),
    ("Watching the machine", "nodes/admission.py", "LIVE_WAIT_S", "seconds a held prompt's first judgement waits for live tracing", "the shipped tables answer"),
    ("Watching the machine", "nodes/admission.py", "MAX_EVENTS", "admission events kept (held, started, fixed ...)", "the oldest dropped"),
    ("Watching the machine", "nodes/admission.py", "MAX_SCAN", "processes read for the largest RAM holders", "the rest not read"),
    ("Watching the machine", "nodes/cotenants.py", "MAX_PROCESSES", "processes on one card named", "the rest not named (their memory still counted)"),
    ("Watching the machine", "nodes/cotenants.py", "SMI_TIMEOUT_S", "seconds nvidia-smi may take", "no answer from it: nothing named"),
    ("Watching the machine", "nodes/cotenants.py", "MAX_MANIFESTS", "Ollama manifests searched for a runner's model", "the blob's name is shown"),
    ("Watching the machine", "nodes/leaks.py", "WINDOW", "runs a creep is judged over", "older runs are not in the judgement"),
    ("Agents (MCP)", "nodes/estimator/cli/mcp_server.py", "MAX_LINE_BYTES", "bytes of one JSON-RPC message", "answered with an error, skipped; the server keeps serving"),
    ("Agents (MCP)", "nodes/estimator/cli/mcp_server.py", "MAX_FLAGS", "extra estimate options of one tool call", "the call is refused (isError)"),
    ("Agents (MCP)", "nodes/estimator/cli/mcp_server.py", "HTTP_TIMEOUT_S", "seconds a call waits for ComfyUI", "the call is refused: not reachable"),
    ("Agents (MCP)", "nodes/estimator/cli/mcp_server.py", "MAX_HTTP_BYTES", "bytes of ComfyUI's answer read", "the call is refused, naming the size"),
    ("Workflows", "nodes/estimator/graph/__init__.py", "MAX_TYPES", "node types of one workflow looked up in ComfyUI's own definitions", "the rest stay unknown (the estimate says so)"),
    ("Workflows", "nodes/comfy_bridge/prompts.py", "MAX_LIVE_SPECS", "node definitions read from ComfyUI for one estimate", "the rest stay unknown (the estimate says so)"),
    ("Workflows", "nodes/estimator/graph/base.py", "MAX_EXPANDED_NODES", "nodes visited while flattening subgraphs", "an error naming the node reached"),
    ("Workflows", "nodes/estimator/graph/base.py", "MAX_CHAIN", "links followed from a sampler to its loader (LoRA stacks)", "an error naming the node"),
    ("Workflows", "nodes/estimator/graph/base.py", "MAX_DEPTH", "nodes followed upstream from one input", "that input is unknown (the estimate says it cannot tell)"),
    ("Workflows", "nodes/estimator/graph/base.py", "MAX_RESOLUTION", "width, height, length (ComfyUI's own MAX_RESOLUTION)", "an error naming the node: ComfyUI would refuse it too"),
    ("Workflows", "nodes/estimator/graph/base.py", "MAX_NUMBER", "any number a widget holds", "not used, with a note naming the node and input"),
    ("Workflows", "nodes/estimator/plan/capacity.py", "MAX_STEPS", "steps of a size the --max search tries", "the largest tried is given"),
    ("Model files", "nodes/estimator/files.py", "MAX_HEADER_BYTES", "bytes of a safetensors header (as comfy.utils and safetensors)", "an error naming the file"),
    ("Model files", "nodes/estimator/files.py", "MAX_TENSORS", "tensors of one file", "an error naming the file"),
    ("Model files", "nodes/estimator/files.py", "MAX_DIMS", "dimensions of one tensor", "an error naming the file and tensor"),
    ("Model files", "nodes/estimator/files.py", "MAX_ELEMENTS", "elements of one tensor", "an error naming the file and tensor"),
    ("Model files", "nodes/estimator/files.py", "MAX_CACHED_TENSORS", "tensors of read headers kept in memory", "the header cache is emptied and refilled"),
    ("Command line", "nodes/estimator/cli/cli_estimate.py", "MAX_GPUS", "cards of one machine (--gpus, --vram a,b)", "an error"),
    ("Command line", "nodes/estimator/cli/cli_estimate.py", "MAX_WORKERS", "machines of --workers", "an error"),
    ("Command line", "nodes/estimator/cli/cli_estimate.py", "MAX_NODE_PACKS", "--node-pack flags", "an error"),
    ("Command line", "nodes/estimator/cli/cli_estimate.py", "MAX_RAM_GIB", "GiB of --ram / --swap", "an error"),
    ("Command line", "nodes/estimator/cli/cli_estimate.py", "MAX_CARD_GB", "GB of a card given as --vram", "an error"),
    ("Multi-GPU plan", "nodes/estimator/plan/placement_plan.py", "MAX_ASSIGNMENTS", "loader-to-card assignments tried one by one", "small models follow the diffusion model; past that a greedy pass, biggest first"),
    ("Multi-GPU plan", "nodes/estimator/plan/placement_plan.py", "SEARCH_SECONDS", "seconds the plan search runs", "the best so far, with a note"),
    ("OOM diagnosis", "nodes/estimator/plan/oom.py", "MAX_MESSAGE_CHARS", "characters of a pasted error read", "the head and the tail are read"),
    ("OOM diagnosis", "nodes/estimator/plan/oom.py", "MAX_FAMILIES", "models and families of an OOM's context", "the rest left out"),
    ("Evidence", "nodes/estimator/plan/evidence.py", "MAX_RECORD_CHARS", "characters of one published-outcome record", "the record fails validation, naming it"),
)


def constant(path: str, name: str):
    """The value of a module-level `NAME = expr` in path, evaluated with only the unit names."""
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return eval(compile(ast.Expression(node.value), path, "eval"), {"__builtins__": {}}, dict(UNITS))  # noqa: S307 (own source, units only)
    raise KeyError(f"{path}: no module-level {name}")


def shown(value) -> str:
    if isinstance(value, float) and value.is_integer() and value < 1e6:
        return f"{int(value)}"
    if isinstance(value, int) and value >= 1024**2 and value % 1024**2 == 0:
        return f"{value // 1024**2:,} MiB ({value:,} bytes)"
    if isinstance(value, float):
        return f"{value:g}"
    return f"{value:,}"


def document() -> str:
    out = ["# Limits",
           "",
           "Every bound on what a request, a workflow, a model file or a flag may ask, so that no input can crash or",
           "stall ComfyUI, the panel or the command line. Past a bound the answer says so, naming the file or node;",
           "nothing is dropped silently. Generated from the code by `bench/limits_doc.py` (values read from the",
           "constants named here); `tests/test_limits_doc.py` keeps it current.",
           ""]
    group = None
    for where, path, name, what, past in LIMITS:
        if where != group:
            out += ["", f"## {where}", "", "| bound | value | past it | constant |", "|---|---|---|---|"]
            group = where
        out.append(f"| {what} | {shown(constant(path, name))} | {past} | `{path}` {name} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    text = document()
    if "--write" in sys.argv:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC.relative_to(REPO)} ({len(LIMITS)} bounds)")
    else:
        print(text)
