"""files.py: header-only inventories of safetensors / GGUF / pickle files, and every bad input."""
from __future__ import annotations

import json
import math
import os
import pickletools
import stat
import struct
import zipfile

import numpy as np
import pytest

from helpers_models import spec_flux, write_gguf, write_safetensors
from vram_budget.nodes.estimator.errors import ModelFileError
from vram_budget.nodes.estimator.files import (
    MAX_HEADER_BYTES, Inventory, clear_cache, inspect_file, iter_model_files,
)

# Bytes per element from the safetensors format spec (independent of files.py's own table).
ITEM = {"F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "U8": 1}
# GGML block sizes as published in ggml (ggml-common.h: QK8_0 = 32, block_q8_0 = 2 + 32 bytes;
# QK4_0 = 32, block_q4_0 = 2 + 16; QK_K = 256, block_q4_K = 2*2 + 12 + 128 = 144,
# block_q5_K = 4 + 12 + 32 + 128 = 176, block_q6_K = 128 + 64 + 16 + 2 = 210).
GGML_BLOCKS = {"Q8_0": (32, 34), "Q4_0": (32, 18), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
               "F16": (1, 2), "F32": (1, 4), "BF16": (1, 2)}


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _raw_safetensors(path, header: dict | bytes, data: bytes = b"", length: int | None = None) -> str:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw) if length is None else length))
        fh.write(raw)
        fh.write(data)
    return str(path)


# ---------------------------------------------------------------------------------------------
# safetensors
def test_safetensors_exact_bytes_dtypes_and_metadata(tmp_path):
    spec = {"a.weight": ("BF16", (64, 32)), "a.bias": ("F32", (64,)), "b.weight": ("F8_E4M3", (16, 16)),
            "b.scale_weight": ("F32", ()), "c": ("F16", (3, 5, 7)), "ids": ("I64", (77,))}
    w = write_safetensors(tmp_path / "m.safetensors", spec, metadata={"modelspec.title": "x"})
    inv = inspect_file(w.path)
    assert isinstance(inv, Inventory) and inv.format == "safetensors" and inv.exact
    expected = sum(math.prod(shape) * ITEM[dt] for dt, shape in spec.values())
    assert inv.total_bytes == expected
    assert inv.param_count == sum(math.prod(shape) for _, shape in spec.values())
    assert inv.tensor_count == len(spec)
    assert inv.shape("c") == (3, 5, 7) and inv.tensors["b.weight"].dtype == "F8_E4M3"
    assert inv.bytes_by_dtype["BF16"] == 64 * 32 * 2
    assert inv.main_dtype == "BF16"
    assert inv.metadata["modelspec.title"] == "x"
    # the file is header + data and nothing else
    assert inv.file_bytes == os.path.getsize(w.path) and inv.file_bytes > expected


def test_fp8_quantization_labels(tmp_path):
    plain = write_safetensors(tmp_path / "fp8.safetensors", {"w": ("F8_E4M3", (128, 128)), "b": ("F32", (128,))})
    assert inspect_file(plain.path).quantization == "fp8_e4m3fn"
    scaled = write_safetensors(tmp_path / "fp8s.safetensors", {"w": ("F8_E4M3", (128, 128)), "w_scale": ("F32", ()),
                                                               "scaled_fp8": ("F8_E4M3", (0,))})
    assert inspect_file(scaled.path).quantization == "scaled fp8_e4m3fn"
    e5 = write_safetensors(tmp_path / "e5.safetensors", {"w": ("F8_E5M2", (64, 64))})
    assert inspect_file(e5.path).quantization == "fp8_e5m2"
    bf = write_safetensors(tmp_path / "bf.safetensors", {"w": ("BF16", (64, 64))})
    assert inspect_file(bf.path).quantization is None


