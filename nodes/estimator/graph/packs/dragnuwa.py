"""chaojie/ComfyUI-DragNUWA (nodes.py at bd9f53f): 'Load CheckPoint DragNUWA' builds the whole DragNUWA network in
float32 on the GPU (families/dragnuwa.py) and returns it as a DragNUWA object; 'DragNUWA Run' and 'DragNUWA Run
MotionBrush' sample 14 frames at the loader's dimension with CFG batched (2 x 14 frames a call) and decode them one at
a time, with that network. The motion-brush nodes read the network's sizes only. The pack places the network itself
(machine/runtime.py BLOCK_SWAP_RULES: the whole network, no partial load) and never takes it off the GPU."""
from __future__ import annotations

from ...families import dragnuwa as DN
from ...machine.resolve import PACK_FP32
from ...machine.runtime import DRAGNUWA
from ...workload import SAMPLE, LatentShape, ModelRef, Stage
from ..base import _replace
from . import Pack, loader, traced_working

LOADER, MODEL = "Load CheckPoint DragNUWA", "DragNUWA"
RUNS = ("DragNUWA Run", "DragNUWA Run MotionBrush")
SIZES = ("576x320", "512x512", "320x576")  # the loader's dimension options


@loader
def _loader(a, node, slot, type_, visiting):
    """Its checkpoint (models/checkpoints), built as fp32 modules whatever the file's dtype."""
    if type_ != MODEL:
        return []
    ref = a.loader_ref(node, "ckpt_name", role="diffusion", folder="checkpoints", weight_dtype=PACK_FP32,
                       hint=DN.FAMILY)
    return [ref] if ref else []


def _dimension(a, link):
    node = a.nodes.get(getattr(link, "node", None))
    value = str(a.value(node, "dimension") or "") if node is not None and node.type == LOADER else ""
    return tuple(int(v) for v in value.split("x")) if value in SIZES else None


def _run(a, node):
    link = a.link(node, "model")
    models = tuple(r for r in a.refs(link, MODEL) if isinstance(r, ModelRef))
    stage = Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, models=models, cfg=None, uses_negative=False,
                  steps=DN.STEPS, manager=DRAGNUWA)
    size = _dimension(a, link)
    if size is None:
        a.unpriced("the DragNUWA loader's dimension is not one of its options (576x320, 512x512, 320x576)")
        return stage
    width, height = size
    unet, flow = DN.TRACE[size]
    # the frames are the UNet's batch, cond and uncond together (2 x 14): the latent times a step (its memory is the
    # trace's)
    stage = _replace(stage, latent=LatentShape(batch=2 * DN.FRAMES, channels=4, height=height // 8, width=width // 8,
                                               pixel_height=height, pixel_width=width, spatial_compression=8,
                                               source_node=node.id, source_type=node.type))
    return traced_working(a, stage, "DragNUWA UNet call, CFG batch of 2 x 14 frames", DN.FAMILY, unet + flow,
                          f"{DN.TRACE_SOURCE}, {width}x{height}",
                          f"DragNUWA at {width}x{height}, 14 frames, cond and uncond together (float32)")


PACK = Pack(
    name="ComfyUI-DragNUWA",
    refs={LOADER: _loader},
    stage_kinds={t: SAMPLE for t in RUNS},
    stages={t: _run for t in RUNS},
    handled={"BrushMotion", "CompositeMotionBrush", "Load MotionBrush From Tracking Points",
             "Load MotionBrush From Optical Flow", "Load MotionBrush From Optical Flow Directory"},
    relevant_types={MODEL},
    widgets={LOADER: ["ckpt_name", "dimension", "model_length"],
             "DragNUWA Run": ["tracking_points", "inference_batch_size", "motion_bucket_id", "use_optical_flow",
                              "directory"],
             "DragNUWA Run MotionBrush": ["inference_batch_size", "motion_bucket_id"]},
    output_types={LOADER: [MODEL], "DragNUWA Run": ["IMAGE"], "DragNUWA Run MotionBrush": ["IMAGE"],
                  "BrushMotion": ["MotionBrush"], "CompositeMotionBrush": ["MotionBrush"]},
    input_types={"DragNUWA Run": {"model": MODEL, "image": "IMAGE"},
                 "DragNUWA Run MotionBrush": {"model": MODEL, "image": "IMAGE", "motion_brush": "MotionBrush"},
                 "BrushMotion": {"model": MODEL, "motion_brush": "MotionBrush", "brush_mask": "MASK"},
                 "CompositeMotionBrush": {"model": MODEL, "motion_brush_layer0": "MotionBrush",
                                          "motion_brush_layer1": "MotionBrush"}},
)
