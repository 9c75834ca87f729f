"""CLIP vision and audio encoders: their weights and the CUDA context (activations small, not counted)."""
from __future__ import annotations

from ..machine.device import Device
from ..workload import Stage
from .base import Item, StageBudget, finish, overhead_items, weights_items


def simple(stage: Stage, device: Device, info_for, title: str, roles=("clip_vision",),
                  extra_notes: tuple[str, ...] = ()) -> StageBudget:
    """An encoder's stage: its weights and the CUDA context (activations not counted), or the terms a node pack priced
    for an encoder it runs itself (Stage.working: InstantIR's DINOv2)."""
    items, infos, notes = weights_items(stage, device, info_for, roles)
    if stage.working:
        items += [Item(label, int(n), "working", why) for label, n, why in stage.working]
        return finish(stage, title, items + overhead_items(device), notes)
    return finish(stage, title, items + overhead_items(device), notes + list(extra_notes))


def audio(stage: Stage, device: Device, info_for) -> StageBudget:
    """AudioEncoderEncode (comfy/audio_encoders/audio_encoders.py encode_audio): load_model_gpu of the encoder
    (the text encoder's device and dtype), then one forward over the whole clip. Its activations grow with
    the clip's length, which is not known before the audio loads: wav2vec2-large keeps a 512-channel fp16
    conv output at 3,200 steps per second of 16 kHz audio (3.3 MB/s) and all 25 hidden states at 50 frames
    per second (2.6 MB/s); Whisper works on fixed 30 s windows. Not counted: small next to the weights for
    clips of seconds."""
    model = next((info_for(ref) for ref in stage.models if ref.role == "audio_encoder"), None)
    title = f"Audio encode: {model.label}" if model else "Audio encode"
    if stage.working:  # a node pack that bounds the clip (WanVideoWrapper: num_frames / fps seconds) priced it
        # (and a model the pack keeps on the card meanwhile: Sonic's UNet, placed by its loader)
        items, _infos, notes = weights_items(stage, device, info_for, ("audio_encoder", "diffusion"))
        items += [Item(label, int(n), "working", why) for label, n, why in stage.working]
        return finish(stage, title, items + overhead_items(device), notes)
    return simple(stage, device, info_for, title, roles=("audio_encoder",),
                  extra_notes=("audio activations not counted: they grow with the clip's length "
                               "(wav2vec2-large ≈ 6 MB per second of audio), unknown before it loads",))
