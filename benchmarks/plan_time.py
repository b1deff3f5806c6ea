"""Plan time, CPU time and peak memory of tileplan at scale; prints figures and whether
each plan meets its target (`--assert-targets`: exit 1 when one does not).

    .venv/bin/python benchmarks/plan_time.py [--cases CASE ...] [--verbs VERB ...]
        [--report-version auto|1|2] [--timeout S] [--keep DIR] [--json] [--assert-targets]

Cases: `so400m-repeat` (siglip-so400m-patch14-384, 27 layers, F8F143 weights, the
default policy, the encoder as a repeat block), `so400m-unrolled` (the same, unrolled)
and `synthetic:N` (the chain of about N timeline values, the report's `values`:
`tileplan plan synthetic:N`, docs/commands.md). Default: so400m-repeat and synthetic
at 10k, 100k and 1M values.

Every case is `tileplan plan MODEL -o REPORT --no-what-if` (the CLI's default weights,
F8F143 on IPU21) in a fresh Python process, so cases share no memory or caches; then,
for each synthetic size, `tileplan check`, `tileplan summary` and `tileplan html` on
its report (`--verbs`), each in its own process. For every process: CPU seconds (user +
system of the child, `os.wait4`), wall seconds and peak RSS (the child's own, imports
included). CPU seconds are the figures to compare (stable on a loaded machine; the
machine's other jobs inflate wall time, not CPU time). For `plan`, the child also
times its own phases (lowering, planning, exact accounting, placement, report, JSON
text, writing; wrapped where the code has them) and its plan time: CPU and wall of the
CLI's work alone, without interpreter start and imports.

The report's version: `--report-version 2` when `tileplan plan --help` offers it
(`auto`, the default), else version 1; the chosen one is printed. A process still
running after `--timeout` seconds is stopped and shown as such (its finished phases
listed); the readers of a report that was not written are skipped. Reports are
written to a temporary folder, deleted at the end unless `--keep DIR`.
Targets (`TARGETS`, issue 26: CPU seconds of the whole `tileplan plan` process on this
2-core machine, and its peak RSS): synthetic:100000 at most 1.5 s; synthetic:1000000 at
most 12 s and 1.5 GB. Earlier ones (issue 13): report v2 of 1M under 100 MB; check,
summary and html on the 1M report each under 20 s and 2 GB, the page under 20 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASES = ("so400m-repeat", "synthetic:10000", "synthetic:100000", "synthetic:1000000")
VERBS = ("check", "summary", "html")
TOWER = "siglip-so400m-patch14-384"


#: the plan of a case: (most CPU seconds, most peak RSS in MB or None), issue 26
TARGETS: dict[str, tuple[float, float | None]] = {
    "synthetic:100000": (1.5, None),
    "synthetic:1000000": (12.0, 1536.0),
}


def target_text(case: str, r: dict) -> str | None:
    """Whether a plan met its case's target, in words; None for a case without one."""
    if case not in TARGETS:
        return None
    cpu, rss = TARGETS[case]
    wanted = f"<= {cpu:g} s CPU" + (f" and {rss / 1024:g} GB" if rss is not None else "")
    met = "error" not in r and r["cpu_s"] <= cpu and (rss is None or r["peak_rss_mb"] <= rss)
    return f"target {wanted}: {'met' if met else 'NOT MET'}"


def plan_arguments(case: str) -> list[str]:
    """The `tileplan plan` arguments of a case (without -o)."""
    if case.startswith("synthetic:"):
        return [case]
    if case in ("so400m-repeat", "so400m-unrolled"):
        return [TOWER, "--layers", "27", "--weights", "f8f143:-4", *(["--unroll"] if case.endswith("unrolled") else [])]
    raise SystemExit(f"unknown case {case!r}: expected so400m-repeat, so400m-unrolled or synthetic:N")


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "NO_COLOR": "1"}


def tileplan_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tileplan.cli.main", *args]


# The plan child: the CLI in this process, its phases timed ----------------------------------

#: (module, name, phase): functions the child wraps to time, when the code has them
PHASES = (
    ("tileplan.app.request", "PlanRequest.program", "model built"),
    ("tileplan.planner.plan", "lower_program", "lowering"),
    ("tileplan.planner.plan", "account", "exact"),
    ("tileplan.planner.plan", "place_tiles", "placement"),
    ("tileplan.app.request", "plan_program", "plan_program"),
    ("tileplan.cli.plan", "build_report", "report"),
    ("tileplan.cli.plan", "to_json_text", "JSON text"),
    ("tileplan.cli.plan", "write_report", "report written"),
    ("tileplan.cli.plan", "write_atomic", "file written"),
)


