"""Header-only inspection speed: does it stay flat as files grow, and how fast is a models/ tree?

    python bench/bench_inspect.py [--repeat 25] [--keep DIR]

1. A 20 GB safetensors file (header written, data a sparse hole) against a ~200 KB file with the
   same tensor names: median cold inspection of each, side by side, and their ratio. "Cold" = the
   inspector's cache cleared and the file's pages dropped from the OS page cache
   (posix_fadvise DONTNEED), so the header is read from disk again.
2. A 100-file ComfyUI models/ tree with full-size real headers (Flux, Wan, T5, CLIP, SDXL, VAEs,
   LoRAs; GGUF files with the real Flux key set): cold describe() of every file (target < 300 ms)
   and warm (cached headers, < 20 ms), plus inspect_file alone.
3. Cold inspection against loading with safetensors.numpy.load_file (what a weights-reading tool
   would do; torch is not needed): the ~200 KB file, and a ~90 MB file with real data.
Prints numbers; asserts nothing. The machine's load shows in the numbers: the load average is
printed with them.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import helpers_models as hm  # noqa: E402
from vram_budget.nodes.estimator.families import describe  # noqa: E402
from vram_budget.nodes.estimator.files import clear_cache, inspect_file, iter_model_files  # noqa: E402


def drop_page_cache(paths) -> None:
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Times(list):
    """Wall-clock seconds, with the process CPU seconds alongside (robust when other jobs share the CPUs)."""

    cpu: list[float]


def timed(fn, repeat: int, before=None) -> Times:
    out = Times()
    out.cpu = []
    for _ in range(repeat):
        if before:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out.append(time.perf_counter() - t0)
        out.cpu.append(time.process_time() - c0)
    return out


def ms(xs) -> str:
    cpu = getattr(xs, "cpu", None)
    extra = f" (cpu {statistics.median(cpu) * 1e3:.1f})" if cpu else ""
    return f"{statistics.median(xs) * 1e3:8.3f} ms{extra}"


def big_and_small(root: str):
    """Same tensor names: ~20 GB (sparse) and ~200 KB."""
    big_spec = hm.spec_wan("14b", "t2v", "F16", layers=28)
    div = 64
    while True:  # shrink every dimension until the file is about 200 KB
        small = {k: (dt, tuple(max(1, d // div) for d in shape)) for k, (dt, shape) in big_spec.items()}
        if hm.spec_bytes(small) <= 200_000:
            break
        div = int(div * 1.25)
    big = hm.write_safetensors(os.path.join(root, "big_20GB.safetensors"), big_spec, sparse=True)
    small_w = hm.write_safetensors(os.path.join(root, "small_200KB.safetensors"), small)
    return big, small_w


def models_tree(root: str) -> list[str]:
    t = os.path.join(root, "models")
    made = []

    def w(rel, spec, sparse=True):
        made.append(hm.write_safetensors(os.path.join(t, rel), spec, sparse=sparse).path)

    full = {
        "diffusion_models/flux1-dev.safetensors": hm.spec_flux(),
        "diffusion_models/flux1-schnell.safetensors": hm.spec_flux(schnell=True),
        "diffusion_models/flux1-dev-fp8.safetensors": hm.spec_flux("F8_E4M3"),
        "diffusion_models/wan2.1_t2v_14B_fp16.safetensors": hm.spec_wan("14b", "t2v", "F16"),
        "diffusion_models/wan2.1_i2v_480p_14B_fp16.safetensors": hm.spec_wan("14b", "i2v", "F16"),
        "diffusion_models/wan2.1_t2v_1.3B_fp16.safetensors": hm.spec_wan("1.3b", "t2v", "F16"),
        "diffusion_models/wan2.2_ti2v_5B_fp16.safetensors": hm.spec_wan("5b", "ti2v", "F16"),
        "diffusion_models/wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors": hm.spec_wan("14b", "t2v", "F8_E4M3"),
        "diffusion_models/wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors": hm.spec_wan("14b", "t2v", "F8_E4M3"),
        "text_encoders/t5xxl_fp16.safetensors": hm.spec_t5(False, "F16"),
        "text_encoders/t5xxl_fp8_e4m3fn.safetensors": hm.spec_t5(False, "F8_E4M3"),
        "text_encoders/umt5_xxl_fp16.safetensors": hm.spec_t5(True, "F16"),
        "text_encoders/clip_l.safetensors": hm.spec_clip_text(),
        "text_encoders/clip_g.safetensors": hm.spec_clip_text(32, 1280),
        "unet/sdxl_unet.safetensors": hm.spec_unet("sdxl"),
        "unet/sd15_unet.safetensors": hm.spec_unet("sd15"),
        "vae/ae.safetensors": hm.spec_vae_kl(16, "F32", quant_conv=False),
        "vae/sdxl_vae.safetensors": hm.spec_vae_kl(4, "F32"),
        "vae/wan_2.1_vae.safetensors": hm.spec_vae_wan("2.1", scale=1),
        "vae/wan2.2_vae.safetensors": hm.spec_vae_wan("2.2", scale=1),
        "clip_vision/clip_vision_h.safetensors": hm.spec_clip_vision(scale=1),
        "text_encoders/qwen_2.5_vl_7b.safetensors": hm.spec_llm("qwen2.5-vl-7b", scale=1),
    }
    for rel, spec in full.items():
        w(rel, spec)
    i = 0
    while len(made) < 90:  # LoRAs make up the bulk of a real models folder
        target, style = [("flux", "kohya"), ("flux", "diffusers"), ("wan14b", "comfy"), ("sdxl", "kohya")][i % 4]
        w(f"loras/{target}_{style}_{i:02d}.safetensors", hm.spec_lora(target, style, rank=16 * (1 + i % 4), blocks=19),
          sparse=True)
        i += 1
    for j in range(10):  # GGUF: the real Flux key set (19 double + 38 single blocks), small widths
        made.append(hm.write_gguf_flux(os.path.join(t, f"unet/flux1-dev-Q{4 + j % 5}_{j}.gguf"),
                                       ["Q4_0", "Q8_0", "Q5_K", "Q6_K", "Q4_K"][j % 5], scale=12,
                                       double=19, single=38).path)
    return made


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=25)
    ap.add_argument("--keep", help="build the files here and keep them")
    args = ap.parse_args(argv)
    root = args.keep or tempfile.mkdtemp(prefix="vram-budget-bench-")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    os.makedirs(root, exist_ok=True)
    try:
        big, small = big_and_small(root)
        print(f"files: big {os.path.getsize(big.path) / 1e9:.2f} GB (sparse, {len(big.spec)} tensors), "
              f"small {os.path.getsize(small.path) / 1e3:.0f} KB ({len(small.spec)} tensors)")

        def cold(path):
            return lambda: (clear_cache(), drop_page_cache([path]))

        tb, ts = Times(), Times()
        tb.cpu, ts.cpu = [], []
        for _ in range(args.repeat):  # interleaved, so a busy machine slows both alike
            for acc, path in ((tb, big.path), (ts, small.path)):
                one = timed(lambda: inspect_file(path), 1, cold(path))
                acc += one
                acc.cpu += one.cpu
        print(f"1. cold inspect_file, median of {args.repeat}: 20 GB {ms(tb)} | 200 KB {ms(ts)} | "
              f"ratio big/small {statistics.median(tb) / statistics.median(ts):.2f}x")

        files = models_tree(root)
        tree = os.path.join(root, "models")
        total = sum(os.path.getsize(p) for p in files)
        print(f"2. models tree: {len(files)} files, {total / 1e9:.0f} GB apparent size")

        def all_describe():
            for p in iter_model_files(tree):
                describe(p)

        def all_inspect():
            for p in iter_model_files(tree):
                inspect_file(p)

        def cold_all():
            clear_cache()
            drop_page_cache(files)

        rep = max(5, args.repeat // 3)
        c_desc = timed(all_describe, rep, cold_all)
        c_insp = timed(all_inspect, rep, cold_all)
        h_desc = timed(all_describe, rep, clear_cache)  # OS page cache warm, inspector cache empty
        all_describe()
        w_desc = timed(all_describe, rep)
        w_insp = timed(all_inspect, rep)
        print(f"   cold describe (inspect + identify) {ms(c_desc)}  (target < 300 ms; min {min(c_desc) * 1e3:.1f})")
        print(f"   cold inspect_file only             {ms(c_insp)}  (min {min(c_insp) * 1e3:.1f})")
        print(f"   describe, OS cache warm            {ms(h_desc)}  (inspector cache cleared; min {min(h_desc) * 1e3:.1f})")
        print(f"   warm describe (cached headers)     {ms(w_desc)}  (target < 20 ms)")
        print(f"   warm inspect_file only             {ms(w_insp)}")

        from safetensors.numpy import load_file

        tl = timed(lambda: load_file(small.path), args.repeat, lambda: drop_page_cache([small.path]))
        print(f"3. small file: cold inspect_file {ms(ts)} | safetensors.numpy.load_file {ms(tl)} | "
              f"ratio load/inspect {statistics.median(tl) / statistics.median(ts):.1f}x")
        mid = hm.write_safetensors(os.path.join(root, "flux_scaled_F16.safetensors"), hm.spec_flux("F16", scale=16))
        rep = max(5, args.repeat // 4)
        ti = timed(lambda: inspect_file(mid.path), rep, cold(mid.path))
        tl = timed(lambda: load_file(mid.path), rep, lambda: drop_page_cache([mid.path]))
        print(f"   {os.path.getsize(mid.path) / 1e6:.0f} MB file (real data): cold inspect_file {ms(ti)} | "
              f"load_file {ms(tl)} | ratio load/inspect {statistics.median(tl) / statistics.median(ti):.0f}x")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
