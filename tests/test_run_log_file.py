"""The run log never loses a record to a large or odd prompt (issue 37): bounded lines, append-only, rotation,
corrupt lines skipped and counted. The file and the tracker run here without ComfyUI (an injected probe);
tests/comfy/test_run_log.py drives the same through a real ComfyUI."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vram_budget.nodes import run_log


class Probe:
    def reset(self):
        pass

    def read(self):
        return None  # a CPU ComfyUI: nothing measured, the record is still written


def tracker(path, max_bytes=run_log.MAX_LOG_BYTES):
    return run_log.RunTracker(Probe(), run_log.RunLogFile(str(path), max_bytes), versions=lambda: {"comfyui": "0.33.0"})


def run(t, pid, prompt):
    t.prompt_started(pid, prompt)
    return t.prompt_ended(pid, {"status": {"status_str": "success", "completed": True}, "prompt": [0, pid, prompt]})


def hostile_prompt(n_mb: float) -> dict:
    big = "x" * int(n_mb * 2**20) + ".safetensors"
    return {"1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
            "2": {"class_type": "PrimitiveString", "inputs": {"value": big}},
            "3": {"class_type": "Note", "inputs": {"text": big, "other": big}}}


def test_two_prompts_with_megabyte_widgets_keep_every_earlier_record(tmp_path):
    path = tmp_path / "runs.jsonl"
    t = tracker(path)
    for n in range(5):
        run(t, f"early-{n}", {"1": {"class_type": "KSampler", "inputs": {"steps": 20}}})
    run(t, "big-1", hostile_prompt(1))
    run(t, "big-2", hostile_prompt(1))
    ids = [r["prompt_id"] for r in t.logfile.records(100)]
    assert ids == ["big-2", "big-1"] + [f"early-{n}" for n in range(4, -1, -1)]
    assert all(len(line) <= run_log.MAX_RECORD_BYTES for line in path.read_bytes().splitlines())
    assert path.stat().st_size < 64 * 1024


def test_the_file_rotates_instead_of_rewriting_and_keeps_the_newest(tmp_path):
    path = tmp_path / "runs.jsonl"
    f = run_log.RunLogFile(str(path), max_bytes=4096)
    for n in range(200):
        f.append({"prompt_id": f"p{n}", "notes": ["a" * 100]})
    rotated = tmp_path / "runs.1.jsonl"
    assert rotated.is_file() and path.stat().st_size <= 4096
    recent = [r["prompt_id"] for r in f.records(1000)]
    assert recent[0] == "p199" and recent == sorted(recent, key=lambda p: -int(p[1:]))
    assert len(recent) >= 4096 // 200  # at least one full file's worth survives


def test_a_corrupt_line_is_skipped_and_counted_never_the_file(tmp_path):
    path = tmp_path / "runs.jsonl"
    f = run_log.RunLogFile(str(path))
    f.append({"prompt_id": "a"})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"prompt_id": "half-writt\n[1, 2]\n')
    f.append({"prompt_id": "b"})
    assert [r["prompt_id"] for r in f.records(10)] == ["b", "a"] and f.skipped_lines == 2
    assert b'"a"' in path.read_bytes()  # still there


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                              st.text(max_size=3000)),
                    lambda inner: st.lists(inner, max_size=200) | st.dictionaries(st.text(max_size=50), inner,
                                                                                  max_size=200),
                    max_leaves=400))
def test_any_record_becomes_one_bounded_json_line(tmp_path, value):
    line = run_log.record_line({"prompt_id": "x", "payload": value})
    assert line.endswith("\n") and line.count("\n") == 1 and len(line.encode()) <= run_log.MAX_RECORD_BYTES + 1
    assert json.loads(line)["prompt_id"] == "x"


@pytest.mark.parametrize("prompt", [None, [], "text", {"²": {"class_type": "X", "inputs": {"a": ["1", 0]}}},
                                    {str(n): {"class_type": "N", "inputs": {}} for n in range(6000)}])
def test_odd_prompts_are_recorded(tmp_path, prompt):
    t = tracker(tmp_path / "runs.jsonl")
    rec = run(t, "odd", prompt)
    assert rec["prompt_id"] == "odd" and t.logfile.records(1)[0]["prompt_id"] == "odd"
