"""Model families: one module per family (or group of close variants) holding all its facts, the
registry that makes the estimator's tables views over them, and the detection of a file's family
from its header (detect.py). See docs/adding-a-family.md."""
from . import registry
from .detect import (FAMILIES, LIVE_IDENTIFY, Family, describe, family_defaults, from_comfy_detection, from_comfy_vae,
                     identify, info_to_dict)

__all__ = ["FAMILIES", "LIVE_IDENTIFY", "Family", "describe", "family_defaults", "from_comfy_detection", "from_comfy_vae",
           "identify", "info_to_dict", "registry"]
