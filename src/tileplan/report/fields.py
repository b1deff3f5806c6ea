"""Typed JSON for a report: reading with one-line located errors, and the declarations
the report's sections are written in, from which their JSON form and their JSON
Schema follow.

`Fields` reads a JSON value with the path of every error (`exact.tiles.peak[3]:
expected an integer in [0, 2^64 - 1], found -1`). A `Section` is a frozen dataclass
whose fields' annotations say what each JSON field holds:

| annotation | JSON |
|---|---|
| `Count` | an integer in [0, 2^64 - 1] (bytes, an id, a number of things) |
| `Positive`, `Signed` | an integer >= 1; any integer in [-(2^64 - 1), 2^64 - 1] |
| `StepIndex`, `TileIndex` | a step, a tile of the report (`Bounds`) |
| `StepCount`, `TileCount` | at most the report's steps, tiles |
| `float`, `str`, `bool`, `Literal["a", "b"]` | a number, a string, true/false, one of the strings |
| `tuple[X, ...]`, `tuple[X, Y]` | a list of X; a list of exactly an X and a Y |
| a `Section` | an object |
| `X \\| None` | X, or (when reading) null or missing |

A field without a default must be in the JSON; a field with one may be missing (a
report of an older tileplan) and reads as the default. `json_field(...)` adds: `key`
(the JSON name, when not the field's), `omit` (left out of the JSON when None instead
of written null), `null` (written null when None: the schema allows null), `most` (the
most entries of a list), `schema` (more JSON Schema keywords).

Reading is strict for the sections views read (a field of the wrong type is an
`InputError` naming its place, so no view meets one) and lenient for the sections read
field by field (`LENIENT = True`: a field of the wrong type, or the reference's sentinel
2^64 - 1 for "unknown", reads as None; a list with one wrong entry reads as None).
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Annotated, Any, ClassVar, Literal, Self, overload

from tileplan.errors import InputError

U64_MAX = 2**64 - 1


class Fields:
    """Typed field access to a JSON value with the JSON path of every error."""

    __slots__ = ("obj", "place")

    def __init__(self, obj: Any, place: str) -> None:
        self.obj = obj
        self.place = place

    def sub(self, key: str | int) -> Fields:
        place = f"{self.place}[{key}]" if isinstance(key, int) else (f"{self.place}.{key}" if self.place else key)
        if isinstance(key, int):
            return Fields(self.obj[key], place)
        if not isinstance(self.obj, dict):
            raise InputError(f"expected an object, found {type(self.obj).__name__}", self.place or "report")
        if key not in self.obj:
            raise InputError(f"missing field {key!r}", self.place or "report")
        return Fields(self.obj[key], place)

    def has(self, key: str) -> bool:
        return isinstance(self.obj, dict) and key in self.obj

    @overload
    def integer(self, minimum: int = 0, nullable: Literal[False] = False, maximum: int = U64_MAX) -> int: ...

    @overload
    def integer(self, minimum: int = 0, *, nullable: bool, maximum: int = U64_MAX) -> int | None: ...

    def integer(self, minimum: int = 0, nullable: bool = False, maximum: int = U64_MAX) -> int | None:
        v = self.obj
        if v is None and nullable:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            expected = "an integer or null" if nullable else "an integer"
            raise InputError(f"expected {expected}, found {brief(v)}", self.place)
        if not minimum <= v <= maximum:
            low = "-(2^64 - 1)" if minimum == -U64_MAX else str(minimum)
            high = "2^64 - 1" if maximum == U64_MAX else str(maximum)
            raise InputError(f"expected an integer in [{low}, {high}], found {brief(v)}", self.place)
        return v

    def number(self, nullable: bool = False) -> float | int | None:
        v = self.obj
        if v is None and nullable:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or abs(v) > U64_MAX:
            raise InputError(f"expected a number{' or null' if nullable else ''}, found {brief(v)}", self.place)
        return v

    def mapping(self) -> Fields:
        if not isinstance(self.obj, dict):
            raise InputError(f"expected an object, found {brief(self.obj)}", self.place)
        return self

    def string(self) -> str:
        if not isinstance(self.obj, str):
            raise InputError(f"expected a string, found {brief(self.obj)}", self.place)
        return self.obj

    def boolean(self) -> bool:
        if not isinstance(self.obj, bool):
            raise InputError(f"expected true or false, found {brief(self.obj)}", self.place)
        return self.obj

    def entries(self) -> list[Any]:
        """The list itself (its entries unread)."""
        if not isinstance(self.obj, list):
            raise InputError(f"expected a list, found {brief(self.obj)}", self.place)
        return self.obj

    def items(self, most: int | None = None) -> list[Fields]:
        if not isinstance(self.obj, list):
            raise InputError(f"expected a list, found {brief(self.obj)}", self.place)
        if most is not None and len(self.obj) > most:
            raise InputError(f"expected at most {most} entries, found {len(self.obj)}", self.place)
        return [self.sub(i) for i in range(len(self.obj))]


def brief(v: object) -> str:
    """A JSON value in a few characters, for an error message."""
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**30:
        return f"an integer of {len(str(abs(v)))} digits"
    text = json.dumps(v, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


# What a field holds ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Kind:
    """What an integer field holds: at least `minimum`; at most 2^64 - 1, or by
    `bound` the report's last step ("step"), last tile ("tile"), number of steps
    ("steps") or of tiles ("tiles")."""

    name: str
    minimum: int = 0
    bound: str | None = None


Count = Annotated[int, Kind("count")]
Positive = Annotated[int, Kind("positive", minimum=1)]
Signed = Annotated[int, Kind("signed", minimum=-U64_MAX)]
StepIndex = Annotated[int, Kind("step", bound="step")]
TileIndex = Annotated[int, Kind("tile", bound="tile")]
StepCount = Annotated[int, Kind("steps", bound="steps")]
TileCount = Annotated[int, Kind("tiles", bound="tiles")]


@dataclass(frozen=True, slots=True)
class Bounds:
    """The report a section is read for: its number of steps and of tiles, which
    `StepIndex`, `TileIndex`, `StepCount` and `TileCount` fields are checked against."""

    steps: int
    tiles: int


@dataclass(frozen=True, slots=True)
class Meta:
    """A field's JSON metadata (`json_field`)."""

    key: str | None = None
    omit: bool = False
    null: bool = False
    most: int | None = None
    schema: dict[str, Any] | None = None


