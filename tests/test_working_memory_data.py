"""nodes/estimator/data/working_memory.json: the traced working-memory sweep and its fitted constants.

The JSON is written by bench/trace_working_memory.py (ComfyUI's own model code traced on fake CUDA
tensors, see docs/working-memory.md). These tests need neither torch nor ComfyUI: they check that
the file loads, that every architecture the budget asks for is there with its constants and
provenance, and that the stored formula, evaluated here independently, reproduces every traced
point within the tolerance below.
"""
from __future__ import annotations

import ast
import json
import math
import operator
import re
from importlib import resources
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FAMILIES = ("flux1-dev", "sdxl", "sd15", "wan2.1-14b", "wan2.1-1.3b", "wan2.2-ti2v-5b", "qwen-image",
            "hunyuan-video", "t5-xxl", "umt5-xxl", "clip-l")
DIFFUSION = FAMILIES[:8]
TEXT_ENCODERS = FAMILIES[8:]
COEFFS = ("a", "b", "c", "d", "q")

# Why 3 %: the traced bytes are exact and deterministic, so a fit error is only the formula's shape
# (the peak moves between blocks, a max of linear pieces: umT5 switches from its FFN to its
# attention bias at ~600 tokens, Qwen-Image between MLP and attention output). 3 % of the largest
# point (Wan 14B, 1280x720x81, batch 2: ~12 GiB) is ~0.37 GiB, well inside the allocator and
# fragmentation margin the budget carries anyway (docs/working-memory.md, caveats).
MAX_REL_ERROR = 0.03


def _load() -> dict:
    ref = resources.files("vram_budget.nodes.estimator") / "data" / "working_memory.json"
    return json.loads(ref.read_text())


@pytest.fixture(scope="module")
def doc() -> dict:
    return _load()


# -- a tiny arithmetic evaluator: the formula string is data, never eval()'d ------------------------
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Pow: operator.pow,
        ast.Div: operator.truediv}


def eval_formula(formula: str, names: dict[str, float]) -> float:
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            return names[node.id]
        raise ValueError(f"unsupported element in formula: {ast.dump(node)}")

    return ev(ast.parse(formula, mode="eval"))


def _entries(doc: dict):
    """(family, variant name or '', object) for every fitted object, variants included."""
    for fam, entry in doc["architectures"].items():
        yield fam, "", entry
        for vname, v in entry.get("variants", {}).items():
            yield fam, vname, v


def _predict(obj: dict, p: dict) -> float:
    return eval_formula(obj["formula"], {**obj["coefficients"], "batch": p["batch"], "tokens": p["tokens"],
                                         "text_tokens": p["text_tokens"]})


# -- structure ------------------------------------------------------------------------------------

def test_schema_and_provenance(doc):
    assert doc["schema"] == 1
    prov = doc["provenance"]
    assert prov["comfyui_version"] == "0.8.0"
    assert re.fullmatch(r"[0-9a-f]{40}", prov["comfyui_commit"])
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", prov["torch_version"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", prov["date"])
    assert (REPO / prov["tracer"]).is_file()
    for key in ("method", "attention", "compute_dtype", "not_included"):
        assert prov[key].strip()


def test_every_architecture_has_constants(doc):
    archs = doc["architectures"]
    missing = [f for f in FAMILIES if f not in archs]
    assert not missing, f"missing families: {missing}"
    for fam in FAMILIES:
        e = archs[fam]
        assert e["kind"] == ("diffusion" if fam in DIFFUSION else "text_encoder"), fam
        assert set(e["coefficients"]) == set(COEFFS), fam
        assert all(isinstance(e["coefficients"][k], (int, float)) for k in COEFFS), fam
        assert e["coefficients"]["a"] > 0 or e["coefficients"]["q"] > 0, fam
        assert e["token_rule"].strip(), fam
        assert 0 <= e["max_rel_error"] <= MAX_REL_ERROR, (fam, e["max_rel_error"])
        assert len(e["points"]) >= 3, fam
        assert not e.get("skipped"), (fam, e.get("skipped"))


def test_units_documented(doc):
    assert set(doc["units"]["coefficients"]) == set(COEFFS)


# -- the fit --------------------------------------------------------------------------------------

