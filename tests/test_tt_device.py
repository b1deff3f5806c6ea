"""Tenstorrent devices (tileplan.targets.tenstorrent.device) against the bank sizes
tt-metal's errors print (TENSTORRENT-NOTES.md (a), (b), (h) H4) and the allocator's
config arithmetic (l1_banking_allocator.cpp generate_config, allocator.cpp
init_one_bank_per_channel)."""

from __future__ import annotations

import dataclasses
import tomllib
from importlib import resources

import pytest

from tileplan.errors import InputError
from tileplan.targets.tenstorrent.device import (
    MACHINES, Arch, Grid, load_device, observed_grids, versions, with_parameters)
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.messages import RESERVED_SIZE
from tileplan.targets.tenstorrent.versions import (
    CoreRangeForm, DispatchCoreType, OomForm, Stack, TraceRule, software_at)


def test_n150_on_tt_mlir_2026_has_the_bank_of_tt_mlir_8044() -> None:
    # 1,499,136 - 103,712 - 65,536 = 1,329,888 (tt-mlir #8044, #8110), ETH dispatch: 8 x 9
    d = load_device("n150", stack=Stack.TT_MLIR, version="2026-04-21")
    assert (d.l1_size, d.l1_unreserved_base, d.l1_small_size) == (1_499_136, 103_712, 65_536)
    assert d.l1_bank_size == 1_329_888 == 1_499_136 - 103_712 - 65_536
    assert d.dispatch_core_type is DispatchCoreType.ETH and d.l1_banks == 72
    assert d.l1_small_bank_size == 65_536 and d.l1_small_base == 103_712 + 1_329_888
    assert d.l1_small_base + d.l1_small_bank_size == d.l1_size
    # DRAM: 1 GiB - 1,920,032 (tt-xla #4056, #4762)
    assert (d.dram_banks, d.dram_bank_size) == (12, 1_071_821_792)


@pytest.mark.parametrize(("machine", "version", "small", "bank"), [
    # tt-xla test configs: bevdepth (2025-10-03, 32 KiB), 2025-10-08 and -10 (32 KiB),
    # faster_rcnn (2025-11-06, 64 KiB), bevformer (2025-11-07, 32 KiB), segformer
    # (2025-12-18, 64 KiB); Blackhole tt-mlir #5343 (2025-10-14, 32 KiB)
    ("n150", "2025-10-03", None, 1_366_016), ("n150", "2025-10-08", None, 1_364_928),
    ("n150", "2025-10-10", None, 1_366_560), ("n150", "2025-11-06", None, 1_331_936),
    ("n150", "2025-11-06", 32_768, 1_364_704), ("n150", "2025-12-18", None, 1_331_392),
    ("p150", "2025-10-14", None, 1_437_056)])
def test_published_l1_bank_sizes_rederive(machine: str, version: str, small: int | None, bank: int) -> None:
    d = load_device(machine, version=version, l1_small_size=small)
    assert d.l1_bank_size == bank == d.l1_size - d.l1_unreserved_base - d.l1_small_bank_size


def test_tt_mlir_defaults_l1_small_to_32_kib_before_pr_5557_and_64_kib_after() -> None:
    assert load_device("n150", version="2025-10-29").l1_small_size == 32_768
    assert load_device("n150", version="2025-11-06").l1_small_size == 65_536  # after 2025-11-04
    assert load_device("n150", stack=Stack.TT_METAL).l1_small_size == 0
    assert load_device("n150", stack=Stack.TT_METAL).trace_region_size == 0


@pytest.mark.parametrize(("machine", "stack", "dispatch", "grid", "banks"), [
    ("n150", Stack.TT_MLIR, None, (8, 9), 72), ("n150", Stack.TT_METAL, None, (8, 8), 64),
    ("n300", Stack.TT_MLIR, None, (8, 8), 64), ("n300", Stack.TT_METAL, None, (8, 7), 56),
    ("n300", Stack.TT_METAL, DispatchCoreType.ETH, (8, 8), 64),
    ("p150", Stack.TT_MLIR, None, (13, 10), 130), ("p100", Stack.TT_METAL, None, (11, 10), 110)])
def test_worker_grids_per_dispatch_mode(machine: str, stack: Stack, dispatch: DispatchCoreType | None,
                                        grid: tuple[int, int], banks: int) -> None:
    d = load_device(machine, stack=stack, dispatch_core_type=dispatch)
    assert (d.worker_grid.columns, d.worker_grid.rows) == grid
    assert d.l1_banks == banks == d.banks(BufferType.L1)


