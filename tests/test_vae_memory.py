"""VAE working-memory model and auto-tiling planner (no ComfyUI, no torch)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vram_budget.nodes.estimator.physics import vae_memory as vm
from vram_budget.nodes.estimator.errors import PlanError, VramBudgetError
from vram_budget.nodes.estimator.units import GiB, MiB

DATA = json.loads(vm.DATA_FILE.read_text())
FAMS = ("vae-kl4", "vae-kl16", "vae-wan2.1", "vae-wan2.2", "vae-hunyuan", "vae-ltxv")
VIDEO = ("vae-wan2.1", "vae-wan2.2", "vae-hunyuan", "vae-ltxv")


def latent_for(family: str, batch: int, frames: int | None, h: int, w: int) -> tuple:
    return (batch, vm.FAMILIES[family].latent_channels, frames, h, w)


# ----------------------------------------------------------------------------------------------
# The traced data and the model read from it
def test_data_has_provenance_for_both_comfy_versions():
    assert set(DATA["profiles"]) >= {"0.8.0", "0.18.2"}
    for version, prof in DATA["profiles"].items():
        assert prof["comfyui_version"] == version
        for key in ("torch", "date", "method", "comfyui_source"):
            assert prof[key], key
        # 0.8.0 and 0.18.2 traced every family; a newer profile adds the families only it has (0.33.0: CogVideoX's
        # VAE), the others read from the nearest profile below that traced them (vae_memory.memory_model)
        base = ("vae-kl4", "vae-kl16", "vae-wan2.1", "vae-wan2.2") if version in ("0.8.0", "0.18.2") else ()
        assert base or prof["families"], version
        for fam in base or tuple(prof["families"]):
            entry = prof["families"][fam]
            assert entry["points"], (version, fam)
            assert not [s for s in entry["skipped"] if "deadline" in s or "over" in s], entry["skipped"]
            ops = {p["op"] for p in entry["points"]}
            assert ops == {"decode", "decode_tile", "encode"}


@pytest.mark.parametrize("version", ["0.8.0", "0.18.2", "0.33.0"])
def test_model_reproduces_every_traced_point(version):
    """The model never predicts less than a trace, and at most a few % more (envelope over resolutions)."""
    worst_low, worst_high = 1.0, 1.0
    for fam, entry in DATA["profiles"][version]["families"].items():
        if fam in vm.MEDIA_FAMILIES:  # audio / 3D: test_media_decode_reproduces_every_traced_point
            continue
        spatial = vm.FAMILIES[fam].spatial
        for p in entry["points"]:
            shape = p["shape"]
            frames = shape[2] if len(shape) == 5 else None
            if p["op"] == "encode":
                pred = vm.vae_encode_bytes(fam, (shape[0], frames, shape[-2], shape[-1]), dtype_bytes=p["dtype_bytes"],
                                           comfy_version=version)
            else:
                pred = vm.vae_decode_bytes(fam, (shape[0], shape[1], frames, shape[-2], shape[-1]),
                                           dtype_bytes=p["dtype_bytes"], comfy_version=version)
            ratio = pred / p["peak_bytes"]
            if "chunk_bytes" in entry:
                # LTX-2's chunked decode (fixed-size IO chunks) peaks unevenly in the frame count; the
                # model's "more frames never need less" envelope stays above every trace (checked below)
                worst_low = min(worst_low, ratio)
                continue
            worst_low, worst_high = min(worst_low, ratio), max(worst_high, ratio)
            assert spatial
    assert worst_low >= 0.999
    assert worst_high <= 1.03


def test_peak_scales_with_pixels_batch_and_dtype():
    base = vm.vae_decode_bytes("vae-kl16", latent_for("vae-kl16", 1, None, 64, 64))
    assert vm.vae_decode_bytes("vae-kl16", latent_for("vae-kl16", 1, None, 128, 128)) == pytest.approx(4 * base, rel=1e-6)
    assert vm.vae_decode_bytes("vae-kl16", latent_for("vae-kl16", 2, None, 64, 64)) == pytest.approx(2 * base, rel=1e-6)
    fp32 = vm.vae_decode_bytes("vae-kl16", latent_for("vae-kl16", 1, None, 64, 64), dtype_bytes=4)
    assert 1.9 * base <= fp32 <= 2.1 * base
    # SDXL's and Flux's decoders differ only in conv_in: same working memory
    sdxl = vm.vae_decode_bytes("vae-kl4", latent_for("vae-kl4", 1, None, 64, 64))
    assert sdxl == pytest.approx(base, rel=0.01)


@pytest.mark.parametrize("family", ["vae-wan2.1", "vae-wan2.2"])
def test_wan_streams_frames(family):
    """Wan decodes frame chunks with a cache: past the first chunks only the output grows (~1 byte per output byte)."""
    lat = lambda t: latent_for(family, 1, t, 60, 104)
    one, two, three, many, more = (vm.vae_decode_bytes(family, lat(t)) for t in (1, 2, 3, 21, 41))
    assert one < two < three < many < more
    assert many < 1.1 * three  # 21 latent frames (81 video frames) cost barely more than 3
    for version in vm.profiles():
        lin = vm.linear_summary(family, 2, version)
        assert 0.8 <= lin["b"] <= 1.3, lin
        assert lin["a"] > 0 and lin["c"] == 0.0


def test_profile_selection_and_envelope():
    lat = latent_for("vae-wan2.2", 1, 21, 44, 80)
    a = vm.vae_decode_bytes("vae-wan2.2", lat, comfy_version="0.8.0")
    b = vm.vae_decode_bytes("vae-wan2.2", lat, comfy_version="0.18.2")
    assert a != b  # the Wan VAE's chunking changed between these versions
    assert vm.vae_decode_bytes("vae-wan2.2", lat, comfy_version="0.12.1") == a  # nearest traced version below
    assert vm.vae_decode_bytes("vae-wan2.2", lat, comfy_version="1.2.0") == b
    assert vm.vae_decode_bytes("vae-wan2.2", lat, comfy_version="0.3.0") == a
    assert vm.vae_decode_bytes("vae-wan2.2", lat) >= max(a, b)  # no version: the larger
    # LTXV could not be traced on 0.18.2 (its decoder sizes chunks from the device's free memory)
    ltx = latent_for("vae-ltxv", 1, 5, 15, 26)
    assert vm.vae_decode_bytes("vae-ltxv", ltx, comfy_version="0.18.2") == vm.vae_decode_bytes("vae-ltxv", ltx, comfy_version="0.8.0")


def test_traced_model_is_below_comfyui_heuristic():
    """ComfyUI's memory_used_decode is deliberately generous (its comment: 'should be lower')."""
    for fam, lat in (("vae-kl16", (1, 16, None, 128, 128)), ("vae-wan2.1", (1, 16, 21, 90, 160)),
                     ("vae-wan2.2", (1, 48, 21, 44, 80))):
        assert vm.vae_decode_bytes(fam, lat) < vm.comfy_heuristic_decode_bytes(fam, lat)


