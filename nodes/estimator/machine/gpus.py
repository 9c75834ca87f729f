"""Card catalogue: capacity as PyTorch reports it, speed, host link, and rental price where known.

The catalogue is data: ``_CATALOGUE`` below has one line per card (name, marketed memory, memory
bandwidth, dense FP16/BF16 tensor TFLOPS, PCIe link, architecture, source, aliases); the
architecture decides what ComfyUI does with the card (fp8 compute, bf16, Pascal's fp16 rule) and
``SOURCES`` says where each line's figures come from. Rental prices are a second table,
``_RENTAL``, with the date and the source of each price. A new card is one line.

Capacity: a card sold as "24 GB" has 24 GiB of memory, of which PyTorch reports a total capacity of
about 23.65 GiB (FACTS.md, "Reading an OOM message"): the driver keeps a little. Where the reported
figure is not known we subtract the same 0.35 GiB from the nominal size.

"Cheapest card" means the cheapest *rental* card (``RENTAL_LINEUP``) that holds a workflow. It is
never suggested for a workflow that fits the user's own card: ``cheapest_card_that_fits(...,
own_bytes=...)`` returns None then, and planning.estimate leaves ``cheapest_card`` empty when the
workflow fits the device it was estimated for.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..errors import VramBudgetError
from ..units import GiB

DRIVER_RESERVED = int(0.35 * GiB)  # 24 GiB nominal -> 23.65 GiB reported (FACTS.md)


# Host link, effective bytes/s of pinned host -> device copies: about 80 % of the PCIe payload rate
# (PCIe 3.0 x16 15.75 GB/s, 4.0 x16 31.5 GB/s, 5.0 x16 63 GB/s; x8 cards half). 80 % is what
# NVIDIA's bandwidthTest reaches with pinned memory on current boards; weights that ComfyUI streams
# are pinned (model_management.py pin_memory).
PCIE = {"3.0x16": 12.6e9, "4.0x8": 12.6e9, "4.0x16": 25.2e9, "5.0x8": 25.2e9, "5.0x16": 50.4e9}

# What ComfyUI does on each architecture (ComfyUI 0.33.0 comfy/model_management.py; 0.8 / 0.18 alike):
# - fp8 compute: supports_fp8_compute (:1954-1975) is True for NVIDIA sm 8.9 (Ada) and sm >= 9 (Hopper,
#   Blackwell); on AMD only where SUPPORT_FP8_OPS is set: gfx1200 / gfx1201 / gfx950 with torch >= 2.7 and
#   ROCm >= 6.4 (:523-525), i.e. RDNA4 and MI355X; every other AMD card upcasts fp8 weights.
# - bf16: should_use_bf16 (:1901-1950) is True for sm >= 8 and, on AMD, for every arch outside
#   AMD_RDNA2_AND_OLDER_ARCH (:477, gfx1030 ... gfx803).
# - fp32 compute: should_use_fp16 (:1834-1899) is False for the 10 series on Linux (Pascal: `pascal`) and for
#   the GTX 16 series everywhere (`nvidia_16_series`, :1894-1897: "FP16 is just broken on these cards").
# - attention: NVIDIA with torch 2 runs PyTorch SDPA (:463-467; memory-efficient kernels from sm 5.0); AMD runs
#   SDPA only on gfx90a / gfx942 / gfx950 / gfx1100 / gfx1101 / gfx1150 / gfx1151 (torch >= 2.7) and gfx1200 /
#   gfx1201 (ROCm >= 7) when AOTriton supports the card (:496-522); every other AMD card (RDNA2, gfx1102
#   RX 7600, gfx1103 Radeon 780M) falls back to ComfyUI's sub-quadratic attention, which chunks the score
#   tensor to the free memory (slower, not bigger).
# - shared memory: an APU's "VRAM" is system RAM set aside for the GPU, so it is not also free as RAM.
ARCHS: dict[str, dict] = {
    "pascal": dict(vendor="NVIDIA", fp8_compute=False, bf16=False, pascal=True),
    "volta": dict(vendor="NVIDIA", fp8_compute=False, bf16=False, pascal=False),
    "turing": dict(vendor="NVIDIA", fp8_compute=False, bf16=False, pascal=False),
    "turing16": dict(vendor="NVIDIA", fp8_compute=False, bf16=False, pascal=False, fp32_compute=True),
    "ampere": dict(vendor="NVIDIA", fp8_compute=False, bf16=True, pascal=False),
    "ada": dict(vendor="NVIDIA", fp8_compute=True, bf16=True, pascal=False),
    "hopper": dict(vendor="NVIDIA", fp8_compute=True, bf16=True, pascal=False),
    "blackwell": dict(vendor="NVIDIA", fp8_compute=True, bf16=True, pascal=False),
    "rdna2": dict(vendor="AMD", fp8_compute=False, bf16=False, pascal=False, attention="subquad"),
    "rdna3": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False),
    "rdna3-gfx1102": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False, attention="subquad"),
    "rdna3-apu": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False, attention="subquad",
                      shared_memory=True),
    # gfx1151 (Strix Halo): ComfyUI up to 0.15 turned PyTorch attention on for it without asking whether the torch
    # build has AOTriton kernels for it (0.8.0 model_management.py:355-358); without them SDPA falls back to the
    # math path, which allocates the whole fp32 score tensor (heads x tokens^2 x 4 bytes: the 47.98 GiB and
    # 66.54 GiB requests of Comfy-Org/ComfyUI#9801 and #10277). 0.18 checks aotriton_supported first (:456-474).
    "rdna3.5-apu": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False, shared_memory=True,
                        math_attention_rules=("0.8",)),
    "rdna3.5-apu-gfx1150": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False, shared_memory=True),
    "rdna4": dict(vendor="AMD", fp8_compute=True, bf16=True, pascal=False),
    "cdna2": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False),
    "cdna3": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False),
    "cdna4": dict(vendor="AMD", fp8_compute=True, bf16=True, pascal=False),
    "gcn": dict(vendor="AMD", fp8_compute=False, bf16=False, pascal=False, attention="subquad"),
    # Intel XPU: PyTorch attention (:468-470), fp16 when the device has it (:1862), no fp8 compute (:1958-1959)
    "xe-hpg": dict(vendor="Intel", fp8_compute=False, bf16=True, pascal=False),
    "xe2": dict(vendor="Intel", fp8_compute=False, bf16=True, pascal=False),
}

# Where the figures of a catalogue line come from. TFLOPS are dense (no sparsity) FP16/BF16 tensor
# throughput with FP32 accumulate, as the vendor gives it, or derived from the vendor's cores and boost
# clock by the rule its source names. GeForce Ampere, Ada and Blackwell run FP32 accumulate at half the
# FP16-accumulate rate, which equals twice the FP32 shader rate (cores x 2 x boost clock): the whitepapers'
# tables show it (RTX 3090 35.6 -> 71, RTX 4090 82.6 -> 165.2, RTX 5090 104.8 -> 209.5), and "nv-spec" lines
# apply it to the spec page's cores and boost clock; workstation cards run it at the full rate ("nv-pro").
SOURCES: dict[str, str] = {
    "nv-spec": "NVIDIA GeForce product specifications (CUDA cores, boost clock, memory, bus, interface); "
               "TFLOPS = 2 x (cores x 2 x boost clock), the GeForce FP16-tensor/FP32-accumulate rate",
    "nv-laptop": "NVIDIA GeForce laptop GPU specifications (CUDA cores, the highest boost clock listed, memory, "
                 "bus); TFLOPS = 2 x (cores x 2 x boost clock) as nv-spec; a laptop's power limit may run it slower",
    "pascal": "NVIDIA GeForce GTX 10-series specifications (CUDA cores, boost clock, memory, bandwidth, PCIe 3.0 "
              "x16); no tensor cores: the figure is the FP32 shader rate, cores x 2 x boost clock (ComfyUI computes "
              "in fp32 there on Linux; fp16 runs at 1/64 of it on GP10x)",
    "turing16": "NVIDIA GeForce GTX 16-series specifications (CUDA cores, boost clock, memory, bandwidth); no tensor "
                "cores and ComfyUI computes in fp32 (nvidia_16_series): the FP32 shader rate, cores x 2 x boost clock",
    "turing-wp": "NVIDIA Turing GPU Architecture whitepaper (WP-09183-001), Appendix A, reference boards: "
                 "FP16 tensor TFLOPS with FP32 accumulate, memory bandwidth",
    "turing-spec": "NVIDIA GeForce RTX 20-series specifications (CUDA cores, boost clock, memory, bandwidth); "
                   "TFLOPS = cores / 8 tensor cores x 64 FMA x 2 FLOP / 2 x boost clock = 8 x cores x boost, the "
                   "rule that reproduces the Turing whitepaper's RTX 2070 / 2080 / 2080 Ti figures",
    "ga102-wp": "NVIDIA Ampere GA102 GPU Architecture whitepaper (v2), tables 1-3: RTX 3090 / 3080 / 3070, "
                "FP16 tensor TFLOPS with FP32 accumulate, memory bandwidth",
    "ada-wp": "NVIDIA Ada Lovelace GPU Architecture whitepaper (v2.1), Appendix A: RTX 4090 / 4080 / RTX 6000 "
              "Ada, FP16 tensor TFLOPS with FP32 accumulate, memory bandwidth",
    "blackwell-wp": "NVIDIA RTX Blackwell GPU Architecture whitepaper: RTX 5090 / 5080, FP16 tensor TFLOPS with "
                    "FP32 accumulate, memory bandwidth",
    "nv-pro": "NVIDIA RTX workstation specifications (CUDA cores, boost clock, memory, bandwidth); TFLOPS = 8 x "
              "cores x boost clock, the full-rate FP32-accumulate figure that reproduces the RTX A5000 / A6000 / "
              "6000 Ada / PRO 6000 datasheets (111.1, 154.8, 364.2, 503.8)",
    "nv-datasheet": "NVIDIA data-center / workstation datasheets (T4, V100, A10, A40, A100, L4, L40, L40S, RTX "
                    "A5000/A6000, RTX PRO 6000, H100 SXM / PCIe / NVL, H200 SXM, HGX B200): dense FP16/BF16 tensor "
                    "TFLOPS (half the 'with sparsity' figure), memory bandwidth",
    "amd-spec": "AMD Radeon RX product specifications: memory, bandwidth, 'Peak Half Precision (FP16) "
                "Performance', PCIe link",
    "amd-mi300x": "AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s, peak FP16/BF16 1307.4 TFLOPS dense "
                  "(2614.9 with sparsity), PCIe 5.0 x16 host interface",
    "amd-instinct": "AMD Instinct MI210 / MI325X / MI355X data sheets: memory, bandwidth, peak dense FP16 matrix "
                    "TFLOPS, PCIe 4.0 / 5.0 x16",
    "intel-spec": "Intel Arc product specifications (Xe cores, graphics clock, memory, bandwidth, PCIe); TFLOPS = the "
                  "vector FP16 rate (twice FP32), not the XMX matrix rate, which PyTorch on XPU does not reach in "
                  "ComfyUI's kernels",
    "amd-apu": "AMD Ryzen processor pages (graphics model, compute units, max graphics clock, LPDDR5X bus); "
               "FP16 = CUs x 512 FLOP per clock x clock (RDNA3 WMMA: the rule that gives AMD's RX 7900 XTX figure, "
               "96 x 512 x 2.5 GHz = 122.9); memory = the usual share set aside for the GPU (give --vram for "
               "yours)",
}

# One line per card. Names are what the VRAM Budget node's GPU list shows (saved workflows store
# them: never rename one). Aliases: other names find_card also accepts (compared after _norm, which drops
# the vendor and brand words: "NVIDIA GeForce RTX 4090" and "4090" are one name). A name that several cards
# share ("RTX 4060 Ti": 8 GB and 16 GB) is asked about, never guessed.
_CATALOGUE: tuple[tuple, ...] = (
    # name                 GB   GB/s    TFLOPS  PCIe      arch         source          aliases
    # --- GeForce 10 (Pascal), 16 (Turing without tensor cores)
    ("GTX 1050 Ti",         4,   112,      2.1, "3.0x16", "pascal",    "pascal",       ()),
    ("GTX 1060 3GB",        3,   192,      3.9, "3.0x16", "pascal",    "pascal",       ()),
    ("GTX 1060 6GB",        6,   192,      4.4, "3.0x16", "pascal",    "pascal",       ()),
    ("GTX 1070",            8,   256,      6.5, "3.0x16", "pascal",    "pascal",       ()),
    ("GTX 1070 Ti",         8,   256,      8.2, "3.0x16", "pascal",    "pascal",       ()),
    ("GTX 1080",            8,   320,      8.9, "3.0x16", "pascal",    "pascal",       ()),
    ("GTX 1080 Ti",        11,   484,     11.3, "3.0x16", "pascal",    "pascal",       ()),
    ("GTX 1650",            4,   128,      3.0, "3.0x16", "turing16",  "turing16",     ()),
    ("GTX 1660",            6,   192,      5.0, "3.0x16", "turing16",  "turing16",     ()),
    ("GTX 1660 Super",      6,   336,      5.0, "3.0x16", "turing16",  "turing16",     ()),
    ("GTX 1660 Ti",         6,   288,      5.4, "3.0x16", "turing16",  "turing16",     ()),
    # --- GeForce RTX 20 (Turing)
    ("RTX 2060",            6,   336,     25.8, "3.0x16", "turing",    "turing-spec",  ()),
    ("RTX 2060 12GB",      12,   360,     28.7, "3.0x16", "turing",    "turing-spec",  ()),
    ("RTX 2060 Super",      8,   448,     28.7, "3.0x16", "turing",    "turing-spec",  ()),
    ("RTX 2070",            8,   448,     29.9, "3.0x16", "turing",    "turing-wp",    ()),
    ("RTX 2070 Super",      8,   448,     36.2, "3.0x16", "turing",    "turing-spec",  ()),
    ("RTX 2080",            8,   448,     40.3, "3.0x16", "turing",    "turing-wp",    ()),
    ("RTX 2080 Super",      8,   496,     44.6, "3.0x16", "turing",    "turing-spec",  ()),
    ("RTX 2080 Ti",        11,   616,     53.8, "3.0x16", "turing",    "turing-wp",    ("2080ti",)),
    # --- GeForce RTX 30 (Ampere)
    ("RTX 3050",            8,   224,     18.2, "4.0x8",  "ampere",    "nv-spec",      ("3050 8gb",)),
    ("RTX 3050 6GB",        6,   168,     13.5, "4.0x8",  "ampere",    "nv-spec",      ()),
    ("RTX 3060",           12,   360,     25.5, "4.0x16", "ampere",    "nv-spec",      ("3060", "3060 12gb")),
    ("RTX 3060 8GB",        8,   240,     25.5, "4.0x16", "ampere",    "nv-spec",      ()),
    ("RTX 3060 Ti",         8,   448,     32.4, "4.0x16", "ampere",    "nv-spec",      ("3060ti",)),
    ("RTX 3070",            8,   448,     40.6, "4.0x16", "ampere",    "ga102-wp",     ()),
    ("RTX 3070 Ti",         8,   608,     43.5, "4.0x16", "ampere",    "nv-spec",      ()),
    ("RTX 3080",           10,   760,     59.5, "4.0x16", "ampere",    "ga102-wp",     ("3080", "3080 10gb")),
    ("RTX 3080 12GB",      12,   912,     61.3, "4.0x16", "ampere",    "nv-spec",      ()),
    ("RTX 3080 Ti",        12,   912,     68.2, "4.0x16", "ampere",    "nv-spec",      ("3080ti",)),
    ("RTX 3090",           24,   936,     71.0, "4.0x16", "ampere",    "ga102-wp",     ()),
    ("RTX 3090 Ti",        24,  1008,     80.0, "4.0x16", "ampere",    "nv-spec",      ("3090ti",)),
    # --- GeForce RTX 40 (Ada)
    ("RTX 4060",            8,   272,     30.2, "4.0x8",  "ada",       "nv-spec",      ()),
    ("RTX 4060 Ti 8GB",     8,   288,     44.2, "4.0x8",  "ada",       "nv-spec",      ()),
    ("RTX 4060 Ti 16GB",   16,   288,     44.2, "4.0x8",  "ada",       "nv-spec",      ()),
    ("RTX 4070",           12,   504,     58.3, "4.0x16", "ada",       "nv-spec",      ()),
    ("RTX 4070 Super",     12,   504,     71.0, "4.0x16", "ada",       "nv-spec",      ()),
    ("RTX 4070 Ti",        12,   504,     80.2, "4.0x16", "ada",       "nv-spec",      ("4070ti",)),
    ("RTX 4070 Ti Super",  16,   672,     88.2, "4.0x16", "ada",       "nv-spec",      ()),
    ("RTX 4080",           16,   717,     97.5, "4.0x16", "ada",       "ada-wp",       ()),
    ("RTX 4080 Super",     16,   736,    104.4, "4.0x16", "ada",       "nv-spec",      ()),
    ("RTX 4090",           24,  1008,    165.2, "4.0x16", "ada",       "ada-wp",       ()),
    ("RTX 4090 D",         24,  1008,    147.1, "4.0x16", "ada",       "nv-spec",      ("4090d",)),
    # --- GeForce RTX 50 (Blackwell)
    ("RTX 5060",            8,   448,     38.4, "5.0x8",  "blackwell", "nv-spec",      ()),
    ("RTX 5060 Ti 8GB",     8,   448,     47.4, "5.0x8",  "blackwell", "nv-spec",      ()),
    ("RTX 5060 Ti 16GB",   16,   448,     47.4, "5.0x8",  "blackwell", "nv-spec",      ()),
    ("RTX 5070",           12,   672,     61.8, "5.0x16", "blackwell", "nv-spec",      ()),
    ("RTX 5070 Ti",        16,   896,     87.9, "5.0x16", "blackwell", "nv-spec",      ("5070ti",)),
    ("RTX 5080",           16,   960,    112.6, "5.0x16", "blackwell", "blackwell-wp", ()),
    ("RTX 5090",           32,  1792,    209.5, "5.0x16", "blackwell", "blackwell-wp", ()),
    # --- GeForce laptop GPUs (the desktop card of the same number is another card)
    ("RTX 3060 Laptop",     6,   336,     26.2, "4.0x8",  "ampere",    "nv-laptop",    ()),
    ("RTX 3070 Laptop",     8,   448,     33.2, "4.0x16", "ampere",    "nv-laptop",    ()),
    ("RTX 3080 Laptop 8GB", 8,   448,     42.0, "4.0x16", "ampere",    "nv-laptop",    ()),
    ("RTX 3080 Laptop 16GB", 16,  448,     42.0, "4.0x16", "ampere",    "nv-laptop",    ()),
    ("RTX 4050 Laptop",     6,   192,     24.3, "4.0x8",  "ada",       "nv-laptop",    ()),
    ("RTX 4060 Laptop",     8,   256,     23.2, "4.0x8",  "ada",       "nv-spec",      ()),
    ("RTX 4070 Laptop",     8,   256,     40.1, "4.0x8",  "ada",       "nv-laptop",    ()),
    ("RTX 4080 Laptop",    12,   432,     67.7, "4.0x16", "ada",       "nv-laptop",    ()),
    ("RTX 4090 Laptop",    16,   576,     79.4, "4.0x16", "ada",       "nv-laptop",    ()),
    ("RTX 5060 Laptop",     8,   384,     33.2, "5.0x8",  "blackwell", "nv-laptop",    ()),
    ("RTX 5070 Laptop",     8,   384,     43.3, "5.0x8",  "blackwell", "nv-laptop",    ()),
    ("RTX 5070 Ti Laptop", 12,   672,     52.3, "5.0x16", "blackwell", "nv-laptop",    ()),
    ("RTX 5080 Laptop",    16,   896,     70.3, "5.0x16", "blackwell", "nv-laptop",    ()),
    ("RTX 5090 Laptop",    24,   896,     90.7, "5.0x16", "blackwell", "nv-laptop",    ()),
    # --- RTX workstation (Ampere "RTX A", Ada, Blackwell "RTX PRO")
    ("RTX A2000 6GB",       6,   288,     31.9, "4.0x16", "ampere",    "nv-pro",       ()),
    ("RTX A2000 12GB",     12,   288,     31.9, "4.0x16", "ampere",    "nv-pro",       ()),
    ("RTX A4000",          16,   448,     76.7, "4.0x16", "ampere",    "nv-pro",       ()),
    ("RTX A4500",          20,   640,     94.6, "4.0x16", "ampere",    "nv-pro",       ()),
    ("RTX A5000",          24,   768,    111.1, "4.0x16", "ampere",    "nv-datasheet", ()),
    ("RTX A6000",          48,   768,    154.8, "4.0x16", "ampere",    "nv-datasheet", ()),
    ("RTX 2000 Ada",       16,   224,     48.0, "4.0x8",  "ada",       "nv-pro",       ()),
    ("RTX 4000 Ada",       20,   360,    106.9, "4.0x16", "ada",       "nv-pro",       ()),
    ("RTX 4500 Ada",       24,   432,    158.5, "4.0x16", "ada",       "nv-pro",       ()),
    ("RTX 5000 Ada",       32,   576,    261.1, "4.0x16", "ada",       "nv-pro",       ()),
    ("RTX 6000 Ada",       48,   960,    364.2, "4.0x16", "ada",       "ada-wp",       ("a6000 ada", "rtx 6000 ada generation")),
    ("RTX PRO 4000",       24,   672,    187.6, "5.0x16", "blackwell", "nv-pro",       ("pro 4000 blackwell",)),
    ("RTX PRO 4500",       32,   896,    219.7, "5.0x16", "blackwell", "nv-pro",       ("pro 4500 blackwell",)),
    ("RTX PRO 5000",       48,  1344,    294.8, "5.0x16", "blackwell", "nv-pro",       ("pro 5000 blackwell",)),
    ("RTX PRO 6000",       96,  1792,    503.8, "5.0x16", "blackwell", "nv-datasheet", ("pro 6000 blackwell",)),
    # --- data center
    ("T4",                 16,   320,     65.0, "3.0x16", "turing",    "nv-datasheet", ("tesla t4",)),
    ("V100 16GB",          16,   900,    125.0, "3.0x16", "volta",     "nv-datasheet", ()),
    ("V100 32GB",          32,   900,    125.0, "3.0x16", "volta",     "nv-datasheet", ()),
    ("L4",                 24,   300,    121.0, "4.0x16", "ada",       "nv-datasheet", ()),
    ("A10",                24,   600,    125.0, "4.0x16", "ampere",    "nv-datasheet", ("a10g", "a10 24gb")),
    ("A40",                48,   696,    149.7, "4.0x16", "ampere",    "nv-datasheet", ()),
    ("L40",                48,   864,    181.0, "4.0x16", "ada",       "nv-datasheet", ()),
    ("L40S",               48,   864,    362.1, "4.0x16", "ada",       "nv-datasheet", ()),
    ("A100 40GB",          40,  1555,    312.0, "4.0x16", "ampere",    "nv-datasheet", ("a100 40gb", "a100 pcie 40gb", "a100-40")),
    ("A100 80GB",          80,  2039,    312.0, "4.0x16", "ampere",    "nv-datasheet", ("a100 pcie 80gb", "a100-80")),
    ("H100",               80,  3350,    989.4, "5.0x16", "hopper",    "nv-datasheet", ("h100 80gb", "h100 sxm", "h100 sxm 80gb")),
    ("H100 PCIe",          80,  2000,    756.0, "5.0x16", "hopper",    "nv-datasheet", ("h100 pcie 80gb",)),
    ("H100 NVL",           94,  3900,    835.0, "5.0x16", "hopper",    "nv-datasheet", ("h100 94gb", "h100 nvl 94gb")),
    ("H200",              141,  4800,    989.4, "5.0x16", "hopper",    "nv-datasheet", ("h200 141gb", "h200 sxm")),
    ("B200",              180,  8000,   2250.0, "5.0x16", "blackwell", "nv-datasheet", ("b200 180gb",)),
    # --- AMD Radeon RX 6000 (RDNA2), 7000 (RDNA3), 9000 (RDNA4)
    ("RX 6600",             8,   224,     17.9, "4.0x8",  "rdna2",     "amd-spec",     ()),
    ("RX 6600 XT",          8,   256,     21.2, "4.0x8",  "rdna2",     "amd-spec",     ()),
    ("RX 6650 XT",          8,   280,     21.6, "4.0x8",  "rdna2",     "amd-spec",     ()),
    ("RX 6700 XT",         12,   384,     26.4, "4.0x16", "rdna2",     "amd-spec",     ()),
    ("RX 6750 XT",         12,   432,     26.6, "4.0x16", "rdna2",     "amd-spec",     ()),
    ("RX 6800",            16,   512,     32.3, "4.0x16", "rdna2",     "amd-spec",     ()),
    ("RX 6800 XT",         16,   512,     41.5, "4.0x16", "rdna2",     "amd-spec",     ()),
    ("RX 6900 XT",         16,   512,     46.1, "4.0x16", "rdna2",     "amd-spec",     ()),
    ("RX 6950 XT",         16,   576,     47.3, "4.0x16", "rdna2",     "amd-spec",     ()),
    ("RX 7600",             8,   288,     43.5, "4.0x8",  "rdna3-gfx1102", "amd-spec", ()),
    ("RX 7600 XT",         16,   288,     45.1, "4.0x8",  "rdna3-gfx1102", "amd-spec", ()),
    ("RX 7700 XT",         12,   432,     70.3, "4.0x16", "rdna3",     "amd-spec",     ()),
    ("RX 7800 XT",         16,   624,     74.6, "4.0x16", "rdna3",     "amd-spec",     ()),
    ("RX 7900 GRE",        16,   576,     92.0, "4.0x16", "rdna3",     "amd-spec",     ()),
    ("RX 7900 XT",         20,   800,    103.0, "4.0x16", "rdna3",     "amd-spec",     ()),
    ("RX 7900 XTX",        24,   960,    122.8, "4.0x16", "rdna3",     "amd-spec",     ()),
    ("RX 9060 XT 8GB",      8,   320,     51.3, "5.0x16", "rdna4",     "amd-spec",     ()),
    ("RX 9060 XT 16GB",    16,   320,     51.3, "5.0x16", "rdna4",     "amd-spec",     ()),
    ("RX 9070",            16,   640,     72.3, "5.0x16", "rdna4",     "amd-spec",     ()),
    ("RX 9070 XT",         16,   640,     97.3, "5.0x16", "rdna4",     "amd-spec",     ()),
    # --- AMD Instinct
    ("MI210",              64,  1638,    181.0, "4.0x16", "cdna2",     "amd-instinct", ("instinct mi210",)),
    ("MI300X",            192,  5300,   1307.4, "5.0x16", "cdna3",     "amd-mi300x",   ("instinct mi300x",)),
    ("MI325X",            256,  6000,   1307.4, "5.0x16", "cdna3",     "amd-instinct", ("instinct mi325x",)),
    ("MI355X",            288,  8000,   2516.6, "5.0x16", "cdna4",     "amd-instinct", ("instinct mi355x",)),
    # --- AMD APUs: the GPU's memory is system RAM set aside for it (give --vram for your setting)
    ("Radeon 780M",         8,    90,     16.6, "4.0x16", "rdna3-apu", "amd-apu",      ("780m", "gfx1103")),
    ("Radeon 890M",        16,   120,     23.8, "4.0x16", "rdna3.5-apu-gfx1150", "amd-apu", ("890m", "gfx1150")),
    ("Radeon 8060S",       96,   256,     59.4, "4.0x16", "rdna3.5-apu", "amd-apu",    ("8060s", "ryzen ai max+ 395",
                                                                                        "ryzen ai max 395", "ai max+ 395",
                                                                                        "ai max+395", "ai max 395",
                                                                                        "strix halo", "gfx1151")),
    # --- older cards people still run ComfyUI on
    ("RX 580",              8,   256,      6.2, "3.0x16", "gcn",       "amd-spec",     ("rx 580 8gb", "gfx803")),
    ("Arc A770",           16,   560,     39.3, "4.0x16", "xe-hpg",    "intel-spec",   ("a770", "arc a770 16gb")),
    ("Arc B580",           12,   456,     27.3, "4.0x8",  "xe2",       "intel-spec",   ("b580",)),
)

# The FACTS.md rental guide's cards ("Cards (price per hour at the guide's rental service)"), in
# its order, with the price per hour in EUR, the date the price was taken into this project and
# where it comes from. H200 and B200 are named there without a price.
PRICE_SOURCE = "shared/FACTS.md, 'Cards (price per hour at the guide's rental service)'"
PRICE_AS_OF = "2026-11-30"  # the guide gives no date: the day its figures were recorded here
_RENTAL: tuple[tuple, ...] = (
    # name        EUR/h  as of         source
    ("RTX 4090",  0.59, PRICE_AS_OF, PRICE_SOURCE),
    ("RTX 5090",  0.76, PRICE_AS_OF, PRICE_SOURCE),
    ("L40S",      1.06, PRICE_AS_OF, PRICE_SOURCE),
    ("H100",      3.90, PRICE_AS_OF, PRICE_SOURCE),
    ("H200",      None, None, PRICE_SOURCE),
    ("B200",      None, None, PRICE_SOURCE),
)


@dataclass(frozen=True)
class Card:
    name: str
    nominal_gb: int  # the marketed size ("24 GB" = 24 GiB of memory)
    fp8_compute: bool  # Ada (sm 8.9), Hopper, Blackwell: ComfyUI keeps fp8 weights in fp8
    price_eur_h: float | None = None
    aliases: tuple[str, ...] = ()
    # Speed model (runtime.py): dense FP16/BF16 tensor throughput with FP32 accumulate, as the
    # vendor's datasheet / architecture whitepaper gives it without sparsity (SOURCES), and the
    # host link the card sits on.
    tflops: float = 0.0
    pcie: str = "4.0x16"
    bf16: bool = True  # Ampere and newer, AMD RDNA3 / CDNA3
    pascal: bool = False  # sm 6.x: should_use_fp16 is False on Linux (fp16 only for 10-series names on Windows)
    bandwidth_gb_s: float = 0.0  # memory bandwidth, GB/s (decimal), as the vendor gives it
    vendor: str = "NVIDIA"
    arch: str = ""  # a key of ARCHS
    source: str = ""  # a key of SOURCES
    rental: bool = False  # one of the FACTS.md rental guide's cards
    price_as_of: str | None = None  # ISO date of price_eur_h
    price_source: str | None = None
    attention: str = "sdpa"  # "sdpa" | "subquad": ComfyUI's attention on this card (ARCHS)
    fp32_compute: bool = False  # GTX 16 series: ComfyUI computes in fp32 on every OS (nvidia_16_series)
    shared_memory: bool = False  # an APU: its memory is system RAM set aside for the GPU
    math_attention_rules: tuple[str, ...] = ()  # ComfyUI rule sets that run SDPA's math path on it (ARCHS)

    @property
    def total_bytes(self) -> int:
        """Total capacity as torch.cuda.mem_get_info / the OOM message reports it."""
        return self.nominal_gb * GiB - DRIVER_RESERVED

    @property
    def host_bytes_per_s(self) -> float:
        return PCIE[self.pcie]

    @property
    def flops(self) -> float:
        return self.tflops * 1e12

    @property
    def group(self) -> str:
        """The heading a card list shows it under ("GeForce RTX 40", "Laptop GPUs", "Data center" ...)."""
        name = self.name
        if "Laptop" in name:
            return "Laptop GPUs"
        if self.shared_memory:
            return "AMD APUs (shared memory)"
        if self.vendor == "Intel":
            return "Intel Arc"
        if self.vendor == "AMD":
            return "AMD Instinct" if self.arch.startswith("cdna") else "AMD Radeon"
        if self.source == "nv-pro" or name.startswith(("RTX A", "RTX PRO")) or name.endswith(" Ada"):
            return "RTX workstation"
        if name.startswith("GTX "):
            return "GeForce GTX 10 / 16"
        if name.startswith("RTX ") and name[4:5].isdecimal():
            return f"GeForce RTX {name[4]}0"
        return "Data center"


def _card(row: tuple, rental: dict[str, tuple]) -> Card:
    name, gb, bandwidth, tflops, pcie, arch, source, aliases = row
    flags = ARCHS[arch]
    price, as_of, price_source = rental.get(name, (None, None, None))
    return Card(name, gb, flags["fp8_compute"], price, tuple(aliases), tflops=tflops, pcie=pcie, bf16=flags["bf16"],
                pascal=flags["pascal"], bandwidth_gb_s=float(bandwidth), vendor=flags["vendor"], arch=arch,
                source=source, rental=name in rental, price_as_of=as_of, price_source=price_source,
                attention=flags.get("attention", "sdpa"), fp32_compute=flags.get("fp32_compute", False),
                shared_memory=flags.get("shared_memory", False),
                math_attention_rules=tuple(flags.get("math_attention_rules", ())))


def build_catalogue(rows: tuple[tuple, ...], rental_rows: tuple[tuple, ...] = ()) -> tuple[Card, ...]:
    """Cards from catalogue lines (the _CATALOGUE layout) and rental lines (the _RENTAL layout)."""
    rental = {r[0]: tuple(r[1:]) for r in rental_rows}
    return tuple(_card(row, rental) for row in rows)


CARDS: tuple[Card, ...] = build_catalogue(_CATALOGUE, _RENTAL)

# The FACTS.md rental guide's lineup, which its card table and "take a bigger card" advice use.
RENTAL_LINEUP: tuple[str, ...] = tuple(r[0] for r in _RENTAL)


# Words a card's name may carry that do not tell one card from another: vendor and brand words, the
# words a driver adds ("NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
# "NVIDIA RTX 6000 Ada Generation", "Tesla T4"). "laptop" stands for every way a mobile GPU is named.
_NOISE = {"nvidia", "geforce", "amd", "radeon", "ati", "rtx", "gtx", "rx", "tesla", "quadro", "graphics", "gpu",
          "generation", "hbm3", "hbm3e", "hbm2", "hbm2e", "sxm", "sxm2", "sxm4", "sxm5", "(tm)", "(r)", "edition",
          "founders", "card"}
_LAPTOP = {"laptop", "mobile", "notebook", "max-q", "maxq"}
_MAX_NAME = 120  # a card name longer than this is not a card name


def _norm(s: str) -> str:
    """'NVIDIA GeForce RTX 4060 Ti 16 GB' -> '4060 ti 16gb'; 'RTX 3060 Laptop GPU' -> '3060 laptop'."""
    text = str(s)[:_MAX_NAME].lower().replace("_", " ").replace("-", " ").replace("max q", "maxq")
    text = re.sub(r"^\s*\d\s*x\s+", "", text)  # "2x RTX 5090": one card of the machine's
    text = re.sub(r"\((?!gfx)[^)]*\)", " ", text).replace("(", " ").replace(")", " ")  # "(ROCm)"; "(gfx1151)" kept
    text = re.sub(r"(\d+)\s*(gb|g|gib)\b", r"\1gb", text)  # "16 GB", "16G" -> "16gb"
    text = re.sub(r"(\d{3,4})(ti|xtx|xt|gre|super)\b", r"\1 \2", text)  # "4060ti", "7900gre"
    words = []
    for w in text.split():
        if w in _LAPTOP:
            w = "laptop"
        if w not in _NOISE and w not in words:
            words.append(w)
    return " ".join(words)


def _base(key: str) -> str:
    """A normalised name without its memory size: '4060 ti 16gb' -> '4060 ti'."""
    return " ".join(w for w in key.split() if not re.fullmatch(r"\d+gb", w))


def _index() -> tuple[dict[str, Card], dict[str, list[Card]]]:
    exact: dict[str, Card] = {}
    by_base: dict[str, list[Card]] = {}
    for card in CARDS:
        for key in (_norm(card.name), *(_norm(a) for a in card.aliases)):
            exact.setdefault(key, card)
        by_base.setdefault(_base(_norm(card.name)), []).append(card)
    return exact, by_base


_EXACT, _BY_BASE = _index()


def _card_label(card: Card) -> str:
    return f"{card.name} ({card.nominal_gb} GB)"


def card_candidates(name: str, limit: int = 5) -> list[Card]:
    """The catalogue cards a name could mean: the cards that share it without a size ("RTX 4060 Ti": the
    8 GB and the 16 GB card), else the nearest names (a typo, "RTX 3080 Tie")."""
    want = _norm(name)
    same = _BY_BASE.get(_base(want), [])
    if len(same) > 1:
        return same[:limit]
    keys = difflib.get_close_matches(want, list(_EXACT), n=limit * 2, cutoff=0.6)
    out: list[Card] = []
    for k in keys:
        if _EXACT[k] not in out:
            out.append(_EXACT[k])
    return out[:limit]


def find_card(name: str, nominal_gb: float | None = None) -> Card:
    """A card by name ('RTX 4090', '4090', 'NVIDIA GeForce RTX 4090', 'h100', 'AMD Radeon RX 7900 XTX').

    Never guesses: a name several cards share is refused with the candidates ("RTX 4060 Ti": say 8GB or
    16GB), unless `nominal_gb` (a measured size, inside ComfyUI) tells them apart; an unknown name is refused
    with the nearest names. A laptop GPU is never the desktop card of the same number."""
    if not isinstance(name, str) or not name.strip():
        raise VramBudgetError("no GPU named: give a card name, e.g. 'RTX 4090' (or the card's size in GB)")
    if len(name) > _MAX_NAME:
        raise VramBudgetError(f"GPU name of {len(name)} characters: a card name is at most {_MAX_NAME}")
    want = _norm(name)
    shown = name.strip()
    same = _BY_BASE.get(_base(want), [])
    if nominal_gb is not None and len(same) > 1:
        sized = [c for c in same if abs(c.nominal_gb - nominal_gb) <= max(1.0, 0.08 * c.nominal_gb)]
        if len(sized) == 1:
            return sized[0]
    if want in _EXACT:
        return _EXACT[want]
    if len(same) == 1 and _base(want) == want:
        return same[0]
    if len(same) > 1 and _base(want) == want:
        options = " or ".join(repr(c.name) for c in same)
        raise VramBudgetError(f"GPU {shown!r} comes in {len(same)} sizes: "
                              f"{', '.join(_card_label(c) for c in same)}; say which ({options})")
    if same and _base(want) != want:
        raise VramBudgetError(f"GPU {shown!r}: no such size; this card comes as "
                              f"{', '.join(_card_label(c) for c in same)}")
    gfx = re.search(r"\bgfx\d{3,4}\b", want)  # an AMD architecture a driver or a user names ("... (gfx1151)")
    if gfx and gfx.group(0) in _EXACT:
        return _EXACT[gfx.group(0)]
    near = card_candidates(name)
    hint = f"did you mean {' or '.join(repr(c.name) for c in near)}? " if near else ""
    raise VramBudgetError(f"unknown GPU {shown!r}: {hint}`vram-budget cards` lists the known cards; or give the "
                          "card's size in GB instead")


# The Windows desktop (DWM) and the browser showing ComfyUI's frontend hold memory on the card that
# drives the display: 1 GiB assumed on a consumer card under Windows when nothing says otherwise.
# Fitted on ComfyUI#6008 (RTX 3060 12 GB, Windows: ComfyUI loaded 8,564 MiB of Flux where the card
# alone leaves room for 9,822: 1.2 GiB held elsewhere); accuracy.md. --other-processes replaces it;
# inside ComfyUI it is measured (NVML / driver-free memory).
WINDOWS_DESKTOP_BYTES = 1024**3
_CONSUMER = ("gtx ", "rtx 20", "rtx 30", "rtx 40", "rtx 50", "rx ")


def windows_desktop_bytes(card: Card) -> int:
    """What the Windows desktop and browser are assumed to hold on `card`: 1 GiB on a consumer card (GeForce,
    Radeon, a laptop GPU) and on a card given only by its size up to 32 GB (a Windows machine's card of that
    size drives its display: issue 30); 0 for data-center and workstation cards over 32 GB."""
    name = card.name.lower()
    if name.startswith(_CONSUMER) or "laptop" in name or card.shared_memory:
        return WINDOWS_DESKTOP_BYTES
    if not card.source and card.nominal_gb <= 32:  # --vram GB: no catalogue line says what it is
        return WINDOWS_DESKTOP_BYTES
    return 0


def card_for_vram(nominal_gb: float, fp8_compute: bool = True, arch: str | None = None) -> Card:
    """A card of a given size; its speed is an RTX 4090's (a mid-range current card) for the
    slowdown model, which only uses ratios of compute to host-link time. `arch` (a key of ARCHS) says its maker
    and generation: fp8 / bf16 compute, ComfyUI's attention, shared memory."""
    if not (isinstance(nominal_gb, (int, float)) and 0 < nominal_gb < 10_000):  # nan fails both comparisons
        raise VramBudgetError(f"--vram {nominal_gb}: give the card's size in GB, e.g. 24")
    if arch is None:
        return Card(f"{nominal_gb:g} GB GPU", nominal_gb, fp8_compute, tflops=165.2)  # type: ignore[arg-type]
    if arch not in ARCHS:
        raise VramBudgetError(f"--arch {arch!r}: one of {', '.join(sorted(ARCHS))}")
    f = ARCHS[arch]
    return Card(f"{nominal_gb:g} GB {f['vendor']} GPU ({arch})", nominal_gb, f["fp8_compute"], tflops=165.2,  # type: ignore[arg-type]
                bf16=f["bf16"], pascal=f["pascal"], vendor=f["vendor"], arch=arch, attention=f.get("attention", "sdpa"),
                fp32_compute=f.get("fp32_compute", False), shared_memory=f.get("shared_memory", False),
                math_attention_rules=tuple(f.get("math_attention_rules", ())))


def cheapest_card_that_fits(needed_bytes: int, lineup: tuple[str, ...] | None = None, *,
                            own_bytes: int | None = None) -> Card | None:
    """The cheapest rental card (by the guide's price) whose capacity holds `needed_bytes`.

    `own_bytes`: the capacity of the user's own card. A workflow that fits it gets no rental
    suggestion (None), whatever the lineup.
    """
    if own_bytes is not None and needed_bytes <= own_bytes:
        return None
    names = lineup or RENTAL_LINEUP
    pool = [c for c in CARDS if c.name in names and c.total_bytes >= needed_bytes]
    if not pool:
        return None
    priced = sorted((c for c in pool if c.price_eur_h is not None), key=lambda c: c.price_eur_h)
    return priced[0] if priced else min(pool, key=lambda c: c.nominal_gb)
