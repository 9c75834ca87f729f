"""parse_oom on the messages PyTorch and ComfyUI really print (no ComfyUI, no torch needed)."""
from __future__ import annotations

import pytest

from vram_budget.nodes.estimator.plan.oom import CAUSES, OomDiagnosis, parse_oom
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
    assert d.remedies[0].key == "disable_cuda_malloc"  # said as the first fix, not as a note


def test_cuda_malloc_async_bare():
    # What ComfyUI users most often see: no numbers at all.
    d = parse_oom(ASYNC_BARE + COMFY_TIPS, "torch.OutOfMemoryError")
    assert d.is_oom and d.cause == "unknown_detail" and d.form == "cuda_malloc_async"
    assert d.requested_bytes is None and d.total_bytes is None
    assert "cudaMallocAsync" in d.summary
    assert [r.key for r in d.remedies[:2]] == ["disable_cuda_malloc", "fp8_gguf"]


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


# --- OOM help for the workflow that failed (issue 12, item 14) -------------------------------
from vram_budget.nodes.estimator.plan.oom import INSTALLS, OomContext, context_for_prompt, where_to_set  # noqa: E402


def _prompt(nodes: dict) -> dict:
    return {str(i): {"class_type": t, "inputs": inputs} for i, (t, inputs) in enumerate(nodes.items(), start=1)}


def sdxl_prompt(batch: int = 1, decode: str = "VAEDecode") -> dict:
    """ComfyUI's default SDXL text-to-image prompt (API format)."""
    return {
        "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
        "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": batch}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse", "clip": ["4", 1]}},
        "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["4", 1]}},
        "3": {"class_type": "KSampler", "inputs": {
            "seed": 1, "steps": 25, "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0,
            "model": ["4", 0], "positive": ["6", 0], "negative": ["7", 0], "latent_image": ["5", 0]}},
        "8": {"class_type": decode, "inputs": {"samples": ["3", 0], "vae": ["4", 2],
                                               **({"tile_size": 512, "overlap": 64, "temporal_size": 64,
                                                   "temporal_overlap": 8} if decode == "VAEDecodeTiled" else {})}},
        "9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "x", "images": ["8", 0]}},
    }


def flux_prompt(batch: int = 1, unet: str = "flux1-dev.safetensors", weight_dtype: str = "default") -> dict:
    """ComfyUI's Flux dev template in API form (UNETLoader + DualCLIPLoader type flux)."""
    return {
        "10": {"class_type": "UNETLoader", "inputs": {"unet_name": unet, "weight_dtype": weight_dtype}},
        "11": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors",
                                                          "clip_name2": "clip_l.safetensors", "type": "flux"}},
        "12": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse", "clip": ["11", 0]}},
        "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": batch}},
        "3": {"class_type": "KSampler", "inputs": {
            "seed": 1, "steps": 20, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0,
            "model": ["10", 0], "positive": ["6", 0], "negative": ["6", 0], "latent_image": ["5", 0]}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["12", 0]}},
        "9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "x", "images": ["8", 0]}},
    }


def wan_prompt(length: int = 81) -> dict:
    """ComfyUI's Wan 2.1 14B text-to-video template in API form."""
    return {
        "37": {"class_type": "UNETLoader", "inputs": {"unet_name": "wan2.1_t2v_14B_fp16.safetensors",
                                                      "weight_dtype": "default"}},
        "38": {"class_type": "CLIPLoader", "inputs": {"clip_name": "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                      "type": "wan", "device": "default"}},
        "39": {"class_type": "VAELoader", "inputs": {"vae_name": "wan_2.1_vae.safetensors"}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "a boat", "clip": ["38", 0]}},
        "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "static", "clip": ["38", 0]}},
        "40": {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"width": 1280, "height": 720, "length": length,
                                                                   "batch_size": 1}},
        "3": {"class_type": "KSampler", "inputs": {
            "seed": 1, "steps": 30, "cfg": 6.0, "sampler_name": "uni_pc", "scheduler": "simple", "denoise": 1.0,
            "model": ["37", 0], "positive": ["6", 0], "negative": ["7", 0], "latent_image": ["40", 0]}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["39", 0]}},
        "28": {"class_type": "SaveAnimatedWEBP", "inputs": {"filename_prefix": "x", "fps": 16.0, "lossless": False,
                                                            "quality": 90, "method": "default", "images": ["8", 0]}},
    }


