"""The panel's HTTP routes (nodes/routes.py) against a real ComfyUI (``main.py --cpu``).

The server gets a real-architecture SD VAE (written with the safetensors writer, zero weights)
that ComfyUI really loads, and two test-only probe nodes: one raises a real
torch.OutOfMemoryError (ComfyUI's own OOM handling runs), one sleeps (a prompt in progress).
The pure helpers of routes.py are tested first, without ComfyUI.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil
import pytest

from helpers_models import spec_params, spec_vae_kl, write_vae  # tests/conftest.py puts tests/ on sys.path

from vram_budget.nodes import routes
from vram_budget.nodes.estimator.units import GiB, MiB



import comfy_harness as HARNESS  # noqa: E402,N812  (tests/comfy_harness.py)

pytestmark = pytest.mark.comfy
VAE_NAME = "sd_vae_zero.safetensors"

FACTS_OOM = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.12 GiB "
             "is free. Process 4242 has 6.50 GiB memory in use. Of the allocated memory 14.10 GiB is allocated by "
             "PyTorch, and 1.31 GiB is reserved by PyTorch but unallocated.")


# ----------------------------------------------------------------------------------------------
# Pure helpers (no ComfyUI)
def test_device_bar_splits_like_nvidia_smi():
    bar = routes.device_bar(total=24 * GiB, driver_free=3 * GiB, torch_reserved=18 * GiB, torch_allocated=15 * GiB)
    assert bar["allocated"] == 15 * GiB
    assert bar["reserved_unallocated"] == 3 * GiB
    assert bar["other"] == 24 * GiB - 3 * GiB - 18 * GiB
    assert bar["free"] == 3 * GiB
    assert bar["allocated"] + bar["reserved_unallocated"] + bar["other"] + bar["free"] == bar["total"]


def test_device_bar_clamps_other_and_handles_unknown_free():
    # driver free + reserved > total happens with rounding between the two readings
    bar = routes.device_bar(total=8 * GiB, driver_free=5 * GiB, torch_reserved=4 * GiB, torch_allocated=4 * GiB)
    assert bar["other"] == 0
    unknown = routes.device_bar(total=8 * GiB, driver_free=None, torch_reserved=0, torch_allocated=0)
    assert unknown["free"] is None and unknown["other"] is None


def test_dynamic_weights_are_not_counted_as_other_processes():
    bar = routes.device_bar(total=24 * GiB, driver_free=4 * GiB, torch_reserved=6 * GiB, torch_allocated=5 * GiB,
                            dynamic_weights=10 * GiB)
    assert bar["dynamic_weights"] == 10 * GiB and bar["other"] == 4 * GiB


def test_fragmentation_flag_from_two_gib():
    assert routes.fragmentation_flag(2 * GiB - 1) is None
    flag = routes.fragmentation_flag(3 * GiB)
    assert flag["bytes"] == 3 * GiB
    assert "expandable_segments:True" in flag["fix"] and "3.00 GiB" in flag["fix"]


def test_would_free_counts_compute_device_models_and_cache():
    models = [
        {"device": "cuda:0", "unload_frees": 10 * GiB, "size": 12 * GiB},
        {"device": "cuda:0", "unload_frees": 1 * GiB, "size": 1 * GiB},
        {"device": "cpu", "unload_frees": 0, "size": 9 * GiB},  # text encoder kept on the CPU
    ]
    wf = routes.would_free(models, "cuda:0", torch_cache=512 * MiB)
    assert wf["unload_all"] == {"vram": 11 * GiB + 512 * MiB, "models": 2}
    assert wf["free_cache"]["ram_up_to"] == 22 * GiB


@pytest.mark.parametrize("value", [True, None, 1.5, -1, [], {}, "../../etc/passwd", "/etc/passwd", "flux1-dev.safetensors",
                                   "C:\\models\\x", "zz", "0x1f", "a" * 40])
def test_model_ref_rejects_names_paths_and_wrong_types(value):
    with pytest.raises(ValueError):
        routes.parse_model_ref(value)


def test_model_ref_accepts_index_and_id():
    assert routes.parse_model_ref(0) == 0
    assert routes.parse_model_ref(7) == 7
    assert routes.parse_model_ref("7F3A2b10") == "7f3a2b10"


def test_scrub_paths_makes_server_paths_relative():
    roots = ["/srv/comfy/models/vae", "/srv/comfy/models", "/srv/comfy", "/root"]
    data = {"models": {"vae/a.safetensors": {"path": "/srv/comfy/models/vae/a.safetensors"}},
            "notes": ["/srv/comfy/models/vae/b.safetensors: cannot read file", "in /root/secret"], "n": 3}
    out = routes.scrub_paths(data, roots)
    assert out["models"]["vae/a.safetensors"]["path"] == "a.safetensors"
    assert out["notes"] == ["b.safetensors: cannot read file", "in secret"] and out["n"] == 3


def test_oom_record_filters_non_oom_errors():
    assert routes.oom_record({"exception_message": "mat1 and mat2 shapes", "exception_type": "RuntimeError"}) is None
    rec = routes.oom_record({"exception_message": FACTS_OOM, "exception_type": "torch.OutOfMemoryError",
                             "node_id": "5", "node_type": "VAEDecode", "timestamp": 1})
    assert rec["diagnosis"]["requested_bytes"] == 2 * GiB
    assert rec["diagnosis"]["remedies"][0]["key"] == "close_other_process"


# ----------------------------------------------------------------------------------------------
# A real ComfyUI
MYSTERY_PACK = "ComfyUI-Mystery-Sampler"
MYSTERY_SOURCE = """
class MysteryXSampler:
    \"\"\"A sampler of a node pack no table of the estimator knows (written for the test; never run).\"\"\"
    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"model": ("MODEL",), "positive": ("CONDITIONING",), "negative": ("CONDITIONING",),
                             "latent_image": ("LATENT",), "seed": ("INT", {"default": 0}),
                             "steps": ("INT", {"default": 20}), "cfg": ("FLOAT", {"default": 7.0})}}
    RETURN_TYPES = ("LATENT",)
    FUNCTION = "sample"
    CATEGORY = "testing"

    def sample(self, **kw):
        raise RuntimeError("not meant to run")

