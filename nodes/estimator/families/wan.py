"""Wan 2.1 / 2.2 (1.3B, 14B, TI2V 5B, A14B experts and the 14B task variants) and their VAEs."""
from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Mapping

from ..errors import PlanError
from ._spec import DIFFUSION, Family, VAE, LiveVae, VaeFamily, _r, Detector, Found, all_families

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
    # Causal Forcing (ComfyUI 0.33 supported_models.py:1341-1355 WAN21_CausalAR_T2V, picked by the file's metadata
    # config {"transformer": {"causal_ar": true}} (model_detection.py:779-780); model_base.py:1700-1704
    # CausalWanModel, comfy/ldm/wan/ar_model.py: WanModel's weights, so the 1.3B numbers). It is sampled block by
    # block with a KV cache (k_diffusion/sampling.py:1845-1957): ar_block_frames latent frames a call, which must
    # match the checkpoint's training mode: 1 framewise, 3 chunkwise (nodes_ar_video.py:57-63 SamplerARVideo).
    "wan2.1-1.3b-causal": Family(DIFFUSION, "Causal Forcing framewise (Wan 2.1 1.3B)", {
        **_WAN14, "hidden_size": 1536, "depth": 30, "heads": 12, "ffn_dim": 8960, "ar_block_frames": 1}),
    "wan2.1-1.3b-causal-chunkwise": Family(DIFFUSION, "Causal Forcing chunkwise (Wan 2.1 1.3B)", {
        **_WAN14, "hidden_size": 1536, "depth": 30, "heads": 12, "ffn_dim": 8960, "ar_block_frames": 3}),
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
    # one block's forward of CausalWanModel (a WanModel subclass, same layers) at that block's tokens
    "wan2.1-1.3b-causal": "wan2.1-1.3b",
    "wan2.1-1.3b-causal-chunkwise": "wan2.1-1.3b",
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
# a VAE file name -> (latent channels, spatial /, temporal /) for a node whose latent depends on its VAE (comfy/sd.py
# VAE.__init__; a guess by name, said as such): registry.VAE_NAME_GEOMETRY, tried in ORDER
VAE_NAME_GEOMETRY = (
    (re.compile(r"wan[ _.-]?2[._]?2.*vae|wan2\.2_vae|wan_?2_?2_vae"), (48, 16, 4)),
    (re.compile(r"wan"), (16, 8, 4)),
)
VAES = (
    # sd.py:545-559
    VaeFamily("vae-wan2.1", "Wan 2.1 VAE (Wan 2.1, Wan 2.2 14B, Qwen-Image)", 16, 8, 4, "comfy.ldm.wan.vae.WanVAE",
              LiveVae(("comfy.ldm.wan.vae.WanVAE",))),
    # sd.py:533-544
    VaeFamily("vae-wan2.2", "Wan 2.2 VAE (TI2V 5B)", 48, 16, 4, "comfy.ldm.wan.vae2_2.WanVAE",
              LiveVae(("comfy.ldm.wan.vae2_2.WanVAE",))),
)

