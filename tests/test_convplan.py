"""`tileplan.kernel.convplan`: convolutions and matmuls split over the tiles as poplin
plans them.

Hand computations of chosen partitions and their temporary bytes; the search against
a plain re-implementation written from the module's docstring (every ordered
factorisation of the tile count over the splittable dimensions, every serial split,
the same cost model, the fastest under the bound, the bound doubled while no
partition fits it); the memory proportion's effect (a lower cap never yields more
temporary memory while the plan keeps to it, but can once it must be relaxed: poplin's
doubling keeps minimising cycles); depthwise groups combined; the step's extra bytes
(`rearranged_bytes`, `partials_scratch`); the layouts a plan gives.

IPU21's AMP: F16 multiplies 16 input channels into 8 output channels a pass and
accumulates in F32; F8 32 into 16, accumulating in F16; F32 8 into 8.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileplan.kernel.convplan import (
    BLOCK_CYCLES, EXCHANGE_BYTES_PER_CYCLE, ITERATION_CYCLES, SERIAL_SPLITS, ConvPartition, ConvShape,
    conv_output_layout, gemm_partition, partials_scratch, plan_conv, rearranged_bytes,
)
from tileplan.kernel.layouts import linear_layout
from tileplan.model.layout import Padding
from tileplan.model.machine import IPU21
from tileplan.model.precision import Precision
from tileplan.model.tiling import shards_of

F16 = IPU21.amp_for(Precision("F16"))
F8 = IPU21.amp_for(Precision("F8F143", -4))
F32 = IPU21.amp_for(Precision("F32"))
#: (geometry, multiply bytes, partial bytes)
PRECISIONS = {"F16": (F16, 2, 4), "F8": (F8, 1, 2), "F32": (F32, 4, 4)}
TILE = 638976
TILES = 1472


def plan(shape: ConvShape, precision: str = "F16", proportion: float | None = 0.6, tiles: int = TILES,
         tile_bytes: int = TILE) -> ConvPartition:
    geometry, multiply, partial = PRECISIONS[precision]
    return plan_conv(shape, tiles, geometry, multiply, partial, tile_bytes, proportion)


# A plain re-implementation of the search --------------------------------------------------

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _factorisations(n: int, k: int):
    if k == 1:
        yield (n,)
        return
    for f in range(1, n + 1):
        if n % f == 0:
            for rest in _factorisations(n // f, k - 1):
                yield (f, *rest)


def candidates(shape: ConvShape, tiles: int, precision: str) -> list[dict]:
    """Every partition the docstring describes, with its temporary bytes and cycles:
    for each expansion set (none; with input channels narrower than the AMP's grain,
    each field dimension with a kernel wider than 1, and all of them)."""
    geometry, mb, pb = PRECISIONS[precision]
    ig = geometry.input_channels
    combine = 1
    if shape.groups > 1 and shape.in_chans <= (2 if ig >= 16 else 1):
        combine = min(shape.groups, max(1, ig // shape.in_chans))
    wide = [d for d in range(len(shape.field)) if shape.kernel[d] > 1]
    sets: list[tuple[int, ...]] = [()]
    if shape.in_chans * combine < ig and wide:
        sets += [(d,) for d in wide] + ([tuple(wide)] if len(wide) > 1 else [])
    return [c for e in sets for c in _candidates(shape, tiles, precision, combine, e)]


def _candidates(shape: ConvShape, tiles: int, precision: str, combine: int, expanded: tuple[int, ...]) -> list[dict]:
    geometry, mb, pb = PRECISIONS[precision]
    ig, og = geometry.input_channels, geometry.output_channels
    groups = _cdiv(shape.groups, combine)
    ic = shape.in_chans * combine * math.prod(shape.kernel[d] for d in expanded)
    oc = shape.out_chans * combine
    dims = len(shape.field)
    kernel_dims = [1 if d in expanded else shape.kernel[d] for d in range(dims)]
    in_field = [shape.field[d] if d in expanded else (shape.field[d] - 1) * shape.stride[d]
                + (shape.kernel[d] - 1) * shape.dilation[d] + 1 for d in range(dims)]
    transform = _cdiv(shape.batch * ic * groups * math.prod(in_field), tiles) * mb if expanded else 0
    sizes = [shape.batch, *shape.field, ic, oc, groups]
    splittable = [k for k, size in enumerate(sizes) if size > 1 or k in (0, dims + 1, dims + 2)]
    rows = []
    for factors in _factorisations(tiles, len(splittable)):
        split = [1] * len(sizes)
        for k, f in zip(splittable, factors):
            split[k] = f
        rows.append(split)
    rows = [r for r in rows if all(s <= max(2 * z, 1) for s, z in zip(r, sizes))] or rows
    kernel = math.prod(kernel_dims)
    out = []
    for dim in ("out", "in"):
        for serial in SERIAL_SPLITS:
            if serial > 1 and (serial * og > oc if dim == "out" else serial * ig > ic):
                continue
            for r in rows:
                b, fs, i, o, g = r[0], r[1:1 + dims], r[1 + dims], r[2 + dims], r[3 + dims]
                bt, gt = _cdiv(shape.batch, b), _cdiv(groups, g)
                ft = [_cdiv(shape.field[d], fs[d]) for d in range(dims)]
                window = math.prod(ft[d] if d in expanded else (ft[d] - 1) * shape.stride[d]
                                   + (shape.kernel[d] - 1) * shape.dilation[d] + 1 for d in range(dims))
                positions = bt * math.prod(ft)
                in_all, out_all = _cdiv(ic, i), _cdiv(oc, o)
                in_t = _cdiv(in_all, serial) if dim == "in" else in_all
                out_t = _cdiv(out_all, serial) if dim == "out" else out_all
                in_p, out_p = _cdiv(in_t, ig) * ig, _cdiv(out_t, og) * og
                inputs, weights, partials = bt * window * in_p * gt, kernel * in_p * out_p * gt, positions * out_p * gt
                temp = (inputs + weights) * mb + partials * pb + transform
                if dim == "in" and serial > 1:
                    temp += positions * out_all * gt * pb  # the output accumulated in place
                # poplin max's the reduction's temporaries (as many partials as the tile
                # made) with the rest, which holds the partials: they never add
                # PopLibs' AMP estimate: each block of ig x og channels (a group, a kernel
                # position) a fixed cost plus 8 cycles a position in F32, 2 otherwise
                blocks = (in_p // ig) * (out_p // og) * gt * kernel
                compute = blocks * (BLOCK_CYCLES + positions * (8 if precision == "F32" else 2))
                # a serial split of the output channels broadcasts the input once, before
                # the loop, and reduces each iteration's partials in it
                looped_input = 0 if dim == "out" and serial > 1 else inputs * mb
                received = looped_input + (weights * mb if b * math.prod(fs) > 1 else 0) + transform
                reduce = partials * pb * (i - 1) // i if i > 1 else 0
                accumulate = partials * serial if dim == "in" and serial > 1 else 0
                cycles = (serial * (compute + received // EXCHANGE_BYTES_PER_CYCLE + ITERATION_CYCLES) + accumulate
                          + (inputs * mb - looped_input + (serial if dim == "out" else 1) * reduce)
                          // EXCHANGE_BYTES_PER_CYCLE)
                out.append({"batch_split": b, "field_split": tuple(fs), "in_split": i, "out_split": o,
                            "group_split": g, "serial": serial, "serial_dim": dim, "combine": combine,
                            "input_elements": inputs, "weight_elements": weights, "partial_elements": partials,
                            "temp_bytes": temp, "cycles": cycles, "expanded": expanded,
                            "transform_bytes": transform})
    return out


def chosen(cands: list[dict], tile_bytes: int, proportion: float | None) -> tuple[tuple[int, int], list[dict], int]:
    """((cycles, temp) of the choice, the candidates reaching it, the bound it was found
    under, -1 unbounded): the fewest cycles (then bytes) under the cap, the cap doubled
    while nothing fits and it stays below twice the tile, then without a bound."""
    bound = None if proportion is None else int(proportion * tile_bytes)
    while True:
        ok = [c for c in cands if bound is None or c["temp_bytes"] <= bound]
        if ok:
            best = min((c["cycles"], c["temp_bytes"]) for c in ok)
            return best, [c for c in ok if (c["cycles"], c["temp_bytes"]) == best], -1 if bound is None else bound
        bound = bound * 2 if bound * 2 < 2 * tile_bytes else None


FIELDS = ("batch_split", "field_split", "in_split", "out_split", "group_split", "serial", "serial_dim", "combine",
          "input_elements", "weight_elements", "partial_elements", "temp_bytes", "cycles", "expanded",
          "transform_bytes")


def as_row(cp: ConvPartition) -> dict:
    return {f: getattr(cp, f) for f in FIELDS}


# Hand computations ------------------------------------------------------------------------

def test_so400m_qkv_product_in_f8():
    # [729, 1152] x [1152, 3456], F8 on 1472 tiles at proportion 0.6: rows over 4 (183 a
    # tile), K over 8 (144, padded to 160: 5 grains of 32), N over 46 (75.1 -> 76, padded
    # to 80): row block 183 x 160 = 29,280, weight block 160 x 80 = 12,800 (F8, 1 B),
    # partials 183 x 80 = 14,640 in F16: 29,280 + 12,800 + 29,280 = 71,360 B; K's 8
    # partitions reduce 29,280 B, under the 71,360 B of the multiply phase. Fewer AMP
    # blocks a tile than rows over 8 and K over 4 (5 x 5 against 9 x 5), each block
    # costing its fixed cycles besides its rows
    cp = plan(ConvShape.matmul(729, 1152, 3456), "F8")
    assert (cp.batch_split, cp.in_split, cp.out_split, cp.serial) == (4, 8, 46, 1) and cp.tiles == 1472
    assert (cp.input_elements, cp.weight_elements, cp.partial_elements) == (183 * 160, 160 * 80, 183 * 80)
    assert cp.output_elements == 183 * 76  # the unpadded output block
    assert cp.temp_bytes == 183 * 160 + 160 * 80 + 183 * 80 * 2 == 71360
    assert cp.within_cap and cp.broadcasts_weights  # rows split: every row partition receives the weights


def test_a_serial_split_of_the_output_channels_under_a_lower_cap():
    # the MLP's up projection [729, 1152] x [1152, 4304] in F8 at 0.05 (31,948 B): rows
    # over 8 (92), K over 8 (144, padded to 160), N over 23 (187.1 -> 188) in 4 serial
    # iterations (47, padded to 48): 92 x 160 + 160 x 48 + 92 x 48 x 2 = 31,232 B. At
    # 0.6 the same product runs in one iteration (rows over 4, K over 4, N over 92) with
    # 84,096 B.
    low = plan(ConvShape.matmul(729, 1152, 4304), "F8", 0.05)
    assert (low.batch_split, low.in_split, low.out_split, low.serial, low.serial_dim) == (8, 8, 23, 4, "out")
    assert low.temp_bytes == 92 * 160 + 160 * 48 + 92 * 48 * 2 == 31232 <= int(0.05 * TILE)
    high = plan(ConvShape.matmul(729, 1152, 4304), "F8", 0.6)
    assert (high.batch_split, high.in_split, high.out_split, high.serial) == (4, 4, 92, 1)
    assert high.temp_bytes == 84096 and high.cycles < low.cycles


def test_a_serial_split_of_the_input_channels_accumulates_in_place():
    # [729, 11008] x [11008, 16], F16 at 0.005 (3,194 B): rows over 46 (16), K over 16
    # (688) in 24 serial iterations (28.7 -> 29, padded to 32), N over 2 (8): blocks 16 x
    # 32 and 32 x 8, partials 16 x 8 in F32, plus the 16 x 8 output accumulated across
    # the iterations: (512 + 256) x 2 + 128 x 4 + 128 x 4 = 2,560 B
    cp = plan(ConvShape.matmul(729, 11008, 16), "F16", 0.005)
    assert (cp.batch_split, cp.in_split, cp.out_split, cp.serial, cp.serial_dim) == (46, 16, 2, 24, "in")
    assert (cp.input_elements, cp.weight_elements, cp.partial_elements, cp.output_elements) == (512, 256, 128, 128)
    assert cp.temp_bytes == (512 + 256) * 2 + 128 * 4 + 128 * 4 == 2560 and cp.within_cap


def test_resnet50_conv2_layer():
    # docs/notes/CONV-NOTES.md section 3: 3 x 3, 64 -> 64 at 56 x 56, stride 1, batch 90, F16 on
    # 1472 tiles. The plan: batch over 92 (one image a tile, 2 tiles idle), the field
    # over 2 x 2 (28 x 28 positions), the input and output channels over 2 each (32).
    # The window (28 - 1) + 3 = 30 by 30, 32 channels: 28,800 elements; weights 9 x 32 x
    # 32 = 9,216, broadcast; partials 28 x 28 x 32 = 25,088 in F32: (28,800 + 9,216) x 2
    # + 25,088 x 4 = 176,384 B, under the cap; 2 x 4 x 9 AMP blocks a tile, each of 784
    # positions, where the channels whole would make 4 x 8 x 9 blocks of half as many
    cp = plan(ConvShape(90, (56, 56), (3, 3), (1, 1), (1, 1), 64, 64))
    assert (cp.batch_split, cp.field_split, cp.in_split, cp.out_split) == (92, (2, 2), 2, 2)
    assert (cp.input_elements, cp.weight_elements, cp.partial_elements) == (30 * 30 * 32, 9 * 32 * 32, 28 * 28 * 32)
    assert cp.temp_bytes == (28800 + 9216) * 2 + 25088 * 4 == 176384 and cp.within_cap


def test_the_docstrings_worked_example_is_one_of_the_partitions():
    # the module docstring's example partition (batch over 46, the field over 4 x 8: 2
    # images x 14 x 7 positions with every channel) costs 160,768 B; it fits the cap too
    # but is not the fastest
    (example,) = [c for c in candidates(ConvShape(90, (56, 56), (3, 3), (1, 1), (1, 1), 64, 64), TILES, "F16")
                  if (c["batch_split"], c["field_split"], c["out_split"], c["serial"], c["serial_dim"])
                  == (46, (4, 8), 1, 1, "out")]
    assert example["temp_bytes"] == 2 * 16 * 9 * 64 * 2 + 9 * 64 * 64 * 2 + 196 * 64 * 4 == 160768
    assert example["cycles"] > plan(ConvShape(90, (56, 56), (3, 3), (1, 1), (1, 1), 64, 64)).cycles


# The search against the re-implementation ---------------------------------------------------

@st.composite
def conv_cases(draw):
    dims = draw(st.sampled_from([1, 2]))
    field = tuple(draw(st.integers(1, 9)) for _ in range(dims))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    groups = draw(st.sampled_from([1, 1, 2, 3, 8]))
    shape = ConvShape(draw(st.integers(1, 6)), field, kernel, stride, dilation, draw(st.integers(1, 40)),
                      draw(st.integers(1, 40)), groups)
    return (shape, draw(st.sampled_from([1, 2, 4, 6, 7, 8, 12, 16])), draw(st.sampled_from(sorted(PRECISIONS))),
            draw(st.sampled_from([4096, 16384, TILE])), draw(st.sampled_from([None, 0.01, 0.05, 0.2, 0.6, 1.0])))


@settings(max_examples=150, deadline=None)
@given(conv_cases())
def test_the_choice_is_the_fastest_partition_under_the_bound(case):
    shape, tiles, precision, tile_bytes, proportion = case
    cp = plan(shape, precision, proportion, tiles, tile_bytes)
    best, ties, bound = chosen(candidates(shape, tiles, precision), tile_bytes, proportion)
    assert (cp.cycles, cp.temp_bytes) == best
    assert as_row(cp) in ties
    # the partition product is the tile count, every tile given a part (some empty)
    assert cp.tiles == cp.batch_split * math.prod(cp.field_split) * cp.in_split * cp.out_split * cp.group_split
    assert cp.tiles == tiles
    cap = None if proportion is None else int(proportion * tile_bytes)
    assert cp.within_cap == (cap is None or cp.temp_bytes <= cap)
    if cap is not None:  # kept to the cap exactly when some partition fits it (else relaxed)
        assert cp.within_cap == (bound == cap)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2000), st.integers(1, 3000), st.integers(1, 3000),
       st.sampled_from([23, 64, 92, 1216, 1472]), st.sampled_from(sorted(PRECISIONS)))
def test_any_matmul_is_split_over_exactly_the_tile_count(m, k, n, tiles, precision):
    cp = plan(ConvShape.matmul(m, k, n), precision, 0.6, tiles)
    assert cp.tiles == tiles and cp.field_split == (1,) and cp.group_split == 1
    geometry = PRECISIONS[precision][0]
    # the blocks cover the product: the row block, K and N slices (padded to the grains)
    # times their splits and serial iterations reach M, K and N
    rows = _cdiv(m, cp.batch_split)
    k_p, n_p = cp.input_elements // rows, cp.partial_elements // rows
    assert cp.input_elements == rows * k_p and cp.partial_elements == rows * n_p
    assert k_p % geometry.input_channels == 0 and n_p % geometry.output_channels == 0
    assert cp.weight_elements == k_p * n_p
    serial_k = cp.serial if cp.serial_dim == "in" else 1
    serial_n = cp.serial if cp.serial_dim == "out" else 1
    assert k_p * cp.in_split * serial_k >= k and n_p * cp.out_split * serial_n >= n


# The memory proportion ------------------------------------------------------------------------

def test_the_proportion_changes_the_plan():
    shape = ConvShape.matmul(729, 1152, 4304)
    plans = {p: plan(shape, "F8", p) for p in (1.0, 0.6, 0.2, 0.05, 0.02)}
    assert len({as_row(cp)["temp_bytes"] for cp in plans.values()}) >= 3
    for p, cp in plans.items():
        assert cp.within_cap and cp.temp_bytes <= int(p * TILE), p
    temps = [plans[p].temp_bytes for p in sorted(plans)]
    cycles = [plans[p].cycles for p in sorted(plans)]
    assert temps == sorted(temps) and cycles == sorted(cycles, reverse=True)  # less memory, more cycles


@settings(max_examples=120, deadline=None)
@given(conv_cases(), st.sampled_from([0.005, 0.01, 0.02, 0.05, 0.1, 0.3]), st.sampled_from([0.02, 0.1, 0.3, 0.6, 1.0]))
def test_a_lower_proportion_kept_to_never_holds_more_temporary_memory(case, low, high):
    """Checked, not assumed: while the lower proportion's plan keeps to its cap, its
    temporary bytes are at most the higher proportion's (the higher one's choice, if it
    fits the lower cap, is the lower one's too)."""
    shape, tiles, precision, tile_bytes, _ = case
    low, high = min(low, high), max(low, high)
    lo, hi = plan(shape, precision, low, tiles, tile_bytes), plan(shape, precision, high, tiles, tile_bytes)
    if lo.within_cap:
        assert lo.temp_bytes <= hi.temp_bytes
    if hi.temp_bytes <= int(low * tile_bytes):
        assert lo == hi


