"""A model file known only by its name: kind, family, parameter count and precision -> a ModelInfo.

Used for a file that is neither on this machine nor in the catalogue (budget.resolve_model). Every
result has ``source == "inferred"`` and says its assumptions in ``evidence`` and ``notes``; a name
that tells nothing usable gives no ModelInfo (the model stays unpriced, with the reason).

- kind: the loader's role and folder first, then name tokens (lora, vae, controlnet, t5xxl, ...).
- family: ordered name patterns (``_DIFFUSION``, ``_TEXT``, ``_VAE``, ``_VISION``); the full path
  counts, so "WanVideo/lightx2v_..._rank64.safetensors" is a Wan LoRA.
- parameters: the family's canonical count (catalogue P_* constants, or the catalogue entry of
  that family, or the decoder count from the FAMILIES arch numbers); a size token in the name
  (14B, 1.3B, 1_3B, A14B, 9b, 1300m) wins when it disagrees with it by more than 15 % (a different
  size of the same family, e.g. FLUX.2 klein 4B), and is used alone for an unknown family.
- precision: bits per weight from the name (fp32/fp16/bf16, fp8 variants, int8, nf4, svdq int4/fp4,
  mxfp4, nvfp4, AWQ/GPTQ w4a8, GGUF Q2_K..Q8_0 and IQ4 from ggml's block sizes); none: 16 bit for
  .safetensors/.sft (the usual release format), 32 bit for pickles (.ckpt/.pt/.pth/.bin).
- LoRAs: rank from the name (rank64, r64, _64_, lora-384), else 32, times the sum of (in + out)
  features over the linears a LoRA adapts in the target family's blocks (attention, MLP and, where
  the family has per-block ones, modulation), computed from the FAMILIES arch numbers
  (``lora_linear_sum``): a typical size, marked as such.
"""
from __future__ import annotations

import math
import re
from dataclasses import replace
from types import MappingProxyType
from typing import Mapping, NamedTuple

from . import catalogue as cat
from ..families import FAMILIES, registry
from ..families._spec import (BRUSHNET, HELD_BY_PACK, HYPERLORA, INSTANTID, IPADAPTER, IPADAPTER_FLUX, LLLITE,
                              PHOTOMAKER, PULID, UPSCALER, Rule, _r)
from ..families.stable_diffusion import P_SD15, P_SDXL
from .llm_quant import AWQ_BITS, GGML_BLOCK, GGUF_FTYPES, NF4_BITS
from ..model_info import (AUDIO_ENCODER, CHECKPOINT, CLIP_VISION, CONTROLNET, DIFFUSION, LORA, TEXT_ENCODER, VAE,
                          ModelInfo)

DEFAULT_LORA_RANK = 32
SVDQ_RANK = 32  # nunchaku's SVDQuant models keep a 16-bit low-rank branch of rank 32 (svdq-*_r32-*)

_ROLE_KIND = {"diffusion": DIFFUSION, "text_encoder": TEXT_ENCODER, "vae": VAE, "lora": LORA,
              "controlnet": CONTROLNET, "clip_vision": CLIP_VISION, "checkpoint": CHECKPOINT,
              "upscale_model": UPSCALER, "latent_upscale_model": UPSCALER, "audio_encoder": AUDIO_ENCODER,
              "ipadapter": IPADAPTER, IPADAPTER_FLUX: IPADAPTER_FLUX, BRUSHNET: BRUSHNET,
              HYPERLORA: HYPERLORA, LLLITE: LLLITE}
_FOLDER_KIND = {"diffusion_models": DIFFUSION, "unet": DIFFUSION, "text_encoders": TEXT_ENCODER, "clip": TEXT_ENCODER,
                "vae": VAE, "loras": LORA, "controlnet": CONTROLNET, "clip_vision": CLIP_VISION,
                "checkpoints": CHECKPOINT, "upscale_models": UPSCALER, "latent_upscale_models": UPSCALER,
                "ipadapter": IPADAPTER, "pulid": PULID, "instantid": INSTANTID, "ipadapter-flux": IPADAPTER_FLUX,
                "photomaker": PHOTOMAKER, "hyper_lora": HYPERLORA,
                "audio_encoders": AUDIO_ENCODER,
                # ModelPatchLoader's files (comfy_extras/nodes_model_patch.py): add-ons a node attaches to the MODEL
                # whose patch object lists them in models(), so ComfyUI loads them with it, as a ControlNet's
                "model_patches": CONTROLNET,
                # ComfyUI 0.33.0 folders of image-utility models its nodes load as a model of their own (the
                # estimator prices them as a stage's model: families/birefnet.py, frame_interpolation.py)
                "background_removal": DIFFUSION, "frame_interpolation": DIFFUSION,
                # Impact Pack's SAMLoader folder: the original Segment Anything (families/sam1.py)
                "sams": DIFFUSION}
