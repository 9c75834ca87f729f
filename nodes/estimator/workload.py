"""Plain data the graph reader produces and the budget consumes (no logic beyond tiny helpers)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

# Stage kinds, in the order ComfyUI usually runs them.
TEXT_ENCODE = "text_encode"
SAMPLE = "sample"
VAE_DECODE = "vae_decode"
VAE_ENCODE = "vae_encode"
CLIP_VISION_ENCODE = "clip_vision_encode"
AUDIO_ENCODE = "audio_encode"  # AudioEncoderEncode: wav2vec2 / Whisper over the loaded audio
TRAIN = "train"  # TrainLoraNode: forward + backward + optimizer steps on the model
UPSCALE = "upscale"  # ImageUpscaleWithModel: an ESRGAN-style model over 512 px tiles


@dataclass(frozen=True)
class ModelRef:
    """One model file a stage needs, as the workflow names it."""

    role: str  # "diffusion" | "text_encoder" | "vae" | "lora" | "controlnet" | "clip_vision" | "checkpoint"
    name: str  # the widget value, e.g. "flux1-dev.safetensors" or "wan/umt5_xxl_fp8.safetensors"
    folder: str  # ComfyUI model folder: checkpoints, diffusion_models, text_encoders, vae, loras, controlnet, clip_vision
    loader_node: str = ""  # node id of the loader
    loader_type: str = ""  # class_type of the loader
    weight_dtype: str | None = None  # UNETLoader widget: default | fp8_e4m3fn | fp8_e4m3fn_fast | fp8_e5m2
    clip_type: str | None = None  # CLIPLoader/DualCLIPLoader `type` widget (flux, wan, sd3, ...)
    strength: float | None = None  # LoRA strength (model)
    part: str | None = None  # for a checkpoint: which part a stage uses: "model" | "clip" | "vae"
    device: str | None = None  # loader `device` widget ("cpu" keeps a text encoder off the GPU)
    gguf: bool = False  # loaded by a ComfyUI-GGUF loader
    offload_bytes: int = 0  # ComfyUI-MultiGPU DisTorch virtual VRAM: weights kept on a donor device (RAM)
    unset: bool = False  # the loader names no file the reader can see (empty widget, unresolved link)
    # Why the model is on `device` when a node pack placed it (ComfyUI-MultiGPU: "ComfyUI-MultiGPU
    # CLIPLoaderMultiGPU device=cpu"); "" = ComfyUI's own choice (placement.py says which)
    placed_by: str = ""
    donor_device: str | None = None  # DisTorch `donor_device`: where offload_bytes live ("cpu" = RAM, "cuda:1" = VRAM)
    allocation: str = ""  # DisTorch `expert_mode_allocations` as written ("cuda:0,8gb;cpu,*"), "" = none
    # what the loader node says of the file's family when its name says nothing (a loader that loads one family:
    # ComfyUI-Kolors-MZ's UNet loader -> "kolors"); read by the name rules like a sub-folder, never to find the file
    hint: str = ""


@dataclass(frozen=True)
class LatentShape:
    """A latent as the diffusion model / VAE sees it (latent units)."""

    batch: int
    channels: int | None  # None when the creator does not fix it (EmptyLatentImage: re-channelled at sampling)
    height: int  # latent rows
    width: int  # latent columns
    frames: int | None = None  # latent frames for video latents, None for images
    pixel_height: int = 0
    pixel_width: int = 0
    pixel_frames: int | None = None  # frames the user asked for (length)
    spatial_compression: int = 8
    temporal_compression: int | None = None
    source_node: str = ""
    source_type: str = ""
    # "" for images and videos; "audio" ([B, C, H, W] spectrogram-like latents: ACE-Step [B, 8, 16, L],
    # LTX-2 audio [B, 8, T, 16]) or "3d" (Hunyuan3D [B, 64, N]: height 1, width N latent vectors)
    media: str = ""
    # LTX-2: the audio latent that travels with this video latent (LTXVConcatAVLatent)
    audio: "LatentShape | None" = None

    @property
    def is_video(self) -> bool:
        return self.frames is not None



def ref_key(ref: ModelRef) -> str:
    """The key a model goes by in a budget's `models`: "folder/name" as the workflow names it."""
    return f"{ref.folder}/{ref.name}"


