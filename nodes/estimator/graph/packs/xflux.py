"""XLabs-AI/x-flux-comfyui: its Flux sampler, LoRA loader, ControlNets and IP-Adapter."""
from __future__ import annotations

from dataclasses import replace

from ...families._spec import IPADAPTER_FLUX
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


def _ip_apply(a, node, slot, type_, visiting):
    """ApplyFluxIPAdapter / ApplyAdvancedFluxIPAdapter: the patched model carries the IP-Adapter's block processors,
    moved to the GPU in bf16 and kept there as object patches while it samples (families/ip_adapter_flux.py)."""
    if type_ != "MODEL":
        return None
    out = a.refs(a.link(node, "model"), "MODEL", visiting)
    loader_link = a.link(node, "ip_adapter_flux")
    loader_node = a.nodes.get(loader_link.node) if loader_link is not None else None
    if loader_node is not None and loader_node.type == "LoadFluxIPAdapter":
        ref = a.loader_ref(loader_node, "ipadatper", role=IPADAPTER_FLUX, folder="xlabs/ipadapters")
        if ref and ref not in out:
            out = out + [ref]
        a.note(f"{a.label(loader_node)}: its CLIP vision encoder and image projection run on the CPU (the loader "
               "builds them with no device); the IP-Adapter's block processors go to the GPU")
    return out


@loader
def _controlnet(a, node, slot, type_, visiting):
    ref = a.loader_ref(node, "controlnet_path", role="controlnet", folder="xlabs/controlnets")
    return [ref] if ref else []


PACK = Pack(
    name="x-flux-comfyui",
    samplers={"XlabsSampler"},
    stages={"XlabsSampler": _sampler},
    refs={"FluxLoraLoader": _lora, "LoadFluxControlNet": _controlnet, "ApplyFluxIPAdapter": _ip_apply,
          "ApplyAdvancedFluxIPAdapter": _ip_apply},
    widgets={"XlabsSampler": ["noise_seed", "steps", "timestep_to_start_cfg", "true_gs"],
             "ApplyFluxControlNet": ["strength"],
             "FluxLoraLoader": ["lora_name", "strength_model"], "LoadFluxControlNet": ["model_name", "controlnet_path"],
             "LoadFluxIPAdapter": ["ipadatper", "clip_vision", "provider"], "ApplyFluxIPAdapter": ["ip_scale"]},
    output_types={"FluxLoraLoader": ["MODEL"], "LoadFluxControlNet": ["FluxControlNet"],
                  "LoadFluxIPAdapter": ["IP_ADAPTER_FLUX"], "ApplyFluxIPAdapter": ["MODEL"],
                  "ApplyAdvancedFluxIPAdapter": ["MODEL"],
                  "ApplyFluxControlNet": ["ControlNetCondition"]},
    input_types={"FluxLoraLoader": {"model": "MODEL"},
                 **{t: {"model": "MODEL", "ip_adapter_flux": "IP_ADAPTER_FLUX", "image": "IMAGE"}
                    for t in ("ApplyFluxIPAdapter", "ApplyAdvancedFluxIPAdapter")},
                 "ApplyFluxControlNet": {"controlnet": "FluxControlNet", "image": "IMAGE"},
                 "XlabsSampler": {"model": "MODEL", "conditioning": "CONDITIONING", "neg_conditioning": "CONDITIONING",
                                  "latent_image": "LATENT", "controlnet_condition": "ControlNetCondition"}},
    handled={"ApplyFluxControlNet", "LoadFluxIPAdapter"},
    relevant_types={"FluxControlNet", "IP_ADAPTER_FLUX"},
)