_TOKEN_KIND = ((r"lora|lycoris|locon", LORA), (r"controlnet|control[_-]?net", CONTROLNET),
               (r"clip[_-]?vision|siglip|sigclip", CLIP_VISION), (r"(?<![a-z])vae(?![a-z])", VAE),
               (r"esrgan|ultrasharp|(?<![a-z0-9])[248]x[_-]|upscaler", UPSCALER),
               (r"t5|clip[_-]?[lg](?![a-z])|llama|qwen[_-]?\d|gemma|mistral|byt5", TEXT_ENCODER))


_C = "catalogue"
# First match wins: specific before general.
_DIFFUSION = registry.name_rules(DIFFUSION)
_TEXT = registry.name_rules(TEXT_ENCODER)
_VAE = registry.name_rules(VAE)
_VISION = registry.name_rules(CLIP_VISION)
_UPSCALERS = registry.name_rules(UPSCALER)
# a LoRA named after Qwen alone ("gummycandy_qwen", "QWEN_EDIT_ACTION") adapts Qwen-Image
_LORA_ONLY = registry.name_rules(LORA)
_AUDIO = registry.name_rules(AUDIO_ENCODER)
# a ControlNet-like add-on with a family of its own (families/wan_talking.py) first, then the base model its name says
_RULES = {DIFFUSION: _DIFFUSION, CHECKPOINT: _DIFFUSION, LORA: _DIFFUSION + _LORA_ONLY,
          CONTROLNET: registry.name_rules(CONTROLNET) + _DIFFUSION,
          TEXT_ENCODER: _TEXT, VAE: _VAE, CLIP_VISION: _VISION, UPSCALER: _UPSCALERS, AUDIO_ENCODER: _AUDIO,
          # the kinds a node pack holds itself: their own name rules each (families/_spec.HELD_BY_PACK)
          **{kind: registry.name_rules(kind) for kind in HELD_BY_PACK}}
# catalogue entries that stand for a whole family (their params, e.g. VAE and upscaler sizes)
_FAMILY_ENTRY = registry.FAMILY_ENTRY

_GGUF_SAME_ARCH = registry.GGUF_SAME_ARCH
_WAN_EXTRAS = r"vace|fun|s2v|animate|humo|camera|scail|dancer|infinite|phantom|multitalk"
_EXTENSIONS = ("safetensors", "sft", "gguf", "ckpt", "pt", "pth", "bin", "pt2")
_WAN_VARIANT_PARAMS = registry.VARIANT_PARAMS


# ---------------------------------------------------------------------------------------------
class Precision(NamedTuple):
    bits: float
    dtype: str | None  # safetensors / GGUF type name
    quantization: str | None
    said: str  # "fp8 -> 1 byte/param"


_FP8 = re.compile(r"fp8|e4m3|e5m2")
_GGUF = re.compile(r"(?<![a-z0-9])(i?q\d(?:_[a-z0-9]+)*)(?![a-z0-9])")


# a GGUF type glued to the words around it, as community uploads name them ("fluxDevQ5KMGGUFQuantization"): only
# for a .gguf file, and only a K-quant or a _0 / _1 type spelled in full
_GGUF_GLUED = re.compile(r"(?<![0-9])q([2-8])(?:_?k_?([sml])|_([01]))(?![0-9])")


def precision(base: str, ext: str) -> Precision | None:
    """Bits per weight from a lower-cased file name (no folders, no extension)."""
    q = _GGUF.search(base)
    if q and ext == "gguf" and q.group(1) == "q8":
        # a bare "Q8" (kijai's "..._Single_Q8.gguf"): Q8_0, GGUF's one 8-bit weight type (Q8_1 / Q8_K hold activations
        # and dot products in llama.cpp, never a model file's weights)
        return _gguf_precision("Q8_0")
    if q and (ext == "gguf" or "_k" in q.group(1) or q.group(1).startswith(("q8_0", "q4_0", "q5_0"))):
        return _gguf_precision(q.group(1).upper())
    glued = _GGUF_GLUED.search(base) if ext == "gguf" else None
    if glued:
        bits, size, legacy = glued.groups()
        return _gguf_precision(f"Q{bits}_K_{size.upper()}" if size else f"Q{bits}_{legacy}")
    for test, result in _PRECISIONS:
        if re.search(test, base):
            return result(base)
    if ext == "gguf":
        return None  # a GGUF file without a recognisable type: nothing to go on
    if ext in ("safetensors", "sft"):
        return Precision(16, "BF16", None, "no precision in the name: 16-bit assumed (the usual release format)")
    return Precision(32, "F32", None, f"no precision in the name: 32-bit assumed (.{ext} checkpoints are usually saved in fp32)")


