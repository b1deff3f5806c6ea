"""`tileplan.kernel.ampcycles`: PopLibs' AMP vertex cycle estimates, vectorised.

Held against `poplin_amp`, a transcription of lib/poplin/PerformanceEstimation.hpp's
functions with loops over the workers and their worklist items, on every vertex kind
the planner meets (half activations with float or half partials, float, FP8), and
against hand computations of the defaults the issue names: 4 cycles a position a
worker for half activations (8 for float), the weights loaded at 8 B a cycle
(`use128BitConvUnitLoad` off), the zeroing pass and the retention savings.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import poplin_amp
from tileplan.kernel.ampcycles import Acts, AmpVertex, cycles_1x1, cycles_nx1, inner_1x1, partial_calc_cycles
from tileplan.model.machine import IPU21, MK2
from tileplan.model.precision import Precision

VERTICES = {
    "half-float": AmpVertex.of(MK2.amp_for(Precision("F16"))),
    "half-half": AmpVertex.of(MK2.amp_for(Precision("F16"), "F16")),
    "float": AmpVertex.of(MK2.amp_for(Precision("F32"))),
    "quarter": AmpVertex.of(IPU21.amp_for(Precision("F8F143", -4))),
}


def _args(v: AmpVertex) -> tuple[str, bool, int, int]:
    return v.acts.value, v.float_partials, v.conv_units, v.weights_per_conv_unit


def test_the_vertices_of_each_precision():
    # numConvUnits: 8 for half with float partials, 16 with half partials (the dual
    # AMP), 8 for float, 16 for FP8; 32 B of weights a conv unit, loaded 8 B a cycle
    assert [(v.acts, v.float_partials, v.conv_units, v.weight_loads) for v in VERTICES.values()] == [
        (Acts.HALF, True, 8, 32), (Acts.HALF, False, 16, 64), (Acts.FLOAT, True, 8, 32), (Acts.QUARTER, False, 16, 64)]
    assert VERTICES["half-float"].retention == VERTICES["half-half"].retention == (7, 3)
    assert VERTICES["float"].retention == (0, 0)


def test_a_position_costs_4_cycles_a_worker_for_half_activations_and_8_for_float_12_when_zeroing():
    # six more positions give each of the six workers one more: coreCycles x 6; float
    # activations zero their float partials in the same loop, 4 cycles a position more
    # on the zeroing pass (zeroCyclesPerGroup): 12
    for name, core, zeroing_core in (("half-float", 4, 4), ("half-half", 4, 4), ("float", 8, 12),
                                     ("quarter", 4, 4)):
        v = VERTICES[name]
        for zeroing, cost in ((True, zeroing_core), (False, core)):
            assert int(inner_1x1(v, 606, zeroing)) - int(inner_1x1(v, 600, zeroing)) == 6 * cost, name


def test_the_worked_example_of_the_module():
    # ResNet-50's 1x1 64 -> 256 convolution's tile of 196 positions, 4 input and 32
    # output groups of a group, half activations, float partials
    v = VERTICES["half-float"]
    assert (int(inner_1x1(v, 196, True)), int(inner_1x1(v, 196, False))) == (900, 906)
    assert int(cycles_1x1(v, 196, 1, 4, 32)) == 123287
    assert int(cycles_1x1(v, 196, 1, 4, 32)) == poplin_amp.cycles_1x1(*_args(v), 196, 1, 4, 32)


def test_a_block_of_one_pass_costs_its_weight_loads_at_the_default_rate():
    # one more output group costs 19 + 6 + loads + the inner loop on each later input
    # group and 19 - 1 + 7 + loads + the inner loop (with zeroing) on the first: with 8
    # conv units and 128-bit loads off, 32 cycles of loads each
    v = VERTICES["half-float"]
    extra = int(cycles_1x1(v, 60, 1, 2, 2)) - int(cycles_1x1(v, 60, 1, 2, 1))
    assert extra == (19 + 6 + 32 + int(inner_1x1(v, 60, False))) + (18 + 7 + 32 + int(inner_1x1(v, 60, True)))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(VERTICES)), st.integers(1, 3000), st.integers(1, 4), st.integers(1, 6),
       st.integers(1, 6))
def test_the_1x1_estimate_is_poplibs(name, positions, groups, in_groups, out_groups):
    v = VERTICES[name]
    got = cycles_1x1(v, np.array([positions]), groups, in_groups, out_groups)
    assert int(got[0]) == poplin_amp.cycles_1x1(*_args(v), positions, groups, in_groups, out_groups)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(VERTICES)), st.integers(1, 12), st.integers(1, 60), st.integers(1, 5),
       st.integers(1, 5), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4))
def test_the_nx1_estimate_is_poplibs(name, rows, width, outer, inner, groups, in_groups, out_groups):
    v = VERTICES[name]
    got = cycles_nx1(v, np.array([rows]), np.array([width]), outer, inner, groups, in_groups, out_groups)
    want = poplin_amp.cycles_nx1(*_args(v), rows, [width], outer, inner, groups, in_groups, out_groups)
    assert int(got[0]) == want


def test_what_runs_on_a_tile_follows_poplins_transforms():
    v = VERTICES["half-float"]
    one = np.array([1])
    # a matmul (field 1, kernel 1): the 1x1 vertex on its rows
    matmul = partial_calc_cycles(v, (1,), (1,), (), np.array([16]), np.array([[1]]), one, one, one)
    assert int(matmul[0]) == poplin_amp.cycles_1x1(*_args(v), 16, 1, 1, 1)
    # a 1x1 stride-1 convolution: batch and field fold into one row of 2 x 7 x 7
    pointwise = partial_calc_cycles(v, (1, 1), (1, 1), (), np.array([2]), np.array([[7, 7]]), one, one, one)
    assert int(pointwise[0]) == poplin_amp.cycles_1x1(*_args(v), 98, 1, 1, 1)
    # a strided 1x1 convolution cannot fold: the nx1 vertex over 2 images of 7 rows of 7
    strided = partial_calc_cycles(v, (1, 1), (2, 2), (), np.array([2]), np.array([[7, 7]]), one, one, one)
    assert int(strided[0]) == poplin_amp.cycles_nx1(*_args(v), 2, [7, 7], 1, 1, 1, 1, 1)
    # a 3x3 convolution: the nx1 vertex, 3 outer and 3 inner kernel positions
    conv = partial_calc_cycles(v, (3, 3), (1, 1), (), np.array([2]), np.array([[7, 7]]), one, one, one)
    assert int(conv[0]) == poplin_amp.cycles_nx1(*_args(v), 2, [7, 7], 3, 3, 1, 1, 1)
    # a 1-D convolution gains a leading dimension of 1: its kernel is the inner one
    conv1d = partial_calc_cycles(v, (5,), (1,), (), np.array([2]), np.array([[30]]), one, one, one)
    assert int(conv1d[0]) == poplin_amp.cycles_nx1(*_args(v), 2, [1, 30], 1, 5, 1, 1, 1)
    # a patch embedding with both dimensions expanded: kernel and stride 1, the 1x1 vertex
    patches = partial_calc_cycles(v, (16, 16), (16, 16), (0, 1), np.array([1]), np.array([[4, 14]]), one, one, one)
    assert int(patches[0]) == poplin_amp.cycles_1x1(*_args(v), 56, 1, 1, 1)
    # one dimension expanded (stride 1 after): it folds with the batch into the rows
    stem = partial_calc_cycles(v, (7, 7), (2, 2), (0,), np.array([2]), np.array([[4, 14]]), one, one, one)
    assert int(stem[0]) == poplin_amp.cycles_nx1(*_args(v), 2, [4, 14], 1, 7, 1, 1, 1)
