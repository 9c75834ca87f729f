"""VAE Decode (Auto Tiled) and VAE Encode (Auto Tiled).

Decide up front instead of failing first: estimate the decode's working memory for this VAE and
latent (nodes/estimator/physics/vae_memory.py, traced from ComfyUI's own VAE code), compare it with the
budget (typed in ``memory_budget_gb``, used as it is; else what is free once ComfyUI has unloaded
what it can, minus ``safety_margin_gb``), then call ComfyUI's own ``vae.decode`` when it fits, else
decode the tiles with the shortest predicted time that fit: images in ONE pass of ComfyUI's tiler
(``comfy.utils.tiled_scale``, as ``VAE.decode_tiled_`` runs it three times over), video through
``vae.decode_tiled``. ComfyUI's ``VAEDecode`` instead tries the full decode, and only after an
out-of-memory error retries with small default tiles.

Last resort: an out-of-memory error anyway (the estimate is a model, other programs share the
card) frees PyTorch's cache, halves the tile's longer side and tries again, down to a floor. The latent tensor
is never modified or dropped; retries run outside the ``except`` block so the failed attempt's
tensors (held by the traceback) are freed first. If even the floor fails, the error says that
ComfyUI still holds the sampled latent in its cache and how to rerun only the decode.

What worked is remembered per (VAE family, shape, device, dtype) for this process, so the next
run with the same shape does not walk into the same out-of-memory error again.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace

from . import comfy_bridge as bridge
from .estimator.physics import vae_memory as vm
from .estimator.errors import PlanError
from .estimator.units import GiB, fmt_gib

log = logging.getLogger("vram_budget")

MODE_CHOICES = ("auto", "force tiled", "never tiled")
_MODE_IDS = {"auto": "auto", "force tiled": "force_tiled", "never tiled": "never_tiled",
             "force_tiled": "force_tiled", "never_tiled": "never_tiled"}
DEFAULT_MARGIN_GB = 0.5  # kept free besides the predicted peak (CUDA context growth, other apps)
COMFY_FALLBACK_WARNING = "Ran out of memory when regular VAE"  # comfy/sd.py decode()/encode() except branch


# ----------------------------------------------------------------------------------------------
# Memory of what worked (per process)
@dataclass
class _Outcome:
    plan: vm.DecodePlan  # the plan that finally ran
    free_bytes: int  # free memory when it ran
    failures: tuple[str, ...]  # plans that ran out of memory before it


class _PlanMemory:
    def __init__(self):
        self._lock = threading.Lock()
        self._items: dict[tuple, _Outcome] = {}

    def get(self, key: tuple) -> _Outcome | None:
        with self._lock:
            return self._items.get(key)

    def put(self, key: tuple, outcome: _Outcome) -> None:
        with self._lock:
            self._items[key] = outcome

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


PLAN_MEMORY = _PlanMemory()


class _ComfyFallbackWatch(logging.Handler):
    """Notices ComfyUI's own OOM fallback inside vae.decode/encode (it logs a warning and tiles)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.fired = False

    def emit(self, record):
        try:
            if COMFY_FALLBACK_WARNING in record.getMessage():
                self.fired = True
        except Exception:
            pass

    def __enter__(self):
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger().removeHandler(self)
        return False


# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AutoResult:
    """What ran and why (returned to the node, shown to the user)."""

    plan: vm.DecodePlan
    text: str
    attempts: tuple[str, ...]
    seconds: float
    comfy_fallback: bool
    remembered: bool
    budget_source: str


def _model_for(vae, info: bridge.VaeInfo, op: str, shape_for_comfy: tuple, plan_shape: vm.Shape) -> vm.VaeMemoryModel:
    """The traced model of this VAE's family, or (unknown VAE) a flat one from ComfyUI's own estimate."""
    if info.family is not None:
        return vm.memory_model(info.family, bridge.comfy_version())
    fam = vm.VaeFamily(f"other:{info.class_name.rsplit('.', 1)[-1]}", info.class_name, info.latent_channels,
                       info.spatial, info.temporal, info.class_name)
    est = bridge.comfy_vae_estimate(vae, shape_for_comfy, op)
    # ComfyUI's formulas leave the batch out: read them as per item (the model multiplies by the batch)
    item_px = plan_shape.height * plan_shape.width * (info.spatial**2 if op == "decode" else 1)
    per_px = est / max(1, item_px)
    return vm.VaeMemoryModel.constant(fam, per_px, per_px, info.dtype_bytes, "ComfyUI's own estimate (VAE not traced)")


