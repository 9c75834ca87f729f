"""The live tracer's worker ends when idle (issue 31) and a trace that fails is not retried on every estimate
(issue 37), with a real subprocess standing in for ComfyUI's interpreter."""
from __future__ import annotations

import stat
import sys
import textwrap
import time

from vram_budget.nodes.comfy_trace import LiveTracer

FAKE_WORKER = textwrap.dedent("""\
    #!{python}
    import json, sys
    print(json.dumps({{"ok": True, "ready": True, "comfyui_version": "test"}}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        print(json.dumps({{"ok": True, "family": "test", "op": req["op"]}}), flush=True)
""")


def fake_python(tmp_path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text(body.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_the_worker_ends_after_its_idle_time_and_starts_again_when_asked(tmp_path):
    tracer = LiveTracer(str(tmp_path), python=fake_python(tmp_path, FAKE_WORKER), timeout_s=20)
    tracer.idle_close_s = 0.4
    assert tracer.detect([["a", "F16", [2, 2]]])["family"] == "test"
    proc = tracer._proc
    assert proc is not None and proc.poll() is None
    deadline = time.time() + 10
    while (tracer._proc is not None or proc.poll() is None) and time.time() < deadline:
        time.sleep(0.05)
    assert tracer._proc is None and proc.poll() is not None and tracer.stats["idle_closes"] == 1
    assert tracer.detect([["b", "F16", [3, 3]]])["family"] == "test"  # a new request starts it again
    tracer.close()


def test_a_worker_that_cannot_start_is_not_asked_again_on_every_estimate(tmp_path):
    broken = fake_python(tmp_path, "#!/bin/sh\necho 'no torch with CUDA here' >&2\nexit 1\n")
    tracer = LiveTracer(str(tmp_path), python=broken, timeout_s=5)
    for shape in ([1], [2]):
        assert tracer.detect([["x", "F16", shape]]) is None
    assert tracer.stats["failures"] == 2
    t0 = time.perf_counter()
    for n in range(20):  # twenty more estimates: none starts the worker again
        assert tracer.detect([["y", "F16", [n + 10]]]) is None
    assert time.perf_counter() - t0 < 1.0 and tracer.stats["skipped_failed"] == 20
    assert tracer.stats["failures"] == 2