class MysteryLoraLoader:
    \"\"\"A pack's LoRA loader (MODEL in, MODEL out, a 'lora_name' from models/loras): written for the test.\"\"\"
    @classmethod
    def INPUT_TYPES(cls):
        import folder_paths
        return {"required": {"model": ("MODEL",), "lora_name": (folder_paths.get_filename_list("loras"),),
                             "strength_model": ("FLOAT", {"default": 1.0})}}
    RETURN_TYPES = ("MODEL",)
    FUNCTION = "load"
    CATEGORY = "testing"

    def load(self, **kw):
        raise RuntimeError("not meant to run")

NODE_CLASS_MAPPINGS = dict(MysteryXSampler=MysteryXSampler, MysteryLoraLoader=MysteryLoraLoader)
"""


def _setup(base: Path) -> None:
    HARNESS.install_oom_probe(base)
    (base / "custom_nodes" / MYSTERY_PACK).mkdir(parents=True)
    (base / "custom_nodes" / MYSTERY_PACK / "__init__.py").write_text(MYSTERY_SOURCE)
    write_vae(base / "models" / "vae" / VAE_NAME, "kl4", "F16", scale=1)  # full SD VAE, 83.7M params


@pytest.fixture(scope="module")
def server(comfy_server_factory):
    return comfy_server_factory(setup=_setup)


def decode_prompt(size: int = 64) -> dict:
    """VAELoader -> EmptyLatentImage -> VAEDecode -> PreviewImage; `size` varies to defeat the cache."""
    return {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": VAE_NAME}},
        "2": {"class_type": "EmptyLatentImage", "inputs": {"width": size, "height": size, "batch_size": 1}},
        "3": {"class_type": "VAEDecode", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
        "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}},
    }


_sizes = iter(range(64, 4096, 8))


def load_vae(server) -> dict:
    status, data = server.request("POST", "/prompt", {"prompt": decode_prompt(next(_sizes))})
    assert status == 200, data
    HARNESS.wait_idle(server)
    status, st = server.request("GET", "/vram_budget/status")
    assert status == 200
    assert st["models"], f"no model loaded after a VAE decode:\n{server.log()[-3000:]}"
    return st


def test_status_shape_on_cpu(server):
    status, st = server.request("GET", "/vram_budget/status")
    assert status == 200
    assert st["cuda"] is False and st["devices"] == []
    assert st["message"] == "no CUDA device: ComfyUI runs on the CPU"
    assert st["memory_mode"] == "cpu" and st["compute_device"]["type"] == "cpu"
    ram = st["ram"]
    assert abs(ram["total"] - psutil.virtual_memory().total) <= 0.03 * psutil.virtual_memory().total
    assert 0 < ram["available"] <= ram["total"] and 0 < ram["process_rss"] < ram["total"]
    assert st["busy"] is False and st["queue_remaining"] == 0
    assert set(st["would_free"]) == {"unload_all", "free_cache"}


def test_api_mirror(server):
    status, st = server.request("GET", "/api/vram_budget/status")
    assert status == 200 and st["cuda"] is False and "models" in st


def test_loaded_model_appears_after_a_real_prompt(server):
    st = load_vae(server)
    vae = [m for m in st["models"] if m["type"] == "vae"]
    assert len(vae) == 1, st["models"]
    m = vae[0]
    assert m["name"] == "AutoencoderKL" and m["device"] == "cpu"
    params = spec_params(spec_vae_kl(4, "F16", 1))
    assert m["size"] in (params * 4, params * 2), (m["size"], params)  # fp32 on the CPU (or 16 bit)
    assert m["loaded"] == m["size"] and m["fully_loaded"] is True
    assert m["unload_frees"] == 0  # on the CPU an unload frees no VRAM: the weights stay in RAM
    assert st["would_free"]["unload_all"]["models"] == len(st["models"])
    assert st["would_free"]["free_cache"]["ram_up_to"] >= m["size"]
    assert isinstance(m["id"], str) and routes.MODEL_KEY_RE.fullmatch(m["id"])


def unload_when_parked(server, path: str, body: dict, timeout: float = 20):
    """POST an unload once the prompt worker is back in its queue wait: right after a prompt the queue is empty but
    the worker may still be finishing (cleanup, history), and the route then answers 409 "busy, try after the
    prompt" as it should (routes._worker_parked); a client tries again, as this does."""
    deadline = time.time() + timeout
    while True:
        status, data = server.request("POST", path, body)
        if status != 409 or time.time() > deadline:
            return status, data
        time.sleep(0.1)


