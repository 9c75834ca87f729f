"""Kolors (Kwai) as MinusZoneAI/ComfyUI-Kolors-MZ loads it (mz_kolors_core.py, hook_comfyui_kolors_v2.py): an SDXL UNet
that reads ChatGLM3-6B's hidden states, and ChatGLM3-6B as its text encoder.

- The UNet: the SDXL layout (ComfyUI builds it as SDXL through the pack's hook) plus encoder_hid_proj, Linear(4096 ->
  2048), and a wider first label embedding (5632 = ChatGLM3's pooled 4096 + 6 x 256 size embeddings, SDXL 2816):
  2,567,463,684 + 8,390,656 + 2,816 x 1,280 = 2,579,458,820 parameters, the 5.16 GB Kwai-Kolors/Kolors publishes for
  unet/diffusion_pytorch_model.fp16.safetensors. Its working memory is SDXL's (the same blocks), said as such. Its file
  is named after nothing: MZ_KolorsUNETLoader(V2) loads only Kolors, so the loader says it (ModelRef.hint).
- ChatGLM3-6B (THUDM/chatglm3-6b config.json: hidden 4096, 28 layers, FFN 13,696 SwiGLU, multi-query attention with 2
  groups of 128, vocabulary 65,024, untied output layer): 6,243,584,000 parameters, computed below. The pack quantizes
  the four Linear weights of every layer to 8 or 4 bits when the file's name says 8bit / 4bit (ChatGLMModel.quantize:
  int8 / packed int4 weights and an fp16 scale per output row); the embeddings, the output layer, biases and norms stay
  fp16.
"""
from __future__ import annotations

from ._spec import DIFFUSION, TEXT_ENCODER, Family, _r

ORDER = 120  # before the SDXL rules: "kolors" (the loader's hint) is the more specific name

P_KOLORS_UNET = 2_567_463_684 + (4096 * 2048 + 2048) + (5632 - 2816) * 1280

GLM = dict(hidden_size=4096, layers=28, ffn_dim=13696, vocab=65024, heads=32, kv_heads=2, head_dim=128)


def chatglm3_linear_weights(c: dict = GLM) -> tuple[int, int]:
    """(weights of the quantizable Linear layers, their output rows) over all layers: query_key_value (4096 -> 4608:
    32 query heads + 2 key / value groups of 128), dense (4096 -> 4096), dense_h_to_4h (4096 -> 2 x 13,696, SwiGLU),
    dense_4h_to_h (13,696 -> 4096)."""
    h, f, qkv = c["hidden_size"], c["ffn_dim"], c["hidden_size"] + 2 * c["kv_heads"] * c["head_dim"]
    shapes = ((qkv, h), (h, h), (2 * f, h), (h, f))
    return (c["layers"] * sum(o * i for o, i in shapes), c["layers"] * sum(o for o, _ in shapes))


def chatglm3_parameters(c: dict = GLM) -> int:
    """Everything ChatGLMModel holds: the Linear weights, the qkv bias, two RMSNorms a layer, the final norm, the word
    embeddings and the untied output layer."""
    linear, _ = chatglm3_linear_weights(c)
    h, qkv = c["hidden_size"], c["hidden_size"] + 2 * c["kv_heads"] * c["head_dim"]
    return linear + c["layers"] * (qkv + 2 * h) + h + 2 * c["vocab"] * h


def chatglm3_loaded_bytes(bits: int, c: dict = GLM) -> int:
    """Bytes on the GPU at 16, 8 or 4 bits: the quantized Linear weights at `bits` and an fp16 scale per output row,
    the rest fp16."""
    linear, rows = chatglm3_linear_weights(c)
    total = chatglm3_parameters(c)
    if bits >= 16:
        return 2 * total
    return linear * bits // 8 + 2 * rows + 2 * (total - linear)


P_CHATGLM3 = chatglm3_parameters()  # 6,243,584,000

FAMILIES = {"chatglm3-6b": Family(TEXT_ENCODER, "ChatGLM3-6B", dict(GLM))}

NAME_RULES = {
    DIFFUSION: (_r(r"kolors", "sdxl", "Kolors UNet (the SDXL layout)", P_KOLORS_UNET,
                   "families/kolors.py P_KOLORS_UNET (computed; the 5.16 GB published fp16 file)"),),
    TEXT_ENCODER: (_r(r"chatglm", "chatglm3-6b", "ChatGLM3-6B", P_CHATGLM3,
                      "families/kolors.py P_CHATGLM3 (computed from its config)"),),
}
