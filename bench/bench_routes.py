"""Latency of the panel's GET /vram_budget/status (target: < 5 ms median), beside ComfyUI's own
GET /system_stats as a reference, against a running ComfyUI.

    python bench/bench_routes.py --url http://127.0.0.1:8188 [--n 500] [--models]
    COMFYUI_PATH=... COMFYUI_PYTHON=... python bench/bench_routes.py      # starts a --cpu server

Without --url it starts ComfyUI (--cpu) with this pack through the test harness
(tests/comfy/conftest.py); --models first loads a real-architecture SD VAE so the status lists a
loaded model. Requests go over one keep-alive HTTP connection, as the panel's polling does.
Prints medians and percentiles in milliseconds; no pass/fail.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]


def timings(url: str, route: str, n: int, warmup: int = 20) -> list[float]:
    parsed = urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port or 80, timeout=30)
    out = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        conn.request("GET", route)
        resp = conn.getresponse()
        body = resp.read()
        dt = (time.perf_counter() - t0) * 1000
        if resp.status != 200:
            raise SystemExit(f"{route}: HTTP {resp.status}: {body[:200]!r}")
        if i >= warmup:
            out.append(dt)
    conn.close()
    return out


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def start_server(load_model: bool):
    sys.path.insert(0, str(REPO / "tests"))
    import comfy_harness as harness  # noqa: PLC0415  (tests/comfy_harness.py)

    path = os.environ.get("COMFYUI_PATH")
    if not path:
        raise SystemExit("give --url of a running ComfyUI, or set COMFYUI_PATH/COMFYUI_PYTHON to start one")
    python = os.environ.get("COMFYUI_PYTHON") or sys.executable
    base = harness.make_base(Path(tempfile.mkdtemp(prefix="vram_bench_")))
    if load_model:
        sys.path.insert(0, str(REPO / "tests"))
        from helpers_models import write_vae  # noqa: PLC0415

        write_vae(base / "models" / "vae" / "bench_vae.safetensors", "kl4", "F16", scale=1)
    server = harness.ComfyServer(Path(path), python, base)
    if load_model:
        prompt = {
            "1": {"class_type": "VAELoader", "inputs": {"vae_name": "bench_vae.safetensors"}},
            "2": {"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}},
            "3": {"class_type": "VAEDecode", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
            "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}},
        }
        server.request("POST", "/prompt", {"prompt": prompt})
        harness.wait_idle(server)
    return server, harness.comfy_version(Path(path))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a running ComfyUI, e.g. http://127.0.0.1:8188")
    ap.add_argument("--n", type=int, default=500, help="timed requests per route (default 500)")
    ap.add_argument("--models", action="store_true", help="when starting a server: load a VAE first")
    args = ap.parse_args(argv)

    server = None
    version = "?"
    url = args.url
    if not url:
        server, version = start_server(args.models)
        url = server.url
    try:
        parsed = urlparse(url)
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port or 80, timeout=30)
        conn.request("GET", "/api/vram_budget/status")
        status = json.loads(conn.getresponse().read())
        conn.close()
        print(f"ComfyUI {version} at {url}: cuda={status['cuda']} devices={len(status['devices'])} "
              f"models={len(status['models'])} (server-side build time {status.get('elapsed_ms')} ms)")
        rows = []
        for route in ("/api/vram_budget/status", "/system_stats", "/api/vram_budget/last_oom"):
            t = timings(url, route, args.n)
            rows.append((route, statistics.median(t), pct(t, 0.9), pct(t, 0.99), min(t)))
        ref = rows[1][1]
        print(f"{'route':28} {'median ms':>10} {'p90':>8} {'p99':>8} {'min':>8} {'vs /system_stats':>17}")
        for route, med, p90, p99, lo in rows:
            print(f"{route:28} {med:10.3f} {p90:8.3f} {p99:8.3f} {lo:8.3f} {med / ref:16.2f}x")
        target = rows[0][1]
        print(f"status median {target:.3f} ms: {'within' if target < 5 else 'OVER'} the 5 ms target")
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