def test_formula_reproduces_every_point(doc):
    worst = {}
    for fam, vname, obj in _entries(doc):
        assert obj["max_rel_error"] <= MAX_REL_ERROR, (fam, vname, obj["max_rel_error"])
        for p in obj["points"]:
            pred = _predict(obj, p)
            err = abs(pred - p["working_bytes"]) / p["working_bytes"]
            # within the stored bound (rounding of the stored coefficients: 1e-5 slack) ...
            assert err <= obj["max_rel_error"] + 1e-5, (fam, vname, p, pred)
            # ... and the stored per-point prediction is the same number
            assert abs(pred - p["predicted_bytes"]) <= max(1.0, 1e-9 * pred), (fam, vname, p)
            worst[(fam, vname)] = max(worst.get((fam, vname), 0.0), err)
    # the stored bound is tight, not just an upper bound
    for fam, vname, obj in _entries(doc):
        assert obj["max_rel_error"] == pytest.approx(worst[(fam, vname)], abs=2e-5), (fam, vname)


def test_prediction_positive_and_monotonic_in_tokens(doc):
    for fam, vname, obj in _entries(doc):
        tokens = sorted({p["tokens"] for p in obj["points"]})
        for batch in sorted({p["batch"] for p in obj["points"]}):
            texts = {p["text_tokens"] for p in obj["points"] if p["batch"] == batch}
            for text in texts:
                preds = [_predict(obj, {"batch": batch, "tokens": n, "text_tokens": text}) for n in tokens]
                assert all(v > 0 for v in preds), (fam, vname)
                assert preds == sorted(preds), (fam, vname, batch, text)


def test_measured_points_grow_with_tokens_and_batch(doc):
    for fam, vname, obj in _entries(doc):
        by_key = {(p["batch"], p["text_tokens"], p["tokens"]): p["working_bytes"] for p in obj["points"]}
        for (b, t, n), w in by_key.items():
            for (b2, t2, n2), w2 in by_key.items():
                if b2 >= b and t2 >= t and n2 >= n and (b2, t2, n2) != (b, t, n):
                    assert w2 >= w, (fam, vname, (b, t, n), (b2, t2, n2))


def test_diffusion_batch_two_costs_about_twice_batch_one(doc):
    # Activations scale with the batch (cond+uncond batching doubles them): the fit's per-batch
    # coefficients must carry almost all of it, the batch-independent part (b, d) little.
    # Qwen-Image is the one model above 2x: for batch > 1 the slice joint_hidden_states[:, txt:]
    # is not contiguous, so aten::linear takes its matmul path (a reshape copy + a separate bias
    # add) instead of addmm on a view (docs/working-memory.md).
    upper = {"qwen-image": 2.2}
    for fam in DIFFUSION:
        pts = doc["architectures"][fam]["points"]
        one = {(p["tokens"], p["text_tokens"]): p["working_bytes"] for p in pts if p["batch"] == 1}
        two = {(p["tokens"], p["text_tokens"]): p["working_bytes"] for p in pts if p["batch"] == 2}
        common = set(one) & set(two)
        assert common, fam
        for k in common:
            assert 1.85 <= two[k] / one[k] <= upper.get(fam, 2.0 + 1e-6), (fam, k, two[k] / one[k])


def test_variants_cost_at_least_the_default(doc):
    # eager RoPE adds fp32 temporaries; fp8 weights add a bf16 copy of the layer being run; I2V adds
    # 20 input channels and 257 CLIP-vision tokens. None of them can lower the peak.
    for fam, entry in doc["architectures"].items():
        base = {(p["batch"], p["tokens"], p["text_tokens"]): p["working_bytes"] for p in entry["points"]}
        for vname, v in entry.get("variants", {}).items():
            for p in v["points"]:
                k = (p["batch"], p["tokens"], p["text_tokens"])
                if k in base:
                    assert p["working_bytes"] >= base[k], (fam, vname, k)


