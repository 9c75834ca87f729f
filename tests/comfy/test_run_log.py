"""Measured against predicted (nodes/run_log.py), the top-bar readout route, the loaded models' file
names (nodes/model_names.py), the nodes' ui outputs and "free memory after this run".

The record, the log file and the prompt start/end detection are tested first with injected numbers
and a fake queue (no ComfyUI, no torch); then in a real ComfyUI (``main.py --cpu``), where there is
no CUDA peak to read and every record must say so.
"""
from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest

from helpers_models import write_vae  # tests/conftest.py puts tests/ on sys.path

from vram_budget.nodes import model_names, run_log
from vram_budget.nodes.estimator.units import GiB, MiB

import comfy_harness as HARNESS  # noqa: E402,N812  (tests/comfy_harness.py)

pytestmark = pytest.mark.comfy
VAE_NAME = "sd_vae_zero.safetensors"


# ----------------------------------------------------------------------------------------------
# Without ComfyUI: injected numbers
class FakeProbe:
    def __init__(self, peaks):
        self.peaks = list(peaks)  # one Measurement (or None: CPU) per prompt end
        self.resets = 0

    def reset(self):
        self.resets += 1

    def read(self):
        return self.peaks.pop(0)

    def current_peak(self):
        return None


class FakeQueue:
    """currently_running / history as ComfyUI's PromptQueue keeps them."""

    def __init__(self):
        self.currently_running, self.history, self.counter = {}, {}, 0

    def get(self, prompt_id, prompt=None):
        self.currently_running[self.counter] = (0, prompt_id, prompt or {}, {}, [])
        self.counter += 1
        return self.counter - 1

    def done(self, item, status="success", messages=()):
        pid = self.currently_running.pop(item)[1]
        self.history[pid] = {"prompt": (0, pid, {}, {}, []),
                             "status": {"status_str": status, "completed": status == "success", "messages": list(messages)}}


def budget_dict(peak_gib: float, context=400 * MiB, verdict="fits", device="NVIDIA GeForce RTX 4090") -> dict:
    peak = int(peak_gib * GiB) + context
    return {"verdict": verdict, "predicted_peak_bytes": peak, "peak_bytes": peak, "peak_low_bytes": peak - GiB,
            "peak_high_bytes": peak + GiB, "device": {"name": device}}


def clock():
    t = iter(range(1000, 10**6, 10))
    return lambda: float(next(t))


def test_record_with_injected_numbers(tmp_path):
    probe = FakeProbe([run_log.Measurement(int(23.4 * GiB), int(21.0 * GiB), "cuda:0")])
    tracker = run_log.RunTracker(probe, run_log.RunLogFile(str(tmp_path / "runs.jsonl")), clock=clock())
    tracker.prompt_started("p1")
    prediction = run_log.prediction_from_budget(budget_dict(22.9), node_id="9", context_bytes=400 * MiB)
    assert prediction.peak_bytes == int(22.9 * GiB)  # the CUDA context is not PyTorch memory
    assert tracker.predict(prediction) == "p1"
    rec = tracker.prompt_ended("p1", {"status": {"status_str": "success", "messages": []}})
    assert rec["summary"] == "predicted 22.9, measured 23.4 GiB (+0.5)"
    assert rec["error_bytes"] == int(23.4 * GiB) - int(22.9 * GiB)
    assert rec["predicted"]["node_id"] == "9" and rec["predicted"]["verdict"] == "fits"
    assert rec["measured"]["allocated_peak_bytes"] == int(21.0 * GiB)
    assert rec["status"] == "success" and rec["seconds"] == 10.0 and rec["not_measured"] is None
    assert probe.resets == 1
    on_disk = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert on_disk == [rec]


def test_cpu_run_is_recorded_as_not_measured(tmp_path):
    tracker = run_log.RunTracker(FakeProbe([None]), run_log.RunLogFile(str(tmp_path / "runs.jsonl")), clock=clock())
    tracker.prompt_started("p1")
    tracker.predict(run_log.prediction_from_budget(budget_dict(5.0, context=0, device="cpu (no CUDA device: RAM)")))
    rec = tracker.prompt_ended("p1", None)
    assert rec["measured"] is None and rec["not_measured"] == run_log.NOT_MEASURED_CPU
    assert rec["summary"] == "predicted 5.0 GiB; not measured (CPU)"
    assert rec["error_bytes"] is None and rec["status"] == "unknown"


