"""The version-regression guard of the run log (nodes/run_log.py, issue 21), without ComfyUI:
the workflow key, the version capture (fake packs in a tmp custom_nodes folder) and the guard
over records written as the tracker writes them."""
from __future__ import annotations

import copy
import json
import os

import pytest

from vram_budget.nodes import run_log
from vram_budget.nodes.estimator.units import GiB


# ----------------------------------------------------------------------------------------------
# The workflow key
def wan_prompt(seed=1, text="a fox in the snow", width=832, unet="wan/wan2.1_t2v_14B_fp16.safetensors", ids=None):
    ids = ids or ["1", "2", "3", "4", "5", "6"]
    a, b, c, d, e, f = ids
    return {
        a: {"class_type": "UNETLoader", "inputs": {"unet_name": unet, "weight_dtype": "fp8_e4m3fn"}},
        b: {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "type": "wan"}},
        c: {"class_type": "CLIPTextEncode", "inputs": {"clip": [b, 0], "text": text}},
        d: {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": width, "height": 480, "length": 81, "batch_size": 1}},
        e: {"class_type": "KSampler", "inputs": {"model": [a, 0], "positive": [c, 0], "negative": [c, 0], "latent_image": [d, 0],
                                                 "seed": seed, "control_after_generate": "randomize", "steps": 30, "cfg": 6.0,
                                                 "sampler_name": "uni_pc", "scheduler": "simple", "denoise": 1.0}},
        f: {"class_type": "SaveImage", "inputs": {"images": [e, 0], "filename_prefix": "wan/out"}},
    }


def test_key_ignores_seeds_prompt_text_steps_and_node_ids():
    key = run_log.workflow_key(wan_prompt())
    assert isinstance(key, str) and len(key) == run_log.KEY_HEX
    assert run_log.workflow_key(wan_prompt(seed=987654321)) == key
    assert run_log.workflow_key(wan_prompt(text="a cat")) == key  # even a one-word prompt
    changed = wan_prompt()
    changed["5"]["inputs"].update(steps=4, denoise=0.6)
    changed["6"]["inputs"]["filename_prefix"] = "elsewhere"
    assert run_log.workflow_key(changed) == key
    # the same graph built with other node ids (another editor, a pasted copy)
    assert run_log.workflow_key(wan_prompt(ids=["40", "7", "13", "2", "99", "100"])) == key
    # a model file moved into another subfolder is the same file
    assert run_log.workflow_key(wan_prompt(unet="wan2.1_t2v_14B_fp16.safetensors")) == key


def test_key_changes_with_what_changes_memory():
    key = run_log.workflow_key(wan_prompt())
    assert run_log.workflow_key(wan_prompt(width=1280)) != key
    assert run_log.workflow_key(wan_prompt(unet="wan2.1_t2v_1.3B_fp16.safetensors")) != key
    dtype = wan_prompt()
    dtype["1"]["inputs"]["weight_dtype"] = "default"
    assert run_log.workflow_key(dtype) != key
    cfg = wan_prompt()
    cfg["5"]["inputs"]["cfg"] = 1.0  # no uncond pass
    assert run_log.workflow_key(cfg) != key
    rewired = wan_prompt()
    rewired["5"]["inputs"]["negative"] = ["2", 0]  # same nodes, another wiring
    assert run_log.workflow_key(rewired) != key


def test_key_leaves_out_the_budget_node_and_survives_odd_prompts():
    key = run_log.workflow_key(wan_prompt())
    with_budget = wan_prompt()
    with_budget["9"] = {"class_type": "VRAMBudget", "inputs": {"vram_budget_gb": 12.0, "free_memory_after_run": True}}
    assert run_log.workflow_key(with_budget) == key
    assert run_log.workflow_key({}) is None and run_log.workflow_key(None) is None
    assert run_log.workflow_key({"1": "junk", "2": {"inputs": {}}}) is None  # no class_type anywhere
    cycle = {"1": {"class_type": "A", "inputs": {"x": ["2", 0]}}, "2": {"class_type": "B", "inputs": {"y": ["1", 0]}}}
    assert run_log.workflow_key(cycle) == run_log.workflow_key(copy.deepcopy(cycle))
    chain = {str(i): {"class_type": "Step", "inputs": ({"prev": [str(i - 1), 0]} if i else {})} for i in range(3000)}
    assert run_log.workflow_key(chain)  # a long chain: no recursion limit
    too_big = {str(i): {"class_type": "N", "inputs": {}} for i in range(run_log.KEY_MAX_NODES + 1)}
    assert run_log.workflow_key(too_big) is None
    nan = wan_prompt()
    nan["5"]["inputs"]["cfg"] = float("nan")
    assert run_log.workflow_key(nan)


