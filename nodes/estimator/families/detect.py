"""Which model a file is, from its header alone: Inventory -> ModelInfo.

The key tests follow ComfyUI's own detection (``comfy/model_detection.py detect_unet_config``,
``comfy/sd.py detect_te_model`` and the ``VAE.__init__`` branches, ComfyUI 0.8.0; see
ComfyUI 0.8.0) so a file is called what ComfyUI will load it as. GGUF files
converted by ComfyUI-GGUF keep the original key names; llama.cpp-style text-encoder GGUFs are told
apart by ``general.architecture`` and their ``<arch>.*`` metadata.

Arch numbers use one vocabulary for every family (the memory model keys off them):
hidden_size, depth, heads, head_dim, ffn_dim, mlp_ratio, in_channels, out_channels, patch_size
(tuple), latent_channels, spatial_compression, temporal_compression, context_dim, layers, vocab.
Numbers read from the file win; the rest come from the family's defaults in ``FAMILIES``.
``in_channels`` counts latent channels (what the VAE produces and EmptyLatent* makes): where
ComfyUI reports a packed width (Qwen-Image 64 = 16 x 2 x 2) it is divided by the patch area
(Flux Fill keeps ComfyUI's 96 = 16 latent + 16 masked latent + 64 mask).

Never raises on a readable Inventory: anything it cannot place is kind/family "unknown" with the
file's bytes and a note saying why.
"""
from __future__ import annotations

import contextvars
import os
import re
import threading
from collections import Counter
from dataclasses import replace
from types import MappingProxyType
from typing import Callable, Mapping

from ..files import Inventory, TensorInfo, inspect_file
from ._spec import Family, Found
from .registry import FAMILIES, GGUF_ARCH, detectors
from ..model_info import (
    AUDIO_ENCODER, CHECKPOINT, CLIP_VISION, CONTROLNET, DIFFUSION, LORA, TEXT_ENCODER, UNKNOWN, VAE, ModelInfo,
)

__all__ = ["Family", "FAMILIES", "LIVE_IDENTIFY", "describe", "family_defaults", "from_comfy_detection", "from_comfy_vae",
           "identify", "info_to_dict"]


# The families' full-size architecture numbers live in their modules (families/<group>.py; registry.FAMILIES):
# ComfyUI's model_detection.py / supported_models.py for the diffusion models, each text encoder's Hugging
# Face config.json, comfy/sd.py's VAE branches. "depth" counts all transformer blocks (Flux: double + single).
# Key prefixes (model_detection.unet_prefix_from_state_dict; supported_models_base.py:45-46;
# supported_models.py text_encoder_key_prefix / vae_key_prefix).
_UNET_PREFIXES = ("model.diffusion_model.", "model.model.", "net.", "diffusion_model.")
_VAE_PREFIXES = ("first_stage_model.", "vae.")
_TE_PREFIXES = ("cond_stage_model.", "conditioner.embedders.", "text_encoders.", "text_encoder.")

_LORA_SUFFIXES = (".lora_up.weight", ".lora_down.weight", ".lora_A.weight", ".lora_B.weight",
                  ".lora.up.weight", ".lora.down.weight", "lora_linear_layer.up.weight",
                  "lora_linear_layer.down.weight", ".hada_w1_a", ".hada_w1_b", ".lokr_w1", ".lokr_w2")
_LORA_DOWN = (".lora_down.weight", ".lora_A.weight", ".lora.down.weight", "lora_linear_layer.down.weight")



