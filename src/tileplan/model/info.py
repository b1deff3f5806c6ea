"""What a program says about itself: `ProgramInfo`, typed.

Where the model came from (`source`, `architecture`), the precisions it was built
with, the knobs it was built with (`ModelShape`, a built-in tower's MAP head and
unrolling, a synthetic chain's size), whether it trains (`mode`: a training
program carries its `TrainingInfo`) and, on one IPU of a pipeline, which stage it is
(`PipelineStage`). Importers and the pipeline splitters make it; the report's
`program` entries and `pipeline` section are written from it
(`tileplan.report.program_info`), and nothing reads a program's mode or stage from a
name or a dict key. A field left None (or at its default) is one the program does not
state: the report leaves it out, as a repr omits defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tileplan.model.precision import Precision
from tileplan.model.training import TrainingSetup


class Mode(Enum):
    """What a program runs: a forward pass, or a training step (forward, backward and
    the weight update)."""

    INFERENCE = "inference"
    TRAINING = "training"


@dataclass(frozen=True, slots=True)
class PipelineStage:
    """One IPU of a pipeline over `ipus` IPUs: IPU `ipu` runs the model's layers
    [first, end) (`layers`) of the split `layers_per_ipu`. Invariants: 0 <= ipu < ipus
    = len(layers_per_ipu), every count >= 0, and `layers` is the IPU's own range
    (first = the layers of the IPUs before it)."""

    ipu: int
    ipus: int
    layers_per_ipu: tuple[int, ...]
    layers: tuple[int, int]

    def __post_init__(self) -> None:
        if not 0 <= self.ipu < self.ipus == len(self.layers_per_ipu):
            raise ValueError(f"pipeline stage: IPU {self.ipu} of {self.ipus} with {len(self.layers_per_ipu)} "
                             "layer counts; expected 0 <= ipu < ipus = the counts")
        if any(c < 0 for c in self.layers_per_ipu):
            raise ValueError(f"pipeline stage: layers per IPU {list(self.layers_per_ipu)} must be >= 0")
        first = sum(self.layers_per_ipu[:self.ipu])
        if self.layers != (first, first + self.layers_per_ipu[self.ipu]):
            raise ValueError(f"pipeline stage: IPU {self.ipu} of layers per IPU {list(self.layers_per_ipu)} runs "
                             f"layers [{first}, {first + self.layers_per_ipu[self.ipu]}), found {list(self.layers)}")

    @classmethod
    def of(cls, ipu: int, layers_per_ipu: tuple[int, ...]) -> PipelineStage:
        """IPU `ipu` of the split `layers_per_ipu`."""
        first = sum(layers_per_ipu[:ipu])
        return cls(ipu, len(layers_per_ipu), tuple(layers_per_ipu), (first, first + layers_per_ipu[ipu]))


@dataclass(frozen=True, slots=True)
class ModelShape:
    """The shape knobs a model was built with (None: not given, the model's own).
    Invariant: each given one >= 1."""

    batch: int | None = None
    sequence_length: int | None = None
    image_size: int | None = None
    layers: int | None = None
    #: a decoding step's cache length (`--kv-cache`)
    kv_cache: int | None = None

    def __post_init__(self) -> None:
        for key in ("batch", "sequence_length", "image_size", "layers", "kv_cache"):
            value = getattr(self, key)
            if value is not None and value < 1:
                raise ValueError(f"model shape: {key} must be >= 1, found {value}")


@dataclass(frozen=True, slots=True)
class SyntheticSize:
    """A synthetic chain's size (`tileplan.builtins.synthetic`): its timeline values,
    the rows of its activations, its hidden and MLP widths, its shared parameter sets."""

    values: int
    rows: int
    hidden: int
    mlp: int
    shared: int


@dataclass(frozen=True, slots=True)
class Serialization:
    """optimum-graphcore's serialisations a training model was built with: the input
    embedding in `embedding_factor` tables (each split on the IPU
    `embedding_splits_per_ipu` gives it, when given), an untied head in
    `projection_factor` products. Invariant: factors >= 1."""

    embedding_factor: int = 1
    embedding_splits_per_ipu: tuple[int, ...] | None = None
    projection_factor: int = 1

    def __post_init__(self) -> None:
        if self.embedding_factor < 1 or self.projection_factor < 1:
            raise ValueError(f"serialisation factors must be >= 1, found {self.embedding_factor} and "
                             f"{self.projection_factor}")


@dataclass(frozen=True, slots=True)
class TrainingInfo:
    """How a training program trains: its setup and the forward stages its IPU runs,
    with each one's stash depth (PopTorch's stages). Invariant: one depth per stage,
    each >= 0."""

    setup: TrainingSetup
    stages: tuple[int, ...] = ()
    stash_depths: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.stages) != len(self.stash_depths) or any(d < 0 for d in self.stash_depths):
            raise ValueError(f"training: stages {list(self.stages)} need one stash depth >= 0 each, found "
                             f"{list(self.stash_depths)}")


@dataclass(frozen=True, slots=True)
class ProgramInfo:
    """What a program says about itself (see the module docstring). Invariants: a
    synthetic chain neither trains nor is a pipeline stage; a tower's `unroll` needs
    its `map_head` stated (only the built-in towers unroll); notes are non-empty."""

    #: the model as the user named it (a file, a hub id): imported models
    source: str | None = None
    #: the class the model was built as (`BertForQuestionAnswering`)
    architecture: str | None = None
    weights: Precision | None = None
    #: the activations' precision, stated where it is not the default
    activations: Precision | None = None
    shape: ModelShape = ModelShape()
    #: a built-in tower's MAP head, and whether its layers are unrolled
    map_head: bool | None = None
    unroll: bool = False
    synthetic: SyntheticSize | None = None
    #: what the plan should say about how the model was read, once each
    notes: tuple[str, ...] = ()
    #: optimum-graphcore's serialisations the model was built with (a training model's)
    serialization: Serialization | None = None
    training: TrainingInfo | None = None
    pipeline: PipelineStage | None = None

    def __post_init__(self) -> None:
        if self.synthetic is not None and (self.training is not None or self.pipeline is not None):
            raise ValueError("a synthetic chain neither trains nor runs as a pipeline stage")
        if self.unroll and self.map_head is None:
            raise ValueError("unroll is a built-in tower's: state its map_head")
        if any(not note for note in self.notes):
            raise ValueError("a program's note must say something")

    @property
    def mode(self) -> Mode:
        return Mode.TRAINING if self.training is not None else Mode.INFERENCE