def test_header_only_on_a_sparse_full_size_flux(tmp_path):
    """A full-size Flux.1 dev header over a 23.8 GB hole: exact bytes, nothing read but the header."""
    w = write_safetensors(tmp_path / "flux1-dev.safetensors", spec_flux("BF16"), sparse=True)
    st = os.stat(w.path)
    assert st.st_size > 23 * 10**9
    assert st.st_blocks * 512 < 10 * 2**20  # really a hole: the test machine did not write 23 GB
    inv = inspect_file(w.path)
    assert inv.param_count == 11_901_408_320  # Flux.1 dev, as counted from the real checkpoint
    assert inv.total_bytes == 2 * 11_901_408_320
    assert abs(inv.total_bytes - 23.8e9) / 23.8e9 < 0.005  # Hugging Face lists flux1-dev.safetensors at 23.8 GB


def test_cache_returns_same_inventory_and_follows_path(tmp_path):
    w = write_safetensors(tmp_path / "a.safetensors", {"x": ("F16", (4, 4))})
    first = inspect_file(w.path)
    assert inspect_file(w.path) is first
    link = tmp_path / "link.safetensors"
    os.symlink(w.path, link)
    via_link = inspect_file(link)
    assert via_link.path == str(link) and via_link.tensors is first.tensors


