"""The date of every ComfyUI release in a git history: data/comfyui_releases.json, which the evidence replay reads
to replay a record that states no version with the ComfyUI of its date (evidence_replay.era).

Each release is dated by the commit that set comfyui_version.py to it. Needs a clone of ComfyUI
(the search tool's `fetch github:Comfy-Org/ComfyUI` stores one; its history ends where the stored snapshot does).

    python3 bench/gen_comfyui_releases.py /work/.mirror/Comfy-Org+ComfyUI/repo
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "comfyui_releases.json"


def main() -> int:
    repo = sys.argv[1]
    git = ["git", "--git-dir", repo] if repo.endswith(".git") or Path(repo, "HEAD").is_file() else ["git", "-C", repo]
    log = subprocess.run(git + ["log", "--reverse", "--date=short", "--format=%H %ad", "--", "comfyui_version.py"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    first: dict[str, tuple[str, str]] = {}
    for line in log:
        if not line.strip():
            continue
        commit, date = line.split()
        text = subprocess.run(git + ["show", f"{commit}:comfyui_version.py"], capture_output=True, text=True).stdout
        m = re.search(r'__version__\s*=\s*"([0-9.]+)"', text)
        if m and m.group(1) not in first:
            first[m.group(1)] = (date, commit[:10])
    head = subprocess.run(git + ["log", "-1", "--date=short", "--format=%ad %H"], capture_output=True, text=True,
                          check=True).stdout.split()
    releases = sorted(first.items(), key=lambda kv: kv[1][0])
    OUT.write_text(json.dumps({
        "about": "ComfyUI releases and the date comfyui_version.py first named each (bench/gen_comfyui_releases.py); "
                 "the evidence replay's ComfyUI of a record's date where the record states none",
        "history_ends": head[0], "history_head": head[1][:10],
        "releases": [{"version": v, "date": d, "commit": c} for v, (d, c) in releases],
    }, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(releases)} releases, {releases[0][0]} ({releases[0][1][0]}) to {releases[-1][0]} "
          f"({releases[-1][1][0]}); history ends {head[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
