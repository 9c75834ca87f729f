"""python -m vram_budget.nodes.estimator.cli"""
import sys

from .app import main

sys.exit(main())
