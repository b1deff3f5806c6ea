"""A 2-D pool through the tt-mlir frontend (convert_conv.py `convert_pool`): its config
tensors, the halo's and the pool's own reader indices, in L1_SMALL on builds before
tt-mlir #6919 (2026-02-06) and in DRAM from it (devices/software.toml
`pool_config_tensors_in_dram`)."""

from __future__ import annotations

import pytest
from tt_mlir_support import BF16

from tileplan.errors import ModelError
from tileplan.importers.graph import GraphBuilder
from tileplan.model.ir import Program
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.frontends.tt_mlir import TtMlirOptions, lower
from tileplan.targets.tenstorrent.memory import BufferType
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.versions import Stack, software_at


def _pools() -> Program:
    """Two identical 2 x 2 / 2 max pools of one [1, 32, 64, 64] input, summed."""
    b = GraphBuilder("pools")
    x = b.input("x", (1, 32, 64, 64), "float")
    first = b.op("maxpool", [x], {"kernel": (2, 2), "strides": (2, 2), "pads": (0, 0, 0, 0)}, name="first")
    again = b.op("maxpool", [x], {"kernel": (2, 2), "strides": (2, 2), "pads": (0, 0, 0, 0)}, name="again")
    b.output(b.op("add", [first, again], name="sum"))
    return b.build().to_program(BF16, BF16, repeat=False)


def test_the_pool_config_placement_is_dated_by_tt_mlir_6919():
    assert not software_at("2026-02-05", Stack.TT_MLIR).pool_config_tensors_in_dram
    assert software_at("2026-02-06", Stack.TT_MLIR).pool_config_tensors_in_dram
    assert "#6919" in software_at("2026-02-06", Stack.TT_MLIR).source("pool_config_tensors_in_dram")


@pytest.mark.parametrize(("version", "where"), [("2025-12-18", BufferType.L1_SMALL), ("2026-03-20", BufferType.DRAM)])
def test_a_pool_plans_with_its_configs_where_the_build_puts_them(version, where):
    """Before #6919 the pools' configs go to L1_SMALL (the rule refused them before
    tileplan ported the pool's reader indices), from it to DRAM; the two pools are one
    cached program, so the first makes the halo's and the pool's config tensors, held to
    the end by the program cache, and the second none."""
    device = load_device("n150", version=version)
    program = lower(_pools(), TtMlirOptions(opt_level=0), device)
    pools = [op for op in program.ops if op.kind is OpKind.MAX_POOL2D]
    assert [op.attrs.config_tensors_in_dram for op in pools] == [where is BufferType.DRAM] * 2  # type: ignore[attr-defined]
    plan = plan_tt(program, device)
    assert plan.verdict.fits
    configs = [b for b in plan.buffers if "config" in b.name or "indices" in b.name]
    assert [(b.name, b.buffer_type, b.freed) for b in configs] == [
        (f"first.halo_{name}", where, None) for name in ("padding_config0", "padding_config1", "gather_config0",
                                                           "gather_config1")] + [
        ("first.pool_reader_indices", where, None)]


def test_the_legacy_config_format_before_june_2025_is_refused_in_one_line():
    """The 2025-04-25 build's sliding-window configs are tt-metal's format before PRs
    #23025 and #23825 (one reader index an output stick: 2,400 B a core for a UNet-stage
    pool where the ported format has 24), not ported: the pool is refused, naming the
    operation, the build and the builds that plan."""
    assert software_at("2025-06-29", Stack.TT_MLIR).sliding_window_format.value == "legacy"
    assert software_at("2025-06-30", Stack.TT_MLIR).sliding_window_format.value == "segments"
    with pytest.raises(ModelError, match=r"operation 0 \(first\).*2025-04-25 build ttnn.max_pool2d's "
                       r"sliding-window config tensors.*not modelled; builds from 2025-10 are"):
        lower(_pools(), TtMlirOptions(opt_level=0), load_device("n150", version="2025-04-25"))
