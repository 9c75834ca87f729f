"""The Wan Planner node in a real ComfyUI: its outputs drive a Wan latent node and the prompt runs.

Run once per ComfyUI version (COMFYUI_PATH / COMFYUI_PYTHON). The expected plans are computed
here with the same estimator package (``vram_budget``), for the same memory budget the node is
given, so the node must agree with the library it wraps.
"""
from __future__ import annotations

import time

import pytest

from vram_budget.nodes.estimator.plan import wan_plan as wp
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.units import GiB

pytestmark = pytest.mark.comfy
NODE = "VRAMBudgetWanPlanner"


def budget_device(gb: float) -> Device:
    # What nodes/budget_node.live_device builds for a typed budget (classic mode on a CPU ComfyUI).
    return Device(name=f"{gb:g} GiB budget", total_bytes=int(gb * GiB), memory_mode="classic",
                  source="budget input")


def wait_history(server, prompt_id: str, timeout: float = 240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, hist = server.request("GET", f"/history/{prompt_id}")
        if status == 200 and isinstance(hist, dict) and prompt_id in hist:
            entry = hist[prompt_id]
            if entry.get("status", {}).get("completed") or entry.get("status", {}).get("status_str") == "error":
                return entry
        time.sleep(0.5)
    raise AssertionError(f"prompt {prompt_id} did not finish:\n{server.log()[-4000:]}")


@pytest.mark.parametrize("keep", ["resolution", "balanced"])
def test_planner_outputs_feed_a_wan_latent_and_the_prompt_runs(comfy_server, keep):
    status, info = comfy_server.request("GET", f"/object_info/{NODE}")
    assert status == 200 and NODE in info, "the planner node is not registered"
    spec_in = info[NODE]["input"]["required"]
    assert "Wan 2.2 14B (A14B)" in spec_in["variant"][0] and "GGUF Q4_K_S" in spec_in["precision"][0]
    assert info[NODE]["output"] == ["INT", "INT", "INT", "STRING"]

    prompt = {
        "1": {"class_type": NODE, "inputs": {
            "variant": "Wan 2.2 14B (A14B)", "precision": "fp16", "width": 1280, "height": 720, "length": 81,
            "seconds": 0.0, "keep": keep, "vram_budget_gb": 32.0}},
        "2": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {
            "width": ["1", 0], "height": ["1", 1], "length": ["1", 2], "batch_size": 1}},
        "3": {"class_type": "LatentUpscaleBy", "inputs": {"samples": ["2", 0], "upscale_method": "nearest-exact",
                                                          "scale_by": 0.25}},
        "4": {"class_type": "PreviewAny", "inputs": {"source": ["3", 0]}},
        "5": {"class_type": "PreviewAny", "inputs": {"source": ["1", 0]}},
        "6": {"class_type": "PreviewAny", "inputs": {"source": ["1", 1]}},
        "7": {"class_type": "PreviewAny", "inputs": {"source": ["1", 2]}},
        "8": {"class_type": "PreviewAny", "inputs": {"source": ["1", 3]}},
    }
    status, body = comfy_server.request("POST", "/prompt", {"prompt": prompt, "client_id": "wan-planner-test"})
    assert status == 200, f"prompt rejected: {body}"
    entry = wait_history(comfy_server, body["prompt_id"])
    assert entry["status"]["status_str"] == "success", entry["status"]
    outputs = entry["outputs"]

    expected = wp.plan(wp.model_spec("wan2.2-a14b", "fp16"), budget_device(32.0), 1280, 720, 81, keep)
    assert expected.fits and expected.changed  # 32 GiB cannot hold 720p × 81 with 16-bit weights
    summary = outputs["1"]["wan_plan"][0]
    assert (summary["width"], summary["height"], summary["length"]) == (expected.width, expected.height,
                                                                       expected.length)
    # the INT outputs reached the downstream nodes unchanged
    assert outputs["5"]["text"][0] == str(expected.width)
    assert outputs["6"]["text"][0] == str(expected.height)
    assert outputs["7"]["text"][0] == str(expected.length)
    report = outputs["8"]["text"][0]
    assert report == outputs["1"]["text"][0]
    assert f"{expected.width}×{expected.height}×{expected.length}" in report and "blocks_to_swap" in report
    assert "4" in outputs  # the latent made from the planned size went through LatentUpscaleBy and was shown


