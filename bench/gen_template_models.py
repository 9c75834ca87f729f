"""Generate nodes/estimator/data/template_models.json: the size of every model file the official
ComfyUI workflow templates publish in their notes, with its download address and folder.

Every local-model template carries a "Model Links" note (a MarkdownNote) listing its files as
``[name](url) (12.34 GB)``, and its loaders' ``properties.models`` give each file's ComfyUI folder
(``directory``). The figure is the Hugging Face size in binary units labelled "GB"/"MB" (checked on
the files the hand catalogue sizes from other sources: the median of note / catalogue is 1.0000
with the note read as GiB, 0.931 read as GB; tests/test_template_models.py keeps that check), so
bytes = value x 2**30 (GB) or 2**20 (MB), to the note's rounding (+- 0.005 GiB).

    python3 bench/gen_template_models.py [--site SITE_PACKAGES] [--out FILE] [--check]

--site reads the templates installed in another environment; --check only compares with the
file and exits 1 when it is out of date. The estimator uses the table after its hand catalogue
(catalogue.py), so a file any template names has a published size without a line typed by hand.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from workflows import templates  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

OUT = ROOT / "nodes" / "estimator" / "data" / "template_models.json"
LINK = re.compile(r"\[([^\]\n]+?\.(?:safetensors|sft|gguf|ckpt|pt|pth|bin))\]\((https?://[^)\s]+)\)"
                  r"\s*\(\s*([\d][\d,]*(?:\.\d+)?)\s*([KMGT])i?B\s*\)", re.IGNORECASE)
UNIT = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
FOLDERS = ("diffusion_models", "checkpoints", "text_encoders", "vae", "loras", "controlnet", "clip_vision",
           "upscale_models", "model_patches", "audio_encoders", "latent_upscale_models", "unet", "clip",
           "style_models", "gligen", "hypernetworks", "photomaker", "embeddings", "vae_approx")


def _folder_from_url(url: str) -> str | None:
    parts = url.split("?")[0].split("/")[:-1]
    for part in reversed(parts):
        if part in FOLDERS:
            return {"unet": "diffusion_models", "clip": "text_encoders"}.get(part, part)
    return None


def collect(site: Path | None = None) -> dict:
    sizes: dict[str, Counter] = {}
    urls: dict[str, str] = {}
    where: dict[str, str] = {}
    folders: dict[str, str] = {}
    for t in templates.load_templates(site):
        for node in templates.all_nodes(t.workflow):
            for model in (node.get("properties") or {}).get("models") or []:
                if isinstance(model, dict) and model.get("name") and model.get("directory"):
                    folders.setdefault(model["name"], model["directory"])
            values = node.get("widgets_values")
            for value in values if isinstance(values, list) else ():
                if not isinstance(value, str) or "](" not in value:
                    continue
                for name, url, number, unit in LINK.findall(value):
                    name = name.strip().rsplit("/", 1)[-1]
                    text = f"{number} {unit.upper()}B"
                    sizes.setdefault(name, Counter())[text] += 1
                    urls.setdefault(name, url)
                    where.setdefault(name, t.name)
    files = {}
    for name in sorted(sizes, key=str.lower):
        text, _ = sizes[name].most_common(1)[0]
        number, unit = text.split()
        entry = {"bytes": int(round(float(number.replace(",", "")) * UNIT[unit[0]])), "size": text,
                 "folder": folders.get(name) or _folder_from_url(urls[name]), "url": urls[name],
                 "template": where[name]}
        if len(sizes[name]) > 1:
            entry["other_sizes"] = sorted(s for s in sizes[name] if s != text)
        files[name] = entry
    versions = templates.package_versions(site)
    package = "comfyui-workflow-templates-json"
    return {"source": f"{package} {versions.get(package, '?')}: the templates' Model Links notes "
                      "(size in binary units as the note prints it; bytes = value x 2**30 for GB, 2**20 for MB)",
            "generated_by": "bench/gen_template_models.py", "files": files}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, help="site-packages folder holding the template packages")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with --out; exit 1 when it differs")
    args = ap.parse_args(argv)
    if not templates.template_dirs(args.site):
        print("no template package installed (pip install comfyui-workflow-templates-json)", file=sys.stderr)
        return 2
    table = collect(args.site)
    text = json.dumps(table, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    return write_or_check(args.out, text, args.check,
                          f"{args.out}: {len(table['files'])} files from {table['source'].split(':')[0]}")


if __name__ == "__main__":
    sys.exit(main())
