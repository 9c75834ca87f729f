"""The graph reader's plain pieces: the internal graph, values that cannot be computed, limits."""
from __future__ import annotations

import ast
import contextvars
import math
import operator
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

# The size of an input image a workflow loads (LoadImage's file name -> (width, height, frames)), set
# by the caller who can read it: inside ComfyUI from its input folder, on the command line from
# --input-dir (estimator/media.py reads the header). Unset: the size is not known before running.
INPUT_MEDIA: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("vram_budget_input_media",
                                                                            default=None)
# What an unknown input image is taken to be (a stated assumption): one megapixel, square.
ASSUMED_IMAGE_SIDE = 1024

# ComfyUI nodes.py:55 MAX_RESOLUTION: no size widget accepts more.
MAX_RESOLUTION = 16384
# The frontend's virtual subgraph IO node ids (litegraph SUBGRAPH_INPUT_ID / SUBGRAPH_OUTPUT_ID).
SUBGRAPH_INPUT_ID = -10
SUBGRAPH_OUTPUT_ID = -20
# litegraph LGraphEventMode: 0 ALWAYS, 2 NEVER (muted), 4 BYPASS.
MODE_MUTED = 2
MODE_BYPASS = 4
# Numbers beyond this are not sizes or counts anyone means (1e9 px is kept and flagged; 1e300 is junk).
MAX_NUMBER = 1e15
# Guard against pathological nesting / reroute chains (a real workflow nests a handful).
MAX_DEPTH = 200
MAX_EXPANDED_NODES = 50_000  # nodes visited while flattening subgraphs (the largest real workflows: ~2,000)
MAX_CHAIN = 400  # model / clip / vae chains (LoRA stacks) followed to the loader; deeper ones are an error

# Text tokens, a rough estimate on purpose (text encoding is a small stage): the usual BPE rule
# of thumb "a token is about 3/4 of an English word" (OpenAI's tokenizer guide) gives ~1.3
# tokens per word; ComfyUI pads CLIP prompts to 77-token chunks (comfy/sd1_clip.py max_length
# 77), so 77 is the floor. T5 / Qwen / Gemma tokenizers are close enough for a memory estimate.
TOKENS_PER_WORD = 1.3
MIN_TEXT_TOKENS = 77


def estimate_text_tokens(text: str) -> int:
    """Rough token count of a prompt: words x 1.3, at least 77 (one CLIP chunk)."""
    words = len(str(text).split())
    return max(MIN_TEXT_TOKENS, math.ceil(words * TOKENS_PER_WORD))


# ----------------------------------------------------------------------------------- node tables


@dataclass(frozen=True)
class _Link:
    node: str
    slot: int


# Model-file extensions: an unknown node with such a widget value loads a model (analyzer._unknown_loader)
MODEL_FILE = re.compile(r"\.(safetensors|sft|gguf|ckpt|pt|pth|bin)$", re.IGNORECASE)
_UNKNOWN = object()  # a value that cannot be computed without running ComfyUI


@dataclass
class _Node:
    id: str
    type: str
    title: str = ""
    inputs: dict = field(default_factory=dict)  # name -> literal | _Link
    input_types: dict = field(default_factory=dict)  # name -> socket type (UI, or specs)
    output_types: list | None = None
    fallback: dict = field(default_factory=dict)  # UI: saved widget values of linked widget inputs
    core: bool = False  # UI properties.cnr_id == "comfy-core"
    recorded: bool = False  # UI: the node's socket types are recorded in the workflow (its "outputs" list)
    unnamed: tuple = ()  # UI: saved widget values no spec or widget socket could name

    def model_files(self) -> list[tuple[str, str]]:
        """(widget, value) of the widgets naming a model file; an unnamed widget is "widget N" (1-based)."""
        named = [(str(k), v) for k, v in self.inputs.items()]
        named += [(f"widget {i + 1}", v) for i, v in enumerate(self.unnamed)]
        # a widget whose value is a dict (rgthree's Power Lora Loader rows: {"on", "lora", "strength"}): its strings
        named += [(f"{k}.{sub}", inner) for k, v in named if isinstance(v, dict)
                  for sub, inner in list(v.items())[:16]]
        return [(k, v.strip()) for k, v in named if isinstance(v, str) and MODEL_FILE.search(v.strip())]


@dataclass
class _Graph:
    nodes: dict  # id -> _Node, in file order
    fmt: str
    notes: list


def _is_link(value: Any) -> bool:
    """ComfyUI's own test (execution.py `is_link`), also accepting int ids from scripts."""
    return (isinstance(value, list) and len(value) == 2 and isinstance(value[0], (str, int))
            and not isinstance(value[0], bool) and isinstance(value[1], int) and not isinstance(value[1], bool))


def _natural_key(node_id: str) -> tuple:
    return tuple((0, int(p), "") if p.isdecimal() else (1, 0, p) for p in str(node_id).split(":"))