def keys(d: OomDiagnosis) -> list[str]:
    return [r.key for r in d.remedies]


def all_text(d: OomDiagnosis) -> str:
    return " ".join(f"{r.title} {r.detail}" for r in d.remedies)


def test_context_is_read_from_the_failed_prompt():
    sdxl = context_for_prompt(sdxl_prompt(batch=1))
    assert sdxl.families == ("sdxl",) and sdxl.batch_size == 1 and not sdxl.video and sdxl.decode_tiled is False
    assert sdxl.weight_bits == 16
    flux = context_for_prompt(flux_prompt(batch=4))
    assert flux.families == ("flux1-dev",) and flux.batch_size == 4
    assert context_for_prompt(flux_prompt(weight_dtype="fp8_e4m3fn")).weight_bits == 8
    assert context_for_prompt(flux_prompt(unet="flux1-dev-Q4_K_S.gguf")).weight_bits == 4
    wan = context_for_prompt(wan_prompt(81))
    assert wan.families == ("wan2.1-14b",) and wan.video and wan.frames == 81
    assert context_for_prompt(sdxl_prompt(decode="VAEDecodeTiled")).decode_tiled is True
    assert context_for_prompt("not a workflow") == OomContext()  # never raises


def test_sdxl_job_gets_no_flux_or_wan_figures():
    """Before: every OOM got the Flux ladder (Flux.1 dev ~24 GB, Flux dev 16 bit 24-32 GB, Wan 2.2
    frames) whatever the workflow was."""
    d = parse_oom(FACTS_MESSAGE, "torch.OutOfMemoryError", node_type="KSampler", context=context_for_prompt(sdxl_prompt()))
    text = all_text(d)
    assert "Flux" not in text and "Wan" not in text and "T5" not in text
    assert "fp8_gguf" in keys(d)  # still a fix for SDXL, with SDXL's own size
    assert "6.94 GB" in next(r.detail for r in d.remedies if r.key == "fp8_gguf")


def test_flux_job_keeps_the_facts_flux_figures():
    d = parse_oom(FACTS_MESSAGE, "torch.OutOfMemoryError", context=context_for_prompt(flux_prompt(batch=2)))
    fp8 = next(r for r in d.remedies if r.key == "fp8_gguf")
    assert "Flux.1 dev is ~24 GB of weights in 16 bit and ~12 GB in FP8" in fp8.detail
    assert "Flux dev in 16 bit wants 24-32 GB" in next(r.detail for r in d.remedies if r.key == "bigger_card")
    assert "Wan" not in all_text(d)


def test_smaller_batch_only_when_the_batch_is_above_one():
    one = parse_oom(FACTS_MESSAGE, context=context_for_prompt(sdxl_prompt(batch=1)))
    assert "smaller_batch" not in keys(one)
    four = parse_oom(FACTS_MESSAGE, context=context_for_prompt(sdxl_prompt(batch=4)))
    batch = next(r for r in four.remedies if r.key == "smaller_batch")
    assert "batch_size is 4" in batch.detail and "a quarter" in batch.detail
    assert "smaller_batch" in keys(parse_oom(FACTS_MESSAGE))  # workflow unknown: the whole ladder


