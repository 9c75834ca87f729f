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
own_bytes=...)`` returns None then, and budget.estimate leaves ``cheapest_card`` empty when the
workflow fits the device it was estimated for.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import VramBudgetError
from .units import GiB

DRIVER_RESERVED = int(0.35 * GiB)  # 24 GiB nominal -> 23.65 GiB reported (FACTS.md)


# Host link, effective bytes/s of pinned host -> device copies: about 80 % of the PCIe payload rate
# (PCIe 3.0 x16 15.75 GB/s, 4.0 x16 31.5 GB/s, 5.0 x16 63 GB/s; x8 cards half). 80 % is what
# NVIDIA's bandwidthTest reaches with pinned memory on current boards; weights that ComfyUI streams
# are pinned (model_management.py pin_memory, COMFYUI-RUNTIME §1.9).
PCIE = {"3.0x16": 12.6e9, "4.0x8": 12.6e9, "4.0x16": 25.2e9, "5.0x8": 25.2e9, "5.0x16": 50.4e9}

# What ComfyUI does on each architecture (ComfyUI 0.18.2 comfy/model_management.py):
# - fp8 compute: supports_fp8_compute (:1771-1793) is True for NVIDIA sm 8.9 (Ada) and sm >= 9
#   (Hopper, Blackwell) and False for every non-NVIDIA device (:1775, `if not is_nvidia()`), so
#   AMD cards upcast fp8 weights like Ampere does.
# - bf16: should_use_bf16 (:1715-1769) is True for sm >= 8 and, on AMD, for every arch outside
#   AMD_RDNA2_AND_OLDER_ARCH (:440; RDNA3 gfx1100 and CDNA3 gfx942 report major >= 9).
# - Pascal (sm 6.x): should_use_fp16 is False on Linux (fp16 only for 10-series names on Windows).
ARCHS: dict[str, dict] = {
    "pascal": dict(vendor="NVIDIA", fp8_compute=False, bf16=False, pascal=True),
    "turing": dict(vendor="NVIDIA", fp8_compute=False, bf16=False, pascal=False),
    "ampere": dict(vendor="NVIDIA", fp8_compute=False, bf16=True, pascal=False),
    "ada": dict(vendor="NVIDIA", fp8_compute=True, bf16=True, pascal=False),
    "hopper": dict(vendor="NVIDIA", fp8_compute=True, bf16=True, pascal=False),
    "blackwell": dict(vendor="NVIDIA", fp8_compute=True, bf16=True, pascal=False),
    "rdna3": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False),
    "cdna3": dict(vendor="AMD", fp8_compute=False, bf16=True, pascal=False),
}

