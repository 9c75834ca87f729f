"""PixelDiT (ComfyUI 0.33.0's PixelDiTT2I) and PiD, the Pixel Diffusion Decoder built on it (PiD): pixel-space
DiTs on 16x16 RGB patches, conditioned on Gemma 2 2B; PiD adds a low-resolution latent (from any VAE family)
injected into the patch stream, and decodes / upscales it to pixels (e.g. a Flux latent at 1024 px -> 4096 px).

Sources, ComfyUI 0.33.0:
- comfy/model_detection.py:528-572 (PiD: key `lq_proj.latent_proj.0.weight`, tested before PixelDiT), :573-574
  (PixelDiT: key `core.pixel_embedder.proj.weight`).
- comfy/supported_models.py:1242-1292 (PixelDiTT2I: latent_formats.PixelDiTPixel, pixel space; memory_usage_factor
  0.04 at :1254; bf16 / fp32), :1294-1306 (PiD(PixelDiTT2I): memory_usage_factor 0.04 at :1303).
- comfy/ldm/pixeldit/model.py:120-140 (PixDiT_T2I defaults: hidden 1536, 24 heads (64 wide), 14 patch blocks,
  patch 16, 2 pixel blocks of 16 per pixel, Gemma 2 context 2304, txt_max_length 300), :81-91 (MMDiTBlockT2I:
  mlp_ratio 4 through FeedForwardSwiGLU, which keeps 2/3 of it: comfy/ldm/hidream/model.py:225, multiple_of 1 ->
  4096); comfy/ldm/pixeldit/pid.py:156-200 (PidNet(PixDiT_T2I): the LQ projection, no extra tokens).
- comfy/text_encoders/pixeldit.py:45 (_PIXELDIT_MAX_LENGTH 300: the prompt is padded to 300 Gemma tokens).

Working memory: traced with ComfyUI 0.33.0's own model code at full size (bench/trace_working_memory.py _arches_033, data/working_memory.json "pixeldit":
model_detection.py:573-574, model_base.py:1563-1573, 300 Gemma tokens; "pid": PidNet's defaults, pid.py:159-200,
lq_latent from nodes_pid.py:33-50), 6 points each, fits within 0.001 %: the pixel-level blocks are in the trace.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, Found, _r

# Before Flux.2 (ORDER 100), Flux.1 (110) and SD3 (140): PiD's published names carry the latent family they
# decode ("pid_flux1_...", "pid_flux2_...", "pid_sd3_..."), which those modules' rules would otherwise take.
ORDER = 99

# The published bf16 files / 2 bytes a parameter (data/template_models.json):
# Comfy-Org/PixelDiT diffusion_models/pixeldit_1300m_1024px_bf16.safetensors 2,609,192,632 bytes (the name: 1300M)
P_PIXELDIT = 2_609_192_632 // 2
# pid_{flux1,flux2,sd3}_{512_to_2048,1024_to_4096}_4step_bf16.safetensors: 2,727,304,233 bytes each
P_PID = 2_727_304_233 // 2

_PIXDIT = dict(hidden_size=1536, depth=14, heads=24, head_dim=64, ffn_dim=4096, in_channels=3, out_channels=3,
               patch_size=(16, 16), context_dim=2304, latent_channels=3, spatial_compression=1)
# (and 2 pixel-level blocks 16 wide per pixel, model.py:124-129: not arch numbers the formula reads)

FAMILIES = {
    "pixeldit": Family(DIFFUSION, "PixelDiT (1.3B, pixel space)", dict(_PIXDIT)),
    "pid": Family(DIFFUSION, "PiD pixel diffusion decoder (1.4B, pixel space)", dict(_PIXDIT)),
}

# supported_models.py:1254 and :1303 (0.33.0)
MEMORY_USAGE_FACTOR = {"pixeldit": 0.04, "pid": 0.04}

# text_encoders/pixeldit.py:45: padded to 300 tokens (model.py: txt_max_length 300)
TEXT_TOKENS = {"pixeldit": 300, "pid": 300}

NAME_RULES = {
    DIFFUSION: (
        _r(r"(?<![a-z0-9])pid[_-]", "pid", "PiD pixel diffusion decoder (1.4B, pixel space)", P_PID,
           "catalogue P_PID (the published bf16 file / 2)"),
        _r(r"pixel[_-]?dit", "pixeldit", "PixelDiT (1.3B, pixel space)", P_PIXELDIT,
           "catalogue P_PIXELDIT (the published bf16 file / 2)"),
    ),
}


def _arch_from(v, prefix: str, family: str) -> dict:
    arch = dict(FAMILIES[family].arch)
    s = v.shape(prefix + "s_embedder.proj.weight")
    if s and len(s) == 2:
        arch.update(hidden_size=int(s[0]), heads=max(1, int(s[0]) // 64))
    depth = v.count_blocks(prefix + "patch_blocks.")
    if depth:
        arch["depth"] = depth
    return arch


def _detect(v) -> Found | None:
    """model_detection.py:529 (PiD, first) and :573 (PixelDiT): the config is the class defaults; the patch
    embedder gives the width and the patch blocks the depth."""
    if v.has("lq_proj.latent_proj.0.weight"):
        return Found("pid", _arch_from(v, "", "pid"),
                     ("key lq_proj.latent_proj.0.weight (PiD, model_detection.py:529)",))
    for prefix in ("core.", "net.", ""):
        if v.has(prefix + "pixel_embedder.proj.weight") and v.has(prefix + "s_embedder.proj.weight"):
            return Found("pixeldit", _arch_from(v, prefix, "pixeldit"),
                         (f"key {prefix}pixel_embedder.proj.weight (PixelDiT, model_detection.py:573)",))
    return None


DETECT = {DIFFUSION: (_detect,)}
