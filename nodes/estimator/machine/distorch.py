"""DisTorch2 allocation strings (ComfyUI-MultiGPU `expert_mode_allocations`, bytes form), written so that a
model too big for one card keeps as much of its weights as fits on each device and the rest in RAM.

The grammar, as ComfyUI-MultiGPU's distorch_2.py reads it:
- analyze_safetensor_loading (distorch_2.py:355-378, the test at :375): the string before '#' is the
  expert allocation; one that contains any of the letters g, m, k, b is the bytes form
  (calculate_fraction_from_byte_expert_string), one with '%' the ratio form, anything else fractions of
  each device's total memory. So every value written here carries a unit letter ("cuda" and "cpu" contain
  none of them).
- calculate_fraction_from_byte_expert_string (distorch_2.py:597-654): entries split on ';', each
  "device,value" split on the first ','; a value containing '*' makes that device the wildcard (default
  "cpu") that takes whatever is left; the others are taken in the order written, each getting
  min(value, what is left of the model).
- parse_memory_string (distorch_2.py:578-595): r'(\\d+\\.?\\d*)\\s*([gmkb]?)' on the lowercased value;
  g = 1024**3, m = 1024**2, k = 1024, b or nothing = bytes ("14.2gb" is 14.2 GiB).
The compute device (`compute_device` widget) runs the model; weights on the other devices are fetched
from them block by block at every step (a donor GPU over PCIe / NVLink, the CPU over PCIe).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

GIB = 1024**3


def _hundredths(nbytes: int, up: bool = False) -> int:
    """nbytes in hundredths of a GiB, rounded down (up)."""
    n = max(0, int(nbytes)) * 100
    return -(-n // GIB) if up else n // GIB


def _read_back(hundredths: int) -> int:
    """What parse_memory_string reads from the text written for `hundredths` (float GiB × 1024**3)."""
    return int(float(_text(hundredths)[:-2]) * GIB)


def _text(hundredths: int) -> str:
    return f"{hundredths // 100}.{hundredths % 100:02d}".rstrip("0").rstrip(".") + "gb"


@dataclass(frozen=True)
class Allocation:
    text: str  # the expert_mode_allocations value, e.g. "cuda:0,14.2gb;cuda:1,6gb;cpu,*"
    shares: tuple[tuple[str, int], ...]  # bytes of the model per device as DisTorch2 will assign them
    rest_device: str  # the wildcard device that takes the remainder
    rest_bytes: int  # what is left for it (0: everything fits on the GPUs)

    def to_dict(self) -> dict:
        return {"expert_mode_allocations": self.text, "shares": dict(self.shares),
                "rest_device": self.rest_device, "rest_bytes": self.rest_bytes}


def gib_text(nbytes: int) -> str:
    """Bytes -> the shortest 'N.NNgb' DisTorch2 parses back to at most nbytes (rounded down to 0.01 GiB)."""
    return _text(_hundredths(nbytes))


def write_allocation(model_bytes: int, rooms: Sequence[tuple[str, int]], rest_device: str = "cpu") -> Allocation:
    """The bytes-form allocation for a model of `model_bytes` over `rooms` = [(device, bytes free for its
    weights)], compute device first: each device in turn gets as much as fits (never more than what is left
    of the model), the `rest_device` (the CPU) the remainder."""
    if model_bytes < 0 or not math.isfinite(model_bytes):
        raise ValueError(f"model size {model_bytes!r}: give a byte count")
    left = int(model_bytes)
    parts, shares = [], []
    for device, room in rooms:
        if left <= 0:
            break
        if "," in device or ";" in device or "*" in device or device == rest_device:
            raise ValueError(f"device {device!r} cannot be written in an allocation string")
        if int(room) >= left:  # the whole remainder fits: ask for it rounded up, DisTorch2 takes min(ask, left)
            granted, text = left, _text(_hundredths(left, up=True))
        else:  # rounded down, so the device never gets more than its room
            h = _hundredths(room)
            granted, text = min(_read_back(h), left), _text(h)
        if granted <= 0:
            continue
        parts.append(f"{device},{text}")
        shares.append((device, granted))
        left -= granted
    parts.append(f"{rest_device},*")
    return Allocation(";".join(parts), tuple(shares), rest_device, max(0, left))


_UNITS = {"g": GIB, "m": 1024**2, "k": 1024, "b": 1, "": 1}


def _amount(value: str) -> float | None:
    """A bytes-form value as parse_memory_string reads it: a number, then an optional g / m / k / b."""
    v = value.strip().lower()
    number = ""
    for ch in v:
        if ch.isdecimal() or (ch == "." and "." not in number and number):
            number += ch
        else:
            break
    if not number:
        return None
    unit = v[len(number):].strip()[:1]
    return float(number) * _UNITS.get(unit if unit in _UNITS else "", 1)


def read_allocation(text: str, model_bytes: int, total_bytes_of=None) -> dict[str, float] | None:
    """What an `expert_mode_allocations` string gives each device of a model of `model_bytes`, by the
    rules in this module's doc (bytes form, ratio form '%', else fractions of each device's total memory,
    which need `total_bytes_of(device)`); None when it cannot be read."""
    alloc = (text or "").split("#", 1)[0].strip()
    entries = [e.split(",", 1) for e in alloc.split(";") if "," in e]
    if not entries:
        return None
    lowered = alloc.lower()
    shares: dict[str, float] = {}
    if any(c in lowered for c in "gmkb"):
        left, wildcard = float(model_bytes), "cpu"
        for device, value in entries:
            device = device.strip()
            if "*" in value:
                wildcard = device
                continue
            amount = _amount(value)
            if amount is None:
                return None
            take = min(amount, left)
            if take > 0:
                shares[device] = take
                left -= take
            if left <= 0:
                break
        if left > 0:
            shares[wildcard] = shares.get(wildcard, 0.0) + left
        return shares
    if "%" in alloc:
        try:
            ratios = {d.strip(): float(v.replace("%", "").strip()) for d, v in entries}
        except ValueError:
            return None
        total = sum(ratios.values())
        return {d: r / total * model_bytes for d, r in ratios.items()} if total > 0 else None
    if total_bytes_of is None:
        return None
    try:
        out = {}
        for d, v in entries:
            size = total_bytes_of(d.strip())
            if size is not None:
                out[d.strip()] = float(v) * size
        return out
    except ValueError:
        return None
