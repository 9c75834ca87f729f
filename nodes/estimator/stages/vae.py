"""VAE decode / encode: the VAE's weights and its working memory as the workflow runs it (one call, tiled,
or this pack's auto-tiled plan), from the traced VAE constants (vae_memory.py) or traced live in ComfyUI."""
from __future__ import annotations

from dataclasses import replace

from ..physics import vae_memory
from ..errors import VramBudgetError
from ..families import registry
from ..model_info import VAE, ModelInfo
from ..machine.resolve import PIXEL_SPACE_VAE, vae_dtype_bytes
from ..workload import VAE_DECODE, LatentShape, Stage, as_model_latent
from ..machine import regressions
from ..machine.device import Device
from .base import Item, StageBudget, unpriced, finish, overhead_items, weights_items


def build(stage: Stage, device: Device, info_for) -> StageBudget:
    items, infos, notes = weights_items(stage, device, info_for, ("vae",))
    vae = next((i for i in infos if i.kind == VAE), None)
    decode = stage.kind == VAE_DECODE
    title = ("VAE decode" if decode else "VAE encode") + (f": {vae.label}" if vae else "")
    if vae is not None and stage.working:  # a pack that runs its own VAE code priced it (InstantIR: diffusers, fp32)
        items += [Item(label, int(n), "working", why) for label, n, why in stage.working]
        return finish(stage, title, items + overhead_items(device), notes)
    if vae is None or stage.latent is None:
        why = unpriced(notes, "VAE not identified" if vae is None else "latent size unknown")
        return finish(stage, title, items + overhead_items(device), notes, unpriced=why)
    if decode:  # a sampled empty latent is in the model's format, which is its VAE's (comfy/sample.py:45-56)
        stage = replace(stage, latent=as_model_latent(stage.latent, vae.arch))
    weights = sum(i.bytes for i in items)
    free_for_work = device.capacity_bytes - weights - device.context_bytes
    live = _live_vae(vae, stage.latent, decode)
    if live is not None:
        items.append(Item("decode activations" if decode else "encode activations", live[0], "working", live[1]))
        return finish(stage, title, items + overhead_items(device), notes)
    ratio, amd, factor, regression = working_ratio(vae.family, device, stage)
    work_bytes, assumption, work_notes = vae_working(vae.family, stage.latent, decode=decode, tiled=stage.tiled,
                                                     auto_tiled=stage.auto_tiled, free_bytes=int(free_for_work / ratio),
                                                     dtype_bytes=vae_dtype_bytes(vae.family, device),
                                                     options=stage.decode_options)
    if ratio != 1.0:  # the auto-tiled plan above chose its tiles for the memory divided by the ratio
        work_bytes = int(ratio * work_bytes)
        if amd != 1.0:
            assumption += f"; x{amd:g} on an AMD card ({vae_memory.AMD_KL_RULE})"
        if regression is not None:
            assumption += (f"; x{factor:g}: {regression['component']} {regression['affected_from']}'s known regression "
                           f"({regression['id']}, data/regressions.jsonl)")
    items.append(Item("decode activations" if decode else "encode activations", work_bytes, "working", assumption))
    if stage.tiled or stage.auto_tiled:
        title += " (tiled)" if stage.tiled else " (auto tiled)"
    return finish(stage, title, items + overhead_items(device), notes + work_notes)


def working_ratio(family: str, device: Device, stage: Stage) -> tuple[float, float, float, dict | None]:
    """(ratio, AMD's part, a regression's part, that regression): what the traced working memory of a VAE of `family`
    is multiplied by on `device` (ComfyUI's AutoencoderKL on an AMD card, vae_memory.amd_kl_ratio; a known
    regression of its versions, regressions.vae_working_factor). One rule for the stage and the tiling remedy."""
    amd = vae_memory.amd_kl_ratio(family, device.vendor)
    factor, regression = regressions.vae_working_factor(family, device, stage=stage)
    return amd * factor, amd, factor, regression


def _live_vae(vae: ModelInfo, latent: LatentShape, decode: bool) -> tuple[int, str] | None:
    """Inside ComfyUI: a VAE the traced table does not know, traced with ComfyUI's own VAE code at this
    latent's shape (one call on the whole latent, as VAEDecode / VAEEncode make it first)."""
    tracer = vae_memory.LIVE_VAE_TRACER.get()
    if tracer is None or not vae.path or latent.media or vae.family in vae_memory.FAMILIES \
            or vae.family in vae_memory.MEDIA_FAMILIES:
        return None
    frames = [latent.frames] if latent.frames else []
    if decode:
        shape = [latent.batch, latent.channels or int(vae.arch.get("latent_channels") or 4), *frames,
                 latent.height, latent.width]
    else:
        sc = latent.spatial_compression or int(vae.arch.get("spatial_compression") or 8)
        shape = [latent.batch, 3, *([latent.pixel_frames] if latent.pixel_frames else []),
                 latent.pixel_height or latent.height * sc, latent.pixel_width or latent.width * sc]
    res = tracer(vae.path, "decode" if decode else "encode", shape)
    if res is None:
        return None
    value, provenance = res
    return int(value), f"one {'decode' if decode else 'encode'} call on {shape}; traced live with {provenance}"


