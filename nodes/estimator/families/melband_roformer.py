"""Mel-Band RoFormer (vocal separation) as kijai/ComfyUI-MelBandRoFormer runs it (nodes.py, model/mel_band_roformer.py
at the pack's HEAD): the loader's fixed configuration (dim 384, depth 6, one time and one frequency transformer layer
each, 60 mel bands, 8 heads of 64, stereo, n_fft 2048, mask estimator depth 2).

- Parameters, computed here from that configuration: the band widths come from librosa's Slaney mel filter bank
  (60 bands over the 1,025 bins of a 2,048-point STFT at 44.1 kHz, the first and last bin forced in, as the model's
  constructor does): 1,979 (band, bin) pairs, 3,958 with both channels, the count the model's mask output carries.
  Transformers 23,666,784 + band split 3,070,700 + mask estimators 201,465,304 = 228,202,788 parameters: 912.8 MB at
  fp32, 456.4 MB at fp16, the two files the pack's readme points to (MelBandRoformer_fp32 / _fp16.safetensors).
- The loader builds the model in fp32 and load_state_dict copies the file into it: fp32 on the GPU whatever the file.
"""
from __future__ import annotations

import math

from ._spec import DIFFUSION, Family, _r

ORDER = 184  # "melband" / "mel_band" shares no pattern with another family's name rules

CONFIG = dict(dim=384, depth=6, heads=8, dim_head=64, num_bands=60, sample_rate=44100, n_fft=2048, hop=441,
              mask_depth=2, channels=2)


def _hz_to_mel(f: float) -> float:
    """librosa.hz_to_mel, Slaney (htk=False)."""
    sp, min_log_hz = 200.0 / 3, 1000.0
    return min_log_hz / sp + math.log(f / min_log_hz) / (math.log(6.4) / 27.0) if f >= min_log_hz else f / sp


def _mel_to_hz(m: float) -> float:
    sp, min_log_hz = 200.0 / 3, 1000.0
    return min_log_hz * math.exp(math.log(6.4) / 27.0 * (m - min_log_hz / sp)) if m >= min_log_hz / sp else sp * m


def bins_per_band(sr: int = 44100, n_fft: int = 2048, bands: int = 60) -> tuple[int, ...]:
    """How many STFT bins each band of librosa.filters.mel(sr, n_fft, n_mels) covers (its nonzero weights), with the
    first bin of band 0 and the last bin of the last band forced in (mel_band_roformer.py MelBandRoformer.__init__)."""
    nb = 1 + n_fft // 2
    fft = [i * (sr / 2) / (nb - 1) for i in range(nb)]
    lo, hi = _hz_to_mel(0.0), _hz_to_mel(sr / 2)
    mel = [_mel_to_hz(lo + (hi - lo) * i / (bands + 1)) for i in range(bands + 2)]
    out = []
    for b in range(bands):
        n = 0
        for j, f in enumerate(fft):
            w = min((f - mel[b]) / (mel[b + 1] - mel[b]), (mel[b + 2] - f) / (mel[b + 2] - mel[b + 1]))
            n += w > 0 or (b == 0 and j == 0) or (b == bands - 1 and j == nb - 1)
        out.append(n)
    return tuple(out)


def parameters(c: dict = CONFIG) -> int:
    """The model's parameter count at configuration c (the modules of mel_band_roformer.py, rotary tables aside)."""
    dim, inner, heads = c["dim"], c["heads"] * c["dim_head"], c["heads"]
    attention = dim + dim * inner * 3 + dim * heads + heads + inner * dim  # RMSNorm, to_qkv, to_gates, to_out
    feed_forward = dim + dim * 4 * dim + 4 * dim + 4 * dim * dim + dim  # RMSNorm, Linear x4, Linear back
    transformers = c["depth"] * 2 * (attention + feed_forward + dim)  # time + frequency, each with its output norm
    dims_in = [2 * n * c["channels"] for n in bins_per_band(c["sample_rate"], c["n_fft"], c["num_bands"])]
    band_split = sum(d + d * dim + dim for d in dims_in)  # RMSNorm(d) + Linear(d, dim)
    hidden = 4 * dim  # MaskEstimator: MLP(dim -> 4 dim -> 4 dim -> 2 d), then GLU
    masks = sum(dim * hidden + hidden + (c["mask_depth"] - 1) * (hidden * hidden + hidden) + hidden * 2 * d + 2 * d
                for d in dims_in)
    return transformers + band_split + masks


P_MELBAND = parameters()  # 228,202,788
_SRC = "computed from the loader's configuration (families/melband_roformer.py)"

FAMILIES = {"melband-roformer": Family(DIFFUSION, "Mel-Band RoFormer (vocal separation)",
                                       dict(hidden_size=CONFIG["dim"], depth=CONFIG["depth"]))}

NAME_RULES = {
    DIFFUSION: (_r(r"mel[_-]?band[_-]?ro[_-]?former", "melband-roformer", "Mel-Band RoFormer (vocal separation)",
                   P_MELBAND, _SRC),),
}
