"""Hostile version-2 reports: whatever a field or a column entry holds, reading gives
a Report or one InputError, and checking what was read gives findings, never a crash;
a packed column can make the reader allocate no more than its file allows."""

from __future__ import annotations

import base64
import dataclasses
import json
import tracemalloc
import zlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tileplan.errors import InputError
from tileplan.kernel.options import Options
from tileplan.lowering.policy import policy
from tileplan.builtins import siglip
from tileplan.model.machine import IPU21
from tileplan.model.precision import from_option
from tileplan.planner.plan import plan_program
from tileplan.app.build import build_report
from tileplan.check.driver import check_report
from tileplan.report.format import from_json_text, report_bytes

from helpers import json_paths, json_values, reads_or_fails_in_one_line, with_field

_CFG = siglip.ViTConfig("tiny", hidden=32, mlp=64, heads=2, layers=2, image=12, patch=4)
_PLAN = plan_program(siglip.build_vit(_CFG, from_option("f8f143:-4")), dataclasses.replace(IPU21, tile_count=8),
                     policy("default"), Options())
PACKED = json.loads(report_bytes(build_report(_PLAN), 2))


def _plain(doc: dict) -> dict:
    """The same report with every packed column written as a plain list."""
    doc = json.loads(json.dumps(doc))

    def unpack(node: object) -> object:
        if isinstance(node, dict) and set(node) == {"length", "width", "delta", "zlib"}:
            arr = np.frombuffer(zlib.decompress(base64.b64decode(node["zlib"])), dtype=f"<i{node['width']}")
            arr = np.cumsum(arr.astype(np.int64)) if node["delta"] else arr.astype(np.int64)
            return [None if x == -1 else int(x) for x in arr.tolist()]
        if isinstance(node, dict):
            return {k: unpack(v) for k, v in node.items()}
        return node

    return unpack(doc)  # type: ignore[return-value]


PLAIN = _plain(PACKED)
PATHS = [("packed", p) for p in json_paths(PACKED, 2) if p] + [("plain", p) for p in json_paths(PLAIN, 3) if p]

def test_both_forms_read_to_the_same_report_and_pass_check():
    a, b = from_json_text(json.dumps(PACKED)), from_json_text(json.dumps(PLAIN))
    assert a.values == b.values and list(a.steps) == list(b.steps)
    assert check_report(a).consistent and check_report(b).consistent


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), json_values)
def test_any_field_or_entry_replaced_reads_or_fails_in_one_line(where, value):
    form, path = where
    reads_or_fails_in_one_line(json.dumps(with_field(PACKED if form == "packed" else PLAIN, path, value)))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([p for p in json_paths(PACKED, 2) if p and p[-1] in ("length", "width", "zlib", "count")]),
       st.integers(-3, 1 << 40) | st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()))
def test_packed_column_fields(path, value):
    try:
        report = from_json_text(json.dumps(with_field(PACKED, path, value)), "fuzz.json")
    except InputError as e:
        assert "\n" not in str(e)
        return
    check_report(report)


def test_claimed_rows_cost_no_memory_until_the_data_is_there():
    doc = json.loads(json.dumps(PACKED))
    count = 1 << 26  # half a GiB of int64 claimed, a few bytes of zlib given
    doc["timeline"]["values"]["count"] = count
    doc["timeline"]["values"]["id"] = {"length": count, "width": 8, "delta": True,
                                       "zlib": base64.b64encode(zlib.compress(bytes(64))).decode()}
    tracemalloc.start()
    try:
        try:
            from_json_text(json.dumps(doc), "claim.json")
            raise AssertionError("read a report whose columns do not hold their rows")
        except InputError as e:
            assert "\n" not in str(e)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak
