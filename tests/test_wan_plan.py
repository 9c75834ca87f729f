"""Wan planner: constraints, search properties (hypothesis) and the FACTS.md claims about Wan.

Every "fits" here is the shared estimator's: a plan is checked by pricing its size again with
``budget.estimate`` on a workload built from catalogue file names (no pre-resolved models), so
the planner cannot agree with itself by construction.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vram_budget.nodes.estimator.plan import wan_plan as wp
from vram_budget.nodes.estimator.plan.budget import cards_by_capacity
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.errors import PlanError
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.units import GiB
from vram_budget.nodes.estimator.workload import SAMPLE, Workload

VARIANT_KEYS = tuple(wp.VARIANTS)
CATALOGUED = [("wan2.1-1.3b", "fp16"), ("wan2.1-14b", "fp16"), ("wan2.1-14b", "fp8"),
              ("wan2.2-ti2v-5b", "fp16"), ("wan2.2-a14b", "fp16"), ("wan2.2-a14b", "fp8")]


def card(name: str, **kw) -> Device:
    return Device.from_card(find_card(name), **kw)


def gib_device(gib: float) -> Device:
    return Device(name=f"{gib:g} GiB", total_bytes=int(gib * GiB))


def reprice(spec: wp.WanModelSpec, device: Device, w: int, h: int, length: int, cfg: float = wp.DEFAULT_CFG):
    """The shared estimator's budget for a size, resolving every file by name (catalogue)."""
    wl = wp.workload_for(spec, w, h, length, cfg)
    return estimate(wl, device)


def sample_stages(budget):
    return [s for s in budget.stages if s.stage.kind == SAMPLE]


# --- constraints ---------------------------------------------------------------------------------
@pytest.mark.parametrize("length,expected", [(1, 1), (4, 1), (5, 5), (80, 77), (81, 81), (82, 81), (121, 121)])
def test_lengths_are_floored_to_4k_plus_1_like_comfyui(length, expected):
    assert wp.snap_length(length) == expected
    assert (expected - 1) % 4 == 0


@pytest.mark.parametrize("variant,seconds,expected", [
    ("wan2.1-14b", 5, 81),  # Wan's default clip: 81 frames = 5 s at 16 fps
    ("wan2.2-a14b", 3, 49),
    ("wan2.2-ti2v-5b", 5, 121),  # TI2V 5B: 121 frames = 5 s at 24 fps
])
def test_seconds_at_the_models_frame_rate(variant, seconds, expected):
    assert wp.VARIANTS[variant].length_for_seconds(seconds) == expected


def test_frame_rates_and_multiples_follow_the_models():
    assert {k: (v.fps, v.multiple) for k, v in wp.VARIANTS.items()} == {
        "wan2.1-1.3b": (16, 16), "wan2.1-14b": (16, 16), "wan2.2-ti2v-5b": (24, 32), "wan2.2-a14b": (16, 16)}


@given(w=st.integers(160, 4096), h=st.integers(160, 4096), multiple=st.sampled_from([16, 32]))
@settings(max_examples=150, deadline=None)
def test_resolution_candidates_keep_aspect_and_multiples(w, h, multiple):
    tw, th = wp.snap_side(w, multiple), wp.snap_side(h, multiple)
    cands = wp.resolution_candidates(tw, th, multiple)
    assert cands[-1] == (tw, th)
    for (a, b), (c, d) in zip(cands, cands[1:]):
        assert a <= c and b <= d and a * b < c * d  # both sides non-decreasing: memory never falls upward
    for cw, ch in cands[:-1]:
        assert cw % multiple == 0 and ch % multiple == 0
        assert wp.aspect_error(cw, ch, tw, th) <= wp.ASPECT_TOLERANCE


def test_unknown_inputs_are_plan_errors():
    with pytest.raises(PlanError, match="unknown Wan variant"):
        wp.model_spec("wan3-99b")
    with pytest.raises(PlanError, match="precision"):
        wp.model_spec("wan2.1-14b", "int3")
    with pytest.raises(PlanError, match="keep"):
        wp.plan(wp.model_spec("wan2.1-14b"), card("RTX 4090"), 832, 480, 81, "everything")


# --- the plan against the shared estimator (hypothesis) --------------------------------------------
targets = st.tuples(
    st.sampled_from(CATALOGUED),
    st.integers(320, 1920),  # width
    st.integers(320, 1920),  # height
    st.integers(1, 161),  # length
    st.sampled_from(wp.KEEP_MODES),
)