def _split(name: str) -> tuple[str, str, str]:
    """(lower-cased path, base name without extension, extension; "safetensors" when there is none)."""
    path = name.replace("\\", "/").strip().lower()
    base, _, ext = path.rsplit("/", 1)[-1].rpartition(".")
    if ext not in _EXTENSIONS:
        base, ext = path.rsplit("/", 1)[-1], "safetensors"
    return path, base, ext


def precision_of(name: str) -> tuple[float, str, str | None]:
    """(bits per weight, dtype, quantization) of a file name; 16-bit BF16 when the name does not say."""
    _, base, ext = _split(name)
    prec = precision(base, ext)
    if prec is None or not prec.bits:
        return 16, "BF16", None
    return prec.bits, prec.dtype or "BF16", prec.quantization


def family_of(name: str, kind: str) -> tuple[str, str] | None:
    """(family, label) the name points at for a model of ``kind``, without a size (None: the name says nothing)."""
    rule = _family(kind, name.replace("\\", "/").strip().lower())
    return (rule.family, rule.label) if rule else None


def kind_of_folder(folder: str | None) -> str | None:
    """The kind of model a ComfyUI models/ folder holds (None: a folder this estimator has no kind for)."""
    return _FOLDER_KIND.get((folder or "").lower())


def _gguf_precision(name: str) -> Precision | None:
    ggml = GGUF_FTYPES.get(name, name)
    if ggml not in GGML_BLOCK:
        return None
    block, size = GGML_BLOCK[ggml]
    bits = size * 8 / block
    mix = "; a _M/_L mix keeps some tensors in a larger type (files up to ~10 % larger)" if name[-2:] in ("_M", "_L") else ""
    return Precision(bits, ggml, f"gguf {ggml}", f"GGUF {name} -> {ggml} blocks, {bits:.4g} bits/param (ggml block size{mix})")


def _fp8(base: str) -> Precision:
    e5 = "e5m2" in base
    scaled = bool(re.search(r"scaled|mixed", base))
    kind = "fp8_e5m2" if e5 else "fp8_e4m3fn"
    q = ("scaled " if scaled else "") + kind
    return Precision(8, "F8_E5M2" if e5 else "F8_E4M3", q, f"{q} -> 1 byte/param")


def _fixed(bits, dtype, quant, said):
    return lambda base: Precision(bits, dtype, quant, said)


_PRECISIONS = (
    (r"svdq.*fp4|svdq.*nvfp4", _fixed(4.5, "F4", "nvfp4 (svdq)", "SVDQuant fp4: 4 bits + an fp8 scale per 16 = 4.5 bits/param")),
    (r"svdq", _fixed(4.25, "I4", "int4 (svdq)", "SVDQuant int4: 4 bits + an fp16 scale per 64 = 4.25 bits/param")),
    (r"mxfp4", _fixed(4.25, "F4", "mxfp4", "mxfp4: 4 bits + an 8-bit scale per 32 = 4.25 bits/param (OCP MX)")),
    (r"nvfp4|fp4", _fixed(4.5, "F4", "nvfp4", "nvfp4: 4 bits + an fp8 scale per 16 = 4.5 bits/param")),
    (r"nf4|bnb", _fixed(NF4_BITS, "NF4", "nf4", f"bitsandbytes NF4: {NF4_BITS:.3f} bits/param (llm_quant.NF4_BITS)")),
    (r"w4a\d+|awq|gptq|(?<![a-z])int4", _fixed(AWQ_BITS, "I4", "int4 (awq/gptq)", f"AWQ/GPTQ 4-bit: {AWQ_BITS:.3f} bits/param (llm_quant.AWQ_BITS)")),
    (r"int8|w8a8|convrot", _fixed(8, "I8", "int8", "int8 -> 1 byte/param")),
    (_FP8.pattern, _fp8),
    (r"fp32|(?<![a-z0-9])f32", _fixed(32, "F32", None, "fp32 -> 4 bytes/param")),
    (r"bf16", _fixed(16, "BF16", None, "bf16 -> 2 bytes/param")),
    (r"fp16|(?<![a-z0-9])f16", _fixed(16, "F16", None, "fp16 -> 2 bytes/param")),
)