def test_a_relaxed_cap_can_hold_more_than_a_higher_proportion_kept_to():
    """When no partition fits the cap, poplin doubles the bound (still the fewest
    cycles) while it stays below twice the tile: the doubled bound may exceed a higher
    proportion's cap and admit a faster plan with more temporary memory. LLaMA-7B's
    down projection at 729 rows, F16: at 0.05 (31,948 B) 31,616 B kept to; at 0.02
    (12,779 B) nothing fits 12,779 or 25,558 B, so the bound becomes 51,116 B and the
    plan takes 44,064 B."""
    shape = ConvShape.matmul(729, 11008, 1152)
    at5, at2 = plan(shape, "F16", 0.05), plan(shape, "F16", 0.02)
    assert at5.within_cap and at5.temp_bytes == 31616
    cands = candidates(shape, TILES, "F16")
    assert min(c["temp_bytes"] for c in cands) > 2 * int(0.02 * TILE)
    best, ties, bound = chosen(cands, TILE, 0.02)
    assert bound == 4 * int(0.02 * TILE) and not at2.within_cap
    assert (at2.cycles, at2.temp_bytes) == best and at2.temp_bytes == 44064 > at5.temp_bytes
    assert at2.cycles < at5.cycles


def test_with_no_partition_under_twice_the_tile_the_fastest_of_all_is_taken():
    # a [4096, 11008] x [11008, 32000] product on 16 tiles of 16 KiB: nothing fits any
    # doubled bound below 32 KiB, so the choice is unbounded, as with no proportion
    shape = ConvShape.matmul(4096, 11008, 32000)
    cp = plan(shape, "F16", 0.6, 16, 16384)
    assert not cp.within_cap and cp.temp_bytes >= 2 * 16384
    assert dataclasses.replace(cp, within_cap=True) == plan(shape, "F16", None, 16, 16384)
    _, _, bound = chosen(candidates(shape, 16, "F16"), 16384, 0.6)
    assert bound == -1


