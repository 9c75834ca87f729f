"""Fuzz: mutated safetensors and GGUF headers give an Inventory or a ModelFileError, nothing else.

10,000 examples in all (4 tests x 2,500), derandomized so CI runs are repeatable. Every file that
inspects cleanly is also identified, which must not raise either.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import struct
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers_models import write_gguf, write_safetensors
from vram_budget.nodes.estimator.errors import ModelFileError
from vram_budget.nodes.estimator.families import identify
from vram_budget.nodes.estimator.files import Inventory, clear_cache, inspect_file

EXAMPLES = 2500
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

# tmpfs where there is one: the fuzz writes 10,000 files, and opening files on a loaded overlay
# disk costs milliseconds each
_DIR = tempfile.mkdtemp(prefix="vram-budget-fuzz-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
atexit.register(shutil.rmtree, _DIR, True)  # also when the module is only collected


def _base_safetensors() -> bytes:
    spec = {"double_blocks.0.img_attn.norm.key_norm.scale": ("BF16", (8,)), "img_in.weight": ("BF16", (16, 64)),
            "guidance_in.in_layer.weight": ("F16", (16, 4)), "w8": ("F8_E4M3", (4, 4)), "ids": ("I64", (3,))}
    w = write_safetensors(os.path.join(_DIR, "base.safetensors"), spec, metadata={"format": "pt", "k": "v"})
    return open(w.path, "rb").read()


def _base_gguf() -> bytes:
    tensors = {"head.modulation": ("F32", (1, 2, 32)), "blocks.0.ffn.0.weight": ("Q8_0", (4, 64)),
               "patch_embedding.weight": ("F16", (8, 16)), "k.weight": ("Q4_K", (2, 256))}
    w = write_gguf(os.path.join(_DIR, "base.gguf"), tensors, arch="wan",
                   metadata={"general.name": "fuzz", "some.ints": [1, 2, 3, 4], "some.strings": ["a", "bc"],
                             "general.alignment": 32, "x.f": 1.5})
    return open(w.path, "rb").read()


SAFE = _base_safetensors()
GGUF = _base_gguf()
(SAFE_N,) = struct.unpack("<Q", SAFE[:8])
SAFE_HEADER = json.loads(SAFE[8:8 + SAFE_N])
GGUF_HEADER_END = GGUF.index(b"k.weight") + 64  # the tensor-info table ends shortly after the last name


def _check(data: bytes, suffix: str) -> None:
    path = os.path.join(_DIR, "case" + suffix)
    with open(path, "wb") as fh:
        fh.write(data)
    clear_cache()  # same path and size within one clock tick would otherwise hit the cache
    try:
        inv = inspect_file(path)
    except ModelFileError as exc:
        assert exc.path == path and str(exc).startswith(path)
        return
    assert isinstance(inv, Inventory)
    info = identify(inv)
    assert info.weights_bytes >= 0


def _mutate_bytes(base: bytes, data, limit: int) -> bytes:
    buf = bytearray(base)
    kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete", "u64"]))
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            buf[data.draw(st.integers(0, min(limit, len(buf)) - 1))] = data.draw(st.integers(0, 255))
    elif kind == "truncate":
        del buf[data.draw(st.integers(0, len(buf) - 1)):]
    elif kind == "insert":
        pos = data.draw(st.integers(0, min(limit, len(buf))))
        buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=16))
    elif kind == "delete":
        pos = data.draw(st.integers(0, min(limit, len(buf)) - 1))
        del buf[pos:pos + data.draw(st.integers(1, 16))]
    else:  # overwrite an aligned 64-bit field (lengths, counts, dims, offsets) with an extreme value
        pos = data.draw(st.integers(0, max(0, (min(limit, len(buf)) - 8) // 4))) * 4
        value = data.draw(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 2**31, 2**32, 2**63, 2**64 - 1])))
        buf[pos:pos + 8] = struct.pack("<Q", value)
    return bytes(buf)


@FUZZ
@given(st.data())
def test_fuzz_safetensors_bytes(data):
    if data.draw(st.booleans()):
        mutated = _mutate_bytes(SAFE, data, 8 + SAFE_N)
    else:  # the 8-byte length alone
        n = data.draw(st.one_of(st.integers(0, 2**64 - 1), st.integers(max(0, SAFE_N - 16), SAFE_N + 16)))
        mutated = struct.pack("<Q", n) + SAFE[8:]
    _check(mutated, ".safetensors")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@FUZZ
@given(st.data())
def test_fuzz_safetensors_json_fields(data):
    header = json.loads(json.dumps(SAFE_HEADER))
    names = [k for k in header if k != "__metadata__"]
    for _ in range(data.draw(st.integers(1, 3))):
        target = data.draw(st.sampled_from(names + ["__metadata__", "<new>"]))
        if target == "<new>":
            header[data.draw(st.text(max_size=10))] = data.draw(json_values)
        elif target == "__metadata__":
            header["__metadata__"] = data.draw(json_values)
        else:
            field = data.draw(st.sampled_from(["dtype", "shape", "data_offsets", "<whole>", "<drop>"]))
            if field == "<whole>":
                header[target] = data.draw(json_values)
            elif field == "<drop>" and isinstance(header[target], dict):
                header[target].pop(data.draw(st.sampled_from(["dtype", "shape", "data_offsets"])), None)
            elif isinstance(header[target], dict):
                header[target][field] = data.draw(st.one_of(
                    json_values,
                    st.sampled_from(["F16", "BF16", "F32", "F8_E4M3", "I64", "U8", "F4", "Q4_K", ""]),
                    st.lists(st.integers(-5, 2**64), max_size=5),
                ))
    raw = json.dumps(header).encode()
    length = len(raw) if data.draw(st.booleans()) else data.draw(st.integers(0, len(raw) + 64))
    tail = SAFE[8 + SAFE_N:] if data.draw(st.booleans()) else SAFE[8 + SAFE_N:][:data.draw(st.integers(0, 64))]
    _check(struct.pack("<Q", length) + raw + tail, ".safetensors")


@FUZZ
@given(st.data())
def test_fuzz_gguf_bytes(data):
    _check(_mutate_bytes(GGUF, data, GGUF_HEADER_END), ".gguf")


@FUZZ
@given(st.data())
def test_fuzz_gguf_counts_and_fields(data):
    buf = bytearray(GGUF)
    choice = data.draw(st.sampled_from(["tensor_count", "kv_count", "version", "string_len", "array_len", "dims"]))
    big = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 3, 4, 5, 255, 2**32, 2**62, 2**64 - 1]))
    if choice == "tensor_count":
        buf[8:16] = struct.pack("<Q", data.draw(big))
    elif choice == "kv_count":
        buf[16:24] = struct.pack("<Q", data.draw(big))
    elif choice == "version":
        buf[4:8] = struct.pack("<I", data.draw(st.integers(0, 2**32 - 1)))
    elif choice == "string_len":  # the length before a key or a tensor name
        name = data.draw(st.sampled_from([b"general.name", b"some.strings", b"head.modulation", b"k.weight"]))
        pos = GGUF.index(name) - 8
        buf[pos:pos + 8] = struct.pack("<Q", data.draw(big))
    elif choice == "array_len":
        name = data.draw(st.sampled_from([b"some.ints", b"some.strings"]))
        pos = GGUF.index(name) + len(name) + 8  # value type (u32) + item type (u32)
        buf[pos:pos + 8] = struct.pack("<Q", data.draw(big))
    else:  # n_dims or one dimension of a tensor
        name = data.draw(st.sampled_from([b"head.modulation", b"blocks.0.ffn.0.weight", b"k.weight"]))
        pos = GGUF.index(name) + len(name)
        if data.draw(st.booleans()):
            buf[pos:pos + 4] = struct.pack("<I", data.draw(st.integers(0, 2**32 - 1)))
        else:
            buf[pos + 4:pos + 12] = struct.pack("<Q", data.draw(big))
    if data.draw(st.booleans()):
        del buf[data.draw(st.integers(0, len(buf) - 1)):]
    _check(bytes(buf), ".gguf")


def test_base_files_are_valid():
    """The seeds themselves inspect cleanly (so the fuzz mutates real files)."""
    for data, suffix, family in ((SAFE, ".safetensors", "flux1-dev"), (GGUF, ".gguf", "wan2.1-1.3b")):
        path = os.path.join(_DIR, "seed" + suffix)
        with open(path, "wb") as fh:
            fh.write(data)
        clear_cache()
        assert identify(inspect_file(path)).family == family

