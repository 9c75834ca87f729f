"""VAE Decode (Auto Tiled): the fastest tiles that fit (issue 12, item 7). No ComfyUI, no torch.

The defect: a typed ``memory_budget_gb`` of 0.5 had the 0.5 GiB safety margin taken off, and the
planner took the largest square tile that fit and ran it through ComfyUI's three-pass 2-D tiler:
a 768 px decode ran in 177 tiles of 128 px (609 s against 26 s in one go). These tests check
the plan against an independent model of what ComfyUI then runs: tile positions as
``comfy.utils.tiled_scale_multidim`` enumerates them (ComfyUI 0.18.2 comfy/utils.py:1141-1149,
0.8.0 utils.py:1048-1056), decoded area incl. overlaps plus a fixed cost per decoder call.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vram_budget.nodes import vae_decode as vd
from vram_budget.nodes.estimator.physics import vae_memory as vm
from vram_budget.nodes.estimator.units import GiB, MiB

VIDEO = ("vae-wan2.1", "vae-wan2.2", "vae-hunyuan", "vae-ltxv")


def positions(size: int, tile: int, overlap: int) -> list[tuple[int, int]]:
    """(start, length) of the tiles along one axis, as tiled_scale_multidim computes them."""
    if size <= tile:
        return [(0, size)]
    out = []
    for it in range(0, size - overlap, tile - overlap):
        pos = max(0, min(size - overlap, it))
        out.append((pos, min(tile, size - pos)))
    return out


def simulate(plan: vm.DecodePlan) -> tuple[int, float]:
    """(decoder calls, decoded output pixel-frames) of running `plan` once through ComfyUI's tiler."""
    s = plan.shape
    fam = vm.FAMILIES[plan.family]
    px = fam.spatial**2
    if not plan.tiled:
        frames = 1 if s.frames is None else fam.pixel_frames(s.frames)
        return plan.calls, s.batch * s.height * s.width * px * frames
    assert plan.passes == 1, "decode tiles run in one pass"
    rows = positions(s.height, plan.tile_h, plan.overlap)
    cols = positions(s.width, plan.tile_w, plan.overlap)
    if s.frames is None:
        chunks = [(0, 1)]
        frames_of = lambda n: 1  # noqa: E731
    else:
        chunks = positions(s.frames, plan.tile_t, plan.overlap_t or 1)
        frames_of = fam.pixel_frames
    calls = len(rows) * len(cols) * len(chunks)
    area = sum(r for _, r in rows) * sum(c for _, c in cols) * px
    return s.batch * calls, s.batch * area * sum(frames_of(n) for _, n in chunks)


def cost(plan: vm.DecodePlan) -> float:
    calls, volume = simulate(plan)
    return volume + calls * vm.TILE_OVERHEAD_PX


def one_go_cost(plan: vm.DecodePlan) -> float:
    s = plan.shape
    fam = vm.FAMILIES[plan.family]
    frames = 1 if s.frames is None else fam.pixel_frames(s.frames)
    return s.batch * s.height * s.width * fam.spatial**2 * frames + vm.TILE_OVERHEAD_PX


def latent(family: str, batch: int, frames: int | None, h: int, w: int) -> tuple:
    return (batch, vm.FAMILIES[family].latent_channels, frames, h, w)


