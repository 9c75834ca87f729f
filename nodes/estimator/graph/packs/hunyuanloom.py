"""logtd/ComfyUI-HunyuanLoom (nodes/wrapper_flow_edit_nodes.py at f5816c4): HyVideoFlowEditSamplerWrapper, FlowEdit
on HunyuanVideoWrapper's model. It edits the latent it is given (``samples``, batch and size as given), runs the
wrapper's transformer at batch 1 twice a step, one pass after the other (the source prompt's, then the target's:
embedded guidance, no CFG batch), for ``steps - skip_steps`` steps, with the wrapper's placement
(hunyuanvideowrapper.sample). The pack's other nodes patch ComfyUI's own HunyuanVideo MODEL and are read by their
socket types."""
from __future__ import annotations

from ...workload import SAMPLE
from . import Pack
from .hunyuanvideowrapper import MODEL, sample

SAMPLER = "HyVideoFlowEditSamplerWrapper"


def _latent(a, node, slot, depth):
    return a.latent(a.link(node, "samples"), depth + 1)


def _sample(a, node):
    steps, skip = a.number(node, "steps"), a.number(node, "skip_steps", 0) or 0
    notes = []
    if steps is not None and skip:
        notes.append(f"skips the first {skip} of {steps} steps")
        steps = max(0, steps - skip)
    a.stage_note("FlowEdit: the source and the target prompt's passes run one after the other (batch 1 each)")
    return sample(a, node, _latent(a, node, 0, 0), steps=steps, notes=notes)


PACK = Pack(
    name="ComfyUI-HunyuanLoom",
    samplers={SAMPLER},
    stage_kinds={SAMPLER: SAMPLE},
    latents={SAMPLER: _latent},
    stages={SAMPLER: _sample},
    widgets={SAMPLER: ["steps", "skip_steps", "drift_steps", "source_guidance_scale", "target_guidance_scale",
                       "drift_guidance_scale", "flow_shift", "drift_flow_shift", "seed", "force_offload"]},
    input_types={SAMPLER: {"model": MODEL, "source_embeds": "HYVIDEMBEDS", "target_embeds": "HYVIDEMBEDS",
                           "samples": "LATENT"}},
    output_types={SAMPLER: ["LATENT"]},
)
