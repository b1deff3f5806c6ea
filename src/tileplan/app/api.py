"""The Python API for notebooks: `tileplan.plan(model, example_inputs=(x,), ...)`.

`model` is a `torch.nn.Module` (exported here with `example_inputs`), a
`torch.export.ExportedProgram`, an imported `Graph`, or a name as `tileplan plan`
takes it: a built-in tower, `synthetic:N`, a Hugging Face `config.json` or hub id, an
`.onnx` or a `.pt2` file. The result holds the report:
`.fits`, `.verdict` (the verdict line, Poplar's words when it does not fit),
`.to_json()` (exactly what `tileplan plan -o` writes for the same arguments: the
what-if table included unless `what_if=False`, as `--no-what-if`; version 1 up to
20,000 values and 2 beyond, or the `version` asked) and `.to_html()`. The what-if
table re-plans the model named by its path or name; a module or a program object has
none (its rows would have no `tileplan plan` command to re-derive them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from tileplan.app.sources import object_graph
from tileplan.app.targets import for_machine, refuse_foreign
from tileplan.errors import InputError, option
from tileplan.lowering.policy import policy as layout_policy
from tileplan.model.machine import machine as find_machine
from tileplan.model.precision import from_option
from tileplan.planner.plan import plan_program
from tileplan.app.request import PlanRequest, default_precisions, weights_precision
from tileplan.app.training import TrainingOptions
from tileplan.importers.hf_models import joint_from_module
from tileplan.app.whatif import with_what_if
from tileplan.importers.joint_program import JointProgram
from tileplan.importers.training import ipu_program
from tileplan.kernel.options import Options
from tileplan.planner.plan import Plan
from tileplan.app.build import build_report
from tileplan.report.format import Report, auto_version, report_bytes
from tileplan.views.common import verdict_line


@dataclass(frozen=True)
class PlanResult:
    """A planned model: its report, with what a notebook asks of it."""

    report: Report

    @property
    def fits(self) -> bool:
        return self.report.fits_budget

    @property
    def verdict(self) -> str:
        return verdict_line(self.report)

    def to_json(self, version: int | None = None) -> str:
        """The report as `tileplan plan -o` writes it: version 1 (the reference's
        format) or 2 (the compact form for large programs); by default as `plan`
        chooses (`--report-version auto`)."""
        chosen = auto_version(self.report) if version is None else version
        return report_bytes(self.report, chosen).decode("utf-8")

    def to_html(self) -> str:
        from tileplan.render.html import render_html
        from tileplan.views.liveness import build_liveness
        return render_html(build_liveness(self.report))

    def _repr_html_(self) -> str:  # notebooks show the page
        return self.to_html()

    def __repr__(self) -> str:
        return f"PlanResult({self.verdict!r})"


def plan(model: Any, example_inputs: Sequence[Any] | None = None, *, machine: str = "ipu21",
         weights: str | None = None, activations: str | None = None, partials: str | None = None,
         policy: str = "default", attention_products: str = "automatic", gemm_output_packing: str = "native",
         outlining: str = "shared", available_memory_proportion: float | str = 0.6, batch: int | None = None,
         sequence_length: int | None = None, image_size: int | None = None, layers: int | None = None,
         kv_cache: int | None = None, what_if: bool = True, train: bool | TrainingOptions = False,
         **target_options: Any) -> Any:
    """Plan `model` on `machine` (see the module docstring). A machine of another target
    (`machine="n150"`: app/targets.py) is planned by that target, with its own keywords
    (`frontend=`, `opt_level=`, `prefill_chunk=`, `l1_small_size=`, ...: its
    `plan_call`); the keywords below that it does not take are refused in one line. Precisions default as
    `tileplan plan`'s do (`app.request.default_precisions`): the model's own, the
    seed's for a built-in tower. `what_if`: re-plan with each knob turned, as
    `tileplan plan` does (a model named by its path or name). `kv_cache`: plan one
    decoding step of a decoder with a key/value cache of that many positions per
    layer, always live (a module's step reads `input_ids` of the shape of
    `example_inputs[0]` when given, else [1, 1]; a config.json's takes `batch` and
    `sequence_length` new tokens). `train`: plan training (`tileplan plan --train`; a
    `TrainingOptions` for its flags): a config.json's head's loss, or a module's own (it
    must return its loss on `example_inputs`); F16 unless asked otherwise; on one IPU.
    `outlining`: "shared" (PopART's default) or "per-layer" (`tileplan plan
    --outlining`), how the memory that is not tensors is counted."""
    target = for_machine(machine)
    if target.plan_call is not None:
        asked = {"weights": weights, "activations": activations, "partials": partials, "batch": batch,
                 "sequence_length": sequence_length, "image_size": image_size, "layers": layers,
                 "kv_cache": kv_cache, "train": train or None, **target_options,
                 "policy": None if policy == "default" else policy,
                 "attention_products": None if attention_products == "automatic" else attention_products,
                 "gemm_output_packing": None if gemm_output_packing == "native" else gemm_output_packing,
                 "outlining": None if outlining == "shared" else outlining,
                 "available_memory_proportion": None if str(available_memory_proportion) == "0.6"
                 else available_memory_proportion}
        given = {k: v for k, v in asked.items() if v is not None}
        refuse_foreign(target, machine, given, option)
        return target.plan_call(model, example_inputs, machine=machine, what_if=what_if, **given)
    if target_options:
        raise InputError(f"{option(next(iter(target_options)))} is not an option for {machine} ({target.title})")
    proportion = str(available_memory_proportion)
    if weights is not None:
        weights_precision(weights)  # by --weights' grammar, for a module too ('' is no precision)
    training = (train if isinstance(train, TrainingOptions) else TrainingOptions()) if train else None
    if isinstance(model, (str, Path)):
        request = PlanRequest(model=str(model), layers=layers, weights=weights, activations=activations,
                              partials=partials, policy=policy, machine=machine,
                              attention_products=attention_products, gemm_output_packing=gemm_output_packing,
                              outlining=outlining, batch=batch, sequence_length=sequence_length, image_size=image_size,
                              kv_cache=kv_cache, available_memory_proportion=proportion, training=training).resolved()
        planned = request.plan()
        report = build_report(planned)
        return PlanResult(with_what_if(report, request, planned) if what_if else report)
    if any(x is not None for x in (batch, sequence_length, image_size, layers)):
        raise InputError("batch=, sequence_length=, image_size= and layers= apply to models named by path; a "
                         "module's shapes come from its example_inputs= (or pass a config.json's path)")
    if kv_cache is not None and not 1 <= kv_cache <= 1 << 20:
        raise InputError(f"kv_cache= must be in [1, 2^20], found {kv_cache}")
    if training is not None:
        return PlanResult(build_report(_train_module(model, example_inputs, training, machine, weights, activations,
                                                     policy, PlanRequest(
                                                         attention_products=attention_products,
                                                         gemm_output_packing=gemm_output_packing, partials=partials,
                                                         outlining=outlining,
                                                         available_memory_proportion=proportion).options)))
    graph = object_graph(model, example_inputs, kv_cache)
    weights, activations = default_precisions(machine, graph.float_precision or "F16", weights, activations)
    options = PlanRequest(attention_products=attention_products, gemm_output_packing=gemm_output_packing,
                          partials=partials, outlining=outlining, available_memory_proportion=proportion).options
    program = graph.to_program(from_option(weights), from_option(activations))
    return PlanResult(build_report(plan_program(program, find_machine(machine), layout_policy(policy), options)))


def _train_module(model: Any, example_inputs: Sequence[Any] | None, training: TrainingOptions, machine: str,
                  weights: str | None, activations: str | None, policy: str, options: Options) -> Plan:
    """The training plan of a `torch.nn.Module` returning its loss on `example_inputs`."""
    from tileplan.importers.torch_export import _torch
    if not isinstance(model, _torch().nn.Module) or example_inputs is None:
        raise InputError("train=True plans a torch.nn.Module with example_inputs=(x, ...), or a config.json by path")
    joint = joint_from_module(model, tuple(example_inputs))
    weights = weights or activations or "f16"
    program = JointProgram.of(joint, from_option(weights), from_option(activations or weights))
    return plan_program(ipu_program(program, training.setup(1), None, 0), find_machine(machine),
                        layout_policy(policy), options)
