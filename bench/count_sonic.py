"""Count smthemex/ComfyUI_Sonic's networks with the pack's own classes on the meta device (families/sonic.py).

    python bench/count_sonic.py PATH_TO_A_CHECKOUT_OF_ComfyUI_Sonic

Needs a python with torch, diffusers and transformers (no GPU, no weights, no ComfyUI: the pack's src/ is imported as
a package of its own). Prints the UNet as convert_cf2diffuser builds it from svd_repo/unet, the same after
add_ip_adapters(unet, [32], ...) (sonic.py Sonic.__init__), audio2token / audio2bucket at sonic_node.py's arguments,
RIFE's IFNet and whisper-tiny's WhisperModel (openai/whisper-tiny's configuration)."""
import sys, os, types
root = sys.argv[1]  # a checkout of smthemex/ComfyUI_Sonic
import torch
torch.set_default_device("meta")
# import src/models/base as a package of its own (the pack's __init__ needs ComfyUI)
pkg = types.ModuleType("sonicsrc"); pkg.__path__ = [os.path.join(root, "src")]
sys.modules["sonicsrc"] = pkg
import importlib
m = importlib.import_module("sonicsrc.models.base.unet_spatio_temporal_condition")
cfg = m.UNetSpatioTemporalConditionModel.load_config(os.path.join(root, "svd_repo", "unet"))
unet = m.UNetSpatioTemporalConditionModel.from_config(cfg)
base = sum(p.numel() for p in unet.parameters())
m.add_ip_adapters(unet, [32], [1.0])
total = sum(p.numel() for p in unet.parameters())
print("unet", base, "with audio adapters", total, "adapters", total - base)
ap = importlib.import_module("sonicsrc.models.audio_adapter.audio_proj")
ab = importlib.import_module("sonicsrc.models.audio_adapter.audio_to_bucket")
a2t = ap.AudioProjModel(seq_len=10, blocks=5, channels=384, intermediate_dim=1024, output_dim=1024, context_tokens=32)
a2b = ab.Audio2bucketModel(seq_len=50, blocks=1, channels=384, clip_channels=1024, intermediate_dim=1024, output_dim=1,
                           context_tokens=2)
print("audio2token", sum(p.numel() for p in a2t.parameters()), "audio2bucket", sum(p.numel() for p in a2b.parameters()))
ifnet = importlib.import_module("sonicsrc.utils.RIFE.IFNet_HDv3")
print("rife ifnet", sum(p.numel() for p in ifnet.IFNet().parameters()))
from transformers import WhisperConfig, WhisperModel
w = WhisperModel(WhisperConfig(vocab_size=51865, num_mel_bins=80, d_model=384, encoder_layers=4, decoder_layers=4,
                               encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=1536,
                               decoder_ffn_dim=1536, max_source_positions=1500, max_target_positions=448))
print("whisper-tiny", sum(p.numel() for p in w.parameters()), "encoder", sum(p.numel() for p in w.encoder.parameters()))
