"""ClownsharkBatwing/RES4LYF: samplers (ClownsharKSampler, chain samplers), all-in-one loaders,
guides and options.

The samplers take MODEL + LATENT (+ SIGMAS) and are read like KSampler; the chain samplers
continue the previous one's latent with its model when their own `model` is not connected.
ClownModelLoader / FluxLoader name the diffusion model, text encoders and VAE in widgets
(RES4LYF loaders.py); ".none" means not loaded.
"""
from __future__ import annotations

from ...workload import LatentShape, ModelRef
from ..base import _Link
from . import Pack, loader

SAMPLERS = {"ClownsharKSampler_Beta", "ClownsharkChainsampler_Beta", "SharkSampler", "SharkSampler_Beta",
            "ClownSampler", "ClownSamplerAdvanced", "ClownsharKSamplerAdvanced", "ClownsharKSampler",
            "BongSampler", "ClownsharkChainsampler"}
# loader -> {output slot: [(widget, role, folder)]}
LOADERS = {
    "ClownModelLoader": {0: [("model_name", "diffusion", "diffusion_models")],
                         1: [("clip_name1", "text_encoder", "text_encoders"), ("clip_name2", "text_encoder", "text_encoders"),
                             ("clip_name3", "text_encoder", "text_encoders"), ("clip_name4", "text_encoder", "text_encoders")],
                         2: [("vae_name", "vae", "vae")]},
    "FluxLoader": {0: [("model_name", "diffusion", "diffusion_models")],
                   1: [("clip_name1", "text_encoder", "text_encoders"), ("clip_name2", "text_encoder", "text_encoders")],
                   2: [("vae_name", "vae", "vae")], 3: [("clip_vision_name", "clip_vision", "clip_vision")],
                   4: [("style_model_name", "style_model", "style_models")]},
}
WIDGETS = {  # widgets_values order (RES4LYF loaders.py / samplers.py INPUT_TYPES)
    "ClownsharKSampler_Beta": ["eta", "sampler_name", "scheduler", "steps", "steps_to_run", "denoise", "cfg", "seed"],
    "ClownsharkChainsampler_Beta": ["eta", "sampler_name", "steps_to_run", "cfg"],
    "SharkSampler_Beta": ["scheduler", "steps", "steps_to_run", "denoise", "cfg", "seed"],
    "VAEEncodeAdvanced": ["resize_to_input", "width", "height", "mask_channel", "invert_mask", "latent_type"],
    "ClownModelLoader": ["model_name", "weight_dtype", "clip_name1", "clip_name2", "clip_name3", "clip_name4",
                         "clip_type", "vae_name"],
    "FluxLoader": ["model_name", "weight_dtype", "clip_name1", "clip_name2", "vae_name", "clip_vision_name",
                   "style_model_name"],
}
TYPES = {"MODEL", "CLIP", "VAE", "CLIP_VISION", "STYLE_MODEL"}


# Placeholders in the loaders' file lists: ".none" (nothing), ".use_ckpt_clip" / ".use_ckpt_vae" (the
# text encoder / VAE inside the file named in model_name, a full checkpoint).
CKPT_PART = {".use_ckpt_clip": "clip", ".use_ckpt_vae": "vae"}


@loader
def _all_in_one(a, node, slot, type_, visiting):
    out = []
    dtype = a.value(node, "weight_dtype")
    clip_type = a.value(node, "clip_type")
    for widget, role, folder in LOADERS[node.type].get(slot, ()):
        name = a.value(node, widget)
        if not isinstance(name, str) or not name or name.lower() in (".none", "none"):
            continue
        if name in CKPT_PART:
            ckpt = a.value(node, "model_name")
            if isinstance(ckpt, str) and ckpt:
                out.append(ModelRef(name=ckpt, role="checkpoint", folder="checkpoints", part=CKPT_PART[name],
                                    loader_node=node.id, loader_type=node.type))
            continue
        out.append(ModelRef(name=name, role=role, folder=folder, loader_node=node.id, loader_type=node.type,
                            weight_dtype=dtype if role == "diffusion" and isinstance(dtype, str) else None,
                            clip_type=clip_type if role == "text_encoder" and isinstance(clip_type, str) else None))
    return out


