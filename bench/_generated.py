"""The tail every bench/gen_*.py table writer shares: write the generated text, or with --check compare it with the
committed file (exit 1 when it is out of date)."""
from __future__ import annotations

from pathlib import Path


def write_or_check(out, text: str, check: bool, wrote: str) -> int:
    """Write ``text`` to ``out`` and print ``wrote``; with ``check``, print whether the committed file is ``text``
    and return 1 when it is not."""
    out = Path(out)
    if check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{out} is out of date")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    print(wrote)
    return 0
