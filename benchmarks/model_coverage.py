"""The coverage table over transformers' model families: writes docs/model-coverage.md.

    .venv/bin/python benchmarks/model_coverage.py [--cases NAME ...] [--check]

Every architecture of `tests/model_zoo.py` (a small configuration of each: 2 layers,
hidden sizes of 32) is planned four ways: through torch.export on the meta device,
through each ONNX exporter (the legacy one, opset 17, and the dynamo one, opset 18;
each file saved graph-only: every tensor external, the data file deleted) and as a
saved `.pt2` read by tileplan's own reader, and the torch.export graph on a Tenstorrent
n150 (`--frontend tt-mlir`, the latest build, level 0). A cell says `plans (N parameters)` when
the plan went to the end, its report passed `tileplan check` and it holds exactly the
parameters the model (or the file) holds; otherwise why not. The suite's
`tests/test_model_coverage.py` re-runs the torch.export column and a subset of the
others and checks they are what this file says. `--check` compares instead of
writing. Takes a few minutes (the dynamo exporter is the slow part).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import model_zoo  # noqa: E402
from model_zoo import CASES, COLUMNS, DOC, run_n150, run_onnx, run_pt2, run_torch  # noqa: E402

HEAD = """# Model coverage

Which architectures transformers ships tileplan plans, and how: a small configuration
of each (2 layers, hidden sizes of 32; `tests/model_zoo.py`) planned through
torch.export on the meta device, through each ONNX exporter (legacy, opset 17; dynamo,
opset 18; each file saved graph-only: every tensor external, the data file deleted, so
shape operands come from the file's `value_info` or its own arithmetic) and as a saved
`.pt2` read by tileplan's own reader. `plans (N parameters)`: the plan went to the
end, its report passed `tileplan check`, and it holds exactly the parameters the model
holds (for ONNX: the floating initializers the file's outputs depend on, the
exporter's constants included). Otherwise the cell says why not. The last column plans
the torch.export graph on a Tenstorrent n150 as tt-xla and tt-mlir compile it
(`--frontend tt-mlir`, the latest build, optimization level 0): `fits` with the
verdict's figures, `does not fit` in tt-metal's words, or the operation it cannot plan
(docs/tenstorrent-tt-mlir.md). Written by
`benchmarks/model_coverage.py`; `tests/test_model_coverage.py` re-runs the
torch.export column and a subset of the others in the suite and checks them against
this table.

"""


def row(case: model_zoo.Case, folder: Path) -> list[str]:
    cells = [run_torch(case), run_onnx(case, "legacy", folder), run_onnx(case, "dynamo", folder),
             run_pt2(case, folder), run_n150(case)]
    return [case.name, case.family, *cells]


def table(rows: list[list[str]]) -> str:
    header = ["architecture", "family", *COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def summary(rows: list[list[str]]) -> str:
    counts = []
    for k, column in enumerate(COLUMNS, start=2):
        plans = sum(r[k].startswith(("plans (", "fits (")) for r in rows)
        counts.append(f"{column} {plans} of {len(rows)}")
    return f"Planned: {', '.join(counts)}.\n\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="*", help="only these architectures (the table keeps the others' rows)")
    p.add_argument("--check", action="store_true", help="compare with docs/model-coverage.md, write nothing")
    args = p.parse_args()
    known = model_zoo.read_doc() if DOC.exists() else {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if args.cases and case.name not in args.cases:
                old = known.get(case.name)
                if old is not None:
                    rows.append([old[h] for h in ("architecture", "family", *COLUMNS)])
                continue
            start = time.process_time()
            rows.append(row(case, Path(tmp)))
            print(f"{case.name}: {time.process_time() - start:.1f} CPU s: " + " / ".join(rows[-1][2:]), flush=True)
    text = HEAD + summary(rows) + table(rows)
    if args.check:
        same = DOC.exists() and DOC.read_text() == text
        print("docs/model-coverage.md is current" if same else "docs/model-coverage.md differs")
        return 0 if same else 1
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