def test_label_names_the_model_files():
    assert run_log.workflow_label(wan_prompt()) == "wan2.1_t2v_14B_fp16.safetensors + umt5_xxl_fp8_e4m3fn_scaled.safetensors"
    assert run_log.workflow_label({"1": {"class_type": "EmptyImage", "inputs": {"width": 8}}}) is None


# ----------------------------------------------------------------------------------------------
# The version capture
def make_pack(root, name, pyproject=None):
    d = root / name
    d.mkdir(parents=True)
    (d / "__init__.py").write_text("")
    if pyproject is not None:
        (d / "pyproject.toml").write_text(pyproject) if isinstance(pyproject, str) else (d / "pyproject.toml").write_bytes(pyproject)
    return d


def test_versions_of_fake_packs(tmp_path):
    root = tmp_path / "custom_nodes"
    make_pack(root, "ComfyUI-WanVideoWrapper", '[project]\nname = "comfyui-wanvideowrapper"\nversion = "1.3.6"\n')
    make_pack(root, "no-pyproject")
    make_pack(root, "broken", '[project\nversion = = "x"\n\x00')  # not TOML, no usable version line
    make_pack(root, "broken-but-plain", '[project]\nversion = "2.0.1"\ndependencies = [\n')  # unterminated: the line reader
    make_pack(root, "no-project-table", '[tool.comfy]\nPublisherId = "x"\n')
    make_pack(root, "binary", b"\xff\xfe\x00garbage")
    make_pack(root, "huge", '[project]\nversion = "9.9.9"\n' + "#" * (run_log.MAX_PYPROJECT_BYTES + 10))
    make_pack(root, "ComfyUI-Old.disabled", '[project]\nversion = "0.1"\n')
    make_pack(root, ".hidden", '[project]\nversion = "0.1"\n')
    make_pack(root, "__pycache__")
    (root / "single_file_node.py").write_text("NODE_CLASS_MAPPINGS = {}\n")
    versions = run_log.capture_versions(lambda: "0.18.2", [str(root)])
    assert versions["comfyui"] == "0.18.2"
    assert versions["custom_nodes"] == {"binary": None, "broken": None, "broken-but-plain": "2.0.1",
                                        "ComfyUI-WanVideoWrapper": "1.3.6", "huge": None, "no-project-table": None,
                                        "no-pyproject": None}
    assert versions["custom_nodes_omitted"] == 0
    assert set(versions) == {"comfyui", "comfy_aimdo", "torch", "custom_nodes", "custom_nodes_omitted"}
    json.dumps(versions, allow_nan=False)


def test_versions_are_bounded_and_never_crash(tmp_path):
    root = tmp_path / "custom_nodes"
    for i in range(run_log.MAX_PACKS + 11):
        make_pack(root, f"pack{i:03d}", f'[project]\nversion = "1.0.{i}"\n')
    versions = run_log.capture_versions(lambda: None, [str(root), str(tmp_path / "missing"), 42])
    assert len(versions["custom_nodes"]) == run_log.MAX_PACKS and versions["custom_nodes_omitted"] == 11
    assert versions["custom_nodes"]["pack000"] == "1.0.0" and "pack074" not in versions["custom_nodes"]
    assert versions["comfyui"] is None

    def boom():
        raise RuntimeError("no comfyui_version")

    assert run_log.capture_versions(boom, [])["comfyui"] is None


def test_versions_never_read_outside_custom_nodes(tmp_path):
    outside = tmp_path / "elsewhere" / "pack"
    outside.mkdir(parents=True)
    (outside / "pyproject.toml").write_text('[project]\nversion = "6.6.6"\n')
    root = tmp_path / "custom_nodes"
    root.mkdir()
    os.symlink(outside, root / "linked-pack")
    inside = make_pack(root, "inside")
    os.symlink(outside / "pyproject.toml", inside / "pyproject.toml")
    packs, _ = run_log.scan_custom_nodes([str(root)])
    assert packs == {"inside": None, "linked-pack": None}


