"""The tt-mlir frontend as the planner takes it (targets/tenstorrent/frontend.py says what a
frontend provides): `FRONTEND`.

- keys: `opt_level`, `weights`, `activations`, `batch`, `sequence_length`, `kv_cache` and
  `kv_cache_kind` (a config.json's decoder as one decoding step with a key/value cache of
  that many positions, dynamic or static: options.py);
- the stack: tt-mlir's runtime opens the device (L1_SMALL 64 KiB, the trace region as
  the runtime sets it: versions.py), so no device parameters of its own;
- knobs for what-if rows: the optimization level and the weight dtype (each value on
  its own), the batch (the largest that fits, when the model's import can change it).

Worked example: `FRONTEND.options("bert.json", {"opt_level": 2, "weights": "bfp8"}, n150)`
-> TtMlirOptions(opt_level=2, weights=bfloat8_b, batch=1); its words are (opt_level, 2),
(weights, bfp8), (activations, None), (batch, 1), (sequence_length, None), (kv_cache,
None), (kv_cache_kind, None) (the kind is said only with a cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tileplan.errors import InputError, option
from tileplan.model.cache import CacheKind
from tileplan.targets.tenstorrent.device import Device
from tileplan.targets.tenstorrent.frontend import Knob, Reproduction, Search
from tileplan.targets.tenstorrent.frontends.tt_mlir.lower import lower
from tileplan.targets.tenstorrent.frontends.tt_mlir.options import (
    ACTIVATION_DTYPES,
    OPT_LEVELS,
    SHORT_NAMES,
    WEIGHT_DTYPES,
    TtMlirOptions,
    parse_dtype,
)
from tileplan.targets.tenstorrent.frontends.tt_mlir.reproduce import reproduction
from tileplan.targets.tenstorrent.frontends.tt_mlir.source import resolve
from tileplan.targets.tenstorrent.program import Frontend, TtProgram
from tileplan.targets.tenstorrent.versions import Stack

#: the batches a what-if row tries (ascending: the largest that fits is searched)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)
#: the weight dtypes a what-if row tries
WEIGHT_CHOICES = ("bf16", "bfp8", "bfp4")


def _int(given: Mapping[str, Any], key: str) -> int | None:
    value = given.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value))
        except ValueError:
            raise InputError(f"{option(key, str(value))}: expected a whole number") from None
    return value


class TtMlirFrontend:
    """tt-xla and tt-mlir compiling an imported model (see the module docstring)."""

    frontend = Frontend.TT_MLIR
    keys = frozenset({"opt_level", "weights", "activations", "batch", "sequence_length", "kv_cache", "kv_cache_kind"})
    stack = Stack.TT_MLIR

    def device_defaults(self, model: Any, options: Any, machine: str) -> Mapping[str, int]:
        return {}

    def options(self, model: Any, given: Mapping[str, Any], device: Device) -> TtMlirOptions:
        source = resolve(model)
        batch, seq, cache = _int(given, "batch"), _int(given, "sequence_length"), _int(given, "kv_cache")
        kind = CacheKind.parse(given.get("kv_cache_kind") or CacheKind.DYNAMIC)
        if cache is not None and "kv_cache" not in source.varies:
            raise InputError(f"{option('kv_cache')} plans a decoding step of a decoder built from its config.json; "
                             f"{source.name} is not one (its inputs are its own)")
        for key, value in (("batch", batch), ("sequence_length", seq)):
            if value is not None and key not in source.varies:
                raise InputError(f"{option(key)}: {source.name} has fixed shapes (a saved program, a module's "
                                 f"example inputs or a file whose {key.replace('_', ' ')} is not symbolic)")
        if batch is None and "batch" in source.varies:
            batch = 1
        level = _int(given, "opt_level")
        return TtMlirOptions(0 if level is None else level, parse_dtype(given.get("weights"), "weights", WEIGHT_DTYPES),
                             parse_dtype(given.get("activations"), "activations", ACTIVATION_DTYPES), batch, seq,
                             kv_cache=cache, kv_cache_kind=kind)

    def lower(self, model: Any, options: TtMlirOptions, device: Device) -> TtProgram:
        program = resolve(model).program(options.batch, options.sequence_length, options.kv_cache,
                                         options.kv_cache_kind)
        return lower(program, options, device)

    def words(self, options: TtMlirOptions) -> tuple[tuple[str, Any], ...]:
        def name(d: Any) -> str | None:
            return SHORT_NAMES[d] if d is not None else None
        return (("opt_level", options.opt_level), ("weights", name(options.weights)),
                ("activations", name(options.activations)), ("batch", options.batch),
                ("sequence_length", options.sequence_length), ("kv_cache", options.kv_cache),
                ("kv_cache_kind", options.kv_cache_kind.value if options.kv_cache is not None else None))

    def knobs(self, options: TtMlirOptions, device: Device) -> tuple[Knob, ...]:
        weights = SHORT_NAMES[options.weights] if options.weights is not None else "bf16"
        out = [Knob("opt_level", Search.EACH, OPT_LEVELS, options.opt_level),
               Knob("weights", Search.EACH, WEIGHT_CHOICES, weights)]
        if options.batch is not None:
            out.append(Knob("batch", Search.LARGEST, BATCHES, options.batch))
        return tuple(out)

    def turn(self, options: TtMlirOptions, key: str, value: Any) -> TtMlirOptions:
        if key == "weights":
            return replace(options, weights=parse_dtype(value, "weights", WEIGHT_DTYPES))
        if key == "activations":
            return replace(options, activations=parse_dtype(value, "activations", ACTIVATION_DTYPES))
        if key == "kv_cache_kind":
            return replace(options, kv_cache_kind=CacheKind.parse(value))
        if key in ("opt_level", "batch", "sequence_length", "kv_cache"):
            return replace(options, **{key: value})
        raise InputError(f"{option(key)} is not an option of the tt-mlir frontend; it takes "
                         f"{', '.join(sorted(self.keys))}")

    def reproduce(self, options: TtMlirOptions, program: TtProgram, device: Device, moved: tuple[str, ...]
                  ) -> Reproduction:
        return reproduction(options, program, device, moved)


FRONTEND = TtMlirFrontend()
