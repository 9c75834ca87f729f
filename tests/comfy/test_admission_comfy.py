"""Issue 35 on a real ComfyUI (CPU): a queued prompt is held while a stand-in co-tenant (a process named `ollama`,
listed by a stand-in nvidia-smi as holding 11.6 GiB of a 12 GiB RTX 3060) holds the card, and starts when it
ends; cancel and "run anyway" work; no prompt is lost or reordered. The panel side: tests/e2e."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from cotenant_standin import fake_smi, start_holder, stop
from helpers_models import write_vae

pytestmark = pytest.mark.comfy

import comfy_harness as HARNESS  # noqa: E402,N812

VAE = "adm_vae.safetensors"
HOLD_MIB = 11900  # leaves less than the VAE decode needs on a 12 GiB card; an empty card runs it


def prompt(size: int) -> dict:
    return {"1": {"class_type": "VAELoader", "inputs": {"vae_name": VAE}},
            "2": {"class_type": "EmptyLatentImage", "inputs": {"width": size, "height": size, "batch_size": 1}},
            "3": {"class_type": "VAEDecode", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
            "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}}}


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("standin")
    fake_smi(folder)
    return folder


@pytest.fixture(scope="module")
def server(comfy_server_factory, standin):
    return comfy_server_factory(setup=lambda base: write_vae(base / "models" / "vae" / VAE, "kl4", "F16", scale=1),
                                env={"VRAM_BUDGET_NVIDIA_SMI": str(standin / "nvidia-smi"),
                                     "VRAM_BUDGET_ADMISSION": "1"})


def queue(server, size: int) -> str:
    status, data = server.request("POST", "/prompt", {"prompt": prompt(size)})
    assert status == 200, data
    return data["prompt_id"]


def wait(fn, timeout: float = 60, what: str = ""):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")


def held(server):
    return server.request("GET", "/vram_budget/admission")[1]["held"]


def done(server) -> list[str]:
    """Prompt ids in ComfyUI's history, in the order they finished."""
    return list(server.request("GET", "/history")[1])


def test_held_while_a_co_tenant_holds_the_card_and_started_when_it_frees(server, standin):
    holder = start_holder(standin, HOLD_MIB)
    try:
        a, b = queue(server, 64), queue(server, 72)
        h = wait(lambda: held(server), what=lambda: f"the hold: {server.request('GET', '/vram_budget/admission')[1]}"
                 f"\n{server.log()[-3000:]}")
        assert h["prompt_id"] == a and h["card"] == "NVIDIA GeForce RTX 3060", (a, b, [e["text"] for e in server.request("GET", "/vram_budget/admission")[1]["events"]])
        assert f"held by Ollama (sha256-ab12) (pid {holder.pid})" in h["message"], h
        assert h["message"].startswith("waiting for ") and h["need_bytes"] > 0
        time.sleep(2)
        q = server.request("GET", "/queue")[1]
        assert q["queue_running"] == [] and len(q["queue_pending"]) == 2 and a not in done(server)
        st = server.request("GET", "/vram_budget/status")[1]
        assert st["admission"]["held"]["prompt_id"] == a
        (co,) = st["cotenants"]["processes"]
        assert co["pid"] == holder.pid and co["kind"] == "ollama" and "OLLAMA_KEEP_ALIVE=0" in co["advice"]
    finally:
        stop(holder)
    wait(lambda: b in done(server), what="both prompts to finish")
    finished = done(server)
    assert finished.index(a) < finished.index(b)
    assert held(server) is None
    kinds = [e["kind"] for e in server.request("GET", "/vram_budget/admission")[1]["events"] if e["prompt_id"] == a]
    assert kinds == ["held", "started"], kinds


def test_cancel_and_run_anyway(server, standin):
    holder = start_holder(standin, HOLD_MIB)
    try:
        c, d = queue(server, 80), queue(server, 88)
        wait(lambda: (held(server) or {}).get("prompt_id") == c, what="c held")
        assert server.request("POST", "/vram_budget/admission", {"release": d})[0] == 404  # only the held one
        status, st = server.request("POST", "/vram_budget/admission", {"cancel": c})
        assert status == 200
        wait(lambda: (held(server) or {}).get("prompt_id") == d, what="d held next")
        assert server.request("POST", "/vram_budget/admission", {"release": d})[0] == 200
        wait(lambda: d in done(server), what="d to run anyway")
        assert c not in done(server)
    finally:
        stop(holder)


def test_off_switch_and_bad_requests(server, standin):
    holder = start_holder(standin, HOLD_MIB)
    try:
        assert server.request("POST", "/vram_budget/admission", {"enabled": False})[1]["enabled"] is False
        e = queue(server, 96)
        wait(lambda: e in done(server), what="a prompt to run with admission off")
        for body in ({}, {"enabled": "yes"}, {"cancel": 5}, {"release": "x" * 200}):
            status, data = server.request("POST", "/vram_budget/admission", body)
            assert status == 400 and "error" in data, (body, data)
        assert server.request("POST", "/vram_budget/admission", {"cancel": "nope"})[0] == 404
    finally:
        stop(holder)
        server.request("POST", "/vram_budget/admission", {"enabled": True})


def test_the_live_fixer_reads_this_comfyuis_folders(run_in_comfy, tmp_path):
    """The fixes a held prompt may run with (admission.prompt_fixes), as ComfyUI's own folder list and node
    registry give them: an fp8 text encoder already in a text_encoders folder, VAE Decode (Auto Tiled) registered."""
    te = tmp_path / "te"
    te.mkdir()
    for name in ("t5xxl_fp16.safetensors", "t5xxl_fp8_e4m3fn_scaled.safetensors"):
        (te / name).write_bytes(b"")
    out = run_in_comfy(f"""
        import json, folder_paths
        folder_paths.add_model_folder_path("text_encoders", {str(te)!r})
        import importlib
        adm = importlib.import_module(PACK.__name__ + ".nodes.admission")
        prompt = {{"1": {{"class_type": "CLIPLoader", "inputs": {{"clip_name": "t5xxl_fp16.safetensors", "type": "sd3"}}}},
                  "2": {{"class_type": "VAEDecode", "inputs": {{"samples": ["5", 0], "vae": ["6", 0]}}}}}}
        fixed, words = adm.live_fixer(prompt)
        print(json.dumps({{"fixed": fixed, "words": words}}))
    """)
    assert out["fixed"]["1"]["inputs"]["clip_name"] == "t5xxl_fp8_e4m3fn_scaled.safetensors"
    assert out["fixed"]["2"]["class_type"] == "VAEDecodeAutoTiled" and len(out["words"]) == 2
