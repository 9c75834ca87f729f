"""Read model files' headers -> Inventory. Never reads (or maps) the tensor data.

Formats:
- safetensors: 8-byte little-endian header length, then a JSON header
  ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}``
  (https://github.com/huggingface/safetensors#format). Parsed here with the standard library so
  every malformation gets a precise message.
- GGUF: ``gguf.GGUFReader`` (memory-mapped and lazy: only the header pages are touched);
  exact bytes per tensor from the block sizes in ``gguf.GGML_QUANT_SIZES``.
- pickle checkpoints (.ckpt/.pt/.pth/.bin): never unpickled. Zip-format checkpoints are read
  from the zip directory (storage sizes) and the pickle *opcodes* (``pickletools.genops``, which
  parses without executing) for the storage dtypes; legacy pickles fall back to the file size.

Results are cached by (real path, size, mtime).
"""
from __future__ import annotations

import json
import math
import os
import pickletools
import struct
import threading
import zipfile
from dataclasses import dataclass, field
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

MAX_HEADER_BYTES = 100 * 1024 * 1024  # same cap as comfy.utils.safetensors_header
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

    @property
    def param_count(self) -> int:
        return sum(t.numel for t in self.tensors.values())

    @property
    def total_bytes(self) -> int:
        if not self.tensors:
            return self.file_bytes
        return sum(t.nbytes for t in self.tensors.values())

    @property
    def bytes_by_dtype(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors.values():
            out[t.dtype] = out.get(t.dtype, 0) + t.nbytes
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    @property
    def params_by_dtype(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors.values():
            out[t.dtype] = out.get(t.dtype, 0) + t.numel
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

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


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


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
    real = os.path.realpath(path)
    key = (real, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit if hit.path == path else _with_path(hit, path)
    inv = _inspect_uncached(path, st.st_size)
    with _cache_lock:
        if len(_cache) > 4096:
            _cache.clear()
        _cache[key] = inv
    return inv


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
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
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
    for name, entry in header.items():
        where = f"tensor {name[:80]!r}"
        if not isinstance(entry, dict):
            raise ModelFileError(path, f"{where}: entry is not an object")
        dtype = entry.get("dtype")
        shape = entry.get("shape")
        offsets = entry.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPE_BITS:
            raise ModelFileError(path, f"{where}: unknown dtype {str(dtype)[:20]!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ModelFileError(path, f"{where}: shape {str(shape)[:60]} is not a list of non-negative integers")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        ):
            raise ModelFileError(path, f"{where}: data_offsets {str(offsets)[:60]} is not [begin, end]")
        begin, end = offsets
        if begin < 0 or end < begin or end > data_bytes:
            raise ModelFileError(
                path, f"{where}: data_offsets [{begin}, {end}] lie outside the data region ({data_bytes} bytes)"
            )
        numel = math.prod(shape)
        expected = (numel * SAFETENSORS_DTYPE_BITS[dtype] + 7) // 8
        if end - begin != expected:
            raise ModelFileError(
                path, f"{where}: {end - begin} bytes stored but shape {shape} of {dtype} needs {expected}"
            )
        tensors[name] = TensorInfo(name, dtype, tuple(shape), end - begin)
    meta = dict(metadata)
    # ComfyUI's quantized files carry their per-layer config as JSON in the metadata.
    return Inventory(path, "safetensors", size, tensors, meta)


# ---------------------------------------------------------------------------------------------
# GGUF
def _inspect_gguf(path: str, size: int) -> Inventory:
    try:
        import gguf  # noqa: PLC0415  (optional at import time of the package)
    except ImportError:  # pragma: no cover - gguf is a declared dependency
        raise ModelFileError(path, "reading GGUF needs the 'gguf' package (pip install gguf)") from None
    try:
        reader = gguf.GGUFReader(path, "r")
    except VramBudgetError:
        raise
    except MemoryError:
        raise ModelFileError(path, "corrupt GGUF header (absurd sizes)") from None
    except Exception as exc:  # the gguf reader raises ValueError/KeyError/IndexError/struct errors
        raise ModelFileError(path, f"corrupt GGUF file ({type(exc).__name__}: {str(exc)[:160]})") from None
    try:
        metadata: dict[str, object] = {}
        for key, fld in reader.fields.items():
            if key.startswith("GGUF.") or key.startswith("tokenizer.ggml."):
                continue
            value = _gguf_field_value(gguf, fld)
            if value is not None:
                metadata[key] = value
        tensors: dict[str, TensorInfo] = {}
        for t in reader.tensors:
            type_name = gguf.GGMLQuantizationType(int(t.tensor_type)).name
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(int(t.tensor_type))]
            n_el = int(t.n_elements)
            if n_el % block:
                raise ModelFileError(path, f"tensor {t.name!r}: {n_el} elements is not a multiple of the {type_name} block {block}")
            shape = tuple(int(d) for d in reversed(list(t.shape)))
            # ComfyUI-GGUF stores the original shape of reshaped tensors in "comfy.gguf.orig_shape.<name>"
            orig = metadata.get(f"comfy.gguf.orig_shape.{t.name}")
            if isinstance(orig, list) and all(isinstance(d, int) for d in orig) and math.prod(orig) == n_el:
                shape = tuple(orig)
            tensors[t.name] = TensorInfo(t.name, type_name, shape, n_el // block * type_size)
    except VramBudgetError:
        raise
    except Exception as exc:
        raise ModelFileError(path, f"corrupt GGUF tensor table ({type(exc).__name__}: {str(exc)[:160]})") from None
    return Inventory(path, "gguf", size, tensors, metadata)


def _gguf_field_value(gguf, fld):
    """A field's value as plain Python (strings, numbers, short lists); None for big arrays."""
    types = list(fld.types)
    if not types:
        return None
    vt = gguf.GGUFValueType
    if types[0] == vt.ARRAY:
        if len(fld.data) > 64:
            return None
        if len(types) > 1 and types[1] == vt.STRING:
            return [bytes(fld.parts[i]).decode("utf-8", "replace") for i in fld.data]
        return [int(fld.parts[i][0]) if hasattr(fld.parts[i][0], "__int__") else None for i in fld.data]
    if types[0] == vt.STRING:
        return bytes(fld.parts[fld.data[0]]).decode("utf-8", "replace")
    val = fld.parts[fld.data[0]][0]
    if types[0] in (vt.FLOAT32, vt.FLOAT64):
        return float(val)
    if types[0] == vt.BOOL:
        return bool(val)
    return int(val)


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
    try:
        for op, arg, _pos in pickletools.genops(pkl):
            if op.name in ("GLOBAL",) and isinstance(arg, str):
                mod, _, name = arg.partition(" ")
                pending = _global_dtype(mod, name) or pending
            elif op.name == "STACK_GLOBAL" and len(recent_strings) >= 2:
                pending = _global_dtype(recent_strings[-2], recent_strings[-1]) or pending
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
    """Model files under a folder (a ComfyUI models/ tree), sorted, following no symlink loops."""
    root = os.fspath(root)
    if os.path.isfile(root):
        yield root
        return
    if not os.path.isdir(root):
        raise ModelFileError(root, "no such file or folder")
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for fn in sorted(filenames):
            if os.path.splitext(fn)[1].lower() in MODEL_SUFFIXES:
                yield os.path.join(dirpath, fn)
