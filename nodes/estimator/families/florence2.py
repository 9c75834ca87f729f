"""Florence-2 (Microsoft) as kijai/ComfyUI-Florence2 runs it (nodes.py at 00b6338): a DaViT vision encoder and a
BART-style encoder-decoder that generates the caption / boxes with beam search.

- Sizes (the model card): Florence-2-base 0.23B, Florence-2-large 0.77B. The fine-tunes the loader offers keep their
  base's size and say it in their names (-base-ft, -large-ft, CogFlorence-2.x-Large, PromptGen-v2.0 base / large,
  Florence-2-Flux-Large ...); a name without "base" or "large" (Florence-2-DocVQA, Florence-2-SD3-Captioner) is not
  priced.
- Configurations (config.json of microsoft/Florence-2-base / -large): DaViT stage widths 128 / 256 (first stage, 4x4
  patches of the 768x768 input), BART d_model 768 / 1024 with 6 / 12 encoder and decoder layers; 577 image tokens.
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 185  # "florence" shares no pattern with another family's name rules

SIZES = {  # size -> (parameters, DaViT first-stage width, d_model, decoder layers)
    "base": (230_000_000, 128, 768, 6),
    "large": (770_000_000, 256, 1024, 12),
}
IMAGE_SIZE, IMAGE_TOKENS = 768, 577
_CARD = "the Florence-2 model card (families/florence2.py)"

FAMILIES = {f"florence2-{k}": Family(DIFFUSION, f"Florence-2 {k}", dict(vision_width=v, hidden_size=d, layers=n))
            for k, (_p, v, d, n) in SIZES.items()}

NAME_RULES = {
    DIFFUSION: tuple(_r(rf"florence.*{k}", f"florence2-{k}", f"Florence-2 {k}", p, _CARD)
                     for k, (p, _v, _d, _n) in SIZES.items()),
}


def generate_working(size: str, nbytes: int, beams: int, new_tokens: int, prompt_tokens: int = 256) -> list:
    """One image's generate (first-principles formula, uncalibrated): the DaViT first stage at 768x768 (192x192 tokens:
    x, its norm, q/k/v, the attention output and the 4x MLP hidden layer, 10 widths), and the beams' key / value
    caches (self-attention over the generated tokens, cross-attention over the image and prompt tokens)."""
    _p, vision, d_model, layers = SIZES[size]
    tokens = (IMAGE_SIZE // 4) ** 2
    davit = 10 * tokens * vision * nbytes
    kv = layers * 2 * beams * (new_tokens + IMAGE_TOKENS + prompt_tokens) * d_model * nbytes
    return [("DaViT first stage (formula)", davit,
             f"first-principles formula, uncalibrated: {tokens:,} tokens of {vision} at 768×768, 10 widths, "
             f"{nbytes} bytes"),
            ("beam-search key / value caches (formula)", kv,
             f"first-principles formula, uncalibrated: {layers} decoder layers × keys and values × {beams} beam(s) × "
             f"({new_tokens} new + {IMAGE_TOKENS} image + {prompt_tokens} prompt tokens) × {d_model}, {nbytes} bytes")]