def test_tokens_follow_the_token_rule(doc):
    # tokens are latent tokens after the VAE and the patchify, as token_rule says
    divisors = {"flux1-dev": 16, "qwen-image": 16, "sdxl": 8, "sd15": 8, "wan2.1-14b": 16, "wan2.1-1.3b": 16,
                "hunyuan-video": 16, "wan2.2-ti2v-5b": 32}
    for fam, div in divisors.items():
        for p in doc["architectures"][fam]["points"]:
            t = (p["frames"] - 1) // 4 + 1 if p["frames"] > 1 else 1
            assert p["tokens"] == t * (p["width"] // div) * (p["height"] // div), (fam, p)


def test_comfy_baseline_recomputes(doc):
    # ComfyUI's own heuristic (model_base.memory_required, flash branch):
    # area * dtype_size * 0.01 * memory_usage_factor MiB, area = batch * prod(latent_shape[2:])
    # (+ the reference latents' area for Kontext / Qwen-Image-Edit: memory_usage_factor_conds)
    for fam in DIFFUSION + tuple(NEW_DIFFUSION):
        e = doc["architectures"][fam]
        factor = e["memory_usage_factor"]
        assert factor > 0, fam
        for p in e["points"]:
            shape = p["latent_shape"]
            area = shape[0] * math.prod(shape[2:]) + p.get("comfy_extra_area", 0)
            expected = int(area * 2 * 0.01 * factor * 1024 * 1024)
            assert p["comfy_memory_required_bytes"] == expected, (fam, p)
            assert p["measured_over_comfy"] == pytest.approx(p["working_bytes"] / expected, rel=1e-3)


def test_kontext_reference_tokens_follow_the_flux_token_rule(doc):
    # The token rule says a Kontext reference image adds its (h/16)*(w/16) tokens; the default
    # flux1-dev constants, fed that token count, must predict the traced Kontext runs.
    flux = doc["architectures"]["flux1-dev"]
    kontext = flux["variants"]["kontext"]["points"]
    assert kontext
    for p in kontext:
        assert p["tokens"] == 2 * (p["width"] // 16) * (p["height"] // 16)
        pred = _predict(flux, p)
        assert abs(pred - p["working_bytes"]) / p["working_bytes"] <= MAX_REL_ERROR, p


def test_docs_describe_every_family_and_the_schema(doc):
    text = (REPO / "docs" / "working-memory.md").read_text()
    for fam in FAMILIES + tuple(NEW_DIFFUSION) + tuple(NEW_TEXT_ENCODERS):
        assert f"`{fam}`" in text, fam
    assert doc["architectures"]["flux1-dev"]["formula"] in text


# -- ComfyUI 0.18.2 families (issue 10) ------------------------------------------------------------
# Traced from ComfyUI 0.18.2's model code (bench/trace_working_memory.py _arches_018 / _te_arches_018);
# each carries its own provenance because the file's is the 0.8.0 sweep. Expected supported_models class
# per family: what model_detection.model_config_from_unet_config matched for the cited config.
NEW_DIFFUSION = {
    "flux2-dev": "Flux2", "flux2-klein-4b": "Flux2", "z-image": "ZImage", "lumina2": "Lumina2",
    "qwen-image-edit": "QwenImage", "chroma": "Chroma", "sd3.5-large": "SD3", "sd3.5-medium": "SD3",
    "hidream": "HiDream", "hunyuan-video-1.5": "HunyuanVideo15", "hunyuan-image-2.1": "HunyuanImage21",
    "ltxv-2b": "LTXV", "ltxv-13b": "LTXV", "wan2.2-14b-i2v": "WAN21_T2V", "wan2.1-14b-i2v": "WAN21_I2V",
    "wan2.1-14b-flf": "WAN21_I2V", "wan2.1-14b-vace": "WAN21_Vace", "wan2.1-14b-fun-control": "WAN21_FunControl2V",
    "wan2.1-14b-camera": "WAN21_Camera", "wan2.2-14b-s2v": "WAN22_S2V", "wan2.1-14b-humo": "WAN21_HuMo",
    "wan2.2-14b-animate": "WAN22_Animate",
    "cosmos-predict2-2b": "CosmosT2IPredict2", "cosmos-predict2-14b": "CosmosT2IPredict2",
    "kandinsky5-lite": "Kandinsky5",
}
NEW_TEXT_ENCODERS = {"qwen2.5-vl-7b": "Qwen25_7BVLIModel", "qwen3": "Qwen3_4BModel", "mistral": "Mistral3_24BModel",
                     "llama3-8b": "LLAMAModel", "gemma3": "Gemma3_12BModel", "gemma": "Gemma2_2BModel"}


@pytest.mark.parametrize("fam", sorted({**NEW_DIFFUSION, **NEW_TEXT_ENCODERS}))
def test_018_family_traced_with_its_own_provenance(doc, fam):
    e = doc["architectures"][fam]
    prov = e["provenance"]
    assert prov["comfyui_version"] == "0.18.2" and doc["provenance"]["comfyui_version"] == "0.8.0"
    assert prov["comfyui_commit"] and "ComfyUI-0.18.2" in prov["comfyui_source"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", prov["date"])
    assert (REPO / prov["tracer"]).is_file()
    kind = "diffusion" if fam in NEW_DIFFUSION else "text_encoder"
    assert e["kind"] == kind
    assert e["comfy_model_class"] == {**NEW_DIFFUSION, **NEW_TEXT_ENCODERS}[fam]
    assert len(e["points"]) >= 3 and not e.get("skipped"), (fam, e.get("skipped"))
    assert 0 <= e["max_rel_error"] <= MAX_REL_ERROR, (fam, e["max_rel_error"])
    assert set(e["coefficients"]) == set(COEFFS)
    assert all(p["working_bytes"] > p["input_bytes"] >= 0 for p in e["points"]), fam
    if kind == "diffusion":
        assert all(p["input_bytes"] > 0 for p in e["points"]), fam  # latent + conds, counted
        assert e["memory_usage_factor"] > 0
        assert {p["batch"] for p in e["points"]} >= {1, 2}, fam  # the cond + uncond batch is traced


@pytest.mark.parametrize("fam", sorted(NEW_DIFFUSION))
def test_018_batch_two_costs_about_twice_batch_one(doc, fam):
    pts = doc["architectures"][fam]["points"]
    one = {(p["tokens"], p["text_tokens"]): p["working_bytes"] for p in pts if p["batch"] == 1}
    two = {(p["tokens"], p["text_tokens"]): p["working_bytes"] for p in pts if p["batch"] == 2}
    assert set(one) & set(two), fam
    for k in set(one) & set(two):
        assert 1.85 <= two[k] / one[k] <= 2.2, (fam, k, two[k] / one[k])


def test_qwen_image_constants_predict_the_edit_runs(doc):
    # Qwen-Image-Edit is Qwen-Image's network with a reference latent whose tokens join the image's:
    # the 0.8.0 qwen-image fit, fed image + reference tokens, predicts the 0.18.2 edit traces.
    qwen = doc["architectures"]["qwen-image"]
    for p in doc["architectures"]["qwen-image-edit"]["points"]:
        assert p["tokens"] == 2 * (p["width"] // 16) * (p["height"] // 16)
        assert abs(_predict(qwen, p) - p["working_bytes"]) / p["working_bytes"] <= 0.05, p


# -- the estimator uses them ----------------------------------------------------------------------

# data/working_memory.json's z-image coefficients, from which the literals below were worked out by hand
Z_IMAGE_COEFFICIENTS = {"a": 119693.0, "b": 1773802, "c": 63372.8, "d": 1965.29, "q": 0.0}


def _z_image_prompt(width=1024, height=1024, batch=1) -> dict:
    """The official Z-Image Turbo template as an API prompt (models by their published names)."""
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "z_image_turbo_bf16.safetensors",
                                                     "weight_dtype": "default"}},
        "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "qwen_3_4b.safetensors", "type": "lumina2"}},
        "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "4": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "a lighthouse at dusk"}},
        "5": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["4", 0]}},
        "6": {"class_type": "EmptySD3LatentImage", "inputs": {"width": width, "height": height, "batch_size": batch}},
        "7": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["4", 0], "negative": ["5", 0],
                                                   "latent_image": ["6", 0], "seed": 0, "steps": 8, "cfg": 1.0,
                                                   "sampler_name": "res_multistep", "scheduler": "simple",
                                                   "denoise": 1.0}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["3", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "z"}},
    }


