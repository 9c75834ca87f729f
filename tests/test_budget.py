"""The budget against FACTS.md: weights, activation scaling, card table, remedies, memory modes."""
from __future__ import annotations

from dataclasses import replace

import pytest

from vram_budget.nodes.estimator.physics import memory
from helpers_models import spec_bytes, spec_controlnet_flux, spec_lora, spec_params, write_safetensors
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.machine.resolve import folder_resolver, loaded_weights
from vram_budget.nodes.estimator.models.published import catalogue_info
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.units import GB, GiB
from vram_budget.nodes.estimator.workload import (
    SAMPLE, TEXT_ENCODE, VAE_DECODE, LatentShape, ModelRef, Stage, Workload,
)


def dev(name: str, **kw) -> Device:
    return Device.from_card(find_card(name), **kw)


def image_latent(w: int, h: int, batch: int = 1, channels: int = 16) -> LatentShape:
    return LatentShape(batch, channels, h // 8, w // 8, pixel_width=w, pixel_height=h, source_type="EmptySD3LatentImage")


def wan_latent(w: int, h: int, length: int, batch: int = 1) -> LatentShape:
    return LatentShape(batch, 16, h // 8, w // 8, frames=(length - 1) // 4 + 1, pixel_width=w, pixel_height=h,
                       pixel_frames=length, temporal_compression=4, source_type="WanImageToVideo")


def flux_workload(w=1024, h=1024, batch=1, unet="flux1-dev.safetensors", t5="t5xxl_fp16.safetensors",
                  weight_dtype="default", loras=(), controlnet=None, cfg=1.0) -> Workload:
    te = (ModelRef("text_encoder", t5, "text_encoders", clip_type="flux"),
          ModelRef("text_encoder", "clip_l.safetensors", "text_encoders", clip_type="flux"))
    model = [ModelRef("diffusion", unet, "diffusion_models", weight_dtype=weight_dtype)]
    model += [ModelRef("lora", name, "loras", strength=1.0) for name in loras]
    if controlnet:
        model.append(ModelRef("controlnet", controlnet, "controlnet"))
    latent = image_latent(w, h, batch)
    vae = (ModelRef("vae", "ae.safetensors", "vae"),)
    return Workload(stages=(
        Stage(TEXT_ENCODE, "6", "CLIPTextEncode", models=te),
        Stage(SAMPLE, "3", "KSampler", models=tuple(model), latent=latent, cfg=cfg),
        Stage(VAE_DECODE, "8", "VAEDecode", models=vae, latent=latent),
    ))


def wan22_workload(w=1280, h=720, length=81, precision="fp16", cfg=3.5) -> Workload:
    te = (ModelRef("text_encoder", "umt5_xxl_fp16.safetensors", "text_encoders", clip_type="wan"),)
    latent = wan_latent(w, h, length)
    high = ModelRef("diffusion", f"wan2.2_i2v_high_noise_14B_{precision}.safetensors", "diffusion_models")
    low = ModelRef("diffusion", f"wan2.2_i2v_low_noise_14B_{precision}.safetensors", "diffusion_models")
    vae = (ModelRef("vae", "wan_2.1_vae.safetensors", "vae"),)
    return Workload(stages=(
        Stage(TEXT_ENCODE, "6", "CLIPTextEncode", models=te),
        Stage(SAMPLE, "57", "KSamplerAdvanced", models=(high,), latent=latent, cfg=cfg, expert="high_noise"),
        Stage(SAMPLE, "58", "KSamplerAdvanced", models=(low,), latent=latent, cfg=cfg, expert="low_noise"),
        Stage(VAE_DECODE, "8", "VAEDecode", models=vae, latent=latent),
    ))


def sample_stage(budget):
    return next(s for s in budget.stages if s.stage.kind == SAMPLE)


# --- weights (FACTS.md, within 5 %) ------------------------------------------------------------
@pytest.mark.parametrize("name,gb", [
    ("flux1-dev.safetensors", 24.0), ("flux1-dev-fp8.safetensors", 12.0),
    ("t5xxl_fp16.safetensors", 9.5), ("t5xxl_fp8_e4m3fn.safetensors", 5.0),
])
def test_facts_weight_sizes_from_catalogue(name, gb):
    info = catalogue_info(name)
    assert info is not None, name
    assert info.weights_bytes == pytest.approx(gb * GB, rel=0.05)


def test_flux_sample_stage_weights_are_the_16bit_weights():
    budget = estimate(flux_workload(), dev("RTX 5090"))
    info = catalogue_info("flux1-dev.safetensors")
    stage = sample_stage(budget)
    assert stage.weights_bytes == info.params * 2
    assert stage.peak_bytes == stage.weights_bytes + stage.working_bytes + stage.overhead_bytes


def test_weight_dtype_widget_overrides_file():
    budget = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("RTX 4090"))
    info = catalogue_info("flux1-dev.safetensors")
    assert sample_stage(budget).weights_bytes == info.params


