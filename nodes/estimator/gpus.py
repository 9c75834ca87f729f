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


@dataclass(frozen=True)
class Card:
    name: str
    nominal_gb: int  # the marketed size ("24 GB" = 24 GiB of memory)
    fp8_compute: bool  # Ada (sm 8.9), Hopper, Blackwell: ComfyUI keeps fp8 weights in fp8
    price_eur_h: float | None = None
    aliases: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        """Total capacity as torch.cuda.mem_get_info / the OOM message reports it."""
        return self.nominal_gb * GiB - DRIVER_RESERVED


CARDS: tuple[Card, ...] = (
    Card("RTX 3060", 12, False, aliases=("3060",)),
    Card("RTX 3080", 10, False, aliases=("3080",)),
    Card("RTX 3090", 24, False, aliases=("3090",)),
    Card("RTX 4060 Ti 16GB", 16, True, aliases=("4060 ti", "4060ti")),
    Card("RTX 4070", 12, True, aliases=("4070",)),
    Card("RTX 4070 Ti Super", 16, True, aliases=("4070 ti super",)),
    Card("RTX 4080", 16, True, aliases=("4080", "4080 super")),
    Card("RTX 4090", 24, True, 0.59, aliases=("4090",)),
    Card("RTX 5080", 16, True, aliases=("5080",)),
    Card("RTX 5090", 32, True, 0.76, aliases=("5090",)),
    Card("RTX A5000", 24, False, aliases=("a5000",)),
    Card("RTX A6000", 48, False, aliases=("a6000",)),
    Card("RTX 6000 Ada", 48, True, aliases=("6000 ada",)),
    Card("RTX PRO 6000", 96, True, aliases=("pro 6000", "rtx pro 6000 blackwell")),
    Card("L4", 24, True, aliases=("nvidia l4",)),
    Card("A10", 24, False, aliases=("a10g",)),
    Card("L40S", 48, True, 1.06, aliases=("l40s",)),
    Card("A100 40GB", 40, False, aliases=("a100-40",)),
    Card("A100 80GB", 80, False, aliases=("a100", "a100-80")),
    Card("H100", 80, True, 3.90, aliases=("h100 80gb", "h100 sxm", "h100 pcie")),
    Card("H200", 141, True, aliases=("h200",)),
    Card("B200", 180, True, aliases=("b200",)),
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
    if not (0 < nominal_gb < 10_000):
        raise VramBudgetError(f"--vram {nominal_gb}: give the card's size in GB, e.g. 24")
    return Card(f"{nominal_gb:g} GB GPU", nominal_gb, fp8_compute)  # type: ignore[arg-type]


def cheapest_card_that_fits(needed_bytes: int, lineup: tuple[str, ...] | None = None) -> Card | None:
    """The cheapest card (by the guide's price) whose capacity holds `needed_bytes`."""
    names = lineup or RENTAL_LINEUP
    pool = [c for c in CARDS if c.name in names and c.total_bytes >= needed_bytes]
    if not pool:
        return None
    priced = sorted((c for c in pool if c.price_eur_h is not None), key=lambda c: c.price_eur_h)
    return priced[0] if priced else min(pool, key=lambda c: c.nominal_gb)
