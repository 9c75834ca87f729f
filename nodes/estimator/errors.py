"""The one exception family of the estimator. Every message is meant for a user."""
from __future__ import annotations


class VramBudgetError(Exception):
    """Base of every error the estimator raises on bad input."""


class ModelFileError(VramBudgetError):
    """A model file is missing, unreadable or malformed. The message names the file."""

    def __init__(self, path: str, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class WorkflowError(VramBudgetError):
    """A workflow / prompt cannot be read. The message names the node where it can."""


class PlanError(VramBudgetError):
    """A request to a planner cannot be satisfied (e.g. nothing fits)."""
