"""Shakker-Labs/ComfyUI-IPAdapter-Flux (ipadapter_flux.py, ipadapter_flux_advanced.py at eef22b6): InstantX's Flux
IP-Adapter.

- IPAdapterFluxLoader / IPAdapterFluxLoaderAdvanced: a file from models/ipadapter-flux and SigLIP so400m (from
  models/clip_vision or the Hugging Face cache) -> IP_ADAPTER_FLUX_INSTANTX. On the provider its widget names
  ("cuda", "cpu", "mps") it builds both in fp16 by hand (InstantXFluxIPAdapterModel: ``.to(self.device,
  dtype=torch.float16)``), outside ComfyUI's model management; the node's cached output keeps them there.
- ApplyIPAdapterFlux / ApplyIPAdapterFluxAdvanced: MODEL -> MODEL. It encodes the image with SigLIP (one 384 px
  image) and patches the Flux blocks with the adapter's attention processors, which the patched model runs at each
  step. So on "cuda" both ride on the MODEL (role "ipadapter_flux", priced in the sampling stage as memory that
  cannot stream; sizes families/ip_adapter_flux.py); on "cpu" / "mps" they hold no memory of the card.
- Not added: SigLIP's encode of one 384 px image (729 tokens, under 0.1 GB) and the adapter's attention over its 128
  image tokens in each block, both small beside Flux's own activations (said in a note).
"""
from __future__ import annotations

from ...families.ip_adapter_flux import SIGLIP_NAME
from ...families._spec import IPADAPTER_FLUX
from ...workload import ModelRef
from . import Pack, loader, model_with

INSTANTX = "IP_ADAPTER_FLUX_INSTANTX"
LOADERS = ("IPAdapterFluxLoader", "IPAdapterFluxLoaderAdvanced")
APPLY = ("ApplyIPAdapterFlux", "ApplyIPAdapterFluxAdvanced")


@loader
def _loader(a, node, slot, type_, visiting):
    """The adapter file and SigLIP, on the GPU when the provider is cuda (else nothing of the card's)."""
    if type_ != INSTANTX or str(a.value(node, "provider") or "cuda").lower() != "cuda":
        return []
    ref = a.loader_ref(node, "ipadapter", role=IPADAPTER_FLUX, folder="ipadapter-flux")
    siglip = ModelRef(name=SIGLIP_NAME, role=IPADAPTER_FLUX, folder="ipadapter-flux", loader_node=node.id,
                      loader_type=node.type)
    return ([ref] if ref else []) + [siglip]


def _apply_refs(a, node, slot, type_, visiting):
    """MODEL: the model it is given, with the adapter and SigLIP its loader keeps on the GPU."""
    refs = model_with(a, node, type_, visiting, (("ipadapter_flux", INSTANTX),))
    if type_ == "MODEL":
        a.note(f"{a.label(node)}: SigLIP's encode of one 384 px image and the adapter's attention over its 128 image "
               "tokens in each Flux block are small beside the model's own activations: not added")
    return refs


_LOADER_WIDGETS = ["ipadapter", "clip_vision", "provider"]
PACK = Pack(
    name="ComfyUI-IPAdapter-Flux",
    refs={**{t: _loader for t in LOADERS}, **{t: _apply_refs for t in APPLY}},
    widgets={**{t: _LOADER_WIDGETS for t in LOADERS},
             "ApplyIPAdapterFlux": ["weight", "start_percent", "end_percent"],
             "ApplyIPAdapterFluxAdvanced": ["weight_start", "weight_end", "steps", "start_percent", "end_percent"]},
    output_types={**{t: [INSTANTX] for t in LOADERS}, **{t: ["MODEL"] for t in APPLY}},
    input_types={t: {"model": "MODEL", "ipadapter_flux": INSTANTX, "image": "IMAGE"} for t in APPLY},
    relevant_types={INSTANTX},
)