def test_unload_one_by_id_and_by_index(server):
    st = load_vae(server)
    target = st["models"][0]
    status, data = unload_when_parked(server, "/vram_budget/unload", {"model": target["id"]})
    assert status == 200, data
    assert data["unloaded"]["id"] == target["id"]
    assert all(m["id"] != target["id"] for m in data["models"])
    _, st = server.request("GET", "/vram_budget/status")
    assert all(m["id"] != target["id"] for m in st["models"])
    # the same id again: gone
    status, data = unload_when_parked(server, "/vram_budget/unload", {"model": target["id"]})
    assert status == 404 and "error" in data

    st = load_vae(server)
    count = len(st["models"])
    status, data = unload_when_parked(server, "/api/vram_budget/unload", {"model": 0})
    assert status == 200, data
    assert len(data["models"]) == count - 1


def test_unload_all_empties_the_list(server):
    load_vae(server)
    status, data = server.request("POST", "/vram_budget/unload_all", {})
    assert status == 200, data
    assert data["measured"] is True and data["models"] == []
    assert data["freed"]["models_before"] >= 1 and data["freed"]["models_after"] == 0
    _, st = server.request("GET", "/vram_budget/status")
    assert st["models"] == []


def test_free_cache_drops_models_and_their_ram(server):
    st = load_vae(server)
    size = sum(m["size"] for m in st["models"])
    status, data = server.request("POST", "/vram_budget/free_cache")  # no body is fine too
    assert status == 200, data
    assert data["models"] == []
    # The VAE (weights held by the node cache and the loaded-model list) is released: ComfyUI's
    # resident memory drops by a good part of its size.
    assert data["freed"]["ram"] is not None and data["freed"]["ram"] >= 0.5 * size, (data["freed"], size)


def test_unload_during_a_prompt_is_refused_and_unload_all_is_scheduled(server):
    load_vae(server)
    sleeper = {"1": {"class_type": "VramBudgetSleepProbe", "inputs": {"seconds": 4.0}}}
    status, data = server.request("POST", "/prompt", {"prompt": sleeper})
    assert status == 200, data
    deadline = time.time() + 30
    while time.time() < deadline:
        _, st = server.request("GET", "/vram_budget/status")
        if st["busy"]:
            break
        time.sleep(0.05)
    assert st["busy"] is True
    status, data = server.request("POST", "/vram_budget/unload", {"model": 0})
    assert status == 409 and data["error"] == "busy, try after the prompt"
    status, data = server.request("POST", "/vram_budget/unload_all", {})
    assert status == 202 and data["scheduled"] is True and data["measured"] is False
    HARNESS.wait_idle(server)
    deadline = time.time() + 20
    while time.time() < deadline:  # ComfyUI acts on the flag right after the prompt
        _, st = server.request("GET", "/vram_budget/status")
        if not st["models"]:
            break
        time.sleep(0.1)
    assert st["models"] == []


def test_last_oom_from_a_real_execution_error(server):
    status, data = server.request("GET", "/vram_budget/last_oom")
    assert status == 200
    prompt = {"1": {"class_type": "VramBudgetOomProbe", "inputs": {"message": FACTS_OOM}}}
    status, data = server.request("POST", "/prompt", {"prompt": prompt})  # no client_id: no websocket event
    assert status == 200, data
    prompt_id = data["prompt_id"]
    HARNESS.wait_idle(server)
    status, data = server.request("GET", "/vram_budget/last_oom")
    assert status == 200
    rec = data["last_oom"]
    assert rec is not None and rec["prompt_id"] == prompt_id
    assert rec["node_type"] == "VramBudgetOomProbe" and rec["exception_type"].endswith("OutOfMemoryError")
    d = rec["diagnosis"]
    assert d["comfy_tips"] is True  # ComfyUI's own OOM text was appended and recognised
    assert d["requested_bytes"] == 2 * GiB and d["cause"] == "other_process"
    assert d["other_processes"] == [{"pid": 4242, "used_bytes": round(6.5 * GiB)}]
    assert d["summary"].startswith("The failed request was 2.00 GiB; the card has 23.65 GiB in total and only 1.12 GiB was free.")

    # A later error that is no OOM does not replace it.
    other = {"1": {"class_type": "VramBudgetOomProbe", "inputs": {"message": "mat1 and mat2 shapes", "oom": False}}}
    status, data = server.request("POST", "/prompt", {"prompt": other})
    assert status == 200, data
    HARNESS.wait_idle(server)
    status, history = server.request("GET", f"/history/{data['prompt_id']}")
    assert history[data["prompt_id"]]["status"]["status_str"] == "error"
    status, data = server.request("GET", "/vram_budget/last_oom")
    assert data["last_oom"]["prompt_id"] == prompt_id


