"""Plan every published compile tileplan can express and write docs/fidelity.md, and
tileplan's measured error band (src/tileplan/app/ipu-error-band.json).

    .venv/bin/python benchmarks/fidelity.py [--only KEY...] [--no-write]
    .venv/bin/python benchmarks/fidelity.py --band

Each case (tests/fidelity_cases.py: what was compiled, its source, the published
result, how it is rebuilt) is planned; the table gives tileplan's verdict beside the
published one, the worst tile's tensor peak per IPU (the verdict adds the memory that is not tensors), the
variables summed over the tiles per IPU, and why tileplan differs where it does.
Prints CPU and wall seconds per case (this machine is shared: CPU is the figure).

The error band: every case with a published figure of all the memory on an IPU's
worst tile (`Case.worst_tiles`, here and in benchmarks/fidelity_training.py) gives one
measurement, tileplan's error on that figure; the published variables summed over an
IPU's tiles are measured beside them (another quantity, not in the band). A full run
writes them to the band's file and docs/fidelity.md's last section; `--band` plans only
those cases and writes the same. tests/test_error_band.py holds the file to the cases.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from fidelity_cases import CASES, FROZEN_AT, Answer, Case, Evidence  # noqa: E402
import fidelity_training  # noqa: E402

from tileplan.app.error_band import DATA, Measurement, Quantity, derive  # noqa: E402

HEADER = """# Fidelity: tileplan against published Poplar compiles

## How close to the compiler

