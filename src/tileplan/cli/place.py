"""Place buffers with lifetimes at offsets (MiniMalloc CSV: id,lower,upper,size[,alignment]).

Writes the same rows with an `offset` column (default FILE.placed.csv; -f to
overwrite) and prints the height, the lower bound and what is proven. Stops at the
first placement within --capacity unless --minimize. --time-limit bounds everything
after reading the file: the search, the check of the placement and the writing. Exit
0 when the placement is within --capacity, 3 when not (the best height and the lower
bound are printed), 2 on bad input.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from tileplan.errors import InputError, TileplanError
from tileplan.ioutil import check_target, write_atomic
from tileplan.placement import place, read_csv, render_csv
from tileplan.placement.csvfile import MAX_CSV_BYTES, shown
from tileplan.placement.solve import DEFAULT_TIME_LIMIT
from tileplan.placement.verify import COMPILE_FROM, verify

EXIT_OVER = 3
#: seconds per buffer kept back from the search for the check and the writing (about
#: 0.3 and 1.5 s at a million buffers; the check runs as Python, 10 us a buffer, below
#: COMPILE_FROM buffers), at most half the time limit
RESERVE_PER_BUFFER = 2e-6
RESERVE_PER_BUFFER_PYTHON = 12e-6


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("problem", help="a CSV file: id,lower,upper,size[,alignment], lifetimes half-open [lower, upper) "
                                   f"(UTF-8, a byte-order mark and CRLF allowed; at most {MAX_CSV_BYTES >> 20} MiB)")
    p.add_argument("--capacity", type=int, required=True, metavar="BYTES", help="bytes available (offsets + sizes)")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="S",
                   help=f"seconds for all but reading: search, check, writing (default {DEFAULT_TIME_LIMIT:g})")
    p.add_argument("--minimize", action="store_true",
                   help="after a placement within the capacity, go on lowering the height until it is proven optimal "
                        "or the time limit ends the search (default: stop at the first placement within the capacity)")
    p.add_argument("-o", "--output", metavar="OUT.csv", help="where to write (default FILE.placed.csv)")
    p.add_argument("-f", "--force", action="store_true", help="overwrite the output if it exists")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except TileplanError as e:  # a path from the command line may hold a line break: one line still
        raise type(e)(_one_line(e.detail), None if e.place is None else _one_line(e.place)) from None


def _one_line(text: str) -> str:
    """`text` with every character that is not printable escaped as in a Python literal."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _run(args: argparse.Namespace) -> int:
    if args.capacity < 0:
        raise InputError(f"--capacity must be >= 0, found {args.capacity}")
    if not (math.isfinite(args.time_limit) and 0 < args.time_limit <= 86400):
        raise InputError(f"--time-limit must be in (0, 86400] seconds, found {args.time_limit}")
    source = Path(args.problem)
    target = Path(args.output) if args.output else source.with_name(source.stem + ".placed.csv")
    if target.resolve() == source.resolve():
        raise InputError(f"{shown(str(target))} is the input; choose another output with -o")
    check_target(target, args.force)  # refuse before the search, not after it
    problem = read_csv(args.problem)
    deadline = time.perf_counter() + args.time_limit
    each = RESERVE_PER_BUFFER if len(problem) >= COMPILE_FROM else RESERVE_PER_BUFFER_PYTHON
    reserve = min(args.time_limit / 2, each * len(problem))
    result = place(problem, args.capacity, time_limit=args.time_limit - reserve, minimize=args.minimize)
    check = verify(problem, result.offsets, limit=1, deadline=deadline)
    if check.messages:
        raise RuntimeError(f"internal error: the placement is invalid: {check.messages[0]}")
    write_atomic(target, render_csv(problem, result.offsets), overwrite=args.force)
    hint = "; --minimize searches lower" if result.fits and not result.optimal and not result.minimized else ""
    print(f"{len(problem)} buffers: {result.verdict}{hint}")
    if not check.complete:
        print(f"not fully checked: the time limit ended the check for overlaps after {check.checked} of "
              f"{check.total} buffers (the placement is valid by construction)")
    print(f"wrote {shown(str(target))}")
    args.decided = 0 if result.fits else EXIT_OVER
    return args.decided
