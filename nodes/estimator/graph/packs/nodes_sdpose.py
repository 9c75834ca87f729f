"""ComfyUI 0.33.0 comfy_extras/nodes_sdpose.py: SDPose's nodes (families/sdpose.py).

- SDPoseKeypointExtractor (:439-580): MODEL + VAE + IMAGE (+ optional BOUNDING_BOX) -> POSE_KEYPOINT. Each image,
  or each bbox crop of it, is stretched to the heatmap head's fixed 768 x 1024 (:483-492; HeatmapHead defaults,
  ldm/modules/sdpose.py:10-21, whatever the input's size), VAE-encoded and run through one UNet forward
  (comfy.sample.sample steps=1, cfg=1.0, :507-514) with the Lotus null conditioning; then the head decodes the
  captured 640-channel feature (:515).
  * with bboxes (:524-565): one crop at a time: encode + forward of a batch of 1, per crop, per image;
  * without (:567-577): `batch_size` images per call (the last call takes the rest).
  So what one call holds is known from the graph even when the image count is not (a video's frames): at most
  `batch_size` images, an upper bound said in a note.
- SDPoseDrawKeypoints (:369-437), SDPoseFaceBBoxes (:613-669), CropByBBoxes (:672-762): numpy / CPU-side
  drawing and cropping, no model.
"""
from __future__ import annotations

from ...families.sdpose import SDPOSE_INPUT_HEIGHT, SDPOSE_INPUT_WIDTH
from ...workload import SAMPLE, VAE_ENCODE, LatentShape
from ..base import _Link, _replace, from_video
from . import Pack

EXTRACTOR = "SDPoseKeypointExtractor"
_SPATIAL = 8  # the SD KL VAE's /8 (sd.py:661-690, 'vae-kl4')


def head_working_bytes(batch: int, dtype_bytes: int = 2) -> int:
    """The heatmap head's peak tensors for `batch` images (ldm/modules/sdpose.py:66-68; input_size 768 x 1024):
    the captured 640-channel output-block feature at the latent's 96 x 128 (kept by the node, :470-471), and
    a layer's input and output 640 x 192 x 256 maps (ConvTranspose2d x2, then InstanceNorm / 1x1 conv, each
    a new tensor; SiLU is in place)."""
    lat = (SDPOSE_INPUT_WIDTH // _SPATIAL) * (SDPOSE_INPUT_HEIGHT // _SPATIAL)
    heat = (SDPOSE_INPUT_WIDTH // 4) * (SDPOSE_INPUT_HEIGHT // 4)
    return batch * dtype_bytes * 640 * (lat + 2 * heat)


def _fmt_mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def _extractor(a, node):
    image = a.link(node, "image")
    if image is None:
        return None
    per_call = a.number(node, "batch_size", 16) or 16
    if isinstance(node.inputs.get("bboxes"), _Link):
        batch = 1
        a.stage_note("bboxes given: each detected box is cropped, stretched to 768×1024 and encoded + run one at a "
                     "time (nodes_sdpose.py:524-565); the number of boxes changes the time, not the memory")
    else:
        size = None if from_video(a, image) else a.image_size(image)
        if size is not None and size.batch:
            batch = min(size.batch, per_call)
        else:
            batch = per_call
            a.note(f"{a.label(node)}: the number of images (a video's frames) is not known before running: each "
                   f"encode + forward takes at most batch_size = {per_call} of them (nodes_sdpose.py:567-571), "
                   "priced as that upper bound")
    a.stage_note(f"images stretched to the heatmap head's fixed {SDPOSE_INPUT_WIDTH}×{SDPOSE_INPUT_HEIGHT} "
                 "(nodes_sdpose.py:483-492), whatever their own size")
    shape = LatentShape(batch=batch, channels=4, height=SDPOSE_INPUT_HEIGHT // _SPATIAL,
                        width=SDPOSE_INPUT_WIDTH // _SPATIAL, pixel_height=SDPOSE_INPUT_HEIGHT,
                        pixel_width=SDPOSE_INPUT_WIDTH, spatial_compression=_SPATIAL, source_node=node.id,
                        source_type=node.type)
    a.note(f"{a.label(node)}: after the UNet forward the heatmap head decodes the captured feature "
           f"(nodes_sdpose.py:515, ldm/modules/sdpose.py:66-68): {_fmt_mib(head_working_bytes(batch))} at batch "
           f"{batch} (16-bit; computed from its shapes), less than the forward's working memory at that batch, "
           "with the same weights loaded: it does not set the stage's peak")
    # one UNet forward: steps=1, cfg=1.0 (no uncond: samplers.py:610), the Lotus context as positive and negative
    sample = a.sample_stage(node, model_links=[a.link(node, "model")], cond_links=[], cfg=1.0, uses_negative=False,
                            steps=1, latent=shape)
    encode = _replace(sample, kind=VAE_ENCODE, models=tuple(a.refs(a.link(node, "vae"), "VAE")), cfg=None,
                      steps=None)
    return [encode, sample]


def _drawn(a, node, link, depth):
    """SDPoseDrawKeypoints (nodes_sdpose.py:394-411): one canvas per frame at the keypoints' canvas size, which
    the extractor set to its input image's size (:72)."""
    src = a.link(node, "keypoints")
    extractor = a.nodes.get(src.node) if src is not None else None
    if extractor is None or extractor.type != EXTRACTOR:
        return None
    return a.image_size(a.link(extractor, "image"), depth + 1)


PACK = Pack(
    name="nodes_sdpose",
    stage_kinds={EXTRACTOR: SAMPLE},
    stages={EXTRACTOR: _extractor},
    images={"SDPoseDrawKeypoints": _drawn},
    handled={"SDPoseDrawKeypoints", "SDPoseFaceBBoxes", "CropByBBoxes"},
)
