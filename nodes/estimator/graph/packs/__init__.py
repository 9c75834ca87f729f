"""Node packs: what each pack's nodes mean for GPU memory, one module per pack.

Every module in this folder defines ``PACK = Pack(...)``: tables (its loaders, samplers, VAE
decoders, latent creators...) and, for nodes whose meaning a table cannot say, small handler
functions keyed by class_type. ``REGISTRY`` merges them all, so adding a node pack is adding one
file here; the analyzer (``analyzer.py``) knows no node by name and asks the registry.

Handler signatures (``a`` is the analyzer, ``node`` the node being read):
- refs:    ``(a, node, slot, type_, visiting) -> list[ModelRef] | None``  (None: read generically)
- latents: ``(a, node, slot, depth) -> LatentShape | None``
- images:  ``(a, node, link, depth) -> ImageSize | None``
- values:  ``(a, node, link, depth, sub) -> value | UNKNOWN``  (``sub(name)`` evaluates an input)
- sigmas:  ``(a, node, link, depth) -> int | None``  (steps a SIGMAS output holds)
- guiders: ``(a, node, depth) -> dict``  (model links, conditioning links, cfg, uses_negative)
- stages:  ``(a, node) -> Stage | None``  for a node whose kind is in ``stage_kinds``
- cond_references: ``(a, node) -> list[(rows, columns)]``  latents a conditioning node adds for the model to attend over
- latent_frames: ``(a, node, frames) -> frames``  a latent creator's own frame rule (WanVaceToVideo's reference)

Tables without handlers: ``disables_dynamic`` (class -> why a model behind it takes the legacy path),
``encodes_image_as_given`` (image-to-video conditioning that encodes the image at the size given).

The analyzer ``a`` a handler may use (PACK_API; a test holds every module to it, so the analyzer's private
helpers can change without breaking a pack):
- the graph: ``a.nodes``, ``a.link(node, name)``, ``a.linked_inputs_of_type(node, type)``, ``a.out_type``,
  ``a.label(node)``, ``a.stage_kind(node)``, ``a.advanced_start`` (an advanced sampler's start step, by node id);
- values: ``a.value``, ``a.number``, ``a.text``, ``a.check_widget_range``, ``a.check_size``;
- models: ``a.refs(link, type)``, ``a.refs_of``, ``a.loader_ref(node, widget, role=, folder=)``;
- shapes: ``a.latent(link)``, ``a.image_size(link)``, ``a.sigma_steps``, ``a.guider``, ``a.vae_geometry``,
  ``a.resized_latent``, ``a.encoded_shape``;
- stages: ``a.sample_stage``, ``a.text_stage``, ``a.encode_stage``, ``a.decode_stage``, ``a.clip_vision_stage``,
  ``a.generic_stage(node)`` (what the generic reading builds for a node, for a pack wrapping a base node);
- words: ``a.note`` (the workflow), ``a.stage_note`` (the stage being built), ``a.unpriced(why)`` (why the stage
  has no figure).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Callable

from ...workload import TEXT_ENCODE, VAE_ENCODE, LatentShape, ModelRef, Stage
from ..base import MAX_CHAIN, _replace

# the analyzer members a handler may use (see the module docstring; tests/test_packs.py holds every module to it)
PACK_API = frozenset({
    "nodes", "link", "linked_inputs_of_type", "out_type", "label", "stage_kind", "advanced_start",
    "value", "number", "text", "check_widget_range", "check_size",
    "refs", "refs_of", "loader_ref",
    "latent", "image_size", "sigma_steps", "guider", "vae_geometry", "resized_latent", "encoded_shape",
    "sample_stage", "text_stage", "encode_stage", "decode_stage", "clip_vision_stage", "generic_stage",
    "note", "stage_note", "unpriced",
})


# socket types that carry no model (a loader's STRING or INT output: a name, a count)
PLAIN_TYPES = frozenset({"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO", "IMAGE", "MASK", "AUDIO", "VIDEO", "*"})


@dataclass
class Pack:
    name: str
    # loaders (see core.py for the value formats)
    diffusion_loaders: dict = field(default_factory=dict)  # class -> (name widget, gguf)
    checkpoint_loaders: dict = field(default_factory=dict)  # class -> {output slot: part}
    te_loaders: dict = field(default_factory=dict)  # class -> (file widgets, gguf, implicit clip type)
    simple_loaders: dict = field(default_factory=dict)  # class -> (name widget, role, folder, output type)
    lora_loaders: set = field(default_factory=set)
    # stage nodes
    samplers: set = field(default_factory=set)
    vae_decoders: set = field(default_factory=set)
    audio_decoders: set = field(default_factory=set)
    skipped_decoders: set = field(default_factory=set)  # decoders that are not image/video decodes
    vae_encoders: set = field(default_factory=set)
    text_encoders_no_stage: set = field(default_factory=set)  # CLIP -> CLIP, no compute
    stage_kinds: dict = field(default_factory=dict)  # class -> Stage kind, built by `stages[class]` or the generic builder
    # latents
    latent_creators: dict = field(default_factory=dict)  # class -> (channels, spatial /, temporal / | None, batch | None)
    vae_dependent_creators: set = field(default_factory=set)
    non_image_latents: dict = field(default_factory=dict)  # class -> what kind of latent
    pixel_latent_conditioning: set = field(default_factory=set)  # LATENT output = VAE encoding of `pixels`
    internal_encoders: dict = field(default_factory=dict)  # class -> image inputs it VAE-encodes inside
    # UI / values / outputs
    value_primitives: set = field(default_factory=set)
    virtual_nodes: set = field(default_factory=set)  # frontend-only nodes, never sent to the server
    output_nodes: set = field(default_factory=set)
    handled: set = field(default_factory=set)  # known to need nothing beyond the generic reading
    # class -> what it runs that no rule prices (a model the pack loads itself): an unpriced stage that says so,
    # never a node read as free
    unpriced: dict = field(default_factory=dict)
    relevant_types: set = field(default_factory=set)  # the pack's socket types that carry models / latents
    input_types: dict = field(default_factory=dict)  # class -> {input name: socket type}, for API prompts
    output_types: dict = field(default_factory=dict)  # class -> [socket type per output slot]
    widgets: dict = field(default_factory=dict)  # class -> leading widget names, in order (UI widgets_values)
    # image nodes that resize / crop every image of a batch and keep the count (a video's frame bound passes them)
    keeps_count: set = field(default_factory=set)
    frame_caps: dict = field(default_factory=dict)  # video loader -> the widget whose value > 0 caps its frames
    # a node that applies a CONTROL_NET it is given -> the family hint of that ControlNet (a node that takes only one
    # kind: ZenID's apply nodes take InstantID's ControlNet), read by the name rules like a sub-folder
    controlnet_hints: dict = field(default_factory=dict)
    # handlers
    refs: dict[str, Callable] = field(default_factory=dict)
    latents: dict[str, Callable] = field(default_factory=dict)
    images: dict[str, Callable] = field(default_factory=dict)
    values: dict[str, Callable] = field(default_factory=dict)
    sigmas: dict[str, Callable] = field(default_factory=dict)
    guiders: dict[str, Callable] = field(default_factory=dict)
    stages: dict[str, Callable] = field(default_factory=dict)
    # conditioning nodes that hand the model latents it attends over next to the image's (in-context tokens):
    # ``(a, node) -> [(latent rows, latent columns), ...]``, one entry per latent frame (Stage.reference_latents)
    cond_references: dict[str, Callable] = field(default_factory=dict)
    # latent creators with a frame rule of their own: ``(a, node, frames) -> frames``
    latent_frames: dict[str, Callable] = field(default_factory=dict)
    # MODEL -> MODEL nodes that clone the model off Dynamic VRAM's patcher: class -> why (the legacy path follows)
    disables_dynamic: dict = field(default_factory=dict)
    # image-to-video conditioning that VAE-encodes the image at the size given (no resize to the latent's)
    encodes_image_as_given: set = field(default_factory=set)

    def merged_with(self, other: "Pack") -> "Pack":
        out = Pack(name=f"{self.name}+{other.name}")
        for f in fields(Pack):
            if f.name == "name":
                continue
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, dict):
                clash = set(mine) & set(theirs)
                if clash:
                    raise ValueError(f"node packs {self.name} and {other.name} both define {f.name} for "
                                     f"{sorted(clash)[:3]}")
                setattr(out, f.name, {**mine, **theirs})
            else:
                setattr(out, f.name, mine | theirs)
        return out

    @cached_property
    def loaders(self) -> set:
        return (set(self.diffusion_loaders) | set(self.checkpoint_loaders) | set(self.te_loaders)
                | set(self.simple_loaders) | {t for t, h in self.refs.items() if getattr(h, "loader", False)})

    @cached_property
    def model_types(self) -> set:
        """The socket types the packs' loaders make (WANVIDEOMODEL, HYVIDEOMODEL, ...): a node no module describes
        that consumes one runs that model, so it is never read as free (analyzer._unpriced_model_input)."""
        out = {entry[3] for entry in self.simple_loaders.values()}
        for t in self.loaders:
            out.update(self.output_types.get(t, ()))
        return out - PLAIN_TYPES

    @cached_property
    def known_types(self) -> set:
        """Every class_type some pack gives a meaning to."""
        out = set(self.handled)
        for f in fields(Pack):
            if f.name != "name":
                out |= set(getattr(self, f.name))
        return out


def loader(fn: Callable) -> Callable:
    """Mark a refs handler as a loader (its outputs name model files even when no stage uses them)."""
    fn.loader = True
    return fn


def traced_working(a, stage, label: str, family: str, nbytes: int, why: str, note: str):
    """A stage whose network a pack runs itself, priced by a trace of that network (``nbytes``) times the allocator
    calibration of ``family`` (physics.memory.calibration); ``note``: the stage note's words before the figure."""
    from ...physics import memory  # noqa: PLC0415
    from ...units import fmt_mib  # noqa: PLC0415
    k = memory.calibration(family)
    a.stage_note(f"{note}, ~{fmt_mib(int(nbytes * k))}")
    return _replace(stage, working=((f"{label} (traced)", int(nbytes * k),
                                     f"{why}: {fmt_mib(nbytes)} × {k} for the allocator and untraced transients"),))


