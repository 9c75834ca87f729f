"""Re-run the estimator on a published outcome (evidence.py records): the record's workflow as an API prompt of
ComfyUI's own nodes (or the wrapper's), its card, RAM, OS, launch flags and ComfyUI era through the command
line's own flag parser, then the command line's estimate, and whether the answer warned.

What a record does not state is filled from the pipeline's official defaults (the template's size, files and
CFG) and said in `assumed`. A record that cannot be re-run (no card, a pipeline this module has no recipe
for) is `replayable=False` with the reason; it stays in the evidence base and its counts.

Scoring (issue 30): a published OOM is *warned* when the verdict is oom or the risk is high; a published run
is a *false alarm* when either is.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Mapping

from ..errors import VramBudgetError

# ComfyUI era by date, where a record does not give the version: 0.3.x until 0.8 (Jan 2026: classic memory
# management), Dynamic VRAM from 0.16 (March 2026, the 0.18 rules), pinning and prefetch from 0.30 (the 0.33 rules).
ERAS = (("2026-03-01", "0.8"), ("2026-07-15", "0.18"), ("2026-09-01", "0.33"))  # then 0.38 (0.34+)

# The official templates' defaults per pipeline: size, CFG, steps and the files a record that names none ran.
# files: diffusion model by precision class ("16" = fp16/bf16, "fp8", "gguf"), text encoders, VAE, loader kinds.
IMAGE, VIDEO = "image", "video"
_T5 = ("t5xxl_fp16.safetensors", "t5xxl_fp8_e4m3fn.safetensors")
_UMT5 = ("umt5_xxl_fp16.safetensors", "umt5_xxl_fp8_e4m3fn_scaled.safetensors")


@dataclass(frozen=True)
class Recipe:
    kind: str
    size: tuple[int, int, int]  # width, height, frames (0: image)
    cfg: float
    diffusion: Mapping[str, str]  # precision class -> file
    loader: str = "unet"  # unet | checkpoint
    clip: tuple = ()  # (loader type, clip type, 16-bit files, 8-bit files)
    vae: str = ""
    latent: str = "EmptySD3LatentImage"
    experts: int = 1  # Wan 2.2 A14B: two experts, high then low noise
    i2v: str = ""  # the image-to-video conditioning node, if any
    clip_vision: str = ""
    gguf: str = ""  # GGUF name pattern with {q}
    note: str = ""
    edit: str = ""  # an edit model's reference image, as its template adds it: "kontext" | "qwen"


WAN21_14B = dict(clip=("CLIPLoader", "wan", (_UMT5[0],), (_UMT5[1],)), vae="wan_2.1_vae.safetensors",
                 latent="EmptyHunyuanLatentVideo")
RECIPES: dict[str, Recipe] = {
    "sd15": Recipe(IMAGE, (512, 512, 0), 7.0, {"16": "v1-5-pruned-emaonly-fp16.safetensors"}, "checkpoint",
                   latent="EmptyLatentImage"),
    "sdxl": Recipe(IMAGE, (1024, 1024, 0), 7.0, {"16": "sd_xl_base_1.0.safetensors"}, "checkpoint",
                   latent="EmptyLatentImage"),
    "sd35-large": Recipe(IMAGE, (1024, 1024, 0), 4.5, {"16": "sd3.5_large.safetensors",
                                                       "fp8": "sd3.5_large_fp8_scaled.safetensors"}, "checkpoint",
                         clip=("TripleCLIPLoader", "sd3", ("clip_g.safetensors", "clip_l.safetensors", _T5[0]),
                               ("clip_g.safetensors", "clip_l.safetensors", _T5[1]))),
    "sd35-medium": Recipe(IMAGE, (1024, 1024, 0), 4.5, {"16": "sd3.5_medium.safetensors"}, "checkpoint",
                          clip=("TripleCLIPLoader", "sd3", ("clip_g.safetensors", "clip_l.safetensors", _T5[0]),
                                ("clip_g.safetensors", "clip_l.safetensors", _T5[1]))),
    "flux1-dev": Recipe(IMAGE, (1024, 1024, 0), 1.0, {"16": "flux1-dev.safetensors", "fp8": "flux1-dev-fp8.safetensors"},
                        clip=("DualCLIPLoader", "flux", (_T5[0], "clip_l.safetensors"), (_T5[1], "clip_l.safetensors")),
                        vae="ae.safetensors", gguf="flux1-dev-{q}.gguf"),
    "flux1-schnell": Recipe(IMAGE, (1024, 1024, 0), 1.0, {"16": "flux1-schnell.safetensors",
                                                          "fp8": "flux1-schnell-fp8.safetensors"},
                            clip=("DualCLIPLoader", "flux", (_T5[0], "clip_l.safetensors"),
                                  (_T5[1], "clip_l.safetensors")), vae="ae.safetensors", gguf="flux1-schnell-{q}.gguf"),
    "flux1-kontext": Recipe(IMAGE, (1024, 1024, 0), 1.0, {"16": "flux1-dev-kontext_fp8_scaled.safetensors",
                                                          "fp8": "flux1-dev-kontext_fp8_scaled.safetensors"},
                            clip=("DualCLIPLoader", "flux", (_T5[0], "clip_l.safetensors"),
                                  (_T5[1], "clip_l.safetensors")), vae="ae.safetensors",
                            gguf="flux1-kontext-dev-{q}.gguf", edit="kontext"),
    "flux1-fill": Recipe(IMAGE, (1024, 1024, 0), 1.0, {"16": "flux1-fill-dev.safetensors"},
                         clip=("DualCLIPLoader", "flux", (_T5[0], "clip_l.safetensors"), (_T5[1], "clip_l.safetensors")),
                         vae="ae.safetensors", gguf="flux1-fill-dev-{q}.gguf"),
    "flux2-dev": Recipe(IMAGE, (1024, 1024, 0), 1.0, {"16": "flux2_dev_fp8mixed.safetensors",
                                                      "fp8": "flux2_dev_fp8mixed.safetensors"},
                        clip=("CLIPLoader", "flux2", ("mistral_3_small_flux2_bf16.safetensors",),
                              ("mistral_3_small_flux2_fp8.safetensors",)), vae="flux2-vae.safetensors",
                        latent="EmptyFlux2LatentImage", gguf="flux2-dev-{q}.gguf"),
    "chroma": Recipe(IMAGE, (1024, 1024, 0), 4.0, {"16": "Chroma1-HD.safetensors", "fp8": "Chroma1-HD-fp8mixed.safetensors"},
                     clip=("CLIPLoader", "chroma", (_T5[0],), (_T5[1],)), vae="ae.safetensors"),
    "hidream": Recipe(IMAGE, (1024, 1024, 0), 5.0, {"16": "hidream_i1_full_fp16.safetensors",
                                                    "fp8": "hidream_i1_full_fp8.safetensors"},
                      clip=("QuadrupleCLIPLoader", "hidream",
                            ("clip_l_hidream.safetensors", "clip_g_hidream.safetensors", _T5[1],
                             "llama_3.1_8b_instruct_fp8_scaled.safetensors"),
                            ("clip_l_hidream.safetensors", "clip_g_hidream.safetensors", _T5[1],
                             "llama_3.1_8b_instruct_fp8_scaled.safetensors")), vae="ae.safetensors"),
    "qwen-image": Recipe(IMAGE, (1328, 1328, 0), 2.5, {"16": "qwen_image_bf16.safetensors",
                                                       "fp8": "qwen_image_fp8_e4m3fn.safetensors"},
                         clip=("CLIPLoader", "qwen_image", ("qwen_2.5_vl_7b.safetensors",),
                               ("qwen_2.5_vl_7b_fp8_scaled.safetensors",)), vae="qwen_image_vae.safetensors",
                         gguf="qwen-image-{q}.gguf"),
    "qwen-image-edit": Recipe(IMAGE, (1024, 1024, 0), 2.5, {"16": "qwen_image_edit_2509_bf16.safetensors",
                                                            "fp8": "qwen_image_edit_2509_fp8_e4m3fn.safetensors"},
                              clip=("CLIPLoader", "qwen_image", ("qwen_2.5_vl_7b.safetensors",),
                                    ("qwen_2.5_vl_7b_fp8_scaled.safetensors",)), vae="qwen_image_vae.safetensors",
                              gguf="qwen-image-edit-2509-{q}.gguf", edit="qwen"),
    "z-image": Recipe(IMAGE, (1024, 1024, 0), 1.0, {"16": "z_image_turbo_bf16.safetensors"},
                      clip=("CLIPLoader", "lumina2", ("qwen_3_4b.safetensors",), ("qwen_3_4b.safetensors",)),
                      vae="ae.safetensors"),
    "wan21-t2v-1.3b": Recipe(VIDEO, (832, 480, 81), 6.0, {"16": "wan2.1_t2v_1.3B_fp16.safetensors"}, **WAN21_14B),
    "wan21-vace-1.3b": Recipe(VIDEO, (832, 480, 81), 6.0, {"16": "wan2.1_vace_1.3B_fp16.safetensors"}, **WAN21_14B),
    "wan21-t2v-14b": Recipe(VIDEO, (1280, 720, 81), 6.0, {"16": "wan2.1_t2v_14B_fp16.safetensors",
                                                          "fp8": "wan2.1_t2v_14B_fp8_scaled.safetensors"},
                            gguf="wan2.1-t2v-14b-{q}.gguf", **WAN21_14B),
    "wan21-i2v-14b": Recipe(VIDEO, (832, 480, 81), 6.0, {"16": "wan2.1_i2v_480p_14B_fp16.safetensors",
                                                         "fp8": "wan2.1_i2v_480p_14B_fp8_scaled.safetensors"},
                            i2v="WanImageToVideo", clip_vision="clip_vision_h.safetensors",
                            gguf="wan2.1-i2v-14b-480p-{q}.gguf", **WAN21_14B),
    "wan21-flf2v-14b": Recipe(VIDEO, (1280, 720, 81), 6.0, {"16": "wan2.1_flf2v_720p_14B_fp16.safetensors",
                                                            "fp8": "wan2.1_flf2v_720p_14B_fp8_e4m3fn.safetensors"},
                              i2v="WanImageToVideo", clip_vision="clip_vision_h.safetensors", **WAN21_14B),
    "wan21-vace-14b": Recipe(VIDEO, (832, 480, 81), 6.0, {"16": "wan2.1_vace_14B_fp16.safetensors"},
                             gguf="wan2.1-vace-14b-{q}.gguf", **WAN21_14B),
    "wan22-animate-14b": Recipe(VIDEO, (640, 640, 77), 1.0, {"16": "Wan2_2-Animate-14B_fp8_e4m3fn_scaled_KJ.safetensors",
                                                             "fp8": "Wan2_2-Animate-14B_fp8_e4m3fn_scaled_KJ.safetensors"},
                                i2v="WanImageToVideo", clip_vision="clip_vision_h.safetensors",
                                note="priced as Wan 14B image-to-video (pose / face inputs not modelled)", **WAN21_14B),
    "wan22-s2v-14b": Recipe(VIDEO, (640, 640, 77), 6.0, {"16": "wan2.2_s2v_14B_bf16.safetensors",
                                                         "fp8": "wan2.2_s2v_14B_fp8_scaled.safetensors"},
                            i2v="WanImageToVideo", note="priced as Wan 14B image-to-video (the audio encoder not "
                                                        "modelled)", **WAN21_14B),
    "wan22-t2v-a14b": Recipe(VIDEO, (640, 640, 81), 3.5, {"16": "wan2.2_t2v_{e}_noise_14B_fp16.safetensors",
                                                          "fp8": "wan2.2_t2v_{e}_noise_14B_fp8_scaled.safetensors"},
                             experts=2, gguf="wan2.2_t2v_{e}_noise_14B_{q}.gguf", **WAN21_14B),
    "wan22-i2v-a14b": Recipe(VIDEO, (640, 640, 81), 3.5, {"16": "wan2.2_i2v_{e}_noise_14B_fp16.safetensors",
                                                          "fp8": "wan2.2_i2v_{e}_noise_14B_fp8_scaled.safetensors"},
                             experts=2, i2v="WanImageToVideo", gguf="wan2.2_i2v_{e}_noise_14B_{q}.gguf", **WAN21_14B),
    "wan22-fun-a14b": Recipe(VIDEO, (640, 640, 81), 3.5, {"16": "wan2.2_fun_control_{e}_noise_14B_bf16.safetensors",
                                                          "fp8": "wan2.2_fun_control_{e}_noise_14B_fp8_scaled.safetensors"},
                             experts=2, i2v="WanImageToVideo", note="priced as Wan 2.2 14B image-to-video", **WAN21_14B),
    "wan22-ti2v-5b": Recipe(VIDEO, (1280, 704, 121), 5.0, {"16": "wan2.2_ti2v_5B_fp16.safetensors"},
                            clip=("CLIPLoader", "wan", (_UMT5[0],), (_UMT5[1],)), vae="wan2.2_vae.safetensors",
                            latent="Wan22ImageToVideoLatent", gguf="wan2.2-ti2v-5b-{q}.gguf"),
    "hunyuan-video": Recipe(VIDEO, (848, 480, 73), 1.0, {"16": "hunyuan_video_t2v_720p_bf16.safetensors",
                                                         "fp8": "hunyuan_video_720_cfgdistill_fp8_e4m3fn.safetensors"},
                            clip=("DualCLIPLoader", "hunyuan_video", ("clip_l.safetensors", "llava_llama3_fp16.safetensors"),
                                  ("clip_l.safetensors", "llava_llama3_fp8_scaled.safetensors")),
                            vae="hunyuan_video_vae_bf16.safetensors", latent="EmptyHunyuanLatentVideo",
                            gguf="hunyuan-video-t2v-720p-{q}.gguf"),
    "hunyuan-video-i2v": Recipe(VIDEO, (848, 480, 73), 1.0, {"16": "hunyuan_video_image_to_video_720p_bf16.safetensors"},
                                clip=("DualCLIPLoader", "hunyuan_video", ("clip_l.safetensors", "llava_llama3_fp16.safetensors"),
                                      ("clip_l.safetensors", "llava_llama3_fp8_scaled.safetensors")),
                                vae="hunyuan_video_vae_bf16.safetensors", latent="EmptyHunyuanLatentVideo"),
    "hunyuan-video-1.5": Recipe(VIDEO, (1280, 720, 121), 6.0, {"16": "hunyuanvideo1.5_720p_t2v_fp16.safetensors"},
                                clip=("DualCLIPLoader", "hunyuan_video_15", ("qwen_2.5_vl_7b_fp8_scaled.safetensors",
                                                                             "byt5_small_glyphxl_fp16.safetensors"),
                                      ("qwen_2.5_vl_7b_fp8_scaled.safetensors", "byt5_small_glyphxl_fp16.safetensors")),
                                vae="hunyuanvideo15_vae_fp16.safetensors", latent="EmptyHunyuanVideo15Latent"),
    "ltxv-2b": Recipe(VIDEO, (768, 512, 97), 3.0, {"16": "ltx-video-2b-v0.9.5.safetensors"}, "checkpoint",
                      clip=("CLIPLoader", "ltxv", (_T5[0],), (_T5[1],)), latent="EmptyLTXVLatentVideo"),
    "ltxv-13b": Recipe(VIDEO, (768, 512, 97), 3.0, {"16": "ltxv-13b-0.9.7-dev.safetensors",
                                                    "fp8": "ltxv-13b-0.9.7-dev-fp8.safetensors"}, "checkpoint",
                       clip=("CLIPLoader", "ltxv", (_T5[0],), (_T5[1],)), latent="EmptyLTXVLatentVideo"),
}
# LTX-2 / 2.3 run as ComfyUI's official templates build them (audio + video, a text-encoder subgraph): replayed from
# the installed template package with the size changed, where it is installed.
TEMPLATES = {"ltx2": "video_ltx2_t2v", "ltx2.3": "video_ltx2_3_t2v"}
WRAPPER_DEFAULT_BLOCK_SWAP = 20
WRAPPER_PIPELINES = {"wan21-t2v-1.3b", "wan21-t2v-14b", "wan21-i2v-14b", "wan21-vace-14b", "wan22-i2v-a14b",
                     "wan22-t2v-a14b", "wan22-animate-14b", "wan22-ti2v-5b"}


@dataclass
class Replay:
    """A record made into the command line's arguments and a workflow."""

    record: Mapping
    argv: list[str] = field(default_factory=list)
    prompt: dict | None = None
    workflow: dict | None = None  # a UI workflow (template) instead of an API prompt
    size: tuple[int, int, int, int] | None = None  # what to set a template's latent to (w, h, frames, batch)
    assumed: list[str] = field(default_factory=list)
    replayable: bool = True
    why: str = ""
    # the ComfyUI release is the one of the record's date, not one the record states: it picks the memory rules
    # only; no known regression (a regression of a release, or ComfyUI's own work-around from one, needs the release
    # the record ran) and no era of ComfyUI's model code is judged on it (Device.release_assumed)
    era_assumed: bool = False

    def skip(self, why: str) -> "Replay":
        self.replayable, self.why = False, why
        return self