def test_blackhole_facts() -> None:
    p150, p100 = load_device("p150"), load_device("p100")
    assert p150.arch is Arch.BLACKHOLE and p150.l1_size == 1_572_864
    assert (p150.l1_alignment, p150.dram_alignment) == (16, 64)
    assert (p150.dram_banks, p100.dram_banks) == (8, 7)
    # the 2026 build: 4,278,190,080 - 5,848,704 (tt-xla #6033); 2025: - 64
    assert p150.dram_bank_size == 4_272_341_376
    assert load_device("p150", version="2025-10-14").dram_bank_size == 4_278_190_016
    # tt-mlir's runtime prefers ETH dispatch but Blackhole has none: worker dispatch
    assert p150.dispatch_core_type is DispatchCoreType.WORKER


def test_harvested_p150_grids_are_listed_with_their_sources() -> None:
    grids = observed_grids("p150")
    assert [g for g, _ in grids] == [Grid(12, 10), Grid(11, 10)]
    assert all(load_device("p150", worker_grid=g).l1_banks in (120, 110) for g, _ in grids)
    assert "graph_l1_traces" in grids[1][1] and observed_grids("n150") == ()


def test_n300_has_two_chips() -> None:
    assert load_device("n300").chips == 2 and load_device("n150").chips == 1


def test_l1_small_bank_is_l1_small_size_tt_metal_54834() -> None:
    # "bank size is 1152 B" with l1_small_size 1152 on Blackhole (a multiple of 64)
    d = load_device("p150", stack=Stack.TT_METAL, l1_small_size=1152)
    assert d.l1_small_bank_size == 1152
    assert d.banks(BufferType.L1_SMALL) == d.l1_banks
    no_small = load_device("p150", stack=Stack.TT_METAL)  # tt-metal's default l1_small_size 0: banks of 0 B
    assert no_small.banks(BufferType.L1_SMALL) == no_small.l1_banks and no_small.l1_small_bank_size == 0


def test_base_and_l1_small_are_aligned_to_the_dram_alignment() -> None:
    # generate_config aligns l1_small_size to the DRAM alignment: 1,000 -> 1,024 on n150
    d = load_device("n150", version="2026-04-21", l1_small_size=1000)
    assert d.l1_small_bank_size == 1024 and d.l1_bank_size == 1_499_136 - 103_712 - 1024


def test_every_value_carries_its_source() -> None:
    d = load_device("n150", version="2026-04-21")
    for name in ("l1_size", "l1_alignment", "dram_alignment", "dram_view_size", "dram_banks", "tensix_grid",
                 "worker_grid", "chips", "l1_unreserved_base", "dram_unreserved_base", "l1_small_size",
                 "trace_region_size", "dispatch_core_type"):
        assert d.source(name), name
    assert "tt-mlir #8044" in d.source("l1_unreserved_base")
    assert load_device("n150", l1_small_size=0).source("l1_small_size") == "given"


def test_every_data_file_value_has_a_source_beside_it() -> None:
    root = resources.files("tileplan.targets.tenstorrent").joinpath("devices")
    for name in (*MACHINES, "wormhole_b0", "blackhole"):
        data = tomllib.loads(root.joinpath(f"{name}.toml").read_text())
        tables = [data, *[v for v in data.values() if isinstance(v, dict)],
                  *[g for g in data.get("worker_grid", {}).values()], *data.get("build", [])]
        for table in tables:
            for key, value in table.items():
                if isinstance(value, int) and not isinstance(value, bool) and key not in ("schema",):
                    has = any(k.startswith(key) and k.endswith("source") for k in table) or "source" in table
                    assert has, f"{name}.toml: {key} has no source"


def test_versions_list_oldest_first_and_the_latest_is_the_default() -> None:
    assert versions("n150") == ("2025-04-25", "2025-10-03", "2025-10-08", "2025-10-10", "2025-10-29", "2025-11-06",
                                "2025-12-18", "2026-03-20", "2026-04-21", "2026-07-15")
    assert load_device("n150").version == "2026-07-15"
    assert load_device("p150").version == versions("p150")[-1] == "2026-08-30"
    # a prefix takes the latest build it names
    assert load_device("n150", version="2025-10").version == "2025-10-29"
    assert load_device("n150", version="2026").version == "2026-07-15"


def test_the_latest_wormhole_build() -> None:
    # tt-mlir's 2026-07-15 system descriptor and the vLLM DRAM banks of tt-xla #5355, #5535
    d = load_device("n150")
    assert (d.l1_unreserved_base, d.l1_bank_size) == (104_224, 1_499_136 - 104_224 - 65_536)
    assert d.dram_bank_size == 1_070_773_184
    assert d.software.trace_rule is TraceRule.TOTAL_PAGE_ALIGNED