def with_working(a, stage, working, what: str, why: str = "first-principles formula, uncalibrated"):
    """A stage whose model a pack prices itself (Stage.working: (label, bytes, why) terms), with a stage note of
    their sum: "<what> working memory ~N MiB (<why>)"."""
    from ...units import fmt_mib  # noqa: PLC0415
    working = tuple(working)
    a.stage_note(f"{what} working memory ~{fmt_mib(sum(n for _, n, _ in working))} ({why})")
    return _replace(stage, working=working)


def reference_encodes(a, node, sizes, channels: int, spatial: int, images=()) -> list:
    """An edit node's in-node work: one VAE-encode stage per reference of (width, height) px in ``sizes`` (none
    without a VAE), then its text-encode stage with the VAE left out and ``images`` as vision images (the
    reference-image text encoders of nodes_boogu, nodes_qwen21, nodes_ming, nodes_joyimage)."""
    vae = list(a.refs(a.link(node, "vae"), "VAE")) if a.link(node, "vae") is not None else []
    encodes = [Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type, models=tuple(vae),
                     latent=LatentShape(batch=1, channels=channels, height=h // spatial, width=w // spatial,
                                        pixel_height=h, pixel_width=w, spatial_compression=spatial,
                                        source_node=node.id, source_type=node.type))
               for w, h in sizes] if vae else []
    text = a.text_stage(node)
    text = _replace(text, kind=TEXT_ENCODE, models=tuple(m for m in text.models if m.role != "vae"),
                    images=tuple(images))
    return encodes + [text]