def test_parse_oom_route(server):
    status, d = server.request("POST", "/vram_budget/parse_oom",
                               {"message": "Allocation on device ", "exception_type": "torch.OutOfMemoryError"})
    assert status == 200 and d["is_oom"] and d["cause"] == "unknown_detail" and d["form"] == "cuda_malloc_async"
    status, d = server.request("POST", "/vram_budget/parse_oom", {"message": FACTS_OOM, "node_type": "VAEDecode"})
    assert status == 200 and d["remedies"][0]["key"] == "close_other_process"


def test_estimate_route(server):
    import psutil

    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": decode_prompt(64)})
    assert status == 200, data  # a broken estimator fails here (no "not available" answer passes)
    assert data["available"] is True and "verdict" in data["budget"] and "stages" in data["budget"]
    text = json.dumps(data)
    assert str(server.base) not in text and str(Path.home()) + "/" not in text  # no server paths over HTTP
    assert data["budget"]["models"]["vae/" + VAE_NAME]["path"] == VAE_NAME
    # the panel's estimate holds this machine's RAM (comfy_bridge.live_host)
    assert data["budget"]["ram_total_bytes"] == pytest.approx(psutil.virtual_memory().total, rel=0.02)
    assert data["budget"]["host_outcome"] in ("fits", "swapping", "thrashing", "oom")
    assert data["budget"]["host"]["host"]["rules"] in ("0.8", "0.18", "0.33")
    # --cpu: no card named, so the estimate is for this machine's memory, as the VRAM Budget node's is
    device = data["budget"]["device"]
    assert device["name"] == "cpu (no CUDA device: RAM)" and device["source"] == "live", device
    assert device["total_bytes"] == pytest.approx(psutil.virtual_memory().total, rel=0.02)
    assert data["device_note"].startswith("No CUDA device: ComfyUI runs on the cpu"), data["device_note"]
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": decode_prompt(64), "card": "RTX 4090"})
    assert status == 200 and data["budget"]["device"]["name"] == "RTX 4090" and data["device_note"] is None
    status, data = server.request("GET", "/vram_budget/cards")
    assert status == 200 and isinstance(data["cards"], list) and data["default"] == "System memory"


def test_fits_route_answers_an_agent_in_its_schema(server):
    """Issue 35, an API for agents: POST /vram_budget/fits takes the estimate's request and answers in
    routes.FITS_FIELDS (docs/agent-api.md), with what is free on this machine now."""
    from vram_budget.nodes.routes import FITS_FIELDS

    status, data = server.request("POST", "/vram_budget/fits", {"prompt": decode_prompt(64), "card": "RTX 4090"})
    assert status == 200, data
    assert set(FITS_FIELDS) <= set(data), set(FITS_FIELDS) - set(data)
    assert data["card"] == "RTX 4090" and isinstance(data["fits"], bool) and data["complete"] in (True, False)
    assert data["fits"] == (data["complete"] and data["vram_verdict"] in ("fits", "tight", "runs_slower")
                            and data["host_outcome"] != "oom")
    assert isinstance(data["free_now"]["ram_available_bytes"], int) and data["free_now"]["ram_available_bytes"] > 0
    assert data["risk"]["level"] in ("low", "elevated", "high", "unknown")
    full = server.request("POST", "/vram_budget/estimate", {"prompt": decode_prompt(64), "card": "RTX 4090"})[1]
    assert data["verdict"] == full["budget"]["verdict"] and data["peak_bytes"] == full["budget"]["peak_bytes"]


def test_estimate_route_plans_placement_over_the_cards_named(server):
    """"gpus": more cards (cuda:1 on) -> each device's peak and the placement plan (issue 24), as the command
    line's --gpus gives them; an unknown card name is a clear 422."""
    wan = json.loads((Path(__file__).resolve().parents[2] / "example_workflows" / "wan22_14b_i2v_720p.json").read_text())
    status, data = server.request("POST", "/vram_budget/estimate", {"workflow": wan, "card": "RTX 4090",
                                                                     "gpus": ["RTX 3090"]}, timeout=60)
    assert status == 200, data
    plan = data["budget"]["placement_plan"]
    assert [d["device"] for d in data["budget"]["placement"]][:2] == ["cuda:0", "cuda:1"]
    # ComfyUI's own placement nodes where this ComfyUI registers them (0.33), else ComfyUI-MultiGPU (archived)
    st, info = server.request("GET", "/object_info/SelectModelDevice")
    core = st == 200 and bool(info)
    assert plan["engine"] == ("ComfyUI" if core else "ComfyUI-MultiGPU")
    if core:  # a model moves whole (no DisTorch2 split): a 26.6 GiB expert streams on a 24 GB card
        assert not plan["splits"] and all(s["insert"] for s in plan["loaders"] if s["changed"])
    else:
        assert all(d["outcome"] in ("fits", "tight") for d in plan["devices"] if d["device"].startswith("cuda"))
        assert any("archived" in n for n in plan["notes"])
    # this machine's RAM is known inside ComfyUI: the plan says whether the DisTorch2 CPU shares fit in it
    assert plan["host_outcome"] in ("fits", "swapping", "oom") and plan["ram_floor_bytes"] > 0
    assert {s["device"] for s in plan["loaders"] if "14B" in s["models"][0]} == {"cuda:0", "cuda:1"}
    status, data = server.request("POST", "/vram_budget/estimate", {"workflow": wan, "card": "RTX 4090",
                                                                     "gpus": ["RTX 9999"]}, timeout=60)
    assert status == 422 and "RTX 9999" in data["error"]
    status, data = server.request("POST", "/vram_budget/estimate", {"workflow": wan, "card": "RTX 4090"}, timeout=60)
    assert status == 200 and "placement_plan" not in data["budget"]  # one card: nothing to place


