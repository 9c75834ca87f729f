"""Benchmark: VAE Decode (Auto Tiled) vs ComfyUI's VAEDecode and VAEDecodeTiled, on CPU.

    COMFYUI_PATH=/work/comfy/a /work/comfy/venv-a/bin/python bench/bench_vae_decode.py [--rounds 5] [--quick]
    ... bench/bench_vae_decode.py --scenario third [--side 96] [--third-rounds 2]   (issue 12, item 7 only;
        about 4 minutes on 2 idle CPU cores at 768 px)

Everything runs in ComfyUI's own code (the pack is loaded the way ComfyUI loads custom nodes) on
real, full-width VAEs with random weights (seeded; see tests/comfy/test_vae_decode.py).

0. A third of the memory (issue 12, item 7): the one-go decode's live-tensor peak is measured
   (simulated card, below), then the node gets a third of it as a TYPED memory_budget_gb (safety
   margin left at its default: a typed budget is the budget) on a simulated card of that size, and
   runs interleaved with VAEDecode in one go. Target: median at most 1.5x the one-go median,
   without a simulated out-of-memory error. Prints the tiles chosen and the planner's prediction.

Two more questions, three more scenarios:

1. Memory is plentiful: is the node as fast as VAEDecode? (target: median within 3 %). Variants
   run interleaved round after round (so load from other processes hits all of them alike);
   medians are compared.
2. Memory is short: a "simulated card" (``SimulatedCard``, a TorchDispatchMode) counts live tensor
   bytes allocated during the call, like ``torch.cuda.memory_allocated()`` above the weights, and
   raises ``torch.OutOfMemoryError`` at the op that would exceed its capacity. ComfyUI's
   ``VAEDecode`` therefore runs its real try-then-fallback path: the full attempt runs until the
   allocation that does not fit (wasted time measured, not assumed), then its default tiles
   (64-latent tiles for images; 256 px tiles and all frames for video). The node gets the same
   capacity through its memory_budget_gb input and must never trigger the simulated error.

Peak memory on the CPU: tracemalloc does not see torch's allocator, so two figures are printed:
``sim peak`` (the live-tensor peak the simulated card counted: what a GPU's
max_memory_allocated would show) and ``RSS peak`` (the process's resident-set high-water mark,
reset before each run through /proc/self/clear_refs and read from VmHWM; includes allocator slack
and weights already resident, so it is shown as the increase over the RSS before the run).
Attention runs through ComfyUI's pytorch_attention (NVIDIA's default; fused SDPA on the CPU too),
as in the trace behind the memory model.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GiB = 1024**3


def setup(comfy_path: str):
    sys.path.insert(0, comfy_path)
    os.chdir(comfy_path)
    sys.argv = [sys.argv[0], "--cpu"]
    import comfy.options  # noqa: PLC0415

    comfy.options.enable_args_parsing()
    import logging  # noqa: PLC0415

    logging.basicConfig(level=logging.WARNING)
    import comfy.model_management  # noqa: F401, PLC0415
    import nodes  # noqa: PLC0415

    ok = nodes.load_custom_node(str(REPO))
    if asyncio.iscoroutine(ok):
        ok = asyncio.run(ok)
    if not ok:
        raise SystemExit("the pack failed to load")
    pack = sys.modules[str(REPO).replace(".", "_x_")]
    return (nodes, sys.modules[pack.__name__ + ".nodes.vae_decode"],
            sys.modules[pack.__name__ + ".nodes.estimator.physics.vae_memory"])


# ----------------------------------------------------------------------------------------------
def random_vae(kind: str):
    import torch  # noqa: PLC0415

    import comfy.sd  # noqa: PLC0415
    from comfy.ldm.modules.diffusionmodules.model import pytorch_attention  # noqa: PLC0415

    if kind == "flux":
        from comfy.ldm.models.autoencoder import AutoencodingEngine  # noqa: PLC0415

        dd = {'double_z': True, 'z_channels': 16, 'resolution': 256, 'in_channels': 3, 'out_ch': 3, 'ch': 128,
              'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0}
        factory = lambda: AutoencodingEngine(  # noqa: E731
            regularizer_config={'target': "comfy.ldm.models.autoencoder.DiagonalGaussianRegularizer"},
            encoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Encoder", 'params': dd},
            decoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Decoder", 'params': dd})
        out_key = "decoder.conv_out.weight"
    else:
        import comfy.ldm.wan.vae as wan  # noqa: PLC0415

        cfg = {"dim": 96, "z_dim": 16, "dim_mult": [1, 2, 4, 4], "num_res_blocks": 2, "attn_scales": [],
               "temperal_downsample": [False, True, True], "image_channels": 3, "dropout": 0.0}
        factory = lambda: wan.WanVAE(**cfg)  # noqa: E731
        out_key = "decoder.head.2.weight"
    with torch.device("meta"):
        module = factory()
    g = torch.Generator().manual_seed(0)
    sd = {}
    for k, v in module.state_dict().items():
        if k.endswith(".bias"):
            t = torch.zeros(v.shape)
        elif k.endswith("gamma") or ("norm" in k and v.ndim == 1):
            t = torch.ones(v.shape)
        else:
            t = torch.randn(v.shape, generator=g) / math.sqrt(max(1, math.prod(v.shape[1:])))
            if k == out_key:
                t *= 0.3
        sd[k] = t
    vae = comfy.sd.VAE(sd=sd)
    for m in vae.first_stage_model.modules():
        if hasattr(m, "optimized_attention"):
            m.optimized_attention = pytorch_attention
    return vae


def simulated_card(capacity: int | None):
    """A TorchDispatchMode counting live tensor bytes; raises OOM above `capacity` (None: never)."""
    import torch  # noqa: PLC0415
    from torch.multiprocessing.reductions import StorageWeakRef  # noqa: PLC0415
    from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415
    from torch.utils._pytree import tree_flatten  # noqa: PLC0415

    class SimulatedCard(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live: dict[int, tuple] = {}
            self.outside: dict[int, object] = {}
            self.current = self.peak = 0
            self.ooms = 0
            self.oom_at: float | None = None
            self.t0 = time.perf_counter()

        def _sweep(self):
            for key in [k for k, (ref, _) in self.live.items() if ref.expired()]:
                self.current -= self.live.pop(key)[1]
            for key in [k for k, ref in self.outside.items() if ref.expired()]:
                del self.outside[key]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self._sweep()
            for t in tree_flatten((args, kwargs))[0]:
                if isinstance(t, torch.Tensor):
                    key = t.untyped_storage()._cdata
                    if key not in self.live and key not in self.outside:
                        self.outside[key] = StorageWeakRef(t.untyped_storage())
            out = func(*args, **kwargs)
            new = 0
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    st = t.untyped_storage()
                    key = st._cdata
                    if key not in self.live and key not in self.outside:
                        self.live[key] = (StorageWeakRef(st), int(st.nbytes()))
                        self.current += int(st.nbytes())
                        new += int(st.nbytes())
            self.peak = max(self.peak, self.current)
            if capacity is not None and self.current > capacity:
                self.ooms += 1
                if self.oom_at is None:
                    self.oom_at = time.perf_counter() - self.t0
                del out
                raise torch.OutOfMemoryError(
                    f"CUDA out of memory. Tried to allocate {new / GiB:.2f} GiB. Simulated card: "
                    f"{capacity / GiB:.2f} GiB for activations, {self.current / GiB:.2f} GiB would be in use")
            return out

    return SimulatedCard()


def rss_status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmHWM", "VmRSS")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) * 1024
    return out


def reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_variant(fn, capacity: int | None) -> dict:
    import torch  # noqa: PLC0415

    reset_hwm()
    before = rss_status()["VmRSS"]
    card = simulated_card(capacity)
    t0 = time.perf_counter()
    error = None
    out_shape = None
    with torch.inference_mode():
        try:
            with card:
                out = fn()
            out_shape = list(out.shape)
            del out
        except Exception as exc:  # the comparison includes failures: ComfyUI's fallback can OOM too
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    seconds = time.perf_counter() - t0
    after = rss_status()
    return {"seconds": seconds, "sim_peak": card.peak, "rss_peak": after["VmHWM"] - before, "sim_ooms": card.ooms,
            "wasted_s": card.oom_at, "error": error, "shape": out_shape}


def fmt_row(name: str, runs: list[dict], ref_median: float | None) -> str:
    ok = [r for r in runs if r["error"] is None]
    med = statistics.median(r["seconds"] for r in runs)
    ratio = f"{med / ref_median:6.3f}" if ref_median else "     -"
    sim = max(r["sim_peak"] for r in runs) / GiB
    rss = max(r["rss_peak"] for r in runs) / GiB
    ooms = sum(r["sim_ooms"] for r in runs)
    wasted = [r["wasted_s"] for r in runs if r["wasted_s"] is not None]
    extra = f" first OOM after {statistics.median(wasted):.1f} s" if wasted else ""
    err = f"  ERROR: {runs[0]['error']}" if len(ok) < len(runs) else ""
    return (f"  {name:34s} median {med:7.2f} s  x{ratio}  sim peak {sim:5.2f} GiB  RSS peak +{rss:5.2f} GiB  "
            f"sim OOMs {ooms}{extra}{err}")


def scenario(title: str, variants: dict, rounds: int, capacity: int | None, ref: str,
             capacities: dict | None = None) -> dict:
    if title:
        print(f"\n{title}", flush=True)
    runs: dict[str, list[dict]] = {k: [] for k in variants}
    for i in range(rounds):
        order = list(variants) if i % 2 == 0 else list(reversed(variants))  # interleaved, alternating order
        for name in order:
            runs[name].append(run_variant(variants[name], (capacities or {}).get(name, capacity)))
    ref_med = statistics.median(r["seconds"] for r in runs[ref])
    for name in variants:
        print(fmt_row(name, runs[name], ref_med), flush=True)
    return {name: runs[name] for name in variants}


def third_of_memory(nodes, VD, VM, side: int, rounds: int) -> dict:
    """Scenario 0: VAEDecode in one go vs the node with a third of the one go's memory, typed."""
    import torch  # noqa: PLC0415

    flux = random_vae("flux")
    z = torch.randn((1, 16, side, side), generator=torch.Generator().manual_seed(4))
    node = VD.VAEDecodeAutoTiled()
    plain = lambda: nodes.VAEDecode().decode(flux, {"samples": z})[0]  # noqa: E731
    warm = run_variant(plain, None)  # warm-up, and the one go's live-tensor peak
    budget = warm["sim_peak"] / 3
    plan = VM.plan_decode("vae-kl16", (1, 16, None, side, side), int(budget), 0, 4)
    print(f"\n0. A third of the one-go memory: Flux VAE, latent {side}x{side} ({side * 8} px), {rounds} interleaved rounds"
          f"\n   one go's live-tensor peak {warm['sim_peak'] / GiB:.3f} GiB -> memory_budget_gb = {budget / GiB:.3f} "
          f"(typed; safety margin at its default {VD.DEFAULT_MARGIN_GB} GiB), simulated card of that size"
          f"\n   planner: {plan.summary()}", flush=True)
    texts: list[str] = []

    def tiled():
        out = node.decode({"samples": z}, flux, memory_budget_gb=budget / GiB)[0]
        texts.append(node.last_text if hasattr(node, "last_text") else "")
        return out

    runs = scenario("", {"VAEDecode (one go)": plain, "VAE Decode (Auto Tiled), 1/3 memory": tiled}, rounds, None,
                    "VAEDecode (one go)", capacities={"VAE Decode (Auto Tiled), 1/3 memory": int(budget)})
    one = statistics.median(r["seconds"] for r in runs["VAEDecode (one go)"])
    few = statistics.median(r["seconds"] for r in runs["VAE Decode (Auto Tiled), 1/3 memory"])
    ooms = sum(r["sim_ooms"] for r in runs["VAE Decode (Auto Tiled), 1/3 memory"])
    verdict = "PASS" if few <= 1.5 * one and ooms == 0 else "FAIL"
    # per round (the two ran back to back): steadier than the medians when other processes load the CPU
    paired = [t["seconds"] / o["seconds"] for o, t in zip(runs["VAEDecode (one go)"],
                                                          runs["VAE Decode (Auto Tiled), 1/3 memory"])]
    print(f"   node said: {texts[-1] if texts else '?'}"
          f"\n   per-round ratios {', '.join(f'{r:.3f}' for r in paired)} (median {statistics.median(paired):.3f})"
          f"\n   one go median {one:.2f} s, tiled median {few:.2f} s: ratio {few / one:.3f} "
          f"(planner predicted {plan.time_ratio:.2f}); {plan.tiles} tiles of {plan.tile_label()}; "
          f"simulated OOMs {ooms}; target <= 1.5: {verdict}", flush=True)
    return {"runs": runs, "ratio": few / one, "paired": paired, "predicted": plan.time_ratio, "tiles": plan.tiles,
            "tile": plan.tile_label(), "budget_bytes": int(budget)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="VAE Decode (Auto Tiled) vs VAEDecode / VAEDecodeTiled on CPU")
    ap.add_argument("--comfy", default=os.environ.get("COMFYUI_PATH"))
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the plentiful-memory scenario")
    ap.add_argument("--pressure-rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="small shapes, 2 rounds (smoke test)")
    ap.add_argument("--json", help="also write the raw runs here")
    ap.add_argument("--scenario", choices=("all", "third"), default="all",
                    help="third: only scenario 0 (a third of the one-go memory)")
    ap.add_argument("--side", type=int, default=96,
                    help="latent side of scenario 0 (96 = 768 px, the issue's case; 64 = 512 px)")
    ap.add_argument("--third-rounds", type=int, default=2)
    args = ap.parse_args(argv)
    if not args.comfy:
        ap.error("set COMFYUI_PATH or --comfy")
    comfy_path = str(Path(args.comfy).resolve())
    nodes, VD, VM = setup(comfy_path)
    import torch  # noqa: PLC0415

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    version = (Path(comfy_path) / "comfyui_version.py").read_text().split('"')[1]
    print(f"ComfyUI {version}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"RSS high-water reset: {'yes' if reset_hwm() else 'no (RSS peak includes earlier runs)'}")
    if args.quick:
        args.rounds, args.pressure_rounds = 2, 1
    node = VD.VAEDecodeAutoTiled()
    auto = lambda vae, z, **kw: node.decode({"samples": z}, vae, **kw)[0]  # noqa: E731
    plain = lambda vae, z: nodes.VAEDecode().decode(vae, {"samples": z})[0]  # noqa: E731
    tiled_default = lambda vae, z: nodes.VAEDecodeTiled().decode(vae, {"samples": z}, 512, 64, 64, 8)[0]  # noqa: E731
    results = {"third": third_of_memory(nodes, VD, VM, args.side, args.third_rounds)}
    if args.scenario == "third":
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1, default=str))
        return 0

    # 1. plentiful memory
    flux = random_vae("flux")
    side = 32 if args.quick else 64
    z = torch.randn((1, 16, side, side), generator=torch.Generator().manual_seed(1))
    results["plenty_flux"] = scenario(
        f"1. Plenty of memory: Flux VAE, latent {side}x{side} ({side * 8} px), {args.rounds} interleaved rounds",
        {"VAEDecode": lambda: plain(flux, z), "VAE Decode (Auto Tiled)": lambda: auto(flux, z),
         "VAEDecodeTiled (512/64 defaults)": lambda: tiled_default(flux, z)},
        args.rounds, None, "VAEDecode")

    # 2. short memory, image: a card that holds ComfyUI's 512 px fallback tiles but not the full decode
    side = 48 if args.quick else 80  # > 64: ComfyUI's 64-latent fallback tiles are smaller than the image
    z = torch.randn((1, 16, side, side), generator=torch.Generator().manual_seed(2))
    full = VM.op_bytes("vae-kl16", "decode", VM.Shape(1, None, side, side), dtype_bytes=4)
    capacity = int(0.7 * full)
    plan = VM.plan_decode("vae-kl16", (1, 16, None, side, side), capacity, 0, 4)
    print(f"\n   card: {capacity / GiB:.2f} GiB for activations (full decode needs {full / GiB:.2f} GiB traced); "
          f"planner: {plan.summary()}")
    results["pressure_flux"] = scenario(
        f"2. Short memory: Flux VAE, latent {side}x{side} ({side * 8} px), simulated card, {args.pressure_rounds} rounds",
        {"VAEDecode (try, then fallback)": lambda: plain(flux, z),
         "VAE Decode (Auto Tiled)": lambda: auto(flux, z, memory_budget_gb=capacity / GiB, safety_margin_gb=0.0),
         "VAEDecodeTiled (512/64 defaults)": lambda: tiled_default(flux, z)},
        args.pressure_rounds, capacity, "VAEDecode (try, then fallback)")
    flux = None  # noqa: F841 - free its weights before the video scenario

    # 3. short memory, video: ComfyUI's 3-D fallback tile (256 px, all frames) is the whole latent here
    wan = random_vae("wan")
    side, frames = (24, 2) if args.quick else (32, 3)
    z = torch.randn((1, 16, frames, side, side), generator=torch.Generator().manual_seed(3))
    full = VM.op_bytes("vae-wan2.1", "decode", VM.Shape(1, frames, side, side), dtype_bytes=4)
    capacity = int(0.7 * full)
    plan = VM.plan_decode("vae-wan2.1", (1, 16, frames, side, side), capacity, 0, 4)
    print(f"\n   card: {capacity / GiB:.2f} GiB for activations (full decode needs {full / GiB:.2f} GiB traced); "
          f"planner: {plan.summary()}")
    results["pressure_wan"] = scenario(
        f"3. Short memory: Wan 2.1 VAE, latent {frames}x{side}x{side} ({4 * frames - 3} frames of {side * 8} px), 1 round",
        {"VAEDecode (try, then fallback)": lambda: plain(wan, z),
         "VAE Decode (Auto Tiled)": lambda: auto(wan, z, memory_budget_gb=capacity / GiB, safety_margin_gb=0.0)},
        1, capacity, "VAEDecode (try, then fallback)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
