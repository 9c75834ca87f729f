"""pollockjj/ComfyUI-MultiGPU: every loader (and the WanVideoWrapper nodes) in a variant that
chooses the device, plus DisTorch / DisTorch2 "virtual VRAM".

Variants are named after the node they wrap (``UNETLoaderMultiGPU``, ``CLIPLoaderGGUFMultiGPU``,
``UNETLoaderDisTorch2MultiGPU``, ``WanVideoModelLoaderMultiGPU``...), take the same inputs and add
device widgets after them, so each variant is read as its base node and then placed:
- ``device`` (``...MultiGPU``) / ``compute_device`` (DisTorch): the GPU the model runs on; a model
  placed on another GPU (cuda:1) or on the CPU does not use this card.
- ``virtual_vram_gb`` (DisTorch / DisTorch2): that many GB of the model's weights live on the
  ``donor_device`` (RAM by default) and are streamed in, like ComfyUI's partial load.
"""
from __future__ import annotations

from dataclasses import replace

from ...node_specs import load_specs
from ..base import _replace
from . import Pack, core, gguf, wanvideowrapper

SUFFIXES = ("MultiGPU", "DisTorchMultiGPU", "DisTorch2MultiGPU")
GIB = 1024**3  # DisTorch: virtual_vram_bytes = virtual_vram_gb * (1024**3); the model's GPU share is
# max(0, model bytes - virtual_vram_bytes) (ComfyUI-MultiGPU distorch_2.py, memory accounting)


def _base_type(node_type: str) -> str | None:
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if node_type.endswith(suffix):
            return node_type[: -len(suffix)]
    return None


def _placement(a, node) -> dict:
    """ModelRef fields for where this variant puts the model."""
    device = a.value(node, "device")
    if not isinstance(device, str):
        device = a.value(node, "compute_device")
    out = {"device": device} if isinstance(device, str) and device else {}
    virtual = a.number(node, "virtual_vram_gb", 0, integer=False) if "virtual_vram_gb" in node.inputs else 0
    if virtual:
        donor = a.value(node, "donor_device")
        out["offload_bytes"] = int(virtual * GIB)
        a.note(f"{a.label(node)}: DisTorch virtual VRAM: {virtual:g} GiB of the weights kept on "
               f"{donor if isinstance(donor, str) and donor else 'cpu'} and streamed in")
    return out


def _alias_refs(base: str, table_loader: bool):
    def refs(a, node, slot, type_, visiting):
        as_base = replace(node, type=base)
        result = a._refs_of(as_base, slot, type_, visiting)
        placement = _placement(a, node)
        if not placement:
            return result
        # the placement applies to the files this loader itself names, not to models upstream
        return [_replace(r, **placement) if r.loader_node == node.id else r for r in result]

    refs.loader = table_loader
    return refs


def _alias_stage(base: str, handler):
    def stage(a, node):
        as_base = replace(node, type=base)
        if handler is not None:
            return handler(a, as_base)
        return getattr(a, a.GENERIC_BUILDERS[a.stage_kind(as_base)])(as_base)
    return stage


def _alias_latent(handler):
    def latent(a, node, slot, depth):
        return handler(a, replace(node, type=_base_type(node.type)), slot, depth)
    return latent


def _build() -> Pack:
    bases = Pack(name="bases")
    for pack in (core.PACK, gguf.PACK, wanvideowrapper.PACK):
        bases = bases.merged_with(pack)
    specs = load_specs().get("nodes", {})
    out = Pack(name="ComfyUI-MultiGPU")
    loaders = set(bases.diffusion_loaders) | set(bases.checkpoint_loaders) | set(bases.te_loaders) \
        | set(bases.simple_loaders) | {t for t, h in bases.refs.items() if getattr(h, "loader", False)}
    stage_bases = set(bases.stage_kinds) | bases.samplers | bases.vae_decoders | bases.vae_encoders
    for base in sorted(loaders | stage_bases | set(bases.handled) | set(bases.refs)):
        for suffix in SUFFIXES:
            name = base + suffix
            if base in loaders or base in bases.refs:
                out.refs[name] = _alias_refs(base, base in loaders)
            if base in stage_bases:
                kind = bases.stage_kinds.get(base)
                if kind is None:
                    kind = ("sample" if base in bases.samplers else "vae_decode" if base in bases.vae_decoders
                            else "vae_encode")
                out.stage_kinds[name] = kind
                out.stages[name] = _alias_stage(base, bases.stages.get(base))
            if base in bases.latents:
                out.latents[name] = _alias_latent(bases.latents[base])
            if base in bases.handled:
                out.handled.add(name)
            widgets = bases.widgets.get(base) or [w[0] for w in (specs.get(base) or {}).get("w", ())
                                                  if not w[0].startswith("$")]
            if widgets:
                out.widgets[name] = list(widgets)
            types = bases.input_types.get(base) or (specs.get(base) or {}).get("in")
            if types:
                out.input_types[name] = dict(types)
            outs = bases.output_types.get(base) or (specs.get(base) or {}).get("out")
            if outs:
                out.output_types[name] = list(outs)
    return out


PACK = _build()