def test_weights_fallback_matches_public_files():
    # ae.safetensors (Flux.1) is 335 MB in fp32; Wan2.1_VAE.pth 508 MB (fp32); wan2.2_vae 1.41 GB (fp16)
    assert 330e6 < vm.vae_weights_bytes("vae-kl16", 4) < 340e6
    assert 500e6 < vm.vae_weights_bytes("vae-wan2.1", 4) < 515e6
    assert 1.38e9 < vm.vae_weights_bytes("vae-wan2.2", 2) < 1.44e9


def test_tiles_cost_a_tile_not_the_image():
    lat = latent_for("vae-kl16", 1, None, 256, 256)
    tile = vm.vae_decode_bytes("vae-kl16", lat, tile=64, overlap=8)
    # ComfyUI's 2-D tiler runs 128x32, 32x128 and 64x64 passes: one 64x64-area tile at a time
    assert tile == vm.vae_decode_bytes("vae-kl16", latent_for("vae-kl16", 1, None, 64, 64))
    # batch items are tiled one at a time
    assert vm.vae_decode_bytes("vae-kl16", latent_for("vae-kl16", 4, None, 256, 256), tile=64) == tile
    wan = latent_for("vae-wan2.1", 1, 21, 90, 160)
    assert vm.vae_decode_bytes("vae-wan2.1", wan, tile=32) == vm.vae_decode_bytes("vae-wan2.1", latent_for("vae-wan2.1", 1, 21, 32, 32))
    assert vm.vae_decode_bytes("vae-wan2.1", wan, tile=32, tile_t=5) < vm.vae_decode_bytes("vae-wan2.1", wan, tile=32)


def test_encode_bytes():
    img = vm.vae_encode_bytes("vae-kl16", (1, None, 1024, 1024))
    assert vm.vae_encode_bytes("vae-kl16", (1, None, 2048, 2048)) == pytest.approx(4 * img, rel=1e-6)
    clip = vm.vae_encode_bytes("vae-wan2.1", (1, 81, 720, 1280))
    assert clip < 1.3 * vm.vae_encode_bytes("vae-wan2.1", (1, 17, 720, 1280))  # streams frames too


