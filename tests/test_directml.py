"""DirectML (ComfyUI --directml): torch-directml has no free-memory query, so ComfyUI reports 1 GiB free and turns
partial loading off unless --lowvram (comfy/model_management.py:110-122, :991, :1757-1759 in 0.33.0). A model that a
CUDA card would stream is then an OOM; --lowvram turns partial loading back on."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

from vram_budget.nodes.estimator.machine.device import LaunchFlags

FLUX = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "7": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors",
                                                     "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "8": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["7", 0], "text": "a"}},
    "3": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "4": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0],
                                               "latent_image": ["3", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                               "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
    "5": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["8", 0]}},
    "6": {"class_type": "SaveImage", "inputs": {"images": ["5", 0], "filename_prefix": "x"}},
}


def _cli(tmp_path, *flags):
    path = tmp_path / "flux.json"
    path.write_text(json.dumps(FLUX))
    out = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", str(path), "--gpu",
                          "RX 7900 XTX", "--os", "windows", *flags], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_comfys_directml_argument_is_read_as_comfy_stores_it():
    assert LaunchFlags.from_args(SimpleNamespace(directml=-1)).directml  # the flag alone
    assert LaunchFlags.from_args(SimpleNamespace(directml=0)).directml  # device 0 is a device, not "off"
    assert not LaunchFlags.from_args(SimpleNamespace(directml=None)).directml
    from vram_budget.nodes.estimator.machine.gpus import find_card
    card = find_card("RX 7900 XTX")
    assert LaunchFlags(directml=True, enable_dynamic_vram=False).memory_mode(card) == "classic"


def test_a_model_a_cuda_card_would_stream_is_an_oom_on_directml(tmp_path):
    plain = _cli(tmp_path)
    directml = _cli(tmp_path, "--directml")
    lowvram = _cli(tmp_path, "--directml", "--lowvram")
    assert "RUNS, SLOWER" in plain.splitlines()[1]
    assert "OUT OF MEMORY" in directml.splitlines()[1] and "DirectML" in directml.splitlines()[1]
    assert "DirectML (no partial loads)" in directml
    assert "cannot load partially" in directml
    assert "OUT OF MEMORY" not in lowvram.splitlines()[1]
    assert "DirectML with --lowvram" in lowvram
