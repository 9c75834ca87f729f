"""pollockjj/ComfyUI-MultiGPU: every loader (and the WanVideoWrapper nodes) in a variant that
chooses the device, plus DisTorch / DisTorch2 "virtual VRAM".

Variants are named after the node they wrap (``UNETLoaderMultiGPU``, ``CLIPLoaderGGUFMultiGPU``,
``UNETLoaderDisTorch2MultiGPU``, ``WanVideoModelLoaderMultiGPU``...), take the same inputs and add
device widgets after them, so each variant is read as its base node and then placed (issue 24: the
ModelRef's ``device`` and ``placed_by``; placement.py turns them into each stage's device):
- ``device`` (``...MultiGPU``) / ``compute_device`` (DisTorch): the GPU the model runs on; a model
  placed on another GPU (cuda:1) or on the CPU does not use this card.
- ``virtual_vram_gb`` (DisTorch / DisTorch2): that many GB of the model's weights live on the
  ``donor_device`` (RAM by default) and are streamed in, like ComfyUI's partial load.
- ``expert_mode_allocations`` (DisTorch2): an allocation string that replaces virtual_vram_gb
  (distorch_2.py:365-378: bytes form "cuda:0,8gb;cpu,*", ratio form "cuda:0,25%;cpu,75%").

The widgets each wrapper adds, in order (ComfyUI-MultiGPU, wrappers.py; a UI workflow saves them by
position after the base node's own):
- override_class (UNETLoader, VAELoader, CheckpointLoaderSimple, ControlNet ... MultiGPU), wrappers.py:458;
  override_class_clip / _clip_no_device (CLIP loaders), wrappers.py:534 / 568: ``device``, which takes the
  place of core CLIPLoader's / DualCLIPLoader's own ``device`` widget (the same key of INPUT_TYPES);
- DisTorch2 (``...DisTorch2MultiGPU``), wrappers.py:30-34: ``compute_device`` (``device`` for the CLIP
  loaders, wrappers.py:144-165), ``virtual_vram_gb``, ``donor_device``, ``expert_mode_allocations``,
  ``eject_models``;
- legacy DisTorch (``...DisTorchMultiGPU``), wrappers.py:184-187 / 317-320 / 384-387: ``device``,
  ``virtual_vram_gb``, ``use_other_vram``, ``expert_mode_allocations``;
- its own WanVideoWrapper loaders (wanvideo.py): WanVideoModelLoader ``compute_device`` after
  ``load_device`` (wanvideo.py:30-63), LoadWanVideoT5TextEncoder / LoadWanVideoClipTextEncoder ``device``
  (wanvideo.py:222-236 / 261-275), WanVideoVAELoader / WanVideoTinyVAELoader ``load_device`` = a device
  (wanvideo.py:380-393 / 414-426).
"""
from __future__ import annotations

from dataclasses import replace

from ..node_specs import load_specs
from ..base import _replace
from . import Pack, core, florence2, gguf, wanvideowrapper

SUFFIXES = ("MultiGPU", "DisTorchMultiGPU", "DisTorch2MultiGPU")
GIB = 1024**3  # DisTorch: virtual_vram_bytes = virtual_vram_gb * (1024**3); the model's GPU share is
# max(0, model bytes - virtual_vram_bytes) (ComfyUI-MultiGPU distorch_2.py:142-143, memory accounting)

DISTORCH2 = ("virtual_vram_gb", "donor_device", "expert_mode_allocations", "eject_models")  # wrappers.py:31-34
DISTORCH1 = ("device", "virtual_vram_gb", "use_other_vram", "expert_mode_allocations")  # wrappers.py:184-187
CLIP_BASES = ("CLIPLoader", "DualCLIPLoader", "TripleCLIPLoader", "QuadrupleCLIPLoader", "CLIPVisionLoader",
              "CLIPLoaderGGUF", "DualCLIPLoaderGGUF", "TripleCLIPLoaderGGUF", "QuadrupleCLIPLoaderGGUF")
# ComfyUI-MultiGPU's own WanVideoWrapper loaders: their whole widget list and the widget naming the device
WANVIDEO = {
    "WanVideoModelLoaderMultiGPU": (["model", "base_precision", "quantization", "load_device", "compute_device",
                                     "attention_mode", "rms_norm_function"], "compute_device"),
    "LoadWanVideoT5TextEncoderMultiGPU": (["model_name", "precision", "device", "quantization"], "device"),
    "LoadWanVideoClipTextEncoderMultiGPU": (["model_name", "precision", "device"], "device"),
    "WanVideoVAELoaderMultiGPU": (["model_name", "load_device", "precision"], "load_device"),
    "WanVideoTinyVAELoaderMultiGPU": (["model_name", "load_device", "precision", "parallel"], "load_device"),
    # its Florence2 loaders (nodes.py Florence2ModelLoader / DownloadAndLoadFlorence2Model, override_class): the base's
    # three widgets, then the device (the corpus workflow at 0d6dfc7 saves model, precision, attention, device, ...)
    "DownloadAndLoadFlorence2ModelMultiGPU": (["model", "precision", "attention", "device"], "device"),
    "Florence2ModelLoaderMultiGPU": (["model", "precision", "attention", "device"], "device"),
}


