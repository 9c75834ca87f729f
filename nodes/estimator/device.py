"""The card a workflow is estimated for, as ComfyUI's launch flags and the machine set it up.

Bytes inside; the command line, the node and the panel build one of these (device_for_launch)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .gpus import Card
from .units import MiB

if TYPE_CHECKING:  # the annotation only: host_memory builds on this module
    from .host_memory import Host

# CUDA context + cuBLAS/cuDNN handles: "the CUDA context takes a few hundred MB more before any
# model loads" (FACTS.md). 400 MiB until a GPU measurement corrects it (docs/working-memory.md).
CUDA_CONTEXT_BYTES = 400 * MiB
# ComfyUI's extra reserved VRAM on Linux (model_management.py:568 EXTRA_RESERVED_VRAM, 400 MiB);
# under Dynamic VRAM it is the headroom kept free beside working memory.
COMFY_RESERVE_BYTES = 400 * MiB

@dataclass(frozen=True)
class Device:
    """The card a workflow is estimated for. Bytes."""

    name: str
    total_bytes: int  # capacity as PyTorch reports it
    other_processes_bytes: int = 0  # held by other processes on the card
    reserved_unallocated_bytes: int = 0  # PyTorch cache held but unallocated (fragmentation)
    held_by_models_bytes: int = 0  # weights ComfyUI has loaded now (it unloads them when needed)
    fp8_compute: bool = True
    memory_mode: str = "classic"  # "classic" | "dynamic"
    lowvram: bool = False  # --lowvram / --novram: text encoders stay on the CPU
    te_cpu_reason: str = ""  # text encoders run on the CPU for another reason (ComfyUI's text_encoder_device)
    bf16: bool = True  # the card computes in bf16 (Ampere+); else ComfyUI runs KL VAEs in fp32
    reserve_bytes: int = COMFY_RESERVE_BYTES  # --reserve-vram
    context_bytes: int = CUDA_CONTEXT_BYTES
    source: str = "catalogue"  # "catalogue" | "--vram" | "live"
    vram_state: str = "normal"  # normal | low | no | high | gpu_only (ComfyUI's launch flags)
    cpu_vae: bool = False  # --cpu-vae
    smart_memory: bool = True  # --disable-smart-memory sets False
    flops: float = 165.2e12  # dense 16-bit tensor FLOP/s (gpus.Card.tflops), for the speed model
    host_bytes_per_s: float = 25.2e9  # host link, effective (gpus.PCIE)
    host: "Host | None" = None  # the machine's RAM / swap; None: not known (the answer says what it assumes)
    # ComfyUI computes diffusion models in fp32 on this card (unet_manual_cast returns float32 when neither
    # fp16 nor bf16 is "supported": Pascal 10-series on Linux, GTX 16xx; model_management.py:845-867 /
    # :1050 / :1159 and should_use_fp16's 10- and 16-series lists, :1403-1409 in 0.8): activations take 4 bytes
    compute_fp32_reason: str = ""
    # Dynamic VRAM's free headroom: None = comfy-aimdo's 256 MiB; ComfyUI 0.33 hands --reserve-vram to aimdo
    # as its headroom (main.py:99-101) and adds --vram-headroom on every device (main.py:305)
    aimdo_headroom_bytes: int | None = None
    vram_headroom_bytes: int = 0

    @classmethod
    def from_card(cls, card: Card, **kw) -> "Device":
        kw.setdefault("flops", card.flops or 165.2e12)
        kw.setdefault("host_bytes_per_s", card.host_bytes_per_s)
        kw.setdefault("bf16", card.bf16)
        return cls(name=card.name, total_bytes=card.total_bytes, fp8_compute=card.fp8_compute, **kw)

    @property
    def capacity_bytes(self) -> int:
        """What this ComfyUI can use: the card minus other processes."""
        return max(0, self.total_bytes - self.other_processes_bytes)