def test_workload_latent_shape_accepted():
    from vram_budget.nodes.estimator.workload import LatentShape

    ls = LatentShape(batch=1, channels=16, height=60, width=104, frames=21)
    assert vm.vae_decode_bytes("vae-wan2.1", ls) == vm.vae_decode_bytes("vae-wan2.1", (1, 16, 21, 60, 104))


def test_errors_name_the_problem():
    with pytest.raises(VramBudgetError, match="unknown VAE family 'vae-nope'") as err:
        vm.vae_decode_bytes("vae-nope", (1, 4, None, 64, 64))
    assert "vae-kl4" not in str(err.value)  # a user reads it: no list of internal ids
    with pytest.raises(VramBudgetError, match="architecture is not recognised"):
        vm.vae_decode_bytes("unknown", (1, 4, None, 64, 64))
    with pytest.raises(VramBudgetError, match="latent shape"):
        vm.vae_decode_bytes("vae-kl4", (64, 64))
    with pytest.raises(PlanError, match="mode"):
        vm.plan_decode("vae-kl4", (1, 4, None, 64, 64), GiB, 0, 2, mode="sometimes")


def test_comfy_tiled_node_conversion():
    assert vm.tiled_node_to_latent("vae-kl16") == {"tile": 64, "overlap": 8, "tile_t": None, "overlap_t": None}
    assert vm.tiled_node_to_latent("vae-wan2.1") == {"tile": 64, "overlap": 8, "tile_t": 16, "overlap_t": 2}
    assert vm.tiled_node_to_latent("vae-wan2.2", 256, 128) == {"tile": 16, "overlap": 4, "tile_t": 16, "overlap_t": 2}


# ----------------------------------------------------------------------------------------------
# The planner
def comfy_positions(size: int, tile: int, overlap: int) -> int:
    """Tiles along one axis as comfy.utils.tiled_scale_multidim enumerates them."""
    if size <= tile:
        return 1
    return len(range(0, size - overlap, tile - overlap))


