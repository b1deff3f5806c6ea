"""Transformers models built from a Hugging Face `config.json`, and what training does
to them: one place for every model tileplan builds through transformers.

`build` reads the configuration (bounded: `check_sizes` refuses a layer count or a
size no real model has before anything is built), picks the class its `architectures`
names (`model_class_for`) and builds it on the meta device: random weights, nothing
downloaded, nothing in memory. Inference exports it on its main input
(`example_input`: `input_ids` [batch, sequence] or `pixel_values` [batch, channels,
image, image]) or a decoding step with its cache (`from_hf_config`). Training builds
it with eager attention (the materialised scores IPUs train with), asks its head for
its loss (`loss_inputs`: the labels each task head takes), unties a head the
config.json says is not tied, serialises the embedding and the projection as
optimum-graphcore does, and exports the joint forward and backward graph
(`joint_from_config`; a module's own: `joint_from_module`).
"""

from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass, replace
from typing import Any

from tileplan.errors import InputError, ModelError, option
from tileplan.importers.graph import Graph
from tileplan.importers.joint import JointGraph, joint_graph
from tileplan.ioutil import MAX_CONFIG_BYTES, display_name, read_json
from tileplan.model.cache import CacheKind
from tileplan.runtime import library_output_captured

#: the sequence length a text model is planned at unless told
DEFAULT_SEQUENCE = 128

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


@dataclass(frozen=True)
class Built:
    """A transformers model built on the meta device from a config.json: the module, its
    configuration, the class it was built as in words (the report's
    `program.architecture`), its name (the config.json's `_name_or_path`, else its
    folder's) and whether the config.json says its head is not tied to its embedding
    (`tie_word_embeddings` false: mT5's 250112 x 512 head is not its embedding)."""

    model: Any
    config: Any
    architecture: str
    name: str
    untied: bool


def build(path: str, layers: int | None, eager: bool = False) -> Built:
    """The model a config.json describes (see the module docstring), with `layers`
    layers when given; `eager`: with eager attention."""
    try:
        import torch
        from transformers import AutoConfig
    except ImportError:  # pragma: no cover - the import extra is installed by make test
        raise InputError("planning a Hugging Face config.json needs the `import` extra: "
                         "pip install 'tileplan[import]'", path) from None
    doc = read_json(path, MAX_CONFIG_BYTES)
    if not isinstance(doc, dict):
        raise InputError(f"expected a JSON object (a Hugging Face config.json), found a {type(doc).__name__}", path)
    kind = doc.get("model_type")
    if not isinstance(kind, str):
        raise InputError("no model_type: expected a Hugging Face config.json", path)
    fields = {k: v for k, v in doc.items() if k != "model_type"}
    try:
        cfg = AutoConfig.for_model(kind, **fields)
    except Exception as e:  # transformers and huggingface_hub validate with many exception types
        raise InputError(f"transformers cannot build a {display_name(kind)!r} configuration: {type(e).__name__}: "
                         f"{first_line(e)}", path) from None
    cfg.use_cache = False
    if eager:  # materialised scores, as IPUs train (docs/notes/TRAINING-NOTES.md section 3.5)
        cfg._attn_implementation = "eager"
    if layers is not None:
        if not hasattr(cfg, "num_hidden_layers"):
            raise InputError(f"{option('layers')}: this configuration has no num_hidden_layers", path)
        cfg.num_hidden_layers = layers
    for key in ("num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size", "num_attention_heads"):
        value = getattr(cfg, key, None)
        limit = MAX_CONFIG_LAYERS if key == "num_hidden_layers" else MAX_CONFIG_SIZE
        if isinstance(value, int) and not 0 < value <= limit:
            raise InputError(f"{key} must be in [1, {limit}], found {value}", path)
    check_sizes(cfg.to_dict(), path)
    model_class, architecture = model_class_for(cfg, doc.get("architectures"))
    try:
        with torch.device("meta"):
            model = model_class.from_config(cfg) if hasattr(model_class, "from_config") else \
                model_class._from_config(cfg)
    except Exception as e:
        raise ModelError(f"transformers cannot build the model: {type(e).__name__}: {first_line(e)}",
                         path) from None
    name = doc.get("_name_or_path")
    label = display_name(name) if isinstance(name, str) and name else config_name(path, kind)
    return Built(model, cfg, architecture, label, doc.get("tie_word_embeddings") is False)


