"""How the tt-mlir frontend gets a model named as `tileplan plan` names it: imported once
per process by the application's importers (app/sources.py `import_graph`), at the batch
and sequence length the frontend's options say (a config.json's decoder also as one
decoding step with a key/value cache: `kv_cache`, `kv_cache_kind`), in the model's own
dtype.

The model's dtype is what tt-xla runs it in: a config.json's `torch_dtype` (`dtype` in
newer files: bfloat16 for the published LLMs, which tt-forge-models loads with
`torch_dtype=torch.bfloat16`), else the dtype the importer found (`Graph.float_precision`:
float32 for a module built without one). The program is unrolled (tt-mlir sees every
layer).

A model given as a Python object (`tileplan.plan(module, example_inputs, machine="n150")`)
is an `ObjectModel`: a `torch.nn.Module` exported on its example inputs (their shapes are
the program's: no batch or sequence knob), a `torch.export.ExportedProgram` or an
imported `Graph`; a transformers decoder module also as one decoding step with a
key/value cache (`kv_cache`, `kv_cache_kind`), as the IPU's Python API plans it.

Worked example: `load("tests/data/tt_configs/llama-3.2-1b.json").program(1, 2048)` is
Llama-3.2-1B at batch 1, 2048 tokens, in bfloat16.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tileplan.app.sources import import_graph, kind_of, locate, object_graph
from tileplan.errors import InputError
from tileplan.ioutil import MAX_CONFIG_BYTES, read_json
from tileplan.importers.graph import Graph
from tileplan.model.cache import CacheKind
from tileplan.model.ir import Program
from tileplan.model.precision import Precision
from tileplan.targets.tenstorrent.frontends.tt_mlir.source import ModelSource, register_loader

#: a config's dtype names and the precision they plan in
_DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32", "float": "F32", "half": "F16"}
#: which shape knobs each model kind takes (app/sources.py `_import`)
_VARIES = {"hf-config": frozenset({"batch", "sequence_length", "kv_cache"}),
           "onnx": frozenset({"batch", "sequence_length"}), "exported": frozenset()}


def model_precision(path: str, found: str | None) -> Precision:
    """The precision tt-xla runs the model in (see the module docstring)."""
    if path.lower().endswith(".json"):
        doc = read_json(path, MAX_CONFIG_BYTES)
        if isinstance(doc, dict):
            for key in ("torch_dtype", "dtype"):
                value = doc.get(key)
                if isinstance(value, str) and value.removeprefix("torch.") in _DTYPES:
                    return Precision(_DTYPES[value.removeprefix("torch.")])
    return found_precision(found)


def found_precision(found: str | None) -> Precision:
    """The dtype the importer found (`Graph.float_precision`), F32 when it found none."""
    return Precision(found or "F32")


@dataclass(frozen=True)
class ImportedModel:
    """A model file or hub id, imported on demand (ModelSource)."""

    model: str

    @property
    def name(self) -> str:
        return self.model

    @property
    def varies(self) -> frozenset[str]:
        return _VARIES.get(kind_of(self.model), frozenset())

    def program(self, batch: int | None, sequence_length: int | None, kv_cache: int | None = None,
                kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Program:
        graph = import_graph(self.model, batch, sequence_length, kv_cache=kv_cache, kv_cache_kind=kv_cache_kind)
        precision = model_precision(locate(self.model), graph.float_precision)
        return graph.to_program(precision, precision, repeat=False)


@dataclass(frozen=True, eq=False)
class ObjectModel:
    """A model given as a Python object (see the module docstring), imported once for
    each cache asked (`graphs`), planned in the dtype the importer found (F32 for a
    module built without one), as tt-xla runs it."""

    model: Any
    example_inputs: tuple[Any, ...] | None
    label: str
    graphs: dict[tuple[int | None, CacheKind], Graph] = field(default_factory=dict, repr=False)

    @staticmethod
    def of(model: Any, example_inputs: Sequence[Any] | None) -> ObjectModel:
        label = model.name if isinstance(model, Graph) else type(model).__name__
        return ObjectModel(model, None if example_inputs is None else tuple(example_inputs), label)

    @property
    def name(self) -> str:
        return self.label

    @property
    def varies(self) -> frozenset[str]:
        """A module's decoding step takes a cache; the shapes are the example inputs'."""
        from tileplan.importers.torch_export import _torch
        return frozenset({"kv_cache"}) if isinstance(self.model, _torch().nn.Module) else frozenset()

    def program(self, batch: int | None, sequence_length: int | None, kv_cache: int | None = None,
                kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Program:
        if batch is not None or sequence_length is not None:
            raise InputError(f"{self.label}: a model given as an object has its example inputs' shapes; batch and "
                             "sequence_length are for a model named by path (a config.json, an ONNX file)")
        key = (kv_cache, kv_cache_kind)
        if key not in self.graphs:
            self.graphs[key] = object_graph(self.model, self.example_inputs, kv_cache, kv_cache_kind)
        graph = self.graphs[key]
        precision = found_precision(graph.float_precision)
        return graph.to_program(precision, precision, repeat=False)


def load(model: Any) -> ModelSource:
    """A model name as a source; anything else is refused in one line."""
    if not isinstance(model, str):
        raise InputError(f"the tt-mlir frontend takes a model file or hub id here, found a {type(model).__name__}; "
                         "give a module to tileplan.plan(module, example_inputs, machine=...)")
    if kind_of(model) not in _VARIES:
        raise InputError("the tt-mlir frontend plans a config.json, an ONNX file, a saved .pt2 or a hub id; this "
                         "is a built-in IPU model", model)
    return ImportedModel(model)


register_loader(load)
