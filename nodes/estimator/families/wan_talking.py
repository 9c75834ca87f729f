"""The audio add-ons of Wan 2.1 14B's talking-video models: files that hold only the layers they add to the 14B
DiT, never the DiT (kijai/ComfyUI-WanVideoWrapper merges them into it in WanVideoModelLoader; ComfyUI's
ModelPatchLoader builds InfiniteTalk / MultiTalk as MultiTalkModelPatch, nodes_model_patch.py, loaded with the
model it patches).

- InfiniteTalk / MultiTalk (MeiGen-AI): an audio cross-attention in each of the 40 blocks and the audio projector
  (comfy/ldm/wan/model_multitalk.py). Count: the published Comfy-Org fp16 file
  (model_patches/wan2.1_infiniteTalk_single_fp16.safetensors, 5,121,748,500 bytes; the multi-speaker file is the
  same size) / 2.
- FantasyTalking (Fantasy-AMAP): per block of the 14B (40) a WanCrossAttentionProcessor with k_proj and v_proj,
  2048 -> 5120 without bias, and AudioProjModel (768 -> 2048 without bias, LayerNorm 2048), computed:
  40 x 2 x 2048 x 5120 + 768 x 2048 + 2 x 2048 = 840,437,760 (the FantasyTalking repository's
  infer_audio_condition / model.py at the size the wrapper builds: FantasyTalkingAudioConditionModel(audio_in_dim=768,
  audio_proj_dim=2048)).
"""
from __future__ import annotations

from ._spec import CONTROLNET, Family, _r

ORDER = 150  # before the Wan family rules: "Wan2_1-InfiniteTalk_Single_Q8" is the add-on, not the 14B

P_INFINITETALK = 5_121_748_500 // 2
P_FANTASYTALKING = 40 * 2 * 2048 * 5120 + 768 * 2048 + 2 * 2048

FAMILIES = {
    "wan21-infinitetalk": Family(CONTROLNET, "InfiniteTalk / MultiTalk audio layers (Wan 2.1 14B)", {}),
    "wan21-fantasytalking": Family(CONTROLNET, "FantasyTalking audio layers (Wan 2.1 14B)", {}),
}

NAME_RULES = {
    CONTROLNET: (
        _r(r"infinite[_-]?talk|multi[_-]?talk", "wan21-infinitetalk",
           "InfiniteTalk / MultiTalk audio layers (Wan 2.1 14B)", P_INFINITETALK,
           "the published Comfy-Org fp16 file / 2 (families/wan_talking.py)"),
        _r(r"fantasy[_-]?talking", "wan21-fantasytalking", "FantasyTalking audio layers (Wan 2.1 14B)",
           P_FANTASYTALKING, "computed from FantasyTalking's processors (families/wan_talking.py)"),
    ),
}