# ---------------------------------------------------------------------------------------------
class _View:
    """Tensors with a prefix stripped; the lookups ComfyUI's detection does.

    Key scans are the cost of identification (a Flux file has ~780 keys, an SDXL checkpoint
    ~2,500), so keys are grouped once by their first component and most lookups touch one group.
    """

    def __init__(self, tensors: Mapping[str, TensorInfo], prefix: str = ""):
        self.prefix = prefix
        self.name = ""  # the file name, for the detectors a name decides (Flux Kontext, Wan 2.2's experts)
        if prefix:
            n = len(prefix)
            self.t = {k[n:]: v for k, v in tensors.items() if k.startswith(prefix)}
        else:
            self.t = tensors
        self._groups: dict[str, list[str]] | None = None
        self._blocks: dict[str, int] = {}

    @property
    def groups(self) -> dict[str, list[str]]:
        if self._groups is None:
            groups: dict[str, list[str]] = {}
            for k in self.t:
                groups.setdefault(k.partition(".")[0], []).append(k)
            self._groups = groups
        return self._groups

    def has(self, key: str) -> bool:
        return key in self.t

    def shape(self, key: str) -> tuple[int, ...] | None:
        t = self.t.get(key)
        return t.shape if t is not None else None

    def dim(self, key: str, index: int, default: int | None = None) -> int | None:
        s = self.shape(key)
        try:
            return int(s[index]) if s is not None else default
        except IndexError:
            return default

    def startswith(self, prefix: str) -> bool:
        head, dot, rest = prefix.partition(".")
        keys = self.groups.get(head)
        if not keys:
            return False
        if dot and not rest:  # "name.": the group exists (its keys all have a second part or are "name")
            return any(k != head for k in keys)
        return any(k.startswith(prefix) for k in keys)

    def count_blocks(self, prefix: str) -> int:
        """Consecutive block indices 0..n-1 present after ``prefix`` (model_detection.count_blocks)."""
        hit = self._blocks.get(prefix)
        if hit is not None:
            return hit
        n = len(prefix)
        seen = {k[n:].partition(".")[0] for k in self.groups.get(prefix.partition(".")[0], ()) if k.startswith(prefix)}
        count = 0
        while str(count) in seen:
            count += 1
        self._blocks[prefix] = count
        return count


_Found = Found  # a header detector's answer (families/_spec.py)


# ---------------------------------------------------------------------------------------------
# Public API
# Inside ComfyUI, the adapter can set ComfyUI's own detection: (path, Inventory) -> {"kind":
# "diffusion", "class": "Flux", "unet_config": {...}, ...} or None. It is asked only about files
# this module cannot identify, so a model family released after this pack is still recognised.
LIVE_IDENTIFY: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("vram_budget_live_identify",
                                                                              default=None)


def describe(path: str | os.PathLike) -> ModelInfo:
    """inspect_file + identify: ModelFileError on a file that cannot be read, else a ModelInfo."""
    inv = inspect_file(path)
    info = identify(inv, filename_hint=os.path.basename(os.fspath(path)))
    hook = LIVE_IDENTIFY.get()
    if hook is not None and info.kind == UNKNOWN:
        found = hook(os.fspath(path), inv)
        if found and found.get("kind") == "diffusion":
            info = from_comfy_detection(info, found)
        elif found and found.get("kind") == "vae":
            info = from_comfy_vae(info, found)
        elif found and found.get("kind") == "text_encoder":
            cls = str(found.get("class") or "unknown")
            info = replace(info, kind=TEXT_ENCODER, family=f"comfy-te:{cls}",
                           label=f"{cls} text encoder (ComfyUI's detection)",
                           evidence=(f"comfy.sd.detect_te_model: TEModel.{cls}",),
                           notes=tuple(n for n in info.notes if "unknown architecture" not in n))
    return info


def from_comfy_vae(info: ModelInfo, found: Mapping) -> ModelInfo:
    """A VAE file this module does not know, as comfy.sd.VAE builds it (the branch its keys select)."""
    cls = str(found.get("class") or "unknown")
    arch = {"comfy_class": cls, "latent_channels": found.get("latent_channels"),
            "spatial_compression": found.get("spatial"), "temporal_compression": found.get("temporal")}
    return replace(info, kind=VAE, family=f"comfy-vae:{cls}", label=f"{cls} VAE (ComfyUI's detection)",
                   arch=MappingProxyType({k: v for k, v in arch.items() if v is not None}),
                   params=int(found.get("params") or info.params),
                   evidence=(f"comfy.sd.VAE builds {cls} from these keys",),
                   notes=tuple(n for n in info.notes if "unknown architecture" not in n))


_ARCH_KEYS = {"hidden_size": ("hidden_size", "dim", "model_channels", "inner_dim"),
              "depth": ("depth", "num_layers", "num_blocks", "layers"),
              "heads": ("num_heads", "heads", "num_attention_heads")}


