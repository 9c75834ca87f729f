"""Issue 35 offline: who else holds the card (cotenants.py) through a stand-in nvidia-smi and a stand-in process,
and the admission judgement and queue wrapper (admission.py) on a queue with PromptQueue's interface. On a real
ComfyUI: tests/comfy/test_admission.py."""
from __future__ import annotations

import heapq
import threading
import time

import psutil
import pytest

from cotenant_standin import fake_smi, start_holder, stop
from vram_budget.nodes import admission, cotenants
from vram_budget.nodes.estimator.units import GiB, MiB


# ---------------------------------------------------------------------------------------------- who holds the card
@pytest.mark.parametrize("name, cmdline, kind, words", [
    ("ollama", ["/usr/bin/ollama", "runner", "--model", "/x/blobs/sha256-1"], "ollama", "OLLAMA_KEEP_ALIVE=0"),
    ("ollama_llama_server", [], "ollama", "ollama stop"),
    ("python3", ["python3", "-m", "vllm.entrypoints.openai.api_server", "--gpu-memory-utilization", "0.85"], "vllm",
     "85%"),
    ("VLLM::EngineCore", [], "vllm", "90%"),
    ("python", ["python", "main.py", "--listen", "0.0.0.0"], "comfyui", "--vram-headroom"),
    ("python", ["python", "/srv/ComfyUI/main.py"], "comfyui", "Unload models"),
    ("llama-server", ["llama-server", "-m", "x.gguf", "-ngl", "99"], "llama.cpp", "--n-gpu-layers"),
    ("Xorg", [], "desktop", ""),
    ("pid 812", [], "other", "cannot see"),
    ("blender", ["blender"], "other", "close blender"),
])
def test_identify_names_the_program_and_its_fix(name, cmdline, kind, words):
    c = cotenants.identify(812, name, cmdline, 6 * GiB, me=1)
    assert c.kind == kind and words in c.advice and c.used == 6 * GiB and not c.is_self


def test_ollama_model_from_its_manifest(tmp_path):
    man = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "qwen3"
    man.mkdir(parents=True)
    (man / "32b").write_text('{"layers":[{"digest":"sha256:ab12"}]}')
    assert cotenants.ollama_model(["ollama", "runner", "--model", "/b/sha256-ab12"], str(tmp_path)) == "qwen3:32b"
    assert cotenants.ollama_model(["ollama", "runner", "--model", "/b/sha256-ff"], str(tmp_path)) == "sha256-ff"


def test_nvidia_smi_rows_parse_and_bad_rows_are_skipped():
    gpus = cotenants.parse_gpus("0, GPU-a, NVIDIA GeForce RTX 3060, 12288, 10300\nrubbish\n1, GPU-b, X, n/a, 1\n")
    assert gpus == [cotenants.SmiGpu(0, "GPU-a", "NVIDIA GeForce RTX 3060", 12288 * MiB, 10300 * MiB)]
    apps = cotenants.parse_apps("GPU-a, 812, ollama, 10000\nGPU-a, 9, C:\\a, b.exe, [N/A]\nGPU-a, x, y, 1\n")
    assert apps == [("GPU-a", 812, "ollama", 10000 * MiB), ("GPU-a", 9, "C:\\a, b.exe", 0)]


def test_hidden_memory_is_one_row_above_the_drivers_share():
    listed = [cotenants.identify(5, "ollama", [], 2 * GiB, me=1)]
    assert cotenants.hidden(2 * GiB + 300 * MiB, listed) is None
    row = cotenants.hidden(8 * GiB, listed)
    assert row.kind == "hidden" and row.used == 6 * GiB


def test_a_stand_in_process_is_listed_while_it_lives(tmp_path, monkeypatch):
    monkeypatch.setenv("VRAM_BUDGET_NVIDIA_SMI", str(fake_smi(tmp_path)))
    assert cotenants.smi_snapshot(0)["cotenants"] == []
    proc = start_holder(tmp_path, 9000)
    try:
        snap = cotenants.smi_snapshot(0)
        assert snap["name"] == "NVIDIA GeForce RTX 3060" and snap["total"] == 12288 * MiB
        (c,) = snap["cotenants"]
        assert psutil.Process(proc.pid).name() == "ollama"
        assert c["pid"] == proc.pid and c["kind"] == "ollama" and c["used"] == 9000 * MiB
        assert c["label"] == "Ollama (sha256-ab12)"
    finally:
        stop(proc)
    assert cotenants.smi_snapshot(0)["cotenants"] == []
    assert cotenants.smi_snapshot(3) is None