# Depthwise and grouped convolutions -------------------------------------------------------------

@pytest.mark.parametrize("precision, groups, in_chans, combine", [
    ("F16", 64, 1, 16),  # one channel a group: up to the 16 input channels of a pass
    ("F16", 64, 2, 8),   # two channels (F16 only): 8 groups of 2
    ("F16", 64, 3, 1),   # wider groups are not combined: channels padded to the grain
    ("F16", 5, 1, 5),    # fewer groups than the factor: all in one
    ("F32", 64, 1, 8),   # F32: one channel a group, 8 a pass
    ("F32", 64, 2, 1),
    ("F8", 64, 1, 32),
])
def test_depthwise_groups_are_combined_into_one_amp_group(precision, groups, in_chans, combine):
    shape = ConvShape(1, (8, 8), (3, 3), (1, 1), (1, 1), in_chans, in_chans, groups)
    cp = plan(shape, precision, 0.6, 16)
    assert cp.combine == combine
    # the combined groups are one group of combine x channels, weights padded off the
    # block diagonal: a tile's weight block spans its combined groups' whole block
    geometry = PRECISIONS[precision][0]
    # with channels narrower than the grain, the plan may expand kernel dimensions into
    # input channels (expandDims): those dimensions' kernel positions then count there
    kernel = math.prod(3 for d in range(2) if d not in cp.expanded)
    channels = in_chans * combine
    in_channels = channels * 3 ** len(cp.expanded)
    group_t = _cdiv(_cdiv(groups, combine), cp.group_split)
    in_t, out_t = _cdiv(in_channels, cp.in_split), _cdiv(channels, cp.out_split)
    if cp.serial_dim == "in":
        in_t = _cdiv(in_t, cp.serial)
    else:
        out_t = _cdiv(out_t, cp.serial)
    in_p = _cdiv(in_t, geometry.input_channels) * geometry.input_channels
    out_p = _cdiv(out_t, geometry.output_channels) * geometry.output_channels
    assert cp.weight_elements == kernel * in_p * out_p * group_t


