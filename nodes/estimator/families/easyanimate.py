"""EasyAnimate V5.1 12B (aigc-apps, EasyAnimateTransformer3DModel, easyanimate/models/transformer3d.py:1347 at c2a70d17):
a 48-block MMDiT of 3072 (48 heads of 64; every block joint attention over video and text tokens with a separate
text feed-forward, mmdit_layers 48), per-frame 2x2 patches on a 16-channel latent at /8 (MagViT VAE, 4x temporal),
conditioned on Qwen2-VL-7B hidden states (text_embed_dim 3584, the prompt padded to 256 tokens).

Counts: the repo's class built on the meta device at the published configs (transformer/config.json of
alibaba-pai/EasyAnimateV5.1-12b-zh-InP: in_channels 33; the Control release's 48 adds 184,320): 11,799,265,856,
matching the published 23.6 GB bf16 transformer. ComfyUI has no class for it: the working memory is the
first-principles DiT formula ("uncalibrated"); the pack that runs it is graph/packs/videox_fun.py (EasyAnimate's
ComfyUI nodes are VideoX-Fun's predecessors, the same diffusers pipelines).
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

# EasyAnimate V5 12B (the same EasyAnimateTransformer3DModel: 48 blocks of 3072) reads two encoders, HunyuanDiT's
# BERT (1024) and mT5-XL (2048), through text_proj and text_proj_t5 and concatenates their tokens (transformer3d.py,
# forward: torch.cat([encoder_hidden_states, encoder_hidden_states_t5], dim=1)); V5.1 reads Qwen2-VL (3584) through
# text_proj alone. V5's own transformer/config.json is not here: it is priced at V5.1's count, the projections
# differing by (1024 + 2048 - 3584) x 3072 = -1.6M parameters, 0.01 % of it (said in the label).

ORDER = 126  # names with "easyanimate": no other family's rules contain it

P_EASYANIMATE_V51_12B = 11_799_265_856
P_EASYANIMATE_V5_12B = P_EASYANIMATE_V51_12B

FAMILIES = {
    "easyanimate-v5.1-12b": Family(DIFFUSION, "EasyAnimate V5.1 12B", dict(
        hidden_size=3072, depth=48, heads=48, head_dim=64, ffn_dim=12288, in_channels=33, out_channels=16,
        patch_size=(1, 2, 2), context_dim=3584, latent_channels=16, spatial_compression=8, temporal_compression=4)),
    "easyanimate-v5-12b": Family(DIFFUSION, "EasyAnimate V5 12B", dict(
        hidden_size=3072, depth=48, heads=48, head_dim=64, ffn_dim=12288, in_channels=33, out_channels=16,
        patch_size=(1, 2, 2), context_dim=2048, latent_channels=16, spatial_compression=8, temporal_compression=4)),
}

# pipeline_easyanimate_inpaint.py:403, 446-448: the prompt padded to min(tokenizer.model_max_length, 256)
# V5: each encoder's prompt padded to min(its tokenizer's model_max_length, 256) (pipeline_easyanimate_inpaint.py
# _encode_prompt, actual_max_sequence_length 256), the two concatenated: at most 512, an upper bound
TEXT_TOKENS = {"easyanimate-v5.1-12b": 256, "easyanimate-v5-12b": 512}

NAME_RULES = {
    DIFFUSION: (
        _r(r"easyanimate[_-]?v5\.1[_-].*12b", "easyanimate-v5.1-12b", "EasyAnimate V5.1 12B", P_EASYANIMATE_V51_12B,
           "families/easyanimate.py P_EASYANIMATE_V51_12B (the repo's transformer at the published config)"),
        _r(r"easyanimate[_-]?v5(?![._]\d)[_-].*12b", "easyanimate-v5-12b",
           "EasyAnimate V5 12B (V5.1's count: the text projections differ by 0.01 %)", P_EASYANIMATE_V5_12B,
           "families/easyanimate.py P_EASYANIMATE_V5_12B (V5.1's transformer count)"),
    ),
}
