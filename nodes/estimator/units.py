"""Units: bytes are ints inside; GiB (PyTorch's unit in its OOM messages) at the edges."""
from __future__ import annotations

import re

KiB = 1024
MiB = 1024**2
GiB = 1024**3
GB = 1000**3  # decimal GB: model cards and FACTS.md weight sizes


def gib(n_bytes: int | float) -> float:
    return n_bytes / GiB


def fmt_gib(n_bytes: int | float, signed: bool = False) -> str:
    """'12.34 GiB' with two decimals, as PyTorch prints memory."""
    value = n_bytes / GiB
    return f"{value:+.2f} GiB" if signed else f"{value:.2f} GiB"


def fmt_mib(n_bytes: int | float) -> str:
    """'1,234 MiB', whole MiB with thousands separators (working memory of the small utility models)."""
    return f"{n_bytes / MiB:,.0f} MiB"


def fmt_params(params: int) -> str:
    if params >= 10**9:
        return f"{params / 1e9:.2f}B"
    if params >= 10**6:
        return f"{params / 1e6:.1f}M"
    if params >= 10**3:
        return f"{params / 1e3:.1f}K"
    return str(params)


_CITATION = re.compile(r"\s*\((?:[^()]*?\b[\w./-]+\.(?:py|md|js|json)(?::[\d:, /-]+)?[^()]*|COMFYUI-[A-Z]+ §[\d.]+[^()]*)\)")
_BARE = re.compile(r"\s*(?:[\w/-]+\.py:\d[\d:, /-]*|COMFYUI-(?:NOTES|RUNTIME) §[\d.]+)")


def user_words(text: str) -> str:
    """A sentence without the code citations it carries for --json and the docs: "(model_management.py:621-706)",
    "(FACTS.md)", "COMFYUI-NOTES §3.2" go; what they cite stays in --json (issue 31: user words in the panel)."""
    out = _CITATION.sub("", str(text))
    out = _BARE.sub("", out)
    return re.sub(r"\s{2,}", " ", out).replace(" ;", ";").replace(" ,", ",").strip()