def test_planner_called_directly_with_a_memory_budget(run_in_comfy):
    result = run_in_comfy(
        """
        import json
        node = PACK.NODE_CLASS_MAPPINGS["VRAMBudgetWanPlanner"]()
        out = {}
        for gb in (24.0, 32.0, 48.0):
            r = node.run("Wan 2.2 14B (A14B)", "fp16", 1280, 720, 81, 0.0, "frames", vram_budget_gb=gb)
            out[str(gb)] = {"result": list(r["result"][:3]), "plan": r["ui"]["wan_plan"][0], "text": r["ui"]["text"][0]}
        r = node.run("Wan 2.2 TI2V 5B", "fp16", 1280, 704, 1, 5.0, "balanced", vram_budget_gb=12.0)
        out["5b"] = {"result": list(r["result"][:3]), "plan": r["ui"]["wan_plan"][0]}
        print(json.dumps(out))
        """
    )
    spec = wp.model_spec("wan2.2-a14b", "fp16")
    for gb in (24.0, 32.0, 48.0):
        expected = wp.plan(spec, budget_device(gb), 1280, 720, 81, "frames")
        got = result[str(gb)]
        assert got["result"] == [expected.width, expected.height, expected.length], gb
        assert got["plan"]["fits"] == expected.fits and got["plan"]["blocks_to_swap"] == expected.blocks_to_swap
    assert result["24.0"]["plan"]["fits"] is False and "blocks_to_swap" in result["24.0"]["text"]
    assert result["48.0"]["result"] == [1280, 720, 81]
    five = wp.plan(wp.model_spec("wan2.2-ti2v-5b", "fp16"), budget_device(12.0), 1280, 704, 121, "balanced")
    assert result["5b"]["result"] == [five.width, five.height, five.length]  # 5 s at 24 fps = 121 frames
    w, h, length = result["5b"]["result"]
    assert w % 32 == 0 and h % 32 == 0 and length % 4 == 1


def test_planner_reads_a_loaded_wan_model(run_in_comfy, tmp_path):
    """A real (tiny) Wan DiT written with safetensors and loaded by ComfyUI: class, dims and dtype are read."""
    result = run_in_comfy(
        """
        import json, sys, torch, safetensors.torch, comfy.sd, comfy.ops
        import comfy.ldm.wan.model as wan
        out_dir = "OUT_DIR"
        bridge = sys.modules[PACK.__name__ + ".nodes.comfy_bridge"]
        node = PACK.NODE_CLASS_MAPPINGS["VRAMBudgetWanPlanner"]()
        res = {}
        for out_dim in (16, 48):  # Wan 2.1 / 2.2-14B latent, Wan 2.2 TI2V 5B latent
            net = wan.WanModel(model_type="t2v", dim=128, ffn_dim=256, num_heads=1, num_layers=2, in_dim=out_dim,
                               out_dim=out_dim, operations=comfy.ops.disable_weight_init)
            sd = {k: torch.zeros(v.shape, dtype=torch.bfloat16) for k, v in net.state_dict().items()}
            path = f"{out_dir}/tiny_wan_{out_dim}.safetensors"
            safetensors.torch.save_file(sd, path)
            for opts in ({}, {"dtype": torch.float8_e4m3fn}):
                model = comfy.sd.load_diffusion_model(path, model_options=opts)
                desc = bridge.describe_loaded_model(model)
                r = node.run("Wan 2.1 14B", "fp16", 1000, 600, 50, 0.0, "balanced", vram_budget_gb=12.0, model=model)
                key = f"{out_dim}-{'fp8' if opts else 'default'}"
                res[key] = {"desc": {k: v for k, v in desc.items()}, "result": list(r["result"][:3]),
                            "plan": r["ui"]["wan_plan"][0], "text": r["ui"]["text"][0],
                            "params": sum(p.numel() for p in model.model.diffusion_model.parameters())}
        print(json.dumps(res, default=str))
        """.replace("OUT_DIR", str(tmp_path)),
    )
    for key, got in result.items():
        desc = got["desc"]
        out_dim = int(key.split("-")[0])
        assert desc["class_name"] == ("WAN22" if out_dim == 48 else "WAN21")
        assert (desc["dim"], desc["num_layers"], desc["ffn_dim"], desc["out_dim"]) == (128, 2, 256, out_dim)
        assert desc["params"] == got["params"] and desc["gguf"] is False
        if key.endswith("fp8"):
            assert desc["dtype"] == "float8_e4m3fn" and got["plan"]["precision"] == "fp8"
        # the plan the node made equals the library's plan for the same description
        spec = wp.spec_from_loaded(desc)
        expected = wp.plan(spec, budget_device(12.0), 1000, 600, 50, "balanced")
        assert got["result"] == [expected.width, expected.height, expected.length]
        m = 32 if out_dim == 48 else 16
        w, h, length = got["result"]
        assert w % m == 0 and h % m == 0 and length == 49
        assert "Wan model (dim 128, 2 blocks)" in got["text"] and "MODEL input" in got["text"]