def test_fp8_file_upcast_on_gpu_without_fp8_compute_when_16bit_fits():
    info = catalogue_info("wan2.1_t2v_1.3B_fp16.safetensors")
    fp8 = replace(info, quantization="fp8_e4m3fn", dtype="F8_E4M3", weights_bytes=info.params)
    ref = ModelRef("diffusion", "x.safetensors", "diffusion_models")
    on_3090, why = loaded_weights(fp8, ref, dev("RTX 3090"))
    assert on_3090 == info.params * 2 and "upcast" in why
    on_4090, _ = loaded_weights(fp8, ref, dev("RTX 4090"))
    assert on_4090 == info.params
    big = catalogue_info("flux1-dev-fp8.safetensors")  # 16-bit copy would not fit a 3090: stays fp8
    kept, why = loaded_weights(big, ref, dev("RTX 3090"))
    assert kept == big.weights_bytes and "kept" in why


# --- activations scale right (FACTS.md) --------------------------------------------------------
def test_activation_memory_grows_with_pixel_count():
    small = sample_stage(estimate(flux_workload(1024, 1024), dev("H100"))).working_bytes
    big = sample_stage(estimate(flux_workload(2048, 2048), dev("H100"))).working_bytes
    assert big / small == pytest.approx(4.0, rel=0.2)


def test_batch_of_four_in_turn_needs_about_a_quarter():
    model = catalogue_info("flux1-dev.safetensors")
    lat4 = image_latent(1024, 1024, batch=4)
    four = memory.diffusion_working(model.family, model.arch, lat4, 4).bytes
    one = memory.diffusion_working(model.family, model.arch, lat4, 1).bytes
    assert one / four == pytest.approx(0.25, abs=0.06)


def test_cfg_batches_cond_and_uncond():
    cfg1 = sample_stage(estimate(flux_workload(cfg=1.0), dev("H100")))
    cfg35 = sample_stage(estimate(flux_workload(cfg=3.5), dev("H100")))
    assert cfg35.batch_factor == 2 and cfg1.batch_factor == 1
    assert cfg35.working_bytes > 1.8 * cfg1.working_bytes
    assert cfg35.min_peak_bytes == cfg1.peak_bytes


@pytest.mark.parametrize("change", [dict(length=49), dict(w=832, h=480)])
def test_wan22_fewer_frames_or_480p_saves_several_gb(change):
    base = estimate(wan22_workload(), dev("H200"))
    smaller = estimate(wan22_workload(**change), dev("H200"))
    assert base.peak_bytes - smaller.peak_bytes >= 2 * GiB


# --- the FACTS.md card table ------------------------------------------------------------------
def test_flux_dev_16bit_needs_a_24_to_32_gb_card():
    on_4090 = estimate(flux_workload(), dev("RTX 4090"))
    assert on_4090.verdict != "fits"
    assert on_4090.cheapest_card.name in ("RTX 4090", "RTX 5090")
    on_5090 = estimate(flux_workload(), dev("RTX 5090"))
    assert on_5090.verdict in ("fits", "tight")