DIFFUSERS = "diffusers"  # Stage.manager of a diffusers pipeline a node pack drives (runtime.run_diffusers)


@dataclass(frozen=True)
class Stage:
    kind: str  # TEXT_ENCODE, SAMPLE, VAE_DECODE, VAE_ENCODE, CLIP_VISION_ENCODE
    node_id: str
    node_type: str
    title: str = ""
    models: tuple[ModelRef, ...] = ()
    latent: LatentShape | None = None
    cfg: float | None = None  # None when the guider decides (e.g. BasicGuider = no uncond)
    uses_negative: bool = True  # False for BasicGuider / FluxGuidance-only pipelines
    steps: int | None = None
    expert: str | None = None  # "high_noise" / "low_noise" for Wan 2.2 A14B two-pass sampling
    tiled: dict | None = None  # VAEDecodeTiled settings {tile_size, overlap, temporal_size, temporal_overlap} (pixels/frames)
    auto_tiled: bool = False  # this pack's VAE Decode (Auto Tiled): tiles only under pressure
    text_tokens: int | None = None  # prompt length estimate for text encoders (prompt + generated for TextGenerate)
    generate_tokens: int | None = None  # TextGenerate: max_length, the tokens the LLM may generate (KV cache)
    images: tuple[tuple[int, int], ...] = ()  # (width, height) of images a VL text encoder reads (image tokens)
    # Who places the weights on the GPU: None = ComfyUI's model management (partial loads, Dynamic
    # VRAM); "WanVideoWrapper" = the wrapper's own placement (whole model on the GPU but for
    # `blocks_to_swap` transformer blocks kept in RAM; no partial load, no tiled retry); "diffusers" = a diffusers
    # pipeline a pack drives with its own `offload` mode (runtime.run_diffusers).
    manager: str | None = None
    blocks_to_swap: int | None = None
    # a node pack's own code priced by its own terms (counts and traces of that code): ComfyUI's lower-precision,
    # batch, frames and resolution remedies are not this pack's options (plan/advice.py skips them)
    pack_priced: bool = False
    # block swap over blocks of unequal sizes (HunyuanVideoWrapper's double and single blocks): (count swapped,
    # parameters of one block) pairs; runtime.run_wrapper prices them as their share of the model's weights
    swap_blocks: tuple[tuple[int, int], ...] = ()
    # manager "diffusers": "full" | "model" | "sequential" | "group" (runtime.OFFLOAD_MODES); manager
    # LAYERSTYLE_SAM: "kept" (cache_model: SAM and GroundingDINO stay on the GPU after the node)
    offload: str = ""
    # what makes a stage a node pack places fit when it does not, in that pack's own widgets ("" = the rule's own)
    offload_fix: str = ""
    # Why this stage's model skips Dynamic VRAM although it is on (the legacy path: partial load, process RAM),
    # e.g. "TorchCompileModel: model.clone(disable_dynamic=True), nodes_torch_compile.py:28"; "" = it does not
    legacy_path: str = ""
    cfg_batched: bool | None = None  # None: ComfyUI decides by free memory; True/False: the node says
    context_frames: int | None = None  # context windows: the model sees this many pixel frames at once
    train: dict | None = None  # TrainLoraNode widgets: batch_size, rank, optimizer, lora_dtype, checkpointing...
    decode_options: dict | None = None  # VAEDecodeHunyuan3D: num_chunks, octree_resolution
    # reference latents on the sampler's conditioning (ReferenceLatent, TextEncodeQwenImageEdit[Plus]):
    # (latent rows, latent columns) each; edit models attend over their tokens next to the image's
    reference_latents: tuple[tuple[int, int], ...] = ()
    notes: tuple[str, ...] = ()
    # Why the graph could not price this stage's working memory ("" = it could), set by the analyzer or a node
    # pack (Analyzer.unpriced); the stage builder turns it into StageBudget.unpriced and the note users read
    unpriced: str = ""
    # Where the stage runs: its main model's device ("cuda:1", "cpu"); None = ComfyUI's main device (cuda:0).
    # Filled by placement.place_stages when a loader placed that model; device_reason says which loader.
    device: str | None = None
    device_reason: str = ""
    # Working memory a node pack priced itself for a model stage without a latent (an image-geometry ViT):
    # (label, bytes, assumption) each; stages/sample.py adds them as "working" items
    working: tuple[tuple[str, int, str], ...] = ()
    # Bytes of the stage's output its node keeps on the CPU (FrameInterpolate's float32 frames): RAM held in the cache
    # from this stage on, as a VAE decode's frames (host_memory.image_bytes)
    host_output_bytes: int = 0