def test_image_and_video_jobs_get_their_own_resolution_advice():
    img = parse_oom(FACTS_MESSAGE, context=context_for_prompt(sdxl_prompt()))
    res = next(r for r in img.remedies if r.key == "lower_resolution")
    assert "upscale" in res.detail and "frames" not in res.detail and "Wan" not in res.detail
    vid = parse_oom(FACTS_MESSAGE, context=context_for_prompt(wan_prompt(81)))
    res = next(r for r in vid.remedies if r.key == "lower_resolution")
    assert "81 frames" in res.detail and "81 -> 49" in res.detail
    # the job's own model: 14.29B parameters (catalogue, computed) x 2 / x 1 byte
    assert "28.6 GB in 16 bit and 14.3 GB in FP8" in next(r.detail for r in vid.remedies if r.key == "fp8_gguf")
    assert "Wan 2.2 14B at 720p 32-48 GB" in next(r.detail for r in vid.remedies if r.key == "bigger_card")
    assert "Flux" not in all_text(vid)


def test_tiled_decode_only_where_the_decode_can_fail_untiled():
    tiled = parse_oom(FACTS_MESSAGE, node_type="VAEDecodeTiled", context=context_for_prompt(sdxl_prompt(decode="VAEDecodeTiled")))
    assert "tiled_vae" not in keys(tiled)  # the workflow already decodes in tiles
    sampler = parse_oom(FACTS_MESSAGE, node_type="KSampler", context=context_for_prompt(sdxl_prompt()))
    assert "tiled_vae" not in keys(sampler)  # the sampler failed: the decode has not run yet
    decode = parse_oom(FACTS_MESSAGE, node_type="VAEDecode", context=context_for_prompt(sdxl_prompt()))
    assert keys(decode)[0] == "tiled_vae"


def test_quantized_weights_change_the_precision_advice():
    fp8 = parse_oom(FACTS_MESSAGE, context=context_for_prompt(flux_prompt(weight_dtype="fp8_e4m3fn")))
    rung = next(r for r in fp8.remedies if r.key == "fp8_gguf")
    assert "already 8-bit" in rung.detail and "Q5" in rung.detail
    q4 = parse_oom(FACTS_MESSAGE, context=context_for_prompt(flux_prompt(unet="flux1-dev-Q4_K_S.gguf")))
    assert "fp8_gguf" not in keys(q4)


@pytest.mark.parametrize("message", [ASYNC_BARE + COMFY_TIPS, ASYNC_FULL])
def test_cuda_malloc_async_error_leads_with_disable_cuda_malloc(message):
    d = parse_oom(message, "torch.OutOfMemoryError")
    first = d.remedies[0]
    assert first.key == "disable_cuda_malloc" and first.flag == "--disable-cuda-malloc"
    assert "cudaMallocAsync" in first.detail
    where = dict(first.where)
    assert set(where) == {"portable", "desktop", "linux"}
    assert "run_nvidia_gpu.bat" in where["portable"] and "--disable-cuda-malloc" in where["portable"]
    assert "Server Config" in where["desktop"] and "Use CUDA malloc for memory allocation" in where["desktop"]
    assert "python main.py --disable-cuda-malloc" in where["linux"]
    assert "run_nvidia_gpu.bat" in first.detail  # the panel shows the detail
    assert not any("--disable-cuda-malloc" in n for n in d.notes)  # said once, as the first fix


def test_caching_allocator_errors_do_not_lead_with_it():
    assert keys(parse_oom(FACTS_MESSAGE))[0] == "fp8_gguf"
    assert "disable_cuda_malloc" not in keys(parse_oom(FACTS_MESSAGE))


def test_flags_say_where_to_set_them_for_each_install():
    d = parse_oom(FRAGMENTED, context=OomContext(install="portable"))
    frag = d.remedies[0]
    assert frag.key == "expandable_segments"
    both = ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "--disable-cuda-malloc")  # native allocator kept
    assert dict(frag.where) == {"portable": where_to_set(both, "portable")}
    assert "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in frag.detail and "run_nvidia_gpu.bat" in frag.detail
    assert "Server Config" not in frag.detail  # only the user's install
    offload = next(r for r in d.remedies if r.key == "lowvram")
    assert "--lowvram" in dict(offload.where)["portable"]

    desk = parse_oom(FACTS_MESSAGE, context=OomContext(install="desktop"))
    offload = next(r for r in desk.remedies if r.key == "lowvram")
    assert "VRAM management mode" in offload.detail and "Reserved VRAM (GB)" in offload.detail
    assert "run_nvidia_gpu.bat" not in offload.detail

    lin = where_to_set(("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",), "linux")
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python main.py" in lin
    assert "run_amd_gpu.bat" in where_to_set(("--lowvram",), "portable", backend="hip")