def _remember_key(op: str, info: bridge.VaeInfo, shape: tuple, mode: str) -> tuple:
    return (op, info.family or info.class_name, tuple(int(s) for s in shape), info.device, info.dtype_bytes, mode)


def _choose(op, model, plan_shape, free, margin, dtype_bytes, mode, key):
    """Plan, using what an earlier run with the same key learned."""
    past = PLAN_MEMORY.get(key)
    version = bridge.comfy_version()
    if past is not None:
        similar = abs(free - past.free_bytes) <= 0.05 * max(past.free_bytes, 1)
        if not past.failures and similar:
            plan = replace(past.plan, free_bytes=free, margin=margin,
                           reason=f"same shape and free memory as an earlier run: {past.plan.summary()}")
            return plan, True
        if past.failures and free <= past.free_bytes * 1.05:
            # it ran out of memory with bigger pieces at this much free memory: start where it worked
            plan = replace(past.plan, free_bytes=free, margin=margin,
                           reason=f"an earlier run ran out of memory with larger pieces: {past.plan.summary()}")
            if past.plan.tiled and plan.required > plan.budget:  # less memory now: no piece above what worked
                planner = vm.plan_decode if op == "decode" else vm.plan_encode
                plan = planner(model, plan_shape, free, margin, dtype_bytes, mode, comfy_version=version,
                               max_peak=past.plan.predicted_peak)
            return plan, True
    planner = vm.plan_decode if op == "decode" else vm.plan_encode
    return planner(model, plan_shape, free, margin, dtype_bytes, mode, comfy_version=version), False


def _decode_one_pass(vae, latent, plan: vm.DecodePlan):
    """Image tiles in ONE pass of ComfyUI's tiler: VAE.decode_tiled_ (0.18.2 comfy/sd.py:877-889,
    0.8.0 sd.py:724-736) with its three passes (tile_x/2 x 2*tile_y, 2*tile_x x tile_y/2, tile_x x
    tile_y, averaged: three times the work) reduced to the last one; same decode function, output
    dtype, feathered blending and process_output."""
    import torch  # noqa: PLC0415

    import comfy.utils  # noqa: PLC0415

    bridge.prepare_vae(vae, plan.required)  # loaded as decode_tiled would (load_models_gpu)
    kw = plan.decode_tiled_kwargs()
    out_dtype = vae.vae_output_dtype() if hasattr(vae, "vae_output_dtype") else torch.float32  # 0.8.0: .float()
    decode_fn = lambda a: vae.first_stage_model.decode(a.to(vae.vae_dtype).to(vae.device)).to(dtype=out_dtype)  # noqa: E731
    pixels = comfy.utils.tiled_scale(latent, decode_fn, kw["tile_x"], kw["tile_y"], kw["overlap"],
                                     upscale_amount=vae.upscale_ratio, output_device=vae.output_device,
                                     pbar=comfy.utils.ProgressBar(plan.tiles))
    return vae.process_output(pixels).movedim(1, -1)


def _run_decode_plan(vae, latent, plan: vm.DecodePlan):
    import torch  # noqa: PLC0415

    if plan.tiled and plan.shape.frames is None:
        return _decode_one_pass(vae, latent, plan)
    if plan.tiled:  # video: decode_tiled_3d is one pass already
        return vae.decode_tiled(latent, **plan.decode_tiled_kwargs())
    if plan.batch_chunk >= latent.shape[0]:
        return vae.decode(latent)
    parts = []
    for i in range(0, latent.shape[0], plan.batch_chunk):
        parts.append(vae.decode(latent[i:i + plan.batch_chunk]))
    return torch.cat(parts, dim=0)


def _run_encode_plan(vae, pixels, plan: vm.DecodePlan):
    import torch  # noqa: PLC0415

    if plan.tiled:
        return vae.encode_tiled(pixels, **plan.decode_tiled_kwargs())
    if plan.batch_chunk >= plan.shape.batch or plan.shape.frames is not None:
        return vae.encode(pixels)
    parts = []
    for i in range(0, pixels.shape[0], plan.batch_chunk):
        parts.append(vae.encode(pixels[i:i + plan.batch_chunk]))
    return torch.cat(parts, dim=0)