def precision_class(rec: Mapping) -> tuple[str, str | None]:
    """("16" | "fp8" | "gguf" | "other", gguf type) from the record's precision / file names."""
    p = (rec.get("precision") or "").lower()
    names = " ".join((rec.get("models") or {}).get("diffusion") or []).lower() if isinstance(
        (rec.get("models") or {}).get("diffusion"), list) else str((rec.get("models") or {}).get("diffusion") or "").lower()
    m = re.search(r"\b(q\d_k(?:_[sml])?|q\d_[01]|q\d_k|f16|bf16)\b", p.replace("gguf-", "") + " " + names)
    if p.startswith("gguf") or names.endswith(".gguf") or ".gguf" in names:
        q = p.split("-", 1)[1].upper() if p.startswith("gguf-") else (m.group(1).upper() if m else "Q8_0")
        return "gguf", q
    if "fp8" in p or "fp8" in names or "e4m3" in names:
        return "fp8", None
    if p in ("nf4", "svdq-int4") or "nf4" in names or "svdq" in names:
        return "other", None
    return "16", None


@lru_cache(maxsize=1)
def _releases() -> tuple[tuple[str, str], ...]:
    """(date, release) of every ComfyUI release in data/comfyui_releases.json (bench/gen_comfyui_releases.py), and
    the date its history ends."""
    from ..plan.evidence import ROOT  # noqa: PLC0415
    try:
        data = json.loads((ROOT / "data" / "comfyui_releases.json").read_text(encoding="utf-8"))
        rows = tuple((r["date"], r["version"]) for r in data["releases"])
        return rows + (((data["history_ends"], ""),) if data.get("history_ends") else ())
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def era(rec: Mapping) -> tuple[str, str]:
    """(--comfyui-version value, why): the stated version, else the ComfyUI of the record's date: the newest release
    of that date in ComfyUI's history (data/comfyui_releases.json), after its end the rule set of its date (ERAS)."""
    stated = rec.get("comfyui")
    if stated:
        m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", stated)
        if m:
            return ".".join(g for g in m.groups() if g is not None), "stated"
    date = rec.get("date") or ""
    rows = _releases()
    if date and rows and date <= rows[-1][0]:
        known = [v for d, v in rows if v and d <= date] or [rows[0][1]]
        return known[-1], f"ComfyUI {known[-1]} assumed (the release of {date[:7]})"
    for limit, rules in ERAS:
        if date < limit:
            return rules, f"ComfyUI of {date[:7]} assumed"
    return "0.38", f"ComfyUI of {date[:7]} assumed"