def test_context_from_json_is_tolerant():
    d = parse_oom(FACTS_MESSAGE, context={"batch_size": 1, "families": ["sdxl"], "install": "nonsense", "frames": "x"})
    assert "smaller_batch" not in keys(d) and "Flux" not in all_text(d)
    assert {k for k, _ in next(r for r in d.remedies if r.key == "lowvram").where} == {"portable", "desktop", "linux"}
    data = d.to_dict()
    by_key = {r["key"]: r for r in data["remedies"]}
    assert by_key["lowvram"]["flag"] == "--lowvram" and set(by_key["lowvram"]["where"]) == set(INSTALLS)
    assert by_key["fp8_gguf"]["flag"] is None and by_key["fp8_gguf"]["where"] is None  # added fields, old ones kept
    assert {"key", "title", "detail"} <= set(by_key["fp8_gguf"])
    assert data["context"]["batch_size"] == 1
    assert parse_oom(FACTS_MESSAGE, context=["junk"]).is_oom  # never raises


# --- system RAM (host memory) out-of-memory: not the GPU -------------------------------------------
from vram_budget.nodes.estimator.plan.oom import is_oom_message  # noqa: E402

# ComfyUI (Windows portable) loading a checkpoint: safetensors' mmap hits the commit limit.
PAGING_FILE_TRACEBACK = r"""!!! Exception during processing !!! The paging file is too small for this operation to complete. (os error 1455)
Traceback (most recent call last):
  File "C:\ComfyUI_windows_portable\ComfyUI\execution.py", line 327, in execute
    output_data, output_ui, has_subgraph = get_output_data(obj, input_data_all, execution_block_cb=execution_block_cb, pre_execute_cb=pre_execute_cb)
  File "C:\ComfyUI_windows_portable\ComfyUI\nodes.py", line 940, in load_unet
    model = comfy.sd.load_diffusion_model(unet_path, model_options=model_options)
  File "C:\ComfyUI_windows_portable\ComfyUI\comfy\utils.py", line 62, in load_torch_file
    with safetensors.safe_open(ckpt, framework="pt", device=device.type) as f:
OSError: The paging file is too small for this operation to complete. (os error 1455)"""
WINERROR_DLL = ('OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading '
                '"C:\\ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" '
                'or one of its dependencies.')
CPU_ALLOCATOR = ("[enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to "
                 "allocate 58982400 bytes.")
CPU_ALLOCATOR_LINUX = ("RuntimeError: [enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: can't allocate "
                       "memory: you tried to allocate 10485760000 bytes. Error code 12 (Cannot allocate memory)")
LINUX_KILLED = """To see the GUI go to: http://127.0.0.1:8188
got prompt
Using pytorch attention in VAE
model weight dtype torch.float16, manual cast: None
model_type FLOW
Requested to load WanTEModel
loaded completely 9.5367431640625e+25 10835.4765625 True
Killed"""
DMESG = ("[ 8123.456789] Out of memory: Killed process 4242 (python) total-vm:61234560kB, anon-rss:30123456kB, "
         "file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:70000kB oom_score_adj:0")
NUMPY_MEMORY_ERROR = ("MemoryError: Unable to allocate 3.00 GiB for an array with shape (1024, 1024, 768) and data "
                      "type float32")
PIN_TRACEBACK = """Traceback (most recent call last):
  File "/home/u/ComfyUI/comfy/model_management.py", line 1630, in pin_memory
    if torch.cuda.cudart().cudaHostRegister(ptr, size, 1) == 0:
  File "/home/u/ComfyUI/comfy/model_patcher.py", line 812, in pin_weight_to_device
    comfy.model_management.pin_memory(weight)
torch.AcceleratorError: CUDA error: out of memory
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."""
HOST_ORDER = ["fp8_text_encoder", "cache_none", "disable_pinned_memory", "page_file", "fp8_gguf",
              "close_other_programs", "more_ram"]
