"""The running prompt and the node types: text on a node, baselines after a prompt, this ComfyUI's own node
definitions."""
from __future__ import annotations

from .base import _mm
from .models import loaded_models


def send_node_text(node_id, text: str) -> bool:
    """Show `text` on a node in the UI (PromptServer.send_progress_text, rendered by the frontend on
    any node). False when there is no server (tests, scripts) or no node id."""
    if node_id is None:
        return False
    try:
        from server import PromptServer  # noqa: PLC0415

        inst = getattr(PromptServer, "instance", None)
        send = getattr(inst, "send_progress_text", None)
        if send is None:
            return False
        send(text, str(node_id))
        return True
    except Exception:
        return False


# ----------------------------------------------------------------------------------------------
# Baselines after each prompt (leaks.py)
def prompt_packs(prompt: dict | None, limit: int = 500) -> tuple:
    """The custom node packs a prompt's nodes come from (nodes.py sets RELATIVE_PYTHON_MODULE
    "custom_nodes.<pack>" on each node class it loads), this pack left out."""
    if not isinstance(prompt, dict):
        return ()
    try:
        import nodes  # noqa: PLC0415

        mappings = nodes.NODE_CLASS_MAPPINGS
    except Exception:  # noqa: BLE001
        return ()
    own = __name__.split(".")[0]
    packs = set()
    for node in list(prompt.values())[:limit]:
        cls = mappings.get(node.get("class_type")) if isinstance(node, dict) else None
        module = getattr(cls, "RELATIVE_PYTHON_MODULE", "") or ""
        if module.startswith("custom_nodes."):
            pack = module.split(".", 2)[1]
            if pack != own and pack.replace("-", "_") != own.replace("-", "_"):
                packs.add(pack)
    return tuple(sorted(packs))


def baseline(prompt_id: str, prompt: dict | None):
    """leaks.Baseline now: this process's RSS and PyTorch's allocated VRAM, each less the weights of the models
    ComfyUI keeps loaded (on the GPU: what is loaded there; in RAM: the rest)."""
    import psutil  # noqa: PLC0415

    from ..leaks import Baseline  # noqa: PLC0415

    models = loaded_models()
    rss = int(psutil.Process().memory_info().rss)
    ram_models = sum((m.size - m.loaded) if m.device_type == "cuda" else m.size for m in models)
    vram = None
    try:
        import torch  # noqa: PLC0415

        dev = _mm().get_torch_device()
        if getattr(dev, "type", "") == "cuda":
            vram = int(torch.cuda.memory_allocated(dev)) - sum(m.loaded for m in models if m.device_type == "cuda")
    except Exception:  # noqa: BLE001
        vram = None
    return Baseline(prompt_id, rss - ram_models, vram, len(models), prompt_packs(prompt))


# ----------------------------------------------------------------------------------------------
# This ComfyUI's own node definitions (what /object_info answers), for node types the shipped table lacks
MAX_LIVE_SPECS = 500


def node_info(cls) -> dict:
    """A node class's /object_info entry as ComfyUI's server builds it (server.py node_info): V3 nodes give it
    themselves (GET_NODE_INFO_V1); V1 nodes from INPUT_TYPES / RETURN_TYPES / OUTPUT_NODE."""
    if hasattr(cls, "GET_NODE_INFO_V1"):
        return cls.GET_NODE_INFO_V1()
    inputs = cls.INPUT_TYPES()
    return {"input": inputs, "input_order": {k: list(v.keys()) for k, v in inputs.items() if isinstance(v, dict)},
            "output": list(getattr(cls, "RETURN_TYPES", ()) or ()), "output_node": bool(getattr(cls, "OUTPUT_NODE", False))}


def live_node_specs(types) -> dict:
    """{node type: spec} (node_specs.spec_from_node_info, plus "pack": the custom node folder it comes from) for the
    given types that this ComfyUI has; a node whose definition fails is left out (the table then says unknown)."""
    from ..estimator.graph.node_specs import spec_from_node_info  # noqa: PLC0415

    try:
        import nodes  # noqa: PLC0415

        mappings = nodes.NODE_CLASS_MAPPINGS
    except Exception:  # noqa: BLE001
        return {}
    out = {}
    for t in list(types)[:MAX_LIVE_SPECS]:
        cls = mappings.get(t)
        if cls is None:
            continue
        try:
            spec = spec_from_node_info(node_info(cls))
        except Exception:  # noqa: BLE001  (a node pack's INPUT_TYPES may fail; its node stays unknown)
            continue
        module = getattr(cls, "RELATIVE_PYTHON_MODULE", "") or ""
        if module.startswith("custom_nodes."):
            spec["pack"] = module.split(".", 2)[1]
        out[t] = spec
    return out
