"""What ComfyUI actually does on a card (runtime.py): partial loads, cond batching, VAE batch split,
OOM -> tiled retry, Dynamic VRAM, unknown models, capacity; the verdicts built on them."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from test_budget import dev, flux_workload, wan22_workload  # tests/ is on sys.path
from vram_budget.nodes.estimator.plan import capacity
from vram_budget.nodes.estimator.machine import runtime
from vram_budget.nodes.estimator.plan.budget import VERDICTS
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.units import GiB, MiB
from vram_budget.nodes.estimator.workload import SAMPLE, VAE_DECODE, ModelRef, Stage, Workload

from test_budget import image_latent


def run_of(budget, kind):
    return next(r for r, s in zip(budget.runs, budget.stages) if s.stage.kind == kind)


# --- the reference cases ------------------------------------------------------------
@pytest.mark.parametrize("card", ["GTX 1070", "RTX 4060 Laptop", "RTX 3060", "RTX 4070"])
def test_flux_dev_fp8_1024_runs_slower_on_8_to_12_gb(card):
    budget = estimate(flux_workload(weight_dtype="fp8_e4m3fn", t5="t5xxl_fp8_e4m3fn.safetensors"), dev(card))
    run = run_of(budget, SAMPLE)
    assert budget.verdict == "runs_slower", budget.notes
    assert run.outcome == "runs_slower" and run.streamed_bytes > 0 and run.resident_bytes > 0
    assert run.resident_bytes + run.streamed_bytes == budget.stages[1].weights_bytes
    assert run.peak_bytes <= budget.device.capacity_bytes
    assert budget.slowdown >= 1.0 and budget.slowdown_high >= budget.slowdown


@pytest.mark.parametrize("card", ["RTX 4060 Ti 16GB", "RTX 4080", "RTX 4090"])
def test_flux_dev_fp8_1024_fits_on_16_gb_and_up(card):
    budget = estimate(flux_workload(weight_dtype="fp8_e4m3fn", t5="t5xxl_fp8_e4m3fn.safetensors"), dev(card))
    assert budget.verdict == "fits", (budget.verdict, budget.notes)
    assert all(r.streamed_bytes == 0 for r in budget.runs)


def test_partial_load_follows_comfyuis_budget_rule():
    """B = F − max(MIM, memory_required(B) + R) on NVIDIA (model_management.py:683-704)."""
    budget = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("RTX 3060"))
    run = run_of(budget, SAMPLE)
    dev_ = budget.device
    model = budget.stages[1].items[0].model
    est_min = runtime.comfy_memory_required(model, budget.stages[1].stage.latent, 1)
    assert est_min == pytest.approx(0.99 * GiB, rel=0.01)  # COMFYUI-NOTES §2.4: Flux 1024² 1.98 GiB at 2·B
    free = dev_.capacity_bytes - dev_.context_bytes
    b = free - max(int(0.8 * GiB) + dev_.reserve_bytes, est_min + dev_.reserve_bytes)
    largest = runtime.largest_module_bytes(model, budget.stages[1].weights_bytes)
    assert run.resident_bytes == b - 3 * largest  # NUM_STREAMS + 1 casts in flight stay free


def test_reserve_vram_streams_more():
    plain = run_of(estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("RTX 3060")), SAMPLE)
    reserved = run_of(estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("RTX 3060", reserve_bytes=3 * GiB)), SAMPLE)
    assert reserved.resident_bytes < plain.resident_bytes and reserved.streamed_bytes > plain.streamed_bytes


def test_launch_flags_change_residency():
    wl = flux_workload(weight_dtype="fp8_e4m3fn")
    high = estimate(wl, dev("RTX 3060", vram_state="high"))
    novram = estimate(wl, dev("RTX 3060", vram_state="no"))
    assert run_of(novram, SAMPLE).resident_bytes == 0 and novram.verdict == "runs_slower"
    # --highvram loads fully: 11.08 GiB of fp8 weights + activations still fit 11.65 GiB here
    assert run_of(high, SAMPLE).streamed_bytes == 0


# --- cond batching ------------------------------------------------------------------------------
def test_cond_and_uncond_batch_only_when_comfyuis_estimate_leaves_room():
    small = estimate(wan22_workload(w=832, h=480, length=33, precision="fp8_scaled"), dev("H100"))
    big = estimate(wan22_workload(w=1280, h=720, length=81, precision="fp8_scaled"), dev("RTX 4090"))
    assert run_of(small, SAMPLE).cond_batch == 2 and run_of(small, SAMPLE).forwards_per_step == 1
    assert run_of(big, SAMPLE).cond_batch == 1 and run_of(big, SAMPLE).forwards_per_step == 2


# --- VAE ------------------------------------------------------------------------------------
def test_vae_decode_splits_a_batch_by_free_memory():
    budget = estimate(flux_workload(w=1600, h=1600, batch=22, weight_dtype="fp8_e4m3fn"), dev("RTX 5090"))
    vae = run_of(budget, VAE_DECODE)
    assert vae.outcome == "fits"
    assert 1 <= vae.images_per_call < 22 and vae.calls == -(-22 // vae.images_per_call)
    assert vae.peak_bytes <= budget.device.capacity_bytes


def test_vae_decode_oom_falls_back_to_tiles():
    latent = image_latent(2048, 2048)
    wl = Workload(stages=(Stage(VAE_DECODE, "8", "VAEDecode", models=(ModelRef("vae", "ae.safetensors", "vae"),),
                                latent=latent),))
    budget = estimate(wl, Device("3 GB", 3 * GiB))
    run = budget.runs[0]
    assert run.outcome == "runs_slower" and run.tiled_fallback and "64×64" in run.tiled_fallback
    assert run.extra_seconds > 0
    assert budget.verdict == "runs_slower"
    tiny = estimate(wl, Device("0.7 GB", int(0.7 * GiB)))
    assert tiny.runs[0].outcome == "oom"  # the tiles do not fit either


# --- Dynamic VRAM ---------------------------------------------------------------------------
def test_dynamic_vram_resident_is_what_fits_beside_activations_and_headroom():
    budget = estimate(flux_workload(), dev("RTX 4070", memory_mode="dynamic"))
    run = run_of(budget, SAMPLE)
    assert run.outcome == "runs_slower" and run.resident_bytes % (32 * MiB) == 0
    assert run.peak_bytes <= budget.device.capacity_bytes


# --- never confident on an unknown model ------------------------------------------------------
def test_an_unknown_model_makes_the_verdict_unknown_not_fits():
    wl = flux_workload(unet="my_secret_finetune_v3.safetensors")
    budget = estimate(wl, dev("H200"))
    data = budget.to_dict()
    assert budget.verdict == "unknown" and data["complete"] is False
    assert [m["name"] for m in data["missing"]] == ["my_secret_finetune_v3.safetensors"]
    assert "models/diffusion_models/" in data["missing"][0]["fix"]
    from vram_budget.nodes.estimator.plan.report import format_report

    text = format_report(budget)
    assert "CAN'T TELL" in text and "at least" in text and "my_secret_finetune_v3.safetensors" in text
    assert data["cheapest_card"] is None and "Cheapest" not in text  # no card advice on a lower bound


def test_known_models_are_complete():
    data = estimate(flux_workload(), dev("H200")).to_dict()
    assert data["complete"] is True and data["missing"] == [] and data["verdict"] == "fits"


# --- the --json contract ------------------------------------------------------------------------
def test_json_keeps_old_fields_and_adds_the_new_ones():
    data = estimate(flux_workload(), dev("RTX 3060")).to_dict()
    for key in ("verdict", "peak_bytes", "peak_gib", "peak_stage", "headroom_bytes", "offload_bytes", "memory_mode",
                "device", "stages", "remedies", "plan", "cheapest_card", "models", "unknown_nodes", "notes"):
        assert key in data
    for key in ("tight", "slowdown", "slowdown_high", "complete", "missing", "peak_high_bytes", "extra_seconds"):
        assert key in data
    assert data["verdict"] in VERDICTS
    assert all("run" in s and s["run"]["outcome"] in runtime.SEVERITY for s in data["stages"])


def test_stop_only_on_oom_or_a_slowdown_the_user_set():
    slow = estimate(flux_workload(w=512, h=512), Device("8 GB", 8 * GiB))
    assert slow.verdict == "runs_slower" and slow.stop_reason() == ""
    assert slow.slowdown > 1.5 and "slower" in slow.stop_reason(1.5)
    oom = estimate(wan22_workload(precision="fp8_scaled"), Device("6 GB", 6 * GiB - int(0.35 * GiB)))
    assert oom.verdict == "oom" and "out of memory" in oom.stop_reason()


# --- capacity -------------------------------------------------------------------------------
def test_flux_1600_batch_capacity_on_a_5090():
    """Comfy-Org/ComfyUI#10737: Flux at 1600×1600 on an RTX 5090 ran batch 22 (19 before the fix).
    At that batch ComfyUI's own estimate exceeds the card, so it streams the weights and the
    activations alone set the limit."""
    wl = flux_workload(w=1600, h=1600, weight_dtype="fp8_e4m3fn")
    normal = capacity.find(wl, dev("RTX 5090"), "batch")
    assert 22 * 0.85 <= normal.runs_value <= 22 * 1.15, normal
    assert normal.resident_value < normal.runs_value  # beyond a few images ComfyUI streams the weights
    high = capacity.find(wl, dev("RTX 5090", vram_state="high"), "batch")  # --highvram keeps them resident
    assert high.resident_value == high.runs_value < normal.runs_value


def test_capacity_resolution_and_frames_are_monotone_answers():
    wl = wan22_workload(w=832, h=480, length=33, precision="fp8_scaled")
    frames = capacity.find(wl, dev("RTX 4090"), "frames")
    res = capacity.find(wl, dev("RTX 4090"), "resolution")
    assert frames.resident_value and frames.runs_value >= frames.resident_value
    assert res.resident_value and res.runs_value >= res.resident_value
    bigger = capacity.find(wl, dev("RTX 5090"), "frames")
    assert bigger.resident_value >= frames.resident_value


def test_cli_max_batch_and_flags(tmp_path):
    from vram_budget.nodes.estimator.cli import main  # noqa: F401  (import check)

    out = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate",
                          "example_workflows/flux_dev_1024.json", "--gpu", "RTX 5090", "--max", "batch", "--json",
                          "--os", "windows"], capture_output=True, text=True, cwd=_repo())
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["capacity"][0]["what"] == "batch" and data["capacity"][0]["runs_value"] >= 1
    text = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate",
                           "example_workflows/flux_dev_1024.json", "--gpu", "RTX 3060", "--highvram"],
                          capture_output=True, text=True, cwd=_repo())
    assert text.returncode == 0 and "Verdict:" in text.stdout


def _repo():
    from pathlib import Path

    return Path(__file__).resolve().parents[1]


def test_remedies_for_oom_say_what_makes_it_run_and_the_plan_adds_savings_per_stage():
    budget = estimate(wan22_workload(precision="fp8_scaled"), Device("6 GB", 6 * GiB - int(0.35 * GiB)))
    assert budget.verdict == "oom"
    runs = [r for r in budget.remedies if r.runs]
    assert runs and all(r.kind in ("frames", "resolution", "batch") for r in runs)
    # a text-encoder saving does not shrink the sampling stage: the 13.3 GiB expert stays in the sum
    plan = budget.plan
    expert = budget.stages[1].weights_bytes
    assert plan is not None and not plan.fits and plan.new_peak_bytes > expert


def test_pascal_on_linux_runs_text_encoders_on_the_cpu():
    """text_encoder_device(): GPU only when should_use_fp16, False for Pascal under Linux (0.33.0); from 0.37 the
    GPU under Dynamic VRAM whatever the card (model_management.py:1222-1223 in 0.38.1)."""
    base = [sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", "example_workflows/flux_dev_1024.json",
            "--gpu", "GTX 1070", "--json"]
    linux = json.loads(subprocess.run(base + ["--comfyui-version", "0.33"], capture_output=True, text=True,
                                      cwd=_repo()).stdout)
    win = json.loads(subprocess.run(base + ["--os", "windows", "--comfyui-version", "0.33"], capture_output=True,
                                    text=True, cwd=_repo()).stdout)
    assert linux["stages"][0]["weights_bytes"] == 0 and "Pascal" in linux["stages"][0]["items"][0]["assumption"]
    assert win["stages"][0]["weights_bytes"] > 0
    new = json.loads(subprocess.run(base, capture_output=True, text=True, cwd=_repo()).stdout)
    assert new["stages"][0]["weights_bytes"] == win["stages"][0]["weights_bytes"]


def test_kl_vae_runs_in_fp32_without_bf16():
    """vae_dtype: KL VAEs list [bf16, fp32], so a card without bf16 decodes in fp32 (twice the bytes)."""
    ampere = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("RTX 3060"))
    pascal = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("GTX 1070"))
    a, p = ampere.stages[2], pascal.stages[2]
    assert p.weights_bytes == 2 * a.weights_bytes and p.working_bytes == 2 * a.working_bytes


def test_cheapest_card_is_one_where_comfyui_keeps_everything_resident():
    budget = estimate(flux_workload(), dev("RTX 4090"))  # 16-bit Flux: ComfyUI streams a little on a 4090
    assert budget.verdict == "runs_slower"
    assert budget.cheapest_card is not None and budget.cheapest_card.name != "RTX 4090"
    on_it = estimate(flux_workload(), dev(budget.cheapest_card.name))
    assert on_it.outcome == "fits"


def test_the_node_and_panel_entry_point_adds_every_capacity_that_applies():
    """estimate_prompt(..., capacities=None) is what the VRAM Budget node and the panel call."""
    from vram_budget.nodes.estimator.plan.planning import estimate_prompt

    wf = json.loads((_repo() / "example_workflows" / "flux_dev_1024.json").read_text())
    budget = estimate_prompt(wf, dev("RTX 5090"), capacities=None)
    assert [c.what for c in budget.capacity] == ["batch", "resolution"]
    assert all(c.runs_value for c in budget.capacity) and "capacity" in budget.to_dict()
    video = estimate_prompt(json.loads((_repo() / "example_workflows" / "wan22_14b_i2v_720p.json").read_text()),
                            dev("H200"), capacities=None)
    assert [c.what for c in video.capacity] == ["batch", "resolution", "frames"]


def test_comfyuis_estimate_uses_the_recorded_memory_usage_factor_of_families_the_typed_table_lacks():
    """Chroma Radiance (pixel space: a 1024² 'latent' is 1M positions): with the default factor 2.0 ComfyUI's
    estimate would be ~80 GiB and everything would stream; its class's own 0.044 (recorded by the tracer)
    gives ~1.8 GiB, and the model stays resident on a 24 GB card."""
    from vram_budget.nodes.estimator.machine import runtime
    from vram_budget.nodes.estimator.models.name_infer import infer_info
    from vram_budget.nodes.estimator.workload import LatentShape

    info, _ = infer_info("chroma-radiance-x0.safetensors", "diffusion", "diffusion_models")
    assert "chroma-radiance" not in runtime.MEMORY_USAGE_FACTOR
    pixels = LatentShape(1, 3, 1024, 1024, pixel_width=1024, pixel_height=1024, spatial_compression=1)
    need = runtime.comfy_memory_required(info, pixels, 2)
    assert need == int(2 * 1024 * 1024 * 2 * 0.01 * 2**20 * 0.044)


def test_gguf_takes_the_legacy_path_under_dynamic_vram():
    """ComfyUI-GGUF clones the patcher into GGUFModelPatcher, a ModelPatcher (nodes.py:34, :175): a GGUF model
    is loaded partially and streamed as in classic mode even when Dynamic VRAM is on."""
    import accuracy_cases as A
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.plan.planning import estimate
    from vram_budget.nodes.estimator.machine.gpus import card_for_vram

    card = card_for_vram(8, False)
    classic = estimate(A.schnell_gguf(), Device.from_card(card, memory_mode="classic"), models=A.SCHNELL_Q4)
    dynamic = estimate(A.schnell_gguf(), Device.from_card(card, memory_mode="dynamic"), models=A.SCHNELL_Q4)
    i = next(n for n, sb in enumerate(classic.stages) if sb.stage.kind == "sample")
    c, d = classic.runs[i], dynamic.runs[i]
    assert (d.resident_bytes, d.streamed_bytes, d.outcome) == (c.resident_bytes, c.streamed_bytes, c.outcome)
    assert any("GGUF: the legacy path" in e for e in d.explanation)


@pytest.mark.parametrize("ram_gib, offered", [(8, True), (16, False)])
def test_native_fp8_instead_of_gguf_only_where_it_pays(ram_gib, offered):
    """Under Dynamic VRAM a GGUF model is loaded the legacy way and held in process RAM; a native fp8 file of the
    same model goes through Dynamic VRAM with its pages mapped. Flux schnell Q4 on an 8 GB card: with 8 GiB of RAM
    the GGUF run is killed (RAM) and the fp8 file's is not, so the fix is offered; with 16 GiB both run and the
    fp8 file is no faster on the card, so it is not. Never in classic mode (both take the same path there)."""
    from dataclasses import replace

    import accuracy_cases as A
    from vram_budget.nodes.estimator.machine.gpus import card_for_vram
    from vram_budget.nodes.estimator.machine.host_memory import Host

    card = card_for_vram(8, False)
    host = Host(ram_total_bytes=ram_gib * GiB, swap_total_bytes=0, source="test")
    dynamic = replace(Device.from_card(card, memory_mode="dynamic"), host=host)
    budget = estimate(A.schnell_gguf(), dynamic, models=A.SCHNELL_Q4)
    native = [r for r in budget.remedies if "native fp8" in r.title]
    assert bool(native) == offered, [r.title for r in budget.remedies]
    if offered:
        assert budget.verdict == "oom" and budget.host.outcome == "oom"
        assert "RAM: oom → thrashing" in native[0].title and native[0].runs and native[0].rank == 1
        assert "legacy path" in native[0].detail
    classic = estimate(A.schnell_gguf(), replace(dynamic, memory_mode="classic"), models=A.SCHNELL_Q4)
    assert not [r for r in classic.remedies if "native fp8" in r.title]


def _flux_prompt(compile_model: bool) -> dict:
    p = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp8_e4m3fn.safetensors",
                                                         "clip_name2": "clip_l.safetensors", "type": "flux"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "a cat"}},
        "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
                                                   "latent_image": ["5", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
        "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}},
    }
    if compile_model:
        p["9"] = {"class_type": "TorchCompileModel", "inputs": {"model": ["1", 0], "backend": "inductor"}}
        p["6"]["inputs"]["model"] = ["9", 0]
    return p


def test_torch_compile_takes_the_legacy_path_under_dynamic_vram():
    """TorchCompileModel clones the model with disable_dynamic=True (nodes_torch_compile.py:28, 0.18.2 and 0.33.0):
    under Dynamic VRAM the compiled Flux is loaded partially and streamed the classic way, as in classic mode,
    while the same workflow without the node streams through Dynamic VRAM."""
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.graph import read_workflow

    card = find_card("RTX 4070")
    dynamic, classic = (Device.from_card(card, memory_mode=m) for m in ("dynamic", "classic"))
    compiled = read_workflow(_flux_prompt(True))
    stage = compiled.stages_of(SAMPLE)[0]
    assert "nodes_torch_compile.py:28" in stage.legacy_path
    assert read_workflow(_flux_prompt(False)).stages_of(SAMPLE)[0].legacy_path == ""
    i = next(n for n, st in enumerate(compiled.stages) if st.kind == SAMPLE)
    on_dynamic, on_classic = estimate(compiled, dynamic).runs[i], estimate(compiled, classic).runs[i]
    plain = estimate(read_workflow(_flux_prompt(False)), dynamic).runs[i]
    assert (on_dynamic.resident_bytes, on_dynamic.streamed_bytes) == (on_classic.resident_bytes, on_classic.streamed_bytes)
    assert on_dynamic.streamed_bytes > 0 and any("legacy path" in e and "TorchCompileModel" in e
                                                 for e in on_dynamic.explanation)
    assert (plain.resident_bytes, plain.streamed_bytes) != (on_dynamic.resident_bytes, on_dynamic.streamed_bytes)


def test_the_dynamic_vram_line_states_what_the_run_keeps_on_the_card_not_a_batch_it_splits():
    """Wan 2.2 at 1280x720x81 on a 16 GB card: cond and uncond together (~20 GiB of working memory) do not fit, so
    ComfyUI runs them in turn and the verdict is "runs"; the Dynamic VRAM line must state what that run keeps on the
    card (its minimum), which fits, not the batched figure, which would contradict the verdict beside it."""
    import re

    from vram_budget.nodes.estimator.units import GiB as _GiB

    out = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate",
                          "example_workflows/wan22_14b_i2v_720p.json", "--gpu", "RTX 5070 Ti", "--ram", "32",
                          "--json"], capture_output=True, text=True, cwd=_repo())
    data = json.loads(out.stdout)
    sample = [s for s in data["stages"] if s["kind"] == "sample"][0]
    assert data["memory_mode"] == "dynamic" and sample["run"]["cond_batch"] == 1
    assert sample["working_bytes"] + sample["overhead_bytes"] > data["device"]["capacity_bytes"]  # batched: no fit
    text = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate",
                           "example_workflows/wan22_14b_i2v_720p.json", "--gpu", "RTX 5070 Ti", "--ram", "32"],
                          capture_output=True, text=True, cwd=_repo()).stdout
    need = float(re.search(r"working memory: ([0-9.]+) GiB \+", text).group(1))
    assert "RUNS" in text and need * _GiB < data["device"]["capacity_bytes"]
    assert abs(need * _GiB - max(s["run"]["minimum_bytes"] for s in data["stages"])) < 0.01 * _GiB