def test_estimate_route_reads_the_workflow_when_the_prompt_lacks_a_node_type(server):
    """A node whose pack is not loaded reaches graphToPrompt's API prompt without its class_type (seen with
    ComfyUI-MultiGPU on ComfyUI 0.8.0); the UI workflow sent beside it still names it: the estimate reads that
    and says so, instead of a 400 that leaves the panel without a budget."""
    wan = json.loads((Path(__file__).resolve().parents[2] / "example_workflows" / "wan22_14b_i2v_720p.json").read_text())
    broken = {"1": {"inputs": {"unet_name": "x.safetensors"}}}
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": broken, "workflow": wan,
                                                                     "card": "RTX 4090"}, timeout=60)
    assert status == 200, data
    assert "no class_type" in data["source_note"] and data["budget"]["stages"]
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": broken, "card": "RTX 4090"})
    assert status == 400 and "class_type" in data["error"]


BAD_REQUESTS = [
    ("POST", "/vram_budget/unload", b"{not json", 400),
    ("POST", "/vram_budget/unload", b"", 400),
    ("POST", "/vram_budget/unload", [1, 2], 400),
    ("POST", "/vram_budget/unload", {}, 400),
    ("POST", "/vram_budget/unload", {"model": True}, 400),
    ("POST", "/vram_budget/unload", {"model": 1.5}, 400),
    ("POST", "/vram_budget/unload", {"model": -1}, 400),
    ("POST", "/vram_budget/unload", {"model": "../../etc/passwd"}, 400),
    ("POST", "/vram_budget/unload", {"model": "flux1-dev.safetensors"}, 400),
    ("POST", "/vram_budget/unload", {"model": ["0"]}, 400),
    ("POST", "/vram_budget/unload", {"model": 99}, 404),
    ("POST", "/vram_budget/unload", {"model": "deadbeef"}, 404),
    ("POST", "/vram_budget/unload_all", b"[]", 400),
    ("POST", "/vram_budget/free_cache", b"\"x\"", 400),
    ("POST", "/vram_budget/parse_oom", {"message": 5}, 400),
    ("POST", "/vram_budget/parse_oom", {"message": "x", "exception_type": 3}, 400),
    ("POST", "/vram_budget/estimate", {}, 400),
    ("POST", "/vram_budget/estimate", {"prompt": "../../etc/passwd"}, 400),
    ("POST", "/vram_budget/estimate", {"prompt": {"1": {"inputs": {}}}}, 400),
    ("POST", "/vram_budget/estimate", {"prompt": {"1": {"class_type": "VAELoader", "inputs": []}}}, 400),
    ("POST", "/vram_budget/estimate", {"workflow": {"nodes": "x"}}, 400),
    ("POST", "/vram_budget/estimate", {"prompt": {}, "card": 24}, 400),
    ("POST", "/vram_budget/estimate", {"prompt": {}, "gpus": "RTX 3090"}, 400),
    ("POST", "/vram_budget/estimate", {"prompt": {}, "gpus": ["RTX 3090"] * 8}, 400),
    ("POST", "/vram_budget/estimate", {"prompt": {}, "gpus": [3090]}, 400),
    ("POST", "/vram_budget/fits", {}, 400),
    ("POST", "/vram_budget/fits", {"prompt": "../../etc/passwd"}, 400),
    ("POST", "/vram_budget/fits", {"workflow": {"nodes": "x"}}, 400),
    ("POST", "/vram_budget/fits", b"[1, 2", 400),
    ("GET", "/vram_budget/fits", None, 405),
    ("GET", "/vram_budget/unload", None, 405),
    ("POST", "/vram_budget/status", {}, 405),
    ("GET", "/api/vram_budget/unload_all", None, 405),
    ("GET", "/vram_budget/../../etc/passwd", None, 404),
    ("GET", "/vram_budget/nothing_here", None, 404),
]


@pytest.mark.parametrize("method,route,body,expected", BAD_REQUESTS)
def test_bad_requests_get_json_4xx(server, method, route, body, expected):
    status, data = server.request(method, route, body)
    if route.startswith("/vram_budget/../"):  # the client normalises the path: not our route at all
        assert status == 404
        return
    assert status == expected, (status, data)
    assert isinstance(data, dict) and isinstance(data.get("error"), str) and data["error"]
    assert "Traceback" not in json.dumps(data)