# ---------------------------------------------------------------------------------------------
_SIZE = re.compile(r"(?<![a-z0-9.])a?(\d+(?:\.\d+)?)([bm])(?![a-z0-9])")


def size_token(base: str) -> int | None:
    """Parameters named in a file name: '14B', 'A14B', '1.3B', '1_3B', '9b', '1300m'."""
    base = re.sub(r"(?<![0-9])1_3b", "1.3b", base)  # Kijai's 1_3B
    base = re.sub(r"(?<![0-9.])0(\d)b", r"0.\1b", base)  # "06b" = 0.6B
    m = _SIZE.search(base)
    if not m:
        return None
    value = float(m.group(1)) * (1e9 if m.group(2) == "b" else 1e6)
    return int(value) if value >= 1e6 else None


_RANK = re.compile(r"(?:rank|(?<![a-z])r|lora)[_-]?(\d{1,4})(?=[_.-]|$)|(?<=[_-])(4|8|16|32|64|128|256|512)(?=[_.-]|$)")


def lora_rank(text: str) -> int | None:
    m = _RANK.search(text)
    return int(m.group(1) or m.group(2)) if m else None


# ---------------------------------------------------------------------------------------------
# LoRA size: sum over the adapted linears of (in + out) features, from the FAMILIES arch numbers.
def lora_linear_sum(family: str, variant: str | None = None) -> tuple[int, str] | None:
    """(sum of in+out features over the linears a LoRA adapts, what was counted), or None."""
    arch = FAMILIES.get(family, FAMILIES["unknown"]).arch
    if family.startswith(("flux1", "chroma")) or family == "hunyuan-video":
        return _double_single_sum(arch, mods=not family.startswith("chroma"))
    if family == "flux2":  # Flux.2: the modulation is shared by all blocks (not adapted per block)
        return _double_single_sum(arch, mods=False)
    if family in ("ltx2", "ltx2.3"):
        # LTXAV blocks (ldm/lightricks/av_model.py): video stream (h = 4096) self- and cross-attention q/k/v/o
        # and FFN (4h), audio stream (2048) the same, and the audio<->video cross attention (inner 2048)
        h, a, n = arch["hidden_size"], 2048, arch["depth"]
        video = 4 * 2 * h + 4 * 2 * h + 2 * (h + 4 * h)
        audio = 4 * 2 * a + 4 * 2 * a + 2 * (a + 4 * a)
        cross = 2 * (2 * (h + a) + 2 * (a + a))
        return n * (video + audio + cross), (f"{n} blocks x (video {h} and audio {a} attention + FFN, "
                                             "audio-video cross attention); rank 384 gives 7.40 GB against "
                                             "the published 7.67 GB of LTX-2's distilled LoRA")
    if family.startswith("wan"):
        h, f, n = arch["hidden_size"], arch["ffn_dim"], arch["depth"]
        img = 4 * h if (family == "wan2.1-14b" and variant == "i2v") else 0
        return n * (18 * h + 2 * f + img), (f"{n} blocks x (self- and cross-attention q/k/v/o + FFN"
                                             f"{' + image k/v' if img else ''}; hidden {h}, FFN {f})")
    if family == "qwen-image":
        h, f, n = arch["hidden_size"], arch["ffn_dim"], arch["depth"]
        return n * (34 * h + 4 * f), f"{n} blocks x (image and text q/k/v/o, MLPs, modulation; hidden {h}, FFN {f})"
    if family in ("sd15", "sdxl"):
        return _unet_sum(arch)
    return None


def _double_single_sum(arch: Mapping, mods: bool) -> tuple[int, str]:
    h, f = arch["hidden_size"], arch["ffn_dim"]
    d, s = arch["depth_double"], arch["depth_single"]
    double = 2 * (8 * h + 2 * f + (7 * h if mods else 0))  # qkv 4h, proj 2h, mlp 2(h+f), mod h+6h; two streams
    single = 6 * h + 2 * f + (4 * h if mods else 0)  # linear1 h+3h+f, linear2 h+f+h, mod h+3h
    what = "attention, MLP" + (" and modulation" if mods else "")
    return d * double + s * single, f"{d} double + {s} single blocks ({what} linears; hidden {h}, MLP {f})"


