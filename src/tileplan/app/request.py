"""A plan request: everything that decides a plan, as one immutable value.

The CLI builds one from its options; the what-if table and the sweep vary its fields.
`command()` gives the `tileplan plan` line that reproduces it, so every re-planned
figure in a report can be re-derived by running that command.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tileplan.errors import InputError, TileplanError, option
from tileplan.kernel.options import AttentionProducts, GemmOutputPacking, Options, Outlining
from tileplan.lowering.policy import policy
from tileplan.app.sources import display_name, import_graph, is_hub_id, kind_of, locate
from tileplan.builtins import siglip, synthetic
from tileplan.importers.graph import Graph
from tileplan.importers.hf_models import config_name
from tileplan.model.info import ModelShape, ProgramInfo
from tileplan.model.ir import Program
from tileplan.model.machine import machine
from tileplan.model.precision import Precision, from_option
from tileplan.planner.pipeline import MAX_IPUS, Pipeline, ProgramSplit, Split, as_asked
from tileplan.planner.plan import Plan, plan_program
from tileplan.builtins.synthetic import config_for_timeline, timeline_count
from tileplan.app.training import TrainingOptions, training_program, training_split


#: PopLibs' and PopTorch's default availableMemoryProportion
DEFAULT_PROPORTION = "0.6"
#: more encoder layers than any real tower; beyond it a typo would take minutes and GBs
MAX_LAYERS = 1000


def default_precisions(machine_name: str, model_precision: str | None, weights: str | None = None,
                       activations: str | None = None) -> tuple[str, str]:
    """(weights, activations) as asked, else the defaults, decided here for the CLI and
    the API alike: a model with its own precision (`Graph.float_precision`, "F32" or
    "F16") plans in it; a built-in model (None) in the seed's: F8F143 x2^-4 weights
    where the machine's AMP has FP8, else F16, and F16 activations."""
    if model_precision is not None:
        own = model_precision.lower()
        return weights or own, activations or own
    fp8 = any(g.multiply == "F8F143" for g in machine(machine_name).amp)
    return weights or ("f8f143:-4" if fp8 else "f16"), activations or "f16"


#: what `--weights` takes (`weights_precision`)
WEIGHTS_GRAMMAR = "f16, f32, bf16, f8f143:SCALE or f8f152:SCALE"


