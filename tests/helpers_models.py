"""Builders for small model files with the REAL key names of each family (shared by the tests).

Every ``spec_*`` function returns a *spec*: ``{tensor name: (safetensors dtype, shape)}`` with the key
names ComfyUI's own code uses (comfy/ldm/*, comfy/text_encoders/*, model_detection.py, sd.py).
``scale`` divides the widths (hidden size, channels, FFN) so that the files stay tiny; the few
shapes that ComfyUI reads to tell families apart keep their real width where the test needs it
(e.g. Wan's ``head.modulation`` [1, 2, dim] and ``blocks.N.modulation`` [1, 6, dim], the UNet's
cross-attention context width, umT5's 256 384-row vocabulary).

``scale=1`` gives the full-size architecture. Such a file is written *sparse* (``sparse=True``: the
header is written, the data region is a hole made by truncate), so a test can check real
full-size byte and parameter counts without writing gigabytes.

``write_*`` functions write the spec with the real ``safetensors`` writer (``safetensors.serialize_file``;
numpy cannot express BF16/FP8, so buffers of the right byte size are handed to the writer with the
dtype name) or ``gguf.GGUFWriter``, and return a :class:`Written` with the spec so a test can
recompute the expected bytes itself.
"""
from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

Spec = dict[str, tuple[str, tuple[int, ...]]]

# safetensors dtype -> bytes per element (the safetensors format spec, "dtype" table).
ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
            "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
# safetensors Python writer dtype names (safetensors.TensorSpec / serialize) for each format code.
_WRITER_DTYPE = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
                 "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "I64": "int64", "I32": "int32",
                 "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}
_NP_STORAGE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass(frozen=True)
class Written:
    path: str
    spec: Mapping[str, tuple[str, tuple[int, ...]]]
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def params(self) -> int:
        return sum(math.prod(shape) for _, shape in self.spec.values())

    @property
    def nbytes(self) -> int:
        return spec_bytes(self.spec)


def spec_bytes(spec: Mapping[str, tuple[str, tuple[int, ...]]]) -> int:
    return sum(math.prod(shape) * ITEMSIZE[dtype] for dtype, shape in spec.values())


def spec_params(spec: Mapping[str, tuple[str, tuple[int, ...]]]) -> int:
    return sum(math.prod(shape) for _, shape in spec.values())


# ---------------------------------------------------------------------------------------------
# Writers
def write_safetensors(path, spec: Mapping[str, tuple[str, tuple[int, ...]]],
                      metadata: Mapping[str, str] | None = None, sparse: bool = False) -> Written:
    """Write ``spec`` as a safetensors file. ``sparse``: header only, data left as a hole."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if sparse:
        _write_sparse_safetensors(path, spec, metadata)
    else:
        _write_dense_safetensors(path, spec, metadata)
    return Written(path, dict(spec), dict(metadata or {}))


def _write_dense_safetensors(path: str, spec, metadata) -> None:
    import safetensors

    buffers = {}
    for name, (dtype, shape) in spec.items():
        n = math.prod(shape)
        buffers[name] = (dtype, shape, np.zeros(n, dtype=_NP_STORAGE[ITEMSIZE[dtype]]))
    if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.7: raw pointers
        specs = {
            name: safetensors.TensorSpec(dtype=_WRITER_DTYPE[dtype], shape=list(shape),
                                         data_ptr=buf.ctypes.data, data_len=buf.nbytes)
            for name, (dtype, shape, buf) in buffers.items()
        }
    else:  # older safetensors: {"dtype", "shape", "data"}
        specs = {name: {"dtype": _WRITER_DTYPE[dtype], "shape": list(shape), "data": buf.tobytes()}
                 for name, (dtype, shape, buf) in buffers.items()}
    safetensors.serialize_file(specs, path, metadata=dict(metadata) if metadata else None)


def _write_sparse_safetensors(path: str, spec, metadata) -> None:
    """Same header layout as the safetensors writer; the data region is a hole (truncate)."""
    header: dict = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name in sorted(spec):
        dtype, shape = spec[name]
        n = math.prod(shape) * ITEMSIZE[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the writer pads the header to 8 bytes with spaces
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        fh.truncate(8 + len(raw) + offset)


# GGUF: published block sizes (ggml.h / gguf-py constants): type -> (elements per block, bytes per block)
GGUF_BLOCK = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q8_0": (32, 34), "Q4_0": (32, 18),
              "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q2_K": (256, 84), "Q3_K": (256, 110),
              "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210), "Q8_K": (256, 292)}


def write_gguf(path, tensors: Mapping[str, tuple[str, tuple[int, ...]]], arch: str = "flux",
               metadata: Mapping[str, object] | None = None, quantize_real: bool = False) -> Written:
    """Write a GGUF file with ``gguf.GGUFWriter``. ``tensors``: name -> (GGML type name, PyTorch shape).

    Quantized tensors are written as raw blocks of the right byte size (zeros), or, with
    ``quantize_real`` for Q8_0/Q4_0, produced by ``gguf.quants.quantize`` from random floats.
    """
    import gguf

    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    writer = gguf.GGUFWriter(path, arch)
    for key, value in (metadata or {}).items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        elif isinstance(value, (list, tuple)):
            writer.add_array(key, list(value))
        else:
            writer.add_string(key, str(value))
    rng = np.random.default_rng(0)
    for name, (tname, shape) in tensors.items():
        qtype = gguf.GGMLQuantizationType[tname]
        shape = tuple(int(d) for d in shape)
        if tname == "F32":
            writer.add_tensor(name, np.zeros(shape, dtype=np.float32))
        elif tname == "F16":
            writer.add_tensor(name, np.zeros(shape, dtype=np.float16))
        elif tname == "BF16":
            writer.add_tensor(name, np.zeros(shape, dtype=np.uint16), raw_dtype=qtype)
        else:
            block, type_size = GGUF_BLOCK[tname]
            if shape[-1] % block:
                raise ValueError(f"{name}: last dim {shape[-1]} is not a multiple of the {tname} block {block}")
            if quantize_real and tname in ("Q8_0", "Q4_0"):
                data = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), qtype)
            else:
                data = np.zeros((*shape[:-1], shape[-1] // block * type_size), dtype=np.uint8)
            writer.add_tensor(name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    spec = {name: (tname, tuple(shape)) for name, (tname, shape) in tensors.items()}
    return Written(path, spec, {k: str(v) for k, v in (metadata or {}).items()})


def gguf_expected_bytes(tensors: Mapping[str, tuple[str, tuple[int, ...]]]) -> int:
    """n_blocks x bytes per block, from the published block sizes (GGUF_BLOCK)."""
    total = 0
    for tname, shape in tensors.values():
        block, type_size = GGUF_BLOCK[tname]
        total += math.prod(shape) // block * type_size
    return total


def quantize_spec(spec: Spec, quant: str, keep_float: Iterable[str] = ()) -> dict[str, tuple[str, tuple[int, ...]]]:
    """ComfyUI-GGUF's conversion rule of thumb: 2-D+ weights quantized, 1-D (biases, norms) kept F32."""
    block = GGUF_BLOCK[quant][0]
    out = {}
    for name, (_dtype, shape) in spec.items():
        if len(shape) >= 2 and shape[-1] % block == 0 and not any(k in name for k in keep_float):
            out[name] = (quant, shape)
        else:
            out[name] = ("F32" if len(shape) < 2 else "F16", shape)
    return out


