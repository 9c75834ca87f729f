#!/usr/bin/env python3
"""Trace ComfyUI 0.33.0's image-utility models (RT-DETR v4, BiRefNet, FILM / RIFE frame interpolation) with
ComfyUI's own model code, without a GPU, as their nodes run them.

Run with ComfyUI 0.33.0's interpreter, one process, one thread:

    COMFYUI_PATH=.../ComfyUI-0.33 OMP_NUM_THREADS=1 .../bin/python bench/trace_vision.py [CASE ...]

Every model is built at FULL size inside FakeTensorMode on a fake cuda device under torch.inference_mode, with
bench/trace_working_memory.py's live-storage tracker (parameters and buffers excluded; the machinery is that
module's, and trace_sam3.eager_upsample's F.interpolate as the eager CUDA kernel runs it). This file only says which
forward runs at which shapes, line by line with the nodes' own variable lifetimes:

- ``rtdetr*B``: RTDETR_detect (comfy_extras/nodes_rtdetr.py:31-40) on one batch of B images (the node runs batches of
  up to 32, :37). The published rt_detr_v4-x-hgnet file: model_detection.py:1017-1021 reads enc_h from
  ``encoder.pan_blocks.1.cv4.conv.weight`` (384 for the X model: 61,782,744 parameters + 136,155 buffer values,
  x 4 bytes = the published fp32 file's 236.3 MiB) -> supported_models.RT_DETR_v4 (:2284-2296) ->
  model_base.RT_DETR_v4 (:2769-2771) -> comfy/ldm/rt_detr/rtdetr_v4.py RTv4, fp16 (the file's dtype, the first of
  supported_inference_dtypes). The 640 x 640 resize runs on the CPU (:38, the image is on the intermediate device);
  RTv4.forward (:723-725) moves the batch to the GPU as fp16, runs backbone -> encoder -> decoder and postprocess.
- ``birefnet@WxH[*B]``: RemoveBackground (comfy_extras/nodes_bg_removal.py:47-49) -> BackgroundRemovalModel.
  encode_image (comfy/bg_removal_model.py:43-58) for B images of W x H: the batch moved to the GPU (float32, :45),
  clip_preprocess to 1024 x 1024 (:45, comfy/clip_model.py:6-23, crop=False), one image at a time through
  BiRefNet (:47-51; comfy/background_removal/birefnet.py:528-571, weights fp16 = text_encoder_dtype,
  model_management.py:1217-1232, activations float32: manual_cast ops cast the weights to the float32 input), the
  cat, the bicubic resize back to H x W (:54) and the sigmoid (:56).
- ``film@WxH[*P][:M]`` / ``rife@WxH[*P][:M]``: FrameInterpolate (comfy_extras/nodes_frame_interpolation.py:
  94-187) for P frame pairs (default 2: the second pair runs with the first pair's ``mids`` and cached features
  still referenced) at multiplier M (default 2): frames moved to the GPU as fp16 (:109-113, model dtype fp16 from
  should_use_fp16, :39), padded to 64 for RIFE (pad_align, ifnet.py:71), the feature cache (:144-146), FILM's
  forward_multi_timestep (:150-158, film_net.py:232-261) / RIFE's batched forward (:162-176, ifnet.py:98-120), and
  each result converted to the intermediate dtype (float32) on the GPU before it is copied into the CPU result
  (:155 / :169). FILMNet() at its defaults (the published film_net_fp16 file); IFNet at its defaults
  (head_ch 4, channels 192/128/96/64/32: the RIFE 4.25 / 4.26 files, detect_rife_config ifnet.py:122-131).

- ``lama`` / ``mat``: Acly/comfyui-inpaint-nodes' INPAINT_InpaintWithModel (nodes.py at b32f293, :540-590) on one
  image: resize_square (util.py:61-80) pads and resizes it ON THE CPU to the model's square (LaMa 256, MAT 512), the
  image and its mask are moved to the GPU (float32, the model's dtype: the loaders build float32 modules and copy
  the file's weights into them) and run through the model; the result goes back to the CPU (:573-575). LaMa is
  spandrel's (LaMa(in_nc=4, out_nc=3), what spandrel's LaMaArch.load builds for big-lama, called through its
  MaskedImageModelDescriptor as the node does); MAT is the pack's own mat/arch/MAT.py (MAT(), built at 512 as its
  mat.load does), read from a checkout named by INPAINT_NODES_PATH (the folder holding ``mat/``).

Prints one JSON line per case: peak bytes (inputs included), input bytes, the op and module at the peak, seconds.
- ``sam1-vit_b`` / ``sam1-vit_l`` / ``sam1-vit_h``: the original Segment Anything (facebookresearch/segment-anything,
  read from a checkout named by SAM1_PATH) as Impact Pack's SAM detailer option runs it: case_sam1.
- ``midas@WxH``: comfyui_controlnet_aux's MiDaS preprocessors (DPT-Hybrid from transformers, the interpreter's own
  transformers package) on one image whose detect map is W x H: case_midas.
- ``zoe@WxH``: its Zoe preprocessors (ZoeDepth NK from transformers) on a W x H model input: case_zoe.
- ``vitmatte-small@WxH`` / ``vitmatte-base@WxH``: ComfyUI_LayerStyle(_Advance)'s ViTMatte edge refinement
  (transformers' VitMatteForImageMatting) on a W x H padded input: case_vitmatte (families/vitmatte.py).

With no CASE: DEFAULT_CASES (the points of families/vision_utils.py's tables).
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_sam3  # noqa: E402
import trace_working_memory as twm  # noqa: E402

# F.interpolate as eager CUDA runs it (trace_sam3.eager_upsample), here also the bicubic kernels clip_preprocess and
# the BiRefNet mask resize use
UPSAMPLE_OPS = trace_sam3._UPSAMPLE_VEC + ("upsample_bicubic2d", "_upsample_bicubic2d_aa")

RTDETR_ENC_H = 384  # rt_detr_v4-x-hgnet: encoder.pan_blocks.1.cv4.conv.weight.shape[0] (model_detection.py:1020)
RTDETR_SIDE = 640  # nodes_rtdetr.py:38
BIREFNET_SIZE = 1024  # comfy/background_removal/birefnet.json image_size


def _gpu_only_tracker_cls():
    """trace_working_memory's live-storage tracker counting GPU storages only: these nodes keep their input images
    and results on the CPU (the intermediate device) and move frames to the GPU themselves, so host tensors are
    part of the traced sequence but not of the GPU peak."""
    base = _ORIG_TRACKER()

    class GpuOnly(base):
        def _track(self, t, func_name):
            if t.device.type == "cuda":
                super()._track(t, func_name)
    return GpuOnly


_ORIG_TRACKER = twm._make_tracker_cls
twm._make_tracker_cls = _gpu_only_tracker_cls


def _cuda():
    import torch
    return torch.device("cuda")


def build_rtdetr():
    twm._BUILD["weight_dtype"] = "float16"
    model = twm._dit_model({"image_model": "RT_DETR_v4", "enc_h": RTDETR_ENC_H}, "RT_DETR_v4")
    model.diffusion_model.load_device = _cuda()  # model_management.get_torch_device() on a GPU machine
    # DFINETransformer's ``up`` / ``reg_scale`` (rtdetr_v4.py:609-610) are made without a device: the model's move to
    # the GPU at load time takes them along; here the same move (one shared Parameter stays shared)
    import torch
    moved = {}
    for mod in model.diffusion_model.modules():
        for k, p in list(mod._parameters.items()):
            if p is not None and p.device.type != "cuda":
                if id(p) not in moved:
                    moved[id(p)] = torch.nn.Parameter(p.to(_cuda()), requires_grad=False)
                mod._parameters[k] = moved[id(p)]
    return model


def case_rtdetr(batch: int):
    def make_inputs(model):
        import torch
        # RTv4.forward's x.to(device, dtype=fp16) of the CPU-resized batch (nodes_rtdetr.py:38-39)
        return (torch.empty(batch, 3, RTDETR_SIDE, RTDETR_SIDE, dtype=torch.float16, device="cuda"),)

    def call(model, x):
        return model.diffusion_model(x, (1920, 1080))  # orig_size only scales the boxes
    return build_rtdetr, make_inputs, call


def build_birefnet():
    import torch
    import comfy.ops
    from comfy.background_removal.birefnet import BiRefNet
    return BiRefNet({}, dtype=torch.float16, device=_cuda(), operations=comfy.ops.manual_cast).eval()  # :32


def case_birefnet(width: int, height: int, batch: int = 1):
    def make_inputs(model):
        import torch
        return (torch.empty(batch, height, width, 3, dtype=torch.float32, device="cpu"),)

    def call(model, image):
        import torch
        import comfy.clip_model
        H, W = image.shape[1], image.shape[2]  # bg_removal_model.py:44
        pixel_values = comfy.clip_model.clip_preprocess(image.to("cuda"), size=BIREFNET_SIZE, mean=[0.0, 0.0, 0.0],
                                                        std=[1.0, 1.0, 1.0], crop=False)  # :45
        if pixel_values.shape[0] > 1:  # :47-51
            out = torch.cat([model(pixel_values=pixel_values[i:i + 1]) for i in range(pixel_values.shape[0])], dim=0)
        else:
            out = model(pixel_values=pixel_values)
        out = torch.nn.functional.interpolate(out, size=(H, W), mode="bicubic", antialias=False)  # :54
        mask = out.sigmoid().to(device="cpu", dtype=torch.float32)  # :56 (intermediate device / dtype)
        return mask.squeeze(1)  # (the CPU mask is host memory, not counted)
    return build_birefnet, make_inputs, call


def build_film():
    import torch
    from comfy_extras.frame_interpolation_models.film_net import FILMNet
    return FILMNet(device=_cuda(), dtype=torch.float16).eval()


def build_rife():
    import torch
    from comfy_extras.frame_interpolation_models.ifnet import IFNet
    return IFNet(device=_cuda(), dtype=torch.float16).eval()


def case_interp(kind: str, width: int, height: int, pairs: int = 2, multiplier: int = 2):
    """FrameInterpolate.execute's GPU work (nodes_frame_interpolation.py:94-187) for ``pairs`` pairs; the CPU result
    buffer (:127) is not GPU memory and is left out (only the GPU conversions that feed it are traced)."""
    def make_inputs(model):
        import torch
        return (torch.empty(pairs + 1, height, width, 3, dtype=torch.float32, device="cpu"),)

    def call(inference_model, images):
        import torch
        dtype, device = torch.float16, "cuda"
        align = getattr(inference_model, "pad_align", 1)
        H, W = images.shape[1], images.shape[2]

        def prepare_frame(idx):  # :109-114
            frame = images[idx:idx + 1].movedim(-1, 1).to(dtype=dtype, device=device)
            if align > 1:
                from comfy.ldm.common_dit import pad_to_patch_size
                frame = pad_to_patch_size(frame, (align, align), padding_mode="reflect")
            return frame

        num_interp = multiplier - 1
        t_values = [t / multiplier for t in range(1, multiplier)]
        sample = prepare_frame(0)  # :131-135
        pH, pW = sample.shape[2], sample.shape[3]
        ts_full = torch.tensor(t_values, device=device, dtype=dtype).reshape(num_interp, 1, 1, 1)
        ts_full = ts_full.expand(-1, 1, pH, pW)
        del sample
        multi_fn = getattr(inference_model, "forward_multi_timestep", None)
        feat_cache = {}
        prev_frame = None
        kept = []
        for i in range(pairs):  # :141-183
            img0_single = prev_frame if prev_frame is not None else prepare_frame(i)
            img1_single = prepare_frame(i + 1)
            prev_frame = img1_single
            feat_cache["img0"] = (feat_cache.pop("next") if "next" in feat_cache
                                  else inference_model.extract_features(img0_single))
            feat_cache["img1"] = inference_model.extract_features(img1_single)
            feat_cache["next"] = feat_cache["img1"]
            if multi_fn is not None:
                mids = multi_fn(img0_single, img1_single, t_values, cache=feat_cache)
                kept = [mids[:, :, :H, :W].to(torch.float32)]  # :155, then copied to the CPU result
            else:
                b = num_interp
                img0 = img0_single.expand(b, -1, -1, -1)
                img1 = img1_single.expand(b, -1, -1, -1)
                mids = inference_model(img0, img1, timestep=ts_full[0:b], cache=feat_cache)
                kept = [mids[:, :, :H, :W].to(torch.float32)]  # :169
            kept.clear()  # the float32 copy is a temporary of the assignment
        return mids
    return (build_film if kind == "film" else build_rife), make_inputs, call


LAMA_SIZE, MAT_SIZE = 256, 512  # nodes.py InpaintWithModel.execute: required_size


def _moved_to_cuda(model):
    """``model.to(device)`` (nodes.py:563) without nn.Module._apply, which cannot swap fake parameters: every parameter
    and buffer not yet on the GPU is replaced by its GPU copy (a shared one stays shared)."""
    import torch
    moved = {}
    for mod in model.modules():
        for store, wrap in ((mod._parameters, lambda t: torch.nn.Parameter(t, requires_grad=False)),
                            (mod._buffers, lambda t: t)):
            for k, t in list(store.items()):
                if t is not None and t.device.type != "cuda":
                    if id(t) not in moved:
                        moved[id(t)] = wrap(t.to(_cuda()))
                    store[k] = moved[id(t)]
    return model


def build_lama():
    import torch
    from spandrel.architectures.LaMa import LaMa
    with torch.device(_cuda()):  # inpaint_model.to(device) (nodes.py:563): every parameter and buffer on the GPU
        return LaMa(in_nc=4, out_nc=3).eval()


def build_mat():
    path = os.environ.get("INPAINT_NODES_PATH")
    if not path or not os.path.isdir(os.path.join(path, "mat")):
        raise SystemExit("set INPAINT_NODES_PATH to a checkout of Acly/comfyui-inpaint-nodes (the folder with mat/)")
    if path not in sys.path:
        sys.path.insert(0, path)
    import numpy as np
    import torch
    from mat.arch.MAT import MAT

    def np_linspace(start, end, steps, **_):
        # the stochastic-depth rates (MAT.py:1331 ``[x.item() for x in torch.linspace(0, drop_path_rate, ...)]``): a
        # fake tensor has no value to .item(); the same numbers from NumPy (drop path is off in eval)
        return np.linspace(float(start), float(end), int(steps))
    saved = torch.linspace
    torch.linspace = np_linspace  # during construction only
    try:
        with torch.device(_cuda()):
            return _moved_to_cuda(MAT().eval())  # setup_filter makes its filters on the CPU (utils.py)
    finally:
        torch.linspace = saved


def case_inpaint(kind: str):
    size = LAMA_SIZE if kind == "lama" else MAT_SIZE

    def make_inputs(model):
        import torch
        # work_image.to(device), work_mask.to(device) after resize_square on the CPU (nodes.py:566-571)
        return (torch.empty(1, 3, size, size, dtype=torch.float32, device="cuda"),
                torch.empty(1, 1, size, size, dtype=torch.float32, device="cuda"))

    def call(model, image, mask):
        if kind == "lama":
            # spandrel's MaskedImageModelDescriptor.__call__ (model_descriptor.py:530-580): no padding at 256 (its
            # size requirement is a multiple of 8), the model, then an in-place clamp_
            return model(image, mask).clamp_(0, 1)
        return model(image, mask)
    return (build_lama if kind == "lama" else build_mat), make_inputs, call


def build_sam1(variant: str):
    path = os.environ.get("SAM1_PATH")
    if not path or not os.path.isdir(os.path.join(path, "segment_anything")):
        raise SystemExit("set SAM1_PATH to a checkout of facebookresearch/segment-anything (the folder with "
                         "segment_anything/)")
    if path not in sys.path:
        sys.path.insert(0, path)
    import torch
    from segment_anything.build_sam import sam_model_registry

    def build():
        with torch.device(_cuda()):  # sam_model.to(device) in Impact's SAMWrapper (auto mode)
            return _moved_to_cuda(sam_model_registry[variant]().eval())
    return build


def case_sam1(variant: str):
    """Impact Pack's make_sam_mask (impact/core.py): SamPredictor.set_image (segment_anything/predictor.py:34-89,
    no_grad) on the whole image resized to a long side of 1024 (ResizeLongestSide) as uint8 on the GPU, then
    Sam.preprocess (normalise to float32, pad to 1024 x 1024, modeling/sam.py:164-175) and the image encoder; the
    features (1 x 256 x 64 x 64) stay for the per-box predict. The resized image is 1024 on its long side whatever
    the input, so the peak is one number per variant (the input here the square case, the largest)."""
    def make_inputs(model):
        import torch
        return (torch.empty(1, 3, 1024, 1024, dtype=torch.uint8, device="cuda"),)

    def call(model, image):
        return model.image_encoder(model.preprocess(image.float()))
    return build_sam1(variant), make_inputs, call


# Intel/dpt-hybrid-midas as transformers' own conversion script builds it (models/dpt/convert_dpt_hybrid_to_pytorch.py
# get_dpt_config for a "midas" checkpoint): 122,377,985 parameters, 489,511,940 bytes in float32 (the published
# model.safetensors, 490 MB)
MIDAS_CONFIG = dict(is_hybrid=True, hidden_size=768, reassemble_factors=[1, 1, 1, 0.5],
                    neck_hidden_sizes=[256, 512, 768, 768], patch_size=16, use_batch_norm_in_fusion_residual=False,
                    readout_type="project")
MIDAS_SIDE = 384  # DPTImageProcessor's default size 384 x 384, keep_aspect_ratio False (the conversion's size=384)


class _Num(float):
    """A number a module's constructor reads back with .item() (drop-path rates): data, not memory."""
    def item(self):
        return float(self)


