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
