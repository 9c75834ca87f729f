"""parse_oom on the messages PyTorch and ComfyUI really print (no ComfyUI, no torch needed)."""
from __future__ import annotations

import pytest

from vram_budget.nodes.estimator.oom import CAUSES, OomDiagnosis, parse_oom
from vram_budget.nodes.estimator.units import GiB, MiB

# shared/FACTS.md, "Reading an OOM message", verbatim.
FACTS_MESSAGE = """torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
GPU 0 has a total capacity of 23.65 GiB of which 1.12 GiB is free.
Of the allocated memory 20.10 GiB is allocated by PyTorch, and 1.31 GiB
is reserved by PyTorch but unallocated."""

# What ComfyUI puts in execution_error.exception_message (execution.py: f"{ex}\n{tips}").
COMFY_TIPS = ("\nThis error means you ran out of memory on your GPU.\n\nTIPS: If the workflow worked before you might "
              "have accidentally set the batch_size to a large number.")

# PyTorch >= 2.1, one line, with the NVML process report and the trailing advice.
CURRENT_WITH_PROCESSES = (
    "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 1 has a total capacity of 23.65 GiB of which 300.00 MiB "
    "is free. Process 1234 has 9.80 GiB memory in use. Process 5678 has 1.50 GiB memory in use. Including non-PyTorch "
    "memory, this process has 11.90 GiB memory in use. Of the allocated memory 10.80 GiB is allocated by PyTorch, and "
    "600.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
    "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)

FRAGMENTED = (
    "CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 23.65 GiB of which 820.00 MiB is "
    "free. Including non-PyTorch memory, this process has 22.80 GiB memory in use. Of the allocated memory 15.20 GiB "
    "is allocated by PyTorch, and 7.10 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory "
    "is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)

# torch <= 2.0 (and many pasted logs), with the older max_split_size_mb advice.
LEGACY = (
    "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.65 GiB total capacity; 20.10 GiB already allocated; "
    "1.12 GiB free; 21.41 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
    "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
)

# torch 2.1 spelled "capacty".
TYPO_21 = ("CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacty of 7.79 GiB of which 12.06 MiB "
           "is free. Of the allocated memory 7.40 GiB is allocated by PyTorch, and 40.50 MiB is reserved by PyTorch but "
           "unallocated.")

# CUDAMallocAsyncAllocator.cpp (ComfyUI's default allocator), full and bare forms.
ASYNC_FULL = (
    "Allocation on device 0 would exceed allowed memory. (out of memory)\n"
    "Currently allocated     : 21.20 GiB\n"
    "Requested               : 2.00 GiB\n"
    "Device limit            : 23.65 GiB\n"
    "Free (according to CUDA): 12.00 MiB\n"
    "PyTorch limit (set by user-supplied memory fraction)\n"
    "                        : 17179869184.00 GiB"
)
ASYNC_BARE = "Allocation on device "

CUBLAS = ("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call, so "
          "the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1")
CUBLAS_ALLOC = "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"

HIP = ("HIP out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 23.98 GiB of which 2.10 GiB is "
       "free. Of the allocated memory 19.50 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but "
       "unallocated. If reserved but unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True")

MPS = ("MPS backend out of memory (MPS allocated: 17.65 GB, other allocations: 1.23 GB, max allowed: 18.13 GB). Tried "
       "to allocate 1.00 GB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory "
       "allocations (may cause system failure).")

XPU = ("XPU out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.56 GiB total capacity; 12.73 GiB already allocated; "
       "13.10 GiB reserved in total by PyTorch)")

DIRECTML = "Could not allocate tensor with 1073741824 bytes. There is not enough GPU video memory available!"


def close(a: int | None, b: float, tol: float = 0.006 * GiB) -> bool:
    return a is not None and abs(a - b) <= tol


def test_facts_message_verbatim():
    d = parse_oom(FACTS_MESSAGE)
    assert d.is_oom and d.backend == "cuda" and d.form == "caching_allocator"
    assert d.requested_bytes == 2 * GiB
    assert close(d.total_bytes, 23.65 * GiB)
    assert close(d.free_bytes, 1.12 * GiB)
    assert close(d.allocated_bytes, 20.10 * GiB)
    assert close(d.reserved_unallocated_bytes, 1.31 * GiB)
    assert d.gpu_index == 0
    assert d.other_processes == ()
    # 1.31 GiB cache is not "several GiB" and smaller than the 2 GiB request: a real shortage.
    assert d.cause == "shortage"
    assert d.summary.startswith("The failed request was 2.00 GiB; the card has 23.65 GiB in total and only 1.12 GiB was free.")
    assert "not what the whole job needs" in d.summary
    # The remedy ladder, in FACTS.md order.
    keys = [r.key for r in d.remedies]
    assert keys == ["fp8_gguf", "tiled_vae", "smaller_batch", "lower_resolution", "unload_models", "lowvram", "bigger_card"]
    assert any("24 GB card is normal" in n for n in d.notes)
    # free + cache (2.43 GiB) would cover the 2 GiB request: the note says expandable_segments may help.
    assert any("expandable_segments" in n and "2.43 GiB" in n for n in d.notes)


def test_summary_parts():
    d = parse_oom(FACTS_MESSAGE)
    assert d.summary == " ".join([d.summary_facts, d.summary_caveat, d.summary_cause])
    assert d.summary_facts.startswith("The failed request was 2.00 GiB")
    assert "1.31 GiB in its cache" in d.summary_facts
    assert d.summary_caveat.startswith("That request is only the one allocation that failed")
    assert "make the job smaller" in d.summary_cause
    bare = parse_oom(ASYNC_BARE, "torch.OutOfMemoryError")
    assert bare.summary_facts == "" and bare.summary_caveat == "" and bare.summary == bare.summary_cause


def test_comfy_tips_are_recognised_and_stripped():
    d = parse_oom(FACTS_MESSAGE + COMFY_TIPS, "torch.OutOfMemoryError")
    assert d.comfy_tips and d.exception_type == "torch.OutOfMemoryError"
    assert "TIPS" not in d.message and "batch_size" not in d.message
    assert d.requested_bytes == 2 * GiB and d.cause == "shortage"


def test_current_form_with_other_processes():
    d = parse_oom(CURRENT_WITH_PROCESSES + COMFY_TIPS, "torch.OutOfMemoryError")
    assert d.gpu_index == 1
    assert d.requested_bytes == 512 * MiB
    assert d.free_bytes == 300 * MiB
    assert [(p.pid, p.used_bytes) for p in d.other_processes] == [(1234, round(9.80 * GiB)), (5678, round(1.50 * GiB))]
    assert d.other_processes_bytes == round(9.80 * GiB) + round(1.50 * GiB)
    # "this process" is ComfyUI itself, not another process.
    assert close(d.this_process_bytes, 11.90 * GiB)
    assert d.cause == "other_process"
    assert d.remedies[0].key == "close_other_process"
    assert "PID 1234 (9.80 GiB)" in d.remedies[0].detail
    assert "vLLM" in d.remedies[0].detail
    assert "2 other processes used 11.30 GiB" in d.summary


def test_fragmentation():
    d = parse_oom(FRAGMENTED)
    assert close(d.reserved_unallocated_bytes, 7.10 * GiB)
    assert d.cause == "fragmentation"
    fix = d.remedies[0]
    assert fix.key == "expandable_segments"
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in fix.detail
    assert "PYTORCH_ALLOC_CONF" in fix.detail and "max_split_size_mb:128" in fix.detail
    assert "--disable-cuda-malloc" in fix.detail  # ComfyUI's cudaMallocAsync ignores expandable_segments
    assert "fragmentation" in d.summary
    # the ladder still follows
    assert [r.key for r in d.remedies[1:3]] == ["fp8_gguf", "tiled_vae"]


def test_fragmentation_when_cache_exceeds_request():
    msg = ("CUDA out of memory. Tried to allocate 900.00 MiB. GPU 0 has a total capacity of 11.76 GiB of which "
           "150.00 MiB is free. Of the allocated memory 9.50 GiB is allocated by PyTorch, and 1.20 GiB is reserved by "
           "PyTorch but unallocated.")
    d = parse_oom(msg)
    assert d.cause == "fragmentation"  # the cache alone was bigger than the request
    assert d.remedies[0].key == "expandable_segments"


def test_fragmentation_and_other_process_ranked_by_size():
    msg = ("CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which "
           "100.00 MiB is free. Process 42 has 30.00 GiB memory in use. Of the allocated memory 40.00 GiB is allocated "
           "by PyTorch, and 8.00 GiB is reserved by PyTorch but unallocated.")
    d = parse_oom(msg)
    assert d.cause == "other_process" and d.secondary_causes == ("fragmentation",)
    assert [r.key for r in d.remedies[:2]] == ["close_other_process", "expandable_segments"]


def test_small_other_process_is_not_blamed():
    msg = ("CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which "
           "1.00 GiB is free. Process 777 has 350.00 MiB memory in use. Of the allocated memory 21.00 GiB is allocated "
           "by PyTorch, and 500.00 MiB is reserved by PyTorch but unallocated.")
    d = parse_oom(msg)
    assert d.other_processes[0].pid == 777
    assert d.cause == "shortage"


def test_legacy_form():
    d = parse_oom(LEGACY)
    assert d.form == "caching_allocator_legacy"
    assert d.requested_bytes == 20 * MiB
    assert close(d.total_bytes, 23.65 * GiB) and close(d.allocated_bytes, 20.10 * GiB)
    assert close(d.free_bytes, 1.12 * GiB) and close(d.reserved_bytes, 21.41 * GiB)
    assert close(d.reserved_unallocated_bytes, 1.31 * GiB)
    assert d.cause == "fragmentation"  # 1.31 GiB of cache vs a 20 MiB request
    assert d.summary.startswith("The failed request was 0.02 GiB; the card has 23.65 GiB in total")


def test_torch21_typo():
    d = parse_oom(TYPO_21)
    assert d.form == "caching_allocator"
    assert d.requested_bytes == 64 * MiB
    assert close(d.total_bytes, 7.79 * GiB) and d.cause == "shortage"


def test_units_kib_and_bytes():
    msg = ("CUDA out of memory. Tried to allocate 20.00 KiB. GPU 0 has a total capacity of 1.95 GiB of which "
           "512 bytes is free. Of the allocated memory 1.80 GiB is allocated by PyTorch, and 0 bytes is reserved by "
           "PyTorch but unallocated.")
    d = parse_oom(msg)
    assert d.requested_bytes == 20 * 1024
    assert d.free_bytes == 512
    assert d.reserved_unallocated_bytes == 0
    assert d.cause == "shortage"


def test_cuda_malloc_async_full():
    d = parse_oom(ASYNC_FULL + COMFY_TIPS, "torch.OutOfMemoryError")
    assert d.form == "cuda_malloc_async" and d.backend == "cuda"
    assert d.gpu_index == 0
    assert d.requested_bytes == 2 * GiB
    assert close(d.allocated_bytes, 21.20 * GiB) and close(d.total_bytes, 23.65 * GiB)
    assert d.free_bytes == 12 * MiB
    assert d.allowed_bytes is None  # the huge default "limit" is no limit
    assert d.cause == "shortage"
    assert any("--disable-cuda-malloc" in n for n in d.notes)


def test_cuda_malloc_async_bare():
    # What ComfyUI users most often see: no numbers at all.
    d = parse_oom(ASYNC_BARE + COMFY_TIPS, "torch.OutOfMemoryError")
    assert d.is_oom and d.cause == "unknown_detail" and d.form == "cuda_malloc_async"
    assert d.requested_bytes is None and d.total_bytes is None
    assert "cudaMallocAsync" in d.summary
    assert d.remedies and d.remedies[0].key == "fp8_gguf"


@pytest.mark.parametrize("msg", [CUBLAS, CUBLAS_ALLOC])
def test_cublas_and_kernel_ooms(msg):
    d = parse_oom(msg, "torch.AcceleratorError")
    assert d.is_oom and d.backend == "cuda" and d.cause == "unknown_detail"
    assert "cuBLAS" in d.summary
    assert [r.key for r in d.remedies][:2] == ["fp8_gguf", "tiled_vae"]


def test_runtime_error_prefix_from_a_log():
    d = parse_oom("RuntimeError: CUDA error: out of memory")
    assert d.is_oom and d.cause == "unknown_detail" and d.message == "CUDA error: out of memory"


def test_hip():
    d = parse_oom(HIP, "torch.OutOfMemoryError")
    assert d.backend == "hip" and d.requested_bytes == 4 * GiB
    assert close(d.total_bytes, 23.98 * GiB) and close(d.reserved_unallocated_bytes, 1.20 * GiB)
    assert d.cause == "shortage"
    frag = parse_oom(HIP.replace("1.20 GiB is reserved", "5.00 GiB is reserved"))
    assert frag.cause == "fragmentation" and "PYTORCH_HIP_ALLOC_CONF" in frag.remedies[0].detail


def test_mps():
    d = parse_oom(MPS, "torch.OutOfMemoryError")
    assert d.backend == "mps" and d.form == "mps"
    # MPS prints "GB" but means 1024-based units (MPSAllocator format_size)
    assert d.requested_bytes == 1 * GiB
    assert close(d.allocated_bytes, 17.65 * GiB) and close(d.total_bytes, 18.13 * GiB)
    assert d.cause == "shortage"
    assert any("PYTORCH_MPS_HIGH_WATERMARK_RATIO" in n for n in d.notes)
    assert "Out of MPS memory" in d.headline


def test_xpu():
    d = parse_oom(XPU)
    assert d.backend == "xpu" and d.requested_bytes == 2 * GiB
    assert close(d.total_bytes, 15.56 * GiB) and close(d.reserved_unallocated_bytes, 0.37 * GiB)


def test_directml():
    d = parse_oom(DIRECTML)
    assert d.is_oom and d.backend == "directml" and d.requested_bytes == 1 * GiB


def test_vae_decode_node_puts_tiling_first():
    d = parse_oom(FACTS_MESSAGE, "torch.OutOfMemoryError", node_type="VAEDecode")
    assert d.remedies[0].key == "tiled_vae"
    d2 = parse_oom(FACTS_MESSAGE, "torch.OutOfMemoryError", node_type="KSampler")
    assert d2.remedies[0].key == "fp8_gguf"


def test_exception_type_alone_marks_oom():
    d = parse_oom("something odd", "torch.cuda.OutOfMemoryError")
    assert d.is_oom and d.cause == "unknown_detail"


def test_not_an_oom():
    d = parse_oom("mat1 and mat2 shapes cannot be multiplied (77x768 and 2048x320)", "RuntimeError")
    assert not d.is_oom and d.cause == "not_oom" and d.remedies == ()


@pytest.mark.parametrize("garbage", [
    "", None, 12345, b"\xff\xfe", "Tried to allocate NaN GiB", "total capacity of GiB of which is free",
    "out of memory " * 100000, "Process x has y memory in use", "\x00\x01\x02", "CUDA out of memory. Tried to allocate 1e400 GiB.",
    "Allocation on device 999999999999999999999999 would exceed",
])
def test_garbage_never_raises(garbage):
    d = parse_oom(garbage, exception_type=garbage if isinstance(garbage, str) else None)  # type: ignore[arg-type]
    assert isinstance(d, OomDiagnosis)
    assert d.cause in CAUSES
    d.to_dict()


def test_to_dict_is_json_ready():
    import json

    data = json.loads(json.dumps(parse_oom(CURRENT_WITH_PROCESSES).to_dict()))
    assert data["cause"] == "other_process"
    assert data["other_processes"][0] == {"pid": 1234, "used_bytes": round(9.80 * GiB)}
    assert data["remedies"][0]["key"] == "close_other_process"


@pytest.mark.parametrize("filler", ["1" * 60_000, "1." * 30_000, "9" * 30_000 + " GiB total capacity"])
def test_long_digit_runs_parse_in_linear_time(filler):
    """A 64 KB message used to take minutes (unanchored \\d+ before a unit: quadratic backtracking);
    the route ran it on ComfyUI's event loop. Now each number starts at a digit boundary and has a
    bounded length. The bound here is generous: quadratic parsing of 60 k digits takes minutes."""
    import time

    t0 = time.perf_counter()
    diag = parse_oom("CUDA out of memory. Tried to allocate 2.00 GiB. " + filler)
    assert time.perf_counter() - t0 < 2.0
    assert diag.is_oom and diag.requested_bytes == 2 * 1024**3