class _Seq(list):
    def split(self, sizes):  # torch.Tensor.split(list of sizes)
        out, i = [], 0
        for n in sizes:
            out.append(_Seq(self[i:i + n]))
            i += n
        return out

    def tolist(self):
        return [float(v) for v in self]


def _plain_numbers_torch():
    """A stand-in for a model module's ``torch`` whose linspace / Tensor(array) give plain numbers: constructors that
    compute drop-path rates with them call .item() / .tolist(), which a fake tensor cannot answer."""
    import types
    import torch
    proxy = types.SimpleNamespace(**{k: getattr(torch, k) for k in dir(torch) if not k.startswith("__")})
    proxy.Tensor = lambda arr: _Seq(_Num(v) for v in arr)
    proxy.linspace = lambda start, end, steps, **_kw: _Seq(
        _Num(start + (end - start) * i / max(1, steps - 1)) for i in range(int(steps)))
    return proxy


def build_midas():
    import torch
    import transformers.models.bit.modeling_bit as bit
    from transformers import DPTConfig, DPTForDepthEstimation
    proxy = _plain_numbers_torch()

    def build():
        bit.torch = proxy
        try:
            with torch.device(_cuda()):  # MidasDetector.to(model_management.get_torch_device())
                return _moved_to_cuda(DPTForDepthEstimation(DPTConfig(**MIDAS_CONFIG)).eval())
        finally:
            bit.torch = torch
    return build


