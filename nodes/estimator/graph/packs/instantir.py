"""smthemex/ComfyUI_InstantIR_Wrapper (InstantIR_node.py, utils.py at 1f3da90): InstantIR's restoration pipeline, its
own diffusers pipeline on an SDXL checkpoint (families/instantir.py for the counts and traces).

- InstantIR_Loader builds the pipeline (the checkpoint's UNet, CLIP-L / CLIP-G and VAE in float16, DINOv2-large, the
  IP adapter and aggregator, the previewer and LCM LoRAs) and calls enable_model_cpu_offload(): each component moves to
  the GPU whole when it runs (manager DIFFUSERS, offload "model"), except the aggregator, which its own hook keeps there
  from its first forward to the pipeline's end, and DINOv2, which the pipeline moves back by hand.
- InstantIR_Sampler resizes the image to its width x height (InstantIR_node.py: tensor_upscale), encodes the prompts,
  DINOv2 on the image (224 px), VAE-encodes it in float32 (force_upcast), samples ``steps`` steps with CFG as one batch
  of 2 (each: the previewer's pass, the aggregator, the UNet with the aggregator's residuals) and decodes in float32,
  untiled. ``batch_size`` repeats whole runs one after another: no more memory.
"""
from __future__ import annotations

from ...families import instantir as IR
from ...physics import memory
from ...workload import CLIP_VISION_ENCODE, DIFFUSERS, SAMPLE, VAE_DECODE, VAE_ENCODE, LatentShape, Stage
from ..base import _replace
from . import Pack, loader

LOADER, SAMPLER, MODEL = "InstantIR_Loader", "InstantIR_Sampler", "InstantIR_MODEL"
COMMON = dict(manager=DIFFUSERS, offload="model", pack_priced=True,
              offload_fix="a smaller width x height on InstantIR_Sampler (the pack has no other offload option)")
F16, F32 = 2, 4


@loader
def _loader(a, node, slot, type_, visiting):
    """The SDXL checkpoint the pipeline is built from (its parts: model, clip, vae)."""
    if type_ != MODEL:
        return []
    ref = a.loader_ref(node, "sdxl_checkpoints", role="checkpoint", folder="checkpoints", part="model")
    return [ref] if ref else []


def _parts(a, node):
    """(model, clip, vae) refs of the loader's checkpoint, or None."""
    refs = [r for r in a.refs(a.link(node, "model"), MODEL) if r.role == "checkpoint"]
    if not refs:
        return None
    return tuple(_replace(refs[0], part=part) for part in ("model", "clip", "vae"))


def _size(a, node):
    width = min(max(a.number(node, "width", 768) or 768, 64), 4096)
    height = min(max(a.number(node, "height", 768) or 768, 64), 4096)
    a.check_size(node, width, height, None, 1)
    return width, height


def _run(a, node):
    parts = _parts(a, node)
    if parts is None:
        a.unpriced("no InstantIR_Loader upstream")
        return Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, **COMMON)
    model, clip, vae = parts
    width, height = _size(a, node)
    size = a.image_size(a.link(node, "pixels"))
    batch = max(1, min(size.batch if size is not None and size.batch else 1, 64))
    # the traces x the allocator calibration (physics.memory: the default for a family without its own)
    k = memory.calibration("instantir")
    scale = width * height * batch / IR.TRACED_PIXELS * k
    why = f"{IR.TRACE_SOURCE}, scaled by the pixels, x {k} for the allocator and untraced transients"
    latent = LatentShape(batch=batch, channels=4, height=height // 8, width=width // 8, pixel_height=height,
                         pixel_width=width, spatial_compression=8, source_node=node.id, source_type=node.type)
    vae_fp32 = ("the VAE upcast to float32 (force_upcast), over its 16-bit copy", IR.P_SDXL_VAE * (F32 - F16),
                "the pipeline's VAE in float32: 83,653,863 parameters x 2 bytes more")
    aggregator = ("the aggregator, float16 (its own offload hook keeps it on the GPU)", IR.P_AGGREGATOR * F16,
                  "ComfyUI_InstantIR_Wrapper's aggregator counted on the meta device (families/instantir.py)")
    text = _replace(a.text_stage(node, models=[clip]), text_tokens=77, **COMMON)
    dino = Stage(kind=CLIP_VISION_ENCODE, node_id=node.id, node_type=node.type, **COMMON, working=(
        ("DINOv2-large, float16 (moved back to the CPU by hand after)", IR.P_DINOV2_L * F16,
         "304,368,640 parameters (families/hunyuan3d.py's DINOv2-L count)"),
        ("DINOv2's activations at 224 px (formula)", 2 * 257 * 1024 * 24 * F16,
         "first-principles formula, uncalibrated: the image and zeros, 257 tokens x 1024, 24 layers' outputs")))
    encode = Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type, models=(vae,), latent=latent, **COMMON,
                   working=(vae_fp32, ("encode activations, float32 (traced)", int(IR.VAE_ENCODE_FP32 * scale), why)))
    held = ("the IP adapter, resampler and LoRAs on the UNet, float16",
            (IR.P_UNET_SAMPLED - IR.P_SDXL_UNET) * F16,
            "ComfyUI_InstantIR_Wrapper's UNet as it samples, counted on the meta device (families/instantir.py)")
    steps = a.number(node, "steps")
    a.stage_note("InstantIR: each step runs the previewer's UNet pass, the aggregator and the UNet, CFG as one batch")
    sample = Stage(kind=SAMPLE, node_id=node.id, node_type=node.type, models=(model,), latent=_replace(
        latent, batch=2 * batch), cfg=None, uses_negative=False, steps=(steps or 0) * 3 or None, **COMMON,
        working=(held, aggregator, vae_fp32,
                 ("one step: the aggregator, then the UNet with its residuals (traced)", int(IR.STEP_BYTES * scale),
                  f"{why}; float16")))
    decoding = ("decode activations, float32 (traced)", int(IR.VAE_DECODE_FP32 * scale), f"{why}; untiled")
    decode = Stage(kind=VAE_DECODE, node_id=node.id, node_type=node.type, models=(vae,), latent=latent, **COMMON,
                   working=(aggregator, vae_fp32, decoding))
    return [text, dino, encode, sample, decode]


PACK = Pack(
    name="ComfyUI_InstantIR_Wrapper",
    refs={LOADER: _loader},
    stage_kinds={SAMPLER: SAMPLE},
    stages={SAMPLER: _run},
    relevant_types={MODEL},
    widgets={LOADER: ["sdxl_checkpoints", "dino_repo", "adapter_checkpoints", "aggregator_checkpoints", "lora",
                      "InstantIR_lora", "use_clip_encoder"],
             SAMPLER: ["prompt", "negative_prompt", "seed", "steps", "cfg", "creative_restoration", "width", "height",
                       "preview_start", "guidance_end", "batch_size"]},
    output_types={LOADER: [MODEL], SAMPLER: ["IMAGE"]},
    input_types={SAMPLER: {"model": MODEL, "pixels": "IMAGE"}},
)
