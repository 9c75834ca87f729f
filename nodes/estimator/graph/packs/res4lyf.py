"""ClownsharkBatwing/RES4LYF: samplers (ClownsharKSampler, chain samplers), all-in-one loaders,
guides and options.

The samplers take MODEL + LATENT (+ SIGMAS) and are read like KSampler; the chain samplers
continue the previous one's latent with its model when their own `model` is not connected.
ClownModelLoader / FluxLoader name the diffusion model, text encoders and VAE in widgets
(RES4LYF loaders.py); ".none" means not loaded.
"""
from __future__ import annotations

from ...workload import ModelRef
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
    "ClownModelLoader": ["model_name", "weight_dtype", "clip_name1", "clip_name2", "clip_name3", "clip_name4",
                         "clip_type", "vae_name"],
    "FluxLoader": ["model_name", "weight_dtype", "clip_name1", "clip_name2", "vae_name", "clip_vision_name",
                   "style_model_name"],
}
TYPES = {"MODEL", "CLIP", "VAE", "CLIP_VISION", "STYLE_MODEL"}


@loader
def _all_in_one(a, node, slot, type_, visiting):
    out = []
    dtype = a.value(node, "weight_dtype")
    clip_type = a.value(node, "clip_type")
    for widget, role, folder in LOADERS[node.type].get(slot, ()):
        name = a.value(node, widget)
        if not isinstance(name, str) or not name or name.lower() in (".none", "none"):
            continue
        out.append(ModelRef(name=name, role=role, folder=folder, loader_node=node.id, loader_type=node.type,
                            weight_dtype=dtype if role == "diffusion" and isinstance(dtype, str) else None,
                            clip_type=clip_type if role == "text_encoder" and isinstance(clip_type, str) else None))
    return out


def _chain_latent(a, node, slot, depth):
    if slot != 0 and slot != 1:
        return None
    return a.latent(a.link(node, "latent_image"), depth + 1)


def _sampler(a, node):
    steps = a.number(node, "steps") if "steps" in node.inputs else None
    run = a.number(node, "steps_to_run", -1) if "steps_to_run" in node.inputs else -1
    if run is not None and run > 0:
        steps = run if steps is None else min(steps, run)
    return a.sample_stage(node, steps=steps)


PACK = Pack(
    name="RES4LYF",
    samplers=SAMPLERS,
    stages={t: _sampler for t in SAMPLERS},
    latents={t: _chain_latent for t in SAMPLERS},
    refs={t: _all_in_one for t in LOADERS},
    widgets=WIDGETS,
    output_types={"ClownModelLoader": ["MODEL", "CLIP", "VAE"],
                  "FluxLoader": ["MODEL", "CLIP", "VAE", "CLIP_VISION", "STYLE_MODEL"]},
    handled={"VAEEncodeAdvanced", "ModelSamplingAdvancedResolution", "ReFluxPatcher", "TorchCompileModels",
             "ClownGuide_Beta", "ClownGuides_Beta", "ClownGuide_Style_Beta", "ClownOptions_SDE_Beta",
             "ClownRegionalConditioning", "ClownRegionalConditionings", "ClownRegionalConditioning2",
             "SharkOptions_GuideCond_Beta", "Frames Slice Latent", "ClownOptions_Combine", "ReWanPatcher",
             "ReSDPatcher", "ClownOptions_ImplicitSteps_Beta", "SharkOptions_Beta"},
)