# ---------------------------------------------------------------------------------------------
class _B:
    """Tiny spec builder: layers as ComfyUI/PyTorch name them."""

    def __init__(self, dtype: str, prefix: str = ""):
        self.dtype = dtype
        self.prefix = prefix
        self.spec: Spec = {}

    def t(self, name: str, *shape: int, dtype: str | None = None) -> None:
        self.spec[self.prefix + name] = (dtype or self.dtype, tuple(int(s) for s in shape))

    def lin(self, name: str, out_f: int, in_f: int, bias: bool = True) -> None:
        self.t(f"{name}.weight", out_f, in_f)
        if bias:
            self.t(f"{name}.bias", out_f)

    def norm(self, name: str, dim: int, bias: bool = True, key: str = "weight") -> None:
        self.t(f"{name}.{key}", dim)
        if bias:
            self.t(f"{name}.bias", dim)

    def conv(self, name: str, out_c: int, in_c: int, *kernel: int, bias: bool = True) -> None:
        self.t(f"{name}.weight", out_c, in_c, *kernel)
        if bias:
            self.t(f"{name}.bias", out_c)


def _d(width: int, scale: int, minimum: int = 8) -> int:
    return max(minimum, width // scale)


# ---------------------------------------------------------------------------------------------
# Flux.1 / Chroma / Flux.2 (comfy/ldm/flux/model.py + layers.py; BFL key names)
def spec_flux(dtype: str = "BF16", schnell: bool = False, fill: bool = False, chroma: bool = False,
              flux2: bool = False, scale: int = 1, double: int | None = None, single: int | None = None,
              prefix: str = "") -> Spec:
    b = _B(dtype, prefix)
    if flux2:
        hidden, heads, mlp_ratio, ctx, in_ch, double_n, single_n = 6144, 48, 3.0, 15360, 128, 8, 48
        bias = False  # Flux.2: ops_bias / qkv_bias False (model_detection.py flux2 branch)
    else:
        hidden, heads, mlp_ratio, ctx, in_ch, double_n, single_n = 3072, 24, 4.0, 4096, 64, 19, 38
        bias = True
        if fill:
            in_ch = 384  # Flux.1 Fill: 16 latent + 16 masked latent + 64 mask channels, x4 patch
    head_dim = 128
    heads = max(1, heads // scale)
    hidden = heads * head_dim if scale == 1 else _d(hidden, scale)
    head_dim = hidden // heads
    ctx = _d(ctx, scale)
    mlp = int(hidden * mlp_ratio)
    double_n = double_n if double is None else double
    single_n = single_n if single is None else single
    b.lin("img_in", hidden, in_ch, bias)
    b.lin("txt_in", hidden, ctx, bias)
    if chroma:
        # distilled_guidance_layer replaces time/vector/guidance embedders and all modulations
        gh = _d(5120, scale)
        b.lin("distilled_guidance_layer.in_proj", gh, 64)
        for i in range(5):
            b.lin(f"distilled_guidance_layer.layers.{i}.in_layer", gh, gh)
            b.lin(f"distilled_guidance_layer.layers.{i}.out_layer", gh, gh)
            b.t(f"distilled_guidance_layer.norms.{i}.scale", gh)
        b.lin("distilled_guidance_layer.out_proj", hidden, gh)
    else:
        b.lin("time_in.in_layer", hidden, 256, bias)
        b.lin("time_in.out_layer", hidden, hidden, bias)
        if not flux2:
            b.lin("vector_in.in_layer", hidden, 768)
            b.lin("vector_in.out_layer", hidden, hidden)
        if not schnell:
            b.lin("guidance_in.in_layer", hidden, 256, bias)
            b.lin("guidance_in.out_layer", hidden, hidden, bias)
    if flux2:
        b.lin("double_stream_modulation_img.lin", 6 * hidden, hidden, False)
        b.lin("double_stream_modulation_txt.lin", 6 * hidden, hidden, False)
        b.lin("single_stream_modulation.lin", 3 * hidden, hidden, False)
    for i in range(double_n):
        p = f"double_blocks.{i}."
        for s in ("img", "txt"):
            if not chroma and not flux2:
                b.lin(f"{p}{s}_mod.lin", 6 * hidden, hidden)
            b.lin(f"{p}{s}_attn.qkv", 3 * hidden, hidden, bias)
            b.t(f"{p}{s}_attn.norm.query_norm.scale", head_dim)
            b.t(f"{p}{s}_attn.norm.key_norm.scale", head_dim)
            b.lin(f"{p}{s}_attn.proj", hidden, hidden, bias)
            if flux2:  # gated SiLU MLP: first layer 2 x mlp
                b.lin(f"{p}{s}_mlp.0", 2 * mlp, hidden, False)
                b.lin(f"{p}{s}_mlp.2", hidden, mlp, False)
            else:
                b.lin(f"{p}{s}_mlp.0", mlp, hidden)
                b.lin(f"{p}{s}_mlp.2", hidden, mlp)
    for i in range(single_n):
        p = f"single_blocks.{i}."
        first = 3 * hidden + (2 * mlp if flux2 else mlp)
        b.lin(f"{p}linear1", first, hidden, bias)
        b.lin(f"{p}linear2", hidden, hidden + mlp, bias)
        b.t(f"{p}norm.query_norm.scale", head_dim)
        b.t(f"{p}norm.key_norm.scale", head_dim)
        if not chroma and not flux2:
            b.lin(f"{p}modulation.lin", 3 * hidden, hidden)
    out_ch = 128 if flux2 else 64
    b.lin("final_layer.linear", out_ch, hidden, bias)
    if not chroma:
        b.lin("final_layer.adaLN_modulation.1", 2 * hidden, hidden, bias)
    return b.spec


def write_flux(path, dtype: str = "BF16", schnell: bool = False, scale: int = 32, fill: bool = False,
               chroma: bool = False, flux2: bool = False, double: int | None = None, single: int | None = None,
               sparse: bool = False, metadata: Mapping[str, str] | None = None) -> Written:
    spec = spec_flux(dtype, schnell=schnell, fill=fill, chroma=chroma, flux2=flux2, scale=scale,
                     double=double, single=single)
    return write_safetensors(path, spec, metadata, sparse=sparse)


# ---------------------------------------------------------------------------------------------
# Wan 2.1 / 2.2 (comfy/ldm/wan/model.py)
WAN_SIZES = {  # dim, ffn, layers, heads (Wan-AI configs; model_detection.py reads them back)
    "1.3b": (1536, 8960, 30),
    "14b": (5120, 13824, 40),
    "5b": (3072, 14336, 30),
}


def spec_wan(size: str = "14b", variant: str = "t2v", dtype: str = "BF16", scale: int = 1,
             layers: int | None = None, prefix: str = "") -> Spec:
    """variant: t2v | i2v (Wan 2.1, CLIP image embedding) | i2v22 (Wan 2.2 A14B I2V: 36 input
    channels, no image embedding) | flf | vace | ti2v (5B)."""
    b = _B(dtype, prefix)
    dim, ffn, n_layers = WAN_SIZES[size]
    real_dim = dim
    dim, ffn = _d(dim, scale), _d(ffn, scale)
    n_layers = n_layers if layers is None else layers
    out_dim = 48 if size == "5b" else 16
    in_dim = {"t2v": 16, "i2v": 36, "i2v22": 36, "flf": 36, "vace": 16, "ti2v": 48}[variant]
    if size == "5b":
        in_dim = 48
    b.conv("patch_embedding", dim, in_dim, 1, 2, 2)
    b.lin("text_embedding.0", dim, _d(4096, scale))
    b.lin("text_embedding.2", dim, dim)
    b.lin("time_embedding.0", dim, 256)
    b.lin("time_embedding.2", dim, dim)
    b.lin("time_projection.1", 6 * dim, dim)
    image_cross = variant in ("i2v", "flf")
    for i in range(n_layers):
        p = f"blocks.{i}."
        for att in ("self_attn", "cross_attn"):
            for m in ("q", "k", "v", "o"):
                b.lin(f"{p}{att}.{m}", dim, dim)
            b.t(f"{p}{att}.norm_q.weight", dim)
            b.t(f"{p}{att}.norm_k.weight", dim)
        if image_cross:
            b.lin(f"{p}cross_attn.k_img", dim, dim)
            b.lin(f"{p}cross_attn.v_img", dim, dim)
            b.t(f"{p}cross_attn.norm_k_img.weight", dim)
        b.norm(f"{p}norm3", dim)
        b.lin(f"{p}ffn.0", ffn, dim)
        b.lin(f"{p}ffn.2", dim, ffn)
        b.t(f"{p}modulation", 1, 6, real_dim)  # real width: tiny, and ComfyUI reads dims from modulations
    b.lin("head.head", out_dim * 4, dim)
    b.t("head.modulation", 1, 2, real_dim)
    if image_cross:
        b.norm("img_emb.proj.0", 1280)
        b.lin("img_emb.proj.1", 1280, 1280)
        b.lin("img_emb.proj.3", dim, 1280)
        b.norm("img_emb.proj.4", dim)
        if variant == "flf":
            b.t("img_emb.emb_pos", 1, 514, 1280)
    if variant == "vace":
        b.conv("vace_patch_embedding", dim, 96, 1, 2, 2)
        for i in range(0, n_layers, 2):
            j = i // 2
            b.lin(f"vace_blocks.{j}.after_proj", dim, dim)
            b.t(f"vace_blocks.{j}.modulation", 1, 6, real_dim)
    return b.spec


def write_wan(path, size: str = "14b", variant: str = "t2v", dtype: str = "BF16", scale: int = 64,
              layers: int | None = None, sparse: bool = False, metadata=None) -> Written:
    return write_safetensors(path, spec_wan(size, variant, dtype, scale, layers), metadata, sparse=sparse)


# ---------------------------------------------------------------------------------------------
# SD1.x / SD2.x / SDXL UNet (comfy/ldm/modules/diffusionmodules/openaimodel.py, ldm key names)
UNET_CONFIGS = {  # supported_models.py SD15 / SD20 / SDXL unet_config
    "sd15": dict(channel_mult=(1, 2, 4, 4), depth=(1, 1, 1, 0), context=768, adm=None, linear=False, mid=1),
    "sd2": dict(channel_mult=(1, 2, 4, 4), depth=(1, 1, 1, 0), context=1024, adm=None, linear=True, mid=1),
    "sdxl": dict(channel_mult=(1, 2, 4), depth=(0, 2, 10), context=2048, adm=2816, linear=True, mid=10),
}


def spec_unet(kind: str = "sdxl", dtype: str = "F16", scale: int = 1, prefix: str = "",
              transformer_scale: int = 1) -> Spec:
    """A UNet with ComfyUI's key layout. ``transformer_scale`` divides the transformer depths."""
    cfg = UNET_CONFIGS[kind]
    b = _B(dtype, prefix)
    mc = _d(320, scale, 8)
    ctx = cfg["context"]  # the discriminator: kept at real width
    temb = 4 * mc
    b.lin("time_embed.0", temb, mc)
    b.lin("time_embed.2", temb, temb)
    if cfg["adm"]:
        b.lin("label_emb.0.0", temb, cfg["adm"])
        b.lin("label_emb.0.2", temb, temb)

    def res(p: str, cin: int, cout: int) -> None:
        b.norm(f"{p}in_layers.0", cin)
        b.conv(f"{p}in_layers.2", cout, cin, 3, 3)
        b.lin(f"{p}emb_layers.1", cout, temb)
        b.norm(f"{p}out_layers.0", cout)
        b.conv(f"{p}out_layers.3", cout, cout, 3, 3)
        if cin != cout:
            b.conv(f"{p}skip_connection", cout, cin, 1, 1)

    def st(p: str, ch: int, depth: int) -> None:
        b.norm(f"{p}norm", ch)
        if cfg["linear"]:
            b.lin(f"{p}proj_in", ch, ch)
        else:
            b.conv(f"{p}proj_in", ch, ch, 1, 1)
        for j in range(max(1, depth // transformer_scale)):
            q = f"{p}transformer_blocks.{j}."
            for a in ("attn1", "attn2"):
                b.t(f"{q}{a}.to_q.weight", ch, ch)
                kv_in = ctx if a == "attn2" else ch
                b.t(f"{q}{a}.to_k.weight", ch, kv_in)
                b.t(f"{q}{a}.to_v.weight", ch, kv_in)
                b.lin(f"{q}{a}.to_out.0", ch, ch)
            b.lin(f"{q}ff.net.0.proj", ch * 8, ch)
            b.lin(f"{q}ff.net.2", ch, ch * 4)
            for n in ("norm1", "norm2", "norm3"):
                b.norm(f"{q}{n}", ch)
        if cfg["linear"]:
            b.lin(f"{p}proj_out", ch, ch)
        else:
            b.conv(f"{p}proj_out", ch, ch, 1, 1)

    b.conv("input_blocks.0.0", mc, 4, 3, 3)
    chans = [mc]
    ch = mc
    idx = 1
    mult, depth = cfg["channel_mult"], cfg["depth"]
    for level, m in enumerate(mult):
        for _ in range(2):
            res(f"input_blocks.{idx}.0.", ch, mc * m)
            ch = mc * m
            if depth[level]:
                st(f"input_blocks.{idx}.1.", ch, depth[level])
            chans.append(ch)
            idx += 1
        if level != len(mult) - 1:
            b.conv(f"input_blocks.{idx}.0.op", ch, ch, 3, 3)
            chans.append(ch)
            idx += 1
    res("middle_block.0.", ch, ch)
    st("middle_block.1.", ch, cfg["mid"])
    res("middle_block.2.", ch, ch)
    idx = 0
    for level in reversed(range(len(mult))):
        for i in range(3):
            skip = chans.pop()
            res(f"output_blocks.{idx}.0.", ch + skip, mc * mult[level])
            ch = mc * mult[level]
            n = 1
            if depth[level]:
                st(f"output_blocks.{idx}.1.", ch, depth[level])
                n = 2
            if level and i == 2:
                b.conv(f"output_blocks.{idx}.{n}.conv", ch, ch, 3, 3)
            idx += 1
    b.norm("out.0", ch)
    b.conv("out.2", 4, mc, 3, 3)
    return b.spec


# ---------------------------------------------------------------------------------------------
# Other DiTs: real key names, few blocks
def spec_sd3(dtype="F16", depth: int = 24, scale: int = 16, prefix: str = "") -> Spec:
    b = _B(dtype, prefix)
    hidden = _d(64 * depth, scale)
    b.conv("x_embedder.proj", hidden, 16, 2, 2)
    b.t("pos_embed", 1, 36864, hidden)
    b.lin("context_embedder", hidden, _d(4096, scale))
    b.lin("y_embedder.mlp.0", hidden, 2048)
    b.lin("t_embedder.mlp.0", hidden, 256)
    for i in range(depth):
        for part in ("context_block", "x_block"):
            b.lin(f"joint_blocks.{i}.{part}.attn.qkv", 3 * hidden, hidden)
            b.lin(f"joint_blocks.{i}.{part}.adaLN_modulation.1", 6 * hidden, hidden)
    b.lin("final_layer.linear", 64, hidden)
    return b.spec


def spec_hunyuan_video(dtype="BF16", scale: int = 32, double: int = 20, single: int = 40, prefix: str = "") -> Spec:
    b = _B(dtype, prefix)
    hidden = _d(3072, scale)
    b.conv("img_in.proj", hidden, 16, 1, 2, 2)
    b.lin("txt_in.input_embedder", hidden, _d(4096, scale))
    b.norm("txt_in.individual_token_refiner.blocks.0.norm1", hidden)
    b.lin("vector_in.in_layer", hidden, 768)
    b.lin("guidance_in.in_layer", hidden, 256)
    for i in range(double):
        b.lin(f"double_blocks.{i}.img_attn_qkv", 3 * hidden, hidden)
        b.lin(f"double_blocks.{i}.txt_attn_qkv", 3 * hidden, hidden)
    for i in range(single):
        b.lin(f"single_blocks.{i}.linear1", 7 * hidden, hidden)
    b.lin("final_layer.linear", 16 * 4, hidden)
    return b.spec


def spec_ltxv(dtype="BF16", layers: int = 28, scale: int = 16, prefix: str = "") -> Spec:
    b = _B(dtype, prefix)
    inner = 2048  # attention_head_dim (64) x 32 heads; model_detection reads shape[0] // 32
    inner_s = _d(inner, scale)
    b.lin("patchify_proj", inner_s, 128)
    b.lin("adaln_single.emb.timestep_embedder.linear_1", inner_s, 256)
    b.lin("caption_projection.linear_1", inner_s, _d(4096, scale))
    for i in range(layers):
        b.t(f"transformer_blocks.{i}.attn2.to_k.weight", inner_s, inner_s)
        b.t(f"transformer_blocks.{i}.attn1.to_q.weight", inner_s, inner_s)
    b.lin("proj_out", 128, inner_s)
    return b.spec


def spec_qwen_image(dtype="BF16", layers: int = 60, scale: int = 32, prefix: str = "") -> Spec:
    b = _B(dtype, prefix)
    hidden = _d(3072, scale)
    b.lin("img_in", hidden, 64)
    b.t("txt_norm.weight", _d(3584, scale))
    b.lin("txt_in", hidden, _d(3584, scale))
    for i in range(layers):
        b.lin(f"transformer_blocks.{i}.attn.to_q", hidden, hidden)
        b.lin(f"transformer_blocks.{i}.img_mlp.net.0.proj", 4 * hidden, hidden)
    b.lin("proj_out", 64, hidden)
    return b.spec


def spec_lumina2(dtype="BF16", z_image: bool = False, scale: int = 16, layers: int | None = None,
                 prefix: str = "") -> Spec:
    b = _B(dtype, prefix)
    dim, cap, n = (3840, 2560, 30) if z_image else (2304, 2304, 26)
    n = n if layers is None else layers
    dim_s = _d(dim, scale)
    b.norm("cap_embedder.0", _d(cap, scale), bias=False)
    b.lin("cap_embedder.1", dim_s, _d(cap, scale))
    b.lin("x_embedder", dim_s, 64)
    if z_image:
        b.t("cap_pad_token", 1, dim_s)
    for i in range(n):
        b.t(f"layers.{i}.attention.qkv.weight", 3 * dim_s, dim_s)
    return b.spec


def spec_hidream(dtype="BF16", scale: int = 32, prefix: str = "") -> Spec:
    b = _B(dtype, prefix)
    hidden = _d(2560, scale)
    b.conv("x_embedder.proj", hidden, 64, 1, 1)  # HiDream patch embed (Linear in the model)
    b.lin("caption_projection.0.linear", hidden, _d(4096, scale), bias=False)
    for i in range(16):
        b.lin(f"double_stream_blocks.{i}.block.attn1.to_q", hidden, hidden)
    for i in range(32):
        b.lin(f"single_stream_blocks.{i}.block.attn1.to_q", hidden, hidden)
    return b.spec


# ---------------------------------------------------------------------------------------------
# Text encoders
def _clip_encoder_layers(b, tower: str, layers: int, w: int) -> None:
    """HF CLIP encoder layers (text and vision towers share the layout)."""
    for i in range(layers):
        p = f"{tower}.encoder.layers.{i}."
        for m in ("q_proj", "k_proj", "v_proj", "out_proj"):
            b.lin(f"{p}self_attn.{m}", w, w)
        b.norm(f"{p}layer_norm1", w)
        b.norm(f"{p}layer_norm2", w)
        b.lin(f"{p}mlp.fc1", 4 * w, w)
        b.lin(f"{p}mlp.fc2", w, 4 * w)


def spec_clip_text(layers: int = 12, width: int = 768, dtype: str = "F16", scale: int = 1, vocab: int = 49408,
                   prefix: str = "", projection: bool = True) -> Spec:
    """HF CLIPTextModel keys (comfy/clip_model.py)."""
    b = _B(dtype, prefix)
    w = _d(width, scale)
    b.t("text_model.embeddings.token_embedding.weight", vocab, w)
    b.t("text_model.embeddings.position_embedding.weight", 77, w)
    _clip_encoder_layers(b, "text_model", layers, w)
    b.norm("text_model.final_layer_norm", w)
    if projection:
        b.t("text_projection.weight", w, w)
    return b.spec


def spec_openclip_text(layers: int = 32, width: int = 1280, dtype: str = "F16", scale: int = 1,
                       prefix: str = "") -> Spec:
    """OpenCLIP text tower keys as in SD2 / SDXL checkpoints (conditioner.embedders.1.model.*)."""
    b = _B(dtype, prefix)
    w = _d(width, scale)
    b.t("token_embedding.weight", 49408, w)
    b.t("positional_embedding", 77, w)
    for i in range(layers):
        p = f"transformer.resblocks.{i}."
        b.t(f"{p}attn.in_proj_weight", 3 * w, w)
        b.t(f"{p}attn.in_proj_bias", 3 * w)
        b.lin(f"{p}attn.out_proj", w, w)
        b.norm(f"{p}ln_1", w)
        b.norm(f"{p}ln_2", w)
        b.lin(f"{p}mlp.c_fc", 4 * w, w)
        b.lin(f"{p}mlp.c_proj", w, 4 * w)
    b.norm("ln_final", w)
    b.t("text_projection", w, w)
    b.t("logit_scale")
    return b.spec


def spec_t5(umt5: bool = False, dtype: str = "F16", scale: int = 1, layers: int = 24, vocab: int | None = None,
            prefix: str = "", d_model: int = 4096, ffn: int = 10240, both_embeddings: bool = False) -> Spec:
    """T5 v1.1 / umT5 encoder keys (comfy/text_encoders/t5.py). umT5 has a relative attention bias
    in every block; T5 only in block 0. ``both_embeddings`` adds encoder.embed_tokens.weight as the
    transformers export does (flux_text_encoders/t5xxl_fp16 carries both)."""
    b = _B(dtype, prefix)
    d, f = _d(d_model, scale), _d(ffn, scale)
    inner = d  # 64 heads x 64 at full size
    vocab = vocab if vocab is not None else (256384 if umt5 else 32128)
    b.t("shared.weight", vocab, d)
    if both_embeddings:
        b.t("encoder.embed_tokens.weight", vocab, d)
    for i in range(layers):
        p = f"encoder.block.{i}.layer."
        for m in ("q", "k", "v"):
            b.t(f"{p}0.SelfAttention.{m}.weight", inner, d)
        b.t(f"{p}0.SelfAttention.o.weight", d, inner)
        if umt5 or i == 0:
            b.t(f"{p}0.SelfAttention.relative_attention_bias.weight", 32, 64)
        b.t(f"{p}0.layer_norm.weight", d)
        b.t(f"{p}1.DenseReluDense.wi_0.weight", f, d)
        b.t(f"{p}1.DenseReluDense.wi_1.weight", f, d)
        b.t(f"{p}1.DenseReluDense.wo.weight", d, f)
        b.t(f"{p}1.layer_norm.weight", d)
    b.t("encoder.final_layer_norm.weight", d)
    return b.spec


def write_t5xxl(path, dtype: str = "F16", scale: int = 64, sparse: bool = False, **kw) -> Written:
    return write_safetensors(path, spec_t5(False, dtype, scale, **kw), sparse=sparse)


def write_umt5(path, dtype: str = "F16", scale: int = 64, sparse: bool = False, **kw) -> Written:
    return write_safetensors(path, spec_t5(True, dtype, scale, **kw), sparse=sparse)


def write_clip_l(path, dtype: str = "F16", scale: int = 8, sparse: bool = False) -> Written:
    return write_safetensors(path, spec_clip_text(12, 768, dtype, scale, vocab=49408 if scale == 1 else 1024),
                             sparse=sparse)


def write_clip_g(path, dtype: str = "F16", scale: int = 16, sparse: bool = False) -> Written:
    return write_safetensors(path, spec_clip_text(32, 1280, dtype, scale, vocab=49408 if scale == 1 else 1024),
                             sparse=sparse)


LLM_CONFIGS = {  # HF config.json of each model (hidden, layers, heads, kv_heads, head_dim, ffn, vocab)
    "qwen2.5-vl-7b": (3584, 28, 28, 4, 128, 18944, 152064),
    "llama3-8b": (4096, 32, 32, 8, 128, 14336, 128256),
    "mistral": (5120, 40, 32, 8, 128, 32768, 131072),
    "qwen3": (2560, 36, 32, 8, 128, 9728, 151936),
    "gemma": (2304, 26, 8, 4, 256, 9216, 256000),
}


def spec_llm(name: str, dtype: str = "BF16", scale: int = 64, layers: int | None = None, prefix: str = "") -> Spec:
    """Llama-style decoder keys (comfy/text_encoders/llama.py). Norm vectors keep the real hidden
    width (ComfyUI's detect_te_model reads it); Qwen2.5 k_proj biases keep the real KV width."""
    hidden, n_layers, heads, kv, head_dim, ffn, vocab = LLM_CONFIGS[name]
    b = _B(dtype, prefix)
    n_layers = n_layers if layers is None else layers
    h = _d(hidden, scale)
    b.t("model.embed_tokens.weight", _d(vocab, scale * 16), h)
    for i in range(n_layers):
        p = f"model.layers.{i}."
        b.t(f"{p}self_attn.q_proj.weight", _d(heads * head_dim, scale), h)
        b.t(f"{p}self_attn.k_proj.weight", kv * head_dim if name == "qwen2.5-vl-7b" else _d(kv * head_dim, scale), h)
        b.t(f"{p}self_attn.v_proj.weight", _d(kv * head_dim, scale), h)
        b.t(f"{p}self_attn.o_proj.weight", h, _d(heads * head_dim, scale))
        if name == "qwen2.5-vl-7b":
            b.t(f"{p}self_attn.q_proj.bias", _d(heads * head_dim, scale))
            b.t(f"{p}self_attn.k_proj.bias", kv * head_dim)  # 512: the 7B discriminator
            b.t(f"{p}self_attn.v_proj.bias", _d(kv * head_dim, scale))
        if name == "qwen3":
            b.t(f"{p}self_attn.q_norm.weight", head_dim)
            b.t(f"{p}self_attn.k_norm.weight", head_dim)
        b.t(f"{p}mlp.gate_proj.weight", _d(ffn, scale), h)
        b.t(f"{p}mlp.up_proj.weight", _d(ffn, scale), h)
        b.t(f"{p}mlp.down_proj.weight", h, _d(ffn, scale))
        b.t(f"{p}input_layernorm.weight", hidden)
        b.t(f"{p}post_attention_layernorm.weight", hidden)
        if name == "gemma":
            b.t(f"{p}pre_feedforward_layernorm.weight", hidden)
            b.t(f"{p}post_feedforward_layernorm.weight", hidden)
    b.t("model.norm.weight", hidden)
    if name == "qwen2.5-vl-7b":
        b.conv("visual.patch_embed.proj", _d(1280, scale), 3, 2, 14, 14, bias=False)
        b.lin("visual.blocks.0.attn.qkv", 3 * _d(1280, scale), _d(1280, scale))
    return b.spec


# ---------------------------------------------------------------------------------------------
# VAEs
def spec_vae_kl(z: int = 4, dtype: str = "F32", scale: int = 1, prefix: str = "", quant_conv: bool = True,
                bn: bool = False) -> Spec:
    """LDM AutoencoderKL keys (comfy/ldm/modules/diffusionmodules/model.py), ch 128, mult 1,2,4,4."""
    b = _B(dtype, prefix)
    ch = _d(128, scale, 4)
    mult = (1, 2, 4, 4)

    def res(p, cin, cout):
        b.norm(f"{p}norm1", cin)
        b.conv(f"{p}conv1", cout, cin, 3, 3)
        b.norm(f"{p}norm2", cout)
        b.conv(f"{p}conv2", cout, cout, 3, 3)
        if cin != cout:
            b.conv(f"{p}nin_shortcut", cout, cin, 1, 1)

    def attn(p, c):
        b.norm(f"{p}norm", c)
        for m in ("q", "k", "v", "proj_out"):
            b.conv(f"{p}{m}", c, c, 1, 1)

    b.conv("encoder.conv_in", ch, 3, 3, 3)
    cin = ch
    for i, m in enumerate(mult):
        for j in range(2):
            res(f"encoder.down.{i}.block.{j}.", cin, ch * m)
            cin = ch * m
        if i != len(mult) - 1:
            b.conv(f"encoder.down.{i}.downsample.conv", cin, cin, 3, 3)
    res("encoder.mid.block_1.", cin, cin)
    attn("encoder.mid.attn_1.", cin)
    res("encoder.mid.block_2.", cin, cin)
    b.norm("encoder.norm_out", cin)
    b.conv("encoder.conv_out", 2 * z, cin, 3, 3)
    top = ch * mult[-1]
    b.conv("decoder.conv_in", top, z, 3, 3)
    res("decoder.mid.block_1.", top, top)
    attn("decoder.mid.attn_1.", top)
    res("decoder.mid.block_2.", top, top)
    cin = top
    for i in reversed(range(len(mult))):
        for j in range(3):
            res(f"decoder.up.{i}.block.{j}.", cin, ch * mult[i])
            cin = ch * mult[i]
        if i != 0:
            b.conv(f"decoder.up.{i}.upsample.conv", cin, cin, 3, 3)
    b.norm("decoder.norm_out", cin)
    b.conv("decoder.conv_out", 3, cin, 3, 3)
    if quant_conv:
        b.conv("quant_conv", 2 * z, 2 * z, 1, 1)
        b.conv("post_quant_conv", z, z, 1, 1)
    if bn:  # Flux.2 VAE: batch-norm over the 2x2-patched latent (sd.py bn.running_mean branch)
        b.t("bn.running_mean", 4 * z)
        b.t("bn.running_var", 4 * z)
    return b.spec


def spec_vae_wan(version: str = "2.1", dtype: str = "BF16", scale: int = 8, prefix: str = "") -> Spec:
    """Wan causal 3-D VAE (comfy/ldm/wan/vae.py / vae2_2.py): the keys sd.py branches on."""
    b = _B(dtype, prefix)
    dim = 96 if version == "2.1" else 160  # encoder base width (vae.py / vae2_2.py "dim")
    dec_dim = 96 if version == "2.1" else 256  # Wan 2.2's decoder is wider than its encoder
    z = 16 if version == "2.1" else 48
    d, dd = _d(dim, scale, 4), _d(dec_dim, scale, 4)
    b.conv("encoder.conv1", d, 3 if version == "2.1" else 12, 3, 3, 3)
    for i in range(2):
        b.t(f"decoder.middle.{i * 2}.residual.0.gamma", dd * 4, 1, 1, 1)
        b.conv(f"decoder.middle.{i * 2}.residual.2", dd * 4, dd * 4, 3, 3, 3)
    b.conv("decoder.conv1", dd * 4, z, 3, 3, 3)
    b.t("decoder.head.0.gamma", dd, 1, 1, 1)
    b.conv("decoder.head.2", 3 if version == "2.1" else 12, dd, 3, 3, 3)
    b.conv("conv1", 2 * z, 2 * z, 1, 1, 1)
    b.conv("conv2", z, z, 1, 1, 1)
    if version == "2.2":
        b.conv("decoder.upsamples.0.upsamples.0.residual.2", dd * 4, dd * 4, 3, 3, 3)
    else:
        b.conv("decoder.upsamples.0.residual.2", dd * 4, dd * 4, 3, 3, 3)
    return b.spec


def spec_vae_hunyuan(dtype: str = "F16", scale: int = 8, z: int = 16) -> Spec:
    b = _B(dtype)
    b.conv("decoder.conv_in.conv", _d(512, scale), z, 3, 3, 3)
    b.conv("encoder.conv_in.conv", _d(128, scale), 3, 3, 3, 3)
    b.conv("post_quant_conv", z, z, 1, 1, 1)
    return b.spec


def spec_vae_ltxv(dtype: str = "BF16", scale: int = 8) -> Spec:
    b = _B(dtype)
    b.conv("decoder.up_blocks.0.res_blocks.0.conv1.conv", _d(1024, scale), _d(1024, scale), 3, 3, 3)
    b.conv("decoder.conv_in.conv", _d(1024, scale), 128, 3, 3, 3)
    b.conv("encoder.conv_in.conv", _d(128, scale), 48, 3, 3, 3)
    return b.spec


def write_vae(path, kind: str = "kl4", dtype: str | None = None, scale: int = 8, sparse: bool = False) -> Written:
    """kind: kl4 (SD/SDXL) | kl16 (Flux/SD3 ae) | flux2 | wan2.1 | wan2.2 | hunyuan | ltxv."""
    if kind in ("kl4", "kl16", "flux2"):
        z = {"kl4": 4, "kl16": 16, "flux2": 32}[kind]
        spec = spec_vae_kl(z, dtype or "F32", scale, quant_conv=kind == "kl4", bn=kind == "flux2")
    elif kind in ("wan2.1", "wan2.2"):
        spec = spec_vae_wan(kind[3:], dtype or "BF16", scale)
    elif kind == "hunyuan":
        spec = spec_vae_hunyuan(dtype or "F16", scale)
    elif kind == "ltxv":
        spec = spec_vae_ltxv(dtype or "BF16", scale)
    else:
        raise ValueError(kind)
    return write_safetensors(path, spec, sparse=sparse)


# ---------------------------------------------------------------------------------------------
# LoRA, ControlNet, CLIP vision
def spec_lora(target: str = "flux", style: str = "kohya", rank: int = 16, dtype: str = "BF16",
              blocks: int = 4, alpha: bool = True) -> Spec:
    """LoRA keys as the common trainers write them.

    target flux | wan14b | wan1.3b | sdxl | sd15; style kohya (lora_up/lora_down + .alpha),
    diffusers (peft lora_A/lora_B), comfy (diffusion_model.* with lora_up/lora_down, musubi/lightx2v).
    """
    b = _B(dtype)
    mods: list[tuple[str, int, int]] = []  # (module name in the style, out, in)
    if target == "flux":
        for i in range(blocks):
            if style == "diffusers":
                mods += [(f"transformer.transformer_blocks.{i}.attn.to_q", 3072, 3072),
                         (f"transformer.transformer_blocks.{i}.attn.add_q_proj", 3072, 3072),
                         (f"transformer.single_transformer_blocks.{i}.attn.to_q", 3072, 3072)]
            elif style == "comfy":
                mods += [(f"diffusion_model.double_blocks.{i}.img_attn.qkv", 9216, 3072),
                         (f"diffusion_model.single_blocks.{i}.linear1", 21504, 3072)]
            else:
                mods += [(f"lora_unet_double_blocks_{i}_img_attn_qkv", 9216, 3072),
                         (f"lora_unet_single_blocks_{i}_linear1", 21504, 3072)]
    elif target in ("wan14b", "wan1.3b"):
        dim = 5120 if target == "wan14b" else 1536
        for i in range(blocks):
            for m in ("self_attn.q", "self_attn.k", "cross_attn.v", "ffn.0"):
                out = 13824 if m == "ffn.0" and dim == 5120 else (8960 if m == "ffn.0" else dim)
                name = f"diffusion_model.blocks.{i}.{m}"
                if style == "kohya":
                    name = "lora_unet_" + name[len("diffusion_model."):].replace(".", "_")
                mods.append((name, out, dim))
    elif target in ("sdxl", "sd15"):
        ctx = 2048 if target == "sdxl" else 768
        for i in range(blocks):
            if target == "sdxl":
                base = f"lora_unet_input_blocks_4_1_transformer_blocks_{i}"
                mods += [(f"{base}_attn1_to_q", 640, 640), (f"{base}_attn2_to_k", 640, ctx),
                         (f"lora_te1_text_model_encoder_layers_{i}_self_attn_q_proj", 768, 768),
                         (f"lora_te2_text_model_encoder_layers_{i}_self_attn_q_proj", 1280, 1280)]
            else:
                base = f"lora_unet_down_blocks_0_attentions_{i % 2}_transformer_blocks_{i}"
                mods += [(f"{base}_attn1_to_q", 320, 320), (f"{base}_attn2_to_k", 320, ctx),
                         (f"lora_te_text_model_encoder_layers_{i}_self_attn_q_proj", 768, 768)]
    else:
        raise ValueError(target)
    for name, out_f, in_f in mods:
        if style == "diffusers":
            b.t(f"{name}.lora_A.weight", rank, in_f)
            b.t(f"{name}.lora_B.weight", out_f, rank)
        else:
            b.t(f"{name}.lora_down.weight", rank, in_f)
            b.t(f"{name}.lora_up.weight", out_f, rank)
            if alpha:
                b.t(f"{name}.alpha", dtype="F32")
    return b.spec


def write_lora(path, target: str = "flux", style: str = "kohya", rank: int = 16, dtype: str = "BF16",
               blocks: int = 4, alpha: bool = True) -> Written:
    return write_safetensors(path, spec_lora(target, style, rank, dtype, blocks, alpha))


def spec_controlnet_sd(kind: str = "sd15", dtype: str = "F16", scale: int = 8) -> Spec:
    """ldm ControlNet: a UNet encoder + zero_convs + input_hint_block (comfy/cldm/cldm.py)."""
    full = spec_unet(kind, dtype, scale)
    spec = {k: v for k, v in full.items()
            if k.startswith(("time_embed", "label_emb", "input_blocks", "middle_block"))}
    b = _B(dtype)
    mc = _d(320, scale, 8)
    b.conv("input_hint_block.0", 16, 3, 3, 3)
    b.conv("input_hint_block.14", mc, 256 // 8, 3, 3)
    for i in range(12):
        b.conv(f"zero_convs.{i}.0", mc, mc, 1, 1)
    b.conv("middle_block_out.0", mc, mc, 1, 1)
    spec.update(b.spec)
    return spec


def spec_controlnet_flux(dtype: str = "BF16", scale: int = 32) -> Spec:
    """XLabs-style Flux ControlNet: Flux double blocks + controlnet_blocks + input_hint_block."""
    spec = spec_flux(dtype, scale=scale, double=2, single=0)
    spec = {k: v for k, v in spec.items() if not k.startswith("final_layer")}
    hidden = spec["img_in.weight"][1][0]
    b = _B(dtype)
    for i in range(2):
        b.lin(f"controlnet_blocks.{i}", hidden, hidden)
    b.conv("input_hint_block.0", 16, 3, 3, 3)
    spec.update(b.spec)
    return spec


def spec_clip_vision(layers: int = 32, width: int = 1280, dtype: str = "F16", scale: int = 16) -> Spec:
    """HF CLIPVisionModelWithProjection keys (comfy/clip_vision.py); ViT-H/14: 32 x 1280."""
    b = _B(dtype)
    w = _d(width, scale)
    b.t("vision_model.embeddings.class_embedding", w)
    b.conv("vision_model.embeddings.patch_embedding", w, 3, 14, 14, bias=False)
    b.t("vision_model.embeddings.position_embedding.weight", 257, w)
    b.norm("vision_model.pre_layrnorm", w)
    _clip_encoder_layers(b, "vision_model", layers, w)
    b.norm("vision_model.post_layernorm", w)
    b.t("visual_projection.weight", _d(1024, scale), w)
    return b.spec


# ---------------------------------------------------------------------------------------------
# Checkpoints (CheckpointLoaderSimple bundles)
def _prefixed(spec: Spec, prefix: str) -> Spec:
    return {prefix + k: v for k, v in spec.items()}


def spec_checkpoint(kind: str = "sdxl", dtype: str = "F16", scale: int = 8) -> dict[str, Spec]:
    """Parts of a checkpoint, each already prefixed: {"model": ..., "clip": ..., "vae": ..., "other": ...}.

    sd15: model.diffusion_model. / cond_stage_model.transformer. / first_stage_model. (+ alphas_cumprod)
    sdxl: conditioner.embedders.0.transformer. (CLIP-L, HF) + conditioner.embedders.1.model. (CLIP-G, OpenCLIP)
    flux: Comfy-Org all-in-one: text_encoders.clip_l.transformer. / text_encoders.t5xxl.transformer. / vae.
    """
    parts: dict[str, Spec] = {}
    if kind == "sd15":
        parts["model"] = _prefixed(spec_unet("sd15", dtype, scale, transformer_scale=1), "model.diffusion_model.")
        parts["clip"] = _prefixed(spec_clip_text(12, 768, dtype, scale, vocab=1024, projection=False),
                                  "cond_stage_model.transformer.")
        parts["vae"] = _prefixed(spec_vae_kl(4, dtype, scale), "first_stage_model.")
        parts["other"] = {"alphas_cumprod": ("F32", (1000,)), "betas": ("F32", (1000,))}
    elif kind == "sdxl":
        parts["model"] = _prefixed(spec_unet("sdxl", dtype, scale, transformer_scale=5), "model.diffusion_model.")
        clip = _prefixed(spec_clip_text(12, 768, dtype, scale, vocab=1024, projection=False),
                         "conditioner.embedders.0.transformer.")
        clip.update(_prefixed(spec_openclip_text(32, 1280, dtype, scale), "conditioner.embedders.1.model."))
        parts["clip"] = clip
        parts["vae"] = _prefixed(spec_vae_kl(4, dtype, scale), "first_stage_model.")
    elif kind == "flux":
        parts["model"] = _prefixed(spec_flux("F8_E4M3", scale=scale * 4, double=2, single=4), "model.diffusion_model.")
        clip = _prefixed(spec_clip_text(12, 768, dtype, scale, vocab=1024), "text_encoders.clip_l.transformer.")
        clip.update(_prefixed(spec_t5(False, "F8_E4M3", scale * 8, layers=24, vocab=512), "text_encoders.t5xxl.transformer."))
        parts["clip"] = clip
        parts["vae"] = _prefixed(spec_vae_kl(16, "BF16", scale, quant_conv=False), "vae.")
    else:
        raise ValueError(kind)
    return parts


def write_checkpoint(path, kind: str = "sdxl", dtype: str = "F16", scale: int = 8) -> tuple[Written, dict[str, Spec]]:
    parts = spec_checkpoint(kind, dtype, scale)
    spec: Spec = {}
    for p in parts.values():
        spec.update(p)
    return write_safetensors(path, spec), parts


# ---------------------------------------------------------------------------------------------
# GGUF builders (ComfyUI-GGUF layout: original key names, general.architecture = model type)
def write_gguf_flux(path, quant: str = "Q8_0", scale: int = 32, double: int = 2, single: int = 2,
                    quantize_real: bool = False) -> Written:
    spec = spec_flux("BF16", scale=scale, double=double, single=single)
    tensors = quantize_spec(spec, quant)
    return write_gguf(path, tensors, arch="flux", quantize_real=quantize_real)


def write_gguf_wan(path, quant: str = "Q4_K", size: str = "14b", scale: int = 16, layers: int = 2) -> Written:
    spec = spec_wan(size, "t2v", "BF16", scale, layers)
    tensors = quantize_spec(spec, quant)
    # GGUF holds at most 4 dims: ComfyUI-GGUF flattens 5-D conv weights and records the shape
    meta = {}
    for name, (t, shape) in list(tensors.items()):
        if len(shape) > 4:
            flat = (shape[0], math.prod(shape[1:]))
            tensors[name] = ("F16", flat)
            meta[f"comfy.gguf.orig_shape.{name}"] = list(shape)
    written = write_gguf(path, tensors, arch="wan", metadata=meta)
    return written


def write_gguf_te(path, arch: str = "t5encoder", quant: str = "Q8_0", vocab: int = 256384, hidden: int = 64,
                  layers: int = 24) -> Written:
    """llama.cpp-style text encoder GGUF (as city96's t5/umt5 encoder GGUFs): blk names + metadata."""
    t: dict[str, tuple[str, tuple[int, ...]]] = {"token_embd.weight": (quant, (vocab, hidden))}
    pre = "enc." if arch in ("t5", "t5encoder") else ""
    for i in range(layers):
        t[f"{pre}blk.{i}.attn_q.weight"] = (quant, (hidden, hidden))
        t[f"{pre}blk.{i}.ffn_up.weight"] = (quant, (hidden * 2, hidden))
        t[f"{pre}blk.{i}.attn_norm.weight"] = ("F32", (hidden,))
    meta = {f"{arch}.block_count": layers, f"{arch}.embedding_length": hidden}
    return write_gguf(path, t, arch=arch, metadata=meta)
