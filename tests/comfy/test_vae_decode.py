"""VAE Decode / Encode (Auto Tiled) against a real ComfyUI (CPU).

The VAEs are real ComfyUI VAEs at full channel width, built by ``comfy.sd.VAE(sd=state_dict)``
from a state dict with the real key names and shapes (taken from ComfyUI's own classes on the meta
device) and random weights: seeded, 1/sqrt(fan_in) scaled so GroupNorm/RMSNorm keep activations
near unit scale, output convolution scaled by 0.3 so few decoded pixels hit the [0, 1] clamp
(clamped pixels would hide differences). Shapes are small because a full-width decode is slow on
two shared CPU cores (Flux VAE 64x64 latent: 12 s on an idle machine, 85 s under load; Wan 2.1 32x32
x 3 latent frames: 160 s under load).

PSNR bounds. Tiling changes the result for a reason, not by accident: GroupNorm statistics and the
mid-block attention see one tile instead of the whole image, and tiles meet in feathered overlaps.
Measured here (CPU, these seeds), with ComfyUI's three-pass decode_tiled and square tiles (before
issue 12): Flux VAE 64x64 latent, 384 px tiles: 46.5 dB (47.0 dB in tile interiors); 32x32
latent, 192 px tiles: 39.2 dB. Wan 2.1 32x32x2 latent, 192 px tiles: 39.6 dB (42.5 interiors);
24x24x2, 128 px tiles: 35.6 dB. With the planner's one-pass tiles (64 px overlap, ComfyUI 0.18.2):
Flux 64x64, 2 tiles of 512x288 px: 49.5 dB (52.4 interiors); Wan 32x32x2, 2 tiles of 256x160 px:
44.0 dB (44.7 interiors). The bounds (38 dB Flux, 33 dB Wan) sit below
the smallest-tile figures; each test also decodes nothing new to get a reference for "wrong": the
same full decode shifted by 8 px (one latent pixel, what a misplaced tile does) scores ~20-25 dB,
and the tiled result must beat that by 10-15 dB. Tile interiors must not be worse than the whole.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.comfy

HELPERS = r'''
import math, json, time, logging, sys
import torch
import comfy.sd

torch.set_num_threads(2)
_INFERENCE = torch.inference_mode(); _INFERENCE.__enter__()  # ComfyUI runs every node under inference mode (execution.py)
VD = sys.modules[PACK.__name__ + ".nodes.vae_decode"]
VM = sys.modules[PACK.__name__ + ".nodes.estimator.physics.vae_memory"]
VERSION = sys.modules[PACK.__name__ + ".nodes.comfy_bridge"].comfy_version()  # the node plans with this profile
GiB = 1024 ** 3

def random_sd(module_factory, seed, out_keys=()):
    with torch.device("meta"):
        m = module_factory()
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for k, v in m.state_dict().items():
        if k.endswith(".bias"):
            t = torch.zeros(v.shape)
        elif k.endswith("gamma") or ("norm" in k and v.ndim == 1):
            t = torch.ones(v.shape)
        elif v.ndim == 0 or k in ("vae_scale", "vae_shift"):
            t = torch.ones(v.shape)
        else:
            t = torch.randn(v.shape, generator=g) / math.sqrt(max(1, math.prod(v.shape[1:])))
            if k in out_keys:
                t *= 0.3
        sd[k] = t
    return sd

def flux_vae():
    from comfy.ldm.models.autoencoder import AutoencodingEngine
    dd = {'double_z': True, 'z_channels': 16, 'resolution': 256, 'in_channels': 3, 'out_ch': 3, 'ch': 128,
          'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0}
    f = lambda: AutoencodingEngine(
        regularizer_config={'target': "comfy.ldm.models.autoencoder.DiagonalGaussianRegularizer"},
        encoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Encoder", 'params': dd},
        decoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Decoder", 'params': dd})
    return comfy.sd.VAE(sd=random_sd(f, 0, ("decoder.conv_out.weight",)))

def wan21_vae():
    import comfy.ldm.wan.vae as wan
    cfg = {"dim": 96, "z_dim": 16, "dim_mult": [1, 2, 4, 4], "num_res_blocks": 2, "attn_scales": [],
           "temperal_downsample": [False, True, True], "image_channels": 3, "dropout": 0.0}
    return comfy.sd.VAE(sd=random_sd(lambda: wan.WanVAE(**cfg), 1, ("decoder.head.2.weight",)))

def taesd_vae():
    import comfy.taesd.taesd as ts
    return comfy.sd.VAE(sd=random_sd(lambda: ts.TAESD(latent_channels=4), 2))

class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []
    def emit(self, record):
        self.lines.append(record.getMessage())

CAP = Capture()
logging.getLogger("vram_budget").addHandler(CAP)
logging.getLogger("vram_budget").setLevel(logging.INFO)

def psnr(a, b, mask=None):
    d = (a.float() - b.float()) ** 2
    if mask is not None:
        d = d[mask]
    mse = d.mean().item()
    return 99.0 if mse == 0 else 10 * math.log10(1.0 / mse)

def positions(size, tile, overlap):
    """Tile starts along one axis, as comfy.utils.tiled_scale_multidim computes them."""
    if size <= tile:
        return [(0, size)]
    out = []
    for it in range(0, size - overlap, tile - overlap):
        pos = max(0, min(size - overlap, it))
        out.append((pos, min(tile, size - pos)))
    return out

def interior_mask(h_px, w_px, tile_h, tile_w, overlap, scale):
    """Pixels at least `overlap` latent px away from every seam of the tile grid (image edges are no seams)."""
    band = overlap * scale
    keep_r = torch.ones(h_px, dtype=torch.bool)
    keep_c = torch.ones(w_px, dtype=torch.bool)
    for keep, size, tile in ((keep_r, h_px, tile_h), (keep_c, w_px, tile_w)):
        for pos, length in positions(size // scale, tile, overlap):
            for edge in (pos * scale, (pos + length) * scale):
                if 0 < edge < size:
                    keep[max(0, edge - band):min(size, edge + band)] = False
    return keep[:, None] & keep[None, :]
'''


def test_nodes_registered(run_in_comfy):
    out = run_in_comfy(HELPERS + r'''
m = PACK.NODE_CLASS_MAPPINGS
dec, enc = m["VAEDecodeAutoTiled"], m["VAEEncodeAutoTiled"]
it = dec.INPUT_TYPES()
print(json.dumps({
    "names": [PACK.NODE_DISPLAY_NAME_MAPPINGS["VAEDecodeAutoTiled"], PACK.NODE_DISPLAY_NAME_MAPPINGS["VAEEncodeAutoTiled"]],
    "required": sorted(it["required"]), "optional": sorted(it["optional"]), "hidden": it["hidden"],
    "modes": it["optional"]["mode"][0], "returns": [dec.RETURN_TYPES, enc.RETURN_TYPES],
    "enc_required": sorted(enc.INPUT_TYPES()["required"]),
}))
''')
    assert out["names"] == ["VAE Decode (Auto Tiled)", "VAE Encode (Auto Tiled)"]
    assert out["required"] == ["samples", "vae"]
    assert out["optional"] == ["memory_budget_gb", "mode", "safety_margin_gb"]
    assert out["hidden"] == {"unique_id": "UNIQUE_ID"}
    assert out["modes"] == ["auto", "force tiled", "never tiled"]
    assert out["returns"] == [["IMAGE"], ["LATENT"]]
    assert out["enc_required"] == ["pixels", "vae"]


def test_family_detection(run_in_comfy):
    """vae_family_of reads what ComfyUI built; VAEs built on meta (no memory) from real key shapes."""
    out = run_in_comfy(HELPERS + r'''
BR = sys.modules[PACK.__name__ + ".nodes.comfy_bridge"]
from comfy.ldm.models.autoencoder import AutoencoderKL
import comfy.ldm.wan.vae2_2 as wan22
def meta_vae(factory):
    with torch.device("meta"):
        m = factory()
    sd = m.state_dict()
    with torch.device("meta"):
        return comfy.sd.VAE(sd=sd)
dd4 = {'double_z': True, 'z_channels': 4, 'resolution': 256, 'in_channels': 3, 'out_ch': 3, 'ch': 128,
       'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0}
res = {
  "sdxl": BR.vae_family_of(meta_vae(lambda: AutoencoderKL(ddconfig=dd4, embed_dim=4))),
  "wan22": BR.vae_family_of(meta_vae(lambda: wan22.WanVAE(dim=160, z_dim=48, dim_mult=[1, 2, 4, 4], num_res_blocks=2,
                            attn_scales=[], temperal_downsample=[False, True, True], dropout=0.0))),
  "flux": BR.vae_family_of(flux_vae()),
  "wan21": BR.vae_family_of(wan21_vae()),
  "taesd": BR.vae_family_of(taesd_vae()),
}
info = BR.vae_info(flux_vae())
res["info"] = [info.latent_channels, info.spatial, info.temporal, info.dtype_bytes, info.device_type]
print(json.dumps(res))
''')
    assert out["sdxl"] == "vae-kl4"
    assert out["flux"] == "vae-kl16"
    assert out["wan21"] == "vae-wan2.1"
    assert out["wan22"] == "vae-wan2.2"
    assert out["taesd"] is None  # not traced: the node falls back to ComfyUI's own estimate
    assert out["info"] == [16, 8, None, 4, "cpu"]


@pytest.mark.heavy
def test_flux_vae_full_vs_tiled(run_in_comfy):
    """Room -> one go (identical to VAEDecode); pressure via memory_budget_gb -> tiles; PSNR of tiled vs full."""
    out = run_in_comfy(HELPERS + r'''
vae = flux_vae()
g = torch.Generator().manual_seed(10)
z = torch.randn((1, 16, 64, 64), generator=g)
z_before = z.clone()
node = PACK.NODE_CLASS_MAPPINGS["VAEDecodeAutoTiled"]()
margin = 0.25
t0 = time.perf_counter(); (full,) = node.decode({"samples": z}, vae, memory_budget_gb=64.0, safety_margin_gb=margin); t_full = time.perf_counter() - t0
text_full = CAP.lines[-1]
# a budget that holds 60 % of what a full decode needs (typed: the margin is not taken off it)
need = VM.with_headroom(VM.op_bytes("vae-kl16", "decode", VM.Shape(1, None, 64, 64), dtype_bytes=4, comfy_version=VERSION))
budget_gb = 0.6 * need / GiB
plan = VM.plan_decode("vae-kl16", (1, 16, None, 64, 64), int(budget_gb * GiB), 0, 4, comfy_version=VERSION)
t0 = time.perf_counter(); (tiled,) = node.decode({"samples": z}, vae, memory_budget_gb=budget_gb, safety_margin_gb=margin); t_tiled = time.perf_counter() - t0
text_tiled = CAP.lines[-1]
(ref,) = __import__("nodes").VAEDecode().decode(vae, {"samples": z})
mask = interior_mask(512, 512, plan.tile_h, plan.tile_w, plan.overlap, 8)
print(json.dumps({
  "shape": list(full.shape), "tiled_shape": list(tiled.shape), "text_full": text_full, "text_tiled": text_tiled,
  "plan": [plan.tiled, plan.tile_h, plan.tile_w, plan.overlap, plan.tiles], "same_as_vaedecode": bool(torch.equal(full, ref)),
  "psnr": psnr(full, tiled), "psnr_interior": psnr(full, tiled, mask.unsqueeze(0).unsqueeze(-1).expand_as(full)),
  "interior_fraction": mask.float().mean().item(), "latent_untouched": bool(torch.equal(z, z_before)),
  "psnr_shifted": psnr(full, torch.roll(full, 8, dims=2)),
  "t_full": t_full, "t_tiled": t_tiled, "std": full.std().item(), "clamped": ((full == 0) | (full == 1)).float().mean().item(),
}))
''', timeout=900)
    print(f"\nFlux VAE 64x64 latent (512 px): PSNR tiled vs full {out['psnr']:.2f} dB overall, "
          f"{out['psnr_interior']:.2f} dB in tile interiors ({out['interior_fraction']:.0%} of pixels); "
          f"the image against itself shifted by 8 px: {out['psnr_shifted']:.2f} dB; "
          f"plan {out['plan']}; full {out['t_full']:.1f} s, tiled {out['t_tiled']:.1f} s")
    assert out["shape"] == [1, 512, 512, 3] == out["tiled_shape"]
    assert out["same_as_vaedecode"], "a decode that fits must be exactly VAEDecode's"
    assert "decoded in one go" in out["text_full"]
    tiled, th, tw, overlap, tiles = out["plan"]
    assert tiled and (th, tw) != (64, 64) and min(th, tw) >= 16, out["plan"]
    assert f"{tiles} tiles of {th * 8}x{tw * 8} px" in out["text_tiled"], out["text_tiled"]
    assert out["latent_untouched"]
    assert out["clamped"] < 0.01 and out["std"] > 0.02  # a real picture-like signal, not a flat or clipped one
    assert out["psnr"] < 80, "tiling must change something (else it did not tile)"
    assert out["psnr"] >= 38.0
    assert out["psnr_interior"] >= out["psnr"] - 0.5  # no region is worse than the average
    assert out["psnr"] >= out["psnr_shifted"] + 15  # one latent pixel of misplacement would score here


@pytest.mark.heavy
def test_wan21_video_full_vs_tiled(run_in_comfy):
    """Wan 2.1 VAE, 2 latent frames (5 video frames): 5-D output flattened like VAEDecode; tiles under pressure."""
    out = run_in_comfy(HELPERS + r'''
vae = wan21_vae()
g = torch.Generator().manual_seed(11)
z = torch.randn((1, 16, 2, 32, 32), generator=g)
node = PACK.NODE_CLASS_MAPPINGS["VAEDecodeAutoTiled"]()
margin = 0.25
t0 = time.perf_counter(); (full,) = node.decode({"samples": z}, vae, memory_budget_gb=64.0, safety_margin_gb=margin); t_full = time.perf_counter() - t0
text_full = CAP.lines[-1]
need = VM.with_headroom(VM.op_bytes("vae-wan2.1", "decode", VM.Shape(1, 2, 32, 32), dtype_bytes=4, comfy_version=VERSION))
budget_gb = 0.7 * need / GiB  # typed: the margin is not taken off it
plan = VM.plan_decode("vae-wan2.1", (1, 16, 2, 32, 32), int(budget_gb * GiB), 0, 4, comfy_version=VERSION)
t0 = time.perf_counter(); (tiled,) = node.decode({"samples": z}, vae, memory_budget_gb=budget_gb, safety_margin_gb=margin); t_tiled = time.perf_counter() - t0
text_tiled = CAP.lines[-1]
mask = interior_mask(256, 256, plan.tile_h, plan.tile_w, plan.overlap, 8)
print(json.dumps({
  "shape": list(full.shape), "tiled_shape": list(tiled.shape), "text_full": text_full, "text_tiled": text_tiled,
  "plan": [plan.tiled, plan.tile_h, plan.tile_w, plan.overlap, plan.tile_t, plan.tiles], "kwargs": plan.decode_tiled_kwargs(),
  "psnr": psnr(full, tiled), "psnr_interior": psnr(full, tiled, mask.unsqueeze(0).unsqueeze(-1).expand_as(full)),
  "interior_fraction": mask.float().mean().item(), "t_full": t_full, "t_tiled": t_tiled,
  "psnr_shifted": psnr(full, torch.roll(full, 8, dims=2)),
  "clamped": ((full == 0) | (full == 1)).float().mean().item(),
}))
''', timeout=1200)
    print(f"\nWan 2.1 VAE 32x32x2 latent (5 frames of 256 px): PSNR tiled vs full {out['psnr']:.2f} dB overall, "
          f"{out['psnr_interior']:.2f} dB in tile interiors ({out['interior_fraction']:.0%}); "
          f"shifted by 8 px: {out['psnr_shifted']:.2f} dB; plan {out['plan']}; "
          f"full {out['t_full']:.1f} s, tiled {out['t_tiled']:.1f} s")
    assert out["shape"] == [5, 256, 256, 3] == out["tiled_shape"]  # [B*T, H, W, C]
    assert "decoded in one go" in out["text_full"]
    tiled, th, tw, overlap, tile_t, tiles = out["plan"]
    assert tiled and tiles <= 3 and tile_t == 2, out["plan"]  # a few large tiles, all frames each
    assert out["kwargs"]["tile_t"] is None  # all frames per tile: no temporal seams
    assert f"{tiles} tiles of {th * 8}x{tw * 8} px" in out["text_tiled"], out["text_tiled"]
    assert out["clamped"] < 0.02
    assert out["psnr"] < 80
    assert out["psnr"] >= 33.0
    assert out["psnr_interior"] >= out["psnr"] - 0.5
    assert out["psnr"] >= out["psnr_shifted"] + 10


def test_typed_budget_is_the_budget_and_tiles_run_in_one_pass(run_in_comfy):
    """Issue 12 item 7: a typed memory_budget_gb is the budget (the default 0.5 GiB safety margin is
    not taken off it: 0.5 typed left nothing, and a 768 px decode ran in 177 tiles of 128 px); the
    fastest tiles that fit run in ONE pass of ComfyUI's tiler (not decode_tiled's three); a latent
    no larger than one tile decodes in one go, with no tiling call at all."""
    out = run_in_comfy(HELPERS + r'''
vae = flux_vae()
fsm = vae.first_stage_model
orig, orig_tiled = fsm.decode, vae.decode_tiled
calls, tiled_calls = [], []
def counting(x, *a, **k):
    calls.append(list(x.shape[-2:]))
    return orig(x, *a, **k)
def counting_tiled(*a, **k):
    tiled_calls.append(k)
    return orig_tiled(*a, **k)
fsm.decode = counting
vae.decode_tiled = counting_tiled
node = PACK.NODE_CLASS_MAPPINGS["VAEDecodeAutoTiled"]()
z = torch.randn((1, 16, 48, 48), generator=torch.Generator().manual_seed(20))
need = VM.with_headroom(VM.op_bytes("vae-kl16", "decode", VM.Shape(1, None, 48, 48), dtype_bytes=4, comfy_version=VERSION))
budget_gb = need / 3 / GiB  # a third of the one go's need, well below the 0.5 GiB default margin
plan = VM.plan_decode("vae-kl16", (1, 16, None, 48, 48), int(budget_gb * GiB), 0, 4, comfy_version=VERSION)
(img,) = node.decode({"samples": z}, vae, memory_budget_gb=budget_gb)  # safety margin left at its default
first = {"calls": list(calls), "tiled_calls": len(tiled_calls), "line": CAP.lines[-1]}
calls.clear(); tiled_calls.clear()
small = torch.randn((1, 16, 16, 16), generator=torch.Generator().manual_seed(21))
(img2,) = node.decode({"samples": small}, vae, memory_budget_gb=64.0, mode="force tiled")
second = {"calls": list(calls), "tiled_calls": len(tiled_calls), "line": CAP.lines[-1]}
fsm.decode = orig
(ref2,) = __import__("nodes").VAEDecode().decode(vae, {"samples": small})
print(json.dumps({"first": first, "second": second, "shape": list(img.shape), "same_small": bool(torch.equal(img2, ref2)),
                  "plan": [plan.tiled, plan.fits, plan.tiles, plan.tile_h, plan.tile_w, plan.time_ratio],
                  "budget": VM.fmt_gib(int(budget_gb * GiB)), "default_margin": VD.DEFAULT_MARGIN_GB, "budget_gb": budget_gb}))
''', timeout=900)
    first, second = out["first"], out["second"]
    tiled, fits, tiles, th, tw, ratio = out["plan"]
    print(f"\nFlux VAE 48x48 latent, memory_budget_gb {out['budget_gb']:.3f} typed: {first['line']}")
    assert out["budget_gb"] < out["default_margin"]  # the old code took the margin off: nothing was left
    assert tiled and fits and tiles <= 6 and ratio <= 2.5, out["plan"]
    assert out["shape"] == [1, 384, 384, 3]
    # one pass of the tiler: exactly the planned decoder calls, none larger than the tile, no decode_tiled
    assert first["tiled_calls"] == 0 and len(first["calls"]) == tiles, first
    assert all(h <= th and w <= tw for h, w in first["calls"]), first["calls"]
    assert f"decoded in {tiles} tiles of {th * 8}x{tw * 8} px" in first["line"], first["line"]
    assert f"budget {out['budget']}" in first["line"] and "may not fit" not in first["line"]
    assert f"budget: memory_budget_gb = {out['budget_gb']:g}" in first["line"], first["line"]
    # a latent no larger than one tile (128 px): one go, even when tiling is forced
    assert second["tiled_calls"] == 0 and second["calls"] == [[16, 16]], second
    assert "decoded in one go" in second["line"] and "no larger than one tile" in second["line"], second["line"]
    assert out["same_small"], "one go must be exactly VAEDecode's result"


def test_oom_retry_memory_and_kept_latent(run_in_comfy):
    """Out of memory anyway: halve the tile and retry (outside the except block), remember what worked,
    and, when nothing works, say that the latent is kept. TAESD (fast, real ComfyUI VAE class, not traced:
    planned from ComfyUI's own estimate) with out-of-memory errors injected above a tile size."""
    out = run_in_comfy(HELPERS + r'''
vae = taesd_vae()
fsm = vae.first_stage_model
orig = fsm.decode
state = {"limit": 24 * 24, "calls": [], "ooms": 0}
def guarded(x, *a, **k):
    area = x.shape[-1] * x.shape[-2]
    state["calls"].append(area)
    if area > state["limit"]:
        state["ooms"] += 1
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected by the test)")
    return orig(x, *a, **k)
fsm.decode = guarded
g = torch.Generator().manual_seed(12)
z = torch.randn((1, 4, 64, 64), generator=g)
z_before = z.clone()
node = PACK.NODE_CLASS_MAPPINGS["VAEDecodeAutoTiled"]()
# force tiles with plenty of memory: the planner picks 56-latent tiles, which "run out of memory"
(img,) = node.decode({"samples": z}, vae, memory_budget_gb=64.0, safety_margin_gb=0.0, mode="force tiled")
first = {"text": CAP.lines[-1], "ooms": state["ooms"], "warn": [l for l in CAP.lines if "out of memory" in l]}
state["ooms"] = 0; state["calls"].clear()
(img2,) = node.decode({"samples": z}, vae, memory_budget_gb=64.0, safety_margin_gb=0.0, mode="force tiled")
second = {"text": CAP.lines[-1], "ooms": state["ooms"]}
# now nothing fits at all (and nothing is remembered, so it walks down from the largest tile)
VD.PLAN_MEMORY.clear()
state["limit"] = 0; state["ooms"] = 0
err = None
try:
    node.decode({"samples": z}, vae, memory_budget_gb=64.0, safety_margin_gb=0.0, mode="force tiled")
except Exception as e:
    err = [type(e).__name__, str(e)]
print(json.dumps({"first": first, "second": second, "err": err, "same": bool(torch.equal(img, img2)),
                  "shape": list(img.shape), "latent_untouched": bool(torch.equal(z, z_before)),
                  "final_ooms": state["ooms"]}))
''', timeout=600)
    first, second = out["first"], out["second"]
    assert first["ooms"] >= 1 and "retr" in first["text"], first
    assert "tiles of" in first["text"]
    assert any("out of memory" in w for w in first["warn"])
    assert second["ooms"] == 0, "the second run must start from the tile that worked"
    assert "remembered" in second["text"]
    assert out["same"] and out["shape"] == [1, 512, 512, 3]
    assert out["latent_untouched"]
    name, msg = out["err"]
    assert name == "PlanError"
    assert "not lost" in msg and "Queue" in msg and "cache" in msg
    assert out["final_ooms"] >= 3  # it walked down the tile sizes before giving up


def test_comfy_fallback_reported(run_in_comfy):
    """A one-go decode that runs out of memory inside vae.decode: ComfyUI's own fallback tiles it; the node says so."""
    out = run_in_comfy(HELPERS + r'''
vae = taesd_vae()
fsm = vae.first_stage_model
orig = fsm.decode
state = {"left": 1}
def once(x, *a, **k):
    if state["left"]:
        state["left"] -= 1
        raise torch.OutOfMemoryError("CUDA out of memory (injected)")
    return orig(x, *a, **k)
fsm.decode = once
z = torch.randn((1, 4, 32, 32), generator=torch.Generator().manual_seed(13))
node = PACK.NODE_CLASS_MAPPINGS["VAEDecodeAutoTiled"]()
(img,) = node.decode({"samples": z}, vae, memory_budget_gb=64.0)
print(json.dumps({"text": CAP.lines[-1], "shape": list(img.shape)}))
''', timeout=300)
    assert "ComfyUI's own tiled fallback ran" in out["text"]
    assert out["shape"] == [1, 256, 256, 3]


def test_encode_node(run_in_comfy):
    """VAE Encode (Auto Tiled): room -> same latent as VAEEncode; pressure -> encode_tiled; shapes agree."""
    out = run_in_comfy(HELPERS + r'''
vae = taesd_vae()
px = torch.rand((2, 256, 256, 3), generator=torch.Generator().manual_seed(14))
node = PACK.NODE_CLASS_MAPPINGS["VAEEncodeAutoTiled"]()
(full,) = node.encode(px, vae, memory_budget_gb=64.0)
t_full = CAP.lines[-1]
(ref,) = __import__("nodes").VAEEncode().encode(vae, px)
info = sys.modules[PACK.__name__ + ".nodes.comfy_bridge"].vae_info(vae)
model = VD._model_for(vae, info, "encode", (2, 3, 256, 256), VM.Shape(2, None, 256, 256))
need_one = VM.with_headroom(VM.op_bytes(model, "encode", VM.Shape(1, None, 256, 256), dtype_bytes=4))
(half,) = node.encode(px, vae, memory_budget_gb=1.2 * need_one / GiB, safety_margin_gb=0.0)
t_half = CAP.lines[-1]
(tiled,) = node.encode(px, vae, memory_budget_gb=0.5 * need_one / GiB, safety_margin_gb=0.0)
t_tiled = CAP.lines[-1]
d = lambda a, b: (a["samples"] - b["samples"]).abs().max().item()
print(json.dumps({"t_full": t_full, "t_half": t_half, "t_tiled": t_tiled, "full_vs_ref": d(full, ref),
                  "half_vs_ref": d(half, ref), "shapes": [list(full["samples"].shape), list(tiled["samples"].shape)],
                  "tiled_rel_err": ((tiled["samples"] - ref["samples"]).norm() / ref["samples"].norm()).item()}))
''', timeout=300)
    assert "encoded in one go" in out["t_full"] and out["full_vs_ref"] == 0.0
    assert "1 of 2 at a time" in out["t_half"] and out["half_vs_ref"] < 1e-5
    assert "encoded in" in out["t_tiled"] and "tiles of" in out["t_tiled"]
    assert out["shapes"][0] == out["shapes"][1] == [2, 4, 32, 32]
    assert out["tiled_rel_err"] < 0.5