def from_comfy_detection(info: ModelInfo, found: Mapping) -> ModelInfo:
    """A file this module does not know, as ComfyUI's model detection names it."""
    cls = str(found.get("class") or "unknown")
    cfg = found.get("unet_config") if isinstance(found.get("unet_config"), Mapping) else {}
    arch: dict = {"comfy_class": cls, "latent_channels": found.get("latent_channels"),
                  "memory_usage_factor": found.get("memory_usage_factor")}
    for ours, keys in _ARCH_KEYS.items():
        value = next((cfg[k] for k in keys if isinstance(cfg.get(k), int)), None)
        if value is not None:
            arch[ours] = value
    return replace(info, kind=DIFFUSION, family=f"comfy:{cls}", label=f"{cls} (ComfyUI's detection)",
                   arch=MappingProxyType(arch),
                   evidence=(f"comfy.model_detection.model_config_from_unet: supported_models.{cls}",),
                   notes=tuple(n for n in info.notes if "unknown architecture" not in n))


# Results per Inventory object: files.inspect_file returns the same (cached) Inventory while the
# file is unchanged, so a warm describe() costs a dict lookup. The Inventory is kept in the value so
# its id cannot be reused while the entry lives.
_results: dict[tuple[int, str], tuple[Inventory, ModelInfo]] = {}
_results_lock = threading.Lock()


def identify(inv: Inventory, filename_hint: str | None = None) -> ModelInfo:
    """What ``inv`` is. Never raises for a readable Inventory."""
    name = filename_hint or inv.name
    key = (id(inv), name)
    with _results_lock:
        hit = _results.get(key)
    if hit is not None and hit[0] is inv:
        return hit[1]
    try:
        info = _identify(inv, name)
    except Exception as exc:  # defensive: detection must never break an estimate
        info = _unknown(inv, name, notes=(f"detection failed ({type(exc).__name__}: {str(exc)[:120]})",))
    with _results_lock:
        if len(_results) > 4096:
            _results.clear()
        _results[key] = (inv, info)
    return info


def family_defaults(family: str) -> dict:
    fam = FAMILIES.get(family)
    return dict(fam.arch) if fam else {}


def info_to_dict(info: ModelInfo) -> dict:
    """A JSON-ready dict (tuples become lists, parts recurse)."""
    def plain(v):
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        return v

    return {
        "kind": info.kind, "family": info.family, "label": info.label, "variant": info.variant,
        "params": info.params, "weights_bytes": info.weights_bytes, "dtype": info.dtype,
        "quantization": info.quantization, "arch": plain(info.arch), "evidence": list(info.evidence),
        "source": info.source, "path": info.path, "largest_tensor_bytes": info.largest_tensor_bytes,
        "parts": {k: info_to_dict(v) for k, v in info.parts.items()}, "notes": list(info.notes),
    }


# ---------------------------------------------------------------------------------------------
def _identify(inv: Inventory, name: str) -> ModelInfo:
    if not inv.tensors:
        return _unknown(inv, name, notes=inv.notes or ("no tensors in the file",))
    if inv.format == "pickle":
        return _unknown(inv, name, notes=inv.notes)

    # A checkpoint bundles a diffusion model with its VAE and/or text encoders (CheckpointLoaderSimple).
    view = _View(inv.tensors)
    parts = _split_checkpoint(inv.tensors, view)
    if parts is not None:
        return _checkpoint(inv, name, parts)

    gguf_arch = str(inv.metadata.get("general.architecture", "")) if inv.format == "gguf" else ""
    kind, found = _detect_any(view, name, gguf_arch, inv.metadata)
    if found is None:
        # text encoder(s) saved with their checkpoint prefix (e.g. text_encoders.t5xxl.transformer.*)
        if {"text_encoders", "text_encoder", "cond_stage_model", "conditioner"} & view.groups.keys():
            te = _checkpoint_clip(dict(inv.tensors), inv, name)
            if te.kind == TEXT_ENCODER:
                return te
        return _unknown(inv, name)
    return _make_info(inv.tensors, inv, kind, found, name)


