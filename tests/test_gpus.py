"""The card catalogue (nodes/estimator/machine/gpus.py) and the "cheapest card" rule: never a rental for a
workflow that fits the user's own card."""
from __future__ import annotations

import json
import re

import pytest

from vram_budget.nodes.estimator.plan import advice
from vram_budget.nodes.estimator.machine import gpus
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate_prompt
from vram_budget.nodes.estimator.errors import VramBudgetError
from vram_budget.nodes.estimator.machine.gpus import (
    ARCHS, CARDS, PCIE, RENTAL_LINEUP, SOURCES, build_catalogue, cheapest_card_that_fits, find_card,
)
from vram_budget.nodes.estimator.plan.report import format_report
from vram_budget.nodes.estimator.units import GiB


# --- the catalogue --------------------------------------------------------------------------
# The cards people own (issue 12, item 12) with their marketed memory: a card missing or listed
# with the wrong size fails here.
OWNED = {
    "RTX 2070": 8, "RTX 2080": 8, "RTX 2080 Ti": 11, "RTX 3060": 12, "RTX 3090": 24,
    "RTX 4060 Ti 8GB": 8, "RTX 4060 Ti 16GB": 16, "RTX 4070": 12, "RTX 4070 Ti Super": 16, "RTX 4080": 16,
    "RTX 5070": 12, "RTX 5080": 16, "RTX 5090": 32,
    "RX 7900 XTX": 24, "RX 7900 XT": 20, "MI300X": 192,
}


@pytest.mark.parametrize("name,gb", sorted(OWNED.items()))
def test_the_cards_people_own_are_listed_with_their_memory(name, gb):
    card = find_card(name)
    assert card.name == name and card.nominal_gb == gb
    assert card.total_bytes == gb * GiB - gpus.DRIVER_RESERVED


def test_every_line_is_complete_and_cited():
    names = [c.name for c in CARDS]
    assert len(names) == len(set(names))
    for c in CARDS:
        assert c.nominal_gb > 0 and c.bandwidth_gb_s > 0 and c.tflops > 0, c.name
        assert c.pcie in PCIE and c.arch in ARCHS and c.source in SOURCES, c.name
        assert c.vendor == ARCHS[c.arch]["vendor"]


def test_published_figures_of_some_lines():
    """Spot checks against the vendors' own figures (gpus.SOURCES)."""
    xtx, xt, mi = find_card("RX 7900 XTX"), find_card("RX 7900 XT"), find_card("MI300X")
    assert (xtx.bandwidth_gb_s, xtx.tflops, xtx.pcie) == (960, 122.8, "4.0x16")
    assert (xt.bandwidth_gb_s, xt.tflops) == (800, 103.0)
    assert (mi.bandwidth_gb_s, mi.tflops, mi.pcie) == (5300, 1307.4, "5.0x16")
    assert (find_card("RTX 3090").bandwidth_gb_s, find_card("RTX 3090").tflops) == (936, 71.0)
    assert (find_card("RTX 5090").bandwidth_gb_s, find_card("RTX 5090").tflops) == (1792, 209.5)
    assert find_card("RTX 2080 Ti").tflops == 53.8 and find_card("RTX 2080 Ti").pcie == "3.0x16"


def test_architecture_decides_what_comfyui_does():
    """fp8 compute only on NVIDIA sm 8.9+ (model_management.supports_fp8_compute returns False for
    any non-NVIDIA device); bf16 from Ampere and on RDNA3/CDNA3; Pascal flagged."""
    for name in ("RX 7900 XTX", "RX 7900 XT", "MI300X"):
        c = find_card(name)
        assert c.vendor == "AMD" and not c.fp8_compute and c.bf16 and not c.pascal
    assert not find_card("RTX 3090").fp8_compute and find_card("RTX 3090").bf16
    assert not find_card("RTX 2080").bf16 and not find_card("RTX 2080").fp8_compute
    assert find_card("RTX 4070").fp8_compute and find_card("RTX 5070").fp8_compute and find_card("H100").fp8_compute
    assert find_card("GTX 1070").pascal


