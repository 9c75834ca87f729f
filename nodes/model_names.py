"""Loaded models by file name, where ComfyUI does not record it.

ComfyUI 0.13+ records the file of diffusion models and text encoders on the model patcher
(``cached_patcher_init``, 0.18.2 comfy/sd.py:1204, :1576, :1578, :1798; read by
comfy_bridge.models._model_file). ComfyUI 0.8.0 records no file at all, and no version records the VAE's.
For those, the loader that produced the model: when a prompt ends (run_log's hook), the models that
were loaded during it are matched by type with the loader nodes of that prompt (VAELoader's
vae_name for a VAE, ...). One candidate file of that type: that file. Several (two UNETLoaders for
Wan 2.2's experts, which have the same shapes): all of them, "a or b", never a guess.

Pure Python: the caller passes plain data (routes.py reads ComfyUI's loaded models).
"""
from __future__ import annotations

import threading
from typing import Callable, Iterable

# class_type -> (file widgets, model types it produces: comfy_bridge.models._model_type's names)
LOADERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "CheckpointLoaderSimple": (("ckpt_name",), ("diffusion", "text_encoder", "vae")),
    "CheckpointLoader": (("ckpt_name",), ("diffusion", "text_encoder", "vae")),
    "ImageOnlyCheckpointLoader": (("ckpt_name",), ("diffusion", "clip_vision", "vae")),
    "UNETLoader": (("unet_name",), ("diffusion",)),
    "UnetLoaderGGUF": (("unet_name",), ("diffusion",)),
    "CLIPLoader": (("clip_name",), ("text_encoder",)),
    "CLIPLoaderGGUF": (("clip_name",), ("text_encoder",)),
    "DualCLIPLoader": (("clip_name1", "clip_name2"), ("text_encoder",)),
    "DualCLIPLoaderGGUF": (("clip_name1", "clip_name2"), ("text_encoder",)),
    "TripleCLIPLoader": (("clip_name1", "clip_name2", "clip_name3"), ("text_encoder",)),
    "QuadrupleCLIPLoader": (("clip_name1", "clip_name2", "clip_name3", "clip_name4"), ("text_encoder",)),
    "VAELoader": (("vae_name",), ("vae",)),
    "ControlNetLoader": (("control_net_name",), ("controlnet",)),
    "DiffControlNetLoader": (("control_net_name",), ("controlnet",)),
    "CLIPVisionLoader": (("clip_name",), ("clip_vision",)),
    "UpscaleModelLoader": (("model_name",), ("upscale",)),
}


def _base(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def loader_files(prompt: dict) -> dict[str, list[str]]:
    """model type -> the file labels this prompt's loaders name for it, in node order, unique.
    A multi-file loader (DualCLIPLoader) gives one label "a + b", as ComfyUI 0.18 records it."""
    out: dict[str, list[str]] = {}
    if not isinstance(prompt, dict):
        return out
    for node in prompt.values():
        if not isinstance(node, dict):
            continue
        spec = LOADERS.get(node.get("class_type"))
        inputs = node.get("inputs") if isinstance(node.get("inputs"), dict) else {}
        if spec is None:
            continue
        names = [inputs.get(w) for w in spec[0]]
        if not names or not all(isinstance(n, str) and n for n in names):
            continue  # a linked (computed) file name: nothing to say
        label = " + ".join(_base(n) for n in names)
        for kind in spec[1]:
            if label not in out.setdefault(kind, []):
                out[kind].append(label)
    return out


def attribute(new_models: Iterable[tuple[str, str]], files: dict[str, list[str]]) -> dict[str, str]:
    """{model key: file label} for models (key, type) loaded during a prompt with these loaders."""
    out = {}
    for key, kind in new_models:
        candidates = files.get(kind) or []
        if candidates:
            out[key] = " or ".join(candidates)
    return out


class ModelNames:
    """Remembers, per loaded model (ModelPatcher id), the file its prompt's loader named."""

    def __init__(self, snapshot: Callable[[], list]):
        self.snapshot = snapshot  # -> [(key, type, file or None)] of the loaded models
        self.names: dict[str, str] = {}
        self._before: set[str] = set()
        self._lock = threading.Lock()

    def started(self, _prompt_id: str) -> None:
        self._before = {key for key, _kind, _file in self.snapshot()}

    def ended(self, _prompt_id: str, history_entry: dict) -> None:
        item = (history_entry or {}).get("prompt")
        prompt = item[2] if isinstance(item, (list, tuple)) and len(item) > 2 else None
        models = self.snapshot()
        new = [(key, kind) for key, kind, file in models if key not in self._before and not file]
        found = attribute(new, loader_files(prompt))
        live = {key for key, _kind, _file in models}
        with self._lock:
            self.names = {k: v for k, v in self.names.items() if k in live}
            self.names.update(found)

    def name_for(self, key: str) -> str | None:
        with self._lock:
            return self.names.get(key)
