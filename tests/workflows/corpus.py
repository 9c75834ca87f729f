"""Where the community corpus is: the workflow JSON files tests/workflows/community/SOURCES.md lists.

They are third-party data, kept out of this repository: bench/fetch_corpus.py rebuilds them into
tests/workflows/community/, and the workplace keeps a copy beside the checkout in
../shared/corpus/community/ (what CI reads). VRAM_BUDGET_CORPUS names another folder.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "tests" / "workflows" / "community"
SHARED = REPO.parent / "shared" / "corpus" / "community"


def community_dir() -> Path:
    """The first of $VRAM_BUDGET_CORPUS, tests/workflows/community, ../shared/corpus/community that holds
    workflow JSON files (the local folder when none does: the tests then say how to fetch it)."""
    env = os.environ.get("VRAM_BUDGET_CORPUS")
    for folder in ([Path(env)] if env else []) + [LOCAL, SHARED]:
        if folder.is_dir() and any(folder.glob("*.json")):
            return folder
    return LOCAL
