"""ComfyUI 0.33.0 comfy_extras/nodes_moge.py: MoGe's nodes (families/moge.py).

- LoadMoGeModel (:64-81): a file from models/geometry_estimation -> MOGE_MODEL (MoGeModel, model.py:267-280).
- MoGeInference (:210-262): `batch_size` images per moge_model.infer call (:246-249), each call one ViT forward at
  the token count `resolution_level` sets (model.py:293-295); load_model_gpu (model.py:288).
- MoGePanoramaInference (:84-207): one panorama split into 12 perspective views (get_panorama_cameras, panorama.py:
  68-75) of split_resolution x split_resolution (:129), `batch_size` views per infer call (:153-158).
- MoGeRender / MoGePointMapToMesh / MoGeGeometryToFOV: CPU-side post-processing of the geometry, no model.
Working memory: families/moge.py's first-principles formula (ViT block + kept layers + the head's code-fixed maps),
uncalibrated.
"""
from __future__ import annotations

from ...families import moge as F
from ...families.registry import FAMILIES
from ...units import fmt_mib
from ...workload import SAMPLE
from ..base import _replace
from . import Pack, model_file_loader

INFER, PANORAMA, LOADER = "MoGeInference", "MoGePanoramaInference", "LoadMoGeModel"
PANORAMA_VIEWS = 12  # panorama.py:68-75 (icosahedron views)


def _family(a, node):
    refs = a.refs(a.link(node, "moge_model"), "MOGE_MODEL")
    fam = F.family_of((refs[0].name if refs else "") or "")
    return fam, FAMILIES[fam].arch



def _stage(a, node, batch: int, aspect: float | None, what: str, pixels: tuple[int, int, str] | None = None):
    fam, arch = _family(a, node)
    version = int(arch.get("version", 2))
    level = a.number(node, "resolution_level", 9)
    level = 9 if level is None else level
    n = F.num_tokens(version, level)
    rows, cols = F.patch_grid(version, n, aspect or 1.0)
    tokens = rows * cols + 1  # + cls (dino2.py:312: no register tokens)
    width, ffn = int(arch["hidden_size"]), int(arch["ffn_dim"])
    vit = F.vit_working_bytes(tokens, width, ffn, batch)
    head = F.head_working_bytes(version, rows, cols, batch)
    aspect_said = "" if aspect else " (square assumed: the product rows x cols stays ~num_tokens for any aspect)"
    why = (f"first-principles formula, uncalibrated: {batch} image(s) per call ({what}); resolution_level {level} -> "
           f"num_tokens {n} (model.py:293-295) -> {rows}x{cols} patches + cls = {tokens} tokens{aspect_said}; "
           f"ViT width {width}, FFN {ffn}: tokens x (6 x width + 2 x FFN + 4 kept layers x width) x 2 bytes")
    head_why = ("first-principles formula, uncalibrated: the head's maps whose channels the code fixes "
                + ("(16 x base level: UV 2 + points 3 + mask 1 + normal 3 channels, model.py:136-152); the neck's "
                   "and heads' channel widths come from the file (model.py:183-205): their maps are not counted" if version == 2 else
                   "(HeadV1's last 130-channel map, modules.py:201-203)"))
    working = [("ViT activations (formula)", vit, why), ("head maps (formula)", head, head_why)]
    if pixels is not None:
        w, h, said = pixels
        working.append(("input-size maps (formula)", batch * w * h * F.INPUT_SIZE_BYTES_PER_PIXEL,
                        f"first-principles formula, uncalibrated: at {said} {w}×{h}: the float32 input (model.py:289), "
                        "points / mask / normal resized to it (model.py:142-152) and the float32 points (model.py:298)"))
    total = sum(n for _, n, _ in working)
    a.stage_note(f"MoGe working memory ~{fmt_mib(total)} (first-principles formula, uncalibrated; the terms are summed "
                 "although the ViT's and the head's peaks come one after the other)")
    stage = a.sample_stage(node, model_links=[a.link(node, "moge_model")], cond_links=[], cfg=None,
                           uses_negative=False, steps=1, latent=None, model_type="MOGE_MODEL")
    return _replace(stage, working=tuple(working))


def _infer(a, node):
    image = a.link(node, "image")
    if image is None or a.link(node, "moge_model") is None:
        return None
    per_call = a.number(node, "batch_size", 4) or 4
    size = a.image_size(image)
    if size is not None and size.batch:
        batch = min(size.batch, per_call)
        what = f"{size.batch} image(s), batch_size {per_call} (nodes_moge.py:246-249)"
    else:
        batch = per_call
        what = f"image count unknown: batch_size {per_call} per call (nodes_moge.py:246-249), an upper bound"
    known = size is not None and size.width and size.height
    aspect = (size.width / size.height) if known else None
    pixels = (size.width, size.height, "the input's" if size.exact else "the input's (assumed)") if known else None
    if not known:
        a.note(f"{a.label(node)}: the input's own size is not known: the maps MoGe makes at it (model.py:142-152, "
               ":289, :298) are not counted")
    return _stage(a, node, batch, aspect, what, pixels)


def _panorama(a, node):
    if a.link(node, "image") is None or a.link(node, "moge_model") is None:
        return None
    per_call = a.number(node, "batch_size", 4) or 4
    split = a.number(node, "split_resolution", 512) or 512
    batch = min(per_call, PANORAMA_VIEWS)
    a.stage_note(f"panorama split into {PANORAMA_VIEWS} views of {split}×{split} (nodes_moge.py:124-129, panorama.py:"
                 f"68-75), {batch} per infer call (:153-158)")
    return _stage(a, node, batch, 1.0, f"{PANORAMA_VIEWS} square {split}-px views, batch_size {per_call}, "
                  "nodes_moge.py:153-158", (split, split, "each view's"))


def _rendered(a, node, link, depth):
    """MoGeRender (nodes_moge.py:285-330): the geometry's maps, which MoGeInference upsampled back to its input
    image's size (comfy/ldm/moge/model.py:80-83)."""
    src = a.link(node, "moge_geometry")
    infer = a.nodes.get(src.node) if src is not None else None
    if infer is None or infer.type != INFER:
        return None
    return a.image_size(a.link(infer, "image"), depth + 1)


PACK = Pack(
    name="nodes_moge",
    images={"MoGeRender": _rendered},
    stage_kinds={INFER: SAMPLE, PANORAMA: SAMPLE},
    stages={INFER: _infer, PANORAMA: _panorama},
    refs={LOADER: model_file_loader("model_name", "geometry_estimation", "MOGE_MODEL")},
    relevant_types={"MOGE_MODEL"},
    widgets={LOADER: ["model_name"], INFER: ["resolution_level", "fov_x_degrees", "batch_size", "force_projection",
                                             "apply_mask"],
             PANORAMA: ["resolution_level", "split_resolution", "merge_resolution", "batch_size"]},
    handled={"MoGeRender", "MoGePointMapToMesh", "MoGeGeometryToFOV"},
)
