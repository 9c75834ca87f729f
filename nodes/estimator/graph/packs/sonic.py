"""smthemex/ComfyUI_Sonic (sonic_node.py, sonic.py at 8556234): Sonic's audio-driven portrait video on SVD.

- SONICTLoader: builds the pack's own SVD UNet on the GPU in its ``dtype`` widget, fills it from ComfyUI's SVD MODEL
  and models/sonic/``sonic_unet`` (with 32-token audio adapters: families/sonic.py), and RIFE (float32) when
  ``use_interframe``; both stay on the GPU, outside ComfyUI's model management (the pack places them: manager SONIC,
  the whole model, no partial load), until the sampler moves the UNet back to the CPU.
- SONIC_PreData: whisper-tiny, audio2token, audio2bucket and the YOLOv5m-face detector in float32 on the GPU (the
  UNet already there), then ComfyUI's CLIP vision encode of the image and its VAE encode at the reference size: the
  image's short side at ``min_resolution``, the long side rounded to 64 (test_preprocess.py:137-139). The audio is
  read for min(``duration``, its length): at most ``duration`` x 25 / 2 frames.
- SONICSampler: three-way guidance in one batch, over windows of int(``fps``) frames (sonic.py test:
  frames_per_batch), so each UNet forward sees 3 x fps frames whatever the audio's length; then ComfyUI's VAE decodes
  14 frames at a time (decode_latents_) and RIFE doubles the frames on the GPU in float32.

Simplification, said in the estimate: the estimate keeps the UNet on the card after sampling too (the decode runs
after the pipeline's .to("cpu")): an upper bound for the decode only.
"""
from __future__ import annotations

import math

from ...families import sonic as S
from ...machine.resolve import PACK_16BIT, PACK_FP32
from ...machine.runtime import SONIC
from ...workload import AUDIO_ENCODE, SAMPLE, VAE_DECODE, LatentShape, Stage
from ..base import _replace
from . import Pack, loader, with_working

LOADER, PREDATA, SAMPLER = "SONICTLoader", "SONIC_PreData", "SONICSampler"
MODEL = "MODEL_SONIC"
FP32 = 4
WHY = "first-principles formula, uncalibrated"


@loader
def _loader(a, node, slot, type_, visiting):
    """The pack's UNet: its file in models/sonic, at the dtype widget (fp32: 4 bytes a weight, else 2)."""
    if type_ != MODEL:
        return []
    dtype = PACK_FP32 if a.value(node, "dtype") == "fp32" else PACK_16BIT
    ref = a.loader_ref(node, "sonic_unet", role="diffusion", folder="sonic", weight_dtype=dtype, hint="sonic")
    return [ref] if ref else []


def _loader_node(a, node):
    """The SONICTLoader behind a sampler's MODEL_SONIC, or None."""
    found = a.nodes.get(getattr(a.link(node, "model"), "node", None))
    return found if found is not None and found.type == LOADER else None


def _rife(a, loader_node) -> list:
    if loader_node is None or a.value(loader_node, "use_interframe") is False:
        return []
    return [("RIFE IFNet, float32 (on the GPU from the loader on)", S.P_RIFE_IFNET * FP32,
             "ComfyUI_Sonic's IFNet counted on the meta device (families/sonic.py)")]


def _reference_size(a, node):
    """(width, height, exact) of the reference: the image's short side at min_resolution, the long side rounded to a
    multiple of 64 (test_preprocess.py:137-139)."""
    size = a.image_size(a.link(node, "image"))
    short = min(max(a.number(node, "min_resolution", 512) or 512, 64), 2048)
    if size is None or not size.width or not size.height:
        return short, short, False
    scale = short / min(size.width, size.height)
    return (max(64, round(size.width * scale / 64) * 64), max(64, round(size.height * scale / 64) * 64),
            size.exact)


def _predata(a, node):
    """The audio models' own stage (the UNet held), then ComfyUI's CLIP vision encode and VAE encode."""
    sampler = next((n for n in a.nodes.values() if n.type == SAMPLER and getattr(a.link(n, "data_dict"), "node", None)
                    == node.id), None)
    loader_node = _loader_node(a, sampler) if sampler is not None else None
    unet = tuple(a.refs(a.link(sampler, "model"), MODEL)) if sampler is not None else ()
    audio = Stage(kind=AUDIO_ENCODE, node_id=node.id, node_type=node.type, models=unet, manager=SONIC)
    # whisper-tiny over one 30 s window: 1,500 tokens of 384; YOLOv5m-face at 416 px on the short side
    whisper_tokens, width = 1500, 384
    working = [
        ("whisper-tiny, audio2token, audio2bucket (float32)",
         (S.P_WHISPER_TINY + S.P_AUDIO2TOKEN + S.P_AUDIO2BUCKET) * FP32,
         "ComfyUI_Sonic's classes counted on the meta device (families/sonic.py)"),
        ("YOLOv5m-face detector (float32, by its name)", S.P_YOLOV5M_FACE * FP32,
         "deepcam-cn/yolov5-face's table for YOLOv5m: 21.063M parameters"),
        ("whisper's activations (formula)", whisper_tokens * width * 4 * 8 * FP32,
         f"{WHY}: 1,500 tokens x 384, 4 layers, 8 tensors each, float32"),
        ("the detector's feature maps (formula)", 416 * 416 * 48 * 6 * FP32 // 4,
         f"{WHY}: YOLOv5m's first stage, 48 channels at 416² / 2, 6 maps alive, float32"),
    ] + _rife(a, loader_node)
    audio = with_working(a, audio, working, "Sonic's audio models", WHY)
    w, h, exact = _reference_size(a, node)
    if not exact:
        a.stage_note(f"{node.type}: the image's size is not fixed by the graph: a square reference of {w}x{h} "
                     "assumed (its short side is min_resolution, the long side follows the image)")
    clip = a.clip_vision_stage(node)
    encode = a.encode_stage(node, pixels="image")
    latent = LatentShape(batch=1, channels=4, height=h // 8, width=w // 8, pixel_height=h, pixel_width=w,
                         spatial_compression=8, source_node=node.id, source_type=node.type)
    out = [audio, clip]
    if encode is not None:
        out.append(_replace(encode, latent=latent))
    return out