def vae_working(family: str, latent: LatentShape, decode: bool = True, tiled: dict | None = None,
                auto_tiled: bool = False, free_bytes: int = 0, dtype_bytes: int = 2,
                options: dict | None = None) -> tuple[int, str, list[str]]:
    """(working bytes, assumption, notes) of a VAE decode/encode as the workflow runs it.

    Plain VAEDecode: one call on the whole latent. VAEDecodeTiled: its widgets converted as
    nodes.py:321-336 does (pixels -> latent units). VAE Decode (Auto Tiled): the plan this pack's
    node would choose with the memory left beside the weights (vae_memory.plan_decode).
    """
    op = "decode" if decode else "encode"
    formula = registry.VAE_FORMULAS.get(family)  # no trace: the VAE class's own estimate in ComfyUI's sd.py
    if formula is not None and not auto_tiled:
        # a decode node's own settings (Stage.decode_options, e.g. a gaussian count) reach a formula that takes them
        got = (formula(op, latent, dtype_bytes, tiled, options=options) if options
               else formula(op, latent, dtype_bytes, tiled))
        if got is not None:
            return int(got[0]), got[1], []
    if family == PIXEL_SPACE_VAE:  # 0.18.2 sd.py:746-749: ComfyUI's own memory_used_decode / _encode
        value = latent.batch * (latent.pixel_height or latent.height) * (latent.pixel_width or latent.width) * dtype_bytes
        return value, f"pixel space: the {op} is the identity; ComfyUI reserves H·W·dtype bytes (sd.py:748-749)", []
    if latent.media:
        shape = ((latent.batch, latent.channels or 8, latent.height, latent.width) if latent.media == "audio"
                 else (latent.batch, latent.channels or 64, latent.width))
        if not decode or family not in vae_memory.MEDIA_FAMILIES:
            return 0, f"{latent.media} VAE {op} working memory unknown for {family}", [
                f"VAE {op} working memory unknown: no traced {latent.media} {op} for {family}"]
        try:
            if family == "vae-hunyuan3d":
                opts = options or {}
                value, how = vae_memory.hunyuan3d_decode_bytes(latent.batch, int(opts.get("octree_resolution", 256)),
                                                               int(opts.get("num_chunks", 8000)), dtype_bytes=dtype_bytes,
                                                               tokens=latent.width)
            else:
                value, how = vae_memory.media_decode_bytes(family, shape, dtype_bytes=dtype_bytes)
        except VramBudgetError as exc:
            return 0, str(exc), [f"VAE decode working memory unknown: {exc}"]
        return value, how, []
    sc = latent.spatial_compression or 8
    tc = latent.temporal_compression or 4
    shape = (latent.batch, latent.channels or 16, latent.frames, latent.height, latent.width)
    pixels = (latent.batch, latent.pixel_frames if latent.is_video else None,
              latent.pixel_height or latent.height * sc, latent.pixel_width or latent.width * sc)
    try:
        if auto_tiled and decode:
            plan = vae_memory.plan_decode(family, shape, max(free_bytes, 0), dtype_bytes=dtype_bytes)
            return plan.predicted_peak, f"auto tiled: {plan.summary()}", []
        if tiled:
            size = int(tiled.get("tile_size", 512))
            overlap = int(tiled.get("overlap", 64))
            if size < 4 * overlap:
                overlap = size // 4
            tile_t = None
            if latent.is_video:
                tile_t = max(2, int(tiled.get("temporal_size", 64)) // tc)
            if decode:
                value = vae_memory.vae_decode_bytes(family, shape, tile=max(1, size // sc), tile_t=tile_t,
                                                    dtype_bytes=dtype_bytes)
            else:
                value = vae_memory.vae_encode_bytes(family, pixels, tile=size, dtype_bytes=dtype_bytes,
                                                    tile_t=None if tile_t is None else tile_t * tc)
            what = f"tiles of {size} px" + (f" × {tile_t} latent frames" if tile_t else "")
            return value, f"VAE {op} in {what}; traced ComfyUI VAE constants", []
        if decode:
            value = vae_memory.vae_decode_bytes(family, shape, dtype_bytes=dtype_bytes)
        else:
            value = vae_memory.vae_encode_bytes(family, pixels, dtype_bytes=dtype_bytes)
        return value, f"one {op} call on the whole latent; traced ComfyUI VAE constants", []
    except VramBudgetError as exc:
        return 0, f"{op} memory not modelled for {family}", [f"VAE {op} working memory unknown: {exc}"]