# File-name rules by kind: first match wins, specific before general (name_infer)
NAME_RULES = {
    DIFFUSION: (
        _r(r"wan[\s_.-]?2[._]?2.*(?:ti2v|5b)|(?:ti2v|5b).*wan[\s_.-]?2[._]?2", "wan2.2-ti2v-5b", "Wan 2.2 TI2V 5B", P_WAN5, f"{_C} P_WAN5 (computed)"),
        _r(r"wan[\s_.-]?2[._]?2|a14b", "wan2.2-14b", "Wan 2.2 A14B expert", P_WAN14_T2V, f"{_C} P_WAN14_T2V (computed)"),
        # causal_forcing-framewise.safetensors: 5,680,094,249 bytes published (template video_causal_forcing_i2v)
        # = P_WAN13 x 4 (fp32) + its header; Causal Forcing is trained from Wan 2.1 T2V 1.3B
        _r(r"causal[_-]?forcing.*chunk", "wan2.1-1.3b-causal-chunkwise", "Causal Forcing chunkwise (Wan 2.1 1.3B)",
           P_WAN13, f"{_C} P_WAN13 (computed)"),
        _r(r"causal[_-]?forcing", "wan2.1-1.3b-causal", "Causal Forcing framewise (Wan 2.1 1.3B)", P_WAN13,
           f"{_C} P_WAN13 (computed)"),
        _r(r"wan.*1[._]3b|1[._]3b.*wan|wanvideo.*1[._]3b", "wan2.1-1.3b", "Wan 2.1 1.3B", P_WAN13, f"{_C} P_WAN13 (computed)"),
        # SkyReels V2 is Wan; SkyReels V1 ("skyreels_hunyuan_i2v") is HunyuanVideo (families/hunyuan_video.py)
        _r(r"wan|(?:14b.*(?:[it]2v|flf2v|vace|480p|720p))|lightx2v|causvid|skyreels(?!.*hunyuan)|phantom|humo|recammaster|fantasy"
           r"(?:talking|portrait)|infinite_?talk|steadydancer|pusa|magref|scail",
           "wan2.1-14b", "Wan 2.1 14B", P_WAN14_T2V, f"{_C} P_WAN14_T2V (computed)"),
    ),
    VAE: (
        _r(r"wan[\s_.-]?2[._]?2.*vae|wan2_2_vae", "vae-wan2.2", "Wan 2.2 VAE"),
        # Marigold v2's task VAEs (depth / normals / albedo) decode Qwen-Image-Edit's latents and are the same
        # 253,755,392 bytes as qwen_image_vae.safetensors (data/template_models.json): fine-tunes of that VAE
        _r(r"marigold.*vae", "vae-wan2.1", "Qwen-Image VAE (Marigold v2's fine-tune)"),
        # Ming-Image's VAE (253,860,250 bytes): the Wan 2.1 branch of newer sd.py with 4 image channels (RGBA),
        # which that branch reads from the weights (image_channels, conv_out_channels)
        _r(r"ming[_-]?image.*vae", "vae-wan2.1", "Wan 2.1 VAE (Ming-Image's, RGBA)"),
        _r(r"wan|qwen[_-]?image(?:[_-]layered)?[_-]vae", "vae-wan2.1", "Wan 2.1 VAE"),
    ),
}


# ----------------------------------------------------------------------------------------------
# The Wan planner's model lines (wan_plan.py, nodes/wan_planner.py)
@dataclass(frozen=True)
class WanVariant:
    """A Wan model line as the planner needs it (published architecture, files, rules)."""

    key: str
    label: str
    family: str  # families id of its diffusion model
    experts: tuple[str | None, ...]  # (None,) or the A14B pair sampled in turn
    fps: int
    multiple: int  # width/height step: VAE spatial factor × patch 2
    spatial_compression: int
    latent_channels: int
    dim: int
    num_layers: int
    ffn_dim: int
    params: int  # published parameter count of one expert (fallback when the catalogue lacks the file)
    native_sizes: tuple[tuple[int, int], ...]  # landscape (width, height)
    default_length: int
    vae_file: str
    vae_family: str
    latent_node: str  # the ComfyUI node whose width/height/length the planner feeds
    files: Mapping[str, tuple[str, ...]]  # precision -> one file name per expert
    gguf_pattern: str  # GGUF file name with {quant} (and {expert}) placeholders

    def length_for_seconds(self, seconds: float) -> int:
        return length_for_seconds(seconds, self.fps)