def run_plan_child(argv: list[str]) -> int:
    """Run `tileplan <argv>` in this process with its phases timed; a JSON line per
    finished call of a timed function, then one with the totals."""
    import importlib

    from tileplan.cli.main import main as cli

    def timed(phase: str, fn):
        def wrapper(*args, **kwargs):
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                print(json.dumps({"phase": phase, "cpu_s": round(time.process_time() - cpu, 3),
                                  "wall_s": round(time.perf_counter() - wall, 3)}), flush=True)
        return wrapper

    for module_name, name, phase in PHASES:
        module = importlib.import_module(module_name)
        owner: object = module
        *path, attr = name.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is not None and callable(getattr(owner, attr, None)):
            setattr(owner, attr, timed(phase, getattr(owner, attr)))
    cpu, wall = time.process_time(), time.perf_counter()
    code = cli(argv)
    print(json.dumps({"total": True, "cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                      "exit": code}), flush=True)
    return code


# The parent: one fresh process per step ---------------------------------------------------

def measure(command: list[str], timeout: float, stdout_path: Path) -> dict:
    """Run `command` in a child process; its exit, CPU seconds, wall seconds and peak RSS."""
    start = time.perf_counter()
    with open(stdout_path, "w") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, env=environment(), text=True, cwd=ROOT)
        deadline = start + timeout
        stopped = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                _, status, usage = os.wait4(child.pid, 0)
                stopped = True
                break
            time.sleep(0.02)
        child.returncode = 0  # reaped by os.wait4; keep Popen from waiting again
        err.seek(0)
        error_text = err.read()
    figures: dict = {"wall_s": time.perf_counter() - start, "cpu_s": usage.ru_utime + usage.ru_stime,
                     "peak_rss_mb": usage.ru_maxrss / 1024}  # ru_maxrss is in KiB
    if stopped:
        figures["error"] = f"stopped after {timeout:.0f} s"
    else:
        figures["exit"] = os.waitstatus_to_exitcode(status)
        if figures["exit"] not in (0, 1, 3):  # check exits 1 on an inconsistent report: a figure, not a failure
            figures["error"] = (error_text.strip().splitlines() or [f"exit status {figures['exit']}"])[-1]
    return figures


WROTE = re.compile(r"wrote .*: scope (\S+), (\d+) values, (\d+) steps")


def measure_plan(case: str, report: Path, version: int | None, timeout: float) -> dict:
    argv = ["plan", *plan_arguments(case), "-o", str(report), "-f", "--no-what-if"]
    if version is not None:
        argv += ["--report-version", str(version)]
    log = report.with_suffix(".plan.out")
    figures = measure([sys.executable, __file__, "--plan-child", json.dumps(argv)], timeout, log)
    lines = log.read_text().splitlines()
    figures["phases"] = []
    for line in lines:
        if line.startswith('{"phase"'):
            figures["phases"].append(json.loads(line))
        elif line.startswith('{"total"'):
            total = json.loads(line)
            figures["plan_cpu_s"], figures["plan_wall_s"] = total["cpu_s"], total["wall_s"]
        elif (m := WROTE.match(line)) is not None:
            figures["scope"], figures["values"], figures["steps"] = m.group(1), int(m.group(2)), int(m.group(3))
            index = lines.index(line)
            if index + 1 < len(lines):
                figures["verdict"] = lines[index + 1].strip()
    if report.exists():
        figures["report_mb"] = report.stat().st_size / 1e6
    return figures


def measure_verb(verb: str, report: Path, timeout: float) -> dict:
    args = [verb, str(report)]
    if verb == "html":
        page = report.with_suffix(".html")
        args += ["-o", str(page), "-f"]
    figures = measure(tileplan_command(*args), timeout, report.with_suffix(f".{verb}.out"))
    if verb == "html" and report.with_suffix(".html").exists():
        figures["page_mb"] = report.with_suffix(".html").stat().st_size / 1e6
    if verb == "check" and "exit" in figures:
        figures["note"] = {0: "consistent", 1: "INCONSISTENT"}.get(figures["exit"], f"exit {figures['exit']}")
    return figures


def cli_offers_report_version() -> bool:
    done = subprocess.run(tileplan_command("plan", "--help"), capture_output=True, text=True, env=environment(),
                          cwd=ROOT, timeout=120)
    return "--report-version" in done.stdout


#: phases timed inside `plan_program`
INNER = ("lowering", "exact", "placement")


def phase_text(phases: list[dict]) -> str:
    """Phases summed by name (CPU seconds), those inside plan_program in brackets after it."""
    totals: dict[str, float] = {}
    for p in phases:
        totals[p["phase"]] = totals.get(p["phase"], 0.0) + p["cpu_s"]
    inner = ", ".join(f"{name} {totals[name]:.2f}" for name in INNER if name in totals)
    parts = []
    for name, seconds in totals.items():
        if name in INNER:
            continue
        parts.append(f"{name} {seconds:.2f}" + (f" ({inner})" if name == "plan_program" and inner else ""))
    if inner and "plan_program" not in totals:
        parts.append(inner)
    return ", ".join(parts) or "none finished"


def row(case: str, step: str, r: dict) -> str:
    head = f"{case:<18} {step:<8} {r['cpu_s']:>8.2f} {r['wall_s']:>8.2f} {r['peak_rss_mb']:>8.0f}"
    if "error" in r:
        done = f"; phases done (CPU s): {phase_text(r['phases'])}" if r.get("phases") is not None else ""
        return f"{head}  FAILED: {r['error']}{done}"
    notes = []
    if step == "plan":
        if "plan_cpu_s" in r:
            notes.append(f"plan {r['plan_cpu_s']:.2f} s CPU / {r['plan_wall_s']:.2f} s wall")
        if "values" in r:
            notes.append(f"{r['values']:,} values, {r['steps']:,} steps, scope {r['scope']}")
        if "report_mb" in r:
            notes.append(f"report {r['report_mb']:.1f} MB")
    if "page_mb" in r:
        notes.append(f"page {r['page_mb']:.1f} MB")
    if "note" in r:
        notes.append(r["note"])
    return f"{head}  {'; '.join(notes)}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES),
                   help="so400m-repeat, so400m-unrolled, synthetic:N (default: so400m-repeat, synthetic:10000, "
                        "synthetic:100000, synthetic:1000000)")
    p.add_argument("--verbs", nargs="*", choices=VERBS, default=list(VERBS),
                   help="what runs on each synthetic report (default: check summary html)")
    p.add_argument("--report-version", choices=("auto", "1", "2"), default="auto",
                   help="auto: 2 when `tileplan plan` offers --report-version, else 1")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before a process is stopped (default 300)")
    p.add_argument("--keep", metavar="DIR", help="write the reports and pages here and keep them")
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")
    p.add_argument("--assert-targets", action="store_true",
                   help="exit 1 when a plan misses its target (TARGETS: synthetic:100000, synthetic:1000000)")
    p.add_argument("--plan-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.plan_child:
        return run_plan_child(json.loads(args.plan_child))
    for case in args.cases:
        plan_arguments(case)  # an unknown case stops here, before anything runs

    offered = cli_offers_report_version()
    if args.report_version == "auto":
        version: int | None = 2 if offered else None
    else:
        version = int(args.report_version)
        if not offered:
            if version == 2:
                print("tileplan plan does not offer --report-version: cannot write version 2", file=sys.stderr)
                return 2
            version = None  # the CLI writes version 1 without the flag
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; one fresh process per step; "
          f"report version {version or 1}" + (" (--report-version 2)" if version == 2 else
                                              " (tileplan plan has no --report-version)" if not offered else ""))
    print(f"{'case':<18} {'step':<8} {'CPU s':>8} {'wall s':>8} {'RSS MB':>8}  notes")
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="plan_time."))
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    missed = 0
    try:
        for case in args.cases:
            report = (folder / f"{case.replace(':', '-')}.json").resolve()
            report.unlink(missing_ok=True)
            r = measure_plan(case, report, version, args.timeout)
            results.append({"case": case, "step": "plan", **r})
            print(row(case, "plan", r), flush=True)
            if "phases" in r and "error" not in r:
                print(f"{'':<27}phases (CPU s): {phase_text(r['phases'])}", flush=True)
            if "verdict" in r:
                print(f"{'':<27}{r['verdict']}", flush=True)
            if (verdict := target_text(case, r)) is not None:
                print(f"{'':<27}{verdict}", flush=True)
                missed += verdict.endswith("NOT MET")
            if not case.startswith("synthetic:"):
                continue
            for verb in args.verbs:
                if "error" in r or not report.exists():
                    print(f"{case:<18} {verb:<8} {'-':>8} {'-':>8} {'-':>8}  skipped: no report", flush=True)
                    continue
                v = measure_verb(verb, report, args.timeout)
                results.append({"case": case, "step": verb, **v})
                print(row(case, verb, v), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=1, sort_keys=True))
    return 1 if args.assert_targets and missed else 0


if __name__ == "__main__":
    sys.exit(main())
