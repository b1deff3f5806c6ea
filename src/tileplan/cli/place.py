"""Place buffers with lifetimes at offsets (MiniMalloc CSV: id,lower,upper,size[,alignment]).

Writes the same rows with an `offset` column (default FILE.placed.csv; -f to
overwrite) and prints the height, the lower bound and what is proven. Exit 0 when the
placement is within --capacity, 3 when not (the best height and the lower bound are
printed), 2 on bad input.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from tileplan.errors import InputError
from tileplan.ioutil import check_target, write_atomic
from tileplan.placement import find_violations, place, read_csv, render_csv
from tileplan.placement.solve import DEFAULT_TIME_LIMIT

EXIT_OVER = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("problem", help="a CSV file: id,lower,upper,size[,alignment], lifetimes half-open [lower, upper)")
    p.add_argument("--capacity", type=int, required=True, metavar="BYTES", help="bytes available (offsets + sizes)")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="S",
                   help=f"seconds for the search (default {DEFAULT_TIME_LIMIT:g})")
    p.add_argument("-o", "--output", metavar="OUT.csv", help="where to write (default FILE.placed.csv)")
    p.add_argument("-f", "--force", action="store_true", help="overwrite the output if it exists")


def run(args: argparse.Namespace) -> int:
    if args.capacity < 0:
        raise InputError(f"--capacity must be >= 0, found {args.capacity}")
    if not (math.isfinite(args.time_limit) and 0 < args.time_limit <= 86400):
        raise InputError(f"--time-limit must be in (0, 86400] seconds, found {args.time_limit}")
    source = Path(args.problem)
    target = Path(args.output) if args.output else source.with_name(source.stem + ".placed.csv")
    if target.resolve() == source.resolve():
        raise InputError(f"{target} is the input; choose another output with -o")
    check_target(target, args.force)  # refuse before the search, not after it
    problem = read_csv(args.problem)
    result = place(problem, args.capacity, time_limit=args.time_limit)
    broken = find_violations(problem, result.offsets, limit=1)
    assert not broken, f"internal error: the placement is invalid: {broken[0]}"
    write_atomic(target, render_csv(problem, result.offsets), overwrite=args.force)
    print(f"{len(problem)} buffers: {result.verdict}")
    print(f"wrote {target}")
    args.decided = 0 if result.fits else EXIT_OVER
    return args.decided
