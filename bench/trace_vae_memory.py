"""Trace the working memory of ComfyUI's own VAE decode / encode, at full size, without a GPU.

Run it with ComfyUI's python (torch + ComfyUI's requirements), once per ComfyUI version:

    COMFYUI_PATH=/work/comfy/a /work/comfy/venv-a/bin/python bench/trace_vae_memory.py
    COMFYUI_PATH=/work/comfy/b /work/comfy/venv-b/bin/python bench/trace_vae_memory.py

It merges one profile per ComfyUI version into ``nodes/estimator/data/vae_memory.json``, which
``nodes/estimator/physics/vae_memory.py`` fits when it loads (the JSON holds measurements, the fit is code).
``--families a,b`` traces only those and merges them into the version's existing profile (every
other family stays; ``--replace`` rewrites the whole profile). A family id that
``vae_memory.py``'s FAMILIES table does not define yet goes under ``pending_families`` instead of
``families`` (the estimator and its tests read every ``families`` entry through that table);
``--promote id`` moves it over, without ComfyUI, once the table has it.

How a figure is taken
- Each VAE is built by ``comfy.sd.VAE(sd=state_dict, dtype=...)`` exactly as ComfyUI builds it
  from a file: the state dict has the real key names and shapes (taken from ComfyUI's own model
  classes instantiated on the ``meta`` device, with the config ComfyUI's detection code uses), so
  the class, config and detection branch are ComfyUI's. Everything lives on ``meta``: shapes and
  dtypes are real, no memory is allocated, a 2048x2048 decode takes seconds on a CPU.
- ``LiveBytes`` (a ``TorchDispatchMode``) sees every aten op, records each new storage an op
  returns and drops it when Python frees it (``StorageWeakRef``). The live total after each op is
  what ``torch.cuda.memory_allocated()`` would show above the weights (weights and the caller's
  tensors exist before the mode starts, so they are not counted); its maximum is the working
  memory. Not seen: allocator rounding / fragmentation and library workspaces (cuDNN conv
  workspace); the planner's margin covers them.
- Attention: the KL mid-block and Wan's AttentionBlock call ComfyUI's ``pytorch_attention`` (the
  default on NVIDIA). On meta, SDPA would decompose to the math path and materialise an N x N
  matrix that the GPU's fused kernel never holds. The tracer replaces
  ``comfy.ops.scaled_dot_product_attention`` by a fused stand-in that allocates what the
  memory-efficient kernel allocates: the output and a float32 logsumexp (B, heads, N).
- What is traced per case is the call ComfyUI makes on the device: ``first_stage_model.decode(z)``
  for a full decode (``VAE.decode`` moves the result to the CPU right after), and
  ``first_stage_model.decode(z)`` + the float32 cast for one tile (``decode_tiled_*``'s
  ``decode_fn``); ``first_stage_model.encode(px)`` for encode.

Every case runs under a per-case deadline (SIGALRM) and the whole run under a global deadline.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "nodes" / "estimator" / "data" / "vae_memory.json"


def setup_comfy(comfy_path: str):
    """Import ComfyUI from its source tree (CPU mode) without starting a server."""
    sys.path.insert(0, comfy_path)
    os.chdir(comfy_path)
    sys.argv = [sys.argv[0], "--cpu"]
    import comfy.options  # noqa: PLC0415

    comfy.options.enable_args_parsing()
    import logging  # noqa: PLC0415

    logging.disable(logging.WARNING)  # torchaudio warnings etc.
    import comfy.sd  # noqa: F401, PLC0415

    stub_torchaudio()  # after comfy.sd: transformers probes for torchaudio while it imports


TORCHAUDIO_STUBBED = False


def stub_torchaudio():
    """ComfyUI's venv may lack torchaudio (an optional requirement). The audio VAEs import it for
    their ENCODE side only (LTX-2 AudioVAE's waveform -> mel, ACE's vocoder mel front end, resampling);
    their decode never calls it. A stand-in module lets the classes build; calling it raises."""
    global TORCHAUDIO_STUBBED
    try:
        import torchaudio  # noqa: F401, PLC0415
        return
    except ImportError:
        pass
    import types  # noqa: PLC0415

    import torch  # noqa: PLC0415

    def missing(*args, **kwargs):
        raise RuntimeError("torchaudio is not installed (stand-in): this trace covers decode only")

    class MelScale(torch.nn.Module):  # built by ACE's vocoder (music_log_mel.py), used by its encode
        def __init__(self, *args, **kwargs):
            super().__init__()

        forward = missing

    ta = types.ModuleType("torchaudio")
    ta.functional = types.ModuleType("torchaudio.functional")
    def resample(waveform, orig_freq, new_freq, *args, **kwargs):
        # ACE's decode "resamples" every item after the first from 44100 to 44100 Hz
        # (music_dcae_pipeline.py decode); torchaudio returns the input when the rates match
        if orig_freq == new_freq:
            return waveform
        return missing()

    ta.functional.resample = resample
    ta.transforms = types.ModuleType("torchaudio.transforms")
    ta.transforms.MelScale = MelScale
    ta.transforms.MelSpectrogram = missing
    sys.modules.update({"torchaudio": ta, "torchaudio.functional": ta.functional,
                        "torchaudio.transforms": ta.transforms})
    # modules comfy.sd already imported with their `import torchaudio` failed (try/except)
    import comfy.ldm.ace.vae.music_dcae_pipeline as ace_pipeline  # noqa: PLC0415
    import comfy.ldm.ace.vae.music_log_mel as ace_mel  # noqa: PLC0415

    ace_pipeline.torchaudio = ta
    ace_mel.MelScale = MelScale
    TORCHAUDIO_STUBBED = True


def comfy_version(comfy_path: str) -> str:
    text = (Path(comfy_path) / "comfyui_version.py").read_text()
    return text.split('__version__ = "')[1].split('"')[0]


# ----------------------------------------------------------------------------------------------
# Memory tracking
def make_tracker():
    import torch  # noqa: PLC0415
    from torch.multiprocessing.reductions import StorageWeakRef  # noqa: PLC0415
    from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415
    from torch.utils._pytree import tree_flatten  # noqa: PLC0415

    class LiveBytes(TorchDispatchMode):
        """Live bytes of the storages created while the mode is active; peak over all ops."""

        def __init__(self):
            super().__init__()
            self.live: dict[int, tuple[object, int]] = {}  # storages allocated under the mode
            self.outside: dict[int, object] = {}  # storages that existed before (weights): never counted
            self.current = 0
            self.peak = 0
            self.ops = 0

        def _sweep(self):
            dead = [key for key, (ref, _) in self.live.items() if ref.expired()]
            for key in dead:
                self.current -= self.live.pop(key)[1]
            for key in [key for key, ref in self.outside.items() if ref.expired()]:
                del self.outside[key]

        def note_inputs(self, tensors):
            # An input whose storage was not allocated under the mode existed before it (a weight,
            # a buffer): a view of it (weight[:, :, -1:], reshape) must not count as new memory.
            for t in tensors:
                if isinstance(t, torch.Tensor):
                    key = t.untyped_storage()._cdata
                    if key not in self.live and key not in self.outside:
                        self.outside[key] = StorageWeakRef(t.untyped_storage())

        def track(self, tensors):
            for t in tensors:
                # only the device's storages: host tensors (Hunyuan3D's query grid before it is
                # moved, LTX's output buffer on the intermediate device) are not VRAM
                if isinstance(t, torch.Tensor) and t.device.type == "meta":
                    storage = t.untyped_storage()
                    key = storage._cdata
                    if key not in self.live and key not in self.outside:
                        nbytes = int(storage.nbytes())
                        self.live[key] = (StorageWeakRef(storage), nbytes)
                        self.current += nbytes
            self.peak = max(self.peak, self.current)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self._sweep()  # freed since the last op: gone before this op allocates
            self.note_inputs(tree_flatten((args, kwargs))[0])
            out = func(*args, **kwargs)
            self.ops += 1
            # this op's outputs while its inputs are still referenced by the caller
            self.track(tree_flatten(out)[0])
            return out

    return LiveBytes


@contextlib.contextmanager
def fused_attention(tracker_box):
    """Replace ComfyUI's SDPA entry by a stand-in with a fused kernel's allocations."""
    import comfy.ops  # noqa: PLC0415
    import torch  # noqa: PLC0415

    def sdpa(q, k, v, *args, **kwargs):
        # memory-efficient / flash attention forward: output (like q) + float32 logsumexp over
        # (batch, heads, queries). No N x N score matrix is ever allocated.
        out = torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        del lse
        return out

    saved_ops = comfy.ops.scaled_dot_product_attention
    saved_f = torch.nn.functional.scaled_dot_product_attention
    comfy.ops.scaled_dot_product_attention = sdpa
    torch.nn.functional.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        comfy.ops.scaled_dot_product_attention = saved_ops
        torch.nn.functional.scaled_dot_product_attention = saved_f


def use_pytorch_attention(module):
    """Make every VAE attention block use ComfyUI's pytorch_attention (NVIDIA's default)."""
    from comfy.ldm.modules.diffusionmodules.model import pytorch_attention  # noqa: PLC0415

    n = 0
    for m in module.modules():
        if hasattr(m, "optimized_attention"):
            m.optimized_attention = pytorch_attention
            n += 1
    return n


# ----------------------------------------------------------------------------------------------
# VAEs, built the way comfy.sd.VAE builds them from a file
@contextlib.contextmanager
def host_linspace(enabled: bool):
    """ACE's vocoder reads its drop-path rates with ``torch.linspace(...)[i].item()`` while it is
    built (music_vocoder.py); ``.item()`` has no value on meta. Those few scalars are made on the
    host; everything else is still built on meta."""
    import torch  # noqa: PLC0415

    if not enabled:
        yield
        return
    saved = torch.linspace

    def linspace(*args, **kwargs):
        kwargs.setdefault("device", "cpu")
        return saved(*args, **kwargs)

    torch.linspace = linspace
    try:
        yield
    finally:
        torch.linspace = saved


@contextlib.contextmanager
def host_copies():
    """A decoder that moves each finished chunk to the host (``chunk.cpu()``: CogVideoX's rolling decode,
    ldm/cogvideo/vae.py:561 in 0.33.0) and puts their cat back on the device at the end: on meta ``.cpu()`` has no data
    to copy, so a meta tensor's ``.cpu()`` is an empty host tensor of its shape and dtype. Host storages are never
    counted (LiveBytes tracks the device's only), the final ``.to(device)`` is, as on the card."""
    import torch  # noqa: PLC0415

    saved = torch.Tensor.cpu

    def cpu(self, *args, **kwargs):
        if self.device.type == "meta":
            return torch.empty(tuple(self.shape), dtype=self.dtype, device="cpu")
        return saved(self, *args, **kwargs)

    torch.Tensor.cpu = cpu
    try:
        yield
    finally:
        torch.Tensor.cpu = saved


def _meta_state_dict(make_module, host_scalars: bool = False):
    import torch  # noqa: PLC0415

    with torch.device("meta"), host_linspace(host_scalars):
        module = make_module()
    return module.state_dict()


def _kl_module(z_channels: int, legacy: bool):
    from comfy.ldm.models.autoencoder import AutoencoderKL, AutoencodingEngine  # noqa: PLC0415

    # comfy/sd.py "default SD1.x/SD2.x VAE parameters" branch
    ddconfig = {'double_z': True, 'z_channels': z_channels, 'resolution': 256, 'in_channels': 3, 'out_ch': 3,
                'ch': 128, 'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0}
    if legacy:  # SD/SDXL files carry quant_conv/post_quant_conv -> AutoencoderKL
        return lambda: AutoencoderKL(ddconfig=ddconfig, embed_dim=z_channels)
    # Flux ae.safetensors has none -> AutoencodingEngine
    return lambda: AutoencodingEngine(
        regularizer_config={'target': "comfy.ldm.models.autoencoder.DiagonalGaussianRegularizer"},
        encoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Encoder", 'params': ddconfig},
        decoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Decoder", 'params': ddconfig})


def _wan21_module():
    import comfy.ldm.wan.vae as wan  # noqa: PLC0415

    cfg = {"dim": 96, "z_dim": 16, "dim_mult": [1, 2, 4, 4], "num_res_blocks": 2, "attn_scales": [],
           "temperal_downsample": [False, True, True], "image_channels": 3, "dropout": 0.0}
    return lambda: wan.WanVAE(**cfg)


def _wan22_module():
    import comfy.ldm.wan.vae2_2 as wan22  # noqa: PLC0415

    cfg = {"dim": 160, "z_dim": 48, "dim_mult": [1, 2, 4, 4], "num_res_blocks": 2, "attn_scales": [],
           "temperal_downsample": [False, True, True], "dropout": 0.0}
    return lambda: wan22.WanVAE(**cfg)


def _hunyuan_module():
    from comfy.ldm.models.autoencoder import AutoencoderKL  # noqa: PLC0415

    ddconfig = {'double_z': True, 'z_channels': 16, 'resolution': 256, 'in_channels': 3, 'out_ch': 3, 'ch': 128,
                'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0,
                "conv3d": True, "time_compress": 4}
    return lambda: AutoencoderKL(ddconfig=ddconfig, embed_dim=16)


def _ltxv_module():
    import comfy.ldm.lightricks.vae.causal_video_autoencoder as ltx  # noqa: PLC0415

    return lambda: ltx.VideoVAE(version=0)


def _cogvideox_module():
    from comfy.ldm.cogvideo.vae import AutoencoderKLCogVideoX  # noqa: PLC0415

    # 0.33.0 comfy/sd.py:776-787: "decoder.conv_in.conv.weight" + "decoder.mid_block.resnets.0.norm1.norm_layer.weight"
    # (THUDM/CogVideoX's vae, Comfy-Org void-model cogvideox_vae.safetensors) -> AutoencoderKLCogVideoX with
    # latent_channels = encoder.conv_out rows / 2 (16); ldm/cogvideo/vae.py decodes latent frames in temporal chunks
    # with a conv cache, encodes pixel frames in batches of num_sample_frames_batch_size
    return lambda: AutoencoderKLCogVideoX(latent_channels=16)


def _hunyuan15_module():
    from comfy.ldm.models.autoencoder import AutoencodingEngine  # noqa: PLC0415

    # 0.18.2 comfy/sd.py:631-647: "decoder.conv_in.conv.weight" with 32 input channels (HunyuanVideo
    # 1.5's hunyuanvideo15_vae_fp16.safetensors) -> AutoencodingEngine over vae_refiner.Encoder/Decoder
    # with refiner_vae left at its default True (CarriedConv3d, the "conv_in.conv" key; the decoder
    # runs 2 latent frames per step with a conv carry, the encoder 1 + 8-frame groups). The other
    # 32-channel branch, sd.py:524-539 ("decoder.conv_in.weight", refiner_vae False, not_video), is
    # HunyuanImage 2.1's refiner VAE.
    ddconfig = {"block_out_channels": [128, 256, 512, 1024, 1024], "in_channels": 3, "out_channels": 3,
                "num_res_blocks": 2, "ffactor_spatial": 16, "ffactor_temporal": 4, "downsample_match_channel": True,
                "upsample_match_channel": True, "z_channels": 32}
    return lambda: AutoencodingEngine(
        regularizer_config={'target': "comfy.ldm.models.autoencoder.EmptyRegularizer"},
        encoder_config={'target': "comfy.ldm.hunyuan_video.vae_refiner.Encoder", 'params': ddconfig},
        decoder_config={'target': "comfy.ldm.hunyuan_video.vae_refiner.Decoder", 'params': ddconfig})


def _ltx2_module():
    import comfy.ldm.lightricks.vae.causal_video_autoencoder as ltx  # noqa: PLC0415

    # 0.18.2 comfy/sd.py:609-621: up_blocks.0 conv1 with 1024 channels and an
    # "encoder.down_blocks.1.conv.conv.bias" key -> version 2 (LTX-Video 0.9.5+/13B and LTX-2); the
    # file's metadata "config"/"vae" replaces the default when present. The version-2 default
    # (causal_video_autoencoder.py:1260-1294): decoder conv_in 128 -> 1024, 4 x 5 res blocks, three
    # residual depth-to-space x2 stages, timestep conditioning (noise injection at decode), which is
    # the layout of ltx-2-19b's VAE decoder (conv_in 128->1024, 5 res blocks per stage,
    # 1024->512->256->128, timestep-conditioned).
    return lambda: ltx.VideoVAE(version=2)


# LTX-2.3's video VAE (the "vae" section of ltx-2.3-22b-*.safetensors' metadata config, which 0.18.2 comfy/sd.py:609-621
# passes to VideoVAE(version=2, config=...)): a rebuilt decoder, 1024 -> 512 -> 512 -> 256 -> 128 channels through
# compress_all x2 / compress_all x1 / compress_time x2 / compress_space x2 stages (res_x 2, 2, 4, 6, 4 layers), no
# timestep conditioning, zero padding; the encoder 4 / 6 / 4 / 2 / 2 res layers. Sources: huggingface/diffusers
# scripts/convert_ltx2_to_diffusers.py (17b53f08) get_ltx2_video_vae_config("2.3") (decoder_block_out_channels
# (256, 512, 512, 1024), decoder_layers_per_block (4, 6, 4, 2, 2), upsample_type (spatiotemporal, spatiotemporal,
# temporal, spatial), upsample_factor (2, 2, 1, 2), timestep_conditioning False, zeros padding; LTX-2: decoder
# 5 x 4 res layers, three residual x2 spatiotemporal stages) and the 22B header's block lists as ported readers quote them.
LTX23_VAE_CONFIG = {
    "_class_name": "CausalVideoAutoencoder", "dims": 3, "in_channels": 3, "out_channels": 3, "latent_channels": 128,
    "patch_size": 4, "norm_layer": "pixel_norm", "spatial_padding_mode": "zeros", "timestep_conditioning": False,
    "latent_log_var": "uniform", "use_quant_conv": False, "causal_decoder": False, "scaling_factor": 1.0,
    "decoder_blocks": [
        ["res_x", {"num_layers": 4}], ["compress_space", {"multiplier": 2}], ["res_x", {"num_layers": 6}],
        ["compress_time", {"multiplier": 2}], ["res_x", {"num_layers": 4}], ["compress_all", {"multiplier": 1}],
        ["res_x", {"num_layers": 2}], ["compress_all", {"multiplier": 2}], ["res_x", {"num_layers": 2}]],
    "encoder_blocks": [
        ["res_x", {"num_layers": 4}], ["compress_space_res", {"multiplier": 2}], ["res_x", {"num_layers": 6}],
        ["compress_time_res", {"multiplier": 2}], ["res_x", {"num_layers": 4}], ["compress_all_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 2}], ["compress_all_res", {"multiplier": 1}], ["res_x", {"num_layers": 2}]],
}
# What comfy.sd.VAE reads from the file besides the state dict (VAELoader / CheckpointLoaderSimple pass the header).
METADATA = {"vae-ltx2.3": {"config": json.dumps({"vae": LTX23_VAE_CONFIG})}}


def _ltx23_module():
    import comfy.ldm.lightricks.vae.causal_video_autoencoder as ltx  # noqa: PLC0415

    return lambda: ltx.VideoVAE(version=2, config=LTX23_VAE_CONFIG)


def _ace_module():
    import comfy.ldm.ace.vae.music_dcae_pipeline as ace  # noqa: PLC0415

    # 0.18.2 comfy/sd.py:731-745 ("vocoder.backbone.channel_layers.0.0.bias"): MusicDCAE (DC-AE on a
    # stereo mel + the ADaMoS/HiFi vocoder) with source_sample_rate 44100
    return lambda: ace.MusicDCAE(source_sample_rate=44100)


def _ace15_module():
    from comfy.ldm.audio.autoencoder import AudioOobleckVAE  # noqa: PLC0415

    # 0.18.2 comfy/sd.py:560-587 ("decoder.layers.1.layers.0.beta", the Oobleck VAE of Stable Audio): a
    # weight-normed decoder conv whose last dimension is 12 selects strides [2, 4, 4, 6, 10] (1920 samples per
    # latent, 48 kHz): ACE-Step 1.5's ace_1.5_vae.safetensors; 64 latent channels, stereo out
    return lambda: AudioOobleckVAE(strides=[2, 4, 4, 6, 10])


def _svd_module():
    from comfy.ldm.models.autoencoder import AutoencodingEngine  # noqa: PLC0415

    # 0.18.2 comfy/sd.py:472-479 ("decoder.mid.block_1.mix_factor", svd_xt.safetensors' first_stage_model): the KL
    # encoder (z 4, ch 128, 1-2-4-4) and comfy.ldm.modules.temporal_ae.VideoDecoder (video_kernel_size [3, 1, 1],
    # alpha 0: temporal res blocks and a temporal conv_out, mixing across the frames of one decode call)
    enc = {'double_z': True, 'z_channels': 4, 'resolution': 256, 'in_channels': 3, 'out_ch': 3, 'ch': 128,
           'ch_mult': [1, 2, 4, 4], 'num_res_blocks': 2, 'attn_resolutions': [], 'dropout': 0.0}
    dec = {**enc, "video_kernel_size": [3, 1, 1], "alpha": 0.0}
    return lambda: AutoencodingEngine(
        regularizer_config={'target': "comfy.ldm.models.autoencoder.DiagonalGaussianRegularizer"},
        encoder_config={'target': "comfy.ldm.modules.diffusionmodules.model.Encoder", 'params': enc},
        decoder_config={'target': "comfy.ldm.modules.temporal_ae.VideoDecoder", 'params': dec})


def _hunyuan3d_module():
    import comfy.ldm.hunyuan3d.vae as h3d  # noqa: PLC0415

    # 0.18.2 comfy/sd.py:708-728 ("geo_decoder.cross_attn_decoder.ln_1.bias", Hunyuan3D 2.0 & 2.1):
    # ShapeVAE() with its defaults
    return lambda: h3d.ShapeVAE()


# LTX-2's audio VAE is not a comfy.sd.VAE: LTXVAudioVAELoader (0.18.2 comfy_extras/nodes_lt_audio.py:10-31)
# builds comfy.ldm.lightricks.vae.audio_vae.AudioVAE(sd, metadata) from the checkpoint's "audio_vae."
# and "vocoder." keys, with the architecture from the file's metadata config ("audio_vae",
# "vocoder"). The file is not here: the autoencoder config is CausalAudioAutoencoder's default
# (causal_audio_autoencoder.py get_default_config: ch 128, ch_mult 1-2-4, 8 latent channels, 64
# mel bins, 16 kHz, hop 160, pixel norm, causal in time), the vocoder ComfyUI's HiFi-GAN Vocoder
# ("resblock 1") with LTX-2's 24 kHz upsampling (6-5-2-2-2, kernels 16-15-8-4-4; ComfyUI's default
# is 5-4-2-2-2 for 16 kHz), as published LTX-2 ports (ltx-core, SGLang, FastVideo) configure them.
LTX2_AUDIO_CONFIG = {
    "audio_vae": None,  # None: CausalAudioAutoencoder's default config
    "vocoder": {"resblock_kernel_sizes": [3, 7, 11], "upsample_rates": [6, 5, 2, 2, 2],
                "upsample_kernel_sizes": [16, 15, 8, 4, 4], "resblock_dilation_sizes": [[1, 3, 5]] * 3,
                "upsample_initial_channel": 1024, "stereo": True, "resblock": "1", "use_bias_at_final": True,
                "use_tanh_at_final": True},
}


class _Ltx2AudioVae:
    """The calls LTXVAudioVAEDecode makes (AudioVAE.decode minus its model loading), on meta."""

    def __init__(self, dtype):
        import torch  # noqa: PLC0415
        from comfy.ldm.lightricks.vae.audio_vae import AudioVAE  # noqa: PLC0415
        from comfy.ldm.lightricks.vae.causal_audio_autoencoder import CausalAudioAutoencoder  # noqa: PLC0415

        cfg = dict(getattr(self, "CONFIG", LTX2_AUDIO_CONFIG))
        if cfg["audio_vae"] is None:
            cfg["audio_vae"] = CausalAudioAutoencoder.get_default_config(None)
        with torch.device("meta"):
            self.audio_vae = AudioVAE({}, {"config": json.dumps(cfg)}).to(dtype)
        self.first_stage_model = self
        self.latent_channels = self.audio_vae.latent_channels
        self.process_input = lambda a: a

    def parameters(self):
        return self.audio_vae.parameters()

    def decode(self, latents):
        a = self.audio_vae
        mel = a.autoencoder.decode(a.normalizer.denormalize(latents), target_shape=a.target_shape_from_latents(latents.shape))
        return a.run_vocoder(mel)

    def spacial_compression_decode(self):
        return None

    def temporal_compression_decode(self):
        return None


# LTX-2.3's audio VAE: the same CausalAudioAutoencoder config as LTX-2 (diffusers convert_ltx2_to_diffusers.py
# get_ltx2_audio_vae_config("2.3"): "Same config as LTX-2.0"), but a BigVGAN-v2 vocoder (AMP1 blocks, SnakeBeta,
# anti-aliased activations, 1536 initial channels, 16 kHz mel -> 16 kHz) followed by a bandwidth extension to 48 kHz
# (VocoderWithBWE, 0.18.2 comfy/ldm/lightricks/vocoders/vocoder.py:660-700, chosen by AudioVAE when the vocoder config has
# "bwe", audio_vae.py:144-147). Values: get_ltx2_vocoder_config("2.3") (hidden 1536, kernels 11-4-4-4-4-4, rates
# 5-2-2-2-2-2, snakebeta, antialias, no final tanh / bias; BWE hidden 512, kernels 12-11-4-4-4, rates 6-5-2-2-2) and the
# 22B header's "vocoder" section as ported readers quote it (bwe: 16 -> 48 kHz, hop 80, n_fft 512, 64 mels).
LTX23_AUDIO_CONFIG = {
    "audio_vae": None,
    "vocoder": {
        "vocoder": {"upsample_initial_channel": 1536, "resblock": "AMP1", "upsample_rates": [5, 2, 2, 2, 2, 2],
                    "resblock_kernel_sizes": [3, 7, 11], "upsample_kernel_sizes": [11, 4, 4, 4, 4, 4],
                    "resblock_dilation_sizes": [[1, 3, 5]] * 3, "stereo": True, "use_tanh_at_final": False,
                    "activation": "snakebeta", "use_bias_at_final": False},
        "bwe": {"upsample_initial_channel": 512, "resblock": "AMP1", "upsample_rates": [6, 5, 2, 2, 2],
                "resblock_kernel_sizes": [3, 7, 11], "upsample_kernel_sizes": [12, 11, 4, 4, 4],
                "resblock_dilation_sizes": [[1, 3, 5]] * 3, "stereo": True, "use_tanh_at_final": False,
                "activation": "snakebeta", "use_bias_at_final": False, "apply_final_activation": False,
                "input_sampling_rate": 16000, "output_sampling_rate": 48000, "hop_length": 80, "n_fft": 512,
                "win_size": 512, "num_mels": 64},
    },
}


class _Ltx23AudioVae(_Ltx2AudioVae):
    CONFIG = LTX23_AUDIO_CONFIG


CUSTOM = {"vae-ltx2-audio": _Ltx2AudioVae, "vae-ltx2.3-audio": _Ltx23AudioVae}


def fsm_of(vae):
    """The model class ComfyUI runs (AudioVAE for the custom LTX-2 audio wrapper)."""
    return getattr(vae.first_stage_model, "audio_vae", vae.first_stage_model)

# What a family's latent is, for families whose figure is not per output pixel (written into the entry)
FAMILY_INFO = {
    "vae-ltx2": {"latent_kind": "video", "same_class_as": "vae-ltxv",
                 "config": "VideoVAE(version=2): 0.18.2 sd.py:609-621, causal_video_autoencoder.py:1260-1294"},
    "vae-hunyuan15": {"latent_kind": "video"},
    "vae-cogvideox": {"latent_kind": "video",
                      "config": "AutoencoderKLCogVideoX(latent_channels=16): 0.33.0 sd.py:776-787"},
    "vae-ltx2.3": {"latent_kind": "video", "same_class_as": "vae-ltxv",
                   "config": "VideoVAE(version=2, config=the 22B header's vae section): 0.18.2 sd.py:609-621; "
                             "LTX23_VAE_CONFIG"},
    "vae-ltx2-audio": {
        "latent_kind": "audio", "latent_shape": "[B, 8, T, 16] (channels, latent frames, mel bins / 4)",
        "spatial_compression": None, "temporal_compression": None,
        "latents_per_second": 25.0, "seconds_per_latent_frame": 0.04,
        "mel_frames": "4*T - 3 (causal), 16 kHz, hop 160", "output": "stereo waveform, 24 kHz",
        "scales_with": "T (latent frames = ceil(seconds * 25))",
        "config": "AudioVAE(sd, metadata): comfy/ldm/lightricks/vae/audio_vae.py; config in LTX2_AUDIO_CONFIG",
    },
    "vae-ltx2.3-audio": {
        "latent_kind": "audio", "latent_shape": "[B, 8, T, 16] (channels, latent frames, mel bins / 4)",
        "spatial_compression": None, "temporal_compression": None,
        "latents_per_second": 25.0, "seconds_per_latent_frame": 0.04,
        "mel_frames": "4*T - 3 (causal), 16 kHz, hop 160", "output": "stereo waveform, 48 kHz (BigVGAN v2 + BWE)",
        "scales_with": "T (latent frames = ceil(seconds * 25))",
        "config": "AudioVAE(sd, metadata) with VocoderWithBWE: comfy/ldm/lightricks/vae/audio_vae.py; config in "
                  "LTX23_AUDIO_CONFIG",
    },
    "vae-ace": {
        "latent_kind": "audio", "latent_shape": "[B, 8, 16, L]", "latents_per_second": 44100 / 512 / 8,
        "spatial_compression": None, "temporal_compression": None, "samples_per_latent_frame": 4096,
        "seconds_per_latent_frame": 512 * 8 / 44100, "output": "stereo waveform, 44.1 kHz",
        "scales_with": "L (= seconds * 44100 / 512 / 8); decoded one batch item at a time (music_dcae_pipeline.py decode)",
        "config": "MusicDCAE(source_sample_rate=44100): 0.18.2 sd.py:731-745",
    },
    "vae-ace15": {
        "latent_kind": "audio", "latent_shape": "[B, 64, L]", "latents_per_second": 48000 / 1920,
        "spatial_compression": None, "temporal_compression": None, "samples_per_latent_frame": 1920,
        "seconds_per_latent_frame": 1920 / 48000, "output": "stereo waveform, 48 kHz",
        "scales_with": "B * L (L = round(seconds * 48000 / 1920), EmptyAceStep1.5LatentAudio; the whole batch in one call)",
        "config": "AudioOobleckVAE(strides=[2, 4, 4, 6, 10]): 0.18.2 sd.py:560-587",
    },
    "vae-svd": {
        "latent_kind": "video", "latent_shape": "[F, 4, H/8, W/8] (frames in the batch dimension)",
        "spatial_compression": 8, "temporal_compression": 1,
        "scales_with": "frames per decode call x (H/8)*(W/8): VAE.decode splits the frames into batches that fit "
                       "(memory_used_decode, the KL formula) and VideoDecoder mixes across the frames of one call "
                       "(timesteps = batch, temporal_ae.py:107-113)",
        "config": "AutoencodingEngine(Encoder, temporal_ae.VideoDecoder): 0.18.2 sd.py:472-479",
    },
    "vae-hunyuan3d": {
        "latent_kind": "3d", "latent_shape": "[B, 64, tokens] (EmptyLatentHunyuan3Dv2 resolution, default 3072)",
        "latent_channels": 64,  # comfy.sd.VAE's ShapeVAE branch leaves its default latent_channels (4)
        "spatial_compression": None, "temporal_compression": None,
        "decode_options": "VAEDecodeHunyuan3D num_chunks (default 8000) and octree_resolution (default 256), "
                          "comfy_extras/nodes_hunyuan3d.py:109-119; points record them as num_chunks / octree_resolution",
        "scales_with": "(octree_resolution + 1)^3 (query grid on the device, the logits of every chunk until "
                       "the final cat and its float32 copy) + num_chunks x batch (one chunk's cross-attention) "
                       "+ tokens (the latent transformer; 3072 -> 4096 tokens adds under 1%)",
        "config": "ShapeVAE(): 0.18.2 sd.py:708-728",
    },
}

# LTX's decoder sizes its chunks from the card's total memory (0.18.2 causal_video_autoencoder.py:
# 327-345: 32 MiB at <= 6 GiB, 128 MiB at >= 24 GiB, linear between); the meta device has no total,
# so the trace fixes it (bigger chunks, bigger peak: 24 GiB+ cards are the upper bound).
LTX_CHUNK_BYTES = 128 * 1024**2


MODULES = {
    "vae-kl4": lambda: _kl_module(4, legacy=True),
    "vae-kl16": lambda: _kl_module(16, legacy=False),
    "vae-wan2.1": _wan21_module,
    "vae-wan2.2": _wan22_module,
    "vae-hunyuan": _hunyuan_module,
    "vae-ltxv": _ltxv_module,
    "vae-hunyuan15": _hunyuan15_module,
    "vae-cogvideox": _cogvideox_module,
    "vae-ltx2-audio": None,  # CUSTOM
    "vae-ltx2": _ltx2_module,
    "vae-ltx2.3": _ltx23_module,
    "vae-ltx2.3-audio": None,  # CUSTOM
    "vae-ace": _ace_module,
    "vae-ace15": _ace15_module,
    "vae-svd": _svd_module,
    "vae-hunyuan3d": _hunyuan3d_module,
}


def build_vae(family: str, dtype):
    """comfy.sd.VAE on the meta device from a state dict with the real keys and shapes."""
    import comfy.sd  # noqa: PLC0415
    import torch  # noqa: PLC0415

    if family in CUSTOM:
        vae = CUSTOM[family](dtype)
        return vae, sum(p.numel() for p in vae.parameters())
    host_scalars = family == "vae-ace"
    sd = _meta_state_dict(MODULES[family](), host_scalars)
    with torch.device("meta"), host_linspace(host_scalars):
        vae = comfy.sd.VAE(sd=sd, dtype=dtype, metadata=METADATA.get(family))
    fsm = vae.first_stage_model
    use_pytorch_attention(fsm)
    params = sum(p.numel() for p in fsm.parameters())
    return vae, params


# ----------------------------------------------------------------------------------------------
class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


@contextlib.contextmanager
def ltx_chunk_size(nbytes: int):
    """LTX's decoder asks the device's total memory for its chunk size; meta has none."""
    import comfy.ldm.lightricks.vae.causal_video_autoencoder as ltx  # noqa: PLC0415

    saved = ltx.get_max_chunk_size
    ltx.get_max_chunk_size = lambda device: nbytes
    try:
        yield
    finally:
        ltx.get_max_chunk_size = saved


def trace_case(vae, op: str, shape: tuple, dtype, per_case_s: int, options: dict | None = None) -> dict:
    """Peak live bytes of one decode/encode call on `shape` (decode: latent, encode: pixels).

    options: keyword arguments of the decode call (ComfyUI's vae_options, e.g. Hunyuan3D's
    num_chunks / octree_resolution)."""
    import torch  # noqa: PLC0415

    LiveBytes = make_tracker()
    fsm = vae.first_stage_model
    options = dict(options or {})
    chunked_io = getattr(fsm, "comfy_has_chunked_io", False)
    mode = LiveBytes()
    t0 = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(per_case_s)
    out_bytes = 0
    pre = None
    if chunked_io:
        # VAE.decode pre-allocates the output on output_device (the CPU) and the decoder writes
        # into it chunk by chunk; VAE.encode hands the encoder the pixels on the CPU with
        # device=... (0.18.2 sd.py:956-963, 1043-1044): neither is on the card, both exist before
        # the mode starts here, so neither counts.
        pre = torch.empty(shape, dtype=dtype, device="meta")
        if op in ("decode", "decode_tile"):
            options["output_buffer"] = torch.empty(fsm.decode_output_shape(shape), dtype=dtype, device="meta")
    try:
        with torch.inference_mode(), fused_attention(None), ltx_chunk_size(LTX_CHUNK_BYTES), host_copies(), mode:
            # the input on the device is ComfyUI's too (samples.to(vae_dtype).to(device))
            x = pre if pre is not None else torch.empty(shape, dtype=dtype, device="meta")
            if op == "decode":
                y = fsm.decode(x, **options)
            elif op == "decode_tile":
                y = fsm.decode(x, **options)
                if not chunked_io:  # the tiler's float32 cast happens on the device
                    y = y.float()
            elif op == "encode":
                if chunked_io:
                    y = fsm.encode(vae.process_input(x), device=x.device)
                else:
                    y = fsm.encode(vae.process_input(x))
            else:
                raise ValueError(op)
            out_shape = tuple(y.shape)
            out_bytes = y.numel() * y.element_size()
            del y, x
    finally:
        signal.alarm(0)
    rec = {"op": op, "shape": list(shape), "out_shape": list(out_shape), "peak_bytes": int(mode.peak),
           "out_bytes": int(out_bytes), "aten_ops": mode.ops, "seconds": round(time.time() - t0, 3)}
    rec.update({k: v for k, v in options.items() if isinstance(v, (int, float, str))})
    return rec


def cases_for(family: str, quick: bool):
    """(op, input shape) pairs. Decode shapes are latents, encode shapes are pixels."""
    cases = []
    if family in ("vae-kl4", "vae-kl16"):
        c = 4 if family == "vae-kl4" else 16
        sizes = [64, 96, 128, 192, 256] if not quick else [64, 96]
        for s in sizes:  # 512 .. 2048 px
            cases.append(("decode", (1, c, s, s)))
        cases += [("decode", (2, c, 64, 64)), ("decode", (1, c, 64, 128)), ("decode", (1, c, 96, 160))]
        for s in ([32, 48, 64] if not quick else [32]):
            cases.append(("decode_tile", (1, c, s, s)))
        cases.append(("decode_tile", (1, c, 16, 64)))
        for s in (sizes[:4] if not quick else sizes):
            cases.append(("encode", (1, 3, s * 8, s * 8)))
        return cases
    if family in ("vae-ltx2-audio", "vae-ltx2.3-audio"):  # [B, 8, T, 16], T = ceil(seconds * 25)
        return [("decode", (1, 8, math.ceil(sec * 25), 16)) for sec in ([5, 10, 20, 60] if not quick else [5])]
    if family == "vae-ace":  # [B, 8, 16, L], L = seconds * 44100 / 512 / 8
        secs = [30, 60, 120, 240] if not quick else [30]
        cases = [("decode", (1, 8, 16, math.ceil(sec * 44100 / 512 / 8))) for sec in secs]
        if not quick:
            cases.append(("decode", (2, 8, 16, math.ceil(60 * 44100 / 512 / 8))))
        return cases
    if family == "vae-ace15":  # [B, 64, L], L = round(seconds * 48000 / 1920)
        secs = [30, 60, 120, 240, 600] if not quick else [30]
        cases = [("decode", (1, 64, round(sec * 25))) for sec in secs]
        if not quick:
            cases.append(("decode", (2, 64, round(120 * 25))))
        return cases
    if family == "vae-svd":  # [F, 4, H/8, W/8]: frames decoded together in one call
        frames = [1, 2, 5, 14, 25] if not quick else [1]
        cases = [("decode", (f, 4, 72, 128)) for f in frames]  # 1024x576
        if not quick:
            cases += [("decode", (f, 4, 56, 96)) for f in (14, 25)]  # 768x448
            cases.append(("encode", (1, 3, 576, 1024)))  # SVD_img2vid_Conditioning encodes the init image
        return cases
    if family == "vae-hunyuan3d":  # [B, 64, tokens] with VAEDecodeHunyuan3D's options
        settings = [(3072, 256, 8000), (3072, 256, 32000), (3072, 128, 8000), (3072, 384, 20000), (4096, 256, 8000)]
        if quick:
            settings = [(3072, 64, 8000)]
        return [("decode", (1, 64, tok), {"octree_resolution": res, "num_chunks": n}) for tok, res, n in settings]
    if family == "vae-wan2.1":
        c, res = 16, [(60, 104), (90, 160)]  # 832x480, 1280x720
        frames = [1, 2, 3, 5, 9, 13, 21] if not quick else [1, 3]
    elif family == "vae-wan2.2":
        c, res = 48, [(44, 80)]  # 1280x704 at 16x
        frames = [1, 2, 3, 5, 9, 13, 21] if not quick else [1, 3]
        if not quick:
            res.append((30, 52))  # 832x480 at 16x
    elif family == "vae-hunyuan":
        c, res, frames = 16, [(60, 104), (90, 160)], ([1, 2, 3, 5, 9] if not quick else [1, 3])
    elif family == "vae-ltxv":
        c, res, frames = 128, [(15, 26), (22, 40)], ([1, 2, 3, 5, 7] if not quick else [1, 2])
    elif family in ("vae-ltx2", "vae-ltx2.3"):
        c, res, frames = 128, [(15, 26), (22, 40)], ([1, 2, 3, 5, 7, 13, 16] if not quick else [1, 2])
    elif family == "vae-cogvideox":
        c, res = 16, [(60, 90), (96, 170)]  # 720x480, 1360x768
        frames = [1, 2, 3, 5, 7, 13, 21] if not quick else [1, 3]
    elif family == "vae-hunyuan15":
        c, res = 32, [(45, 80), (30, 53)]  # 1280x720, 848x480 at 16x
        frames = [1, 2, 3, 5, 9, 13, 21, 31] if not quick else [1, 3]
    else:
        raise ValueError(family)
    for (h, w) in res:
        for t in frames:
            cases.append(("decode", (1, c, t, h, w)))
    h, w = res[0]
    tile = 32 if family not in ("vae-ltxv", "vae-ltx2", "vae-ltx2.3") else 8
    for t in frames[:4]:
        cases.append(("decode_tile", (1, c, t, tile, tile)))
        cases.append(("decode_tile", (1, c, t, tile // 2, tile * 2)))
    cases.append(("decode_tile", (1, c, frames[-1], tile, tile)))
    cases.append(("decode_tile", (1, c, frames[1], h, w)))
    sc, tc = {"vae-wan2.1": (8, 4), "vae-wan2.2": (16, 4), "vae-hunyuan": (8, 4), "vae-ltxv": (32, 8),
              "vae-hunyuan15": (16, 4), "vae-cogvideox": (8, 4), "vae-ltx2": (32, 8), "vae-ltx2.3": (32, 8)}[family]
    for t in frames[:5]:
        px_t = max(1, (t - 1) * tc + 1)
        cases.append(("encode", (1, 3, px_t, h * sc, w * sc)))
    return cases


def dump_json(data: dict) -> str:
    """Indented JSON with one measurement point per line (diff-friendly, small)."""
    def render(obj, indent: int) -> str:
        pad = " " * indent
        if isinstance(obj, dict) and obj:
            if "peak_bytes" in obj:  # a point
                return json.dumps(obj, separators=(", ", ": "))
            items = [f'{pad} {json.dumps(k)}: {render(v, indent + 1)}' for k, v in obj.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if isinstance(obj, list) and obj and isinstance(obj[0], (dict, str)):
            items = [f"{pad} {render(v, indent + 1)}" for v in obj]
            return "[\n" + ",\n".join(items) + f"\n{pad}]"
        return json.dumps(obj)
    return render(data, 0) + "\n"


# Families the estimator does not know yet are written under this key of the profile, not under
# "families": nodes/estimator/physics/vae_memory.py (and tests/test_vae_memory.py) read every entry of
# "families" through its FAMILIES table, so an unknown id there would break them. ``--promote``
# moves an entry over (no ComfyUI needed) once FAMILIES has the id.
PENDING = "pending_families"
ESTIMATOR = REPO / "nodes" / "estimator" / "physics" / "vae_memory.py"


def estimator_families() -> set[str]:
    """Family ids nodes/estimator/physics/vae_memory.py defines (read from its source: no import)."""
    import re  # noqa: PLC0415

    # the VAE families live in the family modules now (families/<group>.py VAES / MEDIA_VAES), read by the registry
    texts = [ESTIMATOR.read_text()] + [p.read_text() for p in sorted((ESTIMATOR.parents[1] / "families").glob("*.py"))]
    found: set[str] = set()
    for text in texts:
        found |= set(re.findall(r'VaeFamily\(\s*"([^"]+)"', text))
        for marker in ("MEDIA_FAMILIES = {", "MEDIA_VAES = {"):
            media = text.split(marker, 1)[1].split("\n}", 1)[0] if marker in text else ""
            found |= set(re.findall(r'^\s*"(vae-[^"]+)":', media, re.M))
    return found


def write_data(out_path: Path, data: dict) -> None:
    data["profiles"] = dict(sorted(data["profiles"].items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(dump_json(data))


def promote(out_path: Path, names: list[str]) -> int:
    """Move traced entries from PENDING to "families" in every profile (no ComfyUI, no torch)."""
    data = json.loads(out_path.read_text())
    known = estimator_families()
    moved = 0
    for version, prof in data["profiles"].items():
        for name in names:
            if name not in prof.get(PENDING, {}):
                continue
            if name not in known:
                print(f"{name}: not in {ESTIMATOR.name} FAMILIES yet; left in {PENDING}")
                continue
            prof.setdefault("families", {})[name] = prof[PENDING].pop(name)
            moved += 1
            print(f"{version}: {name} -> families")
        if PENDING in prof and not prof[PENDING]:
            del prof[PENDING]
    write_data(out_path, data)
    return 0 if moved else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--comfy", default=os.environ.get("COMFYUI_PATH"), help="ComfyUI source tree (COMFYUI_PATH)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--families", default=",".join(MODULES))
    ap.add_argument("--dtypes", default="bf16,fp32")
    ap.add_argument("--per-case-s", type=int, default=120)
    ap.add_argument("--deadline-s", type=int, default=1500)
    ap.add_argument("--quick", action="store_true", help="a few small shapes (smoke test)")
    ap.add_argument("--dry-run", action="store_true", help="print, do not write the JSON")
    ap.add_argument("--replace", action="store_true",
                    help="replace this version's whole profile (default: merge the traced families into it)")
    ap.add_argument("--promote", default="",
                    help="comma-separated families to move from 'pending_families' to 'families' (no trace)")
    args = ap.parse_args(argv)
    if args.promote:
        return promote(Path(args.out).resolve(), args.promote.split(","))
    if not args.comfy:
        ap.error("set COMFYUI_PATH or --comfy")
    comfy_path = str(Path(args.comfy).resolve())
    out_path = Path(args.out).resolve()
    setup_comfy(comfy_path)
    import torch  # noqa: PLC0415

    version = comfy_version(comfy_path)
    dtypes = {"bf16": (torch.bfloat16, 2), "fp16": (torch.float16, 2), "fp32": (torch.float32, 4)}
    deadline = time.time() + args.deadline_s
    families: dict[str, dict] = {}
    for family in args.families.split(","):
        entry: dict = {"points": [], "skipped": []}
        for dname in args.dtypes.split(","):
            dtype, dbytes = dtypes[dname]
            try:
                vae, params = build_vae(family, dtype)
            except Exception as exc:  # a family this ComfyUI cannot build: say so, go on
                entry["skipped"].append(f"build {dname}: {type(exc).__name__}: {exc}"[:300])
                print(f"[{family}] build failed: {exc}", flush=True)
                break
            entry.update({
                "params": int(params), "class": f"{type(fsm_of(vae)).__module__}.{type(fsm_of(vae)).__name__}",
                "latent_channels": int(vae.latent_channels),
                "spatial_compression": vae.spacial_compression_decode(),
                "temporal_compression": vae.temporal_compression_decode(),
            })
            last_error = None
            entry.update(FAMILY_INFO.get(family, {}))
            if family in ("vae-ltx2", "vae-ltx2.3"):
                entry["chunk_bytes"] = LTX_CHUNK_BYTES
            if TORCHAUDIO_STUBBED and FAMILY_INFO.get(family, {}).get("latent_kind") == "audio":
                entry["torchaudio"] = "not installed: a stand-in let the model build (decode does not use it; encode not traced)"
            for case in cases_for(family, args.quick):
                op, shape = case[0], case[1]
                options = case[2] if len(case) > 2 else None
                if time.time() > deadline:
                    entry["skipped"].append(f"{op} {shape} {dname}: global deadline")
                    continue
                try:
                    rec = trace_case(vae, op, shape, dtype, args.per_case_s, options)
                except CaseTimeout:
                    entry["skipped"].append(f"{op} {shape} {dname}: over {args.per_case_s} s")
                    print(f"[{family}] {op} {shape} {dname}: timeout", flush=True)
                    continue
                except Exception as exc:
                    msg = f"{type(exc).__name__}: {exc}"[:200]
                    entry["skipped"].append(f"{op} {shape} {dname}: {msg}")
                    print(f"[{family}] {op} {shape} {dname}: {msg}", flush=True)
                    if msg == last_error:  # the same failure twice: this family cannot be traced here
                        entry["skipped"].append(f"remaining {dname} cases of {family} skipped after the same error twice")
                        break
                    last_error = msg
                    continue
                last_error = None
                rec["dtype_bytes"] = dbytes
                entry["points"].append(rec)
                print(f"[{family}] {op:11s} {dname} {str(tuple(shape)):28s} {options or ''} peak {rec['peak_bytes'] / 2**30:7.3f} GiB"
                      f"  out {rec['out_bytes'] / 2**30:6.3f} GiB  ({rec['seconds']:.1f} s, {rec['aten_ops']} ops)", flush=True)
            del vae
        families[family] = entry
    profile = {
        "comfyui_version": version,
        "comfyui_source": "upstream 3cd7b32 (2026-01-07)" if version == "0.8.0" else f"release {version}",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "method": "meta-device trace of comfy.sd.VAE(sd=...) first_stage_model.decode/encode; live storage bytes "
                  "per aten op (TorchDispatchMode + StorageWeakRef); attention as a fused kernel "
                  "(output + fp32 logsumexp); weights excluded",
        "families": {},
    }
    if args.dry_run:
        return 0
    data = {"schema": 1, "profiles": {}}
    if out_path.is_file():
        data = json.loads(out_path.read_text())
    old = data.setdefault("profiles", {}).get(version)
    if old is not None and not args.replace:
        # merge: the families traced now replace their own entries; every other family (and the
        # profile's provenance, which dates its first trace) stays as it was
        for family, entry in families.items():
            entry["date"] = profile["date"]
            entry["torch"] = profile["torch"]
        profile = {**old, "families": dict(old.get("families", {})),
                   PENDING: dict(old.get(PENDING, {}))}
    known = estimator_families()
    for family, entry in families.items():
        section = "families" if family in known else PENDING
        profile.setdefault(section, {})[family] = entry
        other = PENDING if section == "families" else "families"
        profile.get(other, {}).pop(family, None)
        if section == PENDING:
            print(f"[{family}] not in nodes/estimator/physics/vae_memory.py FAMILIES: written to '{PENDING}' "
                  f"(move it with --promote {family} once the estimator knows it)")
    if not profile.get(PENDING):
        profile.pop(PENDING, None)
    data["profiles"][version] = profile
    write_data(out_path, data)
    print(f"wrote profile {version} to {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
