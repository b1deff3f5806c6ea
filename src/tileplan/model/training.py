"""How a model is trained: the optimizer, its state's precisions, gradient
accumulation, recomputation, where the state lives, replication (`TrainingSetup`).

A training request decides it once (`tileplan.app.training.TrainingOptions.setup`);
the training program's builder (`tileplan.importers.training`) makes the state it
declares from it, and a training program's `ProgramInfo` carries it (the report's
`program` entries of a training report).
"""

from __future__ import annotations

from dataclasses import dataclass

from tileplan.errors import InputError
from tileplan.model.precision import F32, Precision

OPTIMIZERS = ("sgd", "sgd-momentum", "adam", "adamw", "lamb")
#: whose defaults a setup takes: PopTorch's, or optimum-graphcore's trainer's
PRESETS = ("poptorch", "optimum")
RECOMPUTE = ("none", "pipeline", "every-layer")
#: each optimizer's state tensors besides the weight, and which precision each takes
STATE = {"sgd": (), "sgd-momentum": (("velocity", "first"),),
         "adam": (("first moment", "first"), ("second moment", "second")),
         "adamw": (("first moment", "first"), ("second moment", "second")),
         "lamb": (("first moment", "first"), ("second moment", "second"))}


@dataclass(frozen=True, slots=True)
class TrainingSetup:
    """How a model is trained (docs/notes/TRAINING-NOTES.md section 7, "Inputs the planner
    needs"): the optimizer and the precisions of its accumulator and first and second
    moments (or velocity), gradient accumulation, recomputation, where the optimizer
    state lives, replication and replicated tensor sharding, and whose defaults it
    took (`preset`)."""

    optimizer: str = "adamw"
    accumulator: Precision = F32
    first_order: Precision = F32
    second_order: Precision = F32
    gradient_accumulation: int = 1
    recompute: str = "none"
    optimizer_state_offchip: bool = False
    replication_factor: int = 1
    replicated_tensor_sharding: bool = False
    #: the IPU of each split of a serialised embedding, as optimum-graphcore's
    #: `serialized_embedding_splits_per_ipu` (None: every split on IPU 0)
    embedding_splits_per_ipu: tuple[int, ...] | None = None
    #: the weight decay marked constant (`variable_attrs.markAsConstant("weight_decay")`,
    #: as Graphcore's examples and optimum-graphcore's trainer mark it), applied to the
    #: weights of more than one dimension (their biases and norm weights take none);
    #: None: PopTorch's default, a variable decay on every weight
    weight_decay: float | None = None
    #: whose defaults the setup took (`PRESETS`)
    preset: str = "poptorch"

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, found {self.optimizer!r}")
        if self.preset not in PRESETS:
            raise InputError(f"--optimizer-preset must be one of {', '.join(PRESETS)}, found {self.preset!r}")
        if self.recompute not in RECOMPUTE:
            raise InputError(f"--recompute must be one of {', '.join(RECOMPUTE)}, found {self.recompute!r}")
        for key in ("gradient_accumulation", "replication_factor"):
            value = getattr(self, key)
            if not 1 <= value <= 1 << 20:
                raise InputError(f"--{key.replace('_', '-')} must be in [1, 2^20], found {value}")
        for p in (self.accumulator, self.first_order, self.second_order):
            if p.name not in ("F16", "F32"):
                raise InputError(f"optimizer state is F16 or F32 (PopTorch's accum_type and momentum types), "
                                 f"found {p.to_text()}")

    @property
    def accumulates(self) -> bool:
        return self.gradient_accumulation > 1

    def updater(self, shape: tuple[int, ...], precision: Precision) -> Precision:
        """The precision of Adam's and LAMB's updater term for a weight of `shape` and
        `precision`: PopART makes the weight an input of its AdamUpdaterOp, whose
        output then takes the weight's type, only for a decay that is variable or above
        0 (willow/src/patterns/adamdecompose.cpp); else the output takes the first
        moment's type (willow/src/op/adamupdater.cpp, `AdamUpdaterOp::setup`)."""
        decays = self.weight_decay is None or (self.weight_decay > 0 and len(shape) > 1)
        return precision if decays else self.first_order

    @property
    def shards(self) -> int:
        """The replicas the optimizer state is split over (1: not split)."""
        return self.replication_factor if self.replicated_tensor_sharding and self.replication_factor > 1 else 1

    def state(self) -> tuple[tuple[str, Precision], ...]:
        """(label, precision) of each state tensor of a trained parameter."""
        return tuple((label, self.first_order if which == "first" else self.second_order)
                     for label, which in STATE[self.optimizer])