# Where the figures of a catalogue line come from. TFLOPS are dense (no sparsity) FP16/BF16 tensor
# throughput with FP32 accumulate, as the vendor gives it. GeForce Ampere, Ada and Blackwell run
# FP32 accumulate at half the FP16-accumulate rate, which equals twice the FP32 shader rate (cores
# x 2 x boost clock): the whitepapers' tables show it (RTX 3090 35.6 -> 71, RTX 4090 82.6 -> 165.2,
# RTX 5090 104.8 -> 209.5), and "nv-spec" lines apply it to the spec page's cores and boost clock.
SOURCES: dict[str, str] = {
    "nv-spec": "NVIDIA GeForce product specifications (CUDA cores, boost clock, memory, bus, interface); "
               "TFLOPS = 2 x (cores x 2 x boost clock), the GeForce FP16-tensor/FP32-accumulate rate",
    "pascal": "NVIDIA GeForce GTX 1070 specifications: 8 GB GDDR5, 256 GB/s, PCIe 3.0 x16; no tensor cores: "
              "the figure is the FP32 shader rate (6.5 TFLOPS), fp16 runs at 1/64 of it on GP104",
    "turing-wp": "NVIDIA Turing GPU Architecture whitepaper (WP-09183-001), Appendix A, reference boards: "
                 "FP16 tensor TFLOPS with FP32 accumulate, memory bandwidth",
    "ga102-wp": "NVIDIA Ampere GA102 GPU Architecture whitepaper (v2), tables 1-3: RTX 3090 / 3080 / 3070, "
                "FP16 tensor TFLOPS with FP32 accumulate, memory bandwidth",
    "ada-wp": "NVIDIA Ada Lovelace GPU Architecture whitepaper (v2.1), Appendix A: RTX 4090 / 4080 / RTX 6000 "
              "Ada, FP16 tensor TFLOPS with FP32 accumulate, memory bandwidth",
    "blackwell-wp": "NVIDIA RTX Blackwell GPU Architecture whitepaper: RTX 5090 / 5080, FP16 tensor TFLOPS with "
                    "FP32 accumulate, memory bandwidth",
    "nv-datasheet": "NVIDIA data-center / workstation datasheets (A10, A100, L4, L40S, RTX A5000/A6000, RTX PRO "
                    "6000, H100 SXM, H200 SXM, HGX B200): dense FP16/BF16 tensor TFLOPS (half the 'with sparsity' "
                    "figure), memory bandwidth",
    "amd-spec": "AMD Radeon RX 7900 XTX / XT product specifications: memory, bandwidth, 'Peak Half Precision "
                "(FP16) Performance' (WMMA, dense), PCIe 4.0 x16",
    "amd-mi300x": "AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s, peak FP16/BF16 1307.4 TFLOPS dense "
                  "(2614.9 with sparsity), PCIe 5.0 x16 host interface",
}