def _detect_any(view: _View, name: str, gguf_arch: str = "", metadata: Mapping | None = None):
    """(kind, _Found) or (None, None). Order matters: adapters before the models they resemble."""
    found = _detect_lora(view)
    if found:
        return LORA, found
    found = _detect_controlnet(view)
    if found:
        return CONTROLNET, found
    for prefix in _candidate_unet_prefixes(view):
        found = _detect_diffusion(_View(view.t, prefix), name)
        if found:
            if prefix:
                found = found._replace(evidence=found.evidence + (f"key prefix {prefix!r} stripped",))
            return DIFFUSION, found
    for prefix in ("", "vae.", "first_stage_model."):
        if prefix and not view.startswith(prefix):
            continue
        found = _detect_vae(_View(view.t, prefix) if prefix else view)
        if found:
            return VAE, found
    found = _detect_clip_vision(view)
    if found:
        return CLIP_VISION, found
    found = _detect_audio_encoder(view)
    if found:
        return AUDIO_ENCODER, found
    for prefix in _candidate_te_prefixes(view):
        found = _detect_te(_View(view.t, prefix) if prefix else view)
        if found:
            return TEXT_ENCODER, found
    if gguf_arch:
        found = _detect_gguf_te(view, gguf_arch, metadata or {})
        if found:
            return TEXT_ENCODER, found
        fam = GGUF_ARCH.get(gguf_arch)
        if fam:
            return DIFFUSION, _Found(fam, {}, (f"GGUF general.architecture = {gguf_arch!r} (keys not recognised)",))
    return None, None


def _candidate_unet_prefixes(view: _View) -> list[str]:
    counts = Counter()
    for head in ("model", "net", "diffusion_model"):
        for k in view.groups.get(head, ()):
            if k.startswith(_UNET_PREFIXES):
                counts[next(p for p in _UNET_PREFIXES if k.startswith(p))] += 1
    out = [p for p, n in counts.most_common() if n > 5]
    return out + [""]


def _candidate_te_prefixes(view: _View) -> list[str]:
    """'' plus the common wrappers around a text encoder state dict ("model." is a real LLM prefix)."""
    return [""] + [p for p in ("transformer.", "text_model.", "encoder.model.") if view.startswith(p)]


# ---------------------------------------------------------------------------------------------
# Diffusion models (detect_unet_config order, model_detection.py)
def _detect_diffusion(v: _View, name: str) -> _Found | None:
    """The family modules' header detectors (their DETECT sections: families/_spec.Detector), in ComfyUI's
    model_detection.py order."""
    v.name = name
    for detect in detectors(DIFFUSION):
        found = detect(v)
        if found is not None:
            return found
    return None




# ---------------------------------------------------------------------------------------------
# Text encoders (comfy/sd.py detect_te_model order)
def _detect_te(v: _View) -> _Found | None:
    """text_encoders.py's detectors (its DETECT section), in comfy/sd.py detect_te_model's order."""
    return _first(TEXT_ENCODER, v)


def _detect_gguf_te(v: _View, arch: str, meta: Mapping) -> _Found | None:
    """llama.cpp naming (token_embd / blk.N / enc.blk.N) with general.architecture."""
    if not (v.has("token_embd.weight") or v.startswith("blk.") or v.startswith("enc.blk.")):
        return None
    hidden = meta.get(f"{arch}.embedding_length")
    layers = meta.get(f"{arch}.block_count")
    vocab = v.dim("token_embd.weight", 0)
    ev = [f"GGUF general.architecture = {arch!r}"]
    a = arch.lower()
    if a in ("t5", "t5encoder"):
        family = "umt5-xxl" if vocab == 256384 else "t5-xxl"
        if vocab:
            ev.append(f"token_embd rows {vocab}")
    elif a.startswith("qwen2"):
        family = "qwen2.5-vl-7b" if hidden in (None, 3584) else "qwen2.5-3b"
    elif a.startswith("qwen3"):
        family = "qwen3"
    elif a.startswith("gemma"):
        family = "gemma"
    elif a in ("llama", "mistral", "mistral3"):
        family = "mistral" if hidden == 5120 else "llama3-8b"
    else:
        return None
    out = dict(FAMILIES[family].arch)
    if isinstance(hidden, int):
        out["hidden_size"] = hidden
    if isinstance(layers, int):
        out["layers"] = layers
    if vocab:
        out["vocab"] = vocab
    return _Found(family, out, tuple(ev))


