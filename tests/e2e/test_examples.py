"""The example workflows as the templates browser opens them, in the real frontend.

Every example loads with no missing node type and holds one VRAM Budget node; its loaders carry
download links in their `models` property, which the frontend's missing-models dialog (1.35, 1.41)
or issues panel (1.58) lists on a server without the files. On a server with the files (full-size
headers over holes: exact sizes, nothing is ever loaded), the budget node alone is run (for an
RTX 4090) and photographed with the graph around it: artifacts/example_<name>_<version>.jpg, copied to
example_workflows/<name>.jpg (the thumbnail the templates browser shows) when UPDATE_SCREENSHOTS=1
or when it does not exist yet.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from helpers_models import spec_clip_text, spec_flux, spec_t5, spec_vae_kl, spec_vae_wan, spec_wan, write_safetensors

pytestmark = [pytest.mark.e2e, pytest.mark.heavy]
EXAMPLES = Path(__file__).resolve().parents[2] / "example_workflows"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.json"))
GRAPH = "(window.comfyAPI.app.app.rootGraph ?? window.comfyAPI.app.app.graph)"
THUMB, THUMB_CENTER = (960, 600), (680, 480)  # 16:10, in the canvas area of a 1280 x 860 page
FILES = {  # every model file the examples name -> its header
    "diffusion_models/flux1-dev.safetensors": lambda: spec_flux("BF16"),
    "text_encoders/t5xxl_fp16.safetensors": lambda: spec_t5(dtype="F16"),
    "text_encoders/clip_l.safetensors": spec_clip_text,
    "vae/ae.safetensors": lambda: spec_vae_kl(z=16),
    "diffusion_models/wan2.1_t2v_14B_fp16.safetensors": lambda: spec_wan("14b", "t2v", "F16"),
    "diffusion_models/wan2.2_i2v_high_noise_14B_fp16.safetensors": lambda: spec_wan("14b", "i2v22", "F16"),
    "diffusion_models/wan2.2_i2v_low_noise_14B_fp16.safetensors": lambda: spec_wan("14b", "i2v22", "F16"),
    "text_encoders/umt5_xxl_fp16.safetensors": lambda: spec_t5(umt5=True, dtype="F16"),
    "text_encoders/umt5_xxl_fp8_e4m3fn_scaled.safetensors": lambda: spec_t5(umt5=True, dtype="F8_E4M3"),
    "vae/wan_2.1_vae.safetensors": lambda: spec_vae_wan("2.1", "BF16", scale=1),
}


def loaders(name: str) -> list[dict]:
    workflow = json.loads((EXAMPLES / f"{name}.json").read_text())
    return [n for n in workflow["nodes"] if n.get("properties", {}).get("models")]


def open_page(browser, server):
    page = browser.new_page(viewport={"width": 1280, "height": 860})
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(server.url)
    page.wait_for_function("() => window.LiteGraph?.registered_node_types?.VRAMBudget && window.comfyAPI.app.app.canvas",
                           timeout=120_000)
    page.wait_for_timeout(1500)  # the frontend restores its start-up workflow
    return page


def load(page, name: str) -> None:
    workflow = json.loads((EXAMPLES / f"{name}.json").read_text())
    ok = page.evaluate(
        f"""async (wf) => {{
            const app = window.comfyAPI.app.app;
            const has = () => {GRAPH}.nodes.some(n => n.type === "VRAMBudget");
            for (let i = 0; i < 10; i++) {{
                if (!has()) await app.loadGraphData(wf);
                await new Promise(r => setTimeout(r, 800));
                if (has()) return true;
            }}
            return false;
        }}""", workflow)
    assert ok, f"{name} did not stay loaded"
    missing = page.evaluate(f"() => {GRAPH}.nodes.map(n => n.type).filter(t => !window.LiteGraph.registered_node_types[t])")
    assert missing == [], (name, missing)


def test_missing_models_are_listed_with_their_downloads(e2e_server_factory, browser):
    server = e2e_server_factory()  # no model files
    page = open_page(browser, server)
    for name in NAMES:
        load(page, name)
        expected = {m["name"] for node in loaders(name) for m in node["properties"]["models"]}
        details = page.get_by_text("View details")  # frontend 1.58: an issues panel instead of a dialog
        deadline = time.time() + 15
        while time.time() < deadline:
            if details.count():
                details.first.click()
            text = page.evaluate("""() => [...document.querySelectorAll(
                '.p-dialog, [role=dialog], [data-testid=error-group-missing-model]')].map(d => d.innerText).join('\\n')""")
            if all(n in text for n in expected):
                break
            page.wait_for_timeout(300)
        else:
            raise AssertionError(f"{name}: the frontend did not list {sorted(expected)}: {text[:600]!r}")
        for _ in range(3):
            page.keyboard.press("Escape")
            page.wait_for_timeout(150)
        page.evaluate(f"() => {GRAPH}.clear()")
    assert not page.errors, page.errors
    page.close()


FEATURED = ("VAEDecodeAutoTiled", "VRAMBudgetWanPlanner", "KSampler", "KSamplerAdvanced")


def frame_budget_node(page, node_id: int) -> None:
    """The view a thumbnail shows: the VRAM Budget node and its verdict next to the node the example
    is about (Auto Tiled decode, Wan planner, else the sampler), as large as they fit."""
    page.evaluate(f"""([id, featured, clip]) => {{
        const app = window.comfyAPI.app.app, g = {GRAPH}, budget = g.getNodeById(id);
        const other = featured.map(t => g.nodes.find(n => n.type === t)).find(Boolean);
        const nodes = other ? [budget, other] : [budget];
        const x0 = Math.min(...nodes.map(n => n.pos[0])), y0 = Math.min(...nodes.map(n => n.pos[1] - 30));
        const x1 = Math.max(...nodes.map(n => n.pos[0] + n.size[0])), y1 = Math.max(...nodes.map(n => n.pos[1] + n.size[1]));
        const scale = Math.min(0.9, (clip[0] - 40) / (x1 - x0), (clip[1] - 40) / (y1 - y0));
        app.canvas.ds.scale = scale;
        app.canvas.ds.offset = [clip[2] / scale - (x0 + x1) / 2, clip[3] / scale - (y0 + y1) / 2];
        app.canvas.setDirty(true, true);
    }}""", [node_id, list(FEATURED), [*THUMB, *THUMB_CENTER]])


def run_budget_node_only(page, server, harness) -> int:
    """POST the editor's prompt with the budget node as the only target (the other nodes stay as they
    are: nothing loads); returns the node id once its verdict is on the node."""
    node_id = page.evaluate(f"""async () => {{
        const app = window.comfyAPI.app.app, api = window.comfyAPI.api.api;
        const node = {GRAPH}.nodes.find(n => n.type === "VRAMBudget");
        node.widgets.find(w => w.name === "gpu").value = "RTX 4090";
        const {{output, workflow}} = await app.graphToPrompt();
        const body = {{prompt: output, client_id: api.clientId, partial_execution_targets: [String(node.id)],
                       extra_data: {{extra_pnginfo: {{workflow}}}}}};
        const r = await api.fetchApi("/prompt", {{method: "POST", headers: {{"Content-Type": "application/json"}},
                                                   body: JSON.stringify(body)}});
        if (r.status !== 200) throw new Error("queue failed " + r.status + " " + await r.text());
        return node.id;
    }}""")
    harness.wait_idle(server)
    page.wait_for_function(f"(id) => {GRAPH}.getNodeById(id).widgets.find(w => w.name === 'vram_report')"
                           ".verdictEl?.style.display === 'block'", arg=node_id, timeout=60_000)
    return node_id


@pytest.fixture(scope="module")
def examples_server(e2e_server_factory):
    """A server with every example's model files (full-size headers over holes: nothing loads)."""
    def setup(base: Path) -> None:
        for rel, spec in FILES.items():
            write_safetensors(base / "models" / rel, spec(), sparse=True)
    server = e2e_server_factory(setup)
    # A thumbnail shows the whole graph: full node rendering at any zoom, no minimap or canvas info.
    status, _ = server.request("POST", "/api/settings", {
        "LiteGraph.Canvas.MinFontSizeForLOD": 1, "LiteGraph.Canvas.LowQualityRenderingZoomThreshold": 0.05,
        "Comfy.Minimap.Visible": False, "Comfy.Graph.CanvasInfo": False})
    assert status == 200
    return server