def weights_precision(text: str) -> Precision:
    """`--weights` read by its grammar (`WEIGHTS_GRAMMAR`: a precision the AMP
    multiplies, FP8 with its power-of-two scale exponent); anything else, the empty
    text included, one line naming the flag, what it takes and a hint."""
    name, colon, scale = text.strip().lower().partition(":")
    if name in ("f16", "f32", "bf16") and not colon:
        return from_option(text)
    if name in ("f8f143", "f8f152") and colon:
        try:
            return from_option(text)
        except InputError as e:
            hint = str(e).split(": ", 1)[-1]
    elif name in ("f8f143", "f8f152"):
        hint = f"an FP8 format takes its scale exponent after ':', e.g. {name}:-4"
    elif name.startswith(("f8", "fp8", "e4m3", "e5m2")):
        hint = "FP8 is f8f143:SCALE (E4M3) or f8f152:SCALE (E5M2), e.g. f8f143:-4"
    elif not text.strip():
        hint = "give a precision, or leave the option out for the model's own (e.g. f16)"
    else:
        hint = "e.g. f16 or f8f143:-4"
    raise InputError(f"{option('weights', repr(text))}: expected {WEIGHTS_GRAMMAR}; {hint}")


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """Invariants: each knob in its range and grammar (checked on construction); the
    model exists and takes each knob given (checked when it is built: `program()`)."""

    model: str = siglip.DEFAULT_MODEL
    layers: int | None = None
    #: precisions (None: decided by `resolved`, from the machine and the model): the
    #: weights read by matmuls and convolutions, every other floating tensor, and the
    #: matmuls' and convolutions' partials ("f16": half partials)
    weights: str | None = None
    activations: str | None = None
    partials: str | None = None
    map_head: bool = True
    unroll: bool = False
    policy: str = "default"
    machine: str = "ipu21"
    attention_products: str = "automatic"
    gemm_output_packing: str = "native"
    #: how the compile outlines repeated operations (`Outlining`): "shared", PopART's
    #: default, or "per-layer" (`POPART_POPLINER_OUTLINER_REGEX`, PopLiner's profiles)
    outlining: str = "shared"
    #: shape knobs of imported models (None: the model's own or the default)
    batch: int | None = None
    sequence_length: int | None = None
    image_size: int | None = None
    #: one decoding step of a decoder with a cache of this many positions per layer
    #: (`sequence_length` new tokens a sequence, default 1)
    kv_cache: int | None = None
    #: several IPUs: a count, "auto" (the fewest that fit), with `layers_per_ipu`
    #: optimum-graphcore's list ("3,7,7,7", -1 wildcards)
    ipus: str | None = None
    layers_per_ipu: str | None = None
    #: Poplar's availableMemoryProportion: one value, or one per IPU ("0.15,0.25,0.25,0.25")
    available_memory_proportion: str = DEFAULT_PROPORTION
    #: training (`--train`): the joint forward and backward program, its optimizer and
    #: pipeline (`tileplan.app.training`); None: inference
    training: TrainingOptions | None = None

    def __post_init__(self) -> None:
        if self.layers is not None and not 1 <= self.layers <= MAX_LAYERS:
            raise InputError(f"{option('layers')} must be in [1, {MAX_LAYERS}], found {self.layers}")
        for key in ("batch", "sequence_length", "image_size", "kv_cache"):
            value = getattr(self, key)
            if value is not None and not 1 <= value <= 1 << 20:
                raise InputError(f"{option(key)} must be in [1, 2^20], found {value}")
        if self.ipus is not None and self.ipus != "auto" and not (self.ipus.isdigit() and
                                                                 1 <= int(self.ipus) <= MAX_IPUS):
            raise InputError(f"{option('ipus')} must be a count in [1, {MAX_IPUS}] or auto, found {self.ipus!r}")
        if self.layers_per_ipu is not None:
            self.split_spec()
        self.proportions()
        if self.weights is not None:
            weights_precision(self.weights)
        for key in ("activations", "partials"):
            value = getattr(self, key)
            if value is not None and value not in ("f16", "f32"):
                raise InputError(f"{option(key)} must be f16 or f32, found {value!r}")
        choices = {"attention_products": [c.value.lower() for c in AttentionProducts],
                   "gemm_output_packing": [c.value.lower() for c in GemmOutputPacking],
                   "outlining": [c.value for c in Outlining]}
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise InputError(f"{option(key).strip('-=')} must be one of {', '.join(allowed)}, "
                                 f"found {getattr(self, key)!r}")

    def resolved(self) -> "PlanRequest":
        """This request with every default decided, once, for the CLI and the API
        alike: the built-in towers and `synthetic:N` keep the seed's precisions (weights
        F8F143 x2^-4 where the machine's AMP has FP8, else F16; activations F16); an
        imported model plans in its own precision (an FP32 module or ONNX graph FP32
        weights and activations, an FP16 one F16: `Graph.float_precision`); partials
        as the AMP accumulates unless asked."""
        if self.weights is not None and self.activations is not None:
            return self
        if self.training is not None:  # optimum-graphcore's trainer runs the model .half() unless --fp32
            return replace(self, weights=self.weights or self.activations or "f16",
                           activations=self.activations or self.weights or "f16")
        own = self.graph().float_precision if self.imported and kind_of(self.model) != "synthetic" else None
        weights, activations = default_precisions(self.machine, own, self.weights, self.activations)
        return replace(self, weights=weights, activations=activations)

    def graph(self) -> Graph:
        """The imported model's graph (imported once per process: `sources.import_graph`)."""
        return import_graph(self.model, self.batch, self.sequence_length, self.image_size, self.layers,
                            self.kv_cache)

    @property
    def model_shape(self) -> ModelShape:
        """The shape knobs the request gives (None where it leaves the model's own)."""
        return ModelShape(batch=self.batch, sequence_length=self.sequence_length, image_size=self.image_size,
                          layers=self.layers, kv_cache=self.kv_cache)

    @property
    def imported(self) -> bool:
        """True for models that come through an importer's graph (ONNX, .pt2, a
        non-SigLIP Hugging Face config, `synthetic:N`); False for the built-in towers
        and a SigLIP config.json (built by `tileplan.builtins.siglip`)."""
        return kind_of(self.model) not in ("builtin", "siglip-config")

    @property
    def path(self) -> str:
        """The file the model comes from: `model`, or the config.json of a hub id."""
        return locate(self.model)

    @property
    def config(self) -> siglip.ViTConfig:
        if self.imported:
            raise InputError("an imported model has no built-in tower configuration", self.model)
        c = siglip.config(self.path, layers=self.layers, map_head=self.map_head, batch=self.batch)
        return c if self.image_size is None else replace(c, image=self.image_size)

    @property
    def name(self) -> str:
        """The model's name (reports and default output names)."""
        if is_hub_id(self.model):
            return display_name(self.model.rsplit("/", 1)[-1])
        if not self.imported:
            return self.config.name
        if kind_of(self.model) == "synthetic":
            return f"synthetic-{timeline_count(self.model)}"
        path = Path(self.model)
        if path.name == "config.json":  # the checkpoint folder's name, from inside it or not
            return config_name(self.model, "config")
        return display_name(path.stem)

    def proportions(self) -> list[float]:
        try:
            values = [float(x) for x in self.available_memory_proportion.split(",")]
        except ValueError:
            values = []
        if not values or not all(0 < v <= 1 for v in values):
            raise InputError(f"{option('available_memory_proportion')} {self.available_memory_proportion!r}: "
                             "expected a proportion in (0, 1], or one per IPU separated by commas (e.g. 0.15,0.25)")
        return values

    def options_for(self, ipu: int = 0) -> Options:
        """The options of IPU `ipu`'s plan (its own available memory proportion)."""
        values = self.proportions()
        if len(values) > 1 and ipu >= len(values):
            raise InputError(f"{option('available_memory_proportion')} lists {len(values)} IPUs; the plan has "
                             f"IPU {ipu}")
        return Options(GemmOutputPacking(self.gemm_output_packing.capitalize()),
                       AttentionProducts(self.attention_products.capitalize()),
                       values[ipu] if len(values) > 1 else values[0],
                       None if self.partials is None else self.partials.upper(), Outlining(self.outlining))

    @property
    def options(self) -> Options:
        return self.options_for(0)

    def program(self) -> Program:
        if self.weights is None or self.activations is None:
            return self.resolved().program()
        if self.training is not None:
            if self.policy != "default" or self.unroll or not self.map_head:
                raise InputError("training plans with the default policy, without --unroll or --no-map-head")
            return training_program(self)
        if kind_of(self.model) == "synthetic":
            given = [k for k in ("layers", "batch", "sequence_length", "image_size", "kv_cache")
                     if getattr(self, k) is not None]
            if given or self.unroll or not self.map_head:
                knob = given[0] if given else "unroll" if self.unroll else "map_head"
                raise InputError(f"{option(knob)} is not a knob of synthetic:N (its size is N, the timeline values)",
                                 self.model)
            weights = from_option(self.weights)
            cfg = config_for_timeline(timeline_count(self.model), weights)
            return synthetic.build_synthetic(cfg, weights)
        if self.imported:
            if self.unroll or not self.map_head:
                raise InputError(f"{option('unroll')} and {option('no_map_head')} are for the built-in towers",
                                 self.model)
            graph = self.graph()
            info = ProgramInfo(source=self.model, architecture=graph.architecture, shape=self.model_shape,
                               notes=graph.notes)
            return graph.to_program(from_option(self.weights), from_option(self.activations), info)
        if self.kv_cache is not None:
            raise InputError(f"{option('kv_cache')} is for decoders; a built-in tower is an encoder", self.model)
        if self.sequence_length is not None:
            raise InputError(f"{option('sequence_length')} is for text models; a built-in tower's tokens come from "
                             f"its image size ({option('image_size')})", self.model)
        return siglip.build_vit(self.config, from_option(self.weights), unroll=self.unroll,
                                activations=from_option(self.activations))

    def plan(self) -> Plan:
        request = self.resolved()
        return plan_program(request.program(), machine(request.machine), policy(request.policy), request.options)

    @property
    def batch_varies(self) -> bool:
        """Whether the batch may be a knob of this model: not of a saved export (its
        shapes are fixed) nor of `synthetic:N` (its size is N); of an ONNX file when
        the file leaves it symbolic, which planning finds (the what-if's batch row
        then says why not)."""
        return kind_of(self.model) not in ("exported", "synthetic")

    @property
    def pipelined(self) -> bool:
        return self.ipus is not None or self.layers_per_ipu is not None

    def split_spec(self) -> list[int]:
        try:
            return [int(x) for x in (self.layers_per_ipu or "").split(",")]
        except ValueError:
            raise InputError(f"{option('layers_per_ipu')} {self.layers_per_ipu!r}: expected integers separated by "
                             "commas, e.g. 3,7,7,7 or -1,-1") from None

    def pipeline(self) -> Pipeline | None:
        """The plans over several IPUs: as `layers_per_ipu` says, split evenly over
        `ipus`, or (`ipus` auto) the fewest IPUs that fit; None when auto finds none."""
        if self.weights is None or self.activations is None:
            return self.resolved().pipeline()
        ipus = None if self.ipus in (None, "auto") else int(self.ipus)
        return as_asked(self.split(), self.split_spec() if self.layers_per_ipu is not None else None, ipus,
                        self.ipus == "auto")

    def split(self) -> Split:
        """The model's layers split over IPUs, each IPU planned with its own options
        (the search of `tileplan.planner.pipeline` takes it); the precisions decided."""
        target, layout = machine(self.machine), policy(self.policy)

        def run(stage: Program) -> Plan:
            ipu = stage.info.pipeline.ipu if stage.info.pipeline is not None else 0
            return plan_program(stage, target, layout, self.options_for(ipu))

        return training_split(self, run) if self.training is not None else ProgramSplit(self.program(), run)

    def with_(self, **changes: Any) -> "PlanRequest":
        return replace(self, **changes)

    def command(self) -> str:
        """The `tileplan plan` line that plans exactly this request, each value quoted
        for a POSIX shell (`--machine 'my machine.toml'`)."""
        parts = ["tileplan plan", shlex.quote(self.model)]

        def flag(key: str, value: object) -> None:
            parts.append(f"--{key.replace('_', '-')} {shlex.quote(str(value))}")

        if not self.imported:
            flag("layers", self.config.layers)
        elif self.layers is not None:
            flag("layers", self.layers)
        resolved = self.resolved()
        flag("weights", resolved.weights)
        try:
            own = replace(self, activations=None).resolved().activations
        except TileplanError:  # a request that cannot be planned (a what-if row saying why) states it
            own = None
        if resolved.activations != own:
            flag("activations", resolved.activations)
        for key in ("partials", "batch", "sequence_length", "image_size", "kv_cache", "ipus", "layers_per_ipu"):
            if getattr(self, key) is not None:
                flag(key, getattr(self, key))
        if self.available_memory_proportion != DEFAULT_PROPORTION:
            flag("available_memory_proportion", self.available_memory_proportion)
        if not self.map_head:
            parts.append("--no-map-head")
        if self.unroll:
            parts.append("--unroll")
        defaults = PlanRequest()
        for key in ("policy", "machine", "attention_products", "gemm_output_packing"):
            if getattr(self, key) != getattr(defaults, key):
                flag(key, getattr(self, key))
        if self.training is not None:
            parts.extend(self.training.command())
        return " ".join(parts)