# What a step holds beyond poplin's temporaries ------------------------------------------------

def _partition(**kw) -> ConvPartition:
    base = dict(shape=ConvShape.matmul(64, 64, 64), batch_split=1, field_split=(1,), in_split=1, out_split=4,
                group_split=1, serial=1, serial_dim="out", combine=1, input_elements=100, weight_elements=200,
                partial_elements=50, output_elements=40, temp_bytes=0, cycles=0, within_cap=True)
    base.update(kw)
    return ConvPartition(**base)


def test_the_rearranged_input_is_held_when_the_output_channels_split_and_poplin_rearranges():
    spread = linear_layout(4, 2, "Ipu21", Padding.ZERO)
    # 1000 elements over 4 tiles: 250 a tile, 2 B each
    assert rearranged_bytes(_partition(out_split=4), spread, (10, 100), 2, 4) == 500
    assert rearranged_bytes(_partition(out_split=1), spread, (10, 100), 2, 4) == 0  # nothing to rearrange for
    cp = plan(ConvShape(1, (4, 4), (1, 1), (1, 1), (1, 1), 16, 32), "F16", 0.6, 4)
    created = conv_output_layout(cp, 16, 4, "Ipu21")  # a convolution's output: not a linear mapping
    assert rearranged_bytes(_partition(out_split=4), created, (1, 16, 4, 4), 2, 4) == 0
    # broadcast to more than 7 tiles (`inViewMaxBroadcastDests`), any layout is rearranged
    assert rearranged_bytes(_partition(out_split=7), created, (1, 16, 4, 4), 2, 8) == 0
    assert rearranged_bytes(_partition(out_split=8), created, (1, 16, 4, 4), 2, 8) == 64