def case_midas(width: int, height: int):
    """comfyui_controlnet_aux's MidasDetector.__call__ (src/custom_controlnet_aux/midas/transformers.py at e8b689a):
    the image resized on the CPU to ``resolution`` on its short side and padded to a multiple of 64 (W x H here),
    DPTImageProcessor's 384 x 384 float32 pixel values moved to the GPU, the forward under no_grad, the predicted depth
    resized back to W x H (bicubic), cloned, shifted and scaled, then copied to the CPU. One image at a time
    (common_annotator_call); the depth map and its copies are the only tensors that grow with the image."""
    def make_inputs(model):
        import torch
        return (torch.empty(1, 3, MIDAS_SIDE, MIDAS_SIDE, dtype=torch.float32, device="cuda"),)

    def call(model, pixel_values):
        import torch
        with torch.no_grad():
            depth = model(pixel_values=pixel_values).predicted_depth
            depth = torch.nn.functional.interpolate(depth.unsqueeze(1), size=(height, width), mode="bicubic",
                                                    align_corners=False).squeeze()
            depth_pt = depth.clone()
            depth_pt -= torch.min(depth_pt)
            depth_pt /= torch.max(depth_pt)
            return depth_pt
    return build_midas(), make_inputs, call


# Intel/zoedepth-nyu-kitti as transformers' conversion script builds it (models/zoedepth/convert_zoedepth_to_hf.py
# get_zoedepth_config("ZoeD_NK")): 345,073,307 parameters and 130 buffer values, float32
ZOE_BACKBONE = dict(image_size=384, num_hidden_layers=24, hidden_size=1024, intermediate_size=4096,
                    num_attention_heads=16, use_relative_position_bias=True, reshape_hidden_states=False,
                    out_features=["stage6", "stage12", "stage18", "stage24"])