def device_args(rec: Mapping, replay: Replay) -> list[str]:
    """The command line's flags for the record's machine."""
    from ..machine.gpus import find_card  # noqa: PLC0415

    argv: list[str] = []
    gpu, gb = rec.get("gpu"), rec.get("vram_gib")
    card = None
    if gpu:
        try:
            card = find_card(gpu, nominal_gb=gb)
        except VramBudgetError:
            card = None
    if card is not None and (gb is None or abs(card.nominal_gb - gb) <= max(1.0, 0.1 * gb)):
        argv += ["--gpu", card.name]
    elif card is not None and gb:
        argv += ["--gpu", card.name, "--vram", f"{gb:g}"]
        replay.assumed.append(f"{card.name} with {gb:g} GB as stated")
    elif gb:
        argv += ["--vram", f"{gb:g}"]
        replay.assumed.append(f"card {gpu!r} not in the catalogue: a {gb:g} GB card" if gpu else f"a {gb:g} GB card")
    elif card is not None:
        argv += ["--gpu", card.name]
    else:
        return []
    if rec.get("ram_gib"):
        argv += ["--ram", f"{rec['ram_gib']:g}"]
    if rec.get("swap_gib") is not None:
        argv += ["--swap", f"{rec['swap_gib']:g}"]
    os_ = rec.get("os")
    if os_ is None:
        replay.assumed.append("OS not stated: Windows")
    argv += ["--os", "windows" if os_ in ("windows", None) else "linux"]
    version, why = era(rec)
    argv += ["--comfyui-version", version]
    if why != "stated":
        replay.assumed.append(why)
        replay.era_assumed = True
    argv += _stated_versions(rec)
    argv += _launch_flags(rec.get("flags") or [], replay)
    argv += _logged_vram_state(rec, argv, replay)
    return argv


def _stated_versions(rec: Mapping) -> list[str]:
    """--node-pack NAME==VER for each node pack whose version the record states, as a user gives them for the known
    regressions (cli_estimate.node_packs_from_args; at most MAX_NODE_PACKS).

    A stated PyTorch is passed as PyTorch==X.Y.Z: a regression's `applies` (data/regressions.jsonl) says where it
    hits (torch 2.9's conv3d path: NVIDIA, a 3D-convolution VAE, a ComfyUI before its own work-around)."""
    from .cli_estimate import MAX_NODE_PACKS  # noqa: PLC0415
    stated = {k: v for k, v in (rec.get("node_packs") or {}).items() if isinstance(v, str)}
    if isinstance(rec.get("pytorch"), str):
        stated = {"PyTorch": rec["pytorch"], **stated}
    out: list[str] = []
    for name, text in list(stated.items())[:MAX_NODE_PACKS]:
        m = re.search(r"\d{1,4}(\.\d{1,5}){1,3}", text)
        if m and re.fullmatch(r"[\w.\- ]{1,80}", name):
            out += ["--node-pack", f"{name}=={m.group(0)}"]
    return out