def encode_and_prompts(a, node, image_input: str, min_tokens: int = 0) -> list:
    """An inpainting node's own work: the ``image_input`` it VAE-encodes inside, then the prompts it encodes itself
    with the CLIP it is given (that stage without the VAE, a checkpoint's VAE part included), at ``min_tokens`` at
    least (PowerPaint's task prompts, ZenID's fixed ones)."""
    text = a.text_stage(node)
    text = _replace(text, models=tuple(m for m in text.models if m.role != "vae" and m.part != "vae"),
                    text_tokens=max(text.text_tokens or 0, min_tokens) if min_tokens else text.text_tokens)
    return [a.encode_stage(node, pixels=image_input), text]


def image_sd_latent(a, node, image_input: str, depth: int) -> LatentShape | None:
    """The [batch, 4, h / 8, w / 8] latent an inpainting node returns for the IMAGE it VAE-encodes inside (BrushNet's
    zeros of the masked image, ZenID's encoded source), at the image's size cropped to multiples of 8; None when the
    image's size is not known before running."""
    size = a.image_size(a.link(node, image_input), depth + 1)
    if size is None or not size.width or not size.height:
        return None
    a.check_size(node, size.width, size.height, None, size.batch)
    return LatentShape(batch=size.batch, channels=4, height=size.height // 8, width=size.width // 8,
                       pixel_height=size.height // 8 * 8, pixel_width=size.width // 8 * 8, source_node=node.id,
                       source_type=node.type)


