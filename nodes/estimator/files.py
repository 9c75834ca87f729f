"""Read model files' headers -> Inventory. Never reads (or maps) the tensor data.

Formats:
- safetensors: 8-byte little-endian header length, then a JSON header
  ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}``
  (https://github.com/huggingface/safetensors#format). Parsed here with the standard library so
  every malformation gets a precise message.
- GGUF: the header parsed with ``struct`` over an mmap (only the header pages are touched), every
  count bounded by the file size; exact bytes per tensor from the block sizes in
  ``gguf.GGML_QUANT_SIZES``.
- pickle checkpoints (.ckpt/.pt/.pth/.bin): never unpickled. Zip-format checkpoints are read
  from the zip directory (storage sizes) and the pickle *opcodes* (``pickletools.genops``, which
  parses without executing) for the storage dtypes; legacy pickles fall back to the file size.

Results are cached by (real path, size, mtime).
"""
from __future__ import annotations

import contextlib
import gc
import json
import mmap
import math
import os
import pickletools
import stat
import struct
import threading
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Mapping

from .errors import ModelFileError, VramBudgetError

# safetensors dtype -> bits per element (safetensors/src/tensor.rs `Dtype::bitsize`).
SAFETENSORS_DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
FP8_DTYPES = {"F8_E4M3": "fp8_e4m3fn", "F8_E5M2": "fp8_e5m2"}
FLOAT16_DTYPES = {"F16", "BF16"}

MAX_HEADER_BYTES = 100 * 1024 * 1024  # same cap as comfy.utils.safetensors_header and the safetensors library
# Bounds the safetensors library does not need (it is Rust) but a Python parser does, so that a
# hostile header is refused in bounded time and memory: real files have < 20,000 tensors (a 70B
# LLM shard) and < 8 dims per tensor.
MAX_TENSORS = 200_000
MAX_DIMS = 64
MAX_ELEMENTS = 2**62  # the safetensors library refuses shapes whose element count overflows
# The header cache keeps at most this many tensors in all (a 99 MB header must not stay resident).
MAX_CACHED_TENSORS = 2_000_000
PICKLE_SUFFIXES = {".ckpt", ".pt", ".pth", ".bin", ".pt2", ".pkl"}
SAFETENSORS_SUFFIXES = {".safetensors", ".sft"}
GGUF_SUFFIXES = {".gguf"}
MODEL_SUFFIXES = PICKLE_SUFFIXES | SAFETENSORS_SUFFIXES | GGUF_SUFFIXES


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str  # safetensors dtype name ("BF16", "F8_E4M3") or GGUF type name ("Q4_K", "F16")
    shape: tuple[int, ...]  # PyTorch order (GGUF shapes are reversed from ggml order)
    nbytes: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _tensor(name: str, dtype: str, shape: tuple[int, ...], nbytes: int,
            _new=object.__new__, _cls=TensorInfo) -> TensorInfo:
    """TensorInfo without the frozen-dataclass __init__ (0.3 us instead of 0.8 us; a models/ tree
    has ~100,000 tensors). Same object as TensorInfo(name, dtype, shape, nbytes)."""
    obj = _new(_cls)
    d = obj.__dict__
    d["name"] = name
    d["dtype"] = dtype
    d["shape"] = shape
    d["nbytes"] = nbytes
    return obj