ZOE_CONFIG = dict(neck_hidden_sizes=[256, 512, 1024, 1024], bin_centers_type="softplus",
                  bin_configurations=[{"name": "nyu", "n_bins": 64, "min_depth": 1e-3, "max_depth": 10.0},
                                      {"name": "kitti", "n_bins": 64, "min_depth": 1e-3, "max_depth": 80.0}],
                  num_patch_transformer_layers=4, patch_transformer_hidden_size=128,
                  patch_transformer_intermediate_size=1024, patch_transformer_num_attention_heads=4)


class _FirstDomain:
    """torch.argmax(domain_vote).squeeze().item() in ZoeDepth's metric head, which picks the bin configuration by
    the image's predicted domain (data, not memory): the first; NYU and KITTI both have 64 bins, the same memory."""
    def squeeze(self):
        return self

    def item(self):
        return 0


def build_zoe():
    import torch
    import transformers.models.zoedepth.modeling_zoedepth as zoe
    from transformers import BeitConfig, ZoeDepthConfig, ZoeDepthForDepthEstimation
    proxy = _plain_numbers_torch()
    proxy.linspace, proxy.Tensor = torch.linspace, torch.Tensor
    proxy.argmax = lambda *_a, **_k: _FirstDomain()
    zoe.torch = proxy

    def build():
        with torch.device(_cuda()):  # ZoeDetector.to(model_management.get_torch_device())
            config = ZoeDepthConfig(backbone_config=BeitConfig(**ZOE_BACKBONE), **ZOE_CONFIG)
            return _moved_to_cuda(ZoeDepthForDepthEstimation(config).eval())
    return build


