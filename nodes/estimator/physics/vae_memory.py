"""VAE decode / encode working memory, and the auto-tiling planner. Pure Python (no torch).

What it answers
- ``vae_decode_bytes(family, latent, tile=None, ...)``: bytes a decode needs on the device ON TOP
  of the VAE weights (activations, the output while it is on the device, attention logsumexp).
- ``vae_encode_bytes(family, pixels, tile=None, ...)``: the same for encode.
- ``plan_decode(family, latent, free_bytes, margin, dtype_bytes, mode)`` -> ``DecodePlan``: decode
  in one go when it fits, else the tiles (rows x columns x latent frames) with the SHORTEST
  predicted time whose peak fits the budget, run in one pass of ComfyUI's own tiler
  (``comfy.utils.tiled_scale_multidim``; docs/derivations.md, "Decode tiles"). ``plan_encode``: the largest
  square tile that fits, for ComfyUI's ``VAE.encode_tiled``.
- ``vae_weights_bytes(family, dtype_bytes)``: parameter count x dtype (fallback only; real files
  are read by files.py).

The derivation, rule by rule with its sources: docs/derivations.md,
"physics/vae_memory.py: VAE working memory and tiles"."""
from __future__ import annotations

import contextvars
import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..errors import PlanError, VramBudgetError
from ..families import registry
from ..families._spec import VaeFamily
from ..units import fmt_gib

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "vae_memory.json"

# Planner headroom on top of the traced peak: allocator rounding (CUDA blocks of 512 B / 2 MiB
# segments), fragmentation between tiles of different sizes and cuDNN conv workspaces, none of
# which a meta-device trace sees. A judgement, not a measurement (no GPU in the tracing session):
# revisit with `torch.cuda.max_memory_reserved()` on a real card.
HEADROOM = 0.10

# Smallest spatial tile the planner proposes, in output pixels (16 latent px for 8x VAEs, 8 for
# Wan 2.2's 16x): below it the overlap is most of the tile and the seams show.
MIN_TILE_PX = 128
# Tile sizes step by this many output pixels (8 latent px for 8x VAEs; ComfyUI's 2-D tiler halves
# and doubles the tile for two of its three passes, so latent tiles stay even).
TILE_STEP_PX = 64


# Overlap between decode tiles, output pixels (VAEDecodeTiled's default; ComfyUI's 3-D fallback:
# 256 px tiles with tile // 4). One figure for every tile size: measured on the Flux VAE (CPU, 384 px
# image), one pass with a 64 px overlap scored 42.7-43.7 dB PSNR against one go, 32 px 39.4-40.0 dB,
# ComfyUI's three passes of 192 px tiles with a 24 px overlap 39.2 dB.
OVERLAP_PX = 64
# Fixed cost of one decoder call in the time model, as output pixels decoded in the same time.
# A judgement for GPUs (a few hundred kernel launches plus a poorly filled card for small tiles,
# ~5-10 ms, about a 128x128 px decode on a 4090-class card; not measured: no GPU here). On the CPU
# it is ~0: bench_vae_decode.py, Flux VAE 512 px in 6 tiles took 1.403x the one-go time, the
# decoded-area ratio is 1.406x. It leans the choice towards fewer, larger tiles.
TILE_OVERHEAD_PX = 128 * 128
# Tile counts considered per axis (bounds the search for absurd sizes; the smallest tile is always tried)
MAX_AXIS_TILES = 64


