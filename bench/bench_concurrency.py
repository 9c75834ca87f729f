"""Thirty concurrent estimates while a prompt runs (issue 37), against a real ComfyUI on the CPU.

Starts ComfyUI (COMFYUI_PATH / COMFYUI_PYTHON, as the tests do) with this pack and a full-size SD VAE, then
runs the same real prompt (VAELoader -> EmptyLatentImage -> VAEDecode at SIZE px) ROUNDS times alone and
ROUNDS times while CLIENTS threads each POST /vram_budget/estimate (the Flux example, RTX 4090) as the prompt
starts, and a poller times GET /system_stats every 0.25 s. Prints, measured side by side in one run:
  - the prompt's wall time alone and under load (medians) and their ratio (target: <= 1.5x);
  - /system_stats latency under load (median and worst; target: worst < 2 s);
  - the estimate answers by status (target: no 5xx; 429 = "busy, ask again": routes.py ESTIMATE_SLOTS);
  - ComfyUI's resident memory before, at its highest, and 10 s after (target: it returns).
    COMFYUI_PATH=... COMFYUI_PYTHON=... python3 bench/bench_concurrency.py [--rounds 3] [--clients 30] [--size 512]
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import psutil  # noqa: E402

import comfy_harness as H  # noqa: E402
from helpers_models import write_vae  # noqa: E402

VAE = "bench_sd_vae.safetensors"
FLUX = json.loads((REPO / "example_workflows" / "flux_dev_1024.json").read_text())


def decode_prompt(size: int) -> dict:
    return {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": VAE}},
        "2": {"class_type": "EmptyLatentImage", "inputs": {"width": size, "height": size, "batch_size": 1}},
        "3": {"class_type": "VAEDecode", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
        "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}},
    }


def rss(server) -> int:
    try:
        proc = psutil.Process(server.proc.pid)
        return proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
    except psutil.Error:
        return 0


def run_prompt(server, size: int) -> float:
    t0 = time.perf_counter()
    status, data = server.request("POST", "/prompt", {"prompt": decode_prompt(size)})
    if status != 200:
        raise SystemExit(f"the prompt was refused: {data}")
    H.wait_idle(server, timeout=600)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--size", type=int, default=512)
    args = ap.parse_args()
    try:
        path, python = H.comfy_paths()
    except BaseException as exc:  # comfy_paths skips (pytest) when COMFYUI_PATH is not set
        print(f"needs a ComfyUI: set COMFYUI_PATH and COMFYUI_PYTHON ({exc})")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        base = H.make_base(Path(tmp))
        write_vae(base / "models" / "vae" / VAE, "kl4", "F16", scale=1)
        server = H.ComfyServer(path, python, base)
        try:
            version = server.request("GET", "/system_stats")[1]["system"]["comfyui_version"]
            run_prompt(server, args.size - 8)  # warm: the VAE loads, the estimator's tables are read
            server.request("POST", "/vram_budget/estimate", {"workflow": FLUX, "card": "RTX 4090"}, timeout=120)
            alone, loaded, stats_ms = [], [], []
            codes: collections.Counter = collections.Counter()
            rss_before = rss(server)
            rss_peak = rss_before
            sizes = iter(range(args.size, args.size + 64 * 8 * args.rounds, 8))  # a new size: no cache hit
            for _ in range(args.rounds):
                alone.append(run_prompt(server, next(sizes)))
            for _ in range(args.rounds):
                done = threading.Event()

                def estimate():
                    status, _ = server.request("POST", "/vram_budget/estimate", {"workflow": FLUX, "card": "RTX 4090"},
                                               timeout=120)
                    codes[status] += 1

                def poll():
                    nonlocal rss_peak
                    while not done.is_set():
                        t0 = time.perf_counter()
                        server.request("GET", "/system_stats", timeout=30)
                        stats_ms.append(1000 * (time.perf_counter() - t0))
                        rss_peak = max(rss_peak, rss(server))
                        time.sleep(0.25)

                poller = threading.Thread(target=poll)
                poller.start()
                clients = [threading.Thread(target=estimate) for _ in range(args.clients)]
                t0 = time.perf_counter()
                status, data = server.request("POST", "/prompt", {"prompt": decode_prompt(next(sizes))})
                for c in clients:
                    c.start()
                H.wait_idle(server, timeout=600)
                loaded.append(time.perf_counter() - t0)
                for c in clients:
                    c.join()
                done.set()
                poller.join()
            time.sleep(10)
            rss_after = rss(server)
        finally:
            server.stop()
    a, b = statistics.median(alone), statistics.median(loaded)
    worst = max(stats_ms) if stats_ms else float("nan")
    print(f"ComfyUI {version} on the CPU; prompt: VAE decode {args.size} px (full-size SD VAE), {args.rounds} rounds; "
          f"{args.clients} concurrent estimates (Flux dev example, RTX 4090) per round")
    print(f"prompt alone:        median {a:6.2f} s  ({', '.join(f'{x:.2f}' for x in alone)})")
    print(f"prompt under load:   median {b:6.2f} s  ({', '.join(f'{x:.2f}' for x in loaded)})  ratio {b / a:.2f}x "
          f"(target <= 1.5x)")
    print(f"/system_stats:       median {statistics.median(stats_ms):6.0f} ms, worst {worst:.0f} ms over "
          f"{len(stats_ms)} calls (target: worst < 2000 ms)")
    print(f"estimate answers:    {dict(sorted(codes.items()))} (429 = busy, ask again; target: no 5xx)")
    print(f"ComfyUI memory:      {rss_before / 2**20:.0f} MiB before, {rss_peak / 2**20:.0f} MiB at most, "
          f"{rss_after / 2**20:.0f} MiB 10 s after")
    ok = b / a <= 1.5 and worst < 2000 and not any(s >= 500 for s in codes)
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