# -- the software timeline --------------------------------------------------------------

def test_the_timeline_picks_each_builds_forms() -> None:
    assert software_at("2025-04-08", Stack.TT_METAL).oom_message is OomForm.OLDEST
    assert software_at("2025-10-03", Stack.TT_METAL).oom_message is OomForm.ONLY
    assert software_at("2026-04-21", Stack.TT_METAL).oom_message is OomForm.STATS
    assert software_at("2026-04-21", Stack.TT_METAL).core_range_text is CoreRangeForm.XY
    assert software_at("2026-08-30", Stack.TT_METAL).core_range_text is CoreRangeForm.DASH
    assert software_at("2026-06-14", Stack.TT_METAL).trace_rule is TraceRule.PER_BANK
    assert software_at("2026-06-15", Stack.TT_METAL).trace_rule is TraceRule.TOTAL_DRAM_ALIGNED
    assert software_at("2026-06-24", Stack.TT_METAL).trace_rule is TraceRule.TOTAL_PAGE_ALIGNED
    with pytest.raises(InputError, match="pick a later version"):
        software_at("2020-01-01", Stack.TT_MLIR)


# -- bad input: one line, naming the place and the rule ---------------------------------

def test_an_unknown_machine_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="unknown machine 'n151'; expected one of n150, n300, t3k, p100, p150, p150x4"):
        load_device("n151")


def test_an_unknown_version_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"version '2024-01' of n150 \(wormhole_b0\): expected one of 2025-04-25, "):
        load_device("n150", version="2024-01")


def test_l1_small_size_above_the_bank_is_tt_metals_reserved_size_error() -> None:
    # the L1 above l1_unreserved_base 103,712 is 1,395,424 B on n150
    with pytest.raises(InputError) as caught:
        load_device("n150", version="2026-04-21", l1_small_size=1_395_424)
    text = str(caught.value)
    assert RESERVED_SIZE in text and "1,395,424" in text and "\n" not in text
    assert load_device("n150", version="2026-04-21", l1_small_size=1_395_424 - 32).l1_bank_size == 32


@pytest.mark.parametrize("key", ["l1_small_size", "trace_region_size"])
def test_negative_sizes_are_refused(key: str) -> None:
    with pytest.raises(InputError, match=f"{key} -1: expected a whole number of bytes >= 0"):
        load_device("n150", **{key: -1})


def test_an_invalid_bank_count_is_tt_metals_error() -> None:
    with pytest.raises(InputError, match="Invalid number of memory banks 49 for L1. Num banks must be power of 2 or "
                                         "have a dedicated modulo implementation"):
        load_device("n150", worker_grid=Grid(7, 7))
    assert load_device("p150", worker_grid=Grid(11, 10)).l1_banks == 110  # p150b, in the list


def test_a_worker_grid_beyond_the_tensix_grid_is_refused() -> None:
    with pytest.raises(InputError, match="expected within the 8x10 Tensix grid"):
        load_device("n150", worker_grid=Grid(16, 4))


def test_eth_dispatch_on_blackhole_is_refused_when_asked_for() -> None:
    with pytest.raises(InputError, match="dispatch_core_type eth on p150: blackhole dispatches on worker cores"):
        load_device("p150", dispatch_core_type=DispatchCoreType.ETH)


def test_a_trace_region_as_large_as_a_dram_bank_is_refused() -> None:
    # 1,071,821,792 aligned to 32 x 12 = 384 (2026 builds): 1,071,821,952
    with pytest.raises(InputError, match="takes 1,071,821,952 B of every DRAM bank"):
        load_device("n150", version="2026-04-21", trace_region_size=1_071_821_792)


def test_with_parameters_checks_again() -> None:
    d = load_device("n150", version="2026-04-21")
    assert with_parameters(d, l1_small_size=0).l1_bank_size == 1_499_136 - 103_712
    with pytest.raises(InputError, match="Reserved size must be less than bank size"):
        with_parameters(d, l1_small_size=2_000_000)
    assert dataclasses.replace(d, trace_region_size=0) == with_parameters(d, trace_region_size=0)


@pytest.mark.parametrize("machine", ["n150", "p150"])
def test_every_known_build_has_every_knob_on_both_stacks(machine: str) -> None:
    """devices/software.toml: each knob has a value on every build date the device files
    list (a knob whose first change came after a build made that build unplannable:
    T3's 2025-04-25 build and the reader-indices rule)."""
    for version in versions(machine):
        for stack in Stack:
            assert load_device(machine, stack=stack, version=version).software.date == version
