"""The live-tensor meter the pack traces share (trace_dragnuwa.py, trace_instantir.py, trace_groundingdino.py).

``LiveTensors()`` is a TorchDispatchMode: inside ``with LiveTensors() as meter:`` every tensor an op creates is
counted by its storage's bytes until that storage is freed (an output that aliases an input is not new storage);
``meter.peak`` is the most alive at once, ``meter.current`` what is alive now. Tensors made before the block (the
weights) are not counted. Works on real, fake or meta tensors alike (torch only: no GPU)."""
from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class LiveTensors(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0

    def _free(self, key):
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        returns = func._schema.returns
        for i, o in enumerate(out if isinstance(out, (tuple, list)) else [out]):
            if i < len(returns) and returns[i].alias_info is not None or not isinstance(o, torch.Tensor):
                continue
            storage = o.untyped_storage()
            key = id(storage)
            if key not in self.live:
                self.live[key] = storage.nbytes()
                self.current += storage.nbytes()
                weakref.finalize(storage, self._free, key)
        self.peak = max(self.peak, self.current)
        return out