VRAM_KEYS = {"smaller_batch", "lowvram", "tiled_vae", "lower_resolution", "expandable_segments", "disable_cuda_malloc"}


def says_system_memory(d: OomDiagnosis) -> bool:
    return d.memory == "system" and "system memory (RAM), not the GPU" in d.summary


def test_paging_file_traceback_is_host_ram():
    d = parse_oom(PAGING_FILE_TRACEBACK, "OSError", node_type="UNETLoader")
    assert d.is_oom and d.cause == "host_ram" and d.form == "paging_file" and d.backend == "cpu"
    assert says_system_memory(d) and "page file" in d.summary and "1455" in d.summary
    assert d.requested_bytes is None  # the message names no size
    assert keys(d) == HOST_ORDER
    page = next(r for r in d.remedies if r.key == "page_file")
    assert "Virtual memory" in page.detail and "32-64 GB" in page.detail
    assert "swap" not in page.detail  # a Windows error: Windows advice only
    assert set(dict(page.where)) == set(INSTALLS)
    assert d.to_dict()["memory"] == "system" and "host_ram" in CAUSES


def test_winerror_1455_loading_torch_dlls_leads_with_the_page_file():
    d = parse_oom(WINERROR_DLL)
    assert d.cause == "host_ram" and d.form == "paging_file"
    assert keys(d)[0] == "page_file"  # before any model is loaded: only the commit limit helps


@pytest.mark.parametrize("message,etype,size", [
    (CPU_ALLOCATOR, "RuntimeError", 58982400),
    (CPU_ALLOCATOR_LINUX, None, 10485760000),
])
def test_default_cpu_allocator_bytes_and_remedy_order(message, etype, size):
    d = parse_oom(message, etype)
    assert d.cause == "host_ram" and d.form == "cpu_allocator"
    assert d.requested_bytes == size and isinstance(d.requested_bytes, int)
    assert f"{size:,} bytes) of system RAM" in d.summary_facts
    assert says_system_memory(d)
    assert keys(d) == HOST_ORDER
    assert not VRAM_KEYS & set(keys(d))  # no VRAM remedy at all, above all not "smaller batch" on top
    assert "Out of system memory (RAM)" in d.headline and "GPU" not in d.headline


def test_page_file_size_follows_the_request():
    d = parse_oom(CPU_ALLOCATOR_LINUX, context=OomContext(install="linux"))
    page = next(r for r in d.remedies if r.key == "page_file")
    assert "at least 11 GB (the failed request)" in page.detail and "fallocate -l 32G" in page.detail
    assert dict(page.where).keys() == {"linux"} and "Virtual memory" not in page.detail


def test_linux_log_ending_in_killed():
    d = parse_oom(LINUX_KILLED)
    assert d.is_oom and d.cause == "host_ram" and d.form == "oom_killer" and says_system_memory(d)
    assert "Killed" in d.headline
    page = next(r for r in d.remedies if r.key == "page_file")
    assert "swap" in page.detail and "Virtual memory" not in page.detail
    # "Killed" in the middle of a log is no sign
    assert parse_oom(LINUX_KILLED + "\nPrompt executed in 3.2 seconds").cause == "not_oom"


def test_dmesg_oom_killer_line():
    d = parse_oom(DMESG)
    assert d.cause == "host_ram" and d.form == "oom_killer"
    assert d.killed_pid == 4242 and d.killed_process == "python"
    assert d.host_rss_bytes == (30123456 + 1024) * 1024
    assert "process 4242 (python), which held 28.73 GiB of RAM" in d.summary


@pytest.mark.parametrize("message", ["ComfyUI exited with code 137", "Process finished with exit code -9",
                                     "died with <Signals.SIGKILL: 9>."])