# Architectures: Wan-Video configs (wan_t2v_14B / wan_t2v_1_3B / wan_ti2v_5B / wan_t2v_A14B):
# dim, ffn_dim, num_layers. Parameter counts: the model cards (1.3B, 14B, 5B; A14B = 2 × 14B).
# File names: Comfy-Org repackaged repositories; GGUF: city96 / QuantStack naming.
VARIANTS: dict[str, WanVariant] = {
    v.key: v
    for v in (
        WanVariant(
            "wan2.1-1.3b", "Wan 2.1 1.3B", "wan2.1-1.3b", (None,), 16, 16, 8, 16, 1536, 30, 8960, P_WAN13,
            ((832, 480),), 81, "wan_2.1_vae.safetensors", "vae-wan2.1", "EmptyHunyuanLatentVideo",
            {"fp16": ("wan2.1_t2v_1.3B_fp16.safetensors",)}, "wan2.1-t2v-1.3b-{quant}.gguf",
        ),
        WanVariant(
            "wan2.1-14b", "Wan 2.1 14B", "wan2.1-14b", (None,), 16, 16, 8, 16, 5120, 40, 13824, P_WAN14_T2V,
            ((832, 480), (1280, 720)), 81, "wan_2.1_vae.safetensors", "vae-wan2.1", "EmptyHunyuanLatentVideo",
            {"fp16": ("wan2.1_t2v_14B_fp16.safetensors",), "fp8": ("wan2.1_t2v_14B_fp8_e4m3fn.safetensors",)},
            "wan2.1-t2v-14b-{quant}.gguf",
        ),
        WanVariant(
            "wan2.2-ti2v-5b", "Wan 2.2 TI2V 5B", "wan2.2-ti2v-5b", (None,), 24, 32, 16, 48, 3072, 30, 14336,
            P_WAN5, ((1280, 704),), 121, "wan2.2_vae.safetensors", "vae-wan2.2", "Wan22ImageToVideoLatent",
            {"fp16": ("wan2.2_ti2v_5B_fp16.safetensors",)}, "Wan2.2-TI2V-5B-{quant}.gguf",
        ),
        WanVariant(
            "wan2.2-a14b", "Wan 2.2 14B (A14B)", "wan2.2-14b", ("high_noise", "low_noise"), 16, 16, 8, 16, 5120, 40,
            13824, P_WAN14_T2V, ((832, 480), (1280, 720)), 81, "wan_2.1_vae.safetensors", "vae-wan2.1",
            "EmptyHunyuanLatentVideo",
            {
                "fp16": ("wan2.2_t2v_high_noise_14B_fp16.safetensors", "wan2.2_t2v_low_noise_14B_fp16.safetensors"),
                "fp8": ("wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors",
                        "wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors"),
            },
            "Wan2.2-T2V-A14B-{expert}-{quant}.gguf",
        ),
    )
}


def length_for_seconds(seconds: float, fps: int) -> int:
    """The 4k+1 length closest to `seconds` at `fps` (5 s at 16 fps -> 81, Wan's default clip)."""
    if seconds <= 0:
        raise PlanError(f"seconds must be positive, got {seconds}")
    frames = seconds * fps  # 4k+1 frames span 4k frame intervals = 4k/fps seconds
    return 4 * max(0, int(round(frames / 4))) + 1


