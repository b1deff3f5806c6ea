"""Placing many problems that repeat: tiles with the same buffers (up to ids and order)
are placed once and share the result.

Worked example: tiles 0 and 5 both hold buffers ([0, 4) x 64 B, [2, 6) x 32 B), listed
in opposite orders. Both have the signature ((0, 4, 64, 1, 0, None), (2, 6, 32, 1, 0, None));
the problem is placed once in signature order and each tile's offsets are read back in
its own order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from typing import TypeVar

from tileplan.placement.problem import Buffer, Problem
from tileplan.placement.solve import DEFAULT_TIME_LIMIT, Placement, place

Key = TypeVar("Key", bound=Hashable)
Signature = tuple[tuple[int, int, int, int, int, int | None], ...]


def signature(problem: Problem) -> tuple[Signature, tuple[int, ...]]:
    """The problem's buffers as sorted (lower, upper, size, alignment, floor, ceiling)
    rows, ids left out, and the input index of each sorted row (ties by input index)."""
    rows = [(b.lower, b.upper, b.size, b.alignment, b.floor, b.ceiling) for b in problem.buffers]
    order = tuple(sorted(range(len(rows)), key=lambda i: (rows[i][:5], rows[i][5] is None, rows[i][5] or 0, i)))
    return tuple(rows[i] for i in order), order


def place_each(problems: Mapping[Key, Problem], capacity: int, time_limit: float = DEFAULT_TIME_LIMIT,
               node_limit: int | None = None, *, minimize: bool = True) -> dict[Key, Placement]:
    """A placement for every problem (each with `time_limit`, `node_limit` and
    `minimize` as in `place`); problems with equal signatures are placed once. Offsets
    are in each problem's own buffer order."""
    placed: dict[Signature, Placement] = {}
    result: dict[Key, Placement] = {}
    for key, problem in problems.items():
        sig, order = signature(problem)
        if sig not in placed:
            canonical = Problem(tuple(Buffer(str(i), *row[:5], ceiling=row[5]) for i, row in enumerate(sig)))
            placed[sig] = place(canonical, capacity, time_limit=time_limit, node_limit=node_limit, minimize=minimize)
        shared = placed[sig]
        offsets = [0] * len(order)
        for position, index in enumerate(order):
            offsets[index] = shared.offsets[position]
        result[key] = dataclasses.replace(shared, offsets=tuple(offsets))
    return result