def comfy_tile_count(plan: vm.DecodePlan) -> int:
    s = plan.shape
    ov = plan.overlap
    if s.frames is None and plan.passes == 1:  # decode: one pass of tiled_scale
        return s.batch * comfy_positions(s.height, plan.tile_h, ov) * comfy_positions(s.width, plan.tile_w, ov)
    if s.frames is None:
        th, tw = plan.tile_h, plan.tile_w
        tile = max(th, tw)  # the planner's square tile before clipping
        passes = ((tile * 2, tile // 2), (tile // 2, tile * 2), (tile, tile))
        return s.batch * sum(comfy_positions(s.height, h, ov) * comfy_positions(s.width, w, ov) for h, w in passes)
    kw = plan.decode_tiled_kwargs()
    tt = kw["tile_t"] or 999
    ovt = kw["overlap_t"] or 1
    return s.batch * comfy_positions(s.frames, tt, ovt) * comfy_positions(s.height, kw["tile_x"], ov) * comfy_positions(s.width, kw["tile_y"], ov)


CASES = [
    # family, latent (B, T|None, H, W), free GiB, expect
    ("vae-kl16", (1, None, 128, 128), 24.0, "full"),  # Flux 1024^2 on a 24 GB card
    ("vae-kl16", (1, None, 128, 128), 2.0, "full"),
    ("vae-kl16", (1, None, 128, 128), 1.0, "tiled"),
    ("vae-kl16", (1, None, 256, 256), 4.0, "tiled"),  # 2048^2
    ("vae-kl16", (1, None, 256, 256), 8.0, "full"),
    ("vae-kl4", (4, None, 128, 128), 3.5, "batch"),  # SDXL batch of 4, room for 2
    ("vae-kl4", (8, None, 64, 64), 0.5, "tiled"),
    ("vae-kl16", (1, None, 96, 160), 0.35, "tiled"),
    ("vae-wan2.1", (1, 21, 60, 104), 12.0, "full"),  # 832x480, 81 frames
    ("vae-wan2.1", (1, 21, 60, 104), 2.0, "tiled"),
    ("vae-wan2.1", (1, 21, 90, 160), 6.0, "tiled"),  # 1280x720
    ("vae-wan2.1", (1, 61, 90, 160), 0.41, "temporal"),  # 241 frames, 160 MiB left
    ("vae-wan2.1", (1, 1, 90, 160), 1.0, "tiled"),
    ("vae-wan2.2", (1, 31, 44, 80), 16.0, "full"),  # 1280x704, 121 frames
    ("vae-wan2.2", (1, 31, 44, 80), 4.0, "tiled"),
    ("vae-wan2.2", (1, 31, 44, 80), 0.05, "nothing"),
    ("vae-hunyuan", (1, 33, 60, 104), 8.0, "tiled"),
    ("vae-ltxv", (1, 16, 15, 26), 2.0, "temporal"),  # LTXV: peak grows with frames, chunks are fastest
]


@pytest.mark.parametrize("family,shape,free_gib,expect", CASES)
def test_plan_cases(family, shape, free_gib, expect):
    b, t, h, w = shape
    lat = latent_for(family, b, t, h, w)
    margin = int(0.25 * GiB)
    free = int(free_gib * GiB)
    plan = vm.plan_decode(family, lat, free, margin, 2)
    budget = free - margin
    assert plan.budget == budget
    assert plan.full_peak == vm.vae_decode_bytes(family, lat)
    assert plan.required == vm.with_headroom(plan.predicted_peak)
    assert plan.reason and plan.summary()
    if expect == "nothing":
        assert not plan.fits and plan.tiled and "may not fit" in plan.summary()
        return
    assert plan.fits and plan.required <= budget
    if expect == "full":
        assert not plan.tiled and plan.batch_chunk == b and plan.decode_tiled_kwargs() == {}
        assert "decoded in one go" in plan.summary()
        return
    if expect == "batch":
        assert not plan.tiled and 1 <= plan.batch_chunk < b
        bigger = vm.vae_decode_bytes(family, latent_for(family, plan.batch_chunk + 1, t, h, w))
        assert vm.with_headroom(bigger) > budget  # the largest batch chunk that fits
        return
    assert plan.tiled and plan.passes == 1  # decode tiles: one pass (tests/test_vae_tiling.py: the fastest)
    fam = vm.FAMILIES[family]
    step, floor = vm.tile_grid("decode", fam.spatial)
    assert (plan.tile_h, plan.tile_w, plan.tile_t) != (h, w, t)  # never the whole latent as one "tile"
    for side, size in ((plan.tile_h, h), (plan.tile_w, w)):
        assert side == size or floor <= side < size
    assert 0 < plan.overlap < min(plan.tile_h, plan.tile_w)
    assert plan.tiles == comfy_tile_count(plan)
    assert f"{plan.tiles} tiles" in plan.summary()
    assert plan.predicted_peak == vm.vae_decode_bytes(family, lat, tile=(plan.tile_h, plan.tile_w), tile_t=plan.tile_t,
                                                      passes=1)
    if expect == "temporal":
        assert plan.tile_t is not None and 2 <= plan.tile_t < t
        assert 1 <= plan.overlap_t < plan.tile_t
        assert plan.decode_tiled_kwargs()["tile_t"] == plan.tile_t
        return
    assert t is None or plan.tile_t == t  # all frames per tile: no temporal seams


def test_modes():
    lat = (1, 16, None, 128, 128)
    roomy = vm.plan_decode("vae-kl16", lat, 24 * GiB, 0, 2, mode="force_tiled")
    assert roomy.tiled and roomy.fits and roomy.tiles == 2  # the fastest split: two halves
    assert roomy.time_ratio < 1.1
    tight = vm.plan_decode("vae-kl16", lat, 256 * MiB, 0, 2, mode="never_tiled")
    assert not tight.tiled and not tight.fits and "tiling disabled" in tight.reason


def test_decode_tiled_kwargs_follow_comfy_axis_names():
    img = vm.decode_tile_plan("vae-kl16", (1, 16, None, 64, 200), 48, 72)
    assert img.tiled and img.tile_h == 48 and img.tile_w == 72
    kw = img.decode_tiled_kwargs()
    assert kw["tile_x"] == img.tile_w and kw["tile_y"] == img.tile_h  # 2-D: tile_y = rows (tiled_scale)
    vid = vm.decode_tile_plan("vae-wan2.1", (1, 16, 5, 40, 200), 40, 88)
    assert vid.tiled and vid.tile_h == 40 and vid.tile_w == 88
    kw = vid.decode_tiled_kwargs()
    assert kw["tile_x"] == vid.tile_h and kw["tile_y"] == vid.tile_w  # 3-D: tile_x = rows (decode_tiled_3d)
    assert kw["tile_t"] is None and kw["overlap_t"] is None


def test_encode_plans():
    plan = vm.plan_encode("vae-wan2.1", (1, 81, 720, 1280), int(1.5 * GiB), 0, 2)
    assert plan.tiled and plan.fits and plan.tile_h % 64 == 0 and plan.tile_h >= 128
    assert plan.decode_tiled_kwargs()["tile_t"] is None
    assert "encoded in" in plan.summary()
    img = vm.plan_encode("vae-kl16", (2, None, 1024, 1024), 24 * GiB, 0, 2)
    assert not img.tiled and img.batch_chunk == 2


def test_smaller_plan_walks_down_and_stops():
    plan = vm.plan_decode("vae-wan2.1", (2, 16, 9, 60, 104), 64 * GiB, 0, 2)
    assert not plan.tiled and plan.batch_chunk == 2
    seen = [plan]
    while (nxt := vm.smaller_plan(seen[-1])) is not None:
        assert nxt.predicted_peak <= seen[-1].predicted_peak
        assert "out of memory" in nxt.reason
        seen.append(nxt)
        assert len(seen) < 30
    kinds = [("tiled" if p.tiled else f"full{p.batch_chunk}") for p in seen]
    assert kinds[:3] == ["full2", "full1", "tiled"]
    last = seen[-1]
    assert last.tile_h == 16 and last.tile_t == 2  # spatial floor, then frames down to 2
    assert seen[-2].predicted_peak > last.predicted_peak


# ----------------------------------------------------------------------------------------------
# Properties
# Decode: more memory never gives more or smaller tiles, and the tiles are what ComfyUI runs:
# tests/test_vae_tiling.py (the planner's properties since issue 12 item 7).


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FAMS), st.integers(1, 3), st.integers(1, 97), st.integers(64, 2048), st.integers(64, 2048),
       st.floats(0.0, 20.0), st.floats(0.0, 20.0))