tileplan plans what Poplar and PopLibs would lay out (docs/notes/IPU-LOWERING.md,
docs/notes/CONV-NOTES.md and docs/notes/FIDELITY.md give the sources; the table below
the evidence): parameters, buffers and constants are variables, live for the whole
program; a weight is created in the layout its consumer asks for (each tile already
holds its block when the plan does not split the rows, else it is spread once and each
tile receives its block at the step); matmuls and convolutions are planned as poplin plans them
(`kernel/convplan.py`: parallel splits over batch, field, input and output channels
and groups, one serial split, the fastest whose temporary bytes fit the available
memory proportion, with poplin's relaxation when none does), with no im2col; a
convolution's output stays where its plan computed it for the next one; precisions
follow the model, half partials on request. A serial split of the output channels
broadcasts the input once, before its loop, and keeps it while each iteration's
partials are reduced; an input poplin rearranges (a linear mapping, or one broadcast
to more than 7 tiles) is copied beside it. The planner counts cycles as PopLibs
estimates its AMP vertices (`kernel/ampcycles.py`: PopLibs' 1x1 and nx1 vertex
estimates with their defaults, 4 cycles a position a worker for half activations, 8
for float, the weights loaded without 128-bit loads), and relaxes the memory bound as
poplin does (2x, then 4x, then none). Against the published compiles
(`.venv/bin/python benchmarks/fidelity.py`, the table below; training:
docs/fidelity-training.md) each case is marked calibration (looked at while
modelling) or held out (added after the model was frozen, never tuned on), and the
two are counted apart: 24 of 25 calibration verdicts agree (the small Poplar, PopART
and PopLibs programs on 1, 2 and 4 tiles, BERT-small on Mk1, BERT-Large inference on
one and two IPUs (on one IPU at sequence 128, whose profile PopLiner publishes, the
variables summed over the tiles are 729.3 MB against the profile's 718.5 MB: +1.5 %),
ViT-B/16 in FP32 at micro-batch 2 and out of memory at 64, GPT-2 small and medium
inference as Graphcore's script runs them, ResNet-50 in FP16 at batch 90 as Graphcore's
inference configuration runs it (half partials, uint8 images normalised on the IPU),
ResNeXt-50 in FP32 at batch 20 at proportion 0.35, and the torchvision models of
PopTorch's tests); the one miss, ResNeXt-50 at proportion 0.8 (fits), says why in the
table. Every CNN row plans the model its script builds (torchvision's own definition,
or Graphcore's EfficientNet on torchvision's layers), exported at the published
batch and input dtype (tests/data/zoo). Held out: 9 of 10 inference verdicts agree
(BERT-small as `BertModel` in FP32 and FP16, GPT-2 large and XL inference, and
Graphcore's CNN inference configurations: EfficientNet-B0 at batch 49, B4 at 12, their
G16-GN variants at 106 and 26, ResNeXt-101 at 16, all FP16 on one Mk2 IPU, the closest
EfficientNet-B4-G16-GN at 84 % of its worst tile; Wide ResNet-50-2 on Mk2 fits where
PopTorch's test file says it does not) and 5 of 5 training verdicts. Two further
rows, a PopTorch test on the 4-tile IPU model, are shown but not counted: the IPU
model runs programs that are out of memory, and that test's parameters alone exceed
its 4 tiles. What tileplan does not model there:
Graphcore's own GPT-2 attention and the LM head's serialisation in 4, and the memory
that is not tensors beyond its estimate.
The verdict counts all the memory on a tile, as Poplar's message does: the worst tile's
tensors and the memory that is not tensors (vertex code and state, exchange and
control code, stack), modelled per plan at rates measured on PopLiner's BERT-Large
profile (docs/report-format.md, "Memory that is not tensors"); no reserve without a
source stands in for it. Counting it so turned no verdict of the table. It is the
least certain part, as it is in Graphcore's own profile-based reconstructions. The
last section measures tileplan's error on every published figure of the memory on a
worst tile, the band each verdict states: within 2.5 % on PopLiner's BERT-Large split
(the calibration of the rates), 5.2 % low on the matmul chain's Poplar message, and
outside 5 % on two: 16.7 % low on ViT-B/16's message (Poplar names tile 0, tileplan's
worst tile is tile 80) and 20.1 % low on PopLiner's BERT-tiny training profile (its
worst tile holds 1.52 times its mean tile, BERT-Large's 1.05 times; tileplan's mean
non-tensor tile is 32 % above the profile's, so the bytes missing are a concentration
on some tiles that tileplan's mappings do not make). Spreading each category over the
tiles its steps' outputs are mapped to, instead of evenly, was measured and does not
close either (-16.5 % and -28.7 %), nor does keeping poputil's 128 bytes a tile where
PopART and popops map linearly (-16.7 % and -20.1 %: PopART's linear mapper starts each
tensor where the last ended, so small tensors do not pile up on tile 0;
docs/notes/NON-TENSOR.md, sections 8 and 9). Neither was tuned to agree.

## The published compiles

Generated by `.venv/bin/python benchmarks/fidelity.py` (the cases and their rebuilds:
`tests/fidelity_cases.py`; `tests/test_fidelity.py` pins each verdict). A published
result is quoted as published; "peak" is the exact worst tile's tensor bytes, one figure
per IPU; the verdict adds the memory that is not tensors, modelled per plan
(docs/report-format.md, "Memory that is not tensors"), and compares the sum with the
tile's memory (638,976 B on a Mk2), as Poplar does; "variables" sums each tile's peak tensor bytes over the IPU's tiles
(what a profile's variables memory sums), in MB; where a real compile's profile is
published, its figure and the difference stand beside it. "evidence" says whether a
case was looked at while modelling (calibration: its agreement may have been made by
a change done with it in view) or added after the model was frozen and never tuned on
(held out); the two are counted apart.

"""


def run(case: Case) -> tuple[Answer | None, str, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        answer, error = case.build(), ""
    except Exception as e:  # a case that cannot be planned is a row saying why
        answer, error = None, f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    return answer, error, time.process_time() - cpu, time.perf_counter() - wall


def row(case: Case, answer: Answer | None, error: str) -> str:
    evidence = case.evidence.value
    if answer is None:
        return (f"| {case.key} | {evidence} | {case.what} | {case.published} | not planned: {error} | | | miss | "
                f"{case.source} |")
    verdict = "fits" if answer.fits else "does not fit"
    agree = "agrees" if answer.fits == case.published_fits else "miss:"
    if case.not_comparable:
        agree = case.not_comparable
    peaks = ", ".join(f"{p:,} (tile {t})" for p, t in zip(answer.peaks, answer.tiles))
    variables = ", ".join(f"{v / 1e6:.1f}" for v in answer.variables)
    if case.variables is not None:
        variables += " (profile: " + ", ".join(
            f"{p / 1e6:.1f}, {100 * (v - p) / p:+.1f} %" for v, p in zip(answer.variables, case.variables)) + ")"
    note = f" {case.miss}" if case.miss else ""
    return (f"| {case.key} | {evidence} | {case.what} | {case.published} | {verdict} | {peaks} | {variables} | "
            f"{agree}{note} | {case.source} |")


def summary(cases: list[Case], agreed: set[str]) -> str:
    """The agreement counted apart for calibration and held-out cases (cases whose
    outcome is no verdict on fitting counted in neither)."""
    parts = []
    for evidence in Evidence:
        comparable = [c for c in cases if c.evidence is evidence and not c.not_comparable]
        hits = sum(c.key in agreed for c in comparable)
        parts.append(f"{evidence.value}: {hits} of {len(comparable)} verdicts agree")
    others = sum(1 for c in cases if c.not_comparable)
    return (f"{'; '.join(parts)} with the published results ({others} further cases shown are not verdicts on "
            f"fitting, each with its reason). Held-out cases were added after the model was frozen at {FROZEN_AT} "
            "and were never tuned on.\n\n")


#: the heading of docs/fidelity.md's last section, the band's (written from its file)
BAND_HEADING = "## tileplan's error band"
#: the variables' figure, as a measurement states it
VARIABLES_WHAT = "the profile's variables summed over the IPU's tiles (`max_vars_usage`)"


def measured(case: Case) -> bool:
    return bool(case.worst_tiles) or case.variables is not None


def training_measured() -> list[fidelity_training.Case]:
    return [c for c in fidelity_training.CASES if c.worst_tiles or c.variables is not None]


def worst_figures(all_memory: tuple[int, ...], stack: tuple[int, ...]) -> dict[Quantity, tuple[int, ...]]:
    """Each IPU's worst tile as each worst-tile quantity counts it: all the memory, and
    PopLiner's terms (all but the stack)."""
    return {Quantity.WORST_TILE: all_memory,
            Quantity.POPLINER_TILE: tuple(a - s for a, s in zip(all_memory, stack))}


def measurements(answers: dict[str, dict[Quantity, tuple[int, ...]]],
                 variables: dict[str, tuple[int, ...]]) -> list[Measurement]:
    """Every measurement, inference cases first then training, from tileplan's figures
    per case (`answers`: each IPU's worst tile by quantity, `worst_figures`; `variables`: each IPU's
    variables summed over its tiles)."""
    out = []
    rows = [(c.key, "docs/fidelity.md", c.evidence, c.worst_tiles, c.variables, c.source)
            for c in CASES if measured(c)]
    rows += [(c.name, "docs/fidelity-training.md", c.evidence, c.worst_tiles, c.variables, c.source)
             for c in training_measured()]
    for key, table, evidence, worst_tiles, published_variables, source in rows:
        for w in worst_tiles:
            out.append(Measurement(key, table, evidence.value, w.quantity, w.ipu, w.bytes,
                                   answers[key][w.quantity][w.ipu], w.what, w.source))
        for ipu, figure in enumerate(published_variables or ()):
            out.append(Measurement(key, table, evidence.value, Quantity.VARIABLES, ipu, figure, variables[key][ipu],
                                   VARIABLES_WHAT, source))
    return out


def band_file(rows: list[Measurement]) -> str:
    """The band's file: its measurements and the band they give."""
    band = derive(tuple(rows))
    doc = {"about": "tileplan's measured error on every published figure of all the memory on an IPU's worst tile "
                    "(quantity \"worst tile, all memory\": the band is made of these) and on the published variables "
                    "summed over an IPU's tiles (beside them, not in the band); written by benchmarks/fidelity.py, "
                    "the rule in src/tileplan/report/sections_band.py (docs/report-format.md, verdict.error_band)",
           "band": {"lower_percent": band.lower_percent, "upper_percent": band.upper_percent},
           "measurements": [m.to_json() for m in rows]}
    return json.dumps(doc, indent=1) + "\n"


def band_section(rows: list[Measurement]) -> str:
    """docs/fidelity.md's last section: the band and every measurement."""
    band = derive(tuple(rows))
    lines = [BAND_HEADING, "",
             "Written by `.venv/bin/python benchmarks/fidelity.py` (or `--band`) with "
             "`src/tileplan/app/ipu-error-band.json`, from every case with a published figure of the memory on "
             "an IPU's worst tile: tileplan's error is (tileplan - published) / published on that figure, on the "
             "same quantity: all the memory for a Poplar message (the worst tile's tensors and tileplan's memory "
             "that is not tensors), PopLiner's terms for PopLiner's `max_tile_mem` (the same less the stack, which "
             "PopLiner leaves out with the host exchange, descriptors and gaps: its figures are lower bounds of the "
             "real tile, 10.8-17.5 % under it on the one profile PopLiner measured). The band runs from the smallest "
             "error to the "
             "largest, rounded outward to 0.1 %: "
             f"**{band.lower_percent:+.1f} % to {band.upper_percent:+.1f} %**. The verdict, the what-if rows and "
             "the report's `verdict.error_band` say whether a plan's margin lies inside it (docs/reports.md). "
             "The variables summed over an IPU's tiles, another quantity, are measured beside it and left out.", "",
             "| case | evidence | quantity | IPU | published (B) | tileplan (B) | error | what was published | "
             "source |", "|---|---|---|---|---|---|---|---|---|"]
    for m in rows:
        lines.append(f"| {m.case} | {m.evidence} | {m.quantity.value} | {m.ipu} | {m.published:,} | {m.tileplan:,} | "
                     f"{m.error_percent:+.1f} % | {m.what} | {m.source} |")
    return "\n".join(lines) + "\n"


def write_band(rows: list[Measurement], page: str | None = None) -> None:
    """The band's file, and docs/fidelity.md with its band section (the page's text
    before that section kept, or `page`)."""
    path = ROOT / "docs" / "fidelity.md"
    text = page if page is not None else path.read_text().split(BAND_HEADING)[0].rstrip("\n") + "\n"
    DATA.write_text(band_file(rows))
    path.write_text(text + "\n" + band_section(rows))
    band = derive(tuple(rows))
    print(f"wrote {DATA.relative_to(ROOT)}: {band.lower_percent:+.1f} % to {band.upper_percent:+.1f} % from "
          f"{len(band.measurements)} worst-tile measurements")


def plan_training(case: fidelity_training.Case) -> fidelity_training.Answer:
    with tempfile.TemporaryDirectory() as tmp:
        return fidelity_training.plan(case, Path(tmp))


def band_only() -> None:
    """Plan the measured cases alone and write the band."""
    answers, variables = {}, {}
    for case in [c for c in CASES if measured(c)]:
        answer, error, cpu, wall = run(case)
        assert answer is not None, f"{case.key}: {error}"
        answers[case.key], variables[case.key] = worst_figures(answer.all_memory, answer.stack), answer.variables
        print(f"{case.key:36} {cpu:6.1f} s CPU {wall:6.1f} s wall", flush=True)
    for t in training_measured():
        result = plan_training(t)
        answers[t.name], variables[t.name] = worst_figures(result.all_memory, result.stack), result.variables
        print(f"{t.name:36} {result.cpu:6.1f} s CPU {result.wall:6.1f} s wall", flush=True)
    write_band(measurements(answers, variables))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="case keys to run")
    parser.add_argument("--no-write", action="store_true", help="print, do not write docs/fidelity.md")
    parser.add_argument("--band", action="store_true", help="plan only the measured cases; write the band")
    args = parser.parse_args()
    if args.band:
        band_only()
        return
    cases = [c for c in CASES if not args.only or c.key in args.only]
    rows, agreed = [], set()
    answers, variables = {}, {}
    for case in cases:
        answer, error, cpu, wall = run(case)
        if answer is not None:
            answers[case.key], variables[case.key] = worst_figures(answer.all_memory, answer.stack), answer.variables
        if answer is not None and answer.fits == case.published_fits:
            agreed.add(case.key)
        print(f"{case.key:32} {'error' if answer is None else 'fits' if answer.fits else 'OOM':6} "
              f"published {'fits' if case.published_fits else 'OOM':4}  {cpu:6.1f} s CPU {wall:6.1f} s wall"
              + (f"  {error}" if error else ""), flush=True)
        rows.append(row(case, answer, error))
    table = ["| case | evidence | what was compiled | published | tileplan | peak per IPU (B) | variables per IPU (MB) "
             "| agreement | source |", "|---|---|---|---|---|---|---|---|---|", *rows]
    text = summary(cases, agreed)
    if not args.no_write and not args.only:
        if len(answers) < sum(measured(c) for c in CASES):
            raise SystemExit("a measured case was not planned: the band is not written")
        for t in training_measured():
            result = plan_training(t)
            answers[t.name], variables[t.name] = worst_figures(result.all_memory, result.stack), result.variables
        write_band(measurements(answers, variables), HEADER + text + "\n".join(table) + "\n")
        print(f"wrote docs/fidelity.md: {text.strip()}")
    else:
        print(text.strip())


if __name__ == "__main__":
    main()