@pytest.mark.parametrize("device_name,card", [
    ("NVIDIA GeForce RTX 5070 Ti", "RTX 5070 Ti"),  # not the shorter "RTX 5070"
    ("NVIDIA GeForce RTX 5070", "RTX 5070"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", "RTX 4070 Ti Super"),
    ("NVIDIA GeForce RTX 4070 Ti", "RTX 4070 Ti"),
    ("NVIDIA GeForce RTX 4080 SUPER", "RTX 4080 Super"),
    ("NVIDIA GeForce RTX 2080", "RTX 2080"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"),
    ("4060 ti 8gb", "RTX 4060 Ti 8GB"),
    ("AMD Radeon RX 7900 XTX", "RX 7900 XTX"),  # torch.cuda.get_device_name on ROCm
    ("AMD Radeon RX 7900 XT", "RX 7900 XT"),
    ("AMD Instinct MI300X", "MI300X"),
])
def test_live_device_names_find_their_card(device_name, card):
    assert find_card(device_name).name == card


@pytest.mark.parametrize("device_name,gb,card", [
    ("NVIDIA GeForce RTX 4060 Ti", 16, "RTX 4060 Ti 16GB"),  # the driver's name does not say: the measured size does
    ("NVIDIA GeForce RTX 4060 Ti", 8, "RTX 4060 Ti 8GB"),
    ("NVIDIA A100-SXM4-80GB", 80, "A100 80GB"),
    ("NVIDIA A100-PCIE-40GB", 40, "A100 40GB"),
    ("NVIDIA H100 80GB HBM3", 80, "H100"),
    ("NVIDIA H100 PCIe", 80, "H100 PCIe"),
    ("NVIDIA RTX 6000 Ada Generation", 48, "RTX 6000 Ada"),
    ("Tesla T4", 16, "T4"),
    ("NVIDIA GeForce RTX 3060 Laptop GPU", 6, "RTX 3060 Laptop"),
    ("NVIDIA GeForce RTX 4090 D", 24, "RTX 4090 D"),
])
def test_a_live_name_with_its_measured_size_finds_one_card(device_name, gb, card):
    assert find_card(device_name, nominal_gb=gb).name == card


# Issue 31: the cards people type. Each resolves to one card, or the answer names the candidates.
ISSUE31_NAMES = {
    "RTX 3080 Ti": "RTX 3080 Ti", "T4": "T4", "RTX 2060": "RTX 2060", "RTX 3050": "RTX 3050",
    "GTX 1080 Ti": "GTX 1080 Ti", "RTX 5060": "RTX 5060", "RTX A4000": "RTX A4000", "RTX 3080": "RTX 3080",
    "GTX 1050 Ti": "GTX 1050 Ti", "GTX 1660 Super": "GTX 1660 Super", "RTX 2070 Super": "RTX 2070 Super",
    "RTX 4090 D": "RTX 4090 D", "RTX 5090": "RTX 5090", "RTX 4070 Laptop": "RTX 4070 Laptop",
    "RTX 5090 Laptop GPU": "RTX 5090 Laptop", "RTX 2000 Ada": "RTX 2000 Ada", "RTX PRO 6000": "RTX PRO 6000",
    "L4": "L4", "A10": "A10", "A100 80GB": "A100 80GB", "H100": "H100", "H200": "H200", "B200": "B200",
    "RX 6800 XT": "RX 6800 XT", "RX 7600": "RX 7600", "RX 9070 XT": "RX 9070 XT", "MI300X": "MI300X",
    "Radeon 8060S": "Radeon 8060S", "Ryzen AI Max+ 395": "Radeon 8060S", "V100 32GB": "V100 32GB",
}
ASKED = {"RTX 4060 Ti": {"RTX 4060 Ti 8GB", "RTX 4060 Ti 16GB"}, "RTX 5060 Ti": {"RTX 5060 Ti 8GB", "RTX 5060 Ti 16GB"},
         "A100": {"A100 40GB", "A100 80GB"}, "V100": {"V100 16GB", "V100 32GB"},
         "RX 9060 XT": {"RX 9060 XT 8GB", "RX 9060 XT 16GB"}}


@pytest.mark.parametrize("typed,card", sorted(ISSUE31_NAMES.items()))
def test_the_cards_people_type_resolve(typed, card):
    assert find_card(typed).name == card


@pytest.mark.parametrize("typed,options", sorted((k, sorted(v)) for k, v in ASKED.items()))
def test_a_name_several_cards_share_is_asked_about_never_guessed(typed, options):
    with pytest.raises(VramBudgetError) as err:
        find_card(typed)
    assert all(o in str(err.value) for o in options) and "say which" in str(err.value)


@pytest.mark.parametrize("typo,meant", [("RTX 3080 Tie", "RTX 3080 Ti"), ("RTX 4090 32GB", "RTX 4090"),
                                        ("RTX 40900", "RTX 4090")])
def test_a_near_miss_is_answered_with_the_candidates(typo, meant):
    with pytest.raises(VramBudgetError) as err:
        find_card(typo)
    assert repr(meant) in str(err.value) or f"{meant} (" in str(err.value)


def test_a_laptop_gpu_is_never_the_desktop_card():
    assert find_card("RTX 4070 Laptop").nominal_gb == 8 and find_card("RTX 4070").nominal_gb == 12
    with pytest.raises(VramBudgetError):
        find_card("RTX 4060 Ti Laptop")


def test_every_catalogue_line_is_whole_and_sourced():
    from vram_budget.nodes.estimator.machine.gpus import ARCHS, CARDS, SOURCES
    names = [c.name for c in CARDS]
    assert len(names) == len(set(names)) and len(CARDS) >= 100
    for c in CARDS:
        assert c.arch in ARCHS and c.source in SOURCES and c.tflops > 0 and c.bandwidth_gb_s > 0, c.name
        assert find_card(c.name) is c, c.name  # every card finds itself by its own name


def test_a_new_card_is_one_line():
    line = ("RTX 9999", 64, 4000, 500.0, "5.0x16", "blackwell", "nv-spec", ("9999",))
    price = ("RTX 9999", 2.5, "2027-01-01", "a test price list")
    (card,) = build_catalogue((line,), (price,))
    assert (card.name, card.nominal_gb, card.bandwidth_gb_s, card.tflops) == ("RTX 9999", 64, 4000, 500.0)
    assert card.fp8_compute and card.rental and card.price_eur_h == 2.5 and card.price_as_of == "2027-01-01"


# --- rental cards and prices ------------------------------------------------------------------
def test_rental_cards_carry_the_facts_prices_with_date_and_source():
    # shared/FACTS.md "Cards": RTX 4090 €0.59 · RTX 5090 €0.76 · L40S €1.06 · H100 €3.90; H200, B200 unpriced
    assert RENTAL_LINEUP == ("RTX 4090", "RTX 5090", "L40S", "H100", "H200", "B200")
    prices = {n: find_card(n).price_eur_h for n in RENTAL_LINEUP}
    assert prices == {"RTX 4090": 0.59, "RTX 5090": 0.76, "L40S": 1.06, "H100": 3.90, "H200": None, "B200": None}
    for name in RENTAL_LINEUP:
        card = find_card(name)
        assert card.rental and "FACTS.md" in card.price_source
        if card.price_eur_h is not None:
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", card.price_as_of)
    assert not any(c.rental for c in CARDS if c.name not in RENTAL_LINEUP)
    assert all(c.price_eur_h is None for c in CARDS if not c.rental)


def test_cheapest_card_that_fits_is_none_when_the_own_card_holds_it():
    need = 20 * GiB
    assert cheapest_card_that_fits(need).name == "RTX 4090"
    assert cheapest_card_that_fits(need, own_bytes=find_card("RTX 3090").total_bytes) is None
    assert cheapest_card_that_fits(need, own_bytes=find_card("RTX 4070").total_bytes).name == "RTX 4090"
    assert cheapest_card_that_fits(60 * GiB, own_bytes=find_card("RTX 5090").total_bytes).name == "H100"


# --- the rule in the estimate, the report and the JSON ------------------------------------------
def sdxl_prompt(batch: int = 1, size: int = 1024) -> dict:
    """ComfyUI's default SDXL text-to-image prompt (API format)."""
    return {
        "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd_xl_base_1.0.safetensors"}},
        "5": {"class_type": "EmptyLatentImage", "inputs": {"width": size, "height": size, "batch_size": batch}},
        "6": {"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse at dusk", "clip": ["4", 1]}},
        "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["4", 1]}},
        "3": {"class_type": "KSampler", "inputs": {
            "seed": 1, "steps": 25, "cfg": 7.0, "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0,
            "model": ["4", 0], "positive": ["6", 0], "negative": ["7", 0], "latent_image": ["5", 0]}},
        "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["4", 2]}},
        "9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "x", "images": ["8", 0]}},
    }


