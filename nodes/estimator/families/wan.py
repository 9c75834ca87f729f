"""Wan 2.1 / 2.2 (1.3B, 14B, TI2V 5B, A14B experts and the 14B task variants) and their VAEs."""
from __future__ import annotations

from ._spec import DIFFUSION, Family, VAE, VaeFamily, _r

ORDER = 10  # name rules of a lower ORDER are tried first (specific before general)
_C = "catalogue"

# Parameter counts (the catalogue's and the name rules' P_* figures)
P_WAN14_T2V = 14_288_491_584
P_WAN14_I2V = 16_394_878_784  # + k_img/v_img/norm_k_img per block + img_emb MLP
P_WAN14_FLF = P_WAN14_I2V + 514 * 1280  # + img_emb.emb_pos [1, 514, 1280]
P_WAN13 = 1_418_996_800
P_WAN22_I2V_EXTRA = 20 * 5120 * 2 * 2  # Wan 2.2 I2V: patch_embedding takes 36 instead of 16 channels
P_WAN5 = 4_999_787_712

_WAN14 = dict(hidden_size=5120, depth=40, heads=40, head_dim=128, ffn_dim=13824, in_channels=16,
              out_channels=16, patch_size=(1, 2, 2), context_dim=4096, freq_dim=256, latent_channels=16,
              spatial_compression=8, temporal_compression=4)

# Full-size architecture numbers (families.Family): ComfyUI's configs / the models' config.json
FAMILIES = {
    "wan2.1-1.3b": Family(DIFFUSION, "Wan 2.1 1.3B", {**_WAN14, "hidden_size": 1536, "depth": 30, "heads": 12,
                                                     "ffn_dim": 8960}),
    "wan2.1-14b": Family(DIFFUSION, "Wan 2.1 14B", dict(_WAN14)),
    "wan2.2-ti2v-5b": Family(DIFFUSION, "Wan 2.2 TI2V 5B", {**_WAN14, "hidden_size": 3072, "depth": 30, "heads": 24,
                                                           "ffn_dim": 14336, "in_channels": 48, "out_channels": 48,
                                                           "latent_channels": 48, "spatial_compression": 16}),
    "wan2.2-14b": Family(DIFFUSION, "Wan 2.2 A14B expert", dict(_WAN14)),
    "vae-wan2.1": Family(VAE, "Wan 2.1 VAE", dict(latent_channels=16, spatial_compression=8, temporal_compression=4,
                                                  base_channels=96)),
    "vae-wan2.2": Family(VAE, "Wan 2.2 VAE", dict(latent_channels=48, spatial_compression=16,
                                                  temporal_compression=4, base_channels=160)),
}

# Families that share another's traced working-memory profile (memory.WORKING_MEMORY_ALIAS)
WORKING_MEMORY_ALIAS = {
    "wan2.2-14b": "wan2.1-14b",
}

# Text tokens the diffusion model attends to by default (memory.DEFAULT_TEXT_TOKENS; group keys too)
TEXT_TOKENS = {
    "wan": 512,
}

# Catalogue entries that stand for the whole family (name_infer)
FAMILY_ENTRY = {
    "vae-wan2.1": "wan_2.1_vae.safetensors",
    "vae-wan2.2": "wan2.2_vae.safetensors",
}

# GGUF files of these families have the architecture of another (name_infer)
GGUF_SAME_ARCH = {
    "wan2.2-14b": "wan2.1-14b",
}

# (family, variant) -> (params, source) for a name that says the variant (name_infer)
VARIANT_PARAMS = {
    ("wan2.1-14b", "i2v"): (P_WAN14_I2V, f"{_C} P_WAN14_I2V (computed; image cross-attention)"),
    ("wan2.1-14b", "flf"): (P_WAN14_FLF, f"{_C} P_WAN14_FLF (computed)"),
    ("wan2.2-14b", "i2v"): (P_WAN14_T2V + P_WAN22_I2V_EXTRA, f"{_C} P_WAN14_T2V + P_WAN22_I2V_EXTRA (computed)"),
}

# One family id, several traced configurations: (family, arch key, value, traced entry) (memory.ARCH_ROUTES)
ARCH_ROUTES = (
    ("wan2.2-14b", "task", "i2v", "wan2.2-14b-i2v"),
    ("wan2.1-14b", "task", "i2v", "wan2.1-14b-i2v"),
    ("wan2.1-14b", "task", "flf", "wan2.1-14b-flf"),
    ("wan2.1-14b", "task", "vace", "wan2.1-14b-vace"),
    ("wan2.1-14b", "task", "control", "wan2.1-14b-fun-control"),
    ("wan2.1-14b", "task", "camera", "wan2.1-14b-camera"),
) + tuple((fam, "task", task, key) for fam in ("wan2.1-14b", "wan2.2-14b") for task, key in (
    # Wan 2.2 S2V, HuMo 17B (Wan 2.1 14B based), Wan 2.2 Animate: families.py reads the task from the keys
    # (casual_audio_encoder.* / audio_proj.* / face_adapter.*); the Wan 2.1 / 2.2 family comes from the name.
    ("s2v", "wan2.2-14b-s2v"), ("humo", "wan2.1-14b-humo"), ("animate", "wan2.2-14b-animate")))

# VAEs priced with the traced VAE constants (vae_memory.FAMILIES)
VAES = (
    # sd.py:545-559
    VaeFamily("vae-wan2.1", "Wan 2.1 VAE (Wan 2.1, Wan 2.2 14B, Qwen-Image)", 16, 8, 4, "comfy.ldm.wan.vae.WanVAE"),
    # sd.py:533-544
    VaeFamily("vae-wan2.2", "Wan 2.2 VAE (TI2V 5B)", 48, 16, 4, "comfy.ldm.wan.vae2_2.WanVAE"),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"wan[\s_.-]?2[._]?2.*(?:ti2v|5b)|(?:ti2v|5b).*wan[\s_.-]?2[._]?2", "wan2.2-ti2v-5b", "Wan 2.2 TI2V 5B", P_WAN5, f"{_C} P_WAN5 (computed)"),
        _r(r"wan[\s_.-]?2[._]?2|a14b", "wan2.2-14b", "Wan 2.2 A14B expert", P_WAN14_T2V, f"{_C} P_WAN14_T2V (computed)"),
        _r(r"wan.*1[._]3b|1[._]3b.*wan|wanvideo.*1[._]3b", "wan2.1-1.3b", "Wan 2.1 1.3B", P_WAN13, f"{_C} P_WAN13 (computed)"),
        _r(r"wan|(?:14b.*(?:[it]2v|flf2v|vace|480p|720p))|lightx2v|causvid|skyreels|phantom|humo|recammaster|fantasy"
           r"(?:talking|portrait)|infinite_?talk|steadydancer|pusa|magref|scail",
           "wan2.1-14b", "Wan 2.1 14B", P_WAN14_T2V, f"{_C} P_WAN14_T2V (computed)"),
    ),
    VAE: (
        _r(r"wan[\s_.-]?2[._]?2.*vae|wan2_2_vae", "vae-wan2.2", "Wan 2.2 VAE"),
        _r(r"wan|qwen[_-]?image(?:[_-]layered)?[_-]vae", "vae-wan2.1", "Wan 2.1 VAE"),
    ),
}