def test_exit_status_of_a_killed_process(message):
    d = parse_oom(message)
    assert d.cause == "host_ram" and d.form == "oom_killer"


def test_memory_error():
    d = parse_oom(NUMPY_MEMORY_ERROR)
    assert d.cause == "host_ram" and d.form == "memory_error" and d.requested_bytes == 3 * GiB
    bare = parse_oom("", "MemoryError")
    assert bare.is_oom and bare.cause == "host_ram" and says_system_memory(bare)


def test_pinning_failure_is_its_own_cause():
    d = parse_oom(PIN_TRACEBACK, "torch.AcceleratorError")
    assert d.cause == "pinned" and d.form == "pinned_memory" and d.backend == "cuda" and says_system_memory(d)
    assert keys(d)[0] == "disable_pinned_memory"
    assert "page_file" not in keys(d)  # page-locked RAM cannot be paged out
    first = d.remedies[0]
    assert first.flag == "--disable-pinned-memory" and "run_nvidia_gpu.bat" in dict(first.where)["portable"]
    assert "Comfy.Server.LaunchArgs" in dict(first.where)["desktop"]  # Server Config has no item for it
    assert parse_oom("Pin error.").cause == "pinned"  # ComfyUI's own warning (model_management.py)
    assert parse_oom("cudaHostRegister failed: out of memory").cause == "pinned"
    # the same "CUDA error: out of memory" without a pin in its traceback stays a GPU error
    assert parse_oom(CUBLAS).cause == "unknown_detail" and parse_oom(CUBLAS).memory == "gpu"


def test_gpu_report_wins_over_a_host_sign():
    d = parse_oom(FACTS_MESSAGE + "\n  File \"comfy/pinned_memory.py\", line 106, in pin_memory")
    assert d.cause == "shortage" and d.memory == "gpu" and d.secondary_causes == ("pinned",)
    assert keys(d) == keys(parse_oom(FACTS_MESSAGE))


def test_vram_diagnoses_say_gpu_memory():
    for msg in (FACTS_MESSAGE, FRAGMENTED, ASYNC_FULL, MPS, CUBLAS, LEGACY):
        d = parse_oom(msg)
        assert d.memory == "gpu" and d.cause not in ("host_ram", "pinned") and "system memory" not in d.summary
    assert parse_oom("mat1 and mat2 shapes cannot be multiplied").memory == "none"


def test_ram_remedies_fit_the_workflow():
    wan = parse_oom(CPU_ALLOCATOR, context=context_for_prompt(wan_prompt(81)))
    assert wan.context.text_encoder_bits == 8
    assert "fp8_text_encoder" not in keys(wan)  # umt5_xxl_fp8_e4m3fn_scaled is FP8 already
    assert keys(wan)[0] == "cache_none"
    flux = parse_oom(CPU_ALLOCATOR, context=context_for_prompt(flux_prompt()))
    te = flux.remedies[0]
    assert te.key == "fp8_text_encoder" and "t5xxl_fp16.safetensors is 9.8 GB" in te.detail  # not clip_l
    q4 = parse_oom(CPU_ALLOCATOR, context=context_for_prompt(flux_prompt(unet="flux1-dev-Q4_K_S.gguf")))
    assert "fp8_gguf" not in keys(q4)
    desk = parse_oom(CPU_ALLOCATOR, context=OomContext(install="desktop"))
    assert "Text Encoder precision" in desk.remedies[0].detail and set(dict(desk.remedies[0].where)) == {"desktop"}
    assert parse_oom(CPU_ALLOCATOR, context={"text_encoder_bits": 8, "install": "linux"}).remedies[0].key == "cache_none"


def test_is_oom_message_prefilter():
    assert all(is_oom_message(m) for m in (PAGING_FILE_TRACEBACK, CPU_ALLOCATOR, LINUX_KILLED, FACTS_MESSAGE))
    assert is_oom_message("", "MemoryError") and not is_oom_message("mat1 and mat2 shapes cannot be multiplied")
