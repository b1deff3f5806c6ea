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
import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import poplin_amp
from tileplan.kernel.convplan import (
    EXCHANGE_BYTES_PER_CYCLE, ITERATION_CYCLES, SERIAL_SPLITS, ConvPartition, ConvShape,
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
         tile_bytes: int = TILE, fully_connected: bool = False) -> ConvPartition:
    geometry, multiply, partial = PRECISIONS[precision]
    return plan_conv(shape, tiles, geometry, multiply, partial, tile_bytes, proportion,
                     fully_connected=fully_connected)


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


def candidates(shape: ConvShape, tiles: int, precision: str, fully_connected: bool = False) -> list[dict]:
    """Every partition the docstring describes, with its temporary bytes and cycles:
    for each expansion set (every subset of the dimensions with a kernel, stride or
    dilation above 1)."""
    geometry, mb, pb = PRECISIONS[precision]
    ig = geometry.input_channels
    combine = 1
    if shape.groups > 1 and shape.in_chans <= (2 if ig >= 16 else 1):
        combine = min(shape.groups, max(1, ig // shape.in_chans))
    changed = [d for d in range(len(shape.field))
               if shape.kernel[d] > 1 or shape.stride[d] > 1 or shape.dilation[d] > 1]
    sets = [e for n in range(len(changed) + 1) for e in itertools.combinations(changed, n)]
    return [c for e in sets for c in _candidates(shape, tiles, precision, combine, e, fully_connected)]


def _copy_and_exchange(share: int, channels: int, mb: int) -> int:
    """A transform's share of a tile: copied at its element's bytes a cycle times 5/4
    (5/3 when the channels are not a multiple of 4, 2 in F32), exchanged at 4 B a cycle."""
    num, den = (5, 4) if channels % (2 if mb == 4 else 4) == 0 else (5, 3)
    return _cdiv(share * num, mb * den) + _cdiv(share, EXCHANGE_BYTES_PER_CYCLE)


def _candidates(shape: ConvShape, tiles: int, precision: str, combine: int, expanded: tuple[int, ...],
                fully_connected: bool) -> list[dict]:
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
    kernel = math.prod(kernel_dims)
    weight_share = _cdiv(kernel * ic * oc * groups * mb, tiles) if expanded else 0
    input_cycles = _copy_and_exchange(transform, ic * oc, mb) if expanded else 0
    weight_cycles = _copy_and_exchange(weight_share, ic * oc, mb) if expanded else 0
    sizes = [shape.batch, *shape.field, ic, oc, groups]
    splittable = [k for k, size in enumerate(sizes) if size > 1 or k in (0, dims + 1, dims + 2)]
    rows = []
    for factors in _factorisations(tiles, len(splittable)):
        split = [1] * len(sizes)
        for k, f in zip(splittable, factors):
            split[k] = f
        rows.append(split)
    rows = [r for r in rows if all(s <= max(2 * z, 1) for s, z in zip(r, sizes))] or rows
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
                # a serial split of the output channels broadcasts the input (and
                # transforms it) once, before the loop, its bytes held across it
                before = dim == "out" and serial > 1
                conv = (inputs + weights) * mb + partials * pb
                if not expanded:
                    temp = conv
                elif before:
                    temp = transform + inputs * mb + max(2 * weight_share, weights * mb + partials * pb)
                else:
                    temp = max(2 * max(transform, weight_share), conv)
                if fully_connected and serial > 1:  # the weights rearranged before slicing
                    temp += _cdiv(_cdiv(ic, ig) * ig * _cdiv(oc, og) * og * groups, tiles) * mb
                if dim == "in" and serial > 1:
                    temp += positions * out_all * gt * pb  # the output accumulated in place
                # poplin max's the reduction's temporaries (as many partials as the tile
                # made) with the rest, which holds the partials: they never add
                # PopLibs' estimate of the AMP vertex poplin runs on the tile
                compute = _vertex_cycles(shape, precision, expanded, bt, ft, gt, in_p // ig, out_p // og)
                received = (0 if before else inputs * mb) + (weights * mb if b * math.prod(fs) > 1 else 0)
                looped = weight_cycles + (0 if before else input_cycles)
                once = inputs * mb // EXCHANGE_BYTES_PER_CYCLE + input_cycles if before else 0
                reduce = partials * pb * (i - 1) // i if i > 1 else 0
                accumulate = partials * serial if dim == "in" and serial > 1 else 0
                cycles = (serial * (compute + received // EXCHANGE_BYTES_PER_CYCLE + looped + ITERATION_CYCLES)
                          + accumulate + once + (serial if dim == "out" else 1) * reduce // EXCHANGE_BYTES_PER_CYCLE)
                out.append({"batch_split": b, "field_split": tuple(fs), "in_split": i, "out_split": o,
                            "group_split": g, "serial": serial, "serial_dim": dim, "combine": combine,
                            "input_elements": inputs, "weight_elements": weights, "partial_elements": partials,
                            "temp_bytes": temp, "cycles": cycles, "expanded": expanded,
                            "transform_bytes": transform})
    return out


def _vertex_cycles(shape: ConvShape, precision: str, expanded: tuple[int, ...], batch: int, field: list[int],
                   groups: int, in_groups: int, out_groups: int) -> int:
    """The module's docstring's rule: the field padded to two dimensions, the expanded
    ones kernel and stride 1, the batch and every dimension of kernel and stride 1
    folded into the innermost such one; all folded: the 1x1 vertex on one row, else
    the nx1 vertex (poplin_amp's transcriptions of PopLibs' estimates)."""
    geometry, _, pb = PRECISIONS[precision]
    acts = {"F16": "half", "F32": "float", "F8": "quarter"}[precision]
    vertex = (acts, pb == 4, geometry.output_channels, geometry.input_channels)
    pad = max(0, 2 - len(field))
    kernel = [1] * pad + [1 if d in expanded else k for d, k in enumerate(shape.kernel)]
    stride = [1] * pad + [1 if d in expanded else s for d, s in enumerate(shape.stride)]
    sizes = [1] * pad + list(field)
    folds = [k == 1 and s == 1 for k, s in zip(kernel, stride)]
    if all(folds):
        return poplin_amp.cycles_1x1(*vertex, batch * math.prod(field), groups, in_groups, out_groups)
    if folds[-1]:
        image, out_shape = 1, [math.prod(f for f, ok in zip(sizes, folds) if not ok),
                               batch * math.prod(f for f, ok in zip(sizes, folds) if ok)]
    else:
        image, out_shape = batch, sizes
    return poplin_amp.cycles_nx1(*vertex, image, out_shape, kernel[0], math.prod(kernel[1:]), groups, in_groups,
                                 out_groups)


def chosen(cands: list[dict], tile_bytes: int, proportion: float | None) -> tuple[tuple[int, int], list[dict], int]:
    """((cycles, temp) of the choice, the candidates reaching it, the bound it was found
    under, -1 unbounded): the fewest cycles (then bytes) under the cap, the cap doubled
    while nothing fits, until a bound of at least twice the tile was tried (poplin's
    do-while), then without a bound."""
    first = None if proportion is None else int(proportion * tile_bytes)
    bounds: list[int | None] = [first]
    if first is not None:  # poplin's do-while: doubled while the bound tried is below twice the tile
        bound = first
        while True:
            bound *= 2
            bounds.append(bound)
            if bound >= 2 * tile_bytes:
                break
        bounds.append(None)
    for bound in bounds:
        ok = [c for c in cands if bound is None or c["temp_bytes"] <= bound]
        if ok:
            best = min((c["cycles"], c["temp_bytes"]) for c in ok)
            return best, [c for c in ok if (c["cycles"], c["temp_bytes"]) == best], -1 if bound is None else bound
    raise AssertionError("the unbounded search keeps every candidate")


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
    # [729, 11008] x [11008, 16], F16 at 0.005 (3,194 B): rows over 46 (16), K over 32
    # (344) in 24 serial iterations (14.3 -> 15, padded to 16), N whole (16: two passes
    # of 8): blocks 16 x 16 and 16 x 16, partials 16 x 16 in F32, plus the 16 x 16 output
    # accumulated across the iterations: (256 + 256) x 2 + 256 x 4 + 256 x 4 = 3,072 B.
    # K over 16 and N over 2 (2,560 B) is slower: two input groups a tile cost the AMP's
    # outer loop more than a second output group does
    cp = plan(ConvShape.matmul(729, 11008, 16), "F16", 0.005)
    assert (cp.batch_split, cp.in_split, cp.out_split, cp.serial, cp.serial_dim) == (46, 32, 1, 24, "in")
    assert (cp.input_elements, cp.weight_elements, cp.partial_elements, cp.output_elements) == (256, 256, 256, 256)
    assert cp.temp_bytes == (256 + 256) * 2 + 256 * 4 + 256 * 4 == 3072 and cp.within_cap
    (other,) = [c for c in candidates(ConvShape.matmul(729, 11008, 16), TILES, "F16")
                if (c["in_split"], c["out_split"], c["serial"], c["serial_dim"]) == (16, 2, 24, "in")
                and c["batch_split"] == 46]
    assert other["temp_bytes"] == 2560 and other["cycles"] > cp.cycles


def test_resnet50_conv2_layer():
    # docs/notes/CONV-NOTES.md section 3: 3 x 3, 64 -> 64 at 56 x 56, stride 1, batch 90, F16 on
    # 1472 tiles. The plan: batch over 92 (one image a tile, 2 tiles idle), the rows over
    # 4 (14 rows of 56 positions), every input channel, the output channels over 4 (16).
    # The window (14 - 1) + 3 = 16 by 58, 64 channels: 59,392 elements; weights 9 x 64 x
    # 16 = 9,216, broadcast; partials 14 x 56 x 16 = 12,544 in F32: (59,392 + 9,216) x 2
    # + 12,544 x 4 = 187,392 B, under the cap. The nx1 vertex's workers each take a sixth
    # of the 784 positions as whole rows: rows of 56 make 3 or 4 worklist items a worker where
    # rows of 28 (the field over 2 x 2) make 5 or 6, and the input channels whole need no
    # reduction
    cp = plan(ConvShape(90, (56, 56), (3, 3), (1, 1), (1, 1), 64, 64))
    assert (cp.batch_split, cp.field_split, cp.in_split, cp.out_split) == (92, (4, 1), 1, 4)
    assert (cp.input_elements, cp.weight_elements, cp.partial_elements) == (16 * 58 * 64, 9 * 64 * 16, 14 * 56 * 16)
    assert cp.temp_bytes == (59392 + 9216) * 2 + 12544 * 4 == 187392 and cp.within_cap


def test_the_docstrings_worked_example_is_one_of_the_partitions():
    # the module docstring's example partition (batch over 46, the field over 4 x 8: 2
    # images x 14 x 7 positions with every channel) costs 160,768 B; it fits the cap too
    # but is not the fastest
    (example,) = [c for c in candidates(ConvShape(90, (56, 56), (3, 3), (1, 1), (1, 1), 64, 64), TILES, "F16")
                  if (c["batch_split"], c["field_split"], c["out_split"], c["serial"], c["serial_dim"], c["expanded"])
                  == (46, (4, 8), 1, 1, "out", ())]
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
@given(conv_cases(), st.booleans())
def test_the_choice_is_the_fastest_partition_under_the_bound(case, fully_connected):
    shape, tiles, precision, tile_bytes, proportion = case
    cp = plan(shape, precision, proportion, tiles, tile_bytes, fully_connected)
    best, ties, bound = chosen(candidates(shape, tiles, precision, fully_connected), tile_bytes, proportion)
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


def test_the_relaxation_tries_twice_then_four_times_the_bound_before_none():
    """ConvPlan.cpp's do-while doubles the bound and tries again while the bound tried
    was below twice the tile: at 0.6 of a 16 KiB tile it tries 9,830 B, 19,660 B and
    39,320 B before going unbounded. [256, 256] x [256, 256] in F16 on 4 tiles: no
    partition fits 19,660 B, the least takes 38,912 B, which the third bound admits;
    unbounded, the fastest would take 229,376 B."""
    shape = ConvShape.matmul(256, 256, 256)
    cp = plan(shape, "F16", 0.6, 4, 16384)
    cands = candidates(shape, 4, "F16")
    assert 2 * 9830 < min(c["temp_bytes"] for c in cands) == 38912 <= 4 * 9830
    _, _, bound = chosen(cands, 16384, 0.6)
    assert bound == 4 * 9830 and cp.temp_bytes <= bound and not cp.within_cap
    assert plan(shape, "F16", None, 4, 16384).temp_bytes == 229376


def test_a_fully_connected_pass_counts_its_weights_rearranged_before_a_serial_split():
    """poplin's FC passes add a share of the weights to a serially split plan's
    temporary bytes (`addRearrangeBeforeSliceEstimate`): [729, 11008] x [11008, 16] in
    F16 at 0.005 (3,194 B) serially splits K 24 ways; as an FC pass each serial
    candidate counts 11,008 x 16 / 1472 -> 120 elements, 240 B more: the plan's 3,072 B
    would be 3,312 B, over the cap, so the FC pass takes K over 16 and N over 2
    instead, 2,560 + 240 = 2,800 B."""
    shape = ConvShape.matmul(729, 11008, 16)
    plain, fc = plan(shape, "F16", 0.005), plan(shape, "F16", 0.005, fully_connected=True)
    assert plain.serial > 1
    (same,) = [c for c in candidates(shape, TILES, "F16", True)
               if (c["batch_split"], c["in_split"], c["out_split"], c["serial"], c["serial_dim"])
               == (plain.batch_split, plain.in_split, plain.out_split, plain.serial, plain.serial_dim)]
    assert same["temp_bytes"] == plain.temp_bytes + _cdiv(11008 * 16, TILES) * 2
    assert (fc.in_split, fc.out_split, fc.serial) == (16, 2, 24) and fc.temp_bytes == 2560 + 240 == 2800


def test_every_subset_of_the_changed_dimensions_is_tried_as_an_expansion():
    """`getExpandDimsCandidates`: a 3 x 3 convolution of 64 channels tries none, either
    dimension and both (poplin does not require narrow channels); a 1 x 1 stride-1 one
    nothing; a 1 x 1 stride-2 one both dimensions (its stride changes)."""
    def sets(shape: ConvShape) -> set:
        return {c["expanded"] for c in candidates(shape, 4, "F16")}

    assert sets(ConvShape(1, (8, 8), (3, 3), (1, 1), (1, 1), 64, 64)) == {(), (0,), (1,), (0, 1)}
    assert sets(ConvShape(1, (8, 8), (1, 1), (1, 1), (1, 1), 64, 64)) == {()}
    assert sets(ConvShape(1, (4, 4), (1, 1), (2, 2), (1, 1), 64, 64)) == {(), (0,), (1,), (0, 1)}