def _s2v_motion_tokens(h: int, w: int) -> int:
    """FramePackMotioner (ldm/wan/model.py:1183-1218): the 19 reference-motion latent frames as 1 frame at patch
    (1,2,2), 2 frames at (2,4,4) and 16 frames at (4,8,8) (Conv3d strides, floor)."""
    return (h // 2) * (w // 2) + (h // 4) * (w // 4) + 4 * (h // 8) * (w // 8)


# Tokens a traced entry's model attends over that the stage's latent does not show (the entries' token_rule in
# data/working_memory.json counts them): (latent rows, latent columns) -> (extra tokens, what they are).
# - S2V: the reference image's latent frame (nodes_wan.py:908-912; ldm/wan/model.py:1322-1328) and the reference motion's
#   packed frames: WanSoundImageToVideoExtend always passes the previous chunk's latent (nodes_wan.py:1006-1014),
#   WanSoundImageToVideo when ref_motion is connected; the template's extend chunks have it, so it is assumed.
# - HuMo: the reference latent WanHuMoImageToVideo always adds (a zero latent without ref_image, nodes_wan.py:1074-1082),
#   appended as one more frame (ldm/wan/model.py:1582-1587).
# - Animate: WanAnimateToVideo's latent is latent_length + trim_latent frames, the reference image's frame first
#   (nodes_wan.py:1245); the graph reader's latent counts latent_length (length's frames) only.
EXTRA_TOKENS = {
    "wan2.2-14b-s2v": lambda h, w: ((h // 2) * (w // 2) + _s2v_motion_tokens(h, w),
                                    "the reference image's frame and 19 reference-motion frames packed"),
    "wan2.1-14b-humo": lambda h, w: ((h // 2) * (w // 2), "the reference image's frame"),
    "wan2.2-14b-animate": lambda h, w: ((h // 2) * (w // 2), "the reference image's frame"),
}


# Latent creators whose latent already holds those frames: WanVideoWrapper's HuMoEmbeds puts one latent frame per
# reference image into its target shape (HuMo/nodes.py:119-230; graph/packs/wanvideowrapper.py _reference_count).
LATENT_HAS_EXTRA = {"wan2.1-14b-humo": frozenset({"HuMoEmbeds"})}


# ---------------------------------------------------------------------------------------------
# Header detection (registry.detectors runs the DETECT sections in ComfyUI's model_detection.py order)
# Wan 2.2 A14B experts are architecturally identical to Wan 2.1 14B: only the file name tells them apart. These
# patterns match the Comfy-Org / QuantStack / Kijai names.
_WAN22_NAME = re.compile(r"wan[\s_.-]?2[._]?2|a14b|high[\s_-]?noise|low[\s_-]?noise", re.I)
_HIGH_NOISE = re.compile(r"high[\s_-]?noise|[_-]high[_.-]|highnoise", re.I)
_LOW_NOISE = re.compile(r"low[\s_-]?noise|[_-]low[_.-]|lownoise", re.I)


def _nearest(value: int, table: Mapping[int, str]) -> str:
    return table[min(table, key=lambda k: abs(k - value))]


# The Wan variants ComfyUI tells apart by one key (or key prefix, ending in "."), first match wins
# (model_detection.py:728-800, 0.33.0): (key, task, evidence)
_TASK_KEYS = (
    ("vace_patch_embedding.weight", "vace", "key vace_patch_embedding.weight (VACE)"),
    ("control_adapter.conv.weight", "camera", "key control_adapter.conv.weight (Fun camera control)"),
    ("casual_audio_encoder.", "s2v", "keys casual_audio_encoder.* (speech to video)"),
    ("audio_proj.", "humo", "keys audio_proj.* (HuMo)"),
    ("face_adapter.", "animate", "keys face_adapter.* (Animate)"),
    ("img_emb.emb_pos", "flf", "key img_emb.emb_pos (first-last-frame)"),
)


def _wan(v, name: str) -> Found:
    dim = v.dim("head.modulation", -1)
    out_dim = (v.dim("head.head.weight", 0) or 64) // 4
    in_dim = v.dim("patch_embedding.weight", 1)
    layers = v.count_blocks("blocks.")
    ffn = v.dim("blocks.0.ffn.0.weight", 0)
    ev = [f"key head.modulation (dim {dim})"]
    arch = dict(hidden_size=dim, depth=layers, heads=max(1, dim // 128) if dim else None, head_dim=128, in_channels=in_dim,
                out_channels=out_dim, ffn_dim=ffn, patch_size=(1, 2, 2),
                context_dim=v.dim("text_embedding.0.weight", 1))
    notes: list[str] = []
    has_img_emb = v.has("img_emb.proj.0.bias") or v.has("img_emb.proj.0.weight")
    keyed = next(((task, why) for key, task, why in _TASK_KEYS
                  if (v.startswith(key) if key.endswith(".") else v.has(key))), None)
    if keyed:
        task = keyed[0]
        ev.append(keyed[1])
        if task == "vace":
            arch["vace_layers"] = v.count_blocks("vace_blocks.")
    elif has_img_emb:
        task = "i2v"
        ev.append("key img_emb.proj.0.bias (CLIP image embedding: image to video)")
    elif out_dim == 48:
        task = "ti2v"
    elif in_dim == 48:
        task = "control"  # Wan Fun control: 16 latent + 16 control + 16 reference channels
    elif in_dim == 36:
        task = "i2v"
        ev.append("patch_embedding input 36 channels without img_emb (Wan 2.2 A14B image to video)")
    else:
        task = "t2v"
    arch["task"] = task
    variant = task
    lname = name.lower()
    if out_dim == 48:
        family = "wan2.2-ti2v-5b"
        ev.append("head.head.weight rows / 4 = 48 output channels (Wan 2.2 VAE latent: TI2V 5B)")
        arch.update(latent_channels=48, spatial_compression=16, temporal_compression=4)
    else:
        size = _nearest(dim or 0, {1536: "1.3b", 3072: "5b", 5120: "14b"})
        if size == "14b":
            wan22_by_keys = task == "i2v" and not has_img_emb
            wan22_by_name = bool(_WAN22_NAME.search(lname))
            if wan22_by_keys or wan22_by_name:
                family = "wan2.2-14b"
                if wan22_by_name:
                    ev.append("file name says Wan 2.2 A14B (the experts are architecturally identical to Wan 2.1 14B)")
                expert = "high_noise" if _HIGH_NOISE.search(lname) else "low_noise" if _LOW_NOISE.search(lname) else None
                if expert:
                    variant = expert
                    ev.append(f"file name says the {expert.replace('_', '-')} expert")
                else:
                    notes.append("Wan 2.2 A14B: which expert (high/low noise) is not in the file name")
            else:
                family = "wan2.1-14b"
                notes.append("a Wan 2.2 A14B expert looks exactly like this; name the file wan2.2_* to tell them apart")
        elif size == "5b":
            family = "wan2.2-ti2v-5b"
        else:
            family = "wan2.1-1.3b"
        if dim not in (1536, 3072, 5120):
            notes.append(f"unusual Wan width {dim}: sized as the nearest known model")
        arch.update(latent_channels=16, spatial_compression=8, temporal_compression=4)
    return Found(family, arch, tuple(ev), variant, tuple(notes))


def _nearest(value: int, table: Mapping[int, str]) -> str:
    return table[min(table, key=lambda k: abs(k - value))]

GGUF_ARCH = {"wan": "wan2.1-14b"}  # ComfyUI-GGUF convert.py model type

def _wan_vae(v) -> Found:
    """sd.py:816-: the Wan VAE; decoder.upsamples.0.upsamples.0.residual.2.weight makes it Wan 2.2's (48 ch, /16)."""
    head = v.shape("decoder.head.2.weight")
    wan22_layout = v.has("decoder.upsamples.0.upsamples.0.residual.2.weight")
    if wan22_layout and head and len(head) == 5 and head[2] == 1:
        # the same branch in newer ComfyUI (sd.py @033046c): the Wan 2.2 layout with a temporal kernel of 1 is the
        # Qwen-Image 2.1 VAE (families/qwen_image.py)
        arch = dict(all_families()["vae-qwen-image-2.1"].arch)
        return Found("vae-qwen-image-2.1", arch, ("keys decoder.middle.0.residual.0.gamma + decoder.upsamples.0."
                                                  "upsamples.0.residual.2.weight, decoder.head.2.weight of temporal "
                                                  f"kernel 1 and {int(head[0])} image channels (Qwen-Image 2.1 VAE)",))
    if wan22_layout:
        arch = dict(all_families()["vae-wan2.2"].arch)
        arch["base_channels"] = v.dim("encoder.conv1.weight", 0, arch["base_channels"])
        return Found("vae-wan2.2", arch, ("keys decoder.middle.0.residual.0.gamma + "
                                          "decoder.upsamples.0.upsamples.0.residual.2.weight (Wan 2.2 VAE)",))
    arch = dict(all_families()["vae-wan2.1"].arch)
    arch["base_channels"] = v.dim("decoder.head.0.gamma", 0, arch["base_channels"])
    return Found("vae-wan2.1", arch, ("key decoder.middle.0.residual.0.gamma (Wan 2.1 VAE; also Qwen-Image)",))


DETECT = {DIFFUSION: (Detector(keys=(("head.modulation",),), read=lambda v: _wan(v, v.name), order=728),),
          VAE: (Detector(keys=(("decoder.middle.0.residual.0.gamma",),), read=_wan_vae, order=816),)}