# ComfyUI's start-up log names the VRAM state its flags chose (model_management.py:557-581 in 0.33.0, the same lines
# since 0.3: "Set vram state to: HIGH_VRAM" only with --highvram / --gpu-only, LOW_VRAM / NO_VRAM with --lowvram /
# --novram): a record that quotes the line states the flag even where it lists no flags
_VRAM_STATE_LINE = re.compile(r"set vram state to:?\s*(HIGH_VRAM|LOW_VRAM|NO_VRAM)", re.IGNORECASE)
_STATE_FLAG = {"HIGH_VRAM": "--highvram", "LOW_VRAM": "--lowvram", "NO_VRAM": "--novram"}


def _logged_vram_state(rec: Mapping, argv: list[str], replay: Replay) -> list[str]:
    if any(f in argv for f in ("--highvram", "--gpu-only", "--lowvram", "--novram")):
        return []
    text = " ".join(str(rec.get(k) or "") for k in ("quote", "note", "log"))[:20_000]
    m = _VRAM_STATE_LINE.search(text)
    if m is None:
        return []
    flag = _STATE_FLAG[m.group(1).upper()]
    replay.assumed.append(f"the record's log says 'Set vram state to: {m.group(1).upper()}': replayed with {flag}")
    return [flag]


# ComfyUI launch flags the command line takes as they are (with their value where they have one)
_FLAGS_PLAIN = {"--lowvram", "--novram", "--highvram", "--gpu-only", "--cpu-vae", "--disable-smart-memory",
                "--cache-none", "--high-ram", "--disable-pinned-memory", "--directml"}
_FLAGS_VALUE = {"--reserve-vram", "--vram-headroom", "--cache-lru"}


def _launch_flags(flags: list[str], replay: Replay) -> list[str]:
    out: list[str] = []
    it = iter(range(len(flags)))
    for i in it:
        f = flags[i].strip()
        name, _, val = f.partition("=")
        name = name.split()[0] if name.split() else name
        if name in _FLAGS_PLAIN:
            out.append(name)
        elif name in _FLAGS_VALUE:
            value = val or (f.split()[1] if len(f.split()) > 1 else (flags[i + 1] if i + 1 < len(flags) else ""))
            try:
                float(value)
            except ValueError:
                continue
            out += [name, value]
        elif name in ("--disable-dynamic-vram",):
            out += ["--memory-mode", "classic"]
        elif name in ("--enable-dynamic-vram",):
            out += ["--memory-mode", "dynamic"]
    return out


class _Graph:
    def __init__(self):
        self.nodes: dict[str, dict] = {}

    def add(self, cls: str, **inputs) -> str:
        nid = str(len(self.nodes) + 1)
        self.nodes[nid] = {"class_type": cls, "inputs": inputs}
        return nid


def _files(rec: Mapping, key: str) -> list[str]:
    v = (rec.get("models") or {}).get(key)
    if isinstance(v, str):
        v = [v]
    return [x for x in (v or []) if isinstance(x, str) and re.search(r"\.(safetensors|sft|gguf|ckpt|pt|pth)$", x, re.I)]


def _diffusion_files(rec: Mapping, recipe: Recipe, replay: Replay) -> list[str]:
    stated = _files(rec, "diffusion")
    n = recipe.experts
    if len(stated) >= n:
        return stated[:n]
    cls, q = precision_class(rec)
    if cls == "other":
        return []
    if not rec.get("precision") and not stated and "fp8" in recipe.diffusion:
        cls = "fp8"  # nothing stated: the official template's file, which is the fp8 one where one is published
    experts = ("high", "low")[:n]
    if cls == "gguf":
        if not recipe.gguf:
            return []
        names = [recipe.gguf.format(q=q, e=e) for e in experts]
    else:
        pattern = recipe.diffusion.get(cls) or recipe.diffusion["16"]
        if cls == "fp8" and "fp8" not in recipe.diffusion:
            replay.assumed.append("no fp8 file of this model is published: the 16-bit file")
        names = [pattern.format(e=e) for e in experts]
    if not rec.get("precision") and not stated:
        replay.assumed.append(f"the template's diffusion model ({names[0]})")
    return names


