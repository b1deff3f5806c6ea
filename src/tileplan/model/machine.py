"""Machines: tile count, per-tile memory regions, budgets and AMP geometry.

The `ipu21` preset (Graphcore IPU21 / Mk2 / Bow; docs/machine-and-model.md gives the
sources of each number): 1472 tiles of 638976 B (624 KiB); a 208 KiB non-interleaved
region (code must live there) and a 416 KiB interleaved region (128-bit loads, AMP
partials), the latter made of 32 KiB element pairs.

How the verdict counts a tile's memory is a policy's (`MemoryAccounting`). By default
it counts all of it, as Poplar's message does: the tensors and the memory that is not
tensors, modelled per plan (`tileplan.planner.nontensor`), against the tile's bytes
(`Machine.counting_all_memory`). The budget fields are the reference planner's, which
its policy keeps to reproduce it: standard 162080 = 212992 - 49152 (its support
reserve: code, stack, vertex state) - 1760; interleaved 424880 = 425984 - 1104, and
16 B of exchange descriptor per row (none of these has a public source).

Any machine can come from a TOML file with the same fields (`Machine.from_toml`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Mapping

from tileplan.errors import InputError
from tileplan.ioutil import MAX_CONFIG_BYTES, read_text
from tileplan.model.precision import FP8_FORMATS, PLAIN_BYTES, Precision

#: upper bounds of machine fields read from files (anything beyond is surely a typo)
LIMITS = {"tile_count": 1 << 16}


@dataclass(frozen=True, slots=True)
class AmpGeometry:
    """What the matrix engine works on for one multiply precision: blocks of
    `input_channels` along K (the weights a conv unit holds, poplar's
    `getWeightsPerConvUnit`), `output_channels` along N per pass (one per conv unit:
    `numConvUnits`, poplin's `partialChansPerGroup`), partials in `accumulate`. The
    cycles of its work are PopLibs' estimates of its vertices, read from these
    (`tileplan.kernel.ampcycles`)."""

    multiply: str
    input_channels: int
    output_channels: int
    accumulate: str
    rows: int = 16

    def __post_init__(self) -> None:
        for key in ("multiply", "accumulate"):
            value = getattr(self, key)
            if not isinstance(value, str) or value not in (*PLAIN_BYTES, *FP8_FORMATS):
                raise InputError(f"AMP geometry: {key} must be a precision name "
                                 f"({', '.join((*FP8_FORMATS, 'F16', 'F32', 'BF16'))}), found {value!r}")
        if self.accumulate in FP8_FORMATS:
            raise InputError(f"AMP geometry {self.multiply}: accumulate must not be FP8, found {self.accumulate}")
        for key in ("input_channels", "output_channels", "rows"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
                raise InputError(f"AMP geometry {self.multiply}: {key} must be an integer in [1, 4096], "
                                 f"found {value!r}")


class MemoryAccounting(Enum):
    """What a verdict compares with what. `ALL_MEMORY`: every byte on the tile, tensors
    and the modelled memory that is not tensors, with the tile's memory, as Poplar's
    "Out of memory on tile N: X bytes used but tiles only have 638976 bytes of memory"
    does. `RESERVED_BUDGETS`: the tensors with the machine's fixed budgets (the
    reference planner's: a fixed support reserve for all that is not tensors, 16 B of
    exchange descriptor per row)."""

    ALL_MEMORY = "all memory"
    RESERVED_BUDGETS = "reserved budgets"


@dataclass(frozen=True, slots=True)
class Machine:
    """A tiled accelerator. Invariants: budgets fit their regions and, with the support
    reserve, the tile; positive sizes (the standard budget may be 0; where the reserve
    alone exceeds the tile, the standard budget is 0 and the interleaved one the
    negative rest, `counting_all_memory`)."""

    name: str
    class_prefix: str
    tile_count: int
    tile_bytes: int
    non_interleaved_bytes: int
    interleaved_bytes: int
    support_reserve_bytes: int
    standard_budget_bytes: int
    interleaved_budget_bytes: int
    element_pair_bytes: int
    exchange_row_bytes: int
    amp: tuple[AmpGeometry, ...]

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            least = 0 if f.name in ("support_reserve_bytes", "exchange_row_bytes", "standard_budget_bytes") else 1
            if f.name == "interleaved_budget_bytes" and self.support_reserve_bytes >= self.tile_bytes:
                # the memory that is not tensors fills the tile and more: the tensors'
                # budget is the (negative) rest, so every margin stays tile - all memory
                least = self.tile_bytes - self.support_reserve_bytes - self.non_interleaved_bytes
            if isinstance(value, int) and value < least:
                rule = {0: "at least 0", 1: "positive"}.get(least, f"at least {least} (the tile less the memory "
                                                                   "that is not tensors, beyond the non-interleaved "
                                                                   "region)")
                raise InputError(f"machine {self.name}: {f.name} must be {rule}, found {value}")
        if self.non_interleaved_bytes + self.interleaved_bytes != self.tile_bytes:
            raise InputError(f"machine {self.name}: regions {self.non_interleaved_bytes} + {self.interleaved_bytes} "
                             f"!= tile_bytes {self.tile_bytes}")
        if self.interleaved_budget_bytes > self.interleaved_bytes:
            raise InputError(f"machine {self.name}: interleaved budget {self.interleaved_budget_bytes} exceeds the "
                             f"interleaved region {self.interleaved_bytes}")
        if self.standard_budget_bytes > self.non_interleaved_bytes or \
                self.budget_bytes + self.support_reserve_bytes > self.tile_bytes:
            raise InputError(f"machine {self.name}: standard budget {self.standard_budget_bytes}, interleaved budget "
                             f"{self.interleaved_budget_bytes} and support reserve {self.support_reserve_bytes} "
                             f"exceed the non-interleaved region {self.non_interleaved_bytes} or the tile "
                             f"{self.tile_bytes}")

    @property
    def budget_bytes(self) -> int:
        return self.standard_budget_bytes + self.interleaved_budget_bytes

    def counting_all_memory(self, non_tensor: int) -> "Machine":
        """This machine's budgets when a plan's `non_tensor` bytes a tile (its modelled
        memory that is not tensors) are counted with the tensors against the tile
        (`MemoryAccounting.ALL_MEMORY`): the support reserve is that memory, in the
        non-interleaved region (code must be there: "Instructions can only be fetched
        from non-interleaved memory", PopVision Graph Analyser glossary; tileplan puts
        vertex state and stack there too, which no source places) and, past it, in the
        interleaved one; the tensors have the rest of the tile; no exchange rows
        beside it (exchange is code, counted in `non_tensor`). Independent of this
        machine's own budgets."""
        if non_tensor < 0:
            raise InputError(f"machine {self.name}: the memory that is not tensors must be at least 0 B a tile, "
                             f"found {non_tensor}")
        standard = max(0, self.non_interleaved_bytes - non_tensor)
        interleaved = self.interleaved_bytes - max(0, non_tensor - self.non_interleaved_bytes)
        return replace(self, support_reserve_bytes=non_tensor, standard_budget_bytes=standard,
                       interleaved_budget_bytes=interleaved, exchange_row_bytes=0)

    def amp_for(self, multiply: Precision, partials: str | None = None) -> AmpGeometry:
        """The AMP's geometry for `multiply`; with `partials` "F16" where the machine's
        accumulates in F32, half partials: twice the output channels a pass (Mk2's AMP
        accumulates 16 half or 8 float columns; PopTorch's `setPartialsType`,
        optimum-graphcore's `enable_half_partials`). F32 inputs keep F32 partials
        (poplin's `getConvVertexAMPCandidates` forces float partials for FLOAT)."""
        for g in self.amp:
            if g.multiply == multiply.name:
                if partials == "F16" and g.accumulate == "F32" and g.multiply != "F32":
                    return replace(g, output_channels=2 * g.output_channels, accumulate="F16")
                return g
        raise InputError(f"machine {self.name} has no AMP geometry for {multiply.name}; it has "
                         f"{', '.join(g.multiply for g in self.amp)}")

    @classmethod
    def from_dict(cls, data: Mapping[str, object], source: str) -> "Machine":
        """A machine from a parsed machine file (its tables as read: every field
        checked here, its place named in the error)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"unknown machine field {unknown[0]!r}; expected {', '.join(sorted(known))}", source)
        missing = sorted(known - set(data))
        if missing:
            raise InputError(f"missing machine field {missing[0]!r}", source)
        amp = data["amp"]
        if not isinstance(amp, list) or not amp or not all(isinstance(a, dict) for a in amp):
            raise InputError("amp must be a non-empty array of tables ([[amp]])", source)
        geometries = []
        amp_fields = {f.name for f in fields(AmpGeometry)}
        for i, entry in enumerate(amp):
            place = f"{source}: amp[{i}]"
            extra = sorted(set(entry) - amp_fields)
            if extra:
                raise InputError(f"unknown field {extra[0]!r}; expected {', '.join(sorted(amp_fields))}", place)
            absent = sorted({"multiply", "input_channels", "output_channels", "accumulate"} - set(entry))
            if absent:
                raise InputError(f"missing field {absent[0]!r}", place)
            try:
                geometries.append(AmpGeometry(**entry))
            except InputError as e:
                raise e.at(place, sep=": ") from None
        multiplies = [g.multiply for g in geometries]
        for m in multiplies:
            if multiplies.count(m) > 1:
                raise InputError(f"amp lists {m} twice; give one geometry per multiply precision", source)
        texts: dict[str, str] = {}
        numbers: dict[str, int] = {}
        for k, v in data.items():
            if k == "amp":
                continue
            if k in ("name", "class_prefix"):
                pattern = r"[A-Za-z0-9][A-Za-z0-9_.-]*" if k == "name" else r"[A-Z][A-Za-z0-9]*"
                if not isinstance(v, str) or not re.fullmatch(pattern, v):
                    raise InputError(f"{k} must be a string matching {pattern}, found {v!r}", source)
                texts[k] = v
            elif isinstance(v, bool) or not isinstance(v, int):
                raise InputError(f"{k} must be an integer, found {v!r}", source)
            elif not 0 <= v <= LIMITS.get(k, 1 << 40):
                raise InputError(f"{k} must be in [0, {LIMITS.get(k, 1 << 40)}], found {v}", source)
            else:
                numbers[k] = v
        try:
            return cls(amp=tuple(geometries), name=texts["name"], class_prefix=texts["class_prefix"], **numbers)
        except InputError as e:
            raise e.at(source, sep=": ") from None

    @classmethod
    def from_toml(cls, path: str) -> "Machine":
        """A machine from a TOML file: a regular file of at most `MAX_CONFIG_BYTES`."""
        text = read_text(path, MAX_CONFIG_BYTES)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise InputError(f"not valid TOML: {' '.join(str(e).split())}", path) from None
        except RecursionError:
            raise InputError("not valid TOML: nested too deeply (a machine file is flat tables)", path) from None
        except ValueError as e:  # an integer past Python's digit limit
            raise InputError(f"not valid TOML: {str(e).split(';')[0].split(':')[0]}", path) from None
        return cls.from_dict(data, path)


IPU21 = Machine(
    name="ipu21", class_prefix="Ipu21", tile_count=1472, tile_bytes=638976,
    non_interleaved_bytes=212992, interleaved_bytes=425984, support_reserve_bytes=49152,
    standard_budget_bytes=162080, interleaved_budget_bytes=424880, element_pair_bytes=32768,
    exchange_row_bytes=16,  # tileplan's assumption: one 16 B exchange descriptor per row per tile
    amp=(
        AmpGeometry("F8F143", input_channels=32, output_channels=16, accumulate="F16"),
        AmpGeometry("F8F152", input_channels=32, output_channels=16, accumulate="F16"),
        AmpGeometry("F16", input_channels=16, output_channels=8, accumulate="F32"),
        AmpGeometry("F32", input_channels=8, output_channels=8, accumulate="F32"),
    ),
)
#: Mk2 (GC200, IPU-M2000) and Bow (Bow-2000): IPU21's tiles and memory, no FP8 on the AMP,
#: and no 32 KiB element-pair granularity: Poplar aligns a tensor's storage on a tile to
#: 8 bytes (the 64-bit load width), so AMP operands and partials are not rounded up
MK2 = replace(IPU21, name="mk2", class_prefix="Mk2", amp=tuple(g for g in IPU21.amp if g.multiply in ("F16", "F32")),
              element_pair_bytes=8)
BOW = replace(MK2, name="bow", class_prefix="Bow")
#: Mk1 (GC2, C2 cards): 1216 tiles of 256 KiB. The split into regions and the budgets
#: are tileplan's assumptions (docs/machine-and-model.md): a 64 KiB non-interleaved
#: region (32 KiB reserved for code, stack and vertex state) and 192 KiB interleaved
MK1 = Machine(
    name="mk1", class_prefix="Mk1", tile_count=1216, tile_bytes=262144, non_interleaved_bytes=65536,
    interleaved_bytes=196608, support_reserve_bytes=32768, standard_budget_bytes=32768,
    interleaved_budget_bytes=196608, element_pair_bytes=8, exchange_row_bytes=16,
    amp=tuple(g for g in IPU21.amp if g.multiply in ("F16", "F32")),
)
PRESETS = {m.name: m for m in (IPU21, MK2, BOW, MK1)}


def machine(name_or_path: str) -> Machine:
    """A preset by name, or a machine from a TOML file."""
    if name_or_path in PRESETS:
        return PRESETS[name_or_path]
    if name_or_path.endswith(".toml"):
        return Machine.from_toml(name_or_path)
    raise InputError(f"unknown machine {name_or_path!r}; expected one of {', '.join(PRESETS)} or a .toml file")
