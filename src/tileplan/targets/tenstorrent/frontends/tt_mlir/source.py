"""Where the tt-mlir frontend gets the model's program from.

The frontend lowers a `Program` (tileplan's model IR, what the importers make). A model
named as `tileplan plan` names it (a config.json, an ONNX file, a .pt2, a hub id) is
imported by the application layer, which knows the importers: it registers a loader
(`register_loader`) that turns such a name into a `ModelSource`; the frontend asks the
source for the program at the batch and sequence length its options say (a what-if row
turns the batch), or for one decoding step with a key/value cache (`kv_cache` positions,
of `kv_cache_kind`). A `Program` given directly has fixed shapes (`FixedProgram`).

Worked example: the application registers `load` with `load("bert/config.json")` ->
an ImportedModel; `resolve("bert/config.json").program(2, 128)` is BERT imported at
batch 2, 128 tokens, in the model's own dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tileplan.errors import InputError
from tileplan.model.cache import CacheKind
from tileplan.model.ir import Program


class ModelSource(Protocol):
    """A model the frontend can ask for its program: `varies` says which of `batch`,
    `sequence_length` and `kv_cache` the source can change (the others must be None)."""

    @property
    def name(self) -> str: ...

    @property
    def varies(self) -> frozenset[str]: ...

    def program(self, batch: int | None, sequence_length: int | None, kv_cache: int | None = None,
                kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Program: ...


@dataclass(frozen=True)
class FixedProgram:
    """A program given as it is (its shapes fixed)."""

    value: Program

    @property
    def name(self) -> str:
        return self.value.name

    @property
    def varies(self) -> frozenset[str]:
        return frozenset()

    def program(self, batch: int | None, sequence_length: int | None, kv_cache: int | None = None,
                kv_cache_kind: CacheKind = CacheKind.DYNAMIC) -> Program:
        if batch is not None or sequence_length is not None or kv_cache is not None:
            raise InputError(f"{self.value.name}: a program given as it is has fixed shapes; batch, "
                             "sequence_length and kv_cache are set when it is imported")
        return self.value


#: the application's loader (tileplan.app.tenstorrent.tt_mlir_models registers it)
_LOADERS: list[Callable[[Any], ModelSource]] = []


def register_loader(loader: Callable[[Any], ModelSource]) -> None:
    """Make `loader` the way a model name (or object) becomes a source."""
    _LOADERS[:] = [loader]


def resolve(model: Any) -> ModelSource:
    """`model` as a source: a Program or a source as it is, anything else through the
    registered loader."""
    if isinstance(model, Program):
        return FixedProgram(model)
    if hasattr(model, "program") and hasattr(model, "varies"):
        return model
    if not _LOADERS:
        raise InputError("the tt-mlir frontend lowers an imported model: import it first (tileplan.importers) "
                         "and pass its Program, or plan it through tileplan's application layer, which imports "
                         "model names", str(model))
    return _LOADERS[0](model)
