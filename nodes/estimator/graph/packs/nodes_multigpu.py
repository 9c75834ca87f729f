"""ComfyUI 0.33.0 comfy_extras/nodes_multigpu.py: its own device nodes (issue 24).

- SelectModelDevice (:161-232), SelectCLIPDevice (:234-280), SelectVAEDevice (:282-347): pass the model through
  on the device the `device` widget names: "default" keeps the loader's device, "cpu" pins it to the CPU
  (not offered for the VAE), "gpu:N" the N-th torch device (model_management.py:246-290,
  get_gpu_device_options / resolve_gpu_device_option). A new patcher with its own weights is spawned on that
  device (cached_patcher_init), so the models upstream are priced on it (placement.py).
- MultiGPU_WorkUnits ("MultiGPU CFG Split", :20-48): a deep copy of the model on up to `max_gpus` cards
  (comfy/multigpu.py:125-197), conds spread over them; read as a pass-through, said in a note.
"""
from __future__ import annotations

from ..base import _replace
from . import Pack

SELECT = {"SelectModelDevice": ("model", "MODEL", "comfy_extras/nodes_multigpu.py:161-232"),
          "SelectCLIPDevice": ("clip", "CLIP", "comfy_extras/nodes_multigpu.py:234-280"),
          "SelectVAEDevice": ("vae", "VAE", "comfy_extras/nodes_multigpu.py:282-347")}


def _device(value) -> str | None:
    """The widget's option as a device name: 'gpu:N' -> 'cuda:N', 'cpu', None for 'default'."""
    if not isinstance(value, str):
        return None
    v = value.strip().lower()
    if v == "cpu":
        return "cpu"
    if v.startswith("gpu:") and v[4:].isdecimal():
        return f"cuda:{int(v[4:])}"
    return None


def _select(node_type: str):
    socket, type_name, where = SELECT[node_type]

    def refs(a, node, slot, type_, visiting):
        if type_ != type_name:
            return []
        upstream = a.refs(a.link(node, socket), type_name, visiting)
        raw = a.value(node, "device")
        dev = _device(raw)
        if dev is None:
            return upstream
        why = f"ComfyUI {node_type} device={raw} ({where})"
        return [_replace(r, device=dev, placed_by=why) if r.role != "lora" else r for r in upstream]

    return refs


def _work_units(a, node, slot, type_, visiting):
    if type_ != "MODEL":
        return []
    gpus = a.number(node, "max_gpus", 2)
    a.note(f"{a.label(node)}: MultiGPU CFG Split puts a full copy of the model on up to {gpus} cards and runs cond "
           "and uncond on different cards (comfy/multigpu.py:125-197); this estimate prices the main card's copy")
    return a.refs(a.link(node, "model"), "MODEL", visiting)


PACK = Pack(name="ComfyUI 0.33 MultiGPU nodes",
            refs={**{t: _select(t) for t in SELECT}, "MultiGPU_WorkUnits": _work_units},
            widgets={"SelectModelDevice": ["device"], "SelectCLIPDevice": ["device"], "SelectVAEDevice": ["device"],
                     "MultiGPU_WorkUnits": ["max_gpus"]})
