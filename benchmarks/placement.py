"""Placement on the public instances; prints figures, asserts nothing.

    .venv/bin/python benchmarks/placement.py [FOLDER] [--only NAME ...] [--time-limit S]

FOLDER (default ../shared/bench/placement beside the repository) holds minimalloc/
(A..K.1048576.csv, placed at capacity 1048576, the number in the name), somas_tensors/
and iopddl/ (placed at capacity = their lower bound, i.e. minimising the height). Per
instance: buffers, lower bound (largest live total; raised when the search proves it),
height, % over the bound, whether the height is within the capacity, the wall seconds
until the first placement within the capacity (`fit s`; the run goes on lowering the
height below the capacity until it is proven optimal or the time limit ends it), CPU and wall
seconds, the best greedy height of the same run and the method that won. Each instance
runs in its own process (`--time-limit`, default 60 s) and is validated by
`find_violations`. Targets (issue 12, 2-core machine): A..K at 1048576 within 60 s;
resnet50 and G_1 at their lower bounds; pangu_2.6B, S_1, Y_1 within 1% in under 60 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDER = ROOT.parent / "shared" / "bench" / "placement"


def measure(path: str, capacity: int | None, time_limit: float) -> dict:
    """One instance in this process: the figures as a dict."""
    from tileplan.placement import find_violations, lower_bound, place, read_csv

    problem = read_csv(path)
    if capacity is None:
        capacity = lower_bound(problem.columns())
    cpu, wall = time.process_time(), time.perf_counter()
    result = place(problem, capacity, time_limit=time_limit)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    elapsed, fit = 0.0, None  # wall seconds of the attempts up to the first within the capacity
    for attempt in result.attempts:
        elapsed += attempt.seconds
        if attempt.height is not None and attempt.height <= capacity:
            fit = elapsed
            break
    return {"fit": fit, "buffers": len(problem.buffers), "bound": result.lower_bound, "height": result.height,
            "capacity": capacity, "fits": result.fits, "optimal": result.optimal, "cpu": cpu, "wall": wall,
            "greedy": result.greedy_height, "method": result.method,
            "valid": not find_violations(problem, result.offsets, limit=1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=str(DEFAULT_FOLDER))
    ap.add_argument("--only", nargs="*", default=None, help="instance names (file stems) to run")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--one", nargs=2, metavar=("PATH", "CAPACITY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        path, capacity = args.one
        print(json.dumps(measure(path, None if capacity == "bound" else int(capacity), args.time_limit)))
        return 0
    folder = Path(args.folder)
    cases = [(p, p.name.split(".")[1]) for p in sorted((folder / "minimalloc").glob("*.csv"))]
    cases += [(p, "bound") for sub in ("somas_tensors", "iopddl") for p in sorted((folder / sub).glob("*.csv"))]
    if args.only:
        cases = [(p, c) for p, c in cases if p.stem in args.only or p.name.split(".")[0] in args.only]
    if not cases:
        print(f"no instances under {folder}", file=sys.stderr)
        return 2
    print(f"{'instance':<16}{'buffers':>8}{'lower bound':>15}{'height':>15}{'over %':>8}{'fits':>6}"
          f"{'fit s':>7}{'cpu s':>8}{'wall s':>8}{'greedy':>15}{'greedy %':>9}  method")
    for path, capacity in cases:
        run = subprocess.run([sys.executable, __file__, "--one", str(path), capacity, "--time-limit",
                              str(args.time_limit)], check=False, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{path.stem:<16} failed: {run.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(run.stdout)
        over = 100.0 * (r["height"] - r["bound"]) / r["bound"]
        gover = 100.0 * (r["greedy"] - r["bound"]) / r["bound"]
        fits = ("yes" if r["fits"] else "no") + ("" if r["valid"] else " INVALID")
        fit = "-" if r["fit"] is None else f"{r['fit']:.1f}"
        print(f"{path.stem:<16}{r['buffers']:>8}{r['bound']:>15}{r['height']:>15}{over:>8.2f}{fits:>6}{fit:>7}"
              f"{r['cpu']:>8.1f}{r['wall']:>8.1f}{r['greedy']:>15}{gover:>9.2f}  {r['method']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
