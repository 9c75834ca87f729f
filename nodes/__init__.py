"""comfyui-vram-budget: ComfyUI-facing node modules and the shared estimator (``nodes.estimator``)."""
