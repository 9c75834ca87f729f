"""kijai/ComfyUI-MelBandRoFormer (nodes.py): vocal separation before an audio-driven video model (the HuMo and
InfiniteTalk examples of WanVideoWrapper), families/melband_roformer.py.

- MelBandRoFormerModelLoader: a file from models/diffusion_models -> MELROFORMERMODEL, built in fp32 with the fixed
  configuration and load_state_dict(strict=True): fp32 on the GPU whatever the file.
- MelBandRoFormerSampler: model.to(device) by hand, the audio in chunks of C = 352,800 samples (8 s at 44.1 kHz, half
  overlapping), one chunk per forward, then model.to(offload_device). So the stage's memory is the fp32 weights and
  ONE chunk's activations whatever the clip's length; the clip itself and two accumulators (vocals, counter) sit on
  the GPU as stereo fp32 for the whole run: about 1 MB per second of audio, unknown before the audio loads.
Working memory: a first-principles formula, uncalibrated (below).
"""
from __future__ import annotations

from ...families import melband_roformer as MB
from ...machine.resolve import PACK_FP32
from ...workload import SAMPLE
from . import Pack, model_file_loader, with_working

LOADER, RUN, MODEL = "MelBandRoFormerModelLoader", "MelBandRoFormerSampler", "MELROFORMERMODEL"
CHUNK = 352_800  # samples per forward (nodes.py process: C)


def chunk_working(c: dict = MB.CONFIG) -> list[tuple[str, int, str]]:
    """One chunk's activations (fp32, batch 1, stereo). The STFT gives T = 1 + C / hop frames; the band split gives
    T x bands tokens of `dim`; the peak is inside a transformer's feed-forward (x, its norm, the 4 x dim hidden
    layer and its GELU: 10 dim-wide copies) next to the residual; the STFT, the gathered bands and the masks are
    each under a tenth of it."""
    frames = 1 + CHUNK // c["hop"]
    tokens = frames * c["num_bands"]
    transformer = 11 * tokens * c["dim"] * 4
    bins = 2 * c["channels"] * sum(MB.bins_per_band(c["sample_rate"], c["n_fft"], c["num_bands"]))
    spectra = frames * (2 * (1 + c["n_fft"] // 2) * c["channels"] * 2 + 3 * bins) * 4  # STFT, bands, masks
    return [
        ("a transformer layer's activations (formula)", transformer,
         f"first-principles formula, uncalibrated: one chunk of {CHUNK:,} samples -> {frames} STFT frames x "
         f"{c['num_bands']} bands = {tokens:,} tokens of {c['dim']}, fp32; the feed-forward keeps x, its norm, "
         "the 4x hidden layer and its GELU (10 widths) and the residual: 11 x tokens x dim x 4 bytes"),
        ("the chunk's spectra and masks (formula)", spectra,
         f"first-principles formula, uncalibrated: the stereo STFT ({frames} frames x 2,050 bins, complex), the "
         f"{bins:,} band inputs and the mask estimators' outputs, fp32"),
    ]


_loader_refs = model_file_loader("model_name", "diffusion_models", MODEL, weight_dtype=PACK_FP32)


def _run(a, node):
    stage = a.sample_stage(node, model_links=[a.link(node, "model")], cond_links=[], cfg=None, uses_negative=False,
                           steps=1, latent=None, model_type=MODEL)
    a.note(f"{a.label(node)}: not counted: the audio clip and two accumulators it keeps on the GPU, about 1 MB per "
           "second of audio, unknown before the audio loads")
    return with_working(a, stage, chunk_working(), "Mel-Band RoFormer",
                        "one 8 s chunk; first-principles formula, uncalibrated")


PACK = Pack(
    name="ComfyUI-MelBandRoFormer",
    stage_kinds={RUN: SAMPLE},
    stages={RUN: _run},
    refs={LOADER: _loader_refs},
    relevant_types={MODEL},
    widgets={LOADER: ["model_name"]},
    output_types={LOADER: [MODEL], RUN: ["AUDIO", "AUDIO"]},
    input_types={RUN: {"model": MODEL, "audio": "AUDIO"}},
)