def test_z_image_template_estimate_is_complete_and_uses_its_traced_entry():
    from vram_budget.nodes.estimator.plan import planning as B
    from vram_budget.nodes.estimator.machine.gpus import find_card
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.physics.memory import text_tokens_for, traced_constants

    b = B.estimate(read_workflow(_z_image_prompt()), B.Device.from_card(find_card("RTX 4090")))
    assert b.complete, (b.missing, b.incomplete)
    text, sample, decode = b.stages
    assert all(s.weights_bytes > 0 for s in (text, sample, decode))
    acts = next(i for i in sample.items if i.category == "working" and "activations" in i.label)
    assert "ComfyUI 0.18.2" in acts.assumption, acts.assumption
    # the traced z-image constants at 1024x1024, worked out by hand from the stored formula
    # batch*(a*tokens + c*text_tokens) + d*tokens + q*tokens**2 + b: 4096 tokens, batch 1 (cfg 1), 256 text
    # tokens (families/lumina.py TEXT_TOKENS; the prompt node gives no count), times the allocator
    # calibration (1.6 for families without a published run):
    #   1*(119693*4096 + 63372.8*256) + 1965.29*4096 + 1773802 = 516,309,594.64; x 1.6 = 826,095,351.4
    assert traced_constants()["z-image"]["coefficients"] == Z_IMAGE_COEFFICIENTS  # a refit: redo the literals
    assert sample.stage.text_tokens is None and text_tokens_for("z-image") == 256
    assert acts.bytes == pytest.approx(826_095_351.4, rel=1e-6)
    te_acts = next(i for i in text.items if i.category == "working")
    assert "qwen3" in te_acts.assumption and "0.18.2" in te_acts.assumption


