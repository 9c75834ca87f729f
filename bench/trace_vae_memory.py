"""Trace the working memory of ComfyUI's own VAE decode / encode, at full size, without a GPU.

Run it with ComfyUI's python (torch + ComfyUI's requirements), once per ComfyUI version:

    COMFYUI_PATH=/work/comfy/a /work/comfy/venv-a/bin/python bench/trace_vae_memory.py
    COMFYUI_PATH=/work/comfy/b /work/comfy/venv-b/bin/python bench/trace_vae_memory.py

It merges one profile per ComfyUI version into ``nodes/estimator/data/vae_memory.json``, which
``nodes/estimator/vae_memory.py`` fits when it loads (the JSON holds measurements, the fit is code).
``--families a,b`` traces only those and merges them into the version's existing profile (every
other family stays; ``--replace`` rewrites the whole profile). A family id that
``vae_memory.py``'s FAMILIES table does not define yet goes under ``pending_families`` instead of
``families`` (the estimator and its tests read every ``families`` entry through that table);
``--promote id`` moves it over, without ComfyUI, once the table has it.

How a figure is taken
- Each VAE is built by ``comfy.sd.VAE(sd=state_dict, dtype=...)`` exactly as ComfyUI builds it
  from a file: the state dict has the real key names and shapes (taken from ComfyUI's own model
  classes instantiated on the ``meta`` device, with the config ComfyUI's detection code uses), so
  the class, config and detection branch are ComfyUI's. Everything lives on ``meta``: shapes and
  dtypes are real, no memory is allocated, a 2048x2048 decode takes seconds on a CPU.
- ``LiveBytes`` (a ``TorchDispatchMode``) sees every aten op, records each new storage an op
  returns and drops it when Python frees it (``StorageWeakRef``). The live total after each op is
  what ``torch.cuda.memory_allocated()`` would show above the weights (weights and the caller's
  tensors exist before the mode starts, so they are not counted); its maximum is the working
  memory. Not seen: allocator rounding / fragmentation and library workspaces (cuDNN conv
  workspace); the planner's margin covers them.
- Attention: the KL mid-block and Wan's AttentionBlock call ComfyUI's ``pytorch_attention`` (the
  default on NVIDIA). On meta, SDPA would decompose to the math path and materialise an N x N
  matrix that the GPU's fused kernel never holds. The tracer replaces
  ``comfy.ops.scaled_dot_product_attention`` by a fused stand-in that allocates what the
  memory-efficient kernel allocates: the output and a float32 logsumexp (B, heads, N).
- What is traced per case is the call ComfyUI makes on the device: ``first_stage_model.decode(z)``
  for a full decode (``VAE.decode`` moves the result to the CPU right after), and
  ``first_stage_model.decode(z)`` + the float32 cast for one tile (``decode_tiled_*``'s
  ``decode_fn``); ``first_stage_model.encode(px)`` for encode.

Every case runs under a per-case deadline (SIGALRM) and the whole run under a global deadline.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "nodes" / "estimator" / "data" / "vae_memory.json"


def setup_comfy(comfy_path: str):
    """Import ComfyUI from its source tree (CPU mode) without starting a server."""
    sys.path.insert(0, comfy_path)
    os.chdir(comfy_path)
    sys.argv = [sys.argv[0], "--cpu"]
    import comfy.options  # noqa: PLC0415

    comfy.options.enable_args_parsing()
    import logging  # noqa: PLC0415

    logging.disable(logging.WARNING)  # torchaudio warnings etc.
    import comfy.sd  # noqa: F401, PLC0415


def comfy_version(comfy_path: str) -> str:
    text = (Path(comfy_path) / "comfyui_version.py").read_text()
    return text.split('__version__ = "')[1].split('"')[0]


# ----------------------------------------------------------------------------------------------
# Memory tracking
def make_tracker():
    import torch  # noqa: PLC0415
    from torch.multiprocessing.reductions import StorageWeakRef  # noqa: PLC0415
    from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415
    from torch.utils._pytree import tree_flatten  # noqa: PLC0415

    class LiveBytes(TorchDispatchMode):
        """Live bytes of the storages created while the mode is active; peak over all ops."""

        def __init__(self):
            super().__init__()
            self.live: dict[int, tuple[object, int]] = {}  # storages allocated under the mode
            self.outside: dict[int, object] = {}  # storages that existed before (weights): never counted
            self.current = 0
            self.peak = 0
            self.ops = 0

        def _sweep(self):
            dead = [key for key, (ref, _) in self.live.items() if ref.expired()]
            for key in dead:
                self.current -= self.live.pop(key)[1]
            for key in [key for key, ref in self.outside.items() if ref.expired()]:
                del self.outside[key]

        def note_inputs(self, tensors):
            # An input whose storage was not allocated under the mode existed before it (a weight,
            # a buffer): a view of it (weight[:, :, -1:], reshape) must not count as new memory.
            for t in tensors:
                if isinstance(t, torch.Tensor):
                    key = t.untyped_storage()._cdata
                    if key not in self.live and key not in self.outside:
                        self.outside[key] = StorageWeakRef(t.untyped_storage())

        def track(self, tensors):
            for t in tensors:
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    key = storage._cdata
                    if key not in self.live and key not in self.outside:
                        nbytes = int(storage.nbytes())
                        self.live[key] = (StorageWeakRef(storage), nbytes)
                        self.current += nbytes
            self.peak = max(self.peak, self.current)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self._sweep()  # freed since the last op: gone before this op allocates
            self.note_inputs(tree_flatten((args, kwargs))[0])
            out = func(*args, **kwargs)
            self.ops += 1
            # this op's outputs while its inputs are still referenced by the caller
            self.track(tree_flatten(out)[0])
            return out

    return LiveBytes


@contextlib.contextmanager
def fused_attention(tracker_box):
    """Replace ComfyUI's SDPA entry by a stand-in with a fused kernel's allocations."""
    import comfy.ops  # noqa: PLC0415
    import torch  # noqa: PLC0415

    def sdpa(q, k, v, *args, **kwargs):
        # memory-efficient / flash attention forward: output (like q) + float32 logsumexp over
        # (batch, heads, queries). No N x N score matrix is ever allocated.
        out = torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        del lse
        return out

    saved_ops = comfy.ops.scaled_dot_product_attention
    saved_f = torch.nn.functional.scaled_dot_product_attention
    comfy.ops.scaled_dot_product_attention = sdpa
    torch.nn.functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        comfy.ops.scaled_dot_product_attention = saved_ops
        torch.nn.functional.scaled_dot_product_attention = saved_f


def use_pytorch_attention(module):
    """Make every VAE attention block use ComfyUI's pytorch_attention (NVIDIA's default)."""
    from comfy.ldm.modules.diffusionmodules.model import pytorch_attention  # noqa: PLC0415

    n = 0
    for m in module.modules():
        if hasattr(m, "optimized_attention"):
            m.optimized_attention = pytorch_attention
            n += 1
    return n


# ----------------------------------------------------------------------------------------------
# VAEs, built the way comfy.sd.VAE builds them from a file
def _meta_state_dict(make_module):
    import torch  # noqa: PLC0415

    with torch.device("meta"):
        module = make_module()
    return module.state_dict()


def _kl_module(z_channels: int, legacy: bool):
    from comfy.ldm.models.autoencoder import AutoencoderKL, AutoencodingEngine  # noqa: PLC0415

    # comfy/sd.py "default SD1.x/SD2.x VAE parameters" branch
    ddconfig = {'double_z': True, 'z_channels': z_channels, 'resolution': 256, 'in_channels': 3, 'out_ch': 3,
                'ch': 128, 'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0}
    if legacy:  # SD/SDXL files carry quant_conv/post_quant_conv -> AutoencoderKL
        return lambda: AutoencoderKL(ddconfig=ddconfig, embed_dim=z_channels)
    # Flux ae.safetensors has none -> AutoencodingEngine
    return lambda: AutoencodingEngine(
        regularizer_config={'target': "comfy.ldm.models.autoencoder.DiagonalGaussianRegularizer"},
        encoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Encoder", 'params': ddconfig},
        decoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Decoder", 'params': ddconfig})


def _wan21_module():
    import comfy.ldm.wan.vae as wan  # noqa: PLC0415

    cfg = {"dim": 96, "z_dim": 16, "dim_mult": [1, 2, 4, 4], "num_res_blocks": 2, "attn_scales": [],
           "temperal_downsample": [False, True, True], "image_channels": 3, "dropout": 0.0}
    return lambda: wan.WanVAE(**cfg)


def _wan22_module():
    import comfy.ldm.wan.vae2_2 as wan22  # noqa: PLC0415

    cfg = {"dim": 160, "z_dim": 48, "dim_mult": [1, 2, 4, 4], "num_res_blocks": 2, "attn_scales": [],
           "temperal_downsample": [False, True, True], "dropout": 0.0}
    return lambda: wan22.WanVAE(**cfg)


def _hunyuan_module():
    from comfy.ldm.models.autoencoder import AutoencoderKL  # noqa: PLC0415

    ddconfig = {'double_z': True, 'z_channels': 16, 'resolution': 256, 'in_channels': 3, 'out_ch': 3, 'ch': 128,
                'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0,
                "conv3d": True, "time_compress": 4}
    return lambda: AutoencoderKL(ddconfig=ddconfig, embed_dim=16)


def _ltxv_module():
    import comfy.ldm.lightricks.vae.causal_video_autoencoder as ltx  # noqa: PLC0415

    return lambda: ltx.VideoVAE(version=0)


def _hunyuan15_module():
    from comfy.ldm.models.autoencoder import AutoencodingEngine  # noqa: PLC0415

    # 0.18.2 comfy/sd.py:631-647: "decoder.conv_in.conv.weight" with 32 input channels (HunyuanVideo
    # 1.5's hunyuanvideo15_vae_fp16.safetensors) -> AutoencodingEngine over vae_refiner.Encoder/Decoder
    # with refiner_vae left at its default True (CarriedConv3d, the "conv_in.conv" key; the decoder
    # runs 2 latent frames per step with a conv carry, the encoder 1 + 8-frame groups). The other
    # 32-channel branch, sd.py:524-539 ("decoder.conv_in.weight", refiner_vae False, not_video), is
    # HunyuanImage 2.1's refiner VAE.
    ddconfig = {"block_out_channels": [128, 256, 512, 1024, 1024], "in_channels": 3, "out_channels": 3,
                "num_res_blocks": 2, "ffactor_spatial": 16, "ffactor_temporal": 4, "downsample_match_channel": True,
                "upsample_match_channel": True, "z_channels": 32}
    return lambda: AutoencodingEngine(
        regularizer_config={'target': "comfy.ldm.models.autoencoder.EmptyRegularizer"},
        encoder_config={'target': "comfy.ldm.hunyuan_video.vae_refiner.Encoder", 'params': ddconfig},
        decoder_config={'target': "comfy.ldm.hunyuan_video.vae_refiner.Decoder", 'params': ddconfig})


MODULES = {
    "vae-kl4": lambda: _kl_module(4, legacy=True),
    "vae-kl16": lambda: _kl_module(16, legacy=False),
    "vae-wan2.1": _wan21_module,
    "vae-wan2.2": _wan22_module,
    "vae-hunyuan": _hunyuan_module,
    "vae-ltxv": _ltxv_module,
    "vae-hunyuan15": _hunyuan15_module,
}


def build_vae(family: str, dtype):
    """comfy.sd.VAE on the meta device from a state dict with the real keys and shapes."""
    import comfy.sd  # noqa: PLC0415
    import torch  # noqa: PLC0415

    sd = _meta_state_dict(MODULES[family]())
    with torch.device("meta"):
        vae = comfy.sd.VAE(sd=sd, dtype=dtype)
    fsm = vae.first_stage_model
    use_pytorch_attention(fsm)
    params = sum(p.numel() for p in fsm.parameters())
    return vae, params


# ----------------------------------------------------------------------------------------------
class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


def trace_case(vae, op: str, shape: tuple, dtype, per_case_s: int) -> dict:
    """Peak live bytes of one decode/encode call on `shape` (decode: latent, encode: pixels)."""
    import torch  # noqa: PLC0415

    LiveBytes = make_tracker()
    fsm = vae.first_stage_model
    mode = LiveBytes()
    t0 = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(per_case_s)
    out_bytes = 0
    try:
        with torch.inference_mode(), fused_attention(None), mode:
            # the input on the device is ComfyUI's too (samples.to(vae_dtype).to(device))
            x = torch.empty(shape, dtype=dtype, device="meta")
            if op == "decode":
                y = fsm.decode(x)
            elif op == "decode_tile":
                y = fsm.decode(x).float()
            elif op == "encode":
                y = fsm.encode(vae.process_input(x))
            else:
                raise ValueError(op)
            out_shape = tuple(y.shape)
            out_bytes = y.numel() * y.element_size()
            del y, x
    finally:
        signal.alarm(0)
    return {"op": op, "shape": list(shape), "out_shape": list(out_shape), "peak_bytes": int(mode.peak),
            "out_bytes": int(out_bytes), "aten_ops": mode.ops, "seconds": round(time.time() - t0, 3)}


def cases_for(family: str, quick: bool):
    """(op, input shape) pairs. Decode shapes are latents, encode shapes are pixels."""
    cases = []
    if family in ("vae-kl4", "vae-kl16"):
        c = 4 if family == "vae-kl4" else 16
        sizes = [64, 96, 128, 192, 256] if not quick else [64, 96]
        for s in sizes:  # 512 .. 2048 px
            cases.append(("decode", (1, c, s, s)))
        cases += [("decode", (2, c, 64, 64)), ("decode", (1, c, 64, 128)), ("decode", (1, c, 96, 160))]
        for s in ([32, 48, 64] if not quick else [32]):
            cases.append(("decode_tile", (1, c, s, s)))
        cases.append(("decode_tile", (1, c, 16, 64)))
        for s in (sizes[:4] if not quick else sizes):
            cases.append(("encode", (1, 3, s * 8, s * 8)))
        return cases
    if family == "vae-wan2.1":
        c, res = 16, [(60, 104), (90, 160)]  # 832x480, 1280x720
        frames = [1, 2, 3, 5, 9, 13, 21] if not quick else [1, 3]
    elif family == "vae-wan2.2":
        c, res = 48, [(44, 80)]  # 1280x704 at 16x
        frames = [1, 2, 3, 5, 9, 13, 21] if not quick else [1, 3]
        if not quick:
            res.append((30, 52))  # 832x480 at 16x
    elif family == "vae-hunyuan":
        c, res, frames = 16, [(60, 104), (90, 160)], ([1, 2, 3, 5, 9] if not quick else [1, 3])
    elif family == "vae-ltxv":
        c, res, frames = 128, [(15, 26), (22, 40)], ([1, 2, 3, 5, 7] if not quick else [1, 2])
    elif family == "vae-hunyuan15":
        c, res = 32, [(45, 80), (30, 53)]  # 1280x720, 848x480 at 16x
        frames = [1, 2, 3, 5, 9, 13, 21, 31] if not quick else [1, 3]
    else:
        raise ValueError(family)
    for (h, w) in res:
        for t in frames:
            cases.append(("decode", (1, c, t, h, w)))
    h, w = res[0]
    tile = 32 if family != "vae-ltxv" else 8
    for t in frames[:4]:
        cases.append(("decode_tile", (1, c, t, tile, tile)))
        cases.append(("decode_tile", (1, c, t, tile // 2, tile * 2)))
    cases.append(("decode_tile", (1, c, frames[-1], tile, tile)))
    cases.append(("decode_tile", (1, c, frames[1], h, w)))
    sc, tc = {"vae-wan2.1": (8, 4), "vae-wan2.2": (16, 4), "vae-hunyuan": (8, 4), "vae-ltxv": (32, 8),
              "vae-hunyuan15": (16, 4)}[family]
    for t in frames[:5]:
        px_t = max(1, (t - 1) * tc + 1)
        cases.append(("encode", (1, 3, px_t, h * sc, w * sc)))
    return cases


def dump_json(data: dict) -> str:
    """Indented JSON with one measurement point per line (diff-friendly, small)."""
    def render(obj, indent: int) -> str:
        pad = " " * indent
        if isinstance(obj, dict) and obj:
            if "peak_bytes" in obj:  # a point
                return json.dumps(obj, separators=(", ", ": "))
            items = [f'{pad} {json.dumps(k)}: {render(v, indent + 1)}' for k, v in obj.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if isinstance(obj, list) and obj and isinstance(obj[0], (dict, str)):
            items = [f"{pad} {render(v, indent + 1)}" for v in obj]
            return "[\n" + ",\n".join(items) + f"\n{pad}]"
        return json.dumps(obj)
    return render(data, 0) + "\n"


# Families the estimator does not know yet are written under this key of the profile, not under
# "families": nodes/estimator/vae_memory.py (and tests/test_vae_memory.py) read every entry of
# "families" through its FAMILIES table, so an unknown id there would break them. ``--promote``
# moves an entry over (no ComfyUI needed) once FAMILIES has the id.
PENDING = "pending_families"
ESTIMATOR = REPO / "nodes" / "estimator" / "vae_memory.py"


def estimator_families() -> set[str]:
    """Family ids nodes/estimator/vae_memory.py defines (read from its source: no import)."""
    import re  # noqa: PLC0415

    return set(re.findall(r'VaeFamily\(\s*"([^"]+)"', ESTIMATOR.read_text()))


def write_data(out_path: Path, data: dict) -> None:
    data["profiles"] = dict(sorted(data["profiles"].items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(dump_json(data))


def promote(out_path: Path, names: list[str]) -> int:
    """Move traced entries from PENDING to "families" in every profile (no ComfyUI, no torch)."""
    data = json.loads(out_path.read_text())
    known = estimator_families()
    moved = 0
    for version, prof in data["profiles"].items():
        for name in names:
            if name not in prof.get(PENDING, {}):
                continue
            if name not in known:
                print(f"{name}: not in {ESTIMATOR.name} FAMILIES yet; left in {PENDING}")
                continue
            prof.setdefault("families", {})[name] = prof[PENDING].pop(name)
            moved += 1
            print(f"{version}: {name} -> families")
        if PENDING in prof and not prof[PENDING]:
            del prof[PENDING]
    write_data(out_path, data)
    return 0 if moved else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--comfy", default=os.environ.get("COMFYUI_PATH"), help="ComfyUI source tree (COMFYUI_PATH)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--families", default=",".join(MODULES))
    ap.add_argument("--dtypes", default="bf16,fp32")
    ap.add_argument("--per-case-s", type=int, default=120)
    ap.add_argument("--deadline-s", type=int, default=1500)
    ap.add_argument("--quick", action="store_true", help="a few small shapes (smoke test)")
    ap.add_argument("--dry-run", action="store_true", help="print, do not write the JSON")
    ap.add_argument("--replace", action="store_true",
                    help="replace this version's whole profile (default: merge the traced families into it)")
    ap.add_argument("--promote", default="",
                    help="comma-separated families to move from 'pending_families' to 'families' (no trace)")
    args = ap.parse_args(argv)
    if args.promote:
        return promote(Path(args.out).resolve(), args.promote.split(","))
    if not args.comfy:
        ap.error("set COMFYUI_PATH or --comfy")
    comfy_path = str(Path(args.comfy).resolve())
    out_path = Path(args.out).resolve()
    setup_comfy(comfy_path)
    import torch  # noqa: PLC0415

    version = comfy_version(comfy_path)
    dtypes = {"bf16": (torch.bfloat16, 2), "fp16": (torch.float16, 2), "fp32": (torch.float32, 4)}
    deadline = time.time() + args.deadline_s
    families: dict[str, dict] = {}
    for family in args.families.split(","):
        entry: dict = {"points": [], "skipped": []}
        for dname in args.dtypes.split(","):
            dtype, dbytes = dtypes[dname]
            try:
                vae, params = build_vae(family, dtype)
            except Exception as exc:  # a family this ComfyUI cannot build: say so, go on
                entry["skipped"].append(f"build {dname}: {type(exc).__name__}: {exc}"[:300])
                print(f"[{family}] build failed: {exc}", flush=True)
                break
            entry.update({
                "params": int(params), "class": f"{type(vae.first_stage_model).__module__}.{type(vae.first_stage_model).__name__}",
                "latent_channels": int(vae.latent_channels),
                "spatial_compression": int(vae.spacial_compression_decode()),
                "temporal_compression": vae.temporal_compression_decode(),
            })
            last_error = None
            for op, shape in cases_for(family, args.quick):
                if time.time() > deadline:
                    entry["skipped"].append(f"{op} {shape} {dname}: global deadline")
                    continue
                try:
                    rec = trace_case(vae, op, shape, dtype, args.per_case_s)
                except CaseTimeout:
                    entry["skipped"].append(f"{op} {shape} {dname}: over {args.per_case_s} s")
                    print(f"[{family}] {op} {shape} {dname}: timeout", flush=True)
                    continue
                except Exception as exc:
                    msg = f"{type(exc).__name__}: {exc}"[:200]
                    entry["skipped"].append(f"{op} {shape} {dname}: {msg}")
                    print(f"[{family}] {op} {shape} {dname}: {msg}", flush=True)
                    if msg == last_error:  # the same failure twice: this family cannot be traced here
                        entry["skipped"].append(f"remaining {dname} cases of {family} skipped after the same error twice")
                        break
                    last_error = msg
                    continue
                last_error = None
                rec["dtype_bytes"] = dbytes
                entry["points"].append(rec)
                print(f"[{family}] {op:11s} {dname} {str(tuple(shape)):28s} peak {rec['peak_bytes'] / 2**30:7.3f} GiB"
                      f"  out {rec['out_bytes'] / 2**30:6.3f} GiB  ({rec['seconds']:.1f} s, {rec['aten_ops']} ops)", flush=True)
            del vae
        families[family] = entry
    profile = {
        "comfyui_version": version,
        "comfyui_source": "upstream 3cd7b32 (2026-01-07)" if version == "0.8.0" else f"release {version}",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "method": "meta-device trace of comfy.sd.VAE(sd=...) first_stage_model.decode/encode; live storage bytes "
                  "per aten op (TorchDispatchMode + StorageWeakRef); attention as a fused kernel "
                  "(output + fp32 logsumexp); weights excluded",
        "families": {},
    }
    if args.dry_run:
        return 0
    data = {"schema": 1, "profiles": {}}
    if out_path.is_file():
        data = json.loads(out_path.read_text())
    old = data.setdefault("profiles", {}).get(version)
    if old is not None and not args.replace:
        # merge: the families traced now replace their own entries; every other family (and the
        # profile's provenance, which dates its first trace) stays as it was
        for family, entry in families.items():
            entry["date"] = profile["date"]
            entry["torch"] = profile["torch"]
        profile = {**old, "families": dict(old.get("families", {})),
                   PENDING: dict(old.get(PENDING, {}))}
    known = estimator_families()
    for family, entry in families.items():
        section = "families" if family in known else PENDING
        profile.setdefault(section, {})[family] = entry
        other = PENDING if section == "families" else "families"
        profile.get(other, {}).pop(family, None)
        if section == PENDING:
            print(f"[{family}] not in nodes/estimator/vae_memory.py FAMILIES: written to '{PENDING}' "
                  f"(move it with --promote {family} once the estimator knows it)")
    if not profile.get(PENDING):
        profile.pop(PENDING, None)
    data["profiles"][version] = profile
    write_data(out_path, data)
    print(f"wrote profile {version} to {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
