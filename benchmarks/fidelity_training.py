"""Published training configurations (docs/notes/FIDELITY.md) planned by tileplan: prints
a table of each case, its source, what was published and tileplan's answer, and with
every case writes it to docs/fidelity-training.md.

    .venv/bin/python benchmarks/fidelity_training.py [--cases NAME ...]

Each case writes the architecture's `config.json` (the published model's sizes) to a
temporary folder and runs `tileplan plan CONFIG --train` with the published
configuration's options (one report per IPU); tileplan's answer is "fits" when every
IPU fits, else the IPUs that do not, with the worst tile's bytes. Where a real
compile's profile is published, its variables summed over the tiles (each tile's
highest variable bytes over the program, summed: PopLiner's `max_vars_usage`) stand
beside tileplan's (each tile's peak tensor bytes, summed). CPU seconds beside wall
(this machine is shared). `tests/test_fidelity_training.py` pins the verdicts, and the
variables within 10 %. Each case is calibration (looked at while modelling) or held
out (added after the model was frozen, never tuned on): the table counts them apart.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fidelity_cases import FROZEN_AT, Evidence, WorstTile  # noqa: E402
from tileplan.app.error_band import Quantity  # noqa: E402

BERT_LARGE = {"model_type": "bert", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
              "intermediate_size": 4096, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2}
#: graphcore/examples nlp/bert/pytorch/configs_squad.yml `demo_tiny_128` (its intermediate
#: size 4 x hidden: args.py; layer norm eps 0.001: the file's defaults)
BERT_TINY = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 8,
             "intermediate_size": 256, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2,
             "layer_norm_eps": 0.001}
BERT_BASE = {"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257, "n_positions": 1024,
        "bos_token_id": 50256, "eos_token_id": 50256}
MT5_SMALL = {"model_type": "mt5", "d_model": 512, "d_ff": 1024, "d_kv": 64, "num_heads": 6, "num_layers": 8,
             "num_decoder_layers": 8, "vocab_size": 250112, "feed_forward_proj": "gated-gelu",
             "tie_word_embeddings": False, "decoder_start_token_id": 0, "pad_token_id": 0, "eos_token_id": 1}
NOTEBOOK = "graphcore/examples tutorials/tutorials/pytorch/finetuning_bert/Fine-tuning-BERT.ipynb"
#: Graphcore's BERT examples' optimizer state (nlp/bert/pytorch/optimization.py): an FP16
#: accumulator, the first moment FP16 only with `enable_half_first_order_momentum` (off in
#: the pretraining configurations), the second FP32; weight decay marked constant
GRAPHCORE_BERT_STATE = ("--accum-type", "f16", "--first-order-momentum-accum-type", "f32",
                        "--second-order-momentum-accum-type", "f32")


@dataclass(frozen=True)
class Case:
    """A published configuration: the model's config.json, the `tileplan plan --train`
    flags that say how it was trained, where it is published, what was published, and
    whether it ran (`runs`: it should fit; False: published as out of memory)."""

    name: str
    config: dict
    flags: tuple[str, ...]
    source: str
    published: str
    runs: bool = True
    #: a real compile's variables summed over the tiles, per IPU, when its profile is
    #: published (bytes)
    variables: tuple[int, ...] | None = None
    evidence: Evidence = Evidence.CALIBRATION
    #: published figures of all the memory on an IPU's worst tile (the error band's
    #: measurements: src/tileplan/app/ipu-error-band.json)
    worst_tiles: tuple[WorstTile, ...] = ()


CASES = (
    Case("bert-large-squad-4", {**BERT_LARGE, "architectures": ["BertForQuestionAnswering"]},
         ("--sequence-length", "384", "--batch", "1", "--layers-per-ipu", "3,7,7,7",
          "--available-memory-proportion", "0.15,0.18,0.2,0.25", "--partials", "f16", "--recompute", "every-layer",
          "--optimizer-state-offchip", "--optimizer", "adamw", "--optimizer-preset", "optimum",
          "--gradient-accumulation", "256"),
         NOTEBOOK, "trains (BERT-Large SQuAD, seq 384, micro-batch 1, 4 IPUs)"),
    Case("bert-large-squad-16", {**BERT_LARGE, "architectures": ["BertForQuestionAnswering"]},
         ("--sequence-length", "384", "--batch", "2", "--layers-per-ipu", "2,3,3,3,3,3,3,4",
          "--available-memory-proportion", "0.08,0.28,0.32,0.32,0.36,0.38,0.4,0.1", "--partials", "f16",
          "--recompute", "every-layer", "--replication-factor", "2", "--replicated-tensor-sharding",
          "--optimizer", "adamw", "--optimizer-preset", "optimum", "--gradient-accumulation", "64"),
         NOTEBOOK, "trains (micro-batch 2, 8 IPUs x 2 replicas, state on chip sharded)"),
    Case("bert-large-pretrain-128", {**BERT_LARGE, "architectures": ["BertForPreTraining"]},
         ("--sequence-length", "128", "--batch", "8", "--layers-per-ipu", "3,7,7,7",
          "--available-memory-proportion", "0.15,0.25,0.25,0.25", "--partials", "f16", "--recompute", "every-layer",
          "--embedding-serialization-factor", "2", "--optimizer-state-offchip", "--replication-factor", "4",
          "--replicated-tensor-sharding", "--optimizer", "lamb", *GRAPHCORE_BERT_STATE, "--weight-decay", "0.01",
          "--gradient-accumulation", "2048"),
         "graphcore/examples nlp/bert/pytorch/configs_pretraining.yml pretrain_large_128", "trains (4 IPUs x 4)"),
    Case("bert-base-pretrain-128", {**BERT_BASE, "architectures": ["BertForPreTraining"]},
         ("--sequence-length", "128", "--batch", "32", "--layers-per-ipu", "0,4,4,4",
          "--available-memory-proportion", "0.25", "--partials", "f16", "--recompute", "every-layer",
          "--optimizer-state-offchip", "--replication-factor", "4", "--replicated-tensor-sharding",
          "--optimizer", "lamb", *GRAPHCORE_BERT_STATE, "--weight-decay", "0.01", "--gradient-accumulation", "512"),
         "graphcore/examples nlp/bert/pytorch/configs_pretraining.yml pretrain_base_128", "trains (4 IPUs x 4)"),
    Case("gpt2-small-train", {**GPT2, "architectures": ["GPT2LMHeadModel"]},
         ("--sequence-length", "1024", "--batch", "1", "--layers-per-ipu", "0,4,4,4",
          "--available-memory-proportion", "0.15", "--partials", "f16", "--recompute", "every-layer",
          "--embedding-serialization-factor", "4", "--optimizer-state-offchip", "--replication-factor", "4",
          "--replicated-tensor-sharding", "--optimizer", "adamw", "--optimizer-preset", "optimum",
          "--gradient-accumulation", "2048"),
         "graphcore/examples nlp/gpt2/pytorch/benchmarks.yml pytorch_gpt2_small_train_gen_pod16",
         "runs (with custom ops: logits remapped, attention serialised over the sequence)"),
    Case("mt5-small-translation", {**MT5_SMALL, "architectures": ["MT5ForConditionalGeneration"]},
         ("--sequence-length", "128", "--batch", "1", "--layers-per-ipu", "0,0,16,0",
          "--available-memory-proportion", "0.25", "--partials", "f16", "--recompute", "every-layer",
          "--serialized-embedding-splits-per-ipu", "4,4,0,0", "--projection-serialization-factor", "4",
          "--optimizer-state-offchip", "--optimizer", "adamw",
          "--optimizer-preset", "optimum", "--gradient-accumulation", "128"),
         "huggingface/optimum-graphcore notebooks/mt5_translation.ipynb, tests/utils.py (Graphcore/mt5-small-ipu)",
         "trains (4 IPUs: embedding in 4 + 4 splits, head in 4 parts, optimizer state off chip)"),
    Case("mt5-small-unserialised", {**MT5_SMALL, "architectures": ["MT5ForConditionalGeneration"]},
         ("--sequence-length", "128", "--batch", "1", "--layers-per-ipu", "0,8,8,0", "--optimizer", "adamw",
          "--optimizer-preset", "optimum", "--gradient-accumulation", "128", "--ipu-config", "{defaults}"),
         "huggingface/optimum-graphcore notebooks/mt5_translation.ipynb (IPUConfig(layers_per_ipu=[0, 8, 8, 0]))",
         "out of memory on IPU 0 and IPU 3 (the notebook's PopVision summary)", runs=False),
    Case("bert-large-squad-384-one-replica", {**BERT_LARGE, "architectures": ["BertForQuestionAnswering"]},
         ("--sequence-length", "384", "--batch", "4", "--layers-per-ipu", "2,3,3,3,3,3,3,4",
          "--available-memory-proportion", "0.08,0.25,0.32,0.32,0.36,0.38,0.4,0.32", "--partials", "f16",
          "--recompute", "every-layer", "--optimizer", "adamw", "--accum-type", "f16",
          "--first-order-momentum-accum-type", "f16", "--second-order-momentum-accum-type", "f32",
          "--weight-decay", "0.01", "--gradient-accumulation", "32"),
         "graphcore/examples nlp/bert/pytorch/configs_squad.yml squad_large_384 with replication_factor 1",
         "does not fit: \"NB This requires replication_factor=2 to fit\" (state on chip, sharded over 2)", runs=False),
)
PROFILES = (
    Case("bert-tiny-squad-profile", {**BERT_TINY, "architectures": ["BertForQuestionAnswering"]},
         ("--sequence-length", "128", "--batch", "1", "--layers-per-ipu", "3",
          "--available-memory-proportion", "0.6", "--partials", "f16", "--recompute", "every-layer",
          "--optimizer-state-offchip", "--optimizer", "adamw", "--accum-type", "f16",
          "--first-order-momentum-accum-type", "f32", "--second-order-momentum-accum-type", "f32",
          "--weight-decay", "0", "--gradient-accumulation", "16", "--outlining", "per-layer"),
         "graphcore/popliner tests/reports/poptorch_demo_tiny_128 (`run_squad.py --config demo_tiny_128 "
         "--layers-per-ipu 3 --ipus-per-replica 1`, with POPART_POPLINER_OUTLINER_REGEX set: each layer keeps its own "
         "programs, hence --outlining per-layer; tests/test_profile.py); graphcore/examples "
         "nlp/bert/pytorch configs_squad.yml, optimization.py (FP16 accumulator, FP32 moments, weight decay 0.0 "
         "marked constant)",
         "compiles (profile: variables 40,434,347 B summed over the tiles; worst tile 106,267 B in all)",
         variables=(40_434_347,),
         worst_tiles=(WorstTile(
             0, 106_267, "PopLiner's reconstruction of the profile as one stage (`GreedySolver.solve(4, 638976)`: "
             "`max_tile_mem` 106,267 B; variables, vertex code and state, exchange and control code)",
             "graphcore/popliner tests/test_profile.py (test_poptorch_demo_tiny_128_json_output)",
             Quantity.POPLINER_TILE),)),
)
#: graphcore/examples nlp/bert/pytorch/configs_squad.yml at 09b7c672 (squad_base_384 and
#: the configurations built on it: AdamW, weight decay 0.01, half first-order momentum,
#: the BERT examples' FP16 accumulator, half partials, recomputation every layer)
SQUAD_CONFIGS = "graphcore/examples nlp/bert/pytorch/configs_squad.yml (09b7c672)"
SQUAD_STATE = ("--partials", "f16", "--recompute", "every-layer", "--optimizer", "adamw", "--accum-type", "f16",
               "--first-order-momentum-accum-type", "f16", "--second-order-momentum-accum-type", "f32",
               "--weight-decay", "0.01")
GPT2_BENCHMARKS = "graphcore/examples nlp/gpt2/pytorch/benchmarks.yml"
#: GPT-2's training flags as the calibration row gpt2-small-train reads train_gpt2.py
GPT2_TRAIN = ("--batch", "1", "--partials", "f16", "--recompute", "every-layer", "--optimizer-state-offchip",
              "--replicated-tensor-sharding", "--optimizer", "adamw", "--optimizer-preset", "optimum")
#: added after the model was frozen (fidelity_cases.FROZEN_AT), never tuned on
HELD_OUT = (
    Case("bert-large-squad-384-r2", {**BERT_LARGE, "architectures": ["BertForQuestionAnswering"]},
         ("--sequence-length", "384", "--batch", "4", "--layers-per-ipu", "2,3,3,3,3,3,3,4",
          "--available-memory-proportion", "0.08,0.28,0.32,0.32,0.36,0.38,0.4,0.32", *SQUAD_STATE,
          "--replication-factor", "2", "--replicated-tensor-sharding", "--gradient-accumulation", "32"),
         f"{SQUAD_CONFIGS} squad_large_384", "trains (\"NB This requires replication_factor=2 to fit\": 8 IPUs x 2, "
         "state on chip sharded)", evidence=Evidence.HELD_OUT),
    Case("bert-large-squad-384-4x4", {**BERT_LARGE, "architectures": ["BertForQuestionAnswering"]},
         ("--sequence-length", "384", "--batch", "2", "--layers-per-ipu", "3,7,7,7",
          "--available-memory-proportion", "0.15,0.25,0.25,0.25", *SQUAD_STATE, "--optimizer-state-offchip",
          "--replication-factor", "2", "--replicated-tensor-sharding", "--gradient-accumulation", "64"),
         f"{SQUAD_CONFIGS} squad_large_384_4x4", "trains (4 IPUs x 2, state off chip)", evidence=Evidence.HELD_OUT),
    Case("bert-base-squad-384", {**BERT_BASE, "architectures": ["BertForQuestionAnswering"]},
         ("--sequence-length", "384", "--batch", "1", "--layers-per-ipu", "0,4,4,4",
          "--available-memory-proportion", "0.25", *SQUAD_STATE, "--replication-factor", "4",
          "--replicated-tensor-sharding", "--gradient-accumulation", "8"),
         f"{SQUAD_CONFIGS} squad_base_384", "trains (4 IPUs x 4, state on chip sharded)", evidence=Evidence.HELD_OUT),
    Case("gpt2-medium-train", {**GPT2, "n_embd": 1024, "n_layer": 24, "n_head": 16,
                               "architectures": ["GPT2LMHeadModel"]},
         ("--sequence-length", "1024", "--layers-per-ipu", "0,3,3,3,3,4,4,4",
          "--available-memory-proportion", "0.30,0.15,0.15,0.15,0.15,0.15,0.15,0.15",
          "--embedding-serialization-factor", "4", "--replication-factor", "2", *GPT2_TRAIN,
          "--gradient-accumulation", "4096"),
         f"{GPT2_BENCHMARKS} pytorch_gpt2_medium_train_gen_pod16", "runs (8 IPUs x 2)", evidence=Evidence.HELD_OUT),
    Case("gpt2-large-sl512-train", {**GPT2, "n_embd": 1280, "n_layer": 36, "n_head": 20,
                                    "architectures": ["GPT2LMHeadModel"]},
         ("--sequence-length", "512", "--layers-per-ipu", "1,5,5,5,5,5,5,5",
          "--available-memory-proportion", "0.15,0.12,0.15,0.15,0.15,0.15,0.15,0.15",
          "--embedding-serialization-factor", "8", "--replication-factor", "2", *GPT2_TRAIN,
          "--gradient-accumulation", "4096"),
         f"{GPT2_BENCHMARKS} pytorch_gpt2_large_sl512_train_gen_pod16", "runs (8 IPUs x 2)",
         evidence=Evidence.HELD_OUT),
)
CASES = CASES + PROFILES + HELD_OUT
#: IPUConfig's own defaults, for a case published as `IPUConfig(...)` with only some fields
IPU_CONFIG_DEFAULTS = {"matmul_proportion": 0.2, "enable_half_partials": True, "optimizer_state_offchip": False,
                       "replicated_tensor_sharding": False, "recompute_checkpoint_every_layer": False}


@dataclass(frozen=True)
class Answer:
    fits: bool
    text: str
    cpu: float
    wall: float
    #: each IPU's tiles' peak tensor bytes, summed
    variables: tuple[int, ...] = ()
    #: each IPU's worst tile, all its memory as the verdict counts it: the total peak
    #: plus what the budget sets aside for the memory that is not tensors (tile memory
    #: less the budget)
    all_memory: tuple[int, ...] = ()
    #: each IPU's stack, in `all_memory` (PopLiner's `max_tile_mem` leaves it out)
    stack: tuple[int, ...] = ()


def plan(case: Case, folder: Path) -> Answer:
    """tileplan's answer for `case` (its reports written in `folder`)."""
    from tileplan.cli.main import main
    from tileplan.report.format import read_report
    from tileplan.views.common import verdict_line

    (folder / case.name).mkdir(parents=True, exist_ok=True)
    config = folder / case.name / "config.json"
    config.write_text(json.dumps(case.config))
    defaults = folder / case.name / "ipu_config.json"
    defaults.write_text(json.dumps(IPU_CONFIG_DEFAULTS))
    flags = [str(defaults) if flag == "{defaults}" else flag for flag in case.flags]
    out = folder / f"{case.name}.json"
    c0, w0 = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["plan", str(config), "--train", "--no-what-if", "-f", "-o", str(out), *flags])
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    if code != 0:
        return Answer(False, f"error (exit {code})", cpu, wall)
    paths = sorted(folder.glob(f"{case.name}.ipu*.json"), key=lambda p: p.name)
    paths = [p for p in paths if "ipu_config" not in p.name] or [out]
    reports = [read_report(str(p)) for p in paths]
    variables = tuple(_variables(r) for r in reports)
    all_memory = tuple(_all_memory(r) for r in reports)
    stack = tuple(_stack(r) for r in reports)
    over = [(k, r) for k, r in enumerate(reports) if not r.fits_budget]
    if not over:
        worst = min(r.budget_bytes - _peak(r) for r in reports)
        text = f"fits on {len(reports)} IPUs (smallest margin {worst:,} B)"
        if case.variables is not None:
            text += "; variables " + ", ".join(
                f"{v:,} B ({100 * (v - p) / p:+.1f} %)" for v, p in zip(variables, case.variables))
        return Answer(True, text, cpu, wall, variables, all_memory, stack)
    lines = "; ".join(f"IPU {k}: {verdict_line(r)}" for k, r in over)
    return Answer(False, f"does not fit: {lines}", cpu, wall, variables, all_memory, stack)