@pytest.mark.parametrize("family, arch, key", [
    ("lumina2", {"hidden_size": 3840}, "z-image"),  # header detection: Lumina 2 branch, dim 3840
    ("lumina2", {"hidden_size": 2304}, "lumina2"),
    ("z-image", {}, "z-image"),  # name inference
    ("hunyuan-video", {"latent_channels": 32}, "hunyuan-video-1.5"),
    ("hunyuan-video-1.5", {}, "hunyuan-video-1.5"),
    ("hunyuan-video", {"latent_channels": 64}, "hunyuan-image-2.1"),
    ("hunyuan-video", {"latent_channels": 16}, "hunyuan-video"),
    ("flux2", {"hidden_size": 6144}, "flux2-dev"),
    ("flux2", {"hidden_size": 3072}, "flux2-klein-4b"),
    ("sd3", {"depth": 38}, "sd3.5-large"),
    ("sd3", {"depth": 24}, "sd3.5-medium"),
    ("ltxv", {"hidden_size": 2048}, "ltxv-2b"),
    ("ltxv", {"hidden_size": 4096}, "ltxv-13b"),
    ("chroma", {}, "chroma"),
    ("hidream", {}, "hidream"),
    ("wan2.2-14b", {"task": "i2v"}, "wan2.2-14b-i2v"),
    ("wan2.2-14b", {"task": "t2v"}, "wan2.1-14b"),
    ("wan2.1-14b", {"task": "vace"}, "wan2.1-14b-vace"),
    ("wan2.1-14b", {"task": "camera"}, "wan2.1-14b-camera"),
    ("wan2.1-14b", {"task": "t2v"}, "wan2.1-14b"),
    ("wan2.2-14b", {"task": "s2v"}, "wan2.2-14b-s2v"),
    ("wan2.1-14b", {"task": "humo"}, "wan2.1-14b-humo"),
    ("wan2.1-14b", {"task": "animate"}, "wan2.2-14b-animate"),
    ("wan2.2-14b", {"task": "animate"}, "wan2.2-14b-animate"),
    ("gemma", {"hidden_size": 3840}, "gemma3"),
    ("gemma", {"hidden_size": 2304}, "gemma"),
])
def test_working_memory_key_routes_each_configuration_to_its_trace(doc, family, arch, key):
    from vram_budget.nodes.estimator.physics.memory import working_memory_key

    assert working_memory_key(family, arch) == key
    assert key in doc["architectures"]


@pytest.mark.parametrize("family", ["z-image", "hunyuan-video-1.5", "ltx2", "gemma3", "qwen"])
def test_name_inferred_families_have_family_entries(family):
    from vram_budget.nodes.estimator.models import name_infer as ni
    from vram_budget.nodes.estimator.families import FAMILIES

    assert family in FAMILIES
    assert family in {r.family for rules in ni._RULES.values() for r in rules}


