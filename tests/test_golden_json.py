"""The estimator's public answer does not change under a restructuring: every bundled example, test
fixture, community workflow and installed official template, under six launch configurations, prints
the same `--json` bytes as recorded in tests/golden/estimate_json.json (tests/golden_json.py).

A change that is meant to change an answer rewrites the record (`python3 tests/golden_json.py
--write`) in the same commit, so the diff shows which outputs moved."""
import json

import golden_json


def test_json_output_is_byte_identical_to_the_record():
    record = json.loads(golden_json.RECORD.read_text())
    current = golden_json.compute()
    comparable = [k for k, v in current.items() if k in record and record[k]["in"] == v["in"]]
    # the bundled examples and fixtures are always there; the corpus / templates when installed
    assert sum(1 for k in comparable if "|example_workflows/" in k) == 4 * len(golden_json.CONFIGS)
    assert len(comparable) >= 100
    differ = [k for k in comparable if record[k]["out"] != current[k]["out"]]
    assert not differ, (f"{len(differ)} of {len(comparable)} outputs changed, e.g. {differ[:5]}; "
                        "show one with: python3 tests/golden_json.py --show 'KEY'")


def test_the_record_catches_a_changed_answer():
    """The digest is of the whole output: one byte of difference in a real output is seen."""
    raw = (golden_json.REPO / "example_workflows" / "flux_dev_1024.json").read_bytes()
    out = golden_json.output("4090", raw)
    assert '"verdict"' in out
    data = json.loads(raw)
    for node in data["nodes"]:
        if node["type"] == "EmptySD3LatentImage" or "Latent" in node["type"]:
            node["widgets_values"][0] = node["widgets_values"][0] + 64
            break
    else:
        raise AssertionError("no latent node in the example")
    changed = golden_json.output("4090", json.dumps(data).encode())
    assert golden_json._sha(changed.encode()) != golden_json._sha(out.encode())