def build_prompt(rec: Mapping, replay: Replay) -> dict | None:
    """The record's workflow as an API prompt of ComfyUI's own nodes, or None (replay.why says why)."""
    pipe = rec["pipeline"]
    recipe = RECIPES.get(pipe)
    if recipe is None:
        replay.skip(f"no recipe for pipeline {pipe!r}")
        return None
    if recipe.note:
        replay.assumed.append(recipe.note)
    w = rec.get("width") or recipe.size[0]
    h = rec.get("height") or recipe.size[1]
    frames = rec.get("frames") or recipe.size[2]
    batch = rec.get("batch") or 1
    if not (rec.get("width") and rec.get("height")):
        replay.assumed.append(f"size not stated: the template's {w}x{h}" + (f"x{frames}" if frames else ""))
    elif recipe.kind == VIDEO and not rec.get("frames"):
        replay.assumed.append(f"length not stated: the template's {frames} frames")
    cfg = rec.get("cfg") if rec.get("cfg") is not None else recipe.cfg
    diffusion = _diffusion_files(rec, recipe, replay)
    if not diffusion:
        replay.skip(f"weights {rec.get('precision')!r} have no priced file for {pipe}")
        return None
    cls, _ = precision_class(rec)
    g = _Graph()
    model_out = clip_out = vae_out = None
    checkpoint = _files(rec, "checkpoint")  # the record names an all-in-one file loaded through Load Checkpoint
    if checkpoint or (recipe.loader == "checkpoint" and not diffusion[0].endswith(".gguf")):
        ck = g.add("CheckpointLoaderSimple", ckpt_name=(checkpoint or diffusion)[0])
        model_out, clip_out, vae_out = [ck, 0], [ck, 1], [ck, 2]
        experts = [model_out]
        recipe = replace(recipe, clip=None, vae=None) if checkpoint else recipe
    else:
        experts = []
        for name in diffusion:
            if name.endswith(".gguf"):
                experts.append([g.add("UnetLoaderGGUF", unet_name=name), 0])
            else:
                experts.append([g.add("UNETLoader", unet_name=name,
                                      weight_dtype=rec.get("weight_dtype") or "default"), 0])
        model_out = experts[0]
    if recipe.clip:
        loader, ctype, f16, f8 = recipe.clip
        stated = _files(rec, "text_encoders")
        files = stated or list(f8 if cls in ("fp8", "gguf") else f16)
        if not stated:
            replay.assumed.append(f"text encoders {', '.join(files)}")
        if loader == "CLIPLoader":
            clip = g.add("CLIPLoader", clip_name=files[0], type=ctype)
        elif loader == "DualCLIPLoader":
            files = (files + list(f16))[:2]
            clip = g.add("DualCLIPLoader", clip_name1=files[0], clip_name2=files[1], type=ctype)
        elif loader == "TripleCLIPLoader":
            files = (files + list(f16))[:3]
            clip = g.add("TripleCLIPLoader", clip_name1=files[0], clip_name2=files[1], clip_name3=files[2])
        else:
            files = (files + list(f16))[:4]
            clip = g.add("QuadrupleCLIPLoader", clip_name1=files[0], clip_name2=files[1], clip_name3=files[2],
                         clip_name4=files[3])
        clip_out = [clip, 0]
    if recipe.vae:
        vae_out = [g.add("VAELoader", vae_name=(_files(rec, "vae") or [recipe.vae])[0]), 0]
    loras = (rec.get("models") or {}).get("loras")
    for i in range(min(int(loras), 8) if isinstance(loras, int) and not isinstance(loras, bool) else 0):
        experts = [[g.add("LoraLoaderModelOnly", model=m, lora_name=f"lora_{i}.safetensors", strength_model=1.0), 0]
                   for m in experts]
    if recipe.edit == "qwen":  # the template's TextEncodeQwenImageEditPlus: the image at 1 MP as a reference latent
        ref = g.add("EmptyImage", width=w, height=h, batch_size=1, color=0)
        pos = g.add("TextEncodeQwenImageEditPlus", clip=clip_out, prompt="a photo", vae=vae_out, image1=[ref, 0])
        neg = g.add("TextEncodeQwenImageEditPlus", clip=clip_out, prompt="", vae=vae_out, image1=[ref, 0])
    else:
        pos = g.add("CLIPTextEncode", text="a photo", clip=clip_out)
        neg = g.add("CLIPTextEncode", text="", clip=clip_out)
    if recipe.edit == "kontext":  # the template's FluxKontextImageScale -> VAEEncode -> ReferenceLatent
        ref = g.add("EmptyImage", width=w, height=h, batch_size=1, color=0)
        scaled = g.add("FluxKontextImageScale", image=[ref, 0])
        encoded = g.add("VAEEncode", pixels=[scaled, 0], vae=vae_out)
        pos = g.add("ReferenceLatent", conditioning=[pos, 0], latent=[encoded, 0])
    if recipe.edit:
        replay.assumed.append(f"the reference image at the output's size ({w}x{h}), scaled as the template scales it")
    positive, negative = [pos, 0], [neg, 0]
    for name in _files(rec, "controlnet")[:4]:  # a named ControlNet / control-LoRA, applied as the templates do
        cn = g.add("ControlNetLoader", control_net_name=name)
        hint = g.add("LoadImage", image="control.png")
        applied = g.add("ControlNetApplyAdvanced", positive=positive, negative=negative, control_net=[cn, 0],
                        image=[hint, 0], strength=1.0, start_percent=0.0, end_percent=1.0, vae=vae_out)
        positive, negative = [applied, 0], [applied, 1]
    if recipe.i2v:
        image = g.add("LoadImage", image="start.png")
        kw = dict(positive=positive, negative=negative, vae=vae_out, width=w, height=h, length=frames,
                  batch_size=batch, start_image=[image, 0])
        if recipe.clip_vision:
            cv = g.add("CLIPVisionLoader", clip_name=recipe.clip_vision)
            kw["clip_vision_output"] = [g.add("CLIPVisionEncode", clip_vision=[cv, 0], image=[image, 0], crop="none"), 0]
        cond = g.add(recipe.i2v, **kw)
        positive, negative, latent = [cond, 0], [cond, 1], [cond, 2]
    elif recipe.latent == "Wan22ImageToVideoLatent":
        latent = [g.add("Wan22ImageToVideoLatent", vae=vae_out, width=w, height=h, length=frames, batch_size=batch), 0]
    elif recipe.kind == VIDEO:
        latent = [g.add(recipe.latent, width=w, height=h, length=frames, batch_size=batch), 0]
    else:
        latent = [g.add(recipe.latent, width=w, height=h, batch_size=batch), 0]
    steps = rec.get("steps") or 20
    if len(experts) == 2:
        half = max(1, steps // 2)
        first = g.add("KSamplerAdvanced", model=experts[0], add_noise="enable", noise_seed=0, steps=steps, cfg=cfg,
                      sampler_name="euler", scheduler="simple", positive=positive, negative=negative,
                      latent_image=latent, start_at_step=0, end_at_step=half, return_with_leftover_noise="enable")
        sampled = g.add("KSamplerAdvanced", model=experts[1], add_noise="disable", noise_seed=0, steps=steps, cfg=cfg,
                        sampler_name="euler", scheduler="simple", positive=positive, negative=negative,
                        latent_image=[first, 0], start_at_step=half, end_at_step=10000,
                        return_with_leftover_noise="disable")
    else:
        sampled = g.add("KSampler", model=experts[0], seed=0, steps=steps, cfg=cfg, sampler_name="euler",
                        scheduler="simple", positive=positive, negative=negative, latent_image=latent, denoise=1.0)
    decoded = g.add("VAEDecode", samples=[sampled, 0], vae=vae_out)
    g.add("SaveImage", images=[decoded, 0], filename_prefix="out")
    return g.nodes


def build_wrapper_prompt(rec: Mapping, replay: Replay) -> dict | None:
    """A kijai/ComfyUI-WanVideoWrapper workflow: its model loader with block swap, T5, VAE, embeds, sampler, decode."""
    pipe = rec["pipeline"]
    recipe = RECIPES.get(pipe)
    if recipe is None or pipe not in WRAPPER_PIPELINES:
        replay.skip(f"no WanVideoWrapper recipe for pipeline {pipe!r}")
        return None
    w = rec.get("width") or recipe.size[0]
    h = rec.get("height") or recipe.size[1]
    frames = rec.get("frames") or recipe.size[2]
    if not (rec.get("width") and rec.get("height")):
        replay.assumed.append(f"size not stated: {w}x{h}x{frames}")
    cls, q = precision_class(rec)
    stated = _files(rec, "diffusion")
    name = stated[0] if stated else (recipe.diffusion.get("fp8") or recipe.diffusion["16"]).format(e="high")
    quant = "fp8_e4m3fn" if (cls == "fp8" or (not stated and "fp8" in name)) else "disabled"
    if not stated:
        replay.assumed.append(f"the wrapper's usual model file ({name}, quantization {quant})")
    g = _Graph()
    swap = rec.get("blocks_to_swap")
    kw = {}
    if swap is None:
        # the WanVideoBlockSwap node's default, and what 11 of the 23 block-swap nodes of the wrapper's own example
        # workflows set (kijai/ComfyUI-WanVideoWrapper example_workflows in the community corpus; 23 of its 26 have one)
        swap = WRAPPER_DEFAULT_BLOCK_SWAP
        replay.assumed.append(f"blocks_to_swap not stated: {swap}, the wrapper's example workflows' usual setting")
    if swap:
        kw["block_swap_args"] = [g.add("WanVideoBlockSwap", blocks_to_swap=int(swap), offload_img_emb=False,
                                       offload_txt_emb=False), 0]
    extra: dict = {}
    stated_precision = (rec.get("precision") or "").lower()
    base = stated_precision if stated_precision in ("fp32", "fp16") else "bf16"
    if base == "fp32" and not stated:  # a 16-bit file the loader casts to base_precision fp32
        name, quant = recipe.diffusion["16"].format(e="high"), "disabled"
        replay.assumed[-1] = f"the wrapper's usual 16-bit model file ({name}) at base_precision fp32"
    model = g.add("WanVideoModelLoader", model=name, base_precision=base, quantization=quant,
                  load_device="offload_device", attention_mode=rec.get("attention") or "sdpa", **kw)
    t5 = g.add("LoadWanVideoT5TextEncoder", model_name="umt5-xxl-enc-bf16.safetensors", precision="bf16",
               load_device="offload_device")
    text = g.add("WanVideoTextEncode", t5=[t5, 0], positive_prompt="a", negative_prompt="", force_offload=True)
    vae = g.add("WanVideoVAELoader", model_name="Wan2_1_VAE_bf16.safetensors", precision="bf16")
    if pipe == "wan22-animate-14b":  # the wrapper's Animate examples: WanVideoAnimateEmbeds, its default window of 77
        image = g.add("LoadImage", image="ref.png")
        window = rec.get("frame_window") or 77
        embeds = g.add("WanVideoAnimateEmbeds", vae=[vae, 0], width=w, height=h, num_frames=frames,
                       force_offload=True, frame_window_size=window, ref_images=[image, 0])
        if frames > window and not rec.get("frame_window"):
            replay.assumed.append("frame_window_size not stated: 77, WanVideoAnimateEmbeds' default")
    elif rec.get("long_video") in ("infinitetalk", "multitalk"):
        # the wrapper's InfiniteTalk / MultiTalk examples: WanVideoImageToVideoMultiTalk windows (its default of 81
        # frames) over the whole video, whose length is MultiTalkWav2VecEmbeds' num_frames
        image = g.add("LoadImage", image="start.png")
        wav = g.add("DownloadAndLoadWav2VecModel", model="TencentGameMate/chinese-wav2vec2-base", base_precision="fp16",
                    load_device="main_device")
        audio = g.add("LoadAudio", audio="speech.wav")
        talk_embeds = g.add("MultiTalkWav2VecEmbeds", wav2vec_model=[wav, 0], audio_1=[audio, 0],
                            normalize_loudness=True, num_frames=frames, fps=25.0, audio_scale=1.0,
                            audio_cfg_scale=1.0, multi_audio_type="para")
        embeds = g.add("WanVideoImageToVideoMultiTalk", vae=[vae, 0], width=w, height=h,
                       frame_window_size=rec.get("frame_window") or 81,
                       motion_frame=25, force_offload=False, colormatch="disabled", start_image=[image, 0],
                       mode=rec["long_video"])
        replay.assumed.append(("" if rec.get("frame_window") else "frame_window_size not stated: 81, "
                               "WanVideoImageToVideoMultiTalk's default; ")
                              + "the InfiniteTalk fp16 add-on (Wan2_1-InfiniteTalk_Single_fp16.safetensors)")
        talk = g.add("MultiTalkModelLoader", model="Wan2_1-InfiniteTalk_Single_fp16.safetensors")
        g.nodes[model]["inputs"]["multitalk_model"] = [talk, 0]
        extra = {"multitalk_embeds": [talk_embeds, 0]}
    elif recipe.i2v:
        image = g.add("LoadImage", image="start.png")
        embeds = g.add("WanVideoImageToVideoEncode", vae=[vae, 0], width=w, height=h, num_frames=frames,
                       start_image=[image, 0])
    else:
        embeds = g.add("WanVideoEmptyEmbeds", width=w, height=h, num_frames=frames)
    cfg = rec.get("cfg") if rec.get("cfg") is not None else recipe.cfg
    sampler = g.add("WanVideoSampler", model=[model, 0], text_embeds=[text, 0], image_embeds=[embeds, 0],
                    steps=rec.get("steps") or 20, cfg=cfg, shift=5.0, seed=0, force_offload=True, scheduler="unipc",
                    **extra)
    decoded = g.add("WanVideoDecode", vae=[vae, 0], samples=[sampler, 0], enable_vae_tiling=False)
    g.add("SaveImage", images=[decoded, 0], filename_prefix="out")
    return g.nodes


# kijai/ComfyUI-HunyuanVideoWrapper's t2v example (example_workflows/hyvideo_t2v_example_01.json at 3ce9640): the fp8
# DiT with quantization fp8_e4m3fn, the LLaVA-Llama-3 text encoder in fp16 with CLIP-L, the bf16 VAE, tiled decode
HYVIDEO_MODEL = "hunyuan_video_720_fp8_e4m3fn.safetensors"


def build_hyvideo_prompt(rec: Mapping, replay: Replay) -> dict | None:
    """A kijai/ComfyUI-HunyuanVideoWrapper workflow (graph/packs/hunyuanvideowrapper.py): its model loader with block
    swap (the record's blocks_to_swap as double blocks, single_blocks_to_swap if stated), text encoders, sampler and
    tiled decode, as the wrapper's t2v example sets them."""
    recipe = RECIPES.get(rec["pipeline"])
    if recipe is None or rec["pipeline"] != "hunyuan-video":
        replay.skip(f"no HunyuanVideoWrapper recipe for pipeline {rec['pipeline']!r}")
        return None
    w, h, frames = rec.get("width") or recipe.size[0], rec.get("height") or recipe.size[1], rec.get("frames") or 0
    frames = frames or recipe.size[2]
    if not (rec.get("width") and rec.get("height") and rec.get("frames")):
        replay.assumed.append(f"size not stated: {w}x{h}x{frames}")
    stated = _files(rec, "diffusion")
    name = stated[0] if stated else HYVIDEO_MODEL
    cls, _q = precision_class(rec)
    quant = "fp8_e4m3fn" if (cls == "fp8" or "fp8" in name.lower()) else "disabled"
    if not stated:
        replay.assumed.append(f"the wrapper's example model file ({name}, quantization {quant})")
    g = _Graph()
    kw = {}
    double, single = rec.get("blocks_to_swap"), rec.get("single_blocks_to_swap") or 0
    if double is None:
        replay.assumed.append("block swap not stated: none, as the wrapper's t2v example")
    elif double or single:
        kw["block_swap_args"] = [g.add("HyVideoBlockSwap", double_blocks_to_swap=int(double),
                                       single_blocks_to_swap=int(single), offload_txt_in=False,
                                       offload_img_in=False), 0]
    model = g.add("HyVideoModelLoader", model=name, base_precision="bf16", quantization=quant,
                  load_device="offload_device", attention_mode="sageattn_varlen" if rec.get("attention") == "sage"
                  else "sdpa", **kw)
    encoders = g.add("DownloadAndLoadHyVideoTextEncoder", llm_model="Kijai/llava-llama-3-8b-text-encoder-tokenizer",
                     clip_model="openai/clip-vit-large-patch14", precision="fp16", apply_final_norm=False,
                     hidden_state_skip_layer=2, quantization="disabled", load_device="offload_device")
    text = g.add("HyVideoTextEncode", text_encoders=[encoders, 0], prompt="a", force_offload=True)
    vae = g.add("HyVideoVAELoader", model_name="hunyuan_video_vae_bf16.safetensors", precision="bf16")
    sampler = g.add("HyVideoSampler", model=[model, 0], hyvid_embeds=[text, 0], width=w, height=h, num_frames=frames,
                    steps=rec.get("steps") or 30, embedded_guidance_scale=6.0, flow_shift=9.0, seed=0,
                    force_offload=True)
    decoded = g.add("HyVideoDecode", vae=[vae, 0], samples=[sampler, 0], enable_vae_tiling=True,
                    temporal_tiling_sample_size=64, spatial_tile_sample_min_size=256, auto_tile_size=True)
    g.add("SaveImage", images=[decoded, 0], filename_prefix="out")
    return g.nodes


def under_specified(rec: Mapping) -> str:
    """Why a record states too little to be scored ("" when it states enough): a video replayed through an official
    template whose size the record does not state. Anything else left out is assumed and listed (Replay.assumed)."""
    if rec["pipeline"] in TEMPLATES and not (rec.get("width") and rec.get("height")):
        return "the video's size is not stated"
    return ""


def replay(rec: Mapping) -> Replay:
    """The command line's arguments and the workflow for one record."""
    r = Replay(rec)
    r.argv = device_args(rec, r)
    if not r.argv:
        return r.skip("no card or card size")
    runner = rec.get("runner")
    if rec.get("template") and runner in ("native", None) and _template(rec["template"]) is not None:
        # the source says this official template ran unchanged: replay it, at its own size unless one is stated
        return _template_replay(rec, r, rec["template"])
    under = under_specified(rec)
    if under:
        return r.skip(f"under-specified: {under}")
    if runner == "wanvideowrapper":
        r.prompt = build_wrapper_prompt(rec, r)
        return r
    if runner == "hunyuanvideowrapper":
        r.prompt = build_hyvideo_prompt(rec, r)
        return r
    if runner not in ("native", None):
        return r.skip(f"runner {runner!r}: no recipe for its nodes")
    if rec["pipeline"] in TEMPLATES:
        return _template_replay(rec, r)
    r.prompt = build_prompt(rec, r)
    return r


def _template(name: str):
    """The installed official template of that name, or None."""
    from ..graph.templates import load_templates  # noqa: PLC0415
    return next((t for t in _templates(load_templates) if t.name == name), None)


def _template_replay(rec: Mapping, r: Replay, name: str = "") -> Replay:
    name = name or TEMPLATES[rec["pipeline"]]
    found = _template(name)
    if found is None:
        return r.skip(f"template {name} not installed (pip install comfyui-workflow-templates-json)")
    r.workflow = _with_stated_files(found.workflow, _files(rec, "diffusion"), r)
    r.assumed.append(f"the official template {name}")
    if rec.get("width") and rec.get("height"):
        r.size = (rec["width"], rec["height"], rec.get("frames") or 0, rec.get("batch") or 1)
    else:
        r.assumed.append("size not stated: the template's")
    return r


_PRECISION_WORDS = re.compile(r"[-_.](fp8|fp16|bf16|fp32|fp4|e4m3fn|e5m2|scaled|mixed|q\d\w*|int8|int4|nvfp4)(?=[-_.]|$)")


def _stem(name: str) -> str:
    """A model file's name without its folder, extension and precision words (ltx-2-19b-distilled-fp8 ->
    ltx-2-19b-distilled): the same model at another precision has the same stem."""
    base = re.sub(r"\.(safetensors|sft|gguf|ckpt|pt|pth)$", "", name.replace("\\", "/").rsplit("/", 1)[-1].lower())
    while True:
        shorter = _PRECISION_WORDS.sub("", base)
        if shorter == base:
            return base
        base = shorter


def _with_stated_files(workflow: dict, stated: list[str], r: Replay) -> dict:
    """The template with the diffusion files the record names in place of the template's own file of the same
    model (another precision of it: the fp8 file for the bf16 one), wherever the template names it."""
    if not stated:
        return workflow
    text = json.dumps(workflow)
    names = set(re.findall(r'"([^"/\\]+\.(?:safetensors|sft|gguf|ckpt|pt|pth))"', text))
    for new in stated:
        same = sorted(n for n in names if _stem(n) == _stem(new) and n != new)
        if len(same) == 1:
            text = text.replace(json.dumps(same[0]), json.dumps(new))
            r.assumed.append(f"the template with the stated {new} in place of its {same[0]}")
    return json.loads(text)


def _templates(load, _cache=[]):  # noqa: B006  (a module-level memo)
    if not _cache:
        _cache.extend(load())
    return _cache


# ----------------------------------------------------------------------------------------------
# Running a replay through the command line's own path
@dataclass(frozen=True)
class Judged:
    """One record re-run: what the estimator answered and whether that counts as warned / a false alarm."""

    id: str
    split: str
    published: str  # the record's outcome
    verdict: str  # the command line's verdict ("" when not replayable)
    risk: str  # oom_risk level ("" when not replayable)
    warned: bool  # verdict oom or risk high
    replayable: bool
    why: str = ""
    assumed: tuple[str, ...] = ()
    peak_gib: float = 0.0
    ram_gib: float = 0.0
    pipeline: str = ""
    card_class: str = ""
    score: float = 0.0
    features: Mapping[str, float] = field(default_factory=dict)
    oom_kind: str = ""
    regression_high: bool = False  # a known regression of the record's versions made the risk high by itself

    @property
    def is_oom(self) -> bool:
        return self.published == "oom"

    @property
    def correct(self) -> bool:
        return self.warned if self.is_oom else not self.warned


def card_class(rec: Mapping) -> str:
    """'<=8 GB', '10-12 GB', '16 GB', '20-24 GB', '32-48 GB', '>48 GB' (with ' AMD' for Radeon / Instinct)."""
    gb = rec.get("vram_gib")
    if gb is None:
        from ..machine.gpus import find_card  # noqa: PLC0415
        try:
            gb = find_card(rec.get("gpu") or "").nominal_gb
        except VramBudgetError:
            gb = None
    if gb is None:
        return "unknown"
    label = ("<=8 GB" if gb <= 8 else "10-12 GB" if gb <= 12 else "16 GB" if gb <= 16 else "20-24 GB" if gb <= 24
             else "32-48 GB" if gb <= 48 else ">48 GB")
    amd = re.search(r"\b(rx|radeon|instinct|mi\d{3}|amd|strix|ryzen)\b", str(rec.get("gpu") or "").lower())
    return label + (" AMD" if amd else "")


def estimate_replay(r: Replay, device_change=None):
    """The command line's Budget for a replay (None when it cannot be re-run; r.why says why).
    `device_change(device) -> device`: a what-if on the record's card (bench/speed_evidence.py: a stated host
    link)."""
    from ..plan.capacity import _main_latent, scaled  # noqa: PLC0415
    from .cli_estimate import add_estimate_parser, devices_from_args  # noqa: PLC0415
    from ..graph import read_workflow  # noqa: PLC0415
    from ..plan.planning import estimate  # noqa: PLC0415
    from ..workload import with_frames, with_pixels  # noqa: PLC0415
    import argparse  # noqa: PLC0415

    if not r.replayable:
        return None
    parser = argparse.ArgumentParser(prog="vram-budget")
    add_estimate_parser(parser.add_subparsers(dest="command"))
    try:
        args = parser.parse_args(["estimate", "record.json", *r.argv])
        devices = devices_from_args(args)
        if r.era_assumed:  # the release of the record's date picks the rules only
            devices = [replace(d, release_assumed=True) for d in devices]
        if device_change is not None:
            devices = [device_change(devices[0]), *devices[1:]]
        workload = read_workflow(r.prompt if r.prompt is not None else r.workflow)
        if r.size is not None:
            w, h, frames, batch = r.size
            old = _main_latent(workload)
            new = with_pixels(old, w, h)
            if frames and old.is_video:
                new = with_frames(new, frames)
            from dataclasses import replace as _replace  # noqa: PLC0415
            workload = scaled(workload, old, _replace(new, batch=batch))
        budget = estimate(workload, devices[0], None)
    except (VramBudgetError, SystemExit, KeyError) as exc:
        r.skip(f"the estimate failed: {exc}")
        return None
    return budget, args


def judge(rec: Mapping) -> Judged:
    """Re-run one record and score it."""
    from ..plan.evidence import LEAVE_OUT, _thread, raises_risk, split_of  # noqa: PLC0415
    from ..units import GiB  # noqa: PLC0415

    r = replay(rec)
    token = LEAVE_OUT.set(frozenset({_thread(rec["source"])}))
    try:
        out = estimate_replay(r) if r.replayable else None
    finally:
        LEAVE_OUT.reset(token)
    common = dict(id=rec["id"], split=split_of(rec["source"]), published=rec["outcome"], pipeline=rec["pipeline"],
                  card_class=card_class(rec), oom_kind=rec.get("oom_kind") or "")
    if out is None:
        return Judged(verdict="", risk="", warned=False, replayable=False, why=r.why, assumed=tuple(r.assumed), **common)
    budget, _ = out
    risk = getattr(budget, "oom_risk", None)
    level = risk.level if risk is not None else ""
    warned = budget.verdict == "oom" or level == "high"
    if budget.verdict == "unknown":
        why = "; ".join(budget.incomplete[:1]) or (budget.missing[0].to_dict().get("reason", "") if budget.missing else "")
        return Judged(verdict="unknown", risk=level, warned=warned, replayable=False,
                      why=f"incomplete estimate: {why}"[:200], assumed=tuple(r.assumed), **common)
    host = budget.host
    return Judged(verdict=budget.verdict, risk=level, warned=warned, replayable=True, assumed=tuple(r.assumed),
                  peak_gib=round(budget.peak_bytes / GiB, 2),
                  ram_gib=round(host.peak_bytes / GiB, 2) if host is not None else 0.0,
                  score=risk.score if risk is not None else 0.0,
                  features=dict(risk.features or {}) if risk is not None else {},
                  regression_high=any(raises_risk(r) for r in getattr(budget, "known_regressions", ()) or ()), **common)


# ----------------------------------------------------------------------------------------------
# The tables of docs/accuracy.md (bench/accuracy_table.py writes them; tests/test_evidence.py pins them)
CONFIRMED = ("cuda", "hip", "ram_killed", "pagefile", "cpu_allocator", "mps")


@dataclass(frozen=True)
class Score:
    scored: int
    ooms: int
    warned: int
    runs: int
    quiet: int  # runs without a false alarm
    verdict_warned: int  # OOMs the verdict alone called oom
    verdict_false: int  # runs the verdict alone called oom

    @property
    def warned_pct(self) -> float:
        return 100.0 * self.warned / self.ooms if self.ooms else 0.0

    @property
    def quiet_pct(self) -> float:
        return 100.0 * self.quiet / self.runs if self.runs else 0.0


def score(judged) -> Score:
    sel = [j for j in judged if j.replayable]
    oom = [j for j in sel if j.is_oom]
    runs = [j for j in sel if not j.is_oom]
    return Score(len(sel), len(oom), sum(j.warned for j in oom), len(runs), sum(not j.warned for j in runs),
                 sum(j.verdict == "oom" for j in oom), sum(j.verdict == "oom" for j in runs))


def judge_all(records=None) -> list[Judged]:
    from ..plan.evidence import outcomes  # noqa: PLC0415
    return [judge(r) for r in (outcomes() if records is None else records)]


def _pct(a: int, b: int) -> str:
    return f"{a} of {b} ({100.0 * a / b:.0f} %)" if b else "none"


def _score_line(s: Score) -> str:
    return (f"OOMs warned {_pct(s.warned, s.ooms)}; runs without a false alarm {_pct(s.quiet, s.runs)} "
            f"(the verdict alone: {s.verdict_warned} OOMs called, {s.verdict_false} runs called oom)")


def _size_stated(rec: dict) -> bool:
    """The record states the width and height it ran at (what the table's "size not stated" marks otherwise)."""
    return bool(rec.get("width") and rec.get("height"))


def evidence_markdown(judged, records) -> str:
    """The evidence sections of docs/accuracy.md: both halves' scores, per family and card class, every record."""
    from ..plan.evidence import split_of  # noqa: PLC0415

    by_id = {r["id"]: r for r in records}
    out = ["# Accuracy: published ComfyUI outcomes against our answer", "",
           "Generated by `python3 bench/accuracy_table.py` from `data/outcomes/*.jsonl` (the evidence base, "
           "`data/outcomes/README.md`) and `tests/accuracy_cases.py`; `tests/test_evidence.py` and "
           "`tests/test_accuracy.py` pin it. Do not edit by hand.", "",
           "Each record is one published ComfyUI run or out-of-memory report (issue, pull request, docs page) that "
           "states the card and what happened. `nodes/estimator/cli/evidence_replay.py` re-runs the command line on it: "
           "the record's workflow built from ComfyUI's own nodes (or the official template, or a wrapper's own "
           "nodes: WanVideoWrapper, HunyuanVideoWrapper), its card, RAM, OS, "
           "launch flags, ComfyUI era (the stated version, else the one of its date, which picks the memory rules "
           "only) and the PyTorch and node-pack versions it states (`--node-pack`, for the known regressions, each "
           "where its `applies` says it hits; a regression known only from the record's own thread is left out while "
           "that record is judged). What a record leaves out "
           "is assumed and listed with it: the official template's size and files (the fp8 file where one is "
           "published), Windows when no OS is stated (most records that state one: the calibration half's majority), "
           "WanVideoWrapper's usual block swap of 20, no block swap for HunyuanVideoWrapper (its t2v example). A "
           "published OOM counts as "
           "**warned** when the verdict is oom or the OOM risk is high; a published run is a **false alarm** when "
           "either is. Records are split once into two halves by a hash of the source thread "
           "(`evidence.split_of`); every thread an earlier round calibrated on is in the calibration half. The risk "
           "model's weights (`nodes/estimator/data/oom_risk.json`) are fitted on the calibration half only "
           "(`bench/fit_oom_risk.py`); the validation half judges it.", ""]
    for half in ("calibration", "validation"):
        sel = [j for j in judged if j.split == half]
        s = score(sel)
        conf = score([j for j in sel if not j.is_oom or by_id[j.id].get("oom_kind") in CONFIRMED])
        sized = score([j for j in sel if _size_stated(by_id[j.id])])
        out += [f"**{half.capitalize()} half**: {len(sel)} records, {s.scored} scored. {_score_line(s)}. "
                f"With only the OOMs whose error names memory (CUDA / HIP / killed / page file): "
                f"warned {_pct(conf.warned, conf.ooms)}. With only the records that state the size they ran "
                f"(the replay then runs the published workload, not the template's): OOMs warned "
                f"{_pct(sized.warned, sized.ooms)}, runs without a false alarm {_pct(sized.quiet, sized.runs)}.", ""]
    out += ["## By family and card class (both halves, scored records)", "",
            "| group | half | OOMs warned | runs without a false alarm |", "|---|---|---|---|"]
    for key, label in ((lambda j: j.pipeline.split("-")[0], "family"),
                       (lambda j: j.card_class, "card")):
        groups: dict = {}
        for j in judged:
            if j.replayable:
                groups.setdefault((key(j), j.split), []).append(j)
        for (g, half), js in sorted(groups.items()):
            s = score(js)
            out.append(f"| {label}: {g} | {half} | {s.warned}/{s.ooms} | {s.quiet}/{s.runs} |")
    unscored: dict = {}
    for j in judged:
        if not j.replayable:
            unscored[j.why.split(":")[0][:70]] = unscored.get(j.why.split(":")[0][:70], 0) + 1
    out += ["", "## Not scored (kept in the base, counted above)", "",
            "| why | records |", "|---|---|"]
    out += [f"| {w} | {n} |" for w, n in sorted(unscored.items(), key=lambda kv: (-kv[1], kv[0]))]
    out += ["", "## Every scored record", "",
            "| record | half | card, RAM | workflow | published | ours (verdict, risk) | result |",
            "|---|---|---|---|---|---|---|"]
    for j in sorted((j for j in judged if j.replayable), key=lambda j: (j.split, j.id)):
        r = by_id[j.id]
        card = (r.get("gpu") or f"{r.get('vram_gib'):g} GB") + (f", {r['ram_gib']:g} GB RAM" if r.get("ram_gib") else "")
        size = "x".join(str(r[k]) for k in ("width", "height", "frames") if r.get(k)) or "size not stated"
        wf = f"{r['pipeline']} {r.get('precision') or ''} {size}".replace("  ", " ")
        pub = r["outcome"] + (f" ({r['oom_kind']})" if r.get("oom_kind") else "")
        result = ("warned" if j.warned else "**missed**") if j.is_oom else ("**false alarm**" if j.warned else "ok")
        out.append(f"| [{j.id}]({r['source']}) | {j.split} | {card} | {wf} | {pub} | {j.verdict}, {j.risk} "
                   f"({j.peak_gib:g} GiB) | {result} |")
    return "\n".join(out) + "\n\n"