@pytest.mark.parametrize("name", NAMES)
def test_example_runs_its_budget_and_thumbnail(name, examples_server, browser, harness, artifacts, e2e_comfy):
    server = examples_server
    page = open_page(browser, server)
    load(page, name)
    node_id = run_budget_node_only(page, server, harness)
    verdict = page.evaluate(f"(id) => {GRAPH}.getNodeById(id).widgets.find(w => w.name === 'vram_report')"
                            ".verdictEl.dataset.verdict", node_id)
    assert verdict in ("fits", "tight", "runs_slower", "oom"), verdict  # priced: the files are there
    frame_budget_node(page, node_id)
    page.mouse.move(5, 500)
    page.add_style_tag(content=".p-toast, [data-testid=toast] { display: none !important; }")
    page.evaluate("""() => [...document.querySelectorAll('span, div')]  // the "Job completed" banner (1.41, 1.58)
        .filter(e => e.childElementCount === 0 && e.textContent.trim() === 'Job completed')
        .forEach(e => { (e.closest('div.inline-flex') ?? e).style.visibility = 'hidden'; })""")
    page.wait_for_timeout(800)
    shot = artifacts / f"example_{name}_{e2e_comfy[2]}.jpg"
    clip = {"x": THUMB_CENTER[0] - THUMB[0] / 2, "y": THUMB_CENTER[1] - THUMB[1] / 2, "width": THUMB[0], "height": THUMB[1]}
    page.screenshot(path=str(shot), type="jpeg", quality=80, clip=clip)
    thumb = EXAMPLES / f"{name}.jpg"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not thumb.exists():
        shutil.copyfile(shot, thumb)
    assert not page.errors, page.errors
    page.close()


def test_every_example_holds_the_budget_node_and_download_links():  # last: the thumbnails exist by now
    for name in NAMES:
        workflow = json.loads((EXAMPLES / f"{name}.json").read_text())
        assert sum(n["type"] == "VRAMBudget" for n in workflow["nodes"]) == 1, name
        for node in workflow["nodes"]:
            if node["type"].endswith("Loader"):
                files = [v for v in node["widgets_values"] if isinstance(v, str) and v.endswith(".safetensors")]
                models = node["properties"].get("models") or []
                assert [m["name"] for m in models] == files, (name, node["type"])
                for m in models:  # the frontend's ModelFile: {name, url, directory}
                    assert m["url"].startswith("https://huggingface.co/") and m["url"].endswith("/" + m["name"])
                    assert f"{m['directory']}/{m['name']}" in FILES, m
        assert (EXAMPLES / f"{name}.jpg").is_file() or os.environ.get("UPDATE_SCREENSHOTS"), f"{name}.jpg missing"