def case_zoe(w: int, h: int):
    """comfyui_controlnet_aux's ZoeDetector (zoe/transformers.py at e8b689a): the depth-estimation pipeline's model
    forward under no_grad on the processor's W x H pixel values (the detect map padded and resized toward 384 x 512:
    families/zoedepth.py model_input gives W x H for a map); the pipeline moves the outputs to the CPU before
    post-processing."""

    def make_inputs(model):
        import torch
        return (torch.empty(1, 3, h, w, dtype=torch.float32, device="cuda"),)

    def call(model, pixel_values):
        import torch
        with torch.no_grad():
            return model(pixel_values=pixel_values).predicted_depth
    return build_zoe(), make_inputs, call


# hustvl/vitmatte-small-composition-1k as transformers' conversion script builds it (models/vitmatte/
# convert_vitmatte_to_hf.py get_config at 05e0375: ViTDet-S, 4 input channels, window 14 on blocks 0,1,3,4,6,7,9,10,
# global attention with decomposed relative positions on 2,5,8,11); vitmatte-base-composition-1k is the same at
# ViT-B width (hidden 768, 12 heads: its published config)
VITMATTE_BACKBONE = dict(num_channels=4, image_size=512, pretrain_image_size=224, patch_size=16,
                         use_absolute_position_embeddings=True, use_relative_position_embeddings=True,
                         window_size=14, window_block_indices=[0, 1, 3, 4, 6, 7, 9, 10],
                         residual_block_indices=[2, 5, 8, 11], out_features=["stage12"])
