"""The `vram-budget` command line and the answers for agents (wing 9, the top: nothing in the estimator imports it).

- app: the entry (`main`), `inspect`; cli_estimate: `estimate`; cli_llm: `llm` / `train`
- requirements: `requirements`; workers: several machines; evidence_replay: the evidence base re-run
- agent, mcp_server: the fits answer and the MCP server
"""


def main(argv=None) -> int:
    """The console script's entry (pyproject: vram_budget.nodes.estimator.cli:main)."""
    from .app import main as run  # noqa: PLC0415  (the face stays light: app imports the whole estimator)
    return run(argv)