@dataclass(frozen=True)
class Inventory:
    """What a model file holds, from its header alone."""

    path: str
    format: str  # "safetensors" | "gguf" | "pickle"
    file_bytes: int
    tensors: Mapping[str, TensorInfo]
    metadata: Mapping[str, object] = field(default_factory=dict)
    exact: bool = True  # False when bytes/dtypes are a fallback (legacy pickle)
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def tensor_count(self) -> int:
        return len(self.tensors)

    # The sums below are computed once per Inventory (one pass over the tensors): the estimator asks
    # for them many times per file and an Inventory never changes (frozen; cached_property stores
    # into the instance __dict__, which a frozen dataclass without slots allows).
    @cached_property
    def _sums(self) -> tuple[int, int, dict[str, int], dict[str, int], int]:
        params = nbytes = largest = 0
        p_by: dict[str, int] = {}
        b_by: dict[str, int] = {}
        prod = math.prod
        for t in self.tensors.values():
            n = prod(t.shape)
            b = t.nbytes
            d = t.dtype
            params += n
            nbytes += b
            if n > largest:
                largest = n
            p_by[d] = p_by.get(d, 0) + n
            b_by[d] = b_by.get(d, 0) + b
        by_params = dict(sorted(p_by.items(), key=lambda kv: -kv[1]))
        by_bytes = dict(sorted(b_by.items(), key=lambda kv: -kv[1]))
        return params, nbytes, by_params, by_bytes, largest

    @property
    def largest_tensor_numel(self) -> int:
        """Elements of the biggest tensor (working memory when a layer is dequantized / upcast)."""
        return self._sums[4]

    @property
    def param_count(self) -> int:
        return self._sums[0]

    @property
    def total_bytes(self) -> int:
        if not self.tensors:
            return self.file_bytes
        return self._sums[1]

    @property
    def bytes_by_dtype(self) -> dict[str, int]:
        return dict(self._sums[3])

    @property
    def params_by_dtype(self) -> dict[str, int]:
        return dict(self._sums[2])

    @property
    def main_dtype(self) -> str | None:
        """The dtype holding the most parameters (as comfy.utils.weight_dtype picks it)."""
        by = self.params_by_dtype
        return next(iter(by)) if by else None

    @property
    def quantization(self) -> str | None:
        """None for plain 16/32-bit files; else e.g. 'fp8_e4m3fn', 'scaled fp8_e4m3fn', 'gguf Q4_K'."""
        if self.format == "gguf":
            quant = [d for d in self.params_by_dtype if d not in ("F32", "F16", "BF16", "F64")]
            return f"gguf {quant[0]}" if quant else None
        main = self.main_dtype
        if main in FP8_DTYPES:
            scaled = any(_is_scale_key(k) for k in self.tensors) or "_quantization_metadata" in self.metadata
            return ("scaled " if scaled else "") + FP8_DTYPES[main]
        if main in ("F4", "U8") and any(k.endswith(".weight_scale") for k in self.tensors):
            return "nvfp4" if main == "F4" else "int8/fp4 packed"
        return None

    def shape(self, key: str) -> tuple[int, ...] | None:
        t = self.tensors.get(key)
        return t.shape if t else None

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "format": self.format,
            "file_bytes": self.file_bytes,
            "tensor_count": self.tensor_count,
            "param_count": self.param_count,
            "total_bytes": self.total_bytes,
            "bytes_by_dtype": self.bytes_by_dtype,
            "quantization": self.quantization,
            "exact": self.exact,
            "notes": list(self.notes),
            "metadata": {k: v for k, v in self.metadata.items() if isinstance(v, (str, int, float, bool))},
        }


def _is_scale_key(key: str) -> bool:
    return key.endswith(("scale_weight", ".weight_scale", ".scale_input", ".input_scale")) or key == "scaled_fp8"


# ---------------------------------------------------------------------------------------------
# Cache
_cache: dict[tuple[str, int, int], Inventory] = {}
_cache_lock = threading.Lock()
_cached_tensors = 0


def clear_cache() -> None:
    global _cached_tensors
    with _cache_lock:
        _cache.clear()
        _cached_tensors = 0


def inspect_file(path: str | os.PathLike) -> Inventory:
    """Inventory of one model file; ModelFileError (naming the file) on any problem."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ModelFileError(path, "file not found") from None
    except OSError as exc:
        raise ModelFileError(path, f"cannot read file ({exc.strerror or exc})") from None
    if os.path.isdir(path):
        raise ModelFileError(path, "is a folder, not a model file")
    if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block or stream forever on open/read
        raise ModelFileError(path, "not a regular file (a pipe, socket or device)")
    real = os.path.realpath(path)
    key = (real, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit if hit.path == path else _with_path(hit, path)
    with _gc_paused():
        inv = _inspect_uncached(path, st.st_size)
    global _cached_tensors
    with _cache_lock:
        n = len(inv.tensors)
        if len(_cache) > 4096 or _cached_tensors + n > MAX_CACHED_TENSORS:
            _cache.clear()
            _cached_tensors = 0
        if n <= MAX_CACHED_TENSORS // 4:
            _cache[key] = inv
            _cached_tensors += n
    return inv


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while a header is parsed.

    A header becomes thousands of small acyclic objects (JSON dicts/lists, TensorInfo); each 700
    allocations start a collection that walks the whole heap, which is large inside ComfyUI.
    Measured on a 771-tensor header: 4.4 ms with the collector, 1.8 ms without
    (bench/bench_inspect.py). Nothing here creates reference cycles; the collector is restored
    (if it was on) as soon as the file is parsed.
    """
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _with_path(inv: Inventory, path: str) -> Inventory:
    return Inventory(path, inv.format, inv.file_bytes, inv.tensors, inv.metadata, inv.exact, inv.notes)