def test_prediction_for_another_card_is_flagged(tmp_path):
    probe = FakeProbe([run_log.Measurement(10 * GiB, 9 * GiB, "cuda:0")])
    tracker = run_log.RunTracker(probe, None, clock=clock())
    tracker.prompt_started("p1")
    tracker.predict(run_log.prediction_from_budget(budget_dict(30.0, device="H100 SXM"), live=False))
    rec = tracker.prompt_ended("p1", None)
    assert rec["notes"] == ["the prediction was for H100 SXM, not the GPU this ran on"]


def test_measurement_notes_are_added_to_measured_runs_only():
    notes = lambda: ["weights outside PyTorch"]  # noqa: E731
    measured = run_log.Measurement(GiB, GiB, "cuda:0")
    tracker = run_log.RunTracker(FakeProbe([measured, None]), None, clock=clock(), notes=notes)
    tracker.prompt_started("gpu")
    assert tracker.prompt_ended("gpu", None)["notes"] == ["weights outside PyTorch"]
    tracker.prompt_started("cpu")
    assert tracker.prompt_ended("cpu", None)["notes"] == []


def test_prediction_from_a_failed_estimate_is_none():
    assert run_log.prediction_from_budget({"error": "no prompt"}) is None
    assert run_log.prediction_from_budget({"verdict": "unknown", "predicted_peak_bytes": 0}) is None


def test_queue_observer_follows_start_and_end_with_a_fake_queue(tmp_path):
    probe = FakeProbe([None, None])
    tracker = run_log.RunTracker(probe, run_log.RunLogFile(str(tmp_path / "runs.jsonl")), clock=clock())
    queue = FakeQueue()
    observe = run_log.QueueObserver(lambda: queue, tracker)
    observe()  # a put() on an idle queue: nothing runs yet
    assert tracker.current is None and probe.resets == 0
    a = queue.get("A")
    observe()
    assert tracker.current == "A" and probe.resets == 1
    tracker.predict(run_log.prediction_from_budget(budget_dict(3.0, context=0)))
    observe()  # another put() while A runs: no new record
    assert tracker.runs_recorded == 0
    queue.done(a, "error", [["execution_interrupted", {"prompt_id": "A"}]])
    observe()
    b = queue.get("B")
    observe()
    queue.done(b)
    observe()
    runs = tracker.records(10)
    assert [r["prompt_id"] for r in runs] == ["B", "A"]
    assert runs[1]["status"] == "interrupted" and runs[1]["predicted"]["peak_bytes"] == 3 * GiB
    assert runs[0]["status"] == "success" and runs[0]["predicted"] is None
    assert "no prediction" in runs[0]["summary"]


def test_hook_never_breaks_the_queue():
    class Server:
        prompt_queue = None
        calls = 0

        def queue_updated(self):
            self.calls += 1

    server = Server()
    tracker = run_log.RunTracker(FakeProbe([]), None)
    assert run_log.install(server, tracker) is True
    assert run_log.install(server, tracker) is False  # once
    server.prompt_queue = object()  # no currently_running: the observer fails, the queue does not
    server.queue_updated()
    assert server.calls == 1


def test_log_file_stays_bounded_and_keeps_the_newest(tmp_path):
    logfile = run_log.RunLogFile(str(tmp_path / "sub" / "runs.jsonl"), max_bytes=4096)
    for i in range(200):
        logfile.append({"prompt_id": f"p{i}", "pad": "x" * 60})
    size = (tmp_path / "sub" / "runs.jsonl").stat().st_size
    assert size <= 4096
    newest = logfile.records(5)
    assert [r["prompt_id"] for r in newest] == ["p199", "p198", "p197", "p196", "p195"]
    assert len(logfile.read_bytes().splitlines()) < 200


def test_records_after_a_restart_come_from_the_file(tmp_path):
    path = str(tmp_path / "runs.jsonl")
    first = run_log.RunTracker(FakeProbe([None]), run_log.RunLogFile(path), clock=clock())
    first.prompt_started("old")
    first.prompt_ended("old", None)
    again = run_log.RunTracker(FakeProbe([]), run_log.RunLogFile(path))
    assert [r["prompt_id"] for r in again.records(5)] == ["old"]


def test_loader_files_and_attribution():
    prompt = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan/high.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan/low.safetensors", "weight_dtype": "default"}},
        "3": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors", "clip_name2": "t5.safetensors",
                                                           "type": "flux"}},
        "4": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "5": {"class_type": "VAELoader", "inputs": {"vae_name": ["9", 0]}},  # a computed name: ignored
    }
    files = model_names.loader_files(prompt)
    assert files == {"diffusion": ["high.safetensors", "low.safetensors"],
                     "text_encoder": ["clip_l.safetensors + t5.safetensors"], "vae": ["ae.safetensors"]}
    found = model_names.attribute([("a", "vae"), ("b", "diffusion"), ("c", "upscale")], files)
    assert found == {"a": "ae.safetensors", "b": "high.safetensors or low.safetensors"}