@st.composite
def target_and_vram(draw):
    """A target and a card between 30 % and 130 % of what the target needs (most targets get cut)."""
    t = draw(targets)
    (variant, precision), w, h, length, _ = t
    spec = wp.model_spec(variant, precision)
    need = wp.need_bytes(wp.estimate_size(spec, gib_device(1000), w, h, length))
    return t, draw(st.floats(0.3, 1.3)) * need / GiB


@given(tv=st.one_of(target_and_vram(), st.tuples(targets, st.floats(6, 160))))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_plan_fits_by_the_shared_estimator_and_obeys_the_rules(tv):
    t, vram = tv
    (variant, precision), w, h, length, keep = t
    spec = wp.model_spec(variant, precision)
    device = gib_device(vram)
    p = wp.plan(spec, device, w, h, length, keep)
    m = spec.multiple
    tw, th, tl = p.target
    assert (tw, th, tl) == (wp.snap_side(w, m), wp.snap_side(h, m), wp.snap_length(length))
    # every output satisfies the model's constraints
    assert p.length % 4 == 1 and p.width % m == 0 and p.height % m == 0
    assert p.width <= tw and p.height <= th and p.length <= tl
    if (p.width, p.height) != (tw, th):
        assert wp.aspect_error(p.width, p.height, tw, th) <= wp.ASPECT_TOLERANCE
    # the shared estimator, resolving the files by name, agrees that it fits
    again = reprice(spec, device, p.width, p.height, p.length)
    assert again.peak_bytes == p.budget.peak_bytes
    if p.fits:
        assert wp.fits(again), (p.width, p.height, p.length, again.peak_bytes / GiB)
    else:  # nothing fits: even the smallest size on the path does not
        smallest = wp.search_path(tw, th, tl, m, keep)[-1]
        assert not wp.fits(reprice(spec, device, *smallest))
        assert (p.width, p.height, p.length) == (tw, th, tl)


@given(tv=target_and_vram())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_plan_is_the_largest_on_its_path(tv):
    t, vram = tv
    (variant, precision), w, h, length, keep = t
    spec = wp.model_spec(variant, precision)
    device = gib_device(vram)
    p = wp.plan(spec, device, w, h, length, keep, options=False)
    path = wp.search_path(*p.target, spec.multiple, keep)
    if not p.fits or not p.changed:
        return
    i = path.index((p.width, p.height, p.length))
    assert not wp.fits(reprice(spec, device, *path[i - 1]))  # one step bigger does not fit


@given(tv=target_and_vram(), more=st.floats(0.25, 40))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_more_vram_never_gives_a_smaller_plan(tv, more):
    t, vram = tv
    (variant, precision), w, h, length, keep = t
    spec = wp.model_spec(variant, precision)
    small = wp.plan(spec, gib_device(vram), w, h, length, keep, options=False)
    big = wp.plan(spec, gib_device(vram + more), w, h, length, keep, options=False)
    if not small.fits:
        return
    assert big.fits
    assert big.length >= small.length
    assert big.width * big.height >= small.width * small.height
    assert big.width >= small.width and big.height >= small.height


@given(tv=target_and_vram())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_target_that_fits_is_returned_unchanged(tv):
    t, vram = tv
    (variant, precision), w, h, length, keep = t
    spec = wp.model_spec(variant, precision)
    m = spec.multiple
    w, h, length = wp.snap_side(w, m), wp.snap_side(h, m), wp.snap_length(length)  # a valid target
    device = gib_device(vram)
    p = wp.plan(spec, device, w, h, length, keep)
    fits_as_is = wp.fits(reprice(spec, device, w, h, length))
    assert fits_as_is == (p.fits and not p.changed)
    if fits_as_is:
        assert (p.width, p.height, p.length) == (w, h, length) and p.cut == "" and not p.keep_target


