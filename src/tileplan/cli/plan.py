"""Plan a model: lower it to tile-level steps, size every value, judge the budget.

Writes the report (JSON: version 1, the reference's format, for programs up to 20,000
values and version 2, the compact form, beyond; `--report-version 1|2` chooses) and
prints the verdict first: the worst tile, its step and bytes against the budget
(Poplar's "Out of memory on tile ..." when it does not fit), what is live there, and a
what-if table re-planned with each knob you can turn. `--sweep KNOB=V1,V2` plans every
combination of knobs instead (in parallel) and writes one row per combination.
`--fail-over-budget` exits 3 when it does not fit.

On a Tenstorrent machine (`--machine n150`, `n300`, `t3k`, `p100`, `p150`,
`p150x4`) the model is planned
as tt-metal's allocator would place it, through a frontend (`--frontend tt-mlir`, the
default, or `tt-transformers`): the report is a Tenstorrent report (docs/report-format.md,
"Tenstorrent reports") and the verdict tt-metal's own message when it does not fit.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tileplan import runtime
from tileplan.cli import EXIT_OVER_BUDGET
from tileplan.cli.progress import Progress
from tileplan.app.sources import display_name, is_hub_id
from tileplan.app.targets import Target, for_machine, refuse_foreign, targets
from tileplan.errors import InputError, option
from tileplan.importers.hf_models import config_name
from tileplan.ioutil import check_target, escape_controls, write_atomic
from tileplan.kernel.options import AttentionProducts, GemmOutputPacking, Outlining
from tileplan.lowering.policy import POLICIES
from tileplan.builtins import siglip
from tileplan.model.machine import PRESETS
from tileplan.planner.pipeline import MAX_IPUS, Pipeline
from tileplan.app.ipuconfig import read_ipu_config
from tileplan.app.request import DEFAULT_PROPORTION, WEIGHTS_GRAMMAR, PlanRequest
from tileplan.app.training import PRESETS as OPTIMIZER_PRESETS, STATE_TYPE_OPTIONS, STATE_TYPES, TrainingOptions
from tileplan.model.training import OPTIMIZERS, RECOMPUTE
from tileplan.app.sweep import KNOBS, expand, run_sweep
from tileplan.render.terminal import render_headline, render_stage, render_sweep
from tileplan.app.build import build_report
from tileplan.report.format import V1_LIMIT, VERSIONS, Report, auto_version, write_report
from tileplan.views.headline import build_headline
from tileplan.views.common import verdict_line
from tileplan.app.whatif import with_what_if
from tileplan.app.build_whatif import WHAT_IF_LIMIT, sweep_section


def add_arguments(p: argparse.ArgumentParser) -> None:
    model = p.add_argument_group("the model")
    model.add_argument("model", nargs="?", default=siglip.DEFAULT_MODEL, metavar="MODEL",
                       help=f"a built-in tower ({', '.join(sorted(siglip.CONFIGS))}; default "
                            f"{siglip.DEFAULT_MODEL}); synthetic:N (a chain of about N timeline values, to measure "
                            "the planner at scale); a file: an ONNX graph (.onnx), a saved torch.export program "
                            "(.pt2) or a Hugging Face config.json (any architecture transformers builds), or a folder "
                            "holding one; or a Hugging Face hub id (org/name: its config.json from the local cache, "
                            "else downloaded; never weights)")
    model.add_argument("--layers", type=int, help="encoder layers (default: the configuration's)")
    model.add_argument("--batch", type=int, help="batch size of an imported model's inputs (default 1; "
                                                  "tt-transformers: max_batch_size)")
    model.add_argument("--sequence-length", type=int,
                       help="sequence length of a text model's inputs (a config.json's default 128; an ONNX file's "
                            "symbolic sequence dimension needs it, a fixed one is the file's)")
    model.add_argument("--image-size", type=int, help="image size of a vision model built from a config.json")
    model.add_argument("--kv-cache", type=int, metavar="L",
                       help="plan one decoding step of a decoder (a config.json's) with a key/value cache of L "
                            "positions per layer, always live; --sequence-length sets the step's new tokens "
                            "(default 1). On a Tenstorrent machine: decode with a KV cache of L positions "
                            "(tt-transformers: max_seq_len)")
    model.add_argument("--no-map-head", action="store_true", help="leave out the MAP head (a built-in tower)")
    model.add_argument("--unroll", action="store_true",
                       help="plan the encoder as one copy of its operations per layer, not as a repeat block")
    model.add_argument("--verbose", action="store_true",
                       help="show what torch, transformers and onnx print while the model is imported (by default "
                            "it is captured, so that an error is one line)")
    precisions = p.add_argument_group("precisions")
    precisions.add_argument("--weights", default=None,
                            help=f"precision of the weights matmuls and convolutions read: {WEIGHTS_GRAMMAR} "
                                 "(BF16 and FP8 where the machine's AMP has them; SCALE the power-of-two exponent, "
                                 "e.g. f8f143:-4). Default: an imported model's own precision (FP32 model: f32); a "
                                 "built-in tower f8f143:-4 where FP8 exists, else f16. On a Tenstorrent machine: "
                                 "bf16, f32, bfp8 or bfp4")
    precisions.add_argument("--activations", default=None, metavar="PRECISION",
                            help="precision of every other floating tensor: f16 or f32 (default: the model's own; "
                                 "f16 for a built-in tower): f16 is a model run with .half(). On a Tenstorrent "
                                 "machine: bf16, f32, bfp8 or bfp4")
    precisions.add_argument("--partials", choices=("f16", "f32"), default=None,
                            help="the matmuls' and convolutions' partials: f16 is PopTorch's "
                                 "setPartialsType(torch.half), optimum-graphcore's enable_half_partials (default: as "
                                 "the AMP accumulates, float for F16 inputs)")
    target = p.add_argument_group("the machine and how Poplar plans on it")
    target.add_argument("--machine", default="ipu21",
                        help=f"an IPU preset ({', '.join(PRESETS)}) or a machine .toml file; or another target's "
                             "machine: " + "; ".join(f"{', '.join(t.machines())} ({t.title})" for t in targets()
                                                     if t.options))
    target.add_argument("--available-memory-proportion", default=None, metavar="P[,P,...]",
                        help="Poplar's cap on one matmul's or convolution's temporary bytes per tile, as a proportion "
                             "of the tile (default 0.6, PopLibs' and PopTorch's; one per IPU with several)")
    target.add_argument("--policy", default="default", choices=sorted(POLICIES),
                        help="layout policy (default: default)")
    target.add_argument("--attention-products", default="automatic",
                        choices=[c.value.lower() for c in AttentionProducts],
                        help="materialized, streamed or automatic (default)")
    target.add_argument("--gemm-output-packing", default="native", choices=[c.value.lower() for c in GemmOutputPacking],
                        help="native (partials on 32 KiB elements, default) or packed")
    target.add_argument("--outlining", default="shared", choices=[c.value for c in Outlining],
                        help="how the compile shares code and vertices between repeated operations, which sets the "
                             "memory that is not tensors: shared (PopART's outliner, default) or per-layer (each "
                             "layer its own programs: PopART across IPUs, or POPART_POPLINER_OUTLINER_REGEX)")
    ipus = p.add_argument_group("several IPUs (a pipeline)")
    ipus.add_argument("--ipus", help="plan a pipeline over N IPUs, layers split evenly, or 'auto': the fewest IPUs "
                                     "that fit, split for the most margin")
    ipus.add_argument("--layers-per-ipu", metavar="N,N,...",
                      help="the layers on each IPU, as optimum-graphcore's layers_per_ipu (-1: share the rest)")
    train = p.add_argument_group("training (docs/training.md)")
    train.add_argument("--train", action="store_true",
                       help="plan training: the joint forward and backward program with the loss of the head "
                            "config.json's architectures names, the optimizer state and the weight update")
    train.add_argument("--optimizer", choices=OPTIMIZERS, default=None, help="the optimizer (default adamw)")
    train.add_argument("--optimizer-preset", choices=OPTIMIZER_PRESETS, default=None,
                       help="the optimizer state's precisions: poptorch (its defaults: FP32 accumulator and "
                            "moments; the default) or optimum (optimum-graphcore's trainer: FP16 accumulator and "
                            "first moment, FP32 second)")
    for flag, what in (("--accum-type", "the gradient accumulator's"),
                       ("--first-order-momentum-accum-type", "the first moment's"),
                       ("--second-order-momentum-accum-type", "the second moment's")):
        train.add_argument(flag, choices=STATE_TYPES, default=None,
                           help=f"{what} precision, as PopTorch's optimizer argument of that name "
                                "(default: the preset's)")
    train.add_argument("--weight-decay", type=float, default=None, metavar="W",
                       help="the weight decay, marked constant and left off biases and norm weights, as "
                            "Graphcore's examples and optimum-graphcore set it (default: PopTorch's variable "
                            "decay; optimum: 0.0). With none, Adam's and LAMB's updater term takes the first "
                            "moment's precision, not the weight's")
    train.add_argument("--gradient-accumulation", type=int, default=None, metavar="N",
                       help="micro-batches accumulated per weight update (default 1 on one IPU, 2N-1 over N)")
    train.add_argument("--recompute", choices=RECOMPUTE, default=None,
                       help="recompute the forward pass in the backward one: none, pipeline (from each IPU's "
                            "inputs) or every-layer (from each layer's output too); default none on one IPU, "
                            "pipeline over several (PopTorch's)")
    train.add_argument("--optimizer-state-offchip", action=argparse.BooleanOptionalAction, default=None,
                       help="keep the optimizer state in off-chip memory, loaded for the weight update only")
    train.add_argument("--replication-factor", type=int, default=None, metavar="R",
                       help="replicas of the pipeline (data parallel; default 1)")
    train.add_argument("--replicated-tensor-sharding", action=argparse.BooleanOptionalAction, default=None,
                       help="split the optimizer state over the replicas")
    train.add_argument("--embedding-serialization-factor", type=int, default=None, metavar="F",
                       help="split the input embedding (and a head tied to it) into F tables, as "
                            "optimum-graphcore's embedding_serialization_factor")
    train.add_argument("--serialized-embedding-splits-per-ipu", metavar="N,N,...", default=None,
                       help="the embedding in sum(N) splits, N_i of them on IPU i (optimum-graphcore's "
                            "serialized_embedding_splits_per_ipu)")
    train.add_argument("--projection-serialization-factor", type=int, default=None, metavar="F",
                       help="a head with its own weight (not tied) as F products, as optimum-graphcore's "
                            "projection_serialization_factor")
    train.add_argument("--ipu-config", metavar="FILE.json",
                       help="optimum-graphcore's IPUConfig: its fields as the defaults of these flags (the "
                            "inference_ fields without --train); fields tileplan does not model are listed")
    whatif = p.add_argument_group("what-if and sweeps")
    whatif.add_argument("--no-what-if", action="store_true", help="skip the what-if re-plans")
    whatif.add_argument("--what-if", dest="force_what_if", action="store_true",
                        help=f"run the what-if re-plans even for a program of more than {WHAT_IF_LIMIT:,} values "
                             "(each row re-plans the whole program)")
    whatif.add_argument("--sweep", action="append", metavar="KNOB=V1,V2",
                        help=f"plan every combination of these knobs ({', '.join(KNOBS)}); repeatable")
    output = p.add_argument_group("the report and the exit code")
    output.add_argument("-o", "--output", help="report path (default: MODEL.json, or MODEL.sweep.json with --sweep)")
    output.add_argument("-f", "--force", action="store_true", help="overwrite an existing report")
    output.add_argument("--report-version", choices=[*map(str, VERSIONS), "auto"], default="auto",
                        help=f"1 (the reference's format, which every reader takes), 2 (compact: interned tables and "
                             f"columns, for large programs; docs/report-format-v2.md) or auto (the default: 1 up to "
                             f"{V1_LIMIT:,} values, 2 beyond, where version 1 would run past 20 megabytes)")
    output.add_argument("--fail-over-budget", action="store_true", help="exit 3 when the program does not fit")
    for other in targets():
        if other.options:
            group = p.add_argument_group(f"{other.title} machines ({', '.join(other.machines())})")
            for o in other.options:
                group.add_argument(o.flag, dest=o.dest, type=o.type or str, metavar=o.metavar, choices=o.choices,
                                   action="append" if o.repeat else "store", default=None, help=o.help)
    p.set_defaults(option_defaults={a.dest: a.default for a in p._actions if a.dest != "help"})


#: the training flags (`--train` needs to be given with any of them)
TRAINING_FLAGS = ("optimizer", "optimizer_preset", "gradient_accumulation", "recompute", "optimizer_state_offchip",
                  "replication_factor", "replicated_tensor_sharding", "embedding_serialization_factor",
                  "serialized_embedding_splits_per_ipu", "projection_serialization_factor", *STATE_TYPE_OPTIONS,
                  "weight_decay")


def request_from(args: argparse.Namespace) -> PlanRequest:
    """The request the flags ask for: a flag given wins, then `--ipu-config`'s field,
    then the default."""
    if args.activations is not None and args.activations not in ("f16", "f32"):
        raise InputError(f"--activations {args.activations!r}: expected f16 or f32 on an IPU (bf16, f32, bfp8 or "
                         "bfp4 on a Tenstorrent machine)")
    config = read_ipu_config(args.ipu_config, args.train) if getattr(args, "ipu_config", None) else None
    given = {k: v for k, v in vars(args).items() if v is not None}
    merged = {**(config.defaults if config is not None else {}), **given}
    args.ipu_config_read = config
    if not args.train:
        asked = [k for k in TRAINING_FLAGS if k in given]
        if asked:
            raise InputError(f"--{asked[0].replace('_', '-')} is a training option: add --train")
    training = None
    if args.train:
        training = TrainingOptions(**{k: merged[k] for k in TRAINING_FLAGS if merged.get(k) is not None})
    return PlanRequest(model=args.model, layers=args.layers, weights=args.weights, activations=args.activations,
                       partials=merged.get("partials"), map_head=not args.no_map_head,
                       unroll=args.unroll, policy=args.policy, machine=args.machine,
                       attention_products=args.attention_products,
                       gemm_output_packing=args.gemm_output_packing, outlining=args.outlining, batch=args.batch,
                       sequence_length=args.sequence_length, image_size=args.image_size, kv_cache=args.kv_cache,
                       ipus=merged.get("ipus"), layers_per_ipu=merged.get("layers_per_ipu"),
                       available_memory_proportion=merged.get("available_memory_proportion") or DEFAULT_PROPORTION,
                       training=training)


def _output(args: argparse.Namespace, request: PlanRequest, suffix: str) -> Path:
    """-o, else the model's name (its last path segment) with `suffix`, in this folder;
    never the model's own file (`tileplan plan config.json -f` in a checkpoint folder
    must not overwrite config.json)."""
    return output_for(args, request.name, request.model, suffix)


def output_for(args: argparse.Namespace, name: str, model_path: str, suffix: str) -> Path:
    """`_output` for a model named `name` given as `model_path`."""
    stem = name.rstrip("/").rsplit("/", 1)[-1] or "model"
    output = Path(args.output) if args.output is not None else Path(f"{stem}{suffix}")
    model = Path(model_path)
    if model.exists() and output.resolve() == model.resolve():
        if args.output is not None:
            raise InputError(f"{output} is the model's own file; choose another output with -o")
        output = Path(f"{model.resolve().parent.name or 'model'}{suffix}")
        if output.resolve() == model.resolve():
            output = Path(f"model{suffix}")
    check_target(output, args.force)
    return output


def report_version(args: argparse.Namespace, report: Report) -> int:
    """The version to write: as asked, or by the program's size (`auto`: 1 up to
    `V1_LIMIT` values, 2 beyond)."""
    if args.report_version != "auto":
        return int(args.report_version)
    return auto_version(report, V1_LIMIT)


def given_options(args: argparse.Namespace) -> dict[str, object]:
    """The options given on the command line: those whose value is not the default."""
    defaults = args.option_defaults
    return {k: v for k, v in vars(args).items() if k in defaults and v != defaults[k]}


def run(args: argparse.Namespace) -> int:
    runtime.VERBOSE = args.verbose
    target = for_machine(args.machine)
    given = given_options(args)
    refuse_foreign(target, args.machine, given, option)
    if target.plan_options is not None:
        return run_target(args, target, given)
    request = request_from(args)
    if args.ipu_config_read is not None:
        for line in args.ipu_config_read.lines():
            print(line)
    if args.sweep:
        return run_sweep_command(args, request)
    if request.pipelined:
        return run_pipeline_command(args, request)
    output = _output(args, request, ".json")
    progress = Progress()
    progress.update(f"planning {request.command()}")
    plan = request.plan()
    report = build_report(plan)
    if not args.no_what_if:
        report = with_what_if(report, request, plan, limit=WHAT_IF_LIMIT, force=args.force_what_if,
                              progress=lambda text: progress.update(text))
    progress.done()
    write_report(output, report, report_version(args, report))
    args.decided = EXIT_OVER_BUDGET if args.fail_over_budget and not report.fits_budget else 0
    print(f"wrote {output}: scope {report.scope}, {len(report.values)} values, {len(report.steps)} steps "
          f"({request.command()})")
    program = report.sections.program
    note = program.get("note") if program is not None else None
    if isinstance(note, str):
        print(f"note: {escape_controls(note)}")
    for line in render_headline(build_headline(report)):
        print(line)
    skipped = report.sections.what_if_skipped
    if skipped is not None:
        print(skipped.reason)
    return args.decided


def run_target(args: argparse.Namespace, target: Target, given: dict[str, object]) -> int:
    """Plan on a target with its own flow (app/targets.py): the report written, the
    verdict and what to change printed."""
    output = output_for(args, target_stem(args.model), args.model, ".json")
    progress = Progress()
    assert target.plan_options is not None
    planned = target.plan_options({**given, "model": args.model, "machine": args.machine}, progress.update)
    progress.done()
    write_atomic(output, planned.report)
    args.decided = EXIT_OVER_BUDGET if args.fail_over_budget and not planned.fits else 0
    print(f"wrote {output} ({planned.command})")
    for line in planned.lines:
        print(line)
    return args.decided


def target_stem(model: str) -> str:
    """A model's name for its report's default file name: a hub id's last part, a
    config.json's folder, another file's stem."""
    if is_hub_id(model):
        return display_name(model.rsplit("/", 1)[-1])
    return config_name(model, "model")


def stage_path(output: Path, ipu: int) -> Path:
    """`out/m.json` -> `out/m.ipu0.json`: one report per IPU."""
    stem = output.name[:-5] if output.name.lower().endswith(".json") else output.name
    return output.with_name(f"{stem}.ipu{ipu}.json")


def _first_ipu_alone(request: PlanRequest) -> str:
    """Why no split fits, when the first IPU cannot hold even none of the layers: its
    verdict with the embeddings alone (and a head tied to them), planned; else what
    each split lacks, in one line."""
    alone = request.with_(ipus=None, layers_per_ipu="0,-1").pipeline()
    assert alone is not None, "a given split always plans"
    first = alone.plans[0]
    if first.verdict.fits:
        return ("  every IPU fits some layers, but no split over the IPUs fits them all: give --layers-per-ipu to "
                "see each IPU's verdict")
    return (f"  IPU 0 with no layers (the embeddings, and a head tied to them) already does not fit: "
            f"{verdict_line(build_report(first))}; a lower --available-memory-proportion lowers its products' "
            "temporaries, narrower --weights its parameters")


def run_pipeline_command(args: argparse.Namespace, request: PlanRequest) -> int:
    """Plan over several IPUs: one report per IPU (`MODEL.ipuK.json`, each a whole
    report `tileplan check` re-derives) and the IPUConfig fragment
    (`MODEL.ipu_config.json`) optimum-graphcore loads."""
    output = _output(args, request, ".json")
    fragment = output.with_name((output.name[:-5] if output.name.endswith(".json") else output.name)
                                + ".ipu_config.json")
    progress = Progress()
    progress.update(f"planning {request.command()}")
    pipeline = request.pipeline()
    progress.done()
    if pipeline is None:
        print(f"no split over up to {MAX_IPUS} IPUs fits ({request.command()})")
        if request.training is None:
            print(_first_ipu_alone(request))
        args.decided = EXIT_OVER_BUDGET if args.fail_over_budget else 0
        return args.decided
    paths = [stage_path(output, k) for k in range(len(pipeline.plans))]
    for path in (*paths, fragment):
        check_target(path, args.force)
    reports = [build_report(p) for p in pipeline.plans]
    for path, report in zip(paths, reports):
        write_report(path, report, report_version(args, report))
    write_atomic(fragment, json.dumps(ipu_config(pipeline, request), indent=2, sort_keys=True) + "\n")
    counts = list(pipeline.layers_per_ipu)
    verdict = "fits" if pipeline.fits else "does not fit"
    mode = "inference" if request.training is None else "training"
    print(f"{len(counts)} IPUs, layers_per_ipu {counts}: {verdict} ({mode} pipeline; {request.command()})")
    if len(counts) & (len(counts) - 1):
        print(f"  PopTorch rounds a replica up to {1 << (len(counts) - 1).bit_length()} IPUs (autoRoundNumIPUs)")
    print(f"wrote {', '.join(map(str, paths))} and {fragment}")
    for k, report in enumerate(reports):
        print(render_stage(k, report.sections.pipeline, verdict_line(report)))
    args.decided = EXIT_OVER_BUDGET if args.fail_over_budget and not pipeline.fits else 0
    return args.decided


def ipu_config(pipeline: Pipeline, request: PlanRequest) -> dict:
    """The IPUConfig fields of the split, as optimum-graphcore names them: the layers on
    each IPU, the IPU count and the matmul proportion the plans assumed."""
    values = request.proportions()
    proportion: float | list[float] = values[0] if len(values) == 1 else values
    out: dict[str, object] = {"ipus_per_replica": len(pipeline.layers_per_ipu),
                              "layers_per_ipu": list(pipeline.layers_per_ipu), "matmul_proportion": proportion}
    if request.partials is not None:
        out["enable_half_partials"] = request.partials == "f16"
    if request.training is not None:  # what the plans assumed, under IPUConfig's names
        setup = request.training.setup(len(pipeline.layers_per_ipu))
        out.update(gradient_accumulation_steps=setup.gradient_accumulation,
                   replication_factor=setup.replication_factor,
                   replicated_tensor_sharding=setup.replicated_tensor_sharding,
                   optimizer_state_offchip=setup.optimizer_state_offchip,
                   recompute_checkpoint_every_layer=setup.recompute == "every-layer",
                   projection_serialization_factor=request.training.projection_serialization_factor)
        splits = request.training.embedding_splits()
        if splits is not None:
            out["serialized_embedding_splits_per_ipu"] = list(splits)
        else:
            out["embedding_serialization_factor"] = request.training.embedding_serialization_factor
    return out


def run_sweep_command(args: argparse.Namespace, base: PlanRequest) -> int:
    output = _output(args, base, ".sweep.json")
    combos = expand(base, args.sweep)
    progress = Progress(delay=0)
    rows = run_sweep(combos, progress=lambda done, total: progress.update(f"planned {done}/{total}"))
    progress.done()
    sweep = sweep_section(base.command(), list(combos[0][0]), [(k, o, r.command()) for k, r, o in rows])
    write_atomic(output, json.dumps(sweep.to_json(), separators=(",", ":")) + "\n")
    args.decided = EXIT_OVER_BUDGET if args.fail_over_budget and not all(r.outcome.fits for r in sweep.rows) else 0
    print(f"wrote {output}: {len(sweep.rows)} combinations")
    for line in render_sweep(sweep):
        print(line)
    return args.decided
