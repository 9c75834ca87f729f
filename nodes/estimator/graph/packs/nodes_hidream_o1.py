"""ComfyUI 0.33.0 comfy_extras/nodes_hidream_o1.py: HiDream-O1-Image's nodes (families/hidream_o1.py).

- EmptyHiDreamO1LatentImage (:34-40): zeros [batch_size, 3, height, width], the image itself (pixel space).
- HiDreamO1ReferenceImages (:76-80): appends its images to both conditionings' reference_latents; no model and no
  latent of its own. At sampling each reference joins the model's sequence twice (32 px patches at a size set by
  the TARGET image and the number of references, plus its Qwen3-VL ViT tokens: comfy/ldm/hidream_o1/
  conditioning.py:24-80, utils.py:63-82); the conditioning chain does not carry the target size, so those tokens
  are not counted here, and the node says so.
- HiDreamO1PatchSeamSmoothing (:160-242): MODEL -> MODEL wrapper (extra model calls late in sampling, one at a
  time; their stacked outputs are not counted).
"""
from __future__ import annotations

from . import Pack


def _references(a, node) -> list:
    images = [name for name in node.inputs if name.startswith("images.") and a.link(node, name) is not None]
    if images:
        a.note(f"{a.label(node)}: {len(images)} reference image(s) join HiDream-O1's sequence at sampling "
               "(32 px patches at a size set by the target, and ViT tokens); their tokens are not counted "
               "in the sampling working memory")
    return []


PACK = Pack(
    name="nodes_hidream_o1",
    latent_creators={"EmptyHiDreamO1LatentImage": (3, 1, None, None)},
    handled={"HiDreamO1ReferenceImages", "HiDreamO1PatchSeamSmoothing"},
    cond_references={"HiDreamO1ReferenceImages": _references},
)