def _frames(a, sampler):
    """Frames of the video: the audio read for min(duration, its length), 25 features a second, 2 per frame."""
    predata = a.nodes.get(getattr(a.link(sampler, "data_dict"), "node", None))
    duration = a.number(predata, "duration", 10.0, integer=False) if predata is not None else None
    if duration is None or duration <= 0:
        return None
    return max(1, min(int(16000 * min(duration, 100_000.0)) // 640 // 2, 1_000_000))


def _sample(a, node):
    loader_node = _loader_node(a, node)
    predata = a.nodes.get(getattr(a.link(node, "data_dict"), "node", None))
    models = tuple(a.refs(a.link(node, "model"), MODEL))
    fps = min(max(int(a.number(node, "fps", 25.0, integer=False) or 25), 1), 120)
    w, h, _ = _reference_size(a, predata) if predata is not None else (512, 512, False)
    frames = _frames(a, node)
    window = fps  # the windows wrap around the video (modulo its frames): always fps frames a forward
    latent = LatentShape(batch=3 * window, channels=4, height=h // 8, width=w // 8, frames=1, pixel_height=h,
                         pixel_width=w, spatial_compression=8, source_node=node.id, source_type=node.type)
    a.stage_note(f"Sonic: three-way guidance over windows of {window} frames (fps): each forward is {3 * window} "
                 "frames, whatever the audio's length")
    steps = a.number(node, "inference_steps")
    windows = math.ceil((frames or window) / window)
    if steps is not None and windows > 1:
        a.stage_note(f"{windows} windows a step (the video's {frames} frames at most, duration x 12.5)")
        steps *= windows
    sample = a.sample_stage(node, model_links=[a.link(node, "model")], cond_links=[], cfg=None,
                            uses_negative=False, steps=steps, model_type=MODEL, latent=latent, manager=SONIC)
    sample = _replace(sample, models=models)
    vae = tuple(a.refs(a.link(predata, "vae"), "VAE")) if predata is not None else ()
    total = frames or window
    chunk = min(14, total)
    decode = Stage(kind=VAE_DECODE, node_id=node.id, node_type=node.type, models=vae,
                   latent=LatentShape(batch=chunk, channels=4, height=h // 8, width=w // 8, pixel_height=h,
                                      pixel_width=w, spatial_compression=8, source_node=node.id,
                                      source_type=node.type))
    if loader_node is not None and a.value(loader_node, "use_interframe") is not False:
        # RIFE after the decode, the UNet off the card: the decoded video and the doubled one on the GPU, float32
        video = (2 * total - 1 + total) * 3 * h * w * FP32
        a.note(f"{a.label(node)}: RIFE then doubles the frames on the GPU ({2 * total - 1} frames of {w}x{h}, "
               f"~{math.ceil(video / 2**20)} MiB in float32 with the decoded video, and its 12 MiB network), with the "
               "UNet off the card: below the decode's figure, which keeps the UNet (an upper bound)")
    return [sample, decode]


PACK = Pack(
    name="ComfyUI_Sonic",
    refs={LOADER: _loader},
    stage_kinds={PREDATA: AUDIO_ENCODE, SAMPLER: SAMPLE},
    stages={PREDATA: _predata, SAMPLER: _sample},
    relevant_types={MODEL, "SONIC_PREDATA"},
    widgets={LOADER: ["sonic_unet", "ip_audio_scale", "use_interframe", "dtype"],
             PREDATA: ["min_resolution", "duration", "expand_ratio"],
             SAMPLER: ["seed", "inference_steps", "dynamic_scale", "fps"]},
    output_types={LOADER: [MODEL, "DTYPE"], PREDATA: ["SONIC_PREDATA"], SAMPLER: ["IMAGE", "FLOAT"]},
    input_types={LOADER: {"model": "MODEL"},
                 PREDATA: {"clip_vision": "CLIP_VISION", "vae": "VAE", "audio": "AUDIO", "image": "IMAGE",
                           "weight_dtype": "DTYPE"},
                 SAMPLER: {"model": MODEL, "data_dict": "SONIC_PREDATA"}},
)