def test_no_nvidia_smi_is_no_answer(monkeypatch):
    monkeypatch.setenv("VRAM_BUDGET_NVIDIA_SMI", "/nonexistent/nvidia-smi")
    assert cotenants.smi_snapshot(0) is None


# ---------------------------------------------------------------------------------------------- the judgement
def _runs(limit: int, complete: bool = True):
    """A prompt that runs while other processes hold at most `limit` bytes."""
    calls = []

    def runs(others: int, ram: int = 0):
        calls.append(others)
        return complete, others <= limit, "" if complete else "model x.safetensors not found"
    return runs, calls


def test_judge_holds_only_what_waiting_can_fix():
    assert admission.judge(_runs(4 * GiB)[0], 2 * GiB).action == "run"  # fits now
    incomplete = admission.judge(_runs(4 * GiB, complete=False)[0], 9 * GiB)
    assert incomplete.action == "run" and not incomplete.complete and "x.safetensors" in incomplete.why
    never = admission.judge(_runs(-1)[0], 9 * GiB)
    assert never.action == "run" and "cannot help" in never.why
    runs, calls = _runs(3 * GiB)
    j = admission.judge(runs, 9 * GiB)
    assert j.action == "hold" and 3 * GiB - admission.SEARCH_STEP < j.max_others <= 3 * GiB
    assert len(calls) <= 3 + 8  # now, empty, the card alone, then a bounded search


class Queue:
    """PromptQueue's interface as the wrapper uses it (execution.py: mutex, queue heap, get, delete_queue_item)."""

    def __init__(self):
        self.mutex = threading.RLock()
        self.not_empty = threading.Condition(self.mutex)
        self.queue, self.running = [], []

    def put(self, item):
        with self.mutex:
            heapq.heappush(self.queue, item)
            self.not_empty.notify()

    def get(self, timeout=None):
        with self.not_empty:
            while len(self.queue) == 0:
                self.not_empty.wait(timeout=timeout)
                if timeout is not None and len(self.queue) == 0:
                    return None
            item = heapq.heappop(self.queue)
            self.running.append(item[1])
            return item, item[1]

    def delete_queue_item(self, fn):
        with self.mutex:
            for i, item in enumerate(self.queue):
                if fn(item):
                    self.queue.pop(i)
                    heapq.heapify(self.queue)
                    return True
        return False


def _admission(others: list[int], limit_for: dict):
    q = Queue()
    machine = lambda: admission.Machine("RTX 3060", others[0], [{"pid": 812, "label": "Ollama (qwen3)",  # noqa: E731
                                                                 "used": others[0], "is_self": False}])
    decide = lambda prompt, m: admission.judge(lambda x, r: (True, x <= limit_for[prompt["id"]], ""),  # noqa: E731
                                               m.others_bytes)
    pushed = []
    a = admission.Admission(q, decide, machine, send=pushed.append, enabled=True, poll_s=0.01)
    assert a.install() and not a.install()
    return q, a, pushed


def test_the_head_is_held_while_others_hold_memory_and_starts_when_it_frees():
    others = [9 * GiB]
    q, a, pushed = _admission(others, {"a": 2 * GiB, "b": 12 * GiB})
    q.put((1, "a", {"id": "a"}, {}, []))
    q.put((2, "b", {"id": "b"}, {}, []))
    assert q.get(timeout=1) is None and q.get(timeout=1) is None  # "b" would fit, but never jumps the queue
    st = a.state()
    assert st["held"]["prompt_id"] == "a" and "Ollama (qwen3) (pid 812)" in st["held"]["message"]
    assert st["held"]["message"].startswith("waiting for 7.0") and pushed[-1]["held"]["prompt_id"] == "a"
    others[0] = 1 * GiB
    assert q.get(timeout=1)[1] == "a" and q.get(timeout=1)[1] == "b"
    assert a.state()["held"] is None and [e["kind"] for e in a.state()["events"]][:2] == ["held", "started"]