def test_a_steps_partials_add_the_in_place_output_and_the_reduction_beyond_the_operands():
    assert partials_scratch(_partition(), 1000, 600, 4) == 50 * 4
    # a serial input-channel split: the output accumulated across iterations too
    assert partials_scratch(_partition(serial=3, serial_dim="in"), 1000, 600, 4) == (50 + 40) * 4
    # a parallel input-channel split: the received partials where they exceed the
    # operands' buffers (free by then): max(operands + partials, twice the partials)
    assert partials_scratch(_partition(in_split=2), 1000, 600, 4) == 200
    assert partials_scratch(_partition(in_split=2), 120, 100, 4) == 200 + 80
    assert 120 + partials_scratch(_partition(in_split=2), 120, 100, 4) == max(120 + 200, 2 * 200)
    # with a serial output-channel split the input, broadcast before the loop, is still
    # live when each iteration's partials are reduced: only the weights' 20 B are free
    looped = _partition(in_split=2, serial=3, serial_dim="out")
    assert partials_scratch(looped, 120, 100, 4) == 200 + 180
    assert 120 + partials_scratch(looped, 120, 100, 4) == max(120 + 200, 100 + 2 * 200)
    assert 250 + partials_scratch(looped, 250, 200, 4) == max(250 + 200, 200 + 2 * 200)
    assert partials_scratch(looped, 1000, 100, 4) == 200  # the weights free enough


