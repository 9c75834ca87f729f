"""One answer everywhere (issue 31): the command line, the panel's estimate route and the VRAM Budget node give
the same verdict for the same workflow, card, RAM and ComfyUI version, because they ask one function with the
same inputs. On the official Flux, Wan 2.2 and Qwen-Image templates, three cards, with and without RAM given.
A previewed card is that card under the memory mode ComfyUI would use there, whatever this machine runs on."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vram_budget.nodes.estimator.units import GiB

pytestmark = pytest.mark.comfy

TEMPLATES = ("flux_dev_full_text_to_image", "video_wan2_2_14B_i2v", "image_qwen_image")
CARDS = ("RTX 3060", "RTX 4090", "RTX 5090")
CARD_SIDE = ("vram_verdict", "outcome", "peak_bytes", "memory_mode", "offload_bytes", "peak_stage")


def _template(name: str) -> dict:
    from workflows.templates import load_templates  # noqa: PLC0415  (tests/ on sys.path)
    found = {t.name: t for t in load_templates()}
    if name not in found:
        pytest.skip(f"template {name} is not in the installed templates package")
    return found[name].workflow


@pytest.fixture(scope="module")
def workflows(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("templates")
    out = {}
    for name in TEMPLATES:
        wf = _template(name)
        path = folder / f"{name}.json"
        path.write_text(json.dumps(wf))
        out[name] = (wf, str(path))
    return out


def cli(path: str, *args) -> dict:
    out = subprocess.run([sys.executable, "-m", "vram_budget.nodes.estimator.cli", "estimate", path, "--json", *args],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def card_side(d: dict) -> dict:
    return {k: d.get(k) if k != "vram_verdict" else d.get("vram_verdict") or d.get("verdict") for k in CARD_SIDE}


def _same_card_side(inside: dict, line: dict, what) -> None:
    """Inside ComfyUI a model file on this machine has its working memory traced live with ComfyUI's own model
    code (memory.py LIVE_TRACER), which the command line cannot do: then the verdict, the memory mode and the
    peak stage are the same and the peak within 1 %; with no live figure, everything is equal."""
    if "traced live" not in json.dumps(inside):
        assert card_side(inside) == card_side(line), what
        return
    a, b = card_side(inside), card_side(line)
    assert {k: a[k] for k in ("vram_verdict", "outcome", "memory_mode", "peak_stage")} == \
           {k: b[k] for k in ("vram_verdict", "outcome", "memory_mode", "peak_stage")}, what
    assert abs(a["peak_bytes"] - b["peak_bytes"]) <= 0.01 * b["peak_bytes"], (what, a["peak_bytes"], b["peak_bytes"])


def test_the_route_and_the_command_line_agree_on_every_template_and_card(comfy_server, comfy_install, workflows):
    version = comfy_install[2]
    for name, (wf, path) in workflows.items():
        for card in CARDS:
            status, data = comfy_server.request("POST", "/vram_budget/estimate", {"workflow": wf, "card": card},
                                                timeout=120)
            assert status == 200, (name, card, data)
            route = data["budget"]
            # a previewed NVIDIA card under the memory mode this ComfyUI would use there, not this CPU's classic
            expected_mode = "classic" if version.startswith("0.8") else "dynamic"
            assert route["memory_mode"] == expected_mode, (name, card, route["memory_mode"])
            ram_gib = route["ram_total_bytes"] / GiB
            swap_gib = (route["swap_total_bytes"] or 0) / GiB
            # the server's model folders: files other tests put there are read by both (exact header sizes)
            line = cli(path, "--gpu", card, "--comfyui-version", version, "--ram", f"{ram_gib:.6f}",
                       "--swap", f"{swap_gib:.6f}", "--models-dir", str(comfy_server.base / "models"))
            _same_card_side(route, line, (name, card))
            assert route["assumptions"].startswith(f"{card} · ") and "(this machine)" in route["assumptions"]


def test_the_node_the_route_and_the_command_line_agree_with_ram_given(run_in_comfy, comfy_install, workflows):
    version = comfy_install[2]
    out = run_in_comfy(
        f"""
        import json
        node_mod = sys.modules[PACK.__name__ + ".nodes.budget_node"]
        wfs = json.loads({json.dumps(json.dumps({n: wf for n, (wf, _p) in workflows.items()}))})
        res = {{}}
        for name, wf in wfs.items():
            for card in {list(CARDS)!r}:
                for ram in (0.0, 32.0):
                    ui = node_mod.VRAMBudget().run(gpu=card, ram_budget_gb=ram, extra_pnginfo={{"workflow": wf}})["ui"]
                    res[f"{{name}}|{{card}}|{{ram}}"] = ui["vram_budget"][0]
        print(json.dumps(res))
        """,
        timeout=900,
    )
    for name, (_wf, path) in workflows.items():
        for card in CARDS:
            with_ram = out[f"{name}|{card}|32.0"]
            models = Path(comfy_install[0]) / "models"  # the snippet's folder_paths (a tree may have none)
            line = cli(path, "--gpu", card, "--comfyui-version", version, "--ram", "32", "--swap", "0",
                       *(("--models-dir", str(models)) if models.is_dir() else ()))
            _same_card_side(with_ram, line, (name, card))
            assert (with_ram["verdict"], with_ram["host_outcome"], with_ram["ram_peak_bytes"]) == \
                   (line["verdict"], line["host_outcome"], line["ram_peak_bytes"]), (name, card)
            assert "32.00 GiB RAM (" in with_ram["assumptions"]
            live = out[f"{name}|{card}|0.0"]
            assert card_side(live) == card_side(with_ram), (name, card)  # RAM never changes the card's side
            assert "(this machine)" in live["assumptions"]