def test_flux_with_loras_and_controlnet_needs_32_gb(tmp_path):
    # real files (header + hole) for what has no published size: two rank-64 LoRAs, a ControlNet
    loras = [write_safetensors(tmp_path / "loras" / f"style_{n}.safetensors",
                               spec_lora("flux", rank=64, blocks=19), sparse=True) for n in range(2)]
    cn = write_safetensors(tmp_path / "controlnet" / "flux_cn.safetensors", spec_controlnet_flux(scale=1), sparse=True)
    wl = flux_workload(loras=("style_0.safetensors", "style_1.safetensors"), controlnet="flux_cn.safetensors")
    resolver = folder_resolver(tmp_path)
    budget = estimate(wl, dev("RTX 4090"), resolver)
    stage = sample_stage(budget)
    expected = catalogue_info("flux1-dev.safetensors").params * 2 + sum(spec_bytes(w.spec) for w in loras) \
        + spec_params(cn.spec) * 2  # LoRA tensors as stored, ControlNet at 16 bit: exact from the headers
    assert stage.weights_bytes == expected
    # more than the card holds: ComfyUI loads Flux partially and streams the rest (not an OOM)
    assert budget.verdict == "runs_slower" and budget.offload_bytes > 0
    assert budget.cheapest_card.name == "RTX 5090"


def test_wan22_14b_720p_card_table():
    # FACTS.md: "Wan 2.2 14B at 720p without RAM offload: 32 GB for short clips, 48 GB with margin".
    # The weights and the real activations fit a 5090 (cond/uncond in turn), but ComfyUI reserves
    # its own, larger activation estimate first and so streams a little of each expert: it runs,
    # at nearly full speed.
    short = estimate(wan22_workload(length=33), dev("RTX 5090"))
    assert short.stages[1].min_peak_bytes <= short.device.capacity_bytes
    assert short.verdict == "runs_slower" and short.slowdown_high < 1.1, short.peak_bytes / GiB
    full = estimate(wan22_workload(length=81), dev("RTX 4090"))
    assert full.verdict == "runs_slower" and full.offload_bytes > 0  # 16-bit experts stream from RAM
    assert estimate(wan22_workload(length=81), dev("L40S")).verdict in ("fits", "tight")


def test_wan22_experts_are_loaded_in_turn():
    budget = estimate(wan22_workload(), dev("H200"))
    samples = [s for s in budget.stages if s.stage.kind == SAMPLE]
    assert len(samples) == 2
    one_expert = catalogue_info("wan2.2_i2v_high_noise_14B_fp16.safetensors").params * 2
    for stage in samples:  # each sampling stage holds one expert, never both
        assert stage.weights_bytes == one_expert
    assert budget.peak_bytes == max(s.peak_bytes for s in samples)


# --- verdicts and memory modes -----------------------------------------------------------------
def test_verdict_thresholds():
    budget = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("H100"))
    assert budget.verdict == "fits" and budget.headroom_bytes > 0.1 * budget.device.capacity_bytes
    small = estimate(flux_workload(), Device("8 GB", 8 * GiB))
    assert small.verdict == "runs_slower" and small.headroom_bytes < 0  # partial load, not an OOM
    # Wan 2.2 at 720p × 81: one cond's activations alone (~6 GiB) exceed a 6 GB card, offload or not
    tiny = estimate(wan22_workload(precision="fp8_scaled"), Device("6 GB", 6 * GiB - int(0.35 * GiB)))
    run = next(r for r, s in zip(tiny.runs, tiny.stages) if s.stage.kind == SAMPLE)
    assert tiny.verdict == "oom" and tiny.to_dict()["verdict"] == "oom"
    assert run.outcome == "oom" and run.minimum_bytes > tiny.device.capacity_bytes and run.shortfall_bytes > 0


def test_dynamic_vram_verdict_uses_working_memory():
    classic = estimate(flux_workload(), dev("RTX 4070"))
    dynamic = estimate(flux_workload(), dev("RTX 4070", memory_mode="dynamic"))
    assert classic.verdict == "runs_slower"
    assert dynamic.verdict == "runs_slower"
    # Dynamic VRAM keeps more resident: no min_req reserve from ComfyUI's own (larger) estimate
    c_run, d_run = (next(r for r, s in zip(b.runs, b.stages) if s.stage.kind == SAMPLE) for b in (classic, dynamic))
    assert d_run.resident_bytes > c_run.resident_bytes
    assert dynamic.to_dict()["memory_mode"] == "dynamic"


def test_other_processes_reduce_capacity():
    alone = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("RTX 4090"))
    shared = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("RTX 4090", other_processes_bytes=10 * GiB))
    assert shared.headroom_bytes == alone.headroom_bytes - 10 * GiB
    kinds = [r.kind for r in shared.remedies]
    assert "free_memory" in kinds or shared.verdict == "fits"