def test_model_names_only_for_models_loaded_during_the_run():
    loaded = [("old", "vae", None)]
    names = model_names.ModelNames(lambda: list(loaded))
    names.started("p")
    loaded.append(("new", "vae", None))
    loaded.append(("known", "diffusion", "flux1-dev.safetensors"))  # ComfyUI recorded it
    names.ended("p", {"prompt": (0, "p", {"1": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}}})})
    assert names.name_for("new") == "ae.safetensors"
    assert names.name_for("old") is None and names.name_for("known") is None
    loaded[:] = [("old", "vae", None)]
    names.started("q")
    names.ended("q", {})
    assert names.name_for("new") is None  # unloaded: forgotten


# ----------------------------------------------------------------------------------------------
# A real ComfyUI (CPU)
def _setup(base: Path) -> None:
    HARNESS.install_oom_probe(base)
    write_vae(base / "models" / "vae" / VAE_NAME, "kl4", "F16", scale=1)


@pytest.fixture(scope="module")
def server(comfy_server_factory):
    return comfy_server_factory(setup=_setup)


_sizes = iter(range(64, 4096, 8))


def tiled_prompt(budget_node: bool = True, free_after: bool = False) -> dict:
    size = next(_sizes)
    prompt = {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": VAE_NAME}},
        "2": {"class_type": "EmptyLatentImage", "inputs": {"width": size, "height": 64, "batch_size": 1}},
        "3": {"class_type": "VAEDecodeAutoTiled", "inputs": {"samples": ["2", 0], "vae": ["1", 0]}},
        "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}},
    }
    if budget_node:
        prompt["9"] = {"class_type": "VRAMBudget", "inputs": {"free_memory_after_run": free_after}}
    return prompt


def run(server, prompt: dict) -> tuple[str, dict]:
    status, data = server.request("POST", "/prompt", {"prompt": prompt})
    assert status == 200, data
    HARNESS.wait_idle(server)
    status, history = server.request("GET", f"/history/{data['prompt_id']}")
    assert status == 200 and data["prompt_id"] in history, history
    return data["prompt_id"], history[data["prompt_id"]]


def test_every_run_is_recorded_with_its_prediction(server):
    pid, entry = run(server, tiled_prompt())
    assert entry["status"]["status_str"] == "success", entry["status"]
    status, data = server.request("GET", "/vram_budget/runs?limit=5")
    assert status == 200 and data["measuring"] == "cpu"
    rec = data["runs"][0]
    assert rec["prompt_id"] == pid and rec["status"] == "success"
    assert rec["predicted"]["node_id"] == "9" and rec["predicted"]["peak_bytes"] > 0
    assert rec["measured"] is None and rec["not_measured"] == run_log.NOT_MEASURED_CPU
    assert rec["summary"] == f"predicted {rec['predicted']['peak_bytes'] / GiB:.1f} GiB; not measured (CPU)"
    # the log in ComfyUI's user directory, and its export
    lines = (server.base / "user" / "vram_budget" / "runs.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["prompt_id"] == pid
    with urllib.request.urlopen(server.url + "/api/vram_budget/runs/export", timeout=30) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("application/x-ndjson")
        assert "attachment" in r.headers["Content-Disposition"]
        exported = r.read().decode().splitlines()
    assert json.loads(exported[-1])["prompt_id"] == pid and len(exported) == len(lines)


def test_a_run_without_the_budget_node_and_a_failed_run(server):
    pid, _ = run(server, tiled_prompt(budget_node=False))
    bad, entry = run(server, {"1": {"class_type": "VramBudgetOomProbe", "inputs": {"message": "CUDA out of memory."}}})
    assert entry["status"]["status_str"] == "error"
    _, data = server.request("GET", "/vram_budget/runs?limit=2")
    assert [r["prompt_id"] for r in data["runs"]] == [bad, pid]
    assert data["runs"][0]["status"] == "error"
    assert data["runs"][1]["predicted"] is None and "no prediction" in data["runs"][1]["summary"]


def test_runs_limit_is_validated(server):
    for bad in ("0", "201", "x", "-3"):
        status, data = server.request("GET", f"/vram_budget/runs?limit={bad}")
        assert status == 400 and "limit" in data["error"]


def test_readout(server):
    pid, _ = run(server, tiled_prompt())
    status, data = server.request("GET", "/api/vram_budget/readout")
    assert status == 200
    assert data["kind"] == "cpu" and data["name"] == "RAM"
    assert 0 < data["used"] < data["total"]
    assert data["peak_used"] is None and data["running"] is None
    assert data["last_run"]["prompt_id"] == pid and data["runs_recorded"] >= 1


def test_auto_tiled_and_budget_node_ui_outputs(server):
    _, entry = run(server, tiled_prompt())
    text = entry["outputs"]["3"]["text"][0]
    assert text.startswith("decoded in one go") or text.startswith("decoded in "), text
    assert text.endswith(" s)")
    budget = entry["outputs"]["9"]
    assert budget["verdict_line"][0].startswith("Verdict: ")
    assert budget["verdict_line"][0] in budget["text"][0]


def test_auto_tiled_encode_ui_output(server):
    prompt = {
        "1": {"class_type": "VAELoader", "inputs": {"vae_name": VAE_NAME}},
        "2": {"class_type": "EmptyImage", "inputs": {"width": next(_sizes), "height": 64, "batch_size": 1, "color": 0}},
        "3": {"class_type": "VAEEncodeAutoTiled", "inputs": {"pixels": ["2", 0], "vae": ["1", 0]}},
        "4": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["1", 0]}},
        "5": {"class_type": "PreviewImage", "inputs": {"images": ["4", 0]}},
    }
    _, entry = run(server, prompt)
    assert entry["status"]["status_str"] == "success", entry["status"]
    text = entry["outputs"]["3"]["text"][0]
    assert text.startswith("encoded ") and text.endswith(" s)"), text


