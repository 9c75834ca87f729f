"""Ideogram 4's sampling nodes. Line references are ComfyUI 0.33.0.

- Ideogram4Scheduler (comfy_extras/nodes_ideogram4.py:35-56): SIGMAS from its `steps` widget (read generically).
- DualModelGuider (comfy_extras/nodes_custom_sampler.py:955-990, "experimental"; the Ideogram 4 templates are its
  users): with `model_negative` linked, Guider_DualModel (:906-953) runs the positive pass on `model` and the
  negative pass on `model_negative`, each through its own calc_cond_batch call (:941, :950), so cond and uncond are
  never batched together: each call has the latent's batch. Both models are loaded for the sampling
  (prepare_sampling of the uncond model, :916-918). Without `model_negative` it is a plain CFGGuider (:985).
- CFGOverride (nodes_custom_sampler.py:1146-1183) is MODEL -> MODEL, read generically.
"""
from __future__ import annotations

from . import Pack


def _dual_model_guider(a, node, depth):
    model, negative_model = a.link(node, "model"), a.link(node, "model_negative")
    out = {"model": [lk for lk in (model, negative_model) if lk is not None],
           "conds": [lk for lk in (a.link(node, "positive"), a.link(node, "negative")) if lk is not None],
           "cfg": a.number(node, "cfg", integer=False)}
    if negative_model is not None:
        a.note(f"{a.label(node)}: the positive pass runs on one model and the negative on the other, one call each "
               "(never batched together; nodes_custom_sampler.py:906-953)")
        out["uses_negative"] = False  # no cond + uncond batch: each model call carries the latent's batch only
    else:
        out["uses_negative"] = a.link(node, "negative") is not None
    return out


PACK = Pack(
    name="nodes_ideogram4",
    guiders={"DualModelGuider": _dual_model_guider},
)