def spatial_overlap(spatial: int, floor: int) -> int:
    """Overlap (latent px) between decode tiles: OVERLAP_PX, less than half the smallest tile (`floor`)."""
    return max(1, min(max(1, OVERLAP_PX // spatial), floor // 2))


def tile_grid(op: str, spatial: int) -> tuple[int, int]:
    """(step, floor) of spatial tile sizes in the op's units (latent px for decode, px for encode)."""
    if op == "decode":
        return max(2, TILE_STEP_PX // spatial), max(2, MIN_TILE_PX // spatial)
    # encode tiles are in pixels and must stay multiples of the compression
    step = max(spatial, (TILE_STEP_PX // spatial) * spatial)
    return step, max(MIN_TILE_PX, 2 * spatial)

MODES = ("auto", "force_tiled", "never_tiled")


# ----------------------------------------------------------------------------------------------
# Families: each family module's VAES / MEDIA_VAES / VAE_TRACED_AS (families/<group>.py), as one view.
# MEDIA_FAMILIES: audio and 3D VAEs, no pixels; their decode cost grows with the latent's length
# (bench/trace_vae_memory.py records it per family: "scales_with"). TRACED_AS: families whose decoder /
# encoder is another traced family's (bytes per pixel from that family's points; geometry their own).
FAMILIES: dict[str, VaeFamily] = registry.VAE_FAMILIES
MEDIA_FAMILIES = registry.MEDIA_VAES
TRACED_AS = registry.VAE_TRACED_AS


# Inside ComfyUI, the adapter can set a live tracer for VAEs the traced table does not know:
# (VAE file path, "decode" | "encode", shape) -> (working bytes, provenance) or None. Shapes: the latent
# [B, C, (T,) H, W] for decode, the pixels [B, 3, (T,) H, W] for encode.
LIVE_VAE_TRACER: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("vram_budget_live_vae_tracer",
                                                                                  default=None)


def get_family(vae_family: str) -> VaeFamily:
    try:
        return FAMILIES[vae_family]
    except KeyError:
        if not vae_family or vae_family == "unknown":  # the file's architecture was not recognised
            raise VramBudgetError("the VAE's architecture is not recognised, so its decode / encode memory has no "
                                  "measurement here (its weights are priced)") from None
        # the ids traced are listed by docs/working-memory.md, not in a message a user reads
        raise VramBudgetError(f"unknown VAE family '{vae_family}': no decode / encode memory traced for it") from None


# ----------------------------------------------------------------------------------------------
# Shapes
@dataclass(frozen=True)
class Shape:
    """(batch, frames | None, height, width) in the units of the op (latent for decode, pixels for encode)."""

    batch: int
    frames: int | None
    height: int
    width: int


def as_latent(latent: Any) -> Shape:
    """(batch, channels, frames | None, height, width), a 4-/5-D shape tuple, a Shape or a workload.LatentShape."""
    if isinstance(latent, Shape):
        return latent
    if hasattr(latent, "height") and hasattr(latent, "width") and hasattr(latent, "batch"):
        return Shape(int(latent.batch), None if latent.frames is None else int(latent.frames), int(latent.height), int(latent.width))
    dims = tuple(latent)
    if len(dims) == 5:
        b, _c, t, h, w = dims
        return Shape(int(b), None if t is None else int(t), int(h), int(w))
    if len(dims) == 4:
        b, _c, h, w = dims
        return Shape(int(b), None, int(h), int(w))
    raise VramBudgetError(f"latent shape must be (batch, channels, frames|None, height, width), got {dims!r}")


def as_pixels(pixels: Any) -> Shape:
    """(batch, frames | None, height, width) in pixels (or a Shape)."""
    if isinstance(pixels, Shape):
        return pixels
    dims = tuple(pixels)
    if len(dims) != 4:
        raise VramBudgetError(f"pixel shape must be (batch, frames|None, height, width), got {dims!r}")
    b, t, h, w = dims
    return Shape(int(b), None if t is None else int(t), int(h), int(w))


# ----------------------------------------------------------------------------------------------
# The traced model
@dataclass(frozen=True)
class PerPixelTable:
    """g(frames): working bytes per output pixel (decode) or input pixel (encode)."""

    points: tuple[tuple[int, float], ...]  # (frames, bytes per pixel), frames ascending; (0, g) for images

    def at(self, frames: int | None) -> float:
        pts = self.points
        f = 0 if frames is None else int(frames)
        if len(pts) == 1 or f <= pts[0][0]:
            return pts[0][1]
        for (f0, g0), (f1, g1) in zip(pts, pts[1:]):
            if f <= f1:
                return g0 + (g1 - g0) * (f - f0) / (f1 - f0)
        (f0, g0), (f1, g1) = pts[-2], pts[-1]
        slope = max(0.0, (g1 - g0) / (f1 - f0))
        return g1 + slope * (f - f1)


@dataclass(frozen=True)
class VaeMemoryModel:
    """Working-memory model of one VAE family under one ComfyUI profile."""

    family: VaeFamily
    decode: dict[int, PerPixelTable]  # dtype bytes -> table (frames in latent frames)
    encode: dict[int, PerPixelTable]  # dtype bytes -> table (frames in pixel frames)
    params: int = 0
    source: str = ""

    def per_pixel(self, op: str, dtype_bytes: int, frames: int | None) -> float:
        tables = self.decode if op == "decode" else self.encode
        if not tables:
            raise VramBudgetError(f"no traced {op} data for {self.family.id} ({self.source})")
        if dtype_bytes in tables:
            return tables[dtype_bytes].at(frames)
        # untraced dtype size: scale the nearest traced one (activations scale with the dtype)
        near = min(tables, key=lambda d: abs(d - dtype_bytes))
        return tables[near].at(frames) * dtype_bytes / near

    @classmethod
    def constant(cls, family: VaeFamily, decode_bytes_per_px: float, encode_bytes_per_px: float,
                 dtype_bytes: int, source: str) -> "VaeMemoryModel":
        """A flat model, e.g. from ComfyUI's own memory_used_decode for a VAE that was not traced."""
        return cls(family, {dtype_bytes: PerPixelTable(((0, float(decode_bytes_per_px)),))},
                   {dtype_bytes: PerPixelTable(((0, float(encode_bytes_per_px)),))}, 0, source)


def _version_key(version: str) -> tuple[int, ...]:
    out = []
    for part in str(version).split("."):
        digits = "".join(ch for ch in part if ch.isdecimal())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def _table(rows: Iterable[tuple[int, float]]) -> PerPixelTable:
    best: dict[int, float] = {}
    for frames, g in rows:
        best[frames] = max(best.get(frames, 0.0), g)
    pts, running = [], 0.0
    for frames in sorted(best):
        running = max(running, best[frames])  # more frames never need less memory
        pts.append((frames, running))
    return PerPixelTable(tuple(pts))


def _point_pixels(family: VaeFamily, point: dict) -> tuple[int | None, int]:
    """(frames, pixel count the cost is per) of a traced point."""
    shape = point["shape"]
    if point["op"] == "encode":  # pixels (B, 3, [F,] H, W)
        frames = shape[2] if len(shape) == 5 else None
        return frames, shape[0] * shape[-2] * shape[-1]
    frames = shape[2] if len(shape) == 5 else None
    return frames, shape[0] * shape[-2] * shape[-1] * family.spatial**2


@lru_cache(maxsize=1)
def _load_profiles() -> dict[str, dict]:
    if not DATA_FILE.is_file():
        raise VramBudgetError(f"{DATA_FILE}: VAE memory data missing (run bench/trace_vae_memory.py)")
    try:
        return json.loads(DATA_FILE.read_text())["profiles"]
    except (OSError, ValueError, KeyError) as exc:
        raise VramBudgetError(f"{DATA_FILE}: unreadable VAE memory data ({exc})") from exc


def profiles() -> tuple[str, ...]:
    """ComfyUI versions with traced data, oldest first."""
    return tuple(sorted(_load_profiles(), key=_version_key))


@lru_cache(maxsize=64)
def _model_for_profile(vae_family: str, version: str) -> VaeMemoryModel | None:
    family = get_family(vae_family)
    traced_id, why = TRACED_AS.get(vae_family, (vae_family, ""))
    traced = get_family(traced_id)
    prof = _load_profiles()[version]
    # families traced before the estimator knew them sit under pending_families until promoted
    entry = prof["families"].get(traced_id) or prof.get("pending_families", {}).get(traced_id)
    if not entry or not entry.get("points"):
        return None
    dec: dict[int, list] = {}
    enc: dict[int, list] = {}
    for p in entry["points"]:
        frames, px = _point_pixels(traced, p)
        rows = enc if p["op"] == "encode" else dec
        rows.setdefault(int(p["dtype_bytes"]), []).append((0 if frames is None else int(frames), p["peak_bytes"] / px))
    return VaeMemoryModel(
        family, {d: _table(r) for d, r in dec.items()}, {d: _table(r) for d, r in enc.items()},
        int(entry.get("params", 0)),
        f"traced on ComfyUI {version} (torch {prof.get('torch', '?')}, {prof.get('date', '?')})"
        + (f"; {traced.label}'s points ({why})" if why else ""))


def memory_model(vae_family: str | VaeMemoryModel, comfy_version: str | None = None) -> VaeMemoryModel:
    """The model for a family. comfy_version: the running ComfyUI's version picks the traced
    profile at or below it; None takes, per query, the largest prediction of all profiles."""
    if isinstance(vae_family, VaeMemoryModel):
        return vae_family
    family = get_family(vae_family)
    versions = profiles()
    if comfy_version is not None:
        below = [v for v in versions if _version_key(v) <= _version_key(comfy_version)] or [versions[0]]
        ordered = list(reversed(below)) + [v for v in reversed(versions) if v not in below]
        for v in ordered:  # nearest traced version that has this family
            model = _model_for_profile(family.id, v)
            if model is not None:
                return model
        raise VramBudgetError(f"no traced data for {family.id}")
    return _envelope_model(family.id)


@lru_cache(maxsize=16)
def _envelope_model(family_id: str) -> VaeMemoryModel:
    family = get_family(family_id)
    models = [m for v in profiles() if (m := _model_for_profile(family_id, v)) is not None]
    if not models:
        raise VramBudgetError(f"no traced data for {family_id}")
    return _envelope(family, models)


def _envelope(family: VaeFamily, models: Sequence[VaeMemoryModel]) -> VaeMemoryModel:
    if len(models) == 1:
        return models[0]

    def merge(tables: list[PerPixelTable]) -> PerPixelTable:
        frames = sorted({f for t in tables for f, _ in t.points})
        return _table((f, max(t.at(f) for t in tables)) for f in frames)

    dec: dict[int, PerPixelTable] = {}
    enc: dict[int, PerPixelTable] = {}
    for d in {d for m in models for d in m.decode}:
        dec[d] = merge([m.decode[d] for m in models if d in m.decode])
    for d in {d for m in models for d in m.encode}:
        enc[d] = merge([m.encode[d] for m in models if d in m.encode])
    return VaeMemoryModel(family, dec, enc, max(m.params for m in models),
                          "largest of " + "; ".join(m.source for m in models))


# ----------------------------------------------------------------------------------------------
# Bytes
def _tile_dims(tile: int | tuple[int, int] | None, height: int, width: int) -> tuple[int, int]:
    if tile is None:
        return height, width
    th, tw = (tile, tile) if isinstance(tile, int) else (int(tile[0]), int(tile[1]))
    if th <= 0 or tw <= 0:
        raise VramBudgetError(f"tile must be positive, got {tile!r}")
    return th, tw


def _passes_2d(th: int, tw: int) -> tuple[tuple[int, int], ...]:
    """(tile_h, tile_w) of ComfyUI's three 2-D passes (sd.py decode_tiled_ / encode_tiled_)."""
    return ((th * 2, max(1, tw // 2)), (max(1, th // 2), tw * 2), (th, tw))


def _peak(model: VaeMemoryModel, op: str, shape: Shape, dtype_bytes: int, tile, tile_t: int | None,
          passes: int = 3) -> int:
    fam = model.family
    px_per_unit = fam.spatial**2 if op == "decode" else 1
    if tile is None and tile_t is None:  # one call on the whole batch
        g = model.per_pixel(op, dtype_bytes, shape.frames)
        return math.ceil(shape.batch * shape.height * shape.width * px_per_unit * g)
    th, tw = _tile_dims(tile, shape.height, shape.width)
    # tiled: ComfyUI's tiler runs one batch item at a time (utils.tiled_scale_multidim)
    if shape.frames is None:
        tiles = _passes_2d(th, tw) if passes == 3 else ((th, tw),)
        area = max(min(h, shape.height) * min(w, shape.width) for h, w in tiles)
        frames = None
    else:
        area = min(th, shape.height) * min(tw, shape.width)
        frames = shape.frames if tile_t is None else min(int(tile_t), shape.frames)
    return math.ceil(area * px_per_unit * model.per_pixel(op, dtype_bytes, frames))


def media_decode_bytes(vae_family: str, latent_shape: tuple, dtype_bytes: int = 2) -> tuple[int, str]:
    """(working bytes, how) of an audio VAE decode: the traced peaks of batch-1 decodes at several lengths,
    interpolated piecewise-linearly in the latent's length (the last slope beyond the longest), times
    the batch (ComfyUI decodes the batch in one call). latent_shape: the latent's full shape."""
    label, axes, unit, batched = MEDIA_FAMILIES[vae_family]
    rows = []
    for version in reversed(profiles()):  # the newest profile that traced the family
        prof = _load_profiles()[version]
        entry = prof["families"].get(vae_family) or prof.get("pending_families", {}).get(vae_family)
        rows = sorted((math.prod(p["shape"][a] for a in axes), p["peak_bytes"]) for p in (entry or {}).get("points", ())
                      if p["op"] == "decode" and p["shape"][0] == 1 and int(p["dtype_bytes"]) == dtype_bytes)
        if rows:
            break
    if not rows:
        raise VramBudgetError(f"no traced decode data for {vae_family} at {dtype_bytes} bytes")
    length = math.prod(int(latent_shape[a]) for a in axes)
    if length <= rows[0][0]:  # shorter than any trace: the shortest one's peak (an upper bound)
        peak = rows[0][1]
    else:
        i = next((k for k in range(1, len(rows)) if rows[k][0] >= length), len(rows) - 1)
        (x0, y0), (x1, y1) = rows[i - 1] if i else (0, 0), rows[i]
        peak = y1 if x1 == x0 else y0 + (y1 - y0) * (length - x0) / (x1 - x0)
    batch = int(latent_shape[0])
    times = batch if batched else 1
    if not batched and batch > 1:  # one item at a time, but the decoded items pile up: the traced batch growth
        pts = [p for p in _media_points(vae_family) if p["op"] == "decode" and int(p["dtype_bytes"]) == dtype_bytes]
        ones = {tuple(p["shape"][1:]): p["peak_bytes"] for p in pts if p["shape"][0] == 1}
        extra = [(p["peak_bytes"] / ones[tuple(p["shape"][1:])] - 1) / (p["shape"][0] - 1)
                 for p in pts if p["shape"][0] > 1 and tuple(p["shape"][1:]) in ones]
        times = 1 + (batch - 1) * max(extra or [0.0])
    return int(peak * times), (f"{label}: {length} {unit} × batch {batch}"
                               f"{'' if batched else ' (decoded one item at a time)'}; traced decode peaks "
                               f"({len(rows)} lengths, {dtype_bytes}-byte weights) interpolated in the length")


def _media_points(vae_family: str) -> list[dict]:
    for version in reversed(profiles()):
        prof = _load_profiles()[version]
        entry = prof["families"].get(vae_family) or prof.get("pending_families", {}).get(vae_family)
        if entry and entry.get("points"):
            return entry["points"]
    return []


def hunyuan3d_decode_bytes(batch: int, octree_resolution: int, num_chunks: int, dtype_bytes: int = 2,
                           tokens: int = 3072) -> tuple[int, str]:
    """VAEDecodeHunyuan3D's ShapeVAE decode: a + b·num_chunks + c·(octree_resolution + 1)³ per batch item (the
    query grid, every chunk's logits and their float32 copy grow with the grid; one chunk's cross-attention
    with num_chunks), solved from three traced points and held to the rest by tests/test_vae_memory.py."""
    pts = {(p["octree_resolution"], p["num_chunks"], p["shape"][2]): p["peak_bytes"]
           for p in _media_points("vae-hunyuan3d")
           if p["op"] == "decode" and p["shape"][0] == 1 and int(p["dtype_bytes"]) == dtype_bytes}
    try:
        y0, y1, y2, y3 = pts[(256, 8000, 3072)], pts[(256, 32000, 3072)], pts[(128, 8000, 3072)], pts[(256, 8000, 4096)]
    except KeyError:
        raise VramBudgetError(f"no traced Hunyuan3D shape VAE decode at {dtype_bytes} bytes") from None
    b = (y1 - y0) / (32000 - 8000)
    c = (y0 - y2) / (257**3 - 129**3)
    d = max(0.0, (y3 - y0) / (4096 - 3072))  # the latent transformer's tokens (under 1 %)
    a = y0 - b * 8000 - c * 257**3 - d * 3072
    per_item = a + b * num_chunks + c * (octree_resolution + 1) ** 3 + d * tokens
    return int(per_item * batch), (f"Hunyuan3D shape VAE: octree {octree_resolution} ((r+1)³ query points), "
                                   f"{num_chunks} points a chunk, batch {batch}; fitted to traced decodes")


def vae_decode_bytes(vae_family: str | VaeMemoryModel, latent_shape: Any, tile: int | tuple[int, int] | None = None,
                     overlap: int | None = None, tile_t: int | None = None, *, dtype_bytes: int = 2,
                     comfy_version: str | None = None, passes: int = 3) -> int:
    """Working bytes (above the weights) of decoding `latent_shape` with ComfyUI.

    latent_shape: (batch, channels, frames | None, height, width) in latent units (or a
    workload.LatentShape). tile / tile_t: spatial tile (latent px, int or (h, w)) and temporal tile
    (latent frames) of ``VAE.decode_tiled``; None = one call on the whole latent. The overlap does
    not change a tile's size (ComfyUI's tiles are `tile` long and step by tile - overlap), only
    how many there are; it is accepted for symmetry with ``decode_tiled``. passes: 3 for image
    tiles through ComfyUI's ``decode_tiled`` (its largest pass tile counts), 1 for the one-pass
    tiles of the auto-tiled node.
    """
    del overlap
    return _peak(memory_model(vae_family, comfy_version), "decode", as_latent(latent_shape), dtype_bytes, tile, tile_t,
                 passes)


def vae_encode_bytes(vae_family: str | VaeMemoryModel, pixel_shape: Any, tile: int | tuple[int, int] | None = None,
                     overlap: int | None = None, tile_t: int | None = None, *, dtype_bytes: int = 2,
                     comfy_version: str | None = None) -> int:
    """Working bytes of encoding pixels (batch, frames | None, height, width); tiles in pixels/frames."""
    del overlap
    return _peak(memory_model(vae_family, comfy_version), "encode", as_pixels(pixel_shape), dtype_bytes, tile, tile_t)


def vae_weights_bytes(vae_family: str, dtype_bytes: int = 2) -> int:
    """Parameter count of ComfyUI's module for the family x dtype size. A fallback: the real file's
    header (files.py) is exact and should be preferred."""
    return memory_model(vae_family).params * int(dtype_bytes)


def linear_summary(vae_family: str, dtype_bytes: int = 2, comfy_version: str | None = None) -> dict[str, float]:
    """The traced decode model read as bytes ~= a * pixels_per_chunk + b * output_bytes + c.

    a: working bytes per output pixel of one decoder chunk (one latent frame group for video,
    the whole image for image VAEs); b: device bytes per byte of decoded output held on the
    device (video: frames accumulate before ComfyUI moves them off); c: constant (0 by
    construction: every traced peak scales with the pixel count). Per output-frame pixel,
    g(T) = a + b * 3 * frames_out(T) * dtype_bytes, fitted by least squares over T >= 5 latent
    frames, where Wan's streaming decoder has reached its steady chunk. Meaningful for Wan; the
    HunyuanVideo and LTXV decoders do not stream, the table is their model.)"""
    model = memory_model(vae_family, comfy_version)
    fam = model.family
    table = model.decode[dtype_bytes]
    if not fam.is_video:
        return {"a": table.at(None), "b": 0.0, "c": 0.0}
    # g(T) per output-frame pixel of ONE frame; output bytes per frame pixel = 3 ch x frames x dtype
    xs = [(3 * fam.pixel_frames(f) * dtype_bytes, g) for f, g in table.points if f >= 5]
    if len(xs) < 2:
        return {"a": table.points[-1][1], "b": 0.0, "c": 0.0}
    n = len(xs)
    mx = sum(x for x, _ in xs) / n
    my = sum(y for _, y in xs) / n
    sxx = sum((x - mx) ** 2 for x, _ in xs)
    b = sum((x - mx) * (y - my) for x, y in xs) / sxx if sxx else 0.0
    return {"a": my - b * mx, "b": b, "c": 0.0}


# ----------------------------------------------------------------------------------------------
# ComfyUI's tiler arithmetic
def tiled_steps(size: int, tile: int, overlap: int) -> int:
    """Tiles along one axis (comfy.utils.get_tiled_scale_steps / tiled_scale_multidim)."""
    if size <= tile:
        return 1
    return math.ceil((size - overlap) / (tile - overlap))


def default_overlap(tile: int, video: bool) -> int:
    """Spatial overlap (latent px) for a tile. Images: tile/8, the ratio of VAEDecodeTiled's
    defaults (512 px tile, 64 px overlap); ComfyUI's 2-D tiler also runs tile/2-wide passes, so the
    overlap must stay below tile/2. Video: tile/4, ComfyUI's own fallback (sd.py: 256 px tiles,
    overlap tile // 4): one pass only, so a wider feather costs less."""
    return max(1, tile // 4) if video else max(1, tile // 8)


def default_overlap_t(tile_t: int) -> int:
    """Temporal overlap in latent frames: 1 (decode_tiled's default) for short chunks, 2 from 4
    frames on (VAEDecodeTiled's 8 px-frame default / 4)."""
    return 1 if tile_t < 4 else 2


@dataclass(frozen=True)
class DecodePlan:
    """How to run one VAE decode (or encode) within a memory budget.

    Units: latent pixels / latent frames for decode, pixels / pixel frames for encode.
    ``tiled`` False: call ``vae.decode`` on ``batch_chunk`` items at a time. True, decode: images
    in one pass of ``comfy.utils.tiled_scale`` with ``decode_tiled_kwargs()``, video through
    ``vae.decode_tiled(**plan.decode_tiled_kwargs())``; encode: ``vae.encode_tiled`` (ComfyUI
    tiles batch items in turn).
    """

    op: str  # "decode" | "encode"
    family: str
    shape: Shape
    tiled: bool
    batch_chunk: int  # items per call (full decode); 1 when tiled
    tile_h: int | None = None
    tile_w: int | None = None
    overlap: int | None = None
    tile_t: int | None = None  # temporal tile (latent frames for decode, pixel frames for encode)
    overlap_t: int | None = None
    tiles: int = 1  # decoder calls
    work: float = 1.0  # decoded volume incl. overlaps and passes / latent volume (1.0 = one full pass)
    time_ratio: float = 1.0  # predicted time / one go's (work + TILE_OVERHEAD_PX per call)
    passes: int = 1  # passes of ComfyUI's tiler (3: its 2-D decode_tiled / encode_tiled; 1: one pass)
    predicted_peak: int = 0  # working bytes of the largest call
    required: int = 0  # predicted_peak with HEADROOM
    full_peak: int = 0  # working bytes of decoding everything in one call
    free_bytes: int = 0
    margin: int = 0
    fits: bool = True
    mode: str = "auto"
    spatial: int = 8  # output pixels per unit (8 or 16 for decode, 1 for encode; for messages)
    dtype_bytes: int = 2
    comfy_version: str | None = None
    headroom: float = HEADROOM
    reason: str = ""
    model: VaeMemoryModel | None = field(default=None, repr=False, compare=False)

    @property
    def budget(self) -> int:
        return self.free_bytes - self.margin

    @property
    def calls(self) -> int:
        return self.tiles if self.tiled else math.ceil(self.shape.batch / max(1, self.batch_chunk))

    def decode_tiled_kwargs(self) -> dict[str, int | None]:
        """Keyword arguments for comfy.sd.VAE.decode_tiled / encode_tiled.

        ComfyUI's 2-D tiler maps tile_y to rows and tile_x to columns (tiled_scale), its 3-D
        tiler maps tile_x to rows and tile_y to columns (decode_tiled_3d); the planner's tiles
        are (rows, columns), so the names are swapped for video."""
        if not self.tiled:
            return {}
        if self.shape.frames is None:
            return {"tile_x": self.tile_w, "tile_y": self.tile_h, "overlap": self.overlap}
        split_t = self.tile_t is not None and self.tile_t < self.shape.frames
        # tile_t None: ComfyUI's default (all frames in each tile), overlap_t None: 1 frame, unused
        return {"tile_x": self.tile_h, "tile_y": self.tile_w, "overlap": self.overlap,
                "tile_t": self.tile_t if split_t else None, "overlap_t": self.overlap_t if split_t else None}

    def tile_label(self) -> str:
        """'512x512 px' (+ ' x 5 latent frames' when frames are split)."""
        if not self.tiled:
            return "no tiles"
        txt = f"{self.tile_h * self.spatial}x{self.tile_w * self.spatial} px"
        if self.tile_t is not None and self.shape.frames is not None and self.tile_t < self.shape.frames:
            txt += f" x {self.tile_t} {'latent ' if self.op == 'decode' else ''}frames"
        return txt

    def summary(self) -> str:
        """One line for the node's text and the log."""
        budget = f"budget {fmt_gib(max(0, self.budget))}"
        flag = "" if self.fits else " (may not fit)"
        if not self.tiled:
            what = "decoded in one go" if self.op == "decode" else "encoded in one go"
            if self.batch_chunk < self.shape.batch:
                what += f", {self.batch_chunk} of {self.shape.batch} at a time"
            return f"{what}: needs {fmt_gib(self.required)}, {budget}{flag}"
        verb = "decoded" if self.op == "decode" else "encoded"
        return (f"{verb} in {self.tiles} tiles of {self.tile_label()} (about {self.time_ratio:.1f}x the one-go time): "
                f"needs {fmt_gib(self.required)}, {budget}; one go needs "
                f"{fmt_gib(with_headroom(self.full_peak, self.headroom))}{flag}")


def with_headroom(peak: int, headroom: float = HEADROOM) -> int:
    """What the planner requires free for a traced peak."""
    return math.ceil(peak * (1.0 + headroom))


def op_bytes(vae_family: str | VaeMemoryModel, op: str, shape: Shape, dtype_bytes: int = 2,
             tile: int | tuple[int, int] | None = None, tile_t: int | None = None,
             comfy_version: str | None = None) -> int:
    """vae_decode_bytes / vae_encode_bytes on a Shape (op = "decode" | "encode")."""
    if op not in ("decode", "encode"):
        raise VramBudgetError(f"op must be 'decode' or 'encode', got '{op}'")
    return _peak(memory_model(vae_family, comfy_version), op, shape, dtype_bytes, tile, tile_t)


# ----------------------------------------------------------------------------------------------
# Encode tiles: the largest square tile that fits, for ComfyUI's encode_tiled (three 2-D passes)
def _spatial_candidates(shape: Shape, min_tile: int, step: int) -> list[int]:
    """Square tile sizes smaller than the latent's larger side, largest first, down to min_tile."""
    longest = max(shape.height, shape.width)
    floor = max(2, min(min_tile, longest))
    top = ((longest - 1) // step) * step
    sizes = list(range(top, floor - 1, -step)) if top >= floor else []
    if not sizes or sizes[-1] != floor:
        sizes.append(floor)
    return sizes


def _volume(op: str, fam: VaeFamily, shape: Shape) -> int:
    """Output pixel-frames (decode) or input pixel-frames (encode) of one batch item in one go."""
    if op == "decode":
        frames = 1 if shape.frames is None else fam.pixel_frames(shape.frames)
        return shape.height * shape.width * fam.spatial**2 * frames
    return shape.height * shape.width * (shape.frames or 1)


def _time_ratio(op: str, fam: VaeFamily, shape: Shape, volume_per_item: float, calls: int) -> float:
    """Predicted time / one go's: (volume + TILE_OVERHEAD_PX per call) / (one go's volume + one call)."""
    one_go = shape.batch * _volume(op, fam, shape)
    return (shape.batch * volume_per_item + calls * TILE_OVERHEAD_PX) / (one_go + TILE_OVERHEAD_PX)


def _tiled_plan(base: DecodePlan, model: VaeMemoryModel, dtype_bytes: int, tile: int, tile_t: int | None,
                headroom: float) -> DecodePlan:
    """Encode: square `tile` through ComfyUI's encode_tiled (2-D: three passes; video: one)."""
    shape = base.shape
    video = shape.frames is not None
    th, tw = min(tile, shape.height), min(tile, shape.width)
    sp = model.family.spatial
    ov = max(sp, default_overlap(tile, video) // sp * sp)  # pixel tiles: whole latent pixels of overlap
    if video:
        tt = shape.frames if tile_t is None else max(2, min(int(tile_t), shape.frames))
        ovt = min(default_overlap_t(tt), tt - 1) if tt < shape.frames else None
        n = (tiled_steps(shape.frames, tt, ovt or 1) * tiled_steps(shape.height, tile, ov)
             * tiled_steps(shape.width, tile, ov))
        work = (_axis_work(shape.frames, tt, ovt or 1) * _axis_work(shape.height, tile, ov)
                * _axis_work(shape.width, tile, ov))
        peak = _peak(model, base.op, shape, dtype_bytes, (tile, tile), tt)
    else:
        tt, ovt = None, None
        n = sum(tiled_steps(shape.height, h, ov) * tiled_steps(shape.width, w, ov) for h, w in _passes_2d(tile, tile))
        work = sum(_axis_work(shape.height, h, ov) * _axis_work(shape.width, w, ov) for h, w in _passes_2d(tile, tile))
        peak = _peak(model, base.op, shape, dtype_bytes, (tile, tile), None)
    ratio = _time_ratio(base.op, model.family, shape, work * _volume(base.op, model.family, shape), n * shape.batch)
    return replace(base, tiled=True, batch_chunk=1, tile_h=th, tile_w=tw, overlap=ov, tile_t=tt, overlap_t=ovt,
                   tiles=n * shape.batch, work=round(work, 3), time_ratio=ratio, passes=1 if video else 3,
                   predicted_peak=peak, required=with_headroom(peak, headroom))


def _axis_work(size: int, tile: int, overlap: int) -> float:
    """Encoded length along one axis with tiles (incl. overlaps) / size."""
    if size <= tile:
        return 1.0
    return tiled_steps(size, tile, overlap) * tile / size


def _encode_tiles(base: DecodePlan, model: VaeMemoryModel, dtype_bytes: int, floor: int, step: int, budget: int,
                  headroom: float, why: str, max_peak: int | None) -> DecodePlan:
    """Largest square tile whose peak fits; else the smallest, flagged."""
    sizes = _spatial_candidates(base.shape, floor, step)
    for size in sizes:
        plan = _tiled_plan(base, model, dtype_bytes, size, None, headroom)
        if plan.required <= budget and (max_peak is None or plan.predicted_peak <= max_peak):
            return replace(plan, reason=f"{why}; largest tile that fits: {plan.tile_label()} needs "
                                        f"{fmt_gib(plan.required)} ({plan.tiles} tiles)")
    plan = _tiled_plan(base, model, dtype_bytes, sizes[-1], None, headroom)
    return replace(plan, fits=False, reason=f"{why}; even the smallest tile ({plan.tile_label()}) needs "
                                            f"{fmt_gib(plan.required)}: trying it anyway")


# ----------------------------------------------------------------------------------------------
# Decode tiles: the fastest that fit, in one pass of ComfyUI's tiler
def _decode_layout(fam: VaeFamily, shape: Shape, th: int, tw: int, tt: int | None,
                   ov: int) -> tuple[int | None, int, int]:
    """(overlap_t, decoder calls, decoded output pixel-frames) of ONE batch item in tiles of th x tw
    latent px (overlap ov) x tt latent frames (clipped to the latent), as tiled_scale_multidim runs them."""
    n_h, n_w = tiled_steps(shape.height, th, ov), tiled_steps(shape.width, tw, ov)
    # along an axis split in n, the tiler decodes size + (n - 1) * overlap (the last tile ends at the edge)
    area = (shape.height + (n_h - 1) * ov) * (shape.width + (n_w - 1) * ov) * fam.spatial**2
    if shape.frames is None:
        return None, n_h * n_w, area
    if tt is None or tt >= shape.frames:
        return None, n_h * n_w, area * fam.pixel_frames(shape.frames)
    ovt = default_overlap_t(tt)
    n_t = tiled_steps(shape.frames, tt, ovt)
    last = shape.frames - (n_t - 1) * (tt - ovt)
    frames = (n_t - 1) * fam.pixel_frames(tt) + fam.pixel_frames(last)
    return ovt, n_h * n_w * n_t, area * frames


def _one_pass_plan(base: DecodePlan, model: VaeMemoryModel, dtype_bytes: int, th: int, tw: int, tt: int | None,
                   headroom: float, ov: int) -> DecodePlan:
    """Decode: tiles of th x tw latent px (overlap ov, x tt latent frames), one pass."""
    shape, fam = base.shape, model.family
    th, tw = min(th, shape.height), min(tw, shape.width)
    if shape.frames is not None:
        tt = shape.frames if tt is None or tt >= shape.frames else max(2, int(tt))
    else:
        tt = None
    ovt, calls, volume = _decode_layout(fam, shape, th, tw, tt, ov)
    peak = _peak(model, "decode", shape, dtype_bytes, (th, tw), tt, passes=1)
    return replace(base, tiled=True, batch_chunk=1, tile_h=th, tile_w=tw, overlap=ov, tile_t=tt, overlap_t=ovt,
                   tiles=calls * shape.batch, work=volume / _volume("decode", fam, shape),
                   time_ratio=_time_ratio("decode", fam, shape, volume, calls * shape.batch), passes=1,
                   predicted_peak=peak, required=with_headroom(peak, headroom))


def decode_tile_plan(vae_family: str | VaeMemoryModel, latent: Any, tile_h: int, tile_w: int, tile_t: int | None = None,
                     *, dtype_bytes: int = 2, comfy_version: str | None = None, headroom: float = HEADROOM,
                     min_tile: int | None = None) -> DecodePlan:
    """The one-pass decode plan for given tiles (latent px / latent frames): its calls, overlaps,
    peak and predicted time. What the planner weighs for every candidate."""
    model = memory_model(vae_family, comfy_version)
    shape = as_latent(latent)
    full = _peak(model, "decode", shape, dtype_bytes, None, None)
    base = DecodePlan(op="decode", family=model.family.id, shape=shape, tiled=False, batch_chunk=shape.batch,
                      full_peak=full, spatial=model.family.spatial, dtype_bytes=dtype_bytes,
                      comfy_version=comfy_version, headroom=headroom, model=model)
    floor = tile_grid("decode", model.family.spatial)[1] if min_tile is None else int(min_tile)
    return _one_pass_plan(base, model, dtype_bytes, tile_h, tile_w, tile_t, headroom,
                          spatial_overlap(model.family.spatial, floor))


def _lengths(size: int, floor: int, overlap_of) -> list[int]:
    """Candidate tile lengths along one axis, longest first: the whole axis, then for each tile
    count the shortest length that gives it (a longer one with the same count only costs memory),
    down to `floor`. overlap_of(length): the overlap at that length (non-decreasing)."""
    out = [size]
    if size <= floor:
        return out
    most = tiled_steps(size, floor, overlap_of(floor))
    for count in range(2, min(most, MAX_AXIS_TILES) + 1):
        length = max(floor, -(-(size - overlap_of(out[-1])) // count) + overlap_of(out[-1]))
        while length > floor and tiled_steps(size, length - 1, overlap_of(length - 1)) <= count:
            length -= 1
        while tiled_steps(size, length, overlap_of(length)) > count:
            length += 1
        if length < out[-1]:
            out.append(length)
    if out[-1] != floor:
        out.append(floor)
    return out


def _fastest_tiles(base: DecodePlan, model: VaeMemoryModel, dtype_bytes: int, floor: int, budget: int,
                   headroom: float, max_peak: int | None) -> DecodePlan | None:
    """The tiles (rows x columns x frames, never the whole latent) with the least predicted time
    among those whose peak fits, under one rule that keeps the planner monotone: a candidate only
    counts if it is faster AND needs no more decoder calls than every candidate with a smaller
    peak (so more memory never gives more or smaller tiles). None when no tile fits."""
    shape, fam = base.shape, model.family
    px = fam.spatial**2
    ov = spatial_overlap(fam.spatial, floor)
    rows = _lengths(shape.height, floor, lambda _n: ov)
    cols = _lengths(shape.width, floor, lambda _n: ov)
    chunks = [None] if shape.frames is None else _lengths(shape.frames, 2, default_overlap_t)
    fitting = []
    for tt in chunks:
        g = model.per_pixel("decode", dtype_bytes, tt)
        whole_frames = tt is None or tt == shape.frames
        for th in rows:
            for tw in cols:
                if whole_frames and th == shape.height and tw == shape.width:
                    continue  # that is one go, not a tile
                peak = math.ceil(th * tw * px * g)
                if with_headroom(peak, headroom) > budget or (max_peak is not None and peak > max_peak):
                    continue
                _ovt, calls, volume = _decode_layout(fam, shape, th, tw, tt, ov)
                fitting.append((peak, volume + calls * TILE_OVERHEAD_PX, calls, -th, -tw, -(tt or 0)))
    best = None
    for cand in sorted(fitting):  # smallest peak first: the staircase of ever faster, never more calls
        if best is None or (cand[1] < best[1] and cand[2] <= best[2]):
            best = cand
    if best is None:
        return None
    return _one_pass_plan(base, model, dtype_bytes, -best[3], -best[4], -best[5] or None, headroom, ov)


def _one_go(base: DecodePlan, per_item: int, budget: int, headroom: float, budget_txt: str) -> DecodePlan | None:
    """One call on the whole batch, else as many items per call as fit (peak is linear in the batch)."""
    shape, op = base.shape, base.op
    per_item_need = with_headroom(per_item, headroom)
    if with_headroom(base.full_peak, headroom) <= budget:
        k = shape.batch
    else:
        k = int(min(shape.batch - 1, budget // per_item_need)) if per_item_need > 0 else shape.batch
        while k > 0 and with_headroom(per_item * k, headroom) > budget:
            k -= 1
    if k < 1:
        return None
    peak = per_item * k if k < shape.batch else base.full_peak
    reason = (f"full {op} fits: needs {fmt_gib(with_headroom(peak, headroom))} ({fmt_gib(peak)} traced "
              f"+ {headroom:.0%}), budget {budget_txt}")
    if k < shape.batch:
        reason += f"; {k} of {shape.batch} items per call"
    return _one_go_plan(base, k, peak, headroom, reason)


def _one_go_plan(base: DecodePlan, k: int, peak: int, headroom: float, reason: str, fits: bool = True) -> DecodePlan:
    fam = base.model.family
    calls = math.ceil(base.shape.batch / k)
    return replace(base, tiled=False, batch_chunk=k, predicted_peak=peak, required=with_headroom(peak, headroom),
                   time_ratio=_time_ratio(base.op, fam, base.shape, _volume(base.op, fam, base.shape), calls),
                   fits=fits, reason=reason)


def _decode_tiles(base: DecodePlan, model: VaeMemoryModel, dtype_bytes: int, floor: int, budget: int,
                  headroom: float, why: str, max_peak: int | None, per_item: int, budget_txt: str) -> DecodePlan:
    """Decode: the fastest tiles that fit; an image no larger than one tile in one go; else the
    smallest tiles, flagged."""
    shape = base.shape
    plan = _fastest_tiles(base, model, dtype_bytes, floor, budget, headroom, max_peak)
    if plan is not None:
        return replace(plan, reason=f"{why}; fastest tiles that fit: {plan.tile_label()}, {plan.tiles} tiles, need "
                                    f"{fmt_gib(plan.required)}, about {plan.time_ratio:.1f}x the one-go time")
    th, tw = min(floor, shape.height), min(floor, shape.width)
    tt = None if shape.frames is None else min(2, shape.frames)
    if (th, tw) == (shape.height, shape.width) and tt in (None, shape.frames):
        one_tile = f"the {'latent' if shape.frames is not None else 'image'} is no larger than one tile ({floor * base.spatial} px)"
        plan = _one_go(base, per_item, budget, headroom, budget_txt) if max_peak is None else None
        if plan is not None:
            return replace(plan, reason=f"{why}, but {one_tile}: decoded in one pass; {plan.reason}")
        return _one_go_plan(base, 1, per_item, headroom, fits=False,
                            reason=f"{why}; {one_tile} and needs {fmt_gib(with_headroom(per_item, headroom))} per item: "
                                   f"nothing smaller to try, trying it in one go anyway")
    plan = _one_pass_plan(base, model, dtype_bytes, th, tw, tt, headroom, spatial_overlap(model.family.spatial, floor))
    return replace(plan, fits=False, reason=f"{why}; even the smallest tiles ({plan.tile_label()}) need "
                                            f"{fmt_gib(plan.required)}: trying them anyway")


def _plan(op: str, vae_family: str | VaeMemoryModel, shape: Shape, free_bytes: int, margin: int, dtype_bytes: int,
          mode: str, comfy_version: str | None, min_tile: int, headroom: float, max_peak: int | None) -> DecodePlan:
    if mode not in MODES:
        raise PlanError(f"VAE {op} mode must be one of {', '.join(MODES)}, got '{mode}'")
    if min(shape.batch, shape.height, shape.width) <= 0 or (shape.frames is not None and shape.frames <= 0):
        raise PlanError(f"empty {op} input {shape}")
    model = memory_model(vae_family, comfy_version)
    fam = model.family
    free_bytes, margin = int(free_bytes), int(margin)
    budget = free_bytes - margin
    step, floor = tile_grid(op, fam.spatial)
    if min_tile is not None:
        floor = int(min_tile)
    full_peak = _peak(model, op, shape, dtype_bytes, None, None)
    per_item = _peak(model, op, Shape(1, shape.frames, shape.height, shape.width), dtype_bytes, None, None)
    base = DecodePlan(op=op, family=fam.id, shape=shape, tiled=False, batch_chunk=shape.batch, full_peak=full_peak,
                      predicted_peak=full_peak, required=with_headroom(full_peak, headroom), free_bytes=free_bytes,
                      margin=margin, mode=mode, spatial=fam.spatial if op == "decode" else 1,
                      dtype_bytes=dtype_bytes, comfy_version=comfy_version, headroom=headroom, model=model)
    need_full = with_headroom(full_peak, headroom)
    budget_txt = fmt_gib(budget) if margin == 0 else f"{fmt_gib(free_bytes)} free - {fmt_gib(margin)} margin = {fmt_gib(budget)}"

    # 1. one go, the whole batch or as many items per call as fit
    if mode != "force_tiled" and (max_peak is None or per_item <= max_peak):
        plan = _one_go(base, per_item, budget if max_peak is None else min(budget, with_headroom(max_peak, headroom)),
                       headroom, budget_txt)
        if plan is not None:
            return plan
        if mode == "never_tiled":
            return _one_go_plan(base, 1, per_item, headroom, fits=False,
                                reason=f"tiling disabled: one item needs {fmt_gib(with_headroom(per_item, headroom))}, "
                                       f"budget {budget_txt}; trying anyway")
    why = (f"full {op} needs {fmt_gib(need_full)}, budget {budget_txt}" if mode != "force_tiled" and max_peak is None
           else "tiling forced" if max_peak is None
           else f"pieces capped at {fmt_gib(max_peak)} (an earlier run ran out of memory with larger ones)")
    if op == "decode":
        return _decode_tiles(base, model, dtype_bytes, floor, budget, headroom, why, max_peak, per_item, budget_txt)
    return _encode_tiles(base, model, dtype_bytes, floor, step, budget, headroom, why, max_peak)


def plan_decode(vae_family: str | VaeMemoryModel, latent: Any, free_bytes: int, margin: int = 0, dtype_bytes: int = 2,
                mode: str = "auto", *, comfy_version: str | None = None, min_tile: int | None = None,
                headroom: float = HEADROOM, max_peak: int | None = None) -> DecodePlan:
    """Decide how to decode `latent` ((batch, channels, frames|None, height, width), latent units).

    mode "auto": one go when it fits in ``free_bytes - margin`` (whole batch, else as many items
    per call as fit), else the tiles with the least predicted time (decoded area incl. overlaps +
    TILE_OVERHEAD_PX per call) whose peak plus HEADROOM fits: rows x columns (at least
    MIN_TILE_PX or `min_tile` latent px a side unless the side is the whole latent) x, for video,
    latent frames; one pass of ComfyUI's tiler. A latent no larger than one tile is decoded in one
    go. "force_tiled" skips the one-go step, "never_tiled" never tiles. ``max_peak`` caps the
    pieces' traced peak (after an out-of-memory error with larger ones).
    Monotone: more free memory never gives more decoder calls, a longer predicted time or (tiled)
    a smaller tile peak.
    """
    return _plan("decode", vae_family, as_latent(latent), free_bytes, margin, dtype_bytes, mode, comfy_version,
                 min_tile, headroom, max_peak)


def plan_encode(vae_family: str | VaeMemoryModel, pixels: Any, free_bytes: int, margin: int = 0, dtype_bytes: int = 2,
                mode: str = "auto", *, comfy_version: str | None = None, min_tile: int | None = None,
                headroom: float = HEADROOM, max_peak: int | None = None) -> DecodePlan:
    """Like plan_decode for encode; pixels = (batch, frames|None, height, width); the largest
    square tile that fits (pixels, 64 px steps, at least 128 px) for ComfyUI's encode_tiled."""
    return _plan("encode", vae_family, as_pixels(pixels), free_bytes, margin, dtype_bytes, mode, comfy_version,
                 min_tile, headroom, max_peak)


def _smaller_decode(plan: DecodePlan, model: VaeMemoryModel, floor: int) -> DecodePlan | None:
    """Decode after an out-of-memory error: halve the longer tile side (the whole latent when it
    ran in one go) down to `floor`, then (video) the frames per tile down to 2."""
    shape = plan.shape
    th, tw = (plan.tile_h, plan.tile_w) if plan.tiled else (shape.height, shape.width)
    tt = plan.tile_t if plan.tiled else shape.frames
    if max(th, tw) > floor:
        if th >= tw:
            th = max(floor, -(-th // 2))
        else:
            tw = max(floor, -(-tw // 2))
    elif tt is not None and tt > 2:
        tt = max(2, tt // 2)
    else:
        return None
    nxt = _one_pass_plan(replace(plan, mode="auto"), model, plan.dtype_bytes, th, tw, tt, plan.headroom,
                         spatial_overlap(model.family.spatial, floor))
    where = f"with {plan.tile_label()} tiles" if plan.tiled else "in one go"
    return replace(nxt, reason=f"out of memory {where}: trying {nxt.tiles} tiles of {nxt.tile_label()}")


def smaller_plan(plan: DecodePlan, *, min_tile: int | None = None) -> DecodePlan | None:
    """The next thing to try after `plan` ran out of memory, or None when nothing smaller exists.

    full with k items -> k // 2 items -> decode: halve the longer tile side (from the whole
    latent) down to min_tile, then (video) halve the temporal chunk down to 2 frames; encode:
    square tiles of half the longer side, halved down to min_tile."""
    shape = plan.shape
    model = plan.model or memory_model(plan.family, plan.comfy_version)
    plan = replace(plan, model=model)
    dtype_bytes, headroom = plan.dtype_bytes, plan.headroom
    step, floor = tile_grid(plan.op, model.family.spatial)
    if min_tile is not None:
        floor = int(min_tile)
    if not plan.tiled and plan.batch_chunk > 1:
        k = plan.batch_chunk // 2
        peak = _peak(model, plan.op, Shape(k, shape.frames, shape.height, shape.width), dtype_bytes, None, None)
        return _one_go_plan(plan, k, peak, headroom, f"out of memory with {plan.batch_chunk} items per call: trying {k}")
    if plan.op == "decode":
        return _smaller_decode(plan, model, floor)
    base = replace(plan, mode="auto")
    if not plan.tiled:
        longest = max(shape.height, shape.width)
        size = max(floor, (longest // 2) // step * step)
        if size >= longest:
            size = max(2, longest // 2)
        nxt = _tiled_plan(base, model, dtype_bytes, size, None, headroom)
        return replace(nxt, reason=f"out of memory in one go: trying tiles of {nxt.tile_label()}")
    tile = max(plan.tile_h or 0, plan.tile_w or 0)
    if tile > floor:
        nxt = _tiled_plan(base, model, dtype_bytes, max(floor, tile // 2), plan.tile_t, headroom)
        return replace(nxt, reason=f"out of memory with {plan.tile_label()} tiles: trying {nxt.tile_label()}")
    return None


# ----------------------------------------------------------------------------------------------
# ComfyUI's own estimates, for comparison (comfy/sd.py 0.8.0, memory_used_decode lambdas; R_amd = 1)
# ComfyUI's AutoencoderKL (the SD 1.x / SDXL / SD3 / Flux / Flux 2 VAEs) reserves 2.73x the memory on AMD
# (VAE_KL_MEM_RATIO: comfy/sd.py:492-498 in 0.33.0, :444 in 0.18.2, :314 in 0.8.0). ComfyUI turns MIOpen off on
# RDNA3 and newer (model_management.py:481-486), and PyTorch's fallback convolutions unfold their input
# (im2col), so a decode holds much more than the fused kernels this trace counts. The ratio prices both
# ComfyUI's own estimate and what the decode holds on an AMD card.
AMD_KL_MEM_RATIO = 2.73
AMD_KL_RULE = "sd.py:492-498 (VAE_KL_MEM_RATIO 2.73 on AMD)"


def amd_kl_ratio(family: str, vendor: str) -> float:
    """AMD_KL_MEM_RATIO for an AutoencoderKL VAE on an AMD card, else 1."""
    return AMD_KL_MEM_RATIO if vendor == "AMD" and getattr(FAMILIES.get(family), "kl", False) else 1.0


def comfy_heuristic_decode_bytes(vae_family: str, latent_shape: Any, dtype_bytes: int = 2) -> int:
    """What ComfyUI 0.8.0 reserves for a full decode (its `memory_used_decode`; no batch factor)."""
    s = as_latent(latent_shape)
    h, w, t = s.height, s.width, s.frames or 1
    per = {
        "vae-kl4": 2178 * h * w * 64,  # sd.py:320
        "vae-kl16": 2178 * h * w * 64,
        "vae-wan2.1": (2200 if t <= 4 else 7000) * h * w * 64,  # sd.py:559
        "vae-wan2.2": 8000 * h * w * 256,  # sd.py:544
        "vae-hunyuan": 2800 * min(8, (t - 1) * 4 + 1) * h * w * 64,  # sd.py:517
        "vae-ltxv": 900 * t * h * w * 512,  # sd.py:483
    }[get_family(vae_family).id]
    return int(per * dtype_bytes)


def tiled_node_to_latent(vae_family: str, tile_size: int = 512, overlap: int = 64, temporal_size: int = 64,
                         temporal_overlap: int = 8) -> dict[str, int | None]:
    """VAEDecodeTiled's widgets (pixels / frames) -> decode_tiled arguments (latent units), as nodes.py does."""
    fam = get_family(vae_family)
    if tile_size < overlap * 4:
        overlap = tile_size // 4
    if temporal_size < temporal_overlap * 2:
        temporal_overlap = temporal_overlap // 2
    if fam.temporal is not None:
        tile_t = max(2, temporal_size // fam.temporal)
        overlap_t = max(1, min(tile_t // 2, temporal_overlap // fam.temporal))
    else:
        tile_t = overlap_t = None
    return {"tile": tile_size // fam.spatial, "overlap": overlap // fam.spatial, "tile_t": tile_t, "overlap_t": overlap_t}


def describe(dtype_bytes: int = 2) -> str:
    """A table of the traced model (python -m vram_budget.nodes.estimator.physics.vae_memory)."""
    lines = [f"VAE working memory per output pixel ({dtype_bytes}-byte dtype), from {DATA_FILE.name}"]
    for v in profiles():
        lines.append(f"ComfyUI {v}:")
        for fid in FAMILIES:
            m = _model_for_profile(fid, v)
            if m is None or dtype_bytes not in m.decode:
                lines.append(f"  {fid:12s} not traced")
                continue
            dec = ", ".join(f"T={f}: {g:.0f}" if f else f"{g:.0f}" for f, g in m.decode[dtype_bytes].points)
            enc = ", ".join(f"F={f}: {g:.0f}" if f else f"{g:.0f}" for f, g in m.encode[dtype_bytes].points) if dtype_bytes in m.encode else "-"
            lin = linear_summary(fid, dtype_bytes, v)
            lines.append(f"  {fid:12s} decode B/px {dec}")
            lines.append(f"  {'':12s} encode B/px {enc}")
            lines.append(f"  {'':12s} a = {lin['a']:.0f} B/px, b = {lin['b']:.2f}, c = 0; weights {m.params / 1e6:.1f}M params")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(describe(2))