def _unet_sum(arch: Mapping) -> tuple[int, str]:
    """SD/SDXL UNet transformer blocks: attn1 q/k/v/out (c->c), attn2 q/out (c->c) and k/v (context->c),
    GEGLU ff (c->8c, 4c->c): 28c + 2*context per block, + proj_in/proj_out (4c) per transformer.
    Two res blocks per level on the way down, three up; the middle block has the deepest level's depth."""
    ctx = arch["context_dim"]
    levels = [(arch["model_channels"] * m, d) for m, d in zip(arch["channel_mult"], arch["transformer_depth"]) if d]

    def stack(c: int, depth: int) -> int:
        return depth * (28 * c + 2 * ctx) + 4 * c

    total = sum(5 * stack(c, d) for c, d in levels) + stack(*levels[-1])
    return total, "UNet transformer blocks (attention, GEGLU feed-forward, proj in/out)"


# ---------------------------------------------------------------------------------------------
def infer_info(name: str, role: str | None = None, folder: str | None = None,
               hint: str = "") -> tuple[ModelInfo | None, str]:
    """(ModelInfo with source "inferred", the assumption) or (None, why nothing could be inferred). `hint`: what
    the loader node says of the family (ModelRef.hint), read by the name rules like a sub-folder."""
    path, base, ext = _split(name)
    kind, kind_why = _kind(path, role, folder)
    if kind is None:
        return None, "the name says nothing about what the file is"
    prec = precision(base, ext)
    if prec is None:
        return None, f"a .{ext} file whose quantisation the name does not give"
    # a sub-folder ("xlabs/loras", "WanVideo/") names the family too, and so does the loader's hint
    where = f"{(folder or '').lower()}/{hint.lower() + '/' if hint else ''}{path}"
    if kind == LORA:
        return _lora(name, where, base, prec, kind_why)
    shard = _SHARD.fullmatch(base)
    if shard is None or "/" not in path:
        return _model(name, where, base, kind, kind_why, prec)
    # one shard of a Hugging Face folder (".../model-00001-of-00005.safetensors"): the loader reads the folder, so
    # the folder's name gives the model's size; the precision is the shard's own (a folder "...-q4_0-unquantized" is
    # not a GGUF file)
    model_dir = path.rsplit("/", 2)[-2]
    info, said = _model(name, where, model_dir, kind, kind_why, prec)
    if info is None:
        return info, said
    why = (f"one shard ({shard.group(0)}) of the {int(shard.group(1))}-shard model in '{model_dir}': its loader reads "
           "every shard, so the whole model the folder names is priced" if shard.group(1) else
           f"the weights file ({shard.group(0)}) of a model folder, '{model_dir}': the folder names the model")
    return replace(info, evidence=info.evidence + (why,), notes=info.notes + (why,)), f"{said}; {why}"


_SHARD = re.compile(r"(?:model|pytorch_model|diffusion_pytorch_model)(?:-\d{5}-of-(\d{5}))?")


def _kind(path: str, role: str | None, folder: str | None) -> tuple[str | None, str]:
    if role in _ROLE_KIND:
        return _ROLE_KIND[role], f"loaded as {role}"
    folder = (folder or "").lower()
    if folder in _FOLDER_KIND:
        return _FOLDER_KIND[folder], f"in models/{folder}"
    for pattern, kind in _TOKEN_KIND:
        if re.search(pattern, path):
            return kind, f"name token /{pattern}/"
    return None, ""


def _family(kind: str, path: str) -> Rule | None:
    for rule in _RULES.get(kind, ()):
        if re.search(rule.pattern, path):
            return rule
    return None


# An add-on module named after its base model (kijai's "Wan2_1-VACE_module_14B_fp8_e4m3fn"): the file holds the
# add-on's blocks only, never the base it attaches to (issue 30: priced as the whole 14B base, 4.7x too much).
# VACE (Wan-Video/Wan2.1 wan/modules/vace_model.py): vace_layers = every 5th block of the 14B (8 blocks), every
# 2nd of the 1.3B (15), each a full Wan block plus its after_proj (hidden x hidden), plus vace_patch_embedding.
_ADDON = re.compile(r"(?:^|[^a-z])vace[^a-z]*module|module[^a-z]*vace")
_VACE_BLOCKS = {"wan2.1-14b": 8, "wan2.2-14b": 8, "wan2.1-1.3b": 15}


def addon_params(rule: Rule | None, path: str) -> tuple[int, str] | None:
    """(parameters, why) of an add-on module named after its base model, or None."""
    if rule is None or not _ADDON.search(path) or rule.family not in _VACE_BLOCKS:
        return None
    from ..families import FAMILIES  # noqa: PLC0415
    arch = FAMILIES[rule.family].arch
    h, f = int(arch["hidden_size"]), int(arch["ffn_dim"])
    block = 4 * h * h + 4 * h * h + 2 * h * f + h * h  # self-attn + cross-attn + FFN + after_proj (biases ignored)
    n = _VACE_BLOCKS[rule.family]
    patch = 96 * 2 * 2 * h  # vace_patch_embedding: a (1, 2, 2) conv from 96 channels (Wan2.1 vace_in_dim)
    return n * block + patch, (f"a VACE add-on module: {n} VACE blocks of the {rule.family} block "
                                "(Wan2.1 vace_model.py vace_layers), not the whole base model")


