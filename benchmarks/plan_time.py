"""Plan time and peak memory of tileplan on three programs; prints figures, asserts nothing.

    .venv/bin/python benchmarks/plan_time.py [--cases NAME ...] [--values N] [--timeout S]

Cases: `so400m-repeat` (siglip-so400m-patch14-384, 27 layers, F8F143 weights, the
default policy, the encoder as a repeat block), `so400m-unrolled` (the same, the
encoder unrolled) and `synthetic` (tileplan.model.synthetic with `--values` graph
values, 43,800 by default, which the lowering turns into just over 100,000 timeline
values: the report's `values`, the "100,000 values" of the target). Each case runs in a fresh
Python process, so cases share no memory or caches; its peak RSS is that process's own (`os.wait4`), imports
included. Plan time = lowering + planning + exact accounting + building the report's
JSON text (`plan_program`, `build_report`, `to_json_text`); building the model is
timed apart. A case still running after `--timeout` seconds is stopped and shown as
such. Targets (issue 5, on a 2-core machine): so400m 27 layers with exact accounting
under 2 s and 1 GB; 100,000 values under 20 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CASES = ("so400m-repeat", "so400m-unrolled", "synthetic")
ROOT = Path(__file__).resolve().parent.parent


# The child: one case; a JSON line per phase done, then one with the figures ----------------

def run_case(name: str, values: int) -> dict:
    """Build, plan and report one case in this process; the phases' seconds and sizes."""
    import tileplan.planner.plan as planner
    from tileplan.lowering.core import Options
    from tileplan.lowering.policy import policy
    from tileplan.model.machine import IPU21
    from tileplan.report.build import build_report
    from tileplan.report.format import to_json_text

    phases: dict[str, float] = {"lowering": 0.0, "exact": 0.0}

    def timed(phase: str, fn):  # count a pass's time under `phase` (the planner calls it by module name)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                phases[phase] += time.perf_counter() - start
        return wrapper

    planner.lower_program = timed("lowering", planner.lower_program)
    planner.account = timed("exact", planner.account)

    start = time.perf_counter()
    program = build_program(name, values)
    built = time.perf_counter()
    progress("model built", built - start)
    plan = planner.plan_program(program, IPU21, policy("default"), Options())
    planned = time.perf_counter()
    progress(f"plan_program (lowering {phases['lowering']:.2f} s, exact {phases['exact']:.2f} s)", planned - built)
    report = build_report(plan)
    reported = time.perf_counter()
    progress("build_report", reported - planned)
    text = to_json_text(report)
    done = time.perf_counter()
    return {
        "build_model_s": built - start,
        "lowering_s": phases["lowering"],
        "planning_s": planned - built - phases["lowering"] - phases["exact"],
        "exact_s": phases["exact"],
        "build_report_s": reported - planned,
        "json_text_s": done - reported,
        "plan_time_s": done - built,
        "scope": plan.scope,
        "operations": len(program.operations()),
        "values": len(plan.values),
        "steps": len(plan.steps),
        "largest_live_set": max((len(s.live) for s in plan.steps), default=0),
        "estimate_peak_bytes": plan.peaks.total,
        "exact_peak_bytes": plan.exact.peak("total")[0] if plan.exact is not None else None,
        "fits": plan.verdict.fits,
        "report_mb": len(text.encode()) / 1e6,
    }


def progress(phase: str, seconds: float) -> None:
    """One line per finished phase, so that a stopped case still says how far it got."""
    print(json.dumps({"phase": phase, "seconds": round(seconds, 2)}), flush=True)


def build_program(name: str, values: int):
    from tileplan.model import siglip
    from tileplan.model.precision import from_option
    from tileplan.model.synthetic import SyntheticConfig, build_synthetic

    if name == "synthetic":
        return build_synthetic(SyntheticConfig(values))
    cfg = siglip.config("siglip-so400m-patch14-384", layers=27)
    return siglip.build_vit(cfg, from_option("f8f143:-4"), unroll=name == "so400m-unrolled")


# The parent: one fresh process per case ------------------------------------------------

def measure(name: str, values: int, timeout: float) -> dict:
    """Run one case in a child process; its figures plus wall time and peak RSS."""
    command = [sys.executable, __file__, "--child", name, "--values", str(values)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            _, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.02)
    wall = time.perf_counter() - start
    out, err = child.stdout.read(), child.stderr.read()  # type: ignore[union-attr]
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    figures: dict = {"case": name, "wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024}  # ru_maxrss is in KiB
    figures["phases_done"] = [(x["phase"], x["seconds"]) for x in lines if "phase" in x]
    if pid == 0:
        figures["error"] = f"stopped after {timeout:.0f} s"
    elif os.waitstatus_to_exitcode(status) != 0:
        figures["error"] = (err.strip().splitlines() or [f"exit status {status}"])[-1]
    else:
        figures.update(next(x["figures"] for x in lines if "figures" in x))
    return figures


def render(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        if "error" in r:
            done = ", ".join(f"{phase} in {seconds} s" for phase, seconds in r["phases_done"]) or "nothing"
            lines.append(f"{r['case']}: FAILED ({r['error']}; done: {done}), peak RSS {r['peak_rss_mb']:.0f} MB")
            continue
        exact = r["exact_peak_bytes"]
        lines.append(
            f"{r['case']}: plan time {r['plan_time_s']:.2f} s, peak RSS {r['peak_rss_mb']:.0f} MB "
            f"(process wall {r['wall_s']:.2f} s)\n"
            f"  phases: lowering {r['lowering_s']:.2f} s, planning {r['planning_s']:.2f} s, "
            f"exact {r['exact_s']:.2f} s, report {r['build_report_s']:.2f} s, JSON text {r['json_text_s']:.2f} s; "
            f"model built in {r['build_model_s']:.2f} s\n"
            f"  {r['operations']} operations, {r['values']} values, {r['steps']} steps, largest live set "
            f"{r['largest_live_set']}, report {r['report_mb']:.1f} MB; scope {r['scope']}, peak {exact} B exact "
            f"/ {r['estimate_peak_bytes']} B estimate, fits {r['fits']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    p.add_argument("--values", type=int, default=43_800,
                   help="graph values of the synthetic case (default 43800: just over 100,000 timeline values)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before a case is stopped (default 300)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")
    p.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps({"figures": run_case(args.child, args.values)}))
        return 0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; one fresh process per case")
    rows = []
    for name in args.cases:
        rows.append(measure(name, args.values, args.timeout))
        print(render(rows[-1:]), flush=True)
    if args.json:
        print(json.dumps(rows, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
