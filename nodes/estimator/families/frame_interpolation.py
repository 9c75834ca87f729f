"""Frame interpolation models (ComfyUI 0.33.0: comfy_extras/nodes_frame_interpolation.py,
comfy_extras/frame_interpolation_models/film_net.py and ifnet.py), loaded by FrameInterpolationModelLoader from
models/frame_interpolation.

- Detection (nodes_frame_interpolation.py:47-71): ``extract.extract_sublevels.convs.0.0.conv.weight`` -> FILMNet()
  at its defaults (film_net.py:188-200); otherwise RIFE's IFNet with head_ch / channels read from the file
  (detect_rife_config, ifnet.py:122-131). The model is cast to fp16 where the GPU does fp16 (:38-39).
- Sizes (full-size builds, bench/trace_vision.py param_bytes at fp16): FILMNet 68,873,334 bytes = 65.7 MiB, the
  published film_net_fp16.safetensors' "65.7 MB" (binary units); IFNet at its defaults (head_ch 4, channels
  192 / 128 / 96 / 64 / 32: the standard RIFE 4.25 / 4.26) 11,329,552 bytes. A "heavy" / "lite" RIFE file has other
  channels (read from the file by ComfyUI): its size comes from the file and its working memory is not priced here.

Working memory (FrameInterpolate.execute, :94-187): ComfyUI asks for memory_used_forward (FILM 1700, RIFE 300 x H x W
x 2 bytes, film_net.py:202-203 / ifnet.py:77-78) when it loads the model (:104-105), then runs pair after pair
with a feature cache; every result goes to a CPU buffer (:127, the intermediate device). TRACED with ComfyUI
0.33.0's own code (bench/trace_vision.py ``film@WxH*P:M`` / ``rife@...``, 2026-12-03: full size, fp16, fake CUDA
tensors, the node's loop line by line for 2 pairs, host tensors not counted):
- FILM (forward_multi_timestep, all timesteps from one flow): FILM_PER_PIXEL bytes a frame pixel + FILM_FIXED, plus
  12 bytes a pixel for each timestep beyond the first (multiplier - 2): fit of 640x360 .. 1920x1080, within 0.02 %;
- RIFE (one batched forward of multiplier - 1 timesteps, frames padded to 64, ifnet.py:71):
  (36 + 228 x timesteps) bytes a padded pixel + 8 + 2 x timesteps, exact at every traced point. On OOM ComfyUI halves that batch
  down to 1 (:171-176).
"""
from __future__ import annotations

import re

from ._spec import DIFFUSION, Family, _r

ORDER = 175  # "film_net" / "rife" share no pattern with another family's name rules

P_FILM = 68_873_334 // 2  # FILMNet() parameters + buffers (fp16 bytes / 2)
P_RIFE = 11_329_552 // 2  # IFNet() at its defaults

TRACE_SOURCE = ("traced with bench/trace_vision.py on 2026-12-03: ComfyUI 0.33.0's {model}, full size, fp16, fake "
                "CUDA tensors, FrameInterpolate's GPU loop (nodes_frame_interpolation.py:94-187)")
# (width, height, multiplier) -> traced peak bytes, 2 pairs
FILM_TRACE = {
    (640, 360, 2): 638_624_936, (1280, 720, 2): 2_555_486_676, (1920, 1080, 2): 5_749_081_008,
    (1000, 600, 2): 1_663_065_796, (1280, 720, 3): 2_566_545_880, (1280, 720, 4): 2_577_605_084,
    (1280, 720, 8): 2_621_841_900, (1000, 600, 3): 1_670_265_800,
}
RIFE_TRACE = {
    (640, 360, 2): 64_880_650, (1280, 720, 2): 259_522_570, (1920, 1080, 2): 551_485_450, (1000, 600, 2): 173_015_050,
    (1280, 720, 3): 483_655_692, (1280, 720, 4): 707_788_814, (1280, 720, 8): 1_604_321_302,
    (1000, 600, 4): 471_859_214,
}
FILM_PER_PIXEL, FILM_FIXED = 2772.65, -198_082  # least squares over FILM_TRACE's multiplier-2 points
FILM_PER_PIXEL_PER_EXTRA_TIMESTEP = 12
RIFE_PAD = 64  # ifnet.py:71 pad_align
RIFE_BASE_PER_PIXEL, RIFE_PER_TIMESTEP_PER_PIXEL = 36, 228
RIFE_FIXED, RIFE_FIXED_PER_TIMESTEP = 8, 2  # the fp16 timestep values (nodes_frame_interpolation.py:133)

