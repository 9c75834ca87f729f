#!/usr/bin/env python3
"""Working memory of older ComfyUI model code: the same tracer (bench/trace_working_memory.py) run on ComfyUI
trees from before each change that lowered a family's peak, written to nodes/estimator/data/working_memory_eras.json.
The estimator uses an era's constants for a ComfyUI release before that era's end (physics/memory.py era_factor).

Wan (comfy/ldm/wan/model.py): PR #9898 "Reduce Peak WAN inference VRAM usage" (merged 2025-09-17, first in
0.3.60) and PR #10062 "part II" (2025-09-28, first in 0.3.61). Traced at the commit before #9898, at #9898, at
#10062 and at the newest stored commit (0.3.64); 0.8.0's own constants are working_memory.json's.

Run with ComfyUI's interpreter (torch needed) and a clone of ComfyUI (`fetch github:Comfy-Org/ComfyUI`):

    python bench/trace_working_memory_eras.py /work/.mirror/Comfy-Org+ComfyUI/repo
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "nodes" / "estimator" / "data" / "working_memory_eras.json"
ARCHS = "wan2.1-14b,wan2.1-1.3b,wan2.2-ti2v-5b"
# (commit, the release it is the code of, the first release after it changed)
TREES = (
    ("e42682b2^", "0.3.59", "0.3.60", "before PR #9898"),
    ("e42682b2", "0.3.60", "0.3.61", "PR #9898, before #10062"),
    ("653ceab4", "0.3.61", None, "PR #10062"),
)
# The newest stored commit (0.3.64) traces as #10062 for every Wan family but the 14B, whose figure fell again
# before 0.8.0 (working_memory.json); the release in between is not known: 0.3.64's figure is kept up to 0.8.0.
LAST = ("HEAD", "0.3.64", "0.8.0", "newest stored commit; the change to 0.8.0's figure came after it")
FAMILY_OF = {  # traced architecture -> the working-memory keys whose block code it is (comfy/ldm/wan/model.py)
    "wan2.1-14b": ["wan2.1-14b", "wan2.2-14b"],
    "wan2.1-1.3b": ["wan2.1-1.3b"],
    "wan2.2-ti2v-5b": ["wan2.2-ti2v-5b"],
}


def tree(repo: str, rev: str, dest: str) -> str:
    git = ["git", "--git-dir", repo] if Path(repo, "HEAD").is_file() else ["git", "-C", repo]
    commit = subprocess.run(git + ["rev-parse", rev], capture_output=True, text=True, check=True).stdout.strip()
    names = subprocess.run(git + ["ls-tree", "-r", "--name-only", commit], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    for name in names:
        if not name.endswith((".py", ".json", ".txt", ".yaml")) or name.endswith("tokenizer.json"):
            continue
        data = subprocess.run(git + ["show", f"{commit}:{name}"], capture_output=True).stdout
        path = Path(dest, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return commit


def main() -> int:
    repo = sys.argv[1]
    eras: dict[str, list] = {}
    for rev, release, before, what in (*TREES, LAST):
        with tempfile.TemporaryDirectory() as d:
            commit = tree(repo, rev, d)
            out = Path(d, "wm.json")
            subprocess.run([sys.executable, str(REPO / "bench" / "trace_working_memory.py"), "--out", str(out),
                            "--only", ARCHS, "--variants", ""], env={**os.environ, "COMFYUI_PATH": d}, check=True,
                           cwd=REPO, stdout=subprocess.DEVNULL)
            data = json.loads(out.read_text())
        for arch, entry in data["architectures"].items():
            eras.setdefault(arch, []).append({
                "release": release, "before": before, "what": what, "coefficients": entry["coefficients"],
                "formula": entry["formula"], "max_rel_error": entry.get("max_rel_error"), "points": len(entry["points"]),
                "provenance": {"comfyui_version": release, "comfyui_commit": commit[:10],
                               "comfyui_source": "github:Comfy-Org/ComfyUI (the search tool's stored snapshot)",
                               "torch_version": data["provenance"].get("torch_version"),
                               "tracer": "bench/trace_working_memory.py via bench/trace_working_memory_eras.py"}})
    # a later era with the same constants as 0.8.0's needs no entry; "before" None: the era ends where the next begins
    current = json.loads((REPO / "nodes" / "estimator" / "data" / "working_memory.json").read_text())["architectures"]
    out = {}
    for arch, rows in eras.items():
        kept = [r for r in rows if r["coefficients"] != current[arch]["coefficients"]]
        for r, nxt in zip(kept, kept[1:] + [None]):
            r["before"] = r["before"] or (nxt["release"] if nxt else "0.8.0")
        out[arch] = kept
    OUT.write_text(json.dumps({
        "about": "Working memory of older ComfyUI model code (bench/trace_working_memory_eras.py): for a ComfyUI "
                 "release before an era's `before`, that era's traced constants replace working_memory.json's "
                 "(physics/memory.py era_factor); `applies_to`: the working-memory keys that share the traced "
                 "architecture's block code",
        "applies_to": FAMILY_OF, "architectures": out}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: " + ", ".join(f"{a} {len(r)} eras" for a, r in out.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
