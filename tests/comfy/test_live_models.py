"""Ask ComfyUI itself (nodes/comfy_trace.py, nodes/live_models.py) against a real ComfyUI.

The trace worker runs with this ComfyUI's own Python: detection through comfy.model_detection
from header-only (sparse) files, and working memory traced with ComfyUI's model code at the
prompt's shapes, compared with the shipped table. Then the same through the running server: a
model family this pack has no table for is named by ComfyUI's detection, and the estimate says
which figures were traced live.
"""
from __future__ import annotations

import json
import time

import pytest

from helpers_models import spec_flux, spec_t5, spec_unet, spec_wan, write_safetensors

from vram_budget.nodes.comfy_trace import LiveTracer, tensor_list
from vram_budget.nodes.estimator.physics import memory
from vram_budget.nodes.estimator.families import FAMILIES
from vram_budget.nodes.estimator.files import inspect_file
from vram_budget.nodes.estimator.machine.gpus import find_card
from vram_budget.nodes.estimator.workload import LatentShape

pytestmark = pytest.mark.comfy


def aura_flow_spec(double: int = 4, single: int = 28, dim: int = 3072) -> dict:
    """The keys comfy.model_detection reads for AuraFlow (model_detection.py: double_layers.0.attn.w1q,
    positional_encoding [1, max_seq, dim], cond_seq_linear [dim, 2048]); a family this pack has no table for."""
    spec = {"positional_encoding": ("BF16", (1, 9216, dim)), "cond_seq_linear.weight": ("BF16", (dim, 2048))}
    for i in range(double):
        spec[f"double_layers.{i}.attn.w1q.weight"] = ("BF16", (dim, dim))
    for i in range(single):
        spec[f"single_layers.{i}.attn.w1q.weight"] = ("BF16", (dim, dim))
    return spec


@pytest.fixture(scope="module")
def tracer(comfy_install, tmp_path_factory):
    path, python, version = comfy_install
    t = LiveTracer(str(path), python=python, cache_path=str(tmp_path_factory.mktemp("live") / "cache.json"),
                   timeout_s=300)
    yield t
    t.close()


def tensors_of(tmp_path, name, spec):
    write_safetensors(tmp_path / name, spec, sparse=True)
    return tensor_list(inspect_file(str(tmp_path / name)))


def test_worker_detects_models_the_way_comfyui_loads_them(tracer, tmp_path, comfy_install):
    expected = {
        "flux1-dev.safetensors": (spec_flux("BF16"), "diffusion", "Flux"),
        "wan_1.3b.safetensors": (spec_wan("1.3b"), "diffusion", "WAN21_T2V"),
        "sdxl_ckpt.safetensors": (spec_unet("sdxl", prefix="model.diffusion_model."), "diffusion", "SDXL"),
        "aura.safetensors": (aura_flow_spec(), "diffusion", "AuraFlow"),
        "t5.safetensors": (spec_t5(dtype="F16"), "text_encoder", None),
    }
    for name, (spec, kind, cls) in expected.items():
        found = tracer.detect(tensors_of(tmp_path, name, spec))
        assert found is not None, (name, tracer.last_error)
        assert found["kind"] == kind, (name, found)
        if cls:
            assert found["class"] == cls, (name, found)
    assert tracer.comfy_version == comfy_install[2]
    junk = tracer.detect([["foo.bar", "F16", [3, 3]]])
    assert junk["kind"] == "unknown"


def test_live_trace_agrees_with_the_shipped_table_and_is_cached(tracer, tmp_path):
    tensors = tensors_of(tmp_path, "flux1-dev.safetensors", spec_flux("BF16"))
    t0 = time.perf_counter()
    res = tracer.trace(tensors, [1, 16, 64, 64], 256)
    first = time.perf_counter() - t0
    assert res is not None, tracer.last_error
    assert res["class"] == "Flux" and res["cached"] is False and res["attention_calls"] > 0
    table = memory.diffusion_working("flux1-dev", FAMILIES["flux1-dev"].arch,
                                     LatentShape(batch=1, channels=16, height=64, width=64, pixel_height=512,
                                                 pixel_width=512), 1, 256)
    assert abs(res["working_bytes"] - table.traced_bytes) / table.traced_bytes < 0.10, (res, table.traced_bytes)
    t0 = time.perf_counter()
    again = tracer.trace(tensors, [1, 16, 64, 64], 256)
    assert again["cached"] is True and again["working_bytes"] == res["working_bytes"]
    assert time.perf_counter() - t0 < 0.5 < first
    bigger = tracer.trace(tensors, [2, 16, 64, 64], 256)
    assert bigger["working_bytes"] > res["working_bytes"]  # the prompt's shapes, not a constant