@dataclass(frozen=True)
class Workload:
    stages: tuple[Stage, ...]
    source_format: str = "api"  # "api" | "ui"
    unknown_nodes: tuple[tuple[str, str], ...] = ()  # (node id, class_type) not understood
    notes: tuple[str, ...] = ()
    models: tuple[ModelRef, ...] = field(default=())  # every model referenced, deduplicated
    # where no stage was found: the node-pack node types read (by their types) as doing no GPU work, with their counts
    silent_pack_nodes: tuple[tuple[str, int], ...] = ()

    def stages_of(self, kind: str) -> tuple[Stage, ...]:
        return tuple(s for s in self.stages if s.kind == kind)


def with_frames(latent: LatentShape, frames: int) -> LatentShape:
    """The latent for `frames` pixel frames (frames = (latent frames - 1) · temporal + 1)."""
    tc = latent.temporal_compression or 4
    return replace(latent, frames=(frames - 1) // tc + 1, pixel_frames=frames)


def with_pixels(latent: LatentShape, w: int, h: int) -> LatentShape:
    """The latent for a w × h pixel image or video."""
    sc = latent.spatial_compression or 8
    return replace(latent, width=math.ceil(w / sc), height=math.ceil(h / sc), pixel_width=w, pixel_height=h)


def as_model_latent(latent: LatentShape, arch: Mapping[str, object] | None) -> LatentShape:
    """A latent whose creator leaves its format to the model (EmptyLatentImage: channels None, /8) as ComfyUI's
    sampler makes it (comfy/sample.py:45-56 fix_empty_latent_channels, 0.33.0): the model's (or its VAE's) latent
    channels, rows and columns scaled by the creator's / its spatial compression (a Flux.2-latent model such as
    Lens: /16). A latent whose format the graph fixed, or a model of the same compression, is left as it is."""
    temporal = int((arch or {}).get("temporal_compression") or 0)
    if (latent.media == "audio" and latent.source_type == "EmptyLatentAudio" and temporal
            and latent.temporal_compression and temporal != latent.temporal_compression):
        # an empty 1-D audio latent (EmptyLatentAudio: 64 channels at 2048 samples a latent) sampled by a model of
        # another latent format (Stable Audio 3: 256 at 4096): sample.py:51-52 repeats the channels to the model's,
        # :61-65 resizes the length to round(L x 2048 / 4096)
        channels = (arch or {}).get("latent_channels")
        return replace(latent, width=max(1, round(latent.width * latent.temporal_compression / temporal)),
                       temporal_compression=temporal, channels=int(channels) if channels else latent.channels)
    spatial = int((arch or {}).get("spatial_compression") or 0)
    if latent.channels is not None or latent.media or latent.frames or not spatial \
            or spatial == latent.spatial_compression:
        return latent
    ratio = latent.spatial_compression / spatial
    channels = (arch or {}).get("latent_channels")
    return replace(latent, height=max(1, round(latent.height * ratio)), width=max(1, round(latent.width * ratio)),
                   spatial_compression=spatial, channels=int(channels) if channels else None)
