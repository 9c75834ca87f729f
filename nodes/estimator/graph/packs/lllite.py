"""kohya-ss/ControlNet-LLLite-ComfyUI (node_control_net_lllite.py): LLLiteLoader builds one LLLiteModule per projection
the file holds, sets them as the model's attn1 / attn2 patches and embeds the control image once
(set_cond_image). ComfyUI moves a model's patches with it (model_patches_to), so the modules ride on the MODEL it
returns (role "lllite", families/lllite.py) as memory that does not stream. The files live in the pack's own
models/ folder, not ComfyUI's: priced from the name (cond_emb_dim and mlp_dim)."""
from __future__ import annotations

from . import Pack

LOADER = "LLLiteLoader"


def _loader(a, node, slot, type_, visiting):
    if type_ != "MODEL":
        return []
    refs = list(a.refs(a.link(node, "model"), "MODEL", visiting))
    ref = a.loader_ref(node, "model_name", role="lllite", folder="lllite")
    return refs + ([ref] if ref is not None and ref not in refs else [])


PACK = Pack(
    name="ControlNet-LLLite-ComfyUI",
    refs={LOADER: _loader},
    widgets={LOADER: ["model_name", "strength", "steps", "start_percent", "end_percent"]},
    output_types={LOADER: ["MODEL"]},
    input_types={LOADER: {"model": "MODEL", "cond_image": "IMAGE"}},
)