VITMATTE_HEAD = dict(convstream_hidden_sizes=[48, 96, 192], fusion_hidden_sizes=[256, 128, 64, 32])  # the defaults
VITMATTE_WIDTH = {"small": (384, 6), "base": (768, 12)}


def build_vitmatte(size: str):
    import torch
    import transformers.models.vitdet.modeling_vitdet as vitdet
    from transformers import VitDetConfig, VitMatteConfig, VitMatteForImageMatting
    hidden, heads = VITMATTE_WIDTH[size]
    proxy = _plain_numbers_torch()  # the encoder's drop-path rates (torch.linspace(...) .item())

    def build():
        from transformers.modeling_utils import PreTrainedModel
        vitdet.torch = proxy
        init = PreTrainedModel._initialize_weights
        PreTrainedModel._initialize_weights = lambda *_a, **_k: None  # random init (trunc_normal_) reads data
        try:
            with torch.device(_cuda()):  # vit_matte_model.model.to(device) (LayerStyle imagefunc.generate_VITMatte)
                backbone = VitDetConfig(hidden_size=hidden, num_attention_heads=heads, **VITMATTE_BACKBONE)
                config = VitMatteConfig(backbone_config=backbone, hidden_size=hidden, **VITMATTE_HEAD)
                return _moved_to_cuda(VitMatteForImageMatting(config).eval())
        finally:
            vitdet.torch = torch
            PreTrainedModel._initialize_weights = init
    return build