def test_a_failing_trace_is_an_answer_not_a_dead_worker(tracer):
    assert tracer.trace([["foo.bar", "F16", [3, 3]]], [1, 4, 8, 8], 77) is None
    assert "does not detect" in (tracer.last_error or "")
    assert tracer.detect([["foo.bar", "F16", [3, 3]]])["kind"] == "unknown"  # the same worker still answers


def _aura_prompt(name: str) -> dict:
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": name, "weight_dtype": "default"}},
        "4": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
        "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["6", 0], "negative": ["6", 0],
                                                   "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "6": {"class_type": "ConditioningZeroOut", "inputs": {"conditioning": ["7", 0]}},
        "7": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["8", 0], "text": "x"}},
        "8": {"class_type": "CLIPLoader", "inputs": {"clip_name": "t5xxl_fp16.safetensors", "type": "stable_diffusion"}},
        "9": {"class_type": "SaveLatent", "inputs": {"samples": ["5", 0], "filename_prefix": "x"}},
    }


def test_server_names_an_unknown_family_by_comfyuis_detection_and_says_what_was_traced_live(comfy_server):
    name = "aura_flow_test.safetensors"
    write_safetensors(comfy_server.base / "models" / "diffusion_models" / name, aura_flow_spec(), sparse=True)
    deadline = time.time() + 240
    body = ""
    while time.time() < deadline:
        status, data = comfy_server.request("POST", "/vram_budget/estimate", {"prompt": _aura_prompt(name)})
        assert status == 200, data
        body = json.dumps(data["budget"])
        if "traced live" in body:
            break
        time.sleep(3)
    assert "AuraFlow (ComfyUI's detection)" in body, body[:2000]
    assert "comfy:AuraFlow" in body
    assert "traced live" in body, body[:3000]


def test_server_reads_a_loaded_images_size_from_its_input_folder(comfy_server):
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", 1216, 832, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    (comfy_server.base / "input" / "size_probe.png").write_bytes(png)
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": "size_probe.png"}},
        "2": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "3": {"class_type": "VAEEncode", "inputs": {"pixels": ["1", 0], "vae": ["2", 0]}},
        "4": {"class_type": "SaveLatent", "inputs": {"samples": ["3", 0], "filename_prefix": "x"}},
    }
    status, data = comfy_server.request("POST", "/vram_budget/estimate", {"prompt": prompt})
    assert status == 200, data
    body = json.dumps(data["budget"])
    assert "assumed 1024" not in body
    encode = next(s for s in data["budget"]["stages"] if s["kind"] == "vae_encode")
    # the same encode priced here with the image's size given: the server read 1216×832 from the file
    from vram_budget.nodes.estimator.machine.device import Device
    from vram_budget.nodes.estimator.plan.planning import estimate
    from vram_budget.nodes.estimator.graph import read_workflow
    from vram_budget.nodes.estimator.graph.base import INPUT_MEDIA

    token = INPUT_MEDIA.set(lambda name: (1216, 832, 1) if name == "size_probe.png" else None)
    try:
        here = estimate(read_workflow(prompt), Device.from_card(find_card("RTX 4090")))
    finally:
        INPUT_MEDIA.reset(token)
    here_encode = next(sb for sb in here.stages if sb.stage.kind == "vae_encode")
    assert here_encode.stage.latent.pixel_width == 1216
    assert encode["working_bytes"] == here_encode.working_bytes
    prompt["1"]["inputs"]["image"] = "../../etc/passwd"  # outside the input folder: never read, an assumption
    status, data = comfy_server.request("POST", "/vram_budget/estimate", {"prompt": prompt})
    assert status == 200 and "assumed 1024" in json.dumps(data["budget"])


