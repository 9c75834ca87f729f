"""yolain/ComfyUI-Easy-Use: pipe-based loaders and samplers.

A PIPE_LINE carries the model, CLIP, VAE, conditioning and an empty latent made by the loader
(``empty_latent_width`` / ``empty_latent_height`` / ``batch_size``, or a ``resolution`` preset).
``easy kSampler`` samples it and decodes the result (two stages); ``easy preSampling`` sets
steps and cfg on the pipe.
"""
from __future__ import annotations

import re

from ...workload import SAMPLE, VAE_DECODE, LatentShape, ModelRef
from ..base import _replace
from . import Pack, loader, upstream_chain

LOADERS = {"easy a1111Loader", "easy fullLoader", "easy comfyLoader", "easy fluxLoader", "easy svdLoader"}
PRESAMPLERS = {"easy preSampling", "easy preSamplingAdvanced", "easy preSamplingCustom"}
SAMPLERS = {"easy kSampler", "easy kSamplerAdvanced", "easy fullkSampler", "easy kSamplerTiled"}
WIDGETS = {
    "easy a1111Loader": ["ckpt_name", "vae_name", "clip_skip", "lora_name", "lora_model_strength",
                         "lora_clip_strength", "resolution", "empty_latent_width", "empty_latent_height",
                         "positive", "negative", "batch_size"],
    "easy fullLoader": ["ckpt_name", "config_name", "vae_name", "clip_skip", "lora_name", "lora_model_strength",
                        "lora_clip_strength", "resolution", "empty_latent_width", "empty_latent_height"],
    "easy comfyLoader": ["ckpt_name", "vae_name", "clip_skip", "lora_name", "lora_model_strength",
                         "lora_clip_strength", "resolution", "empty_latent_width", "empty_latent_height"],
    "easy preSampling": ["steps", "cfg", "sampler_name", "scheduler", "denoise", "seed"],
}


def _pipe_nodes(a, link):
    """The nodes along a PIPE_LINE, sampler side first, loader last."""
    return upstream_chain(a, link, lambda node: a.link(node, "pipe"))


@loader
def _loader(a, node, slot, type_, visiting):
    if type_ not in ("PIPE_LINE", "MODEL", "VAE", "CLIP"):
        return []
    refs = []
    parts = {"PIPE_LINE": ("model", "clip", "vae"), "MODEL": ("model",), "CLIP": ("clip",), "VAE": ("vae",)}[type_]
    for part in parts:
        ref = a.loader_ref(node, "ckpt_name", role="checkpoint", folder="checkpoints", part=part)
        if ref:
            refs.append(ref)
    vae = a.value(node, "vae_name")
    if "vae" in parts and isinstance(vae, str) and vae and not vae.lower().startswith("baked"):
        refs = [r for r in refs if r.part != "vae"] + [ModelRef(name=vae, role="vae", folder="vae",
                                                                 loader_node=node.id, loader_type=node.type)]
    lora = a.value(node, "lora_name")
    if "model" in parts and isinstance(lora, str) and lora and lora != "None":
        refs.append(ModelRef(name=lora, role="lora", folder="loras", loader_node=node.id, loader_type=node.type,
                             strength=a.number(node, "lora_model_strength", 1.0, integer=False)))
    return refs


def _pipe_latent(a, pipe_link) -> LatentShape | None:
    for node in _pipe_nodes(a, pipe_link):
        if node.type in LOADERS:
            width, height = a.number(node, "empty_latent_width"), a.number(node, "empty_latent_height")
            preset = a.value(node, "resolution")
            m = re.match(r"\s*(\d+)\s*x\s*(\d+)", preset) if isinstance(preset, str) else None
            if m:
                width, height = int(m.group(1)), int(m.group(2))
            if not width or not height:
                return None
            batch = a.number(node, "batch_size", 1) or 1
            return LatentShape(batch=batch, channels=4, height=height // 8, width=width // 8, pixel_height=height,
                               pixel_width=width, source_node=node.id, source_type=node.type)
        latent = a.link(node, "latent")
        if latent is not None:
            return a.latent(latent)
    return None


def _sampler(a, node):
    pipe = a.link(node, "pipe")
    nodes = _pipe_nodes(a, pipe)
    pre = next((n for n in nodes if n.type in PRESAMPLERS), None)
    model_link = a.link(node, "model") or (a.link(pre, "model") if pre else None)
    steps = a.number(pre, "steps") if pre else None
    cfg = a.number(pre, "cfg", integer=False) if pre else None
    sample = a.sample_stage(node, model_links=[model_link or pipe], cond_links=[], cfg=cfg, uses_negative=True,
                            steps=steps, latent=_pipe_latent(a, pipe), model_type="MODEL" if model_link else "PIPE_LINE")
    sample = _replace(sample, models=tuple(r for r in sample.models if r.role != "vae" and r.part not in ("clip", "vae")))
    vae = [r for r in a.refs(pipe, "PIPE_LINE") if r.role == "vae" or r.part == "vae"]
    decode = _replace(sample, kind=VAE_DECODE, models=tuple(vae), cfg=None, steps=None)
    return [sample, decode]


def _pipe_refs(a, node, slot, type_, visiting):
    """Pipe pass-through nodes (preSampling, pipeIn/Out...): the pipe's models upstream."""
    return a.refs(a.link(node, "pipe"), type_, visiting) if type_ == "PIPE_LINE" else None


PACK = Pack(
    name="ComfyUI-Easy-Use",
    refs={**{t: _loader for t in LOADERS}, **{t: _pipe_refs for t in PRESAMPLERS | SAMPLERS}},
    stage_kinds={t: SAMPLE for t in SAMPLERS},
    stages={t: _sampler for t in SAMPLERS},
    widgets=WIDGETS,
    output_types={"easy a1111Loader": ["PIPE_LINE", "MODEL", "VAE"], "easy fullLoader": ["PIPE_LINE", "MODEL", "VAE", "CLIP"],
                  "easy comfyLoader": ["PIPE_LINE", "MODEL", "VAE"], **{t: ["PIPE_LINE"] for t in PRESAMPLERS},
                  **{t: ["PIPE_LINE", "IMAGE"] for t in SAMPLERS}},
    input_types={**{t: {"pipe": "PIPE_LINE"} for t in PRESAMPLERS | SAMPLERS}},
    relevant_types={"PIPE_LINE"},
    handled=PRESAMPLERS | {"easy detailerFix"},
)