def on(card: str) -> Device:
    return Device.from_card(find_card(card))


@pytest.mark.parametrize("card", ["RTX 3090", "RTX 4090", "RX 7900 XTX", "RTX 4080"])
def test_no_rental_suggested_for_a_workflow_that_fits_the_own_card(card):
    budget = estimate_prompt(sdxl_prompt(), on(card))
    assert budget.outcome == "fits" and budget.verdict in ("fits", "tight")
    assert budget.cheapest_card is None and budget.cheapest_card_with_margin is None
    data = json.loads(budget.to_json())
    assert "cheapest_card" in data and data["cheapest_card"] is None  # the field stays (public JSON)
    assert data["cheapest_card_with_margin"] is None
    text = format_report(budget)
    assert "rental" not in text.lower() and "No single card" not in text
    assert not any(r.kind == "bigger_card" for r in budget.remedies)
    assert advice.cheapest(budget) is None


def test_a_workflow_that_does_not_fit_still_gets_the_cheapest_rental():
    budget = estimate_prompt(sdxl_prompt(batch=8, size=1536), on("RTX 4060 Ti 8GB"))
    assert budget.outcome != "fits"
    card = budget.cheapest_card
    assert card is not None and card.rental and card.total_bytes > find_card("RTX 4060 Ti 8GB").total_bytes
    assert f"Cheapest rental card that fits as is: {card.name}" in format_report(budget)
    resident = estimate_prompt(sdxl_prompt(batch=8, size=1536), on(card.name))
    assert resident.outcome == "fits"  # "fits as is" is what ComfyUI does there


@pytest.mark.parametrize("name,card", [("RTX 4070 Laptop", "RTX 4070 Laptop"),
                                       ("NVIDIA GeForce RTX 4090 Laptop GPU", "RTX 4090 Laptop"),
                                       ("RTX 3060 Max-Q", "RTX 3060 Laptop"), ("RTX 3080 Mobile 16GB", "RTX 3080 Laptop 16GB")])
def test_a_laptop_gpu_is_never_the_desktop_card_of_the_same_number(name, card):
    assert find_card(name).name == card and "Laptop" in card


def test_the_laptop_cards_the_catalogue_has_are_found():
    assert find_card("RTX 4060 Laptop").name == "RTX 4060 Laptop"
    assert find_card("NVIDIA GeForce RTX 4060 Laptop GPU").name == "RTX 4060 Laptop"
