"""Card catalogue: capacity as PyTorch reports it, fp8 compute, and rental price where known.

Capacity: a card sold as "24 GB" has 24 GiB of memory, of which PyTorch reports a total capacity of
about 23.65 GiB (FACTS.md, "Reading an OOM message"): the driver keeps a little. Where the reported
figure is not known we subtract the same 0.35 GiB from the nominal size.

Prices (EUR per hour) are the FACTS.md rental guide's: RTX 4090 0.59, RTX 5090 0.76, L40S 1.06,
H100 3.90. Other cards carry no price; the cheapest-card search ranks priced cards by price and
falls back to the smallest unpriced card that fits.
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


@dataclass(frozen=True)
class Card:
    name: str
    nominal_gb: int  # the marketed size ("24 GB" = 24 GiB of memory)
    fp8_compute: bool  # Ada (sm 8.9), Hopper, Blackwell: ComfyUI keeps fp8 weights in fp8
    price_eur_h: float | None = None
    aliases: tuple[str, ...] = ()
    # Speed model (runtime.py): dense FP16/BF16 tensor throughput with FP32 accumulate, as the
    # vendor's datasheet / architecture whitepaper gives it without sparsity (GeForce cards: twice
    # the FP32 shader rate, e.g. RTX 4090 165.2 TFLOPS in the Ada whitepaper, RTX 3090 71 in the
    # GA102 whitepaper), and the host link the card sits on.
    tflops: float = 0.0
    pcie: str = "4.0x16"
    bf16: bool = True  # Ampere and newer
    pascal: bool = False  # sm 6.x: should_use_fp16 is False on Linux (fp16 only for 10-series names on Windows)

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


CARDS: tuple[Card, ...] = (
    Card("GTX 1070", 8, False, aliases=("1070", "gtx 1070"), tflops=6.5, pcie="3.0x16", bf16=False, pascal=True),
    Card("RTX 2080 Ti", 11, False, aliases=("2080 ti", "2080ti"), tflops=53.8, pcie="3.0x16", bf16=False),
    Card("RTX 3060", 12, False, aliases=("3060",), tflops=25.5),
    Card("RTX 3060 Ti", 8, False, aliases=("3060 ti", "3060ti"), tflops=32.4),
    Card("RTX 3070", 8, False, aliases=("3070",), tflops=40.6),
    Card("RTX 3080", 10, False, aliases=("3080",), tflops=59.5),
    Card("RTX 3090", 24, False, aliases=("3090",), tflops=71.0),
    Card("RTX 4060", 8, True, aliases=("4060",), tflops=30.2, pcie="4.0x8"),
    Card("RTX 4060 Laptop", 8, True, aliases=("4060 laptop", "4060 laptop gpu"), tflops=23.2, pcie="4.0x8"),
    Card("RTX 4060 Ti 16GB", 16, True, aliases=("4060 ti", "4060ti"), tflops=44.2, pcie="4.0x8"),
    Card("RTX 4070", 12, True, aliases=("4070",), tflops=58.3),
    Card("RTX 4070 Ti Super", 16, True, aliases=("4070 ti super",), tflops=88.2),
    Card("RTX 4080", 16, True, aliases=("4080", "4080 super"), tflops=97.5),
    Card("RTX 4090", 24, True, 0.59, aliases=("4090",), tflops=165.2),
    Card("RTX 5060 Ti 16GB", 16, True, aliases=("5060 ti", "5060ti"), tflops=47.4, pcie="5.0x8"),
    Card("RTX 5080", 16, True, aliases=("5080",), tflops=112.6, pcie="5.0x16"),
    Card("RTX 5090", 32, True, 0.76, aliases=("5090",), tflops=209.5, pcie="5.0x16"),
    Card("RTX A5000", 24, False, aliases=("a5000",), tflops=111.1),
    Card("RTX A6000", 48, False, aliases=("a6000",), tflops=154.8),
    Card("RTX 6000 Ada", 48, True, aliases=("6000 ada",), tflops=364.2),
    Card("RTX PRO 6000", 96, True, aliases=("pro 6000", "rtx pro 6000 blackwell"), tflops=503.8, pcie="5.0x16"),
    Card("L4", 24, True, aliases=("nvidia l4",), tflops=121.0),
    Card("A10", 24, False, aliases=("a10g",), tflops=125.0),
    Card("L40S", 48, True, 1.06, aliases=("l40s",), tflops=362.1),
    Card("A100 40GB", 40, False, aliases=("a100-40",), tflops=312.0),
    Card("A100 80GB", 80, False, aliases=("a100", "a100-80"), tflops=312.0),
    Card("H100", 80, True, 3.90, aliases=("h100 80gb", "h100 sxm", "h100 pcie"), tflops=989.4, pcie="5.0x16"),
    Card("H200", 141, True, aliases=("h200",), tflops=989.4, pcie="5.0x16"),
    Card("B200", 180, True, aliases=("b200",), tflops=2250.0, pcie="5.0x16"),
)

# The FACTS.md rental guide's lineup, which its card table and "take a bigger card" advice use.
RENTAL_LINEUP = ("RTX 4090", "RTX 5090", "L40S", "H100", "H200", "B200")


def _norm(s: str) -> str:
    return " ".join(s.lower().replace("nvidia", "").replace("geforce", "").replace("-", " ").split())


def find_card(name: str) -> Card:
    """A card by name ('RTX 4090', '4090', 'NVIDIA GeForce RTX 4090', 'h100')."""
    want = _norm(name)
    for card in CARDS:
        if want == _norm(card.name) or want in {_norm(a) for a in card.aliases}:
            return card
    for card in sorted(CARDS, key=lambda c: -len(c.name)):  # substring, longest name first
        if _norm(card.name) in want or any(_norm(a) in want for a in card.aliases):
            return card
    known = ", ".join(c.name for c in CARDS)
    raise VramBudgetError(f"unknown GPU {name!r}; known cards: {known} (or give --vram GB)")


def card_for_vram(nominal_gb: float, fp8_compute: bool = True) -> Card:
    """A card of a given size; its speed is an RTX 4090's (a mid-range current card) for the
    slowdown model, which only uses ratios of compute to host-link time."""
    if not (isinstance(nominal_gb, (int, float)) and 0 < nominal_gb < 10_000):  # nan fails both comparisons
        raise VramBudgetError(f"--vram {nominal_gb}: give the card's size in GB, e.g. 24")
    return Card(f"{nominal_gb:g} GB GPU", nominal_gb, fp8_compute, tflops=165.2)  # type: ignore[arg-type]


def cheapest_card_that_fits(needed_bytes: int, lineup: tuple[str, ...] | None = None) -> Card | None:
    """The cheapest card (by the guide's price) whose capacity holds `needed_bytes`."""
    names = lineup or RENTAL_LINEUP
    pool = [c for c in CARDS if c.name in names and c.total_bytes >= needed_bytes]
    if not pool:
        return None
    priced = sorted((c for c in pool if c.price_eur_h is not None), key=lambda c: c.price_eur_h)
    return priced[0] if priced else min(pool, key=lambda c: c.nominal_gb)
