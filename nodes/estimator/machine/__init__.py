"""The card, the host, and what ComfyUI does with a workflow on them (wing 4).

- gpus: the card catalogue; device: the card as ComfyUI's launch flags set it up (Device, LaunchFlags)
- host_memory: what ComfyUI holds in system RAM; speed: how long a run takes
- resolve: a model reference -> the weights as ComfyUI loads and casts them on this device
- runtime: ComfyUI's own decisions per stage (partial loads, streaming, cond batching, VAE splits)
- placement, distorch: which device each model is on; DisTorch2 allocation strings
- regressions: the known memory regressions by version (data/regressions.jsonl), where they hit, what they do
"""
