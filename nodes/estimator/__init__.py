"""The shared estimator: pure Python (+ safetensors, gguf). Never imports ComfyUI or torch."""
from .errors import ModelFileError, PlanError, VramBudgetError, WorkflowError  # noqa: F401
from .files import Inventory, TensorInfo, inspect_file  # noqa: F401
