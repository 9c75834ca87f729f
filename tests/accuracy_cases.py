"""Published ComfyUI runs against our prediction: the calibration table of docs/accuracy.md.

Each case is one public report (issue, pull request, official docs) that states the card, the
models, the settings and what happened. `evaluate()` runs the shared estimator on it and says
whether the outcome (and, where one was published, the number) agrees. tests/test_accuracy.py
pins every case; bench/accuracy_table.py writes docs/accuracy.md from the same list, so the table
is generated, never typed.

Outcomes: fits (loaded completely), runs_slower (loaded partially / offloaded, or a VAE decode that
fell back to tiles), oom (the run failed with an out-of-memory error), and for a capacity case the
largest batch that ran. Tolerances (issue #9): peaks −5 % / +10 %, resident bytes and batch
capacity ±15 %.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from test_budget import flux_workload, wan22_workload  # noqa: E402  (tests/ is on sys.path)
from vram_budget.nodes.estimator.plan import capacity
from vram_budget.nodes.estimator.machine.device import Device
from vram_budget.nodes.estimator.plan.planning import estimate
from vram_budget.nodes.estimator.plan.budget import assess
from vram_budget.nodes.estimator.families import FAMILIES
from vram_budget.nodes.estimator.machine.gpus import Card, card_for_vram, find_card, windows_desktop_bytes
from vram_budget.nodes.estimator.graph import read_workflow
from vram_budget.nodes.estimator.machine.host_memory import OS_BYTES, Host
from vram_budget.nodes.estimator.model_info import DIFFUSION, VAE, ModelInfo
from vram_budget.nodes.estimator.units import GiB, MiB
from vram_budget.nodes.estimator.workload import (
    CLIP_VISION_ENCODE, SAMPLE, TEXT_ENCODE, VAE_DECODE, VAE_ENCODE, LatentShape, ModelRef, Stage, Workload,
)

AGREE_OUTCOMES = {"fits": {"fits", "tight"}, "runs_slower": {"runs_slower"}, "oom": {"oom"},
                  "runs": {"fits", "tight", "runs_slower"}}


def ram(gib: float, swap: float | None = None, os: str = "linux", rules: str = "0.8", **kw) -> Host:
    """The machine's RAM as published; rules: the ComfyUI of the report's date (0.3.x and up to 0.15: the
    classic rules of 0.8; 0.16-0.29: 0.18; 0.30+: 0.33)."""
    return Host(ram_total_bytes=int(gib * GiB), swap_total_bytes=None if swap is None else int(swap * GiB), os=os,
                rules=rules, source="--ram", **kw)


def windows(card: str | Card, ram_gib: float | None = None, swap: float | None = None, rules: str = "0.8",
            host_kw: dict | None = None, **kw) -> Device:
    """Windows: EXTRA_RESERVED_VRAM 600 MiB, +100 MiB above 15 GiB (model_management.py:566-572)."""
    c = find_card(card) if isinstance(card, str) else card
    if ram_gib is not None:
        kw["host"] = ram(ram_gib, swap, "windows", rules, **(host_kw or {}))
    kw.setdefault("other_processes_bytes", windows_desktop_bytes(c))  # the desktop and the browser (gpus.py)
    return Device.from_card(c, reserve_bytes=(600 + (100 if c.total_bytes > 15 * GiB else 0)) * MiB, **kw)


def linux(card: str | Card, ram_gib: float | None = None, swap: float | None = None, rules: str = "0.8",
          host_kw: dict | None = None, **kw) -> Device:
    if ram_gib is not None:
        kw["host"] = ram(ram_gib, swap, "linux", rules, **(host_kw or {}))
    return Device.from_card(find_card(card) if isinstance(card, str) else card, **kw)


def template(name: str) -> Workload:
    """An official template as the installed comfyui-workflow-templates package has it."""
    from workflows.templates import load_templates  # noqa: PLC0415  (reads the installed package once)

    return read_workflow(_TEMPLATES(load_templates)[name].workflow)


def _TEMPLATES(load, _cache={}):  # noqa: B006  (a module-level memo)
    if not _cache:
        _cache.update({t.name: t for t in load()})
    return _cache


FP8 = dict(weight_dtype="fp8_e4m3fn", t5="t5xxl_fp8_e4m3fn.safetensors")
# the fp8 file itself (11.9 GB): what a report that says "Flux dev fp8" loads; for the host side the file
# read matters (the 23.8 GB bf16 file with weight_dtype fp8 maps twice as much while it loads)
FP8_FILE = dict(unet="flux1-dev-fp8.safetensors", t5="t5xxl_fp8_e4m3fn.safetensors")


def qwen_image(w=1328, h=1328, batch=1, cfg=2.5) -> Workload:
    lat = LatentShape(batch, 16, h // 8, w // 8, pixel_width=w, pixel_height=h)
    return Workload(stages=(
        Stage(TEXT_ENCODE, "1", "CLIPTextEncode", models=(ModelRef("text_encoder", "qwen_2.5_vl_7b_fp8_scaled.safetensors",
                                                                   "text_encoders", clip_type="qwen_image"),)),
        Stage(SAMPLE, "2", "KSampler", models=(ModelRef("diffusion", "qwen_image_fp8_e4m3fn.safetensors",
                                                        "diffusion_models"),), latent=lat, cfg=cfg),
        Stage(VAE_DECODE, "3", "VAEDecode", models=(ModelRef("vae", "qwen_image_vae.safetensors", "vae"),), latent=lat),
    ))


def wan22_5b(w=1280, h=704, length=121) -> Workload:
    lat = LatentShape(1, 48, h // 16, w // 16, frames=(length - 1) // 4 + 1, pixel_width=w, pixel_height=h,
                      pixel_frames=length, spatial_compression=16, temporal_compression=4)
    return Workload(stages=(
        Stage(TEXT_ENCODE, "1", "CLIPTextEncode", models=(ModelRef("text_encoder", "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                                   "text_encoders", clip_type="wan"),)),
        Stage(SAMPLE, "2", "KSampler", models=(ModelRef("diffusion", "wan2.2_ti2v_5B_fp16.safetensors",
                                                        "diffusion_models"),), latent=lat, cfg=5.0),
        Stage(VAE_DECODE, "3", "VAEDecode", models=(ModelRef("vae", "wan2.2_vae.safetensors", "vae"),), latent=lat),
    ))


def wan22_14b_fp8(w, h, length) -> Workload:
    """The Comfy-Org Wan 2.2 14B templates: fp8_scaled experts and umT5 fp8_scaled."""
    wl = wan22_workload(w=w, h=h, length=length, precision="fp8_scaled")
    te = (ModelRef("text_encoder", "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "text_encoders", clip_type="wan"),)
    return Workload(stages=tuple(Stage(s.kind, s.node_id, s.node_type, models=te) if s.kind == TEXT_ENCODE else s
                                 for s in wl.stages))


# HunyuanVideo 720p fp8 (kijai's repackage, 1 byte per parameter): 12.8 B parameters (Tencent's
# model card: 13 B); the VAE 246 M parameters in bf16. Not in the catalogue, so given here.
HUNYUAN = {
    "diffusion_models/hunyuan_video_720_fp8_e4m3fn.safetensors": ModelInfo(
        kind=DIFFUSION, family="hunyuan-video", label="HunyuanVideo (13B)", params=12_821_012_544,
        weights_bytes=12_821_012_544, dtype="F8_E4M3", quantization="fp8_e4m3fn", arch=FAMILIES["hunyuan-video"].arch,
        source="catalogue"),
    "vae/hunyuan_video_vae_bf16.safetensors": ModelInfo(
        kind=VAE, family="vae-hunyuan", label="HunyuanVideo VAE", params=246_000_000, weights_bytes=492_000_000,
        dtype="BF16", arch=FAMILIES["vae-hunyuan"].arch, source="catalogue"),
}


# city96's flux1-schnell-Q4_0.gguf: Q4_0 blocks hold 32 weights in 18 bytes (4.5 bits); the
# largest layer dequantized to 16 bit is a single block's linear1 (3072 × 21504).
SCHNELL_Q4 = {"unet/flux1-schnell-Q4_0.gguf": ModelInfo(
    kind=DIFFUSION, family="flux1-schnell", label="Flux.1 schnell (12B)", params=11_891_178_560,
    weights_bytes=int(11_891_178_560 * 4.5 / 8), dtype="Q4_0", quantization="gguf Q4_0",
    arch=FAMILIES["flux1-schnell"].arch, largest_tensor_bytes=3072 * 21504 * 2, source="catalogue")}


def schnell_gguf(w=1920, h=1080) -> Workload:
    wl = flux_workload(w=w, h=h, unet="flux1-schnell-Q4_0.gguf", t5="t5xxl_fp8_e4m3fn.safetensors")
    stages = []
    for st in wl.stages:
        if st.kind == SAMPLE:
            st = Stage(st.kind, st.node_id, st.node_type, models=(ModelRef("diffusion", "flux1-schnell-Q4_0.gguf", "unet",
                                                                           gguf=True),), latent=st.latent, cfg=1.0)
        stages.append(st)
    return Workload(stages=tuple(stages))


def hunyuan(w=960, h=544, length=129) -> Workload:
    lat = LatentShape(1, 16, h // 8, w // 8, frames=(length - 1) // 4 + 1, pixel_width=w, pixel_height=h,
                      pixel_frames=length, temporal_compression=4)
    return Workload(stages=(
        Stage(SAMPLE, "2", "KSampler", models=(ModelRef("diffusion", "hunyuan_video_720_fp8_e4m3fn.safetensors",
                                                        "diffusion_models"),), latent=lat, cfg=1.0),
        Stage(VAE_DECODE, "3", "VAEDecode", models=(ModelRef("vae", "hunyuan_video_vae_bf16.safetensors", "vae"),),
              latent=lat),
    ))


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    setup: str  # card, models, settings as published
    published: str  # fits | runs_slower | oom | batch:N
    evidence: str  # what the source says (short)
    device: Callable[[], Device]
    workload: Callable[[], Workload]
    models: dict = field(default_factory=dict)
    number: tuple | None = None  # (kind, published value): ("resident_mib", x) | ("peak_gib", x) | ("max_batch", n)
    note: str = ""  # what is uncertain, what we assumed
    fitted: bool = False  # used to fit a constant (not an independent check)


CASES: tuple[Case, ...] = (
    Case("flux-fp8-3060-6008", "https://github.com/Comfy-Org/ComfyUI/issues/6008",
         "RTX 3060 12 GB, Windows; Flux dev fp8 (manual cast bf16); 'slightly higher' than 1024² (1152×896 assumed)",
         "runs_slower", "Flux 'loaded partially 8564.88 8564.50'; 35 steps in 7:38",
         lambda: windows("RTX 3060"), lambda: flux_workload(w=1152, h=896, **FP8),
         number=("resident_mib", 8564.50),
         note="the Windows desktop and browser share (1 GiB on a consumer card, gpus.WINDOWS_DESKTOP_BYTES) is fitted here", fitted=True),
    Case("flux-te-fp8-3060-6008", "https://github.com/Comfy-Org/ComfyUI/issues/6008",
         "RTX 3060 12 GB, Windows; T5-XXL fp8_e4m3fn + CLIP-L (FluxClipModel_)", "fits",
         "'Requested to load FluxClipModel_ / loaded completely … 4777.5 …'",
         lambda: windows("RTX 3060"), lambda: flux_workload(w=1152, h=896, **FP8), number=("te_mib", 4777.5),
         note="the text-encode stage of the same run"),
    Case("flux-fp8-3060-12334", "https://github.com/Comfy-Org/ComfyUI/issues/12334",
         "RTX 3060 12 GB, 16 GB RAM, Windows; Flux dev fp8; defaults", "runs_slower",
         "'ComfyUI switches to partial loading / offloading / lowvram patches … Generation itself eventually finishes'",
         lambda: windows("RTX 3060", ram_gib=16), lambda: flux_workload(**FP8_FILE), fitted=True),
    Case("flux-fp8-4060laptop-4461", "https://github.com/Comfy-Org/ComfyUI/issues/4461",
         "RTX 4060 Laptop 8 GB; Flux dev fp8, 1024², 20 steps", "runs_slower",
         "'with dev (20 steps) it can take more then 400 seconds per one image'",
         lambda: windows("RTX 4060 Laptop"), lambda: flux_workload(**FP8)),
    Case("flux-fp8-gtx1070-4271", "https://github.com/Comfy-Org/ComfyUI/issues/4271",
         "GTX 1070 8 GB, 32 GB RAM; Flux fp8, 1024²", "runs_slower", "'On a 1024 x 1024 img, I was at 30 s/it'",
         lambda: windows("GTX 1070", ram_gib=32), lambda: flux_workload(**FP8_FILE)),
    Case("flux-fp16-2070s-gguf2", "https://github.com/city96/ComfyUI-GGUF/issues/2",
         "RTX 2070 SUPER 8 GB, Windows; Flux dev fp16 + fp16 T5/CLIP", "runs_slower",
         "'I can run fp16 flux-dev + fp16 clip without any issues'",
         lambda: Device.from_card(card_for_vram(8, False), reserve_bytes=600 * MiB), lambda: flux_workload()),
    Case("schnell-q4-2060s-4461", "https://github.com/Comfy-Org/ComfyUI/issues/4461",
         "RTX 2060 Super 8 GB; Flux schnell GGUF Q4_0, 1920×1080, 4 steps", "runs",
         "'it takes 39 seconds for 1920x1080 image on schnell Q4_0 model (4 steps)'",
         lambda: Device.from_card(card_for_vram(8, False), reserve_bytes=600 * MiB), lambda: schnell_gguf(),
         models=SCHNELL_Q4, note="'runs' without a log line: fits or a partial load would both match; T5 fp8 assumed"),
    Case("qwen-fp8-4090-11790", "https://github.com/Comfy-Org/ComfyUI/issues/11790",
         "RTX 4090 24 GB; Qwen-Image fp8_e4m3fn (bf16 compute), 1328² assumed", "fits",
         "'Requested to load QwenImage / loaded completely; 20683.88 MB usable, 19483.95 MB loaded, full load: True'",
         lambda: windows("RTX 4090"), lambda: qwen_image(), number=("resident_mib", 19483.95)),
    Case("qwen-fp8-4090d-docs", "https://docs.comfy.org/tutorials/image/qwen/qwen-image",
         "RTX 4090D 24 GB; Qwen-Image fp8_e4m3fn + Qwen2.5-VL 7B fp8, template 1328²", "fits",
         "VRAM usage reference: fp8_e4m3fn 86 % of 24 GB",
         lambda: windows("RTX 4090"), lambda: qwen_image(), number=("peak_gib", 0.86 * 23.99),
         note="86 % read as a share of the card's 23.99 GiB", fitted=True),
    Case("qwen-b47-5090-10725", "https://github.com/Comfy-Org/ComfyUI/pull/10725",
         "RTX 5090 32 GB; Qwen-Image, 1328², batch 47", "runs_slower",
         "'to being able to succesfully run B=47 (RTX5090)'",
         lambda: linux("RTX 5090"), lambda: qwen_image(batch=47, cfg=1.0),
         note="precision not stated (fp8 assumed); ComfyUI streams the weights at this batch"),
    Case("flux-1600-5090-10737", "https://github.com/Comfy-Org/ComfyUI/pull/10737",
         "RTX 5090 32 GB; Flux, 1600×1600: the largest batch that ran", "batch:22",
         "'This take me from B=19 to B=22 for 1600x1600 on RTX5090'",
         lambda: linux("RTX 5090"), lambda: flux_workload(w=1600, h=1600, **FP8), number=("max_batch", 22),
         note="precision not stated (fp8 assumed); default flags", fitted=True),
    Case("wan22-14b-720p-12gb-kj1713", "https://github.com/kijai/ComfyUI-WanVideoWrapper/issues/1713",
         "12 GB card; Wan 2.2 14B (fp8_scaled templates), 1280×720×81, native workflow", "runs_slower",
         "'Native workflow can run 81 frames 720p in 12G vram'",
         lambda: linux("RTX 3060"), lambda: wan22_14b_fp8(1280, 720, 81),
         note="card model not stated: RTX 3060 12 GB assumed"),
    Case("wan22-funcontrol-4090d-docs", "https://docs.comfy.org/tutorials/video/wan/wan2-2-fun-control",
         "RTX 4090D 24 GB; Wan 2.2 14B Fun Control fp8_scaled, 640×640×81", "fits", "fp8_scaled: 83 % VRAM",
         lambda: windows("RTX 4090"), lambda: wan22_14b_fp8(640, 640, 81),
         number=("peak_gib", 0.83 * 23.99),
         note="Fun Control priced as the I2V expert of the same size (control channels not modelled); the docs' "
              "VRAM % likely includes the Windows desktop's share (not stated)"),
    Case("wan22-funcamera-4090d-docs", "https://docs.comfy.org/tutorials/video/wan/wan2-2-fun-camera",
         "RTX 4090D 24 GB; Wan 2.2 14B Fun Camera fp8_scaled, 640×640×81", "fits", "fp8_scaled: 84 % VRAM",
         lambda: windows("RTX 4090"), lambda: wan22_14b_fp8(640, 640, 81),
         number=("peak_gib", 0.84 * 23.99),
         note="Fun Camera priced as the I2V expert of the same size"),
    Case("wan22-5b-8gb-docs", "https://docs.comfy.org/tutorials/video/wan/wan2_2",
         "8 GB card; Wan 2.2 TI2V 5B fp16 + umT5 fp8, 1280×704×121", "runs_slower",
         "'should fit well on 8GB vram with the ComfyUI native offloading'",
         lambda: linux("RTX 4060"), lambda: wan22_5b(), note="the docs' claim, not a log; RTX 4060 8 GB assumed"),
    Case("wan22-t2v-5060ti-10771", "https://github.com/Comfy-Org/ComfyUI/issues/10771",
         "RTX 5060 Ti 16 GB, 31.7 GB RAM, Linux; official Wan 2.2 14B t2v template (fp8_scaled)", "oom",
         "'OOM trying to run official Wan 2.2 14B t2v template on hardware that should handle it'",
         lambda: linux("RTX 5060 Ti 16GB", ram_gib=31.7), lambda: wan22_14b_fp8(640, 640, 81),
         note="template size assumed 640×640×81; the failing stage is not in the report (RAM is a suspect)"),
    Case("hunyuan-960x544x129-4090-hyvw189", "https://github.com/kijai/ComfyUI-HunyuanVideoWrapper/issues/189",
         "RTX 4090 24 GB; HunyuanVideo 720 fp8, 960×544×129, native, no torch.compile", "oom",
         "'uses about ~22GB with torch.compile, without torch.compile it will oom, in both comfy native and this wrapper'",
         lambda: linux("RTX 4090"), lambda: hunyuan(), models=HUNYUAN, number=("peak_gib", 22e9 / GiB),
         note="the ~22 GB (read as decimal GB) is with torch.compile and fitted the HunyuanVideo factor; without "
              "it ComfyUI's eager code needs more than we model", fitted=True),
)


def wan22_fp16_templates(w=640, h=640, length=81) -> Workload:
    """The Wan 2.2 14B i2v template with the fp16 experts (umT5 fp8_scaled as the template has it)."""
    wl = wan22_workload(w=w, h=h, length=length, precision="fp16")
    te = (ModelRef("text_encoder", "umt5_xxl_fp8_e4m3fn_scaled.safetensors", "text_encoders", clip_type="wan"),)
    return Workload(stages=tuple(Stage(s.kind, s.node_id, s.node_type, models=te) if s.kind == TEXT_ENCODE else s
                                 for s in wl.stages))


def wan21_i2v_480p(w=832, h=480, length=81) -> Workload:
    """ComfyUI's native Wan 2.1 i2v workflow of early 2025: umT5 fp8_scaled, CLIP-vision H, the 480p
    i2v 14B fp16 model."""
    lat = LatentShape(1, 16, h // 8, w // 8, frames=(length - 1) // 4 + 1, pixel_width=w, pixel_height=h,
                      pixel_frames=length, temporal_compression=4)
    vae = (ModelRef("vae", "wan_2.1_vae.safetensors", "vae"),)
    return Workload(stages=(
        Stage(TEXT_ENCODE, "6", "CLIPTextEncode", models=(ModelRef("text_encoder", "umt5_xxl_fp8_e4m3fn_scaled.safetensors",
                                                                   "text_encoders", clip_type="wan"),)),
        Stage(CLIP_VISION_ENCODE, "51", "CLIPVisionEncode",
              models=(ModelRef("clip_vision", "clip_vision_h.safetensors", "clip_vision"),)),
        Stage(VAE_ENCODE, "50", "WanImageToVideo", models=vae, latent=lat),
        Stage(SAMPLE, "3", "KSampler", models=(ModelRef("diffusion", "wan2.1_i2v_480p_14B_fp16.safetensors",
                                                        "diffusion_models"),), latent=lat, cfg=6.0),
        Stage(VAE_DECODE, "8", "VAEDecode", models=vae, latent=lat),
    ))


# Published runs and out-of-memory reports that state the system RAM (docs/accuracy.md, "System RAM").
# "runs" agrees with fits, tight or runs_slower; "oom" with an out-of-memory verdict (RAM or VRAM).
# Leaks over repeated runs (RAM that grows run after run) are left out: a single run's peak is what we
# predict. Rules: the ComfyUI of the report's date (ram()).
HOST_CASES: tuple[Case, ...] = (
    Case("wan22-i2v-rx7900gre-32gb-12332", "https://github.com/Comfy-Org/ComfyUI/issues/12332",
         "RX 7900 GRE 16 GB, 32 GB RAM, Ubuntu 25.10, swap of unstated size; Wan 2.2 14B i2v template (fp8_scaled)",
         "oom", "'VRAM, RAM, and eventually SWAP get maxed out during low noise model loading until GNOME kills Comfy'",
         lambda: linux(card_for_vram(16, False), ram_gib=32, swap=4), lambda: template("video_wan2_2_14B_i2v"),
         note="swap size not stated: Ubuntu's default 4 GiB swap file assumed; AMD: classic memory management"),
    Case("wan22-4090-32gb-9484", "https://github.com/Comfy-Org/ComfyUI/issues/9484",
         "RTX 4090, 32 GB RAM, Linux; Wan 2.2 14B (templates' fp8_scaled assumed); default cache", "oom",
         "'System with RTX4090 and 32GB RAM crashes a lot without --cache-none'",
         lambda: linux("RTX 4090", ram_gib=32), lambda: template("video_wan2_2_14B_i2v"),
         note="the comment gives card and RAM only: the i2v template assumed, no swap"),
    Case("wan22-4090-32gb-cache-none-9484", "https://github.com/Comfy-Org/ComfyUI/issues/9484",
         "the same, launched with --cache-none", "runs", "'crashes a lot without --cache-none' (runs with it)",
         lambda: linux("RTX 4090", ram_gib=32, host_kw={"cache": "none"}), lambda: template("video_wan2_2_14B_i2v")),
    Case("wan22-2060-28gb-pf60-12451", "https://github.com/Comfy-Org/ComfyUI/issues/12451",
         "RTX 2060 6 GB, 27.9 GB RAM, 60 GB page file, Windows; Wan 2.2 14B, 480×720×81", "runs",
         "'RTX 2060 6GB, 27,9GB RAM … 60GB Page file … 480x720, 81 frames' (7-10 min a video)",
         lambda: windows(card_for_vram(6, False), ram_gib=27.9, swap=60), lambda: wan22_14b_fp8(480, 720, 81),
         note="'Q8 (15gb) or Safetensors (20gb)': the fp8_scaled experts assumed"),
    Case("wan22-5060ti-28gb-pf60-12451", "https://github.com/Comfy-Org/ComfyUI/issues/12451",
         "RTX 5060 Ti 16 GB, 27.9 GB RAM, 60 GB page file, Windows; the same workflow", "oom",
         "crashes 'while loading the second model'; 'The only way I can fix it is to use a 100GB page file'",
         lambda: windows("RTX 5060 Ti 16GB", ram_gib=27.9, swap=60), lambda: wan22_14b_fp8(480, 720, 81),
         note="the same files run on the 6 GB card: what the 16 GB card changes on the host is not modelled"),
    Case("flux-fp8-ckpt-3060-32gb-pf16-4258", "https://github.com/Comfy-Org/ComfyUI/issues/4258",
         "RTX 3060 12 GB, 32 GB RAM, 16 GB page file, Windows; flux1-dev-fp8 checkpoint (17 GB)", "oom",
         "'Checkpoint version (file flux1-dev-fp8.safetensors/17GB …) - exit w/o errors'",
         lambda: windows("RTX 3060", ram_gib=32, swap=16), lambda: template("flux_dev_checkpoint_example")),
    Case("flux-fp8-ckpt-3060-32gb-pf32-4258", "https://github.com/Comfy-Org/ComfyUI/issues/4258",
         "the same with a 32 GB page file", "runs", "'I increase swap to 32GB. Now checkpoint version works!'",
         lambda: windows("RTX 3060", ram_gib=32, swap=32), lambda: template("flux_dev_checkpoint_example")),
    Case("flux-fp16-2070s-32gb-pf32-gguf2", "https://github.com/city96/ComfyUI-GGUF/issues/2",
         "RTX 2070 SUPER 8 GB, 32 GB RAM + 32 GB page file, Windows; Flux dev fp16 + T5 fp16", "runs",
         "'8GB VRAM, 32GB RAM + 32GB swap file, I can run fp16 flux-dev + fp16 clip without any issues'",
         lambda: windows(card_for_vram(8, False), ram_gib=32, swap=32), lambda: flux_workload()),
    Case("flux-fp16-1070-32gb-4271", "https://github.com/Comfy-Org/ComfyUI/issues/4271",
         "GTX 1070 8 GB, 32 GB RAM, Windows; Flux dev fp16 model + T5 fp16, 1024²", "runs_slower",
         "'when changing the prompt I always run out of RAM (and need the page file)'",
         lambda: windows("GTX 1070", ram_gib=32), lambda: flux_workload(),
         note="runs_slower here: it runs, swapping"),
    Case("flux-fp16-3090-16gb-5360", "https://github.com/Comfy-Org/ComfyUI/issues/5360",
         "RTX 3090 24 GB, 16 GB RAM, Windows; the Flux dev example (flux1-dev + T5 fp16), 1024²", "oom",
         "'Error and termination of comfyui session' (total RAM 16296 MB in the log)",
         lambda: windows("RTX 3090", ram_gib=16), lambda: flux_workload(),
         note="the error itself is only in a screenshot; page file not stated (system-managed assumed)", fitted=True),
    Case("flux-fp8-4060laptop-16gb-4461", "https://github.com/Comfy-Org/ComfyUI/issues/4461",
         "RTX 4060 Laptop 8 GB, 16 GB RAM, Windows; Flux dev fp8, 1024²", "runs",
         "'with dev (20 steps) it can take more then 400 seconds per one image'",
         lambda: windows("RTX 4060 Laptop", ram_gib=16), lambda: flux_workload(**FP8_FILE), fitted=True),
    Case("flux-fp8-1070-32gb-ram-4318", "https://github.com/Comfy-Org/ComfyUI/issues/4318",
         "GTX 1070 8 GB, 32 GB RAM, Windows; Flux fp8", "runs", "'~20GB RAM after load'",
         lambda: windows("GTX 1070", ram_gib=32), lambda: flux_workload(**FP8_FILE), number=("ram_gib", 20.0),
         note="RAM in use read off Task Manager (GiB assumed); ours is the sampling stage's process memory"),
    Case("sdxl-refiner-3060-16gb-869", "https://github.com/Comfy-Org/ComfyUI/issues/869",
         "RTX 3060 12 GB, 16 GB RAM, Windows 10; SDXL base + refiner", "runs",
         "comfyanonymous: 'refiner + base takes maybe ~15GB ram together so it only works well on 16GB ram'",
         lambda: windows("RTX 3060", ram_gib=16), lambda: template("sdxl_refiner_prompt_example"),
         number=("ram_gib", 15.0), note="'~15GB' is the maintainer's round figure"),
    Case("wan21-i2v-480p-fp16-native-16gb-kj236", "https://github.com/kijai/ComfyUI-WanVideoWrapper/issues/236",
         "16 GB card, about 59 GB of RAM free (64 GB assumed), Windows; ComfyUI's native Wan 2.1 i2v 480p fp16 "
         "workflow (832×480×81 assumed)", "runs", "'native … ~35 GB RAM, 13.5 GB VRAM' (the wrapper with 20 blocks "
         "swapped: ~59 GB)", lambda: windows("RTX 4060 Ti 16GB", ram_gib=64), lambda: wan21_i2v_480p(),
         number=("ram_gib", 35.0), note="card, OS and frames not stated; the figure read off Task Manager"),
    Case("sdxl-8gb-ram-3060laptop-3566", "https://github.com/Comfy-Org/ComfyUI/issues/3566",
         "RTX 3060 Laptop 6 GB, 8 GB RAM, Windows; SDXL checkpoint", "oom",
         "ltdrdata: 'Your 8GB RAM is too small. Once the SDXL checkpoint is loaded …'",
         lambda: windows(card_for_vram(6, False), ram_gib=8), lambda: template("sdxl_simple_example"),
         note="the report adds an iterative upscale: the basic SDXL template is priced", fitted=True),
    Case("sdxl-wsl-7gb-12704", "https://github.com/Comfy-Org/ComfyUI/issues/12704",
         "8 GB card, WSL with 7.4 GB of RAM; the basic SDXL workflow", "oom", "the WSL process is killed",
         lambda: linux(card_for_vram(8), ram_gib=7.4, swap=1.85), lambda: template("sdxl_simple_example"),
         note="WSL's default swap: 25 % of its memory"),
    Case("hunyuan-t2v-3060-16gb-10700", "https://github.com/Comfy-Org/ComfyUI/issues/10700",
         "RTX 3060 12 GB, 16 GB RAM, Windows, ComfyUI 0.3.68; the HunyuanVideo t2v template", "oom",
         "the template fails on this machine", lambda: windows("RTX 3060", ram_gib=16),
         lambda: template("hunyuan_video_text_to_video"), note="the error is not quoted in the report", fitted=True),
    Case("wan22-fp16-5060-32gb-14089", "https://github.com/Comfy-Org/ComfyUI/pull/14089",
         "RTX 5060 8 GB, 32 GB RAM, Windows, Dynamic VRAM (May 2026); Wan 2.2 14B fp16 template", "runs",
         "maintainer's regression run: pass", lambda: windows(card_for_vram(8), ram_gib=32, rules="0.18", memory_mode="dynamic"),
         lambda: wan22_fp16_templates()),
    Case("wan22-fp8-5060-32gb-14089", "https://github.com/Comfy-Org/ComfyUI/pull/14089",
         "RTX 5060 8 GB, 32 GB RAM, Windows, Dynamic VRAM; Wan 2.2 14B fp8 template", "runs",
         "maintainer's regression run: pass", lambda: windows(card_for_vram(8), ram_gib=32, rules="0.18", memory_mode="dynamic"),
         lambda: template("video_wan2_2_14B_i2v")),
    Case("wan22-fp16-5090-64gb-14089", "https://github.com/Comfy-Org/ComfyUI/pull/14089",
         "RTX 5090 32 GB, 64 GB RAM, Linux, Dynamic VRAM; Wan 2.2 14B fp16 template", "runs",
         "maintainer's regression run: pass", lambda: linux("RTX 5090", ram_gib=64, rules="0.18", memory_mode="dynamic"),
         lambda: wan22_fp16_templates()),
    Case("sdxl-3060-48gb-16333", "https://github.com/Comfy-Org/ComfyUI/pull/16333",
         "RTX 3060 12 GB, 47.9 GB RAM, Windows, ComfyUI 0.3x (Sep 2026); SDXL 768², 10 steps", "runs",
         "maintainer's table: 'Exact' output", lambda: windows("RTX 3060", ram_gib=47.9, rules="0.33", memory_mode="dynamic"),
         lambda: template("sdxl_simple_example")),
)


@dataclass(frozen=True)
class Result:
    case: Case
    ours: str  # verdict (or "batch:N")
    agree: bool
    number_ours: float | None = None
    number_error: float | None = None  # relative (ours / published − 1)
    number_ok: bool | None = None
    detail: str = ""
    before: str = ""  # the verdict with system RAM ignored (as before host_memory.py)


def _number_ok(kind: str, err: float) -> bool:
    if kind == "peak_gib":
        return -0.05 <= err <= 0.10
    if kind == "ram_gib":  # RAM figures are read off Task Manager / htop, in round numbers
        return abs(err) <= 0.20
    return abs(err) <= 0.15


def evaluate(case: Case) -> Result:
    device, wl = case.device(), case.workload()
    if case.published.startswith("batch:"):
        cap = capacity.find(wl, device, "batch", first=assess(wl, device, models=case.models or None))
        n = cap.runs_value or 0
        pub = int(case.published.split(":")[1])
        err = n / pub - 1
        return Result(case, f"batch:{n}", abs(err) <= 0.15, n, err, abs(err) <= 0.15,
                      f"largest batch that runs {n} (resident {cap.resident_value})")
    budget = assess(wl, device, models=case.models or None)
    agree = budget.verdict in AGREE_OUTCOMES.get(case.published, set())
    before = budget.vram_verdict or budget.verdict
    if budget.host is not None and budget.host.host.known:
        host = budget.host
        if host.host.os == "windows":  # judged on the commit charge: process memory + copy-on-write file views
            need = max(r.committed_bytes + r.cow_bytes for r in host.runs)
            ram_text = (f"; RAM {host.outcome}: commit {need / GiB:.1f} GiB against {host.host.ram_total_bytes / GiB:.1f} "
                        f"RAM + {host.host.swap_bytes / GiB:.0f} page file")
        else:
            ram_text = (f"; RAM {host.outcome}: needs {host.peak_bytes / GiB:.1f} of {host.host.ram_total_bytes / GiB:.1f} GiB"
                        + (f" (+{host.host.swap_bytes / GiB:.0f} swap)" if host.host.swap_bytes else ""))
    else:
        ram_text = ""
    sample = next((r for r, s in zip(budget.runs, budget.stages) if s.stage.kind == SAMPLE), None)
    slow = f", ≈{sample.step_seconds:.1f} s/step" if sample is not None and sample.step_seconds else ""
    detail = f"{budget.verdict}: resident {sample.resident_bytes / MiB:,.0f} MiB, streamed {sample.streamed_bytes / MiB:,.0f} MiB{slow}" \
        if sample is not None else budget.verdict
    detail += ram_text
    if case.number is None:
        return Result(case, budget.verdict, agree, detail=detail, before=before)
    kind, pub = case.number
    if kind == "te_mib":
        te = next(r for r, s in zip(budget.runs, budget.stages) if s.stage.kind == TEXT_ENCODE)
        agree = te.outcome == "fits"
        ours = te.resident_bytes / MiB
        detail = f"text encoder {te.outcome}: resident {ours:,.0f} MiB"
    elif kind == "resident_mib":
        ours = sample.resident_bytes / MiB
    elif kind == "ram_gib":  # ComfyUI's process memory at its peak (what Task Manager shows for it): no OS, no others
        h = budget.host.host
        others = h.other_bytes if h.other_bytes is not None else OS_BYTES.get(h.os, OS_BYTES["linux"])
        ours = (max(r.committed_bytes for r in budget.host.runs) - others) / GiB
    else:  # peak_gib: the highest stage as ComfyUI runs it
        ours = max(r.peak_bytes for r in budget.runs) / GiB
    err = ours / pub - 1
    return Result(case, budget.verdict, agree, ours, err, _number_ok(kind, err), detail, before=before)


def summary(results) -> dict:
    outcome = [r for r in results]
    numbers = [r for r in results if r.number_ok is not None]
    independent = [r for r in results if not r.case.fitted]
    return {
        "cases": len(outcome), "outcomes_agree": sum(r.agree for r in outcome),
        "independent": len(independent), "independent_agree": sum(r.agree for r in independent),
        "numbers": len(numbers), "numbers_ok": sum(bool(r.number_ok) for r in numbers),
    }


def _row(r, ours: str, num: str) -> str:
    c = r.case
    src = f"[{c.id}]({c.source})" + (" *fitted*" if c.fitted else "")
    return (f"| {src} | {c.setup} | {c.published}: {c.evidence} | {ours} | "
            f"{'yes' if r.agree else '**no**'} | {num} | {c.note} |")


def markdown(results) -> str:
    """docs/accuracy.md, generated from the cases (bench/accuracy_table.py writes it)."""
    s = summary(results)
    lines = [
        "# The earlier rounds' table: published ComfyUI runs against our prediction",
        "",
        "From `tests/accuracy_cases.py`; `tests/test_accuracy.py` pins every row. Every thread of this table is in "
        "the calibration half of the evidence base above (`data/outcomes/prior_sources.txt`): earlier rounds "
        "fitted constants on it.",
        "",
        "Each row is one public report that states the card, the models and the settings, and what ComfyUI did. "
        "Our prediction is the verdict of `vram-budget estimate` on the same workload (fits / tight / runs_slower / "
        "oom; for a capacity case the largest batch that runs; a report that only says it ran agrees with fits or "
        "runs_slower). Numbers: resident MiB against a log's "
        "'loaded partially/completely … MB loaded' (±15 %), the highest stage peak against a published VRAM "
        "figure (−5 % / +10 %), batch capacity (±15 %). Rows marked *fitted* set one of our constants (the "
        "per-architecture activation calibration in `nodes/estimator/physics/memory.py`), so they are not an independent "
        "check.",
        "",
        f"**Outcomes agree: {s['outcomes_agree']} of {s['cases']}** ({100 * s['outcomes_agree'] / s['cases']:.0f} %); "
        f"independent rows {s['independent_agree']} of {s['independent']} "
        f"({100 * s['independent_agree'] / s['independent']:.0f} %). "
        f"**Numbers within tolerance: {s['numbers_ok']} of {s['numbers']}.**",
        "",
        "| case | published setup | published | ours | agree | number: published → ours | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.case
        num = ""
        if c.number is not None and r.number_ours is not None:
            kind, pub = c.number
            unit = {"resident_mib": "MiB resident", "te_mib": "MiB text encoder", "peak_gib": "GiB peak",
                    "max_batch": "batch"}[kind]
            fmt = "{:,.0f}" if kind != "peak_gib" else "{:.2f}"
            num = (f"{fmt.format(pub)} → {fmt.format(r.number_ours)} {unit} ({100 * r.number_error:+.1f} %, "
                   f"{'ok' if r.number_ok else 'outside'})")
        lines.append(_row(r, r.detail, num))
    lines += [
        "",
        "## Where we disagree, and why",
        "",
        "- **wan22-t2v-5060ti-10771** agrees since system RAM is in the verdict: with 31.7 GB of RAM, no swap, "
        "the high-noise expert goes back to RAM while the low-noise one is still there, beside the cached umT5 "
        "(see the System RAM section).",
        "- **hunyuan-960x544x129-4090-hyvw189**: ~22 GB with torch.compile, OOM without. The compiled figure now "
        "fits the compiled factor only (a workflow with TorchCompileModel, `COMPILED_CALIBRATION`); ComfyUI's eager "
        "code takes the eager factor of the nearest measured architecture (Flux, 1.75), which makes this *tight* "
        "(90 % of the card) and the OOM risk high: warned, though the verdict alone is not *oom*.",
        "- **Fun Control / Fun Camera peaks** (−9 % / −10 %): the docs' VRAM % is read off the whole card. "
        "No activation factor for Wan fits both it and kijai/ComfyUI-WanVideoWrapper#1713: 720p × 81 running "
        "natively on a 12 GB card bounds the factor at ≤ 1.80 (one cond's traced 6.18 GiB), while 83 % of a 4090D "
        "at 640×640×81 would need ≥ 1.88 (traced 2.76 GiB beside 13.3 GiB of weights). So the docs' figure "
        "holds about 0.3–1 GiB that is not ComfyUI's own peak (the Windows desktop, the allocator's cache); the "
        "control / camera inputs are not modelled either. Outcome agrees.",
        "- **Speed**: our step times are compute-bound estimates (datasheet FLOPs × 0.5). Published: RTX 3060 "
        "13 s/it at ~1 MP (ours 5.4 s), GTX 1070 30 s/it (ours 21 s), RTX 4060 Laptop > 20 s/it including "
        "model loads from 16 GB of RAM (ours 6 s). The slowdown factor is a ratio of two estimates on the same "
        "card and is less affected; absolute seconds are not a promise.",
        "",
        "## Not yet priced (the verdict says *can't tell*)",
        "",
        "Flux 2 OOM on an RTX 3090 (Comfy-Org/ComfyUI#10906), HunyuanVideo 1.5 VAE decode falling back to tiles "
        "on a 12 GB card (Comfy-Org/ComfyUI#10855), Flux 2 Klein on a 5090 (docs), LTX-2 on a 7900 XTX "
        "(Comfy-Org/ComfyUI#11949), HiDream E1 in fp16 running out of memory on an A100 40 GB and a 4090D "
        "(docs.comfy.org HiDream E1 tutorial): their model files are not in the catalogue and their families have no traced "
        "working memory, so the estimate names the missing models instead of guessing (issue #10 adds them).",
        "",
        "No GPU measurement backs these numbers yet: with the device lent, `max_memory_reserved` per workflow "
        "should replace the fitted calibration.",
    ]
    return "\n".join(lines) + "\n"


def host_summary(results) -> dict:
    """Published OOMs predicted as OOM and published runs predicted to run, now and with RAM ignored."""
    ooms = [r for r in results if r.case.published == "oom"]
    runs = [r for r in results if r.case.published in ("fits", "runs", "runs_slower")]
    # a case judged on its text-encode stage (te_mib) does not depend on the RAM: it agrees as it does
    before_ok = lambda r: r.agree if (r.case.number and r.case.number[0] == "te_mib") else (  # noqa: E731
        r.before in AGREE_OUTCOMES[r.case.published])
    return {
        "ooms": len(ooms), "ooms_predicted": sum(r.ours == "oom" for r in ooms),
        "ooms_predicted_before": sum(r.before == "oom" for r in ooms),
        "runs": len(runs), "runs_agree": sum(r.agree for r in runs),
        "runs_agree_before": sum(before_ok(r) for r in runs),
        "ram_numbers": sum(1 for r in results if r.case.number and r.case.number[0] == "ram_gib"),
        "ram_numbers_ok": sum(1 for r in results if r.case.number and r.case.number[0] == "ram_gib" and r.number_ok),
    }


def host_markdown(results, all_results) -> str:
    """The System RAM section of docs/accuracy.md: the host cases, then the totals over every case."""
    s = host_summary(all_results)
    lines = [
        "",
        "## System RAM (host memory)",
        "",
        "Published runs and out-of-memory reports that state the machine's RAM (and page file / swap where "
        "given), against the verdict with system RAM in it (`--ram` / `--swap`, `nodes/estimator/machine/host_memory.py`) "
        "and the verdict with RAM ignored, as before it was modelled. A report that only says it ran agrees with "
        "fits, tight or runs_slower (swapping is *runs_slower*); an OOM report agrees with an out-of-memory verdict. "
        "RAM figures (what Task Manager / htop show for ComfyUI) are compared with ComfyUI's process memory at "
        "its peak, the OS and other programs not counted (±20 %). "
        "Rows marked *fitted* set the one host constant fitted on published runs: the Windows page file assumed "
        "when none is given (1.5 × RAM). Reports of RAM that grows over repeated runs (leaks) are left out: a "
        "single run's peak is what we predict.",
        "",
        f"**Over all cases (this table and the ones above): published OOMs predicted as OOM {s['ooms_predicted']} of "
        f"{s['ooms']} (RAM ignored: {s['ooms_predicted_before']} of {s['ooms']}); published runs predicted to run "
        f"{s['runs_agree']} of {s['runs']} (RAM ignored: {s['runs_agree_before']} of {s['runs']}). "
        f"RAM figures within tolerance: {s['ram_numbers_ok']} of {s['ram_numbers']}.**",
        "",
        "| case | published setup | published | ours (RAM ignored → with RAM) | agree | number: published → ours | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.case
        num = ""
        if c.number is not None and r.number_ours is not None:
            num = (f"{c.number[1]:.1f} → {r.number_ours:.1f} GiB RAM ({100 * r.number_error:+.1f} %, "
                   f"{'ok' if r.number_ok else 'outside'})")
        lines.append(_row(r, f"{r.before} → {r.detail}", num))
    lines += [
        "",
        "### Where we disagree, and why",
        "",
        "- **wan22-i2v-rx7900gre-32gb-12332**: 35.5 GiB needed against 32 GiB of RAM and a swap of unstated "
        "size (4 GiB assumed): we say it swaps, right at the edge; the reporter says the bare template "
        "sometimes ran. A 2 GiB swap file would make it an OOM.",
        "- **wan22-5060ti-28gb-pf60-12451**: the same workflow ran on the same machine with a 6 GB card and "
        "failed with a 16 GB one until the page file was 100 GB. The 16 GB card keeps more of each expert "
        "resident, which needs less RAM in our model, not more: what the driver or the pinned staging "
        "buffers charge to the Windows commit limit for a larger card is not modelled.",
        "- **hunyuan-960x544x129-4090-hyvw189** (table above): a VRAM case.",
        "",
        "The rules each figure follows, with ComfyUI's file and line, are in `docs/host-memory.md`.",
    ]
    return "\n".join(lines) + "\n"


def engines_markdown() -> str:
    """The pointer of docs/accuracy.md to the LLM serving and training tables (their own docs, generated and
    pinned by tests/test_llm_accuracy.py and tests/test_training_accuracy.py); the case counts are the files'."""
    import llm_accuracy_cases as L  # noqa: PLC0415  (tests/ on sys.path)
    import training_accuracy_cases as T  # noqa: PLC0415

    by_engine: dict[str, int] = {}
    for case in L.CASES:
        engine = str(getattr(case, "engine", "") or (case.get("engine") if isinstance(case, dict) else "") or "other")
        by_engine[engine] = by_engine.get(engine, 0) + 1
    engines = ", ".join(f"{n} {e}" for e, n in sorted(by_engine.items()))
    return "\n".join([
        "",
        "## LLM serving and training",
        "",
        f"`vram-budget llm` against {len(L.CASES)} published engine figures ({engines}): "
        "[accuracy-llm.md](accuracy-llm.md). `vram-budget train` against "
        f"{len(T.CASES)} published training peaks: [accuracy-training.md](accuracy-training.md). Each table gives "
        "the source, the published figure, ours and the error; the tests pin every case and the pass rate.",
        "",
    ])