# ----------------------------------------------------------------------------------------------
# The case: 768 px (96x96 latent), Flux VAE
@pytest.mark.parametrize("dtype_bytes", [2, 4])
def test_a_third_of_the_one_go_memory_costs_at_most_half_again_the_time(dtype_bytes):
    lat = latent("vae-kl16", 1, None, 96, 96)
    one_go = vm.with_headroom(vm.vae_decode_bytes("vae-kl16", lat, dtype_bytes=dtype_bytes))
    plan = vm.plan_decode("vae-kl16", lat, one_go // 3, 0, dtype_bytes)
    assert plan.tiled and plan.fits and plan.required <= one_go // 3
    calls, volume = simulate(plan)
    assert calls == plan.tiles <= 6, plan.summary()
    assert volume <= 1.3 * 768 * 768, plan.summary()  # overlaps counted
    assert plan.time_ratio == pytest.approx(cost(plan) / one_go_cost(plan), rel=1e-9)
    assert plan.time_ratio <= 1.5
    assert f"{plan.tiles} tiles of {plan.tile_h * 8}x{plan.tile_w * 8} px" in plan.summary()
    assert f"{plan.time_ratio:.1f}x" in plan.summary()


@pytest.mark.parametrize("dtype_bytes", [2, 4])
def test_half_a_gib_for_768px_is_a_few_tiles_not_177(dtype_bytes):
    plan = vm.plan_decode("vae-kl16", latent("vae-kl16", 1, None, 96, 96), int(0.5 * GiB), 0, dtype_bytes)
    assert plan.fits and plan.required <= int(0.5 * GiB)
    assert plan.tiles <= 4 and plan.time_ratio <= 1.5, plan.summary()
    assert min(plan.tile_h, plan.tile_w) * 8 >= 256, plan.summary()


def test_a_typed_budget_is_the_budget():
    """The margin is kept free out of DETECTED free memory only; a typed budget is used as it is."""
    free, margin, source = vd.budget_for(0.5, 0.5, measured_free=40 * GiB)
    assert (free, margin) == (int(0.5 * GiB), 0)
    assert "memory_budget_gb = 0.5" in source and "margin" not in source
    free, margin, source = vd.budget_for(0.0, 0.5, measured_free=8 * GiB)
    assert (free, margin) == (8 * GiB, int(0.5 * GiB))
    assert "free" in source and "0.50 GiB margin" in source
    free, margin, _ = vd.budget_for(0.0, -3.0, measured_free=8 * GiB)  # a negative margin is none
    assert margin == 0
    # the case end to end (planner side): 0.5 typed, default margin -> a few large tiles
    free, margin, _ = vd.budget_for(0.5, vd.DEFAULT_MARGIN_GB, measured_free=40 * GiB)
    plan = vm.plan_decode("vae-kl16", latent("vae-kl16", 1, None, 96, 96), free, margin, 4)
    assert plan.fits and plan.tiles <= 4, plan.summary()


# ----------------------------------------------------------------------------------------------
# No tiling for an image no larger than one tile
def test_an_image_no_larger_than_one_tile_decodes_in_one_pass():
    # force tiled, but 128 px is the smallest tile: nothing to split
    plan = vm.plan_decode("vae-kl16", latent("vae-kl16", 1, None, 16, 16), 24 * GiB, 0, 2, mode="force_tiled")
    assert not plan.tiled and plan.calls == 1 and plan.decode_tiled_kwargs() == {}
    assert "no larger than one tile" in plan.reason
    assert "decoded in one go" in plan.summary()
    # nothing fits, but the image is below the smallest tile: one go (flagged), never a tiler call
    tiny = vm.plan_decode("vae-kl16", latent("vae-kl16", 1, None, 12, 16), 1 * MiB, 0, 2)
    assert not tiny.tiled and not tiny.fits and "may not fit" in tiny.summary()
    assert vm.smaller_plan(tiny) is None  # no smaller piece exists
    # a video latent below the smallest tile splits frames only
    vid = vm.plan_decode("vae-wan2.1", latent("vae-wan2.1", 1, 21, 12, 16), 1 * MiB, 0, 2)
    assert vid.tiled and vid.tile_h == 12 and vid.tile_w == 16 and vid.tile_t < 21


def test_a_tile_as_large_as_the_image_after_an_out_of_memory_cap_is_one_go():
    lat = latent("vae-kl16", 1, None, 40, 64)
    full = vm.vae_decode_bytes("vae-kl16", lat)
    plan = vm.plan_decode("vae-kl16", lat, 64 * GiB, 0, 2, max_peak=full)
    assert not plan.tiled
    capped = vm.plan_decode("vae-kl16", lat, 64 * GiB, 0, 2, max_peak=full // 2)
    assert capped.tiled and capped.predicted_peak <= full // 2


# ----------------------------------------------------------------------------------------------
# The fastest plan that fits, against every rectangular tile (brute force)
def brute_force(family: str, lat: tuple, budget: int, dtype_bytes: int, frames_options=(None,)) -> tuple[float, float]:
    """(cost of the planner's rule, least cost) over every tile shape that fits, 1 latent px apart.

    The rule: walking the candidates from the smallest peak up, a candidate counts only if it is
    faster than, and needs no more calls than, the last one that counted (more memory never gives
    more tiles); the plan is the last one that counts."""
    fam = vm.FAMILIES[family]
    b, _c, t, h, w = lat
    _step, floor = vm.tile_grid("decode", fam.spatial)
    fitting = []
    for tt in frames_options:
        for th in range(min(floor, h), h + 1):
            for tw in range(min(floor, w), w + 1):
                if th == h and tw == w and tt in (None, t):
                    continue  # one go is not a tiled candidate
                plan = vm.decode_tile_plan(family, lat, th, tw, tt, dtype_bytes=dtype_bytes)
                if plan.required <= budget:
                    fitting.append((plan.predicted_peak, cost(plan), simulate(plan)[0]))
    rule = None
    for peak, c, calls in sorted(fitting):
        if rule is None or (c < rule[0] and calls <= rule[1]):
            rule = (c, calls)
    return rule[0], min(c for _p, c, _n in fitting)


@pytest.mark.parametrize("family,lat,fraction", [
    ("vae-kl16", (1, 16, None, 96, 96), 1 / 3),
    ("vae-kl16", (1, 16, None, 96, 96), 0.1),
    ("vae-kl4", (2, 4, None, 60, 136), 0.25),
    ("vae-kl16", (1, 16, None, 40, 200), 0.3),
])
def test_image_plan_is_the_fastest_that_fits(family, lat, fraction):
    need = vm.with_headroom(vm.vae_decode_bytes(family, (1,) + lat[1:]))
    budget = int(need * fraction)
    plan = vm.plan_decode(family, lat, budget, 0, 2)
    assert plan.tiled and plan.fits
    rule, least = brute_force(family, lat, budget, 2)
    assert cost(plan) == pytest.approx(rule, rel=1e-9), (plan.summary(), cost(plan), rule)
    assert cost(plan) <= 1.02 * least  # images: monotonicity costs next to nothing
    assert plan.tiles == simulate(plan)[0]


def test_video_plan_counts_temporal_chunks_and_is_the_fastest_that_fits():
    family, lat = "vae-wan2.1", (1, 16, 9, 24, 40)
    need = vm.with_headroom(vm.vae_decode_bytes(family, lat))
    for fraction in (0.6, 0.4, 0.3):
        budget = int(need * fraction)
        plan = vm.plan_decode(family, lat, budget, 0, 2)
        assert plan.tiled and plan.fits, plan.summary()
        rule, least = brute_force(family, lat, budget, 2, frames_options=range(2, 10))
        assert cost(plan) == pytest.approx(rule, rel=1e-9), (fraction, plan.summary(), cost(plan), rule)
        assert cost(plan) <= 1.1 * least, (fraction, plan.summary(), cost(plan), least)
        assert plan.time_ratio == pytest.approx(cost(plan) / one_go_cost(plan), rel=1e-9)


# ----------------------------------------------------------------------------------------------
# Properties
plan_inputs = st.tuples(
    st.sampled_from(("vae-kl4", "vae-kl16") + VIDEO),
    st.integers(1, 3),  # batch
    st.integers(1, 25),  # frames (video only)
    st.integers(4, 200),  # latent height
    st.integers(4, 200),  # latent width
    st.floats(0.0, 12.0),  # free GiB (smaller)
    st.floats(0.0, 12.0),  # extra GiB
    st.sampled_from([0.0, 0.5]),  # margin GiB
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan_inputs)
def test_more_memory_never_gives_more_or_smaller_tiles(args):
    family, batch, frames, h, w, free_gib, extra_gib, margin_gib = args
    t = frames if family in VIDEO else None
    lat = latent(family, batch, t, h, w)
    margin = int(margin_gib * GiB)
    p1 = vm.plan_decode(family, lat, int(free_gib * GiB), margin, 2)
    p2 = vm.plan_decode(family, lat, int((free_gib + extra_gib) * GiB), margin, 2)
    if not p1.tiled:
        assert not p2.tiled and p2.batch_chunk >= p1.batch_chunk
    assert p2.calls <= p1.calls
    assert p2.time_ratio <= p1.time_ratio + 1e-12
    if p1.tiled and p2.tiled:
        assert p2.predicted_peak >= p1.predicted_peak  # never a smaller tile
    assert p2.fits or not p1.fits
    for p in (p1, p2):
        assert p.calls == simulate(p)[0]
        if p.fits:
            assert p.required <= p.budget
        assert p.time_ratio >= 1.0 - 1e-12


@settings(max_examples=200, deadline=None)
@given(plan_inputs)
def test_tiles_are_what_comfyui_runs(args):
    family, batch, frames, h, w, free_gib, _extra, margin_gib = args
    t = frames if family in VIDEO else None
    lat = latent(family, batch, t, h, w)
    plan = vm.plan_decode(family, lat, int(free_gib * GiB), int(margin_gib * GiB), 2)
    if not plan.tiled:
        return
    spatial = vm.FAMILIES[family].spatial
    _step, floor = vm.tile_grid("decode", spatial)
    assert plan.tile_h <= h and plan.tile_w <= w
    assert (plan.tile_h, plan.tile_w, plan.tile_t) != (h, w, t)  # a whole-image "tile" is one go
    assert plan.overlap == vm.spatial_overlap(spatial, floor) == min(64 // spatial, floor // 2)
    for size, tile in ((h, plan.tile_h), (w, plan.tile_w)):
        assert tile == size or floor <= tile
        if tile < size:
            assert plan.overlap < tile
    assert plan.predicted_peak == vm.vae_decode_bytes(family, (1,) + lat[1:], tile=(plan.tile_h, plan.tile_w),
                                                      tile_t=plan.tile_t, passes=1)
    calls, volume = simulate(plan)
    assert plan.tiles == calls
    assert plan.work == pytest.approx(volume / (one_go_cost(plan) - vm.TILE_OVERHEAD_PX), rel=1e-9)
    assert plan.time_ratio == pytest.approx(cost(plan) / one_go_cost(plan), rel=1e-9)
    kw = plan.decode_tiled_kwargs()
    if t is None:
        assert kw == {"tile_x": plan.tile_w, "tile_y": plan.tile_h, "overlap": plan.overlap}
    else:  # decode_tiled_3d: tile_x is rows, tile_y columns
        assert kw["tile_x"] == plan.tile_h and kw["tile_y"] == plan.tile_w


def test_out_of_memory_halving_walks_down_to_the_floor():
    plan = vm.plan_decode("vae-kl16", latent("vae-kl16", 1, None, 96, 160), 64 * GiB, 0, 2)
    assert not plan.tiled
    seen = [plan]
    while (nxt := vm.smaller_plan(seen[-1])) is not None:
        assert nxt.tiled and nxt.predicted_peak < seen[-1].predicted_peak
        assert nxt.calls == simulate(nxt)[0]
        assert "out of memory" in nxt.reason
        seen.append(nxt)
        assert len(seen) < 20
    assert (seen[1].tile_h, seen[1].tile_w) == (96, 80)  # one go -> halves of the longer side
    assert (seen[-1].tile_h, seen[-1].tile_w) == (16, 16)