def case_vitmatte(size: str, w: int, h: int):
    """ComfyUI_LayerStyle(_Advance)'s generate_VITMatte (py/imagefunc.py at 7b678b4, :1583-1625): the image and its
    trimap resized on the CPU to at most max_megapixels, VitMatteImageProcessor's float32 pixel values (image and
    trimap as 4 channels, padded to a multiple of 32: W x H here, already padded) moved to the GPU, the forward under
    no_grad; the alphas go back to the CPU."""
    def make_inputs(model):
        import torch
        return (torch.empty(1, 4, h, w, dtype=torch.float32, device="cuda"),)

    def call(model, pixel_values):
        import torch
        with torch.no_grad():
            return model(pixel_values=pixel_values).alphas
    return build_vitmatte(size), make_inputs, call


def _parse_size(s):
    w, h = (int(v) for v in s.split("x"))
    return w, h


def run_case(name: str) -> dict:
    if name.startswith("rtdetr*"):
        build, make_inputs, call = case_rtdetr(int(name[7:]))
    elif name.startswith("birefnet@"):
        size, _, b = name[9:].partition("*")
        build, make_inputs, call = case_birefnet(*_parse_size(size), int(b) if b else 1)
    elif name.startswith(("film@", "rife@")):
        kind, rest = name.split("@", 1)
        rest, _, m = rest.partition(":")
        size, _, p = rest.partition("*")
        build, make_inputs, call = case_interp(kind, *_parse_size(size), int(p) if p else 2, int(m) if m else 2)
    elif name in ("lama", "mat"):
        build, make_inputs, call = case_inpaint(name)
    elif name.startswith("sam1-"):
        build, make_inputs, call = case_sam1(name[5:])
    elif name.startswith("zoe@"):
        build, make_inputs, call = case_zoe(*_parse_size(name[4:]))
    elif name.startswith("vitmatte-"):
        size, _, wh = name[9:].partition("@")
        build, make_inputs, call = case_vitmatte(size, *_parse_size(wh))
    elif name.startswith("midas@"):
        build, make_inputs, call = case_midas(*_parse_size(name[6:]))
    else:
        raise SystemExit(f"unknown case {name}")
    with trace_sam3.eager_upsample(UPSAMPLE_OPS):
        res = twm.run_trace(build, make_inputs, call, deadline_s=3000)
    return {"case": name, "peak_bytes": res.peak_bytes, "peak_mib": round(res.peak_bytes / 2**20, 2),
            "input_bytes": res.input_bytes, "param_bytes": res.param_bytes, "peak_op": res.peak_op,
            "peak_module": res.peak_module, "n_ops": res.n_ops, "seconds": res.seconds, "decomposed": res.decomposed}


DEFAULT_CASES = (["rtdetr*1", "rtdetr*2", "rtdetr*4", "rtdetr*8", "rtdetr*16", "rtdetr*32"]
                 + ["birefnet@1024x1024", "birefnet@512x512", "birefnet@1920x1080", "birefnet@3840x2160",
                    "birefnet@1024x1024*2", "birefnet@1024x1024*4"]
                 + ["film@640x360", "film@1280x720", "film@1920x1080", "film@1280x720:4", "film@1280x720*3"]
                 + ["rife@640x360", "rife@1280x720", "rife@1920x1080", "rife@1280x720:4"])


def main(argv=None) -> int:
    argv = list(argv if argv is not None else sys.argv[1:])
    cases = argv or DEFAULT_CASES
    twm.import_comfy()
    import torch
    print(json.dumps({"torch": torch.__version__, "comfyui": getattr(__import__("comfyui_version"), "__version__", "?"),
                      "comfy_path": twm.COMFY_PATH}), flush=True)
    for name in cases:
        print(json.dumps(run_case(name)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