def test_loaded_vae_is_shown_by_its_file_name(server, comfy_install):
    run(server, tiled_prompt())
    _, st = server.request("GET", "/vram_budget/status")
    vae = [m for m in st["models"] if m["type"] == "vae"]
    # 0.8 / 0.18's VAELoader keeps no record of the file, so the name comes from the workflow that
    # loaded it; 0.33's records it on the patcher (nodes.py:862 `vae.patcher.cached_patcher_init =
    # (comfy.sd.load_vae_patcher, (vae_path, ...))`), which the bridge reads first
    version = tuple(int(v) for v in comfy_install[2].split(".")[:2])
    source = "comfyui" if version >= (0, 33) else "workflow"
    assert vae and vae[0]["file"] == VAE_NAME and vae[0]["file_source"] == source, st["models"]


def test_free_memory_after_run_unloads_when_the_run_ends(server):
    run(server, tiled_prompt())
    _, st = server.request("GET", "/vram_budget/status")
    assert st["models"], "the VAE should stay loaded without the option"
    run(server, tiled_prompt(free_after=True))
    HARNESS.wait_idle(server)
    # main.py's prompt_worker marks the prompt done (the queue reads idle) before it acts on the
    # unload_models flag (0.18.2 main.py:282 then :301-305): give the worker a moment to get there
    deadline = time.time() + 10
    while True:
        _, st = server.request("GET", "/vram_budget/status")
        if st["models"] == [] or time.time() > deadline:
            break
        time.sleep(0.2)
    assert st["models"] == [], st["models"]


def test_budget_inputs_are_labelled_in_gib(server):
    status, info = server.request("GET", "/object_info/VRAMBudget")
    assert status == 200
    optional = info["VRAMBudget"]["input"]["optional"]
    assert optional["vram_budget_gb"][1]["display_name"] == "vram_budget_gib"
    assert "GiB" in optional["vram_budget_gb"][1]["tooltip"]
    assert optional["free_memory_after_run"][1]["default"] is False
    assert optional["ram_budget_gb"][1]["display_name"] == "ram_budget_gib" and optional["ram_budget_gb"][1]["default"] == 0
    # new inputs go last: saved workflows keep their widget order
    assert list(optional)[-2:] == ["free_memory_after_run", "ram_budget_gb"]


def test_prompts_with_megabyte_widgets_never_cost_an_earlier_record(server):
    """Issue 37: two prompts that each hold an unconnected ~1 MB text ending in ".safetensors" wiped the log."""
    early = [run(server, tiled_prompt(budget_node=False))[0] for _ in range(3)]
    for _ in range(2):
        prompt = tiled_prompt(budget_node=False)
        prompt["1"]["inputs"]["notes"] = "x" * (1024 * 1024) + ".safetensors"  # ComfyUI ignores the extra input
        run(server, prompt)
    _, data = server.request("GET", "/vram_budget/runs?limit=10")
    ids = [r["prompt_id"] for r in data["runs"]]
    assert all(pid in ids for pid in early), ids
    path = server.base / "user" / "vram_budget" / "runs.jsonl"
    assert all(len(line) <= run_log.MAX_RECORD_BYTES for line in path.read_bytes().splitlines())
