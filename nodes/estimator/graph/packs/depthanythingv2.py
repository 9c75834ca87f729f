"""kijai/ComfyUI-DepthAnythingV2 (nodes.py at 5531878): Depth Anything V2 depth maps (families/depth_anything2.py).

- DownloadAndLoadDepthAnythingV2Model: a file from models/depthanything -> DAMODEL, fp32 modules (the file copied into
  them); ``precision`` ("auto": fp16 when the name says fp16) is the autocast dtype of the activations.
- DepthAnything_V2: moves the model to the GPU by hand and runs ONE frame per forward at the frame's own size rounded
  down to a multiple of 14 (no resize to 518), each depth map moved back to the CPU, then offloads the model. So the
  stage's memory is the fp32 weights and one frame's activations, whatever the frame count.
Working memory: Depth Anything 3's first-principles formula (the same DINOv2 + DPT design), uncalibrated.
"""
from __future__ import annotations

from ...families import depth_anything2 as DA2
from ...families.registry import FAMILIES
from ...machine.resolve import PACK_FP32
from ...workload import SAMPLE
from . import Pack, with_working

LOADER, RUN, DAMODEL = "DownloadAndLoadDepthAnythingV2Model", "DepthAnything_V2", "DAMODEL"


def _loader_refs(a, node, slot, type_, visiting):
    if type_ != DAMODEL:
        return []
    ref = a.loader_ref(node, "model", role="diffusion", folder="depthanything", weight_dtype=PACK_FP32)
    return [ref] if ref else []


def _dtype_bytes(a, node) -> tuple[int, str]:
    refs = a.refs(a.link(node, "da_model"), DAMODEL)
    loader = a.nodes.get(refs[0].loader_node) if refs else None
    precision = str(a.value(loader, "precision") or "auto") if loader is not None else "auto"
    name = (refs[0].name if refs else "").lower()
    if precision == "auto":
        precision = "fp16" if "fp16" in name else "fp32"
    return (4, "fp32") if precision == "fp32" else (2, f"{precision} autocast")


def _run(a, node):
    stage = a.sample_stage(node, model_links=[a.link(node, "da_model")], cond_links=[], cfg=None,
                           uses_negative=False, steps=1, latent=None, model_type=DAMODEL)
    refs = a.refs(a.link(node, "da_model"), DAMODEL)
    size = a.image_size(a.link(node, "images"))
    if not refs or size is None or not size.width or not size.height:
        a.unpriced("the frames' size is not known before they load: Depth Anything V2 runs at each frame's own size")
        return stage
    low = refs[0].name.lower()
    encoder = next((e for e in ("vitg", "vitl", "vitb", "vits") if e in low), "vitl")
    arch = FAMILIES[f"da2-{encoder}"].arch
    h, w = size.height - size.height % 14, size.width - size.width % 14
    nbytes, dtype = _dtype_bytes(a, node)
    width, ffn, features = int(arch["hidden_size"]), int(arch["ffn_dim"]), DA2.ENCODERS[encoder][3]
    tokens, vit, head = DA2.working_bytes(encoder, h, w, nbytes)
    frame = size.width * size.height * 3 * 4
    said = f"{size.width}×{size.height}" + ("" if size.exact else " (assumed)")
    working = (
        ("ViT activations (formula)", vit,
         f"first-principles formula, uncalibrated: one frame per forward (nodes.py process); {said} -> {w}×{h} -> "
         f"{tokens} tokens; ViT width {width}, MLP {ffn}, {dtype}: tokens x (6 x width + 2 x MLP + 4 kept layers x "
         "width)"),
        ("DPT head maps (formula)", head,
         f"first-principles formula, uncalibrated: output_conv1's {features // 2} channels and two 32-channel maps "
         f"at {w}×{h} (dpt.py forward), {dtype}"),
        ("the frame on the GPU", frame, "one float32 frame moved to the GPU per forward (nodes.py process)"),
    )
    return with_working(a, stage, working, "Depth Anything V2", "first-principles formula, uncalibrated; the terms "
                        "are summed although the ViT's and the head's peaks come one after the other")


PACK = Pack(
    name="ComfyUI-DepthAnythingV2",
    stage_kinds={RUN: SAMPLE},
    stages={RUN: _run},
    refs={LOADER: _loader_refs},
    relevant_types={DAMODEL},
    widgets={LOADER: ["model", "precision"]},
    output_types={LOADER: [DAMODEL], RUN: ["IMAGE"]},
    input_types={RUN: {"da_model": DAMODEL, "images": "IMAGE"}},
)