def test_planner_reads_a_gguf_model_loaded_by_comfyui_gguf(run_in_comfy, tmp_path):
    """With city96/ComfyUI-GGUF (COMFYUI_GGUF_PATH = its checkout): GGMLTensor weights are seen as GGUF."""
    import os

    gguf_pack = os.environ.get("COMFYUI_GGUF_PATH")
    if not gguf_pack or not os.path.isfile(os.path.join(gguf_pack, "ops.py")):
        pytest.skip("COMFYUI_GGUF_PATH is not set to a ComfyUI-GGUF checkout")
    result = run_in_comfy(
        """
        import asyncio, json, os, sys, numpy as np, gguf, torch, comfy.ops, folder_paths, nodes
        import comfy.ldm.wan.model as wan
        gguf_pack, out_dir = "GGUF_PACK", "OUT_DIR"
        load = nodes.load_custom_node(gguf_pack)
        assert (asyncio.run(load) if asyncio.iscoroutine(load) else load), "ComfyUI-GGUF failed to load"
        net = wan.WanModel(model_type="t2v", dim=128, ffn_dim=256, num_heads=1, num_layers=2, in_dim=16, out_dim=16,
                           operations=comfy.ops.disable_weight_init)
        writer = gguf.GGUFWriter(os.path.join(out_dir, "tiny-wan-Q8_0.gguf"), "wan")  # the real gguf writer
        for key, value in net.state_dict().items():
            arr = np.zeros(tuple(value.shape), dtype=np.float32)
            if arr.ndim == 2 and arr.shape[-1] % 32 == 0:
                q = gguf.quants.quantize(arr, gguf.GGMLQuantizationType.Q8_0)
                writer.add_tensor(key, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            else:
                writer.add_tensor(key, arr if arr.ndim <= 1 else arr.astype(np.float16))
        writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file(); writer.close()
        folder_paths.add_model_folder_path("diffusion_models", out_dir)
        (model,) = nodes.NODE_CLASS_MAPPINGS["UnetLoaderGGUF"]().load_unet("tiny-wan-Q8_0.gguf")
        bridge = sys.modules[PACK.__name__ + ".nodes.comfy_bridge"]
        desc = bridge.describe_loaded_model(model)
        r = PACK.NODE_CLASS_MAPPINGS["VRAMBudgetWanPlanner"]().run("Wan 2.1 14B", "fp16", 832, 480, 81, 0.0, "frames",
                                                                   vram_budget_gb=12.0, model=model)
        print(json.dumps({"desc": desc, "plan": r["ui"]["wan_plan"][0], "params": sum(
            int(np.prod(getattr(p, "tensor_shape", p.shape))) for p in model.model.diffusion_model.parameters())},
            default=str))
        """.replace("GGUF_PACK", gguf_pack).replace("OUT_DIR", str(tmp_path)),
    )
    desc = result["desc"]
    assert desc["gguf"] is True and desc["gguf_type"] == "Q8_0" and desc["class_name"] == "WAN21"
    assert desc["params"] == result["params"]
    assert desc["weights_bytes"] < 2 * desc["params"]  # quantized bytes, not the logical 16-bit size
    assert result["plan"]["precision"] == "GGUF Q8_0"


def test_planner_wired_into_a_hunyuanvideo_15_workflow_plans_that_workflow(run_in_comfy):
    """Issue 35: wired into the video latent of a non-Wan workflow (HunyuanVideo 1.5, as the official template
    wires it), the node plans that workflow with its own models, on ComfyUI's own graph input (the hidden
    PROMPT); the same as the estimator's video_plan on that prompt."""
    import json as _json

    from test_video_plan import HV15
    from vram_budget.nodes.estimator.plan import video_plan
    from vram_budget.nodes.estimator.plan.planning import read_workflow

    result = run_in_comfy(
        f"""
        import json
        node = PACK.NODE_CLASS_MAPPINGS["VRAMBudgetWanPlanner"]()
        prompt = json.loads({_json.dumps(_json.dumps(HV15))})
        r = node.run("Wan 2.1 14B", "fp16", 1920, 1088, 161, 0.0, "frames", vram_budget_gb=24.0, prompt=prompt,
                     unique_id="99")
        s = node.run("Wan 2.1 14B", "fp16", 1920, 1088, 1, 5.0, "resolution", vram_budget_gb=24.0, prompt=prompt,
                     unique_id="99")
        alone = node.run("Wan 2.1 14B", "fp16", 1280, 720, 81, 0.0, "frames", vram_budget_gb=24.0, prompt=prompt,
                         unique_id="42")
        print(json.dumps({{"r": [list(r["result"][:3]), r["ui"]["wan_plan"][0], r["ui"]["text"][0]],
                           "s": [list(s["result"][:3]), s["ui"]["wan_plan"][0]],
                           "alone": alone["ui"]["wan_plan"][0]}}))
        """
    )
    workload = read_workflow(video_plan.prompt_at(HV15, "99", 1920, 1088, 161))
    expected = video_plan.plan_workload(workload, budget_device(24.0), 1920, 1088, 161, "frames")
    (got, plan, text) = result["r"]
    assert got == [expected.width, expected.height, expected.length] and expected.changed and expected.fits
    assert plan["mode"] == "workflow" and plan["latent_node"] == "EmptyHunyuanVideo15Latent"
    assert "HunyuanVideo 1.5" in text and "variant and precision widgets are not used" in text
    assert got[2] == 161 and got[0] % 16 == 0  # keep frames: the size was cut
    assert result["s"][1]["target"][2] == 121  # 5 s at the workflow's own 24 fps (CreateVideo fps)
    assert result["alone"].get("mode") is None  # another node's id: not wired, the variant answers