def _params(rule: Rule | None, base: str, kind: str, path: str) -> tuple[int | None, str, bool]:
    """(parameters, where from, whether they are the family's own count)."""
    addon = addon_params(rule, path)
    if addon is not None:
        return addon[0], addon[1], False
    token = size_token(base)
    canon, src = _canonical(rule, kind, path)
    if canon and token and not rule.sized and abs(token - canon) / canon > 0.15:
        return token, f"{_count(token)} from the name (the family's {_count(canon)} is another size)", False
    if canon:
        return canon, f"{_count(canon)}: {src}", True
    if token:
        return token, f"{_count(token)} from the name", False
    return None, "", False


def _canonical(rule: Rule | None, kind: str, path: str) -> tuple[int | None, str]:
    if rule is None or (kind == CONTROLNET and FAMILIES[rule.family].kind != CONTROLNET):
        return None, ""  # a ControlNet is not the size of its base model (an add-on family has its own count)
    if kind == CHECKPOINT and rule.family in ("sd15", "sdxl"):
        p = P_SD15 if rule.family == "sd15" else P_SDXL
        return p, f"{_C} P_{rule.family.upper()} (UNet + text encoders + VAE)"
    wan = _WAN_VARIANT_PARAMS.get((rule.family, _task(path)))
    if wan:
        return wan
    if rule.params:
        return rule.params, rule.source
    if rule.family in _FAMILY_ENTRY:
        entry = cat.lookup(_FAMILY_ENTRY[rule.family])
        return entry.params, f"{_C} entry {entry.name}"
    if rule.family == "gemma":
        return decoder_params(FAMILIES["gemma"].arch, tied=True), rule.source
    return None, ""


def decoder_params(arch: Mapping, tied: bool) -> int:
    """A Llama-style decoder's parameters from its config numbers (embedding, q/k/v/o, gated MLP, 2 norms)."""
    h, hd = arch["hidden_size"], arch["head_dim"]
    per_layer = 2 * h * arch["heads"] * hd + 2 * h * arch["kv_heads"] * hd + 3 * h * arch["ffn_dim"] + 2 * h
    return arch["vocab"] * h * (1 if tied else 2) + arch["layers"] * per_layer + h


def _model(name, path, base, kind, kind_why, prec: Precision, rule: Rule | None = None) -> tuple[ModelInfo | None, str]:
    rule = rule or _family(kind, path)
    variant = _variant(path)
    params, pwhy, of_family = _params(rule, base, kind, path)
    what = rule.label if rule else f"unknown {kind.replace('_', ' ')}"
    if rule and addon_params(rule, path) is not None:
        what = f"{rule.label} VACE module"
    elif rule and rule.largest and of_family and size_token(base) is None:
        what = f"{rule.label} (its size not in the name: the largest, {_count(params)}, assumed)"
        pwhy += " (the family's largest size: an upper bound)"
    if params is None:
        if kind == CONTROLNET and rule:
            return None, f"a {rule.label} ControlNet: its size is not its base model's, and the name gives none"
        return None, f"{what}: no parameter count in the name and no known family to take it from"
    if of_family and _wan_extra(rule, path):
        pwhy += " (the base model's count: this variant's extra layers are not counted)"
    if kind == CHECKPOINT and rule and rule.family not in ("sd15", "sdxl"):
        pwhy += " (the diffusion model only: bundled encoders and VAE not counted)"
    nbytes, extra = _stored_bytes(params, prec, rule, of_family)
    said = f"inferred from the name: {what}, {pwhy}; {prec.said}{extra}"
    return _info(name, kind, rule, what, params, nbytes, prec, said, kind_why, variant), said


def _wan_extra(rule: Rule | None, path: str) -> bool:
    """A Wan variant with layers of its own (VACE, Fun, S2V, Animate ...)."""
    return bool(rule and rule.family.startswith("wan") and re.search(_WAN_EXTRAS, path))


def base_count_only(name: str, folder: str | None = None) -> bool:
    """A diffusion model priced at its base model's count although it has layers of its own: a Wan variant whose
    count is the family's, not its name's (a published size then says more: models/published.py)."""
    path, base, _ = _split(name)
    where = f"{(folder or '').lower()}/{path}"
    rule = _family(DIFFUSION, where)
    return _wan_extra(rule, where) and _params(rule, base, DIFFUSION, where)[2]