def _rerun_help(op: str) -> str:
    if op == "decode":
        return ("The sampled latent is not lost: ComfyUI keeps the sampler's output in its cache (unless it runs "
                "with --cache-none), so free GPU memory (close other programs that use the GPU, or lower "
                "--reserve-vram) and press Queue again: only this decode runs again, not the sampler. "
                "Do not use 'Free model and node cache' first, it drops the cached latent. "
                "To keep it across restarts, connect the latent to a Save Latent node.")
    return ("The input images are unchanged and cached by ComfyUI: free GPU memory (close other programs that use "
            "the GPU) and press Queue again; only this encode runs again.")


def budget_for(memory_budget_gb: float, safety_margin_gb: float, measured_free: int,
               where: str = "the VAE's device") -> tuple[int, int, str]:
    """(free bytes, margin bytes, where the budget comes from). A typed memory_budget_gb IS the
    budget; the margin only keeps memory free out of what was measured free (issue 12: a typed
    0.5 GiB minus the 0.5 GiB default margin left nothing and a 768 px decode ran in 177 tiles)."""
    typed = float(memory_budget_gb or 0.0)
    if typed > 0:
        return int(typed * GiB), 0, f"memory_budget_gb = {typed:g}"
    margin = int(max(0.0, float(safety_margin_gb or 0.0)) * GiB)
    return int(measured_free), margin, (f"{fmt_gib(measured_free)} free on {where} after ComfyUI unloaded what it "
                                        f"could - {fmt_gib(margin)} margin")


