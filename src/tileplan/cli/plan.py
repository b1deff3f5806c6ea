"""Plan a model: lower it to tile-level steps, size every value, judge the budget.

Writes the version-1 report (JSON) and prints the verdict. The model is a named
SigLIP configuration (see `tileplan plan --help` for the list).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tileplan.errors import InputError
from tileplan.ioutil import write_atomic
from tileplan.lowering.core import AttentionProducts, GemmOutputPacking, Options
from tileplan.lowering.policy import POLICIES, policy
from tileplan.model import siglip
from tileplan.model.machine import PRESETS, machine
from tileplan.model.precision import from_option
from tileplan.planner.plan import Plan, plan_program
from tileplan.planner.usage import over_budget_steps
from tileplan.report.build import build_report
from tileplan.report.format import to_json_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", nargs="?", default=siglip.DEFAULT_MODEL,
                   help=f"a model configuration: {', '.join(sorted(siglip.CONFIGS))} (default {siglip.DEFAULT_MODEL})")
    p.add_argument("--layers", type=int, help="encoder layers (default: the configuration's)")
    p.add_argument("--weights", default="f8f143:-4",
                   help="weight precision: f16, f32, bf16, f8f143:SCALE or f8f152:SCALE (default f8f143:-4)")
    p.add_argument("--no-map-head", action="store_true", help="leave out the MAP head")
    p.add_argument("--policy", default="default", choices=sorted(POLICIES), help="layout policy (default: default)")
    p.add_argument("--machine", default="ipu21", help=f"a preset ({', '.join(PRESETS)}) or a machine .toml file")
    p.add_argument("--attention-products", default="automatic", choices=[c.value.lower() for c in AttentionProducts],
                   help="materialized, streamed or automatic (default)")
    p.add_argument("--gemm-output-packing", default="native", choices=[c.value.lower() for c in GemmOutputPacking],
                   help="native (partials on 32 KiB elements, default) or packed")
    p.add_argument("-o", "--output", help="report path (default: MODEL.json in the current folder)")
    p.add_argument("-f", "--force", action="store_true", help="overwrite an existing report")


def options_from(args: argparse.Namespace) -> Options:
    return Options(GemmOutputPacking(args.gemm_output_packing.capitalize()),
                   AttentionProducts(args.attention_products.capitalize()))


def plan_from(args: argparse.Namespace) -> Plan:
    if args.layers is not None and args.layers < 1:
        raise InputError(f"--layers must be >= 1, found {args.layers}")
    cfg = siglip.config(args.model, layers=args.layers, map_head=False if args.no_map_head else None)
    program = siglip.build_vit(cfg, from_option(args.weights))
    return plan_program(program, machine(args.machine), policy(args.policy), options_from(args))


def run(args: argparse.Namespace) -> int:
    output = Path(args.output) if args.output else Path(f"{args.model}.json")
    if output.exists() and not args.force:
        raise InputError(f"{output} exists; pass -f to overwrite it")
    plan = plan_from(args)
    report = build_report(plan)
    write_atomic(output, to_json_text(report))
    print(f"wrote {output}: scope {report.scope}, {len(report.values)} values, {len(report.steps)} steps")
    print(verdict_line(plan))
    return 0


def verdict_line(plan: Plan) -> str:
    v, p, m = plan.verdict, plan.peaks, plan.machine
    if plan.scope != "program":
        index, name, reason = plan.rejected_operation  # type: ignore[misc]
        return f"not planned: operation {index} ({name}): {reason}; {len(plan.rejections)} values rejected"
    word = "fits" if v.fits else "does not fit"
    line = (f"{word}: peak {v.effective_peak_bytes} B of {m.budget_bytes} B at step {p.total_step} (margin "
            f"{m.budget_bytes - v.effective_peak_bytes} B); interleaved peak {p.interleaved} B of "  # type: ignore[operator]
            f"{m.interleaved_budget_bytes} B (margin {m.interleaved_budget_bytes - p.interleaved} B)")  # type: ignore[operator]
    over = over_budget_steps(plan.steps, m.budget_bytes, m.interleaved_budget_bytes,
                             plan.exchange_rows * m.exchange_row_bytes)
    if over:
        worst = max(over, key=lambda o: (o.bytes_over, -o.step))
        line += (f"\nfirst over budget at step {over[0].step} ({over[0].region}: {over[0].bytes_over} B over); "
                 f"worst at step {worst.step} ({worst.region}: {worst.bytes_over} B over)")
    return line
