"""The short answers for agents: `fits_answer` (POST /vram_budget/fits and the MCP server's tools share it, so an
agent gets one answer wherever it asks). Schema: docs/agent-api.md."""
from __future__ import annotations

# The answer of POST /vram_budget/fits (issue 35, for agents): its fields, stable; docs/agent-api.md has the schema
FITS_FIELDS = ("fits", "verdict", "vram_verdict", "host_outcome", "complete", "peak_bytes", "capacity_bytes",
               "ram_peak_bytes", "ram_total_bytes", "time", "risk", "fixes", "free_now", "assumptions", "card",
               "device_note")
MAX_FIXES = 5


def fits_answer(result: dict, free_now: dict | None = None) -> dict:
    """The agent's short answer from run_estimate's result: will it run here (the card and system RAM), how
    long, the risk, the cheapest fixes, and what is free now. `fits` is True only on a complete estimate whose
    card and RAM both run it; never on a guess."""
    b = result.get("budget") or {}
    host = b.get("host") or {}
    verdict = b.get("verdict", "unknown")
    card = b.get("vram_verdict") or verdict
    complete = bool(b.get("complete"))
    runs = card in ("fits", "tight", "runs_slower") and b.get("host_outcome") in (None, "fits", "swapping",
                                                                                   "thrashing", "assumed")
    fixes = [r.get("title") for r in (b.get("remedies") or []) if isinstance(r, dict) and r.get("title")]
    fixes += [r.get("title") for r in (host.get("remedies") or []) if isinstance(r, dict) and r.get("title")]
    risk = b.get("oom_risk") or {}
    return {
        "fits": bool(complete and runs), "verdict": verdict, "vram_verdict": card,
        "host_outcome": b.get("host_outcome"), "complete": complete, "peak_bytes": b.get("peak_bytes"),
        "capacity_bytes": (b.get("device") or {}).get("capacity_bytes"), "ram_peak_bytes": b.get("ram_peak_bytes"),
        "ram_total_bytes": b.get("ram_total_bytes"), "time": b.get("time"),
        "risk": {"level": risk.get("level", "unknown"), "basis": list(risk.get("basis") or [])[:3]},
        "fixes": fixes[:MAX_FIXES] if verdict != "fits" else [], "free_now": free_now or {},
        "assumptions": b.get("assumptions", ""), "card": (b.get("device") or {}).get("name"),
        "device_note": result.get("device_note"),
    }
