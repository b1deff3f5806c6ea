"""What would make a Tenstorrent plan fit (app/tenstorrent/whatif.py): each row a full
re-plan with its command, the searches not assuming monotone memory, the l1_small_size
window, an output moved to DRAM, the placement solver's note on fragmentation, and for a
fit what reproduces it."""

from __future__ import annotations

import pytest

from tileplan.app.tenstorrent.request import tt_request
from tileplan.app.tenstorrent.run import plan_report
from tileplan.app.whatif import largest_found
from tileplan.errors import InputError

from tt_frontend_support import hand_frontend


@pytest.fixture(autouse=True)
def hand():
    with hand_frontend() as fe:
        yield fe


def rows(model: str, **given: object) -> dict[str, object]:
    version = given.pop("version", None)
    small = given.pop("l1_small_size", None)
    report = plan_report(tt_request(model, "n150", "hand", given, version=version,  # type: ignore[arg-type]
                                    l1_small_size=small))  # type: ignore[arg-type]
    assert report.what_if is not None
    return {r.knob: r for r in report.what_if.rows} | {"notes": report.what_if.notes, "report": report}


def test_the_largest_chunk_that_fits_is_found_from_above_and_below() -> None:
    for chunk in (512, 32768):
        found = rows("chunked", prefill_chunk=chunk)["prefill_chunk"]
        assert found.value == "8192 (the largest that fits; every value up to 32768 tried)"  # type: ignore[attr-defined]
        assert found.fits and "--prefill-chunk 8192" in found.command  # type: ignore[attr-defined]


def test_the_search_does_not_assume_memory_grows_with_the_value() -> None:
    """A fit past a failure is found: 1..3 fit, 4 does not, 5 and 6 fit again."""
    fits = {1: True, 2: True, 3: True, 4: False, 5: True, 6: True, 7: False, 8: False, 9: False}
    found = largest_found(lambda n: fits[n], 1, 9, scan=2)
    assert (found.best, found.upto) == (6, 8)


def test_each_other_weight_type_is_one_row() -> None:
    got = rows("chunked", prefill_chunk=16384)
    assert got["weights"].value == "bfp8" and got["weights"].fits is False  # type: ignore[attr-defined]
    assert got["weights"].kind == "capacity"  # type: ignore[attr-defined]


def test_the_l1_small_size_window_is_planned_on_a_ladder() -> None:
    """40,960 B of L1_SMALL config a bank: 49,152 B and up fit, as far as the ladder goes."""
    got = rows("small", l1_small_size=32768)
    row = got["l1_small_size"]
    assert row.value.startswith("49152..524288 fit (planned 0, 8192, 16384, 24576, 32768")  # type: ignore[attr-defined]
    assert "--l1-small-size 49152" in row.command  # type: ignore[attr-defined]


def test_the_l1_activation_responsible_is_moved_to_dram() -> None:
    got = rows("activation_clash", version="2026-04-21")
    row = got["to_dram"]
    assert row.value == "big.relu (big.relu, 1,329,152 B a bank of L1)"  # type: ignore[attr-defined]
    assert row.fits and row.command.endswith("--to-dram big.relu")  # type: ignore[attr-defined]


def test_a_fragmentation_failure_says_whether_another_order_would_fit() -> None:
    (note,) = rows("falcon_8044", version="2026-04-21")["notes"]  # type: ignore[misc]
    assert note.startswith("a different order would fit: the placement solver places the 3 L1 buffers and the "
                           "request within the 1,329,888-B bank")


def test_a_fit_says_what_reproduces_it() -> None:
    report = rows("mlp")["report"]
    assert report.reproduce.device_parameters == (("l1_small_size", 65536), ("trace_region_size", 0))  # type: ignore
    assert report.reproduce.settings == ("dispatch_core_type=eth", "MAX_PREFILL_CHUNK_SIZE=2")  # type: ignore


def test_an_unknown_operation_to_move_is_one_line() -> None:
    with pytest.raises(InputError, match=r"^to_dram='nope': no operation of mlp has that name \(some that do: "
                                         r"mlp.matmul, mlp.relu\)$"):
        tt_request("mlp", "n150", "hand", {}, to_dram=("nope",)).plan()


def test_a_trace_region_too_small_is_re_planned_at_the_traces_size() -> None:
    report = plan_report(tt_request("traced", "n150", "hand", {}, trace_region_size=2048))
    assert report.what_if is not None
    (row,) = [r for r in report.what_if.rows if r.knob == "trace_region_size"]
    assert row.value == "5120" and row.fits and row.command.endswith("--trace-region-size 5120")