@pytest.mark.parametrize("case", [
    "truncated_length", "header_longer_than_file", "absurd_header", "invalid_json", "not_object",
    "offsets_outside", "offsets_reversed", "size_mismatch", "unknown_dtype", "bad_shape", "nested_json",
    "metadata_not_object", "many_dims", "huge_product", "overlap", "gap", "trailing", "too_many_tensors",
])
def test_bad_safetensors_raise_model_file_error(tmp_path, case):
    path = tmp_path / f"{case}.safetensors"
    good = {"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}}
    if case == "truncated_length":
        path.write_bytes(b"\x10\x00\x00")
        problem = "truncated"
    elif case == "header_longer_than_file":
        _raw_safetensors(path, good, b"\0" * 8, length=5000)
        problem = "truncated"
    elif case == "absurd_header":
        _raw_safetensors(path, b"{}", length=MAX_HEADER_BYTES + 1)
        problem = "absurd"
    elif case == "invalid_json":
        _raw_safetensors(path, b'{"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]', b"\0" * 8)
        problem = "not valid JSON"
    elif case == "not_object":
        _raw_safetensors(path, b"[1, 2, 3]")
        problem = "not a JSON object"
    elif case == "offsets_outside":
        _raw_safetensors(path, {"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}}, b"\0" * 4)
        problem = "outside the data region"
    elif case == "offsets_reversed":
        _raw_safetensors(path, {"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [8, 0]}}, b"\0" * 8)
        problem = "outside the data region"
    elif case == "size_mismatch":
        _raw_safetensors(path, {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}, b"\0" * 8)
        problem = "needs 16"
    elif case == "unknown_dtype":
        _raw_safetensors(path, {"w": {"dtype": "Q9_Z", "shape": [2, 2], "data_offsets": [0, 8]}}, b"\0" * 8)
        problem = "unknown dtype"
    elif case == "bad_shape":
        _raw_safetensors(path, {"w": {"dtype": "F16", "shape": [2, -2], "data_offsets": [0, 8]}}, b"\0" * 8)
        problem = "shape"
    elif case == "nested_json":
        _raw_safetensors(path, b"[" * 200_000 + b"]" * 200_000)
        problem = "not valid JSON"
    elif case == "metadata_not_object":
        _raw_safetensors(path, {"__metadata__": [1], **good}, b"\0" * 8)
        problem = "__metadata__"
    elif case == "many_dims":  # tens of thousands of dims hung the shape product, then a traceback
        _raw_safetensors(path, {"w": {"dtype": "F16", "shape": [2**31] * 50_000, "data_offsets": [0, 8]}}, b"\0" * 8)
        problem = "at most 64"
    elif case == "huge_product":
        _raw_safetensors(path, {"w": {"dtype": "F16", "shape": [2**40, 2**40], "data_offsets": [0, 8]}}, b"\0" * 8)
        problem = "more elements"
    elif case == "overlap":  # the safetensors library rejects these (InvalidOffset); so does ComfyUI's load
        _raw_safetensors(path, {"a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]},
                                "b": {"dtype": "F16", "shape": [4], "data_offsets": [4, 12]}}, b"\0" * 12)
        problem = "overlaps"
    elif case == "gap":
        _raw_safetensors(path, {"a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]},
                                "b": {"dtype": "F16", "shape": [4], "data_offsets": [16, 24]}}, b"\0" * 24)
        problem = "gap of 8 bytes"
    elif case == "trailing":
        _raw_safetensors(path, good, b"\0" * 16)
        problem = "trailing bytes"
    elif case == "too_many_tensors":  # counted before parsing: no million dicts built
        from vram_budget.nodes.estimator.files import MAX_TENSORS

        entry = '"t%d": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}'
        _raw_safetensors(path, ("{" + ", ".join(entry % i for i in range(MAX_TENSORS + 1)) + "}").encode())
        problem = "more than"
    with pytest.raises(ModelFileError) as err:
        inspect_file(path)
    assert str(path) in str(err.value) and err.value.path == str(path)
    assert problem in err.value.problem


# ---------------------------------------------------------------------------------------------
# GGUF
def test_gguf_exact_block_bytes_including_real_quantization(tmp_path):
    tensors = {
        "q8.weight": ("Q8_0", (48, 256)),  # quantized for real by gguf.quants.quantize
        "q4.weight": ("Q4_0", (16, 128)),
        "k4.weight": ("Q4_K", (8, 512)),  # raw blocks of the published size
        "k5.weight": ("Q5_K", (4, 256)),
        "k6.weight": ("Q6_K", (2, 768)),
        "norm.weight": ("F32", (256,)),
        "emb.weight": ("F16", (10, 32)),
        "bf.weight": ("BF16", (6, 8)),
    }
    w = write_gguf(tmp_path / "q.gguf", tensors, arch="flux", quantize_real=True,
                   metadata={"general.name": "test", "comfy.gguf.orig_shape.emb.weight": [2, 5, 32]})
    inv = inspect_file(w.path)
    assert inv.format == "gguf"
    for name, (tname, shape) in tensors.items():
        block, type_size = GGML_BLOCKS[tname]
        t = inv.tensors[name]
        assert t.dtype == tname
        assert t.nbytes == math.prod(shape) // block * type_size, name
    assert inv.total_bytes == sum(math.prod(s) // GGML_BLOCKS[t][0] * GGML_BLOCKS[t][1] for t, s in tensors.values())
    assert inv.shape("q8.weight") == (48, 256)  # PyTorch order (ggml stores it reversed)
    assert inv.shape("emb.weight") == (2, 5, 32)  # ComfyUI-GGUF's recorded original shape wins
    assert inv.metadata["general.architecture"] == "flux"
    assert inv.metadata["general.name"] == "test"
    assert inv.quantization in ("gguf Q8_0", "gguf Q4_0", "gguf Q4_K", "gguf Q5_K", "gguf Q6_K")
    assert inv.quantization == "gguf Q8_0"  # the type holding most parameters


def _gguf_bytes(tmp_path) -> bytes:
    w = write_gguf(tmp_path / "base.gguf", {"a.weight": ("Q8_0", (4, 64)), "b": ("F32", (8,))},
                   metadata={"general.name": "x", "some.list": [1, 2, 3]})
    return open(w.path, "rb").read()


def test_gguf_not_gguf_truncated_and_corrupt(tmp_path):
    p = tmp_path / "fake.gguf"
    p.write_bytes(b"NOPE" + b"\0" * 100)
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        inspect_file(p)
    raw = _gguf_bytes(tmp_path)
    p2 = tmp_path / "trunc.gguf"
    p2.write_bytes(raw[: len(raw) - 40])
    with pytest.raises(ModelFileError, match="fake|trunc|corrupt|GGUF") as err:
        inspect_file(p2)
    assert str(p2) in str(err.value)
    # an array length of 2**62 must be rejected at once (gguf-py's reader would loop on it)
    idx = raw.index(b"some.list") + len(b"some.list") + 4 + 4  # key, value type (array), item type
    bad = raw[:idx] + struct.pack("<Q", 2**62) + raw[idx + 8:]
    p3 = tmp_path / "biglist.gguf"
    p3.write_bytes(bad)
    with pytest.raises(ModelFileError, match="array of"):
        inspect_file(p3)
    # unsupported version
    p4 = tmp_path / "v9.gguf"
    p4.write_bytes(raw[:4] + struct.pack("<I", 9) + raw[8:])
    with pytest.raises(ModelFileError, match="version 9"):
        inspect_file(p4)


# ---------------------------------------------------------------------------------------------
# Files that are not model files
def test_empty_missing_folder_fifo(tmp_path):
    empty = tmp_path / "empty.safetensors"
    empty.write_bytes(b"")
    with pytest.raises(ModelFileError, match="empty file"):
        inspect_file(empty)
    with pytest.raises(ModelFileError, match="not found"):
        inspect_file(tmp_path / "missing.safetensors")
    folder = tmp_path / "folder.safetensors"
    folder.mkdir()
    with pytest.raises(ModelFileError, match="folder"):
        inspect_file(folder)
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)  # opening it for reading would block forever
    with pytest.raises(ModelFileError, match="not a regular file"):
        inspect_file(fifo)
    broken = tmp_path / "broken.safetensors"
    os.symlink(tmp_path / "nowhere", broken)
    with pytest.raises(ModelFileError, match="not found"):
        inspect_file(broken)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="running as root: file permissions do not stop root from reading (covered by the FIFO case)")
def test_unreadable_file(tmp_path):
    w = write_safetensors(tmp_path / "locked.safetensors", {"x": ("F16", (2, 2))})
    os.chmod(w.path, 0)
    try:
        with pytest.raises(ModelFileError, match="cannot read") as err:
            inspect_file(w.path)
        assert w.path in str(err.value)
    finally:
        os.chmod(w.path, stat.S_IRUSR | stat.S_IWUSR)


# ---------------------------------------------------------------------------------------------
# Pickle checkpoints: never unpickled
def _bu(s: str) -> bytes:  # BINUNICODE
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _torch_pickle(tensors: list[tuple[str, str, str, int]], marker: str | None = None) -> bytes:
    """Protocol-2 opcodes as torch.save writes them: an OrderedDict of _rebuild_tensor_v2 calls whose
    storages are persistent ids ('storage', GLOBAL torch.<Type>Storage, key, 'cpu', numel); a storage
    type seen before is fetched from the memo (BINGET), as the real pickler does. ``marker`` adds an
    entry that would run ``os.system('touch marker')`` if anything ever executed the pickle."""
    out = bytearray(b"\x80\x02")
    out += b"ccollections\nOrderedDict\nq\x00)Rq\x01("
    memo = 2
    seen: dict[str, int] = {}
    for name, storage, key, numel in tensors:
        out += _bu(name) + b"ctorch._utils\n_rebuild_tensor_v2\n(" + b"(" + _bu("storage")
        if storage in seen:
            out += b"h" + bytes([seen[storage]])
        else:
            out += b"ctorch\n" + storage.encode() + b"\nq" + bytes([memo])
            seen[storage] = memo
            memo += 1
        out += _bu(key) + _bu("cpu") + b"J" + struct.pack("<i", numel) + b"t" + b"Q"
        out += b"K\x00" + b"J" + struct.pack("<i", numel) + b"\x85" + b"K\x01\x85" + b"\x89"
        out += b"ccollections\nOrderedDict\n)R" + b"tR"
    if marker:
        out += _bu("evil") + b"cos\nsystem\n" + _bu(f"touch {marker}") + b"\x85R"
    out += b"u."
    return bytes(out)


def _write_zip_checkpoint(path, pkl: bytes, storages: dict[str, bytes], with_pkl: bool = True) -> str:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        if with_pkl:
            zf.writestr("archive/data.pkl", pkl)
        for key, data in storages.items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    return str(path)


def test_zip_pickle_read_from_directory_and_opcodes_never_executed(tmp_path):
    marker = tmp_path / "EXECUTED"
    tensors = [("a.weight", "HalfStorage", "0", 12), ("b.weight", "FloatStorage", "1", 5),
               ("c.weight", "HalfStorage", "2", 7)]  # c refers back to HalfStorage through the memo
    pkl = _torch_pickle(tensors, marker=str(marker))
    list(pickletools.genops(pkl))  # well-formed opcode stream
    path = _write_zip_checkpoint(tmp_path / "model.ckpt", pkl,
                                 {"0": b"\0" * 24, "1": b"\0" * 20, "2": b"\0" * 14})
    inv = inspect_file(path)
    assert not marker.exists()  # nothing was unpickled
    assert inv.format == "pickle" and inv.exact
    assert inv.tensors["storage/0"].dtype == "F16" and inv.tensors["storage/0"].numel == 12
    assert inv.tensors["storage/1"].dtype == "F32" and inv.tensors["storage/1"].numel == 5
    assert inv.tensors["storage/2"].dtype == "F16"  # memo reference followed, not the last GLOBAL (F32)
    assert inv.total_bytes == 24 + 20 + 14
    assert any("pickle" in n for n in inv.notes)


def test_zip_without_data_pkl_and_corrupt_zip(tmp_path):
    path = _write_zip_checkpoint(tmp_path / "nopkl.pt", b"", {"0": b"\0" * 8}, with_pkl=False)
    with pytest.raises(ModelFileError, match="data.pkl") as err:
        inspect_file(path)
    assert path in str(err.value)
    good = _write_zip_checkpoint(tmp_path / "good.pt", _torch_pickle([("a", "HalfStorage", "0", 4)]), {"0": b"\0" * 8})
    raw = open(good, "rb").read()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(raw[: len(raw) // 2])  # the central directory is gone
    with pytest.raises(ModelFileError, match="corrupt zip checkpoint"):
        inspect_file(cut)


def test_legacy_pickle_is_not_executed_and_reported_unsupported(tmp_path):
    marker = tmp_path / "EXECUTED"
    # torch's legacy format starts with the pickled magic number 0x1950a86a20f9469cfc6c
    body = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19." + b"\x80\x02cos\nsystem\n" + _bu(f"touch {marker}") + b"\x85R."
    path = tmp_path / "old.ckpt"
    path.write_bytes(body + b"\0" * 100)
    inv = inspect_file(path)
    assert not marker.exists()
    assert inv.format == "pickle" and not inv.exact and inv.tensors == {}
    assert inv.total_bytes == os.path.getsize(path)
    assert any("unsupported" in n and "legacy pickle" in n for n in inv.notes)


# ---------------------------------------------------------------------------------------------
def test_iter_model_files_walks_a_models_tree(tmp_path):
    (tmp_path / "checkpoints" / "sub").mkdir(parents=True)
    (tmp_path / "vae").mkdir()
    for rel in ("checkpoints/sub/b.safetensors", "checkpoints/a.ckpt", "vae/x.sft", "vae/readme.txt", "q.gguf"):
        (tmp_path / rel).write_bytes(b"x")
    found = [os.path.relpath(p, tmp_path) for p in iter_model_files(tmp_path)]
    assert found == ["q.gguf", "checkpoints/a.ckpt", "checkpoints/sub/b.safetensors", "vae/x.sft"]
    with pytest.raises(ModelFileError, match="no such file or folder"):
        list(iter_model_files(tmp_path / "nope"))


def test_numpy_writer_file_is_read_identically(tmp_path):
    """A file from safetensors.numpy.save_file (the other real writer) reads the same way."""
    from safetensors.numpy import save_file

    arrays = {"x": np.zeros((3, 4), np.float16), "y": np.zeros((5,), np.float32), "z": np.zeros((2, 2, 2), np.int64)}
    path = tmp_path / "np.safetensors"
    save_file(arrays, str(path))
    inv = inspect_file(path)
    assert inv.total_bytes == sum(a.nbytes for a in arrays.values())
    assert {k: t.shape for k, t in inv.tensors.items()} == {k: a.shape for k, a in arrays.items()}
    assert {k: t.dtype for k, t in inv.tensors.items()} == {"x": "F16", "y": "F32", "z": "I64"}


def test_gguf_header_parser_agrees_with_gguf_reader(tmp_path):
    """files.py parses the GGUF header itself; on a valid file it must agree with gguf-py's reader."""
    import gguf

    tensors = {"a.weight": ("Q8_0", (8, 64)), "b.weight": ("Q6_K", (3, 256)), "c": ("F32", (5,)),
               "d.weight": ("F16", (2, 3, 4, 8))}
    meta = {"general.name": "agree", "x.count": 7, "x.ratio": 0.5, "x.flag": True, "x.list": [3, 1, 4],
            "x.names": ["p", "q"], "general.alignment": 64}
    w = write_gguf(tmp_path / "agree.gguf", tensors, arch="wan", metadata=meta)
    inv = inspect_file(w.path)
    reader = gguf.GGUFReader(w.path)
    assert [t.name for t in reader.tensors] == list(inv.tensors)
    for t in reader.tensors:
        mine = inv.tensors[t.name]
        assert mine.shape == tuple(int(d) for d in reversed(list(t.shape)))
        assert mine.dtype == gguf.GGMLQuantizationType(int(t.tensor_type)).name
        assert mine.nbytes == int(t.n_bytes)
    assert inv.metadata["general.architecture"] == reader.get_field("general.architecture").contents()
    for key in ("general.name", "x.count", "x.flag", "x.list", "x.names", "general.alignment"):
        assert inv.metadata[key] == reader.get_field(key).contents(), key
    assert inv.metadata["x.ratio"] == pytest.approx(0.5)


def test_header_cache_is_bounded_by_tensor_count(tmp_path, monkeypatch):
    """A legal but huge header must not stay cached in ComfyUI: the cache holds a bounded number
    of tensors in all, and never one inventory that is a large share of it."""
    import vram_budget.nodes.estimator.files as files

    monkeypatch.setattr(files, "MAX_CACHED_TENSORS", 400)
    big = {f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(150)}
    small = {"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}
    p_big = _raw_safetensors(tmp_path / "big.safetensors", big, b"\0" * 150)
    p_small = _raw_safetensors(tmp_path / "small.safetensors", small, b"\0")
    assert inspect_file(p_big) is not inspect_file(p_big)  # over a quarter of the budget: not cached
    assert inspect_file(p_small) is inspect_file(p_small)
    assert files._cached_tensors <= 400


def test_symlinked_model_folders_are_walked_once_and_loops_end(tmp_path):
    """models/checkpoints -> another disk is common; a link loop must not recurse forever."""
    from helpers_models import spec_vae_kl

    elsewhere = tmp_path / "bigdisk" / "checkpoints"
    elsewhere.mkdir(parents=True)
    write_safetensors(elsewhere / "a.safetensors", spec_vae_kl(scale=16), sparse=True)
    models = tmp_path / "models"
    models.mkdir()
    os.symlink(elsewhere, models / "checkpoints")
    os.symlink(models, models / "loop")  # a link back up the tree
    found = list(iter_model_files(models))
    assert [os.path.basename(f) for f in found] == ["a.safetensors"]
