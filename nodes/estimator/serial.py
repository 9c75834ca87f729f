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


class Remedy(JsonFields):
    """The base of every fix the pack proposes (the workflow's ladder, system RAM, an out-of-memory message,
    LLM serving, training): whatever its --json fields are called, each answers the same three questions.
    A subclass names its fields in ``_remedy_fields``: (headline, bytes saved or None, cost or None)."""

    _remedy_fields: ClassVar[tuple[str, str | None, str | None]] = ("title", "saving_bytes", "cost")

    def headline(self) -> str:
        """The fix in one line of user words."""
        return str(getattr(self, self._remedy_fields[0]))

    def bytes_saved(self) -> int | None:
        """Bytes it frees (on the card, or in RAM for a host fix); None when the fix is not a size."""
        name = self._remedy_fields[1]
        return None if name is None else int(getattr(self, name))

    def costs(self) -> str:
        """What it costs: quality, speed, money or nothing ("" when the fix does not say)."""
        name = self._remedy_fields[2]
        return "" if name is None else str(getattr(self, name) or "")
