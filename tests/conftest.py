"""Shared test setup: the model-file builders in tests/helpers_models.py import as `helpers_models`
from every test folder (only tests/ goes on sys.path, never the repository root: in a process
that also loads ComfyUI, `nodes` must stay ComfyUI's module)."""
import os
import sys

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)
