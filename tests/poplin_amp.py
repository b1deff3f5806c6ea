"""PopLibs' AMP vertex cycle estimates, transcribed one call at a time from
graphcore/poplibs lib/poplin/PerformanceEstimation.hpp and ConvUtilInternal.cpp
(`partitionConvPartialByWorker`) with plain loops over the workers and their worklist
items: the oracle `tests/test_ampcycles.py` and `tests/test_convplan.py` hold the
vectorised port (`tileplan.kernel.ampcycles`) against. Unit stride and dilation (the
only ones the planner passes after its transforms)."""

from __future__ import annotations

import math

WORKERS = 6


def partition_by_worker(batch: int, out_shape: list[int]) -> list[list[int]]:
    """`partitionConvPartialByWorker`: worker i takes the elements [i n / 6, (i + 1) n /
    6) of batch x rows x width, one item (its width) per (image, row) it touches."""
    width = out_shape[-1]
    rows = math.prod(out_shape[:-1])
    n = batch * rows * width
    out = []
    for i in range(WORKERS):
        begin, end = i * n // WORKERS, (i + 1) * n // WORKERS
        items = []
        if begin != end:
            last = end - 1
            for row in range(begin // width, last // width + 1):
                x_begin = begin % width if row == begin // width else 0
                x_last = last % width if row == last // width else width - 1
                items.append(x_last + 1 - x_begin)
        out.append(items)
    return out


def inner_1x1(acts: str, float_partials: bool, units: int, worklist: list[list[int]], zeroing: bool) -> int:
    """`getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat` / `...Quarter`."""
    most, least = 0, None
    for worker in worklist:
        assert len(worker) <= 1
        if acts == "quarter":
            cycles = 17
            if worker:
                n = worker[0]
                save = 5 if zeroing else 0
                cycles += {1: 18 - save, 2: 23 - save}.get(n, 27 - save + (n - 3) * 4)
        else:
            cycles = 0
            if worker:
                n = worker[0]
                floats = acts == "float"
                zero_per_group = 8 if floats and units == 16 else 4 if float_partials else 2
                common = (not floats and units == 16) or float_partials
                z = 1 if zeroing else 0
                if n == 1:
                    cycles = (47 + (2 + zero_per_group) * z if floats
                              else 31 + (1 if zeroing else 2) if common else 39 + (2 + zero_per_group) * z)
                elif n == 2:
                    cycles = (46 + (2 + zero_per_group * 2) * z if floats
                              else 40 + (1 if zeroing else 2) if common else 40 + (2 + zero_per_group * 2) * z)
                elif floats:
                    cycles = 46 + (2 + zero_per_group * n) * z + (n - 3) * 8
                elif common:
                    cycles = (37 if zeroing else 38) + (n - 3) * 4
                else:
                    cycles = 41 + (2 + zero_per_group * n) * z + (n - 3) * 4
                if not floats and (float_partials or units == 16):
                    cycles -= 7
        most = max(most, WORKERS * cycles)
        least = WORKERS * cycles if least is None else min(least, WORKERS * cycles)
    assert least is not None
    return max(most, least + 14)


def cycles_1x1(acts: str, float_partials: bool, units: int, in_chans: int, positions: int, groups: int,
               in_groups: int, out_groups: int) -> int:
    """`getConvPartial1x1SupervisorCycleEstimate` on one row of `positions`."""
    work = [[w] if w else [] for w in (sum(items) for items in partition_by_worker(1, [positions]))]
    zero, nozero = (inner_1x1(acts, float_partials, units, work, z) for z in (True, False))
    size = {"half": 2, "float": 4, "quarter": 1}[acts]
    loads = units * in_chans * size // 8  # 128-bit loads off: 8 B a cycle
    if acts == "quarter":
        return 46 + groups * (WORKERS * 2 + 9 + out_groups * (
            WORKERS * 6 + 10 + WORKERS * 14 + 11 + WORKERS * 6 + loads + zero
            + (in_groups - 1) * (WORKERS * 11 + 6 + WORKERS * 6 + loads + nozero)))
    common = int((acts != "float" and units == 16) or float_partials)
    first, second = (7, 3) if acts == "half" and (float_partials or units == 16) else (0, 0)
    return (50 + WORKERS * (first + second * (in_groups * groups - 1))
            + groups * (12 + common + (in_groups - 1) * (15 - common + 1 + out_groups * (19 + 6 + loads + nozero))
                        + 10 + 1 + out_groups * (19 - common + 7 + loads + zero)))


def nx1_worker(acts: str, float_partials: bool, units: int, items: list[int]) -> int:
    """`getConvPartialnx1WorkerCycles` / `...Quarter` for one worker's worklist."""
    if acts == "quarter":
        cycles = 18
        for n in items:
            cycles += 16 + {0: 4, 1: 18, 2: 23}.get(n, 27 + (n - 3) * 4)
        return cycles
    floats = acts == "float"
    extra = 1 if (not floats and not float_partials and units == 16) or (
        not floats and float_partials and units == 8) else 0
    cycles = 17 + (0 if float_partials else 1)
    for n in items:
        cycles += 3
        if n == 0:
            cycles += 17
        elif n == 1:
            cycles += 33 if floats else 29
        elif n == 2:
            cycles += 44 if floats else 33 + extra
        else:
            cycles += (45 if floats else 34) + (n - 3) * (8 if floats else 4)
        cycles -= 9
    return cycles


def cycles_nx1(acts: str, float_partials: bool, units: int, in_chans: int, batch: int, out_shape: list[int],
               kernel_outer: int, kernel_inner: int, groups: int, in_groups: int, out_groups: int) -> int:
    """`getConvPartialnx1InnerLoopCycleEstimate` in the outer loop, plus
    `estimateZeroSupervisorCycles`, as ConvModel.cpp adds them."""
    size = {"half": 2, "float": 4, "quarter": 1}[acts]
    loads = units * in_chans * size // 8
    workers = [nx1_worker(acts, float_partials, units, items) * WORKERS
               for items in partition_by_worker(batch, out_shape)]
    position = max(max(workers), min(workers) + 9)
    if acts == "quarter":
        call = WORKERS * 6
        inner = kernel_outer * (WORKERS * 5 + 3 + (WORKERS * 9 + 13 + call + loads
                                                   + (kernel_inner - 1) * (WORKERS * 7 + 8 + call) + loads))
        inner += position * kernel_outer * kernel_inner
        cycles = 83 + groups * (WORKERS * 5 + 7 + out_groups * (WORKERS * 8 + 10 + in_groups * (
            WORKERS * 8 + 13 + inner)))
    else:
        innermost = loads + 15 + 3
        inner = kernel_outer * (14 + kernel_inner * (17 - 5 + innermost)) + position * kernel_outer * kernel_inner
        cycles = (109 + WORKERS * 9 + WORKERS * (9 if float_partials else 10)
                  + groups * (out_groups * 17 + (out_groups - 1) * 6 + 1) + (groups - 1) * 6 + 1
                  + groups * (16 + in_groups * (14 + out_groups * (14 + inner))))
    field = batch * math.prod(out_shape)
    per_worker = -(-field * units // WORKERS)
    zero = max((-(-per_worker // 2)) + 14 - 9 for _ in range(WORKERS)) * WORKERS * out_groups * groups
    return cycles + zero