def json_field(default: Any = MISSING, *, key: str | None = None, omit: bool = False, null: bool = False,
               most: int | None = None, schema: dict[str, Any] | None = None) -> Any:
    """A section field with JSON metadata (see the module docstring)."""
    meta = {"json": Meta(key, omit, null, most, schema)}
    return field(metadata=meta) if default is MISSING else field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True)
class Context:
    """How a section is being read: against which report, strictly or leniently."""

    bounds: Bounds | None
    lenient: bool


class Shape:
    """How one annotation reads, writes and is described in JSON Schema."""

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> Any:
        raise NotImplementedError

    def encode(self, v: Any) -> Any:
        return v

    def schema(self) -> dict[str, Any]:
        return {}

    def nullable_schema(self) -> dict[str, Any]:
        return {"anyOf": [self.schema(), {"type": "null"}]}


class IntShape(Shape):
    BYTES = ("count", "step", "tile", "steps", "tiles")

    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def maximum(self, ctx: Context) -> int:
        b, bound = ctx.bounds, self.kind.bound
        high = U64_MAX if b is None or bound is None else {
            "step": max(0, b.steps - 1), "tile": b.tiles - 1, "steps": b.steps, "tiles": b.tiles}[bound]
        return min(high, U64_MAX - 1) if ctx.lenient else high

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> int | None:
        return f.integer(minimum=self.kind.minimum, nullable=nullable, maximum=self.maximum(ctx))

    def quick(self, items: list[Any], ctx: Context) -> bool:
        """Whether every entry of a list is an integer this shape reads (no `Fields` each)."""
        low, high = self.kind.minimum, self.maximum(ctx)
        return all(type(x) is int and low <= x <= high for x in items)

    def schema(self) -> dict[str, Any]:
        if self.kind.name in self.BYTES:
            return {"$ref": "#/$defs/bytes"}
        if self.kind.name == "positive":
            return {"$ref": "#/$defs/positive"}
        return {"type": "integer"}

    def nullable_schema(self) -> dict[str, Any]:
        if self.kind.name in self.BYTES:
            return {"$ref": "#/$defs/bytes_or_null"}
        return {"oneOf": [self.schema(), {"type": "null"}]}