def _base_type(node_type: str) -> str | None:
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if node_type.endswith(suffix):
            return node_type[: -len(suffix)]
    return None


def added_widgets(name: str, base: str, base_widgets) -> list[str]:
    """The widgets ComfyUI-MultiGPU appends to `base`'s for the variant `name` (see the module doc)."""
    if name.endswith("DisTorch2MultiGPU"):
        param = "device" if base in CLIP_BASES else "compute_device"
        return ([] if param in base_widgets else [param]) + list(DISTORCH2)
    if name.endswith("DisTorchMultiGPU"):
        return [w for w in DISTORCH1 if w not in base_widgets or w != "device"]
    return [] if "device" in base_widgets else ["device"]


def _device_param(node) -> str:
    if node.type in WANVIDEO:
        return WANVIDEO[node.type][1]
    return "device" if "device" in node.inputs else "compute_device"


def _placement(a, node, part: str | None = None) -> dict:
    """ModelRef fields for where this variant puts the model (and why, for the report). For a checkpoint
    the device applies to its model and VAE (created while the variant's device is current, wrappers.py:
    205-215), not to its CLIP (ComfyUI's text-encoder device), and virtual VRAM to the MODEL alone: the
    allocation is set on out[0]'s model only (wrappers.py:113-122)."""
    if part == "clip":
        return {}
    param = _device_param(node)
    device = a.value(node, param)
    if not isinstance(device, str) or not device:
        return {}
    out = {"device": device}
    why = f"ComfyUI-MultiGPU {node.type} {param}={device}"
    if part in (None, "model"):
        virtual = a.number(node, "virtual_vram_gb", 0, integer=False) if "virtual_vram_gb" in node.inputs else 0
        alloc = a.value(node, "expert_mode_allocations")
        alloc = alloc.strip() if isinstance(alloc, str) else ""
        donor = a.value(node, "donor_device")
        donor = donor if isinstance(donor, str) and donor else "cpu"
        if alloc:  # the expert string wins over virtual_vram_gb (wrappers.py:100-106, distorch_2.py:372-378)
            out["allocation"] = alloc
            why += f", expert_mode_allocations={alloc}"
            a.note(f"{a.label(node)}: DisTorch2 expert allocation '{alloc}': the weights are spread as it says, "
                   f"computed on {device}")
        elif virtual and virtual > 0:
            out["offload_bytes"] = int(virtual * GIB)
            out["donor_device"] = donor
            why += f", virtual_vram_gb={virtual:g} on donor {donor}"
            a.note(f"{a.label(node)}: DisTorch virtual VRAM: {virtual:g} GiB of the weights kept on "
                   f"{donor} and streamed in")
    out["placed_by"] = why
    return out


def _alias_refs(base: str, table_loader: bool):
    def refs(a, node, slot, type_, visiting):
        as_base = replace(node, type=base)
        result = a.refs_of(as_base, slot, type_, visiting)
        # the placement applies to the files this loader itself names, not to models upstream
        out = []
        for r in result:
            if r.loader_node == node.id:
                placement = _placement(a, node, r.part if r.role == "checkpoint" else None)
                r = _replace(r, loader_type=node.type, **placement)
            out.append(r)
        return out

    refs.loader = table_loader
    return refs
def _alias_stage(base: str, handler):
    def stage(a, node):
        as_base = replace(node, type=base)
        if handler is not None:
            return handler(a, as_base)
        return a.generic_stage(as_base)
    return stage


def _alias_latent(handler):
    def latent(a, node, slot, depth):
        return handler(a, replace(node, type=_base_type(node.type)), slot, depth)
    return latent


def _build() -> Pack:
    bases = Pack(name="bases")
    for pack in (core.PACK, gguf.PACK, wanvideowrapper.PACK, florence2.PACK):
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
            if name in WANVIDEO:
                out.widgets[name] = list(WANVIDEO[name][0])
            elif widgets and (base in loaders or base in bases.refs):
                out.widgets[name] = list(widgets) + added_widgets(name, base, widgets)
            elif widgets:
                out.widgets[name] = list(widgets)
            types = bases.input_types.get(base) or (specs.get(base) or {}).get("in")
            if types:
                out.input_types[name] = dict(types)
            outs = bases.output_types.get(base) or (specs.get(base) or {}).get("out")
            if outs:
                out.output_types[name] = list(outs)
    return out


PACK = _build()