# --- remedies (FACTS order, concrete savings) --------------------------------------------------
def test_remedies_follow_the_facts_ladder_and_fix_flux_on_a_4090():
    budget = estimate(flux_workload(), dev("RTX 4090"))
    ranks = [r.rank for r in budget.remedies]
    assert ranks == sorted(ranks)
    first = budget.remedies[0]
    assert first.kind == "precision" and "fp8" in first.title and first.fixes
    info = catalogue_info("flux1-dev.safetensors")
    assert first.saving_bytes == info.params  # 2 bytes/param -> 1


def test_t5_fp16_to_fp8_remedy_on_a_small_card():
    budget = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), Device("8 GB card", 8 * GiB - int(0.35 * GiB)))
    t5 = [r for r in budget.remedies if r.kind == "precision" and "T5" in r.title]
    assert t5, [r.title for r in budget.remedies]
    assert t5[0].saving_bytes == pytest.approx(4.6 * GiB, rel=0.1)


def test_video_remedies_name_frames_and_resolution():
    budget = estimate(wan22_workload(precision="fp8_scaled"), dev("RTX 4090"))
    kinds = {r.kind for r in budget.remedies}
    if budget.verdict != "fits":
        assert {"frames", "resolution"} <= kinds
        assert any("81 → " in r.title for r in budget.remedies)


def test_missing_model_is_said_not_crashed():
    wl = flux_workload(unet="my_private_finetune.safetensors")
    budget = estimate(wl, dev("RTX 4090"))
    assert any("my_private_finetune" in n for n in budget.notes)
    assert budget.to_dict()["stages"]


def test_no_fixes_listed_when_it_fits():
    budget = estimate(flux_workload(weight_dtype="fp8_e4m3fn"), dev("H100"))
    assert budget.verdict == "fits" and budget.remedies == () and budget.plan is None


def test_a_lora_named_without_its_base_is_priced_for_the_model_it_patches():
    """'my_style.safetensors' says nothing of its base model; the graph applies it to Flux.1 dev, so it
    gets Flux.1's typical rank-32 size (marked as such) instead of leaving the estimate incomplete."""
    budget = estimate(flux_workload(loras=("my_style.safetensors",)), dev("RTX 4090"))
    assert budget.complete and not budget.missing
    item = next(i for s in budget.stages for i in s.items if "my_style" in i.label)
    assert 100e6 < item.bytes < 1e9  # rank 32 over Flux.1's linears: ~0.3 GB at 16 bit
    assert "applied to Flux.1" in item.model.evidence[0] and "rank not in the name, 32 assumed" in item.model.evidence[0]
    # no diffusion model to patch: still a missing file, never 0 bytes with a confident verdict
    alone = Workload(stages=(Stage(SAMPLE, "3", "KSampler", models=(ModelRef("lora", "my_style.safetensors", "loras",
                                                                             strength=1.0),)),))
    assert [m.name for m in estimate(alone, dev("RTX 4090")).missing] == ["my_style.safetensors"]


def test_a_loader_without_a_file_name_leaves_the_estimate_incomplete():
    """An empty (or unresolvable) file widget is an unpriced model, never a silently dropped one."""
    from vram_budget.nodes.estimator.graph import read_workflow

    prompt = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "", "weight_dtype": "default"}},
        "2": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "3": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["4", 0],
                                                   "latent_image": ["2", 0], "seed": 1, "steps": 4, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["5", 0], "text": "x"}},
        "5": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": "flux"}},
    }
    budget = estimate(read_workflow(prompt), dev("RTX 4090"))
    assert not budget.complete
    (missing,) = budget.missing
    assert (missing.role, missing.folder) == ("diffusion", "diffusion_models")
    assert "no file" in missing.name and "node 1" in missing.name and "names no file" in missing.problem