def test_encode_more_memory_never_gives_a_smaller_plan(family, batch, frames, h, w, free_gib, extra_gib):
    t = frames if family in VIDEO else None
    b = 1 if t is not None else batch
    p1 = vm.plan_encode(family, (b, t, h, w), int(free_gib * GiB), 0, 2)
    p2 = vm.plan_encode(family, (b, t, h, w), int((free_gib + extra_gib) * GiB), 0, 2)
    if not p1.tiled:
        assert not p2.tiled and p2.batch_chunk >= p1.batch_chunk
    elif p2.tiled:
        assert max(p2.tile_h, p2.tile_w) >= max(p1.tile_h, p1.tile_w)
    for p in (p1, p2):
        if p.tiled:
            step, floor = vm.tile_grid("encode", vm.FAMILIES[family].spatial)
            tile = max(p.tile_h, p.tile_w)
            assert tile % step == 0 or tile == min(floor, max(h, w))
            assert p.tile_t in (None, t)  # encode streams frames: spatial tiles only
            assert p.overlap % vm.FAMILIES[family].spatial == 0 and p.overlap < tile
            if p.fits:
                assert p.required <= p.budget


def test_flux2_vae_is_priced_with_the_flux1_decoders_traced_points():
    from vram_budget.nodes.estimator.physics import vae_memory as V

    # Flux.2: 128-channel latent at /16 (32 ch packed 2x2); Flux.1: 16 ch at /8 - the same 1024² image
    assert V.vae_decode_bytes("vae-flux2", (1, 128, None, 64, 64)) == V.vae_decode_bytes("vae-kl16", (1, 16, None, 128, 128))
    assert V.vae_decode_bytes("vae-flux2", (1, 128, None, 128, 128)) > V.vae_decode_bytes("vae-flux2", (1, 128, None, 64, 64))
    assert "Flux.1's KL decoder" in V.memory_model("vae-flux2").source


def test_media_decode_reproduces_every_traced_point():
    """Audio VAEs (length-interpolated, batch as ComfyUI decodes it) and the Hunyuan3D shape VAE (fitted on
    octree resolution and chunk size) never predict less than a traced decode, and at most 3 % more."""
    checked = 0
    for fam in vm.MEDIA_FAMILIES:
        for p in vm._media_points(fam):
            if p["op"] != "decode":
                continue
            if fam == "vae-hunyuan3d":
                pred, _ = vm.hunyuan3d_decode_bytes(p["shape"][0], p["octree_resolution"], p["num_chunks"],
                                                    dtype_bytes=p["dtype_bytes"], tokens=p["shape"][2])
            else:
                pred, _ = vm.media_decode_bytes(fam, p["shape"], dtype_bytes=p["dtype_bytes"])
            assert 0.999 <= pred / p["peak_bytes"] <= 1.03, (fam, p["shape"], p.get("octree_resolution"), pred, p["peak_bytes"])
            checked += 1
    assert checked >= 20
    # longer audio costs more, linearly past the longest trace
    five, ten = (vm.media_decode_bytes("vae-ltx2-audio", (1, 8, t, 16))[0] for t in (125, 250))
    assert 1.9 < ten / five < 2.1


