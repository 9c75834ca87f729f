"""What the VRAM Budget node adds to a prompt, in a real ComfyUI (target: < 50 ms).

Starts ComfyUI (COMFYUI_PATH / COMFYUI_PYTHON, as the tests) with full-size Flux dev, T5-XXL,
CLIP-L and VAE headers over holes, queues the Flux pipeline with the node six times and prints the
node's own timing from ComfyUI's log (first run: headers read from disk; then cached).

    COMFYUI_PATH=... COMFYUI_PYTHON=... python3 bench/bench_budget_node.py
"""
from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE.parent / "tests" / "comfy")]

import comfy_harness as harness  # noqa: E402  (tests/comfy_harness.py: ComfyServer, make_base)
import test_budget_node as flux  # noqa: E402  (flux_prompt, run_prompt)
from helpers_models import spec_clip_text, spec_flux, spec_t5, spec_vae_kl, write_safetensors  # noqa: E402


def main() -> None:
    comfy = Path(os.environ["COMFYUI_PATH"])
    python = os.environ.get("COMFYUI_PYTHON", sys.executable)
    base = harness.make_base(Path(tempfile.mkdtemp()))
    models = base / "models"
    write_safetensors(models / "diffusion_models" / "flux1-dev.safetensors", spec_flux("BF16"), sparse=True)
    write_safetensors(models / "text_encoders" / "t5xxl_fp16.safetensors", spec_t5(dtype="F16"), sparse=True)
    write_safetensors(models / "text_encoders" / "clip_l.safetensors", spec_clip_text(), sparse=True)
    write_safetensors(models / "vae" / "ae.safetensors", spec_vae_kl(z=16), sparse=True)
    server = harness.ComfyServer(comfy, python, base)
    try:
        for _ in range(6):
            flux.run_prompt(server, flux.flux_prompt({"gpu": "RTX 4090"}))
        runs = [float(x) for x in re.findall(r"\[VRAM Budget\] estimated in ([\d.]+) ms", server.log())]
    finally:
        server.stop()
    print(f"ComfyUI {harness.comfy_version(comfy)}: node time per prompt (ms): {runs}")
    print(f"first (headers from disk): {runs[0]:.1f} ms; then median {statistics.median(runs[1:]):.1f} ms; "
          f"target < 50 ms: {'OK' if max(runs) < 50 else 'MISSED'}")


if __name__ == "__main__":
    main()
