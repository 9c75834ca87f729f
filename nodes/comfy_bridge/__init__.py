"""The one place that reads ComfyUI state: devices and memory, loaded models, model paths, unloading.

Everything else in the pack asks this module. It imports ComfyUI lazily, inside functions, so
importing it never fails; the functions themselves are only called inside a running ComfyUI.
Where ComfyUI versions differ (classic memory management in 0.8 vs "Dynamic VRAM" /
comfy-aimdo in 0.13+), it feature-detects with ``hasattr`` instead of assuming either.

The modules: base (ComfyUI imported lazily), memory (the card and RAM), models (model folders, loaded models,
VAEs), launch (the Device the estimator prices inside ComfyUI), prompts (node text, baselines, node definitions).
This face re-exports their public names; a test that replaces a function replaces it in its own module.
"""
from .base import comfy_args  # noqa: F401
from .memory import (CudaDeviceMemory, DeviceState, DynamicVram, GpuProcess, available_bytes,
                     cuda_devices, device_state, dynamic_vram_status, gpu_processes, gpu_vendor, is_oom,
                     memory_mode, ram_state, soft_empty_cache, supports_fp8_compute)  # noqa: F401
from .models import (LoadedModelInfo, VaeInfo, comfy_vae_estimate, describe_loaded_model, loaded_models,
                     model_resolver, prepare_vae, resolve_model_path, unload_loaded_model, vae_family_of,
                     vae_info)  # noqa: F401
from .launch import (comfy_version, estimator_device, estimator_devices, live_fast_disk, live_host,
                     live_launch_flags, live_memory_mode, live_versions, other_cuda_devices)  # noqa: F401
from .prompts import (MAX_LIVE_SPECS, baseline, live_node_specs, node_info, prompt_packs, send_node_text)  # noqa: F401
from .base import _mm  # noqa: F401  (routes' peak probe asks ComfyUI's torch device)
from .launch import _live_card  # noqa: F401  (admission builds a Device for another card)