@given(w=st.integers(320, 1600), h=st.integers(320, 1600), length=st.integers(1, 121), vram=st.floats(8, 48),
       keep=st.sampled_from(wp.KEEP_MODES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_lower_precision_never_gives_a_smaller_plan(w, h, length, vram, keep):
    device = gib_device(vram)
    plans = {prec: wp.plan(wp.model_spec("wan2.1-14b", prec), device, w, h, length, keep, options=False)
             for prec in wp.PRECISIONS}
    # fewer bytes per weight, in order (GGUF Q8_0 is 8.5 bits: larger than fp8, smaller than fp16)
    chains = [("fp16", "fp8"), ("fp16", "GGUF Q8_0", "GGUF Q6_K", "GGUF Q5_K_S", "GGUF Q4_K_S")]
    pairs = [(plans[a], plans[b]) for chain in chains for a, b in zip(chain, chain[1:])]
    for hi, lo in pairs:
        if hi.fits:
            assert lo.fits and lo.length >= hi.length and lo.width * lo.height >= hi.width * hi.height


def test_keep_modes_cut_what_they_say():
    spec = wp.model_spec("wan2.2-a14b", "fp16")
    device = card("RTX 5090")
    frames = wp.plan(spec, device, 1280, 720, 81, "frames")
    resolution = wp.plan(spec, device, 1280, 720, 81, "resolution")
    balanced = wp.plan(spec, device, 1280, 720, 81, "balanced")
    assert frames.fits and resolution.fits and balanced.fits
    assert frames.length == 81 and (frames.width, frames.height) < (1280, 720)
    assert (resolution.width, resolution.height) == (1280, 720) and resolution.length < 81
    assert balanced.length < 81 and balanced.width < 1280
    assert balanced.length > resolution.length and balanced.width > frames.width
    for p in (frames, resolution, balanced):
        assert "→" in p.cut and p.keep_target


# --- FACTS.md ---------------------------------------------------------------------------------------
A14B = ("wan2.2-a14b", "fp16")


@pytest.mark.parametrize("smaller", [(1280, 720, 49), (832, 480, 81)])
def test_facts_wan22_fewer_frames_or_480p_saves_several_gb(smaller):
    """FACTS: "Wan 2.2: 81→49 frames or 720p→480p saves several GB" (≥ 2 GiB at the workflow level)."""
    spec = wp.model_spec(*A14B)
    device = card("H200")
    full = reprice(spec, device, 1280, 720, 81)
    cut = reprice(spec, device, *smaller)
    assert full.peak_bytes - cut.peak_bytes >= 2 * GiB


def test_facts_wan22_14b_720p_32gb_for_short_clips_48gb_with_margin():
    """FACTS card table: "Wan 2.2 14B at 720p without RAM offload: 32 GB for short clips, 48 GB with margin"."""
    spec = wp.model_spec(*A14B)
    on_5090 = wp.plan(spec, card("RTX 5090"), 1280, 720, 81, "resolution")  # keep 720p, cut the length
    assert on_5090.fits and (on_5090.width, on_5090.height) == (1280, 720)
    assert 17 <= on_5090.length < 81  # a short clip (at least one second at 16 fps), not the full 5 s
    assert wp.fits(reprice(spec, card("RTX 5090"), 1280, 720, on_5090.length))
    on_l40s = wp.plan(spec, card("L40S"), 1280, 720, 81, "balanced")
    assert on_l40s.fits and not on_l40s.changed  # the full 81-frame 720p clip, as is
    l40s = reprice(spec, card("L40S"), 1280, 720, 81)
    assert l40s.verdict in ("fits", "tight")
    on_4090 = wp.plan(spec, card("RTX 4090"), 1280, 720, 81, "resolution")
    assert not on_4090.fits  # 16-bit weights alone exceed a 24 GB card: needs offload (block swap)
    assert on_4090.blocks_to_swap is not None and on_4090.blocks_to_swap > 0
    assert cards_by_capacity(on_4090.target_budget)[0].name in ("RTX 5090", "L40S")


def test_facts_wan22_14b_is_two_experts_loaded_in_turn():
    """FACTS: "Wan 2.2 14B is two 14B experts that ComfyUI loads in turn": the peak is one expert's."""
    spec = wp.model_spec(*A14B)
    budget = reprice(spec, card("H200"), 1280, 720, 81)
    experts = sample_stages(budget)
    assert [s.stage.expert for s in experts] == ["high_noise", "low_noise"]
    one = catalogue_info("wan2.2_t2v_high_noise_14B_fp16.safetensors")
    assert all(s.weights_bytes == one.params * 2 for s in experts)  # each stage holds one expert only
    assert budget.peak_bytes == max(s.peak_bytes for s in experts)
    assert budget.peak_bytes < 2 * one.params * 2  # never both experts at once
    # and the same as a single-expert run of the same size
    single = Workload(stages=tuple(s for s in wp.workload_for(spec, 1280, 720, 81).stages
                                   if s.expert != "low_noise"))
    assert estimate(single, card("H200")).peak_bytes == budget.peak_bytes


# --- what keeps the target -------------------------------------------------------------------------
def test_blocks_to_swap_is_the_minimum_that_fits():
    spec = wp.model_spec(*A14B)
    for name in ("RTX 4090", "RTX 5090"):
        p = wp.plan(spec, card(name), 1280, 720, 81, "balanced")
        stage = max(sample_stages(p.target_budget), key=lambda s: s.min_peak_bytes)
        per_block = wp.block_bytes(stage, 40)
        weights = stage.weights_bytes
        assert 0.95 * weights / 40 < per_block <= weights / 40  # blocks hold almost all of a Wan DiT
        cap = p.target_budget.device.capacity_bytes

        def on_gpu(swapped: int) -> int:  # resident blocks + the one swapped block being run
            return stage.min_peak_bytes - swapped * per_block + (per_block if swapped else 0)

        n = p.blocks_to_swap
        assert n is not None and 0 < n <= 40
        assert on_gpu(n) <= cap < on_gpu(n - 1)
        assert f"blocks_to_swap = {n} of 40" in wp.format_plan(p)


def test_no_block_count_helps_when_activations_alone_exceed_the_card():
    spec = wp.model_spec(*A14B)
    p = wp.plan(spec, gib_device(12), 1920, 1088, 161, "balanced")
    assert p.blocks_to_swap is None or p.fits


def test_reserve_vram_covers_what_comfyui_own_estimate_misses():
    spec = wp.model_spec(*A14B)
    p = wp.plan(spec, card("RTX 5090"), 1280, 720, 81, "frames")
    stage = max(sample_stages(p.target_budget), key=lambda s: s.min_peak_bytes)
    ours = stage.min_peak_bytes - stage.weights_bytes - stage.overhead_bytes
    theirs = wp.comfy_min_memory_required(spec, 1280, 720, 81)
    # ComfyUI's own number: area × 2 bytes × 0.01 × dim/2222 MiB (memory_required, flash path)
    assert theirs == int(21 * 90 * 160 * 2 * 0.01 * (5120 / 2222) * 2**20)
    option = next(o for o in p.keep_target if o.kind == "reserve_vram")
    if ours > theirs:
        assert p.reserve_vram_gb is not None and p.reserve_vram_gb * GiB >= ours - theirs
        assert f"--reserve-vram {p.reserve_vram_gb:g}" in option.title
    else:
        assert p.reserve_vram_gb is None and "no flag needed" in option.title


def test_plan_says_when_classic_comfyui_would_still_stream_weights():
    """ComfyUI's weight budget is free − (its memory_required + reserve); above ours it streams anyway."""
    spec = wp.model_spec(*A14B)
    for name in ("RTX 5090", "L40S", "H200"):
        device = card(name)
        p = wp.plan(spec, device, 1280, 720, 81, "balanced")
        stage = max(sample_stages(p.budget), key=lambda s: s.min_peak_bytes)
        theirs = wp.comfy_min_memory_required(spec, p.width, p.height, p.length)
        room = device.capacity_bytes - stage.overhead_bytes - theirs - device.reserve_bytes
        noted = any("loaded partially" in n for n in p.notes)
        assert noted == (stage.weights_bytes > room), name
    dynamic = wp.plan(spec, card("RTX 5090", memory_mode="dynamic"), 1280, 720, 81, "balanced")
    assert not any("loaded partially" in n for n in dynamic.notes)


def test_report_names_the_cut_and_the_alternatives():
    p = wp.plan(wp.model_spec(*A14B), card("RTX 5090"), 1280, 720, 81, "balanced")
    text = wp.format_plan(p)
    assert f"{p.width}×{p.height}×{p.length}" in text and "Target 1280×720×81" in text
    assert "Cut:" in text and "blocks_to_swap" in text and "L40S" in text
    assert "fp8 weights keep 1280×720×81" in text
    unchanged = wp.format_plan(wp.plan(wp.model_spec(*A14B), card("H200"), 1280, 720, 81, "balanced"))
    assert "Plan (unchanged)" in unchanged and "To keep" not in unchanged


# --- a loaded MODEL (comfy_bridge.describe_loaded_model's dict) ---------------------------------
def test_spec_from_a_loaded_14b_model_plans_like_the_catalogue_file():
    info = catalogue_info("wan2.1_t2v_14B_bf16.safetensors")
    desc = {"class_name": "WAN21", "image_model": "wan2.1", "model_type": "t2v", "dim": 5120, "num_layers": 40,
            "in_dim": 16, "out_dim": 16, "ffn_dim": 13824, "num_heads": 40, "params": info.params,
            "weights_bytes": info.params * 2, "dtype": "bfloat16", "gguf": False, "gguf_type": None,
            "largest_tensor_params": 5120 * 13824}
    loaded = wp.spec_from_loaded(desc)
    assert loaded.multiple == 16 and loaded.fps == 16 and loaded.experts == (None,)
    device = card("RTX 5090")
    a = wp.plan(loaded, device, 1280, 720, 81, "balanced", options=False)
    b = wp.plan(wp.model_spec("wan2.1-14b", "fp16"), device, 1280, 720, 81, "balanced", options=False)
    assert (a.width, a.height, a.length) == (b.width, b.height, b.length)
    fp8 = wp.spec_from_loaded({**desc, "dtype": "float8_e4m3fn", "weights_bytes": info.params})
    assert fp8.precision == "fp8"
    gguf = wp.spec_from_loaded({**desc, "dtype": "q4_k", "gguf": True, "gguf_type": "Q4_K",
                                "weights_bytes": int(info.params * 4.6 / 8)})
    p4 = wp.plan(gguf, device, 1280, 720, 81, "balanced", options=False)
    assert gguf.precision == "GGUF Q4_K" and p4.fits and not p4.changed


def test_spec_from_a_loaded_5b_model_uses_multiples_of_32_and_24_fps():
    desc = {"class_name": "WAN22", "image_model": "wan2.1", "dim": 3072, "num_layers": 30, "in_dim": 48,
            "out_dim": 48, "ffn_dim": 14336, "params": 4_999_787_712, "weights_bytes": 2 * 4_999_787_712,
            "dtype": "float16", "gguf": False}
    spec = wp.spec_from_loaded(desc)
    assert (spec.multiple, spec.fps, spec.spatial_compression) == (32, 24, 16)
    p = wp.plan(spec, gib_device(10), 1280, 704, 121, "frames")
    assert p.width % 32 == 0 and p.height % 32 == 0 and p.length == 121


def test_a_model_that_is_not_wan_is_refused():
    with pytest.raises(PlanError, match="not a Wan model"):
        wp.spec_from_loaded({"class_name": "Flux", "image_model": "flux", "dim": 3072, "num_layers": 19})


def test_gguf_precisions_resolve_with_the_dequantized_layer():
    spec = wp.model_spec("wan2.1-14b", "GGUF Q4_K_S")
    (info,) = spec.diffusion_infos
    assert info.quantization == "gguf Q4_K_S" and info.largest_tensor_bytes > 0
    listed = catalogue_info("wan2.1-t2v-14b-Q4_K_S.gguf")
    assert listed is not None and info.weights_bytes == listed.weights_bytes
    q8 = wp.model_spec("wan2.1-14b", "GGUF Q8_0").diffusion_infos[0]
    assert q8.weights_bytes == int(q8.params * 8.5 / 8)  # not in the catalogue: params × bits


# --- the example workflow ------------------------------------------------------------------------
def test_example_workflow_wires_the_planner_into_the_wan_latent():
    import json
    from pathlib import Path

    from vram_budget.nodes.wan_planner import NODE_CLASS_MAPPINGS

    wf = json.loads((Path(__file__).resolve().parents[1] / "example_workflows" / "wan21_t2v_planned.json").read_text())
    nodes = {n["id"]: n for n in wf["nodes"]}
    links = {lk[0]: lk for lk in wf["links"]}
    planner = next(n for n in nodes.values() if n["type"] == "VRAMBudgetWanPlanner")
    node_cls = NODE_CLASS_MAPPINGS["VRAMBudgetWanPlanner"]
    types = node_cls.INPUT_TYPES()
    widgets = [k for group in ("required", "optional") for k, v in types[group].items() if v[0] != "MODEL"]
    assert len(planner["widgets_values"]) == len(widgets)
    values = dict(zip(widgets, planner["widgets_values"]))
    for name, value in values.items():  # every stored value is valid for its widget
        spec = types["required"].get(name) or types["optional"][name]
        if isinstance(spec[0], list):
            assert value in spec[0], name
        else:
            assert spec[1]["min"] <= value <= spec[1]["max"], name
    latent = next(n for n in nodes.values() if n["type"] == "EmptyHunyuanLatentVideo")
    wired = {}
    for inp in latent["inputs"]:
        _, src, slot, dst, dst_slot, _ = links[inp["link"]]
        assert dst == latent["id"] and latent["inputs"][dst_slot] is inp and inp["widget"]["name"] == inp["name"]
        wired[inp["name"]] = (src, node_cls.RETURN_NAMES[slot])
    assert wired == {"width": (planner["id"], "width"), "height": (planner["id"], "height"),
                     "length": (planner["id"], "length")}
    for lk in wf["links"]:  # links agree with both ends
        lid, src, slot, dst, dst_slot, _ = lk
        assert lid in nodes[src]["outputs"][slot]["links"] and nodes[dst]["inputs"][dst_slot]["link"] == lid
    model_link = links[next(i for i in planner["inputs"] if i["name"] == "model")["link"]]
    assert nodes[model_link[1]]["type"] == "UNETLoader"
