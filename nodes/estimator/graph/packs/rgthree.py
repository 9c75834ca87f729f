"""rgthree/rgthree-comfy: the Power Lora Loader (py/power_lora_loader.py at 13b4399).

Its LoRAs are not sockets or named widgets: each row of the node is a value ``{"on", "lora", "strength",
"strengthTwo"}`` (an API prompt's inputs ``lora_1``, ``lora_2`` ...; a UI workflow's widgets_values). ``load_loras``
applies every row that is on with a strength other than 0 through core's ``LoraLoader().load_lora`` (:37-57): the model
takes ``strength``, the CLIP ``strengthTwo`` when given (else ``strength``; 0 when no CLIP is linked), and nothing is
applied when no MODEL is linked. Each such LoRA is priced as core's LoraLoader prices its file.
"""
from __future__ import annotations

from ...workload import ModelRef
from . import Pack

POWER_LORA = "Power Lora Loader (rgthree)"
MAX_ROWS = 200  # a UI can add rows without end; more than this is read as the first 200


def _rows(node) -> list[dict]:
    values = list(node.inputs.values()) + list(node.unnamed)
    rows = [v for v in values if isinstance(v, dict) and {"on", "lora", "strength"} <= set(v)]
    return rows[:MAX_ROWS]


def _strength(value, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _power_lora(a, node, slot, type_, visiting):
    if (slot, type_) not in ((0, "MODEL"), (1, "CLIP")):
        return []
    model_link, clip_link = a.link(node, "model"), a.link(node, "clip")
    base = a.refs(model_link if slot == 0 else clip_link, type_, visiting)
    if model_link is None or (slot == 1 and clip_link is None):  # nothing applied without a model; no CLIP, no CLIP
        return base
    out = list(base)
    for row in _rows(node):
        name = row.get("lora")
        if not row.get("on") or not isinstance(name, str) or not name.strip() or name == "None":
            continue
        strength_model = _strength(row.get("strength"), 1.0)
        # strengthTwo for the CLIP when given (None: the model's)
        strength = strength_model if slot == 0 else _strength(row.get("strengthTwo"), strength_model)
        if strength == 0:
            continue
        out.append(ModelRef(name=name.strip(), role="lora", folder="loras", loader_node=node.id,
                            loader_type=node.type, strength=strength))
    return out


PACK = Pack(
    name="rgthree-comfy",
    output_types={POWER_LORA: ["MODEL", "CLIP"]},
    refs={POWER_LORA: _power_lora},
)