def test_versions_are_cached_per_process(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(run_log, "capture_versions", lambda: calls.append(1) or {"comfyui": "x", "custom_nodes": {}})
    run_log.clear_version_cache()
    try:
        assert run_log.installed_versions() == {"comfyui": "x", "custom_nodes": {}}
        assert run_log.installed_versions() is run_log.installed_versions()
        assert len(calls) == 1
    finally:
        run_log.clear_version_cache()


def test_torch_and_aimdo_versions_come_from_metadata(monkeypatch):
    import types
    monkeypatch.setitem(__import__("sys").modules, "torch", types.SimpleNamespace(__version__="2.14.1+cu128"))
    assert run_log.torch_version() == "2.14.1+cu128"
    assert run_log._dist_version("surely-not-an-installed-distribution") is None


# ----------------------------------------------------------------------------------------------
# The tracker writes them
class Probe:
    def __init__(self, peaks):
        self.peaks = list(peaks)

    def reset(self):
        pass

    def read(self):
        return self.peaks.pop(0)

    def current_peak(self):
        return None


def versions(wan="1.3.6", comfy="0.18.2", aimdo=None, torch="2.14.1", **packs):
    return {"comfyui": comfy, "comfy_aimdo": aimdo, "torch": torch,
            "custom_nodes": {"ComfyUI-WanVideoWrapper": wan, "comfyui-vram-budget": "0.1.0", **packs},
            "custom_nodes_omitted": 0}


def test_tracker_records_key_label_and_versions(tmp_path):
    current = {"v": versions()}
    clock = iter(range(1000, 10**6, 10))
    tracker = run_log.RunTracker(Probe([run_log.Measurement(int(14.5 * GiB), 13 * GiB, "cuda:0")] * 1 + [None]),
                                 run_log.RunLogFile(str(tmp_path / "runs.jsonl")), clock=lambda: float(next(clock)),
                                 versions=lambda: current["v"])
    tracker.prompt_started("p1", wan_prompt())  # the prompt from the queue item, when the history has none
    rec = tracker.prompt_ended("p1", {"status": {"status_str": "success", "messages": []}})
    assert rec["workflow_key"] == run_log.workflow_key(wan_prompt())
    assert rec["workflow_label"].startswith("wan2.1_t2v_14B_fp16.safetensors")
    assert rec["versions"] == versions()
    # the history entry's prompt wins; versions that fail to read leave the record intact
    current["v"] = None
    tracker.versions = lambda: 1 / 0
    tracker.prompt_started("p2")
    rec2 = tracker.prompt_ended("p2", {"prompt": (0, "p2", wan_prompt(width=640), {}, []), "status": {"status_str": "success"}})
    assert rec2["workflow_key"] == run_log.workflow_key(wan_prompt(width=640)) and rec2["versions"] is None
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert [json.loads(x)["prompt_id"] for x in lines] == ["p1", "p2"]


def test_queue_observer_passes_the_running_prompt():
    seen = []

    class T:
        def prompt_started(self, pid, prompt=None):
            seen.append((pid, prompt))

        def prompt_ended(self, pid, entry):
            pass

    class Q:
        currently_running = {0: (0, "A", wan_prompt(), {}, [])}
        history = {}

    run_log.QueueObserver(lambda: Q, T())()
    assert seen == [("A", wan_prompt())]


# ----------------------------------------------------------------------------------------------
# The guard
def record(pid, peak_gib, vers, ended, key="k1", status="success", device="cuda:0", label="wan2.1_t2v_14B_fp16.safetensors",
           notes=()):
    measured = run_log.Measurement(int(peak_gib * GiB), int(peak_gib * GiB) - GiB, device) if peak_gib else None
    rec = run_log.RunRecord(pid, ended - 60, ended, status, None, measured, None if measured else run_log.NOT_MEASURED_CPU,
                            list(notes), workflow_key=key, workflow_label=label, versions=vers)
    return rec.to_dict()


def test_two_versions_of_one_workflow_give_one_regression(tmp_path):
    logfile = run_log.RunLogFile(str(tmp_path / "runs.jsonl"))
    for rec in (record("a", 14.5, versions("1.3.6"), 100), record("b", 14.6, versions("1.3.6"), 200),
                record("c", 23.1, versions("1.3.9"), 300)):
        logfile.append(rec)
    tracker = run_log.RunTracker(Probe([]), logfile, versions=lambda: None)
    found = tracker.regressions()
    assert len(found) == 1
    reg = found[0]
    assert reg["workflow_key"] == "k1"
    assert reg["before"]["peak_bytes"] == int(14.6 * GiB) and reg["before"]["prompt_id"] == "b"  # the newest under 1.3.6
    assert reg["after"]["peak_bytes"] == int(23.1 * GiB) and reg["after"]["prompt_id"] == "c"
    assert reg["differs"] == [{"component": "custom_node", "name": "ComfyUI-WanVideoWrapper", "before": "1.3.6",
                               "after": "1.3.9", "installed_before": True, "installed_after": True}]
    assert reg["restore"] == [{"name": "ComfyUI-WanVideoWrapper", "action": "pin", "to": "1.3.6",
                               "text": "pinning ComfyUI-WanVideoWrapper back to 1.3.6"}]
    assert reg["flags"] == []
    assert reg["sentence"] == ("The workflow wan2.1_t2v_14B_fp16.safetensors (k1) peaked at 14.60 GiB on "
                               "ComfyUI-WanVideoWrapper 1.3.6, 23.10 GiB on 1.3.9 (+58 %); pinning "
                               "ComfyUI-WanVideoWrapper back to 1.3.6 should bring the earlier figure back.")
    json.dumps(found, allow_nan=False)
    assert tracker.regressions() is found  # cached until the log changes
    logfile.append(record("d", 14.4, versions("1.3.6"), 400))  # pinned back: the newest run is fine again
    assert tracker.regressions() == []


def test_same_versions_below_threshold_other_workflows_give_none():
    same = [record("a", 14.5, versions(), 100), record("b", 23.1, versions(), 200)]
    assert run_log.find_regressions(same) == []
    below_ratio = [record("a", 20.0, versions("1.3.6"), 100), record("b", 22.9, versions("1.3.9"), 200)]  # +14.5 %
    assert run_log.find_regressions(below_ratio) == []
    below_bytes = [record("a", 4.0, versions("1.3.6"), 100), record("b", 4.9, versions("1.3.9"), 200)]  # +22 %, 0.9 GiB
    assert run_log.find_regressions(below_bytes) == []
    at_threshold = [record("a", 20.0, versions("1.3.6"), 100), record("b", 23.0, versions("1.3.9"), 200)]  # +15 %, 3 GiB
    assert len(run_log.find_regressions(at_threshold)) == 1
    others = [record("a", 14.5, versions("1.3.6"), 100, key="k1"), record("b", 23.1, versions("1.3.9"), 200, key="k2")]
    assert run_log.find_regressions(others) == []
    fell = [record("a", 23.1, versions("1.3.6"), 100), record("b", 14.5, versions("1.3.9"), 200)]
    assert run_log.find_regressions(fell) == []  # an improvement is no regression


def test_guard_uses_only_measured_successful_runs_on_one_device():
    cpu = [record("a", None, versions("1.3.6"), 100), record("b", None, versions("1.3.9"), 200)]
    assert run_log.find_regressions(cpu) == []  # "not measured (CPU)": nothing to compare
    failed = [record("a", 14.5, versions("1.3.6"), 100), record("b", 23.1, versions("1.3.9"), 200, status="error")]
    assert run_log.find_regressions(failed) == []
    devices = [record("a", 14.5, versions("1.3.6"), 100, device="cuda:1"), record("b", 23.1, versions("1.3.9"), 200)]
    assert run_log.find_regressions(devices) == []
    old_records = [{"prompt_id": "x", "status": "success", "measured": {"reserved_peak_bytes": GiB, "device": "cuda:0"}},
                   "junk", None, {"status": "success", "workflow_key": "k1", "versions": "?", "measured": None}]
    assert run_log.find_regressions(old_records + cpu) == []  # records from before the guard: ignored


def test_guard_names_flags_as_suggestions():
    dyn = [record("a", 10.0, versions(comfy="0.15.1"), 100),
           record("b", 16.0, versions(comfy="0.18.2", aimdo="0.2.4"), 200, notes=[run_log_dynamic_note()])]
    reg = run_log.find_regressions(dyn)[0]
    assert [d["name"] for d in reg["differs"]] == ["ComfyUI", "comfy-aimdo"]
    assert [f["flag"] for f in reg["flags"]] == ["--disable-dynamic-vram", "--disable-pinned-memory"]
    assert reg["flags"][0]["why"] == "comfy-aimdo changed"
    assert reg["restore"][1] == {"name": "comfy-aimdo", "action": "remove", "text": "removing comfy-aimdo"}
    s = reg["sentence"]
    assert "10.00 GiB on ComfyUI 0.15.1 and comfy-aimdo not installed, 16.00 GiB on ComfyUI 0.18.2 and comfy-aimdo 0.2.4 (+60 %)" in s
    assert "pinning ComfyUI back to 0.15.1 and removing comfy-aimdo should bring the earlier figure back" in s
    assert "--disable-dynamic-vram may help (comfy-aimdo changed)" in s and "--disable-pinned-memory may help" in s
    # the Dynamic VRAM note alone (same aimdo, a ComfyUI update) still points at the flag
    note_only = [record("a", 10.0, versions(comfy="0.17.0", aimdo="0.2.4"), 100),
                 record("b", 16.0, versions(comfy="0.18.2", aimdo="0.2.4"), 200, notes=[run_log_dynamic_note()])]
    assert run_log.find_regressions(note_only)[0]["flags"][0] == {
        "flag": "--disable-dynamic-vram", "why": "the later run used Dynamic VRAM, the earlier one did not"}
    # on 0.8 there is no Dynamic VRAM flag to suggest; a torch change alone names no flag
    old = [record("a", 10.0, versions(comfy="0.7.0"), 100), record("b", 16.0, versions(comfy="0.8.0"), 200)]
    assert [f["flag"] for f in run_log.find_regressions(old)[0]["flags"]] == ["--disable-pinned-memory"]
    torch = [record("a", 10.0, versions(torch="2.7.0"), 100), record("b", 16.0, versions(torch="2.9.1"), 200)]
    assert run_log.find_regressions(torch)[0]["flags"] == []


def run_log_dynamic_note() -> str:
    from vram_budget.nodes.routes import DYNAMIC_NOTE  # the note the live tracker adds under Dynamic VRAM

    return DYNAMIC_NOTE


def test_guard_blames_the_fewest_differences_and_handles_packs_added():
    runs = [record("a", 14.5, versions("1.3.5"), 100), record("b", 14.5, versions("1.3.6"), 200),
            record("c", 23.1, versions("1.3.9", **{"ComfyUI-KJNodes": "1.1.0"}), 300)]
    reg = run_log.find_regressions(runs)[0]
    assert reg["before"]["prompt_id"] == "b"  # the most recent earlier set that was lower
    assert [(d["name"], d["before"], d["after"]) for d in reg["differs"]] == [
        ("ComfyUI-KJNodes", None, "1.1.0"), ("ComfyUI-WanVideoWrapper", "1.3.6", "1.3.9")]
    assert ("14.50 GiB on ComfyUI-KJNodes not installed and ComfyUI-WanVideoWrapper 1.3.6, "
            "23.10 GiB on ComfyUI-KJNodes 1.1.0 and ComfyUI-WanVideoWrapper 1.3.9 (+59 %)") in reg["sentence"]
    assert "removing ComfyUI-KJNodes and pinning ComfyUI-WanVideoWrapper back to 1.3.6" in reg["sentence"]
    # a pack missing from a record that left packs out (past MAX_PACKS) is not blamed
    truncated = versions("1.3.6")
    truncated["custom_nodes_omitted"] = 3
    runs = [record("a", 14.5, truncated, 100), record("b", 23.1, versions("1.3.9", **{"ComfyUI-KJNodes": "1.1.0"}), 200)]
    assert [d["name"] for d in run_log.find_regressions(runs)[0]["differs"]] == ["ComfyUI-WanVideoWrapper"]


def test_guard_without_a_log_file_reads_the_recent_runs():
    vers = {"v": versions("1.3.6")}
    peaks = [run_log.Measurement(int(14.5 * GiB), 0, "cuda:0"), run_log.Measurement(int(23.1 * GiB), 0, "cuda:0")]
    clock = iter(range(1000, 10**6, 10))
    tracker = run_log.RunTracker(Probe(peaks), None, clock=lambda: float(next(clock)), versions=lambda: vers["v"])
    for pid in ("p1", "p2"):
        tracker.prompt_started(pid, wan_prompt(seed=hash(pid)))
        tracker.prompt_ended(pid, {"status": {"status_str": "success"}})
        vers["v"] = versions("1.3.9")
    (reg,) = tracker.regressions()
    assert reg["before"]["prompt_id"] == "p1" and reg["after"]["prompt_id"] == "p2"
    assert "14.50 GiB on ComfyUI-WanVideoWrapper 1.3.6, 23.10 GiB on 1.3.9" in reg["sentence"]


@pytest.mark.parametrize("bad", [{"custom_nodes": None}, {"custom_nodes": {"x": "1"}, "custom_nodes_omitted": "many"}, {}])
def test_version_differences_tolerate_odd_dicts(bad):
    run_log.version_differences(bad, versions())
    run_log.version_differences(versions(), bad)
