#!/usr/bin/env python3
"""How long "ask ComfyUI itself" takes (nodes/comfy_trace.py), on this machine's CPU.

    COMFYUI_PATH=... COMFYUI_PYTHON=... python3 bench/bench_live_trace.py [--repeat 3]

For each model (full-size headers written sparse, as tests do): a cold worker's start, the first
detect and the first trace of an unseen model at the prompt's shape (a diffusion forward, or a VAE
decode through comfy.sd.VAE), then the same answers from the cache. Medians of --repeat runs, each with a fresh worker and an empty cache. No GPU is used.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from helpers_models import spec_flux, spec_vae_kl, spec_wan, write_safetensors  # noqa: E402

from vram_budget.nodes.comfy_trace import LiveTracer, tensor_list  # noqa: E402
from vram_budget.nodes.estimator.files import inspect_file  # noqa: E402

CASES = {  # name: (spec, latent [B, C, (T,) H, W], text tokens)
    "Flux.1 dev 1024x1024": (lambda: spec_flux("BF16"), [1, 16, 128, 128], 512),
    "Wan 2.1 1.3B 832x480x33": (lambda: spec_wan("1.3b"), [1, 16, 9, 60, 104], 512),
}
VAE_CASES = {  # name: (spec, latent [B, C, (T,) H, W]) traced with comfy.sd.VAE's decode
    "Flux VAE decode 1024x1024": (lambda: spec_vae_kl(z=16, scale=1, quant_conv=False, dtype="F32"), [1, 16, 128, 128]),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root, python = os.environ.get("COMFYUI_PATH"), os.environ.get("COMFYUI_PYTHON")
    if not root or not python:
        print("set COMFYUI_PATH and COMFYUI_PYTHON (a ComfyUI checkout and its interpreter)", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="vb-live-bench-")
    tensors = {}
    for name, (spec, *_) in {**CASES, **VAE_CASES}.items():
        path = os.path.join(tmp, name.replace(" ", "_") + ".safetensors")
        write_safetensors(path, spec(), sparse=True)
        tensors[name] = tensor_list(inspect_file(path))
    rows: dict[str, list[float]] = {}
    for r in range(args.repeat):
        tracer = LiveTracer(root, python=python, cache_path=os.path.join(tmp, f"cache{r}.json"), timeout_s=600)
        t0 = time.perf_counter()
        first = next(iter(CASES))
        tracer.detect(tensors[first])
        rows.setdefault("worker start + first detect (cold)", []).append(time.perf_counter() - t0)
        for name, (_, latent, text) in CASES.items():
            t0 = time.perf_counter()
            res = tracer.trace(tensors[name], latent, text)
            if res is None:
                print(f"{name}: trace failed: {tracer.last_error}", file=sys.stderr)
                return 1
            rows.setdefault(f"first trace, {name} (unseen)", []).append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            tracer.detect(tensors[name])
            tracer.trace(tensors[name], latent, text)
            rows.setdefault(f"cached detect + trace, {name}", []).append(time.perf_counter() - t0)
        for name, (_, latent) in VAE_CASES.items():
            t0 = time.perf_counter()
            found = tracer.detect(tensors[name])
            res = tracer.trace_vae(tensors[name], latent)
            if res is None or found.get("kind") != "vae":
                print(f"{name}: VAE trace failed: {tracer.last_error}", file=sys.stderr)
                return 1
            rows.setdefault(f"first detect + trace, {name} (unseen)", []).append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            tracer.detect(tensors[name])
            tracer.trace_vae(tensors[name], latent)
            rows.setdefault(f"cached detect + trace, {name}", []).append(time.perf_counter() - t0)
        tracer.close()
    print(f"ComfyUI at {root}; {args.repeat} runs each, fresh worker and cache per run")
    print(f"{'what':58s} {'median':>10s} {'min':>10s} {'max':>10s}")
    for what, values in rows.items():
        print(f"{what:58s} {statistics.median(values):9.3f}s {min(values):9.3f}s {max(values):9.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