class ScalarShape(Shape):
    def __init__(self, name: str) -> None:
        self.name = name

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> Any:
        if f.obj is None and nullable:
            return None
        if self.name == "number":
            return f.number()
        return f.string() if self.name == "string" else f.boolean()

    def schema(self) -> dict[str, Any]:
        return {"type": self.name}

    def nullable_schema(self) -> dict[str, Any]:
        return {"type": [self.name, "null"]}


class EnumShape(Shape):
    def __init__(self, options: tuple[str, ...]) -> None:
        self.options = options

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> str | None:
        if f.obj is None and nullable:
            return None
        text = f.string()
        if text not in self.options:
            expected = " or ".join(self.options) if len(self.options) == 2 else f"one of {', '.join(self.options)}"
            raise InputError(f"expected {expected}, found {brief(text)}", f.place)
        return text

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.options)}

    def nullable_schema(self) -> dict[str, Any]:
        return {"enum": [*self.options, None]}


class ListShape(Shape):
    def __init__(self, item: Shape, most: int | None = None) -> None:
        self.item, self.most = item, most

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> tuple[Any, ...] | None:
        if f.obj is None and nullable:
            return None
        if isinstance(self.item, IntShape) and isinstance(f.obj, list) and (
                self.most is None or len(f.obj) <= self.most) and self.item.quick(f.obj, ctx):
            return tuple(f.obj)
        return tuple(self.item.decode(x, ctx) for x in f.items(self.most))

    def encode(self, v: Any) -> Any:
        if isinstance(self.item, (IntShape, ScalarShape, EnumShape)):
            return list(v)
        return [self.item.encode(x) for x in v]

    def schema(self) -> dict[str, Any]:
        item = self.item.nullable_schema() if isinstance(self.item, OptionalShape) else self.item.schema()
        return {"type": "array", "items": item}

    def nullable_schema(self) -> dict[str, Any]:
        return {"oneOf": [self.schema(), {"type": "null"}]}


class FixedShape(Shape):
    """A list of exactly one entry per shape: `tuple[StepIndex, StepIndex]`."""

    def __init__(self, items: tuple[Shape, ...]) -> None:
        self.items = items

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> tuple[Any, ...] | None:
        if f.obj is None and nullable:
            return None
        entries = f.items()
        if len(entries) != len(self.items):
            raise InputError(f"expected {len(self.items)} entries, found {len(entries)}", f.place)
        return tuple(s.decode(x, ctx) for s, x in zip(self.items, entries, strict=True))

    def encode(self, v: Any) -> Any:
        return [s.encode(x) for s, x in zip(self.items, v, strict=True)]

    def schema(self) -> dict[str, Any]:
        schemas = [s.schema() for s in self.items]
        n = len(schemas)
        if all(s == schemas[0] for s in schemas):
            return {"type": "array", "items": schemas[0], "minItems": n, "maxItems": n}
        return {"type": "array", "prefixItems": schemas, "minItems": n, "maxItems": n}


class SectionShape(Shape):
    def __init__(self, cls: type[Section]) -> None:
        self.cls = cls

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> Section | None:
        if f.obj is None and nullable:
            return None
        return self.cls.decode(f, ctx)

    def encode(self, v: Any) -> Any:
        return v.to_json()

    def schema(self) -> dict[str, Any]:
        return self.cls.json_schema()

    def nullable_schema(self) -> dict[str, Any]:
        return {"oneOf": [self.schema(), {"type": "null"}]}


class AnyShape(Shape):
    """What a section reads and writes itself (an array of rows, an open object)."""

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> Any:
        return f.obj


class OptionalShape(Shape):
    """`X | None`: null (or, when reading, missing) for None."""

    def __init__(self, inner: Shape) -> None:
        self.inner = inner

    def decode(self, f: Fields, ctx: Context, nullable: bool = False) -> Any:
        return None if f.obj is None else self.inner.decode(f, ctx, nullable=True)

    def encode(self, v: Any) -> Any:
        return None if v is None else self.inner.encode(v)

    def schema(self) -> dict[str, Any]:
        return self.inner.schema()

    def nullable_schema(self) -> dict[str, Any]:
        return self.inner.nullable_schema()