def test_live_training_trace_recomputes_the_whole_model_like_checkpoint_depth_1(tracer, tmp_path):
    tensors = tensors_of(tmp_path, "flux1-dev.safetensors", spec_flux("BF16"))
    infer = tracer.trace(tensors, [1, 16, 64, 64], 256)
    train = tracer.trace_train(tensors, [1, 16, 64, 64], 256)
    assert train is not None, tracer.last_error
    # every block's saved activations at once, against one block's transients for inference
    assert train["working_bytes"] > 20 * infer["working_bytes"]
    # the first-principles formula the command line uses (8h + 2·ffn elements per token and block)
    h, ffn, blocks, tokens = 3072, 12288, 19 + 38, 32 * 32 + 256
    formula = tokens * blocks * (8 * h + 2 * ffn) * 2
    assert 0.5 < train["working_bytes"] / formula < 2.0, (train, formula)
    per_block = tracer.trace_train(tensors, [1, 16, 64, 64], 256, depth=2)  # each block checkpointed
    assert per_block is not None and per_block["working_bytes"] < train["working_bytes"] / 2


def test_warm_starts_the_worker_once(comfy_install, tmp_path):
    path, python, version = comfy_install
    t = LiveTracer(str(path), python=python, cache_path=str(tmp_path / "c.json"), timeout_s=300)
    try:
        assert t.warm() is True and t._proc is not None and t._proc.poll() is None
        first = t._proc.pid
        assert t.warm() is True and t._proc.pid == first  # already running: nothing new
        assert t.comfy_version == version
    finally:
        t.close()
    broken = LiveTracer(str(tmp_path), python=python, timeout_s=60)  # not a ComfyUI folder
    assert broken.warm() is False and "ComfyUI" in (broken.last_error or "")