def test_an_autoencoderkl_decode_on_amd_is_priced_with_comfyuis_own_ratio():
    """comfy/sd.py VAE_KL_MEM_RATIO (2.73 on AMD, 1.0 elsewhere; :492-498 in 0.33): the decode's working memory,
    ComfyUI's own estimate and the auto-tiled plan all follow it; a VAE of another class (Wan) does not."""
    from pathlib import Path

    from vram_budget.nodes.estimator.cli.cli_estimate import device_from_args
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.plan.planning import estimate
    from vram_budget.nodes.estimator.workload import VAE_DECODE
    import argparse

    from vram_budget.nodes.estimator.cli.cli_estimate import add_estimate_parser

    assert vm.amd_kl_ratio("vae-kl16", "AMD") == vm.AMD_KL_MEM_RATIO == 2.73
    assert vm.amd_kl_ratio("vae-kl16", "NVIDIA") == vm.amd_kl_ratio("vae-wan2.1", "AMD") == 1.0
    repo = Path(__file__).resolve().parents[1]

    def decode(workflow, card):
        p = argparse.ArgumentParser()
        add_estimate_parser(p.add_subparsers(dest="command"))
        args = p.parse_args(["estimate", "x.json", "--gpu", card])
        b = estimate(read_workflow(json.loads((repo / "example_workflows" / workflow).read_text())),
                     device_from_args(args), None)
        i = next(k for k, sb in enumerate(b.stages) if sb.stage.kind == VAE_DECODE)
        return b.stages[i], b.runs[i]

    nv, _ = decode("flux_dev_1024.json", "RTX 4090")
    amd, amd_run = decode("flux_dev_1024.json", "RX 7900 XTX")
    assert amd.working_bytes == pytest.approx(2.73 * nv.working_bytes, rel=1e-3)
    assert any("VAE_KL_MEM_RATIO" in r for r in amd_run.rules)
    assert any("AMD" in (it.assumption or "") for it in amd.items if it.category == "working")
    wan_nv, _ = decode("wan22_14b_i2v_720p.json", "RTX 4090")
    wan_amd, _ = decode("wan22_14b_i2v_720p.json", "RX 7900 XTX")
    assert wan_amd.working_bytes == wan_nv.working_bytes
    # the auto-tiled node plans for the memory divided by the ratio: what it then holds fits that memory
    tiled_nv, _ = decode("flux_auto_tiled_decode.json", "RTX 3060")
    tiled_amd, _ = decode("flux_auto_tiled_decode.json", "RX 6700 XT")
    assert tiled_amd.working_bytes <= 12 * GiB


def test_the_kl_rules_follow_the_families_own_flag():
    """Issue 34: ComfyUI's AutoencoderKL rules (fp32 without bf16, 2.73x on AMD) read VaeFamily.kl, set in the family
    modules, instead of a list of ids typed in two places."""
    from vram_budget.nodes.estimator.families.registry import VAE_FAMILIES
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.machine.resolve import vae_dtype_bytes
    from vram_budget.nodes.estimator.physics.vae_memory import AMD_KL_MEM_RATIO, amd_kl_ratio

    kl = {k for k, v in VAE_FAMILIES.items() if v.kl}
    assert kl == {"vae-kl4", "vae-kl16", "vae-flux2"}
    pascal = Device.from_card(find_card("GTX 1080 Ti"))
    assert not pascal.bf16
    assert {f: vae_dtype_bytes(f, pascal) for f in ("vae-kl4", "vae-flux2", "vae-wan2.1")} == \
        {"vae-kl4": 4, "vae-flux2": 4, "vae-wan2.1": 2}
    assert amd_kl_ratio("vae-kl16", "AMD") == AMD_KL_MEM_RATIO and amd_kl_ratio("vae-wan2.1", "AMD") == 1.0
    assert amd_kl_ratio("vae-kl16", "NVIDIA") == 1.0