# ---------------------------------------------------------------------------------------------
# VAEs (comfy/sd.py VAE.__init__ branches)
def _detect_vae(v: _View) -> _Found | None:
    """The family modules' VAE detectors (their DETECT sections), in comfy/sd.py VAE.__init__'s order."""
    return _first(VAE, v)


# ---------------------------------------------------------------------------------------------
# CLIP vision (comfy/clip_vision.py)
def _detect_clip_vision(v: _View) -> _Found | None:
    """adapters.py's CLIP vision detectors (comfy/clip_vision.py)."""
    return _first(CLIP_VISION, v)


# ---------------------------------------------------------------------------------------------
# Audio encoders (comfy/audio_encoders/audio_encoders.py load_audio_encoder_from_sd, 0.18.2)
def _detect_audio_encoder(v: _View) -> _Found | None:
    """adapters.py's audio encoder detectors (wav2vec2, then Whisper, as load_audio_encoder_from_sd tests them)."""
    return _first(AUDIO_ENCODER, v)


def _first(kind: str, v: _View) -> _Found | None:
    """The first family module detector of `kind` that takes the header (registry.detectors' order)."""
    for detect in detectors(kind):
        found = detect(v)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------------------------------------
# LoRA
_WAN_LORA = re.compile(r"(?:^|[._])blocks[._]\d+[._](?:self_attn|cross_attn|ffn)", re.M)


def _lora_target(keys: str) -> str:
    """The base-model family a LoRA's key names point at (plain substring tests: fast on ~1,000 keys)."""
    if "double_blocks" in keys or "single_blocks" in keys or "single_transformer_blocks" in keys:
        return "flux"
    if "joint_blocks" in keys:
        return "sd3"
    if any(m in keys for m in ("input_blocks", "output_blocks", "middle_block", "down_blocks", "up_blocks",
                               "mid_block")):
        return "sd"
    if ("self_attn" in keys or "cross_attn" in keys or "ffn" in keys) and _WAN_LORA.search(keys):
        return "wan"
    if "transformer_blocks" in keys and any(m in keys for m in ("img_mlp", "txt_mlp", "img_mod", "add_q_proj")):
        return "qwen-or-flux"
    if "layers" in keys and "attention" in keys:
        return "lumina2"
    return "unknown"


def _detect_lora(v: _View) -> _Found | None:
    if not any(k.endswith(_LORA_SUFFIXES) for k in v.t):
        return None
    downs = [(k, t) for k, t in v.t.items() if k.endswith(_LORA_DOWN)]
    ranks = Counter(t.shape[0] for _, t in downs if t.shape)
    rank = ranks.most_common(1)[0][0] if ranks else None
    keys = "\n".join(v.t.keys())
    target = _lora_target(keys)
    # widths of the adapted layers (lora_up / lora_B rows = the base layer's output features)
    widths = Counter()
    for k, t in v.t.items():
        if k.endswith((".lora_up.weight", ".lora_B.weight", ".lora.up.weight")) and t.shape:
            widths[t.shape[0]] += 1
    ev = [f"LoRA keys ({len(downs)} adapted layers, down/A matrices)"]
    if target == "wan":
        dims = {w for w in widths if w in (1536, 3072, 5120)}
        target = "wan2.1-14b" if 5120 in dims else "wan2.2-ti2v-5b" if 3072 in dims else \
            "wan2.1-1.3b" if 1536 in dims else "wan"
    elif target == "flux":
        target = "flux2" if 6144 in widths else "flux1-dev"
    elif target == "sd":
        if "lora_te2_" in keys or "text_encoder_2" in keys or "conditioner" in keys:
            target = "sdxl"
        else:
            ctx = {t.shape[1] for k, t in downs if "attn2" in k and ("to_k" in k or "to_v" in k) and len(t.shape) > 1}
            target = "sdxl" if 2048 in ctx else "sd2" if 1024 in ctx else "sd15"
    elif target == "qwen-or-flux":
        target = "qwen-image" if ("img_mlp" in keys or "txt_mlp" in keys) else "flux1-dev"
    if target != "unknown":
        ev.append(f"key names point at {target}")
    arch = dict(rank=rank, ranks=dict(sorted(ranks.items())), target_family=target, adapted_layers=len(downs),
                has_alpha=any(k.endswith(".alpha") for k in v.t),
                text_encoder=any(s in keys for s in ("lora_te", "text_encoder", "lora_te1_", "lora_te2_")))
    return _Found("lora", arch, tuple(ev))


