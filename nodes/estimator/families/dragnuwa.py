"""DragNUWA 1.5 as chaojie/ComfyUI-DragNUWA runs it (DragNUWA_net.py and nodes.py at bd9f53f): one network, Net(args),
holding the SVD video UNet with its flow encoder and flow injection and LoRA r=32 on every linear (1,678,331,530), the
conditioner (OpenCLIP ViT-H image embedder with the text leftovers open_clip keeps, 683,800,065; the conditioning
frame's VAE, 83,653,863) and the first-stage autoencoder (97,742,775): 2,543,607,435 parameters in all, counted on
the meta device by bench/trace_dragnuwa.py. The published files hold all of it (benjamin-paine's
dragnuwa-svd-pruned.fp16.safetensors: 5.09 GB, the count x 2 bytes).

- Weights: float32 on the GPU whatever the file: Drag.__init__ builds the Net in fp32, copies the file into its tensors
  (utils.py: the target's dtype) and moves it to cuda (nodes.py:112-117; ``.half()`` is commented out); nothing moves
  it off again, and the loaded Net is a cached node output ComfyUI's model management cannot see.
- Working memory, TRACED with the pack's own code (bench/trace_dragnuwa.py on 2026-12-06: torch 2.14 CPU, meta
  device, xformers' memory-efficient attention as an op that allocates its output only): one denoiser call at the
  CFG batch (2 x 14 frames; args.num_frames is 14 whatever the loader's model_length), plus the drag-flow input it
  takes, at each of the loader's dimensions. The first-stage decode (one frame at a time) and the conditioner's encode
  stay below it. 25 Euler EDM steps (args).
"""
from __future__ import annotations

from ._spec import DIFFUSION, Family, _r

ORDER = 185  # "drag_nuwa" / "dragnuwa" share no pattern with another family's name rules

FAMILY = "dragnuwa"
P_DRAGNUWA = 2_543_607_435
FRAMES, STEPS = 14, 25
# loader dimension (W x H) -> (one denoiser call at the CFG batch, the drag-flow input for cond and uncond), bytes
TRACE = {(576, 320): (3_646_838_656, 61_931_520), (320, 576): (3_646_838_656, 61_931_520),
         (512, 512): (5_186_508_672, 88_080_384)}
TRACE_SOURCE = ("traced with bench/trace_dragnuwa.py on 2026-12-06: ComfyUI-DragNUWA's Net at its args, meta device, "
                "float32, one denoiser call of the CFG batch (2 x 14 frames) and its drag-flow input")

FAMILIES = {  # no hidden_size on purpose: the DiT formula must never price it (the trace does)
    FAMILY: Family(DIFFUSION, "DragNUWA 1.5 (SVD + flow)", dict(fixed_precision=True)),
}

NAME_RULES = {
    DIFFUSION: (
        _r(r"drag[_-]?nuwa", FAMILY, "DragNUWA 1.5", P_DRAGNUWA,
           "ComfyUI-DragNUWA's Net counted on the meta device: 2,543,607,435 parameters (families/dragnuwa.py)"),
    ),
}
