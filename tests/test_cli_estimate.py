"""`vram-budget estimate` refuses bad input with one clear line, never a traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FLUX = "example_workflows/flux_dev_1024.json"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=60)


@pytest.mark.parametrize("args,needle", [
    ((FLUX, "--reserve-vram", "nan"), "--reserve-vram nan"),
    ((FLUX, "--other-processes=-inf"), "--other-processes -inf"),
    ((FLUX, "--other-processes", "1e400"), "--other-processes inf"),
    ((FLUX, "--vram", "0"), "--vram 0"),
    ((FLUX, "--vram", "nan"), "--vram nan"),
    ((FLUX, "--gpu", ""), "--gpu ''"),
    ((FLUX, "--gpu", "Voodoo 2"), "unknown GPU"),
])
def test_bad_flags_answer_one_line(args, needle):
    out = run(*args)
    assert out.returncode == 2, out.stdout
    assert needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_deeply_nested_json_is_an_error_not_a_traceback(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    out = run(str(deep))
    assert out.returncode == 1 and "not valid JSON" in out.stderr and "Traceback" not in out.stderr


def test_input_dir_gives_the_loaded_images_real_size(tmp_path):
    import json
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", 1216, 832, 8, 2, 0, 0, 0)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr
                                              + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr)))
    wf = tmp_path / "wf.json"
    wf.write_text(json.dumps({
        "1": {"class_type": "LoadImage", "inputs": {"image": "cat.png"}},
        "2": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "3": {"class_type": "VAEEncode", "inputs": {"pixels": ["1", 0], "vae": ["2", 0]}},
        "4": {"class_type": "SaveLatent", "inputs": {"samples": ["3", 0]}}}))
    assumed = run(str(wf), "--json")
    real = run(str(wf), "--json", "--input-dir", str(tmp_path / "in"))
    assert assumed.returncode == 0 and real.returncode == 0, (assumed.stderr, real.stderr)
    a, r = json.loads(assumed.stdout), json.loads(real.stdout)
    assert any("assumed 1024×1024" in n for n in a["notes"]) and not any("assumed 1024" in n for n in r["notes"])
    assert r["stages"][0]["working_bytes"] < a["stages"][0]["working_bytes"]  # 1216×832 (1.01 MP) read from the header < the assumed 1024² (1.05 MP)
    bad = run(str(wf), "--input-dir", str(tmp_path / "nope"))
    assert bad.returncode == 2 and "--input-dir" in bad.stderr
