"""One way a result dataclass becomes the JSON the command line prints (`--json` is a public interface):
its fields in declared order, tuples as lists, nested results by their own to_dict. A class lists the
fields that are bookkeeping, not output (``_json_skip``), and converts a field that is printed in another
shape (``_json_convert``)."""
from __future__ import annotations

from dataclasses import fields
from typing import Callable, ClassVar, Mapping


def plain(value):
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


class JsonFields:
    """Mixin for frozen dataclasses: ``to_dict()`` from the fields."""

    _json_skip: ClassVar[tuple[str, ...]] = ()
    _json_convert: ClassVar[Mapping[str, Callable]] = {}

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            if f.name in self._json_skip:
                continue
            value = getattr(self, f.name)
            conv = self._json_convert.get(f.name)
            out[f.name] = conv(value) if conv is not None else plain(value)
        return out
