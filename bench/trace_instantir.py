"""Count and trace smthemex/ComfyUI_InstantIR_Wrapper's networks with the pack's own code (families/instantir.py).

    python bench/trace_instantir.py PATH_TO_A_CHECKOUT_OF_ComfyUI_InstantIR_Wrapper [WIDTH [HEIGHT]]

Needs a python with torch, diffusers (0.31), transformers and peft; no GPU, no weights, no ComfyUI (the pack's
folder is imported as a package of its own). Builds the SDXL UNet from config_files/sdxl_repo/unet as the pipeline
does (the aggregator copied from it with remove_attn2, the IP attention processors and the DINOv2 resampler of
load_adapter_to_pipe, the previewer and LCM LoRAs of prepare_previewers) on the meta device in float16, and runs one
denoising step at the CFG batch of 2 under a TorchDispatchMode that sums the live tensors' storage (weights excluded):
the previewer's UNet pass, then the aggregator and the UNet with its residuals. SDPA is an op that allocates its
output only, as the fused kernels do. Then the VAE (config_files/sdxl_repo/vae) encode and decode in float32 (the
pipeline upcasts it: force_upcast). Prints JSON lines."""
import importlib
import json
import os
import sys
import types

root = sys.argv[1]
W = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
H = int(sys.argv[3]) if len(sys.argv) > 3 else W
import torch
torch.set_default_device("meta")
torch.set_default_dtype(torch.float16)
import torch.nn.functional as F
def output_only(q, k, v, *a, **kw):
    return torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)
F.scaled_dot_product_attention = output_only
pkg = types.ModuleType("iirsrc"); pkg.__path__ = [root]; sys.modules["iirsrc"] = pkg
from diffusers import UNet2DConditionModel
cfg = UNet2DConditionModel.load_config(os.path.join(root, "config_files", "sdxl_repo", "unet"))
unet = UNet2DConditionModel.from_config(cfg)
pipe = importlib.import_module("iirsrc.pipelines.sdxl_instantir")
aggregator = pipe.Aggregator.from_unet(unet); pipe.remove_attn2(aggregator)
ipu = importlib.import_module("iirsrc.module.ip_adapter.utils")
unet.set_attn_processor(ipu.init_attn_proc(unet, 64, False, True))
resampler = ipu.Resampler(embedding_dim=1024, output_dim=2048, num_queries=64)  # DINOv2-large's width -> SDXL's
unet.encoder_hid_proj = ipu.MultiIPAdapterImageProjection([resampler])
unet.config.encoder_hid_dim_type = "ip_image_proj"
from peft import LoraConfig
def count(m):
    return sum(p.numel() for p in m.parameters())


with_adapters = count(unet)
unet.add_adapter(LoraConfig(r=64, target_modules=pipe.PREVIEWER_LORA_MODULES, lora_alpha=64, lora_dropout=0.0),
                 "previewer")
unet.add_adapter(LoraConfig(r=64, target_modules=pipe.LCM_LORA_MODULES, lora_alpha=64, lora_dropout=0.0), "lcm")
unet.set_adapter("previewer")
print(json.dumps({"unet_with_adapters_and_loras": count(unet), "loras": count(unet) - with_adapters,
                  "aggregator": count(aggregator)}))
from _live_tensors import LiveTensors as Track  # noqa: E402  (bench/ is the script's folder)
h, w = H // 8, W // 8
B = 2  # cond + uncond
with torch.no_grad():
    lat = torch.zeros(B, 4, h, w); t = torch.tensor(500.0)
    prompt = torch.zeros(B, 77, 2048); text = torch.zeros(B, 1280); time_ids = torch.zeros(B, 6)
    image_embeds = [torch.zeros(B, 1, 257, 1024)]  # DINOv2-large's penultimate hidden states at 224 px
    added = {"text_embeds": text, "time_ids": time_ids, "image_embeds": image_embeds}
    emb = unet.time_embedding(unet.get_time_embed(sample=lat, timestep=t), None)
    emb = emb + unet.get_aug_embed(emb=emb, encoder_hidden_states=prompt, added_cond_kwargs=added)
    kw = {"temb": emb}
    out = {"width": W, "height": H}
    with Track() as tr:
        unet.enable_adapters()
        unet(lat, t, encoder_hidden_states=prompt, cross_attention_kwargs=kw, added_cond_kwargs=added, return_dict=False)
        unet.disable_adapters()
    out["previewer_unet_bytes"] = tr.peak
    with Track() as tr:
        down, mid = aggregator(lat, t, encoder_hidden_states=prompt, controlnet_cond=lat,
                               added_cond_kwargs={"text_embeds": text, "time_ids": time_ids}, return_dict=False)
        agg_peak = tr.peak
        down = [d * 1.0 for d in down]; mid = mid * 1.0
        held = tr.current
        unet(lat, t, encoder_hidden_states=prompt, cross_attention_kwargs=kw, down_block_additional_residuals=down,
             mid_block_additional_residual=mid, added_cond_kwargs=added, return_dict=False)
    out["aggregator_bytes"] = agg_peak; out["residuals_bytes"] = held; out["aggregator_and_unet_bytes"] = tr.peak
    print(json.dumps(out))
from diffusers import AutoencoderKL
torch.set_default_dtype(torch.float32)
vae = AutoencoderKL.from_config(AutoencoderKL.load_config(os.path.join(root, "config_files", "sdxl_repo", "vae")))
with torch.no_grad():
    with Track() as tr:
        vae.encode(torch.zeros(1, 3, H, W))
    enc = tr.peak
    with Track() as tr:
        vae.decode(torch.zeros(1, 4, h, w))
    print(json.dumps({"vae_fp32_params": sum(p.numel() for p in vae.parameters()), "vae_encode_fp32_bytes": enc,
                      "vae_decode_fp32_bytes": tr.peak}))
