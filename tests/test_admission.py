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

    def runs(others: int):
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
    assert len(calls) <= 2 + 8  # now, empty, then a bounded search


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
    decide = lambda prompt, m: admission.judge(lambda x: (True, x <= limit_for[prompt["id"]], ""),  # noqa: E731
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
