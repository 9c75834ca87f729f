"""ComfyUI 0.33.0 comfy_extras/nodes_bg_removal.py: background removal (families/birefnet.py).

- LoadBackgroundRemovalModel (:7-27): a file from models/background_removal -> BACKGROUND_REMOVAL
  (comfy/bg_removal_model.py load: BiRefNet, the only model it knows, :13-15, :61-63).
- RemoveBackground (:30-50): BACKGROUND_REMOVAL + IMAGE -> MASK through encode_image (bg_removal_model.py:43-58):
  ``load_model_gpu`` of the model, the batch to the GPU, resized to 1024 x 1024, one image at a time through the
  model, the mask resized back to the input's size. Working memory TRACED (families/birefnet.py): a constant
  forward plus 16 MiB per further image, or the batch itself on the GPU (12 bytes a pixel) when that is larger.
  The image count and size come from the graph (LoadImage: the file's size with the input media reader, else an
  assumed 1 megapixel, said); a loaded video's frames are known only at run time: not estimated.
"""
from __future__ import annotations

from ...physics import memory
from ...families import birefnet as F
from ...units import fmt_mib
from ...workload import SAMPLE
from ..base import _replace, from_video
from . import Pack, model_file_loader

LOADER, REMOVE = "LoadBackgroundRemovalModel", "RemoveBackground"
MODEL_TYPE = "BACKGROUND_REMOVAL"



def _remove(a, node):
    model, image = a.link(node, "bg_removal_model"), a.link(node, "image")
    if model is None or image is None:
        return None
    stage = a.sample_stage(node, model_links=[model], cond_links=[], cfg=None, uses_negative=False, steps=1,
                           latent=None, model_type=MODEL_TYPE)
    size = a.image_size(image)
    if size is None or not (size.width and size.height) or from_video(a, image):
        a.unpriced("the input's size and image / frame count are known only at run "
                   f"time (a loaded video): BiRefNet's forward is a constant ({fmt_mib(F.BIREFNET_FORWARD)} traced at "
                   f"{F.BIREFNET_SIZE}×{F.BIREFNET_SIZE}, + 16 MiB per further image), but the whole batch goes to "
                   "the GPU first as float32 (12 bytes a pixel, bg_removal_model.py:45)")
        return stage
    images = max(1, size.batch or 1)
    said = f"{images} image(s) of {size.width}×{size.height}" + ("" if size.exact else
                                                                   " (assumed: 1 megapixel, the file's size is not "
                                                                   "known here)")
    what, traced = max(F.phases(size.width, size.height, images), key=lambda p: p[1])
    k = memory.calibration("birefnet")
    why = (f"{F.BIREFNET_TRACE_SOURCE}: {said}; at the peak ({what}) {fmt_mib(traced)} × {k} for the allocator and "
           "untraced transients (families/birefnet.py: the forward of one 1024×1024 image + 16 MiB per further "
           "image, or the float32 batch on the GPU with its resize)")
    a.stage_note(f"RemoveBackground working memory ~{fmt_mib(int(traced * k))}: traced {fmt_mib(traced)} ({what}) × {k}")
    a.note(f"{a.label(node)}: BiRefNet runs on the GPU (bg_removal_model.py:44 load_model_gpu; every image resized "
           f"to {F.BIREFNET_SIZE}×{F.BIREFNET_SIZE}, one at a time); its working memory is traced "
           "(families/birefnet.py)")
    return _replace(stage, working=((f"BiRefNet activations (traced, {what})", int(traced * k), why),))


PACK = Pack(
    name="nodes_bg_removal",
    stage_kinds={REMOVE: SAMPLE},
    stages={REMOVE: _remove},
    refs={LOADER: model_file_loader("bg_removal_name", "background_removal", MODEL_TYPE)},
    relevant_types={MODEL_TYPE},
    widgets={LOADER: ["bg_removal_name"]},
)
