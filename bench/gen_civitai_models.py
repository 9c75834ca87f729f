"""Generate nodes/estimator/data/civitai_models.json: the base model and published size of every checkpoint file
Civitai listed in a snapshot of its API (dfanr/CivitaiModelList: one JSON record a model, as Civitai's
/api/v1/models returns it, 4,531 checkpoints saved 2023-07-04).

Community workflows name Civitai fine-tunes ("revAnimated_v122.safetensors", "realisticVisionV51_v51VAE"), whose
names say nothing of their base model. Civitai states it per version ("baseModel": "SD 1.5") and names each file
itself: "<model name>_<version name>.<ext>" in camel case, with its size ("sizeKB") and precision
("metadata.fp"). Two tables come out:
- "files": file name (lower case) -> [family, bytes, precision, Civitai model id] for every model file
  (types "Model" / "Pruned Model") of a version whose base model maps to a family here (SD 1.4 / 1.5: sd15;
  SD 2.x: sd2); "Other" and unknown bases are left out;
- "keys": a model key -> [family, Civitai model id, model name]: the file name's first part with its version
  tail cut ("realisticVisionV51" -> "realisticvision"), kept only when the files of the models sharing it are of
  one family and the key is at least 6 letters, so a later version of the same model (V6.0, released after
  the snapshot) is still named: a family, not a size. Files of a version Civitai labels "Other" (no base model
  stated) may be up to a tenth of a key's; a key with files of two families is left out.

    python3 bench/gen_civitai_models.py MIRROR_GIT_DIR [--out FILE] [--check]

MIRROR_GIT_DIR is a git directory of dfanr/CivitaiModelList (the table records its HEAD commit). --check
compares with the committed file and exits 1 when it is out of date. Read by models/published.py civitai_info.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "nodes" / "estimator" / "data" / "civitai_models.json"
FAMILY = {"SD 1.4": "sd15", "SD 1.5": "sd15", "SD 2.0": "sd2", "SD 2.0 768": "sd2", "SD 2.1": "sd2",
          "SD 2.1 768": "sd2", "SD 2.1 Unclip": "sd2"}
MODEL_FILES = {"Model", "Pruned Model"}
EXTENSIONS = (".safetensors", ".ckpt", ".pt", ".bin")
MAX_RECORD_BYTES = 8 << 20  # one model's record; a larger one is skipped
MIN_KEY_LETTERS = 6
SHARE = 0.9  # a key's files of its one family, at least; the rest Civitai's "Other" (no base model stated)


def model_key(file_name: str) -> str:
    """The estimator's own key function (models/published.civitai_key): one contract for writer and reader."""
    from vram_budget.nodes.estimator.models.published import civitai_key  # noqa: PLC0415
    return civitai_key(file_name)


def records(git_dir: str):
    """Each checkpoint record of the mirror, parsed (git cat-file --batch: no work tree needed)."""
    listing = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "--name-only", "HEAD",
                              "models/Checkpoint/"], capture_output=True, check=True).stdout.decode()
    paths = [p for p in listing.split("\0") if p.endswith(".json")]
    proc = subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        for path in paths:
            proc.stdin.write(f"HEAD:{path}\n".encode())
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] != b"blob":
                continue
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)
            if size <= MAX_RECORD_BYTES:
                try:
                    yield json.loads(data)
                except ValueError:
                    continue
    finally:
        proc.stdin.close()
        proc.wait()


def build(models, source: str) -> dict:
    files: dict[str, list] = {}
    keys: dict[str, dict] = {}
    named: dict[str, tuple] = {}
    for m in models:
        if m.get("type") != "Checkpoint":
            continue
        for v in m.get("modelVersions") or []:
            family = FAMILY.get(v.get("baseModel") or "")
            for f in v.get("files") or []:
                name = (f.get("name") or "").strip()
                if f.get("type") not in MODEL_FILES or not name.lower().endswith(EXTENSIONS) or "/" in name:
                    continue
                key = model_key(name)
                if len(re.sub(r"[^a-z]", "", key)) >= MIN_KEY_LETTERS:
                    counts = keys.setdefault(key, {})
                    counts[family] = counts.get(family, 0) + 1
                    named.setdefault(key, (m.get("id"), m.get("name") or ""))
                if family is None:
                    continue
                nbytes = int(round(float(f.get("sizeKB") or 0) * 1024))
                fp = ((f.get("metadata") or {}).get("fp") or "").lower() or None
                entry = [family, nbytes, fp, m.get("id")]
                if files.setdefault(name.lower(), entry) != entry:
                    files[name.lower()] = [family, None, None, m.get("id")]  # same name, other figures: no size
    unanimous = {}
    for k, counts in sorted(keys.items()):
        known = {f: n for f, n in counts.items() if f is not None}
        if len(known) == 1 and sum(known.values()) >= SHARE * sum(counts.values()):
            unanimous[k] = [next(iter(known)), *named[k]]
    return {"source": source, "units": "sizeKB x 1024 bytes (Civitai's API)",
            "families": {"sd15": "SD 1.4 / SD 1.5", "sd2": "SD 2.0 / 2.1 (512 and 768)"},
            "files": dict(sorted(files.items())), "keys": unanimous}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("git_dir")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    commit = subprocess.run(["git", "--git-dir", args.git_dir, "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    table = build(records(args.git_dir), f"dfanr/CivitaiModelList@{commit} (Civitai API records, 2023-07-04)")
    text = json.dumps(table, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
    text = text.replace('],"', '],\n"') + "\n"
    return write_or_check(args.out, text, args.check,
                          f"{len(table['files'])} files, {len(table['keys'])} model keys -> {args.out}")


if __name__ == "__main__":
    sys.exit(main())