def _stored_bytes(params: int, prec: Precision, rule: Rule | None, of_family: bool) -> tuple[int, str]:
    """params x bits, + SVDQuant's 16-bit low-rank branch, + the small tensors a GGUF keeps in F16/F32."""
    nbytes = math.ceil(params * prec.bits / 8)
    quant = prec.quantization or ""
    if "svdq" in quant and rule and lora_linear_sum(rule.family):
        low_rank = SVDQ_RANK * lora_linear_sum(rule.family)[0]
        return nbytes + 2 * low_rank, f" + the 16-bit rank-{SVDQ_RANK} low-rank branch ({_count(low_rank)} params)"
    if quant.startswith("gguf"):
        excess = gguf_excess(_GGUF_SAME_ARCH.get(rule.family, rule.family)) if (rule and of_family) else None
        if excess:
            return nbytes + excess[0], f" + {excess[0] / 1e9:.2f} GB of small tensors kept in F16/F32 ({excess[1]})"
        return nbytes, "; the small tensors a GGUF keeps in F16/F32 are not counted"
    return nbytes, ""


def lora_on(name: str, family: str, label: str) -> tuple[ModelInfo | None, str]:
    """A LoRA whose name does not say its base model, applied to a model of ``family`` (the graph says
    which): the typical size for that family, as for a name that does say it."""
    path = name.replace("\\", "/").strip().lower()
    base, _, ext = path.rsplit("/", 1)[-1].rpartition(".")
    prec = precision(base, ext if ext in _EXTENSIONS else "safetensors") or Precision(16, "BF16", None, "")
    rule = _r(re.escape(family), family, label.split(" (size from")[0])
    info, said = _lora(name, path, base, prec, "loaded as lora", rule=rule)
    if info is not None:
        said = f"applied to {rule.label} in this workflow; " + said
        info = replace(info, evidence=(said,) + info.evidence[1:2], notes=(said,))
    return info, said


# a companion's family -> the base model family it implies (an IP-Adapter for SD1.5 patches an SD1.5 UNet)
_BASE_OF = {"sd15": "sd15", "sdxl": "sdxl", "controlnet-sd15": "sd15", "controlnet-sdxl": "sdxl",
            "ip-adapter-sd15": "sd15", "ip-adapter-sdxl": "sdxl",
            "brushnet-sd15": "sd15", "brushnet-sdxl": "sdxl"}
BASE_FAMILIES = frozenset(_BASE_OF.values())


def base_family(name: str, kind: str) -> str | None:
    """The base model family a companion file (a ControlNet, a LoRA, an IP-Adapter) is made for, by its name: only
    SD1.5 and SDXL, whose fine-tunes all share their base's size."""
    found = family_of(name, kind)
    return _BASE_OF.get(found[0]) if found else None


def base_as(name: str, role: str, folder: str, family: str, why: str) -> tuple[ModelInfo | None, str]:
    """A checkpoint or diffusion model whose name says nothing (a community fine-tune: "realisticVisionV60B1"),
    used with a companion made for ``family`` (``why`` names it): that family's size, as for a name that says it.
    ComfyUI casts an SD1.5 / SDXL UNet to its 16-bit dtype whatever the file holds (model_management.unet_dtype)."""
    path, base, ext = _split(name)
    kind, kind_why = _kind(path, role, folder)
    if kind not in (CHECKPOINT, DIFFUSION) or family not in BASE_FAMILIES:
        return None, ""
    rule = next((r for r in _RULES[kind] if r.family == family), None)
    prec = precision(base, ext if ext in _EXTENSIONS else "safetensors") or Precision(16, "BF16", None, "")
    if rule is None:
        return None, ""
    info, said = _model(name, f"{(folder or '').lower()}/{path}", base, kind, kind_why, prec, rule=rule)
    if info is not None:
        said = f"the family from {why}; " + said
        label = info.label.replace("(size from the name)", f"(family from {why.split(':')[0]})")
        info = replace(info, label=label, evidence=(said,) + info.evidence[1:], notes=(said,))
    return info, said


