"""ComfyUI API prompt or UI workflow -> Workload (the stages ComfyUI will run, their models, shapes).

Layout (one concern per module; a new node pack is one file in packs/):
- ``base.py``      the internal graph (_Node, _Link), limits, safe math for ComfyMathExpression
- ``readers.py``   API prompt / UI workflow -> internal graph (subgraphs, reroutes, bypass, primitives)
- ``analyzer.py``  the generic, socket-typed analyzer: models, latents, images, sigmas -> stages
- ``packs/``       one module per node pack: what its nodes mean (tables + small handlers)

Nothing here raises anything but WorkflowError, and only when the input is not a workflow (not
JSON, not an object, a node entry without id / class_type); everything else (unknown nodes,
dangling links, cycles, odd values, absurd sizes) becomes a note on the Workload or the Stage.
"""
from __future__ import annotations

from typing import Mapping

from ..errors import WorkflowError
from ..node_specs import load_specs
from ..placement import place_stages
from ..workload import Workload
from .analyzer import _Analyzer
from .base import estimate_text_tokens
from .readers import _detect, _read_api, _UiReader

__all__ = ["read_workflow", "estimate_text_tokens"]


def read_workflow(data: Mapping | str | bytes, *, specs: Mapping | None = None) -> Workload:
    """Read an API prompt or a UI workflow (dict, or JSON text) into a Workload.

    ``specs``: node specs as ``node_specs.load_specs()`` returns them; a running ComfyUI can pass
    ``{"nodes": node_specs.specs_from_object_info(object_info), ...}`` to know custom nodes too.
    Raises WorkflowError only when ``data`` is not a workflow at all.
    """
    specs = specs if specs is not None else load_specs()
    where: list[str] = []  # the node being read, for the message below
    try:
        fmt, payload = _detect(data)
        if fmt == "ui":
            reader = _UiReader(payload, specs)
            reader.where = where
            graph = reader.read()
        else:
            graph = _read_api(payload, specs)
        analyzer = _Analyzer(graph, specs)
        analyzer.where = where
        return place_stages(analyzer.analyze())
    except WorkflowError:
        raise
    except RecursionError:
        raise WorkflowError(f"workflow nests too deeply to read{' at ' + where[-1] if where else ''}") from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ZeroDivisionError, OverflowError) as exc:
        # A shape this reader did not foresee: name the node instead of crashing the caller.
        raise WorkflowError(f"{where[-1] + ': ' if where else ''}could not be read "
                            f"({type(exc).__name__}: {exc})") from None