# The layouts of a plan ----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(1, 600), st.integers(1, 600), st.sampled_from([4, 16, 23, 92]))
def test_a_matmul_plans_weights_are_held_once_in_its_layout(m, k, n, tiles):
    cp = plan(ConvShape.matmul(m, k, n), "F16", 0.6, tiles)
    from tileplan.kernel.gemm import weight_layout

    whole = gemm_partition(cp, F16, whole=True)
    assert (whole.m, whole.k, whole.n) == (m, k, n) and whole.pm * whole.pk * whole.pn == tiles
    shards = shards_of(weight_layout(whole, "Ipu21"), (k, n), "w")
    assert sorted(shards.tile_of().ravel().tolist()) == list(range(tiles))


@settings(max_examples=40, deadline=None)
@given(conv_cases())
def test_a_convolutions_output_is_laid_out_over_its_partitions(case):
    shape, tiles, precision, tile_bytes, proportion = case
    cp = plan(shape, precision, proportion, tiles, tile_bytes)
    channels = shape.out_chans * shape.groups
    layout = conv_output_layout(cp, channels, 2 + len(shape.field), "Ipu21")
    assert layout.tiling.tile_count == tiles and layout.tiling.replicas == 1
    shards_of(layout, (shape.batch, channels, *shape.field), "out")  # representable