def test_pixel_space_vae_is_the_identity_with_comfyuis_own_reservation():
    """VAELoader 'pixel_space' (Chroma Radiance, PixelDiT): no weights; ComfyUI reserves H·W·dtype bytes."""
    latent = LatentShape(1, 3, 1024, 1024, pixel_width=1024, pixel_height=1024, spatial_compression=1,
                         source_type="EmptyChromaRadianceLatentImage")
    w = Workload(stages=(Stage(VAE_DECODE, "8", "VAEDecode", models=(ModelRef("vae", "pixel_space", "vae_approx"),),
                               latent=latent),))
    budget = estimate(w, dev("RTX 4090"))
    assert budget.complete and not budget.missing
    (stage,) = budget.stages
    assert stage.working_bytes == 1024 * 1024 * 2
    assert sum(i.bytes for i in stage.items if i.category == "weights") < 16


def test_a_text_encode_whose_activations_are_unknown_is_not_a_silent_zero():
    """A checkpoint's text part the estimate cannot name as a text encoder (SAM 3.1's, before its family module):
    weights counted, activations not; the stage says why and the verdict is can't tell, never fits."""
    from vram_budget.nodes.estimator.model_info import CHECKPOINT, ModelInfo
    from vram_budget.nodes.estimator.plan.planning import estimate as plan_estimate
    from vram_budget.nodes.estimator.workload import TEXT_ENCODE, ModelRef, Stage, Workload

    ref = ModelRef(name="mystery_text_part.safetensors", role="text_encoder", folder="text_encoders")
    info = ModelInfo(kind=CHECKPOINT, family="unknown", label="Mystery checkpoint", params=10**9,
                     weights_bytes=2 * 10**9, source="catalogue")
    wl = Workload(stages=(Stage(kind=TEXT_ENCODE, node_id="1", node_type="CLIPTextEncode", models=(ref,),
                                text_tokens=77),))
    budget = plan_estimate(wl, dev("RTX 4090"), models={"text_encoders/mystery_text_part.safetensors": info})
    assert budget.stages[0].weights_bytes > 0 and budget.stages[0].working_bytes == 0
    assert budget.verdict == "unknown" and not budget.complete
    assert any("is not a text encoder this estimate knows" in i for i in budget.incomplete), budget.incomplete


def test_no_remedy_claims_to_fix_an_estimate_with_a_stage_without_a_figure():
    """A can't-tell estimate whose runtime outcome is itself unknown (a sampler with no latent size): the fp8
    remedy keeps its saving but claims no fix, since the peak it would be judged on is partial."""
    from vram_budget.nodes.estimator.plan.planning import estimate as plan_estimate
    from vram_budget.nodes.estimator.workload import SAMPLE, ModelRef, Stage, Workload

    ref = ModelRef(name="flux1-dev.safetensors", role="diffusion", folder="diffusion_models")
    wl = Workload(stages=(Stage(kind=SAMPLE, node_id="1", node_type="KSampler", models=(ref,)),))
    budget = plan_estimate(wl, dev("RTX 3060"))
    assert budget.verdict == "unknown" and budget.outcome == "unknown"
    fp8 = [r for r in budget.remedies if "fp8" in r.title]
    assert fp8 and fp8[0].saving_bytes > 0
    assert not any(r.fixes for r in budget.remedies) and all(r.runs is None for r in budget.remedies)


def test_prompts_on_the_same_encoders_are_one_entry_at_the_largest_prompt():
    """Positive and negative prompts on the same encoders are one text-encode entry; its figure is the largest of
    them (a long negative prompt after a short positive one needs more activations: ComfyUI encodes each)."""
    te = (ModelRef("text_encoder", "t5xxl_fp16.safetensors", "text_encoders", clip_type="flux"),
          ModelRef("text_encoder", "clip_l.safetensors", "text_encoders", clip_type="flux"))

    def text(node_id, tokens):
        return Stage(kind=TEXT_ENCODE, node_id=node_id, node_type="CLIPTextEncode", models=te, text_tokens=tokens)

    device = dev("RTX 4090")
    alone = {n: estimate(Workload(stages=(text("1", n),)), device).stages[0] for n in (77, 2048)}
    assert alone[2048].peak_bytes > alone[77].peak_bytes
    for order in ((77, 2048), (2048, 77)):
        budget = estimate(Workload(stages=(text("1", order[0]), text("2", order[1]), text("3", 77))), device)
        assert len(budget.stages) == 1
        entry = budget.stages[0]
        assert entry.peak_bytes == alone[2048].peak_bytes, order
        assert entry.title == alone[77].title + " (3 prompts)"
