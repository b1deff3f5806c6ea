"""Training requests: `tileplan plan MODEL --train` and `tileplan.plan(..., train=True)`.

`TrainingOptions` is what a user asks (`--optimizer`, `--optimizer-preset`,
`--accum-type` and the two moments' types (PopTorch's optimizer arguments),
`--gradient-accumulation`, `--recompute`, `--optimizer-state-offchip`,
`--replication-factor`, `--replicated-tensor-sharding`,
`--embedding-serialization-factor`, `--serialized-embedding-splits-per-ipu`,
`--projection-serialization-factor`, `--weight-decay`), its defaults decided here once
for the CLI and the API alike (`setup`): PopTorch's (FP32 accumulator and moments, a
variable weight decay on every weight; pipeline
recomputation with several IPUs, none on one; gradient accumulation 2N - 1 with N
stages, the least PopART accepts, none on one IPU) or, with the `optimum` preset,
optimum-graphcore's trainer's (FP16 accumulator and first moment, FP32 second, its
weight decay 0.0 marked constant);
`accum_type`, `first_order_momentum_accum_type` and `second_order_momentum_accum_type`
override the preset one by one, as PopTorch's `AdamW(..., accum_type=torch.float16,
first_order_momentum_accum_type=torch.float32, ...)` sets them (Graphcore's BERT
examples: FP16 accumulator, FP32 moments unless `enable_half_first_order_momentum`;
graphcore/examples `nlp/bert/pytorch/optimization.py`).

The model comes from a Hugging Face `config.json` (built, given its loss, serialised
and exported by `tileplan.importers.hf_models.joint_from_config`) or a
`torch.nn.Module` handed to the API (`joint_from_module` there); the joint forward
and backward graph is exported once per process for each file version and shape
(`import_joint`), and its layers split over IPUs by `training_split`.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from tileplan.errors import InputError
from tileplan.importers.hf_models import joint_from_config
from tileplan.importers.joint import JointGraph
from tileplan.importers.joint_program import JointProgram
from tileplan.importers.training import ipu_program
from tileplan.importers.training_stages import layer_count
from tileplan.model.info import ModelShape, ProgramInfo, Serialization
from tileplan.model.ir import Program
from tileplan.model.precision import F16, F32, from_option
from tileplan.model.training import OPTIMIZERS, PRESETS, RECOMPUTE, TrainingSetup
from tileplan.planner.plan import Plan
from tileplan.planner.training import TrainingSplit
from tileplan.runtime import library_output_captured

#: the precisions PopTorch's optimizers take for their accumulator and moments
STATE_TYPES = ("f16", "f32")
#: PopTorch's optimizer arguments for the state's precisions (`TrainingOptions`)
STATE_TYPE_OPTIONS = ("accum_type", "first_order_momentum_accum_type", "second_order_momentum_accum_type")


@dataclass(frozen=True, slots=True)
class TrainingOptions:
    """What a training request asks (None: the default, decided by `setup`)."""

    optimizer: str = "adamw"
    optimizer_preset: str = "poptorch"
    gradient_accumulation: int | None = None
    recompute: str | None = None
    optimizer_state_offchip: bool = False
    replication_factor: int = 1
    replicated_tensor_sharding: bool = False
    embedding_serialization_factor: int = 1
    #: optimum-graphcore's `serialized_embedding_splits_per_ipu` ("4,4,0,0": the
    #: embedding in 8 splits, 4 on IPU 0 and 4 on IPU 1; sets the serialisation factor)
    serialized_embedding_splits_per_ipu: str | None = None
    #: optimum-graphcore's `projection_serialization_factor`: an untied head in F products
    projection_serialization_factor: int = 1
    #: PopTorch's optimizer arguments (f16 or f32): the gradient accumulator's, the first
    #: and the second moment's precision; None: the preset's
    accum_type: str | None = None
    first_order_momentum_accum_type: str | None = None
    second_order_momentum_accum_type: str | None = None
    #: the weight decay, marked constant and left off biases and norm weights (Graphcore's
    #: examples, optimum-graphcore's trainer); None: the preset's (PopTorch: its variable
    #: default on every weight; optimum: its TrainingArguments' 0.0)
    weight_decay: float | None = None

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, found {self.optimizer!r}")
        if self.optimizer_preset not in PRESETS:
            raise InputError(f"--optimizer-preset must be one of {', '.join(PRESETS)}, found "
                             f"{self.optimizer_preset!r}")
        if self.recompute is not None and self.recompute not in RECOMPUTE:
            raise InputError(f"--recompute must be one of {', '.join(RECOMPUTE)}, found {self.recompute!r}")
        for key in ("gradient_accumulation", "replication_factor", "embedding_serialization_factor",
                    "projection_serialization_factor"):
            value = getattr(self, key)
            if value is not None and not 1 <= value <= 1 << 20:
                raise InputError(f"--{key.replace('_', '-')} must be in [1, 2^20], found {value}")
        for key in STATE_TYPE_OPTIONS:
            value = getattr(self, key)
            if value is not None and value not in STATE_TYPES:
                raise InputError(f"--{key.replace('_', '-')} must be f16 or f32 (PopTorch's torch.float16 or "
                                 f"torch.float32), found {value!r}")
        if self.weight_decay is not None and not 0 <= self.weight_decay <= 1:
            raise InputError(f"--weight-decay must be in [0, 1], found {self.weight_decay}")
        self.embedding_splits()

    def embedding_splits(self) -> tuple[int, ...] | None:
        """`serialized_embedding_splits_per_ipu` as counts (None when not given)."""
        if self.serialized_embedding_splits_per_ipu is None:
            return None
        try:
            counts = tuple(int(x) for x in self.serialized_embedding_splits_per_ipu.split(","))
        except ValueError:
            counts = ()
        if not counts or min(counts) < 0 or sum(counts) < 1:
            raise InputError(f"--serialized-embedding-splits-per-ipu {self.serialized_embedding_splits_per_ipu!r}: "
                             "expected split counts >= 0 per IPU separated by commas, at least one split, e.g. "
                             "4,4,0,0")
        return counts

    @property
    def embedding_factor(self) -> int:
        """The embedding's serialisation: the splits' count, or the factor."""
        splits = self.embedding_splits()
        return sum(splits) if splits is not None else self.embedding_serialization_factor

    def setup(self, stages: int = 1) -> TrainingSetup:
        """The setup of a pipeline of `stages` IPUs (1: not pipelined)."""
        half = self.optimizer_preset == "optimum"
        accumulation = self.gradient_accumulation
        if accumulation is None:
            accumulation = 2 * stages - 1 if stages > 1 else 1
        elif stages > 1 and accumulation < 2 * stages - 1:
            raise InputError(f"--gradient-accumulation {accumulation}: a pipeline of {stages} IPUs accumulates at "
                             f"least 2 x {stages} - 1 = {2 * stages - 1} micro-batches (PopART's rule)")
        preset = {"accum_type": F16 if half else F32, "first_order_momentum_accum_type": F16 if half else F32,
                  "second_order_momentum_accum_type": F32}
        state = {key: preset[key] if getattr(self, key) is None else from_option(getattr(self, key))
                 for key in STATE_TYPE_OPTIONS}
        return TrainingSetup(
            optimizer=self.optimizer, accumulator=state["accum_type"],
            first_order=state["first_order_momentum_accum_type"],
            second_order=state["second_order_momentum_accum_type"], gradient_accumulation=accumulation,
            recompute=self.recompute or ("pipeline" if stages > 1 else "none"),
            optimizer_state_offchip=self.optimizer_state_offchip, replication_factor=self.replication_factor,
            replicated_tensor_sharding=self.replicated_tensor_sharding,
            embedding_splits_per_ipu=self.embedding_splits() if stages > 1 else None,
            weight_decay=0.0 if self.weight_decay is None and half else self.weight_decay, preset=self.optimizer_preset)

    def command(self) -> list[str]:
        """The `tileplan plan` flags that ask for exactly this, each value quoted for a
        POSIX shell."""
        parts = ["--train"]
        defaults = TrainingOptions()
        for key in ("optimizer", "optimizer_preset", "gradient_accumulation", "recompute", "replication_factor",
                    "embedding_serialization_factor", "serialized_embedding_splits_per_ipu",
                    "projection_serialization_factor", *STATE_TYPE_OPTIONS, "weight_decay"):
            value = getattr(self, key)
            if value is not None and value != getattr(defaults, key):
                parts.append(f"--{key.replace('_', '-')} {shlex.quote(str(value))}")
        for key in ("optimizer_state_offchip", "replicated_tensor_sharding"):
            if getattr(self, key):
                parts.append(f"--{key.replace('_', '-')}")
        return parts


@lru_cache(maxsize=4)
def _joint(path: str, stamp: tuple[str, int], batch: int, sequence_length: int | None, image_size: int | None,
           layers: int | None, factor: int, projection: int) -> tuple[JointGraph, str, str]:
    """`joint_from_config`, once per file version (`stamp`) and shape."""
    return joint_from_config(path, batch, sequence_length, image_size, layers, factor, projection)


def import_joint(model: str, batch: int | None, sequence_length: int | None, image_size: int | None,
                 layers: int | None, factor: int = 1, projection: int = 1) -> tuple[JointGraph, str, str]:
    """The joint graph of the model a config.json names, with its head's loss (once per
    process for each file, its modification time and the shapes); with its name and
    the class it was built as."""
    from tileplan.app.sources import kind_of, locate

    path = locate(model)
    kind = kind_of(path)
    if kind != "hf-config":
        what = {"onnx": "an ONNX file", "exported": "a saved export", "synthetic": "a synthetic chain"}.get(
            kind, "a built-in tower")
        raise InputError(f"training plans a model built from its Hugging Face config.json (or a torch.nn.Module "
                         f"through tileplan.plan(..., train=True)); {what} has no backward pass to plan", model)
    try:
        stamp = (os.path.abspath(path), os.stat(path).st_mtime_ns)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", model) from None
    with library_output_captured():
        return _joint(path, stamp, batch or 1, sequence_length, image_size, layers, factor, projection)


def joint_program(request: Any) -> JointProgram:
    """The joint program of a request (a `PlanRequest` with `training` and its
    precisions decided), its info where the model came from and how it was built; made once per
    request and model file version (each IPU of a pipeline, each position `--ipus
    auto` tries, reads it)."""
    from tileplan.app.sources import locate

    try:
        stamp = os.stat(locate(request.model)).st_mtime_ns
    except (OSError, ValueError):
        stamp = 0
    return _joint_program(request, stamp)


@lru_cache(maxsize=8)
def _joint_program(request: Any, stamp: int) -> JointProgram:
    options = request.training
    joint, _, architecture = import_joint(request.model, request.batch, request.sequence_length,
                                          request.image_size, request.layers, options.embedding_factor,
                                          options.projection_serialization_factor)
    info = ProgramInfo(source=request.model, architecture=architecture,
                       shape=ModelShape(batch=request.batch, sequence_length=request.sequence_length,
                                        image_size=request.image_size, layers=request.layers),
                       serialization=Serialization(options.embedding_factor, options.embedding_splits(),
                                                   options.projection_serialization_factor))
    return JointProgram.of(joint, from_option(request.weights), from_option(request.activations), info)


def training_program(request: Any, counts: tuple[int, ...] | None = None, ipu: int = 0) -> Program:
    """IPU `ipu`'s program when the layers are split `counts` (None: one IPU)."""
    stages = 1 if counts is None else len(counts)
    joint = joint_program(request)
    setup = request.training.setup(stages)
    if counts is None:
        return ipu_program(joint, setup, None, 0)
    return ipu_program(joint, setup, counts, ipu)


def training_split(request: Any, plan: Callable[[Program], Plan]) -> TrainingSplit:
    """The layers of a training request split over IPUs, each IPU's program planned by
    `plan` (what `tileplan.planner.pipeline`'s search and `as_asked` take)."""
    layers = layer_count(joint_program(request))
    return TrainingSplit(layers, lambda counts, ipu: training_program(request, counts, ipu), plan)
