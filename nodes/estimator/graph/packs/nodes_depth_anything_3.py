"""ComfyUI 0.33.0 comfy_extras/nodes_depth_anything_3.py: Depth Anything 3's nodes (families/depth_anything3.py).

- LoadDA3Model (:132-165): comfy.sd.load_diffusion_model of a models/geometry_estimation file -> DA3_MODEL.
- DA3Inference (:212-366): mode "mono" -> _run_da3 (:168-209): load_model_gpu (:173), then ONE image per forward
  (:179-184), resized by preprocess.compute_target_size (`resolution`, `resize_method`); the multi-view modes run
  all views together (:314-330) and are not priced here.
- DA3Render / DA3GeometryToMesh / DA3GeometryToPointCloud: CPU-side post-processing, no model.
Working memory: families/depth_anything3.py's first-principles formula, uncalibrated.
"""
from __future__ import annotations

from ...families import depth_anything3 as F
from ...families.registry import FAMILIES
from ...units import fmt_mib
from ...workload import SAMPLE
from ..base import _replace
from . import Pack

INFER, LOADER = "DA3Inference", "LoadDA3Model"


def _loader_refs(a, node, slot, type_, visiting):
    if type_ != "DA3_MODEL":
        return []
    dtype = a.value(node, "weight_dtype")
    return [a.loader_ref(node, "model_name", role="diffusion", folder="geometry_estimation",
                          weight_dtype=str(dtype) if isinstance(dtype, str) else None)]


def _family(a, node):
    refs = a.refs(a.link(node, "da3_model"), "DA3_MODEL")
    low = ((refs[0].name if refs else "") or "").lower()
    fam = "da3-small" if "small" in low else ("da3-base" if "base" in low else "da3-large")
    return fam, FAMILIES[fam].arch



def _infer(a, node):
    image = a.link(node, "image")
    if image is None or a.link(node, "da3_model") is None:
        return None
    res = a.number(node, "resolution", 504) or 504
    method = a.value(node, "resize_method", "upper_bound_resize")
    method = method if method in ("upper_bound_resize", "lower_bound_resize") else "upper_bound_resize"
    mode = a.value(node, "mode", "mono")
    stage = a.sample_stage(node, model_links=[a.link(node, "da3_model")], cond_links=[], cfg=None,
                           uses_negative=False, steps=1, latent=None, model_type="DA3_MODEL")
    if isinstance(mode, str) and mode != "mono":
        a.unpriced(f"mode '{mode}' runs all views in one forward "
                   "(nodes_depth_anything_3.py:314-330); the view count is known only at run time")
        return stage
    size = a.image_size(image)
    known = size is not None and size.width and size.height
    if known and (size.exact or method != "upper_bound_resize"):
        h, w = F.target_size(size.height, size.width, res, method)
        said = f"the input's {size.width}×{size.height}" + ("" if size.exact else " (assumed)")
    elif method == "upper_bound_resize":
        h = w = F.target_size(res, res, res, method)[0]  # the longest side = resolution: a square is the most
        said = "input size unknown: a square input, the most tokens upper_bound_resize allows"
    else:
        a.unpriced(f"lower_bound_resize scales the shortest side to {res} "
                   "(preprocess.py:24-39); the longest follows the input's aspect ratio, unknown before it loads")
        return stage
    _fam, arch = _family(a, node)
    width, ffn = int(arch["hidden_size"]), int(arch["ffn_dim"])
    tokens = (h // F.PATCH) * (w // F.PATCH) + 1  # + cls (dino2.py:312: no register tokens)
    vit = F.vit_working_bytes(tokens, width, ffn)
    head = F.head_working_bytes(h, w)
    why = (f"first-principles formula, uncalibrated: one image per forward (nodes_depth_anything_3.py:179-184); "
           f"{said} -> {w}×{h} ({method}, resolution {res}, preprocess.py:24-39) -> {tokens} tokens; ViT width "
           f"{width}, FFN {ffn}: tokens x (6 x width + 2 x FFN + 4 kept layers x width) x 2 bytes")
    head_why = (f"first-principles formula, uncalibrated: DPT maps at {w}×{h} (dpt.py:272-296): features/2 = "
                f"{F.HEAD_FEATURES // 2} (features {F.HEAD_FEATURES}, the model.py:74 default) + 2 x 32 channels x 2 bytes")
    working = [("ViT activations (formula)", vit, why), ("DPT head maps (formula)", head, head_why)]
    if known:
        working.append(("input-size maps (formula)", size.width * size.height * F.INPUT_SIZE_BYTES_PER_PIXEL,
                        f"first-principles formula, uncalibrated: at the input's {size.width}×{size.height}"
                        f"{'' if size.exact else ' (assumed)'}: the float32 image on the GPU "
                        "(nodes_depth_anything_3.py:180) and one float32 map resized back to it (:186-204)"))
    else:
        a.note(f"{a.label(node)}: the input's own size is not known: the float32 image and maps _run_da3 holds at "
               "it (nodes_depth_anything_3.py:180-204) are not counted")
    total = sum(n for _, n, _ in working)
    a.stage_note(f"Depth Anything 3 working memory ~{fmt_mib(total)} (first-principles formula, uncalibrated; the terms "
                 "are summed although the ViT's and the head's peaks come one after the other)")
    return _replace(stage, working=tuple(working))


PACK = Pack(
    name="nodes_depth_anything_3",
    stage_kinds={INFER: SAMPLE},
    stages={INFER: _infer},
    refs={LOADER: _loader_refs},
    relevant_types={"DA3_MODEL"},
    widgets={LOADER: ["model_name", "weight_dtype"], INFER: ["resolution", "resize_method", "mode"]},
    handled={"DA3Render", "DA3GeometryToMesh", "DA3GeometryToPointCloud"},
)