# ---------------------------------------------------------------------------------------------
# ControlNet (comfy/controlnet.py load_controlnet)
def _detect_controlnet(v: _View) -> _Found | None:
    view = _View(v.t, "control_model.") if v.startswith("control_model.") else v
    if view.has("input_hint_block.0.weight") and view.startswith("zero_convs."):
        ctx = None
        for k, t in view.t.items():
            if k.endswith("attn2.to_k.weight") and len(t.shape) > 1:
                ctx = t.shape[1]
                break
        target = {768: "sd15", 1024: "sd2", 2048: "sdxl"}.get(ctx, "sd15" if not view.has("label_emb.0.0.weight") else "sdxl")
        return _Found("controlnet", dict(target_family=target, context_dim=ctx,
                                         model_channels=view.dim("input_blocks.0.0.weight", 0)),
                      ("keys input_hint_block.* + zero_convs.* (ControlNet for SD UNets)",))
    if view.startswith("controlnet_cond_embedding.") and view.startswith("controlnet_down_blocks."):
        return _Found("controlnet", dict(target_family="sd"), ("diffusers ControlNet keys",))
    if view.startswith("controlnet_blocks.") or view.startswith("controlnet_single_blocks.") \
            or view.has("controlnet_x_embedder.weight") or view.has("pos_embed_input.proj.weight"):
        if view.startswith("double_blocks.") or view.has("controlnet_x_embedder.weight") or \
                view.startswith("single_transformer_blocks.") or view.startswith("controlnet_single_blocks."):
            target = "flux2" if view.has("double_stream_modulation_img.lin.weight") else "flux1-dev"
        elif view.has("pos_embed_input.proj.weight") or view.startswith("transformer_blocks."):
            target = "sd3"
        else:
            target = "unknown"
        hidden = view.dim("img_in.weight", 0) or view.dim("controlnet_blocks.0.weight", 0)
        return _Found("controlnet", dict(target_family=target, hidden_size=hidden,
                                         depth=view.count_blocks("controlnet_blocks.")),
                      ("keys controlnet_blocks.* (DiT ControlNet)",))
    if view.startswith("body.") and view.startswith("conv_in.") or view.startswith("adapter.body."):
        return _Found("controlnet", dict(target_family="sd", adapter="t2i"), ("keys body.* (T2I-Adapter)",))
    return None


# ---------------------------------------------------------------------------------------------
# Checkpoints
def _split_checkpoint(tensors: Mapping[str, TensorInfo], view: _View | None = None) -> dict[str, dict[str, TensorInfo]] | None:
    if view is not None:  # quick no: a checkpoint has a model and a VAE or text-encoder top-level group
        heads = view.groups
        if not ({"model", "net"} & heads.keys()) or not (
                {"first_stage_model", "vae", "cond_stage_model", "conditioner", "text_encoders", "text_encoder"}
                & heads.keys()):
            return None
    groups: dict[str, dict[str, TensorInfo]] = {"model": {}, "clip": {}, "vae": {}, "other": {}}
    for k, t in tensors.items():
        if k.startswith(_UNET_PREFIXES[:3]):
            groups["model"][k] = t
        elif k.startswith(_VAE_PREFIXES):
            groups["vae"][k] = t
        elif k.startswith(_TE_PREFIXES):
            groups["clip"][k] = t
        else:
            groups["other"][k] = t
    if len(groups["model"]) <= 5 or not (groups["clip"] or groups["vae"]):
        return None
    return groups


