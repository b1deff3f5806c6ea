"""Placement on the public instances and on generated large problems; prints figures, asserts nothing.

    .venv/bin/python benchmarks/placement.py [FOLDER] [--only NAME ...] [--time-limit S]
    .venv/bin/python benchmarks/placement.py --large N [--time-limit S]

FOLDER (default ../shared/bench/placement beside the repository) holds minimalloc/
(A..K.1048576.csv, placed at capacity 1048576, the number in the name), somas_tensors/
and iopddl/ (placed at capacity = their lower bound). Each instance is placed twice,
each time in its own process (`--time-limit`, default 60 s): as `tileplan place` does
by default, stopping at the first placement within the capacity, and as with
`--minimize`, lowering the height below the capacity until it is proven optimal or the
time limit ends it (at capacity = lower bound the two are the same search). Per
instance: buffers, lower bound (largest live total; raised when a search proves it),
then for each run the height, % over the bound, whether it is within the capacity, CPU
and wall seconds of `place` and the method that won; each placement is validated by
`find_violations`. Targets (issue 12, 2-core machine): A..K at 1048576 within 60 s;
resnet50 and G_1 at their lower bounds; pangu_2.6B, S_1, Y_1 within 1% in under 60 s.

`--large N` writes three problems of about N buffers to a temporary folder (random: short
lifetimes over N / 8 steps, 1% long ones, sizes up to 64 KB; tiled: IOPDDL's Y_1 repeated
in time to N buffers, when FOLDER has it; all live: buffer i from step i to the end, so
all N are live at the last step) and runs the CLI on each in a fresh process,
`tileplan place FILE --capacity C --time-limit S` (default S 5) with C the lower bound
(nothing reaches it: the whole limit is used) and C 10% above it (the first placement
ends the run): wall seconds and CPU seconds (user + system of the child) of the whole
command, interpreter start, reading and writing included.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FOLDER = ROOT.parent / "shared" / "bench" / "placement"
TILEPLAN = Path(sys.executable).parent / "tileplan"


def measure(path: str, capacity: int | None, time_limit: float, minimize: bool) -> dict:
    """One instance in this process: the figures as a dict."""
    from tileplan.placement import find_violations, lower_bound, place, read_csv

    problem = read_csv(path)
    if capacity is None:
        capacity = lower_bound(problem.columns())
    cpu, wall = time.process_time(), time.perf_counter()
    result = place(problem, capacity, time_limit=time_limit, minimize=minimize)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"buffers": len(problem), "bound": result.lower_bound, "height": result.height, "capacity": capacity,
            "fits": result.fits, "optimal": result.optimal, "cpu": cpu, "wall": wall, "method": result.method,
            "valid": not find_violations(problem, result.offsets, limit=1)}


def instances(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    cases = [(p, p.name.split(".")[1]) for p in sorted((folder / "minimalloc").glob("*.csv"))]
    cases += [(p, "bound") for sub in ("somas_tensors", "iopddl") for p in sorted((folder / sub).glob("*.csv"))]
    if args.only:
        cases = [(p, c) for p, c in cases if p.stem in args.only or p.name.split(".")[0] in args.only]
    if not cases:
        print(f"no instances under {folder}", file=sys.stderr)
        return 2
    runs = ("first fit", "--minimize")
    print(f"{'':<16}{'':>8}{'':>15}" + "".join(f"  {run:<52}" for run in runs))
    print(f"{'instance':<16}{'buffers':>8}{'lower bound':>15}"
          + f"  {'height':>15}{'over %':>8}{'fits':>5}{'cpu s':>7}{'wall s':>7}  {'method':<12}" * 2)
    for path, capacity in cases:
        figures = []
        for minimize in (False, True):
            command = [sys.executable, __file__, "--one", str(path), capacity, "--time-limit", str(args.time_limit)]
            run = subprocess.run(command + (["--minimize"] if minimize else []), check=False, capture_output=True,
                                 text=True)
            if run.returncode != 0:
                figures.append(None)
                print(f"{path.stem}: failed: {run.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            figures.append(json.loads(run.stdout))
        known = [f for f in figures if f is not None]
        if not known:
            continue
        line = f"{path.stem:<16}{known[0]['buffers']:>8}{max(f['bound'] for f in known):>15}"
        for r in figures:
            if r is None:
                line += f"  {'failed':<52}"
                continue
            over = 100.0 * (r["height"] - r["bound"]) / r["bound"] if r["bound"] else 0.0
            fits = ("yes" if r["fits"] else "no") + ("" if r["valid"] else " INVALID")
            line += (f"  {r['height']:>15}{over:>8.2f}{fits:>5}{r['cpu']:>7.1f}{r['wall']:>7.1f}  "
                     f"{r['method'][:12]:<12}")
        print(line, flush=True)
    return 0


def random_rows(n: int, seed: int = 0) -> list[str]:
    """Short lifetimes over n / 8 steps, 1% long ones (up to n / 4 steps), sizes up to 64 KB."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        lower = rng.randrange(max(1, n // 8))
        life = rng.randrange(1, max(2, n // 4)) if rng.random() < 0.01 else rng.randrange(1, 12)
        rows.append(f"r{i},{lower},{lower + life},{rng.randrange(1, 65537)}\n")
    return rows


def all_live_rows(n: int, seed: int = 0) -> list[str]:
    """Buffer i from step i to the end: all n live at once at the last step."""
    rng = random.Random(seed)
    return [f"l{i},{i},{n},{rng.randrange(1, 65537)}\n" for i in range(n)]


def tiled_rows(source: Path, n: int) -> list[str]:
    """The instance's rows repeated, each copy after the last in time, to about n rows."""
    lines = source.read_text().splitlines()[1:]
    span = max(int(line.split(",")[2]) for line in lines)
    rows = []
    for copy in range(max(1, round(n / len(lines)))):
        for line in lines:
            ident, lower, upper, size = line.split(",")
            rows.append(f"{ident}_{copy},{int(lower) + copy * span},{int(upper) + copy * span},{size}\n")
    return rows


def large(args: argparse.Namespace) -> int:
    from tileplan.placement import lower_bound, read_csv

    folder = Path(tempfile.mkdtemp(prefix="placement-large-"))
    problems = {"random": random_rows(args.large)}
    y1 = Path(args.folder) / "iopddl" / "Y_1.csv"
    if y1.exists():
        problems["Y_1 tiled"] = tiled_rows(y1, args.large)
    problems["all live"] = all_live_rows(args.large)
    print(f"tileplan place FILE --capacity C --time-limit {args.time_limit:g}, one fresh process each")
    print(f"{'problem':<12}{'buffers':>9}{'MB':>6}{'capacity':>22}{'wall s':>8}{'cpu s':>7}{'exit':>5}  result")
    for name, rows in problems.items():
        path = folder / (name.replace(" ", "_") + ".csv")
        with open(path, "w") as fh:
            fh.write("id,lower,upper,size\n")
            fh.writelines(rows)
        bound = lower_bound(read_csv(str(path)).columns())
        for label, capacity in (("bound", bound), ("bound+10%", bound + bound // 10)):
            out = folder / "placed.csv"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall = time.perf_counter()
            run = subprocess.run([str(TILEPLAN), "place", str(path), "--capacity", str(capacity), "--time-limit",
                                  str(args.time_limit), "-o", str(out), "-f"], capture_output=True, text=True,
                                 check=False)
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            said = (run.stdout or run.stderr).splitlines()[0] if (run.stdout or run.stderr) else ""
            print(f"{name:<12}{len(rows):>9}{os.path.getsize(path) / 1e6:>6.0f}{label + ' ' + str(capacity):>22}"
                  f"{wall:>8.1f}{cpu:>7.1f}{run.returncode:>5}  {said.split(': ', 1)[-1]}", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("folder", nargs="?", default=str(DEFAULT_FOLDER))
    ap.add_argument("--only", nargs="*", default=None, help="instance names (file stems) to run")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds (default 60, with --large 5)")
    ap.add_argument("--large", type=int, metavar="N", help="time the CLI on generated problems of N buffers")
    ap.add_argument("--minimize", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--one", nargs=2, metavar=("PATH", "CAPACITY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.time_limit is None:
        args.time_limit = 5.0 if args.large else 60.0
    if args.one:
        path, capacity = args.one
        print(json.dumps(measure(path, None if capacity == "bound" else int(capacity), args.time_limit,
                                 args.minimize)))
        return 0
    if args.large:
        return large(args)
    return instances(args)


if __name__ == "__main__":
    sys.exit(main())
