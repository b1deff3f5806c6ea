"""CPU seconds, peak memory and output size of the readers `summary`, `html` and `plot`
on reports of the synthetic chain; prints figures, asserts nothing.

    .venv/bin/python benchmarks/readers.py [--values N ...] [--report FILE ...] [--version 1|2]

`--values N` plans `synthetic` with N timeline values (about; `SyntheticConfig` takes
N / 2.28 graph values) and writes its report (version 2 by default) to a temporary
folder first; `--report` takes reports already written. Each reader runs as
`tileplan VERB REPORT` in a fresh process: its CPU seconds (user + system) and peak
RSS are that process's own (`os.wait4`), reading the report and imports included.
Targets (issue 13, CPU seconds on a 2-core machine): on a 1,000,000-value report
each reader under 20 s and 2 GB, the page under 20 MB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TILEPLAN = [sys.executable, "-m", "tileplan.cli.main"]
VERBS = ("summary", "html", "plot")
#: timeline values per graph value of the synthetic chain with its default sizes
VALUES_PER_GRAPH_VALUE = 2.28


def run(cmd: list[str], out: Path | None = None) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, peak RSS bytes) of `cmd` in a fresh process."""
    start = time.perf_counter()
    with open(out or os.devnull, "wb") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.PIPE, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss * 1024


def make_report(values: int, folder: Path, version: int) -> Path:
    path = folder / f"synthetic-{values}.json"
    graph = max(100, round(values / VALUES_PER_GRAPH_VALUE))
    code = ("import sys; from tileplan.builtins.synthetic import SyntheticConfig, build_synthetic;"
            "from tileplan.planner.plan import plan_program; from tileplan.model.machine import IPU21;"
            "from tileplan.lowering.policy import policy; from tileplan.kernel.options import Options;"
            "from tileplan.app.build import build_report; from tileplan.report.format import write_report;"
            f"write_report(sys.argv[1], build_report(plan_program(build_synthetic(SyntheticConfig(values={graph})),"
            f" IPU21, policy('default'), Options())), version={version})")
    cpu, wall, rss = run([sys.executable, "-c", code, str(path)])
    print(f"planned {path.name}: {cpu:.1f} CPU s, {rss / 2**20:.0f} MB, report {path.stat().st_size / 2**20:.1f} MB",
          flush=True)
    return path


def measure(report: Path, folder: Path) -> None:
    # counted in a child: this process stays small, since a child's peak RSS starts at its parent's
    code = ("import sys; from tileplan.report.format import read_report; r = read_report(sys.argv[1]);"
            "print(len(r.values), len(r.steps))")
    counts = subprocess.run([sys.executable, "-c", code, str(report)], capture_output=True, text=True, check=True)
    values, steps = map(int, counts.stdout.split())
    print(f"\n{report} ({report.stat().st_size / 2**20:.1f} MB): {values:,} values, {steps:,} steps")
    print(f"{'reader':<8} {'CPU s':>7} {'wall s':>7} {'peak RSS':>9} {'output':>9}")
    for verb in VERBS:
        out = folder / f"{report.stem}.{'png' if verb == 'plot' else verb}"
        args = [*TILEPLAN, verb, str(report)] + ([] if verb == "summary" else ["-o", str(out), "-f"])
        cpu, wall, rss = run(args, out if verb == "summary" else None)
        print(f"{verb:<8} {cpu:>7.2f} {wall:>7.2f} {rss / 2**20:>6.0f} MB {out.stat().st_size / 2**20:>6.2f} MB",
              flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--values", type=int, nargs="*", default=[], metavar="N", help="synthetic reports of about N values")
    p.add_argument("--report", type=Path, nargs="*", default=[], metavar="FILE", help="reports already written")
    p.add_argument("--version", type=int, default=2, choices=(1, 2), help="report version to write (default 2)")
    args = p.parse_args()
    if not args.values and not args.report:
        args.values = [100_000]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reports = [*args.report, *(make_report(n, folder, args.version) for n in args.values)]
        for report in reports:
            measure(report, folder)


if __name__ == "__main__":
    main()
