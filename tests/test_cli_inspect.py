"""`vram-budget inspect PATH...`: one row per file, per-file errors, exit code, --json."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

import helpers_models as hm
from vram_budget.nodes.estimator.cli import app as cli
from vram_budget.nodes.estimator.files import clear_cache


@pytest.fixture()
def models_tree(tmp_path):
    """A small ComfyUI models/ tree with one broken file."""
    root = tmp_path / "models"
    flux = hm.write_flux(root / "diffusion_models" / "flux1-dev.safetensors", scale=32, double=2, single=2)
    t5 = hm.write_t5xxl(root / "text_encoders" / "t5xxl_fp8_e4m3fn.safetensors", dtype="F8_E4M3")
    vae = hm.write_vae(root / "vae" / "ae.safetensors", "kl16")
    lora = hm.write_lora(root / "loras" / "style.safetensors", "wan14b", "comfy", rank=32, blocks=2)
    gguf = hm.write_gguf_flux(root / "unet" / "flux1-dev-Q4_0.gguf", "Q4_0")
    bad = root / "checkpoints" / "broken.safetensors"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\xff" * 16)
    (root / "checkpoints" / "put_checkpoints_here").write_text("")
    clear_cache()
    return root, {"flux": flux, "t5": t5, "vae": vae, "lora": lora, "gguf": gguf, "bad": str(bad)}


def test_main_table_and_exit_code(models_tree):
    root, files = models_tree
    out, err = io.StringIO(), io.StringIO()
    args = cli.build_parser().parse_args(["inspect", str(root)])
    rc = cli.cmd_inspect(args, out=out, err=err)
    assert rc == 1  # one file failed, the others were still listed
    table = out.getvalue().splitlines()
    assert table[0].split()[:2] == ["file", "model"]
    rows = {line.split()[0]: line for line in table[2:]}
    assert set(rows) == {"flux1-dev.safetensors", "t5xxl_fp8_e4m3fn.safetensors", "ae.safetensors",
                         "style.safetensors", "flux1-dev-Q4_0.gguf"}
    assert "<flux1-dev>" in rows["flux1-dev.safetensors"] and "BF16 100%" in rows["flux1-dev.safetensors"]
    assert "<t5-xxl>" in rows["t5xxl_fp8_e4m3fn.safetensors"] and "fp8_e4m3fn" in rows["t5xxl_fp8_e4m3fn.safetensors"]
    assert "rank 32 -> wan2.1-14b" in rows["style.safetensors"]
    assert "gguf Q4_0" in rows["flux1-dev-Q4_0.gguf"]
    assert "GiB" in rows["ae.safetensors"]
    assert files["bad"] in err.getvalue() and err.getvalue().startswith("error: ")


def test_json_output_has_exact_bytes(models_tree):
    root, files = models_tree
    out, err = io.StringIO(), io.StringIO()
    rc = cli.cmd_inspect(cli.build_parser().parse_args(["inspect", "--json", files["flux"].path, files["gguf"].path,
                                                        files["bad"]]), out=out, err=err)
    assert rc == 1
    rows = json.loads(out.getvalue())
    assert [r.get("family") for r in rows] == ["flux1-dev", "flux1-dev", None]
    assert rows[0]["weights_bytes"] == files["flux"].nbytes
    assert rows[1]["weights_bytes"] == hm.gguf_expected_bytes(files["gguf"].spec)
    assert rows[1]["quantization"] == "gguf Q4_0" and rows[0]["dtype_mix"] == {"BF16": files["flux"].nbytes}
    assert rows[2]["path"] == files["bad"] and files["bad"] in rows[2]["error"]


def test_all_good_files_exit_zero(models_tree):
    _root, files = models_tree
    assert cli.main(["inspect", files["vae"].path, files["t5"].path]) == 0


def test_module_entry_point_runs_as_a_subprocess(models_tree):
    root, files = models_tree
    proc = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "inspect", "--json",
                           files["lora"].path, str(root / "nope")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    rows = json.loads(proc.stdout)
    assert rows[0]["kind"] == "lora" and rows[0]["arch"]["rank"] == 32
    assert "no such file or folder" in proc.stderr
    usage = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli"], capture_output=True, text=True,
                           timeout=120)
    assert usage.returncode == 2 and "inspect" in usage.stderr and "estimate" in usage.stderr


def test_parser_has_inspect_and_the_estimate_hook():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"inspect", "estimate"} <= set(sub.choices)
    assert os.path.basename(cli.__file__) == "app.py"
