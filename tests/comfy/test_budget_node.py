"""The pack in a real ComfyUI: it starts cleanly, and the VRAM Budget node estimates the running prompt."""
from __future__ import annotations

import re
import time

import pytest

from comfy_harness import PACK_DIR_NAME
from helpers_models import spec_clip_text, spec_flux, spec_params, spec_t5, spec_vae_kl, write_safetensors

pytestmark = pytest.mark.comfy

PACK_NODES = {"VRAMBudget", "VAEDecodeAutoTiled", "VAEEncodeAutoTiled", "VRAMBudgetWanPlanner"}


def test_comfyui_starts_with_the_pack_and_logs_no_import_error(comfy_server, comfy_install):
    log = comfy_server.log()
    # Match the pack's own folder, not any path with the pack's name in it: CI's cache directory
    # (~/.cache/comfyui-vram-budget-ci) holds ComfyUI itself, whose audio extras fail without torchaudio.
    ours = [ln for ln in log.splitlines() if f"custom_nodes/{PACK_DIR_NAME}" in ln]
    assert not [ln for ln in ours if "IMPORT FAILED" in ln], ours  # ComfyUI's own extras may fail (no torchaudio)
    assert "[VRAM Budget] failed" not in log and "Cannot import" not in "\n".join(ours), log[-3000:]
    assert any(re.search(r"\d+\.\d+ seconds: .*comfyui-vram-budget", ln) for ln in ours), log[-3000:]
    status, info = comfy_server.request("GET", "/object_info")
    assert status == 200
    assert PACK_NODES <= set(info), sorted(PACK_NODES - set(info))
    assert info["VRAMBudget"]["output_node"] is True
    status, exts = comfy_server.request("GET", "/extensions")
    assert any("comfyui-vram-budget" in e and e.endswith("vram_panel.js") for e in exts), exts


@pytest.fixture(scope="module")
def flux_models(comfy_server):
    """Full-size Flux dev, T5-XXL, CLIP-L and VAE headers (data left as holes: nothing is loaded)."""
    models = comfy_server.base / "models"
    flux = write_safetensors(models / "diffusion_models" / "flux1-dev.safetensors", spec_flux("BF16"), sparse=True)
    write_safetensors(models / "text_encoders" / "t5xxl_fp16.safetensors", spec_t5(dtype="F16"), sparse=True)
    write_safetensors(models / "text_encoders" / "clip_l.safetensors", spec_clip_text(), sparse=True)
    write_safetensors(models / "vae" / "ae.safetensors", spec_vae_kl(z=16), sparse=True)
    return {"flux_params": spec_params(flux.spec)}


def flux_prompt(budget_inputs: dict) -> dict:
    """Flux dev pipeline WITHOUT an output node of its own: only the VRAM Budget node executes,
    so the (hollow) model files are never loaded; the node still reads the whole prompt."""
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors",
                                                         "clip_name2": "clip_l.safetensors", "type": "flux"}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "a lighthouse at dusk"}},
        "4": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                                   "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                                   "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
        "6": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}},
        "9": {"class_type": "VRAMBudget", "inputs": budget_inputs},
    }


def run_prompt(server, prompt: dict, timeout: float = 120) -> dict:
    status, body = server.request("POST", "/prompt", {"prompt": prompt, "client_id": "vram-budget-test"})
    assert status == 200, body
    prompt_id = body["prompt_id"]
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, hist = server.request("GET", f"/history/{prompt_id}")
        if status == 200 and prompt_id in hist and hist[prompt_id].get("status", {}).get("completed") is not None:
            entry = hist[prompt_id]
            if entry["status"].get("status_str") in ("success", "error"):
                return entry
        time.sleep(0.3)
    raise AssertionError(f"prompt {prompt_id} did not finish:\n{server.log()[-3000:]}")


def test_budget_node_reports_exact_weights_and_stages(comfy_server, flux_models):
    entry = run_prompt(comfy_server, flux_prompt({"gpu": "RTX 5090", "stop_if_wont_fit": False}))
    assert entry["status"]["status_str"] == "success", entry["status"]
    ui = entry["outputs"]["9"]
    text = ui["text"][0]
    summary = ui["vram_budget"][0]
    assert "Sample: Flux.1 dev" in text and "RTX 5090" in text
    kinds = [s["kind"] for s in summary["stages"]]
    assert kinds == ["text_encode", "sample", "vae_decode"]
    sample = summary["stages"][1]
    assert sample["weights_bytes"] == flux_models["flux_params"] * 2  # exact, from the header ComfyUI resolved
    assert summary["models"]["diffusion_models/flux1-dev.safetensors"]["source"] == "header"
    # one line per run (issue 31): verdict, card, peaks, risk and the time; the report itself goes to the debug log
    line = re.search(r"\[VRAM Budget\] (fits|tight|runs slower|oom|unknown) on RTX 5090: peak [\d.]+ GiB.*OOM risk "
                     r"\w+ \(\d+ ms\)", comfy_server.log())
    assert line, comfy_server.log()[-2000:]
    assert "Stage " not in comfy_server.log().split(line.group(0))[0][-200:]  # the table is not in the INFO log