def _inspect_uncached(path: str, size: int) -> Inventory:
    if size == 0:
        raise ModelFileError(path, "empty file (0 bytes)")
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise ModelFileError(path, f"cannot read file ({exc.strerror or exc})") from None
    suffix = os.path.splitext(path)[1].lower()
    if head[:4] == b"GGUF":
        return _inspect_gguf(path, size)
    if suffix in GGUF_SUFFIXES:
        raise ModelFileError(path, f"not a GGUF file (magic bytes {head[:4]!r}, expected b'GGUF')")
    if head[:4] == b"PK\x03\x04":
        return _inspect_zip_pickle(path, size)
    if suffix in PICKLE_SUFFIXES and head[:1] == b"\x80":
        return _legacy_pickle(path, size)
    if suffix in SAFETENSORS_SUFFIXES or len(head) == 8:
        return _inspect_safetensors(path, size, head)
    raise ModelFileError(path, "unrecognised model file format")


# ---------------------------------------------------------------------------------------------
# safetensors
def read_safetensors_header(path: str, size: int | None = None, head: bytes | None = None) -> dict:
    """The raw JSON header of a safetensors file, validated."""
    if size is None:
        size = os.path.getsize(path)
    if size < 8:
        raise ModelFileError(path, f"truncated safetensors file: {size} bytes, the 8-byte header length is missing")
    try:
        with open(path, "rb") as fh:
            if head is None or len(head) < 8:
                head = fh.read(8)
            (n,) = struct.unpack("<Q", head[:8])
            if n > MAX_HEADER_BYTES:
                raise ModelFileError(
                    path, f"safetensors header length {n} bytes is absurd (limit {MAX_HEADER_BYTES}); not a safetensors file?"
                )
            if n + 8 > size:
                raise ModelFileError(
                    path, f"truncated safetensors file: header says {n} bytes but the file has only {size - 8} after the length"
                )
            fh.seek(8)
            raw = fh.read(n)
    except OSError as exc:
        raise ModelFileError(path, f"cannot read file ({exc.strerror or exc})") from None
    if len(raw) != n:
        raise ModelFileError(path, "truncated safetensors header")
    # counted on the bytes before parsing: a header with a million tensors is refused without
    # building a million dicts
    if raw.count(b'"data_offsets"') > MAX_TENSORS:
        raise ModelFileError(path, f"safetensors header lists more than {MAX_TENSORS:,} tensors; not a model file?")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
        raise ModelFileError(path, f"safetensors header is not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(header, dict):
        raise ModelFileError(path, "safetensors header is not a JSON object")
    return header


def _inspect_safetensors(path: str, size: int, head: bytes | None = None) -> Inventory:
    header = read_safetensors_header(path, size, head)
    (n,) = struct.unpack("<Q", head[:8]) if head and len(head) >= 8 else (None,)
    if n is None:
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
    data_bytes = size - 8 - n
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise ModelFileError(path, "safetensors __metadata__ is not an object")
    tensors: dict[str, TensorInfo] = {}
    spans: list[tuple[int, int, str]] = []
    bits_of = SAFETENSORS_DTYPE_BITS
    # Plain loops and `type(x) is int` (JSON gives exact ints; bool is excluded) keep this at
    # ~1 us per tensor: it runs for every tensor of every file of a models/ tree.
    for name, entry in header.items():
        if type(entry) is not dict:
            raise ModelFileError(path, f"tensor {name[:80]!r}: entry is not an object")
        dtype = entry.get("dtype")
        shape = entry.get("shape")
        offsets = entry.get("data_offsets")
        bits = bits_of.get(dtype) if type(dtype) is str else None
        if bits is None:
            raise ModelFileError(path, f"tensor {name[:80]!r}: unknown dtype {str(dtype)[:20]!r}")
        ok = type(shape) is list and len(shape) <= MAX_DIMS
        numel = 1
        if ok:
            for d in shape:
                if type(d) is not int or d < 0:
                    ok = False
                    break
                numel *= d
                if numel > MAX_ELEMENTS:  # checked like the safetensors library: no huge products
                    raise ModelFileError(path, f"tensor {name[:80]!r}: shape {str(shape)[:60]} has more elements "
                                               "than any file can hold")
        if not ok:
            raise ModelFileError(path, f"tensor {name[:80]!r}: shape {str(shape)[:60]} is not a list of at most "
                                       f"{MAX_DIMS} non-negative integers")
        if type(offsets) is not list or len(offsets) != 2 or type(offsets[0]) is not int or type(offsets[1]) is not int:
            raise ModelFileError(path, f"tensor {name[:80]!r}: data_offsets {str(offsets)[:60]} is not [begin, end]")
        begin, end = offsets
        if begin < 0 or end < begin or end > data_bytes:
            raise ModelFileError(
                path, f"tensor {name[:80]!r}: data_offsets [{begin}, {end}] lie outside the data region ({data_bytes} bytes)"
            )
        expected = (numel * bits + 7) // 8
        if end - begin != expected:
            raise ModelFileError(
                path, f"tensor {name[:80]!r}: {end - begin} bytes stored but shape {shape} of {dtype} needs {expected}"
            )
        tensors[name] = _tensor(name, dtype, tuple(shape), end - begin)
        spans.append((begin, end, name))
    # Like the safetensors library (Metadata::validate): the tensors tile the data region, in
    # order, with no overlap and no gap, and end where the file ends.
    spans.sort()
    pos = 0
    for begin, end, name in spans:
        if begin != pos:
            what = "overlaps the tensor before it" if begin < pos else f"leaves a gap of {begin - pos} bytes before it"
            raise ModelFileError(path, f"tensor {name[:80]!r}: data_offsets [{begin}, {end}] {what}")
        pos = end
    if pos != data_bytes:
        raise ModelFileError(path, f"the tensors end at byte {pos} of a {data_bytes}-byte data region (trailing bytes)")
    meta = dict(metadata)
    # ComfyUI's quantized files carry their per-layer config as JSON in the metadata.
    return Inventory(path, "safetensors", size, tensors, meta)


# ---------------------------------------------------------------------------------------------
# GGUF
# Header layout (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): magic "GGUF", u32
# version, u64 tensor count, u64 metadata count, the metadata key/values, then per tensor: name,
# u32 n_dims, u64 dims (ggml order), u32 ggml type, u64 offset into the aligned data section.
# Parsed here with struct over an mmap (only the header pages are touched) rather than
# gguf.GGUFReader: the reader trusts every count (a corrupted array length makes it loop up to
# 2**64 times) and builds numpy views per field (~100-500 ms for a Flux GGUF; this takes ~2 ms).
# The gguf package supplies the type tables (GGML_QUANT_SIZES).

# GGUF value types (gguf.GGUFValueType) -> struct format; 8 = string, 9 = array.
_GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_GGUF_SCALAR_SIZE = {t: struct.calcsize("<" + f) for t, f in _GGUF_SCALAR.items()}
_GGUF_MAX_DIMS = 4  # GGML_MAX_DIMS (ggml.h); the gguf spec: "currently at most 4"
_GGUF_MAX_TENSORS = 1_000_000  # far above any real model (Flux GGUF: ~780 tensors)
_GGUF_SHORT_ARRAY = 64  # metadata arrays longer than this (tokenizer vocabularies) are skipped, not kept


def _inspect_gguf(path: str, size: int) -> Inventory:
    try:
        import gguf  # noqa: PLC0415  (optional at import time of the package)
    except ImportError:  # pragma: no cover - gguf is a declared dependency
        raise ModelFileError(path, "reading GGUF needs the 'gguf' package (pip install gguf)") from None

    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            metadata, infos, data_start = _parse_gguf_header(path, mm, size)
    except VramBudgetError:
        raise
    except (OSError, ValueError) as exc:
        raise ModelFileError(path, f"cannot read GGUF header ({exc})") from None
    tensors: dict[str, TensorInfo] = {}
    for name, dims, ttype, offset in infos:
        try:
            qtype = gguf.GGMLQuantizationType(ttype)
            block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        except (ValueError, KeyError):
            raise ModelFileError(path, f"tensor {name[:80]!r}: unknown GGML type {ttype}") from None
        n_el = math.prod(dims)
        if n_el % block:
            raise ModelFileError(path, f"tensor {name[:80]!r}: {n_el} elements is not a multiple of the {qtype.name} block {block}")
        nbytes = n_el // block * type_size
        if data_start + offset + nbytes > size:
            raise ModelFileError(path, f"tensor {name[:80]!r}: data runs past the end of the file (truncated file?)")
        shape = tuple(reversed(dims))  # ggml order -> PyTorch order
        # ComfyUI-GGUF stores the original shape of reshaped tensors in "comfy.gguf.orig_shape.<name>"
        orig = metadata.get(f"comfy.gguf.orig_shape.{name}")
        if isinstance(orig, list) and orig and all(isinstance(d, int) and d >= 0 for d in orig) and math.prod(orig) == n_el:
            shape = tuple(orig)
        tensors[name] = _tensor(name, qtype.name, shape, nbytes)
    return Inventory(path, "gguf", size, tensors, metadata)


def _parse_gguf_header(path: str, mm, size: int):
    """(metadata, [(name, dims in ggml order, type, offset)], data section start), every count and
    length checked against the file size before it is used."""
    def bad(what: str) -> ModelFileError:
        return ModelFileError(path, f"corrupt GGUF header: {what}")

    if size < 24:
        raise bad(f"file of {size} bytes is shorter than the 24-byte GGUF preamble")
    (version,) = struct.unpack_from("<I", mm, 4)
    order = "<"
    if version & 0xFFFF == 0:  # written on a machine of the other byte order (as gguf-py detects it)
        order = ">"
        (version,) = struct.unpack_from(">I", mm, 4)
    if version not in (2, 3):
        raise ModelFileError(path, f"unsupported GGUF version {version} (this reader handles 2 and 3)")
    u32 = struct.Struct(order + "I")
    u64 = struct.Struct(order + "Q")
    scalars = {t: struct.Struct(order + f) for t, f in _GGUF_SCALAR.items()}

    def read_u32(at: int) -> int:
        if at + 4 > size:
            raise bad("ends inside a field (truncated file?)")
        return u32.unpack_from(mm, at)[0]

    def read_u64(at: int) -> int:
        if at + 8 > size:
            raise bad("ends inside a field (truncated file?)")
        return u64.unpack_from(mm, at)[0]

    def read_str(at: int, keep: bool = True) -> tuple[str | None, int]:
        n = read_u64(at)
        if n > size - at - 8:
            raise bad(f"string length {n} at byte {at} runs past the end of the file")
        end = at + 8 + n
        return (bytes(mm[at + 8:end]).decode("utf-8", "replace") if keep else None), end

    def read_value(at: int, vtype: int, keep: bool, depth: int = 0):
        if vtype in scalars:
            end = at + _GGUF_SCALAR_SIZE[vtype]
            if end > size:
                raise bad("ends inside a value (truncated file?)")
            return (scalars[vtype].unpack_from(mm, at)[0] if keep else None), end
        if vtype == 8:
            return read_str(at, keep)
        if vtype == 9:
            if depth > 3:
                raise bad("arrays nested too deep")
            itype = read_u32(at)
            count = read_u64(at + 4)
            at += 12
            keep_items = keep and count <= _GGUF_SHORT_ARRAY and itype != 9
            if itype in scalars:
                end = at + count * _GGUF_SCALAR_SIZE[itype]
                if end > size:
                    raise bad(f"array of {count} items at byte {at} runs past the end of the file")
                if keep_items:
                    return [scalars[itype].unpack_from(mm, at + i * _GGUF_SCALAR_SIZE[itype])[0] for i in range(count)], end
                return None, end
            if itype not in (8, 9):
                raise bad(f"unknown array item type {itype}")
            if count > (size - at) // 8:  # every string / array item needs at least 8 bytes
                raise bad(f"array of {count} items at byte {at} cannot fit in the file")
            items = []
            for _ in range(count):
                item, at = read_value(at, itype, keep_items, depth + 1)
                if keep_items:
                    items.append(item)
            return (items if keep_items else None), at
        raise bad(f"unknown value type {vtype}")

    n_tensors, n_kv = read_u64(8), read_u64(16)
    if n_kv > (size - 24) // 13:  # a key/value needs >= 13 bytes
        raise bad(f"{n_kv} metadata entries cannot fit in {size} bytes")
    if n_tensors > min(_GGUF_MAX_TENSORS, (size - 24) // 24):  # a tensor entry needs >= 24 bytes
        raise bad(f"tensor count {n_tensors} is absurd for a {size}-byte file")
    at = 24
    metadata: dict[str, object] = {}
    alignment = 32  # GGUF_DEFAULT_ALIGNMENT
    for _ in range(n_kv):
        key, at = read_str(at)
        vtype = read_u32(at)
        keep = not key.startswith(("GGUF.", "tokenizer.ggml."))
        value, at = read_value(at + 4, vtype, keep)
        if key == "general.alignment":
            if vtype != 4 or not value or value & (value - 1):
                raise bad(f"general.alignment {value!r} is not a power of two (u32)")
            alignment = value
        if value is not None:
            metadata[key] = value
    infos = []
    seen: set[str] = set()
    for _ in range(n_tensors):
        n = read_u64(at)
        if n > size - at - 8:
            raise bad(f"tensor name length {n} at byte {at} runs past the end of the file")
        try:
            name = bytes(mm[at + 8:at + 8 + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise bad(f"tensor name at byte {at} is not UTF-8") from None
        at += 8 + n
        if name in seen:
            raise bad(f"duplicate tensor name {name[:80]!r}")
        seen.add(name)
        n_dims = read_u32(at)
        if n_dims > _GGUF_MAX_DIMS:
            raise bad(f"tensor {name[:80]!r} has {n_dims} dimensions (GGUF allows {_GGUF_MAX_DIMS})")
        dims = [read_u64(at + 4 + 8 * i) for i in range(n_dims)]
        at += 4 + 8 * n_dims
        ttype = read_u32(at)
        offset = read_u64(at + 4)
        at += 12
        infos.append((name, dims, ttype, offset))
    data_start = at + (-at % alignment)
    return metadata, infos, data_start


# ---------------------------------------------------------------------------------------------
# Pickle checkpoints: never unpickled.
_STORAGE_BYTES = {
    "FloatStorage": ("F32", 4), "HalfStorage": ("F16", 2), "BFloat16Storage": ("BF16", 2),
    "DoubleStorage": ("F64", 8), "LongStorage": ("I64", 8), "IntStorage": ("I32", 4),
    "ShortStorage": ("I16", 2), "CharStorage": ("I8", 1), "ByteStorage": ("U8", 1), "BoolStorage": ("BOOL", 1),
    "Float8_e4m3fnStorage": ("F8_E4M3", 1), "Float8_e5m2Storage": ("F8_E5M2", 1),
}
_TORCH_DTYPE_NAMES = {
    "float32": "F32", "float": "F32", "float16": "F16", "half": "F16", "bfloat16": "BF16", "float64": "F64",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}


def _inspect_zip_pickle(path: str, size: int) -> Inventory:
    """A torch.save zip: storages are files ``<archive>/data/<key>``; dtypes from the pickle opcodes."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            storages = {}
            pkl_name = None
            for info in infos:
                parts = info.filename.split("/")
                if len(parts) >= 3 and parts[-2] == "data" and not info.is_dir():
                    storages[parts[-1]] = info.file_size
                elif parts[-1] == "data.pkl":
                    pkl_name = info.filename
            if pkl_name is None:
                raise ModelFileError(path, "unsupported: zip file without data.pkl (not a PyTorch checkpoint)")
            pkl_info = zf.getinfo(pkl_name)
            if pkl_info.file_size > MAX_HEADER_BYTES:
                raise ModelFileError(path, "unsupported: pickle part larger than 100 MB")
            pkl = zf.read(pkl_name)
    except VramBudgetError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError, NotImplementedError) as exc:
        raise ModelFileError(path, f"corrupt zip checkpoint ({str(exc)[:120]})") from None
    dtype_of = _storage_dtypes_from_opcodes(pkl, storages.keys())
    tensors: dict[str, TensorInfo] = {}
    for key, nbytes in storages.items():
        dtype = dtype_of.get(key, "F32")
        item = SAFETENSORS_DTYPE_BITS[dtype] // 8
        tensors[f"storage/{key}"] = TensorInfo(f"storage/{key}", dtype, (nbytes // max(item, 1),), nbytes)
    notes = (
        "pickle checkpoint: read from the zip directory without unpickling; per-tensor names and shapes are not"
        " available, so the architecture cannot be detected from keys",
    )
    return Inventory(path, "pickle", size, tensors, {}, exact=True, notes=notes)


def _storage_dtypes_from_opcodes(pkl: bytes, keys: Iterable[str]) -> dict[str, str]:
    """Map storage key -> dtype by walking the opcodes (no execution).

    torch.save writes each storage as a persistent id tuple
    ('storage', <GLOBAL torch.XStorage or torch dtype>, '<key>', '<location>', numel). We track
    the most recent storage type / dtype global and assign it to the next key string seen.
    """
    wanted = set(keys)
    out: dict[str, str] = {}
    pending: str | None = None
    recent_strings: list[str] = []
    # torch.save memoizes each storage-type GLOBAL and refers back to it with BINGET for later
    # tensors of that type, so the memo has to be followed or interleaved dtypes get mixed up.
    memo: dict[int, str | None] = {}
    last_global: str | None = None  # dtype of the object just pushed by a GLOBAL (None: not a dtype)
    just_pushed_global = False
    try:
        for op, arg, _pos in pickletools.genops(pkl):
            name_ = op.name
            if name_ in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
                index = len(memo) if name_ == "MEMOIZE" else int(arg)
                memo[index] = last_global if just_pushed_global else None
                continue
            just_pushed_global = False
            if name_ in ("BINGET", "LONG_BINGET", "GET"):
                dtype = memo.get(int(arg))
                if dtype is not None:
                    pending = dtype
                continue
            if name_ == "GLOBAL" and isinstance(arg, str):
                mod, _, name = arg.partition(" ")
                last_global = _global_dtype(mod, name)
                just_pushed_global = True
                pending = last_global or pending
            elif name_ == "STACK_GLOBAL" and len(recent_strings) >= 2:
                last_global = _global_dtype(recent_strings[-2], recent_strings[-1])
                just_pushed_global = True
                pending = last_global or pending
            elif isinstance(arg, str):
                recent_strings.append(arg)
                if len(recent_strings) > 4:
                    recent_strings.pop(0)
                if arg in wanted and pending is not None and arg not in out:
                    out[arg] = pending
    except Exception:  # malformed opcode stream: keep what was found, default the rest
        pass
    return out


def _global_dtype(module: str, name: str) -> str | None:
    if module == "torch" and name in _STORAGE_BYTES:
        return _STORAGE_BYTES[name][0]
    if module == "torch" and name in _TORCH_DTYPE_NAMES:
        return _TORCH_DTYPE_NAMES[name]
    return None


def _legacy_pickle(path: str, size: int) -> Inventory:
    note = "unsupported: legacy pickle checkpoint (not executed); size from file, dtypes unknown"
    return Inventory(path, "pickle", size, {}, {}, exact=False, notes=(note,))


# ---------------------------------------------------------------------------------------------
# Folders
def iter_model_files(root: str | os.PathLike) -> Iterable[str]:
    """Model files under a folder (a ComfyUI models/ tree), sorted; symlinked folders are followed,
    each real folder once (no loops)."""
    root = os.fspath(root)
    if os.path.isfile(root):
        yield root
        return
    if not os.path.isdir(root):
        raise ModelFileError(root, "no such file or folder")
    # Symlinked model folders are common (models/checkpoints -> a bigger disk): follow them, but
    # visit each real folder once, so a link loop or a link back up the tree ends the walk.
    seen = {os.path.realpath(root)}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        keep = []
        for d in sorted(dirnames):
            real = os.path.realpath(os.path.join(dirpath, d))
            if real not in seen:
                seen.add(real)
                keep.append(d)
        dirnames[:] = keep
        for fn in sorted(filenames):
            if os.path.splitext(fn)[1].lower() in MODEL_SUFFIXES:
                yield os.path.join(dirpath, fn)
