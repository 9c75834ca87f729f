"""This pack's own nodes: the VRAM Budget node, VAE Decode/Encode (Auto Tiled), the Wan planner."""
from __future__ import annotations

from ..base import _replace, _UNKNOWN
from . import Pack

WAN_PLANNERS = {"VRAMBudgetWanPlanner"}


def _wan_planner_value(a, node, link, depth, sub):
    """The planner's width/height/length outputs are at most the requested ones."""
    if link.slot >= 3:
        return _UNKNOWN
    name = ("width", "height", "length")[link.slot]
    seconds = sub("seconds")
    if name == "length" and isinstance(seconds, (int, float)) and seconds > 0:
        return _UNKNOWN  # the length follows from seconds x the model's fps
    requested = sub(name)
    if requested is not _UNKNOWN:
        a.note(f"{a.label(node)}: planned {name} is at most the requested {requested}; the request is used")
    return requested


def _auto_decode(a, node):
    return _replace(a.decode_stage(node), auto_tiled=True)


def _auto_encode(a, node):
    stage = a.encode_stage(node)
    return _replace(stage, auto_tiled=True) if stage else None


PACK = Pack(
    name="comfyui-vram-budget",
    vae_decoders={"VAEDecodeAutoTiled"},
    vae_encoders={"VAEEncodeAutoTiled"},
    output_nodes={"VRAMBudget"},
    handled=WAN_PLANNERS,
    values={t: _wan_planner_value for t in WAN_PLANNERS},
    stages={"VAEDecodeAutoTiled": _auto_decode, "VAEEncodeAutoTiled": _auto_encode},
)