def shape_of(tp: Any, most: int | None = None) -> Shape:
    """The shape of an annotation (see the module docstring)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        kind = next(a for a in args[1:] if isinstance(a, Kind))
        return IntShape(kind)
    if tp is int:
        return IntShape(Kind("count"))
    if tp in (float, str, bool):
        return ScalarShape({float: "number", str: "string", bool: "boolean"}[tp])
    if origin is Literal:
        return EnumShape(tuple(args))
    if origin in (typing.Union, types.UnionType):
        others = [a for a in args if a is not type(None)]
        inner = shape_of(others[0], most) if len(others) == 1 else AnyShape()
        return OptionalShape(inner) if len(others) < len(args) else inner
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return ListShape(shape_of(args[0]), most)
        return FixedShape(tuple(shape_of(a) for a in args))
    if isinstance(tp, type) and issubclass(tp, Section):
        return SectionShape(tp)
    return AnyShape()


@dataclass(frozen=True, slots=True)
class Slot:
    """One field of a section: its name, JSON key and shape."""

    name: str
    key: str
    shape: Shape
    required: bool
    meta: Meta


_SLOTS: dict[type, tuple[Slot, ...]] = {}


def slots_of(cls: type) -> tuple[Slot, ...]:
    """A section's fields as read and written (its dataclass fields but those made
    after `__init__`), worked out once per class."""
    found = _SLOTS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        out = []
        for f in dataclass_fields(cls):
            if not f.init:
                continue
            meta = f.metadata.get("json", Meta())
            required = f.default is MISSING and f.default_factory is MISSING
            out.append(Slot(f.name, meta.key or f.name, shape_of(hints[f.name], meta.most), required, meta))
        found = _SLOTS[cls] = tuple(out)
    return found


class Section:
    """A typed part of a report: a frozen dataclass read from and written to JSON by
    its fields' declarations (see the module docstring). `KEY`: its key at the top of
    a report (for the sections there); `LENIENT`: read field by field; `DESCRIPTION`:
    its JSON Schema description."""

    __slots__ = ()
    KEY: ClassVar[str] = ""
    LENIENT: ClassVar[bool] = False
    DESCRIPTION: ClassVar[str | None] = None

    @classmethod
    def from_json(cls, obj: Any, place: str = "", bounds: Bounds | None = None) -> Self:
        """Read `obj` (`InputError` at `place` when a strict section's field is wrong;
        `bounds`: the report's steps and tiles, None for no bound)."""
        return cls.decode(Fields(obj, place), Context(bounds, cls.LENIENT))

    @classmethod
    def decode(cls, f: Fields, ctx: Context) -> Self:
        return cls.decode_fields(f, ctx)

    @classmethod
    def decode_fields(cls, f: Fields, ctx: Context) -> Self:
        """Read each field by its declaration (what `decode` does unless a section
        reads itself; `super()` is not there for a slotted dataclass)."""
        f.mapping()
        kwargs: dict[str, Any] = {}
        for slot in slots_of(cls):
            if not f.has(slot.key):
                if slot.required and not ctx.lenient:
                    raise InputError(f"missing field {slot.key!r}", f.place or "report")
                continue
            sub = f.sub(slot.key)
            if ctx.lenient:
                try:
                    kwargs[slot.name] = slot.shape.decode(sub, ctx)
                except InputError:
                    kwargs[slot.name] = None
            else:
                kwargs[slot.name] = slot.shape.decode(sub, ctx)
        if ctx.lenient:  # a lenient section's fields may all be missing
            kwargs.update({s.name: None for s in slots_of(cls) if s.required and s.name not in kwargs})
        section = cls(**kwargs)
        if not ctx.lenient:
            section.validate(f.place, ctx.bounds)
        return section

    def validate(self, place: str, bounds: Bounds | None) -> None:
        """Rules across fields (one `InputError`, located), after a strict read."""

    def to_json(self) -> Any:
        """The section as JSON: each field by its declaration, in declaration order."""
        out: dict[str, Any] = {}
        for slot in slots_of(type(self)):
            v = getattr(self, slot.name)
            if v is None and slot.meta.omit:
                continue
            out[slot.key] = None if v is None else slot.shape.encode(v)
        return out

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of what `to_json` writes."""
        return cls.fields_schema()

    @classmethod
    def fields_schema(cls) -> dict[str, Any]:
        """The JSON Schema of the fields as declared."""
        properties = {}
        for slot in slots_of(cls):
            schema = slot.shape.nullable_schema() if slot.meta.null else slot.shape.schema()
            properties[slot.key] = {**schema, **(slot.meta.schema or {})}
        out: dict[str, Any] = {"description": cls.DESCRIPTION} if cls.DESCRIPTION else {}
        out.update({"type": "object", "required": [s.key for s in slots_of(cls) if not s.meta.omit],
                    "properties": properties, "additionalProperties": False})
        return out