def _variables(report) -> int:
    """Each tile's peak tensor bytes, summed over the tiles (the exact accounting's)."""
    exact = report.sections.exact
    return sum(exact.tiles.peak) if exact is not None and exact.tiles is not None else 0


def _all_memory(report) -> int:
    """The worst tile's total peak plus the tile's memory the budget sets aside (the
    tile's bytes as the verdict's error band states them)."""
    verdict = report.sections.verdict
    band = verdict.error_band if verdict is not None else None
    assert band is not None, "an IPU plan's verdict states the tile's bytes with its error band"
    return _peak(report) + band.tile_bytes - report.budget_bytes


def _stack(report) -> int:
    """The stack the report counts in the memory that is not tensors."""
    nt = report.sections.non_tensor
    assert nt is not None and nt.stack is not None, "an IPU plan states its memory that is not tensors"
    return nt.stack


def _peak(report) -> int:
    verdict = report.sections.verdict
    total = verdict.region("total") if verdict is not None else None
    return total.peak if total is not None and total.peak is not None else report.budget_bytes


HEADER = """# Fidelity in training: tileplan against published training configurations

Generated by `.venv/bin/python benchmarks/fidelity_training.py` (the cases:
`benchmarks/fidelity_training.py`; `tests/test_fidelity_training.py` pins each
verdict). Each configuration is planned with `tileplan plan CONFIG --train` and the
published options; "agrees" compares tileplan's verdict with whether it ran.
"evidence": calibration (looked at while modelling) or held out (added after the
model was frozen, never tuned on), counted apart.

"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=[c.name for c in CASES])
    args = parser.parse_args()
    lines = ["| case | evidence | source | published | tileplan | agrees | CPU s | wall s |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines))
    agreed = set()
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if case.name not in args.cases:
                continue
            answer = plan(case, Path(tmp))
            agrees = "yes" if answer.fits == case.runs else "no"
            if answer.fits == case.runs:
                agreed.add(case.name)
            lines.append(f"| {case.name} | {case.evidence.value} | {case.source} | {case.published} | {answer.text} "
                         f"| {agrees} | {answer.cpu:.1f} | {answer.wall:.1f} |")
            print(lines[-1], flush=True)
    counts = []
    for evidence in Evidence:
        chosen = [c for c in CASES if c.evidence is evidence and c.name in args.cases]
        counts.append(f"{evidence.value}: {sum(c.name in agreed for c in chosen)} of {len(chosen)} verdicts agree")
    text = (f"{'; '.join(counts)} with the published results. Held-out cases were added after the model was "
            f"frozen at {FROZEN_AT} and were never tuned on.\n\n")
    print(text.strip())
    if set(args.cases) == {c.name for c in CASES}:
        # the table without the timings (they vary from run to run)
        head = ["| case | evidence | source | published | tileplan | agrees |", "|---|---|---|---|---|---|"]
        rows = [line.rsplit(" |", 3)[0] + " |" for line in lines[2:]]
        (ROOT / "docs" / "fidelity-training.md").write_text(HEADER + text + "\n".join(head + rows) + "\n")


if __name__ == "__main__":
    main()
