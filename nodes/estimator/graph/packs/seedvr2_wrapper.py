"""numz/ComfyUI-SeedVR2_VideoUpscaler (at 4490bd1, v2.5): SeedVR2 3B / 7B upscaling with its own loaders and one
node that runs three phases (src/core/generation_phases.py), each with one model on the GPU:

1. encode_all_batches: the VAE on its `device`, each batch of `batch_size` frames (4n+1) at the OUTPUT size
   encoded (tiled when the VAE loader's encode_tiled is on: encode_tile_size / _overlap pixels), the latents kept on
   the upscaler's offload_device; then the VAE moves to the VAE loader's offload_device, or stays on the GPU when
   that is 'none' (:531-534).
2. upscale_all_batches: the DiT materialised on its device with `blocks_to_swap` blocks kept on its offload device
   and brought in one at a time (src/optimization/blockswap.py), one step per batch (SeedVR2 is one-step, no CFG);
   afterwards cleanup_dit moves it off the GPU whatever its offload_device (memory_manager.py:1047-1062).
3. decode_all_batches: the VAE back on its device (tiled when decode_tiled).

The output size: the input's shortest side scaled to `resolution`, then both sides scaled down so that neither
passes `max_resolution` (0: no limit), cropped to multiples of 16 (src/data/image/transforms). The image's own size
is read where the graph fixes it, else assumed (and said) as the analyzer does for LoadImage.
Families: families/seedvr2.py (the same NaDiT and causal VAE ComfyUI 0.33 traced: its working-memory rules are the
estimate, said as such: the pack's own code is not traced).
"""
from __future__ import annotations

from ...workload import SAMPLE, VAE_DECODE, VAE_ENCODE, LatentShape, Stage
from ..base import _replace
from . import Pack, loader

DIT_LOADER, VAE_LOADER, RUN = "SeedVR2LoadDiTModel", "SeedVR2LoadVAEModel", "SeedVR2VideoUpscaler"
DIT, VAE = "SEEDVR2_DIT", "SEEDVR2_VAE"
MANAGER = "SeedVR2"
FOLDER = "SEEDVR2"  # folder_paths "seedvr2" -> models/SEEDVR2 (src/utils/constants.py)


@loader
def _loader_refs(a, node, slot, type_, visiting):
    want = DIT if node.type == DIT_LOADER else VAE
    if type_ != want:
        return []
    name = str(a.value(node, "model") or "")
    ref = a.loader_ref(node, "model", role="diffusion" if want == DIT else "vae", folder=FOLDER,
                       gguf=name.lower().endswith(".gguf"))
    return [ref] if ref else []