class _MathEval:
    """Safe evaluator for ComfyMathExpression: numbers, + - * / // % **, comparisons, a few functions."""

    BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
    CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
              ast.Eq: operator.eq, ast.NotEq: operator.ne}
    FUNCS = {"min": min, "max": max, "round": round, "abs": abs, "int": int, "float": float,
             "floor": math.floor, "ceil": math.ceil, "sqrt": math.sqrt}

    def __init__(self, names: Mapping[str, Any]):
        self.names = names

    def eval(self, expression: str):
        try:
            return self._eval(ast.parse(str(expression), mode="eval").body)
        except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError, KeyError, RecursionError):
            return _UNKNOWN

    def _eval(self, n):
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, bool)):
            return n.value
        if isinstance(n, ast.Name):
            value = self.names[n.id]
            if value is _UNKNOWN or not isinstance(value, (int, float, bool)):
                raise ValueError(n.id)
            return value
        if isinstance(n, ast.BinOp) and type(n.op) in self.BINOPS:
            left, right = self._eval(n.left), self._eval(n.right)
            if isinstance(n.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
                raise ValueError("power too large")
            return self.BINOPS[type(n.op)](left, right)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd, ast.Not)):
            value = self._eval(n.operand)
            return -value if isinstance(n.op, ast.USub) else (+value if isinstance(n.op, ast.UAdd) else not value)
        if isinstance(n, ast.Compare) and all(type(op) in self.CMPOPS for op in n.ops):
            left = self._eval(n.left)
            for op, right_node in zip(n.ops, n.comparators):
                right = self._eval(right_node)
                if not self.CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(n, ast.BoolOp):
            values = [self._eval(v) for v in n.values]
            return all(values) if isinstance(n.op, ast.And) else any(values)
        if isinstance(n, ast.IfExp):
            return self._eval(n.body) if self._eval(n.test) else self._eval(n.orelse)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in self.FUNCS and not n.keywords:
            return self.FUNCS[n.func.id](*[self._eval(a) for a in n.args])
        raise ValueError("unsupported expression")


def _as_number(value: Any):
    """A widget value as a number, or None (not a number, inf, nan). A JSON integer literal is a
    Python int of any size (10**309 is no float): it is returned as it is, never passed to float()."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _show_number(value: int | float) -> str:
    """A number for a message, as ``:g`` shows it (1e+20, inf); an integer too large for a float (a
    JSON literal such as 10**309, where ``:g`` overflows) in the same form, 1e+309, in integer
    arithmetic (str() refuses ints of more than 4300 digits)."""
    try:
        return f"{value:g}"
    except OverflowError:
        pass
    magnitude = abs(int(value))
    exp = int(math.log10(magnitude))  # math.log10 takes ints of any size; correct its float rounding
    while 10**exp > magnitude:
        exp -= 1
    while 10**(exp + 1) <= magnitude:
        exp += 1
    digits = str(magnitude // 10**(exp - 5))  # six significant digits (truncated), as many as :g shows
    mantissa = (digits[0] + "." + digits[1:]).rstrip("0").rstrip(".")
    return f"{'-' if value < 0 else ''}{mantissa}e+{exp}"


@dataclass
class _ImageSize:
    width: int
    height: int
    batch: int = 1
    exact: bool = True



def _replace(obj, **changes):
    return replace(obj, **changes)


# Nodes whose IMAGE output is a video's frames (their count is known only at run time)
VIDEO_SOURCES = frozenset({"GetVideoComponents", "LoadVideo", "VHS_LoadVideo", "VHS_LoadVideoPath",
                           "VHS_LoadVideoFFmpeg"})


def from_video(a, link) -> bool:
    """Whether the IMAGE at ``link`` comes from a video's frames whose count is known only at run time: a walk
    up the IMAGE inputs of analyzer ``a``'s graph to a video source or a node that takes a VIDEO. A source whose
    frames the graph knows (a file header read from the input folder, a stated frame cap) is not one."""
    seen: set = set()
    stack = [link]
    while stack and len(seen) < 256:
        lk = stack.pop()
        node = a.nodes.get(lk.node) if lk is not None else None
        if node is None or node.id in seen:
            continue
        seen.add(node.id)
        if node.type in VIDEO_SOURCES or any(a.in_type(node, n) == "VIDEO" for n, v in node.inputs.items()
                                             if isinstance(v, _Link)):
            known = a.image_size(lk)
            if known is not None and known.batch and known.exact:
                continue
            return True
        stack.extend(lk2 for _, lk2 in a.linked_inputs_of_type(node, "IMAGE"))
    return False


def frames_bound(a, link) -> int | None:
    """A video's frames reach a node through count-keeping resizes (each pack's ``keeps_count``) from an
    ImageFromBatch, whose ``length`` bounds the count (comfy_extras/nodes_images.py:302-303, ImageFromBatch returns
    min(batch - index, length) images), or from a loader whose frame cap is set (each pack's ``frame_caps``:
    VideoHelperSuite's frame_load_cap); None if no such bound."""
    from .packs import REGISTRY  # noqa: PLC0415  (the packs import this module)
    for _ in range(32):
        node = a.nodes.get(link.node) if link is not None else None
        if node is None:
            return None
        if node.type == "ImageFromBatch":
            return a.number(node, "length")
        if node.type in REGISTRY.frame_caps:
            cap = a.number(node, REGISTRY.frame_caps[node.type], 0) or 0
            return cap if cap > 0 and link.slot == 0 else None
        if node.type not in REGISTRY.keeps_count:
            return None
        ins = a.linked_inputs_of_type(node, "IMAGE")
        if len(ins) != 1:
            return None
        link = ins[0][1]
    return None


def autogrow_images(a, node, prefix: str = "images.") -> list:
    """(input name, image size or None) of a V3 node's linked Autogrow image inputs (``images.image_N``), in N order,
    as the nodes that take them sort them (nodes_qwen.py, nodes_ming.py, nodes_boogu.py, nodes_joyimage.py)."""
    names = [k for k in node.inputs if k.startswith(prefix) and isinstance(node.inputs[k], _Link)]
    names.sort(key=lambda k: int("".join(ch for ch in k.rsplit("_", 1)[-1] if ch.isdecimal()) or 0))
    return [(n, a.image_size(node.inputs[n])) for n in names]