def _chain_latent(a, node, slot, depth):
    if slot != 0 and slot != 1:
        return None
    return a.latent(a.link(node, "latent_image"), depth + 1)


def _model_link(a, node):
    """The sampler's MODEL: its own input; for a chain sampler the one of the sampler it continues
    (RES4LYF passes it along with the latent); else the workflow's only diffusion loader, said so."""
    seen = set()
    current = node
    while current is not None and current.id not in seen:
        seen.add(current.id)
        link = a.link(current, "model")
        if link is not None:
            return link
        upstream = a.nodes.get(getattr(a.link(current, "latent_image"), "node", None))
        current = upstream if upstream is not None and upstream.type in SAMPLERS else None
    loaders = [n for n in a.nodes.values() if n.type in LOADERS or n.type in ("UNETLoader", "UnetLoaderGGUF",
                                                                                "CheckpointLoaderSimple")]
    if len(loaders) == 1:
        a.stage_note(f"no model connected: the workflow's only model loader (node {loaders[0].id}) is assumed")
        return _Link(loaders[0].id, 0)
    return None


def _sampler(a, node):
    steps = a.number(node, "steps") if "steps" in node.inputs else None
    run = a.number(node, "steps_to_run", -1) if "steps_to_run" in node.inputs else -1
    if run is not None and run > 0:
        steps = run if steps is None else min(steps, run)
    model = _model_link(a, node)
    return a.sample_stage(node, steps=steps, model_links=[model] if model is not None else [])


def _encode_advanced(a, node, slot, depth):
    """VAEEncodeAdvanced (RES4LYF): latent_1 / latent_2 encode image_1 / image_2, empty_latent is
    width × height; the images are resized to width × height unless resize_to_input says otherwise."""
    if slot not in (0, 1, 3):
        return None
    width, height = a.number(node, "width"), a.number(node, "height")
    image = a.link(node, "image_1" if slot != 1 else "image_2")
    if (not width or not height) and image is not None:
        size = a.image_size(image, depth + 1)
        width, height = (size.width, size.height) if size else (None, None)
    if not width or not height:
        return None
    kind = str(a.value(node, "latent_type") or "")
    channels = 4 if kind.startswith("4") else 16 if kind.startswith("16") else None
    return LatentShape(batch=1, channels=channels, height=height // 8, width=width // 8, pixel_height=height,
                       pixel_width=width, source_node=node.id, source_type=node.type)


PACK = Pack(
    name="RES4LYF",
    samplers=SAMPLERS,
    stages={t: _sampler for t in SAMPLERS},
    latents={**{t: _chain_latent for t in SAMPLERS}, "VAEEncodeAdvanced": _encode_advanced},
    internal_encoders={"VAEEncodeAdvanced": ("image_1", "image_2")},
    refs={t: _all_in_one for t in LOADERS},
    widgets=WIDGETS,
    output_types={"ClownModelLoader": ["MODEL", "CLIP", "VAE"],
                  "VAEEncodeAdvanced": ["LATENT", "LATENT", "MASK", "LATENT", "INT", "INT"],
                  "FluxLoader": ["MODEL", "CLIP", "VAE", "CLIP_VISION", "STYLE_MODEL"]},
    handled={"ModelSamplingAdvancedResolution", "ReFluxPatcher", "TorchCompileModels",
             "ClownGuide_Beta", "ClownGuides_Beta", "ClownGuide_Style_Beta", "ClownOptions_SDE_Beta",
             "ClownRegionalConditioning", "ClownRegionalConditionings", "ClownRegionalConditioning2",
             "SharkOptions_GuideCond_Beta", "Frames Slice Latent", "ClownOptions_Combine", "ReWanPatcher",
             "ReSDPatcher", "ClownOptions_ImplicitSteps_Beta", "SharkOptions_Beta"},
)