def _with_output_chain(prompt: dict) -> dict:
    """A real output chain that would load the VAE if anything ran before the budget node."""
    prompt["10"] = {"class_type": "EmptySD3LatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}}
    prompt["11"] = {"class_type": "VAEDecode", "inputs": {"samples": ["10", 0], "vae": ["6", 0]}}
    prompt["12"] = {"class_type": "PreviewImage", "inputs": {"images": ["11", 0]}}
    return prompt


def _stopped(entry) -> dict:
    """The pack's stop is ComfyUI's own interrupt (issue 31): no execution_error, no traceback, no OOM record."""
    assert entry["status"]["status_str"] == "error"
    messages = dict((m[0], m[1]) for m in entry["status"]["messages"])
    assert "execution_error" not in messages, messages.get("execution_error")
    stop = messages["execution_interrupted"]
    assert stop["node_type"] == "VRAMBudget"
    assert "6" not in stop["executed"] and "11" not in stop["executed"]  # the VAE never loaded
    return stop


def test_stop_if_wont_fit_stops_before_any_model_loads_as_a_verdict_not_a_crash(comfy_server, flux_models):
    # 0.5 GiB: Flux's activations + the CUDA context alone exceed it, offload or not
    prompt = _with_output_chain(flux_prompt({"vram_budget_gb": 0.5, "stop_if_wont_fit": True}))
    _stopped(run_prompt(comfy_server, prompt))
    log = comfy_server.log()
    assert "[VRAM Budget] stopped the prompt before any model loaded: ComfyUI would run out of memory" in log
    assert "Traceback" not in log.split("stopped the prompt before any model loaded")[-1]


def test_stop_if_wont_fit_lets_a_prompt_that_only_runs_slower_through(comfy_server, flux_models):
    # 8 GiB: 16-bit Flux does not fit, but ComfyUI loads it partially and finishes: never stop that
    # (with RAM to spare: 256 GiB, whatever this machine has)
    entry = run_prompt(comfy_server, _with_output_chain(flux_prompt({"vram_budget_gb": 8.0, "stop_if_wont_fit": True,
                                                                     "ram_budget_gb": 256.0})))
    assert entry["status"]["status_str"] == "success", entry["status"]
    summary = entry["outputs"]["9"]["vram_budget"][0]
    assert summary["verdict"] == "runs_slower" and summary["offload_bytes"] > 0
    assert "RUNS, SLOWER" in entry["outputs"]["9"]["text"][0]


def test_live_device_on_cpu_comfyui(run_in_comfy):
    out = run_in_comfy(
        """
        import json
        from dataclasses import replace
        node_mod = sys.modules[PACK.__name__ + ".nodes.budget_node"]
        routes = sys.modules[PACK.__name__ + ".nodes.routes"]
        registry = sys.modules[PACK.__name__ + ".nodes.registry"]
        dev = node_mod.live_device("auto", 0.0)
        fixed = node_mod.live_device("auto", 12.0)
        panel, note = routes.estimator_device(None)
        same = [replace(node_mod.live_device("auto", 0.0, card), host=None)
                == replace(routes.estimator_device(None if card == node_mod.THIS_GPU else card)[0], host=None)
                for card in (node_mod.THIS_GPU, "RTX 5090")]
        print(json.dumps({"name": dev.name, "total": dev.total_bytes, "mode": dev.memory_mode, "context": dev.context_bytes,
                          "fixed": fixed.total_bytes, "panel_same": replace(dev, host=None) == replace(panel, host=None),
                          "same": same, "note": note, "load_errors": registry.LOAD_ERRORS}))
        """
    )
    import psutil

    assert out["name"] == "cpu (no CUDA device: RAM)"
    assert out["total"] == pytest.approx(psutil.virtual_memory().total, rel=0.05)
    assert out["mode"] == "classic" and out["context"] == 0
    assert out["fixed"] == 12 * 1024**3
    # the panel's estimate route asks for the same Device as the node (the RAM figures aside, read twice)
    assert out["panel_same"] and out["same"] == [True, True]
    assert out["note"].startswith("No CUDA device: ComfyUI runs on the cpu")
    assert out["load_errors"] == {}


def test_stop_if_wont_fit_stops_a_prompt_that_runs_out_of_system_ram(comfy_server, flux_models):
    """16 GiB of RAM, no swap: 16-bit Flux + its 16-bit T5 cannot be held in RAM (the card, 48 GiB, is
    not the limit): the node stops the prompt before any model loads, naming the stage and the RAM."""
    prompt = _with_output_chain(flux_prompt({"vram_budget_gb": 48.0, "stop_if_wont_fit": True, "ram_budget_gb": 16.0}))
    _stopped(run_prompt(comfy_server, prompt))
    log = comfy_server.log()
    assert "[VRAM Budget] stopped the prompt before any model loaded" in log
    assert "(out of system RAM)" in log  # the one-line record names what stops it: the RAM, not the card


def test_budget_node_reads_this_machines_ram(comfy_server, flux_models):
    import psutil

    entry = run_prompt(comfy_server, flux_prompt({"gpu": "RTX 5090", "stop_if_wont_fit": False}))
    assert entry["status"]["status_str"] == "success", entry["status"]
    summary = entry["outputs"]["9"]["vram_budget"][0]
    assert summary["ram_assumed"] is False and summary["host"]["host"]["source"] == "live"
    assert summary["ram_total_bytes"] == pytest.approx(psutil.virtual_memory().total, rel=0.02)
    assert summary["swap_total_bytes"] == pytest.approx(psutil.swap_memory().total, rel=0.05, abs=64 * 1024**2)
    assert summary["host_outcome"] in ("fits", "swapping", "thrashing", "oom")
    assert all(isinstance(s["ram_peak_bytes"], int) for s in summary["stages"])
    assert "System RAM: needs" in entry["outputs"]["9"]["text"][0]