def run_auto(op: str, vae, tensor, memory_budget_gb: float = 0.0, safety_margin_gb: float = DEFAULT_MARGIN_GB,
             mode: str = "auto", node_id=None, title: str = ""):
    """Decode (op="decode", tensor = latent) or encode (op="encode", tensor = IMAGE) within memory.

    Returns (output tensor, AutoResult). Raises PlanError when even the smallest tiles run out of
    memory; the input tensor is never modified."""
    vae.throw_exception_if_invalid()
    mode_id = _MODE_IDS.get(str(mode).strip().lower(), None)
    if mode_id is None:
        raise PlanError(f"{title or 'VAE (Auto Tiled)'}: mode must be one of {', '.join(MODE_CHOICES)}, got '{mode}'")
    info = bridge.vae_info(vae)
    t0 = time.perf_counter()

    if info.latent_dim == 1 or getattr(vae, "extra_1d_channel", None) is not None or (op == "decode" and tensor.ndim not in (4, 5)):
        # audio VAEs (1-D latents): nothing to tile spatially; ComfyUI's own path, said plainly
        out = vae.decode(tensor) if op == "decode" else vae.encode(tensor)
        seconds = time.perf_counter() - t0
        plan = vm.DecodePlan(op=op, family=info.class_name, shape=vm.Shape(int(tensor.shape[0]), None, 1, 1),
                             tiled=False, batch_chunk=int(tensor.shape[0]), reason="not planned: 1-D (audio) VAE")
        return out, AutoResult(plan, f"{op}d with ComfyUI's own {op} (audio VAE: not planned) ({seconds:.1f} s)", (),
                               seconds, False, False, "none")

    if op == "decode":
        x = tensor
        if info.latent_dim == 2 and x.ndim == 5:  # as VAE.decode does
            x = x[:, :, 0]
        dims = tuple(x.shape)
        if x.ndim == 5:
            plan_shape = vm.Shape(dims[0], dims[2], dims[3], dims[4])
        else:
            plan_shape = vm.Shape(dims[0], None, dims[2], dims[3])
        comfy_shape = dims
    else:
        x = tensor
        s = info.spatial
        b, h, w = int(x.shape[0]), int(x.shape[1]) // s * s, int(x.shape[2]) // s * s  # VAE crops to the ratio
        if info.latent_dim == 3:  # IMAGE frames are the video's frames (VAE.encode: movedim + unsqueeze)
            plan_shape = vm.Shape(1, b, h, w)
            comfy_shape = (1, 3, b, h, w)
        else:
            plan_shape = vm.Shape(b, None, h, w)
            comfy_shape = (b, 3, h, w)
        dims = tuple(x.shape)

    model = _model_for(vae, info, op, comfy_shape, plan_shape)
    full_need = vm.with_headroom(vm.op_bytes(model, op, plan_shape, info.dtype_bytes))
    # Load the VAE as ComfyUI's decode would, letting it unload other models to make room.
    measured_free = bridge.prepare_vae(vae, full_need + int(max(0.0, float(safety_margin_gb or 0.0)) * GiB))
    free, margin, budget_source = budget_for(memory_budget_gb, safety_margin_gb, measured_free, info.device)
    # on AMD an AutoencoderKL decode holds 2.73x what the trace counts (vae_memory.AMD_KL_MEM_RATIO): plan the
    # pieces for the memory divided by that
    free = int(free / vm.amd_kl_ratio(info.family or "", bridge.gpu_vendor()))

    key = _remember_key(op, info, dims, mode_id)
    plan, remembered = _choose(op, model, plan_shape, free, margin, info.dtype_bytes, mode_id, key)

    runner = _run_decode_plan if op == "decode" else _run_encode_plan
    attempts: list[str] = []
    comfy_fallback = False
    while True:
        oom_message = None
        try:
            with _ComfyFallbackWatch() as watch:
                out = runner(vae, x, plan)
            comfy_fallback = watch.fired
            break
        except Exception as exc:  # noqa: BLE001 - only OOM is handled, the rest re-raised
            if not bridge.is_oom(exc):
                raise
            oom_message = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ''}"
        # Outside the except block: the exception, its traceback and the frames holding the failed
        # attempt's tensors are gone, so the cache can really be emptied.
        attempts.append(f"{plan.summary() if not plan.tiled else plan.tile_label() + ' tiles'}: {oom_message}")
        log.warning("[VRAM Budget] %s: out of memory (%s), trying smaller pieces", title or op, oom_message)
        bridge.soft_empty_cache()
        nxt = vm.smaller_plan(plan)
        if nxt is None:
            tried = "; ".join(attempts)
            raise PlanError(f"{title or 'VAE (Auto Tiled)'}: out of memory even with the smallest pieces "
                            f"({plan.tile_label() if plan.tiled else 'one item per call'}). Tried: {tried}. "
                            + _rerun_help(op))
        plan = nxt

    if comfy_fallback:
        attempts.append("ComfyUI ran out of memory in one go and fell back to its own tiles")
    if attempts:
        PLAN_MEMORY.put(key, _Outcome(plan, free, tuple(attempts)))
    elif PLAN_MEMORY.get(key) is None or not remembered:
        PLAN_MEMORY.put(key, _Outcome(plan, free, ()))
    seconds = time.perf_counter() - t0

    text = plan.summary()
    if attempts:
        text += f" after {len(attempts)} out-of-memory retr{'y' if len(attempts) == 1 else 'ies'}"
    if comfy_fallback:
        text += " (ComfyUI's own tiled fallback ran)"
    if remembered:
        text += " [remembered from an earlier run]"
    text += f" ({seconds:.1f} s)"
    return out, AutoResult(plan, text, tuple(attempts), seconds, comfy_fallback, remembered, budget_source)


def _announce(node_id, title: str, result: AutoResult) -> str:
    log.info("[VRAM Budget] %s: %s. %s; budget: %s", title, result.text, result.plan.reason, result.budget_source)
    bridge.send_node_text(node_id, result.text)
    return result.text


# ----------------------------------------------------------------------------------------------
# Nodes (V1)
def _optional_inputs(op: str = "decode") -> dict:
    # Input names stay *_gb (saved workflows keep working); display_name shows the unit PyTorch prints.
    return {
        "memory_budget_gb": ("FLOAT", {
            "default": 0.0, "min": 0.0, "max": 4096.0, "step": 0.1, "display_name": "memory_budget_gib",
            "tooltip": f"Memory the {op} may use, in GiB, used as it is (no margin taken off). 0 = what is free "
                       "on the VAE's device after ComfyUI unloaded what it could (system RAM for the CPU), minus "
                       "the safety margin. Set it to simulate a smaller card."}),
        "safety_margin_gb": ("FLOAT", {
            "default": DEFAULT_MARGIN_GB, "min": 0.0, "max": 256.0, "step": 0.1, "display_name": "safety_margin_gib",
            "tooltip": "Kept free besides the predicted peak, in GiB, out of the measured free memory "
                       "(memory_budget_gb = 0 only: a typed budget is the budget)."}),
        "mode": (list(MODE_CHOICES), {
            "default": "auto",
            "tooltip": "auto: one go when it fits, else the fastest tiles that fit (few, large ones). "
                       "force tiled: always tiles (an image no larger than one tile still runs in one go). "
                       "never tiled: one go (ComfyUI's own fallback still tiles after an out-of-memory error)."}),
    }