def _comfy_module_spec(comfy_install, module_expr: str) -> dict:
    """{key: (dtype, shape)} of a ComfyUI module built on the meta device with ComfyUI's own Python: the key
    names and shapes a real file of that model has."""
    import subprocess
    import sys
    from pathlib import Path

    path, python, _version = comfy_install
    nodes_dir = Path(__file__).resolve().parents[2] / "nodes"
    code = (f"import sys, json; sys.path.insert(0, {str(nodes_dir)!r}); import comfy_trace; "
            f"comfy_trace.import_comfy({str(path)!r}); import torch, importlib\n"
            f"with torch.device('meta'):\n    m = {module_expr}\n"
            "print(json.dumps({k: ['BF16', list(t.shape)] for k, t in m.state_dict().items()}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=str(path), timeout=300,
                         env={**__import__("os").environ, "CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    return {k: (d, tuple(s)) for k, (d, s) in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def test_vaes_are_identified_and_traced_by_comfyuis_own_vae_code(tracer, tmp_path, comfy_install):
    """comfy.sd.VAE builds the class the file's keys select; its decode is traced at the prompt's shape.
    For a family the shipped table has (Flux's KL VAE) the live figure equals the table's exactly; a family
    it lacks (Mochi's video VAE) is still named, with its compression, and priced."""
    from helpers_models import spec_vae_kl

    from vram_budget.nodes.estimator.physics import vae_memory

    kl = tensors_of(tmp_path, "ae.safetensors", spec_vae_kl(z=16, scale=1, quant_conv=False, dtype="F32"))
    found = tracer.detect(kl)
    assert (found["kind"], found["class"], found["latent_channels"], found["spatial"]) == (
        "vae", "AutoencodingEngine", 16, 8), found
    live = tracer.trace_vae(kl, [1, 16, 128, 128])
    assert live is not None, tracer.last_error
    assert live["working_bytes"] == vae_memory.vae_decode_bytes("vae-kl16", (1, 16, None, 128, 128))
    assert tracer.trace_vae(kl, [2, 16, 128, 128])["working_bytes"] > live["working_bytes"]

    mochi = tensors_of(tmp_path, "mochi_vae.safetensors",
                       _comfy_module_spec(comfy_install, "importlib.import_module('comfy.ldm.genmo.vae.model').VideoVAE()"))
    found = tracer.detect(mochi)
    assert (found["kind"], found["class"], found["latent_channels"]) == ("vae", "VideoVAE", 12), found
    assert (found["spatial"], found["temporal"]) == (8, 6), found
    small = tracer.trace_vae(mochi, [1, 12, 3, 30, 52])
    big = tracer.trace_vae(mochi, [1, 12, 6, 30, 52])
    assert small is not None and big is not None, tracer.last_error
    assert big["working_bytes"] > small["working_bytes"] > 0


def test_server_prices_a_vae_the_table_lacks_with_comfyuis_own_decode(comfy_server, comfy_install):
    """Mochi's video VAE (no shipped table): the estimate names it by comfy.sd.VAE, traces its decode at the
    prompt's latent, and is complete."""
    name = "mochi_vae_test.safetensors"
    write_safetensors(comfy_server.base / "models" / "vae" / name,
                      _comfy_module_spec(comfy_install, "importlib.import_module('comfy.ldm.genmo.vae.model').VideoVAE()"),
                      sparse=True)
    prompt = {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": name}},
        "2": {"class_type": "EmptyMochiLatentVideo", "inputs": {"width": 416, "height": 240, "length": 19,
                                                                "batch_size": 1}},
        "3": {"class_type": "VAEDecode", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
        "4": {"class_type": "SaveImage", "inputs": {"images": ["3", 0], "filename_prefix": "x"}},
    }
    deadline = time.time() + 240
    budget = {}
    while time.time() < deadline:
        status, data = comfy_server.request("POST", "/vram_budget/estimate", {"prompt": prompt})
        assert status == 200, data
        budget = data["budget"]
        if "traced live" in json.dumps(budget):
            break
        time.sleep(3)
    body = json.dumps(budget)
    assert "VideoVAE VAE (ComfyUI's detection)" in body, body[:2000]
    assert "traced live" in body and budget["complete"] is True, body[:3000]


def test_a_text_encoder_the_tables_lack_is_named_by_comfyuis_detect_te_model(tracer, tmp_path):
    """Jina CLIP v2 (NewBie-Image's encoder): comfy.sd.detect_te_model names it from its keys; the estimator's
    describe() takes that name when its own tables know nothing of the file."""
    from vram_budget.nodes.estimator import families

    spec = {"model.embeddings.word_embeddings.weight": ("BF16", (250002, 1024))}
    for i in range(24):
        spec[f"model.encoder.layers.{i}.mixer.Wqkv.weight"] = ("BF16", (3072, 1024))
        spec[f"model.encoder.layers.{i}.mlp.fc1.weight"] = ("BF16", (4096, 1024))
    path = tmp_path / "jina_clip_v2_bf16.safetensors"
    write_safetensors(path, spec, sparse=True)
    assert families.describe(str(path)).kind == "unknown"  # the tables alone
    token = families.LIVE_IDENTIFY.set(lambda p, inv: tracer.detect(tensor_list(inv), inv.metadata))
    try:
        info = families.describe(str(path))
    finally:
        families.LIVE_IDENTIFY.reset(token)
    assert (info.kind, info.family) == ("text_encoder", "comfy-te:JINA_CLIP_2"), info
    assert info.weights_bytes == 2 * (250002 * 1024 + 24 * (3072 + 4096) * 1024)  # exact, from the header


def test_hunyuan_dits_text_encoders_count_as_comfyuis_own_classes(comfy_install):
    """P_MT5_XL and P_HYDIT_BERT (families/text_encoders.py, EasyAnimate V5's encoders) are ComfyUI's own T5 and
    BertModel built at its mt5_config_xl.json / hydit_clip.json; transformers' BertModel adds the pooler."""
    from math import prod

    from vram_budget.nodes.estimator.families.text_encoders import P_HYDIT_BERT, P_MT5_XL
    mt5 = _comfy_module_spec(comfy_install, (
        "importlib.import_module('comfy.text_encoders.t5').T5(__import__('json').load(open("
        "'comfy/text_encoders/mt5_config_xl.json')), torch.float16, 'meta', importlib.import_module('comfy.ops')"
        ".manual_cast)"))
    bert = _comfy_module_spec(comfy_install, (
        "importlib.import_module('comfy.text_encoders.bert').BertModel(__import__('json').load(open("
        "'comfy/text_encoders/hydit_clip.json')), torch.float16, 'meta', importlib.import_module('comfy.ops')"
        ".manual_cast)"))
    assert sum(prod(s) for _, s in mt5.values()) == P_MT5_XL
    assert sum(prod(s) for k, s in bert.values() if "position_ids" not in k) + 1024 * 1024 + 1024 == P_HYDIT_BERT