def test_release_cancel_and_off():
    others = [9 * GiB]
    q, a, _ = _admission(others, {"a": 2 * GiB, "b": 2 * GiB, "c": 2 * GiB})
    for n, pid in enumerate("abc"):
        q.put((n, pid, {"id": pid}, {}, []))
    assert q.get(timeout=1) is None and not a.release("b")  # only the held prompt is released
    assert a.release("a") and q.get(timeout=1)[1] == "a"  # run anyway, once
    assert q.get(timeout=1) is None and a.state()["held"]["prompt_id"] == "b"
    assert a.cancel("b") and [i[1] for i in q.queue] == ["c"] and not a.cancel("b")
    a.set_enabled(False)
    assert q.get(timeout=1)[1] == "c" and q.running == ["a", "c"]


def test_a_failing_check_never_costs_the_prompt():
    q = Queue()
    a = admission.Admission(q, lambda p, m: 1 / 0, lambda: admission.Machine("X", GiB), enabled=True)
    a.install()
    q.put((1, "a", {}, {}, []))
    assert q.get(timeout=1)[1] == "a" and a.state()["events"][-1]["text"] == "not held: the admission check failed"
    b = admission.Admission(Queue(), None, lambda: None, enabled=True)
    b.install()
    b.queue.put((1, "x", {}, {}, []))
    assert b.queue.get(timeout=1)[1] == "x"


def test_off_by_default_and_the_launch_setting(monkeypatch):
    monkeypatch.delenv(admission.ENV, raising=False)
    assert admission.Admission(Queue(), None, lambda: None).enabled is False
    monkeypatch.setenv(admission.ENV, "1")
    assert admission.Admission(Queue(), None, lambda: None).enabled is True


def test_a_worker_blocked_on_an_empty_queue_judges_what_arrives():
    """The worker waits on an empty queue inside the wrapper, not in the original get, which would pop the next
    prompt unjudged."""
    others = [9 * GiB]
    q, a, _ = _admission(others, {"a": GiB})
    got = []
    t = threading.Thread(target=lambda: got.append(q.get(timeout=None)))
    t.start()
    time.sleep(0.05)
    q.put((1, "a", {"id": "a"}, {}, []))
    t.join(5)
    assert got == [None] and a.state()["held"]["prompt_id"] == "a" and q.running == []
    others[0] = 0
    assert q.get(timeout=None)[1] == "a"


# ---------------------------------------------------------------------------------------------- fixes, when allowed
FLUX = {
    "1": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors",
                                                      "clip_name2": "t5xxl_fp16.safetensors", "type": "flux"}},
    "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a fox", "clip": ["1", 0]}},
    "3": {"class_type": "VAEDecode", "inputs": {"samples": ["9", 0], "vae": ["8", 0]}},
    "4": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_bf16.safetensors", "type": "wan"}},
}


def test_prompt_fixes_only_change_memory_not_the_output():
    on_disk = {"clip_l.safetensors", "t5xxl_fp16.safetensors", "t5xxl_fp8_e4m3fn_scaled.safetensors",
               "t5xxl_fp8_e4m3fn.safetensors"}
    fixed, words = admission.prompt_fixes(FLUX, on_disk, auto_tiled=True)
    assert fixed["1"]["inputs"]["clip_name2"] == "t5xxl_fp8_e4m3fn_scaled.safetensors"  # the scaled one first
    assert fixed["1"]["inputs"]["clip_name1"] == "clip_l.safetensors"
    assert fixed["3"]["class_type"] == "VAEDecodeAutoTiled" and fixed["3"]["inputs"] == FLUX["3"]["inputs"]
    assert fixed["4"] == FLUX["4"]  # no fp8 umT5 on disk: left as it is
    assert words == ["text encoder t5xxl_fp16.safetensors → t5xxl_fp8_e4m3fn_scaled.safetensors (already on disk)",
                     "node 3: VAE Decode → VAE Decode (Auto Tiled)"]
    assert FLUX["1"]["inputs"]["clip_name2"] == "t5xxl_fp16.safetensors"  # the original is not touched
    assert admission.prompt_fixes(FLUX, set(), auto_tiled=False) == (FLUX, [])