# ComfyUI's own request when it loads the model (bytes a pixel x dtype size): film_net.py:202-203, ifnet.py:77-78
COMFY_MEMORY_USED_FORWARD = {"film": 1700, "rife": 300}

FAMILIES = {
    # no hidden_size on purpose: the DiT formula must never price a flow CNN (its working memory is the trace)
    # fixed_precision: the loader casts it to fp16 / fp32 itself (:38-39): no lower-precision file or option
    "film": Family(DIFFUSION, "FILM frame interpolation", dict(pad_align=1, fixed_precision=True)),
    "rife": Family(DIFFUSION, "RIFE frame interpolation (IFNet)", dict(pad_align=RIFE_PAD, fixed_precision=True)),
}

# the file-name patterns of the two models (what ComfyUI tells apart by the keys, nodes_frame_interpolation.py:47-71)
FILM_PATTERN, RIFE_PATTERN, RIFE_OTHER_CHANNELS = r"film[_-]?net", r"rife", r"heavy|lite"

NAME_RULES = {
    DIFFUSION: (
        _r(FILM_PATTERN, "film", "FILM frame interpolation", P_FILM,
           "FILMNet() at its defaults: 68,873,334 bytes at fp16 (families/frame_interpolation.py)"),
        _r(RIFE_PATTERN, "rife", "RIFE frame interpolation (IFNet)", P_RIFE,
           "IFNet() at its defaults (head 4, channels 192/128/96/64/32): 11,329,552 bytes at fp16 "
           "(families/frame_interpolation.py)"),
    ),
}


def family_of(name: str) -> tuple[str | None, str]:
    """film / rife from a file name (the NAME_RULES patterns), or None and why it is not priced."""
    n = (name or "").lower()
    if re.search(FILM_PATTERN, n):
        return "film", ""
    if re.search(RIFE_PATTERN, n):
        if re.search(RIFE_OTHER_CHANNELS, n):
            return None, ("a RIFE 'heavy' / 'lite' file: its IFNet channels (read from the file, ifnet.py:122-131) "
                          "are not the traced defaults")
        return "rife", ""
    return None, (f"which model '{name}' is (FILM or RIFE: ComfyUI reads it from the keys, "
                  "nodes_frame_interpolation.py:47-71) is not known from its name")


def padded(n: int, align: int) -> int:
    return -(-int(n) // align) * align if align > 1 else int(n)


def peak(family: str, width: int, height: int, multiplier: int = 2, timesteps_batch: int | None = None) -> int:
    """FrameInterpolate's traced GPU peak for frames of width x height at ``multiplier`` (RIFE: ``timesteps_batch``
    timesteps a forward, default multiplier - 1, the node's first try)."""
    m = max(2, int(multiplier))
    if family == "film":
        px = int(width) * int(height)
        return int(FILM_PER_PIXEL * px) + FILM_FIXED + FILM_PER_PIXEL_PER_EXTRA_TIMESTEP * px * (m - 2)
    b = max(1, int(timesteps_batch if timesteps_batch is not None else m - 1))
    px = padded(width, RIFE_PAD) * padded(height, RIFE_PAD)
    return (RIFE_BASE_PER_PIXEL + RIFE_PER_TIMESTEP_PER_PIXEL * b) * px + RIFE_FIXED + RIFE_FIXED_PER_TIMESTEP * b


def comfy_request(family: str, width: int, height: int, dtype_bytes: int = 2) -> int:
    """memory_used_forward: what ComfyUI frees for the forward when it loads the model (:104-105)."""
    return COMFY_MEMORY_USED_FORWARD[family] * int(width) * int(height) * dtype_bytes