def test_header_detected_z_image_gets_its_traced_working_memory(tmp_path):
    import helpers_models as hm
    from vram_budget.nodes.estimator.physics import memory
    from vram_budget.nodes.estimator.families import describe
    from vram_budget.nodes.estimator.workload import LatentShape

    # full-size shapes (header only): ComfyUI's Lumina 2 branch, dim 3840 -> ZImage
    z = describe(hm.write_safetensors(tmp_path / "z.safetensors", hm.spec_lumina2(z_image=True, scale=1),
                                      sparse=True).path)
    wm = memory.diffusion_working(z.family, z.arch, LatentShape(1, 16, 128, 128), 1)
    assert (z.family, wm.source) == ("lumina2", "traced") and "ComfyUI 0.18.2" in wm.assumption
    # 128x128 latent / 2x2 patches = 4096 tokens, batch 1, 256 text tokens, the traced z-image constants
    # (by hand, as above): 119693*4096 + 63372.8*256 + 1965.29*4096 + 1773802 = 516,309,594.64, truncated
    assert memory.traced_constants()["z-image"]["coefficients"] == Z_IMAGE_COEFFICIENTS
    assert wm.traced_bytes == 516_309_594


# ---- older ComfyUI model code (data/working_memory_eras.json, bench/trace_working_memory_eras.py) ----

def _eras():
    import json as _json
    from pathlib import Path as _Path
    p = _Path(__file__).resolve().parents[1] / "nodes" / "estimator" / "data" / "working_memory_eras.json"
    return _json.loads(p.read_text(encoding="utf-8"))


def test_every_era_names_the_code_it_was_traced_from_and_ends_at_a_later_release():
    from vram_budget.nodes.estimator.physics.memory import _version
    doc = _eras()
    assert set(doc["architectures"]) <= set(doc["applies_to"])
    for arch, rows in doc["architectures"].items():
        assert rows, arch
        befores = [_version(r["before"]) for r in rows]
        assert befores == sorted(befores), arch
        for r in rows:
            prov = r["provenance"]
            assert prov["comfyui_commit"] and prov["comfyui_version"] == r["release"] and r["points"] >= 4
            assert _version(r["release"]) < _version(r["before"]) and r["max_rel_error"] is not None
            assert set(r["coefficients"]) == {"a", "b", "c", "d", "q"}


def test_an_older_comfyui_release_gets_its_own_codes_working_memory():
    """Wan before PR #9898 (ComfyUI 0.3.59) held 2.0x the working memory of 0.8.0's code at the same shapes, 1.43x in
    0.3.60, 1.07x from 0.3.61 to 0.3.64; a release that is not known, or 0.8.0 and later, gets 0.8.0's."""
    from vram_budget.nodes.estimator.physics.memory import era_factor
    from vram_budget.nodes.estimator.workload import LatentShape
    lat = LatentShape(1, 16, 60, 104, frames=21)
    tokens, ttok = 21 * 30 * 52, 512
    f = {rel: era_factor("wan2.1-14b", rel, 2, tokens, ttok, lat)[0] for rel in ("0.3.55", "0.3.60", "0.3.62",
                                                                                 "0.7.1", "0.8.0", "0.41.2", "")}
    assert 1.95 < f["0.3.55"] < 2.05 and 1.38 < f["0.3.60"] < 1.48 and 1.03 < f["0.3.62"] < 1.10
    assert f["0.7.1"] == f["0.3.62"] and f["0.8.0"] == f["0.41.2"] == f[""] == 1.0
    # every 14B key shares the block code (an I2V or VACE model); another family has no era
    assert era_factor("wan2.1-14b-i2v", "0.3.55", 2, tokens, ttok, lat)[0] == f["0.3.55"]
    assert era_factor("wan2.2-14b-i2v", "0.3.55", 2, tokens, ttok, lat)[0] == f["0.3.55"]
    assert era_factor("flux1-dev", "0.3.55", 2, tokens, ttok, lat) == (1.0, None)


def test_the_command_line_prices_the_older_wan_code_of_a_stated_release():
    import json as _json
    import subprocess as _sp
    import sys as _sys
    from pathlib import Path as _Path
    wf = str(_Path(__file__).resolve().parents[1] / "example_workflows" / "wan22_14b_i2v_720p.json")

    def working(*args):
        out = _sp.run([_sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", wf, "--gpu", "RTX 4090",
                       "--json", *args], capture_output=True, text=True, timeout=120)
        stage = next(s for s in _json.loads(out.stdout)["stages"] if s["kind"] == "sample")
        return next(i for i in stage["items"] if i["category"] == "working")

    old, new = working("--comfyui-version", "0.3.55"), working("--comfyui-version", "0.8.0")
    assert 1.95 < old["bytes"] / new["bytes"] < 2.05 and "0.3.55's older code" in old["assumption"]
    assert "working_memory_eras.json" not in new["assumption"]