def test_oversized_body_is_refused(server):
    blob = b'{"message": "' + b"x" * (routes.MAX_BODY_BYTES + 16) + b'"}'
    status, data = server.request("POST", "/vram_budget/parse_oom", blob)
    assert status == 413 and "error" in data


def test_routes_registered_once(server):
    log = server.log()
    assert "already registered" not in log and "failed to load routes" not in log
    # The status route answers under both prefixes and nothing else double-registered it.
    assert server.request("GET", "/vram_budget/status")[0] == 200


def test_status_is_served_while_an_unload_runs(server):
    """Unloads run in the executor: the event loop keeps answering status requests."""
    load_vae(server)
    results: list[int] = []

    def hammer():
        for _ in range(20):
            results.append(server.request("GET", "/vram_budget/status")[0])

    t = threading.Thread(target=hammer)
    t.start()
    status, _ = server.request("POST", "/vram_budget/unload_all", {})
    t.join(60)
    assert status == 200 and results and all(code == 200 for code in results)


# ----------------------------------------------------------------------------------------------
# Hostile and unusual requests (issue: hardening)
def _raw(server, method: str, route: str, body, headers: dict, chunked: bool = False):
    """(status, JSON or text) for a request with exactly these headers (no Content-Type added)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, route, body=body, headers=headers, encode_chunked=chunked)
        resp = conn.getresponse()
        raw = resp.read()
        ctype = resp.getheader("Content-Type", "")
        return resp.status, (json.loads(raw) if "json" in ctype else raw.decode(errors="replace"))
    finally:
        conn.close()


def test_a_body_in_several_chunks_is_read_whole(server):
    payload = json.dumps({"message": "CUDA out of memory. Tried to allocate 2.00 GiB. " + "x" * 300_000}).encode()
    parts = [payload[i:i + 4096] for i in range(0, len(payload), 4096)]
    status, data = _raw(server, "POST", "/vram_budget/parse_oom", iter(parts),
                        {"Content-Type": "application/json"}, chunked=True)
    assert status == 200, data
    assert data["is_oom"] and data["requested_bytes"] == 2 * GiB


def test_a_valid_one_mib_body_is_accepted(server):
    status, data = server.request("POST", "/vram_budget/parse_oom",
                                  {"message": "CUDA out of memory. " + "y" * (1024 * 1024)})
    assert status == 200 and data["is_oom"], data


@pytest.mark.parametrize("route", ["/vram_budget/parse_oom", "/vram_budget/unload_all", "/vram_budget/free_cache",
                                   "/vram_budget/unload", "/vram_budget/estimate"])
def test_posts_need_a_json_content_type(server, route):
    body = json.dumps({"message": "CUDA out of memory.", "model": 0, "prompt": {}}).encode()
    status, data = _raw(server, "POST", route, body, {"Content-Type": "text/plain"})
    assert status == 415 and "application/json" in data["error"], data
    # a sandboxed page (Origin: null) sending a "simple" request gets nowhere either
    status, _ = _raw(server, "POST", route, body, {"Content-Type": "text/plain", "Origin": "null"})
    assert status in (403, 415)


def test_a_long_digit_run_does_not_freeze_comfyui(server):
    message = "CUDA out of memory. Tried to allocate 2.00 GiB. " + "1" * 64_000
    done: list[float] = []

    def status_meanwhile():
        t0 = time.perf_counter()
        assert server.request("GET", "/vram_budget/status")[0] == 200
        done.append(time.perf_counter() - t0)

    t = threading.Thread(target=status_meanwhile)
    t0 = time.perf_counter()
    t.start()
    status, data = server.request("POST", "/vram_budget/parse_oom", {"message": message})
    elapsed = time.perf_counter() - t0
    t.join(30)
    assert status == 200 and data["requested_bytes"] == 2 * GiB
    assert elapsed < 5 and done and done[0] < 5  # minutes before: quadratic parsing on the event loop


def test_estimates_have_their_own_bounded_pool_and_a_time_limit(monkeypatch):
    """Pure asyncio (no server): estimates never take the default executor that /status uses,
    at most ESTIMATE_SLOTS wait, and a client waits at most ESTIMATE_TIMEOUT_S."""
    import asyncio

    async def main():
        release = threading.Event()

        def slow():
            release.wait(10)
            return "done"

        calls = [asyncio.ensure_future(routes._estimate_call(slow)) for _ in range(routes.ESTIMATE_SLOTS)]
        await asyncio.sleep(0.05)
        with pytest.raises(routes.EstimatorBusy):
            await routes._estimate_call(slow)
        t0 = time.perf_counter()
        assert await routes._in_executor(lambda: 1) == 1  # what /status uses is free
        assert time.perf_counter() - t0 < 1
        release.set()
        assert await asyncio.gather(*calls) == ["done"] * routes.ESTIMATE_SLOTS
        await asyncio.sleep(0.05)
        assert routes._estimates_in_flight == 0
        monkeypatch.setattr(routes, "ESTIMATE_TIMEOUT_S", 0.1)
        release.clear()
        with pytest.raises(asyncio.TimeoutError):
            await routes._estimate_call(slow)
        assert routes._estimates_in_flight == 1  # the slot stays taken until the work really ends
        release.set()
        await asyncio.sleep(0.2)
        assert routes._estimates_in_flight == 0

    asyncio.run(main())


def test_parse_oom_fits_its_help_to_the_workflow_that_failed(server):
    sdxl = {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["1", 1], "text": "a cat"}},
        "3": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
        "4": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["2", 0], "negative": ["2", 0],
                                                   "latent_image": ["3", 0], "steps": 20, "cfg": 7.0}},
        "5": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["1", 2]}},
        "6": {"class_type": "SaveImage", "inputs": {"images": ["5", 0]}},
    }
    status, bare = server.request("POST", "/vram_budget/parse_oom", {"message": FACTS_OOM})
    assert status == 200
    status, fitted = server.request("POST", "/vram_budget/parse_oom",
                                    {"message": FACTS_OOM, "prompt": sdxl, "install": "desktop"})
    assert status == 200, fitted
    text = json.dumps(fitted)
    assert "Flux" not in text and "smaller batch" not in text.lower()  # an SDXL job at batch 1
    assert "Settings" in text  # where the flag goes on ComfyUI Desktop
    assert json.dumps(bare) != text
    status, bad = server.request("POST", "/vram_budget/parse_oom", {"message": FACTS_OOM, "install": "mars"})
    assert status == 400


# ----------------------------------------------------------------------------------------------
# Issue 37: nothing stalled, answers no larger than needed, every list bounded
def test_a_huge_model_name_gets_a_bounded_answer_and_comfyui_answers_meanwhile(server):
    name = "x" * (8 * 1024 * 1024) + ".safetensors"
    prompt = {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": name, "weight_dtype": "default"}},
              "2": {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}},
              "3": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "latent_image": ["2", 0], "cfg": 1.0,
                                                         "steps": 1, "seed": 0, "sampler_name": "euler",
                                                         "scheduler": "simple", "denoise": 1.0}},
              "4": {"class_type": "SaveLatent", "inputs": {"samples": ["3", 0], "filename_prefix": "x"}}}
    waits: list[float] = []

    def stats_meanwhile():
        for _ in range(5):
            t0 = time.perf_counter()
            assert server.request("GET", "/system_stats")[0] == 200
            waits.append(time.perf_counter() - t0)
            time.sleep(0.2)

    t = threading.Thread(target=stats_meanwhile)
    t.start()
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": prompt}, timeout=60)
    t.join(60)
    assert status in (200, 422), data
    assert len(json.dumps(data)) < 512 * 1024  # 64 MB before: the name repeated in every field
    assert max(waits) < 2.0, waits


def test_a_placement_search_over_many_loaders_stops_in_time_and_frees_its_slot(server):
    prompt = {}
    for i in range(30):
        prompt[f"u{i}"] = {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev-fp8.safetensors",
                                                                  "weight_dtype": "default"}}
        prompt[f"l{i}"] = {"class_type": "EmptyLatentImage", "inputs": {"width": 512, "height": 512, "batch_size": 1}}
        prompt[f"k{i}"] = {"class_type": "KSampler", "inputs": {"model": [f"u{i}", 0], "latent_image": [f"l{i}", 0],
                                                                "cfg": 1.0, "steps": 1, "seed": 0, "denoise": 1.0,
                                                                "sampler_name": "euler", "scheduler": "simple"}}
        prompt[f"s{i}"] = {"class_type": "SaveLatent", "inputs": {"samples": [f"k{i}", 0], "filename_prefix": "x"}}
    t0 = time.perf_counter()
    status, data = server.request("POST", "/vram_budget/estimate",
                                  {"prompt": prompt, "card": "RTX 4090", "gpus": ["RTX 3090"] * 7}, timeout=90)
    elapsed = time.perf_counter() - t0
    assert status == 200, data
    notes = " ".join(data["budget"]["placement_plan"]["notes"])
    assert elapsed < routes.ESTIMATE_TIMEOUT_S and ("stopped after" in notes or elapsed < 10), (elapsed, notes[:300])
    status, _ = server.request("POST", "/vram_budget/estimate", {"prompt": decode_prompt(64)}, timeout=30)
    assert status == 200  # the slot is free again: no "busy"


def test_parse_oom_refuses_a_giant_context_prompt_and_reads_a_long_log(server):
    giant = {str(i): {"class_type": "Note", "inputs": {}} for i in range(routes.MAX_OOM_PROMPT_NODES + 1)}
    status, data = server.request("POST", "/vram_budget/parse_oom", {"message": FACTS_OOM, "prompt": giant})
    assert status == 400 and "at most" in data["error"]
    status, data = server.request("POST", "/vram_budget/parse_oom", {"message": "x" * 500_000 + "\n" + FACTS_OOM})
    assert status == 200 and data["requested_bytes"] == 2 * GiB  # the tail of a pasted log is read


def test_a_card_name_several_cards_share_is_a_clear_422(server):
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": decode_prompt(64), "card": "RTX 4060 Ti"})
    assert status == 422 and "RTX 4060 Ti 8GB" in data["error"] and "RTX 4060 Ti 16GB" in data["error"]
    status, data = server.request("GET", "/vram_budget/cards")
    assert {c["group"] for c in data["cards"]} >= {"GeForce RTX 40", "Laptop GPUs", "Data center", "AMD Radeon"}


def test_estimate_bodies_of_any_shape_get_an_answer_or_a_4xx(server):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
    node = st.fixed_dictionaries({"class_type": st.sampled_from(["KSampler", "UNETLoader", "VAEDecode", "X", ""]),
                                  "inputs": st.dictionaries(st.text(max_size=8), leaf | st.lists(leaf, max_size=2),
                                                            max_size=4)})
    body = st.fixed_dictionaries({"prompt": st.dictionaries(st.text(max_size=6), node, max_size=6)},
                                 optional={"card": leaf, "gpus": st.lists(leaf, max_size=9), "workflow": leaf})

    @settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(body)
    def check(b):
        t0 = time.perf_counter()
        status, data = server.request("POST", "/vram_budget/estimate", b, timeout=40)
        assert status in (200, 400, 413, 415, 422, 429), (status, data)
        assert time.perf_counter() - t0 < 35
        assert isinstance(data, dict) and (status == 200 or data.get("error"))

    check()


def test_mcp_server_checks_a_prompt_against_this_comfyui(server):
    """Issue 35: the official MCP client, through `vram-budget mcp`, asks this ComfyUI whether a prompt fits now
    (the same answer as POST /vram_budget/fits), reads what holds its memory, and frees it."""
    from mcp_client import session_run

    load_vae(server)

    async def steps(s):
        fits = await s.call_tool("check_prompt", {"comfyui_url": server.url, "prompt": decode_prompt(64),
                                                  "card": "RTX 4090"})
        held = await s.call_tool("comfyui_memory", {"comfyui_url": server.url})
        freed = await s.call_tool("free_memory", {"comfyui_url": server.url})
        return fits, held, freed

    _, (fits, held, freed) = session_run(steps)
    direct = server.request("POST", "/vram_budget/fits", {"prompt": decode_prompt(64), "card": "RTX 4090"})[1]
    assert fits.is_error is False and fits.structured_content["card"] == "RTX 4090"
    for key in ("fits", "verdict", "peak_bytes", "fixes", "complete"):
        assert fits.structured_content[key] == direct[key], key
    assert held.is_error is False and held.structured_content["models"], held.structured_content
    assert freed.is_error is False and freed.structured_content["requested"] is True
    deadline = time.time() + 30
    while server.request("GET", "/vram_budget/status")[1]["models"] and time.time() < deadline:
        time.sleep(0.5)
    assert server.request("GET", "/vram_budget/status")[1]["models"] == [], "ComfyUI's /free did not unload"



def test_an_unknown_packs_node_is_priced_live_from_its_socket_types(server):
    """Issue 33: a node written for the test, in no table of the estimator, is read from this ComfyUI's own node
    definition (its socket types) and priced as sampling with the family's rules; the estimate says so. The same
    prompt outside ComfyUI cannot be read there (tests/test_inferred_stages.py)."""
    from test_inferred_stages import PROMPT  # the same Flux prompt, its sampler the pack's, its decoder ComfyUI's

    prompt = {**PROMPT, "5": {**PROMPT["5"], "class_type": "MysteryXSampler"},
              "7": {**PROMPT["7"], "class_type": "VAEDecode"}}
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": prompt, "card": "RTX 4090"})
    assert status == 200, data
    b = data["budget"]
    kinds = {s["node_type"]: s["kind"] for s in b["stages"]}
    assert kinds.get("MysteryXSampler") == "sample", kinds
    assert b["unknown_nodes"] == [] and b["complete"] is True
    assert any(f"'MysteryXSampler' ({MYSTERY_PACK}) read as sampling with flux1-dev.safetensors" in n
               for n in b["notes"]), b["notes"]
    sample = next(s for s in b["stages"] if s["node_type"] == "MysteryXSampler")
    assert sample["working_bytes"] > 0 and sample["unpriced"] is None
    # the pack's LoRA loader between the model and the sampler: read from its definition as core's LoraLoader
    lora = {**prompt, "9": {"class_type": "MysteryLoraLoader", "inputs": {
        "model": ["1", 0], "lora_name": "flux_style_lora.safetensors", "strength_model": 0.8}},
        "5": {**prompt["5"], "inputs": {**prompt["5"]["inputs"], "model": ["9", 0]}}}
    status, data = server.request("POST", "/vram_budget/estimate", {"prompt": lora, "card": "RTX 4090"})
    assert status == 200, data
    b = data["budget"]
    assert b["unknown_nodes"] == [], b["unknown_nodes"]
    assert any("read as a LoRA loader of 'flux_style_lora.safetensors' (its 'lora_name')" in n for n in b["notes"]), \
        b["notes"]
