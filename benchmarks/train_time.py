"""Time of planning training: the CLI in a fresh process, export included; prints
figures, asserts nothing.

    .venv/bin/python benchmarks/train_time.py [--cases NAME ...]

Each case writes a published model's `config.json` (`benchmarks/fidelity_training.py`)
to a temporary folder and runs `tileplan plan CONFIG --train --no-what-if ...` with the
published configuration in its own process: CPU seconds (user + system of the child,
`os.wait4`: interpreter start, imports, the joint graph's export and every IPU's plan
and report), wall seconds and the child's peak RSS. CPU seconds are the figures to
compare (this machine is shared: other jobs inflate wall time). Target (issue 20):
BERT-Large fine-tuning at sequence 384 over 4 IPUs under 30 s CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from fidelity_training import CASES, IPU_CONFIG_DEFAULTS  # noqa: E402


def run(case, folder: Path) -> tuple[float, float, float, int, str]:
    """(CPU s, wall s, peak RSS MB, exit code, the first line printed) of one case."""
    (folder / case.name).mkdir(parents=True, exist_ok=True)
    config = folder / case.name / "config.json"
    config.write_text(json.dumps(case.config))
    defaults = folder / case.name / "ipu_config.json"
    defaults.write_text(json.dumps(IPU_CONFIG_DEFAULTS))
    flags = [str(defaults) if flag == "{defaults}" else flag for flag in case.flags]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NO_COLOR": "1"}
    command = [sys.executable, "-m", "tileplan.cli.main", "plan", str(config), "--train", "--no-what-if", "-f",
               "-o", str(folder / f"{case.name}.json"), *flags]
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = child.stdout.read() if child.stdout is not None else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    first = out.splitlines()[0] if out else ""
    return (usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status),
            first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=["bert-large-squad-4"],
                        help=f"among {', '.join(c.name for c in CASES)}")
    args = parser.parse_args()
    print("| case | CPU s | wall s | peak RSS | exit | verdict |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if case.name in args.cases:
                cpu, wall, rss, code, first = run(case, Path(tmp))
                verdict = first.split(": ", 1)[1].split(" (")[0] if ": " in first else first
                print(f"| {case.name} | {cpu:.1f} | {wall:.1f} | {rss:.0f} MB | {code} | {verdict} |", flush=True)


if __name__ == "__main__":
    main()
