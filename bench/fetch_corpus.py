#!/usr/bin/env python3
"""Rebuild the community workflow corpus (tests/workflows/community/*.json) from git mirrors.

The corpus is third-party data (see the licence column of SOURCES.md) and is kept out of git
(tests/workflows/community/.gitignore ignores *.json); only its manifest, SOURCES.md, is committed.
This script reads the "## Files" table of SOURCES.md (file | repository | path | commit | ...) and
writes every file byte-exact as it is at that commit:

- `git show <commit>:<path>` for the JSON files;
- for a path ending in `.png` (comfyanonymous/ComfyUI_examples), the PNG's `workflow` tEXt chunk
  (the UI workflow ComfyUI's SaveImage embeds), its bytes written out unchanged.

Getting the mirrors: in the development environment, the `fetch` tool with source
"github:owner/name" for each repository of the table gives a git directory at
/work/.mirror/owner+name/repo; then

    python3 bench/fetch_corpus.py --mirror-root /work/.mirror

Elsewhere, `git clone https://github.com/owner/name ROOT/owner+name` for each of them (a full clone:
the commits are old ones) and pass --mirror-root ROOT, or name each one:
--mirror owner/name=PATH. Exit status 1 when any file could not be written.
"""
import argparse
import json
import pathlib
import re
import struct
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "workflows" / "community"

# Other repositories that hold a repository's commit (SOURCES.md, "Sources and their snapshots"):
# the store's snapshot of kijai/ComfyUI-WanVideoWrapper is old, and the files were taken from the
# fork rookiestar28/ComfyUI-WanVideoWrapper at kijai's own commit 088128b2... (only upstream
# history up to it). A clone of kijai's repository works as well.
FORKS = {"kijai/ComfyUI-WanVideoWrapper": ["rookiestar28/ComfyUI-WanVideoWrapper"]}


def read_table(sources):
    """(file, repository, path, commit prefix) for each row of the "## Files" table."""
    text = sources.read_text(encoding="utf-8").split("\n## Files", 1)[1]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].endswith(".json"):
            rows.append((cells[0], cells[1], cells[2], cells[3].split()[0]))
    return rows


def mirror_dirs(repo, root, explicit):
    """Candidate git directories for a repository: explicit ones first, then under --mirror-root."""
    owner, name = repo.split("/")
    out = [pathlib.Path(explicit[repo])] if repo in explicit else []
    if root:
        for sub in (f"{owner}+{name}/repo", f"{owner}+{name}", f"{owner}/{name}"):
            if (root / sub).is_dir():
                out.append(root / sub)
    return out


def git(gitdir, *args):
    return subprocess.run(["git", "-C", str(gitdir), *args], capture_output=True, check=True).stdout


def png_text_chunk(data, keyword=b"workflow"):
    """Bytes of the PNG tEXt chunk with this keyword, as stored (None when there is none)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"tEXt" and body.split(b"\0", 1)[0] == keyword:
            return body.split(b"\0", 1)[1]
        if kind == b"IEND":
            break
        pos += 12 + length
    return None


def fetch_one(repo, path, prefix, root, explicit):
    """(bytes, None) or (None, why)."""
    repos = [repo] + FORKS.get(repo, [])
    dirs = [d for r in repos for d in mirror_dirs(r, root, explicit)]
    if not dirs:
        return None, f"no mirror of {' or '.join(repos)}"
    for gitdir in dirs:
        try:
            commit = git(gitdir, "rev-parse", "--verify", "-q", f"{prefix}^{{commit}}").decode().strip()
        except subprocess.CalledProcessError:
            continue
        try:
            data = git(gitdir, "show", f"{commit}:{path}")
        except subprocess.CalledProcessError:
            return None, f"{path} not at {commit[:12]} in {gitdir}"
        if path.endswith(".png"):
            data = png_text_chunk(data)
            if data is None:
                return None, f"no 'workflow' tEXt chunk in {path}"
        return data, None
    return None, f"commit {prefix} in none of {', '.join(map(str, dirs))}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror-root", type=pathlib.Path, help="folder of mirrors (owner+name/repo, owner+name or owner/name)")
    ap.add_argument("--mirror", action="append", default=[], metavar="OWNER/NAME=PATH", help="one repository's git directory")
    ap.add_argument("--sources", type=pathlib.Path, default=CORPUS / "SOURCES.md")
    ap.add_argument("--out", type=pathlib.Path, default=CORPUS)
    args = ap.parse_args()
    explicit = dict(m.split("=", 1) for m in args.mirror)
    if not args.mirror_root and not explicit:
        ap.error("give --mirror-root or --mirror")

    rows = read_table(args.sources)
    written, missing = [], []
    for file, repo, path, prefix in rows:
        if not re.fullmatch(r"[0-9a-f]{7,40}", prefix):
            missing.append((file, f"bad commit cell {prefix!r}"))
            continue
        data, why = fetch_one(repo, path, prefix, args.mirror_root, explicit)
        if data is not None:
            try:
                json.loads(data)
            except ValueError as e:
                data, why = None, f"not JSON: {e}"
        if data is None:
            missing.append((file, why))
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / file).write_bytes(data)
        written.append(file)

    print(f"{len(rows)} rows in {args.sources}: {len(written)} written to {args.out}, {len(missing)} missing")
    for file, why in missing:
        print(f"  missing {file}: {why}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
