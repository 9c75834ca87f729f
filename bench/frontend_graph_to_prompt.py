"""Ask the real ComfyUI frontend to turn UI workflows into API prompts (`app.graphToPrompt()`).

This makes the "what the frontend would POST" fixtures of tests/fixtures/frontend/ and checks
that the example workflows load in a real frontend. It starts ComfyUI (`main.py --cpu`, a
temporary base directory) and headless Chromium, loads each workflow with
`app.loadGraphData`, and saves `graphToPrompt().output` next to the frontend version:

    COMFYUI_PATH=/work/comfy/a COMFYUI_PYTHON=/work/comfy/venv-a/bin/python \
    /work/comfy/venv-a/bin/python bench/frontend_graph_to_prompt.py \
        --out tests/fixtures/frontend tests/fixtures/ui/*.json example_workflows/*.json

Needs Playwright (in venv-a) and /usr/bin/chromium. Prints, per file, the node count of the
prompt and any error the frontend logged while loading.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def frontend_version(comfy: Path, python: str) -> str:
    out = subprocess.run([python, "-c", "import comfyui_frontend_package, importlib.metadata as m;"
                          "print(m.version('comfyui-frontend-package'))"], capture_output=True, text=True, cwd=comfy)
    return out.stdout.strip() or "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workflows", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    comfy = Path(os.environ.get("COMFYUI_PATH", "/work/comfy/a"))
    python = os.environ.get("COMFYUI_PYTHON", "/work/comfy/venv-a/bin/python")
    version = frontend_version(comfy, python)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="fe-g2p-") as base:
        for sub in ("custom_nodes", "user", "input", "output", "temp"):
            os.makedirs(os.path.join(base, sub), exist_ok=True)
        port = free_port()
        log = open(os.path.join(base, "comfy.log"), "w")
        server = subprocess.Popen([python, "main.py", "--cpu", "--listen", "127.0.0.1", "--port", str(port),
                                   "--base-directory", base, "--disable-auto-launch"],
                                  cwd=comfy, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(240):
                try:
                    urllib.request.urlopen(url + "/system_stats", timeout=2)
                    break
                except OSError:
                    time.sleep(0.5)
            else:
                raise SystemExit("ComfyUI did not start")
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
                page = browser.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(url, timeout=120_000)
                page.wait_for_function("() => window.app && window.app.graph", timeout=120_000)
                for path in args.workflows:
                    errors.clear()
                    workflow = json.loads(Path(path).read_text())
                    prompt = page.evaluate(
                        """async (wf) => {
                            await window.app.loadGraphData(wf, true, true, null);
                            const p = await window.app.graphToPrompt();
                            return p.output;
                        }""", workflow)
                    name = Path(path).stem
                    target = out_dir / f"{name}.api.json"
                    payload = {"_frontend": f"comfyui-frontend-package {version} app.graphToPrompt()",
                               "_source": str(path), "prompt": prompt}
                    target.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
                    print(f"{path}: {len(prompt)} nodes -> {target}" + (f"; page errors: {errors}" if errors else ""))
                browser.close()
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
