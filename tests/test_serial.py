"""The one serializer of result dataclasses (nodes/estimator/serial.py): fields in declared order, the
bookkeeping fields left out, a converted field in its printed shape. The keys below are the public
`--json` interface of each remedy type (add fields, never rename or drop)."""
from vram_budget.nodes.estimator.plan.advice import Remedy
from vram_budget.nodes.estimator.machine.host_memory import HostRemedy
from vram_budget.nodes.estimator.plan.oom import Remedy as OomRemedy


def test_the_remedy_ladders_json_keys_and_what_it_leaves_out():
    r = Remedy(1, "precision", "T5 fp8", "d", 123, "quality", new_peak_bytes=9, fixes=True, sub_rank=2, runs=True,
               cuts=((0, 5),), min_cuts=((0, 4),))
    assert list(r.to_dict()) == ["rank", "kind", "title", "detail", "saving_bytes", "cost", "new_peak_bytes", "fixes",
                                 "runs"]
    assert r.to_dict()["saving_bytes"] == 123 and "cuts" not in r.to_dict()


def test_the_ram_fix_and_the_oom_fix_keep_their_shapes():
    h = HostRemedy("cache_none", "t", "d", 7, True, "speed")
    assert h.to_dict() == {"kind": "cache_none", "title": "t", "detail": "d", "saving_bytes": 7, "fixes": True,
                           "cost": "speed"}
    o = OomRemedy("expandable_segments", "t", "d", flag="PYTORCH_CUDA_ALLOC_CONF", where=(("portable", "run.bat"),))
    assert o.to_dict()["where"] == {"portable": "run.bat"}
    assert OomRemedy("k", "t", "d").to_dict()["where"] is None