def test_a_held_prompt_runs_fixed_in_its_place_when_fixes_are_allowed():
    q = Queue()
    machine = lambda: admission.Machine("RTX 3060", 9 * GiB, [])  # noqa: E731

    def decide(prompt, m):  # fits only with the fp8 text encoder
        fixed = prompt["1"]["inputs"]["clip_name2"] != "t5xxl_fp16.safetensors"
        return admission.judge(lambda x, r: (True, fixed or x <= GiB, ""), m.others_bytes)

    fixer = lambda p: admission.prompt_fixes(p, {"t5xxl_fp8_e4m3fn.safetensors"}, False)  # noqa: E731
    a = admission.Admission(q, decide, machine, enabled=True, poll_s=0.01, fixer=fixer, fixes=False)
    a.install()
    q.put((1, "a", FLUX, {"x": 1}, ["3"]))
    q.put((2, "b", FLUX, {}, []))
    assert q.get(timeout=1) is None  # fixes not allowed: held
    a.set_fixes(True)
    item, pid = q.get(timeout=1)
    assert pid == "a" and item[0] == 1 and item[3:] == ({"x": 1}, ["3"])
    assert item[2]["1"]["inputs"]["clip_name2"] == "t5xxl_fp8_e4m3fn.safetensors"
    assert a.state()["events"][-1]["kind"] == "fixed" and "t5xxl_fp8_e4m3fn" in a.state()["events"][-1]["text"]
    assert [i[1] for i in q.queue] == ["b"]  # the rest keeps its place


def test_ram_held_by_another_program_is_waited_for_too():
    """RAM alone blocks: held until the OS and other programs hold at most what leaves room; both block: both."""
    def runs(v, r):  # runs when the card's others hold <= 2 GiB and RAM's others <= 10 GiB
        return True, v <= 2 * GiB and r <= 10 * GiB, ""
    ram_only = admission.judge(runs, 1 * GiB, 20 * GiB, ram_floor=4 * GiB)
    assert ram_only.action == "hold" and ram_only.max_others == GiB
    assert 10 * GiB - admission.SEARCH_STEP < ram_only.max_ram_others <= 10 * GiB
    both = admission.judge(runs, 8 * GiB, 20 * GiB, ram_floor=4 * GiB)
    assert both.action == "hold" and both.max_others <= 2 * GiB and both.max_ram_others <= 10 * GiB
    hopeless = admission.judge(runs, 1 * GiB, 20 * GiB, ram_floor=12 * GiB)  # the named programs are not enough
    assert hopeless.action == "run" and "largest programs out of RAM" in hopeless.why
    m = admission.Machine("RTX 3060", 8 * GiB, [{"pid": 5, "label": "Ollama", "used": 8 * GiB}], 20 * GiB,
                          [{"pid": 77, "label": "chrome", "used": 9 * GiB}], 4 * GiB)
    text = admission.holding_message(m, both)
    assert "on the RTX 3060, held by Ollama (pid 5)" in text and "of system RAM, held by chrome (pid 77)" in text
    assert not admission.admits(m, both)
    assert admission.admits(admission.Machine("X", GiB, [], 9 * GiB), both)


def test_thresholds_met_are_confirmed_by_a_fresh_estimate():
    """The search is per dimension; when the thresholds are met, one fresh estimate decides (never runs on the
    thresholds alone)."""
    calls = []
    state = {"ram": 20 * GiB, "verdict_ok": False}
    q = Queue()
    machine = lambda: admission.Machine("X", 0, [], state["ram"], [], 4 * GiB)  # noqa: E731

    def decide(prompt, m):
        calls.append(m.ram_others_bytes)
        if m.ram_others_bytes <= 10 * GiB and state["verdict_ok"]:
            return admission.Judgement("run", "fits now")
        return admission.Judgement("hold", "", max_others=0, max_ram_others=10 * GiB)
    a = admission.Admission(q, decide, machine, enabled=True, poll_s=0.01)
    a.install()
    q.put((1, "a", {}, {}, []))
    assert q.get(timeout=1) is None and len(calls) == 1
    assert q.get(timeout=1) is None and len(calls) == 1  # cached while the thresholds are not met
    state["ram"] = 9 * GiB
    assert q.get(timeout=1) is None and len(calls) == 2  # met, but the fresh estimate says no
    state["verdict_ok"] = True
    assert q.get(timeout=1)[1] == "a" and len(calls) == 3