def _checkpoint(inv: Inventory, name: str, groups: dict[str, dict[str, TensorInfo]]) -> ModelInfo:
    parts: dict[str, ModelInfo] = {}
    model_view = _View(groups["model"])
    prefix = next((p for p in _UNET_PREFIXES if model_view.startswith(p)), "")
    found = _detect_diffusion(_View(groups["model"], prefix), name)
    if found is None:
        found = _Found("unknown", {}, (f"diffusion model under {prefix!r} not recognised",))
        parts["model"] = _make_info(groups["model"], inv, UNKNOWN, found, name)
    else:
        parts["model"] = _make_info(groups["model"], inv, DIFFUSION, found, name)
    if groups["vae"]:
        vprefix = next(p for p in _VAE_PREFIXES if any(k.startswith(p) for k in groups["vae"]))
        vf = _detect_vae(_View(groups["vae"], vprefix))
        parts["vae"] = _make_info(groups["vae"], inv, VAE if vf else UNKNOWN,
                                  vf or _Found("unknown", {}, ("VAE keys not recognised",)), name)
    if groups["clip"]:
        parts["clip"] = _checkpoint_clip(groups["clip"], inv, name)
    other = groups["other"]
    model = parts["model"]
    ev = (f"bundle: {', '.join(k for k in ('model', 'clip', 'vae') if k in parts)} under their checkpoint prefixes",) \
        + model.evidence
    notes = ()
    if other:
        notes = (f"{len(other)} tensors outside model/clip/vae ({_fmt_count(sum(t.nbytes for t in other.values()))} bytes)",)
    fam = model.family
    label = f"{FAMILIES.get(fam, FAMILIES['unknown']).label} checkpoint"
    # what the parts load (a T5's embed_tokens copy is not) plus the tensors outside them
    params = sum(p.params for p in parts.values()) + sum(t.numel for t in other.values())
    nbytes = sum(p.weights_bytes for p in parts.values()) + sum(t.nbytes for t in other.values())
    return ModelInfo(
        kind=CHECKPOINT, family=fam, label=label, params=params, weights_bytes=nbytes,
        dtype=inv.main_dtype, quantization=inv.quantization, arch=model.arch, evidence=ev, source="header",
        path=inv.path, largest_tensor_bytes=2 * inv.largest_tensor_numel, parts=MappingProxyType(parts),
        variant=model.variant, notes=notes,
    )


def _checkpoint_clip(tensors: dict[str, TensorInfo], inv: Inventory, name: str) -> ModelInfo:
    """The text encoder(s) of a checkpoint; several (SDXL: CLIP-L + CLIP-G) become sub-parts."""
    # group by the sub-prefix that holds one encoder
    subs: dict[str, dict[str, TensorInfo]] = {}
    pat = re.compile(r"^(conditioner\.embedders\.\d+\.(?:transformer\.|model\.)?|text_encoders\.[^.]+\.(?:transformer\.)?|"
                     r"cond_stage_model\.(?:transformer\.|model\.)?|text_encoder\.)")
    for k, t in tensors.items():
        m = pat.match(k)
        subs.setdefault(m.group(1) if m else "", {})[k] = t
    encoders: dict[str, ModelInfo] = {}
    for sub_prefix, sub in subs.items():
        v = _View(sub, sub_prefix)
        found = _detect_te(v)
        if found is None:
            found = _Found("unknown", {}, (f"text encoder under {sub_prefix!r} not recognised",))
            info = _make_info(sub, inv, UNKNOWN, found, name)
        else:
            info = _make_info(sub, inv, TEXT_ENCODER, found._replace(
                evidence=found.evidence + (f"under {sub_prefix!r}",)), name)
        key = info.family
        while key in encoders:
            key += "+"
        encoders[key] = info
    if len(encoders) == 1:
        return next(iter(encoders.values()))
    main = max(encoders.values(), key=lambda i: i.weights_bytes)
    label = " + ".join(FAMILIES.get(i.family, FAMILIES["unknown"]).label for i in encoders.values())
    return ModelInfo(
        kind=TEXT_ENCODER, family=main.family, label=label, params=sum(i.params for i in encoders.values()),
        weights_bytes=sum(i.weights_bytes for i in encoders.values()), dtype=main.dtype,
        quantization=main.quantization, arch=main.arch, evidence=tuple(f"{k}: {i.evidence[0]}" for k, i in encoders.items()),
        source="header", path=inv.path, largest_tensor_bytes=max(i.largest_tensor_bytes for i in encoders.values()),
        parts=MappingProxyType(encoders),
    )