def from_hf_config(path: str, batch: int | None, sequence_length: int | None, image_size: int | None,
                   layers: int | None, kv_cache: int | None = None,
                   kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Graph:
    """The graph of any architecture transformers builds from its config (`build`),
    exported on its main input (`example_input`), or one decoding step of
    `sequence_length` tokens (default 1) after `kv_cache` positions, or into a static
    cache of `kv_cache` positions (`kv_cache_kind`, `tileplan.importers.decode`)."""
    from tileplan.importers.torch_export import from_torch

    built = build(path, layers)
    batch = batch or 1
    if kv_cache is not None:
        from tileplan.importers.decode import decode_step
        graph = decode_step(built.model, kv_cache, batch, sequence_length or 1, built.name, kv_cache_kind)
        return replace(graph, architecture=built.architecture)
    example = example_input(built.model, built.config, batch, sequence_length, image_size, path)
    graph = from_torch(built.model, (example,), built.name)
    return replace(graph, architecture=built.architecture)


def joint_from_config(path: str, batch: int, sequence_length: int | None, image_size: int | None,
                      layers: int | None, factor: int = 1, projection: int = 1) -> tuple[JointGraph, str, str]:
    """The joint graph of the model a config.json names, with its head's loss
    (`loss_inputs`), its embedding serialised in `factor` tables and an untied head in
    `projection` parts; with the model's name and the class it was built as."""
    built = build(path, layers, eager=True)
    model = built.model
    example = example_input(model, built.config, batch, sequence_length, image_size, path)
    main = getattr(model, "main_input_name", "input_ids")
    tokens = example.shape[1] if main == "input_ids" else 1
    labels = loss_inputs(model, main, batch, tokens)
    inputs = {main: (tuple(example.shape), example.dtype), **labels}

    def prepare(m: Any) -> None:
        if built.untied:  # transformers may tie what the config.json says is not tied (MT5Config always ties)
            untie_head(m)
        if factor > 1:
            serialize_embeddings(m, factor)
        if projection > 1:
            serialize_projection(m, projection)

    return joint_graph(model, inputs, built.name, prepare=prepare), built.name, built.architecture


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


def example_input(model: Any, cfg: Any, batch: int, sequence_length: int | None, image_size: int | None,
                   path: str) -> Any:
    """The model's main input on the meta device: `input_ids` [batch, sequence] or
    `pixel_values` [batch, channels, image, image]."""
    import torch

    main = getattr(model, "main_input_name", "input_ids")
    if main == "input_ids":
        limit = getattr(cfg, "max_position_embeddings", None)
        limit = limit if isinstance(limit, int) and limit > 0 else DEFAULT_SEQUENCE
        seq = sequence_length or min(DEFAULT_SEQUENCE, limit)
        return torch.zeros(batch, seq, dtype=torch.long, device="meta")
    if main == "pixel_values":
        vision = getattr(cfg, "vision_config", cfg)
        found = image_size or getattr(vision, "image_size", None) or 224
        first: object = found[0] if isinstance(found, (list, tuple)) and found else found
        checked = []
        for key, value in (("image_size", first), ("num_channels", getattr(vision, "num_channels", 3))):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
                raise InputError(f"{key} must be an integer in [1, 65536], found {str(value)[:40]}", path)
            checked.append(value)
        size, channels = checked
        return torch.zeros(batch, channels, size, size, device="meta")
    raise InputError(f"the model's main input is {str(main)[:40]!r}; tileplan builds input_ids or pixel_values from "
                     "a config (export the model yourself and plan the .pt2 or .onnx)", path)


def model_class_for(config: Any, architectures: object) -> tuple[Any, str]:
    """The transformers class a config.json names in `architectures` (its first entry:
    `BertForQuestionAnswering` plans the QA head, `LlamaForCausalLM` the LM head), when
    transformers has it and it takes this configuration; else the base model
    (`AutoModel`; build either with `from_config`, or `_from_config` for a model
    class). Returns the class and what was chosen, in words (the report's
    `program.architecture`)."""
    import transformers
    from transformers import AutoModel

    names = architectures if isinstance(architectures, list) else []
    first = names[0] if names and isinstance(names[0], str) and names[0].isidentifier() else None
    if first is not None:
        cls = getattr(transformers, first, None)
        config_class = getattr(cls, "config_class", None)
        if cls is not None and hasattr(cls, "_from_config") and isinstance(config, config_class or ()):
            return cls, first
        base = AutoModel._model_mapping.get(type(config), None) if hasattr(AutoModel, "_model_mapping") else None
        fallback = getattr(base, "__name__", "the base model")
        return AutoModel, f"{fallback} (architectures names {display_name(first, 60)!r}, which transformers does not " \
                          f"build for this configuration)"
    base = AutoModel._model_mapping.get(type(config), None) if hasattr(AutoModel, "_model_mapping") else None
    return AutoModel, getattr(base, "__name__", "the base model")


#: keys of a configuration (at any depth: a composite model's text_config, vision_config...)
#: that count layers, and their most; and the most of any other size
_LAYER_KEYS = re.compile(r"(^|_)(layers|n_layer|depths?)$")
MAX_CONFIG_LAYERS = 1000
#: a list of layer counts (a Swin's depths per stage); other lists under layer keys index layers
_DEPTHS = re.compile(r"(^|_)depths$")
_SIZE_KEYS = re.compile(r"(size|dim|heads|channels|vocab|positions|embd|d_model|d_ff|d_kv|n_inner|ctx)$")
MAX_CONFIG_SIZE = 1 << 24


def check_sizes(config: object, path: str, place: str = "") -> None:
    """Every layer count at most MAX_CONFIG_LAYERS and every size at most
    MAX_CONFIG_SIZE, in the configuration and each of its sub-configurations: a
    composite model's text_config with a million layers would otherwise take minutes and
    gigabytes to build before anything could say so."""
    stack: list[tuple[object, str]] = [(config, place)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{where}.{key}" if where else str(key)
                if isinstance(value, (dict, list)):
                    stack.append((value, here))
                elif isinstance(value, bool) or not isinstance(value, int):
                    continue
                elif _LAYER_KEYS.search(str(key)) and value > MAX_CONFIG_LAYERS:
                    raise InputError(f"{here} is {value}, more than the {MAX_CONFIG_LAYERS} layers tileplan plans",
                                     path)
                elif _SIZE_KEYS.search(str(key)) and value > MAX_CONFIG_SIZE:
                    raise InputError(f"{here} is {value}, more than the {MAX_CONFIG_SIZE} tileplan plans", path)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                here = f"{where}[{i}]"
                if isinstance(value, (dict, list)):
                    stack.append((value, here))
                elif (isinstance(value, int) and not isinstance(value, bool) and _DEPTHS.search(where)
                      and value > MAX_CONFIG_LAYERS):
                    raise InputError(f"{here} is {value}, more than the {MAX_CONFIG_LAYERS} layers tileplan plans",
                                     path)


def first_line(e: BaseException, limit: int = 300) -> str:
    """An exception's text on one line (whitespace runs folded), at most `limit`
    characters."""
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def config_name(path: str, fallback: str) -> str:
    """A configuration's model name when it names none itself: a `config.json`'s
    folder name (the same from inside the folder as from outside it, and for the folder
    itself: `Llama-3.2-1B-Instruct`, its dots kept), any other file's stem."""
    absolute = os.path.abspath(path)
    if os.path.isdir(absolute):
        return display_name(os.path.basename(absolute) or fallback)
    if os.path.basename(absolute) != "config.json":
        return display_name(os.path.splitext(os.path.basename(absolute))[0] or fallback)
    return display_name(os.path.basename(os.path.dirname(absolute)) or fallback)
