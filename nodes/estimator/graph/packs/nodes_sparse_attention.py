"""ComfyUI's comfy_extras/nodes_sparse_attention.py (newer than 0.33): BlockSparseAttention patches a MODEL's
attention so each query block attends a selected subset of key blocks through comfy_kitchen's kernels ("reducing
attention compute"; outside its schedule the model's own dense attention backend runs). MODEL in, the same model
out: no weights, no memory of its own that the fused dense path would not hold, so the MODEL passes through.
The official FastVideo / FastH3 templates use it."""
from __future__ import annotations

from . import Pack

PACK = Pack(
    name="nodes_sparse_attention",
    handled={"BlockSparseAttention"},
    input_types={"BlockSparseAttention": {"model": "MODEL"}},
    output_types={"BlockSparseAttention": ["MODEL"]},
)
