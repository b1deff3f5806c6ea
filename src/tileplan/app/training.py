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

The model comes from a Hugging Face `config.json` (the class its `architectures`
names, built on the meta device with eager attention, whose materialised scores are
what IPUs train with) or a `torch.nn.Module` handed to the API; its loss is its head's
(`LOSS_INPUTS`: the labels each head takes), and the joint forward and backward graph
is exported once per process for each shape (`import_joint`).
"""

from __future__ import annotations

import inspect
import os
import shlex
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from tileplan.errors import InputError, ModelError
from tileplan.importers.joint import JointGraph, joint_graph
from tileplan.importers.joint_program import JointProgram
from tileplan.importers.training import ipu_program
from tileplan.importers.training_stages import layer_count
from tileplan.ioutil import MAX_CONFIG_BYTES, display_name, read_json
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
#: the labels each task head takes to return its loss, by the end of its class name:
#: (input name, "batch" [b] or "tokens" [b, s])
LOSS_INPUTS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("ForQuestionAnswering", (("start_positions", "batch"), ("end_positions", "batch"))),
    ("ForPreTraining", (("labels", "tokens"), ("next_sentence_label", "batch"))),
    ("ForCausalLM", (("labels", "tokens"),)),
    ("LMHeadModel", (("labels", "tokens"),)),
    ("ForMaskedLM", (("labels", "tokens"),)),
    ("ForTokenClassification", (("labels", "tokens"),)),
    ("ForConditionalGeneration", (("labels", "tokens"),)),
    ("ForSequenceClassification", (("labels", "batch"),)),
    ("ForImageClassification", (("labels", "batch"),)),
    ("ForAudioClassification", (("labels", "batch"),)),
)
HEADS = ", ".join(f"...{suffix}" for suffix, _ in LOSS_INPUTS)


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


def loss_inputs(model: Any, main: str, batch: int, tokens: int) -> dict[str, tuple[tuple[int, ...], Any]]:
    """The label inputs that make `model` return its loss (see `LOSS_INPUTS`), with
    their shapes; `InputError` naming what to pass when its class has no loss."""
    import torch

    name = type(model).__name__
    wanted = next((inputs for suffix, inputs in LOSS_INPUTS if name.endswith(suffix)), None)
    try:
        parameters: Any = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        parameters = {}
    if wanted is None or not all(k in parameters for k, _ in wanted[:1]):
        raise InputError(f"--train needs a loss, and {display_name(name, 60)} has none: pass a config.json whose "
                         f"architectures names a task head ({HEADS})")
    return {key: ((batch,) if size == "batch" else (batch, tokens), torch.long) for key, size in wanted
            if key in parameters}


def serialize_embeddings(model: Any, factor: int) -> None:
    """optimum-graphcore's `embedding_serialization_factor`: the input embedding split
    into `factor` tables of consecutive rows (`SerializedEmbedding`: each looks up the
    ids in its range, the results summed), and a head tied to it (its weight the
    embedding's) made of `factor` products concatenated (`SerializedLinear`), so each
    table's gradient is made and consumed in turn."""
    import torch

    embedding = model.get_input_embeddings()
    if not isinstance(embedding, torch.nn.Embedding):
        raise InputError(f"--embedding-serialization-factor: {type(model).__name__}'s input embedding is not an "
                         "nn.Embedding")
    rows, width = embedding.weight.shape
    if factor > rows:
        raise InputError(f"--embedding-serialization-factor {factor}: the embedding has only {rows} rows")
    head = model.get_output_embeddings()
    tied = head is not None and getattr(head, "weight", None) is embedding.weight
    size = -(-rows // factor)
    bounds = [(k * size, min(rows, (k + 1) * size)) for k in range(factor) if k * size < rows]

    class SerializedEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.splits = torch.nn.ModuleDict({f"split{k}": torch.nn.Embedding(b - a, width)
                                               for k, (a, b) in enumerate(bounds)})

        def forward(self, ids: Any) -> Any:
            out = None
            for (a, b), table in zip(bounds, self.splits.values()):
                inside = (ids >= a) & (ids < b)
                x = table(torch.where(inside, ids - a, 0)) * inside.unsqueeze(-1)
                out = x if out is None else out + x
            return out

    class SerializedLinear(torch.nn.Module):
        def __init__(self, tables: Any, bias: Any) -> None:
            super().__init__()
            self.tables = [tables[k] for k in tables]
            self.bias = bias

        def forward(self, x: Any) -> Any:
            y = torch.cat([x @ t.weight.t() for t in self.tables], dim=-1)
            return y if self.bias is None else y + self.bias

    serialized = SerializedEmbedding()
    model.set_input_embeddings(serialized)
    if tied:
        model.set_output_embeddings(SerializedLinear(serialized.splits, getattr(head, "bias", None)))


@lru_cache(maxsize=4)
def _joint(path: str, stamp: tuple[str, int], batch: int, sequence_length: int | None, image_size: int | None,
           layers: int | None, factor: int, projection: int) -> tuple[JointGraph, str, str]:
    from tileplan.app import sources

    try:
        import torch
        from transformers import AutoConfig
    except ImportError:  # pragma: no cover - the import extra is installed by make test
        raise InputError("training needs the `import` extra: pip install 'tileplan[import]'", path) from None
    doc = read_json(path, MAX_CONFIG_BYTES)
    if not isinstance(doc, dict) or not isinstance(doc.get("model_type"), str):
        raise InputError("expected a Hugging Face config.json with a model_type", path)
    kind = doc["model_type"]
    try:
        cfg = AutoConfig.for_model(kind, **{k: v for k, v in doc.items() if k != "model_type"})
    except Exception as e:  # transformers validates with many exception types
        raise InputError(f"transformers cannot build a {display_name(kind)!r} configuration: {type(e).__name__}: "
                         f"{sources._first_line(e)}", path) from None
    cfg.use_cache = False
    # materialised scores, as IPUs train (docs/notes/TRAINING-NOTES.md section 3.5)
    cfg._attn_implementation = "eager"
    if layers is not None:
        if not hasattr(cfg, "num_hidden_layers"):
            raise InputError("--layers: this configuration has no num_hidden_layers", path)
        cfg.num_hidden_layers = layers
    sources.check_sizes(cfg.to_dict(), path)
    model_class, architecture = sources.model_class_for(cfg, doc.get("architectures"))
    try:
        with torch.device("meta"):
            model = model_class.from_config(cfg) if hasattr(model_class, "from_config") else \
                model_class._from_config(cfg)
    except Exception as e:
        raise ModelError(f"transformers cannot build the model: {type(e).__name__}: {sources._first_line(e)}",
                         path) from None
    example = sources._example_input(model, cfg, batch, sequence_length, image_size, path)
    main = getattr(model, "main_input_name", "input_ids")
    tokens = example.shape[1] if main == "input_ids" else 1
    labels = loss_inputs(model, main, batch, tokens)
    name = doc.get("_name_or_path")
    name = display_name(name) if isinstance(name, str) and name else sources.config_name(path, kind)
    inputs = {main: (tuple(example.shape), example.dtype), **labels}
    untie = doc.get("tie_word_embeddings") is False

    def prepare(m: Any) -> None:
        if untie:  # transformers may tie what the config.json says is not tied (MT5Config always ties)
            untie_head(m)
        if factor > 1:
            serialize_embeddings(m, factor)
        if projection > 1:
            serialize_projection(m, projection)

    return joint_graph(model, inputs, name, prepare=prepare), name, architecture


def serialize_projection(model: Any, factor: int) -> None:
    """optimum-graphcore's `projection_serialization_factor` for a head with its own
    weight: `factor` products of consecutive output columns, each with its own weight,
    concatenated (`SplitProjection`), so each part's gradient and update come in turn."""
    import torch

    head = model.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear):
        raise InputError(f"--projection-serialization-factor: {type(model).__name__}'s head is not an nn.Linear")
    if head.weight is getattr(model.get_input_embeddings(), "weight", None):
        return  # tied: the embedding's serialisation serialises it
    rows, width = head.weight.shape
    size = -(-rows // factor)
    bounds = [(k * size, min(rows, (k + 1) * size)) for k in range(factor) if k * size < rows]

    class SplitProjection(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.parts = torch.nn.ModuleDict({f"part{k}": torch.nn.Linear(width, b - a, bias=head.bias is not None)
                                              for k, (a, b) in enumerate(bounds)})

        def forward(self, x: Any) -> Any:
            return torch.cat([part(x) for part in self.parts.values()], dim=-1)

    model.set_output_embeddings(SplitProjection())


def untie_head(model: Any) -> None:
    """A head with its own weight, as the config.json says (`tie_word_embeddings`
    false: mT5's 250112 x 512 head is not its embedding)."""
    import torch

    head, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    if head is None or embedding is None or getattr(head, "weight", None) is not getattr(embedding, "weight", None):
        return
    head.weight = torch.nn.Parameter(torch.empty_like(embedding.weight))


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


def joint_from_module(module: Any, example_inputs: tuple[Any, ...], name: str | None = None) -> JointGraph:
    """The joint graph of a `torch.nn.Module` called on `example_inputs`, which must
    return its loss (a tensor, or an output with `.loss`)."""
    import torch

    shapes = {f"input{k}": (tuple(x.shape), x.dtype) for k, x in enumerate(example_inputs)
              if isinstance(x, torch.Tensor)}
    if len(shapes) != len(example_inputs):
        raise InputError("train=True needs example_inputs that are all tensors")
    with library_output_captured():
        return joint_graph(module, shapes, name or type(module).__name__, positional=True)


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
