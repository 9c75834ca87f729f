"""Issue 34: one Remedy base. Every fix the pack proposes (workflow ladder, system RAM, OOM message, LLM serving,
training) derives from serial.Remedy and answers headline / bytes_saved / costs from its own fields, while its
--json fields stay as they were."""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

from vram_budget.nodes import estimator
from vram_budget.nodes.estimator.serial import Remedy


def _remedy_classes():
    found = {}
    for info in pkgutil.walk_packages(estimator.__path__, estimator.__name__ + "."):
        if info.name.endswith("__main__"):
            continue
        mod = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(mod, inspect.isclass):
            if "Remedy" in name and cls.__module__ == mod.__name__ and dataclasses.is_dataclass(cls):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


CLASSES = _remedy_classes()
# the --json fields of each (a public interface: add, never rename or drop)
JSON_FIELDS = {
    "plan.advice.Remedy": ["rank", "kind", "title", "detail", "saving_bytes", "cost", "new_peak_bytes", "fixes",
                           "runs"],
    "machine.host_memory.HostRemedy": ["kind", "title", "detail", "saving_bytes", "fixes", "cost"],
    "plan.oom.Remedy": ["key", "title", "detail", "flag", "where"],
    "llm.training.Remedy": ["what", "peak_high", "saving", "cost"],
    "llm.serve.ServeRemedy": ["what", "per_gpu_high", "verdict", "cost"],
}


def test_every_remedy_class_is_found_and_named_here():
    short = {k.replace(estimator.__name__ + ".", "") for k in CLASSES}
    assert short == set(JSON_FIELDS)


@pytest.mark.parametrize("path", sorted(CLASSES))
def test_each_remedy_answers_the_three_questions_from_its_own_fields(path):
    cls = CLASSES[path]
    assert issubclass(cls, Remedy)
    values = {}
    for i, f in enumerate(dataclasses.fields(cls)):
        values[f.name] = {"int": 1000 + i, "bool": True}.get(str(f.type).split(" ")[0].split("|")[0].strip(),
                                                            f"<{f.name}>")
    for name in ("saving_bytes", "saving", "peak_high", "per_gpu_high", "rank", "sub_rank"):
        if name in values:
            values[name] = 7 * (1 + list(values).index(name))
    r = cls(**{k: v for k, v in values.items() if k not in ("cuts", "min_cuts", "where")})
    head, saved, cost = cls._remedy_fields
    assert r.headline() == values[head] and r.headline().startswith("<")
    assert r.bytes_saved() == (None if saved is None else values[saved])
    assert r.costs() == ("" if cost is None else values[cost])
    assert list(r.to_dict()) == JSON_FIELDS[path.replace(estimator.__name__ + ".", "")]