def empty_sd_latent(a, node, width: int, height: int, batch: int) -> LatentShape:
    """The empty latent many packs' size nodes make, zeros [batch, 4, height // 8, width // 8] (EmptyLatentImage's
    layout), after ComfyUI's own size limits (Analyzer.check_size: a clear error naming the node)."""
    a.check_size(node, width, height, None, batch)
    return LatentShape(batch=batch, channels=4, height=height // 8, width=width // 8, pixel_height=height,
                       pixel_width=width, spatial_compression=8, source_node=node.id, source_type=node.type)


def model_file_loader(widget: str, folder: str, out_type: str, role: str = "diffusion", **fields) -> Callable:
    """The refs handler of a loader node that names one model file in ``widget`` (from models/``folder``) and
    outputs it as ``out_type``: the file a stage of that pack runs (a utility model priced as a stage's model).
    ``fields``: more ModelRef fields the loader fixes (a weight_dtype, a family hint)."""
    def refs(a, node, slot, type_, visiting):
        return [a.loader_ref(node, widget, role=role, folder=folder, **fields)] if type_ == out_type else []
    return refs


def lora_on_model(a, node, visiting, name_widget: str = "lora_name", strength_widget: str = "strength_model",
                  folder: str = "loras") -> list:
    """A pack's MODEL -> MODEL LoRA node: the models upstream plus this LoRA (unless strength 0)."""
    base = a.refs(a.link(node, "model"), "MODEL", visiting)
    strength = a.number(node, strength_widget, 1.0, integer=False)
    name = a.value(node, name_widget)
    if strength == 0 or not isinstance(name, str) or not name:
        return base
    return base + [ModelRef(name=name, role="lora", folder=folder, loader_node=node.id, loader_type=node.type,
                            strength=strength)]


def model_with(a, node, type_, visiting, inputs) -> list:
    """The refs handler of a MODEL -> MODEL node that patches the model with what other inputs load (``inputs``:
    (input name, socket type) pairs): the model it is given, then those refs, each once (held kinds ride this way)."""
    if type_ != "MODEL":
        return []
    refs = list(a.refs(a.link(node, "model"), "MODEL", visiting))
    for name, kind in inputs:
        refs += [r for r in a.refs(a.link(node, name), kind, visiting) if r not in refs]
    return refs


def upstream_chain(a, link, next_link: Callable) -> list:
    """The nodes from ``link`` upstream, following ``next_link(node) -> link | None`` (bounded, no cycles)."""
    out: list = []
    for _ in range(MAX_CHAIN):
        node = a.nodes.get(link.node) if link else None
        if node is None or node in out:
            break
        out.append(node)
        link = next_link(node)
    return out


def _load_packs() -> tuple[list[Pack], Pack]:
    packs = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: (m.name != "core", m.name)):
        module = importlib.import_module(f"{__name__}.{info.name}")
        pack = getattr(module, "PACK", None)
        if isinstance(pack, Pack):
            packs.append(pack)
    merged = Pack(name="all")
    for pack in packs:
        merged = merged.merged_with(pack)
    merged.name = "all"
    return packs, merged


PACKS, REGISTRY = _load_packs()