def output_size(width: int, height: int, resolution: int, max_resolution: int) -> tuple[int, int]:
    """The upscaled frame's (width, height): shortest side to `resolution`, capped by `max_resolution`, floored to
    multiples of 16."""
    scale = resolution / max(1, min(width, height))
    w, h = width * scale, height * scale
    if max_resolution and max(w, h) > max_resolution:
        cap = max_resolution / max(w, h)
        w, h = w * cap, h * cap
    return max(16, int(w) // 16 * 16), max(16, int(h) // 16 * 16)


def _run(a, node):
    dit_link, vae_link = a.link(node, "dit"), a.link(node, "vae")
    dit_refs, vae_refs = a.refs(dit_link, DIT), a.refs(vae_link, VAE)
    size = a.image_size(a.link(node, "image"))
    # the widgets' own limits (src/interfaces/video_upscaler.py: 16 - 16384 px, batch 1 - 16384)
    resolution = min(max(a.number(node, "resolution", 1080) or 1080, 16), 16384)
    max_resolution = min(max(a.number(node, "max_resolution", 0) or 0, 0), 16384)
    batch = min(max(1, a.number(node, "batch_size", 5) or 5), 16384)
    if size is None or not size.width or not size.height:
        a.unpriced("the input's size is not known before it loads: SeedVR2 scales its shortest side to "
                   f"{resolution} px, so the output's other side follows the input's aspect")
        return [a.sample_stage(node, model_links=[dit_link], cond_links=[], cfg=None, uses_negative=False, steps=1,
                               latent=None, model_type=DIT, manager=MANAGER)]
    width, height = output_size(size.width, size.height, resolution, max_resolution)
    frames_in = size.batch if size.exact and size.batch else None
    frames = min(batch, frames_in) if frames_in else batch
    frames = ((frames - 1) // 4) * 4 + 1 if frames > 1 else 1  # 4n+1 (generation_phases.py _apply_4n1_padding)
    said = f"{size.width}×{size.height}" + ("" if size.exact else " (assumed)")
    a.note(f"{a.label(node)}: {said} -> {width}×{height} (resolution {resolution}"
           + (f", max_resolution {max_resolution}" if max_resolution else "") + f"), {frames} frame(s) per batch")
    latent = LatentShape(batch=1, channels=16, height=height // 8, width=width // 8,
                         frames=(frames - 1) // 4 + 1, pixel_height=height, pixel_width=width, pixel_frames=frames,
                         spatial_compression=8, temporal_compression=4, source_node=node.id, source_type=node.type)
    vae_node = a.nodes.get(vae_refs[0].loader_node) if vae_refs else None
    dit_node = a.nodes.get(dit_refs[0].loader_node) if dit_refs else None

    def tiles(kind: str):
        if vae_node is None or a.value(vae_node, f"{kind}_tiled") is not True:
            return None
        tile = a.number(vae_node, f"{kind}_tile_size", 1024) or 1024
        return {"tile_size": tile, "overlap": a.number(vae_node, f"{kind}_tile_overlap", 128) or 0,
                "temporal_size": 10_000, "temporal_overlap": 0}

    vae_kept = vae_node is not None and str(a.value(vae_node, "offload_device") or "none") == "none"
    offload = "full" if vae_kept else ""  # 'none': the VAE stays on the GPU through the DiT phase (:531-534)
    swap = a.number(dit_node, "blocks_to_swap", 0) if dit_node is not None else 0
    encode = Stage(kind=VAE_ENCODE, node_id=node.id, node_type=node.type, models=tuple(vae_refs), latent=latent,
                   manager=MANAGER, tiled=tiles("encode"), offload=offload,
                   decode_options={"encode_per_tile": True} if tiles("encode") else None)
    sample = a.sample_stage(node, model_links=[dit_link], cond_links=[], cfg=None, uses_negative=False, steps=1,
                            latent=latent, model_type=DIT, manager=MANAGER, blocks_to_swap=swap or 0)
    decode = Stage(kind=VAE_DECODE, node_id=node.id, node_type=node.type, models=tuple(vae_refs), latent=latent,
                   manager=MANAGER, tiled=tiles("decode"))
    return [encode, sample, decode]


PACK = Pack(
    name="ComfyUI-SeedVR2_VideoUpscaler",
    stage_kinds={RUN: SAMPLE},
    stages={RUN: _run},
    refs={DIT_LOADER: _loader_refs, VAE_LOADER: _loader_refs},
    relevant_types={DIT, VAE},
    handled={"SeedVR2TorchCompileSettings"},
    # the nodes' schema order (src/interfaces/*.py); a workflow saved without widget names reads by position
    widgets={DIT_LOADER: ["model", "device", "blocks_to_swap", "swap_io_components", "offload_device", "cache_model",
                          "attention_mode"],
             VAE_LOADER: ["model", "device", "encode_tiled", "encode_tile_size", "encode_tile_overlap", "decode_tiled",
                          "decode_tile_size", "decode_tile_overlap", "tile_debug", "offload_device", "cache_model"],
             RUN: ["seed", "resolution", "max_resolution", "batch_size", "uniform_batch_size", "color_correction",
                   "temporal_overlap", "prepend_frames", "input_noise_scale", "latent_noise_scale", "offload_device",
                   "enable_debug"]},
    output_types={DIT_LOADER: [DIT], VAE_LOADER: [VAE], RUN: ["IMAGE"]},
    input_types={RUN: {"image": "IMAGE", "dit": DIT, "vae": VAE}},
)
