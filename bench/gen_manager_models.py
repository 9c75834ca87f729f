"""Generate nodes/estimator/data/manager_models.json: the published size of every model file ComfyUI-Manager's
model list offers for download (its model-list.json: file name, ComfyUI folder, size, type, base model, URL).

ComfyUI-Manager's "Model Manager" installs these files into ComfyUI's model folders, so a workflow shared by its
users names them: ControlNets, control-LoRAs, IP-Adapters, CLIP vision, upscalers, LoRAs. The size is the one the
list states ("2.50GB", "774.4MB", "4.71MB"), in decimal units (GB = 10^9 bytes, MB = 10^6, KB = 10^3), to its
rounding (three or four significant figures; tests/test_manager_models.py checks the units against the files the
hand catalogue sizes exactly). A "save_path" of "default" is the folder of the entry's type (Manager's
get_model_dir: upscale -> upscale_models, checkpoint -> checkpoints, ...). Entries whose URL is a placeholder
("<huggingface>") or whose size is missing are left out.

    python3 bench/gen_manager_models.py MODEL_LIST_JSON --commit SHA [--out FILE] [--check]

MODEL_LIST_JSON is model-list.json from a checkout of Comfy-Org/ComfyUI-Manager (the table records the commit).
--check compares with the committed file and exits 1 when it is out of date. The estimator reads the table after
its hand catalogue and the templates' published sizes (models/published.py manager_info).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "nodes" / "estimator" / "data" / "manager_models.json"
UNITS = {"KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9}
# ComfyUI-Manager's default folder per model type (manager_core.get_model_dir, "default" save paths)
DEFAULT_FOLDER = {"checkpoint": "checkpoints", "checkpoints": "checkpoints", "unclip": "checkpoints",
                  "lora": "loras", "VAE": "vae", "upscale": "upscale_models", "clip": "text_encoders",
                  "text_encoders": "text_encoders", "clip_vision": "clip_vision", "controlnet": "controlnet",
                  "T2I-Adapter": "controlnet", "T2I-Style": "controlnet", "diffusion_model": "diffusion_models",
                  "unet": "diffusion_models", "embedding": "embeddings", "IP-Adapter": "ipadapter",
                  "gligen": "gligen", "TAESD": "vae_approx"}
LEGACY = {"unet": "diffusion_models", "clip": "text_encoders"}  # folder_paths.map_legacy
MAX_ENTRIES = 5000


def size_bytes(text: str) -> int | None:
    m = re.fullmatch(r"\s*([\d.]+)\s*(KB|MB|GB)\s*", str(text or ""))
    return int(round(float(m.group(1)) * UNITS[m.group(2)])) if m else None


def build(models: list[dict], source: str) -> dict:
    files = []
    for m in models[:MAX_ENTRIES]:
        name, save, url = m.get("filename") or "", m.get("save_path") or "", m.get("url") or ""
        nbytes = size_bytes(m.get("size"))
        if not name or nbytes is None or not url.startswith("http") or "/" in name or "\\" in name:
            continue
        parts = [p for p in save.replace("\\", "/").split("/") if p]
        if not parts or parts == ["default"]:
            folder, sub = DEFAULT_FOLDER.get(m.get("type", "")), []
        else:
            folder, sub = parts[0], parts[1:]
        if not folder:
            continue
        files.append({"folder": LEGACY.get(folder, folder), "path": "/".join(sub + [name]), "bytes": nbytes,
                      "size": m.get("size"), "type": m.get("type", ""), "base": m.get("base", ""),
                      "name": m.get("name", ""), "url": url})
    files.sort(key=lambda f: (f["folder"], f["path"].lower(), f["url"]))
    return {"source": source, "units": "decimal (GB = 10^9 bytes)", "files": files}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model_list")
    ap.add_argument("--commit", required=True, help="the ComfyUI-Manager commit the file was read at")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    models = json.loads(Path(args.model_list).read_text(encoding="utf-8")).get("models", [])
    table = build(models, f"Comfy-Org/ComfyUI-Manager@{args.commit} model-list.json")
    text = json.dumps(table, indent=1, ensure_ascii=False) + "\n"
    return write_or_check(args.out, text, args.check, f"{len(table['files'])} files from {len(models)} entries -> "
                                                       f"{args.out}")


if __name__ == "__main__":
    sys.exit(main())
