"""XLabs-AI/x-flux-comfyui: its Flux sampler, LoRA loader, ControlNets and IP-Adapter."""
from __future__ import annotations

from dataclasses import replace

from . import Pack, loader, lora_on_model


def _sampler(a, node):
    cond = [a.link(node, "conditioning"), a.link(node, "neg_conditioning")]
    cfg = a.number(node, "true_gs", integer=False) if "true_gs" in node.inputs else None
    stage = a.sample_stage(node, cond_links=[c for c in cond if c], cfg=cfg,
                           uses_negative=a.link(node, "neg_conditioning") is not None and (cfg or 1) > 1,
                           steps=a.number(node, "steps"))
    # the ControlNet reaches the sampler through controlnet_condition (ApplyFluxControlNet), not the
    # conditioning; XlabsSampler moves it to the GPU next to the model for the sampling loop
    extra = []
    link = a.link(node, "controlnet_condition")
    apply = a.nodes.get(link.node) if link is not None else None
    if apply is not None and a.number(apply, "strength", 1.0, integer=False) != 0:
        extra = [r for r in a.refs(a.link(apply, "controlnet"), "FluxControlNet") if r not in stage.models]
    return replace(stage, models=stage.models + tuple(extra)) if extra else stage


def _lora(a, node, slot, type_, visiting):
    return lora_on_model(a, node, visiting, folder="xlabs/loras") if type_ == "MODEL" else []


@loader
def _controlnet(a, node, slot, type_, visiting):
    ref = a.loader_ref(node, "controlnet_path", role="controlnet", folder="xlabs/controlnets")
    return [ref] if ref else []


PACK = Pack(
    name="x-flux-comfyui",
    samplers={"XlabsSampler"},
    stages={"XlabsSampler": _sampler},
    refs={"FluxLoraLoader": _lora, "LoadFluxControlNet": _controlnet},
    widgets={"XlabsSampler": ["noise_seed", "steps", "timestep_to_start_cfg", "true_gs"],
             "ApplyFluxControlNet": ["strength"],
             "FluxLoraLoader": ["lora_name", "strength_model"], "LoadFluxControlNet": ["model_name", "controlnet_path"]},
    output_types={"FluxLoraLoader": ["MODEL"], "LoadFluxControlNet": ["FluxControlNet"],
                  "ApplyFluxControlNet": ["ControlNetCondition"]},
    input_types={"FluxLoraLoader": {"model": "MODEL"},
                 "ApplyFluxControlNet": {"controlnet": "FluxControlNet", "image": "IMAGE"},
                 "XlabsSampler": {"model": "MODEL", "conditioning": "CONDITIONING", "neg_conditioning": "CONDITIONING",
                                  "latent_image": "LATENT", "controlnet_condition": "ControlNetCondition"}},
    handled={"ApplyFluxControlNet", "LoadFluxIPAdapter"},
    # the IP-Adapter LoadFluxIPAdapter loads (its weights and a CLIP-L vision encoder) runs in these
    unpriced={t: "XLabs' Flux IP-Adapter (its weights and its CLIP vision encoder)"
              for t in ("ApplyFluxIPAdapter", "ApplyAdvancedFluxIPAdapter")},
    relevant_types={"FluxControlNet"},
)
