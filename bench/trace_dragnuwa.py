"""Trace chaojie/ComfyUI-DragNUWA's own model code at a node's shapes: parameters and the bytes of live tensors.

    python bench/trace_dragnuwa.py --root DIR [--size 576x320] [--json]

DIR holds ``custom_nodes/ComfyUI-DragNUWA`` (a checkout; DragNUWA_net.py imports itself by that dotted path). Needs a
python with torch, open_clip_torch and einops; no GPU and no weights: DragNUWA_net.Net(args) is built on the meta
device (open_clip without its pretrained download; pytorch_lightning, transformers and matplotlib stubbed, as the
inference path does not use them), then one denoiser call (the CFG batch: 2 x 14 frames, nodes.py Drag.forward_sample),
the first-stage decode of one frame (en_and_decode_n_samples_a_time = 1) and the conditioner's VAE encode run under a
TorchDispatchMode that sums the storage of every tensor alive (weights excluded: they exist before the call). Attention
is xformers' memory-efficient kernel in the pack (attention.py / video_attention.py have no other path for the
temporal blocks), replaced here by an op that allocates only its output, as that kernel does. Numbers: float32, as
the pack runs (the Net is never halved, utils.py copies the file into its fp32 tensors)."""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import types


def _stub(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def _setup(root: str):
    sys.path[:0] = [root, f"{root}/custom_nodes/ComfyUI-DragNUWA"]
    import torch  # noqa: PLC0415
    from torch import nn  # noqa: PLC0415

    class _Any:
        def __init__(self, *a, **k):
            pass

    _stub("pytorch_lightning", LightningModule=nn.Module)
    _stub("transformers", **{k: _Any for k in ("ByT5Tokenizer", "CLIPTextModel", "CLIPTokenizer", "T5EncoderModel",
                                               "T5Tokenizer")})
    mpl = _stub("matplotlib", colormaps={})
    mpl.pyplot = _stub("matplotlib.pyplot")
    for name in ("requests", "yaml"):
        try:
            importlib.import_module(name)
        except ImportError:
            _stub(name)
    import open_clip  # noqa: PLC0415
    create = open_clip.create_model
    open_clip.create_model = lambda name, pretrained=None, device=None, **kw: create(name, pretrained=None, **kw)
    open_clip.create_model_and_transforms = lambda arch, device=None, pretrained=None, **kw: (
        create(arch, pretrained=None), None, None)

    def output_only(q, k, v, *a, **kw):  # memory-efficient attention: only its output is allocated
        return torch.empty(q.shape[:-1] + (v.shape[-1],), dtype=q.dtype, device=q.device)

    ops = _stub("xformers.ops", memory_efficient_attention=output_only)
    _stub("xformers", __version__="0.0.28", ops=ops)
    torch.nn.functional.scaled_dot_product_attention = output_only
    torch.set_default_device("meta")
    nn.Module.to = lambda self, *a, **k: self
    return torch, importlib.import_module("custom_nodes.ComfyUI-DragNUWA.DragNUWA_net")


def trace(root: str, width: int, height: int) -> dict:
    torch, net_module = _setup(root)
    net = net_module.Net(net_module.args)
    net.eval()
    for module in net.modules():  # tensors made on the CPU despite the default device (buffers built from numpy)
        for name, p in list(module._parameters.items()):
            if p is not None and p.device.type != "meta":
                module._parameters[name] = torch.nn.Parameter(torch.empty(p.shape, dtype=p.dtype), requires_grad=False)
        for name, b in list(module._buffers.items()):
            if b is not None and b.device.type != "meta":
                module._buffers[name] = torch.empty(b.shape, dtype=b.dtype)
    from _live_tensors import LiveTensors as track  # noqa: PLC0415  (bench/: the script's folder)
    frames = net.num_frames
    out = {"params": sum(p.numel() for p in net.parameters()), "frames": frames, "width": width, "height": height}
    with torch.no_grad():
        drag = torch.zeros(1, frames - 1, height, width, 2)
        with track() as t:
            flow = net.apply_gaussian_filter_on_drag(drag)
            flow = torch.cat([torch.zeros_like(flow[:, 0]).unsqueeze(1), flow], dim=1)
            flow = flow.permute(0, 1, 4, 2, 3).repeat(2, 1, 1, 1, 1)  # b l h w c -> b l c h w, c and uc
        out["flow_bytes"] = t.peak
        x = torch.zeros(2 * frames, 4, height // 8, width // 8)
        cond = {"crossattn": torch.zeros(2 * frames, 1, 1024), "vector": torch.zeros(2 * frames, 768),
                "concat": torch.zeros(2 * frames, 4, height // 8, width // 8)}
        with track() as t:
            net.denoiser(net.model, x, torch.ones(2 * frames), cond, image_only_indicator=torch.zeros(2, frames),
                         num_video_frames=frames, flow=flow)
        out["unet_call_bytes"] = t.peak
        with track() as t:
            net.first_stage_model.decode(torch.zeros(1, 4, height // 8, width // 8), timesteps=1)
        out["decode_one_frame_bytes"] = t.peak
        with track() as t:
            net.conditioner.embedders[3](torch.zeros(1, 3, height, width))
        out["cond_encode_bytes"] = t.peak
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--size", default="576x320", help="WxH, one of the loader's dimensions")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    result = trace(args.root, width, height)
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v:,}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
