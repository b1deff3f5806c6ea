"""The Tenstorrent planner (targets/tenstorrent/plan.py) on small hand-built programs:
tt-metal's allocator walked over the uploads and each operation's buffers, circular
buffers and frees, every address a first-fit free list gives, the lifetimes in events."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.app.tenstorrent.build import build_tt_report
from tileplan.check.tenstorrent import check_tt_report
from tileplan.report.tt_report import read_tt_report
from tileplan.model.role import Role
from tileplan.targets.tenstorrent.device import load_device
from tileplan.targets.tenstorrent.memory import DRAM_INTERLEAVED, L1_INTERLEAVED, BufferType
from tileplan.targets.tenstorrent.ops.base import OutputRequest
from tileplan.targets.tenstorrent.ops.kinds import OpKind
from tileplan.targets.tenstorrent.plan import plan_tt
from tileplan.targets.tenstorrent.planned import UPLOAD, BufferUse, TtPlan

from tt_plan_support import Builder, l1_tiles_per_bank, mlp, reduce_both, tile, view_then_relu

N150 = load_device("n150", version="2026-04-21")


def no_two_live_buffers_overlap(plan: TtPlan) -> None:
    """At every event, the live buffers of one type occupy disjoint ranges."""
    for event in range(plan.events):
        for kind in BufferType:
            live = sorted((b.address, b.end) for b in plan.buffers if b.buffer_type is kind and b.allocated <= event
                          and (b.freed is None or event < b.freed))
            for (_, end), (start, _) in zip(live, live[1:]):
                assert end <= start, (event, kind, live)


def test_uploads_then_each_operation_allocate_and_free_in_order() -> None:
    plan = plan_tt(mlp().program(), N150)
    assert plan.fits and plan.verdict.message is None
    x, w, h, r = plan.buffers
    # DRAM bottom-up from dram_unreserved_base, 1,024 tiles over 12 banks: 86 tiles a bank
    assert (x.buffer_type, x.address, x.bytes_per_bank) == (BufferType.DRAM, N150.dram_unreserved_base, 86 * 2048)
    assert w.address == x.address + 86 * 2048 and w.use is BufferUse.PARAMETER and w.first_op == UPLOAD
    # L1 top-down: 1,024 tiles over 72 banks is 15 tiles a bank, at the top of the L1 bank
    top = N150.l1_base + N150.l1_bank_size
    assert (h.buffer_type, h.bytes_per_bank, h.address) == (BufferType.L1, 15 * 2048, top - 15 * 2048)
    assert r.address == h.address - 15 * 2048
    # events: x 0, w 1, h 2, x freed 3, r 4, h freed 5
    assert [(b.allocated, b.freed) for b in plan.buffers] == [(0, 3), (1, None), (2, 5), (4, None)]
    assert (x.last_op, h.last_op, r.last_op) == (0, 1, None)
    assert plan.events == 6
    mm, relu = plan.programs
    assert (mm.op, mm.event, mm.lowest_l1, mm.l1_buffers) == (0, 3, h.address, (2,))
    assert (relu.event, relu.lowest_l1, relu.l1_buffers) == (5, r.address, (2, 3))
    assert relu.cb_bytes == 8192 and relu.cb_region_end == N150.l1_base + 8192
    assert relu.l1_allocated == 2 * 15 * 2048 and relu.dram_allocated == 86 * 2048  # x freed
    assert relu.l1_in_use == 8192 + 2 * 15 * 2048
    no_two_live_buffers_overlap(plan)


def test_the_matmul_searches_its_blocks_below_the_lowest_l1_buffer() -> None:
    """matmul_utilities.cpp get_max_l1_space: the same matmul takes smaller blocks when an
    L1 tensor sits low in L1 (the 2048^2 DRAM matmul's 655,360 B of CBs, H2)."""
    def matmul_cbs(l1_tiles: int) -> int:
        b = Builder()
        if l1_tiles:
            b.upload("resident", l1_tiles_per_bank(l1_tiles))
        a = b.upload("a", tile((2048, 2048)), Role.INPUT)
        w = b.upload("w", tile((2048, 2048)))
        b.op(OpKind.MATMUL, "mm", (a, w))
        plan = plan_tt(b.program(), N150)
        assert plan.fits, plan.verdict.message
        return plan.programs[0].cb_bytes
    assert matmul_cbs(0) == 655_360
    assert matmul_cbs(500) < 655_360 - 2 * 2048 * 8


def test_an_operations_intermediate_lives_between_its_programs() -> None:
    """A reduction over W and H: W into `reduced_w` (program 0), H from it (program 1);
    the intermediate is allocated before program 0, freed after program 1; the output
    before program 1."""
    plan = plan_tt(reduce_both().program(), N150)
    _, mid, out = plan.buffers
    assert mid.use is BufferUse.OP_INTERMEDIATE and mid.name == "sum.reduced_w" and mid.tensor is None
    assert out.use is BufferUse.ACTIVATION and out.name == "sum" and out.tensor == 1
    p0, p1 = plan.programs
    assert mid.allocated < p0.event <= out.allocated < p1.event <= mid.freed  # type: ignore[operator]
    assert p0.l1_buffers == (1,) and p1.l1_buffers == (1, 2)
    assert plan.ops[0].programs == (0, 1)


def test_a_view_names_its_inputs_buffer_until_both_are_freed() -> None:
    plan = plan_tt(view_then_relu().program(), N150)
    assert len(plan.buffers) == 2 and plan.ops[0].programs == ()
    x_buf, relu = plan.buffers
    assert x_buf.freed is not None and x_buf.last_op == 1  # freed with the view, not with x
    assert plan.programs[0].l1_buffers == (0, 1)
    no_two_live_buffers_overlap(plan)


@st.composite
def programs(draw: st.DrawFn) -> Builder:
    """Uploads in L1 or DRAM, then unary operations writing L1 or DRAM, each freeing a
    live activation now and then: first fit's holes, clashes and out-of-memories."""
    b = Builder("random")
    live: list[int] = []
    for k in range(draw(st.integers(1, 4))):
        tiles = draw(st.one_of(st.integers(1, 300), st.integers(600, 649)))
        memory = draw(st.sampled_from([L1_INTERLEAVED, DRAM_INTERLEAVED]))
        live.append(b.upload(f"w{k}", tile((1, 1, 32 * tiles, 32 * 72), memory), Role.INPUT))
    for k in range(draw(st.integers(1, 8))):
        src = draw(st.sampled_from(live))
        out = OutputRequest(draw(st.sampled_from([BufferType.L1, BufferType.DRAM])))
        free = tuple(t for t in live if t == src and draw(st.booleans()))
        made = b.op(OpKind.RELU, f"op{k}", (src,), out, free=free)
        live = [t for t in live if t not in free] + [made]
    return b


@settings(max_examples=60, deadline=None)
@given(programs())
def test_every_random_program_plans_without_overlap_and_its_report_re_derives(b: Builder) -> None:
    """Two implementations agree: the planner's addresses, program figures and verdict,
    and check's first fit and rules, over random programs whatever their verdict."""
    plan = plan_tt(b.program(), N150)
    no_two_live_buffers_overlap(plan)
    report = read_tt_report(json.loads(build_tt_report(plan, "random", "tt-mlir", ()).to_bytes()))
    result = check_tt_report(report)
    assert result.consistent, [f.to_text() for f in result.findings]
