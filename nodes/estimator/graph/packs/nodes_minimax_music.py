"""ComfyUI 0.33.0's MiniMax Music 3 nodes (comfy_extras/nodes_minimax_music.py): the 1-D audio latent and the song
length its text encoder hands on.

EmptyMiniMaxMusic3LatentAudio (:59-67): zeros([B, 128, latent_length(min(9000, max(1, round(seconds x 25))))]).
MiniMaxMusic3TextEncode (:34-42) generates the acoustic sequence (at most min(9000, round(max_duration x 25))
frames: "the model can end the song earlier") and outputs its length in seconds; the template wires that into the
empty latent, so the graph fixes only its upper bound, max_duration: the estimate takes it.
"""
from __future__ import annotations

from ...families.minimax_music import AUDIO_FRAMES_PER_SECOND, MAX_AUDIO_FRAMES, latent_length
from ...workload import LatentShape
from ..base import _UNKNOWN
from . import Pack


def _frames(seconds: float) -> int:
    return min(MAX_AUDIO_FRAMES, max(1, round(seconds * AUDIO_FRAMES_PER_SECOND)))


def _latent(a, node, slot, depth):
    seconds = a.number(node, "seconds", 120.0, integer=False)
    batch = a.number(node, "batch_size", 1) or 1
    if seconds is None:
        return None
    return LatentShape(batch=batch, channels=128, height=1, width=latent_length(_frames(seconds)),
                       spatial_compression=1, media="audio", source_node=node.id, source_type=node.type)


def _seconds(a, node, link, depth, sub):
    """MiniMaxMusic3TextEncode's `seconds` (slot 1): the generated length, at most max_duration's frames / 25."""
    if link.slot != 1:
        return _UNKNOWN
    max_duration = sub("max_duration")
    if not isinstance(max_duration, (int, float)) or isinstance(max_duration, bool):
        return _UNKNOWN
    a.note(f"{a.label(node)}: the song's length is generated (the model can end it earlier); "
           f"taken at its upper bound, max_duration {max_duration:g} s")
    return _frames(float(max_duration)) / AUDIO_FRAMES_PER_SECOND


PACK = Pack(
    name="nodes_minimax_music",
    latents={"EmptyMiniMaxMusic3LatentAudio": _latent},
    values={"MiniMaxMusic3TextEncode": _seconds},
)