def _lora(name, path, base, prec: Precision, kind_why, rule=None) -> tuple[ModelInfo | None, str]:
    rule = rule or _family(LORA, path)
    if rule is None:
        return None, "a LoRA for a base model the name does not identify: size unknown"
    variant = _variant(path)
    summed = lora_linear_sum(rule.family, _task(path))
    if summed is None:
        return None, f"a {rule.label} LoRA: no LoRA layer count for this family, size unknown"
    rank = lora_rank(path)
    rank_why = f"rank {rank} from the name" if rank else f"rank not in the name, {DEFAULT_LORA_RANK} assumed"
    rank = rank or DEFAULT_LORA_RANK
    total, counted = summed
    params = rank * total
    bits = prec.bits if prec.bits in (16, 32) else 16
    nbytes = params * bits // 8
    said = (f"typical size inferred from the name: {rule.label} LoRA, {rank_why}; rank x {total:,} "
            f"(in + out features of {counted}, from FAMILIES) = {_count(params)} params at {bits // 8} bytes")
    stored = Precision(bits, "F32" if bits == 32 else prec.dtype or "BF16", None, "")
    info = _info(name, LORA, rule, f"{rule.label} LoRA", params, nbytes, stored, said, kind_why, variant,
                 arch={"rank": rank, "target_family": rule.family})
    return info, said


_WAN_TASK_LABELS = {"s2v": "Wan 2.2 S2V 14B", "humo": "HuMo (Wan 14B)", "animate": "Wan 2.2 Animate 14B"}


def _info(name, kind, rule, what, params, nbytes, prec, said, kind_why, variant, arch=None) -> ModelInfo:
    """`what` ending in "assumed)" says its own size basis; any other gets "(size from the name)"."""
    family = rule.family if rule else "unknown"
    fam_arch = dict(FAMILIES[family].arch) if family in FAMILIES and kind != LORA else {}
    if kind == DIFFUSION:
        fam_arch.update(size_arch(family, params))
    fam_arch.update(arch or {})
    if kind == LORA:
        family = "lora"
    if family.startswith("wan") and kind != LORA and variant in _WAN_TASK_LABELS:
        what = _WAN_TASK_LABELS[variant]  # not "A14B expert": a model of its own on the Wan 14B backbone
    return ModelInfo(
        kind=kind, family=family, label=what if what.endswith("assumed)") else f"{what} (size from the name)",
        params=int(params), weights_bytes=int(nbytes), dtype=prec.dtype, quantization=prec.quantization,
        arch=MappingProxyType(fam_arch), evidence=(said, f"file name {name!r}: kind {kind} ({kind_why})") + (
            (f"family from the name pattern /{rule.pattern}/",) if rule else ()),
        source="inferred", path=None, largest_tensor_bytes=0, variant=variant, notes=(said,),
    )


def size_arch(family: str, params: int | None) -> dict:
    """The arch numbers of the size of `family` nearest `params` (registry.nearest_model_size): an LTX-Video 13B named
    as such gets the 13B's layers, so its working memory is the 13B's."""
    chosen = registry.nearest_model_size(family, params)
    return dict(chosen[2]) if chosen else {}


def _task(path: str | None) -> str | None:
    """Wan's task as far as the parameter count goes (image-conditioned models have more)."""
    path = path or ""
    return "flf" if re.search(r"flf2v|(?<![a-z])flf(?![a-z])", path) else "i2v" if re.search(r"(?<!t)i2v", path) else None


def _variant(path: str) -> str | None:
    for pattern, variant in ((r"high[\s_-]?noise|[_-]high(?:[_.-]|$)", "high_noise"),
                             (r"low[\s_-]?noise|[_-]low(?:[_.-]|$)", "low_noise"), (r"ti2v", "ti2v"),
                             (r"flf2v", "flf"), (r"i2v", "i2v"), (r"t2v", "t2v"), (r"vace", "vace"),
                             (r"s2v", "s2v"), (r"humo", "humo"), (r"animate(?!diff)", "animate"),
                             (r"kontext", "kontext"), (r"fill", "fill"), (r"edit", "edit")):
        if re.search(pattern, path):
            return variant
    return None


def gguf_excess(family: str, skip: str | None = None) -> tuple[int, str] | None:
    """Bytes a published GGUF of this family holds beyond params x the type's bits (the small tensors
    ComfyUI-GGUF's converter keeps in F16/F32): the median over the family's GGUF files in the
    catalogue (``skip``: leave one name out), or None when it has none."""
    excess = []
    for entry in cat.entries_for_family(family):
        prec = _gguf_precision(entry.dtype) if entry.quantization and entry.quantization.startswith("gguf") else None
        if prec is not None and entry.name != skip:
            excess.append(entry.bytes - math.ceil(entry.params * prec.bits / 8))
    if not excess:
        return None
    excess.sort()
    return excess[len(excess) // 2], f"median of the {len(excess)} published {family} GGUF files in the catalogue"


def _count(n: int) -> str:
    return f"{n / 1e9:.3g}B" if n >= 1e9 else f"{n / 1e6:.3g}M"
