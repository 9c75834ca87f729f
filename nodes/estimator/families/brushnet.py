"""BrushNet (TencentARC) as ComfyUI-BrushNet (nullquant, brushnet/brushnet.py and its configs at 505d8ef) builds it:
a UNet branch without attention (DownBlock2D / MidBlock2D / UpBlock2D resnets) that reads the latent, the masked
image's latent and the mask (conv_in_condition: 4 + 5 channels) and adds a zero-convolution residual to every UNet
block. The counts are the configs' numbers through the functions below (brushnet.json for SD1.5, brushnet_xl.json
for SDXL, whose time ids add an embedding from 2816). BrushNetLoader dispatches the whole model to the GPU in its
``dtype`` widget with accelerate (device_map "sequential"), outside ComfyUI's model management, and the node's cached
output keeps it there. PowerPaint v2 (powerpaint.json, brushnet_ca.py) is the same branch with the SD1.5 UNet's
cross-attention transformers in its down, mid and up blocks: the counts below add them (cross_attention; checked
against the SD1.5 UNet, which the same functions count to its published 859,520,964 parameters:
tests/test_pack_brushnet.py).
"""
from __future__ import annotations

from ._spec import BRUSHNET, Family, _r

ORDER = 190  # files the BrushNet loader names (models/inpaint): no other family's name rules look there

TIME = 1280  # time_embed_dim = block_out_channels[0] x 4


def conv(i: int, o: int, k: int = 3) -> int:
    return i * o * k * k + o


def resnet(i: int, o: int) -> int:
    """diffusers ResnetBlock2D: two GroupNorms, two 3x3 convs, the time projection, a 1x1 shortcut when i != o."""
    return 2 * i + conv(i, o) + TIME * o + o + 2 * o + conv(o, o) + (conv(i, o, 1) if i != o else 0)


def timestep_embedding(i: int) -> int:
    return i * TIME + TIME + TIME * TIME + TIME


def zero_convs(blocks: tuple[int, ...], layers: int = 2) -> tuple[int, int, int]:
    """(down, mid, up) zero 1x1 convs: conv_in's output, each resnet's and each resampler's output; the loader tells
    the releases apart by these counts (brushnet_nodes.py brushnet_blocks: 24 / 2 / 30 keys for SD1.5, 18 / 2 / 22
    for SDXL, a weight and a bias each)."""
    n = len(blocks)
    return 1 + n * layers + (n - 1), 1, n * (layers + 1) + (n - 1)


def brushnet(blocks: tuple[int, ...], layers: int = 2, add_embedding_in: int | None = None) -> int:
    """BrushNetModel: conv_in_condition, the time embedding(s), the down / mid / up resnets with their down- and
    upsamplers, and one zero 1x1 conv per block output (brushnet_down_blocks, _mid_block, _up_blocks)."""
    total = conv(4 + 5, blocks[0]) + timestep_embedding(blocks[0])
    total += timestep_embedding(add_embedding_in) if add_embedding_in else 0
    zero = [blocks[0]]
    out = blocks[0]
    for n, ch in enumerate(blocks):  # down: layers resnets, a downsampler but in the last block
        inp, out = out, ch
        total += sum(resnet(inp if j == 0 else out, out) for j in range(layers))
        zero += [out] * layers
        if n < len(blocks) - 1:
            total += conv(out, out)
            zero.append(out)
    total += 2 * resnet(blocks[-1], blocks[-1])  # MidBlock2D: two resnets
    zero.append(blocks[-1])
    rev = list(reversed(blocks))
    out = rev[0]
    for n, ch in enumerate(rev):  # up: layers + 1 resnets on the skip connections, an upsampler but in the last
        prev, out, inp = out, ch, rev[min(n + 1, len(rev) - 1)]
        for j in range(layers + 1):
            skip = inp if j == layers else out
            total += resnet((prev if j == 0 else out) + skip, out)
        zero += [out] * (layers + 1)
        if n < len(rev) - 1:
            total += conv(out, out)
            zero.append(out)
    return total + sum(conv(c, c, 1) for c in zero)


def cross_attention(ch: int, context: int = 768) -> int:
    """diffusers Transformer2DModel (use_linear_projection False, one BasicTransformerBlock): GroupNorm, 1x1 proj_in
    and proj_out, self-attention (q, k, v without bias, out with), cross-attention (k, v from ``context``), GEGLU
    feed-forward (ch -> 8 ch -> 4 ch -> ch) and three LayerNorms."""
    block = (3 * 2 * ch + 3 * ch * ch + ch * ch + ch + ch * ch + 2 * context * ch + ch * ch + ch
             + ch * 8 * ch + 8 * ch + 4 * ch * ch + ch)
    return 2 * ch + 2 * (ch * ch + ch) + block


def sd15_attentions(blocks: tuple[int, ...] = (320, 640, 1280, 1280), layers: int = 2) -> int:
    """The SD1.5 UNet's cross-attention transformers: ``layers`` in each CrossAttnDownBlock2D (all but the last
    block), one in the mid block, ``layers`` + 1 in each CrossAttnUpBlock2D (all but the first up block)."""
    down = sum(layers * cross_attention(c) for c in blocks[:-1])
    up = sum((layers + 1) * cross_attention(c) for c in list(reversed(blocks))[1:])
    return down + cross_attention(blocks[-1]) + up


P_BRUSHNET_SD15 = brushnet((320, 640, 1280, 1280))
P_POWERPAINT = P_BRUSHNET_SD15 + sd15_attentions()
P_BRUSHNET_SDXL = brushnet((320, 640, 1280), add_embedding_in=2816)

FAMILIES = {"brushnet-sd15": Family(BRUSHNET, "BrushNet SD1.5", {}),
            "brushnet-sdxl": Family(BRUSHNET, "BrushNet SDXL", {}),
            "powerpaint": Family(BRUSHNET, "PowerPaint v2 (BrushNet with cross-attention)", {}),
            "brushnet": Family(BRUSHNET, "BrushNet (SD1.5 assumed)", {})}
NAME_RULES = {  # the releases: random_mask / segmentation_mask_brushnet_ckpt (SD1.5), ..._sdxl_v0 / _v1 (SDXL)
    BRUSHNET: (
        # PowerPaint's v2 releases keep it in a folder of its name (the pack's README: models/inpaint/powerpaint/)
        _r(r"power[_-]?paint", "powerpaint", "PowerPaint v2 (BrushNet with cross-attention)", P_POWERPAINT,
           "families/brushnet.py P_POWERPAINT (computed from powerpaint.json)"),
        _r(r"sd[_-]?xl|(?<![a-z])xl(?![a-z])", "brushnet-sdxl", "BrushNet SDXL", P_BRUSHNET_SDXL,
           "families/brushnet.py P_BRUSHNET_SDXL (computed from brushnet_xl.json)"),
        _r(r"random[_-]?mask|segmentation[_-]?mask", "brushnet-sd15", "BrushNet SD1.5", P_BRUSHNET_SD15,
           "families/brushnet.py P_BRUSHNET_SD15 (computed from brushnet.json)"),
        # a name neither release uses: priced as the SD1.5 model, and no evidence of the base model's family
        _r(r".", "brushnet", "BrushNet (SD1.5 assumed)", P_BRUSHNET_SD15,
           "families/brushnet.py P_BRUSHNET_SD15 (computed from brushnet.json)"),
    ),
}