# ---------------------------------------------------------------------------------------------
# Tensors in a text-encoder file that ComfyUI does not load as weights: T5/umT5 files carry
# encoder.embed_tokens.weight as a copy of shared.weight, but comfy's T5 has only `shared`
# (comfy/text_encoders/t5.py:234); Comfy-Org's umT5 files carry the SentencePiece model as a
# uint8 tensor `spiece_model`, which sd.py passes to the tokenizer (sd.py:1165-1194 in 0.8.0).
_NOT_LOADED_T5 = ("encoder.embed_tokens.weight", "spiece_model")


def _loaded_tensors(tensors: Mapping[str, TensorInfo], family: str) -> tuple[Mapping[str, TensorInfo], tuple[str, ...]]:
    """The tensors ComfyUI loads as weights; keys may carry a checkpoint prefix
    ("text_encoders.t5xxl.transformer.encoder.embed_tokens.weight")."""
    if not family.startswith(("t5", "umt5")):
        return tensors, ()
    drop = [k for k in tensors if _not_loaded_t5(k, tensors)]
    if not drop:
        return tensors, ()
    kept = {k: v for k, v in tensors.items() if k not in drop}
    return kept, (f"not loaded by ComfyUI, so not counted: {', '.join(drop)} (text_encoders/t5.py: only `shared`; "
                  "the SentencePiece blob goes to the tokenizer)",)


def _not_loaded_t5(key: str, tensors: Mapping[str, TensorInfo]) -> bool:
    for suffix in _NOT_LOADED_T5:
        if key == suffix or key.endswith("." + suffix):
            prefix = key[: len(key) - len(suffix)]
            return suffix == "spiece_model" or prefix + "shared.weight" in tensors
    return False


def _make_info(tensors: Mapping[str, TensorInfo], inv: Inventory, kind: str, found: _Found, name: str) -> ModelInfo:
    tensors, dropped = _loaded_tensors(tensors, found.family) if kind == TEXT_ENCODER else (tensors, ())
    if dropped:
        found = found._replace(notes=tuple(found.notes) + dropped)
    fam = FAMILIES.get(found.family, FAMILIES["unknown"])
    arch = dict(fam.arch)
    arch.update({k: v for k, v in found.arch.items() if v is not None})
    sub = Inventory(inv.path, inv.format, inv.file_bytes, tensors, inv.metadata, inv.exact, inv.notes) \
        if tensors is not inv.tensors else inv
    label = fam.label
    if found.variant:
        label = f"{label} [{found.variant.replace('_', '-')}]"
    return ModelInfo(
        kind=kind if found.family != "unknown" else UNKNOWN, family=found.family, label=label,
        params=sub.param_count, weights_bytes=sub.total_bytes, dtype=sub.main_dtype, quantization=sub.quantization,
        arch=MappingProxyType(arch), evidence=found.evidence, source="header", path=inv.path,
        largest_tensor_bytes=2 * sub.largest_tensor_numel, variant=found.variant,
        notes=tuple(found.notes) + tuple(inv.notes),
    )


def _unknown(inv: Inventory, name: str, notes: tuple[str, ...] = ()) -> ModelInfo:
    why = ("unknown architecture: key names match no family this estimator knows; size from the file",)
    return ModelInfo(
        kind=UNKNOWN, family="unknown", label="unknown model", params=inv.param_count,
        weights_bytes=inv.total_bytes, dtype=inv.main_dtype, quantization=inv.quantization, arch=MappingProxyType({}),
        evidence=(), source="header" if inv.exact and inv.tensors else "file size", path=inv.path,
        largest_tensor_bytes=2 * inv.largest_tensor_numel, notes=tuple(notes) + (why if not notes else ()),
    )


def _fmt_count(n: int) -> str:
    return f"{n:,}"