# One line per card. Names are what the VRAM Budget node's GPU list shows (saved workflows store
# them: never rename one). Aliases: lower-case names find_card also accepts.
_CATALOGUE: tuple[tuple, ...] = (
    # name                 GB   GB/s    TFLOPS  PCIe      arch         source          aliases
    ("GTX 1070",            8,   256,      6.5, "3.0x16", "pascal",    "pascal",       ("1070", "gtx 1070")),
    ("RTX 2070",            8,   448,     29.9, "3.0x16", "turing",    "turing-wp",    ("2070", "2070 super")),
    ("RTX 2080",            8,   448,     40.3, "3.0x16", "turing",    "turing-wp",    ("2080", "2080 super")),
    ("RTX 2080 Ti",        11,   616,     53.8, "3.0x16", "turing",    "turing-wp",    ("2080 ti", "2080ti")),
    ("RTX 3060",           12,   360,     25.5, "4.0x16", "ampere",    "nv-spec",      ("3060",)),
    ("RTX 3060 Ti",         8,   448,     32.4, "4.0x16", "ampere",    "nv-spec",      ("3060 ti", "3060ti")),
    ("RTX 3070",            8,   448,     40.6, "4.0x16", "ampere",    "ga102-wp",     ("3070",)),
    ("RTX 3080",           10,   760,     59.5, "4.0x16", "ampere",    "ga102-wp",     ("3080",)),
    ("RTX 3090",           24,   936,     71.0, "4.0x16", "ampere",    "ga102-wp",     ("3090",)),
    ("RTX 4060",            8,   272,     30.2, "4.0x8",  "ada",       "nv-spec",      ("4060",)),
    ("RTX 4060 Laptop",     8,   256,     23.2, "4.0x8",  "ada",       "nv-spec",      ("4060 laptop", "4060 laptop gpu")),
    ("RTX 4060 Ti 8GB",     8,   288,     44.2, "4.0x8",  "ada",       "nv-spec",      ("4060 ti 8gb", "4060 ti 8 gb")),
    ("RTX 4060 Ti 16GB",   16,   288,     44.2, "4.0x8",  "ada",       "nv-spec",      ("4060 ti", "4060ti", "4060 ti 16gb")),
    ("RTX 4070",           12,   504,     58.3, "4.0x16", "ada",       "nv-spec",      ("4070",)),
    ("RTX 4070 Super",     12,   504,     71.0, "4.0x16", "ada",       "nv-spec",      ("4070 super",)),
    ("RTX 4070 Ti",        12,   504,     80.2, "4.0x16", "ada",       "nv-spec",      ("4070 ti",)),
    ("RTX 4070 Ti Super",  16,   672,     88.2, "4.0x16", "ada",       "nv-spec",      ("4070 ti super",)),
    ("RTX 4080",           16,   717,     97.5, "4.0x16", "ada",       "ada-wp",       ("4080",)),
    ("RTX 4080 Super",     16,   736,    104.4, "4.0x16", "ada",       "nv-spec",      ("4080 super",)),
    ("RTX 4090",           24,  1008,    165.2, "4.0x16", "ada",       "ada-wp",       ("4090",)),
    ("RTX 5060 Ti 16GB",   16,   448,     47.4, "5.0x8",  "blackwell", "nv-spec",      ("5060 ti", "5060ti")),
    ("RTX 5070",           12,   672,     61.8, "5.0x16", "blackwell", "nv-spec",      ("5070",)),
    ("RTX 5070 Ti",        16,   896,     87.9, "5.0x16", "blackwell", "nv-spec",      ("5070 ti",)),
    ("RTX 5080",           16,   960,    112.6, "5.0x16", "blackwell", "blackwell-wp", ("5080",)),
    ("RTX 5090",           32,  1792,    209.5, "5.0x16", "blackwell", "blackwell-wp", ("5090",)),
    ("RTX A5000",          24,   768,    111.1, "4.0x16", "ampere",    "nv-datasheet", ("a5000",)),
    ("RTX A6000",          48,   768,    154.8, "4.0x16", "ampere",    "nv-datasheet", ("a6000",)),
    ("RTX 6000 Ada",       48,   960,    364.2, "4.0x16", "ada",       "ada-wp",       ("6000 ada",)),
    ("RTX PRO 6000",       96,  1792,    503.8, "5.0x16", "blackwell", "nv-datasheet", ("pro 6000", "rtx pro 6000 blackwell")),
    ("L4",                 24,   300,    121.0, "4.0x16", "ada",       "nv-datasheet", ("nvidia l4",)),
    ("A10",                24,   600,    125.0, "4.0x16", "ampere",    "nv-datasheet", ("a10g",)),
    ("L40S",               48,   864,    362.1, "4.0x16", "ada",       "nv-datasheet", ("l40s",)),
    ("A100 40GB",          40,  1555,    312.0, "4.0x16", "ampere",    "nv-datasheet", ("a100-40",)),
    ("A100 80GB",          80,  2039,    312.0, "4.0x16", "ampere",    "nv-datasheet", ("a100", "a100-80")),
    ("H100",               80,  3350,    989.4, "5.0x16", "hopper",    "nv-datasheet", ("h100 80gb", "h100 sxm", "h100 pcie")),
    ("H200",              141,  4800,    989.4, "5.0x16", "hopper",    "nv-datasheet", ("h200",)),
    ("B200",              180,  8000,   2250.0, "5.0x16", "blackwell", "nv-datasheet", ("b200",)),
    ("RX 7900 XT",         20,   800,    103.0, "4.0x16", "rdna3",     "amd-spec",     ("7900 xt", "radeon rx 7900 xt")),
    ("RX 7900 XTX",        24,   960,    122.8, "4.0x16", "rdna3",     "amd-spec",     ("7900 xtx", "radeon rx 7900 xtx")),
    ("MI300X",            192,  5300,   1307.4, "5.0x16", "cdna3",     "amd-mi300x",   ("mi300x", "instinct mi300x")),
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


def _card(row: tuple, rental: dict[str, tuple]) -> Card:
    name, gb, bandwidth, tflops, pcie, arch, source, aliases = row
    flags = ARCHS[arch]
    price, as_of, price_source = rental.get(name, (None, None, None))
    return Card(name, gb, flags["fp8_compute"], price, tuple(aliases), tflops=tflops, pcie=pcie, bf16=flags["bf16"],
                pascal=flags["pascal"], bandwidth_gb_s=float(bandwidth), vendor=flags["vendor"], arch=arch,
                source=source, rental=name in rental, price_as_of=as_of, price_source=price_source)


def build_catalogue(rows: tuple[tuple, ...], rental_rows: tuple[tuple, ...] = ()) -> tuple[Card, ...]:
    """Cards from catalogue lines (the _CATALOGUE layout) and rental lines (the _RENTAL layout)."""
    rental = {r[0]: tuple(r[1:]) for r in rental_rows}
    return tuple(_card(row, rental) for row in rows)


CARDS: tuple[Card, ...] = build_catalogue(_CATALOGUE, _RENTAL)

# The FACTS.md rental guide's lineup, which its card table and "take a bigger card" advice use.
RENTAL_LINEUP: tuple[str, ...] = tuple(r[0] for r in _RENTAL)


def _norm(s: str) -> str:
    return " ".join(s.lower().replace("nvidia", "").replace("geforce", "").replace("amd", "").replace("-", " ").split())


def find_card(name: str) -> Card:
    """A card by name ('RTX 4090', '4090', 'NVIDIA GeForce RTX 4090', 'h100', 'AMD Radeon RX 7900 XTX')."""
    want = _norm(name)
    for card in CARDS:
        if want == _norm(card.name) or want in {_norm(a) for a in card.aliases}:
            return card
    mobile = any(w in want for w in ("laptop", "mobile", "max q", "max-q", "notebook"))
    for card in sorted(CARDS, key=lambda c: -len(c.name)):  # substring, longest name first
        if mobile and "laptop" not in _norm(card.name):
            continue  # a laptop GPU is not the desktop card of the same number ("RTX 4070 Laptop" has 8 GB, not 12)
        if _norm(card.name) in want or any(_norm(a) in want for a in card.aliases):
            return card
    known = ", ".join(c.name for c in CARDS)
    raise VramBudgetError(f"unknown GPU {name!r}; known cards: {known} (or give --vram GB)")


# The Windows desktop (DWM) and the browser showing ComfyUI's frontend hold memory on the card that
# drives the display: 1 GiB assumed on a consumer card under Windows when nothing says otherwise.
# Fitted on ComfyUI#6008 (RTX 3060 12 GB, Windows: ComfyUI loaded 8,564 MiB of Flux where the card
# alone leaves room for 9,822: 1.2 GiB held elsewhere); accuracy.md. --other-processes replaces it;
# inside ComfyUI it is measured (NVML / driver-free memory).
WINDOWS_DESKTOP_BYTES = 1024**3
_CONSUMER = ("gtx ", "rtx 20", "rtx 30", "rtx 40", "rtx 50", "rx ")


def windows_desktop_bytes(card: Card) -> int:
    """What the Windows desktop and browser are assumed to hold on `card` (0 for datacenter cards,
    which drive no display, and for a card given only by its size)."""
    name = card.name.lower()
    return WINDOWS_DESKTOP_BYTES if name.startswith(_CONSUMER) else 0


def card_for_vram(nominal_gb: float, fp8_compute: bool = True) -> Card:
    """A card of a given size; its speed is an RTX 4090's (a mid-range current card) for the
    slowdown model, which only uses ratios of compute to host-link time."""
    if not (isinstance(nominal_gb, (int, float)) and 0 < nominal_gb < 10_000):  # nan fails both comparisons
        raise VramBudgetError(f"--vram {nominal_gb}: give the card's size in GB, e.g. 24")
    return Card(f"{nominal_gb:g} GB GPU", nominal_gb, fp8_compute, tflops=165.2)  # type: ignore[arg-type]


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
