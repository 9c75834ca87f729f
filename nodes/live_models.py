"""Inside ComfyUI: the estimator asks ComfyUI itself about model files (comfy_trace.py does the work).

``live_hooks(wait_s)`` is a context manager the VRAM Budget node and the panel's estimate route
wrap around an estimate. Within it:
- a model file the estimator cannot identify from its keys is identified by ComfyUI's own
  ``comfy.model_detection`` (families.LIVE_IDENTIFY), so a family released after this pack is
  still named and priced;
- a node of a pack no table knows is read by its socket types, from ComfyUI's own node definitions
  (graph.LIVE_SPECS; the estimate says which stages were inferred);
- the working memory of a diffusion model on this machine is traced with ComfyUI's own model code
  at the prompt's exact shapes (memory.LIVE_TRACER), and the report says so.
Answers come from a disk cache (ComfyUI's user directory, vram_budget/live_traces.json) or from the
trace worker, waited for at most ``wait_s`` in all (one deadline per estimate); a trace that takes longer goes on in the background
for the next estimate, and this one uses the shipped table. ``VRAM_BUDGET_LIVE_TRACE=0`` turns it off.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time

from . import comfy_bridge
from .comfy_trace import LiveTracer, tensor_list
from .estimator import families
from .estimator.physics import memory, vae_memory
from .estimator.files import inspect_file
from .estimator.graph import LIVE_SPECS
from .estimator.graph.base import INPUT_MEDIA
from .estimator.models.media import input_reader
from .estimator.workload import LatentShape

log = logging.getLogger(__name__)
_lock = threading.Lock()
_tracer: LiveTracer | None = None


def enabled() -> bool:
    return os.environ.get("VRAM_BUDGET_LIVE_TRACE", "1").strip().lower() not in ("0", "false", "no", "off")


def comfy_root() -> str | None:
    """The ComfyUI folder (the one holding comfy/ and folder_paths.py)."""
    fp = sys.modules.get("folder_paths")
    path = getattr(fp, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) if path else None


def tracer() -> LiveTracer | None:
    global _tracer
    if not enabled():
        return None
    with _lock:
        if _tracer is None:
            root = comfy_root()
            if root is None:
                return None
            cache = None
            try:
                import folder_paths  # noqa: PLC0415

                cache = os.path.join(folder_paths.get_user_directory(), "vram_budget", "live_traces.json")
            except Exception:  # noqa: BLE001
                pass
            _tracer = LiveTracer(root, python=sys.executable, cache_path=cache,
                                 comfy_version=comfy_bridge.comfy_version() or "unknown")
        return _tracer


_prewarmed = False


def prewarm() -> None:
    """Start the trace worker in the background once (its ~10 s start then does not fall on the
    first estimate). Called when the UI first asks for the readout; cheap after that."""
    global _prewarmed
    if _prewarmed:
        return
    _prewarmed = True
    t = tracer()
    if t is not None:
        threading.Thread(target=t.warm, name="vram-budget-trace-warm", daemon=True).start()


def _detection(t: LiveTracer, path: str, wait_s: float) -> dict | None:
    try:
        inv = inspect_file(path)
    except Exception:  # noqa: BLE001 - the estimator reports unreadable files itself
        return None
    return t.detect(tensor_list(inv), inv.metadata, wait_s=wait_s)


def _latent_list(latent: LatentShape, batch: int, found: dict) -> list[int]:
    channels = latent.channels or int(found.get("latent_channels") or 4)
    if int(found.get("latent_dimensions") or 2) >= 3 or latent.frames:
        return [batch, channels, latent.frames or 1, latent.height, latent.width]
    return [batch, channels, latent.height, latent.width]


@contextlib.contextmanager
def live_hooks(wait_s: float = 15.0):
    """Let the estimator ask ComfyUI (see the module docstring) for the duration of the block; also
    gives it the sizes of the images in ComfyUI's input folder."""
    media_token = _input_media()
    specs_token = LIVE_SPECS.set(comfy_bridge.live_node_specs)  # unknown node packs read by their socket types
    try:
        with _live_tracing(wait_s) as t:
            yield t
    finally:
        LIVE_SPECS.reset(specs_token)
        if media_token is not None:
            INPUT_MEDIA.reset(media_token)


def _input_media():
    """Loaded images' real sizes from ComfyUI's input folder (header only, confined to the folder)."""
    try:
        import folder_paths  # noqa: PLC0415

        return INPUT_MEDIA.set(input_reader(folder_paths.get_input_directory()))
    except Exception:  # noqa: BLE001 - outside ComfyUI: sizes stay unknown
        return None


@contextlib.contextmanager
def _live_tracing(wait_s: float):
    t = tracer()
    if t is None:
        yield None
        return
    deadline = time.monotonic() + wait_s  # one budget for the whole estimate, however many models

    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    def identify(path: str, inv) -> dict | None:
        return t.detect(tensor_list(inv), inv.metadata, wait_s=left())

    def trace(path: str, latent: LatentShape, batch: int, text_tokens: int):
        found = _detection(t, path, left())
        if not found or found.get("kind") != "diffusion":
            return None
        inv = inspect_file(path)
        res = t.trace(tensor_list(inv), _latent_list(latent, batch, found), text_tokens, inv.metadata, wait_s=left())
        if res is None:
            if t.last_error:
                log.info("[VRAM Budget] live trace of %s not used: %s", os.path.basename(path), t.last_error)
            return None
        return int(res["working_bytes"]), f"ComfyUI {t.comfy_version}'s own {res.get('class', found['class'])} code"

    def trace_train(path: str, latent: LatentShape, batch: int, text_tokens: int, depth: int = 1):
        found = _detection(t, path, left())
        if not found or found.get("kind") != "diffusion":
            return None
        inv = inspect_file(path)
        res = t.trace_train(tensor_list(inv), _latent_list(latent, batch, found), text_tokens, inv.metadata,
                            wait_s=left(), depth=depth)
        if res is None:
            return None
        return int(res["working_bytes"]), f"ComfyUI {t.comfy_version}'s own {res.get('class', found['class'])} code"

    def trace_vae(path: str, op: str, shape: list):
        inv = inspect_file(path)
        res = t.trace_vae(tensor_list(inv), shape, op, wait_s=left())
        if res is None:
            return None
        return int(res["working_bytes"]), f"ComfyUI {t.comfy_version}'s own {res.get('class', 'VAE')} code"

    vae_token = vae_memory.LIVE_VAE_TRACER.set(trace_vae)
    id_token = families.LIVE_IDENTIFY.set(identify)
    tr_token = memory.LIVE_TRACER.set(trace)
    train_token = memory.LIVE_TRAIN_TRACER.set(trace_train)
    try:
        yield t
    finally:
        memory.LIVE_TRAIN_TRACER.reset(train_token)
        memory.LIVE_TRACER.reset(tr_token)
        families.LIVE_IDENTIFY.reset(id_token)
        vae_memory.LIVE_VAE_TRACER.reset(vae_token)
