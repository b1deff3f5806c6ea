"""Validity of a placement, checked on demand: every buffer at an aligned offset
inside its allowed range and no two live buffers sharing a byte."""

from __future__ import annotations

import numpy as np

from tileplan.placement.problem import Problem


def find_violations(problem: Problem, offsets: tuple[int, ...], limit: int = 10) -> list[str]:
    """Up to `limit` messages naming the buffers and the rule each placement breaks;
    empty when the placement is valid. A sweep over start steps keeps the live
    buffers sorted by offset, so each collision is found against a neighbour."""
    assert len(offsets) == len(problem.buffers), "one offset per buffer"
    problems: list[str] = []
    for buf, offset in zip(problem.buffers, offsets):
        above = buf.ceiling is not None and offset + buf.size > buf.ceiling
        if offset < buf.floor or offset % buf.alignment or above:
            problems.append(f"buffer {buf.id!r} at {offset} breaks its alignment or allowed range")
    cols = problem.columns()
    off = np.array(offsets, dtype=np.int64).reshape(len(offsets))
    keep = np.flatnonzero(cols.size > 0)
    # Pairs overlapping in time and space, found per time step group: sort by lower,
    # then test each buffer against those started before it that are still live.
    order = keep[np.lexsort((off[keep], cols.lower[keep]))]
    for k, i in enumerate(order.tolist()):
        earlier = order[:k]
        hit = earlier[(cols.upper[earlier] > cols.lower[i]) & (off[earlier] < off[i] + cols.size[i])
                      & (off[earlier] + cols.size[earlier] > off[i])]
        for j in hit[:limit].tolist():
            a, b = problem.buffers[j], problem.buffers[i]
            problems.append(f"buffers {a.id!r} [{off[j]}, {off[j] + a.size}) and {b.id!r} "
                            f"[{off[i]}, {off[i] + b.size}) overlap while both live")
        if len(problems) >= limit:
            break
    return problems[:limit]