class VAEDecodeAutoTiled:
    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "samples": ("LATENT", {"tooltip": "The latent to be decoded."}),
                "vae": ("VAE", {"tooltip": "The VAE model used for decoding the latent."}),
            },
            "optional": _optional_inputs(),
            "hidden": {"unique_id": "UNIQUE_ID"},
        }

    RETURN_TYPES = ("IMAGE",)
    OUTPUT_TOOLTIPS = ("The decoded image (video: all frames, as VAE Decode returns them).",)
    FUNCTION = "decode_ui"
    CATEGORY = "latent"
    DESCRIPTION = ("Decodes latents like VAE Decode, in one go when the decode fits in free memory and with the "
                   "fastest tiles that fit when it does not: it predicts the memory first instead of failing first. "
                   "Shows on the node which path ran and why.")

    def decode(self, samples, vae, memory_budget_gb=0.0, safety_margin_gb=DEFAULT_MARGIN_GB, mode="auto", unique_id=None):
        latent = samples["samples"]
        if getattr(latent, "is_nested", False):
            latent = latent.unbind()[0]
        images, result = run_auto("decode", vae, latent, memory_budget_gb, safety_margin_gb, mode, unique_id,
                                  "VAE Decode (Auto Tiled)")
        if len(images.shape) == 5:  # combine batches, as VAEDecode does
            images = images.reshape(-1, images.shape[-3], images.shape[-2], images.shape[-1])
        self.last_text = _announce(unique_id, "VAE Decode (Auto Tiled)", result)
        return (images,)

    def decode_ui(self, **inputs):
        """ComfyUI's entry (FUNCTION): decode() plus which path ran and why, as the node's ui text
        (shown on the node by web/vram_budget_node.js; kept after the run, unlike progress text)."""
        (images,) = self.decode(**inputs)
        return {"ui": {"text": [self.last_text]}, "result": (images,)}


class VAEEncodeAutoTiled:
    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "pixels": ("IMAGE", {"tooltip": "The image(s) or video frames to encode."}),
                "vae": ("VAE", {"tooltip": "The VAE model used for encoding."}),
            },
            "optional": _optional_inputs("encode"),
            "hidden": {"unique_id": "UNIQUE_ID"},
        }

    RETURN_TYPES = ("LATENT",)
    OUTPUT_TOOLTIPS = ("The encoded latent (video: all frames, as VAE Encode returns it).",)
    FUNCTION = "encode_ui"
    CATEGORY = "latent"
    DESCRIPTION = ("Encodes images like VAE Encode, in one go when it fits in free memory and with the largest "
                   "tiles that fit when it does not (large image-to-video inputs).")

    def encode(self, pixels, vae, memory_budget_gb=0.0, safety_margin_gb=DEFAULT_MARGIN_GB, mode="auto", unique_id=None):
        latent, result = run_auto("encode", vae, pixels, memory_budget_gb, safety_margin_gb, mode, unique_id,
                                  "VAE Encode (Auto Tiled)")
        self.last_text = _announce(unique_id, "VAE Encode (Auto Tiled)", result)
        return ({"samples": latent},)

    def encode_ui(self, **inputs):
        """ComfyUI's entry (FUNCTION): encode() plus its ui text, as decode_ui."""
        (latent,) = self.encode(**inputs)
        return {"ui": {"text": [self.last_text]}, "result": (latent,)}


NODE_CLASS_MAPPINGS = {
    "VAEDecodeAutoTiled": VAEDecodeAutoTiled,
    "VAEEncodeAutoTiled": VAEEncodeAutoTiled,
}
NODE_DISPLAY_NAME_MAPPINGS = {
    "VAEDecodeAutoTiled": "VAE Decode (Auto Tiled)",
    "VAEEncodeAutoTiled": "VAE Encode (Auto Tiled)",
}
